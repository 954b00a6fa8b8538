"""HyperLogLog commands (PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST), replayed on
redis-server and cxlredis; every reply must match, RESP2 and RESP3.

A HyperLogLog is a string in Redis's own format, so each sequence GETs what the
commands left: the sparse opcodes, their promotion to dense (at hll-sparse-max-bytes,
changed by CONFIG SET on both servers), the cached cardinality and its stale bit must
be Redis's bytes. Estimates are compared from 0 to 200k elements (added in big
variadic batches); strings made by hand stand for what Redis would call corrupt or
not an HLL at all. Then what is not a reply: keyspace events, WATCH, hits and misses,
DUMP payloads carried from one server to the other; hypothesis sequences close the file.
"""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import encode_command, parse_reply, raw_connection
from diff_harness import cmd, flushall, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

# Headers: sparse and dense, with the cached cardinality marked stale.
SPARSE = b"HYLL\x01\x00\x00\x00" + b"\x00" * 7 + b"\x80"
DENSE = b"HYLL\x00\x00\x00\x00" + b"\x00" * 7 + b"\x80"
EMPTY_DENSE = DENSE + bytes(12288)
XZERO_ALL = b"\x7f\xff"                       # XZERO:16384, an empty HLL's one opcode
# Sparse strings whose opcodes do not cover exactly 16384 registers.
SHORT = SPARSE + b"\x7f\xfe"                  # 16383: the last register is nowhere
LONG = SPARSE + XZERO_ALL + b"\x00"           # 16385: every register found, none dense
OVERFLOW = SPARSE + b"\x7f\xfe\x81"           # a VAL of two registers from the last one
CUT = SPARSE + b"\x7f"                        # an XZERO without its second byte
BARE = SPARSE                                  # no opcodes at all
# Strings Redis does not take for an HLL.
NOT_HLL = [b"hello", b"HYLL", b"HYLL" + bytes(11), b"HYLX" + SPARSE[4:] + XZERO_ALL,
           b"HYLL\x02" + SPARSE[5:] + XZERO_ALL, DENSE + bytes(100), EMPTY_DENSE + b"\x00",
           b"12345678901234567890", b""]
# A dense HLL whose cache says 12345 (valid), and one whose registers all hold 63.
CACHED = b"HYLL\x00\x00\x00\x00\x39\x30" + bytes(6) + bytes(12288)
ALL_63 = DENSE + b"\xff" * 12288


def elements(prefix, count, start=0):
    return [f"{prefix}:{i}" for i in range(start, start + count)]


SEQUENCES = {
    "pfadd and what it leaves": [
        ("PFADD", "h", "a", "b", "c"), ("GET", "h"), ("STRLEN", "h"),
        ("PFADD", "h", "a"), ("PFADD", "h", "b", "a"),        # nothing new: 0, nothing written
        ("GET", "h"),
        ("PFCOUNT", "h"), ("GET", "h"),                       # the cache refreshed in place
        ("PFCOUNT", "h"), ("PFADD", "h", "d"), ("GET", "h"), ("PFCOUNT", "h"),
        ("PFADD", "empty"), ("GET", "empty"), ("PFCOUNT", "empty"), ("GET", "empty"),
        ("PFADD", "empty"),                                    # exists now: no element, no change
        ("PFADD", "bin", "", b"\x00", b"\xff\xfe\r\n", "x" * 1000, "é"), ("GET", "bin"),
        ("PFADD", "bin", b"y" * 100_000), ("GET", "bin"),   # past the large-value threshold
        ("PFCOUNT", "bin"), ("TYPE", "bin"), ("OBJECT", "ENCODING", "bin"),
        ("PFADD", "many", *elements("m", 500)), ("GET", "many"), ("PFCOUNT", "many"),
        ("PFDEBUG", "ENCODING", "many"), ("PFDEBUG", "DECODE", "many"),
        ("PFADD", "many", *elements("m", 300, 500)), ("GET", "many"), ("PFCOUNT", "many"),
        ("PFDEBUG", "ENCODING", "many"),
    ],
    "ttl is kept": [
        ("PFADD", "h", "a"), ("EXPIRE", "h", "1000"),
        ("PFADD", "h", *elements("e", 50)), ("TTL", "h"),
        ("PFCOUNT", "h"), ("TTL", "h"),
        ("PFMERGE", "h", "nope"), ("TTL", "h"),
        ("PFDEBUG", "TODENSE", "h"), ("TTL", "h"), ("GET", "h"),
        ("SET", "d", "x", "EX", "500"), ("DEL", "d"), ("PFMERGE", "d", "h"), ("TTL", "d"),
    ],
    "sparse to dense at hll-sparse-max-bytes": [
        ("CONFIG", "SET", "hll-sparse-max-bytes", "0"),
        ("PFADD", "zero"), ("PFDEBUG", "ENCODING", "zero"), ("GET", "zero"),
        ("PFADD", "zero", "a"), ("PFDEBUG", "ENCODING", "zero"), ("PFCOUNT", "zero"),
        ("CONFIG", "SET", "hll-sparse-max-bytes", "60"),
        *[step for i in range(12) for step in (("PFADD", "small", f"s{i}"), ("GET", "small"),
                                               ("PFDEBUG", "ENCODING", "small"))],
        ("CONFIG", "SET", "hll-sparse-max-bytes", "1kb"),
        ("PFADD", "kb", *elements("k", 150)), ("PFDEBUG", "ENCODING", "kb"), ("STRLEN", "kb"),
        ("PFADD", "kb", *elements("k", 200, 150)), ("PFDEBUG", "ENCODING", "kb"), ("GET", "kb"),
        ("CONFIG", "SET", "hll-sparse-max-bytes", "100000"),
        ("PFADD", "huge", *elements("u", 8000)), ("PFDEBUG", "ENCODING", "huge"), ("GET", "huge"),
        ("PFCOUNT", "huge"), ("PFMERGE", "huge2", "huge"), ("PFDEBUG", "ENCODING", "huge2"),
        ("CONFIG", "SET", "hll-sparse-max-bytes", "3000"),
        ("PFADD", "huge", "one more"), ("PFDEBUG", "ENCODING", "huge"), ("PFCOUNT", "huge"),
    ],
    "pfmerge": [
        ("PFMERGE", "new"), ("GET", "new"), ("PFCOUNT", "new"),
        ("PFMERGE", "new2", "nope", "nope2"), ("GET", "new2"),
        ("PFADD", "s1", *elements("a", 20)), ("PFADD", "s2", *elements("a", 20, 10)),
        ("PFMERGE", "m", "s1", "s2"), ("GET", "m"), ("PFCOUNT", "m"), ("PFDEBUG", "ENCODING", "m"),
        ("PFMERGE", "m", "m"), ("GET", "m"),
        ("PFMERGE", "s1", "s2"), ("GET", "s1"),               # the destination is a source too
        ("PFADD", "d1", *elements("d", 3000)), ("PFDEBUG", "ENCODING", "d1"),
        ("PFMERGE", "m", "d1"), ("PFDEBUG", "ENCODING", "m"), ("GET", "m"), ("PFCOUNT", "m"),
        ("PFMERGE", "m2", "s2", "d1", "nope"), ("GET", "m2"),
        ("PFMERGE", "d1", "s1"), ("PFDEBUG", "ENCODING", "d1"), ("GET", "d1"),
        ("PFCOUNT", "s1", "s2"), ("PFCOUNT", "s1", "s1"), ("PFCOUNT", "s1", "nope", "d1"),
        ("PFCOUNT", "nope", "nope2"), ("GET", "s1"),          # several keys: no cache written
        ("PFADD", "big", *elements("a", 400)), ("PFMERGE", "grown", "big", "s1"), ("GET", "grown"),
    ],
    "wrong types and strings that are not HLLs": [
        ("LPUSH", "list", "x"), ("HSET", "hash", "f", "v"), ("SET", "int", "12345"),
        ("PFADD", "list", "a"), ("PFADD", "list"), ("PFCOUNT", "list"), ("PFCOUNT", "nope", "list"),
        ("PFMERGE", "list", "nope"), ("PFMERGE", "nope", "list"), ("PFDEBUG", "GETREG", "hash"),
        ("PFADD", "int", "a"), ("PFCOUNT", "int"),
        *[step for i, value in enumerate(NOT_HLL) for step in (
            ("SET", f"n{i}", value), ("PFADD", f"n{i}", "a"), ("PFCOUNT", f"n{i}"),
            ("PFCOUNT", "nope", f"n{i}"), ("PFMERGE", "dest", f"n{i}"), ("PFMERGE", f"n{i}"),
            ("PFDEBUG", "ENCODING", f"n{i}"), ("GET", f"n{i}"))],
        ("EXISTS", "dest"),
        # the first key that fails answers, in order
        ("SET", "bad", SHORT), ("PFCOUNT", "bad", "list"), ("PFCOUNT", "list", "bad"),
        ("PFCOUNT", "n0", "bad"), ("PFMERGE", "n0", "bad"), ("PFMERGE", "bad", "n0"),
    ],
    "corrupt sparse strings": [
        *[step for name, value in (("short", SHORT), ("long", LONG), ("overflow", OVERFLOW),
                                   ("cut", CUT), ("bare", BARE)) for step in (
            ("SET", name, value), ("PFCOUNT", name), ("PFCOUNT", name, "nope"),
            ("PFMERGE", "dest", name), ("PFDEBUG", "DECODE", name), ("PFDEBUG", "ENCODING", name),
            ("PFDEBUG", "GETREG", name), ("PFDEBUG", "TODENSE", name), ("GET", name))],
        # (a change at CUT's opcode writes past the string's end in Redis, and what it
        # left there is read by the next command: not replayed, see hll.c)
        *[step for name in ("short", "long", "overflow", "bare") for step in (
            ("PFADD", name, "a", "b"), ("GET", name), ("PFDEBUG", "GETREG", name), ("GET", name),
            ("PFDEBUG", "TODENSE", name), ("PFCOUNT", name))],
        # every register is found in LONG: it grows sparse until it must go dense, and
        # cannot; what the elements before changed stays
        ("SET", "long", LONG), ("PFADD", "long", *elements("l", 100)), ("GET", "long"),
        ("PFADD", "long", *elements("l", 2000, 100)), ("GET", "long"), ("STRLEN", "long"),
        ("EXISTS", "dest"),
        # a dense string answers its cache, whatever its registers; registers past what
        # the estimator reads give Redis's overflowed llroundl
        ("SET", "cached", CACHED), ("PFCOUNT", "cached"), ("PFADD", "cached", "x"), ("PFCOUNT", "cached"),
        ("SET", "all63", ALL_63), ("PFCOUNT", "all63"), ("GET", "all63"), ("PFCOUNT", "all63"),
        ("PFCOUNT", "all63", "nope"), ("PFMERGE", "m63", "all63"), ("PFCOUNT", "m63"),
        ("SET", "zeros", EMPTY_DENSE), ("PFCOUNT", "zeros"), ("PFADD", "zeros", "a"), ("GET", "zeros"),
        ("SET", "padded", SPARSE[:4] + b"\x01\x07\x08\x09" + SPARSE[8:] + XZERO_ALL),  # unused bytes kept
        ("PFADD", "padded", "a"), ("PFDEBUG", "TODENSE", "padded"), ("GETRANGE", "padded", "0", "15"),
    ],
    "pfdebug": [
        ("PFADD", "h", *elements("p", 30)),
        ("PFDEBUG", "ENCODING", "h"), ("PFDEBUG", "encoding", "h"), ("PFDEBUG", "DECODE", "h"),
        ("PFDEBUG", "decode", "h"), ("PFDEBUG", b"DECODE\x00junk", "h"),
        ("PFDEBUG", "GETREG", "h"), ("GET", "h"), ("PFDEBUG", "ENCODING", "h"),
        ("PFDEBUG", "DECODE", "h"), ("PFDEBUG", "TODENSE", "h"),
        ("PFADD", "h2", "x"), ("PFDEBUG", "TODENSE", "h2"), ("GET", "h2"), ("PFDEBUG", "TODENSE", "h2"),
        ("PFDEBUG", "GETREG", "h2"),
        ("PFDEBUG", "FOO", "h"), ("PFDEBUG", "", "h"), ("PFDEBUG", b"a\r\nb", "h"),
        ("PFDEBUG", b"x\x00y", "h"), ("PFDEBUG", "FOO", "nope"), ("PFDEBUG", "GETREG", "nope"),
        ("PFDEBUG", "GETREG"), ("PFDEBUG", "GETREG", "h", "extra"), ("PFDEBUG",),
        ("PFADD",), ("PFCOUNT",), ("PFMERGE",), ("PFSELFTEST", "x"),
        ("SET", "e", SPARSE + XZERO_ALL), ("PFDEBUG", "DECODE", "e"), ("PFDEBUG", "GETREG", "e"),
    ],
    "transactions": [
        ("MULTI",), ("PFADD", "h", "a", "b"), ("PFCOUNT", "h"), ("PFMERGE", "m", "h"),
        ("PFDEBUG", "ENCODING", "m"), ("PFADD", "list", "x"), ("EXEC",),
        ("GET", "h"), ("GET", "m"),
        ("LPUSH", "list2", "x"), ("MULTI",), ("PFADD", "list2", "a"), ("PFCOUNT", "h"), ("EXEC",),
    ],
}


@pytest.fixture(autouse=True)
def default_config(redis_oracle, cxl):
    """hll-sparse-max-bytes and keyspace events as they were, whatever a test changed."""
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            conn.request("CONFIG", "SET", "hll-sparse-max-bytes", "3000")
            conn.request("CONFIG", "SET", "notify-keyspace-events", "")


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_hyperloglog_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol, name)


def test_estimates_up_to_200k(redis_oracle, cxl):
    """PFCOUNT after each batch (PFADD of a few thousand to 50k new elements at once), the
    cached and the merged estimates, and the dense string at a few points."""
    steps, added = [], 0
    for batch in (1, 9, 90, 400, 1500, 3000, 5000, 15000, 25000, 50000, 50000, 50000):
        steps += [("PFADD", "h", *elements("c", batch, added)), ("PFCOUNT", "h")]
        added += batch
        steps += [("PFADD", "part", *elements("c", batch // 3, added - batch)), ("PFCOUNT", "h", "part")]
        if batch >= 15000:
            steps += [("GET", "h"), ("PFMERGE", "m", "part", "h"), ("PFCOUNT", "m")]
    run_sequence(redis_oracle, cxl, steps, 2, "estimates")


def test_pfselftest(redis_oracle, cxl):
    # half a second on redis-server: once (tests/c/test_hll.c runs its checks at other limits)
    run_sequence(redis_oracle, cxl, [("PFSELFTEST",)], 2, "pfselftest")


def test_watch_sees_what_changes_the_string(redis_oracle, cxl):
    """PFCOUNT refreshing the cache and PFADD changing a register touch the key; a PFADD
    that changes nothing and a PFCOUNT of a fresh cache do not."""
    def watched(*command):
        return [cmd("WATCH", "h"), cmd(*command, conn=1), cmd("MULTI"), cmd("PING"), cmd("EXEC")]
    run_sequence(redis_oracle, cxl, [
        ("PFADD", "h", "a"),
        *watched("PFCOUNT", "h"), *watched("PFCOUNT", "h"),
        *watched("PFADD", "h", "a"), *watched("PFADD", "h", "b"),
        *watched("PFMERGE", "h"), *watched("PFCOUNT", "h", "nope"),
    ], 2, "watch")


def _stats(conn):
    text = parse_reply(conn.request("INFO", "stats")).decode()
    fields = dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)
    return int(fields["keyspace_hits"]), int(fields["keyspace_misses"])


def test_hits_and_misses(redis_oracle, cxl):
    """Reads count (PFCOUNT, PFMERGE's sources, its destination among them); PFADD, the
    destination's own lookup and PFDEBUG do not."""
    commands = [("PFADD", "h", "a"), ("PFCOUNT", "h"), ("PFCOUNT", "nope"), ("PFCOUNT", "h", "nope", "h"),
                ("PFMERGE", "d", "h", "nope"), ("PFMERGE", "d"), ("PFDEBUG", "ENCODING", "d"),
                ("PFDEBUG", "ENCODING", "nope"), ("PFADD", "nope2")]
    counts = []
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            conn.request("CONFIG", "RESETSTAT")
            seen = []
            for command in commands:
                conn.request(*command)
                seen.append(_stats(conn))
            counts.append(seen)
    assert counts[1] == counts[0]


def _events(listener):
    frames = []
    while b"hll-sentinel" not in (frame := listener.read_reply()):
        frames.append(frame)
    return frames


def _replay_events(server, protocol):
    commands = [("PFADD", "h", "a"), ("PFADD", "h", "a"), ("PFADD", "h"), ("PFADD", "new"),
                ("PFCOUNT", "h"), ("PFCOUNT", "h", "new"), ("PFCOUNT", "nope"), ("PFMERGE", "h", "new"),
                ("PFMERGE", "made", "nope"), ("PFDEBUG", "TODENSE", "h"), ("PFDEBUG", "GETREG", "new"),
                ("SET", "short", SHORT), ("PFADD", "short", *elements("s", 50)), ("PFADD", "made", "b")]
    with raw_connection(server.port) as conn, raw_connection(server.port) as listener, \
            raw_connection(server.port) as publisher:
        assert conn.request("CONFIG", "SET", "notify-keyspace-events", "AKEnm") == b"+OK\r\n"
        if protocol == 3:
            listener.request("HELLO", "3")
        listener.send(encode_command("PSUBSCRIBE", "__key*__:*", "hll-sentinel"))
        for _ in range(2):
            listener.read_reply()
        outcome = []
        for command in commands:
            reply = conn.request(*command)
            publisher.request("PUBLISH", "hll-sentinel", "after")
            outcome.append((command[:3], reply, _events(listener)))
        return outcome


@pytest.mark.parametrize("protocol", [2, 3])
def test_keyspace_events(redis_oracle, cxl, protocol):
    """"new" then "pfadd" (PFMERGE's too), only when something changed; PFCOUNT and
    PFDEBUG publish nothing; a read of a missing key is a keymiss."""
    expected = _replay_events(redis_oracle, protocol)
    assert _replay_events(cxl, protocol) == expected


def test_dump_payloads_cross_between_servers(redis_oracle, cxl):
    """An HLL DUMPed by either server RESTOREs on both as the same HLL."""
    payloads = []
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            conn.request("PFADD", "sparse", *elements("x", 200))
            conn.request("PFADD", "dense", *elements("x", 5000))
            payloads += [parse_reply(conn.request("DUMP", key)) for key in ("sparse", "dense")]
    steps = []
    for i, payload in enumerate(payloads):
        steps += [("RESTORE", f"r{i}", "0", payload), ("GET", f"r{i}"), ("PFCOUNT", f"r{i}"),
                  ("PFADD", f"r{i}", "another"), ("GET", f"r{i}"), ("PFDEBUG", "ENCODING", f"r{i}")]
    run_sequence(redis_oracle, cxl, steps, 2, "dump and restore")


# ------------------------------------------------------------ generated sequences

KEYS = ["h1", "h2", "h3"]
_KEY = st.sampled_from(KEYS)
_ELEMENT = st.one_of(st.integers(0, 300).map(str), st.binary(max_size=6))
_CRAFTED = st.sampled_from([SHORT, LONG, OVERFLOW, CACHED, EMPTY_DENSE, SPARSE + XZERO_ALL,
                            SPARSE + b"\x40\x63\xfc\x7f\x9b", b"not an hll"])
COMMANDS = st.one_of(
    st.tuples(st.just("PFADD"), _KEY).flatmap(
        lambda head: st.lists(_ELEMENT, max_size=40).map(lambda els: (*head, *els))),
    st.tuples(st.just("PFADD"), _KEY, st.integers(0, 20000), st.integers(1, 4000)).map(
        lambda t: (t[0], t[1], *elements("g", t[3], t[2]))),
    st.lists(_KEY, min_size=1, max_size=3).map(lambda keys: ("PFCOUNT", *keys)),
    st.lists(_KEY, min_size=1, max_size=3).map(lambda keys: ("PFMERGE", *keys)),
    st.tuples(st.just("PFDEBUG"), st.sampled_from(["ENCODING", "DECODE", "TODENSE", "GETREG"]), _KEY),
    st.tuples(st.just("CONFIG"), st.just("SET"), st.just("hll-sparse-max-bytes"),
              st.sampled_from(["0", "25", "200", "3000"])),
    st.tuples(st.just("SET"), _KEY, _CRAFTED),
    st.tuples(st.just("GET"), _KEY),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(COMMANDS, min_size=3, max_size=20), protocol=st.sampled_from([2, 3]))
def test_generated_hyperloglog_sequences(redis_oracle, cxl, steps, protocol):
    flushall(redis_oracle, cxl)     # for each example (a function-scoped fixture runs once)
    run_sequence(redis_oracle, cxl, [("CONFIG", "SET", "hll-sparse-max-bytes", "3000"), *steps,
                                     *(("GET", key) for key in KEYS)], protocol, "generated")
