"""Keyspace notifications as a KV-aware router uses them, through redis-py: it learns
of every block that leaves the cache (evicted, expired, deleted) without polling, and
the setting survives CONFIG REWRITE and a restart. (The events of each command are
compared with Redis's in tests/differential/test_diff_notifications.py.)"""
import redis

from conftest import pubsub_messages


def heard(pubsub, wait=0.5):
    """(channel, data) of what the listener receives until it has been quiet for wait s."""
    return [(channel, data) for _, channel, data in pubsub_messages(pubsub, wait)]


def test_a_lowered_maxmemory_reports_every_evicted_key_without_a_command(cxl_factory):
    server = cxl_factory(arena_size="64mb", maxmemory_policy="allkeys-lru",
                         notify_keyspace_events="Ee")
    client = redis.Redis(port=server.port, socket_timeout=10)
    listener = client.pubsub()
    listener.subscribe("__keyevent@0__:evicted")
    assert listener.get_message(timeout=2)["type"] == "subscribe"
    written = [b"block:%d" % n for n in range(48)]
    for key in written:
        client.set(key, b"k" * 256 * 1024)
    assert heard(listener, 0.2) == []
    with redis.Redis(port=server.port, socket_timeout=10) as admin:
        admin.config_set("maxmemory", "4mb")
    # no command follows: the server evicts on its own and says so
    evicted = [key for _, key in heard(listener, 1.5)]
    remaining = [key for key in written if client.exists(key)]
    assert evicted and len(evicted) == len(set(evicted))
    assert sorted(evicted + remaining) == sorted(written)
    listener.close()
    client.close()


def test_expiry_and_deletion_are_heard_as_they_happen(cxl_factory):
    server = cxl_factory(notify_keyspace_events="Kgx")
    client = redis.Redis(port=server.port, socket_timeout=10)
    listener = client.pubsub()
    listener.psubscribe("__keyspace@0__:block:*")
    assert listener.get_message(timeout=2)["type"] == "psubscribe"
    client.set("block:1", "v", px=100)
    client.set("block:2", "v")
    client.delete("block:2")
    client.set("unwatched", "v", px=50)
    assert heard(listener, 1.5) == [(b"__keyspace@0__:block:1", b"expire"),
                                    (b"__keyspace@0__:block:2", b"del"),
                                    (b"__keyspace@0__:block:1", b"expired")]
    listener.close()
    client.close()


def test_the_setting_is_rewritten_and_read_back(cxl_factory, tmp_path):
    conf = tmp_path / "cxlredis.conf"
    conf.write_text("notify-keyspace-events Kx\n")
    server = cxl_factory(conf=str(conf))
    with redis.Redis(port=server.port, socket_timeout=10) as client:
        assert client.config_get("notify-keyspace-events") == {"notify-keyspace-events": "xK"}
        client.config_set("notify-keyspace-events", "KEA")
        client.config_rewrite()
    assert 'notify-keyspace-events "AKE"' in conf.read_text()
    server.restart()
    with redis.Redis(port=server.port, socket_timeout=10) as client:
        assert client.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
