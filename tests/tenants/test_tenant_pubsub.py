"""Pub/Sub across tenants: channel names are namespaced like keys, so a tenant never
hears another tenant's messages (channels or patterns) and PUBSUB shows it its own."""
import pytest
import redis

from conftest import pubsub_messages
from tenant_helpers import USERS, as_user, tenant_server


@pytest.fixture(scope="module")
def server():
    srv = tenant_server(USERS + ["tenant team-a users alice", "tenant team-b users bob"])
    try:
        yield srv.start()
    finally:
        srv.close()


def messages(pubsub):
    return pubsub_messages(pubsub, wait=1.0)


def test_a_tenant_hears_only_its_own_channels(server):
    alice, bob = as_user(server, "alice"), as_user(server, "bob")
    admin = redis.Redis(port=server.port, socket_timeout=10)
    listeners = {}
    for name, client in (("alice", alice), ("bob", bob), ("admin", admin)):
        pubsub = listeners[name] = client.pubsub()
        pubsub.subscribe("news")
        pubsub.psubscribe("ne*")
        assert pubsub.get_message(timeout=2)["type"] == "subscribe"
        assert pubsub.get_message(timeout=2)["type"] == "psubscribe"
    assert alice.publish("news", "from a") == 2      # its channel and its pattern, nobody else
    assert bob.publish("news", "from b") == 2
    assert admin.publish("nest", "from admin") == 1
    assert messages(listeners["alice"]) == [("message", b"news", b"from a"),
                                            ("pmessage", b"news", b"from a")]
    assert messages(listeners["bob"]) == [("message", b"news", b"from b"),
                                          ("pmessage", b"news", b"from b")]
    assert messages(listeners["admin"]) == [("pmessage", b"nest", b"from admin")]
    assert alice.pubsub_channels() == [b"news"]
    assert alice.pubsub_numsub("news") == [(b"news", 1)]
    assert alice.pubsub_numpat() == 1
    for pubsub in listeners.values():
        pubsub.close()
    for client in (alice, bob, admin):
        client.close()


def test_shard_channels_are_namespaced_too(server):
    alice, bob = as_user(server, "alice"), as_user(server, "bob")
    pubsub = alice.pubsub()
    pubsub.ssubscribe("orders")
    assert pubsub.get_sharded_message(timeout=2)["type"] == "ssubscribe"
    assert bob.spublish("orders", "not yours") == 0
    assert alice.spublish("orders", "yours") == 1
    message = pubsub.get_sharded_message(ignore_subscribe_messages=True, timeout=2)
    assert (message["type"], message["data"]) == ("smessage", b"yours")
    assert bob.pubsub_shardchannels() == []
    pubsub.close()
    alice.close()
    bob.close()
