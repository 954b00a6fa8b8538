"""Sorted set commands, replayed on redis-server and cxlredis; replies must match (RESP2 and
RESP3), OBJECT ENCODING included (compared exactly: listpack or skiplist), and keyspace
events too. Random picks (ZRANDMEMBER) and a skiplist's ZSCAN order are the only replies
compared by what two correct servers must share.
"""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import encode_command, parse_reply, raw_connection
from diff_harness import cmd, exact, flushall, normalised, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

LIMITS = {"zset-max-listpack-entries": "128", "zset-max-listpack-value": "64"}


@pytest.fixture(autouse=True)
def listpack_limits(redis_oracle, cxl):
    """Sequences change the encoding limits: both servers get Redis's defaults back."""
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            for name, value in LIMITS.items():
                assert conn.request("CONFIG", "SET", name, value) == b"+OK\r\n"


def encoding(key):
    return cmd("OBJECT", "ENCODING", key, compare=exact)


def random_picks(zset):
    """What two correct ZRANDMEMBER replies on zset (member -> score) share: the shape
    (flat, or RESP3 pairs), how many picks, that each is a member with its own score, and,
    for a count >= 0, that none repeats."""
    def shape(argv, reply):
        value = parse_reply(reply)
        if not isinstance(value, list):
            return "one member", value in zset
        if len(argv) == 4 and value and isinstance(value[0], list):
            form, pairs = "pairs", [(m, float(s)) for m, s in value]
        elif len(argv) == 4:
            form, pairs = "flat", [(m, float(s)) for m, s in zip(value[0::2], value[1::2])]
        else:
            form, pairs = "members", [(m, zset.get(m)) for m in value]
        valid = all(zset.get(m) == s for m, s in pairs)
        distinct = len({m for m, _ in pairs}) == len(pairs)
        return form, len(value), valid, distinct or int(argv[2]) < 0
    return normalised(shape)


RANDOM = random_picks({b"a": 1.0, b"b": 2.0, b"c": 3.0})


def unordered_scan(argv, reply):
    """A skiplist's ZSCAN walks its hash table (Redis's dict, cxlredis's member hashes): a
    scan that ends in one call must give the same member and score pairs, in any order."""
    cursor, items = parse_reply(reply)
    return cursor, sorted(zip(items[0::2], items[1::2]))


UNORDERED_SCAN = normalised(unordered_scan)

LONG = "m" * 65                 # one byte over zset-max-listpack-value
SCORES = ["1e-320", "5e-324", "1e308", "-1e308", "inf", "-inf", "-0", "0", "0.1", "1.5", "3",
          "123456789012345678", "4611686018427387904", "-2.5e-5", "0x10", "1e20"]

SEQUENCES = {
    "zadd options": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("ZADD", "z", "NX", "5", "a", "6", "d"),
        ("ZADD", "z", "XX", "CH", "5", "a", "7", "e"),
        ("ZADD", "z", "GT", "CH", "1", "a", "10", "b"),
        ("ZADD", "z", "LT", "CH", "1", "a", "10", "c"),
        ("ZADD", "z", "gt", "xx", "ch", "20", "b", "20", "nope"),
        ("ZADD", "z", "INCR", "1", "a"),
        ("ZADD", "z", "INCR", "NX", "1", "a"),
        ("ZADD", "z", "INCR", "XX", "1", "nope"),
        ("ZADD", "z", "INCR", "GT", "-1", "a"),
        ("ZADD", "z", "INCR", "LT", "-1", "a"),
        ("ZADD", "z", "INCR", "0", "a"),
        ("ZADD", "z", "CH", "2", "a"),
        ("ZADD", "z", "nx\0junk", "9", "f"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZADD", "missing", "XX", "1", "a"),
        ("ZADD", "missing", "XX", "INCR", "1", "a"),
        ("EXISTS", "missing"),
        ("ZADD", "z", "NX", "XX", "1", "a"),
        ("ZADD", "z", "GT", "LT", "1", "a"),
        ("ZADD", "z", "GT", "NX", "1", "a"),
        ("ZADD", "z", "LT", "NX", "1", "a"),
        ("ZADD", "z", "NX", "XX", "GT", "1", "a"),
        ("ZADD", "z", "INCR", "1", "a", "2", "b"),
        ("ZADD", "z", "INCR", "NX", "XX", "1", "a", "2", "b"),
        ("ZADD", "z", "1"),
        ("ZADD", "z", "NX"),
        ("ZADD", "z", "1", "a", "2"),
        ("ZADD", "z", "x", "a"),
        ("ZADD", "z", "1", "a", "x", "b"),
        ("ZADD", "z"),
        ("ZCARD", "z"),
    ],
    "zincrby": [
        ("ZINCRBY", "z", "1.5", "a"),
        ("ZINCRBY", "z", "-0.5", "a"),
        ("ZINCRBY", "z", "abc", "a"),
        ("ZINCRBY", "z", "NX", "a"),
        ("ZINCRBY", "z", "incr", "a"),
        ("ZINCRBY", "z", "inf", "a"),
        ("ZINCRBY", "z", "-inf", "a"),
        ("ZADD", "z", "INCR", "-inf", "a"),
        ("ZINCRBY", "z", "1e308", "b"),
        ("ZINCRBY", "z", "1e308", "b"),
        ("ZINCRBY", "z", "nan", "b"),
        ("ZINCRBY", "z", "0x10", "c"),
        ("ZINCRBY", "z", " 1", "c"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZINCRBY", "z", "1"),
    ],
    "boundary scores": [
        ("ZADD", "z", *[x for i, s in enumerate(SCORES) for x in (s, f"m{i}")]),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        *[("ZSCORE", "z", f"m{i}") for i in range(len(SCORES))],
        ("ZMSCORE", "z", "m0", "nope", "m6", "m15"),
        ("ZSCAN", "z", "0"),
        ("ZADD", "bad", "1e-400", "x"),
        ("ZADD", "bad", "1e309", "x"),
        ("ZADD", "bad", "nan", "x"),
        ("ZADD", "bad", "-nan", "x"),
        ("ZADD", "bad", "", "x"),
        ("ZADD", "bad", " 1", "x"),
        ("ZADD", "bad", "1 ", "x"),
        ("ZADD", "bad", b"1\0", "x"),
        ("ZADD", "bad", "1e", "x"),
        ("ZADD", "bad", "0x", "x"),
        ("ZADD", "ok", "+inf", "a", "-Infinity", "b", "1.", "c", ".5", "d", "0X1P-3", "e"),
        ("ZRANGE", "ok", "0", "-1", "WITHSCORES"),
        ("EXISTS", "bad"),
    ],
    "negative zero": [
        ("ZADD", "z", "0", "a", "-0", "b"),
        ("ZSCORE", "z", "b"),
        ("ZADD", "z", "INCR", "-0", "c"),
        ("ZINCRBY", "z", "-0", "d"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "2"),
        ("ZADD", "s", "1", "a", "2", "b"),
        ("ZADD", "s", "-0", "c"),
        encoding("s"),
        ("ZSCORE", "s", "c"),
        ("ZINCRBY", "s", "-0", "c"),
        cmd("ZSCAN", "s", "0", compare=UNORDERED_SCAN),
        ("ZRANGESTORE", "d", "s", "-inf", "+inf", "BYSCORE"),
        encoding("d"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "d", "s", "0", "-1"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "d", "s", "0", "1"),
        encoding("d"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("ZUNIONSTORE", "u", "1", "s"),
        encoding("u"),
        ("ZRANGE", "u", "0", "-1", "WITHSCORES"),
        ("ZUNION", "1", "s", "WITHSCORES"),
        ("ZUNION", "1", "s", "WEIGHTS", "-0.0", "AGGREGATE", "MIN", "WITHSCORES"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "0"),
        ("ZADD", "sk", "-0", "a"),
        ("ZSCORE", "sk", "a"),
        ("ZADD", "sk", "0", "a"),
        ("ZSCORE", "sk", "a"),
    ],
    "encodings": [
        ("CONFIG", "SET", "zset-max-listpack-entries", "2"),
        ("ZADD", "n", "1", "a", "1", "a", "1", "a"),
        encoding("n"),
        ("ZADD", "n", "2", "b"),
        encoding("n"),
        ("ZADD", "n", "3", "c"),
        encoding("n"),
        ("ZREM", "n", "c", "b"),
        encoding("n"),
        ("ZADD", "long", "1", LONG, "2", "b"),
        encoding("long"),
        ("ZADD", "nx", "NX", "1", "a", "2", LONG),
        encoding("nx"),
        ("ZRANGESTORE", "r", "long", "0", "0"),
        encoding("r"),
        ("ZRANGESTORE", "r", "long", "0", "-1"),
        encoding("r"),
        ("ZUNIONSTORE", "u", "2", "n", "long"),
        encoding("u"),
        ("ZINTERSTORE", "u", "2", "n", "long"),
        encoding("u"),
        ("ZDIFFSTORE", "u", "1", "n"),
        encoding("u"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "0"),
        ("ZADD", "zero", "1", "a"),
        encoding("zero"),
        ("ZRANGESTORE", "r0", "n", "-inf", "+inf", "BYSCORE"),
        encoding("r0"),
        ("CONFIG", "SET", "zset-max-listpack-entries", "128"),
        ("CONFIG", "SET", "zset-max-listpack-value", "0"),
        ("ZADD", "empty", "1", ""),
        encoding("empty"),
        ("ZADD", "empty", "1", "a"),
        encoding("empty"),
        ("CONFIG", "SET", "zset-max-listpack-value", "64"),
        ("ZADD", "fits", "1", "m" * 64),
        encoding("fits"),
        ("TYPE", "fits"),
    ],
    "zrem zcard zscore zmscore zrank": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("ZREM", "z", "a", "nope", "a"),
        ("ZREM", "z", "nope"),
        ("ZREM", "missing", "a"),
        ("ZCARD", "z"),
        ("ZCARD", "missing"),
        ("ZSCORE", "z", "b"),
        ("ZSCORE", "z", "nope"),
        ("ZSCORE", "missing", "a"),
        ("ZMSCORE", "z", "b", "nope", "c"),
        ("ZMSCORE", "missing", "a", "b"),
        ("ZMSCORE", "z"),
        ("ZRANK", "z", "c"),
        ("ZREVRANK", "z", "c"),
        ("ZRANK", "z", "nope"),
        ("ZRANK", "missing", "a"),
        ("ZREVRANK", "missing", "a"),
        ("ZRANK", "z", "c", "WITHSCORE"),
        ("ZREM", "z", "b", "c"),
        ("EXISTS", "z"),
    ],
    "zcount zlexcount": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"),
        ("ZCOUNT", "z", "-inf", "+inf"),
        ("ZCOUNT", "z", "(1", "3"),
        ("ZCOUNT", "z", "(1", "(3"),
        ("ZCOUNT", "z", "3", "1"),
        ("ZCOUNT", "z", "(2", "(2"),
        ("ZCOUNT", "z", "2", "2"),
        ("ZCOUNT", "z", "x", "3"),
        ("ZCOUNT", "z", "1", "nan"),
        ("ZCOUNT", "z", "", ""),
        ("ZCOUNT", "z", "(", "("),
        ("ZCOUNT", "missing", "0", "1"),
        ("ZCOUNT", "missing", "x", "1"),
        ("ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d"),
        ("ZLEXCOUNT", "l", "-", "+"),
        ("ZLEXCOUNT", "l", "[b", "(d"),
        ("ZLEXCOUNT", "l", "(b", "[d"),
        ("ZLEXCOUNT", "l", "+", "-"),
        ("ZLEXCOUNT", "l", "-", "-"),
        ("ZLEXCOUNT", "l", "[a", "[a"),
        ("ZLEXCOUNT", "l", "(a", "[a"),
        ("ZLEXCOUNT", "l", "a", "+"),
        ("ZLEXCOUNT", "l", "-", "+x"),
        ("ZLEXCOUNT", "l", "", "+"),
        ("ZLEXCOUNT", "missing", "-", "+"),
        ("ZLEXCOUNT", "missing", "x", "+"),
    ],
    "score ranges": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"),
        ("ZRANGEBYSCORE", "z", "(1", "(5"),
        ("ZRANGEBYSCORE", "z", "2", "4", "LIMIT", "1", "1"),
        ("ZRANGEBYSCORE", "z", "2", "4", "LIMIT", "1", "-1", "WITHSCORES"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "2"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "5", "2"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "2", "0"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "x", "0"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "REV"),
        ("ZRANGEBYSCORE", "z", "-inf", "+inf", "BYSCORE"),
        ("ZRANGEBYSCORE", "z", "", "3"),
        ("ZRANGEBYSCORE", "z", "(", "3"),
        ("ZRANGEBYSCORE", "z", " 1", "3"),
        ("ZRANGEBYSCORE", "z", "\t2", "3"),
        ("ZRANGEBYSCORE", "z", "1 ", "3"),
        ("ZRANGEBYSCORE", "z", b"1\0abc", "3"),
        ("ZRANGEBYSCORE", "z", "0x1", "0X1P1"),
        ("ZRANGEBYSCORE", "z", "1e999", "inf"),
        ("ZRANGEBYSCORE", "z", "-INFINITY", "1e999"),
        ("ZRANGEBYSCORE", "z", "nan", "3"),
        ("ZRANGEBYSCORE", "z", "(nan", "3"),
        ("ZRANGEBYSCORE", "z", "0x", "3"),
        ("ZRANGEBYSCORE", "z", "1e", "3"),
        ("ZRANGEBYSCORE", "z", " ", "3"),
        ("ZRANGEBYSCORE", "z", "((1", "3"),
        ("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES", "LIMIT", "1", "2"),
        ("ZREVRANGEBYSCORE", "z", "(4", "(1"),
        ("ZREVRANGEBYSCORE", "z", "1", "4"),
        ("ZRANGE", "z", "(1", "+inf", "BYSCORE", "REV"),
        ("ZRANGE", "z", "+inf", "(1", "BYSCORE", "REV", "LIMIT", "0", "2", "WITHSCORES"),
        ("ZRANGEBYSCORE", "missing", "0", "1"),
        ("ZRANGEBYSCORE", "missing", "x", "1"),
    ],
    "lex ranges": [
        ("ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e"),
        ("ZRANGEBYLEX", "l", "-", "+"),
        ("ZRANGEBYLEX", "l", "[b", "(d"),
        ("ZRANGEBYLEX", "l", "(b", "[d", "LIMIT", "1", "5"),
        ("ZRANGEBYLEX", "l", "-", "+", "LIMIT", "-1", "5"),
        ("ZRANGEBYLEX", "l", "-", "+", "WITHSCORES"),
        ("ZREVRANGEBYLEX", "l", "+", "-"),
        ("ZREVRANGEBYLEX", "l", "(d", "[b"),
        ("ZREVRANGEBYLEX", "l", "-", "+"),
        ("ZRANGE", "l", "[c", "-", "BYLEX", "REV", "LIMIT", "1", "1"),
        ("ZRANGE", "l", "-", "+", "BYLEX", "WITHSCORES"),
        ("ZRANGEBYLEX", "l", "a", "+"),
        ("ZRANGEBYLEX", "l", "[a", "b"),
        ("ZRANGEBYLEX", "l", "+x", "+"),
        ("ZRANGEBYLEX", "l", b"+\0x", "-"),
        ("ZRANGEBYLEX", "l", b"[\0", "+"),
        ("ZRANGEBYLEX", "l", "[", "("),
        ("ZRANGEBYLEX", "l", "", "+"),
        ("ZRANGEBYLEX", "missing", "-", "+"),
        ("ZRANGEBYLEX", "missing", "x", "+"),
        # Redis scans a listpack from its ends: members of different scores give these
        ("ZADD", "u", "5", "a", "1", "b", "3", "c", "2", "d", "4", "e", "0", "f"),
        ("ZRANGEBYLEX", "u", "-", "+"),
        ("ZRANGEBYLEX", "u", "[b", "[d"),
        ("ZRANGEBYLEX", "u", "[c", "+"),
        ("ZRANGEBYLEX", "u", "-", "[c"),
        ("ZREVRANGEBYLEX", "u", "[d", "[b"),
        ("ZREVRANGEBYLEX", "u", "+", "[c"),
        ("ZLEXCOUNT", "u", "[b", "[d"),
        ("ZLEXCOUNT", "u", "-", "(c"),
        ("ZRANGEBYLEX", "u", "[a", "[z", "LIMIT", "2", "2"),
        ("ZRANGEBYLEX", "u", "[b", "[e", "LIMIT", "2", "3"),
        ("ZREVRANGEBYLEX", "u", "[e", "[b", "LIMIT", "1", "3"),
        ("ZRANGESTORE", "d", "u", "[b", "[e", "BYLEX"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("ZREMRANGEBYLEX", "u", "[c", "[e"),
        ("ZRANGE", "u", "0", "-1", "WITHSCORES"),
    ],
    "zrange options": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"),
        ("ZRANGE", "z", "0", "-1"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZRANGE", "z", "-2", "-1"),
        ("ZRANGE", "z", "-100", "1"),
        ("ZRANGE", "z", "2", "100"),
        ("ZRANGE", "z", "3", "1"),
        ("ZRANGE", "z", "4", "5"),
        ("ZRANGE", "z", "0", "-1", "REV", "WITHSCORES"),
        ("ZRANGE", "z", "1", "2", "rev"),
        ("ZRANGE", "z", "x", "1"),
        ("ZRANGE", "z", "0", "1.5"),
        ("ZRANGE", "z", "0", "-1", "LIMIT", "1", "1"),
        ("ZRANGE", "z", "0", "-1", "LIMIT", "1", "-1"),
        ("ZRANGE", "z", "0", "-1", "LIMIT", "1"),
        ("ZRANGE", "z", "0", "-1", "REV", "REV"),
        ("ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"),
        ("ZRANGE", "z", "0", "-1", "BYSCORE", "BYSCORE"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES", "WITHSCORES"),
        ("ZRANGE", "z", "0", "-1", "BOGUS"),
        ("ZRANGE", "z", "0", "-1", b"withscores\0x"),
        ("ZRANGE", "z", "a", "b", "BYSCORE"),
        ("ZRANGE", "z", "a", "b", "BYLEX"),
        ("ZRANGE", "z", "[a", "[c", "BYLEX"),
        ("ZRANGE", "missing", "0", "-1", "WITHSCORES"),
        ("ZREVRANGE", "z", "0", "1", "WITHSCORES"),
        ("ZREVRANGE", "z", "0", "-1", "BYSCORE"),
        ("ZREVRANGE", "z", "0", "-1", "REV"),
        ("ZREVRANGE", "z", "0", "-1", "LIMIT", "0", "1"),
        ("ZRANGE", "z", "0"),
    ],
    "zrangestore": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("ZRANGESTORE", "d", "z", "0", "-1"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "d", "z", "(1", "+inf", "BYSCORE", "LIMIT", "0", "1"),
        ("ZRANGE", "d", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "d", "z", "+inf", "-inf", "BYSCORE", "REV"),
        ("ZRANGESTORE", "d", "z", "[b", "+", "BYLEX"),
        ("ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"),
        ("ZRANGESTORE", "d", "z", "0", "-1", "LIMIT", "0", "1"),
        ("ZRANGESTORE", "d", "z", "5", "6"),
        ("EXISTS", "d"),
        ("ZRANGESTORE", "d", "missing", "0", "-1"),
        ("SET", "s", "v"),
        ("ZRANGESTORE", "d", "s", "0", "-1"),
        ("ZRANGESTORE", "s", "z", "0", "0"),
        ("TYPE", "s"),
        ("ZRANGESTORE", "z", "z", "1", "1"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZADD", "t", "1", "x"),
        ("EXPIRE", "t", "100"),
        ("ZRANGESTORE", "t", "z", "0", "-1"),
        ("TTL", "t"),
        ("SET", "sx", "v", "EX", "100"),
        ("ZRANGESTORE", "sx", "z", "0", "-1"),
        ("TTL", "sx"),
        ("ZRANGESTORE", "d", "z"),
    ],
    "zremrangeby": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
        ("ZREMRANGEBYRANK", "z", "0", "0"),
        ("ZREMRANGEBYRANK", "z", "-1", "-1"),
        ("ZREMRANGEBYRANK", "z", "5", "10"),
        ("ZREMRANGEBYRANK", "z", "2", "1"),
        ("ZREMRANGEBYRANK", "z", "x", "1"),
        ("ZREMRANGEBYSCORE", "z", "(2", "3"),
        ("ZREMRANGEBYSCORE", "z", "5", "6"),
        ("ZREMRANGEBYSCORE", "z", "x", "6"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("ZREMRANGEBYSCORE", "z", "-inf", "+inf"),
        ("EXISTS", "z"),
        ("ZADD", "l", "0", "a", "0", "b", "0", "c"),
        ("ZREMRANGEBYLEX", "l", "(a", "[b"),
        ("ZREMRANGEBYLEX", "l", "x", "[b"),
        ("ZREMRANGEBYLEX", "l", "-", "+"),
        ("EXISTS", "l"),
        ("ZREMRANGEBYRANK", "missing", "0", "-1"),
        ("ZREMRANGEBYSCORE", "missing", "x", "1"),
        ("ZREMRANGEBYLEX", "missing", "-", "+"),
    ],
    "zpopmin zpopmax zmpop": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
        ("ZPOPMIN", "z"),
        ("ZPOPMAX", "z"),
        ("ZPOPMIN", "z", "1"),
        ("ZPOPMAX", "z", "0"),
        ("ZPOPMIN", "z", "-1"),
        ("ZPOPMIN", "z", "abc"),
        ("ZPOPMIN", "z", "1", "2"),
        ("ZPOPMIN", "missing"),
        ("ZPOPMIN", "missing", "3"),
        ("ZPOPMIN", "missing", "0"),
        ("ZPOPMAX", "z", "10"),
        ("EXISTS", "z"),
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("ZMPOP", "1", "z", "MIN"),
        ("ZMPOP", "2", "missing", "z", "max", "COUNT", "5"),
        ("ZMPOP", "1", "z", "MIN"),
        ("ZMPOP", "0", "z", "MIN"),
        ("ZMPOP", "-1", "z", "MIN"),
        ("ZMPOP", "x", "z", "MIN"),
        ("ZMPOP", "3", "z", "MIN"),
        ("ZMPOP", "9223372036854775807", "z", "MIN"),
        ("ZMPOP", "1", "z", "BOGUS"),
        ("ZMPOP", "1", "z", "MIN", "COUNT", "0"),
        ("ZMPOP", "1", "z", "MIN", "COUNT", "x"),
        ("ZMPOP", "1", "z", "MIN", "COUNT"),
        ("ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "1"),
        ("SET", "s", "v"),
        ("ZMPOP", "2", "missing", "s", "MIN"),
        ("ZADD", "z", "1", "a"),
        ("ZMPOP", "2", "z", "s", "MIN"),
        ("ZPOPMIN", "s"),
        ("ZPOPMIN", "s", "0"),
    ],
    "blocking pops answer at once": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        ("BZPOPMIN", "missing", "z", "0"),
        ("BZPOPMAX", "z", "0"),
        ("BZMPOP", "0", "2", "missing", "z", "MIN", "COUNT", "5"),
        ("BZPOPMIN", "missing", "0.01"),
        ("BZMPOP", "0.01", "1", "missing", "MAX"),
        ("BZPOPMIN", "k", "-1"),
        ("BZPOPMIN", "k", "abc"),
        ("BZPOPMIN", "k", "nan"),
        ("BZPOPMIN", "k", "inf"),
        ("BZPOPMIN", "k", "1e20"),
        ("BZPOPMIN", "k", " 1"),
        ("BZPOPMIN", "k", "1e5000"),
        ("BZMPOP", "x", "1", "k", "MIN"),
        ("BZMPOP", "x", "0", "k", "MIN"),
        ("BZMPOP", "x", "1", "k", "BAD"),
        ("SET", "s", "v"),
        ("BZPOPMIN", "missing", "s", "0"),
        ("ZADD", "z", "1", "a"),
        ("BZPOPMIN", "z", "s", "0"),
        ("BZMPOP", "0", "2", "s", "z", "MIN"),
        ("MULTI",),
        ("BZPOPMIN", "missing", "0"),
        ("BZMPOP", "0", "1", "missing", "MIN"),
        ("BZPOPMAX", "s", "0"),
        ("EXEC",),
        ("EVAL", "return redis.call('bzmpop', 0, 1, KEYS[1], 'min')", "1", "missing"),
        ("EVAL", "return redis.call('bzpopmin', KEYS[1], 0)", "1", "missing"),
    ],
    "zunion zinter zdiff": [
        ("ZADD", "z1", "1", "a", "2", "b", "3", "c"),
        ("ZADD", "z2", "inf", "a", "-inf", "b", "5", "d"),
        ("SADD", "s", "a", "d", "e", "1", "2"),
        ("SADD", "i", "1", "2", "3"),
        ("ZUNION", "2", "z1", "z2", "WITHSCORES"),
        ("ZINTER", "2", "z1", "z2", "WITHSCORES"),
        ("ZDIFF", "2", "z1", "z2", "WITHSCORES"),
        ("ZUNION", "2", "z2", "z2", "WEIGHTS", "1", "-1", "WITHSCORES"),
        ("ZUNION", "2", "z2", "z2", "WEIGHTS", "0", "1", "WITHSCORES"),
        ("ZINTER", "2", "z2", "z2", "WEIGHTS", "0", "1", "WITHSCORES"),
        ("ZINTER", "2", "z2", "z2", "WEIGHTS", "1", "0", "AGGREGATE", "MIN", "WITHSCORES"),
        ("ZUNION", "3", "z1", "z2", "s", "WITHSCORES"),
        ("ZUNION", "2", "s", "i", "WITHSCORES", "AGGREGATE", "MAX"),
        ("ZINTER", "2", "z1", "s", "WITHSCORES", "AGGREGATE", "max"),
        ("ZINTER", "2", "s", "i"),
        ("ZDIFF", "2", "z1", "s", "WITHSCORES"),
        ("ZDIFF", "2", "s", "z1", "WITHSCORES"),
        ("ZDIFF", "2", "z1", "z1"),
        ("ZUNION", "2", "z1", "z1", "WEIGHTS", "1e308", "1e308", "WITHSCORES"),
        ("ZUNION", "1", "z1", "WEIGHTS", "-0.0", "WITHSCORES"),
        ("ZUNION", "2", "z2", "z1", "WEIGHTS", "1", "-1", "AGGREGATE", "SUM", "WITHSCORES"),
        ("ZUNION", "3", "z2", "z2", "z1", "WEIGHTS", "1", "-1", "1", "WITHSCORES"),
        ("ZINTER", "3", "z2", "z2", "z2", "WEIGHTS", "1", "-1", "1", "WITHSCORES"),
        ("ZUNION", "2", "missing", "missing2"),
        ("ZINTER", "2", "z1", "missing", "WITHSCORES"),
        ("ZDIFF", "2", "missing", "z1"),
        ("ZUNION", "1", "z1", "WEIGHTS"),
        ("ZUNION", "1", "z1", "WEIGHTS", "x"),
        ("ZUNION", "1", "z1", "WEIGHTS", "nan"),
        ("ZUNION", "1", "z1", "WEIGHTS", "1", "2"),
        ("ZUNION", "1", "z1", "AGGREGATE", "AVG"),
        ("ZUNION", "1", "z1", "AGGREGATE"),
        ("ZUNION", "1", "z1", "WITHSCORES", "WITHSCORES"),
        ("ZDIFF", "1", "z1", "WEIGHTS", "1"),
        ("ZDIFF", "1", "z1", "AGGREGATE", "MIN"),
        ("ZUNION", "0", "z1"),
        ("ZINTER", "-1", "z1"),
        ("ZDIFF", "0", "z1"),
        ("ZUNION", "x", "z1"),
        ("ZUNION", "3", "z1"),
        ("SET", "str", "x"),
        ("ZUNION", "2", "z1", "str"),
        ("ZUNION", "2", "z1", "str", "AGGREGATE", "BOGUS"),
        ("ZINTER", "2", "missing", "str"),
        ("LPUSH", "list", "a"),
        ("ZDIFF", "2", "z1", "list"),
    ],
    "zunionstore zinterstore zdiffstore": [
        ("ZADD", "z1", "1", "a", "2", "b", "3", "c"),
        ("ZADD", "z2", "3", "b", "4", "c", "5", "d"),
        ("ZUNIONSTORE", "u", "2", "z1", "z2", "WEIGHTS", "2", "3", "AGGREGATE", "MAX"),
        ("ZRANGE", "u", "0", "-1", "WITHSCORES"),
        ("ZINTERSTORE", "u", "2", "z1", "z2", "AGGREGATE", "MIN"),
        ("ZRANGE", "u", "0", "-1", "WITHSCORES"),
        ("ZDIFFSTORE", "u", "2", "z2", "z1"),
        ("ZRANGE", "u", "0", "-1", "WITHSCORES"),
        ("ZINTERSTORE", "u", "2", "z1", "missing"),
        ("EXISTS", "u"),
        ("ZUNIONSTORE", "u", "2", "missing", "missing2"),
        ("ZUNIONSTORE", "u", "1", "z1", "WITHSCORES"),
        ("ZDIFFSTORE", "u", "1", "z1", "WEIGHTS", "1"),
        ("ZUNIONSTORE", "u", "0", "z1"),
        ("SET", "str", "x"),
        ("ZUNIONSTORE", "u", "2", "z1", "str"),
        ("ZUNIONSTORE", "str", "1", "z1"),
        ("TYPE", "str"),
        ("SET", "str", "x"),
        ("ZINTERSTORE", "str", "1", "missing"),
        ("EXISTS", "str"),
        ("ZADD", "t", "1", "x"),
        ("EXPIRE", "t", "100"),
        ("ZUNIONSTORE", "t", "1", "z1"),
        ("TTL", "t"),
        ("SET", "sx", "v", "EX", "100"),
        ("ZDIFFSTORE", "sx", "1", "z1"),
        ("TTL", "sx"),
        ("ZADD", "k", "1", "a"),
        ("ZUNIONSTORE", "k", "2", "k", "k"),
        ("ZRANGE", "k", "0", "-1", "WITHSCORES"),
        ("ZINTERSTORE", "k", "2", "k", "k", "WEIGHTS", "1", "2", "AGGREGATE", "MAX"),
        ("ZRANGE", "k", "0", "-1", "WITHSCORES"),
        ("ZDIFFSTORE", "k", "2", "k", "k"),
        ("EXISTS", "k"),
        ("ZUNIONSTORE", "u", "1"),
    ],
    "zintercard": [
        ("ZADD", "z1", "1", "a", "2", "b", "3", "c"),
        ("ZADD", "z2", "1", "b", "2", "c", "3", "d"),
        ("SADD", "s", "c", "x"),
        ("ZINTERCARD", "2", "z1", "z2"),
        ("ZINTERCARD", "3", "z1", "z2", "s"),
        ("ZINTERCARD", "2", "z1", "z2", "LIMIT", "1"),
        ("ZINTERCARD", "2", "z1", "z2", "LIMIT", "0"),
        ("ZINTERCARD", "2", "z1", "z2", "LIMIT", "5"),
        ("ZINTERCARD", "2", "z1", "z2", "LIMIT", "-1"),
        ("ZINTERCARD", "2", "z1", "z2", "LIMIT", "x"),
        ("ZINTERCARD", "2", "z1", "z2", "LIMIT"),
        ("ZINTERCARD", "2", "z1", "z2", "WITHSCORES"),
        ("ZINTERCARD", "2", "z1", "z2", "WEIGHTS", "1", "1"),
        ("ZINTERCARD", "0", "z1"),
        ("ZINTERCARD", "3", "z1"),
        ("ZINTERCARD", "1", "missing"),
        ("SET", "str", "x"),
        ("ZINTERCARD", "2", "z1", "str"),
    ],
    "zrandmember": [
        ("ZADD", "z", "1", "a", "2", "b", "3", "c"),
        cmd("ZRANDMEMBER", "z", compare=RANDOM),
        cmd("ZRANDMEMBER", "z", "1", compare=RANDOM),
        cmd("ZRANDMEMBER", "z", "2", "WITHSCORES", compare=RANDOM),
        cmd("ZRANDMEMBER", "z", "-5", compare=RANDOM),
        cmd("ZRANDMEMBER", "z", "-5", "WITHSCORES", compare=RANDOM),
        cmd("ZRANDMEMBER", "z", "1", "WITHSCORES", compare=RANDOM),
        ("ZRANDMEMBER", "z", "3"),
        ("ZRANDMEMBER", "z", "5", "WITHSCORES"),
        ("ZRANDMEMBER", "z", "0"),
        ("ZRANDMEMBER", "z", "0", "WITHSCORES"),
        ("ZRANDMEMBER", "z", "x"),
        ("ZRANDMEMBER", "z", "1", "BOGUS"),
        ("ZRANDMEMBER", "z", "1", "WITHSCORES", "x"),
        ("ZRANDMEMBER", "z", "4611686018427387903", "WITHSCORES"),
        ("ZRANDMEMBER", "z", "4611686018427387904", "WITHSCORES"),
        ("ZRANDMEMBER", "z", "-4611686018427387905", "withscores\0"),
        ("ZRANDMEMBER", "z", "4611686018427387903", "withscores\0"),
        ("ZRANDMEMBER", "z", "-4611686018427387904", "WITHSCORES"),
        ("ZRANDMEMBER", "missing"),
        ("ZRANDMEMBER", "missing", "3"),
        ("ZRANDMEMBER", "missing", "-3", "WITHSCORES"),
        ("ZADD", "one", "1.5", "only"),
        ("ZRANDMEMBER", "one"),
        ("ZRANDMEMBER", "one", "-3", "WITHSCORES"),
        ("ZRANDMEMBER", "one", "1", "WITHSCORES"),
    ],
    "zscan": [
        ("ZADD", "z", "1", "a1", "2.5", "a2", "3", "b1"),
        ("ZSCAN", "z", "0"),
        ("ZSCAN", "z", "0", "MATCH", "a*"),
        ("ZSCAN", "z", "0", "COUNT", "1"),
        ("ZSCAN", "z", "7"),
        ("ZSCAN", "z", "0", "COUNT", "0"),
        ("ZSCAN", "z", "0", "COUNT", "x"),
        ("ZSCAN", "z", "x"),
        ("ZSCAN", "z", "0", "BOGUS", "1"),
        ("ZSCAN", "z", "0", "MATCH"),
        ("ZSCAN", "z", "0", "NOVALUES"),
        ("ZSCAN", "missing", "0", "MATCH"),
        ("ZSCAN", "missing", "x"),
    ],
    "wrong types": [
        ("SET", "str", "v"),
        *[(name, "str", *rest) for name, *rest in [
            ("ZADD", "1", "a"), ("ZINCRBY", "1", "a"), ("ZREM", "a"), ("ZCARD",), ("ZCOUNT", "0", "1"),
            ("ZLEXCOUNT", "-", "+"), ("ZSCORE", "a"), ("ZMSCORE", "a"), ("ZRANK", "a"), ("ZREVRANK", "a"),
            ("ZRANGE", "0", "-1"), ("ZRANGEBYSCORE", "0", "1"), ("ZRANGEBYLEX", "-", "+"),
            ("ZREVRANGE", "0", "-1"), ("ZREMRANGEBYRANK", "0", "1"), ("ZREMRANGEBYSCORE", "0", "1"),
            ("ZREMRANGEBYLEX", "-", "+"), ("ZPOPMIN",), ("ZPOPMAX", "2"), ("ZRANDMEMBER",),
            ("ZRANDMEMBER", "2"), ("ZSCAN", "0"), ("ZCOUNT", "x", "1"), ("ZRANGE", "x", "1")]],
        ("ZADD", "z", "1", "a"),
        ("GET", "z"),
        ("HSET", "z", "f", "v"),
        ("SADD", "z", "m"),
        ("LPUSH", "z", "m"),
        ("TYPE", "z"),
        ("SET", "z", "now-a-string"),
        ("TYPE", "z"),
    ],
    "watch and transactions": [
        ("ZADD", "z", "1", "a", "2", "b"),
        ("WATCH", "z"),
        cmd("ZADD", "z", "1", "a", conn=1),
        ("MULTI",),
        ("ZCARD", "z"),
        ("EXEC",),
        ("WATCH", "z"),
        cmd("ZINCRBY", "z", "0", "a", conn=1),
        ("MULTI",),
        ("ZCARD", "z"),
        ("EXEC",),
        ("WATCH", "z"),
        cmd("ZADD", "z", "3", "c", conn=1),
        ("MULTI",),
        ("ZCARD", "z"),
        ("EXEC",),
        ("WATCH", "u"),
        cmd("ZUNIONSTORE", "u", "1", "z", conn=1),
        ("MULTI",),
        ("ZCARD", "u"),
        ("EXEC",),
        ("WATCH", "u"),
        cmd("ZUNIONSTORE", "u", "1", "z", conn=1),
        ("MULTI",),
        ("ZCARD", "u"),
        ("EXEC",),
        ("MULTI",),
        ("ZADD", "z", "9", "x"),
        ("ZPOPMAX", "z"),
        ("ZADD", "z", "x", "bad"),
        ("ZRANGE", "z", "0", "-1", "WITHSCORES"),
        ("EXEC",),
    ],
}



@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_zset_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol=protocol, name=name)


# ---------------------------------------------------------------- skiplists

BIG = {f"m{i:03d}".encode(): i // 3 for i in range(300)}       # three members per score
BIG_ARGS = [x for member, score in BIG.items() for x in (str(score), member)]
SAME = [x for i in range(200) for x in ("0", f"w{i:03d}")]


def skiplist_steps():
    big_picks = random_picks({member: float(score) for member, score in BIG.items()})
    return [
        ("ZADD", "big", *BIG_ARGS),
        encoding("big"),
        ("ZCARD", "big"),
        ("ZRANGE", "big", "100", "120", "WITHSCORES"),
        ("ZRANGE", "big", "-5", "-1", "REV"),
        ("ZRANGE", "big", "(10", "20", "BYSCORE", "LIMIT", "3", "4", "WITHSCORES"),
        ("ZRANGE", "big", "20", "(10", "BYSCORE", "REV", "LIMIT", "3", "40"),
        ("ZRANGEBYSCORE", "big", "50", "+inf", "LIMIT", "290", "10"),
        ("ZCOUNT", "big", "(10", "20"),
        ("ZRANK", "big", "m150"),
        ("ZREVRANK", "big", "m150"),
        ("ZSCORE", "big", "m299"),
        ("ZMSCORE", "big", "m000", "m299", "nope"),
        ("ZREMRANGEBYRANK", "big", "0", "9"),
        ("ZREMRANGEBYSCORE", "big", "(90", "95"),
        ("ZPOPMIN", "big", "4"),
        ("ZPOPMAX", "big", "3"),
        ("ZMPOP", "1", "big", "MAX", "COUNT", "2"),
        ("ZRANGESTORE", "dst", "big", "0", "199"),
        encoding("dst"),
        ("ZRANGESTORE", "dst", "big", "0", "9"),
        encoding("dst"),
        ("ZRANGESTORE", "dst", "big", "-inf", "+inf", "BYSCORE"),
        encoding("dst"),
        ("ZADD", "small", "1", "m100", "2", "m200", "3", "x"),
        ("ZUNIONSTORE", "u", "2", "big", "small", "WEIGHTS", "1", "-1"),
        encoding("u"),
        ("ZRANGE", "u", "0", "5", "WITHSCORES"),
        ("ZINTERSTORE", "u", "2", "big", "small", "AGGREGATE", "MAX"),
        encoding("u"),
        ("ZRANGE", "u", "0", "-1", "WITHSCORES"),
        ("ZDIFF", "2", "small", "big", "WITHSCORES"),
        ("ZINTERCARD", "2", "big", "small"),
        cmd("ZSCAN", "small", "0", compare=exact),
        cmd("ZSCAN", "dst", "0", "COUNT", "1000", compare=UNORDERED_SCAN),
        cmd("ZRANDMEMBER", "big", "50", compare=big_picks),
        cmd("ZRANDMEMBER", "big", "200", "WITHSCORES", compare=big_picks),
        cmd("ZRANDMEMBER", "big", "-20", "WITHSCORES", compare=big_picks),
        ("ZADD", "same", *SAME),
        encoding("same"),
        ("ZRANGEBYLEX", "same", "[w050", "(w060"),
        ("ZREVRANGEBYLEX", "same", "(w060", "[w050", "LIMIT", "2", "3"),
        ("ZRANGE", "same", "-", "+", "BYLEX", "LIMIT", "195", "10"),
        ("ZLEXCOUNT", "same", "(w010", "+"),
        ("ZLEXCOUNT", "same", "[w1", "[w2"),
        ("ZREMRANGEBYLEX", "same", "[w100", "(w150"),
        ("ZRANGESTORE", "lex", "same", "[w100", "+", "BYLEX", "LIMIT", "0", "129"),
        encoding("lex"),
        ("ZCARD", "same"),
    ]


@pytest.mark.parametrize("protocol", [2, 3])
def test_skiplist_sequence(redis_oracle, cxl, protocol):
    run_sequence(redis_oracle, cxl, skiplist_steps(), protocol=protocol, name="skiplists")


def _full_scan(server, *options):
    """Every (member, score) a ZSCAN of the skiplist "big" gives, from cursor 0 back to 0."""
    seen, cursor, calls = [], b"0", 0
    with raw_connection(server.port) as conn:
        conn.request("ZADD", "big", *BIG_ARGS)
        while cursor != b"0" or calls == 0:
            cursor, items = parse_reply(conn.request("ZSCAN", "big", cursor, *options))
            seen += zip(items[0::2], items[1::2])
            calls += 1
    return sorted(seen), calls


def test_zscan_of_a_skiplist_visits_every_member_once(redis_oracle, cxl):
    for options in (("COUNT", "7"), ("MATCH", "m1*", "COUNT", "20")):
        (expected, _), (got, calls) = _full_scan(redis_oracle, *options), _full_scan(cxl, *options)
        assert got == expected and calls > 5


def test_repeating_count_beyond_any_reply_is_refused(cxl):
    """Redis 7.0 builds the reply of a negative count whatever its size, until it is
    killed; cxlredis refuses one it could never send, and serves the others meanwhile."""
    with raw_connection(cxl.port) as conn, raw_connection(cxl.port) as other:
        assert conn.request("ZADD", "z", "1", "a") == b":1\r\n"
        for count in (-(2 ** 63), -(2 ** 62) + 1, -(2 ** 28)):
            reply = conn.request("ZRANDMEMBER", "z", count, *(["WITHSCORES"] if count > -(2 ** 62) else []))
            assert reply == (f"-ERR ZRANDMEMBER count {-count} would need a reply of more than "
                             f"{512 * 2**20} bytes (proto-max-bulk-len, client-output-buffer-limit)"
                             "\r\n").replace("count ", "count -", 1).encode()
            assert other.request("PING") == b"+PONG\r\n"
        assert conn.request("ZRANDMEMBER", "z", -1000) == b"*1000\r\n" + b"$1\r\na\r\n" * 1000


# ---------------------------------------------------------------- keyspace events

EVENT_COMMANDS = [
    ["ZADD", "z", "1", "a", "2", "b"], ["ZADD", "z", "1", "a"], ["ZADD", "z", "XX", "5", "nope"],
    ["ZADD", "z2", "XX", "1", "a"], ["ZADD", "z", "INCR", "1", "a"], ["ZINCRBY", "z", "0", "a"],
    ["ZINCRBY", "z2", "1", "a"], ["ZADD", "z", "GT", "0", "a"], ["ZREM", "z", "nope"],
    ["ZREM", "z", "a", "b"], ["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    ["ZREMRANGEBYRANK", "z", "0", "0"], ["ZREMRANGEBYSCORE", "z", "5", "6"],
    ["ZREMRANGEBYSCORE", "z", "-inf", "+inf"], ["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    ["ZREMRANGEBYLEX", "z", "-", "+"], ["ZADD", "z", "1", "a", "2", "b", "3", "c"], ["ZPOPMIN", "z"],
    ["ZPOPMAX", "z", "5"], ["ZPOPMIN", "z"], ["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    ["ZMPOP", "1", "z", "MIN", "COUNT", "5"], ["ZADD", "z", "1", "a", "2", "b", "3", "c"],
    ["BZPOPMIN", "z", "1"], ["BZMPOP", "1", "1", "z", "MAX", "COUNT", "9"],
    ["ZADD", "z", "1", "a", "2", "b", "3", "c"], ["ZUNIONSTORE", "d", "1", "z"],
    ["ZUNIONSTORE", "d", "1", "z"], ["ZINTERSTORE", "d", "1", "missing"],
    ["ZINTERSTORE", "d2", "1", "missing"], ["ZDIFFSTORE", "d", "1", "z"], ["SET", "s", "v"],
    ["ZDIFFSTORE", "s", "1", "z"], ["ZRANGESTORE", "r", "z", "0", "0"], ["ZRANGESTORE", "r", "z", "5", "6"],
    ["ZSCORE", "missing", "a"], ["ZRANGE", "missing", "0", "-1"], ["ZUNION", "2", "missing", "z"],
    ["ZRANDMEMBER", "missing"], ["ZSCAN", "missing", "0"], ["ZCARD", "missing"],
    ["ZMSCORE", "missing", "a"], ["ZRANK", "missing", "a"], ["ZCOUNT", "missing", "0", "1"],
    ["ZLEXCOUNT", "missing", "-", "+"], ["ZINTERCARD", "1", "missing"],
    ["ZRANGESTORE", "r2", "missing", "0", "1"], ["ZPOPMIN", "missing"], ["ZMPOP", "1", "missing", "MIN"],
    ["BZPOPMAX", "missing", "0.01"],
]
SENTINEL = b"zset-events-sentinel"


def _replay_events(server):
    """(command, reply, events) for each of EVENT_COMMANDS with every event class on."""
    with raw_connection(server.port) as conn, raw_connection(server.port) as listener, \
            raw_connection(server.port) as publisher:
        assert conn.request("CONFIG", "SET", "notify-keyspace-events", "AKEnm") == b"+OK\r\n"
        listener.send(encode_command("PSUBSCRIBE", "__key*__:*", SENTINEL))
        listener.read_reply(), listener.read_reply()
        outcome = []
        try:
            for argv in EVENT_COMMANDS:
                reply = conn.request(*argv)
                publisher.request("PUBLISH", SENTINEL, "after")
                events = []
                while SENTINEL not in (frame := listener.read_reply()):
                    events.append(frame)
                outcome.append((argv, reply, events))
        finally:
            conn.request("CONFIG", "SET", "notify-keyspace-events", "")
        return outcome


def test_keyspace_events_as_redis_sends_them(redis_oracle, cxl):
    expected = _replay_events(redis_oracle)
    for want, have in zip(expected, _replay_events(cxl)):
        assert have == want


# ---------------------------------------------------------------- generated sequences

KEYS = st.sampled_from([b"z1", b"z2", b"st", b"str"])
MEMBERS = st.sampled_from([b"a", b"b", b"c", b"d", b""])
SCORE_ARGS = st.sampled_from([b"0", b"-0", b"1", b"2.5", b"-3", b"inf", b"-inf", b"1e308", b"x"])
BOUNDS = st.sampled_from([b"-inf", b"+inf", b"(1", b"2.5", b"0", b"(-0", b"x"])
LEX = st.sampled_from([b"-", b"+", b"[a", b"(b", b"[c", b"(d", b"x"])
INTS = st.sampled_from([b"0", b"1", b"-1", b"2", b"-3", b"10"])
ZADD_FLAGS = st.lists(st.sampled_from([b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"]), max_size=2)
ZSET_COMMANDS = st.one_of(
    st.builds(lambda k, f, s, m: (b"ZADD", k, *f, s, m), KEYS, ZADD_FLAGS, SCORE_ARGS, MEMBERS),
    st.tuples(st.just(b"ZADD"), KEYS, SCORE_ARGS, MEMBERS, SCORE_ARGS, MEMBERS),
    st.tuples(st.just(b"ZINCRBY"), KEYS, SCORE_ARGS, MEMBERS),
    st.tuples(st.just(b"ZREM"), KEYS, MEMBERS, MEMBERS),
    st.tuples(st.just(b"ZRANGE"), KEYS, INTS, INTS, st.just(b"WITHSCORES")),
    st.tuples(st.just(b"ZRANGE"), KEYS, BOUNDS, BOUNDS, st.just(b"BYSCORE"), st.just(b"REV")),
    st.tuples(st.just(b"ZRANGEBYSCORE"), KEYS, BOUNDS, BOUNDS, st.just(b"LIMIT"), INTS, INTS),
    st.tuples(st.just(b"ZRANGEBYLEX"), KEYS, LEX, LEX),
    st.tuples(st.just(b"ZREVRANGEBYLEX"), KEYS, LEX, LEX, st.just(b"LIMIT"), INTS, INTS),
    st.tuples(st.just(b"ZCOUNT"), KEYS, BOUNDS, BOUNDS),
    st.tuples(st.just(b"ZLEXCOUNT"), KEYS, LEX, LEX),
    st.tuples(st.just(b"ZRANK"), KEYS, MEMBERS),
    st.tuples(st.just(b"ZMSCORE"), KEYS, MEMBERS, MEMBERS),
    st.tuples(st.sampled_from([b"ZPOPMIN", b"ZPOPMAX"]), KEYS, INTS),
    st.tuples(st.sampled_from([b"ZREMRANGEBYSCORE"]), KEYS, BOUNDS, BOUNDS),
    st.tuples(st.sampled_from([b"ZREMRANGEBYLEX"]), KEYS, LEX, LEX),
    st.tuples(st.just(b"ZREMRANGEBYRANK"), KEYS, INTS, INTS),
    st.tuples(st.sampled_from([b"ZUNIONSTORE", b"ZINTERSTORE"]), KEYS, st.just(b"2"), KEYS, KEYS,
              st.just(b"WEIGHTS"), SCORE_ARGS, SCORE_ARGS, st.just(b"AGGREGATE"),
              st.sampled_from([b"SUM", b"MIN", b"MAX"])),
    st.tuples(st.sampled_from([b"ZUNION", b"ZINTER", b"ZDIFF"]), st.just(b"2"), KEYS, KEYS,
              st.just(b"WITHSCORES")),
    st.tuples(st.just(b"ZRANGESTORE"), KEYS, KEYS, LEX, LEX, st.just(b"BYLEX")),
    st.tuples(st.just(b"ZMPOP"), st.just(b"2"), KEYS, KEYS, st.sampled_from([b"MIN", b"MAX"]),
              st.just(b"COUNT"), st.sampled_from([b"1", b"3"])),
    st.tuples(st.just(b"SADD"), st.just(b"st"), MEMBERS),
    st.tuples(st.just(b"SET"), st.just(b"str"), MEMBERS),
    st.tuples(st.just(b"ZCARD"), KEYS),
)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(ZSET_COMMANDS, min_size=1, max_size=25), protocol=st.sampled_from([2, 3]))
def test_zset_random_sequences(redis_oracle, cxl, steps, protocol):
    flushall(redis_oracle, cxl)
    run_sequence(redis_oracle, cxl, steps + [(b"ZRANGE", b"z1", b"0", b"-1", b"WITHSCORES"),
                                              (b"ZRANGE", b"z2", b"0", b"-1", b"WITHSCORES")],
                 protocol=protocol, name="hypothesis zsets")


def test_a_write_beyond_the_arena_changes_nothing(cxl):
    """Each write runs in one transaction: when the arena (64 MiB) has no room left for it,
    the command answers -OOM and every key is as it was, a destination of any type included."""
    big = [x for i in range(80) for x in (str(i), b"%d" % i + b"x" * (1 << 20))]
    with raw_connection(cxl.port) as conn:
        assert conn.request("CONFIG", "SET", "maxmemory-policy", "noeviction") == b"+OK\r\n"
        assert conn.request("ZADD", "z", "1", "a", "2", "b") == b":2\r\n"
        assert conn.request("ZADD", "z", *big).startswith(b"-OOM ")
        assert conn.request("ZRANGE", "z", "0", "-1", "WITHSCORES") == (
            b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")
        assert conn.request("OBJECT", "ENCODING", "z") == b"$8\r\nlistpack\r\n"
        members = 0       # 1 MiB members until the arena is full, then room for a few more
        while conn.request("ZADD", "src", members, b"%d" % members + b"x" * (1 << 20)) == b":1\r\n":
            members += 1
        assert members > 10
        assert conn.request("ZREMRANGEBYRANK", "src", "0", "3") == b":4\r\n"
        assert conn.request("EXPIRE", "z", "100") == b":1\r\n"
        for argv in (("ZUNIONSTORE", "z", "1", "src"), ("ZRANGESTORE", "z", "src", "0", "-1"),
                     ("ZINTERSTORE", "z", "2", "src", "src")):
            assert conn.request(*argv).startswith(b"-OOM "), argv
            assert conn.request("ZCARD", "z") == b":2\r\n"
            assert conn.request("TTL", "z") == b":100\r\n"
        assert conn.request("SET", "str", "v") == b"+OK\r\n"
        assert conn.request("ZUNIONSTORE", "str", "1", "src").startswith(b"-OOM ")
        assert conn.request("GET", "str") == b"$1\r\nv\r\n"
        assert conn.request("ZRANGESTORE", "z", "src", "0", "1") == b":2\r\n"    # what fits is stored
        assert conn.request("TTL", "z") == b":-1\r\n"
        assert conn.request("FLUSHALL") == b"+OK\r\n"
        assert conn.request("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == b"+OK\r\n"
