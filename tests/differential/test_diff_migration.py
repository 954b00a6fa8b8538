"""DUMP, RESTORE, RESTORE-ASKING and MIGRATE, replayed on redis-server and cxlredis:
every reply and every error text must match (RESP2 and RESP3).

The oracle runs with rdbcompression off, so its DUMP writes strings raw as cxlredis does
and the payloads compare byte for byte. MIGRATE runs against two real redis-server
targets, one per side (the same steps would collide on a shared one), through `paired`.
"""
import random
import re
import socket

import pytest

from conftest import ServerProcess, raw_connection
from cxlredis._cluster import crc64
from cxlredis.cluster.dump import dump_hash, dump_string
from diff_harness import Mismatch, cmd, exact, run_sequence, within

pytestmark = pytest.mark.usefixtures("flushed", "uncompressed_oracle")

MAX = "9223372036854775807"
HELLO = dump_string(b"hello")
HASH = dump_hash([(b"f", b"v"), (b"n", b"12")])
FUTURE_MS = "4102444800123"


def with_footer(body, version=10):
    version = version.to_bytes(2, "little")
    return body + version + crc64(version, crc64(body)).to_bytes(8, "little")


SEQUENCES = {
    "dump": [
        ("DUMP", "missing"),
        ("SET", "s", "hello"),
        ("DUMP", "s"),
        ("SET", "i", "12345"),
        ("DUMP", "i"),
        ("SET", "neg", "-9223372036854775808"),
        ("DUMP", "neg"),
        ("SET", "e", ""),
        ("DUMP", "e"),
        ("SET", "lz", "0012"),
        ("DUMP", "lz"),
        ("SET", "long", "x" * 70000),
        ("DUMP", "long"),
        ("HSET", "h", "f", "v", "n", "-4096", "big", "1" * 19),
        ("DUMP", "h"),
        ("DUMP",),
        ("DUMP", "s", "extra"),
    ],
    "restore": [
        ("RESTORE", "k", "0", HELLO),
        ("GET", "k"),
        ("TTL", "k"),
        ("DUMP", "k"),
        ("RESTORE", "k", "0", HELLO),
        ("RESTORE", "k", "0", HELLO, "REPLACE"),
        ("RESTORE", "h", "0", HASH),
        ("TYPE", "h"),
        ("HGETALL", "h"),
        ("DUMP", "h"),
        ("RESTORE", "h", "0", HELLO, "replace"),
        ("TYPE", "h"),
        ("RESTORE-ASKING", "ra", "0", HASH),
        ("HGET", "ra", "n"),
        ("RESTORE-ASKING", "ra", "0", HASH),
        ("RESTORE", "k", "0"),
        ("RESTORE-ASKING", "k"),
        ("MULTI",),
        ("RESTORE", "m", "0", HELLO),
        ("RESTORE", "m", "0", HELLO),
        ("EXEC",),
    ],
    "restore errors, in Redis's order": [
        ("SET", "k", "v"),
        ("RESTORE", "k", "0", HELLO),
        ("RESTORE", "k", "-1", HELLO),              # BUSYKEY comes before the TTL
        ("RESTORE", "k", "x", b"junk"),
        ("RESTORE", "k", "0", b"junk", "NOPE"),     # the options come first
        ("RESTORE", "n", "-1", HELLO),
        ("RESTORE", "n", "x", HELLO),
        ("RESTORE", "n", "1.5", HELLO),
        ("RESTORE", "n", "99999999999999999999", HELLO),
        ("RESTORE", "n", "-0", HELLO),
        ("RESTORE", "n", "-1", b"junk"),            # the TTL before the payload
        ("RESTORE", "n", "0", b"junk"),
        ("RESTORE", "n", "0", b""),
        ("RESTORE", "n", "0", HELLO[:-1]),
        ("RESTORE", "n", "0", HELLO[:-8] + bytes(8)),
        ("RESTORE", "n", "0", with_footer(HELLO[:-10], version=11)),
        ("RESTORE", "n", "0", with_footer(b"\x00\x20abc")),
        ("RESTORE", "n", "0", with_footer(b"\x00\xc4")),
        ("RESTORE", "n", "0", with_footer(b"\x04\x00")),
        ("RESTORE", "n", "0", with_footer(b"\x10\x07\x08\x00\x00\x00\x01\x00\xff")),
        ("EXISTS", "n"),
        ("RESTORE", "v9", "0", with_footer(HELLO[:-10], version=9)),   # an older RDB: fine
        ("RESTORE", "short", "0", with_footer(b"\x00\x05abc")),      # reads into the footer
        ("GET", "v9"),
        ("GET", "short"),
        ("RESTORE", "k", "0", b"junk", "REPLACE"),
        ("GET", "k"),
        ("RESTORE", "x", "0", HELLO, "FOO"),
        ("RESTORE", "x", "0", HELLO, "REPLACE", "FOO"),
        ("RESTORE", "x", "0", HELLO, "IDLETIME"),
        ("RESTORE", "x", "0", HELLO, "IDLETIME", "-1"),
        ("RESTORE", "x", "0", HELLO, "IDLETIME", "x"),
        ("RESTORE", "x", "0", HELLO, "IDLETIME", "99999999999999999999"),
        ("RESTORE", "x", "0", HELLO, "FREQ"),
        ("RESTORE", "x", "0", HELLO, "FREQ", "256"),
        ("RESTORE", "x", "0", HELLO, "FREQ", "-1"),
        ("RESTORE", "x", "0", HELLO, "FREQ", "x"),
        ("RESTORE", "x", "0", HELLO, "FREQ", "1", "IDLETIME", "1"),
        ("RESTORE", "x", "0", HELLO, "IDLETIME", "0", "FREQ", "0"),
        ("RESTORE", "x", "0", HELLO, "IDLETIME", "-1", "FOO"),
        ("RESTORE", "x", "0", HELLO, "FOO", "IDLETIME", "-1"),
        ("EXISTS", "x"),
        ("RESTORE", "x", "0", HELLO, "IDLETIME", "5", "IDLETIME", "6", "REPLACE", "REPLACE"),
        ("RESTORE", "y", "0", HELLO, "FREQ", "0", "FREQ", "255", "absttl", "ABSTTL"),
        ("EXISTS", "x", "y"),
    ],
    "restore ttl": [
        ("RESTORE", "t", "100000", HELLO),
        cmd("PTTL", "t", compare=within(500)),
        ("RESTORE", "a", FUTURE_MS, HELLO, "ABSTTL"),
        ("PEXPIRETIME", "a"),
        ("RESTORE", "past", "1", HELLO, "ABSTTL"),          # expired already: OK, no key
        ("EXISTS", "past"),
        ("SET", "old", "v"),
        ("RESTORE", "old", "1", HELLO, "ABSTTL", "REPLACE"),    # ...and the old one is gone
        ("EXISTS", "old"),
        ("SET", "old", "v"),
        ("RESTORE", "old", "1", HELLO, "ABSTTL"),
        ("RESTORE", "huge", MAX, HELLO),                    # now + MAX overflows: long past
        ("EXISTS", "huge"),
        ("RESTORE", "huge", str(int(MAX) - 1), HELLO),
        ("EXISTS", "huge"),
        ("RESTORE", "huge", MAX, HELLO, "ABSTTL"),
        ("PEXPIRETIME", "huge"),
        ("RESTORE", "one", "1", HELLO),
        ("RESTORE", "zero", "0", HELLO, "ABSTTL"),
        ("TTL", "zero"),
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_sequence(redis_oracle, cxl, protocol, name):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol, name)


def test_every_value_round_trips(redis_oracle, cxl):
    """Each side's DUMP restores on the other; the payloads are the same bytes."""
    rng = random.Random(5)
    values = [b"", b"0", b"-1", b"127", b"128", b"32768", b"2147483648", b"+1", b" 1",
              rng.randbytes(1024), rng.randbytes(1 << 20)]
    steps = []
    for i, value in enumerate(values):
        steps += [("SET", f"s{i}", value), ("DUMP", f"s{i}"),
                  ("RESTORE", f"r{i}", "0", dump_string(value)), ("GET", f"r{i}")]
    fields = [(b"f%d" % i, rng.randbytes(rng.randrange(80))) for i in range(300)]
    steps += [("RESTORE", "h", "0", dump_hash(fields)), ("HLEN", "h"), ("HGET", "h", "f7")]
    run_sequence(redis_oracle, cxl, steps, 2, "round trips")


def within_a_second(argv, a, b):
    """Idle seconds, 0 included, that a tick of the clock between the servers may part."""
    if a.startswith(b":") and b.startswith(b":"):
        return abs(int(a[1:-2]) - int(b[1:-2])) <= 1
    return a == b


@pytest.fixture
def own_policies(redis_oracle, cxl):
    """Each server's maxmemory-policy (their defaults differ) put back after the test."""
    saved = {}
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            saved[server.port] = conn.request("CONFIG", "GET", "maxmemory-policy").split(b"\r\n")[-2]
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            assert conn.request("CONFIG", "SET", "maxmemory-policy", saved[server.port]) == b"+OK\r\n"


@pytest.mark.usefixtures("own_policies")
def test_idletime_and_freq(redis_oracle, cxl):
    """IDLETIME counts under an LRU policy (its 24-bit clock wraps huge ones), FREQ
    under an LFU one; the other is accepted and ignored."""
    idle = cmd("OBJECT", "IDLETIME", "k", compare=within_a_second)
    steps = []
    for seconds in ("0", "1000", "86400", "16777214", "16777215", "100000000", MAX):
        steps += [("RESTORE", "k", "0", HELLO, "IDLETIME", seconds, "REPLACE"), idle]
    steps = [("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")] + steps
    steps += [("RESTORE", "k", "0", HELLO, "FREQ", "100", "REPLACE"), idle,
              ("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"),
              ("RESTORE", "k", "0", HELLO, "FREQ", "200", "REPLACE"),
              ("OBJECT", "FREQ", "k"),
              ("RESTORE", "k", "0", HELLO, "FREQ", "0", "REPLACE"),
              ("OBJECT", "FREQ", "k"),
              ("RESTORE", "k", "0", HELLO, "IDLETIME", "1000", "REPLACE"),
              ("OBJECT", "FREQ", "k"),
              ("OBJECT", "IDLETIME", "k")]
    run_sequence(redis_oracle, cxl, steps, 2, "idletime and freq")


# --- MIGRATE -------------------------------------------------------------------------

def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_migrate_errors_before_any_transfer(redis_oracle, cxl, protocol):
    port = str(closed_port())
    run_sequence(redis_oracle, cxl, [
        ("SET", "k", "v"),
        ("MIGRATE", "127.0.0.1", port, "k", "0"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "FOO"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "COPY", "FOO"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "AUTH"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "AUTH2", "user"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "auth2", "u", "p", "AUTH"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "KEYS", "k"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "FOO", "KEYS", "k"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100", "KEYS", "k", "FOO"),
        ("MIGRATE", "127.0.0.1", port, "k", "x", "100"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "x"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "99999999999999999999"),
        ("MIGRATE", "127.0.0.1", port, "k", "1.5", "100", "FOO"),   # options are read first
        ("MIGRATE", "127.0.0.1", port, "missing", "0", "100"),
        ("MIGRATE", "127.0.0.1", port, "", "0", "100"),
        ("MIGRATE", "127.0.0.1", port, "", "0", "100", "KEYS"),
        ("MIGRATE", "127.0.0.1", port, "", "0", "100", "COPY", "REPLACE", "KEYS", "x", "y"),
        ("MIGRATE", "127.0.0.1", port, "k", "0", "100"),             # refused: found writing
        ("MIGRATE", "127.0.0.1", port, "", "0", "-5", "KEYS", "k"),
        ("MIGRATE", "no-such-host.invalid", port, "k", "0", "100"),
        ("MIGRATE", "127.0.0.1", "-1", "k", "0", "100"),
        ("MIGRATE", "127.0.0.1", "not-a-port", "k", "0", "100"),     # atoi: port 0
        ("GET", "k"),
        ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "100"),
        ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "100", "KEYS", "a", "b"),
        ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "100", "AUTH", "KEYS", "KEYS", "a"),
        ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "100", "KEYS", "a"),
        ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "100", "KEYS"),
        ("COMMAND", "GETKEYS", "RESTORE", "k", "0", "p"),
        ("COMMAND", "GETKEYS", "DUMP", "k"),
    ], protocol, "migrate errors")


@pytest.fixture(scope="module")
def targets():
    """Two real redis-server targets requiring PASSWORD, with the user mover (pw2)."""
    started = []
    try:
        for _ in range(2):
            server = ServerProcess("redis")
            started.append(server.start())
            with raw_connection(server.port) as conn:
                conn.request("ACL", "SETUSER", "mover", "on", ">pw2", "~*", "+@all")
                conn.request("CONFIG", "SET", "requirepass", "pw")
        yield started
    finally:
        for server in started:
            server.close()


PORT = "<target port>"
AT_TARGET = "@target"


def replay(source, target, steps):
    """Run steps on source ("@target", ...: on target), PORT standing for target's port."""
    with raw_connection(target.port, timeout=10) as at_target:
        assert at_target.request("AUTH", "pw") == b"+OK\r\n"
        assert at_target.request("FLUSHALL") == b"+OK\r\n"
        at_target.request("CONFIG", "RESETSTAT")
        with raw_connection(source.port, timeout=10) as at_source:
            replies = []
            for step in steps:
                conn, args = (at_target, step[1:]) if step[0] == AT_TARGET else (at_source, step)
                replies.append(conn.request(*(str(target.port) if a == PORT else a for a in args)))
            return replies


def paired(redis_oracle, cxl, targets, steps, compare=None):
    """The steps from redis-server into one target and from cxlredis into the other: the
    same replies (compare: step index -> comparator, else exact), target's included."""
    expected = replay(redis_oracle, targets[0], steps)
    actual = replay(cxl, targets[1], steps)
    for index, (step, a, b) in enumerate(zip(steps, expected, actual)):
        if not (compare or {}).get(index, exact)(step, a, b):
            raise Mismatch(f"step {index} {step!r}\n  redis-server: {a!r}\n  cxlredis:     {b!r}")


def migrate(*args, db="0", timeout="5000"):
    key, *options = args
    return ("MIGRATE", "127.0.0.1", PORT, key, db, timeout, *options)


def test_migrate_against_real_targets(redis_oracle, cxl, targets):
    steps = [
        ("FLUSHALL",),
        ("SET", "a", "1"), ("SET", "b", "2", "PX", "100000"), ("HSET", "h", "f", "v"),
        migrate("a"),                                           # NOAUTH
        migrate("a", "AUTH", "wrong"),
        migrate("a", "AUTH2", "mover", "wrong"),
        migrate("a", "AUTH", "pw", db="99"),                    # SELECT refused
        migrate("a", "AUTH", "pw", db="-1"),   # after an error nothing is SELECTed: db 0, -1 unsent
        (AT_TARGET, "GET", "a"),
        ("EXISTS", "a"),
        ("SET", "a", "1"),
        migrate("a", "AUTH", "pw", db="3"),
        migrate("a", "AUTH", "pw", db="3"),                     # NOKEY: it moved
        migrate("", "AUTH2", "mover", "pw2", "COPY", "KEYS", "b", "missing", "h"),
        (AT_TARGET, "PTTL", "b"),
        (AT_TARGET, "HGETALL", "h"),
        ("EXISTS", "b", "h"),
        migrate("", "AUTH", "pw", "KEYS", "h", "b"),            # BUSYKEY: the first one stops
        ("EXISTS", "b", "h"),
        migrate("", "AUTH", "pw", "REPLACE", "KEYS", "b", "b"),
        ("EXISTS", "b"),
        ("SET", "c", "3"),
        migrate("", "AUTH", "pw", "KEYS", "c", "c"),            # the second is BUSY: c moved
        ("EXISTS", "c"),
        (AT_TARGET, "SELECT", "3"), (AT_TARGET, "GET", "a"),
        (AT_TARGET, "INFO", "commandstats"),
    ]
    ttl = steps.index((AT_TARGET, "PTTL", "b"))

    def commandstats(argv, a, b):
        # cmdstat_<name>:calls=N,...: only the counts agree (times are each server's);
        # both standalone sources send RESTORE (a cluster node sends RESTORE-ASKING)
        def counts(reply):
            text = reply.decode()
            return sorted(re.sub(r"usec=\d+,usec_per_call=[\d.]+,", "", line)
                          for line in text.split("\r\n") if line.startswith("cmdstat_"))
        return counts(a) == counts(b)
    paired(redis_oracle, cxl, targets, steps,
           {ttl: within(500), len(steps) - 1: commandstats})


def test_migrate_a_value_the_target_keeps_whole(redis_oracle, cxl, targets):
    value = random.Random(9).randbytes(3 << 20)
    paired(redis_oracle, cxl, targets, [
        ("SET", "big", value),
        migrate("big", "AUTH", "pw"),
        (AT_TARGET, "STRLEN", "big"),
        (AT_TARGET, "GETRANGE", "big", "3000000", "3000100"),
        ("EXISTS", "big"),
    ])
