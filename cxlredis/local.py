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
        ns = kv.mget_into(keys, buffers)        # MGETREF by windows, pipelined with the copies
        data = kv.get_bytes(b"chunk")           # the same into new bytes

At connect it asks CXL INFO for the backing's path, size and layout, maps it
read-only (and read-write on the first write), and checks that its mapping holds
the server's arena (a digest of the superblock's geometry, which is unique per
format), so a path that names another file, another host's file or nothing at all
falls back to RESP. `mapped` says which way it went and `why_not_mapped` why. A
server that refuses the mapping commands to this user later (its ACL lacks @cxl, or
-@dangerous took them away) turns the client to RESP for good, with one warning.

Reading through the mapping (docs/colocated.md has the argument): CXL GETREF
leases the value; while the lease runs the server neither frees nor rewrites its
bytes. A copy is accepted only if, after the copy, the lease is still running by
this process's clock (the deadline is counted from before the request, so it is
never later than the server's), the connection was not re-established (a
restarted server does not know our leases), and the entry header in the mapping
still shows a live or deleted-but-pinned entry of the same generation. Otherwise
the read is retried, then answered as a miss: a torn value is never returned. An
acquire fence (`_store.acquire_fence`) sits between the use of the bytes and those
checks, so a weakly ordered CPU cannot read the header before the value. A key
get_into read before is copied from where it was while its GETREF is on the way;
get_into says why that copy can be kept.

A lease the server refuses because the keyspace holds cxl-lease-max-bytes under
leases already is not an error to the caller: that read or write goes over RESP
instead (GET, MGET, SET), as if the backing were not mapped.

Not thread-safe: one LocalClient per thread (leases belong to its connection).
"""
import hashlib
import logging
import mmap
import os
import select
import stat
import struct
import time

import redis
from hiredis import pack_command
from redis.exceptions import DataError, NoPermissionError, ResponseError

from ._store import acquire_fence, value_checksum
from .leases import LEASE_CAP_REFUSAL

log = logging.getLogger("cxlredis.local")
_U64 = struct.Struct("<Q")
# A read whose lease check fails is asked for again this many times, then is a miss.
READ_ATTEMPTS = 3
# mget_into leases a batch this many keys at a time, the next window's request in
# flight while one is copied.
MGET_WINDOW = 8
# How long to poll for a reply before sleeping in recv (microseconds). A reply takes
# ~20 µs to come back, but a vCPU that halts while it waits is woken much later (a
# round trip of ~50 µs on an idle 2-core VM instead of ~25): on this path the copy
# that follows is only ~75 µs for 2 MiB, so the wait is worth a short spin.
SPIN_US = 50
# Where get_into last found a key's value, for this many keys (see get_into).
KNOWN_LOCATIONS = 4096


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
        return self._client is not None and self._client._lease_held(
            self._header, self._generation, self._deadline, self._epoch)

    def intact(self, data=None):
        """Whether `data` (default: the view itself) matches the checksum the value was
        committed with under arena-checksum; True for a value stored without one. A copy
        is checked after valid() confirmed it: a failure means the memory changed."""
        if self.lease is None or self._client is None:
            return True
        return self._client._intact(self._header, self._offset, self.view if data is None else data)

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
                 password=None, db=0, backing_path=None, map_backing=True, socket_timeout=None,
                 spin_us=SPIN_US, known_locations=KNOWN_LOCATIONS):
        self.redis = redis.Redis(host=host, port=port, unix_socket_path=unix_socket_path,
                                 username=username, password=password, db=db,
                                 socket_timeout=socket_timeout, single_connection_client=True)
        self._conn = self.redis.connection
        self.spin_us = spin_us          # 0: wait for replies in recv only
        self._poller = self._polled_fd = None
        self._epoch = 0
        self._conn.register_connect_callback(self._reconnected)
        self._pending_release = []
        self._locations = {}            # key -> (offset, length, generation) of its last read
        self.known_locations = known_locations      # how many get_into remembers; 0: none
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
        self._locations.clear()         # a restarted server may give out generations again

    def _attach(self):
        try:
            info = self.redis.execute_command("CXL", "INFO")
        except ResponseError as e:
            self.why_not_mapped = f"CXL INFO refused: {_not_permitted(e)}"
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
        path, size, offset = self._path, self.info["backing-size"], self.info["backing-offset"]
        try:
            fd = os.open(path, flags | os.O_CLOEXEC)
        except OSError as e:
            return None, f"cannot open {path}: {e.strerror}"
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and st.st_size < offset + size:
                return None, f"{path} is {st.st_size} bytes, the server's arena {size} at offset {offset}"
            mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, prot, offset=offset)
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

    def _refused(self, reply):
        """Whether reply is the server refusing this user a mapping command itself (not a
        key): then the client goes over RESP from now on, and says so once."""
        if not (isinstance(reply, NoPermissionError) and "'cxl|" in str(reply)):
            return False
        why = f"mapping refused: {_not_permitted(reply)}"
        log.warning("cxlredis.local: going over RESP instead of the arena's mapping: %s", why)
        self.why_not_mapped = self.why_not_writable = why
        self._map = self._view = self._wmap = self._wview = None   # outstanding Refs keep theirs
        self._writable_checked = True
        self._pending_release = []      # the server would refuse those too; the leases expire
        self._locations.clear()
        return True

    # ---- the wire -------------------------------------------------------------
    def _call(self, *commands):
        """Send commands in one write (after any pending CXL RELEASE); their replies,
        errors as ResponseError objects."""
        return self._receive(self._send(*commands))

    def _send(self, *commands):
        """The sending half of _call; what _receive needs to read the replies."""
        if self._pending_release:
            commands = (("CXL", "RELEASE", *self._pending_release),) + commands
            self._pending_release = []
            skip = 1
        else:
            skip = 0
        self._conn.send_packed_command([b"".join([_pack(command) for command in commands])])
        return len(commands), skip

    def _receive(self, sent):
        count, skip = sent
        if self.spin_us:
            self._spin_for_reply()
        replies = []
        for _ in range(count):
            try:
                replies.append(self._conn.read_response())
            except ResponseError as e:
                # a reply, not a raise: its traceback would keep the caller's frames (and
                # the buffers they hold) alive in a cycle, for the cyclic GC to free at
                # whatever point it runs, even inside a caller's allocator lock
                replies.append(e.with_traceback(None))
        return replies[skip:]

    def _spin_for_reply(self):
        """Poll the socket for up to spin_us before read_response sleeps in recv. Only
        before a request's first reply: its parser holds nothing buffered then."""
        sock = self._conn._sock
        if sock is None:
            return
        fd = sock.fileno()
        if fd != self._polled_fd:           # connected anew
            self._poller = select.poll()
            self._poller.register(fd, select.POLLIN)
            self._polled_fd = fd
        poll, deadline = self._poller.poll, time.perf_counter() + self.spin_us / 1e6
        while not poll(0) and time.perf_counter() < deadline:
            pass

    @staticmethod
    def _expect_ok(reply):
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    @staticmethod
    def _over_lease_cap(reply):
        """Whether reply is the server refusing a lease at cxl-lease-max-bytes."""
        return isinstance(reply, ResponseError) and LEASE_CAP_REFUSAL in str(reply)

    def _over_resp(self, reply):
        """Whether this call goes over RESP instead: the server refused this user the
        mapping commands (from now on: _refused) or a lease at the cap (this call only)."""
        return self._refused(reply) or self._over_lease_cap(reply)

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

    def _lease_held(self, header, generation, deadline, epoch):
        """Whether bytes read through the mapping before this call are the value committed
        at `generation`: checks 2-4 of docs/colocated.md, after an acquire fence."""
        acquire_fence()
        if epoch != self._epoch or time.monotonic() >= deadline or self._map is None:
            return False
        _, state_at, state_mask, states, generation_at = self._layout
        state = _U64.unpack_from(self._map, header + state_at)[0] & state_mask
        return state in states and _U64.unpack_from(self._map, header + generation_at)[0] == generation

    def _intact(self, header, offset, data):
        """Whether data matches the checksum stored before the value at offset (True for
        a value committed without one)."""
        type_at, flag = self._checksummed
        if self._map is None:
            return False                # refused since: nothing to check against
        if not self._map[header + type_at] & flag:
            return True
        return _U64.unpack_from(self._map, offset - 8)[0] == value_checksum(data)

    def get(self, key):
        """The value as a Ref (zero copy when mapped), or None."""
        if self._map is not None:
            began, epoch = time.monotonic(), self._epoch
            reply = self._call(("CXL", "GETREF", key))[0]
            if not self._over_resp(reply):
                return self._ref(reply, began, epoch)
        value = self.redis.get(key)
        return None if value is None else Ref(memoryview(value))

    def mget(self, keys):
        """Refs (or None) for several keys, in one round trip."""
        if self._map is not None:
            began, epoch = time.monotonic(), self._epoch
            reply = self._call(("CXL", "MGETREF", *keys))[0]
            if not self._over_resp(reply):
                return [self._ref(ref, began, epoch) for ref in self._expect_ok(reply)]
        return [None if v is None else Ref(memoryview(v)) for v in self.redis.mget(keys)]

    def get_into(self, key, out):
        """Copy the value into the writable buffer `out`; its length, or None if missing
        (`out` may then have been written to). Through the mapping this is one memcpy,
        checked against the lease afterwards.

        A key read before is copied from where it was while its GETREF is on the way,
        so the copy and the round trip overlap. That copy counts only if the reply leases
        the same (offset, length, generation): an entry keeps its generation from its
        commit until it is freed, its first `length` bytes are never written in place
        meanwhile (every rewrite is copy-on-write; APPEND and SETRANGE write past the
        end and take a new generation), and a generation is never given out twice while
        this connection lasts. So bytes copied from there are the value even if the copy
        began before the lease; otherwise the value is copied again from the reply's
        offset. The lease and header checks follow either way."""
        target = memoryview(out).cast("B")
        if self._map is None:
            return self._get_into_over_resp(key, target)
        # The Ref steps inlined: this is the hot path of a co-located reader.
        for _ in range(READ_ATTEMPTS):
            began, epoch = time.monotonic(), self._epoch
            sent = self._send(("CXL", "GETREF", key))
            copied = self._locations.get(key)
            if copied is not None and copied[1] <= len(target):
                target[:copied[1]] = self._view[copied[0]:copied[0] + copied[1]]
            else:
                copied = None
            reply = self._receive(sent)[0]
            if reply is None or self._over_resp(reply):
                self._locations.pop(key, None)
                return None if reply is None else self._get_into_over_resp(key, target)
            off, n, generation, lease, ttl_ms, header = self._expect_ok(reply)
            try:
                if copied != (off, n, generation):
                    _copy_into(self._view[off:off + n], target)
                if self._lease_held(header, generation, began + ttl_ms / 1000, epoch):
                    self._remember(key, (off, n, generation))
                    return n if self._intact(header, off, target[:n]) else None   # corrupt: a miss
                self._locations.pop(key, None)
            finally:
                self._pending_release.append(lease)
        return None

    def _get_into_over_resp(self, key, target):
        value = self.redis.get(key)
        return None if value is None else _copy_into(memoryview(value), target)

    def _remember(self, key, location):
        locations = self._locations
        if key not in locations and len(locations) >= self.known_locations:
            if not locations:
                return                                  # known_locations 0: remember none
            del locations[next(iter(locations))]        # the oldest remembered
        locations[key] = location

    def mget_into(self, keys, buffers, *, window=MGET_WINDOW):
        """Copy each key's value into the writable buffer at the same position; a list of
        lengths (None for a miss). Through the mapping, CXL MGETREF leases the batch
        `window` keys at a time, pipelined: the next window's request is on its way (and
        the server works on it) while this one is copied. Each value is checked as in
        get_into once copied, and only the keys whose check failed are asked for again.
        A value larger than its buffer raises ValueError before its window is copied; a
        key holding another type raises WRONGTYPE (over RESP, MGET answers nil for it).
        `buffers[i]` is looked up once the leases are granted (again on each attempt), so
        it may be allocated then."""
        keys = list(keys)
        if len(buffers) != len(keys):
            raise ValueError(f"{len(keys)} keys but {len(buffers)} buffers")
        if not keys:
            return []
        if self._map is None:
            return self._mget_into_over_resp(keys, buffers)
        lengths = [None] * len(keys)
        pending = list(range(len(keys)))
        for _ in range(READ_ATTEMPTS):
            try:
                pending = self._mget_pass(keys, buffers, lengths, pending, max(window, 1))
            except _MappingRefused:
                return self._mget_into_over_resp(keys, buffers)     # every key again, by copies
            if not pending:
                break
        return lengths

    def _mget_into_over_resp(self, keys, buffers):
        values = self.redis.mget(keys)
        targets = [None if value is None else _target(buffers, i, len(value))
                   for i, value in enumerate(values)]
        return [None if value is None else _copy_into(memoryview(value), target)
                for value, target in zip(values, targets)]

    def _mget_pass(self, keys, buffers, lengths, indices, window):
        """One attempt of mget_into at keys[i] for i in indices, by windows; fills lengths
        and returns the indices whose lease check failed."""
        windows = [indices[j:j + window] for j in range(0, len(indices), window)]
        epoch, failed = self._epoch, []
        inflight = self._request_refs(keys, windows[0])
        try:
            for k, part in enumerate(windows):
                began, sent = inflight
                inflight = None
                reply = self._receive(sent)[0]
                if self._over_resp(reply):
                    raise _MappingRefused
                replies = self._expect_ok(reply)
                hits = [(i, reply) for i, reply in zip(part, replies) if reply is not None]
                try:
                    if k + 1 < len(windows):
                        inflight = self._request_refs(keys, windows[k + 1])
                    targets = [_target(buffers, i, reply[1]) for i, reply in hits]
                    for target, (_, (off, n, *_)) in zip(targets, hits):
                        target[:n] = self._view[off:off + n]
                    for target, (i, (off, n, generation, _, ttl_ms, header)) in zip(targets, hits):
                        if not self._lease_held(header, generation, began + ttl_ms / 1000, epoch):
                            failed.append(i)                    # ask again
                        elif self._intact(header, off, target[:n]):
                            lengths[i] = n
                finally:
                    self._pending_release.extend(reply[3] for _, reply in hits)
        finally:
            if inflight is not None:
                self._abandon(inflight[1])
        return failed

    def _request_refs(self, keys, indices):
        """Send CXL MGETREF for keys[i], i in indices; (when it was sent, what _receive needs)."""
        began = time.monotonic()
        return began, self._send(("CXL", "MGETREF", *(keys[i] for i in indices)))

    def _abandon(self, sent):
        """Read the reply of a request an error left unanswered and end the leases it got,
        so the connection stays in step. Only called while an exception propagates, which
        a failure here (say, the connection is gone too) must not replace."""
        try:
            replies = self._receive(sent)[0]
        except Exception:           # noqa: BLE001 - the propagating error is the one to report
            return
        if isinstance(replies, list):
            self._pending_release.extend(reply[3] for reply in replies if reply is not None)

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
        slot = self._reserve(key, nbytes, ex, px)
        if slot is None:
            raise RuntimeError(f"no writable mapping: {self.why_not_writable}")
        return slot

    def _reserve(self, key, nbytes, ex, px):
        """A Slot, or None without a writable mapping (the server may refuse it only now)."""
        if self._writable() is None:
            return None
        began = time.monotonic()
        reply = self._call(_reserve_command(key, nbytes, ex, px))[0]
        return None if self._over_resp(reply) else self._slot(reply, began)

    def _slot(self, reply, began):
        lease, off, nbytes, ttl_ms = self._expect_ok(reply)
        return Slot(self, self._wview[off:off + nbytes], lease, began + ttl_ms / 1000)

    def set(self, key, value, *, ex=None, px=None):
        """SET through the mapping when writable (reserve, memcpy, commit), else RESP. The
        value is a buffer, or a tuple or list of buffers stored one after the other (say a
        header and a tensor: each copied once, straight into the mapping)."""
        parts = _parts(value)
        slot = self._reserve(key, _length(parts), ex, px)
        if slot is None:
            return self.redis.set(key, _joined(parts), ex=ex, px=px)
        with slot:
            _fill(slot, parts)
            slot.commit()
        return True

    def mset(self, items, *, ex=None, px=None):
        """Set several keys (values as set() takes them): all reservations in one round
        trip, all commits in another."""
        items = [(key, _parts(value)) for key, value in dict(items).items()]
        if self._writable() is None:
            return self._mset_over_resp(items, ex, px)
        began = time.monotonic()
        replies = self._call(*(_reserve_command(key, _length(parts), ex, px) for key, parts in items))
        if replies and self._refused(replies[0]):    # the command is refused, so all of them are
            return self._mset_over_resp(items, ex, px)
        failed = next((r for r in replies if isinstance(r, ResponseError)), None)
        slots = [self._slot(r, began) for r in replies if not isinstance(r, ResponseError)]
        if self._over_lease_cap(failed):
            # all the values over RESP: a batch is not split between the two ways
            if slots:
                self._call(*(("CXL", "ABORT", slot.lease) for slot in slots))
            return self._mset_over_resp(items, ex, px)
        try:
            if failed is not None:
                raise failed
            for slot, (_, parts) in zip(slots, items):
                _fill(slot, parts)
        except BaseException:
            if slots:
                self._call(*(("CXL", "ABORT", slot.lease) for slot in slots))
            raise
        for reply in self._call(*(("CXL", "COMMIT", slot.lease) for slot in slots)):
            self._expect_ok(reply)
        return True

    def _mset_over_resp(self, items, ex, px):
        pipe = self.redis.pipeline(transaction=False)
        for key, parts in items:
            pipe.set(key, _joined(parts), ex=ex, px=px)
        pipe.execute()
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


def _not_permitted(error):
    """A refusal's text, with how to fix it when it is the ACL's."""
    if not isinstance(error, NoPermissionError):
        return str(error)
    return (f"{error}: grant the user the mapping commands with ACL SETUSER <user> +@cxl "
            f"(after any -@dangerous, which takes them away)")


class _MappingRefused(Exception):
    """Raised out of a mapped read the server refused (see _over_resp): go over RESP."""


def _reserve_command(key, nbytes, ex, px):
    if ex is not None:
        return ("CXL", "RESERVE", key, nbytes, "EX", ex)
    if px is not None:
        return ("CXL", "RESERVE", key, nbytes, "PX", px)
    return ("CXL", "RESERVE", key, nbytes)


def _pack(command):
    """One command in RESP. hiredis packs in C, as redis-py does with hiredis installed,
    but without redis-py's pack_commands around it, which costs ~2 µs more per call (a
    seventh of the client's CPU time on a small mapped read). Arguments as redis-py
    takes them: bytes, str, int, float, bytearray or memoryview."""
    try:
        return pack_command(command)
    except TypeError:
        command = tuple(bytes(arg) if isinstance(arg, (bytearray, memoryview)) else arg for arg in command)
        try:
            return pack_command(command)
        except TypeError as e:
            raise DataError(e) from None


def _target(buffers, i, nbytes):
    """buffers[i] as a byte memoryview, checked to hold nbytes."""
    target = memoryview(buffers[i]).cast("B")
    if nbytes > len(target):
        raise ValueError(f"value of {nbytes} bytes does not fit buffer {i} of {len(target)} bytes")
    return target


def _copy_into(source, target):
    """Copy a value (a byte memoryview) to the start of target; its length."""
    n = len(source)
    if n > len(target):
        raise ValueError(f"value of {n} bytes does not fit a {len(target)}-byte buffer")
    target[:n] = source
    return n


def _parts(value):
    """A value as byte memoryviews: one buffer, or a tuple or list of them."""
    if isinstance(value, (tuple, list)):
        return [memoryview(part).cast("B") for part in value]
    return [memoryview(value).cast("B")]


def _length(parts):
    return sum(len(part) for part in parts)


def _joined(parts):
    """One buffer for RESP (a copy only when there are several parts)."""
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _fill(slot, parts):
    if slot.time_left() <= 0:
        raise TimeoutError(f"lease {slot.lease} ran out before the value was written")
    at = 0
    for part in parts:
        slot.view[at:at + len(part)] = part
        at += len(part)


def _text(value):
    return value.decode() if isinstance(value, bytes) else value
