"""Client limits under abuse: maxclients, tcp-keepalive, slow-drip requests,
stalled readers and vanished uploads.

What tests/integration already covers is not repeated here (the maxclients
error text, idle ``timeout``, client-query-buffer-limit, proto-max-bulk-len,
the output-buffer limits' disconnects, one vanished 16 MiB upload).  These
add: maxclients and tcp-keepalive behaviour compared with redis-server, that
one slow client neither blocks others nor costs memory it has not sent, that
a stalled reader is cut off before the server's RSS passes the output limit,
and that fifty clients vanishing mid-upload give back every arena byte.
"""
from __future__ import annotations

import os
import socket
import struct
import threading
import time

import pytest
import redis

from conftest import ServerProcess, encode_command, parse_reply, raw_connection

MIB = 1 << 20


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def info(conn, section: str) -> dict:
    text = parse_reply(conn.request("INFO", section)).decode()
    fields = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            name, value = line.split(":", 1)
            fields[name] = int(value) if value.lstrip("-").isdigit() else value
    return fields


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


@pytest.fixture
def redis_factory():
    """redis-server processes with extra options, stopped at the end of the test."""
    started = []

    def factory(**options):
        server = ServerProcess("redis", options)
        started.append(server)
        return server.start()

    yield factory
    for server in started:
        server.close()


# ---------------------------------------------------------------- maxclients

def maxclients_transcript(server) -> dict:
    """What a fourth client sees at maxclients 3, and what happens when a slot frees."""
    held = [raw_connection(server.port) for _ in range(3)]
    try:
        pongs = [conn.request("PING") for conn in held]
        with raw_connection(server.port) as rejected:
            reply = rejected.read_reply()
            closed = rejected.is_closed()
        rejected_count = info(held[0], "stats")["rejected_connections"]
        held.pop().close()

        def admitted():
            with raw_connection(server.port) as conn:
                try:
                    return conn.request("PING") == b"+PONG\r\n"
                except Exception:
                    return False
        freed = wait_for(admitted, timeout=5)
        # Closed connections are noticed asynchronously: the count settles at the two still held.
        wait_for(lambda: info(held[0], "clients")["connected_clients"] <= 2, timeout=5)
        return {"pongs": pongs, "reply": reply, "closed": closed,
                "rejected_connections": rejected_count, "admitted_after_close": freed,
                "connected_clients": info(held[0], "clients")["connected_clients"]}
    finally:
        for conn in held:
            conn.close()


def test_maxclients_matches_redis(cxl_factory, redis_factory):
    expected = maxclients_transcript(redis_factory(maxclients=3))
    assert expected["reply"] == b"-ERR max number of clients reached\r\n"
    assert maxclients_transcript(cxl_factory(maxclients=3)) == expected


# ---------------------------------------------------------------- tcp-keepalive

def server_socket_timer(server_port: int, client_port: int) -> tuple[int, float]:
    """(timer kind, seconds until it fires) of the server's end of a loopback connection,
    from /proc/net/tcp: kind 2 is the keepalive timer, 0 none."""
    local = f"0100007F:{server_port:04X}"
    remote = f"0100007F:{client_port:04X}"
    ticks = os.sysconf("SC_CLK_TCK")
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[1] == local and fields[2] == remote:
                kind, when = fields[5].split(":")
                return int(kind, 16), int(when, 16) / ticks
    raise AssertionError(f"no socket 127.0.0.1:{server_port} <- :{client_port} in /proc/net/tcp")


def keepalive_seen(server) -> list[tuple[int, bool]]:
    """Timer kind and whether it fires within the configured idle time, for a
    connection made with the start-up value and one made after CONFIG SET."""
    results = []
    with raw_connection(server.port) as admin:
        for value in (None, 4):
            if value is not None:
                assert admin.request("CONFIG", "SET", "tcp-keepalive", str(value)) == b"+OK\r\n"
            configured = int(parse_reply(admin.request("CONFIG", "GET", "tcp-keepalive"))[1])
            with raw_connection(server.port) as conn:
                assert conn.request("PING") == b"+PONG\r\n"
                kind, seconds = server_socket_timer(server.port, conn.sock.getsockname()[1])
                results.append((kind, configured == 0 or 0 < seconds <= configured))
    return results


@pytest.mark.parametrize("interval", [7, 0])
def test_tcp_keepalive_on_accepted_sockets_matches_redis(cxl_factory, redis_factory, interval):
    expected = keepalive_seen(redis_factory(**{"tcp-keepalive": interval}))
    assert expected[1] == (2, True)                      # after CONFIG SET 4: a keepalive timer
    assert expected[0] == ((2, True) if interval else (0, True))
    assert keepalive_seen(cxl_factory(**{"tcp-keepalive": interval})) == expected


# ---------------------------------------------------------------- slow drip

def test_slow_drip_requests_do_not_block_other_clients(cxl_factory):
    """Ten clients send a SET one byte every 50 ms; another client's commands stay fast,
    the drippers hold no more than they sent, and their commands complete intact."""
    srv = cxl_factory()
    value = bytes(range(97, 123)) * 4
    request = encode_command("SET", "drip", value)
    drippers = [raw_connection(srv.port) for _ in range(10)]
    stop = threading.Event()
    sent = [0]                      # bytes of the request every dripper has sent

    def drip():
        while sent[0] < len(request) and not stop.is_set():
            for conn in drippers:
                conn.send(request[sent[0]:sent[0] + 1])
            sent[0] += 1
            time.sleep(0.05)

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    latencies = []
    with srv.client() as busy:
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            busy.set("busy", "1")
            assert busy.get("busy") == b"1"
            latencies.append(time.perf_counter() - t0)
            time.sleep(0.005)
        stop.set()
        thread.join()
        dripping = [e for e in busy.client_list() if int(e["id"]) != busy.client_id()]
        assert len(dripping) == 10
        assert 0 < sent[0] < len(request)
        assert all(int(e["qbuf"]) <= sent[0] for e in dripping), (sent[0], dripping)
        for conn in drippers:
            conn.send(request[sent[0]:])
            assert conn.read_reply() == b"+OK\r\n"
            conn.close()
        assert busy.get("drip") == value
    assert len(latencies) > 50 and max(latencies) < 0.5, (len(latencies), max(latencies))


def test_declared_bulk_length_costs_no_memory_before_its_bytes_arrive(cxl_factory):
    srv = cxl_factory()
    before = rss_bytes(srv.pid)
    senders = []
    for _ in range(2):
        conn = raw_connection(srv.port)
        conn.send(b"*2\r\n$4\r\nECHO\r\n$%d\r\nab" % (256 * MIB))
        senders.append(conn)
    with srv.client() as c:
        assert wait_for(lambda: sum(int(e["qbuf"]) for e in c.client_list()) >= 4)
        grown = rss_bytes(srv.pid) - before
    for conn in senders:
        conn.close()
    assert grown < 32 * MIB, f"RSS grew by {grown / MIB:.0f} MiB for 4 bytes of arguments"


# ---------------------------------------------------------------- stalled readers

class PeakRss:
    """Samples a process's RSS every 2 ms in a thread (the test's own requests would
    wait for the server and miss a transient peak)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak = rss_bytes(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.002)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("value_size", [
    32 * MIB,           # sent as a view of the arena: nothing is copied
    48 << 10,
])
def test_stalled_reader_is_cut_off_before_rss_passes_the_output_limit(cxl_factory, value_size):
    limit = 16 * MIB
    srv = cxl_factory(**{"client-output-buffer-limit": f"normal {limit} 0 0", "arena-size": "128mb"})
    with srv.client() as c:
        c.set("v", b"v" * value_size)
        before = rss_bytes(srv.pid)
        stalled = socket.create_connection(("127.0.0.1", srv.port))
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        stalled.settimeout(10)
        count = max(8, (512 * MIB) // value_size)                 # half a GiB of replies
        pipeline = encode_command("GET", "v") * count
        sender = threading.Thread(target=_send_quietly, args=(stalled, pipeline), daemon=True)

        with PeakRss(srv.pid) as rss:
            sender.start()
            assert wait_for(lambda: len(c.client_list()) == 1, timeout=15), \
                "the stalled reader was never disconnected"
            time.sleep(0.1)
        sender.join(5)
        stalled.close()
        assert c.info("arena")["arena_pinned"] == 0
    grown = rss.peak - before
    assert grown < limit + 32 * MIB, (
        f"RSS grew by {grown / MIB:.0f} MiB with a {limit // MIB} MiB output limit")


def _send_quietly(sock, data):
    try:
        sock.sendall(data)
    except OSError:
        pass          # the server cut us off mid-send: expected


# ---------------------------------------------------------------- vanished uploads

def test_fifty_clients_vanishing_mid_upload_reclaim_every_slot(cxl_factory):
    """Half-sent values into slots (one of 32 MiB), in the parser's buffer, queued in
    MULTI, closed politely or reset: afterwards the arena is exactly as before."""
    srv = cxl_factory(**{"arena-size": "192mb"})
    c = srv.client()
    for i in range(20):
        c.set(f"keep:{i}", os.urandom(100 << 10))
    keys_before = c.dbsize()
    arena_before = c.info("arena")
    expected_reserved = 0
    conns = []
    for i in range(50):
        conn = raw_connection(srv.port)
        kind = i % 5
        if i == 0:
            size = 32 * MIB
            conn.send(b"*3\r\n$3\r\nSET\r\n$5\r\nhuge0\r\n$%d\r\n" % size + b"h" * (size // 2))
            expected_reserved += size
        elif kind in (0, 1):        # a slot half filled
            size = MIB
            conn.send(b"*3\r\n$3\r\nSET\r\n$5\r\nv%04d\r\n$%d\r\n" % (i, size) + b"s" * (size // 2))
            expected_reserved += size
        elif kind == 2:             # below the slot threshold: in the parser's buffer
            conn.send(b"*3\r\n$3\r\nSET\r\n$5\r\nv%04d\r\n$%d\r\n" % (i, 40000) + b"p" * 20000)
        elif kind == 3:             # a whole SET queued in MULTI, then half of another
            conn.send(encode_command("MULTI") + encode_command("SET", f"q{i:04d}", b"q" * (512 << 10))
                      + b"*3\r\n$3\r\nSET\r\n$5\r\nr%04d\r\n$%d\r\n" % (i, MIB) + b"r" * 1000)
            expected_reserved += (512 << 10) + MIB
        else:                       # SETRANGE/APPEND-style: a large non-value argument
            conn.send(b"*3\r\n$6\r\nAPPEND\r\n$5\r\nv%04d\r\n$%d\r\n" % (i, 300000) + b"a" * 1000)
        conns.append(conn)

    def all_received():
        used = c.info("arena")["arena_heap_used"]
        return used >= arena_before["arena_heap_used"] + expected_reserved
    assert wait_for(all_received), "the uploads never reached their slots"
    assert int(c.info("clients")["connected_clients"]) == 51

    for i, conn in enumerate(conns):
        if i % 2:                   # an abortive close (RST), as a crashed client's kernel sends
            conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    def reclaimed():
        arena = c.info("arena")
        return arena["arena_heap_used"] == arena_before["arena_heap_used"] and arena["arena_reserved"] == 0
    assert wait_for(reclaimed), c.info("arena")
    arena = c.info("arena")
    assert arena["arena_entries"] == arena_before["arena_entries"]
    assert arena["arena_pinned"] == 0 and arena["arena_zombies"] == 0
    assert c.dbsize() == keys_before
    assert c.keys("v*") == [] and c.keys("q*") == [] and c.keys("huge*") == []
    assert int(c.info("clients")["connected_clients"]) == 1
    assert c.execute_command("DEBUG", "ARENA-CHECK") == []
    c.close()


def test_a_script_that_wants_too_much_memory_fails_alone(cxl_factory):
    # Stock Lua takes all it asks for: one EVAL building a huge string or table would
    # take the server's memory. Past lua-memory-limit the allocation is a Lua error.
    server = cxl_factory(lua_memory_limit="64mb")
    client = server.client()
    with pytest.raises(redis.ResponseError, match="not enough memory"):
        client.eval("return #string.rep('x', 100 * 1024 * 1024)", 0)
    with pytest.raises(redis.ResponseError, match="not enough memory"):
        client.eval("local t = {} for i = 1, 1e8 do t[i] = i end return #t", 0)
    assert client.eval("local ok, e = pcall(string.rep, 'x', 1e8) return {tostring(ok), e}", 0) == [
        b"false", b"not enough memory"]
    client.set("k", "v")
    assert client.eval("return #(string.rep('x', 1024 * 1024) .. redis.call('get', 'k'))", 0) == 1024 * 1024 + 1
    assert client.config_get("lua-memory-limit") == {"lua-memory-limit": str(64 * 1024 * 1024)}
