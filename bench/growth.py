"""Time per operation of list, set and sorted-set commands as the collection grows.

For each size N (a list, a set and a sorted set of N elements each, loaded with
variadic commands), redis-benchmark runs each command below with ``-P 16 -c 50`` over
random positions and members (``-r N``: __rand_int__ stays below N, so every member
asked for is there): the size stays N throughout (LPUSH and RPOP run the same number
of times). Reports µs per operation for every size, and per server the growth from the
smallest size to the largest: a command whose cost class matches Redis's grows about
as Redis's does (flat for O(1) and O(log N) alike at these sizes: a B+tree of 4 KiB
nodes is 3 levels deep at a million elements).
"""

import redis

from common import BenchConfig, BenchResult, ServerGroup, GiB, round_order, standalone_main
from smallops import redis_benchmark_command

# (name, redis-benchmark arguments): __rand_int__ is a member's number, written as
# redis-benchmark writes it (12 digits, zero-padded: no integer to Redis, so positions
# are the middle one); {middle} is the list's middle position
COMMANDS = (
    ("LPUSH", ["LPUSH", "l", "x"]),
    ("RPOP", ["RPOP", "l"]),
    ("LINDEX", ["LINDEX", "l", "{middle}"]),
    ("LSET", ["LSET", "l", "{middle}", "y"]),
    ("SISMEMBER", ["SISMEMBER", "s", "m:__rand_int__"]),
    ("SADD (present)", ["SADD", "s", "m:__rand_int__"]),
    ("ZSCORE", ["ZSCORE", "z", "m:__rand_int__"]),
    ("ZRANK", ["ZRANK", "z", "m:__rand_int__"]),
    ("ZADD (new score)", ["ZADD", "z", "__rand_int__", "m:__rand_int__"]),
    ("ZRANGEBYSCORE LIMIT 10", ["ZRANGEBYSCORE", "z", "__rand_int__", "+inf", "LIMIT", "0", "10"]),
)
BATCH = 1000                # elements per variadic loading command


def member(i: int) -> bytes:
    return b"m:%012d" % i          # as redis-benchmark's __rand_int__ spells i


def load(port: int, size: int) -> None:
    """l, s and z of `size` elements each (members member(0 .. size-1), scores 0 .. size-1)."""
    client = redis.Redis(port=port)
    pipe = client.pipeline(transaction=False)
    for start in range(0, size, BATCH):
        numbers = range(start, min(size, start + BATCH))
        pipe.rpush("l", *(b"v%d" % i for i in numbers))
        pipe.sadd("s", *(member(i) for i in numbers))
        pipe.zadd("z", {member(i): i for i in numbers})
        if len(pipe) >= 300:
            pipe.execute()
    pipe.execute()
    lengths = (client.llen("l"), client.scard("s"), client.zcard("z"))
    client.close()
    if lengths != (size, size, size):
        raise RuntimeError(f"loaded {lengths}, wanted {size} each")


def run(config: BenchConfig, sizes=None, requests: int | None = None) -> BenchResult:
    sizes = sizes or ([100, 10_000, 100_000] if config.quick else [100, 1_000, 10_000, 100_000, 1_000_000])
    requests = requests or (50_000 if config.quick else 200_000)
    result = BenchResult("growth", config.labels, {
        "sizes": sizes, "requests per command and size": requests, "pipeline": 16, "clients": 50,
        "rounds": config.rounds})
    with ServerGroup(config.servers, maxmemory=2 * GiB, policy="noeviction") as servers:
        for size in sizes:
            for round_no in range(config.rounds):
                for server in round_order(servers, round_no):
                    server.flushall()
                    load(server.port, size)
                    for name, args in COMMANDS:
                        args = [arg.format(middle=size // 2) for arg in args]
                        rate = redis_benchmark_command(server.port, requests, 16, args, keyspace=size)
                        result.add(f"{name} N={size}", server.label, 1e6 / rate, "µs/op", "lower",
                                   op=name, size=size)
        for name, _ in COMMANDS:
            for server in servers:
                first = result.medians(f"{name} N={sizes[0]}")[server.label]
                last = result.medians(f"{name} N={sizes[-1]}")[server.label]
                result.add(f"{name}: N={sizes[-1]} / N={sizes[0]}", server.label, last / first, "×", "lower",
                           op=name)
    return result


def add_arguments(parser):
    parser.add_argument("--sizes", help="collection sizes, comma separated (default 100..1000000)")
    parser.add_argument("--requests", type=int, help="redis-benchmark requests per command and size")


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments,
                    lambda args: dict(sizes=[int(s) for s in args.sizes.split(",")] if args.sizes else None,
                                      requests=args.requests))
