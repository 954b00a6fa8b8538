"""MULTI, EXEC, DISCARD, WATCH, UNWATCH.

WATCH records each key's arena generation (0 when absent); every change of an
entry — write, delete, expiry, rename, flush — gives the key another
generation, so EXEC aborts exactly when a watched key was touched, whichever
client (or expiry) touched it.  One change leaves no trace in generations: a key
WATCHed while absent, created and deleted again (Redis flags the client at the
write).  So a session watching an absent key is in services.watchers
until the key appears (check_absent_watched_keys, after every command), which
sets its watch_dirty.
"""
from .. import errors
from ..sessions import watched_keys_changed
from ..slots import release_slots
from ..errors import CommandError


def cmd_multi(c, argv):
    if c.multi is not None:
        raise CommandError(errors.MULTI_NESTED)
    c.multi = []
    c.multi_dirty = False
    c.reply.ok()


def cmd_exec(c, argv):
    if c.multi is None:
        raise CommandError(errors.EXEC_WITHOUT_MULTI)
    queued = c.multi
    try:
        if c.multi_dirty:
            raise CommandError(errors.EXECABORT)
        if watched_keys_changed(c):
            c.reply.null_array()
            return
        c.unwatch_all()     # before the queue runs, as Redis: its own writes dirty nothing
        # c.multi stays set while the queue runs: CLIENT INFO inside EXEC shows flags=x, as in Redis.
        c.reply.array(len(queued))
        for argv_queued in queued:
            c.run_queued(argv_queued)
    finally:
        c.multi = None
        c.multi_dirty = False
        c.unwatch_all()
        for argv_queued in queued:
            release_slots(argv_queued)


def cmd_discard(c, argv):
    if c.multi is None:
        raise CommandError(errors.DISCARD_WITHOUT_MULTI)
    c.discard_multi()
    c.unwatch_all()
    c.reply.ok()


def cmd_watch(c, argv):
    if c.multi is not None:
        raise CommandError(errors.WATCH_INSIDE_MULTI)
    for key in argv[1:]:
        key = bytes(key)
        if (c.db, key) not in c.watched:
            c.watched[(c.db, key)] = generation = c.store.key_generation(c.db, key)
            if not generation and not c.watch_dirty:
                c.services.watchers.add(c)
    c.reply.ok()


def cmd_unwatch(c, argv):
    c.unwatch_all()
    c.reply.ok()
