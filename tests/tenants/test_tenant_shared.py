"""A shared namespace (`common`, published by its own user): read grants fall through
to it on a miss, writes need a write grant and the `common:` prefix, and the
keyspace commands of a tenant never show it."""
import pytest
import redis

from conftest import raw_connection
from tenant_helpers import USERS, as_user, tenant_info, tenant_server

BIG = 256 * 1024


@pytest.fixture(scope="module")
def server():
    lines = USERS + [
        "tenant common users publisher",
        "tenant team-a quota 8mb users alice shared-read common",
        "tenant team-b quota 8mb users bob shared-read common shared-write common",
    ]
    srv = tenant_server(lines)
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def users(server):
    clients = {name: as_user(server, name) for name in ("publisher", "alice", "bob")}
    for client in clients.values():
        client.flushall()
    yield clients
    for client in clients.values():
        client.close()


def test_reads_fall_through_and_own_writes_shadow(users):
    pub, alice, bob = users["publisher"], users["alice"], users["bob"]
    pub.set("prompt:system", "be helpful")
    pub.hset("doc:1", mapping={"title": "guide", "body": "text"})
    assert alice.get("prompt:system") == b"be helpful" and bob.get("prompt:system") == b"be helpful"
    assert alice.hget("doc:1", "title") == b"guide" and alice.type("doc:1") == b"hash"
    assert alice.exists("prompt:system", "nothing") == 1
    alice.set("mine", "a")
    assert alice.mget("mine", "prompt:system", "nothing") == [b"a", b"be helpful", None]
    # alice's own write shadows the shared key for her only
    alice.set("prompt:system", "alice's")
    assert alice.get("prompt:system") == b"alice's"
    assert pub.get("prompt:system") == b"be helpful" and bob.get("prompt:system") == b"be helpful"
    assert alice.delete("prompt:system") == 1 and alice.get("prompt:system") == b"be helpful"
    # read-modify-write commands copy the shared value into her namespace
    pub.set("counter", 10)
    assert alice.incr("counter") == 11 and pub.get("counter") == b"10"
    pub.set("text", "abc")
    assert alice.append("text", "def") == 6 and alice.get("text") == b"abcdef"
    assert pub.get("text") == b"abc"


def test_large_shared_values_are_served(users):
    pub, alice = users["publisher"], users["alice"]
    blob = bytes(range(256)) * (BIG // 256)
    pub.set("kv:chunk", blob)
    assert alice.get("kv:chunk") == blob and alice.strlen("kv:chunk") == BIG
    assert alice.getrange("kv:chunk", 256, 511) == bytes(range(256))


def test_no_write_to_a_shared_namespace_without_a_grant(users):
    pub, alice = users["publisher"], users["alice"]
    pub.set("fixed", "v")
    pub.set("volatile", "v", ex=1000)
    for call in (lambda: alice.delete("fixed"), lambda: alice.expire("fixed", 100),
                 lambda: alice.persist("volatile"), lambda: alice.rename("fixed", "moved"),
                 lambda: alice.getdel("fixed"), lambda: alice.getex("fixed", ex=100)):
        with pytest.raises(redis.exceptions.ResponseError,
                           match="shared namespace 'common', read-only for tenant 'team-a'"):
            call()
    # the prefix means nothing without a write grant: an own key of that name
    alice.set("common:fixed", "mine")
    assert pub.get("fixed") == b"v" and pub.ttl("fixed") == -1 and pub.ttl("volatile") > 0
    assert pub.dbsize() == 2
    assert alice.get("common:fixed") == b"mine"


def test_a_write_grant_writes_through_the_prefix(server, users):
    pub, alice, bob = users["publisher"], users["alice"], users["bob"]
    bob.set("common:doc:2", "shared by bob")
    assert pub.get("doc:2") == b"shared by bob" and alice.get("doc:2") == b"shared by bob"
    assert bob.get("common:doc:2") == b"shared by bob" and bob.get("doc:2") == b"shared by bob"
    big = b"x" * BIG                         # received into bob's slot, stored in common
    bob.set("common:blob", big)
    assert pub.get("blob") == big and tenant_info(server.client(), "team-b")["keys"] == 0
    assert bob.expire("doc:2", 1000) == 1 and 0 < pub.ttl("doc:2") <= 1000
    assert bob.rename("common:doc:2", "common:doc:3") is True and pub.exists("doc:3") == 1
    assert bob.delete("doc:3") == 1 and pub.exists("doc:3") == 0     # seen through, writable
    with pytest.raises(redis.exceptions.ResponseError, match="renamed into another namespace"):
        bob.rename("common:blob", "blob")


def test_keyspace_commands_show_only_the_own_namespace(server, users):
    pub, alice = users["publisher"], users["alice"]
    pub.set("shared:1", "v")
    pub.set("shared:2", "v")
    alice.set("own", "v")
    assert alice.keys("*") == [b"own"] and alice.dbsize() == 1
    assert alice.scan(0, count=1000) == (0, [b"own"]) and alice.randomkey() == b"own"
    assert alice.memory_usage("shared:1") is None and alice.memory_usage("own") > 0
    assert alice.info("keyspace") == {"db0": {"keys": 1, "expires": 0, "avg_ttl": 0}}
    assert alice.flushall() and pub.dbsize() == 2 and alice.get("shared:1") == b"v"
    with raw_connection(server.port) as conn:
        conn.request("AUTH", "alice", "pw")
        assert conn.request("FLUSHDB") == b"+OK\r\n"
        assert conn.request("GET", "shared:2") == b"$1\r\nv\r\n"


def test_watch_sees_a_shared_key_change(users):
    pub, alice = users["publisher"], users["alice"]
    pub.set("w", "1")
    with alice.pipeline() as pipe:
        pipe.watch("w")
        pub.set("w", "2")
        pipe.multi()
        pipe.set("other", "x")
        with pytest.raises(redis.exceptions.WatchError):
            pipe.execute()
