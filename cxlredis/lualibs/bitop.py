"""Lua BitOp (the bit library of Redis's Lua): 32-bit operations on Lua numbers.

A number becomes 32 bits as LuaBitOp makes it: 2^52 + 2^51 added in double precision
(so the nearest integer, halves to even) and the low 32 bits of the sum's mantissa
taken; any other value is an argument error. A result is handed back signed."""
import struct

from .base import argument_error, lua_number, lua_type

MAGIC = 6755399441055744.0      # 2^52 + 2^51
MASK = 0xFFFFFFFF


def bits(args, i, name):
    value = args[i] if i < len(args) else None
    kind = type(value)
    if kind is int or kind is float:
        number = float(value)
    elif kind is bytes:
        number = lua_number(value)
    else:
        number = None
    if number is None:
        got = "no value" if i >= len(args) else lua_type(value)
        raise argument_error(i, name, f"number expected, got {got}")
    return struct.unpack("<Q", struct.pack("<d", number + MAGIC))[0] & MASK


def signed(b):
    b &= MASK
    return b - (1 << 32) if b & 0x80000000 else b


def folding(name, combine):
    def op(*args):
        b = bits(args, 0, name)
        for i in range(len(args) - 1, 0, -1):     # the C library reads the last one first
            b = combine(b, bits(args, i, name))
        return signed(b)
    return op


def shifting(name, shift):
    def op(*args):
        b = bits(args, 0, name)
        return signed(shift(b, bits(args, 1, name) & 31))
    return op


def tobit(*args):
    return signed(bits(args, 0, "tobit"))


def bnot(*args):
    return signed(~bits(args, 0, "bnot"))


def bswap(*args):
    return signed(int.from_bytes(bits(args, 0, "bswap").to_bytes(4, "little"), "big"))


def tohex(*args):
    b = bits(args, 0, "tohex")
    n = signed(bits(args, 1, "tohex")) if len(args) > 1 else 8
    digits = "0123456789abcdef"
    if n < 0:
        n, digits = -n, digits.upper()
    n = min(n, 8)
    return "".join(digits[(b >> (4 * i)) & 15] for i in range(n - 1, -1, -1)).encode()


def functions(lua, null, scope):
    return {
        "tobit": tobit, "bnot": bnot, "bswap": bswap, "tohex": tohex,
        "band": folding("band", lambda a, b: a & b),
        "bor": folding("bor", lambda a, b: a | b),
        "bxor": folding("bxor", lambda a, b: a ^ b),
        "lshift": shifting("lshift", lambda b, n: b << n),
        "rshift": shifting("rshift", lambda b, n: b >> n),
        "arshift": shifting("arshift", lambda b, n: signed(b) >> n),
        "rol": shifting("rol", lambda b, n: (b << n) | (b >> (32 - n))),
        "ror": shifting("ror", lambda b, n: (b << (32 - n)) | (b >> n)),
    }
