"""Where a call's keys are, from its command's key specs: the one key extractor.

The ACL checks key patterns at these positions, COMMAND GETKEYS answers them, and
cluster slot checks hash them. Positions follow the key specs (begin_search by
index, find_keys by range), as Redis's getKeysFromCommandWithSpecs does; indexes
past the arguments are skipped (a variadic command with too few arguments has no
such key).
"""
from .table import READ, WRITE

__all__ = ("READ", "WRITE", "key_arguments", "key_positions")


class _KeyPlan:
    """A command's key specs, prepared: fixed positions (most commands, found without
    walking the key specs), or ranges to walk for each call."""

    __slots__ = ("ranges", "fixed", "access_from_arguments")

    def __init__(self, spec):
        self.ranges = [(ks.index, ks.last_key, ks.key_step, ks.limit, ks.access) for ks in spec.key_specs]
        variable = any("variable_flags" in ks.flags for ks in spec.key_specs)
        self.access_from_arguments = spec.key_access if variable else None
        fixed = tuple((index, access) for first, last_key, step, _, access in self.ranges
                      for index in range(first, first + last_key + 1, step))
        # Usable as is when every key has a fixed place within the arguments the arity demands.
        static = all(last_key >= 0 for _, last_key, _, _, _ in self.ranges)
        self.fixed = fixed if static and all(i < abs(spec.arity) for i, _ in fixed) else None


_plans = {}


def key_arguments(spec, argv):
    """(argument index, READ/WRITE access it needs) of every key argument of a call."""
    plan = _plans.get(spec.name)
    if plan is None:
        plan = _plans[spec.name] = _KeyPlan(spec)
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


def key_positions(spec, argv):
    """The argument indexes of a call's keys, in key-spec order."""
    return [index for index, _ in key_arguments(spec, argv)]
