"""Expiry as time passes, on redis-server and cxlredis side by side.

The steps run in lockstep with pauses between them, so both servers see the
same elapsed time; remaining-time replies are compared with the tolerances of
diff_harness.COMPARATORS, and a few explicit checks allow for scheduling noise.
"""
import time

import pytest

from conftest import parse_reply, raw_connection
from diff_harness import cmd, pause, run_sequence, within

pytestmark = pytest.mark.usefixtures("flushed")


def test_ttl_counts_down(redis_oracle, cxl):
    run_sequence(redis_oracle, cxl, [
        ("SET", "k", "v", "EX", "5"),
        ("TTL", "k"),
        pause(1.2),
        # 5 s less 1.2 s: 4 s rounded, on both servers (1 s of tolerance).
        cmd("TTL", "k", compare=within(1)),
        ("PTTL", "k"),
        ("PEXPIRE", "k", "4000", "GT"),
        ("PEXPIRE", "k", "3000", "LT"),
        ("PTTL", "k"),
    ], 2, "ttl counts down")
    with raw_connection(cxl.port) as conn:
        remaining = parse_reply(conn.request("PTTL", "k"))
    assert 2000 < remaining <= 3000


def test_keys_expire_on_access(redis_oracle, cxl):
    run_sequence(redis_oracle, cxl, [
        ("SET", "short", "v", "PX", "200"),
        ("PSETEX", "short2", "200", "v"),
        ("SET", "long", "v", "EX", "100"),
        ("SET", "counter", "5", "PX", "200"),
        ("GET", "short"),
        ("DBSIZE",),
        pause(0.4),
        ("GET", "short"),
        ("EXISTS", "short2"),
        ("TTL", "short"),
        ("PTTL", "short2"),
        ("INCR", "counter"),
        ("TTL", "counter"),
        ("SET", "short", "again", "XX"),
        ("GET", "long"),
        ("DBSIZE",),
        ("KEYS", "*"),
    ], 2, "expire on access")


def test_expired_keys_are_invisible_to_every_command(redis_oracle, cxl):
    steps = [("MSET", *[x for i in range(8) for x in (f"k{i}", "1")])]
    steps += [("PEXPIRE", f"k{i}", "150") for i in range(8)]
    steps += [
        pause(0.3),
        ("RANDOMKEY",),
        ("STRLEN", "k0"),
        ("APPEND", "k1", "x"),
        ("GET", "k1"),
        ("GETRANGE", "k2", "0", "-1"),
        ("SETRANGE", "k3", "2", "x"),
        ("GET", "k3"),
        ("RENAME", "k4", "z"),
        ("COPY", "k5", "z"),
        ("MOVE", "k6", "1"),
        ("TYPE", "k7"),
        ("EXPIRETIME", "k0"),
        ("PERSIST", "k0"),
        ("SET", "k0", "new", "NX", "GET"),
        ("KEYS", "k*"),
    ]
    run_sequence(redis_oracle, cxl, steps, 3, "expired keys invisible")


def test_watch_and_expiry(redis_oracle, cxl):
    # A watched key that expires before EXEC counts as modified in Redis 7.0.
    run_sequence(redis_oracle, cxl, [
        ("SET", "w", "v", "PX", "150"),
        ("WATCH", "w"),
        pause(0.3),
        ("MULTI",),
        ("GET", "w"),
        ("EXEC",),
        ("WATCH", "w"),
        ("MULTI",),
        ("GET", "w"),
        ("EXEC",),
    ], 2, "watch and expiry")


@pytest.mark.slow
def test_idletime_grows(redis_oracle, cxl):
    run_sequence(redis_oracle, cxl, [("SET", "k", "v")], 2, "idletime setup")
    time.sleep(2.2)
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            idle = parse_reply(conn.request("OBJECT", "IDLETIME", "k"))
            # Redis's LRU clock has 1 s resolution: 2.2 s reads as 2 or 3.
            assert idle in (2, 3), f"{server!r} OBJECT IDLETIME = {idle!r}"
            conn.request("GET", "k")
            assert parse_reply(conn.request("OBJECT", "IDLETIME", "k")) in (0, 1)


def _wait_for_dbsize(server, expected, timeout):
    deadline = time.monotonic() + timeout
    with raw_connection(server.port) as conn:
        while True:
            size = parse_reply(conn.request("DBSIZE"))
            if size == expected or time.monotonic() > deadline:
                return size
            time.sleep(0.05)


@pytest.mark.slow
def test_active_expiry_removes_untouched_keys(redis_oracle, cxl):
    # No command touches these keys: only the background expiry cycle can
    # remove them.  Redis runs it ten times a second; allow a few seconds.
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            args = ["MSET"] + [x for i in range(300) for x in (f"v{i}", "1")]
            assert conn.request(*args) == b"+OK\r\n"
            for i in range(300):
                conn.request("PEXPIRE", f"v{i}", "100")
            conn.request("SET", "keep", "1")
    time.sleep(0.2)
    for server in (redis_oracle, cxl):
        assert _wait_for_dbsize(server, 1, timeout=5.0) == 1, f"{server!r} kept expired keys"
        with raw_connection(server.port) as conn:
            stats = conn.request("INFO", "stats").decode(errors="replace")
        assert "expired_keys:" in stats
        expired = int(stats.split("expired_keys:")[1].split("\r\n")[0])
        assert expired >= 300, f"{server!r} expired_keys={expired}"
