"""Differential tests of cluster mode: a 3-node cxlredis cluster against a 3-node
redis-server 7.0 cluster, both formed by redis-cli --cluster create (so both split the
slots evenly, in node order), the same script sent to node i of each over raw RESP.

Replies are compared byte for byte after each cluster's node ids, client ports and bus
ports are written as node<i>, port<i> and bus<i> (bulk lengths recomputed), and what
belongs to the moment is taken out: the ping/pong times of CLUSTER NODES, the counts
of CLUSTER INFO's cluster_stats_* (and the kinds of message only some events send), the
times and buffer sizes of CLUSTER LINKS. Where Redis answers in its hash tables' order
(CLUSTER NODES lines, CLUSTER SHARDS entries, KEYS), the elements are sorted, and so are
GETKEYSINSLOT's (Redis lists a slot's newest keys first, cxlredis in index order).

A step is a tuple of arguments; Id(i) in it stands for node i's id in each cluster.
Tests that change the slot map put it back before they end; one that moves a slot or
bumps an epoch waits for gossip to settle before it compares what other nodes know.
"""
import re
import threading
from dataclasses import dataclass

import pytest

from conftest import encode_command, raw_connection
from cluster_harness import (cluster_info, cluster_node, close_all, form, node_id,
                             wait_for, wait_until_stable)
from cxlredis.cluster.slots import key_slot

SLOTS = 16384


@dataclass(frozen=True)
class Id:
    node: int


class Cluster:
    """The three started and formed nodes of one kind, and how to write their names."""

    def __init__(self, kind, nodes):
        self.kind, self.nodes = kind, nodes
        self.ids = [node_id(n) for n in nodes]
        self.ports = [n.port for n in nodes]
        self.buses = [int(n.options["cluster-port"]) for n in nodes]
        # Ports are written as port<i> wherever they occur: one that could also be a slot
        # number or a small count would make the rewriting ambiguous.
        assert min(self.ports + self.buses) >= SLOTS, (self.ports, self.buses)

    def resolve(self, arg):
        return self.ids[arg.node] if isinstance(arg, Id) else arg

    def rewrite(self, text):
        for i, name in enumerate(self.ids):
            text = text.replace(name.encode(), b"node%d" % i)
        for values, word in ((self.buses, b"bus%d"), (self.ports, b"port%d")):
            for i, value in enumerate(values):
                text = re.sub(rb"(?<!\d)%d(?!\d)" % value, word % i, text)
        return text


# ------------------------------------------------------------ replies as trees

def _parse(buf, pos):
    """(kind, payload, end): payload is the line, the blob (None for a null) or the
    list of elements (a map's keys and values in turn)."""
    eol = buf.index(b"\r\n", pos)
    kind, header, after = buf[pos:pos + 1], buf[pos + 1:eol], eol + 2
    if kind in b"+-:_#,(":
        return kind, header, after
    if kind in b"$!=":
        length = int(header)
        if length < 0:
            return kind, None, after
        return kind, buf[after:after + length], after + length + 2
    count = int(header)
    if count < 0:
        return kind, None, after
    elements = []
    for _ in range(count * (2 if kind == b"%" else 1)):
        element_kind, payload, after = _parse(buf, after)
        elements.append((element_kind, payload))
    return kind, elements, after


def _encode(kind, payload):
    if payload is None:
        return kind + b"-1\r\n"
    if kind in b"+-:_#,(":
        return kind + payload + b"\r\n"
    if kind in b"$!=":
        return b"%s%d\r\n%s\r\n" % (kind, len(payload), payload)
    count = len(payload) // (2 if kind == b"%" else 1)
    return b"%s%d\r\n" % (kind, count) + b"".join(_encode(*e) for e in payload)


def _rewrite(cluster, kind, payload):
    if payload is None:
        return kind, None
    if isinstance(payload, list):
        return kind, [_rewrite(cluster, *e) for e in payload]
    return kind, cluster.rewrite(payload)


def _text_lines(kind, payload, edit):
    """Apply edit to the lines of a text reply (a verbatim string keeps its txt: prefix)."""
    prefix = payload[:4] if kind == b"=" else b""
    lines = edit(payload[len(prefix):].split(b"\n"))
    return kind, prefix + b"\n".join(lines)


def _node_lines(lines):
    # <id> <addr> <flags> <master> <ping-sent> <pong-recv> <epoch> <link> <slots...>:
    # the two times are the moment's; the lines come in the order of Redis's hash table.
    fixed = []
    for line in lines:
        words = line.split(b" ")
        if len(words) >= 8:
            words[4:6] = [b"<ping>", b"<pong>"]
        fixed.append(b" ".join(words))
    return sorted(w for w in fixed if w) + [b""]


_EVERY_NODE_SENDS = re.compile(rb"cluster_stats_messages_((ping|pong|meet)_)?(sent|received):")


def _info_lines(lines):
    # The bus message counters: which kinds were sent and received, not how many. Only
    # the kinds a formed cluster always exchanges: an UPDATE (or FAIL) depends on whose
    # ping went first while a slot changed hands.
    return [re.sub(rb":\d+(\r?)$", rb":<count>\1", line) for line in lines
            if not line.startswith(b"cluster_stats_") or _EVERY_NODE_SENDS.match(line)]


_LINK_MOMENT = {b"create-time", b"events", b"send-buffer-allocated", b"send-buffer-used"}


def _link(kind, fields):
    # a map in RESP3, a flat array of names and values in RESP2
    out = []
    for name, value in zip(fields[0::2], fields[1::2]):
        out += [name, (b"+", b"<moment>") if name[1] in _LINK_MOMENT else value]
    return kind, out


def _hello(pairs):
    # the connection's id is the server's count of connections so far
    return [(b":", b"<id>") if i and pairs[i - 1] == (b"$", b"id") else field
            for i, field in enumerate(pairs)]


def normalise(argv, cluster, reply):
    kind, payload, end = _parse(reply, 0)
    assert end == len(reply), reply
    kind, payload = _rewrite(cluster, kind, payload)
    name = b" ".join(bytes(a).upper() for a in argv[:2])
    if kind not in (b"-", b"!") and payload is not None:
        if name == b"CLUSTER NODES":
            kind, payload = _text_lines(kind, payload, _node_lines)
        elif name in (b"CLUSTER REPLICAS", b"CLUSTER SLAVES"):
            payload = sorted(_text_lines(k, p, _node_lines) for k, p in payload)
        elif name == b"CLUSTER INFO":
            kind, payload = _text_lines(kind, payload, _info_lines)
        elif name == b"CLUSTER LINKS":
            payload = sorted(_link(*e) for e in payload)
        elif name in (b"CLUSTER SHARDS", b"CLUSTER GETKEYSINSLOT") or argv[0].upper() == b"KEYS":
            payload = sorted(payload)
        elif argv[0].upper() == b"HELLO":
            payload = _hello(payload)
    return _encode(kind, payload)


# ------------------------------------------------------------ lockstep on two clusters

class Mismatch(AssertionError):
    pass


class Pair:
    """The two clusters; run() sends a script to node i of each and compares."""

    def __init__(self, redis_cluster, cxl_cluster):
        self.sides = (redis_cluster, cxl_cluster)

    def run(self, node, steps, protocol=2, compare=None):
        """Send the steps on one connection per cluster (HELLO 3 first for RESP3); return
        the oracle's normalised replies. compare(argv, a, b) may replace equality."""
        conns = [raw_connection(side.ports[node]) for side in self.sides]
        done, replies = [], []
        try:
            if protocol == 3:
                steps = [("HELLO", "3")] + list(steps)
            for step in steps:
                got = []
                for side, conn in zip(self.sides, conns):
                    argv = [side.resolve(a) for a in step]
                    conn.send(encode_command(*argv))
                    got.append(normalise([_b(a) for a in argv], side, conn.read_reply()))
                same = compare(step, *got) if compare else got[0] == got[1]
                if not same:
                    raise Mismatch(
                        f"node {node} RESP{protocol} differs at {_show(step)}\n"
                        f"  redis-server: {got[0][:600]!r}\n  cxlredis:     {got[1][:600]!r}\n"
                        "before it:\n" + "\n".join(done[-25:]))
                done.append(f"  {_show(step)} -> {got[0][:100]!r}")
                replies.append(got[0])
        finally:
            for conn in conns:
                conn.close()
        return replies

    def all_nodes(self, steps, protocol=2):
        for node in range(3):
            self.run(node, steps, protocol)

    def settle(self):
        """Wait until, in each cluster, every node is ok and agrees on the slots and on
        every node's config epoch (gossip carries what one node changed to the others),
        and has its two links, to and from, with every other node (a peer connects in
        when its own cron gets to it)."""
        for side in self.sides:
            wait_until_stable(side.nodes)
            wait_for(lambda: len({_epochs(n) for n in side.nodes}) == 1,
                     f"the {side.kind} nodes to agree on the epochs")
            wait_for(lambda: all(_links(n) == 2 * (len(side.nodes) - 1) for n in side.nodes),
                     f"the {side.kind} nodes to link both ways")


def _b(arg):
    return arg if isinstance(arg, bytes) else str(arg).encode()


def _show(step):
    return " ".join(repr(a) if isinstance(a, Id) else _b(a).decode("latin-1")[:60]
                    for a in step)


def _links(node):
    with node.client() as client:
        return len(client.execute_command("CLUSTER", "LINKS"))


def _epochs(node):
    with node.client() as client:
        text = client.execute_command("CLUSTER", "NODES").decode()
    return tuple(sorted((w[0], w[6]) for w in (line.split() for line in text.splitlines())))


@pytest.fixture(scope="module")
def pair():
    groups = {kind: [cluster_node(kind) for _ in range(3)] for kind in ("redis", "cxlredis")}
    try:
        # Both formations wait for gossip: in parallel they take the time of one.
        failures = []

        def formed(nodes):
            try:
                form(nodes)
            except Exception as e:      # re-raised below, in the test's thread
                failures.append(e)
        threads = [threading.Thread(target=formed, args=(nodes,)) for nodes in groups.values()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]
        clusters = Pair(Cluster("redis", groups["redis"]), Cluster("cxlredis", groups["cxlredis"]))
        for side in clusters.sides:         # the layout owner() and the scripts assume
            with side.nodes[0].client() as client:
                slots = client.execute_command("CLUSTER", "SLOTS")
            assert sorted((r[0], r[1], side.ports.index(r[2][1])) for r in slots) == [
                (0, 5460, 0), (5461, 10922, 1), (10923, 16383, 2)]
        clusters.settle()
        yield clusters
    finally:
        for nodes in groups.values():
            close_all(nodes)


def owner(slot):
    return 0 if slot <= 5460 else 1 if slot <= 10922 else 2


def keys_on(node, count, prefix="k"):
    """count keys in distinct slots that node serves."""
    found, seen, i = [], set(), 0
    while len(found) < count:
        key = f"{prefix}{i}"
        slot = key_slot(key.encode())
        if owner(slot) == node and slot not in seen:
            found.append(key)
            seen.add(slot)
        i += 1
    return found


def key_in_slot(slot, prefix="s"):
    i = 0
    while key_slot(f"{prefix}{i}".encode()) != slot:
        i += 1
    return f"{prefix}{i}"


PROTOCOLS = pytest.mark.parametrize("protocol", [2, 3])


# ------------------------------------------------------------ what the nodes know

KEYSLOT_KEYS = ["", "a", "{", "}", "{}", "{}a", "a{}", "{a", "a}", "{a}", "{a}b", "x{a}y",
                "{{a}}", "{a}{b}", "a{b}c{d}", "}{a}", b"\x00\xff{\x01}", "k" * 1000]


@PROTOCOLS
def test_topology_and_info_replies_match(pair, protocol):
    for node in range(3):
        pair.run(node, [
            ("CLUSTER", "INFO"), ("CLUSTER", "MYID"), ("CLUSTER", "NODES"), ("CLUSTER", "SLOTS"),
            ("CLUSTER", "SHARDS"), ("CLUSTER", "LINKS"), ("INFO", "cluster"),
            ("CLUSTER", "HELP"), ("cluster", "help"),
            *[("CLUSTER", "REPLICAS", Id(i)) for i in range(3)],
            *[("CLUSTER", "SLAVES", Id(i)) for i in range(3)],
            *[("CLUSTER", "COUNT-FAILURE-REPORTS", Id(i)) for i in range(3)],
            *[("CLUSTER", "KEYSLOT", key) for key in KEYSLOT_KEYS],
            ("CLUSTER", "COUNTKEYSINSLOT", 0), ("CLUSTER", "COUNTKEYSINSLOT", 16383),
            ("CLUSTER", "GETKEYSINSLOT", 0, 10), ("CLUSTER", "SAVECONFIG"),
            ("READONLY",), ("READWRITE",), ("ASKING",), ("PING",),
            ("COMMAND", "DOCS", "cluster|failover", "cluster|replicate"),
            ("COMMAND", "INFO", "cluster|failover", "cluster|replicate"),
        ], protocol)


# ------------------------------------------------------------ MOVED and CROSSSLOT

KEYED = [
    ("APPEND", "{F}", "x"), ("DECR", "{F}"), ("DECRBY", "{F}", 1), ("DEL", "{F}"),
    ("EXISTS", "{F}"), ("EXPIRE", "{F}", 1), ("EXPIREAT", "{F}", 1), ("EXPIRETIME", "{F}"),
    ("GET", "{F}"), ("GETDEL", "{F}"), ("GETEX", "{F}"), ("GETRANGE", "{F}", 0, 1),
    ("GETSET", "{F}", "v"), ("HDEL", "{F}", "f"), ("HEXISTS", "{F}", "f"), ("HGET", "{F}", "f"),
    ("HGETALL", "{F}"), ("HINCRBY", "{F}", "f", 1), ("HINCRBYFLOAT", "{F}", "f", 1),
    ("HKEYS", "{F}"), ("HLEN", "{F}"), ("HMGET", "{F}", "f"), ("HMSET", "{F}", "f", "v"),
    ("HRANDFIELD", "{F}"), ("HSCAN", "{F}", 0), ("HSET", "{F}", "f", "v"),
    ("HSETNX", "{F}", "f", "v"), ("HSTRLEN", "{F}", "f"), ("HVALS", "{F}"), ("INCR", "{F}"),
    ("INCRBY", "{F}", 1), ("INCRBYFLOAT", "{F}", 1), ("MEMORY", "USAGE", "{F}"),
    ("MGET", "{F}"), ("MSET", "{F}", 1), ("MSETNX", "{F}", 1), ("OBJECT", "ENCODING", "{F}"),
    ("OBJECT", "FREQ", "{F}"), ("OBJECT", "IDLETIME", "{F}"), ("OBJECT", "REFCOUNT", "{F}"),
    ("PERSIST", "{F}"), ("PEXPIRE", "{F}", 1), ("PEXPIREAT", "{F}", 1), ("PEXPIRETIME", "{F}"),
    ("PSETEX", "{F}", 1, "v"), ("PTTL", "{F}"), ("RENAME", "{F}", "{F}x"),
    ("RENAMENX", "{F}", "{F}x"), ("COPY", "{F}", "{F}x"), ("SET", "{F}", "v"),
    ("SET", "{F}", "v", "GET"), ("SET", "{F}", "v", "BADOPTION"), ("SETEX", "{F}", 1, "v"),
    ("SETNX", "{F}", "v"), ("SETRANGE", "{F}", 0, "v"), ("STRLEN", "{F}"),
    ("SUBSTR", "{F}", 0, 1), ("TOUCH", "{F}"), ("TTL", "{F}"), ("TYPE", "{F}"),
    ("UNLINK", "{F}"), ("WATCH", "{F}"),
    ("SETBIT", "{F}", 0, 1), ("GETBIT", "{F}", 0), ("BITCOUNT", "{F}"), ("BITPOS", "{F}", 1),
    ("BITOP", "AND", "{F}", "{F}x"), ("BITFIELD", "{F}", "GET", "u8", 0),
    ("BITFIELD_RO", "{F}", "GET", "u8", 0), ("LCS", "{F}", "{F}x"),
]


def _with(step, foreign):
    return tuple(a.replace("{F}", "{%s}" % foreign) if isinstance(a, str) else a for a in step)


@PROTOCOLS
def test_moved_crossslot_and_hash_tags(pair, protocol):
    for node in range(3):
        here_a, here_b = keys_on(node, 2)
        there = keys_on((node + 1) % 3, 1)[0]
        steps = [("CONFIG", "RESETSTAT")]
        steps += [_with(step, there) for step in KEYED]
        steps += [
            # arity is checked before the slot, the slot before the command's own syntax
            ("GET",), ("SET", there), ("MGET",), ("MSET", there, 1, here_a),
            # keys in two slots: CROSSSLOT wherever the slots are
            ("MSET", here_a, 1, here_b, 2), ("MGET", here_a, here_b), ("DEL", here_a, here_b),
            ("MGET", here_a, there), ("MGET", there, here_a), ("EXISTS", here_a, there),
            ("RENAME", here_a, here_b), ("COPY", here_a, there), ("MSETNX", there, 1, here_a, 1),
            ("TOUCH", here_a, here_b), ("UNLINK", here_b, there), ("WATCH", here_a, here_b),
            # one key twice, and hash tags, stay in one slot
            ("MGET", here_a, here_a), ("DEL", there, there),
            ("MSET", "{%s}1" % here_a, 1, "{%s}2" % here_a, 2),
            ("MGET", "{%s}1" % here_a, "{%s}2" % here_a, here_a),
            ("MSET", "{%s}1" % there, 1, "{%s}2" % there, 2),
            ("DEL", "{%s}1" % here_a, "{%s}2" % here_a),
            # a transaction: a queued command for another node is refused at once; keys of
            # two slots across queued commands are refused by EXEC
            ("MULTI",), ("SET", here_a, 1), ("SET", there, 1), ("EXEC",),
            ("MULTI",), ("SET", here_a, 1), ("SET", here_b, 1), ("EXEC",),
            ("MULTI",), ("SET", here_a, 1), ("GET", here_a), ("DEL", here_a), ("EXEC",),
            ("WATCH", there), ("WATCH", here_a), ("UNWATCH",),
            # keyless commands are served wherever they are sent
            ("PING",), ("ECHO", "x"), ("DBSIZE",), ("KEYS", "*"),
            ("INFO", "errorstats"),
        ]
        pair.run(node, steps, protocol)


# ------------------------------------------------------------ a slot on the move

MOVING = 3300                 # node 0 hands it to node 1


def _moving_keys(*suffixes):
    return ["{b}%s" % s for s in suffixes]      # "b" hashes to 3300


@PROTOCOLS
def test_ask_and_tryagain_while_a_slot_moves(pair, protocol):
    k1, k2, k3, k4, k5, k6, k7 = _moving_keys(1, 2, 3, 4, 5, 6, 7)
    assert {key_slot(k.encode()) for k in (k1, k2)} == {MOVING}
    try:
        pair.run(1, [("CLUSTER", "SETSLOT", MOVING, "IMPORTING", Id(0))])
        pair.run(0, [("MSET", k1, "v1", k3, "v3"),
                     ("CLUSTER", "SETSLOT", MOVING, "MIGRATING", Id(1)),
                     ("CLUSTER", "NODES")], protocol)
        pair.run(1, [("CLUSTER", "NODES")], protocol)
        pair.run(0, [
            ("CONFIG", "RESETSTAT"),
            # the migrating node serves what it still has, sends the rest on with ASK
            ("GET", k1), ("GET", k2), ("SET", k2, "x"), ("EXISTS", k1), ("EXISTS", k2),
            ("MGET", k1, k3), ("MGET", k2, k4), ("MGET", k1, k2), ("MGET", k2, k1),
            ("MSET", k1, "a", k2, "b"), ("DEL", k1, k2), ("MGET", k2, k2), ("MGET", k1, k1),
            ("TYPE", k2), ("TTL", k2), ("HSET", k2, "f", "v"), ("INCR", k2),
            ("MGET", k2, "a"),                    # another slot still wins: CROSSSLOT
            ("MULTI",), ("GET", k1), ("EXEC",),
            ("MULTI",), ("GET", k2), ("EXEC",),
            ("MULTI",), ("GET", k1), ("GET", k2), ("EXEC",),
            ("WATCH", k1), ("WATCH", k2), ("UNWATCH",),
            ("ASKING",), ("GET", k2),             # ASKING changes nothing on this side
            ("CLUSTER", "COUNTKEYSINSLOT", MOVING), ("CLUSTER", "GETKEYSINSLOT", MOVING, 10),
            # the slot cannot be given away while keys of it are here
            ("CLUSTER", "SETSLOT", MOVING, "NODE", Id(1)),
            ("INFO", "errorstats"),
        ], protocol)
        pair.run(1, [
            ("CONFIG", "RESETSTAT"),
            # the importing node: MOVED without ASKING; ASKING covers the next command only
            ("GET", k1), ("ASKING",), ("GET", k1), ("GET", k1),
            ("ASKING",), ("SET", k2, "new"), ("GET", k2), ("ASKING",), ("ASKING",), ("GET", k2),
            ("GET", k2), ("ASKING",), ("PING",), ("GET", k2),
            # several keys with ASKING: TRYAGAIN while some are missing here
            ("ASKING",), ("MGET", k2, k5), ("ASKING",), ("MGET", k5, k6),
            ("ASKING",), ("MGET", k2, k2), ("ASKING",), ("MSET", k5, 1, k6, 2),
            ("ASKING",), ("MGET", k2, k5), ("ASKING",), ("DEL", k5, k6),
            # ASKING before MULTI covers the whole transaction
            ("ASKING",), ("MULTI",), ("SET", k7, "x"), ("GET", k7), ("EXEC",), ("GET", k7),
            ("MULTI",), ("ASKING",), ("GET", k7), ("EXEC",),
            ("ASKING",), ("MULTI",), ("GET", k7), ("DISCARD",), ("GET", k7),
            ("ASKING",), ("MULTI",), ("SET", k7, "y"), ("SET", "{b}8", "y"), ("EXEC",),
            ("ASKING",), ("MULTI",), ("SET", k7, "y"), ("SET", "a", "y"), ("EXEC",),
            ("ASKING",), ("MULTI",), ("PING",), ("EXEC",), ("GET", k7),
            ("ASKING",), ("WATCH", k7), ("GET", k7), ("ASKING",), ("WATCH", k7), ("UNWATCH",),
            ("ASKING",), ("GET", "a"), ("READONLY",), ("GET", k7), ("READWRITE",),
            ("CLUSTER", "COUNTKEYSINSLOT", MOVING), ("CLUSTER", "GETKEYSINSLOT", MOVING, 10),
            ("INFO", "errorstats"),
        ], protocol)
    finally:
        for node in (0, 1):
            pair.run(node, [("CLUSTER", "SETSLOT", MOVING, "STABLE"), ("FLUSHALL",)])
    pair.run(0, [("CLUSTER", "NODES"), ("GET", k1)], protocol)


def test_a_slot_moved_to_another_node_and_back(pair):
    slot = MOVING + 1
    key = key_in_slot(slot)
    for source, target in ((0, 1), (1, 0)):
        pair.run(target, [("CLUSTER", "SETSLOT", slot, "IMPORTING", Id(source))])
        pair.run(source, [("CLUSTER", "SETSLOT", slot, "MIGRATING", Id(target)), ("GET", key)])
        # the new owner first (it takes a new config epoch), then the old one
        pair.run(target, [("CLUSTER", "SETSLOT", slot, "NODE", Id(target)), ("GET", key),
                          ("CLUSTER", "INFO")])
        pair.run(source, [("CLUSTER", "SETSLOT", slot, "NODE", Id(target)), ("GET", key)])
        pair.settle()
        pair.all_nodes([("GET", key), ("CLUSTER", "NODES"), ("CLUSTER", "SLOTS"),
                        ("CLUSTER", "SHARDS"), ("CLUSTER", "INFO")])


def test_bumpepoch_in_a_formed_cluster(pair):
    # node 0 has the smallest config epoch: it takes a new greatest one, once
    pair.run(0, [("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "INFO")])
    # each in turn once all know the last one's (a node knows what gossip told it so far)
    for node in range(3):
        pair.settle()
        pair.run(node, [("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "INFO"), ("CLUSTER", "NODES")])
    pair.settle()
    pair.all_nodes([("CLUSTER", "INFO"), ("CLUSTER", "NODES")])


# ------------------------------------------------------------ keys of a slot

def test_slot_key_counts_after_the_same_writes(pair):
    tagged = ["{b}%d" % i for i in range(40)] + ["b", "{b}", "x{b}y", "{b}{c}"]
    try:
        pair.run(0, [("SET", key, "v") for key in tagged] + [
            ("HSET", "{b}h", "f", "v"), ("DEL", "{b}3", "{b}4"), ("SET", "k2", "v"),
            ("CLUSTER", "COUNTKEYSINSLOT", MOVING), ("CLUSTER", "GETKEYSINSLOT", MOVING, 100),
            ("CLUSTER", "GETKEYSINSLOT", MOVING, 0), ("CLUSTER", "COUNTKEYSINSLOT", 449),
            ("CLUSTER", "GETKEYSINSLOT", 449, 1), ("CLUSTER", "COUNTKEYSINSLOT", MOVING + 1),
            ("CLUSTER", "GETKEYSINSLOT", MOVING + 1, 5), ("CLUSTER", "COUNTKEYSINSLOT", 12000),
            ("CLUSTER", "GETKEYSINSLOT", 12000, 5), ("DBSIZE",),
            ("CLUSTER", "KEYSLOT", "{b}{c}"),
        ])
        # Fewer than the slot holds: which ones is each server's own order.
        pair.run(0, [("CLUSTER", "GETKEYSINSLOT", MOVING, 5)],
                 compare=lambda step, a, b: a[:4] == b[:4] == b"*5\r\n")
        pair.run(1, [("CLUSTER", "COUNTKEYSINSLOT", MOVING), ("DBSIZE",)])
    finally:
        pair.run(0, [("FLUSHALL",)])


# ------------------------------------------------------------ CLUSTER subcommand errors

NOBODY = "0123456789abcdef0123456789abcdef01234567"


@PROTOCOLS
def test_cluster_subcommand_errors(pair, protocol):
    mine = keys_on(0, 1)[0]
    pair.run(0, [
        # ADDSLOTS / ADDSLOTSRANGE: busy, invalid, repeated, out of range
        ("CLUSTER", "ADDSLOTS", 0), ("CLUSTER", "ADDSLOTS", 6000), ("CLUSTER", "ADDSLOTS", 16383),
        ("CLUSTER", "ADDSLOTS", -1), ("CLUSTER", "ADDSLOTS", 16384),
        ("CLUSTER", "ADDSLOTS", 2 ** 63), ("CLUSTER", "ADDSLOTS", 2 ** 63 - 1),
        ("CLUSTER", "ADDSLOTS", -2 ** 63), ("CLUSTER", "ADDSLOTS", "x"),
        ("CLUSTER", "ADDSLOTS", "1.5"), ("CLUSTER", "ADDSLOTS", " 1"), ("CLUSTER", "ADDSLOTS", "01"),
        ("CLUSTER", "ADDSLOTS", "+1"), ("CLUSTER", "ADDSLOTS", ""), ("CLUSTER", "ADDSLOTS"),
        ("CLUSTER", "ADDSLOTS", 16383, 16383), ("CLUSTER", "ADDSLOTS", 1, "x"),
        ("CLUSTER", "ADDSLOTS", "x", 16384),
        ("CLUSTER", "ADDSLOTSRANGE", 1), ("CLUSTER", "ADDSLOTSRANGE", 1, 2, 3),
        ("CLUSTER", "ADDSLOTSRANGE", 5, 3), ("CLUSTER", "ADDSLOTSRANGE", 0, 16384),
        ("CLUSTER", "ADDSLOTSRANGE", -1, 3), ("CLUSTER", "ADDSLOTSRANGE", 0, 3),
        ("CLUSTER", "ADDSLOTSRANGE", "x", 3), ("CLUSTER", "ADDSLOTSRANGE", 3, "x"),
        ("CLUSTER", "ADDSLOTSRANGE", 0, 1, 1, 2), ("CLUSTER", "ADDSLOTSRANGE", 9, 3, "x", 1),
        ("CLUSTER", "ADDSLOTSRANGE"), ("CLUSTER", "ADDSLOTSRANGE", 0, 1, 2),
        # DELSLOTS / DELSLOTSRANGE
        ("CLUSTER", "DELSLOTS", "x"), ("CLUSTER", "DELSLOTS", 16384), ("CLUSTER", "DELSLOTS", -1),
        ("CLUSTER", "DELSLOTS"), ("CLUSTER", "DELSLOTSRANGE", 1),
        ("CLUSTER", "DELSLOTSRANGE", 1, 2, 3), ("CLUSTER", "DELSLOTSRANGE", 5, 3),
        ("CLUSTER", "DELSLOTSRANGE", "x", "y"), ("CLUSTER", "DELSLOTSRANGE", 0, 16384),
        # SETSLOT: slot, action, arguments, node ids, ownership
        ("CLUSTER", "SETSLOT", "x", "STABLE"), ("CLUSTER", "SETSLOT", 16384, "STABLE"),
        ("CLUSTER", "SETSLOT", -1, "STABLE"), ("CLUSTER", "SETSLOT", 0),
        ("CLUSTER", "SETSLOT", 0, "BOGUS"), ("CLUSTER", "SETSLOT", 0, "BOGUS", Id(1)),
        ("CLUSTER", "SETSLOT", 0, "STABLE", "x"), ("CLUSTER", "SETSLOT", 0, "MIGRATING"),
        ("CLUSTER", "SETSLOT", 0, "IMPORTING"), ("CLUSTER", "SETSLOT", 0, "NODE"),
        ("CLUSTER", "SETSLOT", 0, "MIGRATING", "x"), ("CLUSTER", "SETSLOT", 0, "MIGRATING", NOBODY),
        ("CLUSTER", "SETSLOT", 0, "MIGRATING", NOBODY.upper()),
        ("CLUSTER", "SETSLOT", 6000, "MIGRATING", Id(1)), ("CLUSTER", "SETSLOT", 6000, "MIGRATING", "x"),
        ("CLUSTER", "SETSLOT", 0, "IMPORTING", Id(1)), ("CLUSTER", "SETSLOT", 0, "IMPORTING", "x"),
        ("CLUSTER", "SETSLOT", 6000, "IMPORTING", "x"), ("CLUSTER", "SETSLOT", 6000, "IMPORTING", NOBODY),
        ("CLUSTER", "SETSLOT", 0, "NODE", "x"), ("CLUSTER", "SETSLOT", 0, "NODE", NOBODY),
        ("CLUSTER", "SETSLOT", 0, "MIGRATING", Id(1), "extra"),
        ("CLUSTER", "SETSLOT", 0, "NODE", Id(1), "extra"), ("CLUSTER", "SETSLOT", 0, "STABLE", "x", "y"),
        # what succeeds is put back at once: migrating to myself, importing from myself,
        # a node told again that it owns a slot
        ("CLUSTER", "SETSLOT", 0, "migrating", Id(0)), ("CLUSTER", "NODES"),
        ("CLUSTER", "SETSLOT", 0, "stable"),
        ("CLUSTER", "SETSLOT", 6000, "IMPORTING", Id(0)), ("CLUSTER", "NODES"),
        ("CLUSTER", "SETSLOT", 6000, "Stable"), ("CLUSTER", "SETSLOT", 0, "node", Id(0)),
        ("SET", mine, "v"), ("CLUSTER", "SETSLOT", key_slot(mine.encode()), "NODE", Id(1)),
        # MEET: addresses and ports
        ("CLUSTER", "MEET"), ("CLUSTER", "MEET", "x"), ("CLUSTER", "MEET", "x", 1),
        ("CLUSTER", "MEET", "127.0.0.1", 0), ("CLUSTER", "MEET", "127.0.0.1", 65536),
        ("CLUSTER", "MEET", "127.0.0.1", -1), ("CLUSTER", "MEET", "127.0.0.1", "abc"),
        ("CLUSTER", "MEET", "127.0.0.1", "1.5"), ("CLUSTER", "MEET", "127.0.0.1", 2 ** 63),
        ("CLUSTER", "MEET", "127.0.0.1", 1, 0), ("CLUSTER", "MEET", "127.0.0.1", 1, 65536),
        ("CLUSTER", "MEET", "127.0.0.1", 1, -1), ("CLUSTER", "MEET", "127.0.0.1", 1, "x"),
        ("CLUSTER", "MEET", "127.0.0.1", 1, 2, 3), ("CLUSTER", "MEET", "999.0.0.1", 1),
        ("CLUSTER", "MEET", "localhost", 7000), ("CLUSTER", "MEET", "::1x", 7000),
        ("CLUSTER", "MEET", "", 7000), ("CLUSTER", "MEET", "1.2.3", 7000),
        ("CLUSTER", "MEET", "x" * 300, "y" * 300),
        # FORGET, COUNT-FAILURE-REPORTS, REPLICAS, SLAVES, REPLICATE: node ids
        ("CLUSTER", "FORGET", Id(0)), ("CLUSTER", "FORGET", "x"), ("CLUSTER", "FORGET", NOBODY),
        ("CLUSTER", "FORGET"), ("CLUSTER", "FORGET", "a", "b"), ("CLUSTER", "FORGET", "n" * 300),
        ("CLUSTER", "FORGET", "a\r\nb"), ("CLUSTER", "FORGET", b"ab\x00cd"),
        ("CLUSTER", "FORGET", b"\xff\xfe%s"), ("CLUSTER", "MEET", b"127.0.0.1\x00x", b"1\x00"),
        ("CLUSTER", "MEET", b"\xff", 1), ("CLUSTER", "SETSLOT", 6000, "IMPORTING", b"\xffx\x00y"),
        ("CLUSTER", "COUNT-FAILURE-REPORTS", "x"), ("CLUSTER", "COUNT-FAILURE-REPORTS", NOBODY),
        ("CLUSTER", "COUNT-FAILURE-REPORTS"), ("CLUSTER", "COUNT-FAILURE-REPORTS", "n" * 300),
        ("CLUSTER", "REPLICAS", "x"), ("CLUSTER", "REPLICAS", NOBODY), ("CLUSTER", "REPLICAS"),
        ("CLUSTER", "SLAVES", "x"), ("CLUSTER", "SLAVES", Id(0), "x"),
        ("CLUSTER", "REPLICATE"), ("CLUSTER", "REPLICATE", "x"), ("CLUSTER", "REPLICATE", Id(0)),
        ("CLUSTER", "REPLICATE", Id(1)), ("CLUSTER", "REPLICATE", Id(1), "x"),
        ("CLUSTER", "FAILOVER"), ("CLUSTER", "FAILOVER", "force"), ("CLUSTER", "FAILOVER", "TAKEOVER"),
        ("CLUSTER", "FAILOVER", "x"), ("CLUSTER", "FAILOVER", "FORCE", "x"),
        # epochs: a node that knows others takes no epoch from the user
        ("CLUSTER", "SET-CONFIG-EPOCH", 5), ("CLUSTER", "SET-CONFIG-EPOCH", -1),
        ("CLUSTER", "SET-CONFIG-EPOCH", "x"), ("CLUSTER", "SET-CONFIG-EPOCH", 0),
        ("CLUSTER", "SET-CONFIG-EPOCH"), ("CLUSTER", "SET-CONFIG-EPOCH", 2 ** 63),
        ("CLUSTER", "SET-CONFIG-EPOCH", 1, 2), ("CLUSTER", "BUMPEPOCH", "x"),
        # RESET and FLUSHSLOTS refuse while keys are here
        ("CLUSTER", "RESET"), ("CLUSTER", "RESET", "HARD"), ("CLUSTER", "RESET", "soft"),
        ("CLUSTER", "RESET", "x"), ("CLUSTER", "RESET", "HARD", "x"), ("CLUSTER", "FLUSHSLOTS"),
        ("CLUSTER", "FLUSHSLOTS", "x"), ("DEL", mine),
        # keys of slots
        ("CLUSTER", "KEYSLOT"), ("CLUSTER", "KEYSLOT", "a", "b"),
        ("CLUSTER", "COUNTKEYSINSLOT", "x"), ("CLUSTER", "COUNTKEYSINSLOT", -1),
        ("CLUSTER", "COUNTKEYSINSLOT", 16384), ("CLUSTER", "COUNTKEYSINSLOT", 2 ** 63),
        ("CLUSTER", "COUNTKEYSINSLOT"), ("CLUSTER", "COUNTKEYSINSLOT", 1, 2),
        ("CLUSTER", "GETKEYSINSLOT", "x", 1), ("CLUSTER", "GETKEYSINSLOT", 1, "x"),
        ("CLUSTER", "GETKEYSINSLOT", -1, 1), ("CLUSTER", "GETKEYSINSLOT", 16384, 1),
        ("CLUSTER", "GETKEYSINSLOT", 1, -1), ("CLUSTER", "GETKEYSINSLOT", 1, 0),
        ("CLUSTER", "GETKEYSINSLOT", 1), ("CLUSTER", "GETKEYSINSLOT", 1, 2 ** 63),
        ("CLUSTER", "GETKEYSINSLOT", 1, 2 ** 63 - 1),
        # arity and unknown subcommands
        ("CLUSTER",), ("CLUSTER", "BOGUS"), ("CLUSTER", "BOGUS", "x"), ("CLUSTER", "HELP", "x"),
        ("CLUSTER", "INFO", "x"), ("CLUSTER", "MYID", "x"), ("CLUSTER", "NODES", "x"),
        ("CLUSTER", "SLOTS", "x"), ("CLUSTER", "SHARDS", "x"), ("CLUSTER", "LINKS", "x"),
        ("CLUSTER", "SAVECONFIG", "x"), ("CLUSTER", "BUMPEPOCH", "x", "y"),
        ("ASKING", "x"), ("READONLY", "x"), ("READWRITE", "x"),
        ("CLUSTER", "NODES"), ("CLUSTER", "INFO"),
    ], protocol)


# ------------------------------------------------------------ slots nobody serves

UNBOUND = (16000, 16010)      # node 2's, deleted on every node of each cluster


def test_clusterdown_when_slots_are_not_served(pair):
    lost, kept = key_in_slot(16005), keys_on(2, 1)[0]
    near = key_in_slot(16011)
    try:
        pair.run(2, [("CLUSTER", "DELSLOTSRANGE", *UNBOUND)])      # the owner first
        for node in (0, 1):
            pair.run(node, [("CLUSTER", "DELSLOTS", *range(UNBOUND[0], UNBOUND[1] + 1))])
        pair.all_nodes([
            ("CONFIG", "RESETSTAT"),
            ("GET", lost), ("SET", lost, 1), ("MGET", lost, kept), ("MGET", kept, lost),
            ("GET", kept), ("SET", near, 1), ("PING",), ("DBSIZE",),
            ("CLUSTER", "DELSLOTS", 16000), ("CLUSTER", "DELSLOTSRANGE", 15999, 16001),
            ("CLUSTER", "DELSLOTSRANGE", UNBOUND[1], UNBOUND[1] + 1),
            ("CLUSTER", "DELSLOTS", 16000, 16000),
            ("CLUSTER", "COUNTKEYSINSLOT", 16005), ("CLUSTER", "GETKEYSINSLOT", 16005, 1),
            ("CLUSTER", "INFO"), ("CLUSTER", "SLOTS"), ("CLUSTER", "SHARDS"),
            ("CLUSTER", "NODES"), ("INFO", "errorstats"),
        ])
        # reads of the slots still served, when the cluster allows them while down
        for node in range(3):
            pair.run(node, [("CONFIG", "SET", "cluster-allow-reads-when-down", "yes")])
        pair.run(2, [("GET", kept), ("MGET", kept, kept), ("SET", kept, 1), ("DEL", kept),
                     ("GET", lost), ("EXISTS", kept), ("MULTI",), ("GET", kept), ("EXEC",),
                     ("MULTI",), ("SET", kept, 1), ("EXEC",)])
    finally:
        for node in range(3):
            pair.run(node, [("CONFIG", "SET", "cluster-allow-reads-when-down", "no")])
        pair.run(2, [("CLUSTER", "ADDSLOTSRANGE", *UNBOUND), ("CLUSTER", "ADDSLOTS", UNBOUND[0]),
                     ("FLUSHALL",)])
    pair.settle()
    pair.all_nodes([("GET", lost), ("CLUSTER", "INFO"), ("CLUSTER", "NODES")])


# ------------------------------------------------------------ one database only

@PROTOCOLS
def test_other_databases_are_refused(pair, protocol):
    here, other = keys_on(0, 2)
    tagged = "{%s}2" % here
    pair.run(0, [
        ("SET", here, "v"),
        ("SELECT", 0), ("SELECT", 1), ("SELECT", 15), ("SELECT", 16), ("SELECT", -1),
        ("SELECT", "x"), ("SELECT", 2 ** 31), ("SELECT", "00"), ("SELECT",),
        ("MOVE", here, 1), ("MOVE", here, 0), ("MOVE", here, "x"), ("MOVE", here),
        ("SWAPDB", 0, 1), ("SWAPDB", 0, 0), ("SWAPDB", "a", "b"), ("SWAPDB", 0, 99),
        ("SWAPDB", 0),
        ("COPY", here, tagged, "DB", 1), ("COPY", here, tagged, "DB", 0),
        ("COPY", here, here, "DB", 1), ("COPY", here, tagged, "DB", 16),
        ("COPY", here, tagged, "DB", "x"), ("COPY", here, tagged, "DB", 0, "REPLACE"),
        ("COPY", here, here), ("COPY", here, tagged, "DB"), ("COPY", here, tagged, "BOGUS"),
        ("MULTI",), ("SELECT", 1), ("MOVE", here, 1), ("SWAPDB", 0, 1),
        ("COPY", here, tagged, "DB", 1), ("GET", here), ("EXEC",),
        ("MGET", here, tagged), ("DEL", here, tagged), ("INFO", "keyspace"),
    ], protocol)


# ------------------------------------------------------------ a node alone

@pytest.fixture(scope="module")
def alone():
    nodes = [cluster_node("redis"), cluster_node("cxlredis")]
    try:
        # A node counts the masters serving slots (cluster_size) only once it has been up
        # for 2 s (Redis's CLUSTER_WRITABLE_DELAY); until then both report 1.
        wait_for(lambda: all(cluster_info(n)["cluster_size"] == "0" for n in nodes),
                 "both nodes to count the masters serving slots")
        yield Pair(*(_Alone(n) for n in nodes))
    finally:
        close_all(nodes)


class _Alone(Cluster):
    """A cluster-mode node that knows no other."""

    def __init__(self, node):
        self.kind, self.nodes = node.kind, [node]
        self.ids, self.ports = [node_id(node)], [node.port]
        self.buses = [int(node.options["cluster-port"])]


@PROTOCOLS
def test_a_node_that_knows_no_other(alone, protocol):
    key = "k2"                      # slot 449
    alone.run(0, [
        ("CLUSTER", "INFO"), ("CLUSTER", "NODES"), ("CLUSTER", "SLOTS"), ("CLUSTER", "SHARDS"),
        ("CLUSTER", "LINKS"), ("GET", key), ("SET", key, "v"), ("CLUSTER", "REPLICAS", Id(0)),
        ("CLUSTER", "COUNT-FAILURE-REPORTS", Id(0)), ("CLUSTER", "REPLICATE", Id(0)),
        ("CLUSTER", "FAILOVER"), ("CLUSTER", "DELSLOTS", 449), ("CLUSTER", "DELSLOTSRANGE", 0, 10),
        ("CLUSTER", "FLUSHSLOTS"),
        # epochs: only a node that knows no other takes one from the user, and only once
        ("CLUSTER", "SET-CONFIG-EPOCH", -1), ("CLUSTER", "SET-CONFIG-EPOCH", 0),
        ("CLUSTER", "SET-CONFIG-EPOCH", 0), ("CLUSTER", "INFO"), ("CLUSTER", "BUMPEPOCH"),
        ("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "SET-CONFIG-EPOCH", 7), ("CLUSTER", "INFO"),
        # some slots: served by nobody else, but the cluster is down without all of them
        ("CLUSTER", "ADDSLOTSRANGE", 0, 100, 400, 500), ("CLUSTER", "ADDSLOTS", 16383),
        ("CLUSTER", "INFO"), ("CLUSTER", "NODES"), ("CLUSTER", "SLOTS"), ("CLUSTER", "SHARDS"),
        ("GET", key), ("GET", "k0"), ("CLUSTER", "DELSLOTSRANGE", 0, 100, 400, 500),
        ("CLUSTER", "DELSLOTS", 16383), ("CLUSTER", "ADDSLOTSRANGE", 0, 16383),
    ], protocol)
    # A master alone that just got slots waits out the rejoin delay (it was "in the
    # minority" while it served none) before it is ok.
    wait_for(lambda: all(cluster_info(side.nodes[0])["cluster_state"] == "ok"
                         for side in alone.sides), "the nodes to serve their slots")
    alone.run(0, [
        ("CLUSTER", "INFO"), ("SET", key, "v"), ("GET", key), ("CLUSTER", "COUNTKEYSINSLOT", 449),
        ("CLUSTER", "GETKEYSINSLOT", 449, 10), ("CLUSTER", "FLUSHSLOTS"), ("CLUSTER", "RESET"),
        ("CLUSTER", "RESET", "HARD"), ("CLUSTER", "REPLICATE", Id(0)), ("DEL", key),
        ("CLUSTER", "FLUSHSLOTS"), ("CLUSTER", "INFO"), ("CLUSTER", "NODES"), ("GET", key),
        ("CLUSTER", "DELSLOTS", 0), ("CLUSTER", "ADDSLOTS", 5, 6),
        ("CLUSTER", "RESET", "SOFT"), ("CLUSTER", "INFO"), ("CLUSTER", "NODES"),
        ("CLUSTER", "BUMPEPOCH"), ("CLUSTER", "INFO"),
    ], protocol)
    # A hard reset takes a new name and zeroes the epochs.
    alone.run(0, [("CLUSTER", "RESET", "HARD"), ("CLUSTER", "INFO")], protocol)
    for side in alone.sides:
        side.ids = [node_id(side.nodes[0])]
    alone.run(0, [("CLUSTER", "NODES"), ("CLUSTER", "MYID"), ("CLUSTER", "SET-CONFIG-EPOCH", 1),
                  ("CLUSTER", "RESET", "HARD")], protocol)
    for side in alone.sides:
        side.ids = [node_id(side.nodes[0])]


# ------------------------------------------------------------ redirects hold no memory

def _arena(node):
    stats = node.client().info("arena")
    return {name: int(stats["arena_" + name]) for name in
            ("heap_used", "reserved", "entries", "evicted_keys")}


def test_a_redirected_large_value_leaves_nothing_in_the_arena(pair):
    cxl = pair.sides[1].nodes[0]
    here, there = keys_on(0, 1)[0], keys_on(1, 1)[0]
    big = bytes(range(256)) * 4096          # 1 MiB, far above the large-value threshold
    client = cxl.client()
    policy = client.config_get("maxmemory-policy")["maxmemory-policy"]
    client.config_set("maxmemory-policy", "allkeys-lru")
    try:
        for i in range(40):
            client.set("{%s}%d" % (here, i), big[:65536])
        # No room for another large value without evicting: a value sent to the wrong
        # node must neither evict keys nor stay reserved.
        client.config_set("maxmemory", str(client.info("memory")["used_memory"] + 256 * 1024))
        before = _arena(cxl)
        assert before["entries"] == 40
        pair.run(0, [
            ("SET", there, big), ("SET", there, big, "EX", 10), ("MSET", there, big),
            ("MSET", there, big, here, big), ("SETEX", there, 10, big), ("APPEND", there, big),
            ("HSET", there, "f", big), ("GETSET", there, big), ("SETRANGE", there, 0, big),
            ("MULTI",), ("SET", there, big), ("SET", "{%s}x" % here, 1), ("EXEC",),
            ("MULTI",), ("SET", there, big), ("DISCARD",),
            ("MULTI",), ("SET", there, big, "BADOPTION"), ("EXEC",),
            ("GET", there),
        ])
        assert _arena(cxl) == before
        # A value for this node's own slot is received into the arena (evicting to make
        # room) before the key that makes the call CROSSSLOT arrives; it is released.
        pair.run(0, [("MSET", here, big, there, big)])
        assert _arena(cxl)["reserved"] == 0
    finally:
        client.config_set("maxmemory", "0")
        client.config_set("maxmemory-policy", policy)
        pair.run(0, [("FLUSHALL",)])
        client.close()
