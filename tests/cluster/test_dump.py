"""DUMP/RESTORE payloads, against real redis-server 7.0: its DUMPs load, ours RESTORE."""
import random
import time

import pytest

from conftest import ServerProcess
from cxlredis._cluster import crc64
from cxlredis.cluster.dump import (
    BAD_FORMAT, BAD_PAYLOAD, DumpPayloadError, dump_hash, dump_string, dump_string_parts,
    load_payload)

MiB = 1 << 20
INT_LIKE = [b"0", b"1", b"-1", b"127", b"-128", b"128", b"32767", b"-32768", b"32768",
            b"2147483647", b"-2147483648", b"2147483648", b"12345678901", b"-1234567890",
            b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808",
            b"007", b"-0", b"+1", b" 1", b"1 ", b"1_0", b"0x10", b"1e3", b""]


@pytest.fixture(scope="module")
def real():
    server = ServerProcess("redis", {"proto-max-bulk-len": "128mb"})
    server.start()
    client = server.client(socket_timeout=30)
    yield client
    client.close()
    server.close()


@pytest.fixture
def compression(real):
    def set_compression(on):
        real.config_set("rdbcompression", "yes" if on else "no")
    yield set_compression
    real.config_set("rdbcompression", "yes")


def string_values():
    rng = random.Random(4)
    values = list(INT_LIKE)
    for size in (1, 11, 12, 20, 21, 22, 63, 64, 100, 16383, 16384, 65536, MiB):
        values.append(rng.randbytes(size))
        values.append(b"ab" * (size // 2) + b"c" * (size % 2))
    return values


def test_crc64_is_jones():
    assert crc64(b"123456789") == 0xE9C6D914C4B8D9CA
    data = random.Random(1).randbytes(10000)
    assert crc64(data[5000:], crc64(data[:5000])) == crc64(data)
    assert crc64(bytearray(data)) == crc64(memoryview(data)) == crc64(data)


def test_crc64_of_32_mib_is_fast():
    data = bytes(32 * MiB)
    started = time.perf_counter()
    crc64(data)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("compressed", [True, False], ids=["rdbcompression", "raw"])
def test_redis_string_dumps_load(real, compression, compressed):
    compression(compressed)
    values = string_values()
    for i, value in enumerate(values):
        real.set(f"s{i}", value)
    for i, value in enumerate(values):
        kind, loaded = load_payload(real.dump(f"s{i}"))
        assert kind == "string" and bytes(loaded) == value, (i, value[:40])


def test_our_string_dumps_are_redis_dumps_byte_for_byte(real, compression):
    compression(False)
    for i, value in enumerate(string_values()):
        real.set("k", value)
        assert dump_string(value) == real.dump("k"), (i, value[:40])


def test_huge_strings_both_ways(real):
    rng = random.Random(64)
    for value in (b"x" * (64 * MiB), rng.randbytes(32 * MiB)):
        real.set("big", value)
        kind, loaded = load_payload(real.dump("big"))
        assert kind == "string" and loaded == value
        head, body, footer = dump_string_parts(value)
        assert body is value    # sent as it is, not copied into the payload
        real.restore("ours", 0, head + body + footer, replace=True)
        assert real.get("ours") == value
    real.delete("big", "ours")


def test_our_strings_restore_into_redis(real):
    for i, value in enumerate(string_values()):
        real.restore(f"r{i}", 0, dump_string(value), replace=True)
    for i, value in enumerate(string_values()):
        assert real.get(f"r{i}") == value, (i, value[:40])


def hash_cases():
    rng = random.Random(16)
    small = [(b"f%d" % i, v) for i, v in enumerate(INT_LIKE[:-1])]
    small += [(b"", b"empty field"), (b"-7", b"x" * 64), (b"4095", b"-4096"), (b"8191", b"-8193")]
    large_count = [(b"field:%d" % i, b"%d" % rng.randrange(-10**12, 10**12)) for i in range(500)]
    large_value = [(b"a", b"1"), (b"b", rng.randbytes(65)), (b"c", b"z" * 100000)]
    return {"small": small, "many": large_count, "long": large_value}


@pytest.mark.parametrize("name", ["small", "many", "long"])
def test_hashes_both_ways(real, compression, name):
    pairs = hash_cases()[name]
    real.delete("h")
    real.hset("h", mapping=dict(pairs))
    compression(True)
    kind, loaded = load_payload(real.dump("h"))
    assert kind == "hash" and sorted(loaded) == sorted(pairs)
    compression(False)
    ours = dump_hash(pairs)
    if name == "small":    # a dict-encoded hash's field order is its dict's, not insertion order
        assert ours == real.dump("h")
    real.restore("h2", 0, ours, replace=True)
    assert real.hgetall("h2") == dict(pairs)
    assert real.object("encoding", "h2") == real.object("encoding", "h")


def test_long_listpack_strings_load(real):
    """12-bit and 32-bit string lengths inside a listpack, when the limits allow them."""
    real.config_set("hash-max-listpack-value", 100000)
    try:
        pairs = {b"short": b"s" * 100, b"mid": b"m" * 4095, b"long": b"l" * 5000}
        real.delete("lh")
        real.hset("lh", mapping=pairs)
        assert real.object("encoding", "lh") == b"listpack"
        kind, loaded = load_payload(real.dump("lh"))
        assert kind == "hash" and dict(loaded) == pairs
    finally:
        real.config_set("hash-max-listpack-value", 64)


def corruptions(payload):
    rng = random.Random(len(payload))
    yield payload[:-1]
    yield payload[:9]
    yield b""
    yield payload[:-10] + (11).to_bytes(2, "little") + payload[-8:]     # a future RDB version
    for _ in range(20):
        i = rng.randrange(len(payload))
        yield payload[:i] + bytes((payload[i] ^ (1 << rng.randrange(8)),)) + payload[i + 1:]


def test_corrupt_payloads_get_redis_error(real):
    for payload in (dump_string(b"hello world"), dump_hash(hash_cases()["small"])):
        for bad in corruptions(payload):
            with pytest.raises(DumpPayloadError) as ours:
                load_payload(bad)
            assert str(ours.value) == BAD_PAYLOAD
            with pytest.raises(Exception) as theirs:
                real.restore("bad", 0, bad, replace=True)
            assert str(theirs.value) == BAD_PAYLOAD.removeprefix("ERR ")


def with_footer(body):
    version = (10).to_bytes(2, "little")
    return body + version + crc64(version, crc64(body)).to_bytes(8, "little")


def test_reads_run_into_the_footer_as_in_redis(real):
    """Redis reads the object from the whole payload, footer included; so do we."""
    payload = with_footer(b"\x00\x05abc")
    real.restore("short", 0, payload, replace=True)
    assert load_payload(payload) == ("string", real.get("short"))


@pytest.mark.parametrize("body", [
    b"\x00\x20abc",                    # string shorter than its length, footer included
    b"\x00\xc3\x05\x0aabc",            # LZF whose data does not decompress to its length
    b"\x00\xc3\x01\x81\x40\x00\x00\x00\x00\x00\x00\x00a",   # LZF claiming 2**62 bytes
    b"\x00\xc4",                       # an unknown string encoding
    b"\x04\x00",                       # an empty hash
    b"\x04\x01\x01a",                  # a hash missing its value
    b"\x10\x07\x07\x00\x00\x00\x00\x00\xff",       # an empty listpack
    b"\x10\x07\x08\x00\x00\x00\x01\x00\xff",       # a listpack whose size is wrong
    b"\x10\x09\x09\x00\x00\x00\x01\x00\x01\x01\xff",   # one element: no value
    b"\x02\x00",                       # a set: not implemented
])
def test_malformed_bodies_are_bad_data_format(real, body):
    with pytest.raises(DumpPayloadError) as ours:
        load_payload(with_footer(body))
    assert str(ours.value) == BAD_FORMAT
    if body[0] != 2:   # a set is Redis's to load
        with pytest.raises(Exception) as theirs:
            real.restore("bad", 0, with_footer(body), replace=True)
        assert "Bad data format" in str(theirs.value)


def test_duplicate_fields_are_refused():
    """Stricter than Redis 7.0, which keeps both unless sanitize-dump-payload is on: a hash
    with one field twice is a corrupt value, and corrupt values are never served."""
    with pytest.raises(DumpPayloadError) as error:
        load_payload(with_footer(b"\x04\x02\x01a\x01b\x01a\x01c"))
    assert str(error.value) == BAD_FORMAT


def test_fuzzed_payloads_never_crash():
    rng = random.Random(7)
    seeds = [dump_string(b"x" * 50), dump_hash(hash_cases()["small"]), dump_hash(hash_cases()["long"])]
    for _ in range(3000):
        body = bytearray(rng.choice(seeds)[:-10])
        for _ in range(rng.randrange(1, 4)):
            body[rng.randrange(len(body))] = rng.randrange(256)
        try:
            load_payload(with_footer(bytes(body[:rng.randrange(1, len(body) + 1)])))
        except DumpPayloadError as error:
            assert str(error) == BAD_FORMAT
