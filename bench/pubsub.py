"""PUBLISH throughput with 1 and 50 subscribers, every message delivered and counted.

redis-benchmark sends ``PUBLISH bench-channel <64 B>`` from 50 clients (with and
without ``-P 16``) while a separate process holds the subscribers (RESP2 SUBSCRIBE to
the channel) and drains them. Reported per server: the PUBLISH rate redis-benchmark
measures, and the delivery rate, messages received by all subscribers over the time
from the start of the PUBLISH run to the moment the last message was read. A run whose subscribers did not get
every message fails instead of reporting.
"""

import multiprocessing
import selectors
import socket
import time

from common import BenchConfig, BenchResult, ServerGroup, MiB, round_order, standalone_main
from smallops import redis_benchmark_command

CHANNEL = b"bench-channel"
MESSAGE = b"m" * 64
# what a subscriber receives per PUBLISH (RESP2)
FRAME = b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL,
                                                              len(MESSAGE), MESSAGE)
SUBSCRIBED = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(CHANNEL), CHANNEL)


def _drain(port, subscribers, ready, expected, outcome):
    """Subscribe `subscribers` connections, then read until every one got `expected.get()`
    messages (or a minute passed); puts the bytes each one received."""
    selector = selectors.DefaultSelector()
    received = {}
    for _ in range(subscribers):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(CHANNEL), CHANNEL))
        reply = b""
        while len(reply) < len(SUBSCRIBED):
            reply += sock.recv(len(SUBSCRIBED) - len(reply))
        assert reply == SUBSCRIBED, reply
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        received[sock] = 0
    ready.set()
    want = deadline = None
    while True:
        if want is None and not expected.empty():
            want = expected.get() * len(FRAME)
            deadline = time.monotonic() + 60
        if want is not None and (all(n >= want for n in received.values())
                                 or time.monotonic() > deadline):
            break
        for key, _ in selector.select(timeout=0.05):
            data = key.fileobj.recv(4 * MiB)
            received[key.fileobj] += len(data)
    outcome.put(sorted(received.values()))
    for sock in received:
        sock.close()


def measure(port, subscribers, requests, pipeline):
    """(PUBLISH req/s, delivered messages/s) of one run."""
    context = multiprocessing.get_context("fork")
    ready, expected, outcome = context.Event(), context.Queue(), context.Queue()
    drainer = context.Process(target=_drain, args=(port, subscribers, ready, expected, outcome))
    drainer.start()
    try:
        if not ready.wait(30):
            raise RuntimeError("the subscribers did not subscribe")
        started = time.perf_counter()
        rate = redis_benchmark_command(port, requests, pipeline, ["PUBLISH", CHANNEL.decode(), MESSAGE.decode()])
        expected.put(requests)
        per_subscriber = outcome.get(timeout=120)
        elapsed = time.perf_counter() - started
        if per_subscriber[0] != requests * len(FRAME):
            raise RuntimeError(f"a subscriber got {per_subscriber[0] // len(FRAME)} of {requests} messages")
        return rate, requests * subscribers / elapsed
    finally:
        drainer.join(10)
        if drainer.is_alive():
            drainer.kill()


def run(config: BenchConfig, requests: int | None = None) -> BenchResult:
    requests = requests or (20_000 if config.quick else 200_000)
    result = BenchResult("pubsub", config.labels, {
        "message": f"{len(MESSAGE)} B", "publishers": 50, "requests": requests,
        "rounds": config.rounds})
    with ServerGroup(config.servers, maxmemory=256 * MiB, policy="noeviction") as servers:
        for subscribers in (1, 50):
            for pipeline in (1, 16):
                for round_no in range(config.rounds):
                    for server in round_order(servers, round_no):
                        rate, delivered = measure(server.port, subscribers, requests, pipeline)
                        name = f"{subscribers} sub P={pipeline}"
                        result.add(f"PUBLISH {name}", server.label, rate, "req/s", "higher",
                                   subscribers=subscribers, pipeline=pipeline)
                        result.add(f"delivered {name}", server.label, delivered, "msg/s", "higher",
                                   subscribers=subscribers, pipeline=pipeline)
    return result


def add_arguments(parser):
    parser.add_argument("--requests", type=int, help="PUBLISH requests per run")


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments,
                    lambda args: dict(requests=args.requests))
