"""Unit tests for the arena's tenants (cxlredis._store): namespaces, quotas, the
eviction rule under quota and arena-wide pressure, metering, restart and drop."""
import os
import random
import shutil
import tempfile
import time

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from cxlredis._store import (
    DEFAULT_TENANT,
    MAX_TENANTS,
    TYPE_HASH,
    Arena,
    ArenaError,
    Namespace,
    OutOfMemory,
    TenantError,
    now_ms,
)

from arena_files import crash_copy, peek, poke

MiB = 1 << 20
VALUE = 10_000            # the value size of fill(); every such entry takes one block of `blk` bytes
# superblock layout (version 2): the tenant metadata slots follow the 64 tenant slots
SB_TMETA = 15896
TMETA_BYTES = 256
TMETA_DATASET = 16
TMETA_NAME = 72
SB_TENANT_BITS = SB_TMETA + 64 * TMETA_BYTES

KEYED_AND_KEYSPACE_METHODS = (
    "lookup", "value_len", "view", "value_bytes", "entry_type", "expire_at", "idle_ms", "generation",
    "key_generation", "block_size", "lfu_counter", "pin", "unpin", "set", "reserve", "slot", "commit",
    "release", "append", "setrange", "set_expire", "delete", "copy", "rename", "dbsize", "db_expires",
    "flushdb", "flushall", "swapdb", "scan", "keys", "random_key", "stats", "databases", "policy",
    "add_command", "add_bytes_in", "add_bytes_out", "tenant",
)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "tenants.arena")


@pytest.fixture
def arena(path):
    a = Arena(path, 8 * MiB, databases=4)
    yield a
    a.close()


def tenant(a, name, **kw):
    return a.namespace(a.create_tenant(name, **kw))


def fill(ks, prefix, n, size=VALUE, **kw):
    return [ks.set(0, b"%s:%d" % (prefix, i), b"x" * size, **kw) for i in range(n)]


def names(prefix, n):
    return [b"%s:%d" % (prefix, i) for i in range(n)]


def present(ks, keys, db=0):
    return [k for k in keys if ks.lookup(db, k, False, False)]


def blk(ks):
    """Bytes of one fill() entry's block."""
    off = ks.set(0, b"probe", b"x" * VALUE)
    size = ks.block_size(off)
    ks.delete(0, b"probe")
    return size


def snapshot(ks, dbs=(0, 1)):
    """Everything a keyspace shows about its keys."""
    out = {}
    for db in dbs:
        for k in ks.keys(db, b"*"):
            off = ks.lookup(db, k, False, False)
            out[(db, k)] = (ks.value_bytes(off), ks.expire_at(off), ks.entry_type(off), ks.generation(off))
    return out


# ---------------------------------------------------------------- the tenant table

def test_default_tenant_and_the_tenant_table(arena):
    assert arena.tenant == 0 and DEFAULT_TENANT == "default" and MAX_TENANTS == 64
    assert [t["name"] for t in arena.tenants()] == ["default"]
    assert arena.tenant_id("default") == 0 and arena.tenant_id(b"default") == 0
    ta = arena.create_tenant("team-a", quota=MiB, policy="allkeys-lru")
    tb = arena.create_tenant(b"team-b")
    assert (ta, tb) == (1, 2)
    assert arena.tenant_id("team-a") == ta and arena.tenant_id(b"team-b") == tb
    assert arena.tenant_id("nobody") is None and arena.tenant_id("bad name") is None
    a, b = arena.namespace(ta), arena.namespace(tb)
    assert isinstance(a, Namespace) and a.arena is arena and a.tenant == ta and a.name == "team-a"
    assert (a.quota, a.policy, b.quota, b.policy) == (MiB, "allkeys-lru", 0, "noeviction")
    assert a.databases == arena.databases == 4
    info = {t["name"]: t for t in arena.tenants()}
    assert list(info) == ["default", "team-a", "team-b"] and arena.stats()["tenants"] == 3
    assert info["team-a"]["policy_inherited"] is False and info["team-b"]["policy_inherited"] is True
    arena.policy = "allkeys-lfu"                       # a tenant without its own policy follows the arena's
    assert b.policy == "allkeys-lfu" and a.policy == "allkeys-lru"
    arena.set_tenant_policy(ta, None)
    assert a.policy == "allkeys-lfu"
    arena.set_tenant_policy(tb, b"VOLATILE-TTL")
    assert b.policy == "volatile-ttl" and arena.tenant_stats(tb)["policy"] == "volatile-ttl"
    arena.set_tenant_quota(tb, 12345)
    assert b.quota == 12345 == arena.tenant_stats(tb)["quota"]
    assert arena.namespace(0).tenant == 0 and arena.namespace(0).name == "default"
    for name in (b"team-a", "default"):
        with pytest.raises(TenantError, match="already exists"):
            arena.create_tenant(name)
    for name in ("", "x" * 65, "has space", "tab\t", "caf\xe9", b"\x00"):
        with pytest.raises(ValueError, match="1 to 64 visible ASCII"):
            arena.create_tenant(name)
    assert arena.create_tenant("y" * 64) == 3
    with pytest.raises(ValueError, match="unknown maxmemory-policy"):
        arena.create_tenant("p", policy="sometimes-lru")
    with pytest.raises(ValueError):
        arena.create_tenant("q", quota=-1)
    with pytest.raises(ValueError):
        arena.set_tenant_quota(ta, -1)
    for bad in (-1, 64, 9, 1000):
        with pytest.raises(TenantError, match="no tenant"):
            arena.namespace(bad)
        with pytest.raises(TenantError):
            arena.tenant_stats(bad)
    with pytest.raises(TenantError, match="follows the arena's maxmemory-policy"):
        arena.set_tenant_policy(0, "allkeys-lru")
    with pytest.raises(TenantError, match="cannot be dropped"):
        arena.drop_tenant(0)
    with pytest.raises(TypeError):
        Namespace().lookup(0, b"k")                   # only Arena.namespace binds one
    assert arena.check() == []


def test_sixty_three_tenants_at_most(arena):
    ids = [arena.create_tenant("t%d" % i) for i in range(MAX_TENANTS - 1)]
    assert ids == list(range(1, MAX_TENANTS))
    with pytest.raises(TenantError, match="no free tenant slot"):
        arena.create_tenant("one-too-many")
    for i in ids:
        arena.namespace(i).set(0, b"k", b"%d" % i)
    assert [arena.namespace(i).value_bytes(arena.namespace(i).lookup(0, b"k")) for i in ids] == \
           [b"%d" % i for i in ids]
    arena.drop_tenant(17)
    assert arena.create_tenant("again") == 17
    assert arena.check() == []


def test_a_namespace_has_the_arenas_keyed_and_keyspace_api(arena):
    ns = tenant(arena, "a")
    for name in KEYED_AND_KEYSPACE_METHODS:
        assert hasattr(ns, name) and hasattr(arena, name), name


# ---------------------------------------------------------------- isolation

def three_keyspaces(arena):
    """The default tenant and two others, each holding the same key names in dbs 0 and 1."""
    a, b = tenant(arena, "a"), tenant(arena, "b")
    for ks, tag in ((arena, b"default"), (a, b"a"), (b, b"b")):
        for db in (0, 1):
            ks.set(db, b"k", b"%s-%d" % (tag, db))
            ks.set(db, b"other", b"o-" + tag, expire_at=now_ms() + 100_000)
    return arena, a, b


def reserve_commit(ks):
    off = ks.reserve(5, 8)
    ks.slot(off)[:] = b"slot!"
    ks.commit(off, 0, b"k")


KEYED_OPERATIONS = {
    "set": lambda ks: ks.set(0, b"k", b"new"),
    "set_keep_ttl": lambda ks: ks.set(0, b"other", b"new", keep_ttl=True),
    "set_hash_type": lambda ks: ks.set(0, b"k", b"h", type=TYPE_HASH),
    "append": lambda ks: ks.append(0, b"k", b"+more" * 100),
    "append_new_key": lambda ks: ks.append(0, b"fresh", b"x"),
    "setrange": lambda ks: ks.setrange(0, b"k", 3, b"XY"),
    "setrange_grow": lambda ks: ks.setrange(0, b"k", 5000, b"far"),
    "set_expire": lambda ks: ks.set_expire(ks.find(0, b"k"), now_ms() + 5000),
    "persist": lambda ks: ks.set_expire(ks.find(0, b"other"), -1),
    "delete": lambda ks: ks.delete(0, b"k"),
    "copy": lambda ks: ks.copy(0, b"k", 1, b"copied"),
    "copy_replace": lambda ks: ks.copy(0, b"k", 1, b"k", True),
    "rename": lambda ks: ks.rename(0, b"k", 0, b"renamed"),
    "rename_long": lambda ks: ks.rename(0, b"k", 1, b"r" * 100),
    "move": lambda ks: ks.rename(0, b"k", 1, b"k"),
    "reserve_commit": reserve_commit,
    "flushdb": lambda ks: ks.flushdb(0),
    "flushall": lambda ks: ks.flushall(),
    "lookup_touch": lambda ks: ks.lookup(0, b"k"),
}


@pytest.mark.parametrize("op", list(KEYED_OPERATIONS))
def test_identical_keys_are_independent(arena, op):
    """An operation through one keyspace changes that keyspace and nothing else."""
    keyspaces = three_keyspaces(arena)
    for actor in keyspaces:
        before = [snapshot(ks) for ks in keyspaces]
        usage = [arena.tenant_stats(ks.tenant)["used_bytes"] for ks in keyspaces]
        KEYED_OPERATIONS[op](actor)
        for i, ks in enumerate(keyspaces):
            if ks is not actor:
                assert snapshot(ks) == before[i], (op, actor.tenant, ks.tenant)
                assert arena.tenant_stats(ks.tenant)["used_bytes"] == usage[i]
            elif op != "lookup_touch":
                assert snapshot(ks) != before[i]
        assert arena.check() == []


def test_reads_see_only_the_callers_entry(arena):
    ks0, a, b = three_keyspaces(arena)
    offs = [ks.lookup(0, b"k") for ks in (ks0, a, b)]
    assert len(set(offs)) == 3
    assert [bytes(ks.view(off)) for ks, off in zip((ks0, a, b), offs)] == [b"default-0", b"a-0", b"b-0"]
    assert len({ks.key_generation(0, b"k") for ks in (ks0, a, b)}) == 3
    assert a.key_generation(0, b"k") == a.generation(offs[1])
    assert a.lookup(0, b"missing") == 0 and a.key_generation(0, b"missing") == 0
    a.delete(0, b"k")
    assert a.key_generation(0, b"k") == 0 and b.key_generation(0, b"k") == b.generation(offs[2])


def test_offsets_are_bound_to_their_tenant(arena):
    ks0, a, b = three_keyspaces(arena)
    off_b = b.lookup(0, b"k")
    res_b = b.reserve(10, 4)
    for call in (lambda: a.view(off_b), lambda: a.value_bytes(off_b), lambda: a.value_len(off_b),
                 lambda: a.entry_type(off_b), lambda: a.expire_at(off_b), lambda: a.generation(off_b),
                 lambda: a.idle_ms(off_b), lambda: a.block_size(off_b), lambda: a.lfu_counter(off_b),
                 lambda: a.pin(off_b), lambda: a.set_expire(b.find(0, b"k"), -1), lambda: a.slot(res_b),
                 lambda: a.release(res_b), lambda: ks0.namespace(0).view(off_b)):
        with pytest.raises(ValueError, match="is not an entry of tenant"):
            call()
    # a reservation is committed by the tenant that made it (its quota admitted it)
    for other in (a, ks0):
        with pytest.raises(ValueError, match=f"belongs to tenant {b.tenant}"):
            other.commit(res_b, 0, b"k")
    # the Arena, the administrator's handle, reaches any entry by offset (to unpin, say)
    b.pin(off_b)
    assert bytes(arena.view(off_b)) == b"b-0"
    arena.unpin(off_b)
    arena.release(res_b)
    assert arena.stats()["pinned"] == 0 and arena.check() == []


def test_keyspace_commands_see_only_their_tenant(arena):
    ks0, a, b = three_keyspaces(arena)
    a.set(0, b"only-a", b"v")
    a.set(2, b"db2", b"v", expire_at=now_ms() + 100_000)
    a.set(0, b"gone", b"v", expire_at=now_ms() - 1)
    assert sorted(a.keys(0, b"*")) == [b"k", b"only-a", b"other"]
    assert sorted(b.keys(0, b"*")) == sorted(ks0.keys(0, b"*")) == [b"k", b"other"]
    assert a.keys(0, b"only*") == [b"only-a"] and b.keys(0, b"only*") == []
    assert [a.dbsize(db) for db in range(4)] == [4, 2, 1, 0]      # the expired key is counted until deleted
    assert [b.dbsize(db) for db in range(4)] == [2, 2, 0, 0] == [ks0.dbsize(db) for db in range(4)]
    assert [a.db_expires(db) for db in range(4)] == [2, 1, 1, 0]
    assert [b.db_expires(db) for db in range(4)] == [1, 1, 0, 0]

    def full_scan(ks, db, **kw):
        cursor, seen = 0, []
        while True:
            cursor, keys = ks.scan(db, cursor, 3, **kw)
            seen += keys
            if cursor == 0:
                return sorted(seen)
    assert full_scan(a, 0) == [b"k", b"only-a", b"other"] and full_scan(b, 0) == [b"k", b"other"]
    assert full_scan(a, 0, match=b"o*") == [b"only-a", b"other"] and full_scan(b, 2) == []
    assert {a.random_key(2) for _ in range(20)} == {b"db2"} and b.random_key(2) is None
    assert {b.random_key(0) for _ in range(100)} == {b"k", b"other"}
    a.flushdb(0)
    assert a.dbsize(0) == 0 and a.dbsize(1) == 2 and b.dbsize(0) == 2 and ks0.dbsize(0) == 2
    a.flushall()
    assert [a.dbsize(db) for db in range(4)] == [0] * 4 and a.random_key(1) is None
    assert [b.dbsize(db) for db in range(4)] == [2, 2, 0, 0] == [ks0.dbsize(db) for db in range(4)]
    ks0.flushall()                                  # the Arena is the default tenant: its keys only
    assert ks0.dbsize(0) == 0 and b.dbsize(0) == 2
    assert arena.tenant_stats(a.tenant)["used_bytes"] == 0 and arena.check() == []


def test_swapdb_is_the_default_tenants_only(arena):
    ks0, a, _ = three_keyspaces(arena)
    with pytest.raises(TenantError, match="SWAPDB is not available in a tenant namespace"):
        a.swapdb(0, 1)
    arena.swapdb(0, 1)
    assert ks0.value_bytes(ks0.lookup(0, b"k")) == b"default-1"
    assert a.value_bytes(a.lookup(0, b"k")) == b"a-0"          # a tenant's dbs are its own
    arena.namespace(0).swapdb(0, 1)
    assert ks0.value_bytes(ks0.lookup(0, b"k")) == b"default-0"
    assert arena.check() == []


# ---------------------------------------------------------------- quotas

def test_quota_eviction_is_exact_lru_within_the_tenant(arena):
    arena.policy = "allkeys-lru"
    a, b = tenant(arena, "a", policy="allkeys-lru"), tenant(arena, "b", policy="allkeys-lru")
    size = blk(a)
    # the other tenants' entries are older than all of a's: a global LRU would take them first
    fill(arena, b"k", 5)
    fill(b, b"k", 5)
    arena.set_tenant_quota(a.tenant, 10 * size)
    fill(a, b"k", 10)
    for i in (0, 2, 4):                         # touched: now a's most recent
        assert a.lookup(0, b"k:%d" % i)
    a.set_expire(a.find(0, b"k:6"), now_ms() + 100_000)   # to the volatile list, touched
    fill(a, b"new", 3)
    assert set(names(b"k", 10)) - set(present(a, names(b"k", 10))) == {b"k:1", b"k:3", b"k:5"}
    assert present(arena, names(b"k", 5)) == names(b"k", 5) and present(b, names(b"k", 5)) == names(b"k", 5)
    assert [arena.tenant_stats(t)["evicted_keys"] for t in (0, a.tenant, b.tenant)] == [0, 3, 0]
    assert arena.stats()["evicted_keys"] == 3
    assert arena.tenant_stats(a.tenant)["used_bytes"] == 10 * size
    assert arena.check() == []


def test_noeviction_tenant_is_rejected_and_others_are_untouched(arena):
    a = tenant(arena, "a", policy="noeviction")
    b = tenant(arena, "b", policy="allkeys-lru", quota=10 * blk(arena))
    size = blk(a)
    arena.set_tenant_quota(a.tenant, 5 * size)
    fill(b, b"k", 10)
    fill(a, b"k", 5)
    with pytest.raises(OutOfMemory, match=rf"tenant 'a' \(quota {5 * size}, maxmemory-policy noeviction\)"):
        a.set(0, b"small", b"s")
    with pytest.raises(OutOfMemory):
        a.append(0, b"k:0", b"y" * VALUE)           # must move to a bigger block
    with pytest.raises(OutOfMemory):
        a.setrange(0, b"k:1", VALUE, b"z" * 100)
    with pytest.raises(OutOfMemory):
        a.copy(0, b"k:2", 0, b"copy")
    with pytest.raises(OutOfMemory):
        a.reserve(VALUE, 8)                         # not a rejected write: the command's is
    s = arena.tenant_stats(a.tenant)
    assert s["rejected_writes"] == 4 and s["evicted_keys"] == 0 and s["keys"] == 5
    assert s["used_bytes"] <= 5 * size
    assert present(a, names(b"k", 5)) == names(b"k", 5)
    assert present(b, names(b"k", 10)) == names(b"k", 10)
    assert arena.tenant_stats(b.tenant)["rejected_writes"] == 0
    # b at its quota evicts its own (allkeys-lru) and never a's
    fill(b, b"new", 2)
    assert present(b, names(b"k", 10)) == names(b"k", 10)[2:]
    assert present(a, names(b"k", 5)) == names(b"k", 5)
    assert arena.check() == []


def test_volatile_policy_tenant_without_volatile_keys_evicts_nothing(arena):
    a = tenant(arena, "a", policy="volatile-lru")
    size = blk(a)
    arena.set_tenant_quota(a.tenant, 4 * size)
    fill(a, b"p", 3)
    fill(a, b"v", 1, expire_at=now_ms() + 100_000)
    fill(a, b"new", 1)                              # the one volatile key goes
    assert present(a, [b"v:0"]) == [] and len(present(a, names(b"p", 3))) == 3
    with pytest.raises(OutOfMemory):
        fill(a, b"more", 1)
    s = arena.tenant_stats(a.tenant)
    assert (s["evicted_keys"], s["rejected_writes"], s["keys"]) == (1, 1, 4)
    assert arena.check() == []


def test_a_write_bigger_than_the_quota_evicts_nothing(arena):
    a = tenant(arena, "a", policy="allkeys-lru", quota=100_000)
    fill(a, b"k", 9)
    with pytest.raises(OutOfMemory):
        a.set(0, b"huge", b"x" * 100_001)
    with pytest.raises(OutOfMemory):
        a.reserve(200_000, 4)
    s = arena.tenant_stats(a.tenant)
    assert s["evicted_keys"] == 0 and s["keys"] == 9 and s["rejected_writes"] == 1
    a.set(0, b"fits", b"x" * 60_000)                # evicts just enough of its own
    assert s["used_bytes"] + 60_000 > 100_000 >= arena.tenant_stats(a.tenant)["used_bytes"]
    assert arena.check() == []


def test_reservations_and_pinned_zombies_count_against_the_quota(arena):
    a = tenant(arena, "a", policy="allkeys-lru")
    size = blk(a)
    arena.set_tenant_quota(a.tenant, 4 * size)
    r = a.reserve(VALUE, 8)                         # one upload in flight
    assert arena.tenant_stats(a.tenant)["used_bytes"] == size
    offs = fill(a, b"k", 3)
    a.pin(offs[0])
    a.delete(0, b"k:0")                             # a zombie: still on a's bill until unpinned
    assert arena.tenant_stats(a.tenant)["used_bytes"] == 4 * size
    fill(a, b"new", 1)                              # evicts k:1 (the reservation and zombie cannot go)
    assert present(a, [b"k:1", b"k:2"]) == [b"k:2"]
    assert arena.tenant_stats(a.tenant)["used_bytes"] == 4 * size
    a.unpin(offs[0])
    a.release(r)
    assert arena.tenant_stats(a.tenant)["used_bytes"] == 2 * size
    assert arena.check() == []


def test_lowering_a_quota_evicts_on_the_next_write(arena):
    a = tenant(arena, "a", policy="allkeys-lru")
    size = blk(a)
    fill(a, b"k", 10)
    arena.set_tenant_quota(a.tenant, 4 * size)
    assert arena.tenant_stats(a.tenant)["keys"] == 10         # nothing yet
    fill(a, b"new", 1)
    assert present(a, names(b"k", 10)) == names(b"k", 10)[7:]
    assert arena.tenant_stats(a.tenant)["used_bytes"] == 4 * size
    assert arena.check() == []


def test_append_growth_room_stays_within_the_quota(arena):
    a = tenant(arena, "a", policy="noeviction")
    a.set(0, b"s", b"x" * 40_000)
    arena.set_tenant_quota(a.tenant, arena.tenant_stats(a.tenant)["used_bytes"] + 50_000)
    # the greedy doubling (80 KB more) would exceed the quota: it falls back to the exact size
    assert a.append(0, b"s", b"y" * 1000) == 41_000
    s = arena.tenant_stats(a.tenant)
    assert s["used_bytes"] <= s["quota"] and s["rejected_writes"] == 0
    assert arena.check() == []


# ---------------------------------------------------------------- arena-wide pressure

def evicted_in_order(writer, watched, writes, prefix=b"w"):
    """Write `writes` fill() entries through writer; after each, which watched key went."""
    order = []
    for i in range(writes):
        writer.set(0, b"%s:%d" % (prefix, i), b"x" * VALUE)
        gone = [(ks.tenant, k) for ks, keys in watched for k in keys
                if (ks.tenant, k) not in order and not ks.lookup(0, k, False, False)]
        assert len(gone) == 1, (i, gone)
        order += gone
    return order


def test_global_pressure_takes_from_over_quota_tenants_first(arena):
    """Over-quota tenants give first, the largest overage first (re-ranked after every
    eviction), then tenants without a quota (the default one), and only then a tenant
    within its quota: the fullest."""
    arena.policy = "allkeys-lru"
    a = tenant(arena, "a", policy="allkeys-lru")
    c = tenant(arena, "c", policy="allkeys-lru")
    b = tenant(arena, "b", policy="allkeys-lru")
    size = blk(arena)
    fill(arena, b"d", 4)
    fill(a, b"k", 8)
    fill(c, b"k", 6)
    fill(b, b"k", 4)
    arena.set_tenant_quota(a.tenant, int(5.5 * size))      # 2.5 blocks over
    arena.set_tenant_quota(c.tenant, int(4.8 * size))      # 1.2 blocks over
    arena.set_tenant_quota(b.tenant, 20 * size)            # well within
    arena.maxmemory = arena.stats()["heap_used"]           # every new block needs one eviction
    A, C, D = a.tenant, c.tenant, 0
    order = evicted_in_order(b, [(arena, names(b"d", 4)), (a, names(b"k", 8)), (c, names(b"k", 6)),
                                 (b, names(b"k", 4))], 10)
    assert order == [(A, b"k:0"), (A, b"k:1"), (C, b"k:0"), (A, b"k:2"), (C, b"k:1"),
                     (D, b"d:0"), (D, b"d:1"), (D, b"d:2"), (D, b"d:3"),
                     (A, b"k:3")]                          # now all within quota: a is the fullest (5/5.5)
    assert present(b, names(b"k", 4)) == names(b"k", 4)
    assert [arena.tenant_stats(t)["evicted_keys"] for t in (D, A, C, b.tenant)] == [4, 4, 2, 0]
    assert arena.stats()["heap_used"] <= arena.maxmemory and arena.check() == []


def test_global_pressure_within_quotas_takes_the_fullest_and_spares_noeviction(arena):
    a = tenant(arena, "a", policy="allkeys-lru")
    b = tenant(arena, "b", policy="allkeys-lru")
    n = tenant(arena, "n", policy="noeviction")
    w = tenant(arena, "w", policy="allkeys-lru")
    size = blk(arena)
    for ks, count, quota in ((a, 9, 10), (b, 10, 20), (n, 5, 5), (w, 0, 10)):
        arena.set_tenant_quota(ks.tenant, quota * size)
        fill(ks, b"k", count)
    arena.maxmemory = arena.stats()["heap_used"]
    order = evicted_in_order(w, [(a, names(b"k", 9)), (b, names(b"k", 10)), (n, names(b"k", 5))], 3)
    assert order == [(a.tenant, b"k:0"), (a.tenant, b"k:1"), (a.tenant, b"k:2")]   # 0.9 > 0.5; n is full but noeviction
    assert present(n, names(b"k", 5)) == names(b"k", 5)
    # when no one else can give, the writer's own entries go (tier 3), never n's
    arena.set_tenant_policy(a.tenant, "noeviction")
    arena.set_tenant_policy(b.tenant, "noeviction")
    fill(w, b"more", 2)
    assert present(w, names(b"w", 3)) == [b"w:2"]
    arena.set_tenant_policy(w.tenant, "noeviction")
    with pytest.raises(OutOfMemory):
        fill(w, b"last", 1)
    assert arena.tenant_stats(w.tenant)["rejected_writes"] == 1
    assert present(n, names(b"k", 5)) == names(b"k", 5) and arena.check() == []


def test_pinned_entries_are_skipped_under_global_pressure(arena):
    arena.policy = "allkeys-lru"
    a = tenant(arena, "a", policy="allkeys-lru")
    offs = fill(a, b"k", 3)
    fill(arena, b"d", 2)
    arena.set_tenant_quota(a.tenant, blk(arena))            # two blocks over
    for off in offs:
        a.pin(off)
    arena.maxmemory = arena.stats()["heap_used"]
    arena.set(0, b"w", b"x" * VALUE)                        # a is over quota but all pinned: the default gives
    assert present(a, names(b"k", 3)) == names(b"k", 3) and present(arena, names(b"d", 2)) == [b"d:1"]
    for off in offs:
        a.unpin(off)
    assert arena.check() == []


# ---------------------------------------------------------------- metering

def test_counters_are_exact(arena):
    a, b = tenant(arena, "a"), tenant(arena, "b")
    a.set(0, b"k", b"v" * 10)
    assert a.lookup(0, b"k") and not a.lookup(0, b"nope") and a.lookup(0, b"k", stats=False)
    assert not b.lookup(0, b"k") and not arena.lookup(0, b"k")           # same name, other tenants: misses
    a.set(0, b"e1", b"x", expire_at=now_ms() - 1)
    assert a.lookup(0, b"e1") == 0                                         # a miss and an expiry
    a.set(0, b"e2", b"x", expire_at=now_ms() - 1)
    a.set(0, b"e3", b"x", expire_at=now_ms() - 1)
    b.set(0, b"e1", b"x", expire_at=now_ms() - 1)
    assert arena.expire_cycle(10_000) == 3
    a.set(2, b"e4", b"x", expire_at=now_ms() - 1)
    assert a.random_key(2) is None                                          # deletes e4 on the way
    assert a.append(0, b"k", b"abc") == 13
    assert a.setrange(0, b"k", 0, b"zz") == 13
    assert a.copy(0, b"k", 1, b"k2")
    assert a.rename(1, b"k2", 1, b"k3")
    r = a.reserve(100, 3)
    a.slot(r)[:] = b"r" * 100
    a.commit(r, 0, b"res")
    a.add_command()
    a.add_command(4)
    a.add_bytes_in(123)
    a.add_bytes_out(456)
    b.add_command()
    expected = {"keyspace_hits": 1, "keyspace_misses": 2, "expired_keys": 4, "evicted_keys": 0,
                "rejected_writes": 0, "bytes_written": 10 + 4 + 3 + 2 + 13 + 100, "commands": 5,
                "bytes_in": 123, "bytes_out": 456, "keys": 3, "expires": 0}
    s = arena.tenant_stats(a.tenant)
    assert {k: s[k] for k in expected} == expected
    assert s["dataset_bytes"] == 1 + 13 + 2 + 13 + 3 + 100 == a.stats()["dataset_bytes"]
    sb, s0 = arena.tenant_stats(b.tenant), arena.tenant_stats(0)
    assert (sb["keyspace_misses"], sb["expired_keys"], sb["commands"], sb["keys"]) == (1, 1, 1, 0)
    assert (s0["keyspace_misses"], s0["keys"], s0["bytes_written"]) == (1, 0, 0)
    total = arena.stats()
    assert total["keyspace_hits"] == 1 and total["keyspace_misses"] == 4 and total["expired_keys"] == 5
    assert total["used_memory_dataset"] == sum(t["dataset_bytes"] for t in arena.tenants())
    arena.set_tenant_quota(a.tenant, 1000)
    with pytest.raises(OutOfMemory):
        a.set(0, b"big", b"x" * 2000)
    assert arena.tenant_stats(a.tenant)["rejected_writes"] == 1
    arena.reset_stats()                              # CONFIG RESETSTAT: arena-wide and the default tenant's
    assert arena.tenant_stats(0)["keyspace_misses"] == 0 and arena.stats()["keyspace_misses"] == 0
    assert arena.tenant_stats(a.tenant)["keyspace_hits"] == 1
    arena.reset_tenant_stats(a.tenant)
    s = arena.tenant_stats(a.tenant)
    assert all(s[k] == 0 for k in ("keyspace_hits", "keyspace_misses", "expired_keys", "evicted_keys",
                                   "rejected_writes", "bytes_written", "commands", "bytes_in", "bytes_out"))
    assert s["keys"] == 3 and s["dataset_bytes"] == 132 and arena.tenant_stats(b.tenant)["commands"] == 1
    assert arena.check() == []


# ---------------------------------------------------------------- restart, drop

def build_tenants(arena):
    arena.policy = "allkeys-lru"
    a = tenant(arena, "team-a", quota=3 * MiB, policy="volatile-lru")
    b = tenant(arena, "team-b", quota=2 * MiB)
    data = {}
    for ks in (arena, a, b):
        for i in range(60):
            key, value = b"key:%d" % i, os.urandom(i * 37 + ks.tenant)
            db = i % 3
            ks.set(db, key, value, expire_at=now_ms() + 100_000 if i % 4 == 0 else -1)
            data[(ks.tenant, db, key)] = value
        ks.lookup(0, b"key:0")
        ks.lookup(0, b"absent")
        ks.add_command(7 + ks.tenant)
        ks.add_bytes_out(1000 + ks.tenant)
    a.delete(0, b"key:3")
    del data[(a.tenant, 0, b"key:3")]
    return data


def contents(arena):
    out = {}
    for t in arena.tenants():
        ks = arena.namespace(t["id"])
        for db in range(3):
            for k in ks.keys(db, b"*"):
                out[(t["id"], db, k)] = ks.value_bytes(ks.lookup(db, k, False, False))
    return out


def test_clean_restart_keeps_tenants_quotas_policies_counters_and_entries(path):
    arena = Arena(path, 8 * MiB, databases=4)
    data = build_tenants(arena)
    before = arena.tenants()
    arena.close()
    again = Arena(path, 8 * MiB, databases=4)
    again.policy = "allkeys-lru"                 # process configuration, not kept in the arena
    assert again.recovery == "clean"
    assert again.tenants() == before
    assert contents(again) == data
    assert again.namespace(1).policy == "volatile-lru" and again.namespace(2).quota == 2 * MiB
    assert again.tenant_id("team-b") == 2
    assert again.check() == []
    again.close()


def test_rebuilt_restart_keeps_tenants_and_recounts_keys_and_bytes(path, tmp_path):
    arena = Arena(path, 8 * MiB, databases=4)
    data = build_tenants(arena)
    a = arena.namespace(1)
    a.reserve(50_000, 8)                         # an upload the crash interrupts
    pinned = a.lookup(1, b"key:1")
    a.pin(pinned)
    a.delete(1, b"key:1")                        # a zombie the crash leaves behind
    del data[(1, 1, b"key:1")]
    before = arena.tenants()
    copy = crash_copy(path, tmp_path)
    arena.close()
    again = Arena(copy, 8 * MiB, databases=4)
    again.policy = "allkeys-lru"
    assert again.recovery == "rebuilt" and again.dropped_entries == 2
    after = again.tenants()
    for old, new in zip(before, after):
        if old["id"] == 1:                       # the reservation and zombie were on its bill
            old["used_bytes"] = new["used_bytes"]
        assert new == old
    assert contents(again) == data
    s = again.tenant_stats(1)
    assert s["used_bytes"] == sum(again.namespace(1).block_size(again.namespace(1).lookup(db, k, False, False))
                                  for (t, db, k) in data if t == 1)
    assert again.check() == []
    # and the tenants still work: quota eviction after the rebuild
    again.set_tenant_quota(2, again.tenant_stats(2)["used_bytes"])
    again.namespace(2).set(0, b"after", b"x" * 5000)
    assert again.tenant_stats(2)["evicted_keys"] >= 1 and again.check() == []
    again.close()


def test_rebuild_discards_a_tenant_whose_drop_was_interrupted(path, tmp_path):
    arena = Arena(path, 8 * MiB)
    a = tenant(arena, "a")
    table = arena.stats()["heap_used"]           # the tenant's per-db counter block
    b = tenant(arena, "b")
    size = blk(b)
    fill(a, b"k", 5)
    fill(b, b"k", 5)
    # what drop_tenant's first store leaves if the process dies right after it
    assert peek(path, SB_TMETA + TMETA_BYTES * a.tenant, "<Q") != 0
    assert peek(path, SB_TMETA + TMETA_BYTES * a.tenant + TMETA_NAME, "1s") == b"a"
    poke(path, SB_TMETA + TMETA_BYTES * a.tenant, "<Q", 0)
    copy = crash_copy(path, tmp_path)
    arena.close()
    again = Arena(copy, 8 * MiB)
    assert again.recovery == "rebuilt" and again.dropped_entries == 5
    assert [t["name"] for t in again.tenants()] == ["default", "b"]
    assert again.tenant_stats(b.tenant)["keys"] == 5 == again.stats()["entries"]
    assert present(again.namespace(b.tenant), names(b"k", 5)) == names(b"k", 5)
    assert again.stats()["heap_used"] == table + 5 * size     # a's entries and table went back
    assert again.check() == []
    assert again.create_tenant("a2") == a.tenant and again.namespace(a.tenant).dbsize(0) == 0
    assert again.check() == []
    again.close()


def test_active_expiry_drops_only_what_is_due_and_bills_its_tenant(arena):
    a, b = tenant(arena, "a"), tenant(arena, "b")
    soon, later = now_ms() + 30, now_ms() + 100_000
    for i in range(5):
        a.set(0, b"k:%d" % i, b"a", expire_at=soon)
        b.set(0, b"k:%d" % i, b"b", expire_at=later if i % 2 else -1)
        arena.set(0, b"k:%d" % i, b"default", expire_at=soon if i < 2 else later)
    time.sleep(0.06)
    assert arena.expire_cycle(10_000) == 7
    assert a.dbsize(0) == 0 and b.dbsize(0) == 5 and arena.dbsize(0) == 3
    assert [arena.tenant_stats(t)["expired_keys"] for t in (0, a.tenant, b.tenant)] == [2, 5, 0]
    assert arena.stats()["expired_keys"] == 7 and b.db_expires(0) == 2
    assert arena.check() == []


def test_drop_tenant_frees_everything(arena):
    empty = arena.stats()["heap_used"]
    a = tenant(arena, "a")
    table = arena.stats()["heap_used"] - empty     # a tenant's per-db counter block
    b = tenant(arena, "b")
    fill(a, b"k", 20)
    a.set(1, b"x", b"y", expire_at=now_ms() + 100_000)
    fill(b, b"k", 2)
    assert arena.drop_tenant(a.tenant) == 21
    assert arena.tenant_id("a") is None and [t["name"] for t in arena.tenants()] == ["default", "b"]
    with pytest.raises(TenantError, match="was dropped"):
        a.lookup(0, b"k:0")
    with pytest.raises(TenantError):
        arena.namespace(1)
    with pytest.raises(TenantError):
        arena.drop_tenant(1)
    assert present(b, names(b"k", 2)) == names(b"k", 2)
    assert arena.stats()["heap_used"] == empty + table + 2 * blk(b)
    assert arena.check() == []
    # the slot is reused by a new, empty tenant; the old namespace never reaches it
    c = tenant(arena, "c")
    assert c.tenant == 1 and c.dbsize(0) == 0 and c.keys(0, b"*") == [] and c.lookup(0, b"k:0") == 0
    assert arena.tenant_stats(1)["keyspace_misses"] == 1 and arena.tenant_stats(1)["name"] == "c"
    with pytest.raises(TenantError, match="was dropped"):
        a.dbsize(0)
    arena.drop_tenant(c.tenant)
    arena.drop_tenant(b.tenant)
    assert arena.stats()["heap_used"] == empty and arena.check() == []


def test_dropping_a_tenant_with_pins_and_reservations(arena):
    empty = arena.stats()["heap_used"]
    a = tenant(arena, "a")
    off = a.set(0, b"sent", b"x" * VALUE)
    a.pin(off)
    view = a.view(off)
    r = a.reserve(VALUE, 8)
    arena.drop_tenant(a.tenant)
    assert bytes(view) == b"x" * VALUE              # a reply in flight keeps its bytes
    assert arena.stats()["zombies"] == 1 and arena.check() == []
    assert arena.create_tenant("b") == 2            # slot 1 is still paying for the zombie
    with pytest.raises(ValueError, match="belongs to tenant 1"):
        arena.commit(r, 0, b"k")
    arena.release(r)
    arena.unpin(off)                                # the Arena reaches any tenant's entry
    assert arena.create_tenant("c") == 1
    arena.drop_tenant(1)
    arena.drop_tenant(2)
    assert arena.stats()["heap_used"] == empty and arena.check() == []


def test_namespace_of_a_closed_arena(path):
    arena = Arena(path, 8 * MiB)
    a = tenant(arena, "a")
    arena.close()
    with pytest.raises(ArenaError, match="closed"):
        a.lookup(0, b"k")
    with pytest.raises(ArenaError):
        arena.tenants()


def test_check_reports_tenant_accounting_corruption(path):
    arena = Arena(path, 8 * MiB)
    a = tenant(arena, "a")
    a.set(0, b"k", b"v")
    where = SB_TMETA + TMETA_BYTES * a.tenant + TMETA_DATASET
    assert peek(path, where, "<Q") == 2
    poke(path, where, "<Q", 7)
    assert any("tenant 1: dataset counter 7, recounted 2" in p for p in arena.check())
    poke(path, where, "<Q", 2)
    bits = peek(path, SB_TENANT_BITS, "<Q")
    assert bits == 2
    poke(path, SB_TENANT_BITS, "<Q", 0)
    assert any("existence bit" in p for p in arena.check())
    poke(path, SB_TENANT_BITS, "<Q", bits)
    assert arena.check() == []
    arena.close()


# ---------------------------------------------------------------- model-based test

class TenantModel(RuleBasedStateMachine):
    """Random operations by the default tenant and two tenants with quotas, against one
    dict model each: reads are byte-exact, no operation of one tenant ever changes another
    tenant's keys, values or bill, a quota tenant's blocks never exceed its quota, and every
    structure is consistent after each step."""

    KEYS = [b"a", b"b", b"key:1", b"k" * 40]
    SIZES = [0, 1, 100, 5000, 30_000, 70_000]
    WHO = st.integers(0, 2)

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="tenant-model-")
        self.arena = None

    @initialize(policy_a=st.sampled_from(["allkeys-lru", "volatile-lru", "noeviction", "allkeys-random"]),
                policy_b=st.sampled_from(["allkeys-lru", "allkeys-lfu", "volatile-ttl"]),
                quota_a=st.sampled_from([150_000, 300_000]))
    def setup(self, policy_a, policy_b, quota_a):
        self.arena = Arena(os.path.join(self.dir, "model.arena"), 8 * MiB, databases=2, reset=True)
        self.arena.policy = "allkeys-lru"
        a = self.arena.create_tenant("a", quota=quota_a, policy=policy_a)
        b = self.arena.create_tenant("b", quota=250_000, policy=policy_b)
        self.spaces = [self.arena, self.arena.namespace(a), self.arena.namespace(b)]
        self.models = [{}, {}, {}]          # per keyspace: (db, key) -> [value, expire_at]
        self.pins = [[], [], []]            # per keyspace: (off, view, bytes the view must keep showing)
        self.reservations = [[], [], []]
        self.evicted = [0, 0, 0]
        self.overwrites = [0, 0, 0]
        self.counter = 0

    def teardown(self):
        if self.arena is not None:
            self.arena.close()
        shutil.rmtree(self.dir)

    def value(self, size):
        self.counter += 1
        return random.Random(self.counter).randbytes(size)

    @staticmethod
    def expiry(kind):
        return {"none": -1, "past": now_ms() - 1000, "future": now_ms() + 10_000_000}[kind]

    def act(self, who, operation):
        """Run one operation of keyspace `who`; the other tenants must not notice."""
        others = [i for i in range(3) if i != who]
        before = [(snapshot(self.spaces[i]), self.arena.tenant_stats(self.spaces[i].tenant)) for i in others]
        try:
            return operation(self.spaces[who])
        finally:
            for i, (keys, stats) in zip(others, before):
                assert snapshot(self.spaces[i]) == keys
                now = self.arena.tenant_stats(self.spaces[i].tenant)
                for field in ("used_bytes", "keys", "dataset_bytes", "evicted_keys", "expired_keys"):
                    assert now[field] == stats[field], (field, who, i)

    def sync(self, who):
        """Reconcile one model with its tenant's evictions and lazy expiry, checking what is
        left (making room for an overwrite may evict the key's own old version)."""
        ks, model = self.spaces[who], self.models[who]
        evicted = self.arena.tenant_stats(ks.tenant)["evicted_keys"]
        evicted_before, self.evicted[who] = self.evicted[who], evicted
        overwrites, self.overwrites[who] = self.overwrites[who], 0
        missing = past_missing = 0
        for (db, key), (value, at) in list(model.items()):
            off = ks.lookup(db, key, False, False)
            if at != -1 and at < now_ms():
                assert off == 0
                past_missing += 1
                del model[(db, key)]
            elif off == 0:
                assert ks.policy != "noeviction", key
                assert not ks.policy.startswith("volatile") or at != -1
                missing += 1
                del model[(db, key)]
            else:
                assert ks.value_bytes(off) == value
                assert ks.expire_at(off) == at
        assert missing <= evicted - evicted_before <= missing + past_missing + overwrites

    def put(self, ks, who, db, key, value, at, keep_ttl):
        model = self.models[who]
        old = model.get((db, key))
        self.overwrites[who] += old is not None
        try:
            ks.set(db, key, value, expire_at=at, keep_ttl=keep_ttl)
        except OutOfMemory:
            return
        if keep_ttl and old is not None and not (old[1] != -1 and old[1] < now_ms()):
            at = old[1]
        model[(db, key)] = [value, at]

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS), size=st.sampled_from(SIZES),
          ttl=st.sampled_from(["none", "none", "future", "past"]), keep_ttl=st.booleans())
    def set(self, who, db, key, size, ttl, keep_ttl):
        value, at = self.value(size), self.expiry(ttl)
        self.act(who, lambda ks: self.put(ks, who, db, key, value, at, keep_ttl))

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS))
    def lookup(self, who, db, key):
        off = self.act(who, lambda ks: ks.lookup(db, key))
        entry = self.models[who].get((db, key))
        if entry is None or (entry[1] != -1 and entry[1] < now_ms()):
            assert off == 0
            self.models[who].pop((db, key), None)
        elif off:
            assert bytes(self.spaces[who].view(off)) == entry[0]

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS))
    def delete(self, who, db, key):
        self.act(who, lambda ks: ks.delete(db, key))
        self.models[who].pop((db, key), None)

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS), ttl=st.sampled_from(["none", "future", "past"]))
    def set_expire(self, who, db, key, ttl):
        def op(ks):
            entry = ks.find(db, key, False, False)
            if entry is not None:
                at = self.expiry(ttl)
                ks.set_expire(entry, at)
                self.models[who][(db, key)][1] = at
        self.act(who, op)

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS), size=st.sampled_from([0, 1, 70, 3000]))
    def append(self, who, db, key, size):
        data = self.value(size)

        def op(ks):
            off = ks.lookup(db, key, False, False)
            entry = self.models[who].get((db, key)) if off else None
            try:
                n = ks.append(db, key, data)
            except OutOfMemory:
                return
            if entry is None:
                self.models[who][(db, key)] = [data, -1]
            else:
                entry[0] += data
            assert n == len(self.models[who][(db, key)][0])
        self.act(who, op)

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS), offset=st.sampled_from([0, 5, 2000]),
          size=st.sampled_from([0, 1, 50]))
    def setrange(self, who, db, key, offset, size):
        data = self.value(size)

        def op(ks):
            off = ks.lookup(db, key, False, False)
            entry = self.models[who].get((db, key)) if off else None
            try:
                n = ks.setrange(db, key, offset, data)
            except OutOfMemory:
                return
            if entry is None:
                if not data:
                    assert n == 0
                    return
                entry = self.models[who][(db, key)] = [b"", -1]
            if data:
                v = entry[0].ljust(offset, b"\0")
                entry[0] = v[:offset] + data + v[offset + len(data):]
            assert n == len(entry[0])
        self.act(who, op)

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS), dstdb=st.integers(0, 1),
          dst=st.sampled_from(KEYS), replace=st.booleans())
    def copy(self, who, db, key, dstdb, dst, replace):
        def op(ks):
            src_off = ks.lookup(db, key, False, False)
            dst_off = ks.lookup(dstdb, dst, False, False)
            self.overwrites[who] += bool(dst_off)
            try:
                ok = ks.copy(db, key, dstdb, dst, replace)
            except OutOfMemory:
                return
            assert ok == bool(src_off and (replace or not dst_off))
            if ok:
                self.models[who][(dstdb, dst)] = list(self.models[who][(db, key)])
        self.act(who, op)

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS), dstdb=st.integers(0, 1),
          dst=st.sampled_from(KEYS))
    def rename(self, who, db, key, dstdb, dst):
        def op(ks):
            src_off = ks.lookup(db, key, False, False)
            self.overwrites[who] += (dstdb, dst) in self.models[who]
            try:
                ok = ks.rename(db, key, dstdb, dst)
            except OutOfMemory:
                return
            assert ok == bool(src_off)
            if ok:
                self.models[who][(dstdb, dst)] = self.models[who].pop((db, key))
        self.act(who, op)

    @rule(who=WHO, db=st.integers(0, 1), key=st.sampled_from(KEYS))
    def pin(self, who, db, key):
        def op(ks):
            off = ks.lookup(db, key, False, False)
            if off:
                ks.pin(off)
                self.pins[who].append((off, ks.view(off), ks.value_bytes(off)))
        self.act(who, op)

    @precondition(lambda self: any(self.pins))
    @rule(data=st.data())
    def unpin(self, data):
        who = data.draw(st.sampled_from([i for i in range(3) if self.pins[i]]))
        off, view, value = self.pins[who].pop(data.draw(st.integers(0, len(self.pins[who]) - 1)))
        assert bytes(view) == value
        self.act(who, lambda ks: ks.unpin(off))

    @rule(who=WHO, size=st.sampled_from([0, 100, 40_000]), key=st.sampled_from(KEYS), commit=st.booleans(),
          db=st.integers(0, 1))
    def reserve(self, who, size, key, commit, db):
        value = self.value(size)

        def op(ks):
            try:
                off = ks.reserve(size, len(key))
            except OutOfMemory:
                return
            ks.slot(off)[:] = value
            if commit:
                self.overwrites[who] += (db, key) in self.models[who]
                ks.commit(off, db, key)
                self.models[who][(db, key)] = [value, -1]
            else:
                self.reservations[who].append(off)
        self.act(who, op)

    @precondition(lambda self: any(self.reservations))
    @rule(data=st.data())
    def release(self, data):
        who = data.draw(st.sampled_from([i for i in range(3) if self.reservations[i]]))
        off = self.reservations[who].pop()
        self.act(who, lambda ks: ks.release(off))

    @rule(who=WHO, db=st.integers(0, 1))
    def flushdb(self, who, db):
        self.act(who, lambda ks: ks.flushdb(db))
        self.models[who] = {k: v for k, v in self.models[who].items() if k[0] != db}

    @rule(who=WHO)
    def flushall(self, who):
        self.act(who, lambda ks: ks.flushall())
        self.models[who] = {}

    @rule()
    def expire_cycle(self):
        self.arena.expire_cycle(50)

    @invariant()
    def consistent(self):
        if self.arena is None:
            return
        for who in range(3):
            self.sync(who)
        assert self.arena.check() == []
        for who, ks in enumerate(self.spaces):
            model = self.models[who]
            s = self.arena.tenant_stats(ks.tenant)
            assert s["keys"] == len(model)
            assert s["dataset_bytes"] == sum(len(k) + len(v[0]) for (_, k), v in model.items())
            for db in (0, 1):
                assert ks.dbsize(db) == sum(1 for d, _ in model if d == db)
                assert ks.db_expires(db) == sum(1 for (d, _), v in model.items() if d == db and v[1] != -1)
            if s["quota"]:
                assert s["used_bytes"] <= s["quota"]
            for _, view, value in self.pins[who]:
                assert bytes(view) == value
        assert self.arena.stats()["pinned"] == len({off for pins in self.pins for off, _, _ in pins})


TenantModel.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])
test_tenant_model = TenantModel.TestCase
