"""Run every benchmark against the same servers and write one report.

Writes bench/results/<timestamp>.md (tables), .json (every sample) and .png
(blob throughput vs value size per server), and prints the tables.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import traceback

import blobs
import client_ceiling
import disk_tier
import first_fill
import growth
import hitratio
import lmcache_connectors
import lmcache_mix
import memory
import prefix
import pubsub
import smallops
from common import (BENCH_DIR, REPO_DIR, BenchResult, add_common_arguments, config_from_args,
                    format_size, install_signal_handlers)

BENCHMARKS = {
    "client_ceiling": client_ceiling.run,
    "blobs": blobs.run,
    "lmcache_mix": lmcache_mix.run,
    "lmcache_connectors": lmcache_connectors.run,
    "prefix": prefix.run,
    "smallops": smallops.run,
    "pubsub": pubsub.run,
    "memory": memory.run,
    "hitratio": hitratio.run,
    "first_fill": first_fill.run,
    "growth": growth.run,
    "disk_tier": disk_tier.run,
}


def machine_description() -> dict:
    def first_line(command) -> str:
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=30,
                                  cwd=REPO_DIR).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            return "unknown"

    cpu_model = "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu_model = next(line.split(":", 1)[1].strip() for line in cpuinfo
                             if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem_total = 0
    try:
        with open("/proc/meminfo") as meminfo:
            mem_total = int(next(line.split()[1] for line in meminfo if line.startswith("MemTotal")))
    except (OSError, StopIteration):
        pass
    return {
        "cpus": os.cpu_count(), "cpu": cpu_model, "memory": f"{mem_total / 1024 / 1024:.1f} GiB",
        "kernel": platform.release(), "python": platform.python_version(),
        "redis-server": first_line(["redis-server", "--version"]),
        "git": first_line(["git", "rev-parse", "--short", "HEAD"]),
    }


def plot(results: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    blob_result, ceiling = results.get("blobs"), results.get("client_ceiling")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    sizes_seen = set()
    for axis, op in zip(axes, ("SET", "GET")):
        if blob_result:
            series: dict[tuple, list] = {}
            for metric in blob_result.metrics.values():
                tags = metric.tags
                if tags.get("stat") != "gbps" or tags.get("op") != op:
                    continue
                for label, value in blob_result.medians(metric.name).items():
                    series.setdefault((label, tags["conns"]), []).append((tags["size"], value))
            connection_counts = sorted({conns for _, conns in series})
            styles = ["-", "--", "-.", ":"]
            for (label, conns), points in sorted(series.items(), key=lambda item: (
                    blob_result.labels.index(item[0][0]), item[0][1])):
                points.sort()
                sizes_seen.update(size for size, _ in points)
                axis.plot([size for size, _ in points], [value for _, value in points], marker="o",
                          color=colors[blob_result.labels.index(label) % len(colors)],
                          linestyle=styles[connection_counts.index(conns) % len(styles)],
                          label=f"{label}, {conns} conn{'s' if conns > 1 else ''}")
        if ceiling:
            points = sorted((metric.tags["size"], ceiling.medians(metric.name)[ceiling.baseline])
                            for metric in ceiling.metrics.values()
                            if metric.tags.get("stat") == "gbps" and metric.tags.get("op") == op)
            if points:
                axis.plot([size for size, _ in points], [value for _, value in points], marker="x",
                          color="black", linestyle=":", label="client ceiling (no-op server)")
                sizes_seen.update(size for size, _ in points)
        axis.set_xscale("log", base=2)
        if sizes_seen:
            axis.set_xticks(sorted(sizes_seen), [format_size(size) for size in sorted(sizes_seen)])
            axis.minorticks_off()
        axis.set_xlabel("value size")
        axis.set_title(f"{op} throughput")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    axes[0].set_ylabel("GB/s (median of rounds)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_report(results: dict, failures: dict, config, machine: dict, started: float,
                 out_dir: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started))
    base = os.path.join(out_dir, stamp)
    os.makedirs(out_dir, exist_ok=True)
    servers = ", ".join(f"{spec.label} ({spec.kind})" for spec in config.servers)
    lines = [f"# cxlredis benchmarks {stamp}", "",
             f"- servers: {servers}; ratios are <server>/{config.labels[0]}",
             f"- rounds: {config.rounds}, interleaved; values are medians over rounds"
             f"{' (quick run)' if config.quick else ''}",
             f"- duration: {time.time() - started:.0f} s",
             *(f"- {key}: {value}" for key, value in machine.items())]
    if any(spec.kind == "cxlredis" for spec in config.servers):
        lines.append(f"- cxlredis command: `{config.servers[[s.kind for s in config.servers].index('cxlredis')].cxlredis_cmd}`")
    lines.append("")
    lines += [result.markdown() for result in results.values()]
    for name, error in failures.items():
        lines += [f"### {name}: FAILED", "", "```", error.strip(), "```", ""]
    if "blobs" in results or "client_ceiling" in results:
        plot(results, base + ".png")
        lines += [f"![blob throughput]({os.path.basename(base)}.png)", ""]
    report = "\n".join(lines)
    with open(base + ".md", "w") as out:
        out.write(report)
    with open(base + ".json", "w") as out:
        json.dump({"started": stamp, "machine": machine, "quick": config.quick,
                   "rounds": config.rounds, "servers": [vars(spec) for spec in config.servers],
                   "results": [result.to_json() for result in results.values()],
                   "failures": failures}, out, indent=1)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument("--only", help=f"comma list of benchmarks to run (from {', '.join(BENCHMARKS)})")
    parser.add_argument("--skip", default="", help="comma list of benchmarks to leave out")
    parser.add_argument("--out-dir", default=os.path.join(BENCH_DIR, "results"))
    args = parser.parse_args()
    install_signal_handlers()
    config = config_from_args(args)
    chosen = [name.strip() for name in (args.only or ",".join(BENCHMARKS)).split(",") if name.strip()]
    skipped = {name.strip() for name in args.skip.split(",") if name.strip()}
    unknown = [name for name in [*chosen, *skipped] if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmarks: {', '.join(unknown)}")
    started = time.time()
    results: dict[str, BenchResult] = {}
    failures: dict[str, str] = {}
    for name in chosen:
        if name in skipped:
            continue
        print(f"== {name} ...", file=sys.stderr, flush=True)
        began = time.time()
        try:
            results[name] = BENCHMARKS[name](config)
        except Exception:
            failures[name] = traceback.format_exc()
            print(failures[name], file=sys.stderr, flush=True)
        print(f"== {name} done in {time.time() - began:.0f} s", file=sys.stderr, flush=True)
    report = write_report(results, failures, config, machine_description(), started, args.out_dir)
    print(report)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
