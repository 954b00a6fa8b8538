"""Tenants from the config file and from TENANT commands survive a warm restart, after
SHUTDOWN and after kill -9: the tenants, their users and grants, quotas, meters and
data. Definitions that disappear keep their data; bad ones stop the start."""
import json

import pytest

from conftest import ServerStartError, raw_connection
from tenant_helpers import USERS, as_user, tenant_info, tenant_server

CONF = USERS + ["tenant common users publisher",
                "tenant team-a quota 2mb policy allkeys-lru users alice shared-read common"]
BIG = b"z" * (128 * 1024)


def snapshot(server):
    admin = server.client()
    names = [n.decode() for n in admin.execute_command("TENANT", "LIST")]
    state = {name: tenant_info(admin, name) for name in names if name != "default"}
    admin.close()
    return state


def check_data(server):
    alice, carol = as_user(server, "alice"), as_user(server, "carol")
    assert alice.execute_command("TENANT", "WHOAMI") == b"team-a"
    assert alice.get("small") == b"alice" and alice.get("big") == BIG
    assert alice.get("prompt") == b"shared prompt"               # through the read grant
    assert carol.execute_command("TENANT", "WHOAMI") == b"team-c" and carol.get("small") == b"carol"
    alice.close()
    carol.close()


@pytest.fixture
def server():
    srv = tenant_server(CONF)
    try:
        yield srv.start()
    finally:
        srv.close()


def test_shutdown_and_kill9_keep_tenants_users_quotas_meters_and_data(server):
    publisher, alice = as_user(server, "publisher"), as_user(server, "alice")
    publisher.set("prompt", "shared prompt")
    alice.set("small", "alice")
    alice.set("big", BIG)
    alice.get("missing")
    with raw_connection(server.port) as admin:
        assert admin.request("TENANT", "CREATE", "team-c", "QUOTA", "1mb", "USERS", "carol") == b"+OK\r\n"
    carol = as_user(server, "carol")
    carol.set("small", "carol")
    for client in (publisher, alice, carol):
        client.close()
    before = snapshot(server)
    assert before["team-c"]["quota"] == 1024 * 1024 and before["team-a"]["commands"] > 0

    with raw_connection(server.port) as admin:
        admin.send(b"*1\r\n$8\r\nSHUTDOWN\r\n")
        assert admin.is_closed(5)
    server.restart()
    assert snapshot(server) == before
    check_data(server)

    before = snapshot(server)
    server.kill9()
    server.restart()
    assert server.client().info("persistence")["arena_recovery"] == "rebuilt"
    assert snapshot(server) == before
    check_data(server)


def test_config_rewrite_writes_tenant_lines(server):
    with raw_connection(server.port) as admin:
        admin.request("TENANT", "CREATE", "team-c", "QUOTA", "1mb", "POLICY", "volatile-lru",
                      "USERS", "carol", "SHARED-WRITE", "common")
        assert admin.request("CONFIG", "REWRITE") == b"+OK\r\n"
    text = open(server.conf).read()
    assert "tenant team-c quota 1mb policy volatile-lru users carol shared-write common\n" in text
    assert "tenant team-a quota 2mb policy allkeys-lru users alice shared-read common\n" in text
    # the config file alone now defines them
    server.stop()
    (server.dir / "tenants.json").unlink()
    server.restart()
    carol = as_user(server, "carol")
    assert carol.execute_command("TENANT", "WHOAMI") == b"team-c"
    carol.set("common:doc", "v")
    assert as_user(server, "publisher").get("doc") == b"v"


def test_a_removed_line_keeps_the_tenant(server):
    alice = as_user(server, "alice")
    alice.set("kept", "yes")
    alice.close()
    with open(server.conf, "w") as conf:
        conf.write("\n".join(USERS + ["tenant common users publisher"]) + "\n")
    server.restart()
    assert "Tenant 'team-a' is no longer declared by a tenant line" in server.log
    info = tenant_info(server.client(), "team-a")
    assert info["keys"] == 1 and info["users"] == ["alice"] and info["quota"] == 2 * 1024 * 1024
    assert as_user(server, "alice").get("kept") == b"yes"
    # without a tenants file, only the arena remembers it: data and quota, no users
    server.restart(**{"tenants-file": ""})
    info = tenant_info(server.client(), "team-a")
    assert info["keys"] == 1 and info["users"] == [] and info["quota"] == 2 * 1024 * 1024
    assert "Tenant 'team-a' is in the arena but in neither the config nor the tenants file" in server.log
    assert as_user(server, "alice").execute_command("TENANT", "WHOAMI") is None


def test_a_reset_arena_gets_its_tenants_back_empty(server):
    as_user(server, "alice").set("gone", "soon")
    with raw_connection(server.port) as admin:
        admin.request("TENANT", "CREATE", "team-c", "USERS", "carol")
    server.restart(**{"arena-reset": "yes"})
    info = tenant_info(server.client(), "team-c")
    assert info["keys"] == 0 and info["users"] == ["carol"]
    assert tenant_info(server.client(), "team-a")["keys"] == 0


def test_bad_definitions_stop_the_start(server):
    server.stop()
    with open(server.conf, "a") as conf:
        conf.write("tenant team-b users alice\n")
    with pytest.raises(ServerStartError, match="user 'alice' already belongs to tenant 'team-a'"):
        server.start()
    with open(server.conf, "w") as conf:
        conf.write("tenant team-b quota much\n")
    with pytest.raises(ServerStartError, match="invalid QUOTA 'much'"):
        server.start()
    with open(server.conf, "w") as conf:
        conf.write("tenant team-b shared-read nobody\n")
    with pytest.raises(ServerStartError, match="tenant 'team-b' is granted 'nobody', which is no tenant"):
        server.start()
    with open(server.conf, "w") as conf:
        conf.write("")
    (server.dir / "tenants.json").write_text("{not json")
    with pytest.raises(ServerStartError, match="tenants.json is not valid JSON"):
        server.start()
    (server.dir / "tenants.json").write_text(json.dumps({"version": 9, "tenants": []}))
    with pytest.raises(ServerStartError, match="has version 9, this server reads version 1"):
        server.start()
