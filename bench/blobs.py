"""Blob SET and GET throughput (GB/s) and p50/p99 latency, 1 and N connections.

Each connection is its own process (no GIL sharing), all in lock-step
phases (see common.run_phased). A worker owns a ring of keys; a SET phase
writes each once, the following GET phase reads each into its own
preallocated buffer, and after the phase every buffer is compared with the
value that was written (memcmp speed, outside the timed window).

A value is a 16-byte stamp (worker, key number, size) followed by a shared
random tail, sent as [header, stamp, tail, CRLF] with one sendmsg: every key
holds different bytes, so a server that mixes up keys or tears a value fails
verification.
"""

import random
import struct
from array import array
from time import perf_counter

from common import (BenchConfig, BenchResult, MiB, KiB, PhasedWorkload, ServerGroup,
                    format_size, parse_int_list, parse_size_list, round_order, run_phased,
                    standalone_main)

STAMP_BYTES = 16
DEFAULT_SIZES = [256 * KiB, 2 * MiB, 32 * MiB]
DEFAULT_CONNECTIONS = [1, 4]
# per worker: the values one phase moves (a GET phase keeps them all for verification)
RING_BUDGET, QUICK_RING_BUDGET = 128 * MiB, 32 * MiB
MIN_RING = 4


def random_tail(size: int, seed: int) -> bytearray:
    return bytearray(random.Random(seed).randbytes(size - STAMP_BYTES))


def stamp(worker: int, key_no: int, size: int) -> bytes:
    return struct.pack("<IIQ", worker, key_no, size)


class BlobWorkload(PhasedWorkload):
    """op 'set' or 'get' over a ring of keys per worker."""

    def __init__(self, op: str, size: int, key_prefix: str, tail: bytearray,
                 ring: int, verify: bool = True):
        if op not in ("set", "get"):
            raise ValueError(op)
        self.op, self.size, self.key_prefix = op, size, key_prefix
        self.tail, self.ring_size, self.check = tail, ring, verify

    def setup(self, worker, client):
        self.keys = [f"{self.key_prefix}:{worker}:{n}".encode() for n in range(self.ring_size)]
        self.stamps = [stamp(worker, n, self.size) for n in range(self.ring_size)]
        if self.op == "get":
            self.buffers = [bytearray(self.size) for _ in range(self.ring_size)]
            self.lengths = [0] * self.ring_size

    def phase(self, worker, client, phase_no, latencies: array):
        clock = perf_counter
        if self.op == "set":
            tail = memoryview(self.tail)
            for key, key_stamp in zip(self.keys, self.stamps):
                began = clock()
                client.set(key, (key_stamp, tail))
                latencies.append(clock() - began)
        else:
            lengths = self.lengths
            for n, (key, buffer) in enumerate(zip(self.keys, self.buffers)):
                began = clock()
                lengths[n] = client.get_into(key, buffer)
                latencies.append(clock() - began)
        return self.ring_size * self.size, self.ring_size

    def verify(self, worker, phase_no):
        if self.op != "get" or not self.check:
            return
        for key, key_stamp, buffer, length in zip(self.keys, self.stamps, self.buffers, self.lengths):
            if length != self.size:
                raise AssertionError(f"GET {key!r}: length {length}, expected {self.size}")
            # bytearray == memoryview compares with memcmp, no copy
            if buffer[:STAMP_BYTES] != key_stamp or self.tail != memoryview(buffer)[STAMP_BYTES:]:
                raise AssertionError(f"GET {key!r}: value differs from what was SET")


def ring_for(size: int, quick: bool = False) -> int:
    """Keys per worker ring: one phase moves about the budget, at least MIN_RING values."""
    return max(MIN_RING, (QUICK_RING_BUDGET if quick else RING_BUDGET) // size)


def run(config: BenchConfig, sizes=None, connections=None, duration: float | None = None) -> BenchResult:
    sizes = sizes or DEFAULT_SIZES
    connections = connections or DEFAULT_CONNECTIONS
    duration = duration or (0.3 if config.quick else 1.0)
    result = BenchResult("blobs", config.labels, {
        "sizes": "/".join(format_size(size) for size in sizes),
        "connections": "/".join(map(str, connections)),
        "seconds per measurement": duration, "rounds": config.rounds})
    largest = max(size * ring_for(size, config.quick) for size in sizes) * max(connections)
    maxmemory = max(2 * largest, 1024 * MiB)
    with ServerGroup(config.servers, maxmemory=maxmemory, policy="noeviction") as servers:
        for size in sizes:
            tail = random_tail(size, config.seed + size)
            ring = ring_for(size, config.quick)
            for conns in connections:
                prefix = f"blob:{size}:{conns}"
                for round_no in range(config.rounds):
                    for server in round_order(servers, round_no):
                        for op in ("set", "get"):
                            workload = BlobWorkload(op, size, prefix, tail, ring)
                            measured = run_phased(workload, server.port, conns, duration,
                                                  warmup_phases=1, server_pid=server.pid)
                            record(result, server.label, op, size, conns, measured)
                for server in servers:
                    server.flushall()
    result.notes.append(
        "GB/s = bytes moved / summed phase windows (first worker start to last worker end); "
        "latency is per command as the client sees it; every GET was verified byte-exact.")
    return result


def record(result: BenchResult, label: str, op: str, size: int, conns: int, measured) -> None:
    name = f"{op.upper()} {format_size(size)} c={conns}"
    tags = dict(op=op.upper(), size=size, conns=conns)
    result.add(f"{name} throughput", label, measured.gbps, "GB/s", "higher", stat="gbps", **tags)
    result.add(f"{name} p50", label, measured.latency_ms(0.5), "ms", "lower", stat="p50", **tags)
    result.add(f"{name} p99", label, measured.latency_ms(0.99), "ms", "lower", stat="p99", **tags)
    result.add(f"{name} server CPU", label, measured.ms_per_gb(measured.server_cpu), "ms/GB", "lower",
               stat="server_cpu", **tags)


def add_arguments(parser):
    parser.add_argument("--sizes", type=parse_size_list, help="value sizes, e.g. 256kb,2mb,32mb")
    parser.add_argument("--connections", type=parse_int_list, help="connection counts, e.g. 1,4")
    parser.add_argument("--duration", type=float, help="seconds of I/O per measurement")


def options_from_args(args) -> dict:
    return dict(sizes=args.sizes, connections=args.connections, duration=args.duration)


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
