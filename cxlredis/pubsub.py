"""Pub/Sub: who listens to which channel or pattern, and the delivery of messages.

Channels are namespaced per tenant like keys (invariant 3): a subscription is
made under the tenant the session is bound to (None for an administrator), and a
message published by a tenant's session reaches only subscribers of that tenant's
channels and patterns. Shard channels (SSUBSCRIBE/SPUBLISH) are a namespace of
their own, as in Redis.

A message is written into each subscriber's reply buffer, as Redis appends it to
the client's output, and the subscribers are flushed once per event-loop turn
(like MONITOR lines), so a subscriber is an ordinary output stream: its
transport holds what it has not read, and the `pubsub` class of
client-output-buffer-limit closes it when that grows past the limit.
"""

from ._resp import fan_out
from ._store import glob_match
from .cluster.slots import key_slot

CHANNELS, PATTERNS, SHARD_CHANNELS = "channels", "patterns", "shard_channels"


class Subscriptions:
    """One session's subscriptions, each kind a dict (namespace, name) → None (ordered)."""

    __slots__ = (CHANNELS, PATTERNS, SHARD_CHANNELS)

    def __init__(self):
        self.channels, self.patterns, self.shard_channels = {}, {}, {}

    def count(self):
        """Redis's clientSubscriptionsCount: channels and patterns (shard channels apart)."""
        return len(self.channels) + len(self.patterns)

    def __bool__(self):
        return bool(self.channels or self.patterns or self.shard_channels)


class PubSub:
    """Every subscription of the server, by kind: (namespace, name) → {session id: session}."""

    def __init__(self, clients):
        self.clients = clients          # id → connection, to flush a subscriber
        self.by_kind = {CHANNELS: {}, PATTERNS: {}, SHARD_CHANNELS: {}}
        self._groups = {}               # (kind, entry) → (reply writers, session ids), built
                                        # by the first message after a change

    # -- subscribing

    def subscribe(self, c, kind, name):
        """Add one subscription of session c; whether it is new."""
        mine = getattr(c.subscriptions, kind)
        entry = (c.tenant, bytes(name))
        if entry in mine:
            return False
        mine[entry] = None
        self.by_kind[kind].setdefault(entry, {})[c.id] = c
        self._groups.pop((kind, entry), None)
        c.subscribed = True
        return True

    def unsubscribe(self, c, kind, entry):
        """Drop one subscription (namespace, name) of session c; whether it had it."""
        mine = getattr(c.subscriptions, kind)
        if entry not in mine:
            return False
        del mine[entry]
        listeners = self.by_kind[kind][entry]
        del listeners[c.id]
        self._groups.pop((kind, entry), None)
        if not listeners:
            del self.by_kind[kind][entry]
        c.subscribed = bool(c.subscriptions)
        return True

    def drop_all(self, c):
        """Every subscription of session c goes (RESET, disconnect), without replies."""
        for kind in self.by_kind:
            for entry in list(getattr(c.subscriptions, kind)):
                self.unsubscribe(c, kind, entry)

    # -- publishing

    def publish(self, namespace, channel, message, shard=False):
        """Deliver message to the subscribers of channel (and, unless shard, of the patterns
        that match it) in namespace; the number of deliveries, as PUBLISH answers."""
        channel = bytes(channel)    # (a large message stays the buffer it came in)
        kind = SHARD_CHANNELS if shard else CHANNELS
        entry = (namespace, channel)
        receivers = 0
        if entry in self.by_kind[kind]:
            receivers += self._fan_out(kind, entry, (b"smessage" if shard else b"message",
                                                     channel, message))
        if not shard:
            for pattern_entry in list(self.by_kind[PATTERNS]):
                if pattern_entry[0] == namespace and glob_match(pattern_entry[1], channel, False):
                    receivers += self._fan_out(PATTERNS, pattern_entry,
                                               (b"pmessage", pattern_entry[1], channel, message))
        return receivers

    def _fan_out(self, kind, entry, parts):
        """One message to every subscriber of entry, encoded once per protocol; how many.
        (A message is a push: CLIENT REPLY OFF does not hide it, as in Redis 7.0.15.)"""
        group = self._groups.get((kind, entry))
        if group is None:
            listeners = self.by_kind[kind][entry]
            group = self._groups[(kind, entry)] = ([s.reply for s in listeners.values()],
                                                   list(listeners))
        writers, ids = group
        body = []
        for part in parts:
            body += (b"$%d\r\n" % len(part), part, b"\r\n")
        fan_out(writers, len(parts), b"".join(body))   # the one copy of the message
        self.clients.flush_soon(ids)
        return len(ids)

    def _deliver(self, session, parts):
        """One push of bulk strings and integers to one subscriber."""
        reply = session.reply
        reply.push(len(parts))
        for part in parts:
            if isinstance(part, int):
                reply.integer(part)
            else:
                reply.bulk(part)
        self.clients.flush_soon((session.id,))

    # -- the cluster

    def publish_from_bus(self, channel, message, shard):
        """A PUBLISH (or PUBLISHSHARD) another node sent over the cluster bus."""
        self.publish(None, channel, message, shard)

    def slot_lost(self, slot):
        """A slot this node served is gone: each subscriber of its shard channels is
        unsubscribed and told so with a sunsubscribe (Redis's removeChannelsInSlot)."""
        lost = [entry for entry in self.by_kind[SHARD_CHANNELS] if key_slot(entry[1]) == slot]
        for entry in lost:
            for session in list(self.by_kind[SHARD_CHANNELS][entry].values()):
                self.unsubscribe(session, SHARD_CHANNELS, entry)
                self._deliver(session, (b"sunsubscribe", entry[1],
                                        len(session.subscriptions.shard_channels)))

    # -- introspection (PUBSUB, INFO)

    def names(self, kind, namespace, pattern=None):
        """The active channels (or shard channels) of namespace, matching pattern if given."""
        return [name for space, name in self.by_kind[kind]
                if space == namespace and (pattern is None or glob_match(pattern, name, False))]

    def listeners(self, kind, namespace, name):
        return len(self.by_kind[kind].get((namespace, bytes(name)), ()))

    def count(self, kind, namespace=...):
        """How many channels/patterns have subscribers (all namespaces unless one is given)."""
        if namespace is ...:
            return len(self.by_kind[kind])
        return sum(space == namespace for space, _ in self.by_kind[kind])

