"""cxlredis.monitoring and INFO latencystats, without a server: the slow log's argument
form, sdscatrepr, redaction, the latency monitor's samples and the thresholds that
decide what dispatch hands over."""
import time
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cxlredis.clients import Flushes
from cxlredis.config import Config
from cxlredis.metrics import LATENCY_BUCKETS, SECTIONS
from cxlredis._resp import monitor_line, quoted
from cxlredis.monitoring import (LATENCY_HISTORY, NEVER, LatencyMonitor, Monitoring, SlowLog,
                                 shown_argv, slowlog_args)

SPECIAL = {0x5C: b"\\\\", 0x22: b'\\"', 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t", 0x07: b"\\a",
           0x08: b"\\b"}


def sdscatrepr(data):
    """Redis's sdscatrepr, byte by byte."""
    return b'"' + b"".join(SPECIAL.get(b) or (bytes([b]) if 0x20 <= b < 0x7F else b"\\x%02x" % b)
                           for b in data) + b'"'


def test_quoted_every_byte():
    for byte in range(256):
        assert quoted(bytes([byte])) == sdscatrepr(bytes([byte])), byte
    assert quoted(b"") == b'""'
    assert quoted(bytearray(b"plain text")) == b'"plain text"'


@given(st.binary(max_size=64) | st.text(alphabet='\\\a\b"x07\n', max_size=30).map(str.encode))
def test_quoted_is_sdscatrepr(data):
    assert quoted(data) == sdscatrepr(data)


@given(st.binary(max_size=20), st.lists(st.binary(max_size=64), max_size=6))
def test_monitor_line_is_head_and_quoted_arguments(head, args):
    expected = head + b"".join(b" " + sdscatrepr(arg) for arg in args) + b"\r\n"
    assert monitor_line(head, args) == expected
    assert monitor_line(head, [memoryview(bytearray(arg)) for arg in args]) == expected


def test_monitor_line_of_a_64_mib_argument_is_complete():
    data = bytes(range(256)) * (256 * 1024)      # 64 MiB, every byte value
    line = monitor_line(b"+1.000000 [0 127.0.0.1:1]", [b"SET", b"k", data])
    one_period = sdscatrepr(bytes(range(256)))[1:-1]
    assert line == b'+1.000000 [0 127.0.0.1:1] "SET" "k" "' + one_period * (256 * 1024) + b'"\r\n'


def test_slowlog_args_keep_32_arguments_of_128_bytes():
    assert slowlog_args([b"GET", b"k"]) == [b"GET", b"k"]
    assert slowlog_args([b"x" * 128, b"y" * 129, bytearray(b"z" * 300)]) == [
        b"x" * 128, b"y" * 128 + b"... (1 more bytes)", b"z" * 128 + b"... (172 more bytes)"]
    argv = [b"DEL"] + [b"k%d" % i for i in range(31)]
    assert slowlog_args(argv) == argv
    argv.append(b"one-more")
    assert slowlog_args(argv) == argv[:31] + [b"... (2 more arguments)"]


def spec(name, flags=""):
    return SimpleNamespace(name=name, flags=tuple(flags.split()))


@pytest.mark.parametrize("name, argv, shown", [
    ("auth", [b"AUTH", b"pw"], [b"AUTH", b"(redacted)"]),
    ("auth", [b"auth", b"user", b"pw"], [b"auth", b"(redacted)", b"(redacted)"]),
    ("hello", [b"HELLO", b"3", b"AUTH", b"u", b"p", b"SETNAME", b"n"],
     [b"HELLO", b"3", b"AUTH", b"(redacted)", b"(redacted)", b"SETNAME", b"n"]),
    ("hello", [b"HELLO", b"3", b"setname", b"n", b"auth", b"u", b"p"],
     [b"HELLO", b"3", b"setname", b"n", b"auth", b"(redacted)", b"(redacted)"]),
    ("hello", [b"HELLO", b"3", b"AUTH", b"u"], [b"HELLO", b"3", b"AUTH", b"u"]),
    ("acl|setuser", [b"ACL", b"SETUSER", b"bob", b">pw"],
     [b"ACL", b"SETUSER", b"(redacted)", b"(redacted)"]),
    ("config|set", [b"CONFIG", b"SET", b"maxmemory", b"1", b"RequirePass", b"pw"],
     [b"CONFIG", b"SET", b"maxmemory", b"1", b"RequirePass", b"(redacted)"]),
    ("config|set", [b"CONFIG", b"SET", b"tls-key-file-pass", b"pw"],      # as Redis 7.0
     [b"CONFIG", b"SET", b"tls-key-file-pass", b"pw"]),
    ("set", [b"SET", b"auth", b"requirepass"], [b"SET", b"auth", b"requirepass"]),
])
def test_secrets_are_redacted_as_redis_does(name, argv, shown):
    assert shown_argv(spec(name), argv) == shown


def test_slowlog_keeps_the_newest_and_scopes_tenants():
    log = SlowLog(3)
    for i, tenant in enumerate(["a", None, "a", "b", None]):
        client = SimpleNamespace(addr="127.0.0.1:1", name=b"n", tenant=tenant)
        log.push(client, [b"SET", b"k%d" % i], i)
    assert [e.id for e in log.visible(None)] == [4, 3, 2]
    assert [e.args[1] for e in log.visible("a")] == [b"k2"]
    log.reset("a")
    assert [e.id for e in log.visible(None)] == [4, 3]
    log.max_len = 0
    log.push(client, [b"PING"], 0)
    assert log.visible(None) == [] and log.next_id == 6


def test_latency_samples_one_per_second_with_the_worst():
    latency = LatencyMonitor(threshold_ms=10)
    latency.add("command", 9)
    assert latency.events == {}
    latency.add("command", 15)
    latency.add("command", 40)
    latency.add("command", 12)
    series = latency.events["command"]
    assert len(series.samples) == 1 and series.samples[0][1] == 40 and series.max == 40
    series.samples[0][0] -= 1           # as if it came a second ago
    latency.add("command", 11)
    assert [ms for _, ms in series.samples] == [40, 11] and series.max == 40
    for second in range(LATENCY_HISTORY + 5):
        series.samples[-1][0] -= 1
        latency.add("command", 20)
    assert len(series.samples) == LATENCY_HISTORY
    assert latency.reset(["command", "nosuch", "command"]) == 1 and latency.events == {}


def test_timed_records_an_event_and_returns_the_result():
    latency = LatencyMonitor(threshold_ms=5)
    assert latency.timed("expire-cycle", lambda n: time.sleep(0.01) or n * 2, 21) == 42
    assert latency.events["expire-cycle"].max >= 10
    with pytest.raises(ZeroDivisionError):
        latency.timed("eviction-cycle", lambda: 1 / 0)
    assert "eviction-cycle" not in latency.events     # too fast to record, but timed


class Store:
    def __init__(self):
        self.evictions = 0

    def evict_to_maxmemory(self):
        self.evictions += 1
        time.sleep(0.003)
        return True


def monitoring(*argv):
    return Monitoring(Config.load(list(argv), environ={}), Flushes())


def test_what_dispatch_hands_over():
    m = monitoring()
    assert m.watch_from_us == 10000
    m.config.set([("slowlog-log-slower-than", "-1")])
    assert m.watch_from_us == NEVER
    m.config.set([("latency-monitor-threshold", "2")])
    assert m.watch_from_us == 2000
    connection = SimpleNamespace(closing=False, session=SimpleNamespace(id=1, tenant=None))
    m.monitors.add(connection)
    assert m.watch_from_us == 0
    m.monitors.discard(connection)
    assert m.watch_from_us == 2000
    m.config.set([("slowlog-log-slower-than", "100"), ("latency-monitor-threshold", "0")])
    assert m.watch_from_us == 100


def test_fast_commands_and_evictions_are_events_of_their_own():
    m = monitoring("--latency-monitor-threshold", "1", "--slowlog-log-slower-than", "-1")
    client = SimpleNamespace(addr="127.0.0.1:1", name=b"", tenant=None)
    m.after_call(client, spec("get", "readonly fast"), [b"GET", b"k"], 3000)
    m.after_call(client, spec("keys", "readonly"), [b"KEYS", b"*"], 1500)
    m.after_call(client, spec("exec", "skip_slowlog"), [b"EXEC"], 999)
    worst = {name: event.max for name, event in m.latency.events.items()}
    assert worst == {"fast-command": 3, "command": 1}
    assert m.slowlog.visible(None) == []
    arena = Store()
    assert m.evict_to_maxmemory(arena) is True and arena.evictions == 1
    assert m.latency.events["eviction-cycle"].max >= 3
    m.latency.reset()
    m.config.set([("latency-monitor-threshold", "0")])
    assert m.evict_to_maxmemory(arena) is True and arena.evictions == 2
    assert "eviction-cycle" not in m.latency.events       # not timed while the monitor is off


def test_exec_is_never_in_the_slow_log():
    m = monitoring("--slowlog-log-slower-than", "0")
    client = SimpleNamespace(addr="127.0.0.1:1", name=b"", tenant=None)
    m.after_call(client, spec("exec", "noscript loading stale skip_slowlog"), [b"EXEC"], 50)
    m.after_call(client, spec("auth", "fast no_auth"), [b"AUTH", b"pw"], 50)
    assert [e.args for e in m.slowlog.visible(None)] == [[b"AUTH", b"(redacted)"]]


def latencystats(buckets_by_command, percentiles=(50.0, 99.0, 99.9), tracking=True):
    commands = {}
    for name, filled in buckets_by_command.items():
        buckets = [0] * LATENCY_BUCKETS
        for index, count in filled.items():
            buckets[index] = count
        commands[name] = [sum(filled.values()), 0, 0, 0, buckets]
    server = SimpleNamespace(
        config={"latency-tracking": tracking, "latency-tracking-info-percentiles": percentiles},
        stats=SimpleNamespace(commands=commands))
    return dict(SECTIONS["latencystats"](server))


def test_percentiles_are_bucket_upper_bounds():
    stats = latencystats({"get": {0: 90, 3: 9, 10: 1}, "set": {5: 1}, "unused": {}})
    # 90 calls under 1 µs, 9 in [4, 8) µs, 1 in [512, 1024) µs
    assert stats == {"latency_percentiles_usec_get": "p50=1.000,p99=8.000,p99.9=1024.000",
                     "latency_percentiles_usec_set": "p50=32.000,p99=32.000,p99.9=32.000"}
    stats = latencystats({"get": {0: 90, 3: 9, 10: 1}}, percentiles=(0.0, 90.0, 90.5, 100.0))
    assert stats == {"latency_percentiles_usec_get": "p0=1.000,p90=1.000,p90.5=8.000,p100=1024.000"}
    assert latencystats({"get": {1: 1}}, percentiles=()) == {"latency_percentiles_usec_get": ""}
    assert latencystats({"get": {1: 1}}, tracking=False) == {}
