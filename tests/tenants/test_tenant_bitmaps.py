"""The bitmap commands and LCS in tenants: identical key names stay apart, writes are
held to the tenant's quota (a far SETBIT, a BITFIELD and a BITOP result are writes
like any other), and a shared namespace is read through but never written without a
grant (a bit set in a shared bitmap gives the tenant its own copy)."""
import pytest
import redis

from tenant_helpers import USERS, as_user, tenant_info, tenant_server

MiB = 1 << 20


@pytest.fixture(scope="module")
def server():
    lines = USERS + [
        "tenant common users publisher",
        "tenant team-a quota 2mb policy noeviction users alice shared-read common",
        "tenant team-b quota 2mb policy allkeys-lru users bob shared-read common shared-write common",
    ]
    srv = tenant_server(lines)
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def users(server):
    clients = {name: as_user(server, name) for name in ("publisher", "alice", "bob")}
    clients["admin"] = server.client()
    for client in clients.values():
        client.flushall()
    yield clients
    for client in clients.values():
        client.close()


def test_identical_keys_in_every_bitmap_command(users):
    alice, bob, admin = users["alice"], users["bob"], users["admin"]
    for client, value in ((alice, b"\x0f"), (bob, b"\xf0"), (admin, b"\xff\xff")):
        client.set("bits", value)
    assert alice.setbit("bits", 0, 1) == 0 and bob.setbit("bits", 0, 1) == 1
    assert (alice.get("bits"), bob.get("bits"), admin.get("bits")) == (b"\x8f", b"\xf0", b"\xff\xff")
    assert (alice.bitcount("bits"), bob.bitcount("bits"), admin.bitcount("bits")) == (5, 4, 16)
    assert (alice.bitpos("bits", 0), bob.bitpos("bits", 0), admin.bitpos("bits", 0)) == (1, 4, 16)
    assert alice.getbit("bits", 4) == 1 and bob.getbit("bits", 4) == 0
    assert alice.bitfield("bits").incrby("u8", 0, 1).execute() == [0x90]
    assert bob.bitfield("bits").get("u8", 0).execute() == [0xF0]
    assert bob.bitfield_ro("bits", "u8", 0) == [0xF0]
    # BITOP reads and writes the caller's own keys: bob has no "other"
    alice.set("other", b"\x01")
    assert bob.bitop("OR", "out", "bits", "other") == 1 and bob.get("out") == b"\xf0"
    assert alice.bitop("OR", "out", "bits", "other") == 1 and alice.get("out") == b"\x91"
    assert admin.exists("out") == 0
    assert bob.bitop("AND", "out", "missing") == 0 and bob.exists("out") == 0 and alice.get("out") == b"\x91"
    alice.set("text", "ohmytext")
    bob.set("text", "mynewtext")
    assert alice.lcs("text", "text") == b"ohmytext" and bob.lcs("text", "text") == b"mynewtext"
    assert alice.lcs("text", "missing") == b""


def test_bitmap_writes_are_held_to_the_quota(server, users):
    alice, bob = users["alice"], users["bob"]
    bob.set("keep", "b")
    # a 4 MiB string for a SETBIT far out: over team-a's 2 MiB, refused, nothing left behind
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        alice.setbit("far", 4 * MiB * 8, 1)
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        alice.bitfield("far").set("u8", 3 * MiB * 8, 1).execute()
    assert alice.exists("far") == 0
    # a BITOP result is reserved on the tenant's bill too
    alice.setbit("half", MiB * 8 - 1, 1)
    alice.set("half2", "x")
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        alice.bitop("NOT", "inverted", "half")
    assert alice.exists("inverted") == 0 and alice.strlen("half") == MiB
    assert alice.bitcount("half") == 1 and alice.get("half2") == b"x"
    info = tenant_info(server.client(), "team-a")
    assert info["keys"] == 2 and info["evicted_keys"] == 0
    # the other tenant saw none of it
    assert bob.get("keep") == b"b" and bob.exists("far", "half", "inverted") == 0


def test_shared_bitmaps_are_read_through_and_copied_up(users):
    pub, alice, bob = users["publisher"], users["alice"], users["bob"]
    pub.set("flags", b"\x80\x01")
    pub.set("words", "ohmytext")
    assert alice.getbit("flags", 0) == 1 and alice.bitcount("flags") == 2 and alice.bitpos("flags", 1, 1) == 15
    assert alice.bitfield_ro("flags", "u16", 0) == [0x8001]
    alice.set("mine", "mynewtext")
    assert alice.lcs("words", "mine") == b"mytext"
    assert alice.bitop("AND", "both", "flags", "flags") == 2 and alice.get("both") == b"\x80\x01"
    # a write gives alice her own copy; the shared one stays
    assert alice.setbit("flags", 1, 1) == 0
    assert alice.get("flags") == b"\xc0\x01" and pub.get("flags") == b"\x80\x01"
    assert bob.bitfield("flags").set("u8", 8, 255).execute() == [1]
    assert bob.get("flags") == b"\x80\xff" and pub.get("flags") == b"\x80\x01"
    # bob may write the shared namespace through its prefix; alice may not (common: is her own key)
    assert bob.setbit("common:flags", 15, 0) == 1 and pub.get("flags") == b"\x80\x00"
    assert bob.bitop("NOT", "common:inverted", "common:flags") == 2 and pub.get("inverted") == b"\x7f\xff"
    assert alice.setbit("common:flags", 0, 1) == 0 and alice.get("common:flags") == b"\x80"
    assert pub.get("flags") == b"\x80\x00" and pub.exists("common:flags") == 0
