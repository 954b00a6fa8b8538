"""arena-checksum on a running server: a value corrupted in the arena's memory is
never served, on the fast path (small GET), the general path (large, pinned GET)
or MGET; it reads as a miss, and INFO, Prometheus and the log report it."""
import mmap
import time

import pytest

from conftest import raw_connection


def corrupt(arena_path, marker):
    with open(arena_path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        try:
            at = m.find(marker)
            assert at >= 0
            m[at + len(marker) + 3] ^= 0xFF
        finally:
            m.close()


def info(conn, section):
    text = conn.request("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


@pytest.mark.parametrize("size", [100, 70_000, 4 << 20])
def test_corrupted_values_read_as_misses(cxl_factory, size):
    server = cxl_factory(arena_checksum="yes")
    marker = b"CHECKSUMMED-VALUE-%d" % size
    value = (marker + b"x" * size)[:size]
    with raw_connection(server.port) as conn:
        assert conn.request("SET", "good", b"g" * size) == b"+OK\r\n"
        assert conn.request("SET", "bad", value) == b"+OK\r\n"
        assert conn.request("GET", "bad") == b"$%d\r\n%s\r\n" % (size, value)
        corrupt(server.arena_path, marker)
        assert conn.request("MGET", "good", "bad") == b"*2\r\n$%d\r\n%s\r\n$-1\r\n" % (size, b"g" * size)
        assert conn.request("GET", "bad") == b"$-1\r\n"
        assert conn.request("EXISTS", "bad") == b":0\r\n"
        arena = info(conn, "arena")
        assert arena["arena_checksum"] == "yes" and arena["arena_checksum_failures"] == "1"
        assert conn.request("DEBUG", "ARENA-CHECK") == b"*0\r\n"   # no problems
    deadline = time.monotonic() + 5
    while "failed their checksum" not in server.log and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "1 value(s) failed their checksum" in server.log


def test_config_set_turns_it_on_for_new_writes(cxl_factory):
    server = cxl_factory()
    with raw_connection(server.port) as conn:
        conn.request("SET", "before", b"BEFORE-MARK-VALUE" + b"b" * 100)
        assert conn.request("CONFIG", "SET", "arena-checksum", "yes") == b"+OK\r\n"
        conn.request("SET", "after", b"AFTER-MARK-VALUE" + b"a" * 100)
        corrupt(server.arena_path, b"BEFORE-MARK-VALUE")
        corrupt(server.arena_path, b"AFTER-MARK-VALUE")
        assert conn.request("GET", "before").startswith(b"$117\r\n")   # written without one
        assert conn.request("GET", "after") == b"$-1\r\n"
        assert info(conn, "arena")["arena_checksum_failures"] == "1"
