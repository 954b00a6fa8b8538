"""CLIENT, INFO, COMMAND and CONFIG as clients and operators use them."""
import re
import socket
import time

import pytest
import redis

from conftest import parse_reply, raw_connection


def test_client_list_info_setname(cxl):
    a = cxl.client()
    a.client_setname("alpha")
    me = a.client_info()
    assert me["name"] == "alpha"
    listing = a.client_list()
    assert any(entry["name"] == "alpha" and str(entry["id"]) == str(me["id"]) for entry in listing)
    with raw_connection(cxl.port) as conn:
        conn.request("CLIENT", "SETNAME", "beta")
        line = parse_reply(conn.request("CLIENT", "INFO")).decode()
    for field in ("id=", "addr=", "laddr=", "fd=", "name=beta", "age=", "idle=", "flags=N",
                  "db=0", "multi=-1", "qbuf=", "obl=", "omem=", "cmd=client|info", "user=default", "resp=2"):
        assert field in line
    with pytest.raises(redis.ResponseError,
                       match="Client names cannot contain spaces, newlines or special characters."):
        a.client_setname("has space")


def test_client_kill_by_id_and_addr(cxl):
    a, victim = cxl.client(), cxl.client()
    victim.ping()
    vid = victim.client_id()
    assert a.client_kill_filter(_id=vid) == 1
    assert a.execute_command("CLIENT", "KILL", "ID", str(vid)) == 0
    conn = raw_connection(cxl.port)
    conn.request("CLIENT", "SETNAME", "rawvictim")
    addr = next(e["addr"] for e in a.client_list() if e["name"] == "rawvictim")
    assert a.execute_command("CLIENT", "KILL", addr) in (b"OK", "OK", True)
    assert conn.is_closed()
    with pytest.raises(redis.ResponseError, match="No such client"):
        a.execute_command("CLIENT", "KILL", addr)


def test_client_reply_off_skip_on(cxl):
    with raw_connection(cxl.port) as conn:
        conn.send(b"CLIENT REPLY OFF\r\nSET a 1\r\nGET a\r\nCLIENT REPLY ON\r\n")
        assert conn.read_reply() == b"+OK\r\n"      # only the ON is answered
        conn.send(b"CLIENT REPLY SKIP\r\nGET a\r\nGET a\r\n")
        assert conn.read_reply() == b"$1\r\n1\r\n"  # the first GET was skipped


def test_select_and_databases(cxl):
    with raw_connection(cxl.port) as conn:
        conn.request("SET", "k", "db0")
        assert conn.request("SELECT", "15") == b"+OK\r\n"
        assert conn.request("GET", "k") == b"$-1\r\n"
        assert conn.request("SELECT", "16") == b"-ERR DB index is out of range\r\n"
        assert conn.request("SELECT", "x") == b"-ERR value is not an integer or out of range\r\n"


def test_info_sections(cxl):
    c = cxl.client()
    c.set("x", "1")
    full = parse_reply(raw_connection(cxl.port).request("INFO")).decode()
    for section in ("# Server", "# Clients", "# Memory", "# Persistence", "# Stats",
                    "# Replication", "# CPU", "# Keyspace", "# Arena"):
        assert section in full
    assert "# Commandstats" not in full
    everything = c.info("everything")
    assert everything["cmdstat_set"]["calls"] >= 1
    assert c.info("replication")["role"] == "master"
    mem = c.info("memory")
    assert mem["used_memory"] > 0 and mem["maxmemory"] == 0  # as configured: no cap given
    assert c.info("arena")["arena_maxmemory"] > 0          # the effective limit
    assert c.info("keyspace")["db0"]["keys"] >= 1
    arena = c.info("arena")
    assert arena["arena_size"] > 0 and "arena_fragmentation" in arena
    hits_before = c.info("stats")["keyspace_hits"]
    c.get("x")
    c.get("missing")
    stats = c.info("stats")
    assert stats["keyspace_hits"] == hits_before + 1
    with pytest.raises(redis.ResponseError):
        c.execute_command("NOPE")
    assert c.info("errorstats")["errorstat_ERR"]["count"] >= 1
    c.config_resetstat()
    assert "errorstat_ERR" not in c.info("errorstats")


def test_valkey_glide_style_info_queries(cxl):
    """valkey-glide asks INFO REPLICATION and INFO memory on connect."""
    with raw_connection(cxl.port) as conn:
        reply = conn.request("INFO", "REPLICATION")
        assert b"role:master" in reply
        reply = conn.request("INFO", "memory")
        assert b"used_memory:" in reply and b"# Server" not in reply


def test_command_table_matches_redis_for_shared_commands(cxl, redis_oracle):
    """Arity, flags, key positions and ACL categories agree with Redis 7.0 where both implement a command."""
    ours = {row[0]: row for row in _command_rows(cxl.port)}
    theirs = {row[0]: row for row in _command_rows(redis_oracle.port)}
    compared = 0
    for name, row in ours.items():
        if name in theirs:
            assert row == theirs[name], name
            compared += 1
    assert compared >= 60


def _command_rows(port):
    """(name, arity, flags, first, last, step, categories) for every command and subcommand."""
    rows = []
    with raw_connection(port) as conn:
        names = [n for n in parse_reply(conn.request("COMMAND", "LIST")) if b"|" not in n]
        entries = parse_reply(conn.request("COMMAND", "INFO", *names))
    for entry in entries:
        if entry is None:
            continue
        for info in [entry] + list(entry[9] or []):
            name, arity, flags, first, last, step, cats = info[:7]
            rows.append((name, arity, tuple(sorted(flags)), first, last, step, tuple(cats)))
    return rows


def test_command_count_list_getkeys(cxl):
    conn = raw_connection(cxl.port)
    names = parse_reply(conn.request("COMMAND", "LIST"))
    assert b"get" in names and b"client|list" in names
    assert parse_reply(conn.request("COMMAND", "COUNT")) == len([n for n in names if b"|" not in n])
    assert parse_reply(conn.request("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2")) == [b"a", b"b"]
    assert conn.request("COMMAND", "GETKEYS", "NOSUCH", "a") == b"-ERR Invalid command specified\r\n"
    docs = raw_connection(cxl.port).request("COMMAND", "DOCS", "get")
    assert docs.startswith(b"*2\r\n$3\r\nget\r\n")
    assert b"$7\r\nsummary\r\n$22\r\nGet the value of a key\r\n" in docs


def test_config_set_applies_at_runtime(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    c.config_set("proto-max-bulk-len", "1mb")
    with pytest.raises(redis.ResponseError, match="Protocol error: invalid bulk length"):
        c.set("k", b"x" * (2 << 20))
    c = srv.client()
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        c.config_set("arena-size", "2gb")
    with pytest.raises(redis.ResponseError, match="Unknown option"):
        c.config_set("no-such-option", "1")


def test_maxclients(cxl_factory):
    srv = cxl_factory(maxclients="3")
    held = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(3)]
    with raw_connection(srv.port) as conn:
        assert conn.read_reply() == b"-ERR max number of clients reached\r\n"
    for s in held:
        s.close()


def test_time_and_lastsave(cxl):
    c = cxl.client()
    seconds, micros = c.time()
    assert seconds > 1_700_000_000 and 0 <= micros < 1_000_000
    assert re.match(rb"^:\d+\r\n$", raw_connection(cxl.port).request("LASTSAVE"))


def test_config_set_bind_and_port_rebind_listeners(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    c.config_set("bind", "127.0.0.1 127.0.0.2")  # overlaps the address already bound
    assert redis.Redis(host="127.0.0.2", port=srv.port).ping()
    assert redis.Redis(port=srv.port).ping()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]
    with pytest.raises(redis.ResponseError, match="Unable to listen on this port"):
        redis.Redis(port=srv.port).config_set("port", str(taken))
    blocker.close()
    assert redis.Redis(port=srv.port).ping()  # the old listeners are back


def test_idle_clients_are_closed_after_timeout(cxl_factory):
    srv = cxl_factory(timeout="1")
    idle = raw_connection(srv.port)
    assert idle.request("PING") == b"+PONG\r\n"
    in_multi = raw_connection(srv.port)
    assert in_multi.request("MULTI") == b"+OK\r\n"   # an open transaction is no exemption in Redis
    busy = srv.client()
    for _ in range(25):                               # ~2.5 s of activity on another client
        busy.ping()
        time.sleep(0.1)
    assert idle.is_closed()
    assert in_multi.is_closed()
    assert busy.ping()
