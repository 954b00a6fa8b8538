"""What every Python function a script calls shares: raising a Lua error into the script,
and Lua's own argument conversions and checks (lua_tonumber, luaL_checkint, ...), so a
library written here fails with the messages Redis's C libraries give.

Values arrive as lupa hands them over with encoding=None: Lua strings as bytes, numbers
as int (integral) or float, booleans, None for nil, and Lua tables as lupa tables."""
import math


class ScriptError(Exception):
    """Raised by a Python function into the script: value is what Lua's error() would have
    been given (an error table, or a message)."""

    def __init__(self, value, positioned=False):
        super().__init__(value)
        self.value = value
        self.positioned = positioned     # a message luaL_error would prefix with the script's line


def lua_number(value):
    """lua_tonumber: a number, or a string that reads as one (strtod's forms, or hex as
    0x...); None otherwise."""
    kind = type(value)
    if kind is int or kind is float:
        return value
    if kind is not bytes or b"_" in value:
        return None
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        if text[:2].lower() == b"0x":
            return float(int(text[2:], 16))
    except ValueError:
        pass
    return None


def lua_type(value):
    """Lua's type() of a value as lupa hands it over."""
    kind = type(value)
    if value is None:
        return "nil"
    if kind is bool:
        return "boolean"
    if kind is bytes:
        return "string"
    if kind is int or kind is float:
        return "number"
    return "table"


def argument_error(i, name, message):
    """luaL_argerror for argument i (0-based)."""
    return ScriptError(f"bad argument #{i + 1} to '{name}' ({message})".encode(), positioned=True)


def check_number(args, i, name):
    """luaL_checknumber of argument i (0-based)."""
    number = lua_number(args[i]) if i < len(args) else None
    if number is None:
        got = "no value" if i >= len(args) else lua_type(args[i])
        raise argument_error(i, name, f"number expected, got {got}")
    return number


def c_long(number):
    """(long) of a double on x86-64: truncated toward zero, INT64_MIN when it does not fit
    or is NaN."""
    return int(number) if math.isfinite(number) and abs(number) < 2 ** 63 else -2 ** 63


def check_integer(args, i, name):
    """luaL_checkinteger of argument i (0-based) on x86-64."""
    return c_long(check_number(args, i, name))


def c_int(whole):
    """(int) of a 64-bit integer: its low 32 bits, signed."""
    return (whole + 2 ** 31) % 2 ** 32 - 2 ** 31


def check_int(args, i, name):
    """luaL_checkint of argument i (0-based) on x86-64."""
    return c_int(check_integer(args, i, name))


def check_string(args, i, name):
    """luaL_checklstring of argument i (0-based): a string, or a number as Lua writes it."""
    value = args[i] if i < len(args) else None
    if type(value) is bytes:
        return value
    if type(value) in (int, float):
        return number_text(value)
    got = "no value" if i >= len(args) else lua_type(value)
    raise argument_error(i, name, f"string expected, got {got}")


def number_text(number):
    """A number as Lua 5.1 turns it into a string: glibc's "%.14g", which writes a NaN's
    sign (0/0 is -nan on x86)."""
    if number != number:
        return b"-nan" if math.copysign(1.0, number) < 0 else b"nan"
    return b"%.14g" % number
