"""A freshly started server: start-up time, and SET throughput into fresh memory (the
first fill) against the same SETs once its memory is warm.

Every round starts each server anew (in the round's order) on a fresh arena, times it
from exec to its first PONG, then SETs `--fill` bytes of distinct keys from one
connection (the first fill: every page is new to the process), and SETs the same keys
again (warm: the allocator reuses the blocks the first values leave). The `first/warm`
row is each server against itself; the others are cxlredis against redis as usual.
Values are stamped per key and a sample of keys is read back and compared after each
pass, outside the timed window.
"""
import time

from blobs import STAMP_BYTES, random_tail, stamp
from common import (BenchResult, MiB, GiB, Server, format_size, parse_size, parse_size_list,
                    round_order, standalone_main)

DEFAULT_SIZES = [2 * MiB, 32 * MiB]
DEFAULT_FILL, QUICK_FILL = 1 * GiB, 256 * MiB


def timed_set_pass(client, keys, size, tail):
    tail_view = memoryview(tail)
    began = time.perf_counter()
    for number, key in enumerate(keys):
        client.set(key, (stamp(0, number, size), tail_view))
    return len(keys) * size / (time.perf_counter() - began) / 1e9


def verify_sample(client, keys, size, tail):
    for number in range(0, len(keys), max(1, len(keys) // 16)):
        value = client.get(keys[number])
        if value is None or len(value) != size or value[:STAMP_BYTES] != stamp(0, number, size) \
                or memoryview(value)[STAMP_BYTES:] != tail:
            raise AssertionError(f"GET {keys[number]!r} differs from what was SET")


def run(config, sizes=None, fill=None, arena_size=None, arena_dir=None) -> BenchResult:
    sizes = sizes or DEFAULT_SIZES
    fill = fill or (QUICK_FILL if config.quick else DEFAULT_FILL)
    maxmemory = 2 * fill
    result = BenchResult("first_fill", config.labels, {
        "sizes": "/".join(format_size(size) for size in sizes), "fill": format_size(fill),
        "arena": format_size(arena_size) if arena_size else "default",
        "arena dir": arena_dir or "/dev/shm", "rounds": config.rounds})
    for size in sizes:
        tail = random_tail(size, config.seed + size)
        keys = [f"fill:{size}:{n}".encode() for n in range(fill // size)]
        for round_no in range(config.rounds):
            for spec in round_order(config.servers, round_no):
                began = time.perf_counter()
                with Server(spec, maxmemory=maxmemory, arena_size=arena_size,
                            arena_dir=arena_dir) as server:
                    started = time.perf_counter() - began
                    with server.client() as client:
                        first = timed_set_pass(client, keys, size, tail)
                        verify_sample(client, keys, size, tail)
                        warm = timed_set_pass(client, keys, size, tail)
                        verify_sample(client, keys, size, tail)
                name = format_size(size)
                tags = dict(size=size)
                result.add(f"SET {name} first fill", spec.label, first, "GB/s", "higher", **tags)
                result.add(f"SET {name} warm", spec.label, warm, "GB/s", "higher", **tags)
                result.add(f"SET {name} first/warm", spec.label, first / warm, "x", "higher", **tags)
                result.add("start-up (exec to PONG)", spec.label, started * 1000, "ms", "lower")
    result.notes.append("first fill: distinct keys into a server started for this round; warm: "
                        "the same keys again, over the blocks the first pass leaves.")
    return result


def add_arguments(parser):
    parser.add_argument("--sizes", type=parse_size_list, help="value sizes, e.g. 2mb,32mb")
    parser.add_argument("--fill", type=parse_size, help="bytes SET per pass (default 1gb)")
    parser.add_argument("--arena-size", type=parse_size,
                        help="cxlredis's arena (default: sized from the fill), e.g. 10gb")
    parser.add_argument("--arena-dir", help="where cxlredis's arena goes, e.g. a hugetlbfs or "
                                            "huge=always tmpfs mount or a disk (default /dev/shm)")


def options_from_args(args) -> dict:
    return dict(sizes=args.sizes, fill=args.fill, arena_size=args.arena_size, arena_dir=args.arena_dir)


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
