"""SAVE/BGSAVE durability and bookkeeping, CLIENT PAUSE and WAIT with real redis-py
clients (what the differential tests cannot show: timing, order, restarts), the
administrator-only rules, and MEMORY's reports on a real arena."""
import threading
import time

import pytest
import redis

from conftest import ConnectionClosed, encode_command, raw_connection, ReplyTimeout

pytestmark = pytest.mark.timeout(60)


def persistence(client):
    return client.info("persistence")


# --- SAVE / BGSAVE / LASTSAVE ---------------------------------------------------
def test_save_makes_the_arena_durable_and_moves_lastsave(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    started = c.lastsave()
    for i in range(3):
        c.set(f"k{i}", f"v{i}")
    c.hset("h", mapping={"f": "1", "g": "2"})
    assert persistence(c)["rdb_changes_since_last_save"] == 4
    time.sleep(1.05)                        # LASTSAVE has a resolution of a second
    assert c.save() is True
    info = persistence(c)
    assert c.lastsave() > started and info["rdb_last_save_time"] == int(c.lastsave().timestamp())
    assert info["rdb_changes_since_last_save"] == 0 and info["rdb_saves"] == 1
    c.set("after", "x")
    assert persistence(c)["rdb_changes_since_last_save"] == 1
    c.close()
    srv.kill9()
    srv.start()
    c = srv.client()
    assert [c.get(f"k{i}") for i in range(3)] == [b"v0", b"v1", b"v2"]
    assert c.hgetall("h") == {b"f": b"1", b"g": b"2"} and c.get("after") == b"x"
    c.close()


def test_bgsave_syncs_on_its_thread_and_reports_the_end(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    c.set("k", "v")
    before = persistence(c)
    raw = raw_connection(srv.port)
    assert raw.request("BGSAVE") == b"+Background saving started\r\n"
    assert c.ping()                         # the loop goes on meanwhile
    deadline = time.monotonic() + 5
    while persistence(c)["rdb_bgsave_in_progress"] and time.monotonic() < deadline:
        time.sleep(0.01)
    info = persistence(c)
    assert info["rdb_bgsave_in_progress"] == 0 and info["rdb_last_bgsave_status"] == "ok"
    assert info["rdb_changes_since_last_save"] == 0 and info["rdb_saves"] == before["rdb_saves"] + 1
    assert info["rdb_last_bgsave_time_sec"] >= 0
    # inside EXEC it is scheduled, and runs once the transaction is done
    raw.send(encode_command("MULTI") + encode_command("BGSAVE") + encode_command("BGREWRITEAOF")
             + encode_command("EXEC"))
    assert [raw.read_reply() for _ in range(4)][3] == (
        b"*2\r\n+Background saving scheduled\r\n+Background append only file rewriting scheduled\r\n")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (persistence(c)["rdb_saves"] < before["rdb_saves"] + 2
                                           or persistence(c)["rdb_bgsave_in_progress"]):
        time.sleep(0.01)
    assert persistence(c)["rdb_saves"] == before["rdb_saves"] + 2
    assert raw.request("BGREWRITEAOF") == b"+Background append only file rewriting started\r\n"
    raw.close()
    c.close()


def test_save_bgsave_and_pause_are_for_administrators(cxl_factory):
    srv = cxl_factory()
    admin = srv.client()
    admin.execute_command("ACL", "SETUSER", "alice", "on", ">pw", "~*", "&*", "+@all")
    admin.execute_command("ACL", "SETUSER", "bob", "on", ">pw", "~*", "&*", "+@all", "-@admin")
    admin.execute_command("TENANT", "CREATE", "team", "USERS", "alice")
    alice = redis.Redis(port=srv.port, username="alice", password="pw")
    for args in (("SAVE",), ("BGSAVE",), ("CLIENT", "PAUSE", "1000"), ("CLIENT", "UNPAUSE")):
        name = " ".join(args[:2] if args[0] == "CLIENT" else args[:1])
        with pytest.raises(redis.ResponseError, match=f"^{name} is for administrators: this connection "
                                                      "belongs to tenant 'team'$"):
            alice.execute_command(*args)
    assert alice.lastsave() and alice.execute_command("ROLE") == [b"master", 0, []]
    bob = redis.Redis(port=srv.port, username="bob", password="pw")
    for args in (("SAVE",), ("BGSAVE",), ("BGREWRITEAOF",), ("CLIENT", "PAUSE", "10"), ("LASTSAVE",)):
        with pytest.raises(redis.exceptions.NoPermissionError):
            bob.execute_command(*args)
    assert admin.info("clients")["blocked_clients"] == 0
    for client in (alice, bob, admin):
        client.close()


# --- CLIENT PAUSE ----------------------------------------------------------------
class Held(threading.Thread):
    """Commands on a client of its own, on a thread, and what they were answered."""

    def __init__(self, server, name, *calls):
        super().__init__(daemon=True)
        self.client, self.name, self.calls = server.client(socket_timeout=10), name, calls
        self.client.client_setname(name)    # connected (and named) before the pause starts
        self.result = None

    def run(self):
        self.result = [self.client.execute_command(*call) for call in self.calls]

    def finished(self, timeout):
        self.join(timeout)
        return not self.is_alive()


def _flags_of(client, name):
    for line in client.execute_command("CLIENT", "LIST").decode().splitlines():
        fields = dict(item.split("=", 1) for item in line.split(" "))
        if fields["name"] == name:
            return fields["flags"], fields["cmd"]
    return None


def test_pause_write_holds_writes_fast_and_general_path_then_releases_in_order(cxl):
    pauser, reader = cxl.client(), cxl.client()
    pauser.set("k", "v")
    fast = Held(cxl, "fast", ("SET", "k", "1"))                # the C fast path's
    general = Held(cxl, "general", ("APPEND", "k", "2"))      # dispatch's: after the SET, "12"
    piped = cxl.client()
    assert pauser.client_pause(5000, all=False) is True
    fast.start()
    time.sleep(0.05)
    general.start()
    pipeline = piped.pipeline(transaction=False)
    pipeline.set("p", "1").incr("p").get("p")
    held_pipeline = threading.Thread(target=lambda: setattr(piped, "answers", pipeline.execute()))
    held_pipeline.start()
    time.sleep(0.3)
    # reads go on, on the fast path (GET, MGET) and the general one (HGETALL, STRLEN)
    assert reader.get("k") == b"v" and reader.mget("k", "p") == [b"v", None]
    assert reader.hgetall("h") == {} and reader.strlen("k") == 1
    assert not fast.finished(0) and not general.finished(0) and held_pipeline.is_alive()
    assert _flags_of(reader, "fast") == ("b", "set") and _flags_of(reader, "general") == ("b", "append")
    assert reader.info("clients")["blocked_clients"] == 3
    assert pauser.execute_command("CLIENT", "UNPAUSE") == b"OK"
    assert fast.finished(5) and general.finished(5)
    held_pipeline.join(5)
    # resumed in the order they were held: the SET, then the APPEND
    assert fast.result == [True] and general.result == [2] and reader.get("k") == b"12"
    assert piped.answers == [True, 2, b"2"]
    assert reader.info("clients")["blocked_clients"] == 0
    assert _flags_of(reader, "fast") == ("N", "set")
    for client in (pauser, reader, piped, fast.client, general.client):
        client.close()


def test_pause_all_holds_reads_and_the_pauser_until_its_timeout(cxl):
    pauser, other = cxl.client(), cxl.client(socket_timeout=10)
    pauser.set("k", "v")
    assert pauser.client_pause(400) is True            # ALL
    start = time.monotonic()
    assert other.get("k") == b"v"                      # a fast-path read, held
    assert time.monotonic() - start >= 0.3
    assert pauser.client_pause(300, all=True) is True
    start = time.monotonic()
    assert pauser.ping() is True                       # the pausing client is held too (Redis 7.0)
    assert other.execute_command("CLIENT", "UNPAUSE") == b"OK"     # ALL holds UNPAUSE as well
    assert time.monotonic() - start >= 0.2
    pauser.close()
    other.close()


def test_pause_holds_expiry_and_eviction(cxl_factory):
    srv = cxl_factory(maxmemory="2mb", **{"maxmemory-policy": "allkeys-lru"})
    c, admin = srv.client(), srv.client()
    c.set("e", "v", px=200)
    expired = c.info("stats")["expired_keys"]
    assert admin.client_pause(5000, all=False) is True
    time.sleep(0.4)
    assert c.get("e") is None and c.dbsize() == 1      # reads as gone, left where it is
    assert c.info("stats")["expired_keys"] == expired
    admin.config_set("maxmemory", "1mb")               # no eviction while paused either
    time.sleep(0.2)
    assert c.info("stats")["evicted_keys"] == 0
    admin.execute_command("CLIENT", "UNPAUSE")
    assert c.get("e") is None and c.dbsize() == 0
    assert c.info("stats")["expired_keys"] == expired + 1
    c.close()
    admin.close()


# --- WAIT ------------------------------------------------------------------------
def test_wait_holds_its_reply_until_the_timeout_or_for_good(cxl):
    c = cxl.client()
    start = time.monotonic()
    assert c.execute_command("WAIT", "1", "200") == 0
    assert time.monotonic() - start >= 0.18
    assert c.execute_command("WAIT", "0", "0") == 0
    waiting = raw_connection(cxl.port)
    assert waiting.request("CLIENT", "SETNAME", "waiter") == b"+OK\r\n"
    waiting.send(encode_command("WAIT", "1", "0") + encode_command("PING"))
    with pytest.raises(ReplyTimeout):
        waiting.read_reply(0.3)
    assert _flags_of(c, "waiter") == ("b", "wait") and c.info("clients")["blocked_clients"] == 1
    waiting.close()                     # a client that goes away is no longer waited on
    deadline = time.monotonic() + 5
    while c.info("clients")["blocked_clients"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert c.info("clients")["blocked_clients"] == 0
    c.close()


# --- MEMORY ----------------------------------------------------------------------
def test_memory_reports_on_the_arena(cxl_factory):
    srv = cxl_factory()
    c = srv.client(protocol=3)
    assert c.execute_command("MEMORY", "DOCTOR").startswith(b"Hi Sam, this instance is empty")
    c.set("big", b"x" * (6 << 20))
    c.execute_command("SELECT", "2")
    c.set("small", "1")
    stats = c.execute_command("MEMORY", "STATS")
    info = c.info("memory")
    assert stats[b"total.allocated"] == info["used_memory"] <= stats[b"peak.allocated"]
    assert stats[b"dataset.bytes"] == info["used_memory_dataset"] >= 6 << 20
    assert stats[b"keys.count"] == 2 and set(stats) >= {b"db.0", b"db.2"} and b"db.1" not in stats
    assert stats[b"overhead.total"] + stats[b"dataset.bytes"] == stats[b"total.allocated"]
    assert 0 < stats[b"dataset.percentage"] <= 100 and isinstance(stats[b"fragmentation"], float)
    assert c.execute_command("MEMORY", "DOCTOR") == (
        b"Hi Sam, I can't find any memory issue in your instance. I can only account for what "
        b"occurs on this base.\n")
    assert b"used_memory: " in c.execute_command("MEMORY", "MALLOC-STATS")
    assert c.execute_command("MEMORY", "PURGE") == b"OK"
    obj = c.execute_command("DEBUG", "OBJECT", "small").decode()
    assert obj.startswith("Value at:0x") and " refcount:2147483647 encoding:int serializedlength:2 " in obj
    c.close()


# --- timeout: idle clients close, blocked ones and subscribers stay ----------------
def test_idle_timeout_spares_blocked_clients_and_subscribers(target):
    """Redis's clientsCronHandleTimeout closes a client idle past `timeout`, but not one
    blocked (here in WAIT) nor one subscribed; on both servers."""
    admin = raw_connection(target.port)
    assert admin.request("CONFIG", "SET", "timeout", "1") == b"+OK\r\n"
    try:
        idle, subscriber, waiting = (raw_connection(target.port) for _ in range(3))
        assert idle.request("PING") == b"+PONG\r\n"
        assert subscriber.request("SUBSCRIBE", "news").startswith(b"*3\r\n")
        waiting.send(encode_command("WAIT", "1", "0"))
        time.sleep(3.2)                       # past the timeout, and a cron tick or more
        with pytest.raises(ConnectionClosed):
            idle.request("PING")
        assert subscriber.request("PING").startswith(b"*2\r\n")
    finally:
        admin = raw_connection(target.port)     # (the first one idled out too)
        assert admin.request("CONFIG", "SET", "timeout", "0") == b"+OK\r\n"
    assert admin.request("CLIENT", "LIST").count(b"cmd=wait") == 1
