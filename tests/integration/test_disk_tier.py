"""The disk tier under the arena (cxlredis/disktier.py): what the arena evicts is written
to disk and brought back by the next command that names the key, so with a budget big
enough nothing is lost; and a deleted, rewritten or expired value never comes back, a
torn or damaged record is never served, and a restart finds the tier as it was."""
import os
import random
import time
import urllib.request

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from conftest import ServerStartError, encode_command, free_port, raw_connection, server_under_test

KB, MB = 1 << 10, 1 << 20
ALICE, BOB = {"username": "alice", "password": "pa"}, {"username": "bob", "password": "pb"}
SIZE = 64 * KB
FILLER_DB = 2


def tiered(cxl_factory, conf=None, **options):
    settings = {"maxmemory": "4mb", "maxmemory_policy": "allkeys-lru", "disk_tier_dir": "tier",
                "disk_tier_size": "64mb"}
    settings.update(options)
    return cxl_factory(conf, **settings)


def value(name, size=SIZE):
    """size bytes that tell whose value they are."""
    stamp = name.encode() + b"|"
    return (stamp * (size // len(stamp) + 1))[:size]


def push_out(server, nbytes=8 * MB, **user):
    """Write nbytes of other keys (in a db of their own; as `user`, username and password,
    if given), so every earlier key (of that user's tenant) is evicted from the 4 MiB arena
    and spilled."""
    filler = server.client(db=FILLER_DB, **user)
    pipe = filler.pipeline(transaction=False)
    for _ in range(nbytes // SIZE):
        pipe.set(f"filler:{random.getrandbits(64)}", b"f" * SIZE)
    pipe.execute()
    filler.close()


def squeeze(client, maxmemory):
    """Evict every key (each is spilled): a maxmemory of 1 byte evicts everything before
    the next command, which sets it back."""
    client.config_set("maxmemory", 1)
    client.config_set("maxmemory", maxmemory)


def written(client):
    """Wait until the tier's writer thread has written every record queued (what a kill -9
    would otherwise lose: a cache miss, never a wrong value)."""
    deadline = time.time() + 10
    while tier(client)["disk_tier_queued_bytes"] and time.time() < deadline:
        time.sleep(0.01)
    assert tier(client)["disk_tier_queued_bytes"] == 0


def on_disk_only(client, key):
    """key is not in the arena (SCAN sees only the arena, and names no key to bring back)."""
    return key.encode() not in set(client.scan_iter(match=key))


def tier(client):
    return client.info("disktier")


def test_evicted_values_come_back_byte_exact(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    values = {f"k{i}": value(f"k{i}") for i in range(200)}
    for key, data in values.items():
        r.set(key, data)
    assert on_disk_only(r, "k0")
    info = tier(r)
    assert info["disk_tier_enabled"] == 1 and info["disk_tier_keys"] >= 130
    assert info["disk_tier_written"] == info["disk_tier_keys"]
    assert info["disk_tier_written_bytes"] == info["disk_tier_bytes"] == SIZE * info["disk_tier_keys"]
    for key, data in values.items():
        assert r.get(key) == data
    after = tier(r)
    assert after["disk_tier_hits"] >= info["disk_tier_keys"] - 70
    assert after["disk_tier_hit_bytes"] == SIZE * after["disk_tier_hits"]
    assert after["disk_tier_reads"] >= after["disk_tier_hits"] and after["disk_tier_bad_records"] == 0
    # MGET, EXISTS, STRLEN, GETRANGE, CXL PREFIX of keys only on disk
    push_out(server)
    assert r.mget("k1", "nope", "k2") == [values["k1"], None, values["k2"]]
    push_out(server)
    assert r.exists("k3", "k4", "nope") == 2
    push_out(server)
    assert r.strlen("k5") == SIZE and r.getrange("k6", 0, 1) == b"k6"
    push_out(server)
    assert r.execute_command("CXL", "PREFIX", "k7", "k8", "nope", "k9") == 2
    push_out(server)
    assert r.execute_command("CXL", "PREFIXGET", "k10", "k11") == [values["k10"], values["k11"]]


def test_a_key_lives_in_one_tier_at_a_time(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    r.set("k", value("k"))
    push_out(server)
    assert on_disk_only(r, "k")
    before = tier(r)
    assert r.get("k") == value("k")
    assert not on_disk_only(r, "k")
    after = tier(r)
    # its copy was dropped as it came back (and what it evicted to make room was written)
    assert after["disk_tier_keys"] == before["disk_tier_keys"] - 1 + after["disk_tier_written"] - \
        before["disk_tier_written"]
    # evicted again, it is written again: one copy, the newest
    push_out(server)
    assert on_disk_only(r, "k")
    assert r.get("k") == value("k")


def test_fast_path_commands_on_keys_only_on_disk(cxl_factory):
    """GET, SET, EXISTS, DEL, INCR, EXPIRE, TTL, MGET, HGET and HSET of small values run in
    C; a key that may be on disk goes to the general path, which brings it back."""
    server = tiered(cxl_factory)
    r = server.client()
    r.set("small", b"x" * 10)
    r.set("counter", 41)
    r.hset("hash", mapping={"a": "1", "b": "2"})
    r.set("gone", b"y")
    r.set("ttl", b"z", ex=1000)
    push_out(server)
    for key in ("small", "counter", "hash", "gone", "ttl"):
        assert on_disk_only(r, key)
    assert r.get("small") == b"x" * 10
    assert r.incr("counter") == 42
    assert r.hget("hash", "b") == b"2" and r.hset("hash", "c", "3") == 1
    assert r.delete("gone") == 1 and r.get("gone") is None
    assert 990 < r.ttl("ttl") <= 1000
    push_out(server)
    assert r.mget("small", "counter") == [b"x" * 10, b"42"]
    push_out(server)
    assert r.hgetall("hash") == {b"a": b"1", b"b": b"2", b"c": b"3"}
    push_out(server)
    assert r.exists("gone") == 0 and r.get("gone") is None


@pytest.mark.parametrize("op, expected", [
    (lambda r: r.delete("k"), None),
    (lambda r: r.unlink("k"), None),
    (lambda r: r.getdel("k"), None),
    (lambda r: r.set("k", b"new"), b"new"),                    # the C fast path's SET
    (lambda r: r.set("k", value("new")), value("new")),        # a value received into the arena
    (lambda r: r.append("k", b"+"), value("k") + b"+"),
    (lambda r: r.setrange("k", 0, b"XY"), b"XY" + value("k")[2:]),
    (lambda r: r.rename("k", "other"), None),
    (lambda r: r.rename("other", "k"), b"other"),              # onto a key only on disk
    (lambda r: r.copy("other", "k", replace=True), b"other"),
    (lambda r: r.move("k", 1), None),
    (lambda r: r.restore("k", 0, r.dump("other"), replace=True), b"other"),
    (lambda r: r.mset({"k": b"m"}), b"m"),
    (lambda r: r.pexpire("k", 1) and time.sleep(0.05), None),
    (lambda r: r.flushdb(), None),
    (lambda r: r.flushall(), None),
    (lambda r: r.eval("return redis.call('DEL', KEYS[1])", 1, "k"), None),
    (lambda r: r.eval("return redis.call('DEL', 'k')", 0), None),     # a key it did not declare
    (lambda r: r.pipeline(transaction=True).delete("k").execute(), None),
], ids=["DEL", "UNLINK", "GETDEL", "SET-small", "SET-large", "APPEND", "SETRANGE", "RENAME-from",
        "RENAME-onto", "COPY-onto", "MOVE", "RESTORE", "MSET", "PEXPIRE", "FLUSHDB", "FLUSHALL",
        "EVAL", "EVAL-undeclared", "MULTI"])
def test_what_a_command_did_to_a_key_on_disk_holds(cxl_factory, op, expected):
    """A key only on disk, then a command that deletes or rewrites it: whatever the tiers
    do next (the new value evicted, a restart), the old value never comes back."""
    server = tiered(cxl_factory)
    r = server.client()
    r.set("k", value("k"))
    r.set("other", b"other")
    push_out(server)
    assert on_disk_only(r, "k") and on_disk_only(r, "other")
    op(r)
    assert r.get("k") == expected
    push_out(server)
    assert r.get("k") == expected
    written(r)
    server.kill9()
    server.start()
    r = server.client()
    assert r.get("k") == expected


def test_move_onto_a_key_only_on_disk_of_the_other_db(cxl_factory):
    """MOVE names the key of the source db only; the destination's copy on disk must not
    outlive the key MOVE put there."""
    server = tiered(cxl_factory)
    r, r1 = server.client(), server.client(db=1)
    r1.set("k", value("old"))
    push_out(server)
    r.set("k", b"moved")
    assert r.move("k", 1) in (True, False)
    got = r1.get("k")
    assert got in (b"moved", value("old"))      # Redis refuses the MOVE: the key exists there
    r1.delete("k")
    push_out(server)
    assert r1.get("k") is None


def test_a_write_that_cannot_bring_a_key_back_drops_its_copy(cxl_factory):
    """No room to bring a key back: a read misses, and a write runs as on an evicted key,
    its copy dropped so the old value never returns."""
    server = tiered(cxl_factory, maxmemory="8mb")
    r = server.client()
    r.set("big", value("big", 3 * MB))
    push_out(server, 16 * MB)
    assert on_disk_only(r, "big")
    r.config_set("maxmemory", "2mb")
    assert r.get("big") is None         # a miss: it does not fit now
    assert r.delete("big") == 0
    r.config_set("maxmemory", "8mb")
    assert r.get("big") is None


def test_replies_keep_their_order_across_reads_from_disk(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    for i in range(40):
        r.set(f"k{i}", value(f"k{i}"))
    push_out(server)
    pipe = r.pipeline(transaction=False)
    for i in range(40):
        pipe.get(f"k{i}")
        pipe.echo(f"after {i}")
        pipe.set(f"s{i}", i)
        pipe.get(f"s{i}")
    got = pipe.execute()
    for i in range(40):
        assert got[4 * i:4 * i + 4] == [value(f"k{i}"), f"after {i}".encode(), True, str(i).encode()]


def test_transactions_and_scripts_see_keys_only_on_disk(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    for i in range(8):
        r.set(f"k{i}", value(f"k{i}"))
    r.hset("h", "f", "v")
    push_out(server)
    pipe = r.pipeline(transaction=True)
    pipe.get("k0").strlen("k1").exists("k2", "k3").hget("h", "f")
    assert pipe.execute() == [value("k0"), SIZE, 2, b"v"]
    assert r.eval("return {redis.call('GET', KEYS[1]), redis.call('STRLEN', KEYS[2])}", 2, "k4", "k5") == \
        [value("k4"), SIZE]
    with r.pipeline(transaction=True) as pipe:
        pipe.watch("k6")
        pipe.multi()
        pipe.get("k6")
        assert pipe.execute() == [value("k6")]


def test_restart_finds_the_tier_as_it_was(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    values = {f"k{i}": value(f"k{i}") for i in range(120)}
    for key, data in values.items():
        r.set(key, data, px=600_000 if key == "k1" else None)
    r.delete("k0")                  # on disk, then deleted: stays deleted
    held = tier(r)["disk_tier_keys"]
    server.restart()                # clean
    r = server.client()
    assert tier(r)["disk_tier_keys"] == held
    server.kill9()
    server.start()
    r = server.client()
    assert tier(r)["disk_tier_keys"] == held
    assert r.get("k0") is None
    assert 590_000 < r.pttl("k1") <= 600_000
    for key, data in values.items():
        if key != "k0":
            assert r.get(key) == data


def segments(server):
    path = os.path.join(server.dir, "tier")
    return sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".cxd"))


def killed_with_keys_on_disk(cxl_factory, names):
    """A server whose keys `names` were written to its tier, then killed -9: (the server,
    its first segment's path)."""
    server = tiered(cxl_factory)
    r = server.client()
    for name in names:
        r.set(name, value(name))
    push_out(server)
    written(r)
    server.kill9()
    return server, segments(server)[0]


def test_a_damaged_record_is_never_served(cxl_factory):
    server, first = killed_with_keys_on_disk(cxl_factory, ["k"])
    with open(first, "r+b") as f:
        data = f.read()
        at = data.index(value("k")[:64]) + 1000      # one byte of its value
        f.seek(at)
        f.write(bytes([data[at] ^ 0x40]))
    server.start()
    r = server.client()
    assert r.get("k") is None
    assert tier(r)["disk_tier_bad_records"] == 1
    assert r.set("k", b"again") and r.get("k") == b"again"


def test_a_record_cut_short_is_never_served(cxl_factory):
    """A kill -9 in the middle of a write: the segment's walk stops there after a restart;
    the records before it are served."""
    server, first = killed_with_keys_on_disk(cxl_factory, ["k0", "k1", "k2"])
    with open(first, "r+b") as f:
        data = f.read()
        last = data.index(value("k2")[:64])
        f.truncate(last + SIZE // 2)
    server.start()
    r = server.client()
    assert r.get("k0") == value("k0") and r.get("k1") == value("k1")
    assert r.get("k2") is None


def test_the_budget_keeps_the_newest(cxl_factory):
    server = tiered(cxl_factory, disk_tier_size="8mb")
    r = server.client()
    for i in range(400):
        r.set(f"k{i}", value(f"k{i}"))
    info = tier(r)
    assert info["disk_tier_file_bytes"] <= 8 * MB
    assert info["disk_tier_dropped_for_budget"] > 0
    assert sum(os.path.getsize(p) for p in segments(server)) <= 8 * MB + MB     # and the spare
    assert r.get("k0") is None
    assert r.get("k330") == value("k330")


@pytest.mark.parametrize("size", [8 * KB, 64 * KB], ids=["copied", "received-in-place"])
def test_a_burst_of_writes_between_ticks_spills_every_value_it_evicts(cxl_factory, size):
    """Writes the fast path runs (small SETs, and SETs of values received into their block)
    settle the tier as the general path does, so the segments move on between the cron's
    ticks: 16 MiB of SETs, three times a segment and its spare, in a burst, and every
    value they evict is on disk and comes back."""
    server = tiered(cxl_factory, disk_tier_size="16mb", hz="1")
    r = server.client()
    count = 16 * MB // size
    for i in range(count):
        r.set(f"k{i}", value(f"k{i}", size))
    info = tier(r)
    assert info["disk_tier_not_written"] == 0
    assert info["disk_tier_keys"] >= count // 2
    for i in range(0, count, count // 16):
        assert r.get(f"k{i}") == value(f"k{i}", size)


def test_a_value_larger_than_a_segment_has_one_of_its_own(cxl_factory):
    """An 8 MiB budget has 1 MiB segments; values of up to a quarter of it are written."""
    server = tiered(cxl_factory, disk_tier_size="8mb")
    r = server.client()
    r.set("big", value("big", 1536 * KB))
    r.set("small", value("small"))
    r.set("too-big", value("too-big", 2 * MB + 1))
    push_out(server)
    info = tier(r)
    assert info["disk_tier_not_written"] >= 1          # too-big
    assert r.get("big") == value("big", 1536 * KB)
    assert r.get("small") == value("small")
    assert r.get("too-big") is None


def test_expired_copies_are_never_served_and_go(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    r.set("soon", value("soon"), px=800)
    r.set("later", value("later"), px=60_000)
    push_out(server)
    held = tier(r)["disk_tier_keys"]
    time.sleep(1.0)
    deadline = time.time() + 5
    while tier(r)["disk_tier_keys"] == held and time.time() < deadline:
        time.sleep(0.05)
    assert tier(r)["disk_tier_keys"] == held - 1          # the cron dropped it
    assert r.get("soon") is None
    assert r.get("later") == value("later")


def collections_of(client):
    """Everything the collections written by fill_collections hold, as their commands show it."""
    return {
        "list": client.lrange("list", 0, -1), "small-list": client.lrange("small-list", 0, -1),
        "intset": client.smembers("intset"), "set": client.sscan("set", 0, count=1000)[1],
        "zset": client.zrange("zset", 0, -1, withscores=True),
        "small-zset": client.zrange("small-zset", 0, -1, withscores=True),
        "encodings": [client.object("encoding", key) for key in ("list", "intset", "set", "zset", "small-zset")],
        "ttl": client.pttl("zset") > 500_000, "types": [client.type(key) for key in ("list", "set", "zset")],
    }


def fill_collections(client):
    """Lists, sets and sorted sets of every shape the trees have: long elements kept in
    blobs of their own, each encoding, two trees, a TTL."""
    client.rpush("list", *[value(f"e{i}", 100 + 61 * i) for i in range(200)])
    client.rpush("small-list", b"", b"a", b"\x00\xff")
    client.sadd("intset", *range(-5, 60, 3))
    client.sadd("set", *[f"member-{i}".encode() * (1 + i % 40) for i in range(300)])
    client.zadd("zset", {f"z{i}".encode() * (1 + i % 30): i * 0.25 - 7 for i in range(400)})
    client.zadd("small-zset", {b"a": 1, b"b": float("inf"), b"c": -0.5})
    client.pexpire("zset", 600_000)


def test_collections_come_back_whole(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    fill_collections(r)
    before = collections_of(r)
    written_before = tier(r)["disk_tier_written"]
    squeeze(r, "4mb")
    assert all(on_disk_only(r, key) for key in ("list", "small-list", "intset", "set", "zset", "small-zset"))
    assert tier(r)["disk_tier_written"] - written_before == 6
    assert collections_of(r) == before
    assert tier(r)["disk_tier_bad_records"] == 0
    # and from a warm restart after kill -9
    squeeze(r, "4mb")
    written(r)
    server.kill9()
    server.start()
    r = server.client()
    assert collections_of(r) == before
    # a write to a collection only on disk changes what came back
    squeeze(r, "4mb")
    assert r.lpush("list", b"new") == 201 and r.lrange("list", 0, 1) == [b"new", before["list"][0]]
    assert r.zincrby("small-zset", 2, "c") == 1.5
    squeeze(r, "4mb")
    assert r.lindex("list", 0) == b"new" and r.zscore("small-zset", "c") == 1.5


def test_tenants_copies_stay_theirs(cxl_factory, tmp_path):
    conf = tmp_path / "tenants.conf"
    conf.write_text("user alice on >pa ~* +@all\nuser bob on >pb ~* +@all\n"
                    "tenant team-a users alice\ntenant team-b users bob\n")
    server = tiered(cxl_factory, conf=str(conf))
    a = server.client(username="alice", password="pa")
    b = server.client(username="bob", password="pb")
    a.set("k", value("a"))
    b.set("k", value("b"))
    for user in ALICE, BOB:
        push_out(server, **user)
    assert on_disk_only(a, "k") and on_disk_only(b, "k")
    assert a.get("k") == value("a") and b.get("k") == value("b")
    for user in ALICE, BOB:
        push_out(server, **user)
    a.flushall()
    assert a.get("k") is None
    assert b.get("k") == value("b")


def tenant_info(client, name):
    flat = client.execute_command("TENANT", "INFO", name)
    return dict(zip(flat[::2], flat[1::2]))


def test_a_tenant_may_keep_out_of_the_tier(cxl_factory, tmp_path):
    conf = tmp_path / "tenants.conf"
    conf.write_text("user alice on >pa ~* +@all\nuser bob on >pb ~* +@all\n"
                    "tenant team-a users alice\ntenant team-b disk no users bob\n")
    server = tiered(cxl_factory, conf=str(conf), tenants_file="")
    admin = server.client()
    a = server.client(username="alice", password="pa")
    b = server.client(username="bob", password="pb")
    assert tenant_info(admin, "team-b")[b"disk_tier"] == b"no"
    a.set("k", value("a"))
    b.set("k", value("b"))
    for user in ALICE, BOB:
        push_out(server, **user)
    assert b.get("k") is None                  # evicted, and not kept
    assert a.get("k") == value("a")
    assert tenant_info(admin, "team-a")[b"disk_tier"] == b"yes"
    assert tenant_info(admin, "team-a")[b"disk_tier_hits"] == 1
    assert tenant_info(admin, "team-b")[b"disk_tier_hits"] == 0
    admin.execute_command("TENANT", "SET", "team-b", "DISK", "yes")
    b.set("k", value("b"))
    push_out(server, **BOB)
    assert b.get("k") == value("b")
    admin.execute_command("TENANT", "SET", "team-a", "DISK", "no")
    admin.config_rewrite()
    assert "tenant team-a disk no users alice" in conf.read_text()
    server.restart()
    admin = server.client()
    assert tenant_info(admin, "team-a")[b"disk_tier"] == b"no"
    assert tenant_info(admin, "team-b")[b"disk_tier"] == b"yes"


def test_a_new_arena_starts_the_tier_empty(cxl_factory):
    server = tiered(cxl_factory)
    r = server.client()
    r.set("k", value("k"))
    push_out(server)
    server.restart(arena_reset="yes")
    r = server.client()
    assert tier(r)["disk_tier_keys"] == 0
    assert r.get("k") is None


def test_a_full_file_system_costs_misses_never_wrong_values(cxl_factory, tmpfs):
    """The tier's file system is smaller than its budget: writes that fail are counted and
    logged, their keys read back as misses, the rest as written, and the server goes on."""
    small = tmpfs("2m")
    server = tiered(cxl_factory, disk_tier_dir=str(small))
    r = server.client()
    names = [f"k{i}" for i in range(120)]
    for name in names:
        r.set(name, value(name))
    written(r)
    info = tier(r)
    assert info["disk_tier_write_errors"] > 0
    served = [r.get(name) for name in names]
    assert all(got in (None, value(name)) for name, got in zip(names, served))
    assert any(got is not None for got in served[:30])       # what fitted came back
    assert r.ping()
    deadline = time.time() + 5
    while "writes failed (the last: No space left on device)" not in server.log and time.time() < deadline:
        time.sleep(0.05)
    assert "writes failed (the last: No space left on device)" in server.log


def test_a_tier_is_one_servers_and_one_arenas(cxl_factory, tmp_path):
    """Two servers may not share a tier directory, and a tier's records are of the arena
    that wrote them: over another arena (or its own formatted anew) it starts empty."""
    shared = str(tmp_path / "tier")
    first = tiered(cxl_factory, disk_tier_dir=shared)
    r = first.client()
    r.set("k", value("k"))
    push_out(first)
    assert tier(r)["disk_tier_keys"] > 0
    second = server_under_test(**{"maxmemory": "4mb", "disk-tier-dir": shared})
    try:
        with pytest.raises(ServerStartError, match=f"Cannot open the disk tier {shared}: in use by another process"):
            second.start()
        first.stop()
        second.start()      # its own arena, the same directory: none of the first's records
        r2 = second.client()
        assert tier(r2)["disk_tier_keys"] == 0 and r2.get("k") is None
    finally:
        second.close()


def test_a_forked_debugging_session_leaves_the_tier_alone(cxl_factory):
    """SCRIPT DEBUG YES forks a child with a private copy of the arena: what its script
    does (FLUSHALL, writes that evict) neither writes to the tier nor drops its copies."""
    server = tiered(cxl_factory)
    r = server.client()
    r.set("k", value("k"))
    push_out(server)
    written(r)
    before = tier(r)
    with raw_connection(server.port) as conn:
        assert conn.request("SCRIPT", "DEBUG", "YES") == b"+OK\r\n"
        script = ("redis.call('FLUSHALL') for i = 1, 160 do redis.call('SET', 'x' .. i, "
                  "string.rep('y', 65536)) end return 1")
        conn.send(encode_command("EVAL", script, "0"))
        conn.read_reply()                                   # the debugger's first frame
        conn.send(encode_command("CONTINUE"))
        conn.read_until_close()
    assert tier(r)["disk_tier_written"] == before["disk_tier_written"]
    server.restart()                                         # the index is rebuilt from the files
    r = server.client()
    assert r.get("k") == value("k")


def test_settings_and_metrics(cxl_factory):
    port = free_port()
    server = tiered(cxl_factory, metrics_port=port)
    r = server.client()
    assert r.config_get("disk-tier-*") == {"disk-tier-dir": "tier", "disk-tier-size": str(64 * MB),
                                           "disk-tier-write-buffer": str(256 * MB), "disk-tier-promote": "yes"}
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        r.config_set("disk-tier-size", "1gb")
    r.set("k", value("k"))
    push_out(server)
    r.get("k")
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    samples = {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples}
    assert samples["cxlredis_disk_tier_hits_total"] >= 1
    assert samples["cxlredis_disk_tier_written_total"] >= 1
    assert samples["cxlredis_disk_tier_budget"] == 64 * MB
    assert tier(server.client())["disk_tier_hits"] == samples["cxlredis_disk_tier_hits_total"]


def test_without_promotion_a_value_read_stays_on_disk(cxl_factory):
    """disk-tier-promote no: a value read from disk leaves the arena after the command,
    keeping its copy; a command that changes the key keeps the new value in the arena and
    drops the copy; WATCH keeps what it brought back."""
    server = tiered(cxl_factory)
    r = server.client()
    r.config_set("disk-tier-promote", "no")
    for key in ("read", "changed", "deleted", "renamed", "watched", "expired"):
        r.set(key, value(key))
    push_out(server)
    assert r.get("read") == value("read")
    assert on_disk_only(r, "read")
    assert tier(r)["disk_tier_put_back"] == 1
    assert r.get("read") == value("read") and r.strlen("read") == SIZE      # its copy was kept
    assert r.append("changed", b"+") == SIZE + 1
    assert r.delete("deleted") == 1
    assert r.rename("renamed", "moved") is True
    assert r.pexpire("expired", 60_000) is True
    with r.pipeline() as pipe:
        pipe.watch("watched")
        assert not on_disk_only(r, "watched")       # WATCH keeps it
    push_out(server)
    assert r.get("changed") == value("changed") + b"+"
    assert r.get("deleted") is None and r.get("renamed") is None
    assert r.get("moved") == value("renamed")
    assert 0 < r.pttl("expired") <= 60_000
    # read three times; changed, moved and expired once each since they were written again
    assert tier(r)["disk_tier_put_back"] == 3 + 3
    written(r)
    server.kill9()
    server.start()
    r = server.client()
    assert r.get("read") == value("read")
    assert r.get("changed") == value("changed") + b"+"
    assert r.get("deleted") is None and r.get("renamed") is None


def test_without_a_tier_info_says_so(cxl_factory):
    r = cxl_factory().client()
    assert r.info("disktier") == {"disk_tier_enabled": 0}
    assert r.config_get("disk-tier-dir") == {"disk-tier-dir": ""}


# --- differential: with a budget big enough, nothing is lost --------------------

KEYS = [f"k{i}" for i in range(24)]
COUNTERS = [f"c{i}" for i in range(4)]


def random_step(rng):
    key, other = rng.choice(KEYS), rng.choice(KEYS)
    size = rng.choice((40 * KB, 64 * KB, 100 * KB, 12))
    data = rng.randbytes(size)
    return rng.choice([
        ("GET", key), ("GET", key), ("SET", key, data), ("SET", key, data),
        ("DEL", key, other), ("EXISTS", key, other, "nope"), ("APPEND", key, rng.randbytes(10)),
        ("STRLEN", key), ("GETRANGE", key, 5, 20), ("SETRANGE", key, rng.randrange(50), b"xyz"),
        ("INCR", rng.choice(COUNTERS)), ("INCRBY", rng.choice(COUNTERS), rng.randrange(100)),
        ("MGET", key, other, rng.choice(COUNTERS)), ("MSET", key, data[:100], other, b"o"),
        ("RENAME", key, other), ("COPY", key, other, "REPLACE"), ("GETDEL", key), ("TYPE", key),
        ("SETNX", key, b"nx"), ("GETSET", key, b"gs"), ("EXPIRE", key, 10_000), ("PERSIST", key),
        ("HSET", f"h{key}", "f", data[:50]), ("HGET", f"h{key}", "f"), ("UNLINK", key),
        ("RPUSH", f"l{key}", data[:rng.choice((5, 500))], b"x"), ("LPOP", f"l{key}"),
        ("LRANGE", f"l{key}", 0, -1), ("LINSERT", f"l{key}", "BEFORE", b"x", data[:300]),
        ("SADD", f"s{key}", rng.randrange(20), data[:rng.choice((7, 700))]), ("SREM", f"s{key}", rng.randrange(20)),
        ("SCARD", f"s{key}"), ("SISMEMBER", f"s{key}", rng.randrange(20)),
        ("ZADD", f"z{key}", rng.randrange(-50, 50), data[:rng.choice((3, 300))]), ("ZRANGE", f"z{key}", 0, -1, "WITHSCORES"),
        ("ZINCRBY", f"z{key}", 1.5, data[:3]), ("ZREM", f"z{key}", data[:3]), ("RENAME", f"l{key}", f"l{other}"),
    ])


@pytest.mark.parametrize("seed, promote", [(1, "yes"), (2, "yes"), (7, "no"), (8, "no")])
def test_differential_against_redis_with_the_tier_holding_everything(cxl_factory, redis_oracle, seed, promote):
    server = tiered(cxl_factory, maxmemory="2mb", disk_tier_promote=promote)
    redis_oracle.client().flushall()
    ours, theirs = server.client(), redis_oracle.client()
    rng = random.Random(seed)
    for step in range(600):
        command = random_step(rng)
        try:
            want = theirs.execute_command(*command)
        except redis.ResponseError as e:
            want = e.args
        try:
            got = ours.execute_command(*command)
        except redis.ResponseError as e:
            got = e.args
        assert got == want, (step, command[:2])
        if step % 7 == 0:
            squeeze(ours, "2mb")
    for key in KEYS + COUNTERS:
        assert ours.get(key) == theirs.get(key)
    for key in KEYS:
        for read in (("LRANGE", f"l{key}", 0, -1), ("ZRANGE", f"z{key}", 0, -1, "WITHSCORES"), ("SCARD", f"s{key}"),
                     ("SMISMEMBER", f"s{key}", *range(20))):
            assert ours.execute_command(*read) == theirs.execute_command(*read), read
    assert tier(ours)["disk_tier_hits"] > 100
