"""arena-checksum: values committed while it is on carry a checksum that every read
verifies; a value whose bytes changed in memory is dropped and read as a miss."""
import mmap
import os

import pytest

from cxlredis._store import TYPE_HASH, TYPE_STRING, Arena

MiB = 1 << 20


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "sum.arena")


@pytest.fixture
def arena(path):
    a = Arena(path, 16 * MiB)
    a.checksums = True
    yield a
    a.close()


def flip_byte(path, marker, delta=0):
    """Change one byte of the value that contains `marker`, through a mapping of the
    file (as a failing memory or a stray writer would)."""
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        try:
            at = m.find(marker)
            assert at >= 0, "value not found in the arena file"
            m[at + delta] ^= 0x01
        finally:
            m.close()


def value_with(marker, size):
    return (marker + os.urandom(size))[:size]


@pytest.mark.parametrize("size", [0, 1, 7, 31, 33, 4096, 3 * MiB + 5])
def test_intact_values_read_back(arena, size):
    value = os.urandom(size)
    arena.set(0, b"k", value)
    off = arena.lookup(0, b"k")
    assert off and bytes(arena.view(off)) == value
    assert arena.entry_type(off) == TYPE_STRING
    assert arena.checksum_failures == 0


@pytest.mark.parametrize("where", [0, 1000, 2 * MiB - 1])
def test_a_changed_byte_is_dropped_and_counted(arena, path, where):
    value = value_with(b"MARKER-0123456789", 2 * MiB)
    arena.set(0, b"k", value)
    flip_byte(path, b"MARKER-0123456789", where)
    before = arena.stats()["keyspace_misses"]
    assert arena.lookup(0, b"k") == 0
    assert arena.checksum_failures == 1
    assert arena.stats()["keyspace_misses"] == before + 1
    assert arena.dbsize(0) == 0 and arena.check() == []
    assert arena.lookup(0, b"k") == 0 and arena.checksum_failures == 1   # gone, not re-counted


def test_write_lookups_do_not_verify(arena, path):
    arena.set(0, b"k", value_with(b"WRITE-LOOKUP-MARK", 1000))
    flip_byte(path, b"WRITE-LOOKUP-MARK", 500)
    assert arena.lookup(0, b"k", stats=False) != 0    # SET NX, HSET...: no read, no check
    assert arena.checksum_failures == 0
    assert arena.lookup(0, b"k") == 0 and arena.checksum_failures == 1


def test_off_means_no_checksums_written_or_verified(arena, path):
    arena.checksums = False
    arena.set(0, b"plain", value_with(b"PLAIN-VALUE-MARK", 1000))
    flip_byte(path, b"PLAIN-VALUE-MARK", 100)
    assert arena.lookup(0, b"plain") != 0                 # nothing to verify against
    arena.checksums = True
    assert arena.lookup(0, b"plain") != 0                 # written without one
    arena.set(0, b"summed", value_with(b"SUMMED-VAL-MARK", 1000))
    arena.checksums = False
    flip_byte(path, b"SUMMED-VAL-MARK", 100)
    assert arena.lookup(0, b"summed") != 0                # verification is off
    arena.checksums = True
    assert arena.lookup(0, b"summed") == 0 and arena.checksum_failures == 1


def test_in_place_append_and_setrange_keep_the_checksum_right(arena, path):
    arena.set(0, b"k", b"start")
    for i in range(50):
        arena.append(0, b"k", b"-%d" % i)
    arena.setrange(0, b"k", arena.value_len(arena.lookup(0, b"k")) + 3, b"END-MARK-APPENDED")
    off = arena.lookup(0, b"k")
    assert off and bytes(arena.view(off)).endswith(b"\x00\x00\x00END-MARK-APPENDED")
    flip_byte(path, b"END-MARK-APPENDED", 4)
    assert arena.lookup(0, b"k") == 0 and arena.checksum_failures == 1


def test_rename_copy_and_hashes_keep_their_checksums(arena, path):
    arena.set(0, b"a", value_with(b"RENAMED-VALUE-MK", 5000))
    assert arena.rename(0, b"a", 0, b"a-much-longer-name-than-before-" * 2)
    off = arena.lookup(0, b"a-much-longer-name-than-before-" * 2)
    assert off and bytes(arena.view(off)).startswith(b"RENAMED-VALUE-MK")
    arena.set(0, b"s", b"short")
    assert arena.rename(0, b"s", 0, b"t")           # fits in place, beside the checksum
    assert bytes(arena.view(arena.lookup(0, b"t"))) == b"short"
    assert arena.copy(0, b"t", 1, b"t2")
    assert bytes(arena.view(arena.lookup(1, b"t2"))) == b"short"
    arena.set(0, b"h", b"\x00" * 4, type=TYPE_HASH)
    assert arena.entry_type(arena.lookup(0, b"h")) == TYPE_HASH
    assert arena.check() == []
    flip_byte(path, b"RENAMED-VALUE-MK", 10)
    assert arena.lookup(0, b"a-much-longer-name-than-before-" * 2) == 0


def test_checksums_survive_a_restart(path):
    a = Arena(path, 16 * MiB)
    a.checksums = True
    a.set(0, b"k", value_with(b"RESTART-MARK-XYZ", 100_000))
    a.close()
    b = Arena(path, 16 * MiB)
    try:
        b.checksums = True
        assert b.lookup(0, b"k") != 0
        flip_byte(path, b"RESTART-MARK-XYZ", 99_000)
        assert b.lookup(0, b"k") == 0 and b.checksum_failures == 1
    finally:
        b.close()
