"""Drives LMCache's real remote connectors from a child process.

LMCache 0.5.6 has two client-side bugs a test must survive: ``resp://`` GET of
a missing key blocks forever, and ``RedisConnector.close()`` deadlocks its
event loop.  So the connector lives in a child process (this file run as a
script) that the test talks to over JSON lines and kills by pid when done;
every call has a deadline on both sides, so a hung LMCache call fails the
test instead of hanging it.

The child builds the connector exactly as LMCache does in production: an
``LMCacheEngineConfig``, an ``LMCacheMetadata`` describing the KV chunk, a
``LocalCPUBackend`` whose allocator hands out the memory objects, and
``CreateConnector(url, loop, backend, config, metadata)``.

Payloads never cross the pipe: chunk ``h`` at version ``v`` is
``payload(h, v, nbytes)`` on both sides, and the child answers reads with a
digest of the bytes LMCache handed back (``None`` for a miss), which the test
compares with ``expected_digest``.
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

LMCACHE_VERSION = "0.5.6"
CALL_TIMEOUT = 30.0        # one LMCache operation, enforced in the child
START_TIMEOUT = 120.0      # importing torch + lmcache and connecting
MODEL_NAME = "cxlredis-test"


# ------------------------------------------------------------ shared by both sides

@dataclass(frozen=True)
class ChunkGeometry:
    """One LMCache KV chunk: kv_shape (layers, 2, tokens, kv_heads, head_size)."""
    layers: int = 2
    tokens: int = 256
    kv_heads: int = 4
    head_size: int = 128
    dtype: str = "bfloat16"

    @property
    def nbytes(self) -> int:
        itemsize = 4 if self.dtype == "float32" else 2
        return 2 * self.layers * self.tokens * self.kv_heads * self.head_size * itemsize


SMALL_CHUNK = ChunkGeometry()                     # 1 MiB: past the 64 KiB large-value threshold
LLAMA3_8B_CHUNK = ChunkGeometry(layers=32, kv_heads=8, dtype="float16")  # 32 MiB, a real chunk


def payload(chunk_hash: int, version: int, nbytes: int) -> bytes:
    return random.Random(f"{chunk_hash}/{version}").randbytes(nbytes)


def digest(data) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def expected_digest(chunk_hash: int, version: int, nbytes: int) -> str:
    return digest(payload(chunk_hash, version, nbytes))


def missing_requirements(*distributions: str) -> str | None:
    """Why LMCache's connectors cannot run here, or None when they can."""
    for name in ("torch", "lmcache", *distributions):
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return f"{name} is not installed (.ci/install-lmcache installs LMCache {LMCACHE_VERSION})"
        if name == "lmcache" and version != LMCACHE_VERSION:
            return f"lmcache {version} is installed; these tests drive {LMCACHE_VERSION}"
    return None


# ------------------------------------------------------------------ parent side

class ConnectorCallError(AssertionError):
    """An LMCache call raised, timed out, or the driver process died."""


_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class LMCacheConnector:
    """A connector built by LMCache's ``CreateConnector`` in a child process.

    ``hashes`` are LMCache chunk hashes (ints); reads return digests.  For
    ``resp://`` the child checks EXISTS before every GET (LMCache's native
    client never returns from a GET of a missing key), so a missing chunk
    reads as ``None`` there too.
    """

    def __init__(self, url: str, geometry: ChunkGeometry = SMALL_CHUNK, *,
                 extra_config: dict | None = None, max_chunks: int = 64):
        self.url = url
        self.scheme = url.split("://", 1)[0]
        self.geometry = geometry
        self.chunk_bytes = geometry.nbytes
        self.spec = {
            "url": url,
            "geometry": asdict(geometry),
            "extra_config": dict(extra_config or {}),
            # Room for max_chunks objects at once plus the allocator's slack.
            "local_cpu_gb": (max_chunks + 8) * geometry.nbytes / 2**30,
            "guard_missing_get": self.scheme == "resp",
        }
        self.proc: subprocess.Popen | None = None
        self._stderr = tempfile.NamedTemporaryFile(prefix="lmcache-driver-", suffix=".log")
        self._buffer = b""
        self.info: dict = {}

    # -- lifecycle

    def start(self) -> "LMCacheConnector":
        env = dict(os.environ, LMCACHE_LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), json.dumps(self.spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=env, cwd=tempfile.gettempdir(), preexec_fn=_die_with_parent)
        self.info = self._read_response("start", time.monotonic() + START_TIMEOUT)
        return self

    def close(self) -> None:
        """Kill the child: LMCache's close() would deadlock (RedisConnector)."""
        self._kill()
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.stdout.close()
        self._stderr.close()

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc):
        self.close()

    # -- calls

    def call(self, op: str, **args):
        if self.proc is None or self.proc.poll() is not None:
            raise ConnectorCallError(f"{op}: the LMCache driver is not running\n{self.stderr_tail()}")
        self.proc.stdin.write(json.dumps({"op": op, **args}).encode() + b"\n")
        self.proc.stdin.flush()
        return self._read_response(op, time.monotonic() + CALL_TIMEOUT + 10)

    def _read_response(self, op: str, deadline: float):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()
                raise ConnectorCallError(f"LMCache {op} ({self.url}) hung\n{self.stderr_tail()}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self.proc.wait()
                    raise ConnectorCallError(
                        f"LMCache driver exited with {code} during {op}\n{self.stderr_tail()}")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        response = json.loads(line)
        if not response["ok"]:
            detail = f"\n{self.stderr_tail()}" if op == "start" else ""
            raise ConnectorCallError(f"LMCache {op} on {self.url} failed: {response['error']}{detail}")
        return response["result"]

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            with open(self._stderr.name, errors="replace") as log:
                return "--- LMCache driver stderr (tail) ---\n" + log.read()[-limit:]
        except OSError:
            return ""

    # -- the RemoteConnector API, one method per LMCache entry point

    def key_strings(self, hashes) -> list[str]:
        return self.call("key_strings", hashes=list(hashes))

    def put(self, hashes, version: int) -> None:
        """``connector.put`` for each chunk in turn."""
        self.call("put", hashes=list(hashes), version=version)

    def batched_put(self, hashes, version: int) -> None:
        self.call("batched_put", hashes=list(hashes), version=version)

    def exists(self, hashes) -> list[bool]:
        return self.call("exists", hashes=list(hashes))

    def exists_sync(self, hashes) -> list[bool]:
        return self.call("exists_sync", hashes=list(hashes))

    def contains(self, hashes) -> int:
        """``batched_async_contains``: how many leading chunks are stored."""
        return self.call("contains", hashes=list(hashes))

    def contains_sync(self, hashes) -> int:
        """``batched_contains`` (resp:// and valkey:// only)."""
        return self.call("contains_sync", hashes=list(hashes))

    def timed_contains(self, hashes, repeat: int) -> tuple[list[float], int]:
        """Seconds of each of `repeat` ``batched_async_contains`` calls, and their answer."""
        seconds, found = self.call("timed_contains", hashes=list(hashes), repeat=repeat)
        return seconds, found

    def get(self, hashes) -> list[str | None]:
        return self.call("get", hashes=list(hashes))

    def batched_get(self, hashes) -> list[str | None]:
        return self.call("batched_get", hashes=list(hashes))

    def get_prefix(self, hashes) -> list[str]:
        """``batched_get_non_blocking``: digests of the leading stored chunks."""
        return self.call("get_prefix", hashes=list(hashes))

    def valkey_memory_info(self) -> dict:
        """LMCache's parse of INFO memory as sent through the connector's glide client."""
        return self.call("valkey_memory_info")

    def timed_store(self, hashes, version: int) -> float:
        """Seconds LMCache's remote backend takes to store the chunks (filled beforehand)."""
        return self.call("timed_store", hashes=list(hashes), version=version)

    def timed_retrieve(self, hashes) -> tuple[float, list[str | None]]:
        """Seconds to retrieve the chunks as the remote backend does, then their digests."""
        return tuple(self.call("timed_retrieve", hashes=list(hashes)))

    def expected(self, hashes, version: int) -> list[str]:
        return [expected_digest(h, version, self.chunk_bytes) for h in hashes]


# ------------------------------------------------------------------- child side

def _child_main(spec: dict) -> None:
    # Replies go to the original stdout; anything LMCache prints goes to stderr.
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def reply(ok: bool, result=None, error: str | None = None) -> None:
        replies.write(json.dumps({"ok": ok, "result": result, "error": error}) + "\n")

    try:
        driver = _ChildDriver(spec)
    except BaseException as exc:  # report why the connector could not be built
        reply(False, error=f"{type(exc).__name__}: {exc}")
        raise
    reply(True, driver.describe())
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply(True, driver.dispatch(request))
        except Exception as exc:
            reply(False, error=f"{type(exc).__name__}: {exc}")
    os._exit(0)  # skip LMCache's close paths and atexit hooks


class _ChildDriver:
    def __init__(self, spec: dict):
        import asyncio
        import threading
        from concurrent.futures import ThreadPoolExecutor

        import torch
        from lmcache.utils import CacheEngineKey
        from lmcache.v1.config import LMCacheEngineConfig
        from lmcache.v1.metadata import LMCacheMetadata
        from lmcache.v1.storage_backend.connector import CreateConnector
        from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

        self.asyncio = asyncio
        geometry = ChunkGeometry(**spec["geometry"])
        self.chunk_bytes = geometry.nbytes
        self.dtype = getattr(torch, geometry.dtype)
        self.key_type = CacheEngineKey
        self.guard_missing_get = spec["guard_missing_get"]
        # plugin://<name>: a remote_storage_plugins entry (its module and class in
        # extra_config), as LMCache's RemoteBackend builds it; else a remote_url
        plugin = spec["url"][len("plugin://"):] if spec["url"].startswith("plugin://") else None
        config = LMCacheEngineConfig.from_defaults(
            chunk_size=geometry.tokens,
            local_cpu=False,
            max_local_cpu_size=spec["local_cpu_gb"],
            remote_url=None if plugin else spec["url"],
            remote_storage_plugins=[plugin] if plugin else None,
            save_unfull_chunk=False,
            extra_config={"save_chunk_meta": False, **spec["extra_config"]},
        )
        metadata = LMCacheMetadata(
            model_name=MODEL_NAME, world_size=1, local_world_size=1, worker_id=0,
            local_worker_id=0, kv_dtype=self.dtype,
            kv_shape=(geometry.layers, 2, geometry.tokens, geometry.kv_heads, geometry.head_size),
            chunk_size=geometry.tokens,
        )
        self.backend = LocalCPUBackend(config, metadata)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="lmcache-loop", daemon=True).start()
        # Synchronous LMCache calls get a thread of their own so a hang can time out.
        self.sync_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lmcache-sync")
        self.connector = CreateConnector(spec["url"], self.loop, self.backend, config, metadata,
                                         plugin_name=plugin)
        inner = self.connector.getWrappedConnector()
        self.meta_shapes, self.meta_dtypes, self.meta_fmt = (
            inner.meta_shapes, inner.meta_dtypes, inner.meta_fmt)
        if inner.full_chunk_size_bytes != self.chunk_bytes:
            raise RuntimeError(f"LMCache sizes the chunk at {inner.full_chunk_size_bytes} bytes, "
                               f"the driver at {self.chunk_bytes}")

    def describe(self) -> dict:
        c = self.connector
        return {
            "connector": type(c.getWrappedConnector()).__name__,
            "chunk_bytes": self.chunk_bytes,
            "supports": {
                "batched_put": c.support_batched_put(),
                "batched_get": c.support_batched_get(),
                "batched_contains": c.support_batched_contains(),
                "batched_async_contains": c.support_batched_async_contains(),
            },
        }

    # -- plumbing

    def run(self, coro):
        future = self.asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(CALL_TIMEOUT)
        except TimeoutError:
            future.cancel()
            raise TimeoutError(f"the LMCache call did not finish within {CALL_TIMEOUT:.0f} s") from None

    def run_sync(self, fn, *args):
        future = self.sync_pool.submit(fn, *args)
        try:
            return future.result(CALL_TIMEOUT)
        except TimeoutError:
            raise TimeoutError(f"the LMCache call did not finish within {CALL_TIMEOUT:.0f} s") from None

    def key(self, chunk_hash: int):
        return self.key_type(MODEL_NAME, 1, 0, chunk_hash, self.dtype)

    def filled(self, chunk_hash: int, version: int):
        obj = self.backend.allocate(self.meta_shapes, self.meta_dtypes, self.meta_fmt)
        if obj is None:
            raise MemoryError("LocalCPUBackend could not allocate a chunk")
        view = memoryview(obj.byte_array).cast("B")
        view[:] = payload(chunk_hash, version, self.chunk_bytes)
        return obj

    def digest_and_free(self, obj) -> str | None:
        if obj is None:
            return None
        try:
            return digest(memoryview(obj.byte_array).cast("B"))
        finally:
            obj.ref_count_down()

    def readable(self, keys) -> list[bool]:
        """Which keys may be read: all of them, except missing ones over resp://."""
        if not self.guard_missing_get:
            return [True] * len(keys)
        return [self.run(self.connector.exists(k)) for k in keys]

    # -- operations

    def dispatch(self, request: dict):
        handler = getattr(self, "op_" + request.pop("op"))
        return handler(**request)

    def op_key_strings(self, hashes):
        return [self.key(h).to_string() for h in hashes]

    def op_put(self, hashes, version):
        for h in hashes:
            # InstrumentedRemoteConnector.put releases the object when done.
            self.run(self.connector.put(self.key(h), self.filled(h, version)))

    def op_batched_put(self, hashes, version):
        objs = [self.filled(h, version) for h in hashes]
        self.run(self.connector.batched_put([self.key(h) for h in hashes], objs))

    def op_exists(self, hashes):
        return [self.run(self.connector.exists(self.key(h))) for h in hashes]

    def op_exists_sync(self, hashes):
        return [self.run_sync(self.connector.exists_sync, self.key(h)) for h in hashes]

    def op_contains(self, hashes):
        keys = [self.key(h) for h in hashes]
        return self.run(self.connector.batched_async_contains("lookup", keys))

    def op_timed_contains(self, hashes, repeat):
        """Seconds of each of `repeat` batched_async_contains calls, timed here (the
        pipe to the parent would swamp them), and the last call's answer."""
        keys = [self.key(h) for h in hashes]
        seconds = []
        for _ in range(repeat):
            began = time.perf_counter()
            found = self.run(self.connector.batched_async_contains("lookup", keys))
            seconds.append(time.perf_counter() - began)
        return seconds, found

    def op_contains_sync(self, hashes):
        return self.run_sync(self.connector.batched_contains, [self.key(h) for h in hashes])

    def op_get(self, hashes):
        keys = [self.key(h) for h in hashes]
        return [self.digest_and_free(self.run(self.connector.get(k))) if ok else None
                for k, ok in zip(keys, self.readable(keys))]

    def op_batched_get(self, hashes):
        keys = [self.key(h) for h in hashes]
        readable = self.readable(keys)
        fetched = iter(self.run(self.connector.batched_get([k for k, ok in zip(keys, readable) if ok])))
        return [self.digest_and_free(next(fetched)) if ok else None for ok in readable]

    def op_get_prefix(self, hashes):
        keys = [self.key(h) for h in hashes]
        readable = self.readable(keys)
        if False in readable:
            keys = keys[:readable.index(False)]
        objs = self.run(self.connector.batched_get_non_blocking("lookup", keys))
        return [self.digest_and_free(obj) for obj in objs]

    # RemoteBackend's own choice: one batched call where the connector has one,
    # otherwise every chunk's call in flight at once.
    async def _store_all(self, keys, objs):
        if self.connector.support_batched_put():
            await self.connector.batched_put(keys, objs)
        else:
            await self.asyncio.gather(*(self.connector.put(k, o) for k, o in zip(keys, objs)))

    async def _retrieve_all(self, keys):
        if self.connector.support_batched_get():
            return await self.connector.batched_get(keys)
        return await self.asyncio.gather(*(self.connector.get(k) for k in keys))

    def op_timed_store(self, hashes, version):
        keys = [self.key(h) for h in hashes]
        objs = [self.filled(h, version) for h in hashes]
        began = time.perf_counter()
        self.run(self._store_all(keys, objs))
        return time.perf_counter() - began

    def op_timed_retrieve(self, hashes):
        keys = [self.key(h) for h in hashes]
        began = time.perf_counter()
        objs = self.run(self._retrieve_all(keys))
        seconds = time.perf_counter() - began
        return seconds, [self.digest_and_free(obj) for obj in objs]

    def op_valkey_memory_info(self):
        # ValkeyWorkerPool.node_memory_usage() sends INFO memory in cluster mode
        # only; send the same command through the pool's own glide client and
        # read it with the same LMCache parser.
        from glide_shared.commands.core_options import InfoSection
        from lmcache.v1.storage_backend.valkey.worker_pool import _parse_memory_info, _to_str

        pool = self.connector.getWrappedConnector()._pool
        info = pool._executor.submit(lambda: pool._get_client().info([InfoSection.MEMORY]))
        return _parse_memory_info(_to_str(info.result(CALL_TIMEOUT)))


if __name__ == "__main__":
    _child_main(json.loads(sys.argv[1]))
