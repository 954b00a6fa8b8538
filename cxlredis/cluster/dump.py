"""DUMP/RESTORE payloads in Redis 7.0's serialization: what MIGRATE moves between nodes.

A payload is one RDB object (its type byte, then the value) followed by a 10-byte
footer: the RDB version (2 bytes, little-endian) and the CRC-64/Jones of
everything before the checksum (8 bytes, little-endian).

Strings and hashes are implemented.  Strings are written raw or int-encoded (never
LZF-compressed, which Redis accepts); on load, raw, int-encoded and LZF-compressed
strings are read, the last through the C decompressor in cxlredis._cluster.  Hashes
are written as a listpack (type 16) up to Redis's default listpack limits and as a
plain hash (type 4) above them; both load.
"""
import struct

from .._cluster import crc64, lzf_decompress
from ..errors import CommandError

RDB_VERSION = 10                       # Redis 7.0
FOOTER = struct.Struct("<HQ")          # version, CRC64

TYPE_STRING = 0
TYPE_HASH = 4
TYPE_HASH_LISTPACK = 16

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


def encode_listpack(elements):
    body = b"".join(_listpack_entry(bytes(element)) for element in elements)
    total = 6 + len(body) + 1
    count = len(elements) if len(elements) < 65535 else 65535   # 65535: count them
    return struct.pack("<IH", total, count) + body + b"\xff"


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


def load_payload(payload):
    """RESTORE's reading of a payload: ("string", value) or ("hash", [(field, value), ...]).

    A raw string comes back as a memoryview into payload (no copy of a large value);
    everything else as bytes.  Raises DumpPayloadError with Redis's reply text."""
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
    raise DumpPayloadError(BAD_FORMAT)
