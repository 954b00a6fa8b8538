"""Keyspace commands, replayed on redis-server and cxlredis; every reply must match (RESP2 and RESP3)."""
import pytest

from conftest import encode_command, parse_reply, raw_connection
from diff_harness import cxl_knows, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

BIG = "9223372036854775807"
SMALL = "-9223372036854775808"
FUTURE_S = "4102444800"
FUTURE_MS = "4102444800123"

SEQUENCES = {
    "del unlink exists type": [
        ("MSET", "a", "1", "b", "2", "c", "3"),
        ("DEL", "a", "b", "x"),
        ("EXISTS", "a", "b", "c", "c", "x"),
        ("EXISTS", "x"),
        ("UNLINK", "c", "c"),
        ("EXISTS", "c"),
        ("DEL", "a"),
        ("UNLINK", "a"),
        ("TYPE", "a"),
        ("SET", "a", "1"),
        ("TYPE", "a"),
        ("DEL", "a", "a"),
        ("DEL",),
        ("UNLINK",),
        ("EXISTS",),
        ("TYPE",),
        ("TYPE", "a", "b"),
    ],
    "expire options": [
        ("EXPIRE", "missing", "100"),
        ("SET", "k", "v"),
        ("EXPIRE", "k", "100"),
        ("TTL", "k"),
        ("EXPIRE", "k", "200", "NX"),
        ("EXPIRE", "k", "200", "XX"),
        ("TTL", "k"),
        ("EXPIRE", "k", "100", "GT"),
        ("EXPIRE", "k", "300", "GT"),
        ("TTL", "k"),
        ("EXPIRE", "k", "500", "LT"),
        ("EXPIRE", "k", "150", "LT"),
        ("TTL", "k"),
        ("PERSIST", "k"),
        ("PERSIST", "k"),
        ("PERSIST", "missing"),
        ("EXPIRE", "k", "100", "XX"),
        ("EXPIRE", "k", "100", "GT"),
        ("EXPIRE", "k", "100", "LT"),
        ("TTL", "k"),
        ("PERSIST", "k"),
        ("EXPIRE", "k", "100", "NX"),
        ("EXPIRE", "k", "100", "nx"),
        ("EXPIRE", "k", "400", "gt"),
        ("TTL", "k"),
        ("EXPIRE", "k", "100", "XX", "GT"),
        ("EXPIRE", "k", "100", "XX", "LT"),
        ("TTL", "k"),
    ],
    "expire errors": [
        ("SET", "k", "v"),
        ("EXPIRE", "k", "100", "NX", "XX"),
        ("EXPIRE", "k", "100", "GT", "LT"),
        ("EXPIRE", "k", "100", "NX", "GT"),
        ("EXPIRE", "k", "100", "NX", "LT"),
        ("EXPIRE", "k", "100", "FOO"),
        ("EXPIRE", "k", "100", "NX", "FOO"),
        ("PEXPIRE", "k", "100", "XX", "NX"),
        ("EXPIREAT", "k", FUTURE_S, "GT", "LT"),
        ("PEXPIREAT", "k", FUTURE_MS, "NX", "GT"),
        ("EXPIRE", "k", "abc"),
        ("EXPIRE", "k", "1.5"),
        ("EXPIRE", "k", ""),
        ("EXPIRE", "k", BIG),
        ("EXPIRE", "k", SMALL),
        ("PEXPIRE", "k", BIG),
        ("PEXPIRE", "k", SMALL),
        ("EXPIREAT", "k", BIG),
        ("PEXPIREAT", "k", BIG),
        ("EXPIRE", "k", "9223372036854775"),
        ("TTL", "k"),
        ("EXPIRE", "k"),
        ("EXPIRE",),
        ("PEXPIRE", "k"),
        ("EXPIREAT", "k"),
        ("PEXPIREAT", "k"),
        ("TTL",),
        ("PTTL", "k", "x"),
        ("PERSIST",),
    ],
    "expire zero and negative delete": [
        ("MSET", "a", "1", "b", "2", "c", "3", "d", "4"),
        ("EXPIRE", "a", "0"),
        ("PEXPIRE", "b", "-5"),
        ("EXPIREAT", "c", "1"),
        ("PEXPIREAT", "d", "1"),
        ("EXISTS", "a", "b", "c", "d"),
        ("DBSIZE",),
        ("SET", "e", "5"),
        ("EXPIRE", "e", "-1", "XX"),
        ("EXISTS", "e"),
        ("SET", "f", "6"),
        ("EXPIRE", "f", "100"),
        ("EXPIRE", "f", "-1", "GT"),
        ("EXPIRE", "f", "-1", "LT"),
        ("EXISTS", "f"),
    ],
    "expireat and expiretime": [
        ("EXPIRETIME", "missing"),
        ("PEXPIRETIME", "missing"),
        ("SET", "k", "v"),
        ("EXPIRETIME", "k"),
        ("PEXPIRETIME", "k"),
        ("EXPIREAT", "k", FUTURE_S),
        ("EXPIRETIME", "k"),
        ("PEXPIRETIME", "k"),
        ("PEXPIREAT", "k", FUTURE_MS),
        ("PEXPIRETIME", "k"),
        ("EXPIRETIME", "k"),
        ("EXPIREAT", "k", "4102444801", "LT"),
        ("EXPIREAT", "k", "4102444801", "GT"),
        ("EXPIRETIME", "k"),
        ("PEXPIREAT", "k", "4102444800999", "LT"),
        ("PEXPIRETIME", "k"),
        ("EXPIREAT", "k", FUTURE_S, "NX"),
        ("PERSIST", "k"),
        ("EXPIREAT", "k", FUTURE_S, "NX"),
        ("EXPIRETIME", "k"),
        ("EXPIRETIME",),
        ("PEXPIRETIME", "k", "x"),
    ],
    "ttl pttl": [
        ("TTL", "missing"),
        ("PTTL", "missing"),
        ("SET", "k", "v"),
        ("TTL", "k"),
        ("PTTL", "k"),
        ("PEXPIRE", "k", "100500"),
        ("TTL", "k"),
        ("PTTL", "k"),
        ("PEXPIRE", "k", "1500"),
        ("TTL", "k"),
    ],
    "keys patterns": [
        ("KEYS", "*"),
        ("MSET", "foo", "1", "fab", "2", "bar", "3", "f*x", "4", "f[x", "5", "", "6",
         "FOO", "7", "fo", "8", b"\xffbin", "9"),
        ("KEYS", "*"),
        ("KEYS", "f*"),
        ("KEYS", "f?o"),
        ("KEYS", "f??"),
        ("KEYS", "f[ao]*"),
        ("KEYS", "f[^a]*"),
        ("KEYS", "f[!a]*"),
        ("KEYS", "f[a-o]?"),
        ("KEYS", "f\\*x"),
        ("KEYS", "f\\[x"),
        ("KEYS", "f[x"),
        ("KEYS", "*a*"),
        ("KEYS", "[a-c]*"),
        ("KEYS", "[c-a]*"),
        ("KEYS", "nomatch"),
        ("KEYS", ""),
        ("KEYS", "foo"),
        ("KEYS", "FOO"),
        ("KEYS", b"\xff*"),
        ("KEYS", "**o"),
        ("KEYS", "f[]*"),
        ("KEYS",),
        ("KEYS", "*", "extra"),
    ],
    "randomkey on zero and one key": [
        ("RANDOMKEY",),
        ("SET", "only", "1"),
        ("RANDOMKEY",),
        ("RANDOMKEY", "x"),
    ],
    "rename renamenx": [
        ("RENAME", "missing", "x"),
        ("RENAMENX", "missing", "x"),
        ("SET", "a", "1"),
        ("RENAME", "a", "b"),
        ("GET", "a"),
        ("GET", "b"),
        ("RENAME", "b", "b"),
        ("GET", "b"),
        ("SET", "c", "3"),
        ("RENAMENX", "b", "c"),
        ("RENAMENX", "b", "b"),
        ("RENAMENX", "b", "d"),
        ("MGET", "b", "c", "d"),
        ("RENAME", "d", "c"),
        ("GET", "c"),
        ("SET", "t", "v", "EX", "100"),
        ("RENAME", "t", "u"),
        ("TTL", "u"),
        ("SET", "w", "x", "EX", "100"),
        ("RENAME", "c", "w"),
        ("TTL", "w"),
        ("RENAME", "w"),
        ("RENAMENX", "w", "x", "y"),
    ],
    "copy": [
        ("COPY", "missing", "x"),
        ("SET", "a", "1"),
        ("COPY", "a", "b"),
        ("GET", "b"),
        ("COPY", "a", "b"),
        ("SET", "a", "2"),
        ("COPY", "a", "b", "REPLACE"),
        ("GET", "b"),
        ("COPY", "a", "b", "replace"),
        ("COPY", "a", "b", "DB", "1"),
        ("COPY", "a", "b", "DB", "1"),
        ("SELECT", "1"),
        ("GET", "b"),
        ("SELECT", "0"),
        ("COPY", "a", "a"),
        ("COPY", "a", "a", "REPLACE"),
        ("COPY", "a", "a", "DB", "0"),
        ("COPY", "a", "a", "DB", "1"),
        ("COPY", "a", "b", "DB", "99"),
        ("COPY", "a", "b", "DB", "-1"),
        ("COPY", "a", "b", "DB", "x"),
        ("COPY", "a", "b", "DB"),
        ("COPY", "a", "b", "FOO"),
        ("COPY", "a", "b", "REPLACE", "REPLACE"),
        ("SET", "t", "v", "EX", "100"),
        ("COPY", "t", "t2"),
        ("TTL", "t2"),
        ("COPY", "a"),
    ],
    "move": [
        ("SET", "a", "1"),
        ("MOVE", "a", "1"),
        ("EXISTS", "a"),
        ("SELECT", "1"),
        ("GET", "a"),
        ("SELECT", "0"),
        ("SET", "a", "2"),
        ("MOVE", "a", "1"),
        ("GET", "a"),
        ("MOVE", "a", "0"),
        ("MOVE", "a", "99"),
        ("MOVE", "a", "16"),
        ("MOVE", "a", "-1"),
        ("MOVE", "a", "x"),
        ("MOVE", "missing", "1"),
        ("SET", "t", "v", "EX", "100"),
        ("MOVE", "t", "2"),
        ("SELECT", "2"),
        ("TTL", "t"),
        ("MOVE", "t"),
    ],
    "hash encodings follow hash-max-listpack-*": [
        ("CONFIG", "SET", "hash-max-listpack-entries", "2", "hash-max-ziplist-value", "4"),
        ("HSET", "small", "a", "1", "b", "2"),
        ("HSET", "many", "a", "1", "b", "2", "c", "3"),
        ("HSET", "long", "a", "12345"),
        ("HSET", "edge", "abcd", "1234"),
        ("OBJECT", "ENCODING", "small"),
        ("OBJECT", "ENCODING", "many"),
        ("OBJECT", "ENCODING", "long"),
        ("OBJECT", "ENCODING", "edge"),
        ("CONFIG", "GET", "hash-max-*"),
        ("CONFIG", "SET", "hash-max-ziplist-entries", "512", "hash-max-listpack-value", "64"),
        ("HSET", "after", "a", "1", "b", "2", "c", "3"),
        ("OBJECT", "ENCODING", "after"),
    ],
    "touch and object": [
        ("TOUCH", "a", "b", "missing"),
        ("MSET", "a", "1", "b", "hello", "c", "x" * 100),
        ("TOUCH", "a", "b", "missing", "a"),
        ("OBJECT", "ENCODING", "a"),
        ("OBJECT", "ENCODING", "b"),
        ("OBJECT", "ENCODING", "c"),
        ("OBJECT", "ENCODING", "missing"),
        ("OBJECT", "encoding", "a"),
        ("OBJECT", "IDLETIME", "a"),
        ("OBJECT", "IDLETIME", "missing"),
        ("OBJECT", "FREQ", "a"),
        ("OBJECT", "FREQ", "missing"),
        ("OBJECT", "REFCOUNT", "a"),
        ("OBJECT", "REFCOUNT", "b"),
        ("OBJECT", "REFCOUNT", "missing"),
        ("OBJECT", "HELP"),
        ("OBJECT", "help"),
        ("OBJECT", "FOO", "a"),
        ("OBJECT", "FOO"),
        ("OBJECT",),
        ("OBJECT", "ENCODING"),
        ("OBJECT", "ENCODING", "a", "b"),
        ("OBJECT", "IDLETIME"),
        ("OBJECT", "HELP", "x"),
        ("TOUCH",),
    ],
    "dbsize flushdb flushall": [
        ("DBSIZE",),
        ("MSET", "a", "1", "b", "2"),
        ("DBSIZE",),
        ("SELECT", "1"),
        ("SET", "c", "3"),
        ("DBSIZE",),
        ("FLUSHDB",),
        ("DBSIZE",),
        ("SELECT", "0"),
        ("DBSIZE",),
        ("FLUSHDB", "ASYNC"),
        ("DBSIZE",),
        ("SET", "a", "1"),
        ("FLUSHDB", "SYNC"),
        ("FLUSHDB", "sync"),
        ("FLUSHDB", "FOO"),
        ("FLUSHDB", "SYNC", "ASYNC"),
        ("SET", "a", "1"),
        ("SELECT", "3"),
        ("SET", "b", "1"),
        ("FLUSHALL",),
        ("DBSIZE",),
        ("SELECT", "0"),
        ("DBSIZE",),
        ("FLUSHALL", "ASYNC"),
        ("FLUSHALL", "SYNC"),
        ("FLUSHALL", "async"),
        ("FLUSHALL", "FOO"),
        ("FLUSHALL", "SYNC", "SYNC"),
        ("DBSIZE", "x"),
    ],
    "swapdb": [
        ("SET", "a", "db0"),
        ("SELECT", "1"),
        ("SET", "b", "db1"),
        ("SWAPDB", "0", "1"),
        ("GET", "a"),
        ("GET", "b"),
        ("SELECT", "0"),
        ("GET", "b"),
        ("SWAPDB", "1", "0"),
        ("GET", "a"),
        ("SWAPDB", "0", "0"),
        ("GET", "a"),
        ("SWAPDB", "0", "99"),
        ("SWAPDB", "16", "0"),
        ("SWAPDB", "-1", "0"),
        ("SWAPDB", "a", "1"),
        ("SWAPDB", "0", "b"),
        ("SWAPDB", "0"),
        ("SET", "t", "v", "EX", "100"),
        ("SWAPDB", "0", "2"),
        ("SELECT", "2"),
        ("TTL", "t"),
        ("DBSIZE",),
    ],
    "select": [
        ("SET", "k", "0"),
        ("SELECT", "15"),
        ("GET", "k"),
        ("SET", "k", "15"),
        ("SELECT", "0"),
        ("GET", "k"),
        ("SELECT", "16"),
        ("SELECT", "-1"),
        ("SELECT", "x"),
        ("SELECT", "1.0"),
        ("SELECT", ""),
        ("SELECT", BIG),
        ("SELECT",),
        ("SELECT", "1", "2"),
        ("GET", "k"),
    ],
    "memory usage": [
        ("SET", "a", "hello"),
        ("MEMORY", "USAGE", "a"),
        ("MEMORY", "USAGE", "missing"),
        ("MEMORY", "USAGE", "a", "SAMPLES", "5"),
        ("MEMORY", "USAGE", "a", "SAMPLES", "0"),
        ("MEMORY", "USAGE", "a", "SAMPLES", "x"),
        ("MEMORY", "USAGE", "a", "SAMPLES"),
        ("MEMORY", "USAGE", "a", "FOO"),
        ("MEMORY", "usage", "a"),
        ("MEMORY", "USAGE"),
        ("MEMORY", "FOO"),
        ("MEMORY",),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_keyspace_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol, name)


# ------------------------------------------------------------ SCAN

SCAN_KEYS = [f"user:{i}" for i in range(150)] + [f"item:{i}" for i in range(60)] + ["u", "user:", "user:x:y"]


def _populate(server, keys, db=0):
    with raw_connection(server.port) as conn:
        assert conn.request("SELECT", db) == b"+OK\r\n"
        args = ["MSET"]
        for key in keys:
            args += [key, "v"]
        assert conn.request(*args) == b"+OK\r\n"


def _full_scan(server, *options, db=0, limit=10_000):
    """Every key a complete SCAN iteration returns, as a set."""
    seen, cursor, calls = set(), b"0", 0
    with raw_connection(server.port) as conn:
        assert conn.request("SELECT", db) == b"+OK\r\n"
        while True:
            reply = parse_reply(conn.request("SCAN", cursor, *options))
            assert isinstance(reply, list) and len(reply) == 2, f"SCAN replied {reply!r}"
            cursor, keys = reply
            seen.update(keys)
            calls += 1
            assert calls <= limit, f"SCAN {options} did not finish after {limit} calls"
            if cursor == b"0":
                return seen


@pytest.mark.parametrize("options", [
    (),
    ("COUNT", "1"),
    ("COUNT", "1000"),
    ("MATCH", "user:*"),
    ("MATCH", "user:1?"),
    ("MATCH", "nomatch*"),
    ("MATCH", "item:*", "COUNT", "7"),
    ("TYPE", "string"),
    ("TYPE", "hash"),
    ("TYPE", "STRING", "MATCH", "u*"),
], ids=lambda options: " ".join(options) or "plain")
def test_scan_full_iteration_returns_same_keys(redis_oracle, cxl, options):
    for server in (redis_oracle, cxl):
        _populate(server, SCAN_KEYS)
    # A full iteration returns every key present throughout at least once;
    # duplicates are allowed and cursors are the implementation's, so the
    # sets of keys are compared.
    assert _full_scan(cxl, *options) == _full_scan(redis_oracle, *options)


def test_scan_sees_only_the_selected_db(redis_oracle, cxl):
    for server in (redis_oracle, cxl):
        _populate(server, ["x", "y"], db=5)
        assert _full_scan(server, db=0) == set(), f"{server!r}"
        assert _full_scan(server, db=5) == {b"x", b"y"}, f"{server!r}"


SCAN_ERRORS = [
    ("SCAN", "abc"),
    ("SCAN", "-1"),
    ("SCAN", "1.5"),
    ("SCAN", "18446744073709551616"),
    ("SCAN", "0", "COUNT", "0"),
    ("SCAN", "0", "COUNT", "-1"),
    ("SCAN", "0", "COUNT", "x"),
    ("SCAN", "0", "COUNT"),
    ("SCAN", "0", "MATCH"),
    ("SCAN", "0", "TYPE"),
    ("SCAN", "0", "FOO", "bar"),
    ("SCAN", "0", "MATCH", "*", "EXTRA"),
    ("SCAN",),
    ("SCAN", "0", "TYPE", "nosuchtype"),
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_scan_errors(redis_oracle, cxl, protocol):
    # On an empty database a scan from 0 ends at once on both servers, so the
    # non-error replies here are exact too.
    run_sequence(redis_oracle, cxl, SCAN_ERRORS, protocol, "scan errors")


def test_randomkey_returns_existing_keys(redis_oracle, cxl):
    keys = {f"k{i}".encode() for i in range(20)}
    for server in (redis_oracle, cxl):
        _populate(server, sorted(keys))
    with raw_connection(cxl.port) as conn:
        picks = [parse_reply(conn.request("RANDOMKEY")) for _ in range(60)]
    assert set(picks) <= keys
    # 60 picks among 20 keys: a fixed answer would mean no randomness at all.
    assert len(set(picks)) > 1


# ------------------------------------------------------------ WRONGTYPE

WRONGTYPE_STEPS = [
    ("HSET", "h", "f", "v"),
    ("TYPE", "h"),
    ("GET", "h"),
    ("SET", "h", "v", "GET"),
    ("SET", "h", "v", "NX", "GET"),
    ("GETDEL", "h"),
    ("GETEX", "h"),
    ("GETEX", "h", "EX", "100"),
    ("GETSET", "h", "v"),
    ("APPEND", "h", "x"),
    ("STRLEN", "h"),
    ("GETRANGE", "h", "0", "-1"),
    ("SUBSTR", "h", "0", "-1"),
    ("SETRANGE", "h", "0", "x"),
    ("SETRANGE", "h", "0", ""),
    ("INCR", "h"),
    ("DECR", "h"),
    ("INCRBY", "h", "1"),
    ("DECRBY", "h", "1"),
    ("INCRBYFLOAT", "h", "1.5"),
    ("MGET", "h", "missing"),
    ("SETNX", "h", "v"),
    ("MSETNX", "h", "v", "other", "w"),
    ("EXISTS", "h", "other"),
    ("OBJECT", "ENCODING", "h"),
    ("EXPIRE", "h", "100"),
    ("TTL", "h"),
    ("PERSIST", "h"),
    ("COPY", "h", "h2"),
    ("TYPE", "h2"),
    ("RENAME", "h2", "h3"),
    ("TYPE", "h3"),
    ("KEYS", "h*"),
    ("HSET", "h", "g", "w"),
    ("SET", "h3", "now a string"),
    ("TYPE", "h3"),
    ("GET", "h3"),
    ("SET", "s", "v"),
    ("HSET", "s", "f", "v"),
    ("MSET", "h", "v"),
    ("TYPE", "h"),
    ("HSET", "h", "f", "v"),
    ("SETEX", "h", "100", "v"),
    ("TYPE", "h"),
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_wrongtype(redis_oracle, cxl, protocol):
    if not cxl_knows(cxl, "HSET", "__probe__", "f", "v"):
        pytest.skip("cxlredis has no HSET yet: no second type to provoke WRONGTYPE with")
    with raw_connection(cxl.port) as conn:
        conn.send(encode_command("DEL", "__probe__"))
        conn.read_reply()
    run_sequence(redis_oracle, cxl, WRONGTYPE_STEPS, protocol, "wrongtype")
