"""Small-value SET/GET requests per second with redis-benchmark, with and without pipelining.

Runs ``redis-benchmark -t set,get -d 64 -c 50 -n N -q`` and the same with
``-P 16`` against each server, interleaved round by round. Then, with ``-P 16``,
the other commands KV-cache clients send most (EXISTS, MGET of 10, DEL, INCR,
HSET, HGET, EXPIRE, TTL), each as a redis-benchmark command over 100,000 random
keys that a SET pass filled first. Note that redis-benchmark itself needs CPU:
on a 2-core machine it competes with the server, the same way for every server.

``--tracking`` keeps one more connection open on every server, a RESP3 client with
CLIENT TRACKING ON (client-side caching), for the whole run: what the others' commands
cost while some client tracks (cxlredis then serves every command on its general path).
"""

import contextlib
import re
import shutil
import socket

from common import BenchConfig, BenchResult, ServerGroup, MiB, round_order, run_tool, standalone_main

RESULT_LINE = re.compile(r"^([A-Z_]+): ([0-9.]+) requests per second")
TESTS = ("SET", "GET")
KEYSPACE = 100_000          # random keys of the KV commands (redis-benchmark -r)
# The KV commands, as redis-benchmark commands: __rand_int__ is a random key number.
KV_COMMANDS = {
    "EXISTS": ["EXISTS", "kv:__rand_int__"],
    "MGET 10": ["MGET", *(["kv:__rand_int__"] * 10)],
    "DEL": ["DEL", "kv:__rand_int__"],
    "INCR": ["INCR", "n:__rand_int__"],
    "HSET": ["HSET", "h:__rand_int__", "field", "value"],
    "HGET": ["HGET", "h:__rand_int__", "field"],
    "EXPIRE": ["EXPIRE", "kv:__rand_int__", "1000"],
    "TTL": ["TTL", "kv:__rand_int__"],
}
# before DEL (which empties what it hits), so the others find their keys
KV_ORDER = ("EXISTS", "MGET 10", "INCR", "HSET", "HGET", "EXPIRE", "TTL", "DEL")


def parse_rps(output: str) -> dict:
    """redis-benchmark -q output (progress lines end in \\r) -> {'SET': rps, 'GET': rps}."""
    rates = {}
    for line in re.split(r"[\r\n]+", output):
        match = RESULT_LINE.match(line.strip())
        if match:
            rates[match.group(1)] = float(match.group(2))
    return rates


def redis_benchmark(port: int, requests: int, pipeline: int, clients: int = 50,
                    data_size: int = 64) -> dict:
    command = [shutil.which("redis-benchmark") or "redis-benchmark", "-h", "127.0.0.1",
               "-p", str(port), "-t", "set,get", "-d", str(data_size), "-c", str(clients),
               "-n", str(requests), "-q"]
    if pipeline > 1:
        command += ["-P", str(pipeline)]
    completed = run_tool(command)
    rates = parse_rps(completed.stdout)
    missing = [test for test in TESTS if test not in rates]
    if completed.returncode != 0 or missing:
        raise RuntimeError(f"redis-benchmark failed (exit {completed.returncode}, missing {missing}):\n"
                           f"{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}")
    return rates


def redis_benchmark_command(port: int, requests: int, pipeline: int, args, clients: int = 50,
                            keyspace: int = KEYSPACE) -> float:
    """Requests per second of one command (args, with __rand_int__ placeholders below keyspace)."""
    command = [shutil.which("redis-benchmark") or "redis-benchmark", "-h", "127.0.0.1",
               "-p", str(port), "-c", str(clients), "-n", str(requests), "-r", str(keyspace),
               "-P", str(pipeline), "-q", *args]
    completed = run_tool(command)
    found = re.findall(r"([0-9.]+) requests per second", completed.stdout)
    if completed.returncode != 0 or not found:
        raise RuntimeError(f"redis-benchmark {' '.join(args)} failed (exit {completed.returncode}):\n"
                           f"{completed.stdout[-2000:]}\n{completed.stderr[-2000:]}")
    return float(found[-1])


def fill_keyspace(port: int) -> None:
    """Every kv: key the KV commands draw (redis-benchmark -r draws with replacement, so
    a pass of 4x the keyspace sets nearly all of them)."""
    redis_benchmark_command(port, 4 * KEYSPACE, 16, ["SET", "kv:__rand_int__", "x" * 64])


@contextlib.contextmanager
def tracking_clients(servers):
    """One RESP3 connection with CLIENT TRACKING ON per server, open until the end."""
    with contextlib.ExitStack() as stack:
        for server in servers:
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", server.port)))
            sock.sendall(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
                         b"*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n")
            received = b""
            while not received.endswith(b"+OK\r\n"):
                received += sock.recv(65536)
        yield


def run(config: BenchConfig, requests: int | None = None,
        pipelined_requests: int | None = None, tracking: bool = False) -> BenchResult:
    requests = requests or (20_000 if config.quick else 200_000)
    pipelined_requests = pipelined_requests or (100_000 if config.quick else 1_000_000)
    result = BenchResult("smallops", config.labels, {
        "value": "64 B", "clients": 50, "requests": requests,
        "requests with -P 16": pipelined_requests, "rounds": config.rounds,
        "a tracking client connected": tracking})
    with ServerGroup(config.servers, maxmemory=256 * MiB, policy="noeviction") as servers, \
            (tracking_clients(servers) if tracking else contextlib.nullcontext()):
        for pipeline, count in ((1, requests), (16, pipelined_requests)):
            for round_no in range(config.rounds):
                for server in round_order(servers, round_no):
                    rates = redis_benchmark(server.port, count, pipeline)
                    for test in TESTS:
                        result.add(f"{test} P={pipeline}", server.label, rates[test], "req/s", "higher",
                                   op=test, pipeline=pipeline)
        for round_no in range(config.rounds):
            for server in round_order(servers, round_no):
                server.flushall()
                fill_keyspace(server.port)
                for name in KV_ORDER:
                    rate = redis_benchmark_command(server.port, pipelined_requests, 16, KV_COMMANDS[name])
                    result.add(f"{name} P=16", server.label, rate, "req/s", "higher", op=name, pipeline=16)
    return result


def add_arguments(parser):
    parser.add_argument("--requests", type=int, help="requests per test without pipelining")
    parser.add_argument("--pipelined-requests", type=int, help="requests per test with -P 16")
    parser.add_argument("--tracking", action="store_true",
                        help="keep a client with CLIENT TRACKING ON connected to every server")


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments,
                    lambda args: dict(requests=args.requests,
                                      pipelined_requests=args.pipelined_requests,
                                      tracking=args.tracking))
