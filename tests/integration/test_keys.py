"""Keyspace commands: behaviour over time and across clients, and every error path.

Expectations that Redis defines (error texts, which commands touch the LRU or
count keyspace hits) run against redis-server as well as cxlredis, so a wrong
expectation fails on the oracle. The rest (SCAN under concurrent writes,
active expiry, multi-db moves, MEMORY USAGE) checks cxlredis's guarantees.
"""
import time

import pytest

from conftest import TARGET, invalid_expire, raw_connection, run_steps

NULL = {2: b"$-1\r\n", 3: b"_\r\n"}
OK = b"+OK\r\n"
SYNTAX = b"-ERR syntax error\r\n"
NOT_INTEGER = b"-ERR value is not an integer or out of range\r\n"
DB_RANGE = b"-ERR DB index is out of range\r\n"
SAME = b"-ERR source and destination objects are the same\r\n"
INT_RANGE = b"-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"
NX_AND = b"-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
GT_AND_LT = b"-ERR GT and LT options at the same time are not compatible\r\n"
LFU_NOT_SELECTED = (b"-ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
                    b"Please note that when switching between policies at runtime LRU and LFU data "
                    b"will take some time to adjust.\r\n")


@pytest.fixture
def c(cxl):
    client = cxl.client()
    client.flushall()
    try:
        yield client
    finally:
        client.close()


EXPIRE_STEPS = [
    (("SET", "k", "v"), OK),
    (("EXPIRE", "k", "100", "NX", "XX"), NX_AND),
    (("EXPIRE", "k", "100", "GT", "NX"), NX_AND),
    (("EXPIRE", "k", "100", "LT", "NX"), NX_AND),
    (("EXPIRE", "k", "100", "GT", "LT"), GT_AND_LT),
    (("EXPIRE", "k", "100", "foo"), b"-ERR Unsupported option foo\r\n"),
    (("EXPIRE", "k", "abc", "foo"), b"-ERR Unsupported option foo\r\n"),  # options first
    (("EXPIRE", "missing", "100", "foo"), b"-ERR Unsupported option foo\r\n"),
    (("EXPIRE", "k", "abc"), NOT_INTEGER),
    (("EXPIRE", "k", "9223372036854776"), invalid_expire("expire")),
    (("EXPIRE", "k", "-9223372036854776"), invalid_expire("expire")),
    (("PEXPIRE", "k", "9223372036854775807"), invalid_expire("pexpire")),
    (("EXPIREAT", "k", "9223372036854776"), invalid_expire("expireat")),
    (("PEXPIREAT", "k", "9223372036854775807"), b":1\r\n"),
    (("PEXPIRETIME", "k"), b":9223372036854775807\r\n"),
    (("EXPIRETIME", "k"), b":9223372036854776\r\n"),    # rounded to the nearest second
    (("PEXPIREAT", "k", "99999999999499"), b":1\r\n"),
    (("EXPIRETIME", "k"), b":99999999999\r\n"),
    (("PEXPIREAT", "k", "99999999999500"), b":1\r\n"),
    (("EXPIRETIME", "k"), b":100000000000\r\n"),
    (("PERSIST", "k"), b":1\r\n"),
    (("PERSIST", "k"), b":0\r\n"),
    (("PERSIST", "missing"), b":0\r\n"),
    (("TTL", "k"), b":-1\r\n"),
    (("EXPIRETIME", "k"), b":-1\r\n"),
    (("TTL", "missing"), b":-2\r\n"),
    (("PEXPIRETIME", "missing"), b":-2\r\n"),
    (("EXPIRE", "k", "100", "XX"), b":0\r\n"),          # XX: only keys with a TTL
    (("EXPIRE", "k", "100", "GT"), b":0\r\n"),          # no TTL counts as infinite
    (("EXPIRE", "k", "100", "LT"), b":1\r\n"),
    (("EXPIRE", "k", "50", "GT"), b":0\r\n"),
    (("EXPIRE", "k", "200", "gt"), b":1\r\n"),
    (("EXPIRE", "k", "300", "LT"), b":0\r\n"),
    (("EXPIRE", "k", "300", "NX"), b":0\r\n"),
    (("EXPIRE", "k", "150", "XX", "LT"), b":1\r\n"),
    (("TTL", "k"), b":150\r\n"),
    (("PEXPIRE", "k", "1800"), b":1\r\n"),
    (("TTL", "k"), b":2\r\n"),                          # rounded: (ms + 500) / 1000
    (("PEXPIRE", "k", "1200"), b":1\r\n"),
    (("TTL", "k"), b":1\r\n"),
    (("EXPIRE", "k", "-5", "GT"), b":0\r\n"),
    (("EXPIRE", "k", "-5", "LT"), b":1\r\n"),           # a time in the past deletes the key
    (("EXISTS", "k"), b":0\r\n"),
    (("EXPIRE", "k", "10"), b":0\r\n"),
    (("SET", "k", "v"), OK),
    (("EXPIRE", "k", "0"), b":1\r\n"),
    (("EXISTS", "k"), b":0\r\n"),
    (("SET", "k", "v"), OK),
    (("PEXPIRE", "k", "-9223372036854775808"), b":1\r\n"),
    (("EXISTS", "k"), b":0\r\n"),
    (("SET", "k", "v"), OK),
    (("EXPIREAT", "k", "-9223372036854775"), b":1\r\n"),
    (("EXISTS", "k"), b":0\r\n"),
    (("SET", "k", "v"), OK),
    (("PEXPIREAT", "k", "1"), b":1\r\n"),
    (("TTL", "k"), b":-2\r\n"),
    (("EXPIRE", "k"), b"-ERR wrong number of arguments for 'expire' command\r\n"),
]

KEYSPACE_STEPS = [
    (("MSET", "a", "1", "b", "2", "c", "3"), OK),
    (("HSET", "h", "f", "v"), b":1\r\n"),
    (("DEL", "a", "a", "missing"), b":1\r\n"),
    (("UNLINK", "b", "missing"), b":1\r\n"),
    (("EXISTS", "c", "c", "missing", "h"), b":3\r\n"),  # duplicates count each time
    (("TOUCH", "c", "missing", "h"), b":2\r\n"),
    (("TYPE", "c"), b"+string\r\n"),
    (("TYPE", "h"), b"+hash\r\n"),
    (("TYPE", "missing"), b"+none\r\n"),
    (("DBSIZE",), b":2\r\n"),
    (("RENAME", "missing", "x"), b"-ERR no such key\r\n"),
    (("RENAME", "missing", "missing"), b"-ERR no such key\r\n"),
    (("RENAMENX", "missing", "missing"), b"-ERR no such key\r\n"),
    (("RENAME", "c", "c"), OK),
    (("RENAMENX", "c", "c"), b":0\r\n"),
    (("RENAMENX", "c", "h"), b":0\r\n"),
    (("RENAME", "c", "d"), OK),
    (("RENAMENX", "d", "e"), b":1\r\n"),
    (("RENAME", "e", "h"), OK),                         # replaces whatever was there
    (("TYPE", "h"), b"+string\r\n"),
    (("COPY", "h", "h"), SAME),
    (("COPY", "h", "h", "DB", "0"), SAME),
    (("COPY", "h", "x", "DB", "16"), DB_RANGE),
    (("COPY", "h", "x", "DB", "-1"), DB_RANGE),
    (("COPY", "h", "x", "DB", "abc"), NOT_INTEGER),
    (("COPY", "h", "x", "DB", "4294967296"), INT_RANGE),
    (("COPY", "h", "x", "DB"), SYNTAX),
    (("COPY", "h", "x", "foo"), SYNTAX),
    (("COPY", "missing", "x"), b":0\r\n"),
    (("COPY", "h", "x"), b":1\r\n"),
    (("COPY", "h", "x"), b":0\r\n"),
    (("COPY", "h", "x", "REPLACE", "replace"), b":1\r\n"),
    (("COPY", "h", "h", "DB", "1"), b":1\r\n"),
    (("MOVE", "h", "0"), SAME),
    (("MOVE", "h", "16"), DB_RANGE),
    (("MOVE", "h", "abc"), NOT_INTEGER),
    (("MOVE", "h", "4294967296"), INT_RANGE),
    (("MOVE", "missing", "1"), b":0\r\n"),
    (("MOVE", "h", "1"), b":0\r\n"),                    # db 1 already has h
    (("MOVE", "x", "1"), b":1\r\n"),
    (("EXISTS", "x"), b":0\r\n"),
    (("SWAPDB", "0", "abc"), b"-ERR invalid second DB index\r\n"),
    (("SWAPDB", "abc", "0"), b"-ERR invalid first DB index\r\n"),
    (("SWAPDB", "4294967296", "0"), b"-ERR invalid first DB index\r\n"),
    (("SWAPDB", "0", "16"), DB_RANGE),
    (("SWAPDB", "-1", "0"), DB_RANGE),
    (("SWAPDB", "0", "0"), OK),
    (("FLUSHDB", "foo"), SYNTAX),
    (("FLUSHDB", "ASYNC", "foo"), SYNTAX),
    (("FLUSHALL", "foo"), SYNTAX),
    (("KEYS", "*"), b"*1\r\n$1\r\nh\r\n"),
    (("SWAPDB", "0", "1"), OK),
    (("DBSIZE",), b":2\r\n"),
    (("KEYS", "x"), b"*1\r\n$1\r\nx\r\n"),
    (("FLUSHDB", "sync"), OK),
    (("DBSIZE",), b":0\r\n"),
    (("RANDOMKEY",), NULL),
    (("SELECT", "1"), OK),
    (("DBSIZE",), b":1\r\n"),
    (("FLUSHALL", "ASYNC"), OK),
    (("DBSIZE",), b":0\r\n"),
]

SCAN_STEPS = [
    (("SET", "k", "v"), OK),
    (("SCAN", "abc"), b"-ERR invalid cursor\r\n"),
    (("SCAN", " 0"), b"-ERR invalid cursor\r\n"),
    (("SCAN", "18446744073709551616"), b"-ERR invalid cursor\r\n"),
    (("SCAN", "abc", "COUNT", "0"), b"-ERR invalid cursor\r\n"),  # the cursor first
    (("SCAN", "0", "COUNT", "0"), SYNTAX),
    (("SCAN", "0", "COUNT", "-1"), SYNTAX),
    (("SCAN", "0", "COUNT", "abc"), NOT_INTEGER),
    (("SCAN", "0", "MATCH"), SYNTAX),
    (("SCAN", "0", "foo", "bar"), SYNTAX),
    (("SCAN", "0"), b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"),
    (("SCAN", "", "TYPE", "STRING"), b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"),
    (("SCAN", "+0", "TYPE", "hash"), b"*2\r\n$1\r\n0\r\n*0\r\n"),
    (("SCAN", "0", "TYPE", "nosuchtype"), b"*2\r\n$1\r\n0\r\n*0\r\n"),
    (("SCAN", "0", "MATCH", "x*", "MATCH", "k"), b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"),
]

OBJECT_STEPS = [
    (("SET", "int", "12345"), OK),
    (("SET", "small", "9999"), OK),
    (("SET", "neg", "-1"), OK),
    (("SET", "notint", "012"), OK),
    (("SET", "bigint", "12345678901234567890"), OK),
    (("SET", "emb", "x" * 44), OK),
    (("SET", "raw", "x" * 45), OK),
    (("OBJECT", "ENCODING", "int"), b"$3\r\nint\r\n"),
    (("OBJECT", "ENCODING", "notint"), b"$6\r\nembstr\r\n"),
    (("OBJECT", "ENCODING", "bigint"), b"$6\r\nembstr\r\n"),
    (("OBJECT", "ENCODING", "emb"), b"$6\r\nembstr\r\n"),
    (("OBJECT", "ENCODING", "raw"), b"$3\r\nraw\r\n"),
    (("OBJECT", "ENCODING", "missing"), NULL),
    (("HSET", "small-hash", "f", "x" * 64), b":1\r\n"),
    (("HSET", "wide-hash", "f", "x" * 65), b":1\r\n"),
    (("OBJECT", "ENCODING", "small-hash"), b"$8\r\nlistpack\r\n"),
    (("OBJECT", "ENCODING", "wide-hash"), b"$9\r\nhashtable\r\n"),
    (("OBJECT", "REFCOUNT", "small-hash"), b":1\r\n"),
    (("OBJECT", "REFCOUNT", "small"), b":2147483647\r\n"),  # a shared integer
    (("OBJECT", "REFCOUNT", "int"), b":1\r\n"),
    (("OBJECT", "REFCOUNT", "neg"), b":1\r\n"),
    (("OBJECT", "REFCOUNT", "emb"), b":1\r\n"),
    (("OBJECT", "REFCOUNT", "missing"), NULL),
    (("OBJECT", "FREQ", "int"), LFU_NOT_SELECTED),
    (("OBJECT", "FREQ", "missing"), NULL),
    (("OBJECT", "IDLETIME", "missing"), NULL),
    (("OBJECT", "foo", "k"), b"-ERR unknown subcommand 'foo'. Try OBJECT HELP.\r\n"),
    (("OBJECT", "ENCODING"), b"-ERR wrong number of arguments for 'object|encoding' command\r\n"),
    (("OBJECT",), b"-ERR wrong number of arguments for 'object' command\r\n"),
    (("MEMORY", "USAGE", "missing"), NULL),
    (("MEMORY", "USAGE", "int", "SAMPLES"), SYNTAX),
    (("MEMORY", "USAGE", "int", "SAMPLES", "-1"), SYNTAX),
    (("MEMORY", "USAGE", "int", "SAMPLES", "abc"), NOT_INTEGER),
    (("MEMORY", "USAGE", "int", "foo"), SYNTAX),
    (("MEMORY", "foo"), b"-ERR unknown subcommand 'foo'. Try MEMORY HELP.\r\n"),
]

STEP_TABLES = {"expire": EXPIRE_STEPS, "keyspace": KEYSPACE_STEPS, "scan": SCAN_STEPS,
               "object-memory": OBJECT_STEPS}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("table", list(STEP_TABLES))
def test_replies_and_errors(target, protocol, table):
    run_steps(target, protocol, STEP_TABLES[table])


def test_object_help_is_redis_text(target):
    with raw_connection(target.port) as conn:
        reply = conn.request("OBJECT", "HELP")
    assert reply.startswith(
        b"*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")
    assert reply.endswith(b"+HELP\r\n+    Prints this help.\r\n")


# --- which commands touch the LRU and count hits (Redis 7.0's lookup flags) --------
NO_TOUCH = {
    "EXISTS": ("EXISTS", "{k}"), "TYPE": ("TYPE", "{k}"), "TTL": ("TTL", "{k}"),
    "PTTL": ("PTTL", "{k}"), "EXPIRETIME": ("EXPIRETIME", "{k}"),
    "OBJECT ENCODING": ("OBJECT", "ENCODING", "{k}"), "MEMORY USAGE": ("MEMORY", "USAGE", "{k}"),
    "SCAN": ("SCAN", "0", "COUNT", "1000"), "KEYS": ("KEYS", "*"), "DBSIZE": ("DBSIZE",),
}
TOUCH = {
    "GET": ("GET", "{k}"), "MGET": ("MGET", "{k}"), "TOUCH": ("TOUCH", "{k}"),
    "STRLEN": ("STRLEN", "{k}"), "GETRANGE": ("GETRANGE", "{k}", "0", "1"),
    "GETEX": ("GETEX", "{k}"), "EXPIRE": ("EXPIRE", "{k}", "100"), "PERSIST": ("PERSIST", "{k}"),
    "APPEND": ("APPEND", "{k}", "x"), "SETRANGE": ("SETRANGE", "{k}", "0", "x"),
    "COPY": ("COPY", "{k}", "{k}-copy"), "SETNX": ("SETNX", "{k}", "x"),
    "SET NX": ("SET", "{k}", "x", "NX"), "MSETNX": ("MSETNX", "{k}", "x"),
    "GETBIT": ("GETBIT", "{k}", "0"), "SETBIT": ("SETBIT", "{k}", "0", "1"),
    "SETBIT same": ("SETBIT", "{k}", "1", "1"), "BITCOUNT": ("BITCOUNT", "{k}"),
    "BITPOS": ("BITPOS", "{k}", "1"), "BITOP": ("BITOP", "NOT", "{k}-not", "{k}"),
    "BITFIELD": ("BITFIELD", "{k}", "GET", "u8", "0"), "BITFIELD SET": ("BITFIELD", "{k}", "SET", "u8", "0", "1"),
    "BITFIELD_RO": ("BITFIELD_RO", "{k}", "GET", "u8", "0"), "LCS": ("LCS", "{k}", "{k}"),
}


def test_lru_touch_follows_redis(target):
    with raw_connection(target.port) as conn:
        for name in (*NO_TOUCH, *TOUCH):
            conn.request("SET", name, f"value of {name}")  # distinct values: no shared objects
        time.sleep(1.1)
        for name, args in (*NO_TOUCH.items(), *TOUCH.items()):
            conn.request(*(a.format(k=name) for a in args))
        idle = {name: parse_int(conn.request("OBJECT", "IDLETIME", name))
                for name in (*NO_TOUCH, *TOUCH)}
    assert {name for name, seconds in idle.items() if seconds >= 1} == set(NO_TOUCH)


def parse_int(reply):
    assert reply[:1] == b":", reply
    return int(reply[1:-2])


HITS_AND_MISSES = [  # (command, keyspace hits added, misses added), with "k" present
    (("GET", "k"), 1, 0), (("GET", "m"), 0, 1), (("MGET", "k", "m"), 1, 1),
    (("EXISTS", "k", "m"), 1, 1), (("TYPE", "k"), 1, 0), (("TYPE", "m"), 0, 1),
    (("TTL", "k"), 1, 0), (("PTTL", "m"), 0, 1), (("OBJECT", "ENCODING", "m"), 0, 1),
    (("TOUCH", "k", "m"), 1, 1), (("STRLEN", "m"), 0, 1), (("GETRANGE", "k", "0", "1"), 1, 0),
    (("COPY", "k", "k2"), 1, 0), (("GETEX", "m"), 0, 1), (("GETDEL", "m"), 0, 1),
    (("SET", "k", "v", "GET"), 1, 0), (("SET", "k", "v", "NX"), 0, 0), (("SETNX", "k", "v"), 0, 0),
    (("MSETNX", "k", "v"), 0, 0), (("INCR", "i"), 0, 0), (("APPEND", "k", "x"), 0, 0),
    (("EXPIRE", "m", "10"), 0, 0), (("PERSIST", "k"), 0, 0), (("DEL", "m"), 0, 0),
    (("MEMORY", "USAGE", "k"), 0, 0), (("RENAME", "k2", "k3"), 0, 0), (("SCAN", "0"), 0, 0),
    (("GETBIT", "k", "0"), 1, 0), (("GETBIT", "m", "0"), 0, 1), (("GETBIT", "m", "x"), 0, 0),
    (("SETBIT", "b1", "0", "1"), 0, 0), (("SETBIT", "k", "0", "1"), 0, 0),
    (("BITCOUNT", "k"), 1, 0), (("BITCOUNT", "m", "0", "x"), 0, 1), (("BITPOS", "m", "1"), 0, 1),
    (("BITPOS", "k", "0"), 1, 0), (("BITPOS", "k", "2"), 0, 0),
    (("BITOP", "OR", "b2", "k", "m", "k"), 2, 1), (("BITOP", "NOT", "b2", "k", "k"), 0, 0),
    (("BITFIELD", "k", "GET", "u8", "0"), 1, 0), (("BITFIELD", "m", "GET", "u8", "0"), 0, 1),
    (("BITFIELD", "b1", "SET", "u8", "0", "1"), 0, 0), (("BITFIELD", "m", "GET", "x", "0"), 0, 0),
    (("BITFIELD_RO", "m", "GET", "u8", "0"), 0, 1), (("BITFIELD_RO", "k"), 1, 0),
    (("LCS", "k", "m"), 1, 1), (("LCS", "k", "k", "FOO"), 2, 0),
]


def test_keyspace_hits_and_misses_follow_redis(target):
    with raw_connection(target.port) as conn:
        conn.request("SET", "k", "v")

        def counters():
            fields = dict(line.split(":", 1) for line in
                          parse_info(conn.request("INFO", "stats")).splitlines() if ":" in line)
            return int(fields["keyspace_hits"]), int(fields["keyspace_misses"])

        for args, hits, misses in HITS_AND_MISSES:
            before = counters()
            conn.request(*args)
            after = counters()
            assert (after[0] - before[0], after[1] - before[1]) == (hits, misses), args


def parse_info(reply):
    header, body = reply.split(b"\r\n", 1)
    if reply[:1] == b"=":  # RESP3 verbatim: "txt:" prefix
        body = body[4:]
    return body[:-2].decode()


# --- expiry over time --------------------------------------------------------
def test_keys_expire_on_time(c):
    c.set("a", "v")
    c.set("b", "v")
    c.set("keep", "v")
    assert c.pexpire("a", 300) and c.pexpireat("b", int(time.time() * 1000) + 300)
    assert 0 < c.pttl("a") <= 300 and 0 < c.pttl("b") <= 300
    time.sleep(0.45)
    assert c.exists("a", "b", "keep") == 1
    assert c.ttl("a") == -2 and c.pexpiretime("b") == -2
    assert c.keys() == [b"keep"]


def test_active_expiry_removes_keys_nobody_reads(c):
    c.mset({f"k{i}": "v" for i in range(500)})
    for i in range(500):
        c.pexpire(f"k{i}", 100)
    c.set("keep", "v")
    assert c.dbsize() == 501
    deadline = time.monotonic() + 5
    while c.dbsize() > 1:  # DBSIZE does not expire keys itself: only the background cycle does
        assert time.monotonic() < deadline, f"{c.dbsize()} keys still there"
        time.sleep(0.05)
    assert c.info("stats")["expired_keys"] >= 500


def test_rename_copy_move_carry_the_ttl(cxl, c):
    c.set("k", "v", ex=100)
    c.rename("k", "r")
    assert c.ttl("r") == 100
    c.copy("r", "cp")
    assert c.ttl("cp") == 100
    assert c.move("cp", 2) and not c.exists("cp")
    db2 = cxl.client(db=2)
    try:
        assert db2.ttl("cp") == 100 and db2.get("cp") == b"v"
        assert c.copy("r", "cp", destination_db=2) is False
        assert c.copy("r", "cp", destination_db=2, replace=True) and db2.ttl("cp") == 100
    finally:
        db2.close()


# --- multiple databases --------------------------------------------------------
def test_swapdb_is_seen_by_every_client(cxl, c):
    other = cxl.client(db=1)
    try:
        c.set("zero", "0")
        other.set("one", "1")
        assert c.swapdb(0, 1)
        assert c.get("one") == b"1" and c.get("zero") is None
        assert other.get("zero") == b"0" and other.get("one") is None
        c.flushdb()
        assert other.dbsize() == 1
        c.flushall()
        assert other.dbsize() == 0
    finally:
        other.close()


# --- SCAN guarantees --------------------------------------------------------------
def test_scan_returns_every_stable_key_despite_concurrent_writes(cxl, c):
    writer = cxl.client()
    try:
        stable = {f"stable:{i}".encode() for i in range(2000)}
        c.mset({k: "v" for k in stable})
        c.mset({f"gone:{i}": "v" for i in range(1000)})
        seen, cursor, calls, added = [], 0, 0, 0
        while True:
            cursor, keys = c.scan(cursor, count=50)
            seen += keys
            calls += 1
            # between calls: new keys arrive and others are deleted
            writer.mset({f"new:{added + j}": "v" for j in range(20)})
            writer.delete(*[f"gone:{(added + j) % 1000}" for j in range(20)])
            added += 20
            if cursor == 0:
                break
        assert stable <= set(seen)  # every key present the whole time, at least once
        assert calls > 10  # COUNT bounds each call's work
        assert all(k.startswith((b"stable:", b"gone:", b"new:")) for k in seen)
    finally:
        writer.close()


def test_scan_match_and_type_filters(c):
    c.mset({f"user:{i}": "v" for i in range(100)})
    c.mset({f"item:{i}": "v" for i in range(100)})
    c.hset("user:hash", "f", "v")
    users = set(c.scan_iter(match="user:*", count=7))
    assert users == {f"user:{i}".encode() for i in range(100)} | {b"user:hash"}
    assert set(c.scan_iter(match="user:*", _type="HASH")) == {b"user:hash"}
    assert len(set(c.scan_iter(_type="string"))) == 200
    assert set(c.scan_iter(_type="list")) == set()
    assert sorted(c.keys("item:?")) == sorted(f"item:{i}".encode() for i in range(10))


def test_randomkey_returns_existing_keys(c):
    assert c.randomkey() is None
    keys = {f"k{i}".encode() for i in range(20)}
    c.mset({k: "v" for k in keys})
    seen = {c.randomkey() for _ in range(200)}
    assert seen <= keys and len(seen) > 5


# --- introspection ---------------------------------------------------------------------
@pytest.mark.skipif(TARGET != "cxlredis", reason="arena block sizes are cxlredis-specific")
def test_memory_usage_is_the_arena_footprint(c):
    for size in (1, 100, 4096, 1 << 20, 8 << 20):
        c.set("k", b"x" * size)
        usage = c.memory_usage("k")
        assert size < usage <= size + 256 and usage % 64 == 0, (size, usage)
    c.set("long-" + "k" * 300, "v")
    assert c.memory_usage("long-" + "k" * 300) >= 300


def test_object_idletime_counts_seconds_since_last_access(c):
    c.set("k", "v")
    assert c.object("idletime", "k") == 0
    time.sleep(1.1)
    assert c.object("idletime", "k") == 1
    c.get("k")
    assert c.object("idletime", "k") == 0


def test_object_freq_and_idletime_under_an_lfu_policy(cxl_factory):
    srv = cxl_factory(maxmemory_policy="allkeys-lfu")
    c = srv.client()
    c.set("k", "v")
    for _ in range(50):
        c.get("k")
    assert c.object("freq", "k") > 0
    with pytest.raises(Exception, match="An LFU maxmemory policy is selected, idle time not tracked"):
        c.object("idletime", "k")
    c.close()
