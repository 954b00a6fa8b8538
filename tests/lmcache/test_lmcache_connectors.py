"""LMCache 0.5.6's remote connectors, unchanged, against the server under test.

Each connector is built by LMCache's own ``CreateConnector`` factory in a
child process (see lmcache_driver.py) and driven through the RemoteConnector
API that LMCache's storage manager uses: put, batched put, exists, batched
contains, get (checked byte for byte), overwrite, and reads of chunks the
server evicted under maxmemory, which must be misses, never corrupt payloads.

  redis://  unix://  RedisConnector   redis-py asyncio, RESP3, <key>kv_bytes + <key>metadata
  resp://            RESPConnector    LMCache's native C++ RESP2 client, 8 connections
  valkey://          ValkeyConnector  valkey-glide sync client, SET k v EX ttl

Run with CXLREDIS_TEST_TARGET=redis to check the tests themselves against
redis-server.  rediss:// lives in test_lmcache_rediss.py.
"""
import time

import pytest
import redis

from conftest import TARGET, raw_connection, server_under_test
from lmcache_driver import LLAMA3_8B_CHUNK, SMALL_CHUNK, LMCacheConnector, missing_requirements, payload

_missing = missing_requirements()
if _missing:
    pytest.skip(f"LMCache is not installed: {_missing}", allow_module_level=True)

CONNECTORS = ["redis", "unix", "resp", "valkey"]
REDIS_CONNECTOR = ("redis", "unix")
VALKEY_TTL = 3600
MAX_CHUNKS = 160          # the widest batch below, in 1 MiB chunks


def connector_url(scheme: str, server) -> str:
    if scheme == "unix":
        return f"unix://{server.unixsocket}"
    return f"{scheme}://127.0.0.1:{server.port}"


def connector_options(scheme: str) -> dict:
    if scheme == "valkey":
        return {"extra_config": {"valkey_enable_ttl": True, "valkey_ttl_sec": VALKEY_TTL}}
    return {}


@pytest.fixture(scope="module")
def server():
    srv = server_under_test(arena_size="1gb")
    try:
        yield srv.start()
    finally:
        srv.close()


@pytest.fixture(scope="module", params=CONNECTORS)
def lm(request, server):
    scheme = request.param
    if scheme == "valkey":
        reason = missing_requirements("valkey-glide-sync")
        if reason:
            pytest.skip(reason)
    connector = LMCacheConnector(connector_url(scheme, server), SMALL_CHUNK,
                                 max_chunks=MAX_CHUNKS, **connector_options(scheme))
    try:
        yield connector.start()
    finally:
        connector.close()


@pytest.fixture
def raw(server):
    """A redis-py client on the server, reset before the test and put back after it."""
    client = server.client()
    saved = client.config_get("maxmemory*")
    client.flushall()
    try:
        yield client
    finally:
        client.config_set("maxmemory", 0)
        client.config_set("maxmemory-policy", saved["maxmemory-policy"])
        client.flushall()
        client.close()


def data_keys(lm, hashes) -> list[bytes]:
    """The server keys that hold the chunks' KV bytes."""
    suffix = "kv_bytes" if lm.scheme in REDIS_CONNECTOR else ""
    return [(key + suffix).encode() for key in lm.key_strings(hashes)]


def keys_per_chunk(lm) -> int:
    return 2 if lm.scheme in REDIS_CONNECTOR else 1


def other_clients(raw, count: int, timeout: float = 5.0) -> list[dict]:
    """CLIENT LIST without our own connection, once it has ``count`` entries
    (the server may still be closing the connections of a killed connector)."""
    ours = raw.client_id()
    deadline = time.monotonic() + timeout
    while True:
        clients = [c for c in raw.client_list() if int(c["id"]) != ours]
        if len(clients) == count or time.monotonic() > deadline:
            return clients
        time.sleep(0.05)


def sync_calls_safe(lm) -> bool:
    # LMCache 0.5.6's RESPClient registers a *_sync call's future after
    # submitting the request, so a reply that is already back is dropped and
    # the call blocks forever (flaky against redis-server too).
    return lm.scheme != "resp"


# ------------------------------------------------------------- the common API

def test_put_exists_and_get_byte_exact(lm, raw):
    hashes = [0x1001, 0x1002, 0x1003]
    assert lm.exists(hashes) == [False] * 3
    lm.put(hashes, version=1)
    assert lm.exists(hashes) == [True] * 3
    if sync_calls_safe(lm):
        assert lm.exists_sync(hashes) == [True] * 3
    assert lm.get(hashes) == lm.expected(hashes, 1)
    # What the server holds is the chunk itself, not a re-encoding of it.
    for h, key in zip(hashes, data_keys(lm, hashes)):
        assert raw.get(key) == payload(h, 1, lm.chunk_bytes)
    assert raw.dbsize() == 3 * keys_per_chunk(lm)


def test_batched_put_then_batched_contains_and_reads(lm, raw):
    hashes = list(range(0x2000, 0x2000 + 48))
    missing = 0x2fff
    lm.batched_put(hashes, version=1)
    # InstrumentedRemoteConnector.batched_put logs and swallows errors: count.
    assert raw.dbsize() == len(hashes) * keys_per_chunk(lm)

    assert lm.contains(hashes) == len(hashes)
    assert lm.contains(hashes[:20] + [missing] + hashes[20:]) == 20
    assert lm.contains([missing] + hashes) == 0
    if lm.info["supports"]["batched_contains"] and sync_calls_safe(lm):
        assert lm.contains_sync(hashes) == len(hashes)
        assert lm.contains_sync(hashes[:20] + [missing] + hashes[20:]) == 20

    expected = lm.expected(hashes, 1)
    assert lm.get_prefix(hashes) == expected
    if lm.info["supports"]["batched_get"]:
        assert lm.batched_get(hashes) == expected
    assert lm.get(hashes[::7]) == expected[::7]


def test_overwrite_replaces_the_payload(lm, raw):
    hashes = [0x3001, 0x3002, 0x3003]
    lm.put(hashes, version=1)
    assert lm.get(hashes) == lm.expected(hashes, 1)
    lm.put(hashes, version=2)
    assert lm.get(hashes) == lm.expected(hashes, 2)
    lm.batched_put(hashes, version=3)
    assert lm.get(hashes) == lm.expected(hashes, 3)
    assert raw.dbsize() == len(hashes) * keys_per_chunk(lm)


def test_missing_chunk_is_a_miss(lm, raw):
    lm.put([0x4001], version=1)
    assert lm.exists([0x4002]) == [False]
    assert lm.contains([0x4002, 0x4001]) == 0
    # Over resp:// the driver reads only what EXISTS reports (LMCache's client
    # would block forever on the GET); the others really send the GET.
    assert lm.get([0x4002, 0x4001]) == [None] + lm.expected([0x4001], 1)


def check_evicted_chunks_are_misses(lm, raw, policy: str):
    """Overflow maxmemory with chunks; every read is a miss or the exact chunk."""
    raw.config_set("maxmemory-policy", policy)
    raw.config_set("maxmemory", 64 * 1024 * 1024)
    evicted_before = raw.info("stats")["evicted_keys"]
    # 160 MiB of KV into 64 MiB (room to spare for redis-server, which also
    # counts its client buffers and ~2.5x per value when run as the oracle).
    hashes = list(range(0x5000, 0x5000 + 160))
    lm.put(hashes, version=1)
    assert raw.info("stats")["evicted_keys"] > evicted_before

    expected = lm.expected(hashes, 1)
    existed = lm.exists(hashes)
    got = lm.get(hashes)
    corrupt = [hex(h) for h, d, e in zip(hashes, got, expected) if d not in (None, e)]
    assert not corrupt, f"chunks read back corrupt after eviction: {corrupt}"
    hits = [d is not None for d in got]
    assert hits[-1], "the chunk written last was evicted"
    assert not all(hits), "nothing was evicted although 160 MiB went into 64 MiB"
    for h, was_there, hit in zip(hashes, existed, hits):
        if hit:
            assert was_there, f"{h:#x} was read but EXISTS said no"
    # A chunk read as a miss is gone for good: LMCache deleted any orphan
    # metadata while reading, so EXISTS and the prefix lookup agree with GET.
    assert lm.exists(hashes) == hits
    assert lm.contains(hashes) == (hits.index(False) if False in hits else len(hits))


def test_evicted_chunks_read_as_misses_never_corrupt(lm, raw):
    check_evicted_chunks_are_misses(lm, raw, "allkeys-lru")


# ------------------------------------------------------- per-connector details

@pytest.mark.parametrize("lm", REDIS_CONNECTOR, indirect=True)
def test_redis_connector_opens_many_resp3_connections(lm, raw):
    hashes = list(range(0x6000, 0x6000 + 150))    # RedisConnector's pool holds 150
    lm.batched_put(hashes, version=1)
    assert raw.dbsize() == 2 * len(hashes)
    clients = raw.client_list()
    resp3 = [c for c in clients if c.get("resp") == "3"]
    assert len(resp3) >= 100, f"only {len(resp3)} RESP3 connections for a 150-chunk batch"
    if TARGET == "cxlredis":   # redis-server 7.0 predates CLIENT SETINFO
        assert {c["lib-name"] for c in resp3} == {"redis-py"}
    assert lm.get_prefix(hashes) == lm.expected(hashes, 1)  # 150 concurrent reads


@pytest.mark.parametrize("lm", REDIS_CONNECTOR, indirect=True)
def test_redis_connector_evicted_payload_with_surviving_metadata(lm, raw):
    """The payload is evicted, its metadata is not: a miss, and the orphan is cleaned."""
    victim, survivor = 0x7001, 0x7002
    lm.put([victim, survivor], version=1)
    victim_kv = data_keys(lm, [victim])[0]
    victim_meta = victim_kv.replace(b"kv_bytes", b"metadata")
    # Make the victim's payload the only key volatile-lru may evict, then put
    # maxmemory below the two payloads and write: the server has to evict
    # exactly that key.  (redis-server, whose used_memory also counts its own
    # ~2 MB, then still refuses the write; cxlredis, which counts the heap,
    # has room for it once the victim is gone.)
    evicted_before = raw.info("stats")["evicted_keys"]
    raw.config_set("maxmemory-policy", "volatile-lru")
    raw.expire(victim_kv, 3600)
    raw.config_set("maxmemory", 3 * 512 * 1024)
    try:
        raw.set(b"filler", b"f")
    except redis.exceptions.OutOfMemoryError:
        pass
    raw.config_set("maxmemory", 0)
    assert raw.exists(victim_kv) == 0
    assert raw.info("stats")["evicted_keys"] == evicted_before + 1

    assert lm.exists([victim]) == [True]           # RedisConnector looks at <key>metadata
    assert lm.get([victim, survivor]) == [None] + lm.expected([survivor], 1)
    assert raw.exists(victim_meta) == 0            # LMCache deleted the orphan
    assert lm.exists([victim]) == [False]


@pytest.mark.parametrize("lm", ["resp"], indirect=True)
def test_resp_connector_uses_eight_resp2_connections(lm, raw):
    lm.batched_put(list(range(0x8000, 0x8000 + 16)), version=1)
    native = other_clients(raw, 8)
    assert len(native) == 8
    assert {c["resp"] for c in native} == {"2"}    # no HELLO: plain RESP2


def test_replies_are_the_bytes_the_native_resp_client_matches(server, raw):
    """LMCache's C++ client compares reply prefixes byte for byte (RESP2)."""
    value = payload(0x8100, 1, SMALL_CHUNK.nbytes)
    with raw_connection(server.port) as conn:
        assert conn.request("EXISTS", "chunk") == b":0\r\n"
        assert conn.request("SET", "chunk", value) == b"+OK\r\n"
        assert conn.request("EXISTS", "chunk") == b":1\r\n"
        assert conn.request("GET", "chunk") == b"$%d\r\n%s\r\n" % (len(value), value)
        assert conn.request("SET", "chunk", value[::-1]) == b"+OK\r\n"
        assert conn.request("GET", "chunk") == b"$%d\r\n%s\r\n" % (len(value), value[::-1])
        assert conn.request("DEL", "chunk") == b":1\r\n"


@pytest.mark.parametrize("lm", ["valkey"], indirect=True)
def test_valkey_connector_sets_the_ttl(lm, raw):
    hashes = [0x9001, 0x9002]
    lm.put(hashes, version=1)
    lm.batched_put([0x9003], version=1)
    for key in data_keys(lm, hashes + [0x9003]):
        assert VALKEY_TTL - 10 <= raw.ttl(key) <= VALKEY_TTL
    glide = other_clients(raw, 8)
    assert len(glide) == 8                         # one client per worker thread
    assert {c["resp"] for c in glide} == {"3"}
    if TARGET == "cxlredis":
        assert {c["lib-name"] for c in glide} == {"GlidePySync(lmcache:0.5.6)"}


@pytest.mark.parametrize("lm", ["valkey"], indirect=True)
def test_valkey_reads_used_memory_and_maxmemory(lm, raw):
    lm.put([0x9101], version=1)
    info = lm.valkey_memory_info()
    assert info["used_memory"] >= lm.chunk_bytes
    assert info["maxmemory"] == 0                  # no cap configured
    raw.config_set("maxmemory", 512 * 1024 * 1024)
    assert lm.valkey_memory_info()["maxmemory"] == 512 * 1024 * 1024


@pytest.mark.parametrize("lm", ["valkey"], indirect=True)
def test_valkey_chunks_evicted_under_volatile_lru(lm, raw):
    # The TTL exists so that volatile-* policies may evict LMCache's keys.
    check_evicted_chunks_are_misses(lm, raw, "volatile-lru")


@pytest.mark.parametrize("scheme", CONNECTORS)
def test_llama3_8b_sized_chunks_round_trip(scheme, server, raw):
    """32 MiB chunks: 256 tokens of Llama-3-8B (32 layers, 8 KV heads, fp16)."""
    if scheme == "valkey" and missing_requirements("valkey-glide-sync"):
        pytest.skip(missing_requirements("valkey-glide-sync"))
    hashes = [0xA001, 0xA002, 0xA003]
    with LMCacheConnector(connector_url(scheme, server), LLAMA3_8B_CHUNK, max_chunks=3,
                          **connector_options(scheme)) as big:
        assert big.chunk_bytes == 32 * 1024 * 1024
        big.put(hashes[:1], version=1)
        big.batched_put(hashes[1:], version=1)
        assert big.contains(hashes) == 3
        assert big.get(hashes) == big.expected(hashes, 1)
        big.put(hashes[:1], version=2)
        assert big.get(hashes[:1]) == big.expected(hashes[:1], 2)


@pytest.mark.skipif(TARGET == "redis", reason="the disk tier is cxlredis's")
@pytest.mark.parametrize("scheme", ["redis", "resp"])
def test_chunks_evicted_to_the_disk_tier_come_back_through_lmcache(scheme):
    """160 MiB of chunks into 64 MiB with a disk tier under the arena: LMCache's own
    connectors, unchanged, find and read every chunk, byte for byte."""
    srv = server_under_test(arena_size="256mb", maxmemory="64mb", maxmemory_policy="allkeys-lru",
                            disk_tier_dir="tier", disk_tier_size="512mb")
    try:
        srv.start()
        with LMCacheConnector(connector_url(scheme, srv), SMALL_CHUNK, max_chunks=MAX_CHUNKS) as lm:
            raw = srv.client()
            hashes = list(range(0x7000, 0x7000 + 160))
            lm.put(hashes, version=1)
            assert raw.info("stats")["evicted_keys"] > 0
            assert raw.info("disktier")["disk_tier_keys"] > 0
            assert lm.contains(hashes) == len(hashes)
            assert lm.get(hashes) == lm.expected(hashes, 1)
            assert raw.info("disktier")["disk_tier_hits"] > 0
            raw.close()
    finally:
        srv.close()
