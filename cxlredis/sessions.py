"""What a connection's session state says: its CLIENT LIST line and flags, and whether
a key it WATCHes has changed. Read by the command families, the ACL log and EXEC."""
import time

from .monitoring import is_unix_client


def watched_keys_changed(c):
    """Whether a WATCHed key changed since it was watched (or a write touched an absent one)."""
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


def client_flags(cl):
    """Redis's flag letters, in its order: O monitor, x MULTI, d a watched key changed,
    c closing after the reply, U unix socket, e no-evict; N for none."""
    flags = "O" if cl in cl.server.monitoring.monitors else ""
    if cl.multi is not None:
        flags += "x"
    if cl.watched and watched_keys_changed(cl):
        flags += "d"
    if cl.closing:
        flags += "c"
    if is_unix_client(cl):
        flags += "U"
    if cl.no_evict:
        flags += "e"
    return flags or "N"


def client_info_line(cl, running=None):
    """One CLIENT LIST line: Redis 7.0's fields in its order, then those of Redis 7.2's
    CLIENT SETINFO, then cxlredis's own tenant. `running` is the command cl is running
    (CLIENT LIST/INFO itself, for the caller): its arguments are argv-mem. Buffer fields
    are cxlredis's: qbuf the bytes received and not yet parsed, obl the reply bytes not yet
    handed to the transport, oll the arena values they reference, omem the bytes the
    transport still holds; Redis's buffer-capacity fields (qbuf-free, rbs, rbp) are 0."""
    now = time.monotonic()
    qbuf = cl.parser.buffered
    argv_mem = sum(len(arg) for arg in running) if running else 0
    multi_mem = sum(len(arg) for queued in cl.multi for arg in queued) if cl.multi else 0
    obl = cl.reply.pending
    omem = cl.transport.get_write_buffer_size() if cl.transport is not None else 0
    events = ("" if cl.reading_paused else "r") + ("w" if omem else "")
    return (f"id={cl.id} addr={cl.addr} laddr={cl.laddr} fd={cl.fd} "
            f"name={cl.name.decode('utf-8', 'replace')} age={int(now - cl.created)} "
            f"idle={int(now - cl.last_interaction)} flags={client_flags(cl)} db={cl.db} "
            f"sub=0 psub=0 ssub=0 multi={len(cl.multi) if cl.multi is not None else -1} "
            f"qbuf={qbuf} qbuf-free=0 argv-mem={argv_mem} multi-mem={multi_mem} rbs=0 rbp=0 "
            f"obl={obl} oll={len(cl.inflight_pins)} omem={omem} "
            f"tot-mem={qbuf + argv_mem + multi_mem + obl + omem} events={events} "
            f"cmd={cl.last_command} user={cl.user.name.decode('utf-8', 'replace')} redir=-1 "
            f"resp={cl.protocol} lib-name={cl.lib_name.decode('utf-8', 'replace')} "
            f"lib-ver={cl.lib_ver.decode('utf-8', 'replace')} tenant={cl.tenant or ''}")
