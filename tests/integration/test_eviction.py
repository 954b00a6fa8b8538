"""maxmemory and every maxmemory-policy, observed through real clients."""
import pytest
import redis

VALUE = 64 * 1024  # 64 KiB values: a 4 MiB maxmemory holds a few dozen of them


def load(c, n, prefix="k", ttl_every=None):
    for i in range(n):
        ex = 1000 + i if ttl_every and i % ttl_every == 0 else None
        c.set(f"{prefix}{i}", bytes([i % 251]) * VALUE, ex=ex)


def test_allkeys_lru_evicts_least_recently_used_exactly(cxl_factory):
    srv = cxl_factory(maxmemory="4mb", **{"maxmemory-policy": "allkeys-lru"})
    c = srv.client()
    load(c, 40)                      # ~2.6 MB: everything fits
    assert c.dbsize() == 40
    assert c.info("stats")["evicted_keys"] == 0
    c.get("k0")                      # k0 becomes the most recently used of the old keys
    load(c, 40, prefix="n")          # another ~2.6 MB: the least recently used must go
    evicted = c.info("stats")["evicted_keys"]
    assert evicted > 0
    assert c.exists("k0") == 1       # touched: survives (exact LRU, not sampled)
    gone = [i for i in range(1, 40) if not c.exists(f"k{i}")]
    assert gone == list(range(1, 1 + len(gone)))   # evicted strictly in insertion order
    assert all(c.exists(f"n{i}") for i in range(40))
    assert c.info("memory")["used_memory"] <= 4 * 1024 * 1024 + (1 << 20)


def test_noeviction_answers_oom(cxl_factory):
    srv = cxl_factory(maxmemory="2mb", **{"maxmemory-policy": "noeviction"})
    c = srv.client()
    with pytest.raises(redis.exceptions.OutOfMemoryError) as err:
        load(c, 100)
    assert str(err.value) == "command not allowed when used memory > 'maxmemory'."
    kept = c.dbsize()
    assert kept > 0
    assert c.get("k0") == bytes([0]) * VALUE  # nothing was evicted
    assert c.info("stats")["evicted_keys"] == 0
    assert c.delete("k0") == 1  # deletes still work under OOM


def test_rename_by_copy_is_never_refused_at_the_memory_limit(cxl_factory):
    """Redis never refuses RENAME or MOVE (they are not denyoom). A new name too long
    for the entry's key area moves the value to a new block; at the limit under
    noeviction that block is taken beyond maxmemory for the moment the move lasts."""
    srv = cxl_factory(maxmemory="2mb", **{"maxmemory-policy": "noeviction"})
    c = srv.client()
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        load(c, 100)
    kept = c.dbsize()
    long_name = b"r" * 3000          # longer than any key area an in-place rename uses
    assert c.rename("k0", long_name)
    assert c.get(long_name) == bytes([0]) * VALUE and c.exists("k0") == 0
    assert c.renamenx("k1", long_name + b"x") is True
    assert c.get(long_name + b"x") == bytes([1]) * VALUE
    assert c.dbsize() == kept and c.info("stats")["evicted_keys"] == 0
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        c.set("more", b"v" * VALUE)      # the limit still holds for new data
    assert c.get(long_name) == bytes([0]) * VALUE


def test_volatile_lru_evicts_only_keys_with_ttl(cxl_factory):
    srv = cxl_factory(maxmemory="4mb", **{"maxmemory-policy": "volatile-lru"})
    c = srv.client()
    load(c, 20, prefix="p")                    # persistent
    load(c, 100, prefix="v", ttl_every=1)      # volatile
    assert all(c.exists(f"p{i}") for i in range(20))
    assert c.info("stats")["evicted_keys"] > 0


def test_volatile_lru_without_volatile_keys_is_oom(cxl_factory):
    srv = cxl_factory(maxmemory="2mb", **{"maxmemory-policy": "volatile-lru"})
    c = srv.client()
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        load(c, 100)


def test_volatile_ttl_evicts_nearest_expiry_first(cxl_factory):
    srv = cxl_factory(maxmemory="4mb", **{"maxmemory-policy": "volatile-ttl", "maxmemory-samples": "64"})
    c = srv.client()
    for i in range(80):  # ~5.2 MB: about a third must go
        c.set(f"t{i}", b"t" * VALUE, ex=100_000 - i * 1000)  # later keys expire sooner
    alive = [i for i in range(80) if c.exists(f"t{i}")]
    gone = [i for i in range(80) if i not in alive]
    assert alive and gone
    assert c.info("stats")["evicted_keys"] == len(gone)
    # Sampled like Redis, so not strictly ordered; but what went had the nearer expiries.
    assert sum(gone) / len(gone) > sum(alive) / len(alive)


@pytest.mark.parametrize("policy", ["allkeys-random", "volatile-random"])
def test_random_policies_evict_and_respect_volatility(cxl_factory, policy):
    srv = cxl_factory(maxmemory="4mb", **{"maxmemory-policy": policy})
    c = srv.client()
    load(c, 10, prefix="p")
    load(c, 100, prefix="v", ttl_every=1)
    assert c.info("stats")["evicted_keys"] > 0
    if policy == "volatile-random":
        assert all(c.exists(f"p{i}") for i in range(10))


def test_config_set_policy_and_maxmemory_at_runtime(cxl_factory):
    srv = cxl_factory(maxmemory="8mb", **{"maxmemory-policy": "noeviction"})
    c = srv.client()
    load(c, 60)
    c.config_set("maxmemory-policy", "allkeys-lru")
    c.config_set("maxmemory", "2mb")
    c.set("trigger", b"x" * VALUE)
    assert c.info("memory")["used_memory"] <= 2 * 1024 * 1024 + 2 * VALUE + (1 << 20)
    assert c.info("memory")["maxmemory_policy"] == "allkeys-lru"


def test_value_larger_than_maxmemory_is_oom_and_loses_nothing(cxl_factory):
    srv = cxl_factory(maxmemory="4mb")
    c = srv.client()
    c.set("small", "kept")
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        c.set("huge", b"h" * (8 << 20))
    assert c.get("small") == b"kept"
    assert c.exists("huge") == 0
    assert c.execute_command("DEBUG", "ARENA-CHECK") == []


def test_ttl_expiry_lazy_and_active(cxl_factory):
    srv = cxl_factory(hz="50")
    c = srv.client()
    for i in range(200):
        c.set(f"e{i}", "v", px=100)
    c.set("lazy", "v", px=100)
    c.execute_command("DEBUG", "SLEEP", "0.2")
    assert c.get("lazy") is None                       # lazy expiry on access
    import time
    deadline = time.monotonic() + 5
    while c.dbsize() and time.monotonic() < deadline:  # active expiry in the background
        time.sleep(0.05)
    assert c.dbsize() == 0
    assert c.info("stats")["expired_keys"] >= 201


def test_lowering_maxmemory_evicts_before_the_next_command(cxl_factory):
    """Redis's performEvictions: any command, even a read, first brings memory back under the limit."""
    srv = cxl_factory(**{"maxmemory-policy": "volatile-lru"})
    c = srv.client()
    c.set("a", b"a" * (1 << 20), ex=3600)
    c.set("b", b"b" * (1 << 20))
    c.config_set("maxmemory", str(c.info("memory")["used_memory"] - (1536 << 10)))
    assert c.exists("a") == 0                 # evicted before EXISTS ran
    assert c.info("stats")["evicted_keys"] == 1
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        c.set("x", "y")                       # only a persistent key is left: OOM, nothing evicted
    assert c.get("b") == b"b" * (1 << 20)     # reads still work
    assert c.info("memory")["maxmemory"] > 0


def test_maxmemory_bounds_used_memory_as_info_reports_it(cxl_factory):
    srv = cxl_factory(**{"maxmemory-policy": "allkeys-lru"})
    c = srv.client()
    c.set("a", b"a" * (1 << 20))
    c.set("b", b"b" * (1 << 20))
    limit = c.info("memory")["used_memory"] + (256 << 10)
    c.config_set("maxmemory", str(limit))
    c.set("c", b"c" * (768 << 10))
    assert c.info("memory")["used_memory"] <= limit
    assert c.info("stats")["evicted_keys"] == 1
