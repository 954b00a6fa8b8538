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

SCRIPT_HELP = (
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
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
    _run(c, argv, c.services.scripts.load(c.tenant, bytes(argv[1])), readonly=False)


def cmd_eval_ro(c, argv):
    _run(c, argv, c.services.scripts.load(c.tenant, bytes(argv[1])), readonly=True)


def cmd_evalsha(c, argv):
    _run(c, argv, _cached(c, argv[1]), readonly=False)


def cmd_evalsha_ro(c, argv):
    _run(c, argv, _cached(c, argv[1]), readonly=True)


def _cached(c, sha):
    script = c.services.scripts.find(c.tenant, sha)
    if script is None:
        raise CommandError(NOSCRIPT)
    return script


def _run(c, argv, script, readonly):
    numkeys = parse_int(argv[2])
    if numkeys < 0:
        raise CommandError("ERR Number of keys can't be negative")
    if numkeys > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
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
    c.services.scripts.run(c, script, argv[3:3 + numkeys], argv[3 + numkeys:], readonly)


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
