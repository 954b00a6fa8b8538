"""The small server surface clients and tools expect, replayed on redis-server 7.0.15 and
cxlredis in RESP2 and RESP3: SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE, ROLE, WAIT, COMMAND
GETKEYSANDFLAGS, DEBUG OBJECT, MEMORY DOCTOR/STATS/MALLOC-STATS/PURGE and CLIENT
PAUSE/UNPAUSE, with their errors, argument boundaries and MULTI/script refusals.

Replies that describe the process (an address, a length, a byte count) are compared
by shape: the comparators below say what must still agree. Timing (how long a pause
holds a command, WAIT's timeout, durability) is tests/integration/test_server_surface.py's."""
import re
import time

import pytest

from conftest import parse_reply, raw_connection
from diff_harness import _pairs, cmd, normalised, pause, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

DEBUG_OBJECT = re.compile(rb"\+Value at:0x[0-9a-f]+ refcount:(\d+) encoding:(\w+) serializedlength:\d+ "
                          rb"lru:\d+ lru_seconds_idle:\d+\r\n\Z")
STRING_ENCODINGS = {b"int", b"embstr", b"raw"}


def debug_object_line(argv, a, b):
    """DEBUG OBJECT: the fields, in Redis's order and form; the address, the serialized
    length (Redis compresses long strings with LZF, DUMP here does not) and the LRU clock
    are each process's; refcount and the encoding's family must agree."""
    x, y = DEBUG_OBJECT.match(a), DEBUG_OBJECT.match(b)
    if x is None or y is None:
        return a == b
    family = [(m.group(1), b"string" if m.group(2) in STRING_ENCODINGS else m.group(2)) for m in (x, y)]
    return family[0] == family[1]


def _kind(value):
    return [(name, _kind(inner)) for name, inner in _pairs(value)] if isinstance(value, (list, dict)) \
        else type(value).__name__


def memory_stats_fields(argv, reply):
    """MEMORY STATS: the field names, their order and each value's type (an integer, a
    double, a db's map and its own names); the numbers are each allocator's."""
    return [(name, _kind(value)) for name, value in _pairs(parse_reply(reply))]


def report_text(argv, a, b):
    """MEMORY MALLOC-STATS: a text of the allocator's own (jemalloc's; the arena's here),
    sent as Redis sends it: a bulk string, RESP3's verbatim txt."""
    if a[:1] == b"=" or b[:1] == b"=":
        return a[:1] == b[:1] and b"\r\ntxt:" in a[:12] and b"\r\ntxt:" in b[:12]
    return a[:1] == b[:1] == b"$" or a == b


SAM = (b"Hi Sam, this instance is empty", b"Hi Sam, I can't find any memory issue",
       b"Sam, I detected a few issues")


def doctor_text(argv, a, b):
    """MEMORY DOCTOR: exactly Redis's text when both instances are as small (they are, but
    the session's redis-server may hold Lua caches of earlier tests); else one of its texts."""
    if a == b:
        return True
    texts = [bytes(parse_reply(r)).removeprefix(b"txt:") for r in (a, b)]
    return a[:1] == b[:1] and all(t.startswith(SAM) for t in texts)


SHAPE = {
    "DEBUG": debug_object_line,
    "MEMORY STATS": normalised(memory_stats_fields),
    "MEMORY MALLOC-STATS": report_text,
    "MEMORY DOCTOR": doctor_text,
}


def shaped(*args, **options):
    return cmd(*args, compare=SHAPE.get(f"{args[0]} {args[1]}".upper()) or SHAPE.get(args[0].upper()),
               **options)


SEQUENCES = {
    "save lastsave bgrewriteaof": [
        ("SET", "k", "v"),
        ("SAVE",),
        ("LASTSAVE",),
        ("SAVE", "x"),
        ("BGSAVE", "x"),
        ("BGSAVE", "SCHEDULE", "x"),
        ("BGSAVE", "schedule", "schedule"),
        ("BGREWRITEAOF", "x"),
        ("LASTSAVE", "x"),
        ("save",),
        # SAVE is no_multi; BGSAVE and BGREWRITEAOF inside EXEC are scheduled
        ("MULTI",),
        ("SAVE",),
        ("GET", "k"),
        ("EXEC",),
        ("MULTI",),
        ("LASTSAVE",),
        ("BGREWRITEAOF",),
        ("BGSAVE", "x"),
        ("EXEC",),
        # noscript
        ("EVAL", "return redis.call('save')", "0"),
        ("EVAL", "return redis.pcall('bgsave')", "0"),
        ("EVAL", "return redis.call('bgrewriteaof')", "0"),
        ("EVAL", "return redis.call('lastsave') > 0", "0"),
        ("INFO", "persistence"),
        pause(0.3),         # Redis's scheduled rewrite has run (a child no later step may meet)
    ],
    "bgsave": [
        ("BGSAVE",),
        pause(0.4),
        ("BGSAVE", "SCHEDULE"),
        pause(0.4),
        ("MULTI",),
        ("BGSAVE",),
        ("BGSAVE", "schedule"),
        ("EXEC",),
        pause(0.6),         # the scheduled one has run (Redis's cron starts it) and ended
        ("BGREWRITEAOF",),
        pause(0.3),         # Redis's rewrite child is done
        ("INFO", "persistence"),
        ("LASTSAVE",),
    ],
    "role wait": [
        ("ROLE",),
        ("ROLE", "x"),
        ("role",),
        ("WAIT", "0", "0"),
        ("WAIT", "0", "100"),
        ("WAIT", "-1", "0"),
        ("WAIT", "-5", "-5"),
        ("WAIT", "x", "0"),
        ("WAIT", "x", "-1"),
        ("WAIT", "0", "x"),
        ("WAIT", "0", "-1"),
        ("WAIT", "1.5", "0"),
        ("WAIT", "0", "1.5"),
        ("WAIT", "", "0"),
        ("WAIT", "0", ""),
        ("WAIT", " 1", "0"),
        ("WAIT", "99999999999999999999", "0"),
        ("WAIT", "0", "99999999999999999999"),
        ("WAIT", "0", "9223372036854775807"),
        ("WAIT", "0", "-9223372036854775808"),
        ("WAIT", "1", "50"),            # no replica acknowledges: 0 once the timeout passed
        ("WAIT", "3", "1"),
        ("WAIT",),
        ("WAIT", "1"),
        ("WAIT", "1", "2", "3"),
        ("MULTI",),
        ("WAIT", "1", "0"),             # inside EXEC WAIT answers at once
        ("WAIT", "1", "x"),
        ("ROLE",),
        ("EXEC",),
        ("EVAL", "return redis.call('wait', 0, 0)", "0"),
        ("EVAL", "return redis.call('role')", "0"),
    ],
    "command getkeysandflags": [
        ("COMMAND", "GETKEYSANDFLAGS", "GET", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "get", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v", "GET"),
        ("COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v", "EX", "10", "get"),
        ("COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v", "NX"),
        ("COMMAND", "GETKEYSANDFLAGS", "MSET", "a", "1", "b", "2"),
        ("COMMAND", "GETKEYSANDFLAGS", "MSETNX", "a", "1"),
        ("COMMAND", "GETKEYSANDFLAGS", "MGET", "a", "b"),
        ("COMMAND", "GETKEYSANDFLAGS", "DEL", "a", "b", "c"),
        ("COMMAND", "GETKEYSANDFLAGS", "UNLINK", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "EXISTS", "a", "b"),
        ("COMMAND", "GETKEYSANDFLAGS", "TOUCH", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "RENAME", "a", "b"),
        ("COMMAND", "GETKEYSANDFLAGS", "RENAMENX", "a", "b"),
        ("COMMAND", "GETKEYSANDFLAGS", "COPY", "a", "b", "DB", "1"),
        ("COMMAND", "GETKEYSANDFLAGS", "MOVE", "a", "1"),
        ("COMMAND", "GETKEYSANDFLAGS", "GETDEL", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "GETEX", "k", "PERSIST"),
        ("COMMAND", "GETKEYSANDFLAGS", "GETSET", "k", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "SETNX", "k", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "SETEX", "k", "10", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "APPEND", "k", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "SETRANGE", "k", "1", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "INCRBYFLOAT", "k", "1"),
        ("COMMAND", "GETKEYSANDFLAGS", "STRLEN", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "EXPIRE", "k", "10"),
        ("COMMAND", "GETKEYSANDFLAGS", "TTL", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "TYPE", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "DUMP", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "RESTORE", "k", "0", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "HSET", "h", "f", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "HSETNX", "h", "f", "v"),
        ("COMMAND", "GETKEYSANDFLAGS", "HDEL", "h", "f"),
        ("COMMAND", "GETKEYSANDFLAGS", "HGETALL", "h"),
        ("COMMAND", "GETKEYSANDFLAGS", "HEXISTS", "h", "f"),
        ("COMMAND", "GETKEYSANDFLAGS", "HINCRBY", "h", "f", "1"),
        ("COMMAND", "GETKEYSANDFLAGS", "OBJECT", "ENCODING", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "MEMORY", "USAGE", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "WATCH", "a", "b"),
        # keynum specs (EVAL, FCALL) and a count that gives none
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL", "return 1", "2", "a", "b", "c"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL", "return 1", "0"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL", "return 1", "x", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL", "return 1", "5", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL", "return 1", "-1", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL_RO", "return 1", "1", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVALSHA", "x", "1", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "FCALL", "f", "1", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "FCALL_RO", "f", "2", "a", "b"),
        # MIGRATE: a key, or KEYS (found by the command's own key extraction)
        ("COMMAND", "GETKEYSANDFLAGS", "MIGRATE", "h", "1", "k", "0", "100"),
        ("COMMAND", "GETKEYSANDFLAGS", "MIGRATE", "h", "1", "", "0", "100", "KEYS", "a", "b"),
        ("COMMAND", "GETKEYSANDFLAGS", "MIGRATE", "h", "1", "k", "0", "100", "KEYS", "a", "b"),
        # errors
        ("COMMAND", "GETKEYSANDFLAGS", "SSUBSCRIBE", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "SPUBLISH", "a", "b"),
        ("COMMAND", "GETKEYSANDFLAGS", "CLIENT", "LIST"),
        ("COMMAND", "GETKEYSANDFLAGS", "CLIENT", "NOSUCH"),
        ("COMMAND", "GETKEYSANDFLAGS", "NOSUCH", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "MSET", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "GET", "k", "x"),
        ("COMMAND", "GETKEYSANDFLAGS", "COMMAND", "GETKEYS", "GET", "k"),
        ("COMMAND", "GETKEYSANDFLAGS", "PING"),
        ("COMMAND", "GETKEYSANDFLAGS", "GET"),
        ("COMMAND", "GETKEYSANDFLAGS"),
        ("command", "getkeysandflags", "del", "x"),
    ],
    "debug object": [
        ("SET", "k", "v"),
        ("SET", "n", "123"),
        ("SET", "big", "a" * 100),
        ("SET", "huge", "x" * 5000),
        ("HSET", "h", "f", "v"),
        shaped("DEBUG", "OBJECT", "k"),
        shaped("DEBUG", "OBJECT", "n"),
        shaped("DEBUG", "OBJECT", "big"),
        shaped("DEBUG", "OBJECT", "huge"),
        shaped("DEBUG", "OBJECT", "h"),
        shaped("DEBUG", "object", "k"),
        ("DEBUG", "OBJECT", "nosuch"),
        ("DEBUG", "OBJECT"),
        ("DEBUG", "OBJECT", "k", "x"),
        ("SELECT", "2"),
        ("DEBUG", "OBJECT", "k"),
        ("SET", "k", "10"),
        shaped("DEBUG", "OBJECT", "k"),
    ],
    "memory": [
        ("SET", "a", "1"),
        ("HSET", "h", "f", "v"),
        ("SELECT", "3"),
        ("SET", "b", "2", "EX", "100"),
        ("SELECT", "0"),
        shaped("MEMORY", "STATS"),
        ("MEMORY", "STATS", "x"),
        shaped("MEMORY", "DOCTOR"),
        ("MEMORY", "DOCTOR", "x"),
        shaped("MEMORY", "MALLOC-STATS"),
        ("MEMORY", "MALLOC-STATS", "x"),
        ("MEMORY", "PURGE"),
        ("MEMORY", "PURGE", "x"),
        ("MEMORY", "HELP"),
        ("MEMORY", "help"),
        ("MEMORY", "HELP", "x"),
        ("MEMORY", "FOO"),
        ("MEMORY",),
        ("FLUSHALL",),
        shaped("MEMORY", "STATS"),
        ("MULTI",),
        ("MEMORY", "PURGE"),
        ("MEMORY", "STATS", "x"),
        ("EXEC",),
    ],
    "client pause arguments": [
        ("CLIENT", "PAUSE", "x"),
        ("CLIENT", "PAUSE", "-1"),
        ("CLIENT", "PAUSE", "1.5"),
        ("CLIENT", "PAUSE", ""),
        ("CLIENT", "PAUSE", "99999999999999999999"),
        ("CLIENT", "PAUSE", "100", "foo"),
        ("CLIENT", "PAUSE", "foo", "foo"),
        ("CLIENT", "PAUSE", "x", "WRITE"),
        ("CLIENT", "PAUSE", "-1", "ALL"),
        ("CLIENT", "PAUSE", "100", "write", "x"),
        ("CLIENT", "PAUSE"),
        ("CLIENT", "UNPAUSE", "x"),
        ("CLIENT", "UNPAUSE"),
        ("EVAL", "return redis.call('client', 'pause', 10)", "0"),
        ("EVAL", "return redis.call('client', 'unpause')", "0"),
        ("MULTI",),
        ("CLIENT", "PAUSE", "x"),
        ("EXEC",),
        # a pause that is over at once: a wrapped end (past 64 bits), and 0
        ("CLIENT", "PAUSE", "9223372036854775000", "WRITE"),
        cmd("SET", "k", "v", conn=1),
        ("CLIENT", "PAUSE", "0"),
        cmd("GET", "k", conn=1),
    ],
    "client pause write": [
        ("SET", "k", "v"),
        ("CLIENT", "PAUSE", "150", "WRITE"),
        # reads, errors before the pause, and what no pause holds answer at once...
        cmd("GET", "k", conn=1),
        cmd("MGET", "k", "k", conn=1),
        cmd("SET", "k", conn=1),
        cmd("NOSUCH", conn=1),
        cmd("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k", conn=1),
        cmd("EVAL", "#!lua flags=no-writes\nreturn 1", "0", conn=1),
        cmd("CLIENT", "UNPAUSE", conn=1),
        # ...writes wait until the pause is over
        ("CLIENT", "PAUSE", "150", "WRITE"),
        cmd("SET", "k", "v2", conn=1),
        cmd("GET", "k", conn=1),
        ("CLIENT", "PAUSE", "150", "WRITE"),
        cmd("MULTI", conn=1),
        cmd("GET", "k", conn=1),
        cmd("INCR", "n", conn=1),          # queued once the pause is over
        cmd("EXEC", conn=1),
        # a transaction queued before the pause: its EXEC waits when it holds a write
        cmd("MULTI", conn=1),
        cmd("SET", "k", "v3", conn=1),
        cmd("MULTI", conn=2),
        cmd("GET", "k", conn=2),
        ("CLIENT", "PAUSE", "150", "WRITE"),
        cmd("EXEC", conn=2),
        cmd("EXEC", conn=1),
        ("CLIENT", "PAUSE", "150", "WRITE"),
        cmd("PUBLISH", "ch", "m", conn=1),
        cmd("EVAL", "return 1", "0", conn=1),
        cmd("EXPIRE", "k", "100", conn=1),
        cmd("DEL", "nosuch", conn=1),
        ("CLIENT", "UNPAUSE"),
    ],
    "client pause all": [
        ("SET", "k", "v"),
        ("CLIENT", "PAUSE", "100"),
        cmd("GET", "k", conn=1),           # held too
        cmd("SET", "k", conn=1),           # refused before the pause
        ("PING",),                         # the pausing client too
        ("CLIENT", "PAUSE", "100", "ALL"),
        cmd("CLIENT", "UNPAUSE", conn=1),  # even UNPAUSE waits for the end
        ("CLIENT", "PAUSE", "100", "WRITE"),
        ("CLIENT", "PAUSE", "100", "ALL"),  # widens the kind
        cmd("GET", "k", conn=1),
        ("CLIENT", "UNPAUSE"),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_server_surface(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol, name)


# WAITAOF is Redis 7.2's: redis-server 7.0 has none to compare with; what 7.2 answers with
# appendonly off and no replica, argument errors in its order.
WAITAOF_CASES = [
    (("WAITAOF", "0", "0", "0"), b"*2\r\n:0\r\n:0\r\n"),
    (("WAITAOF", "1", "0", "0"),
     b"-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n"),
    (("WAITAOF", "1", "0", "-5"), b"-ERR timeout is negative\r\n"),
    (("WAITAOF", "1", "abc", "100"), b"-ERR value is out of range, must be positive\r\n"),
    (("WAITAOF", "abc", "0", "0"), b"-ERR value is not an integer or out of range\r\n"),
    (("WAITAOF", "2", "0", "0"), b"-ERR value is out of range, value must between 0 and 1\r\n"),
    (("WAITAOF", "0", "-1", "0"), b"-ERR value is out of range, must be positive\r\n"),
    (("WAITAOF", "0", "0", "abc"), b"-ERR timeout is not an integer or out of range\r\n"),
    (("WAITAOF", "0", "0"), b"-ERR wrong number of arguments for 'waitaof' command\r\n"),
]


def test_waitaof_answers_as_a_primary_without_aof_or_replicas(cxl):
    with raw_connection(cxl.port) as conn:
        for call, reply in WAITAOF_CASES:
            assert conn.request(*call) == reply, call
        # a replica asked for: none ever acknowledges, so the timeout answers
        started = time.monotonic()
        assert conn.request("WAITAOF", "0", "1", "100") == b"*2\r\n:0\r\n:0\r\n"
        assert time.monotonic() - started >= 0.09
        assert conn.request("MULTI") == b"+OK\r\n" and conn.request("WAITAOF", "0", "1", "0") == b"+QUEUED\r\n"
        assert conn.request("EXEC") == b"*1\r\n*2\r\n:0\r\n:0\r\n"
