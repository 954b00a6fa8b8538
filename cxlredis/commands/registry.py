"""The command table as a registry: names → specs, and the one lookup everyone uses.

COMMANDS maps a lowercase top-level name to its CommandSpec; a container's
subcommands hang off `spec.subcommands` keyed by the lowercase subcommand. This
module knows the table only, not the handlers (commands/__init__.py binds them), so
the handler modules themselves may use it.
"""
from .. import errors
from .table import SPECS


def _tree():
    commands = {}
    for spec in SPECS:
        container = spec.container
        if container is None:
            commands[spec.name] = spec
        else:
            commands[container].subcommands[spec.name.split("|", 1)[1]] = spec
    return commands


COMMANDS = _tree()


# Whether every command of the C fast path still answers to its own name (rename-command).
fast_names_intact = True


def rename(old, new):
    """redis.conf's `rename-command old new`: the command answers to `new` from now on, or
    to no name at all when `new` is empty. It keeps its own name everywhere else (ACL
    rules, COMMAND INFO's reply), as in Redis. Raises ValueError with Redis's reason."""
    global fast_names_intact
    old, new = command_name(old.encode()), command_name(new.encode())
    spec = COMMANDS.get(old)
    if spec is None:
        raise ValueError("No such command in rename-command")
    if new and new in COMMANDS:
        raise ValueError("Target command name already exists")
    del COMMANDS[old]
    if new:
        COMMANDS[new] = spec
    _BY_RAW_NAME.clear()
    fast_names = {s.name for s in SPECS if s.fast_op >= 0}
    if old in fast_names or new in fast_names:
        fast_names_intact = False       # the fast path knows the commands by their names


def all_specs():
    """Every command and subcommand, containers first."""
    for spec in COMMANDS.values():
        yield spec
        yield from spec.subcommands.values()


def command_name(arg):
    """A command or subcommand name as sent → the table's key: ASCII case folded, as
    Redis's case-insensitive dict compares."""
    return bytes(arg).lower().decode("utf-8", "replace")


# argv[0] exactly as clients send it ("GET", "get") → its top-level spec: skips the
# lower-casing and decoding on the hot path. Bounded, since every case variant is a key.
_BY_RAW_NAME = {}
_RAW_NAME_CACHE_MAX = 4096


def find(argv):
    """The spec a call names: its command, or the subcommand when the command is a
    container and argv has one. None for an unknown command or subcommand."""
    raw = argv[0]
    spec = _BY_RAW_NAME.get(raw) if type(raw) is bytes else None
    if spec is None:
        spec = COMMANDS.get(command_name(raw))
        if spec is None:
            return None
        if type(raw) is bytes and len(_BY_RAW_NAME) < _RAW_NAME_CACHE_MAX:
            _BY_RAW_NAME[raw] = spec
    if spec.subcommands and len(argv) >= 2:
        return spec.subcommands.get(command_name(argv[1]))
    return spec


def find_by_full_name(arg):
    """The spec of a "command" or "container|sub" name, as COMMAND INFO/DOCS and LATENCY
    HISTOGRAM take them; None if there is none."""
    container, _, sub = command_name(arg).partition("|")
    spec = COMMANDS.get(container)
    if spec is not None and sub:
        return spec.subcommands.get(sub)
    return spec


def arity_fits(spec, argc):
    """Whether argc arguments (the name included) fit the spec's arity."""
    return argc == spec.arity if spec.arity > 0 else argc >= -spec.arity


def lookup(argv):
    """(spec, error) for dispatch: the spec a call names (None if unknown) and the
    exact error Redis gives for it, if any (unknown command, subcommand, arity)."""
    spec = find(argv)
    if spec is None:
        if COMMANDS.get(command_name(argv[0])) is None:
            return None, errors.unknown_command(argv)
        return None, errors.unknown_subcommand(argv[1], argv[0])
    if not arity_fits(spec, len(argv)):
        return spec, errors.wrong_arity(spec.name)
    return spec, None
