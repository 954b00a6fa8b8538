"""CONFIG SET of every mutable option that can change under load, while clients write
and read values on both sides of large-value-threshold: no reply ever carries bytes
that are not the stored value, the server keeps answering, and the arena stays
consistent.

Errors are allowed while a setting lasts (-OOM under a tiny maxmemory, a too-long
bulk under a small proto-max-bulk-len, a connection closed by a query or output
limit, refused by maxclients); misses are allowed (eviction). A write whose reply
was lost may or may not have landed, so the key may then hold either value.
"""
import random
import threading
import time

import redis

# (option, values set in turn); each option goes back to its value at start afterwards.
# Not here: port/bind/tls-port (move the listeners), requirepass (locks the clients
# out), and the files the server writes (audit-log-file: tested in tests/acl).
SETTINGS = [
    ("large-value-threshold", ["1kb", "1mb", "300kb"]),
    ("maxmemory", ["24mb", "4mb"]),
    ("maxmemory-policy", ["allkeys-random", "volatile-ttl", "noeviction", "allkeys-lfu"]),
    ("maxmemory-samples", ["1", "64"]),
    ("arena-checksum", ["yes", "no", "yes"]),
    ("proto-max-bulk-len", ["1mb"]),
    ("client-query-buffer-limit", ["1mb"]),
    ("client-output-buffer-limit", ["normal 1mb 256kb 1", "normal 256kb 0 0"]),
    ("hz", ["1", "500"]),
    ("timeout", ["1"]),
    ("maxclients", ["2"]),
    ("slowlog-log-slower-than", ["0", "-1"]),
    ("slowlog-max-len", ["0", "4"]),
    ("latency-monitor-threshold", ["1"]),
    ("latency-tracking", ["no"]),
    ("acllog-max-len", ["0"]),
    ("cxl-lease-ms", ["1"]),
    ("tcp-keepalive", ["0"]),
    ("loglevel", ["verbose", "warning"]),
]
SIZES = [1, 100, 1000, 60_000, 70_000, 200_000, 400_000, 2 << 20]
KEYS_PER_WORKER = 6
DURATION = 12.0
ALLOWED = (redis.ConnectionError, redis.TimeoutError, redis.ResponseError)


def value_for(worker, serial, size):
    head = f"{worker}:{serial}:".encode()
    return (head * (size // len(head) + 1))[:size]


class Worker(threading.Thread):
    """Writes its own keys and reads them back in pipelines, checking every byte."""

    def __init__(self, port, number, stop):
        super().__init__(daemon=True)
        self.port, self.number, self.stop = port, number, stop
        self.random = random.Random(number)
        self.possible = {}            # key → set of values it may hold (None: may be absent)
        self.wrong = []
        self.checked = self.errors = 0

    def connect(self):
        return redis.Redis(port=self.port, socket_timeout=10)

    def run(self):
        client = self.connect()
        serial = 0
        while not self.stop.is_set():
            key = f"w{self.number}:k{self.random.randrange(KEYS_PER_WORKER)}".encode()
            serial += 1
            value = value_for(self.number, serial, self.random.choice(SIZES))
            before = self.possible.get(key, {None})
            try:
                self.possible[key] = before | {value}
                client.set(key, value)
                self.possible[key] = {value, None}     # stored: it or (evicted) nothing
                keys = list(self.possible)
                replies = client.mget(keys)
            except ALLOWED:
                self.errors += 1
                client.close()
                client = self.connect()
                time.sleep(0.01)
                continue
            for k, got in zip(keys, replies):
                self.checked += 1
                if got not in self.possible[k]:
                    self.wrong.append((k, len(got), got[:40]))
        client.close()


def test_config_set_under_load_never_serves_wrong_bytes(cxl_factory):
    server = cxl_factory(**{"arena-size": "256mb", "maxmemory": "160mb"})
    admin = redis.Redis(port=server.port, socket_timeout=10)
    original = {name: admin.config_get(name)[name] for name, _ in SETTINGS}
    stop = threading.Event()
    workers = [Worker(server.port, n, stop) for n in range(3)]
    for worker in workers:
        worker.start()
    slowest_ping = 0.0
    deadline = time.monotonic() + DURATION
    try:
        while time.monotonic() < deadline:
            for name, values in SETTINGS:
                for value in values + [original[name]]:
                    admin.config_set(name, value)
                    start = time.monotonic()
                    assert admin.ping()
                    slowest_ping = max(slowest_ping, time.monotonic() - start)
                    time.sleep(0.02)
    finally:
        stop.set()
        for worker in workers:
            worker.join(30)
    assert slowest_ping < 2.0, slowest_ping
    assert [w.wrong for w in workers] == [[], [], []]
    assert all(w.checked > 100 for w in workers), [(w.checked, w.errors) for w in workers]
    assert admin.config_get("*threshold*")["large-value-threshold"] == original["large-value-threshold"]
    assert admin.execute_command("DEBUG", "ARENA-CHECK") == []
    assert admin.info("arena")["arena_pinned"] == 0
    admin.close()
