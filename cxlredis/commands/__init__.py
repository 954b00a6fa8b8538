"""The command registry (commands/registry.py) bound to its handlers.

Every spec must find its handler, so a missing one fails at import, not at the
first client that sends it.
"""
import importlib

from .registry import COMMANDS, all_specs, arity_fits, command_name, find, find_by_full_name, lookup
from .table import FAMILY_MODULES, SPECS

__all__ = ["COMMANDS", "SPECS", "all_specs", "arity_fits", "command_name", "find",
           "find_by_full_name", "lookup"]


def _handler_name(spec):
    return "cmd_" + spec.name.replace("|", "_").replace("-", "_")


def _bind_handlers():
    modules = {}
    for spec in SPECS:
        family = spec.family or FAMILY_MODULES[spec.group]
        if family not in modules:
            modules[family] = importlib.import_module(f"{__name__}.{family}")
        spec.handler = getattr(modules[family], _handler_name(spec), None)
        if spec.handler is None and not spec.subcommands:
            raise ImportError(f"command {spec.name!r} has no handler {_handler_name(spec)}")


_bind_handlers()
