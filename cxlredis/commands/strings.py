"""String commands: GET/SET and their variants, counters, ranges, LCS.

A large value argument of SET/SETNX/SETEX/PSETEX/GETSET/MSET/MSETNX arrives as
a SlotArg already inside its arena block; `c.store_value` commits it there, so
the value is never copied through Python. Values go back out through
`c.reply.entry` (copied when small, else the arena slot itself, pinned until sent).

Lookups follow Redis's: reads (GET, MGET, GETRANGE, ...) touch the LRU and
count hits/misses; the lookups of write commands (INCR, APPEND, SETNX, ...)
touch but do not count (Redis's lookupKeyWrite).

LCS fills its table and walks it in C (cxlredis._strops) over the two entries'
views; the bitmap commands, strings too, are in commands/bitmaps.py.
"""
from .. import errors
from .._numbers import NotAFloat, incr_by_float
from .._store import TYPE_STRING, now_ms
from .._strops import lcs, lcs_table_bytes
from ..errors import CommandError
from ..notifications import GENERIC, KEY_MISS, NEW, STRING
from .args import INT64_MAX, INT64_MIN, c_word, is_int64, parse_int, upper
from ..sessions import touch_absent_watched_key

def find_string(c, key, for_write=False):
    """The string entry for key (CallContext.find)."""
    return c.find(key, for_write, TYPE_STRING)


def set_string(c, key, value, expire_at=-1, keep_ttl=False, created=None):
    """Store a string and report it as Redis's SET family does: new, set, then expire."""
    if created is None:
        created = c.creates(key)
    c.store_value(key, value, expire_at, keep_ttl)
    if created:
        c.notify(NEW, b"new", key)
    c.notify(STRING, b"set", key)
    if expire_at >= 0:
        c.notify(GENERIC, b"expire", key)


def _reply_string(c, key):
    """GET's reply for key (a value or a null); returns the entry, None if missing."""
    entry = find_string(c, key)
    if entry is None:
        c.reply.null()
    else:
        c.reply.entry(entry)
    return entry


def _check_length(c, size, append):
    """Redis's checkStringLength: a string may not outgrow proto-max-bulk-len."""
    if size + append > c.services.config["proto-max-bulk-len"]:
        raise CommandError(errors.STRING_TOO_LONG)


# --- expiry options ------------------------------------------------------
# unit name -> (milliseconds per unit, absolute time?)
_EXPIRE_UNITS = {"EX": (1000, False), "PX": (1, False), "EXAT": (1000, True), "PXAT": (1, True)}


def expire_at_ms(arg, unit, command):
    """Redis's getExpireMillisecondsOrReply: the absolute expiry in ms for an EX/PX/EXAT/PXAT value."""
    scale, absolute = _EXPIRE_UNITS[unit]
    when = parse_int(arg)
    if when <= 0 or when > INT64_MAX // scale:
        raise CommandError(errors.invalid_expire(command))
    when *= scale
    if not absolute:
        when += now_ms()
        if when > INT64_MAX:  # Redis sees the signed overflow as a non-positive time
            raise CommandError(errors.invalid_expire(command))
    return when


def _parse_options(argv, start, for_set):
    """Redis's parseExtendedStringArgumentsOrReply for SET (for_set) and GETEX.

    Returns (flags, unit, expire_arg): flags a set of NX/XX/GET/KEEPTTL/PERSIST,
    unit one of EX/PX/EXAT/PXAT or None. An expiry option may repeat (the last
    one wins) but not mix with another unit, KEEPTTL or PERSIST.
    """
    flags = set()
    unit = expire = None
    i, n = start, len(argv)
    while i < n:
        opt = upper(argv[i])
        if opt == "NX" and for_set and "XX" not in flags:
            flags.add("NX")
        elif opt == "XX" and for_set and "NX" not in flags:
            flags.add("XX")
        elif opt == "GET" and for_set:
            flags.add("GET")
        elif opt == "KEEPTTL" and for_set and unit is None:
            flags.add("KEEPTTL")
        elif opt == "PERSIST" and not for_set and unit is None:
            flags.add("PERSIST")
        elif (opt in _EXPIRE_UNITS and unit in (None, opt) and i + 1 < n
              and "KEEPTTL" not in flags and "PERSIST" not in flags):
            unit, expire = opt, argv[i + 1]
            i += 1
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    return flags, unit, expire


# --- GET / SET family ----------------------------------------------------
def cmd_get(c, argv):
    _reply_string(c, argv[1])


def cmd_set(c, argv):
    if len(argv) == 3:  # the common case: no options, no lookup
        set_string(c, argv[1], argv[2])
        c.reply.ok()
        return
    flags, unit, expire = _parse_options(argv, 3, for_set=True)
    expire_at = expire_at_ms(expire, unit, "set") if unit else -1
    key = argv[1]
    with_get = "GET" in flags
    if with_get:
        found = _reply_string(c, key) is not None
    elif "NX" in flags or "XX" in flags:
        found = c.store.find(c.db, key, stats=False) is not None
    else:
        found = False
    if ("NX" in flags and found) or ("XX" in flags and not found):
        if not with_get:
            c.reply.null()
        return
    set_string(c, key, argv[2], expire_at, "KEEPTTL" in flags, created=not found and c.creates(key))
    if 0 <= expire_at <= now_ms():
        # it left no live entry, and still touched key as in Redis: its watchers and trackers
        # hear of it even if it was absent (a key that existed changed its generation too)
        if c.services.watchers:
            touch_absent_watched_key(c, key)
        c.services.tracking.written(c.store, key, c)
    if not with_get:
        c.reply.ok()


def cmd_setnx(c, argv):
    if c.store.find(c.db, argv[1], stats=False) is not None:
        c.reply.integer(0)
        return
    set_string(c, argv[1], argv[2], created=True)
    c.reply.integer(1)


def cmd_setex(c, argv):
    set_string(c, argv[1], argv[3], expire_at_ms(argv[2], "EX", "setex"))
    c.reply.ok()


def cmd_psetex(c, argv):
    set_string(c, argv[1], argv[3], expire_at_ms(argv[2], "PX", "psetex"))
    c.reply.ok()


def cmd_getset(c, argv):
    found = _reply_string(c, argv[1]) is not None
    set_string(c, argv[1], argv[2], created=not found)


def cmd_getdel(c, argv):
    # reply.entry pinned a large value, so deleting it now only unlinks it:
    # the arena frees the block once the reply has been sent.
    if _reply_string(c, argv[1]) is not None:
        c.store.delete(c.db, argv[1])
        c.notify(GENERIC, b"del", argv[1])


def cmd_getex(c, argv):
    flags, unit, expire = _parse_options(argv, 2, for_set=False)
    store, key = c.store, argv[1]
    entry = find_string(c, key)
    if entry is None:
        c.reply.null()
        return
    expire_at = expire_at_ms(expire, unit, "getex") if unit else None
    c.reply.entry(entry)
    if expire_at is not None:
        if _EXPIRE_UNITS[unit][1] and expire_at <= now_ms():
            store.delete(c.db, key)
            c.notify(GENERIC, b"del", key)
        else:
            store.set_expire(entry, expire_at)
            c.notify(GENERIC, b"expire", key)
    elif "PERSIST" in flags and entry.expire_at != -1:
        store.set_expire(entry, -1)
        c.notify(GENERIC, b"persist", key)


def cmd_mget(c, argv):
    store, db, reply = c.store, c.db, c.reply
    reply.array(len(argv) - 1)
    for key in argv[1:]:
        entry = store.find(db, key)
        if entry is not None and entry.type == TYPE_STRING:
            reply.entry(entry)
        else:
            if entry is None:
                c.notify(KEY_MISS, b"keymiss", key)
            reply.null()


def cmd_mset(c, argv):
    if len(argv) % 2 == 0:
        raise CommandError(errors.wrong_arity("mset"))
    for i in range(1, len(argv), 2):
        set_string(c, argv[i], argv[i + 1])
    c.reply.ok()


def cmd_msetnx(c, argv):
    if len(argv) % 2 == 0:
        raise CommandError(errors.wrong_arity("msetnx"))
    store, db = c.store, c.db
    for i in range(1, len(argv), 2):
        if store.find(db, argv[i], stats=False) is not None:
            c.reply.integer(0)
            return
    for i in range(1, len(argv), 2):
        set_string(c, argv[i], argv[i + 1], created=True)
    c.reply.integer(1)


# --- lengths and ranges --------------------------------------------------
def notify_update(c, key, event, created):
    """A string command's events for a write to key: "new" if it created it, then its own."""
    if created:
        c.notify(NEW, b"new", key)
    c.notify(STRING, event, key)


def cmd_strlen(c, argv):
    entry = find_string(c, argv[1])
    c.reply.integer(entry.value_len if entry is not None else 0)


def cmd_append(c, argv):
    store, key, data = c.store, argv[1], argv[2]
    entry = find_string(c, key, for_write=True)
    if entry is not None:
        _check_length(c, entry.value_len, len(data))
    c.reply.integer(store.append(c.db, key, data))
    notify_update(c, key, b"append", entry is None)


def cmd_setrange(c, argv):
    store, key, data = c.store, argv[1], argv[3]
    offset = parse_int(argv[2])
    if offset < 0:
        raise CommandError(errors.OFFSET_OUT_OF_RANGE)
    entry = find_string(c, key, for_write=True)
    if entry is not None:
        if not data:
            c.reply.integer(entry.value_len)
            return
    elif not data:  # Redis does not create a key for an empty write
        c.reply.integer(0)
        return
    _check_length(c, offset, len(data))
    c.reply.integer(store.setrange(c.db, key, offset, data))
    notify_update(c, key, b"setrange", entry is None)


def cmd_getrange(c, argv):
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    entry = find_string(c, argv[1])
    if entry is None:
        c.reply.bulk(b"")
        return
    size = entry.value_len
    if start < 0 and end < 0 and start > end:
        c.reply.bulk(b"")
        return
    if start < 0:
        start = max(size + start, 0)
    if end < 0:
        end = max(size + end, 0)
    end = min(end, size - 1)
    if start > end or size == 0:
        c.reply.bulk(b"")
        return
    c.reply.entry(entry, start, end + 1)


cmd_substr = cmd_getrange


# --- counters ------------------------------------------------------------
def stored_int(entry):
    """The string value of entry as Redis reads an integer (string2ll), or None."""
    if entry.value_len > 20:  # longer than any 64-bit integer: no need to read it
        return None
    raw = entry.value_bytes()
    return int(raw) if is_int64(raw) else None


def _incr_by(c, key, delta):
    entry = find_string(c, key, for_write=True)
    current = 0
    if entry is not None:
        current = stored_int(entry)
        if current is None:
            raise CommandError(errors.NOT_INTEGER)
    value = current + delta
    if not INT64_MIN <= value <= INT64_MAX:
        raise CommandError(errors.OVERFLOW)
    c.store.set(c.db, key, b"%d" % value, keep_ttl=True)
    c.reply.integer(value)
    notify_update(c, key, b"incrby", entry is None)


def cmd_incr(c, argv):
    _incr_by(c, argv[1], 1)


def cmd_decr(c, argv):
    _incr_by(c, argv[1], -1)


def cmd_incrby(c, argv):
    _incr_by(c, argv[1], parse_int(argv[2]))


def cmd_decrby(c, argv):
    delta = parse_int(argv[2])
    if delta == INT64_MIN:  # its negation does not fit
        raise CommandError(errors.DECREMENT_OVERFLOW)
    _incr_by(c, argv[1], -delta)


def cmd_incrbyfloat(c, argv):
    key = argv[1]
    entry = find_string(c, key, for_write=True)
    try:
        # long double arithmetic and "%.17Lf" formatting in C, exactly as Redis
        text = incr_by_float(entry.view() if entry is not None else None, argv[2])
    except NotAFloat:
        raise CommandError(errors.NOT_FLOAT) from None
    except OverflowError:
        raise CommandError(errors.INCRFLOAT_NAN_INF) from None
    c.store.set(c.db, key, text, keep_ttl=True)
    c.reply.bulk(text)
    notify_update(c, key, b"incrbyfloat", entry is None)


# --- LCS -----------------------------------------------------------------
# Redis keeps each LCS length in 32 bits: strings this long or longer are refused.
_LCS_MAX_LEN = (1 << 32) - 2


def _lcs_options(argv):
    """LCS's options as Redis's strcasecmp reads them: (idx, len, withmatchlen, minmatchlen)."""
    idx = length = with_len = False
    min_len, i = 0, 3
    while i < len(argv):
        word = c_word(argv[i])
        if word == b"idx":
            idx = True
        elif word == b"len":
            length = True
        elif word == b"withmatchlen":
            with_len = True
        elif word == b"minmatchlen" and i + 1 < len(argv):
            min_len = max(parse_int(argv[i + 1]), 0)
            i += 1
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    if idx and length:
        raise CommandError(errors.LCS_LEN_AND_IDX)
    return idx, length, with_len, min_len


def cmd_lcs(c, argv):
    # both keys are read before the options (a missing key is an empty string)
    entries = c.find(argv[1]), c.find(argv[2])
    if any(entry is not None and entry.type != TYPE_STRING for entry in entries):
        raise CommandError(errors.LCS_NOT_STRINGS)
    idx, length_only, with_len, min_len = _lcs_options(argv)
    a, b = (entry.view() if entry is not None else b"" for entry in entries)
    if len(a) >= _LCS_MAX_LEN or len(b) >= _LCS_MAX_LEN:
        raise CommandError(errors.LCS_TOO_LONG)
    # the table Redis fills is transient memory, bounded by proto-max-bulk-len
    if lcs_table_bytes(len(a), len(b)) > c.services.config["proto-max-bulk-len"]:
        raise CommandError(errors.LCS_OVER_LIMIT)
    try:
        length, text, ranges = lcs(a, b, walk=idx or not length_only, ranges=idx, minlen=min_len)
    except MemoryError:
        raise CommandError(errors.LCS_NO_MEMORY) from None
    reply = c.reply
    if idx:
        reply.map(2)
        reply.bulk(b"matches")
        reply.array(len(ranges))
        for (a_start, a_end), (b_start, b_end) in ranges:
            reply.array(3 if with_len else 2)
            reply.array(2)
            reply.integer(a_start)
            reply.integer(a_end)
            reply.array(2)
            reply.integer(b_start)
            reply.integer(b_end)
            if with_len:
                reply.integer(a_end - a_start + 1)
        reply.bulk(b"len")
        reply.integer(length)
    elif length_only:
        reply.integer(length)
    else:
        reply.bulk(text)
