"""CXL PREFIX, PREFIXGET and PREFIXREF: a prompt's longest cached prefix in one round
trip. The keys are its chunks in order; each command stops at the first missing one
and never looks past it. Over TCP and the unix socket, in RESP2 and RESP3, under ACLs
and tenants, and through cxlredis.local (the LMCache plugin's client)."""
import os
import time

import pytest
import redis

from conftest import run_steps
from cxl_helpers import PASSWORD, TENANT_LINES, USERS, cxl_server, info, local, unix_client

PROMPT = [f"chunk:{i}".encode() for i in range(64)]


@pytest.fixture(scope="module")
def server():
    srv = cxl_server(USERS + TENANT_LINES + [f"user team-b on >{PASSWORD} ~* +@all",
                                             "tenant team-b users team-b"])
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def r(server):
    client = unix_client(server)
    client.flushall()
    client.config_resetstat()
    try:
        yield client
    finally:
        client.close()


def prefix(client, *keys):
    return client.execute_command("CXL", "PREFIX", *keys)


def prefix_get(client, *keys):
    return client.execute_command("CXL", "PREFIXGET", *keys)


def keyspace(client):
    stats = client.info("stats")
    return stats["keyspace_hits"], stats["keyspace_misses"]


def test_prefix_counts_the_leading_keys_and_stops_at_the_first_miss(r):
    r.mset({key: b"kv" for key in PROMPT[:40]})
    r.set(PROMPT[50], b"kv")                    # cached, but past the gap
    assert prefix(r, *PROMPT) == 40
    assert prefix(r, *PROMPT[:10]) == 10
    assert prefix(r, b"missing", *PROMPT) == 0
    assert prefix(r, PROMPT[0], PROMPT[0], PROMPT[1]) == 3       # a key named twice counts twice
    # nothing past the first miss is looked up: 40 hits then one miss
    r.config_resetstat()
    prefix(r, *PROMPT)
    assert keyspace(r) == (40, 1)


def test_prefix_counts_any_type_and_prefixget_stops_at_a_non_string(r):
    r.set("a", "1")
    r.rpush("list", "x")
    r.set("b", "2")
    assert prefix(r, "a", "list", "b") == 3                      # present, as EXISTS says
    assert prefix_get(r, "a", "list", "b") == [b"1"]             # MGET would give nil there


def test_an_expired_key_ends_the_prefix(r):
    r.set("a", "1")
    r.set("b", "2", px=1)
    r.set("c", "3")
    time.sleep(0.01)
    assert prefix(r, "a", "b", "c") == 1
    assert prefix_get(r, "a", "b", "c") == [b"1"]


def test_prefix_does_not_touch_and_prefixget_does(r):
    r.set("a", "1")
    before = r.object("idletime", "a")
    time.sleep(1.1)
    prefix(r, "a")
    assert r.object("idletime", "a") >= before + 1
    prefix_get(r, "a")
    assert r.object("idletime", "a") == 0


def test_prefixget_returns_large_values_whole(r):
    values = [os.urandom(size) for size in (256 << 10, 2 << 20, 1, 0, 3 << 20)]
    r.mset(dict(zip(PROMPT, values)))
    assert prefix_get(r, *PROMPT) == values
    assert prefix_get(r, *PROMPT[:2], b"missing", PROMPT[2]) == values[:2]
    assert prefix_get(r, b"missing", *PROMPT) == []


@pytest.mark.parametrize("protocol", [2, 3])
def test_reply_shapes(server, r, protocol):
    r.mset({"a": "1", "b": "2"})
    run_steps(server, protocol, [
        (("CXL", "PREFIX", "a", "b"), b":2\r\n"),
        (("CXL", "PREFIXGET", "a", "z", "b"), b"*1\r\n$1\r\n1\r\n"),
        (("cxl", "prefixget", "z"), b"*0\r\n"),
    ])


@pytest.mark.parametrize("sub", ["PREFIX", "PREFIXGET", "PREFIXREF"])
def test_arity_and_key_extraction(r, sub):
    with pytest.raises(redis.ResponseError, match=rf"wrong number of arguments for 'cxl\|{sub.lower()}'"):
        r.execute_command("CXL", sub)
    assert r.command_getkeys("CXL", sub, "a", "b") == ["a", "b"]


def test_prefixref_leases_only_the_leading_values(r):
    r.mset({"a": b"x" * 300_000, "b": b"yy", "d": b"z"})
    refs = r.execute_command("CXL", "PREFIXREF", "a", "b", "c", "d")
    assert [ref[1] for ref in refs] == [300_000, 2]
    assert info(r)["leases-refs"] == 2              # nothing past the miss is leased
    assert r.execute_command("CXL", "RELEASE", *(ref[3] for ref in refs)) == 2
    r.rpush("list", "x")
    refs = r.execute_command("CXL", "PREFIXREF", "b", "list", "a")     # a list ends it
    assert [ref[1] for ref in refs] == [2] and info(r)["leases-refs"] == 1
    assert r.execute_command("CXL", "RELEASE", refs[0][3]) == 1


def test_prefixref_at_the_lease_cap_leases_nothing():
    srv = cxl_server(cxl_lease_max_bytes="1mb")
    try:
        srv.start()
        client = unix_client(srv)
        client.mset({"a": b"x" * 700_000, "b": b"y" * 700_000})
        with pytest.raises(redis.ResponseError, match="cxl-lease-max-bytes"):
            client.execute_command("CXL", "PREFIXREF", "a", "b")
        assert info(client)["leases-refs"] == 0
        assert prefix_get(client, "a", "b") == [b"x" * 700_000, b"y" * 700_000]
    finally:
        srv.close()


def test_acl_prefix_and_prefixget_are_reads_prefixref_is_mapping(server, r):
    r.set("a", "1")
    reader = redis.Redis(unix_socket_path=server.unixsocket, username="reader", password=PASSWORD)
    assert prefix(reader, "a") == 1 and prefix_get(reader, "a") == [b"1"]
    with pytest.raises(redis.exceptions.NoPermissionError, match=r"cxl\|prefixref"):
        reader.execute_command("CXL", "PREFIXREF", "a")
    r.acl_setuser("keys-a", enabled=True, passwords=[f"+{PASSWORD}"], keys=["a*"],
                  commands=["+@read"])
    limited = redis.Redis(unix_socket_path=server.unixsocket, username="keys-a", password=PASSWORD)
    with pytest.raises(redis.exceptions.NoPermissionError, match="no permissions to access one of the keys"):
        prefix(limited, "a", "b")                   # every named key is checked, as in EXISTS
    assert prefix(limited, "a", "ab") == 1


def test_prefixref_over_tcp_without_a_password_is_refused(server, r):
    r.set("a", "1")
    with pytest.raises(redis.ResponseError, match="offered only over the unix socket"):
        redis.Redis(port=server.port).execute_command("CXL", "PREFIXREF", "a")
    assert prefix(redis.Redis(port=server.port), "a") == 1


def test_a_tenant_sees_only_its_own_chunks(server, r):
    team_a = redis.Redis(unix_socket_path=server.unixsocket, username="tenant-user", password=PASSWORD)
    team_b = redis.Redis(unix_socket_path=server.unixsocket, username="team-b", password=PASSWORD)
    team_a.mset({key: b"a" for key in PROMPT[:8]})
    team_b.mset({key: b"b" for key in PROMPT[:3]})
    assert prefix(team_a, *PROMPT) == 8 and prefix(team_b, *PROMPT) == 3 and prefix(r, *PROMPT) == 0
    assert prefix_get(team_b, *PROMPT) == [b"b"] * 3


# ------------------------------------------------------------ cxlredis.local

@pytest.mark.parametrize("mapped", [True, False])
def test_local_client_prefix_and_prefix_get(server, r, mapped):
    values = [os.urandom(n) for n in (100, 64 << 10, 2 << 20)]
    r.mset(dict(zip(PROMPT, values)))
    r.set(PROMPT[5], b"after the gap")
    with local(server, map_backing=mapped) as kv:
        assert kv.mapped is mapped
        assert kv.prefix(PROMPT) == 3 and kv.prefix([]) == 0 and kv.prefix(PROMPT[3:]) == 0
        refs = kv.prefix_get(PROMPT)
        assert [bytes(ref.view) for ref in refs] == values
        assert all(ref.valid() and ref.mapped is mapped for ref in refs)
        for ref in refs:
            ref.release()
        assert kv.prefix_get([]) == [] and kv.prefix_get(PROMPT[3:]) == []
        kv.flush_releases()
    assert info(r)["leases-refs"] == 0
    stats = r.info("commandstats")
    assert stats["cmdstat_cxl|prefix"]["calls"] == 2      # one command per call, none for []
    assert f"cmdstat_cxl|{'prefixref' if mapped else 'prefixget'}" in stats


def test_boundary_keys_and_a_huge_prompt(server, r):
    """Empty and binary keys, a key of 512 KiB, and 100,000 keys in one command: exact
    answers, and the server answers PING after each."""
    odd = [b"", b"\x00", b"\xff\x00\r\n$-1\r\n", b"k" * (512 << 10)]
    for key in odd:
        r.set(key, key + b"!")
    assert prefix(r, *odd) == 4 and prefix_get(r, *odd) == [key + b"!" for key in odd]
    assert r.ping()
    many = [b"m%d" % i for i in range(100_000)]
    r.mset({key: b"" for key in many[:99_999]})
    assert prefix(r, *many) == 99_999 and prefix(r, *many[::-1]) == 0
    assert len(prefix_get(r, *many)) == 99_999
    refs = r.execute_command("CXL", "PREFIXREF", *many[:5_000])
    assert len(refs) == 5_000
    assert r.execute_command("CXL", "RELEASE", *(ref[3] for ref in refs)) == 5_000
    assert r.ping()
