"""SORT and SORT_RO, replayed on redis-server and cxlredis: every option, its errors and
its keys (RESP2 and RESP3).

The lists, sets and sorted sets are made by RESTORE of payloads written here
(cluster/dump.py), the same bytes on both servers, so these tests need no list, set or
sorted set command; a STOREd list is read back with SORT ... BY nosort and DUMP (the
oracle runs with rdbcompression off, so the payloads compare byte for byte).
"""
import time

import pytest

from conftest import ServerProcess, free_port, raw_connection
from cxlredis.cluster.dump import dump_list, dump_set, dump_zset
from diff_harness import cmd, raw, run_sequence

pytestmark = pytest.mark.usefixtures("flushed", "uncompressed_oracle")


def restore(key, payload):
    return ("RESTORE", key, "0", payload)


NUMBERS = [b"3", b"1", b"2", b"10", b"-5", b"2.5", b"1e2", b"0x10", b" 7", b"", b"-0", b"inf", b"1"]
WORDS = [b"banana", b"apple", b"Cherry", b"apple", b"", b"a\x00b", b"a\x00a", "\u00e9".encode(),
         b"\xff", b"a", b"10", b"9"]
DATA = [
    restore("nums", dump_list(NUMBERS, -2)),
    restore("words", dump_list(WORDS, -2)),
    restore("ids", dump_list([b"3", b"1", b"2", b"4"], -2)),
    restore("intset", dump_set([b"5", b"3", b"-1", b"100", b"42"], intset=True)),
    restore("strset", dump_set([b"x", b"y", b"z", b"1", b"b"], intset=False)),
    restore("zset", dump_zset([(b"c", -1.0), (b"a", 1.0), (b"b", 2.0), (b"d", 2.0), (b"9", 3.0)], True)),
    restore("bigzset", dump_zset([(b"m%03d" % i, float(i % 7)) for i in range(200)], False)),
    ("MSET", "w_1", "10", "w_2", "-2", "w_3", "30", "w_4", "0x1p3", "w_a", "1e400", "w_b", " 4",
     "w_c", "4 ", "w_d", "nan", "w_e", "1e-310", "w_f", "5\x00junk", "w_g", "", "w_h", "abc"),
    ("HSET", "h_1", "f", "z", "n", "3"), ("HSET", "h_2", "f", "y", "n", "1"),
    ("HSET", "h_3", "f", "x", "n", "2"), ("HSET", "h_4", "n", "2"),
    ("SET", "s_1", "one"), ("SET", "s_3", "three"), ("SET", "string", "v"),
    ("HSET", "hash", "f", "v"),
]

SEQUENCES = {
    "numeric": [
        ("SORT", "ids"), ("SORT", "ids", "DESC"), ("SORT", "ids", "ASC"), ("SORT", "ids", "desc", "asc"),
        ("SORT", "nums"), ("SORT", "nums", "DESC"),
        ("SORT", "words"),                                  # not numbers: an error
        ("SORT", "intset"), ("SORT", "intset", "DESC"),
        ("SORT", "zset"), ("SORT", "zset", "DESC"),
        ("SORT", "strset"),
    ],
    "alpha": [
        ("SORT", "words", "ALPHA"), ("SORT", "words", "ALPHA", "DESC"), ("SORT", "nums", "alpha"),
        ("SORT", "strset", "ALPHA"), ("SORT", "strset", "ALPHA", "DESC"), ("SORT", "intset", "ALPHA"),
        ("SORT", "zset", "ALPHA"), ("SORT", "bigzset", "ALPHA", "DESC", "LIMIT", "0", "5"),
    ],
    "limit": [
        ("SORT", "ids", "LIMIT", "1", "2"), ("SORT", "ids", "LIMIT", "0", "0"), ("SORT", "ids", "LIMIT", "-5", "2"),
        ("SORT", "ids", "LIMIT", "2", "-1"), ("SORT", "ids", "LIMIT", "3", "100"), ("SORT", "ids", "LIMIT", "4", "1"),
        ("SORT", "ids", "LIMIT", "100", "1"), ("SORT", "ids", "LIMIT", "1", "2", "LIMIT", "0", "1"),
        ("SORT", "ids", "DESC", "LIMIT", "1", "2"), ("SORT", "missing", "LIMIT", "0", "10"),
        ("SORT", "ids", "LIMIT", "-9223372036854775808", "9223372036854775807"),
        ("SORT", "ids", "LIMIT", "x", "1"), ("SORT", "ids", "LIMIT", "1", "1.5"),
        ("SORT", "ids", "LIMIT", "9223372036854775808", "1"), ("SORT", "ids", "LIMIT", "1"),
        ("SORT", "ids", "LIMIT"),
    ],
    "by a pattern": [
        ("SORT", "ids", "BY", "w_*"), ("SORT", "ids", "BY", "w_*", "DESC"),
        ("SORT", "ids", "BY", "w_*", "ALPHA"), ("SORT", "ids", "BY", "w_*", "ALPHA", "DESC"),
        ("SORT", "ids", "BY", "h_*->n"), ("SORT", "ids", "BY", "h_*->f", "ALPHA"),
        ("SORT", "ids", "BY", "h_*->f", "ALPHA", "DESC"), ("SORT", "ids", "BY", "h_*->nofield"),
        ("SORT", "ids", "BY", "s_*->f"), ("SORT", "ids", "BY", "h_*"), ("SORT", "ids", "BY", "nokey_*"),
        ("SORT", "ids", "BY", "w_*", "LIMIT", "1", "2"), ("SORT", "ids", "BY", "h_*->n", "DESC", "LIMIT", "0", "3"),
        ("SORT", "intset", "BY", "w_*"), ("SORT", "zset", "BY", "w_*", "ALPHA"),
        ("SORT", "strset", "BY", "w_*"),       # w_x... do not exist: all 0, then by element
        ("SORT", "ids", "BY", "*"), ("SORT", "ids", "BY", "w_**"), ("SORT", "ids", "BY", "h_*->"),
        ("SORT", "ids", "BY", "h_*->n->x"),
    ],
    # BY a pattern with a LIMIT, Redis sorts with pqsort, which is not stable: elements whose
    # BY values tie (equal, or missing) come out as its partitioning leaves them, which
    # differs from the order of the list (a stable sort) once it has 7 elements and more.
    "ties under a limit": [
        ("RESTORE", "tied", "0", dump_list([b"t%d" % i for i in range(50)], -2)),
        ("MSET", "tw_t3", "b", "tw_t7", "a", "tw_t9", "b", "tw_t20", "a", "tw_t31", "c", "tw_t44", "a"),
        ("SORT", "tied", "BY", "nokey_*", "ALPHA", "LIMIT", "0", "5"),
        ("SORT", "tied", "BY", "tw_*", "ALPHA", "LIMIT", "0", "8"),
        ("SORT", "tied", "BY", "tw_*", "ALPHA", "DESC", "LIMIT", "2", "8"),
        ("SORT", "tied", "BY", "tw_*", "ALPHA", "LIMIT", "45", "10", "GET", "#", "GET", "tw_*"),
        ("SORT", "tied", "BY", "tw_*", "ALPHA", "LIMIT", "1", "-1", "STORE", "dst"),
        ("SORT", "dst", "BY", "nosort"),
        ("SORT", "tied", "BY", "tw_*", "ALPHA", "LIMIT", "60", "1"),
        ("SORT", "tied", "BY", "tw_*", "ALPHA", "LIMIT", "0", "50"),     # all of it: qsort
        ("RESTORE", "tied12", "0", dump_list([b"u%d" % i for i in range(12)], -2)),
        ("SORT", "tied12", "BY", "nokey_*", "ALPHA", "DESC", "LIMIT", "0", "4"),
        ("SORT", "tied12", "BY", "nokey_*", "LIMIT", "3", "4"),           # numbers tie by element
    ],
    "scores that are no numbers": [
        ("RESTORE", "l", "0", dump_list([b"1", b"h"], -2)), ("SORT", "l", "BY", "w_*"),   # 10, abc
        ("RESTORE", "m", "0", dump_list([b"4", b"b", b"f", b"g", b"2"], -2)),
        ("SORT", "m", "BY", "w_*"),               # hex, leading space, past a NUL, empty: read
        ("SORT", "m", "BY", "w_*", "DESC", "GET", "#", "GET", "w_*"),
        ("RESTORE", "over", "0", dump_list([b"a"], -2)), ("SORT", "over", "BY", "w_*"),
        ("RESTORE", "nan", "0", dump_list([b"d"], -2)), ("SORT", "nan", "BY", "w_*"),
        ("RESTORE", "sub", "0", dump_list([b"e"], -2)), ("SORT", "sub", "BY", "w_*"),
        ("RESTORE", "tail", "0", dump_list([b"c", b"1"], -2)), ("SORT", "tail", "BY", "w_*"),
        ("SORT", "tail", "BY", "w_*", "ALPHA"),
        ("RESTORE", "tiny", "0", dump_list([b"1e-310", b"4.9e-324", b"2.2250738585072011e-308",
                                            b"2.2250738585072014e-308", b"0x1p-1074", b"1e-400", b"0e-5"], -2)),
        ("SORT", "tiny", "LIMIT", "0", "1"), ("SORT", "tiny", "LIMIT", "3", "10"),
    ],
    "get": [
        ("SORT", "ids", "GET", "#"), ("SORT", "ids", "GET", "w_*"), ("SORT", "ids", "GET", "s_*"),
        ("SORT", "ids", "GET", "h_*->f", "GET", "#", "GET", "h_*->n"), ("SORT", "ids", "GET", "nostar"),
        ("SORT", "ids", "GET", "h_*"), ("SORT", "ids", "GET", "w_*->f"), ("SORT", "ids", "GET", "#\x00x"),
        ("SORT", "ids", "BY", "w_*", "GET", "#", "GET", "w_*", "DESC", "LIMIT", "1", "2"),
        ("SORT", "missing", "GET", "#"), ("SORT", "ids", "GET"),
    ],
    "nosort": [
        ("SORT", "nums", "BY", "nosort"), ("SORT", "nums", "BY", "nosort", "DESC"),
        ("SORT", "nums", "BY", "nosort", "LIMIT", "2", "3"), ("SORT", "nums", "BY", "nosort", "DESC", "LIMIT", "2", "3"),
        ("SORT", "nums", "BY", "nosort", "LIMIT", "20", "3"), ("SORT", "nums", "BY", "nosort", "LIMIT", "0", "0"),
        ("SORT", "nums", "BY", "nosort", "ALPHA"),
        ("SORT", "zset", "BY", "nosort"), ("SORT", "zset", "BY", "nosort", "DESC"),
        ("SORT", "zset", "BY", "nosort", "LIMIT", "1", "3"), ("SORT", "zset", "BY", "nosort", "DESC", "LIMIT", "1", "3"),
        ("SORT", "bigzset", "BY", "nosort", "LIMIT", "190", "20"),
        ("SORT", "intset", "BY", "nosort"), ("SORT", "intset", "BY", "nosort", "DESC", "LIMIT", "1", "2"),
        ("SORT", "ids", "BY", "nosort", "GET", "#", "GET", "w_*", "GET", "h_*->f"),
        ("SORT", "ids", "BY", "nosort", "BY", "w_*"),      # nosort stays
        ("SORT", "ids", "BY", "w_*", "BY", "nosort"),
        ("SORT", "ids", "BY", "no\x00sort*"),              # the '*' past a NUL is not seen
    ],
    "sorted sets become skiplists": [
        ("OBJECT", "ENCODING", "zset"), ("SORT_RO", "zset", "BY", "nosort"), ("OBJECT", "ENCODING", "zset"),
        ("RESTORE", "z2", "0", dump_zset([(b"x", 1.0)], True)), ("SORT", "z2", "BY", "w_*", "ALPHA"),
        ("OBJECT", "ENCODING", "z2"), ("SORT", "z2"), ("DUMP", "z2"),
    ],
    "store": [
        ("SORT", "ids", "STORE", "dst"), ("TYPE", "dst"), ("SORT", "dst", "BY", "nosort"), ("DUMP", "dst"),
        ("SORT", "words", "ALPHA", "STORE", "dst"), ("SORT", "dst", "BY", "nosort"),
        ("SORT", "ids", "GET", "#", "GET", "s_*", "GET", "h_*->f", "STORE", "dst"), ("DUMP", "dst"),
        ("SORT", "intset", "BY", "nosort", "STORE", "dst"), ("SORT", "dst", "BY", "nosort"),  # sorted after all
        ("SORT", "strset", "BY", "nosort", "STORE", "dst"), ("SORT", "dst", "BY", "nosort"),
        ("SORT", "zset", "BY", "nosort", "DESC", "LIMIT", "1", "2", "STORE", "dst"), ("SORT", "dst", "BY", "nosort"),
        ("SET", "dst", "x", "EX", "100"), ("SORT", "ids", "STORE", "dst"), ("TTL", "dst"), ("TYPE", "dst"),
        ("SORT", "ids", "STORE", "string"), ("TYPE", "string"), ("SORT", "ids", "STORE", "ids"),
        ("SORT", "ids", "BY", "nosort"),
        ("SORT", "missing", "STORE", "dst"), ("EXISTS", "dst"), ("SORT", "missing", "STORE", "dst"),
        ("SORT", "ids", "LIMIT", "9", "1", "STORE", "dst2"), ("EXISTS", "dst2"),
        ("SORT", "ids", "STORE", "a", "STORE", "b"), ("EXISTS", "a", "b"),
        ("SORT", "ids", "STORE"), ("SORT", "string", "STORE", "dst"), ("SORT", "bigzset", "STORE", "dst"),
        ("SORT", "dst", "BY", "nosort", "LIMIT", "0", "3"),
    ],
    "errors": [
        ("SORT",), ("SORT", "string"), ("SORT", "hash"), ("SORT", "string", "BY", "w_*"),
        ("SORT", "string", "FOO"),                          # options before the type
        ("SORT", "ids", "FOO"), ("SORT", "ids", "BY"), ("SORT", "ids", "ASC", "FOO", "DESC"),
        ("SORT", "ids", "ALPHA", "LIMIT", "0"), ("SORT", "ids", "STORE", "dst", "LIMIT", "a", "b"),
        ("EXISTS", "dst"), ("SORT", "words", "STORE", "dst"), ("EXISTS", "dst"),
        ("SORT_RO",), ("SORT_RO", "ids", "STORE", "dst"), ("SORT_RO", "string"),
        ("SORT", "ids", "limit", "0", "1", "by", "w_*", "get", "#", "desc", "alpha", "asc"),
    ],
    "sort_ro": [
        ("SORT_RO", "ids"), ("SORT_RO", "ids", "BY", "w_*", "GET", "#", "GET", "w_*", "DESC", "LIMIT", "0", "2"),
        ("SORT_RO", "words", "ALPHA"), ("SORT_RO", "missing"), ("SORT_RO", "intset", "BY", "nosort"),
    ],
    "keys": [
        ("COMMAND", "GETKEYS", "SORT", "k"), ("COMMAND", "GETKEYS", "SORT", "k", "STORE", "d"),
        ("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "BY", "x", "GET", "y", "STORE", "d", "LIMIT", "store", "1",
         "store", "e"),
        ("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "STORE", "STORE", "x"),
        ("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "GET", "STORE", "x"),
        ("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "STORE"),
        ("COMMAND", "GETKEYSANDFLAGS", "SORT_RO", "k", "BY", "x", "STORE", "d"),
        ("COMMAND", "INFO", "sort", "sort_ro"), ("COMMAND", "DOCS", "sort", "sort_ro"),
    ],
    "in a transaction and a script": [
        ("MULTI",), ("SORT", "ids", "STORE", "dst"), ("SORT", "dst", "DESC"), ("SORT", "string"), ("EXEC",),
        ("EVAL", "return redis.call('SORT', KEYS[1], 'BY', 'nosort')", "1", "strset"),   # sorted in a script
        ("EVAL", "return redis.call('SORT', KEYS[1], 'BY', 'nosort')", "1", "intset"),
        ("EVAL", "return redis.call('SORT_RO', KEYS[1], 'BY', 'w_*')", "1", "ids"),
    ],
}


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_sequence(redis_oracle, cxl, protocol, name):
    run_sequence(redis_oracle, cxl, DATA + SEQUENCES[name], protocol, name)


@pytest.fixture
def events_off(redis_oracle, cxl):
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            assert conn.request("CONFIG", "SET", "notify-keyspace-events", "") == b"+OK\r\n"


@pytest.mark.usefixtures("events_off")
def test_store_notifies(redis_oracle, cxl, protocol):
    """new and sortstore when STORE makes the list, sortstore when it replaces one, del
    when the result is empty and the key was there; reads' keymiss events."""
    listener = 1
    steps = [("CONFIG", "SET", "notify-keyspace-events", "EAnm"),
             cmd("PSUBSCRIBE", "__keyevent@*", conn=listener)]
    for command, events in [
            (("SORT", "ids", "STORE", "dst"), 2),
            (("SORT", "ids", "STORE", "dst"), 1),
            (("SORT", "missing", "STORE", "dst"), 2),       # keymiss of the key to sort, del
            (("SORT", "missing", "STORE", "dst"), 1),
            (("SORT", "ids", "BY", "h_*->n", "GET", "nokey_*"), 4),
            (("SORT", "ids", "BY", "s_*", "ALPHA"), 2),
            (("SORT", "ids", "STORE", "string"), 1),
            (("PUBLISH", "__keyevent@0__:end", "nothing more"), 1)]:
        steps += [command, raw(b"", conn=listener, replies=events)]
    run_sequence(redis_oracle, cxl, DATA + steps, protocol, "store notifies")


@pytest.fixture
def scratch_user(redis_oracle, cxl):
    yield "sorter"
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            conn.request("ACL", "DELUSER", "sorter")


def test_patterns_need_every_key_readable(redis_oracle, cxl, protocol, scratch_user):
    """BY and GET patterns name keys no ACL key pattern was checked against: Redis allows
    them to a user whose selector reads every key only."""
    user, other = scratch_user, 1
    steps = [("ACL", "SETUSER", user, "on", "nopass", "~ids", "~dst", "+@all"),
             cmd("AUTH", user, "x", conn=other)]
    calls = [("SORT", "ids"), ("SORT", "ids", "BY", "nosort"), ("SORT", "ids", "BY", "w_*"),
             ("SORT", "ids", "GET", "#"), ("SORT_RO", "ids", "GET", "w_*"), ("SORT", "ids", "STORE", "dst"),
             ("SORT", "ids", "STORE", "elsewhere"), ("SORT", "other")]
    for rules in ([], ["%R~*"], ["resetkeys", "%W~*"], ["resetkeys", "~ids", "(~* -sort)"],
                  ["resetkeys", "~ids", "(~* +sort)"]):
        steps.append(("ACL", "SETUSER", user, *rules))
        steps += [cmd(*call, conn=other) for call in calls]
        steps += [("ACL", "DRYRUN", user, *call) for call in calls]
    run_sequence(redis_oracle, cxl, DATA + steps, protocol, "ACL")


@pytest.fixture(scope="module")
def cluster_pair():
    """A redis-server and a cxlredis in cluster mode, each alone with every slot."""
    nodes = []
    try:
        for kind in ("redis", "cxlredis"):
            options = {"cluster-enabled": "yes", "cluster-config-file": "nodes.conf",
                       "cluster-port": free_port()}
            if kind == "cxlredis":
                options["tenants-file"] = ""
            node = ServerProcess(kind, options)
            nodes.append(node.start())
            with raw_connection(node.port) as conn:
                assert conn.request("CLUSTER", "ADDSLOTSRANGE", "0", "16383") == b"+OK\r\n"
        for node in nodes:
            with raw_connection(node.port) as conn:
                for _ in range(100):
                    if b"cluster_state:ok" in conn.request("CLUSTER", "INFO"):
                        break
                    time.sleep(0.05)
        yield nodes
    finally:
        for node in nodes:
            node.close()


def test_cluster_mode_refuses_patterns(cluster_pair, protocol):
    """Redis 7.0 refuses BY with a '*' and every GET in cluster mode; STORE's key must
    share the slot."""
    oracle, ours = cluster_pair
    run_sequence(oracle, ours, [
        ("FLUSHALL",), restore("{k}l", dump_list([b"3", b"1", b"2"], -2)),
        ("SORT", "{k}l", "BY", "w_*"), ("SORT", "{k}l", "BY", "{k}w_*"), ("SORT", "{k}l", "GET", "#"),
        ("SORT", "{k}l", "BY", "nosort"), ("SORT", "{k}l", "BY", "nosort", "GET", "{k}*"),
        ("SORT_RO", "{k}l", "GET", "#"), ("SORT", "{k}l", "STORE", "elsewhere"),
        ("SORT", "{k}l", "DESC", "STORE", "{k}dst"), ("SORT", "{k}dst", "BY", "nosort"),
        ("SORT", "{k}l", "BY", "x", "STORE", "{k}dst", "FOO"),
    ], protocol, "cluster mode")
