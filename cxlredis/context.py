"""What a command handler is given: its call context, and the services behind it.

A handler is `handler(c, argv)`, with `c` a CallContext: the session of the
connection the command came on (who it is, which tenant and db, the protocol,
MULTI/WATCH state), the keyspace bound to that tenant, the reply writer, and
`c.services`, the shared services a command may use. A handler reaches nothing
else: not the connection (its transport, buffers and limits belong to
connection.py) and not the server. The connection acts on what a handler asks
for through the context's flags (close_after_command) once the command is done.
"""
from .notifications import KEY_MISS, NEW
from .pubsub import Subscriptions
from .slots import SlotArg, release_slots


class Parts:
    """A fixed set of named parts, the subclass's __slots__, every one given by keyword."""

    __slots__ = ()

    def __init__(self, **parts):
        for name in self.__slots__:
            setattr(self, name, parts.pop(name))
        if parts:
            raise TypeError(f"unknown parts of {type(self).__name__}: {', '.join(parts)}")


class Services(Parts):
    """The shared parts a command may use, handed over by the composition root
    (server.py). Functions stand in where a command needs one answer and nothing more
    of its owner (INFO's text, the arena check, the shutdown request)."""

    __slots__ = ("config", "acl", "tenants", "audit", "stats", "leases", "monitoring", "pubsub",
                 "notifications", "tracking", "scripts", "clients", "watchers", "cluster", "migrate_links", "version",
                 "persistence", "blocked",
                 "info", "memory_report", "check_arenas", "release_memory", "reset_stats", "request_shutdown",
                 "check_shutdown_allowed", "privatize_arenas", "disk_tier")


class CallContext:
    """One connection's session, as every command on it sees it (see the module docstring).

    store is the keyspace of the session's tenant: DESIGN.md's promise that a command
    cannot reach another tenant's keys holds because this is the only store a handler
    has (tenants.Tenants.bind sets it; services never hand out another). The one
    exception is a cluster slot, which moves whole: an administrator's slot commands
    (COUNTKEYSINSLOT, GETKEYSINSLOT, MIGRATE of a migrating slot, RESTORE-ASKING TENANT)
    reach every tenant's keys of it through slot_keys.SlotKeys."""

    __slots__ = ("services", "reply", "store", "id", "name", "lib_name", "lib_ver", "addr",
                 "laddr", "unix", "local", "created", "db", "protocol", "multi", "multi_dirty",
                 "watched", "watch_dirty", "reply_mode", "no_evict", "last_command", "user",
                 "authenticated", "tenant", "monitoring", "close_after_command", "dispatch_queued",
                 "asking", "readonly", "subscriptions", "subscribed", "tracking", "suspended", "resume",
                 "blocked", "postponed", "in_script", "lua_debug", "socket_fd", "handed_over", "closed",
                 "disk_pins")

    def __init__(self, services, reply, store, created, dispatch_queued):
        self.services = services
        self.reply = reply
        self.store = store
        self.id = 0
        self.name = self.lib_name = self.lib_ver = b""
        self.addr = self.laddr = ""
        self.unix = False            # came through the unix socket
        self.local = False           # the unix socket or a loopback peer (protected actions)
        self.created = created
        self.db = 0
        self.protocol = 2
        self.multi = None            # queued argv lists while in MULTI
        self.multi_dirty = False     # an error while queueing: EXEC answers EXECABORT
        self.watched = {}            # (db, key) → generation when WATCHed
        self.watch_dirty = False     # a key WATCHed while absent was created since
        self.reply_mode = "on"       # CLIENT REPLY on|off|skip
        self.no_evict = False
        self.last_command = "NULL"
        self.user = None             # the ACL user, and whether it authenticated (acl.Acl.attach)
        self.authenticated = False
        self.tenant = None           # the tenant's name, None for an administrator (tenants.bind)
        self.monitoring = False      # in MONITOR mode (a replica to Redis: no keyspace commands)
        self.close_after_command = False    # QUIT, CLIENT KILL of itself, ...: reply, then close
        self.dispatch_queued = dispatch_queued
        self.asking = False          # cluster: ASKING came before this command (or this MULTI)
        self.readonly = False        # cluster: READONLY (reads from a replica; none here)
        self.subscriptions = Subscriptions()   # its channels, patterns and shard channels
        self.subscribed = False      # any of them (Redis's CLIENT_PUBSUB): RESP2 allows few commands
        self.tracking = None         # CLIENT TRACKING's tracking.Mode while it is on
        self.suspended = False       # no commands until resume(): its script went past
                                     # busy-reply-threshold, or it is blocked (below)
        self.resume = None           # the connection's: go on with its input once the script ended
        self.blocked = None          # suspended by blocked.py: CLIENT PAUSE holds its command, or WAIT
        self.postponed = None        # the command CLIENT PAUSE holds, dispatched again when it ends
                                     # (or one held while its keys come back from the disk tier)
        self.disk_pins = None        # what the disk tier brought back for the command being
                                     # dispatched again, pinned until it has run (DiskTier.done)
        self.closed = False          # its connection is gone
        self.in_script = False       # the session a script's redis.call runs in
        self.lua_debug = None        # SCRIPT DEBUG's mode: the next EVAL is debugged (ldb.py)
        self.socket_fd = -1          # the connection's socket, which a debugging session reads
                                     # and writes itself, as Redis's does; -1: none (TLS)
        self.handed_over = False     # a forked debugging session has the socket: close it
                                     # without writing anything more

    def set_protocol(self, protover):
        self.protocol = protover
        self.reply.protocol = protover

    def store_value(self, key, value, expire_at=-1, keep_ttl=False):
        """Store a string value under key in the current db, zero-copy when it arrived in a slot."""
        if isinstance(value, SlotArg):
            return value.commit(self.db, key, expire_at, keep_ttl)
        return self.store.set(self.db, key, value, expire_at, 0, keep_ttl)

    def find(self, key, for_write=False, type=-1, touch=True):
        """The entry of key in the current db, None if missing (WRONGTYPE if type is given
        and it holds another). A read counts a hit or a miss and reports a miss as a
        keymiss event; a write's lookup touches the LRU, counting nothing (Redis's
        lookupKeyRead and lookupKeyWrite)."""
        entry = self.store.find(self.db, key, touch=touch, stats=not for_write, type=type)
        if entry is None and not for_write:
            self.notify(KEY_MISS, b"keymiss", key)
        return entry

    @property
    def may_block(self):
        """Whether a blocking command may wait (blocked.py): not inside a transaction nor a
        script, where Redis answers it at once as if its timeout had passed."""
        return self.multi is None and not self.in_script

    def collection(self, key, type):
        """The list, set or sorted set (TYPE_*) at key in the current db, to read (a
        Collection), None if missing (a keymiss event); WRONGTYPE if it holds another type.
        A read's lookup, as find's."""
        found = self.store.collection(self.db, key, type)
        if found is None:
            self.notify(KEY_MISS, b"keymiss", key)
        return found

    def write_collection(self, key, type, replace=False):
        """A write of the collection at key in the current db, made if missing: a
        Collection whose `with` block publishes its changes (commits) or, on an exception,
        drops them whole; one left empty is deleted. WRONGTYPE if key holds another type.
        replace: a new collection that replaces whatever key holds (a *STORE's result)."""
        return self.store.write_collection(self.db, key, type, replace)

    def notify(self, kind, event, key, db=None):
        """A keyspace event of the command (notifications.py), published if its class is on."""
        events = self.services.notifications
        if events.flags & kind:
            events.publish(self.tenant, self.db if db is None else db, kind, event, key)

    def creates(self, key, db=None):
        """Whether a write of key creates it; looked up only while "new" events are on."""
        if not self.services.notifications.flags & NEW:
            return False
        return self.store.find(self.db if db is None else db, key, touch=False, stats=False) is None

    def unwatch_all(self):
        self.watched.clear()
        self.watch_dirty = False
        self.services.watchers.discard(self)

    def discard_multi(self):
        if self.multi is not None:
            for argv in self.multi:
                release_slots(argv)
        self.multi = None
        self.multi_dirty = False

    def run_queued(self, argv):
        """Run a command EXEC takes from the MULTI queue, through dispatch."""
        self.dispatch_queued(self, argv)

    def close_after_reply(self):
        self.close_after_command = True
