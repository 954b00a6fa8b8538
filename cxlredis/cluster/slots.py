"""Key slots: which of the 16384 cluster slots a key belongs to (the C lives in cxlredis._cluster)."""
from .._cluster import CLUSTER_SLOTS, crc16, key_slot

__all__ = ["CLUSTER_SLOTS", "crc16", "key_slot", "keys_slot"]


def keys_slot(keys):
    """The one slot all keys hash to, None for no keys; ValueError when they differ (CROSSSLOT)."""
    slot = None
    for key in keys:
        this = key_slot(key)
        if slot is None:
            slot = this
        elif this != slot:
            raise ValueError("keys hash to different slots")
    return slot
