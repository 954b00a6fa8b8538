"""cxlredis.mrc.ReuseSample on its own: exact reuse distances when every key is sampled
(through the Fenwick tree's renumbering), a bounded sample that lowers its threshold,
and aging. The server's curves are checked against exact LRU in tests/tenants."""
import random
from collections import OrderedDict

import pytest

from cxlredis.mrc import HASH_SPACE, ReuseSample

EVERY_KEY = HASH_SPACE - 1


def lru_hit_ratio(stream, sizes, capacity):
    cache, held, hits = OrderedDict(), 0, 0
    for key in stream:
        if key in cache:
            hits += 1
            cache.move_to_end(key)
            continue
        cache[key] = sizes[key]
        held += sizes[key]
        while held > capacity:
            held -= cache.popitem(last=False)[1]
    return hits / len(stream)


def feed(sample, stream, sizes, reads_now=0):
    for key in stream:
        sample.reference(key, sizes[key], True)
    return reads_now + len(stream)


@pytest.mark.parametrize("seed", range(3))
def test_every_key_sampled_is_exact_lru_across_renumbering(seed):
    rng = random.Random(seed)
    keys = [rng.getrandbits(63) for _ in range(60)]
    sizes = {key: rng.randrange(100, 5000) for key in keys}
    stream = [rng.choice(keys[:10] if rng.random() < 0.6 else keys) for _ in range(3000)]
    sample = ReuseSample(EVERY_KEY, max_keys=64)        # its clock wraps many times
    reads = feed(sample, stream, sizes)
    for capacity in (2_000, 10_000, 40_000, 100_000, 200_000):
        assert sample.hit_ratio(capacity, reads) == pytest.approx(
            lru_hit_ratio(stream, sizes, capacity), abs=0.01)


def test_a_full_sample_lowers_its_threshold_and_keeps_the_smallest_hashes():
    rng = random.Random(7)
    keys = [rng.getrandbits(64) for _ in range(1000)]
    sample = ReuseSample(EVERY_KEY, max_keys=64)
    for key in keys:
        sample.reference(key, 100, False)
    assert len(sample.last) == 64
    assert sorted(sample.last) == sorted(keys)[:64]
    assert sample.threshold == sorted(keys)[64]
    sample.reference(sorted(keys)[500], 100, True)      # above the threshold now: ignored
    assert sample.reads == 0


def test_aging_keeps_the_curve_and_then_follows_new_traffic():
    sizes = {key: 100 for key in range(1, 61)}
    small_loop = [key for _ in range(200) for key in range(1, 11)]     # 10 keys: hits at 1 KB
    wide_loop = [key for _ in range(60) for key in range(1, 61)]       # 60 keys: misses at 1 KB
    aged, kept = ReuseSample(EVERY_KEY, 64), ReuseSample(EVERY_KEY, 64)
    reads = feed(aged, small_loop, sizes)
    feed(kept, small_loop, sizes)
    before = aged.hit_ratio(2_000, reads)
    aged.age(reads)
    assert aged.hit_ratio(2_000, reads) == pytest.approx(before)
    reads = feed(aged, wide_loop, sizes, reads)
    feed(kept, wide_loop, sizes)
    # the same traffic since; what came before the aging weighs half in one of them
    assert aged.hit_ratio(2_000, reads) < kept.hit_ratio(2_000, reads) - 0.1


def test_lowering_the_threshold_drops_the_keys_above_it():
    sample = ReuseSample(EVERY_KEY, max_keys=64)
    for key in (10, 20, 30, 40):
        sample.reference(key, 100, False)
    sample.lower(25)
    assert sorted(sample.last) == [10, 20] and sample.threshold == 25
    assert sample._bytes_after(0) == 200               # the others' bytes left the tree
    sample.reference(30, 100, True)                    # above it now: not counted
    assert sample.reads == 0
    sample.lower(50)                                   # never raised
    assert sample.threshold == 25


def test_the_cron_feeds_samples_from_the_arena_and_ages_them(tmp_path, monkeypatch):
    """MissRatioCurves over a real arena: lookups are sampled in C, fed per tenant slot,
    and a curve past AGE_READS weighs half what it counted."""
    import cxlredis.mrc as mrc
    from cxlredis._store import Arena
    from cxlredis.config import Config

    arena = Arena(str(tmp_path / "mrc.arena"), 32 << 20)
    config = Config.load(["--tenant-mrc-sampling", "1"], environ={})
    curves = mrc.MissRatioCurves(config)
    try:
        for i in range(10):
            arena.set(0, b"k%d" % i, b"v" * 100)
        for _ in range(3):
            for i in range(10):
                assert arena.find(0, b"k%d" % i) is not None
        counts = {(arena.address, 0): 30}
        curves.feed(lambda: counts)
        key = (arena.address, 0)
        assert curves.samples[key].reads == 30 and len(curves.samples[key].last) == 10
        assert curves.curve(arena.address, 0, 10_000, 30)[1] == pytest.approx(1.0)
        monkeypatch.setattr(mrc, "AGE_READS", 40)
        for i in range(10):
            arena.find(0, b"k%d" % i)
        counts[key] = 40
        curves.feed(lambda: counts)
        assert curves.samples[key].reads == 20          # 40, halved
        assert curves.curve(arena.address, 0, 10_000, 40)[1] == pytest.approx(1.0)
    finally:
        mrc.mrc_set_threshold(0)        # (the process's sampling: off for the next test)
        arena.close()
