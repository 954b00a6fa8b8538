"""The wire: inline commands, pipelining, RESP3 handshakes, malformed and oversized input."""
import asyncio
import os
import socket
import time

import pytest
import redis
import redis.asyncio

from conftest import encode_command, raw_connection


def test_inline_commands(cxl):
    with raw_connection(cxl.port) as conn:
        conn.send(b"PING\r\n")
        assert conn.read_reply() == b"+PONG\r\n"
        conn.send(b'SET greeting "hello world"\n')
        assert conn.read_reply() == b"+OK\r\n"
        conn.send(b"GET greeting\r\n")
        assert conn.read_reply() == b"$11\r\nhello world\r\n"
        conn.send(b"\r\n\r\nECHO 'it''s'\r\n")  # empty lines are skipped
        assert conn.read_reply().startswith(b"-ERR Protocol error: unbalanced quotes")
        assert conn.is_closed()


def test_pipeline_of_10000_commands_in_one_write(cxl):
    n = 10_000
    payload = b"".join(encode_command("SET", f"p{i}", f"v{i}") + encode_command("GET", f"p{i}")
                       for i in range(n))
    with raw_connection(cxl.port, timeout=30) as conn:
        conn.send(payload)
        for i in range(n):
            assert conn.read_reply() == b"+OK\r\n"
            value = f"v{i}".encode()
            assert conn.read_reply() == b"$%d\r\n%s\r\n" % (len(value), value)


def test_redis_py_pipeline_10000(r2):
    pipe = r2.pipeline(transaction=False)
    for i in range(10_000):
        pipe.incr("counter")
    results = pipe.execute()
    assert results[-1] == 10_000
    assert results == list(range(1, 10_001))


def test_pipeline_split_at_every_byte(cxl):
    """A pipeline trickled one byte per send parses to the same replies."""
    payload = encode_command("SET", "s", "x" * 10) + b"PING\r\n" + encode_command("GET", "s")
    with raw_connection(cxl.port) as conn:
        for i in range(len(payload)):
            conn.send(payload[i:i + 1])
        assert conn.read_reply() == b"+OK\r\n"
        assert conn.read_reply() == b"+PONG\r\n"
        assert conn.read_reply() == b"$10\r\nxxxxxxxxxx\r\n"


def test_redis_py_8_resp3_handshake(cxl):
    """redis-py 8 opens with HELLO 3, CLIENT SETINFO and CLIENT MAINT_NOTIFICATIONS."""
    c = redis.Redis(port=cxl.port, protocol=3, client_name="pod-7")
    assert c.ping()
    info = c.client_info()
    assert info["name"] == "pod-7"
    assert info["resp"] == "3"
    assert info["lib-name"].startswith("redis-py")
    c.set("k", "v")
    assert c.get("k") == b"v"
    c.close()


async def test_redis_py_asyncio_many_connections(cxl):
    """LMCache's RedisConnector: redis.asyncio, RESP3, many concurrent connections."""
    client = redis.asyncio.Redis(port=cxl.port, protocol=3, max_connections=150)
    payload = os.urandom(300_000)

    async def one(i):
        await client.set(f"chunk{i}kv_bytes", payload)
        await client.set(f"chunk{i}metadata", b"m" * 100)
        assert await client.exists(f"chunk{i}kv_bytes") == 1
        assert await client.get(f"chunk{i}kv_bytes") == payload

    await asyncio.gather(*(one(i) for i in range(150)))
    await client.aclose()


def test_hello_replies(cxl):
    with raw_connection(cxl.port) as conn:
        reply = conn.request("HELLO", "3")
        assert reply.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
        assert b"$5\r\nproto\r\n:3\r\n" in reply
        assert conn.request("HELLO", "4") == b"-NOPROTO unsupported protocol version\r\n"
        assert conn.request("HELLO", "x") == b"-ERR Protocol version is not an integer or out of range\r\n"
        assert conn.request("GET", "nokey") == b"_\r\n"  # still RESP3 after the failed HELLO
        conn.request("HELLO", "2")
        assert conn.request("GET", "nokey") == b"$-1\r\n"


@pytest.mark.parametrize("request_bytes, error", [
    (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*x\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n+PING\r\n", b"-ERR Protocol error: expected '$', got '+'\r\n"),
    (b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$999999999999\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$" + b"9" * 70000, b"-ERR Protocol error: too big bulk count string\r\n"),
    (b"*" + b"1" * 70000, b"-ERR Protocol error: too big mbulk count string\r\n"),
    (b"A" * 70000, b"-ERR Protocol error: too big inline request\r\n"),
])
def test_protocol_errors_reply_and_close(cxl, request_bytes, error):
    with raw_connection(cxl.port) as conn:
        conn.send(encode_command("SET", "before-error", "1") + request_bytes)
        assert conn.read_reply() == b"+OK\r\n"  # complete commands before the error still run
        assert conn.read_reply() == error
        assert conn.is_closed()
    assert cxl.client().get("before-error") == b"1"


def test_oversized_bulk_rejected_before_allocation(cxl_factory):
    srv = cxl_factory(**{"proto-max-bulk-len": "1mb"})
    c = srv.client()
    used = c.info("arena")["arena_heap_used"]
    with raw_connection(srv.port) as conn:
        conn.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (2 << 20))
        assert conn.read_reply() == b"-ERR Protocol error: invalid bulk length\r\n"
        assert conn.is_closed()
    assert c.info("arena")["arena_heap_used"] == used
    assert c.ping()


def test_query_buffer_limit_closes_client(cxl_factory):
    """A value larger than client-query-buffer-limit gets the client closed, as in Redis."""
    srv = cxl_factory(**{"client-query-buffer-limit": "1mb"})
    sock = socket.create_connection(("127.0.0.1", srv.port))
    sock.settimeout(10)
    try:
        sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (2 << 20) + b"x" * (2 << 20) + b"\r\n")
        assert sock.recv(100) == b""
    except ConnectionResetError:
        pass  # closed while we were still sending: the same outcome
    finally:
        sock.close()
    c = srv.client()
    assert c.exists("k") == 0
    assert c.ping()


def test_unknown_command_and_arity_errors(cxl):
    with raw_connection(cxl.port) as conn:
        assert conn.request("NOSUCH", "a", "b") == \
            b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n"
        assert conn.request("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
        assert conn.request("CLIENT", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.\r\n"
        assert conn.request("CLIENT", "SETNAME") == \
            b"-ERR wrong number of arguments for 'client|setname' command\r\n"


def test_large_value_round_trip_64mib(cxl_factory):
    r2 = cxl_factory(**{"arena-size": "256mb"}).client()
    value = os.urandom(64 << 20)
    assert r2.set("huge", value)
    assert r2.get("huge") == value
    assert r2.strlen("huge") == len(value)


def test_large_values_whatever_room_their_block_leaves_after_them(cxl):
    """A large value goes straight into its arena block, and so does the CRLF after it
    where the block has 2 bytes to spare (blocks come in 64 bytes). Values of 64 lengths
    in a row, so that every room from 0 to 63 bytes comes up, each sent whole or cut
    before, inside or after its CRLF, with the next command in the same write, read back
    exact; APPEND and SETRANGE then grow them in place over those spare bytes."""
    base = 128 * 1024
    cuts = [None, -2, -1, 0]        # where a SET's bytes are cut, from the end of its CRLF
    with raw_connection(cxl.port, timeout=30) as conn:
        for length in range(base, base + 64):
            value = bytes([length % 251]) * length
            for cut in cuts:
                key = f"room:{length}:{cut}"
                request = encode_command("SET", key, value)
                pieces = [request] if cut is None else [request[:len(request) + cut], request[len(request) + cut:]]
                pieces[-1] += encode_command("STRLEN", key)
                for piece in pieces:
                    conn.send(piece)
                    time.sleep(0.001)
                assert conn.read_reply() == b"+OK\r\n"
                assert conn.read_reply() == b":%d\r\n" % length
        r = redis.Redis(port=cxl.port)
        for length in range(base, base + 64):
            value = bytes([length % 251]) * length
            for cut in cuts:
                key = f"room:{length}:{cut}"
                assert r.get(key) == value, (length, cut)
                assert r.append(key, b"xy") == length + 2
                assert r.setrange(key, length + 4, b"z") == length + 5
                assert r.getrange(key, length - 1, -1) == value[-1:] + b"xy\0\0z"


def test_slow_reader_does_not_stall_others(cxl_factory):
    """A client that stops reading its 32 MiB replies must not block another client."""
    cxl = cxl_factory(**{"arena-size": "256mb"})
    r = cxl.client()
    r.set("blob", b"b" * (32 << 20))
    stalled = socket.create_connection(("127.0.0.1", cxl.port))
    stalled.sendall(encode_command("GET", "blob") * 4)  # 128 MiB of replies it does not read yet
    time.sleep(0.2)
    t0 = time.monotonic()
    assert r.ping()
    r.set("other", "x")
    assert r.get("other") == b"x"
    assert time.monotonic() - t0 < 5
    # The blob is pinned while replies are in flight; overwriting it is still allowed
    # and the stalled reader keeps receiving the old, intact bytes.
    r.set("blob", b"n" * (32 << 20))
    assert r.get("blob") == b"n" * (32 << 20)
    header = b"$%d\r\n" % (32 << 20)
    buf = bytearray()
    while len(buf) < len(header) + (32 << 20) + 2:
        chunk = stalled.recv(1 << 20)
        assert chunk
        buf += chunk
    assert buf.startswith(header)
    assert bytes(buf[len(header):len(header) + (32 << 20)]) == b"b" * (32 << 20)
    stalled.close()


def _stalled_get(port, key, count=1):
    """A client that asks for values and then never reads its replies."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    sock.sendall(encode_command("GET", key) * count)
    return sock


def _closed_by_server(sock, within=5.0):
    """Drain what the server sent; True when it closed the connection (no pause of `within`)."""
    sock.settimeout(within)
    try:
        while sock.recv(1 << 20):
            pass
    except socket.timeout:
        return False
    except ConnectionResetError:
        pass
    return True


def test_output_buffer_hard_limit_disconnects_a_stalled_reader(cxl_factory):
    srv = cxl_factory(**{"client-output-buffer-limit": "normal 4mb 0 0", "arena-size": "128mb"})
    c = srv.client()
    c.set("big", b"b" * (32 << 20))
    stalled = _stalled_get(srv.port, "big", count=4)
    time.sleep(0.5)
    assert _closed_by_server(stalled)
    stalled.close()
    assert c.info("arena")["arena_pinned"] == 0          # its replies no longer hold the entry
    c.set("small", "ok")                                 # the server and other clients are fine
    assert c.get("small") == b"ok" and c.strlen("big") == 32 << 20


def test_output_buffer_soft_limit_applies_after_its_seconds(cxl_factory):
    srv = cxl_factory(**{"client-output-buffer-limit": "normal 0 1mb 1", "arena-size": "128mb"})
    c = srv.client()
    c.set("big", b"b" * (16 << 20))
    stalled = _stalled_get(srv.port, "big")
    time.sleep(0.3)
    assert any(e["name"] == "" and int(e["omem"]) > 0 for e in c.client_list())  # still connected
    time.sleep(1.5)
    assert _closed_by_server(stalled)
    stalled.close()
    assert c.info("arena")["arena_pinned"] == 0
