"""Crash consistency under SIGKILL during heavy concurrent writes.

Several writer threads hammer the server with SET / overwrite / APPEND /
EXPIRE / PEXPIRE / DEL / RENAME / GET of values from 1 KiB to 8 MiB (many of
them >= 64 KiB, so they are received straight into arena slots), and the
server is killed with SIGKILL at a random moment, then restarted on the same
arena.  Every value carries its own identity: a header naming the key it was
written for, the writer, a sequence number, the body length and a hash of
the body.  After each restart the test checks that

* every key present holds a whole, byte-exact record written for it (an
  APPEND key: whole chunks in the order they were appended), never a mix or
  a prefix, and no key exists that no client wrote;
* each key is in the state its last acknowledged command left it in, or in
  the state its interrupted in-flight command would leave (value and TTL),
  so acknowledged writes survive the kill;
* ``DEBUG ARENA-CHECK`` is empty and ``INFO persistence`` says
  ``arena_recovery:rebuilt``;
* the restarted server serves a fresh write/read round trip.

Each writer owns its keys, so its own command order defines the expected
state.  Random choices are seeded (``CXLREDIS_CRASH_SEED`` replays a seed;
the seed is in every failure message); thread interleaving and the exact kill
moment still vary between runs.
"""
from __future__ import annotations

import hashlib
import os
import random
import signal
import threading
import time
from dataclasses import dataclass

import pytest

from conftest import ConnectionClosed, Error, ReplyTimeout, parse_reply, raw_connection

WRITERS = 6
CYCLES = 6
BLOB_KEYS = 4
KILL_DELAY = (0.3, 1.6)           # seconds of writing before each SIGKILL
LOG_LIMIT = 3 << 20               # an APPEND key is deleted once it grows past this
SMALL_GET_LIMIT = 1 << 20         # in-run GETs only for values this small (keeps clients fast)
LONG_TTL = (300, 3000)            # seconds: outlives the test
SHORT_TTL_MS = (300, 1500)        # may expire during the run, the kill or the restart
SHORT_TTL_CEILING_MS = 1500       # a PTTL above this can only come from a long TTL
WRITER_REPLY_TIMEOUT = 15.0


class TornValue(Exception):
    """A stored value that is not whole records written for its key."""


# ---------------------------------------------------------------- records

def make_record(key: str, writer: int, seq: int, body_len: int, rng: random.Random) -> bytes:
    # A 64-byte pattern unique to this write, repeated: a mix of two writes or
    # a truncated write breaks the length or the hash.
    body = (rng.randbytes(64) * (body_len // 64 + 1))[:body_len]
    digest = hashlib.blake2b(body, digest_size=8).hexdigest()
    return b"<%s|%d|%d|%d|%s>" % (key.encode(), writer, seq, body_len, digest.encode()) + body


@dataclass(frozen=True)
class Record:
    key: str
    writer: int
    seq: int


def parse_records(value: bytes) -> list[Record]:
    """Split a value into its records, checking each one's length and hash."""
    records = []
    pos = 0
    while pos < len(value):
        if value[pos:pos + 1] != b"<":
            raise TornValue(f"no record header at byte {pos}: {value[pos:pos + 40]!r}")
        end = value.find(b">", pos, pos + 200)
        fields = value[pos + 1:end].split(b"|") if end > 0 else []
        if len(fields) != 5:
            raise TornValue(f"malformed record header at byte {pos}: {value[pos:pos + 80]!r}")
        key, writer, seq, body_len, digest = fields
        body_len = int(body_len)
        body = value[end + 1:end + 1 + body_len]
        if len(body) != body_len:
            raise TornValue(f"record {key!r} seq {int(seq)} at byte {pos} is truncated: "
                            f"{len(body)} of {body_len} body bytes")
        if hashlib.blake2b(body, digest_size=8).hexdigest().encode() != digest:
            raise TornValue(f"record {key!r} seq {int(seq)} at byte {pos}: body hash mismatch")
        records.append(Record(key.decode(), int(writer), int(seq)))
        pos = end + 1 + body_len
    if not records:
        raise TornValue("empty value")
    return records


# ---------------------------------------------------------------- model

@dataclass(frozen=True)
class State:
    """What a key holds: desc is (origin key, seq) for a blob key, the tuple of
    appended seqs for a log key, None when absent; ttl is "none", "long" or "short"."""
    desc: tuple | None
    ttl: str = "none"


ABSENT = State(None)


def ttl_class(pttl: int) -> str:
    if pttl == -1:
        return "none"
    return "short" if pttl <= SHORT_TTL_CEILING_MS else "long"


class Writer:
    """One client thread's keys, its model of them and its command generator."""

    def __init__(self, wid: int, seed: int, evicting: bool):
        self.wid = wid
        self.rng = random.Random(seed)
        self.evicting = evicting
        # Names of different lengths: RENAME then both rewrites the key in place
        # and relocates the value to a bigger entry.
        self.blob_keys = [f"w{wid}:b{i}" + "x" * (6 * i) for i in range(BLOB_KEYS)]
        self.log_key = f"w{wid}:log"
        self.keys = self.blob_keys + [self.log_key]
        self.state = {key: ABSENT for key in self.keys}
        self.in_flight: dict = {}   # key -> states an interrupted command may have left
        self.record_len: dict[int, int] = {}          # seq -> stored bytes of that record
        self.seq = 0
        self.acked = 0
        self.problems: list[str] = []

    # -- the thread body: runs until the server dies under it

    def run(self, port: int) -> None:
        try:
            conn = raw_connection(port, timeout=WRITER_REPLY_TIMEOUT)
        except OSError:
            return   # killed before this writer got going
        with conn:
            try:
                self.write_until_killed(conn)
            except Exception as exc:   # a bug here must fail the test, not end the thread quietly
                self.problems.append(f"w{self.wid}: writer crashed: {exc!r}")

    def write_until_killed(self, conn) -> None:
        while True:
            command, self.in_flight, on_reply = self.next_command()
            try:
                reply = parse_reply(conn.request(*command))
            except ReplyTimeout:
                self.problems.append(f"w{self.wid}: no reply to {command[:2]} within "
                                     f"{WRITER_REPLY_TIMEOUT}s from a live server")
                return
            except (OSError, ConnectionClosed):
                return   # the kill: the command stays in flight
            self.in_flight = {}
            self.acked += 1
            on_reply(reply)

    # -- model helpers

    def vanishable(self, key: str) -> bool:
        """Whether the key may disappear without a command of ours (eviction, short TTL)."""
        return self.evicting or self.state[key].ttl == "short"

    def length(self, desc: tuple | None) -> int:
        if desc is None:
            return 0
        if isinstance(desc[0], str):
            return self.record_len[desc[1]]
        return sum(self.record_len[seq] for seq in desc)

    def new_record(self, key: str, body_len: int) -> tuple[int, bytes]:
        self.seq += 1
        record = make_record(key, self.wid, self.seq, body_len, self.rng)
        self.record_len[self.seq] = len(record)
        return self.seq, record

    def unexpected(self, command: str, key: str, reply, before: State) -> None:
        """Record a reply the model of ``key`` (the command's first key) cannot explain."""
        self.problems.append(f"w{self.wid}: {command} answered {reply!r} but the model holds "
                             f"{key} as {before} (vanishable={self.vanishable(key)})")

    def refused(self, reply) -> bool:
        """An -OOM is a legitimate refusal when eviction cannot make room (pinned values)."""
        return self.evicting and isinstance(reply, Error) and reply.startswith("OOM")

    def describe(self, key: str, value: bytes) -> tuple:
        """The desc of a stored value, after checking it is whole records written for key."""
        records = parse_records(value)
        if any(r.writer != self.wid for r in records):
            raise TornValue(f"{key} holds a record of another writer: {records[:4]}")
        if key == self.log_key:
            if any(r.key != key for r in records):
                raise TornValue(f"{key} holds a chunk written for another key: {records[:4]}")
            seqs = tuple(r.seq for r in records)
            if list(seqs) != sorted(set(seqs)):
                raise TornValue(f"{key} holds chunks out of append order: {seqs}")
            return seqs
        if len(records) != 1 or records[0].key not in self.blob_keys:
            raise TornValue(f"{key} holds {records[:4]}, not one record of this writer's keys")
        return (records[0].key, records[0].seq)

    # -- commands: each returns (argv, in-flight states, reply handler)

    def next_command(self):
        roll = self.rng.random()
        if roll < 0.30:
            return self.cmd_set()
        if roll < 0.55:
            return self.cmd_append()
        if roll < 0.63:
            return self.cmd_expire(short=False)
        if roll < 0.67:
            return self.cmd_expire(short=True)
        if roll < 0.74:
            return self.cmd_del(self.rng.choice(self.blob_keys))
        if roll < 0.86:
            return self.cmd_rename()
        return self.cmd_get()

    def blob_size(self) -> int:
        roll = self.rng.random()
        if roll < 0.55:
            return self.rng.randint(1 << 10, (64 << 10) - 1)
        if roll < 0.92:
            return self.rng.randint(64 << 10, 1 << 20)
        return self.rng.randint(1 << 20, 8 << 20)

    def cmd_set(self):
        key = self.rng.choice(self.blob_keys)
        seq, value = self.new_record(key, self.blob_size())
        argv = ["SET", key, value]
        ttl = "none"
        if self.rng.random() < 0.15:
            argv += ["EX", self.rng.randint(*LONG_TTL)]
            ttl = "long"
        after = State((key, seq), ttl)

        def on_reply(reply):
            if reply == "OK":
                self.state[key] = after
            elif not self.refused(reply):
                self.unexpected(f"SET {key}", key, reply, self.state[key])
        return argv, {key: {after}}, on_reply

    def cmd_append(self):
        key = self.log_key
        before = self.state[key]
        if self.length(before.desc) > LOG_LIMIT:
            return self.cmd_del(key)
        body_len = self.rng.randint(64 << 10, 256 << 10) if self.rng.random() < 0.3 \
            else self.rng.randint(1 << 10, 16 << 10)
        seq, chunk = self.new_record(key, body_len)
        grown = State((before.desc or ()) + (seq,), before.ttl)
        restarted = State((seq,))   # the key had vanished: APPEND creates it anew
        maybe = {grown} | ({restarted} if self.vanishable(key) else set())

        def on_reply(reply):
            if reply == self.length(before.desc) + len(chunk):
                self.state[key] = grown
            elif reply == len(chunk) and self.vanishable(key):
                self.state[key] = restarted
            elif not self.refused(reply):
                self.unexpected(f"APPEND {key}", key, reply, before)
        return ["APPEND", key, chunk], {key: maybe}, on_reply

    def cmd_expire(self, short: bool):
        key = self.rng.choice(self.keys)
        before = self.state[key]
        if short:
            argv, ttl = ["PEXPIRE", key, self.rng.randint(*SHORT_TTL_MS)], "short"
        else:
            argv, ttl = ["EXPIRE", key, self.rng.randint(*LONG_TTL)], "long"
        after = State(before.desc, ttl)

        def on_reply(reply):
            if reply == 1 and before.desc is not None:
                self.state[key] = after
            elif reply == 0 and (before.desc is None or self.vanishable(key)):
                self.state[key] = ABSENT
            else:
                self.unexpected(f"{argv[0]} {key}", key, reply, before)
        return argv, ({key: {after}} if before.desc is not None else {}), on_reply

    def cmd_del(self, key: str):
        before = self.state[key]

        def on_reply(reply):
            if not (reply == 1 and before.desc is not None
                    or reply == 0 and (before.desc is None or self.vanishable(key))):
                self.unexpected(f"DEL {key}", key, reply, before)
            self.state[key] = ABSENT
        return ["DEL", key], {key: {ABSENT}}, on_reply

    def cmd_rename(self):
        src, dst = self.rng.sample(self.blob_keys, 2)
        moved = self.state[src]

        def on_reply(reply):
            if reply == "OK" and moved.desc is not None:
                self.state[dst], self.state[src] = moved, ABSENT
            elif reply == "ERR no such key" and (moved.desc is None or self.vanishable(src)):
                self.state[src] = ABSENT
            elif not self.refused(reply):   # a rename by copy needs room for the copy
                self.unexpected(f"RENAME {src} {dst}", src, reply, moved)
        if moved.desc is None:
            return ["RENAME", src, dst], {}, on_reply
        # An interrupted RENAME leaves the value at its old name or at its new one
        # (checked jointly by verify under the ("rename", src, dst) entry).
        return ["RENAME", src, dst], {src: {ABSENT}, dst: {moved}, ("rename", src, dst): {moved}}, on_reply

    def cmd_get(self):
        small = [k for k in self.blob_keys if self.length(self.state[k].desc) <= SMALL_GET_LIMIT]
        key = self.rng.choice(small or self.blob_keys)
        before = self.state[key]

        def on_reply(reply):
            if reply is None:
                if before.desc is not None and not self.vanishable(key):
                    self.unexpected(f"GET {key}", key, reply, before)
                self.state[key] = ABSENT
                return
            try:
                desc = self.describe(key, reply)
            except TornValue as exc:
                self.problems.append(f"w{self.wid}: GET {key} served a torn value: {exc}")
                return
            if desc != before.desc:
                self.unexpected(f"GET {key}", key, desc, before)
        return ["GET", key], {}, on_reply

    # -- after a restart

    def verify(self, client, fail) -> int:
        """Check every key against the model, then adopt what is stored. Returns keys present."""
        present = 0
        for key in self.keys:
            acceptable = {self.state[key]} | self.in_flight.get(key, set())
            if self.evicting or any(s.ttl == "short" for s in acceptable):
                acceptable.add(ABSENT)
            value = client.get(key)
            pttl = client.pttl(key)
            if value is None:
                actual = ABSENT
            else:
                try:
                    desc = self.describe(key, value)
                except TornValue as exc:
                    fail(f"{key} holds a torn or foreign value after restart: {exc}")
                # -2: a short TTL ran out between GET and PTTL
                actual = State(desc, "short" if pttl == -2 else ttl_class(pttl))
                present += 1
            if actual not in acceptable:
                fail(f"{key} after restart is {actual} (pttl {pttl}); acknowledged state "
                     f"{self.state[key]}, in-flight command could leave {self.in_flight.get(key)}")
            self.state[key] = actual
        for entry, states in self.in_flight.items():
            if isinstance(entry, tuple):
                (_, src, dst), (moved,) = entry, states
                names = [key for key in (src, dst) if self.state[key] == moved]
                if len(names) > 1 or not names and not (self.evicting or moved.ttl == "short"):
                    fail(f"an interrupted RENAME {src} {dst} left {moved} at {names or 'neither name'}")
        self.in_flight = {}
        return present


# ---------------------------------------------------------------- driver

def info_field(client, section: str, name: str):
    return client.info(section)[name]


def crash_cycles(server, seed: int, evicting: bool, tenant: str | None = None) -> dict:
    """Kill -9 cycles under the writers; `tenant`: the writers' (the default user's) tenant
    has an arena of its own, which must be rebuilt after each kill too."""
    def fail(message: str):
        pytest.fail(f"[seed {seed}] {message}", pytrace=False)

    rng = random.Random(seed)
    writers = [Writer(wid, rng.randrange(1 << 32), evicting) for wid in range(WRITERS)]
    known_keys = {key for w in writers for key in w.keys}
    totals = {"cycles": 0, "keys_checked": 0, "keys_present": 0, "acked": 0,
              "in_flight": 0, "evicted": 0}
    for cycle in range(CYCLES):
        threads = [threading.Thread(target=w.run, args=(server.port,), daemon=True)
                   for w in writers]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(*KILL_DELAY))
        with server.client() as probe:
            totals["evicted"] = max(totals["evicted"], info_field(probe, "stats", "evicted_keys"))
        server.kill9()
        for t in threads:
            t.join(WRITER_REPLY_TIMEOUT + 5)
        if any(t.is_alive() for t in threads):
            fail(f"cycle {cycle}: a writer is still running after the kill")
        problems = [p for w in writers for p in w.problems]
        if problems:
            fail(f"cycle {cycle}: replies contradict the model:\n" + "\n".join(problems[:10]))
        totals["in_flight"] += sum(bool(w.in_flight) for w in writers)

        server.restart()
        with server.client() as client:
            recovery = info_field(client, "persistence", "arena_recovery")
            if recovery != "rebuilt":
                fail(f"cycle {cycle}: arena_recovery is {recovery!r} after SIGKILL")
            if tenant is not None:
                fields = client.execute_command("TENANT", "INFO", tenant)
                recovery = dict(zip(fields[0::2], fields[1::2]))[b"arena_recovery"]
                if recovery != b"rebuilt":
                    fail(f"cycle {cycle}: the tenant's arena was {recovery!r} after SIGKILL")
            arena_problems = client.execute_command("DEBUG", "ARENA-CHECK")
            if arena_problems:
                fail(f"cycle {cycle}: DEBUG ARENA-CHECK after restart: {arena_problems[:10]}")
            foreign = {k.decode() for k in client.keys("*")} - known_keys
            if foreign:
                fail(f"cycle {cycle}: keys nobody wrote after restart: {sorted(foreign)[:10]}")
            for w in writers:
                totals["keys_present"] += w.verify(client, fail)
                totals["keys_checked"] += len(w.keys)
            round_trip(client, cycle, fail)
        totals["cycles"] += 1
    totals["acked"] = sum(w.acked for w in writers)
    return totals


def round_trip(client, cycle: int, fail) -> None:
    """The restarted server takes a small and a slot-path value and serves them back."""
    for size in (100, 200 << 10):
        key = f"probe:{cycle}:{size}"
        value = make_record(key, -1, cycle, size, random.Random(cycle))
        client.set(key, value)
        if client.get(key) != value:
            fail(f"cycle {cycle}: round trip of a {size}-byte value after restart failed")
        client.delete(key)


def pick_seed() -> int:
    seed = int(os.environ.get("CXLREDIS_CRASH_SEED", random.randrange(1 << 32)))
    print(f"crash consistency seed: {seed} (replay with CXLREDIS_CRASH_SEED={seed})")
    return seed


def report(label: str, seed: int, totals: dict, started: float) -> None:
    print(f"{label}: seed {seed}, {totals['cycles']} kill cycles, {totals['keys_checked']} key "
          f"checks ({totals['keys_present']} present), {totals['acked']} acknowledged commands, "
          f"{totals['in_flight']} interrupted, {totals['evicted']} evictions, "
          f"{time.monotonic() - started:.1f}s")


def test_kill9_during_concurrent_writes_never_tears_values(cxl_factory):
    seed = pick_seed()
    started = time.monotonic()
    # Room for the worst case of every key at 8 MiB: eviction must not blur the
    # "acknowledged writes survive" check here.
    server = cxl_factory(arena_size="256mb")
    totals = crash_cycles(server, seed, evicting=False)
    report("defaults", seed, totals, started)
    assert totals["evicted"] == 0, f"[seed {seed}] eviction ran in the no-eviction scenario"
    assert totals["keys_present"] > 0


def test_kill9_in_a_tenants_own_arena_never_tears_values(cxl_factory):
    """The same writers as the tenant of an arena of its own (ARENA own): two arenas are
    rebuilt after every kill, and the tenant's values are whole and its own."""
    seed = pick_seed()
    started = time.monotonic()
    server = cxl_factory(arena_size="64mb", tenant="crash quota 200mb arena own users default")
    totals = crash_cycles(server, seed, evicting=False, tenant="crash")
    report("own arena", seed, totals, started)
    assert totals["keys_present"] > 0
    with server.client() as client:
        assert client.execute_command("TENANT", "WHOAMI") == b"crash"


def test_kill9_during_eviction_never_tears_values(cxl_factory):
    seed = pick_seed()
    started = time.monotonic()
    server = cxl_factory(maxmemory="16mb", maxmemory_policy="allkeys-lru")
    totals = crash_cycles(server, seed, evicting=True)
    report("eviction", seed, totals, started)
    assert totals["evicted"] > 0, f"[seed {seed}] maxmemory 16mb never evicted: nothing tested"
    assert totals["keys_present"] > 0


# ---------------------------------------------------------------- RENAME at every crash point
# The server kills itself (SIGKILL) at numbered points of a rename when started with
# CXLREDIS_TEST_CRASH_POINT (ext/arena/rename.c, CX_CRASH_POINT): 1-6 in place (the new
# name fits the entry's key area), 11-13 by copy (it does not). After the rebuild the
# value is at exactly one name, with its TTL, and a replaced destination holds either
# its old value (rename undone) or the moved one (rename done).

IN_PLACE_POINTS = range(1, 7)
BY_COPY_POINTS = range(11, 14)
RENAME_CASES = (
    [("in place", p, "dst", False) for p in IN_PLACE_POINTS]
    + [("in place over a key", p, "dst", True) for p in IN_PLACE_POINTS]
    + [("move", p, None, False) for p in IN_PLACE_POINTS]
    + [("by copy", p, "d" * 200, False) for p in BY_COPY_POINTS]
    + [("by copy over a key", p, "d" * 200, True) for p in BY_COPY_POINTS]
)
MOVED = b"moved:" + b"m" * (300 << 10)
PRIOR = b"prior value of the destination"


def crash_in_rename(server, case) -> None:
    """Set up `case` and run its RENAME or MOVE, which must kill the server."""
    _, point, dst, over = case
    client = server.client()
    client.flushall()
    client.set("src", MOVED, px=600_000)
    if over:
        client.set(dst, PRIOR)
    with raw_connection(server.port) as conn:
        try:
            reply = conn.request(*(("MOVE", "src", 1) if dst is None else ("RENAME", "src", dst)))
        except (OSError, ConnectionClosed):
            reply = None
    assert reply is None, f"{case}: {reply!r} instead of the crash"
    assert server.proc.wait(10) == -signal.SIGKILL, f"{case}: crash point {point} was not reached"


def check_rename_outcome(server, case) -> str:
    """After the rebuild: the value at exactly one name (with its TTL); 'undone' or 'done'."""
    name, point, dst, over = case
    client, db1 = server.client(), server.client(db=1)
    assert client.info("persistence")["arena_recovery"] == "rebuilt"
    assert client.execute_command("DEBUG", "ARENA-CHECK") == [], f"{name} at point {point}"
    at_dst = db1.get("src") if dst is None else client.get(dst)
    at_src = client.get("src")
    prior = PRIOR if over else None
    assert (at_src, at_dst) in ((MOVED, prior), (None, MOVED)), (
        f"{name}, crash point {point}: src holds {at_src and at_src[:12]!r}, "
        f"the destination {at_dst and at_dst[:40]!r}")
    new = (db1.pttl("src") if dst is None else client.pttl(dst)) if at_src is None else client.pttl("src")
    assert 500_000 < new <= 600_000, f"{name}, crash point {point}: the TTL became {new}"
    return "undone" if at_src is not None else "done"


@pytest.mark.slow       # 25 server starts
def test_kill9_at_every_point_of_a_rename_leaves_the_key_at_one_name(cxl_factory, monkeypatch):
    outcomes = {}
    server = None
    for case in RENAME_CASES:
        monkeypatch.setenv("CXLREDIS_TEST_CRASH_POINT", str(case[1]))
        if server is None:
            server = cxl_factory(arena_size="16mb")
        else:
            server.restart()            # armed for this case; rebuilds after the last one
            outcomes[previous] = check_rename_outcome(server, previous)
        crash_in_rename(server, case)
        previous = case
    monkeypatch.delenv("CXLREDIS_TEST_CRASH_POINT")
    server.restart()
    outcomes[previous] = check_rename_outcome(server, previous)
    print({f"{name} @{point}": outcome for (name, point, _, _), outcome in outcomes.items()})
    # an intent recorded before the first change is finished by the rebuild
    assert all(outcome == "done" for (name, point, _, _), outcome in outcomes.items()
               if name.startswith(("in place", "move")))
    with server.client() as client:
        client.set("after", "ok")
        assert client.rename("after", "after2") and client.get("after2") == b"ok"
