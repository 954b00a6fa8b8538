"""The libraries Redis 7.0 gives scripts besides Lua's own (bit, struct, cjson and
cmsgpack), written in Python: lupa's stock Lua 5.1 has none of them, and its scripts
see them as Redis's C ones (lua/sandbox.lua makes each table read-only).

Each module's functions(lua, null, scope) gives its library's table as a dict: the name
a script calls → a Python function taking the Lua arguments (base.py) or a value. lua is
the runtime, for the tables a function hands back; null is cjson.null; scope() names the
namespace (tenant) of the script running, for the state a library keeps between scripts
(cjson's settings): one runtime serves every tenant, and none may change another's."""
from . import bitop, cjson, cmsgpack, structs

LIBRARIES = {"bit": bitop, "cjson": cjson, "cmsgpack": cmsgpack, "struct": structs}


def library_tables(lua, null, scope):
    """name → Lua table of every library, for the sandbox."""
    return lua.table_from({
        name.encode(): lua.table_from({key.encode(): value
                                       for key, value in module.functions(lua, null, scope).items()})
        for name, module in LIBRARIES.items()})


def forget(namespace):
    """SCRIPT FLUSH, or the tenant is gone: its library state starts over, as Redis's
    does with the new Lua VM SCRIPT FLUSH makes."""
    cjson.forget(namespace)
