"""Scripts across tenants: a script's redis.call reaches its caller's keyspace only,
and each tenant has its own script cache (SCRIPT EXISTS, EVALSHA and SCRIPT FLUSH of
one tenant never see another's), in the server's arena and in a tenant's own."""
import pytest
import redis

from tenant_helpers import USERS, as_user, tenant_server

COPY = "return redis.call('set', KEYS[1], redis.call('get', KEYS[2]) or 'none')"


@pytest.fixture(scope="module")
def server():
    srv = tenant_server(USERS + ["tenant team-a quota 2mb users alice",
                                 "tenant team-b users bob",
                                 "tenant own-c quota 64mb arena own users carol"])
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def clients(server):
    clients = {name: as_user(server, name) for name in ("alice", "bob", "carol")}
    clients["admin"] = redis.Redis(port=server.port, socket_timeout=10)
    for client in clients.values():
        client.flushdb()
        client.script_flush()
    return clients


def test_a_script_reads_and_writes_its_callers_keys_only(clients):
    for name, client in clients.items():
        client.set("secret", f"of {name}")
    for name, client in clients.items():
        assert client.eval(COPY, 2, "copy", "secret") == b"OK"
        assert client.get("copy") == f"of {name}".encode()
        assert client.eval("return redis.call('dbsize')", 0) == 2


def test_each_tenant_has_its_own_script_cache(clients):
    alice, bob, carol = clients["alice"], clients["bob"], clients["carol"]
    sha = alice.script_load("return 'alice'")
    assert alice.script_exists(sha) == [True]
    assert bob.script_exists(sha) == [False] and carol.script_exists(sha) == [False]
    with pytest.raises(redis.exceptions.NoScriptError):
        bob.evalsha(sha, 0)
    assert bob.script_load("return 'alice'") == sha        # same body, same sha, bob's own copy
    bob.script_flush()
    assert alice.evalsha(sha, 0) == b"alice"               # alice's cache is untouched


def test_a_scripts_commands_are_checked_against_the_callers_acl(server, clients):
    admin = clients["admin"]
    admin.acl_setuser("narrow", enabled=True, nopass=True, keys=["a*"], commands=["+@all", "-set"])
    narrow = redis.Redis(port=server.port, username="narrow", password="x", socket_timeout=10)
    try:
        with pytest.raises(redis.exceptions.ResponseError,
                           match="The user executing the script can't run this command or subcommand"):
            narrow.eval("return redis.call('set', 'a1', 'v')", 0)
        with pytest.raises(redis.exceptions.ResponseError,
                           match="can't access at least one of the keys mentioned in the command"):
            narrow.eval("return redis.call('get', 'b1')", 0)
        entry = admin.acl_log(1)[0]
        assert entry["context"] == "lua" and entry["object"] == "b1" and entry["reason"] == "key"
        with pytest.raises(redis.exceptions.NoPermissionError):
            narrow.eval("return 1", 1, "b1")                # EVAL's own keys are checked too
        assert narrow.eval("return redis.call('incr', 'a1')", 0) == 1
    finally:
        admin.acl_deluser("narrow")


def test_each_tenant_has_its_own_function_libraries(clients):
    def library(body):
        return f"#!lua name=tools\nredis.register_function('whoami', function(keys) {body} end)"

    for client in clients.values():
        client.function_flush()
    clients["alice"].function_load(library("return redis.call('get', keys[1])"))
    clients["alice"].set("secret", "alice's")
    clients["bob"].set("secret", "bob's")
    assert clients["alice"].fcall("whoami", 1, "secret") == b"alice's"
    for name in ("bob", "carol", "admin"):
        with pytest.raises(redis.ResponseError, match="Function not found"):
            clients[name].fcall("whoami", 1, "secret")
        assert clients[name].function_list() == []
        assert clients[name].function_dump() == clients["admin"].function_dump()   # nothing in it
    # the same library and function names in another tenant are that tenant's own
    clients["bob"].function_load(library("return 'bob: ' .. redis.call('get', keys[1])"))
    assert clients["bob"].fcall("whoami", 1, "secret") == b"bob: bob's"
    payload = clients["alice"].function_dump()
    clients["carol"].function_restore(payload)
    clients["carol"].set("secret", "carol's")
    assert clients["carol"].fcall("whoami", 1, "secret") == b"carol's"
    clients["bob"].function_flush()
    assert clients["alice"].fcall("whoami", 1, "secret") == b"alice's"
    assert clients["carol"].function_list()[0][:2] == [b"library_name", b"tools"]
    stats = clients["alice"].execute_command("FUNCTION", "STATS")     # (redis-py makes it a dict)
    assert stats[b"engines"] == {b"LUA": {b"libraries_count": 1, b"functions_count": 1}}


def test_a_deleted_tenant_takes_its_scripts_and_libraries_along(server, clients):
    admin = clients["admin"]
    admin.execute_command("TENANT", "CREATE", "scratch", "USERS", "dave")
    dave = as_user(server, "dave")
    sha = dave.script_load("return 'old'")
    dave.function_load("#!lua name=old\nredis.register_function('old', function() return 1 end)")
    admin.execute_command("TENANT", "DELETE", "scratch")
    admin.execute_command("TENANT", "CREATE", "scratch", "USERS", "dave")
    dave = as_user(server, "dave")
    assert dave.script_exists(sha) == [False]
    assert dave.function_list() == []
    admin.execute_command("TENANT", "DELETE", "scratch")


def test_a_tenants_cjson_settings_are_its_own(clients):
    # Redis keeps cjson's settings from one script to the next; here every tenant's
    # scripts share one Lua runtime, so the settings are kept per tenant.
    alice, bob, admin = clients["alice"], clients["bob"], clients["admin"]
    nested = "return cjson.encode({{1}})"
    assert alice.eval("return cjson.encode_max_depth(1)", 0) == 1
    with pytest.raises(redis.exceptions.ResponseError, match="Cannot serialise, excessive nesting"):
        alice.eval(nested, 0)
    assert bob.eval(nested, 0) == b"[[1]]" and admin.eval(nested, 0) == b"[[1]]"
    assert bob.eval("return cjson.encode_max_depth()", 0) == 1000
    alice.script_flush()                  # a new VM in Redis: the settings start over
    assert alice.eval(nested, 0) == b"[[1]]"
