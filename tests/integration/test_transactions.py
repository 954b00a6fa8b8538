"""MULTI/EXEC/WATCH, including races between clients sharing keys."""
import threading

import pytest
import redis

from conftest import raw_connection


def test_multi_exec_replies_in_order(r2):
    pipe = r2.pipeline(transaction=True)
    pipe.set("a", 1).incr("a").get("a").delete("a")
    assert pipe.execute() == [True, 2, b"2", 1]


def test_queueing_error_aborts_exec(cxl):
    with raw_connection(cxl.port) as conn:
        assert conn.request("MULTI") == b"+OK\r\n"
        assert conn.request("SET", "x", "1") == b"+QUEUED\r\n"
        assert conn.request("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
        assert conn.request("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
        assert conn.request("EXISTS", "x") == b":0\r\n"


def test_runtime_error_does_not_abort_others(cxl):
    with raw_connection(cxl.port) as conn:
        conn.request("SET", "str", "abc")
        conn.request("MULTI")
        conn.request("INCR", "str")
        conn.request("SET", "after", "1")
        assert conn.request("EXEC") == \
            b"*2\r\n-ERR value is not an integer or out of range\r\n+OK\r\n"


def test_nesting_and_misuse_errors(cxl):
    with raw_connection(cxl.port) as conn:
        assert conn.request("EXEC") == b"-ERR EXEC without MULTI\r\n"
        assert conn.request("DISCARD") == b"-ERR DISCARD without MULTI\r\n"
        conn.request("MULTI")
        assert conn.request("MULTI") == b"-ERR MULTI calls can not be nested\r\n"
        assert conn.request("WATCH", "k") == b"-ERR WATCH inside MULTI is not allowed\r\n"
        assert conn.request("DISCARD") == b"+OK\r\n"


@pytest.mark.parametrize("touch", [
    lambda c: c.set("w", "changed"),
    lambda c: c.delete("w"),
    lambda c: c.expire("w", 100),
    lambda c: c.rename("w", "w2"),
    lambda c: c.append("w", "x"),
    lambda c: c.flushall(),
])
def test_watch_aborts_when_another_client_touches_the_key(cxl, touch):
    a, b = cxl.client(), cxl.client()
    a.flushall()
    a.set("w", "v")
    with a.pipeline() as pipe:
        pipe.watch("w")
        touch(b)
        pipe.multi()
        pipe.set("w", "mine")
        with pytest.raises(redis.WatchError):
            pipe.execute()


def test_watch_passes_when_untouched_and_after_unwatch(cxl):
    a, b = cxl.client(), cxl.client()
    a.set("w", "v")
    with a.pipeline() as pipe:
        pipe.watch("w")
        b.set("other", "1")
        pipe.multi()
        pipe.set("w", "mine")
        assert pipe.execute() == [True]
    with raw_connection(cxl.port) as conn:
        conn.request("WATCH", "w")
        b.set("w", "changed")
        conn.request("UNWATCH")
        conn.request("MULTI")
        conn.request("GET", "w")
        assert conn.request("EXEC") == b"*1\r\n$7\r\nchanged\r\n"


def test_watch_on_expired_key_aborts(cxl):
    a = cxl.client()
    a.set("e", "v", px=50)
    with raw_connection(cxl.port) as conn:
        conn.request("WATCH", "e")
        a.execute_command("DEBUG", "SLEEP", "0.1")
        a.get("e")  # the expiry happens here, through another client
        conn.request("MULTI")
        conn.request("SET", "e", "x")
        assert conn.request("EXEC") == b"*-1\r\n"


def test_optimistic_counter_race_between_clients(cxl):
    """Two clients increment a counter with WATCH/MULTI/EXEC retries: no update is lost."""
    cxl.client().set("counter", 0)
    rounds = 300

    def worker():
        c = cxl.client()
        done = 0
        while done < rounds:
            with c.pipeline() as pipe:
                try:
                    pipe.watch("counter")
                    value = int(pipe.get("counter"))
                    pipe.multi()
                    pipe.set("counter", value + 1)
                    pipe.execute()
                    done += 1
                except redis.WatchError:
                    continue

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert int(cxl.client().get("counter")) == 2 * rounds


def test_large_value_inside_multi(r2):
    value = b"L" * (5 << 20)
    pipe = r2.pipeline(transaction=True)
    pipe.set("inmulti", value).get("inmulti")
    assert pipe.execute() == [True, value]


def test_discard_releases_reserved_slots(cxl):
    c = cxl.client()
    used = c.info("arena")["arena_heap_used"]
    with raw_connection(cxl.port) as conn:
        conn.request("MULTI")
        assert conn.request("SET", "big", b"q" * (4 << 20)) == b"+QUEUED\r\n"
        assert conn.request("DISCARD") == b"+OK\r\n"
    assert c.info("arena")["arena_heap_used"] == used
    assert c.exists("big") == 0
