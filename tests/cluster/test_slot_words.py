"""The slot words of CLUSTER NODES and nodes.conf ("0-5460", "7000"), for scattered slots:
the same as redis-server 7.0 writes for the same slots, and read back after a restart."""
import random

import pytest

from cluster_harness import cluster_node, close_all

# Runs and single slots at both ends and inside, and a node that owns every slot.
LAYOUTS = {
    "edges": [0, 1, 2, 16383],
    "singletons": [5, 7, 9, 8000, 16382],
    "runs": list(range(0, 100)) + list(range(101, 5461)) + list(range(16000, 16384)),
    "all": list(range(16384)),
    "random": sorted(random.Random(14).sample(range(16384), 3000)),
}


def myself_words(node):
    for line in node.client().execute_command("CLUSTER", "NODES").decode().splitlines():
        words = line.split()
        if "myself" in words[2].split(","):
            return words[8:]
    raise AssertionError("no myself line")


@pytest.fixture(scope="module")
def pair():
    nodes = [cluster_node("cxlredis"), cluster_node("redis")]
    try:
        yield nodes
    finally:
        close_all(nodes)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_slot_words_match_redis(pair, layout):
    for node in pair:
        client = node.client()
        client.execute_command("CLUSTER", "FLUSHSLOTS")
        client.execute_command("CLUSTER", "ADDSLOTS", *LAYOUTS[layout])
    cxl, oracle = map(myself_words, pair)
    assert cxl == oracle
    assert sum(int(w.split("-")[-1]) - int(w.split("-")[0]) + 1 for w in cxl) == len(LAYOUTS[layout])


def test_scattered_slots_survive_a_restart(pair):
    cxl = pair[0]
    client = cxl.client()
    client.execute_command("CLUSTER", "FLUSHSLOTS")
    client.execute_command("CLUSTER", "ADDSLOTS", *LAYOUTS["random"])
    before = myself_words(cxl)
    cxl.restart()
    assert myself_words(cxl) == before
    assert cxl.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", 0) == 0
