"""Leases on arena blocks handed to co-located clients (the CXL command family).

A client that maps the arena's backing reads a value, or fills a reserved block,
through its own mapping, outside the server's control. A lease is the server's
promise that the block stays what it was while the client does so:

- a *reference* (CXL GETREF/MGETREF) pins a live entry: its block is not freed or
  reused, and no write touches its value bytes (every rewrite is copy-on-write;
  an in-place APPEND only writes past the old length), until the lease ends;
- a *slot* (CXL RESERVE) is an uncommitted reservation the client fills and then
  commits (CXL COMMIT: the ordinary commit, so the value becomes visible atomically,
  invariant 1) or aborts.

A lease ends when its owner releases it (RELEASE, COMMIT, ABORT) or when it
expires. Closing the owning connection does not end it early: the socket closing
does not prove the process stopped touching its mapping, so its leases run to
their expiry (a slot can then no longer be committed). An expired slot is freed
one more lease period later, so a writer that overran its deadline stalls into a
block nobody else holds yet. Expiry runs from the server's cron (Server._cron_tick).

Leased memory cannot be evicted, so each keyspace (a tenant, or the administrators'
default keyspace) may hold at most cxl-lease-max-bytes under leases at once: a lease
costs its value, key and one entry header, from its grant until it ends. The cap is per
keyspace, not per connection or user: a client opens connections at will, and leases
outlive their connection; the keyspace is also what quotas and eviction already count.

Times are CLOCK_MONOTONIC, which every process on the host shares; clients are
given a time-to-live, not a wall-clock instant.
"""
import heapq
import itertools
import time

from .errors import CommandError
from .slots import SlotArg

REF, SLOT = "ref", "slot"
# How a refusal starts (after "ERR "): LocalClient recognises it and falls back to RESP.
LEASE_CAP_REFUSAL = "CXL lease cap reached"


class Lease:
    __slots__ = ("id", "kind", "store", "off", "owner", "expires", "frees", "db", "key", "ttl_ms",
                 "cost")

    def __init__(self, lease_id, kind, store, off, owner, expires, frees, cost):
        self.id = lease_id
        self.kind = kind
        self.store = store               # the keyspace the block was leased from
        self.off = off                   # entry offset (the block's header) in store.arena
        self.owner = owner               # the owning client's id; 0 once it disconnected
        self.expires = expires           # monotonic seconds: what the client was promised
        self.frees = frees               # monotonic seconds: when the server lets go
        self.cost = cost                 # bytes counted against the keyspace's lease cap
        self.db = self.key = None        # a slot's destination
        self.ttl_ms = None               # a slot's EX/PX, applied at commit

    @property
    def mapped_offset(self):
        """Where a process mapping the backing finds the leased value (or fills a slot)."""
        return self.store.value_offset(self.off)

    def commit(self, expire_at):
        """A slot's value becomes its key's, as a value received into a slot does (SET):
        visible at once, whole, in the keyspace the block was reserved in."""
        SlotArg(self.store, self.off, self.store.value_len(self.off)).commit(self.db, self.key, expire_at)


class Leases:
    """Every lease of the server, by id; pins and reservations are taken through the arena."""

    def __init__(self, config):
        self.config = config
        self.by_id = {}
        self.by_owner = {}               # client id -> set of lease ids
        self._schedule = []              # heap of (frees, id); released leases are skipped
        self._ids = itertools.count(1)
        # Since start, by kind: leases granted, and leases that ran out instead of being
        # released (a client that died, stalled or forgot them); slots committed.
        self.granted = {REF: 0, SLOT: 0}
        self.expired = {REF: 0, SLOT: 0}
        self.refused = {REF: 0, SLOT: 0}    # commands refused by the lease cap
        self.commits = 0
        self.leased = {}                 # (arena, tenant id) -> bytes its leases hold
        self._header_bytes = None

    @property
    def lease_ms(self):
        return self.config["cxl-lease-ms"]

    def cost(self, store, key_len, value_len):
        """What a lease on a key_len + value_len entry of `store` counts against its cap."""
        if self._header_bytes is None:
            self._header_bytes = store.arena.layout()["header_bytes"]
        return self._header_bytes + key_len + value_len

    def cap(self, store):
        """cxl-lease-max-bytes for `store`; by default a quarter of its quota or maxmemory."""
        configured = self.config["cxl-lease-max-bytes"]
        if configured:
            return configured
        arena = store.arena
        # a tenant's namespace has a quota; an arena (the server's, or a tenant's own one,
        # sized for its quota) has maxmemory, 0 being its whole size
        return (getattr(store, "quota", 0) or arena.maxmemory or arena.size) // 4

    def admit(self, client, kind, cost):
        """Refuse (CommandError) a lease of `cost` bytes that would take the client's
        keyspace past its cap."""
        store = client.store
        held = self.leased.get((store.arena, store.tenant), 0)
        cap = self.cap(store)
        if held + cost > cap:
            self.refused[kind] += 1
            whose = "the default keyspace" if client.tenant is None else f"tenant '{client.tenant}'"
            raise CommandError(
                f"ERR {LEASE_CAP_REFUSAL}: {whose} holds {held} leased bytes, and {cost} more "
                f"would pass cxl-lease-max-bytes ({cap}); release leases or let them expire")

    def _add(self, kind, store, off, owner, cost):
        now = time.monotonic()
        period = self.lease_ms / 1000
        # a slot outlives its expiry by one more period (see the module docstring)
        lease = Lease(next(self._ids), kind, store, off, owner, now + period,
                      now + period * (2 if kind == SLOT else 1), cost)
        self.by_id[lease.id] = lease
        self.granted[kind] += 1
        account = (store.arena, store.tenant)
        self.leased[account] = self.leased.get(account, 0) + cost
        self.by_owner.setdefault(owner, set()).add(lease.id)
        heapq.heappush(self._schedule, (lease.frees, lease.id))
        return lease

    def reference(self, client, entry, key):
        """Pin live `entry` (under key, found in the client's keyspace) for it; returns
        the lease, or raises CommandError past the lease cap."""
        store = client.store
        cost = self.cost(store, len(key), entry.value_len)
        self.admit(client, REF, cost)
        _, off = entry.pin()
        return self._add(REF, store, off, client.id, cost)

    def slot(self, client, nbytes, db, key, ttl_ms):
        """Reserve a block of nbytes in the client's keyspace and own it on the client's
        behalf, to be committed there under (db, key): CommandError past the lease cap,
        OutOfMemory when the keyspace has no room (nothing reserved either way)."""
        store = client.store
        cost = self.cost(store, len(key), nbytes)
        self.admit(client, SLOT, cost)
        lease = self._add(SLOT, store, store.reserve(nbytes, len(key)), client.id, cost)
        lease.db, lease.key, lease.ttl_ms = db, key, ttl_ms
        return lease

    def owned(self, client, lease_id, kind=None):
        """The client's live lease `lease_id` (of `kind`), or None."""
        lease = self.by_id.get(lease_id)
        if lease is None or lease.owner != client.id or (kind is not None and lease.kind != kind):
            return None
        return lease

    def end(self, lease):
        """Let go of a lease: unpin a reference, free a slot that was not committed."""
        del self.by_id[lease.id]
        owned = self.by_owner.get(lease.owner)
        if owned is not None:
            owned.discard(lease.id)
            if not owned:
                del self.by_owner[lease.owner]
        account = (lease.store.arena, lease.store.tenant)
        left = self.leased[account] - lease.cost
        if left:
            self.leased[account] = left
        else:
            del self.leased[account]
        arena = lease.store.arena       # the arena reaches the block even if its tenant went
        if lease.kind == REF:
            arena.unpin(lease.off)
        elif lease.key is not None:     # a slot not yet committed
            arena.release(lease.off)

    def committed(self, lease):
        """A slot's block now belongs to the index: end the lease without freeing it."""
        self.commits += 1
        lease.key = None
        self.end(lease)

    def disown(self, client):
        """The client disconnected: its leases run to their expiry with no owner."""
        for lease_id in self.by_owner.pop(client.id, ()):
            self.by_id[lease_id].owner = 0

    def expire(self, now=None):
        """End every lease whose time is up (the server's cron calls this)."""
        now = time.monotonic() if now is None else now
        schedule = self._schedule
        while schedule and schedule[0][0] <= now:
            _, lease_id = heapq.heappop(schedule)
            lease = self.by_id.get(lease_id)
            if lease is not None:
                self.expired[lease.kind] += 1
                self.end(lease)

    def arenas(self):
        """The arenas some lease still refers to."""
        return {lease.store.arena for lease in self.by_id.values()}

    def info_lines(self):
        """INFO arena's lease lines: held now, and counters since start."""
        refs, slots = self.counts()
        return [("cxl_leases_refs", refs), ("cxl_leases_slots", slots),
                ("cxl_leased_bytes", self.leased_bytes()),
                ("cxl_refs_granted", self.granted[REF]), ("cxl_slots_granted", self.granted[SLOT]),
                ("cxl_refs_expired", self.expired[REF]), ("cxl_slots_expired", self.expired[SLOT]),
                ("cxl_refs_refused", self.refused[REF]), ("cxl_slots_refused", self.refused[SLOT]),
                ("cxl_slots_committed", self.commits)]

    def leased_bytes(self):
        """Bytes held under leases now, over every keyspace (what the caps count)."""
        return sum(list(self.leased.values()))          # (the metrics thread too)

    def counts(self, arena=None):
        """(references, slots) held on `arena` (None: on any arena)."""
        kinds = [lease.kind for lease in list(self.by_id.values())   # (the metrics thread too)
                 if arena is None or lease.store.arena is arena]
        return kinds.count(REF), kinds.count(SLOT)
