"""BZPOPMIN, BZPOPMAX and BZMPOP with several real clients, on cxlredis and on redis-server
(the `target` fixture): what the lockstep differential tests cannot show — clients that
wait, in which order they are served, timeouts, CLIENT UNBLOCK, writes in a transaction.
"""
import time

import pytest

from blocked_clients import block, blocked_count, wait_blocked
from conftest import encode_command, raw_connection

NULL_ARRAY = {2: b"*-1\r\n", 3: b"_\r\n"}


@pytest.fixture
def admin(target):
    with raw_connection(target.port) as conn:
        yield conn


def test_clients_are_served_first_come_first_served(target, admin):
    first = block(target, admin, "BZPOPMIN", "z", "0")
    second = block(target, admin, "BZPOPMAX", "other", "z", "0")
    third = block(target, admin, "BZMPOP", "0", "1", "z", "MIN", "COUNT", "5")
    assert admin.request("ZADD", "z", "1", "a", "2", "b") == b":2\r\n"
    assert first.read_reply() == b"*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n"
    assert second.read_reply() == b"*3\r\n$1\r\nz\r\n$1\r\nb\r\n$1\r\n2\r\n"
    assert blocked_count(admin) == 1          # the set is gone: the third waits on
    assert admin.request("ZADD", "z", "3", "c", "4", "d", "5", "e") == b":3\r\n"
    assert third.read_reply() == (b"*2\r\n$1\r\nz\r\n*3\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"
                                  b"*2\r\n$1\r\nd\r\n$1\r\n4\r\n*2\r\n$1\r\ne\r\n$1\r\n5\r\n")
    assert admin.request("EXISTS", "z") == b":0\r\n"
    for conn in (first, second, third):
        conn.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_served_from_the_key_that_became_ready(target, admin, protocol):
    conn = block(target, admin, "BZMPOP", "0", "3", "k1", "k2", "k3", "MAX", "COUNT", "2",
                  protocol=protocol)
    popmin = block(target, admin, "BZPOPMIN", "k1", "k3", "0", protocol=protocol)
    assert admin.request("ZADD", "k3", "1", "x", "2", "y", "3", "z") == b":3\r\n"
    score = {2: b"$1\r\n%d\r\n", 3: b",%d\r\n"}[protocol]
    assert conn.read_reply() == (b"*2\r\n$2\r\nk3\r\n*2\r\n*2\r\n$1\r\nz\r\n" + score % 3
                                 + b"*2\r\n$1\r\ny\r\n" + score % 2)
    assert popmin.read_reply() == b"*3\r\n$2\r\nk3\r\n$1\r\nx\r\n" + score % 1
    conn.close()
    popmin.close()


def test_a_key_of_another_type_or_emptied_in_a_transaction_serves_nobody(target, admin):
    conn = block(target, admin, "BZPOPMIN", "k", "0")
    assert admin.request("SET", "k", "v") == b"+OK\r\n"
    assert admin.request("LPUSH", "other", "v") == b":1\r\n"
    assert admin.request("DEL", "k") == b":1\r\n"
    for argv in (("MULTI",), ("ZADD", "k", "1", "a"), ("ZREM", "k", "a"), ("EXEC",)):
        admin.request(*argv)
    time.sleep(0.05)
    assert blocked_count(admin) == 1
    for argv in (("MULTI",), ("ZADD", "k", "1", "a", "2", "b"), ("ZREM", "k", "a")):
        admin.request(*argv)
    assert admin.request("EXEC") == b"*2\r\n:2\r\n:1\r\n"
    assert conn.read_reply() == b"*3\r\n$1\r\nk\r\n$1\r\nb\r\n$1\r\n2\r\n"
    conn.close()


def test_a_write_by_another_sorted_set_command_serves(target, admin):
    conn = block(target, admin, "BZPOPMAX", "dst", "0")
    assert admin.request("ZADD", "src", "1", "a", "2", "b") == b":2\r\n"
    assert admin.request("ZUNIONSTORE", "dst", "1", "src", "WEIGHTS", "10") == b":2\r\n"
    assert conn.read_reply() == b"*3\r\n$3\r\ndst\r\n$1\r\nb\r\n$2\r\n20\r\n"
    assert admin.request("ZRANGE", "dst", "0", "-1", "WITHSCORES") == b"*2\r\n$1\r\na\r\n$2\r\n10\r\n"
    conn.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_timeouts_answer_nil(target, admin, protocol):
    calls = [("BZPOPMIN", "missing", "0.15"), ("BZPOPMAX", "missing", "other", "0.15"),
             ("BZMPOP", "0.15", "1", "missing", "MIN", "COUNT", "3"), ("BZPOPMIN", "missing", "0.0001")]
    conns = []
    started = time.monotonic()
    for argv in calls:
        conn = raw_connection(target.port)
        if protocol == 3:
            conn.request("HELLO", "3")
        conn.send(encode_command(*argv))
        conns.append(conn)
    for conn in conns:
        assert conn.read_reply() == NULL_ARRAY[protocol]
        conn.close()
    assert 0.14 <= time.monotonic() - started < 1.5
    # a timeout passed: the next write stays for whoever comes
    assert admin.request("ZADD", "missing", "1", "v") == b":1\r\n"
    assert admin.request("ZCARD", "missing") == b":1\r\n"


def test_client_unblock_and_timeouts_that_never_come(target, admin):
    forever = [block(target, admin, *argv) for argv in
               [("BZPOPMIN", "k", "0"), ("BZMPOP", "9223372036854775", "1", "k", "MAX"),
                ("BZPOPMAX", "k", "-0.0001")]]
    ids = [line.split(" ")[0][len("id="):] for line in admin.request("CLIENT", "LIST").decode().split("\n")
           if " flags=b " in line]
    assert len(ids) == 3
    assert admin.request("CLIENT", "UNBLOCK", ids[0]) == b":1\r\n"
    assert admin.request("CLIENT", "UNBLOCK", ids[1], "ERROR") == b":1\r\n"
    assert admin.request("CLIENT", "UNBLOCK", ids[2], "TIMEOUT") == b":1\r\n"
    assert forever[0].read_reply() == b"*-1\r\n"
    assert forever[1].read_reply() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    assert forever[2].read_reply() == b"*-1\r\n"
    assert blocked_count(admin) == 0
    for conn in forever:
        conn.close()


def test_a_client_gone_while_blocked_is_skipped(target, admin):
    gone = block(target, admin, "BZPOPMIN", "k", "0")
    waiting = block(target, admin, "BZPOPMIN", "k", "0")
    gone.close()
    wait_blocked(admin, 1)
    assert admin.request("ZADD", "k", "1", "a") == b":1\r\n"
    assert waiting.read_reply() == b"*3\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\n1\r\n"
    waiting.close()


def test_no_blocking_inside_multi_or_a_script(target, admin):
    for argv in (("MULTI",), ("BZPOPMIN", "k", "0"), ("BZMPOP", "0", "1", "k", "MIN")):
        admin.request(*argv)
    assert admin.request("EXEC") == b"*2\r\n*-1\r\n*-1\r\n"
    # (the nil array reaches Lua as false, which comes back as a nil bulk)
    assert admin.request("EVAL", "return redis.call('bzmpop', 0, 1, KEYS[1], 'min')", "1", "k") == b"$-1\r\n"
    assert admin.request("EVAL", "return redis.pcall('bzpopmin', KEYS[1], 0)", "1", "k").startswith(
        b"-ERR This Redis command is not allowed from script")
    assert blocked_count(admin) == 0
