"""The libraries Redis 7.0 gives scripts besides Lua's own (bit, struct, cjson and
cmsgpack), written in Python: lupa's stock Lua 5.1 has none of them, and its scripts
see them as Redis's C ones (lua/sandbox.lua makes each table read-only).

Each module's functions(lua, null) gives its library's table as a dict: the name a
script calls → a Python function taking the Lua arguments (base.py) or a value. lua is
the runtime, for the tables a function hands back; null is cjson.null."""
from . import bitop

LIBRARIES = {"bit": bitop}


def library_tables(lua, null):
    """name → Lua table of every library, for the sandbox."""
    return lua.table_from({
        name.encode(): lua.table_from({key.encode(): value for key, value in module.functions(lua, null).items()})
        for name, module in LIBRARIES.items()})
