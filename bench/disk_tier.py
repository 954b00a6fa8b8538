"""The disk tier: hit ratio at equal maxmemory as its budget grows, and GET latency from it.

cxlredis's disk tier (--disk-tier-dir, --disk-tier-size) writes what the arena evicts
to segment files and reads a key back into the arena ("promotes" it) when a command
names it. Two measurements, each a table, against a real redis-server in the same run:

1. Hit ratio at equal memory. Every server gets the same maxmemory (64 MiB; 16 MiB with
   --quick) and allkeys-lru; the working set is 4 x maxmemory of distinct keys (256 KiB
   and 2 MiB values; 256 KiB only with --quick). A seeded Zipf trace of GETs is replayed
   cache-aside, as LMCache uses a remote cache: a GET that misses is followed by a SET of
   the value. A hit is a GET that returned the key's bytes (each value is a 16-byte stamp
   of its key and size, then a random tail; every returned value is compared byte for
   byte and a wrong one stops the benchmark). Columns: the --servers (redis-server,
   cxlredis without a disk tier), then cxlredis with a disk budget of 0.5, 1, 2 and 4 x
   maxmemory, each started afresh for every round and value size, on a fresh tier
   directory. Rows: the hit ratio, the disk tier's hits (INFO disktier), the keys left
   in memory (DBSIZE) and on disk at the end, the live bytes on disk against the budget
   (segment space of records read back counts until its segment empties), and the
   replay's requests/s.

2. GET latency, one GET at a time, every sample a distinct key (a GET promotes its key:
   it is not on disk twice), p50 and p99 per round, for 256 KiB, 2 MiB and 32 MiB values
   (256 KiB and 2 MiB with --quick). Columns: a GET of a key in memory on each of the
   --servers (redis-server; cxlredis's arena, warm), then on a cxlredis with a disk tier
   (started afresh for every size and round) of a key only on disk: "page cache", its
   segment pages in the page cache (just written); "dropped", the segment files' pages
   dropped before every GET (each file fsync'ed, then posix_fadvise(DONTNEED)); in these
   two the arena has room for the key (each one is deleted after its GET, untimed), so the
   GET is the read back alone; "full arena", pages in the page cache and the arena full,
   so each promote first evicts, and writes to the tier, what it makes room with (a full
   cache's steady state). The measured keys are written first and then maxmemory is
   filled with other keys, so the arena evicts them to disk; INFO disktier must show them
   there, and every measured GET must add one to disk_tier_hits (checked between GETs,
   outside the timing). Also reported per tier column: the segment files' pages in the
   page cache before its GETs (mincore), the server's own read time per promote
   (disk_tier_read_usec / disk_tier_reads) and the bytes the tier wrote per GET. The tier
   directory is on a disk-backed filesystem (the first of /var/tmp and /tmp that is not
   tmpfs, or --tier-dir); the parameters name it and its filesystem.
"""

import bisect
import contextlib
import ctypes
import ctypes.util
import mmap
import os
import random
import shlex
import shutil
import tempfile
import time

from blobs import STAMP_BYTES, random_tail, stamp
from common import (BenchResult, KiB, MiB, Server, ServerGroup, ServerSpec, format_size,
                    parse_size, parse_size_list, percentile, round_order, standalone_main)
from hitratio import zipf_cumulative

DEFAULT_MAXMEMORY, QUICK_MAXMEMORY = 64 * MiB, 16 * MiB
DEFAULT_BUDGETS = (0.5, 1.0, 2.0, 4.0)          # disk budget / maxmemory
DEFAULT_SIZES, QUICK_SIZES = [256 * KiB, 2 * MiB], [256 * KiB]
WORKING_SET = 4                                  # distinct keys' bytes / maxmemory
REQUESTS_PER_KEY = 6                             # trace length / distinct keys
ZIPF = 0.8
LATENCY_SIZES, QUICK_LATENCY_SIZES = [256 * KiB, 2 * MiB, 32 * MiB], [256 * KiB, 2 * MiB]
LATENCY_SAMPLES = {256 * KiB: 100, 2 * MiB: 40, 32 * MiB: 8}       # per case per round
QUICK_LATENCY_SAMPLES = {256 * KiB: 40, 2 * MiB: 12, 32 * MiB: 4}
LATENCY_MAXMEMORY = 128 * MiB
FILLER_BYTES = 4 * MiB                           # largest value used to fill maxmemory
CACHED, DROPPED, FULL = "tier, page cache", "tier, dropped", "tier, full arena"
POLICY = "allkeys-lru"


class WrongValue(AssertionError):
    """A GET returned bytes other than the key's: the server is wrong, not slow."""


# -- where the tier goes ---------------------------------------------------------
def mount_of(path: str) -> tuple[str, str, str]:
    """(device, filesystem type, mount point) of the mount holding path, from /proc/mounts."""
    path = os.path.realpath(path)
    best = ("?", "?", "")
    with open("/proc/mounts") as mounts:
        for line in mounts:
            device, point, fstype = line.split()[:3]
            point = point.replace("\\040", " ")
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[2]):
                best = (device, fstype, point)
    return best


def tier_base(requested: str | None) -> str:
    """A new directory for the tiers: under requested, else under the first of /var/tmp and
    /tmp that is not in memory (tmpfs), else under the system's temp dir."""
    if requested:
        os.makedirs(requested, exist_ok=True)
        return tempfile.mkdtemp(prefix="cxlbench-tier-", dir=requested)
    for candidate in ("/var/tmp", "/tmp"):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK) \
                and mount_of(candidate)[1] not in ("tmpfs", "ramfs"):
            return tempfile.mkdtemp(prefix="cxlbench-tier-", dir=candidate)
    return tempfile.mkdtemp(prefix="cxlbench-tier-")


def describe_mount(path: str) -> str:
    device, fstype, point = mount_of(path)
    memory = " — in memory, not a disk" if fstype in ("tmpfs", "ramfs") else ""
    return f"{path} ({fstype} on {device}, mounted at {point}{memory})"


def segment_files(directory: str) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    return [os.path.join(directory, name) for name in names
            if name.startswith("segment-") and name.endswith(".cxd")]


def drop_page_cache(directory: str) -> None:
    """Write back and drop the page cache of every segment file in directory."""
    for path in segment_files(directory):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue            # deleted meanwhile (all its records went back)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


_libc = None


def resident_fraction(directory: str) -> float:
    """Fraction of the segment files' pages in the page cache (mincore), nan if unknown."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        _libc.mmap.restype = ctypes.c_void_p
        _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_long]
        _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        _libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = mmap.PAGESIZE
    resident = total = 0
    for path in segment_files(directory):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            length = os.fstat(fd).st_size
            if not length:
                continue
            address = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                return float("nan")
            try:
                pages = (length + page - 1) // page
                vector = ctypes.create_string_buffer(pages)
                if _libc.mincore(address, length, vector) != 0:
                    return float("nan")
                resident += sum(byte & 1 for byte in vector.raw)
                total += pages
            finally:
                _libc.munmap(address, length)
        finally:
            os.close(fd)
    return resident / total if total else float("nan")


def tiered_spec(config, label: str, base: str, budget: int) -> ServerSpec:
    """cxlredis (the configured command) with a disk tier of budget bytes in base/<port>:
    a fresh directory for every server started."""
    escaped = base.replace("{", "{{").replace("}", "}}")      # the command is a format string
    directory = shlex.quote(os.path.join(escaped, "{port}"))
    return ServerSpec("cxlredis", label, config.servers[-1].cxlredis_cmd
                      + f" --disk-tier-dir {directory} --disk-tier-size {budget}")


def tier_dir(server: Server, base: str) -> str:
    return os.path.join(base, str(server.port))


@contextlib.contextmanager
def started(spec: ServerSpec, base: str, **options):
    """A server for the block; its tier directory (if any) is removed with it."""
    server = Server(spec, **options)
    try:
        server.start()
        yield server
    finally:
        server.stop()
        if server.port:
            shutil.rmtree(tier_dir(server, base), ignore_errors=True)


def disk_info(server: Server) -> dict:
    info = server.info("disktier")
    if info.get("disk_tier_bad_records", 0) or info.get("disk_tier_write_errors", 0):
        raise RuntimeError(f"{server.label}: the disk tier reports bad records or write errors: {info}\n"
                           f"command: {' '.join(server.command())}\n{server.log_tail()}")
    return info


# -- values --------------------------------------------------------------------
class Values:
    """Key n's value: stamp(0, n, size) + a random tail shared by every key of this size."""

    def __init__(self, size: int, seed: int, prefix: str):
        self.size, self.prefix = size, prefix
        self.tail = random_tail(size, seed + size)
        self.tail_view = memoryview(self.tail)
        self.buffer = bytearray(size)

    def key(self, n: int) -> bytes:
        return f"{self.prefix}:{n}".encode()

    def set(self, client, n: int) -> None:
        client.set(self.key(n), (stamp(0, n, self.size), self.tail_view))

    def check(self, server_label: str, n: int, length: int) -> None:
        """The buffer holds what key n was SET to, or raise."""
        buffer = self.buffer
        if length != self.size or buffer[:STAMP_BYTES] != stamp(0, n, self.size) \
                or self.tail != memoryview(buffer)[STAMP_BYTES:]:
            raise WrongValue(f"{server_label}: GET {self.key(n)!r} returned {length} bytes that differ "
                             f"from the {self.size} bytes SET (stamp {bytes(buffer[:STAMP_BYTES]).hex()}, "
                             f"expected {stamp(0, n, self.size).hex()})")


# -- 1. hit ratio ------------------------------------------------------------------
def make_trace(keys: int, requests: int, exponent: float, seed: int) -> list[int]:
    """Zipf popularity over the keys (ranks shuffled over the key numbers)."""
    rng = random.Random(seed)
    cumulative = zipf_cumulative(keys, exponent)
    by_rank = list(range(keys))
    rng.shuffle(by_rank)
    return [by_rank[min(bisect.bisect_left(cumulative, rng.random()), keys - 1)] for _ in range(requests)]


def replay(server: Server, trace: list[int], values: Values) -> tuple[int, float]:
    """Cache-aside: GET, and SET on a miss. (hits, seconds)."""
    hits = 0
    with server.client() as client:
        began = time.perf_counter()
        for n in trace:
            length = client.get_into(values.key(n), values.buffer)
            if length < 0:
                values.set(client, n)
                continue
            values.check(server.label, n, length)
            hits += 1
        return hits, time.perf_counter() - began


def run_hit_ratio(config, maxmemory, budgets, sizes, zipf, requests_per_key, base) -> BenchResult:
    specs = list(config.servers) + [
        tiered_spec(config, f"disk {budget:g}×", base, int(budget * maxmemory)) for budget in budgets]
    result = BenchResult("disk_tier: hit ratio at equal maxmemory", [spec.label for spec in specs], {
        "maxmemory": format_size(maxmemory), "policy": POLICY,
        "working set": f"{WORKING_SET} × maxmemory",
        "values": "/".join(format_size(size) for size in sizes), "zipf": zipf,
        "requests": f"{requests_per_key} × keys", "disk N×": "cxlredis, disk tier of N × maxmemory",
        "seed": config.seed, "rounds": config.rounds})
    not_written = {}
    for size in sizes:
        keys = WORKING_SET * maxmemory // size
        trace = make_trace(keys, requests_per_key * keys, zipf, config.seed + size)
        distinct = len(set(trace))
        name = format_size(size)
        values = Values(size, config.seed, f"hit:{size}")
        for round_no in range(config.rounds):
            for spec in round_order(specs, round_no):
                with started(spec, base, maxmemory=maxmemory, policy=POLICY) as server:
                    hits, seconds = replay(server, trace, values)
                    held = server.call("DBSIZE")
                    info = disk_info(server) if spec.kind == "cxlredis" else {}
                label = spec.label
                result.add(f"hit ratio, {name}", label, hits / len(trace), "", "higher", size=size)
                if info.get("disk_tier_enabled") or spec.kind == "cxlredis":
                    result.add(f"disk_tier_hits, {name}", label, info.get("disk_tier_hits", 0), "GETs", "",
                               size=size)
                result.add(f"keys in memory at end, {name}", label, held, "keys", "", size=size)
                if info.get("disk_tier_enabled"):
                    result.add(f"disk_tier_keys at end, {name}", label, info["disk_tier_keys"], "keys", "",
                               size=size)
                    result.add(f"live bytes on disk at end / disk budget, {name}", label,
                               info["disk_tier_bytes"] / info["disk_tier_budget"], "x", "", size=size)
                    if info.get("disk_tier_not_written"):
                        not_written[(label, name)] = info["disk_tier_not_written"]
                result.add(f"requests/s, {name}", label, len(trace) / seconds, "req/s", "higher", size=size)
        result.notes.append(f"{name}: {keys} keys, {len(trace)} requests, {distinct} distinct keys "
                            f"requested; "
                            f"ceiling (infinite cache, only first requests miss) "
                            f"{1 - distinct / len(trace):.3f}.")
    rows = ["hit ratio", "disk_tier_hits", "keys in memory at end", "disk_tier_keys at end",
            "live bytes on disk at end / disk budget", "requests/s"]
    result.metrics = dict(sorted(result.metrics.items(), key=lambda item: (
        sizes.index(item[1].tags["size"]), rows.index(item[0].rsplit(", ", 1)[0]))))
    for (label, name), count in not_written.items():
        result.notes.append(f"{label}, {name}: {count} evicted entries were not written to the tier "
                            f"(disk_tier_not_written, last round).")
    result.notes.append("a hit is a GET that returned the key's bytes (every one compared byte for byte); "
                        "a miss is followed by a SET of the value (cache-aside); requests/s includes "
                        "that comparison, the same for every server.")
    result.notes.append("redis-server counts maxmemory in jemalloc size classes (a 256 KiB value takes "
                        "a 320 KiB class) and samples 5 keys for LRU (its LRU clock ticks once per "
                        "second: a trace replayed this fast sees it close to random); cxlredis's LRU is "
                        "exact; the tier's records leave oldest first (its own LRU, any use brings a "
                        "record back).")
    return result


# -- 2. latency ----------------------------------------------------------------------
def timed_get(client, values: Values, label: str, n: int) -> float:
    began = time.perf_counter()
    length = client.get_into(values.key(n), values.buffer)
    elapsed = time.perf_counter() - began
    if length < 0:
        raise WrongValue(f"{label}: GET {values.key(n)!r} found nothing: it was SET and must be there")
    values.check(label, n, length)
    return elapsed


def memory_latencies(server: Server, values: Values, samples: int, maxmemory: int) -> list[float]:
    """GET of keys just SET (batches that fit in half of maxmemory), each once."""
    batch = max(1, min(samples, maxmemory // 2 // values.size))
    seconds = []
    with server.client() as client:
        for first in range(0, samples, batch):
            numbers = range(first, min(first + batch, samples))
            for n in numbers:
                values.set(client, n)
            seconds += [timed_get(client, values, server.label, n) for n in numbers]
    return seconds


def fill(client, values: Values, nbytes: int) -> None:
    """SET nbytes of filler keys (values of at most FILLER_BYTES) after the measured keys."""
    size = min(values.size, FILLER_BYTES)
    for n in range(-(-nbytes // size)):
        client.set(f"{values.prefix}:filler:{n}".encode(),
                   (stamp(1, n, size), values.tail_view[:size - STAMP_BYTES]))


def disk_latencies(server: Server, directory: str, values: Values, samples: int,
                   maxmemory: int) -> dict:
    """GETs of keys only on disk, `samples` distinct keys per case: {"seconds": {case: [s]},
    "resident": {case: segment pages in the page cache before its GETs}, "read_usec": {case:
    the server's mean read per promote}, "written": {case: bytes the tier wrote per GET}}.

    3 x samples keys are SET, then maxmemory is filled with other keys, so the arena evicts them
    all to the tier. FULL is measured first, on the full arena: each promote evicts. Then the
    FULL keys are deleted, which leaves room for one value, and every CACHED or DROPPED GET is
    followed (untimed) by a DEL of its key: those promotes evict nothing.
    """
    cases = {case: range(number * samples, (number + 1) * samples)
             for number, case in enumerate((FULL, CACHED, DROPPED))}
    label = server.label
    with server.client() as client:
        for n in range(3 * samples):
            values.set(client, n)
        fill(client, values, maxmemory + 2 * values.size)
        info = disk_info(server)
        if info.get("disk_tier_keys", 0) < 3 * samples:
            raise RuntimeError(f"{label}: {3 * samples} keys of {format_size(values.size)} were evicted "
                               f"but only {info.get('disk_tier_keys')} keys are on disk: {info}")
        out = {"seconds": {}, "resident": {}, "read_usec": {}, "written": {}}
        for case, numbers in cases.items():
            if case == CACHED:      # make room: the FULL keys go (in memory or back on disk)
                client.execute("DEL", *(values.key(n) for n in cases[FULL]))
            if case == DROPPED:
                drop_page_cache(directory)
            out["resident"][case] = resident_fraction(directory)
            before = disk_info(server)
            hits, seconds = before["disk_tier_hits"], []
            for n in numbers:
                if case == DROPPED:
                    drop_page_cache(directory)
                seconds.append(timed_get(client, values, f"{label} ({case})", n))
                now = disk_info(server)["disk_tier_hits"]
                if now != hits + 1:
                    raise RuntimeError(f"{label}: GET {values.key(n)!r} ({case}) moved disk_tier_hits from "
                                       f"{hits} to {now}: the key was not (only) on disk")
                hits = now
                if case != FULL:
                    client.execute("DEL", values.key(n))
            after = disk_info(server)
            reads = after["disk_tier_reads"] - before["disk_tier_reads"]
            out["seconds"][case] = seconds
            read_usec = after["disk_tier_read_usec"] - before["disk_tier_read_usec"]
            written = after["disk_tier_written_bytes"] - before["disk_tier_written_bytes"]
            out["read_usec"][case] = read_usec / max(reads, 1)
            out["written"][case] = written / samples
    return out


def run_latency(config, sizes, samples, base) -> BenchResult:
    largest = max(3 * samples[size] * size for size in sizes)
    budget = -(-4 * (largest + LATENCY_MAXMEMORY) // (64 * MiB)) * 64 * MiB
    tiered = tiered_spec(config, "cxlredis+tier", base, budget)
    labels = [*config.labels, CACHED, DROPPED, FULL]
    result = BenchResult("disk_tier: GET latency from the disk tier", labels, {
        "values": "/".join(format_size(size) for size in sizes),
        "samples per case and round": "/".join(str(samples[size]) for size in sizes),
        "maxmemory": format_size(LATENCY_MAXMEMORY), "policy": POLICY,
        "disk budget": format_size(budget), "tier dir": describe_mount(base), "rounds": config.rounds})
    with ServerGroup(config.servers, maxmemory=LATENCY_MAXMEMORY, policy=POLICY) as servers:
        for size in sizes:
            name = format_size(size)
            for round_no in range(config.rounds):
                measured = {}
                for server in round_order([*servers, tiered], round_no):
                    values = Values(size, config.seed, f"lat:{size}:{round_no}")
                    if server is tiered:    # started afresh: a new arena and an empty tier directory
                        with started(tiered, base, maxmemory=LATENCY_MAXMEMORY, policy=POLICY) as disk_server:
                            cases = disk_latencies(disk_server, tier_dir(disk_server, base), values,
                                                   samples[size], LATENCY_MAXMEMORY)
                        measured.update(cases["seconds"])
                        for case, fraction in cases["resident"].items():
                            result.add(f"segment pages in page cache before the GETs, {name}", case,
                                       100 * fraction, "%", "", size=size)
                        for case, micros in cases["read_usec"].items():
                            result.add(f"server's read per promote (disk_tier_read_usec / reads), {name}",
                                       case, micros, "µs", "", size=size)
                        for case, nbytes in cases["written"].items():
                            result.add(f"bytes the tier wrote per GET (evictions), {name}", case,
                                       nbytes / size, f"× {name}", "", size=size)
                    else:
                        measured[server.label] = memory_latencies(server, values, samples[size],
                                                                  LATENCY_MAXMEMORY)
                        server.flushall()
                for label, seconds in measured.items():
                    result.add(f"GET {name} p50", label, percentile(seconds, 0.5) * 1e6, "µs", "lower",
                               size=size, stat="p50")
                    result.add(f"GET {name} p99", label, percentile(seconds, 0.99) * 1e6, "µs", "lower",
                               size=size, stat="p99")
    result.notes.append(f"{', '.join(config.labels)}: GET of a key in memory (written just before, in "
                        f"batches of up to maxmemory/2). The tier columns are one cxlredis with a disk tier, "
                        f"started afresh for every size and round, GETting keys evicted to the tier (filled past "
                        f"maxmemory after they were written): '{CACHED}', segment pages in the page cache; "
                        f"'{DROPPED}', after fsync + POSIX_FADV_DONTNEED of every segment file before each "
                        f"GET; in both the arena has room (each GET's key is deleted after it, untimed), so "
                        f"the GET is the read back alone. '{FULL}': segment pages in the page cache and the "
                        f"arena full, so each promote first evicts, and writes to the tier, what it makes "
                        f"room with, as in a full cache's steady state.")
    result.notes.append("every sample is a distinct key (a GET promotes its key), every value was checked "
                        "byte for byte, every tier GET added one to disk_tier_hits (checked between GETs).")
    result.notes.append("p99 of a round is interpolated between its slowest samples (of few samples at "
                        "32 MiB it is near the slowest).")
    return result


# -- both ----------------------------------------------------------------------------
class DiskTierResult:
    """The two tables (their columns differ); printed and written like one BenchResult."""

    benchmark = "disk_tier"

    def __init__(self, parts: list[BenchResult]):
        self.parts = parts
        self.labels = parts[0].labels if parts else []

    def markdown(self) -> str:
        return "\n".join(part.markdown() for part in self.parts)

    def to_json(self) -> dict:
        return {"benchmark": self.benchmark, "parts": [part.to_json() for part in self.parts]}


def run(config, maxmemory=None, budgets=None, sizes=None, zipf=ZIPF, requests_per_key=REQUESTS_PER_KEY,
        latency_sizes=None, samples=None, tier_dir_base=None, parts=("hitratio", "latency")):
    maxmemory = maxmemory or (QUICK_MAXMEMORY if config.quick else DEFAULT_MAXMEMORY)
    budgets = budgets or DEFAULT_BUDGETS
    sizes = sizes or (QUICK_SIZES if config.quick else DEFAULT_SIZES)
    latency_sizes = latency_sizes or (QUICK_LATENCY_SIZES if config.quick else LATENCY_SIZES)
    per_size = QUICK_LATENCY_SAMPLES if config.quick else LATENCY_SAMPLES
    samples = {size: samples or per_size.get(size, max(4, min(100, 64 * MiB // size)))
               for size in latency_sizes}
    base = tier_base(tier_dir_base)
    results = []
    try:
        if "hitratio" in parts:
            results.append(run_hit_ratio(config, maxmemory, budgets, sizes, zipf, requests_per_key, base))
        if "latency" in parts:
            results.append(run_latency(config, latency_sizes, samples, base))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for part in results:
        part.notes.append(f"disk tiers in {describe_mount(base)}")
    return DiskTierResult(results)


def add_arguments(parser):
    parser.add_argument("--maxmemory", type=parse_size,
                        help="maxmemory of every server in the hit-ratio table "
                             "(default 64mb, 16mb with --quick)")
    parser.add_argument("--budgets", type=lambda text: [float(x) for x in text.split(",") if x.strip()],
                        help="disk budgets as multiples of maxmemory (default 0.5,1,2,4)")
    parser.add_argument("--sizes", type=parse_size_list,
                        help="value sizes of the hit-ratio table (default 256kb,2mb; 256kb with --quick)")
    parser.add_argument("--zipf", type=float, default=ZIPF, help="Zipf exponent of key popularity")
    parser.add_argument("--requests-per-key", type=int, default=REQUESTS_PER_KEY,
                        help="trace length as a multiple of the working set's keys")
    parser.add_argument("--latency-sizes", type=parse_size_list,
                        help="value sizes of the latency table "
                             "(default 256kb,2mb,32mb; 256kb,2mb with --quick)")
    parser.add_argument("--samples", type=int, help="GETs per case, size and round (default by size)")
    parser.add_argument("--tier-dir", help="where the disk tiers go (default: a new directory under the "
                                           "first of /var/tmp and /tmp that is not tmpfs)")
    parser.add_argument("--parts", default="hitratio,latency", help="which tables: hitratio, latency")


def options_from_args(args) -> dict:
    return dict(maxmemory=args.maxmemory, budgets=args.budgets, sizes=args.sizes, zipf=args.zipf,
                requests_per_key=args.requests_per_key, latency_sizes=args.latency_sizes,
                samples=args.samples, tier_dir_base=args.tier_dir,
                parts=tuple(part.strip() for part in args.parts.split(",") if part.strip()))


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
