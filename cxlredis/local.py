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

In a Redis Cluster, ClusterLocalClient keeps one LocalClient per shard (each maps
its own shard's arena, or goes over RESP) and routes each key by its slot: see its
docstring. A LocalClient made with cluster=True sends a multi-key command once per
slot (in one write), as a cluster node refuses keys of several slots (CROSSSLOT).

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
from contextlib import contextmanager

import redis
from hiredis import pack_command
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.exceptions import (AskError, ClusterDownError, DataError, MovedError,
                              NoPermissionError, ResponseError, TryAgainError)

from ._store import acquire_fence, value_checksum
from .cluster.slots import CLUSTER_SLOTS, key_slot
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
# A cluster node answers TRYAGAIN while a slot's keys are split between two nodes
# mid-migration: ClusterLocalClient asks again this many times, this long apart (seconds).
TRYAGAIN_ATTEMPTS = 5
TRYAGAIN_DELAY = 0.05


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
    """A redis-py client (`self.redis`, one dedicated connection) plus the mapped path.
    cluster=True: the server is a cluster node, so a multi-key command is sent once per
    slot of its keys. Other keyword arguments go to redis.Redis (say retry=...)."""

    def __init__(self, host="localhost", port=6379, *, unix_socket_path=None, username=None,
                 password=None, db=0, backing_path=None, map_backing=True, socket_timeout=None,
                 spin_us=SPIN_US, known_locations=KNOWN_LOCATIONS, cluster=False, **redis_options):
        self.redis = redis.Redis(host=host, port=port, unix_socket_path=unix_socket_path,
                                 username=username, password=password, db=db,
                                 socket_timeout=socket_timeout, single_connection_client=True,
                                 **redis_options)
        self._conn = self.redis.connection
        self.cluster = cluster
        self._asking = False            # inside asking(): ASKING goes before every command
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
        self._pending_release.clear()   # a lease is honoured only for the connection it was given to

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
        """The sending half of _call; what _receive needs to read the replies (how many,
        and which of them are the commands')."""
        first, step = 0, 1
        if self._asking:
            commands = tuple(sent for command in commands for sent in (_ASKING, command))
            first, step = 1, 2
        if self._pending_release:
            # before any ASKING, which covers only the command right after it
            commands = (("CXL", "RELEASE", *self._pending_release),) + commands
            self._pending_release = []
            first += 1
        self._conn.send_packed_command([b"".join([_pack(command) for command in commands])])
        return len(commands), first, step

    def _receive(self, sent):
        count, first, step = sent
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
        return replies[first::step]

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

    @contextmanager
    def asking(self):
        """A block whose every command is sent right after an ASKING, as a cluster node
        that is importing a slot serves it only then (its answer to -ASK)."""
        self._asking = True
        try:
            yield self
        finally:
            self._asking = False

    def command(self, *args):
        """One command on this client's connection, in step with the mapped path; its
        reply as the server sent it (an error reply raised)."""
        return self._expect_ok(self._call(args)[0])

    def _by_slot(self, keys, indices):
        """The indices of keys grouped as one command may name them: all together, or
        (cluster) one group per slot, in the order the slots first appear."""
        if not self.cluster:
            return [list(indices)]
        groups = {}
        for i in indices:
            groups.setdefault(slot_of(keys[i]), []).append(i)
        return list(groups.values())

    def _each_slot(self, name, keys):
        """The replies of command `name` sent once per group of keys (_by_slot), in one
        write; the first error reply raised, once every reply is read."""
        keys = list(keys)
        groups = self._by_slot(keys, range(len(keys)))
        replies = self._call(*((name, *(keys[i] for i in group)) for group in groups))
        return groups, [self._expect_ok(reply) for reply in replies]

    def exists(self, *keys):
        """How many of keys exist (a key named twice counts twice), as EXISTS."""
        return sum(self._each_slot("EXISTS", keys)[1])

    def delete(self, *keys):
        """Delete keys; how many existed, as DEL."""
        return sum(self._each_slot("DEL", keys)[1])

    def prefix(self, keys):
        """How many of keys, in order, exist before the first one that does not (a
        prompt's longest cached prefix, when the keys are its chunks): one CXL PREFIX,
        or as a cluster node one per run of consecutive keys in a slot, in one write."""
        keys = list(keys)
        runs = _slot_runs(keys) if self.cluster else [keys] if keys else []
        return _leading_count(runs, self.prefix_counts(runs))

    def prefix_counts(self, runs):
        """CXL PREFIX's answer for each run of keys (each run in one slot), in one write."""
        if not runs:
            return []
        replies = self._call(*(("CXL", "PREFIX", *run) for run in runs))
        return [self._expect_ok(reply) for reply in replies]

    def ping(self):
        return self.command("PING") == b"PONG"

    def scan_iter(self, match=None, count=None):
        """Every key (matching the glob `match`), as redis-py's scan_iter."""
        return self.redis.scan_iter(match=match, count=count)

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
        value = self._get_over_resp(key)
        return None if value is None else Ref(memoryview(value))

    def _get_over_resp(self, key):
        return self.command("GET", key)

    def mget(self, keys):
        """Refs (or None) for several keys, in one round trip."""
        keys = list(keys)
        if not keys:
            return []
        if self._map is not None:
            epoch = self._epoch
            began, order, sent = self._request_refs(keys, range(len(keys)))
            try:
                replies = self._refs(self._receive(sent))
            except _MappingRefused:
                pass
            else:
                refs = [None] * len(keys)
                for i, reply in zip(order, replies):
                    refs[i] = self._ref(reply, began, epoch)
                return refs
        return [None if v is None else Ref(memoryview(v)) for v in self._mget_over_resp(keys)]

    def prefix_get(self, keys):
        """Refs for the leading keys that hold strings, up to the first that does not: one
        CXL PREFIXREF (PREFIXGET over RESP); as a cluster node, mget's when the keys'
        slots differ. Nothing past the first miss stays leased."""
        keys = list(keys)
        if not keys:
            return []
        if self.cluster and len({slot_of(key) for key in keys}) > 1:
            return _leading_refs(self.mget(keys))
        if self._map is not None:
            began, epoch = time.monotonic(), self._epoch
            reply = self._call(("CXL", "PREFIXREF", *keys))[0]
            if not self._over_resp(reply):
                return [self._ref(ref, began, epoch) for ref in self._expect_ok(reply)]
        return [Ref(memoryview(value)) for value in self.command("CXL", "PREFIXGET", *keys)]

    def _mget_over_resp(self, keys):
        """MGET's values of keys (a list), by slot as a cluster node."""
        groups, replies = self._each_slot("MGET", keys)
        values = [None] * len(keys)
        for group, reply in zip(groups, replies):
            for i, value in zip(group, reply):
                values[i] = value
        return values

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
        value = self._get_over_resp(key)
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
        values = self._mget_over_resp(keys)
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
            for k in range(len(windows)):
                began, order, sent = inflight
                inflight = None
                replies = self._refs(self._receive(sent))
                hits = [(i, reply) for i, reply in zip(order, replies) if reply is not None]
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
                self._abandon(inflight[2])
        return failed

    def _request_refs(self, keys, indices):
        """Send CXL MGETREF for keys[i], i in indices (one per slot as a cluster node);
        (when it was sent, the indices in the order of the references, what _receive needs)."""
        groups = self._by_slot(keys, indices)
        began = time.monotonic()
        sent = self._send(*(("CXL", "MGETREF", *(keys[i] for i in group)) for group in groups))
        return began, [i for group in groups for i in group], sent

    def _refs(self, replies):
        """The references of MGETREF replies, as one list. If one is an error, the leases
        the others granted are ended and it is raised (_MappingRefused for a refusal of
        the mapping: see _over_resp)."""
        failed = next((reply for reply in replies if isinstance(reply, ResponseError)), None)
        if failed is None:
            return replies[0] if len(replies) == 1 else [ref for reply in replies for ref in reply]
        self._end_leases(replies)
        if self._over_resp(failed):
            raise _MappingRefused
        raise failed

    def _end_leases(self, replies):
        """Release (with the next command) the leases of the MGETREF replies that granted any."""
        for reply in replies:
            if isinstance(reply, list):
                self._pending_release.extend(ref[3] for ref in reply if ref is not None)

    def _abandon(self, sent):
        """Read the replies of a request an error left unanswered and end the leases they
        got, so the connection stays in step. Only called while an exception propagates,
        which a failure here (say, the connection is gone too) must not replace."""
        try:
            replies = self._receive(sent)
        except Exception:           # noqa: BLE001 - the propagating error is the one to report
            return
        self._end_leases(replies)

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
            return self.command(*_set_command(key, _joined(parts), ex, px)) == b"OK"
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
        for reply in self._call(*(_set_command(key, _joined(parts), ex, px) for key, parts in items)):
            self._expect_ok(reply)
        return True

    # ---- lifecycle ----------------------------------------------------------------
    def close(self):
        try:
            if self._conn._sock is not None:        # not reconnected only to be closed
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


class ClusterLocalClient:
    """LocalClient's API over a Redis Cluster of cxlredis nodes.

        kv = ClusterLocalClient(["10.0.0.5:7000", "10.0.0.6:7000"], username="lm", password="pw")
        kv = ClusterLocalClient(["/run/cxlredis/shard0.sock", "/run/cxlredis/shard1.sock"])

    `startup_nodes` are "host:port" strings, (host, port) pairs or unix socket paths of
    shards on this host (any of them, or "unix:///path"). The slot map comes from
    CLUSTER SLOTS; a node also given as a socket is reached through it (its id and
    address are learnt from the socket with CLUSTER NODES). There is one LocalClient
    (cluster=True) per shard: each maps its own shard's arena when this process
    shares it (over the unix socket, or TCP on loopback as a user with a password),
    and speaks RESP otherwise; `shards` lists them, `mapped` says whether all map.
    The lease checks of each LocalClient are the rule for every read.

    A key goes to the shard that serves its slot. A multi-key call is split by shard,
    each shard's share in one LocalClient call (one command per slot inside it). The
    answers of a node that does not serve the key:
    - -MOVED: the slot map is read again and the call retried, once;
    - -ASK (the slot is being migrated and the key is not, or no longer, on its old
      node): the call is sent to the node named, right after an ASKING, with no map
      refresh;
    - -TRYAGAIN (keys of a slot split between the two nodes mid-migration): retried
      after TRYAGAIN_DELAY, a few times; a share of a multi-key call goes key by key;
    - a lost connection (the shard restarted, or moved to another address): that
      shard's LocalClient is dropped, the map read again, and the call retried once
      with a new LocalClient (which maps the arena anew and checks it is the server's).
    A share of a multi-key call that is redirected a second time goes key by key, each
    key following its own redirects. Writes are retried whole: SET is idempotent. A
    reservation (reserve) committed after its slot moved is refused with MOVED or ASK,
    and nothing is stored: the caller reserves again, on the right node.

    Not thread-safe, as LocalClient: one ClusterLocalClient per thread."""

    def __init__(self, startup_nodes, *, username=None, password=None, map_backing=True,
                 socket_timeout=None, spin_us=SPIN_US, known_locations=KNOWN_LOCATIONS):
        self._startup = [_endpoint(node) for node in startup_nodes]
        if not self._startup:
            raise ValueError("ClusterLocalClient needs at least one startup node")
        # a lost shard is the map's business (refresh), not redis-py's retries, which wait
        # seconds on a node that is down
        self._connection = dict(username=username, password=password,
                                socket_timeout=socket_timeout, retry=Retry(NoBackoff(), 0))
        self._options = dict(self._connection, map_backing=map_backing, spin_us=spin_us,
                             known_locations=known_locations, cluster=True)
        self._clients = {}              # endpoint ("host:port" or a socket path) -> LocalClient
        self._owner = [None] * CLUSTER_SLOTS    # endpoint serving each slot
        self._sockets = {}              # node id and "ip:port" -> socket path, for nodes given so
        self.refresh()

    # ---- the slot map ---------------------------------------------------------
    def refresh(self):
        """Read the slot map from the first node that answers: a shard already connected,
        else a startup node. A shard that serves no slot any more is disconnected."""
        self._learn_sockets()
        failures = []
        for endpoint in dict.fromkeys([*self._clients, *self._startup]):
            try:
                slots = self._client(endpoint).command("CLUSTER", "SLOTS")
            except redis.ConnectionError as e:
                self._drop(endpoint)
                failures.append(f"{endpoint}: {e}")
                continue
            except ResponseError as e:      # not a cluster node, or not allowed to ask
                failures.append(f"{endpoint}: {e}")
                continue
            self._apply(slots, endpoint)
            return
        raise redis.ConnectionError("no node gave the slot map: " + "; ".join(failures))

    def _learn_sockets(self):
        """Which node each startup socket reaches: its id and address (CLUSTER NODES'
        myself line), so the slot map can name the socket instead."""
        sockets = {}
        for path in self._startup:
            if not path.startswith("/"):
                continue
            conn = redis.Redis(unix_socket_path=path, **self._connection)
            try:
                nodes = _text(conn.execute_command("CLUSTER", "NODES"))
            except (redis.ConnectionError, ResponseError):
                continue            # down, or not a cluster node: known by address only
            finally:
                conn.close()
            for line in nodes.splitlines():
                words = line.split()
                if len(words) > 2 and "myself" in words[2].split(","):
                    host, _, port = words[1].split("@")[0].rpartition(":")
                    sockets[words[0]] = sockets[_address(host.strip("[]"), port)] = path
        self._sockets = sockets

    def _apply(self, slots, asked):
        owner = [None] * CLUSTER_SLOTS
        for start, end, master, *_ in slots:
            host, port, node_id = _text(master[0]) if master[0] else "", master[1], _text(master[2])
            if host in ("", "?"):               # no preferred endpoint: the node asked
                host = asked.rpartition(":")[0] if not asked.startswith("/") else "127.0.0.1"
            address = _address(host, port)
            endpoint = self._sockets.get(node_id) or self._sockets.get(address, address)
            owner[start:end + 1] = [endpoint] * (end - start + 1)
        self._owner = owner
        for endpoint in set(self._clients) - set(owner):
            self._drop(endpoint)

    def _redirected(self, error):
        """The endpoint a MOVED or ASK names."""
        address = _address(error.host, error.port)
        return self._sockets.get(address, address)

    def _client(self, endpoint):
        client = self._clients.get(endpoint)
        if client is None:
            if endpoint.startswith("/"):
                client = LocalClient(unix_socket_path=endpoint, **self._options)
            else:
                host, _, port = endpoint.rpartition(":")
                client = LocalClient(host=host.strip("[]"), port=int(port), **self._options)
            self._clients[endpoint] = client
        return client

    def _drop(self, endpoint):
        client = self._clients.pop(endpoint, None)
        if client is not None:
            client.close()

    def _serving(self, slot):
        endpoint = self._owner[slot]
        if endpoint is None:
            raise ClusterDownError("CLUSTERDOWN Hash slot not served")
        return endpoint

    @property
    def shards(self):
        """{endpoint: LocalClient} of every node that serves slots, connected."""
        return {endpoint: self._client(endpoint) for endpoint in dict.fromkeys(self._owner)
                if endpoint is not None}

    @property
    def mapped(self):
        """Whether every shard's arena is mapped."""
        return all(client.mapped for client in self.shards.values())

    @property
    def why_not_mapped(self):
        """{endpoint: why not} of the shards that are not mapped."""
        return {endpoint: client.why_not_mapped for endpoint, client in self.shards.items()
                if not client.mapped}

    def client_for(self, key):
        """The LocalClient of the shard that serves key, as the map says now."""
        return self._client(self._serving(slot_of(key)))

    # ---- routing --------------------------------------------------------------
    def _run(self, key, op):
        """op(client) on the shard that serves key, following redirects (class docstring)."""
        slot = slot_of(key)
        endpoint, asking = self._serving(slot), False
        moved = reconnected = False
        tries = 0
        while True:
            try:
                client = self._client(endpoint)
                if not asking:
                    return op(client)
                with client.asking():
                    return op(client)
            except MovedError as e:
                if moved:
                    raise
                moved = True
                self.refresh()
                self._owner[e.slot_id] = self._redirected(e)    # the refusing node knows best
                endpoint, asking = self._serving(slot), False
            except AskError as e:
                if asking:
                    raise
                endpoint, asking = self._redirected(e), True
            except TryAgainError:
                tries += 1
                if tries >= TRYAGAIN_ATTEMPTS:
                    raise
                time.sleep(TRYAGAIN_DELAY)
            except redis.ConnectionError:
                if reconnected:
                    raise
                reconnected = True
                self._drop(endpoint)
                self.refresh()
                endpoint, asking = self._serving(slot), False

    def _each_shard(self, keys, indices, run, one):
        """run(client, part) for each shard's share of keys[i], i in indices (part: a list
        of indices). A share answered MOVED, or whose connection was lost, is split again
        after one refresh of the map; a share answered ASK or TRYAGAIN, or failing again
        after the refresh, goes key by key through one(i), which follows its own redirects."""
        pending, refreshed = list(indices), False
        while pending:
            retry, moved = [], []
            for endpoint, part in self._split(keys, pending):
                try:
                    run(self._client(endpoint), part)
                    continue
                except (MovedError, redis.ConnectionError) as e:     # (MovedError is an AskError)
                    if isinstance(e, MovedError):
                        moved.append(e)
                    else:
                        self._drop(endpoint)
                    if not refreshed:
                        retry += part
                        continue
                except (AskError, TryAgainError):
                    pass
                for i in part:
                    one(i)
            if retry:
                self.refresh()
                for e in moved:
                    self._owner[e.slot_id] = self._redirected(e)
                refreshed = True
            pending = retry

    def _split(self, keys, indices):
        shares = {}
        for i in indices:
            shares.setdefault(self._serving(slot_of(keys[i])), []).append(i)
        return shares.items()

    # ---- LocalClient's API ------------------------------------------------------
    def get(self, key):
        return self._run(key, lambda client: client.get(key))

    def get_bytes(self, key):
        return self._run(key, lambda client: client.get_bytes(key))

    def get_into(self, key, out):
        return self._run(key, lambda client: client.get_into(key, out))

    def mget(self, keys):
        """Refs (or None), one LocalClient.mget per shard."""
        keys = list(keys)
        refs = [None] * len(keys)

        def run(client, part):
            for i, ref in zip(part, client.mget([keys[i] for i in part])):
                refs[i] = ref

        def one(i):
            refs[i] = self.get(keys[i])
        self._each_shard(keys, range(len(keys)), run, one)
        return refs

    def mget_into(self, keys, buffers, *, window=MGET_WINDOW):
        """As LocalClient.mget_into, one call per shard (by windows of `window` keys
        there, one MGETREF per slot in a window)."""
        keys = list(keys)
        if len(buffers) != len(keys):
            raise ValueError(f"{len(keys)} keys but {len(buffers)} buffers")
        lengths = [None] * len(keys)

        def run(client, part):
            got = client.mget_into([keys[i] for i in part], _Picked(buffers, part), window=window)
            for i, n in zip(part, got):
                lengths[i] = n

        def one(i):
            lengths[i] = self.get_into(keys[i], buffers[i])
        self._each_shard(keys, range(len(keys)), run, one)
        return lengths

    def set(self, key, value, *, ex=None, px=None):
        return self._run(key, lambda client: client.set(key, value, ex=ex, px=px))

    def mset(self, items, *, ex=None, px=None):
        """As LocalClient.mset, one call per shard (a shard's share is stored or not, as
        there; the shares are not one atomic write)."""
        items = dict(items)
        keys, values = list(items), list(items.values())

        def run(client, part):
            client.mset({keys[i]: values[i] for i in part}, ex=ex, px=px)

        def one(i):
            self.set(keys[i], values[i], ex=ex, px=px)
        self._each_shard(keys, range(len(keys)), run, one)
        return True

    def reserve(self, key, nbytes, *, ex=None, px=None):
        return self._run(key, lambda client: client.reserve(key, nbytes, ex=ex, px=px))

    def exists(self, *keys):
        """How many of keys exist: one EXISTS per slot."""
        return sum(self._run(group[0], lambda client, group=group: client.exists(*group))
                   for group in _slot_groups(keys))

    def prefix(self, keys):
        """As LocalClient.prefix: CXL PREFIX for each run of consecutive keys in a slot,
        the runs of each shard in one write."""
        runs = _slot_runs(list(keys))
        firsts = [run[0] for run in runs]
        counts = [0] * len(runs)

        def run(client, part):
            for i, n in zip(part, client.prefix_counts([runs[i] for i in part])):
                counts[i] = n

        def one(i):
            counts[i] = self._run(firsts[i], lambda client: client.prefix_counts([runs[i]])[0])
        self._each_shard(firsts, range(len(runs)), run, one)
        return _leading_count(runs, counts)

    def prefix_get(self, keys):
        """As LocalClient.prefix_get: one CXL PREFIXREF when the keys share a slot, else
        from one mget over the shards."""
        keys = list(keys)
        if len({slot_of(key) for key in keys}) == 1:
            return self._run(keys[0], lambda client: client.prefix_get(keys))
        return _leading_refs(self.mget(keys))

    def delete(self, *keys):
        """Delete keys, one DEL per slot; how many existed."""
        return sum(self._run(group[0], lambda client, group=group: client.delete(*group))
                   for group in _slot_groups(keys))

    def ping(self):
        return all(client.ping() for client in self.shards.values())

    def scan_iter(self, match=None, count=None):
        """Every key of every shard (matching the glob `match`)."""
        for client in self.shards.values():
            yield from client.scan_iter(match=match, count=count)

    def flush_releases(self):
        for client in self._clients.values():
            client.flush_releases()

    def close(self):
        for endpoint in list(self._clients):
            self._drop(endpoint)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Picked:
    """buffers[indices[j]] as item j, looked up only when asked (mget_into's promise)."""

    __slots__ = ("_buffers", "_indices")

    def __init__(self, buffers, indices):
        self._buffers, self._indices = buffers, indices

    def __len__(self):
        return len(self._indices)

    def __getitem__(self, j):
        return self._buffers[self._indices[j]]


def _endpoint(node):
    """A startup node as an endpoint: "host:port", or the absolute path of a unix socket."""
    if isinstance(node, tuple):
        return _address(*node)
    node = str(node).removeprefix("unix://")
    if "/" in node:
        return os.path.abspath(node)
    host, sep, port = node.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"a cluster node is host:port or a unix socket path, not {node!r}")
    return _address(host.strip("[]"), port)


def _address(host, port):
    return f"[{host}]:{int(port)}" if ":" in host else f"{host}:{int(port)}"


def _slot_groups(keys):
    groups = {}
    for key in keys:
        groups.setdefault(slot_of(key), []).append(key)
    return groups.values()


def _slot_runs(keys):
    """keys cut into runs of consecutive keys in one slot, in order."""
    runs, last = [], None
    for key in keys:
        slot = slot_of(key)
        if slot != last:
            runs.append([])
            last = slot
        runs[-1].append(key)
    return runs


def _leading_count(runs, counts):
    """How many keys lead before the first miss, given how many lead in each run."""
    total = 0
    for run, count in zip(runs, counts):
        total += count
        if count < len(run):
            break
    return total


def _leading_refs(refs):
    """The Refs before the first None; the ones after it released."""
    leading = []
    for ref in refs:
        if ref is None:
            break
        leading.append(ref)
    for ref in refs[len(leading):]:
        if ref is not None:
            ref.release()
    return leading


def _not_permitted(error):
    """A refusal's text, with how to fix it when it is the ACL's."""
    if not isinstance(error, NoPermissionError):
        return str(error)
    return (f"{error}: grant the user the mapping commands with ACL SETUSER <user> +@cxl "
            f"(after any -@dangerous, which takes them away)")


class _MappingRefused(Exception):
    """Raised out of a mapped read the server refused (see _over_resp): go over RESP."""


def _expiry(ex, px):
    if ex is not None:
        return ("EX", ex)
    if px is not None:
        return ("PX", px)
    return ()


def _reserve_command(key, nbytes, ex, px):
    return ("CXL", "RESERVE", key, nbytes, *_expiry(ex, px))


def _set_command(key, value, ex, px):
    return ("SET", key, value, *_expiry(ex, px))


_ASKING = ("ASKING",)


def slot_of(key):
    """The cluster slot of a key as redis-py sends it (str as UTF-8, numbers as their repr)."""
    if isinstance(key, str):
        key = key.encode()
    elif isinstance(key, (int, float)):
        key = repr(key).encode()
    return key_slot(key)


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
