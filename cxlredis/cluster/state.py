"""One node's view of the cluster and the rules that change it, as Redis 7.0's cluster.c
keeps them: nodes and their flags, slot owners, epochs, failure detection (PFAIL, then
FAIL once a majority of masters agrees), the cluster state, and how each bus message
changes all of these.

No I/O here. links.py gives messages in (`receive`) and carries out what this asks for
through the Link objects it created (`link.send(data)`, `link.close()`) and the
`connect(node)` function it is given. The keyspace is reached through `keys`
(`delete(slots)`: drop the keys of slots another node took). The server calls `cron()` ten times a second and `flush()` after every change
it makes; flush saves nodes.conf when the view changed and refreshes `serve_here`, the
slots this node serves without a redirect (which the C fast path reads).

A cxlredis node is always a master: replicas and failover are out of scope for a
cache. It still parses, keeps and gossips about the replicas of a mixed cluster.
"""
import ipaddress
import random
import re
import secrets
import time

from . import bus, nodes_conf
from .slots import CLUSTER_SLOTS

FAIL_REPORT_VALIDITY_MULT = 2        # a failure report counts for 2 node timeouts
FAIL_UNDO_TIME_MULT = 2              # a failed master with slots is forgiven after 2 node timeouts
BLACKLIST_SECONDS = 60               # CLUSTER FORGET keeps a node out of gossip this long
WRITABLE_DELAY_MS = 2000             # a master starts in state fail for this long
REJOIN_DELAY_MS = (500, 5000)        # bounds of the delay after leaving a minority partition
PORT_INCREMENT = 10000               # the default bus port is the client port + this

FLAG_NAMES = ((bus.NODE_MYSELF, "myself"), (bus.NODE_MASTER, "master"), (bus.NODE_SLAVE, "slave"),
              (bus.NODE_PFAIL, "fail?"), (bus.NODE_FAIL, "fail"), (bus.NODE_HANDSHAKE, "handshake"),
              (bus.NODE_NOADDR, "noaddr"), (bus.NODE_NOFAILOVER, "nofailover"))
_FLAG_BY_NAME = {name: flag for flag, name in FLAG_NAMES}
_FAILING = bus.NODE_PFAIL | bus.NODE_FAIL
# A byte of a slot bitmap (least significant bit first) as one byte per slot.
_BYTE_AS_SLOTS = [bytes((byte >> bit) & 1 for bit in range(8)) for byte in range(256)]


# What cluster-announce-hostname accepts (config.Hostname), checked again on the wire.
_HOSTNAME = re.compile(r"[A-Za-z0-9.-]{0,255}")


def _next_epoch(epoch):
    """Epochs are uint64 on the wire and wrap as Redis's do (a peer may announce 2**64-1)."""
    return (epoch + 1) & 0xFFFFFFFFFFFFFFFF


def now_ms():
    return int(time.time() * 1000)


def new_node_name():
    return secrets.token_hex(20)


def _name(raw):
    """A node name off the wire: 40 bytes, kept as text (any byte survives latin-1)."""
    return bytes(raw).decode("latin-1")


def _ip(raw):
    """An address off the wire, "" unless it is an IPv4 or IPv6 address: it is dialled, and
    written into CLUSTER NODES and nodes.conf as part of a word."""
    try:
        return str(ipaddress.ip_address(bytes(raw).decode("ascii")))
    except (UnicodeDecodeError, ValueError):
        return ""


def valid_name(name):
    return len(name) == 40 and all(ch in "0123456789abcdef" for ch in name)


class Node:
    """A node of the cluster as this node knows it (Redis's clusterNode)."""

    __slots__ = ("name", "flags", "ip", "port", "cport", "pport", "hostname", "master_name",
                 "config_epoch", "bitmap", "numslots", "ping_sent", "pong_received",
                 "data_received", "fail_time", "ctime", "fail_reports", "link", "inbound_link",
                 "repl_offset")

    def __init__(self, name, flags, now):
        self.name = name
        self.flags = flags
        self.ip = ""
        self.port = self.cport = self.pport = 0
        self.hostname = ""
        self.master_name = None          # a replica's master
        self.config_epoch = 0
        self.bitmap = bytearray(CLUSTER_SLOTS // 8)
        self.numslots = 0
        self.ping_sent = self.pong_received = self.data_received = self.fail_time = 0
        self.ctime = now
        self.fail_reports = {}           # reporting master's name -> when it last reported
        self.link = None                 # our connection to it
        self.inbound_link = None         # its connection to us
        self.repl_offset = 0

    @property
    def is_master(self):
        return bool(self.flags & bus.NODE_MASTER)

    @property
    def failing(self):
        return bool(self.flags & _FAILING)

    def flag_words(self):
        return ",".join(word for flag, word in FLAG_NAMES if self.flags & flag) or "noflags"


class ClusterState:
    """This node's view of the cluster (see the module docstring)."""

    def __init__(self, config, keys, channels, connect, path):
        self.config = config
        self.keys = keys
        self.channels = channels         # Pub/Sub: PUBLISH from the bus, slots' shard channels
        self.connect = connect
        self.path = path
        self.nodes = {}
        self.owner = [None] * CLUSTER_SLOTS
        self.migrating = {}              # slot -> node it is moving to
        self.importing = {}              # slot -> node it is coming from
        self.current_epoch = self.last_vote_epoch = 0
        self.ok = False
        self.size = 1                    # masters serving at least one slot (Redis's
                                         # clusterInit starts at 1 until the first update)
        self.blacklist = {}              # forgotten name -> until (seconds)
        self.sent = [0] * len(bus.TYPE_NAMES)
        self.received = [0] * len(bus.TYPE_NAMES)
        self.start_ms = now_ms()
        self.among_minority_since = 0
        self.iteration = 0
        self.serve_here = bytearray(CLUSTER_SLOTS)
        self._save_needed = self._routing_changed = False
        self.save_error = ""             # why the last save failed, "" once one succeeds
        self._synced_epochs = None       # the epochs of the last fsynced save
        self.myself = None

    # ------------------------------------------------------------ nodes.conf

    def load(self):
        """Read nodes.conf, or start as a new node (and write one) when there is none."""
        now = now_ms()
        try:
            with open(self.path) as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        if not text.strip():
            self.myself = Node(new_node_name(), bus.NODE_MYSELF | bus.NODE_MASTER, now)
            self.nodes[self.myself.name] = self.myself
            self.refresh_myself()
            self._save_needed = True
            self.flush()
            return False
        records, self.current_epoch, self.last_vote_epoch = nodes_conf.parse(text)
        open_slots = []
        for record in records:
            flags = 0
            for word in record.flags:
                flags |= _FLAG_BY_NAME.get(word, 0)
            node = Node(record.name, flags & ~(bus.NODE_HANDSHAKE | bus.NODE_PFAIL), now)
            node.ip, node.port, node.cport, node.hostname = (record.ip, record.port, record.cport,
                                                            record.hostname)
            node.master_name = record.master
            node.config_epoch = record.config_epoch
            if node.flags & bus.NODE_FAIL:
                node.fail_time = now
            self.nodes[node.name] = node
            if flags & bus.NODE_MYSELF:
                if self.myself is not None:
                    raise nodes_conf.NodesConfError("more than one node is flagged myself")
                self.myself = node
            for slot in record.slots:
                self._add_slot(node, slot)
            open_slots.append(record)
        if self.myself is None:
            raise nodes_conf.NodesConfError("no node is flagged myself")
        self.myself.flags = (self.myself.flags & ~bus.NODE_SLAVE) | bus.NODE_MASTER
        self.myself.master_name = None
        for record in open_slots:
            for table, mine in ((record.migrating, self.migrating), (record.importing, self.importing)):
                for slot, name in table.items():
                    if name in self.nodes:
                        mine[slot] = self.nodes[name]
        self.refresh_myself()
        self._routing_changed = True
        self.flush()
        return True

    def node_line(self, node, for_file=False):
        """The node as a line of CLUSTER NODES and nodes.conf."""
        address = f"{node.ip}:{node.port}@{node.cport}"
        if node.hostname:
            address += "," + node.hostname
        pong = node.pong_received
        if node is self.myself:
            pong = 0 if for_file else int(time.time()) * 1000
        linked = node.link is not None or node is self.myself
        parts = [node.name, address, node.flag_words(), node.master_name or "-",
                 str(node.ping_sent), str(pong), str(node.config_epoch),
                 "connected" if linked else "disconnected"]
        parts += _ranges(node)
        if node is self.myself:
            parts += [f"[{slot}->-{to.name}]" for slot, to in sorted(self.migrating.items())]
            parts += [f"[{slot}-<-{src.name}]" for slot, src in sorted(self.importing.items())]
        return " ".join(parts)

    def save(self, durable=False):
        """Write nodes.conf now; OSError when it cannot be written. It is fsynced when
        durable (CLUSTER SAVECONFIG) or when an epoch changed since the last fsync: the
        epochs are what must never go backwards, as in Redis, while an fsync per slot
        change would make a reshard crawl."""
        lines = [self.node_line(n, for_file=True) for n in self.nodes.values()]
        epochs = (self.current_epoch, self.last_vote_epoch, self.myself.config_epoch)
        durable = durable or epochs != self._synced_epochs
        nodes_conf.write(self.path, lines, self.current_epoch, self.last_vote_epoch, durable)
        if durable:
            self._synced_epochs = epochs
        self._save_needed = False
        self.save_error = ""

    def flush(self):
        """Persist and publish what changed since the last flush."""
        if self._save_needed:
            try:
                self.save()
            except OSError as e:
                # Redis exits here; a cache keeps serving and tries again at the next change.
                self.save_error = str(e)
        if self._routing_changed:
            self._routing_changed = False
            self._refresh_serve_here()

    def changed(self, save=True):
        self._save_needed |= save
        self._routing_changed = True

    # ------------------------------------------------------------ myself

    def refresh_myself(self):
        """What this node announces, from the live config (CONFIG SET applies at once)."""
        cfg, me = self.config, self.myself
        # The bus itself is plain TCP (no tls-cluster), so the port announced is the plain
        # one, or the TLS one on a server that only has TLS.
        client_port = cfg["port"] or cfg["cluster-announce-tls-port"] or cfg["tls-port"]
        me.port = cfg["cluster-announce-port"] or client_port
        me.cport = (cfg["cluster-announce-bus-port"] or cfg["cluster-port"]
                    or (cfg["port"] or cfg["tls-port"]) + PORT_INCREMENT)
        if cfg["cluster-announce-ip"]:
            me.ip = cfg["cluster-announce-ip"]
        if me.hostname != cfg["cluster-announce-hostname"]:
            me.hostname = cfg["cluster-announce-hostname"]
            self.changed()

    def learn_my_ip(self, ip):
        if not self.config["cluster-announce-ip"] and ip and self.myself.ip != ip:
            self.myself.ip = ip
            self.changed()

    # ------------------------------------------------------------ slots

    def _add_slot(self, node, slot):
        if self.owner[slot] is not None:
            self._del_slot(slot)
        self.owner[slot] = node
        node.bitmap[slot >> 3] |= 1 << (slot & 7)
        node.numslots += 1

    def _del_slot(self, slot):
        node = self.owner[slot]
        if node is None:
            return
        if node is self.myself:
            self.channels.slot_lost(slot)
        node.bitmap[slot >> 3] &= ~(1 << (slot & 7))
        node.numslots -= 1
        self.owner[slot] = None

    def add_slots(self, slots):
        for slot in slots:
            self.importing.pop(slot, None)    # assigning a slot to myself ends its import
            self._add_slot(self.myself, slot)
        self.changed()

    def del_slots(self, slots):
        for slot in slots:
            self._del_slot(slot)
            self.migrating.pop(slot, None)
            self.importing.pop(slot, None)
        self.changed()

    def _refresh_serve_here(self):
        mine = self.serve_here
        if self.ok:
            mine[:] = b"".join(map(_BYTE_AS_SLOTS.__getitem__, self.myself.bitmap))
        else:
            mine[:] = bytes(CLUSTER_SLOTS)
        for slot in self.migrating:
            mine[slot] = 0
        for slot in self.importing:
            mine[slot] = 0

    def set_slot_owner(self, slot, node, holds_keys):
        """CLUSTER SETSLOT <slot> NODE <node>, once the command's checks passed (holds_keys:
        whether this node has keys in the slot, which only a slot migrating from here needs)."""
        if slot in self.migrating and not holds_keys:
            del self.migrating[slot]
        self._add_slot(node, slot)
        if node is self.myself and self.importing.pop(slot, None) is not None:
            # The slot is ours now: an epoch no other node has makes the claim win everywhere.
            self.bump_epoch()
        self.changed()

    def bump_epoch(self):
        """CLUSTER BUMPEPOCH (and the end of an import): a new config epoch unless ours is
        already the greatest one known. True when it bumped."""
        me = self.myself
        greatest = max(self.current_epoch, *(n.config_epoch for n in self.nodes.values()))
        if me.config_epoch != 0 and me.config_epoch == greatest:
            return False
        self.current_epoch = _next_epoch(self.current_epoch)
        me.config_epoch = self.current_epoch
        self.changed()
        return True

    # ------------------------------------------------------------ the node table

    def add_node(self, node):
        self.nodes[node.name] = node
        self.changed()

    def delete_node(self, node):
        """Forget a node: its slots become unassigned, its links close, its reports go."""
        for slot in range(CLUSTER_SLOTS):
            if self.owner[slot] is node:
                self._del_slot(slot)
        for table in (self.migrating, self.importing):
            for slot in [s for s, n in table.items() if n is node]:
                del table[slot]
        for other in self.nodes.values():
            other.fail_reports.pop(node.name, None)
        self._close(node)
        self.nodes.pop(node.name, None)
        self.changed()

    def _close(self, node):
        for link in (node.link, node.inbound_link):
            if link is not None:
                link.close()
        node.link = node.inbound_link = None

    def rename(self, node, name):
        del self.nodes[node.name]
        node.name = name
        self.nodes[name] = node
        self.changed()

    def forget(self, node):
        self.blacklist[node.name] = time.time() + BLACKLIST_SECONDS
        self.delete_node(node)

    def blacklisted(self, name):
        until = self.blacklist.get(name)
        return until is not None and until > time.time()

    def start_handshake(self, ip, port, cport):
        """CLUSTER MEET and gossip about an unknown node: a node under a random name, flagged
        handshake, until its PONG tells its real one. False when a handshake with that
        address is already under way."""
        for node in self.nodes.values():
            if node.flags & bus.NODE_HANDSHAKE and node.ip == ip and (node.port, node.cport) == (port, cport):
                return False
        node = Node(new_node_name(), bus.NODE_HANDSHAKE | bus.NODE_MEET, now_ms())
        node.ip, node.port, node.cport = ip, port, cport
        self.add_node(node)
        return True

    def reset(self, hard):
        """CLUSTER RESET: forget every other node and every slot; HARD also takes a new name
        and zeroes the epochs."""
        self.migrating.clear()
        self.importing.clear()
        for slot in range(CLUSTER_SLOTS):
            self._del_slot(slot)
        for node in [n for n in self.nodes.values() if n is not self.myself]:
            self.delete_node(node)
        if hard:
            self.current_epoch = self.last_vote_epoch = 0
            self.myself.config_epoch = 0
            self.rename(self.myself, new_node_name())
        self.changed()

    # ------------------------------------------------------------ messages out

    def _message(self, msg_type):
        me = self.myself
        announced_ip = self.config["cluster-announce-ip"]
        return bus.Message(
            type=msg_type, sender=me.name.encode("latin-1"), port=me.port, cport=me.cport,
            pport=me.pport, flags=me.flags, current_epoch=self.current_epoch,
            config_epoch=me.config_epoch, slots=bytes(me.bitmap),
            myip=announced_ip.encode() if announced_ip else b"",
            state=bus.STATE_OK if self.ok else bus.STATE_FAIL)

    def _send(self, link, msg):
        if link is None:
            return
        link.send(bus.encode(msg))
        if msg.type < len(self.sent):
            self.sent[msg.type] += 1

    def send_ping(self, link, msg_type=bus.PING):
        """PING, PONG or MEET with gossip about a tenth of the nodes (at least 3) and every
        node we suspect, as clusterSendPing chooses them."""
        msg = self._message(msg_type)
        me = self.myself
        wanted = min(max(3, len(self.nodes) // 10), max(0, len(self.nodes) - 2))
        chosen = {}
        candidates = list(self.nodes.values())
        for _ in range(wanted * 3):
            if len(chosen) >= wanted:
                break
            node = random.choice(candidates)
            if (node is me or node.flags & (bus.NODE_PFAIL | bus.NODE_HANDSHAKE | bus.NODE_NOADDR)
                    or (node.link is None and node.numslots == 0)):
                continue
            chosen[node.name] = node
        for node in candidates:
            if node.flags & bus.NODE_PFAIL and not node.flags & (bus.NODE_HANDSHAKE | bus.NODE_NOADDR):
                chosen[node.name] = node
        msg.gossip = [bus.Gossip(n.name.encode("latin-1"), n.ping_sent // 1000,
                                 n.pong_received // 1000, n.ip.encode(), n.port, n.cport,
                                 n.flags, n.pport) for n in chosen.values()]
        if me.hostname:
            msg.extensions = [bus.hostname_extension(me.hostname.encode())]
        if link.node is not None and msg_type == bus.PING:
            link.node.ping_sent = now_ms()
        self._send(link, msg)

    def _broadcast(self, msg):
        for node in self.nodes.values():
            if node is not self.myself and not node.flags & bus.NODE_HANDSHAKE:
                self._send(node.link, msg)

    def publish(self, channel, message):
        """PUBLISH on any node reaches the subscribers of every node (clusterPropagatePublish);
        SPUBLISH would go to the slot's replicas, and a cxlredis master has none."""
        msg = self._message(bus.PUBLISH)
        msg.channel, msg.payload = bytes(channel), bytes(message)
        self._broadcast(msg)

    def _send_update(self, link, node):
        msg = self._message(bus.UPDATE)
        msg.update_epoch = node.config_epoch
        msg.update_name = node.name.encode("latin-1")
        msg.update_slots = bytes(node.bitmap)
        self._send(link, msg)

    # ------------------------------------------------------------ messages in

    def receive(self, link, msg):
        """One decoded message from a link (clusterProcessPacket)."""
        now = now_ms()
        kind = msg.type
        if kind < len(self.received):
            self.received[kind] += 1
        sender = self.nodes.get(_name(msg.sender))
        if sender is not None and sender.flags & bus.NODE_HANDSHAKE:
            sender = None
        if sender is not None:
            sender.data_received = now
            if msg.current_epoch > self.current_epoch:
                self.current_epoch = msg.current_epoch
                self.changed()
            if msg.config_epoch > sender.config_epoch:
                sender.config_epoch = msg.config_epoch
                self.changed()
            sender.repl_offset = msg.offset
        if kind in (bus.PING, bus.MEET):
            if kind == bus.MEET or not self.myself.ip:
                self.learn_my_ip(link.local_ip)
            if sender is None and kind == bus.MEET:
                node = Node(new_node_name(), bus.NODE_HANDSHAKE, now)
                node.ip = _ip(msg.myip) or link.peer_ip
                node.port, node.cport, node.pport = msg.port, msg.cport, msg.pport
                self.add_node(node)
                self._gossip(msg, None, now)
            self.send_ping(link, bus.PONG)
        if kind in (bus.PING, bus.PONG, bus.MEET):
            if not self._ping_from(link, msg, sender, now):
                return
        elif kind == bus.FAIL:
            failing = self.nodes.get(_name(msg.about)) if sender is not None else None
            if failing is not None and not failing.flags & (bus.NODE_FAIL | bus.NODE_MYSELF):
                failing.flags = (failing.flags | bus.NODE_FAIL) & ~bus.NODE_PFAIL
                failing.fail_time = now
                self.changed()
                self.update_state()
        elif kind == bus.UPDATE and sender is not None:
            node = self.nodes.get(_name(msg.update_name))
            if node is not None and node.config_epoch < msg.update_epoch:
                if not node.is_master:
                    self._set_master(node)
                node.config_epoch = msg.update_epoch
                self._take_slots(node, msg.update_epoch, msg.update_slots)
                self.changed()
        elif kind in (bus.PUBLISH, bus.PUBLISHSHARD) and sender is not None:
            self.channels.publish_from_bus(msg.channel, msg.payload, kind == bus.PUBLISHSHARD)
        # MODULE and the failover messages: no modules or votes here.

    def _ping_from(self, link, msg, sender, now):
        """PING, PONG and MEET: handshakes, liveness, roles, slots and gossip. False when the
        link was dropped (the node it led to is gone or was someone else)."""
        sender_name = _name(msg.sender)
        node = link.node
        if node is not None and not link.inbound:
            if node.flags & bus.NODE_HANDSHAKE:
                if sender is not None:
                    # Met again under a known name: keep the known node, drop this one.
                    self._update_address(sender, link, msg)
                    self.delete_node(node)
                    return False
                if not valid_name(sender_name):
                    self.delete_node(node)
                    return False
                self.rename(node, sender_name)
                node.flags = (node.flags & ~bus.NODE_HANDSHAKE) | (
                    msg.flags & (bus.NODE_MASTER | bus.NODE_SLAVE))
                sender = node
                sender.data_received = now
            elif node.name != sender_name:
                # Another node answers at this address now: it has none we know of.
                node.flags |= bus.NODE_NOADDR
                node.ip, node.port, node.cport = "", 0, 0
                self._close(node)
                self.changed()
                return False
        if sender is not None and msg.type == bus.PING and link.inbound:
            if sender.inbound_link is not None and sender.inbound_link is not link:
                sender.inbound_link.close()
            sender.inbound_link = link
            link.node = sender
        if sender is not None and msg.type == bus.PING and self._update_address(sender, link, msg):
            self.changed()
        if not link.inbound and msg.type == bus.PONG and link.node is not None:
            node = link.node
            node.pong_received = now
            node.ping_sent = 0
            if node.flags & bus.NODE_PFAIL:
                node.flags &= ~bus.NODE_PFAIL
                self.changed(save=False)
            elif node.flags & bus.NODE_FAIL:
                self._clear_failure_if_needed(node, now)
        if sender is None:
            return True
        if msg.slaveof == bus.NO_NAME:
            if not sender.is_master:
                self._set_master(sender)
        else:
            master_name = _name(msg.slaveof)
            if sender.is_master or sender.master_name != master_name:
                for slot in range(CLUSTER_SLOTS):
                    if self.owner[slot] is sender:
                        self._del_slot(slot)
                sender.flags = (sender.flags & ~(bus.NODE_MASTER | bus.NODE_MIGRATE_TO)) | bus.NODE_SLAVE
                sender.master_name = master_name
                self.changed()
        sender_master = sender if sender.is_master else self.nodes.get(sender.master_name)
        dirty = sender.is_master and bytes(sender.bitmap) != msg.slots
        if sender_master is not None and dirty:
            self._take_slots(sender_master, msg.config_epoch, msg.slots)
            # The sender claims a slot whose owner we know to have a newer epoch: tell it.
            for slot in bus.bitmap_slots(msg.slots):
                owner = self.owner[slot]
                if owner is not None and owner is not sender and owner.config_epoch > msg.config_epoch:
                    self._send_update(sender.link, owner)
                    break
        me = self.myself
        if sender.is_master and msg.config_epoch == me.config_epoch and sender_name > me.name:
            # Two masters with one config epoch: the one with the smaller name moves on.
            self.current_epoch = _next_epoch(self.current_epoch)
            me.config_epoch = self.current_epoch
            self.changed()
        hostname = (msg.hostname() or b"").decode("latin-1")
        if not _HOSTNAME.fullmatch(hostname):
            # It goes into CLUSTER NODES and nodes.conf as a word: a space or a newline
            # from a peer would corrupt both (and this node's next start).
            hostname = ""
        if sender.hostname != hostname:
            sender.hostname = hostname
            self.changed()
        self._gossip(msg, sender, now)
        return True

    def _set_master(self, node):
        node.flags = (node.flags & ~bus.NODE_SLAVE) | bus.NODE_MASTER
        node.master_name = None
        self.changed()

    def _update_address(self, node, link, msg):
        """The address a node's messages come from, when it moved. True when it changed."""
        if link is node.link or node is self.myself:
            return False
        ip = _ip(msg.myip) or link.peer_ip
        if (node.ip, node.port, node.cport, node.pport) == (ip, msg.port, msg.cport, msg.pport):
            return False
        node.ip, node.port, node.cport, node.pport = ip, msg.port, msg.cport, msg.pport
        if node.link is not None:
            node.link.close()
            node.link = None
        node.flags &= ~bus.NODE_NOADDR
        return True

    def _take_slots(self, sender, epoch, bitmap):
        """A master claims these slots with this config epoch (clusterUpdateSlotsConfigWith):
        it gets each one whose owner has an older epoch, unless we are importing it. Our
        keys of a slot we lose this way go (the slot's data is the new owner's now)."""
        if sender is self.myself:
            return
        lost = []
        for slot in bus.bitmap_slots(bitmap):
            owner = self.owner[slot]
            if owner is sender or slot in self.importing:
                continue
            if owner is None or owner.config_epoch < epoch:
                if owner is self.myself:
                    lost.append(slot)
                self._add_slot(sender, slot)
                self.changed()
        if lost:
            self.keys.delete(lost)

    def _gossip(self, msg, sender, now):
        """What the sender says of other nodes (clusterProcessGossipSection)."""
        reporter = sender if sender is not None and sender.is_master else None
        for entry in msg.gossip:
            name = _name(entry.name)
            node = self.nodes.get(name)
            flags = entry.flags
            ip = _ip(entry.ip)
            if node is None:
                if (sender is not None and not flags & bus.NODE_NOADDR and valid_name(name)
                        and ip and not self.blacklisted(name)):
                    node = Node(name, flags & (bus.NODE_MASTER | bus.NODE_SLAVE
                                               | bus.NODE_NOFAILOVER), now)
                    node.ip = ip
                    node.port, node.cport, node.pport = entry.port, entry.cport, entry.pport
                    self.add_node(node)
                continue
            if reporter is not None and node is not self.myself:
                if flags & _FAILING:
                    node.fail_reports[reporter.name] = now
                    self._mark_failing_if_needed(node, now)
                else:
                    node.fail_reports.pop(reporter.name, None)
            if not flags & _FAILING and node.ping_sent == 0 and not node.fail_reports:
                pong = entry.pong_received * 1000
                if node.pong_received < pong <= now + 500:
                    node.pong_received = pong
            if (ip and node.failing and not flags & bus.NODE_NOADDR and node.link is None
                    and (node.ip, node.port, node.cport) != (ip, entry.port, entry.cport)):
                node.ip, node.port, node.cport, node.pport = ip, entry.port, entry.cport, entry.pport
                node.flags &= ~bus.NODE_NOADDR
                self.changed()

    # ------------------------------------------------------------ failure detection

    def _valid_reports(self, node, now):
        horizon = now - self.config["cluster-node-timeout"] * FAIL_REPORT_VALIDITY_MULT
        for name in [n for n, at in node.fail_reports.items() if at < horizon]:
            del node.fail_reports[name]
        return len(node.fail_reports)

    def _mark_failing_if_needed(self, node, now):
        if not node.flags & bus.NODE_PFAIL or node.flags & bus.NODE_FAIL:
            return
        if self._valid_reports(node, now) + 1 < self.size // 2 + 1:
            return
        node.flags = (node.flags | bus.NODE_FAIL) & ~bus.NODE_PFAIL
        node.fail_time = now
        msg = self._message(bus.FAIL)
        msg.about = node.name.encode("latin-1")
        self._broadcast(msg)
        self.changed()
        self.update_state()

    def _clear_failure_if_needed(self, node, now):
        forgiven = now - node.fail_time > self.config["cluster-node-timeout"] * FAIL_UNDO_TIME_MULT
        if not node.is_master or node.numslots == 0 or forgiven:
            node.flags &= ~bus.NODE_FAIL
            self.changed()

    def count_failure_reports(self, node):
        return self._valid_reports(node, now_ms())

    def update_state(self):
        """Cluster state ok or fail (clusterUpdateState)."""
        now = now_ms()
        me = self.myself
        if not self.ok and now - self.start_ms < WRITABLE_DELAY_MS:
            return
        size = reachable = served = 0
        for node in self.nodes.values():
            if node.is_master and node.numslots:
                size += 1
                reachable += not node.failing
                served += 0 if node.flags & bus.NODE_FAIL else node.numslots
        # full coverage: every slot has an owner, and no owner has failed
        ok = served == CLUSTER_SLOTS or not self.config["cluster-require-full-coverage"]
        self.size = size
        if reachable < size // 2 + 1:
            ok = False
            self.among_minority_since = now
        if ok != self.ok:
            low, high = REJOIN_DELAY_MS
            rejoin = min(max(self.config["cluster-node-timeout"], low), high)
            if ok and me.numslots and now - self.among_minority_since < rejoin:
                return
            self.ok = ok
            self._routing_changed = True

    def cron(self):
        """Ten times a second (clusterCron): connect, ping, time out, suspect."""
        now = now_ms()
        self.iteration += 1
        self.refresh_myself()
        timeout = self.config["cluster-node-timeout"]
        handshake_timeout = max(timeout, 1000)
        for node in list(self.nodes.values()):
            if node is self.myself or node.flags & bus.NODE_NOADDR:
                continue
            if node.flags & bus.NODE_HANDSHAKE and now - node.ctime > handshake_timeout:
                self.delete_node(node)
                continue
            if node.link is None:
                node.link = self.connect(node)
                earlier = node.ping_sent
                self.send_ping(node.link, bus.MEET if node.flags & bus.NODE_MEET else bus.PING)
                if earlier:
                    node.ping_sent = earlier      # a reconnect does not restart the timeout
                node.flags &= ~bus.NODE_MEET
        if self.iteration % 10 == 0:
            # Once a second, ping the one of five random nodes we heard from least recently.
            idle = [n for n in self.nodes.values() if n.link is not None and n.ping_sent == 0
                    and n is not self.myself and not n.flags & bus.NODE_HANDSHAKE]
            sample = random.sample(idle, min(5, len(idle)))
            if sample:
                oldest = min(sample, key=lambda n: n.pong_received)
                self.send_ping(oldest.link)
        for node in list(self.nodes.values()):
            if node is self.myself or node.flags & (bus.NODE_NOADDR | bus.NODE_HANDSHAKE):
                continue
            ping_delay, data_delay = now - node.ping_sent, now - node.data_received
            link = node.link
            if (link is not None and now - link.ctime > timeout and node.ping_sent
                    and ping_delay > timeout / 2 and data_delay > timeout / 2):
                link.close()                  # reconnect: the link may be what is broken
                node.link = None
            if node.link is not None and node.ping_sent == 0 and now - node.pong_received > timeout / 2:
                self.send_ping(node.link)
                continue
            if node.ping_sent and min(ping_delay, data_delay) > timeout and not node.failing:
                node.flags |= bus.NODE_PFAIL
        for node in self.nodes.values():
            if node.flags & bus.NODE_PFAIL:
                self._mark_failing_if_needed(node, now)
        self.update_state()
        expired = [name for name, until in self.blacklist.items() if until <= time.time()]
        for name in expired:
            del self.blacklist[name]
        self.flush()

    def link_closed(self, link):
        """links.py: a link was closed (by either side, or failed to connect)."""
        node = link.node
        if node is None:
            return
        if node.link is link:
            node.link = None
        if node.inbound_link is link:
            node.inbound_link = None

    # ------------------------------------------------------------ what commands read

    def known_masters(self):
        return [n for n in self.nodes.values() if n.is_master]

    def slot_ranges(self):
        """[(start, end, owner)] over the assigned slots, in slot order."""
        ranges, start = [], None
        for slot in range(CLUSTER_SLOTS + 1):
            owner = self.owner[slot] if slot < CLUSTER_SLOTS else None
            if start is not None and (owner is not self.owner[start]):
                ranges.append((start, slot - 1, self.owner[start]))
                start = None
            if start is None and owner is not None:
                start = slot
        return ranges

    def replicas_of(self, master):
        return [n for n in self.nodes.values() if n.master_name == master.name]

    def endpoint(self, node):
        """How MOVED, ASK and CLUSTER SLOTS name the node (cluster-preferred-endpoint-type)."""
        kind = self.config["cluster-preferred-endpoint-type"]
        if kind == "ip":
            return node.ip
        if kind == "hostname":
            return node.hostname or "?"
        return "?"

    def info_fields(self):
        assigned = ok = pfail = fail = 0
        for owner in self.owner:
            if owner is None:
                continue
            assigned += 1
            if owner.flags & bus.NODE_FAIL:
                fail += 1
            elif owner.flags & bus.NODE_PFAIL:
                pfail += 1
            else:
                ok += 1
        fields = [("cluster_state", "ok" if self.ok else "fail"),
                  ("cluster_slots_assigned", assigned), ("cluster_slots_ok", ok),
                  ("cluster_slots_pfail", pfail), ("cluster_slots_fail", fail),
                  ("cluster_known_nodes", len(self.nodes)), ("cluster_size", self.size),
                  ("cluster_current_epoch", self.current_epoch),
                  ("cluster_my_epoch", self.myself.config_epoch)]
        for counts, direction in ((self.sent, "sent"), (self.received, "received")):
            for kind, name in enumerate(bus.TYPE_NAMES):
                if counts[kind]:
                    fields.append((f"cluster_stats_messages_{name}_{direction}", counts[kind]))
            fields.append((f"cluster_stats_messages_{direction}", sum(counts)))
        fields.append(("total_cluster_links_buffer_limit_exceeded", 0))
        return fields


def _ranges(node):
    """The node's slots as CLUSTER NODES words ("0-5460", "7000"), from runs of set bits in
    its bitmap as one integer (slot s is bit s): every nodes.conf save and CLUSTER NODES
    formats every node, so a loop over 16384 slots per node made each SETSLOT cost
    milliseconds per node."""
    bits, words = int.from_bytes(node.bitmap, "little"), []
    while bits:
        start = (bits & -bits).bit_length() - 1
        # Adding the run's lowest bit carries through the run: the first bit above it is set.
        above = bits + (1 << start)
        end = (above & -above).bit_length() - 2
        words.append(str(start) if start == end else f"{start}-{end}")
        bits &= ~((1 << (end + 1)) - 1)
    return words
