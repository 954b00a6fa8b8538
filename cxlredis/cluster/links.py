"""The cluster bus on asyncio: the listener on the bus port and one Link per connection.

A node keeps an outbound link to every node it knows (opened by ClusterState.cron
through `connect`) and accepts their links to it. A link frames the byte stream
into messages by their announced length, decodes each one (bus.decode checks every
length) and hands it to the state. Anything malformed closes the link, as Redis
frees a link on a bad packet; the node reconnects on its own schedule.
"""
import asyncio
import logging

from . import bus
from .state import now_ms

log = logging.getLogger("cxlredis")

# Redis 7.0 sends nothing near this (a PING with gossip about 1000 nodes is ~100 KiB);
# a peer announcing more is not speaking the protocol, and must not make us buffer it.
MAX_MESSAGE_BYTES = 8 << 20


class Link(asyncio.Protocol):
    __slots__ = ("state", "node", "inbound", "ctime", "transport", "pending", "buffer",
                 "closed", "local_ip", "peer_ip", "connecting")

    def __init__(self, state, node, inbound):
        self.state = state
        self.node = node             # outbound: the node dialled; inbound: the sender, once known
        self.inbound = inbound
        self.ctime = now_ms()
        self.transport = None
        self.pending = []            # what was sent before the connection was up
        self.buffer = bytearray()
        self.closed = False
        self.local_ip = self.peer_ip = ""
        self.connecting = None

    def connection_made(self, transport):
        if self.closed:
            transport.close()
            return
        self.transport = transport
        peer, local = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
        self.peer_ip = peer[0] if peer else ""
        self.local_ip = local[0] if local else ""
        for data in self.pending:
            transport.write(data)
        self.pending.clear()

    def data_received(self, data):
        self.buffer += data
        state = self.state
        while not self.closed:
            try:
                length = bus.message_length(self.buffer)
                if length is None or len(self.buffer) < length:
                    if length is not None and length > MAX_MESSAGE_BYTES:
                        raise bus.BusDecodeError(f"a message of {length} bytes")
                    return
                frame = bytes(self.buffer[:length])
                del self.buffer[:length]
                msg = bus.decode(frame)
            except bus.BusDecodeError as e:
                log.debug("Closing cluster bus link from %s: %s", self.peer_ip, e)
                self.close()
                return
            try:
                state.receive(self, msg)
            finally:
                state.flush()

    @property
    def pending_bytes(self):
        """Bytes written to the link and not yet sent (CLUSTER LINKS)."""
        if self.transport is None:
            return sum(map(len, self.pending))
        return self.transport.get_write_buffer_size()

    def send(self, data):
        if self.closed:
            return
        if self.transport is None:
            self.pending.append(data)
        else:
            self.transport.write(data)

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.transport is not None:
            self.transport.close()
        elif self.connecting is not None:
            self.connecting.cancel()
        self.pending.clear()
        self.state.link_closed(self)

    def connection_lost(self, exc):
        if not self.closed:
            self.closed = True
            self.state.link_closed(self)


class Bus:
    """The bus port and the outbound links of one node."""

    def __init__(self, sockets):
        self.sockets = sockets       # bound at start-up, with the client ports
        self.servers = []
        self.state = None

    async def start(self, state):
        self.state = state
        loop = asyncio.get_running_loop()
        for sock in self.sockets:
            self.servers.append(await loop.create_server(lambda: Link(state, None, True), sock=sock))

    def connect(self, node):
        """An outbound link to node, connecting in the background; messages sent meanwhile
        wait in it."""
        link = Link(self.state, node, False)
        link.connecting = asyncio.ensure_future(self._dial(link, node.ip, node.cport))
        return link

    async def _dial(self, link, ip, port):
        loop = asyncio.get_running_loop()
        timeout = max(self.state.config["cluster-node-timeout"], 1000) / 1000
        try:
            await asyncio.wait_for(loop.create_connection(lambda: link, ip, port), timeout)
        except asyncio.CancelledError:
            raise
        except (OSError, asyncio.TimeoutError, ValueError) as e:
            log.debug("Cluster bus connection to %s:%s failed: %s", ip, port, e)
            link.close()
        finally:
            link.connecting = None

    async def stop(self):
        for server in self.servers:
            server.close()
        if self.state is not None:
            for node in self.state.nodes.values():
                for link in (node.link, node.inbound_link):
                    if link is not None:
                        link.close()
        for server in self.servers:
            await server.wait_closed()
