"""SLOWLOG, LATENCY, INFO latencystats, CLIENT LIST/INFO/KILL and MONITOR on a running
server: what the differential tests cannot compare (values that are cxlredis's own,
clients killed by address, unix sockets, tenants, output limits)."""
import re
import socket
import time

import pytest

from conftest import TARGET, parse_reply, raw_connection

ours_only = pytest.mark.skipif(TARGET == "redis", reason="cxlredis's own behaviour")

DEFAULTS = [("slowlog-log-slower-than", "10000"), ("slowlog-max-len", "128"),
            ("latency-monitor-threshold", "0"), ("latency-tracking", "yes"),
            ("latency-tracking-info-percentiles", "50 99 99.9")]
CLIENT_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub",
                 "ssub", "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl",
                 "oll", "omem", "tot-mem", "events", "cmd", "user", "redir", "resp"]
TENANT_CONF = ["user alice on >pw ~* &* +@all", "user bob on >pw ~* &* +@all",
               "tenant team-a users alice", "tenant team-b users bob"]


@pytest.fixture(autouse=True)
def defaults(cxl):
    def restore():
        with raw_connection(cxl.port) as conn:
            for name, value in DEFAULTS:
                assert conn.request("CONFIG", "SET", name, value) == b"+OK\r\n"
            assert conn.request("SLOWLOG", "RESET") == b"+OK\r\n"
            conn.request("LATENCY", "RESET")
    restore()
    yield
    restore()


def ask(conn, *args):
    return parse_reply(conn.request(*args))


def text(reply):
    return reply.decode() if isinstance(reply, bytes) else reply


def clients(conn, *filters):
    """CLIENT LIST as a list of {field: value} (ordered as sent)."""
    listing = text(ask(conn, "CLIENT", "LIST", *filters))
    return [dict(item.split("=", 1) for item in line.split(" ")) for line in listing.splitlines()]


def info_of(conn):
    return clients_line(text(ask(conn, "CLIENT", "INFO")))


def clients_line(line):
    return dict(item.split("=", 1) for item in line.strip().split(" "))


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


# ------------------------------------------------------------ SLOWLOG

def test_slowlog_entries_describe_each_command(cxl):
    with raw_connection(cxl.port) as conn:
        ask(conn, "CONFIG", "SET", "slowlog-log-slower-than", "0")
        ask(conn, "SLOWLOG", "RESET")
        ask(conn, "CLIENT", "SETNAME", "logged")
        ask(conn, "SET", "key", "value")
        me = info_of(conn)
        entries = ask(conn, "SLOWLOG", "GET")
    # newest first: CLIENT INFO, SET, CLIENT SETNAME, SLOWLOG RESET
    assert [e[3] for e in entries] == [[b"CLIENT", b"INFO"], [b"SET", b"key", b"value"],
                                       [b"CLIENT", b"SETNAME", b"logged"], [b"SLOWLOG", b"RESET"]]
    ids = [e[0] for e in entries]
    assert ids == list(range(ids[0], ids[0] - 4, -1))
    for ident, when, duration, args, addr, name in entries:
        assert abs(when - time.time()) < 5 and 0 <= duration < 1_000_000
        assert addr.decode() == me["addr"]
    # the name as it was when each command ran
    assert [e[5] for e in entries] == [b"logged", b"logged", b"logged", b""]


def test_slowlog_threshold_length_and_ids(cxl):
    with raw_connection(cxl.port) as conn:
        ask(conn, "CONFIG", "SET", "slowlog-log-slower-than", "40000")
        ask(conn, "SLOWLOG", "RESET")
        ask(conn, "SET", "fast", "1")
        ask(conn, "DEBUG", "SLEEP", "0.05")
        (entry,) = ask(conn, "SLOWLOG", "GET")
        assert entry[3] == [b"DEBUG", b"SLEEP", b"0.05"] and entry[2] >= 50_000
        first_id = entry[0]
        ask(conn, "CONFIG", "SET", "slowlog-log-slower-than", "0")
        ask(conn, "CONFIG", "SET", "slowlog-max-len", "2")
        for i in range(5):
            ask(conn, "SET", "k", str(i))
        assert ask(conn, "SLOWLOG", "LEN") == 2
        entries = ask(conn, "SLOWLOG", "GET", "-1")
        assert [e[3] for e in entries] == [[b"SLOWLOG", b"LEN"], [b"SET", b"k", b"4"]]
        ask(conn, "SLOWLOG", "RESET")
        ask(conn, "PING")
        (after_reset,) = ask(conn, "SLOWLOG", "GET", "1")
        assert after_reset[0] > first_id + 6        # ids keep counting across RESET
        ask(conn, "CONFIG", "SET", "slowlog-log-slower-than", "-1")
        ask(conn, "SLOWLOG", "RESET")
        ask(conn, "DEBUG", "SLEEP", "0.02")
        assert ask(conn, "SLOWLOG", "LEN") == 0


def test_slowlog_truncates_like_redis(cxl):
    with raw_connection(cxl.port) as conn:
        ask(conn, "CONFIG", "SET", "slowlog-log-slower-than", "0")
        ask(conn, "ECHO", b"x" * 128)
        ask(conn, "ECHO", b"y" * 129)
        ask(conn, "DEL", *[f"key{i}" for i in range(40)])
        ask(conn, "DEL", *[f"key{i}" for i in range(31)])
        entries = ask(conn, "SLOWLOG", "GET", "4")
    thirty_one, forty, long_arg, exact = (e[3] for e in entries)
    assert exact == [b"ECHO", b"x" * 128]
    assert long_arg == [b"ECHO", b"y" * 128 + b"... (1 more bytes)"]
    assert thirty_one == [b"DEL"] + [f"key{i}".encode() for i in range(31)]     # 32 kept whole
    assert forty == ([b"DEL"] + [f"key{i}".encode() for i in range(30)]
                     + [b"... (10 more arguments)"])


@ours_only
def test_slowlog_and_monitor_read_large_values_from_the_arena(cxl):
    big = bytes(range(256)) * 1024                  # 256 KiB: received into an arena slot
    printable = b"p" * 100_000
    with raw_connection(cxl.port) as monitor, raw_connection(cxl.port) as conn:
        ask(monitor, "MONITOR")
        ask(conn, "CONFIG", "SET", "slowlog-log-slower-than", "0")
        ask(conn, "SET", "big", big)
        ask(conn, "MSET", "same", big, "same", printable)   # the first value is gone at once
        second = ask(conn, "SLOWLOG", "GET", "2")[1]
        mset = ask(conn, "SLOWLOG", "GET", "3")[1]
        assert second[3] == [b"SET", b"big", big[:128] + b"... (262016 more bytes)"]
        replaced, kept = mset[3][2], mset[3][4]
        assert replaced.endswith(b"... (262016 more bytes)")
        assert replaced in (big[:128] + b"... (262016 more bytes)", b"... (262016 more bytes)")
        assert kept == printable[:128] + b"... (99872 more bytes)"
        line = monitor.read_reply(timeout=10)
        assert line.startswith(b"+") and line.endswith(b'"SET" "big" "' + _repr(big) + b'"\r\n')
        line = monitor.read_reply(timeout=10)
        assert line.endswith(b'"' + printable + b'"\r\n')


def _repr(data):
    """A plain sdscatrepr, byte by byte, to check the fast one against."""
    special = {0x5C: b"\\\\", 0x22: b'\\"', 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t",
               0x07: b"\\a", 0x08: b"\\b"}
    return b"".join(special.get(b) or (bytes([b]) if 0x20 <= b < 0x7F else b"\\x%02x" % b)
                    for b in data)


# ------------------------------------------------------------ LATENCY

def test_latency_monitor_records_slow_commands(cxl):
    with raw_connection(cxl.port) as conn:
        doctor = text(ask(conn, "LATENCY", "DOCTOR"))
        assert "disabled" in doctor
        ask(conn, "CONFIG", "SET", "latency-monitor-threshold", "20")
        ask(conn, "DEBUG", "SLEEP", "0.001")
        assert ask(conn, "LATENCY", "LATEST") == []
        ask(conn, "DEBUG", "SLEEP", "0.03")
        ask(conn, "DEBUG", "SLEEP", "0.05")
        (event, when, latest, worst), = ask(conn, "LATENCY", "LATEST")
        assert event == b"command" and abs(when - time.time()) < 5
        assert 20 <= latest <= worst and worst >= 50
        history = ask(conn, "LATENCY", "HISTORY", "command")
        assert 1 <= len(history) <= 2 and history[-1] == [when, latest]
        assert max(ms for _, ms in history) == worst
        report = text(ask(conn, "LATENCY", "DOCTOR"))
        assert "command:" in report and "slowlog" in report.lower()
        graph = text(ask(conn, "LATENCY", "GRAPH", "command")).split("\n")
        assert re.fullmatch(r"command - high \d+ ms, low \d+ ms \(all time high \d+ ms\)", graph[0])
        assert graph[1] == "-" * 80 and len(graph) > 4
        assert ask(conn, "LATENCY", "RESET", "command", "nosuch") == 1
        assert ask(conn, "LATENCY", "LATEST") == []
        assert "no latency spike" in text(ask(conn, "LATENCY", "DOCTOR")).lower()


@ours_only
def test_latency_histogram_buckets_are_powers_of_two(cxl):
    with raw_connection(cxl.port) as conn:
        ask(conn, "CONFIG", "RESETSTAT")
        for _ in range(20):
            ask(conn, "SET", "k", "v")
        ask(conn, "DEBUG", "SLEEP", "0.003")
        histograms = dict(zip(*[iter(ask(conn, "LATENCY", "HISTOGRAM", "set", "debug"))] * 2))
    for name, calls in ((b"set", 20), (b"debug", 1)):
        fields = dict(zip(*[iter(histograms[name])] * 2))
        assert fields[b"calls"] == calls
        buckets = fields[b"histogram_usec"]
        bounds, counts = buckets[0::2], buckets[1::2]
        assert all(b & (b - 1) == 0 for b in bounds) and counts[-1] == calls
    debug_bound = dict(zip(*[iter(histograms[b"debug"])] * 2))[b"histogram_usec"][0]
    assert debug_bound >= 4096          # 3 ms or more: the bucket up to 4096 µs, or a later one


# ------------------------------------------------------------ INFO latencystats

@ours_only
def test_info_latencystats(cxl):
    with raw_connection(cxl.port) as conn:
        ask(conn, "CONFIG", "RESETSTAT")
        for _ in range(50):
            ask(conn, "GET", "k")
        ask(conn, "DEBUG", "SLEEP", "0.002")
        stats = _latencystats(conn)
        get = stats["get"]
        assert list(get) == ["p50", "p99", "p99.9"]
        assert all(re.fullmatch(r"[0-9]+\.000", v) for v in get.values())
        values = [float(v) for v in get.values()]
        assert values == sorted(values)
        assert all(v >= 1 and int(v) & (int(v) - 1) == 0 for v in values)      # powers of two
        assert float(stats["debug"]["p50"]) >= 2048
        ask(conn, "CONFIG", "SET", "latency-tracking-info-percentiles", "0 100 25.5")
        assert list(_latencystats(conn)["get"]) == ["p0", "p100", "p25.5"]
        ask(conn, "CONFIG", "SET", "latency-tracking", "no")
        assert _latencystats(conn) == {}
        ask(conn, "CONFIG", "SET", "latency-tracking", "yes")
        ask(conn, "CONFIG", "RESETSTAT")
        assert set(_latencystats(conn)) == {"config|resetstat"}


def _latencystats(conn):
    body = text(ask(conn, "INFO", "latencystats")).split("\r\n")
    assert body[0] == "# Latencystats"
    stats = {}
    for line in filter(None, body[1:]):
        name, _, values = line.partition(":")
        stats[name.removeprefix("latency_percentiles_usec_")] = dict(
            v.split("=") for v in values.split(",")) if values else {}
    return stats


# ------------------------------------------------------------ CLIENT LIST / INFO

def test_client_list_fields_and_flags(cxl):
    with raw_connection(cxl.port) as me, raw_connection(cxl.port) as other, \
            raw_connection(unixsocket=cxl.unixsocket) as local, raw_connection(cxl.port) as monitor:
        ask(other, "CLIENT", "SETNAME", "other")
        ask(other, "WATCH", "watched")
        ask(other, "MULTI")
        ask(other, "CLIENT", "NO-EVICT", "on")       # queued: multi=1
        ask(local, "CLIENT", "SETNAME", "local")
        ask(local, "SELECT", "3")
        ask(monitor, "CLIENT", "SETNAME", "watcher")
        ask(monitor, "MONITOR")
        ask(me, "SET", "watched", "changed")
        listing = {c["name"]: c for c in clients(me)}
        mine = info_of(me)
    expected = CLIENT_FIELDS + (["lib-name", "lib-ver", "tenant"] if TARGET == "cxlredis" else [])
    assert all(list(c) == expected for c in listing.values())
    assert listing["other"]["flags"] == "xd" and listing["other"]["multi"] == "1"
    assert int(listing["other"]["multi-mem"]) >= len("CLIENTNO-EVICTon")
    assert listing["local"]["flags"] == "U" and listing["local"]["db"] == "3"
    assert listing["local"]["addr"] == listing["local"]["laddr"] == f"{cxl.unixsocket}:0"
    assert listing["watcher"]["flags"] == "O" and listing["watcher"]["cmd"] == "monitor"
    assert mine["cmd"] == "client|info" and mine["flags"] == "N"
    assert int(mine["argv-mem"]) >= len("CLIENTINFO") and mine["events"] == "r"
    if TARGET == "cxlredis":
        assert all(c["tenant"] == "" for c in listing.values())     # administrators


def test_client_list_buffer_fields_are_measured(cxl):
    """A client part-way through a command shows the bytes of it not yet parsed into
    arguments (qbuf: the unfinished value, as Redis counts them) and the room left
    for more (qbuf-free); one that does not read a large reply shows it pending (obl, oll or
    omem); tot-mem is at least their sum."""
    partial = b"*3\r\n$3\r\nSET\r\n$7\r\npartial\r\n$100\r\n" + b"x" * 40
    with raw_connection(cxl.port) as me, raw_connection(cxl.port) as sender, \
            raw_connection(cxl.port) as reader:
        ask(me, "SET", "big", "v" * (8 << 20))
        ask(sender, "CLIENT", "SETNAME", "sender")
        ask(reader, "CLIENT", "SETNAME", "reader")
        reader.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sender.send(partial)
        reader.send(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 4)
        wait_until(lambda: int({c["name"]: c for c in clients(me)}["reader"]["omem"])
                   + int({c["name"]: c for c in clients(me)}["reader"]["obl"]) > 0)
        listing = {c["name"]: c for c in clients(me)}
    sender, reader = listing["sender"], listing["reader"]
    assert int(sender["qbuf"]) == 40 and int(sender["qbuf-free"]) > 0
    assert int(sender["tot-mem"]) >= int(sender["qbuf"]) + int(sender["qbuf-free"])
    pending = int(reader["obl"]) + int(reader["omem"])
    assert pending > 0 and int(reader["tot-mem"]) >= pending
    assert "w" in reader["events"] or int(reader["obl"]) > 0


def test_client_list_filters(cxl):
    with raw_connection(cxl.port) as a, raw_connection(cxl.port) as b:
        ida, idb = ask(a, "CLIENT", "ID"), ask(b, "CLIENT", "ID")
        assert [int(c["id"]) for c in clients(a, "ID", idb, ida, idb, 0, 999999)] == [idb, ida, idb]
        ids = [int(c["id"]) for c in clients(a, "TYPE", "normal")]
        assert {ida, idb} <= set(ids) and ids == sorted(ids)
        assert clients(a, "TYPE", "pubsub") == [] and clients(a, "TYPE", "replica") == []


# ------------------------------------------------------------ CLIENT KILL

def test_client_kill_by_each_filter(cxl):
    with raw_connection(cxl.port) as admin:
        victims = [raw_connection(cxl.port) for _ in range(3)]
        try:
            ids = [ask(v, "CLIENT", "ID") for v in victims]
            addrs = [info_of(v)["addr"] for v in victims]
            assert ask(admin, "CLIENT", "KILL", "ID", ids[0]) == 1
            assert victims[0].is_closed()
            assert ask(admin, "CLIENT", "KILL", "ADDR", addrs[1], "SKIPME", "yes") == 1
            assert victims[1].is_closed()
            assert ask(admin, "CLIENT", "KILL", addrs[2]) == "OK"          # the old form
            assert victims[2].is_closed()
            assert ask(admin, "CLIENT", "KILL", addrs[2]) == "ERR No such client"
            assert ask(admin, "PING") == "PONG"
        finally:
            for v in victims:
                v.close()


def test_client_kill_by_local_address_and_type(cxl):
    with raw_connection(cxl.port) as admin, raw_connection(unixsocket=cxl.unixsocket) as local, \
            raw_connection(cxl.port) as tcp:
        ask(local, "PING")
        ask(tcp, "PING")
        assert ask(admin, "CLIENT", "KILL", "LADDR", f"{cxl.unixsocket}:0") == 1
        assert local.is_closed() and ask(tcp, "PING") == "PONG"
        killed = ask(admin, "CLIENT", "KILL", "TYPE", "normal")          # everyone but the caller
        assert killed >= 1 and tcp.is_closed() and ask(admin, "PING") == "PONG"


def test_client_kill_by_user_and_age(cxl):
    with raw_connection(cxl.port) as admin:
        ask(admin, "ACL", "SETUSER", "it-kill", "on", ">pw", "+@all", "~*")
        try:
            old = raw_connection(cxl.port)
            ask(old, "AUTH", "it-kill", "pw")
            time.sleep(2.1)
            young = raw_connection(cxl.port)
            ask(young, "AUTH", "it-kill", "pw")
            if TARGET == "cxlredis":     # MAXAGE is Redis 7.4's; the 7.0 oracle refuses it
                assert ask(admin, "CLIENT", "KILL", "USER", "it-kill", "MAXAGE", "1") == 1
                assert old.is_closed() and ask(young, "PING") == "PONG"
            assert ask(admin, "CLIENT", "KILL", "USER", "it-kill") >= 1
            assert young.is_closed()
        finally:
            ask(admin, "ACL", "DELUSER", "it-kill")


def test_client_kill_skipme_no_answers_before_closing(cxl):
    with raw_connection(cxl.port) as conn:
        me = ask(conn, "CLIENT", "ID")
        assert conn.request("CLIENT", "KILL", "ID", me, "SKIPME", "no") == b":1\r\n"
        assert conn.is_closed()


# ------------------------------------------------------------ MONITOR

def test_monitor_lines_name_the_client_and_its_db(cxl):
    with raw_connection(cxl.port) as monitor, raw_connection(cxl.port) as tcp, \
            raw_connection(unixsocket=cxl.unixsocket) as local:
        addr = info_of(tcp)["addr"]
        assert monitor.request("MONITOR") == b"+OK\r\n"
        ask(tcp, "SELECT", "2")
        ask(tcp, "SET", "k", "v")
        ask(local, "ECHO", "hi")
        lines = [monitor.read_reply() for _ in range(3)]
    head = r"\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] "
    assert re.fullmatch(head.encode() + rb'"SELECT" "2"\r\n', lines[0])
    found = [re.match(head.encode(), line).groups() for line in lines]
    assert [(db, origin) for _, _, db, origin in found] == [
        (b"2", addr.encode()), (b"2", addr.encode()), (b"0", f"unix:{cxl.unixsocket}".encode())]
    assert all(abs(int(seconds) - time.time()) < 5 for seconds, _, _, _ in found)
    assert lines[1].endswith(b'"SET" "k" "v"\r\n')


def test_monitor_ends_with_its_connection(cxl):
    with raw_connection(cxl.port) as conn:
        monitor = raw_connection(cxl.port)
        monitor_id = ask(monitor, "CLIENT", "ID")
        ask(monitor, "MONITOR")
        assert ask(conn, "CLIENT", "KILL", "ID", monitor_id) == 1
        assert monitor.is_closed()
        monitor.close()
        quitter = raw_connection(cxl.port)
        ask(quitter, "MONITOR")
        assert quitter.request("QUIT") == b"+OK\r\n" and quitter.is_closed()
        quitter.close()
        for _ in range(3):
            assert ask(conn, "SET", "k", "v") == "OK"
        assert wait_until(lambda: all("O" not in c["flags"] for c in clients(conn)))


def test_a_monitor_that_does_not_read_does_not_stall_the_server(cxl_factory):
    server = cxl_factory(**{"client-output-buffer-limit": "normal 256kb 0 0"})
    value = b"v" * 4096
    monitor = socket.create_connection(("127.0.0.1", server.port))
    monitor.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        monitor.sendall(b"*1\r\n$7\r\nMONITOR\r\n")
        with raw_connection(server.port) as writer:
            started = time.monotonic()
            for i in range(2000):                  # about 8 MB of monitor lines, never read
                assert writer.request("SET", f"k{i}", value) == b"+OK\r\n"
            assert time.monotonic() - started < 30
            # the monitor went over the hard limit and was closed; everyone else carries on
            assert wait_until(lambda: len(clients(writer)) == 1)
            assert ask(writer, "GET", "k1999") == value
    finally:
        monitor.close()


@ours_only
def test_tenants_see_only_their_own_clients_entries_and_commands(cxl_factory, tmp_path):
    conf = tmp_path / "tenants.conf"
    conf.write_text("\n".join(TENANT_CONF) + "\n")
    server = cxl_factory(conf=str(conf), **{"tenants-file": "", "slowlog-log-slower-than": "0"})
    with raw_connection(server.port) as admin, raw_connection(server.port) as alice, \
            raw_connection(server.port) as bob, raw_connection(server.port) as alice_monitor, \
            raw_connection(server.port) as admin_monitor:
        for conn, user in ((alice, "alice"), (bob, "bob"), (alice_monitor, "alice")):
            assert ask(conn, "AUTH", user, "pw") == "OK"
        ask(alice_monitor, "MONITOR")
        ask(admin_monitor, "MONITOR")
        ask(alice, "SET", "alice-key", "1")
        ask(bob, "SET", "bob-key", "2")
        ask(admin, "SET", "admin-key", "3")
        # alice's monitor: alice's commands only; the administrator's: everyone's
        alice_lines = _lines_until_pong(alice_monitor)
        admin_lines = _lines_until_pong(admin_monitor)
        assert [line.split(b"] ", 1)[1] for line in alice_lines] == [
            b'"SET" "alice-key" "1"\r\n', b'"PING"\r\n']
        assert any(b"bob-key" in line for line in admin_lines)
        assert any(b"alice-key" in line for line in admin_lines)
        # the slow log: alice sees her entries, the administrator all of them
        alice_args = [e[3] for e in ask(alice, "SLOWLOG", "GET", "-1")]
        assert [b"SET", b"alice-key", b"1"] in alice_args
        assert not any(b"bob-key" in args or b"admin-key" in args for args in alice_args)
        assert ask(alice, "SLOWLOG", "RESET") == "OK"
        assert [e[3] for e in ask(alice, "SLOWLOG", "GET", "-1")] == [[b"SLOWLOG", b"RESET"]]
        admin_args = [e[3] for e in ask(admin, "SLOWLOG", "GET", "-1")]
        assert [b"SET", b"bob-key", b"2"] in admin_args
        assert [b"SET", b"alice-key", b"1"] not in admin_args      # alice reset hers
        # CLIENT LIST / KILL: her own tenant's connections, the tenant= field naming it
        listed = clients(alice)
        assert {c["tenant"] for c in listed} == {"team-a"} and len(listed) == 2
        assert {c["tenant"] for c in clients(admin)} == {"", "team-a", "team-b"}
        bob_id = ask(bob, "CLIENT", "ID")
        assert ask(alice, "CLIENT", "KILL", "ID", bob_id) == 0
        assert ask(alice, "CLIENT", "KILL", info_of(bob)["addr"]) == "ERR No such client"
        assert ask(bob, "PING") == "PONG"


def _lines_until_pong(monitor):
    monitor.send(b"*1\r\n$4\r\nPING\r\n")
    lines = []
    while (reply := monitor.read_reply()) != b"+PONG\r\n":
        lines.append(reply)
    lines.append(monitor.read_reply())      # the monitor's own PING, fed to itself
    return lines
