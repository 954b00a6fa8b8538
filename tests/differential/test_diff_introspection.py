"""SLOWLOG, LATENCY, MONITOR, CLIENT LIST/KILL and INFO latencystats, replayed on
redis-server 7.0 and cxlredis.

What two correct servers may disagree on is masked (ids, clocks, durations,
addresses, latencies); the shapes, the arguments kept and how they are
truncated or redacted, field names and their order, flags, counts and error
texts must match.
"""
import random
import re
import time

import pytest

from conftest import parse_reply, raw_connection
from diff_harness import (CLIENT_INFO_NEWER, CLIENT_INFO_OURS, CLIENT_INFO_VARYING, _info_text,
                          cmd, normalised, run_sequence)

pytestmark = pytest.mark.usefixtures("flushed", "restored_config")

DEFAULTS = [("slowlog-log-slower-than", "10000"), ("slowlog-max-len", "128"),
            ("latency-monitor-threshold", "0"), ("latency-tracking", "yes"),
            ("latency-tracking-info-percentiles", "50 99 99.9"), ("requirepass", "")]
SCRATCH_USERS = ("it-bob", "it-victim")


@pytest.fixture
def restored_config(redis_oracle, cxl):
    """Both servers start and end each test with the defaults these tests change, empty
    slow logs and latency events, and without the scratch users."""
    def restore():
        for server in (redis_oracle, cxl):
            with raw_connection(server.port) as conn:
                conn.request("AUTH", "secret")   # in case a test stopped with requirepass set
                for name, value in DEFAULTS:
                    assert conn.request("CONFIG", "SET", name, value) == b"+OK\r\n"
                conn.request("ACL", "DELUSER", *SCRATCH_USERS)
                assert conn.request("SLOWLOG", "RESET") == b"+OK\r\n"
                conn.request("LATENCY", "RESET")
    restore()
    yield
    restore()


def diff(redis_oracle, cxl, protocol, steps, name=""):
    return run_sequence(redis_oracle, cxl, steps, protocol, name)


# ------------------------------------------------------------ COMMAND INFO / DOCS, arity

INTROSPECTION = ["slowlog", "slowlog|get", "slowlog|len", "slowlog|reset", "slowlog|help",
                 "latency", "latency|latest", "latency|history", "latency|reset", "latency|doctor",
                 "latency|graph", "latency|histogram", "latency|help", "monitor"]


def subcommands_in_any_order(argv, reply):
    """COMMAND INFO/DOCS of a container: Redis lists the subcommands in its hash table's
    order, so they are compared sorted (everything else as it is)."""
    value = parse_reply(reply)
    if argv[1].upper() == b"INFO":
        (entry,) = value
        return entry[:9] + [sorted(entry[9], key=lambda sub: sub[0])]
    (name, docs), = _pairs(value)
    docs = dict(_pairs(docs))
    docs[b"subcommands"] = sorted(_pairs(docs[b"subcommands"]))
    return name, sorted(docs.items())


@pytest.mark.parametrize("name", INTROSPECTION)
def test_command_info_and_docs_match(redis_oracle, cxl, protocol, name):
    compare = normalised(subcommands_in_any_order) if name in ("slowlog", "latency") else None
    diff(redis_oracle, cxl, protocol, [cmd("COMMAND", "INFO", name, compare=compare),
                                       cmd("COMMAND", "DOCS", name, compare=compare)])


def test_arity_and_subcommand_errors(redis_oracle, cxl, protocol):
    diff(redis_oracle, cxl, protocol, [
        ("SLOWLOG",), ("SLOWLOG", "FOO"), ("SLOWLOG", "LEN", "x"), ("SLOWLOG", "RESET", "x"),
        ("SLOWLOG", "HELP", "x"), ("slowlog", "help"), ("LATENCY",), ("LATENCY", "FOO"),
        ("LATENCY", "HISTORY"), ("LATENCY", "HISTORY", "a", "b"), ("LATENCY", "GRAPH"),
        ("LATENCY", "LATEST", "x"), ("LATENCY", "DOCTOR", "x"), ("LATENCY", "HELP"),
        ("MONITOR", "x"),
    ])


# ------------------------------------------------------------ SLOWLOG

def slowlog_entries(argv, reply):
    """Ids relative to the newest, timestamps close to now, durations and addresses only
    as shapes; the arguments kept and the client names exactly."""
    entries = parse_reply(reply)
    newest = entries[0][0] if entries else 0
    now = time.time()
    shaped = []
    for ident, when, duration, args, addr, name in entries:
        shaped.append((newest - ident, abs(now - when) < 60, duration >= 0, args,
                       bool(re.fullmatch(rb"[0-9.]+:[0-9]+", addr)), name))
    return shaped


SLOWLOG = normalised(slowlog_entries)


def test_slowlog_entries(redis_oracle, cxl, protocol):
    many = ["RPUSH-LIKE"] + [f"arg{i}" for i in range(40)]
    diff(redis_oracle, cxl, protocol, [
        ("CONFIG", "SET", "slowlog-log-slower-than", "0"),
        ("SLOWLOG", "RESET"),
        ("SLOWLOG", "LEN"),
        ("CLIENT", "SETNAME", "slow-one"),
        ("SET", "k", "v"),
        ("SET", "long", "x" * 200),
        ("SET", "edge", "y" * 128),
        ("SET", "edge2", "z" * 129),
        ("ECHO", b"bin\x00\xff\r\n"),
        ("INCR", "k"),                          # failed commands are logged too
        many,                                   # unknown: never reaches the slow log
        ("GET",),                               # wrong arity: neither
        ("MSET", *[f"k{i}" for i in range(40)]),    # 41 arguments: 31 kept, then "10 more"
        ("MULTI",),
        ("SET", "a", "1"),
        ("GET", "a"),
        ("EXEC",),                              # its commands are logged, EXEC is not
        cmd("SLOWLOG", "GET", compare=SLOWLOG),
        cmd("SLOWLOG", "GET", "3", compare=SLOWLOG),
        cmd("SLOWLOG", "GET", "0", compare=SLOWLOG),
        cmd("SLOWLOG", "GET", "-1", compare=SLOWLOG),
        ("SLOWLOG", "GET", "-2"),
        ("SLOWLOG", "GET", "abc"),
        ("SLOWLOG", "GET", "99999999999999999999"),
        ("SLOWLOG", "GET", "1", "2"),
        ("SLOWLOG", "LEN"),
        ("SLOWLOG", "HELP"),
        ("SLOWLOG", "RESET"),
        cmd("SLOWLOG", "GET", compare=SLOWLOG),
    ])


def test_slowlog_redacts_secrets(redis_oracle, cxl, protocol):
    diff(redis_oracle, cxl, protocol, [
        ("CONFIG", "SET", "slowlog-log-slower-than", "0"),
        ("SLOWLOG", "RESET"),
        ("AUTH", "secret"),
        ("AUTH", "someone", "secret"),
        ("HELLO", str(protocol), "AUTH", "default", "secret", "SETNAME", "named"),
        ("HELLO", str(protocol), "SETNAME", "again", "AUTH", "default", "x"),
        ("CONFIG", "SET", "requirepass", "secret", "maxmemory-samples", "5"),
        ("AUTH", "secret"),
        ("CONFIG", "SET", "REQUIREPASS", ""),
        ("ACL", "SETUSER", "it-bob", ">secret", "on"),
        ("ACL", "SETUSER", "it-bob", "reset"),
        # MIGRATE's AUTH and AUTH2 secrets, up to KEYS or a bad option (missing keys: NOKEY)
        ("MIGRATE", "h", "1", "nokey", "0", "10", "COPY", "AUTH", "secret", "REPLACE"),
        ("MIGRATE", "h", "1", "", "0", "10", "AUTH2", "user", "secret", "KEYS", "AUTH", "x"),
        ("MIGRATE", "h", "1", "nokey", "0", "10", "AUTH", "secret", "FOO", "AUTH", "secret"),
        ("MIGRATE", "h", "1", "nokey", "0", "10", "AUTH2", "user"),
        cmd("SLOWLOG", "GET", "-1", compare=SLOWLOG),
    ])


def test_slowlog_threshold_and_length(redis_oracle, cxl):
    diff(redis_oracle, cxl, 2, [
        ("CONFIG", "SET", "slowlog-log-slower-than", "100000"),
        ("SLOWLOG", "RESET"),
        ("SET", "fast", "1"),
        ("DEBUG", "SLEEP", "0.15"),
        cmd("SLOWLOG", "GET", compare=SLOWLOG),
        ("CONFIG", "SET", "slowlog-log-slower-than", "-1"),
        ("DEBUG", "SLEEP", "0"),
        ("SLOWLOG", "LEN"),
        ("CONFIG", "SET", "slowlog-log-slower-than", "0"),
        ("CONFIG", "SET", "slowlog-max-len", "3"),
        ("SET", "a", "1"),
        ("SET", "b", "2"),
        ("SET", "c", "3"),
        ("SLOWLOG", "LEN"),
        cmd("SLOWLOG", "GET", compare=SLOWLOG),
        ("CONFIG", "SET", "slowlog-max-len", "0"),
        ("SLOWLOG", "LEN"),
    ])
    slow = parse_reply(_ask(cxl, "SLOWLOG", "GET"))
    assert slow == []


def _ask(server, *args):
    with raw_connection(server.port) as conn:
        return conn.request(*args)


# ------------------------------------------------------------ LATENCY

def latency_latest(argv, reply):
    # [event, unix time, latest ms, all-time max ms]: the times and latencies belong to
    # each process; that they are sane and consistent must agree.
    now = time.time()
    return sorted((event, abs(now - when) < 60, latest >= 50, worst >= latest)
                  for event, when, latest, worst in parse_reply(reply))


def latency_history(argv, reply):
    # One sample a second: two sleeps may fall in one second or straddle two.
    now = time.time()
    return sorted({(abs(now - when) < 60, ms >= 50) for when, ms in parse_reply(reply)})


def graph_header(argv, reply):
    text = _info_text(reply)
    first, rule = text.split("\n")[:2]
    return re.sub(r"[0-9]+", "N", first), rule


def test_latency_monitor(redis_oracle, cxl, protocol):
    diff(redis_oracle, cxl, protocol, [
        ("LATENCY", "LATEST"),
        ("LATENCY", "HISTORY", "command"),
        ("LATENCY", "RESET"),
        ("LATENCY", "GRAPH", "command"),
        ("DEBUG", "SLEEP", "0.06"),              # the monitor is off: nothing recorded
        ("LATENCY", "LATEST"),
        ("CONFIG", "SET", "latency-monitor-threshold", "50"),
        ("DEBUG", "SLEEP", "0"),                 # under the threshold
        ("LATENCY", "LATEST"),
        ("DEBUG", "SLEEP", "0.06"),
        ("DEBUG", "SLEEP", "0.07"),
        cmd("LATENCY", "LATEST", compare=normalised(latency_latest)),
        cmd("LATENCY", "HISTORY", "command", compare=normalised(latency_history)),
        ("LATENCY", "HISTORY", "nosuchevent"),
        cmd("LATENCY", "GRAPH", "command", compare=normalised(graph_header)),
        ("LATENCY", "GRAPH", "nosuchevent"),
        ("LATENCY", "RESET", "nosuchevent", "command", "command"),
        ("LATENCY", "LATEST"),
        ("DEBUG", "SLEEP", "0.06"),
        ("LATENCY", "RESET"),
        ("LATENCY", "RESET"),
        ("LATENCY", "HELP"),
    ])


def histogram_shape(argv, reply):
    # Which commands, their call counts, and buckets of increasing bounds (in µs: Redis's are
    # near powers of two, cxlredis's exactly) whose cumulative counts end at the calls; the
    # bucket each call fell in varies.
    shape = []
    for name, fields in _pairs(parse_reply(reply)):
        fields = dict(_pairs(fields))
        buckets = _pairs(fields[b"histogram_usec"])
        bounds = [bound for bound, _ in buckets]
        counts = [count for _, count in buckets]
        shape.append((name, fields[b"calls"], all(bound > 0 for bound in bounds),
                      bounds == sorted(set(bounds)), counts == sorted(counts),
                      counts[-1] == fields[b"calls"]))
    return sorted(shape)    # a container's subcommands come in each server's table order


def _pairs(value):
    if isinstance(value, dict):
        return list(value.items())
    return list(zip(value[0::2], value[1::2]))


def test_latency_histogram(redis_oracle, cxl, protocol):
    histogram = normalised(histogram_shape)
    diff(redis_oracle, cxl, protocol, [
        ("CONFIG", "RESETSTAT"),
        ("SET", "a", "1"),
        ("SET", "b", "2"),
        ("GET", "a"),
        ("CONFIG", "GET", "maxmemory"),
        cmd("LATENCY", "HISTOGRAM", "set", "GET", "nosuch", "set", compare=histogram),
        cmd("LATENCY", "HISTOGRAM", "config", compare=histogram),
        cmd("LATENCY", "HISTOGRAM", "CONFIG|GET", compare=histogram),
        ("LATENCY", "HISTOGRAM", "nosuch", "client|nosuch"),
    ])


# ------------------------------------------------------------ INFO latencystats

def latencystats_fields(argv, reply):
    # Each command's line and its percentile names; each value is a latency in µs with
    # three decimals (the value itself is each process's timing).
    lines = [line for line in _info_text(reply).split("\r\n") if line]
    shape = []
    for line in lines:
        if line.startswith("#"):
            shape.append(line)
            continue
        name, _, value = line.partition(":")
        fields = [field.split("=") for field in value.split(",")] if value else []
        shape.append((name, [(key, bool(re.fullmatch(r"[0-9]+\.[0-9]{3}", number)))
                             for key, number in fields]))
    return sorted(shape, key=str)


LATENCYSTATS = normalised(latencystats_fields)


def test_info_latencystats(redis_oracle, cxl, protocol):
    diff(redis_oracle, cxl, protocol, [
        ("CONFIG", "RESETSTAT"),
        ("SET", "a", "1"),
        ("GET", "a"),
        ("GET", "missing"),
        ("INCR", "a"),
        cmd("INFO", "latencystats", compare=LATENCYSTATS),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", "0 12.5 100 33.3333333"),
        cmd("INFO", "LATENCYSTATS", compare=LATENCYSTATS),
        ("CONFIG", "SET", "latency-tracking-info-percentiles", ""),
        cmd("INFO", "latencystats", compare=LATENCYSTATS),
        ("CONFIG", "SET", "latency-tracking", "no"),
        ("INFO", "latencystats"),
        ("CONFIG", "SET", "latency-tracking", "yes"),
        ("CONFIG", "RESETSTAT"),
        cmd("INFO", "latencystats", compare=LATENCYSTATS),
    ])


def test_latencystats_is_in_all_but_not_default(redis_oracle, cxl):
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            for request, present in ((("INFO",), False), (("INFO", "default"), False),
                                     (("INFO", "all"), True), (("INFO", "everything"), True),
                                     (("INFO", "latencystats"), True)):
                text = _info_text(conn.request(*request))
                assert ("# Latencystats\r\n" in text) == present, (server.kind, request)


@pytest.mark.parametrize("value", [
    "50 99 99.9", "50.0 99 99.90 0 100", "", "101", "-1", "abc", "1e1 0x10", "1  2", " 5", "5 ",
    "nan", "inf", "-inf", "33.3333333 0.0000001 12.5", "1e400", "1e-400", "1e-310", "+5", ".5",
    "5.", "0x1p-2000", "0x1.8p3", "1_0", "5e+1", "-0", "100.0000001", "99.99999999999999999999",
    "101 abc", "abc 101",
])
def test_percentiles_option_like_redis(redis_oracle, cxl, value):
    diff(redis_oracle, cxl, 2, [
        ("CONFIG", "SET", "latency-tracking-info-percentiles", value),
        ("CONFIG", "GET", "latency-tracking-info-percentiles"),
    ])


def test_latency_tracking_option_like_redis(redis_oracle, cxl):
    diff(redis_oracle, cxl, 2, [
        ("CONFIG", "GET", "latency-tracking*"),
        ("CONFIG", "SET", "latency-tracking", "maybe"),
        ("CONFIG", "SET", "latency-tracking", "NO"),
        ("CONFIG", "GET", "latency-tracking"),
    ])


# ------------------------------------------------------------ CLIENT LIST / KILL

def named_clients(argv, reply):
    """CLIENT LIST lines of the connections this test named (it-*), by name, each with its
    fields in order and what belongs to each process masked."""
    text = _info_text(reply)
    clients = []
    for line in text.strip("\n").split("\n"):
        fields = [item.partition("=")[::2] for item in line.split(" ")]
        names = dict(fields)
        if not names.get("name", "").startswith("it-"):
            continue
        clients.append([(key, "<varies>" if key in CLIENT_INFO_VARYING else value)
                        for key, value in fields
                        if key not in CLIENT_INFO_NEWER and key not in CLIENT_INFO_OURS])
    return sorted(clients)


CLIENTS = normalised(named_clients)


def test_client_list_fields_and_flags(redis_oracle, cxl, protocol):
    diff(redis_oracle, cxl, protocol, [
        cmd("CLIENT", "SETNAME", "it-multi", conn=1),
        cmd("MULTI", conn=1),
        cmd("CLIENT", "SETNAME", "it-watch", conn=2),
        cmd("WATCH", "k", conn=2),
        cmd("CLIENT", "SETNAME", "it-noevict", conn=3),
        cmd("CLIENT", "NO-EVICT", "on", conn=3),
        cmd("SELECT", "2", conn=3),
        cmd("CLIENT", "SETNAME", "it-monitor", conn=4),
        cmd("MONITOR", conn=4),
        ("CLIENT", "SETNAME", "it-caller"),
        ("SET", "k", "touched"),                # it-watch's watched key changed: flag d
        cmd("CLIENT", "LIST", compare=CLIENTS),
        cmd("CLIENT", "LIST", "TYPE", "normal", compare=CLIENTS),
        cmd("CLIENT", "LIST", "TYPE", "NORMAL", compare=CLIENTS),
        ("CLIENT", "LIST", "TYPE", "pubsub"),
        ("CLIENT", "LIST", "TYPE", "master"),
        ("CLIENT", "LIST", "TYPE", "replica"),
        ("CLIENT", "LIST", "TYPE", "slave"),
        ("CLIENT", "LIST", "TYPE", "foo"),
        ("CLIENT", "LIST", "TYPE"),
        ("CLIENT", "LIST", "TYPE", "normal", "ID", "1"),
        ("CLIENT", "LIST", "ID"),
        ("CLIENT", "LIST", "ID", "0"),
        ("CLIENT", "LIST", "ID", "-1", "999999"),
        ("CLIENT", "LIST", "ID", "1", "abc"),
        ("CLIENT", "LIST", "ID", "1", "TYPE", "normal"),
        ("CLIENT", "LIST", "foo"),
        cmd("CLIENT", "INFO", conn=2),
    ])


def test_client_kill_errors_and_counts(redis_oracle, cxl, protocol):
    diff(redis_oracle, cxl, protocol, [
        ("ACL", "SETUSER", "it-victim", "on", ">pw", "+@all", "~*"),
        cmd("AUTH", "it-victim", "pw", conn=1),
        cmd("AUTH", "it-victim", "pw", conn=2),
        ("CLIENT", "KILL", "1.2.3.4:5"),
        ("CLIENT", "KILL", "id"),
        ("CLIENT", "KILL", "ID", "0"),
        ("CLIENT", "KILL", "ID", "-5"),
        ("CLIENT", "KILL", "ID", "abc"),
        ("CLIENT", "KILL", "ID", "999999"),
        ("CLIENT", "KILL", "ID", "1", "ID", "999999"),
        ("CLIENT", "KILL", "TYPE", "foo"),
        ("CLIENT", "KILL", "TYPE", "master"),
        ("CLIENT", "KILL", "TYPE", "pubsub"),
        ("CLIENT", "KILL", "USER", "nobody"),
        ("CLIENT", "KILL", "SKIPME", "maybe"),
        ("CLIENT", "KILL", "ADDR", "1.2.3.4:5"),
        ("CLIENT", "KILL", "LADDR", "1.2.3.4:5"),
        ("CLIENT", "KILL", "ADDR", "1.2.3.4:5", "foo"),
        ("CLIENT", "KILL", "ID", "1", "TYPE"),
        ("CLIENT", "KILL", "TYPE", "foo", "ID", "0"),
        ("CLIENT", "KILL", "ID", "0", "TYPE", "foo"),
        ("CLIENT", "KILL", "FOO", "bar"),
        ("CLIENT", "KILL", "USER", "it-victim", "TYPE", "pubsub"),
        ("CLIENT", "KILL", "USER", "it-victim", "SKIPME", "yes"),
        cmd("PING", conn=1, closes=True),
        cmd("PING", conn=2, closes=True),
        ("CLIENT", "KILL", "USER", "it-victim"),
        ("PING",),
    ])


def test_client_kill_skipme_no_kills_the_caller(redis_oracle, cxl):
    diff(redis_oracle, cxl, 2, [
        ("ACL", "SETUSER", "it-victim", "on", ">pw", "+@all", "~*"),
        ("AUTH", "it-victim", "pw"),
        cmd("CLIENT", "KILL", "USER", "it-victim", "SKIPME", "no", closes=True),
    ])


# ------------------------------------------------------------ MONITOR

LINE = re.compile(rb'\+([0-9]+)\.([0-9]{6}) \[([0-9]+) ([^\]]+)\] (.*)\r\n', re.S)


def monitor_line(reply):
    """(db, client address with the port masked, arguments) of one monitor line."""
    found = LINE.fullmatch(reply)
    assert found, reply
    seconds, _, db, origin, args = found.groups()
    assert abs(int(seconds) - time.time()) < 60
    return db, re.sub(rb":[0-9]+$", b":<port>", origin), args


def monitored(server, protocol, actions):
    """Connection 0 in MONITOR mode while connections 1 and 2 run actions = [(conn, args)]:
    the lines it receives, then its own PING's reply and line."""
    conns = [raw_connection(server.port) for _ in range(3)]
    try:
        if protocol == 3:
            for conn in conns:
                conn.request("HELLO", "3")
        assert conns[0].request("MONITOR") == b"+OK\r\n"
        for index, args in actions:
            conns[index].request(*args)
        # The monitor's own PING: its reply comes after every line fed before it.
        conns[0].send(b"*1\r\n$4\r\nPING\r\n")
        lines = []
        while (reply := conns[0].read_reply()) != b"+PONG\r\n":
            lines.append(monitor_line(reply))
        return lines + [monitor_line(conns[0].read_reply())]
    finally:
        for conn in conns:
            conn.close()


MONITORED = [
    (1, ("SET", "k", "v")),
    (1, ("SET", "bin", b"\x00\x01\x07\x08\t\n\r\"\\ '\x7f\x80\xff~")),
    (1, ("MULTI",)), (1, ("SET", "a", "1")), (1, ("INCR", "a")), (1, ("GET", "a")), (1, ("EXEC",)),
    (1, ("MULTI",)), (1, ("NOSUCH",)), (1, ("EXEC",)),
    (1, ("INCR", "k")),                               # fails in the handler: still shown
    (1, ("GET",)), (1, ("NOSUCH",)),                  # refused before running: not shown
    (2, ("SELECT", "5")), (2, ("GET", "in-db-5")),
    (1, ("AUTH", "secret")), (1, ("AUTH", "u", "secret")),
    (1, ("HELLO", "2", "AUTH", "default", "secret")), (1, ("HELLO", "2")),
    (1, ("CONFIG", "GET", "maxmemory")), (1, ("CLIENT", "LIST")), (1, ("SLOWLOG", "LEN")),
    (1, ("CLIENT", "ID")), (1, ("ACL", "WHOAMI")), (1, ("TIME",)),
    (1, ("MONITOR",)),                                # admin: not shown
]


def test_monitor_lines(redis_oracle, cxl, protocol):
    assert monitored(cxl, protocol, MONITORED) == monitored(redis_oracle, protocol, MONITORED)


EVERY_BYTE = bytes(range(256))
BINARY = random.Random(11).randbytes(300 * 1024)     # above large-value-threshold: an arena slot
MONITORED_BINARY = [
    (1, ("SET", "every-byte", EVERY_BYTE)),
    (1, ("ECHO", EVERY_BYTE[::-1])),
    (1, ("MSET", "a", b"\x00", "b", b"\\x41\"")),
    (1, ("SET", "big", BINARY)),                 # received into a slot, shown as stored
    (1, ("ECHO", BINARY[::-1])),                 # received into a buffer of its own
    (1, ("SET", "big", BINARY[:1000] * 300)),    # replaces the entry it shows
    (2, ("HSET", "h", EVERY_BYTE, BINARY[:70000])),
]


def test_monitor_lines_of_binary_and_large_arguments(redis_oracle, cxl, protocol):
    """sdscatrepr of every byte value, and of arguments of hundreds of KiB in full, as
    Redis 7.0 writes them (it never cuts a MONITOR line short)."""
    ours = monitored(cxl, protocol, MONITORED_BINARY)
    assert ours == monitored(redis_oracle, protocol, MONITORED_BINARY)
    assert len(ours[4][2]) > 2 * len(BINARY)      # the whole argument, escaped (about 2.9 x)


def test_monitor_own_commands_and_repeated_monitor(redis_oracle, cxl):
    # MONITOR again sends nothing back, so the next reply the monitor reads is ECHO's.
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            assert conn.request("MONITOR") == b"+OK\r\n"
            conn.send(b"*1\r\n$7\r\nMONITOR\r\n")
            assert conn.request("ECHO", "own") == b"$3\r\nown\r\n"
            assert monitor_line(conn.read_reply()) == (b"0", b"127.0.0.1:<port>", b'"ECHO" "own"')


def test_monitor_in_a_transaction_and_reset(redis_oracle, cxl, protocol):
    diff(redis_oracle, cxl, protocol, [
        ("MULTI",),
        ("MONITOR",),
        ("EXEC",),
        cmd("MONITOR", conn=1),
        cmd("RESET", conn=1),                  # no longer a monitor...
        ("SET", "k", "v"),                     # ...so nothing is fed to it
        cmd("PING", conn=1),
        cmd("MONITOR", conn=2),
        cmd("QUIT", conn=2, closes=True),
        ("PING",),
    ])


def test_a_monitor_may_not_touch_the_keyspace(redis_oracle, cxl):
    # Redis treats a MONITOR connection as a replica: keyspace commands are refused
    # (and so never fed back to it), others still answer.
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            assert conn.request("MONITOR") == b"+OK\r\n"
            assert conn.request("GET", "k") == b"-ERR Replica can't interact with the keyspace\r\n"
            assert conn.request("SET", "k", "v") == b"-ERR Replica can't interact with the keyspace\r\n"
            assert conn.request("ECHO", "x") == b"$1\r\nx\r\n"


def test_client_list_shows_the_command_looked_up(redis_oracle, cxl):
    # cmd= is the last command looked up: a queued one inside MULTI, NULL after an unknown one
    def shown(server, steps):
        with raw_connection(server.port) as conn, raw_connection(server.port) as viewer:
            own_id = conn.request("CLIENT", "ID")[1:-2].decode()
            for step in steps:
                conn.request(*step)
            listing = viewer.request("CLIENT", "LIST", "ID", own_id)
            return re.search(rb"cmd=(\S+)", listing).group(1)
    for steps in ([("NOSUCHCOMMAND",)], [("MULTI",), ("SET", "k", "v")], [("GET", "a", "b")],
                  [("GET", "k")]):
        assert shown(cxl, steps) == shown(redis_oracle, steps), steps
