"""cxlredis.local: a client that reads and writes values through the server's own
memory when it shares it, and speaks plain RESP when it does not.

    from cxlredis.local import LocalClient
    with LocalClient(unix_socket_path="/run/cxlredis.sock") as kv:
        kv.set(b"chunk", tensor_bytes)          # reserve + fill through the mapping + commit
        with kv.get(b"chunk") as ref:           # a zero-copy, read-only view under a lease
            arr = ref.array("float16")          # numpy, no copy
            ...                                 # use it, then:
            ok = ref.valid()                    # False: the lease ran out meanwhile, do not trust arr
        n = kv.get_into(b"chunk", buffer)       # one validated memcpy into your buffer
        data = kv.get_bytes(b"chunk")           # the same into new bytes

At connect it asks CXL INFO for the backing's path, size and layout, maps it
read-only (and read-write on the first write), and checks that its mapping holds
the server's arena (a digest of the superblock's geometry, which is unique per
format), so a path that names another file, another host's file or nothing at all
falls back to RESP. `mapped` says which way it went and `why_not_mapped` why.

Reading through the mapping (docs/colocated.md has the argument): CXL GETREF
leases the value; while the lease runs the server neither frees nor rewrites its
bytes. A copy is accepted only if, after the copy, the lease is still running by
this process's clock (the deadline is counted from before the request, so it is
never later than the server's), the connection was not re-established (a
restarted server does not know our leases), and the entry header in the mapping
still shows a live or deleted-but-pinned entry of the same generation. Otherwise
the read is retried, then answered as a miss: a torn value is never returned.

Not thread-safe: one LocalClient per thread (leases belong to its connection).
"""
import hashlib
import mmap
import os
import stat
import struct
import time

import redis
from redis.exceptions import ResponseError

from ._store import value_checksum

_U64 = struct.Struct("<Q")
# A read whose lease check fails is asked for again this many times, then is a miss.
READ_ATTEMPTS = 3


class Ref:
    """A value: `view` is a read-only memoryview of it. Through the mapping it is held
    under a lease: use `valid()` after using the bytes, and `release()` (or a `with`
    block) when done. A value that came over RESP is plain bytes, always valid."""

    __slots__ = ("view", "lease", "_client", "_generation", "_header", "_offset", "_deadline", "_epoch")

    def __init__(self, view, client=None, lease=None, generation=0, header=0, offset=0,
                 deadline=0.0, epoch=0):
        self.view = view
        self.lease = lease
        self._client = client
        self._generation = generation
        self._header = header
        self._offset = offset
        self._deadline = deadline
        self._epoch = epoch

    @property
    def mapped(self):
        return self.lease is not None

    def valid(self):
        """Whether every byte read from `view` so far is the value as committed."""
        if self.lease is None:
            return True
        return self._client is not None and self._client._ref_valid(self)

    def intact(self, data=None):
        """Whether `data` (default: the view itself) matches the checksum the value was
        committed with under arena-checksum; True for a value stored without one. A copy
        is checked after valid() confirmed it: a failure means the memory changed."""
        if self.lease is None or self._client is None:
            return True
        return self._client._value_intact(self, self.view if data is None else data)

    def release(self):
        """End the lease (sent with the client's next command); the view must not be used after."""
        if self.lease is not None and self._client is not None:
            self._client._release_later(self.lease)
            self._client = None

    def __del__(self):
        self.release()      # a dropped Ref must not keep its pin until the lease expires

    def array(self, dtype="uint8", shape=None):
        """The value as a read-only numpy array over the same memory (no copy)."""
        import numpy
        arr = numpy.frombuffer(self.view, dtype=dtype)
        return arr if shape is None else arr.reshape(shape)

    def __len__(self):
        return len(self.view)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Slot:
    """A reserved block to fill through `view` (writable) and then `commit()` or `abort()`."""

    __slots__ = ("view", "lease", "_client", "_deadline", "_done")

    def __init__(self, client, view, lease, deadline):
        self._client = client
        self.view = view
        self.lease = lease
        self._deadline = deadline
        self._done = False

    def time_left(self):
        """Seconds this process may still write into `view`."""
        return self._deadline - time.monotonic()

    def commit(self):
        """Make the filled block the key's value (atomically, on the server)."""
        self._done = True
        self._client._expect_ok(self._client._call(("CXL", "COMMIT", self.lease))[0])

    def abort(self):
        if not self._done:
            self._done = True
            self._client._expect_ok(self._client._call(("CXL", "ABORT", self.lease))[0])

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is not None:
            self.abort()


class LocalClient:
    """A redis-py client (`self.redis`, one dedicated connection) plus the mapped path."""

    def __init__(self, host="localhost", port=6379, *, unix_socket_path=None, username=None,
                 password=None, db=0, backing_path=None, map_backing=True, socket_timeout=None):
        self.redis = redis.Redis(host=host, port=port, unix_socket_path=unix_socket_path,
                                 username=username, password=password, db=db,
                                 socket_timeout=socket_timeout, single_connection_client=True)
        self._conn = self.redis.connection
        self._epoch = 0
        self._conn.register_connect_callback(self._reconnected)
        self._pending_release = []
        self._map = self._view = None
        self._wmap = self._wview = None
        self._writable_checked = False
        self.info = {}
        self.why_not_mapped = "mapping not requested" if not map_backing else ""
        self.why_not_writable = ""
        self._path = backing_path
        if map_backing:
            self._attach()

    # ---- setup --------------------------------------------------------------
    def _reconnected(self, connection):
        self._epoch += 1

    def _attach(self):
        try:
            info = self.redis.execute_command("CXL", "INFO")
        except ResponseError as e:
            self.why_not_mapped = f"CXL INFO refused: {e}"
            return
        if isinstance(info, list):      # RESP2 gives the map as a flat list
            info = dict(zip(info[::2], info[1::2]))
        self.info = info = {_text(k): _text(v) if isinstance(v, bytes) else v for k, v in info.items()}
        if info["mapping"] != "allowed":
            self.why_not_mapped = info["mapping-refused-because"]
            return
        self._path = self._path or info["backing-path"]
        self._layout = (info["header-bytes"], info["state-offset"], info["state-mask"],
                        (info["live-state"], info["zombie-state"]), info["generation-offset"])
        self._checksummed = (info["type-offset"], info["checksummed-flag"])
        self._map, self.why_not_mapped = self._map_backing(mmap.PROT_READ, os.O_RDONLY)
        if self._map is not None:
            self._view = memoryview(self._map)

    def _map_backing(self, prot, flags):
        """(mapping, "") or (None, why not)."""
        path, size = self._path, self.info["backing-size"]
        try:
            fd = os.open(path, flags | os.O_CLOEXEC)
        except OSError as e:
            return None, f"cannot open {path}: {e.strerror}"
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_size != size:
                return None, f"{path} is {st.st_size} bytes, the server's arena {size}"
            mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, prot)
        except OSError as e:
            return None, f"cannot map {path}: {e.strerror}"
        finally:
            os.close(fd)
        geometry = mapping[:self.info["geometry-bytes"]]
        if hashlib.blake2b(geometry, digest_size=16).hexdigest() != self.info["geometry-digest"]:
            mapping.close()
            return None, f"{path} does not hold the server's arena"
        return mapping, ""

    def _writable(self):
        """The read-write mapping, made on the first write; None if not allowed."""
        if not self._writable_checked:
            self._writable_checked = True
            if self._map is None:
                self.why_not_writable = self.why_not_mapped
            else:
                self._wmap, self.why_not_writable = self._map_backing(
                    mmap.PROT_READ | mmap.PROT_WRITE, os.O_RDWR)
                if self._wmap is not None:
                    self._wview = memoryview(self._wmap)
        return self._wview

    @property
    def mapped(self):
        return self._map is not None

    # ---- the wire -------------------------------------------------------------
    def _call(self, *commands):
        """Send commands in one write (after any pending CXL RELEASE); their replies,
        errors as ResponseError objects."""
        if self._pending_release:
            commands = (("CXL", "RELEASE", *self._pending_release),) + commands
            self._pending_release = []
            skip = 1
        else:
            skip = 0
        conn = self._conn
        conn.send_packed_command(conn.pack_commands(commands))
        replies = []
        for _ in commands:
            try:
                replies.append(conn.read_response())
            except ResponseError as e:
                replies.append(e)
        return replies[skip:]

    @staticmethod
    def _expect_ok(reply):
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    def _release_later(self, lease):
        self._pending_release.append(lease)

    def flush_releases(self):
        """Send the pending lease releases now (they otherwise ride on the next command)."""
        if self._pending_release:
            self._call()

    # ---- reads ----------------------------------------------------------------
    def _ref(self, reply, began, epoch):
        if reply is None:
            return None
        off, length, generation, lease, ttl_ms, header = self._expect_ok(reply)
        return Ref(self._view[off:off + length], self, lease, generation, header, off,
                   began + ttl_ms / 1000, epoch)

    def _ref_valid(self, ref):
        if ref._epoch != self._epoch or time.monotonic() >= ref._deadline:
            return False
        _, state_at, state_mask, states, generation_at = self._layout
        state = _U64.unpack_from(self._map, ref._header + state_at)[0] & state_mask
        return (state in states
                and _U64.unpack_from(self._map, ref._header + generation_at)[0] == ref._generation)

    def _value_intact(self, ref, data):
        type_at, flag = self._checksummed
        if not self._map[ref._header + type_at] & flag:
            return True
        return _U64.unpack_from(self._map, ref._offset - 8)[0] == value_checksum(data)

    def get(self, key):
        """The value as a Ref (zero copy when mapped), or None."""
        if self._map is None:
            value = self.redis.get(key)
            return None if value is None else Ref(memoryview(value))
        began, epoch = time.monotonic(), self._epoch
        return self._ref(self._call(("CXL", "GETREF", key))[0], began, epoch)

    def mget(self, keys):
        """Refs (or None) for several keys, in one round trip."""
        if self._map is None:
            return [None if v is None else Ref(memoryview(v)) for v in self.redis.mget(keys)]
        began, epoch = time.monotonic(), self._epoch
        replies = self._expect_ok(self._call(("CXL", "MGETREF", *keys))[0])
        return [self._ref(reply, began, epoch) for reply in replies]

    def get_into(self, key, out):
        """Copy the value into the writable buffer `out`; its length, or None if missing.
        Through the mapping this is one memcpy, checked against the lease afterwards."""
        target = memoryview(out).cast("B")
        for _ in range(READ_ATTEMPTS):
            ref = self.get(key)
            if ref is None:
                return None
            with ref:
                n = len(ref.view)
                if n > len(target):
                    raise ValueError(f"value of {n} bytes does not fit a {len(target)}-byte buffer")
                target[:n] = ref.view
                if ref.valid():
                    return n if ref.intact(target[:n]) else None     # corrupt: a miss
        return None

    def get_bytes(self, key):
        """A copy of the value as bytes, or None."""
        for _ in range(READ_ATTEMPTS):
            ref = self.get(key)
            if ref is None or not ref.mapped:
                return None if ref is None else ref.view.obj
            with ref:
                data = ref.view.tobytes()
                if ref.valid():
                    return data if ref.intact(data) else None
        return None

    # ---- writes -----------------------------------------------------------------
    def reserve(self, key, nbytes, *, ex=None, px=None):
        """A Slot of nbytes to fill through the mapping (needs a writable mapping)."""
        if self._writable() is None:
            raise RuntimeError(f"no writable mapping: {self.why_not_writable}")
        began = time.monotonic()
        return self._slot(self._call(_reserve_command(key, nbytes, ex, px))[0], began)

    def _slot(self, reply, began):
        lease, off, nbytes, ttl_ms = self._expect_ok(reply)
        return Slot(self, self._wview[off:off + nbytes], lease, began + ttl_ms / 1000)

    def set(self, key, value, *, ex=None, px=None):
        """SET through the mapping when writable (reserve, memcpy, commit), else RESP."""
        data = memoryview(value).cast("B")
        if self._writable() is None:
            return self.redis.set(key, data, ex=ex, px=px)
        with self.reserve(key, len(data), ex=ex, px=px) as slot:
            _fill(slot, data)
            slot.commit()
        return True

    def mset(self, items, *, ex=None, px=None):
        """Set several keys: all reservations in one round trip, all commits in another."""
        items = [(key, memoryview(value).cast("B")) for key, value in dict(items).items()]
        if self._writable() is None:
            pipe = self.redis.pipeline(transaction=False)
            for key, data in items:
                pipe.set(key, data, ex=ex, px=px)
            pipe.execute()
            return True
        began = time.monotonic()
        replies = self._call(*(_reserve_command(key, len(data), ex, px) for key, data in items))
        failed = next((r for r in replies if isinstance(r, ResponseError)), None)
        slots = [self._slot(r, began) for r in replies if not isinstance(r, ResponseError)]
        try:
            if failed is not None:
                raise failed
            for slot, (_, data) in zip(slots, items):
                _fill(slot, data)
        except BaseException:
            if slots:
                self._call(*(("CXL", "ABORT", slot.lease) for slot in slots))
            raise
        for reply in self._call(*(("CXL", "COMMIT", slot.lease) for slot in slots)):
            self._expect_ok(reply)
        return True

    # ---- lifecycle ----------------------------------------------------------------
    def close(self):
        try:
            self.flush_releases()
        except (redis.ConnectionError, OSError):
            pass                    # the leases expire on the server anyway
        for name in ("_view", "_wview"):
            view = getattr(self, name)
            if view is not None:
                setattr(self, name, None)
                try:
                    view.release()
                except BufferError:
                    pass            # a caller still holds a view: unmapped when it is dropped
        for name in ("_map", "_wmap"):
            mapping = getattr(self, name)
            if mapping is not None:
                try:
                    mapping.close()
                except BufferError:
                    pass            # a caller still holds a view: unmapped when it is dropped
                setattr(self, name, None)
        self.redis.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _reserve_command(key, nbytes, ex, px):
    if ex is not None:
        return ("CXL", "RESERVE", key, nbytes, "EX", ex)
    if px is not None:
        return ("CXL", "RESERVE", key, nbytes, "PX", px)
    return ("CXL", "RESERVE", key, nbytes)


def _fill(slot, data):
    if slot.time_left() <= 0:
        raise TimeoutError(f"lease {slot.lease} ran out before the value was written")
    slot.view[:] = data


def _text(value):
    return value.decode() if isinstance(value, bytes) else value
