"""Set commands, replayed on redis-server and cxlredis; replies must match (RESP2 and RESP3).

An intset's members come in numeric order on both servers, and so do the results Redis
gathers in an intset (SUNION, SDIFF, SPOP of a whole set): those replies are compared
byte for byte. A hashtable's order is Redis's dict order, which no client may rely on:
those replies are compared as the same reply type holding the same members (UNORDERED),
and random picks by their shape, count and membership (picks()).
"""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import parse_reply, raw_connection
from diff_harness import cmd, flushall, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)


@pytest.fixture(autouse=True)
def default_intset_entries(redis_oracle, cxl):
    """Sequences change set-max-intset-entries on both servers; the next test starts at 512."""
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            assert conn.request("CONFIG", "SET", "set-max-intset-entries", "512") == b"+OK\r\n"


def _status(a, b):
    return a[:1] in (b"-", b"!", b"+", b"_") or b[:1] in (b"-", b"!", b"+", b"_")


def _unordered(argv, a, b):
    if _status(a, b):
        return a == b
    x, y = parse_reply(a), parse_reply(b)
    if argv[0].upper() == b"SSCAN":     # one call from cursor 0 to 0: the whole set
        return a[:1] == b[:1] and x[0] == y[0] == b"0" and sorted(x[1]) == sorted(y[1])
    return a[:1] == b[:1] and sorted(x) == sorted(y)


UNORDERED = _unordered


def picks(universe, distinct):
    """Random members: the same reply type and count, each one of universe, none twice
    when distinct."""
    universe = {m.encode() if isinstance(m, str) else m for m in universe}

    def compare(argv, a, b):
        if _status(a, b):
            return a == b
        x, y = parse_reply(a), parse_reply(b)
        if x is None or y is None:
            return a == b
        if isinstance(x, bytes) or isinstance(y, bytes):
            return a[:1] == b[:1] and x in universe and y in universe
        return (a[:1] == b[:1] and len(x) == len(y) and set(y) <= universe
                and (not distinct or len(set(y)) == len(y)))
    return compare


def unordered(*args):
    return cmd(*args, compare=UNORDERED)


def random_step(universe, *args, distinct=True):
    return cmd(*args, compare=picks(universe, distinct))


BOUNDARY_MEMBERS = ["0", "-1", "1", str(LONG_MAX), str(LONG_MIN)]
NOT_INTEGERS = ["01", "-0", "+1", " 1", "1 ", "1.5", "1e3", "0x10", str(LONG_MAX + 1),
                str(LONG_MIN - 1), "inf", "nan", "", "abc"]

SEQUENCES = {
    "sadd srem scard sismember smismember": [
        ("SADD", "s", "3", "1", "2", "1"),
        ("SADD", "s", "2"),
        ("SCARD", "s"),
        ("SISMEMBER", "s", "1"),
        ("SISMEMBER", "s", "01"),
        ("SISMEMBER", "s", "9"),
        ("SMISMEMBER", "s", "1", "01", "x", "3", "1"),
        ("SMEMBERS", "s"),
        ("OBJECT", "ENCODING", "s"),
        ("SREM", "s", "9", "01", "x"),
        ("SREM", "s", "1", "1", "3"),
        ("SMEMBERS", "s"),
        ("SREM", "s", "2", "7"),
        ("EXISTS", "s"),
        ("SREM", "missing", "a"),
        ("SCARD", "missing"),
        ("SISMEMBER", "missing", "a"),
        ("SMISMEMBER", "missing", "a", "b"),
        ("SMEMBERS", "missing"),
        ("SADD", "t", "a", "b", "b", ""),
        ("SCARD", "t"),
        ("SISMEMBER", "t", ""),
        unordered("SMEMBERS", "t"),
        ("OBJECT", "ENCODING", "t"),
        ("TYPE", "t"),
        ("SREM", "t", "a", "b", "", "c"),
        ("TYPE", "t"),
        ("SADD", "s"),
        ("SREM", "s"),
        ("SCARD", "s", "x"),
        ("SISMEMBER", "s"),
        ("SMISMEMBER", "s"),
        ("SMEMBERS",),
    ],
    "intset members and their order": [
        ("SADD", "s", *BOUNDARY_MEMBERS),
        ("OBJECT", "ENCODING", "s"),
        ("SMEMBERS", "s"),
        ("SSCAN", "s", "0"),
        ("SSCAN", "s", "123", "COUNT", "1"),
        ("SSCAN", "s", "0", "MATCH", "-*"),
        *[step for member in NOT_INTEGERS for step in (
            ("SISMEMBER", "s", member), ("SADD", f"n{member}", "1", member),
            ("OBJECT", "ENCODING", f"n{member}"), ("SREM", f"n{member}", member),
            ("OBJECT", "ENCODING", f"n{member}"), ("SMISMEMBER", f"n{member}", "1", member))],
        ("SADD", "s", "-2", "7", "100000", "-100000", "65536", "-2147483649"),
        ("SMEMBERS", "s"),
        ("SUNION", "s"),
        ("SINTER", "s", "s"),
        ("SDIFF", "s", "missing"),
        ("SRANDMEMBER", "s", "100"),
        ("SPOP", "s", "100"),
        ("EXISTS", "s"),
    ],
    "set-max-intset-entries": [
        ("CONFIG", "SET", "set-max-intset-entries", "3"),
        ("SADD", "s", "1", "2", "3"),
        ("OBJECT", "ENCODING", "s"),
        ("SADD", "s", "3"),
        ("OBJECT", "ENCODING", "s"),
        ("SADD", "s", "4"),
        ("OBJECT", "ENCODING", "s"),
        ("SREM", "s", "4", "3"),
        ("OBJECT", "ENCODING", "s"),           # a hashtable for good
        unordered("SMEMBERS", "s"),
        ("SADD", "big", "1", "2", "3", "4"),
        ("OBJECT", "ENCODING", "big"),
        ("SUNIONSTORE", "u", "s"),             # the result is an intset again
        ("OBJECT", "ENCODING", "u"),
        ("SMEMBERS", "u"),
        ("SUNION", "s"),
        ("SPOP", "s", "10"),
        ("CONFIG", "SET", "set-max-intset-entries", "0"),
        ("SADD", "z", "1"),
        ("OBJECT", "ENCODING", "z"),
        ("SMOVE", "u", "z2", "1"),
        ("OBJECT", "ENCODING", "z2"),
        ("SINTERSTORE", "z3", "u"),
        ("OBJECT", "ENCODING", "z3"),
        ("CONFIG", "SET", "set-max-intset-entries", "512"),
        ("SADD", "z4", "1"),
        ("OBJECT", "ENCODING", "z4"),
    ],
    "smove": [
        ("SADD", "a", "1", "2", "x"),
        ("SADD", "b", "2"),
        ("SET", "str", "v"),
        ("SMOVE", "a", "b", "1"),
        ("SMOVE", "a", "b", "2"),
        ("SMEMBERS", "b"),
        ("SMOVE", "a", "b", "nope"),
        ("SMOVE", "a", "a", "x"),
        ("SMOVE", "a", "a", "nope"),
        ("SMOVE", "missing", "str", "x"),
        ("SMOVE", "missing", "b", "x"),
        ("SMOVE", "a", "str", "x"),
        ("SMOVE", "a", "str", "nope"),
        ("SMOVE", "str", "a", "x"),
        ("SMOVE", "a", "new", "x"),
        ("OBJECT", "ENCODING", "new"),
        ("EXISTS", "a"),
        ("SMOVE", "b", "new2", "1"),
        ("OBJECT", "ENCODING", "new2"),
        ("SMOVE", "new", "b", "x"),
        ("OBJECT", "ENCODING", "b"),
        unordered("SMEMBERS", "b"),
        ("SMOVE", "b", "c"),
        ("SMOVE", "b", "c", "1", "2"),
    ],
    "spop": [
        ("SADD", "s", "1", "2", "3"),
        ("SET", "str", "v"),
        *[("SPOP", "s", count) for count in ("-1", "abc", "1.5", "", str(LONG_MIN), str(LONG_MAX + 1),
                                             "-0", " 1")],
        ("SPOP", "s", "0"),
        ("SPOP", "s", "1", "2"),
        ("SPOP", "missing"),
        ("SPOP", "missing", "2"),
        ("SPOP", "missing", "0"),
        ("SPOP", "missing", "-1"),
        ("SPOP", "str"),
        ("SPOP", "str", "1"),
        ("SPOP", "str", "0"),
        ("SPOP", "str", "-1"),
        ("SCARD", "s"),
        ("SPOP", "s", "3"),
        ("EXISTS", "s"),
        ("SADD", "s", "1", "2", "3"),
        ("SPOP", "s", str(LONG_MAX)),
        ("SADD", "one", "x"),
        ("SPOP", "one"),
        ("EXISTS", "one"),
        ("SADD", "r", *map(str, range(20))),
        random_step(map(str, range(20)), "SPOP", "r"),
        random_step(map(str, range(20)), "SPOP", "r", "2"),     # picked one by one
        ("SCARD", "r"),
        random_step(map(str, range(20)), "SPOP", "r", "15"),    # the rest moved to a new set
        ("SCARD", "r"),
        ("OBJECT", "ENCODING", "r"),
        # a hashtable whose remainder is integers only becomes an intset again...
        ("SADD", "h", "x", *map(str, range(30))),
        ("SREM", "h", "x"),
        ("EXPIRE", "h", "1000"),
        random_step(map(str, range(30)), "SPOP", "h", "28"),
        ("OBJECT", "ENCODING", "h"),
        ("SCARD", "h"),
        ("TTL", "h"),
        # ...but not when the members are picked off it one by one
        ("SADD", "h2", "x", *map(str, range(30))),
        ("SREM", "h2", "x"),
        random_step(map(str, range(30)), "SPOP", "h2", "20"),
        ("OBJECT", "ENCODING", "h2"),
        # strings stay a hashtable; the whole of a hashtable of integers comes in order
        ("SADD", "w", *[f"m{i}" for i in range(30)]),
        random_step([f"m{i}" for i in range(30)], "SPOP", "w", "29"),
        ("OBJECT", "ENCODING", "w"),
        ("SADD", "h3", "x", "5", "3", "9"),
        ("SREM", "h3", "x"),
        ("SPOP", "h3", "3"),
        ("SADD", "h4", "x", "5", "3"),
        unordered("SPOP", "h4", "3"),
    ],
    "srandmember": [
        ("SADD", "s", "1", "2", "3"),
        ("SET", "str", "v"),
        random_step("123", "SRANDMEMBER", "s"),
        random_step("123", "SRANDMEMBER", "s", "1"),
        random_step("123", "SRANDMEMBER", "s", "2"),
        ("SRANDMEMBER", "s", "3"),
        ("SRANDMEMBER", "s", "4"),
        ("SRANDMEMBER", "s", str(LONG_MAX)),
        ("SRANDMEMBER", "s", "0"),
        random_step("123", "SRANDMEMBER", "s", "-1", distinct=False),
        random_step("123", "SRANDMEMBER", "s", "-10", distinct=False),
        *[("SRANDMEMBER", "s", count) for count in (str(LONG_MIN), str(LONG_MAX + 1), "abc", "1.5", "",
                                                    "-0", " 1")],
        ("SRANDMEMBER", "s", "1", "2"),
        ("SRANDMEMBER", "missing"),
        ("SRANDMEMBER", "missing", "5"),
        ("SRANDMEMBER", "missing", "-5"),
        ("SRANDMEMBER", "missing", "0"),
        ("SRANDMEMBER", "missing", "abc"),
        ("SRANDMEMBER", "str"),
        ("SRANDMEMBER", "str", "1"),
        ("SRANDMEMBER", "str", "abc"),
        ("SADD", "big", *map(str, range(100))),
        random_step(map(str, range(100)), "SRANDMEMBER", "big", "10"),
        random_step(map(str, range(100)), "SRANDMEMBER", "big", "90"),
        random_step(map(str, range(100)), "SRANDMEMBER", "big", "-200", distinct=False),
        ("SADD", "w", "a", "b"),
        unordered("SRANDMEMBER", "w", "5"),
        random_step("ab", "SRANDMEMBER", "w", "-3", distinct=False),
    ],
    "sinter sintercard sinterstore": [
        ("SADD", "a", "1", "2", "3", "4", "5"),
        ("SADD", "b", "5", "3", "9"),
        ("SADD", "c", "x", "5", "3", "7", "8", "9"),
        ("SET", "str", "v"),
        ("SINTER", "a", "b"),
        ("SINTER", "b", "a"),
        ("SINTER", "a", "c"),                  # the smallest set, an intset, sets the order
        unordered("SINTER", "c", "c"),
        ("SINTER", "a", "b", "c"),
        ("SINTER", "a", "missing", "b"),
        ("SINTER", "missing", "str"),
        ("SINTER", "str", "missing"),
        ("SINTER", "a", "str"),
        ("SINTER", "missing"),
        ("SINTERCARD", "2", "a", "b"),
        ("SINTERCARD", "3", "a", "b", "c"),
        ("SINTERCARD", "2", "a", "b", "LIMIT", "1"),
        ("SINTERCARD", "2", "a", "b", "limit", "0"),
        ("SINTERCARD", "2", "a", "b", "LIMIT", "5"),
        ("SINTERCARD", "1", "a", "LIMIT", "1", "LIMIT", "3"),
        ("SINTERCARD", "1", "missing"),
        ("SINTERCARD", "2", "missing", "str"),
        ("SINTERCARD", "1", "str", "LIMIT", "-1"),
        *[("SINTERCARD", numkeys, "a", "b") for numkeys in ("0", "-1", "abc", "3", "1.5", "",
                                                             str(LONG_MAX), str(LONG_MAX + 1))],
        *[("SINTERCARD", "1", "a", *tail) for tail in (("LIMIT",), ("LIMIT", "-1"), ("LIMIT", "x"),
                                                        ("LIMIT", str(LONG_MAX + 1)), ("FOO", "1"),
                                                        ("LIMIT", "1", "x"), ("LIMIT\0x", "1"))],
        ("SINTERCARD", "1"),
        ("SINTERSTORE", "d", "a", "b"),
        ("OBJECT", "ENCODING", "d"),
        ("SMEMBERS", "d"),
        ("SINTERSTORE", "d", "a", "c"),
        ("SINTERSTORE", "d", "c", "c"),
        ("OBJECT", "ENCODING", "d"),
        unordered("SMEMBERS", "d"),
        ("SINTERSTORE", "d", "a", "b", "c"),   # a hashtable becomes an intset
        ("OBJECT", "ENCODING", "d"),
        ("SINTERSTORE", "d", "a", "missing"),
        ("EXISTS", "d"),
        ("SINTERSTORE", "d", "a", "missing"),
        ("SINTERSTORE", "str", "a", "b"),      # whatever the destination held
        ("TYPE", "str"),
        ("SET", "str", "v", "EX", "100"),
        ("SINTERSTORE", "str", "b", "c"),
        ("TTL", "str"),
        ("SINTERSTORE", "d", "missing", "str"),
        ("SINTERSTORE", "d", "str", "missing"),
        ("SINTERSTORE", "a", "a", "b"),
        ("SMEMBERS", "a"),
        ("SINTERSTORE", "d"),
    ],
    "sunion sunionstore": [
        ("SADD", "a", "3", "1"),
        ("SADD", "b", "2", "-7"),
        ("SADD", "c", "x", "1"),
        ("SET", "str", "v"),
        ("SUNION", "a", "b"),
        ("SUNION", "b", "a", "missing", "a"),
        unordered("SUNION", "a", "c"),
        ("SUNION", "missing"),
        ("SUNION", "missing", "str"),
        ("SUNION", "a", "str"),
        ("SUNIONSTORE", "d", "a", "b"),
        ("OBJECT", "ENCODING", "d"),
        ("SMEMBERS", "d"),
        ("EXPIRE", "d", "100"),
        ("SUNIONSTORE", "d", "a", "c"),
        ("TTL", "d"),
        ("OBJECT", "ENCODING", "d"),
        unordered("SMEMBERS", "d"),
        ("SUNIONSTORE", "d", "a"),
        ("OBJECT", "ENCODING", "d"),
        ("SMEMBERS", "d"),
        ("SUNIONSTORE", "d", "missing"),
        ("EXISTS", "d"),
        ("SUNIONSTORE", "d", "missing"),
        ("SUNIONSTORE", "str", "a"),
        ("TYPE", "str"),
        ("SUNIONSTORE", "d", "str", "a"),
        ("SUNIONSTORE", "a", "a", "b"),
        ("SMEMBERS", "a"),
        ("SUNIONSTORE", "d"),
    ],
    "sdiff sdiffstore": [
        ("SADD", "a", "1", "2", "3", "4", "x"),
        ("SADD", "b", "2", "9"),
        ("SADD", "c", "x", "4"),
        ("SET", "str", "v"),
        ("SDIFF", "a", "b", "c"),
        ("SDIFF", "b", "a"),
        unordered("SDIFF", "a", "b"),
        ("SDIFF", "a", "missing", "a"),
        ("SDIFF", "a", "b", "a"),
        ("SDIFF", "missing", "a"),
        ("SDIFF", "missing", "str"),
        ("SDIFF", "str", "missing"),
        ("SDIFF", "a", "str"),
        ("SDIFFSTORE", "d", "a", "b", "c"),
        ("OBJECT", "ENCODING", "d"),
        ("SMEMBERS", "d"),
        ("SDIFFSTORE", "d", "a", "a"),
        ("EXISTS", "d"),
        ("SDIFFSTORE", "d", "missing", "a"),
        ("SDIFFSTORE", "str", "b"),
        ("TYPE", "str"),
        ("SDIFFSTORE", "d", "missing", "str"),
        ("SDIFFSTORE", "b", "b", "c"),
        ("SMEMBERS", "b"),
        # Redis's second algorithm copies the whole first set before removing: its encoding stays
        ("CONFIG", "SET", "set-max-intset-entries", "5"),
        ("SADD", "big", *map(str, range(1, 11))),
        ("SADD", "c3", "1", "2", "3"),
        ("SADD", "e2", "4", "5"),
        ("SADD", "f1", "6"),
        ("SADD", "c6", "1", "2", "3", "4", "5", "6"),
        ("SDIFFSTORE", "two", "big", "c3", "e2", "f1"),
        ("OBJECT", "ENCODING", "two"),
        unordered("SMEMBERS", "two"),
        unordered("SDIFF", "big", "c3", "e2", "f1"),
        ("SDIFFSTORE", "one", "big", "c6"),
        ("OBJECT", "ENCODING", "one"),
        ("SMEMBERS", "one"),
        ("SDIFF", "big", "c6"),
        ("SADD", "w", "x", "1", "2"),
        ("SADD", "wx", "x"),
        ("SDIFF", "w", "wx", "wx", "wx"),
        ("SDIFFSTORE", "w1", "w", "wx", "wx", "wx"),
        ("OBJECT", "ENCODING", "w1"),
        ("SDIFFSTORE", "d"),
    ],
    "sscan": [
        ("SADD", "s", "1", "22", "3", "12"),
        ("SET", "str", "v"),
        ("SSCAN", "s", "0"),
        ("SSCAN", "s", "0", "MATCH", "1*"),
        ("SSCAN", "s", "0", "match", "*2", "count", "1"),
        ("SSCAN", "s", "0", "COUNT", "100", "MATCH", "[13]"),
        ("SSCAN", "s", "18446744073709551615"),
        ("SSCAN", "s", "-1"),
        *[("SSCAN", "s", cursor) for cursor in ("x", "1.5", "18446744073709551616", " 1")],
        *[("SSCAN", "s", "0", *tail) for tail in (("COUNT", "0"), ("COUNT", "-1"), ("COUNT", "x"),
                                                   ("MATCH",), ("COUNT",), ("TYPE", "set"),
                                                   ("BOGUS", "1"))],
        ("SSCAN", "missing", "0"),
        ("SSCAN", "missing", "0", "COUNT", "0"),
        ("SSCAN", "missing", "x"),
        ("SSCAN", "str", "0"),
        ("SSCAN", "str", "x"),
        ("SADD", "h", "a", "b", "ab", "c"),
        unordered("SSCAN", "h", "0", "COUNT", "1000"),
        unordered("SSCAN", "h", "0", "COUNT", "1000", "MATCH", "a*"),
        ("SSCAN", "h", "0", "COUNT", "0"),
        ("SSCAN", "s"),
    ],
    "wrong types both ways": [
        ("SET", "str", "v"),
        ("HSET", "hash", "f", "v"),
        *[(name, key, *args) for key in ("str", "hash") for name, *args in (
            ("SADD", "m"), ("SREM", "m"), ("SMEMBERS",), ("SISMEMBER", "m"), ("SMISMEMBER", "m"),
            ("SCARD",), ("SPOP",), ("SPOP", "2"), ("SRANDMEMBER",), ("SRANDMEMBER", "-2"),
            ("SINTER",), ("SUNION",), ("SDIFF",), ("SSCAN", "0"))],
        ("SADD", "set", "1"),
        ("GET", "set"),
        ("HGET", "set", "f"),
        ("APPEND", "set", "x"),
        ("INCR", "set"),
        ("OBJECT", "ENCODING", "set"),
        ("SET", "set", "now a string"),
        ("GET", "set"),
        ("TYPE", "set"),
    ],
    "transactions and watch": [
        ("SADD", "s", "1"),
        ("WATCH", "s"),
        ("SADD", "s", "1"),                    # nothing changed: the watch stays clean
        ("SREM", "s", "9"),
        ("SMOVE", "s", "s", "1"),
        ("SINTERSTORE", "none", "missing"),
        ("MULTI",),
        ("SCARD", "s"),
        ("EXEC",),
        ("WATCH", "s"),
        cmd("SADD", "s", "2", conn=1),
        ("MULTI",),
        ("SCARD", "s"),
        ("EXEC",),
        ("MULTI",),
        ("SADD", "t", "1", "2"),
        ("SPOP", "t", "5"),
        ("SINTERCARD", "1", "s"),
        ("SADD", "str"),
        ("EXEC",),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_set_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol=protocol, name=name)


# ---------------------------------------------------------------- generated sequences

KEYS = st.sampled_from([b"s1", b"s2", b"s3", b"str"])
MEMBERS = st.sampled_from([b"1", b"2", b"3", b"-1", b"0", b"01", b"a", b"b", b"", str(LONG_MAX).encode()])
SOME_MEMBERS = st.lists(MEMBERS, min_size=1, max_size=4)
SOME_KEYS = st.lists(KEYS, min_size=1, max_size=3)
ANY_MEMBER = picks([b"1", b"2", b"3", b"-1", b"0", b"01", b"a", b"b", b"", str(LONG_MAX).encode()], True)


def _unordered_args(name):
    return lambda args: cmd(name, *args, compare=UNORDERED)


SET_COMMANDS = st.one_of(
    st.builds(lambda k, ms: (b"SADD", k, *ms), KEYS, SOME_MEMBERS),
    st.builds(lambda k, ms: (b"SREM", k, *ms), KEYS, SOME_MEMBERS),
    st.tuples(st.just(b"SMOVE"), KEYS, KEYS, MEMBERS),
    st.tuples(st.just(b"SISMEMBER"), KEYS, MEMBERS),
    st.builds(lambda k, ms: (b"SMISMEMBER", k, *ms), KEYS, SOME_MEMBERS),
    st.tuples(st.just(b"SCARD"), KEYS),
    st.tuples(st.just(b"OBJECT"), st.just(b"ENCODING"), KEYS),
    st.tuples(st.just(b"TYPE"), KEYS),
    st.builds(lambda k: cmd(b"SMEMBERS", k, compare=UNORDERED), KEYS),
    st.builds(lambda k: cmd(b"SPOP", k, b"100", compare=UNORDERED), KEYS),
    st.builds(lambda k: cmd(b"SRANDMEMBER", k, compare=ANY_MEMBER), KEYS),
    st.builds(_unordered_args(b"SINTER"), SOME_KEYS),
    st.builds(_unordered_args(b"SUNION"), SOME_KEYS),
    st.builds(_unordered_args(b"SDIFF"), SOME_KEYS),
    st.builds(lambda ks: (b"SINTERCARD", str(len(ks)).encode(), *ks), SOME_KEYS),
    st.builds(lambda d, ks: (b"SINTERSTORE", d, *ks), KEYS, SOME_KEYS),
    st.builds(lambda d, ks: (b"SUNIONSTORE", d, *ks), KEYS, SOME_KEYS),
    st.builds(lambda d, ks: (b"SDIFFSTORE", d, *ks), KEYS, SOME_KEYS),
    st.tuples(st.just(b"SET"), st.just(b"str"), MEMBERS),
    st.tuples(st.just(b"CONFIG"), st.just(b"SET"), st.just(b"set-max-intset-entries"),
              st.sampled_from([b"0", b"2", b"3", b"512"])),
)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(SET_COMMANDS, min_size=1, max_size=30), protocol=st.sampled_from([2, 3]))
def test_set_random_sequences(redis_oracle, cxl, steps, protocol):
    flushall(redis_oracle, cxl)
    run_sequence(redis_oracle, cxl, [("CONFIG", "SET", "set-max-intset-entries", "512"), *steps],
                 protocol=protocol, name="hypothesis sets")


# ---------------------------------------------------------------- counts Redis never finishes

@pytest.mark.parametrize("count", [LONG_MIN + 1, -(2**27)])
def test_srandmember_repeating_count_beyond_any_reply_is_refused(cxl, count):
    """Redis 7.0 builds these replies until it is killed; cxlredis refuses at once, and a
    second connection is served meanwhile."""
    with raw_connection(cxl.port) as conn, raw_connection(cxl.port) as other:
        assert conn.request("SADD", "s", "1") == b":1\r\n"
        reply = conn.request("SRANDMEMBER", "s", count)
        assert reply == (f"-ERR SRANDMEMBER count {count} would need a reply of more than "
                         f"{512 * 2**20} bytes (proto-max-bulk-len, client-output-buffer-limit)"
                         "\r\n").encode()
        assert other.request("PING") == b"+PONG\r\n"
        assert conn.request("SRANDMEMBER", "s", -1000) == b"*1000\r\n" + b"$1\r\n1\r\n" * 1000


# ---------------------------------------------------------------- a large set

def test_large_set_against_a_model(cxl):
    """50k members added in batches: SCARD and SISMEMBER agree with a Python model, and a
    whole SSCAN returns every member that was there for the whole scan at least once,
    while members come and go between its calls."""
    rng = random.Random(7)
    client = cxl.client()
    model = set()
    pipe = client.pipeline(transaction=False)
    for batch in range(50):
        members = [b"m%d" % (batch * 1000 + i) for i in range(1000)]
        model.update(members)
        pipe.sadd(b"big", *members)
    assert sum(pipe.execute()) == 50_000
    assert client.scard(b"big") == len(model) == 50_000
    assert client.object("encoding", b"big") == b"hashtable"
    probes = rng.sample(sorted(model), 200) + [b"nope%d" % i for i in range(50)]
    assert client.smismember(b"big", probes) == [int(p in model) for p in probes]

    removed = set(rng.sample(sorted(model), 5000))
    throughout = model - removed
    pending_removals = sorted(removed)
    seen, cursor, calls, added = set(), 0, 0, 0
    while True:
        cursor, members = client.sscan(b"big", cursor, count=500)
        seen.update(members)
        calls += 1
        if pending_removals:            # a member leaves and a new one comes after every call
            client.srem(b"big", pending_removals.pop())
            client.sadd(b"big", b"new%d" % added)
            added += 1
        if cursor == 0:
            break
    assert throughout <= seen
    assert seen <= model | {b"new%d" % i for i in range(added)}
    assert 50 < calls < 1000
    assert client.scard(b"big") == 50_000 - (len(removed) - len(pending_removals)) + added


def test_a_write_beyond_the_arena_changes_nothing(cxl):
    """SADD and SMOVE run in one transaction each: when the arena has no room left for
    them they answer -OOM and every set is as it was (the cxl server's arena is 64 MiB)."""
    big = [b"%d" % i + b"x" * (1 << 20) for i in range(80)]
    with raw_connection(cxl.port) as conn:
        assert conn.request("SADD", "s", "1", "2") == b":2\r\n"
        assert conn.request("SADD", "s", *big).startswith(b"-OOM ")
        assert conn.request("SMEMBERS", "s") == b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
        assert conn.request("OBJECT", "ENCODING", "s") == b"$6\r\nintset\r\n"
        assert conn.request("SADD", "t", *big).startswith(b"-OOM ")
        assert conn.request("EXISTS", "t") == b":0\r\n"
        assert conn.request("SUNIONSTORE", "u", "s") == b":2\r\n"
