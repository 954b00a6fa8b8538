"""The C fast path for plain GET/SET (cxlredis._fastpath) must not get around
anything the general path enforces: ACL key patterns, tenant namespaces,
maxmemory, and what SLOWLOG, MONITOR and INFO commandstats observe."""
import random
import time

from conftest import ReplyTimeout, encode_command, raw_connection


def send_pipeline(conn, commands):
    conn.send(b"".join(encode_command(*args) for args in commands))
    return [conn.read_reply() for _ in commands]


def info_field(conn, section, name):
    text = conn.request("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)[name]


def test_acl_key_patterns_hold_in_a_pipeline(cxl_factory):
    server = cxl_factory()
    with raw_connection(server.port) as admin:
        assert admin.request("ACL", "SETUSER", "app", "on", ">pw", "~app:*", "+@all") == b"+OK\r\n"
        admin.request("SET", "secret", "s")
    with raw_connection(server.port) as conn:
        assert conn.request("AUTH", "app", "pw") == b"+OK\r\n"
        replies = send_pipeline(conn, [("SET", "app:1", "v"), ("GET", "app:1"), ("GET", "secret"),
                                       ("SET", "secret", "x"), ("GET", "app:1")])
    assert replies[:2] == [b"+OK\r\n", b"$1\r\nv\r\n"]
    assert replies[2].startswith(b"-NOPERM") and replies[3].startswith(b"-NOPERM")
    assert replies[4] == b"$1\r\nv\r\n"
    with raw_connection(server.port) as admin:
        assert admin.request("GET", "secret") == b"$1\r\ns\r\n"


def test_tenants_see_only_their_own_keys_in_a_pipeline(cxl_factory):
    server = cxl_factory()
    with raw_connection(server.port) as admin:
        for name in ("a", "b"):
            assert admin.request("ACL", "SETUSER", name, "on", f">{name}pw", "~*", "+@all") == b"+OK\r\n"
            assert admin.request("TENANT", "CREATE", f"t{name}", "USERS", name) == b"+OK\r\n"
    with raw_connection(server.port) as a, raw_connection(server.port) as b:
        a.request("AUTH", "a", "apw")
        b.request("AUTH", "b", "bpw")
        assert send_pipeline(a, [("SET", "k", "from-a"), ("GET", "k")])[1] == b"$6\r\nfrom-a\r\n"
        assert send_pipeline(b, [("GET", "k"), ("SET", "k", "from-b"), ("GET", "k")]) == [
            b"$-1\r\n", b"+OK\r\n", b"$6\r\nfrom-b\r\n"]
        assert a.request("GET", "k") == b"$6\r\nfrom-a\r\n"
    with raw_connection(server.port) as admin:
        assert admin.request("GET", "k") == b"$-1\r\n"


def test_noeviction_answers_oom_and_keeps_serving_reads(cxl_factory):
    server = cxl_factory(maxmemory="2mb", maxmemory_policy="noeviction")
    value = b"v" * 4000
    with raw_connection(server.port) as conn:
        replies = send_pipeline(conn, [("SET", f"k{i}", value) for i in range(1000)])
        assert replies[0] == b"+OK\r\n"
        assert replies[-1].startswith(b"-OOM command not allowed when used memory > 'maxmemory'")
        stored = replies.index(replies[-1])
        assert all(r == b"+OK\r\n" for r in replies[:stored])
        reads = send_pipeline(conn, [("GET", "k0"), ("GET", f"k{stored}"), ("GET", "k1")])
        assert reads == [b"$4000\r\n" + value + b"\r\n", b"$-1\r\n", b"$4000\r\n" + value + b"\r\n"]
        assert info_field(conn, "errorstats", "errorstat_OOM") == f"count={1000 - stored}"


def test_slowlog_monitor_and_commandstats_see_fast_commands(cxl_factory):
    """With a monitor attached, GET/SET take the general path (a monitor's own keyspace
    commands are refused there); without one, the fast path reports slow commands."""
    server = cxl_factory()
    with raw_connection(server.port) as conn, raw_connection(server.port) as monitor:
        assert monitor.request("MONITOR") == b"+OK\r\n"
        assert conn.request("CONFIG", "SET", "slowlog-log-slower-than", "0") == b"+OK\r\n"
        conn.request("SLOWLOG", "RESET")
        conn.request("CONFIG", "RESETSTAT")
        send_pipeline(conn, [("SET", "k", "v"), ("GET", "k"), ("get", "missing")])
        # CONFIG, SLOWLOG are admin commands: monitors never see them
        lines = [monitor.read_reply() for _ in range(3)]
        shown = [line.split(b"] ", 1)[1] for line in lines]
        assert shown == [b'"SET" "k" "v"\r\n', b'"GET" "k"\r\n', b'"get" "missing"\r\n']
        entries = conn.request("SLOWLOG", "GET", "10")
        for argv in (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
                     b"*2\r\n$3\r\nget\r\n$7\r\nmissing\r\n"):
            assert argv in entries
        stats = conn.request("INFO", "commandstats").decode()
        assert "cmdstat_get:calls=2," in stats and "cmdstat_set:calls=1," in stats
        latency = conn.request("INFO", "latencystats").decode()
        assert "latency_percentiles_usec_get:" in latency
    with raw_connection(server.port) as admin, raw_connection(server.port) as conn:
        # No monitor now, so the fast path runs these; a 60 kB copy takes over 1 µs.
        admin.request("CONFIG", "SET", "slowlog-log-slower-than", "1")
        admin.request("SLOWLOG", "RESET")
        big = b"b" * 60000
        assert send_pipeline(conn, [("SET", "big", big), ("GET", "big"), ("SET", "k", "v"),
                                    ("GET", "k")])[1] == b"$60000\r\n" + big + b"\r\n"
        entries = admin.request("SLOWLOG", "GET", "10")
        assert b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" in entries
        listing = admin.request("CLIENT", "LIST").decode()
        assert "cmd=client|list" in listing and "cmd=get" in listing


def test_a_pipeline_split_mid_command_is_served_whole(cxl_factory):
    server = cxl_factory()
    data = b"".join(encode_command("SET", f"k{i}", f"v{i}") + encode_command("GET", f"k{i}")
                    for i in range(200))
    with raw_connection(server.port) as conn:
        for start in range(0, len(data), 7):
            conn.send(data[start:start + 7])
        replies = [conn.read_reply() for _ in range(400)]
        try:
            extra = conn.read_reply(timeout=0.2)
        except ReplyTimeout:
            extra = None
    assert extra is None
    assert replies[1::2] == [b"$%d\r\nv%d\r\n" % (len(str(i)) + 1, i) for i in range(200)]


def test_fast_commands_see_the_wall_clock_and_leave_it_running(cxl_factory):
    """The fast path gives each command the wall clock it read when the command began
    (hold_clock): an EXPIRE it runs lands 100 s after now, and once it is done the
    general path reads a clock that runs again, so a key given 30 ms expires."""
    server = cxl_factory()
    with raw_connection(server.port) as conn:
        before = time.time() * 1000
        replies = send_pipeline(conn, [("SET", "k", "v"), ("EXPIRE", "k", "100"), ("GET", "k"),
                                       ("PEXPIRETIME", "k")])
        after = time.time() * 1000
        assert replies[:3] == [b"+OK\r\n", b":1\r\n", b"$1\r\nv\r\n"]
        expire_at = int(replies[3][1:])
        assert before + 100_000 - 1 <= expire_at <= after + 100_000 + 1
        for _ in range(3):
            send_pipeline(conn, [("INCR", "n"), ("TTL", "k")] * 50)
            assert conn.request("SET", "short", "v", "PX", "30") == b"+OK\r\n"
            time.sleep(0.06)
            assert conn.request("TYPE", "short") == b"+none\r\n"


def test_large_sets_and_gets_in_a_pipeline_leave_nothing_reserved_or_pinned(cxl_factory):
    """The fast path commits a SET's value where it was received (a SlotArg) and sends a
    large GET's value by reference: each counted as the general path counts it, and once
    the replies are read no block is left reserved or pinned."""
    server = cxl_factory()
    values = [bytes([65 + i]) * (300_000 + i) for i in range(8)]
    commands = []
    for i, value in enumerate(values):
        commands += [("SET", f"big{i}", value), ("GET", f"big{i}"), ("SET", "small", str(i)),
                     ("GET", f"big{max(i - 1, 0)}"), ("GET", "missing")]
    with raw_connection(server.port) as conn:
        conn.request("CONFIG", "RESETSTAT")
        replies = send_pipeline(conn, commands)
        for i, value in enumerate(values):
            previous = values[max(i - 1, 0)]
            assert replies[5 * i:5 * i + 5] == [
                b"+OK\r\n", b"$%d\r\n%s\r\n" % (len(value), value), b"+OK\r\n",
                b"$%d\r\n%s\r\n" % (len(previous), previous), b"$-1\r\n"]
        stats = conn.request("INFO", "commandstats").decode()
        assert "cmdstat_set:calls=16," in stats and "cmdstat_get:calls=24," in stats
        assert info_field(conn, "stats", "keyspace_hits") == "16"
        assert info_field(conn, "stats", "keyspace_misses") == "8"
        assert info_field(conn, "arena", "arena_reserved") == "0"
        assert info_field(conn, "arena", "arena_pinned") == "0"
        assert conn.request("DBSIZE") == b":9\r\n"
        assert conn.request("SELECT", "5") == b"+OK\r\n"
        assert send_pipeline(conn, [("SET", "in5", values[0]), ("DBSIZE",)]) == [b"+OK\r\n", b":1\r\n"]
        assert conn.request("SELECT", "0") == b"+OK\r\n"
        assert conn.request("EXISTS", "in5") == b":0\r\n"


def test_refused_writes_are_counted_once(cxl_factory):
    """A write the fast path cannot make room for is run again by the general path, which
    answers -OOM: the tenant's rejected writes and the command's commandstats count it once."""
    server = cxl_factory()
    with raw_connection(server.port) as admin:
        assert admin.request("ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all") == b"+OK\r\n"
        assert admin.request("TENANT", "CREATE", "small", "QUOTA", "1mb", "POLICY", "noeviction",
                             "USERS", "app") == b"+OK\r\n"
    value = b"v" * 4000
    with raw_connection(server.port) as conn:
        assert conn.request("AUTH", "app", "pw") == b"+OK\r\n"
        commands = [("SET", f"s{i}", value) for i in range(400)]
        commands += [("HSET", f"h{i}", "field", value) for i in range(20)]
        commands += [("INCR", f"n{i}") for i in range(20)]
        replies = send_pipeline(conn, commands)
        refused = [args[0] for args, reply in zip(commands, replies) if reply.startswith(b"-OOM ")]
        assert len(refused) > 40 and {"SET", "HSET", "INCR"} <= set(refused)
        assert all(reply.startswith((b"+OK", b":", b"-OOM ")) for reply in replies)
        stats = {name: dict(kv.split("=") for kv in info_field(conn, "commandstats", f"cmdstat_{name.lower()}")
                            .split(",")) for name in ("SET", "HSET", "INCR")}
    # As Redis counts an -OOM: rejected, not called and not failed.
    assert {name: (int(s["rejected_calls"]), int(s["failed_calls"]), int(s["calls"]))
            for name, s in stats.items()} == {
        name: (refused.count(name), 0, sum(args[0] == name for args in commands) - refused.count(name))
        for name in ("SET", "HSET", "INCR")}
    with raw_connection(server.port) as admin:
        info = admin.request("TENANT", "INFO", "small").decode()
    assert f"\r\nrejected_writes\r\n:{len(refused)}\r\n" in info


def test_a_big_value_fits_where_small_freed_blocks_wait_for_reuse(cxl_factory):
    """Freed small blocks wait unmerged on quick lists (ext/arena/heap.h). On a full
    arena whose small keys are then deleted in random order, a value that needs most of
    the heap must still fit: the allocator merges them back before it answers OOM. (The
    deletes and the SET go in one pipeline, and hz is 1, so that the cron, which merges
    them too, does not run in between.)"""
    server = cxl_factory(**{"arena-size": "32mb", "maxmemory-policy": "noeviction", "hz": "1"})
    value = b"v" * 1000
    stored = 0
    with raw_connection(server.port) as conn:
        while True:         # fill the heap to the last block
            replies = send_pipeline(conn, [("SET", f"k{stored + i}", value) for i in range(500)])
            ok = replies.count(b"+OK\r\n")
            stored += ok
            if ok < len(replies):
                assert replies[ok].startswith(b"-OOM"), replies[ok]
                break
        keys = [f"k{i}" for i in range(stored)]
        random.Random(7).shuffle(keys)
        big = stored * len(value) * 9 // 10
        replies = send_pipeline(conn, [("DEL", key) for key in keys] + [("SET", "big", b"b" * big)])
        assert replies == [b":1\r\n"] * stored + [b"+OK\r\n"]
        assert send_pipeline(conn, [("STRLEN", "big"), ("PING",)]) == [b":%d\r\n" % big, b"+PONG\r\n"]
