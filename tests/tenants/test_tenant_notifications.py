"""Keyspace notifications across tenants: a tenant hears the events of its own keys only,
whether a command caused them or the arena dropped the key (expired, evicted by the
tenant's quota), in the server's arena and in a tenant's own (ARENA own)."""
import time

import pytest
import redis

from conftest import pubsub_messages
from tenant_helpers import USERS, as_user, tenant_server


@pytest.fixture(scope="module")
def server():
    srv = tenant_server(USERS + ["tenant team-a quota 2mb users alice",
                                 "tenant team-b users bob",
                                 "tenant own-c quota 64mb arena own users carol"],
                        notify_keyspace_events="KEA")
    try:
        yield srv.start()
    finally:
        srv.close()


def heard(pubsub, wait=0.5):
    """(channel, data) of what the listener receives until it has been quiet for wait s."""
    return [(channel, data) for _, channel, data in pubsub_messages(pubsub, wait)]


@pytest.fixture
def listeners(server):
    clients = {name: as_user(server, name) for name in ("alice", "bob", "carol")}
    clients["admin"] = redis.Redis(port=server.port, socket_timeout=10)
    subscribed = {}
    for name, client in clients.items():
        subscribed[name] = client.pubsub()
        subscribed[name].psubscribe("__keyevent@0__:*")
        assert subscribed[name].get_message(timeout=2)["type"] == "psubscribe"
    yield clients, subscribed
    for pubsub in subscribed.values():
        pubsub.close()
    for client in clients.values():
        client.flushdb()
        client.close()


def test_command_events_reach_only_the_writers_tenant(listeners):
    clients, subscribed = listeners
    for name in ("alice", "bob", "carol", "admin"):
        clients[name].set("same-name", name)
    for name in ("alice", "bob", "carol", "admin"):
        assert heard(subscribed[name]) == [(b"__keyevent@0__:set", b"same-name")], name


def test_expired_keys_reach_only_their_tenant(listeners):
    clients, subscribed = listeners
    for name in ("alice", "carol"):
        clients[name].set(f"{name}-short", "v", px=50)
    time.sleep(0.3)     # active expiry, with no command to find the keys
    for name in ("alice", "carol"):
        key = f"{name}-short".encode()
        assert heard(subscribed[name], 1.5) == [(b"__keyevent@0__:set", key),
                                                (b"__keyevent@0__:expire", key),
                                                (b"__keyevent@0__:expired", key)]
    assert heard(subscribed["bob"]) == [] and heard(subscribed["admin"]) == []


def test_a_quota_eviction_is_heard_by_the_tenant_that_lost_the_keys(listeners):
    clients, subscribed = listeners
    alice = clients["alice"]
    written = [f"chunk:{n}".encode() for n in range(40)]
    for key in written:
        alice.set(key, b"x" * 128 * 1024)      # 5 MiB into a 2 MiB quota
    events = heard(subscribed["alice"], 1.0)
    evicted = {key for channel, key in events if channel == b"__keyevent@0__:evicted"}
    remaining = {key for key in written if alice.exists(key)}
    assert evicted and evicted == set(written) - remaining
    assert heard(subscribed["bob"]) == [] and heard(subscribed["admin"]) == []
