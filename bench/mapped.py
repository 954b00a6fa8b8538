"""Co-located (mapped) GET and SET against RESP GET/SET on Redis and cxlredis, with
single-thread memcpy bandwidth measured in the same run.

One client process, one connection per server. For each value size:
- memcpy: numpy copy between two preallocated buffers of that size (the ceiling of
  a copying read);
- RESP GET / SET: the bench's BlobClient (GET straight into a reused buffer);
- mapped GET: cxlredis.local get_into (CXL GETREF, one memcpy out of the mapping into
  a reused buffer, lease check, release riding on the next command);
- mapped view: CXL GETREF and a zero-copy view, checked and released, no copy
  (reported separately, in µs per read: no bytes move, the consumer reads them in place);
- mapped SET: reserve + memcpy into the mapping + commit.
GB/s = value bytes per second. Every mapped GET is compared with the value once
per round, outside the timed loop.
"""

import os
import sys
import time

import numpy

from common import (REPO_DIR, BenchResult, MiB, ServerGroup, ServerSpec, format_size,
                    parse_size_list, round_order, standalone_main)

sys.path.insert(0, REPO_DIR)
from cxlredis.local import LocalClient  # noqa: E402

DEFAULT_SIZES = [2 * MiB, 32 * MiB]
LABELS = ["redis", "cxlredis", "mapped", "memcpy"]


def timed(fn, size, duration):
    """Run fn until duration passes (at least 3 times); GB/s."""
    fn()                                        # warm: page tables, sockets
    count, began = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        elapsed = time.perf_counter() - began
        if elapsed >= duration and count >= 3:
            return count * size / elapsed / 1e9


def run(config, sizes=None, duration=None):
    sizes = sizes or DEFAULT_SIZES
    duration = duration or (0.3 if config.quick else 1.0)
    result = BenchResult("mapped", LABELS, {
        "sizes": "/".join(format_size(s) for s in sizes), "seconds per measurement": duration,
        "rounds": config.rounds})
    specs = [ServerSpec("redis", "redis"),
             ServerSpec("cxlredis", "cxlredis",
                        config.servers[-1].cxlredis_cmd + " --unixsocket {workdir}/s.sock")]
    with ServerGroup(specs, maxmemory=4 * max(sizes) + 512 * MiB, policy="noeviction") as servers:
        redis_server, cxl_server = servers
        kv = LocalClient(unix_socket_path=os.path.join(cxl_server.workdir, "s.sock"))
        if not kv.mapped:
            raise SystemExit(f"cxlredis is not mapped: {kv.why_not_mapped}")
        clients = {s.label: s.client() for s in servers}
        try:
            for size in sizes:
                value = numpy.random.default_rng(config.seed).integers(0, 255, size, dtype=numpy.uint8)
                key = f"blob:{size}".encode()
                out = numpy.empty(size, dtype=numpy.uint8)
                for round_no in range(config.rounds):
                    for server in round_order(servers, round_no):
                        client = clients[server.label]
                        result.add(f"SET {format_size(size)}", server.label,
                                   timed(lambda: client.set(key, value.data), size, duration), "GB/s")
                        result.add(f"GET {format_size(size)}", server.label,
                                   timed(lambda: client.get_into(key, out), size, duration), "GB/s")
                    result.add(f"SET {format_size(size)}", "mapped",
                               timed(lambda: kv.set(key, value), size, duration), "GB/s")
                    result.add(f"GET {format_size(size)}", "mapped",
                               timed(lambda: kv.get_into(key, out), size, duration), "GB/s")
                    if not numpy.array_equal(out, value):
                        raise AssertionError(f"mapped GET of {format_size(size)} differs from the value")

                    def view_read():
                        with kv.get(key) as ref:
                            if not ref.valid():
                                raise AssertionError("lease ran out during a view read")
                    per_read_us = size / (timed(view_read, size, duration) * 1e9) * 1e6
                    result.add(f"GET {format_size(size)} zero-copy view", "mapped", per_read_us,
                               "µs per read", "lower")
                    copy_target = numpy.empty_like(value)
                    copy = timed(lambda: numpy.copyto(copy_target, value), size, duration)
                    for name in (f"GET {format_size(size)}", f"SET {format_size(size)}"):
                        result.add(name, "memcpy", copy, "GB/s")
        finally:
            kv.close()
            for client in clients.values():
                client.close()
    for size in sizes:
        for op in ("GET", "SET"):
            medians = result.medians(f"{op} {format_size(size)}")
            result.notes.append(
                f"{op} {format_size(size)}: mapped/redis {medians['mapped'] / medians['redis']:.2f}, "
                f"mapped/memcpy {medians['mapped'] / medians['memcpy']:.2f}")
    result.notes.append("memcpy: numpy.copyto of the value size, single thread, same run; "
                        "the zero-copy view row moves no bytes (GETREF + check + release).")
    return result


def add_arguments(parser):
    parser.add_argument("--sizes", type=parse_size_list, help="value sizes, e.g. 2mb,32mb")
    parser.add_argument("--duration", type=float, help="seconds per measurement")


def options_from_args(args):
    return dict(sizes=args.sizes, duration=args.duration)


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
