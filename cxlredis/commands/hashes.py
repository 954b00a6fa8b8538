"""Hash commands (llm-d's KV-block index keeps block → pod maps in hashes).

A hash is one arena entry of type TYPE_HASH whose value is its fields in
insertion order, as Redis keeps a small hash: a little-endian u32 count, then
per field u32 length + field bytes + u32 length + value bytes. A write builds
the new encoding and stores it copy-on-write (TTL kept), so readers and
co-located mappers never see a half-updated hash. Reads that return values
(HGET, HMGET, HGETALL, HVALS) reply with ranges of the entry (`c.reply.entry`),
so a large field value is sent from the arena like a string's.
"""
import random
import struct

from .. import errors
from .._numbers import NotAFloat, incr_by_float
from .._store import TYPE_HASH
from ..errors import CommandError
from ..notifications import GENERIC, HASH, NEW
from .args import INT64_MAX, INT64_MIN, parse_int, upper
from .picks import bulk_size, check_repeated_reply, parse_count
from .scanning import parse_cursor, parse_scan_args

_U32 = struct.Struct("<I")
HASH_NOT_INTEGER = "ERR hash value is not an integer"
HASH_NOT_FLOAT = "ERR hash value is not a float"


def encode(fields):
    parts = [_U32.pack(len(fields))]
    for field, value in fields.items():
        parts += (_U32.pack(len(field)), field, _U32.pack(len(value)), value)
    return b"".join(parts)


def value_ranges(data):
    """field -> (start, stop) of its value within the encoding, in insertion order."""
    view = memoryview(data)
    (count,) = _U32.unpack_from(view, 0)
    pos = 4
    ranges = {}
    for _ in range(count):
        (n,) = _U32.unpack_from(view, pos)
        field = bytes(view[pos + 4:pos + 4 + n])
        pos += 4 + n
        (n,) = _U32.unpack_from(view, pos)
        ranges[field] = (pos + 4, pos + 4 + n)
        pos += 4 + n
    return ranges


def decode(data):
    view = memoryview(data)
    return {field: bytes(view[start:stop]) for field, (start, stop) in value_ranges(view).items()}


def find_hash(c, key, for_write=False):
    """The entry of the hash at key (CallContext.find)."""
    return c.find(key, for_write, TYPE_HASH)


def read_hash(c, key, for_write=False):
    """The hash at key as a dict ({} when missing); WRONGTYPE for another type."""
    entry = find_hash(c, key, for_write)
    return decode(entry.view()) if entry is not None else {}


def read_ranges(c, key):
    """(entry, field -> value range) of the hash at key, for replies straight from it."""
    entry = find_hash(c, key)
    return entry, (value_ranges(entry.view()) if entry is not None else {})


def write_hash(c, key, fields, event, created):
    """Store the new field map (deleting the key when it became empty), keeping its TTL;
    reported as Redis does: new, then the command's event, then del if the last field went."""
    if fields:
        c.store.set(c.db, key, encode(fields), -1, TYPE_HASH, True)
        if created:
            c.notify(NEW, b"new", key)
        c.notify(HASH, event, key)
    else:
        c.store.delete(c.db, key)
        c.notify(HASH, event, key)
        c.notify(GENERIC, b"del", key)


def field_pairs(argv, start, command):
    if (len(argv) - start) % 2 != 0:
        raise CommandError(errors.wrong_arity(command))
    return [(bytes(argv[i]), bytes(argv[i + 1])) for i in range(start, len(argv), 2)]


def cmd_hset(c, argv):
    pairs = field_pairs(argv, 2, "hset")
    fields = read_hash(c, argv[1], for_write=True)
    added = len({f for f, _ in pairs} - fields.keys())   # a field repeated in argv is added once
    created = not fields
    fields.update(pairs)
    write_hash(c, argv[1], fields, b"hset", created)
    c.reply.integer(added)


def cmd_hmset(c, argv):
    pairs = field_pairs(argv, 2, "hmset")
    fields = read_hash(c, argv[1], for_write=True)
    created = not fields
    fields.update(pairs)
    write_hash(c, argv[1], fields, b"hset", created)
    c.reply.ok()


def cmd_hsetnx(c, argv):
    fields = read_hash(c, argv[1], for_write=True)
    field = bytes(argv[2])
    if field in fields:
        c.reply.integer(0)
        return
    created = not fields
    fields[field] = bytes(argv[3])
    write_hash(c, argv[1], fields, b"hset", created)
    c.reply.integer(1)


def cmd_hget(c, argv):
    entry, ranges = read_ranges(c, argv[1])
    span = ranges.get(bytes(argv[2]))
    if span is None:
        c.reply.null()
    else:
        c.reply.entry(entry, *span)


def cmd_hmget(c, argv):
    entry, ranges = read_ranges(c, argv[1])
    c.reply.array(len(argv) - 2)
    for field in argv[2:]:
        span = ranges.get(bytes(field))
        if span is None:
            c.reply.null()
        else:
            c.reply.entry(entry, *span)


def cmd_hgetall(c, argv):
    entry, ranges = read_ranges(c, argv[1])
    c.reply.map(len(ranges))
    for field, span in ranges.items():
        c.reply.bulk(field)
        c.reply.entry(entry, *span)


def cmd_hkeys(c, argv):
    c.reply.bulk_array(list(read_hash(c, argv[1])))


def cmd_hvals(c, argv):
    entry, ranges = read_ranges(c, argv[1])
    c.reply.array(len(ranges))
    for span in ranges.values():
        c.reply.entry(entry, *span)


def cmd_hdel(c, argv):
    fields = read_hash(c, argv[1], for_write=True)
    removed = 0
    for field in argv[2:]:
        if fields.pop(bytes(field), None) is not None:
            removed += 1
    if removed:
        write_hash(c, argv[1], fields, b"hdel", False)
    c.reply.integer(removed)


def cmd_hexists(c, argv):
    c.reply.integer(1 if bytes(argv[2]) in read_hash(c, argv[1]) else 0)


def cmd_hlen(c, argv):
    c.reply.integer(len(read_hash(c, argv[1])))


def cmd_hstrlen(c, argv):
    c.reply.integer(len(read_hash(c, argv[1]).get(bytes(argv[2]), b"")))


def cmd_hincrby(c, argv):
    increment = parse_int(argv[3])
    fields = read_hash(c, argv[1], for_write=True)
    field = bytes(argv[2])
    current = parse_int(fields[field], HASH_NOT_INTEGER) if field in fields else 0
    result = current + increment
    if result < INT64_MIN or result > INT64_MAX:
        raise CommandError(errors.OVERFLOW)
    created = not fields
    fields[field] = b"%d" % result
    write_hash(c, argv[1], fields, b"hincrby", created)
    c.reply.integer(result)


def cmd_hincrbyfloat(c, argv):
    increment = bytes(argv[3])
    try:  # Redis vets the increment alone before it looks at the hash
        incr_by_float(None, increment)
    except NotAFloat:
        raise CommandError(errors.NOT_FLOAT) from None
    except OverflowError:
        raise CommandError("ERR value is NaN or Infinity") from None
    fields = read_hash(c, argv[1], for_write=True)
    field = bytes(argv[2])
    try:
        result = incr_by_float(fields.get(field), increment)
    except NotAFloat:
        raise CommandError(HASH_NOT_FLOAT) from None
    except OverflowError:
        raise CommandError(errors.INCRFLOAT_NAN_INF) from None
    created = not fields
    fields[field] = result
    write_hash(c, argv[1], fields, b"hincrbyfloat", created)
    c.reply.bulk(result)


def cmd_hscan(c, argv):
    # Redis's order: the cursor, then the key (a missing one is an empty scan whatever the
    # options say), then the options.
    parse_cursor(argv[2])
    fields = read_hash(c, argv[1])
    match = parse_scan_args(argv, 2, allow_type=False)[2] if fields else None
    # A small hash is returned whole in one call, cursor 0, as Redis does for listpacks.
    items = [(f, v) for f, v in fields.items() if match is None or match(f)]
    c.reply.array(2)
    c.reply.bulk(b"0")
    c.reply.array(2 * len(items))
    for field, value in items:
        c.reply.bulk(field)
        c.reply.bulk(value)


# With WITHVALUES Redis takes a count whose count*2 cannot overflow either.
HRANDFIELD_WITHVALUES_RANGE = "ERR value is out of range"


def _check_repeated_reply(c, fields, repeats, with_values):
    """Refuse a reply of repeated fields (and values) too big to be sent (picks.py)."""
    def smallest():
        if not with_values:
            return min(bulk_size(f) for f in fields)
        return min(bulk_size(f) + bulk_size(v) + (4 if c.protocol == 3 else 0) for f, v in fields.items())
    check_repeated_reply(c, "HRANDFIELD", repeats, smallest)


def cmd_hrandfield(c, argv):
    count = None
    if len(argv) >= 3:
        count = parse_count(argv[2])
    if len(argv) > 4 or (len(argv) == 4 and upper(argv[3]) != "WITHVALUES"):
        raise CommandError(errors.SYNTAX)
    with_values = len(argv) == 4
    if with_values and abs(count) > INT64_MAX // 2:
        raise CommandError(HRANDFIELD_WITHVALUES_RANGE)
    fields = read_hash(c, argv[1])
    if count is None:
        if not fields:
            c.reply.null()
        else:
            c.reply.bulk(random.choice(list(fields)))
        return
    names = list(fields)
    if count >= len(names):
        chosen = names                  # the whole hash, in its order, as Redis replies
    elif count >= 0:
        chosen = random.sample(names, count)
    elif names:
        _check_repeated_reply(c, fields, -count, with_values)
        chosen = random.choices(names, k=-count)
    else:
        chosen = []
    if with_values:
        if c.protocol == 3:
            c.reply.array(len(chosen))
            for field in chosen:
                c.reply.array(2)
                c.reply.bulk(field)
                c.reply.bulk(fields[field])
        else:
            c.reply.array(2 * len(chosen))
            for field in chosen:
                c.reply.bulk(field)
                c.reply.bulk(fields[field])
    else:
        c.reply.bulk_array(chosen)
