"""Where a call's keys are, from its command's key specs: the one key extractor.

The ACL checks key patterns at these positions, COMMAND GETKEYS answers them, and
cluster slot checks hash them. Positions follow the key specs (begin_search by index,
find_keys by range or keynum), as Redis's getKeysFromCommandWithSpecs does. For the ACL
and the cluster, indexes past the arguments are skipped (a variadic command with too few
arguments has no such key); COMMAND GETKEYS answers as Redis does, that such a call has
no keys at all (key_flags). Specs found by keyword (MIGRATE's KEYS) are searched for as
Redis's getKeysUsingKeySpecs does, and when one is incomplete or unknown (or out of the
arguments) the command's own get_keys answers instead, as Redis falls back to the
command's getkeys_proc.
"""
import re

from .args import is_int64
from .table import READ, WRITE

__all__ = ("READ", "WRITE", "key_arguments", "key_flags", "key_positions")

# The order in which Redis lists a key's flags (COMMAND GETKEYSANDFLAGS, key specs).
KEY_FLAG_ORDER = ("RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key",
                  "incomplete", "variable_flags")
# A key spec flagged variable_flags: the flags its command's key_access gives, by access,
# as Redis's getkeys_proc sets them (SET's with GET and without, BITFIELD's).
_FLAGS_OF_ACCESS = {READ: ("RO", "access"), WRITE: ("OW", "update"),
                    READ | WRITE: ("RW", "access", "update")}


class _KeyPlan:
    """A command's key specs, prepared: fixed positions (most commands, found without
    walking the key specs), ranges to walk for each call, or specs to search (by
    keyword, or incomplete or unknown ones) with the command's get_keys behind them."""

    __slots__ = ("ranges", "fixed", "access_from_arguments", "searched", "spec")

    def __init__(self, spec, key_specs):
        # Key specs with a keyword, or incomplete or unknown ones, walked with Redis's checks.
        self.searched = None
        if any(_searched_for(ks) for ks in key_specs):
            self.searched = key_specs
            self.spec = spec
            return
        self.ranges = [(ks.index, ks.last_key, ks.key_step, ks.limit, ks.access) for ks in key_specs]
        variable = any("variable_flags" in ks.flags for ks in key_specs)
        self.access_from_arguments = spec.key_access if variable else None
        fixed = tuple((index, access) for first, last_key, step, _, access in self.ranges
                      for index in range(first, first + last_key + 1, step))
        # Usable as is when every key has a fixed place within the arguments the arity demands.
        static = all(last_key >= 0 for _, last_key, _, _, _ in self.ranges)
        self.fixed = fixed if static and all(i < abs(spec.arity) for i, _ in fixed) else None


_plans = {}


def _searched_for(ks):
    """Whether a key spec's keys are searched for (not at places fixed by the arity)."""
    return ks.keyword or ks.keynum or ks.unknown or "incomplete" in ks.flags


def key_arguments(spec, argv, include_not_keys=False):
    """(argument index, READ/WRITE access it needs) of every key argument of a call. Key
    specs flagged not_key (shard channels) count only with include_not_keys: they route a
    cluster call, but are no keys to the ACL or COMMAND GETKEYS."""
    plan = _plans.get((spec.name, include_not_keys))
    if plan is None:
        key_specs = tuple(ks for ks in spec.key_specs if include_not_keys or "not_key" not in ks.flags)
        plan = _plans[spec.name, include_not_keys] = _KeyPlan(spec, key_specs)
    if plan.searched is not None:
        return _searched_keys(plan, argv)
    if plan.access_from_arguments is not None:
        access = plan.access_from_arguments(argv)
        if plan.fixed is not None:
            return [(index, access) for index, _ in plan.fixed]
    elif plan.fixed is not None:
        return plan.fixed
    argc = len(argv)
    found = []
    for first, last_key, step, limit, spec_access in plan.ranges:
        if last_key >= 0:
            last = first + last_key
        elif limit:
            last = first + (argc - first) // limit + last_key
        else:
            last = argc + last_key
        for index in range(first, last + 1, step):
            if index < argc:
                found.append((index, access if plan.access_from_arguments else spec_access))
    return found


def _keyword_end(ks, argv):
    """Where the keys of a keyword spec start: after its keyword, searched for from
    startfrom (from the end when negative, then backwards, down to argument 2); None
    when it is not there."""
    argc = len(argv)
    start = ks.startfrom if ks.startfrom > 0 else argc + ks.startfrom
    end, step = (argc - 1, 1) if ks.startfrom > 0 else (1, -1)
    keyword = ks.keyword.encode().lower()
    for index in range(start, end, step):
        if not 1 <= index < argc:
            break
        if bytes(argv[index]).lower() == keyword:
            return index + 1
    return None


def _searched_keys(plan, argv):
    return [(index, ks.access) for index, ks in _searched(plan.searched, plan.spec, argv)]


def _searched(key_specs, spec, argv):
    """Redis's getKeysUsingKeySpecs, then its fallback to the command's getkeys_proc:
    (index, the key spec whose flags it has) of each key."""
    argc = len(argv)
    found = []
    for ks in key_specs:
        if ks.unknown:
            return _fallback(spec, argv)
        if ks.keynum:
            keys = _counted_keys(ks, argv)
            if keys is None:                # no valid count: no keys (EVAL's getkeys_proc agrees)
                return []
            found += [(index, ks) for index in keys]
            continue
        first = _keyword_end(ks, argv) if ks.keyword else ks.index
        if first is None:
            continue                # a keyword not in the call: the spec has no keys
        if ks.last_key >= 0:
            last = first + ks.last_key
        elif ks.limit:
            last = first + (argc - first) // ks.limit + ks.last_key
        else:
            last = argc + ks.last_key
        if last >= argc or last < first or first >= argc or "incomplete" in ks.flags:
            return _fallback(spec, argv)
        found += [(index, ks) for index in range(first, last + 1, ks.key_step)]
    return found


def _fallback(spec, argv):
    """The keys of the command's get_keys (Redis's getkeys_proc), each with the key spec
    whose flags it gives them; none without one."""
    if spec.get_keys is None:
        return []
    return [(index, spec.key_specs[number]) for index, number in spec.get_keys(argv)]


def _counted_keys(ks, argv):
    """The keys of a keynum spec (EVAL's and FCALL's numkeys, then that many keys), None
    when there are none. A count the spec cannot use (no integer, below 1, more keys
    than arguments) is read again as C's atoi reads it (" 1" is 1, 2**32 + 1 is 1):
    Redis then falls back to those commands' getkeys_proc, which does, and which finds
    no keys at all, a ZUNIONSTORE's destination neither, for a count below 1."""
    keynumidx, firstkey, keystep = ks.keynum
    if ks.index + keynumidx >= len(argv):
        return None
    first = ks.index + firstkey
    count = _spec_count(ks, argv)
    if count is None:
        count = c_atoi(bytes(argv[ks.index + keynumidx]))
        if count < 1 or count > (len(argv) - first) // keystep:
            return None
    return range(first, first + count * keystep, keystep)


def _spec_count(ks, argv):
    """The count of a keynum spec as the spec itself reads it (a whole int64, not
    negative, then cast to a C int that must be at least 1 with its keys within the
    arguments); None where Redis leaves it to the getkeys_proc."""
    keynumidx, firstkey, keystep = ks.keynum
    if ks.index + keynumidx >= len(argv):
        return None
    raw = bytes(argv[ks.index + keynumidx])
    count = int(raw) if is_int64(raw) else -1
    if count < 0:
        return None
    count = ((count + (1 << 31)) % (1 << 32)) - (1 << 31)
    if count < 1 or ks.index + firstkey + (count - 1) * keystep >= len(argv):
        return None
    return count


_ATOI = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def c_atoi(raw):
    """glibc's atoi: leading space, a sign and digits (0 if none); strtol's clamp to a
    long, then the cast to int."""
    match = _ATOI.match(raw)
    if match is None:
        return 0
    value = max(-(1 << 63), min(int(match.group(1)), (1 << 63) - 1))
    return ((value + (1 << 31)) % (1 << 32)) - (1 << 31)


def key_positions(spec, argv, include_not_keys=False):
    """The argument indexes of a call's keys, in key-spec order (see key_arguments)."""
    return [index for index, _ in key_arguments(spec, argv, include_not_keys)]


def key_flags(spec, argv):
    """(argument index, flags) of every key of a call, as COMMAND GETKEYS and
    GETKEYSANDFLAGS answer them: each with the flags of the key spec that found it, in
    Redis's order. A spec flagged variable_flags gives the flags its command's key_access
    reads from the arguments; keys the command's get_keys found (a spec could not) have
    the flags of the key spec it names, as Redis's getkeys_procs set them. The specs are
    walked as Redis walks them (_searched), so a range that starts past the arguments
    leaves the call with no keys (PFMERGE with its destkey alone), where the ACL and the
    cluster (key_arguments) still check that one key."""
    key_specs = tuple(ks for ks in spec.key_specs if "not_key" not in ks.flags)
    keys = _searched(key_specs, spec, argv)
    if any(ks.keynum and _spec_count(ks, argv) is None for ks in key_specs):
        # Redis 7.0's genericGetKeys answered (a count such as "+1" or " 1"): the counted
        # keys, then a destination, none with flags
        return [(index, ()) for index, ks in keys if ks.keynum] + \
               [(index, ()) for index, ks in keys if not ks.keynum]
    found = []
    for index, ks in keys:
        flags = _FLAGS_OF_ACCESS[spec.key_access(argv)] if "variable_flags" in ks.flags else ks.flags
        found.append((index, tuple(flag for flag in KEY_FLAG_ORDER if flag in flags)))
    return found
