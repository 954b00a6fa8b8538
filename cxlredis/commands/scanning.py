"""The SCAN family's arguments (SCAN, HSCAN): cursor, MATCH, COUNT, TYPE."""
import re

from .. import errors
from .._store import glob_match
from ..errors import CommandError
from .args import parse_int, upper

_CURSOR = re.compile(rb"[0-9]+\Z")


def parse_scan_args(argv, cursor_index, allow_type):
    """Return (cursor, count, match, type_name): match is a predicate or None."""
    raw = bytes(argv[cursor_index])
    if not _CURSOR.match(raw) or int(raw) >= 1 << 64:
        raise CommandError("ERR invalid cursor")
    cursor = int(raw)
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
