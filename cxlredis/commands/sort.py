"""SORT and SORT_RO, as Redis 7.0's sort.c has them.

The elements of a list, set or sorted set are sorted by themselves or by what a BY
pattern finds for each (the string at the key its '*' makes, or a hash's field with
`key->field`), as numbers or (ALPHA) as strings, ASC or DESC; a LIMIT range of them is
answered, or replaced by what GET patterns find for each ('#': the element itself), or
(SORT's STORE) stored as a list.

Redis's rules kept:
- BY a pattern without '*' (BY nosort) sorts nothing: a list or a sorted set comes in its
  own order (DESC: reversed), the LIMIT range read straight from it; a set in its own,
  sorted as strings after all when STOREd or in a script (so that the result does not
  depend on its order);
- an element whose BY key or field is missing sorts as 0, or (ALPHA) before the others;
  a number that strtod would not read whole refuses the call, once every BY key was
  looked up;
- strings compare as strcoll compares them in the C locale (bytes, up to a NUL), or with
  STORE as binary strings; numbers that tie compare their elements as binary strings;
- a sorted set is converted to a skiplist first, as Redis converts it, SORT_RO too;
- BY and GET patterns are refused in cluster mode, and to a user who may not read every
  key (ACL).
Every key a pattern names is looked up as a read (hits, misses, keymiss events).
"""
import math
import re
import sys
from decimal import Decimal
from fractions import Fraction

from .. import errors
from .._store import ENCODING_LISTPACK, ENCODING_SKIPLIST, TYPE_HASH, TYPE_LIST, TYPE_SET, TYPE_STRING, TYPE_ZSET
from ..errors import CommandError
from ..notifications import GENERIC, LIST, NEW
from .args import c_word, parse_int
from .hashes import value_ranges
from .pqsort import pqsort
from .registry import find

NOT_DOUBLE = "ERR One or more scores can't be converted into double"
SORTABLE = (TYPE_LIST, TYPE_SET, TYPE_ZSET)

# What glibc's strtod reads whole (after spaces): a decimal, hexadecimal, infinity or NaN.
_STRTOD = re.compile(rb"[ \t\n\v\f\r]*([+-]?(?:(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                     rb"(?:[pP][+-]?[0-9]+)?)|(?P<inf>inf(?:inity)?)|(?P<nan>nan(?:\([0-9A-Za-z_]*\))?)"
                     rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))", re.IGNORECASE)
_DBL_MIN = Fraction(sys.float_info.min)


class _Request:
    """A call's options, as sortCommandGeneric reads them."""

    __slots__ = ("desc", "alpha", "offset", "count", "store", "by", "dontsort", "gets")

    def __init__(self):
        self.desc = self.alpha = self.dontsort = False
        self.offset, self.count = 0, -1
        self.store = self.by = None
        self.gets = []


def cmd_sort(c, argv):
    _sort(c, argv, readonly=False)


def cmd_sort_ro(c, argv):
    _sort(c, argv, readonly=True)


def _sort(c, argv, readonly):
    request = _parse(c, argv, readonly)
    key = argv[1]
    entry = c.find(key)
    if entry is not None and entry.type not in SORTABLE:
        raise CommandError(errors.WRONGTYPE)
    kind = entry.type if entry is not None else TYPE_LIST     # missing: an empty list
    if request.dontsort and kind == TYPE_SET and (request.store is not None or c.in_script):
        request.dontsort, request.alpha, request.by = False, True, None
    if kind == TYPE_ZSET and entry.collection().encoding == ENCODING_LISTPACK:
        with c.write_collection(key, TYPE_ZSET) as zset:
            zset.zset_encode_as(ENCODING_SKIPLIST)
    coll = entry.collection() if entry is not None else None
    length = len(coll) if coll is not None else 0
    start, end = _limit_range(request.offset, request.count, length)
    if request.dontsort and kind != TYPE_SET:
        chosen = _own_order(coll, kind, start, end, request.desc)
    else:
        elements = _elements(coll, kind)
        if not request.dontsort:
            elements = _sorted(c, elements, request, start, end)
        chosen = elements[start:end + 1]
    if request.store is None:
        _reply(c, chosen, request.gets)
    else:
        _store(c, request.store, chosen, request.gets)


def _parse(c, argv, readonly):
    request = _Request()
    i = 2
    while i < len(argv):
        word, left = c_word(argv[i]), len(argv) - i - 1
        if word == b"asc":
            request.desc = False
        elif word == b"desc":
            request.desc = True
        elif word == b"alpha":
            request.alpha = True
        elif word == b"limit" and left >= 2:
            request.offset, request.count = parse_int(argv[i + 1]), parse_int(argv[i + 2])
            i += 2
        elif word == b"store" and left >= 1 and not readonly:
            request.store = argv[i + 1]
            i += 1
        elif word == b"by" and left >= 1:
            request.by = bytes(argv[i + 1])
            if b"*" in _c_string(request.by):
                _check_patterns_allowed(c, argv, "BY")
            else:
                request.dontsort = True     # (for good: a later BY with '*' does not undo it)
            i += 1
        elif word == b"get" and left >= 1:
            _check_patterns_allowed(c, argv, "GET")
            request.gets.append(bytes(argv[i + 1]))
            i += 1
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    return request


def _check_patterns_allowed(c, argv, option):
    """BY and GET patterns name keys no key spec knows: refused where that matters."""
    if c.services.cluster is not None:
        raise CommandError(f"ERR {option} option of SORT denied in Cluster mode.")
    if not c.user.reads_every_key(find(argv), argv):
        raise CommandError(f"ERR {option} option of SORT denied due to insufficient ACL permissions.")


def _limit_range(offset, count, length):
    """LIMIT's first and last position, as sortCommandGeneric clamps them (last < first:
    none)."""
    start = min(max(offset, 0), length)
    count = min(max(count, -1), length)
    end = length - 1 if count < 0 else start + count - 1
    if start >= length:
        start, end = length - 1, length - 2
    return start, min(end, length - 1)


def _own_order(coll, kind, start, end, desc):
    """Positions start..end of a list or sorted set in its own order (DESC: from its end)."""
    if end < start:
        return []
    length = len(coll)
    first, stop = (length - 1 - end, length - start) if desc else (start, end + 1)
    if kind == TYPE_LIST:
        elements = coll.list_range(first, stop)
        return elements[::-1] if desc else elements
    return [member for member, _ in coll.zset_range(first, stop, reverse=desc)]


def _elements(coll, kind):
    if coll is None:
        return []
    if kind == TYPE_LIST:
        return coll.list_range(0, len(coll))
    if kind == TYPE_SET:
        return coll.set_members()
    return [member for member, _ in coll.zset_range(0, len(coll))]


def _sorted(c, elements, request, start, end):
    """elements in sortCompare's order, as far as positions start..end need: NOT_DOUBLE
    once every BY key was looked up, if one did not read as a number. Redis sorts with
    glibc's qsort (a stable merge sort), or BY a pattern for a part of them with pqsort,
    which is not; it only shows where distinct elements tie (ALPHA, equal or missing BY
    values), and only then is it run here (in Python, and slower)."""
    binary = request.store is not None
    if request.alpha and request.by is None:
        keys = [element if binary else _c_string(element) for element in elements]
    elif request.alpha:
        found = (_lookup(c, request.by, element) for element in elements)
        keys = [(False, b"") if value is None else (True, value if binary else _c_string(value))
                for value in found]
    else:
        keys = []
        for element in elements:
            value = _lookup(c, request.by, element) if request.by is not None else element
            keys.append((0.0 if value is None else _score(value), element))
        if any(score is None for score, _ in keys):
            raise CommandError(NOT_DOUBLE)
    if request.by is not None and (start, end) != (0, len(elements) - 1) and _ties(keys, elements):
        sign = -1 if request.desc else 1
        order = list(range(len(elements)))
        pqsort(order, lambda i, j: sign * _compare(keys[i], keys[j]), start, end)
    else:
        order = sorted(range(len(elements)), key=keys.__getitem__, reverse=request.desc)
    return [elements[i] for i in order]


def _ties(keys, elements):
    """Whether two distinct elements sort by the same key."""
    return len(set(keys)) < len(set(zip(keys, elements)))


def _compare(a, b):
    return (a > b) - (a < b)


def _c_string(value):
    """value as C string functions see it: up to its first NUL."""
    return value.partition(b"\0")[0]


def _score(value):
    """What Redis sorts value by: the double strtod reads from it (up to a NUL), which
    must take it whole; None for no number, NaN, or a range error (glibc's ERANGE: an
    overflow, or a tiny result that is inexact)."""
    text = _c_string(value)
    if not text:
        return 0.0                  # strtod reads nothing and ends at the end: no error
    match = _STRTOD.fullmatch(text)
    if match is None or match.group("nan"):
        return None
    number = match.group(1).decode("ascii")
    if match.group("inf"):
        return float(number)
    if match.group("hex"):
        try:
            return float.fromhex(number)
        except OverflowError:
            return None
    score = float(number)
    if math.isinf(score):
        return None
    if abs(score) <= sys.float_info.min:
        exact = Fraction(Decimal(number))
        if exact and abs(exact) < _DBL_MIN and Fraction(score) != exact:
            return None
    return score


def _lookup(c, pattern, element):
    """lookupKeyByPattern: the element itself for '#'; else, with the pattern's first '*'
    replaced by the element, the string at that key, or with `key->field` that hash's
    field; None when there is none (no '*', no such key or field, another type)."""
    head = _c_string(pattern)       # (strchr and strstr stop at a NUL; the parts do not)
    if head == b"#":
        return element
    star = head.find(b"*")
    if star < 0:
        return None
    arrow = head.find(b"->", star + 1)
    field = pattern[arrow + 2:] if 0 <= arrow < len(head) - 2 else None
    key = pattern[:star] + element + pattern[star + 1:arrow if field is not None else len(pattern)]
    entry = c.find(key)
    if entry is None:
        return None
    if field is None:
        return entry.value_bytes() if entry.type == TYPE_STRING else None
    if entry.type != TYPE_HASH:
        return None
    value = entry.view()
    span = value_ranges(value).get(field)
    return bytes(value[span[0]:span[1]]) if span is not None else None


def _reply(c, chosen, gets):
    """The elements, or for each what each GET pattern finds (null when nothing)."""
    r = c.reply
    r.array(len(chosen) * len(gets) if gets else len(chosen))
    for element in chosen:
        if not gets:
            r.bulk(element)
        for pattern in gets:
            value = _lookup(c, pattern, element)
            if value is None:
                r.null()
            else:
                r.bulk(value)


def _store(c, key, chosen, gets):
    """The result as a list at key, in place of what was there (its TTL gone); none at all
    deletes key. Notified as Redis does: new and sortstore, or del."""
    values = chosen
    if gets:
        values = [value if value is not None else b""
                  for value in (_lookup(c, pattern, element) for element in chosen for pattern in gets)]
    if not values:
        if c.store.delete(c.db, key):
            c.notify(GENERIC, b"del", key)
    else:
        created = c.creates(key)
        with c.write_collection(key, TYPE_LIST, replace=True) as coll:
            for index, value in enumerate(values):
                coll.list_insert(index, value)
        if created:
            c.notify(NEW, b"new", key)
        c.notify(LIST, b"sortstore", key)
    c.reply.integer(len(values))
