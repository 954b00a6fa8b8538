"""Connection, transaction and server commands, errors, arity and the RESP
framing, replayed on redis-server and cxlredis; every reply must match."""
import pytest

from conftest import TARGET, encode_command, parse_reply, raw_connection
from diff_harness import CORE_COMMANDS, NEWER_THAN_ORACLE, cmd, raw, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

SEQUENCES = {
    "ping echo": [
        ("PING",),
        ("PING", "hello"),
        ("PING", ""),
        ("PING", b"\x00\r\n"),
        ("ping",),
        ("PING", "a", "b"),
        ("ECHO", "x"),
        ("ECHO", ""),
        ("ECHO", b"bin\x00\xff\r\n"),
        ("ECHO",),
        ("ECHO", "a", "b"),
    ],
    "hello": [
        ("HELLO",),
        ("HELLO", "2"),
        ("GET", "missing"),
        ("HELLO", "3"),
        ("GET", "missing"),
        ("HELLO", "3", "SETNAME", "myname"),
        ("CLIENT", "GETNAME"),
        ("HELLO", "2", "SETNAME", "bad name"),
        ("HELLO", "2", "SETNAME", "bad\nname"),
        ("CLIENT", "GETNAME"),
        ("HELLO", "2", "SETNAME"),
        ("HELLO", "3", "FOO"),
        ("HELLO", "3", "SETNAME", "a", "FOO"),
        ("HELLO", "4"),
        ("HELLO", "1"),
        ("HELLO", "0"),
        ("HELLO", "-1"),
        ("HELLO", "x"),
        ("HELLO", "3.0"),
        ("HELLO", "99999999999999999999"),
        ("HELLO", "2", "setname", "lower"),
        ("CLIENT", "GETNAME"),
        ("GET", "missing"),
    ],
    "quit": [
        ("SET", "k", "v"),
        cmd("QUIT", closes=True),
        cmd("GET", "k", conn=1),
        cmd("QUIT", "extra", "args", conn=1, closes=True),
    ],
    "reset": [
        ("SELECT", "1"),
        ("SET", "k", "db1"),
        ("CLIENT", "SETNAME", "before"),
        ("HELLO", "3"),
        ("CLIENT", "REPLY", "ON"),
        ("MULTI",),
        ("SET", "x", "1"),
        ("RESET",),
        ("GET", "k"),
        ("EXISTS", "x"),
        ("CLIENT", "GETNAME"),
        ("GET", "missing"),
        ("EXEC",),
        ("WATCH", "k"),
        ("RESET",),
        ("MULTI",),
        cmd("SET", "k", "changed", conn=1),
        ("EXEC",),
        ("RESET", "x"),
        ("reset",),
    ],
    "client names": [
        ("CLIENT", "GETNAME"),
        ("CLIENT", "SETNAME", "abc"),
        ("CLIENT", "GETNAME"),
        ("CLIENT", "SETNAME", "a b"),
        ("CLIENT", "SETNAME", "a\nb"),
        ("CLIENT", "SETNAME", b"\xff"),
        ("CLIENT", "SETNAME", "~!@#$%^&*()_+-=[]{}|;:,.<>/?"),
        ("CLIENT", "GETNAME"),
        ("CLIENT", "SETNAME", ""),
        ("CLIENT", "GETNAME"),
        ("CLIENT", "setname", "lower"),
        ("client", "getname"),
        ("CLIENT", "SETNAME"),
        ("CLIENT", "SETNAME", "a", "b"),
        ("CLIENT", "GETNAME", "x"),
    ],
    "client no-evict reply": [
        ("CLIENT", "NO-EVICT", "on"),
        ("CLIENT", "NO-EVICT", "OFF"),
        ("CLIENT", "NO-EVICT", "maybe"),
        ("CLIENT", "NO-EVICT"),
        ("CLIENT", "REPLY", "ON"),
        cmd("CLIENT", "REPLY", "OFF", replies=0),
        cmd("SET", "k", "1", replies=0),
        cmd("GET", "k", replies=0),
        cmd("NOSUCHCOMMAND", replies=0),
        ("CLIENT", "REPLY", "ON"),
        ("GET", "k"),
        cmd("CLIENT", "REPLY", "SKIP", replies=0),
        cmd("INCR", "k", replies=0),
        ("INCR", "k"),
        cmd("CLIENT", "REPLY", "SKIP", replies=0),
        ("CLIENT", "REPLY", "ON"),
        ("CLIENT", "REPLY", "FOO"),
        ("CLIENT", "REPLY"),
        ("CLIENT", "REPLY", "ON", "x"),
    ],
    "client id info kill list": [
        ("CLIENT", "ID"),
        ("CLIENT", "INFO"),
        ("CLIENT", "SETNAME", "named"),
        ("SELECT", "3"),
        ("CLIENT", "INFO"),
        ("MULTI",),
        ("CLIENT", "INFO"),
        ("EXEC",),
        ("CLIENT", "KILL", "1.2.3.4:5"),
        ("CLIENT", "KILL", "ID", "999999999"),
        ("CLIENT", "KILL", "ID", "x"),
        ("CLIENT", "KILL", "FOO", "bar"),
        ("CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "maybe"),
        ("CLIENT", "KILL", "TYPE", "nosuchtype"),
        ("CLIENT", "KILL"),
        ("CLIENT", "LIST", "TYPE", "foo"),
        ("CLIENT", "LIST", "ID", "abc"),
        ("CLIENT", "LIST", "FOO"),
        ("CLIENT", "ID", "x"),
        ("CLIENT", "INFO", "x"),
    ],
    "multi exec": [
        ("MULTI",),
        ("SET", "a", "1"),
        ("INCR", "a"),
        ("GET", "a"),
        ("TTL", "a"),
        ("EXPIRE", "a", "100"),
        ("TTL", "a"),
        ("EXEC",),
        ("MULTI",),
        ("EXEC",),
        ("MULTI",),
        ("PING",),
        ("ECHO", "x"),
        ("GET", "missing"),
        ("EXEC",),
        ("multi",),
        ("exec",),
    ],
    "multi errors": [
        ("EXEC",),
        ("DISCARD",),
        ("MULTI",),
        ("MULTI",),
        ("SET", "a", "1"),
        ("EXEC",),
        ("MULTI",),
        ("SET", "a"),
        ("SET", "b", "2"),
        ("EXEC",),
        ("EXISTS", "b"),
        ("MULTI",),
        ("NOSUCHCOMMAND", "x"),
        ("EXEC",),
        ("MULTI",),
        ("SET", "a", "x"),
        ("INCR", "a"),
        ("GET", "a"),
        ("SET", "a", "v", "EX", "0"),
        ("EXEC",),
        ("MULTI",),
        ("WATCH", "a"),
        ("UNWATCH",),
        ("EXEC",),
        ("MULTI",),
        ("SET", "a", "1"),
        ("DISCARD",),
        ("GET", "a"),
        ("DISCARD",),
        ("MULTI", "x"),
        ("EXEC", "x"),
        ("DISCARD", "x"),
        ("MULTI",),
        ("EXEC", "x"),
        ("EXEC",),
        ("MULTI",),
        ("SELECT", "1"),
        ("SET", "a", "in db1"),
        ("EXEC",),
        ("GET", "a"),
        ("SELECT", "99"),
        ("MULTI",),
        ("SELECT", "99"),
        ("EXEC",),
        ("MULTI",),
        ("FLUSHALL",),
        ("DBSIZE",),
        ("EXEC",),
    ],
    "watch": [
        ("SET", "a", "1"),
        ("WATCH", "a"),
        ("MULTI",),
        ("INCR", "a"),
        ("EXEC",),
        ("WATCH", "a"),
        cmd("SET", "a", "changed", conn=1),
        ("MULTI",),
        ("INCR", "a"),
        ("EXEC",),
        ("GET", "a"),
        ("WATCH", "a"),
        cmd("GET", "a", conn=1),
        ("MULTI",),
        ("SET", "a", "2"),
        ("EXEC",),
        ("WATCH", "a"),
        ("UNWATCH",),
        cmd("SET", "a", "3", conn=1),
        ("MULTI",),
        ("GET", "a"),
        ("EXEC",),
        ("WATCH", "new"),
        cmd("SET", "new", "1", conn=1),
        ("MULTI",),
        ("GET", "new"),
        ("EXEC",),
        ("WATCH", "a"),
        ("SET", "a", "self"),
        ("MULTI",),
        ("GET", "a"),
        ("EXEC",),
        ("WATCH", "a", "b", "c"),
        cmd("DEL", "c", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "a"),
        cmd("SELECT", "1", conn=1),
        cmd("SET", "a", "other db", conn=1),
        ("MULTI",),
        ("GET", "a"),
        ("EXEC",),
        ("WATCH", "a"),
        cmd("EXPIRE", "a", "100", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "a"),
        ("WATCH", "a"),
        ("DISCARD",),
        ("MULTI",),
        ("DISCARD",),
        ("WATCH",),
        ("UNWATCH", "x"),
        ("UNWATCH",),
    ],
    "watch and flush, swap, rename, move": [
        ("MSET", "a", "1", "b", "2"),
        ("WATCH", "a"),
        cmd("FLUSHALL", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("MSET", "a", "1", "b", "2"),
        ("WATCH", "a"),
        cmd("RENAME", "b", "a", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "a"),
        cmd("MOVE", "a", "1", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "missing"),
        cmd("FLUSHDB", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("SET", "a", "1"),
        ("WATCH", "a"),
        cmd("SWAPDB", "0", "1", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("SET", "a", "1"),
        ("WATCH", "a"),
        cmd("GETDEL", "missing", conn=1),
        cmd("SET", "a", "1", "XX", "GET", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
    ],
    "time lastsave config": [
        ("TIME",),
        ("TIME", "x"),
        ("LASTSAVE",),
        ("LASTSAVE", "x"),
        ("CONFIG", "GET", "databases"),
        ("CONFIG", "GET", "DATABASES"),
        ("CONFIG", "GET", "proto-max-bulk-len"),
        ("CONFIG", "GET", "client-query-buffer-limit"),
        ("CONFIG", "GET", "loglevel"),
        ("CONFIG", "GET", "logfile"),
        ("CONFIG", "GET", "maxmemory-samples"),
        ("CONFIG", "GET", "databases", "loglevel"),
        ("CONFIG", "GET", "databases", "databases"),
        ("CONFIG", "GET", "no-such-option"),
        ("CONFIG", "GET", "no-such-*"),
        ("CONFIG", "GET", "databas?s"),
        ("CONFIG", "GET"),
        ("CONFIG", "SET", "no-such-option", "1"),
        ("CONFIG", "SET", "maxmemory-policy", "bad"),
        ("CONFIG", "SET", "maxmemory-samples", "x"),
        ("CONFIG", "SET", "databases", "5"),
        ("CONFIG", "SET", "maxmemory-samples", "7"),
        ("CONFIG", "GET", "maxmemory-samples"),
        ("CONFIG", "SET", "maxmemory-samples", "5"),
        ("CONFIG", "SET", "maxmemory-samples"),
        ("CONFIG", "SET", "maxmemory-samples", "5", "loglevel"),
        ("CONFIG", "SET"),
        ("CONFIG", "RESETSTAT"),
        ("CONFIG", "RESETSTAT", "x"),
        ("CONFIG", "REWRITE"),
        ("CONFIG", "FOO"),
        ("CONFIG",),
    ],
    "function flush debug sleep": [
        ("FUNCTION", "FLUSH"),
        ("FUNCTION", "FLUSH", "ASYNC"),
        ("FUNCTION", "FLUSH", "SYNC"),
        ("FUNCTION", "FLUSH", "sync"),
        ("FUNCTION", "FLUSH", "FOO"),
        ("FUNCTION", "FLUSH", "SYNC", "ASYNC"),
        ("FUNCTION", "FOO"),
        ("FUNCTION",),
        ("DEBUG", "SLEEP", "0"),
        ("DEBUG", "SLEEP", "0.01"),
        ("DEBUG", "sleep", "0"),
        ("DEBUG",),
    ],
    "info sections": [
        ("MSET", "a", "1", "b", "2"),
        ("EXPIRE", "a", "1000"),
        ("SELECT", "2"),
        ("SET", "c", "3"),
        ("INFO", "server"),
        ("INFO", "clients"),
        ("INFO", "memory"),
        ("INFO", "persistence"),
        ("INFO", "stats"),
        ("INFO", "replication"),
        ("INFO", "cpu"),
        ("INFO", "commandstats"),
        ("INFO", "errorstats"),
        ("INFO", "keyspace"),
        ("INFO", "KEYSPACE"),
        ("INFO", "keyspace", "server"),
        ("INFO", "nosuchsection"),
    ],
    "command subcommands": [
        ("COMMAND", "COUNT"),
        ("COMMAND", "LIST"),
        ("COMMAND", "LIST", "FILTERBY", "PATTERN", "get*"),
        ("COMMAND", "INFO", "get", "set", "nosuchcommand"),
        ("COMMAND", "INFO", "GET"),
        ("COMMAND", "INFO", "client|setname", "config|get"),
        ("COMMAND", "DOCS", "get"),
        ("COMMAND", "DOCS", "nosuchcommand"),
        ("COMMAND", "GETKEYS", "SET", "a", "b"),
        ("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"),
        ("COMMAND", "GETKEYS", "COPY", "a", "b", "DB", "1"),
        ("COMMAND", "GETKEYS", "RENAME", "a", "b"),
        ("COMMAND", "GETKEYS", "DEL", "a", "b", "c"),
        ("COMMAND", "GETKEYS", "OBJECT", "ENCODING", "k"),
        ("COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"),
        ("COMMAND", "GETKEYS", "GET"),
        ("COMMAND", "GETKEYS", "MSET", "a"),
        ("COMMAND", "GETKEYS", "PING"),
        ("COMMAND", "GETKEYS", "NOSUCHCOMMAND", "a"),
        ("COMMAND", "GETKEYS"),
        ("COMMAND", "COUNT", "x"),
        ("COMMAND", "FOO"),
    ],
    "unknown commands": [
        ("FOO",),
        ("FOO", "a", "b"),
        ("foo", "A"),
        ("FOO", "a b", "c"),
        ("FOO", "x" * 200),
        ("FOO", *["arg%d" % i for i in range(40)]),
        ("FO\r\nO", "x\ny"),
        ("",),
        ("HSETX", "h", "f"),
        ("GETT", "k"),
        ("CLIENT", "FOO"),
        ("CLIENT", "foo", "bar"),
        ("OBJECT", "FOO", "k"),
        ("CONFIG", "FOO"),
        ("COMMAND", "FOO"),
        ("MEMORY", "FOO"),
        ("FUNCTION", "FOO"),
        ("CLIENT", "x" * 200),
        ("PING",),
    ],
    # Redis quotes names and arguments with printf's %.128s: 128 bytes at most, cut at a
    # NUL, and bytes that are not UTF-8 as they came
    "names and arguments quoted in errors as bytes": [
        (b"AB\x00CD", b"x\x00y", b"\xc3\xa9\xc7"),
        (b"x\xc3\xa9", b"\xc3\xa9" * 70),
        (b"cl\xc3\xa9nt", b"x" * 200),
        (b"\xe9config",),
        ("CONFIG", b"n\x00o\xc7"),
        (b"config", b"\xe9x"),
        ("CLIENT", b"\xc3\xa9" * 70),
        ("ACL", "CAT", b"n\xc7\x00x"),
        ("HELLO", "3", b"\xc7x"),
        ("EVAL", b"return redis.pcall('f\xc7oo')", "0"),
        ("EVAL", b"return redis.call('f\xc7oo', 'a\x00b')", "0"),
        ("MULTI",),
        (b"f\xc7o", "x"),
        ("EXEC",),
    ],
    "inline commands": [
        raw(b"PING\r\n"),
        raw(b"ping\n"),
        raw(b"SET k  v\r\n"),
        raw(b"GET k\r\n"),
        raw(b'SET k "a b"\r\n'),
        raw(b"GET k\r\n"),
        raw(b"ECHO 'x y'\r\n"),
        raw(b'ECHO "\\x41\\n\\t"\r\n'),
        raw(b"\r\n", replies=0),
        raw(b"   \r\n", replies=0),
        raw(b"NOSUCH a b\r\n"),
        raw(b"PING\r\n" + encode_command("ECHO", "multibulk") + b"ECHO inline\r\n", replies=3),
        raw(encode_command("SET", "a", "1") + encode_command("INCR", "a")
            + encode_command("GET", "a") + encode_command("GETX"), replies=4),
    ],
    "protocol errors close the connection": [
        raw(b'ECHO "ab\r\n', conn=1, closes=True),
        raw(b"*abc\r\n", conn=2, closes=True),
        raw(b"*1\r\n$x\r\n", conn=3, closes=True),
        raw(b"*1\r\nfoo\r\n", conn=4, closes=True),
        raw(b"*2147483648\r\n", conn=5, closes=True),
        raw(b"*2\r\n$4\r\nECHO\r\n$536870913\r\n", conn=6, closes=True),
        raw(b"*1\r\n$-1\r\n", conn=7, closes=True),
        raw(b"*0\r\nPING\r\n", conn=8),
        raw(b"*-1\r\nPING\r\n", conn=9),
        ("PING",),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_server_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol, name)


# ------------------------------------------------------------ arity, COMMAND INFO, COMMAND DOCS

# Subcommands cxlredis implements that Redis 7.0 also has (CLIENT SETINFO came in 7.2).
SUBCOMMANDS = {
    "client": ["id", "setname", "getname", "list", "info", "kill", "no-evict", "reply", "pause",
               "unpause"],
    "object": ["encoding", "idletime", "freq", "refcount", "help"],
    "memory": ["usage", "doctor", "stats", "malloc-stats", "purge"],
    "config": ["get", "set", "resetstat", "rewrite"],
    "command": ["count", "info", "docs", "list", "getkeys", "getkeysandflags"],
    "function": ["flush"],
    "pubsub": ["channels", "numpat", "numsub", "shardchannels", "shardnumsub", "help"],
}
COMMAND_NAMES = sorted(CORE_COMMANDS) + [f"{c}|{s}" for c, subs in SUBCOMMANDS.items() for s in subs]


def _oracle_arity(oracle, name):
    with raw_connection(oracle.port) as conn:
        (info,) = parse_reply(conn.request("COMMAND", "INFO", name))
    return info[1]


def _wrong_arity_calls(name, arity):
    words = name.upper().split("|")
    if arity > 0:
        counts = [n for n in (arity - 1, arity + 1) if n >= len(words)]
    else:
        counts = [n for n in (-arity - 1,) if n >= len(words)]
    return [tuple(words + ["x"] * (n - len(words))) for n in counts]


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_wrong_arity(redis_oracle, cxl, name):
    calls = _wrong_arity_calls(name, _oracle_arity(redis_oracle, name))
    if not calls:
        pytest.skip(f"{name} accepts any number of arguments")
    run_sequence(redis_oracle, cxl, calls, 2, f"arity of {name}")


@pytest.mark.parametrize("name", [n for n in COMMAND_NAMES if n not in SUBCOMMANDS])
@pytest.mark.parametrize("what", ["INFO", "DOCS"])
def test_command_info_and_docs(redis_oracle, cxl, what, name):
    for protocol in (2, 3):
        run_sequence(redis_oracle, cxl, [("COMMAND", what, name)], protocol, f"COMMAND {what} {name}")


def _entry(server, what, name, protocol):
    with raw_connection(server.port) as conn:
        if protocol == 3:
            conn.request("HELLO", "3")
        return parse_reply(conn.request("COMMAND", what, name))


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
@pytest.mark.parametrize("what", ["INFO", "DOCS"])
def test_container_command_info_and_docs(redis_oracle, cxl, what, name):
    # A container's entry lists its subcommands, and cxlredis implements only
    # some of them (each one is compared exactly by test_command_info_and_docs):
    # everything else in the entry must match.
    for protocol in (2, 3):
        expected, actual = (_entry(s, what, name, protocol) for s in (redis_oracle, cxl))
        if what == "INFO":
            (expected,), (actual,) = expected, actual
            assert isinstance(actual, list) and len(actual) == len(expected), actual
            expected_subs, actual_subs = expected.pop(9), actual.pop(9)
            names = {entry[0] for entry in actual_subs} - NEWER_THAN_ORACLE
            assert names <= {entry[0] for entry in expected_subs}
        else:
            expected = _docs_map(_docs_map(expected)[name.encode()])
            actual = _docs_map(_docs_map(actual)[name.encode()])
            expected_subs = _docs_map(expected.pop(b"subcommands"))
            actual_subs = _docs_map(actual.pop(b"subcommands", {}))
            assert set(actual_subs) - NEWER_THAN_ORACLE <= set(expected_subs)
        assert actual == expected, f"COMMAND {what} {name} (RESP{protocol})"


def _docs_map(value):
    """COMMAND DOCS maps arrive as dicts in RESP3 and as flat lists in RESP2."""
    if isinstance(value, dict):
        return dict(value)
    return dict(zip(value[0::2], value[1::2]))


# ------------------------------------------------------------ cxlredis only

@pytest.mark.skipif(TARGET == "redis", reason="redis-server 7.0 has no CLIENT SETINFO (added in 7.2)")
def test_client_setinfo_as_redis_7_2(cxl):
    # redis-py 8 sends these on every new connection; the 7.0 oracle cannot
    # answer, so the replies are checked against Redis 7.2's documented ones.
    with raw_connection(cxl.port) as conn:
        assert conn.request("CLIENT", "SETINFO", "LIB-NAME", "redis-py") == b"+OK\r\n"
        assert conn.request("CLIENT", "SETINFO", "lib-ver", "8.1.0") == b"+OK\r\n"
        assert conn.request("CLIENT", "SETINFO", "NOSUCHATTR", "x").startswith(b"-ERR ")
        assert conn.request("CLIENT", "SETINFO", "LIB-NAME", "has space").startswith(b"-ERR ")
        assert conn.request("CLIENT", "SETINFO", "LIB-NAME") == (
            b"-ERR wrong number of arguments for 'client|setinfo' command\r\n")
        assert conn.request("PING") == b"+PONG\r\n"
