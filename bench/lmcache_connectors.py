"""LMCache 0.5.6's own remote connectors (redis://, resp://) against freshly started servers.

Every round starts each server anew (in the round's order), builds LMCache's connector
for it exactly as LMCache does in production (tests/lmcache/lmcache_driver.py, in a child
process: LMCacheEngineConfig, LocalCPUBackend, CreateConnector), and then:

* store: `--fill` bytes of distinct chunks, `--batch` chunks per call, the way LMCache's
  RemoteBackend submits a prefill's chunks (one batched_put where the connector has one,
  else every chunk's put in flight at once). The chunks are filled before the clock
  starts; this is the server's first fill.
* retrieve: the same chunks again, `--batch` per call (batched_get or concurrent gets,
  as RemoteBackend's batched_get_blocking does), `--retrieves` passes, each a sample.
  Every chunk's bytes are hashed and compared after the clock stops.

Chunk geometries are LMCache's: 1 MiB (2 layers, 256 tokens, 4 KV heads, 128 head size,
bf16) and 32 MiB (Llama-3-8B: 32 layers, 8 KV heads, fp16).
"""
import os
import sys

from common import BenchResult, MiB, Server, format_size, parse_size, round_order, standalone_main

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "lmcache"))
from lmcache_driver import (LLAMA3_8B_CHUNK, SMALL_CHUNK, LMCacheConnector,  # noqa: E402
                            missing_requirements)

GEOMETRIES = {SMALL_CHUNK.nbytes: SMALL_CHUNK, LLAMA3_8B_CHUNK.nbytes: LLAMA3_8B_CHUNK}
DEFAULT_SCHEMES = ["redis", "resp"]
DEFAULT_FILL, QUICK_FILL = 512 * MiB, 128 * MiB
DEFAULT_BATCH = 16
# Retrieve passes per round, each a sample: at 32 MiB a pass is one call, and the
# client's CPU (redis-py's asyncio reader) moves a single call's time by a third.
DEFAULT_RETRIEVES = 3


def measure(server, scheme, geometry, chunks, batch, round_no, retrieves):
    """Store GB/s, and the GB/s of each of `retrieves` passes over the stored chunks, of
    one connector on one freshly started server."""
    hashes = [(round_no << 32) | n for n in range(chunks)]
    batches = [hashes[i:i + batch] for i in range(0, chunks, batch)]
    url = f"{scheme}://127.0.0.1:{server.port}"
    nbytes = chunks * geometry.nbytes
    with LMCacheConnector(url, geometry, max_chunks=batch) as connector:
        stored = sum(connector.timed_store(part, version=round_no) for part in batches)
        passes = []
        for _ in range(retrieves):
            retrieved = 0.0
            for part in batches:
                seconds, digests = connector.timed_retrieve(part)
                retrieved += seconds
                if digests != connector.expected(part, round_no):
                    raise AssertionError(f"{server.label} over {scheme}:// returned chunks that "
                                         "differ from the ones stored (or missed some)")
            passes.append(nbytes / retrieved / 1e9)
    return nbytes / stored / 1e9, passes


def run(config, schemes=None, fill=None, batch=None, retrieves=None) -> BenchResult:
    schemes = schemes or DEFAULT_SCHEMES
    fill = fill or (QUICK_FILL if config.quick else DEFAULT_FILL)
    batch = batch or DEFAULT_BATCH
    retrieves = retrieves or DEFAULT_RETRIEVES
    result = BenchResult("lmcache_connectors", config.labels, {
        "schemes": "/".join(schemes), "fill": format_size(fill), "batch": batch,
        "retrieves": retrieves, "rounds": config.rounds})
    missing = missing_requirements()
    if missing:
        result.notes.append(f"skipped: {missing}")
        return result
    for geometry in GEOMETRIES.values():
        chunks = max(1, fill // geometry.nbytes)
        per_call = min(batch, chunks)
        name = format_size(geometry.nbytes)
        for scheme in schemes:
            for round_no in range(config.rounds):
                for spec in round_order(config.servers, round_no):
                    # Redis counts the query buffers of a batch in flight against
                    # maxmemory: leave room for them besides the chunks themselves.
                    with Server(spec, maxmemory=4 * chunks * geometry.nbytes) as server:
                        store, passes = measure(server, scheme, geometry, chunks, per_call,
                                                round_no, retrieves)
                    tags = dict(size=geometry.nbytes, scheme=scheme)
                    result.add(f"{scheme}:// store {name} (fresh server)", spec.label, store,
                               "GB/s", "higher", **tags)
                    for retrieve in passes:
                        result.add(f"{scheme}:// retrieve {name}", spec.label, retrieve,
                                   "GB/s", "higher", **tags)
    result.notes.append(f"{format_size(fill)} of chunks per phase (one chunk at least), up to "
                        f"{batch} chunks per LMCache call, one connector per server per round, each server started for "
                        "the round; every retrieved chunk is compared with what was stored.")
    return result


def add_arguments(parser):
    parser.add_argument("--schemes", type=lambda text: text.split(","),
                        help="LMCache remote URL schemes, e.g. redis,resp (default both)")
    parser.add_argument("--fill", type=parse_size, help="bytes of chunks per phase (default 512mb)")
    parser.add_argument("--batch", type=int, help=f"chunks per LMCache call (default {DEFAULT_BATCH})")
    parser.add_argument("--retrieves", type=int,
                        help=f"retrieve passes per round, each a sample (default {DEFAULT_RETRIEVES})")


def options_from_args(args) -> dict:
    return dict(schemes=args.schemes, fill=args.fill, batch=args.batch, retrieves=args.retrieves)


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
