"""Argument parsing shared by the command families, with Redis's strictness."""
import re

from .. import errors
from ..errors import CommandError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
# Redis's string2ll: no sign but '-', no spaces, no leading zeros, no "-0".
_INTEGER = re.compile(rb"(?:0|-?[1-9][0-9]*)\Z")


def parse_int(arg, error=errors.NOT_INTEGER):
    """A 64-bit signed integer exactly as Redis accepts it, else CommandError(error)."""
    raw = bytes(arg) if not isinstance(arg, bytes) else arg
    if len(raw) > 20 or not _INTEGER.match(raw):
        raise CommandError(error)
    value = int(raw)
    if value < INT64_MIN or value > INT64_MAX:
        raise CommandError(error)
    return value


def upper(arg):
    """An option keyword, upper-cased for comparison."""
    return bytes(arg).decode("utf-8", "replace").upper()
