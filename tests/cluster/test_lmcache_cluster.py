"""LMCache 0.5.6's redis-cluster:// connector, built by its own CreateConnector, over a
cxlredis cluster: chunks spread over the shards by slot, read back byte for byte."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lmcache"))
from lmcache_driver import SMALL_CHUNK, LMCacheConnector, missing_requirements  # noqa: E402

from cluster_harness import cluster_node, formed  # noqa: E402

_missing = missing_requirements()
if _missing:
    pytest.skip(f"LMCache is not installed: {_missing}", allow_module_level=True)


@pytest.fixture(scope="module")
def shards():
    with formed([cluster_node("cxlredis", arena_size="256mb") for _ in range(3)]) as nodes:
        yield nodes


@pytest.fixture(scope="module")
def lm(shards):
    url = "redis-cluster://" + ",".join(f"127.0.0.1:{n.port}" for n in shards)
    connector = LMCacheConnector(url, SMALL_CHUNK, max_chunks=64)
    try:
        yield connector.start()
    finally:
        connector.close()


def test_chunks_spread_over_every_shard_and_read_back_exactly(lm, shards):
    hashes = list(range(0x5000, 0x5000 + 48))
    assert lm.exists(hashes) == [False] * len(hashes)
    for start in range(0, len(hashes), 16):
        lm.put(hashes[start:start + 16], version=1)
    assert lm.exists(hashes) == [True] * len(hashes)
    assert lm.contains(hashes) == len(hashes)
    assert lm.get(hashes) == lm.expected(hashes, 1)
    # two keys per chunk (kv_bytes and metadata), on whichever shard owns each slot
    counts = [n.client().dbsize() for n in shards]
    assert all(counts) and sum(counts) == 2 * len(hashes)
    assert lm.get([0x5fff]) == [None]
