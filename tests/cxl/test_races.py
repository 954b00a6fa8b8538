"""Mapped readers racing writers and the evictor: a read through the mapping is the
value as committed, or a miss, never a mix.

Every value the writer stores is one 8-byte word repeated, so a reader can tell a
torn copy (two words) from a whole one without knowing which version it got. The
writer overwrites and deletes the hot keys and pushes big fillers through a small
maxmemory so blocks are evicted, freed and reused under the readers all the time;
leases last 150 ms so they run out during the test too."""
import mmap
import struct
import subprocess
import sys
import time

import pytest

import cxlredis.local as local_module
from cxl_helpers import cxl_server, local, unix_client

LEASE_MS = 150
VALUE = 256 * 1024
HOT = [f"hot{n}".encode() for n in range(4)]

WRITER = r"""
import os, struct, sys, time, redis
r = redis.Redis(unix_socket_path=sys.argv[1])
hot = [f"hot{n}".encode() for n in range(4)]
size, until, n = int(sys.argv[2]), time.monotonic() + float(sys.argv[3]), 0
filler = os.urandom(1 << 20)
while time.monotonic() < until:
    n += 1
    key = hot[n % len(hot)]
    if n % 7 == 0:
        r.delete(key)
    else:
        r.set(key, struct.pack("<Q", n) * (size // 8))
    if n % 3 == 0:
        r.set(b"fill%d" % (n % 40), filler)
print(n)
"""


@pytest.fixture
def server():
    srv = cxl_server(**{"cxl-lease-ms": LEASE_MS, "maxmemory": "12mb",
                        "maxmemory-policy": "allkeys-lru"})
    try:
        yield srv.start()
    finally:
        srv.close()


def start_writer(server, seconds):
    return subprocess.Popen([sys.executable, "-c", WRITER, server.unixsocket, str(VALUE), str(seconds)],
                            stdout=subprocess.PIPE)


def whole(data):
    """One 8-byte word repeated: a single version of a value."""
    return data[:8] * (len(data) // 8) == data


def test_mapped_reads_race_writers_and_eviction(server, monkeypatch):
    """get_into copies a key it read before from where it was while the GETREF is on its
    way: both that copy (kept when the reply leases the same place and generation) and
    the copy again from the reply's place run here, under rewrites and reuse."""
    copies_after_reply = []
    real_copy = local_module._copy_into
    monkeypatch.setattr(local_module, "_copy_into",
                        lambda source, target: copies_after_reply.append(1) or real_copy(source, target))
    writer = start_writer(server, 3.0)
    accepted = misses = kept_early_copy = 0
    buffer = bytearray(VALUE)
    try:
        with local(server) as kv:
            assert kv.mapped, kv.why_not_mapped
            deadline = time.monotonic() + 3.0
            n = 0
            while time.monotonic() < deadline:
                n += 1
                before = len(copies_after_reply)
                got = kv.get_into(HOT[n % len(HOT)], buffer)
                if got is None:
                    misses += 1
                    continue
                assert got == VALUE and whole(buffer), "a torn value was accepted"
                accepted += 1
                kept_early_copy += len(copies_after_reply) == before
    finally:
        writes = int(writer.communicate(timeout=30)[0])
    assert writes > 100 and accepted > 100, (writes, accepted, misses)
    assert 0 < kept_early_copy < accepted, (kept_early_copy, accepted)


def test_slow_readers_validate_after_use(server):
    """Readers that keep a zero-copy view across many rewrites and lease expiries: every
    view still reported valid after use held a whole value."""
    writer = start_writer(server, 3.0)
    accepted = rejected = torn_rejected = 0
    try:
        with local(server) as kv:
            deadline = time.monotonic() + 3.0
            n = 0
            while time.monotonic() < deadline:
                n += 1
                ref = kv.get(HOT[n % len(HOT)])
                if ref is None:
                    continue
                with ref:
                    time.sleep((n % 5) * LEASE_MS / 2000)   # 0 to 1 lease period
                    data = ref.view.tobytes()
                    if ref.valid():
                        assert whole(data), "a torn value was accepted"
                        accepted += 1
                    else:
                        rejected += 1
                        torn_rejected += not whole(data)
    finally:
        writer.communicate(timeout=30)
    assert accepted > 3 and rejected > 3, (accepted, rejected, torn_rejected)


def test_the_header_check_alone_catches_a_reused_block(server):
    """Even with the deadline out of the picture (a reader with a wrong idea of time),
    a block freed and reused since the GETREF fails the generation/state check."""
    r = unix_client(server)
    with local(server) as kv, open(server.arena_path, "rb") as f:
        arena = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
        r.set(b"victim", b"\x01" * VALUE)
        ref = kv.get(b"victim")
        ref._deadline = float("inf")
        header = ref._header
        before = arena[header:header + 64]
        r.delete(b"victim")
        time.sleep(LEASE_MS / 1000 * 3)          # the server lets go of the lease
        r.ping()
        for n in range(200):                     # churn until the block is reused
            r.set(b"churn%d" % (n % 30), struct.pack("<Q", n) * (VALUE // 8))
            if arena[header:header + 64] != before:
                break
        assert arena[header:header + 64] != before, "the block was never reused"
        assert not ref.valid()
        ref.release()
        arena.close()
    r.close()


REFILLER = r"""
import struct, sys, time, redis
r = redis.Redis(unix_socket_path=sys.argv[1])
size, until, n = int(sys.argv[2]), time.monotonic() + float(sys.argv[3]), 0
while time.monotonic() < until:
    n += 1
    r.delete(b"spot")                                   # frees the block...
    r.set(b"spot", struct.pack("<Q", n) * (size // 8))  # ...which the next value refills
print(n)
"""


def test_an_early_copy_of_a_refilled_block_is_not_accepted(server):
    """One key deleted and set again and again: its new value is received into the block
    the old one just freed, at the same offset and length, while get_into copies from
    there before its GETREF is answered. Only a copy whose generation is the one leased
    counts, so none of those mixed copies is accepted."""
    refiller = subprocess.Popen([sys.executable, "-c", REFILLER, server.unixsocket, str(VALUE), "2.0"],
                                stdout=subprocess.PIPE)
    accepted = 0
    same_place = set()
    buffer = bytearray(VALUE)
    try:
        with local(server) as kv:
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                if kv.get_into(b"spot", buffer) is None:
                    continue
                assert whole(buffer), "a torn value was accepted"
                accepted += 1
                same_place.add(kv._locations[b"spot"][0])
    finally:
        writes = int(refiller.communicate(timeout=30)[0])
    assert writes > 100 and accepted > 100, (writes, accepted)
    assert len(same_place) <= 2, "the value did not keep coming back to the same block"
