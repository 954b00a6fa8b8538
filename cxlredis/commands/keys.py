"""Keyspace commands: DEL, EXISTS, TYPE, the EXPIRE/TTL family, KEYS, SCAN,
RENAME, COPY, MOVE, OBJECT, MEMORY USAGE, and the per-db ones (DBSIZE,
FLUSHDB, FLUSHALL, SWAPDB).

Lookups follow Redis 7.0: introspection (EXISTS, TYPE, TTL, OBJECT) counts
hits/misses but leaves the LRU alone; write commands touch without counting;
DEL and MEMORY USAGE do neither.
"""
from .. import errors
from .._store import (ENCODING_HASHTABLE, ENCODING_SKIPLIST, TYPE_HASH, TYPE_LIST, TYPE_SET, TYPE_STRING,
                      TYPE_ZSET, now_ms)
from ..errors import CommandError
from ..notifications import GENERIC, NEW
from ..tenants import own_keyspace
from .args import INT64_MAX, parse_int, upper
from .connection import reply_help
from .hashes import decode as decode_hash
from .scanning import parse_cursor
from .strings import stored_int

TYPE_NAMES = {TYPE_STRING: "string", TYPE_HASH: "hash", TYPE_LIST: "list", TYPE_SET: "set", TYPE_ZSET: "zset"}
SCAN_TYPES = {name.encode(): code for code, name in TYPE_NAMES.items()}
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _db_index(arg, error=None):
    """Redis's getIntFromObjectOrReply: a 32-bit integer, else CommandError (error if given)."""
    value = parse_int(arg, error or errors.NOT_INTEGER)
    if not INT32_MIN <= value <= INT32_MAX:
        raise CommandError(error or errors.int_out_of_range(INT32_MIN, INT32_MAX))
    return value


def _check_db_range(c, db):
    if not 0 <= db < c.store.databases:
        raise CommandError(errors.DB_INDEX_OUT_OF_RANGE)


# --- existence and deletion ----------------------------------------------
def cmd_del(c, argv):
    store, db, deleted = c.store, c.db, 0
    for key in argv[1:]:
        if store.delete(db, key):
            deleted += 1
            c.notify(GENERIC, b"del", key)
    c.reply.integer(deleted)


cmd_unlink = cmd_del


def cmd_exists(c, argv):
    c.reply.integer(sum(1 for key in argv[1:] if c.find(key, touch=False) is not None))


def cmd_touch(c, argv):
    c.reply.integer(sum(1 for key in argv[1:] if c.find(key) is not None))


def cmd_type(c, argv):
    entry = c.find(argv[1], touch=False)
    c.reply.simple(TYPE_NAMES[entry.type] if entry is not None else "none")


# --- expiry --------------------------------------------------------------
def _expire(c, argv, scale, relative, command):
    """Redis's expireGenericCommand: EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT [NX|XX|GT|LT]."""
    nx = xx = gt = lt = False
    for arg in argv[3:]:
        option = upper(arg)
        if option == "NX":
            nx = True
        elif option == "XX":
            xx = True
        elif option == "GT":
            gt = True
        elif option == "LT":
            lt = True
        else:
            raise CommandError(errors.unsupported_option(errors.c_string(arg)))
    if nx and (xx or gt or lt):
        raise CommandError(errors.EXPIRE_NX_AND_OTHERS)
    if gt and lt:
        raise CommandError(errors.EXPIRE_GT_AND_LT)
    when = parse_int(argv[2])
    # Negative times are allowed (they delete the key); only int64 overflow is an error.
    if scale > 1:
        if abs(when) > INT64_MAX // scale:
            raise CommandError(errors.invalid_expire(command))
        when *= scale
    now = now_ms()
    base = now if relative else 0
    if when > INT64_MAX - base:
        raise CommandError(errors.invalid_expire(command))
    when += base
    store, key = c.store, argv[1]
    entry = store.find(c.db, key, stats=False)
    if entry is None:
        c.reply.integer(0)
        return
    current = entry.expire_at
    if ((nx and current != -1) or (xx and current == -1)
            or (gt and (current == -1 or when <= current))  # no TTL counts as an infinite one
            or (lt and current != -1 and when >= current)):
        c.reply.integer(0)
        return
    if when <= now:
        store.delete(c.db, key)
        c.notify(GENERIC, b"del", key)
    else:
        store.set_expire(entry, when)
        c.notify(GENERIC, b"expire", key)
    c.reply.integer(1)


def cmd_expire(c, argv):
    _expire(c, argv, 1000, True, "expire")


def cmd_pexpire(c, argv):
    _expire(c, argv, 1, True, "pexpire")


def cmd_expireat(c, argv):
    _expire(c, argv, 1000, False, "expireat")


def cmd_pexpireat(c, argv):
    _expire(c, argv, 1, False, "pexpireat")


def _ttl(c, key, milliseconds, absolute):
    entry = c.find(key, touch=False)
    if entry is None:
        c.reply.integer(-2)
        return
    at = entry.expire_at
    if at == -1:
        c.reply.integer(-1)
        return
    value = at if absolute else max(at - now_ms(), 0)
    c.reply.integer(value if milliseconds else (value + 500) // 1000)


def cmd_ttl(c, argv):
    _ttl(c, argv[1], False, False)


def cmd_pttl(c, argv):
    _ttl(c, argv[1], True, False)


def cmd_expiretime(c, argv):
    _ttl(c, argv[1], False, True)


def cmd_pexpiretime(c, argv):
    _ttl(c, argv[1], True, True)


def cmd_persist(c, argv):
    store = c.store
    entry = store.find(c.db, argv[1], stats=False)
    if entry is not None and entry.expire_at != -1:
        store.set_expire(entry, -1)
        c.notify(GENERIC, b"persist", argv[1])
        c.reply.integer(1)
    else:
        c.reply.integer(0)


# --- iteration -----------------------------------------------------------
def cmd_keys(c, argv):
    c.reply.bulk_array(c.store.keys(c.db, argv[1]))


def cmd_scan(c, argv):
    cursor = parse_cursor(argv[1])
    count, match, type_name = 10, None, None
    i, n = 2, len(argv)
    while i < n:
        option = upper(argv[i])
        if option == "COUNT" and i + 1 < n:
            count = parse_int(argv[i + 1])
            if count < 1:
                raise CommandError(errors.SYNTAX)
        elif option == "MATCH" and i + 1 < n:
            match = argv[i + 1]
        elif option == "TYPE" and i + 1 < n:
            type_name = bytes(argv[i + 1]).lower()
        else:
            raise CommandError(errors.SYNTAX)
        i += 2
    type_code = -1 if type_name is None else SCAN_TYPES.get(type_name)
    cursor, keys = c.store.scan(c.db, cursor, count, match, -1 if type_code is None else type_code)
    if type_code is None:  # a type no key can have: the scan still advances
        keys = []
    c.reply.array(2)
    c.reply.bulk(b"%d" % cursor)
    c.reply.bulk_array(keys)


def cmd_randomkey(c, argv):
    key = c.store.random_key(c.db)
    if key is None:
        c.reply.null()
    else:
        c.reply.bulk(key)


# --- renaming, copying, moving -----------------------------------------------
def _rename(c, argv, nx):
    store, db, key, newkey = c.store, c.db, argv[1], argv[2]
    if store.find(db, key, stats=False) is None:
        raise CommandError(errors.NO_SUCH_KEY)
    if bytes(key) == bytes(newkey):
        renamed = False
    elif nx and store.find(db, newkey, stats=False) is not None:
        renamed = False
    else:
        renamed = store.rename(db, key, db, newkey)
    if renamed:
        c.notify(NEW, b"new", newkey)
        c.notify(GENERIC, b"rename_from", key)
        c.notify(GENERIC, b"rename_to", newkey)
    if nx:
        c.reply.integer(1 if renamed else 0)
    else:
        c.reply.ok()


def cmd_rename(c, argv):
    _rename(c, argv, False)


def cmd_renamenx(c, argv):
    _rename(c, argv, True)


def cmd_copy(c, argv):
    store, db, key, newkey = c.store, c.db, argv[1], argv[2]
    dstdb, replace = db, False
    i, n = 3, len(argv)
    while i < n:
        option = upper(argv[i])
        if option == "REPLACE":
            replace = True
        elif option == "DB" and i + 1 < n:
            dstdb = _db_index(argv[i + 1])
            _check_db_range(c, dstdb)
            i += 1
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    if (db or dstdb) and c.services.cluster is not None:     # a cluster node has db 0 only
        raise CommandError("ERR Copying to another database is not allowed in cluster mode")
    if dstdb == db and bytes(key) == bytes(newkey):
        raise CommandError(errors.SAME_OBJECT)
    if c.find(key) is None:
        c.reply.integer(0)
        return
    copied = store.copy(db, key, dstdb, newkey, replace)
    if copied:
        c.notify(NEW, b"new", newkey, dstdb)
        c.notify(GENERIC, b"copy_to", newkey, dstdb)
        c.services.blocked.written(c, (newkey,), dstdb)
    c.reply.integer(1 if copied else 0)


def cmd_move(c, argv):
    if c.services.cluster is not None:
        raise CommandError("ERR MOVE is not allowed in cluster mode")
    store, db, key = c.store, c.db, argv[1]
    dstdb = _db_index(argv[2])
    _check_db_range(c, dstdb)
    if dstdb == db:
        raise CommandError(errors.SAME_OBJECT)
    if store.find(db, key, stats=False) is None or store.find(dstdb, key, stats=False) is not None:
        c.reply.integer(0)
        return
    store.rename(db, key, dstdb, key)
    c.services.blocked.written(c, (key,), dstdb)
    c.notify(NEW, b"new", key, dstdb)
    c.notify(GENERIC, b"move_from", key)
    c.notify(GENERIC, b"move_to", key, dstdb)
    c.reply.integer(1)


# --- OBJECT --------------------------------------------------------------
def _object_entry(c, argv):
    """The entry OBJECT asks about (no LRU touch), or None after replying a null."""
    entry = c.store.find(c.db, argv[2], touch=False)
    if entry is None:
        c.reply.null()
    return entry


def _lfu_policy(c):
    return c.store.policy.endswith("-lfu")


def _string_encoding(entry):
    """Redis's choice for a string it stored: "int" if it reads back as a 64-bit integer,
    "embstr" up to 44 bytes, "raw" beyond."""
    if stored_int(entry) is not None:
        return "int"
    return "embstr" if entry.value_len <= 44 else "raw"


def _hash_encoding(c, entry):
    """The encoding Redis would have for this hash were it built in one go, by the limits
    hash-max-listpack-entries and hash-max-listpack-value set."""
    config = c.services.config
    fields = decode_hash(entry.view())
    if len(fields) > config["hash-max-listpack-entries"]:
        return "hashtable"
    longest = max((max(len(f), len(v)) for f, v in fields.items()), default=0)
    return "listpack" if longest <= config["hash-max-listpack-value"] else "hashtable"


def encoding(c, entry):
    """OBJECT ENCODING's answer for entry (DEBUG OBJECT's too). A list is a quicklist, as
    every list of Redis 7.0's; a set and a sorted set keep the encoding Redis's rules give
    them as they change (commands/sets.py, zsets.py)."""
    if entry.type == TYPE_STRING:
        return _string_encoding(entry)
    if entry.type == TYPE_HASH:
        return _hash_encoding(c, entry)
    if entry.type == TYPE_LIST:
        return "quicklist"
    wide = entry.collection().encoding
    if entry.type == TYPE_SET:
        return "hashtable" if wide == ENCODING_HASHTABLE else "intset"
    return "skiplist" if wide == ENCODING_SKIPLIST else "listpack"


def refcount(c, entry):
    """OBJECT REFCOUNT's answer for entry (DEBUG OBJECT's too): Redis shares the objects of
    the integers 0..9999 (refcount INT_MAX) unless an LRU/LFU policy with a maxmemory limit
    needs per-key access times."""
    value = stored_int(entry) if entry.type == TYPE_STRING else None
    shared = (value is not None and 0 <= value < 10000
              and (c.services.config["maxmemory"] == 0 or not c.store.policy.endswith(("-lru", "-lfu"))))
    return INT32_MAX if shared else 1


def cmd_object_encoding(c, argv):
    entry = _object_entry(c, argv)
    if entry is None:
        return
    c.reply.bulk(encoding(c, entry).encode())


def cmd_object_refcount(c, argv):
    entry = _object_entry(c, argv)
    if entry is None:
        return
    c.reply.integer(refcount(c, entry))


def cmd_object_idletime(c, argv):
    entry = _object_entry(c, argv)
    if entry is None:
        return
    if _lfu_policy(c):
        raise CommandError(errors.LFU_SELECTED)
    c.reply.integer(entry.idle_ms // 1000)


def cmd_object_freq(c, argv):
    entry = _object_entry(c, argv)
    if entry is None:
        return
    if not _lfu_policy(c):
        raise CommandError(errors.LFU_NOT_SELECTED)
    c.reply.integer(entry.lfu_counter)


OBJECT_HELP = (
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
)


def cmd_object_help(c, argv):
    reply_help(c, OBJECT_HELP)


# --- MEMORY --------------------------------------------------------------
# MEMORY USAGE answers what the entry's arena block really occupies (the server-wide
# reports, DOCTOR, STATS, MALLOC-STATS and PURGE, are in commands/server.py).


def cmd_memory_usage(c, argv):
    i, n = 3, len(argv)
    while i < n:
        if upper(argv[i]) == "SAMPLES" and i + 1 < n:
            if parse_int(argv[i + 1]) < 0:  # samples only matter for nested values; none here
                raise CommandError(errors.SYNTAX)
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    # The caller's own keys only: not those a tenant reads through from a shared namespace.
    store, key = own_keyspace(c.store), argv[2]
    entry = store.find(c.db, key, touch=False, stats=False)
    if entry is None:
        c.reply.null()
        return
    c.reply.integer(entry.block_size)


MEMORY_HELP = (
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
)


def cmd_memory_help(c, argv):
    reply_help(c, MEMORY_HELP)


# --- databases -----------------------------------------------------------
def cmd_dbsize(c, argv):
    c.reply.integer(c.store.dbsize(c.db))


def _check_flush_mode(argv):
    """FLUSHDB/FLUSHALL take an optional ASYNC or SYNC (both flush at once here)."""
    if len(argv) > 2 or (len(argv) == 2 and upper(argv[1]) not in ("ASYNC", "SYNC")):
        raise CommandError(errors.SYNTAX)


def cmd_flushdb(c, argv):
    _check_flush_mode(argv)
    c.store.flushdb(c.db)
    c.services.tracking.flushed(c.store)
    c.reply.ok()


def cmd_flushall(c, argv):
    _check_flush_mode(argv)
    c.store.flushall()
    c.services.tracking.flushed(c.store)
    c.reply.ok()


def cmd_swapdb(c, argv):
    if c.services.cluster is not None:
        raise CommandError("ERR SWAPDB is not allowed in cluster mode")
    first = _db_index(argv[1], errors.INVALID_FIRST_DB_INDEX)
    second = _db_index(argv[2], errors.INVALID_SECOND_DB_INDEX)
    _check_db_range(c, first)
    _check_db_range(c, second)
    c.store.swapdb(first, second)
    c.services.blocked.written_db(c, first)     # what either db holds is new to its waiters
    c.services.blocked.written_db(c, second)
    c.reply.ok()
