"""DUMP/RESTORE payloads in Redis 7.0's serialization: what MIGRATE moves between nodes.

A payload is one RDB object (its type byte, then the value) followed by a 10-byte
footer: the RDB version (2 bytes, little-endian) and the CRC-64/Jones of
everything before the checksum (8 bytes, little-endian).

Strings are written raw or int-encoded (never LZF-compressed, which Redis accepts); on
load, raw, int-encoded and LZF-compressed strings are read, the last through the C
decompressor in cxlredis._cluster.  Hashes are written as a listpack (type 16) up to
Redis's default listpack limits and as a plain hash (type 4) above them; both load.

Lists, sets and sorted sets are written as Redis 7.0 writes the encoding they have: a
list as a quicklist of listpacks (type 18), its nodes cut where quicklistPushTail would
cut them under list-max-listpack-size; a set as an intset (type 11) or a plain set (2);
a sorted set as a listpack (17) or a skiplist with binary scores (5).  Every encoding
Redis 7.0 loads for them loads (the older lists, ziplists and quicklists of ziplists,
text scores), checked as Redis checks a payload with sanitize-dump-payload on (every
entry, count, back length, duplicate and order), and the encoding chosen as its
rdbLoadObject chooses it under the configured limits (`Limits`).
"""
import math
import re
import struct
from functools import partial
from typing import NamedTuple

from .._cluster import crc64, lzf_decompress
from ..errors import CommandError

RDB_VERSION = 10                       # Redis 7.0
FOOTER = struct.Struct("<HQ")          # version, CRC64
_BINARY_DOUBLE = struct.Struct("<d")   # a score of RDB_TYPE_ZSET_2

TYPE_STRING = 0
TYPE_LIST = 1
TYPE_SET = 2
TYPE_ZSET = 3
TYPE_HASH = 4
TYPE_ZSET_2 = 5
TYPE_LIST_ZIPLIST = 10
TYPE_SET_INTSET = 11
TYPE_ZSET_ZIPLIST = 12
TYPE_LIST_QUICKLIST = 14
TYPE_HASH_LISTPACK = 16
TYPE_ZSET_LISTPACK = 17
TYPE_LIST_QUICKLIST_2 = 18

# A quicklist node's container: one element as it is, or a listpack of them.
CONTAINER_PLAIN, CONTAINER_PACKED = 1, 2

# Redis 7.0's hash-max-listpack-entries / -value defaults: above them a hash is a dict.
LISTPACK_MAX_ENTRIES = 512
LISTPACK_MAX_VALUE = 64

# The two top bits of a length's first byte; 3 marks a special string encoding.
_LEN_6BIT, _LEN_14BIT, _LEN_ENCVAL = 0, 1, 3
_LEN_32BIT, _LEN_64BIT = 0x80, 0x81
_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3

BAD_PAYLOAD = "ERR DUMP payload version or checksum are wrong"
BAD_FORMAT = "ERR Bad data format"

LZF_MAX_EXPANSION = 88

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

# quicklist.c: an element this long gets a PLAIN node of its own; a listpack node grows
# while its estimated size stays within the level -fill picks (fill -1 .. -5), or, for a
# positive fill, while it holds fewer elements than fill and stays within 8 KiB.
PACKED_THRESHOLD = 1 << 30
FILL_LEVELS = (4096, 8192, 16384, 32768, 65536)
SIZE_SAFETY_LIMIT = 8192
SIZE_ESTIMATE_OVERHEAD = 8
FILL_MIN, FILL_MAX = -5, (1 << 15) - 1
EMPTY_LISTPACK_BYTES = 7            # its header (total bytes, count) and end byte
# listpack.c: nothing bigger is built (lpSafeToAdd), so a sorted set whose members add
# up to more loads as a skiplist
LISTPACK_MAX_SAFETY_SIZE = 1 << 30


class Limits(NamedTuple):
    """The configuration Redis 7.0 reads when it serializes a list (its nodes' fill) and
    when it loads a set or a sorted set (which encoding it gets); Redis's defaults."""
    list_max_listpack_size: int = -2
    set_max_intset_entries: int = 512
    zset_max_listpack_entries: int = 128
    zset_max_listpack_value: int = 64


class DumpPayloadError(CommandError):
    """RESTORE refuses a payload; str(self) is Redis's reply text."""


# ------------------------------------------------------------------ encoding

def encode_length(n):
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes(((n >> 8) | 0x40, n & 0xFF))
    if n < 1 << 32:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def canonical_int(value):
    """The int value spells in its one canonical decimal form (no sign on 0, no leading
    zeros, no spaces), within int64; None otherwise. Redis's string2ll round trip."""
    if not 0 < len(value) <= 20:
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    if str(number).encode() != value or not INT64_MIN <= number <= INT64_MAX:
        return None
    return number


def encode_string_header(value):
    """The bytes that precede value in its RDB string form, or, when the value is stored as
    an integer, the whole encoding (then the value itself is not written)."""
    if len(value) <= 11:
        number = canonical_int(bytes(value))
        if number is not None:
            if -(1 << 7) <= number < 1 << 7:
                return True, struct.pack("<Bb", 0xC0 | _ENC_INT8, number)
            if -(1 << 15) <= number < 1 << 15:
                return True, struct.pack("<Bh", 0xC0 | _ENC_INT16, number)
            if -(1 << 31) <= number < 1 << 31:
                return True, struct.pack("<Bi", 0xC0 | _ENC_INT32, number)
    return False, encode_length(len(value))


def encode_string(value):
    is_int, header = encode_string_header(value)
    return header if is_int else header + bytes(value)


def footer_for(*parts):
    """The version and checksum closing a payload made of parts (no copy of the parts)."""
    crc = 0
    for part in parts:
        crc = crc64(part, crc)
    version = RDB_VERSION.to_bytes(2, "little")
    crc = crc64(version, crc)
    return version + crc.to_bytes(8, "little")


def dump_string_parts(value):
    """The payload of a string as (head, body, footer), so a large value goes to a socket
    without being joined into a copy; body is value itself, or b"" when int-encoded."""
    is_int, header = encode_string_header(value)
    head = bytes((TYPE_STRING,)) + header
    body = b"" if is_int else value
    return head, body, footer_for(head, body)


def dump_string(value):
    return b"".join(dump_string_parts(value))


def _listpack_entry(element):
    """One listpack entry, as Redis's lpAppend writes it: integers in the shortest
    integer encoding, other strings by length, then the backward length."""
    number = canonical_int(element)
    if number is None:
        size = len(element)
        if size < 64:
            encoded = bytes((0x80 | size,)) + element
        elif size < 4096:
            encoded = bytes((0xE0 | (size >> 8), size & 0xFF)) + element
        else:
            encoded = b"\xf0" + size.to_bytes(4, "little") + element
    elif 0 <= number <= 127:
        encoded = bytes((number,))
    elif -4096 <= number <= 4095:
        number &= 0x1FFF
        encoded = bytes((0xC0 | (number >> 8), number & 0xFF))
    elif -(1 << 15) <= number < 1 << 15:
        encoded = b"\xf1" + number.to_bytes(2, "little", signed=True)
    elif -(1 << 23) <= number < 1 << 23:
        encoded = b"\xf2" + number.to_bytes(3, "little", signed=True)
    elif -(1 << 31) <= number < 1 << 31:
        encoded = b"\xf3" + number.to_bytes(4, "little", signed=True)
    else:
        encoded = b"\xf4" + number.to_bytes(8, "little", signed=True)
    return encoded + _encode_backlen(len(encoded))


def _encode_backlen(size):
    """The entry's size, 7 bits a byte, most significant first; every byte but the first
    has its top bit set, so a reader walking backwards knows where the size ends."""
    groups = [size & 127]
    size >>= 7
    while size:
        groups.append(size & 127)
        size >>= 7
    first = groups.pop()
    return bytes([first] + [group | 128 for group in reversed(groups)])


def _listpack(entries):
    """A listpack of entries already encoded (_listpack_entry)."""
    body = b"".join(entries)
    total = 6 + len(body) + 1
    count = len(entries) if len(entries) < 65535 else 65535     # 65535: count them
    return struct.pack("<IH", total, count) + body + b"\xff"


def encode_listpack(elements):
    return _listpack([_listpack_entry(bytes(element)) for element in elements])


def dump_hash(pairs):
    """The payload of a hash given as (field, value) pairs, in the encoding Redis 7.0 would
    hold it in with its default limits."""
    pairs = [(bytes(field), bytes(value)) for field, value in pairs]
    if not pairs:
        raise ValueError("an empty hash has no payload")
    small = len(pairs) <= LISTPACK_MAX_ENTRIES and all(
        len(f) <= LISTPACK_MAX_VALUE and len(v) <= LISTPACK_MAX_VALUE for f, v in pairs)
    if small:
        head = bytes((TYPE_HASH_LISTPACK,))
        body = encode_string(encode_listpack([e for pair in pairs for e in pair]))
    else:
        head = bytes((TYPE_HASH,)) + encode_length(len(pairs))
        body = b"".join(encode_string(f) + encode_string(v) for f, v in pairs)
    return head + body + footer_for(head, body)


def quicklist_fill(fill):
    """list-max-listpack-size as quicklistSetFill keeps it."""
    return min(max(fill, FILL_MIN), FILL_MAX)


def _node_takes(node_bytes, node_count, fill, size):
    """_quicklistNodeAllowInsert: whether a listpack node of node_bytes holding node_count
    elements takes one more of size bytes (its entry estimated at most 8 bytes more)."""
    estimate = node_bytes + size + SIZE_ESTIMATE_OVERHEAD
    if fill < 0:
        return estimate <= FILL_LEVELS[-fill - 1]
    return estimate <= SIZE_SAFETY_LIMIT and node_count < fill


def quicklist_nodes(elements, fill):
    """The nodes quicklistPushTail makes of elements pushed in order, as (container,
    blob): a listpack, or an element long enough for a PLAIN node. fill: quicklist_fill's."""
    nodes = []
    entries = None                      # those of the last node, while it is a listpack
    node_bytes = 0
    for element in elements:
        element = bytes(element)
        if len(element) >= PACKED_THRESHOLD:
            nodes.append((CONTAINER_PLAIN, element))
            entries = None
            continue
        if entries is None or not _node_takes(node_bytes, len(entries), fill, len(element)):
            entries, node_bytes = [], EMPTY_LISTPACK_BYTES
            nodes.append((CONTAINER_PACKED, entries))
        entry = _listpack_entry(element)
        entries.append(entry)
        node_bytes += len(entry)
    return [(container, _listpack(node) if container == CONTAINER_PACKED else node)
            for container, node in nodes]


def dump_list(elements, fill):
    """The payload of a list: a quicklist of the nodes Redis would hold it in."""
    nodes = quicklist_nodes(elements, fill)
    if not nodes:
        raise ValueError("an empty list has no payload")
    head = bytes((TYPE_LIST_QUICKLIST_2,)) + encode_length(len(nodes))
    body = b"".join(encode_length(container) + encode_string(blob) for container, blob in nodes)
    return head + body + footer_for(head, body)


def encode_intset(numbers):
    """An intset: the narrowest width (2, 4 or 8 bytes) that holds every member, the count,
    then the members in ascending order, little-endian."""
    numbers = sorted(numbers)
    width = next(width for width in (2, 4, 8)
                 if -(1 << (8 * width - 1)) <= numbers[0] and numbers[-1] < 1 << (8 * width - 1))
    return (struct.pack("<II", width, len(numbers))
            + b"".join(number.to_bytes(width, "little", signed=True) for number in numbers))


def dump_set(members, intset):
    """The payload of a set: an intset (every member an integer), else a plain set."""
    if not members:
        raise ValueError("an empty set has no payload")
    if intset:
        head = bytes((TYPE_SET_INTSET,))
        body = encode_string(encode_intset([int(member) for member in members]))
    else:
        head = bytes((TYPE_SET,)) + encode_length(len(members))
        body = b"".join(encode_string(member) for member in members)
    return head + body + footer_for(head, body)


def score_text(score):
    """A score as Redis 7.0's d2string writes it into a listpack: an integral one below
    2^52 as its digits, else %.17g; inf, -inf and -0 by name."""
    if math.isinf(score):
        return b"inf" if score > 0 else b"-inf"
    if score == 0:
        return b"-0" if math.copysign(1, score) < 0 else b"0"
    if 1 - (1 << 52) < score < 1 << 52 and score == int(score):
        return b"%d" % int(score)
    return b"%.17g" % score


def dump_zset(pairs, listpack):
    """The payload of a sorted set given as (member, score) pairs in score order: a
    listpack of member, score, ...; else a skiplist's members and binary scores, from the
    highest score down (as Redis writes them, so that loading adds each at the head)."""
    if not pairs:
        raise ValueError("an empty sorted set has no payload")
    if listpack:
        head = bytes((TYPE_ZSET_LISTPACK,))
        body = encode_string(encode_listpack(
            [part for member, score in pairs for part in (member, score_text(score))]))
    else:
        head = bytes((TYPE_ZSET_2,)) + encode_length(len(pairs))
        body = b"".join(encode_string(member) + _BINARY_DOUBLE.pack(score)
                        for member, score in reversed(pairs))
    return head + body + footer_for(head, body)


# ------------------------------------------------------------------ decoding

def verify_payload(payload):
    """Redis's verifyDumpPayload: a known RDB version and a matching checksum."""
    if len(payload) < 10:
        raise DumpPayloadError(BAD_PAYLOAD)
    version, crc = FOOTER.unpack_from(payload, len(payload) - 10)
    if version > RDB_VERSION or crc64(memoryview(payload)[:-8]) != crc:
        raise DumpPayloadError(BAD_PAYLOAD)


class Reader:
    """Reads RDB encodings from a payload without copying it; any overrun is BAD_FORMAT."""

    def __init__(self, data):
        self.data = memoryview(data).cast("B")
        self.pos = 0

    def take(self, n):
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise DumpPayloadError(BAD_FORMAT)
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def byte(self):
        return self.take(1)[0]

    def length(self):
        """(length, is_encoded): with is_encoded, length is a special string encoding."""
        first = self.byte()
        kind = first >> 6
        if kind == _LEN_6BIT:
            return first & 0x3F, False
        if kind == _LEN_14BIT:
            return ((first & 0x3F) << 8) | self.byte(), False
        if kind == _LEN_ENCVAL:
            return first & 0x3F, True
        if first == _LEN_32BIT:
            return int.from_bytes(self.take(4), "big"), False
        if first == _LEN_64BIT:
            return int.from_bytes(self.take(8), "big"), False
        raise DumpPayloadError(BAD_FORMAT)

    def plain_length(self):
        n, encoded = self.length()
        if encoded:
            raise DumpPayloadError(BAD_FORMAT)
        return n

    def string(self):
        """A string: a view into the payload when stored raw, bytes otherwise."""
        n, encoded = self.length()
        if not encoded:
            return self.take(n)
        if n == _ENC_INT8:
            return b"%d" % int.from_bytes(self.take(1), "little", signed=True)
        if n == _ENC_INT16:
            return b"%d" % int.from_bytes(self.take(2), "little", signed=True)
        if n == _ENC_INT32:
            return b"%d" % int.from_bytes(self.take(4), "little", signed=True)
        if n == _ENC_LZF:
            compressed_len = self.plain_length()
            length = self.plain_length()
            compressed = self.take(compressed_len)
            # A 3-byte back reference expands to at most 264 bytes (88 a byte): a larger length
            # is a lie, refused before it is allocated.
            if length > compressed_len * LZF_MAX_EXPANSION:
                raise DumpPayloadError(BAD_FORMAT)
            try:
                return lzf_decompress(compressed, length)
            except ValueError:
                raise DumpPayloadError(BAD_FORMAT) from None
        raise DumpPayloadError(BAD_FORMAT)


def _decode_listpack(blob):
    """The elements of a listpack, every size, count and backward length checked."""
    data = memoryview(blob).cast("B")
    if len(data) < 7:
        raise DumpPayloadError(BAD_FORMAT)
    total, count = struct.unpack_from("<IH", data)
    if total != len(data) or data[-1] != 0xFF:
        raise DumpPayloadError(BAD_FORMAT)
    elements = []
    pos, end = 6, total - 1
    while pos < end:
        element, size = _listpack_element(data, pos, end)
        backlen = _encode_backlen(size)
        if data[pos + size:pos + size + len(backlen)] != backlen:
            raise DumpPayloadError(BAD_FORMAT)
        elements.append(element)
        pos += size + len(backlen)
    if pos != end or (count != 65535 and count != len(elements)):
        raise DumpPayloadError(BAD_FORMAT)
    return elements


# The integer encodings after a 0xF1..0xF4 byte: their widths in bytes.
_LP_INT_WIDTH = {0xF1: 2, 0xF2: 3, 0xF3: 4, 0xF4: 8}


def _listpack_element(data, pos, end):
    """The element at pos (as bytes) and the size of its encoding, backlen excluded."""
    first = data[pos]
    if first < 0x80:
        return b"%d" % first, 1
    if first < 0xC0:
        header, size = 1, first & 0x3F
    elif first < 0xE0:
        if pos + 2 > end:
            raise DumpPayloadError(BAD_FORMAT)
        number = ((first & 0x1F) << 8) | data[pos + 1]
        return b"%d" % (number - (1 << 13) if number >= 1 << 12 else number), 2
    elif first < 0xF0:
        if pos + 2 > end:
            raise DumpPayloadError(BAD_FORMAT)
        header, size = 2, ((first & 0x0F) << 8) | data[pos + 1]
    elif first == 0xF0:
        if pos + 5 > end:
            raise DumpPayloadError(BAD_FORMAT)
        header, size = 5, int.from_bytes(data[pos + 1:pos + 5], "little")
    elif first in _LP_INT_WIDTH:
        width = _LP_INT_WIDTH[first]
        if pos + 1 + width > end:
            raise DumpPayloadError(BAD_FORMAT)
        return b"%d" % int.from_bytes(data[pos + 1:pos + 1 + width], "little", signed=True), 1 + width
    else:
        raise DumpPayloadError(BAD_FORMAT)
    if pos + header + size > end:
        raise DumpPayloadError(BAD_FORMAT)
    return bytes(data[pos + header:pos + header + size]), header + size


def _pairs(elements):
    if not elements or len(elements) % 2:
        raise DumpPayloadError(BAD_FORMAT)
    pairs = [(bytes(elements[i]), bytes(elements[i + 1])) for i in range(0, len(elements), 2)]
    if len({field for field, _ in pairs}) != len(pairs):
        raise DumpPayloadError(BAD_FORMAT)   # duplicate fields: Redis refuses them too
    return pairs


# The integer encodings of a ziplist entry after its previous-entry length: their widths
# in bytes (0xF1..0xFD hold the value itself, 0 to 12).
_ZL_INT_WIDTH = {0xC0: 2, 0xD0: 4, 0xE0: 8, 0xF0: 3, 0xFE: 1}
_ZIPLIST_HEADER = struct.Struct("<IIH")     # total bytes, offset of the last entry, count
_ZL_BIG_PREVLEN = 0xFE                     # the previous entry's length follows, in 4 bytes
_ZL_END = 0xFF


def _decode_ziplist(blob):
    """The elements of a ziplist (the listpack's predecessor, in payloads of Redis < 7),
    checked as ziplistValidateIntegrity checks one: its sizes, each entry's record of the
    previous entry's size, the offset of the last entry and the count."""
    data = memoryview(blob).cast("B")
    end = len(data) - 1
    if end < _ZIPLIST_HEADER.size:
        raise DumpPayloadError(BAD_FORMAT)
    total, tail, count = _ZIPLIST_HEADER.unpack_from(data)
    if total != len(data) or data[end] != _ZL_END or tail > end:
        raise DumpPayloadError(BAD_FORMAT)
    elements = []
    pos, last, last_size = _ZIPLIST_HEADER.size, None, 0
    while data[pos] != _ZL_END:
        element, size = _ziplist_entry(data, pos, end, last_size)
        elements.append(element)
        last, last_size = pos, size
        pos += size
    if pos != end or (last is not None and last != tail) or count not in (len(elements), 65535):
        raise DumpPayloadError(BAD_FORMAT)
    return elements


def _ziplist_entry(data, pos, end, previous_size):
    """The element at pos (as bytes) and its entry's size, which must end by end."""
    at = pos + 1
    previous = data[pos]
    if previous == _ZL_BIG_PREVLEN:
        at = pos + 5
        previous = int.from_bytes(data[pos + 1:at], "little") if at <= end else -1
    if previous != previous_size or at >= end:
        raise DumpPayloadError(BAD_FORMAT)
    encoding = data[at]
    if 0xF1 <= encoding <= 0xFD:
        return b"%d" % ((encoding & 0x0F) - 1), at + 1 - pos
    if encoding >= 0xC0:
        width = _ZL_INT_WIDTH.get(encoding)
        if width is None or at + 1 + width > end:
            raise DumpPayloadError(BAD_FORMAT)
        return b"%d" % int.from_bytes(data[at + 1:at + 1 + width], "little", signed=True), at + 1 + width - pos
    length_size = (1, 2, 5)[encoding >> 6]
    if at + length_size > end:
        raise DumpPayloadError(BAD_FORMAT)
    if length_size == 1:
        length = encoding & 0x3F
    elif length_size == 2:
        length = ((encoding & 0x3F) << 8) | data[at + 1]
    else:
        length = int.from_bytes(data[at + 1:at + 5], "big")
    start = at + length_size
    if start + length > end:
        raise DumpPayloadError(BAD_FORMAT)
    return bytes(data[start:start + length]), start + length - pos


# What C's strtod (and sscanf's %lg) reads at the start of a text: a score written as text.
_C_DOUBLE = re.compile(rb"[ \t\n\v\f\r]*([+-]?(?:inf(?:inity)?|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)"
                       rb"(?:[eE][+-]?[0-9]+)?))", re.IGNORECASE)


def _c_double(text):
    match = _C_DOUBLE.match(text)
    return float(match.group(1)) if match else None


def _nonempty(items):
    """items, unless there are none: Redis refuses an empty collection (rdbLoadObject's
    empty key)."""
    if not items:
        raise DumpPayloadError(BAD_FORMAT)
    return items


def _distinct(items, members):
    """items (some), unless a member (members: the items') comes twice: Redis refuses that."""
    if len(set(members)) != len(_nonempty(items)):
        raise DumpPayloadError(BAD_FORMAT)
    return items


def _scored(pairs):
    """pairs, checked as a sorted set's: Redis refuses a NaN score (the arena could not
    order one either)."""
    if any(math.isnan(score) for _, score in pairs):
        raise DumpPayloadError(BAD_FORMAT)
    return _distinct(pairs, [member for member, _ in pairs])


def _load_list(reader, limits):
    """RDB_TYPE_LIST: a count, then the elements."""
    elements = [bytes(reader.string()) for _ in range(reader.plain_length())]
    return "list", _nonempty(elements)


def _load_list_ziplist(reader, limits):
    return "list", _nonempty(_decode_ziplist(reader.string()))


def _load_quicklist(reader, limits, version):
    """RDB_TYPE_LIST_QUICKLIST (version 1: ziplist nodes) or _2 (a container per node, a
    listpack or one element); an empty node is skipped, as Redis skips one."""
    elements = []
    for _ in range(reader.plain_length()):
        container = reader.plain_length() if version == 2 else CONTAINER_PACKED
        if container not in (CONTAINER_PLAIN, CONTAINER_PACKED):
            raise DumpPayloadError(BAD_FORMAT)
        blob = reader.string()
        if not len(blob):
            raise DumpPayloadError(BAD_FORMAT)
        if container == CONTAINER_PLAIN:
            elements.append(bytes(blob))
        else:
            elements += _decode_listpack(blob) if version == 2 else _decode_ziplist(blob)
    return "list", _nonempty(elements)


def _load_set(reader, limits):
    """RDB_TYPE_SET: a count, then the members. An intset unless there are more than
    set-max-intset-entries (1 << 30 at most) or one is no integer."""
    members = [bytes(reader.string()) for _ in range(reader.plain_length())]
    _distinct(members, members)
    hashtable = (len(members) > min(limits.set_max_intset_entries, 1 << 30)
                 or any(canonical_int(member) is None for member in members))
    return "set", (members, hashtable)


_INTSET_HEADER = struct.Struct("<II")       # the width of its integers, their count
_INTSET_FORMATS = {2: "h", 4: "i", 8: "q"}


def _load_intset(reader, limits):
    """RDB_TYPE_SET_INTSET: an intset blob (its integers ascending, none twice), a
    hashtable past set-max-intset-entries."""
    blob = memoryview(reader.string()).cast("B")
    if len(blob) < _INTSET_HEADER.size:
        raise DumpPayloadError(BAD_FORMAT)
    width, count = _INTSET_HEADER.unpack_from(blob)
    if width not in _INTSET_FORMATS or _INTSET_HEADER.size + count * width != len(blob) or not count:
        raise DumpPayloadError(BAD_FORMAT)
    numbers = struct.unpack_from(f"<{count}{_INTSET_FORMATS[width]}", blob, _INTSET_HEADER.size)
    if any(low >= high for low, high in zip(numbers, numbers[1:])):
        raise DumpPayloadError(BAD_FORMAT)
    return "set", ([b"%d" % number for number in numbers], count > limits.set_max_intset_entries)


def _text_score(reader):
    """rdbLoadDoubleValue: a length byte (253 NaN, 254 inf, 255 -inf), then text."""
    length = reader.byte()
    if length >= 253:
        return (math.nan, math.inf, -math.inf)[length - 253]
    score = _c_double(bytes(reader.take(length)))
    if score is None:
        raise DumpPayloadError(BAD_FORMAT)
    return score


def _load_zset(reader, limits, binary):
    """RDB_TYPE_ZSET (scores as text) or _ZSET_2 (binary): a count, then member and score
    each. A listpack within zset-max-listpack-entries and -value (and what a listpack
    can hold), a skiplist otherwise."""
    pairs = []
    for _ in range(reader.plain_length()):
        member = bytes(reader.string())
        pairs.append((member, _BINARY_DOUBLE.unpack(reader.take(8))[0] if binary else _text_score(reader)))
    _scored(pairs)
    sizes = [len(member) for member, _ in pairs]
    listpack = (len(pairs) <= limits.zset_max_listpack_entries
                and max(sizes) <= limits.zset_max_listpack_value
                and sum(sizes) <= LISTPACK_MAX_SAFETY_SIZE)
    return "zset", (pairs, not listpack)


def _packed_score(text):
    score = _c_double(text[:127])
    return 0.0 if score is None else score


def _packed_zset(elements, limits):
    """A listpack's or ziplist's member, score, ... as a sorted set (a score read as
    zzlStrtod reads one: what strtod makes of its first 127 bytes, 0 when nothing); a
    skiplist past zset-max-listpack-entries."""
    if len(elements) % 2:
        raise DumpPayloadError(BAD_FORMAT)
    pairs = [(elements[i], _packed_score(elements[i + 1])) for i in range(0, len(elements), 2)]
    return "zset", (_scored(pairs), len(pairs) > limits.zset_max_listpack_entries)


_COLLECTION_LOADERS = {
    TYPE_LIST: _load_list,
    TYPE_LIST_ZIPLIST: _load_list_ziplist,
    TYPE_LIST_QUICKLIST: partial(_load_quicklist, version=1),
    TYPE_LIST_QUICKLIST_2: partial(_load_quicklist, version=2),
    TYPE_SET: _load_set,
    TYPE_SET_INTSET: _load_intset,
    TYPE_ZSET: partial(_load_zset, binary=False),
    TYPE_ZSET_2: partial(_load_zset, binary=True),
    TYPE_ZSET_ZIPLIST: lambda reader, limits: _packed_zset(_decode_ziplist(reader.string()), limits),
    TYPE_ZSET_LISTPACK: lambda reader, limits: _packed_zset(_decode_listpack(reader.string()), limits),
}


def load_payload(payload, limits=Limits()):
    """RESTORE's reading of a payload: (kind, value), where kind and value are
        "string"  the value: a memoryview into payload when stored raw, else bytes
        "hash"    [(field, value), ...]
        "list"    [element, ...]
        "set"     ([member, ...], hashtable)
        "zset"    ([(member, score), ...], skiplist)
    hashtable and skiplist: the encoding Redis 7.0's rdbLoadObject gives the collection
    under limits. Raises DumpPayloadError with Redis's reply text."""
    verify_payload(payload)
    # Redis's RESTORE reads the object from the whole payload, so does this reader: an
    # object may run into the footer's bytes (which the checksum covers).
    reader = Reader(payload)
    kind = reader.byte()
    if kind == TYPE_STRING:
        return "string", reader.string()
    if kind == TYPE_HASH_LISTPACK:
        return "hash", _pairs(_decode_listpack(reader.string()))
    if kind == TYPE_HASH:
        count = reader.plain_length()
        return "hash", _pairs([reader.string() for _ in range(2 * count)])
    load = _COLLECTION_LOADERS.get(kind)
    if load is None:
        raise DumpPayloadError(BAD_FORMAT)
    return load(reader, limits)
