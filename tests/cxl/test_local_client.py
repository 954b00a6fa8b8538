"""cxlredis.local: values through the mapping when the backing is shared (zero-copy
views, numpy, validated copies, reserve + commit), plain RESP when it is not."""
import os
import shutil
import time

import numpy
import pytest
import redis

import cxlredis.local as local_module
from cxl_helpers import PASSWORD, USERS, corrupt, cxl_server, local, unix_client
from cxlredis.local import READ_ATTEMPTS, LocalClient


@pytest.fixture(scope="module")
def server():
    srv = cxl_server(USERS)
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture
def kv(server):
    unix_client(server).flushall()
    client = local(server)
    try:
        yield client
    finally:
        client.close()


def test_mapped_round_trip(kv):
    assert kv.mapped, kv.why_not_mapped
    value = os.urandom(3 << 20)
    assert kv.set(b"k", value) is True
    assert kv.redis.get(b"k") == value              # what RESP clients see
    assert kv.get_bytes(b"k") == value
    buffer = bytearray(4 << 20)
    assert kv.get_into(b"k", buffer) == len(value) and buffer[:len(value)] == value
    assert kv.get(b"missing") is None and kv.get_bytes(b"missing") is None
    assert kv.get_into(b"missing", buffer) is None
    with pytest.raises(ValueError, match="does not fit"):
        kv.get_into(b"k", bytearray(10))


class CopiesAfterReply:
    """Counts get_into's copies made after the GETREF reply (cxlredis.local._copy_into):
    none when the copy made while the reply was on its way was kept."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = local_module._copy_into

        def counted(source, target):
            self.count += 1
            return real(source, target)
        monkeypatch.setattr(local_module, "_copy_into", counted)

    def read(self, kv, key, buffer):
        """(get_into's result, whether it copied again after the reply)."""
        before = self.count
        return kv.get_into(key, buffer), self.count > before


def test_get_into_keeps_an_early_copy_only_of_the_leased_place(kv, server, monkeypatch):
    admin = unix_client(server)
    copies = CopiesAfterReply(monkeypatch)
    buffer = bytearray(1 << 20)
    first, second = os.urandom(300_000), os.urandom(300_000)
    kv.set(b"k", first)
    assert copies.read(kv, b"k", buffer) == (300_000, True)           # nothing known yet
    assert copies.read(kv, b"k", buffer) == (300_000, False)          # known: copied early, kept
    assert buffer[:300_000] == first
    admin.set(b"k", second)                                           # a new block elsewhere
    assert copies.read(kv, b"k", buffer) == (300_000, True) and buffer[:300_000] == second
    admin.append(b"k", b"!")                                          # in place: longer, new generation
    assert copies.read(kv, b"k", buffer) == (300_001, True) and buffer[:300_001] == second + b"!"
    admin.expire(b"k", 100)                                           # same bytes, new generation
    assert copies.read(kv, b"k", buffer) == (300_001, True) and buffer[:300_001] == second + b"!"
    assert copies.read(kv, b"k", buffer) == (300_001, False) and buffer[:300_001] == second + b"!"
    admin.delete(b"k")
    assert copies.read(kv, b"k", buffer) == (None, False)
    assert b"k" not in kv._locations
    with pytest.raises(ValueError, match="does not fit"):             # too small: never copied early
        kv.set(b"k", first) and kv.get_into(b"k", buffer) and kv.get_into(b"k", bytearray(10))
    with local(server, known_locations=0) as forgetful:               # remembers no place
        assert copies.read(forgetful, b"k", buffer) == (300_000, True)
        assert copies.read(forgetful, b"k", buffer) == (300_000, True) and forgetful._locations == {}


def test_get_into_forgets_places_when_it_reconnects():
    """(A server of its own: the killed connection's lease outlives it, by design.)"""
    server = cxl_server(USERS).start()
    try:
        with local(server) as kv:
            _forgets_places_when_it_reconnects(kv, unix_client(server))
    finally:
        server.close()


def _forgets_places_when_it_reconnects(kv, admin):
    kv.set(b"k", b"v" * 1000)
    buffer = bytearray(2000)
    assert kv.get_into(b"k", buffer) == 1000 and b"k" in kv._locations
    admin.client_kill_filter(_type="normal", skipme=True)             # drops kv's connection
    admin.set(b"k", b"w" * 1000)
    with pytest.raises(redis.ConnectionError):                        # as redis-py reports it
        kv.get_into(b"k", buffer)
    old_place = kv._locations[b"k"]                                   # forgotten on reconnecting
    assert kv.get_into(b"k", buffer) == 1000 and buffer[:1000] == b"w" * 1000
    assert kv._locations[b"k"] != old_place


def test_get_is_a_read_only_view_of_the_arena(kv):
    kv.set(b"k", numpy.arange(1000, dtype=numpy.float32))
    with kv.get(b"k") as ref:
        assert ref.mapped and ref.view.readonly
        arr = ref.array(numpy.float32)
        assert not arr.flags.writeable
        assert numpy.array_equal(arr, numpy.arange(1000, dtype=numpy.float32))
        with pytest.raises(ValueError):
            arr[0] = 1
        # the array's memory is the mapping itself, not a copy
        assert arr.__array_interface__["data"][0] == numpy.frombuffer(ref.view, numpy.uint8).ctypes.data
        assert ref.valid()
    assert not ref.valid()                          # released


def test_a_rewrite_does_not_touch_a_held_view_and_marks_it_changed(kv):
    kv.set(b"k", b"a" * 1000)
    ref = kv.get(b"k")
    kv.set(b"k", b"b" * 1000)                       # copy-on-write: the old block stays pinned
    assert bytes(ref.view) == b"a" * 1000 and ref.valid()   # the value as of GETREF, whole
    kv.redis.append(b"k", b"c")
    ref2 = kv.get(b"k")
    kv.redis.append(b"k", b"d")                     # in place: same bytes, new generation
    assert bytes(ref2.view) == b"b" * 1000 + b"c" and not ref2.valid()
    ref.release()
    ref2.release()


def test_parts_through_the_mapping(kv, server):
    admin = unix_client(server)
    admin.config_resetstat()
    check_parts(kv)
    assert cxl_calls(admin)["commit"] == 3 and "cmdstat_set" not in admin.info("commandstats")


def test_mget_and_mset(kv):
    items = {f"k{n}".encode(): os.urandom(n * 1000 + 1) for n in range(5)}
    kv.mset(items, px=60_000)
    refs = kv.mget([*items, b"absent"])
    assert refs[-1] is None
    for ref, value in zip(refs, items.values()):
        assert bytes(ref.view) == value and ref.valid()
        ref.release()
    assert 0 < kv.redis.pttl(b"k0") <= 60_000


def cxl_calls(admin):
    """Calls of each CXL subcommand since the last CONFIG RESETSTAT."""
    return {name.removeprefix("cmdstat_cxl|"): stats["calls"]
            for name, stats in admin.info("commandstats").items() if name.startswith("cmdstat_cxl|")}


def leases_refs(admin):
    return admin.execute_command("CXL", "INFO")[b"leases-refs"]


def test_mget_into_copies_a_batch_under_one_mgetref(kv, server):
    admin = unix_client(server)
    values = {f"m{n}".encode(): os.urandom((n + 1) * 100_000) for n in range(4)}
    kv.mset(values)
    keys = [b"m0", b"absent", b"m1", b"m2", b"m3", b"m0"]        # a miss, a key twice
    buffers = [bytearray(500_000) for _ in keys]
    expected = [None if key == b"absent" else len(values[key]) for key in keys]
    for window, requests in ((len(keys), 1), (4, 2), (1, len(keys))):
        buffers = [bytearray(500_000) for _ in keys]
        admin.config_resetstat()
        assert kv.mget_into(keys, buffers, window=window) == expected
        calls = cxl_calls(admin)                                # one per window, no GETREF
        assert calls["mgetref"] == requests and "getref" not in calls
        for key, n, buffer in zip(keys, expected, buffers):
            if n is not None:
                assert buffer[:n] == values[key]
        assert buffers[1] == bytearray(500_000)                 # the miss's buffer untouched
    numpy_out = [numpy.empty(len(values[b"m3"]), numpy.uint8)]  # any writable buffer
    assert kv.mget_into([b"m3"], numpy_out) == [len(values[b"m3"])]
    assert numpy_out[0].tobytes() == values[b"m3"]
    assert kv.mget_into([], []) == []
    kv.flush_releases()
    assert leases_refs(admin) == 0


def test_mget_into_refuses_a_small_buffer_before_copying(kv, server):
    admin = unix_client(server)
    kv.mset({b"big": b"b" * 5000, b"small": b"s" * 10})
    buffers = [bytearray(100), bytearray(100)]
    with pytest.raises(ValueError, match="5000 bytes does not fit buffer 1 of 100 bytes"):
        kv.mget_into([b"small", b"big"], buffers)
    assert buffers == [bytearray(100), bytearray(100)]          # nothing copied, not even "small"
    with pytest.raises(ValueError, match="2 keys but 1 buffers"):
        kv.mget_into([b"small", b"big"], buffers[:1])
    kv.flush_releases()
    assert leases_refs(admin) == 0                              # the refused batch's leases ended
    assert kv.mget_into([b"small"], buffers[:1]) == [10]        # and the client still works


def test_mget_into_error_with_the_next_window_in_flight(kv, server):
    """A refused window while the next window's request is on its way: that request's
    reply is read and its leases end, so the connection stays in step."""
    admin = unix_client(server)
    kv.mset({b"small": b"s" * 10, b"big": b"b" * 5000})
    keys = [b"small"] * 4 + [b"big"] + [b"small"] * 7               # windows of 4: the 2nd fails
    buffers = [bytearray(100) for _ in keys]
    admin.config_resetstat()
    with pytest.raises(ValueError, match="5000 bytes does not fit buffer 4 of 100 bytes"):
        kv.mget_into(keys, buffers, window=4)
    assert cxl_calls(admin)["mgetref"] == 3                     # the third was already sent
    assert all(buffer[:10] == b"s" * 10 for buffer in buffers[:4])
    assert all(buffer == bytearray(100) for buffer in buffers[4:])
    kv.flush_releases()
    assert leases_refs(admin) == 0
    assert kv.get_into(b"small", buffers[0]) == 10 and kv.redis.ping()


def test_mget_into_a_key_of_another_type_is_wrongtype(kv, server):
    admin = unix_client(server)
    kv.set(b"s", b"v")
    admin.hset(b"h", b"f", b"v")
    buffers = [bytearray(10), bytearray(10)]
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        kv.mget_into([b"s", b"h"], buffers)
    assert buffers[0] == bytearray(10)
    assert leases_refs(admin) == 0                              # all or nothing on the server
    assert kv.mget_into([b"s"], buffers[:1]) == [1] and buffers[0][:1] == b"v"


class OnLookup(list):
    """Buffers that call action(i) each time the client looks up buffer i: once the
    MGETREF granted the leases, before anything is copied."""

    def __init__(self, buffers, action):
        super().__init__(buffers)
        self.action = action

    def __getitem__(self, i):
        self.action(i)
        return super().__getitem__(i)


def test_mget_into_does_not_accept_a_value_changed_during_its_lease(kv, server):
    admin = unix_client(server)
    kv.mset({b"other": b"o" * 1000, b"changing": b"c" * 1000})
    admin.append(b"changing", b"+")                 # now in a block with room to grow in place
    keys = [b"other", b"changing"]

    def buffers_that_change(times):
        """Append to b"changing" (in place: its bytes stay, its generation moves) the
        first `times` times its buffer is looked up; note the references held then."""
        refs_held = []

        def change(i):
            if keys[i] == b"changing" and len(refs_held) < times:
                refs_held.append(leases_refs(admin))
                admin.append(b"changing", b"+")
        return OnLookup([bytearray(2000), bytearray(2000)], change), refs_held

    # changed once: the stale copy is refused, that key alone is asked again, the new value wins
    buffers, refs_held = buffers_that_change(1)
    admin.config_resetstat()
    assert kv.mget_into(keys, buffers) == [1000, 1002]
    assert refs_held == [2]                         # the change came while both leases were held
    assert buffers[1][:1002] == b"c" * 1000 + b"++"
    calls = cxl_calls(admin)
    assert calls["mgetref"] == 2 and "getref" not in calls

    # changed on every attempt: never accepted, a miss after READ_ATTEMPTS tries
    buffers, refs_held = buffers_that_change(99)
    assert kv.mget_into(keys, buffers) == [1000, None]
    assert refs_held == [2, 1, 1] and admin.strlen(b"changing") == 1002 + READ_ATTEMPTS
    kv.flush_releases()
    assert leases_refs(admin) == 0


def test_mget_into_checks_checksums_and_deadlines():
    """A corrupted value in a batch is a miss while the rest is served; values copied
    after their lease ran out are misses."""
    srv = cxl_server(USERS, arena_checksum="yes").start()
    try:
        kv, admin = local(srv), unix_client(srv)
        try:
            good, bad = os.urandom(100_000), b"CORRUPT-ME-MARKER" + os.urandom(100_000)
            admin.mset({b"good": good, b"bad": bad})
            corrupt(srv.arena_path, b"CORRUPT-ME-MARKER", 100)
            admin.config_set("arena-checksum", "no")        # so that the server hands it out
            buffers = [bytearray(200_000), bytearray(200_000)]
            assert kv.mget_into([b"good", b"bad"], buffers) == [len(good), None]
            assert buffers[0][:len(good)] == good

            admin.config_set("cxl-lease-ms", 1)
            lookups = []
            slow = OnLookup(buffers[:1], lambda i: (lookups.append(i), time.sleep(0.005)))
            assert kv.mget_into([b"good"], slow) == [None]
            assert len(lookups) == READ_ATTEMPTS
        finally:
            kv.close()
    finally:
        srv.close()


def test_reserve_is_zero_copy_for_producers(kv):
    tensor = numpy.linspace(0, 1, 4096, dtype=numpy.float16)
    with kv.reserve(b"t", tensor.nbytes, ex=30) as slot:
        numpy.frombuffer(slot.view, numpy.float16)[:] = tensor   # the producer writes in place
        assert kv.redis.get(b"t") is None
        slot.commit()
    assert numpy.array_equal(numpy.frombuffer(kv.get_bytes(b"t"), numpy.float16), tensor)
    assert 0 < kv.redis.ttl(b"t") <= 30


def test_a_failing_producer_aborts_its_slot(kv):
    with pytest.raises(RuntimeError):
        with kv.reserve(b"t", 100):
            raise RuntimeError("producer failed")
    assert kv.redis.get(b"t") is None
    assert kv.redis.execute_command("CXL", "INFO")[b"leases-slots"] == 0


def test_releases_ride_on_the_next_command(kv):
    kv.set(b"k", b"v")
    refs = [kv.get(b"k") for _ in range(5)]
    assert kv.redis.execute_command("CXL", "INFO")[b"leases-refs"] == 5
    for ref in refs:
        ref.release()
    kv.get_bytes(b"k")                   # sends the five releases, takes (and releases) one
    assert kv.redis.execute_command("CXL", "INFO")[b"leases-refs"] == 1
    kv.flush_releases()
    assert kv.redis.execute_command("CXL", "INFO")[b"leases-refs"] == 0


# ---------------------------------------------------------------- fallback to RESP

def check_resp_fallback(client):
    assert not client.mapped
    value = os.urandom(200_000)
    client.set(b"f", value, ex=100)
    assert client.get_bytes(b"f") == value
    ref = client.get(b"f")
    assert not ref.mapped and ref.valid() and bytes(ref.view) == value
    buffer = bytearray(len(value))
    assert client.get_into(b"f", buffer) == len(value) and buffer == value
    client.mset({b"g": b"1", b"h": b"2"}, ex=50)
    assert [bytes(r.view) if r else None for r in client.mget([b"g", b"x", b"h"])] == [b"1", None, b"2"]
    buffers = [bytearray(1), bytearray(1), bytearray(1)]
    assert client.mget_into([b"g", b"x", b"h"], buffers) == [1, None, 1]
    assert buffers == [b"1", bytearray(1), b"2"]
    with pytest.raises(ValueError, match="does not fit buffer 1"):
        client.mget_into([b"g", b"f"], buffers[:2])
    assert 0 < client.redis.ttl(b"g") <= 50
    check_parts(client)


def check_parts(client):
    """A value given as parts is stored as their concatenation, by set and mset."""
    tensor = numpy.arange(1000, dtype=numpy.float32)
    client.set(b"p", (b"head:", tensor))
    client.mset({b"q": [b"a", b"bc", memoryview(b"def")], b"r": (tensor,)})
    assert client.get_bytes(b"p") == b"head:" + tensor.tobytes()
    assert client.get_bytes(b"q") == b"abcdef" and client.get_bytes(b"r") == tensor.tobytes()


def test_tcp_peer_without_a_password_falls_back(server):
    with LocalClient(port=server.port) as client:
        assert "unix socket" in client.why_not_mapped
        check_resp_fallback(client)


def test_a_backing_path_that_is_another_arena_falls_back(server, tmp_path):
    other = cxl_server().start()             # same size, a different arena
    try:
        with local(server, backing_path=other.arena_path) as client:
            assert "does not hold the server's arena" in client.why_not_mapped
            check_resp_fallback(client)
    finally:
        other.close()


def test_an_unreachable_backing_falls_back(server, tmp_path):
    with local(server, backing_path=str(tmp_path / "not-here")) as client:
        assert "cannot open" in client.why_not_mapped
        check_resp_fallback(client)
    wrong_size = tmp_path / "copy.arena"
    shutil.copyfile(server.arena_path, wrong_size)
    os.truncate(wrong_size, 1 << 20)
    with local(server, backing_path=str(wrong_size)) as client:
        assert "bytes, the server's arena" in client.why_not_mapped
        check_resp_fallback(client)


def test_a_copy_of_the_backing_elsewhere_maps(server, tmp_path):
    """A backing reached by another path (another mount of the same file) maps fine."""
    link = tmp_path / "arena-link"
    os.symlink(server.arena_path, link)
    with local(server, backing_path=str(link)) as client:
        assert client.mapped
        client.set(b"k", b"through the link")
        assert client.get_bytes(b"k") == b"through the link"


def test_a_password_authenticated_loopback_client_maps(server):
    with LocalClient(port=server.port, username="mapper", password=PASSWORD) as client:
        assert client.mapped, client.why_not_mapped
        client.set(b"k", b"v" * 100_000)
        assert client.get_bytes(b"k") == b"v" * 100_000


def test_a_user_without_cxl_falls_back(server):
    with LocalClient(port=server.port, username="reader", password=PASSWORD) as client:
        assert "CXL INFO refused" in client.why_not_mapped
        client.redis.set(b"r", b"1")
        assert client.get_bytes(b"r") == b"1"


def test_opting_out_of_the_mapping(server):
    with local(server, map_backing=False) as client:
        check_resp_fallback(client)


def test_mapped_reads_verify_arena_checksums():
    """A value written with arena-checksum on carries its checksum; a reader through the
    mapping checks it (get_into, get_bytes, Ref.intact), so bytes that changed in memory
    are a miss there too, whether they changed before or during its lease."""
    srv = cxl_server(USERS, arena_checksum="yes").start()
    try:
        kv, admin = local(srv), unix_client(srv)
        try:
            assert kv.mapped, kv.why_not_mapped
            good, bad = os.urandom(1 << 20), b"CORRUPT-ME-MARKER" + os.urandom(1 << 20)
            kv.set(b"good", good)                   # reserve + fill + commit
            admin.set(b"bad", bad)                  # over RESP
            buffer = bytearray(2 << 20)
            with kv.get(b"bad") as ref:             # during the lease
                assert ref.intact()
                corrupt(srv.arena_path, b"CORRUPT-ME-MARKER", 100)
                assert ref.valid() and not ref.intact()
            # The server verifies too (GETREF's lookup would drop it): turn that off to
            # see the client's own check.
            admin.config_set("arena-checksum", "no")
            assert kv.get_into(b"bad", buffer) is None and kv.get_bytes(b"bad") is None
            assert kv.get_into(b"good", buffer) == len(good) and buffer[:len(good)] == good
            assert kv.get_bytes(b"good") == good
            admin.config_set("arena-checksum", "yes")
            assert admin.get(b"bad") is None        # and the server drops it on its next read
            assert admin.info("arena")["arena_checksum_failures"] == 1
        finally:
            kv.close()
    finally:
        srv.close()


def test_a_shard_at_an_offset_is_mapped_there(tmp_path):
    """A server whose arena is a region of a shared file (arena-offset): the client maps
    that region, reads zero-copy and writes through it, and never sees the other region."""
    path = tmp_path / "shards.arena"
    first = cxl_server(USERS, arena_path=str(path)).start()             # offset 0, 64mb
    srv = cxl_server(USERS, arena_path=str(path), arena_offset="64mb").start()
    try:
        unix_client(first).set(b"k", b"the first shard's")
        with local(srv) as kv:
            assert kv.mapped, kv.why_not_mapped
            assert kv.info["backing-offset"] == 64 << 20 and kv.info["backing-path"] == str(path)
            tensor = numpy.arange(300_000, dtype=numpy.float32)
            kv.set(b"k", tensor)                            # reserve + fill through the mapping
            with kv.get(b"k") as ref:
                assert ref.mapped
                arr = ref.array(numpy.float32)
                assert numpy.array_equal(arr, tensor)
                assert arr.__array_interface__["data"][0] == numpy.frombuffer(ref.view, numpy.uint8).ctypes.data
                # the view is the file's bytes at the region's offset plus the value's
                offset = kv.redis.execute_command("CXL", "GETREF", b"k")[0]
                with open(path, "rb") as f:
                    f.seek((64 << 20) + offset)
                    assert f.read(len(ref.view)) == tensor.tobytes()
                assert ref.valid()
            assert kv.get_bytes(b"k") == tensor.tobytes()
        assert unix_client(first).get(b"k") == b"the first shard's"
        assert unix_client(srv).get(b"k") == tensor.tobytes()
    finally:
        srv.close()
        first.close()


READS_AND_WRITES = {
    "get": lambda kv: bytes(kv.get(b"k").view),
    "get_bytes": lambda kv: kv.get_bytes(b"k"),
    "mget": lambda kv: bytes(kv.mget([b"k"])[0].view),
    "get_into": lambda kv: (lambda out: bytes(out[:kv.get_into(b"k", out)]))(bytearray(16)),
    "mget_into": lambda kv: (lambda out: bytes(out[:kv.mget_into([b"k"], [out])[0]]))(bytearray(16)),
    "set": lambda kv: kv.set(b"k", b"value") and kv.redis.get(b"k"),
    "mset": lambda kv: kv.mset({b"k": b"value"}) and kv.redis.get(b"k"),
}


@pytest.mark.parametrize("operation", READS_AND_WRITES)
def test_refused_mapping_commands_fall_back_to_resp(server, operation, caplog):
    """A user whose ACL lets CXL INFO through but not the mapping commands themselves
    (-@dangerous): whichever call meets the refusal first, it and every later call go
    over RESP, with one warning that names the fix."""
    unix_client(server).execute_command(
        "ACL", "SETUSER", "undangerous", "on", f">{PASSWORD}", "~*", "+@all", "-@dangerous")
    unix_client(server).set(b"k", b"value")
    with local(server, username="undangerous", password=PASSWORD) as kv, \
            caplog.at_level("WARNING", logger="cxlredis.local"):
        assert kv.mapped
        assert READS_AND_WRITES[operation](kv) == b"value"
        assert not kv.mapped and "+@cxl" in kv.why_not_mapped
        for again in READS_AND_WRITES.values():
            assert again(kv) == b"value"
    warnings = [r for r in caplog.records if r.name == "cxlredis.local"]
    assert len(warnings) == 1 and "-@dangerous" in warnings[0].getMessage()
