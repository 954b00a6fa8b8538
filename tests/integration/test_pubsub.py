"""Pub/Sub with real clients: redis-py's PubSub (RESP2 and RESP3), the pubsub class of
client-output-buffer-limit against a subscriber that stops reading, and ACL channel
rules (&pattern, allchannels, resetchannels) compared with redis-server."""
import socket
import threading
import time

import pytest
import redis

from conftest import ServerProcess, encode_command, raw_connection


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_pubsub_receives_everything_published(cxl, protocol):
    client = redis.Redis(port=cxl.port, protocol=protocol, socket_timeout=10)
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe("rp.jobs")
    pubsub.psubscribe("rp.*")
    for _ in range(2):
        pubsub.get_message(timeout=2)
    sent = [f"payload {n}".encode() * (n + 1) for n in range(200)]

    def publisher():
        other = redis.Redis(port=cxl.port, socket_timeout=10)
        for payload in sent:
            assert other.publish("rp.jobs", payload) == 2
        other.close()

    thread = threading.Thread(target=publisher)
    thread.start()
    heard = []
    deadline = time.monotonic() + 30
    while len(heard) < 2 * len(sent) and time.monotonic() < deadline:
        message = pubsub.get_message(timeout=1)
        if message is not None:
            heard.append((message["type"], message["data"]))
    thread.join()
    assert [data for kind, data in heard if kind == "message"] == sent
    assert [data for kind, data in heard if kind == "pmessage"] == sent
    pubsub.close()
    client.close()


def test_a_subscriber_that_stops_reading_is_closed_at_the_pubsub_hard_limit():
    server = ServerProcess("cxlredis", {"client-output-buffer-limit": "pubsub 1mb 0 0"})
    server.start()
    try:
        slow = socket.create_connection(("127.0.0.1", server.port))
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.sendall(encode_command("SUBSCRIBE", "flood"))
        publisher = redis.Redis(port=server.port, socket_timeout=10)
        deadline = time.monotonic() + 30
        payload = b"x" * 65536
        while publisher.publish("flood", payload) and time.monotonic() < deadline:
            pass
        # The subscriber is gone (nobody receives any more) well before the deadline, and
        # the server holds nothing for it: its memory stays where it was.
        assert publisher.publish("flood", payload) == 0
        assert time.monotonic() < deadline
        assert publisher.pubsub_numsub("flood") == [(b"flood", 0)]
        clients = publisher.client_list()
        assert [c for c in clients if c["flags"] == "P"] == []
        publisher.close()
        slow.close()
    finally:
        server.close()


ACL_STEPS = [
    ("ACL", "SETUSER", "pub", "on", "nopass", "+@all", "~*", "resetchannels", "&news.*", "&exact"),
    ("AUTH", "pub", "x"),
    ("PUBLISH", "news.today", "ok"),
    ("PUBLISH", "sports", "denied"),
    ("SUBSCRIBE", "exact", "sports"),
    ("SUBSCRIBE", "exact"),
    ("UNSUBSCRIBE", "exact"),
    ("PSUBSCRIBE", "news.*"),
    ("PSUBSCRIBE", "news.?"),
    ("PUNSUBSCRIBE",),
    ("SSUBSCRIBE", "news.x"),
    ("SUNSUBSCRIBE",),
    ("SPUBLISH", "other", "m"),
    ("MULTI",),
    ("PUBLISH", "sports", "queued"),
    ("EXEC",),
    ("AUTH", "default", "x"),
    ("ACL", "DRYRUN", "pub", "PUBLISH", "sports", "m"),
    ("ACL", "SETUSER", "pub", "allchannels"),
    ("ACL", "DRYRUN", "pub", "PUBLISH", "sports", "m"),
    ("ACL", "DELUSER", "pub"),
]


def _transcript(server):
    with raw_connection(server.port) as conn:
        conn.request("ACL", "LOG", "RESET")        # (earlier tests share these servers)
        replies = [conn.request(*step) for step in ACL_STEPS]
        log = conn.request("ACL", "LOG")
        conn.request("ACL", "LOG", "RESET")
    return replies, log


def test_acl_channel_rules_match_redis(cxl, redis_oracle):
    expected, expected_log = _transcript(redis_oracle)
    actual, actual_log = _transcript(cxl)
    for step, want, got in zip(ACL_STEPS, expected, actual):
        assert got == want, f"{step}: redis-server {want!r}, cxlredis {got!r}"
    # The log's reasons and objects (not its times, ids and client details).
    def essentials(log):
        return [part for part in log.split(b"\r\n") if part in (b"channel", b"sports", b"news.?", b"other")]
    assert essentials(actual_log) == essentials(expected_log)
