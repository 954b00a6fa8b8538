"""Client-side caching (CLIENT TRACKING), replayed on redis-server and cxlredis; every
reply and every invalidation message must match, byte for byte.

Three connections per server: conn 0 tracks, conn 1 is a redirect target or another
writer, conn 2 another writer. A sequence names which connections speak RESP3. `ID1`
in a command stands for conn 1's client id, and a client id in a reply is shown as
`<id n>`, since the two servers number their clients differently. `heard(n, k)`
reads k messages conn n got without sending anything; `close(n)` closes conn n.
After the steps every connection is PINGed, so a message one server sent and the
other did not shows as a mismatch.
"""
import time

import pytest

from conftest import ReplyTimeout, encode_command, raw_connection

pytestmark = pytest.mark.usefixtures("flushed")

ID1 = object()


def cmd(*args, conn=0, replies=1):
    return ("cmd", conn, args, replies)


def heard(conn, messages=1):
    return ("heard", conn, (), messages)


def close(conn):
    return ("close", conn, (), 0)


def pause(seconds):
    return ("pause", seconds, (), 0)


def transcript(server, resp3, steps):
    conns = [raw_connection(server.port) for _ in range(3)]
    try:
        for n in resp3:
            conns[n].request("HELLO", "3")
        ids = [int(conn.request("CLIENT", "ID")[1:-2]) for conn in conns]
        shown = []
        open_conns = set(range(3))

        def show(reply):
            for n, ident in enumerate(ids):
                reply = reply.replace(b":%d\r\n" % ident, b":<id %d>\r\n" % n)
            return reply

        for kind, conn, args, replies in steps:
            if kind == "pause":
                time.sleep(conn)
                continue
            if kind == "close":
                conns[conn].close()
                open_conns.discard(conn)
                wait_gone(server, ids[conn])
                continue
            if kind == "cmd":
                argv = [str(ids[1]) if arg is ID1 else arg for arg in args]
                conns[conn].send(encode_command(*argv))
            got = []
            for _ in range(replies):
                try:
                    got.append(show(conns[conn].read_reply(timeout=2)))
                except ReplyTimeout:
                    got.append(b"<nothing>")
            shown.append((kind, conn, args, got))
        for n in sorted(open_conns):
            shown.append(("final", n, ("PING",), [show(conns[n].request("PING"))]))
        return shown
    finally:
        for conn in conns:
            conn.close()


def wait_gone(server, ident):
    """Until the server has seen client ident's connection close."""
    with raw_connection(server.port) as watcher:
        deadline = time.monotonic() + 5
        while b"id=" in watcher.request("CLIENT", "LIST", "ID", str(ident)):
            assert time.monotonic() < deadline, f"client {ident} still listed"
            time.sleep(0.01)


def compare(oracle, cxl, resp3, steps):
    expected = transcript(oracle, resp3, steps)
    # a sequence's heard() steps are where Redis sends something: none may be empty
    assert not [step for step in expected if step[0] == "heard" and b"<nothing>" in step[3]], expected
    actual = transcript(cxl, resp3, steps)
    for want, got in zip(expected, actual):
        assert want == got, f"step {want[:3]}: redis {want[3]!r}, cxlredis {got[3]!r}"
    assert len(expected) == len(actual)


WRITES = [
    cmd("CLIENT", "TRACKING", "ON"),
    cmd("GET", "a"),
    cmd("MGET", "b", "c"),
    cmd("SET", "a", "1", conn=1),
    heard(0),
    cmd("MSET", "b", "1", "c", "2", conn=1),
    heard(0, 2),
    cmd("SET", "a", "2", conn=1),           # forgotten after its invalidation: nothing
    cmd("GET", "a"),
    cmd("DEL", "a", conn=1),
    heard(0),
    cmd("GET", "a"),
    cmd("DEL", "a", conn=2),                # nothing deleted: nothing sent
    cmd("SET", "a", "x", "NX", conn=1),
    heard(0),
    cmd("GET", "a"),
    cmd("SET", "a", "y", "NX", conn=1),     # not set: nothing sent
    cmd("EXPIRE", "a", "100", conn=1),
    heard(0),
    cmd("TTL", "a"),
    cmd("PERSIST", "a", conn=1),
    heard(0),
    cmd("STRLEN", "a"),
    cmd("APPEND", "a", "z", conn=2),
    heard(0),
    cmd("HGET", "h", "f"),
    cmd("HSET", "h", "f", "v", conn=1),
    heard(0),
    cmd("HGETALL", "h"),
    cmd("HDEL", "h", "nofield", conn=1),
    cmd("HINCRBY", "h", "n", "1", conn=1),
    heard(0),
    cmd("EXISTS", "a", "h"),
    cmd("RENAME", "a", "h", conn=1),
    heard(0, 2),
    cmd("GET", "h"),
    cmd("SELECT", "1", conn=1),             # the db is no part of a tracked key
    cmd("SET", "h", "other db", conn=1),
    heard(0),
    cmd("GET", "own"),
    cmd("SET", "own", "mine"),              # its own write: after the reply
    heard(0),
    cmd("GET", "never"),
    cmd("SET", "never", "v", "PXAT", "1", conn=1),      # absent before and after, yet told
    heard(0),
    cmd("GET", "own"),
    cmd("SET", "own", "v", "PXAT", "1", conn=2),        # it existed: told once
    heard(0),
    cmd("INCR", "n"),
    cmd("GET", "n"),
    cmd("INCR", "n"),
    heard(0),
]

SEQUENCES = {
    "writes invalidate": (WRITES, (0,)),
    "noloop": ([
        cmd("CLIENT", "TRACKING", "ON", "NOLOOP"),
        cmd("GET", "a"),
        cmd("SET", "a", "1"),
        cmd("GET", "a"),
        cmd("SET", "a", "2", conn=1),
        heard(0),
    ], (0,)),
    "optin": ([
        cmd("CLIENT", "TRACKING", "ON", "OPTIN"),
        cmd("GET", "a"),
        cmd("SET", "a", "1", conn=1),
        cmd("CLIENT", "CACHING", "YES"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("GET", "a"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("SET", "a", "2", conn=1),
        heard(0),
        cmd("CLIENT", "CACHING", "YES"),
        cmd("PING"),                        # any command but CLIENT ends CACHING yes
        cmd("GET", "a"),
        cmd("SET", "a", "3", conn=1),
        cmd("CLIENT", "CACHING", "YES"),
        cmd("CLIENT", "ID"),
        cmd("GET", "a"),
        cmd("SET", "a", "4", conn=1),
        heard(0),
        cmd("CLIENT", "CACHING", "YES"),
        cmd("MULTI"),
        cmd("GET", "a"),
        cmd("GET", "b"),
        cmd("EXEC"),
        cmd("MSET", "a", "5", "b", "6", conn=1),
        heard(0, 2),
        cmd("CLIENT", "CACHING", "NO"),
    ], (0,)),
    "optout": ([
        cmd("CLIENT", "TRACKING", "ON", "OPTOUT"),
        cmd("GET", "a"),
        cmd("CLIENT", "CACHING", "NO"),
        cmd("GET", "b"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("MSET", "a", "1", "b", "2", conn=1),
        heard(0),
        cmd("CLIENT", "CACHING", "YES"),
        cmd("CLIENT", "TRACKINGINFO"),
    ], (0,)),
    "redirect to a RESP2 subscriber": ([
        cmd("SUBSCRIBE", "__redis__:invalidate", conn=1),
        cmd("CLIENT", "TRACKING", "ON", "REDIRECT", ID1),
        cmd("CLIENT", "GETREDIR"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("GET", "a"),
        cmd("SET", "a", "1", conn=2),
        heard(1),
        cmd("GET", "a"),
        cmd("SET", "a", "2"),
        heard(1),
        cmd("FLUSHALL", conn=2),
        heard(1),
        close(1),
        cmd("GET", "a"),
        cmd("SET", "a", "3", conn=2),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("CLIENT", "GETREDIR"),
    ], ()),
    "redirect, RESP3 client": ([
        cmd("CLIENT", "TRACKING", "ON", "REDIRECT", ID1),
        cmd("GET", "a"),
        cmd("SET", "a", "1", conn=2),
        heard(1),
        close(1),
        cmd("GET", "a"),
        cmd("SET", "a", "2", conn=2),
        heard(0),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("CLIENT", "TRACKING", "ON"),   # a new ON clears the broken redirect
        cmd("CLIENT", "TRACKINGINFO"),
    ], (0, 1)),
    "redirect to a RESP2 client not subscribed": ([
        cmd("CLIENT", "TRACKING", "ON", "REDIRECT", ID1),
        cmd("GET", "a"),
        cmd("SET", "a", "1", conn=2),
        cmd("GET", "a", conn=1),
    ], ()),
    "bcast": ([
        cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "y", "PREFIX", "x"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("MSET", "yb", "1", "xb", "2", "zc", "3", "xa", "4", conn=1),
        heard(0, 2),
        cmd("SET", "x1", "mine"),
        heard(0),
        cmd("GET", "xa"),
        cmd("DEL", "nothing", "zc", conn=1),
        cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "w"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("SET", "wow", "1", conn=2),
        heard(0),
        cmd("CLIENT", "TRACKING", "OFF"),
        cmd("SET", "wow", "2", conn=2),
        cmd("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("SET", "k1", "mine"),
        cmd("MSET", "k1", "theirs", "k2", "x", conn=1),
        heard(0),
        cmd("FLUSHDB", conn=1),
        heard(0),
    ], (0,)),
    "flush": ([
        cmd("CLIENT", "TRACKING", "ON"),
        cmd("GET", "a"),
        cmd("FLUSHDB", conn=1),
        heard(0),
        cmd("SET", "a", "1", conn=1),     # the flush forgot every key
        cmd("FLUSHALL"),
        heard(0),
        cmd("FLUSHALL", "ASYNC", conn=2),
        heard(0),
    ], (0,)),
    "scripts remember their declared keys": ([
        cmd("CLIENT", "TRACKING", "ON"),
        cmd("EVAL", "redis.call('get', KEYS[1]); redis.call('set', KEYS[1], 'x'); return 1", "1", "s"),
        cmd("SET", "s", "1", conn=1),
        heard(0),
        cmd("EVAL", "return redis.call('get', 'undeclared')", "0"),
        cmd("SET", "undeclared", "1", conn=1),
        cmd("EVAL_RO", "return 1", "1", "ro"),
        cmd("SET", "ro", "1", conn=1),
        cmd("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "ro"),
        cmd("SET", "ro", "2", conn=1),
        heard(0),
    ], (0,)),
    "transactions": ([
        cmd("CLIENT", "TRACKING", "ON"),
        cmd("MULTI"),
        cmd("GET", "a"),
        cmd("SET", "a", "2"),
        cmd("GET", "a"),
        cmd("EXEC"),
        heard(0),
        cmd("SET", "a", "3", conn=1),
        heard(0),
    ], (0,)),
    "lazy expiry": ([
        cmd("CLIENT", "TRACKING", "ON"),
        cmd("SET", "e", "v", "PX", "50", conn=1),
        cmd("GET", "e"),
        pause(0.3),
        cmd("GET", "e", conn=2),
        heard(0),
    ], (0,)),
    "off, reset and disconnect": ([
        cmd("CLIENT", "TRACKING", "ON"),
        cmd("GET", "a"),
        cmd("CLIENT", "TRACKING", "OFF"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("CLIENT", "GETREDIR"),
        cmd("SET", "a", "1", conn=1),
        cmd("CLIENT", "TRACKING", "ON"),
        cmd("GET", "b"),
        cmd("RESET"),
        cmd("HELLO", "3"),
        cmd("CLIENT", "TRACKINGINFO"),
        cmd("SET", "b", "1", conn=1),
        cmd("CLIENT", "TRACKING", "ON", conn=1),
        cmd("GET", "c", conn=1),
        close(1),
        cmd("SET", "c", "1", conn=2),
    ], (0, 1)),
}

ERRORS = [
    cmd("CLIENT", "TRACKING"),
    cmd("CLIENT", "TRACKING", "maybe"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "x"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "0"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "-1"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "99999999"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "9223372036854775808"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "9223372036854775807"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "-9223372036854775808"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", " 1"),
    cmd("CLIENT", "TRACKING", "ON", "REDIRECT", ID1, "REDIRECT", ID1),
    cmd("CLIENT", "TRACKING", "OFF", "REDIRECT", "99999999"),
    cmd("CLIENT", "TRACKING", "ON", "PREFIX"),
    cmd("CLIENT", "TRACKING", "ON", "PREFIX", "a"),
    cmd("CLIENT", "TRACKING", "ON", "NOSUCH"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "OPTOUT"),
    cmd("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "a"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "", "PREFIX", "b"),
    cmd("CLIENT", "TRACKINGINFO"),
    cmd("CLIENT", "CACHING", "YES"),
    cmd("CLIENT", "CACHING"),
    cmd("CLIENT", "GETREDIR", "extra"),
    cmd("CLIENT", "TRACKINGINFO", "extra"),
    cmd("CLIENT", "TRACKING", "on", "optin"),
    cmd("CLIENT", "CACHING", "NO"),
    cmd("CLIENT", "CACHING", "maybe"),
    cmd("CLIENT", "TRACKING", "ON", "OPTOUT"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST"),
    cmd("CLIENT", "TRACKING", "ON", "NOLOOP", "OPTIN"),
    cmd("CLIENT", "TRACKINGINFO"),
    cmd("CLIENT", "TRACKING", "OFF"),
    cmd("CLIENT", "CACHING", "YES"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "abc"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "ab"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "x"),
    cmd("CLIENT", "TRACKING", "ON", "OPTIN"),
    cmd("CLIENT", "TRACKINGINFO"),
    cmd("MULTI"),
    cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "y"),
    cmd("CLIENT", "TRACKINGINFO"),
    cmd("EXEC"),
]
SEQUENCES["errors and state"] = (ERRORS, ())


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_tracking_sequence(redis_oracle, cxl, name, protocol):
    steps, resp3 = SEQUENCES[name]
    if protocol == 3:
        resp3 = tuple(sorted(set(resp3) | {0}))
    compare(redis_oracle, cxl, resp3, steps)


def test_command_docs_and_config_like_redis(redis_oracle, cxl):
    for argv in (("COMMAND", "INFO", "client|tracking", "client|caching",
                                       "client|getredir", "client|trackinginfo"),
                 ("COMMAND", "DOCS", "client|tracking", "client|caching"),
                 ("CONFIG", "GET", "tracking-table-max-keys")):
        with raw_connection(redis_oracle.port) as a, raw_connection(cxl.port) as b:
            assert a.request(*argv) == b.request(*argv), argv
