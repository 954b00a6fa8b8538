"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (the engine is scripting.Scripts).

A script runs in the caller's tenant: its redis.call commands see the caller's
keyspace and are checked against the caller's ACL user, and the script cache is the
tenant's own.
"""
from .. import errors
from ..errors import CommandError
from ..scripting import NOSCRIPT
from .args import parse_int, upper
from .connection import reply_help

# Redis's text, DEBUG included: the Lua debugger (SCRIPT DEBUG) is not here, but the
# help is what clients and the differential tests read as Redis wrote it.
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
    _run(c, argv, lambda: c.services.scripts.load(c.tenant, bytes(argv[1])), readonly=False)


def cmd_eval_ro(c, argv):
    _run(c, argv, lambda: c.services.scripts.load(c.tenant, bytes(argv[1])), readonly=True)


def cmd_evalsha(c, argv):
    _evalsha(c, argv, readonly=False)


def cmd_evalsha_ro(c, argv):
    _evalsha(c, argv, readonly=True)


def _evalsha(c, argv, readonly):
    if len(argv[1]) != 40:              # no sha1 at all: Redis answers before anything else
        raise CommandError(NOSCRIPT)
    _run(c, argv, lambda: _cached(c, argv[1]), readonly)


def _cached(c, sha):
    script = c.services.scripts.find(c.tenant, sha)
    if script is None:
        raise CommandError(NOSCRIPT)
    return script


def _run(c, argv, find_script, readonly):
    """EVAL and co.: numkeys checked before the script is looked up or compiled, as Redis."""
    numkeys = parse_int(argv[2])
    if numkeys < 0:
        raise CommandError("ERR Number of keys can't be negative")
    if numkeys > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    script = find_script()
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
    c.services.scripts.run(c, argv, script, numkeys, readonly)


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
    c.services.scripts.kill()
    c.reply.ok()


def cmd_script_help(c, argv):
    reply_help(c, SCRIPT_HELP)
