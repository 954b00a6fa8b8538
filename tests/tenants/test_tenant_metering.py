"""Metering per tenant (commands, request and reply bytes, exactly), the INFO tenants
section, INFO keyspace of a tenant, and the tenant in every audit log line."""
import json

import pytest

from conftest import encode_command, raw_connection
from tenant_helpers import USERS, as_user, tenant_info, tenant_server

BIG = b"b" * (100 * 1024)      # above the large-value threshold: received into a slot, sent as a view


@pytest.fixture(scope="module")
def server():
    lines = USERS + ["user reader on >pw ~* -@all +get",
                     "tenant team-a quota 4mb users alice",
                     "tenant team-b users bob reader"]
    srv = tenant_server(lines, **{"audit-log-file": "audit.log"})
    try:
        yield srv.start()
    finally:
        srv.close()


def meters(server, name):
    info = tenant_info(server.client(), name)
    return info["commands"], info["bytes_in"], info["bytes_out"]


def delta(after, before):
    return tuple(a - b for a, b in zip(after, before))


def test_commands_and_bytes_are_metered_exactly(server):
    before_a, before_default = meters(server, "team-a"), meters(server, "default")
    with raw_connection(server.port) as conn:
        auth = encode_command("AUTH", "alice", "pw")
        conn.send(auth)
        auth_reply = conn.read_reply()
        assert auth_reply == b"+OK\r\n"
        sent = received = 0
        calls = [("SET", "k", "v"), ("GET", "k"), ("GET", "missing"), ("PING",), ("SET", "big", BIG),
                 ("GET", "big"), ("HSET", "k", "f", "v"), ("MGET", "k", "big", "missing")]
        for args in calls:
            data = encode_command(*args)
            conn.send(data)
            reply = conn.read_reply()
            sent += len(data)
            received += len(reply)
        assert received > 2 * len(BIG)
    # AUTH started on the default namespace: it is metered there, with its reply
    assert delta(meters(server, "team-a"), before_a) == (len(calls), sent, received)
    default = delta(meters(server, "default"), before_default)
    assert default[0] >= 1 and default[1] >= len(auth) and default[2] >= len(auth_reply)


def test_a_pipelined_auth_splits_the_batch(server):
    before_a, before_b = meters(server, "team-a"), meters(server, "team-b")
    with raw_connection(server.port) as conn:
        assert conn.request("AUTH", "alice", "pw") == b"+OK\r\n"
        first = [encode_command("GET", "k"), encode_command("AUTH", "bob", "pw")]
        second = [encode_command("GET", "k"), encode_command("PING")]
        conn.send(b"".join(first + second))      # one packet: its bytes arrive for team-a
        replies = [conn.read_reply() for _ in range(4)]
    assert replies[1:] == [b"+OK\r\n", b"$-1\r\n", b"+PONG\r\n"]
    a = delta(meters(server, "team-a"), before_a)
    b = delta(meters(server, "team-b"), before_b)
    # (the first AUTH is the default namespace's, as in the test above)
    assert a == (2, len(b"".join(first + second)), len(replies[0]) + len(replies[1]))
    assert b == (2, 0, len(replies[2]) + len(replies[3]))


def test_info_tenants_and_keyspace(server):
    admin, alice = server.client(), as_user(server, "alice")
    alice.flushall()
    alice.set("one", "1")
    with raw_connection(server.port) as conn:
        conn.request("AUTH", "alice", "pw")
        conn.request("SELECT", "2")
        conn.request("SET", "two", "2")
    admin.set("admin-key", "x")
    tenants = admin.info("tenants")
    assert set(tenants) == {"tenant_default", "tenant_team-a", "tenant_team-b"}
    line = tenants["tenant_team-a"]
    info = tenant_info(admin, "team-a")
    assert line["keys"] == 2 and line["quota"] == 4 * 1024 * 1024 and line["used_bytes"] == info["used_bytes"]
    # (hit_ratio_at_* appear once the tenant's miss-ratio curve has a sampled read)
    assert {field for field in line if not field.startswith("hit_ratio_at_")} == {
        "keys", "used_bytes", "quota", "guaranteed", "borrowed", "reclaimed", "hits", "misses",
        "evicted", "expired", "rejected", "commands", "bytes_in", "bytes_out"}
    assert "tenant_team-a" in admin.info("all") and "tenant_team-a" in admin.info("everything")
    assert "tenant_team-a" not in admin.info()
    assert set(alice.info("tenants")) == {"tenant_team-a"}
    keyspace = alice.info("keyspace")
    assert keyspace == {"db0": {"keys": 1, "expires": 0, "avg_ttl": 0},
                        "db2": {"keys": 1, "expires": 0, "avg_ttl": 0}}
    assert admin.info("keyspace")["db0"]["keys"] == 1 and "db2" not in admin.info("keyspace")
    admin.delete("admin-key")


def test_audit_lines_carry_the_tenant(server):
    path = server.dir / "audit.log"
    start = len(path.read_text().splitlines()) if path.exists() else 0
    with raw_connection(server.port) as conn:
        assert conn.request("AUTH", "alice", "wrong").startswith(b"-WRONGPASS")
        assert conn.request("AUTH", "alice", "pw") == b"+OK\r\n"
        assert conn.request("FLUSHDB") == b"+OK\r\n"
    with raw_connection(server.port) as conn:
        conn.request("AUTH", "reader", "pw")
        assert conn.request("SET", "k", "v").startswith(b"-NOPERM")
    with raw_connection(server.port) as admin:
        for args in (("CREATE", "audited", "QUOTA", "1mb", "USERS", "dave"),
                     ("SET", "audited", "POLICY", "noeviction", "SHARED-READ", "team-a"),
                     ("RESETSTAT", "audited"), ("DELETE", "audited")):
            assert admin.request("TENANT", *args) == b"+OK\r\n"
    events = [json.loads(line) for line in path.read_text().splitlines()[start:]]
    by_event = {}
    for event in events:
        by_event.setdefault(event["event"], []).append(event)
    assert [e["tenant"] for e in by_event["auth_failure"]] == [None]
    assert [(e["user"], e["tenant"]) for e in by_event["auth_success"]] == [("alice", "team-a"),
                                                                            ("reader", "team-b")]
    assert [(e["tenant"], e["details"]["db"]) for e in by_event["flushdb"]] == [("team-a", 0)]
    [denied] = by_event["acl_denied"]
    assert (denied["tenant"], denied["details"]["command"]) == ("team-b", "set")
    [create] = by_event["tenant_create"]
    assert create["tenant"] is None and create["user"] == "default"
    assert create["details"] == {"name": "audited", "quota": 1024 * 1024, "users": ["dave"]}
    [changed] = by_event["tenant_set"]
    assert changed["details"] == {"name": "audited", "policy": "noeviction", "shared_read": ["team-a"]}
    assert by_event["tenant_resetstat"][0]["details"] == {"name": "audited"}
    assert by_event["tenant_delete"][0]["details"] == {"name": "audited", "keys": 0}
