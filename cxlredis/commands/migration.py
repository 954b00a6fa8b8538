"""DUMP, RESTORE, RESTORE-ASKING and MIGRATE, as Redis 7.0's cluster.c has them, over
the payloads of cluster/dump.py and the cached target connections of cluster/migrate.py.

A string's payload is an RDB header, the value itself and a footer: DUMP replies with
the value between them straight from the arena (`ReplyWriter.framed_entry`), and MIGRATE
sends it from its arena view, the entry pinned until the transfer is over. RESTORE
copies the value once, from the received payload into the arena, through the
connection's tenant-bound store (so its quota holds: -OOM). A hash is re-encoded each
way, between the arena's layout (commands/hashes.py) and the RDB's. A list, set or
sorted set is read out of its trees into the RDB encoding its own encoding calls for
(a list's nodes cut as list-max-listpack-size cuts them), and restored into trees in one
transaction, in the encoding Redis would load it in under the configured limits.
"""
from .. import errors
from .._store import (ENCODING_HASHTABLE, ENCODING_INTSET, ENCODING_LISTPACK, ENCODING_SKIPLIST, TYPE_HASH,
                      TYPE_LIST, TYPE_SET, TYPE_STRING, TYPE_ZSET, now_ms)
from ..cluster import dump
from ..cluster.migrate import restore_command
from ..cluster.slots import key_slot
from ..errors import CommandError
from ..notifications import GENERIC, NEW
from .args import INT64_MAX, INT64_MIN, parse_int, upper
from .hashes import decode as decode_hash, encode as encode_hash

BUSYKEY = "BUSYKEY Target key name already exists."
INVALID_TTL = "ERR Invalid TTL value, must be >= 0"
INVALID_IDLETIME = "ERR Invalid IDLETIME value, must be >= 0"
INVALID_FREQ = "ERR Invalid FREQ value, must be >= 0 and <= 255"
KEYS_WITH_A_KEY = ("ERR When using MIGRATE KEYS option, the key argument must be set to the "
                   "empty string")
NOKEY = "NOKEY"
MIGRATE_DEFAULT_TIMEOUT_MS = 1000       # what a timeout <= 0 stands for
LRU_CLOCK_MAX = (1 << 24) - 1           # Redis's LRU clock: seconds, in a 24-bit field


def dump_limits(config):
    """The configuration DUMP and RESTORE read (dump.Limits)."""
    return dump.Limits(dump.quicklist_fill(config["list-max-listpack-size"]),
                       config["set-max-intset-entries"], config["zset-max-listpack-entries"],
                       config["zset-max-listpack-value"])


def payload_parts(entry, limits):
    """The DUMP payload of entry as (head, body, footer): for a string, body is the value's
    arena view (b"" when it is int-encoded); for any other type, the whole payload."""
    if entry.type == TYPE_STRING:
        return dump.dump_string_parts(entry.view())
    if entry.type == TYPE_HASH:
        return b"", dump.dump_hash(decode_hash(entry.view()).items()), b""
    coll = entry.collection()
    if entry.type == TYPE_LIST:
        payload = dump.dump_list(coll.list_range(0, len(coll)), limits.list_max_listpack_size)
    elif entry.type == TYPE_SET:
        payload = dump.dump_set(coll.set_members(), coll.encoding == ENCODING_INTSET)
    else:
        payload = dump.dump_zset(coll.zset_range(0, len(coll)), coll.encoding == ENCODING_LISTPACK)
    return b"", payload, b""


# --- DUMP ------------------------------------------------------------------------
def cmd_dump(c, argv):
    entry = c.find(argv[1])
    if entry is None:
        c.reply.null()
        return
    head, body, footer = payload_parts(entry, dump_limits(c.services.config))
    if entry.type == TYPE_STRING and len(body):
        c.reply.framed_entry(head, entry, footer)
    else:
        c.reply.bulk(b"".join((head, body, footer)))


# --- RESTORE -----------------------------------------------------------------------
def _c_int64(value):
    """value wrapped to a signed 64-bit integer, as C's arithmetic leaves it."""
    return (value - INT64_MIN) % (1 << 64) + INT64_MIN


def lru_idle_seconds(idle, now):
    """The idle time Redis 7.0 gives a key restored with IDLETIME idle (seconds) at now
    (ms): what its OBJECT IDLETIME then shows. Its LRU clock is 24 bits of seconds, so an
    idle time from 2^24 s on comes out wrapped (and one past INT64_MAX/1000 overflows)."""
    clock = (now // 1000) & LRU_CLOCK_MAX
    scaled = _c_int64(idle * 1000)
    seconds = -(-scaled // 1000) if scaled < 0 else scaled // 1000     # C's division
    lru = clock - seconds
    if lru < 0:
        lru += LRU_CLOCK_MAX
    lru &= LRU_CLOCK_MAX
    return clock - lru if clock >= lru else clock + (LRU_CLOCK_MAX - lru)


def _restore_options(argv, tenant_option):
    """(replace, absttl, idle seconds or -1, frequency or -1, tenant name or None):
    Redis's option loop, which takes IDLETIME and FREQ only while the other is absent;
    TENANT only if tenant_option (RESTORE-ASKING: a slot's keys moving, slot_keys.py)."""
    replace = absttl = False
    idle = freq = -1
    tenant = None
    i, n = 4, len(argv)
    while i < n:
        option = upper(argv[i])
        more = i + 1 < n
        if option == "REPLACE":
            replace = True
        elif option == "ABSTTL":
            absttl = True
        elif option == "IDLETIME" and more and freq == -1:
            idle = parse_int(argv[i + 1])
            if idle < 0:
                raise CommandError(INVALID_IDLETIME)
            i += 1
        elif option == "FREQ" and more and idle == -1:
            freq = parse_int(argv[i + 1])
            if not 0 <= freq <= 255:
                raise CommandError(INVALID_FREQ)
            i += 1
        elif option == "TENANT" and more and tenant_option:
            tenant = bytes(argv[i + 1]).decode("latin-1")
            i += 1
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    return replace, absttl, idle, freq, tenant


def _tenant_keyspace(c, tenant):
    """The keyspace RESTORE-ASKING ... TENANT name restores into: that tenant's own,
    for an administrator only (it is how a slot's keys of every tenant move)."""
    if c.tenant is not None:
        raise CommandError(f"ERR RESTORE-ASKING TENANT is for administrators: this connection "
                           f"belongs to tenant '{c.tenant}'")
    keyspace = dict(c.services.tenants.own_keyspaces()).get(tenant)
    if keyspace is None:
        raise CommandError(f"ERR no such tenant '{tenant}'")
    return keyspace


def cmd_restore(c, argv):
    _restore(c, argv, tenant_option=False)


def cmd_restore_asking(c, argv):
    """RESTORE that a cluster node takes for a slot it is importing, Redis's, plus TENANT
    between cxlredis nodes."""
    _restore(c, argv, tenant_option=True)


def _restore(c, argv, tenant_option):
    # Redis's order: the options, the key's absence, the TTL, then the payload.
    replace, absttl, idle, freq, tenant = _restore_options(argv, tenant_option)
    store = c.store if tenant is None else _tenant_keyspace(c, tenant)
    db, key = c.db, argv[1]
    if not replace and store.find(db, key, stats=False) is not None:
        raise CommandError(BUSYKEY)
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise CommandError(INVALID_TTL)
    kind, value = dump.load_payload(argv[3], dump_limits(c.services.config))
    now = now_ms()
    expire_at = -1
    if ttl:
        expire_at = ttl if absttl else ttl + now
        # Redis adds in int64: a TTL that overflows is a time long past, as is ABSTTL's past.
        if expire_at > INT64_MAX or expire_at <= now:
            if replace and store.delete(db, key) and tenant is None:
                c.notify(GENERIC, b"del", key)
            c.reply.ok()
            return
    if kind == "string":
        store.set(db, key, value, expire_at, TYPE_STRING)
    elif kind == "hash":
        store.set(db, key, encode_hash(dict(value)), expire_at, TYPE_HASH)
    else:
        _write_collection(store, db, key, kind, value)
        if expire_at != -1:
            store.set_expire(store.find(db, key, touch=False, stats=False), expire_at)
    # FREQ counts under an LFU policy, IDLETIME under any other; the other is ignored.
    lfu = store.policy.endswith("-lfu")
    if lfu and freq >= 0:
        store.set_recency(store.find(db, key, touch=False, stats=False), lfu=freq)
    elif not lfu and idle >= 0:
        store.set_recency(store.find(db, key, touch=False, stats=False),
                          idle_ms=lru_idle_seconds(idle, now) * 1000)
    if tenant is None:      # (one for another tenant is published by no one: a slot moving)
        c.notify(NEW, b"new", key)
        c.notify(GENERIC, b"restore", key)
    c.reply.ok()


def _write_collection(store, db, key, kind, value):
    """A restored list, set or sorted set (dump.load_payload's value) made at key in place
    of whatever is there (REPLACE), in one transaction: all of it, or (an error, -OOM)
    none of it, the old value kept."""
    if kind == "list":
        with store.write_collection(db, key, TYPE_LIST, replace=True) as coll:
            for index, element in enumerate(value):
                coll.list_insert(index, element)
    elif kind == "set":
        members, hashtable = value
        with store.write_collection(db, key, TYPE_SET, replace=True) as coll:
            if hashtable:
                coll.set_encode_as(ENCODING_HASHTABLE)
            for member in members:
                coll.set_add(member, len(members))     # (an intset holds them all)
    else:
        pairs, skiplist = value
        with store.write_collection(db, key, TYPE_ZSET, replace=True) as coll:
            coll.zset_encode_as(ENCODING_SKIPLIST if skiplist else ENCODING_LISTPACK)
            for member, score in pairs:
                coll.zset_put(member, score, len(pairs), INT64_MAX)


# --- MIGRATE -----------------------------------------------------------------------
def _migrate_options(argv):
    """(copy, replace, AUTH's arguments, the keys): Redis's option loop; KEYS ends it."""
    copy = replace = False
    username = password = None
    keys = [argv[3]]
    i, n = 6, len(argv)
    while i < n:
        option = upper(argv[i])
        left = n - 1 - i
        if option == "COPY":
            copy = True
        elif option == "REPLACE":
            replace = True
        elif option == "AUTH":
            if left < 1:
                raise CommandError(errors.SYNTAX)
            password = bytes(argv[i + 1])
            i += 1
        elif option == "AUTH2":
            if left < 2:
                raise CommandError(errors.SYNTAX)
            username, password = bytes(argv[i + 1]), bytes(argv[i + 2])
            i += 2
        elif option == "KEYS":
            if len(argv[3]):
                raise CommandError(KEYS_WITH_A_KEY)
            keys = argv[i + 1:]
            break
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    if password is None:
        auth = ()
    else:
        auth = (password,) if username is None else (username, password)
    return copy, replace, auth, keys


def _migrating(c, keys):
    """(tenant name or None, keyspace, key, entry) of each key MIGRATE moves: the caller's
    own; when an administrator moves a slot this node is migrating, every tenant's key of
    that name (the slot moves whole, slot_keys.py), the tenant named to the target."""
    cluster = c.services.cluster
    every_tenant = cluster is not None and c.tenant is None and cluster.migrating
    found = []
    for key in keys:
        if every_tenant and key_slot(key) in cluster.migrating:
            found += [(name, keyspace, key, entry) for name, keyspace, entry in cluster.keys.holders(key)]
            continue
        entry = c.store.find(c.db, key)
        if entry is not None:
            found.append((None, c.store, key, entry))
    return found


def cmd_migrate(c, argv):
    copy, replace, auth, keys = _migrate_options(argv)
    timeout = parse_int(argv[5])
    target_db = parse_int(argv[4])
    if timeout <= 0:
        timeout = MIGRATE_DEFAULT_TIMEOUT_MS
    found = _migrating(c, keys)
    if not found:                   # not an error: the keys may just have expired
        c.reply.simple(NOKEY)
        return
    by_reference_from = c.reply.large_threshold
    limits = dump_limits(c.services.config)
    pins, sent, restores = [], [], []
    try:
        now = now_ms()
        for tenant, keyspace, key, entry in found:
            ttl = 0
            if entry.expire_at != -1:
                ttl = entry.expire_at - now
                if ttl < 0:
                    continue
                ttl = max(ttl, 1)
            if entry.type == TYPE_STRING:
                pins.append(entry.pin())    # its value goes out from the arena view
            head, body, footer = payload_parts(entry, limits)
            restores.append(restore_command(bytes(key), ttl, head, body, footer, replace,
                                            by_reference_from, c.services.cluster is not None,
                                            tenant))
            sent.append((keyspace, key))
        accepted, error = c.services.migrate_links.transfer(argv[1], argv[2], timeout, target_db,
                                                            auth, restores)
    finally:
        for arena, off in pins:
            arena.unpin(off)
    if not copy:
        for index in accepted:
            keyspace, key = sent[index]
            keyspace.delete(c.db, key)
            if keyspace is c.store:
                c.notify(GENERIC, b"del", key)
    if error is not None:
        raise CommandError(error)
    c.reply.ok()
