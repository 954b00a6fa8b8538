"""nodes.conf: a cluster node's view of the cluster, in Redis 7.0's format.

One line per known node, as CLUSTER NODES prints it, then a `vars` line:

    <id> <ip>:<port>@<cport>[,<hostname>] <flags> <master|-> <ping-sent> <pong-recv>
        <config-epoch> <connected|disconnected> <slot ranges> [<slot>->-<id>] [<slot>-<-<id>]
    vars currentEpoch <n> lastVoteEpoch <n>

Written atomically (a temporary file renamed over it), so a node killed while saving
finds either its old view or its new one, never half of one; a save that changes an
epoch is also fsynced (file and directory), as Redis fsyncs those.
"""
import os

from .slots import CLUSTER_SLOTS


class NodesConfError(ValueError):
    """nodes.conf cannot be read as Redis's format."""


class NodeRecord:
    """One node line of nodes.conf, parsed."""

    __slots__ = ("name", "ip", "port", "cport", "hostname", "flags", "master", "ping_sent",
                 "pong_received", "config_epoch", "connected", "slots", "migrating", "importing")

    def __init__(self):
        self.slots = []          # owned slots
        self.migrating = {}      # slot -> node name (only on the myself line)
        self.importing = {}


def parse(text):
    """(node records, current epoch, last vote epoch) of a nodes.conf's text."""
    records, current_epoch, last_vote_epoch = [], 0, 0
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if words[0] == "vars":
            pairs = words[1:]
            if len(pairs) % 2:
                raise NodesConfError(f"line {number}: vars without a value")
            for name, value in zip(pairs[::2], pairs[1::2]):
                if name == "currentEpoch":
                    current_epoch = _number(value, number)
                elif name == "lastVoteEpoch":
                    last_vote_epoch = _number(value, number)
            continue
        if len(words) < 8:
            raise NodesConfError(f"line {number}: a node line needs at least 8 fields")
        records.append(_node(words, number))
    return records, current_epoch, last_vote_epoch


def _number(text, line):
    if not text.isdigit():
        raise NodesConfError(f"line {line}: {text!r} is not a number")
    return int(text)


def _node(words, line):
    node = NodeRecord()
    node.name = words[0]
    if len(node.name) != 40:
        raise NodesConfError(f"line {line}: node id {node.name!r} is not 40 characters")
    address, _, node.hostname = words[1].partition(",")
    host_port, at, cport = address.rpartition("@")
    if not at:
        host_port, cport = address, ""
    ip, colon, port = host_port.rpartition(":")
    if not colon or not port.isdigit() or (cport and not cport.isdigit()):
        raise NodesConfError(f"line {line}: bad address {words[1]!r}")
    node.ip, node.port = ip, int(port)
    node.cport = int(cport) if cport else node.port + 10000
    node.flags = [] if words[2] == "noflags" else words[2].split(",")
    node.master = None if words[3] == "-" else words[3]
    node.ping_sent = _number(words[4], line)
    node.pong_received = _number(words[5], line)
    node.config_epoch = _number(words[6], line)
    node.connected = words[7] == "connected"
    for word in words[8:]:
        if word.startswith("["):
            slot, arrow, other = word[1:-1].partition("->-")
            table = node.migrating
            if not arrow:
                slot, arrow, other = word[1:-1].partition("-<-")
                table = node.importing
            if not arrow:
                raise NodesConfError(f"line {line}: bad open slot {word!r}")
            table[_slot(slot, line)] = other
            continue
        first, dash, last = word.partition("-")
        start, stop = _slot(first, line), _slot(last, line) if dash else None
        stop = start if stop is None else stop
        if stop < start:
            raise NodesConfError(f"line {line}: slot range {word!r} runs backwards")
        node.slots.extend(range(start, stop + 1))
    return node


def _slot(text, line):
    value = _number(text, line)
    if value >= CLUSTER_SLOTS:
        raise NodesConfError(f"line {line}: slot {value} out of range")
    return value


def write(path, node_lines, current_epoch, last_vote_epoch, durable=True):
    """Replace nodes.conf with these node lines and the vars line, atomically; durable
    also fsyncs (the file and the directory), so the new view survives a power loss as
    well as a crash."""
    text = "".join(line + "\n" for line in node_lines)
    text += f"vars currentEpoch {current_epoch} lastVoteEpoch {last_vote_epoch}\n"
    directory = os.path.dirname(os.path.abspath(path))
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w") as f:
        f.write(text)
        f.flush()
        if durable:
            os.fsync(f.fileno())
    os.replace(temporary, path)
    if not durable:
        return
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
