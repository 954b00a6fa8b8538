"""Sorted set commands, as Redis 7.0: ZADD ... ZSCAN, the set algebra (ZUNION, ZINTER,
ZDIFF and their STORE forms, ZINTERCARD) and the blocking pops (BZPOPMIN, BZPOPMAX,
BZMPOP).

A sorted set is a collection of the arena (Keyspace.write_collection, TYPE_ZSET): a tree
by (score, member) for ranks and ranges and one by member for ZSCORE, changed in one
transaction per command. Its encoding is Redis's: listpack while it holds at most
zset-max-listpack-entries members of at most zset-max-listpack-value bytes, skiplist for
good after (Collection.zset_put converts as Redis's zsetAdd does); a set a command builds
starts in the encoding Redis gives it. A listpack keeps scores as text in which -0 is
written 0, so a -0 put into one is stored as 0, and ZSCAN shows a listpack's scores as
that text.

Scores are read as Redis's getDoubleFromObject reads them (the whole argument, strtod's
forms, no NaN, no overflow), range ends as its zslParseRange (strtod up to the end or a
NUL byte, "(" for an exclusive end), and replied as addReplyDouble writes them.
"""
import math
import random
import re

from .. import errors
from .._store import ENCODING_LISTPACK, ENCODING_SKIPLIST, TYPE_SET, TYPE_ZSET, WrongType
from ..config import parse_double
from ..errors import CommandError
from ..notifications import GENERIC, NEW, ZSET
from .args import INT64_MAX, c_word, index_span, parse_block_timeout, parse_int
from .blocking import serving
from .picks import bulk_size, check_repeated_reply
from .scanning import parse_cursor, parse_scan_args

RANGE_NOT_FLOAT = "ERR min or max is not a float"
RANGE_NOT_LEX = "ERR min or max not valid string range item"
NAN_SCORE = "ERR resulting score is not a number (NaN)"
WEIGHT_NOT_FLOAT = "ERR weight value is not a float"
LIMIT_NEEDS_ORDER = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
NO_SCORES_BY_LEX = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"

MIN, MAX = 0, 1                         # the end a pop takes from
POP_EVENTS = (b"zpopmin", b"zpopmax")


# --- scores -----------------------------------------------------------------------

def parse_score(arg, error=errors.NOT_FLOAT):
    """A score argument as Redis's string2d reads it."""
    value = parse_double(bytes(arg).decode("latin-1"))
    if value is None:
        raise CommandError(error)
    return value


# What C's strtod reads at the start of a string: blanks, then a hexadecimal number,
# inf, nan or a decimal number (letters in either case).
_STRTOD = re.compile(rb"[ \t\n\v\f\r]*([+-]?(?:0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?"
                     rb"|inf(?:inity)?|nan(?:\([0-9a-z_]*\))?"
                     rb"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?))", re.IGNORECASE)


def _strtod(text):
    """strtod over text as a C string: (value, whether it read all of it). An overflow
    is an infinity and an underflow 0, as zslParseRange takes them."""
    match = _STRTOD.match(text)
    if match is None:      # nothing read: strtod's end is where it started
        return 0.0, text[:1] in (b"", b"\0")
    number = match.group(1).lower()
    whole = text[match.end():match.end() + 1] in (b"", b"\0")
    unsigned = number.lstrip(b"+-")
    if unsigned.startswith(b"nan"):
        return math.nan, whole
    if not unsigned.startswith(b"0x"):
        return float(number), whole        # decimal or inf; what overflows reads as inf
    try:
        return float.fromhex(number.decode()), whole
    except OverflowError:
        return (-math.inf if number[:1] == b"-" else math.inf), whole


def _score_bound(arg):
    """One end of a score range: (score, exclusive)."""
    raw = bytes(arg)
    exclusive = raw[:1] == b"("
    value, whole = _strtod(raw[1:] if exclusive else raw)
    if not whole or math.isnan(value):
        raise CommandError(RANGE_NOT_FLOAT)
    return value, exclusive


def _double_text(score):
    """A score as addReplyDouble spells it ("%.17g", inf and -inf)."""
    return b"%.17g" % score


def _listpack_text(score):
    """A score as a listpack keeps it: an integer when the double is one within what
    Redis's double2ll takes (+-2**62), else "%.17g"."""
    if score.is_integer() and -2 ** 62 <= score <= 2 ** 62:
        return b"%d" % score
    return _double_text(score)


# --- ranges -----------------------------------------------------------------------
# A range is walked over (member, score) items, as Redis's range commands walk theirs:
# first()/last() find where the walk starts, below_max/above_min say whether an item
# still belongs, span() gives the positions a count or a removal takes.

class ScoreRange:
    """A min and a max score, each inclusive or exclusive (zslParseRange)."""

    __slots__ = ("min", "minex", "max", "maxex")

    def __init__(self, low, high):
        self.min, self.minex = _score_bound(low)
        self.max, self.maxex = _score_bound(high)

    def above_min(self, item):
        return item[1] > self.min if self.minex else item[1] >= self.min

    def below_max(self, item):
        return item[1] < self.max if self.maxex else item[1] <= self.max

    def span(self, coll):
        start = coll.zset_seek_score(self.min, self.minex)
        return start, max(start, coll.zset_seek_score(self.max, not self.maxex))

    def first(self, coll):
        start, stop = self.span(coll)
        return start if start < stop else None

    def last(self, coll):
        start, stop = self.span(coll)
        return stop - 1 if start < stop else None


# The ends of the member order, "-" and "+" (Redis's shared.minstring and maxstring).
LOWEST, HIGHEST = "-", "+"


def _lex_bound(arg):
    """One end of a lex range: (member or LOWEST/HIGHEST, exclusive)."""
    raw = bytes(arg)
    if raw[:1] in (b"-", b"+") and raw[1:2] in (b"", b"\0"):
        return (LOWEST if raw[:1] == b"-" else HIGHEST), True
    if raw[:1] in (b"(", b"["):
        return raw[1:], raw[:1] == b"("
    raise CommandError(RANGE_NOT_LEX)


def _lex_compare(a, b):
    """Redis's sdscmplex: members by their bytes, LOWEST and HIGHEST beyond all of them."""
    if a is b:
        return 0
    if a is LOWEST or b is HIGHEST:
        return -1
    if a is HIGHEST or b is LOWEST:
        return 1
    return (a > b) - (a < b)


class LexRange:
    """A min and a max member (zslParseLexRange). Redis's lex ranges assume members of
    one score: on a listpack it scans from the ends (its zzlFirstInLexRange), which this
    does too, whatever the scores; on a skiplist it searches, as this does."""

    __slots__ = ("min", "minex", "max", "maxex")

    def __init__(self, low, high):
        self.min, self.minex = _lex_bound(low)
        self.max, self.maxex = _lex_bound(high)

    def above_min(self, item):
        order = _lex_compare(item[0], self.min)
        return order > 0 if self.minex else order >= 0

    def below_max(self, item):
        order = _lex_compare(item[0], self.max)
        return order < 0 if self.maxex else order <= 0

    def _seek(self, coll, bound, past):
        if bound is LOWEST:
            return 0
        if bound is HIGHEST:
            return len(coll)
        return coll.zset_seek_lex(bound, past)

    def _may_hold(self, items):
        """zzlIsInLexRange: a range that is not empty, reaching the listpack's ends."""
        order = _lex_compare(self.min, self.max)
        if order > 0 or (order == 0 and (self.minex or self.maxex)):
            return False
        return bool(items) and self.above_min(items[-1]) and self.below_max(items[0])

    def first(self, coll):
        if coll.encoding == ENCODING_LISTPACK:
            items = coll.zset_range(0, len(coll))
            if self._may_hold(items):
                for position, item in enumerate(items):
                    if self.above_min(item):
                        return position if self.below_max(item) else None
            return None
        start, stop = self.span(coll)
        return start if start < stop else None

    def last(self, coll):
        if coll.encoding == ENCODING_LISTPACK:
            items = coll.zset_range(0, len(coll))
            if self._may_hold(items):
                for position in range(len(items) - 1, -1, -1):
                    if self.below_max(items[position]):
                        return position if self.above_min(items[position]) else None
            return None
        start, stop = self.span(coll)
        return stop - 1 if start < stop else None

    def span(self, coll):
        if coll.encoding == ENCODING_LISTPACK:
            start = self.first(coll)
            if start is None:
                return 0, 0
            return start, start + len(_walk(coll, start, False, 0, -1, self.below_max))
        start = self._seek(coll, self.min, self.minex)
        return start, max(start, self._seek(coll, self.max, not self.maxex))


_WALK_STEP = 256


def _walk(coll, start, reverse, offset, limit, keeps):
    """Redis's range walk: from position start (toward the first member when reverse),
    past offset members, then the members for which keeps(item) holds, at most limit of
    them (a negative limit: no limit). A negative offset walks off the end."""
    items = []
    if start is None or offset < 0:
        return items
    n = len(coll)
    position = start - offset if reverse else start + offset
    while limit != 0 and 0 <= position < n:
        if reverse:
            chunk = coll.zset_range(max(position + 1 - _WALK_STEP, 0), position + 1, reverse=True)
        else:
            chunk = coll.zset_range(position, min(position + _WALK_STEP, n))
        for item in chunk:
            if limit == 0 or not keeps(item):
                return items
            items.append(item)
            limit -= 1
        position += -len(chunk) if reverse else len(chunk)
    return items


# --- replies ------------------------------------------------------------------------

def _reply_pairs(c, items, nested):
    """Members each followed by its score: in [member, score] arrays when nested."""
    for member, score in items:
        if nested:
            c.reply.array(2)
        c.reply.bulk(member)
        c.reply.double(score)


def _reply_members(c, items, with_scores):
    """A range's members, with their scores as WITHSCORES gives them: flat in RESP2,
    [member, score] pairs in RESP3."""
    if not with_scores:
        c.reply.bulk_array([member for member, _ in items])
        return
    nested = c.protocol == 3
    c.reply.array(len(items) if nested else 2 * len(items))
    _reply_pairs(c, items, nested)


# --- writing ------------------------------------------------------------------------

def _limits(c):
    config = c.services.config
    return config["zset-max-listpack-entries"], config["zset-max-listpack-value"]


def _put(coll, member, score, limits):
    """Redis's insert or update of member (zset_put converts a listpack as zsetAdd
    does); a -0 that stays in a listpack is stored as the 0 it reads back as."""
    if score == 0 and math.copysign(1.0, score) < 0 and coll.encoding == ENCODING_LISTPACK:
        entries, longest = limits
        widens = coll.zset_score(member) is None and (len(coll) + 1 > entries or len(member) > longest)
        if not widens:
            score = 0.0
    return coll.zset_put(member, score, *limits)


def store(c, dst, items, encoding, event):
    """Redis's setKey of the sorted set a command made (dbDelete when it is empty): one
    commit replaces whatever dst held, its TTL gone; the events new (dst was missing) and
    event, or del. items are put in their order into a set that starts in encoding."""
    if not items:
        if c.store.delete(c.db, dst):
            c.notify(GENERIC, b"del", dst)
        c.reply.integer(0)
        return
    created = c.creates(dst)
    limits = _limits(c)
    with c.write_collection(dst, TYPE_ZSET, replace=True) as out:
        out.zset_encode_as(encoding)
        for member, score in items:
            _put(out, member, score, limits)
    if created:
        c.notify(NEW, b"new", dst)
    c.notify(ZSET, event, dst)
    c.reply.integer(len(items))


def fitting_encoding(c, items):
    """zsetConvertToListpackIfNeeded: a listpack for a set within both limits."""
    entries, longest = _limits(c)
    fits = len(items) <= entries and all(len(member) <= longest for member, _ in items)
    return ENCODING_LISTPACK if fits else ENCODING_SKIPLIST


# --- ZADD, ZINCRBY, ZREM ---------------------------------------------------------------

ZADD_OPTIONS = (b"nx", b"xx", b"ch", b"incr", b"gt", b"lt")
ADDED, UPDATED, KEPT, SKIPPED = range(4)


def _add(coll, member, score, options, limits):
    """Redis's zsetAdd of one member under ZADD's options: (outcome, its score)."""
    current = coll.zset_score(member)
    if current is None:
        if b"xx" in options:
            return SKIPPED, None
        _put(coll, member, score, limits)
        return ADDED, score
    if b"nx" in options:
        return SKIPPED, None
    if b"incr" in options:
        score += current
        if math.isnan(score):
            raise CommandError(NAN_SCORE)
    if (b"lt" in options and score >= current) or (b"gt" in options and score <= current):
        return SKIPPED, None
    if score == current:
        return KEPT, score
    _put(coll, member, score, limits)
    return UPDATED, score


def add_scores(c, key, pairs, options):
    """The write of zaddGenericCommand (ZADD, ZINCRBY, GEOADD): each (member, score) of
    pairs added under ZADD's options, and its events. ([counts by outcome], the last
    member's score)."""
    limits = _limits(c)
    counts = [0, 0, 0, 0]
    score = None
    with c.write_collection(key, TYPE_ZSET) as coll:
        created = len(coll) == 0
        if not (created and b"xx" in options):
            for member, given in pairs:
                outcome, score = _add(coll, bytes(member), given, options, limits)
                counts[outcome] += 1
    if created and counts[ADDED]:
        c.notify(NEW, b"new", key)
    if counts[ADDED] or counts[UPDATED]:
        c.notify(ZSET, b"zincr" if b"incr" in options else b"zadd", key)
    return counts, score


def _zadd(c, argv, options):
    """zaddGenericCommand: ZADD, and ZINCRBY (options {incr}), which reads options too."""
    first = 2
    while first < len(argv) and c_word(argv[first]) in ZADD_OPTIONS:
        options.add(c_word(argv[first]))
        first += 1
    if (len(argv) - first) % 2 or first == len(argv):
        raise CommandError(errors.SYNTAX)
    if {b"nx", b"xx"} <= options:
        raise CommandError("ERR XX and NX options at the same time are not compatible")
    if b"nx" in options and (b"gt" in options or b"lt" in options) or {b"gt", b"lt"} <= options:
        raise CommandError("ERR GT, LT, and/or NX options at the same time are not compatible")
    if b"incr" in options and len(argv) - first > 2:
        raise CommandError("ERR INCR option supports a single increment-element pair")
    scores = [parse_score(argv[i]) for i in range(first, len(argv), 2)]
    counts, score = add_scores(c, argv[1], zip(argv[first + 1::2], scores), options)
    added, updated = counts[ADDED], counts[UPDATED]
    if b"incr" not in options:
        c.reply.integer(added + updated if b"ch" in options else added)
    elif added + updated + counts[KEPT]:
        c.reply.double(score)
    else:
        c.reply.null()


def cmd_zadd(c, argv):
    _zadd(c, argv, set())


def cmd_zincrby(c, argv):
    _zadd(c, argv, {b"incr"})


def cmd_zrem(c, argv):
    key = argv[1]
    with c.write_collection(key, TYPE_ZSET) as coll:
        removed = sum(1 for member in argv[2:] if coll.zset_remove(member))
        emptied = len(coll) == 0
    if removed:
        c.notify(ZSET, b"zrem", key)
        if emptied:
            c.notify(GENERIC, b"del", key)
    c.reply.integer(removed)


def _remove_span(c, key, span_of, event):
    """ZREMRANGEBY*: the members at the positions span_of(coll) gives removed."""
    with c.write_collection(key, TYPE_ZSET) as coll:
        start, stop = span_of(coll) if len(coll) else (0, 0)
        removed = coll.zset_delete_range(start, stop)
        emptied = len(coll) == 0
    if removed:
        c.notify(ZSET, event, key)
        if emptied:
            c.notify(GENERIC, b"del", key)
    c.reply.integer(removed)


def cmd_zremrangebyrank(c, argv):
    start, end = parse_int(argv[2]), parse_int(argv[3])
    _remove_span(c, argv[1], lambda coll: index_span(start, end, len(coll)), b"zremrangebyrank")


def cmd_zremrangebyscore(c, argv):
    _remove_span(c, argv[1], ScoreRange(argv[2], argv[3]).span, b"zremrangebyscore")


def cmd_zremrangebylex(c, argv):
    _remove_span(c, argv[1], LexRange(argv[2], argv[3]).span, b"zremrangebylex")


# --- reads of one sorted set ----------------------------------------------------------

def cmd_zcard(c, argv):
    coll = c.collection(argv[1], TYPE_ZSET)
    c.reply.integer(len(coll) if coll is not None else 0)


def _count(c, argv, bounds):
    coll = c.collection(argv[1], TYPE_ZSET)
    start, stop = bounds.span(coll) if coll is not None else (0, 0)
    c.reply.integer(stop - start)


def cmd_zcount(c, argv):
    _count(c, argv, ScoreRange(argv[2], argv[3]))


def cmd_zlexcount(c, argv):
    _count(c, argv, LexRange(argv[2], argv[3]))


def cmd_zscore(c, argv):
    coll = c.collection(argv[1], TYPE_ZSET)
    score = coll.zset_score(argv[2]) if coll is not None else None
    if score is None:
        c.reply.null()
    else:
        c.reply.double(score)


def cmd_zmscore(c, argv):
    coll = c.collection(argv[1], TYPE_ZSET)
    c.reply.array(len(argv) - 2)
    for member in argv[2:]:
        score = coll.zset_score(member) if coll is not None else None
        if score is None:
            c.reply.null()
        else:
            c.reply.double(score)


def _rank(c, argv, reverse):
    coll = c.collection(argv[1], TYPE_ZSET)
    rank = coll.zset_rank(argv[2]) if coll is not None else None
    if rank is None:
        c.reply.null()
    else:
        c.reply.integer(len(coll) - 1 - rank if reverse else rank)


def cmd_zrank(c, argv):
    _rank(c, argv, False)


def cmd_zrevrank(c, argv):
    _rank(c, argv, True)


def cmd_zscan(c, argv):
    # Redis's order: the cursor, then the key (a missing one is an empty scan whatever the
    # options say), then the options.
    parse_cursor(argv[2])
    coll = c.collection(argv[1], TYPE_ZSET)
    if coll is None:
        cursor, items, text = 0, [], _double_text
    else:
        cursor, count, match, _ = parse_scan_args(argv, 2, allow_type=False)
        cursor, items = coll.zset_scan(cursor, count)
        if match is not None:
            items = [item for item in items if match(item[0])]
        text = _listpack_text if coll.encoding == ENCODING_LISTPACK else _double_text
    c.reply.array(2)
    c.reply.bulk(b"%d" % cursor)
    c.reply.array(2 * len(items))
    for member, score in items:
        c.reply.bulk(member)
        c.reply.bulk(text(score))


# --- ZRANGE and the older range commands ----------------------------------------------

RANK, SCORE, LEX = "rank", "score", "lex"


def _range(c, argv, kind=None, reverse=None, dst=None):
    """zrangeGenericCommand: ZRANGE (kind and direction from its options; None: not given
    yet), the older range commands (both fixed) and ZRANGESTORE (dst, its key first)."""
    key_index = 1 if dst is None else 2
    with_scores, offset, limit = False, 0, -1
    i = key_index + 3
    while i < len(argv):
        word = c_word(argv[i])
        if dst is None and word == b"withscores":
            with_scores = True
        elif word == b"limit" and len(argv) - i > 2:
            offset, limit = parse_int(argv[i + 1]), parse_int(argv[i + 2])
            i += 2
        elif reverse is None and word == b"rev":
            reverse = True
        elif kind is None and word in (b"byscore", b"bylex"):
            kind = SCORE if word == b"byscore" else LEX
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    kind, reverse = kind or RANK, bool(reverse)
    if limit != -1 and kind == RANK:
        raise CommandError(LIMIT_NEEDS_ORDER)
    if with_scores and kind == LEX:
        raise CommandError(NO_SCORES_BY_LEX)
    low, high = argv[key_index + 1], argv[key_index + 2]
    if reverse and kind != RANK:
        low, high = high, low
    if kind == RANK:
        bounds = (parse_int(low), parse_int(high))
    else:
        bounds = ScoreRange(low, high) if kind == SCORE else LexRange(low, high)
    coll = c.collection(argv[key_index], TYPE_ZSET)
    items = _range_items(coll, kind, bounds, reverse, offset, limit) if coll is not None else []
    if dst is None:
        _reply_members(c, items, with_scores)
        return
    # Redis builds the destination as a listpack unless it knows the count is over the
    # limit (a rank range), converting as members come, in the order they come.
    encoding = ENCODING_SKIPLIST if kind == RANK and len(items) > _limits(c)[0] else ENCODING_LISTPACK
    store(c, dst, items, encoding, b"zrangestore")


def _range_items(coll, kind, bounds, reverse, offset, limit):
    if kind != RANK:
        start = bounds.last(coll) if reverse else bounds.first(coll)
        return _walk(coll, start, reverse, offset, limit, bounds.above_min if reverse else bounds.below_max)
    n = len(coll)
    start, stop = index_span(*bounds, n)
    return coll.zset_range(n - stop, n - start, reverse=True) if reverse else coll.zset_range(start, stop)


def cmd_zrange(c, argv):
    _range(c, argv)


def cmd_zrangestore(c, argv):
    _range(c, argv, dst=argv[1])


def cmd_zrevrange(c, argv):
    _range(c, argv, RANK, True)


def cmd_zrangebyscore(c, argv):
    _range(c, argv, SCORE, False)


def cmd_zrevrangebyscore(c, argv):
    _range(c, argv, SCORE, True)


def cmd_zrangebylex(c, argv):
    _range(c, argv, LEX, False)


def cmd_zrevrangebylex(c, argv):
    _range(c, argv, LEX, True)


# --- ZRANDMEMBER ------------------------------------------------------------------------

ZRANDMEMBER_RANGE = "ERR value is out of range"
# WITHSCORES takes a count whose double cannot overflow: within +-LONG_MAX/2
HALF_INT64_MAX = INT64_MAX // 2


def cmd_zrandmember(c, argv):
    if len(argv) < 3:
        coll = c.collection(argv[1], TYPE_ZSET)
        if coll is None:
            c.reply.null()
        else:
            c.reply.bulk(coll.zset_at(random.randrange(len(coll)))[0])
        return
    count = parse_int(argv[2])
    if len(argv) > 4 or (len(argv) == 4 and c_word(argv[3]) != b"withscores"):
        raise CommandError(errors.SYNTAX)
    with_scores = len(argv) == 4
    if with_scores and abs(count) > HALF_INT64_MAX:
        raise CommandError(ZRANDMEMBER_RANGE)
    coll = c.collection(argv[1], TYPE_ZSET)
    if coll is None or count == 0:
        c.reply.array(0)
    elif count < 0 or count == 1:
        _reply_repeated_picks(c, coll, abs(count), with_scores)
    elif count >= len(coll):
        # the whole set, in Redis's order: from the highest score down
        _reply_members(c, coll.zset_range(0, len(coll), reverse=True), with_scores)
    else:
        _reply_members(c, [coll.zset_at(p) for p in random.sample(range(len(coll)), count)], with_scores)


def _reply_repeated_picks(c, coll, picks, with_scores):
    """picks members drawn with repetition, written as they are drawn (the reply is
    refused when it could not be sent: picks.py)."""
    n = len(coll)
    nested = with_scores and c.protocol == 3

    def smallest():
        items = coll.zset_range(0, n)
        if not with_scores:
            return min(bulk_size(member) for member, _ in items)
        return min(bulk_size(member) + _double_size(c, score) + (4 if nested else 0)
                   for member, score in items)
    check_repeated_reply(c, "ZRANDMEMBER", picks, smallest)
    # a small set is read once; from a large one each pick is found by its rank
    items = coll.zset_range(0, n) if n <= picks else None
    c.reply.array(picks if nested or not with_scores else 2 * picks)
    for _ in range(picks):
        member, score = items[random.randrange(n)] if items is not None else coll.zset_at(random.randrange(n))
        if nested:
            c.reply.array(2)
        c.reply.bulk(member)
        if with_scores:
            c.reply.double(score)


def _double_size(c, score):
    text = _double_text(score)
    return len(text) + 3 if c.protocol == 3 else bulk_size(text)


# --- ZUNION, ZINTER, ZDIFF, ZINTERCARD and their STORE forms ---------------------------

class _Input:
    """An input of the set algebra: a sorted set, a set (its members score 1), or a
    missing key (nothing)."""

    __slots__ = ("coll", "weight")

    def __init__(self, coll):
        self.coll = coll
        self.weight = 1.0

    def __len__(self):
        return len(self.coll) if self.coll is not None else 0

    def items(self):
        if self.coll is None:
            return []
        if self.coll.type == TYPE_SET:
            return [(member, 1.0) for member in self.coll.set_members()]
        return self.coll.zset_range(0, len(self.coll))

    def score(self, member):
        if self.coll is None:
            return None
        if self.coll.type == TYPE_SET:
            return 1.0 if self.coll.set_contains(member) else None
        return self.coll.zset_score(member)


def _input(c, key):
    entry = c.find(key)
    if entry is None:
        return _Input(None)
    if entry.type not in (TYPE_ZSET, TYPE_SET):
        raise WrongType()
    return _Input(entry.collection())


def _weighted(score, weight):
    product = score * weight
    return 0.0 if math.isnan(product) else product


def _sum(total, value):
    total += value
    return 0.0 if math.isnan(total) else total     # inf + -inf: Redis's sum is 0


def _min(current, value):
    return value if value < current else current


def _max(current, value):
    return value if value > current else current


AGGREGATES = {b"sum": _sum, b"min": _min, b"max": _max}


def _intersection(inputs, aggregate):
    """(member, score) of each member of the first (smallest) input found in all the
    others, its score aggregated over them in their order."""
    first, rest = inputs[0], inputs[1:]
    for member, score in first.items():
        total = _weighted(score, first.weight)
        for other in rest:
            found = other.score(member)
            if found is None:
                break
            total = aggregate(total, found * other.weight)
        else:
            yield member, total


def _union(inputs, aggregate):
    totals = {}
    for source in inputs:
        for member, score in source.items():
            value = _weighted(score, source.weight)
            totals[member] = aggregate(totals[member], value) if member in totals else value
    return list(totals.items())


def _difference(inputs):
    first, rest = inputs[0], inputs[1:]
    return [(member, score) for member, score in first.items()
            if all(other.score(member) is None for other in rest)]


UNION, INTER, DIFF = "union", "inter", "diff"
STORE_EVENTS = {UNION: b"zunionstore", INTER: b"zinterstore", DIFF: b"zdiffstore"}


def _combine(c, argv, name, op, dst=None, card_only=False):
    """zunionInterDiffGenericCommand: numkeys and keys (looked up before the options are
    read), WEIGHTS and AGGREGATE (not for ZDIFF), WITHSCORES (not for STORE forms), LIMIT
    (ZINTERCARD only)."""
    numkeys_index = 1 if dst is None else 2
    setnum = parse_int(argv[numkeys_index])
    if setnum < 1:
        raise CommandError(f"ERR at least 1 input key is needed for '{name}' command")
    first = numkeys_index + 1
    if setnum > len(argv) - first:
        raise CommandError(errors.SYNTAX)
    inputs = [_input(c, key) for key in argv[first:first + setnum]]
    aggregate, with_scores, limit = _sum, False, 0
    weighable = op != DIFF and not card_only
    i = first + setnum
    while i < len(argv):
        remaining, word = len(argv) - i, c_word(argv[i])
        if weighable and remaining > setnum and word == b"weights":
            for source, weight in zip(inputs, argv[i + 1:i + 1 + setnum]):
                source.weight = parse_score(weight, WEIGHT_NOT_FLOAT)
            i += 1 + setnum
        elif weighable and remaining >= 2 and word == b"aggregate":
            aggregate = AGGREGATES.get(c_word(argv[i + 1]))
            if aggregate is None:
                raise CommandError(errors.SYNTAX)
            i += 2
        elif dst is None and not card_only and word == b"withscores":
            with_scores = True
            i += 1
        elif card_only and remaining >= 2 and word == b"limit":
            limit = parse_int(argv[i + 1], "ERR LIMIT can't be negative")
            if limit < 0:
                raise CommandError("ERR LIMIT can't be negative")
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    if op != DIFF:
        inputs.sort(key=len)        # smallest first, equal sizes in their order (a stable qsort)
    if card_only:
        found = 0
        for _ in _intersection(inputs, aggregate):
            found += 1
            if found == limit:
                break
        c.reply.integer(found)
        return
    if op == UNION:
        items = _union(inputs, aggregate)
    elif op == INTER:
        items = list(_intersection(inputs, aggregate))
    else:
        items = _difference(inputs)
    items.sort(key=lambda item: (item[1], item[0]))
    if dst is None:
        _reply_members(c, items, with_scores)
    else:
        store(c, dst, items, fitting_encoding(c, items), STORE_EVENTS[op])


def cmd_zunion(c, argv):
    _combine(c, argv, "zunion", UNION)


def cmd_zinter(c, argv):
    _combine(c, argv, "zinter", INTER)


def cmd_zdiff(c, argv):
    _combine(c, argv, "zdiff", DIFF)


def cmd_zunionstore(c, argv):
    _combine(c, argv, "zunionstore", UNION, dst=argv[1])


def cmd_zinterstore(c, argv):
    _combine(c, argv, "zinterstore", INTER, dst=argv[1])


def cmd_zdiffstore(c, argv):
    _combine(c, argv, "zdiffstore", DIFF, dst=argv[1])


def cmd_zintercard(c, argv):
    _combine(c, argv, "zintercard", INTER, card_only=True)


# --- pops ---------------------------------------------------------------------------

POSITIVE_COUNT = "ERR value is out of range, must be positive"


def _ranged(arg, low, error):
    """Redis's getRangeLongFromObjectOrReply up to LONG_MAX, with its own error text."""
    value = parse_int(arg, error)
    if value < low:
        raise CommandError(error)
    return value


def _first_zset(c, keys):
    """genericZpopCommand's lookup: the first of keys holding a sorted set (WRONGTYPE at
    a key of another type before it), None when none does."""
    for key in keys:
        if c.store.collection(c.db, key, TYPE_ZSET, touch=True, stats=False) is not None:
            return key
    return None


def _pop(c, key, where, count):
    """Up to count members taken from the where end of the sorted set at key."""
    with c.write_collection(key, TYPE_ZSET) as coll:
        n = len(coll)
        taken = min(count, n)
        start, stop = (0, taken) if where == MIN else (n - taken, n)
        items = coll.zset_range(start, stop, reverse=where == MAX)
        coll.zset_delete_range(start, stop)
    c.notify(ZSET, POP_EVENTS[where], key)
    if taken == n:
        c.notify(GENERIC, b"del", key)
    return items


def _reply_popped(c, key, items, nested):
    """[key, member, score, ...] (BZPOPMIN), or [key, [[member, score], ...]] (ZMPOP)."""
    if nested:
        c.reply.array(2)
        c.reply.bulk(key)
        c.reply.array(len(items))
    else:
        c.reply.array(2 * len(items) + 1)
        c.reply.bulk(key)
    _reply_pairs(c, items, nested)


def _zpop(c, argv, where):
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    count = _ranged(argv[2], 0, POSITIVE_COUNT) if len(argv) == 3 else None
    key = _first_zset(c, argv[1:2])
    if key is None or count == 0:
        c.reply.array(0)
        return
    items = _pop(c, key, where, 1 if count is None else count)
    # RESP3 nests the pairs when a count was given
    nested = c.protocol == 3 and count is not None
    c.reply.array(len(items) if nested else 2 * len(items))
    _reply_pairs(c, items, nested)


def cmd_zpopmin(c, argv):
    _zpop(c, argv, MIN)


def cmd_zpopmax(c, argv):
    _zpop(c, argv, MAX)


def _mpop_arguments(argv, numkeys_index):
    """ZMPOP's and BZMPOP's numkeys keys MIN|MAX [COUNT count]: (keys, where, count)."""
    numkeys = _ranged(argv[numkeys_index], 1, "ERR numkeys should be greater than 0")
    where_index = numkeys_index + 1 + numkeys
    if where_index >= len(argv) or c_word(argv[where_index]) not in (b"min", b"max"):
        raise CommandError(errors.SYNTAX)
    where = MIN if c_word(argv[where_index]) == b"min" else MAX
    count = None
    i = where_index + 1
    while i < len(argv):
        if count is None and c_word(argv[i]) == b"count" and i + 1 < len(argv):
            count = _ranged(argv[i + 1], 1, "ERR count should be greater than 0")
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    return argv[numkeys_index + 1:where_index], where, count or 1


def cmd_zmpop(c, argv):
    keys, where, count = _mpop_arguments(argv, 1)
    key = _first_zset(c, keys)
    if key is None:
        c.reply.null_array()
    else:
        _reply_popped(c, key, _pop(c, key, where, count), nested=True)


def _blocking_pop(c, keys, where, count, timeout_at, nested):
    """blockingGenericZpopCommand: pop from the first key holding a sorted set, else wait
    for one (blocked.py serves it from the key written), or answer nil at once where a
    client may not block (MULTI, scripts)."""
    key = _first_zset(c, keys)
    if key is not None:
        _reply_popped(c, key, _pop(c, key, where, count), nested)
        return
    if not c.may_block:
        c.reply.null_array()
        return

    def serve_from(c, key):
        _reply_popped(c, key, _pop(c, key, where, count), nested)
    c.services.blocked.block_on_keys(c, keys, timeout_at, serving(TYPE_ZSET, serve_from),
                                     lambda c: c.reply.null_array())


def cmd_bzpopmin(c, argv):
    _blocking_pop(c, argv[1:-1], MIN, 1, parse_block_timeout(argv[-1]), nested=False)


def cmd_bzpopmax(c, argv):
    _blocking_pop(c, argv[1:-1], MAX, 1, parse_block_timeout(argv[-1]), nested=False)


def cmd_bzmpop(c, argv):
    keys, where, count = _mpop_arguments(argv, 2)
    _blocking_pop(c, keys, where, count, parse_block_timeout(argv[1]), nested=True)
