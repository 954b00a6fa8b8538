"""Shared benchmark machinery: servers, memory accounting, workers, statistics, results.

Every benchmark starts its own servers (redis-server and cxlredis, or two of
the same kind for a sanity check) on free loopback ports, interleaves them
round by round, and reports per-server medians and the ratio of each server
to the first one (the baseline).
"""

import argparse
import atexit
import dataclasses
import json
import multiprocessing
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from array import array

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
if BENCH_DIR not in sys.path:
    sys.path.insert(0, BENCH_DIR)

from blobclient import BlobClient  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

DEFAULT_CXLREDIS_CMD = (
    "{python} -m cxlredis --port {port} --arena-path {arena_path} "
    "--arena-size {arena_size} --maxmemory {maxmemory} "
    "--maxmemory-policy {policy} --loglevel warning --enable-debug-command local")
SERVER_KINDS = ("redis", "cxlredis")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


# -- sizes -----------------------------------------------------------------
def parse_size(text) -> int:
    """'256kb', '2mb', '32MiB', '4gb', '1048576' -> bytes (binary units, like redis.conf)."""
    if isinstance(text, int):
        return text
    value = text.strip().lower().removesuffix("b").removesuffix("i")
    factor = 1
    for suffix, multiple in (("k", KiB), ("m", MiB), ("g", GiB)):
        if value.endswith(suffix):
            value, factor = value[:-1], multiple
            break
    return int(float(value) * factor)


def format_size(nbytes: int) -> str:
    for unit, multiple in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if nbytes >= multiple and nbytes % multiple == 0:
            return f"{nbytes // multiple} {unit}"
    return f"{nbytes} B"


def parse_size_list(text: str) -> list[int]:
    return [parse_size(item) for item in text.split(",") if item.strip()]


def parse_int_list(text: str) -> list[int]:
    return [int(item) for item in text.split(",") if item.strip()]


# -- statistics ------------------------------------------------------------
def percentile(values, fraction: float) -> float:
    """Linear-interpolated percentile, fraction in [0, 1]."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values) -> float:
    return percentile(values, 0.5)


# -- processes and ports -----------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def memory_tmpdir(prefix: str) -> str:
    """A temp dir on tmpfs (/dev/shm) so arena pages are memory, as in production."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def parse_info(text) -> dict:
    """INFO reply -> {field: int | float | str}."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    info = {}
    for line in text.splitlines():
        if not line or line.startswith("#") or ":" not in line:
            continue
        field, value = line.split(":", 1)
        for convert in (int, float):
            try:
                info[field] = convert(value)
                break
            except ValueError:
                continue
        else:
            info[field] = value
    return info


@dataclasses.dataclass(frozen=True)
class ServerSpec:
    """What to start: a kind ('redis' or 'cxlredis') and a unique label for reports."""
    kind: str
    label: str
    cxlredis_cmd: str = DEFAULT_CXLREDIS_CMD


def parse_servers(text: str, cxlredis_cmd: str = DEFAULT_CXLREDIS_CMD) -> list[ServerSpec]:
    """'redis,cxlredis' -> specs; a repeated kind gets '#2', '#3' labels (sanity runs)."""
    specs, seen = [], {}
    for kind in (item.strip() for item in text.split(",") if item.strip()):
        if kind not in SERVER_KINDS:
            raise ValueError(f"unknown server kind {kind!r} (choose from {', '.join(SERVER_KINDS)})")
        seen[kind] = seen.get(kind, 0) + 1
        label = kind if seen[kind] == 1 else f"{kind}#{seen[kind]}"
        specs.append(ServerSpec(kind, label, cxlredis_cmd))
    if not specs:
        raise ValueError("no servers given")
    return specs


_running: dict[int, "Server"] = {}


def _stop_all_running() -> None:
    for server in list(_running.values()):
        server.stop()


atexit.register(_stop_all_running)


def _exit_on_signal(signum, _frame):
    _stop_all_running()
    sys.exit(128 + signum)


def run_tool(argv, timeout: float = 600) -> subprocess.CompletedProcess:
    """subprocess.run(argv) with its output captured, but a tool still running when the
    benchmark stops (a signal, an error, a timeout) is killed with it: a redis-benchmark
    left spinning would load the machine for every later measurement."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return subprocess.CompletedProcess(argv, process.returncode, out, err)


class Server:
    """One server process on a free port, with its own temp dir; stopped by pid."""

    def __init__(self, spec: ServerSpec, *, maxmemory: int, policy: str = "noeviction",
                 arena_size: int | None = None, arena_dir: str | None = None):
        """arena_dir: where cxlredis's arena goes (default: the server's temp dir on /dev/shm),
        e.g. a hugetlbfs mount; the arena is removed with the server either way."""
        self.spec = spec
        self.arena_dir = arena_dir
        self.maxmemory = maxmemory
        self.policy = policy
        # the arena holds the superblock and index besides the heap (which maxmemory
        # limits), so give it room; it is a sparse file, untouched pages cost nothing
        self.arena_size = arena_size or _round_up(maxmemory * 5 // 4 + 256 * MiB, 256 * MiB)
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.workdir = ""
        self.arena_path = ""

    @property
    def label(self) -> str:
        return self.spec.label

    @property
    def pid(self) -> int:
        return self.process.pid

    def command(self) -> list[str]:
        if self.spec.kind == "redis":
            return [shutil.which("redis-server") or "redis-server",
                    "--port", str(self.port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", self.workdir,
                    "--maxmemory", str(self.maxmemory),
                    "--maxmemory-policy", self.policy,
                    "--loglevel", "warning"]
        fields = dict(python=shlex.quote(sys.executable), port=self.port,
                      arena_path=shlex.quote(self.arena_path), arena_size=self.arena_size,
                      maxmemory=self.maxmemory, policy=self.policy, workdir=shlex.quote(self.workdir))
        return shlex.split(self.spec.cxlredis_cmd.format(**fields))

    def start(self) -> "Server":
        self.workdir = memory_tmpdir(f"cxlbench-{self.spec.kind}-")
        self.port = free_port()
        self.arena_path = (os.path.join(self.arena_dir, f"cxlbench-{self.port}.arena") if self.arena_dir
                           else os.path.join(self.workdir, "a.arena"))
        self._log = open(os.path.join(self.workdir, "server.log"), "wb")
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO_DIR + os.pathsep + env.get("PYTHONPATH", "")
        self.process = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=self.workdir, env=env)
        _running[self.process.pid] = self
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.process.returncode} on start:\n"
                                   f"{' '.join(self.command())}\n{self.log_tail()}")
            try:
                with BlobClient(port=self.port, timeout=5) as client:
                    if client.ping():
                        return
            except (OSError, ConnectionError):
                time.sleep(0.05)
        raise RuntimeError(f"{self.label} did not answer PING within {START_TIMEOUT}s")

    def log_tail(self, lines: int = 30) -> str:
        try:
            with open(os.path.join(self.workdir, "server.log"), "rb") as log:
                return b"\n".join(log.read().splitlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        _running.pop(process.pid, None)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        if self.arena_dir and os.path.exists(self.arena_path):
            os.unlink(self.arena_path)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def client(self, timeout: float | None = 120) -> BlobClient:
        return BlobClient(port=self.port, timeout=timeout)

    def call(self, *args):
        with self.client() as client:
            return client.execute(*args)

    def info(self, section: str | None = None) -> dict:
        reply = self.call("INFO", section) if section else self.call("INFO")
        return parse_info(reply)

    def flushall(self) -> None:
        self.call("FLUSHALL")

    def memory(self) -> dict:
        return process_memory(self.pid, self.arena_path)


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class ServerGroup:
    """Start one Server per spec (same settings), stop them all on exit."""

    def __init__(self, specs, **server_options):
        self.servers = [Server(spec, **server_options) for spec in specs]

    def __enter__(self) -> list[Server]:
        try:
            for server in self.servers:
                server.start()
        except BaseException:
            self.stop()
            raise
        return self.servers

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


def round_order(items, round_no: int) -> list:
    """Alternate the order every round so no server always runs first (warm caches, drift)."""
    items = list(items)
    return items if round_no % 2 == 0 else items[::-1]


# -- memory accounting -------------------------------------------------------
def _kb_fields(path: str) -> dict:
    fields = {}
    with open(path) as status:
        for line in status:
            name, _, rest = line.partition(":")
            parts = rest.split()
            if len(parts) == 2 and parts[1] == "kB":
                fields[name] = int(parts[0]) * KiB
    return fields


def _mapped_rss(pid: int, inode: int) -> int:
    """Rss of every mapping of the file with this inode in /proc/<pid>/smaps."""
    total, in_mapping = 0, False
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                in_mapping = head[4].isdigit() and int(head[4]) == inode
            elif in_mapping and head and head[0] == "Rss:":
                total += int(head[1]) * KiB
    return total


def process_memory(pid: int, arena_path: str = "") -> dict:
    """What a server really holds, without double counting the arena.

    smaps_rollup ``Rss`` counts every resident page the process has mapped:
    its anonymous memory, the file pages of its binaries and libraries, and
    for cxlredis the arena pages it has touched (tmpfs pages, i.e. Shmem).
    The arena file may also hold resident pages the process has not mapped
    or touched (a warm restart, another process writing), so the arena is
    counted from the file instead: ``held = Rss - arena pages in Rss +
    arena file resident bytes`` (tmpfs/hugetlbfs st_blocks are resident
    pages; there is no swap here). For redis-server there is no arena and
    ``held == Rss``.
    """
    rollup = _kb_fields(f"/proc/{pid}/smaps_rollup")
    status = _kb_fields(f"/proc/{pid}/status")
    arena_resident = arena_in_rss = 0
    if arena_path and os.path.exists(arena_path):
        stat = os.stat(arena_path)
        arena_resident = stat.st_blocks * 512
        arena_in_rss = _mapped_rss(pid, stat.st_ino)
    rss = rollup.get("Rss", 0)
    return {
        "rss": rss,
        "vm_rss": status.get("VmRSS", 0),
        "rss_anon": status.get("RssAnon", 0),
        "rss_shmem": status.get("RssShmem", 0),
        "arena_resident": arena_resident,
        "arena_in_rss": arena_in_rss,
        "held": rss - arena_in_rss + arena_resident,
    }


# -- parallel phased workers -------------------------------------------------
class PhasedWorkload:
    """A unit of client work run by N worker processes in lock-step phases.

    Each phase is timed (``phase``); between phases every worker checks what
    it received (``verify``) while no I/O is running, so verification costs
    neither throughput nor latency. Subclasses are created in the parent and
    inherited by the forked workers.
    """

    def setup(self, worker: int, client: BlobClient) -> None:
        """Untimed preparation (buffers, keys)."""

    def phase(self, worker: int, client: BlobClient, phase_no: int, latencies: array) -> tuple[int, int]:
        """Run one timed phase; append per-op latencies (s); return (bytes, ops)."""
        raise NotImplementedError

    def verify(self, worker: int, phase_no: int) -> None:
        """Untimed check of what the last phase received; raise on mismatch."""

    def teardown(self, worker: int, client: BlobClient) -> None:
        """Untimed clean-up."""


@dataclasses.dataclass
class PhasedResult:
    nbytes: int
    ops: int
    elapsed: float     # sum over phases of (last worker end - first worker start)
    latencies: array   # seconds, every op of every worker
    phases: int
    client_user: float    # CPU seconds all workers spent in user space during timed phases
    client_system: float  # ... and in the kernel (socket copies)
    server_cpu: float     # CPU seconds the server process (all its threads) spent in them

    @property
    def gbps(self) -> float:
        return self.nbytes / self.elapsed / 1e9 if self.elapsed else 0.0

    @property
    def ops_per_sec(self) -> float:
        return self.ops / self.elapsed if self.elapsed else 0.0

    def ms_per_gb(self, cpu_seconds: float) -> float:
        return cpu_seconds * 1e3 / (self.nbytes / 1e9) if self.nbytes else 0.0

    def latency_ms(self, fraction: float) -> float:
        return percentile(self.latencies, fraction) * 1e3


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process pid, all its threads, so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _phased_worker(workload, worker, port, barrier, stop_flag, duration, warmup_phases, results,
                   server_pid):
    # the servers belong to the parent: a worker never stops them
    _running.clear()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    client = None
    try:
        client = BlobClient(port=port, timeout=300)
        workload.setup(worker, client)
        for phase_no in range(warmup_phases):
            barrier.wait()
            workload.phase(worker, client, phase_no, array("d"))
            barrier.wait()
            workload.verify(worker, phase_no)
        latencies, windows, first_start = array("d"), [], None
        cpu_user = cpu_system = server_cpu = 0.0
        # worker 0 reads the server's CPU between the barriers that start and end a phase
        reads_server = worker == 0 and server_pid is not None
        while True:
            phase_no = warmup_phases + len(windows)
            barrier.wait()
            if reads_server:
                server_cpu -= process_cpu_seconds(server_pid)
            cpu_before = os.times()
            start = time.perf_counter()
            nbytes, ops = workload.phase(worker, client, phase_no, latencies)
            end = time.perf_counter()
            cpu_after = os.times()
            cpu_user += cpu_after.user - cpu_before.user
            cpu_system += cpu_after.system - cpu_before.system
            first_start = start if first_start is None else first_start
            if worker == 0 and end - first_start >= duration:
                stop_flag.value = 1
            barrier.wait()
            if reads_server:
                server_cpu += process_cpu_seconds(server_pid)
            windows.append((start, end, nbytes, ops))
            workload.verify(worker, phase_no)
            if stop_flag.value:
                break
        workload.teardown(worker, client)
        results.put((worker, None, windows, latencies, (cpu_user, cpu_system, server_cpu)))
    except BaseException:
        barrier.abort()
        results.put((worker, traceback.format_exc(), [], array("d"), (0.0, 0.0, 0.0)))
    finally:
        if client is not None:
            client.close()


def run_phased(workload: PhasedWorkload, port: int, workers: int, duration: float,
               warmup_phases: int = 0, server_pid: int | None = None) -> PhasedResult:
    """Run workload in `workers` forked processes for about `duration` seconds of I/O.

    The first `warmup_phases` phases run (and verify) but are not measured:
    they create the keys and fault in the pages, so the timed phases see a
    steady state. server_pid: the server's process, whose CPU in the timed phases
    is measured (from /proc, in clock ticks: summed over a measurement's phases).

    perf_counter is CLOCK_MONOTONIC, shared by all processes, so phase
    windows from different workers can be compared directly.
    """
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(workers, timeout=600)
    stop_flag = context.Value("b", 0)
    results = context.Queue()
    processes = [context.Process(target=_phased_worker, daemon=True,
                                 args=(workload, worker, port, barrier, stop_flag, duration,
                                       warmup_phases, results, server_pid))
                 for worker in range(workers)]
    for process in processes:
        process.start()
    try:
        collected = [results.get(timeout=900) for _ in processes]
    finally:
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.kill()
                process.join()
    errors = [error for _, error, _, _, _ in collected if error]
    if errors:
        raise RuntimeError("benchmark worker failed:\n" + errors[0])
    per_worker = {worker: windows for worker, _, windows, _, _ in collected}
    latencies = array("d")
    for _, _, _, worker_latencies, _ in collected:
        latencies.extend(worker_latencies)
    client_user = sum(cpu[0] for *_, cpu in collected)
    client_system = sum(cpu[1] for *_, cpu in collected)
    server_cpu = sum(cpu[2] for *_, cpu in collected)
    phases = len(per_worker[0])
    elapsed = nbytes = ops = 0
    for phase_no in range(phases):
        windows = [per_worker[worker][phase_no] for worker in range(workers)]
        elapsed += max(w[1] for w in windows) - min(w[0] for w in windows)
        nbytes += sum(w[2] for w in windows)
        ops += sum(w[3] for w in windows)
    return PhasedResult(nbytes, ops, elapsed, latencies, phases, client_user, client_system, server_cpu)


# -- results -----------------------------------------------------------------
@dataclasses.dataclass
class Metric:
    name: str
    unit: str
    better: str  # 'higher', 'lower' or '' (informational)
    tags: dict
    samples: dict  # label -> [values, one per round]


class BenchResult:
    """Per-server samples of named metrics; medians and ratios to the baseline server."""

    def __init__(self, benchmark: str, labels: list[str], params: dict | None = None):
        self.benchmark = benchmark
        self.labels = list(labels)
        self.baseline = self.labels[0]
        self.params = dict(params or {})
        self.metrics: dict[str, Metric] = {}
        self.notes: list[str] = []

    def add(self, name: str, label: str, value: float, unit: str = "",
            better: str = "higher", **tags) -> None:
        metric = self.metrics.get(name)
        if metric is None:
            metric = self.metrics[name] = Metric(name, unit, better, tags,
                                                 {each: [] for each in self.labels})
        metric.samples.setdefault(label, []).append(float(value))

    def medians(self, name: str) -> dict:
        return {label: median(values) if values else float("nan")
                for label, values in self.metrics[name].samples.items()}

    def ratios(self, name: str) -> dict:
        medians = self.medians(name)
        base = medians.get(self.baseline, float("nan"))
        return {label: (value / base if base else float("nan"))
                for label, value in medians.items() if label != self.baseline}

    def spread(self, name: str) -> str:
        spreads = []
        for values in self.metrics[name].samples.values():
            middle = median(values) if len(values) > 1 else 0
            if middle:
                spreads.append((max(values) - min(values)) / abs(middle))
        return f"{max(spreads):.0%}" if spreads else ""

    def to_json(self) -> dict:
        return {
            "benchmark": self.benchmark,
            "labels": self.labels,
            "baseline": self.baseline,
            "params": self.params,
            "notes": self.notes,
            "metrics": [
                {"name": metric.name, "unit": metric.unit, "better": metric.better,
                 "tags": metric.tags, "samples": metric.samples,
                 "median": self.medians(metric.name), "ratio": self.ratios(metric.name)}
                for metric in self.metrics.values()],
        }

    def markdown(self) -> str:
        others = self.labels[1:]
        header = ["metric", "unit", *self.labels, *(f"{label}/{self.baseline}" for label in others),
                  "spread"]
        lines = [f"### {self.benchmark}", ""]
        if self.params:
            lines += ["params: " + ", ".join(f"{key}={value}" for key, value in self.params.items()), ""]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for metric in self.metrics.values():
            medians, ratios = self.medians(metric.name), self.ratios(metric.name)
            hint = {"higher": " (↑)", "lower": " (↓)"}.get(metric.better, "")
            row = [metric.name, metric.unit + hint,
                   *(_fmt(medians.get(label)) for label in self.labels),
                   *(_fmt(ratios.get(label), ratio=True) for label in others),
                   self.spread(metric.name)]
            lines.append("| " + " | ".join(row) + " |")
        lines += [f"- {note}" for note in self.notes]
        lines.append("- spread: the widest (max - min) / median over rounds of any one server; "
                     "ratios closer to 1 than this are within the noise.")
        return "\n".join(lines) + "\n"


def _fmt(value, ratio: bool = False) -> str:
    if value is None or value != value:
        return "n/a"
    if ratio:
        return f"{value:.2f}"
    if value == 0 or abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    if abs(value) >= 0.1:
        return f"{value:.3f}"
    return f"{value:.4g}"


# -- command line -------------------------------------------------------------
@dataclasses.dataclass
class BenchConfig:
    servers: list[ServerSpec]
    rounds: int = 3
    quick: bool = False
    seed: int = 1234

    @property
    def labels(self) -> list[str]:
        return [spec.label for spec in self.servers]


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--servers", default="redis,cxlredis",
                        help="comma list of server kinds, the first is the baseline of every ratio "
                             "(redis, cxlredis; 'redis,redis' is the sanity check)")
    parser.add_argument("--cxlredis-cmd", default=DEFAULT_CXLREDIS_CMD,
                        help="command that starts cxlredis; placeholders {python} {port} {arena_path} "
                             "{arena_size} {maxmemory} {policy} {workdir}")
    parser.add_argument("--rounds", type=int,
                        help="interleaved rounds per measurement (default 5, 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="small, short smoke run")
    parser.add_argument("--seed", type=int, default=1234)


def config_from_args(args) -> BenchConfig:
    rounds = args.rounds or (3 if args.quick else 5)
    if rounds < 1:
        raise SystemExit("--rounds must be at least 1")
    return BenchConfig(parse_servers(args.servers, args.cxlredis_cmd),
                       rounds=rounds, quick=args.quick, seed=args.seed)


def install_signal_handlers() -> None:
    """Stop our servers on Ctrl-C / SIGTERM too, not only at normal exit."""
    signal.signal(signal.SIGTERM, _exit_on_signal)
    signal.signal(signal.SIGINT, _exit_on_signal)


def standalone_main(description: str, run, add_arguments=None, options_from_args=None) -> None:
    """Shared main() of each benchmark module: parse, run, print the table, optionally dump JSON."""
    parser = argparse.ArgumentParser(description=description)
    add_common_arguments(parser)
    parser.add_argument("--json", help="also write the result as JSON to this file")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args()
    install_signal_handlers()
    config = config_from_args(args)
    options = options_from_args(args) if options_from_args else {}
    result = run(config, **options)
    print(result.markdown())
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result.to_json(), out, indent=2)
