"""MULTI, EXEC, DISCARD, WATCH, UNWATCH.

WATCH records each key's arena generation (0 when absent); every change of an
entry — write, delete, expiry, rename, flush — gives the key another
generation, so EXEC aborts exactly when a watched key was touched, whichever
client (or expiry) touched it.  One change leaves no trace in generations: a key
WATCHed while absent, created and deleted again (Redis flags the client at the
write).  So a client watching an absent key is in the server's absent_watchers
until the key appears (check_absent_watched_keys, after every command), which
sets its watch_dirty.
"""
from .. import dispatch, errors
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
            spec, _ = dispatch.lookup(argv_queued)
            dispatch.call_queued(c, spec, argv_queued)
    finally:
        c.multi = None
        c.multi_dirty = False
        c.unwatch_all()
        for argv_queued in queued:
            release_slots(argv_queued)


def watched_keys_changed(c):
    store = c.store
    return c.watch_dirty or any(store.key_generation(db, key) != generation
                                for (db, key), generation in c.watched.items())


def touch_absent_watched_key(c, key):
    """A write that left no live entry (SET ... PXAT <past>) still touched key, as in Redis."""
    for cl in list(c.server.absent_watchers):
        if cl.store is c.store and cl.watched.get((c.db, bytes(key)), None) == 0:
            cl.watch_dirty = True
            c.server.absent_watchers.discard(cl)


def check_absent_watched_keys(server):
    """Dirty the watchers of absent keys that now exist (see the module docstring)."""
    for cl in list(server.absent_watchers):
        store = cl.store
        if any(generation == 0 and store.key_generation(db, key)
               for (db, key), generation in cl.watched.items()):
            cl.watch_dirty = True
            server.absent_watchers.discard(cl)


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
                c.server.absent_watchers.add(c)
    c.reply.ok()


def cmd_unwatch(c, argv):
    c.unwatch_all()
    c.reply.ok()
