"""Bitmap commands (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) and
LCS, replayed on redis-server and cxlredis; every reply must match, RESP2 and RESP3.

Each sequence looks at what a command left behind too (GET, STRLEN, GETRANGE, TTL):
a reply can be right while the bytes stored are not. The proto-max-bulk-len limits
on offsets, and LCS's limit on its transient table, are replayed with the limit
lowered on both servers (a bitmap at the default 512 MiB limit would not fit the
test servers); hypothesis-generated sequences close the file.
"""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import raw_connection
from diff_harness import cmd, flushall, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

BIG = "9223372036854775807"      # LLONG_MAX
SMALL = "-9223372036854775808"   # LLONG_MIN
TOO_BIG = "9223372036854775808"  # LLONG_MAX + 1
MAX_BIT = str(2**32 * 8 - 1)     # the last bit of a 512 MiB string (the default proto-max-bulk-len)
PAST_MAX_BIT = str(2**32 * 8)
# Offsets and numbers Redis must refuse as integers: leading zeros, signs, spaces, NULs.
NOT_INTEGERS = ["", "x", "01", "+1", " 1", "1 ", "1.5", "0x10", "1e3", b"1\x00", "--1", "-0"]

SEQUENCES = {
    "setbit and getbit": [
        ("SETBIT", "k", "7", "1"),
        ("GET", "k"),
        ("SETBIT", "k", "7", "1"),       # unchanged: the old bit, nothing written
        ("SETBIT", "k", "7", "0"),
        ("GET", "k"),
        ("SETBIT", "k", "0", "1"),
        ("SETBIT", "k", "9", "1"),       # grows the string by a byte
        ("GET", "k"),
        ("STRLEN", "k"),
        ("SETBIT", "k", "100", "0"),     # grows with zeros though the bit stays 0
        ("STRLEN", "k"),
        ("GETRANGE", "k", "0", "-1"),
        ("GETBIT", "k", "0"), ("GETBIT", "k", "1"), ("GETBIT", "k", "9"),
        ("GETBIT", "k", "100"), ("GETBIT", "k", "101"), ("GETBIT", "k", "103"), ("GETBIT", "k", "104"),
        ("GETBIT", "k", "1000000"), ("GETBIT", "k", MAX_BIT),
        ("GETBIT", "missing", "0"), ("GETBIT", "missing", MAX_BIT),
        ("SETBIT", "zero", "0", "0"),    # creates a key of one zero byte
        ("GET", "zero"), ("EXISTS", "zero"),
        ("SETBIT", "z2", "23", "0"),
        ("GET", "z2"),
        ("SET", "s", "foobar"),
        ("SETBIT", "s", "1", "0"), ("SETBIT", "s", "6", "1"), ("GET", "s"),
        ("SET", "n", "12"),              # an integer-looking value is bytes all the same
        ("SETBIT", "n", "7", "0"), ("GET", "n"), ("GETBIT", "n", "2"),
        ("SET", "bin", b"\x00\xff\r\n"),
        ("SETBIT", "bin", "16", "1"), ("SETBIT", "bin", "31", "0"), ("GET", "bin"),
        ("SET", "e", ""),
        ("GETBIT", "e", "0"), ("SETBIT", "e", "3", "1"), ("GET", "e"),
    ],
    "setbit and getbit errors": [
        ("SET", "k", "v"),
        ("HSET", "h", "f", "v"),
        ("SETBIT", "k", "-1", "1"), ("SETBIT", "k", SMALL, "1"), ("SETBIT", "k", BIG, "1"),
        ("SETBIT", "k", TOO_BIG, "1"), ("SETBIT", "k", PAST_MAX_BIT, "1"),
        *[("SETBIT", "k", bad, "1") for bad in NOT_INTEGERS],
        ("SETBIT", "k", "#1", "1"),      # no #N form outside BITFIELD
        ("SETBIT", "k", "0", "2"), ("SETBIT", "k", "0", "-1"), ("SETBIT", "k", "0", BIG),
        ("SETBIT", "k", "0", SMALL), ("SETBIT", "k", "0", TOO_BIG), ("SETBIT", "k", "0", "3"),
        *[("SETBIT", "k", "0", bad) for bad in NOT_INTEGERS],
        ("SETBIT", "k", "x", "x"),       # the offset is read first
        ("SETBIT", "h", "0", "1"), ("SETBIT", "h", "x", "1"), ("SETBIT", "h", "0", "2"),
        ("SETBIT", "missing", PAST_MAX_BIT, "1"), ("EXISTS", "missing"),
        ("GETBIT", "k", "-1"), ("GETBIT", "k", SMALL), ("GETBIT", "k", BIG), ("GETBIT", "k", TOO_BIG),
        ("GETBIT", "k", PAST_MAX_BIT), ("GETBIT", "k", "#0"),
        *[("GETBIT", "k", bad) for bad in NOT_INTEGERS],
        ("GETBIT", "h", "0"), ("GETBIT", "h", "x"), ("GETBIT", "missing", "x"),
        ("GET", "k"),
    ],
    "setbit keeps the ttl": [
        ("SET", "k", "v", "EX", "100"),
        ("SETBIT", "k", "3", "1"),
        ("TTL", "k"),
        ("SETBIT", "k", "200", "1"),
        ("TTL", "k"),
        ("SETBIT", "fresh", "5", "1"),
        ("TTL", "fresh"),
    ],
    "bitcount": [
        ("SET", "s", "foobar"),
        ("BITCOUNT", "s"),
        ("BITCOUNT", "s", "0", "0"), ("BITCOUNT", "s", "1", "1"), ("BITCOUNT", "s", "0", "-1"),
        ("BITCOUNT", "s", "-1", "-1"), ("BITCOUNT", "s", "-2", "-1"), ("BITCOUNT", "s", "-1", "-2"),
        ("BITCOUNT", "s", "2", "1"), ("BITCOUNT", "s", "-100", "100"), ("BITCOUNT", "s", "5", "100"),
        ("BITCOUNT", "s", "6", "6"), ("BITCOUNT", "s", "100", "200"), ("BITCOUNT", "s", "-100", "-50"),
        ("BITCOUNT", "s", "-50", "-100"),
        ("BITCOUNT", "s", SMALL, BIG), ("BITCOUNT", "s", BIG, SMALL), ("BITCOUNT", "s", SMALL, SMALL),
        ("BITCOUNT", "s", BIG, BIG), ("BITCOUNT", "s", "0", SMALL),
        ("BITCOUNT", "s", "1", "1", "BYTE"), ("BITCOUNT", "s", "1", "1", "byte"),
        ("BITCOUNT", "s", "5", "30", "BIT"), ("BITCOUNT", "s", "5", "30", "bit"), ("BITCOUNT", "s", "5", "30", "Bit"),
        ("BITCOUNT", "s", "0", "0", "BIT"), ("BITCOUNT", "s", "1", "1", "BIT"), ("BITCOUNT", "s", "7", "8", "BIT"),
        ("BITCOUNT", "s", "0", "-1", "BIT"), ("BITCOUNT", "s", "-1", "-1", "BIT"), ("BITCOUNT", "s", "-9", "-2", "BIT"),
        ("BITCOUNT", "s", "-2", "-9", "BIT"), ("BITCOUNT", "s", "40", "47", "BIT"), ("BITCOUNT", "s", "47", "48", "BIT"),
        ("BITCOUNT", "s", "48", "100", "BIT"), ("BITCOUNT", "s", SMALL, BIG, "BIT"), ("BITCOUNT", "s", "9", "9", "BIT"),
        ("BITCOUNT", "s", "3", "4", b"BIT\x00x"),    # keywords compare as C strings, up to a NUL
        ("SET", "e", ""),
        ("BITCOUNT", "e"), ("BITCOUNT", "e", "0", "-1"), ("BITCOUNT", "e", "0", "0", "BIT"),
        ("BITCOUNT", "missing"), ("BITCOUNT", "missing", "0", "-1", "BIT"),
        ("SET", "ones", b"\xff" * 100),
        ("BITCOUNT", "ones"), ("BITCOUNT", "ones", "3", "796", "BIT"), ("BITCOUNT", "ones", "10", "20"),
    ],
    "bitcount errors": [
        ("SET", "s", "foobar"),
        ("HSET", "h", "f", "v"),
        ("BITCOUNT", "s", "0"), ("BITCOUNT", "s", "0", "1", "BIT", "x"), ("BITCOUNT", "s", "0", "1", "bits"),
        ("BITCOUNT", "s", "0", "1", ""), ("BITCOUNT", "s", "a", "b"), ("BITCOUNT", "s", "0", "b"),
        ("BITCOUNT", "s", "a", "0", "foo"), ("BITCOUNT", "s", "0", "1", "foo"), ("BITCOUNT", "s", TOO_BIG, "0"),
        ("BITCOUNT", "s", "0", TOO_BIG),
        *[("BITCOUNT", "s", bad, "1") for bad in NOT_INTEGERS],
        ("BITCOUNT", "s", "-1", "-9", "foo"),     # 7.0 answers an empty negative range before the unit
        ("BITCOUNT", "s", "-9", "-1", "foo"),
        # 7.0 looks the key up first: a missing key answers 0 whatever follows, WRONGTYPE wins
        ("BITCOUNT", "missing", "a", "b"), ("BITCOUNT", "missing", "0"), ("BITCOUNT", "missing", "0", "1", "foo"),
        ("BITCOUNT", "missing", "0", "1", "2", "3"),
        ("BITCOUNT", "h"), ("BITCOUNT", "h", "0"), ("BITCOUNT", "h", "a", "b"), ("BITCOUNT", "h", "0", "1", "foo"),
    ],
    "bitpos": [
        ("SET", "s", "foobar"),
        ("BITPOS", "s", "1"), ("BITPOS", "s", "0"),
        ("SET", "k", b"\x00\x0f\xff\xf0\x00"),
        ("BITPOS", "k", "1"), ("BITPOS", "k", "0"), ("BITPOS", "k", "1", "2"), ("BITPOS", "k", "0", "2"),
        ("BITPOS", "k", "0", "2", "3"), ("BITPOS", "k", "1", "4"), ("BITPOS", "k", "1", "-1"),
        ("BITPOS", "k", "1", "-2", "-1"), ("BITPOS", "k", "0", "-3"), ("BITPOS", "k", "1", "3", "2"),
        ("BITPOS", "k", "1", "100"), ("BITPOS", "k", "0", "100"), ("BITPOS", "k", "1", "-100", "-50"),
        ("BITPOS", "k", "1", SMALL, BIG), ("BITPOS", "k", "0", BIG), ("BITPOS", "k", "0", SMALL),
        ("BITPOS", "k", "1", "0", SMALL), ("BITPOS", "k", "1", BIG, SMALL),
        ("BITPOS", "k", "1", "0", "-1", "BYTE"), ("BITPOS", "k", "1", "0", "-1", "bit"),
        ("BITPOS", "k", "1", "13", "-1", "BIT"), ("BITPOS", "k", "0", "12", "27", "BIT"),
        ("BITPOS", "k", "0", "12", "28", "BIT"), ("BITPOS", "k", "1", "5", "11", "BIT"),
        ("BITPOS", "k", "1", "5", "12", "BIT"), ("BITPOS", "k", "0", "16", "23", "BIT"),
        ("BITPOS", "k", "1", "-8", "-1", "BIT"), ("BITPOS", "k", "0", "-8", "-1", "BIT"),
        ("BITPOS", "k", "1", "20", "10", "BIT"), ("BITPOS", "k", "1", SMALL, BIG, "BIT"),
        ("BITPOS", "k", "0", "28", "35", "BIT"), ("BITPOS", "k", "1", "2", "3", b"bit\x00"),
        ("SET", "ones", b"\xff\xff\xff"),
        ("BITPOS", "ones", "0"),              # no end given: the zeros past the string count
        ("BITPOS", "ones", "0", "1"), ("BITPOS", "ones", "0", "-1"),
        ("BITPOS", "ones", "0", "0", "-1"),   # an end given: there is no 0 in the range
        ("BITPOS", "ones", "0", "0", "-1", "BIT"), ("BITPOS", "ones", "0", "3", "17", "BIT"),
        ("BITPOS", "ones", "1", "3", "17", "BIT"), ("BITPOS", "ones", "1", "17", "3", "BIT"),
        ("SET", "zeros", b"\x00" * 20),
        ("BITPOS", "zeros", "1"), ("BITPOS", "zeros", "0"), ("BITPOS", "zeros", "1", "3", "-2"),
        ("BITPOS", "zeros", "0", "19"), ("BITPOS", "zeros", "1", "0", "-1", "BIT"),
        ("SET", "e", ""),
        ("BITPOS", "e", "0"), ("BITPOS", "e", "1"), ("BITPOS", "e", "0", "0"), ("BITPOS", "e", "0", "0", "-1", "BIT"),
        ("BITPOS", "missing", "0"), ("BITPOS", "missing", "1"), ("BITPOS", "missing", "0", "5", "9", "BIT"),
    ],
    "bitpos errors": [
        ("SET", "s", "foobar"),
        ("HSET", "h", "f", "v"),
        ("BITPOS", "s", "2"), ("BITPOS", "s", "-1"), ("BITPOS", "s", BIG), ("BITPOS", "s", SMALL),
        ("BITPOS", "s", TOO_BIG), *[("BITPOS", "s", bad) for bad in NOT_INTEGERS],
        ("BITPOS", "s", "1", "x"), ("BITPOS", "s", "1", "0", "x"), ("BITPOS", "s", "1", "x", "0", "BIT"),
        ("BITPOS", "s", "1", "0", "x", "foo"),    # the unit is read before the end
        ("BITPOS", "s", "1", "0", "1", "foo"), ("BITPOS", "s", "1", "0", "1", "BIT", "x"),
        ("BITPOS", "s", "1", "0", TOO_BIG),
        # the bit first, then the key (a missing key answers whatever follows), then the range
        ("BITPOS", "missing", "2"), ("BITPOS", "missing", "x"), ("BITPOS", "missing", "1", "x"),
        ("BITPOS", "missing", "0", "0", "1", "foo"), ("BITPOS", "missing", "1", "0", "1", "2", "3"),
        ("BITPOS", "h", "1"), ("BITPOS", "h", "2"), ("BITPOS", "h", "1", "x"), ("BITPOS", "h", "x"),
    ],
    "bitop": [
        ("SET", "a", b"\x0f\xf0\xaa"),
        ("SET", "b", b"\xff\x01"),
        ("SET", "c", b"\x3c"),
        ("BITOP", "AND", "d", "a", "b"), ("GET", "d"),
        ("BITOP", "OR", "d", "a", "b", "c"), ("GET", "d"),
        ("BITOP", "XOR", "d", "a", "b", "c"), ("GET", "d"),
        ("BITOP", "NOT", "d", "a"), ("GET", "d"),
        ("BITOP", "and", "d", "a", "b", "c"), ("GET", "d"),   # shorter sources are zeros past their end
        ("BITOP", "Or", "d", "a"), ("GET", "d"),
        ("BITOP", "xor", "d", "a", "a"), ("GET", "d"),
        ("BITOP", "AND", "d", "a", "missing"), ("GET", "d"),
        ("BITOP", "OR", "d", "missing", "b"), ("GET", "d"),
        ("BITOP", "XOR", "d", "missing", "c", "missing"), ("GET", "d"),
        ("BITOP", "NOT", "d", "c"), ("GET", "d"),
        ("BITOP", "AND", "a2", "a", "a"), ("GET", "a2"),
        ("BITOP", "OR", "a", "a", "b"), ("GET", "a"),      # the destination among the sources
        ("BITOP", "NOT", "a", "a"), ("GET", "a"),
        ("BITOP", b"AND\x00x", "d", "b", "c"), ("GET", "d"),
        ("SET", "ttl", "x", "EX", "100"),
        ("BITOP", "OR", "ttl", "b"), ("TTL", "ttl"), ("GET", "ttl"),   # the result is a new value
        ("HSET", "h", "f", "v"),
        ("BITOP", "OR", "h", "c"), ("TYPE", "h"), ("GET", "h"),       # any type is replaced
        ("SET", "e", ""),
        ("BITOP", "OR", "d", "e", "missing"), ("EXISTS", "d"),       # an empty result deletes it
        ("BITOP", "NOT", "d", "missing"), ("EXISTS", "d"),
        ("BITOP", "AND", "nothere", "missing"), ("EXISTS", "nothere"),
        ("HSET", "h2", "f", "v"),
        ("BITOP", "AND", "h2", "missing", "e"), ("EXISTS", "h2"),
        ("BITOP", "NOT", "d", "e"), ("EXISTS", "d"),
        ("SET", "n", "1234"),
        ("BITOP", "NOT", "d", "n"), ("GET", "d"),
        ("SET", "long", b"\x55" * 300), ("SET", "short", b"\xf0" * 37),
        ("BITOP", "AND", "d", "long", "short"), ("GET", "d"),
        ("BITOP", "XOR", "d", "long", "short", "long"), ("GET", "d"), ("STRLEN", "d"),
    ],
    "bitop errors": [
        ("SET", "a", "x"),
        ("HSET", "h", "f", "v"),
        ("SET", "d", "old"),
        ("BITOP", "FOO", "d", "a"), ("BITOP", "", "d", "a"), ("BITOP", "ANDX", "d", "a"),
        ("BITOP", "DIFF", "d", "a", "a"), ("BITOP", "ONE", "d", "a"),     # newer than 7.0
        ("BITOP", "NOT", "d", "a", "a"), ("BITOP", "not", "d", "a", "missing"),
        ("BITOP", "AND", "d", "h"), ("BITOP", "OR", "d", "a", "h"), ("BITOP", "XOR", "d", "missing", "h"),
        ("BITOP", "NOT", "d", "h"), ("BITOP", "FOO", "d", "h"),
        ("GET", "d"),
    ],
    "bitfield get set incrby": [
        ("BITFIELD", "k", "SET", "u8", "0", "255"),
        ("GET", "k"),
        ("BITFIELD", "k", "GET", "u8", "0", "GET", "i8", "0", "GET", "u4", "0", "GET", "i4", "4"),
        ("BITFIELD", "k", "SET", "i8", "0", "-1", "SET", "u1", "3", "0", "GET", "u8", "0"),
        ("BITFIELD", "k", "INCRBY", "u2", "100", "1", "INCRBY", "u2", "100", "1", "INCRBY", "u2", "100", "1",
         "INCRBY", "u2", "100", "1"),
        ("STRLEN", "k"), ("GET", "k"),
        ("BITFIELD", "k", "INCRBY", "i5", "100", "1", "GET", "u4", "0"),
        ("BITFIELD", "k", "SET", "u8", "#1", "200", "GET", "u8", "#1", "GET", "u8", "8", "GET", "i8", "#1"),
        ("BITFIELD", "k", "SET", "i64", "#2", SMALL, "GET", "i64", "#2", "GET", "u63", "#2"),
        ("BITFIELD", "k", "SET", "i64", "3", BIG, "GET", "i64", "3", "GET", "u63", "4", "GET", "i1", "3"),
        ("BITFIELD", "k", "SET", "u63", "5", BIG, "GET", "u63", "5", "GET", "i63", "5"),
        ("GET", "k"), ("STRLEN", "k"),
        ("BITFIELD", "k", "GET", "u8", "1000"), ("STRLEN", "k"),     # a read grows nothing
        ("BITFIELD", "k", "GET", "i64", "190", "GET", "u63", "190"),  # straddling the end
        ("BITFIELD", "k", "get", "u8", "0", "Get", "i3", "5", b"GET\x00x", "u8", "0"),
        ("BITFIELD", "k", "GET", b"u8\x00x", "0"),
        ("BITFIELD", "k", "SET", "i1", "0", "-1", "SET", "i1", "1", "1", "GET", "u2", "0"),
        ("BITFIELD", "k", "SET", "u1", "0", "1", "SET", "u1", "1", "0", "GET", "u2", "0"),
        ("BITFIELD", "k", "GET", "i8", "#0", "GET", "i8", "#-0"),
        ("BITFIELD", "k"),
        ("BITFIELD", "missing"), ("EXISTS", "missing"),
        ("BITFIELD", "missing", "GET", "i64", "0", "GET", "u8", "#100"), ("EXISTS", "missing"),
        ("BITFIELD_RO", "k", "GET", "u8", "0", "GET", "i16", "#3"),
        ("BITFIELD_RO", "k"), ("BITFIELD_RO", "missing", "GET", "u8", "0"),
        ("BITFIELD_RO", "k", "OVERFLOW", "SAT", "GET", "u8", "0"),
        ("BITFIELD", "new", "SET", "u8", "#3", "7"), ("GET", "new"),
        ("BITFIELD", "new2", "INCRBY", "i16", "5", "-1"), ("GET", "new2"),
        ("SET", "n", "123"),
        ("BITFIELD", "n", "INCRBY", "u8", "0", "1"), ("GET", "n"),
        ("SET", "t", "abc", "EX", "100"),
        ("BITFIELD", "t", "SET", "u8", "100", "1"), ("TTL", "t"), ("STRLEN", "t"),
        ("BITFIELD", "far", "SET", "u8", "80000", "1", "SET", "u8", "0", "1"), ("STRLEN", "far"),
        ("BITCOUNT", "far"), ("GETRANGE", "far", "9999", "-1"),
        ("BITFIELD", "far", "SET", "u8", "2000000", "3", "SET", "u8", "8", "2", "INCRBY", "u8", "2000000", "1"),
        ("STRLEN", "far"), ("BITCOUNT", "far"), ("GETRANGE", "far", "249990", "-1"),
    ],
    "bitfield overflow": [
        # WRAP (the default), SAT and FAIL, switched within one command
        ("BITFIELD", "k", "SET", "u8", "0", "250", "INCRBY", "u8", "0", "10", "GET", "u8", "0"),
        ("BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "300", "INCRBY", "u8", "0", "-300",
         "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "1000", "INCRBY", "u8", "0", "-1", "INCRBY", "u8", "0", "256",
         "OVERFLOW", "WRAP", "INCRBY", "u8", "0", "256", "INCRBY", "u8", "0", "-257"),
        ("BITFIELD", "k", "SET", "i8", "0", "127", "INCRBY", "i8", "0", "1", "GET", "i8", "0"),
        ("BITFIELD", "k", "OVERFLOW", "sat", "INCRBY", "i8", "0", "-1000", "INCRBY", "i8", "0", "1000",
         "OVERFLOW", "fail", "INCRBY", "i8", "0", "1", "INCRBY", "i8", "0", "-255", "INCRBY", "i8", "0", "-254"),
        # SET too is fitted to the type: a negative value is a huge unsigned one
        ("BITFIELD", "k", "SET", "u8", "0", "-1", "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "SET", "u8", "0", "300",
         "OVERFLOW", "FAIL", "SET", "u8", "0", "-1", "SET", "u8", "0", "256", "SET", "u8", "0", "255"),
        ("BITFIELD", "k", "SET", "i8", "0", "200", "OVERFLOW", "SAT", "SET", "i8", "0", "200", "SET", "i8", "0", "-200",
         "OVERFLOW", "FAIL", "SET", "i8", "0", "128", "SET", "i8", "0", "-129", "SET", "i8", "0", "-128"),
        ("BITFIELD", "k", "SET", "i64", "0", BIG, "INCRBY", "i64", "0", "1", "OVERFLOW", "SAT", "INCRBY", "i64", "0",
         SMALL, "INCRBY", "i64", "0", SMALL, "INCRBY", "i64", "0", BIG, "INCRBY", "i64", "0", BIG,
         "OVERFLOW", "FAIL", "INCRBY", "i64", "0", "1", "OVERFLOW", "WRAP", "INCRBY", "i64", "0", BIG),
        ("BITFIELD", "k", "SET", "u63", "0", BIG, "INCRBY", "u63", "0", "1", "SET", "u63", "0", SMALL,
         "OVERFLOW", "SAT", "SET", "u63", "0", SMALL, "INCRBY", "u63", "0", SMALL, "INCRBY", "u63", "0", BIG,
         "INCRBY", "u63", "0", BIG, "OVERFLOW", "FAIL", "INCRBY", "u63", "0", "1", "SET", "u63", "0", "-1"),
        ("BITFIELD", "k", "SET", "i1", "0", "1", "SET", "i1", "0", "-2", "OVERFLOW", "SAT", "SET", "i1", "0", "5",
         "INCRBY", "i1", "0", "-5", "OVERFLOW", "FAIL", "INCRBY", "i1", "0", "1", "INCRBY", "i1", "0", "-1"),
        ("BITFIELD", "k", "SET", "u1", "0", "2", "SET", "u1", "0", "-1", "OVERFLOW", "SAT", "INCRBY", "u1", "0", "5",
         "OVERFLOW", "FAIL", "INCRBY", "u1", "0", "-2", "INCRBY", "u1", "0", "1"),
        ("BITFIELD", "k", "SET", "i32", "#1", "2147483647", "INCRBY", "i32", "#1", "1",
         "INCRBY", "i32", "#1", "-4294967296", "OVERFLOW", "SAT", "INCRBY", "i32", "#1", SMALL),
        ("BITFIELD", "k", "SET", "u32", "#1", "4294967296", "OVERFLOW", "SAT", "SET", "u32", "#1", "4294967296"),
        ("GET", "k"),
        # FAIL writes nothing, yet the string grew to reach the field
        ("BITFIELD", "f", "OVERFLOW", "FAIL", "SET", "u2", "0", "5"), ("EXISTS", "f"), ("GET", "f"),
        ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "5", "GET", "u8", "0"), ("STRLEN", "f"),
        ("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "i8", "#3", "0"), ("GET", "f"),
        ("BITFIELD", "k", "OVERFLOW", "WRAP"), ("BITFIELD", "k", "OVERFLOW", "SAT", "OVERFLOW", "FAIL"),
    ],
    "bitfield errors": [
        ("SET", "k", "v"),
        ("HSET", "h", "f", "v"),
        *[("BITFIELD", "k", "GET", bad, "0") for bad in (
            "i0", "u0", "i65", "u64", "i-1", "u", "i", "", "x8", "I8", "U8", "i08", "i+8", "i 8", "8",
            b"i\x008", "i99999999999999999999", "u9223372036854775807", "i1.0")],
        ("BITFIELD", "k", "GET", "u8", "-1"), ("BITFIELD", "k", "GET", "u8", "#-1"), ("BITFIELD", "k", "GET", "u8", "#"),
        ("BITFIELD", "k", "GET", "u8", "##1"), ("BITFIELD", "k", "GET", "u8", "x"), ("BITFIELD", "k", "GET", "u8", "#x"),
        ("BITFIELD", "k", "GET", "u8", BIG), ("BITFIELD", "k", "GET", "u8", SMALL), ("BITFIELD", "k", "GET", "u8", TOO_BIG),
        ("BITFIELD", "k", "GET", "u8", PAST_MAX_BIT), ("BITFIELD", "k", "GET", "u8", MAX_BIT),
        ("BITFIELD", "k", "GET", "i64", "#67108864"), ("BITFIELD", "k", "GET", "i64", "#67108863"),
        ("BITFIELD", "k", "GET", "u8", "#536870912"), ("BITFIELD", "k", "GET", "u8", "#536870911"),
        ("BITFIELD", "k", "GET", "u8", "#" + BIG), ("BITFIELD", "k", "GET", "u8", "#" + SMALL),
        # #N is N * bits in 64-bit arithmetic: these wrap around to small offsets, as in Redis
        ("BITFIELD", "k", "GET", "i64", "#288230376151711744"), ("BITFIELD", "k", "GET", "u8", "#2305843009213693953"),
        ("BITFIELD", "k", "GET", "u8", "#-2305843009213693951"), ("BITFIELD", "k", "GET", "u8", b"#0\x00"),
        *[("BITFIELD", "k", "GET", "u8", bad) for bad in NOT_INTEGERS],
        ("BITFIELD", "k", "SET", "u8", "0", "x"), ("BITFIELD", "k", "SET", "u8", "0", TOO_BIG),
        ("BITFIELD", "k", "INCRBY", "u8", "0", "1.5"), ("BITFIELD", "k", "INCRBY", "u8", "0", ""),
        *[("BITFIELD", "k", "SET", "u8", "0", bad) for bad in NOT_INTEGERS],
        ("BITFIELD", "k", "GET", "u8"), ("BITFIELD", "k", "SET", "u8", "0"), ("BITFIELD", "k", "INCRBY", "u8", "0"),
        ("BITFIELD", "k", "OVERFLOW"), ("BITFIELD", "k", "OVERFLOW", "BAD"), ("BITFIELD", "k", "OVERFLOW", ""),
        ("BITFIELD", "k", "FOO"), ("BITFIELD", "k", "GET"), ("BITFIELD", "k", "SET"),
        ("BITFIELD", "k", "GET", "u8", "0", "FOO", "u8", "0"),
        # every subcommand is read before any runs: nothing is written when a later one is bad
        ("BITFIELD", "k", "SET", "u8", "0", "65", "GET", "u99", "0"), ("GET", "k"),
        ("BITFIELD", "k", "SET", "u8", "0", "65", "OVERFLOW", "NOPE"), ("GET", "k"),
        ("BITFIELD", "k", "GET", "x", "0", "OVERFLOW", "NOPE"),
        # the arguments before the key's type
        ("BITFIELD", "h", "GET", "u8", "0"), ("BITFIELD", "h", "SET", "u8", "0", "1"), ("BITFIELD", "h"),
        ("BITFIELD", "h", "GET", "i0", "0"), ("BITFIELD", "h", "FOO"),
        ("BITFIELD_RO", "k", "SET", "u8", "0", "1"), ("BITFIELD_RO", "k", "INCRBY", "u8", "0", "1"),
        ("BITFIELD_RO", "k", "GET", "u8", "0", "SET", "u8", "0", "1"), ("BITFIELD_RO", "h", "SET", "u8", "0", "1"),
        ("BITFIELD_RO", "h", "GET", "u8", "0"), ("BITFIELD_RO", "h"), ("BITFIELD_RO", "k", "OVERFLOW", "BAD"),
        ("BITFIELD_RO", "k", "SET", "x8", "0", "1"), ("BITFIELD_RO", "k", "FOO"), ("BITFIELD_RO", "missing", "SET", "u8", "0", "1"),
        ("EXISTS", "missing"), ("GET", "k"),
    ],
    "lcs": [
        ("SET", "a", "ohmytext"),
        ("SET", "b", "mynewtext"),
        ("LCS", "a", "b"), ("LCS", "b", "a"), ("LCS", "a", "a"),
        ("LCS", "a", "b", "LEN"), ("LCS", "a", "b", "len"),
        ("LCS", "a", "b", "IDX"), ("LCS", "b", "a", "IDX"),
        ("LCS", "a", "b", "IDX", "WITHMATCHLEN"), ("LCS", "a", "b", "WITHMATCHLEN", "IDX"),
        ("LCS", "a", "b", "IDX", "MINMATCHLEN", "4"), ("LCS", "a", "b", "IDX", "MINMATCHLEN", "2", "WITHMATCHLEN"),
        ("LCS", "a", "b", "IDX", "MINMATCHLEN", "5"), ("LCS", "a", "b", "IDX", "MINMATCHLEN", "0"),
        ("LCS", "a", "b", "IDX", "MINMATCHLEN", "-5"), ("LCS", "a", "b", "IDX", "MINMATCHLEN", BIG),
        ("LCS", "a", "b", "IDX", "MINMATCHLEN", SMALL), ("LCS", "a", "b", "MINMATCHLEN", "3"),
        ("LCS", "a", "b", "IDX", "MINMATCHLEN", "1", "MINMATCHLEN", "4"),
        ("LCS", "a", "b", "WITHMATCHLEN"), ("LCS", "a", "b", "LEN", "WITHMATCHLEN"), ("LCS", "a", "b", "LEN", "LEN"),
        ("LCS", "a", "b", "IDX", "IDX"), ("LCS", "a", "b", b"IDX\x00x"), ("LCS", "a", "b", "iDx", "withMatchLen"),
        ("LCS", "a", "missing"), ("LCS", "missing", "a", "IDX"), ("LCS", "missing", "missing2", "LEN"),
        ("LCS", "missing", "missing2", "IDX", "WITHMATCHLEN"),
        ("SET", "e", ""), ("LCS", "e", "a"), ("LCS", "a", "e", "IDX"),
        ("SET", "x", "ABCBDAB"), ("SET", "y", "BDCABA"),      # ties: Redis walks back in the second string
        ("LCS", "x", "y"), ("LCS", "x", "y", "IDX", "WITHMATCHLEN"), ("LCS", "y", "x", "IDX"),
        ("SET", "p", "aaaa"), ("SET", "q", "aa"), ("LCS", "p", "q", "IDX", "WITHMATCHLEN"), ("LCS", "q", "p", "IDX"),
        ("SET", "u", b"\x00\xff\x00\r\n\xff"), ("SET", "v", b"\xff\x00\r\x00\xff"),
        ("LCS", "u", "v"), ("LCS", "u", "v", "IDX", "WITHMATCHLEN"),
        ("SET", "n1", "12345"), ("SET", "n2", "2x4y5"), ("LCS", "n1", "n2", "IDX"),
        ("SET", "l1", "the quick brown fox jumps over the lazy dog " * 8),
        ("SET", "l2", "pack my box with five dozen liquor jugs, quick! " * 8),
        ("LCS", "l1", "l2"), ("LCS", "l1", "l2", "LEN"), ("LCS", "l1", "l2", "IDX", "MINMATCHLEN", "3", "WITHMATCHLEN"),
    ],
    "lcs errors": [
        ("SET", "a", "ohmytext"),
        ("HSET", "h", "f", "v"),
        ("LCS", "a", "a", "IDX", "LEN"), ("LCS", "a", "a", "LEN", "IDX"), ("LCS", "a", "a", "LEN", "MINMATCHLEN", "1", "IDX"),
        ("LCS", "a", "a", "MINMATCHLEN"), ("LCS", "a", "a", "MINMATCHLEN", "x"), ("LCS", "a", "a", "MINMATCHLEN", TOO_BIG),
        ("LCS", "a", "a", "MINMATCHLEN", "1.5"), ("LCS", "a", "a", "FOO"), ("LCS", "a", "a", "IDX", "FOO"),
        ("LCS", "a", "a", "MINMATCHLEN", "x", "FOO"), ("LCS", "a", "a", "FOO", "IDX", "LEN"),
        ("LCS", "a", "a", ""),
        # both keys are looked up and checked before the options are read
        ("LCS", "a", "h"), ("LCS", "h", "a"), ("LCS", "h", "h"), ("LCS", "h", "missing"), ("LCS", "h", "a", "FOO"),
        ("LCS", "missing", "h", "IDX", "LEN"), ("LCS", "missing", "a", "FOO"),
    ],
    "transactions": [
        ("SET", "s", "foobar"),
        ("MULTI",),
        ("SETBIT", "s", "0", "1"),
        ("BITCOUNT", "s"),
        ("BITPOS", "s", "0"),
        ("BITFIELD", "s", "INCRBY", "u8", "#1", "1", "GET", "u8", "#1"),
        ("BITFIELD_RO", "s", "GET", "i8", "0"),
        ("BITOP", "NOT", "t", "s"),
        ("GETBIT", "t", "0"),
        ("LCS", "s", "t", "IDX"),
        ("SETBIT", "s", "x", "1"),
        ("EXEC",),
        ("MULTI",),
        ("SETBIT", "s", "0"),             # an arity error aborts the transaction
        ("BITCOUNT", "s"),
        ("EXEC",),
        ("GET", "s"),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_bitmap_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol, name)


# ------------------------------------------------------------ limits

@pytest.fixture
def small_bulk_limit(redis_oracle, cxl):
    """proto-max-bulk-len lowered to 1 MiB on both servers (Redis's least), then restored."""
    def limit(value):
        for server in (redis_oracle, cxl):
            with raw_connection(server.port) as conn:
                assert conn.request("CONFIG", "SET", "proto-max-bulk-len", value) == b"+OK\r\n"
    limit("1mb")
    try:
        yield
    finally:
        limit("512mb")


LAST = str(8 * 2**20 - 1)           # the last bit a 1 MiB string has
PAST = str(8 * 2**20)


@pytest.mark.parametrize("protocol", [2, 3])
def test_offsets_at_the_proto_max_bulk_len_limit(redis_oracle, cxl, small_bulk_limit, protocol):
    run_sequence(redis_oracle, cxl, [
        ("SETBIT", "k", PAST, "1"), ("EXISTS", "k"),
        ("GETBIT", "k", PAST), ("GETBIT", "k", LAST),
        ("SETBIT", "k", LAST, "1"),          # the largest string SETBIT makes: 1 MiB
        ("STRLEN", "k"), ("GETBIT", "k", LAST), ("BITCOUNT", "k"), ("BITPOS", "k", "1"),
        ("BITPOS", "k", "0", "-1"), ("BITCOUNT", "k", "-1", "-1"), ("GETRANGE", "k", "-2", "-1"),
        ("SETBIT", "k", LAST, "1"), ("SETBIT", "k", PAST, "0"), ("STRLEN", "k"),
        ("BITFIELD", "k", "GET", "u8", "#1048575", "GET", "u8", "#1048576"),
        ("BITFIELD", "k", "GET", "u8", PAST),
        ("BITFIELD", "k", "GET", "u8", "#1048575"),
        # a field may start at the last bit and run past it: the string outgrows the limit
        ("BITFIELD", "f", "SET", "i64", LAST, "-1"), ("STRLEN", "f"), ("BITCOUNT", "f"),
        ("BITFIELD", "f", "GET", "i64", LAST, "GET", "u63", LAST),
        ("BITFIELD", "g", "SET", "u8", "#1048575", "255"), ("STRLEN", "g"),
        ("BITFIELD", "g", "SET", "i64", "#131072", "1"),
        # LCS's table is transient memory, held to proto-max-bulk-len too
        ("SET", "a", "x" * 600), ("SET", "b", "x" * 600),
        ("LCS", "a", "b", "LEN"), ("LCS", "a", "b"), ("LCS", "a", "b", "IDX"),
        ("SET", "b", "x" * 300), ("LCS", "a", "b", "LEN"), ("LCS", "a", "missing"),
        ("SET", "b", "x" * 435), ("LCS", "a", "b", "LEN"), ("SET", "b", "x" * 436), ("LCS", "a", "b", "LEN"),
    ], protocol, "offsets at the limit")


@pytest.fixture
def over_maxmemory(redis_oracle, cxl):
    """Both servers past a 1-byte maxmemory under noeviction (the default policies
    differ: they are put back as they were)."""
    saved = {}
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            saved[server.port] = conn.request("CONFIG", "GET", "maxmemory-policy").split(b"\r\n")[-2]
    yield [("SET", "k", "foobar"), ("SET", "other", "x"),
           ("CONFIG", "SET", "maxmemory-policy", "noeviction"), ("CONFIG", "SET", "maxmemory", "1")]
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            assert conn.request("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
            assert conn.request("CONFIG", "SET", "maxmemory-policy", saved[server.port]) == b"+OK\r\n"


@pytest.mark.parametrize("protocol", [2, 3])
def test_denyoom_commands_are_refused_over_maxmemory(redis_oracle, cxl, over_maxmemory, protocol):
    # SETBIT, BITOP and BITFIELD are denyoom (BITFIELD even with GETs only); the reads are not
    run_sequence(redis_oracle, cxl, [
        *over_maxmemory,
        ("SETBIT", "k", "0", "1"), ("SETBIT", "k", "1", "1"), ("SETBIT", "new", "0", "1"),
        ("BITFIELD", "k", "GET", "u8", "0"), ("BITFIELD", "k", "SET", "u8", "0", "1"), ("BITFIELD", "k"),
        ("BITOP", "AND", "d", "k"), ("BITOP", "AND", "d", "missing"),
        ("BITFIELD_RO", "k", "GET", "u8", "0"), ("GETBIT", "k", "1"), ("BITCOUNT", "k"), ("BITPOS", "k", "1"),
        ("LCS", "k", "k", "IDX"),
        ("DEL", "other"), ("GET", "k"), ("EXISTS", "new", "d"),
        ("CONFIG", "SET", "maxmemory", "0"),
        ("SETBIT", "k", "0", "1"), ("BITFIELD", "k", "GET", "u8", "0"),
    ], protocol, "over maxmemory")


# ------------------------------------------------------------ ACL

ACL_USERS = {
    # reads src:*, writes dst:* (without reading it), both on both:*
    "bm-split": ["on", ">pw", "resetkeys", "%R~src:*", "%W~dst:*", "~both:*", "+@all"],
    "bm-nobits": ["on", ">pw", "~*", "+@all", "-@bitmap"],
}


@pytest.fixture
def acl_users(redis_oracle, cxl):
    def each(*argv):
        for server in (redis_oracle, cxl):
            with raw_connection(server.port) as conn:
                conn.request(*argv)
    for user, rules in ACL_USERS.items():
        each("ACL", "SETUSER", user, "reset", *rules)
    try:
        yield
    finally:
        each("ACL", "DELUSER", *ACL_USERS)


@pytest.mark.parametrize("protocol", [2, 3])
def test_acl_key_permissions_and_categories(redis_oracle, cxl, acl_users, protocol):
    split = [cmd(*argv, conn=1) for argv in [
        ("AUTH", "bm-split", "pw"),
        ("BITOP", "AND", "dst:1", "src:1", "src:2"), ("BITOP", "AND", "src:1", "dst:1"),
        ("BITOP", "OR", "dst:1", "src:1", "dst:2"), ("BITOP", "NOT", "both:1", "src:1"),
        # BITFIELD reads only while every subcommand is a GET (a syntax error may write)
        ("BITFIELD", "src:1", "GET", "u8", "0"), ("BITFIELD", "src:1", "OVERFLOW", "SAT", "GET", "i4", "0"),
        ("BITFIELD", "src:1"), ("BITFIELD", "src:1", "SET", "u8", "0", "1"),
        ("BITFIELD", "src:1", "GET", "u8", "0", "INCRBY", "u8", "0", "1"), ("BITFIELD", "src:1", "GET", "u8"),
        ("BITFIELD", "src:1", "FOO"), ("BITFIELD", "dst:1", "SET", "u8", "0", "1"),
        ("BITFIELD", "both:1", "SET", "u8", "0", "1"), ("BITFIELD_RO", "src:1", "GET", "u8", "0"),
        ("BITFIELD_RO", "dst:1", "GET", "u8", "0"), ("BITFIELD_RO", "src:1", "SET", "u8", "0", "1"),
        ("SETBIT", "src:1", "0", "1"), ("SETBIT", "dst:1", "0", "1"), ("SETBIT", "both:1", "0", "1"),
        ("GETBIT", "src:1", "0"), ("GETBIT", "dst:1", "0"), ("BITCOUNT", "src:1"), ("BITCOUNT", "dst:1"),
        ("BITPOS", "src:1", "1"), ("BITPOS", "dst:1", "1"),
        ("LCS", "src:1", "src:2"), ("LCS", "src:1", "dst:1"), ("LCS", "both:1", "src:2", "IDX"),
        ("AUTH", "bm-nobits", "pw"),
        ("SETBIT", "k", "0", "1"), ("GETBIT", "k", "0"), ("BITOP", "AND", "d", "k"), ("BITFIELD_RO", "k"),
        ("LCS", "src:1", "src:2"),
    ]]
    run_sequence(redis_oracle, cxl, [
        ("SET", "src:1", "ohmytext"), ("SET", "src:2", "mynewtext"), ("SET", "dst:2", "x"),
        *split,
        ("GET", "dst:1"), ("GET", "both:1"), ("GET", "src:1"),
        ("ACL", "DRYRUN", "bm-split", "BITFIELD", "src:1", "GET", "u8", "0"),
        ("ACL", "DRYRUN", "bm-split", "BITFIELD", "src:1", "SET", "u8", "0", "1"),
        ("ACL", "DRYRUN", "bm-split", "BITOP", "XOR", "dst:9", "src:1", "both:2"),
        ("ACL", "DRYRUN", "bm-nobits", "BITCOUNT", "k"),
    ], protocol, "acl")


# ------------------------------------------------------------ generated sequences

KEYS = ["a", "b", "c"]
NUMBERS = ["0", "1", "2", "3", "7", "8", "9", "15", "-1", "-2", "-8", "-9", "100", "-100",
           "127", "-128", "255", "256", BIG, SMALL, "x", "01"]
TYPES = ["i1", "i2", "i7", "i8", "i9", "i16", "i32", "i63", "i64", "u1", "u2", "u7", "u8", "u9",
         "u16", "u32", "u63", "u64", "i0", "x8"]
OFFSETS = ["0", "1", "3", "7", "8", "13", "31", "64", "100", "#0", "#1", "#3", "-1", "x"]
BIT_OFFSETS = ["0", "1", "7", "8", "15", "33", "100", "-1", "x"]


def values():
    # few distinct bytes, so that runs of 0s and 1s and common subsequences happen
    byte = st.sampled_from([0x00, 0xFF, 0x0F, 0xF0, 0x55, 0x61, 0x62, 0x63])
    return st.lists(byte, max_size=24).map(bytes)


def bitfield_args():
    op = st.one_of(
        st.tuples(st.just("GET"), st.sampled_from(TYPES), st.sampled_from(OFFSETS)),
        st.tuples(st.sampled_from(["SET", "INCRBY"]), st.sampled_from(TYPES), st.sampled_from(OFFSETS),
                  st.sampled_from(NUMBERS)),
        st.tuples(st.just("OVERFLOW"), st.sampled_from(["WRAP", "SAT", "FAIL", "fail", "BAD"])),
        st.tuples(st.sampled_from(["GET", "SET", "FOO"])))
    return st.lists(op, max_size=4).map(lambda ops: [word for op in ops for word in op])


def range_args():
    unit = st.sampled_from(["BIT", "BYTE", "bit", "FOO"])
    number = st.sampled_from(NUMBERS)
    return st.one_of(st.just([]), st.tuples(number).map(list), st.tuples(number, number).map(list),
                     st.tuples(number, number, unit).map(list))


def command(name, *parts):
    return st.tuples(st.just(name), *parts).map(list)


keys = st.sampled_from(KEYS)
maybe_missing = st.sampled_from(KEYS + ["missing"])

COMMANDS = st.one_of(
    command("SET", keys, values()),
    command("SETBIT", keys, st.sampled_from(BIT_OFFSETS), st.sampled_from(["0", "1", "1", "2"])),
    command("GETBIT", keys, st.sampled_from(BIT_OFFSETS)),
    st.tuples(st.just("BITCOUNT"), maybe_missing, range_args()).map(lambda t: [*t[:2], *t[2]]),
    st.tuples(st.just("BITPOS"), maybe_missing, st.sampled_from(["0", "1", "1", "2"]), range_args()).map(
        lambda t: [*t[:3], *t[3]]),
    st.tuples(st.just("BITOP"), st.sampled_from(["AND", "OR", "XOR", "NOT", "FOO"]), keys,
              st.lists(maybe_missing, min_size=1, max_size=3)).map(lambda t: [*t[:3], *t[3]]),
    st.tuples(st.sampled_from(["BITFIELD", "BITFIELD_RO"]), keys, bitfield_args()).map(lambda t: [*t[:2], *t[2]]),
    command("GETRANGE", keys, st.sampled_from(["0", "1", "-1", "-3"]), st.sampled_from(["-1", "2", "100"])),
    st.tuples(st.just("LCS"), maybe_missing, maybe_missing,
              st.lists(st.sampled_from(["LEN", "IDX", "WITHMATCHLEN", "MINMATCHLEN", "2", "0"]), max_size=3)).map(
        lambda t: [*t[:3], *t[3]]),
    command("APPEND", keys, values()),
    command("SETRANGE", keys, st.sampled_from(["0", "2", "9"]), values()),
    command("HSET", st.just("c"), st.just("f"), st.just("v")),
    command("DEL", keys),
    command("GET", keys),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(COMMANDS, min_size=3, max_size=25), protocol=st.sampled_from([2, 3]))
def test_generated_bitmap_sequences(redis_oracle, cxl, steps, protocol):
    flushall(redis_oracle, cxl)     # for each example (a function-scoped fixture runs once)
    run_sequence(redis_oracle, cxl, [*steps, *(("GET", key) for key in KEYS)], protocol, "generated")
