"""Large value arguments received straight into reserved arena blocks (SlotArg, of the
store, where the fast path commits them too)."""
from ._store import SlotArg


def release_slots(argv):
    """Free arena reservations a command received but did not store (errors, NX misses)."""
    for arg in argv:
        if type(arg) is SlotArg:
            arg.release()
