"""Dispatch, handlers and the send path in-process, on asyncio and on uvloop.

The server's own objects (Config, Arenas, Server, Client) run inside the test's event loop,
each connection over a real socketpair transport of that loop, so what the loop's
transport does with queued memoryviews (uvloop keeps a reference, asyncio copies
what it cannot send at once) is exercised on both. No subprocess: a failure points
at the Python object that misbehaved.
"""
import asyncio
import socket

import pytest
import uvloop

from cxlredis.cli import load_config
from cxlredis.arenas import Arenas
from cxlredis.files import CreatedFiles
from cxlredis.listeners import Listeners
from cxlredis.server import Server, Shutdown
from conftest import encode_command, parse_reply, reply_end

LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture(params=sorted(LOOPS))
def loop(request):
    loop = LOOPS[request.param]()
    yield loop
    loop.close()


@pytest.fixture
def server(tmp_path):
    config = load_config(["--port", "0", "--arena-path", str(tmp_path / "test.arena"),
                          "--arena-size", "64mb", "--dir", str(tmp_path)], environ={})
    store = Arenas(config)
    server = Server(config, Listeners(config), store, Shutdown(), CreatedFiles())
    yield server
    store.close()


class Peer:
    """The client end of a socketpair whose other end a server Client owns."""

    def __init__(self, loop, sock):
        self.loop, self.sock, self.buffer = loop, sock, b""

    async def send(self, *commands):
        await self.loop.sock_sendall(self.sock, b"".join(encode_command(*c) for c in commands))

    async def reply(self, timeout=5.0):
        while (end := reply_end(self.buffer)) is None:
            chunk = await asyncio.wait_for(self.loop.sock_recv(self.sock, 1 << 20), timeout)
            if not chunk:
                raise ConnectionError("closed by the server")
            self.buffer += chunk
        data, self.buffer = self.buffer[:end], self.buffer[end:]
        return parse_reply(data)

    async def request(self, *args):
        await self.send(args)
        return await self.reply()


async def connect(loop, server):
    ours, theirs = socket.socketpair()
    for sock in (ours, theirs):
        sock.setblocking(False)
    _, client = await loop.connect_accepted_socket(server.new_connection, theirs)
    return Peer(loop, ours), client


def run(loop, coroutine):
    return loop.run_until_complete(asyncio.wait_for(coroutine, 60))


def test_dispatch_order_and_replies(loop, server):
    async def scenario():
        peer, _ = await connect(loop, server)
        assert await peer.request("PING") == "PONG"
        assert await peer.request("SET", "k", "v") == "OK"
        assert await peer.request("get", "k") == b"v"
        assert await peer.request("NOSUCH", "a") == (
            "ERR unknown command 'NOSUCH', with args beginning with: 'a' ")
        assert await peer.request("GET") == "ERR wrong number of arguments for 'get' command"
        assert await peer.request("CONFIG", "NOSUCH") == (
            "ERR unknown subcommand 'NOSUCH'. Try CONFIG HELP.")
    run(loop, scenario())


def test_replies_go_out_once_the_loops_callbacks_have_run(loop, server):
    """A batch's replies wait until the loop has run the callbacks of its poll
    (clients.Flushes), so the replies to connections read in one turn go out together:
    none is written while the input is handled, and all are one turn later."""
    async def scenario():
        peers = [await connect(loop, server) for _ in range(3)]
        batch = encode_command("SET", "k", "v") + encode_command("GET", "k")
        for _, client in peers:     # as the loop hands each connection what its poll read
            client.get_buffer(len(batch))[:len(batch)] = batch
            client.buffer_updated(len(batch))
        for peer, _ in peers:
            with pytest.raises(BlockingIOError):
                peer.sock.recv(1)
        await asyncio.sleep(0)
        for peer, _ in peers:
            assert await peer.reply(timeout=0.5) == "OK" and await peer.reply(timeout=0.5) == b"v"
    run(loop, scenario())


def test_exec_runs_its_queue_through_dispatch(loop, server):
    async def scenario():
        peer, _ = await connect(loop, server)
        watcher, _ = await connect(loop, server)
        await peer.send(("MULTI",), ("SET", "a", "1"), ("INCR", "a"), ("WATCH", "a"), ("EXEC",))
        assert [await peer.reply() for _ in range(5)] == [
            "OK", "QUEUED", "QUEUED", "ERR WATCH inside MULTI is not allowed", ["OK", 2]]
        # A watched key changed by another client aborts the next transaction.
        await peer.send(("WATCH", "a"), ("MULTI",), ("INCR", "a"))
        assert [await peer.reply() for _ in range(3)] == ["OK", "OK", "QUEUED"]
        assert await watcher.request("SET", "a", "9") == "OK"
        assert await peer.request("EXEC") is None
        assert await peer.request("GET", "a") == b"9"
    run(loop, scenario())


def test_pinned_replies_survive_rewrites_while_the_reader_stalls(loop, server):
    """Invariant 2 on each loop's transport: values queued by reference stay pinned
    until flushed; DEL and fresh SETs that would reuse their blocks meanwhile do not
    change a byte on its way out, and the pins are all gone once the reader drains."""
    size = 1 << 20                                   # above large-value-threshold
    original = bytes(range(256)) * (size // 256)

    async def scenario():
        reader, client = await connect(loop, server)
        writer, _ = await connect(loop, server)
        reader.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        assert await writer.request("SET", "big", original) == "OK"
        await reader.send(*[("GET", "big")] * 24)
        while client.transport.get_write_buffer_size() < size:  # replies queued, unsent
            await asyncio.sleep(0.01)
        for i in range(24):                          # free the block and rewrite its memory
            assert await writer.request("DEL", "big") in (0, 1)
            assert await writer.request("SET", f"other{i}", b"\xff" * size) == "OK"
        replies = [await reader.reply() for _ in range(24)]
        assert sum(reply != original for reply in replies) == 0
        for _ in range(100):                         # the last unpin follows the last flush
            if not client.inflight_pins and server.store.main.stats()["pinned"] == 0:
                break
            await asyncio.sleep(0.01)
        assert (client.inflight_pins, server.store.main.stats()["pinned"]) == ([], 0)
        assert server.store.main.check() == []
    run(loop, scenario())


def test_handlers_get_a_call_context_and_never_the_connection_or_the_server(loop, server):
    """What each handler is handed, caught at the handler itself: a CallContext whose
    every attribute (and every service) is neither the connection nor the server."""
    from cxlredis.commands import COMMANDS
    from cxlredis.context import CallContext, Services

    seen = []
    spec = COMMANDS["echo"]
    handler = spec.handler

    def spy(c, argv):
        seen.append(c)
        handler(c, argv)

    async def scenario():
        peer, connection = await connect(loop, server)
        spec.handler = spy
        try:
            assert await peer.request("ECHO", "hi") == b"hi"
        finally:
            spec.handler = handler
        (c,) = seen
        assert type(c) is CallContext and type(c.services) is Services
        assert c is connection.session and c.store is server.store.main and c.id > 0
        reachable = [getattr(c, name) for name in CallContext.__slots__]
        reachable += [getattr(c.services, name) for name in Services.__slots__]
        assert not any(part is connection or part is server for part in reachable)
        # the narrow way back: a handler asks, the connection acts after the command
        assert await peer.request("QUIT") == "OK"
        assert c.close_after_command and connection.closing
    run(loop, scenario())


def test_config_set_keeps_the_output_budget_current(loop, server):
    """process() reads the normal clients' output budget from Clients, which CONFIG SET
    keeps current: the lower of the hard and soft limits that is set."""
    async def scenario():
        peer, _ = await connect(loop, server)
        assert server.clients.output_budget == 0                    # Redis's default: none
        assert await peer.request("CONFIG", "SET", "client-output-buffer-limit",
                                  "normal 4mb 1mb 10") == "OK"
        assert server.clients.output_budget == 1 << 20
        assert await peer.request("CONFIG", "SET", "client-output-buffer-limit", "normal 0 2mb 10") == "OK"
        assert server.clients.output_budget == 2 << 20
        assert await peer.request("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0") == "OK"
        assert server.clients.output_budget == 0
    run(loop, scenario())
