"""Memory a server really holds per stored byte: after a uniform 2 MiB load and after mixed-size churn.

For each round and server, a fresh server is started (one at a time, so
two loaded servers never compete for RAM), then:

1. empty: what the idle process holds;
2. load: 2 GiB (``--load``) of 2 MiB values;
3. churn: random SETs of mixed sizes (log-uniform 4 KiB .. 8 MiB, half of
   them exact powers of two like real KV chunks, half arbitrary like partial
   chunks), overwrites and DELs, keeping the live payload near the loaded
   amount until twice that has been written; STRLEN of every live key is
   then checked against what the benchmark believes it stored;
4. idle: the same, IDLE_SECONDS later (cxlredis gives the pages of free blocks
   idle for a second back to the kernel; jemalloc purges on its own decay).

"held" counts each resident page once (see common.process_memory): the
process's smaps_rollup Rss, minus the arena pages inside that Rss, plus
the arena file's resident bytes. INFO used_memory is reported beside it.
"""

import random
import time

from common import (BenchConfig, BenchResult, GiB, KiB, MiB, Server, format_size, parse_size,
                    round_order, standalone_main)

VALUE_SIZE = 2 * MiB
CHURN_MIN, CHURN_MAX = 4 * KiB, 8 * MiB
CHURN_DELETE_SHARE = 0.2
BATCH = 16
IDLE_SECONDS = 3


def churn_size(rng: random.Random) -> int:
    if rng.random() < 0.5:
        return 1 << rng.randint(CHURN_MIN.bit_length() - 1, CHURN_MAX.bit_length() - 1)
    return rng.randint(CHURN_MIN, CHURN_MAX)


class LiveSet:
    """Which keys the benchmark stored, with sizes; O(1) random choice and removal."""

    def __init__(self):
        self.sizes: dict[bytes, int] = {}
        self.keys: list[bytes] = []
        self.index: dict[bytes, int] = {}
        self.payload = 0

    def put(self, key: bytes, size: int) -> None:
        if key in self.sizes:
            self.payload -= self.sizes[key]
        else:
            self.index[key] = len(self.keys)
            self.keys.append(key)
        self.sizes[key] = size
        self.payload += size

    def remove(self, key: bytes) -> None:
        self.payload -= self.sizes.pop(key)
        position = self.index.pop(key)
        last = self.keys.pop()
        if last != key:
            self.keys[position] = last
            self.index[last] = position

    def choice(self, rng: random.Random) -> bytes:
        return self.keys[rng.randrange(len(self.keys))]


def load(client, live: LiveSet, payload: bytes, total: int) -> None:
    count = total // VALUE_SIZE
    value = memoryview(payload)[:VALUE_SIZE]
    for first in range(0, count, BATCH):
        items = [(b"mem:%d" % n, value) for n in range(first, min(first + BATCH, count))]
        client.set_many(items)
        for key, _ in items:
            live.put(key, VALUE_SIZE)


def churn(client, live: LiveSet, payload: bytes, target: int, write_total: int, seed: int) -> int:
    """Mixed-size SET/DEL traffic around `target` live bytes; returns operations done."""
    rng = random.Random(seed)
    view = memoryview(payload)
    written = operations = 0
    next_key = len(live.keys)
    while written < write_total:
        operations += 1
        if live.keys and (live.payload > target or rng.random() < CHURN_DELETE_SHARE):
            key = live.choice(rng)
            client.delete(key)
            live.remove(key)
            continue
        size = churn_size(rng)
        if live.keys and rng.random() < 0.5:
            key = live.choice(rng)
        else:
            key, next_key = b"mem:%d" % next_key, next_key + 1
        client.set(key, view[:size])
        live.put(key, size)
        written += size
    return operations


def check_lengths(client, live: LiveSet) -> None:
    lengths = client.execute_many([(b"STRLEN", key) for key in live.keys])
    wrong = [(key, length, live.sizes[key]) for key, length in zip(live.keys, lengths)
             if length != live.sizes[key]]
    if wrong:
        raise AssertionError(f"{len(wrong)} keys have unexpected lengths, e.g. {wrong[:3]}")
    if client.execute(b"DBSIZE") != len(live.keys):
        raise AssertionError("DBSIZE differs from the number of keys stored")


def record_state(result: BenchResult, label: str, stage: str, server: Server, payload: int,
                 empty_held: int) -> None:
    memory = server.memory()
    used = server.info("memory")["used_memory"]
    result.add(f"{stage}: held / payload", label, memory["held"] / payload, "x", "lower", stage=stage)
    result.add(f"{stage}: (held - empty) / payload", label, (memory["held"] - empty_held) / payload,
               "x", "lower", stage=stage)
    result.add(f"{stage}: used_memory / payload", label, used / payload, "x", "lower", stage=stage)
    result.add(f"{stage}: held", label, memory["held"] / MiB, "MiB", "lower", stage=stage)
    result.add(f"{stage}: process Rss", label, memory["rss"] / MiB, "MiB", "", stage=stage)
    result.add(f"{stage}: arena file resident", label, memory["arena_resident"] / MiB, "MiB", "",
               stage=stage)
    result.add(f"{stage}: live payload", label, payload / MiB, "MiB", "", stage=stage)


def run(config: BenchConfig, load_bytes: int | None = None) -> BenchResult:
    load_bytes = load_bytes or ((256 * MiB) if config.quick else (2 * GiB))
    maxmemory = 2 * load_bytes + 512 * MiB  # room for Redis's allocator classes, no eviction
    result = BenchResult("memory", config.labels, {
        "load": f"{format_size(load_bytes)} of {format_size(VALUE_SIZE)} values",
        "churn": f"{format_size(CHURN_MIN)}..{format_size(CHURN_MAX)}, {format_size(2 * load_bytes)} written",
        "maxmemory": format_size(maxmemory), "rounds": config.rounds})
    payload = random.Random(config.seed).randbytes(max(VALUE_SIZE, CHURN_MAX))
    for round_no in range(config.rounds):
        for spec in round_order(config.servers, round_no):
            with Server(spec, maxmemory=maxmemory, policy="noeviction") as server, \
                    server.client() as client:
                empty_held = server.memory()["held"]
                result.add("empty server held", spec.label, empty_held / MiB, "MiB", "lower")
                live = LiveSet()
                load(client, live, payload, load_bytes)
                check_lengths(client, live)
                record_state(result, spec.label, "after load", server, live.payload, empty_held)
                churn(client, live, payload, load_bytes, 2 * load_bytes, config.seed + round_no)
                check_lengths(client, live)
                record_state(result, spec.label, "after churn", server, live.payload, empty_held)
                time.sleep(IDLE_SECONDS)
                record_state(result, spec.label, "idle after churn", server, live.payload, empty_held)
    result.notes.append("held = smaps_rollup Rss - arena pages in Rss + arena file resident bytes "
                        "(each page once); for redis-server held = Rss.")
    result.notes.append("ratios below 1 mean the server holds less memory than the baseline for the same data.")
    return result


def add_arguments(parser):
    parser.add_argument("--load", type=parse_size, help="bytes of 2 MiB values to load (default 2gb)")


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, lambda args: dict(load_bytes=args.load))
