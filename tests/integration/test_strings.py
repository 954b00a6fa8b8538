"""String commands: what the differential suite cannot easily compare.

- every error path and option combination, checked byte for byte against
  redis-server and cxlredis alike (both RESP2 and RESP3), so an expectation
  that drifts from Redis fails on the oracle first;
- expiry over time and TTL preservation (KEEPTTL, INCR, APPEND, ...);
- large values: 64 MiB round-trips byte-exact through every command that
  stores or returns a value, replies in flight keep their bytes while the key
  is deleted or overwritten (pinning), and values received into arena slots
  are released when the command fails.
"""
import os
import socket
import time

import pytest
import redis

from conftest import TARGET, encode_command, invalid_expire, parse_reply, raw_connection, run_steps, server_under_test

MiB = 1 << 20
NULL = {2: b"$-1\r\n", 3: b"_\r\n"}
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
NOT_INTEGER = b"-ERR value is not an integer or out of range\r\n"
NOT_FLOAT = b"-ERR value is not a valid float\r\n"
SYNTAX = b"-ERR syntax error\r\n"
OK = b"+OK\r\n"


# --- errors and option combinations ----------------------------------------
SET_STEPS = [
    (("SET", "k", "v", "EX", "10", "PX", "20"), SYNTAX),
    (("SET", "k", "v", "NX", "XX"), SYNTAX),
    (("SET", "k", "v", "XX", "NX"), SYNTAX),
    (("SET", "k", "v", "KEEPTTL", "EX", "5"), SYNTAX),
    (("SET", "k", "v", "EXAT", "5", "KEEPTTL"), SYNTAX),
    (("SET", "k", "v", "PERSIST"), SYNTAX),
    (("SET", "k", "v", "EX"), SYNTAX),
    (("SET", "k", "v", "BOGUS"), SYNTAX),
    (("SET", "k", "v", "EX", "0"), invalid_expire("set")),
    (("SET", "k", "v", "PX", "-5"), invalid_expire("set")),
    (("SET", "k", "v", "EX", "abc"), NOT_INTEGER),
    (("SET", "k", "v", "EX", "1.5"), NOT_INTEGER),
    (("SET", "k", "v", "EX", "9223372036854775"), invalid_expire("set")),    # * 1000 + now overflows
    (("SET", "k", "v", "EX", "9223372036854776"), invalid_expire("set")),    # * 1000 overflows
    (("SET", "k", "v", "PX", "9223372036854775807"), invalid_expire("set")),
    (("SET", "k", "v", "PXAT", "9223372036854775807"), OK),
    (("PEXPIRETIME", "k"), b":9223372036854775807\r\n"),
    (("SET", "k", "v", "EXAT", "9223372036854775"), OK),
    (("PEXPIRETIME", "k"), b":9223372036854775000\r\n"),
    (("SET", "k", "v", "EX", "10", "EX", "20"), OK),  # a repeated option: the last one wins
    (("TTL", "k"), b":20\r\n"),
    (("SET", "k", "v", "KEEPTTL", "KEEPTTL"), OK),
    (("TTL", "k"), b":20\r\n"),
    (("SET", "k", "v", "EXAT", "1"), OK),             # in the past: gone at the next access
    (("EXISTS", "k"), b":0\r\n"),
    (("SET", "n", "v", "XX"), NULL),
    (("SET", "n", "v", "XX", "GET"), NULL),
    (("EXISTS", "n"), b":0\r\n"),
    (("SET", "n", "v1", "NX", "GET"), NULL),          # Redis 7: NX and GET together
    (("SET", "n", "v2", "NX", "GET"), b"$2\r\nv1\r\n"),
    (("SET", "n", "v3", "GET", "NX"), b"$2\r\nv1\r\n"),
    (("SET", "n", "v4", "NX"), NULL),
    (("SET", "n", "v5", "XX", "GET"), b"$2\r\nv1\r\n"),
    (("SET", "n", "v6", "xx", "get", "px", "100000"), b"$2\r\nv5\r\n"),
    (("GET", "n"), b"$2\r\nv6\r\n"),
    (("HSET", "h", "f", "v"), b":1\r\n"),
    (("SET", "h", "v", "GET"), WRONGTYPE),
    (("SET", "h", "v", "NX", "GET"), WRONGTYPE),
    (("SET", "h", "v", "EX", "0", "GET"), invalid_expire("set")),  # expiry checked before type
    (("SET", "h", "v", "BOGUS", "GET"), SYNTAX),
    (("TYPE", "h"), b"+hash\r\n"),
    (("SET", "h", "v", "NX"), NULL),
    (("SET", "h", "v"), OK),                          # plain SET replaces any type
    (("TYPE", "h"), b"+string\r\n"),
    (("SET", "k"), b"-ERR wrong number of arguments for 'set' command\r\n"),
]

GETEX_STEPS = [
    (("SET", "k", "v", "EX", "100"), OK),
    (("GETEX", "k", "PERSIST", "EX", "5"), SYNTAX),
    (("GETEX", "k", "EX", "5", "PERSIST"), SYNTAX),
    (("GETEX", "k", "KEEPTTL"), SYNTAX),
    (("GETEX", "k", "NX"), SYNTAX),
    (("GETEX", "k", "GET"), SYNTAX),
    (("GETEX", "k", "EX"), SYNTAX),
    (("GETEX", "k", "EX", "10", "PX", "10"), SYNTAX),
    (("GETEX", "missing", "BAD"), SYNTAX),            # options are parsed before the lookup
    (("GETEX", "missing", "EX", "-1"), NULL),         # ... but the expiry only after it
    (("GETEX", "k", "EX", "0"), invalid_expire("getex")),
    (("GETEX", "k", "EX", "abc"), NOT_INTEGER),
    (("GETEX", "k"), b"$1\r\nv\r\n"),
    (("TTL", "k"), b":100\r\n"),
    (("GETEX", "k", "PERSIST"), b"$1\r\nv\r\n"),
    (("TTL", "k"), b":-1\r\n"),
    (("GETEX", "k", "EX", "50"), b"$1\r\nv\r\n"),
    (("TTL", "k"), b":50\r\n"),
    (("GETEX", "k", "PX", "30000", "PX", "40000"), b"$1\r\nv\r\n"),
    (("TTL", "k"), b":40\r\n"),
    (("GETEX", "k", "EXAT", "99999999999"), b"$1\r\nv\r\n"),
    (("EXPIRETIME", "k"), b":99999999999\r\n"),
    (("GETEX", "k", "PXAT", "99999999999123"), b"$1\r\nv\r\n"),
    (("PEXPIRETIME", "k"), b":99999999999123\r\n"),
    (("GETEX", "k", "EXAT", "1"), b"$1\r\nv\r\n"),   # a past time deletes after replying
    (("EXISTS", "k"), b":0\r\n"),
    (("HSET", "h", "f", "v"), b":1\r\n"),
    (("GETEX", "h"), WRONGTYPE),
    (("GETEX", "h", "EX", "-1"), WRONGTYPE),          # type checked before the expiry
]

SETEX_STEPS = [
    (("SETEX", "k", "0", "v"), invalid_expire("setex")),
    (("SETEX", "k", "-1", "v"), invalid_expire("setex")),
    (("SETEX", "k", "abc", "v"), NOT_INTEGER),
    (("SETEX", "k", "9223372036854775", "v"), invalid_expire("setex")),
    (("PSETEX", "k", "0", "v"), invalid_expire("psetex")),
    (("PSETEX", "k", "9223372036854775807", "v"), invalid_expire("psetex")),
    (("EXISTS", "k"), b":0\r\n"),
    (("SETEX", "k", "100", "v"), OK),
    (("TTL", "k"), b":100\r\n"),
    (("PSETEX", "k", "100000", "w"), OK),
    (("TTL", "k"), b":100\r\n"),
    (("GET", "k"), b"$1\r\nw\r\n"),
    (("SETEX", "k", "10"), b"-ERR wrong number of arguments for 'setex' command\r\n"),
    (("SETNX", "k", "x"), b":0\r\n"),
    (("SETNX", "n", "x"), b":1\r\n"),
    (("HSET", "h", "f", "v"), b":1\r\n"),
    (("SETNX", "h", "x"), b":0\r\n"),                 # any type counts as existing
    (("GETSET", "h", "x"), WRONGTYPE),
    (("GETSET", "n", "y"), b"$1\r\nx\r\n"),
    (("GETSET", "fresh", "y"), NULL),
    (("GETDEL", "h"), WRONGTYPE),
    (("GETDEL", "n"), b"$1\r\ny\r\n"),
    (("GETDEL", "n"), NULL),
]

MULTI_KEY_STEPS = [
    (("MSET", "a", "1", "b"), b"-ERR wrong number of arguments for 'mset' command\r\n"),
    (("MSETNX", "a", "1", "b"), b"-ERR wrong number of arguments for 'msetnx' command\r\n"),
    (("MSET", "a", "1", "b", "2", "a", "3"), OK),     # a repeated key: the last value wins
    (("MSETNX", "b", "x", "c", "y"), b":0\r\n"),
    (("EXISTS", "c"), b":0\r\n"),                     # all or nothing
    (("MSETNX", "c", "x", "d", "y"), b":1\r\n"),
    (("HSET", "h", "f", "v"), b":1\r\n"),
    (("MSETNX", "h", "x", "e", "y"), b":0\r\n"),
    (("MGET", "a", "h", "missing", "d"),
     {2: b"*4\r\n$1\r\n3\r\n$-1\r\n$-1\r\n$1\r\ny\r\n", 3: b"*4\r\n$1\r\n3\r\n_\r\n_\r\n$1\r\ny\r\n"}),
    (("MSET", "h", "plain"), OK),
    (("GET", "h"), b"$5\r\nplain\r\n"),
]

RANGE_STEPS = [
    (("SET", "s", "Hello World"), OK),
    (("GETRANGE", "s", "0", "4"), b"$5\r\nHello\r\n"),
    (("GETRANGE", "s", "-5", "-1"), b"$5\r\nWorld\r\n"),
    (("GETRANGE", "s", "-1", "-5"), b"$0\r\n\r\n"),
    (("GETRANGE", "s", "5", "3"), b"$0\r\n\r\n"),
    (("GETRANGE", "s", "0", "-100"), b"$1\r\nH\r\n"),
    (("GETRANGE", "s", "-100", "100"), b"$11\r\nHello World\r\n"),
    (("GETRANGE", "s", "100", "200"), b"$0\r\n\r\n"),
    (("SUBSTR", "s", "6", "-1"), b"$5\r\nWorld\r\n"),
    (("GETRANGE", "s", "abc", "1"), NOT_INTEGER),
    (("GETRANGE", "missing", "abc", "1"), NOT_INTEGER),  # arguments before the lookup
    (("GETRANGE", "missing", "0", "-1"), b"$0\r\n\r\n"),
    (("SETRANGE", "s", "-1", "x"), b"-ERR offset is out of range\r\n"),
    (("SETRANGE", "s", "abc", "x"), NOT_INTEGER),
    (("SETRANGE", "s", "536870912", "x"),
     b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"),
    (("SETRANGE", "s", "536870911", "xy"),
     b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"),
    (("SETRANGE", "s", "9223372036854775807", "x"),
     b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"),
    (("SETRANGE", "s", "6", "Redis"), b":11\r\n"),
    (("SETRANGE", "s", "13", "!"), b":14\r\n"),
    (("GET", "s"), b"$14\r\nHello Redis\x00\x00!\r\n"),
    (("SETRANGE", "s", "0", ""), b":14\r\n"),
    (("SETRANGE", "new", "3", ""), b":0\r\n"),        # an empty write creates nothing
    (("EXISTS", "new"), b":0\r\n"),
    (("SETRANGE", "new", "2", "ab"), b":4\r\n"),
    (("GET", "new"), b"$4\r\n\x00\x00ab\r\n"),
    (("STRLEN", "s"), b":14\r\n"),
    (("STRLEN", "missing"), b":0\r\n"),
    (("APPEND", "s", "?"), b":15\r\n"),
    (("APPEND", "s", ""), b":15\r\n"),
    (("APPEND", "a", "x"), b":1\r\n"),
    (("HSET", "h", "f", "v"), b":1\r\n"),
    (("APPEND", "h", "x"), WRONGTYPE),
    (("SETRANGE", "h", "0", "x"), WRONGTYPE),
    (("SETRANGE", "h", "0", ""), WRONGTYPE),
    (("SETRANGE", "h", "-1", "x"), b"-ERR offset is out of range\r\n"),
    (("GETRANGE", "h", "0", "1"), WRONGTYPE),
    (("STRLEN", "h"), WRONGTYPE),
    (("GET", "h"), WRONGTYPE),
]

COUNTER_STEPS = [
    (("INCR", "n"), b":1\r\n"),
    (("INCRBY", "n", "41"), b":42\r\n"),
    (("DECRBY", "n", "2"), b":40\r\n"),
    (("DECR", "n"), b":39\r\n"),
    (("INCRBY", "n", "abc"), NOT_INTEGER),
    (("INCRBY", "n", " 1"), NOT_INTEGER),
    (("INCRBY", "n", "+1"), NOT_INTEGER),
    (("INCRBY", "n", "01"), NOT_INTEGER),
    (("INCRBY", "n", "-0"), NOT_INTEGER),
    (("INCRBY", "n", "1.0"), NOT_INTEGER),
    (("INCRBY", "n", "9223372036854775808"), NOT_INTEGER),
    (("DECRBY", "n", "-9223372036854775808"), b"-ERR decrement would overflow\r\n"),
    (("SET", "max", "9223372036854775807"), OK),
    (("INCR", "max"), b"-ERR increment or decrement would overflow\r\n"),
    (("DECRBY", "max", "-1"), b"-ERR increment or decrement would overflow\r\n"),
    (("SET", "min", "-9223372036854775808"), OK),
    (("DECR", "min"), b"-ERR increment or decrement would overflow\r\n"),
    (("INCRBY", "min", "-1"), b"-ERR increment or decrement would overflow\r\n"),
    (("INCR", "min"), b":-9223372036854775807\r\n"),
    (("SET", "bad", " 12"), OK),
    (("INCR", "bad"), NOT_INTEGER),
    (("SET", "bad", "12 "), OK),
    (("INCR", "bad"), NOT_INTEGER),
    (("SET", "bad", "012"), OK),
    (("INCR", "bad"), NOT_INTEGER),
    (("SET", "bad", "-0"), OK),
    (("INCR", "bad"), NOT_INTEGER),
    (("SET", "bad", "1\x00"), OK),
    (("INCR", "bad"), NOT_INTEGER),
    (("SET", "bad", "1" * 21), OK),
    (("INCR", "bad"), NOT_INTEGER),
    (("HSET", "h", "f", "v"), b":1\r\n"),
    (("INCR", "h"), WRONGTYPE),
    (("INCRBY", "h", "abc"), NOT_INTEGER),            # the increment is parsed first
    (("INCRBYFLOAT", "h", "abc"), WRONGTYPE),         # ... but not for INCRBYFLOAT
    (("INCRBYFLOAT", "f", "0.1"), b"$3\r\n0.1\r\n"),
    (("INCRBYFLOAT", "f", "0.1"), b"$3\r\n0.2\r\n"),
    (("INCRBYFLOAT", "f", "0.1"), b"$3\r\n0.3\r\n"),  # long double: no 0.30000000000000004
    (("INCRBYFLOAT", "g", "5.0e3"), b"$4\r\n5000\r\n"),
    (("INCRBYFLOAT", "g", "3.0e-5"), b"$21\r\n5000.0000300000000002\r\n"),
    (("INCRBYFLOAT", "g2", "3.0e-5"), b"$7\r\n0.00003\r\n"),
    (("INCRBYFLOAT", "g3", "-1.5"), b"$4\r\n-1.5\r\n"),
    (("INCRBYFLOAT", "g3", "1.5"), b"$1\r\n0\r\n"),
    (("INCRBYFLOAT", "g4", "-1e-20"), b"$1\r\n0\r\n"),  # "-0.000..." prints as 0
    (("INCRBYFLOAT", "g5", "0x10"), b"$2\r\n16\r\n"),   # strtold: hex floats too
    (("INCRBYFLOAT", "g6", "1.23456789012345678901234"), b"$19\r\n1.23456789012345679\r\n"),
    (("INCRBYFLOAT", "g7", ".5"), b"$3\r\n0.5\r\n"),
    (("INCRBYFLOAT", "g7", "5."), b"$3\r\n5.5\r\n"),
    (("INCRBYFLOAT", "f", "inf"), b"-ERR increment would produce NaN or Infinity\r\n"),
    (("INCRBYFLOAT", "f", "1e5000"), NOT_FLOAT),
    (("INCRBYFLOAT", "f", "1e-5000"), NOT_FLOAT),       # underflow to zero
    (("INCRBYFLOAT", "f", "nan"), NOT_FLOAT),
    (("INCRBYFLOAT", "f", " 1"), NOT_FLOAT),
    (("INCRBYFLOAT", "f", "1 "), NOT_FLOAT),
    (("INCRBYFLOAT", "f", "."), NOT_FLOAT),
    (("INCRBYFLOAT", "f", ""), NOT_FLOAT),
    (("INCRBYFLOAT", "f", "0" * 5120), NOT_FLOAT),      # longer than Redis parses
    (("INCRBYFLOAT", "f", "0" * 5119), b"$3\r\n0.3\r\n"),
    (("SET", "bad", "1.5abc"), OK),
    (("INCRBYFLOAT", "bad", "1"), NOT_FLOAT),
    (("SET", "bad", "1.5\x00"), OK),
    (("INCRBYFLOAT", "bad", "1"), NOT_FLOAT),
    (("SET", "bad", "1e400"), OK),                      # a long double holds it
    (("INCRBYFLOAT", "bad", "-1e400"), b"$1\r\n0\r\n"),
]

STEP_TABLES = {
    "set": SET_STEPS, "getex": GETEX_STEPS, "setex-setnx-getset-getdel": SETEX_STEPS,
    "mset-msetnx-mget": MULTI_KEY_STEPS, "ranges": RANGE_STEPS, "counters": COUNTER_STEPS,
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("table", list(STEP_TABLES))
def test_replies_and_errors(target, protocol, table):
    run_steps(target, protocol, STEP_TABLES[table])


def test_incrbyfloat_formats_huge_values_like_redis(target):
    with raw_connection(target.port) as conn:
        reply = parse_reply(conn.request("INCRBYFLOAT", "f", "1e308"))
        # %.17Lf of the long double nearest 1e308: every integer digit printed
        assert reply.startswith(b"99999999999999999996685879655845645660560099847415567207797047994921")
        assert len(reply) == 308
        assert conn.request("INCRBYFLOAT", "f", "1e4932").startswith(b"$4933\r\n1000000000000000000006")
        assert conn.request("INCRBYFLOAT", "f", "1e4932") == \
            b"-ERR increment would produce NaN or Infinity\r\n"


# --- expiry over time --------------------------------------------------------
def test_ttl_is_kept_or_cleared_like_redis(target):
    c = target.client()
    c.set("k", "5", ex=100)
    c.incr("k")
    c.incrbyfloat("k", 1.5)
    c.append("k", "0")
    c.setrange("k", 0, "9")
    assert c.ttl("k") == 100 and c.get("k") == b"9.50"
    c.set("k", "v", keepttl=True)
    assert c.ttl("k") == 100
    c.getex("k")
    assert c.ttl("k") == 100
    assert c.getset("k", "w") == b"v"
    assert c.ttl("k") == -1
    c.set("k", "v", ex=100)
    c.set("k", "plain")
    assert c.ttl("k") == -1
    c.set("k", "v", ex=100)
    c.mset({"k": "m"})
    assert c.ttl("k") == -1


def test_values_expire_on_time(target):
    c = target.client()
    c.set("px", "v", px=300)
    c.psetex("psetex", 300, "v")
    c.set("exat", "v", pxat=int(time.time() * 1000) + 300)
    c.set("getex", "v")
    c.getex("getex", px=300)
    c.set("keep", "v")
    assert c.exists("px", "psetex", "exat", "getex", "keep") == 5
    assert 0 < c.pttl("px") <= 300
    time.sleep(0.45)
    assert c.exists("px", "psetex", "exat", "getex", "keep") == 1
    assert c.get("px") is None and c.ttl("px") == -2
    assert c.pttl("keep") == -1


# --- large values ----------------------------------------------------------------
@pytest.fixture(scope="module")
def big():
    """A server whose arena holds several 64 MiB values at once."""
    server = server_under_test(arena_size="600mb")
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def bigc(big):
    client = big.client(socket_timeout=60)
    client.flushall()
    try:
        yield client
    finally:
        client.close()


def blob(size, seed):
    """Distinct, non-repeating content so a shifted or mixed-up copy cannot pass."""
    return os.urandom(size - 1) + bytes([seed])


@pytest.mark.parametrize("protocol", [2, 3])
def test_64mib_values_round_trip_byte_exact(big, protocol):
    c = big.client(protocol=protocol, socket_timeout=60)
    c.flushall()
    a, b = blob(64 * MiB, 1), blob(64 * MiB, 2)
    assert c.set("a", a)
    assert c.get("a") == a
    assert c.mset({"small": b"s", "b": b})
    assert c.mget("b", "missing", "a") == [b, None, a]
    assert c.getset("a", b"tiny") == a
    assert c.getset("a", b) == b"tiny"
    assert c.getdel("b") == b and c.exists("b") == 0
    assert c.getex("a", ex=100) == b
    assert c.execute_command("SETEX", "e", 100, a) and c.get("e") == a
    assert c.setnx("n", a) and c.get("n") == a
    assert c.msetnx({"m": a})
    c.delete("e", "n", "m")
    assert c.append("a", b"+tail") == len(b) + 5
    grown = b + b"+tail"
    assert c.get("a") == grown
    assert c.setrange("a", 3, b"XYZ") == len(grown)
    patched = grown[:3] + b"XYZ" + grown[6:]
    assert c.get("a") == patched
    assert c.getrange("a", 1000, 1000 + 8 * MiB - 1) == patched[1000:1000 + 8 * MiB]
    assert c.getrange("a", -MiB, -1) == patched[-MiB:]
    assert c.strlen("a") == len(patched)
    assert c.copy("a", "c")
    assert c.rename("c", "d") and c.get("d") == patched and c.get("a") == patched
    assert 90 < c.ttl("d") <= 100  # COPY and RENAME carry the TTL with the value
    c.close()


def test_large_value_followed_by_more_arguments(bigc):
    # a value received into an arena slot must not disturb the arguments after it
    v = blob(4 * MiB, 3)
    assert bigc.set("k", v, ex=100, get=True) is None
    assert bigc.get("k") == v and bigc.ttl("k") == 100
    assert bigc.mset({"x": v, "y": b"after"})
    assert bigc.mget("x", "y") == [v, b"after"]


def _slow_reader(port):
    """A socket with a tiny receive buffer: the server cannot push a big reply through quickly."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.connect(("127.0.0.1", port))
    sock.settimeout(60)
    return sock


def _read_bulk(sock, size):
    header = b"$%d\r\n" % size
    want = len(header) + size + 2
    data = bytearray()
    while len(data) < want:
        chunk = sock.recv(4 * MiB)
        assert chunk, "server closed the connection"
        data += chunk
    assert data[:len(header)] == header and data[-2:] == b"\r\n"
    return bytes(data[len(header):-2])


def _arena_counters(client):
    info = client.info("arena")
    return info["arena_pinned"], info["arena_zombies"]


@pytest.mark.skipif(TARGET != "cxlredis", reason="arena pinning is cxlredis-specific")
@pytest.mark.parametrize("command", ["GETDEL", "GET-then-overwrite", "GETSET"])
def test_reply_in_flight_keeps_its_bytes(bigc, big, command):
    original = blob(64 * MiB, 4)
    bigc.set("a", original)
    reader = _slow_reader(big.port)
    try:
        args = ("GETSET", "a", "new") if command == "GETSET" else (command.split("-")[0], "a")
        reader.sendall(encode_command(*args))
        deadline = time.monotonic() + 10
        while _arena_counters(bigc)[0] == 0:  # wait until the reply is queued (and pinned)
            assert time.monotonic() < deadline, "the reply was never pinned"
            time.sleep(0.01)
        if command == "GET-then-overwrite":
            bigc.set("a", blob(64 * MiB, 5))
            bigc.setrange("a", 0, b"overwritten")
        else:
            assert bigc.exists("a") == (1 if command == "GETSET" else 0)
        assert _arena_counters(bigc) == (1, 1)  # the old value lives on as a pinned zombie
        # New values of the same size must not land on the zombie's bytes.
        for i in range(3):
            bigc.set(f"fill{i}", blob(64 * MiB, 10 + i))
        assert _read_bulk(reader, len(original)) == original
    finally:
        reader.close()
    deadline = time.monotonic() + 10
    while _arena_counters(bigc) != (0, 0):  # freed once sent (or when the client went away)
        assert time.monotonic() < deadline, f"still pinned: {_arena_counters(bigc)}"
        time.sleep(0.01)


def _wait_for_calls(client, command, count):
    """Poll INFO commandstats until `command` has run `count` times in all."""
    deadline = time.monotonic() + 10
    while client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0) < count:
        assert time.monotonic() < deadline, f"the server did not run the {command}s"
        time.sleep(0.01)


READS_OF_A_WHOLE_VALUE = {
    "get": ("GET", "v"),
    "mget": ("MGET", "v"),
    "getrange": ("GETRANGE", "v", "0", "-1"),
    "getex": ("GETEX", "v"),
}


@pytest.mark.skipif(TARGET != "cxlredis", reason="large-value-threshold is cxlredis's")
@pytest.mark.parametrize("threshold", [None, "1mb", "1kb"])
@pytest.mark.parametrize("command", sorted(READS_OF_A_WHOLE_VALUE))
def test_replies_in_flight_keep_their_bytes_after_config_set_threshold(bigc, big, threshold, command):
    """The issue's reproduction: a connection opened before CONFIG SET large-value-threshold
    pipelines 40 reads of a 200 KiB value and does not read; the key is deleted and fresh
    values take its block. Every reply must still be the value (copied, or sent pinned)."""
    size, pipelined = 200 * 1024, 40
    original = blob(size, 1)
    bigc.set("v", original)
    reader = _slow_reader(big.port)
    try:
        assert bigc.ping()
        if threshold is not None:
            bigc.config_set("large-value-threshold", threshold)
        calls = bigc.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)
        reader.sendall(encode_command(*READS_OF_A_WHOLE_VALUE[command]) * pipelined)
        _wait_for_calls(bigc, command, calls + pipelined)
        bigc.delete("v")
        for i in range(20):                     # fresh values of the same size reuse the block
            bigc.set(f"fresh{i}", blob(size, 2 + i))
        prefix = b"*1\r\n" if command == "mget" else b""
        for i in range(pipelined):
            if prefix:
                assert _recv_exactly(reader, len(prefix)) == prefix
            assert _read_exact_bulk(reader, size) == original, f"reply {i} of {pipelined} is not the value"
    finally:
        reader.close()
        bigc.config_set("large-value-threshold", "64kb")
    deadline = time.monotonic() + 10
    while _arena_counters(bigc) != (0, 0):
        assert time.monotonic() < deadline, f"still pinned: {_arena_counters(bigc)}"
        time.sleep(0.01)


@pytest.mark.skipif(TARGET != "cxlredis", reason="arena pinning is cxlredis-specific")
def test_hash_values_in_flight_keep_their_bytes(bigc, big):
    """HGET / HMGET / HGETALL / HVALS send a large field value from the arena entry,
    pinned: deleting the hash and reusing its block does not touch the replies."""
    size = 200 * 1024
    value = blob(size, 7)
    bigc.hset("h", mapping={"small": "s", "big": value})
    reader = _slow_reader(big.port)
    try:
        calls = bigc.info("commandstats").get("cmdstat_hget", {}).get("calls", 0)
        # more than the sockets' buffers hold (8 MiB): most replies wait in the server
        reader.sendall(encode_command("HGET", "h", "big") * 40 + encode_command("HMGET", "h", "big", "small")
                       + encode_command("HGETALL", "h") + encode_command("HVALS", "h"))
        _wait_for_calls(bigc, "hvals", 1)
        assert bigc.info("commandstats")["cmdstat_hget"]["calls"] == calls + 40
        assert _arena_counters(bigc)[0] >= 1            # sent by reference, pinned
        bigc.delete("h")
        for i in range(20):
            bigc.hset(f"fresh{i}", "big", blob(size, 8 + i))
        for _ in range(40):
            assert _read_exact_bulk(reader, size) == value
        assert _recv_exactly(reader, 4) == b"*2\r\n"
        assert _read_exact_bulk(reader, size) == value
        assert _recv_exactly(reader, 7) == b"$1\r\ns\r\n"
        assert _recv_exactly(reader, 4 + 11 + 7 + 9) == b"*4\r\n$5\r\nsmall\r\n$1\r\ns\r\n$3\r\nbig\r\n"
        assert _read_exact_bulk(reader, size) == value
        assert _recv_exactly(reader, 4 + 7) == b"*2\r\n$1\r\ns\r\n"
        assert _read_exact_bulk(reader, size) == value
    finally:
        reader.close()
    deadline = time.monotonic() + 10
    while _arena_counters(bigc) != (0, 0):
        assert time.monotonic() < deadline, f"still pinned: {_arena_counters(bigc)}"
        time.sleep(0.01)


def _recv_exactly(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "server closed the connection"
        data += chunk
    return bytes(data)


def _read_exact_bulk(sock, size):
    """One bulk reply of `size` bytes, reading no further (more replies follow it)."""
    header = b"$%d\r\n" % size
    reply = _recv_exactly(sock, len(header) + size + 2)
    assert reply[:len(header)] == header and reply[-2:] == b"\r\n", reply[:40]
    return reply[len(header):-2]


@pytest.mark.skipif(TARGET != "cxlredis", reason="large-value-threshold is cxlredis's")
@pytest.mark.parametrize("threshold", ["1mb", "1kb"])
def test_config_set_threshold_while_a_large_argument_is_received(bigc, big, threshold):
    """The parser decided where the argument goes when its header arrived: a CONFIG SET
    meanwhile changes nothing for it (and the next argument follows the new value)."""
    size = 300 * 1024
    value = blob(size, 3)
    request = encode_command("SET", "arg", value)
    with raw_connection(big.port, timeout=30) as conn:
        conn.send(request[:len(request) // 2])
        deadline = time.monotonic() + 10
        while bigc.info("arena")["arena_reserved"] == 0:   # received into an arena slot
            assert time.monotonic() < deadline, "the argument never reached a slot"
            time.sleep(0.01)
        try:
            bigc.config_set("large-value-threshold", threshold)
            conn.send(request[len(request) // 2:])
            assert conn.read_reply() == OK
            assert conn.request("SET", "after", value[::-1]) == OK
        finally:
            bigc.config_set("large-value-threshold", "64kb")
    assert bigc.get("arg") == value
    assert bigc.get("after") == value[::-1]
    assert bigc.info("arena")["arena_reserved"] == 0


@pytest.mark.skipif(TARGET != "cxlredis", reason="arena accounting is cxlredis-specific")
def test_values_received_into_slots_are_released_when_not_stored(bigc):
    v = blob(2 * MiB, 6)
    bigc.set("k", b"present")
    before = bigc.info("arena")["arena_heap_used"]
    for _ in range(20):
        assert bigc.set("k", v, nx=True) is None
        assert bigc.setnx("k", v) is False
        assert bigc.msetnx({"k": v}) is False
        with pytest.raises(redis.ResponseError, match="invalid expire time in 'setex'"):
            bigc.execute_command("SETEX", "other", 0, v)
    assert bigc.info("arena")["arena_heap_used"] == before
    assert bigc.info("arena")["arena_reserved"] == 0
    assert bigc.get("k") == b"present" and bigc.exists("other") == 0
