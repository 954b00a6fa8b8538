"""The TENANT commands: what an administrator sees and changes, who may manage, the
exact errors, and connections following their user's tenant as it changes."""
import pytest
import redis

from conftest import raw_connection
from tenant_helpers import USERS, as_user, tenant_info, tenant_server


@pytest.fixture(scope="module")
def server():
    # no sampled miss-ratio curve: TENANT INFO's fields are then the same every run
    srv = tenant_server(USERS + ["tenant team-a quota 4mb users alice",
                                 "tenant team-b users bob shared-read team-a"],
                        tenant_mrc_sampling=0, maxmemory="64mb")
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def admin(server):
    with raw_connection(server.port) as conn:
        yield conn


def login(server, user):
    conn = raw_connection(server.port)
    assert conn.request("AUTH", user, "pw") == b"+OK\r\n"
    return conn


def test_create_info_set_resetstat_delete(server, admin):
    assert admin.request("TENANT", "CREATE", "lab", "quota", "3mb", "POLICY", "allkeys-lfu",
                         "USERS", "carol", "dave", "SHARED-READ", "team-a") == b"+OK\r\n"
    assert admin.request("TENANT", "LIST") == (b"*4\r\n$7\r\ndefault\r\n$6\r\nteam-a\r\n"
                                               b"$6\r\nteam-b\r\n$3\r\nlab\r\n")
    carol = as_user(server, "carol")
    carol.set("x", "1")
    carol.get("x")
    carol.get("nothing")
    info = tenant_info(server.client(), "lab")
    assert info == {
        "name": "lab", "quota": 3 * 1024 * 1024, "guaranteed_bytes": 0, "priority": 0, "disk_tier": "yes",
        "policy": "allkeys-lfu",
        "policy_inherited": 0, "keys": 1, "expires": 0, "used_bytes": info["used_bytes"],
        "dataset_bytes": 2, "keyspace_hits": 1, "keyspace_misses": 1, "evicted_keys": 0,
        "expired_keys": 0, "rejected_writes": 0, "bytes_written": 1, "commands": info["commands"],
        "bytes_in": info["bytes_in"], "bytes_out": info["bytes_out"], "borrowed_bytes": 0,
        "reclaimed_bytes": 0, "mrc_memory": 3 * 1024 * 1024,
        "users": ["carol", "dave"], "shared_read": ["team-a"], "shared_write": [], "arena": "shared"}
    assert info["used_bytes"] > 0 and info["commands"] >= 3
    # RESP3: a map, lists as arrays
    with raw_connection(server.port) as conn:
        conn.request("HELLO", "3")
        assert conn.request("TENANT", "INFO", "lab").startswith(b"%27\r\n$4\r\nname\r\n$3\r\nlab\r\n")

    assert admin.request("TENANT", "SET", "lab", "QUOTA", "0", "POLICY", "inherit",
                         "SHARED-READ") == b"+OK\r\n"
    info = tenant_info(server.client(), "lab")
    assert (info["quota"], info["policy_inherited"], info["shared_read"]) == (0, 1, [])
    assert info["users"] == ["carol", "dave"]                  # not given: unchanged
    assert admin.request("TENANT", "RESETSTAT", "lab") == b"+OK\r\n"
    info = tenant_info(server.client(), "lab")
    assert (info["keys"], info["keyspace_hits"], info["commands"], info["bytes_in"]) == (1, 0, 0, 0)

    with raw_connection(server.port) as conn:
        conn.request("AUTH", "carol", "pw")
        assert admin.request("TENANT", "DELETE", "lab") == b"+OK\r\n"
        assert conn.is_closed()                     # its users' connections are closed
    assert tenant_info(server.client(), "default")["keys"] == 0
    assert b"lab" not in admin.request("TENANT", "LIST")
    carol = as_user(server, "carol")               # back in no tenant: the default namespace
    assert carol.execute_command("TENANT", "WHOAMI") is None and carol.get("x") is None
    carol.close()


def test_whoami_and_rebinding(server, admin):
    alice = login(server, "alice")
    alice.request("SET", "where", "team-a")
    assert alice.request("TENANT", "WHOAMI") == b"$6\r\nteam-a\r\n"
    assert admin.request("TENANT", "WHOAMI") == b"$-1\r\n"
    # RESET: the default user, who belongs to no tenant
    assert alice.request("RESET") == b"+RESET\r\n"
    assert alice.request("TENANT", "WHOAMI") == b"$-1\r\n" and alice.request("GET", "where") == b"$-1\r\n"
    alice.request("HELLO", "3", "AUTH", "alice", "pw")
    assert alice.request("TENANT", "WHOAMI") == b"$6\r\nteam-a\r\n"
    assert alice.request("GET", "where") == b"$6\r\nteam-a\r\n"
    # moving the user moves its live connection
    assert admin.request("TENANT", "SET", "team-a", "USERS") == b"+OK\r\n"
    assert admin.request("TENANT", "SET", "team-b", "USERS", "bob", "alice") == b"+OK\r\n"
    assert alice.request("TENANT", "WHOAMI") == b"$6\r\nteam-b\r\n"
    assert alice.request("GET", "where") == b"$6\r\nteam-a\r\n"    # team-b reads team-a through
    assert alice.request("SET", "where", "team-b") == b"+OK\r\n"
    admin.request("TENANT", "SET", "team-b", "USERS", "bob")
    admin.request("TENANT", "SET", "team-a", "USERS", "alice")
    assert alice.request("GET", "where") == b"$6\r\nteam-a\r\n"
    # a deleted user's connection is closed; membership is by name, so it comes back
    assert admin.request("ACL", "DELUSER", "alice") == b":1\r\n"
    assert alice.is_closed()
    admin.request("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all")
    again = login(server, "alice")
    assert again.request("TENANT", "WHOAMI") == b"$6\r\nteam-a\r\n"
    again.close()
    alice.close()


def test_management_is_for_administrators(server, admin):
    with login(server, "alice") as alice:         # +@all, but bound to a tenant
        for args in (("LIST",), ("CREATE", "mine"), ("SET", "team-a", "QUOTA", "0"),
                     ("DELETE", "team-b"), ("RESETSTAT", "team-a"), ("INFO", "team-b")):
            assert alice.request("TENANT", *args) == (
                f"-ERR TENANT {args[0]} is for administrators: this connection belongs to "
                f"tenant 'team-a'\r\n").encode()
        assert alice.request("TENANT", "INFO", "team-a").startswith(b"*54\r\n$4\r\nname\r\n")
    admin.request("ACL", "SETUSER", "viewer", "on", "nopass", "~*", "+@read", "+@connection")
    with login(server, "viewer") as viewer:       # no tenant, but no @admin either
        assert viewer.request("TENANT", "CREATE", "x") == (
            b"-NOPERM this user has no permissions to run the 'tenant|create' command\r\n")
        assert viewer.request("TENANT", "WHOAMI") == b"$-1\r\n"
    admin.request("ACL", "DELUSER", "viewer")
    admin_category = admin.request("ACL", "CAT", "admin")
    assert b"tenant|create" in admin_category and b"tenant|whoami" not in admin_category


ERRORS = [
    (("CREATE", "team-a"), "ERR tenant 'team-a' already exists"),
    (("CREATE", "default"), "ERR tenant 'default' already exists"),
    (("CREATE", "a b"), "ERR invalid tenant name 'a b': 1 to 64 visible ASCII characters"),
    (("CREATE", "x" * 65), f"ERR invalid tenant name '{'x' * 65}': 1 to 64 visible ASCII characters"),
    (("CREATE", "n", "QUOTA", "lots"),
     "ERR invalid QUOTA 'lots': a number of bytes, optionally with a unit (kb, mb, gb); 0 means no quota"),
    (("CREATE", "n", "POLICY", "lru"),
     "ERR invalid POLICY 'lru': one of noeviction, allkeys-lru, volatile-lru, allkeys-random, "
     "volatile-random, volatile-ttl, allkeys-lfu, volatile-lfu, or inherit (the server's "
     "maxmemory-policy)"),
    (("CREATE", "n", "SIZE", "1"), "ERR unknown tenant setting 'SIZE' (expected QUOTA, MIN, PRIORITY, "
                                   "DISK, POLICY, ARENA, ARENA-GROUP, ARENA-WRITE, USERS, SHARED-READ "
                                   "or SHARED-WRITE)"),
    (("CREATE", "n", "DISK", "maybe"),
     "ERR invalid DISK 'maybe': yes (what the arena evicts of the tenant's goes to the server's disk "
     "tier, the default) or no"),
    (("CREATE", "n", "QUOTA", "8mb", "ARENA", "own", "DISK", "yes"),
     "ERR DISK is for tenants in the server's arena: a tenant with ARENA own has its whole arena to "
     "itself"),
    (("CREATE", "n", "PRIORITY", "-1"),
     "ERR invalid PRIORITY '-1': a service class from 0 (the default, the first to give borrowed "
     "memory back) to 4294967295"),
    *[(("CREATE", "n", "PRIORITY", text),
       f"ERR invalid PRIORITY '{text}': a service class from 0 (the default, the first to give "
       f"borrowed memory back) to 4294967295") for text in ("", "²", "١", "1.5", "+1", "0x1", " 1")],
    (("CREATE", "n", "PRIORITY", "4294967296"),
     "ERR invalid PRIORITY '4294967296': a service class from 0 (the default, the first to give "
     "borrowed memory back) to 4294967295"),
    (("CREATE", "n", "QUOTA", "4mb", "PRIORITY", "1", "ARENA", "own"),
     "ERR PRIORITY is for tenants in the server's arena: a tenant with ARENA own has its whole arena "
     "to itself"),
    (("CREATE", "n", "MIN", "lots"),
     "ERR invalid MIN 'lots': a number of bytes, optionally with a unit (kb, mb, gb); 0 means no guarantee"),
    *[(("CREATE", "n", "MIN", text),
       f"ERR invalid MIN '{text}': a number of bytes, optionally with a unit (kb, mb, gb); 0 means "
       f"no guarantee") for text in ("-1", "99999999999999999999", "1.5mb")],
    (("CREATE", "n", "MIN", "9223372036854775807"),
     "ERR MIN 9223372036854775807 and the other tenants' guarantees (0 bytes) pass the server's "
     "maxmemory (67108864 bytes): the arena could not keep them all; raise maxmemory or lower a MIN"),
    (("CREATE", "n", "QUOTA", "1mb", "MIN", "2mb"),
     "ERR MIN 2097152 is above the QUOTA 1048576: the quota is the most the tenant may hold, borrowing "
     "past its guarantee"),
    (("CREATE", "n", "QUOTA", "4mb", "MIN", "1mb", "ARENA", "own"),
     "ERR MIN is for tenants in the server's arena: a tenant with ARENA own has its whole arena to itself"),
    (("CREATE", "n", "MIN", "65mb"),
     "ERR MIN 68157440 and the other tenants' guarantees (0 bytes) pass the server's maxmemory "
     "(67108864 bytes): the arena could not keep them all; raise maxmemory or lower a MIN"),
    (("SET", "team-a", "MIN", "5mb"),
     "ERR MIN 5242880 is above the QUOTA 4194304: the quota is the most the tenant may hold, borrowing "
     "past its guarantee"),
    (("SET", "team-b", "MIN", "40mb"), None),
    (("SET", "team-a", "MIN", "30mb", "QUOTA", "30mb"),
     "ERR MIN 31457280 and the other tenants' guarantees (41943040 bytes) pass the server's maxmemory "
     "(67108864 bytes): the arena could not keep them all; raise maxmemory or lower a MIN"),
    (("SET", "team-b", "MIN", "0"), None),
    (("CREATE", "n", "QUOTA"), "ERR QUOTA needs a value"),
    (("CREATE", "n", "QUOTA", "1", "quota", "2"), "ERR QUOTA given twice"),
    (("CREATE", "n", "USERS", "alice"), "ERR user 'alice' already belongs to tenant 'team-a'"),
    (("CREATE", "n", "SHARED-READ", "nope"), "ERR tenant 'n' is granted 'nope', which is no tenant"),
    (("CREATE", "n", "SHARED-WRITE", "n"), "ERR tenant 'n' cannot be granted its own namespace"),
    (("CREATE", "n", "SHARED-READ", "default"), "ERR the default namespace cannot be shared"),
    (("SET", "team-b", "USERS", "alice"), "ERR user 'alice' already belongs to tenant 'team-a'"),
    (("SET", "team-b", "USERS"), None),
    (("SET", "default", "QUOTA", "0"),
     "ERR the default tenant cannot be changed: it is the administrators' namespace, bounded by maxmemory"),
    (("SET", "nope", "QUOTA", "0"), "ERR no such tenant 'nope'"),
    (("SET", "team-a", "users"), None),
    (("SET", "team-a", "USERS", "alice"), None),
    (("SET", "team-b", "USERS", "bob"), None),
    (("DELETE", "default"), "ERR the default tenant cannot be deleted"),
    (("DELETE", "nope"), "ERR no such tenant 'nope'"),
    (("INFO", "nope"), "ERR no such tenant 'nope'"),
    (("RESETSTAT", "nope"), "ERR no such tenant 'nope'"),
    (("CREATE",), "ERR wrong number of arguments for 'tenant|create' command"),
    (("INFO", "a", "b"), "ERR wrong number of arguments for 'tenant|info' command"),
    (("SET", "team-a"), "ERR wrong number of arguments for 'tenant|set' command"),
    (("SET", "team-a", "QUOTA", "1", "POLICY"), "ERR POLICY needs a value"),
    (("FROB",), "ERR unknown subcommand 'FROB'. Try TENANT HELP."),
]


def test_errors(admin):
    for args, expected in ERRORS:
        reply = admin.request("TENANT", *args)
        assert reply == (f"-{expected}\r\n".encode() if expected else b"+OK\r\n"), args
    assert admin.request("TENANT", "LIST") == b"*3\r\n$7\r\ndefault\r\n$6\r\nteam-a\r\n$6\r\nteam-b\r\n"
    help_lines = admin.request("TENANT", "HELP")
    assert help_lines.startswith(b"*30\r\n+TENANT <subcommand>") and b"+WHOAMI\r\n" in help_lines


def test_quota_and_policy_changes_apply_to_the_next_write(server, admin):
    alice = as_user(server, "alice")
    alice.flushall()
    value = b"v" * 100_000
    for i in range(30):
        alice.set(f"k{i}", value)
    assert admin.request("TENANT", "SET", "team-a", "QUOTA", "1mb", "POLICY", "allkeys-lru") == b"+OK\r\n"
    alice.set("trigger", value)
    info = tenant_info(server.client(), "team-a")
    assert info["used_bytes"] <= 1024 * 1024 and info["evicted_keys"] > 0
    assert admin.request("TENANT", "SET", "team-a", "POLICY", "noeviction") == b"+OK\r\n"
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        alice.set("more", value * 20)
    assert tenant_info(server.client(), "team-a")["rejected_writes"] == 1
    admin.request("TENANT", "SET", "team-a", "QUOTA", "4mb", "POLICY", "inherit")
    admin.request("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
    assert tenant_info(server.client(), "team-a")["policy"] == "allkeys-random"
    admin.request("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    alice.flushall()
    alice.close()


def test_at_most_63_tenants(admin):
    created = []
    while True:
        name = f"t{len(created)}"
        reply = admin.request("TENANT", "CREATE", name)
        if reply != b"+OK\r\n":
            break
        created.append(name)
    assert len(created) == 63 - 2            # team-a and team-b hold two slots
    assert reply.startswith(b"-ERR no free tenant slot (63 tenants at most")
    for name in created:
        assert admin.request("TENANT", "DELETE", name) == b"+OK\r\n"


def test_a_tenants_file_that_cannot_be_written_changes_nothing():
    srv = tenant_server(USERS, **{"tenants-file": "no-such-dir/tenants.json"})
    try:
        srv.start()
        with raw_connection(srv.port) as admin:
            reply = admin.request("TENANT", "CREATE", "lost", "USERS", "alice")
            assert reply == (f"-ERR cannot write the tenants file {srv.dir}/no-such-dir/tenants.json: "
                             f"No such file or directory\r\n").encode()
            assert admin.request("TENANT", "LIST") == b"*1\r\n$7\r\ndefault\r\n"
        assert as_user(srv, "alice").execute_command("TENANT", "WHOAMI") is None
    finally:
        srv.close()
