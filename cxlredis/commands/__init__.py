"""The command registry: the spec table bound to its handlers.

COMMANDS maps a lowercase top-level name to its CommandSpec; a container's
subcommands hang off `spec.subcommands` keyed by the lowercase subcommand.
Every spec must find its handler, so a missing one fails at import, not at
the first client that sends it.
"""
import importlib

from .table import FAMILY_MODULES, SPECS


def _handler_name(spec):
    return "cmd_" + spec.name.replace("|", "_").replace("-", "_")


def _build():
    commands = {}
    modules = {}
    for spec in SPECS:
        family = spec.family or FAMILY_MODULES[spec.group]
        if family not in modules:
            modules[family] = importlib.import_module(f"{__name__}.{family}")
        spec.handler = getattr(modules[family], _handler_name(spec), None)
        container = spec.container
        if container is None:
            commands[spec.name] = spec
        else:
            commands[container].subcommands[spec.name.split("|", 1)[1]] = spec
    for spec in SPECS:
        if spec.handler is None and not spec.subcommands:
            raise ImportError(f"command {spec.name!r} has no handler {_handler_name(spec)}")
    return commands


COMMANDS = _build()


def all_specs():
    """Every command and subcommand, containers first."""
    for spec in COMMANDS.values():
        yield spec
        yield from spec.subcommands.values()
