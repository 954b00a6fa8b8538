"""lua-cmsgpack 0.4.0 (the cmsgpack library of Redis 7.0's Lua): MessagePack to and from
Lua values, with the encodings, limits and error messages of Redis's C version.

Packing: a number that is a whole 64-bit integer becomes the smallest integer form,
any other number a float 32 when that loses nothing, else a float 64; strings are
fixstr/str8/str16/str32; a table whose keys are exactly 1..n (each a 32-bit integer) is
an array, any other table a map; a table 16 levels down, and any value that is no
string, number, boolean or table, is nil.  Unpacking knows no bin or ext types.

The C library runs on the Lua stack, whose C frames hold at most LUAI_MAXCSTACK (8000)
slots: a value being packed or unpacked takes slots as the C code would, so deep
nesting and many values fail with the same "stack overflow (...)" error."""
import math
import struct

from lupa.lua51 import lua_type as lua_object_type

from .base import ScriptError, argument_error, c_int, check_integer, check_string

STACK_SLOTS = 8000        # LUAI_MAXCSTACK
MAX_NESTING = 16
NIL, FALSE, TRUE = b"\xc0", b"\xc2", b"\xc3"

MISSING_BYTES = b"Missing bytes in input."
BAD_FORMAT = b"Bad data format in input."
TOO_MANY_VALUES = b"too many return values at once; use unpack_one or unpack_limit instead."


def check_stack(used, extra, where):
    """luaL_checkstack: a C frame holding used slots wants extra more."""
    if used + extra > STACK_SLOTS:
        raise ScriptError(b"stack overflow (" + where + b")", positioned=True)


# --- packing

def sized_header(length, fixed, small_limit, forms):
    """The header of a string, array or map: fixed | length up to small_limit, else the
    first of forms ((prefix, struct format of the length)) that holds the length."""
    if length <= small_limit:
        return bytes([fixed | length])
    for prefix, form in forms:
        if length < 1 << (8 * struct.calcsize(form)):
            return prefix + struct.pack(form, length)


STRING_FORMS = ((b"\xd9", ">B"), (b"\xda", ">H"), (b"\xdb", ">I"))
ARRAY_FORMS = ((b"\xdc", ">H"), (b"\xdd", ">I"))
MAP_FORMS = ((b"\xde", ">H"), (b"\xdf", ">I"))


def pack_integer(n):
    if 0 <= n <= 127:
        return bytes([n])
    if -32 <= n < 0:
        return bytes([n & 0xFF])
    if n > 0:
        for prefix, form, largest in ((b"\xcc", ">B", 0xFF), (b"\xcd", ">H", 0xFFFF), (b"\xce", ">I", 0xFFFFFFFF)):
            if n <= largest:
                return prefix + struct.pack(form, n)
        return b"\xcf" + struct.pack(">Q", n)
    for prefix, form, smallest in ((b"\xd0", ">b", -2 ** 7), (b"\xd1", ">h", -2 ** 15), (b"\xd2", ">i", -2 ** 31)):
        if n >= smallest:
            return prefix + struct.pack(form, n)
    return b"\xd3" + struct.pack(">q", n)


def pack_number(number):
    # A whole number in int64's range is an integer (lupa hands most of them over as int).
    if type(number) is int or (math.isfinite(number) and number == int(number) and -2 ** 63 <= number < 2 ** 63):
        return pack_integer(int(number))
    try:
        single = struct.pack(">f", number)
        if struct.unpack(">f", single)[0] == number:
            return b"\xca" + single
    except OverflowError:       # beyond float 32's range: only a float 64 holds it
        pass
    return b"\xcb" + struct.pack(">d", number)


def is_array(items):
    """Whether a table's keys are exactly 1..n, each a positive 32-bit integer."""
    largest = 0
    for key, _ in items:
        if type(key) not in (int, float) or not 0 < key < 2 ** 31 or key != int(key):
            return False
        largest = max(largest, int(key))
    return largest == len(items)


def pack_value(value, level, top, out):
    """Append value's encoding to out; top is its slot on the C stack."""
    kind = type(value)
    if kind is bytes:
        out.append(sized_header(len(value), 0xA0, 31, STRING_FORMS))
        out.append(value)
    elif kind is bool:
        out.append(TRUE if value else FALSE)
    elif kind is int or kind is float:
        out.append(pack_number(value))
    elif level < MAX_NESTING and lua_object_type(value) == "table":
        pack_table(value, level, top, out)
    else:
        out.append(NIL)


def pack_table(table, level, top, out):
    check_stack(top, 2, b"in function table_is_an_array")
    items = list(table.items())
    if is_array(items):
        out.append(sized_header(len(items), 0x90, 15, ARRAY_FORMS))
        check_stack(top, 1, b"in function mp_encode_lua_table_as_array")
        for _, item in sorted(items, key=lambda pair: pair[0]):
            pack_value(item, level + 1, top + 1, out)
    else:
        out.append(sized_header(len(items), 0x80, 15, MAP_FORMS))
        check_stack(top, 3, b"in function mp_encode_lua_table_as_map")
        for key, item in items:
            pack_value(key, level + 1, top + 3, out)
            pack_value(item, level + 1, top + 2, out)


def pack(*args):
    if not args:
        raise argument_error(-1, "pack", "MessagePack pack needs input.")
    if 2 * len(args) > STACK_SLOTS:
        raise argument_error(-1, "pack", "Too many arguments for MessagePack pack.")
    out = []
    for i, value in enumerate(args):
        # Below the value: the arguments and the strings packed so far.
        check_stack(len(args) + i, 1, b"in function mp_check")
        pack_value(value, 0, len(args) + i + 1, out)
    return b"".join(out)


# --- unpacking

FIXED_SIZES = {       # first byte → (total size, struct format of what follows it)
    0xCC: (2, ">B"), 0xCD: (3, ">H"), 0xCE: (5, ">I"), 0xCF: (9, ">q"),   # uint 64 wraps to signed
    0xD0: (2, ">b"), 0xD1: (3, ">h"), 0xD2: (5, ">i"), 0xD3: (9, ">q"),
    0xCA: (5, ">f"), 0xCB: (9, ">d"),
}
LENGTH_FORMS = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xDC: ">H", 0xDD: ">I", 0xDE: ">H", 0xDF: ">I"}
CONSTANTS = {0xC0: None, 0xC2: False, 0xC3: True}


class Container:
    """An array or map being filled, with the slots it holds on the C stack."""
    __slots__ = ("table", "left", "is_map", "key", "has_key", "index")

    def __init__(self, table, left, is_map):
        self.table, self.left, self.is_map = table, left, is_map
        self.key, self.has_key, self.index = None, False, 1


def need(data, pos, size):
    if len(data) - pos < size:
        raise ScriptError(MISSING_BYTES, positioned=True)


def unpack_value(lua, data, pos, used):
    """Decode the value at pos (used: slots the C frame holds below it), without
    recursion since a crafted input nests thousands deep; (value, next pos)."""
    open_containers = []
    while True:
        need(data, pos, 1)
        check_stack(used, 1, TOO_MANY_VALUES)
        first = data[pos]
        container = None
        if first in CONSTANTS:
            value, pos = CONSTANTS[first], pos + 1
        elif first in FIXED_SIZES:
            size, form = FIXED_SIZES[first]
            need(data, pos, size)
            value, pos = struct.unpack_from(form, data, pos + 1)[0], pos + size
        elif first in LENGTH_FORMS or 0x80 <= first <= 0xBF:
            if first in LENGTH_FORMS:
                form = LENGTH_FORMS[first]
                header = 1 + struct.calcsize(form)
                need(data, pos, header)
                length = struct.unpack_from(form, data, pos + 1)[0]
            else:
                header, length = 1, first & (0x1F if first >= 0xA0 else 0x0F)
            if first >= 0xDC or first < 0xA0:
                pos += header
                is_map = first >= 0xDE or first < 0x90
                container = Container(lua.table(), length, is_map)
                if not is_map:
                    check_stack(used + 1, 1, b"in function mp_decode_to_lua_array")
                value = container.table
            else:
                need(data, pos, header + length)
                value, pos = data[pos + header:pos + header + length], pos + header + length
        elif first < 0x80 or first >= 0xE0:
            value, pos = (first if first < 0x80 else first - 256), pos + 1
        else:
            raise ScriptError(BAD_FORMAT, positioned=True)

        if container is not None and container.left:
            open_containers.append(container)
            used += 1 if container.is_map else 2       # the table, and an array's index
            continue
        # value is complete: store it into the containers it completes.
        while open_containers:
            container = open_containers[-1]
            if container.is_map and not container.has_key:
                container.key, container.has_key = value, True
                used += 1
                break
            if container.is_map:
                store(container.table, container.key, value)
                container.has_key = False
                used -= 1
            else:
                container.table[container.index] = value
                container.index += 1
            container.left -= 1
            if container.left:
                break
            open_containers.pop()
            used -= 1 if container.is_map else 2
            value = container.table
        else:
            return value, pos


def store(table, key, value):
    """lua_settable of a decoded map entry (raised from C, so not positioned)."""
    if key is None:
        raise ScriptError(b"table index is nil")
    if type(key) is float and key != key:
        raise ScriptError(b"table index is NaN")
    table[key] = value


def unpack_values(lua, args, name, limit, offset, used):
    """What unpack, unpack_one and unpack_limit return: the values decoded from offset
    on (all of them when limit and offset are 0), then, unless all, the offset after
    them (-1 at the end of the input)."""
    data = check_string(args, 0, name)
    if offset < 0 or limit < 0:
        # The C message prints the input's length as the limit.
        raise ScriptError(b"Invalid request to unpack with offset of %d and limit of %d."
                          % (c_int(offset), c_int(len(data))), positioned=True)
    if offset > len(data):
        raise ScriptError(b"Start offset %d greater than input length %d."
                          % (c_int(offset), c_int(len(data))), positioned=True)
    decode_all = not limit and not offset
    pos, values = offset, []
    while pos < len(data) and (decode_all or len(values) < limit):
        value, pos = unpack_value(lua, data, pos, used + len(values))
        values.append(value)
    if not decode_all:
        check_stack(used + len(values), 1, b"in function mp_unpack_full")
        values.insert(0, -1 if pos == len(data) else pos)
    return tuple(values)


def functions(lua, null, scope):
    def unpack(*args):
        return unpack_values(lua, args, "unpack", 0, 0, len(args))

    def unpack_one(*args):
        offset = check_integer(args, 1, "unpack_one") if len(args) > 1 and args[1] is not None else 0
        return unpack_values(lua, args, "unpack_one", 1, offset, 1)

    def unpack_limit(*args):
        limit = check_integer(args, 1, "unpack_limit")
        offset = check_integer(args, 2, "unpack_limit") if len(args) > 2 and args[2] is not None else 0
        return unpack_values(lua, args, "unpack_limit", limit, offset, 1)

    return {
        "pack": pack, "unpack": unpack, "unpack_one": unpack_one, "unpack_limit": unpack_limit,
        "_NAME": b"cmsgpack", "_VERSION": b"lua-cmsgpack 0.4.0",
        "_COPYRIGHT": b"Copyright (C) 2012, Salvatore Sanfilippo",
        "_DESCRIPTION": b"MessagePack C implementation for Lua",
    }
