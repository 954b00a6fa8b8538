"""Hash commands, replayed on redis-server and cxlredis; replies must match (RESP2 and RESP3).

llm-d's KV-block index drives these: PING, pipelined HKEYS, HSET key pod ts, HDEL.
"""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import parse_reply, raw_connection
from diff_harness import cmd, flushall, normalised, raw, run_sequence, sorted_elements

pytestmark = pytest.mark.usefixtures("flushed")

SEQUENCES = {
    "hset hget hmget": [
        ("HSET", "h", "f1", "v1"),
        ("HSET", "h", "f1", "v1b", "f2", "v2", "f3", ""),
        ("HGET", "h", "f1"),
        ("HGET", "h", "nope"),
        ("HGET", "missing", "f"),
        ("HMGET", "h", "f1", "nope", "f3"),
        ("HMGET", "missing", "a", "b"),
        ("HSET", "h", "odd"),
        ("HSET", "h", "a", "1", "b"),
        ("HMSET", "h", "f4", "v4", "f5", "v5"),
        ("HMSET", "h", "x"),
        ("HGETALL", "h"),
        ("HLEN", "h"),
        ("HKEYS", "h"),
        ("HVALS", "h"),
        ("HGETALL", "missing"),
        ("HKEYS", "missing"),
        ("HLEN", "missing"),
    ],
    "hdel hexists hstrlen hsetnx": [
        ("HSET", "h", "a", "1", "b", "22", "c", "333"),
        ("HEXISTS", "h", "a"),
        ("HEXISTS", "h", "z"),
        ("HSTRLEN", "h", "c"),
        ("HSTRLEN", "h", "z"),
        ("HSETNX", "h", "a", "x"),
        ("HSETNX", "h", "d", "4"),
        ("HGET", "h", "d"),
        ("HDEL", "h", "a", "z", "b"),
        ("HDEL", "h", "a"),
        ("HGETALL", "h"),
        ("HDEL", "h", "c", "d"),
        ("EXISTS", "h"),
        ("TYPE", "h"),
        ("HDEL", "missing", "a"),
    ],
    "hincrby": [
        ("HINCRBY", "h", "n", "5"),
        ("HINCRBY", "h", "n", "-7"),
        ("HINCRBY", "h", "n", "x"),
        ("HINCRBY", "h", "n", "1.5"),
        ("HSET", "h", "s", "abc", "big", "9223372036854775807"),
        ("HINCRBY", "h", "s", "1"),
        ("HINCRBY", "h", "big", "1"),
        ("HINCRBY", "h", "big", "0"),
        ("HSET", "h", "neg", "-9223372036854775808"),
        ("HINCRBY", "h", "neg", "-1"),
        ("HGET", "h", "n"),
    ],
    "hincrbyfloat": [
        ("HINCRBYFLOAT", "h", "f", "10.5"),
        ("HINCRBYFLOAT", "h", "f", "0.1"),
        ("HINCRBYFLOAT", "h", "f", "-5.0e3"),
        ("HINCRBYFLOAT", "h", "g", "3.0e-5"),
        ("HINCRBYFLOAT", "h", "f", "abc"),
        ("HINCRBYFLOAT", "h", "f", "inf"),
        ("HSET", "h", "s", "notnum"),
        ("HINCRBYFLOAT", "h", "s", "1"),
        ("HINCRBYFLOAT", "h", "f", " 1"),
        ("HGETALL", "h"),
    ],
    "wrong types both ways": [
        ("SET", "str", "v"),
        ("HSET", "str", "f", "v"),
        ("HGET", "str", "f"),
        ("HGETALL", "str"),
        ("HLEN", "str"),
        ("HDEL", "str", "f"),
        ("HINCRBY", "str", "f", "1"),
        ("HSCAN", "str", "0"),
        ("HRANDFIELD", "str"),
        ("HSET", "hash", "f", "v"),
        ("GET", "hash"),
        ("APPEND", "hash", "x"),
        ("INCR", "hash"),
        ("STRLEN", "hash"),
        ("SET", "hash", "now-a-string"),
        ("GET", "hash"),
        ("TYPE", "hash"),
    ],
    "hscan": [
        ("HSET", "h", "a1", "1", "a2", "2", "b1", "3"),
        ("HSCAN", "h", "0"),
        ("HSCAN", "h", "0", "MATCH", "a*"),
        ("HSCAN", "h", "0", "COUNT", "100"),
        ("HSCAN", "h", "0", "COUNT", "0"),
        ("HSCAN", "h", "0", "COUNT", "x"),
        ("HSCAN", "h", "x"),
        ("HSCAN", "h", "0", "BOGUS", "1"),
        ("HSCAN", "h", "0", "MATCH"),
        ("HSCAN", "missing", "0"),
    ],
    "hrandfield shapes": [
        ("HSET", "h", "only", "1"),
        ("HRANDFIELD", "h"),
        ("HRANDFIELD", "h", "1"),
        ("HRANDFIELD", "h", "-3"),
        ("HRANDFIELD", "h", "2", "WITHVALUES"),
        ("HRANDFIELD", "h", "-2", "WITHVALUES"),
        ("HRANDFIELD", "h", "1", "BOGUS"),
        ("HRANDFIELD", "h", "x"),
        ("HRANDFIELD", "missing"),
        ("HRANDFIELD", "missing", "3"),
    ],
    "ttl survives hash writes": [
        ("HSET", "h", "a", "1"),
        ("EXPIRE", "h", "1000"),
        ("HSET", "h", "b", "2"),
        ("TTL", "h"),
        ("HDEL", "h", "a"),
        ("TTL", "h"),
        ("HINCRBY", "h", "c", "1"),
        ("TTL", "h"),
    ],
    "llm-d block index pipeline": [
        ("PING",),
        raw(b"*2\r\n$5\r\nHKEYS\r\n$2\r\nb1\r\n*2\r\n$5\r\nHKEYS\r\n$2\r\nb2\r\n", replies=2),
        ("HSET", "b1", "pod-a", "1700000000"),
        ("HSET", "b1", "pod-b", "1700000001"),
        ("HSET", "b2", "pod-a", "1700000002"),
        raw(b"*2\r\n$5\r\nHKEYS\r\n$2\r\nb1\r\n*2\r\n$5\r\nHKEYS\r\n$2\r\nb2\r\n", replies=2),
        ("HDEL", "b1", "pod-a"),
        ("HKEYS", "b1"),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_hash_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol=protocol, name=name)


FIELDS = st.sampled_from([b"f1", b"f2", b"f3", b"n"])
VALUES = st.sampled_from([b"", b"1", b"-3", b"2.5", b"abc", b"9223372036854775807"])
KEYS = st.sampled_from([b"h1", b"h2", b"s"])
HASH_COMMANDS = st.one_of(
    st.tuples(st.just(b"HSET"), KEYS, FIELDS, VALUES),
    st.tuples(st.just(b"HSETNX"), KEYS, FIELDS, VALUES),
    st.tuples(st.just(b"HGET"), KEYS, FIELDS),
    st.tuples(st.just(b"HDEL"), KEYS, FIELDS, FIELDS),
    st.tuples(st.just(b"HEXISTS"), KEYS, FIELDS),
    st.tuples(st.just(b"HLEN"), KEYS),
    st.tuples(st.just(b"HSTRLEN"), KEYS, FIELDS),
    st.tuples(st.just(b"HINCRBY"), KEYS, FIELDS, st.sampled_from([b"1", b"-2", b"x", b"9223372036854775807"])),
    st.tuples(st.just(b"HINCRBYFLOAT"), KEYS, FIELDS, st.sampled_from([b"0.1", b"-1.5e2", b"x"])),
    st.tuples(st.just(b"HMGET"), KEYS, FIELDS, FIELDS),
    st.tuples(st.just(b"HGETALL"), KEYS),
    st.tuples(st.just(b"HKEYS"), KEYS),
    st.tuples(st.just(b"SET"), st.just(b"s"), VALUES),
    st.tuples(st.just(b"TYPE"), KEYS),
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(HASH_COMMANDS, min_size=1, max_size=25))
def test_hash_random_sequences(redis_oracle, cxl, steps):
    flushall(redis_oracle, cxl)
    run_sequence(redis_oracle, cxl, steps, protocol=2, name="hypothesis hashes")


def test_hkeys_order_after_many_fields_compares_as_sets(redis_oracle, cxl):
    """Above 128 fields Redis switches to a hashtable whose order is arbitrary."""
    steps = [("HSET", "big", *[x for i in range(200) for x in (f"f{i}", str(i))])]
    unordered = normalised(sorted_elements)
    steps += [cmd("HKEYS", "big", compare=unordered), cmd("HVALS", "big", compare=unordered),
              ("HLEN", "big")]
    run_sequence(redis_oracle, cxl, steps, protocol=2, name="big hash")


# ---------------------------------------------------------------- HRANDFIELD counts

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
RANDOM_HASH = {b"a": b"1", b"b": b"22", b"c": b"333"}


def random_picks(argv, reply):
    """What two correct HRANDFIELD replies share: the shape (flat, or RESP3 pairs), how many
    picks, that each is a field of the hash with its own value, and, for a count >= 0, that
    none repeats."""
    value = parse_reply(reply)
    if isinstance(value, bytes):
        return "one field", value in RANDOM_HASH
    if not isinstance(value, list):
        return value
    with_values = len(argv) == 4
    if with_values and value and isinstance(value[0], list):
        shape, pairs = "pairs", [tuple(p) for p in value]
    elif with_values:
        shape, pairs = "flat", list(zip(value[0::2], value[1::2]))
    else:
        shape, pairs = "fields", [(f, RANDOM_HASH.get(f)) for f in value]
    valid = all(f in RANDOM_HASH and v == RANDOM_HASH[f] for f, v in pairs)
    distinct = len({f for f, _ in pairs}) == len(pairs)
    return shape, len(value), valid, distinct or int(argv[2]) < 0


RANDOM = normalised(random_picks)
# Every boundary Redis checks; on the hash itself only those whose reply is bounded
# (Redis builds a reply of -count fields until memory runs out: it is killed, cxlredis refuses).
COUNTS = [0, 1, -1, 2, -2, 3, 5, -5, LONG_MAX, LONG_MAX // 2, LONG_MAX // 2 + 1,
          -(LONG_MAX // 2), -(LONG_MAX // 2) - 1, LONG_MIN, LONG_MIN + 1, 2**63, -(2**63) - 1]
UNBOUNDED_ON_A_HASH = {-(LONG_MAX // 2), -(LONG_MAX // 2) - 1, LONG_MIN + 1}


def redis_builds_unbounded(key, count, suffix):
    valid = suffix in ((), ("WITHVALUES",), ("withvalues",))
    return key == "h" and count in UNBOUNDED_ON_A_HASH and valid and (
        not suffix or abs(count) <= LONG_MAX // 2)


def hrandfield_steps():
    steps = [("HSET", "h", *[x for pair in RANDOM_HASH.items() for x in pair]), ("SET", "s", "v")]
    for count in COUNTS:
        for suffix in ((), ("WITHVALUES",), ("withvalues",), ("WITHVALUES", "x"), ("BOGUS",)):
            for key in ("h", "missing", "s"):
                if not redis_builds_unbounded(key, count, suffix):
                    steps.append(cmd("HRANDFIELD", key, str(count), *suffix, compare=RANDOM))
    steps += [cmd("HRANDFIELD", "h", compare=RANDOM), ("HRANDFIELD", "missing"), ("HRANDFIELD", "s"),
              ("HRANDFIELD", "h", "1.5"), ("HRANDFIELD", "h", " 1"), ("HRANDFIELD", "h", "-0"),
              ("PING",)]
    return steps


@pytest.mark.parametrize("protocol", [2, 3])
def test_hrandfield_count_boundaries(redis_oracle, cxl, protocol):
    run_sequence(redis_oracle, cxl, hrandfield_steps(), protocol=protocol, name="hrandfield counts")


@pytest.mark.parametrize("count, with_values", [(LONG_MIN + 1, False), (-(LONG_MAX // 2), True),
                                                (-(2**27), False)])
def test_hrandfield_repeating_count_beyond_any_reply_is_refused(cxl, count, with_values):
    """Redis 7.0 builds these replies until it is killed; cxlredis refuses at once, and a
    second connection is served meanwhile."""
    with raw_connection(cxl.port) as conn, raw_connection(cxl.port) as other:
        assert conn.request("HSET", "h", "a", "1") == b":1\r\n"
        reply = conn.request("HRANDFIELD", "h", count, *(["WITHVALUES"] if with_values else []))
        assert reply == (f"-ERR HRANDFIELD count {count} would need a reply of more than "
                         f"{512 * 2**20} bytes (proto-max-bulk-len, client-output-buffer-limit)"
                         "\r\n").encode()
        assert other.request("PING") == b"+PONG\r\n"
        assert conn.request("HRANDFIELD", "h", -1000) == b"*1000\r\n" + b"$1\r\na\r\n" * 1000
