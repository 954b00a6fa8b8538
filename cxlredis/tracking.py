"""Client-side caching (CLIENT TRACKING): who may hold which key, and the invalidations.

A tracking client is remembered for the keys its read-only commands read; when such a
key is written, expires or is evicted, each client remembered for it gets one
invalidation message and is forgotten for it, as in Redis's tracking table. In BCAST
mode nothing is remembered: every key change whose name starts with one of the
client's prefixes is sent, gathered per prefix and event-loop turn.

A key is remembered where it lives, (arena address, tenant id, key in that namespace),
not by the name a client used: a tenant reading through a shared grant holds the shared
namespace's key, and that namespace's writers, expiries and evictions must reach it.
The message names the key as the client asked for it. So a tenant's client hears only
of keys it could read, never of another tenant's (invariant 3); like Redis, the db is
not part of a key here.

Delivery is Redis's: a RESP3 connection gets a push `invalidate [keys]`; with REDIRECT
the message goes to that client instead, RESP3, or RESP2 as a `message` on
`__redis__:invalidate` when it is subscribed; a redirect target that went away sets the
broken-redirect flag and tells a RESP3 client `tracking-redir-broken`. A FLUSHALL or
FLUSHDB sends a null (every key) to each tracking client that sees the namespace.
Messages for the client running the current command wait until its reply is out
(EXEC's and a script's commands included), so they never split a reply.
"""
import asyncio

from ._store import Keyspace

INVALIDATE_PUSH = b">2\r\n$10\r\ninvalidate\r\n"
INVALIDATE_MESSAGE = b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"
NULLS = {2: b"$-1\r\n", 3: b"_\r\n"}


class Mode:
    """One session's CLIENT TRACKING settings (its c.tracking while tracking is on)."""

    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "caching", "broken_redirect",
                 "prefixes")

    def __init__(self, redirect, bcast, optin, optout, noloop):
        self.redirect = redirect        # client id, 0 for none
        self.bcast = bcast
        self.optin = optin
        self.optout = optout
        self.noloop = noloop
        self.caching = False            # CLIENT CACHING yes (OPTIN) / no (OPTOUT) for the next command
        self.broken_redirect = False
        self.prefixes = {}              # BCAST: prefix → None, in the order given


class _Broadcast:
    """A BCAST prefix of one namespace: its clients, and the keys changed this turn."""

    __slots__ = ("sessions", "changed")

    def __init__(self):
        self.sessions = {}              # id → session
        self.changed = {}               # key → id of the session that changed it last, 0 if none


def place_of(keyspace):
    return (keyspace.arena.address, keyspace.tenant)


def read_places(store, key):
    """(namespace, key in it) of every place a read of key may be served from."""
    if isinstance(store, Keyspace):
        return ((store, key),)
    ns, inner = store.route(key)
    if ns is not store.own:
        return ((ns, inner),)
    return ((ns, key),) + tuple((shared, key) for shared in store.readable)


def reads_from(store, name, place, key):
    """Whether a read of name in store may still be served by key of place."""
    return any(place_of(ns) == place and inner == key for ns, inner in read_places(store, name))


def own_place(store):
    return place_of(store if isinstance(store, Keyspace) else store.own)


def write_place(store, key):
    """(namespace, key in it) that a write of key changes."""
    if isinstance(store, Keyspace):
        return store, key
    return store.route(key)


def seen_places(store):
    """The namespaces a session of store reads keys from."""
    if isinstance(store, Keyspace):
        return {place_of(store)}
    return {place_of(ns) for ns in (store.own, *store.readable, *(ns for _, ns in store.routes))}


class Tracking:
    """The server's tracking table, BCAST prefixes and invalidation delivery."""

    def __init__(self, clients, notifications, config):
        self.clients = clients          # clients.Clients: sessions by id, and sending to them
        self.notifications = notifications    # the arena's expired and evicted keys
        self.config = config
        self.sessions = {}              # id → session, every tracking session
        self.table = {}                 # place → {key: {(session id, name it asked by)}}
        self.keys = 0                   # (place, key) pairs in the table
        self.items = 0                  # (session, key) pairs in the table
        self.broadcasts = {}            # place → {prefix: _Broadcast}
        self.running = None             # the session whose command runs now
        self.pending = []               # (session, message) for it, sent after its reply
        self._broadcast_scheduled = False
        self._limit_rounds = 0          # tracking-table-max-keys: turns spent over the limit

    # -- CLIENT TRACKING ON / OFF

    def enable(self, c, mode):
        """Tracking on for session c, replacing its earlier mode (the checks were made)."""
        old = c.tracking
        if old is not None and old.bcast:
            mode.prefixes = {**old.prefixes, **mode.prefixes}   # they add up while BCAST stays on
        if mode.bcast:
            prefixes = self.broadcasts.setdefault(own_place(c.store), {})
            for prefix in mode.prefixes:
                prefixes.setdefault(prefix, _Broadcast()).sessions[c.id] = c
        c.tracking = mode
        if not self.sessions:
            self.notifications.observe_drops(self.dropped)
        self.sessions[c.id] = c

    def disable(self, c):
        """Tracking off for session c (CLIENT TRACKING OFF, RESET, disconnect). Its keys
        leave the table lazily, as in Redis: a message for a session gone is dropped."""
        mode = c.tracking
        if mode is None:
            return
        if mode.bcast:
            self._drop_prefixes(c, mode)
        c.tracking = None
        del self.sessions[c.id]
        if not self.sessions:
            self.notifications.observe_drops(None)

    def _drop_prefixes(self, c, mode):
        for place, prefixes in list(self.broadcasts.items()):
            for prefix in mode.prefixes:
                state = prefixes.get(prefix)
                if state is not None and state.sessions.pop(c.id, None) is not None and not state.sessions:
                    del prefixes[prefix]
            if not prefixes:
                del self.broadcasts[place]

    def prefix_count(self):
        return sum(len(prefixes) for prefixes in self.broadcasts.values())

    # -- reads: remembering keys

    def remember(self, c, names):
        """Keys a read-only command of tracking session c read (a script's read: the keys
        its EVAL declared, as Redis 7.0 remembers them), unless its mode leaves them out."""
        mode = c.tracking
        if mode.bcast or (mode.caching if mode.optout else mode.optin and not mode.caching):
            return
        for name in names:
            name = bytes(name)
            for keyspace, key in read_places(c.store, name):
                keys = self.table.setdefault(place_of(keyspace), {})
                holders = keys.get(key)
                if holders is None:
                    holders = keys[key] = set()
                    self.keys += 1
                holder = (c.id, name)
                if holder not in holders:
                    holders.add(holder)
                    self.items += 1

    def _limit_keys(self):
        """Over tracking-table-max-keys: forget keys, oldest first, invalidating them, with
        an effort that grows while the table stays over (Redis's trackingLimitUsedSlots)."""
        limit = self.config["tracking-table-max-keys"]
        effort = 100 * (self._limit_rounds + 1)
        while self.keys > limit:
            if effort == 0:
                self._limit_rounds += 1
                return
            effort -= 1
            place, keys = next(iter(self.table.items()))
            self._invalidate_holders(place, next(iter(keys)), None)
        self._limit_rounds = 0

    # -- writes: invalidating keys

    def before_write(self, c, names):
        """What a write command of keys names may change that someone tracks: [(namespace,
        key, place, its generations in every db)], compared by after_write."""
        watched = []
        store = c.store
        for name in names:
            keyspace, key = write_place(store, bytes(name))
            place = place_of(keyspace)
            if key in self.table.get(place, ()) or self._broadcast_match(place, key):
                watched.append((keyspace, key, place, self._generations(keyspace, key)))
        return watched

    @staticmethod
    def _generations(keyspace, key):
        return tuple(keyspace.key_generation(db, key) for db in range(keyspace.databases))

    def after_write(self, c, watched):
        for keyspace, key, place, generations in watched:
            if self._generations(keyspace, key) != generations:
                self.invalidate(place, key, c)

    def written(self, store, key, modifier):
        """A write the generations do not show (CXL COMMIT of a co-located client's block, a
        SET of an absent key that expires at once)."""
        if self.sessions:
            keyspace, key = write_place(store, bytes(key))
            self.invalidate(place_of(keyspace), key, modifier)

    def fast_writes(self, keyspace, keys, modifier):
        """The keys a batch of the C fast path changed in keyspace (a plain one)."""
        place = place_of(keyspace)
        tracked, prefixes = self.table.get(place), self.broadcasts.get(place)
        if tracked or prefixes:
            for key in keys:
                if prefixes or key in tracked:
                    self.invalidate(place, key, modifier)

    def dropped(self, address, tenant, key):
        """A key the arena expired or evicted (notifications.Notifications.observe_drops)."""
        self.invalidate((address, tenant), key, None)

    def invalidate(self, place, key, modifier):
        """key changed in place, by session modifier (None: the arena itself)."""
        prefixes = self.broadcasts.get(place)
        if prefixes:
            for prefix, state in prefixes.items():
                if key.startswith(prefix):
                    state.changed[key] = modifier.id if modifier is not None else 0
                    self._schedule_broadcast()
        self._invalidate_holders(place, key, modifier)

    def _invalidate_holders(self, place, key, modifier):
        keys = self.table.get(place)
        holders = keys.pop(key, None) if keys else None
        if holders is None:
            return
        if not keys:
            del self.table[place]
        self.keys -= 1
        self.items -= len(holders)
        for ident, name in holders:
            session = self.sessions.get(ident)
            # A session that switched to BCAST since, or NOLOOP's own change (a script's
            # commands run as their caller's id), hears nothing; nor one now bound to a
            # tenant that cannot see the key.
            if (session is None or session.tracking.bcast
                    or session.tracking.noloop and modifier is not None and modifier.id == ident
                    or not reads_from(session.store, name, place, key)):
                continue
            self._send(session, b"*1\r\n$%d\r\n%s\r\n" % (len(name), name))

    def flushed(self, store):
        """FLUSHALL / FLUSHDB of store's own namespace: every key of it is invalid."""
        place = own_place(store)
        keys = self.table.pop(place, {})
        self.keys -= len(keys)
        self.items -= sum(len(holders) for holders in keys.values())
        for session in list(self.sessions.values()):
            if place in seen_places(session.store):
                self._send(session, NULLS[session.protocol])

    def _broadcast_match(self, place, key):
        prefixes = self.broadcasts.get(place)
        return bool(prefixes) and any(key.startswith(prefix) for prefix in prefixes)

    def _schedule_broadcast(self):
        if not self._broadcast_scheduled:
            self._broadcast_scheduled = True
            asyncio.get_running_loop().call_soon(self._broadcast)

    def _broadcast(self):
        """Each prefix's changed keys, once per loop turn, to its clients (Redis's
        trackingBroadcastInvalidationMessages, run before the event loop sleeps)."""
        self._broadcast_scheduled = False
        for place, prefixes in self.broadcasts.items():
            for prefix in sorted(prefixes):       # prefixes and keys in Redis's (radix tree) order
                state = prefixes[prefix]
                if not state.changed:
                    continue
                changed = {key: state.changed[key] for key in sorted(state.changed)}
                state.changed = {}
                everyone = _key_array(changed)
                for session in list(state.sessions.values()):
                    if own_place(session.store) != place:      # bound to another tenant since
                        continue
                    if session.tracking.noloop:
                        own = [key for key, ident in changed.items() if ident != session.id]
                        if own:
                            self._send(session, _key_array(own))
                    else:
                        self._send(session, everyone)

    # -- delivery

    def _send(self, session, body):
        """One invalidation (body: the RESP of its keys, or a null) for tracking session
        session, where its mode sends it (Redis's sendTrackingMessage)."""
        mode = session.tracking
        target = session
        if mode.redirect:
            target = self.clients.client_session(mode.redirect)
            # (a target now bound to another tenant is gone, for its key names)
            if target is None or target.tenant != session.tenant:
                mode.broken_redirect = True
                if session.protocol == 3:
                    self._write(session, b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % mode.redirect)
                return
        if target.protocol == 3:
            self._write(target, INVALIDATE_PUSH + body)
        elif mode.redirect and target.subscribed:
            self._write(target, INVALIDATE_MESSAGE + body)

    def _write(self, session, message):
        if session is self.running:
            self.pending.append((session, message))
        else:
            self._deliver(session, message)

    def _deliver(self, session, message):
        # Sent at once: the writer's reply must not reach its client before the
        # invalidation reaches this one (Redis queues this first, then the reply).
        session.reply.raw(message)
        self.clients.flush(session)

    def deliver_pending(self):
        if self.pending:
            pending, self.pending = self.pending, []
            for session, message in pending:
                self._deliver(session, message)

    def command_done(self, c):
        """After each command a connection ran: the messages its command's changes sent
        itself, and the end of a one-command CLIENT CACHING (which MULTI keeps, and any
        CLIENT subcommand passes on)."""
        self.running = None
        self.deliver_pending()
        if self.keys and self.keys > self.config["tracking-table-max-keys"] > 0:
            self._limit_keys()
        mode = c.tracking
        if mode is not None and mode.caching and c.multi is None and not c.last_command.startswith("client"):
            mode.caching = False


def _key_array(keys):
    parts = [b"*%d\r\n" % len(keys)]
    for key in keys:
        parts.append(b"$%d\r\n%s\r\n" % (len(key), key))
    return b"".join(parts)
