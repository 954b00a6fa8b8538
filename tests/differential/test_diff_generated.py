"""Hypothesis-generated sequences of string and keyspace commands, replayed on
redis-server and cxlredis; every reply must match.

A small alphabet of keys and values makes commands collide on the same keys
(integers meet INCR, strings meet APPEND, volatile keys meet PERSIST ...), and
options are drawn token by token so that bad combinations and bad arguments are
generated as often as good ones.

Timing: the steps run in lockstep, so both servers see the same ordering; TTL
replies are compared with a tolerance (see diff_harness.COMPARATORS).  Relative
expiry times are long (100 s and more) and all distinct within one example, at
least 500 ms apart, so GT/LT comparisons between two expiries never depend on
which millisecond a command arrived in.
"""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from diff_harness import flushall, run_sequence

KEYS = ["a", "b", "c", "n"]
VALUES = ["", "v", "abc", "0", "1", "-1", "42", "3.5", "-0.25", "1e3", " 1", "01",
          "9223372036854775807", "-9223372036854775808", "inf", b"\x00\xff"]
INTEGERS = ["0", "1", "-1", "7", "100", "-100", "9223372036854775807",
            "-9223372036854775808", "x", "1.5", ""]
FLOATS = ["0", "0.1", "-1.5", "1e3", "2.5e-3", "inf", "nan", "abc", "1e400"]
OFFSETS = ["0", "1", "3", "-1", "-3", "10", "x"]
FUTURE_S = ["4102444800", "4102444900"]
FUTURE_MS = ["4102444800123", "4102444800999"]
PAST = ["1", "0", "-5"]

keys = st.sampled_from(KEYS)
values = st.sampled_from(VALUES)


class Ttl:
    """A relative expiry placeholder; the sequence strategy gives it a unique value."""

    def __init__(self, unit):
        self.unit = unit


def ttl_tokens(unit):
    # Mostly a valid unique relative time, sometimes an invalid or zero one.
    return st.one_of(st.just(Ttl(unit)), st.just(Ttl(unit)), st.sampled_from(["0", "-1", "abc"]))


def absolute(unit):
    return st.sampled_from((FUTURE_S if unit == "s" else FUTURE_MS) + PAST)


def option_tokens(with_get: bool):
    """SET/GETEX options as a free sequence of tokens, valid or not."""
    choices = [
        st.tuples(st.just("EX"), ttl_tokens("s")),
        st.tuples(st.just("PX"), ttl_tokens("ms")),
        st.tuples(st.just("EXAT"), absolute("s")),
        st.tuples(st.just("PXAT"), absolute("ms")),
        st.just(("NX",)), st.just(("XX",)), st.just(("KEEPTTL",)), st.just(("PERSIST",)),
        st.just(("EX",)), st.just(("FOO",)),
    ]
    if with_get:
        choices.append(st.just(("GET",)))
    return st.lists(st.one_of(*choices), max_size=3).map(lambda groups: [t for g in groups for t in g])


expire_flags = st.lists(st.sampled_from(["NX", "XX", "GT", "LT", "gt", "BAD"]), max_size=2)


def command(name, *parts):
    return st.tuples(st.just(name), *parts).map(list)


COMMANDS = st.one_of(
    command("GET", keys),
    st.tuples(st.just("SET"), keys, values, option_tokens(True)).map(lambda t: [*t[:3], *t[3]]),
    command("SETNX", keys, values),
    command("SETEX", keys, ttl_tokens("s"), values),
    command("PSETEX", keys, ttl_tokens("ms"), values),
    st.lists(st.tuples(keys, values), min_size=1, max_size=3).map(
        lambda pairs: ["MSET"] + [x for p in pairs for x in p]),
    st.lists(st.tuples(keys, values), min_size=1, max_size=3).map(
        lambda pairs: ["MSETNX"] + [x for p in pairs for x in p]),
    st.lists(keys, min_size=1, max_size=4).map(lambda ks: ["MGET", *ks]),
    command("GETDEL", keys),
    st.tuples(st.just("GETEX"), keys, option_tokens(False)).map(lambda t: [*t[:2], *t[2]]),
    command("GETSET", keys, values),
    command("APPEND", keys, values),
    command("STRLEN", keys),
    command("GETRANGE", keys, st.sampled_from(OFFSETS), st.sampled_from(OFFSETS)),
    command("SUBSTR", keys, st.sampled_from(OFFSETS), st.sampled_from(OFFSETS)),
    command("SETRANGE", keys, st.sampled_from(OFFSETS), values),
    command("INCR", keys),
    command("DECR", keys),
    command("INCRBY", keys, st.sampled_from(INTEGERS)),
    command("DECRBY", keys, st.sampled_from(INTEGERS)),
    command("INCRBYFLOAT", keys, st.sampled_from(FLOATS)),
    st.lists(keys, min_size=1, max_size=3).map(lambda ks: ["DEL", *ks]),
    st.lists(keys, min_size=1, max_size=3).map(lambda ks: ["UNLINK", *ks]),
    st.lists(keys, min_size=1, max_size=3).map(lambda ks: ["EXISTS", *ks]),
    st.lists(keys, min_size=1, max_size=3).map(lambda ks: ["TOUCH", *ks]),
    command("TYPE", keys),
    st.tuples(st.just("EXPIRE"), keys, ttl_tokens("s"), expire_flags).map(lambda t: [*t[:3], *t[3]]),
    st.tuples(st.just("PEXPIRE"), keys, ttl_tokens("ms"), expire_flags).map(lambda t: [*t[:3], *t[3]]),
    st.tuples(st.just("EXPIREAT"), keys, absolute("s"), expire_flags).map(lambda t: [*t[:3], *t[3]]),
    st.tuples(st.just("PEXPIREAT"), keys, absolute("ms"), expire_flags).map(lambda t: [*t[:3], *t[3]]),
    command("TTL", keys),
    command("PTTL", keys),
    command("EXPIRETIME", keys),
    command("PEXPIRETIME", keys),
    command("PERSIST", keys),
    command("KEYS", st.sampled_from(["*", "a*", "?", "[ab]", "n"])),
    command("RENAME", keys, keys),
    command("RENAMENX", keys, keys),
    st.tuples(st.just("COPY"), keys, keys, st.sampled_from(
        [[], ["REPLACE"], ["DB", "1"], ["DB", "1", "REPLACE"], ["DB", "99"], ["BAD"]])).map(
        lambda t: [*t[:3], *t[3]]),
    command("MOVE", keys, st.sampled_from(["0", "1", "99", "x"])),
    command("SELECT", st.sampled_from(["0", "1"])),
    command("SWAPDB", st.sampled_from(["0", "1"]), st.sampled_from(["0", "1"])),
    command("DBSIZE"),
    command("OBJECT", st.just("ENCODING"), keys),
    command("FLUSHDB"),
    command("MULTI"),
    command("EXEC"),
    command("DISCARD"),
    st.lists(keys, min_size=1, max_size=2).map(lambda ks: ["WATCH", *ks]),
    command("UNWATCH"),
)


@st.composite
def sequences(draw):
    steps = draw(st.lists(COMMANDS, min_size=3, max_size=30))
    used_ms: set[int] = set()

    def unique(unit):
        # Seconds are whole thousands of ms, milliseconds end in 500: distinct
        # values of either unit are at least 500 ms apart.
        if unit == "s":
            value = draw(st.integers(100, 100_000).filter(lambda s: s * 1000 not in used_ms))
            used_ms.add(value * 1000)
        else:
            value = draw(st.integers(100, 100_000).map(lambda s: s * 1000 + 500)
                         .filter(lambda ms: ms not in used_ms))
            used_ms.add(value)
        return str(value)

    return [tuple(unique(t.unit) if isinstance(t, Ttl) else t for t in step) for step in steps]


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=sequences(), protocol=st.sampled_from([2, 3]))
def test_generated_sequences(redis_oracle, cxl, steps, protocol):
    # The database is flushed for each example (a function-scoped fixture would run once per test).
    flushall(redis_oracle, cxl)
    run_sequence(redis_oracle, cxl, steps, protocol, "generated")
