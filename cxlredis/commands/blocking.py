"""What the blocking list and sorted-set commands share (BLPOP, BLMOVE, BZPOPMIN, ...):
the function blocked.py calls to serve a waiting client from a key a command wrote."""
from .. import errors
from .._store import OutOfMemory, WrongType


def serving(type, serve_from):
    """serve(c, key) for blocked.py: serve_from(c, key) pops and replies when key holds a
    collection of `type` (Redis serves a key to the clients of its type only), and the
    client waits on otherwise. An error while serving is the client's answer and ends its
    wait: BLMOVE's destination of another type, as in Redis 7.0, or no memory for the
    change (which Redis, changing collections in place, never meets there)."""
    def serve(c, key):
        try:
            if c.store.collection(c.db, key, type, touch=False, stats=False) is None:
                return False
        except WrongType:
            return False
        try:
            serve_from(c, key)
            c.services.tracking.written(c.store, key, c)    # the pop changed it: invalidate
        except (WrongType, OutOfMemory) as e:
            text = errors.WRONGTYPE if isinstance(e, WrongType) else errors.OOM
            c.services.stats.error(text)
            c.reply.error(text)
        return True
    return serve
