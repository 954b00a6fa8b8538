"""A prompt's longest cached prefix: LMCache's batched_async_contains for a 64-chunk prompt.

Before a prefill, LMCache asks its remote backend how many of the prompt's leading
chunks are cached. Measured here with LMCache 0.5.6's own connectors, built as LMCache
builds them (tests/lmcache/lmcache_driver.py, in a child process that times each call
itself):

* `redis://` (RedisConnector): one EXISTS per chunk, each awaited before the next;
* `resp://` (RESPConnector, LMCache's native client): every chunk's EXISTS pipelined;
* the cxlredis plugin (cxlredis.lmcache_plugin): one `CXL PREFIX` naming every chunk.

The first two run against redis-server and cxlredis, the plugin against cxlredis only
(Redis has no such command). `--cached` of the prompt's chunks are stored (1 MiB each,
through the connector that then looks them up: each keys its chunks its own way), the rest are not: the answer is
`--cached` every time, and is checked.
"""
import os
import sys

from common import BenchResult, MiB, Server, median, round_order, standalone_main

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "lmcache"))
from lmcache_driver import SMALL_CHUNK, LMCacheConnector, missing_requirements  # noqa: E402

PROMPT_CHUNKS = 64
DEFAULT_CACHED = (48, 64)
CALLS, QUICK_CALLS = 400, 100
PLUGIN = "cxlredis"


def connector_urls(server):
    """(row name, LMCache url, extra_config) of each connector that can talk to server."""
    address = f"127.0.0.1:{server.port}"
    urls = [("redis:// (EXISTS per chunk)", f"redis://{address}", {}),
            ("resp:// (pipelined EXISTS)", f"resp://{address}", {})]
    if server.spec.kind == "cxlredis":
        urls.append(("cxlredis plugin (one CXL PREFIX)", f"plugin://{PLUGIN}", {
            f"remote_storage_plugin.{PLUGIN}.module_path": "cxlredis.lmcache_plugin",
            f"remote_storage_plugin.{PLUGIN}.class_name": "CxlRedisConnector",
            f"remote_storage_plugin.{PLUGIN}.url": f"redis://{address}"}))
    return urls


def measure(server, cached, calls, round_no):
    """{row name: median µs per batched_async_contains call} on server."""
    hashes = [(round_no << 32) | n for n in range(PROMPT_CHUNKS)]
    timings = {}
    for row, url, extra in connector_urls(server):
        with LMCacheConnector(url, SMALL_CHUNK, extra_config=extra, max_chunks=cached) as connector:
            # each connector keys its chunks its own way (redis:// stores two keys per chunk)
            connector.timed_store(hashes[:cached], version=round_no)
            connector.timed_contains(hashes, 20)                    # warm the connections
            seconds, found = connector.timed_contains(hashes, calls)
        if found != cached:
            raise AssertionError(f"{server.label} over {url}: {found} leading chunks found, "
                                 f"{cached} are stored")
        timings[row] = median(seconds) * 1e6
    return timings


def run(config, cached=None) -> BenchResult:
    cached = cached or DEFAULT_CACHED
    calls = QUICK_CALLS if config.quick else CALLS
    result = BenchResult("prefix", config.labels, {
        "prompt": f"{PROMPT_CHUNKS} chunks", "cached": "/".join(map(str, cached)),
        "calls": calls, "rounds": config.rounds})
    missing = missing_requirements()
    if missing:
        result.notes.append(f"skipped: {missing}")
        return result
    for leading in cached:
        for round_no in range(config.rounds):
            for spec in round_order(config.servers, round_no):
                with Server(spec, maxmemory=4 * PROMPT_CHUNKS * SMALL_CHUNK.nbytes) as server:
                    for row, micros in measure(server, leading, calls, round_no).items():
                        result.add(f"contains, {leading}/{PROMPT_CHUNKS} cached: {row}", spec.label,
                                   micros, "µs", "lower", cached=leading)
        _compare_plugin(result, leading)
    result.notes.append(f"median of {calls} calls per connector per round; one server per round, "
                        f"started for it; {SMALL_CHUNK.nbytes // MiB} MiB chunks.")
    return result


def _compare_plugin(result, leading):
    """A note: the plugin on cxlredis against each LMCache connector on the baseline."""
    rows = {name.rsplit(": ", 1)[1]: name for name in result.metrics
            if name.startswith(f"contains, {leading}/")}
    plugin = next((name for row, name in rows.items() if row.startswith("cxlredis plugin")), None)
    if plugin is None:
        return
    mine = next((v for label, v in result.medians(plugin).items() if v == v), None)
    for row, name in rows.items():
        base = result.medians(name).get(result.baseline)
        if name != plugin and base == base and mine:
            result.notes.append(f"{leading}/{PROMPT_CHUNKS} cached: the plugin on cxlredis answers in "
                                f"{mine:.0f} µs, {base / mine:.1f}× faster than {row} on "
                                f"{result.baseline} ({base:.0f} µs)")


def add_arguments(parser):
    parser.add_argument("--cached", type=lambda text: tuple(int(n) for n in text.split(",")),
                        help=f"leading chunks stored, e.g. 48,64 (default); of {PROMPT_CHUNKS}")


def options_from_args(args) -> dict:
    return dict(cached=args.cached)


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
