"""Two tenants with identical key names, written concurrently past their quotas: no
cross-tenant read, overwrite or eviction; quotas held within one value's size; the
arena's counters exactly what the writers did."""
import threading

import pytest
import redis

from conftest import raw_connection
from tenant_helpers import USERS, as_user, tenant_info, tenant_server

VALUE = 64 * 1024          # large values: received straight into the tenant's arena slots
PER_WRITER = 40
QUOTA = 1024 * 1024


def value_for(tenant, key):
    return f"{tenant}|{key}|".encode().ljust(VALUE, b".")


@pytest.fixture(scope="module")
def server():
    lines = USERS + [
        f"tenant team-a quota {QUOTA} policy allkeys-lru users alice",
        f"tenant team-b quota {QUOTA} policy allkeys-lru users bob",
        f"tenant team-c quota {QUOTA} policy noeviction users carol",
        "tenant quiet quota 2mb users dave",
        "tenant hog policy allkeys-lru users hog",
    ]
    # maxmemory well below what the hog writes: arena-wide pressure too
    srv = tenant_server(lines, maxmemory="10mb")
    try:
        yield srv.start()
    finally:
        srv.close()


def writer(server, user, tenant, prefix, count, outcome):
    client = as_user(server, user)
    stored = rejected = 0
    for i in range(count):
        key = f"{prefix}:{i}"
        try:
            client.set(key, value_for(tenant, key))
            stored += 1
        except redis.exceptions.OutOfMemoryError:
            rejected += 1
    client.close()
    outcome.append((stored, rejected))


def test_concurrent_writers_over_quota_stay_apart(server):
    admin = server.client()
    dave = as_user(server, "dave")
    quiet = {f"chunk:0:{i}": value_for("quiet", f"chunk:0:{i}") for i in range(10)}
    for key, value in quiet.items():
        dave.set(key, value)

    outcomes = {name: [] for name in ("team-a", "team-b", "team-c", "hog")}
    plan = [("alice", "team-a", "chunk:0", PER_WRITER), ("alice", "team-a", "chunk:1", PER_WRITER),
            ("bob", "team-b", "chunk:0", PER_WRITER), ("bob", "team-b", "chunk:1", PER_WRITER),
            ("carol", "team-c", "chunk:0", PER_WRITER), ("hog", "hog", "chunk:0", 200)]
    threads = [threading.Thread(target=writer, args=(server, user, tenant, prefix, count, outcomes[tenant]))
               for user, tenant, prefix, count in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)

    for user, tenant in (("alice", "team-a"), ("bob", "team-b")):
        client = as_user(server, user)
        keys = sorted(client.keys("*"))
        block = client.memory_usage(keys[0])
        info = tenant_info(admin, tenant)
        # each key read back is the tenant's own value, never the other team's
        for key in keys:
            assert client.get(key) == value_for(tenant, key.decode())
        writes = 2 * PER_WRITER
        assert sum(stored for stored, _ in outcomes[tenant]) == writes
        assert info["keys"] == len(keys) == client.dbsize()
        assert QUOTA - block < info["used_bytes"] <= QUOTA          # within one value's size
        assert info["used_bytes"] == len(keys) * block
        assert info["evicted_keys"] == writes - len(keys)
        assert info["bytes_written"] == writes * VALUE
        assert info["rejected_writes"] == 0
        client.close()

    carol = as_user(server, "carol")
    [(stored, rejected)] = outcomes["team-c"]
    info = tenant_info(admin, "team-c")
    assert rejected > 0 and stored + rejected == PER_WRITER
    assert info["keys"] == stored and info["rejected_writes"] == rejected and info["evicted_keys"] == 0
    assert info["used_bytes"] <= QUOTA
    assert all(carol.get(f"chunk:0:{i}") == value_for("team-c", f"chunk:0:{i}") for i in range(stored))

    # The hog's pressure on the whole arena took from the hog, not from tenants within quota.
    assert tenant_info(admin, "hog")["evicted_keys"] > 0
    info = tenant_info(admin, "quiet")
    assert info["keys"] == len(quiet) and info["evicted_keys"] == 0
    assert all(dave.get(key) == value for key, value in quiet.items())
    # and the administrator's default namespace holds none of it
    assert admin.dbsize() == 0 and admin.get("chunk:0:0") is None
    for client in (admin, dave, carol):
        client.close()


def test_identical_keys_in_every_command(server):
    alice, bob, admin = as_user(server, "alice"), as_user(server, "bob"), server.client()
    alice.flushall()
    bob.flushall()
    alice.set("k", "a")
    bob.set("k", "b")
    admin.set("k", "admin")
    alice.hset("h", "f", "a")
    assert (alice.get("k"), bob.get("k"), admin.get("k")) == (b"a", b"b", b"admin")
    assert bob.hget("h", "f") is None and bob.exists("h") == 0
    assert bob.delete("h") == 0 and alice.hget("h", "f") == b"a"
    bob.rename("k", "k2")
    assert alice.get("k") == b"a" and alice.get("k2") is None
    assert alice.incr("n") == 1 and bob.incr("n") == 1
    with pytest.raises(redis.exceptions.ResponseError, match="SWAPDB is not available"):
        alice.swapdb(0, 1)
    # a tenant has every db of its own
    with raw_connection(server.port) as conn:
        assert conn.request("AUTH", "alice", "pw") == b"+OK\r\n"
        assert conn.request("SELECT", "3") == b"+OK\r\n"
        assert conn.request("SET", "k", "db3") == b"+OK\r\n"
        assert conn.request("DBSIZE") == b":1\r\n"
    assert alice.get("k") == b"a" and as_user(server, "alice", db=3).get("k") == b"db3"
    assert server.client(db=3).get("k") is None
    admin.delete("k")
    for client in (alice, bob, admin):
        client.close()
