"""A differential, hostile-input campaign over the whole command table.

Every command in cxlredis/commands/table.py is generated from its COMMAND DOCS
argument spec (commands/docs.py): each argument type has a pool of boundary
values (0, -1, INT64_MIN, INT64_MAX+1, NaN/inf, empty and binary strings, keys
of every type, values from 1 byte to 64 MiB), optional parts come and go,
repeated parts repeat, and mutations repeat, reorder, drop and add options and
flip the case of tokens.  A new command in the table is covered without new code.

Each generated command goes to redis-server 7.0 and to cxlredis in lockstep
over raw RESP (tests/differential/diff_harness.py's Lockstep), in RESP2 or
RESP3, and the replies are compared byte for byte (except where a comparator
in diff_harness.COMPARATORS or CAMPAIGN_COMPARATORS below says why two correct
servers may differ).  After every command a watchdog checks that a second
connection's PING answers within 1 s (``--ping-timeout``; the CI run allows 3 s
on a shared machine) and that cxlredis's RSS stays under a bound; a failure names
the command (repr of argv) and the command line that replays it.

Commands only cxlredis has (TENANT, CXL, the CLIENT subcommands newer than
Redis 7.0) are sent to cxlredis alone, on keys the differential part never
uses: their replies are not compared, but the watchdog still runs.

The CI run is tests/fuzz/test_campaign.py.  A long run:

    python tests/fuzz/campaign.py --minutes 60 --seed 7 --protocol 3

(``--protocol both`` alternates.)  Episodes share the servers' ACL users and
configuration, so a failure is replayed from the start: the failure prints the
command line (``--through E`` runs episodes 0..E of the same seeds, whatever the time).
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
for _path in (TESTS.parent, TESTS, TESTS / "differential", TESTS / "acl"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from conftest import (ConnectionClosed, ReplyTimeout, ServerProcess, encode_command,  # noqa: E402
                      parse_reply, raw_connection)
from acl_helpers import (ACL_LIST, ACL_LOG, GENPASS, GETUSER, cat_members,  # noqa: E402
                         categories)
from diff_harness import (CLOSED, NO_REPLY, Lockstep, Mismatch, Step, _pairs, cmd,  # noqa: E402
                          comparator_for, integer_type, normalised, sorted_elements)

from cxlredis.commands.docs import DOCS, NO_DOCS  # noqa: E402
from cxlredis.commands.table import SPECS  # noqa: E402

MIB = 1 << 20
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)

# ------------------------------------------------------------ known defects and exclusions

# CONFIG SET large-value-threshold, sent to cxlredis alone (Redis has no such option) now
# and then, so values cross the copy-or-pin line while the compared traffic goes on.
THRESHOLD_SHARE = 0.01
THRESHOLDS = ["1kb", "4kb", "64kb", "200kb", "1mb", "64mb", "1023", "0", "-1", "abc"]
# HRANDFIELD, SRANDMEMBER and ZRANDMEMBER counts past this go to cxlredis alone: Redis 7.0 builds whatever
# reply a count asks for (-10**9 WITHVALUES runs for minutes, SRANDMEMBER -2**63+1 until the
# machine runs out of memory), cxlredis refuses one it could not send.
HRANDFIELD_ORACLE_COUNT = 10 ** 6

# Commands the campaign never sends, and why.
EXCLUDED = {
    "shutdown": "stops the server",
    "quit": "closes the connection (covered by the differential tests)",
    "monitor": "turns the connection into a stream the lockstep cannot follow "
               "(tests/integration/test_introspection.py covers it)",
    "client|kill": "its filters (TYPE normal, ID n) kill the campaign's own connections, "
                   "and different ones on each server",
    "client|reply": "OFF/SKIP take replies away, which the lockstep cannot follow",
    "client|tracking": "in RESP3 its invalidation pushes come between replies, where the lockstep "
                       "reads one reply per command (tests/differential/test_diff_tracking.py covers it)",
    **{name: "one reply per channel argument, and then a subscribed RESP2 connection "
             "refuses most commands: the lockstep reads one reply per command "
             "(tests/differential/test_diff_pubsub.py covers them)"
       for name in ("subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe",
                    "sunsubscribe")},
    "client|pause": "holds every later command (the watchdog's PING among them) for as long as "
                    "its timeout says (tests/differential/test_diff_server_surface.py covers it)",
    "wait": "with a timeout of 0 and replicas asked for, it blocks its client for good on both "
            "servers (tests/differential/test_diff_server_surface.py covers it)",
    "script|debug": "YES or SYNC makes the next EVAL a debugging session, which takes the connection "
                    "over (tests/differential/test_diff_script_debug.py covers it)",
    "migrate": "connects to the host it is given and blocks the server until its timeout, "
               "as Redis does: generated hosts reach out (\"3.5\" is 3.0.0.5) "
               "(tests/differential/test_diff_migration.py covers its errors)",
}

# cxlredis's own commands and subcommands newer than the 7.0 oracle: sent to cxlredis only.
CXL_ONLY_PREFIXES = ("tenant", "cxl")
CXL_ONLY = {"client|setinfo", "client|maint_notifications", "waitaof"}

# ------------------------------------------------------------ value pools

INTEGERS = [0, -1, 1, 2, 3, 10, -10, 100, INT64_MIN, INT64_MAX, INT64_MAX + 1, INT64_MIN - 1,
            1 << 31, 1 << 32, 10 ** 6, 10 ** 9, -(10 ** 9), 10 ** 30,
            "1.5", "abc", "", " 1", "1 ", "01", "+1", "-0", "0x10", "1e3", "nan", "inf"]
DOUBLES = ["0", "1", "-1", "1.5", "-0.25", "10", "1e308", "1e309", "-1e400", "1e-320", "5e-324",
           "nan", "NaN", "-nan", "inf", "-inf", "+inf", "infinity", "0x1p3", "abc", "", " 1",
           "1 ", "1.", ".5", "9223372036854775807", "-9223372036854775808", "1e18", "0.1"]
# Expiry times: zero, negative and past (immediate deletion), far future or overflowing.
# No small positive relative times: the moment active expiry collects a key (and DBSIZE
# stops counting it) differs between any two servers.
# (10**7 is hours even as milliseconds: longer than a long run.)
TIMES = [0, -1, 1 << 31, 10 ** 7, 10 ** 8, 4102444800, 4102444800123, INT64_MAX, INT64_MIN,
         INT64_MAX + 1, INT64_MAX // 1000, INT64_MAX // 1000 + 1, "abc", "", "1.5", "+10000000"]
SHORT_STRINGS = ["", "v", "0", "1", "-1", "42", "abc", "3.5", "1e3", "nan", "inf", "-inf",
                 "9223372036854775807", "-9223372036854775808", "9223372036854775808",
                 b"\x00", b"\xff\xfe\x00\x01", b"\r\n", b"a\r\nb", b" ", b"a b", b"\"'", "*", "?"]
FIELDS = ["f1", "f2", "f3", "n", "fl", "f0", "f150", "nofield", "", b"\x00\xff", "F1"]
PATTERNS = ["*", "?", "s*", "h*", "[ab]*", "[^s]*", "\\*", "[", "[a-", "**", "*?*", "f1",
            "f[0-9]*", b"\x00*", "", "\\"]
DBS = [0, 1, 15, 16, -1, INT64_MAX, INT64_MIN, "x", "", "1.0"]
# Sizes of generated values: mostly small, sometimes large, rarely 64 MiB (budgeted).
VALUE_SIZES = [(1, 30), (100, 20), (4096, 10), (65536, 4), (MIB, 2), (8 * MIB, 0.3)]
HUGE_SIZE = 64 * MIB
RAW_FRAME_SHARE = 0.01
LATE_PONG_GRACE_S = 10.0
ABSOLUTE_EXPIRY = {b"EXAT", b"PXAT"}

# Frames sent as they are, now and then (the first reply is compared; after a protocol
# error both servers close the connection, which the campaign follows). "+ PING" keeps a
# frame that has no reply of its own from leaving the lockstep waiting.
RAW_FRAMES = [
    b"\r\n*1\r\n$4\r\nPING\r\n", b"   \r\nPING\r\n", b"*-1\r\n*1\r\n$4\r\nPING\r\n",
    b"*0\r\nPING\r\n", b'ECHO "a b"\r\n', b"ECHO 'a\\nb'\r\n", b'ECHO "\\x41\\x00\\n"\r\n',
    b'ECHO "unbalanced\r\n', b"ECHO 'x'y\r\n", b'SET "k" "v"x\r\n',
    b"*2147483648\r\n", b"*1\r\n$536870913\r\n", b"*2\r\n$4\r\nECHO\r\nx\r\n",
    b"*1\r\n$-1\r\n", b"*1\r\n$x\r\n", b"*x\r\n", b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-5\r\n",
    b"*1\r\n$4\r\nPINGxx\r\n",
]
INLINE_SAFE = re.compile(rb"[!#-&(-~]+\Z")     # printable, no space or quote: inline as is

# Per-argument pools, by the argument's name in COMMAND DOCS (a command's own entry first).
NAMED_POOLS = {
    "field": FIELDS,
    "seconds": TIMES, "milliseconds": TIMES,
    "unix-time-seconds": TIMES, "unix-time-milliseconds": TIMES,
    "db": DBS, "index": DBS, "index1": DBS, "index2": DBS, "destination-db": DBS,
    "section": ["server", "memory", "keyspace", "clients", "stats", "all", "everything",
                "default", "bogus", "KEYSPACE", ""],
    "event": ["command", "fast-command", "bogus", ""],
    "categoryname": ["string", "hash", "keyspace", "read", "bogus", "", "STRING"],
    "connection-name": ["fuzz", "a b", "", b"\n", "x" * 100, b"\xff"],
    "username": ["fuzzuser", "nouser", "", "default"],
    "password": ["pw", "", "nopass", b"\x00"],
    "rule": ["on", "off", ">pw", "<pw", "#abc", "nopass", "+@all", "-@all", "~*", "&*",
             "allkeys", "resetkeys", "+get", "-set", "bogus", "%R~k*", "(+get ~k*)", ""],
    "bits": [0, 1, 4, 64, 4096, 4097, -1, INT64_MAX, "x"],
    "libname": SHORT_STRINGS, "libver": SHORT_STRINGS,
    # Blocking commands' timeouts: errors, and waits short enough for the lockstep (a
    # missing key waits them out on both servers); never 0 or what rounds to it (forever).
    "timeout": ["0.01", "0.001", "1e-320", "0x1p-9", "-1", "-0.5", "abc", "", "nan", "inf", "-inf",
                "1e309", "9223372036854775808", " 1"],
}
COMMAND_OVERRIDES = {
    # CONFIG GET/SET: names whose values both servers share (a glob such as * would
    # list every option, and cxlredis has fewer); not latency-monitor-threshold or
    # slowlog-log-slower-than, whose samples depend on each process's speed (CONFIG SET
    # large-value-threshold is cxlredis's own: see THRESHOLD_SHARE).
    ("config|get", "parameter"): ["maxmemory-policy", "timeout", "slowlog-max-len", "hz",
                                  "maxmemory-samples", "acllog-max-len", "databases",
                                  "latency-tracking", "no-such-option", "", b"\x00"],
    ("config|set", "parameter"): ["maxmemory-policy", "slowlog-max-len", "maxmemory-samples",
                                  "acllog-max-len", "hz", "latency-tracking", "databases",
                                  "no-such-option", ""],
    ("config|set", "value"): ["allkeys-lru", "noeviction", "volatile-ttl", "allkeys-lfu", "yes",
                              "no", 0, -1, 1, 5, 128, 1000, INT64_MAX, INT64_MAX + 1, "abc", "",
                              "10mb", "1k"],
    # SETUSER on the default user could lock the campaign out (its own rules are tested elsewhere).
    ("acl|setuser", "username"): ["fuzzuser", "other", ""],
    ("acl|deluser", "username"): ["fuzzuser", "nouser", "default"],
}

KEY_POOL = [b"s", b"i", b"f", b"neg", b"h", b"hbig", b"hnum", b"e", b"big", b"bin\x00\xff\r\n",
            b"", b"missing", b"m2", b"k" * 300, b"l", b"lbig",
            b"st", b"sstr", b"sbig", b"z", b"zbig"]
# Keys the cxlredis-only commands use: never touched by the differential part.
CXL_ONLY_KEYS = [b"cxlonly:a", b"cxlonly:b", b"cxlonly:\x00", b"cxlonly:big"]


def setup_commands() -> list[tuple]:
    """The keyspace of each episode: keys of every type and shape."""
    big_hash = ["HSET", "hbig"] + [x for n in range(200) for x in (f"f{n}", f"v{n}")]
    return [
        ("FLUSHALL",),
        ("SET", "s", "hello"),
        ("SET", "i", "42"),
        ("SET", "f", "3.5"),
        ("SET", "neg", str(INT64_MIN)),
        ("HSET", "h", "f1", "v1", "f2", "2", "f3", "-3.5"),
        tuple(big_hash),
        ("HSET", "hnum", "n", str(INT64_MAX), "fl", "1.5"),
        ("SET", "e", "x", "EX", "100000"),
        ("SET", "big", b"B" * MIB),
        ("SET", b"bin\x00\xff\r\n", b"\x00bin"),
        ("SET", b"", b"empty key"),
        ("SADD", "st", "1", "2", "3", "-1", "42", "0"),
        ("SADD", "sstr", "a", "b", "1", "v", "abc", ""),
        ("SADD", "sbig", *map(str, range(600))),
        ("RPUSH", "l", "a", "b", "1", "a", "", "-2", "c"),
        ("RPUSH", "lbig", *[f"e{n % 50}" for n in range(300)]),
        ("ZADD", "z", "1", "a", "2.5", "b", "-0", "c", "inf", "d", "-1e308", "e", "1e-320", "f", "3", "1"),
        # a skiplist of one score: Redis's lex ranges assume one (on a skiplist of several,
        # where its search ends depends on the random levels of the nodes)
        ("ZADD", "zbig", *[x for n in range(200) for x in ("0", f"w{n:03d}")]),
    ]


# ------------------------------------------------------------ comparators for randomness

def same_type(argv, a: bytes, b: bytes) -> bool:
    # Replies describing each process (slow log, latency counters, client list):
    # errors must match exactly, the reply's type must agree.
    if a[:1] in (b"-", b"!") or b[:1] in (b"-", b"!"):
        return a == b
    return a[:1] == b[:1]


def unordered_pairs(argv, reply):
    # A hash's field order is its encoding's (hashtable order past 128 fields).
    return sorted(_pairs(parse_reply(reply)))


def scan_complete(argv, a: bytes, b: bytes) -> bool:
    # SCAN order and cursors are the hash table's (cxlredis's cursor is an arena position):
    # when both servers go from cursor 0 to 0 in one call they must return the same elements,
    # otherwise only the reply's shape can agree.
    (cursor_a, items_a), (cursor_b, items_b) = parse_reply(a), parse_reply(b)
    started = argv[1 if argv[0].upper() == b"SCAN" else 2]
    if cursor_a != b"0" or cursor_b != b"0" or started.lstrip(b"+-0") != b"":
        return isinstance(items_a, list) and isinstance(items_b, list)
    if argv[0].upper() in (b"HSCAN", b"ZSCAN"):
        return sorted(zip(items_a[0::2], items_a[1::2])) == sorted(zip(items_b[0::2], items_b[1::2]))
    return sorted(items_a) == sorted(items_b)


def unordered_members(argv, a: bytes, b: bytes) -> bool:
    # A hashtable set's members come in its dict order: the same reply type, the same members.
    return a[:1] == b[:1] and sorted_elements(argv, a) == sorted_elements(argv, b)


def took_random_members(argv, reply: bytes) -> bool:
    # Which members SPOP removes is random: after one that may have taken some (or was
    # queued to), its key is deleted on both servers, which then hold the same keys again.
    return (len(argv) > 1 and argv[0].upper() == b"SPOP"
            and not reply.startswith((b"-", b"!", b"_", b"$-1", b"*0\r", b"~0\r")))


SORT_NOT_DOUBLE = b"-ERR One or more scores can't be converted into double\r\n"


def sort_after_leaked_errno(argv, a: bytes, b: bytes) -> bool:
    # Redis 7.0's SORT tests errno after strtod without clearing it first: once a command
    # before it on the connection left ERANGE there (a float such as 5e-324 or 1e309), it
    # refuses numbers it sorts otherwise. Only that refusal may stand against cxlredis's
    # sorted reply (tests/differential/test_diff_sort.py compares SORT's errors exactly).
    # ALPHA BY a pattern leaves elements whose keys tie (missing ones, say) in the order
    # SORT took them in, and BY nosort sorts nothing: a set's or a sorted set's members
    # then come in its hash table's order, so only the same elements must come back, and
    # under a LIMIT (a range of that order) only as many of them. (A list's order is the
    # same on both: tests/differential/test_diff_sort.py compares its ties exactly.)
    if a == b or (a == SORT_NOT_DOUBLE and b[:1] == b"*"):
        return True
    words = [arg.upper() for arg in argv[2:]]
    patterns = [argv[3 + i] for i, word in enumerate(words[:-1]) if word == b"BY"]
    in_taken_order = patterns and (b"ALPHA" in words or any(b"*" not in by for by in patterns))
    if not in_taken_order:
        return False
    if b"LIMIT" in words:
        taken_a, taken_b = parse_reply(a), parse_reply(b)
        return (a[:1] == b[:1] and isinstance(taken_a, list) and isinstance(taken_b, list)
                and len(taken_a) == len(taken_b))
    return unordered_members(argv, a, b)


def random_pick(argv, reply):
    # Which element is random; whether there is one, and how many, must agree.
    value = parse_reply(reply)
    return ("many", len(value), reply[:1]) if isinstance(value, list) else (
        "one" if value is not None else "none", reply[:1])


def acl_cat(argv, a: bytes, b: bytes) -> bool:
    return (categories if len(argv) == 2 else cat_members)(argv, a, b)


def help_subset(argv, a: bytes, b: bytes) -> bool:
    # A container whose subcommands cxlredis implements only in part lists only those:
    # the same first line and HELP lines, every other line word for word one of Redis's.
    if not (a.startswith(b"*") and b.startswith(b"*")):
        return a == b
    oracle, ours = parse_reply(a), parse_reply(b)
    return ours[0] == oracle[0] and ours[-2:] == oracle[-2:] and set(ours) <= set(oracle)


def status_exact(compare):
    # +QUEUED, +OK and errors are never allowed to differ, whatever the comparator reads.
    def checked(argv, a, b):
        if a[:1] in (b"+", b"-", b"!") or b[:1] in (b"+", b"-", b"!"):
            return a == b
        return compare(argv, a, b)
    return checked


CAMPAIGN_COMPARATORS = {
    "MEMORY HELP": help_subset,
    # Redis LZF-compresses what it can (rdbcompression), cxlredis writes values raw: either
    # payload restores on both (test_diff_migration compares the bytes, compression off).
    "DUMP": same_type,
    # A probabilistic counter (Redis: shared integers have none, keys set before the policy
    # switch read their LRU bits); "nondeterministic_output" in COMMAND DOCS.
    "OBJECT FREQ": normalised(integer_type),
    # cxlredis documents the newer filters and SETINFO it serves (Redis 7.2/7.4 lines).
    "CLIENT HELP": same_type,
    "HGETALL": normalised(unordered_pairs),
    "HKEYS": normalised(sorted_elements),
    "HVALS": normalised(sorted_elements),
    "SCAN": scan_complete,
    "HSCAN": scan_complete,
    "SSCAN": scan_complete,
    "ZSCAN": scan_complete,
    "ZRANDMEMBER": normalised(random_pick),
    "SMEMBERS": unordered_members,
    "SINTER": unordered_members,
    "SUNION": unordered_members,
    "SDIFF": unordered_members,
    "SPOP": normalised(random_pick),
    "SRANDMEMBER": normalised(random_pick),
    "RANDOMKEY": normalised(random_pick),
    "HRANDFIELD": normalised(random_pick),
    "ACL GENPASS": GENPASS,
    "ACL LOG": ACL_LOG,
    # Exact but for the single-command rules' order, Redis's hash order (acl_helpers); the
    # rules generated (NAMED_POOLS' "rule") name only commands both servers have.
    "ACL LIST": ACL_LIST,
    "ACL GETUSER": GETUSER,
    "ACL CAT": acl_cat,
    "SLOWLOG GET": same_type,
    "SLOWLOG LEN": normalised(integer_type),
    # Reports for people, in cxlredis's own words (their errors are still compared exactly).
    "LATENCY DOCTOR": same_type,
    "MEMORY DOCTOR": same_type,
    "MEMORY STATS": same_type,
    "MEMORY MALLOC-STATS": same_type,
    "LATENCY GRAPH": same_type,
    # Counts calls per command: the watchdog's PINGs reach cxlredis only.
    "LATENCY HISTOGRAM": same_type,
    "CLIENT LIST": same_type,
    # With no names, the whole table (Redis has more commands); with names, the docs of
    # commands cxlredis serves are checked field by field in test_diff_introspection.
    "COMMAND": same_type,
    "COMMAND INFO": same_type,
    "COMMAND DOCS": same_type,
}
def lolwut_shape(argv, reply):
    # VERSION 5 and 6 draw at random: the rows, their widths and the captions must agree.
    lines = reply.partition(b"\r\n")[2].decode(errors="replace").split("\n")
    return (reply[:1], [line.count("\033[0m") if "\033[" in line else len(line) for line in lines[:-3]],
            lines[-3:])


CAMPAIGN_COMPARATORS["LOLWUT"] = normalised(lolwut_shape)
CAMPAIGN_COMPARATORS = {name: status_exact(f) for name, f in CAMPAIGN_COMPARATORS.items()}


def background_job(*outcomes):
    # Whether a background save or rewrite is still running when the next one comes is a
    # matter of timing (Redis's child, cxlredis's msync): each server's reply must be one
    # of the command's outcomes; any other reply must be the same on both.
    allowed = {b"+%s\r\n" % o if not o.startswith(b"ERR") else b"-%s\r\n" % o for o in outcomes}

    def compare(argv, a, b):
        return a == b or (a in allowed and b in allowed)
    return compare


CAMPAIGN_COMPARATORS["BGSAVE"] = background_job(
    b"Background saving started", b"Background saving scheduled",
    b"ERR Background save already in progress",
    b"ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE "
    b"in order to schedule a BGSAVE whenever possible.")
CAMPAIGN_COMPARATORS["LASTSAVE"] = normalised(integer_type)
CAMPAIGN_COMPARATORS["SORT"] = CAMPAIGN_COMPARATORS["SORT_RO"] = sort_after_leaked_errno
CAMPAIGN_COMPARATORS["SAVE"] = background_job(b"OK", b"ERR Background save already in progress")
CAMPAIGN_COMPARATORS["BGREWRITEAOF"] = background_job(
    b"Background append only file rewriting started",
    b"Background append only file rewriting scheduled",
    b"ERR Background append only file rewriting already in progress")

# ------------------------------------------------------------ the generator


def table_specs() -> list:
    """Every command and subcommand of the table (a container alone meets its arity error)."""
    return list(SPECS)


def _b(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _huge_count(word: bytes) -> bool:
    try:
        return abs(int(word)) > HRANDFIELD_ORACLE_COUNT
    except ValueError:
        return False


@dataclass
class Generator:
    rng: random.Random
    protocol: int
    huge_budget: int = 0           # 64 MiB values still allowed
    huge_sent: int = 0
    specs: list = field(default_factory=table_specs)

    def __post_init__(self):
        self.specs = [s for s in self.specs if s.name not in EXCLUDED]
        self.names = sorted({s.name.split("|")[0] for s in self.specs})

    # -- values

    def value(self) -> bytes:
        r = self.rng
        if self.huge_budget > self.huge_sent and r.random() < 0.2:
            self.huge_sent += 1
            return bytes([r.randrange(256)]) * HUGE_SIZE
        if r.random() < 0.6:
            return _b(r.choice(SHORT_STRINGS))
        sizes, weights = zip(*VALUE_SIZES)
        size = max(1, r.choices(sizes, weights)[0] + r.choice((-1, 0, 0, 1)))
        block = r.randbytes(min(size, 64))           # binary, and cheap to generate
        return (block * (size // len(block) + 1))[:size]

    def key(self, cxl_only: bool) -> bytes:
        return self.rng.choice(CXL_ONLY_KEYS if cxl_only else KEY_POOL)

    def pool_value(self, spec_name: str, arg) -> bytes:
        r = self.rng
        pool = COMMAND_OVERRIDES.get((spec_name, arg.name)) or NAMED_POOLS.get(arg.name)
        if arg.name == "protover":
            # Switching protocol mid-run is HELLO's own test; any valid version is this run's.
            choice = r.choice([self.protocol] * 4 + [1, 4, -1, INT64_MAX, "abc", ""])
            return _b(choice)
        if arg.name in ("command", "command-name"):
            return _b(r.choice(self.names + ["nosuchcommand", "", "GET", "client|id"]))
        if pool is not None:
            return _b(r.choice(pool))
        if arg.type in ("integer", "unix-time"):
            return _b(r.choice(INTEGERS if arg.type == "integer" else TIMES))
        if arg.type == "double":
            return _b(r.choice(DOUBLES))
        if arg.type == "pattern":
            return _b(r.choice(PATTERNS))
        if arg.name == "value":
            return self.value()
        return _b(r.choice(SHORT_STRINGS)) if r.random() < 0.8 else self.value()

    # -- arguments from COMMAND DOCS

    def groups(self, spec, args, cxl_only: bool) -> list[list[bytes]]:
        """One group of words per top-level argument (so options can be reordered as units)."""
        out = []
        for arg in args:
            if "optional" in arg.flags and self.rng.random() < 0.5:
                continue
            repeats = self.rng.choice((1, 1, 2, 3, 5)) if "multiple" in arg.flags else 1
            for n in range(repeats):
                words = self.argument(spec, arg, cxl_only, with_token=n == 0 or
                                      "multiple_token" in arg.flags)
                out.append(words)
        return out

    def argument(self, spec, arg, cxl_only: bool, with_token: bool = True) -> list[bytes]:
        words = [_b(arg.token)] if arg.token and with_token else []
        if arg.type == "pure-token":
            return words
        if arg.type == "oneof":
            return words + self.argument(spec, self.rng.choice(arg.arguments), cxl_only)
        if arg.type == "block":
            return words + [w for g in self.groups(spec, arg.arguments, cxl_only) for w in g]
        if arg.type == "key":
            return words + [self.key(cxl_only)]
        return words + [self.pool_value(spec.name, arg)]

    def mutate(self, groups: list[list[bytes]], first_movable: int) -> list[list[bytes]]:
        """Repeat, reorder, drop or add options; flip tokens' case."""
        r = self.rng
        head, tail = groups[:first_movable], groups[first_movable:]
        if tail and r.random() < 0.2:
            tail.append(list(r.choice(tail)))            # a repeated option
        if len(tail) > 1 and r.random() < 0.3:
            r.shuffle(tail)                               # options in another order
        if tail and r.random() < 0.05:
            tail.pop(r.randrange(len(tail)))
        if r.random() < 0.05:
            tail.insert(r.randrange(len(tail) + 1), [_b(r.choice(["BOGUS", "", "NX", "GET", "1"]))])
        if r.random() < 0.03:
            head = head[:-1]                             # a missing positional argument
        groups = head + tail
        if r.random() < 0.2:
            groups = [[w.lower() if w.isalpha() and r.random() < 0.5 else w for w in g] for g in groups]
        return groups

    def command(self) -> tuple[tuple, bool]:
        """(argv, cxl_only) of one generated command; its spec's name is in last_spec."""
        if self.rng.random() < THRESHOLD_SHARE:
            self.last_spec = "config|set"
            return (b"CONFIG", b"SET", b"large-value-threshold",
                    _b(self.rng.choice(THRESHOLDS))), True
        spec = self.rng.choice(self.specs)
        self.last_spec = spec.name
        cxl_only = spec.name in CXL_ONLY or spec.name.split("|")[0] in CXL_ONLY_PREFIXES
        name = [_b(part.upper()) for part in spec.name.split("|")]
        if spec.name in ("command|getkeys", "acl|dryrun"):
            inner, _ = self.inner_command()
            prefix = [[b"default"]] if spec.name == "acl|dryrun" else []
            groups = prefix + [list(inner)]
        else:
            docs = DOCS.get(spec.name, NO_DOCS)
            groups = self.groups(spec, docs.arguments, cxl_only)
            positional = sum(1 for a in docs.arguments if "optional" not in a.flags
                             and not a.token)
            groups = self.mutate(groups, positional)
        argv = tuple(name + [w for g in groups for w in g])
        if (spec.name in ("hrandfield", "srandmember", "zrandmember") and len(argv) > 2
                and _huge_count(argv[2])):
            cxl_only = True
        return argv, cxl_only

    def raw_frame(self) -> tuple[bytes, tuple]:
        """(bytes, argv): a malformed frame (argv empty), or a generated command written inline."""
        if self.rng.random() < 0.5:
            return self.rng.choice(RAW_FRAMES), ()
        while True:
            argv, cxl_only = self.command()
            # (MULTI and RESET change what the campaign must follow: they are sent as commands)
            if (not cxl_only and argv[0] not in (b"MULTI", b"RESET") and len(argv) < 50
                    and all(INLINE_SAFE.match(a) for a in argv)):
                return b" ".join(argv) + b"\r\n", argv

    def inner_command(self):
        # A command inside COMMAND GETKEYS or ACL DRYRUN: never nested further.
        outer = self.last_spec
        while True:
            argv, cxl_only = self.command()
            if argv[0] not in (b"COMMAND", b"ACL") and not cxl_only:
                self.last_spec = outer
                return argv, cxl_only


# ------------------------------------------------------------ the watchdog


class WatchdogFailure(AssertionError):
    pass


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise WatchdogFailure(f"no VmRSS for pid {pid} (has the server exited?)")


class Watchdog:
    """A second connection's PING must answer within ``ping_timeout``; RSS stays under a bound."""

    def __init__(self, server, rss_limit: int, ping_timeout: float = 1.0):
        self.server, self.rss_limit, self.ping_timeout = server, rss_limit, ping_timeout
        self.conn = raw_connection(server.port, timeout=ping_timeout)
        self.peak_rss = 0

    def check(self, argv: tuple) -> None:
        if not self.server.running:
            raise WatchdogFailure(f"cxlredis exited after {argv!r}:\n{self.server.log[-3000:]}")
        started = time.monotonic()
        try:
            self.conn.send(b"PING\r\n")
            reply = self.conn.read_reply(self.ping_timeout)
        except ReplyTimeout:
            raise WatchdogFailure(self._late(argv, started)) from None
        except (ConnectionClosed, OSError) as exc:
            raise WatchdogFailure(f"the watchdog's connection failed after {argv!r}: {exc}") \
                from None
        if reply != b"+PONG\r\n":
            raise WatchdogFailure(f"PING answered {reply!r} after {argv!r}")
        rss = rss_bytes(self.server.pid)
        self.peak_rss = max(self.peak_rss, rss)
        if rss > self.rss_limit:
            raise WatchdogFailure(f"RSS {rss / MIB:.0f} MiB passed the bound "
                                  f"{self.rss_limit / MIB:.0f} MiB after {argv!r}")

    def _late(self, argv, started) -> str:
        # Was the server stuck, or the whole machine? How late the PONG came, and the
        # kernel's stall figures (other processes on a loaded machine can stall us all).
        try:
            self.conn.read_reply(LATE_PONG_GRACE_S)
            late = f"PONG after {time.monotonic() - started:.1f}s"
        except (ReplyTimeout, ConnectionClosed, OSError):
            late = f"no PONG after {time.monotonic() - started:.1f}s"
        return (f"PING on another connection did not answer within {self.ping_timeout}s after "
                f"{argv!r} ({late}; {pressure()})")

    def close(self):
        self.conn.close()


def pressure() -> str:
    """The kernel's pressure-stall averages (10 s) for CPU and memory, if it has them."""
    figures = []
    for resource in ("cpu", "memory"):
        try:
            with open(f"/proc/pressure/{resource}") as f:
                for line in f:
                    kind, avg10 = line.split()[:2]
                    figures.append(f"{resource} {kind} {avg10}")
        except OSError:
            pass
    return "stalls: " + ", ".join(figures) if figures else "no pressure-stall figures"


# ------------------------------------------------------------ running


@dataclass
class Stats:
    commands: int = 0
    cxl_only: int = 0
    episodes: int = 0
    peak_rss: int = 0
    per_command: dict = field(default_factory=dict)

    def count(self, spec_name: str) -> None:
        self.commands += 1
        self.per_command[spec_name] = self.per_command.get(spec_name, 0) + 1


class CampaignFailure(AssertionError):
    pass


def replay_hint(seeds, protocols, episode: int, episode_length: int, huge_budget: int) -> str:
    protocol = "both" if len(protocols) == 2 else protocols[0]
    return ("replay: python tests/fuzz/campaign.py " + " ".join(f"--seed {s}" for s in seeds)
            + f" --protocol {protocol} --episode-length {episode_length} --huge {huge_budget}"
            f" --through {episode}")


def run_episode(oracle, cxl, seed: int, protocol: int, episode: int, length: int,
                watchdog: Watchdog, stats: Stats, huge_budget: int = 0) -> None:
    """One episode: a fresh keyspace and connections, then ``length`` generated commands."""
    rng = random.Random(f"{seed}:{protocol}:{episode}")
    gen = Generator(rng, protocol, huge_budget=huge_budget)
    pair = Lockstep(oracle, cxl, protocol, name=f"seed {seed} episode {episode}",
                    overrides=CAMPAIGN_COMPARATORS)
    lone = None            # cxlredis's connection for the commands only it has
    argv = ()
    try:
        if protocol == 3:
            pair.step(cmd("HELLO", "3"))
        for setup in setup_commands():
            pair.step(cmd(*setup))
        for _ in range(length):
            if rng.random() < RAW_FRAME_SHARE and pair.tracker.queued.get(0) is None:
                # (not inside MULTI: EXEC's comparison follows the commands queued as argv)
                frame, argv = gen.raw_frame()
                stats.count("(raw frame)")
                compare = None
                if argv:     # the inline command's own comparator, given its argv
                    inline = comparator_for(argv, CAMPAIGN_COMPARATORS)
                    compare = lambda _, a, b, argv=argv, inline=inline: inline(argv, a, b)  # noqa: E731
                expected, _ = pair.step(Step(data=frame, compare=compare))
                argv = argv or (frame,)
            else:
                argv, cxl_only = gen.command()
                stats.count(gen.last_spec)
                if cxl_only:
                    lone = lone or raw_connection(cxl.port, timeout=5.0)
                    _run_alone(lone, argv)
                    stats.cxl_only += 1
                    watchdog.check(argv)
                    continue
                expected, _ = pair.step(cmd(*argv))
                if argv[0].upper() == b"RESET" and protocol == 3:
                    pair.step(cmd("HELLO", "3"))  # RESET goes back to RESP2 on both
                if argv[0].upper() == b"SET" and ABSOLUTE_EXPIRY & {a.upper() for a in argv}:
                    # Redis stores a SET ... EXAT <past> key as expired, and until expiry
                    # collects it DBSIZE and MEMORY USAGE count it (cxlredis drops it at once:
                    # noted, left alone). Touching the key collects it on both servers.
                    pair.step(cmd("EXISTS", argv[1]))
            if took_random_members(argv, expected[0]):
                pair.step(cmd("DEL", argv[1]))
            if expected[0].startswith(b"-ERR Protocol error"):
                pair.step(cmd("PING"))            # both must have closed: CLOSED on both sides
                expected = [CLOSED]
            if expected[0] in (CLOSED, NO_REPLY):   # (both, or the comparison failed)
                pair.close()
                pair = Lockstep(oracle, cxl, protocol, pair.name, CAMPAIGN_COMPARATORS)
                if protocol == 3:
                    pair.step(cmd("HELLO", "3"))
            watchdog.check(argv)
    except (Mismatch, WatchdogFailure) as exc:
        raise CampaignFailure(f"{exc}\ncommand: {argv!r}") from None
    finally:
        pair.close()
        if lone:
            lone.close()
    stats.episodes += 1


def _run_alone(conn, argv: tuple) -> None:
    conn.send(encode_command(*argv))
    try:
        reply = conn.read_reply()
    except (ReplyTimeout, ConnectionClosed) as exc:
        raise WatchdogFailure(f"cxlredis-only command {argv!r} got no reply: {exc}") from None
    parse_reply(reply)          # a malformed reply raises here


def arena_options(arena_size: int) -> dict:
    return {"arena-size": str(arena_size), "maxmemory-policy": "noeviction"}


def run_campaign(oracle, cxl, seeds, protocols, budget_s: float, episode_length: int = 200,
                 huge_budget: int = 1, arena_size: int = 512 * MIB, through=None,
                 ping_timeout: float = 1.0, log=print) -> Stats:
    """Episodes over ``seeds`` x ``protocols`` until ``budget_s`` runs out (or, with
    ``through``, episodes 0..through whatever the time).  Raises CampaignFailure at the
    first difference or watchdog failure, with the command line that replays it."""
    stats = Stats()
    watchdog = Watchdog(cxl, rss_bytes(cxl.pid) + arena_size + 256 * MIB, ping_timeout)
    deadline = time.monotonic() + budget_s
    try:
        for episode in range(1 << 30 if through is None else through + 1):
            for seed in seeds:
                for protocol in protocols:
                    if time.monotonic() > deadline and through is None:
                        return stats
                    try:
                        run_episode(oracle, cxl, seed, protocol, episode, episode_length,
                                    watchdog, stats, huge_budget if episode == 0 else 0)
                    except CampaignFailure as exc:
                        hint = replay_hint(seeds, protocols, episode, episode_length, huge_budget)
                        raise CampaignFailure(f"{exc}\n{hint}") from None
            if episode % 10 == 9:
                log(f"  episode {episode + 1}: {stats.commands} commands, "
                    f"peak RSS {watchdog.peak_rss / MIB:.0f} MiB")
    finally:
        watchdog.close()
        stats.peak_rss = watchdog.peak_rss
    return stats


def start_servers(arena_size: int):
    oracle = ServerProcess("redis").start()
    cxl = ServerProcess("cxlredis", arena_options(arena_size)).start()
    return oracle, cxl


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, action="append",
                        help="repeatable; default: a random one (printed)")
    parser.add_argument("--protocol", choices=["2", "3", "both"], default="both")
    parser.add_argument("--through", type=int,
                        help="run episodes 0..THROUGH whatever the time (what a failure prints)")
    parser.add_argument("--episode-length", type=int, default=200)
    parser.add_argument("--ping-timeout", type=float, default=1.0,
                        help="seconds the watchdog's PING may take (a failure says how late it "
                             "came and how stalled the machine was)")
    parser.add_argument("--huge", type=int, default=2,
                        help="64 MiB values allowed in each seed's first episode")
    args = parser.parse_args(argv)
    seeds = args.seed or [random.randrange(1 << 31)]
    protocols = [2, 3] if args.protocol == "both" else [int(args.protocol)]
    arena_size = 512 * MIB
    oracle, cxl = start_servers(arena_size)
    started = time.monotonic()
    print(f"campaign: seeds {seeds}, RESP {protocols}, {args.minutes} min; "
          f"redis-server pid {oracle.pid}, cxlredis pid {cxl.pid}", flush=True)
    try:
        stats = run_campaign(oracle, cxl, seeds, protocols, args.minutes * 60,
                             args.episode_length, args.huge, arena_size, args.through,
                             args.ping_timeout, log=lambda text: print(text, flush=True))
    except CampaignFailure as exc:
        print(f"FAILED after {time.monotonic() - started:.0f}s:\n{exc}", flush=True)
        return 1
    finally:
        oracle.close()
        cxl.close()
    print(f"passed: {stats.commands} commands ({stats.cxl_only} cxlredis-only) in "
          f"{stats.episodes} episodes, {len(stats.per_command)} commands and subcommands, "
          f"{time.monotonic() - started:.0f}s, peak RSS {stats.peak_rss / MIB:.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
