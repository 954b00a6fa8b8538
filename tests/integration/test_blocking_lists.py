"""The blocking list commands with several real clients, on cxlredis and on redis-server
(the `target` fixture): what the lockstep differential tests cannot show — time,
clients ids, connections that go away, many clients at once — and elements of 1 MiB.
"""
import threading
import time

import pytest
import redis

from blocked_clients import block, blocked_count, wait_blocked
from conftest import encode_command, raw_connection, ReplyTimeout

MIB = 1 << 20


@pytest.fixture
def admin(target):
    with raw_connection(target.port) as conn:
        yield conn


def test_clients_are_served_first_come_first_served(target, admin):
    waiters = [block(target, admin, "BLPOP", "k", "0") for _ in range(3)]
    tail = block(target, admin, "BRPOP", "other", "k", "0")
    assert admin.request("RPUSH", "k", "a", "b", "c", "d", "e") == b":5\r\n"
    for conn, element in zip(waiters, "abc"):
        assert conn.read_reply() == b"*2\r\n$1\r\nk\r\n$1\r\n%s\r\n" % element.encode()
    assert tail.read_reply() == b"*2\r\n$1\r\nk\r\n$1\r\ne\r\n"
    assert admin.request("LRANGE", "k", "0", "-1") == b"*1\r\n$1\r\nd\r\n"
    assert blocked_count(admin) == 0
    for conn in waiters + [tail]:
        conn.close()


def test_served_from_the_key_that_became_ready(target, admin):
    conn = block(target, admin, "BLMPOP", "0", "3", "k1", "k2", "k3", "RIGHT", "COUNT", "2")
    assert admin.request("RPUSH", "k3", "x", "y", "z") == b":3\r\n"
    assert conn.read_reply() == b"*2\r\n$2\r\nk3\r\n*2\r\n$1\r\nz\r\n$1\r\ny\r\n"
    conn.close()


# How each write reaches a client blocked in BLPOP k (db 0): the element it then pops.
SERVING_WRITES = {
    "a transaction, once it is over": ([("MULTI",), ("RPUSH", "k", "a"), ("LPOP", "k"), ("RPUSH", "k", "b"),
                                        ("EXEC",)], b"b"),
    "RENAME of a list onto the key": ([("RPUSH", "tmp", "r"), ("RENAME", "tmp", "k")], b"r"),
    "MOVE of a list into its db": ([("SELECT", "1"), ("RPUSH", "k", "m"), ("MOVE", "k", "0")], b"m"),
    "COPY of a list onto the key": ([("RPUSH", "src", "c"), ("COPY", "src", "k")], b"c"),
    "a chain of BLMOVEs": ([("RPUSH", "a", "x")], b"x"),
}


@pytest.mark.parametrize("how", sorted(SERVING_WRITES))
def test_writes_that_serve_a_blocked_client(target, admin, how):
    writes, element = SERVING_WRITES[how]
    chain = [block(target, admin, "BLMOVE", "a", "b", "LEFT", "RIGHT", "0"),
             block(target, admin, "BRPOPLPUSH", "b", "k", "0")]
    conn = block(target, admin, "BLPOP", "k", "0")
    with raw_connection(target.port) as writer:
        for argv in writes:
            assert not writer.request(*argv).startswith(b"-")
    assert conn.read_reply() == b"*2\r\n$1\r\nk\r\n$1\r\n%s\r\n" % element
    for waiter in chain:
        if how == "a chain of BLMOVEs":
            assert waiter.read_reply() == b"$1\r\nx\r\n"
        waiter.close()
    conn.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_fractional_timeouts_answer_as_the_command_does(target, admin, protocol):
    # a null array, for BLMOVE too (replyToBlockedClientTimedOut), where MULTI gets a null
    nothing = {2: b"*-1\r\n", 3: b"_\r\n"}[protocol]
    calls = [(("BLPOP", "missing", "0.15"), nothing),
             (("BLMPOP", "0.15", "1", "missing", "LEFT"), nothing),
             (("BLMOVE", "missing", "d", "LEFT", "RIGHT", "0.15"), nothing),
             (("BRPOPLPUSH", "missing", "d", "0.15"), nothing)]
    conns = []
    started = time.monotonic()
    for argv, _ in calls:
        conn = raw_connection(target.port)
        if protocol == 3:
            conn.request("HELLO", "3")
        conn.send(encode_command(*argv))
        conns.append(conn)
    wait_blocked(admin, len(calls))
    assert admin.request("INFO", "clients").count(b"clients_in_timeout_table:4") == 1
    for conn, (_, reply) in zip(conns, calls):
        assert conn.read_reply() == reply
        conn.close()
    assert 0.14 <= time.monotonic() - started < 1.5
    assert admin.request("EXISTS", "d") == b":0\r\n"
    # a timeout passed: the next push stays for whoever comes
    assert admin.request("RPUSH", "missing", "v") == b":1\r\n"


def test_client_unblock(target, admin):
    conns = {argv[0].lower(): block(target, admin, *argv) for argv in
             [("BLPOP", "k", "0"), ("BLMOVE", "k", "d", "LEFT", "LEFT", "0"), ("BLMPOP", "10", "1", "k", "LEFT")]}
    for conn in conns.values():
        conn.send(encode_command("PING"))          # answered once the blocking command is
    ids = {line.split(" cmd=")[1].split(" ")[0]: line.split(" ")[0][len("id="):]
           for line in admin.request("CLIENT", "LIST").decode().split("\n") if " flags=b " in line}
    assert sorted(ids) == ["blmove", "blmpop", "blpop"]
    assert admin.request("CLIENT", "UNBLOCK", ids["blpop"]) == b":1\r\n"
    assert admin.request("CLIENT", "UNBLOCK", ids["blmove"], "TIMEOUT") == b":1\r\n"
    assert admin.request("CLIENT", "UNBLOCK", ids["blmpop"], "ERROR") == b":1\r\n"
    assert admin.request("CLIENT", "UNBLOCK", ids["blpop"]) == b":0\r\n"
    assert conns["blpop"].read_reply() == b"*-1\r\n"
    assert conns["blmove"].read_reply() == b"*-1\r\n"
    assert conns["blmpop"].read_reply() == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    for conn in conns.values():
        assert conn.read_reply() == b"+PONG\r\n"
        conn.close()
    assert blocked_count(admin) == 0


def test_a_blocked_client_in_info_and_client_list(target, admin):
    forever = block(target, admin, "BLPOP", "k", "0")
    timed = block(target, admin, "BRPOPLPUSH", "k2", "d", "100")
    info = admin.request("INFO", "clients")
    assert b"blocked_clients:2\r\n" in info and b"clients_in_timeout_table:1\r\n" in info
    flags = [line.split(" flags=")[1].split(" ")[0] for line in
             admin.request("CLIENT", "LIST").decode().split("\n") if " cmd=b" in line]
    assert flags == ["b", "b"]
    assert admin.request("RPUSH", "k2", "v") == b":1\r\n"
    assert timed.read_reply() == b"$1\r\nv\r\n"
    assert b"blocked_clients:1\r\n" in admin.request("INFO", "clients")
    forever.close()
    wait_blocked(admin, 0)
    timed.close()


def test_a_client_gone_while_blocked_leaves_nothing_behind(target, admin):
    conns = [block(target, admin, "BLPOP", "k", "0"), block(target, admin, "BLMOVE", "k", "d", "LEFT",
                                                              "LEFT", "0")]
    for conn in conns:
        conn.close()
    wait_blocked(admin, 0)
    assert admin.request("RPUSH", "k", "v") == b":1\r\n"
    assert admin.request("LRANGE", "k", "0", "-1") == b"*1\r\n$1\r\nv\r\n"
    assert admin.request("EXISTS", "d") == b":0\r\n"


def test_many_clients_each_get_one_element(target, admin):
    """Twenty redis-py clients in threads block in BLPOP/BRPOP/BLMOVE; pushes from another
    client serve each exactly once, every element goes to exactly one of them."""
    results, errors = [], []

    def wait_for_one(index):
        client = redis.Redis(port=target.port, socket_timeout=10)
        try:
            if index % 3 == 0:
                results.append(client.blpop(["q", "nothing"], timeout=0)[1])
            elif index % 3 == 1:
                results.append(client.brpop(["nothing", "q"], timeout=0)[1])
            else:
                results.append(client.blmove("q", f"mine{index}", 0, "LEFT", "RIGHT"))
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)
        finally:
            client.close()

    threads = [threading.Thread(target=wait_for_one, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    wait_blocked(admin, 20)
    pusher = redis.Redis(port=target.port)
    for n in range(0, 20, 4):
        pusher.rpush("q", *[f"e{n + i}" for i in range(4)])
    for thread in threads:
        thread.join(10)
    pusher.close()
    assert not errors
    assert sorted(results) == sorted(f"e{n}".encode() for n in range(20))
    assert admin.request("EXISTS", "q") == b":0\r\n"


def test_elements_of_a_mebibyte(target):
    client = redis.Redis(port=target.port, socket_timeout=20)
    elements = [bytes([n]) * MIB + bytes(range(256)) * n for n in range(1, 5)]
    assert client.rpush("big", *elements[:3]) == 3
    assert client.lpush("big", elements[3]) == 4
    assert client.lrange("big", 0, -1) == [elements[3]] + elements[:3]
    assert client.lindex("big", 2) == elements[1]
    assert client.lpos("big", elements[2]) == 3
    assert client.lpop("big") == elements[3]
    assert client.rpop("big", 2) == [elements[2], elements[1]]
    assert client.lmove("big", "big2", "LEFT", "LEFT") == elements[0]
    assert client.exists("big") == 0

    waiter = redis.Redis(port=target.port, socket_timeout=20)
    got = []
    thread = threading.Thread(target=lambda: got.append(waiter.blpop(["big3"], timeout=5)))
    thread.start()
    with raw_connection(target.port) as admin:
        wait_blocked(admin, 1)
    client.rpush("big3", elements[2])
    thread.join(10)
    assert got == [(b"big3", elements[2])]
    client.close()
    waiter.close()


def test_no_reply_before_something_arrives(target, admin):
    conn = block(target, admin, "BLPOP", "k", "0")
    with pytest.raises(ReplyTimeout):
        conn.read_reply(0.2)
    admin.request("RPUSH", "k", "late")
    assert conn.read_reply() == b"*2\r\n$1\r\nk\r\n$4\r\nlate\r\n"
    conn.close()


def test_a_tenant_is_served_by_its_own_writes_only(cxl_factory):
    """cxlredis's tenants: keys of the same name in two tenants are two keys, so a push
    into one never serves a client blocked in the other (nor the administrators')."""
    server = cxl_factory()
    with raw_connection(server.port) as admin:
        for user, tenant in (("alice", "team-a"), ("bob", "team-b")):
            assert admin.request("ACL", "SETUSER", user, "on", ">pw", "~*", "+@all") == b"+OK\r\n"
            assert admin.request("TENANT", "CREATE", tenant, "USERS", user) == b"+OK\r\n"
        conns = {}
        for name in ("alice", "bob", "alice2"):
            conns[name] = raw_connection(server.port)
            assert conns[name].request("AUTH", name.rstrip("2"), "pw") == b"+OK\r\n"
        conns["alice"].send(encode_command("BLPOP", "k", "0"))
        wait_blocked(admin, 1)
        assert admin.request("RPUSH", "k", "admin's") == b":1\r\n"
        assert conns["bob"].request("RPUSH", "k", "bob's") == b":1\r\n"
        with pytest.raises(ReplyTimeout):
            conns["alice"].read_reply(0.1)
        assert conns["alice2"].request("RPUSH", "k", "alice's") == b":1\r\n"
        assert conns["alice"].read_reply() == b"*2\r\n$1\r\nk\r\n$7\r\nalice's\r\n"
        assert conns["bob"].request("LRANGE", "k", "0", "-1") == b"*1\r\n$5\r\nbob's\r\n"
        for conn in conns.values():
            conn.close()
