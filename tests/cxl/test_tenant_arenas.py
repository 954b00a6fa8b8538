"""Tenants with an arena of their own (TENANT ... ARENA own): their values live in a
backing file of their own, which their users may map and no other tenant's process
can open. Checked with real servers, real clients and real mappings; the operating
system's part by a forked process that drops to another uid with one tenant's group."""
import json
import mmap
import os
import re
import time
import urllib.request

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from conftest import ServerStartError, free_port
from cxl_helpers import PASSWORD, corrupt, cxl_server, info, local, unix_client
from cxlredis.tenant_arenas import size_for

MiB = 1 << 20
USERS = [
    f"user admin on >{PASSWORD} ~* &* +@all",
    f"user acme-user on >{PASSWORD} ~* &* +@all",
    f"user beta-user on >{PASSWORD} ~* &* +@all",
    f"user team-user on >{PASSWORD} ~* &* +@all",
]
TENANTS = ["tenant acme quota 16mb arena own users acme-user",
           "tenant team quota 16mb users team-user"]
GROUP_A, GROUP_B, NOBODY = 45001, 45002, 65534


def as_user(server, name, **kwargs):
    return unix_client(server, username=name, password=PASSWORD, **kwargs)


def tenant_path(server, name):
    return os.path.join(server.dir, f"a.tenant-{name}.arena")


def tenant_info(client, name):
    reply = client.execute_command("TENANT", "INFO", name)
    pairs = dict(zip(reply[0::2], reply[1::2])) if isinstance(reply, list) else reply
    return {k.decode(): v.decode() if isinstance(v, bytes) else v for k, v in pairs.items()}


@pytest.fixture
def server():
    srv = cxl_server(USERS + TENANTS, cxl_lease_ms=400)
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def admin(server):
    client = as_user(server, "admin")
    yield client
    client.close()


@pytest.fixture
def acme(server):
    client = as_user(server, "acme-user")
    yield client
    client.close()


def file_holds(path, needle):
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
        return m.find(needle) >= 0


# ---------------------------------------------------------------- the arena itself

def test_declared_tenant_gets_a_file_of_its_own(server, admin):
    path = tenant_path(server, "acme")
    st = os.stat(path)
    assert st.st_mode & 0o777 == 0o600 and st.st_size == size_for(16 * MiB)
    fields = tenant_info(admin, "acme")
    assert (fields["arena"], fields["arena_path"], fields["arena_size"], fields["arena_group"],
            fields["arena_recovery"]) == ("own", path, st.st_size, "", "new")
    assert fields["quota"] == 16 * MiB and fields["policy"] == "allkeys-lru"
    assert tenant_info(admin, "team")["arena"] == "shared" and "arena_path" not in tenant_info(admin, "team")
    assert [n.decode() for n in admin.execute_command("TENANT", "LIST")] == ["default", "team", "acme"]
    assert admin.execute_command("DEBUG", "ARENA-CHECK") == []


def test_values_live_in_the_tenants_file_only(server, admin, acme):
    marker = os.urandom(32) * 8192                 # 256 KiB nobody else writes
    acme.set("k", marker)
    team = as_user(server, "team-user")
    try:
        assert acme.get("k") == marker
        assert admin.get("k") is None and team.get("k") is None
        team.set("k", b"team's")
        admin.set("k", b"admin's")
        assert acme.get("k") == marker and team.get("k") == b"team's"
        assert acme.dbsize() == 1 and admin.dbsize() == 1
    finally:
        team.close()
    assert file_holds(tenant_path(server, "acme"), marker)
    assert not file_holds(server.arena_path, marker)
    lines = admin.info("tenants")
    assert lines["tenant_acme"]["keys"] == 1 and lines["tenant_acme"]["quota"] == 16 * MiB
    # a tenant's INFO shows its own line only
    assert list(acme.info("tenants")) == ["tenant_acme"]


def test_quota_bounds_the_arena_and_evicts_only_its_own_keys(server, admin, acme):
    team = as_user(server, "team-user")
    try:
        team.set("keep", b"t" * MiB)
        admin.set("keep", b"a" * MiB)
        for i in range(40):                        # 40 MiB into a 16 MiB quota
            acme.set(f"chunk{i}", bytes([i]) * MiB)
        fields = tenant_info(admin, "acme")
        assert fields["used_bytes"] <= 16 * MiB and fields["evicted_keys"] >= 24
        assert acme.get("chunk39") == bytes([39]) * MiB
        assert team.get("keep") == b"t" * MiB and admin.get("keep") == b"a" * MiB
        admin.execute_command("TENANT", "SET", "acme", "POLICY", "noeviction")
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for i in range(40):
                acme.set(f"more{i}", b"x" * MiB)
        with pytest.raises(redis.ResponseError, match="can be at most"):
            admin.execute_command("TENANT", "SET", "acme", "QUOTA", "1gb")
        admin.execute_command("TENANT", "SET", "acme", "QUOTA", "8mb", "POLICY", "inherit")
        acme.set("after", b"y" * MiB)               # evicts down to the new quota
        assert tenant_info(admin, "acme")["used_bytes"] <= 8 * MiB
        assert tenant_info(admin, "acme")["policy_inherited"] == 1
    finally:
        team.close()


def test_settings_that_cannot_hold_are_refused(server, admin):
    cases = [
        (("CREATE", "x", "ARENA", "own"), "needs a QUOTA"),
        (("CREATE", "x/y", "QUOTA", "8mb", "ARENA", "own"), "its name becomes a file name"),
        (("CREATE", "x", "QUOTA", "8mb", "ARENA", "mine"), "invalid ARENA 'mine'"),
        (("CREATE", "x", "QUOTA", "8mb", "ARENA-GROUP", "0"), "ARENA-GROUP is for a tenant with ARENA own"),
        (("CREATE", "x", "QUOTA", "8mb", "ARENA", "own", "ARENA-GROUP", "no-such-group-here"),
         "no such group 'no-such-group-here'"),
        (("CREATE", "x", "QUOTA", "8mb", "ARENA", "own", "SHARED-READ", "team"),
         "shared namespaces are in the server's arena"),
        (("CREATE", "x", "QUOTA", "8mb", "SHARED-READ", "acme"), "its namespace cannot be shared"),
        (("SET", "acme", "ARENA", "shared"), "values cannot move between arenas"),
        (("SET", "team", "ARENA", "own"), "values cannot move between arenas"),
        (("SET", "acme", "QUOTA", "0"), "tenant 'acme' needs a QUOTA to have ARENA own"),
        (("SET", "acme", "ARENA-WRITE", "maybe"), "invalid ARENA-WRITE 'maybe'"),
        (("SET", "acme", "ARENA-WRITE", "yes"), "tenant 'acme': ARENA-WRITE needs ARENA-GROUP"),
    ]
    for args, message in cases:
        with pytest.raises(redis.ResponseError, match=re.escape(message)):
            admin.execute_command("TENANT", *args)
    assert [n.decode() for n in admin.execute_command("TENANT", "LIST")] == ["default", "team", "acme"]
    assert not [f for f in os.listdir(server.dir) if ".tenant-x" in f]
    open(tenant_path(server, "left"), "wb").close()
    with pytest.raises(redis.ResponseError, match="exists: another tenant's arena, or one left behind"):
        admin.execute_command("TENANT", "CREATE", "left", "QUOTA", "8mb", "ARENA", "own")


def test_restart_and_crash_keep_the_tenants_values(server, acme):
    values = {f"k{i}": os.urandom(300_000) for i in range(6)}
    for key, value in values.items():
        acme.set(key, value)
    acme.close()
    server.restart()
    with as_user(server, "acme-user") as again:
        assert all(again.get(k) == v for k, v in values.items())
        again.set("late", b"after restart")
    server.kill9()
    server.restart(loglevel="notice")
    assert re.search(r"Tenant 'acme' arena \S+a\.tenant-acme\.arena: rebuilt", server.log)
    with as_user(server, "acme-user") as again:
        assert again.get("late") == b"after restart" and again.dbsize() == 7
    with as_user(server, "admin") as admin:
        assert admin.execute_command("DEBUG", "ARENA-CHECK") == []
        assert admin.dbsize() == 0


def test_created_tenant_persists_and_is_rewritten(server, admin):
    admin.execute_command("TENANT", "CREATE", "gamma", "QUOTA", "8mb", "ARENA", "own",
                          "ARENA-GROUP", str(GROUP_A), "USERS", "beta-user")
    path = tenant_path(server, "gamma")
    st = os.stat(path)
    assert st.st_mode & 0o777 == 0o640 and (os.geteuid() != 0 or st.st_gid == GROUP_A)  # read-only
    assert tenant_info(admin, "gamma")["arena_write"] == "no"
    with as_user(server, "beta-user") as beta:
        beta.set("g", b"gamma's")
    admin.execute_command("TENANT", "SET", "gamma", "ARENA-WRITE", "yes")
    assert os.stat(path).st_mode & 0o777 == 0o660 and tenant_info(admin, "gamma")["arena_write"] == "yes"
    saved = {t["name"]: t for t in json.loads((server.dir / "tenants.json").read_text())["tenants"]}
    assert (saved["gamma"]["arena"], saved["gamma"]["arena_group"], saved["gamma"]["arena_write"]) == (
        "own", str(GROUP_A), True)
    admin.execute_command("CONFIG", "REWRITE")
    assert (f"tenant gamma quota 8mb arena own arena-group {GROUP_A} arena-write yes users beta-user"
            in (server.dir / "cxlredis.conf").read_text())
    with pytest.raises(redis.ResponseError, match="ARENA-WRITE needs ARENA-GROUP"):
        admin.execute_command("TENANT", "SET", "gamma", "ARENA-GROUP", "none")
    assert os.stat(path).st_mode & 0o777 == 0o660                 # refused: nothing changed
    admin.execute_command("TENANT", "SET", "gamma", "ARENA-GROUP", "none", "ARENA-WRITE", "no")
    assert os.stat(path).st_mode & 0o777 == 0o600
    admin.execute_command("CONFIG", "REWRITE")
    assert "tenant gamma quota 8mb arena own users beta-user" in (server.dir / "cxlredis.conf").read_text()
    server.restart()
    with as_user(server, "beta-user") as beta:
        assert beta.get("g") == b"gamma's"


# ---------------------------------------------------------------- mapping

def test_tenant_maps_its_own_arena(server, acme):
    kv = local(server, username="acme-user", password=PASSWORD)
    try:
        assert kv.mapped, kv.why_not_mapped
        assert kv.info["backing-path"] == tenant_path(server, "acme")
        value = os.urandom(2 * MiB)
        kv.set(b"mapped", value)
        assert acme.get("mapped") == value          # what it wrote through the mapping, over RESP
        acme.set("resp", value[::-1])
        assert kv.get_bytes(b"resp") == value[::-1]
        with kv.get(b"resp") as ref:
            assert ref.mapped and bytes(ref.view[:16]) == value[::-1][:16] and ref.valid()
        kv.flush_releases()         # two 2 MiB leases would pass acme's lease cap (16 MiB / 4)
        offset, length, *_ = acme.execute_command("CXL", "GETREF", "resp")
        assert offset + length <= os.path.getsize(tenant_path(server, "acme"))
    finally:
        kv.close()
    with as_user(server, "admin") as admin:
        assert admin.get("mapped") is None
        assert info(admin)["backing-path"] == os.path.abspath(server.arena_path)
        assert info(admin)["leases-refs"] == 0      # acme's lease is on acme's arena
    assert info(acme)["leases-refs"] == 1


def test_tenant_in_the_servers_arena_still_may_not_map(server):
    kv = local(server, username="team-user", password=PASSWORD)
    try:
        assert not kv.mapped and "its values share the server's arena" in kv.why_not_mapped
        kv.set(b"k", b"over RESP")
        assert kv.get_bytes(b"k") == b"over RESP"
    finally:
        kv.close()


def test_deleted_tenant_arena_is_unmapped_when_its_last_lease_ends(server, admin, acme):
    acme.set("held", b"z" * MiB)
    acme.execute_command("CXL", "GETREF", "held")
    path = tenant_path(server, "acme")
    admin.execute_command("TENANT", "DELETE", "acme")
    assert not os.path.exists(path)
    # its connection was closed; redis-py reconnects, as a user of no tenant now
    assert acme.get("held") is None

    def mapped_by_server():
        with open(f"/proc/{server.pid}/maps") as maps:
            return path in maps.read()
    assert mapped_by_server()                       # the lease still holds the block
    deadline = time.monotonic() + 5
    while mapped_by_server() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not mapped_by_server()
    admin.execute_command("TENANT", "CREATE", "acme", "QUOTA", "8mb", "ARENA", "own")
    with as_user(server, "acme-user") as again:
        assert again.dbsize() == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another uid")
def test_the_operating_system_keeps_other_tenants_out(tmp_path):
    """A process of tenant A's group (and not root) maps A's arena read-only, may not
    write it, and can open neither B's arena nor the server's; over the unix socket B's
    user is told why it is not mapped. A process of B's group, whose tenant has
    ARENA-WRITE, also writes through the mapping."""
    srv = cxl_server(USERS + [
        f"tenant acme quota 8mb arena own arena-group {GROUP_A} users acme-user",
        f"tenant beta quota 8mb arena own arena-group {GROUP_B} arena-write yes users beta-user"],
        unixsocketperm="777")
    os.chmod(srv.dir, 0o755)                        # the other uid must reach the socket
    try:
        srv.start()
        with as_user(srv, "acme-user") as acme:
            acme.set("a", b"acme's value")

        def opens(path, flags):
            try:
                os.close(os.open(path, flags))
                return "opened"
            except PermissionError:
                return "denied"

        def in_tenant_a_group():
            results = {label: (opens(path, os.O_RDONLY), opens(path, os.O_RDWR))
                       for label, path in (("own", tenant_path(srv, "acme")),
                                           ("other", tenant_path(srv, "beta")),
                                           ("server", srv.arena_path))}
            with local(srv, username="acme-user", password=PASSWORD) as kv:
                results["acme mapped"] = kv.mapped
                results["acme value"] = kv.get_bytes(b"a").decode()
                kv.set(b"b", b"written over RESP")                 # no write mapping: RESP
                results["acme write"] = (kv.why_not_writable, kv.get_bytes(b"b").decode())
            with local(srv, username="beta-user", password=PASSWORD) as kv:
                results["beta mapped"] = kv.mapped
                results["beta why"] = kv.why_not_mapped
            return results

        def in_tenant_b_group():
            with local(srv, username="beta-user", password=PASSWORD) as kv:
                kv.set(b"c", b"written through the mapping")
                return {"mapped": kv.mapped, "why not writable": kv.why_not_writable,
                        "value": kv.get_bytes(b"c").decode()}

        results = run_as(NOBODY, [GROUP_A], in_tenant_a_group)
        assert results["own"] == ["opened", "denied"]
        assert results["other"] == results["server"] == ["denied", "denied"]
        assert results["acme mapped"] is True and results["acme value"] == "acme's value"
        why_not, value = results["acme write"]
        assert "Permission denied" in why_not and value == "written over RESP"
        assert results["beta mapped"] is False and "Permission denied" in results["beta why"]
        with as_user(srv, "admin") as admin:
            admin.config_resetstat()
            assert run_as(NOBODY, [GROUP_B], in_tenant_b_group) == {
                "mapped": True, "why not writable": "", "value": "written through the mapping"}
            assert admin.info("commandstats")["cmdstat_cxl|commit"]["calls"] == 1
    finally:
        srv.close()


def run_as(uid, groups, function):
    """function() in a forked child running as uid with only `groups`; its JSON result."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups(groups)
            os.setgid(groups[0])
            os.setuid(uid)
            with os.fdopen(write_end, "w") as out:
                json.dump(function(), out)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as result:
        text = result.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child failed"
    return json.loads(text)


def test_lease_outlives_nothing_across_tenants(server, admin, acme):
    """A lease id taken on acme's arena is acme's connection's: another tenant's release of
    it ends nothing, and the value stays pinned until acme releases it."""
    acme.set("v", b"q" * MiB)
    lease = acme.execute_command("CXL", "GETREF", "v")[3]
    assert admin.execute_command("CXL", "RELEASE", lease) == 0
    acme.delete("v")
    assert tenant_info(admin, "acme")["used_bytes"] >= MiB      # pinned: still on the bill
    assert acme.execute_command("CXL", "RELEASE", lease) == 1
    time.sleep(0.05)
    assert tenant_info(admin, "acme")["used_bytes"] == 0


def test_metrics_cover_tenants_with_their_own_arena():
    port = free_port()
    srv = cxl_server(USERS + TENANTS, metrics_port=port)
    try:
        srv.start()
        with as_user(srv, "acme-user") as acme:
            acme.mset({"a": b"1", "b": b"2"})
            acme.get("a")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
        samples = {(s.name, s.labels.get("tenant")): s.value
                   for family in text_string_to_metric_families(text) for s in family.samples}
        assert samples[("cxlredis_tenant_keys", "acme")] == 2
        assert samples[("cxlredis_tenant_quota_bytes", "acme")] == 16 * MiB
        assert samples[("cxlredis_tenant_hits_total", "acme")] == 1
        assert samples[("cxlredis_tenant_keys", "team")] == 0
    finally:
        srv.close()


def test_config_line_without_quota_is_a_config_error():
    srv = cxl_server(USERS + ["tenant lone arena own users acme-user"])
    try:
        with pytest.raises(ServerStartError):
            srv.start(timeout=10)
        assert "tenant 'lone' needs a QUOTA to have ARENA own" in srv.log
        assert not os.path.exists(tenant_path(srv, "lone"))
    finally:
        srv.close()


def test_a_shared_tenant_with_keys_cannot_become_own(server):
    with as_user(server, "team-user") as team:
        team.set("stays", b"in the server's arena")
    server.stop()
    conf = server.dir / "cxlredis.conf"
    conf.write_text(conf.read_text().replace("tenant team quota 16mb users team-user",
                                             "tenant team quota 16mb arena own users team-user"))
    with pytest.raises(ServerStartError):
        server.start(timeout=10)
    assert "tenant 'team' has ARENA own, but its keys are in the server's arena" in server.log
    assert not os.path.exists(tenant_path(server, "team"))
    conf.write_text(conf.read_text().replace(" arena own users team-user", " users team-user"))
    server.start()
    with as_user(server, "team-user") as team:
        assert team.get("stays") == b"in the server's arena"


def test_a_reservation_commits_where_it_was_made(server):
    """A connection that reserved as a tenant's user and then authenticated as another
    commits into the tenant's arena, where the block is (not into its new keyspace)."""
    conn = redis.Redis(unix_socket_path=server.unixsocket, username="acme-user", password=PASSWORD,
                       single_connection_client=True)
    try:
        lease, offset, nbytes, _ = conn.execute_command("CXL", "RESERVE", "fresh", 5)
        with open(tenant_path(server, "acme"), "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
            m[offset:offset + nbytes] = b"hello"
        conn.execute_command("AUTH", "admin", PASSWORD)
        assert conn.execute_command("CXL", "COMMIT", lease) == b"OK"
        assert conn.get("fresh") is None                        # not the admin's
    finally:
        conn.close()
    with as_user(server, "acme-user") as acme:
        assert acme.get("fresh") == b"hello"
    with as_user(server, "admin") as admin:
        assert admin.execute_command("DEBUG", "ARENA-CHECK") == []


def test_checksums_cover_tenant_arenas():
    """arena-checksum applies to every arena: a tenant's value that changed in its file is
    dropped on read, and the server's count of checksum failures includes it."""
    srv = cxl_server(USERS + TENANTS, arena_checksum="yes")
    try:
        srv.start()
        marker = b"CORRUPT-ME" + os.urandom(200_000)
        with as_user(srv, "acme-user") as acme, as_user(srv, "admin") as admin:
            acme.set("v", marker)
            corrupt(tenant_path(srv, "acme"), marker)
            assert acme.get("v") is None and acme.exists("v") == 0
            assert admin.info("arena")["arena_checksum_failures"] == 1
            admin.config_set("arena-checksum", "no")
            acme.set("w", marker)                       # no checksum: nothing to verify
            corrupt(tenant_path(srv, "acme"), marker)
            assert acme.get("w") == bytes([marker[0] ^ 0xFF]) + marker[1:]
    finally:
        srv.close()
