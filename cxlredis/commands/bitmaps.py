"""Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and BITFIELD_RO.

A bitmap is a string; bit 0 is the most significant bit of its first byte, and
past its end a string reads as zeros. Reads go over the entry's view of the
arena, and the counting, finding and combining of bits run in C
(cxlredis._strops), so a multi-MiB value is never copied through Python.
Writes go through the store's setrange and append, which never rewrite bytes a
reply or a reader may hold; BITOP computes its result straight into a reserved
arena block, committed as SET commits a value received into one.

Lookups follow Redis 7.0's: GETBIT, BITCOUNT, BITPOS, BITOP's sources and a
BITFIELD of GETs only read (touch the LRU, count a hit or a miss); SETBIT and a
BITFIELD that writes look up for writing (touch, count nothing). BITCOUNT and
BITPOS look the key up before reading their range, so a missing key answers
even arguments that are not numbers (7.2 changed that; 7.0 is the reference).
"""
from .. import errors
from .._strops import BITOP_AND, BITOP_NOT, BITOP_OR, BITOP_XOR, bitcount, bitop, bitpos
from ..errors import CommandError
from ..notifications import GENERIC, NEW, STRING
from ..slots import SlotArg
from .args import c_word, is_int64, keyword, parse_int
from .strings import find_string, notify_update, set_string

# A write that starts at most this far past the string's end appends (zeros, then its
# bytes): APPEND reserves room to grow into, so a bitmap set bit by bit, upwards, is not
# copied whole at each new byte. Farther writes (and writes inside it) go by SETRANGE.
_APPEND_GAP = 64 * 1024
# BITFIELD's changed bytes closer than this are written as one range (the bytes between
# are copied from the value), since each write of an existing value may copy it whole.
_RUN_GAP = 64 * 1024

_INT64_SPAN = 1 << 64


def _bit_offset(c, arg, bits=0):
    """Redis's getBitOffsetFromArgument: a bit offset in [0, 8 * proto-max-bulk-len). With
    bits (BITFIELD), "#N" is the N-th field of that width, its offset N * bits computed
    as Redis's 64-bit arithmetic does (wrapping around)."""
    raw = bytes(arg)
    positional = bits and raw[:1] == b"#"
    if positional:
        raw = raw[1:]
    if not is_int64(raw):
        raise CommandError(errors.BIT_OFFSET)
    offset = int(raw)
    if positional:
        offset = (offset * bits + (1 << 63)) % _INT64_SPAN - (1 << 63)
    if offset < 0 or (offset >> 3) >= c.services.config["proto-max-bulk-len"]:
        raise CommandError(errors.BIT_OFFSET)
    return offset


def _write(c, key, length, start, data):
    """Store data at byte start of key's string, `length` bytes long now (0: missing, which
    creates it), zero-padding any gap; the TTL stays. Returns the new length."""
    if length and length <= start < length + _APPEND_GAP:
        c.store.append(c.db, key, bytes(start - length) + data)
    else:
        c.store.setrange(c.db, key, start, data)
    return max(length, start + len(data))


def _byte_range(length, start, end, in_bits):
    """BITCOUNT's and BITPOS's start and end (Redis's rules: negative from the end, then
    clamped to the string) as the bits [first, last] they cover, or None if none."""
    total = length * 8 if in_bits else length
    if start < 0:
        start = max(total + start, 0)
    if end < 0:
        end = max(total + end, 0)
    end = min(end, total - 1)
    if start > end:
        return None
    return (start, end) if in_bits else (start * 8, end * 8 + 7)


def _index_unit(arg):
    """BYTE or BIT (True), as Redis's strcasecmp reads them."""
    return keyword(arg, {b"bit": True, b"byte": False})


# --- single bits -----------------------------------------------------------
def cmd_setbit(c, argv):
    offset = _bit_offset(c, argv[2])
    on = parse_int(argv[3], errors.BIT_VALUE)
    if on not in (0, 1):
        raise CommandError(errors.BIT_VALUE)
    key = argv[1]
    entry = find_string(c, key, for_write=True)
    length = entry.value_len if entry is not None else 0
    byte, mask = offset >> 3, 0x80 >> (offset & 7)
    old = entry.view()[byte] if byte < length else 0
    was = 1 if old & mask else 0
    # Redis writes (and reports it) when the bit changes or the string had to grow
    if byte >= length or was != on:
        _write(c, key, length, byte, bytes(((old | mask) if on else (old & ~mask),)))
        notify_update(c, key, b"setbit", entry is None)
    c.reply.integer(was)


def cmd_getbit(c, argv):
    offset = _bit_offset(c, argv[2])
    entry = find_string(c, argv[1])
    byte = offset >> 3
    if entry is None or byte >= entry.value_len:
        c.reply.integer(0)
        return
    c.reply.integer(1 if entry.view()[byte] & (0x80 >> (offset & 7)) else 0)


# --- counting and finding ----------------------------------------------------
def cmd_bitcount(c, argv):
    entry = find_string(c, argv[1])
    if entry is None:
        c.reply.integer(0)
        return
    argc = len(argv)
    length = entry.value_len
    if argc in (4, 5):
        start, end = parse_int(argv[2]), parse_int(argv[3])
        if start < 0 and end < 0 and start > end:   # before the unit is read, as in 7.0
            c.reply.integer(0)
            return
        in_bits = _index_unit(argv[4]) if argc == 5 else False
        bits = _byte_range(length, start, end, in_bits)
    elif argc == 2:
        bits = (0, length * 8 - 1) if length else None
    else:
        raise CommandError(errors.SYNTAX)
    c.reply.integer(bitcount(entry.view(), *bits) if bits else 0)


def cmd_bitpos(c, argv):
    bit = parse_int(argv[2])
    if bit not in (0, 1):
        raise CommandError(errors.BIT_ARGUMENT)
    entry = find_string(c, argv[1])
    if entry is None:
        # a missing key is zeros without end: its first 0 is bit 0, and it has no 1
        c.reply.integer(-1 if bit else 0)
        return
    argc = len(argv)
    length = entry.value_len
    end_given = argc >= 5
    if argc in (4, 5, 6):
        start = parse_int(argv[3])
        in_bits = _index_unit(argv[5]) if argc == 6 else False
        end = parse_int(argv[4]) if end_given else length - 1
        bits = _byte_range(length, start, end, in_bits)
    elif argc == 3:
        bits = (0, length * 8 - 1) if length else None
    else:
        raise CommandError(errors.SYNTAX)
    if bits is None:
        c.reply.integer(-1)
        return
    found = bitpos(entry.view(), bits[0], bits[1], bit)
    if found < 0 and bit == 0 and not end_given:
        # no 0 in the string: without an end, the zeros past it count
        found = bits[1] + 1
    c.reply.integer(found)


# --- BITOP -----------------------------------------------------------------
_BITOPS = {b"and": BITOP_AND, b"or": BITOP_OR, b"xor": BITOP_XOR, b"not": BITOP_NOT}


def cmd_bitop(c, argv):
    op = _BITOPS.get(c_word(argv[1]))
    if op is None:
        raise CommandError(errors.SYNTAX)
    if op == BITOP_NOT and len(argv) != 4:
        raise CommandError(errors.BITOP_NOT_ONE_KEY)
    dest = argv[2]
    # read lookups, in order; WRONGTYPE at the first source that is not a string
    sources = [find_string(c, key) for key in argv[3:]]
    size = max((entry.value_len for entry in sources if entry is not None), default=0)
    if size == 0:
        # every source empty or missing: Redis deletes the destination
        if c.store.delete(c.db, dest):
            c.notify(GENERIC, b"del", dest)
        c.reply.integer(0)
        return
    # reserving the result's block may evict: not the sources, which it reads
    pins = [entry.pin() for entry in sources if entry is not None]
    try:
        result = SlotArg(c.store, c.store.reserve(size, len(dest)), size)
        try:
            bitop(op, [entry.view() if entry is not None else None for entry in sources],
                  result.view())
        except BaseException:
            result.release()
            raise
    finally:
        for arena, off in pins:
            arena.unpin(off)
    set_string(c, dest, result)
    c.reply.integer(size)


# --- BITFIELD and BITFIELD_RO ----------------------------------------------
_GET, _SET, _INCRBY = range(3)
_SUBCOMMANDS = {b"get": (_GET, 2), b"set": (_SET, 3), b"incrby": (_INCRBY, 3)}
_WRAP, _SAT, _FAIL = range(3)
_OVERFLOWS = {b"wrap": _WRAP, b"sat": _SAT, b"fail": _FAIL}


def _bitfield_type(arg):
    """Redis's getBitfieldTypeFromArgument: (signed, bits) of "i1".."i64" or "u1".."u63"
    (the width read as C's string functions read it, up to a NUL)."""
    raw = bytes(arg)
    signed = raw[:1] == b"i"
    if not signed and raw[:1] != b"u":
        raise CommandError(errors.BITFIELD_TYPE)
    digits = raw[1:].partition(b"\0")[0]
    bits = int(digits) if is_int64(digits) else 0
    if not 1 <= bits <= (64 if signed else 63):
        raise CommandError(errors.BITFIELD_TYPE)
    return signed, bits


def _bitfield_ops(c, argv):
    """Every subcommand, parsed before any runs (as Redis does, so an error leaves the
    string untouched): (op, signed, bits, offset, value, overflow) each."""
    ops, overflow, i, argc = [], _WRAP, 2, len(argv)
    while i < argc:
        word, more = c_word(argv[i]), argc - i - 1
        op, needs = _SUBCOMMANDS.get(word, (None, 0))
        if op is None and word == b"overflow" and more >= 1:
            overflow = _OVERFLOWS.get(c_word(argv[i + 1]))
            if overflow is None:
                raise CommandError(errors.BITFIELD_OVERFLOW)
            i += 2
            continue
        if op is None or more < needs:
            raise CommandError(errors.SYNTAX)
        signed, bits = _bitfield_type(argv[i + 1])
        offset = _bit_offset(c, argv[i + 2], bits)
        value = parse_int(argv[i + 3]) if op != _GET else 0
        ops.append((op, signed, bits, offset, value, overflow))
        i += 1 + needs
    return ops


def _fit(value, signed, bits, overflow, is_set):
    """value as a field of that type stores it under the OVERFLOW rule (Redis's
    check*BitfieldOverflow); None if FAIL refuses it. SET of an unsigned field takes
    the value's 64 bits as unsigned, so a negative one is too large."""
    if signed:
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    else:
        low, high = 0, (1 << bits) - 1
        if is_set:
            value %= _INT64_SPAN
    if low <= value <= high:
        return value
    if overflow == _FAIL:
        return None
    if overflow == _SAT:
        return high if value > high else low
    wrapped = value & ((1 << bits) - 1)
    return wrapped - (1 << bits) if wrapped > high else wrapped


class _Fields:
    """A string's bytes as one BITFIELD sees them: the value's (zeros past its end) under
    the bytes its earlier subcommands set."""

    __slots__ = ("view", "length", "changed")

    def __init__(self, entry):
        self.view = entry.view() if entry is not None else None
        self.length = entry.value_len if entry is not None else 0
        self.changed = {}

    def original(self, index):
        return self.view[index] if index < self.length else 0

    def _word(self, first, last):
        word = 0
        for index in range(first, last + 1):
            byte = self.changed.get(index)
            word = word << 8 | (self.original(index) if byte is None else byte)
        return word

    def get(self, offset, bits, signed):
        first, last = offset >> 3, (offset + bits - 1) >> 3
        value = self._word(first, last) >> ((last + 1) * 8 - offset - bits) & ((1 << bits) - 1)
        return value - (1 << bits) if signed and value >> (bits - 1) else value

    def set(self, offset, bits, value):
        first, last = offset >> 3, (offset + bits - 1) >> 3
        shift = (last + 1) * 8 - offset - bits
        mask = ((1 << bits) - 1) << shift
        word = self._word(first, last) & ~mask | (value << shift) & mask
        for index in range(last, first - 1, -1):
            self.changed[index] = word & 0xFF
            word >>= 8

    def runs(self, new_length):
        """The writes that make the string what the subcommands left: [(start, bytes)] of
        the bytes that differ from the value, and its last byte if it grows."""
        indexes = sorted(i for i, byte in self.changed.items() if byte != self.original(i))
        if new_length > self.length and (not indexes or indexes[-1] != new_length - 1):
            indexes.append(new_length - 1)
        runs = []
        for index in indexes:
            if runs and index - runs[-1][1] <= _RUN_GAP:
                runs[-1][1] = index
            else:
                runs.append([index, index])
        # every run read now, before the first write can move the value away
        out = []
        for start, end in runs:
            data = bytearray(self.view[start:min(end + 1, self.length)] if start < self.length else b"")
            data.extend(bytes(end + 1 - start - len(data)))
            for index in range(start, end + 1):
                byte = self.changed.get(index)
                if byte is not None:
                    data[index - start] = byte
            out.append((start, bytes(data)))
        return out


def _bitfield(c, argv, readonly):
    ops = _bitfield_ops(c, argv)
    writes = [op for op in ops if op[0] != _GET]
    key = argv[1]
    if not writes:
        entry = find_string(c, key)
    elif readonly:
        raise CommandError(errors.BITFIELD_RO_GET_ONLY)
    else:
        entry = find_string(c, key, for_write=True)
    fields = _Fields(entry)
    # a write makes the string long enough for the farthest field written, even one
    # that OVERFLOW FAIL then refuses
    new_length = fields.length
    if writes:
        new_length = max(new_length, max((offset + bits - 1) >> 3 for _, _, bits, offset, _, _ in writes) + 1)
    grows = new_length > fields.length
    replies, changes = [], 0
    for op, signed, bits, offset, value, overflow in ops:
        old = fields.get(offset, bits, signed)
        if op == _GET:
            replies.append(old)
            continue
        new = _fit(old + value if op == _INCRBY else value, signed, bits, overflow, op == _SET)
        if new is None:
            replies.append(None)
            continue
        replies.append(new if op == _INCRBY else old)
        fields.set(offset, bits, new)
        if grows or new != old:
            changes += 1
    if writes:
        length = fields.length
        for start, data in fields.runs(new_length):
            length = _write(c, key, length, start, data)
    c.reply.array(len(replies))
    for value in replies:
        if value is None:
            c.reply.null()
        else:
            c.reply.integer(value)
    if writes and entry is None:
        c.notify(NEW, b"new", key)
    if changes:
        c.notify(STRING, b"setbit", key)


def cmd_bitfield(c, argv):
    _bitfield(c, argv, readonly=False)


def cmd_bitfield_ro(c, argv):
    _bitfield(c, argv, readonly=True)
