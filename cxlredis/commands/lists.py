"""List commands, as Redis 7.0's t_list.c, over the arena's list trees.

A list is a collection (docs/internals.md, "Collections"): its elements by position in
a counted B+tree, so a push or a pop at either end, LINDEX and LSET are O(log n). Every
command changes it in one transaction (`c.write_collection`): what it sees is its own
until the with-block commits, and an error (-OOM, -WRONGTYPE of LMOVE's destination)
drops the whole change. A list left empty is deleted, as Redis deletes it.

The blocking commands (BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH) answer at once when a
key holds a list, else wait through blocked.py: a write of one of their keys offers it
to the clients waiting on it, oldest first, and each pops what its command pops from
that key (Redis 7.0's serveClientsBlockedOnListKey).
"""
from contextlib import nullcontext

from .. import errors
from .._store import TYPE_LIST
from ..errors import CommandError
from ..notifications import GENERIC, LIST, NEW
from .args import INT64_MAX, INT64_MIN, c_word, index_span, keyword, parse_block_timeout, parse_int
from .blocking import serving

LEFT, RIGHT = "left", "right"      # the head and the tail
_PUSH_EVENTS = {LEFT: b"lpush", RIGHT: b"rpush"}
_POP_EVENTS = {LEFT: b"lpop", RIGHT: b"rpop"}
INDEX_OUT_OF_RANGE = "ERR index out of range"
RANK_ZERO = ("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
             "or use negative to start from the end of the list")


# --- arguments ----------------------------------------------------------------

def _position(arg):
    """LEFT or RIGHT, as Redis's getListPositionFromObjectOrReply reads them."""
    return keyword(arg, {b"left": LEFT, b"right": RIGHT})


def _ranged(arg, low, high, error):
    """A long in [low, high], as getRangeLongFromObjectOrReply reads one given a message
    of its own: that message answers a non-integer as well as a long out of the range."""
    value = parse_int(arg, error)
    if not low <= value <= high:
        raise CommandError(error)
    return value


def _not_negative(arg, error=errors.NOT_POSITIVE):
    """getPositiveLongFromObjectOrReply: 0 or more."""
    return _ranged(arg, 0, INT64_MAX, error)


def _mpop_arguments(argv, numkeys_at):
    """(keys, where, count) of LMPOP or BLMPOP, checked in the order Redis's
    lmpopGenericCommand checks them: numkeys, the direction, then one COUNT at most."""
    numkeys = _ranged(argv[numkeys_at], 1, INT64_MAX, "ERR numkeys should be greater than 0")
    where_at = numkeys_at + 1 + numkeys
    if where_at >= len(argv):
        raise CommandError(errors.SYNTAX)
    where = _position(argv[where_at])
    count = None
    i = where_at + 1
    while i < len(argv):
        if count is None and c_word(argv[i]) == b"count" and i + 1 < len(argv):
            count = _ranged(argv[i + 1], 1, INT64_MAX, "ERR count should be greater than 0")
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    return argv[numkeys_at + 1:where_at], where, count or 1


# --- what several commands share ------------------------------------------------

def _insert(items, where, value):
    items.list_insert(0 if where == LEFT else len(items), value)


def _pop(items, where, count):
    """Up to count elements removed from the where end of items, in the order popped."""
    length = len(items)
    taken = min(count, length)
    start, stop = (0, taken) if where == LEFT else (length - taken, length)
    values = items.list_range(start, stop)
    items.delete_range(start, stop)
    if where == RIGHT:
        values.reverse()
    return values


def _popped(c, key, where, emptied):
    """Redis's listElementsRemoved: the pop's event, then del if the list went."""
    c.notify(LIST, _POP_EVENTS[where], key)
    if emptied:
        c.notify(GENERIC, b"del", key)


def _pop_from(c, key, where, count):
    """Up to count elements popped from the list at key, its events published; [] when
    the key is missing. A write's lookup: WRONGTYPE for another type."""
    with c.write_collection(key, TYPE_LIST) as items:
        values = _pop(items, where, count) if items else []
        emptied = not items
    if values:
        _popped(c, key, where, emptied)
    return values


def _move(c, source, destination, wherefrom, whereto):
    """LMOVE: an element popped from source and pushed onto destination in one change
    of both (the same list when the keys are one); the element, None when source is
    missing, in which case destination is not looked at (Redis's lmoveGenericCommand)."""
    with c.write_collection(source, TYPE_LIST) as items:
        if not items:
            return None
        created = c.creates(destination)
        same = bytes(source) == bytes(destination)
        with nullcontext(items) if same else c.write_collection(destination, TYPE_LIST) as target:
            value = _pop(items, wherefrom, 1)[0]
            _insert(target, whereto, value)
        emptied = not items
    if created:
        c.notify(NEW, b"new", destination)
    c.notify(LIST, _PUSH_EVENTS[whereto], destination)
    _popped(c, source, wherefrom, emptied)
    return value


def _walk(items, from_tail):
    """(position, element) from the head on, or from the tail back."""
    return items.list_walk(len(items) - 1, reverse=True) if from_tail else items.list_walk(0)


def _delete_positions(items, positions):
    """The elements at positions removed: the highest runs of neighbours first, so the
    positions still to go stay where they are."""
    runs = []
    for position in sorted(positions, reverse=True):
        if runs and runs[-1][0] == position + 1:
            runs[-1][0] = position
        else:
            runs.append([position, position + 1])
    for start, stop in runs:
        items.delete_range(start, stop)


def _signal_unchanged(c, key):
    """Redis signals a key as modified even when a command left it as it was (an LTRIM
    that keeps everything): a new generation tells WATCH and client tracking so."""
    entry = c.store.find(c.db, key, touch=False, stats=False)
    c.store.set_expire(entry, entry.expire_at)


def _reply_element(c, value):
    if value is None:
        c.reply.null()
    else:
        c.reply.bulk(value)


def _reply_null_array(c):
    """What a blocked list command answers on its timeout (Redis 7.0's
    replyToBlockedClientTimedOut): a null array, BLMOVE's too."""
    c.reply.null_array()


def _reply_key_element(c, key, values):
    """BLPOP's and BRPOP's [key, element]."""
    c.reply.array(2)
    c.reply.bulk(key)
    c.reply.bulk(values[0])


def _reply_key_elements(c, key, values):
    """LMPOP's and BLMPOP's [key, [elements]]."""
    c.reply.array(2)
    c.reply.bulk(key)
    c.reply.bulk_array(values)


# --- pushes and pops -------------------------------------------------------------

def _push(c, argv, where, existing_only=False):
    key = argv[1]
    created = not existing_only and c.creates(key)
    with c.write_collection(key, TYPE_LIST) as items:
        if existing_only and not items:
            c.reply.integer(0)
            return
        for value in argv[2:]:
            _insert(items, where, value)
        length = len(items)
    if created:
        c.notify(NEW, b"new", key)
    c.notify(LIST, _PUSH_EVENTS[where], key)     # once per command, as Redis
    c.reply.integer(length)


def cmd_lpush(c, argv):
    _push(c, argv, LEFT)


def cmd_rpush(c, argv):
    _push(c, argv, RIGHT)


def cmd_lpushx(c, argv):
    _push(c, argv, LEFT, existing_only=True)


def cmd_rpushx(c, argv):
    _push(c, argv, RIGHT, existing_only=True)


def _pop_command(c, argv, where, name):
    """LPOP and RPOP: one element as a bulk string, or with a count an array (null, or
    a null array with a count, for a missing key)."""
    if len(argv) > 3:
        raise CommandError(errors.wrong_arity(name))
    counted = len(argv) == 3
    count = _not_negative(argv[2]) if counted else 1
    key = argv[1]
    with c.write_collection(key, TYPE_LIST) as items:
        if not items:
            if counted:
                c.reply.null_array()
            else:
                c.reply.null()
            return
        if not count:
            c.reply.array(0)
            return
        values = _pop(items, where, count)
        emptied = not items
    _popped(c, key, where, emptied)
    if counted:
        c.reply.bulk_array(values)
    else:
        c.reply.bulk(values[0])


def cmd_lpop(c, argv):
    _pop_command(c, argv, LEFT, "lpop")


def cmd_rpop(c, argv):
    _pop_command(c, argv, RIGHT, "rpop")


def cmd_lmpop(c, argv):
    keys, where, count = _mpop_arguments(argv, 1)
    for key in keys:
        values = _pop_from(c, key, where, count)
        if values:
            _reply_key_elements(c, key, values)
            return
    c.reply.null_array()


def cmd_lmove(c, argv):
    wherefrom, whereto = _position(argv[3]), _position(argv[4])
    _reply_element(c, _move(c, argv[1], argv[2], wherefrom, whereto))


def cmd_rpoplpush(c, argv):
    _reply_element(c, _move(c, argv[1], argv[2], RIGHT, LEFT))


# --- reads ---------------------------------------------------------------------

def cmd_llen(c, argv):
    items = c.collection(argv[1], TYPE_LIST)
    c.reply.integer(len(items) if items is not None else 0)


def cmd_lrange(c, argv):
    start, stop = parse_int(argv[2]), parse_int(argv[3])
    items = c.collection(argv[1], TYPE_LIST)
    if items is None:
        c.reply.array(0)
        return
    c.reply.bulk_array(items.list_range(*index_span(start, stop, len(items))))


def cmd_lindex(c, argv):
    items = c.collection(argv[1], TYPE_LIST)
    _reply_element(c, items.list_get(parse_int(argv[2])) if items is not None else None)


def cmd_lpos(c, argv):
    element = bytes(argv[2])
    rank, count, maxlen = 1, None, 0        # count None: no COUNT, a single answer
    i = 3
    while i < len(argv):
        option, more = c_word(argv[i]), i + 1 < len(argv)
        if option == b"rank" and more:
            rank = parse_int(argv[i + 1])
            if rank == 0:
                raise CommandError(RANK_ZERO)
        elif option == b"count" and more:
            count = _not_negative(argv[i + 1], "ERR COUNT can't be negative")
        elif option == b"maxlen" and more:
            maxlen = _not_negative(argv[i + 1], "ERR MAXLEN can't be negative")
        else:
            raise CommandError(errors.SYNTAX)
        i += 2
    if rank == INT64_MIN:
        # Redis negates the rank in a C long, where it stays LONG_MIN: every match
        # qualifies (the first from the tail), and COUNT never ends the search.
        rank = -1
        count = 0 if count is not None else None
    items = c.collection(argv[1], TYPE_LIST)
    if items is None:
        if count is not None:
            c.reply.array(0)
        else:
            c.reply.null()
        return
    found, matches = [], 0
    for scanned, (position, value) in enumerate(_walk(items, rank < 0)):
        if maxlen and scanned >= maxlen:
            break
        if value == element:
            matches += 1
            if matches >= abs(rank):
                found.append(position)
                if count is None or len(found) == count:
                    break
    if count is not None:
        c.reply.array(len(found))
        for position in found:
            c.reply.integer(position)
    elif found:
        c.reply.integer(found[0])
    else:
        c.reply.null()


# --- changes in place -------------------------------------------------------------

def cmd_lset(c, argv):
    key = argv[1]
    with c.write_collection(key, TYPE_LIST) as items:
        if not items:
            raise CommandError(errors.NO_SUCH_KEY)
        index = parse_int(argv[2])
        length = len(items)
        if index < 0:
            index += length
        if not 0 <= index < length:
            raise CommandError(INDEX_OUT_OF_RANGE)
        items.list_set(index, argv[3])
    c.notify(LIST, b"lset", key)
    c.reply.ok()


def cmd_linsert(c, argv):
    side = c_word(argv[2])
    if side not in (b"before", b"after"):
        raise CommandError(errors.SYNTAX)
    key, pivot = argv[1], bytes(argv[3])
    with c.write_collection(key, TYPE_LIST) as items:
        if not items:
            c.reply.integer(0)
            return
        found = next((position for position, value in items.list_walk(0) if value == pivot), None)
        if found is None:
            c.reply.integer(-1)
            return
        items.list_insert(found + 1 if side == b"after" else found, argv[4])
        length = len(items)
    c.notify(LIST, b"linsert", key)
    c.reply.integer(length)


def cmd_lrem(c, argv):
    count = parse_int(argv[2])
    key, element = argv[1], bytes(argv[3])
    with c.write_collection(key, TYPE_LIST) as items:
        if not items:
            c.reply.integer(0)
            return
        matches = []
        for position, value in _walk(items, count < 0):
            if value == element:
                matches.append(position)
                if len(matches) == abs(count):    # 0: every match
                    break
        _delete_positions(items, matches)
        emptied = not items
    if matches:
        c.notify(LIST, b"lrem", key)
    if emptied:
        c.notify(GENERIC, b"del", key)
    c.reply.integer(len(matches))


def cmd_ltrim(c, argv):
    start, stop = parse_int(argv[2]), parse_int(argv[3])
    key = argv[1]
    with c.write_collection(key, TYPE_LIST) as items:
        if not items:
            c.reply.ok()
            return
        length = len(items)
        first, last = index_span(start, stop, length)
        items.delete_range(last, length)
        items.delete_range(0, first)
        emptied = not items
    if last - first == length:
        _signal_unchanged(c, key)
    c.notify(LIST, b"ltrim", key)
    if emptied:
        c.notify(GENERIC, b"del", key)
    c.reply.ok()


# --- blocking ------------------------------------------------------------------

def _blocking_pop(c, keys, where, count, timeout_at, reply):
    """BLPOP, BRPOP and BLMPOP: reply(c, key, elements) of the first key holding a list,
    else wait for one (answered at once as on a timeout where a client may not block)."""
    for key in keys:
        values = _pop_from(c, key, where, count)
        if values:
            reply(c, key, values)
            return
    if not c.may_block:
        c.reply.null_array()
        return

    def serve_from(c, key):
        reply(c, key, _pop_from(c, key, where, count))
    c.services.blocked.block_on_keys(c, keys, timeout_at, serving(TYPE_LIST, serve_from), _reply_null_array)


def cmd_blpop(c, argv):
    timeout_at = parse_block_timeout(argv[-1])
    _blocking_pop(c, argv[1:-1], LEFT, 1, timeout_at, _reply_key_element)


def cmd_brpop(c, argv):
    timeout_at = parse_block_timeout(argv[-1])
    _blocking_pop(c, argv[1:-1], RIGHT, 1, timeout_at, _reply_key_element)


def cmd_blmpop(c, argv):
    keys, where, count = _mpop_arguments(argv, 2)
    timeout_at = parse_block_timeout(argv[1])
    _blocking_pop(c, keys, where, count, timeout_at, _reply_key_elements)


def _blocking_move(c, argv, wherefrom, whereto, timeout_at):
    """BLMOVE and BRPOPLPUSH: LMOVE when the source holds a list, else wait for it."""
    source, destination = argv[1], argv[2]
    value = _move(c, source, destination, wherefrom, whereto)
    if value is not None:
        c.reply.bulk(value)
        return
    if not c.may_block:
        c.reply.null()
        return

    def serve_from(c, key):
        c.reply.bulk(_move(c, source, destination, wherefrom, whereto))
        # the push may serve others in turn (a chain of BLMOVEs), and tracking hears of it
        c.services.blocked.written(c, (destination,))
        c.services.tracking.written(c.store, destination, c)
    c.services.blocked.block_on_keys(c, (source,), timeout_at, serving(TYPE_LIST, serve_from), _reply_null_array)


def cmd_blmove(c, argv):
    wherefrom, whereto = _position(argv[3]), _position(argv[4])
    _blocking_move(c, argv, wherefrom, whereto, parse_block_timeout(argv[5]))


def cmd_brpoplpush(c, argv):
    _blocking_move(c, argv, RIGHT, LEFT, parse_block_timeout(argv[3]))
