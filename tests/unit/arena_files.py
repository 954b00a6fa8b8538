"""Byte-level access to arena files for the arena tests: corrupt, inspect, crash-copy."""
import mmap
import shutil
import struct


def poke(path, offset, fmt, value):
    """Write into an arena file (or a live arena: the mapping is shared)."""
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        try:
            struct.pack_into(fmt, m, offset, value)
        finally:
            m.close()


def peek(path, offset, fmt):
    with open(path, "rb") as f:
        f.seek(offset)
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]


def crash_copy(path, tmp_path, name="crashed.arena"):
    """What a kill -9 leaves behind: the bytes of an arena that is still attached."""
    dst = str(tmp_path / name)
    shutil.copyfile(path, dst)
    return dst
