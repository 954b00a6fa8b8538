"""Pub/Sub, replayed on redis-server and cxlredis; every reply and message must match
(RESP2 and RESP3). Conn 0 and conn 1 are two clients of each server; a step `heard(n)`
reads what the server sent conn n without sending anything.

Each sequence uses channel names of its own, so a subscription of an earlier test whose
connection is still closing on the server cannot show in PUBSUB CHANNELS.
"""
import pytest

from diff_harness import client_info_fields, cmd, normalised, raw, run_sequence, sorted_elements

# Redis keeps channels in a hash table: PUBSUB CHANNELS lists them in no set order.
ANY_ORDER = normalised(sorted_elements)

pytestmark = pytest.mark.usefixtures("flushed")


def heard(conn, messages=1):
    return raw(b"", conn=conn, replies=messages)


SEQUENCES = {
    "subscribe publish unsubscribe": [
        cmd("SUBSCRIBE", "s1.a", "s1.b", "s1.a", conn=1, replies=3),
        cmd("PUBLISH", "s1.a", "hello"),
        heard(1),
        cmd("PUBLISH", "s1.b", ""),
        heard(1),
        cmd("PUBLISH", "s1.none", "x"),
        cmd("PUBSUB", "CHANNELS", "s1.*", compare=ANY_ORDER),
        cmd("PUBSUB", "NUMSUB", "s1.a", "s1.none", "s1.a"),
        cmd("PUBSUB", "NUMSUB"),
        cmd("UNSUBSCRIBE", "s1.a", "s1.never", conn=1, replies=2),
        cmd("PUBLISH", "s1.a", "gone"),
        cmd("UNSUBSCRIBE", conn=1),
        cmd("UNSUBSCRIBE", conn=1),
        cmd("PUBSUB", "NUMSUB", "s1.b"),
        cmd("GET", "k", conn=1),
    ],
    "patterns": [
        # (one matching pattern per message: Redis tries its patterns in hash order)
        cmd("PSUBSCRIBE", "s2.*", "s2x.?x", conn=1, replies=2),
        cmd("PUBLISH", "s2x.ax", "second"),
        heard(1),
        cmd("PUBLISH", "s2.long", "one"),
        heard(1),
        cmd("PUBLISH", "other", "none"),
        cmd("PUBSUB", "NUMPAT"),
        cmd("PUBSUB", "CHANNELS", "s2.*", compare=ANY_ORDER),
        cmd("SUBSCRIBE", "s2.long", conn=1),
        cmd("PUBLISH", "s2.long", "channel and pattern"),
        heard(1, 2),
        cmd("PUNSUBSCRIBE", "s2x.?x", conn=1),
        cmd("PUNSUBSCRIBE", conn=1),
        cmd("PUNSUBSCRIBE", conn=1),
        cmd("UNSUBSCRIBE", conn=1),
    ],
    "glob classes and escapes": [
        cmd("PSUBSCRIBE", "s3.[a-c]", "s3.\\*", "s3.[^x]y", conn=1, replies=3),
        cmd("PUBLISH", "s3.b", "class"),
        heard(1),
        cmd("PUBLISH", "s3.*", "literal star"),
        heard(1),
        cmd("PUBLISH", "s3.zy", "negated"),
        heard(1),
        cmd("PUBLISH", "s3.xy", "no"),
        cmd("PUBLISH", "s3.d", "no"),
    ],
    "subscribed mode": [
        cmd("SUBSCRIBE", "s4.a", conn=1),
        cmd("GET", "k", conn=1),
        cmd("SET", "k", "v", conn=1),
        cmd("CLIENT", "INFO", conn=1),
        cmd("MULTI", conn=1),
        cmd("PING", conn=1),
        cmd("PING", "msg", conn=1),
        cmd("PSUBSCRIBE", "s4.*", conn=1),
        cmd("SSUBSCRIBE", "s4.shard", conn=1),
        cmd("UNSUBSCRIBE", conn=1),
        cmd("PUNSUBSCRIBE", conn=1),
        cmd("GET", "k", conn=1),
        cmd("SUNSUBSCRIBE", conn=1),
        cmd("GET", "k", conn=1),
        cmd("PING", conn=1),
    ],
    "reset leaves every channel": [
        cmd("SUBSCRIBE", "s5.a", conn=1),
        cmd("PSUBSCRIBE", "s5.*", conn=1),
        cmd("RESET", conn=1),
        cmd("PUBLISH", "s5.a", "nobody"),
        cmd("PUBSUB", "NUMSUB", "s5.a"),
        cmd("GET", "k", conn=1),
    ],
    "publishing to yourself": [
        cmd("SUBSCRIBE", "s6.me"),
        cmd("PSUBSCRIBE", "s6.*"),
    ],
    "shard channels": [
        cmd("SSUBSCRIBE", "s7.a", "s7.b", conn=1, replies=2),
        cmd("SPUBLISH", "s7.a", "sharded"),
        heard(1),
        cmd("PUBLISH", "s7.a", "not to shard subscribers"),
        cmd("PUBSUB", "SHARDCHANNELS", "s7.*", compare=ANY_ORDER),
        cmd("PUBSUB", "SHARDNUMSUB", "s7.a", "s7.c"),
        cmd("PUBSUB", "CHANNELS", "s7.*"),
        cmd("SUBSCRIBE", "s7.a", conn=1),
        cmd("SUNSUBSCRIBE", "s7.a", conn=1),
        cmd("SUNSUBSCRIBE", conn=1),
        cmd("UNSUBSCRIBE", conn=1),
    ],
    "subscribe inside multi": [
        cmd("MULTI", conn=1),
        cmd("SUBSCRIBE", "s8.a", conn=1),
        cmd("EXEC", conn=1),        # one reply: the array holding SUBSCRIBE's
        cmd("PUBLISH", "s8.a", "after exec"),
        heard(1),
    ],
    "errors and help": [
        cmd("PUBSUB", "CHANNELS", "a", "b"),
        cmd("PUBSUB", "SHARDCHANNELS", "a", "b"),
        cmd("PUBSUB", "NUMPAT", "x"),
        cmd("PUBSUB", "NOSUCH"),
        cmd("PUBSUB", "HELP"),
        cmd("PUBLISH", "only-channel"),
        cmd("SUBSCRIBE"),
        cmd("PSUBSCRIBE"),
        cmd("SPUBLISH", "c"),
    ],
    # past large-value-threshold: the subscribers share the message's one copy
    "large message": [
        cmd("SUBSCRIBE", "s11.big", conn=1),
        cmd("PSUBSCRIBE", "s11.*", conn=1),
        cmd("PUBLISH", "s11.big", bytes(range(256)) * 8192),
        heard(1, 2),
        cmd("PUBLISH", "s11.big", b""),
        heard(1, 2),
    ],
    "binary channels and messages": [
        cmd("SUBSCRIBE", b"s9.\x00\xff\r\n", conn=1),
        cmd("PUBLISH", b"s9.\x00\xff\r\n", b"\x00\r\n" * 1000),
        heard(1),
        cmd("PUBSUB", "NUMSUB", b"s9.\x00\xff\r\n"),
    ],
    # Subscription replies and messages are pushes, which CLIENT REPLY OFF/SKIP let through;
    # the RESP2 refusal of CLIENT REPLY ON while subscribed is a reply, so it stays hidden.
    "client reply off and skip": [
        cmd("CLIENT", "REPLY", "OFF", conn=1, replies=0),
        cmd("SUBSCRIBE", "s10.a", conn=1),
        cmd("PING", conn=1, replies=0),
        cmd("PUBLISH", "s10.a", "pushed anyway"),
        heard(1),
        cmd("CLIENT", "REPLY", "ON", conn=1, replies=0),
        cmd("UNSUBSCRIBE", conn=1),
        cmd("CLIENT", "REPLY", "ON", conn=1),
        cmd("CLIENT", "REPLY", "SKIP", conn=1, replies=0),
        cmd("SUBSCRIBE", "s10.b", conn=1),
        cmd("UNSUBSCRIBE", conn=1),
        cmd("PING", conn=1),
    ],
}

# RESP3 only: a subscribed connection may run anything, its messages are pushes.
RESP3_ONLY = {
    "publishing to yourself": [
        cmd("PUBLISH", "s6.me", "echo", replies=3),
        cmd("GET", "k"),
        cmd("CLIENT", "INFO", compare=normalised(client_info_fields)),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_pubsub_sequence(redis_oracle, cxl, name, protocol):
    steps = SEQUENCES[name] + (RESP3_ONLY.get(name, []) if protocol == 3 else [])
    run_sequence(redis_oracle, cxl, steps, protocol, name)
