"""LMCache-shaped traffic: chunk stores and chunk lookups with a configurable hit ratio.

It follows LMCache's Redis connector: a chunk is two keys,
``<key>kv_bytes`` (the KV tensor bytes) and ``<key>metadata`` (a ~100 byte
record: length, shape, dtype, format), where ``<key>`` is the
CacheEngineKey string ``<model>@<world>@<worker>@<chunk_hash>@<dtype>``.

* store: SET kv_bytes, then SET metadata (LMCache writes the blob first so a
  reader that sees the metadata finds the blob).
* lookup: EXISTS metadata; on a hit GET metadata and GET kv_bytes (into a
  preallocated buffer). Misses ask for chunks that were never stored.

Every worker process is one connection. Each timed phase stores or looks up
a ring of chunks; retrieved blobs and metadata are verified after the phase.
"""

import hashlib
import random
import struct
from array import array
from time import perf_counter

from blobs import STAMP_BYTES, random_tail, ring_for, stamp
from common import (BenchConfig, BenchResult, MiB, PhasedWorkload, ServerGroup, format_size,
                    parse_int_list, parse_size_list, round_order, run_phased, standalone_main)

DEFAULT_CHUNK_SIZES = [2 * MiB, 32 * MiB]
DEFAULT_CONNECTIONS = [1, 4]
DEFAULT_HIT_RATIO = 0.8
METADATA_BYTES = 100
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def chunk_key(worker: int, chunk_no: int, stored: bool) -> str:
    """An LMCache-style key; never-stored chunks get hashes from another namespace."""
    digest = hashlib.sha256(b"%d:%d:%d" % (worker, chunk_no, stored)).hexdigest()[:16]
    return f"{MODEL}@1@{worker}@{digest}@bfloat16"


def metadata_for(worker: int, chunk_no: int, size: int) -> bytes:
    """Fixed-size record shaped like LMCache's RemoteMetadata (length, shape, dtype, fmt)."""
    record = struct.pack("<QIIIIIIII", size, 2, 32, 256, 8, 128, 1, worker, chunk_no)
    return record + bytes(METADATA_BYTES - len(record))


class ChunkWorkload(PhasedWorkload):
    def __init__(self, op: str, chunk_size: int, tail: bytearray, ring: int,
                 hit_ratio: float, seed: int):
        if op not in ("store", "lookup"):
            raise ValueError(op)
        self.op, self.size, self.tail = op, chunk_size, tail
        self.ring_size, self.hit_ratio, self.seed = ring, hit_ratio, seed

    def setup(self, worker, client):
        ring = range(self.ring_size)
        self.stored_keys = [chunk_key(worker, n, True) for n in ring]
        self.blob_keys = [(key + "kv_bytes").encode() for key in self.stored_keys]
        self.meta_keys = [(key + "metadata").encode() for key in self.stored_keys]
        self.missing_meta_keys = [(chunk_key(worker, n, False) + "metadata").encode() for n in ring]
        self.stamps = [stamp(worker, n, self.size) for n in ring]
        self.metadata = [metadata_for(worker, n, self.size) for n in ring]
        self.rng = random.Random(self.seed * 1000 + worker)
        if self.op == "lookup":
            self.buffers = [bytearray(self.size) for _ in ring]
            self.found = [False] * self.ring_size
            self.lengths = [0] * self.ring_size
            self.fetched_meta = [b""] * self.ring_size

    def phase(self, worker, client, phase_no, latencies: array):
        if self.op == "store":
            tail = memoryview(self.tail)
            for n in range(self.ring_size):
                began = perf_counter()
                client.set(self.blob_keys[n], (self.stamps[n], tail))
                client.set(self.meta_keys[n], self.metadata[n])
                latencies.append(perf_counter() - began)
            return self.ring_size * (self.size + METADATA_BYTES), self.ring_size
        moved = 0
        for n in range(self.ring_size):
            hit = self.rng.random() < self.hit_ratio
            began = perf_counter()
            if hit:
                found = client.exists(self.meta_keys[n]) == 1
                if found:
                    self.fetched_meta[n] = client.get(self.meta_keys[n])
                    self.lengths[n] = client.get_into(self.blob_keys[n], self.buffers[n])
                    moved += self.size + METADATA_BYTES
            else:
                found = client.exists(self.missing_meta_keys[n]) == 1
            latencies.append(perf_counter() - began)
            self.found[n] = (hit, found)
        return moved, self.ring_size

    def verify(self, worker, phase_no):
        if self.op != "lookup":
            return
        for n, (hit, found) in enumerate(self.found):
            if hit != found:
                raise AssertionError(f"EXISTS {self.meta_keys[n]!r}: expected {hit}, got {found}")
            if not hit:
                continue
            buffer = self.buffers[n]
            if self.fetched_meta[n] != self.metadata[n] or self.lengths[n] != self.size:
                raise AssertionError(f"chunk {n}: metadata or length differs")
            if buffer[:STAMP_BYTES] != self.stamps[n] or self.tail != memoryview(buffer)[STAMP_BYTES:]:
                raise AssertionError(f"chunk {n}: kv_bytes differ from what was stored")


def run(config: BenchConfig, chunk_sizes=None, connections=None, hit_ratio: float | None = None,
        duration: float | None = None) -> BenchResult:
    chunk_sizes = chunk_sizes or DEFAULT_CHUNK_SIZES
    connections = connections or DEFAULT_CONNECTIONS
    hit_ratio = DEFAULT_HIT_RATIO if hit_ratio is None else hit_ratio
    duration = duration or (0.3 if config.quick else 1.0)
    result = BenchResult("lmcache_mix", config.labels, {
        "chunk sizes": "/".join(format_size(size) for size in chunk_sizes),
        "connections": "/".join(map(str, connections)), "hit ratio": hit_ratio,
        "metadata bytes": METADATA_BYTES, "seconds per measurement": duration,
        "rounds": config.rounds})
    rings = {size: ring_for(size, config.quick) for size in chunk_sizes}
    largest = max(size * rings[size] for size in chunk_sizes) * max(connections)
    with ServerGroup(config.servers, maxmemory=max(2 * largest, 1024 * MiB),
                     policy="noeviction") as servers:
        for size in chunk_sizes:
            tail = random_tail(size, config.seed + size)
            for conns in connections:
                for round_no in range(config.rounds):
                    for server in round_order(servers, round_no):
                        for op in ("store", "lookup"):
                            workload = ChunkWorkload(op, size, tail, rings[size], hit_ratio,
                                                     config.seed + round_no)
                            measured = run_phased(workload, server.port, conns, duration,
                                                  warmup_phases=1, server_pid=server.pid)
                            record(result, server.label, op, size, conns, measured)
                for server in servers:
                    server.flushall()
    result.notes.append("store = SET kv_bytes + SET metadata; lookup = EXISTS metadata, and on a hit "
                        "GET metadata + GET kv_bytes; latency is per chunk; GB/s counts blob + metadata "
                        "bytes moved (misses move none).")
    return result


def record(result: BenchResult, label: str, op: str, size: int, conns: int, measured) -> None:
    name = f"{op} {format_size(size)} c={conns}"
    tags = dict(op=op, size=size, conns=conns)
    result.add(f"{name} chunks/s", label, measured.ops_per_sec, "chunks/s", "higher", stat="ops", **tags)
    result.add(f"{name} throughput", label, measured.gbps, "GB/s", "higher", stat="gbps", **tags)
    result.add(f"{name} p50", label, measured.latency_ms(0.5), "ms", "lower", stat="p50", **tags)
    result.add(f"{name} p99", label, measured.latency_ms(0.99), "ms", "lower", stat="p99", **tags)
    result.add(f"{name} server CPU", label, measured.ms_per_gb(measured.server_cpu), "ms/GB", "lower",
               stat="server_cpu", **tags)


def add_arguments(parser):
    parser.add_argument("--chunk-sizes", type=parse_size_list, help="kv_bytes sizes, e.g. 2mb,32mb")
    parser.add_argument("--connections", type=parse_int_list, help="connection counts, e.g. 1,4")
    parser.add_argument("--hit-ratio", type=float, help="fraction of lookups that hit (0..1)")
    parser.add_argument("--duration", type=float, help="seconds of I/O per measurement")


def options_from_args(args) -> dict:
    return dict(chunk_sizes=args.chunk_sizes, connections=args.connections,
                hit_ratio=args.hit_ratio, duration=args.duration)


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
