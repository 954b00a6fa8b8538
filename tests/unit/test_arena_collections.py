"""Lists, sets and sorted sets in the arena (cxlredis._store.Collection), below the
commands: random changes against Python models with the arena's full consistency check
after each transaction; aborted transactions; warm restart; kill -9 in the middle of
transactions (a child process, killed at random moments, then the rebuild); COPY and
RENAME; tenants' quotas and eviction taking collections whole."""
import math
import os
import random
import signal
import struct
import time

import pytest

from cxlredis._store import (
    ENCODING_HASHTABLE,
    ENCODING_INTSET,
    ENCODING_LISTPACK,
    ENCODING_SKIPLIST,
    TYPE_LIST,
    TYPE_SET,
    TYPE_STRING,
    TYPE_ZSET,
    Arena,
    OutOfMemory,
    WrongType,
)

MiB = 1 << 20


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "collections.arena")


@pytest.fixture
def arena(path):
    a = Arena(path, 32 * MiB, databases=4)
    yield a
    if not a.closed:
        a.close()


def value(rng):
    """Element sizes across the inline limit and into blobs."""
    return os.urandom(rng.choice((0, 1, 7, 30, 200, 376, 380, 900, 5000, 70_000)))


def list_of(a, key, db=0):
    coll = a.collection(db, key, TYPE_LIST)
    return coll.list_range(0, len(coll)) if coll is not None else []


def zset_of(a, key):
    coll = a.collection(0, key, TYPE_ZSET)
    return coll.zset_range(0, len(coll)) if coll is not None else []


def zset_order(model):
    return sorted(model.items(), key=lambda item: (item[1], item[0]))


# ---------------------------------------------------------------- against models

def test_list_against_a_model(arena):
    rng = random.Random(1)
    model = []
    for round_ in range(120):
        abort = rng.random() < 0.15
        before = list(model)
        coll = arena.write_collection(0, b"l", TYPE_LIST)
        for _ in range(rng.randrange(1, 40)):
            r = rng.random()
            if r < 0.5 or not model:
                at = rng.choice((0, len(model), rng.randrange(len(model) + 1)))
                v = value(rng)
                coll.list_insert(at, v)
                model.insert(at, v)
            elif r < 0.7:
                at = rng.randrange(len(model))
                v = value(rng)
                coll.list_set(at, v)
                model[at] = v
            else:
                start = rng.randrange(len(model))
                stop = min(len(model), start + rng.choice((1, 1, 3, 50)))
                coll.delete_range(start, stop)
                del model[start:stop]
            assert len(coll) == len(model)
        if abort:
            coll.abort()
            model = before
        else:
            coll.commit()
        assert list_of(arena, b"l") == model
        assert arena.check() == []
    coll = arena.collection(0, b"l", TYPE_LIST)
    if model:
        assert coll.list_get(-1) == model[-1] and coll.list_get(len(model)) is None
        assert [v for _, v in coll.list_walk(len(model) - 1, reverse=True)] == model[::-1]


def test_set_against_a_model_through_its_encodings(arena):
    rng = random.Random(2)
    model = set()
    for round_ in range(80):
        with arena.write_collection(0, b"s", TYPE_SET) as coll:
            for _ in range(rng.randrange(1, 60)):
                if rng.random() < 0.7:
                    member = (str(rng.randrange(-300, 300)).encode() if round_ < 40
                              else rng.choice((b"m%d" % rng.randrange(500), str(rng.randrange(99)).encode())))
                    assert coll.set_add(member, 512) == (member not in model)
                    model.add(member)
                elif model:
                    member = rng.choice(sorted(model))
                    assert coll.set_remove(member)
                    model.discard(member)
        coll = arena.collection(0, b"s", TYPE_SET)
        members = coll.set_members() if coll is not None else []
        assert sorted(members) == sorted(model)
        if coll is not None and coll.encoding == ENCODING_INTSET:
            assert members == sorted(members, key=int)      # Redis's intset order
        assert arena.check() == []
    assert arena.collection(0, b"s", TYPE_SET).encoding == ENCODING_HASHTABLE
    # SSCAN by hash: every member once over a whole walk, in small steps
    cursor, seen = 0, []
    while True:
        cursor, batch = arena.collection(0, b"s", TYPE_SET).set_scan(cursor, 7)
        seen += batch
        if cursor == 0:
            break
    assert sorted(seen) == sorted(model)


def test_sorted_set_against_a_model(arena):
    rng = random.Random(3)
    model = {}
    scores = (0.0, -0.0, 1.5, -1.5, 3.0, math.inf, -math.inf, 1e308, 5e-324, -2.0)
    for round_ in range(80):
        with arena.write_collection(0, b"z", TYPE_ZSET) as coll:
            for _ in range(rng.randrange(1, 50)):
                r = rng.random()
                member = b"m%d" % rng.randrange(300)
                if r < 0.6:
                    score = rng.choice(scores) if rng.random() < 0.3 else rng.uniform(-100, 100)
                    new = member not in model
                    assert coll.zset_put(member, score, 128, 64) == new
                    if new or model[member] != score:
                        model[member] = score
                elif r < 0.8:
                    assert coll.zset_remove(member) == (member in model)
                    model.pop(member, None)
                elif model:
                    ordered = zset_order(model)
                    start = rng.randrange(len(ordered))
                    stop = min(len(ordered), start + rng.randrange(1, 10))
                    assert coll.zset_delete_range(start, stop) == stop - start
                    for m, _ in ordered[start:stop]:
                        del model[m]
        got = zset_of(arena, b"z")
        assert [m for m, _ in got] == [m for m, _ in zset_order(model)]
        assert all(struct.pack("d", s) == struct.pack("d", model[m]) for m, s in got)
        coll = arena.collection(0, b"z", TYPE_ZSET)
        if coll is not None:
            for m, s in rng.sample(got, min(5, len(got))):
                assert coll.zset_rank(m) == got.index((m, s))
                assert coll.zset_seek_score(s) <= coll.zset_rank(m) < coll.zset_seek_score(s, exclusive=True)
        assert arena.check() == []


# ---------------------------------------------------------------- lifecycle

def test_collections_survive_a_clean_restart_and_keep_their_encodings(path):
    a = Arena(path, 32 * MiB)
    with a.write_collection(0, b"l", TYPE_LIST) as l:
        for i in range(3000):
            l.list_insert(len(l), b"%d" % i)
    with a.write_collection(0, b"s", TYPE_SET) as s:
        for i in range(10):
            s.set_add(b"%d" % i, 512)
    with a.write_collection(0, b"z", TYPE_ZSET) as z:
        for i in range(200):
            z.zset_put(b"m%d" % i, i / 7, 128, 64)
    a.close()
    a = Arena(path, 32 * MiB)
    assert a.recovery == "clean" and a.check() == []
    assert list_of(a, b"l") == [b"%d" % i for i in range(3000)]
    assert a.collection(0, b"s", TYPE_SET).encoding == ENCODING_INTSET
    assert a.collection(0, b"z", TYPE_ZSET).encoding == ENCODING_SKIPLIST
    assert zset_of(a, b"z")[:2] == [(b"m0", 0.0), (b"m1", 1 / 7)]
    a.close()


def _churn(path, seed, progress):
    """A child's loop: transactions on a list and a sorted set, forever (killed by the test).
    Before publishing a list of n elements it writes n to progress[0], after it to [1]."""
    a = Arena(path, 32 * MiB)
    rng = random.Random(seed)
    while True:
        with a.write_collection(0, b"z", TYPE_ZSET) as z:
            for _ in range(rng.randrange(1, 30)):
                z.zset_put(b"m%d" % rng.randrange(2000), rng.random(), 128, 64)
        coll = a.write_collection(0, b"l", TYPE_LIST)
        for _ in range(rng.randrange(1, 30)):
            if rng.random() < 0.6 or not len(coll):
                coll.list_insert(rng.randrange(len(coll) + 1), os.urandom(rng.choice((10, 300, 2000))))
            else:
                start = rng.randrange(len(coll))
                coll.delete_range(start, start + rng.randrange(1, 20))
        os.pwrite(progress, struct.pack("<q", len(coll)), 0)
        coll.commit()
        os.pwrite(progress, struct.pack("<q", len(coll)), 8)


def test_kill_during_transactions_leaves_whole_collections(path, tmp_path):
    """kill -9 at a random moment of a stream of transactions: the rebuilt arena holds a
    list of the length it had before the last publish, or after it, and nothing else
    (every block nothing reaches freed: check() looks)."""
    Arena(path, 32 * MiB).close()
    progress_path = str(tmp_path / "progress")
    rng = random.Random(5)
    for run in range(6):
        with open(progress_path, "wb") as f:
            f.write(b"\0" * 16)
        progress = os.open(progress_path, os.O_RDWR)
        child = os.fork()
        if child == 0:
            try:
                _churn(path, run, progress)
            finally:
                os._exit(1)
        time.sleep(0.05 + rng.random() * 0.3)
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        before, after = struct.unpack("<qq", os.pread(progress, 16, 0))
        os.close(progress)
        a = Arena(path, 32 * MiB)
        try:
            assert a.recovery == "rebuilt" and a.check() == []
            assert len(list_of(a, b"l")) in (before, after)
            zset = zset_of(a, b"z")
            assert [m for m, _ in zset] == [m for m, _ in sorted(zset, key=lambda p: (p[1], p[0]))]
        finally:
            a.close()


def test_copy_clones_and_rename_keeps_the_trees(arena):
    with arena.write_collection(0, b"src", TYPE_LIST) as l:
        for i in range(2000):
            l.list_insert(len(l), b"x%d" % i)
    used = arena.stats()["used_memory"]
    assert arena.copy(0, b"src", 1, b"copy")
    assert arena.stats()["used_memory"] > used
    with arena.write_collection(1, b"copy", TYPE_LIST) as l:
        l.delete_range(0, 1000)
    assert len(arena.collection(0, b"src", TYPE_LIST)) == 2000      # a copy, not a share
    # renamed in place and by copy (a key too long for the key area moves the entry)
    assert arena.rename(0, b"src", 0, b"dst")
    assert arena.rename(0, b"dst", 2, b"k" * 300)
    assert list_of(arena, b"k" * 300, 2) == [b"x%d" % i for i in range(2000)]
    assert arena.collection(0, b"src", TYPE_LIST) is None
    assert arena.check() == []
    with pytest.raises(WrongType):
        arena.collection(1, b"copy", TYPE_SET)
    arena.set(0, b"str", b"v")
    with pytest.raises(WrongType):
        arena.write_collection(0, b"str", TYPE_LIST)
    assert arena.find(0, b"str", type=TYPE_STRING) is not None


def test_a_quota_bounds_a_tenants_collections_and_eviction_takes_them_whole(arena):
    """A tenant's pushes stop at its quota (noeviction: -OOM, the collection as it was) or
    evict its own older collections (allkeys-lru); the default tenant loses nothing."""
    with arena.write_collection(0, b"mine", TYPE_SET) as s:
        for i in range(1000):
            s.set_add(b"member-%d" % i, 512)
    held = arena.stats()["used_memory"]
    t = arena.namespace(arena.create_tenant("t", quota=2 * MiB, policy="noeviction"))
    pushed = 0
    with pytest.raises(OutOfMemory):
        for round_ in range(1000):
            with t.write_collection(0, b"q", TYPE_LIST) as l:
                for _ in range(100):
                    l.list_insert(len(l), b"v" * 500)
            pushed += 100
    assert len(t.collection(0, b"q", TYPE_LIST)) == pushed       # the failed push changed nothing
    assert arena.tenant_stats(t.tenant)["used_bytes"] <= 2 * MiB
    assert arena.check() == []
    arena.set_tenant_policy(t.tenant, "allkeys-lru")
    for i in range(40):
        with t.write_collection(0, b"q%d" % i, TYPE_LIST) as l:
            for _ in range(100):
                l.list_insert(0, b"w" * 500)
    stats = arena.tenant_stats(t.tenant)
    assert stats["evicted_keys"] > 0 and stats["used_bytes"] <= 2 * MiB
    assert t.collection(0, b"q39", TYPE_LIST) is not None            # the newest stays
    assert len(arena.collection(0, b"mine", TYPE_SET)) == 1000
    assert arena.stats()["used_memory"] >= held
    assert arena.check() == []


def test_memory_usage_counts_the_trees(arena):
    with arena.write_collection(0, b"z", TYPE_ZSET) as z:
        z.zset_encode_as(ENCODING_LISTPACK)
        z.zset_put(b"a", 1.0, 128, 64)
    small = arena.find(0, b"z").block_size
    with arena.write_collection(0, b"z", TYPE_ZSET) as z:
        for i in range(5000):
            z.zset_put(b"member-%d" % i, float(i), 128, 64)
    big = arena.find(0, b"z").block_size
    assert big > small + 5000 * 20
    assert big == arena.find(0, b"z").block_size
