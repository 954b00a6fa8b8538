"""Pub/Sub in a cluster of cxlredis and redis-server nodes: PUBLISH on any node reaches
the subscribers of every node over the cluster bus, whichever kind sent or received it;
shard channels live on their slot's owner, and lose their subscribers, told with a
sunsubscribe, when that node stops serving the slot (compared with a redis-server owner)."""
import pytest

from cluster_harness import cluster_node, formed, keys_in_slots, owned_slots
from conftest import encode_command, parse_reply, raw_connection


@pytest.fixture(scope="module")
def nodes():
    with formed([cluster_node("cxlredis"), cluster_node("redis"), cluster_node("cxlredis")]) as nodes:
        yield nodes


def _subscribed(node, *command):
    conn = raw_connection(node.port)
    conn.send(encode_command(*command))
    conn.read_reply()
    return conn


def test_publish_reaches_every_nodes_subscribers(nodes):
    listeners = [_subscribed(node, "SUBSCRIBE", "news") for node in nodes]
    try:
        for sender in nodes:
            text = f"from {sender.kind}:{sender.port}"
            with raw_connection(sender.port) as conn:
                # PUBLISH counts the receivers on its own node, as Redis's does
                assert conn.request("PUBLISH", "news", text) == b":1\r\n"
            for listener in listeners:
                assert listener.read_reply() == encode_command("message", "news", text)
    finally:
        for listener in listeners:
            listener.close()


def test_a_lost_slot_unsubscribes_its_shard_channel_subscribers(nodes):
    """CLUSTER DELSLOTS on the owner: its subscribers hear sunsubscribe, as Redis's do."""
    heard = {}
    for owner in (nodes[0], nodes[1]):          # a cxlredis owner, then a redis-server one
        slot = owned_slots(owner)[0]
        channel, other = keys_in_slots([slot], 2, "shard")
        listener = _subscribed(owner, "SSUBSCRIBE", channel)
        assert listener.request("SSUBSCRIBE", other)[:1] == b"*"
        try:
            with raw_connection(owner.port) as conn:
                assert conn.request("SPUBLISH", channel, "before") == b":1\r\n"
                assert listener.read_reply() == encode_command("smessage", channel, "before")
                assert conn.request("CLUSTER", "DELSLOTS", slot) == b"+OK\r\n"
                assert conn.request("CLUSTER", "ADDSLOTS", slot) == b"+OK\r\n"
                got = [listener.read_reply(), listener.read_reply()]
                assert parse_reply(conn.request("PUBSUB", "SHARDNUMSUB", channel)) == [channel, 0]
            heard[owner.kind] = [frame.replace(channel, b"<1>").replace(other, b"<2>")
                                 for frame in got]
        finally:
            listener.close()
    assert sorted(heard["cxlredis"]) == sorted(heard["redis"])
