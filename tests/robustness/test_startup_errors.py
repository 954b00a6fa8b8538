"""A damaged arena file is refused at start-up with a clear error, and left as it was.

An arena written by a real server is damaged the ways a disk, a bad copy or a
careless operator would: superblock fields overwritten (layout version,
checksum, arena size, heap size, index geometry), the file truncated.  The
server must exit non-zero within seconds, print a Redis-style log line saying
what is wrong with which file (no traceback), and not touch the file: no
silent re-format.  tests/integration/test_lifecycle.py covers a bad magic,
foreign bytes, an arena-size mismatch and a locked arena.
"""
from __future__ import annotations

import os
import re
import struct
import subprocess
import sys

import pytest

from conftest import ServerProcess, free_port

MIB = 1 << 20
# Superblock fields (docs/internals.md, "Layout"): magic[8], version u32, checksum u32,
# then u64 arena_size, index_off, index_buckets, heap_off, heap_size.
VERSION, CHECKSUM, ARENA_SIZE, INDEX_OFF, INDEX_BUCKETS, HEAP_OFF, HEAP_SIZE = 8, 12, 16, 24, 32, 40, 48
FATAL_LINE = re.compile(r"^\d+:M \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} # Fatal: (.*)$", re.M)


@pytest.fixture(scope="module")
def pristine_arena(tmp_path_factory):
    """The bytes of a 64 MiB arena a real server filled and shut down cleanly."""
    server = ServerProcess()
    try:
        server.start()
        with server.client() as c:
            for i in range(200):
                c.set(f"key:{i}", os.urandom(2000))
            c.set("big", os.urandom(3 * MIB))
        assert server.stop() == 0
        with open(server.arena_path, "rb") as f:
            return f.read()
    finally:
        server.close()


def start_on(path: str, size: str = "64mb", grace: float = 10.0):
    """(exit code, stderr) of a server started on path; exit code None if it was still
    running after `grace` seconds (it accepted the arena), in which case it is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cxlredis", "--port", str(free_port()), "--arena-path", path,
         "--arena-size", size],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = proc.communicate(timeout=grace)
        return proc.returncode, stderr
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        return None, stderr


def patch(offset: int, fmt: str, value):
    def damage(path):
        with open(path, "r+b") as f:
            f.seek(offset)
            f.write(struct.pack(fmt, value))
    return damage


def truncate(length: int):
    return lambda path: os.truncate(path, length)


DAMAGE = {
    "layout version": (patch(VERSION, "<I", 99), "64mb", "layout version 99, this build reads"),
    "checksum": (patch(CHECKSUM, "<I", 0xDEADBEEF), "64mb", "corrupt superblock"),
    "arena size field": (patch(ARENA_SIZE, "<Q", 1 << 40), "64mb", "corrupt superblock"),
    "index offset": (patch(INDEX_OFF, "<Q", 12345), "64mb", "corrupt superblock"),
    "index buckets": (patch(INDEX_BUCKETS, "<Q", 3), "64mb", "corrupt superblock"),
    "heap offset": (patch(HEAP_OFF, "<Q", 64 * MIB), "64mb", "corrupt superblock"),
    "heap size": (patch(HEAP_SIZE, "<Q", 1 << 40), "64mb", "corrupt superblock"),
    "truncated to half": (truncate(32 * MIB), "64mb", "the arena file is 33554432 bytes"),
    "truncated inside the superblock": (truncate(4096), "64mb", "the arena file is 4096 bytes"),
    # The operator "fixes" the size mismatch: the superblock still knows better.
    "truncated, size option lowered to match": (truncate(32 * MIB), "32mb",
                                                "formatted for 67108864 bytes, mapped 33554432"),
}


@pytest.mark.parametrize("name", list(DAMAGE))
def test_damaged_arena_is_refused_clearly_and_left_untouched(pristine_arena, tmp_path, name):
    damage, size, message = DAMAGE[name]
    path = str(tmp_path / "a.arena")
    with open(path, "wb") as f:
        f.write(pristine_arena)
    damage(path)
    with open(path, "rb") as f:
        damaged = f.read()

    code, stderr = start_on(path, size)

    assert code not in (None, 0), f"started on an arena with a damaged {name}:\n{stderr[-2000:]}"
    assert "Traceback" not in stderr, stderr
    fatal = FATAL_LINE.findall(stderr)
    assert fatal, f"no '# Fatal:' log line:\n{stderr[-2000:]}"
    assert path in fatal[-1] and message in fatal[-1], fatal[-1]
    with open(path, "rb") as f:
        assert f.read() == damaged, "the refused arena file was modified"


def test_zeroed_superblock_over_a_populated_heap_is_refused(pristine_arena, tmp_path):
    path = str(tmp_path / "a.arena")
    with open(path, "wb") as f:
        f.write(bytes(64 << 10) + pristine_arena[64 << 10:])
    code, stderr = start_on(path, grace=3.0)
    assert code not in (None, 0), "started on an arena whose superblock was zeroed"
    assert "superblock" in stderr and "Traceback" not in stderr
