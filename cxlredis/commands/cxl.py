"""The CXL command family (cxlredis's own): co-located clients read values and fill
reservations through their own mapping of the arena's backing, under leases
(cxlredis/leases.py). The protocol, its guarantees and its trust boundary are in
docs/colocated.md.

Who may map. Any process that maps a backing reads every value in it, so the
mapping commands are refused, whatever the ACL says:
- to connections of a tenant whose values are in the server's arena (ARENA
  shared): that backing holds every such tenant. A tenant with ARENA own maps its
  own arena's backing (cxlredis/tenant_arenas.py), administrators the server's;
- unless the connection is over the unix socket, or from a loopback address as a
  user that authenticated with a password (a nopass user proves nothing).
The ACL gates them too: they are in the category @cxl (and @dangerous), not in
@read or @write. CXL INFO and CXL HELP answer everyone the ACL lets in.
"""
import hashlib
import ipaddress
import mmap
import os
import time

from .. import errors
from .._store import TYPE_STRING, WrongType, now_ms
from ..cluster.slots import key_slot
from ..errors import CommandError
from ..leases import SLOT
from .args import INT64_MAX, parse_int, upper
from .connection import reply_fields, reply_help

CXL_HELP = (
    "CXL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "INFO",
    "    The arena's backing (path, size, offset, layout) and whether this connection may map it.",
    "GETREF <key>",
    "    Lease a reference to key's string value: [offset, length, generation, lease,",
    "    lease-ttl-ms, header-offset], or nil. The value stays put until the lease ends.",
    "MGETREF <key> [<key> ...]",
    "    GETREF for each key, in one array; all or nothing when a key is refused.",
    "PREFIX <key> [<key> ...]",
    "    How many of the keys, in order, exist before the first one that does not:",
    "    the longest cached prefix of a prompt whose chunks are the keys.",
    "PREFIXGET <key> [<key> ...]",
    "    The string values of the leading keys, up to the first missing (or not a string).",
    "PREFIXREF <key> [<key> ...]",
    "    GETREF for the leading keys, up to the first missing (or not a string).",
    "RELEASE <lease> [<lease> ...]",
    "    End leases of this connection; returns how many it held.",
    "RESERVE <key> <nbytes> [EX <seconds>|PX <milliseconds>]",
    "    Lease an uncommitted block of nbytes to fill through the mapping:",
    "    [lease, offset, nbytes, lease-ttl-ms]. The expiry counts from the commit.",
    "COMMIT <lease>",
    "    Make the filled reservation key's value, atomically.",
    "ABORT <lease>",
    "    Free a reservation without storing it.",
    "HELP",
    "    Print this help.",
)

NO_SUCH_LEASE = "ERR no such lease of this connection: {}"
LEASE_EXPIRED = "ERR lease {} expired"


def mapping_refusal(c):
    """Why this connection may not map the arena, or None if it may."""
    if c.tenant is not None and c.services.tenants.own_arena(c.tenant) is None:
        return (f"ERR CXL mapping is not offered to tenant '{c.tenant}': its values share the "
                f"server's arena with other tenants (a tenant created with ARENA own maps its own)")
    if c.laddr.startswith("/"):
        return None                     # the unix socket: its file permissions admit the peer
    host = c.addr.rsplit(":", 1)[0].strip("[]")
    try:
        local = ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if local and c.authenticated and not c.user.nopass:
        return None
    return ("ERR CXL mapping is offered only over the unix socket, or to loopback peers "
            "authenticated with a password")


def _check_mapping(c):
    refusal = mapping_refusal(c)
    if refusal is not None:
        raise CommandError(refusal)


def _page_size(path):
    try:
        return os.statvfs(path).f_bsize     # the huge page size on hugetlbfs
    except OSError:
        return mmap.PAGESIZE


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def cmd_cxl_info(c, argv):
    services = c.services
    arena = c.store.arena          # a tenant with ARENA own is told of its own arena only
    layout = arena.layout()
    refusal = mapping_refusal(c)
    refs, slots = services.leases.counts(arena)
    path = os.path.abspath(arena.path)
    fields = (
        ("backing-path", path),
        ("backing-size", arena.size),
        ("backing-offset", arena.offset),     # where the arena starts in it (arena-offset)
        ("layout-version", layout["version"]),
        ("page-size", _page_size(path)),
        # a client maps what it believes is the backing and compares this digest of the
        # superblock's geometry (random hash seed, format time) with its own mapping
        ("geometry-bytes", len(layout["geometry"])),
        ("geometry-digest", hashlib.blake2b(layout["geometry"], digest_size=16).hexdigest()),
        ("boot-id", _boot_id()),
        ("header-bytes", layout["header_bytes"]),
        ("state-offset", layout["state_offset"]),
        ("state-mask", layout["state_mask"]),
        ("live-state", layout["live_state"]),
        ("zombie-state", layout["zombie_state"]),
        ("generation-offset", layout["generation_offset"]),
        ("type-offset", layout["type_offset"]),
        ("checksummed-flag", layout["checksummed_flag"]),
        ("lease-ms", services.config["cxl-lease-ms"]),
        ("leases-refs", refs),
        ("leases-slots", slots),
        ("mapping", "refused" if refusal else "allowed"),
        ("mapping-refused-because", refusal.removeprefix("ERR ") if refusal else ""),
    )
    reply_fields(c, fields)


def _reference(c, key):
    """A leased reference to key's string value, or None when missing; WRONGTYPE otherwise."""
    entry = c.store.find(c.db, key, type=TYPE_STRING)
    if entry is None:
        return None
    lease = c.services.leases.reference(c, entry, key)      # past the lease cap: refused
    return (entry.mapped_offset, entry.value_len, entry.generation, lease.id,
            c.services.config["cxl-lease-ms"], lease.off)


def _reply_reference(c, ref):
    if ref is None:
        c.reply.null()
        return
    c.reply.array(len(ref))
    for number in ref:
        c.reply.integer(number)


def cmd_cxl_getref(c, argv):
    _check_mapping(c)
    _reply_reference(c, _reference(c, argv[2]))


def _end_references(c, refs):
    leases = c.services.leases
    for ref in refs:
        if ref is not None:
            leases.end(leases.owned(c, ref[3]))


def cmd_cxl_mgetref(c, argv):
    _check_mapping(c)
    refs = []
    try:
        for key in argv[2:]:
            refs.append(_reference(c, key))
    except (CommandError, WrongType):
        # all or nothing: a WRONGTYPE key, or one past the lease cap, ends the leases
        # already taken (a miss is a nil, as in GETREF)
        _end_references(c, refs)
        raise
    c.reply.array(len(refs))
    for ref in refs:
        _reply_reference(c, ref)


def _leading_strings(c, keys):
    """The entries of keys, in order, up to the first that is missing or holds no string."""
    entries = []
    for key in keys:
        entry = c.find(key)
        if entry is None or entry.type != TYPE_STRING:
            break
        entries.append(entry)
    return entries


def cmd_cxl_prefix(c, argv):
    # a lookup, as EXISTS makes it: no LRU touch, and nothing past the first miss
    present = 0
    for key in argv[2:]:
        if c.find(key, touch=False) is None:
            break
        present += 1
    c.reply.integer(present)


def cmd_cxl_prefixget(c, argv):
    entries = _leading_strings(c, argv[2:])
    c.reply.array(len(entries))
    for entry in entries:
        c.reply.entry(entry)


def cmd_cxl_prefixref(c, argv):
    _check_mapping(c)
    refs = []
    try:
        for key in argv[2:]:
            ref = _reference(c, key)
            if ref is None:
                break
            refs.append(ref)
    except WrongType:
        pass                            # a key that holds no string ends the prefix
    except CommandError:
        _end_references(c, refs)        # past the lease cap: none of them
        raise
    c.reply.array(len(refs))
    for ref in refs:
        _reply_reference(c, ref)


def _lease_id(arg):
    return parse_int(arg)


def cmd_cxl_release(c, argv):
    _check_mapping(c)
    leases = c.services.leases
    ended = 0
    for arg in argv[2:]:
        lease = leases.owned(c, _lease_id(arg))
        if lease is not None:
            leases.end(lease)
            ended += 1
    c.reply.integer(ended)


def _expiry_ms(argv):
    """RESERVE's optional EX/PX as milliseconds from the commit, or None."""
    if len(argv) == 4:
        return None
    if len(argv) != 6:
        raise CommandError(errors.SYNTAX)
    unit = upper(argv[4])
    scale = {"EX": 1000, "PX": 1}.get(unit)
    if scale is None:
        raise CommandError(errors.SYNTAX)
    when = parse_int(argv[5])
    if when <= 0 or when > INT64_MAX // scale // 2:
        raise CommandError(errors.invalid_expire("cxl|reserve"))
    return when * scale


def cmd_cxl_reserve(c, argv):
    _check_mapping(c)
    key = bytes(argv[2])
    nbytes = parse_int(argv[3])
    if nbytes < 0:
        raise CommandError(errors.NOT_INTEGER)
    if nbytes > c.services.config["proto-max-bulk-len"]:
        raise CommandError(errors.STRING_TOO_LONG)
    ttl_ms = _expiry_ms(argv)
    lease = c.services.leases.slot(c, nbytes, c.db, key, ttl_ms)   # past the cap or OOM: refused
    c.reply.array(4)
    c.reply.integer(lease.id)
    c.reply.integer(lease.mapped_offset)
    c.reply.integer(nbytes)
    c.reply.integer(c.services.config["cxl-lease-ms"])


def _owned_slot(c, arg):
    lease_id = _lease_id(arg)
    lease = c.services.leases.owned(c, lease_id, SLOT)
    if lease is None:
        raise CommandError(NO_SUCH_LEASE.format(lease_id))
    return lease, time.monotonic()


def cmd_cxl_commit(c, argv):
    _check_mapping(c)
    lease, now = _owned_slot(c, argv[2])
    leases = c.services.leases
    if now >= lease.expires:
        # the block may be freed any moment now: a late writer's bytes are not trusted
        leases.end(lease)
        raise CommandError(LEASE_EXPIRED.format(lease.id))
    moved = _slot_left(c, lease)
    if moved is not None:
        leases.end(lease)
        raise CommandError(moved)
    expire_at = -1 if lease.ttl_ms is None else now_ms() + lease.ttl_ms
    # the commit path of a value received into a slot (SET): visible at once, whole; in
    # the keyspace the block was reserved in, whatever the connection is bound to now
    lease.commit(expire_at)
    c.services.tracking.written(lease.store, lease.key, c)
    leases.committed(lease)
    c.reply.ok()


def _slot_left(c, lease):
    """In a cluster, the redirect a COMMIT answers when the reservation's slot is no
    longer this node's to write: RESERVE was redirected by its key, COMMIT names none,
    and the slot may have moved in between. Committing then would leave a key no node
    serves (MOVED), or one beside the copy MIGRATE already moved (ASK). None: commit."""
    cluster = c.services.cluster
    if cluster is None:
        return None
    slot = key_slot(lease.key)
    owner = cluster.owner[slot]
    if owner is cluster.myself:
        to = cluster.migrating.get(slot)
        if to is None or lease.store.find(lease.db, lease.key, False, False) is not None:
            return None
        owner, kind = to, "ASK"         # a new key of a migrating slot belongs to its target
    elif slot in cluster.importing:
        return None                     # reserved after ASKING, for the slot coming here
    elif owner is None:
        return "CLUSTERDOWN Hash slot not served"
    else:
        kind = "MOVED"
    return f"{kind} {slot} {cluster.endpoint(owner)}:{owner.port}"


def cmd_cxl_abort(c, argv):
    _check_mapping(c)
    lease, _ = _owned_slot(c, argv[2])
    c.services.leases.end(lease)
    c.reply.ok()


def cmd_cxl_help(c, argv):
    reply_help(c, CXL_HELP)
