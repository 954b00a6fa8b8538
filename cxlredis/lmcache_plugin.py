"""An LMCache remote connector over cxlredis.local: KV chunks are read and written
through the arena's mapping when LMCache runs on the same host (or the same CXL
pool) as the server, over plain RESP otherwise. It loads through LMCache's
remote-storage plugin mechanism, without patching LMCache:

    remote_storage_plugins: ["cxlredis"]
    extra_config:
      remote_storage_plugin.cxlredis.module_path: cxlredis.lmcache_plugin
      remote_storage_plugin.cxlredis.class_name: CxlRedisConnector
      remote_storage_plugin.cxlredis.url: unix:///run/cxlredis/cxlredis.sock
      # optional: remote_storage_plugin.cxlredis.backing_path: /dev/dax0.0
      # (where this process sees the arena, when not at the server's path)

No remote_url beside it: LMCache would build a second, legacy backend for that.
The url is unix://[user:password@]/path/to.sock[?db=n] (a tenant's user maps its
tenant's own arena, if the tenant has one) or redis://[user:password@]host:port[/db];
for a Redis Cluster of cxlredis nodes, redis-cluster://[user:password@]h1:p1,h2:p2
or unix-cluster://[user:password@]/a.sock,/b.sock (startup nodes: the sockets of
shards on this host), and each chunk goes to the shard of its key's slot
(cxlredis.local.ClusterLocalClient). Its user needs +@cxl to map, and without it
the chunks go over RESP (one warning says why). A chunk is one key (LMCache's key
string) holding LMCache's chunk metadata (when save_chunk_meta is on, its default)
followed by the KV bytes, committed at once.
"""
import logging
import threading
from urllib.parse import parse_qs, unquote, urlparse

from lmcache.v1.protocol import RemoteMetadata
from lmcache.v1.storage_backend.connector.base_connector import RemoteConnector

from .local import READ_ATTEMPTS, ClusterLocalClient, LocalClient

log = logging.getLogger("cxlredis.lmcache_plugin")
CLASS_NAME = "CxlRedisConnector"
_STALE = object()


def _plugin_name(config):
    """Which of LMCache's remote_storage_plugins names this class (its extra_config keys)."""
    extra = config.extra_config or {}
    for name in config.remote_storage_plugins or ():
        if (extra.get(f"remote_storage_plugin.{name}.module_path") == __name__
                and extra.get(f"remote_storage_plugin.{name}.class_name") == CLASS_NAME):
            return name
    raise ValueError(f"no remote_storage_plugins entry names {__name__}.{CLASS_NAME}")


def client_options(url):
    """LocalClient keyword arguments for a unix:// or redis:// url."""
    parsed = urlparse(url)
    if parsed.scheme == "unix":
        options = {"unix_socket_path": parsed.path}
        db = parse_qs(parsed.query).get("db", [""])[0]
    elif parsed.scheme == "redis":
        options = {"host": parsed.hostname or "localhost", "port": parsed.port or 6379}
        db = parsed.path.strip("/")
    else:
        raise ValueError(f"cxlredis plugin url must be unix://, redis://, redis-cluster:// or "
                         f"unix-cluster://, not {url!r}")
    if parsed.username:
        options["username"] = unquote(parsed.username)
    if parsed.password:
        options["password"] = unquote(parsed.password)
    if db:
        options["db"] = int(db)
    return options


CLUSTER_SCHEMES = ("redis-cluster", "unix-cluster")


def cluster_options(url):
    """ClusterLocalClient keyword arguments for a redis-cluster:// or unix-cluster:// url."""
    scheme, _, rest = url.partition("://")
    if scheme not in CLUSTER_SCHEMES:
        raise ValueError(f"not a cluster url: {url!r}")
    credentials, _, nodes = rest.rpartition("@")
    if scheme == "redis-cluster":
        nodes, _, db = nodes.partition("/")
        if db not in ("", "0"):
            raise ValueError(f"a cluster has only db 0, not {db!r} ({url!r})")
    startup = [node for node in nodes.split(",") if node]
    if not startup:
        raise ValueError(f"no cluster node in {url!r}")
    options = {"startup_nodes": startup}
    username, _, password = credentials.partition(":")
    if username:
        options["username"] = unquote(username)
    if password:
        options["password"] = unquote(password)
    return options


def connect(url, backing_path=None):
    """A LocalClient for a unix:// or redis:// url; a ClusterLocalClient for a cluster's
    (each shard's backing is at the path its server reports: no backing_path)."""
    if url.partition("://")[0] in CLUSTER_SCHEMES:
        if backing_path:
            raise ValueError("backing_path names one server's arena: it cannot be given "
                             "with a cluster url")
        return ClusterLocalClient(**cluster_options(url))
    return LocalClient(**client_options(url), backing_path=backing_path)


class CxlRedisConnector(RemoteConnector):
    """LMCache's RemoteConnector over LocalClient (or ClusterLocalClient). The client is
    synchronous and holds one connection per server, so calls run one at a time on
    LMCache's default executor."""

    def __init__(self, loop, local_cpu_backend, config):
        super().__init__(local_cpu_backend.config, local_cpu_backend.metadata)
        name = _plugin_name(config)
        extra = config.extra_config
        url = extra.get(f"remote_storage_plugin.{name}.url")
        if not url:
            raise ValueError(f"remote_storage_plugin.{name}.url is not set")
        self.loop = loop
        self.local_cpu_backend = local_cpu_backend
        self.client = connect(url, extra.get(f"remote_storage_plugin.{name}.backing_path"))
        if not self.client.mapped:      # (a refusal that comes later is logged by the client)
            log.warning("cxlredis plugin '%s': KV chunks go over RESP, not through the arena's "
                        "mapping: %s", name, self.client.why_not_mapped)
        self.lock = threading.Lock()

    def _run(self, fn, *args):
        def locked():
            with self.lock:
                return fn(*args)
        return self.loop.run_in_executor(None, locked)

    # ---- exists
    def exists_sync(self, key):
        with self.lock:
            return bool(self.client.exists(key.to_string()))

    async def exists(self, key):
        return await self._run(lambda: bool(self.client.exists(key.to_string())))

    # ---- the longest cached prefix: one CXL PREFIX, not one EXISTS per chunk
    def support_batched_contains(self):
        return True

    def batched_contains(self, keys):
        with self.lock:
            return self.client.prefix([key.to_string() for key in keys])

    def support_batched_async_contains(self):
        return True

    async def batched_async_contains(self, lookup_id, keys, pin=False):
        return await self._run(self.client.prefix, [key.to_string() for key in keys])

    # ---- get
    def _copy_out(self, ref):
        """A MemoryObj holding ref's chunk; None for a miss (or LMCache's buffer full);
        _STALE when the lease check failed and the bytes cannot be trusted."""
        start = self.remote_metadata_bytes if self.save_chunk_meta else 0
        if len(ref) < start:
            return None
        if start:
            meta = RemoteMetadata.deserialize(ref.view[:start].tobytes())
            if not ref.valid():
                return _STALE
            obj = self.local_cpu_backend.allocate(meta.shapes, meta.dtypes, meta.fmt)
        else:
            obj = self.local_cpu_backend.allocate(self.meta_shapes, self.meta_dtypes, self.meta_fmt)
        if obj is None:
            return None
        target = memoryview(obj.byte_array).cast("B")
        n = len(ref) - start
        if n > len(target):
            obj.ref_count_down()
            return None
        target[:n] = ref.view[start:]
        if not ref.valid():
            obj.ref_count_down()
            return _STALE
        if not ref.intact():            # changed in memory since it was written: a miss
            obj.ref_count_down()
            return None
        return obj if start else self.reshape_partial_chunk(obj, n)

    def _read(self, name):
        """The MemoryObj of the key named `name`, or None."""
        for _ in range(READ_ATTEMPTS):
            ref = self.client.get(name)
            if ref is None:
                return None
            with ref:
                obj = self._copy_out(ref)
            if obj is not _STALE:
                return obj
        return None

    async def get(self, key):
        return await self._run(self._read, key.to_string())

    def _batched_get(self, keys):
        """MemoryObjs (or None) for keys: every reference in one round trip, then the
        copies; a key whose lease check failed is read again on its own."""
        names = [key.to_string() for key in keys]
        objs = []
        for name, ref in zip(names, self.client.mget(names)):
            if ref is None:
                objs.append(None)
                continue
            with ref:
                obj = self._copy_out(ref)
            objs.append(self._read(name) if obj is _STALE else obj)
        return objs

    def support_batched_get(self):
        return True

    async def batched_get(self, keys):
        return await self._run(self._batched_get, keys)

    def support_batched_get_non_blocking(self):
        return True

    def _leading_get(self, keys):
        """MemoryObjs of the leading keys, up to the first miss: the references of the
        leading chunks in one round trip (CXL PREFIXREF), then the copies; a chunk whose
        lease check failed is read again on its own."""
        names = [key.to_string() for key in keys]
        refs = self.client.prefix_get(names)
        found = []
        for name, ref in zip(names, refs):
            with ref:
                obj = self._copy_out(ref)
            if obj is _STALE:
                obj = self._read(name)
            if obj is None:
                break
            found.append(obj)
        for ref in refs[len(found) + 1:]:
            ref.release()
        return found

    async def batched_get_non_blocking(self, lookup_id, keys):
        """The consecutive prefix of keys that were found (LMCache's contract)."""
        return await self._run(self._leading_get, keys)

    # ---- put
    def _stored(self, memory_obj):
        """What a chunk is stored as: (metadata, KV bytes), or the KV bytes alone; the
        client copies the parts straight into the reserved block."""
        data = memoryview(memory_obj.byte_array).cast("B")
        if not self.save_chunk_meta:
            return data
        meta = RemoteMetadata(len(data), memory_obj.get_shapes(), memory_obj.get_dtypes(),
                              memory_obj.get_memory_format()).serialize()
        return (meta, data)

    async def put(self, key, memory_obj):
        await self._run(self.client.set, key.to_string(), self._stored(memory_obj))

    def support_batched_put(self):
        return True

    async def batched_put(self, keys, memory_objs):
        """Every reservation in one round trip, the copies, every commit in another."""
        chunks = {key.to_string(): self._stored(obj) for key, obj in zip(keys, memory_objs)}
        await self._run(self.client.mset, chunks)

    # ---- the rest of the interface
    async def list(self):
        return await self._run(lambda: [k.decode() for k in self.client.scan_iter(count=1000)])

    async def close(self):
        await self._run(self.client.close)

    def support_ping(self):
        return True

    async def ping(self):
        return 0 if await self._run(self.client.ping) else 1

    def remove_sync(self, key):
        with self.lock:
            return bool(self.client.delete(key.to_string()))
