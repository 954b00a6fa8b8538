"""Argument parsing shared by the command families, with Redis's strictness."""
import math
import re
from decimal import Decimal
from fractions import Fraction

from .. import errors
from .._numbers import is_valid_float
from .._store import now_ms
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


def parse_block_timeout(arg):
    """A blocking command's timeout (BLPOP, BZPOPMIN, ...) as Redis 7.0's
    getTimeoutFromObjectOrReply reads seconds: the deadline in ms since the epoch, 0 for
    none. The sum may pass what 64 bits hold: Redis's wraps, and such a timeout never
    comes; here it lies too far ahead to come."""
    raw = bytes(arg)
    if not is_valid_float(raw):
        raise CommandError("ERR timeout is not a float or out of range")
    timeout = _seconds_to_ms(raw.decode("ascii"))
    if timeout < 0:
        raise CommandError("ERR timeout is negative")
    return now_ms() + timeout if timeout else 0


def _seconds_to_ms(text):
    """(long long) ceill(seconds * 1000.0), in x86-64's long double: rounded as the FPU
    rounds (0.001 * 1000 need not be 1), a result past a long long cast to LLONG_MIN."""
    if text.lstrip("+-")[:3].lower() == "inf":
        return INT64_MIN
    if "x" in text.lower():
        seconds = Fraction(float.fromhex(text))
    else:
        seconds = _long_double(Fraction(Decimal(text)))
    timeout = math.ceil(_long_double(seconds * 1000))
    return timeout if INT64_MIN <= timeout <= INT64_MAX else INT64_MIN


def _long_double(value):
    """value rounded to x87 extended precision: a 64-bit significand, ties to even."""
    if not value:
        return value
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if magnitude < Fraction(2) ** exponent:     # the bit lengths tell it within one
        exponent -= 1
    last_bit = Fraction(2) ** (exponent - 63)
    rounded = round(magnitude / last_bit) * last_bit
    return rounded if value > 0 else -rounded


def index_span(start, stop, length):
    """Redis's start..stop of indexes (inclusive, negative from the end: LRANGE, LTRIM,
    ZRANGE by rank, ZREMRANGEBYRANK) as the positions [first, last) of a sequence of
    length, clipped as Redis clips them; first == last when nothing is in it."""
    if start < 0:
        start += length
    if stop < 0:
        stop += length
    start = max(start, 0)
    if start > stop or start >= length:
        return 0, 0
    return start, min(stop, length - 1) + 1


def upper(arg):
    """An option keyword, upper-cased for comparison."""
    return bytes(arg).decode("utf-8", "replace").upper()


def c_word(arg):
    """An argument as Redis's strcasecmp compares it with a keyword: up to its first NUL
    byte, ASCII letters folded to lower case (b"GET\\0x" is b"get")."""
    return bytes(arg).partition(b"\0")[0].lower()


def keyword(arg, meanings, error=errors.SYNTAX):
    """What the keyword arg means in {b"word": meaning} (compared as c_word reads it);
    CommandError(error) for any other word."""
    word = c_word(arg)
    if word not in meanings:
        raise CommandError(error)
    return meanings[word]
