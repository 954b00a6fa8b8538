"""Key slots, against real redis-server's CLUSTER KEYSLOT."""
import random

import pytest

from conftest import ServerProcess, free_port
from cxlredis.cluster.slots import CLUSTER_SLOTS, crc16, key_slot, keys_slot

EDGE_KEYS = [
    b"", b"{", b"}", b"{}", b"}{", b"{}{}", b"{{a}}", b"{a}}", b"a{b", b"a}b{", b"{a", b"a}",
    b"foo{}bar", b"foo{bar}", b"{bar}foo", b"foo{{bar}}zap", b"foo{bar}{zap}", b"{}{a}",
    b"{user1000}.following", b"{user1000}.followers", b"\x00{\x00}\x00", b"{\xff}",
    b"x" * 10000, b"{" + b"y" * 5000 + b"}",
]


@pytest.fixture(scope="module")
def cluster_redis():
    # an explicit bus port: the default (port + 10000) does not exist for a port above 55535
    server = ServerProcess("redis", {"cluster-enabled": "yes", "cluster-config-file": "nodes.conf",
                                     "cluster-port": free_port()})
    server.start()
    yield server
    server.close()


def real_slots(server, keys):
    client = server.client()
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.execute_command("CLUSTER", "KEYSLOT", key)
    slots = pipe.execute()
    client.close()
    return slots


def test_edge_cases_match_redis(cluster_redis):
    assert [key_slot(k) for k in EDGE_KEYS] == real_slots(cluster_redis, EDGE_KEYS)


def test_random_binary_keys_match_redis(cluster_redis):
    rng = random.Random(14)
    alphabet = b"{}ab\x00\xff"   # many braces: tags in every position
    keys = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 12))) for _ in range(3000)]
    keys += [rng.randbytes(rng.randrange(0, 64)) for _ in range(3000)]
    assert [key_slot(k) for k in keys] == real_slots(cluster_redis, keys)


def test_buffers_are_accepted_as_they_are():
    key = b"xx{user1000}.followers"
    assert key_slot(bytearray(key)) == key_slot(key) == key_slot(memoryview(b"--" + key)[2:])
    assert key_slot(memoryview(key)[2:]) == key_slot(b"{user1000}.followers")
    with pytest.raises(TypeError):
        key_slot("text")
    with pytest.raises(BufferError):
        key_slot(memoryview(b"abcdef")[::2])


def test_crc16_is_xmodem():
    assert crc16(b"123456789") == 0x31C3
    assert key_slot(b"123456789") == 0x31C3 & (CLUSTER_SLOTS - 1)


def test_keys_slot_spots_cross_slot_keys():
    assert keys_slot([]) is None
    assert keys_slot([b"{t}a", b"{t}b"]) == key_slot(b"t")
    with pytest.raises(ValueError):
        keys_slot([b"a", b"b"])
