"""Set commands, as Redis 7.0's t_set.c.

A set is a collection in the arena (Keyspace.collection / write_collection) in Redis 7.0's
two encodings: an intset while every member is an integer (string2ll) and there are at
most set-max-intset-entries of them, its members in numeric order; a hashtable otherwise,
for good (Collection.set_add converts as setTypeAdd does). "The set's order" is the
Collection's: numeric for an intset, by member hash for a hashtable (Redis's dict order,
which no client may rely on).

SUNION, SDIFF and SPOP of a whole set gather their result in a new set and reply from
it, so they answer in numeric order whenever that set is an intset; the *STORE commands
store such a set. Whether it is one follows from what Redis put into it.
"""
import random

from .. import errors
from .._store import ENCODING_HASHTABLE, ENCODING_INTSET, TYPE_SET
from ..errors import CommandError
from ..notifications import GENERIC, NEW, SET
from .args import c_word, is_int64, parse_int
from .picks import bulk_size, check_repeated_reply, parse_count
from .scanning import parse_cursor, parse_scan_args

# SPOP with a count keeps the set and removes random members while what remains is more
# than a fifth of the count; otherwise it rebuilds the set from the members that remain.
SPOP_MOVE_STRATEGY_MUL = 5
NUMKEYS_NOT_POSITIVE = "ERR numkeys should be greater than 0"
NUMKEYS_OVER_ARGS = "ERR Number of keys can't be greater than number of args"
LIMIT_NEGATIVE = "ERR LIMIT can't be negative"


def _max_intset(c):
    return c.services.config["set-max-intset-entries"]


def _intset_holds(members, max_intset):
    """Whether a set Redis builds of these members alone is an intset."""
    return len(members) <= max_intset and all(is_int64(member) for member in members)


def _reply_members(c, members):
    c.reply.set(len(members))
    for member in members:
        c.reply.bulk(member)


def _reply_gathered(c, members, intset):
    """A result Redis gathers in a set of its own, in that set's order."""
    _reply_members(c, sorted(members, key=int) if intset else members)


def _refill(coll, members, intset, max_intset):
    """Empty coll (a write) and fill it with members as a new set of that encoding."""
    coll.delete_range(0, len(coll))
    coll.set_encode_as(ENCODING_INTSET if intset else ENCODING_HASHTABLE)
    for member in members:
        coll.set_add(member, max_intset)


def _read_sets(c, keys):
    """The set at each key, None where missing, looked up in order as Redis does: a key of
    another type answers WRONGTYPE whatever was missing before it."""
    return [c.collection(key, TYPE_SET) for key in keys]


# ---- one set ----

def cmd_sadd(c, argv):
    key, max_intset = argv[1], _max_intset(c)
    created = c.creates(key)
    with c.write_collection(key, TYPE_SET) as coll:
        added = sum(coll.set_add(member, max_intset) for member in argv[2:])
    if added:
        if created:
            c.notify(NEW, b"new", key)
        c.notify(SET, b"sadd", key)
    c.reply.integer(added)


def cmd_srem(c, argv):
    key, removed = argv[1], 0
    with c.write_collection(key, TYPE_SET) as coll:
        for member in argv[2:]:
            if coll.set_remove(member):
                removed += 1
                if not len(coll):
                    break
        emptied = not len(coll)
    if removed:
        c.notify(SET, b"srem", key)
        if emptied:
            c.notify(GENERIC, b"del", key)
    c.reply.integer(removed)


def cmd_smembers(c, argv):
    coll = c.collection(argv[1], TYPE_SET)
    _reply_members(c, coll.set_members() if coll is not None else [])


def cmd_sismember(c, argv):
    coll = c.collection(argv[1], TYPE_SET)
    c.reply.integer(1 if coll is not None and coll.set_contains(argv[2]) else 0)


def cmd_smismember(c, argv):
    coll = c.collection(argv[1], TYPE_SET)
    c.reply.array(len(argv) - 2)
    for member in argv[2:]:
        c.reply.integer(1 if coll is not None and coll.set_contains(member) else 0)


def cmd_scard(c, argv):
    coll = c.collection(argv[1], TYPE_SET)
    c.reply.integer(len(coll) if coll is not None else 0)


def cmd_smove(c, argv):
    source, destination, member = argv[1], argv[2], argv[3]
    with c.write_collection(source, TYPE_SET) as src:
        created = c.find(destination, for_write=True) is None     # Redis looks both up first
        if not len(src):                # a missing source: 0, whatever the destination is
            c.reply.integer(0)
            return
        if bytes(source) == bytes(destination):
            c.reply.integer(1 if src.set_contains(member) else 0)
            return
        # opened inside the source's write: a WRONGTYPE or an -OOM leaves both as they were
        with c.write_collection(destination, TYPE_SET) as dst:
            moved = src.set_remove(member)
            added = moved and dst.set_add(member, _max_intset(c))
        emptied = not len(src)
    if moved:
        c.notify(SET, b"srem", source)
        if emptied:
            c.notify(GENERIC, b"del", source)
    if added:
        if created:
            c.notify(NEW, b"new", destination)
        c.notify(SET, b"sadd", destination)
    c.reply.integer(1 if moved else 0)


def cmd_spop(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    if len(argv) == 3:
        count = parse_int(argv[2], errors.NOT_POSITIVE)
        if count < 0:
            raise CommandError(errors.NOT_POSITIVE)
        _spop_count(c, argv[1], count)
        return
    key = argv[1]
    with c.write_collection(key, TYPE_SET) as coll:
        if not len(coll):
            c.reply.null()
            return
        member = coll.set_member_at(random.randrange(len(coll)))
        coll.set_remove(member)
        emptied = not len(coll)
    c.notify(SET, b"spop", key)
    if emptied:
        c.notify(GENERIC, b"del", key)
    c.reply.bulk(member)


def _spop_count(c, key, count):
    max_intset = _max_intset(c)
    with c.write_collection(key, TYPE_SET) as coll:
        size = len(coll)
        if not size or not count:
            c.reply.set(0)
            return
        remaining = max(size - count, 0)
        if not remaining:
            # the whole set, replied from the union Redis gathers it in
            popped = coll.set_members()
            coll.delete_range(0, size)
        elif remaining * SPOP_MOVE_STRATEGY_MUL > count:
            popped = [coll.set_member_at(pos) for pos in random.sample(range(size), count)]
            for member in popped:
                coll.set_remove(member)
        else:
            # Redis moves the members that remain into a new set, whose encoding is theirs
            # (a hashtable may become an intset again), and replies with the rest in order
            members = coll.set_members()
            kept_at = set(random.sample(range(size), remaining))
            kept = [members[pos] for pos in kept_at]
            popped = [member for pos, member in enumerate(members) if pos not in kept_at]
            _refill(coll, kept, _intset_holds(kept, max_intset), max_intset)
    c.notify(SET, b"spop", key)
    if not remaining:
        c.notify(GENERIC, b"del", key)
        _reply_gathered(c, popped, _intset_holds(popped, max_intset))
    else:
        _reply_members(c, popped)


def cmd_srandmember(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    if len(argv) == 2:
        coll = c.collection(argv[1], TYPE_SET)
        if coll is None:
            c.reply.null()
        else:
            c.reply.bulk(coll.set_member_at(random.randrange(len(coll))))
        return
    count = parse_count(argv[2])
    coll = c.collection(argv[1], TYPE_SET)
    size = len(coll) if coll is not None else 0
    if not size or not count:
        c.reply.array(0)
        return
    if count < 0 or count == 1:
        _reply_repeated_picks(c, coll, abs(count))
    elif count >= size:
        c.reply.bulk_array(coll.set_members())
    else:
        c.reply.bulk_array([coll.set_member_at(pos) for pos in random.sample(range(size), count)])


def _reply_repeated_picks(c, coll, repeats):
    """repeats random members, each picked from the whole set."""
    size = len(coll)
    members = coll.set_members() if repeats >= size else None
    check_repeated_reply(c, "SRANDMEMBER", repeats, lambda: min(map(bulk_size, coll.set_members())))
    c.reply.array(repeats)
    for _ in range(repeats):
        pos = random.randrange(size)
        c.reply.bulk(members[pos] if members is not None else coll.set_member_at(pos))


def cmd_sscan(c, argv):
    # Redis's order: the cursor, then the key (a missing one is an empty scan whatever the
    # options say), then the options.
    cursor = parse_cursor(argv[2])
    coll = c.collection(argv[1], TYPE_SET)
    next_cursor, members = 0, []
    if coll is not None:
        _, count, match, _ = parse_scan_args(argv, 2, allow_type=False)
        next_cursor, members = coll.set_scan(cursor, count)
        members = [member for member in members if match is None or match(member)]
    c.reply.array(2)
    c.reply.bulk(b"%d" % next_cursor)
    c.reply.bulk_array(members)


# ---- several sets ----

def _intersection(c, keys, limit=0):
    """The members of every set at keys (none when one is missing), in the order of the
    smallest set, which Redis walks; at most limit of them (0: all)."""
    sets = _read_sets(c, keys)
    if any(coll is None for coll in sets):
        return []
    by_size = sorted({bytes(key): coll for key, coll in zip(keys, sets)}.values(), key=len)
    smallest, others = by_size[0], by_size[1:]
    found = []
    for member in smallest.set_members():
        if all(other.set_contains(member) for other in others):
            found.append(member)
            if len(found) == limit:
                break
    return found


def _union(c, keys):
    """(members of any set at keys, whether the set Redis gathers them in is an intset)."""
    union = {}
    for coll in _read_sets(c, keys):
        if coll is not None:
            union.update(dict.fromkeys(coll.set_members()))
    members = list(union)
    return members, _intset_holds(members, _max_intset(c))


def _difference(c, keys):
    """(members of the first set in none of the others, whether the set Redis gathers them
    in is an intset). Redis picks one of two algorithms by the sets' sizes: the first adds
    only the members it keeps, the second copies the whole first set then removes, so the
    result keeps the encoding that copy had (a hashtable stays one)."""
    sets = _read_sets(c, keys)
    first, max_intset = sets[0], _max_intset(c)
    first_key = bytes(keys[0])
    if first is None or any(coll is not None and bytes(key) == first_key
                            for key, coll in zip(keys[1:], sets[1:])):
        return [], True
    others = [coll for coll in sets[1:] if coll is not None]
    members = first.set_members()
    kept = [member for member in members if not any(other.set_contains(member) for other in others)]
    algorithm_one_work = len(members) * (1 + len(others)) // 2
    algorithm_two_work = len(members) + sum(len(other) for other in others)
    gathered = kept if algorithm_one_work <= algorithm_two_work else members
    return kept, _intset_holds(gathered, max_intset)


def cmd_sinter(c, argv):
    _reply_members(c, _intersection(c, argv[1:]))


def cmd_sunion(c, argv):
    _reply_gathered(c, *_union(c, argv[1:]))


def cmd_sdiff(c, argv):
    _reply_gathered(c, *_difference(c, argv[1:]))


def cmd_sintercard(c, argv):
    numkeys = parse_int(argv[1], NUMKEYS_NOT_POSITIVE)
    if numkeys < 1:
        raise CommandError(NUMKEYS_NOT_POSITIVE)
    if numkeys > len(argv) - 2:
        raise CommandError(NUMKEYS_OVER_ARGS)
    limit, i = 0, 2 + numkeys
    while i < len(argv):
        if c_word(argv[i]) != b"limit" or i + 1 == len(argv):
            raise CommandError(errors.SYNTAX)
        limit = parse_int(argv[i + 1], LIMIT_NEGATIVE)
        if limit < 0:
            raise CommandError(LIMIT_NEGATIVE)
        i += 2
    c.reply.integer(len(_intersection(c, argv[2:2 + numkeys], limit)))


def _store(c, destination, members, intset, event):
    """Redis's setKey of a result at destination (what it held replaced, its TTL gone), or
    destination deleted when the result is empty; the reply is the result's size."""
    existing = c.find(destination, for_write=True)
    # one commit replaces whatever destination held (its TTL gone), or deletes it
    with c.write_collection(destination, TYPE_SET, replace=True) as coll:
        _refill(coll, members, intset, _max_intset(c))
    if not members:
        if existing is not None:
            c.notify(GENERIC, b"del", destination)
        c.reply.integer(0)
        return
    if existing is None:
        c.notify(NEW, b"new", destination)
    c.notify(SET, event, destination)
    c.reply.integer(len(members))


def cmd_sinterstore(c, argv):
    members = _intersection(c, argv[2:])
    _store(c, argv[1], members, _intset_holds(members, _max_intset(c)), b"sinterstore")


def cmd_sunionstore(c, argv):
    _store(c, argv[1], *_union(c, argv[2:]), b"sunionstore")


def cmd_sdiffstore(c, argv):
    _store(c, argv[1], *_difference(c, argv[2:]), b"sdiffstore")
