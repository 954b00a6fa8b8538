"""Many clients racing on the same few large keys, under eviction pressure.

Every value is self-checking: a header naming the key it was written for, the
writer, a sequence number, the body length and a hash of the body, then the
body (APPEND adds further whole records).  So any reader can tell a torn
value (a mix of two writes, a prefix, bytes of a freed and reused slot) or a
foreign one (another key's value) from an intact one without knowing the
order of the racing writes.

* test_racing_clients_never_see_torn_or_foreign_values: writers (redis-py
  and a raw socket that uploads each value in pieces with pauses) race
  SET / SET PX / APPEND / PEXPIRE / EXPIRE / PERSIST / DEL on four keys of
  256 KiB-8 MiB values while a filler forces eviction (maxmemory far below
  what is written) and readers (redis-py RESP2, and a raw RESP3 socket
  pipelining GETs and reading them slowly) check every value they get.
* test_slow_reader_gets_the_whole_old_value_while_it_is_overwritten_and_evicted:
  a reader takes seconds to read a 32 MiB GET reply while the key is
  overwritten, deleted and re-set and 100+ MiB of other writes evict around
  it; it receives the complete old value (its slot stays pinned, DESIGN.md
  invariant 2).

After each run: nothing is pinned, reserved or a zombie, ``DEBUG ARENA-CHECK``
is clean and the arena's used heap equals the sum of ``MEMORY USAGE`` over
the live keys.
"""
from __future__ import annotations

import hashlib
import random
import socket
import threading
import time

import redis

from conftest import encode_command, raw_connection

KIB, MIB = 1 << 10, 1 << 20
RACE_KEYS = ["race:a", "race:bb", "race:ccc", "race:dddd"]
SIZES = [256 * KIB, 512 * KIB, MIB, 2 * MIB, 4 * MIB, 8 * MIB]
APPEND_CAP = 12 * MIB
RUN_SECONDS = 5.0


class TornValue(Exception):
    pass


def make_record(key: str, writer: int, seq: int, size: int, rng: random.Random) -> bytes:
    body = (rng.randbytes(64) * (size // 64 + 1))[:size]
    digest = hashlib.blake2b(body, digest_size=8).hexdigest().encode()
    return b"<%s|%d|%d|%d|%s>" % (key.encode(), writer, seq, size, digest) + body


def check_value(key: str, value) -> int:
    """Raise TornValue unless value is one or more whole records written for key."""
    value = memoryview(value)
    pos = records = 0
    while pos < len(value):
        head = bytes(value[pos:pos + 200])
        end = head.find(b">")
        fields = head[1:end].split(b"|") if head[:1] == b"<" and end > 0 else []
        if len(fields) != 5:
            raise TornValue(f"{key}: no record header at byte {pos}: {head[:60]!r}")
        owner, _, seq, size, digest = fields
        if owner.decode() != key:
            raise TornValue(f"{key}: holds a record written for {owner.decode()!r} (seq {int(seq)})")
        size = int(size)
        body = value[pos + end + 1:pos + end + 1 + size]
        if len(body) != size:
            raise TornValue(f"{key}: record seq {int(seq)} at byte {pos} is cut at {len(body)} of {size}")
        if hashlib.blake2b(body, digest_size=8).hexdigest().encode() != digest:
            raise TornValue(f"{key}: record seq {int(seq)} at byte {pos} fails its hash")
        pos += end + 1 + size
        records += 1
    if not records:
        raise TornValue(f"{key}: empty value")
    return records


class Race:
    """Shared state of one run: stop flag, problems, counters."""

    def __init__(self, port: int, seed: int):
        self.port = port
        self.seed = seed
        self.stop = threading.Event()
        self.problems: list[str] = []
        self.lock = threading.Lock()
        self.counts = {"writes": 0, "oom": 0, "reads": 0, "hits": 0, "records_checked": 0}

    def count(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] += n

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)
        self.stop.set()

    def guard(self, body):
        def run():
            try:
                body()
            except Exception as exc:     # a dead thread must fail the test, not hide
                self.problem(f"{body.__name__}: {type(exc).__name__}: {exc}")
        return threading.Thread(target=run, daemon=True)


def writer(race: Race, wid: int):
    def write_redis_py():
        rng = random.Random(race.seed * 100 + wid)
        client = redis.Redis(port=race.port, socket_timeout=20)
        seq = 0
        while not race.stop.is_set():
            key = rng.choice(RACE_KEYS)
            seq += 1
            op = rng.random()
            try:
                if op < 0.5:
                    client.set(key, make_record(key, wid, seq, rng.choice(SIZES), rng))
                elif op < 0.6:
                    client.set(key, make_record(key, wid, seq, rng.choice(SIZES), rng),
                               px=rng.randrange(30, 300))
                elif op < 0.72:
                    if client.append(key, make_record(key, wid, seq, rng.randrange(1, 64 * KIB), rng)) \
                            > APPEND_CAP:
                        client.delete(key)
                elif op < 0.82:
                    client.pexpire(key, rng.randrange(20, 500))
                elif op < 0.88:
                    client.expire(key, 100) if rng.random() < 0.5 else client.persist(key)
                else:
                    client.delete(key)
                race.count("writes")
            except redis.exceptions.OutOfMemoryError:   # everything pinned at once: allowed
                race.count("oom")
        client.close()
    write_redis_py.__name__ = f"writer{wid}"
    return write_redis_py


def piecewise_writer(race: Race, wid: int):
    """Uploads each SET in three pieces with pauses: readers race a slot being filled."""
    def write_in_pieces():
        rng = random.Random(race.seed * 100 + wid)
        with raw_connection(race.port, timeout=20) as conn:
            seq = 0
            while not race.stop.is_set():
                key = rng.choice(RACE_KEYS)
                seq += 1
                request = encode_command("SET", key, make_record(key, wid, seq, rng.choice(SIZES), rng))
                cut1, cut2 = sorted(rng.randrange(1, len(request)) for _ in range(2))
                for piece in (request[:cut1], request[cut1:cut2], request[cut2:]):
                    conn.send(piece)
                    time.sleep(rng.uniform(0, 0.01))
                reply = conn.read_reply()
                if reply.startswith(b"-OOM"):
                    race.count("oom")
                elif reply != b"+OK\r\n":
                    race.problem(f"piecewise SET {key} answered {reply[:100]!r}")
                race.count("writes")
    return write_in_pieces


def filler(race: Race):
    def fill():
        rng = random.Random(race.seed)
        client = redis.Redis(port=race.port, socket_timeout=20)
        i = 0
        while not race.stop.is_set():
            key = f"fill:{i % 40}"
            try:
                client.set(key, make_record(key, 99, i, MIB, rng))
            except redis.exceptions.OutOfMemoryError:
                pass
            i += 1
        client.close()
    return fill


def reader(race: Race, rid: int):
    def read_redis_py():
        rng = random.Random(race.seed * 1000 + rid)
        client = redis.Redis(port=race.port, socket_timeout=20)
        while not race.stop.is_set():
            key = rng.choice(RACE_KEYS)
            value = client.get(key)
            race.count("reads")
            if value is not None:
                try:
                    race.count("records_checked", check_value(key, value))
                except TornValue as exc:
                    race.problem(f"reader{rid}: {exc}")
                race.count("hits")
        client.close()
    read_redis_py.__name__ = f"reader{rid}"
    return read_redis_py


def slow_pipelining_reader(race: Race):
    """RESP3, all four GETs in one write, replies read 16 KiB at a time with pauses."""
    def read_slowly():
        rng = random.Random(race.seed)
        with raw_connection(race.port, timeout=20) as conn:
            conn.request("HELLO", "3")
            while not race.stop.is_set():
                conn.send(b"".join(encode_command("GET", key) for key in RACE_KEYS))
                for key in RACE_KEYS:
                    reply = read_reply_slowly(conn, rng)
                    race.count("reads")
                    if reply == b"_\r\n":
                        continue
                    header_end = reply.index(b"\r\n")
                    if reply[:1] != b"$" or int(reply[1:header_end]) != len(reply) - header_end - 4:
                        race.problem(f"slow reader: malformed reply for {key}: {reply[:60]!r}")
                        return
                    try:
                        race.count("records_checked", check_value(key, memoryview(reply)[header_end + 2:-2]))
                    except TornValue as exc:
                        race.problem(f"slow reader: {exc}")
                    race.count("hits")
    return read_slowly


def read_reply_slowly(conn, rng) -> bytes:
    from conftest import reply_end
    while True:
        if conn.buffer:
            end = reply_end(conn.buffer)
            if end is not None:
                reply, conn.buffer = conn.buffer[:end], conn.buffer[end:]
                return reply
        chunk = conn.sock.recv(16 * KIB)
        if not chunk:
            raise ConnectionError("server closed the connection")
        conn.buffer += chunk
        if rng.random() < 0.02:
            time.sleep(0.002)


def assert_quiescent_and_accounted(client: redis.Redis, known_keys) -> None:
    """No pins, zombies or reservations; a clean arena check; heap used == sum of live blocks."""
    def settled():
        arena = client.info("arena")
        return arena["arena_pinned"] == 0 and arena["arena_zombies"] == 0 and arena["arena_reserved"] == 0
    deadline = time.monotonic() + 10
    while not settled():
        assert time.monotonic() < deadline, client.info("arena")
        time.sleep(0.02)
    assert client.execute_command("DEBUG", "ARENA-CHECK") == []
    pipe = client.pipeline(transaction=False)
    for key in known_keys:
        pipe.exists(key)                     # expired keys are reclaimed on access
    pipe.execute()
    live = client.keys("*")
    assert set(k.decode() for k in live) <= set(known_keys)
    pipe = client.pipeline(transaction=False)
    for key in live:
        pipe.memory_usage(key)
    blocks = pipe.execute()
    arena = client.info("arena")
    assert arena["arena_entries"] == len(live)
    assert arena["arena_heap_used"] == sum(blocks), (arena["arena_heap_used"], sum(blocks), len(live))


def test_racing_clients_never_see_torn_or_foreign_values(cxl_factory):
    seed = random.randrange(1 << 30)
    srv = cxl_factory(**{"arena-size": "96mb", "maxmemory": "40mb", "maxmemory-policy": "allkeys-lru"})
    race = Race(srv.port, seed)
    bodies = [writer(race, 1), writer(race, 2), piecewise_writer(race, 3), filler(race),
              reader(race, 1), reader(race, 2), slow_pipelining_reader(race)]
    threads = [race.guard(body) for body in bodies]
    for t in threads:
        t.start()
    race.stop.wait(RUN_SECONDS)
    race.stop.set()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a client thread hung"
    print(f"race seed {seed}: {race.counts}")
    assert not race.problems, f"[seed {seed}] " + "\n".join(race.problems[:10])
    with srv.client() as client:
        evicted = client.info("stats")["evicted_keys"]
        assert evicted > 0, "maxmemory never evicted: no eviction pressure was tested"
        assert race.counts["hits"] >= 20 and race.counts["writes"] >= 50, race.counts
        known = RACE_KEYS + [f"fill:{i}" for i in range(40)]
        assert_quiescent_and_accounted(client, known)


def test_slow_reader_gets_the_whole_old_value_while_it_is_overwritten_and_evicted(cxl_factory):
    srv = cxl_factory(**{"arena-size": "160mb", "maxmemory": "110mb", "maxmemory-policy": "allkeys-lru"})
    rng = random.Random(7)
    size = 32 * MIB
    old = make_record("blob", 0, 0, size, rng)
    client = srv.client(socket_timeout=30)
    client.set("blob", old)

    slow = socket.create_connection(("127.0.0.1", srv.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * KIB)
    slow.settimeout(30)
    slow.sendall(encode_command("GET", "blob"))
    total = len(b"$%d\r\n" % size) + size + 2
    received = bytearray()
    writes_done = threading.Event()

    def read_slowly():
        # A quarter of the reply at 256 KiB per 10 ms, then nothing until the writers
        # are through, then the rest: the reply is in flight during every write below.
        while len(received) < total:
            if len(received) >= total // 4:
                writes_done.wait(60)
            chunk = slow.recv(256 * KIB)
            if not chunk:
                break
            received.extend(chunk)
            time.sleep(0.01)

    thread = threading.Thread(target=read_slowly, daemon=True)
    thread.start()
    while len(received) < MIB:
        time.sleep(0.01)
    assert client.info("arena")["arena_pinned"] == 1      # the reply holds the entry
    zombie_seen = False
    for seq in range(1, 4):                 # overwrite, delete, re-set the key being read
        client.set("blob", make_record("blob", 1, seq, size, rng))
        zombie_seen |= client.info("arena")["arena_zombies"] >= 1
    client.delete("blob")
    filled = 40                             # 160 MiB of other values through a 110 MiB limit
    for i in range(filled):
        client.set(f"fill:{i}", make_record(f"fill:{i}", 2, i, 4 * MIB, rng))
    client.set("blob", make_record("blob", 3, 0, MIB, rng))
    assert client.info("arena")["arena_zombies"] == 1      # still sending the old value
    writes_done.set()
    thread.join(30)
    slow.close()

    header = b"$%d\r\n" % len(old)
    assert received[:len(header)] == header
    assert len(received) == len(header) + len(old) + 2, len(received)
    body = bytes(received[len(header):len(header) + len(old)])
    assert body == old, f"the slow reader got other bytes: {check_value_text('blob', body)}"
    assert zombie_seen, "the overwritten entry was not kept as a zombie while being sent"
    assert client.info("stats")["evicted_keys"] > 0
    assert_quiescent_and_accounted(client, ["blob"] + [f"fill:{i}" for i in range(filled)])
    assert check_value("blob", client.get("blob")) == 1
    client.close()


def check_value_text(key: str, value: bytes) -> str:
    try:
        return f"{check_value(key, value)} intact record(s) of another write"
    except TornValue as exc:
        return str(exc)


def test_record_check_catches_torn_and_foreign_values():
    """The checker the tests above rely on rejects every kind of damage they look for."""
    rng = random.Random(3)
    one = make_record("race:a", 1, 1, 300 * KIB, rng)
    two = make_record("race:a", 2, 5, 300 * KIB, rng)
    assert check_value("race:a", one) == 1 and check_value("race:a", one + two) == 2
    damaged = {
        "prefix": one[:-1],
        "mix of two writes": one[:len(one) // 2] + two[len(one) // 2:],
        "one flipped byte": one[:1000] + bytes([one[1000] ^ 1]) + one[1001:],
        "another key's value": make_record("race:bb", 1, 1, 300 * KIB, rng),
        "a record plus garbage": one + b"\0" * 64,
        "zeroed slot": bytes(len(one)),
    }
    for name, value in damaged.items():
        try:
            check_value("race:a", value)
        except TornValue:
            continue
        raise AssertionError(f"check_value accepted {name}")
