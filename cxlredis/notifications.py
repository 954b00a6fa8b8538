"""Keyspace notifications: what notify-keyspace-events asks for, published over Pub/Sub.

An event of class `kind` (a bit below) on key in db goes out as Redis sends it: to
`__keyspace@<db>__:<key>` with the event name as the message (K), and to
`__keyevent@<db>__:<event>` with the key as the message (E). It is published in the
tenant's own channel namespace, so a tenant hears only its own keys' events.

Commands report their events through CallContext.notify. Keys the arena drops by
itself, because they expired or were evicted, are noted by the arena's C (notes.h)
while x or e is on, and published here: before the next event of a command, so they
keep Redis's order (a lazily expired key's "expired" comes before the command's own
events), and after each command and each active-expiry step. Client-side caching
(tracking.py) hears of the same drops, so they are noted while it is on too.
"""
from ._store import dropped_keys_pending, note_drops, take_dropped_keys

# Redis's classes (notify.c), by their letter in notify-keyspace-events
KEYSPACE, KEYEVENT = 1 << 0, 1 << 1
GENERIC, STRING, LIST, SET, HASH, ZSET = (1 << n for n in range(2, 8))
EXPIRED, EVICTED, STREAM, KEY_MISS, MODULE, NEW = (1 << n for n in range(8, 14))
ALL = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE

# The letters in the order CONFIG GET lists them: the classes, then K, E and m.
CLASS_LETTERS = (("g", GENERIC), ("$", STRING), ("l", LIST), ("s", SET), ("h", HASH),
                 ("z", ZSET), ("x", EXPIRED), ("e", EVICTED), ("t", STREAM), ("d", MODULE),
                 ("n", NEW))
TAIL_LETTERS = (("K", KEYSPACE), ("E", KEYEVENT), ("m", KEY_MISS))
LETTERS = dict(CLASS_LETTERS + TAIL_LETTERS + (("A", ALL),))
INVALID_CLASS = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."


def parse_flags(text: str) -> int | None:
    """The flags a notify-keyspace-events value names, None if a letter is not Redis's."""
    flags = 0
    for letter in text:
        bit = LETTERS.get(letter)
        if bit is None:
            return None
        flags |= bit
    return flags


def describe_flags(flags: int) -> str:
    """Redis's keyspaceEventsFlagsToString: A for every class (n is not among them)."""
    if flags & ALL == ALL:
        text = "A"
    else:
        text = "".join(letter for letter, bit in CLASS_LETTERS if flags & bit)
    return text + "".join(letter for letter, bit in TAIL_LETTERS if flags & bit)


class Notifications:
    """The server's notify-keyspace-events and the publishing of its events."""

    def __init__(self, pubsub, keyspace_owners):
        self.pubsub = pubsub
        # () → [(tenant name or None, its own keyspace)]: who owns a dropped key
        self.keyspace_owners = keyspace_owners
        self.flags = 0
        self.noting_drops = False
        self.from_commands = False      # some class commands report is on (not the fast path's)
        self.drop_observer = None       # (arena address, tenant id, key) → None, for every drop

    def configure(self, flags: int):
        """A new notify-keyspace-events value; nothing is published unless K or E is on."""
        self.publish_drops()
        self.flags = flags if flags & (KEYSPACE | KEYEVENT) else 0
        self.from_commands = bool(self.flags & ~(KEYSPACE | KEYEVENT | EXPIRED | EVICTED))
        self._note_drops()

    def observe_drops(self, observer):
        """Have observer told of every key the arena drops from now on (None: nobody)."""
        self.publish_drops()
        self.drop_observer = observer
        self._note_drops()

    def _note_drops(self):
        self.noting_drops = bool(self.flags & (EXPIRED | EVICTED)) or self.drop_observer is not None
        note_drops(self.noting_drops)

    def wants(self, kind: int) -> bool:
        return bool(self.flags & kind)

    def publish(self, namespace, db: int, kind: int, event: bytes, key):
        """One event of class kind on key (the caller checked that kind is on)."""
        if self.noting_drops:
            self.publish_drops()
        key = bytes(key)
        if self.flags & KEYSPACE:
            self.pubsub.publish(namespace, b"__keyspace@%d__:%s" % (db, key), event)
        if self.flags & KEYEVENT:
            self.pubsub.publish(namespace, b"__keyevent@%d__:%s" % (db, event), key)

    def publish_drops(self):
        """The "expired" and "evicted" events of the keys the arena dropped since last time."""
        if not dropped_keys_pending():
            return
        dropped = take_dropped_keys()
        if not self.noting_drops:
            return
        owners = None
        for address, event, tenant, pdb, key in dropped:
            kind = EXPIRED if event == b"expired" else EVICTED
            if self.flags & kind:
                if owners is None:
                    owners = {(keyspace.arena.address, keyspace.tenant): (namespace, keyspace)
                              for namespace, keyspace in self.keyspace_owners()}
                owner = owners.get((address, tenant))
                if owner is not None:        # (None: its tenant was dropped since)
                    namespace, keyspace = owner
                    db = keyspace.arena.logical_db(pdb) if keyspace.tenant == 0 else pdb
                    self.publish(namespace, db, kind, event, key)
            if self.drop_observer is not None:
                self.drop_observer(address, tenant, key)
