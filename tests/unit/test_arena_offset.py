"""Arenas at an offset (arena-offset): several arenas in one file, each the `size` bytes
from its `offset`, locked, sized, backed and punched only within its region, and
re-attached warm like a whole file. In-process Arenas over real files (tmpfs where
the bytes a file holds are counted)."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from cxlredis._store import Arena, ArenaError, region_locked

from conftest import REPO_ROOT

MiB = 1 << 20
PAGE = os.sysconf("SC_PAGESIZE")


def values(tag, count, size):
    """`count` keys of `tag`, each with a value of `size` bytes of its own."""
    units = [b"%s-%d|" % (tag, i) for i in range(count)]
    return {b"%s:%d" % (tag, i): (unit * (size // len(unit) + 1))[:size] for i, unit in enumerate(units)}


def read_all(arena, keys):
    return {key: arena.value_bytes(arena.lookup(0, key)) if arena.lookup(0, key) else None for key in keys}


def release_until(arena, done, within=15.0):
    """Run the cron's release step until `done()`; whether it came true."""
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() > deadline:
            return False
        arena.release_free_pages(max_bytes=1 << 40)
        time.sleep(0.05)
    return True


def test_two_regions_of_one_file_never_see_each_other(tmp_path):
    path = str(tmp_path / "shared.arena")
    a = Arena(path, 16 * MiB)
    b = Arena(path, 16 * MiB, offset=16 * MiB)
    try:
        assert (a.offset, b.offset) == (0, 16 * MiB)
        assert os.path.getsize(path) == 32 * MiB
        for i in range(200):
            a.set(0, b"k%d" % i, b"from a %d" % i)
            b.set(0, b"k%d" % i, b"from b %d" % i * 50)
        b.set(0, b"only-b", b"x" * 300_000)
        for i in range(200):
            assert a.value_bytes(a.lookup(0, b"k%d" % i)) == b"from a %d" % i
            assert b.value_bytes(b.lookup(0, b"k%d" % i)) == b"from b %d" % i * 50
        assert a.lookup(0, b"only-b") == 0 and a.dbsize(0) == 200 and b.dbsize(0) == 201
        a.flushall()
        assert a.dbsize(0) == 0 and b.dbsize(0) == 201
        assert a.check() == [] and b.check() == []
    finally:
        a.close()
        b.close()
    b = Arena(path, 16 * MiB, offset=16 * MiB)
    a = Arena(path, 16 * MiB)
    try:
        assert (a.recovery, b.recovery) == ("clean", "clean")
        assert a.dbsize(0) == 0 and b.dbsize(0) == 201
        assert b.value_bytes(b.lookup(0, b"only-b")) == b"x" * 300_000
    finally:
        a.close()
        b.close()


def test_both_regions_reattach_warm_after_a_kill_9(tmp_path):
    path = str(tmp_path / "shared.arena")
    child = textwrap.dedent(f"""
        import os, signal
        from cxlredis._store import Arena
        a = Arena({path!r}, 16 << 20)
        b = Arena({path!r}, 32 << 20, offset=32 << 20)
        for i in range(100):
            a.set(0, b"k%d" % i, b"a%d" % i * 1000)
            b.set(0, b"k%d" % i, b"b%d" % i * 3000)
        a.set(0, b"gone", b"1")
        a.delete(0, b"gone")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert os.path.getsize(path) == 64 * MiB
    with Arena(path, 32 * MiB, offset=32 * MiB) as b, Arena(path, 16 * MiB) as a:
        assert (a.recovery, b.recovery) == ("rebuilt", "rebuilt")
        assert a.dbsize(0) == b.dbsize(0) == 100
        for i in range(100):
            assert a.value_bytes(a.lookup(0, b"k%d" % i)) == b"a%d" % i * 1000
            assert b.value_bytes(b.lookup(0, b"k%d" % i)) == b"b%d" % i * 3000
        assert a.check() == [] and b.check() == []


def test_a_region_overlapping_an_attached_one_is_refused(tmp_path):
    path = str(tmp_path / "shared.arena")
    with Arena(path, 16 * MiB, offset=16 * MiB) as b:
        b.set(0, b"k", b"v")
        for offset, size in ((16 * MiB, 16 * MiB), (8 * MiB, 16 * MiB), (31 * MiB, 8 * MiB), (20 * MiB, 4 * MiB),
                             (0, 17 * MiB)):
            with pytest.raises(ArenaError, match=r"^arena .*shared\.arena is in use by another process$"):
                Arena(path, size, offset=offset)
        # the regions next to it are free
        with Arena(path, 16 * MiB) as a, Arena(path, 8 * MiB, offset=32 * MiB) as c:
            a.set(0, b"k", b"a")
            c.set(0, b"k", b"c")
            assert region_locked(path) and region_locked(path, 40 * MiB - 1, 1)
        assert region_locked(path, 16 * MiB, 16 * MiB) and not region_locked(path, 0, 16 * MiB)
        assert not region_locked(path, 32 * MiB)
        assert b.value_bytes(b.lookup(0, b"k")) == b"v" and b.check() == []
    assert not region_locked(path)
    assert not region_locked(str(tmp_path / "no-such-file"))


def test_an_offset_the_backing_cannot_map_from_is_refused(tmp_path):
    path = str(tmp_path / "a.arena")
    for offset in (1, PAGE - 1, PAGE + 512, 3 * MiB + 1):
        with pytest.raises(ArenaError, match=rf"^{path}: arena-offset {offset} is not a multiple of {PAGE} bytes "
                                             r"\(the page size\)$"):
            Arena(path, 8 * MiB, offset=offset)
        assert not os.path.exists(path)           # the file it would have made is gone again
    with pytest.raises(ArenaError, match=rf"arena-offset {PAGE} is not a multiple of {2 * MiB} bytes "
                                         r"\(arena-hugepages maps 2 MiB pages\)$"):
        Arena(path, 8 * MiB, offset=PAGE, hugepages=True)
    with pytest.raises(ArenaError, match="arena-offset -4096 is negative"):
        Arena(path, 8 * MiB, offset=-PAGE)
    assert not os.path.exists(path)
    with Arena(path, 8 * MiB, offset=PAGE) as a, Arena(path, 8 * MiB, offset=10 * MiB, hugepages=True) as b:
        assert (a.offset, b.offset) == (PAGE, 10 * MiB)
        assert os.path.getsize(path) == 18 * MiB


def test_the_file_grows_to_a_regions_end_and_never_shrinks(tmp_path):
    path = str(tmp_path / "shared.arena")
    # the higher region first: the file is made that long, the lower one fits in it
    Arena(path, 16 * MiB, offset=48 * MiB).close()
    assert os.path.getsize(path) == 64 * MiB
    Arena(path, 16 * MiB, offset=16 * MiB).close()
    assert os.path.getsize(path) == 64 * MiB
    # offset 0 of a bigger file: a region, unformatted until now, then this arena
    for reset, recovery in ((False, "new"), (False, "clean"), (True, "new")):
        with Arena(path, 16 * MiB, reset=reset) as a:
            assert a.recovery == recovery
            a.set(0, b"k", b"v")
        assert os.path.getsize(path) == 64 * MiB
    with Arena(path, 16 * MiB, offset=48 * MiB) as d:
        assert d.recovery == "clean" and d.dbsize(0) == 0
        # re-formatting the first region at another size would cut the file short
        with pytest.raises(ArenaError, match=r"the arena file is 67108864 bytes and servers at other "
                                             r"arena-offsets use it beyond the arena's 8388608 bytes"):
            Arena(path, 8 * MiB, reset=True)
    assert os.path.getsize(path) == 64 * MiB


def test_offset_0_keeps_the_whole_file_rules(tmp_path):
    path = str(tmp_path / "a.arena")
    Arena(path, 16 * MiB).close()
    assert os.path.getsize(path) == 16 * MiB
    # an arena of another size in the file, bigger or smaller: refused, untouched
    with pytest.raises(ArenaError, match=r"the arena file is 16777216 bytes but the arena size is 8388608 "
                                         r"bytes; set arena-reset yes"):
        Arena(path, 8 * MiB)
    with pytest.raises(ArenaError, match=r"the arena file is 16777216 bytes but the arena size is 33554432"):
        Arena(path, 32 * MiB)
    assert os.path.getsize(path) == 16 * MiB
    with Arena(path, 8 * MiB, reset=True) as a:        # nothing runs beyond it: re-sized as before
        assert a.recovery == "new"
    assert os.path.getsize(path) == 8 * MiB
    # a bigger file holding something that is not an arena is not taken for a shared one
    with open(path, "r+b") as f:
        f.truncate(32 * MiB)
        f.write(b"not an arena")
    with pytest.raises(ArenaError, match="the arena file is 33554432 bytes but the arena size is 8388608"):
        Arena(path, 8 * MiB)


def test_a_region_allocates_and_punches_only_its_own_pages(tmpfs):
    where = tmpfs("256m")
    path = str(where / "shared.arena")
    with Arena(path, 96 * MiB) as a, Arena(path, 96 * MiB, offset=96 * MiB) as b:
        kept = values(b"a", 20, 2 * MiB)
        for key, value in kept.items():
            a.set(0, key, value)
        held_a = a.stats()["backing_bytes"]
        assert held_a >= 40 * MiB
        assert b.stats()["backing_bytes"] < 2 * MiB
        # many writes and deletes of big values in b, released as they go idle
        for round in range(4):
            churn = values(b"b%d" % round, 16, 4 * MiB)
            for key, value in churn.items():
                b.set(0, key, value)
            assert b.stats()["backing_bytes"] >= 64 * MiB
            for key in churn:
                b.delete(0, key)
            assert release_until(b, lambda: b.stats()["backing_bytes"] < 4 * MiB), b.stats()["backing_bytes"]
        # the whole file holds both regions' pages; a's are all still there, unchanged
        assert abs(os.stat(path).st_blocks * 512 - held_a - b.stats()["backing_bytes"]) <= 2 * MiB
        assert a.stats()["backing_bytes"] == held_a
        assert read_all(a, kept) == kept and a.check() == [] and b.check() == []
        # and the other way round
        for key in kept:
            a.delete(0, key)
        b.set(0, b"big", b"z" * (60 * MiB))
        held_b = b.stats()["backing_bytes"]
        assert release_until(a, lambda: a.stats()["backing_bytes"] < 4 * MiB)
        assert b.stats()["backing_bytes"] == held_b
        assert b.value_bytes(b.lookup(0, b"big")) == b"z" * (60 * MiB)


def fill(path, limit=1 << 40):
    """Write a file of up to `limit` bytes, or until its file system is full."""
    written = 0
    with open(path, "ab", buffering=0) as f:
        try:
            while written < limit:
                written += f.write(b"f" * min(MiB, limit - written))
        except OSError:
            pass


def test_the_space_check_counts_only_the_region(tmpfs):
    where = tmpfs("64m")
    path = str(where / "shared.arena")
    with Arena(path, 32 * MiB, prefault=True) as a:
        a.set(0, b"big", b"x" * (24 * MiB))
        fill(where / "filler", 12 * MiB)
        # 20 MiB are free: what the first region holds does not make room for a second
        with pytest.raises(ArenaError, match=r"the arena's 33554432 bytes \(set by arena-size\) do not fit its "
                                             r"backing: the file system there has \d+ bytes free .* and the "
                                             r"region holds 0; lower arena-size"):
            Arena(path, 32 * MiB, offset=32 * MiB)
        # nor may a region end beyond the file system's size, whatever is free
        with pytest.raises(ArenaError, match=r"the arena's 16777216 bytes at arena-offset 58720256 \(set by "
                                             r"arena-size and arena-offset\) end beyond its backing: the file "
                                             r"system there holds 67108864 bytes \(64.0 MiB\); lower arena-size "
                                             r"or arena-offset"):
            Arena(path, 16 * MiB, offset=56 * MiB)
        assert os.path.getsize(path) == 32 * MiB
        with Arena(path, 16 * MiB, offset=48 * MiB, prefault=True) as b:
            b.set(0, b"b", b"y" * (8 * MiB))
            assert b.stats()["backing_bytes"] == 16 * MiB
        assert a.stats()["backing_bytes"] == 32 * MiB
    # re-attached, each region counts what it holds itself: a full file system is no obstacle
    fill(where / "filler")
    with Arena(path, 16 * MiB, offset=48 * MiB) as b, Arena(path, 32 * MiB) as a:
        assert b.value_bytes(b.lookup(0, b"b")) == b"y" * (8 * MiB)
        assert a.value_bytes(a.lookup(0, b"big")) == b"x" * (24 * MiB)
