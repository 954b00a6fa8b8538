"""Large value arguments received straight into reserved arena blocks."""


class SlotArg:
    """A large value argument received straight into a reserved arena block."""

    __slots__ = ("store", "off", "length", "consumed")

    def __init__(self, store, off, length):
        self.store = store
        self.off = off
        self.length = length
        self.consumed = False

    def __len__(self):
        return self.length

    def view(self):
        return self.store.slot(self.off)

    def __bytes__(self):
        return bytes(self.store.slot(self.off))

    def commit(self, db, key, expire_at=-1, keep_ttl=False):
        """Make the received value visible under key; the block now belongs to the index."""
        self.consumed = True
        return self.store.commit(self.off, db, key, expire_at, 0, keep_ttl)

    def release(self):
        if not self.consumed:
            self.consumed = True
            self.store.release(self.off)


def release_slots(argv):
    """Free arena reservations a command received but did not store (errors, NX misses)."""
    for arg in argv:
        if type(arg) is SlotArg:
            arg.release()
