"""A cxlredis cluster against a redis-server cluster of the same size, through slot-routing
clients: blob SET/GET, small SET/GET with and without pipelining, and the cost of a stale
slot map.

For each size (1, 2, 4 shards by default) both clusters are started on this host, formed
with `redis-cli --cluster create` and measured in interleaved rounds:

* blobs: W worker processes, each with one BlobClient per shard, route every key by its
  slot (as a cluster client does) and SET then GET distinct keys of the value size; every
  value read is checked (length and a per-key pattern byte). GB/s per phase.
* small ops: `redis-benchmark --cluster` (its own slot routing), 64-byte values, 50
  clients, without and with -P 16.
* redirects: a client that starts believing node 0 owns every slot learns the map one
  -MOVED at a time; ops/s of its first pass over keys of every slot against the same pass
  with the map learnt.

    python bench/cluster.py [--shards 1,2,4] [--sizes 2mb,32mb] [--rounds 2] [--quick]

On a 2-core machine the shards, the load generators and the kernel share two cores: the
scaling column shows where that, not the servers, is the limit.
"""
import argparse
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from blobclient import BlobClient, ReplyError  # noqa: E402
from common import MiB, format_size, free_port, memory_tmpdir, parse_size_list, run_tool  # noqa: E402
from cxlredis.cluster.slots import CLUSTER_SLOTS, key_slot  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RPS_LINE = re.compile(r"^([A-Z_]+): ([0-9.]+) requests per second")


class ClusterUnderTest:
    """N nodes of one kind on free ports, formed into a cluster, stopped by pid."""

    def __init__(self, kind, shards, arena_size):
        self.kind, self.shards, self.arena_size = kind, shards, arena_size
        self.procs, self.ports, self.bus_ports, self.dirs = [], [], [], []

    def start(self):
        for _ in range(self.shards):
            workdir = memory_tmpdir(f"cxlbench-cluster-{self.kind}-")
            port, bus = free_port(), free_port()
            common = ["--port", str(port), "--cluster-enabled", "yes", "--cluster-port", str(bus),
                      "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"]
            if self.kind == "redis":
                argv = ["redis-server", *common, "--save", "", "--appendonly", "no",
                        "--dir", workdir, "--loglevel", "warning"]
            else:
                argv = [sys.executable, "-m", "cxlredis", *common, "--arena-path",
                        os.path.join(workdir, "a.arena"), "--arena-size", str(self.arena_size),
                        "--tenants-file", "", "--loglevel", "warning"]
            env = dict(os.environ, PYTHONPATH=REPO)
            log = open(os.path.join(workdir, "log"), "wb")
            self.procs.append(subprocess.Popen(argv, cwd=workdir, env=env, stdout=log,
                                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
            self.ports.append(port)
            self.bus_ports.append(bus)
            self.dirs.append(workdir)
        for port in self.ports:
            _wait(lambda port=port: _ping(port), f"{self.kind} on {port} to answer PING")
        if self.shards >= 3:
            subprocess.run(["redis-cli", "--cluster", "create",
                            *(f"127.0.0.1:{p}" for p in self.ports), "--cluster-yes"],
                           check=True, capture_output=True, timeout=120)
        else:
            self._form_by_hand()    # redis-cli --cluster create wants three masters at least
        _wait(self._stable, f"the {self.kind} cluster to be ok")
        return self

    def _form_by_hand(self):
        """What redis-cli --cluster create does: even slot ranges, an epoch each, MEET."""
        per = CLUSTER_SLOTS // self.shards
        for i, port in enumerate(self.ports):
            last = CLUSTER_SLOTS - 1 if i == self.shards - 1 else (i + 1) * per - 1
            with BlobClient(port=port, timeout=10) as c:
                c.execute("CLUSTER", "ADDSLOTSRANGE", i * per, last)
                c.execute("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
                if i:
                    c.execute("CLUSTER", "MEET", "127.0.0.1", self.ports[0], self.bus_ports[0])

    def _stable(self):
        for port in self.ports:
            with BlobClient(port=port, timeout=5) as c:
                if b"cluster_state:ok" not in c.execute("CLUSTER", "INFO"):
                    return False
        return True

    def owners(self):
        """slot -> port, from CLUSTER SLOTS."""
        owner = [0] * CLUSTER_SLOTS
        with BlobClient(port=self.ports[0], timeout=5) as c:
            for start, end, master, *_ in c.execute("CLUSTER", "SLOTS"):
                for slot in range(start, end + 1):
                    owner[slot] = master[1]
        return owner

    def flush(self):
        for port in self.ports:
            with BlobClient(port=port, timeout=60) as c:
                c.execute("FLUSHALL")

    def stop(self):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for workdir in self.dirs:
            shutil.rmtree(workdir, ignore_errors=True)


def _ping(port):
    try:
        with BlobClient(port=port, timeout=2) as c:
            return c.ping()
    except OSError:
        return False


def _wait(predicate, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


# ------------------------------------------------------------------ blobs

def _blob_worker(worker, owner, size, count, barrier, results):
    clients = {port: BlobClient(port=port, timeout=300) for port in set(owner)}
    keys = [f"blob:{worker}:{i}".encode() for i in range(count)]
    values = [bytes([(worker * 31 + i) % 251]) * size for i in range(count)]
    out = bytearray(size)
    barrier.wait()
    start = time.perf_counter()
    for key, value in zip(keys, values):
        clients[owner[key_slot(key)]].set(key, value)
    set_seconds = time.perf_counter() - start
    barrier.wait()
    start = time.perf_counter()
    for key, value in zip(keys, values):
        n = clients[owner[key_slot(key)]].get_into(key, out)
        if n != size or out[0] != value[0] or out[-1] != value[-1]:
            raise RuntimeError(f"{key!r}: wrong value read back")
    get_seconds = time.perf_counter() - start
    results.put((set_seconds, get_seconds))
    for client in clients.values():
        client.close()


def blob_phase(cluster, size, total_bytes, workers):
    count = max(1, total_bytes // size // workers)
    owner = cluster.owners()
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_blob_worker, args=(w, owner, size, count, barrier, results))
             for w in range(workers)]
    for proc in procs:
        proc.start()
    timings = [results.get(timeout=900) for _ in procs]
    for proc in procs:
        proc.join()
    moved = workers * count * size / 1e9
    cluster.flush()
    return moved / max(t[0] for t in timings), moved / max(t[1] for t in timings)


# ------------------------------------------------------------------ small ops

def small_ops(cluster, requests, pipeline):
    # redis-benchmark --cluster refuses a one-node cluster; that node owns every slot
    routing = ["--cluster"] if cluster.shards > 1 else []
    argv = ["redis-benchmark", *routing, "-h", "127.0.0.1", "-p", str(cluster.ports[0]),
            "-t", "set,get", "-d", "64", "-c", "50", "-n", str(requests), "-q", "-r", "100000"]
    if pipeline > 1:
        argv += ["-P", str(pipeline)]
    done = run_tool(argv, timeout=900)
    rates = {}
    for line in re.split(r"[\r\n]+", done.stdout):
        match = RPS_LINE.match(line.strip())
        if match:
            rates[match.group(1)] = float(match.group(2))
    cluster.flush()
    return rates.get("SET", 0.0), rates.get("GET", 0.0)


# ------------------------------------------------------------------ redirects

def redirect_cost(cluster):
    """ops/s of GETs over one key per slot, first with a map that says node 0 owns all
    (each slot is learnt from its -MOVED), then again with the map learnt."""
    keys = {}
    i = 0
    while len(keys) < CLUSTER_SLOTS:
        key = f"r{i}".encode()
        keys.setdefault(key_slot(key), key)
        i += 1
    clients = {port: BlobClient(port=port, timeout=60) for port in cluster.ports}
    believed = [cluster.ports[0]] * CLUSTER_SLOTS
    passes = []
    for _ in range(2):
        start = time.perf_counter()
        for slot, key in keys.items():
            try:
                clients[believed[slot]].get(key)
            except ReplyError as e:
                # MOVED <slot> <host>:<port>: remember and ask the right node
                port = int(str(e).rsplit(":", 1)[1])
                believed[slot] = port
                clients[port].get(key)
        passes.append(len(keys) / (time.perf_counter() - start))
    for client in clients.values():
        client.close()
    return passes


# ------------------------------------------------------------------ the report

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", default="1,2,4")
    parser.add_argument("--sizes", default="2mb,32mb")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--blob-bytes", default="512mb", help="bytes per blob phase")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--requests", type=int, default=200000)
    parser.add_argument("--quick", action="store_true", help="smaller phases, one round")
    args = parser.parse_args()
    shard_counts = [int(s) for s in args.shards.split(",")]
    sizes = parse_size_list(args.sizes)
    total = parse_size_list(args.blob_bytes)[0]
    rounds, requests = args.rounds, args.requests
    if args.quick:
        rounds, requests, total = 1, 50000, min(total, 256 * MiB)
    rows = []
    for shards in shard_counts:
        samples = {}
        clusters = {kind: ClusterUnderTest(kind, shards, 2 * total // shards + 512 * MiB)
                    for kind in ("redis", "cxlredis")}
        try:
            for cluster in clusters.values():
                cluster.start()
            for round_no in range(rounds):
                kinds = ("redis", "cxlredis") if round_no % 2 == 0 else ("cxlredis", "redis")
                for kind in kinds:
                    cluster = clusters[kind]
                    for size in sizes:
                        set_gbps, get_gbps = blob_phase(cluster, size, total, args.workers)
                        samples.setdefault((f"SET {format_size(size)} GB/s", kind), []).append(set_gbps)
                        samples.setdefault((f"GET {format_size(size)} GB/s", kind), []).append(get_gbps)
                    for pipeline in (1, 16):
                        s, g = small_ops(cluster, requests, pipeline)
                        label = "" if pipeline == 1 else " -P16"
                        samples.setdefault((f"small SET{label} ops/s", kind), []).append(s)
                        samples.setdefault((f"small GET{label} ops/s", kind), []).append(g)
                    stale, warm = redirect_cost(cluster)
                    samples.setdefault(("GET, stale map ops/s", kind), []).append(stale)
                    samples.setdefault(("GET, learnt map ops/s", kind), []).append(warm)
        finally:
            for cluster in clusters.values():
                cluster.stop()
        metrics = list(dict.fromkeys(metric for metric, _ in samples))
        for metric in metrics:
            redis_values, cxl_values = samples[(metric, "redis")], samples[(metric, "cxlredis")]
            r, c = sum(redis_values) / len(redis_values), sum(cxl_values) / len(cxl_values)
            spread = max(cxl_values) / min(cxl_values) - 1 if min(cxl_values) else 0
            rows.append((shards, metric, r, c, c / r if r else 0, spread))
    print("| shards | metric | redis cluster | cxlredis cluster | ratio | cxlredis spread |")
    print("|---|---|---|---|---|---|")
    for shards, metric, r, c, ratio, spread in rows:
        fmt = "{:.2f}" if "GB/s" in metric else "{:,.0f}"
        print(f"| {shards} | {metric} | {fmt.format(r)} | {fmt.format(c)} | {ratio:.2f}x | "
              f"{spread * 100:.0f}% |")


if __name__ == "__main__":
    main()
