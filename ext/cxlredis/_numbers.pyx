# cython: language_level=3
"""Redis's number rules in C: long double parsing and formatting.

INCRBYFLOAT and HINCRBYFLOAT compute in `long double` and print with 17
fractional digits, trailing zeros trimmed; Python floats would round
differently (0.1 + 0.2), so the arithmetic happens here, in C.
"""
from libc.errno cimport errno, ERANGE, EINVAL
from libc.string cimport memcpy

cdef extern from "<stdlib.h>":
    long double strtold(const char *s, char **end)

cdef extern from "<stdio.h>":
    int snprintf(char *buf, size_t size, const char *fmt, ...)

cdef extern from "<ctype.h>":
    int isspace(int c)

cdef extern from "<math.h>":
    bint isnan(long double x)
    bint isinf(long double x)

# Redis refuses longer float strings outright.
DEF MAX_LONG_DOUBLE_CHARS = 5 * 1024


cdef bint parse_ld(const unsigned char[:] text, long double *out):
    global errno  # without this Cython makes errno a local and ERANGE goes unseen
    cdef char buf[MAX_LONG_DOUBLE_CHARS]
    cdef char *end
    cdef Py_ssize_t n = text.shape[0]
    cdef long double value
    if n == 0 or n >= MAX_LONG_DOUBLE_CHARS:
        return False
    memcpy(buf, &text[0], n)
    buf[n] = 0
    errno = 0
    value = strtold(buf, &end)
    # end must reach the last byte: an embedded NUL would otherwise end the parse early.
    if isspace(buf[0]) or end != buf + n or errno == EINVAL or isnan(value):
        return False
    if errno == ERANGE and (isinf(value) or value == 0):
        return False
    out[0] = value
    return True


cdef bytes format_ld_human(long double value):
    cdef char buf[MAX_LONG_DOUBLE_CHARS]
    cdef int n
    if isinf(value):
        return b"inf" if value > 0 else b"-inf"
    n = snprintf(buf, sizeof(buf), "%.17Lf", value)
    while n > 0 and buf[n - 1] == b'0':
        n -= 1
    if n > 0 and buf[n - 1] == b'.':
        n -= 1
    if n == 2 and buf[0] == b'-' and buf[1] == b'0':
        return b"0"
    return buf[:n]


class NotAFloat(ValueError):
    """Which operand did not parse: 'value' (the stored one) or 'increment'."""


def incr_by_float(current, increment):
    """current + increment in long double, formatted as Redis stores it.

    current is None for a missing key/field (0). Raises NotAFloat('value' or
    'increment'), or OverflowError when the sum is NaN or infinite.
    """
    cdef long double value = 0, incr
    if current is not None and not parse_ld(memoryview(current).cast("B"), &value):
        raise NotAFloat("value")
    if not parse_ld(memoryview(increment).cast("B"), &incr):
        raise NotAFloat("increment")
    value += incr
    if isnan(value) or isinf(value):
        raise OverflowError("NaN or Infinity")
    return format_ld_human(value)


def is_valid_float(text):
    """Whether Redis's string2ld would accept text."""
    cdef long double ignored
    return parse_ld(memoryview(text).cast("B"), &ignored)
