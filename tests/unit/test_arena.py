"""Unit tests for the arena (cxlredis._store): API, semantics, recovery, allocator bounds."""
import os
import random
import shutil
import socket
import subprocess
import time

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from cxlredis._store import (
    TYPE_HASH,
    TYPE_STRING,
    Arena,
    ArenaError,
    OutOfMemory,
    glob_match,
    now_ms,
)

from arena_files import crash_copy, peek, poke

MiB = 1 << 20
# superblock field offsets (layout version 3)
SB_VERSION = 8
SB_INDEX_BUCKETS = 32
SB_CLEAN = 128
SB_ENTRIES = 200
ENTRY_TTL_PREV = 96             # cx_entry.ttl_prev: the expiry wheel's back link


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "test.arena")


@pytest.fixture
def arena(path):
    a = Arena(path, 8 * MiB)
    yield a
    a.close()


# ---------------------------------------------------------------- basics

def test_new_arena(arena, path):
    assert arena.path == path
    assert arena.size == 8 * MiB
    assert arena.databases == 16
    assert arena.recovery == "new"
    assert arena.dropped_entries == 0
    assert os.stat(path).st_mode & 0o777 == 0o600
    s = arena.stats()
    assert s["entries"] == 0 and s["heap_used"] == 0
    assert s["free_bytes"] == s["heap_size"] == s["largest_free"]
    assert 0 < s["used_memory"] < 256 * 1024         # superblock + index only
    assert s["policy"] == "noeviction" and s["maxmemory"] == 0
    assert arena.check() == []


def test_set_lookup_and_reads(arena):
    before = now_ms()
    off = arena.set(0, b"greeting", b"hello world")
    assert off and off % 64 == 0
    assert arena.lookup(0, b"greeting") == off
    assert arena.value_len(off) == 11
    v = arena.view(off)
    assert v.readonly and bytes(v) == b"hello world"
    assert arena.value_bytes(off) == b"hello world"
    assert arena.entry_type(off) == TYPE_STRING
    assert arena.expire_at(off) == -1
    assert 0 <= arena.idle_ms(off) < 1000
    assert arena.generation(off) == arena.key_generation(0, b"greeting") > 0
    assert arena.key_generation(0, b"missing") == 0
    assert arena.lookup(1, b"greeting") == 0          # dbs are separate
    # any buffer works for keys and values
    off2 = arena.set(0, bytearray(b"ba"), memoryview(b"xyz"), type=TYPE_HASH)
    assert arena.lookup(0, memoryview(b"ba")) == off2
    assert arena.entry_type(off2) == TYPE_HASH
    assert arena.value_bytes(off2) == b"xyz"
    assert abs(now_ms() - before) < 5000
    # the value starts 64-byte aligned inside the mapping
    assert arena.check() == []


def test_empty_key_and_value(arena):
    off = arena.set(0, b"", b"")
    assert arena.lookup(0, b"") == off
    assert arena.value_bytes(off) == b""
    assert bytes(arena.view(off)) == b""


def test_hit_miss_stats(arena):
    arena.set(0, b"k", b"v")
    arena.lookup(0, b"k")
    arena.lookup(0, b"nope")
    arena.lookup(0, b"nope", stats=False)
    arena.lookup(0, b"k", touch=False, stats=False)
    s = arena.stats()
    assert (s["keyspace_hits"], s["keyspace_misses"]) == (1, 1)
    arena.reset_stats()
    s = arena.stats()
    assert (s["keyspace_hits"], s["keyspace_misses"], s["expired_keys"], s["evicted_keys"]) == (0, 0, 0, 0)


def test_bad_offsets_and_db_numbers(arena):
    off = arena.set(0, b"k", b"v" * 100)
    for bad in (0, 1, off + 64, off + 8, arena.size * 2):
        with pytest.raises(ValueError):
            arena.view(bad)
    with pytest.raises(ValueError):
        arena.unpin(off)                   # not pinned
    with pytest.raises(ValueError):
        arena.slot(off)                    # live, not reserved
    stale = arena.find(0, b"k")
    arena.delete(0, b"k")
    with pytest.raises(ValueError):
        arena.set_expire(stale, 5)         # an Entry outliving its entry
    with pytest.raises(ValueError):
        stale.view()
    off = arena.set(0, b"k", b"v" * 100)
    for db in (-1, 16):
        with pytest.raises(ValueError):
            arena.lookup(db, b"k")
    with pytest.raises(TypeError):
        arena.set(0, "text key", b"v")
    with pytest.raises(ValueError):
        Arena(arena.path + "x", 8 * MiB, databases=0)


def test_overwrite_is_copy_on_write(arena):
    old = arena.set(0, b"k", b"first")
    gen = arena.generation(old)
    arena.pin(old)                         # a reply in flight still reads the old bytes
    view = arena.view(old)
    new = arena.set(0, b"k", b"second value")
    assert new != old
    assert arena.lookup(0, b"k") == new
    assert arena.generation(new) > gen
    assert bytes(view) == b"first"         # the old block is a zombie, untouched
    s = arena.stats()
    assert (s["entries"], s["zombies"], s["pinned"]) == (1, 1, 1)
    assert arena.check() == []
    arena.unpin(old)
    s = arena.stats()
    assert (s["zombies"], s["pinned"]) == (0, 0)
    assert arena.check() == []


def test_overwrite_ttl_only_kept_with_keep_ttl(arena):
    at = now_ms() + 100_000
    arena.set(0, b"k", b"1", expire_at=at)
    off = arena.set(0, b"k", b"2", keep_ttl=True)
    assert arena.expire_at(off) == at
    off = arena.set(0, b"k", b"3")
    assert arena.expire_at(off) == -1
    assert arena.db_expires(0) == 0


def test_delete(arena):
    arena.set(0, b"k", b"v")
    assert arena.delete(0, b"k") is True
    assert arena.delete(0, b"k") is False
    assert arena.lookup(0, b"k") == 0
    assert arena.stats()["heap_used"] == 0
    assert arena.check() == []


def test_generation_bumps_on_every_change(arena):
    off = arena.set(0, b"k", b"v")
    seen = [arena.generation(off)]
    arena.set_expire(arena.find(0, b"k"), now_ms() + 10_000)
    seen.append(arena.generation(off))
    arena.append(0, b"k", b"more")
    seen.append(arena.key_generation(0, b"k"))
    arena.setrange(0, b"k", 0, b"V")
    seen.append(arena.key_generation(0, b"k"))
    arena.set(0, b"src", b"x")
    arena.rename(0, b"src", 0, b"k")
    seen.append(arena.key_generation(0, b"k"))
    assert seen == sorted(set(seen))


# ---------------------------------------------------------------- expiry

def test_lazy_expiry(arena):
    off = arena.set(0, b"gone", b"v", expire_at=now_ms() - 10)
    arena.set(0, b"stays", b"v", expire_at=now_ms() + 100_000)
    assert arena.expire_at(off) < now_ms()
    assert arena.dbsize(0) == 2 and arena.db_expires(0) == 2
    assert arena.key_generation(0, b"gone") == 0      # expired counts as absent, not deleted
    assert arena.lookup(0, b"gone") == 0
    s = arena.stats()
    assert s["expired_keys"] == 1 and s["keyspace_misses"] == 1
    assert arena.dbsize(0) == 1 and arena.db_expires(0) == 1
    assert arena.check() == []


def test_set_expire_and_persist(arena):
    off = arena.set(0, b"k", b"v")
    at = now_ms() + 50_000
    arena.set_expire(arena.find(0, b"k"), at)
    assert arena.expire_at(off) == at and arena.db_expires(0) == 1
    arena.set_expire(arena.find(0, b"k"), -1)
    assert arena.expire_at(off) == -1 and arena.db_expires(0) == 0
    arena.set_expire(arena.find(0, b"k"), now_ms() - 1)
    assert arena.lookup(0, b"k") == 0
    assert arena.check() == []


def test_expire_cycle_resumes_where_its_budget_ran_out(arena):
    past, future = now_ms() - 5, now_ms() + 100_000
    for i in range(300):
        arena.set(0, b"dead:%d" % i, b"x", expire_at=past)
        arena.set(0, b"live:%d" % i, b"x", expire_at=future if i % 2 else -1)
    total, calls = 0, 0
    while arena.dbsize(0) > 300:
        total += arena.expire_cycle(0)      # a budget of 0: 32 entries a call
        calls += 1
        assert arena.check() == []          # the saved cursor is an entry of its slot
        assert calls < 100
    assert total == 300 and calls >= 300 // 32
    assert arena.stats()["expired_keys"] == 300
    assert arena.expire_cycle(1000) == 0
    assert arena.dbsize(0) == 300 and arena.db_expires(0) == 150
    assert arena.check() == []


def test_keys_added_while_a_step_is_cut_short_are_still_found(arena):
    """A step stopped by its budget resumes from a cursor in the slot it was walking;
    keys whose period is that slot's (or already over) join where it resumes."""
    for i in range(200):
        arena.set(0, b"due:%d" % i, b"x", expire_at=now_ms() - 1)
    time.sleep(0.01)
    arena.expire_cycle(0)                 # stops after 32, cursor saved
    for i in range(100):
        arena.set(0, b"late:%d" % i, b"x", expire_at=now_ms() - 1000)
        arena.set(0, b"now:%d" % i, b"x", expire_at=now_ms())
    assert arena.check() == []
    time.sleep(0.3)                       # the walk's period has passed meanwhile
    calls = 0
    while arena.dbsize(0):
        arena.expire_cycle(0)
        calls += 1
        assert calls < 50, f"{arena.dbsize(0)} due keys never found"
    assert arena.stats()["expired_keys"] == 400 and arena.check() == []


def test_keys_passed_over_before_their_period_ended_are_looked_at_again(arena):
    """A step cut short while walking the current period leaves behind it keys that
    were not due yet; they are due once the period is over and must not wait a turn."""
    arena.expire_cycle(1000)
    while now_ms() % 128 > 40:           # the start of a 128 ms period
        time.sleep(0.002)
    period_end = now_ms() // 128 * 128 + 127
    for i in range(100):
        arena.set(0, b"p:%d" % i, b"x", expire_at=period_end)
    arena.expire_cycle(0)                 # looks at 32 (not due yet), cursor saved
    time.sleep(0.3)
    calls = 0
    while arena.dbsize(0):
        arena.expire_cycle(0)
        calls += 1
        assert calls < 50, f"{arena.dbsize(0)} due keys never found"
    assert arena.check() == []


def test_due_keys_are_found_at_once_in_a_large_arena(tmp_path):
    # 131072 index buckets: a bucket sweep would need many steps; the wheel looks at
    # the periods that have passed and nothing else
    a = Arena(str(tmp_path / "big.arena"), 256 * MiB)
    for i in range(2000):
        a.set(0, b"persistent:%d" % i, b"x")
    for i in range(3):
        a.set(0, b"due:%d" % i, b"x", expire_at=now_ms() + 30)
    a.set(0, b"later", b"x", expire_at=now_ms() + 60_000)
    time.sleep(0.1)
    assert a.expire_cycle(100) == 3
    assert a.dbsize(0) == 2001 and a.db_expires(0) == 1 and a.stats()["expired_keys"] == 3
    assert a.check() == []
    a.close()


def test_keys_a_turn_or_more_away_wait_for_their_time(arena):
    now = now_ms()
    for ms in (300_000, 262_144, 600_000, 3_600_000):     # one turn of the wheel is 262 144 ms
        arena.set(0, b"far:%d" % ms, b"x", expire_at=now + ms)
    arena.set(0, b"near", b"x", expire_at=now + 20)
    time.sleep(0.05)
    assert arena.expire_cycle(10_000) == 1
    assert arena.dbsize(0) == 4 and arena.check() == []


def test_the_wheel_follows_every_change_of_a_ttl(arena):
    """Each path that sets, changes, keeps, copies or drops a TTL leaves the wheel
    consistent (check() validates it), and what it left due is found by one step."""
    soon = now_ms() + 40
    steps = [
        lambda: arena.set(0, b"a", b"v", expire_at=soon),
        lambda: arena.set_expire(arena.find(0, b"a"), now_ms() + 100_000),
        lambda: arena.set_expire(arena.find(0, b"a"), soon),
        lambda: arena.set_expire(arena.find(0, b"a"), -1),
        lambda: arena.set_expire(arena.find(0, b"a"), soon),
        lambda: arena.set(0, b"a", b"overwritten", keep_ttl=True),
        lambda: arena.append(0, b"a", b"g" * 5000),             # grows into a new block
        lambda: arena.setrange(0, b"a", 20_000, b"r"),          # and again
        lambda: arena.copy(0, b"a", 0, b"copy"),
        lambda: arena.rename(0, b"a", 0, b"b"),                 # in place
        lambda: arena.rename(0, b"b", 2, b"b"),                 # MOVE
        lambda: arena.rename(2, b"b", 0, b"long" * 40),         # by copy
        lambda: arena.set(0, b"doomed", b"v", expire_at=soon),
        lambda: arena.delete(0, b"doomed"),
        lambda: arena.set(3, b"flushed", b"v", expire_at=soon),
        lambda: arena.flushdb(3),
        lambda: arena.set(0, b"persisted", b"v", expire_at=soon),
        lambda: arena.set(0, b"persisted", b"plain"),           # SET without KEEPTTL drops it
    ]
    for step in steps:
        step()
        assert arena.check() == []
    assert arena.db_expires(0) == 2 and sum(arena.db_expires(db) for db in range(16)) == 2
    time.sleep(0.06)
    assert arena.expire_cycle(10_000) == 2
    assert sorted(arena.keys(0, b"*")) == [b"persisted"]
    assert arena.stats()["expired_keys"] == 2 and arena.check() == []


def test_the_wheel_is_rebuilt_after_a_crash_and_kept_by_a_clean_close(path, tmp_path):
    a = Arena(path, 8 * MiB)
    for i in range(500):
        a.set(i % 4, b"k:%d" % i, b"x" * (i % 300), expire_at=now_ms() + (150 if i % 2 else 100_000))
    a.expire_cycle(0)                      # a step stopped part way: the cursor is saved
    copy = crash_copy(path, tmp_path)
    a.close()
    for file, recovery in ((copy, "rebuilt"), (path, "clean")):
        b = Arena(file, 8 * MiB)
        assert b.recovery == recovery and b.check() == []
        assert sum(b.db_expires(db) for db in range(4)) == 500
        time.sleep(0.2)
        expired = 0
        while expired < 250:
            expired += b.expire_cycle(0)
            assert b.check() == []
        assert sum(b.dbsize(db) for db in range(4)) == 250
        b.close()


def test_check_reports_a_broken_wheel(path):
    a = Arena(path, 8 * MiB)
    off = a.set(0, b"k", b"v", expire_at=now_ms() + 100_000)
    a.set(0, b"j", b"v", expire_at=now_ms() + 100_000)
    poke(path, off + ENTRY_TTL_PREV, "<Q", 7)
    assert any("back link" in p for p in a.check())
    a.close(clean=False)


# ---------------------------------------------------------------- pins, zombies

def test_set_recency_gives_an_idle_time_and_an_lfu_counter(arena):
    arena.set(0, b"k", b"v")
    entry = arena.find(0, b"k", touch=False)
    arena.set_recency(entry, idle_ms=3_600_000)
    assert 3_600_000 <= entry.idle_ms < 3_660_000
    assert entry.lfu_counter == 5                     # a new entry's counter, untouched
    arena.set_recency(entry, lfu=200)
    assert entry.lfu_counter == 200 and entry.idle_ms >= 3_600_000
    arena.set_recency(entry, idle_ms=now_ms() + 10**9)  # older than the clock: as old as it gets
    assert entry.idle_ms >= now_ms()
    with pytest.raises(ValueError):
        arena.set_recency(entry, lfu=256)
    other = arena.namespace(arena.create_tenant("t"))
    with pytest.raises(ValueError):
        other.set_recency(entry, idle_ms=0)           # another keyspace's entry
    assert arena.check() == []


def test_pin_delete_unpin(arena):
    off = arena.set(0, b"k", b"payload" * 100)
    arena.pin(off)
    arena.pin(off)
    assert arena.stats()["pinned"] == 1
    view = arena.view(off)
    used = arena.stats()["heap_used"]
    arena.delete(0, b"k")
    s = arena.stats()
    assert (s["entries"], s["zombies"], s["heap_used"]) == (0, 1, used)
    arena.set(0, b"other", b"z" * 700)          # must not reuse the zombie's bytes
    assert bytes(view) == b"payload" * 100
    assert arena.value_len(off) == 700          # zombies stay readable by offset
    arena.unpin(off)
    assert arena.stats()["zombies"] == 1
    arena.unpin(off)
    s = arena.stats()
    assert (s["zombies"], s["pinned"]) == (0, 0)
    with pytest.raises(ValueError):
        arena.view(off)
    assert arena.check() == []


def test_flush_turns_pinned_entries_into_zombies(arena):
    offs = [arena.set(0, b"k%d" % i, b"v%d" % i) for i in range(10)]
    arena.pin(offs[3])
    arena.flushall()
    assert arena.stats()["zombies"] == 1 and arena.dbsize(0) == 0
    assert arena.value_bytes(offs[3]) == b"v3"
    arena.unpin(offs[3])
    assert arena.stats()["heap_used"] == 0
    assert arena.check() == []


# ---------------------------------------------------------------- reservations

def test_reserve_slot_commit(arena):
    off = arena.reserve(1000, 16)
    assert arena.stats()["reserved"] == 1
    slot = arena.slot(off)
    assert not slot.readonly and len(slot) == 1000
    slot[:] = b"r" * 1000
    assert arena.lookup(0, b"upload") == 0           # invisible until committed
    assert arena.commit(off, 0, b"upload", expire_at=now_ms() + 9999) == off
    assert arena.lookup(0, b"upload") == off
    assert arena.value_bytes(off) == b"r" * 1000
    assert arena.expire_at(off) > now_ms()
    assert arena.stats()["reserved"] == 0
    assert arena.check() == []


def test_commit_replaces_and_checks_key_room(arena):
    arena.set(0, b"k", b"old", expire_at=now_ms() + 100_000)
    off = arena.reserve(3, 1)
    with pytest.raises(ValueError):
        arena.commit(off, 0, b"k" * 200)
    arena.slot(off)[:] = b"new"
    arena.commit(off, 0, b"k", keep_ttl=True)
    assert arena.value_bytes(arena.lookup(0, b"k")) == b"new"
    assert arena.expire_at(off) > now_ms()
    assert arena.check() == []


def test_release(arena):
    off = arena.reserve(5000, 10)
    arena.release(off)
    s = arena.stats()
    assert (s["reserved"], s["heap_used"]) == (0, 0)
    with pytest.raises(ValueError):
        arena.release(off)
    assert arena.check() == []


# ---------------------------------------------------------------- string edits

def test_append(arena):
    assert arena.append(0, b"empty", b"") == 0                 # Redis creates the key
    assert arena.value_len(arena.lookup(0, b"empty")) == 0
    assert arena.append(0, b"k", b"ab") == 2
    at = now_ms() + 100_000
    arena.set_expire(arena.find(0, b"k"), at)
    assert arena.append(0, b"k", b"") == 2
    assert arena.append(0, b"k", b"c" * 10) == 12              # fits in place
    off = arena.lookup(0, b"k")
    arena.pin(off)
    view = arena.view(off)
    assert arena.append(0, b"k", b"d" * 5000) == 5012          # moves to a bigger block
    assert bytes(view) == b"ab" + b"c" * 10
    arena.unpin(off)
    new = arena.lookup(0, b"k")
    assert arena.value_bytes(new) == b"ab" + b"c" * 10 + b"d" * 5000
    assert arena.expire_at(new) == at
    for _ in range(50):                                         # growth room amortises appends
        arena.append(0, b"k", b"e")
    assert arena.value_len(arena.lookup(0, b"k")) == 5062
    assert arena.check() == []


def test_setrange(arena):
    assert arena.setrange(0, b"k", 5, b"") == 0                 # Redis creates nothing
    assert arena.lookup(0, b"k") == 0
    assert arena.setrange(0, b"k", 3, b"abc") == 6
    assert arena.value_bytes(arena.lookup(0, b"k")) == b"\0\0\0abc"
    at = now_ms() + 100_000
    arena.set_expire(arena.find(0, b"k"), at)
    assert arena.setrange(0, b"k", 1, b"XY") == 6
    assert arena.value_bytes(arena.lookup(0, b"k")) == b"\0XYabc"
    assert arena.setrange(0, b"k", 8, b"Z") == 9
    assert arena.value_bytes(arena.lookup(0, b"k")) == b"\0XYabc\0\0Z"
    assert arena.setrange(0, b"k", 0, b"") == 9
    assert arena.expire_at(arena.lookup(0, b"k")) == at
    # bytes a reader holds are never rewritten in place
    off = arena.lookup(0, b"k")
    arena.pin(off)
    view = arena.view(off)
    arena.setrange(0, b"k", 0, b"!")
    assert bytes(view) == b"\0XYabc\0\0Z"
    arena.unpin(off)
    assert arena.value_bytes(arena.lookup(0, b"k")) == b"!XYabc\0\0Z"
    assert arena.check() == []


def test_copy(arena):
    at = now_ms() + 100_000
    assert arena.copy(0, b"nope", 0, b"dst") is False
    arena.set(0, b"src", b"value", expire_at=at, type=TYPE_HASH)
    assert arena.copy(0, b"src", 1, b"dst") is True
    dst = arena.lookup(1, b"dst")
    assert (arena.value_bytes(dst), arena.expire_at(dst), arena.entry_type(dst)) == (b"value", at, TYPE_HASH)
    arena.set(0, b"taken", b"keep")
    assert arena.copy(0, b"src", 0, b"taken") is False
    assert arena.value_bytes(arena.lookup(0, b"taken")) == b"keep"
    assert arena.copy(0, b"src", 0, b"taken", True) is True
    assert arena.value_bytes(arena.lookup(0, b"taken")) == b"value"
    arena.set(0, b"src", b"changed")                             # copies are independent
    assert arena.value_bytes(arena.lookup(1, b"dst")) == b"value"
    assert arena.check() == []


@pytest.mark.parametrize("dst_key", [b"d", b"a-destination-key-longer-than-the-source-key-area" * 2])
def test_rename(arena, dst_key):
    at = now_ms() + 100_000
    assert arena.rename(0, b"nope", 0, dst_key) is False
    arena.set(0, b"src", b"value", expire_at=at)
    arena.set(2, dst_key, b"replaced")
    assert arena.rename(0, b"src", 2, dst_key) is True
    assert arena.lookup(0, b"src") == 0
    off = arena.lookup(2, dst_key)
    assert (arena.value_bytes(off), arena.expire_at(off)) == (b"value", at)
    assert (arena.dbsize(0), arena.dbsize(2), arena.db_expires(2)) == (0, 1, 1)
    assert arena.rename(2, dst_key, 2, dst_key) is True          # same key: a no-op
    assert arena.value_bytes(arena.lookup(2, dst_key)) == b"value"
    assert arena.check() == []


# ---------------------------------------------------------------- keyspace

def test_dbs_flush_swap(arena):
    for db in range(3):
        for i in range(db + 2):
            arena.set(db, b"k%d" % i, b"db%d" % db, expire_at=now_ms() + 99_999 if i == 0 else -1)
    assert [arena.dbsize(d) for d in range(3)] == [2, 3, 4]
    assert [arena.db_expires(d) for d in range(3)] == [1, 1, 1]
    arena.swapdb(0, 2)
    assert [arena.dbsize(d) for d in range(3)] == [4, 3, 2]
    assert arena.value_bytes(arena.lookup(0, b"k3")) == b"db2"
    arena.set(0, b"new", b"x")
    arena.flushdb(2)
    assert [arena.dbsize(d) for d in range(3)] == [5, 3, 0]
    arena.swapdb(0, 2)
    assert arena.value_bytes(arena.lookup(2, b"new")) == b"x"
    arena.flushall()
    assert [arena.dbsize(d) for d in range(3)] == [0, 0, 0]
    assert arena.stats()["heap_used"] == 0
    assert arena.check() == []


def full_scan(arena, db, count=10, **kw):
    cursor, seen, calls = 0, [], 0
    while True:
        cursor, keys = arena.scan(db, cursor, count, **kw)
        seen += keys
        calls += 1
        if cursor == 0:
            return seen, calls


def test_scan(arena):
    keys = {b"user:%d" % i for i in range(500)} | {b"item:%d" % i for i in range(100)}
    for k in keys:
        arena.set(0, k, b"v", type=TYPE_HASH if k.startswith(b"item") else TYPE_STRING)
    arena.set(1, b"user:elsewhere", b"v")
    seen, calls = full_scan(arena, 0)
    assert set(seen) == keys and len(seen) == len(keys) and calls > 10
    assert set(full_scan(arena, 0, match=b"item:*")[0]) == {k for k in keys if k.startswith(b"item")}
    assert set(full_scan(arena, 0, match=b"*")[0]) == keys
    assert set(full_scan(arena, 0, type=TYPE_HASH)[0]) == {k for k in keys if k.startswith(b"item")}
    assert len(full_scan(arena, 0, count=1000)[0]) == 600
    assert arena.scan(0, 1 << 40, 10) == (0, [])


def test_scan_returns_every_key_present_throughout(arena):
    rng = random.Random(3)
    stable = {b"stable:%d" % i for i in range(300)}
    for k in stable:
        arena.set(0, k, b"v")
    cursor, seen, churn = 0, set(), 0
    while True:
        cursor, keys = arena.scan(0, cursor, 7)
        seen.update(keys)
        for _ in range(5):          # inserts and deletes between the calls
            k = b"churn:%d" % rng.randrange(200)
            if rng.random() < 0.5:
                arena.set(0, k, b"x")
            else:
                arena.delete(0, k)
            churn += 1
        if cursor == 0:
            break
    assert stable <= seen


def test_keys_and_random_key(arena):
    assert arena.random_key(0) is None
    for k in (b"hello", b"hallo", b"hxllo", b"world"):
        arena.set(0, k, b"v")
    arena.set(0, b"hidden", b"v", expire_at=now_ms() - 1)
    assert sorted(arena.keys(0, b"h?llo")) == [b"hallo", b"hello", b"hxllo"]
    assert sorted(arena.keys(0, b"h[ae]llo")) == [b"hallo", b"hello"]
    assert sorted(arena.keys(0, b"*")) == [b"hallo", b"hello", b"hxllo", b"world"]
    picks = {arena.random_key(0) for _ in range(200)}
    assert picks == {b"hello", b"hallo", b"hxllo", b"world"}
    assert arena.random_key(1) is None
    # random_key deletes expired keys it meets, like RANDOMKEY
    arena.flushall()
    arena.reset_stats()
    arena.set(0, b"e1", b"v", expire_at=now_ms() - 1)
    arena.set(0, b"e2", b"v", expire_at=now_ms() - 1)
    assert arena.random_key(0) is None
    assert arena.dbsize(0) == 0 and arena.stats()["expired_keys"] == 2


def test_glob_match_basics():
    assert glob_match(b"h*llo", b"heeeello")
    assert glob_match(b"h\\*llo", b"h*llo") and not glob_match(b"h\\*llo", b"hello")
    assert glob_match(b"[^a]bc", b"xbc") and not glob_match(b"[^a]bc", b"abc")
    assert glob_match(b"[a-c]", b"b") and glob_match(b"[c-a]", b"b")
    assert not glob_match(b"HELLO", b"hello") and glob_match(b"HE[K-M]LO", b"hello", nocase=True)
    assert not glob_match(b"*", b"")            # as Redis (KEYS * special-cases it)


@pytest.fixture(scope="module")
def redis_server():
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    import redis

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL)
    client = redis.Redis(port=port)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield client
    finally:
        client.close()
        proc.terminate()
        proc.wait(10)


GLOB_STRINGS = [b"", b"a", b"b", b"ab", b"abc", b"aXc", b"a-c", b"]", b"[", b"^", b"\\", b"a\\b", b"*", b"?",
                b"hello", b"hallo", b"A", b"-", b"\xff", b"\x80a", b"a]b", b"a[b", b"key:1", b"key:10", b"\xe9t\xe9"]
GLOB_PATTERNS = [b"**", b"", b"a", b"a*", b"*a", b"*b*", b"?", b"??", b"a?c", b"[abc]", b"[^a]", b"[a-c]",
                 b"[c-a]", b"[a-]", b"[-a]", b"[", b"[a", b"[^", b"[]", b"[]]", b"[]a]", b"[^]]", b"\\*", b"\\",
                 b"a\\", b"a\\b", b"[\\]]", b"[\\", b"[a\\-c]", b"[\\a-c]", b"h[ae]llo", b"h[^e]llo", b"h*o",
                 b"*[", b"*]", b"[*]", b"[?]", b"[a-\xff]", b"[\x80-\xff]*", b"*\\", b"key:?", b"key:*0",
                 b"[^a-b]*", b"a[", b"*?*", b"?*?", b"[[]", b"[A-z]", b"\\?", b"\\[a]", b"*a*b*c*", b"[]-a]",
                 b"[a-c-e]", b"[z-a-c]", b"*\xe9*", b"[\xe0-\xef]t*", b"a*[bc]", b"*[^a]"]


def test_glob_match_agrees_with_redis_keys(redis_server):
    redis_server.flushall()
    for k in GLOB_STRINGS:
        redis_server.set(k, b"1")
    rng = random.Random(11)
    alphabet = [b"a", b"b", b"*", b"?", b"[", b"]", b"^", b"-", b"\\"]
    patterns = GLOB_PATTERNS + [b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
                                for _ in range(300)]
    mismatches = []
    for pattern in patterns:
        expected = set(redis_server.keys(pattern))
        # KEYS * lists every key, the empty one too; glob_match("*", b"") is false as in Redis
        ours = {s for s in GLOB_STRINGS if pattern == b"*" or glob_match(pattern, s)}
        if expected != ours:
            mismatches.append((pattern, sorted(expected), sorted(ours)))
    assert mismatches == []


def test_keys_star_includes_empty_key(arena):
    arena.set(0, b"", b"v")
    assert arena.keys(0, b"*") == [b""]          # KEYS * lists the empty key, as Redis does
    assert arena.keys(0, b"**") == []


# ---------------------------------------------------------------- eviction

def small_arena(path, policy, maxmemory=0, samples=5):
    a = Arena(path, 4 * MiB)
    a.policy = policy
    a.maxmemory = maxmemory
    a.maxmemory_samples = samples
    return a


def fill(a, prefix, n, size=10_000, **kw):
    return [a.set(0, b"%s:%d" % (prefix, i), b"x" * size, **kw) for i in range(n)]


def present(a, keys):
    return {k for k in keys if a.lookup(0, k, False, False)}


def test_policy_names(arena):
    for name in ("noeviction", "allkeys-lru", "volatile-lru", "allkeys-random", "volatile-random",
                 "volatile-ttl", "allkeys-lfu", "volatile-lfu"):
        arena.policy = name
        assert arena.policy == name == arena.stats()["policy"]
    arena.policy = b"ALLKEYS-LRU"
    assert arena.policy == "allkeys-lru"
    with pytest.raises(ValueError):
        arena.policy = "sometimes-lru"
    with pytest.raises(ValueError):
        arena.maxmemory_samples = 0
    with pytest.raises(ValueError):
        arena.maxmemory = -1


def test_noeviction_raises_and_keeps_everything(path):
    a = small_arena(path, "noeviction", maxmemory=200_000)
    fill(a, b"k", 19)
    with pytest.raises(OutOfMemory):
        fill(a, b"more", 5)
    assert a.stats()["evicted_keys"] == 0 and a.dbsize(0) >= 19
    assert a.stats()["heap_used"] <= 200_000
    assert a.check() == []
    a.close()


def test_allkeys_lru_is_exact(path):
    a = small_arena(path, "allkeys-lru", maxmemory=20 * 10_240)
    keys = [b"k:%d" % i for i in range(20)]
    fill(a, b"k", 20)
    for i in (0, 2, 4):                    # touched: now the most recent
        assert a.lookup(0, keys[i])
    a.set_expire(a.find(0, keys[6]), now_ms() + 100_000)   # moves to the volatile list, touched
    a.set(0, b"new:0", b"x" * 10_000)
    a.set(0, b"new:1", b"x" * 10_000)
    a.set(0, b"new:2", b"x" * 10_000)
    assert set(keys) - present(a, keys) == {keys[1], keys[3], keys[5]}
    assert a.stats()["evicted_keys"] == 3
    assert a.check() == []
    a.close()


def test_keep_ttl_survives_evicting_the_old_version(path):
    a = small_arena(path, "allkeys-lru", maxmemory=20 * 10_240)
    at = now_ms() + 100_000
    a.set(0, b"k", b"x" * 10_000, expire_at=at)      # the LRU tail
    fill(a, b"other", 19)
    off = a.set(0, b"k", b"y" * 10_000, keep_ttl=True)
    assert a.stats()["evicted_keys"] >= 1
    assert a.expire_at(off) == at
    a.set(0, b"gone", b"v", expire_at=now_ms() - 1)
    assert a.expire_at(a.set(0, b"gone", b"w", keep_ttl=True)) == -1   # an expired TTL is not kept
    a.close()


def test_lru_skips_pinned_entries(path):
    a = small_arena(path, "allkeys-lru", maxmemory=20 * 10_240)
    offs = fill(a, b"k", 20)
    a.pin(offs[0])
    a.set(0, b"new", b"x" * 10_000)
    assert present(a, [b"k:0", b"k:1"]) == {b"k:0"}
    a.unpin(offs[0])
    assert a.check() == []
    a.close()


def test_volatile_lru_only_evicts_volatile_keys(path):
    a = small_arena(path, "volatile-lru", maxmemory=20 * 10_240)
    fill(a, b"p", 10)
    fill(a, b"v", 10, expire_at=now_ms() + 100_000)
    a.lookup(0, b"v:0")
    a.set(0, b"new", b"x" * 10_000)
    assert present(a, [b"v:0", b"v:1", b"v:2"]) == {b"v:0", b"v:2"}
    a.flushall()
    fill(a, b"p", 19)
    before = a.dbsize(0)
    with pytest.raises(OutOfMemory):       # nothing volatile: fail without evicting anything
        fill(a, b"q", 3)
    assert a.stats()["evicted_keys"] == 1 and a.dbsize(0) == before + 1
    assert a.check() == []
    a.close()


@pytest.mark.parametrize("policy", ["allkeys-random", "volatile-random"])
def test_random_policies(path, policy):
    a = small_arena(path, policy, maxmemory=40 * 10_240)
    persistent = fill(a, b"p", 15)
    fill(a, b"v", 25, expire_at=now_ms() + 100_000)
    for i in range(30):
        a.set(0, b"new:%d" % i, b"x" * 10_000, expire_at=now_ms() + 100_000)
    s = a.stats()
    assert s["evicted_keys"] == 30 and s["heap_used"] <= 40 * 10_240
    kept_persistent = present(a, [b"p:%d" % i for i in range(15)])
    if policy == "volatile-random":
        assert len(kept_persistent) == len(persistent)
    else:
        assert len(kept_persistent) < 15       # 30 random evictions among 40 keys hit some
    assert a.check() == []
    a.close()


def test_volatile_ttl_evicts_nearest_expiry(path):
    a = small_arena(path, "volatile-ttl", maxmemory=20 * 10_240, samples=64)
    base = now_ms() + 100_000
    fill(a, b"p", 14)
    for i in range(6):
        a.set(0, b"v:%d" % i, b"x" * 10_000, expire_at=base + (5 - i) * 1000)
    a.set(0, b"new", b"x" * 10_000)
    assert present(a, [b"v:%d" % i for i in range(6)]) == {b"v:%d" % i for i in range(5)}
    assert a.check() == []
    a.close()


@pytest.mark.parametrize("policy", ["allkeys-lfu", "volatile-lfu"])
def test_lfu_keeps_frequently_used_keys(path, policy):
    a = small_arena(path, policy, maxmemory=20 * 10_240, samples=64)
    ttl = now_ms() + 100_000
    fill(a, b"k", 20, expire_at=ttl)
    hot = [b"k:%d" % i for i in range(0, 20, 2)]
    for _ in range(200):
        for k in hot:
            a.lookup(0, k)
    for i in range(5):
        a.set(0, b"new:%d" % i, b"x" * 10_000, expire_at=ttl)
    assert present(a, hot) == set(hot)
    assert a.stats()["evicted_keys"] == 5
    a.close()


def test_eviction_makes_a_contiguous_block(path):
    a = small_arena(path, "allkeys-lru")
    fill(a, b"small", 300, size=10_000)
    big = os.urandom(2 * MiB)
    off = a.set(0, b"big", big)
    assert a.value_bytes(off) == big
    assert a.stats()["evicted_keys"] > 0
    assert a.check() == []
    a.close()


def test_out_of_memory_frees_nothing_it_does_not_need(path):
    a = small_arena(path, "allkeys-lru", maxmemory=1 * MiB)
    fill(a, b"k", 50)
    with pytest.raises(OutOfMemory):
        a.set(0, b"huge", b"x" * (2 * MiB))          # over maxmemory: hopeless from the start
    assert a.stats()["evicted_keys"] == 0 and a.dbsize(0) == 50
    offs = [a.lookup(0, b"k:%d" % i) for i in range(50)]
    for off in offs:
        a.pin(off)
    with pytest.raises(OutOfMemory):                 # everything pinned
        a.set(0, b"more", b"x" * 600_000)
    assert a.stats()["evicted_keys"] == 0
    with pytest.raises(OutOfMemory):
        a.reserve(5 * MiB, 10)
    for off in offs:
        a.unpin(off)
    assert a.check() == []
    a.close()


def test_maxmemory_counts_reserved_and_zombie_blocks(path):
    a = small_arena(path, "noeviction", maxmemory=300_000)
    r = a.reserve(100_000, 8)
    z = a.set(0, b"z", b"x" * 100_000)
    a.pin(z)
    a.delete(0, b"z")
    with pytest.raises(OutOfMemory):
        a.set(0, b"k", b"x" * 150_000)
    a.release(r)
    a.unpin(z)
    a.set(0, b"k", b"x" * 150_000)
    a.close()


# ---------------------------------------------------------------- attach, recovery

def test_clean_reattach(path):
    a = Arena(path, 8 * MiB, databases=4)
    data = {b"k%d" % i: os.urandom(i * 37) for i in range(200)}
    for k, v in data.items():
        a.set(1, k, v, expire_at=now_ms() + 100_000 if len(v) % 2 else -1)
    a.swapdb(1, 3)
    gen = a.key_generation(3, b"k5")
    stats = a.stats()
    a.close()
    a.close()                                    # idempotent
    with pytest.raises(ArenaError):
        a.lookup(0, b"k")
    b = Arena(path, 8 * MiB, databases=4)
    assert b.recovery == "clean" and b.dropped_entries == 0
    assert {k: b.value_bytes(b.lookup(3, k)) for k in data} == data
    assert b.key_generation(3, b"k5") == gen
    assert b.stats()["heap_used"] == stats["heap_used"]
    assert b.set(3, b"after", b"x") and b.key_generation(3, b"after") > gen
    assert peek(path, SB_CLEAN, "<Q") == 0       # cleared while attached
    assert b.check() == []
    b.close()


def test_clean_close_releases_pins_and_reservations(path):
    a = Arena(path, 8 * MiB)
    off = a.set(0, b"k", b"v")
    a.pin(off)
    z = a.set(0, b"z", b"zz")
    a.pin(z)
    a.delete(0, b"z")
    a.reserve(1000, 10)
    a.close()
    b = Arena(path, 8 * MiB)
    s = b.stats()
    assert (s["pinned"], s["zombies"], s["reserved"], s["entries"]) == (0, 0, 0, 1)
    with pytest.raises(ValueError):
        b.unpin(b.lookup(0, b"k"))
    assert b.check() == []
    b.close()


def test_crash_recovery_rebuilds(path, tmp_path):
    a = Arena(path, 8 * MiB)
    data = {}
    for i in range(300):
        k, v = b"key:%d" % i, os.urandom(i * 13 % 5000)
        a.set(i % 3, k, v, expire_at=now_ms() + 100_000 if i % 5 == 0 else -1)
        data[(i % 3, k)] = v
    for i in range(0, 300, 7):                   # churn: deletes and overwrites
        a.delete(i % 3, b"key:%d" % i)
        del data[(i % 3, b"key:%d" % i)]
    for i in range(1, 300, 11):
        if (i % 3, b"key:%d" % i) in data:
            data[(i % 3, b"key:%d" % i)] = b"new" * i
            a.set(i % 3, b"key:%d" % i, b"new" * i)
    pinned = a.lookup(1, b"key:1")
    a.pin(pinned)
    a.swapdb(0, 1)
    expected_stats = a.stats()
    copy = crash_copy(path, tmp_path)
    a.close()
    b = Arena(copy, 8 * MiB)
    assert b.recovery == "rebuilt" and b.dropped_entries == 0
    got = {(db ^ 1 if db < 2 else db, k): b.value_bytes(b.lookup(db, k, False, False))
           for db in range(3) for k in b.keys(db, b"*")}
    assert got == data
    s = b.stats()
    for name in ("entries", "heap_used", "used_memory_dataset"):
        assert s[name] == expected_stats[name]
    assert s["pinned"] == 0                       # pins belong to the dead process
    assert b.generation(b.lookup(0, b"key:1")) <= s["generation"]
    assert b.check() == []
    b.close()


def test_crash_in_the_middle_of_a_reserve_drops_the_block(path, tmp_path):
    a = Arena(path, 8 * MiB)
    a.set(0, b"kept", b"v" * 1000)
    off = a.reserve(50_000, 10)
    a.slot(off)[:25_000] = b"half" * 6250         # a client uploading when the server died
    z = a.set(0, b"zombie", b"z" * 3000)
    a.pin(z)
    a.delete(0, b"zombie")
    copy = crash_copy(path, tmp_path)
    a.close()
    b = Arena(copy, 8 * MiB)
    assert b.recovery == "rebuilt" and b.dropped_entries == 2
    assert b.lookup(0, b"zombie") == 0
    assert b.value_bytes(b.lookup(0, b"kept")) == b"v" * 1000
    s = b.stats()
    assert (s["reserved"], s["zombies"], s["entries"]) == (0, 0, 1)
    assert s["largest_free"] == s["free_bytes"]   # the dropped blocks merged back
    assert b.check() == []
    b.close()


def test_rebuild_keeps_the_newer_of_two_copies(path, tmp_path):
    """A crash between linking a new version and freeing the old leaves both live."""
    a = Arena(path, 8 * MiB)
    old = a.set(0, b"k", b"old value")
    a.set(0, b"fence", b"keeps the old block from merging")
    new = a.set(0, b"k", b"new value")
    assert a.lookup(0, b"k") == new
    a.close()
    word = peek(path, old, "<Q")
    assert word & 63 == 7                            # the old block is free now, on its quick list
    poke(path, old, "<Q", (word & ~63) | 3)          # ... make it live again
    poke(path, SB_CLEAN, "<Q", 0)
    b = Arena(path, 8 * MiB)
    assert b.recovery == "rebuilt"
    assert b.value_bytes(b.lookup(0, b"k")) == b"new value"
    assert b.dbsize(0) == 2
    assert b.check() == []
    b.close()


def test_quick_lists_survive_a_clean_restart_and_check_sees_them_lie(path):
    """A small freed block waits on its quick list (state 7) across a clean close, and is
    reused after; check() notices a quick list naming a block that is not quick."""
    a = Arena(path, 8 * MiB)
    gone = a.set(0, b"k", b"value")
    a.set(0, b"fence", b"keeps the freed block from merging")
    a.delete(0, b"k")
    a.close()
    word = peek(path, gone, "<Q")
    assert word & 63 == 7
    b = Arena(path, 8 * MiB)
    assert b.recovery != "rebuilt" and b.check() == []
    assert b.set(0, b"again", b"value") == gone       # the same size takes it back
    b.delete(0, b"again")
    b.close()
    poke(path, gone, "<Q", (word & ~63) | 1)         # it says free; its quick list still names it
    c = Arena(path, 8 * MiB)
    problems = c.check()
    assert any(f"{gone} is not a quick block" in p for p in problems), problems
    assert any("free blocks are on no free list" in p for p in problems), problems
    c.close()


# entry header offsets: expire_at, value_len, hash
E_EXPIRE_AT, E_VALUE_LEN, E_HASH = 32, 48, 64


@pytest.mark.parametrize("field, value", [
    (E_VALUE_LEN, 12345),          # longer than the block holds
    (E_HASH, 0x5EED),              # the identity, sealed by the checksum
])
def test_rebuild_drops_torn_entries(path, field, value):
    a = Arena(path, 8 * MiB)
    off = a.set(0, b"torn", b"v")
    a.set(0, b"fine", b"v")
    a.close()
    poke(path, off + field, "<Q", value)
    poke(path, SB_CLEAN, "<Q", 0)
    b = Arena(path, 8 * MiB)
    assert b.recovery == "rebuilt" and b.dropped_entries == 1
    assert b.lookup(0, b"torn") == 0 and b.lookup(0, b"fine")
    assert b.check() == []
    b.close()


def test_crash_inside_an_in_place_update_keeps_the_entry(path, tmp_path):
    """EXPIRE and an in-place APPEND store one aligned word; a kill -9 right after that
    store (before the generation moves on) must neither drop the entry nor tear it."""
    a = Arena(path, 8 * MiB)
    ttl = a.set(0, b"ttl", b"value")
    a.set(0, b"grown", b"abc")
    later = now_ms() + 3_600_000
    copy = crash_copy(path, tmp_path)
    a.close()
    poke(copy, ttl + E_EXPIRE_AT, "<q", later)       # the expiry store landed, nothing after it
    b = Arena(copy, 8 * MiB)
    assert b.recovery == "rebuilt" and b.dropped_entries == 0
    assert b.expire_at(b.lookup(0, b"ttl")) == later
    assert b.value_bytes(b.lookup(0, b"grown")) == b"abc"
    b.close()
    # APPEND writes the new bytes first, then value_len: either length is a whole value.
    c = Arena(copy, 8 * MiB)
    off = c.lookup(0, b"grown")
    assert c.append(0, b"grown", b"def") == 6 and c.lookup(0, b"grown") == off   # in place
    second = crash_copy(copy, tmp_path, "second.arena")
    c.close()
    poke(second, off + E_VALUE_LEN, "<Q", 3)         # crashed before the length store
    d = Arena(second, 8 * MiB)
    assert d.recovery == "rebuilt" and d.value_bytes(d.lookup(0, b"grown")) == b"abc"
    assert d.check() == []
    d.close()


def test_rebuild_orders_lru_by_last_access(path, tmp_path):
    a = Arena(path, 4 * MiB)
    for i in range(10):
        a.set(0, b"k:%d" % i, b"x" * 10_000)
    for i in (3, 1, 4, 0, 5, 9, 2, 6, 8, 7):      # distinct last-access times
        time.sleep(0.003)
        a.lookup(0, b"k:%d" % i)
    copy = crash_copy(path, tmp_path)
    a.close()
    b = Arena(copy, 4 * MiB)
    assert b.recovery == "rebuilt"
    b.policy = "allkeys-lru"
    b.maxmemory = 10 * 10_240
    evicted = []
    for i in range(10):
        b.set(0, b"new:%d" % i, b"x" * 10_000)
        evicted += [k for k in (b"k:%d" % j for j in range(10)) if k not in evicted and not b.lookup(0, k, False, False)]
    assert evicted == [b"k:%d" % i for i in (3, 1, 4, 0, 5, 9, 2, 6, 8, 7)]
    b.close()


def test_attach_errors(path, tmp_path):
    a = Arena(path, 8 * MiB)
    with pytest.raises(ArenaError, match="is in use by another process"):
        Arena(path, 8 * MiB)
    a.close()
    with pytest.raises(ArenaError, match=r"8388608 bytes.*16777216 bytes.*arena-reset yes"):
        Arena(path, 16 * MiB)
    with pytest.raises(ArenaError, match="minimum of 4 MiB"):
        Arena(str(tmp_path / "tiny"), 1 * MiB)
    with pytest.raises(ArenaError, match="cannot open"):
        Arena(str(tmp_path / "no" / "such" / "dir"), 8 * MiB)


def test_size_mismatch_reset_reformats(path):
    a = Arena(path, 8 * MiB)
    a.set(0, b"k", b"v")
    a.close()
    b = Arena(path, 16 * MiB, reset=True)
    assert b.recovery == "new" and b.dbsize(0) == 0 and os.path.getsize(path) == 16 * MiB
    b.close()


def test_foreign_or_corrupt_superblock(path):
    with open(path, "wb") as f:
        f.write(b"not an arena at all".ljust(8 * MiB, b"\0"))
    with pytest.raises(ArenaError, match=r"not a cxlredis arena \(bad magic\)"):
        Arena(path, 8 * MiB)
    assert open(path, "rb").read(6) == b"not an"      # never silently re-formatted
    b = Arena(path, 8 * MiB, reset=True)
    b.set(0, b"k", b"v")
    b.close()
    version = peek(path, SB_VERSION, "<I")
    poke(path, SB_VERSION, "<I", 99)
    with pytest.raises(ArenaError, match=f"layout version 99, this build reads {version}"):
        Arena(path, 8 * MiB)
    poke(path, SB_VERSION, "<I", 2)        # before the expiry wheel and 112-byte headers
    with pytest.raises(ArenaError, match=f"layout version 2, this build reads {version}"):
        Arena(path, 8 * MiB)
    poke(path, SB_VERSION, "<I", version)
    poke(path, SB_INDEX_BUCKETS, "<Q", 12345)
    with pytest.raises(ArenaError, match="corrupt superblock"):
        Arena(path, 8 * MiB)
    c = Arena(path, 8 * MiB, reset=True)
    assert c.recovery == "new" and c.dbsize(0) == 0
    c.close()


def test_superblock_size_must_match_the_mapping(path):
    Arena(path, 8 * MiB).close()
    os.truncate(path, 16 * MiB)                      # grown behind the arena's back
    with pytest.raises(ArenaError, match="corrupt superblock .formatted for 8388608 bytes, mapped 16777216"):
        Arena(path, 16 * MiB)


def test_zero_file_is_formatted(path):
    with open(path, "wb") as f:
        f.truncate(8 * MiB)
    a = Arena(path, 8 * MiB)
    assert a.recovery == "new"
    a.close()


def test_mapping_options(path, tmp_path):
    a = Arena(path, 8 * MiB, hugepages=True, prefault=True, numa_node=0 if os.path.exists(
        "/sys/devices/system/node/node0") else -1)
    a.set(0, b"k", b"v")
    assert a.check() == []
    a.close()
    with pytest.raises(ArenaError, match="cannot bind the arena to NUMA node 4000: Invalid argument"):
        Arena(str(tmp_path / "numa"), 8 * MiB, numa_node=4000)


def test_character_device_is_mapped_as_given():
    """The devdax code path: no resize, `size` bytes mapped (/dev/zero maps shared, zeroed)."""
    a = Arena("/dev/zero", 8 * MiB)
    assert a.recovery == "new" and a.size == 8 * MiB
    a.set(0, b"k", b"v")
    assert a.check() == []
    a.close()


def test_check_reports_corruption(arena, path):
    arena.set(0, b"k", b"v")
    poke(path, SB_ENTRIES, "<Q", 7)                  # the live mapping is shared
    assert any("counter entries is 7" in p for p in arena.check())
    poke(path, SB_ENTRIES, "<Q", 1)
    off = arena.lookup(0, b"k")
    size = peek(path, off, "<Q") & ~63
    poke(path, off + size - 8, "<Q", 64)
    assert any("footer" in p for p in arena.check())
    poke(path, off + size - 8, "<Q", size)
    assert arena.check() == []


# ---------------------------------------------------------------- allocator bounds, big values

def test_overhead_uniform_2mib_values(tmp_path):
    a = Arena(str(tmp_path / "uniform.arena"), 256 * MiB)
    a.policy = "allkeys-lru"
    value = b"\xab" * (2 * MiB)
    for i in range(300):                             # about 2.4 arenas' worth: steady-state churn
        a.set(0, b"chunk:%06d" % i, value)
    s = a.stats()
    assert s["evicted_keys"] > 100
    assert s["heap_used"] / s["used_memory_dataset"] <= 1.02
    assert s["used_memory_dataset"] / s["heap_size"] >= 0.98   # and the arena really is full
    assert a.check() == []
    a.close()


def test_overhead_mixed_workload_after_churn(tmp_path):
    a = Arena(str(tmp_path / "mixed.arena"), 128 * MiB)
    a.policy = "allkeys-lru"
    rng = random.Random(5)
    blob = os.urandom(4 * MiB)

    def size():
        r = rng.random()
        if r < 0.5:
            return int(2 ** rng.uniform(4, 12))      # 16 B .. 4 KiB
        if r < 0.85:
            return int(2 ** rng.uniform(14, 18))     # 16 KiB .. 256 KiB
        return int(2 ** rng.uniform(19, 22))         # 512 KiB .. 4 MiB

    for _ in range(6000):
        k = b"obj:%d" % rng.randrange(3000)
        if rng.random() < 0.2:
            a.delete(0, k)
        else:
            a.set(0, k, memoryview(blob)[:size()])
    s = a.stats()
    assert s["evicted_keys"] > 0                    # the arena was under pressure
    assert s["heap_used"] / s["used_memory_dataset"] <= 1.30
    assert s["used_memory_dataset"] / s["heap_size"] >= 1 / 1.30 * 0.9
    assert 0.0 <= s["fragmentation"] < 1.0
    assert a.check() == []
    a.close()


def test_64mib_value_round_trip(tmp_path):
    a = Arena(str(tmp_path / "big.arena"), 160 * MiB)
    value = random.Random(1).randbytes(64 * MiB)
    off = a.set(0, b"blob", value)
    assert a.value_len(off) == 64 * MiB
    assert a.view(off) == value
    r = a.reserve(64 * MiB, 8)
    a.slot(r)[:] = value[::-1]
    a.commit(r, 0, b"blob2")
    assert a.view(a.lookup(0, b"blob2")) == value[::-1]
    assert a.value_bytes(off) == value
    assert a.check() == []
    a.close()


# ---------------------------------------------------------------- model-based test

class ArenaModel(RuleBasedStateMachine):
    """Random operation sequences against a dict model: reads are byte-exact, every
    structure is consistent after each step, and the accounting is exact."""

    KEYS = [b"a", b"b", b"c", b"key:1", b"k" * 40, b"x" * 100]
    SIZES = [0, 1, 63, 64, 100, 1000, 5000, 60_000, 300_000]

    def __init__(self):
        super().__init__()
        self.dir = tmp_dir_factory()
        self.arena = None

    @initialize(policy=st.sampled_from(["noeviction", "allkeys-lru", "volatile-lru", "allkeys-random"]),
                maxmemory=st.sampled_from([0, 700_000]))
    def setup(self, policy, maxmemory):
        self.arena = Arena(os.path.join(self.dir, "model.arena"), 4 * MiB, databases=2, reset=True)
        self.arena.policy = policy
        self.arena.maxmemory = maxmemory
        self.model = {}            # (db, key) -> [value, expire_at]
        self.pins = []             # (off, view, the bytes the view must keep showing)
        self.reservations = []
        self.evicted = 0
        self.overwrites = 0
        self.counter = 0

    def teardown(self):
        if self.arena is not None:
            self.arena.close()
            os.unlink(os.path.join(self.dir, "model.arena"))
        os.rmdir(self.dir)

    def value(self, size):
        self.counter += 1
        return random.Random(self.counter).randbytes(size)

    @staticmethod
    def expiry(kind):
        return {"none": -1, "past": now_ms() - 1000, "future": now_ms() + 10_000_000}[kind]

    def sync(self):
        """Reconcile the model with evictions and lazy expiry, checking what is left.
        Making room for an overwrite may evict the key's own old version (it can be
        the LRU tail): one eviction more than the keys that went missing."""
        evicted_before, self.evicted = self.evicted, self.arena.stats()["evicted_keys"]
        overwrites, self.overwrites = self.overwrites, 0
        missing, past_missing = 0, 0
        for (db, key), (value, at) in list(self.model.items()):
            off = self.arena.lookup(db, key, False, False)
            expired = at != -1 and at < now_ms()
            if expired:
                assert off == 0
                past_missing += 1
                del self.model[(db, key)]
            elif off == 0:
                assert self.arena.policy != "noeviction", key
                assert self.arena.policy != "volatile-lru" or at != -1
                missing += 1
                del self.model[(db, key)]
            else:
                assert self.arena.value_bytes(off) == value
                assert self.arena.expire_at(off) == at
        assert missing <= self.evicted - evicted_before <= missing + past_missing + overwrites

    def put(self, db, key, value, at, keep_ttl):
        old = self.model.get((db, key))
        self.overwrites += old is not None
        try:
            self.arena.set(db, key, value, expire_at=at, keep_ttl=keep_ttl)
        except OutOfMemory:
            return
        if keep_ttl and old is not None and not (old[1] != -1 and old[1] < now_ms()):
            at = old[1]
        self.model[(db, key)] = [value, at]

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS), size=st.sampled_from(SIZES),
          ttl=st.sampled_from(["none", "none", "future", "past"]), keep_ttl=st.booleans())
    def set(self, db, key, size, ttl, keep_ttl):
        self.put(db, key, self.value(size), self.expiry(ttl), keep_ttl=keep_ttl)

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS))
    def lookup(self, db, key):
        off = self.arena.lookup(db, key)
        entry = self.model.get((db, key))
        if entry is None or (entry[1] != -1 and entry[1] < now_ms()):
            assert off == 0
            self.model.pop((db, key), None)
        elif off:                                   # 0: evicted meanwhile, sync() accounts for it
            assert bytes(self.arena.view(off)) == entry[0]

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS))
    def delete(self, db, key):
        self.arena.delete(db, key)
        self.model.pop((db, key), None)

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS), ttl=st.sampled_from(["none", "future", "past"]))
    def set_expire(self, db, key, ttl):
        entry = self.arena.find(db, key, False, False)
        if entry is not None:
            at = self.expiry(ttl)
            self.arena.set_expire(entry, at)
            self.model[(db, key)][1] = at

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS), size=st.sampled_from([0, 1, 70, 3000]))
    def append(self, db, key, size):
        data = self.value(size)
        off = self.arena.lookup(db, key, False, False)
        entry = self.model.get((db, key)) if off else None
        try:
            n = self.arena.append(db, key, data)
        except OutOfMemory:
            return
        if entry is None:
            self.model[(db, key)] = [data, -1]
        else:
            entry[0] += data
        assert n == len(self.model[(db, key)][0])

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS), offset=st.sampled_from([0, 5, 100, 2000]),
          size=st.sampled_from([0, 1, 50]))
    def setrange(self, db, key, offset, size):
        data = self.value(size)
        off = self.arena.lookup(db, key, False, False)
        entry = self.model.get((db, key)) if off else None
        try:
            n = self.arena.setrange(db, key, offset, data)
        except OutOfMemory:
            return
        if entry is None:
            if not data:
                assert n == 0
                return
            entry = self.model[(db, key)] = [b"", -1]
        if data:
            v = entry[0].ljust(offset, b"\0")
            entry[0] = v[:offset] + data + v[offset + len(data):]
        assert n == len(entry[0])

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS), dstdb=st.integers(0, 1),
          dst=st.sampled_from(KEYS), replace=st.booleans())
    def copy(self, db, key, dstdb, dst, replace):
        src_off = self.arena.lookup(db, key, False, False)
        dst_off = self.arena.lookup(dstdb, dst, False, False)
        self.overwrites += bool(dst_off)
        try:
            ok = self.arena.copy(db, key, dstdb, dst, replace)
        except OutOfMemory:
            return
        assert ok == bool(src_off and (replace or not dst_off))
        if ok:
            self.model[(dstdb, dst)] = list(self.model[(db, key)])

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS), dstdb=st.integers(0, 1), dst=st.sampled_from(KEYS))
    def rename(self, db, key, dstdb, dst):
        src_off = self.arena.lookup(db, key, False, False)
        self.overwrites += (dstdb, dst) in self.model
        try:
            ok = self.arena.rename(db, key, dstdb, dst)
        except OutOfMemory:
            return
        assert ok == bool(src_off)
        if ok:
            self.model[(dstdb, dst)] = self.model.pop((db, key))

    @rule(db=st.integers(0, 1), key=st.sampled_from(KEYS))
    def pin(self, db, key):
        off = self.arena.lookup(db, key, False, False)
        if off:
            self.arena.pin(off)
            # what a reply in flight holds: a view taken now must keep showing these bytes
            self.pins.append((off, self.arena.view(off), self.arena.value_bytes(off)))

    @precondition(lambda self: self.pins)
    @rule(data=st.data())
    def unpin(self, data):
        off, view, value = self.pins.pop(data.draw(st.integers(0, len(self.pins) - 1)))
        assert bytes(view) == value
        self.arena.unpin(off)

    @rule(size=st.sampled_from([0, 100, 40_000]), key=st.sampled_from(KEYS), commit=st.booleans(),
          db=st.integers(0, 1))
    def reserve(self, size, key, commit, db):
        try:
            off = self.arena.reserve(size, len(key))
        except OutOfMemory:
            return
        value = self.value(size)
        self.arena.slot(off)[:] = value
        if commit:
            self.overwrites += (db, key) in self.model
            self.arena.commit(off, db, key)
            self.model[(db, key)] = [value, -1]
        else:
            self.reservations.append(off)

    @precondition(lambda self: self.reservations)
    @rule()
    def release(self):
        self.arena.release(self.reservations.pop())

    @rule(db=st.integers(0, 1))
    def flushdb(self, db):
        self.arena.flushdb(db)
        self.model = {k: v for k, v in self.model.items() if k[0] != db}

    @rule()
    def swapdb(self):
        self.arena.swapdb(0, 1)
        self.model = {(1 - db, k): v for (db, k), v in self.model.items()}

    @rule()
    def expire_cycle(self):
        self.arena.expire_cycle(50)

    @invariant()
    def consistent(self):
        if self.arena is None:
            return
        self.sync()
        assert self.arena.check() == []
        for _, view, value in self.pins:
            assert bytes(view) == value
        s = self.arena.stats()
        assert s["entries"] == len(self.model)
        assert s["used_memory_dataset"] == sum(len(k) + len(v[0]) for (_, k), v in self.model.items())
        assert s["reserved"] == len(self.reservations)
        assert s["pinned"] == len({off for off, _, _ in self.pins})
        for db in (0, 1):
            assert self.arena.dbsize(db) == sum(1 for d, _ in self.model if d == db)
            assert self.arena.db_expires(db) == sum(1 for (d, _), v in self.model.items() if d == db and v[1] != -1)
        if self.arena.maxmemory:
            assert s["heap_used"] <= self.arena.maxmemory
        # Bounded fragmentation: check() refuses two free blocks side by side, and with
        # nothing allocated the whole heap is one free block again once the quick lists
        # have merged back.
        if s["heap_used"] == 0:
            self.arena.merge_quick_lists()
            s = self.arena.stats()
            assert s["largest_free"] == s["free_bytes"] == s["heap_size"]
            assert s["fragmentation"] == 0.0


def tmp_dir_factory():
    import tempfile
    return tempfile.mkdtemp(prefix="arena-model-")


ArenaModel.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
test_arena_model = ArenaModel.TestCase
