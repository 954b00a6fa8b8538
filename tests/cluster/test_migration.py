"""DUMP, RESTORE and MIGRATE between cxlredis and a real redis-server 7.0, both ways.

Each direction runs the same expectations: cxlredis's DUMP and MIGRATE against Redis's
RESTORE, and Redis's DUMP and MIGRATE against cxlredis's RESTORE. Both servers require
the password PASSWORD (and have the ACL user USER), as MIGRATE's AUTH and AUTH2 need.
Where the two directions must answer the same, the replies are compared with each other.
"""
import random
import socket
import time

import pytest
import redis

from conftest import ServerProcess, raw_connection
from cxlredis.cluster.migrate import restore_command

MiB = 1 << 20
PASSWORD, USER, USER_PASSWORD = "pw", "mover", "pw2"
TIMEOUT_MS = 300        # for targets that cannot answer: how long MIGRATE waits
BIG = 64 * MiB


class Node:
    """A server under its password: its process, a client, and its MIGRATE address."""

    def __init__(self, server):
        self.server = server
        self.kind = server.kind
        self.port = server.port
        with raw_connection(server.port) as conn:
            assert conn.request("ACL", "SETUSER", USER, "on", ">" + USER_PASSWORD, "~*", "+@all") \
                == b"+OK\r\n"
            assert conn.request("CONFIG", "SET", "requirepass", PASSWORD) == b"+OK\r\n"
        self.r = server.client(password=PASSWORD, socket_timeout=60)

    def __repr__(self):
        return self.kind

    def raw(self, *args):
        """One command's reply bytes, on a connection of its own."""
        with raw_connection(self.port, timeout=60) as conn:
            assert conn.request("AUTH", PASSWORD) == b"+OK\r\n"
            return conn.request(*args)

    def migrate(self, target, key, *options, db=0, timeout=5000, port=None):
        return self.raw("MIGRATE", "127.0.0.1", str(port or target.port), key, str(db),
                        str(timeout), *options)

    def pinned(self):
        """Entries pinned in cxlredis's arena (0 for redis-server)."""
        return self.r.info("arena").get("arena_pinned", 0) if self.kind == "cxlredis" else 0


def start(kind, options):
    server = ServerProcess(kind, options)
    server.start()
    return server


@pytest.fixture(scope="module")
def servers():
    started = [start("cxlredis", {"arena-size": "320mb"}),
               start("redis", {"proto-max-bulk-len": "128mb"})]
    try:
        yield [Node(server) for server in started]
    finally:
        for server in started:
            server.close()


@pytest.fixture(params=["cxlredis-to-redis", "redis-to-cxlredis"])
def pair(request, servers):
    """(source, target) for one direction, both flushed."""
    ours, theirs = servers
    for node in servers:
        node.r.flushall()
    return (ours, theirs) if request.param == "cxlredis-to-redis" else (theirs, ours)


def other_way(servers, source):
    ours, theirs = servers
    return (theirs, ours) if source is ours else (ours, theirs)


def values():
    rng = random.Random(7)
    return {"empty": b"", "1KiB": rng.randbytes(1024), "1MiB": rng.randbytes(MiB),
            "32MiB": rng.randbytes(32 * MiB), "int": b"12345", "negative-int": b"-2147483648",
            "int64": b"9223372036854775807", "int-like": b"007", "text": b"hello world " * 9}


VALUES = values()


# --- DUMP on one side, RESTORE on the other --------------------------------------

@pytest.mark.parametrize("name", list(VALUES))
def test_dumped_strings_restore_byte_identical(pair, name):
    source, target = pair
    value = VALUES[name]
    source.r.set("k", value)
    payload = source.r.dump("k")
    assert target.r.restore("k", 0, payload) == b"OK"
    assert target.r.get("k") == value and target.r.type("k") == b"string"
    assert target.r.ttl("k") == -1
    assert source.pinned() == target.pinned() == 0


def hashes():
    rng = random.Random(11)
    return {
        "small": {b"f": b"v", b"n": b"42", b"": b"empty field", b"neg": b"-7"},
        "many": {b"field:%d" % i: b"%d" % rng.randrange(-10**12, 10**12) for i in range(500)},
        "hashtable": {b"field:%d" % i: rng.randbytes(20) for i in range(3000)},
        "long-values": {b"a": b"1", b"b": rng.randbytes(65), b"c": rng.randbytes(MiB)},
    }


@pytest.mark.parametrize("name", list(hashes()))
def test_dumped_hashes_restore_field_for_field(pair, name):
    source, target = pair
    fields = hashes()[name]
    source.r.hset("h", mapping=fields)
    target.r.restore("h", 0, source.r.dump("h"))
    assert target.r.hgetall("h") == fields and target.r.type("h") == b"hash"


def test_restore_carries_the_ttl_and_replaces(pair):
    source, target = pair
    source.r.set("k", "v1")
    target.r.set("k", "old")
    with pytest.raises(redis.ResponseError, match="^BUSYKEY Target key name already exists.$"):
        target.r.restore("k", 0, source.r.dump("k"))
    target.r.restore("k", 50000, source.r.dump("k"), replace=True)
    assert target.r.get("k") == b"v1" and 40000 < target.r.pttl("k") <= 50000
    at = int(time.time() * 1000) + 60000
    target.r.restore("abs", at, source.r.dump("k"), absttl=True)
    assert target.r.pexpiretime("abs") == at


def test_our_dumps_are_redis_dumps_without_compression(servers):
    """With rdbcompression off Redis writes strings raw, as cxlredis always does: the
    payloads are then the same bytes (hashes: while they are listpacks)."""
    ours, theirs = servers
    theirs.r.config_set("rdbcompression", "no")
    try:
        for name, value in VALUES.items():
            for node in servers:
                node.r.set("k", value)
            assert ours.r.dump("k") == theirs.r.dump("k"), name
        for name in ("small", "many"):
            for node in servers:
                node.r.delete("h")
                node.r.hset("h", mapping=hashes()[name])
            assert theirs.r.object("encoding", "h") == b"listpack"
            assert ours.r.dump("h") == theirs.r.dump("h"), name
    finally:
        theirs.r.config_set("rdbcompression", "yes")


# --- MIGRATE -------------------------------------------------------------------------

def test_migrate_one_key_with_its_ttl(pair):
    source, target = pair
    source.r.set("k", "v", px=100000)
    assert source.migrate(target, "k", "AUTH", PASSWORD, db=3) == b"+OK\r\n"
    assert source.r.exists("k") == 0
    moved = redis.Redis(port=target.port, password=PASSWORD, db=3)
    assert moved.get("k") == b"v" and 90000 < moved.pttl("k") <= 100000
    assert target.r.exists("k") == 0
    assert source.migrate(target, "k", "AUTH", PASSWORD, db=3) == b"+NOKEY\r\n"


def test_migrate_keys_copy_and_replace(pair):
    source, target = pair
    source.r.mset({"a": "1", "b": "2"})
    source.r.hset("h", mapping={"f": "v"})
    reply = source.migrate(target, "", "COPY", "AUTH", PASSWORD, "KEYS", "a", "missing", "h")
    assert reply == b"+OK\r\n"
    assert source.r.exists("a", "b", "h") == 3
    assert target.r.get("a") == b"1" and target.r.hgetall("h") == {b"f": b"v"}
    # Without REPLACE the key the target has is refused; the others move.
    source.r.set("a", "new")
    reply = source.migrate(target, "", "AUTH", PASSWORD, "KEYS", "b", "a")
    assert reply == (b"-ERR Target instance replied with error: BUSYKEY Target key name already "
                     b"exists.\r\n")
    assert source.r.exists("b") == 0 and source.r.get("a") == b"new"
    assert target.r.get("a") == b"1" and target.r.get("b") == b"2"
    assert source.migrate(target, "", "REPLACE", "AUTH", PASSWORD, "KEYS", "a", "h") == b"+OK\r\n"
    assert target.r.get("a") == b"new" and source.r.exists("a", "h") == 0


def test_migrate_authentication_errors_are_the_same_both_ways(servers):
    replies = []
    for source, target in (servers, servers[::-1]):
        for node in servers:
            node.r.flushall()
        drop_links(target)          # a cached connection may be authenticated already
        source.r.set("k", "v")
        replies.append([
            source.migrate(target, "k"),
            source.migrate(target, "k", "AUTH", "wrong"),
            source.migrate(target, "k", "AUTH2", USER, "wrong"),
            source.migrate(target, "k", "AUTH2", "nobody", USER_PASSWORD),
            source.r.exists("k"),
            source.migrate(target, "k", "COPY", "AUTH2", USER, USER_PASSWORD),
            source.migrate(target, "k", "AUTH2", USER, USER_PASSWORD, "REPLACE"),
            source.r.exists("k"), target.r.get("k"),
        ])
    assert replies[0] == replies[1]
    assert replies[0][:5] == [
        b"-ERR Target instance replied with error: NOAUTH Authentication required.\r\n",
        b"-ERR Target instance replied with error: WRONGPASS invalid username-password pair or "
        b"user is disabled.\r\n",
        b"-ERR Target instance replied with error: WRONGPASS invalid username-password pair or "
        b"user is disabled.\r\n",
        b"-ERR Target instance replied with error: WRONGPASS invalid username-password pair or "
        b"user is disabled.\r\n", 1]
    assert replies[0][5:] == [b"+OK\r\n", b"+OK\r\n", 0, b"v"]


@pytest.mark.parametrize("size", [MiB, BIG], ids=["1MiB", "64MiB"])
def test_migrate_large_values(pair, size):
    source, target = pair
    value = random.Random(size).randbytes(size)
    source.r.set("big", value)
    source.r.set("big2", value[:1000])
    reply = source.migrate(target, "", "AUTH", PASSWORD, "KEYS", "big", "big2", timeout=20000)
    assert reply == b"+OK\r\n"
    assert target.r.get("big") == value and target.r.get("big2") == value[:1000]
    assert source.r.exists("big", "big2") == 0
    assert source.pinned() == target.pinned() == 0


def test_migrate_between_two_cxlredis(servers, cxl_factory):
    """cxlredis's RESTORE, as its own MIGRATE sends it outside cluster mode."""
    ours = servers[0]
    ours.r.flushall()
    other = cxl_factory(arena_size="160mb")
    value = random.Random(3).randbytes(BIG)
    ours.r.set("big", value, px=60000)
    ours.r.hset("h", mapping=hashes()["many"])
    reply = ours.migrate(other, "", "KEYS", "big", "h", db=2, timeout=20000)
    assert reply == b"+OK\r\n"
    moved = redis.Redis(port=other.port, db=2, socket_timeout=60)
    assert moved.get("big") == value and 50000 < moved.pttl("big") <= 60000
    assert moved.hgetall("h") == hashes()["many"]
    assert moved.info("commandstats")["cmdstat_restore"]["calls"] == 2
    assert ours.r.exists("big", "h") == 0 and ours.pinned() == 0


# --- targets that cannot take it ---------------------------------------------------

@pytest.fixture
def silent_port():
    """A port that accepts connections (the kernel's backlog) and never reads from them."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


WRITE_ERROR = b"-IOERR error or timeout writing to target instance\r\n"
READ_ERROR = b"-IOERR error or timeout reading to target instance\r\n"
CONNECT_ERROR = b"-IOERR error or timeout connecting to the client\r\n"


def test_unreachable_targets_lose_nothing(pair):
    source, target = pair
    source.r.set("k", "v", px=100000)
    assert source.migrate(target, "k", port=closed_port(), timeout=TIMEOUT_MS) == WRITE_ERROR
    assert source.raw("MIGRATE", "no-such-host.invalid", "6379", "k", "0", "100") == CONNECT_ERROR
    assert source.raw("MIGRATE", "127.0.0.1", "-1", "k", "0", "100") == CONNECT_ERROR
    assert source.r.get("k") == b"v" and source.r.pttl("k") > 0


@pytest.mark.parametrize("size, error", [(10, READ_ERROR), (32 * MiB, WRITE_ERROR)],
                         ids=["small-no-reply", "large-not-read"])
def test_a_target_that_never_answers_times_out(pair, silent_port, size, error):
    source, _ = pair
    value = random.Random(size).randbytes(size)     # Redis would compress a repetitive one
    source.r.set("k", value)
    assert source.migrate(None, "k", port=silent_port, timeout=TIMEOUT_MS) == error
    assert source.r.get("k") == value
    assert source.pinned() == 0


# --- the cached connection ---------------------------------------------------------

def migrate_links(target):
    """The connections on target that MIGRATE made (the last thing they ran is a RESTORE)."""
    return [c for c in target.r.client_list() if c["cmd"] in ("restore", "restore-asking")]


def drop_links(target):
    """Close the MIGRATE connections target has: their sources find out at their next write."""
    for link in migrate_links(target):
        target.r.client_kill_filter(_id=link["id"])


def test_the_connection_is_reused_and_selects_only_when_the_db_changes(servers):
    counts = []
    for source, target in (servers, servers[::-1]):
        for node in servers:
            node.r.flushall()
        source.r.set("warm-up", "v")
        assert source.migrate(target, "warm-up", "AUTH", PASSWORD, db=9) == b"+OK\r\n"
        target.r.config_resetstat()
        ids = set()
        for key, db in (("a", 0), ("b", 0), ("c", 1), ("d", 1), ("e", 0)):
            source.r.set(key, "v")
            assert source.migrate(target, key, "AUTH", PASSWORD, db=db) == b"+OK\r\n"
            ids |= {link["id"] for link in migrate_links(target)}
        stats = target.r.info("commandstats")
        counts.append((len(ids), stats["cmdstat_select"]["calls"], stats["cmdstat_auth"]["calls"]))
    assert counts[0] == counts[1] == (1, 3, 5)


def test_a_connection_the_target_closed_is_made_again(servers):
    for source, target in (servers, servers[::-1]):
        for node in servers:
            node.r.flushall()
        source.r.mset({"a": "1", "b": "2"})
        assert source.migrate(target, "a", "AUTH", PASSWORD) == b"+OK\r\n"
        drop_links(target)
        assert source.migrate(target, "b", "AUTH", PASSWORD) == b"+OK\r\n"
        assert target.r.mget("a", "b") == [b"1", b"2"]


def test_an_io_error_drops_the_connection(servers):
    """A target busy past the timeout (DEBUG SLEEP) fails MIGRATE: the key stays, the
    connection is closed, and the next MIGRATE makes a new one."""
    for source, target in (servers, servers[::-1]):
        for node in servers:
            node.r.flushall()
        source.r.mset({"a": "1", "b": "2"})
        assert source.migrate(target, "a", "AUTH", PASSWORD) == b"+OK\r\n"
        (before,) = migrate_links(target)
        with raw_connection(target.port, timeout=10) as busy:
            assert busy.request("AUTH", PASSWORD) == b"+OK\r\n"
            busy.send(b"DEBUG SLEEP 2\r\n")
            time.sleep(0.2)         # the target is asleep before MIGRATE writes to it
            assert source.migrate(target, "b", "AUTH", PASSWORD, timeout=TIMEOUT_MS) == READ_ERROR
            assert busy.read_reply() == b"+OK\r\n"
        assert source.r.get("b") == b"2"
        assert source.migrate(target, "b", "AUTH", PASSWORD, "REPLACE") == b"+OK\r\n"
        (after,) = migrate_links(target)
        assert after["id"] != before["id"]


@pytest.mark.timeout(60)
def test_an_idle_connection_is_closed_after_ten_seconds(servers):
    ours, theirs = servers
    drop_links(theirs)
    ours.r.set("k", "v")
    assert ours.migrate(theirs, "k", "AUTH", PASSWORD, "REPLACE") == b"+OK\r\n"
    assert len(migrate_links(theirs)) == 1
    deadline = time.monotonic() + 30
    while migrate_links(theirs) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert migrate_links(theirs) == []


# --- tenants ---------------------------------------------------------------------

TENANT_CONF = [
    "tenant team-a users alice",
    "tenant team-b quota 4mb users bob",
    "user alice on >pw ~* &* +@all",
    "user bob on >pw ~* &* +@all",
]


@pytest.fixture
def tenant_server(tmp_path):
    conf = tmp_path / "tenants.conf"
    conf.write_text("".join(line + "\n" for line in TENANT_CONF))
    server = ServerProcess("cxlredis", conf=conf)
    try:
        yield server.start()
    finally:
        server.close()


def as_user(server, name):
    return redis.Redis(port=server.port, username=name, password="pw", socket_timeout=30)


def test_a_tenant_dumps_and_restores_in_its_own_namespace(tenant_server):
    alice, bob = as_user(tenant_server, "alice"), as_user(tenant_server, "bob")
    admin = redis.Redis(port=tenant_server.port)
    alice.set("k", "alice's")
    assert bob.dump("k") is None and admin.dump("k") is None
    payload = alice.dump("k")
    bob.restore("k", 0, payload)
    admin.restore("k", 0, payload)
    bob.set("k", "bob's")
    assert (alice.get("k"), bob.get("k"), admin.get("k")) == (b"alice's", b"bob's", b"alice's")
    with pytest.raises(redis.ResponseError, match="^BUSYKEY"):
        bob.restore("k", 0, payload)


def test_restore_respects_the_tenant_quota(tenant_server):
    alice, bob = as_user(tenant_server, "alice"), as_user(tenant_server, "bob")
    alice.set("big", b"x" * (6 * MiB))
    with raw_connection(tenant_server.port, timeout=30) as conn:
        assert conn.request("AUTH", "bob", "pw") == b"+OK\r\n"
        reply = conn.request("RESTORE", "big", "0", alice.dump("big"))
    assert reply == b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    assert bob.exists("big") == 0 and alice.strlen("big") == 6 * MiB


def test_a_tenant_migrates_only_its_own_keys(tenant_server, servers):
    theirs = servers[1]
    theirs.r.flushall()
    alice = as_user(tenant_server, "alice")
    alice.set("k", "alice's")
    for user, reply in (("bob", b"+NOKEY\r\n"), ("alice", b"+OK\r\n")):
        with raw_connection(tenant_server.port) as conn:
            assert conn.request("AUTH", user, "pw") == b"+OK\r\n"
            assert conn.request("MIGRATE", "127.0.0.1", theirs.port, "k", 0, 5000,
                                "AUTH", PASSWORD) == reply
    assert theirs.r.get("k") == b"alice's" and alice.exists("k") == 0


# --- the wire form ---------------------------------------------------------------

def test_a_large_body_is_sent_as_it_is():
    body = memoryview(bytes(100))
    buffers = restore_command(b"key", 5, b"\x00\x80", body, b"FOOTER....", True, 100, True)
    assert buffers[1] is body
    small = restore_command(b"key", 5, b"\x00\x80", body, b"FOOTER....", True, 101, True)
    assert len(small) == 1
    expected = (b"*5\r\n$14\r\nRESTORE-ASKING\r\n$3\r\nkey\r\n$1\r\n5\r\n$112\r\n\x00\x80"
                + bytes(100) + b"FOOTER....\r\n$7\r\nREPLACE\r\n")
    assert b"".join(bytes(b) for b in buffers) == bytes(small[0]) == expected
    standalone = restore_command(b"key", 5, b"\x00\x80", body, b"FOOTER....", False, 101, False)
    assert bytes(standalone[0]).startswith(b"*4\r\n$7\r\nRESTORE\r\n$3\r\nkey\r\n")
