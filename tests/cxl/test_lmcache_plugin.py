"""The LMCache connector (cxlredis.lmcache_plugin) loaded by LMCache's own plugin
mechanism — remote_storage_plugins plus the module_path/class_name extra_config
keys, addressed as plugin://<name> — and driven through LMCache's real code in a
child process (as tests/lmcache does), both mapped (unix socket) and over RESP."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lmcache"))
from lmcache_driver import SMALL_CHUNK, expected_digest, missing_requirements  # noqa: E402

from cxl_helpers import PASSWORD, cxl_server, unix_client  # noqa: E402

REPO = str(Path(__file__).resolve().parents[2])
pytestmark = pytest.mark.skipif(missing_requirements() is not None, reason=str(missing_requirements()))

CHILD = r"""
import asyncio, gc, json, sys, threading
gc.disable()        # every cycle stays to be counted at the end (see "cyclic")
import torch
from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.metadata import LMCacheMetadata
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend
from lmcache.v1.storage_backend.remote_backend import RemoteBackend
from lmcache_driver import ChunkGeometry, MODEL_NAME, digest, payload

spec = json.loads(sys.argv[1])
g = ChunkGeometry(**spec["geometry"])
name = spec["plugin"]
config = LMCacheEngineConfig.from_defaults(
    chunk_size=g.tokens, local_cpu=False, max_local_cpu_size=0.2, save_unfull_chunk=False,
    remote_storage_plugins=[name],
    extra_config={f"remote_storage_plugin.{name}.module_path": "cxlredis.lmcache_plugin",
                  f"remote_storage_plugin.{name}.class_name": "CxlRedisConnector",
                  f"remote_storage_plugin.{name}.url": spec["url"],
                  "save_chunk_meta": spec["save_chunk_meta"]})
dtype = getattr(torch, g.dtype)
metadata = LMCacheMetadata(model_name=MODEL_NAME, world_size=1, local_world_size=1, worker_id=0,
                           local_worker_id=0, kv_dtype=dtype,
                           kv_shape=(g.layers, 2, g.tokens, g.kv_heads, g.head_size), chunk_size=g.tokens)
cpu = LocalCPUBackend(config, metadata)
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()
# what LMCache builds for each remote_storage_plugins entry
backend = RemoteBackend(config, metadata, loop, cpu, "cpu", plugin_name=name)
conn = backend.connection
inner = conn.getWrappedConnector()
run = lambda coro: asyncio.run_coroutine_threadsafe(coro, loop).result(30)
key = lambda h: CacheEngineKey(MODEL_NAME, 1, 0, h, dtype)
out = {"connector": type(inner).__name__, "mapped": inner.client.mapped}
for h in range(4):
    obj = cpu.allocate(inner.meta_shapes, inner.meta_dtypes, inner.meta_fmt)
    memoryview(obj.byte_array).cast("B")[:] = payload(h, 1, g.nbytes)
    run(conn.put(key(h), obj))
    obj.ref_count_down()        # as LMCache's storage manager does once a put is done
out["exists"] = [run(conn.exists(key(h))) for h in range(6)]
out["exists_sync"] = [conn.exists_sync(key(h)) for h in (0, 5)]
out["contains"] = run(conn.batched_async_contains("lookup", [key(h) for h in range(6)]))
out["contains_sync"] = conn.batched_contains([key(h) for h in (0, 1, 2, 7, 3)])
got = []
for h in range(6):
    obj = run(conn.get(key(h)))
    got.append(None if obj is None else digest(memoryview(obj.byte_array).cast("B")))
    if obj is not None:
        obj.ref_count_down()
out["digests"] = got
prefix = run(conn.batched_get_non_blocking("lookup", [key(h) for h in (0, 1, 9, 2)]))
out["prefix"] = [digest(memoryview(o.byte_array).cast("B")) for o in prefix]
for o in prefix:
    o.ref_count_down()
stored = []
for h in (20, 21, 22):
    obj = cpu.allocate(inner.meta_shapes, inner.meta_dtypes, inner.meta_fmt)
    memoryview(obj.byte_array).cast("B")[:] = payload(h, 1, g.nbytes)
    stored.append(obj)
run(conn.batched_put([key(h) for h in (20, 21, 22)], stored))
for o in stored:
    o.ref_count_down()
read_back = run(conn.batched_get_non_blocking("put", [key(h) for h in (20, 21, 22)]))
out["batched_put"] = [digest(memoryview(o.byte_array).cast("B")) for o in read_back]
for o in read_back:
    o.ref_count_down()
batched = run(conn.batched_get([key(h) for h in (3, 7, 0)]))
out["batched"] = [None if o is None else digest(memoryview(o.byte_array).cast("B")) for o in batched]
for o in batched:
    if o is not None:
        o.ref_count_down()
out["mapped_at_end"] = inner.client.mapped
# A MemoryObj left in a reference cycle is freed by the cyclic GC wherever it next runs;
# inside LMCache's allocate() that deadlocks on the allocator's own lock.
gc.set_debug(gc.DEBUG_SAVEALL)
gc.collect()
out["cyclic"] = sorted({type(o).__name__ for o in gc.garbage
                        if type(o).__name__ in ("TensorMemoryObj", "Ref", "Slot")}
                       | {o.f_code.co_name for o in gc.garbage
                          if type(o).__name__ == "frame" and "cxlredis" in o.f_code.co_filename})
print(json.dumps(out), flush=True)
import os; os._exit(0)
"""


@pytest.fixture(scope="module")
def server():
    srv = cxl_server()
    try:
        yield srv.start()
    finally:
        srv.close()


def drive(url, plugin="cxlredis", save_chunk_meta=True):
    spec = {"geometry": SMALL_CHUNK.__dict__, "url": url, "plugin": plugin,
            "save_chunk_meta": save_chunk_meta}
    paths = [REPO, str(Path(REPO) / "tests" / "lmcache"), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, LMCACHE_LOG_LEVEL="WARNING", PYTHONPATH=os.pathsep.join(filter(None, paths)))
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True,
                          env=env, timeout=180)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-4000:]
    out = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    out["stderr"] = proc.stderr.decode(errors="replace")
    return out


def check(out):
    expected = [expected_digest(h, 1, SMALL_CHUNK.nbytes) for h in range(4)]
    assert out["connector"] == "CxlRedisConnector"
    assert out["cyclic"] == [], "chunks or cxlredis frames left in reference cycles"
    assert out["exists"] == [True] * 4 + [False] * 2
    assert out["exists_sync"] == [True, False]
    assert out["contains"] == 4
    assert out["contains_sync"] == 3
    assert out["digests"] == expected + [None, None]
    assert out["prefix"] == expected[:2]
    assert out["batched"] == [expected[3], None, expected[0]]
    assert out["batched_put"] == [expected_digest(h, 1, SMALL_CHUNK.nbytes) for h in (20, 21, 22)]


def calls(server, command):
    return unix_client(server).info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


@pytest.mark.parametrize("save_chunk_meta", [True, False])
def test_plugin_through_the_mapping(server, save_chunk_meta):
    unix_client(server).flushall()
    unix_client(server).config_resetstat()
    out = drive(f"unix://{server.unixsocket}", save_chunk_meta=save_chunk_meta)
    assert out["mapped"] is True
    check(out)
    assert calls(server, "cxl|mgetref") == 1      # each batched read: one round trip
    assert calls(server, "cxl|prefixref") == 2    # ...and the leading chunks' one
    assert calls(server, "cxl|prefix") == 2       # each prefix lookup: one command
    assert calls(server, "cxl|commit") == 7 and calls(server, "set") == 0   # every put mapped


def test_plugin_over_resp_with_an_instance_name(server):
    unix_client(server).flushall()
    unix_client(server).config_resetstat()
    out = drive(f"redis://127.0.0.1:{server.port}/0", plugin="cxlredis.tier2")
    assert out["mapped"] is False
    check(out)
    assert calls(server, "cxl|prefixget") == 2 and calls(server, "cxl|prefix") == 2
    assert unix_client(server).dbsize() == 7          # one key per chunk


def test_plugin_maps_a_tenants_own_arena():
    """A tenant with ARENA own: LMCache, logged in as its user over the unix socket, maps
    the tenant's arena file, and its chunks are the tenant's keys, nobody else's."""
    srv = cxl_server([f"user admin on >{PASSWORD} ~* &* +@all",
                      f"user lm on >{PASSWORD} ~* &* +@all",
                      "tenant infer quota 64mb arena own users lm"])
    try:
        srv.start()
        out = drive(f"unix://lm:{PASSWORD}@{srv.unixsocket}")
        assert out["mapped"] is True
        check(out)
        with unix_client(srv, username="lm", password=PASSWORD) as tenant:
            assert tenant.dbsize() == 7
            assert tenant.execute_command("CXL", "INFO")[b"backing-path"].decode().endswith(
                "a.tenant-infer.arena")
        with unix_client(srv, username="admin", password=PASSWORD) as admin:
            assert admin.dbsize() == 0
    finally:
        srv.close()


@pytest.mark.parametrize("rules, refused", [
    ("+@all -@dangerous", "'cxl|reserve'"),      # CXL INFO allowed: refused at the first put
    ("+@all -@cxl", "'cxl|info'"),               # refused at connect
])
def test_plugin_falls_back_to_resp_when_the_user_may_not_map(rules, refused):
    """A user the ACL does not give the mapping commands: every get and put still works,
    over RESP, and one warning says why and how to grant them."""
    srv = cxl_server([f"user lm on >{PASSWORD} ~* &* {rules}"])
    try:
        srv.start()
        out = drive(f"unix://lm:{PASSWORD}@{srv.unixsocket}")
        check(out)
        assert out["mapped_at_end"] is False
        warnings = [line for line in out["stderr"].splitlines() if "over RESP" in line]
        assert len(warnings) == 1, out["stderr"][-4000:]
        assert refused in warnings[0] and "+@cxl" in warnings[0]
        with unix_client(srv, username="lm", password=PASSWORD) as client:
            assert client.dbsize() == 7
    finally:
        srv.close()


def test_plugin_logs_once_why_it_goes_over_resp(server):
    unix_client(server).flushall()
    out = drive(f"redis://127.0.0.1:{server.port}/0")
    warnings = [line for line in out["stderr"].splitlines() if "over RESP" in line]
    assert len(warnings) == 1, out["stderr"][-4000:]
    assert "offered only over the unix socket" in warnings[0]


def test_plugin_at_the_lease_cap_goes_over_resp(server):
    """Every lease refused (a chunk is more than cxl-lease-max-bytes): LMCache still stores
    and reads every chunk, over RESP, through the same mapped client."""
    admin = unix_client(server)
    admin.flushall()
    admin.config_resetstat()
    admin.config_set("cxl-lease-max-bytes", SMALL_CHUNK.nbytes // 2)
    refused = admin.info("arena")
    try:
        out = drive(f"unix://{server.unixsocket}")
    finally:
        admin.config_set("cxl-lease-max-bytes", 0)
    assert out["mapped"] is True
    check(out)
    assert calls(server, "cxl|commit") == 0 and calls(server, "set") == 7
    now = admin.info("arena")
    assert now["cxl_slots_refused"] > refused["cxl_slots_refused"]
    assert now["cxl_refs_refused"] > refused["cxl_refs_refused"]
