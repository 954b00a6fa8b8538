"""Soak: hours-long behaviour in minutes — a full arena under eviction and TTL churn.

    python bench/soak.py --minutes 10

Starts one cxlredis (nothing else) with maxmemory far below the data written,
runs worker processes doing SET (a third with a TTL of 50 ms-3 s) / GET / DEL /
PEXPIRE of self-checking values from 1 KiB to 8 MiB (log-uniform) over a
keyspace several times larger than the arena, and every --interval seconds
samples the server: RSS (total, anonymous, arena/shared), open file
descriptors (/proc/<pid>/fd), INFO memory/arena/stats/clients, and the p50/p99
latency of a probe GET (64 KiB).  At the end it stops the load and checks:

* every value read back was intact (a header with key, length and CRC32);
* RSS is flat: the slope of anonymous RSS (the process's own heap; arena pages
  are shared memory and fill up once) over the run after warm-up;
* the arena's accounting equals the sum of its live entries (``arena_heap_used``
  == sum of ``MEMORY USAGE`` over every key, ``arena_entries`` == DBSIZE, nothing
  pinned, reserved or zombie) and ``DEBUG ARENA-CHECK`` is clean;
* the number of open file descriptors did not grow.

It prints a table of the samples and the verdicts, writes everything to
bench/results/soak-<timestamp>.json, and exits 1 if a check failed.
Not part of CI.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import sys
import time
import zlib

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

from blobclient import BlobClient, ReplyError  # noqa: E402
from common import (KiB, MiB, Server, ServerSpec, format_size, parse_info,  # noqa: E402
                    parse_size, percentile, process_memory)

COUNTERS = ("ops", "sets", "gets", "hits", "dels", "expires", "oom", "corrupt")
PROBE_KEY = b"soak:probe"
PROBE_SIZE = 64 * KiB
PROBE_GETS = 200
BLOCK = 4 * KiB


def make_value(key: bytes, seq: int, size: int, rng: random.Random) -> bytes:
    """Header "<key|seq|length|crc32>" then a body built from one random block."""
    body_len = max(size - 64, 1)
    body = (rng.randbytes(BLOCK) * (body_len // BLOCK + 1))[:body_len]
    header = b"<%s|%d|%d|%08x>" % (key, seq, body_len, zlib.crc32(body))
    return header + body


def value_intact(key: bytes, value: bytes) -> bool:
    end = value.find(b">", 0, 200)
    fields = value[1:end].split(b"|") if value[:1] == b"<" and end > 0 else []
    if len(fields) != 4 or fields[0] != key:
        return False
    body = memoryview(value)[end + 1:]
    return len(body) == int(fields[2]) and zlib.crc32(body) == int(fields[3], 16)


def log_uniform_size(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def worker(wid: int, port: int, args, counters, stop) -> None:
    rng = random.Random(args.seed * 1000 + wid)
    client = BlobClient(port=port, timeout=60)
    local = dict.fromkeys(COUNTERS, 0)
    seq = 0

    def publish():
        for i, name in enumerate(COUNTERS):
            counters[wid * len(COUNTERS) + i] = local[name]

    while not stop.is_set():
        key = b"soak:%d" % rng.randrange(args.keys)
        op = rng.random()
        try:
            if op < 0.40:
                seq += 1
                value = make_value(key, seq, log_uniform_size(rng, args.min_size, args.max_size), rng)
                if rng.random() < args.ttl_fraction:
                    client.set(key, value, b"PX", rng.randrange(*args.ttl_ms))
                else:
                    client.set(key, value)
                local["sets"] += 1
            elif op < 0.80:
                value = client.get(key)
                local["gets"] += 1
                if value is not None:
                    local["hits"] += 1
                    if not value_intact(key, value):
                        local["corrupt"] += 1
            elif op < 0.90:
                client.delete(key)
                local["dels"] += 1
            else:
                client.execute(b"PEXPIRE", key, rng.randrange(*args.ttl_ms))
                local["expires"] += 1
        except ReplyError as error:
            if not str(error).startswith("OOM"):
                raise
            local["oom"] += 1
        local["ops"] += 1
        if local["ops"] % 20 == 0:
            publish()
    publish()
    client.close()


def probe_latency(server: Server, rng: random.Random) -> tuple[float, float]:
    """p50 and p99 (ms) of GETs of a 64 KiB probe value, set afresh (eviction may take it)."""
    with server.client(timeout=60) as client:
        client.set(PROBE_KEY, make_value(PROBE_KEY, 0, PROBE_SIZE, rng))
        out = bytearray(PROBE_SIZE)
        latencies = []
        for _ in range(PROBE_GETS):
            t0 = time.perf_counter()
            client.get_into(PROBE_KEY, out)
            latencies.append((time.perf_counter() - t0) * 1000)
    return percentile(latencies, 0.5), percentile(latencies, 0.99)


def sample(server: Server, started: float, counters, rng) -> dict:
    # counted before this sample's own connections, whose closing the server may not
    # have seen yet when they return
    fds = len(os.listdir(f"/proc/{server.pid}/fd"))
    memory = process_memory(server.pid, server.arena_path)
    info = server.info()
    p50, p99 = probe_latency(server, rng)
    totals = {name: sum(counters[w * len(COUNTERS) + i] for w in range(len(counters) // len(COUNTERS)))
              for i, name in enumerate(COUNTERS)}
    return {
        "t": round(time.monotonic() - started, 1),
        "rss": memory["vm_rss"], "rss_anon": memory["rss_anon"], "rss_shmem": memory["rss_shmem"],
        "fds": fds,
        "clients": info.get("connected_clients"),
        "used_memory": info.get("used_memory"),
        "heap_used": info.get("arena_heap_used"),
        "entries": info.get("arena_entries"),
        "fragmentation": info.get("arena_fragmentation"),
        "pinned": info.get("arena_pinned"), "zombies": info.get("arena_zombies"),
        "evicted": info.get("evicted_keys"), "expired": info.get("expired_keys"),
        "commands": info.get("total_commands_processed"),
        "probe_p50_ms": round(p50, 3), "probe_p99_ms": round(p99, 3),
        **totals,
    }


def slope_per_minute(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) points, per minute."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    if not var:
        return 0.0
    return 60 * sum((t - mean_t) * (v - mean_v) for t, v in points) / var


def final_checks(server: Server, keyspace: int) -> dict:
    """Accounting with the load stopped: the arena holds exactly its live entries."""
    with server.client(timeout=120) as client:
        deadline = time.monotonic() + 30
        while True:
            arena = parse_info(client.execute(b"INFO", b"arena"))
            if not (arena["arena_pinned"] or arena["arena_zombies"] or arena["arena_reserved"]):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        problems = client.execute(b"DEBUG", b"ARENA-CHECK")
        # Touch every name the workers used: an expired entry is reclaimed on access
        # (KEYS skips expired entries without reclaiming them).
        names = [b"soak:%d" % i for i in range(keyspace)] + [PROBE_KEY]
        client.execute_many([(b"EXISTS", name) for name in names])
        keys = client.execute(b"KEYS", b"*")
        # no key may expire between counting its block and reading the arena's total
        client.execute_many([(b"PERSIST", key) for key in keys])
        keys = client.execute(b"KEYS", b"*")
        blocks = client.execute_many([(b"MEMORY", b"USAGE", key) for key in keys])
        dbsize = client.execute(b"DBSIZE")
        arena = parse_info(client.execute(b"INFO", b"arena"))
    live = sum(b for b in blocks if isinstance(b, int))
    return {
        "arena_check": [p.decode(errors="replace") for p in problems],
        "keys": len(keys), "dbsize": dbsize, "entries": arena["arena_entries"],
        "heap_used": arena["arena_heap_used"], "sum_of_live_blocks": live,
        "pinned": arena["arena_pinned"], "zombies": arena["arena_zombies"],
        "reserved": arena["arena_reserved"],
    }


COLUMNS = [("t", "t(s)", "{:.0f}"), ("rss", "RSS MiB", "mib"), ("rss_anon", "anon MiB", "mib"),
           ("rss_shmem", "arena MiB", "mib"), ("fds", "fds", "{}"), ("heap_used", "heap MiB", "mib"),
           ("entries", "keys", "{}"), ("fragmentation", "frag", "{:.3f}"), ("evicted", "evicted", "{}"),
           ("expired", "expired", "{}"), ("ops", "client ops", "{}"),
           ("probe_p50_ms", "p50 ms", "{:.2f}"), ("probe_p99_ms", "p99 ms", "{:.2f}")]


def print_table(samples: list[dict], header: bool = True) -> None:
    if header:
        print(" ".join(f"{title:>10}" for _, title, _ in COLUMNS))
    for s in samples:
        cells = []
        for name, _, fmt in COLUMNS:
            value = s.get(name)
            if value is None:
                cells.append(f"{'-':>10}")
            elif fmt == "mib":
                cells.append(f"{value / MiB:>10.1f}")
            else:
                cells.append(f"{fmt.format(value):>10}")
        print(" ".join(cells))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--workers", type=int, default=4, help="client processes")
    parser.add_argument("--arena-size", default="512mb")
    parser.add_argument("--maxmemory", default="384mb")
    parser.add_argument("--keys", type=int, default=2000, help="keyspace size")
    parser.add_argument("--min-size", default="1kb")
    parser.add_argument("--max-size", default="8mb")
    parser.add_argument("--ttl-fraction", type=float, default=0.33, help="SETs that carry a PX TTL")
    parser.add_argument("--ttl-ms", default="50-3000",
                        help="range of the TTLs given by SET PX and PEXPIRE (short enough that keys "
                             "expire before eviction takes them)")
    parser.add_argument("--warmup", type=float, default=0.25,
                        help="fraction of the run left out of the RSS slope (the arena fills up)")
    parser.add_argument("--max-anon-slope", default="2mb", help="RSS growth per minute deemed flat")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default="", help="result file (default bench/results/soak-<time>.json)")
    args = parser.parse_args(argv)
    args.min_size, args.max_size = parse_size(args.min_size), parse_size(args.max_size)
    args.ttl_ms = tuple(int(ms) for ms in args.ttl_ms.split("-"))
    maxmemory, arena_size = parse_size(args.maxmemory), parse_size(args.arena_size)

    spec = ServerSpec("cxlredis", "cxlredis")
    server = Server(spec, maxmemory=maxmemory, policy="allkeys-lru", arena_size=arena_size)
    rng = random.Random(args.seed)
    print(f"soak: {args.minutes} min, {args.workers} workers, arena {format_size(arena_size)}, "
          f"maxmemory {format_size(maxmemory)}, {args.keys} keys of "
          f"{format_size(args.min_size)}-{format_size(args.max_size)}, sample every {args.interval}s")
    with server:
        counters = multiprocessing.Array("q", args.workers * len(COUNTERS), lock=False)
        stop = multiprocessing.Event()
        started = time.monotonic()
        samples = [sample(server, started, counters, rng)]
        print_table(samples)
        workers = [multiprocessing.Process(target=worker, args=(w, server.port, args, counters, stop),
                                           daemon=True) for w in range(args.workers)]
        for process in workers:
            process.start()
        try:
            end = started + args.minutes * 60
            while time.monotonic() < end:
                time.sleep(max(0.0, min(args.interval, end - time.monotonic())))
                samples.append(sample(server, started, counters, rng))
                print_table(samples[-1:], header=False)
                if any(not p.is_alive() for p in workers):
                    raise RuntimeError("a worker died; see its traceback above")
        finally:
            stop.set()
            for process in workers:
                process.join(60)
        checks = final_checks(server, args.keys)
        time.sleep(0.5)                 # let the server close the checking connection's fd
        samples.append(sample(server, started, counters, rng))
        log_tail = server.log_tail()

    loaded = [s for s in samples[1:-1] if s["t"] >= args.warmup * args.minutes * 60] or samples[1:-1]
    anon_slope = slope_per_minute([(s["t"], s["rss_anon"]) for s in loaded])
    rss_slope = slope_per_minute([(s["t"], s["rss"]) for s in loaded])
    # fds under load (first and last sample with the workers connected), and idle before/after
    first_loaded, last = (samples[1], samples[-2]) if len(samples) > 2 else (samples[0], samples[-1])
    fds_start, fds_end = first_loaded["fds"], last["fds"]
    verdicts = {
        "values intact": last["corrupt"] == 0,
        "RSS flat": anon_slope <= parse_size(args.max_anon_slope),
        "accounting exact": (checks["heap_used"] == checks["sum_of_live_blocks"]
                             and checks["entries"] == checks["dbsize"] == checks["keys"]
                             and not (checks["pinned"] or checks["zombies"] or checks["reserved"])),
        "arena check clean": not checks["arena_check"],
        "fds not growing": fds_end <= fds_start and samples[-1]["fds"] <= samples[0]["fds"],
        "evicted and expired": bool(last["evicted"]) and bool(last["expired"]),
    }

    print()
    print_table(samples)
    print(f"\nclient ops {last['ops']} ({last['sets']} SET, {last['gets']} GET, {last['hits']} hits, "
          f"{last['dels']} DEL, {last['expires']} PEXPIRE, {last['oom']} OOM, {last['corrupt']} corrupt)")
    print(f"RSS slope after warm-up: anonymous {anon_slope / MiB:+.2f} MiB/min, "
          f"total {rss_slope / MiB:+.2f} MiB/min")
    print(f"probe GET p99: {first_loaded['probe_p99_ms']:.2f} ms at start, "
          f"{last['probe_p99_ms']:.2f} ms at end (p50 {first_loaded['probe_p50_ms']:.2f} -> "
          f"{last['probe_p50_ms']:.2f} ms)")
    print(f"fds under load: {fds_start} -> {fds_end}; idle before/after: "
          f"{samples[0]['fds']} -> {samples[-1]['fds']}")
    print(f"accounting: heap used {checks['heap_used']} B, sum of {checks['keys']} live blocks "
          f"{checks['sum_of_live_blocks']} B; arena check: {checks['arena_check'] or 'clean'}")
    for name, ok in verdicts.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")

    path = args.json or os.path.join(BENCH_DIR, "results", time.strftime("soak-%Y%m%d-%H%M%S.json"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"params": {k: v for k, v in vars(args).items()}, "samples": samples,
                   "final_checks": checks, "anon_rss_slope_per_min": anon_slope,
                   "rss_slope_per_min": rss_slope, "verdicts": verdicts,
                   "server_log_tail": log_tail}, f, indent=1)
    print(f"wrote {path}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
