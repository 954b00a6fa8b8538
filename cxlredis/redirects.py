"""Cluster redirects: whether this node runs a call, or the error that sends the client
to the node that does (Redis 7.0's getNodeByQuery, with its texts).

Every key of the call (of each queued call, for EXEC), from its key specs, must hash
to one slot. That slot's owner runs it, unless the slot is moving: a node migrating
the slot answers ASK for keys it no longer has, and the importing node runs the call
only after ASKING (or for RESTORE-ASKING).
"""
from .cluster.slots import key_slot
from .commands import lookup
from .commands.keyspecs import key_positions

CROSSSLOT = "CROSSSLOT Keys in request don't hash to the same slot"
TRYAGAIN = "TRYAGAIN Multiple keys request during rehashing of slot"
DOWN = "CLUSTERDOWN The cluster is down"
DOWN_READ_ONLY = "CLUSTERDOWN The cluster is down and only accepts read commands"
UNBOUND = "CLUSTERDOWN Hash slot not served"


def redirect(c, spec, argv):
    """None when this node runs the call here and now, else the error to answer."""
    cluster = c.services.cluster
    if spec.name == "exec":
        if c.multi is None:
            return None
        calls = [(lookup(queued)[0], queued) for queued in c.multi]
    elif spec.key_specs:
        calls = ((spec, argv),)
    else:
        return None
    me = cluster.myself
    slot = owner = first_key = None
    multiple_keys = moving = importing = False
    missing = existing = 0
    writes = False
    for call_spec, call_argv in calls:
        writes |= "write" in call_spec.flags
        for index in key_positions(call_spec, call_argv, include_not_keys=True):
            key = call_argv[index]
            this_slot = key_slot(key)
            if slot is None:
                slot, first_key = this_slot, key
                owner = cluster.owner[slot]
                if owner is None:
                    return UNBOUND
                moving = owner is me and slot in cluster.migrating
                importing = not moving and slot in cluster.importing
            elif this_slot != slot:
                return CROSSSLOT
            elif key != first_key:
                multiple_keys = True
            if moving or importing:
                if c.store.lookup(0, key, False, False):
                    existing += 1
                else:
                    missing += 1
    if slot is None:
        return None
    if not cluster.ok:
        if not c.services.config["cluster-allow-reads-when-down"]:
            return DOWN
        if writes:
            return DOWN_READ_ONLY
    if (moving or importing) and spec.name == "migrate":
        return None
    if moving and missing:
        if existing:
            return TRYAGAIN
        return _to("ASK", cluster, slot, cluster.migrating[slot])
    if importing and (c.asking or "asking" in spec.flags):
        return TRYAGAIN if multiple_keys and missing else None
    if owner is not me:
        return _to("MOVED", cluster, slot, owner)
    return None


def blocked_redirect(cluster, keys):
    """The error that ends the wait of a client blocked on keys (all of one slot) once this
    node cannot serve them, else None (Redis's clusterRedirectBlockedClientIfNeeded)."""
    if not cluster.ok:
        return DOWN
    slot = key_slot(keys[0])
    owner = cluster.owner[slot]
    if owner is cluster.myself or slot in cluster.importing:
        return None
    return UNBOUND if owner is None else _to("MOVED", cluster, slot, owner)


def _to(kind, cluster, slot, node):
    return f"{kind} {slot} {cluster.endpoint(node)}:{node.port}"


def redirected_unread(cluster, spec, args):
    """Whether a call starting with these arguments gets a redirect whatever follows:
    the cluster is down (a call storing a value is a write), or a key among them hashes
    to a slot another node (or none) serves and this node is not importing. The
    connection then receives the call's large value on the heap, not into the arena,
    where reserving it could evict keys for a value that is never stored."""
    if not cluster.ok:
        return True
    me = cluster.myself
    for index in key_positions(spec, args, include_not_keys=True):
        if index < len(args):
            slot = key_slot(args[index])
            if cluster.owner[slot] is not me and slot not in cluster.importing:
                return True
    return False
