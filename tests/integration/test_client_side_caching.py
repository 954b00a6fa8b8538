"""Client-side caching as a pod's hot tier uses it: redis-py's own cache (RESP3,
cache_config) in front of cxlredis, never serving a value the server has since
changed, whether another connection wrote it, it expired or it was evicted; and the
server's side of it (tracking-table-max-keys, INFO, CLIENT LIST). The replies and
messages of each command are compared with Redis's in
tests/differential/test_diff_tracking.py.

redis-py refuses to cache in front of a server that reports a version below 7.4
(MIN_ALLOWED_VERSION, a product policy of the client: the protocol it then speaks,
CLIENT TRACKING ON and RESP3 invalidation pushes, is Redis 6's). cxlredis reports
7.0, so these tests lower that gate, as a user of redis-py's cache does.
"""
import time

import pytest
import redis
import redis.connection
from redis.cache import CacheConfig

from conftest import encode_command, parse_reply, raw_connection


@pytest.fixture
def caching_client(monkeypatch):
    monkeypatch.setattr(redis.connection.CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    made = []

    def make(server):
        client = redis.Redis(port=server.port, protocol=3, cache_config=CacheConfig(), socket_timeout=10)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def get_calls(admin):
    return admin.info("commandstats").get("cmdstat_get", {}).get("calls", 0)


def test_a_cached_value_is_dropped_when_another_connection_writes_it(cxl, caching_client):
    cached = caching_client(cxl)
    with redis.Redis(port=cxl.port, socket_timeout=10) as other:
        other.set("csc:k", "v1")
        other.config_resetstat()
        assert cached.get("csc:k") == b"v1"
        assert cached.get("csc:k") == b"v1"
        assert get_calls(other) == 1            # the second GET came from the client's cache
        for value in (b"v2", b"v3"):
            other.set("csc:k", value)
            assert cached.get("csc:k") == value
        other.hset("csc:h", mapping={"f": "1"})
        assert cached.hgetall("csc:h") == {b"f": b"1"}
        other.hincrby("csc:h", "f", 5)
        assert cached.hgetall("csc:h") == {b"f": b"6"}
        other.delete("csc:k")
        assert cached.get("csc:k") is None
        other.flushall()
        assert cached.hgetall("csc:h") == {}


def test_a_cached_value_is_dropped_when_it_expires(cxl, caching_client):
    cached = caching_client(cxl)
    cached.set("csc:e", "soon gone", px=100)
    assert cached.get("csc:e") == b"soon gone"
    time.sleep(0.6)                       # the server's active expiry drops it, and says so
    assert cached.get("csc:e") is None


def test_a_cached_value_is_dropped_when_it_is_evicted(cxl_factory, caching_client):
    server = cxl_factory(arena_size="64mb", maxmemory_policy="allkeys-lru")
    cached = caching_client(server)
    cached.set("csc:hot", b"h" * 1024)
    assert cached.get("csc:hot") == b"h" * 1024
    with redis.Redis(port=server.port, socket_timeout=10) as writer:
        for n in range(1000):
            writer.set(b"fill:%d" % n, b"f" * 256 * 1024)
            if not writer.exists("csc:hot"):
                break
        assert not writer.exists("csc:hot"), "the fill never evicted the cached key"
        assert writer.info("stats")["evicted_keys"] > 0
    assert cached.get("csc:hot") is None


def test_the_table_keeps_at_most_tracking_table_max_keys(cxl_factory):
    server = cxl_factory()
    with raw_connection(server.port) as tracker, redis.Redis(port=server.port, socket_timeout=10) as admin:
        tracker.request("HELLO", "3")
        assert tracker.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
        for n in range(5):
            tracker.request("GET", f"max:{n}")
        assert admin.info()["tracking_total_keys"] == 5
        assert admin.info()["tracking_total_items"] == 5
        admin.config_set("tracking-table-max-keys", 2)
        assert admin.info()["tracking_total_keys"] == 2     # gone after the next command
        forgotten = [parse_reply(tracker.read_reply()) for _ in range(3)]
        assert all(message[0] == b"invalidate" for message in forgotten)
        names = sorted(message[1][0] for message in forgotten)
        assert len(set(names)) == 3 and set(names) <= {b"max:%d" % n for n in range(5)}
        assert tracker.request("PING") == b"+PONG\r\n"


def test_info_and_client_list_show_tracking(cxl_factory):
    server = cxl_factory()
    with raw_connection(server.port) as bcast, raw_connection(server.port) as target, \
            redis.Redis(port=server.port, socket_timeout=10) as admin:
        target_id = int(target.request("CLIENT", "ID")[1:-2])
        assert bcast.request("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "b",
                             "REDIRECT", str(target_id)) == b"+OK\r\n"
        info = admin.info()
        assert (info["tracking_clients"], info["tracking_total_prefixes"]) == (1, 2)
        line = next(c for c in admin.client_list() if c["id"] != str(target_id) and c["flags"] != "N")
        assert (line["flags"], line["redir"]) == ("tB", str(target_id))
        target.close()
        deadline = time.monotonic() + 5
        while any(c["id"] == str(target_id) for c in admin.client_list()) and time.monotonic() < deadline:
            time.sleep(0.02)
        admin.set("a1", "x")                      # the redirect is found gone when it is used
        line = next(c for c in admin.client_list() if c["flags"] != "N")
        assert line["flags"] == "tRB"
        assert bcast.request("CLIENT", "TRACKING", "OFF") == b"+OK\r\n"
        info = admin.info()
        assert (info["tracking_clients"], info["tracking_total_prefixes"]) == (0, 0)


def test_a_vanished_tracking_client_leaves_no_state(cxl_factory):
    server = cxl_factory()
    with redis.Redis(port=server.port, socket_timeout=10) as admin:
        for _ in range(20):
            with raw_connection(server.port) as tracker:
                tracker.request("CLIENT", "TRACKING", "ON", "BCAST")
                tracker.request("HELLO", "3")
        admin.set("after", "1")                     # nobody to tell
        deadline = time.monotonic() + 5
        while admin.info()["tracking_clients"] and time.monotonic() < deadline:
            time.sleep(0.05)
        info = admin.info()
        assert (info["tracking_clients"], info["tracking_total_prefixes"]) == (0, 0)



def test_pipelined_writes_of_other_clients_are_all_told(cxl_factory):
    """Writes another client pipelines (the fast path runs them in C) are told as they
    change tracked keys: one message per change, none for a write that changed nothing
    or a key already told of."""
    server = cxl_factory()
    with raw_connection(server.port) as tracker, raw_connection(server.port) as writer:
        tracker.request("HELLO", "3")
        assert tracker.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
        writes = [("SET", "p:s", "1"), ("INCR", "p:n"), ("HSET", "p:h", "f", "v"), ("EXPIRE", "p:s", "100"),
                  ("DEL", "p:missing"), ("EXPIRE", "p:missing", "100"), ("DEL", "p:n")]
        for _ in range(3):
            tracker.request("MGET", "p:s", "p:n", "p:missing")
            tracker.request("HGET", "p:h", "f")
            writer.send(b"".join(encode_command(*write) for write in writes))
            replies = [writer.read_reply() for _ in writes]
            assert replies == [b"+OK\r\n", b":1\r\n", replies[2], b":1\r\n", b":0\r\n", b":0\r\n", b":1\r\n"]
            tracker.send(encode_command("PING"))
            told = []
            while (reply := tracker.read_reply()) != b"+PONG\r\n":
                told.append(parse_reply(reply))
            assert told == [[b"invalidate", [b"p:s"]], [b"invalidate", [b"p:n"]], [b"invalidate", [b"p:h"]]]
