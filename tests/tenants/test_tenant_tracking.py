"""Client-side caching across tenants: a tracking client hears of the keys it can read
only. Another tenant's write of a key of the same name, an administrator's, or another
tenant's FLUSHALL sends it nothing; a write of a shared namespace it reads through
(SHARED-READ) or addresses (SHARED-WRITE) reaches it, under the name it read."""
import pytest

from conftest import parse_reply, raw_connection
from tenant_helpers import PASSWORD, USERS, tenant_server


@pytest.fixture(scope="module")
def server():
    srv = tenant_server(USERS + ["tenant team-a users alice",
                                 "tenant team-b users bob shared-read team-a",
                                 "tenant team-c users carol shared-write team-a"])
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def connect(server):
    opened = []

    def connect_as(user=None, resp3=True):
        conn = raw_connection(server.port)
        opened.append(conn)
        if user is not None:
            assert conn.request("AUTH", user, PASSWORD) == b"+OK\r\n"
        if resp3:
            conn.request("HELLO", "3")
        return conn

    yield connect_as
    admin = raw_connection(server.port)
    for user in ("alice", "bob", "carol"):
        admin.request("AUTH", user, PASSWORD)
        admin.request("FLUSHALL")
    admin.close()
    for conn in opened:
        conn.close()


def told(conn):
    """The invalidations conn got before the reply to a PING: [keys or None]."""
    conn.send(b"*1\r\n$4\r\nPING\r\n")
    heard = []
    while True:
        reply = conn.read_reply()
        if reply == b"+PONG\r\n":
            return heard
        message = parse_reply(reply)
        assert message[0] == b"invalidate", message
        heard.append(message[1])


def test_writes_reach_only_the_trackers_of_the_same_tenant(connect):
    alice, alice_bcast = connect("alice"), connect("alice")
    bob, admin = connect("bob"), connect()
    assert alice.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    assert alice_bcast.request("CLIENT", "TRACKING", "ON", "BCAST") == b"+OK\r\n"
    assert bob.request("CLIENT", "TRACKING", "ON", "BCAST") == b"+OK\r\n"
    alice.request("GET", "same")
    for writer in (connect("carol"), admin):        # other namespaces: their own "same"
        writer.request("SET", "same", "not alice's")
        writer.request("FLUSHALL")
    assert told(alice) == [] and told(alice_bcast) == []
    connect("alice").request("SET", "same", "alice's")
    assert told(alice) == [[b"same"]]
    assert told(alice_bcast) == [[b"same"]]
    assert told(bob) == []        # bob reads through to team-a, but BCAST follows its own namespace


def test_a_shared_namespace_write_reaches_its_readers_under_their_names(connect):
    alice = connect("alice")
    alice.request("SET", "model:prefix", "v1")
    bob = connect("bob")
    assert bob.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    assert parse_reply(bob.request("GET", "model:prefix")) == b"v1"       # read through
    carol = connect("carol")
    assert carol.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    assert parse_reply(carol.request("GET", "team-a:model:prefix")) == b"v1"
    alice.request("SET", "model:prefix", "v2")
    assert told(bob) == [[b"model:prefix"]]
    assert told(carol) == [[b"team-a:model:prefix"]]
    # bob's own key of that name shadows the shared one, and a write of it is bob's news
    bob.request("GET", "model:prefix")
    connect("bob").request("SET", "model:prefix", "bob's own")
    assert told(bob) == [[b"model:prefix"]]
    # carol writes through her grant: bob, who read the shared key, hears of it too
    bob.request("GET", "other")
    carol.request("GET", "team-a:other")
    connect("carol").request("SET", "team-a:other", "x")
    assert told(bob) == [[b"other"]]
    assert told(carol) == [[b"team-a:other"]]


def test_a_flush_tells_the_trackers_that_see_the_namespace(connect):
    alice, bob, admin = connect("alice"), connect("bob"), connect()
    for conn in (alice, bob, admin):
        assert conn.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    connect("bob").request("FLUSHALL")
    assert (told(alice), told(bob), told(admin)) == ([], [None], [])
    connect("alice").request("FLUSHDB")
    assert (told(alice), told(bob), told(admin)) == ([None], [None], [])   # bob reads team-a
    connect().request("FLUSHALL")
    assert (told(alice), told(bob), told(admin)) == ([], [], [None])


def test_a_client_that_changes_tenant_hears_nothing_more_of_the_old_one(connect):
    switcher = connect("alice")
    assert switcher.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
    switcher.request("GET", "left-behind")
    assert switcher.request("AUTH", "carol", PASSWORD) == b"+OK\r\n"     # tracking stays on
    connect("alice").request("SET", "left-behind", "x")
    assert told(switcher) == []


def test_invalidations_are_redirected_within_the_tenant_only(connect):
    alice, alice_target, bob = connect("alice"), connect("alice"), connect("bob")
    bob_id = parse_reply(bob.request("CLIENT", "ID"))
    assert alice.request("CLIENT", "TRACKING", "ON", "REDIRECT", str(bob_id)) == (
        b"-ERR The client ID you want redirect to does not exist\r\n")
    target_id = parse_reply(alice_target.request("CLIENT", "ID"))
    assert alice.request("CLIENT", "TRACKING", "ON", "REDIRECT", str(target_id)) == b"+OK\r\n"
    alice.request("GET", "k")
    connect("alice").request("SET", "k", "1")
    assert told(alice_target) == [[b"k"]]
    alice.request("GET", "k")
    assert alice_target.request("AUTH", "bob", PASSWORD) == b"+OK\r\n"   # the target moved on
    connect("alice").request("SET", "k", "2")
    assert told(alice_target) == []
    assert parse_reply(alice.read_reply()) == [b"tracking-redir-broken", target_id]
