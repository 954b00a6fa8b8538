"""Cluster commands: CLUSTER *, ASKING, READONLY, READWRITE (Redis 7.0's replies and errors).

They read and change c.services.cluster (cluster/state.py), None outside cluster mode.
"""
import ipaddress

from .. import errors
from ..cluster import bus
from ..cluster.slots import CLUSTER_SLOTS, key_slot
from ..cluster.state import PORT_INCREMENT
from ..errors import CommandError
from .args import is_int64, parse_int, upper
from .connection import reply_fields, reply_help

DISABLED = "ERR This instance has cluster support disabled"
BAD_SLOT = "ERR Invalid or out of range slot"

CLUSTER_HELP = (
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "HELP",
    "    Prints this help.",
)


def _cluster(c):
    cluster = c.services.cluster
    if cluster is None:
        raise CommandError(DISABLED)
    return cluster


def _done(c, cluster):
    """A command changed the view: save it and refresh routing before the reply goes."""
    cluster.update_state()
    cluster.flush()
    c.reply.ok()


def _slot(arg):
    if not is_int64(bytes(arg)) or not 0 <= int(bytes(arg)) < CLUSTER_SLOTS:
        raise CommandError(BAD_SLOT)
    return int(bytes(arg))


def _sees_every_tenant(c):
    """Whether the caller's slot commands see every tenant's keys: an administrator's do,
    as a slot moves whole (slot_keys.py); a tenant's users see their own."""
    return c.tenant is None


def _node(cluster, arg, error):
    """The node an argument names, or CommandError(error % name)."""
    name = bytes(arg).decode("latin-1")
    node = cluster.nodes.get(name) if len(name) == 40 else None
    if node is None:
        raise CommandError(error % errors.c_string(arg))
    return node


# ------------------------------------------------------------------ ASKING, READONLY

def cmd_asking(c, argv):
    _cluster(c)
    c.asking = True
    c.reply.ok()


def cmd_readonly(c, argv):
    _cluster(c)
    c.readonly = True
    c.reply.ok()


def cmd_readwrite(c, argv):
    _cluster(c)
    c.readonly = False
    c.reply.ok()


# ------------------------------------------------------------------ what the node knows

def cmd_cluster_help(c, argv):
    _cluster(c)
    reply_help(c, CLUSTER_HELP)


def cmd_cluster_info(c, argv):
    cluster = _cluster(c)
    cluster.update_state()
    c.reply.verbatim("".join(f"{name}:{value}\r\n" for name, value in cluster.info_fields()))


def cmd_cluster_myid(c, argv):
    c.reply.bulk(_cluster(c).myself.name)


def cmd_cluster_nodes(c, argv):
    cluster = _cluster(c)
    c.reply.verbatim("".join(cluster.node_line(n) + "\n" for n in cluster.nodes.values()))


def cmd_cluster_replicas(c, argv):
    cluster = _cluster(c)
    master = _node(cluster, argv[2], "ERR Unknown node %s")
    if not master.is_master:
        raise CommandError("ERR The specified node is not a master")
    replicas = cluster.replicas_of(master)
    c.reply.array(len(replicas))
    for node in replicas:
        c.reply.bulk(cluster.node_line(node))


cmd_cluster_slaves = cmd_cluster_replicas


def _endpoint_reply(c, cluster, node):
    """A node as CLUSTER SLOTS lists it: preferred endpoint, port, id, then the other
    endpoints as a map."""
    kind = c.services.config["cluster-preferred-endpoint-type"]
    c.reply.array(4)
    if kind == "unknown-endpoint":
        c.reply.null()
    else:
        c.reply.bulk(cluster.endpoint(node))
    c.reply.integer(node.port)
    c.reply.bulk(node.name)
    others = []
    if kind != "ip":
        others.append(("ip", node.ip))
    if kind != "hostname" and node.hostname:
        others.append(("hostname", node.hostname))
    reply_fields(c, others)


def cmd_cluster_slots(c, argv):
    cluster = _cluster(c)
    ranges = cluster.slot_ranges()
    c.reply.array(len(ranges))
    for start, end, owner in ranges:
        replicas = [n for n in cluster.replicas_of(owner) if not n.flags & bus.NODE_FAIL]
        c.reply.array(3 + len(replicas))
        c.reply.integer(start)
        c.reply.integer(end)
        for node in (owner, *replicas):
            _endpoint_reply(c, cluster, node)


def cmd_cluster_shards(c, argv):
    cluster = _cluster(c)
    masters = cluster.known_masters()
    ranges = {}
    for start, end, owner in cluster.slot_ranges():
        ranges.setdefault(owner.name, []).extend((start, end))
    c.reply.array(len(masters))
    for master in masters:
        c.reply.map(2)
        c.reply.bulk("slots")
        slots = ranges.get(master.name, [])
        c.reply.array(len(slots))
        for slot in slots:
            c.reply.integer(slot)
        c.reply.bulk("nodes")
        members = [master, *cluster.replicas_of(master)]
        c.reply.array(len(members))
        for node in members:
            _shard_node_reply(c, cluster, node)


def _shard_node_reply(c, cluster, node):
    fields = [("id", node.name), ("port", node.port), ("ip", node.ip),
              ("endpoint", cluster.endpoint(node))]
    if node.hostname:
        fields.append(("hostname", node.hostname))
    if node.flags & bus.NODE_FAIL:
        health = "fail"
    elif not node.is_master and node.repl_offset == 0:
        health = "loading"
    else:
        health = "online"
    fields += [("role", "master" if node.is_master else "replica"),
               ("replication-offset", node.repl_offset), ("health", health)]
    reply_fields(c, fields)


def cmd_cluster_links(c, argv):
    cluster = _cluster(c)
    links = []
    for node in cluster.nodes.values():
        for direction, link in (("to", node.link), ("from", node.inbound_link)):
            if link is not None and node is not cluster.myself:
                links.append((direction, node, link))
    c.reply.array(len(links))
    for direction, node, link in links:
        pending = link.pending_bytes
        reply_fields(c, (("direction", direction), ("node", node.name),
                         ("create-time", link.ctime), ("events", "rw" if pending else "r"),
                         ("send-buffer-allocated", pending), ("send-buffer-used", pending)))


def cmd_cluster_keyslot(c, argv):
    _cluster(c)
    c.reply.integer(key_slot(argv[2]))


def cmd_cluster_countkeysinslot(c, argv):
    cluster = _cluster(c)
    slot = parse_int(argv[2])
    if not 0 <= slot < CLUSTER_SLOTS:
        raise CommandError("ERR Invalid slot")
    if _sees_every_tenant(c):
        c.reply.integer(cluster.keys.count(slot))
    else:
        c.reply.integer(c.store.count_keys_in_slot(0, slot))


def cmd_cluster_getkeysinslot(c, argv):
    cluster = _cluster(c)
    slot, count = parse_int(argv[2]), parse_int(argv[3])
    if not 0 <= slot < CLUSTER_SLOTS or count < 0:
        raise CommandError("ERR Invalid slot or number of keys")
    if _sees_every_tenant(c):
        c.reply.bulk_array(cluster.keys.names(slot, count))
    else:
        c.reply.bulk_array(c.store.keys_in_slot(0, slot, count))


def cmd_cluster_count_failure_reports(c, argv):
    cluster = _cluster(c)
    node = _node(cluster, argv[2], "ERR Unknown node %s")
    c.reply.integer(cluster.count_failure_reports(node))


# ------------------------------------------------------------------ changing the view

def cmd_cluster_meet(c, argv):
    cluster = _cluster(c)
    if len(argv) > 5:
        raise CommandError(errors.subcommand_syntax(argv))
    if not is_int64(bytes(argv[3])):
        raise CommandError(f"ERR Invalid TCP base port specified: {errors.c_string(argv[3])}")
    port = int(bytes(argv[3]))
    cport = port + PORT_INCREMENT
    if len(argv) == 5:
        if not is_int64(bytes(argv[4])):
            raise CommandError(f"ERR Invalid TCP bus port specified: {errors.c_string(argv[4])}")
        cport = int(bytes(argv[4]))
    try:
        ip = str(ipaddress.ip_address(bytes(argv[2]).decode("ascii")))
    except (UnicodeDecodeError, ValueError):
        ip = None
    if ip is None or not (0 < port <= 65535 and 0 < cport <= 65535):
        raise CommandError(f"ERR Invalid node address specified: "
                           f"{errors.c_string(argv[2])}:{errors.c_string(argv[3])}")
    cluster.start_handshake(ip, port, cport)      # one already under way: OK as well
    _done(c, cluster)


def cmd_cluster_forget(c, argv):
    cluster = _cluster(c)
    node = _node(cluster, argv[2], "ERR Unknown node %s")
    if node is cluster.myself:
        raise CommandError("ERR I tried hard but I can't forget myself...")
    cluster.forget(node)
    _done(c, cluster)


def _check_assignments(cluster, marked, delete, start, end):
    for slot in range(start, end + 1):
        if delete and cluster.owner[slot] is None:
            raise CommandError(f"ERR Slot {slot} is already unassigned")
        if not delete and cluster.owner[slot] is not None:
            raise CommandError(f"ERR Slot {slot} is already busy")
        if slot in marked:
            raise CommandError(f"ERR Slot {slot} specified multiple times")
        marked.add(slot)


def _change_slots(c, argv, delete):
    cluster = _cluster(c)
    slots = [_slot(arg) for arg in argv[2:]]
    marked = set()
    for slot in slots:
        _check_assignments(cluster, marked, delete, slot, slot)
    _apply(c, cluster, marked, delete)


def _change_ranges(c, argv, delete):
    cluster = _cluster(c)
    if len(argv) % 2:
        raise CommandError(errors.wrong_arity(f"cluster|{bytes(argv[1]).decode('latin-1').lower()}"))
    marked = set()
    for i in range(2, len(argv), 2):
        start, end = _slot(argv[i]), _slot(argv[i + 1])
        if start > end:
            raise CommandError(f"ERR start slot number {start} is greater than end slot number {end}")
        _check_assignments(cluster, marked, delete, start, end)
    _apply(c, cluster, marked, delete)


def _apply(c, cluster, slots, delete):
    if delete:
        cluster.del_slots(sorted(slots))
    else:
        cluster.add_slots(sorted(slots))
    _done(c, cluster)


def cmd_cluster_addslots(c, argv):
    _change_slots(c, argv, delete=False)


def cmd_cluster_delslots(c, argv):
    _change_slots(c, argv, delete=True)


def cmd_cluster_addslotsrange(c, argv):
    _change_ranges(c, argv, delete=False)


def cmd_cluster_delslotsrange(c, argv):
    _change_ranges(c, argv, delete=True)


def cmd_cluster_flushslots(c, argv):
    cluster = _cluster(c)
    if cluster.keys.any():
        raise CommandError("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
    cluster.del_slots([s for s in range(CLUSTER_SLOTS) if cluster.owner[s] is cluster.myself])
    _done(c, cluster)


def cmd_cluster_setslot(c, argv):
    cluster = _cluster(c)
    slot = _slot(argv[2])
    action = upper(argv[3])
    if action in ("MIGRATING", "IMPORTING", "NODE") and len(argv) == 5:
        if action == "MIGRATING":
            if cluster.owner[slot] is not cluster.myself:
                raise CommandError(f"ERR I'm not the owner of hash slot {slot}")
            node = _node(cluster, argv[4], "ERR I don't know about node %s")
        elif action == "IMPORTING":
            if cluster.owner[slot] is cluster.myself:
                raise CommandError(f"ERR I'm already the owner of hash slot {slot}")
            node = _node(cluster, argv[4], "ERR I don't know about node %s")
        else:
            node = _node(cluster, argv[4], "ERR Unknown node %s")
        if not node.is_master:
            raise CommandError("ERR Target node is not a master")
        if action == "MIGRATING":
            cluster.migrating[slot] = node
        elif action == "IMPORTING":
            cluster.importing[slot] = node
        else:
            # any tenant's key counts: the slot moves whole
            mine = cluster.owner[slot] is cluster.myself or slot in cluster.migrating
            holds_keys = mine and cluster.keys.any_in(slot)
            if cluster.owner[slot] is cluster.myself and node is not cluster.myself and holds_keys:
                raise CommandError(f"ERR Can't assign hashslot {slot} to a different node while I "
                                   "still hold keys for this hash slot.")
            cluster.set_slot_owner(slot, node, holds_keys)
    elif action == "STABLE" and len(argv) == 4:
        cluster.migrating.pop(slot, None)
        cluster.importing.pop(slot, None)
    else:
        raise CommandError("ERR Invalid CLUSTER SETSLOT action or number of arguments. "
                           "Try CLUSTER HELP")
    cluster.changed()
    _done(c, cluster)


def cmd_cluster_set_config_epoch(c, argv):
    cluster = _cluster(c)
    epoch = parse_int(argv[2])
    if epoch < 0:
        raise CommandError(f"ERR Invalid config epoch specified: {epoch}")
    if len(cluster.nodes) > 1:
        raise CommandError("ERR The user can assign a config epoch only when the node does not "
                           "know any other node.")
    if cluster.myself.config_epoch:
        raise CommandError("ERR Node config epoch is already non-zero")
    cluster.myself.config_epoch = epoch
    cluster.current_epoch = max(cluster.current_epoch, epoch)
    cluster.changed()
    _done(c, cluster)


def cmd_cluster_bumpepoch(c, argv):
    cluster = _cluster(c)
    bumped = cluster.bump_epoch()
    cluster.flush()
    c.reply.simple(f"{'BUMPED' if bumped else 'STILL'} {cluster.myself.config_epoch}")


def cmd_cluster_saveconfig(c, argv):
    cluster = _cluster(c)
    try:
        cluster.save(durable=True)
    except OSError as e:
        raise CommandError(f"ERR error saving the cluster node config: {e.strerror or e}") from None
    c.reply.ok()


def cmd_cluster_failover(c, argv):
    _cluster(c)
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    if len(argv) == 3 and upper(argv[2]) not in ("FORCE", "TAKEOVER"):
        raise CommandError(errors.SYNTAX)
    # A cxlredis node is always a master, and a master is where Redis refuses it.
    raise CommandError("ERR You should send CLUSTER FAILOVER to a replica")


def cmd_cluster_replicate(c, argv):
    cluster = _cluster(c)
    node = _node(cluster, argv[2], "ERR Unknown node %s")
    if node is cluster.myself:
        raise CommandError("ERR Can't replicate myself")
    if not node.is_master:
        raise CommandError("ERR I can only replicate a master, not a replica.")
    if cluster.myself.numslots or cluster.keys.any():
        raise CommandError("ERR To set a master the node must be empty and without assigned slots.")
    # Redis's checks come first, so a client learns the same; becoming a replica is what
    # a cxlredis node never does (cluster/state.py).
    raise CommandError("ERR cxlredis nodes are masters only: CLUSTER REPLICATE is not supported")


def cmd_cluster_reset(c, argv):
    cluster = _cluster(c)
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    mode = upper(argv[2]) if len(argv) == 3 else "SOFT"
    if mode not in ("HARD", "SOFT"):
        raise CommandError(errors.SYNTAX)
    if cluster.keys.any():
        raise CommandError("ERR CLUSTER RESET can't be called with master nodes containing keys")
    cluster.reset(hard=mode == "HARD")
    _done(c, cluster)

