"""Keyspace notifications, replayed on redis-server and cxlredis: for each
notify-keyspace-events setting, every command's events (channel, message, order)
must match byte for byte, in RESP2 and RESP3.

A listener connection PSUBSCRIBEs to every keyspace and keyevent channel and to a
sentinel channel; after each reply a third connection PUBLISHes to the sentinel, so
the events a command caused are exactly what the listener reads before the sentinel's
message (no sleeping, no guessing whether more is coming; and MULTI can queue).
"""
import time

import pytest

from conftest import parse_reply, raw_connection
from diff_harness import events_until_sentinel, keyspace_listener

pytestmark = pytest.mark.usefixtures("flushed")



def _dump_of(conn, key):
    conn.request("SET", key, "dumped")
    return parse_reply(conn.request("DUMP", key))


# Each step is a command, or a number of seconds to wait (for expiry).
COMMANDS = [
    ["SET", "a", "1"], ["SET", "a", "2"], ["SET", "b", "1", "EX", "100"], ["SET", "b", "1", "KEEPTTL"],
    ["SET", "c", "1", "NX"], ["SET", "c", "2", "NX"], ["SET", "c", "3", "XX", "GET"],
    ["SET", "missing", "3", "XX", "GET"], ["SETNX", "d", "1"], ["SETNX", "d", "1"],
    ["SETEX", "e", "10", "v"], ["PSETEX", "e", "100000", "v"],
    ["GETSET", "f", "1"], ["GETSET", "f", "2"], ["MSET", "g", "1", "a", "3"],
    ["MSETNX", "h", "1", "i", "2"], ["MSETNX", "h", "1", "j", "2"],
    ["APPEND", "k", "x"], ["APPEND", "k", "y"], ["SETRANGE", "l", "0", ""], ["SETRANGE", "l", "2", "ab"],
    ["INCR", "m"], ["DECR", "m"], ["INCRBY", "m", "5"], ["DECRBY", "m", "2"], ["INCRBYFLOAT", "m", "1.5"],
    ["INCR", "a", "extra"], ["INCR", "g2"], ["INCRBY", "k", "1"],
    ["GETDEL", "m"], ["GETDEL", "m"], ["GET", "nope"], ["MGET", "a", "nope", "nope2"],
    ["STRLEN", "nope"], ["GETRANGE", "nope", "0", "1"], ["SUBSTR", "nope", "0", "1"],
    ["GETEX", "a", "EX", "100"], ["GETEX", "a", "PERSIST"], ["GETEX", "a", "PERSIST"], ["GETEX", "a"],
    ["GETEX", "nope"], ["GETEX", "a", "EXAT", "1"],
    ["EXPIRE", "b", "100"], ["EXPIRE", "b", "100", "NX"], ["PEXPIRE", "b", "100000"],
    ["EXPIREAT", "b", "4102444800"], ["PEXPIREAT", "b", "4102444800000"], ["PERSIST", "b"], ["PERSIST", "b"],
    ["EXPIRE", "b", "0"], ["EXPIRE", "nope", "10"], ["SET", "b", "1"], ["PEXPIREAT", "b", "1"],
    ["DEL", "c", "nope", "d"], ["UNLINK", "e", "nope"], ["EXISTS", "nope", "f"], ["TYPE", "nope"],
    ["TTL", "nope"], ["PTTL", "nope"], ["EXPIRETIME", "nope"], ["PEXPIRETIME", "nope"],
    ["TOUCH", "nope", "f"], ["OBJECT", "ENCODING", "nope"], ["DUMP", "nope"],
    ["RENAME", "f", "f2"], ["SET", "g2", "x"], ["RENAME", "f2", "g2"], ["RENAMENX", "g2", "a"],
    ["RENAMENX", "a", "h"], ["RENAME", "h", "h"], ["RENAME", "nope", "x"],
    ["COPY", "a", "cp"], ["COPY", "a", "cp"], ["COPY", "a", "cp", "REPLACE"], ["COPY", "a", "cp", "DB", "1"],
    ["COPY", "nope", "cp2"], ["MOVE", "cp", "1"], ["MOVE", "cp", "2"],
    ["HSET", "h1", "a", "1", "b", "2"], ["HSET", "h1", "a", "3"], ["HSETNX", "h1", "c", "1"],
    ["HSETNX", "h1", "c", "1"], ["HMSET", "h1", "d", "1"], ["HINCRBY", "h1", "n", "1"],
    ["HINCRBYFLOAT", "h1", "f", "1.5"], ["HDEL", "h1", "a", "zz"], ["HDEL", "h1", "zz"],
    ["HSET", "a", "x", "1"], ["HGET", "nope", "a"], ["HGETALL", "nope"], ["HLEN", "nope"],
    ["HEXISTS", "nope", "a"], ["HMGET", "nope", "a"], ["HKEYS", "nope"], ["HVALS", "nope"],
    ["HSTRLEN", "nope", "a"], ["HRANDFIELD", "nope"], ["HSCAN", "nope", "0"],
    ["HSET", "h2", "a", "1"], ["HDEL", "h2", "a"], ["HINCRBY", "h3", "x", "1"],
    ["HINCRBYFLOAT", "h4", "x", "1"], ["HGET", "h3", "x"],
    # bitmaps: an event only when a bit or field changed or the string grew
    ["SETBIT", "bm1", "7", "1"], ["SETBIT", "bm1", "7", "1"], ["SETBIT", "bm1", "7", "0"],
    ["SETBIT", "bm1", "3", "0"], ["SETBIT", "bm1", "100", "0"], ["SETBIT", "bm2", "0", "0"],
    ["SETBIT", "bm1", "x", "1"], ["SETBIT", "h1", "0", "1"], ["GETBIT", "nope", "0"], ["GETBIT", "bm1", "7"],
    ["BITCOUNT", "nope"], ["BITCOUNT", "bm1", "0", "-1"], ["BITPOS", "nope", "1"], ["BITPOS", "bm1", "0"],
    ["BITFIELD", "bm3", "SET", "u8", "0", "5"], ["BITFIELD", "bm3", "SET", "u8", "0", "5"],
    ["BITFIELD", "bm3", "INCRBY", "u8", "0", "0"], ["BITFIELD", "bm3", "INCRBY", "u8", "0", "1", "GET", "u8", "0"],
    ["BITFIELD", "bm3", "SET", "u8", "16", "0"], ["BITFIELD", "bm3", "GET", "u8", "0"],
    ["BITFIELD", "bm4", "OVERFLOW", "FAIL", "SET", "u2", "0", "5"],
    ["BITFIELD", "bm3", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9"],
    ["BITFIELD", "bm3", "OVERFLOW", "FAIL", "INCRBY", "u2", "200", "9"],
    ["BITFIELD", "nope", "GET", "u8", "0"], ["BITFIELD_RO", "nope", "GET", "u8", "0"],
    ["BITFIELD_RO", "bm3", "GET", "u8", "0"], ["BITFIELD", "bm3", "GET", "x", "0"],
    ["BITOP", "AND", "bm5", "bm1", "bm3"], ["BITOP", "OR", "bm5", "nope", "bm3"],
    ["BITOP", "OR", "bm5", "nope", "nope2"], ["BITOP", "OR", "bm5", "nope"], ["BITOP", "NOT", "bm6", "bm1"],
    ["BITOP", "AND", "bm6", "h1"], ["LCS", "bm1", "nope"], ["LCS", "nope", "nope2", "LEN"], ["LCS", "bm1", "bm3"],
    # sets: an event only when a member came or went; del when a set was emptied
    ["SADD", "st1", "1", "2", "3"], ["SADD", "st1", "2"], ["SADD", "st1", "x"], ["SREM", "st1", "x", "zz"],
    ["SREM", "st1", "zz"], ["SREM", "nope", "a"], ["SADD", "st2", "a"], ["SREM", "st2", "a"],
    ["SMOVE", "st1", "st3", "1"], ["SMOVE", "st1", "st3", "zz"], ["SADD", "st4", "2"],
    ["SMOVE", "st1", "st4", "2"], ["SMOVE", "st1", "st4", "3"], ["SMOVE", "nope", "st4", "3"],
    ["SMOVE", "st4", "st4", "3"], ["SADD", "st5", "1", "2"], ["SPOP", "st5", "5"], ["SADD", "st6", "a"],
    ["SPOP", "st6"], ["SPOP", "nope"], ["SPOP", "nope", "2"], ["SPOP", "st4", "0"],
    ["SINTERSTORE", "st7", "st4", "st3"], ["SUNIONSTORE", "st7", "st4", "st3"], ["SDIFFSTORE", "st7", "st4", "st4"],
    ["SDIFFSTORE", "st7", "nope"], ["SET", "stx", "v"], ["SUNIONSTORE", "stx", "st4"],
    ["SINTERSTORE", "st8", "st4", "nope"], ["SMEMBERS", "nope"], ["SISMEMBER", "nope", "a"], ["SCARD", "nope"],
    ["SMISMEMBER", "nope", "a"], ["SRANDMEMBER", "nope"], ["SSCAN", "nope", "0"], ["SINTER", "st4", "nope"],
    ["SINTERCARD", "2", "nope", "st4"], ["SUNION", "nope", "st4"], ["SDIFF", "nope"], ["SADD", "h1", "a"],
    ["RESTORE", "rs", "0", _dump_of], ["RESTORE", "rs", "0", _dump_of, "REPLACE"],
    ["RESTORE", "rs", "0", _dump_of], ["RESTORE", "rs", "1", _dump_of, "REPLACE", "ABSTTL"],
    ["SET", "ex", "1", "PX", "50"], 0.15, ["GET", "ex"],
    ["SET", "ex2", "1", "PX", "50"], 0.15, ["EXISTS", "ex2"],
    ["HSET", "exh", "f", "v"], ["PEXPIRE", "exh", "50"], 0.15, ["HGET", "exh", "f"],
    ["SWAPDB", "0", "1"], ["SWAPDB", "0", "1"], ["SELECT", "1"], ["SET", "in1", "v"],
    ["DEL", "in1"], ["SELECT", "0"], ["MULTI"], ["SET", "tx", "1"], ["INCR", "tx"], ["EXEC"],
    ["FLUSHDB"], ["SET", "q", "1"], ["FLUSHALL"],
]

FLAG_SETS = ["AKEnm", "KEA", "E$", "Kg", "Eh", "En", "Em", "Ex", "KE", "A", ""]


def _replay(server, flags, protocol):
    """(reply, events) of every command of COMMANDS with notify-keyspace-events flags."""
    with raw_connection(server.port) as conn, keyspace_listener(server.port, protocol) as listener, \
            raw_connection(server.port) as publisher:
        assert conn.request("FLUSHALL") == b"+OK\r\n"
        assert conn.request("CONFIG", "SET", "notify-keyspace-events", flags) == b"+OK\r\n"
        outcome = []
        for step in COMMANDS:
            if isinstance(step, float):
                time.sleep(step)
                continue
            argv = [arg(conn, "dumpsrc") if callable(arg) else arg for arg in step]
            if callable(step[3] if len(step) > 3 else None):
                events_until_sentinel(publisher, listener)      # the DUMP source's own events
            reply = conn.request(*argv)
            outcome.append((" ".join(map(str, step[:4])), reply, events_until_sentinel(publisher, listener)))
        return outcome


@pytest.fixture
def notifications_off(redis_oracle, cxl):
    yield
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            conn.request("CONFIG", "SET", "notify-keyspace-events", "")


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("flags", FLAG_SETS)
def test_every_command_notifies_as_redis_does(redis_oracle, cxl, notifications_off, flags, protocol):
    expected = _replay(redis_oracle, flags, protocol)
    got = _replay(cxl, flags, protocol)
    for want, have in zip(expected, got):
        assert have == want
    if flags == "AKEnm":    # the comparison bites: most commands report something
        assert sum(bool(events) for _, _, events in expected) > len(COMMANDS) // 2


CONFIG_VALUES = ["KEA", "Kx", "gE", "AKEm", "n", "mn", "nKEm", "Agn", "gxn", "KEd", "tdn",
                 "K$lshzxetd", "g$lshzxetdKE", "EA", "AA", "", "xyz", "a", "KE A", "k"]


def test_config_values_read_back_as_redis_writes_them(redis_oracle, cxl, notifications_off):
    for value in CONFIG_VALUES:
        replies = []
        for server in (redis_oracle, cxl):
            with raw_connection(server.port) as conn:
                replies.append((conn.request("CONFIG", "SET", "notify-keyspace-events", value),
                                conn.request("CONFIG", "GET", "notify-keyspace-events")))
        assert replies[1] == replies[0], value
