"""The CXL command family over the wire: references, reservations, leases, and who
may map (transport, ACL category, tenants). The bytes are checked through a
mapping of the arena file made here, as a co-located client would."""
import hashlib
import mmap
import os
import struct
import time

import pytest
import redis

from conftest import parse_reply, raw_connection
from cxl_helpers import PASSWORD, TENANT_LINES, USERS, cxl_server, info, unix_client


@pytest.fixture(scope="module")
def server():
    srv = cxl_server(USERS + TENANT_LINES)
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def r(server):
    client = unix_client(server)
    client.flushall()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="module")
def arena(server):
    with open(server.arena_path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
    try:
        yield mapping
    finally:
        mapping.close()


def tcp(server, user=None, password=PASSWORD):
    if user is None:
        return redis.Redis(port=server.port, socket_timeout=10)
    return redis.Redis(port=server.port, username=user, password=password, socket_timeout=10)


def header_u64(arena, header, offset):
    return struct.unpack_from("<Q", arena, header + offset)[0]


# ---------------------------------------------------------------- CXL INFO

def test_info_describes_the_backing(server, r):
    fields = info(r)
    assert fields["backing-path"] == os.path.abspath(server.arena_path)
    assert fields["backing-size"] == os.path.getsize(server.arena_path) == 64 << 20
    assert fields["backing-offset"] == 0
    assert fields["layout-version"] == 4
    assert fields["page-size"] >= 4096
    assert fields["mapping"] == "allowed" and fields["mapping-refused-because"] == ""
    assert fields["lease-ms"] == 5000
    with open(server.arena_path, "rb") as f:
        head = f.read(fields["geometry-bytes"])
    assert head.startswith(b"CXLREDIS")
    assert hashlib.blake2b(head, digest_size=16).hexdigest() == fields["geometry-digest"]


# ---------------------------------------------------------------- references

def test_getref_points_at_the_value_in_the_mapping(r, arena):
    value = os.urandom(300_000)
    r.set("k", value)
    off, length, generation, lease, ttl_ms, header = r.execute_command("CXL", "GETREF", "k")
    assert length == len(value) and ttl_ms == 5000 and lease > 0
    assert arena[off:off + length] == value
    fields = info(r)
    assert header_u64(arena, header, fields["generation-offset"]) == generation
    state = header_u64(arena, header, fields["state-offset"]) & fields["state-mask"]
    assert state == fields["live-state"]
    assert r.execute_command("CXL", "RELEASE", lease) == 1
    assert r.execute_command("CXL", "RELEASE", lease) == 0     # already ended


def test_getref_of_a_missing_key_is_nil_and_of_a_hash_wrongtype(r):
    assert r.execute_command("CXL", "GETREF", "nope") is None
    r.hset("h", "f", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("CXL", "GETREF", "h")
    assert info(r)["leases-refs"] == 0


def test_mgetref_mixes_hits_and_misses_and_is_all_or_nothing(r):
    r.set("a", "1")
    r.set("b", "22")
    refs = r.execute_command("CXL", "MGETREF", "a", "missing", "b")
    assert refs[1] is None and refs[0][1] == 1 and refs[2][1] == 2
    assert r.execute_command("CXL", "RELEASE", refs[0][3], refs[2][3]) == 2
    r.hset("h", "f", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("CXL", "MGETREF", "a", "h")
    assert info(r)["leases-refs"] == 0


def test_a_leased_value_survives_delete_and_overwrite_in_place(r, arena):
    value = os.urandom(200_000)
    r.set("k", value)
    off, length, generation, lease, _, header = r.execute_command("CXL", "GETREF", "k")
    r.delete("k")
    r.set("k", b"x" * 200_000)                  # a new block: the leased one is pinned
    for n in range(20):
        r.set(f"churn{n}", os.urandom(200_000))
    assert arena[off:off + length] == value
    fields = info(r)
    assert header_u64(arena, header, fields["generation-offset"]) == generation
    assert r.execute_command("CXL", "RELEASE", lease) == 1


def test_append_in_place_changes_the_generation_not_the_leased_bytes(r, arena):
    r.set("k", b"a" * 100)
    off, length, generation, lease, _, header = r.execute_command("CXL", "GETREF", "k")
    r.append("k", b"b")
    assert arena[off:off + length] == b"a" * 100
    assert header_u64(arena, header, info(r)["generation-offset"]) != generation
    r.execute_command("CXL", "RELEASE", lease)


def test_leases_belong_to_their_connection(server, r):
    r.set("k", "v")
    lease = r.execute_command("CXL", "GETREF", "k")[3]
    other = unix_client(server)
    try:
        assert other.execute_command("CXL", "RELEASE", lease) == 0
        slot = r.execute_command("CXL", "RESERVE", "s", 10)[0]
        with pytest.raises(redis.ResponseError, match="no such lease"):
            other.execute_command("CXL", "COMMIT", slot)
        with pytest.raises(redis.ResponseError, match="no such lease"):
            other.execute_command("CXL", "ABORT", slot)
    finally:
        other.close()
    assert r.execute_command("CXL", "RELEASE", lease) == 1
    r.execute_command("CXL", "ABORT", slot)


# ---------------------------------------------------------------- reservations

def test_reserve_fill_commit_is_visible_only_at_the_commit(server, r):
    value = os.urandom(1 << 20)
    lease, off, nbytes, ttl_ms = r.execute_command("CXL", "RESERVE", "blob", len(value), "EX", 100)
    assert nbytes == len(value) and ttl_ms == 5000
    with open(server.arena_path, "r+b") as f:
        writable = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    try:
        writable[off:off + len(value) // 2] = value[:len(value) // 2]
        assert r.get("blob") is None            # half written: nothing visible
        writable[off + len(value) // 2:off + len(value)] = value[len(value) // 2:]
        assert r.get("blob") is None
        assert r.execute_command("CXL", "COMMIT", lease) == b"OK"
    finally:
        writable.close()
    assert r.get("blob") == value
    assert 95 <= r.ttl("blob") <= 100
    with pytest.raises(redis.ResponseError, match="no such lease"):
        r.execute_command("CXL", "COMMIT", lease)   # committed once
    assert info(r)["leases-slots"] == 0


def test_a_commit_invalidates_the_key_in_client_side_caches(server, r):
    r.set("cached", "old")
    with raw_connection(server.port) as tracker:
        tracker.request("HELLO", "3")
        assert tracker.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
        assert tracker.request("GET", "cached") == b"$3\r\nold\r\n"
        lease = r.execute_command("CXL", "RESERVE", "cached", 0)[0]
        assert tracker.request("PING") == b"+PONG\r\n"      # a reservation changes nothing yet
        r.execute_command("CXL", "COMMIT", lease)
        assert parse_reply(tracker.read_reply()) == [b"invalidate", [b"cached"]]


def test_commit_replaces_an_existing_value(r):
    r.set("k", "old")
    lease = r.execute_command("CXL", "RESERVE", "k", 0)[0]
    r.execute_command("CXL", "COMMIT", lease)
    assert r.get("k") == b""


def test_abort_frees_the_block_and_stores_nothing(r):
    before = r.info("memory")["used_memory"]
    lease = r.execute_command("CXL", "RESERVE", "k", 4 << 20)[0]
    assert r.info("memory")["used_memory"] >= before + (4 << 20)
    assert r.execute_command("CXL", "ABORT", lease) == b"OK"
    assert r.get("k") is None
    assert r.info("memory")["used_memory"] < before + (1 << 20)


@pytest.mark.parametrize("args, error", [
    (("k", "-1"), "not an integer"),
    (("k", "x"), "not an integer"),
    (("k", "1", "EX"), "syntax error"),
    (("k", "1", "EX", "0"), "invalid expire"),
    (("k", "1", "KEEPTTL", "1"), "syntax error"),
    (("k", str(1 << 40)), "exceeds maximum allowed size"),
])
def test_reserve_argument_errors(r, args, error):
    with pytest.raises(redis.ResponseError, match=error):
        r.execute_command("CXL", "RESERVE", *args)
    assert info(r)["leases-slots"] == 0


def test_reserve_beyond_the_arena_is_oom(r):
    r.config_set("cxl-lease-max-bytes", "1gb")      # past the default cap, the cap refuses first
    try:
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            r.execute_command("CXL", "RESERVE", "k", 200 << 20)
    finally:
        r.config_set("cxl-lease-max-bytes", 0)
    assert info(r)["leases-slots"] == 0


def test_commit_after_the_lease_expired_is_refused():
    srv = cxl_server(**{"cxl-lease-ms": 200}).start()
    try:
        r = unix_client(srv)
        lease = r.execute_command("CXL", "RESERVE", "k", 100)[0]
        time.sleep(0.3)
        with pytest.raises(redis.ResponseError, match=f"lease {lease} expired|no such lease"):
            r.execute_command("CXL", "COMMIT", lease)
        assert r.get("k") is None
        ref = r.set("v", "x") and r.execute_command("CXL", "GETREF", "v")
        deadline = time.monotonic() + 3
        while info(r)["leases-refs"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert info(r)["leases-refs"] == 0       # the cron ended the reference
        assert r.execute_command("CXL", "RELEASE", ref[3]) == 0
        r.close()
    finally:
        srv.close()


def test_lease_time_is_a_config_option(r):
    r.config_set("cxl-lease-ms", 1234)
    try:
        r.set("k", "v")
        assert r.execute_command("CXL", "GETREF", "k")[4] == 1234
        assert info(r)["lease-ms"] == 1234
        with pytest.raises(redis.ResponseError):
            r.config_set("cxl-lease-ms", 0)
    finally:
        r.config_set("cxl-lease-ms", 5000)


# ---------------------------------------------------------------- who may map

MAPPING = [("GETREF", "k"), ("MGETREF", "k"), ("RELEASE", "1"), ("RESERVE", "k", "1"),
           ("COMMIT", "1"), ("ABORT", "1")]


@pytest.mark.parametrize("command", MAPPING, ids=lambda c: c[0])
def test_tcp_without_a_password_is_refused(server, command):
    client = tcp(server)
    try:
        with pytest.raises(redis.ResponseError, match="only over the unix socket"):
            client.execute_command("CXL", *command)
        fields = info(client)
        assert fields["mapping"] == "refused" and "unix socket" in fields["mapping-refused-because"]
    finally:
        client.close()


def test_loopback_peer_with_a_password_may_map(server, r):
    r.set("k", "v")
    for user in ("admin", "mapper"):
        client = tcp(server, user)
        try:
            assert info(client)["mapping"] == "allowed"
            ref = client.execute_command("CXL", "GETREF", "k")
            assert ref[1] == 1 and client.execute_command("CXL", "RELEASE", ref[3]) == 1
        finally:
            client.close()


@pytest.mark.parametrize("command", MAPPING, ids=lambda c: c[0])
def test_a_user_without_the_cxl_category_is_refused(server, command):
    client = tcp(server, "reader")          # +@read +@string: not enough
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.execute_command("CXL", *command)
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.execute_command("CXL", "INFO")
    finally:
        client.close()


@pytest.mark.parametrize("command", MAPPING, ids=lambda c: c[0])
def test_tenant_users_are_refused(server, command):
    client = tcp(server, "tenant-user")
    try:
        with pytest.raises(redis.ResponseError,
                           match="not offered to tenant 'team-a': its values share the server's arena"):
            client.execute_command("CXL", *command)
        fields = info(client)
        assert fields["mapping"] == "refused" and "team-a" in fields["mapping-refused-because"]
    finally:
        client.close()


def test_the_cxl_category(r):
    categories = [c.decode() for c in r.execute_command("ACL", "CAT")]
    assert categories[-1] == "cxl"
    members = {m.decode() for m in r.execute_command("ACL", "CAT", "cxl")}
    assert members == {"cxl|info", "cxl|help", "cxl|getref", "cxl|mgetref", "cxl|prefixref",
                       "cxl|release", "cxl|reserve", "cxl|commit", "cxl|abort"}
    read = {m.decode() for m in r.execute_command("ACL", "CAT", "read")}
    write = {m.decode() for m in r.execute_command("ACL", "CAT", "write")}
    # the prefix lookups are plain reads, for any client; mapping is granted only by name
    assert {m for m in read | write if m.startswith("cxl")} == {"cxl|prefix", "cxl|prefixget"}
    dangerous = {m.decode() for m in r.execute_command("ACL", "CAT", "dangerous")}
    assert members - dangerous == {"cxl|info", "cxl|help"}
