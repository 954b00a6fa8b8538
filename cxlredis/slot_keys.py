"""The keys of a cluster slot, of every tenant.

A slot moves between nodes, or is dropped by a node that lost it, whole: with the keys
of every tenant, not only those of the connection asking. So an administrator (a user of
no tenant) resharding with redis-cli sees the keys of every tenant in COUNTKEYSINSLOT and
GETKEYSINSLOT, and its MIGRATE of a key in a slot this node is migrating moves that key
of every tenant that has one (commands/migration.py, with RESTORE-ASKING's TENANT
option). A tenant's own users see their own keys there, as everywhere.
"""


class SlotKeys:
    """Every tenant's keys of db 0 (a cluster has only db 0), by slot, from each arena's
    slot index."""

    def __init__(self, tenants):
        self.tenants = tenants

    def keyspaces(self):
        """(tenant name, None for the default one; its own keyspace) of every tenant."""
        return self.tenants.own_keyspaces()

    def count(self, slot):
        return sum(keyspace.count_keys_in_slot(0, slot) for _, keyspace in self.keyspaces())

    def names(self, slot, count):
        """Up to count names of keys in the slot, each once however many tenants have
        it, the default tenant's first."""
        names = {}
        for _, keyspace in self.keyspaces():
            if len(names) >= count:
                break
            # count of them hold at least count - len(names) new names, if it has those
            names.update(dict.fromkeys(keyspace.keys_in_slot(0, slot, count)))
        return list(names)[:count]

    def holders(self, key):
        """(tenant name, keyspace, entry) of every tenant that has key."""
        found = []
        for name, keyspace in self.keyspaces():
            entry = keyspace.find(0, key)
            if entry is not None:
                found.append((name, keyspace, entry))
        return found

    def any(self):
        """Whether any tenant has a key (a node must be empty to be flushed of its slots
        or reset)."""
        return any(keyspace.dbsize(0) for _, keyspace in self.keyspaces())

    def any_in(self, slot):
        return any(keyspace.keys_in_slot(0, slot, 1) for _, keyspace in self.keyspaces())

    def delete(self, slots):
        for _, keyspace in self.keyspaces():
            for slot in slots:
                for key in keyspace.keys_in_slot(0, slot):
                    keyspace.delete(0, key)
        tier = self.tenants.arena.tier
        if tier is not None:
            tier.forget(slots=set(slots))     # copies of the slots' keys, every tenant's
