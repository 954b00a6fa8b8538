"""The SCAN family's arguments (SCAN, HSCAN): cursor, MATCH, COUNT, TYPE."""
from .. import errors
from .._store import glob_match
from ..errors import CommandError
from .args import parse_int, upper

UINT64_MAX = (1 << 64) - 1


def parse_cursor(arg):
    """Redis's strtoul-based cursor: an optional sign then digits, negatives wrapping
    modulo 2**64; the empty string is 0."""
    raw = bytes(arg)
    if not raw:
        return 0
    digits = raw[1:] if raw[:1] in (b"+", b"-") else raw
    significant = digits.lstrip(b"0")
    if not digits.isdigit() or len(significant) > 20 or int(significant or b"0") > UINT64_MAX:
        raise CommandError(errors.INVALID_CURSOR)
    value = int(significant or b"0")
    return (-value) & UINT64_MAX if raw[:1] == b"-" else value


def parse_scan_args(argv, cursor_index, allow_type):
    """Return (cursor, count, match, type_name): match is a predicate or None."""
    cursor = parse_cursor(argv[cursor_index])
    count, match, type_name = 10, None, None
    i = cursor_index + 1
    while i < len(argv):
        option = upper(argv[i])
        if i + 1 >= len(argv):
            raise CommandError(errors.SYNTAX)
        if option == "COUNT":
            count = parse_int(argv[i + 1])
            if count < 1:
                raise CommandError(errors.SYNTAX)
        elif option == "MATCH":
            pattern = bytes(argv[i + 1])
            # "*" matches everything: skip the per-key test, as Redis does.
            match = None if pattern == b"*" else (lambda key, p=pattern: glob_match(p, key))
        elif option == "TYPE" and allow_type:
            type_name = bytes(argv[i + 1]).decode("utf-8", "replace").lower()
        else:
            raise CommandError(errors.SYNTAX)
        i += 2
    return cursor, count, match, type_name
