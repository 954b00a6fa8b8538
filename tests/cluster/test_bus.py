"""The cluster bus codec against real redis-server 7.0 nodes: we MEET one, keep it from
failing us, and every message it sends decodes and re-encodes to the same bytes."""
import os
import random
import socket
import threading
import time

import pytest

from conftest import ServerProcess, free_port
from cxlredis.cluster import bus

NODE_TIMEOUT_MS = 1000


def node(cport, hostname):
    server = ServerProcess("redis", {"cluster-enabled": "yes", "cluster-config-file": "nodes.conf",
                                     "cluster-port": cport, "cluster-node-timeout": NODE_TIMEOUT_MS,
                                     "cluster-announce-hostname": hostname})
    return server.start()


class BusPeer:
    """A minimal bus endpoint speaking through the codec: MEETs a node, answers PINGs."""

    def __init__(self):
        self.name = os.urandom(20).hex().encode()
        self.port = free_port()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.cport = self.listener.getsockname()[1]
        self.received = []          # raw bytes of every message received
        self.errors = []
        self.closing = False
        self.sockets = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def message(self, msg_type):
        return bus.Message(type=msg_type, sender=self.name, port=self.port, cport=self.cport,
                           flags=bus.NODE_MASTER, extensions=[bus.hostname_extension(b"peer.test")])

    def meet(self, cport):
        sock = socket.create_connection(("127.0.0.1", cport))
        self.sockets.append(sock)
        sock.sendall(bus.encode(self.message(bus.MEET)))
        threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _accept(self):
        while not self.closing:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock):
        buf = b""
        try:
            while not self.closing:
                chunk = sock.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while (total := bus.message_length(buf)) is not None and len(buf) >= total:
                    raw, buf = buf[:total], buf[total:]
                    self.received.append(raw)
                    msg = bus.decode(raw)
                    if msg.type in (bus.PING, bus.MEET):
                        sock.sendall(bus.encode(self.message(bus.PONG)))
        except OSError:
            return
        except Exception as error:     # surfaced by the test, not lost in the thread
            self.errors.append(error)

    def close(self):
        self.closing = True
        for sock in self.sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)     # wakes the thread blocked in accept/recv
            except OSError:
                pass                                # the peer already went
            sock.close()


@pytest.fixture(scope="module")
def met():
    """Two real nodes that met each other, and our peer that met the first."""
    cport_a, cport_b = free_port(), free_port()
    a, b = node(cport_a, "a.test"), node(cport_b, "b.test")
    peer = BusPeer()
    try:
        a.client().execute_command("CLUSTER", "MEET", "127.0.0.1", b.port, cport_b)
        peer.meet(cport_a)
        deadline = time.time() + 10
        while time.time() < deadline:
            nodes = a.client().execute_command("CLUSTER", "NODES").decode()
            if peer.name.decode() in nodes and "handshake" not in nodes:
                break
            time.sleep(0.1)
        yield a, b, peer
    finally:
        peer.close()
        a.close()
        b.close()


def node_line(server, name):
    for line in server.client().execute_command("CLUSTER", "NODES").decode().splitlines():
        if line.startswith(name.decode()):
            return line
    return None


def test_real_node_accepts_our_meet_and_keeps_us(met):
    a, _, peer = met
    line = node_line(a, peer.name)
    assert line is not None, a.client().execute_command("CLUSTER", "NODES")
    time.sleep(3.5 * NODE_TIMEOUT_MS / 1000)     # several node timeouts
    line = node_line(a, peer.name)
    # our hostname extension was read (from the pings after the handshake)
    assert f"127.0.0.1:{peer.port}@{peer.cport},peer.test master" in line
    assert "fail" not in line.split()[2] and line.split()[7] == "connected", line
    assert not peer.errors


def test_every_real_message_round_trips(met):
    a, b, peer = met
    deadline = time.time() + 10
    while time.time() < deadline and not any(bus.decode(r).gossip for r in peer.received):
        time.sleep(0.1)
    assert peer.received and not peer.errors
    kinds = set()
    for raw in peer.received:
        msg = bus.decode(raw)
        kinds.add(msg.type)
        assert bus.encode(msg) == raw
        # b learns of us from a's gossip and pings us too
        assert (msg.port, msg.hostname()) in ((a.port, b"a.test"), (b.port, b"b.test"))
        assert len(msg.sender) == 40
        assert {(g.port, g.cport) for g in msg.gossip} <= {
            (a.port, int(a.options["cluster-port"])), (b.port, int(b.options["cluster-port"])),
            (peer.port, peer.cport)}
    assert bus.PING in kinds or bus.PONG in kinds
    assert any(bus.decode(r).gossip for r in peer.received)


def test_truncated_and_flipped_messages_are_refused_cleanly(met):
    _, _, peer = met
    rng = random.Random(14)
    samples = peer.received[:20]
    for raw in samples:
        for cut in sorted(rng.sample(range(len(raw)), 40)) + [0, 7, 8, bus.HEADER_LEN - 1]:
            with pytest.raises(bus.BusDecodeError):
                bus.decode(raw[:cut])
        for _ in range(200):
            flipped = bytearray(raw)
            for _ in range(rng.randrange(1, 4)):
                i = rng.randrange(min(len(raw), bus.HEADER_LEN + 400) if rng.random() < .7 else len(raw))
                flipped[i] ^= 1 << rng.randrange(8)
            try:
                msg = bus.decode(bytes(flipped))
            except bus.BusDecodeError:
                continue
            assert bus.decode(bus.encode(msg)) == msg


def test_every_type_round_trips():
    name = b"a" * 40
    base = dict(sender=name, port=7000, cport=17000, flags=bus.NODE_MASTER | bus.NODE_MYSELF,
                slots=bus.slot_bitmap([0, 5, 16383]), current_epoch=7, config_epoch=3)
    messages = [
        bus.Message(type=bus.PING, gossip=[bus.Gossip(b"b" * 40, 1, 2, b"10.0.0.1", 7001, 17001,
                                                      bus.NODE_SLAVE | bus.NODE_PFAIL)], **base),
        bus.Message(type=bus.FAIL, about=b"c" * 40, **base),
        bus.Message(type=bus.UPDATE, update_epoch=9, update_name=b"d" * 40,
                    update_slots=bus.slot_bitmap(range(100)), **base),
        bus.Message(type=bus.PUBLISH, channel=b"news", payload=b"hello", **base),
        bus.Message(type=bus.PUBLISHSHARD, channel=b"", payload=b"", **base),
        bus.Message(type=bus.MODULE, module_id=42, module_type=3, payload=b"xyz" * 10, **base),
        bus.Message(type=bus.FAILOVER_AUTH_REQUEST, **base),
        bus.Message(type=bus.MFSTART, **base),
    ]
    for msg in messages:
        raw = bus.encode(msg)
        decoded = bus.decode(raw)
        assert bus.encode(decoded) == raw and decoded.gossip == msg.gossip and decoded.payload == msg.payload
        assert bus.message_length(raw[:8]) == len(raw)
    assert bus.bitmap_slots(bus.slot_bitmap([0, 5, 16383])) == [0, 5, 16383]
    assert bus.HEADER_LEN == 2256 and bus.GOSSIP.size == 104 and bus.UPDATE_BODY.size == 2096


class MaxEpochPeer(BusPeer):
    """A peer whose every message announces the greatest epoch a uint64 holds."""

    def message(self, msg_type):
        msg = super().message(msg_type)
        msg.current_epoch = msg.config_epoch = 2**64 - 1
        return msg


@pytest.mark.parametrize("kind", ["redis", "cxlredis"])
def test_an_epoch_at_the_uint64_limit_wraps_as_in_redis(kind):
    cport = free_port()
    options = {"cluster-enabled": "yes", "cluster-config-file": "nodes.conf",
               "cluster-port": cport, "cluster-node-timeout": NODE_TIMEOUT_MS}
    if kind == "cxlredis":
        options["tenants-file"] = ""
    server = ServerProcess(kind, options).start()
    peer = MaxEpochPeer()
    try:
        peer.meet(cport)
        client = server.client()

        def current_epoch():
            info = client.execute_command("CLUSTER", "INFO").decode()
            return int(info.split("cluster_current_epoch:")[1].split()[0])
        deadline = time.time() + 10
        while current_epoch() != 2**64 - 1 and time.time() < deadline:
            time.sleep(0.05)
        assert current_epoch() == 2**64 - 1
        # the node's own epoch is below the greatest known: it bumps, and the uint64 wraps
        assert client.execute_command("CLUSTER", "BUMPEPOCH") == b"BUMPED 0"
        seen = len(peer.received)
        deadline = time.time() + 5
        while len(peer.received) <= seen + 2 and time.time() < deadline:
            time.sleep(0.05)
        assert len(peer.received) > seen + 2 and not peer.errors    # it still talks to us
        assert client.ping()
    finally:
        peer.close()
        server.close()


GOSSIPED = b"ab" * 20


class BadHostnamePeer(BusPeer):
    """A member announcing a hostname with a space and a newline in it, and gossiping
    about a node at an address that is no address."""

    def message(self, msg_type):
        msg = super().message(msg_type)
        msg.extensions = [bus.hostname_extension(b"evil host\nvars currentEpoch 9")]
        msg.gossip = [bus.Gossip(GOSSIPED, 0, 0, b"1.2.3.4 x\nvars", 7000, 17000, bus.NODE_MASTER)]
        return msg


def test_a_hostname_or_address_that_is_not_one_word_is_not_taken_into_nodes_conf():
    cport = free_port()
    server = ServerProcess("cxlredis", {"cluster-enabled": "yes", "cluster-config-file": "nodes.conf",
                                        "cluster-port": cport, "cluster-node-timeout": NODE_TIMEOUT_MS,
                                        "tenants-file": ""}).start()
    peer = BadHostnamePeer()
    try:
        peer.meet(cport)
        deadline = time.time() + 10
        while time.time() < deadline:
            lines = server.client().execute_command("CLUSTER", "NODES").decode().splitlines()
            if any(line.startswith(peer.name.decode()) for line in lines):
                break
            time.sleep(0.05)
        peer_line = node_line(server, peer.name)
        assert peer_line.split()[1].endswith(f"@{peer.cport}")        # met, without a hostname
        conf = (server.dir / "nodes.conf").read_text()
        assert "evil" not in conf and "1.2.3.4" not in conf
        assert GOSSIPED.decode() not in server.client().execute_command("CLUSTER", "NODES").decode()
        server.restart()                                              # nodes.conf still loads
        assert server.client().ping()
    finally:
        peer.close()
        server.close()
