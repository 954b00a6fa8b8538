"""DUMP, RESTORE and MIGRATE of lists, sets and sorted sets, against redis-server 7.0.

Collections of every encoding and size class are built on redis-server (RPUSH, SADD,
ZADD), DUMPed there and RESTOREd on both servers: OBJECT ENCODING, DEBUG OBJECT and the
DUMP of what each holds then compare (byte for byte: the oracle runs with rdbcompression
off; a hashtable set's members in any order), and what cxlredis DUMPs restores on
redis-server to what it started from. Payloads of the encodings Redis 7.0 only reads
(Redis 6's ziplists, quicklists of ziplists, text scores) are written here; corrupt ones
are refused as redis-server refuses them with sanitize-dump-payload yes (cxlredis always
checks a payload whole).
"""
import random
import struct

import pytest

from conftest import ServerProcess, parse_reply, raw_connection
from cxlredis.cluster.dump import (canonical_int, dump_list, dump_set, dump_zset, encode_length, encode_listpack,
                                   encode_string, footer_for, load_payload)
from diff_harness import Mismatch, cmd, cxl_knows, exact, normalised, run_sequence, within

pytestmark = pytest.mark.usefixtures("flushed", "checking_oracle")

KIB = 1 << 10


@pytest.fixture(scope="module")
def checking_oracle(redis_oracle):
    """The oracle writes payloads raw (as cxlredis does) and checks every payload whole."""
    settings = (("rdbcompression", "no", "yes"), ("sanitize-dump-payload", "yes", "no"))
    with raw_connection(redis_oracle.port) as conn:
        for name, value, _ in settings:
            assert conn.request("CONFIG", "SET", name, value) == b"+OK\r\n"
    yield
    with raw_connection(redis_oracle.port) as conn:
        for name, _, default in settings:
            assert conn.request("CONFIG", "SET", name, default) == b"+OK\r\n"


def payload(rdb_type, body):
    head = bytes((rdb_type,))
    return head + body + footer_for(head, body)


def contents(argv, reply):
    """A DUMP reply as what it holds: a set's members in any order, a sorted set's pairs
    too (Redis keeps a listpack's order as it was restored, sorted or not)."""
    kind, value = load_payload(parse_reply(reply))
    if kind in ("set", "zset"):
        return kind, sorted(value[0]), value[1]
    return kind, value


same_contents = normalised(contents)


def _debug_fields(reply):
    return [field for field in reply.split() if field.split(b":")[0] not in (b"at", b"lru", b"lru_seconds_idle")]


def same_debug_object(argv, a, b):
    """DEBUG OBJECT's fields but where the value lies and its access clock."""
    if not (a.startswith(b"+") and b.startswith(b"+")):
        return a == b
    return _debug_fields(a) == _debug_fields(b)


def reads_of(kind, key):
    """Commands that read a collection whole (SORT: cxlredis's lists, sets and sorted
    sets commands may not be there)."""
    if kind == "list":
        return [("SORT", key, "BY", "nosort")]
    if kind == "set":
        return [("SORT", key, "ALPHA")]
    return [("SORT", key, "BY", "nosort", "DESC", "LIMIT", "0", "50")]


# ------------------------------------------------------------ what redis-server builds

def _ints(rng, n, bits):
    return {str(rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))).encode() for _ in range(n)}


def built_by_redis():
    """(key, kind, the command that builds it) of every encoding and size class."""
    rng = random.Random(11)
    lists = {
        "tiny": [b"a", b"1", b"-5"],
        "ints": [str(rng.choice([rng.randrange(128), rng.randrange(-4096, 4096), rng.randrange(-2 ** 63, 2 ** 63)]))
                 .encode() for _ in range(300)],
        "many": [rng.randbytes(rng.randrange(100)) for _ in range(10000)],
        "big elements": [rng.randbytes(70 * KIB), b"a", b"b" * (100 * KIB), rng.randbytes(9000), b"c"],
        "node boundary": [b"x" * size for size in range(8100, 8200, 3)],
    }
    sets = {
        "intset": [b"5", b"-3", b"100", b"0"],
        "wide intset": [str(1 << 40).encode(), str(-(1 << 62)).encode(), b"7"],
        "full intset": sorted(_ints(rng, 512, 16)),
        "past intset": list(range(513)),
        "strings": [b"apple", b"pear", b"1", b"-", b"x" * 64],
        "many": [b"m%05d" % i for i in range(10000)],
        "big member": [rng.randbytes(70 * KIB), b"small"],
    }
    zsets = {
        "tiny": {b"a": 1, b"b": 2.5, b"c": -3},
        "full listpack": {b"m%d" % i: rng.random() for i in range(128)},
        "past listpack": {b"m%d" % i: rng.randrange(10) for i in range(129)},
        "long member": {b"l" * 65: 1, b"s": 2},
        "big member": {rng.randbytes(70 * KIB): 1.5, b"s": 0},
        "many": {b"z%05d" % i: rng.uniform(-1e9, 1e9) for i in range(10000)},
        "scores": {b"inf": float("inf"), b"-inf": float("-inf"), b"negzero": -0.0, b"big": 1e300,
                   b"tenth": 0.1, b"2^53": float(2 ** 53), b"-2^52": float(-(2 ** 52)), b"int": 42},
    }
    built = [(f"list:{name}", "list", ("RPUSH", f"list:{name}", *elements)) for name, elements in lists.items()]
    built += [(f"set:{name}", "set", ("SADD", f"set:{name}", *members)) for name, members in sets.items()]
    for name, pairs in zsets.items():
        args = [part for member, score in pairs.items() for part in (repr(float(score)), member)]
        built.append((f"zset:{name}", "zset", ("ZADD", f"zset:{name}", *args)))
    return built


BUILT = built_by_redis()


@pytest.mark.parametrize("key, kind, build", BUILT, ids=[key for key, _, _ in BUILT])
def test_redis_payloads_restore_here(redis_oracle, cxl, key, kind, build):
    """redis-server's DUMP restores on both servers to the same encoding, DEBUG OBJECT
    line and DUMP; cxlredis's DUMP restores on redis-server to what it started from."""
    with raw_connection(redis_oracle.port, timeout=30) as oracle:
        assert not oracle.request(*build).startswith(b"-")
        original = parse_reply(oracle.request("DUMP", key))
        encoding = oracle.request("OBJECT", "ENCODING", key)
    # a set in a hashtable lists its members in its own order; a sorted set is read back
    # with SORT only after DUMP (SORT makes it a skiplist)
    dump_compare = same_contents if kind == "set" else exact
    run_sequence(redis_oracle, cxl, [
        ("RESTORE", "r", "0", original), ("OBJECT", "ENCODING", "r"), cmd("DUMP", "r", compare=dump_compare),
        cmd("DEBUG", "OBJECT", "r", compare=same_debug_object),
        ("RESTORE", "r", "0", original), ("TYPE", "r"), *reads_of(kind, "r"),
    ], 2, key)
    with raw_connection(cxl.port, timeout=30) as ours:
        ours.request("RESTORE", "r2", "0", original)
        theirs = parse_reply(ours.request("DUMP", "r2"))
    with raw_connection(redis_oracle.port, timeout=30) as oracle:
        assert oracle.request("RESTORE", "back", "0", theirs) == b"+OK\r\n"
        assert oracle.request("OBJECT", "ENCODING", "back") == encoding
        assert contents((), oracle.request("DUMP", "back")) == contents((), oracle.request("DUMP", key))


@pytest.fixture
def compressing_oracle(redis_oracle):
    with raw_connection(redis_oracle.port) as conn:
        assert conn.request("CONFIG", "SET", "rdbcompression", "yes") == b"+OK\r\n"
    yield
    with raw_connection(redis_oracle.port) as conn:
        assert conn.request("CONFIG", "SET", "rdbcompression", "no") == b"+OK\r\n"


@pytest.mark.usefixtures("compressing_oracle")
def test_compressed_payloads_load(redis_oracle, cxl):
    """Redis LZF-compresses a listpack, an intset or a member it can (rdbcompression)."""
    builds = [("RPUSH", "l", *[b"abcabcabc" * 30] * 20, *[b"%d" % i for i in range(300)]),
              ("SADD", "s", *[b"member-%050d" % i for i in range(50)]),
              ("SADD", "i", *range(0, 600000, 1000)),
              ("ZADD", "z", *[part for i in range(100) for part in (i, b"z" * 40 + b"%d" % i)]),
              ("ZADD", "zs", *[part for i in range(200) for part in (i, b"z" * 40 + b"%d" % i)])]
    steps = []
    with raw_connection(redis_oracle.port) as oracle:
        for build in builds:
            assert not oracle.request(*build).startswith(b"-")
            data, restored = parse_reply(oracle.request("DUMP", build[1])), "r" + build[1]
            steps += [("RESTORE", restored, "0", data), ("OBJECT", "ENCODING", restored),
                      cmd("DUMP", restored, compare=same_contents)]
    run_sequence(redis_oracle, cxl, steps, 2, "compressed")


@pytest.mark.usefixtures("default_limits")
def test_lists_are_cut_as_the_fill_says(redis_oracle, cxl):
    """A list RPUSHed under any list-max-listpack-size is cut into the nodes Redis cuts it
    into: DUMP and DEBUG OBJECT agree."""
    if not cxl_knows(cxl, "RPUSH", "probe", "x"):
        pytest.skip("RPUSH is not there yet")
    rng = random.Random(3)
    elements = [rng.randbytes(rng.randrange(300)) for _ in range(500)]
    steps = []
    for fill in ("5", "1", "0", "-1", "-5", "-6", "100000"):
        steps += [("CONFIG", "SET", "list-max-listpack-size", fill), ("DEL", "c"), ("RPUSH", "c", *elements),
                  ("DUMP", "c"), cmd("DEBUG", "OBJECT", "c", compare=same_debug_object)]
    steps += [("CONFIG", "SET", "list-compress-depth", "1"), ("DEL", "c"), ("RPUSH", "c", *elements),
              ("DUMP", "c"), cmd("DEBUG", "OBJECT", "c", compare=same_debug_object)]
    run_sequence(redis_oracle, cxl, steps, 2, "fills")


@pytest.fixture
def default_limits(redis_oracle, cxl):
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            for name, value in (("set-max-intset-entries", "512"), ("zset-max-listpack-entries", "128"),
                                ("zset-max-listpack-value", "64"), ("list-max-listpack-size", "-2"),
                                ("list-compress-depth", "0")):
                assert conn.request("CONFIG", "SET", name, value) == b"+OK\r\n"


@pytest.mark.usefixtures("default_limits")
def test_limits_choose_the_encoding(redis_oracle, cxl, protocol):
    """RESTORE gives a set or a sorted set the encoding Redis's loading gives it under the
    limits configured now, whatever encoding it was dumped in."""
    ints = [b"%d" % i for i in range(10)]
    pairs = [(b"m%d" % i, float(i)) for i in range(10)]
    steps = []
    for name, value in (("set-max-intset-entries", "5"), ("zset-max-listpack-entries", "5"),
                        ("zset-max-listpack-value", "1")):
        steps.append(("CONFIG", "SET", name, value))
        for key, data in (("intset", dump_set(ints, True)), ("plainset", dump_set(ints, False)),
                          ("strset", dump_set([b"a"], False)), ("lp", dump_zset(pairs, True)),
                          ("sl", dump_zset(pairs, False)), ("short", dump_zset(pairs[:3], False))):
            steps += [("RESTORE", key, "0", data, "REPLACE"), ("OBJECT", "ENCODING", key)]
    run_sequence(redis_oracle, cxl, steps, protocol, "limits")


def test_restore_options(redis_oracle, cxl, protocol):
    """TTL, ABSTTL, REPLACE (of any type: a collection is never merged into), BUSYKEY,
    IDLETIME and FREQ hold for collections as for strings."""
    a_list, a_set, a_zset = dump_list([b"1", b"2"], -2), dump_set([b"x"], False), dump_zset([(b"m", 1.0)], True)
    run_sequence(redis_oracle, cxl, [
        ("RESTORE", "l", "100000", a_list), cmd("PTTL", "l", compare=within(500)),
        ("RESTORE", "l", "0", a_list), ("RESTORE", "l", "0", a_set, "REPLACE"), ("TYPE", "l"), ("TTL", "l"),
        ("RESTORE", "l", "0", a_list, "REPLACE"), ("RESTORE", "l", "0", a_list, "REPLACE"), ("DUMP", "l"),
        ("SET", "s", "v"), ("RESTORE", "s", "4102444800123", a_zset, "ABSTTL", "REPLACE"),
        ("PEXPIRETIME", "s"), ("TYPE", "s"),
        ("RESTORE", "s", "1", a_list, "ABSTTL", "REPLACE"), ("EXISTS", "s"),
        ("RESTORE", "z", "0", a_zset, "IDLETIME", "1000"), ("RESTORE", "z", "0", a_zset, "FREQ", "5", "REPLACE"),
        ("RESTORE", "e", "0", dump_list([b"e"], -2), "IDLETIME", "-1"), ("EXISTS", "e"),
        ("MULTI",), ("RESTORE", "m", "0", a_set), ("RESTORE", "m", "0", a_set), ("EXEC",),
    ], protocol, "restore options")


# ------------------------------------------------------------ encodings only read

def ziplist(elements, count=None):
    """Redis 6's packed encoding: each entry the previous one's size, then a string by its
    length or an integer by its width (0..12 in the encoding byte itself)."""
    entries, previous = [], 0
    for element in elements:
        prevlen = bytes((previous,)) if previous < 254 else b"\xfe" + previous.to_bytes(4, "little")
        number = canonical_int(element)
        if number is not None and 0 <= number <= 12:
            encoded = bytes((0xF1 + number,))
        elif number is not None:
            width, code = next((w, c) for w, c in ((1, 0xFE), (2, 0xC0), (3, 0xF0), (4, 0xD0), (8, 0xE0))
                               if -(1 << (8 * w - 1)) <= number < 1 << (8 * w - 1))
            encoded = bytes((code,)) + number.to_bytes(width, "little", signed=True)
        elif len(element) < 64:
            encoded = bytes((len(element),)) + element
        elif len(element) < 16384:
            encoded = bytes((0x40 | len(element) >> 8, len(element) & 0xFF)) + element
        else:
            encoded = b"\x80" + len(element).to_bytes(4, "big") + element
        entries.append(prevlen + encoded)
        previous = len(entries[-1])
    body = b"".join(entries)
    tail = 10 + len(body) - (len(entries[-1]) if entries else 0)
    return struct.pack("<IIH", 10 + len(body) + 1, tail, len(elements) if count is None else count) + body + b"\xff"


def text_score(score):
    return bytes((len(score),)) + score


MIXED = [b"a", b"12", b"-1", b"300", b"-70000", b"9000000000", b"x" * 70, b"y" * 300, b"7", b""]
OLD_FORMATS = {
    "list": payload(1, encode_length(3) + b"".join(encode_string(e) for e in (b"a", b"1", b"b" * 100))),
    "list ziplist": payload(10, encode_string(ziplist(MIXED))),
    "quicklist of ziplists": payload(14, encode_length(2) + encode_string(ziplist(MIXED[:4]))
                                     + encode_string(ziplist(MIXED[4:]))),
    "quicklist 2, a plain node": payload(18, encode_length(2) + encode_length(1) + encode_string(b"plain")
                                         + encode_length(2) + encode_string(encode_listpack([b"a", b"1"]))),
    "quicklist 2, an empty node": payload(18, encode_length(2) + encode_length(2) + encode_string(encode_listpack([]))
                                          + encode_length(2) + encode_string(encode_listpack([b"a"]))),
    "set of integers": payload(2, encode_length(3) + b"".join(encode_string(m) for m in (b"3", b"1", b"2"))),
    "set of 513 integers": payload(2, encode_length(513) + b"".join(encode_string(b"%d" % i) for i in range(513))),
    "zset, text scores": payload(3, encode_length(5) + b"".join(
        encode_string(m) + s for m, s in ((b"a", text_score(b"1.5")), (b"b", b"\xfe"), (b"c", b"\xff"),
                                          (b"d", text_score(b" 2e3junk")), (b"e", text_score(b"-0"))))),
    "zset ziplist": payload(12, encode_string(ziplist([b"d", b"x", b"a", b"1", b"b", b"2.5", b"c", b"inf"]))),
    "zset listpack, odd scores": payload(17, encode_string(encode_listpack(
        [b"b", b"-inf", b"c", b"nope", b"d", b"  7", b"a", b"1.5e1"]))),
    "zset ziplist past the limit": payload(12, encode_string(ziplist(
        [part for i in range(130) for part in (b"m%d" % i, b"%d" % i)]))),
}


@pytest.mark.parametrize("name", list(OLD_FORMATS))
def test_older_encodings_load(redis_oracle, cxl, protocol, name):
    kind = {1: "list", 10: "list", 14: "list", 18: "list", 2: "set", 3: "zset", 12: "zset", 17: "zset"}
    run_sequence(redis_oracle, cxl, [
        ("RESTORE", "k", "0", OLD_FORMATS[name]), ("OBJECT", "ENCODING", "k"),
        cmd("DUMP", "k", compare=same_contents), *reads_of(kind[OLD_FORMATS[name][0]], "k"),
    ], protocol, name)


# ------------------------------------------------------------ corrupt payloads

def _listpack_patched(elements, offset, value):
    blob = bytearray(encode_listpack(elements))
    blob[offset] = value
    return bytes(blob)


def _corrupt_payloads():
    good_list = dump_list([b"a", b"bb", b"3"], -2)
    intset = lambda width, numbers, count=None: struct.pack("<II", width, len(numbers) if count is None else count) + \
        b"".join(n.to_bytes(width, "little", signed=True) for n in numbers)
    return {
        "truncated": payload(good_list[0], good_list[1:-12]),
        "bad checksum": good_list[:-1] + bytes((good_list[-1] ^ 1,)),
        "list of none": payload(1, encode_length(0)),
        "list short of its count": payload(1, encode_length(3) + encode_string(b"a")),
        "quicklist of none": payload(18, encode_length(0)),
        "quicklist short of its nodes": payload(18, encode_length(3) + encode_length(2)
                                                + encode_string(encode_listpack([b"a"]))),
        "quicklist, a bad container": payload(18, encode_length(1) + encode_length(3)
                                              + encode_string(encode_listpack([b"a"]))),
        "quicklist, an empty blob": payload(18, encode_length(1) + encode_length(2) + encode_string(b"")),
        "quicklist, only empty nodes": payload(18, encode_length(1) + encode_length(2)
                                               + encode_string(encode_listpack([]))),
        "listpack, bad size": payload(18, encode_length(1) + encode_length(2)
                                      + encode_string(_listpack_patched([b"a", b"b"], 0, 99))),
        "listpack, bad count": payload(18, encode_length(1) + encode_length(2)
                                       + encode_string(_listpack_patched([b"a", b"b"], 4, 3))),
        "listpack, bad back length": payload(18, encode_length(1) + encode_length(2)
                                             + encode_string(_listpack_patched([b"a", b"b"], 8, 7))),
        "listpack, no end": payload(18, encode_length(1) + encode_length(2)
                                    + encode_string(_listpack_patched([b"a", b"b"], 12, 0))),
        "listpack, an entry past its end": payload(18, encode_length(1) + encode_length(2)
                                                   + encode_string(_listpack_patched([b"a", b"b"], 6, 0x85))),
        "ziplist, bad previous length": payload(10, encode_string(
            ziplist([b"a", b"b"])[:14] + b"\x05" + ziplist([b"a", b"b"])[15:])),
        "ziplist, bad tail": payload(10, encode_string(ziplist([b"a", b"b"])[:4] + b"\x0a\x00\x00\x00"
                                                       + ziplist([b"a", b"b"])[8:])),
        "ziplist, bad count": payload(10, encode_string(ziplist([b"a", b"b"], count=3))),
        "ziplist, bad encoding": payload(10, encode_string(ziplist([b"a", b"b"])[:11] + b"\xc1"
                                                           + ziplist([b"a", b"b"])[12:])),
        "ziplist of none": payload(10, encode_string(ziplist([]))),
        "set of none": payload(2, encode_length(0)),
        "set, a member twice": payload(2, encode_length(2) + encode_string(b"a") + encode_string(b"a")),
        "set, an integer twice": payload(2, encode_length(2) + encode_string(b"1") + encode_string(b"1")),
        "intset of none": payload(11, encode_string(intset(2, []))),
        "intset, bad width": payload(11, encode_string(intset(3, [1, 2]))),
        "intset, bad count": payload(11, encode_string(intset(2, [1, 2], count=3))),
        "intset, out of order": payload(11, encode_string(intset(2, [2, 1]))),
        "intset, an integer twice": payload(11, encode_string(intset(4, [1, 1]))),
        "intset, short header": payload(11, encode_string(b"\x02\x00\x00")),
        "zset of none": payload(5, encode_length(0)),
        "zset, a member twice": payload(5, encode_length(2) + (encode_string(b"a") + struct.pack("<d", 1)) * 2),
        "zset, a NaN": payload(5, encode_length(1) + encode_string(b"a") + struct.pack("<d", float("nan"))),
        "zset, a score cut short": payload(5, encode_length(1) + encode_string(b"a") + b"\x00\x00"),
        "zset, a text NaN": payload(3, encode_length(1) + encode_string(b"a") + b"\xfd"),
        "zset, text that is no score": payload(3, encode_length(1) + encode_string(b"a") + text_score(b"abc")),
        "zset listpack, odd": payload(17, encode_string(encode_listpack([b"a", b"1", b"b"]))),
        "zset listpack, a member twice": payload(17, encode_string(encode_listpack([b"a", b"1", b"a", b"2"]))),
        "zset listpack of none": payload(17, encode_string(encode_listpack([]))),
        "zset ziplist, odd": payload(12, encode_string(ziplist([b"a", b"1", b"b"]))),
        "zset ziplist, a member twice": payload(12, encode_string(ziplist([b"a", b"1", b"a", b"2"]))),
        "an unknown type": payload(19, encode_length(0)),
    }


CORRUPT = _corrupt_payloads()


def test_corrupt_payloads_are_refused(redis_oracle, cxl, protocol):
    steps = [("SET", "k", "before")]
    for data in CORRUPT.values():
        steps += [("RESTORE", "k", "0", data, "REPLACE"), ("RESTORE", "n", "0", data), ("GET", "k"), ("EXISTS", "n")]
    run_sequence(redis_oracle, cxl, steps, protocol, "corrupt")


def test_mutated_payloads(redis_oracle, cxl):
    """Valid payloads cut short, or with a byte changed (the checksum made right), are
    refused or read alike (what is read is compared through DUMP)."""
    rng = random.Random(7)
    seeds = [dump_list([b"a", b"12", b"x" * 70, b"-3"], -2), dump_set([b"1", b"300", b"70000"], True),
             dump_set([b"ab", b"cd", b"7"], False), dump_zset([(b"a", 1.0), (b"b", 2.5)], True),
             dump_zset([(b"a", 1.0), (b"b", -2.0)], False), OLD_FORMATS["list ziplist"],
             OLD_FORMATS["zset ziplist"], OLD_FORMATS["quicklist of ziplists"]]
    steps = []
    for i in range(300):
        body = bytearray(rng.choice(seeds)[:-10])
        if rng.random() < 0.3:
            del body[rng.randrange(1, len(body)):]
        else:
            body[rng.randrange(1, len(body))] = rng.randrange(256)
        steps += [("RESTORE", f"m{i}", "0", payload(body[0], bytes(body[1:]))),
                  cmd("DUMP", f"m{i}", compare=same_contents)]
    run_sequence(redis_oracle, cxl, steps, 2, "mutations")


# ------------------------------------------------------------ MIGRATE

@pytest.fixture(scope="module")
def target():
    server = ServerProcess("redis", {"rdbcompression": "no"})
    try:
        yield server.start()
    finally:
        server.close()


def test_migrate_to_a_real_redis(redis_oracle, cxl, target):
    """Each type moves from either server into a real redis-server, which then holds the
    same collection, encoding and TTL."""
    rng = random.Random(5)
    values = {
        "list": dump_list([rng.randbytes(rng.randrange(200)) for _ in range(3000)] + [b"b" * 70 * KIB], -2),
        "intset": dump_set([b"%d" % i for i in range(100)], True),
        "hashset": dump_set([b"m%d" % i for i in range(600)], False),
        "listpack": dump_zset([(b"a", 1.0), (b"b", 2.0)], True),
        "skiplist": dump_zset([(b"z%d" % i, i / 3) for i in range(1000)], False),
    }
    steps = [("RESTORE", key, "0", data) for key, data in values.items()]
    steps += [("PEXPIRE", "intset", "100000"),
              ("MIGRATE", "127.0.0.1", "<port>", "", "0", "5000", "KEYS", *values)]
    reads = [("EXISTS", *values), ("PTTL", "intset")]
    for key in values:
        reads += [("OBJECT", "ENCODING", key), ("DUMP", key)]
    results = []
    for source in (redis_oracle, cxl):
        with raw_connection(target.port, timeout=30) as at_target, raw_connection(source.port, timeout=30) as conn:
            at_target.request("FLUSHALL")
            conn.request("FLUSHALL")
            replies = [conn.request(*(str(target.port) if a == "<port>" else a for a in step)) for step in steps]
            replies += [conn.request("EXISTS", *values)]
            replies += [at_target.request(*read) for read in reads]
            results.append(replies)
    reads_start = len(steps) + 1
    for index, (theirs, ours) in enumerate(zip(*results)):
        read = reads[index - reads_start] if index >= reads_start else ()
        compare = within(500) if read[:1] == ("PTTL",) else same_contents if read[:1] == ("DUMP",) else exact
        if not compare(read, theirs, ours):
            raise Mismatch(f"reply {index} {read}: redis-server {theirs[:200]!r}, cxlredis {ours[:200]!r}")
