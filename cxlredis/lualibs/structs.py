"""The struct library of Redis 7.0's Lua (Roberto Ierusalimschy's struct, as Redis
patched it): struct.pack, struct.unpack and struct.size, for x86-64 Linux, where Redis
runs it with native little-endian order, 4-byte int, 8-byte long and size_t, and an
8-byte maximum alignment.

It is replayed here with the C library's quirks, which scripts can observe:
- a number becomes an integer through a C cast to 64 bits (truncated; out of range
  and NaN give what x86-64's conversion instructions give), and only those 64 bits
  are written, so the bytes of an integer wider than 8 are zeros;
- unpacking an integer wider than 8 keeps its 8 least significant bytes, and the sign
  mask shifts by (8 * size - 1) modulo 64, as the x86-64 shift instruction does;
- positions are C size_t values, so they wrap modulo 2^64, and the next position is
  handed back as a signed 64-bit number;
- struct.size skips unknown letters and digits, which pack and unpack refuse."""
import math
import struct

from .base import ScriptError, argument_error, c_long, check_number, check_string, lua_number, lua_type

INT_SIZE = 4
LONG_SIZE = 8
SIZE_T_SIZE = 8
MAX_ALIGN = 8
MAX_INT_SIZE = 32
INT_MAX = 2 ** 31 - 1
WORD = 2 ** 64
SIGN_BIT = 2 ** 63
FIXED_SIZES = {"b": 1, "B": 1, "h": 2, "H": 2, "l": LONG_SIZE, "L": LONG_SIZE, "T": SIZE_T_SIZE,
               "f": 4, "d": 8, "x": 1}
INTEGER_CODES = frozenset("bBhHlLTiI")
DIGITS = b"0123456789"       # isdigit in the C locale
LUA_STACK_LIMIT = 8000      # LUAI_MAXCSTACK: unpack refuses to push past it


def lua_error(message):
    """A luaL_error raised into the script."""
    return ScriptError(message.encode(), positioned=True)


def unsigned_word(number):
    """(unsigned long) of a double as gcc compiles it on x86-64: truncation toward zero
    below 2^63, 2^63 subtracted first above, and the 'integer indefinite' value 2^63
    (or 0 once the subtraction is undone) where the instruction overflows."""
    if math.isnan(number):
        return SIGN_BIT
    if number >= WORD:
        return 0
    return c_long(number) % WORD if number < 0 else int(number)


def as_signed(word):
    """A 64-bit word read as a C long."""
    word %= WORD
    return word - WORD if word >= SIGN_BIT else word


class Layout:
    """A format string walked as the C library walks it: each option with its size, the
    byte order and alignment the control options set, and the padding an option needs."""

    def __init__(self, fmt):
        self.fmt = fmt.split(b"\0", 1)[0]        # the C library sees a C string
        self.at = 0
        self.little = True
        self.align = 1

    def __iter__(self):
        while self.at < len(self.fmt):
            opt = chr(self.fmt[self.at])
            self.at += 1
            yield opt, self.option_size(opt)

    def read_count(self, default):
        """The decimal number at the current position, or default when there is none."""
        if not self.next_is_digit():
            return default
        count = 0
        while self.next_is_digit():
            digit = self.fmt[self.at] - ord("0")
            if count > INT_MAX // 10 or count * 10 > INT_MAX - digit:
                raise lua_error("integral size overflow")
            count = count * 10 + digit
            self.at += 1
        return count

    def next_is_digit(self):
        return self.at < len(self.fmt) and self.fmt[self.at] in DIGITS

    def option_size(self, opt):
        if opt in FIXED_SIZES:
            return FIXED_SIZES[opt]
        if opt == "c":
            return self.read_count(1)
        if opt in "iI":
            size = self.read_count(INT_SIZE)
            if size > MAX_INT_SIZE:
                raise lua_error(f"integral size {size} is larger than limit of {MAX_INT_SIZE}")
            return size
        return 0        # 's', control options, and unknown ones until control() sees them

    def padding(self, offset, opt, size):
        """Zero bytes to put before an option of this size at offset; the formula also
        serves sizes that are no power of 2, as in C."""
        if size == 0 or opt == "c":
            return 0
        size = min(size, self.align)
        return (size - (offset & (size - 1))) & (size - 1)

    def control(self, opt, function_name):
        """An option that is not a value: byte order, alignment, a space, or an error."""
        if opt == "<":
            self.little = True
        elif opt == ">":
            self.little = False
        elif opt == "!":
            align = self.read_count(MAX_ALIGN)
            if align <= 0 or align & (align - 1):
                raise lua_error(f"alignment {align} is not a power of 2")
            self.align = align
        elif opt != " ":
            # The option byte as it is: one that is no ASCII must not become UTF-8.
            raise ScriptError(b"bad argument #1 to '%s' (invalid format option '%s')"
                              % (function_name.encode(), opt.encode("latin-1")), positioned=True)


def integer_bytes(number, size, little):
    """An integer option's bytes: the 64 bits the C cast gives, zeros past them. (The C
    code casts a negative number through long first, which on x86-64 gives the same.)"""
    data = unsigned_word(number).to_bytes(8, "little")[:size].ljust(size, b"\0")
    return data if little else data[::-1]


def integer_value(data, little, signed):
    """An integer option's value as a Lua number (a double)."""
    most_significant_first = data[::-1] if little else data
    word = int.from_bytes(most_significant_first[-8:], "big")   # the shifts drop the rest
    if signed:
        mask = (~0 << ((8 * len(data) - 1) & 63)) % WORD
        if word & mask:
            word |= mask
        word = as_signed(word)
    return float(word)


def float_bytes(number, code, little):
    """An 'f' or 'd' option's bytes: a C cast to float rounds out-of-range numbers to an
    infinity, where Python's struct refuses them."""
    order = "<" if little else ">"
    try:
        return struct.pack(order + code, number)
    except OverflowError:
        return struct.pack(order + code, math.copysign(math.inf, number))


def pack(*args):
    layout = Layout(check_string(args, 0, "pack"))
    # The C function pushes a nil after its arguments, so a missing value is a nil one.
    values = args + (None,)
    next_value = 1
    packed = bytearray()
    for opt, size in layout:
        packed += bytes(layout.padding(len(packed), opt, size))
        if opt in INTEGER_CODES:
            packed += integer_bytes(check_number(values, next_value, "pack"), size, layout.little)
            next_value += 1
        elif opt == "x":
            packed.append(0)
        elif opt in "fd":
            packed += float_bytes(float(check_number(values, next_value, "pack")), opt, layout.little)
            next_value += 1
        elif opt in "cs":
            text = check_string(values, next_value, "pack")
            next_value += 1
            if size == 0:
                size = len(text)
            if len(text) < size:
                # The C library names the argument after the string's.
                raise argument_error(next_value, "pack", "string too short")
            packed += text[:size]
            if opt == "s":
                packed.append(0)
        else:
            layout.control(opt, "pack")
    return bytes(packed)


def start_position(args):
    """luaL_optinteger of the third argument, as the 0-based size_t the C code keeps."""
    value = args[2] if len(args) > 2 else None
    if value is None:
        return 0
    number = lua_number(value)
    if number is None:
        raise argument_error(2, "unpack", f"number expected, got {lua_type(value)}")
    position = c_long(number) % WORD
    if position == 0:
        raise argument_error(2, "unpack", "offset must be 1 or greater")
    return position - 1


def unpack(*args):
    layout = Layout(check_string(args, 0, "unpack"))
    data = check_string(args, 1, "unpack")
    position = start_position(args)
    results = []

    def check_room(size):
        if not (size <= len(data) and position <= len(data) - size):
            raise argument_error(1, "unpack", "data string too short")

    for opt, size in layout:
        position = (position + layout.padding(position, opt, size)) % WORD
        check_room(size)
        # luaL_checkstack(L, 2): the arguments and the values so far, one more and the position.
        if len(args) + len(results) + 2 > LUA_STACK_LIMIT:
            raise lua_error("stack overflow (too many results)")
        field = data[position:position + size]
        if opt in INTEGER_CODES:
            results.append(integer_value(field, layout.little, opt.islower()))
        elif opt in "fd":
            results.append(struct.unpack(("<" if layout.little else ">") + opt, field)[0])
        elif opt == "c":
            if size == 0:
                previous = lua_number(results[-1]) if results else None
                if previous is None:
                    raise lua_error("format 'c0' needs a previous size")
                size = unsigned_word(previous)
                results.pop()
                check_room(size)
            results.append(data[position:position + size])
        elif opt == "s":
            end = data.find(b"\0", position)
            if end < 0:
                raise lua_error("unfinished string in data")
            results.append(data[position:end])
            size = end - position + 1
        elif opt != "x":
            layout.control(opt, "unpack")
        position = (position + size) % WORD
    results.append(float(as_signed(position + 1)))
    return tuple(results)


def fixed_size(*args):
    layout = Layout(check_string(args, 0, "size"))
    total = 0
    for opt, option_size in layout:
        total += layout.padding(total, opt, option_size)
        if opt == "s":
            raise argument_error(0, "size", "option 's' has no fixed size")
        if opt == "c" and option_size == 0:
            raise argument_error(0, "size", "option 'c0' has no fixed size")
        if not (opt.isascii() and opt.isalnum()):      # other letters and digits count as nothing
            layout.control(opt, "size")
        total += option_size
    return float(total)


def functions(lua, null, scope):
    return {"pack": pack, "unpack": unpack, "size": fixed_size}
