"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FCALL, FCALL_RO and FUNCTION (the engine
is scripting.Scripts, the libraries functions.py, the debugger of SCRIPT DEBUG ldb.py).

A script or function runs in the caller's tenant: its redis.call commands see the
caller's keyspace and are checked against the caller's ACL user, and the script cache
and the function libraries are the tenant's own.
"""
from .. import errors, ldb
from ..errors import CommandError
from ..functions import ENGINE, Libraries, read_payload
from ..scripting import NOSCRIPT, SHEBANG_FLAGS
from .args import parse_int, upper
from .connection import reply_help

SCRIPT_HELP = (
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
)


def cmd_eval(c, argv):
    _eval(c, argv, readonly=False)


def cmd_eval_ro(c, argv):
    _eval(c, argv, readonly=True)


def _eval(c, argv, readonly):
    def find_script():
        return c.services.scripts.load(c.tenant, bytes(argv[1]))

    if c.lua_debug is None:
        _run(c, argv, find_script, readonly)
    else:
        # the whole EVAL is the session's: its errors come after <endsession>, as in Redis
        ldb.debug_eval(c, argv, lambda session: _run(c, argv, find_script, readonly, session))


def cmd_evalsha(c, argv):
    _evalsha(c, argv, readonly=False)


def cmd_evalsha_ro(c, argv):
    _evalsha(c, argv, readonly=True)


def _evalsha(c, argv, readonly):
    if len(argv[1]) != 40:              # no sha1 at all: Redis answers before anything else
        raise CommandError(NOSCRIPT)
    if c.lua_debug is not None:
        raise CommandError("ERR Please use EVAL instead of EVALSHA for debugging")
    _run(c, argv, lambda: _cached(c, argv[1]), readonly)


def _cached(c, sha):
    script = c.services.scripts.find(c.tenant, sha)
    if script is None:
        raise CommandError(NOSCRIPT)
    return script


def _run(c, argv, find_script, readonly, debugger=None):
    """EVAL and co.: numkeys checked before the script is looked up or compiled, as Redis."""
    numkeys = _numkeys(argv, errors.NOT_INTEGER)
    _start(c, argv, find_script(), numkeys, readonly, debugger)


def _numkeys(argv, not_integer):
    numkeys = parse_int(argv[2], not_integer)
    if numkeys > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    if numkeys < 0:
        raise CommandError("ERR Number of keys can't be negative")
    return numkeys


def _start(c, argv, script, numkeys, readonly, debugger=None):
    if script.shebang:
        # What the script declared it does, checked before it runs (Redis's scriptPrepareForRun).
        if readonly and "no-writes" not in script.flags:
            raise CommandError("ERR Can not execute a script with write flag using *_ro command.")
        if "no-cluster" in script.flags and c.services.cluster is not None:
            raise CommandError("ERR Can not run script on cluster, 'no-cluster' flag is set.")
        if (not script.flags & {"allow-oom", "no-writes"}
                and not c.services.monitoring.evict_to_maxmemory(c.store.arena)):
            raise CommandError(errors.OOM)
        readonly = readonly or "no-writes" in script.flags
    c.services.scripts.run(c, argv, script, numkeys, readonly, debugger)


def cmd_script_load(c, argv):
    c.reply.bulk(c.services.scripts.load(c.tenant, bytes(argv[2])).sha)


def cmd_script_exists(c, argv):
    scripts = c.services.scripts
    c.reply.array(len(argv) - 2)
    for sha in argv[2:]:
        c.reply.integer(scripts.find(c.tenant, sha) is not None)


def cmd_script_flush(c, argv):
    if len(argv) > 3 or len(argv) == 3 and upper(argv[2]) not in ("ASYNC", "SYNC"):
        raise CommandError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    c.services.scripts.flush(c.tenant)
    c.reply.ok()


def cmd_script_kill(c, argv):
    c.services.scripts.kill(function=False)
    c.reply.ok()


DEBUG_MODES = {"YES": ldb.FORKED, "SYNC": ldb.SYNC, "NO": None}


def cmd_script_debug(c, argv):
    """SCRIPT DEBUG YES|SYNC|NO: whether the client's next EVAL runs in the debugger."""
    if c.reply.pending:     # (inside EXEC too, whose reply has begun)
        raise CommandError("ERR SCRIPT DEBUG must be called outside a pipeline")
    mode = upper(argv[2])
    if mode not in DEBUG_MODES:
        raise CommandError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    if DEBUG_MODES[mode] is not None and c.socket_fd < 0:
        raise CommandError("ERR SCRIPT DEBUG is not available on TLS connections")
    c.lua_debug = DEBUG_MODES[mode]
    c.reply.ok()


def cmd_script_help(c, argv):
    reply_help(c, SCRIPT_HELP)


# --- functions -----------------------------------------------------------

FUNCTION_HELP = (
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using "
    "FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore "
    "policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace "
    "the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of "
    "failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
)


def cmd_fcall(c, argv):
    _fcall(c, argv, readonly=False)


def cmd_fcall_ro(c, argv):
    _fcall(c, argv, readonly=True)


def _fcall(c, argv, readonly):
    """FCALL: the function is looked up first, then numkeys (Redis's order and errors)."""
    function = c.services.scripts.libraries(c.tenant).function(argv[1])
    if function is None:
        raise CommandError("ERR Function not found")
    _start(c, argv, function, _numkeys(argv, "ERR Bad number of keys provided"), readonly)


def cmd_function_load(c, argv):
    replace = False
    for option in argv[2:-1]:
        if upper(option) != "REPLACE":
            raise CommandError(errors.formatted(f"ERR Unknown option given: {errors.c_string(option)}"))
        replace = True
    scripts = c.services.scripts
    library = scripts.load_library(bytes(argv[-1]), scripts.libraries(c.tenant), replace)
    scripts.change_libraries(c.tenant, lambda libraries: libraries.add(library, replace))
    c.reply.bulk(library.name)


def cmd_function_list(c, argv):
    with_code, pattern = False, None
    i = 2
    while i < len(argv):
        option = upper(argv[i])
        if not with_code and option == "WITHCODE":
            with_code = True
        elif pattern is None and option == "LIBRARYNAME":
            if i == len(argv) - 1:
                raise CommandError("ERR library name argument was not given")
            i += 1
            pattern = bytes(argv[i])
        else:
            raise CommandError(f"ERR Unknown argument {errors.c_string(argv[i])}")
        i += 1
    libraries = c.services.scripts.libraries(c.tenant).matching(pattern)
    c.reply.array(len(libraries))
    for library in libraries:
        c.reply.map(4 if with_code else 3)
        c.reply.bulk("library_name")
        c.reply.bulk(library.name)
        c.reply.bulk("engine")
        c.reply.bulk(ENGINE)
        c.reply.bulk("functions")
        c.reply.array(len(library.functions))
        for function in library.functions.values():
            c.reply.map(3)
            c.reply.bulk("name")
            c.reply.bulk(function.name)
            c.reply.bulk("description")
            if function.description is None:
                c.reply.null()
            else:
                c.reply.bulk(function.description)
            c.reply.bulk("flags")
            flags = [flag for flag in SHEBANG_FLAGS if flag in function.flags]
            c.reply.set(len(flags))
            for flag in flags:
                c.reply.simple(flag)
        if with_code:
            c.reply.bulk("library_code")
            c.reply.bulk(library.code)


def cmd_function_delete(c, argv):
    scripts = c.services.scripts
    library = scripts.libraries(c.tenant).libraries.get(bytes(argv[2]))
    if library is None:
        raise CommandError("ERR Library not found")
    scripts.change_libraries(c.tenant, lambda libraries: libraries.unlink(library))
    c.reply.ok()


def cmd_function_flush(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    if len(argv) == 3 and upper(argv[2]) not in ("ASYNC", "SYNC"):
        raise CommandError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    c.services.scripts.change_libraries(c.tenant, Libraries.clear)
    c.reply.ok()


def cmd_function_dump(c, argv):
    c.reply.bulk(c.services.scripts.libraries(c.tenant).dump())


RESTORE_POLICIES = ("FLUSH", "APPEND", "REPLACE")


def cmd_function_restore(c, argv):
    if len(argv) > 4:
        raise CommandError(errors.subcommand_syntax(argv))
    policy = upper(argv[3]) if len(argv) == 4 else "APPEND"
    if policy not in RESTORE_POLICIES:
        raise CommandError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    scripts = c.services.scripts
    restored = Libraries()
    for code in read_payload(bytes(argv[2])):
        restored.add(scripts.load_library(code, restored, replace=False), replace=False)

    def restore(libraries):
        if policy == "FLUSH":
            libraries.clear()
        libraries.join(restored, replace=policy == "REPLACE")

    scripts.change_libraries(c.tenant, restore)
    c.reply.ok()


def cmd_function_stats(c, argv):
    scripts = c.services.scripts
    run = scripts.busy
    if run is not None and not run.is_function:
        raise CommandError(scripts.busy_error)
    c.reply.map(2)
    c.reply.bulk("running_script")
    if run is None or run.caller.tenant != c.tenant:     # (another tenant's is none of its business)
        c.reply.null()
    else:
        c.reply.map(3)
        c.reply.bulk("name")
        c.reply.bulk(run.script.name)
        c.reply.bulk("command")
        c.reply.bulk_array(run.argv)
        c.reply.bulk("duration_ms")
        c.reply.integer(run.duration_ms())
    libraries, functions = scripts.libraries(c.tenant).counts()
    c.reply.bulk("engines")
    c.reply.map(1)
    c.reply.bulk(ENGINE)
    c.reply.map(2)
    c.reply.bulk("libraries_count")
    c.reply.integer(libraries)
    c.reply.bulk("functions_count")
    c.reply.integer(functions)


def cmd_function_kill(c, argv):
    c.services.scripts.kill(function=True)
    c.reply.ok()


def cmd_function_help(c, argv):
    reply_help(c, FUNCTION_HELP)
