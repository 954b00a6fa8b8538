"""Whether a session's WATCHed keys have changed. Read by the command families, the
clients' CLIENT LIST flags and EXEC."""


def watched_keys_changed(c):
    """Whether a WATCHed key changed since it was watched (or a write touched an absent one)."""
    store = c.store
    return c.watch_dirty or any(store.key_generation(db, key) != generation
                                for (db, key), generation in c.watched.items())


def touch_absent_watched_key(c, key):
    """A write that left no live entry (SET ... PXAT <past>) still touched key, as in Redis."""
    watchers = c.services.watchers
    for session in list(watchers):
        if session.store is c.store and session.watched.get((c.db, bytes(key)), None) == 0:
            session.watch_dirty = True
            watchers.discard(session)


def check_absent_watched_keys(watchers):
    """Dirty the sessions in `watchers` (those WATCHing a key that was absent) whose key now exists."""
    for session in list(watchers):
        store = session.store
        if any(generation == 0 and store.key_generation(db, key)
               for (db, key), generation in session.watched.items()):
            session.watch_dirty = True
            watchers.discard(session)
