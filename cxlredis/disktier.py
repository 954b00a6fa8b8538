"""The disk tier under the arena: what the arena evicts is kept on disk and brought back
on its next use.

The arena's C copies an entry it evicts, before the entry's block is freed, into a record
that a writer thread appends to the open segment file (ext/arena/spill.h). This module
indexes those records, brings them back, and keeps the tier within its budget.

A key lives in one tier at a time. A command whose keys (the command table's) include
some with a copy on disk is held while the copies are read, off the event loop, into
arena blocks reserved for them; they are committed, pinned until the command has run,
and their records dropped. The command is then dispatched again, with every check, so it
sees the keys as if they had never left (dispatch.py). A copy is never newer than the
arena: a commit of its key notes the key's hash in C, and that copy is dropped before
the tier serves anything; a write command drops the copies of its keys that could not
come back (no room), so a deleted or rewritten value never returns. FLUSHDB,
FLUSHALL, a dropped tenant and a slot the node lost drop theirs.

Records: header (magic, seq, tenant incarnation, value length, expiry, value checksum,
key length, tenant, db, type, dead byte, header checksum), key, value; the value is
checked when it is read back, so a torn or damaged record is never served. A dropped
record gets its dead byte set. After a restart on a warm arena the index is rebuilt
from the segments: the walk of a segment stops at the first record that fails its
header check (a write cut short, or one still queued at a kill -9), a key the arena
holds keeps none of its copies, and of two copies of a key the one with the higher seq
wins. On a new arena, or another arena's directory, the tier starts empty: what dropped
its copies may be lost with the old arena.

The budget counts the segments' bytes; values of up to a quarter of it are written (one
larger than a segment has a segment of its own). Records leave oldest first, a segment
at a time: they were written in the order the arena's LRU evicted them, and any use
brings a record back, so that is the tier's own LRU. A segment whose records have all
gone back is deleted at once.
"""
import asyncio
import errno
import fcntl
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from heapq import heapify, heappop, heappush

from ._cluster import key_slot
from .files import write_atomically
from ._store import (SPILL_DEAD_AT, SPILL_HEAD_BYTES, TYPE_LIST, TYPE_SET, TYPE_ZSET, OutOfMemory, TenantError,
                     now_ms, spill_geometry,
                     spill_drain, spill_head, spill_kill, spill_mark, spill_clear_marks, spill_next, spill_pending,
                     spill_queued_bytes, spill_segment, spill_start, spill_status, spill_stop, spill_take, spill_wait,
                     spill_written_seq, value_checksum)

log = logging.getLogger("cxlredis")

SEGMENT_NAME = "segment-{:08d}.cxd"
LOCK_NAME = "lock"                  # flock'ed by the server using the directory
OWNER_NAME = "arena"                # the identity of the arena the records are of
READ_THREADS = 4
EXPIRY_CHECKS = 1024         # expired records the cron drops per tick at most
DEAD = b"\x01"
COLLECTIONS = (TYPE_LIST, TYPE_SET, TYPE_ZSET)   # written flattened: read into a buffer, not a block


def segment_bytes(budget):
    """A segment's size for a budget: an eighth of it, within 1 MiB..256 MiB."""
    return min(max(budget // 8, 1 << 20), 256 << 20) & ~4095


class Record:
    __slots__ = ("segment", "pos", "seq", "incarnation", "value_len", "expire_at", "value_sum", "tenant",
                 "db", "type", "hash", "key")

    def __init__(self, segment, pos, seq, incarnation, value_len, expire_at, value_sum, tenant, db, type_,
                 hash_, key):
        self.segment, self.pos, self.seq, self.incarnation = segment, pos, seq, incarnation
        self.value_len, self.expire_at, self.value_sum = value_len, expire_at, value_sum
        self.tenant, self.db, self.type, self.hash, self.key = tenant, db, type_, hash_, key

    @property
    def identity(self):
        return self.tenant, self.db, self.key

    def expired(self, now):
        return self.expire_at != -1 and self.expire_at <= now


class Segment:
    __slots__ = ("number", "path", "fd", "end", "records", "last_seq", "reads", "doomed")

    def __init__(self, number, path, fd, end=0):
        self.number, self.path, self.fd, self.end = number, path, fd, end
        self.records = set()  # its live records
        self.last_seq = 0     # the newest record written to it (its write may be queued)
        self.reads = 0        # reads in flight: its fd closes after the last
        self.doomed = False   # out of the index: deleted once no read is in flight


class DiskTier:
    """The disk tier of the server's arena (one per process: the arena's C keeps one
    spill state). Runs on the event loop, but for its reads."""

    def __init__(self, arena, directory, budget, promote=True, write_buffer=256 << 20):
        self.arena = arena
        self.directory = directory
        self.budget = budget
        self.write_buffer = write_buffer  # disk-tier-write-buffer: bytes of records queued at most
        self.promote = promote           # disk-tier-promote: a key brought back stays in the arena
        self.own_commits = {}            # key hash -> commits of copies kept on disk (promote no)
        self.put_back = 0                # values taken back out of the arena after use (promote no)
        self.segment_size = segment_bytes(budget)
        self.records = {}                # (tenant slot, physical db, key) -> Record, oldest first
        self.by_hash = {}                # key hash -> [Record]
        self.expiring = []               # heap of (expire_at, seq, Record), gone ones included
        self.segments = {}               # number -> Segment, oldest first
        self.current = None              # the segment the C part writes
        self.spare = None                # the one it goes on in when that is full
        self.reader = None
        self.lock = -1                   # the directory's lock file, flock'ed while open
        self.stored_bytes = 0            # value bytes of the live records
        self.hits = self.hit_bytes = self.bad_records = self.dropped_for_budget = 0
        self.errors_told = 0             # write errors already logged
        self.read_usec = self.reads = 0
        self.tenant_hits = {}

    # --- life ------------------------------------------------------------
    def open(self, warm):
        """Start on the segments in the directory (warm: the arena was attached as it was,
        so its records are indexed again) or on none (they are removed), the directory
        locked for this process. Raises OSError."""
        os.makedirs(self.directory, exist_ok=True)
        self.lock = os.open(os.path.join(self.directory, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.lock)
            raise OSError(errno.EBUSY, "in use by another process") from None
        # whose records these are: another arena's, or this one's formatted anew, are not ours
        owner_path = os.path.join(self.directory, OWNER_NAME)
        try:
            with open(owner_path) as owner:
                warm = warm and owner.read() == self.arena.identity
        except FileNotFoundError:
            warm = False
        numbers = sorted(int(name[8:16]) for name in os.listdir(self.directory)
                         if name.startswith("segment-") and name.endswith(".cxd") and name[8:16].isdigit())
        seq = 0
        if warm:
            for number in numbers:
                seq = max(seq, self._index_segment(number))
        else:
            for number in numbers:
                os.unlink(self._path(number))
            write_atomically(owner_path, self.arena.identity.encode())     # (once they are gone)
        spill_start(self.arena, self.segment_size, seq, self.budget // 4, self.write_buffer)
        spill_clear_marks()
        for record in self.records.values():
            spill_mark(record.hash)
        last = max(self.segments) if self.segments else 0
        if last and self.segments[last].end < self.segment_size - (1 << 20):
            self.current = self.segments[last]
        else:
            self.current = self._new_segment(last + 1)
        for segment in list(self.segments.values()):
            if not segment.records and segment is not self.current:
                self._delete_segment(segment)       # every record in it had been dropped
        spill_segment(self.current.fd, self.current.number, self.current.end)
        self._provide_spare()
        self.reader = ThreadPoolExecutor(READ_THREADS, thread_name_prefix="cxlredis-disk")
        self.arena.tier = self
        self._enforce_budget()
        log.notice("Disk tier %s: %d keys, %.1f MiB of a %.1f MiB budget", self.directory, len(self.records),
                   self.stored_bytes / (1 << 20), self.budget / (1 << 20))

    def close(self):
        """Stop spilling, wait for the reads in flight (they write into the arena), and
        close the segments."""
        if self.current is None:
            return                      # never opened
        self.settle()
        spill_stop()
        self.current = None
        self.arena.tier = None
        if self.reader is not None:
            self.reader.shutdown(wait=True)
        for segment in list(self.segments.values()) + ([self.spare] if self.spare else []):
            os.close(segment.fd)
        self.segments.clear()
        os.close(self.lock)

    def _path(self, number):
        return os.path.join(self.directory, SEGMENT_NAME.format(number))

    def _new_segment(self, number):
        path = self._path(number)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        segment = Segment(number, path, fd)
        self.segments[number] = segment
        return segment

    def _provide_spare(self):
        if self.spare is None:
            number = self.current.number + 1
            fd = os.open(self._path(number), os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            self.spare = Segment(number, self._path(number), fd)
        spill_next(self.spare.fd)

    def _index_segment(self, number):
        """Index a segment's records after a restart; the highest seq seen."""
        path = self._path(number)
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        segment = Segment(number, path, fd)
        self.segments[number] = segment
        size = os.fstat(fd).st_size
        pos = top = 0
        now = now_ms()
        while pos + SPILL_HEAD_BYTES <= size:
            raw = os.pread(fd, SPILL_HEAD_BYTES, pos)
            head = spill_head(raw)
            if head is None:
                break
            seq, incarnation, value_len, expire_at, value_sum, tenant, db, type_, dead, key_len = head
            key = os.pread(fd, key_len, pos + SPILL_HEAD_BYTES)
            value_pos, end = spill_geometry(pos, key_len, value_len)
            if len(key) != key_len or value_pos + value_len > size or spill_head(raw + key) is None:
                break                   # a write cut short: nothing after it was written
            top = max(top, seq)
            if not dead:
                hash_, held = self.arena.physical_identity(tenant, db, key)
                record = Record(number, pos, seq, incarnation, value_len, expire_at, value_sum, tenant, db,
                                type_, hash_, key)
                older = self.records.get(record.identity)
                if (held or expire_at != -1 and expire_at <= now or tenant >= 64
                        or incarnation != self.arena.tenant_incarnation(tenant)
                        or older is not None and older.seq > seq):
                    os.pwrite(fd, DEAD, pos + SPILL_DEAD_AT)
                else:
                    if older is not None:
                        self.drop(older)
                    self._index(record, segment)
            pos = end
        segment.end = pos
        if pos < size:
            os.ftruncate(fd, pos)
        return top

    # --- the index -------------------------------------------------------
    def _index(self, record, segment):
        self.records[record.identity] = record
        self.by_hash.setdefault(record.hash, []).append(record)
        segment.records.add(record)
        segment.last_seq = max(segment.last_seq, record.seq)
        self.stored_bytes += record.value_len
        if record.expire_at != -1:
            heappush(self.expiring, (record.expire_at, record.seq, record))

    def _mark_dead(self, segment, record):
        """Set record's dead byte: in its bytes still queued for the writer, or in the file
        (after its write, if that is under way)."""
        try:
            spill_kill(record.seq, segment.fd, record.pos)
        except OSError as e:
            log.warning("Disk tier: cannot mark a record of %s dropped: %s", segment.path, e)

    def _unindex(self, record):
        del self.records[record.identity]
        same = self.by_hash[record.hash]
        same.remove(record)
        if not same:
            del self.by_hash[record.hash]
        self.stored_bytes -= record.value_len

    def drop(self, record):
        """Take record out of the index and mark it dropped in its segment."""
        if self.records.get(record.identity) is not record:
            return
        self._unindex(record)
        segment = self.segments[record.segment]
        segment.records.discard(record)
        self._mark_dead(segment, record)
        # (while open() indexes, current is None: a segment being walked stays)
        if not segment.records and self.current is not None and segment is not self.current:
            self._delete_segment(segment)

    def _delete_segment(self, segment):
        for record in segment.records:
            self._unindex(record)
        segment.records = set()
        del self.segments[segment.number]
        if segment.last_seq > spill_written_seq():
            spill_drain()       # its fd is about to close: no write to it may be left queued
        segment.doomed = True
        try:
            os.unlink(segment.path)
        except FileNotFoundError:
            pass
        if not segment.reads:
            os.close(segment.fd)

    def settle(self):
        """Index what the C part wrote and drop what commits made stale, in the order they
        happened; then keep to the budget."""
        if not spill_pending():
            return
        noted, lost = spill_take()
        for segment_no, pos, seq, incarnation, value_len, expire_at, value_sum, tenant, db, type_, hash_, key \
                in noted:
            if key is None:             # a commit of a key that may have a copy: hash_ is its hash
                if hash_ in self.own_commits:        # a copy brought back and kept on disk
                    self.own_commits[hash_] -= 1
                    if not self.own_commits[hash_]:
                        del self.own_commits[hash_]
                    continue
                for record in list(self.by_hash.get(hash_, ())):
                    self.drop(record)
                continue
            if segment_no != self.current.number:     # the C part went on in the spare
                self.current = self.spare
                self.segments[self.current.number] = self.current
                self.spare = None
                self._provide_spare()
            record = Record(segment_no, pos, seq, incarnation, value_len, expire_at, value_sum, tenant, db,
                            type_, hash_, key)
            older = self.records.get(record.identity)
            if older is not None:
                self.drop(older)
            segment = self.segments[segment_no]
            # (a segment the C part left since the last settle is counted to its last record)
            segment.end = max(segment.end, spill_geometry(pos, len(key), value_len)[1])
            self._index(record, segment)
        if lost:
            log.warning("Disk tier: out of memory noting stale copies; dropping every copy")
            self.forget()
        self.current.end = spill_status()[1]
        self._enforce_budget()

    def _enforce_budget(self):
        while sum(s.end for s in self.segments.values()) > self.budget:
            oldest = next(iter(self.segments.values()))
            if oldest is self.current:
                break
            self.dropped_for_budget += len(oldest.records)
            self._delete_segment(oldest)

    def cron(self):
        """Index what was written, drop expired copies (a bounded number per tick), clear
        the stale filter once most of its bits are for copies long gone, and log writes
        that failed (their records read back as misses)."""
        self.settle()
        errors, last_errno = spill_status()[8:10]
        if errors > self.errors_told:
            log.warning("Disk tier %s: %d writes failed (the last: %s)", self.directory, errors - self.errors_told,
                        os.strerror(last_errno))
            self.errors_told = errors
        now = now_ms()
        due = self.expiring
        for _ in range(EXPIRY_CHECKS):
            if not due or due[0][0] > now:
                break
            self.drop(heappop(due)[2])     # (a no-op for a record gone meanwhile)
        if len(due) > 2 * len(self.records) + 1024:    # mostly records gone by other ways
            self.expiring = [(r.expire_at, r.seq, r) for r in self.records.values() if r.expire_at != -1]
            heapify(self.expiring)
        if spill_status()[4] > 4 * len(self.records) + 65536:
            spill_clear_marks()
            for record in self.records.values():
                spill_mark(record.hash)

    # --- what commands see ---------------------------------------------
    def waiting(self, store, db, keys):
        """The records of keys (of db in store's keyspace) that are on disk and nowhere
        else: [(key, record)]; none for a tenant dropped meanwhile (its copies went with
        it, and its command meets the error itself)."""
        self.settle()
        found = []
        now = None
        for key in keys:
            if type(key) is not bytes:
                key = bytes(key)
            try:
                tenant, pdb, _, maybe = store.disk_identity(db, key)
            except TenantError:
                return []
            if not maybe:
                continue
            record = self.records.get((tenant, pdb, key))
            if record is None:
                continue
            now = now if now is not None else now_ms()
            if record.expired(now) or store.lookup(db, key, False, False):
                self.drop(record)
                continue
            found.append((key, record))
        return found

    def drop_keys(self, store, db, keys):
        """A write is about to run on keys: the copies still on disk go (no room brought
        them back), so nothing they held returns after it."""
        for _, record in self.waiting(store, db, keys):
            self.drop(record)

    async def bring_back(self, store, db, records, keep=False):
        """Read records (from waiting, each once) into the arena, committed and pinned; a
        record that does not fit stays on disk. keep: the command keeps what comes back
        (WATCH), whatever disk-tier-promote says. Returns what done() is given once the
        command has run."""
        loop = asyncio.get_running_loop()
        values = await asyncio.gather(*(self._read(loop, store, record) for record in records))
        promote = keep or self.promote
        staged = []
        for record, value in zip(records, values):
            off = self._commit(store, db, record, value, promote) if value is not None else 0
            if off:
                staged.append((store, db, off, None if promote else record, store.generation(off)))
        return staged

    def done(self, staged):
        """The command the keys were brought back for has run: unpin them. With
        disk-tier-promote no, a value the command left as it was leaves the arena again,
        its copy on disk kept; one it changed, moved or deleted loses its copy."""
        for store, db, off, record, generation in staged:
            self.arena.unpin(off)
            if record is None:
                continue
            self.settle()
            try:
                unchanged = (self.records.get(record.identity) is record
                             and store.lookup(db, record.key, False, False) == off
                             and store.generation(off) == generation)
                if unchanged:
                    store.delete(db, record.key)
                    self.put_back += 1
                    continue
            except TenantError:
                pass
            self.drop(record)

    async def _read(self, loop, store, record):
        """record's value, read and checked: a reserved block's offset, or a collection's
        flattened bytes; None if it could not be read."""
        collection = record.type in COLLECTIONS
        segment = self.segments.get(record.segment)
        if segment is None:
            return None
        if collection:
            value = bytearray(record.value_len)
            view = memoryview(value)
        else:
            try:
                value = store.reserve(record.value_len, len(record.key))
            except (OutOfMemory, TenantError):
                return None
            view = store.slot(value)
        value_pos = spill_geometry(record.pos, len(record.key), record.value_len)[0]
        segment.reads += 1
        began = time.perf_counter_ns()
        try:
            intact = await loop.run_in_executor(self.reader, read_value, segment.fd, view, value_pos,
                                                record.value_sum, record.seq)
        except Exception:   # the device's error, a closing reader: as good as a torn record
            intact = False
        finally:
            segment.reads -= 1
            if segment.doomed and not segment.reads:
                os.close(segment.fd)
        self.reads += 1
        self.read_usec += (time.perf_counter_ns() - began) // 1000
        if not intact:
            self._discard(value, record)
            if self.records.get(record.identity) is record:
                self._bad_record(record)
            return None
        return value

    def _bad_record(self, record):
        self.bad_records += 1
        log.warning("Disk tier: a record of %s failed its checks; dropped", self._path(record.segment))
        self.drop(record)

    def _discard(self, value, record):
        if record.type not in COLLECTIONS:
            self.arena.release(value)

    def _commit(self, store, db, record, value, promote):
        """Make the value read for record the live entry (its offset), unless its copy went
        meanwhile (dropped, made stale) or the key came back by other means (0); promote:
        its copy goes."""
        self.settle()
        try:
            tenant, pdb, _, noted = store.disk_identity(db, record.key)
            if (self.records.get(record.identity) is not record or (tenant, pdb) != (record.tenant, record.db)
                    or record.expired(now_ms()) or store.lookup(db, record.key, False, False)):
                self._discard(value, record)
                return 0
            if record.type in COLLECTIONS:
                off = store.load_collection(db, record.key, record.type, value, record.expire_at)
            else:
                off = store.commit(value, db, record.key, record.expire_at, record.type)
        except (OutOfMemory, MemoryError, TenantError):
            # (MemoryError: a collection's rebuild found no process memory) it stays on disk;
            # raising here would lose the pins of the records this command already brought back
            self._discard(value, record)
            return 0
        except ValueError:      # a flattened collection that checked out but does not parse
            self._discard(value, record)
            self._bad_record(record)
            return 0
        if not promote and noted:
            # the commit noted the key as stale: that note is not about the copy kept
            self.own_commits[record.hash] = self.own_commits.get(record.hash, 0) + 1
        self.arena.pin(off)
        self.hits += 1
        self.hit_bytes += record.value_len
        self.tenant_hits[tenant] = self.tenant_hits.get(tenant, 0) + 1
        if promote:
            self.drop(record)
        return off

    def forget(self, tenant=None, pdb=-1, slots=None):
        """Drop the copies of a tenant slot (all when None), of one physical db (-1: all),
        of keys in the given cluster slots (None: any)."""
        for record in list(self.records.values()):
            if ((tenant is None or record.tenant == tenant) and (pdb < 0 or record.db == pdb)
                    and (slots is None or key_slot(record.key) in slots)):
                self.drop(record)

    # --- what operators see --------------------------------------------
    def stats(self):
        """INFO disktier's fields and the Prometheus metrics' values (the exporter's
        thread reads them too: copies, no iteration over what the loop changes)."""
        status = spill_status()
        return {
            "disk_tier_keys": len(self.records),
            "disk_tier_bytes": self.stored_bytes,
            "disk_tier_file_bytes": sum(segment.end for segment in list(self.segments.values())),
            "disk_tier_budget": self.budget,
            "disk_tier_hits": self.hits,
            "disk_tier_hit_bytes": self.hit_bytes,
            "disk_tier_put_back": self.put_back,
            "disk_tier_reads": self.reads,
            "disk_tier_read_usec": self.read_usec,
            "disk_tier_written": status[5],
            "disk_tier_written_bytes": status[6],
            "disk_tier_queued_bytes": spill_queued_bytes(),
            "disk_tier_not_written": status[7],
            "disk_tier_write_errors": status[8],
            "disk_tier_bad_records": self.bad_records,
            "disk_tier_dropped_for_budget": self.dropped_for_budget,
        }


def read_value(fd, view, pos, value_sum, seq):
    """(in a reader thread) Read the value of record seq into view from fd at pos, once
    the writer has written it: whether it came whole and matches its checksum."""
    try:
        spill_wait(seq)
        return os.preadv(fd, [view], pos) == len(view) and value_checksum(view) == value_sum
    finally:
        view.release()
