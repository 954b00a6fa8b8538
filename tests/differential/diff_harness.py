"""Differential harness: the same steps go to redis-server and to cxlredis over
raw RESP, in lockstep, and the replies are compared byte for byte.

A sequence is a list of steps.  A plain tuple is a command on connection 0;
``cmd(...)`` gives options (another connection, no reply expected, a closed
connection expected, a comparator of its own); ``raw(...)`` sends bytes as they
are (inline commands, pipelines, malformed input); ``pause(s)`` sleeps between
steps, which both servers see equally because the steps run in lockstep.

``run_sequence(oracle, cxl, steps, protocol)`` opens fresh connections on both
servers (``HELLO 3`` first on each one when protocol is 3, its reply compared
too) and raises ``Mismatch`` (an AssertionError) at the first step whose
replies differ, with the whole transcript so far.

Replies are compared exactly unless the command is listed in ``COMPARATORS``:
each entry says why that reply may legitimately differ between two correct
servers, and compares everything that must still agree.  Replies inside an
``EXEC`` are compared with the comparator of the command that was queued.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

from conftest import (ConnectionClosed, ReplyTimeout, reply_end, encode_command,
                      parse_reply, raw_connection)

Comparator = Callable[[tuple, bytes, bytes], bool]

REPLY_TIMEOUT = 5.0


@dataclass(frozen=True)
class Step:
    args: tuple = ()          # command arguments (bytes); empty for a raw step
    data: bytes = b""         # bytes sent as they are, for a raw step
    conn: int = 0             # which connection of the pair sends it
    replies: int = 1          # replies to read (0: the server must stay silent)
    closes: bool = False      # the server must close the connection afterwards
    compare: Comparator | None = None
    sleep: float = 0.0        # a pause step: sleep, send nothing

    def describe(self) -> str:
        if self.sleep:
            return f"(pause {self.sleep}s)"
        text = " ".join(_show(a) for a in self.args) if self.args else f"raw {self.data!r}"
        return f"[conn {self.conn}] {text}" if self.conn else text


def _as_bytes(arg) -> bytes:
    return arg if isinstance(arg, bytes) else str(arg).encode()


def _show(arg: bytes, limit: int = 60) -> str:
    # Only the shown part is decoded: escaping a 64 MiB binary value byte by byte takes a minute.
    text = arg[:limit + 1].decode(errors="backslashreplace")
    if any(c in text for c in " \r\n\"'") or text == "":
        text = repr(text)
    return text if len(text) <= limit else text[:limit] + f"...({len(arg)} bytes)"


def cmd(*args, conn: int = 0, replies: int = 1, closes: bool = False,
        compare: Comparator | None = None) -> Step:
    return Step(args=tuple(_as_bytes(a) for a in args), conn=conn, replies=replies,
                closes=closes, compare=compare)


def raw(data: bytes, *, conn: int = 0, replies: int = 1, closes: bool = False) -> Step:
    return Step(data=data, conn=conn, replies=replies, closes=closes)


def pause(seconds: float) -> Step:
    return Step(sleep=seconds)


def as_step(item) -> Step:
    return item if isinstance(item, Step) else cmd(*item)


# ------------------------------------------------------------ comparators

def _command_key(argv: tuple) -> tuple[str, str]:
    name = argv[0].decode(errors="replace").upper() if argv else ""
    sub = argv[1].decode(errors="replace").upper() if len(argv) > 1 else ""
    return name, f"{name} {sub}"


def exact(argv, a: bytes, b: bytes) -> bool:
    return a == b


def normalised(normalise: Callable[[tuple, bytes], object]) -> Comparator:
    """Compare after ``normalise``.  Errors and simple strings (+QUEUED inside
    MULTI) are compared exactly, and so is any reply the normaliser cannot
    read: a reply of an unexpected shape must not pass as equal."""
    def compare(argv, a, b):
        if a[:1] in (b"-", b"!", b"+") or b[:1] in (b"-", b"!", b"+"):
            return a == b
        try:
            return normalise(argv, a) == normalise(argv, b)
        except (ValueError, TypeError, AttributeError, IndexError, KeyError):
            return a == b
    return compare


def integer_type(argv, reply):
    # Only "an integer" must agree; the value is implementation state.
    return b":<integer>" if reply.startswith(b":") else reply


def within(tolerance: int) -> Comparator:
    """Positive integers may differ by ``tolerance`` (time moved on between the two servers)."""
    def compare(argv, a, b):
        if a.startswith(b":") and b.startswith(b":"):
            x, y = int(a[1:-2]), int(b[1:-2])
            if x > 0 and y > 0:
                return abs(x - y) <= tolerance
        return a == b
    return compare


def _pairs(value) -> list:
    """A RESP2 flat list or a RESP3 map as a list of (key, value) pairs."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return value
    return list(zip(value[0::2], value[1::2]))


def hello_fields(argv, reply):
    # The server name and version identify the implementation and `id` is a
    # connection counter; proto, mode, role and modules must agree, in order.
    varying = {b"server", b"version", b"id"}
    return [(k, "<varies>" if k in varying else v) for k, v in _pairs(parse_reply(reply))]


def sorted_elements(argv, reply):
    # KEYS returns matches in hash-table order, which Redis leaves unspecified. (Ordered by
    # repr: a reply may mix nulls with strings, as SORT ... GET does.)
    value = parse_reply(reply)
    return sorted(value, key=repr) if isinstance(value, list) else reply


def config_pairs(argv, reply):
    # CONFIG GET lists matches in the config dict's iteration order (unspecified).
    return sorted(_pairs(parse_reply(reply)))


STRING_ENCODINGS = {b"int", b"embstr", b"raw"}
HASH_ENCODINGS = {b"listpack", b"ziplist", b"hashtable"}


def encoding_family(argv, reply):
    # How a value is laid out is the implementation's choice (cxlredis keeps all
    # values in the arena); which type's encodings it reports must agree.
    value = parse_reply(reply)
    if value in STRING_ENCODINGS:
        return "<string encoding>"
    if value in HASH_ENCODINGS:
        return "<hash encoding>"
    return reply


def _info_text(reply: bytes) -> str:
    value = parse_reply(reply)
    text = value.decode()
    # RESP3 sends INFO as a verbatim string: "txt:" then the text.
    return text[4:] if reply.startswith(b"=") else text


INFO_KEYSPACE_VARYING = ("avg_ttl",)
# cxlredis's own sections (in its default and "all" lists; Redis has no such sections).
INFO_OURS = {"Arena", "Disktier", "Tenants"}


def info_shape(argv, reply):
    # INFO values (memory, uptime, counters, version) describe each process; the
    # reply type, the section headers and the field syntax must agree, and the
    # keyspace section's key and volatile counts too (avg_ttl is an estimate).
    lines = [line for line in _info_text(reply).split("\r\n") if line]
    shape, section = [reply[:1]], None
    for line in lines:
        if line.startswith("# "):
            section = line[2:]
            if section not in INFO_OURS:
                shape.append(line)
            continue
        if section in INFO_OURS:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            shape.append(f"malformed line {line!r}")
        elif section == "Keyspace":
            fields = [f for f in value.split(",") if not f.startswith(INFO_KEYSPACE_VARYING)]
            shape.append(f"{name}:{','.join(fields)}")
    return shape


CLIENT_INFO_VARYING = {
    "id", "addr", "laddr", "fd", "age", "idle", "qbuf", "qbuf-free", "argv-mem",
    "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem",
}
# Redis 7.2 added these with CLIENT SETINFO (which redis-py's handshake uses and
# cxlredis implements); the 7.0 oracle does not have them.
CLIENT_INFO_NEWER = {"lib-name", "lib-ver"}
# cxlredis's own last field: the tenant the connection is bound to (empty for administrators).
CLIENT_INFO_OURS = {"tenant"}


def client_info_fields(argv, reply):
    # Addresses, descriptors, ages and buffer sizes belong to each process; field
    # names, their order and the client's own state (name, db, flags, cmd, resp) must agree.
    text = parse_reply(reply).decode()
    text = text[4:] if reply.startswith(b"=") else text
    fields = []
    for item in text.strip().split(" "):
        name, _, value = item.partition("=")
        if name in CLIENT_INFO_NEWER or name in CLIENT_INFO_OURS:
            continue
        fields.append((name, "<varies>" if name in CLIENT_INFO_VARYING else value))
    return fields


def time_shape(argv, a, b):
    # TIME is the clock: two bulk strings of digits, seconds close to each other.
    if not (a.startswith(b"*") and b.startswith(b"*")):
        return a == b
    try:
        x, y = parse_reply(a), parse_reply(b)
    except ValueError:
        return False
    if not (isinstance(x, list) and isinstance(y, list) and len(x) == len(y) == 2):
        return False
    if not all(isinstance(part, bytes) and part.isdigit() for part in x + y):
        return False
    return a[:1] == b[:1] and abs(int(x[0]) - int(y[0])) <= 2 and int(y[1]) < 1_000_000


CORE_COMMANDS = frozenset("""
    ping echo hello quit reset select client
    get set setnx setex psetex mget mset msetnx getdel getex getset append strlen
    getrange setrange substr incr decr incrby decrby incrbyfloat lcs
    setbit getbit bitcount bitpos bitop bitfield bitfield_ro
    lpush rpush lpushx rpushx lpop rpop llen lrange lindex lset linsert lrem ltrim lpos lmove
    rpoplpush lmpop blpop brpop blmove brpoplpush blmpop
    sadd srem smembers sismember smismember scard spop srandmember smove sinter sintercard
    sinterstore sunion sunionstore sdiff sdiffstore sscan
    zadd zincrby zrem zcard zcount zlexcount zscore zmscore zrank zrevrank zrange zrangestore
    zrangebyscore zrevrangebyscore zrangebylex zrevrangebylex zrevrange zremrangebyrank
    zremrangebyscore zremrangebylex zpopmin zpopmax zmpop bzpopmin bzpopmax bzmpop zrandmember
    zunion zinter zdiff zunionstore zinterstore zdiffstore zintercard zscan
    geoadd geodist geohash geopos geosearch geosearchstore georadius georadiusbymember
    georadius_ro georadiusbymember_ro
    del unlink exists type expire pexpire expireat pexpireat ttl pttl expiretime
    pexpiretime persist keys scan randomkey rename renamenx copy move touch object
    dbsize flushdb flushall swapdb memory
    dump restore restore-asking migrate sort sort_ro
    multi exec discard watch unwatch
    info config command time lastsave save bgsave bgrewriteaof role wait shutdown function debug
    subscribe unsubscribe psubscribe punsubscribe publish ssubscribe sunsubscribe spublish pubsub
""".split())


# Subcommands newer than the Redis 7.0 oracle that cxlredis serves because
# redis-py 8 sends them on every connection (CLIENT SETINFO is Redis 7.2,
# CLIENT MAINT_NOTIFICATIONS newer still), and cxlredis's own TENANT and CXL families.
NEWER_THAN_ORACLE = frozenset({b"client|setinfo", b"client|maint_notifications", b"waitaof"}) | frozenset(
    b"tenant" + sub for sub in (b"", b"|create", b"|delete", b"|info", b"|list", b"|set",
                                b"|resetstat", b"|whoami", b"|help")) | frozenset(
    b"cxl" + sub for sub in (b"", b"|info", b"|getref", b"|mgetref", b"|prefix", b"|prefixget",
                             b"|prefixref", b"|release", b"|reserve", b"|commit", b"|abort",
                             b"|help"))


def command_list_subset(argv, a, b):
    # cxlredis implements a subset of Redis: every name it lists must exist in
    # Redis (or be one of NEWER_THAN_ORACLE), and every core command that Redis
    # lists must be listed by cxlredis.
    if not (a.startswith(b"*") and b.startswith(b"*")):
        return a == b
    oracle, cxl = set(parse_reply(a)), parse_reply(b)
    if len(set(cxl)) != len(cxl):
        return False
    core = {name.encode() for name in CORE_COMMANDS}
    return set(cxl) - NEWER_THAN_ORACLE <= oracle and (oracle & core) <= set(cxl)


COMPARATORS: dict[str, Comparator] = {
    # Remaining time depends on when each server received the command.
    "TTL": within(1),
    "PTTL": within(500),
    "EXPIRETIME": within(1),
    "PEXPIRETIME": within(500),
    "HELLO": normalised(hello_fields),
    "KEYS": normalised(sorted_elements),
    "CONFIG GET": normalised(config_pairs),
    "OBJECT ENCODING": normalised(encoding_family),
    # Seconds since last access: the servers' clocks tick independently.
    "OBJECT IDLETIME": normalised(integer_type),
    # Redis shares small integers (refcount INT_MAX); cxlredis has no refcounts.
    "OBJECT REFCOUNT": normalised(integer_type),
    # Byte accounting of an allocator: only the type must agree.
    "MEMORY USAGE": normalised(integer_type),
    "LASTSAVE": normalised(integer_type),
    "CLIENT ID": normalised(integer_type),
    "CLIENT INFO": normalised(client_info_fields),
    "INFO": normalised(info_shape),
    "TIME": time_shape,
    # cxlredis implements fewer commands than Redis.
    "COMMAND COUNT": normalised(integer_type),
    "COMMAND LIST": command_list_subset,
}


def comparator_for(argv: tuple, overrides: dict[str, Comparator] | None = None) -> Comparator:
    """The comparator for ``argv``: ``overrides`` (same keys as COMPARATORS) first."""
    name, name_and_sub = _command_key(argv)
    for table in (overrides or {}, COMPARATORS):
        found = table.get(name_and_sub) or table.get(name)
        if found:
            return found
    return exact


def split_aggregate(reply: bytes) -> list[bytes]:
    """The raw bytes of each element of an array reply."""
    header_end = reply.index(b"\r\n") + 2
    count = int(reply[1:header_end - 2])
    elements, pos = [], header_end
    for _ in range(max(count, 0)):
        end = reply_end(reply, pos)
        elements.append(reply[pos:end])
        pos = end
    return elements


def exec_comparator(queued: list[tuple], overrides: dict[str, Comparator] | None = None) -> Comparator:
    """EXEC's array compared element by element with each queued command's comparator."""
    def compare(argv, a, b):
        if not (a.startswith(b"*") and b.startswith(b"*")) or a.startswith(b"*-1"):
            return a == b
        left, right = split_aggregate(a), split_aggregate(b)
        if len(left) != len(right) or len(left) != len(queued):
            return a == b
        return all(comparator_for(q, overrides)(q, x, y) for q, x, y in zip(queued, left, right))
    return compare


# ------------------------------------------------------------ running

class Mismatch(AssertionError):
    pass


CLOSED = b"<connection closed>"
NO_REPLY = b"<no reply>"
STILL_OPEN = b"<connection still open>"


class _Side:
    """One server's connections, opened on first use."""

    def __init__(self, label: str, port: int):
        self.label, self.port = label, port
        self.conns = {}

    def connection(self, index: int):
        if index not in self.conns:
            self.conns[index] = raw_connection(self.port, timeout=REPLY_TIMEOUT)
        return self.conns[index]

    def exchange(self, step: Step) -> list[bytes]:
        conn = self.connection(step.conn)
        try:
            conn.send(step.data if not step.args else encode_command(*step.args))
        except OSError:
            return [CLOSED]
        replies = []
        for _ in range(step.replies):
            try:
                replies.append(conn.read_reply())
            except ReplyTimeout:
                replies.append(NO_REPLY)
                break
            except (ConnectionClosed, OSError):
                replies.append(CLOSED)
                break
        if step.closes:
            try:
                replies.append(CLOSED if conn.is_closed(2.0) else STILL_OPEN)
            except OSError:
                replies.append(CLOSED)
        return replies

    def close(self):
        for conn in self.conns.values():
            conn.close()


class _MultiTracker:
    """Follows MULTI/EXEC on each connection so EXEC replies use the queued commands' comparators."""

    def __init__(self, overrides: dict[str, Comparator] | None = None):
        self.queued: dict[int, list[tuple] | None] = {}
        self.overrides = overrides

    def comparator(self, step: Step) -> Comparator | None:
        name, _ = _command_key(step.args)
        if name == "EXEC" and self.queued.get(step.conn) is not None:
            return exec_comparator(self.queued[step.conn], self.overrides)
        return None

    def observe(self, step: Step, oracle_replies: list[bytes]) -> None:
        if not step.args:
            return
        name, _ = _command_key(step.args)
        reply = oracle_replies[0] if oracle_replies else b""
        in_multi = self.queued.get(step.conn) is not None
        if name == "MULTI" and reply == b"+OK\r\n":
            self.queued[step.conn] = []
        elif name in ("EXEC", "DISCARD", "RESET") and in_multi:
            self.queued[step.conn] = None
        elif in_multi and reply == b"+QUEUED\r\n":
            self.queued[step.conn].append(step.args)


def _with_handshakes(steps: Iterable, protocol: int) -> list[Step]:
    prepared, opened = [], set()
    for item in steps:
        step = as_step(item)
        if not step.sleep and step.conn not in opened:
            opened.add(step.conn)
            if protocol == 3:
                prepared.append(cmd("HELLO", "3", conn=step.conn))
        prepared.append(step)
    return prepared


def _transcript(lines: list[str], limit: int = 40) -> str:
    shown = lines[-limit:]
    skipped = len(lines) - len(shown)
    return "\n".join(([f"  ... {skipped} earlier steps"] if skipped else []) + shown)


def _show_reply(replies: list[bytes], limit: int = 300) -> str:
    text = " | ".join(repr(r[:limit + 1]) for r in replies) or "(nothing read)"
    return text if len(text) <= limit else text[:limit] + "..."


class Lockstep:
    """A pair of connection sets, one per server, that stay open between steps.

    ``step(step)`` sends one step to both servers and raises Mismatch (with the
    transcript of the steps before it) if the replies differ; ``overrides``
    replaces COMPARATORS entries for this pair only.  The handshake (``HELLO 3``
    when protocol is 3) is the caller's: ``run_sequence`` adds it.
    """

    def __init__(self, oracle, cxl, protocol: int = 2, name: str = "",
                 overrides: dict[str, Comparator] | None = None):
        if protocol not in (2, 3):
            raise ValueError("protocol is 2 or 3")
        self.protocol, self.name, self.overrides = protocol, name, overrides
        self.left, self.right = _Side("redis-server", oracle.port), _Side("cxlredis", cxl.port)
        self.tracker = _MultiTracker(overrides)
        self.transcript, self.lines = [], []

    def step(self, step: Step) -> tuple[list[bytes], list[bytes]]:
        index = len(self.lines)
        if step.sleep:
            time.sleep(step.sleep)
            self.lines.append(f"  {index:3d} {step.describe()}")
            return [], []
        expected, actual = self.left.exchange(step), self.right.exchange(step)
        compare = step.compare or self.tracker.comparator(step) or (
            comparator_for(step.args, self.overrides) if step.args else exact)
        same = len(expected) == len(actual) and all(
            compare(step.args, x, y) for x, y in zip(expected, actual))
        self.transcript.append((step, expected, actual))
        if not same:
            label = f"sequence {self.name!r} " if self.name else ""
            raise Mismatch(
                f"{label}(RESP{self.protocol}) differs at step {index}: {step.describe()}\n"
                f"  redis-server: {_show_reply(expected)}\n"
                f"  cxlredis:     {_show_reply(actual)}\n"
                f"steps before it (with redis-server's replies):\n{_transcript(self.lines)}")
        self.tracker.observe(step, expected)
        self.lines.append(f"  {index:3d} {step.describe()} -> {_show_reply(expected, 120)}")
        return expected, actual

    def close(self) -> None:
        self.left.close()
        self.right.close()


def run_sequence(oracle, cxl, steps: Iterable, protocol: int = 2, name: str = "") -> list:
    """Run ``steps`` on both servers; raise Mismatch at the first differing reply.

    ``oracle`` and ``cxl`` are ServerProcess objects (anything with ``.port``).
    Returns the transcript: (step, oracle replies, cxl replies) per step.
    """
    pair = Lockstep(oracle, cxl, protocol, name)
    try:
        for step in _with_handshakes(steps, protocol):
            pair.step(step)
    finally:
        pair.close()
    return pair.transcript


def flushall(*servers) -> None:
    for server in servers:
        with raw_connection(server.port) as conn:
            reply = conn.request("FLUSHALL")
            if reply != b"+OK\r\n":
                raise AssertionError(f"FLUSHALL on {server!r} answered {reply!r}")


def cxl_knows(server, *probe) -> bool:
    """False if ``server`` answers ``probe`` with 'unknown command' (a command not implemented yet)."""
    with raw_connection(server.port) as conn:
        return not conn.request(*probe).startswith(b"-ERR unknown command")


# ---------------------------------------------------------------- keyspace events

EVENTS_SENTINEL = b"keyspace-events-sentinel"


def keyspace_listener(port, protocol=2):
    """A connection subscribed to every keyspace and keyevent channel, and to
    EVENTS_SENTINEL, whose message marks the end of a command's events."""
    listener = raw_connection(port)
    if protocol == 3:
        listener.request("HELLO", "3")
    listener.send(encode_command("PSUBSCRIBE", "__key*__:*", EVENTS_SENTINEL))
    for _ in range(2):
        listener.read_reply()
    return listener


def events_until_sentinel(publisher, listener):
    """The events (raw frames) the listener got before the sentinel's message, which
    publisher publishes now: those of every command sent before it."""
    assert publisher.request("PUBLISH", EVENTS_SENTINEL, "after") == b":1\r\n"
    frames = []
    while True:
        frame = listener.read_reply()
        if EVENTS_SENTINEL in frame:
            return frames
        frames.append(frame)
