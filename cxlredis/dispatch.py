"""Command dispatch, in the order of Redis's processCommand.

lookup (unknown command / subcommand) → arity → DEBUG unless enable-debug-command
allows it → NOAUTH → no_multi → ACL
(command, then keys and channels) → cluster redirect (MOVED, ASK, CROSSSLOT, TRYAGAIN,
CLUSTERDOWN; cluster mode only) → -BUSY while a script runs past busy-reply-threshold
(but for allow_busy commands) → evictions (back under maxmemory; -OOM for a denyoom
command when nothing more can go; none while clients are paused) → MONITOR and RESP2
Pub/Sub restrictions → CLIENT PAUSE (the command is held until the pause ends, then
dispatched again: blocked.py) → MULTI queueing → the disk tier (a command whose keys,
or an EXEC whose queued commands' keys, have copies on disk is held while they come
back, then dispatched again: disktier.py) → handler, timed, with
per-command calls/usec/rejected/failed counters and per-prefix error counters
(INFO commandstats / errorstats). A write that still finds no room raises
OutOfMemory from the arena, answered as -OOM. A command that succeeded and is
a security event (CONFIG SET, FLUSHALL, ...) goes to the audit log.
"""
import asyncio
import logging
import time

from . import acl, errors, protected
from .blocked import PAUSE_ALL
from ._store import OutOfMemory, TenantError, WrongType
from .commands import lookup
from .commands.keyspecs import key_arguments
from .redirects import redirect
from .sessions import check_absent_watched_keys, watched_keys_changed
from .errors import CommandError
from .metrics import LATENCY_BUCKETS
from .slots import release_slots

log = logging.getLogger("cxlredis")

SCRIPTS_RO = frozenset(("eval_ro", "evalsha_ro", "fcall_ro"))
# Whose script or function may declare, by its flags, whether the call writes.
SCRIPT_CALLS = frozenset(("eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"))

ALLOWED_SUBSCRIBED = frozenset(("ping", "subscribe", "ssubscribe", "psubscribe", "unsubscribe",
                                "sunsubscribe", "punsubscribe", "quit", "reset"))


def dispatch(c, argv):
    """Run one command of session c (a context.CallContext), Redis's checks first."""
    try:
        _dispatch(c, argv)
    finally:
        if c.disk_pins is not None:
            staged, c.disk_pins = c.disk_pins, None
            c.services.disk_tier.done(staged)   # what the disk tier brought back for it has served


def _dispatch(c, argv):
    spec, error = lookup(argv)
    # What CLIENT LIST shows as cmd: the command looked up, even if refused or queued
    # (EXEC, not what EXEC ran); NULL after an unknown one, as in Redis.
    c.last_command = spec.name if spec is not None else "NULL"
    if error is None and spec.name == "debug" and not protected.allowed(c, "enable-debug-command"):
        error = protected.DEBUG_NOT_ALLOWED
    if error is None and (not c.authenticated or c.multi is not None or acl_applies(c.user, spec)):
        error = refusal(c, spec, argv)
    if error is None and c.services.cluster is not None:
        error = redirect(c, spec, argv)
        if error is not None and spec.name == "exec":
            # Redis drops the transaction and answers the redirect itself, not EXECABORT.
            c.discard_multi()
            c.unwatch_all()
            reject(c, spec, error)
            return
        if c.asking and not (spec.name in ("asking", "multi") or (
                c.multi is not None and spec.name not in ("exec", "discard"))):
            c.asking = False          # ASKING covers one command, or one transaction
    # A script running too long (scripting.py) leaves room for little but SCRIPT KILL; the
    # keyspace is the script's meanwhile, so nothing evicts either.
    if error is None and c.services.scripts.busy is not None and "allow_busy" not in spec.flags:
        error = c.services.scripts.busy_error
    # Redis's performEvictions: get back under maxmemory before any command (it may have
    # been lowered); a command that may grow memory is refused when that is impossible.
    # While clients are paused the dataset holds still: nothing is evicted, nothing refused.
    if (error is None and not c.services.blocked.paused
            and not c.services.monitoring.evict_to_maxmemory(c.store.arena) and "denyoom" in spec.flags):
        error = errors.OOM
    # A MONITOR connection is a replica to Redis: it may not touch the keyspace.
    if error is None and c.monitoring and spec.touches_keyspace:
        error = "ERR Replica can't interact with the keyspace"
    # RESP2 has no room for replies between messages: a subscribed connection may only
    # change its subscriptions, PING, QUIT or RESET (RESP3 pushes, so anything goes there).
    if error is None and c.subscribed and c.protocol == 2 and spec.name not in ALLOWED_SUBSCRIBED:
        error = (f"ERR Can't execute '{spec.name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
                 "PING / QUIT / RESET are allowed in this context")
    if error is not None:
        # A refused command stores nothing. Inside MULTI it is not queued either, so the
        # connection (which releases after the transaction) would never see its reservations.
        release_slots(argv)
        if spec is not None and spec.name == "exec":
            # EXEC itself refused: Redis drops any transaction and says why.
            c.discard_multi()
            c.unwatch_all()
            error = "EXECABORT Transaction discarded because of: " + error.removeprefix("ERR ")
        elif c.multi is not None:
            c.multi_dirty = True
        reject(c, spec, error)
        return
    # (a MONITOR connection is a replica to Redis, and no pause holds a replica)
    blocked = c.services.blocked
    if (blocked.pause_kind and not c.monitoring
            and (blocked.pause_kind == PAUSE_ALL or may_replicate(c, spec, argv))):
        blocked.postpone(c, argv)       # its connection dispatches it again when the pause ends
        return
    if c.multi is not None and spec.queued_in_multi:
        # Redis's queueMultiCommand keeps nothing of a transaction that cannot run any more.
        if c.multi_dirty or (c.watched and watched_keys_changed(c)):
            release_slots(argv)
        else:
            c.multi.append(argv)
        c.reply.simple("QUEUED")
        return
    tier = c.services.disk_tier
    if tier is not None and c.disk_pins is None and hold_for_disk(c, tier, spec, argv):
        return
    call(c, spec, argv)


def hold_for_disk(c, tier, spec, argv):
    """Hold c's command while the copies its keys have in the disk tier are read back
    (an EXEC's: those of the commands it runs); False if it has none there."""
    commands = [(lookup(queued)[0], queued) for queued in c.multi] if spec.name == "exec" and c.multi else [
        (spec, argv)]
    keys = [args[index] for command, args in commands for index, _ in key_arguments(command, args)]
    wanted = tier.waiting(c.store, c.db, keys) if keys else None
    if not wanted:
        return False
    c.postponed = argv
    c.suspended = True
    records = list({record.identity: record for _, record in wanted}.values())
    task = asyncio.get_running_loop().create_task(_back_from_disk(c, tier, records, spec.name == "watch"))
    _BRINGING_BACK.add(task)
    task.add_done_callback(_BRINGING_BACK.discard)
    return True


_BRINGING_BACK = set()      # the tasks reading for held commands (the loop keeps weak references)


async def _back_from_disk(c, tier, records, keep):
    staged = []
    try:
        staged = await tier.bring_back(c.store, c.db, records, keep)
    except Exception:   # a failed read leaves the keys on disk: the command runs without them
        log.exception("Error reading from the disk tier")
    c.suspended = False
    if c.closed:
        tier.done(staged)
    else:
        c.disk_pins = staged
        c.resume()          # the command again, with every check, then the rest of its input


def may_replicate(c, spec, argv):
    """Whether a call may change the dataset, as Redis's processCommand decides what CLIENT
    PAUSE WRITE holds: a write command, one flagged may_replicate (EVAL, PUBLISH...), or
    EXEC of a transaction holding one. A script or function that declares flags is a write
    unless it declares no-writes (Redis's scriptFlagsToCmdFlags)."""
    if spec.name in SCRIPT_CALLS:
        flags = c.services.scripts.declared_flags(c.tenant, spec.name, argv)
        if flags is not None:
            return "no-writes" not in flags
    if spec.name == "exec" and c.multi:
        return any(may_replicate(c, lookup(queued)[0], queued) for queued in c.multi)
    return "write" in spec.flags or spec.may_replicate


def acl_applies(user, spec):
    """Whether the user's rules could refuse this command (the check is skipped otherwise)."""
    return not (user.unrestricted or user.unrestricted_keys and not spec.channel_args)


def refusal(c, spec, argv):
    """The error refusing a known command before it runs, or None (Redis's order)."""
    if not c.authenticated and c.services.acl.auth_required and "no_auth" not in spec.flags:
        return acl.NOAUTH
    if c.multi is not None and spec.queued_in_multi and "no_multi" in spec.flags:
        return "ERR Command not allowed inside a transaction"
    if acl_applies(c.user, spec) and "no_auth" not in spec.flags:
        return c.services.acl.denial(c, spec, argv)
    return None


def call_queued(c, argv):
    """EXEC runs a queued command: the ACLs are checked again, they may have changed since."""
    spec, _ = lookup(argv)      # it was looked up when queued: known, with its arity right
    if acl_applies(c.user, spec) and "no_auth" not in spec.flags:
        error = c.services.acl.denial(c, spec, argv, in_exec=True)
        if error is not None:
            c.services.stats.error(error)
            with_reply_mode(c, lambda: c.reply.error(error))
            return
    call(c, spec, argv)


# Why a script's redis.call was refused by the ACL, by what the user may not touch.
SCRIPT_DENIALS = {
    acl.DENIED_KEY: b"The user executing the script can't access at least one of the keys mentioned "
                    b"in the command arguments",
    acl.DENIED_CHANNEL: b"The user executing the script can't publish to the channel mentioned in the command",
}
SCRIPT_DENIED_COMMAND = b"The user executing the script can't run this command or subcommand"


def script_call(c, argv, run):
    """One redis.call of a script (run: scripting.Run) in its session c, with the checks
    of Redis's scriptCall; (reply bytes, False), or (error text, True) if refused."""
    spec, error = lookup(argv)
    if spec is None:
        return b"Unknown Redis command called from script", True
    if error is not None:
        return b"Wrong number of args calling Redis command from script", True
    if "noscript" in spec.flags:
        return b"This Redis command is not allowed from script", True
    if acl_applies(c.user, spec) and "no_auth" not in spec.flags:
        denied = c.user.check(spec, argv)
        if denied is not None:
            reason, index = denied
            kind, obj = (("key", bytes(argv[index])) if reason == acl.DENIED_KEY
                         else ("channel", bytes(argv[index])) if reason == acl.DENIED_CHANNEL
                         else ("command", spec.name.encode()))
            c.services.acl.log_denial(c, kind, obj, c.user.name, "lua")
            return SCRIPT_DENIALS.get(reason, SCRIPT_DENIED_COMMAND), True
    if "write" in spec.flags:
        if run.readonly:
            return b"Write commands are not allowed from read-only scripts.", True
        # Redis's "no OOM before the first write" of scripts without flags
        if (run.compat and not run.allow_oom and not run.wrote and "denyoom" in spec.flags
                and not c.services.monitoring.evict_to_maxmemory(c.store.arena)):
            return b"-" + errors.OOM.encode(), True
    if c.services.cluster is not None:
        refused = redirect(c, spec, argv)
        if refused is not None:
            return (b"Script attempted to execute a command while the cluster is down"
                    if refused.startswith("CLUSTERDOWN")
                    else b"Script attempted to access a non local key in a cluster node"), True
    if "write" in spec.flags:
        run.wrote = True
    tracking = c.services.tracking
    # (after the script went past busy-reply-threshold no command of its caller is running)
    outside = tracking.running is None
    if outside:
        tracking.running = run.caller
    call(c, spec, argv)
    if run.caller.tracking is not None and "readonly" in spec.flags:
        tracking.remember(run.caller, run.keys)
    if outside:
        tracking.running = None
        tracking.deliver_pending()
    collected = _Collected()
    _unpin(c, c.reply.flush(collected))
    return collected.data, False


class _Collected:
    """A transport for ReplyWriter.flush that keeps what it is given, as one bytes."""

    data = b""

    def writelines(self, parts):
        self.data = b"".join(parts)


def reject(c, spec, error):
    """An error before the command ran (Redis counts it as rejected_calls)."""
    stats = c.services.stats
    if spec is not None:
        stats.command(spec.name)[2] += 1
    stats.error(error)
    with_reply_mode(c, lambda: c.reply.error(error))


def call(c, spec, argv):
    """Run one command's handler (also used by EXEC for queued commands)."""
    failed = out_of_memory = False
    mark = c.reply.mark()
    tracking = c.services.tracking
    # client-side caching: the generations of tracked keys a write may change
    tracked = (tracking.before_write(c, key_names(spec, argv))
               if tracking.sessions and "write" in spec.flags else None)
    if c.services.disk_tier is not None and "write" in spec.flags:
        # copies that could not come back (no room) go, or the old value would return later
        c.services.disk_tier.drop_keys(c.store, c.db, key_names(spec, argv))
    start = time.perf_counter_ns()
    try:
        if c.reply_mode == "on":
            spec.handler(c, argv)
        elif spec.replies_are_pushes:
            spec.handler(c, argv)
            if c.reply_mode == "skip":
                c.reply_mode = "on"
        else:
            with_reply_mode(c, lambda: spec.handler(c, argv))
    except (CommandError, OutOfMemory, WrongType, TenantError) as e:
        # TenantError: what a tenant's namespace does not offer (SWAPDB)
        text = (errors.OOM if isinstance(e, OutOfMemory)
                else errors.WRONGTYPE if isinstance(e, WrongType)
                else f"ERR {e}" if isinstance(e, TenantError) else str(e))
        _unpin(c, c.reply.rollback(mark))
        failed = True
        out_of_memory = isinstance(e, OutOfMemory)
        c.services.stats.error(text)
        with_reply_mode(c, lambda: c.reply.error(text))
    except Exception as e:  # a bug in a handler must not take the server down
        log.exception("Internal error in '%s'", spec.name)
        _unpin(c, c.reply.rollback(mark))
        failed = True
        text = f"ERR internal error in '{spec.name}': {type(e).__name__}"
        c.services.stats.error(text)
        c.reply.error(text)
    else:
        if spec.audit_event:
            c.services.audit.after_command(c, spec, argv)
        if c.services.watchers:
            check_absent_watched_keys(c.services.watchers)
        if c.services.blocked.on_keys and "write" in spec.flags:
            c.services.blocked.written(c, key_names(spec, argv))    # clients blocked on them
    if tracked:
        tracking.after_write(c, tracked)
    if c.services.notifications.noting_drops:
        c.services.notifications.publish_drops()    # what the command expired or evicted
    # Read-only scripts are not tracked themselves, only the commands they run.
    if c.tracking is not None and "readonly" in spec.flags and spec.name not in SCRIPTS_RO:
        tracking.remember(c, key_names(spec, argv))
    elapsed_us = (time.perf_counter_ns() - start) // 1000
    # Looked up after the handler: CONFIG RESETSTAT counts itself, as in Redis.
    counters = c.services.stats.command(spec.name)
    if out_of_memory:
        # Redis refuses a write before it runs once memory is past maxmemory; the arena
        # refuses the write that would pass it, changing nothing: rejected all the same.
        counters[2] += 1
        return
    counters[0] += 1
    counters[1] += elapsed_us
    counters[3] += failed
    counters[4][min(elapsed_us.bit_length(), LATENCY_BUCKETS - 1)] += 1
    # SLOWLOG, LATENCY and MONITOR, after the command as in Redis (MULTI, its commands, EXEC)
    monitoring = c.services.monitoring
    if elapsed_us >= monitoring.watch_from_us:
        monitoring.after_call(c, spec, argv, elapsed_us)


def key_names(spec, argv):
    return [argv[index] for index, _ in key_arguments(spec, argv)]


def with_reply_mode(c, write):
    """Honour CLIENT REPLY OFF/SKIP: run write() and drop what it replied."""
    if c.reply_mode == "on":
        write()
        return
    mode = c.reply_mode
    mark = c.reply.mark()
    write()
    if c.reply_mode == "on":
        return  # CLIENT REPLY ON answers even though replies were off when it arrived
    _unpin(c, c.reply.rollback(mark))
    if mode == "skip":
        c.reply_mode = "on"


def _unpin(c, tokens):
    for arena, off in tokens:
        arena.unpin(off)
