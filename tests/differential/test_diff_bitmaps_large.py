"""Bitmap commands over multi-MiB strings, replayed on redis-server and cxlredis.

Counting, finding and combining bits run in C over the arena, so these values are
read where they lie; SETBIT and BITFIELD change a few bytes. The replies must match
Redis's, and the file must stay quick: a per-byte Python loop, or a copy of the whole
value per bit set while a bitmap grows, would show here as minutes. (No timings are
asserted.) The strings are made on the servers where they can be (SETBIT far out
creates a zero-filled one), so the test sends few large arguments.
"""
import random

import pytest

from conftest import encode_command, raw_connection, server_under_test
from diff_harness import flushall, raw, run_sequence

MiB = 1 << 20
RANDOM = random.Random(20240607).randbytes(32 * MiB)
ONES = b"\xff" * (16 * MiB)
SPARSE_BITS = 48 * MiB * 8          # "sparse": 48 MiB, zeros but for the bits set below


@pytest.fixture(scope="module")
def big(redis_oracle):
    """A cxlredis with room for several 64 MiB values (the shared one has a 64 MiB arena)."""
    server = server_under_test(**{"arena-size": "768mb"})
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def pair(redis_oracle, big):
    flushall(redis_oracle, big)
    yield redis_oracle, big
    flushall(redis_oracle, big)


@pytest.mark.parametrize("protocol", [2, 3])
def test_counting_finding_and_combining_large_strings(pair, protocol):
    oracle, ours = pair
    last = str(SPARSE_BITS - 1)
    run_sequence(oracle, ours, [
        ("SET", "rand", RANDOM),
        ("BITCOUNT", "rand"), ("BITCOUNT", "rand", "1000", "-1000"), ("BITCOUNT", "rand", "-1", "-1"),
        ("BITCOUNT", "rand", "12345", "268435000", "BIT"), ("BITCOUNT", "rand", "3", "-3", "BIT"),
        ("BITPOS", "rand", "1", "1000"), ("BITPOS", "rand", "0", str(16 * MiB)),
        ("BITPOS", "rand", "1", "-5", "-1", "BIT"),
        ("SETBIT", "sparse", last, "1"),     # a 48 MiB string of zeros and one bit
        ("STRLEN", "sparse"), ("BITCOUNT", "sparse"),
        ("BITPOS", "sparse", "1"), ("BITPOS", "sparse", "0"), ("BITPOS", "sparse", "1", "0", "-2"),
        ("BITPOS", "sparse", "1", "7", "-1", "BIT"), ("BITPOS", "sparse", "0", "-1"),
        ("SETBIT", "sparse", "123456789", "1"), ("SETBIT", "sparse", "3", "1"),
        ("BITPOS", "sparse", "1"), ("BITPOS", "sparse", "1", "1"), ("BITPOS", "sparse", "1", "123456790", "-1", "BIT"),
        ("BITCOUNT", "sparse"), ("BITCOUNT", "sparse", "10", "-10"), ("GETBIT", "sparse", "123456789"),
        ("SET", "ones", ONES),
        ("BITPOS", "ones", "0"),             # past the end: 16 MiB of ones, then zeros
        ("BITPOS", "ones", "0", "0", "-1"), ("BITPOS", "ones", "1", "-1"), ("BITCOUNT", "ones"),
        ("BITOP", "AND", "dest", "rand", "sparse"), ("STRLEN", "dest"), ("BITCOUNT", "dest"),
        ("BITOP", "OR", "dest", "rand", "ones", "sparse"), ("BITCOUNT", "dest"), ("BITPOS", "dest", "0"),
        ("BITOP", "XOR", "dest", "rand", "ones"), ("BITCOUNT", "dest"), ("GETRANGE", "dest", "-100", "-1"),
        ("BITOP", "XOR", "dest", "rand", "rand"), ("BITPOS", "dest", "1"), ("BITCOUNT", "dest"),
        ("BITOP", "NOT", "dest", "rand"), ("BITCOUNT", "dest"), ("GETRANGE", "dest", "0", "99"),
        ("GETRANGE", "dest", str(20 * MiB), str(20 * MiB + 4095)),
        ("BITOP", "AND", "rand2", "rand", "rand", "missing"), ("BITPOS", "rand2", "1"),
        # SETBIT and BITFIELD inside a large value, at its ends and past them
        ("SETBIT", "rand", "0", "1"), ("SETBIT", "rand", str(32 * MiB * 8 - 1), "0"),
        ("SETBIT", "rand", str(16 * MiB * 8 + 5), "1"), ("SETBIT", "rand", str(40 * MiB * 8), "1"),
        ("STRLEN", "rand"), ("BITCOUNT", "rand"),
        ("BITFIELD", "rand", "SET", "i64", "#2000000", "-1", "INCRBY", "u32", "#3000000", "7",
         "GET", "u63", str(32 * MiB * 8 - 10), "SET", "u8", str(48 * MiB * 8), "9"),
        ("STRLEN", "rand"), ("BITCOUNT", "rand", "-2", "-1"), ("GETRANGE", "rand", str(16 * MiB), str(16 * MiB + 15)),
        ("BITFIELD_RO", "sparse", "GET", "u63", str(SPARSE_BITS - 63), "GET", "i64", "#" + str(SPARSE_BITS // 64 - 1)),
    ], protocol, "large strings")


def test_a_bitmap_grown_bit_by_bit(pair):
    """20000 SETBITs, each one byte past the last: every one grows the string."""
    oracle, ours = pair
    count = 20000
    setbits = b"".join(encode_command("SETBIT", "grown", str(8 * i + 7), "1") for i in range(count))
    run_sequence(oracle, ours, [
        raw(setbits, replies=count),
        ("STRLEN", "grown"), ("BITCOUNT", "grown"), ("GETRANGE", "grown", "-10", "-1"),
        raw(b"".join(encode_command("BITFIELD", "grown", "INCRBY", "u8", f"#{i}", "1")
                     for i in range(count, count + 2000)), replies=2000),
        ("STRLEN", "grown"), ("BITCOUNT", "grown"), ("BITPOS", "grown", "0", "1"),
    ], 2, "grown bit by bit")


def test_a_value_being_sent_keeps_its_bytes(pair):
    """GET of a 4 MiB value (sent from the arena, pinned) pipelined with the bitmap writes
    that rewrite it: the GET answers the value as it was, each later read the new one."""
    oracle, ours = pair
    value = RANDOM[:4 * MiB]
    pipeline = [("GET", "v"), ("SETBIT", "v", "0", str(1 - (value[0] >> 7))), ("GET", "v"),
                ("BITFIELD", "v", "SET", "u8", "#100", "7", "INCRBY", "i64", "#9000", "1"), ("GET", "v"),
                ("BITOP", "NOT", "v", "v"), ("GET", "v"), ("BITOP", "AND", "v", "missing"), ("GET", "v")]
    run_sequence(oracle, ours, [
        ("SET", "v", value),
        raw(b"".join(encode_command(*argv) for argv in pipeline), replies=len(pipeline)),
    ], 2, "sent while rewritten")


@pytest.fixture
def limit_64mb(pair):
    oracle, ours = pair
    for server in (oracle, ours):
        with raw_connection(server.port) as conn:
            assert conn.request("CONFIG", "SET", "proto-max-bulk-len", "64mb") == b"+OK\r\n"
    try:
        yield pair
    finally:
        for server in (oracle, ours):
            with raw_connection(server.port) as conn:
                conn.request("CONFIG", "SET", "proto-max-bulk-len", "512mb")


def test_setbit_at_the_last_offset_the_limit_allows(limit_64mb):
    oracle, ours = limit_64mb
    last, past = str(64 * MiB * 8 - 1), str(64 * MiB * 8)
    run_sequence(oracle, ours, [
        ("SETBIT", "edge", past, "1"), ("EXISTS", "edge"),
        ("SETBIT", "edge", last, "1"),       # a 64 MiB string, the largest the limit allows
        ("STRLEN", "edge"), ("BITCOUNT", "edge"), ("BITPOS", "edge", "1"), ("GETBIT", "edge", last),
        ("SETBIT", "edge", last, "0"), ("BITPOS", "edge", "1"), ("BITCOUNT", "edge"),
        ("SETBIT", "edge", past, "1"), ("GETBIT", "edge", past), ("STRLEN", "edge"),
        ("BITFIELD", "edge", "SET", "u8", f"#{64 * MiB - 1}", "200", "GET", "u8", f"#{64 * MiB}"),
        ("BITFIELD", "edge", "SET", "i64", last, "-1"), ("STRLEN", "edge"), ("BITCOUNT", "edge", "-9", "-1"),
    ], 2, "setbit at the limit")
