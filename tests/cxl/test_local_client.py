"""cxlredis.local: values through the mapping when the backing is shared (zero-copy
views, numpy, validated copies, reserve + commit), plain RESP when it is not."""
import os
import shutil

import numpy
import pytest

from cxl_helpers import PASSWORD, USERS, cxl_server, local, unix_client
from cxlredis.local import LocalClient


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


def test_mget_and_mset(kv):
    items = {f"k{n}".encode(): os.urandom(n * 1000 + 1) for n in range(5)}
    kv.mset(items, px=60_000)
    refs = kv.mget([*items, b"absent"])
    assert refs[-1] is None
    for ref, value in zip(refs, items.values()):
        assert bytes(ref.view) == value and ref.valid()
        ref.release()
    assert 0 < kv.redis.pttl(b"k0") <= 60_000


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
    assert 0 < client.redis.ttl(b"g") <= 50


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
    import mmap
    srv = cxl_server(USERS, arena_checksum="yes").start()
    try:
        kv, admin = local(srv), unix_client(srv)
        try:
            assert kv.mapped, kv.why_not_mapped
            good, bad = os.urandom(1 << 20), b"CORRUPT-ME-MARKER" + os.urandom(1 << 20)
            kv.set(b"good", good)                   # reserve + fill + commit
            admin.set(b"bad", bad)                  # over RESP
            buffer = bytearray(2 << 20)

            def corrupt():
                with open(srv.arena_path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
                    m[m.find(b"CORRUPT-ME-MARKER") + 100] ^= 0xFF

            with kv.get(b"bad") as ref:             # during the lease
                assert ref.intact()
                corrupt()
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
