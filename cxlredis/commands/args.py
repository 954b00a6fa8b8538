"""Argument parsing shared by the command families, with Redis's strictness."""
import re

from .. import errors
from ..errors import CommandError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
# Redis's string2ll: no sign but '-', no spaces, no leading zeros, no "-0".
_INTEGER = re.compile(rb"(?:0|-?[1-9][0-9]*)\Z")


def is_int64(raw):
    """Whether raw (bytes) is a 64-bit signed integer exactly as Redis's string2ll accepts it."""
    return len(raw) <= 20 and _INTEGER.match(raw) is not None and INT64_MIN <= int(raw) <= INT64_MAX


def parse_int(arg, error=errors.NOT_INTEGER):
    """A 64-bit signed integer exactly as Redis accepts it, else CommandError(error)."""
    raw = bytes(arg) if not isinstance(arg, bytes) else arg
    if not is_int64(raw):
        raise CommandError(error)
    return int(raw)


def parse_timeout_ms(arg):
    """A timeout in milliseconds as Redis's getTimeoutFromObjectOrReply reads one (WAIT,
    CLIENT PAUSE): an integer, not negative; 0 stands for none."""
    timeout = parse_int(arg, "ERR timeout is not an integer or out of range")
    if timeout < 0:
        raise CommandError("ERR timeout is negative")
    return timeout


def upper(arg):
    """An option keyword, upper-cased for comparison."""
    return bytes(arg).decode("utf-8", "replace").upper()


def c_word(arg):
    """An argument as Redis's strcasecmp compares it with a keyword: up to its first NUL
    byte, ASCII letters folded to lower case (b"GET\\0x" is b"get")."""
    return bytes(arg).partition(b"\0")[0].lower()
