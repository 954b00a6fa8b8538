# cython: freethreading_compatible = False
"""The arena: one mmap'ed region holding a whole cache (see docs/internals.md, section 1).

Layout: superblock (64 KiB) | index (u64 bucket array) | heap (boundary-tagged blocks).
Every link is an offset from the start of the mapping, so another process (or
this one after a restart) can map the same bytes and follow them.

The allocator, index, LRU and expiry logic is plain C (ext/arena/), so the hot
paths run without touching Python objects; the Arena class is a thin wrapper that
turns buffers into pointers and error codes into exceptions.

Not thread-safe: callers run every method on one thread (the event loop). Views
returned by view()/slot() point straight into the mapping and must not be used
after close().
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.mem cimport PyMem_Malloc, PyMem_Free
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact, PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t, uintptr_t
from libc.limits cimport LLONG_MAX, LLONG_MIN
from libc.string cimport memcmp, memcpy, memset
from libc.errno cimport EAGAIN
from posix.unistd cimport close as close_fd

import os

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    int PyBUF_WRITE

# The arena's C (ext/arena/, see arena.c there), compiled into this module as one
# translation unit; the blocks below declare what this layer uses of it, header by header.
cdef extern from "arena/arena.c":
    pass

cdef extern from "arena/layout.h":
    enum:
        CX_LAYOUT_VERSION
        CX_HDR
        CX_NDB
        CX_NTENANT
        CX_NCLASS
        CX_MAP_WORDS
        CX_QUICK_CLASSES
        CX_QUICK_DEPTH
        CX_FREE
        CX_QUICK
        CX_RESERVED
        CX_LIVE
        CX_ZOMBIE
        CX_TABLE
        CX_WHEEL_SLOTS
        CX_RENAME_KEY_MAX
        CX_RENAME_NONE
        CX_NOEVICTION
        CX_ALLKEYS_LFU
        CX_VOLATILE_LFU
    int CX_TYPE_MASK
    int CX_SUMMED
    bint cx_is_coll(unsigned type) nogil
    uint64_t CX_SUPER_BYTES
    uint64_t CX_TENANT_NO_DISK

    ctypedef struct cx_entry:
        uint64_t size_state
        uint64_t chain_next
        uint64_t lru_prev
        uint64_t lru_next
        int64_t expire_at
        int64_t last_access
        uint64_t value_len
        uint64_t generation
        uint64_t hash
        uint32_t key_len
        uint32_t key_cap
        uint32_t pins
        uint32_t checksum
        uint16_t db
        uint8_t type
        uint8_t lfu
        uint16_t tenant
        uint64_t ttl_prev
        uint64_t ttl_next

    ctypedef struct cx_freeblk:
        uint64_t size_state
        uint64_t next
        uint64_t prev

    ctypedef struct cx_tenant:
        uint64_t head[2]
        uint64_t tail[2]
        uint64_t list_bytes[2]
        uint64_t used_bytes
        uint64_t keys
        uint64_t volatile_keys
        uint64_t quota
        uint64_t hits
        uint64_t misses
        uint64_t expired
        uint64_t evicted
        uint64_t guaranteed
        uint64_t reclaimed

    ctypedef struct cx_tenant_meta:
        uint64_t incarnation
        uint64_t dbtab
        uint64_t dataset
        uint64_t rejected
        uint64_t bytes_written
        uint64_t bytes_in
        uint64_t bytes_out
        uint64_t commands
        uint32_t policy
        uint32_t name_len
        char name[64]
        uint64_t priority
        uint64_t flags

    ctypedef struct cx_dbtab:
        uint64_t size_state
        uint64_t tenant
        uint64_t incarnation
        uint64_t keys[CX_NDB]
        uint64_t volatile_keys[CX_NDB]

    ctypedef struct cx_rename_intent:
        uint64_t state

    ctypedef struct cx_super:
        char magic[8]
        uint32_t version
        uint64_t arena_size
        uint64_t index_off
        uint64_t index_buckets
        uint64_t heap_off
        uint64_t heap_size
        uint64_t hash_seed
        uint64_t formatted_ms
        uint64_t clean
        uint64_t generation
        uint64_t hits
        uint64_t misses
        uint64_t expired
        uint64_t evicted
        uint64_t heap_used
        uint64_t dataset
        uint64_t entries
        uint64_t reserved
        uint64_t zombies
        uint64_t pinned
        uint64_t free_map[CX_MAP_WORDS]
        uint64_t free_head[CX_NCLASS]
        uint8_t db_map[CX_NDB]
        uint64_t db_keys[CX_NDB]
        uint64_t db_volatile[CX_NDB]
        cx_tenant tenants[CX_NTENANT]
        cx_tenant_meta tmeta[CX_NTENANT]
        uint64_t tenant_bits
        uint64_t wheel_next
        uint64_t wheel_cursor
        uint64_t wheel_walk_from
        cx_rename_intent rename
        uint64_t wheel[CX_WHEEL_SLOTS]
        uint64_t quick_head[CX_QUICK_CLASSES]
        uint32_t quick_len[CX_QUICK_CLASSES]

    uint64_t CX_SIZE(uint64_t w) nogil
    unsigned CX_STATE(uint64_t w) nogil
    cx_super* CX_SB(char* base) nogil
    cx_entry* CX_E(char* base, uint64_t off) nogil
    uint64_t* CX_BUCKETS(char* base) nogil
    uint8_t* CX_KEY(cx_entry* e) nogil
    uint8_t* CX_VAL(cx_entry* e) nogil
    uint64_t cx_value_cap(const cx_entry* e) nogil
    uint64_t cx_key_room(const cx_entry* e) nogil

cdef extern from "arena/common.h":
    ctypedef struct cx_cfg:
        int policy
        int samples
        int no_evict
        uint64_t maxmemory
        uint64_t* rng
        int backing_fd
        uint64_t backing_off
        uint64_t grain
        int* backing_errno
        int beyond_limits
        cx_warmer* warmer

    void cx_store(uint64_t* p, uint64_t v) nogil
    void cx_acquire_fence() nogil
    int64_t cx_now_ms() nogil
    int64_t cx_command_ms
    int cx_crash_at
    int cx_expiry_held

cdef extern from "arena/hash.h":
    uint64_t cx_key_hash(const cx_super* sb, unsigned tenant, unsigned pdb, const uint8_t* key, size_t klen) nogil
    uint64_t cx_value_sum(const uint8_t *p, uint64_t n) nogil

cdef extern from "arena/heap.h":
    uint64_t cx_quick_drain(char* base) nogil
    unsigned cx_class(uint64_t size) nogil
    uint64_t cx_release_free(char* base, const cx_cfg* cfg, int64_t now, uint64_t min_age,
                             uint64_t max_bytes, uint64_t max_visits) nogil

cdef extern from "arena/backing.h":
    int cx_back_range(char* base, int fd, uint64_t region, uint64_t grain, uint64_t size, uint64_t off,
                      uint64_t len) nogil
    int cx_os_open(const char* path, int* fd, uint64_t* file_size, int* is_chr, int* created) nogil
    int cx_os_lock(int fd, uint64_t off, uint64_t len) nogil
    int cx_os_locked(int fd, uint64_t off, uint64_t len, int* locked) nogil
    int cx_os_space(int fd, uint64_t* avail, uint64_t* total, uint64_t* grain) nogil
    uint64_t cx_os_held(int fd, uint64_t off, uint64_t len) nogil
    int cx_os_truncate(int fd, uint64_t size) nogil
    int cx_os_map(int fd, uint64_t off, uint64_t size, char** out) nogil
    int cx_os_map_private(int fd, uint64_t off, uint64_t size, char* base) nogil
    void cx_os_hugepages(char* base, uint64_t size) nogil
    int cx_os_bind(char* base, uint64_t size, int node) nogil
    void cx_os_prefault(char* base, uint64_t size) nogil
    int cx_os_sync(char* base, uint64_t size) nogil
    void cx_os_unmap(char* base, uint64_t size, int fd, int sync) nogil

cdef extern from "arena/warm.h":
    cx_warmer* cx_warmer_start(char* base, uint64_t size, uint64_t window) nogil
    void cx_warmer_stop(cx_warmer* w) nogil
    uint64_t cx_warmer_warmed(cx_warmer* w) nogil

cdef extern from "arena/index.h":
    uint64_t cx_find(char* base, uint64_t h, unsigned tenant, unsigned pdb, const uint8_t* key, size_t klen,
                     uint64_t** link) nogil
    void cx_prefetch_bucket(char* base, uint64_t h) nogil
    void cx_prefetch_chain(char* base, uint64_t h) nogil

cdef extern from "arena/slots.h":
    int cx_slots_enable(char* base) nogil
    void cx_slots_disable(char* base) nogil
    int64_t cx_slot_entries(char* base, unsigned slot, unsigned tenant, unsigned pdb, int64_t now,
                            uint64_t* out, int64_t max) nogil

cdef extern from "arena/lru.h":
    unsigned cx_lfu_value(const cx_entry *e, int64_t now) nogil
    void cx_set_recency(cx_entry *e, int64_t idle_ms, int lfu, int64_t now) nogil

cdef extern from "arena/ttl.h":
    uint64_t cx_period(int64_t ms) nogil
    int cx_expired(const cx_entry* e, int64_t now) nogil
    uint64_t cx_expire_cycle(char* base, int64_t now, int64_t budget_ns) nogil

cdef extern from "arena/tenant.h":
    uint64_t cx_tenant_bits(const cx_super* sb) nogil
    int cx_policy_of(const cx_super* sb, unsigned t, const cx_cfg* cfg) nogil
    uint64_t* cx_db_keys(char* base, unsigned t) nogil
    uint64_t* cx_db_volatile(char* base, unsigned t) nogil
    int cx_dbtab_intact(char* base, unsigned t) nogil
    int cx_dbtab_owned(char* base, uint64_t off) nogil
    int cx_tenant_create(char* base, unsigned t, const uint8_t* name, uint32_t name_len, uint64_t quota,
                         uint32_t policy, const cx_cfg* cfg, int64_t now) nogil
    void cx_tenant_drop(char* base, unsigned t) nogil

cdef extern from "arena/entry.h":
    void cx_dataset_add(char* base, const cx_entry* e, uint64_t delta) nogil
    uint64_t cx_reserve(char* base, unsigned tenant, uint64_t key_cap, uint64_t value_cap, uint64_t value_len,
                        const cx_cfg* cfg, int64_t now) nogil
    void cx_release(char* base, uint64_t off) nogil
    void cx_commit(char* base, uint64_t off, unsigned pdb, const uint8_t* key, size_t klen, int64_t expire_at, int type, int keep_ttl, int64_t now, int checksum) nogil
    uint64_t cx_lookup(char* base, unsigned tenant, unsigned pdb, const uint8_t* key, size_t klen, int touch,
                       int stats, int lfu, uint64_t* rng, uint64_t* corrupt) nogil
    void cx_set_expire(char* base, uint64_t off, int64_t at, int64_t now) nogil
    void cx_reseal(char* base, uint64_t off) nogil
    void cx_drop(char* base, uint64_t off, int in_index) nogil
    void cx_pin(char* base, uint64_t off) nogil
    void cx_unpin(char* base, uint64_t off) nogil

cdef extern from "arena/evict.h":
    ctypedef struct cx_filter:
        unsigned tenant
        int db
        int volatile_only
        int unpinned_only

    uint64_t cx_random_entry(char* base, uint64_t* rng, const cx_filter* f) nogil
    int cx_evict_to_limit(char* base, const cx_cfg* cfg, int64_t now) nogil

cdef extern from "arena/notes.h":
    enum:
        CX_NOTE_EXPIRED
        CX_NOTE_EVICTED
    ctypedef struct cx_note:
        uint64_t base
        uint32_t key_len
        uint16_t tenant
        uint16_t db
        uint8_t kind
    ctypedef struct cx_note_log:
        uint8_t* buf
        size_t len
        int on
        uint64_t lost
    cx_note_log cx_notes
    void cx_notes_clear() nogil

cdef extern from "arena/spill.h":
    ctypedef struct cx_spill_head:
        uint64_t magic
        uint64_t seq
        uint64_t incarnation
        uint64_t value_len
        int64_t expire_at
        uint64_t value_sum
        uint32_t key_len
        uint16_t tenant
        uint16_t db
        uint8_t type
        uint8_t dead
        uint32_t head_sum
    ctypedef struct cx_spill_note:
        uint64_t pos
        uint64_t seq
        uint64_t incarnation
        uint64_t value_len
        uint64_t value_sum
        uint64_t hash
        int64_t expire_at
        uint32_t segment
        uint32_t key_len
        uint16_t tenant
        uint16_t db
        uint8_t type
    ctypedef struct cx_spill_state:
        char* base
        int fd
        int next_fd
        uint32_t segment
        uint64_t pos
        uint64_t cap
        uint64_t seq
        uint64_t bits_set
        uint8_t* log
        size_t log_len
        int stale_lost
        uint64_t written
        uint64_t written_bytes
        uint64_t skipped
        uint64_t errors
        int last_errno
    cx_spill_state cx_spill
    uint64_t CX_SPILL_MAGIC
    uint8_t CX_SPILL_STALE
    size_t CX_SPILL_PADDED(size_t n) nogil
    bint cx_spill_maybe(const char* base, uint64_t h) nogil
    uint64_t cx_spill_value_pos(uint64_t pos, uint64_t key_len, uint64_t value_len) nogil
    uint64_t cx_spill_end(uint64_t pos, uint64_t key_len, uint64_t value_len) nogil
    uint32_t cx_spill_head_sum(const cx_spill_head* head, const uint8_t* key) nogil
    int cx_spill_start(char* base, uint64_t cap, uint64_t seq, uint64_t max_value, uint64_t staging_cap) nogil
    void cx_spill_wait(uint64_t seq) nogil
    void cx_spill_drain() nogil
    uint64_t cx_spill_written_seq() nogil
    uint64_t cx_spill_staged() nogil
    int cx_spill_kill(uint64_t seq, int fd, uint64_t pos) nogil
    void cx_spill_stop() nogil
    void cx_spill_forget() nogil
    void cx_spill_mark(uint64_t h) nogil
    void cx_spill_bits_clear() nogil
    void cx_spill_log_clear() nogil

cdef extern from "arena/mrc.h":
    enum: CX_MRC_RING
    ctypedef struct cx_mrc_ref:
        uint64_t hash
        uint64_t size
        uint64_t base
        uint32_t tenant
        uint32_t read
    ctypedef struct cx_mrc_log:
        uint64_t threshold
        uint64_t len
        cx_mrc_ref ring[CX_MRC_RING]
    cx_mrc_log cx_mrc

cdef extern from "arena/rename.h":
    void cx_rename_in_place(char* base, uint64_t off, unsigned pdb, const uint8_t* key, size_t klen) nogil
    void cx_rename_by_copy(char* base, uint64_t src, uint64_t fresh, unsigned pdb, const uint8_t* key, size_t klen,
                           int64_t now, int checksum) nogil

cdef extern from "arena/recovery.h":
    enum:
        CX_ZERO
        CX_ZEROED_SUPER
        CX_BAD_MAGIC
        CX_BAD_VERSION
        CX_BAD_CHECKSUM
        CX_BAD_SIZE
        CX_BAD_GEOMETRY

    uint64_t cx_heap_off_for(uint64_t size) nogil
    void cx_format(char* base, uint64_t size, uint64_t seed) nogil
    int cx_validate(const char* base, uint64_t size) nogil
    void cx_upgrade(char* base) nogil
    int cx_entry_intact(char* base, uint64_t off, uint64_t size) nogil
    int64_t cx_rebuild(char* base) nogil
    void cx_release_process_state(char* base) nogil

cdef extern from "cluster/keyslot.h":
    enum: CX_CLUSTER_SLOTS
    void cx_crc16_init()
    unsigned int cx_key_slot(const unsigned char *key, size_t len) nogil

cx_crc16_init()

cdef extern from "string2ll.h":
    bint cx_string2ll(const char *s, size_t n, long long *out) noexcept nogil
    size_t cx_ll2string(char *out, long long v) noexcept nogil

cdef extern from "globmatch.h":
    int cx_glob(const uint8_t* p, size_t pn, const uint8_t* s, size_t sn, int nocase) nogil


class ArenaError(Exception):
    """The backing cannot be used as an arena (foreign, corrupt, busy, wrong size, too small)."""


def check_device_size(path, int fd, uint64_t offset, uint64_t size, size_option):
    """ArenaError if the character device (devdax) ends before the arena does: a store past
    its end would be a SIGBUS. Its size is in sysfs; a device that has none is trusted."""
    rdev = os.fstat(fd).st_rdev
    try:
        with open(f"/sys/dev/char/{os.major(rdev)}:{os.minor(rdev)}/size") as f:
            device_size = int(f.read())
    except (OSError, ValueError):
        return
    if offset + size <= device_size:
        return
    held = f"the device holds {device_size} bytes ({device_size / 1048576:.1f} MiB)"
    if not offset:
        raise ArenaError(f"{path}: the arena's {size} bytes (set by {size_option}) do not fit its "
                         f"backing: {held}; lower {size_option}")
    raise ArenaError(f"{path}: the arena's {size} bytes at arena-offset {offset} (set by {size_option} "
                     f"and arena-offset) do not fit its backing: {held}; lower {size_option} or arena-offset")


cdef check_offset(path, uint64_t offset, bint device, bint hugepages, uint64_t grain):
    """ArenaError unless arena-offset can start a mapping of this backing: a multiple of
    its page size, and of the 2 MiB pages a devdax device or huge pages map in."""
    cdef uint64_t align = os.sysconf("SC_PAGESIZE")
    why = "the page size"
    if device or hugepages:
        align, why = 2 << 20, "a devdax device maps 2 MiB pages" if device else "arena-hugepages maps 2 MiB pages"
    if grain > align:
        align, why = grain, "the huge page size of its file system"
    if offset % align:
        raise ArenaError(f"{path}: arena-offset {offset} is not a multiple of {align} bytes ({why})")


cdef bint holds_first_region(int fd, uint64_t size) except -1:
    """Whether a file bigger than an arena of `size` bytes at offset 0 is shared with
    arenas at other offsets: its first bytes are an arena of that size, or nothing yet
    (those of higher offsets were made first). A bigger file holding anything else is an
    arena of another size (arena-size changed), which today's messages are about."""
    head = os.pread(fd, CX_SUPER_BYTES, 0)
    cdef const cx_super* sb = <const cx_super*>PyBytes_AS_STRING(head)
    if head.count(0) == len(head):
        return True
    return (len(head) == CX_SUPER_BYTES and memcmp(sb.magic, b"CXLREDIS", 8) == 0
            and sb.arena_size == size)


def region_locked(path, uint64_t offset=0, uint64_t length=0):
    """Whether a process (this one included) holds an arena's lock on the file at path
    over [offset, offset + length) (length 0: to its end); False if it does not exist."""
    cdef int fd, locked = 0, err
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    err = cx_os_locked(fd, offset, length, &locked)
    close_fd(fd)
    if err:
        raise OSError(err, os.strerror(err), path)
    return bool(locked)


class OutOfMemory(Exception):
    """No room for a write, even after evicting what the policy allows."""


class WrongType(Exception):
    """find(type=...) met a key holding another type (the command answers -WRONGTYPE)."""


class TenantError(Exception):
    """A tenant operation that cannot be done: no such tenant (or it was dropped), a
    name already taken, no free slot, or what a tenant namespace does not offer."""


# Entry types (cx_entry.type), exported to Python as TYPE_*.
cdef enum:
    STRING_TYPE = 0
    HASH_TYPE = 1
    LIST_TYPE = 2
    SET_TYPE = 3
    ZSET_TYPE = 4

TYPE_STRING = STRING_TYPE
TYPE_HASH = HASH_TYPE
TYPE_LIST = LIST_TYPE
TYPE_SET = SET_TYPE
TYPE_ZSET = ZSET_TYPE
# the types whose value is a Collection (a list's, set's or sorted set's trees)
COLLECTION_TYPES = frozenset((LIST_TYPE, SET_TYPE, ZSET_TYPE))


cdef void arm_crash_point(int point) noexcept:
    global cx_crash_at
    cx_crash_at = point

# Tests only: the process kills itself at this numbered point of a rename (CX_CRASH_POINT).
arm_crash_point(int(os.environ.get("CXLREDIS_TEST_CRASH_POINT") or 0))

POLICY_NAMES = ("noeviction", "allkeys-lru", "volatile-lru", "allkeys-random",
                "volatile-random", "volatile-ttl", "allkeys-lfu", "volatile-lfu")

DEFAULT_TENANT = "default"      # tenant 0's name: the keyspace an Arena itself is
MAX_TENANTS = CX_NTENANT        # including the default tenant
TENANT_NAME_MAX = 64

cdef uint64_t MIN_ARENA_BYTES = 4 << 20
cdef uint64_t MAX_KEY_BYTES = 512 << 20
# copies at least this big release the GIL (the block being filled is invisible to others)
cdef size_t NOGIL_COPY_BYTES = 1 << 20
# release_free_pages: a free block is punched once idle this long (an overwrite's freed
# block is usually reused sooner), with at most this many bytes punched and free blocks
# looked at per call
cdef uint64_t RELEASE_AGE_MS = 1000
RELEASE_BYTES = 64 << 20          # about 8 ms of punching on tmpfs
cdef uint64_t RELEASE_VISITS = 4096
# SCAN stops after this many buckets even if it found fewer keys than asked,
# so one call stays cheap on a huge, sparse index
cdef uint64_t SCAN_BUCKET_CAP = 1 << 20
cdef unsigned LIVE_ONLY = 1u << CX_LIVE
cdef unsigned SERVED = (1u << CX_LIVE) | (1u << CX_ZOMBIE)
cdef unsigned RESERVED_ONLY = 1u << CX_RESERVED
cdef unsigned ANY_ALLOCATED = (1u << CX_LIVE) | (1u << CX_ZOMBIE) | (1u << CX_RESERVED)


def value_checksum(data):
    """The checksum arena-checksum keeps of a value (for readers through the mapping)."""
    cdef Buf b
    cdef uint64_t sum
    buf_open(&b, data)
    try:
        with nogil:
            sum = cx_value_sum(b.ptr, b.len)
    finally:
        buf_close(&b)
    return sum


def acquire_fence():
    """A load-acquire barrier: no load after it is satisfied before the loads before it.
    A reader through the mapping calls it between using a value's bytes and re-reading
    the entry header, so a weakly ordered CPU cannot read the header before the copy.
    No instruction on x86 (loads are not reordered with older loads); dmb ishld on ARM."""
    cx_acquire_fence()


def note_drops(bint on):
    """Whether the keys this process drops as expired or evicted are noted, for
    take_dropped_keys (keyspace notifications want them); turning it off forgets them."""
    cx_notes.on = on
    if not on:
        cx_notes_clear()


def take_dropped_keys():
    """The keys dropped as expired or evicted since the last call, while note_drops is on:
    a list of (arena address, b"expired" or b"evicted", tenant slot, physical db, key)."""
    cdef size_t at = 0
    cdef cx_note* note
    found = []
    while at < cx_notes.len:
        note = <cx_note*>(cx_notes.buf + at)
        at += sizeof(cx_note)
        found.append((note.base, b"expired" if note.kind == CX_NOTE_EXPIRED else b"evicted",
                      note.tenant, note.db, (<char*>cx_notes.buf)[at:at + note.key_len]))
        at += note.key_len
    cx_notes_clear()
    return found


# ---------------------------------------------------------------- the disk tier's C part (arena/spill.h)

SPILL_HEAD_BYTES = sizeof(cx_spill_head)
cdef cx_spill_head _head_layout
# where a header's dead byte is: the server writes 1 there to drop a record
SPILL_DEAD_AT = <char*>&_head_layout.dead - <char*>&_head_layout


def spill_start(Arena arena, uint64_t cap, uint64_t seq, uint64_t max_value, uint64_t staging_cap):
    """Spill arena's evicted entries to the segments spill_segment and spill_next give,
    each segment up to cap bytes, numbering records from seq + 1; values above max_value
    are not spilled. A writer thread writes them, up to staging_cap bytes behind."""
    cdef int err = cx_spill_start(open_base(arena), cap, seq, max_value, staging_cap)
    if err:
        raise OSError(err, os.strerror(err))


def spill_wait(uint64_t seq):
    """Wait (the GIL released) until the record of seq is written."""
    with nogil:
        cx_spill_wait(seq)


def spill_drain():
    """Wait (the GIL released) until every record queued is written."""
    with nogil:
        cx_spill_drain()


def spill_written_seq():
    return cx_spill_written_seq()


def spill_queued_bytes():
    """Bytes of records waiting for the writer thread."""
    return cx_spill_staged()


def spill_kill(uint64_t seq, int fd, uint64_t pos):
    """Mark the record of seq, at pos in fd, dropped (waiting, the GIL released, for a
    write of it under way); raises OSError if the file refuses."""
    cdef int err
    with nogil:
        err = cx_spill_kill(seq, fd, pos)
    if err:
        raise OSError(err, os.strerror(err))


def spill_stop():
    cx_spill_stop()


def spill_segment(int fd, uint32_t segment, uint64_t pos):
    """Write from pos on in segment `segment`, open as fd (-1: write nothing)."""
    cx_spill.fd = fd
    cx_spill.segment = segment
    cx_spill.pos = pos


def spill_next(int fd):
    """The segment (fd, -1 for none) to go on in when the written one is full."""
    cx_spill.next_fd = fd


def spill_status():
    """(segment, pos, next fd, seq, bits set, written, written bytes, skipped, errors,
    last errno)"""
    return (cx_spill.segment, cx_spill.pos, cx_spill.next_fd, cx_spill.seq, cx_spill.bits_set, cx_spill.written,
            cx_spill.written_bytes, cx_spill.skipped, cx_spill.errors, cx_spill.last_errno)


def spill_take():
    """What the C part noted since the last call, in order: records written, as tuples
    (segment, pos, seq, incarnation, value_len, expire_at, value_sum, tenant, physical db,
    type, key hash, key), and commits of keys that may have a copy on disk, as the same
    tuples with only the key hash (the rest 0, the key None); and whether some such
    commit was not noted, so that every copy must go."""
    cdef size_t at = 0
    cdef cx_spill_note* note
    noted = []
    while at < cx_spill.log_len:
        note = <cx_spill_note*>(cx_spill.log + at)
        at += sizeof(cx_spill_note)
        noted.append((note.segment, note.pos, note.seq, note.incarnation, note.value_len, note.expire_at,
                      note.value_sum, note.tenant, note.db, note.type, note.hash,
                      None if note.type == CX_SPILL_STALE else (<char*>cx_spill.log)[at:at + note.key_len]))
        at += CX_SPILL_PADDED(note.key_len)
    lost = bool(cx_spill.stale_lost)
    cx_spill_log_clear()
    return noted, lost


def spill_pending():
    return cx_spill.log_len != 0 or cx_spill.stale_lost != 0


def spill_mark(uint64_t h):
    cx_spill_mark(h)


def spill_clear_marks():
    cx_spill_bits_clear()


def spill_geometry(uint64_t pos, uint64_t key_len, uint64_t value_len):
    """Where a record at pos puts its value, and where the next record goes."""
    return cx_spill_value_pos(pos, key_len, value_len), cx_spill_end(pos, key_len, value_len)


def spill_head(data):
    """The record whose header and key start `data` (at least SPILL_HEAD_BYTES long), as
    (seq, incarnation, value_len, expire_at, value_sum, tenant, physical db, type, dead,
    key_len), if the magic is right; None otherwise. With the key too, its head_sum is
    checked (None if wrong)."""
    cdef Buf b
    cdef cx_spill_head head
    buf_open(&b, data)
    try:
        if <size_t>b.len < sizeof(cx_spill_head):
            return None
        memcpy(&head, b.ptr, sizeof(cx_spill_head))
        if head.magic != CX_SPILL_MAGIC:
            return None
        if <uint64_t>b.len >= sizeof(cx_spill_head) + head.key_len:
            if cx_spill_head_sum(&head, b.ptr + sizeof(cx_spill_head)) != head.head_sum:
                return None
        return (head.seq, head.incarnation, head.value_len, head.expire_at, head.value_sum, head.tenant,
                head.db, head.type, head.dead, head.key_len)
    finally:
        buf_close(&b)


def mrc_set_threshold(uint64_t threshold):
    """Sample, for the miss-ratio curves, the references to keys whose hash is below
    threshold (0: none); see ext/arena/mrc.h."""
    cx_mrc.threshold = threshold


def take_mrc_references():
    """The references sampled since the last call: a list of (key hash, block size or 0
    for a read that missed, arena address, tenant slot, read?)."""
    cdef uint64_t i
    cdef cx_mrc_ref* r
    found = []
    for i in range(cx_mrc.len):
        r = &cx_mrc.ring[i]
        found.append((r.hash, r.size, r.base, r.tenant, r.read))
    cx_mrc.len = 0
    return found


def dropped_keys_pending():
    return cx_notes.len != 0


def now_ms():
    """Wall-clock time in ms, the clock every expire_at and last-access uses."""
    return cx_now_ms()


def hold_expiry(bint hold):
    """While clients are paused (CLIENT PAUSE): hold, and a lookup of any arena of this
    process reports an expired key missing without dropping it (nothing counted, nothing
    noted), so the dataset stays as it was, as Redis keeps it during a pause."""
    global cx_expiry_held
    cx_expiry_held = hold


cdef struct Buf:
    const uint8_t* ptr
    Py_ssize_t len
    Py_buffer view
    bint owned


cdef inline int buf_open(Buf* b, object obj) except -1:
    if PyBytes_CheckExact(obj):
        b.ptr = <const uint8_t*>PyBytes_AS_STRING(obj)
        b.len = PyBytes_GET_SIZE(obj)
        b.owned = False
    else:
        PyObject_GetBuffer(obj, &b.view, PyBUF_SIMPLE)
        b.ptr = <const uint8_t*>b.view.buf
        b.len = b.view.len
        b.owned = True
    return 0


cdef inline void buf_close(Buf* b) noexcept:
    if b.owned:
        PyBuffer_Release(&b.view)
        b.owned = False


cdef inline int key_open(Buf* b, object key) except -1:
    buf_open(b, key)
    if <uint64_t>b.len > MAX_KEY_BYTES:
        buf_close(b)
        raise ValueError("key longer than 512 MiB")
    return 0


cdef inline void copy_bytes(void* dst, const void* src, size_t n) noexcept:
    if n >= NOGIL_COPY_BYTES:
        with nogil:
            memcpy(dst, src, n)
    else:
        memcpy(dst, src, n)


def glob_match(pattern, string, bint nocase=False):
    """Redis glob matching (stringmatchlen rules): * ? [abc] [^a] [a-z] and \\ escapes."""
    cdef Buf p, s
    buf_open(&p, pattern)
    try:
        buf_open(&s, string)
        try:
            return bool(cx_glob(p.ptr, p.len, s.ptr, s.len, nocase))
        finally:
            buf_close(&s)
    finally:
        buf_close(&p)


cdef inline char* open_base(Arena a) except NULL:
    if a.base == NULL:
        raise ArenaError("the arena is closed")
    return a.base


cdef cx_entry* entry_at(Arena a, uint64_t off, unsigned states) except NULL:
    """The header at `off`, if it starts a block in one of `states` (cheap checks only)."""
    cdef char* base = open_base(a)
    cdef cx_super* sb = CX_SB(base)
    cdef uint64_t end = sb.heap_off + sb.heap_size, size
    cdef cx_entry* e
    if off >= sb.heap_off and off < end and not (off & 63):
        e = CX_E(base, off)
        size = CX_SIZE(e.size_state)
        if ((states >> CX_STATE(e.size_state)) & 1 and size >= CX_HDR + 64 and size <= end - off
                and (<uint64_t*>(base + off + size - 8))[0] == size):
            return e
    raise ValueError(f"offset {off} is not the start of a {state_words(states)} block")


cdef str state_words(unsigned states):
    names = [n for s, n in ((CX_LIVE, "live"), (CX_ZOMBIE, "zombie"), (CX_RESERVED, "reserved"))
             if (states >> s) & 1]
    return "/".join(names)


cdef inline cx_cfg eviction_cfg(Arena a) noexcept:
    cdef cx_cfg c
    c.policy = a.policy_id
    c.samples = a.samples
    c.no_evict = 0
    c.maxmemory = a.maxmem
    c.rng = &a.rng
    c.backing_fd = a.fd
    c.backing_off = a.offset
    c.grain = a.grain
    c.backing_errno = &a.backing_errno
    c.beyond_limits = 0
    c.warmer = a.warmer
    return c


cdef int policy_number(object name) except -1:
    if isinstance(name, (bytes, bytearray)):
        name = name.decode("ascii", "replace")
    try:
        return POLICY_NAMES.index(name.lower())
    except (ValueError, AttributeError):
        raise ValueError(f"unknown maxmemory-policy {name!r}") from None


cdef inline int tenant_policy(Arena a, unsigned tenant) noexcept:
    """As cx_policy_of: the tenant's own policy, else (always for tenant 0) the arena's."""
    cdef uint32_t own = CX_SB(a.base).tmeta[tenant].policy if tenant else 0
    return <int>own - 1 if own else a.policy_id


cdef inline bint lfu_policy(Arena a, unsigned tenant) noexcept:
    cdef int p = tenant_policy(a, tenant)
    return p == CX_ALLKEYS_LFU or p == CX_VOLATILE_LFU


cdef str tenant_name_of(Arena a, unsigned tenant):
    cdef cx_tenant_meta* m = &CX_SB(a.base).tmeta[tenant]
    if tenant == 0:
        return DEFAULT_TENANT
    return (<bytes>m.name[:m.name_len]).decode("ascii")


cdef int raise_oom(Arena a, unsigned tenant, uint64_t value_bytes, bint rejected=True) except -1:
    cdef cx_super* sb = CX_SB(a.base)
    cdef uint64_t quota = sb.tenants[tenant].quota
    if rejected:
        sb.tmeta[tenant].rejected += 1
    if tenant == 0 and not quota:
        raise OutOfMemory(f"no room for a {value_bytes}-byte value in the arena "
                          f"(maxmemory-policy {POLICY_NAMES[a.policy_id]})")
    raise OutOfMemory(f"no room for a {value_bytes}-byte value for tenant {tenant_name_of(a, tenant)!r} "
                      f"(quota {quota if quota else 'none'}, maxmemory-policy "
                      f"{POLICY_NAMES[tenant_policy(a, tenant)]})")


cdef inline uint64_t checksum_room(Arena a) noexcept:
    """Key-area bytes a new block needs for its value's checksum (arena-checksum)."""
    return 8 if a.checksums else 0


cdef uint64_t reserve_or_raise(Arena a, unsigned tenant, uint64_t key_cap, uint64_t value_len,
                               int64_t now, bint beyond_limits=False, bint rejected=True) except 0:
    """rejected=False: a refusal is not counted, for the fast path, whose refused write the
    general path runs again (and counts)."""
    cdef cx_cfg cfg = eviction_cfg(a)
    cfg.beyond_limits = beyond_limits
    cdef uint64_t off = cx_reserve(a.base, tenant, key_cap + checksum_room(a), value_len, value_len, &cfg, now)
    if not off:
        raise_oom(a, tenant, value_len, rejected)
    return off


cdef uint64_t put(Arena a, unsigned tenant, unsigned pdb, Buf* key, Buf* value, int64_t expire_at, int type,
                  bint keep_ttl, bint rejected=True) except 0:
    cdef int64_t now = cx_now_ms()
    cdef uint64_t off
    cdef cx_entry* old
    if keep_ttl:
        # read the TTL now: making room may evict the old version (it can be the LRU tail)
        off = cx_find(a.base, cx_key_hash(CX_SB(a.base), tenant, pdb, key.ptr, key.len), tenant, pdb,
                      key.ptr, key.len, NULL)
        if off:
            old = CX_E(a.base, off)
            if not cx_expired(old, now):
                expire_at = old.expire_at
    off = reserve_or_raise(a, tenant, key.len, value.len, now, False, rejected)
    copy_bytes(CX_VAL(CX_E(a.base, off)), value.ptr, value.len)
    cx_commit(a.base, off, pdb, key.ptr, key.len, expire_at, type, 0, now, a.checksums)
    CX_SB(a.base).tmeta[tenant].bytes_written += value.len
    return off


cdef uint64_t reserve_copy(Arena a, unsigned tenant, uint64_t src, Buf* key, int64_t now,
                          bint moving=False) except 0:
    """A reserved block for key holding a copy of entry src's value (COPY, RENAME to a
    key too long for src's key area). The caller pins src, so making room cannot evict it.
    moving: src is freed right after (RENAME, MOVE), so, as Redis never refuses those, any
    free block takes the copy before the memory limit and the quota are asked."""
    cdef cx_entry* e = CX_E(a.base, src)
    cdef uint64_t fresh = reserve_or_raise(a, tenant, key.len, e.value_len, now, moving)
    copy_bytes(CX_VAL(CX_E(a.base, fresh)), CX_VAL(e), e.value_len)
    return fresh


cdef inline object key_of(cx_entry* e):
    return PyBytes_FromStringAndSize(<char*>CX_KEY(e), e.key_len)


# ---------------------------------------------------------------- keys by cluster slot

cdef bint slots_indexed(Arena a) noexcept:
    """Whether a's keys are indexed by slot (arena/slots.c), indexing them now if not."""
    return cx_slots_enable(a.base) == 0


cdef list walk_slot(Arena a, unsigned tenant, unsigned pdb, unsigned slot, Py_ssize_t count):
    """keys_in_slot without the slot index (no memory for one): a walk of the whole index."""
    cdef char* base = a.base
    cdef uint64_t* bk = CX_BUCKETS(base)
    cdef uint64_t b, cur, nb = CX_SB(base).index_buckets
    cdef int64_t now = cx_now_ms()
    cdef cx_entry* e
    cdef list out = []
    for b in range(nb):
        cur = bk[b]
        while cur:
            e = CX_E(base, cur)
            if (e.db == pdb and e.tenant == tenant and not cx_expired(e, now)
                    and cx_key_slot(<const unsigned char*>CX_KEY(e), e.key_len) == slot):
                if count >= 0 and len(out) >= count:
                    return out
                out.append(key_of(e))
            cur = e.chain_next
    return out


# ---------------------------------------------------------------- keyspaces

cdef inline Arena ks_arena(Keyspace ks):
    """The open arena behind ks; for a namespace, only while its tenant still exists."""
    cdef Arena a
    if ks.is_arena:
        a = <Arena>ks
        open_base(a)
        return a
    a = ks.owner
    if a is None:
        raise TypeError("a keyspace must come from an Arena (Arena.namespace)")
    open_base(a)
    if CX_SB(a.base).tmeta[ks.tenant].incarnation != ks.incarnation:
        raise TenantError(f"tenant {ks.tenant} was dropped")
    return a


cdef inline unsigned ks_pdb(Arena a, unsigned tenant, int db) except? 0xffff:
    """physical_db, for a db that must be in range."""
    if db < 0 or db >= a.ndb:
        raise ValueError(f"db {db} out of range (0..{a.ndb - 1})")
    return physical_db(a, tenant, db)


cdef inline unsigned physical_db(Arena a, unsigned tenant, int db) noexcept:
    """The physical db of a logical one in range: the default tenant's go through the
    SWAPDB map, another tenant's are its own (the map is arena-wide, so it cannot be
    theirs)."""
    return CX_SB(a.base).db_map[db] if tenant == 0 else <unsigned>db


# ---------------------------------------------------------------- the fast path's GET and SET

cdef void hold_clock(int64_t now_ms) noexcept:
    """What every read of the wall clock sees until the next call: now_ms, or, for 0, the
    clock itself."""
    global cx_command_ms
    cx_command_ms = now_ms


cdef int get_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len, Py_ssize_t max_len,
                    const char **value, Py_ssize_t *value_len, uint64_t *entry) except -2:
    """GET, looked up as Keyspace.find does: 1 and the value (valid until the next write)
    when key holds a string shorter than max_len; 2 and its entry's offset too when the
    string is longer, to be sent by reference (pin_value); 0 when it is missing; -1, with
    nothing touched or counted, when it holds another type, so the general path answers
    with WRONGTYPE."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef const uint8_t *k = <const uint8_t *>key
    cdef uint64_t off = cx_find(a.base, cx_key_hash(CX_SB(a.base), ks.tenant, pdb, k, key_len),
                                ks.tenant, pdb, k, key_len, NULL)
    cdef cx_entry* e
    if off and (CX_E(a.base, off).type & CX_TYPE_MASK) != STRING_TYPE:
        return -1
    off = cx_lookup(a.base, ks.tenant, pdb, k, key_len, 1, 1, lfu_policy(a, ks.tenant), &a.rng,
                    &a.checksum_failures if a.checksums else NULL)
    if not off:
        return 0
    e = CX_E(a.base, off)
    value[0] = <const char *>CX_VAL(e)
    value_len[0] = e.value_len
    entry[0] = off
    return 1 if e.value_len < <uint64_t>max_len else 2


cdef int commit_reserved(Keyspace ks, uint64_t off, int db, const uint8_t *key, Py_ssize_t key_len,
                         int64_t expire_at, int type, bint keep_ttl) except -1:
    """Keyspace.commit: the filled reservation at off becomes the live entry for key."""
    cdef Arena a = ks_arena(ks)
    cdef cx_entry* e = entry_at(a, off, RESERVED_ONLY)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    if e.tenant != ks.tenant:
        raise ValueError(f"the reservation at {off} belongs to tenant {e.tenant}, not {ks.tenant}")
    if <uint64_t>key_len > e.key_cap:
        raise ValueError(f"key of {key_len} bytes does not fit the reserved key_cap")
    cx_commit(a.base, off, pdb, key, key_len, expire_at, type, keep_ttl, cx_now_ms(), a.checksums)
    CX_SB(a.base).tmeta[ks.tenant].bytes_written += e.value_len
    return 0


cdef class SlotArg:
    """A large value argument received straight into a block reserved for it in store
    (Keyspace.reserve): the command that stores it commits it under its key; any other
    outcome releases it."""

    def __init__(self, store, uint64_t off, Py_ssize_t length):
        self.store = store
        self.off = off
        self.length = length
        self.consumed = False

    def __len__(self):
        return self.length

    def view(self):
        return self.store.slot(self.off)

    def __bytes__(self):
        return bytes(self.store.slot(self.off))

    def commit(self, int db, key, int64_t expire_at=-1, bint keep_ttl=False):
        """Make the received value visible under key; the block now belongs to the index."""
        self.consumed = True
        return self.store.commit(self.off, db, key, expire_at, 0, keep_ttl)

    def release(self):
        if not self.consumed:
            self.consumed = True
            self.store.release(self.off)


cdef int commit_slot(SlotArg slot, int db, const char *key, Py_ssize_t key_len) except -1:
    """SET key <slot> without options, as slot.commit(db, key) makes it (slot.store must
    be a Keyspace)."""
    commit_reserved(<Keyspace>slot.store, slot.off, db, <const uint8_t *>key, key_len, -1, 0, False)
    slot.consumed = True
    return 0


cdef tuple pin_value(Keyspace ks, uint64_t off):
    """For a reply that sends the value of the live entry at off (which a lookup just
    found) by reference: pins it and returns (token, view), the token as Entry.pin gives
    it, the view over the value's bytes."""
    cdef Arena a = ks_arena(ks)
    cdef cx_entry* e = CX_E(a.base, off)
    reference = ((a, off), PyMemoryView_FromMemory(<char*>CX_VAL(e), e.value_len, PyBUF_READ))
    cx_pin(a.base, off)
    return reference


cdef void prefetch_lookups(Keyspace ks, int db, const char **keys, const Py_ssize_t *key_lens,
                           Py_ssize_t n) noexcept:
    """Ask the memory system for what lookups of these keys (at most PREFETCH_KEYS) read
    first, all the buckets and then all the entries (cx_prefetch_bucket), before the
    commands run one by one. It reads only what those lookups read and changes nothing;
    a closed arena, a dropped tenant or a db out of range get no prefetch, and the
    command then answers as it does."""
    cdef Arena a = <Arena>ks if ks.is_arena else ks.owner
    cdef uint64_t hashes[PREFETCH_KEYS]
    cdef unsigned pdb
    cdef Py_ssize_t i
    if a is None or a.base == NULL or not 0 <= db < a.ndb or n > PREFETCH_KEYS:
        return
    if not ks.is_arena and CX_SB(a.base).tmeta[ks.tenant].incarnation != ks.incarnation:
        return
    pdb = physical_db(a, ks.tenant, db)
    for i in range(n):
        hashes[i] = cx_key_hash(CX_SB(a.base), ks.tenant, pdb, <const uint8_t *>keys[i], key_lens[i])
        cx_prefetch_bucket(a.base, hashes[i])
    for i in range(n):
        cx_prefetch_chain(a.base, hashes[i])


cdef bint maybe_on_disk(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -1:
    """Whether key may have a copy in the disk tier (the fast path leaves such keys to
    the general path, which looks): never while the tier is off."""
    if cx_spill.base == NULL:
        return False
    cdef Arena a = ks_arena(ks)
    return cx_spill_maybe(a.base, cx_key_hash(CX_SB(a.base), ks.tenant, ks_pdb(a, ks.tenant, db),
                                              <const uint8_t *>key, key_len))


cdef int string_fits(Keyspace ks, int db, const char *key, Py_ssize_t key_len, Py_ssize_t max_len) except -1:
    """MGET's check before it runs here: key is missing, holds another type, or a string
    shorter than max_len (1), or a longer string, which goes by reference (0); nothing
    touched or counted."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef const uint8_t *k = <const uint8_t *>key
    cdef uint64_t off = cx_find(a.base, cx_key_hash(CX_SB(a.base), ks.tenant, pdb, k, key_len),
                                ks.tenant, pdb, k, key_len, NULL)
    return not (off and (CX_E(a.base, off).type & CX_TYPE_MASK) == STRING_TYPE
                and CX_E(a.base, off).value_len >= <uint64_t>max_len)


cdef int mget_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len,
                     const char **value, Py_ssize_t *value_len) except -1:
    """MGET's lookup of one key, as Keyspace.find: LRU touched, a hit or a miss counted;
    1 and the value (valid until the next write) when it holds a string, else 0."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef uint64_t off = cx_lookup(a.base, ks.tenant, pdb, <const uint8_t *>key, key_len, 1, 1,
                                  lfu_policy(a, ks.tenant), &a.rng,
                                  &a.checksum_failures if a.checksums else NULL)
    cdef cx_entry* e
    if not off or (CX_E(a.base, off).type & CX_TYPE_MASK) != STRING_TYPE:
        return 0
    e = CX_E(a.base, off)
    value[0] = <const char *>CX_VAL(e)
    value_len[0] = e.value_len
    return 1


cdef int key_exists(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -1:
    """EXISTS of one key as Keyspace.find(touch=False) answers it: 1 or 0, a hit or a
    miss counted, an expired key deleted."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    return cx_lookup(a.base, ks.tenant, pdb, <const uint8_t *>key, key_len, 0, 1,
                     lfu_policy(a, ks.tenant), &a.rng,
                     &a.checksum_failures if a.checksums else NULL) != 0


cdef int64_t key_ttl_ms(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -3:
    """TTL/PTTL's lookup, as Keyspace.find(touch=False) answers it: the milliseconds the
    key has left (at least 0), -1 if it has no expiry, -2 if it is missing."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef uint64_t off = cx_lookup(a.base, ks.tenant, pdb, <const uint8_t *>key, key_len, 0, 1,
                                  lfu_policy(a, ks.tenant), &a.rng,
                                  &a.checksum_failures if a.checksums else NULL)
    cdef int64_t at
    if not off:
        return -2
    at = CX_E(a.base, off).expire_at
    return -1 if at == -1 else max(at - cx_now_ms(), 0)


cdef int delete_key(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -1:
    """DEL of one key as Keyspace.delete does it: 1 if it was there."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef uint64_t off = cx_lookup(a.base, ks.tenant, pdb, <const uint8_t *>key, key_len, 0, 0,
                                  lfu_policy(a, ks.tenant), &a.rng, NULL)
    if not off:
        return 0
    cx_drop(a.base, off, 1)
    return 1


cdef inline void plain_buf(Buf *b, const char *data, Py_ssize_t n) noexcept:
    """b over bytes the caller keeps (nothing to release)."""
    b.ptr = <const uint8_t *>data
    b.len = n
    b.owned = False


cdef int set_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len, const char *value,
                    Py_ssize_t value_len) except -1:
    """SET key value without options (Keyspace.set); raises OutOfMemory as it does, but
    leaves the refusal for the general path to count."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef Buf k, v
    plain_buf(&k, key, key_len)
    plain_buf(&v, value, value_len)
    put(a, ks.tenant, pdb, &k, &v, -1, STRING_TYPE, False, False)
    return 0


cdef inline uint64_t write_lookup(Arena a, Keyspace ks, unsigned pdb, const char *key,
                                  Py_ssize_t key_len) noexcept:
    """A write's lookup, as Keyspace.find(stats=False) makes it (Redis's lookupKeyWrite):
    LRU touched, no hit or miss counted, an expired key deleted."""
    return cx_lookup(a.base, ks.tenant, pdb, <const uint8_t *>key, key_len, 1, 0,
                     lfu_policy(a, ks.tenant), &a.rng, NULL)


cdef inline bint holds_other_type(Arena a, Keyspace ks, unsigned pdb, const char *key,
                                  Py_ssize_t key_len, int type) noexcept:
    """key's entry, live or expired, is of another type (nothing touched or counted)."""
    cdef const uint8_t *k = <const uint8_t *>key
    cdef uint64_t off = cx_find(a.base, cx_key_hash(CX_SB(a.base), ks.tenant, pdb, k, key_len),
                                ks.tenant, pdb, k, key_len, NULL)
    return off != 0 and (CX_E(a.base, off).type & CX_TYPE_MASK) != type


cdef int incr_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len, long long delta,
                     long long *result) except -2:
    """INCRBY key delta as the general path runs it (a write's lookup, the TTL kept): 0 and
    the new value; -1, with nothing touched or stored, when key holds another type or a
    value that is not an integer, or the sum overflows, so the general path answers with
    its error. Raises OutOfMemory as Keyspace.set does, leaving the general path to count it."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef long long current = 0
    cdef uint64_t off
    cdef cx_entry* e
    cdef int64_t expire_at = -1
    cdef char text[24]
    cdef Buf k, v
    # (the one lookup: an expired key it deletes is absent to the general path as well, and
    # the LRU touch the general path repeats lands the key where it already is)
    off = write_lookup(a, ks, pdb, key, key_len)
    if off:
        e = CX_E(a.base, off)
        if (e.type & CX_TYPE_MASK) != STRING_TYPE:
            return -1
        if not cx_string2ll(<const char *>CX_VAL(e), e.value_len, &current):
            return -1
        expire_at = e.expire_at     # kept, read before making room may evict the entry
    if delta > 0 and current > LLONG_MAX - delta or delta < 0 and current < LLONG_MIN - delta:
        return -1
    result[0] = current + delta
    plain_buf(&k, key, key_len)
    plain_buf(&v, text, cx_ll2string(text, result[0]))
    put(a, ks.tenant, pdb, &k, &v, expire_at, STRING_TYPE, False, False)
    return 0


cdef int expire_key(Keyspace ks, int db, const char *key, Py_ssize_t key_len, int64_t ttl_ms) except -2:
    """EXPIRE without options, its time in milliseconds from now: 1 if key exists, deleted
    when ttl_ms is not positive, else given that expiry; 0 if it is missing; -1, with
    nothing touched, when now + ttl_ms overflows (the general path's error)."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef int64_t now = cx_now_ms()
    cdef uint64_t off
    if ttl_ms > LLONG_MAX - now:
        return -1
    off = write_lookup(a, ks, pdb, key, key_len)
    if not off:
        return 0
    if ttl_ms <= 0:
        cx_drop(a.base, off, 1)
    else:
        cx_set_expire(a.base, off, now + ttl_ms, now)
    return 1


# A hash's value (cxlredis/commands/hashes.py): a little-endian u32 field count, then per
# field u32 length + field bytes + u32 length + value bytes.
cdef inline uint32_t read_u32(const uint8_t *p) noexcept:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline void write_u32(uint8_t *p, uint32_t v) noexcept:
    p[0] = v & 0xff
    p[1] = (v >> 8) & 0xff
    p[2] = (v >> 16) & 0xff
    p[3] = v >> 24


cdef int find_field(const uint8_t *enc, uint64_t n, const char *field, Py_ssize_t field_len,
                    uint64_t *value_at) noexcept:
    """1 and the offset of field's value length word in the encoding enc[0..n), 0 if the
    hash has no such field, -1 if the encoding is cut short."""
    cdef uint64_t pos = 4, count, i, length
    if n < 4:
        return -1
    count = read_u32(enc)
    for i in range(count):
        if pos + 4 > n:
            return -1
        length = read_u32(enc + pos)
        if pos + 8 + length > n:
            return -1
        pos += 4
        if length == <uint64_t>field_len and memcmp(enc + pos, field, field_len) == 0:
            value_at[0] = pos + length
            return 1 if value_at[0] + 4 + read_u32(enc + value_at[0]) <= n else -1
        pos += length
        length = read_u32(enc + pos)
        if pos + 4 + length > n:
            return -1
        pos += 4 + length
    return 0


cdef int hash_get(Keyspace ks, int db, const char *key, Py_ssize_t key_len, const char *field,
                  Py_ssize_t field_len, Py_ssize_t max_len, const char **value,
                  Py_ssize_t *value_len) except -2:
    """HGET: 1 and the value (valid until the next write) when key's hash has field with a
    value shorter than max_len, 0 when the key or the field is missing (a hit or a miss
    counted for the key, as Keyspace.find does); -1, with nothing touched or counted, when
    key holds another type or the value goes by reference, for the general path."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef const uint8_t *k = <const uint8_t *>key
    cdef uint64_t off = cx_find(a.base, cx_key_hash(CX_SB(a.base), ks.tenant, pdb, k, key_len),
                                ks.tenant, pdb, k, key_len, NULL)
    cdef uint64_t at = 0
    cdef int found = 0
    cdef cx_entry* e
    if off:
        e = CX_E(a.base, off)
        if (e.type & CX_TYPE_MASK) != HASH_TYPE:
            return -1
        found = find_field(CX_VAL(e), e.value_len, field, field_len, &at)
        if found < 0 or found and read_u32(CX_VAL(e) + at) >= <uint64_t>max_len:
            return -1
    off = cx_lookup(a.base, ks.tenant, pdb, k, key_len, 1, 1, lfu_policy(a, ks.tenant), &a.rng,
                    &a.checksum_failures if a.checksums else NULL)
    if not off or not found:
        return 0
    e = CX_E(a.base, off)
    value[0] = <const char *>CX_VAL(e) + at + 4
    value_len[0] = read_u32(CX_VAL(e) + at)
    return 1


cdef int hash_set(Keyspace ks, int db, const char *key, Py_ssize_t key_len, const char *field,
                  Py_ssize_t field_len, const char *value, Py_ssize_t value_len) except -2:
    """HSET key field value as the general path runs it (a write's lookup, the hash
    re-encoded copy-on-write with its TTL kept): 1 if the field is new, 0 if its value was
    replaced; -1, with nothing touched or stored, when key holds another type (or field or
    value is too long for the encoding's u32 lengths). Raises
    OutOfMemory as Keyspace.set does, leaving the general path to count it."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef uint64_t old, fresh, n = 0, at = 0, old_value = 0, rest, size
    cdef int64_t now = cx_now_ms(), expire_at = -1
    cdef int found = 0
    cdef const uint8_t *src = NULL
    cdef uint8_t *dst
    cdef cx_entry* e
    # (lengths past a u32 word cannot be encoded: the general path answers those)
    if (<uint64_t>field_len > 0xffffffffu or <uint64_t>value_len > 0xffffffffu
            or holds_other_type(a, ks, pdb, key, key_len, HASH_TYPE)):
        return -1
    old = write_lookup(a, ks, pdb, key, key_len)
    if old:
        e = CX_E(a.base, old)
        n = e.value_len
        found = find_field(CX_VAL(e), n, field, field_len, &at)
        if found < 0:
            return -1
        expire_at = e.expire_at
        old_value = read_u32(CX_VAL(e) + at) if found else 0
    size = n - old_value + value_len if found else (n if old else 4) + 8 + field_len + value_len
    if old:
        cx_pin(a.base, old)         # making room must not evict the hash being rewritten
    try:
        fresh = reserve_or_raise(a, ks.tenant, key_len, size, now, False, False)
    finally:
        if old:
            cx_unpin(a.base, old)
    dst = CX_VAL(CX_E(a.base, fresh))
    if old:
        src = CX_VAL(CX_E(a.base, old))
    if found:
        rest = n - (at + 4 + old_value)
        memcpy(dst, src, at)
        write_u32(dst + at, value_len)
        memcpy(dst + at + 4, value, value_len)
        memcpy(dst + at + 4 + value_len, src + at + 4 + old_value, rest)
    else:
        if old:
            write_u32(dst, read_u32(src) + 1)
            memcpy(dst + 4, src + 4, n - 4)
        else:
            write_u32(dst, 1)
            n = 4
        write_u32(dst + n, field_len)
        memcpy(dst + n + 4, field, field_len)
        write_u32(dst + n + 4 + field_len, value_len)
        memcpy(dst + n + 8 + field_len, value, value_len)
    cx_commit(a.base, fresh, pdb, <const uint8_t *>key, key_len, expire_at, HASH_TYPE, 0, now, a.checksums)
    CX_SB(a.base).tmeta[ks.tenant].bytes_written += size
    return not found


cdef bint under_maxmemory(Arena a) except -1:
    """The heap is within maxmemory: Arena.evict_to_maxmemory would do nothing."""
    cdef cx_super* sb = CX_SB(open_base(a))
    return sb.heap_used <= (a.maxmem if 0 < a.maxmem < sb.heap_size else sb.heap_size)


cdef cx_entry* ks_entry(Keyspace ks, Arena a, uint64_t off, unsigned states) except NULL:
    """entry_at; a namespace reaches only its own tenant's entries (the Arena, the
    administrator's handle, reaches any, so the connection layer can unpin through it)."""
    cdef cx_entry* e = entry_at(a, off, states)
    if not ks.is_arena and e.tenant != ks.tenant:
        raise ValueError(f"offset {off} is not an entry of tenant {ks.tenant}")
    return e


include "_collections.pxi"


cdef class Entry:
    """A live entry a lookup found (Keyspace.find): the keyspace holding it and, kept
    from Python, its offset. Each read goes through that keyspace's checks (a live or
    pinned entry of its tenant), so an Entry held past its entry's end raises ValueError
    rather than reading a reused block."""
    cdef readonly object store           # the keyspace holding it (a granted one, for fall-through)
    cdef uint64_t off
    cdef readonly int type               # TYPE_*

    @property
    def value_len(self):
        return self.store.value_len(self.off)

    @property
    def expire_at(self):
        return self.store.expire_at(self.off)

    @property
    def idle_ms(self):
        return self.store.idle_ms(self.off)

    @property
    def generation(self):
        return self.store.generation(self.off)

    @property
    def block_size(self):
        return self.store.block_size(self.off)

    @property
    def lfu_counter(self):
        return self.store.lfu_counter(self.off)

    @property
    def mapped_offset(self):
        """Where a process mapping the arena's backing finds the value (the CXL family)."""
        return self.store.value_offset(self.off)

    def view(self):
        return self.store.view(self.off)

    def collection(self):
        """A list's, set's or sorted set's Collection, to read."""
        return self.store.collection_at(self.off)

    def value_bytes(self):
        return self.store.value_bytes(self.off)

    def pin(self):
        """Keep the bytes from being freed or reused; returns the token (arena, offset)
        whose `arena.unpin(offset)` lets them go (ReplyWriter's tokens)."""
        self.store.pin(self.off)
        return (self.store.arena, self.off)


cdef Entry new_entry(object store, uint64_t off, int type):
    cdef Entry e = Entry.__new__(Entry)
    e.store = store
    e.off = off
    e.type = type
    return e


cdef class Keyspace:
    """One tenant's keys, as (tenant, db, key): the keyed and keyspace operations of the
    arena, bound to a tenant. An Arena is the default tenant's (tenant 0) keyspace;
    Arena.namespace(id) gives another tenant's, a Namespace, which command handlers can
    use wherever they use the Arena. A namespace's offset methods (view, pin, ...) take
    only its own tenant's entries; the Arena's take any tenant's."""

    @property
    def databases(self):
        return (<Arena>self).ndb if self.is_arena else ks_arena(self).ndb

    # ---- reads ----
    def lookup(self, int db, key, bint touch=True, bint stats=True):
        """Offset of the live entry for key (0 if missing); expired entries are deleted."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef uint64_t off
        cdef Buf k
        buf_open(&k, key)
        # a read (stats) verifies the value's checksum, if it has one and arena-checksum is on
        off = cx_lookup(a.base, self.tenant, pdb, k.ptr, k.len, touch, stats, lfu_policy(a, self.tenant), &a.rng,
                        &a.checksum_failures if a.checksums and stats else NULL)
        buf_close(&k)
        return off

    def collection(self, int db, key, int type, bint touch=True, bint stats=True):
        """The list, set or sorted set (TYPE_*) at key, to read (a Collection), None if
        key is missing; WrongType if it holds another type. A lookup as find()'s."""
        cdef uint64_t off = self.lookup(db, key, touch, stats)
        cdef Arena a
        if not off:
            return None
        a = ks_arena(self)
        if CX_E(a.base, off).type & CX_TYPE_MASK != type:
            raise WrongType()
        return new_collection(self, a, off, type)

    def collection_at(self, uint64_t off):
        """The Collection of the live collection entry at off (Entry.collection)."""
        cdef Arena a = ks_arena(self)
        cdef cx_entry* e = ks_entry(self, a, off, LIVE_ONLY)
        if not cx_is_coll(e.type):
            raise WrongType()
        return new_collection(self, a, off, e.type & CX_TYPE_MASK)

    def write_collection(self, int db, key, int type, bint replace=False):
        """A write of the list, set or sorted set at key, made if missing (a Collection in
        a transaction: see Collection); WrongType if key holds another type. A write's
        lookup: the LRU touched, no hit or miss counted. replace: a new collection that,
        once committed, replaces whatever key holds (any type; its TTL gone), or deletes
        it when left empty: a *STORE's result, in one commit."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef uint64_t off = 0 if replace else self.lookup(db, key, True, False)
        if not cx_is_coll(type):
            raise ValueError(f"type {type} is not a collection's")
        if off and CX_E(a.base, off).type & CX_TYPE_MASK != type:
            raise WrongType()
        return open_collection(self, a, off, type, db, pdb, bytes(key), replace)

    def load_collection(self, int db, key, int type, flat, int64_t expire_at=-1):
        """Make missing key the collection of `type` whose flattened bytes (coll.h) are flat,
        expiring at expire_at (-1: never): the disk tier's bring-back. Returns its entry's
        offset; OutOfMemory, or ValueError for bytes that are no such collection."""
        cdef Arena a = ks_arena(self)
        cdef Collection c = self.write_collection(db, key, type)
        cdef uint64_t off
        if c.off:
            c.abort()
            raise ValueError("the key of a collection loaded must be missing")
        try:
            c.load_flat(flat)
        except BaseException:
            c.abort()
            raise
        c.commit()
        off = c.off
        if expire_at != -1:
            cx_set_expire(a.base, off, expire_at, cx_now_ms())
        return off

    def find(self, int db, key, bint touch=True, bint stats=True, int type=-1):
        """lookup() as handlers use it: the Entry for key, or None if it is missing;
        WrongType if `type` is given and the entry holds another."""
        cdef uint64_t off = self.lookup(db, key, touch, stats)
        cdef int found
        if not off:
            return None
        found = CX_E(ks_arena(self).base, off).type & CX_TYPE_MASK
        if type >= 0 and found != type:
            raise WrongType()
        return new_entry(self, off, found)

    def value_len(self, uint64_t off):
        return ks_entry(self, ks_arena(self), off, ANY_ALLOCATED).value_len

    def view(self, uint64_t off):
        """Read-only memoryview of the value, straight over the arena."""
        cdef cx_entry* e = ks_entry(self, ks_arena(self), off, SERVED)
        return PyMemoryView_FromMemory(<char*>CX_VAL(e), e.value_len, PyBUF_READ)

    def value_bytes(self, uint64_t off):
        cdef cx_entry* e = ks_entry(self, ks_arena(self), off, SERVED)
        return PyBytes_FromStringAndSize(<char*>CX_VAL(e), e.value_len)

    def entry_type(self, uint64_t off):
        return ks_entry(self, ks_arena(self), off, SERVED).type & CX_TYPE_MASK

    def expire_at(self, uint64_t off):
        return ks_entry(self, ks_arena(self), off, SERVED).expire_at

    def idle_ms(self, uint64_t off):
        cdef cx_entry* e = ks_entry(self, ks_arena(self), off, SERVED)
        return max(0, cx_now_ms() - e.last_access)

    def generation(self, uint64_t off):
        return ks_entry(self, ks_arena(self), off, SERVED).generation

    def block_size(self, uint64_t off):
        """Bytes the entry occupies in the heap (header, key, value, padding; a collection's
        trees too): MEMORY USAGE."""
        cdef cx_entry* e = ks_entry(self, ks_arena(self), off, SERVED)
        return CX_SIZE(e.size_state) + (cx_coll_of(e).bytes if cx_is_coll(e.type) else 0)

    def lfu_counter(self, uint64_t off):
        """OBJECT FREQ: the entry's logarithmic access counter, decayed to now."""
        return cx_lfu_value(ks_entry(self, ks_arena(self), off, SERVED), cx_now_ms())

    def key_generation(self, int db, key):
        """Generation of the live, unexpired entry for key; 0 if there is none (for WATCH)."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef uint64_t off
        cdef cx_entry* e
        cdef Buf k
        buf_open(&k, key)
        off = cx_find(a.base, cx_key_hash(CX_SB(a.base), self.tenant, pdb, k.ptr, k.len), self.tenant, pdb,
                      k.ptr, k.len, NULL)
        buf_close(&k)
        if not off:
            return 0
        e = CX_E(a.base, off)
        return 0 if cx_expired(e, cx_now_ms()) else e.generation

    def disk_identity(self, int db, key):
        """(tenant slot, physical db, key hash, may have a disk copy) of key in db: what
        identifies its copy in the disk tier."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef uint64_t h
        cdef Buf k
        key_open(&k, key)
        try:
            h = cx_key_hash(CX_SB(a.base), self.tenant, pdb, k.ptr, k.len)
        finally:
            buf_close(&k)
        return self.tenant, pdb, h, cx_spill_maybe(a.base, h)

    def pin(self, uint64_t off):
        """Keep the entry's bytes from being freed or reused until the matching unpin."""
        cdef Arena a = ks_arena(self)
        ks_entry(self, a, off, SERVED)
        cx_pin(a.base, off)

    def unpin(self, uint64_t off):
        cdef Arena a = ks_arena(self)
        if ks_entry(self, a, off, SERVED).pins == 0:
            raise ValueError(f"entry at {off} is not pinned")
        cx_unpin(a.base, off)

    # ---- writes: admitted against the tenant's quota and the arena's maxmemory ----
    def set(self, int db, key, value, int64_t expire_at=-1, int type=0, bint keep_ttl=False):
        """Store value under key (copy-on-write); returns the new entry's offset."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef uint64_t off
        cdef Buf k, v
        key_open(&k, key)
        try:
            buf_open(&v, value)
            try:
                off = put(a, self.tenant, pdb, &k, &v, expire_at, type, keep_ttl)
            finally:
                buf_close(&v)
        finally:
            buf_close(&k)
        return off

    def reserve(self, uint64_t nbytes, uint64_t key_cap):
        """An uncommitted block for an nbytes value and a key of up to key_cap bytes, on
        this tenant's bill from now on. A failure is not counted as a rejected write:
        the connection layer falls back to a buffer and the command's own write is what
        gets rejected."""
        cdef Arena a = ks_arena(self)
        cdef cx_cfg cfg = eviction_cfg(a)
        cdef uint64_t off
        if key_cap > MAX_KEY_BYTES:
            raise ValueError("key_cap above 512 MiB")
        off = cx_reserve(a.base, self.tenant, key_cap + checksum_room(a), nbytes, nbytes, &cfg, cx_now_ms())
        if not off:
            raise_oom(a, self.tenant, nbytes, False)
        return off

    def slot(self, uint64_t off):
        """Writable memoryview of a reserved block's value area (nbytes long)."""
        cdef cx_entry* e = ks_entry(self, ks_arena(self), off, RESERVED_ONLY)
        return PyMemoryView_FromMemory(<char*>CX_VAL(e), e.value_len, PyBUF_WRITE)

    def receive_view(self, uint64_t off):
        """slot(off), and the 2 bytes after the value where the block has room for them
        (it mostly does: blocks come in 64 bytes): a request's CRLF after the value
        lands there (RequestParser.set_target), in the read that brings the value's end."""
        cdef cx_entry* e = ks_entry(self, ks_arena(self), off, RESERVED_ONLY)
        cdef uint64_t n = e.value_len + 2 if cx_value_cap(e) >= e.value_len + 2 else e.value_len
        return PyMemoryView_FromMemory(<char*>CX_VAL(e), n, PyBUF_WRITE)

    def commit(self, uint64_t off, int db, key, int64_t expire_at=-1, int type=0, bint keep_ttl=False):
        """Make a filled reservation the live entry for key; returns off. The reservation
        must have been made by this tenant (it was admitted against its quota then)."""
        cdef Buf k
        buf_open(&k, key)
        try:
            commit_reserved(self, off, db, k.ptr, k.len, expire_at, type, keep_ttl)
        finally:
            buf_close(&k)
        return off

    def release(self, uint64_t off):
        """Free an uncommitted reservation."""
        cdef Arena a = ks_arena(self)
        ks_entry(self, a, off, RESERVED_ONLY)
        cx_release(a.base, off)

    def append(self, int db, key, data):
        """APPEND: returns the new length; keeps the TTL, creates the key if missing."""
        cdef Arena a = ks_arena(self)
        cdef unsigned tenant = self.tenant
        cdef unsigned pdb = ks_pdb(a, tenant, db)
        cdef uint64_t off, fresh, old_len, new_len
        cdef cx_entry* e
        cdef cx_entry* ne
        cdef cx_cfg cfg
        cdef int64_t now = cx_now_ms()
        cdef Buf k, d
        key_open(&k, key)
        try:
            buf_open(&d, data)
            try:
                off = cx_lookup(a.base, tenant, pdb, k.ptr, k.len, 1, 0, lfu_policy(a, tenant), &a.rng, NULL)
                if not off:
                    put(a, tenant, pdb, &k, &d, -1, TYPE_STRING, False)
                    return d.len
                e = CX_E(a.base, off)
                old_len = e.value_len
                new_len = old_len + d.len
                if d.len == 0:
                    return old_len
                if new_len <= cx_value_cap(e):
                    # in place: bytes past the old length are not visible until value_len grows
                    copy_bytes(CX_VAL(e) + old_len, d.ptr, d.len)
                    e.value_len = new_len
                    cx_dataset_add(a.base, e, d.len)
                    cx_reseal(a.base, off)
                    CX_SB(a.base).tmeta[tenant].bytes_written += d.len
                    return new_len
                cx_pin(a.base, off)      # reserving may evict; not this entry
                # room to grow (like Redis's greedy strings), but only if it needs no eviction
                cfg = eviction_cfg(a)
                cfg.no_evict = 1
                fresh = cx_reserve(a.base, tenant, k.len, new_len * 2 if new_len < (1 << 20) else new_len + (1 << 20),
                                   new_len, &cfg, now)
                if not fresh:
                    cfg = eviction_cfg(a)
                    fresh = cx_reserve(a.base, tenant, k.len, new_len, new_len, &cfg, now)
                if not fresh:
                    cx_unpin(a.base, off)
                    raise_oom(a, tenant, new_len)
                ne = CX_E(a.base, fresh)
                copy_bytes(CX_VAL(ne), CX_VAL(e), old_len)
                copy_bytes(CX_VAL(ne) + old_len, d.ptr, d.len)
                cx_commit(a.base, fresh, pdb, k.ptr, k.len, e.expire_at, e.type, 0, now, a.checksums)
                cx_unpin(a.base, off)     # frees the old version unless a reader holds it
                CX_SB(a.base).tmeta[tenant].bytes_written += d.len
                return new_len
            finally:
                buf_close(&d)
        finally:
            buf_close(&k)

    def setrange(self, int db, key, uint64_t offset, data):
        """SETRANGE: zero-pads, keeps the TTL, creates the key unless data is empty.
        Returns the new length. Bytes a reader may hold are never rewritten in place."""
        cdef Arena a = ks_arena(self)
        cdef unsigned tenant = self.tenant
        cdef unsigned pdb = ks_pdb(a, tenant, db)
        cdef uint64_t off, fresh, old_len, new_len, end
        cdef cx_entry* e
        cdef cx_entry* ne
        cdef int64_t now = cx_now_ms()
        cdef Buf k, d
        key_open(&k, key)
        try:
            buf_open(&d, data)
            try:
                end = offset + d.len
                off = cx_lookup(a.base, tenant, pdb, k.ptr, k.len, 1, 0, lfu_policy(a, tenant), &a.rng, NULL)
                if not off:
                    if d.len == 0:
                        return 0
                    fresh = reserve_or_raise(a, tenant, k.len, end, now)
                    ne = CX_E(a.base, fresh)
                    memset(CX_VAL(ne), 0, offset)
                    copy_bytes(CX_VAL(ne) + offset, d.ptr, d.len)
                    cx_commit(a.base, fresh, pdb, k.ptr, k.len, -1, TYPE_STRING, 0, now, a.checksums)
                    CX_SB(a.base).tmeta[tenant].bytes_written += d.len
                    return end
                e = CX_E(a.base, off)
                old_len = e.value_len
                if d.len == 0:
                    return old_len
                new_len = max(old_len, end)
                if offset >= old_len and new_len <= cx_value_cap(e):
                    memset(CX_VAL(e) + old_len, 0, offset - old_len)
                    copy_bytes(CX_VAL(e) + offset, d.ptr, d.len)
                    e.value_len = new_len
                    cx_dataset_add(a.base, e, new_len - old_len)
                    cx_reseal(a.base, off)
                    CX_SB(a.base).tmeta[tenant].bytes_written += d.len
                    return new_len
                cx_pin(a.base, off)
                try:
                    fresh = reserve_or_raise(a, tenant, k.len, new_len, now)
                    ne = CX_E(a.base, fresh)
                    copy_bytes(CX_VAL(ne), CX_VAL(e), old_len)
                    if offset > old_len:
                        memset(CX_VAL(ne) + old_len, 0, offset - old_len)
                    copy_bytes(CX_VAL(ne) + offset, d.ptr, d.len)
                    cx_commit(a.base, fresh, pdb, k.ptr, k.len, e.expire_at, e.type, 0, now, a.checksums)
                finally:
                    cx_unpin(a.base, off)
                CX_SB(a.base).tmeta[tenant].bytes_written += d.len
                return new_len
            finally:
                buf_close(&d)
        finally:
            buf_close(&k)

    def set_expire(self, Entry entry, int64_t at_ms):
        """Set entry's absolute expiry in ms (-1 = persist); bumps the generation."""
        cdef Arena a = ks_arena(self)
        if entry.store is not self:
            raise ValueError(f"the entry found by {entry.store!r} is not an entry of tenant {self.tenant} "
                             "in this keyspace")
        ks_entry(self, a, entry.off, LIVE_ONLY)
        cx_set_expire(a.base, entry.off, at_ms, cx_now_ms())

    def set_recency(self, Entry entry, int64_t idle_ms=-1, int lfu=-1):
        """RESTORE's IDLETIME / FREQ: make entry idle for idle_ms, and/or give it the LFU
        counter lfu (0..255); a negative one is left as it is. Its LRU position stays."""
        cdef Arena a = ks_arena(self)
        if entry.store is not self:
            raise ValueError(f"the entry found by {entry.store!r} is not an entry of tenant {self.tenant} "
                             "in this keyspace")
        if lfu > 255:
            raise ValueError("an LFU counter is at most 255")
        cx_set_recency(ks_entry(self, a, entry.off, LIVE_ONLY), idle_ms, lfu, cx_now_ms())

    def delete(self, int db, key):
        cdef Arena a = ks_arena(self)
        cdef uint64_t off = self.lookup(db, key, False, False)
        if not off:
            return False
        cx_drop(a.base, off, 1)
        return True

    def copy(self, int db, key, int dstdb, dstkey, bint replace=False):
        """COPY: the value (and TTL and type) copied by memcpy, a collection's trees cloned;
        False if the source is missing or the destination exists and replace is false."""
        cdef Arena a = ks_arena(self)
        cdef unsigned spdb = ks_pdb(a, self.tenant, db), dpdb = ks_pdb(a, self.tenant, dstdb)
        cdef uint64_t src, fresh
        cdef cx_entry* e
        cdef Buf dk
        cdef int64_t now = cx_now_ms()
        src = self.lookup(db, key, True, False)
        if not src:
            return False
        if not replace and self.lookup(dstdb, dstkey, False, False):
            return False
        e = CX_E(a.base, src)
        key_open(&dk, dstkey)
        try:
            cx_pin(a.base, src)       # not evicted to make room for its own copy
            try:
                fresh = reserve_copy(a, self.tenant, src, &dk, now)
                if cx_is_coll(e.type):
                    try:
                        clone_collection(a, self.tenant, src, fresh)
                    except BaseException:
                        cx_release(a.base, fresh)
                        raise
                cx_commit(a.base, fresh, dpdb, dk.ptr, dk.len, e.expire_at, e.type, 0, now, a.checksums)
                CX_SB(a.base).tmeta[self.tenant].bytes_written += e.value_len
            finally:
                cx_unpin(a.base, src)
        finally:
            buf_close(&dk)
        return True

    def rename(self, int db, key, int dstdb, dstkey):
        """RENAME/MOVE: keeps the TTL, replaces the destination; False if key is missing.
        The value stays where it is when the new key fits the entry's key area."""
        cdef Arena a = ks_arena(self)
        cdef unsigned spdb = ks_pdb(a, self.tenant, db), dpdb = ks_pdb(a, self.tenant, dstdb)
        cdef uint64_t src, fresh
        cdef cx_entry* e
        cdef Buf dk
        cdef int64_t now = cx_now_ms()
        src = self.lookup(db, key, False, False)
        if not src:
            return False
        e = CX_E(a.base, src)
        key_open(&dk, dstkey)
        try:
            if spdb == dpdb and <uint64_t>dk.len == e.key_len and memcmp(CX_KEY(e), dk.ptr, dk.len) == 0:
                return True
            if <uint64_t>dk.len <= cx_key_room(e) and dk.len <= CX_RENAME_KEY_MAX:
                cx_rename_in_place(a.base, src, dpdb, dk.ptr, dk.len)
                return True
            cx_pin(a.base, src)       # not evicted to make room for its own copy
            try:
                fresh = reserve_copy(a, self.tenant, src, &dk, now, True)
                cx_rename_by_copy(a.base, src, fresh, dpdb, dk.ptr, dk.len, now, a.checksums)
            finally:
                cx_unpin(a.base, src)     # frees the source unless a reader holds it
        finally:
            buf_close(&dk)
        return True

    # ---- keyspace: this tenant's keys only ----
    def dbsize(self, int db):
        cdef Arena a = ks_arena(self)
        return cx_db_keys(a.base, self.tenant)[ks_pdb(a, self.tenant, db)]

    def db_expires(self, int db):
        cdef Arena a = ks_arena(self)
        return cx_db_volatile(a.base, self.tenant)[ks_pdb(a, self.tenant, db)]

    def flushdb(self, int db):
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        drop_all(a, self.tenant, pdb)
        if a.tier is not None:
            a.tier.forget(self.tenant, pdb)

    def flushall(self):
        cdef Arena a = ks_arena(self)
        drop_all(a, self.tenant, -1)
        if a.tier is not None:
            a.tier.forget(self.tenant)

    def scan(self, int db, uint64_t cursor, Py_ssize_t count=10, match=None, int type=-1):
        """One SCAN step: (next_cursor, keys). The cursor is a bucket number; every key
        present for the whole scan is returned at least once. Expired keys are skipped."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db), tenant = self.tenant
        cdef char* base = a.base
        cdef cx_super* sb = CX_SB(base)
        cdef uint64_t* bk = CX_BUCKETS(base)
        cdef uint64_t mask = sb.index_buckets - 1, b = cursor, cur, visited = 0
        cdef Py_ssize_t examined = 0
        cdef int64_t now = cx_now_ms()
        cdef cx_entry* e
        cdef Buf m
        cdef bint use_match = False
        cdef list out = []
        if cursor > mask:
            return 0, out
        if match is not None:
            buf_open(&m, match)
            use_match = not (m.len == 1 and m.ptr[0] == b'*')
        try:
            while True:
                cur = bk[b]
                while cur:
                    e = CX_E(base, cur)
                    if e.db == pdb and e.tenant == tenant:
                        examined += 1
                        if (not cx_expired(e, now) and (type < 0 or (e.type & CX_TYPE_MASK) == type)
                                and (not use_match or cx_glob(m.ptr, m.len, CX_KEY(e), e.key_len, 0))):
                            out.append(key_of(e))
                    cur = e.chain_next
                b += 1
                visited += 1
                if b > mask:
                    b = 0
                    break
                if examined >= count or visited >= SCAN_BUCKET_CAP:
                    break
        finally:
            if match is not None:
                buf_close(&m)
        return b, out

    def keys(self, int db, pattern):
        """KEYS: every unexpired key of db matching the glob pattern."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db), tenant = self.tenant
        cdef char* base = a.base
        cdef uint64_t* bk = CX_BUCKETS(base)
        cdef uint64_t b, cur, nb = CX_SB(base).index_buckets
        cdef int64_t now = cx_now_ms()
        cdef cx_entry* e
        cdef Buf m
        cdef list out = []
        buf_open(&m, pattern)
        try:
            all_keys = m.len == 1 and m.ptr[0] == b'*'
            for b in range(nb):
                cur = bk[b]
                while cur:
                    e = CX_E(base, cur)
                    if (e.db == pdb and e.tenant == tenant and not cx_expired(e, now)
                            and (all_keys or cx_glob(m.ptr, m.len, CX_KEY(e), e.key_len, 0))):
                        out.append(key_of(e))
                    cur = e.chain_next
        finally:
            buf_close(&m)
        return out

    def count_keys_in_slot(self, int db, unsigned slot):
        """The number of unexpired keys of db in cluster slot `slot` (CLUSTER
        COUNTKEYSINSLOT): the cost of the slot's keys, from the slot index."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef int64_t found
        if slot >= CX_CLUSTER_SLOTS:
            raise ValueError("no such slot")
        if slots_indexed(a):
            found = cx_slot_entries(a.base, slot, self.tenant, pdb, cx_now_ms(), NULL, -1)
            if found >= 0:
                return found
        return len(walk_slot(a, self.tenant, pdb, slot, -1))

    def keys_in_slot(self, int db, unsigned slot, Py_ssize_t count=-1):
        """The unexpired keys of db in cluster slot `slot`, at most count of them (all when
        count < 0): CLUSTER GETKEYSINSLOT, and the keys a node drops with a slot another
        node took. From the slot index; a walk of the whole index only if it has none."""
        cdef Arena a = ks_arena(self)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef int64_t found, i
        cdef uint64_t* offs
        if slot >= CX_CLUSTER_SLOTS:
            raise ValueError("no such slot")
        if slots_indexed(a):
            found = cx_slot_entries(a.base, slot, self.tenant, pdb, cx_now_ms(), NULL, count)
            if found >= 0:
                offs = <uint64_t*>PyMem_Malloc(max(found, 1) * sizeof(uint64_t))
                if offs == NULL:
                    raise MemoryError()
                try:
                    # the same walk again, now storing: nothing ran in between
                    found = cx_slot_entries(a.base, slot, self.tenant, pdb, cx_now_ms(), offs, found)
                    return [key_of(CX_E(a.base, offs[i])) for i in range(found)]
                finally:
                    PyMem_Free(offs)
        return walk_slot(a, self.tenant, pdb, slot, count)

    def random_key(self, int db):
        """A random unexpired key of db, or None; expired keys met on the way are deleted."""
        cdef Arena a = ks_arena(self)
        cdef cx_filter f
        cdef uint64_t off
        cdef cx_super* sb = CX_SB(a.base)
        f.tenant = self.tenant
        f.db = ks_pdb(a, self.tenant, db)
        f.volatile_only = 0
        f.unpinned_only = 0
        while True:
            off = cx_random_entry(a.base, &a.rng, &f)
            if not off:
                return None
            if not cx_expired(CX_E(a.base, off), cx_now_ms()):
                return key_of(CX_E(a.base, off))
            cx_drop(a.base, off, 1)
            sb.expired += 1
            sb.tenants[self.tenant].expired += 1

    # ---- metering the arena cannot see: reported by the connection layer ----
    def add_command(self, uint64_t n=1):
        """Count n commands run by this tenant."""
        CX_SB(ks_arena(self).base).tmeta[self.tenant].commands += n

    def add_bytes_in(self, uint64_t n):
        """Count n bytes of requests received from this tenant's clients."""
        CX_SB(ks_arena(self).base).tmeta[self.tenant].bytes_in += n

    def add_bytes_out(self, uint64_t n):
        """Count n bytes of replies sent to this tenant's clients."""
        CX_SB(ks_arena(self).base).tmeta[self.tenant].bytes_out += n

    # ---- co-located access (the CXL command family) ----
    def value_offset(self, uint64_t off):
        """Offset from the start of the mapping of the value of a live, zombie or reserved
        entry: where a process mapping the same backing reads it or fills it."""
        cdef Arena a = ks_arena(self)
        cdef cx_entry* e = ks_entry(self, a, off, ANY_ALLOCATED)
        return <uint64_t>(CX_VAL(e) - <uint8_t*>a.base)


cdef class Arena(Keyspace):
    """A cache inside one shared mapping; see docs/internals.md section 1.

    As a Keyspace it is the default tenant's (tenant 0): its keyed and keyspace methods
    see only tenant 0's keys, as a single-tenant arena did. It also manages the tenants
    (create_tenant, namespace, ...) and the arena as a whole (stats, check, maxmemory).

    Tenants. Up to 63 besides the default one, each a slot in the superblock: name,
    quota (bytes of its blocks, 0 = none), guarantee (bytes no other tenant's pressure
    evicts, 0 = none; with a quota above it, the tenant may borrow up to the quota
    while memory is idle), eviction policy (its own or the arena's),
    LRU lists, key counts per db and counters, so all of it survives a restart (a
    rebuild recounts keys and bytes; monotonic counters are kept as they are). A
    tenant's used_bytes is every block on its bill: live entries, reservations (from
    reserve() on) and pinned entries deleted meanwhile (until their last unpin).

    Admission of a write of B block bytes by tenant T (reserve, set, append, setrange,
    copy, rename):
      - B > T's quota or B > maxmemory: OutOfMemory at once, nothing evicted;
      - while T's used_bytes + B > T's quota: evict T's own entries by T's policy
        (OutOfMemory, nothing evicted, if that cannot make room, e.g. noeviction);
      - while the arena's heap_used + B > maxmemory (or no free block fits): evict,
        tier by tier, from (1) tenants over their quota, the largest overage first,
        down to their quota; (2) tenants borrowing, the most first: those without a
        quota (tenant 0 unless it has one) and those with a guarantee past it, down to
        it (counted as reclaimed when T writes within its own guarantee); (3) only when
        no tenant of tiers 1-2 has anything its policy lets go: tenants within their
        quota that have no guarantee, the highest used/quota first; (4) T's own
        entries. Each tenant's own policy picks its entry; a noeviction tenant is never
        evicted.
    So a tenant within its quota loses nothing while an over-quota or quota-less
    tenant can give memory back, a tenant within its guarantee never loses an entry
    to another's write, and one tenant's quota pressure evicts only its own entries.
    Lowering a quota evicts nothing by itself: the tenant's next write does.
    A failed write (not a failed reserve) counts as a rejected write of the tenant.
    """

    def __cinit__(self):
        self.base = NULL
        self.fd = -1
        self.is_arena = True
        self.warmer = NULL
        self.tier = None

    def __init__(self, path, size, *, offset=0, int databases=16, bint reset=False, bint hugepages=False,
                 bint prefault=False, int numa_node=-1, uint64_t warm_ahead=0,
                 size_option="arena-size"):
        """The arena is the `size` bytes at `offset` (arena-offset) in the file or device at
        path: the whole file at offset 0, else a region of it, other arenas having theirs.
        warm_ahead: bytes past the allocator's fresh memory a thread faults in before
        writes need them (ext/arena/warm.h; at most a sixteenth of the arena, 0 = none).
        size_option: what sets `size`, for the message when the backing cannot hold it."""
        cdef bytes bpath = os.fsencode(path)
        cdef uint64_t nbytes, start, file_size = 0, avail = 0, total = 0, held = 0, grain = 0
        cdef int fd = -1, is_chr = 0, created = 0, err, locked = 0
        cdef char* base = NULL
        if self.base != NULL:
            raise ArenaError("this Arena is already attached")
        if not 1 <= databases <= CX_NDB:
            raise ValueError(f"databases must be 1..{CX_NDB}")
        self.path = os.fsdecode(bpath)
        if size < <int64_t>MIN_ARENA_BYTES:
            raise ArenaError(f"{self.path}: arena size {size} is below the minimum of 4 MiB")
        if offset < 0:
            raise ArenaError(f"{self.path}: arena-offset {offset} is negative")
        nbytes, start = size, offset
        err = cx_os_open(bpath, &fd, &file_size, &is_chr, &created)
        if err:
            raise ArenaError(f"{self.path}: cannot open: {os.strerror(err)}")
        try:
            if not is_chr:
                err = cx_os_space(fd, &avail, &total, &grain)
                if err:
                    raise ArenaError(f"{self.path}: cannot query its file system: {os.strerror(err)}")
            check_offset(self.path, start, is_chr, hugepages, grain)
            if grain > <uint64_t>os.sysconf("SC_PAGESIZE") and nbytes % grain:
                # (a hugetlbfs file cannot be sized otherwise: ftruncate says only EINVAL)
                raise ArenaError(f"{self.path}: the arena's {nbytes} bytes (set by {size_option}) are not a "
                                 f"multiple of {grain} bytes, the huge page size of its file system")
            err = cx_os_lock(fd, start, nbytes)
            if err == EAGAIN:
                raise ArenaError(f"arena {self.path} is in use by another process")
            if err:
                raise ArenaError(f"{self.path}: cannot lock: {os.strerror(err)}")
            if is_chr:
                check_device_size(self.path, fd, start, nbytes, size_option)
            else:
                if start and start + nbytes > total:
                    raise ArenaError(
                        f"{self.path}: the arena's {nbytes} bytes at arena-offset {start} (set by "
                        f"{size_option} and arena-offset) end beyond its backing: the file system there "
                        f"holds {total} bytes ({total / 1048576:.1f} MiB); lower {size_option} or arena-offset")
                held = cx_os_held(fd, start, nbytes)
                # (a file system without a size limit says UINT64_MAX bytes free)
                if nbytes > held and nbytes - held > avail:
                    raise ArenaError(
                        f"{self.path}: the arena's {nbytes} bytes (set by {size_option}) do not fit its "
                        f"backing: the file system there has {avail} bytes free ({avail / 1048576:.1f} MiB) "
                        f"and the {'region' if start else 'file'} holds {held}; lower {size_option} or "
                        f"free space there")
                if (not start and file_size != nbytes and file_size != 0
                        and not (file_size > nbytes and holds_first_region(fd, nbytes))):
                    # the whole file is the arena, formatted for another size
                    if not reset:
                        raise ArenaError(
                            f"{self.path}: the arena file is {file_size} bytes but the arena size is "
                            f"{nbytes} bytes; set arena-reset yes to re-format it at the new size "
                            f"(this discards its contents)")
                    err = cx_os_locked(fd, nbytes, 0, &locked)
                    if err:
                        raise ArenaError(f"{self.path}: cannot test its locks: {os.strerror(err)}")
                    if locked:
                        raise ArenaError(
                            f"{self.path}: the arena file is {file_size} bytes and servers at other "
                            f"arena-offsets use it beyond the arena's {nbytes} bytes: it cannot be "
                            f"re-formatted at the new size while they run")
                    err = cx_os_truncate(fd, nbytes)
                elif file_size < start + nbytes:
                    err = cx_os_truncate(fd, start + nbytes)    # never shorter: others' regions
                if err:
                    raise ArenaError(f"{self.path}: cannot resize to {start + nbytes} bytes: "
                                     f"{os.strerror(err)}")
            err = cx_os_map(fd, start, nbytes, &base)
            if err:
                raise ArenaError(f"{self.path}: cannot map {nbytes} bytes: {os.strerror(err)}")
        except BaseException:
            close_fd(fd)
            if created:
                os.unlink(bpath)
            raise
        self.offset = start
        self.base = base
        self.map_size = nbytes
        self.fd = fd
        self.grain = grain
        self.backing_errno = 0
        self.releases_pages = grain != 0 and not prefault
        self.ndb = databases
        self.policy_id = CX_NOEVICTION
        self.samples = 5
        self.maxmem = 0
        self.rng = int.from_bytes(os.urandom(8), "little") | 1
        try:
            self._attach(reset, hugepages, prefault, numa_node)
        except BaseException:
            cx_os_unmap(self.base, self.map_size, self.fd, 0)
            self.base = NULL
            if created:
                os.unlink(bpath)
            raise
        if self.releases_pages and warm_ahead:
            # without one (an old kernel, no thread) the writes fault their pages themselves
            self.warmer = cx_warmer_start(self.base, self.map_size, min(warm_ahead, self.map_size // 16))

    cdef int _attach(self, bint reset, bint hugepages, bint prefault, int numa_node) except -1:
        cdef cx_super* sb = CX_SB(self.base)
        cdef int err, verdict
        cdef int64_t dropped
        if numa_node >= 0:
            err = cx_os_bind(self.base, self.map_size, numa_node)
            if err:
                raise ArenaError(f"{self.path}: cannot bind the arena to NUMA node {numa_node}: "
                                 f"{os.strerror(err)}")
        if hugepages:
            cx_os_hugepages(self.base, self.map_size)
        self._back_metadata(prefault)
        self.dropped_entries = 0
        verdict = CX_ZERO if reset else cx_validate(self.base, self.map_size)
        if verdict == CX_ZERO:
            cx_format(self.base, self.map_size, int.from_bytes(os.urandom(8), "little"))
            self.recovery = "new"
        elif verdict == CX_ZEROED_SUPER:
            raise ArenaError(f"{self.path}: corrupt superblock (zeroed, but the heap holds data; "
                             f"arena-reset yes re-formats)")
        elif verdict == CX_BAD_MAGIC:
            raise ArenaError(f"{self.path}: not a cxlredis arena (bad magic)")
        elif verdict == CX_BAD_VERSION:
            raise ArenaError(f"{self.path}: layout version {sb.version}, this build reads "
                             f"{CX_LAYOUT_VERSION} (arena-reset yes re-formats)")
        elif verdict == CX_BAD_CHECKSUM:
            raise ArenaError(f"{self.path}: corrupt superblock (header checksum mismatch)")
        elif verdict == CX_BAD_SIZE:
            raise ArenaError(f"{self.path}: corrupt superblock (formatted for {sb.arena_size} bytes, "
                             f"mapped {self.map_size} bytes; arena-reset yes re-formats)")
        elif verdict == CX_BAD_GEOMETRY:
            raise ArenaError(f"{self.path}: corrupt superblock (index/heap offsets inconsistent)")
        elif sb.clean:
            self.recovery = "clean"
        else:
            with nogil:
                dropped = cx_rebuild(self.base)
            if dropped < 0:
                raise MemoryError("not enough memory to rebuild the arena's LRU lists")
            self.dropped_entries = dropped
            self.recovery = "rebuilt"
        cx_upgrade(self.base)
        # cleared while attached: a process that dies now leaves it cleared
        cx_store(&sb.clean, 0)
        if prefault:
            with nogil:
                cx_os_prefault(self.base, self.map_size)
        return 0

    cdef int _back_metadata(self, bint whole) except -1:
        """Allocate the backing's pages for what is written without cx_heap_alloc: the
        superblock, the index and the heap's first block header (all of it if whole, for
        arena-prefault), and the page of the heap's last footer; ArenaError if it is full."""
        cdef uint64_t size = self.map_size, heap_off = cx_heap_off_for(size)
        cdef uint64_t last = heap_off + ((size - heap_off) & ~<uint64_t>63) - 8
        cdef int err
        if not self.grain:
            return 0
        with nogil:
            err = cx_back_range(self.base, self.fd, self.offset, self.grain, size, 0,
                                size if whole else heap_off + CX_HDR)
            if not err:
                err = cx_back_range(self.base, self.fd, self.offset, self.grain, size, last, 8)
        if err:
            raise ArenaError(f"{self.path}: its backing cannot supply the arena's "
                             f"{'pages' if whole else 'superblock and index'}: {os.strerror(err)}")
        return 0

    def index_slots(self):
        """Index the keys by cluster slot from now on (a walk of the index now; then each
        index change keeps it): whether there was memory for it. Without it, the slot
        methods walk the whole index each time."""
        open_base(self)
        return slots_indexed(self)

    def close(self, bint clean=True):
        """Detach. clean=True releases this process's pins and reservations, sets the
        clean-shutdown flag and msyncs, so the next attach trusts the structures."""
        if self.base == NULL:
            return
        if clean:
            cx_release_process_state(self.base)
            cx_store(&CX_SB(self.base).clean, 1)
        cx_slots_disable(self.base)
        with nogil:
            cx_warmer_stop(self.warmer)
            cx_os_unmap(self.base, self.map_size, self.fd, clean)
        self.warmer = NULL
        self.base = NULL
        self.fd = -1

    def sync(self):
        """SAVE: write every page of the mapping back to the backing and wait for it
        (msync). The GIL is released meanwhile, so BGSAVE runs it on a thread of its own.
        OSError if the backing cannot take them."""
        cdef char* base = open_base(self)
        cdef uint64_t size = self.map_size
        cdef int err
        with nogil:
            err = cx_os_sync(base, size)
        if err:
            raise OSError(err, os.strerror(err), self.path)

    def privatize(self):
        """Keep this process's writes to itself (a forked child's, SCRIPT DEBUG YES): the
        mapping becomes a private copy of the same bytes at the same address, and the
        backing's pages are neither allocated nor punched any more (a punch would reach the
        file the server maps). The warmer's thread stayed in the parent: it is forgotten;
        so is the disk tier, whose files are the parent's (nothing spills or is dropped
        here). OSError if the backing cannot be mapped so (a device)."""
        cdef char* base = open_base(self)
        cdef int err = cx_os_map_private(self.fd, self.offset, self.map_size, base)
        if err:
            raise OSError(err, os.strerror(err), self.path)
        if cx_spill.base == base:
            cx_spill_forget()
        self.tier = None
        self.warmer = NULL
        self.grain = 0
        self.releases_pages = False

    def __dealloc__(self):
        # never closed: leave the clean flag cleared so the next attach rebuilds
        if self.base != NULL:
            cx_slots_disable(self.base)
            cx_warmer_stop(self.warmer)
            cx_os_unmap(self.base, self.map_size, self.fd, 0)
            self.base = NULL

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def arena(self):
        """The arena an entry offset of this keyspace belongs to: itself (as Namespace.arena
        is its owner), so callers need not ask which kind of keyspace they hold."""
        return self

    @property
    def size(self):
        return self.map_size

    @property
    def closed(self):
        return self.base == NULL

    # ---- configuration ----
    @property
    def maxmemory(self):
        return self.maxmem

    @maxmemory.setter
    def maxmemory(self, value):
        if value < 0:
            raise ValueError("maxmemory must be >= 0")
        self.maxmem = value

    def evict_to_maxmemory(self):
        """Redis's performEvictions, run before each command: evict per policy until the
        heap is within maxmemory. False when it is still over and nothing may be evicted."""
        cdef cx_cfg cfg = eviction_cfg(self)
        return cx_evict_to_limit(self.base, &cfg, cx_now_ms()) == 1

    @property
    def policy(self):
        return POLICY_NAMES[self.policy_id]

    @policy.setter
    def policy(self, name):
        self.policy_id = policy_number(name)

    @property
    def maxmemory_samples(self):
        return self.samples

    @maxmemory_samples.setter
    def maxmemory_samples(self, int value):
        if value < 1:
            raise ValueError("maxmemory_samples must be >= 1")
        self.samples = value


    # ---- the default tenant's SWAPDB; active expiry of every tenant ----
    def swapdb(self, int a, int b):
        """SWAPDB of the default tenant's dbs (the logical -> physical map is arena-wide,
        so only tenant 0 goes through it)."""
        cdef cx_super* sb = CX_SB(open_base(self))
        cdef unsigned pa = ks_pdb(self, 0, a), pb = ks_pdb(self, 0, b)
        sb.db_map[a] = pb
        sb.db_map[b] = pa

    @property
    def address(self):
        """Where the arena is mapped in this process (what take_dropped_keys names)."""
        return <uintptr_t>open_base(self)

    def logical_db(self, unsigned pdb):
        """The default tenant's logical db that physical db pdb holds (SWAPDB's map)."""
        cdef cx_super* sb = CX_SB(open_base(self))
        for db in range(self.ndb):
            if sb.db_map[db] == pdb:
                return db
        return pdb

    def expire_cycle(self, int64_t budget_us):
        """Active expiry step: delete due entries (of any tenant) from the expiry wheel
        for about budget_us microseconds (at least 32 entries are looked at), resuming
        where the last step stopped. Returns how many were deleted."""
        return cx_expire_cycle(open_base(self), cx_now_ms(), budget_us * 1000)

    # ---- tenants ----
    @property
    def identity(self):
        """What tells this arena from any other, including one formatted again in its
        place: its hash seed and the time it was formatted, as text."""
        cdef cx_super* sb = CX_SB(open_base(self))
        return f"{sb.hash_seed:016x}-{sb.formatted_ms}"

    def tenant_incarnation(self, int tenant_id):
        """The incarnation of tenant slot tenant_id: 0 when the slot is free (tenant 0's
        is whatever its slot holds)."""
        if not 0 <= tenant_id < CX_NTENANT:
            raise ValueError(f"tenant id {tenant_id} out of range")
        return CX_SB(open_base(self)).tmeta[tenant_id].incarnation

    def physical_identity(self, unsigned tenant, unsigned pdb, key):
        """(the hash of (tenant slot, physical db, key), whether that is a live, unexpired
        entry), nothing touched or counted."""
        cdef char* base = open_base(self)
        cdef uint64_t off, h
        cdef Buf k
        if tenant >= CX_NTENANT or pdb >= CX_NDB:
            raise ValueError("no such tenant slot or db")
        key_open(&k, key)
        try:
            h = cx_key_hash(CX_SB(base), tenant, pdb, k.ptr, k.len)
            off = cx_find(base, h, tenant, pdb, k.ptr, k.len, NULL)
        finally:
            buf_close(&k)
        return h, bool(off) and not cx_expired(CX_E(base, off), cx_now_ms())

    def namespace(self, int tenant_id):
        """Tenant tenant_id's keyspace, a Namespace (namespace(0) is the default tenant's)."""
        cdef unsigned t = existing_tenant(self, tenant_id)
        cdef Namespace ns = Namespace.__new__(Namespace)
        ns.owner = self
        ns.tenant = t
        ns.incarnation = CX_SB(self.base).tmeta[t].incarnation
        return ns

    def create_tenant(self, name, int64_t quota=0, policy=None):
        """A new, empty tenant; returns its id (1..63). name: 1 to 64 visible ASCII
        characters, unique ('default' is tenant 0). quota: bytes, 0 = none. policy: a
        maxmemory-policy name, None = follow the arena's."""
        cdef bytes bname = valid_tenant_name(name)
        cdef uint32_t own = 0 if policy is None else policy_number(policy) + 1
        cdef cx_super* sb = CX_SB(open_base(self))
        cdef cx_cfg cfg = eviction_cfg(self)
        cdef int t
        if quota < 0:
            raise ValueError("a tenant quota must be >= 0")
        if find_tenant(self, bname) >= 0:
            raise TenantError(f"tenant {bname.decode()!r} already exists")
        for t in range(1, CX_NTENANT):
            # a dropped tenant's slot is reused once nothing is left on its bill
            if not sb.tmeta[t].incarnation and not sb.tenants[t].used_bytes:
                break
        else:
            raise TenantError(f"no free tenant slot ({CX_NTENANT - 1} tenants at most; a dropped "
                              f"tenant's slot is free once its pinned entries are unpinned)")
        if not cx_tenant_create(self.base, t, <const uint8_t*>PyBytes_AS_STRING(bname), len(bname),
                                quota, own, &cfg, cx_now_ms()):
            raise OutOfMemory("no room for the new tenant's per-db counters")
        return t

    def drop_tenant(self, int tenant_id):
        """Delete a tenant and every entry it has; returns how many keys it had. Its
        pinned entries are freed by their last unpin; its slot is reused only then."""
        cdef unsigned t = existing_tenant(self, tenant_id)
        if t == 0:
            raise TenantError("the default tenant cannot be dropped")
        keys = CX_SB(self.base).tenants[t].keys
        cx_tenant_drop(self.base, t)
        if self.tier is not None:
            self.tier.forget(t)
        return keys

    def tenant_id(self, name):
        """The id of the tenant called name, or None."""
        open_base(self)
        try:
            bname = valid_tenant_name(name)
        except ValueError:
            return None
        t = find_tenant(self, bname)
        return None if t < 0 else t

    def tenants(self):
        """tenant_stats() of every tenant, by id (the default tenant first)."""
        cdef uint64_t bits = cx_tenant_bits(CX_SB(open_base(self)))
        return [tenant_dict(self, t) for t in range(CX_NTENANT) if (bits >> t) & 1]

    def set_tenant_quota(self, int tenant_id, int64_t quota):
        """Bytes the tenant's blocks may take, 0 = none. Lowering it evicts nothing now:
        the tenant's next write evicts down to it, and arena-wide pressure takes from it
        first while it is over."""
        cdef unsigned t = existing_tenant(self, tenant_id)
        if quota < 0:
            raise ValueError("a tenant quota must be >= 0")
        CX_SB(self.base).tenants[t].quota = quota

    def set_tenant_guarantee(self, int tenant_id, int64_t guaranteed):
        """Bytes of the tenant's that no other tenant's pressure evicts, 0 = none (the
        caller keeps the guarantees within memory). Memory it holds past them, up to its
        quota, is borrowed: evicted first, to give another tenant its guarantee back."""
        cdef unsigned t = existing_tenant(self, tenant_id)
        if guaranteed < 0:
            raise ValueError("a tenant guarantee must be >= 0")
        CX_SB(self.base).tenants[t].guaranteed = guaranteed

    def set_tenant_priority(self, int tenant_id, uint64_t priority):
        """The tenant's service class: of the tenants borrowing memory (past their
        guarantee, or with neither a guarantee nor a quota), a lower class gives it back
        first; 0, the default, is the lowest."""
        CX_SB(self.base).tmeta[existing_tenant(self, tenant_id)].priority = priority

    def set_tenant_disk(self, int tenant_id, bint on):
        """Whether the tenant's evicted entries go to the disk tier (when the server has one)."""
        cdef cx_tenant_meta* m = &CX_SB(self.base).tmeta[existing_tenant(self, tenant_id)]
        m.flags = (m.flags & ~CX_TENANT_NO_DISK) | (0 if on else CX_TENANT_NO_DISK)

    def set_tenant_policy(self, int tenant_id, policy):
        """The tenant's own maxmemory-policy, or None to follow the arena's. The default
        tenant always follows the arena's (Arena.policy)."""
        cdef unsigned t = existing_tenant(self, tenant_id)
        cdef uint32_t own = 0 if policy is None else policy_number(policy) + 1
        if t == 0:
            raise TenantError("the default tenant follows the arena's maxmemory-policy (Arena.policy)")
        CX_SB(self.base).tmeta[t].policy = own

    def tenant_stats(self, int tenant_id):
        """One tenant: id, name, quota, policy (in effect), policy_inherited, keys,
        expires, used_bytes (its blocks: what the quota limits), dataset_bytes (keys +
        values), keyspace_hits/misses, expired_keys, evicted_keys, rejected_writes,
        bytes_written (value bytes its writes stored), and what the connection layer
        reported: commands, bytes_in, bytes_out."""
        return tenant_dict(self, existing_tenant(self, tenant_id))

    def reset_tenant_stats(self, int tenant_id):
        """Zero the tenant's counters (hits ... commands); its keys and bytes stay."""
        reset_counters(CX_SB(self.base), existing_tenant(self, tenant_id))

    # ---- accounting and checks ----
    def stats(self):
        """The arena as a whole: memory, and counters summed over every tenant."""
        cdef cx_super* sb = CX_SB(open_base(self))
        cdef uint64_t free_bytes = sb.heap_size - sb.heap_used
        cdef uint64_t largest = largest_free(self.base)
        return {
            "used_memory": sb.heap_used + sb.heap_off,
            "used_memory_dataset": sb.dataset,
            "heap_size": sb.heap_size,
            "heap_used": sb.heap_used,
            "free_bytes": free_bytes,
            "largest_free": largest,
            "fragmentation": 1.0 - <double>largest / free_bytes if free_bytes else 0.0,
            "overhead": <double>sb.heap_used / sb.dataset if sb.dataset else 0.0,
            "entries": sb.entries,
            "pinned": sb.pinned,
            "zombies": sb.zombies,
            "reserved": sb.reserved,
            "expired_keys": sb.expired,
            "evicted_keys": sb.evicted,
            "keyspace_hits": sb.hits,
            "keyspace_misses": sb.misses,
            "maxmemory": self.maxmem,
            "policy": POLICY_NAMES[self.policy_id],
            "index_buckets": sb.index_buckets,
            "generation": sb.generation,
            "tenants": bin(cx_tenant_bits(sb)).count("1"),
            "recovery": self.recovery,
            "dropped_entries": self.dropped_entries,
            # what the backing holds for the arena (a device: all of it)
            "backing_bytes": cx_os_held(self.fd, self.offset, self.map_size) if self.grain else self.map_size,
            # faulted in ahead of the allocator since start (arena-warm-ahead)
            "warmed_bytes": cx_warmer_warmed(self.warmer),
        }

    @property
    def used_memory(self):
        """stats()["used_memory"] alone, cheap enough for every cron tick (the memory peak)."""
        cdef cx_super* sb = CX_SB(open_base(self))
        return sb.heap_used + sb.heap_off

    def release_free_pages(self, uint64_t max_bytes=RELEASE_BYTES):
        """The cron's step that gives memory back: punch the interior of free blocks of
        1 MiB or more idle for RELEASE_AGE_MS out of the backing, at most max_bytes a
        call. Returns the bytes released. Nothing with arena-prefault, or on a device."""
        cdef cx_cfg cfg = eviction_cfg(self)
        cdef char* base = open_base(self)
        cdef uint64_t done
        if not self.releases_pages:
            return 0
        with nogil:
            done = cx_release_free(base, &cfg, cx_now_ms(), RELEASE_AGE_MS, max_bytes, RELEASE_VISITS)
        return done

    def merge_quick_lists(self):
        """Merge the blocks waiting on the quick lists (ext/arena/heap.h) into the free
        lists, so that none stays unmerged for long once the writes that would reuse it
        stop (the cron does this before release_free_pages). Returns how many there were."""
        return cx_quick_drain(open_base(self))

    def take_backing_error(self):
        """The errno (ENOSPC) with which the backing last refused pages for a write, which
        then got OutOfMemory, since the previous call; 0 if none."""
        err = self.backing_errno
        self.backing_errno = 0
        return err

    def reset_stats(self):
        """CONFIG RESETSTAT: the arena-wide counters and the default tenant's. The other
        tenants' metering is theirs to keep (reset_tenant_stats)."""
        cdef cx_super* sb = CX_SB(open_base(self))
        sb.hits = sb.misses = sb.expired = sb.evicted = 0
        reset_counters(sb, 0)

    def check(self):
        """Validate every structure against a full heap walk; returns problem strings."""
        return check_arena(self)

    def layout(self):
        """What a process mapping the backing needs to check an entry header itself: the
        layout version, and where the state word and generation sit in a header."""
        cdef cx_entry probe
        cdef char* at = <char*>&probe
        cdef cx_super* sb = CX_SB(open_base(self))
        return {"version": sb.version, "header_bytes": CX_HDR,
                "state_offset": <char*>&probe.size_state - at, "state_mask": 63,
                "live_state": CX_LIVE, "zombie_state": CX_ZOMBIE,
                "generation_offset": <char*>&probe.generation - at,
                # a value committed with arena-checksum on: this bit in the type byte, and
                # value_checksum() of its bytes in the 8 bytes just before them
                "type_offset": <char*>&probe.type - at, "checksummed_flag": CX_SUMMED,
                # the superblock's geometry, written once by format: which arena this is
                "geometry": PyBytes_FromStringAndSize(self.base, <char*>&sb.clean - self.base)}


cdef class Namespace(Keyspace):
    """A tenant's keyspace (Arena.namespace): the Arena's keyed and keyspace methods,
    seeing only this tenant's keys, and only its entries by offset. Every method raises
    TenantError once the tenant is dropped."""

    @property
    def arena(self):
        return self.owner

    @property
    def name(self):
        return tenant_name_of(ks_arena(self), self.tenant)

    @property
    def policy(self):
        """The maxmemory-policy in effect for the tenant (its own or the arena's)."""
        return POLICY_NAMES[tenant_policy(ks_arena(self), self.tenant)]

    @property
    def quota(self):
        return CX_SB(ks_arena(self).base).tenants[self.tenant].quota

    def stats(self):
        """This tenant's Arena.tenant_stats()."""
        return tenant_dict(ks_arena(self), self.tenant)

    def swapdb(self, int a, int b):
        """Only the default tenant has SWAPDB: the logical -> physical db map is shared
        by the whole arena, so swapping for one tenant would swap every tenant's dbs."""
        cdef Arena arena = ks_arena(self)
        if self.tenant == 0:
            return arena.swapdb(a, b)
        raise TenantError("SWAPDB is not available in a tenant namespace "
                          "(the db map is shared by the whole arena)")

    def __repr__(self):
        return f"<Namespace of tenant {self.tenant}>"


cdef bytes valid_tenant_name(object name):
    cdef bytes b
    try:
        b = name.encode("ascii") if isinstance(name, str) else bytes(name)
    except UnicodeEncodeError:
        b = b""
    if not 1 <= len(b) <= TENANT_NAME_MAX or any(c < 0x21 or c > 0x7e for c in b):
        raise ValueError(f"a tenant name is 1 to {TENANT_NAME_MAX} visible ASCII characters, not {name!r}")
    return b


cdef int find_tenant(Arena a, bytes name):
    """The id of the tenant called name, -1 if none."""
    cdef cx_super* sb = CX_SB(a.base)
    cdef uint64_t bits = sb.tenant_bits
    cdef int t
    if name == DEFAULT_TENANT.encode():
        return 0
    for t in range(1, CX_NTENANT):
        if ((bits >> t) & 1 and sb.tmeta[t].name_len == len(name)
                and memcmp(sb.tmeta[t].name, PyBytes_AS_STRING(name), len(name)) == 0):
            return t
    return -1


cdef unsigned existing_tenant(Arena a, int tenant_id) except? 0xffff:
    cdef cx_super* sb = CX_SB(open_base(a))
    if tenant_id < 0 or tenant_id >= CX_NTENANT or not (cx_tenant_bits(sb) >> tenant_id) & 1:
        raise TenantError(f"no tenant {tenant_id}")
    return tenant_id


cdef uint64_t borrowed_bytes(cx_tenant* s):
    """What eviction's tier 2 may take from the tenant (ext/arena/evict.c): what it holds
    past its guarantee, or all it holds with neither a guarantee nor a quota."""
    if s.guaranteed:
        return s.used_bytes - s.guaranteed if s.used_bytes > s.guaranteed else 0
    return 0 if s.quota else s.used_bytes


cdef dict tenant_dict(Arena a, unsigned t):
    cdef cx_super* sb = CX_SB(a.base)
    cdef cx_tenant* s = &sb.tenants[t]
    cdef cx_tenant_meta* m = &sb.tmeta[t]
    cdef uint64_t dataset = m.dataset
    cdef int i
    if t == 0:      # not kept, so an arena formatted before tenants existed reads right
        dataset = sb.dataset
        for i in range(1, CX_NTENANT):
            dataset -= sb.tmeta[i].dataset
    return {
        "id": t,
        "name": tenant_name_of(a, t),
        "quota": s.quota,
        "guaranteed": s.guaranteed,
        "borrowed": borrowed_bytes(s),
        "reclaimed": s.reclaimed,
        "priority": m.priority,
        "disk": not (m.flags & CX_TENANT_NO_DISK),
        "policy": POLICY_NAMES[tenant_policy(a, t)],
        "policy_inherited": m.policy == 0,
        "keys": s.keys,
        "expires": s.volatile_keys,
        "used_bytes": s.used_bytes,
        "dataset_bytes": dataset,
        "keyspace_hits": s.hits,
        "keyspace_misses": s.misses,
        "expired_keys": s.expired,
        "evicted_keys": s.evicted,
        "rejected_writes": m.rejected,
        "bytes_written": m.bytes_written,
        "commands": m.commands,
        "bytes_in": m.bytes_in,
        "bytes_out": m.bytes_out,
    }


cdef void reset_counters(cx_super* sb, unsigned t) noexcept:
    cdef cx_tenant* s = &sb.tenants[t]
    cdef cx_tenant_meta* m = &sb.tmeta[t]
    s.hits = s.misses = s.expired = s.evicted = s.reclaimed = 0
    m.rejected = m.bytes_written = m.bytes_in = m.bytes_out = m.commands = 0


cdef void drop_all(Arena a, unsigned tenant, int pdb) noexcept:
    """Delete every entry of tenant in physical db pdb (all its dbs if -1); pinned ones
    become zombies."""
    cdef char* base = a.base
    cdef uint64_t* bk = CX_BUCKETS(base)
    cdef uint64_t b, cur, nxt, nb = CX_SB(base).index_buckets
    cdef cx_entry* e
    for b in range(nb):
        cur = bk[b]
        while cur:
            e = CX_E(base, cur)
            nxt = e.chain_next
            if e.tenant == tenant and (pdb < 0 or e.db == pdb):
                cx_drop(base, cur, 1)
            cur = nxt


cdef uint64_t largest_free(char* base) noexcept:
    cdef cx_super* sb = CX_SB(base)
    cdef int c
    cdef uint64_t cur, best = 0
    for c in range(CX_NCLASS - 1, -1, -1):
        cur = sb.free_head[c]
        while cur:
            best = max(best, CX_SIZE((<cx_freeblk*>(base + cur)).size_state))
            cur = (<cx_freeblk*>(base + cur)).next
        if best:
            return best
    return 0


cdef void check_wheel(char* base, dict live, list problems) except *:
    """Every volatile live entry is on the expiry wheel once, in a slot active expiry
    reaches no later than its period (or it is due already)."""
    cdef cx_super* sb = CX_SB(base)
    cdef uint64_t slot, cur, prev, reached, mask = CX_WHEEL_SLOTS - 1, nxt = sb.wheel_next
    cdef int64_t now = cx_now_ms()
    cdef cx_entry* e
    cdef set on_wheel = set()
    for slot in range(mask + 1):
        cur = sb.wheel[slot]
        prev = slot + 1
        # the first period from wheel_next on that this slot stands for
        reached = nxt + ((slot - nxt) & mask)
        while cur:
            if cur not in live or cur in on_wheel:
                problems.append(f"wheel slot {slot} reaches {cur}, not a live entry (or twice)")
                break
            on_wheel.add(cur)
            e = CX_E(base, cur)
            if e.ttl_prev != prev:
                problems.append(f"wheel slot {slot}: back link of {cur} is {e.ttl_prev}, expected {prev}")
            if e.expire_at == -1:
                problems.append(f"persistent entry {cur} is on the expiry wheel")
            elif reached > max(cx_period(e.expire_at), nxt) and e.expire_at >= now:
                problems.append(f"entry {cur} expiring at {e.expire_at} sits in wheel slot {slot}, "
                                f"reached only in period {reached}")
            prev = cur
            cur = e.ttl_next
    volatile = sum(1 for off in live if CX_E(base, off).expire_at != -1)
    if len(on_wheel) != volatile:
        problems.append(f"{volatile - len(on_wheel)} volatile entries are not on the expiry wheel")
    if sb.wheel_cursor and (sb.wheel_cursor not in on_wheel
                            or not wheel_slot_holds(base, nxt & mask, sb.wheel_cursor)):
        problems.append(f"the expiry cursor {sb.wheel_cursor} is not an entry of slot {nxt & mask}")


cdef bint wheel_slot_holds(char* base, uint64_t slot, uint64_t off) noexcept:
    cdef uint64_t cur = CX_SB(base).wheel[slot]
    while cur and cur != off:
        cur = CX_E(base, cur).ttl_next
    return cur == off


cdef tuple check_tree(char* base, uint64_t off, unsigned tenant, bint keyed, set reached, list problems,
                      int depth):
    """One node of a collection's tree and what is below it: its own and its blobs' blocks
    reached once, states, tenant, counts and, in a keyed tree, keys in order with every
    separator between its neighbours. (records, blocks' bytes, records' bytes, height,
    first key, last key), or None where it is broken (reported)."""
    cdef cx_node* n
    cdef cx_node* b
    cdef cx_rec r
    cdef uint64_t count = 0, nbytes, elems = 0
    cdef uint64_t child[2]
    cdef uint32_t i
    if off in reached or not (off & 63) == 0 or CX_STATE(CX_N(base, off).size_state) != CX_NODE:
        problems.append(f"tree node {off} is not a NODE block, or is reached twice")
        return None
    reached.add(off)
    n = CX_N(base, off)
    nbytes = CX_SIZE(n.size_state)
    if n.tenant != tenant or n.kind not in (1, 2) or not n.nrec or depth > 40:
        problems.append(f"tree node {off}: tenant {n.tenant}, kind {n.kind}, {n.nrec} records")
        return None
    first = last = None
    height = 0
    for i in range(n.nrec):
        cx_node_rec(base, off, i, &r)
        if r.blob:
            b = CX_N(base, r.blob)
            if r.blob in reached or CX_STATE(b.size_state) != CX_NODE or b.kind != 3 or b.tenant != tenant:
                problems.append(f"tree node {off}: record {i}'s blob {r.blob} is not its own")
                return None
            reached.add(r.blob)
            nbytes += CX_SIZE(b.size_state)
        key = PyBytes_FromStringAndSize(<const char*>r.k, r.kl)
        if n.kind == 1:
            count += 1
            elems += r.kl + r.vl
            if keyed and last is not None and key <= last:
                problems.append(f"leaf {off}: record {i} is out of order")
            if first is None:
                first = key
            last = key
            continue
        memcpy(child, r.v, 16)
        below = check_tree(base, child[0], tenant, keyed, reached, problems, depth + 1)
        if below is None:
            return None
        if below[0] != child[1]:
            problems.append(f"inner node {off}: child {i} counts {child[1]}, holds {below[0]}")
        if i and height != below[3]:
            problems.append(f"inner node {off}: its children's heights differ")
        height = below[3]
        if keyed and i and (below[4] < key or (last is not None and last >= key)):
            problems.append(f"inner node {off}: separator {i} is not between its neighbours")
        if first is None:
            first = below[4]
        last = below[5]
        count += below[0]
        nbytes += below[1]
        elems += below[2]
    if count != n.count:
        problems.append(f"tree node {off} counts {n.count}, holds {count}")
    return count, nbytes, elems, height + 1, first, last


cdef void check_collections(char* base, dict live, set nodes, list problems) except *:
    """Every live collection's trees whole, its header's bytes what they hold, and every
    NODE block of the heap in exactly one of them."""
    cdef cx_entry* e
    cdef cx_coll* c
    cdef set reached = set()
    cdef int t
    for off in live:
        e = CX_E(base, off)
        if not cx_is_coll(e.type):
            continue
        c = cx_coll_of(e)
        if e.value_len != CX_COLL_VALUE_BYTES or not c.root[0]:
            problems.append(f"collection {off}: a value of {e.value_len} bytes, first tree {c.root[0]}")
            continue
        nbytes = elems = 0
        for t in range(2):
            if not c.root[t]:
                continue
            found = check_tree(base, c.root[t], e.tenant, not (t == 0 and (e.type & CX_TYPE_MASK) == LIST_TYPE),
                               reached, problems, 0)
            if found is None:
                break
            nbytes += found[1]
            elems += found[2]
        else:
            if nbytes != c.bytes or elems != c.elems:
                problems.append(f"collection {off}: header says {c.bytes}/{c.elems} bytes, trees hold "
                                f"{nbytes}/{elems}")
    if reached != nodes:
        problems.append(f"{len(nodes - reached)} tree blocks belong to no collection, "
                        f"{len(reached - nodes)} reached are not in the heap walk")


cdef list list_walk(char* base, uint64_t cur, set blocks, set listed, str name, str kind, list problems):
    """The blocks a free or quick list links from cur (through cx_freeblk.next), in order;
    the walk stops, with a problem, at one that is not among blocks (those of its kind) or
    that some list has listed already."""
    cdef list order = []
    while cur:
        if cur in listed or cur not in blocks:
            problems.append(f"{name}: {cur} is not a {kind} block (or listed twice)")
            break
        listed.add(cur)
        order.append(cur)
        cur = (<cx_freeblk*>(base + cur)).next
    return order


cdef list check_arena(Arena a):
    cdef char* base = open_base(a)
    cdef cx_super* sb = CX_SB(base)
    cdef uint64_t lo = sb.heap_off, hi = sb.heap_off + sb.heap_size, off = lo, size, w, cur, prev
    cdef uint64_t mask = sb.index_buckets - 1, bits = cx_tenant_bits(sb)
    cdef uint64_t* bk = CX_BUCKETS(base)
    cdef uint64_t* keys_of
    cdef uint64_t* volatile_of
    cdef cx_entry* e
    cdef cx_freeblk* fb
    cdef cx_tenant* t
    cdef unsigned st
    cdef int c, ti, l
    cdef list problems = []
    cdef dict live = {}
    cdef dict tables = {}            # counter table offset -> the tenant it names
    cdef dict db_counts = {}         # (tenant, physical db) -> [keys, volatile keys]
    cdef set free_blocks = set()
    cdef set quick_blocks = set()
    cdef set nodes = set()           # NODE blocks: every one in one live collection's trees
    heap_used = dataset = reserved = zombies = pinned = 0
    tenant_used = [0] * CX_NTENANT
    tenant_keys = [0] * CX_NTENANT
    tenant_volatile = [0] * CX_NTENANT
    tenant_dataset = [0] * CX_NTENANT
    prev_free = False
    while off < hi:
        w = (<uint64_t*>(base + off))[0]
        size = CX_SIZE(w)
        st = CX_STATE(w)
        if size < 64 or size > hi - off:
            problems.append(f"heap walk: block at {off} has impossible size {size}")
            break
        if (<uint64_t*>(base + off + size - 8))[0] != size:
            problems.append(f"block at {off}: footer does not repeat its size {size}")
        if st == CX_FREE:
            if prev_free:
                problems.append(f"free block at {off} follows another free block")
            free_blocks.add(off)
        elif st == CX_QUICK:
            quick_blocks.add(off)
        elif st == CX_TABLE:
            heap_used += size
            tables[off] = (<cx_dbtab*>(base + off)).tenant
        elif st == CX_NODE:
            heap_used += size
            nodes.add(off)
            if CX_N(base, off).tenant < CX_NTENANT:
                tenant_used[CX_N(base, off).tenant] += size
        elif st == CX_LIVE or st == CX_ZOMBIE or st == CX_RESERVED:
            heap_used += size
            e = CX_E(base, off)
            if e.tenant >= CX_NTENANT:
                problems.append(f"block at {off} names tenant {e.tenant}, beyond the tenant table")
                off += size
                prev_free = False
                continue
            tenant_used[e.tenant] += size
            if st == CX_RESERVED:
                reserved += 1
            elif st == CX_ZOMBIE:
                zombies += 1
                pinned += e.pins > 0
                if not e.pins:
                    problems.append(f"zombie at {off} is not pinned")
            else:
                if not cx_entry_intact(base, off, size):
                    problems.append(f"live entry at {off}: header checksum or key hash mismatch")
                if not (bits >> e.tenant) & 1:
                    problems.append(f"live entry at {off} belongs to tenant {e.tenant}, which does not exist")
                live[off] = (e.tenant, e.db, key_of(e))
                pinned += e.pins > 0
                elems = cx_coll_of(e).elems if cx_is_coll(e.type) else 0
                dataset += e.key_len + e.value_len + elems
                tenant_dataset[e.tenant] += e.key_len + e.value_len + elems
                tenant_keys[e.tenant] += 1
                counts = db_counts.setdefault((e.tenant, e.db), [0, 0])
                counts[0] += 1
                if e.expire_at != -1:
                    counts[1] += 1
                    tenant_volatile[e.tenant] += 1
        else:
            problems.append(f"block at {off} has unknown state {st}")
        prev_free = st == CX_FREE
        off += size
    if off != hi:
        problems.append(f"heap walk ends at {off}, heap ends at {hi}")

    listed = set()
    for c in range(CX_NCLASS):
        cur = sb.free_head[c]
        if bool(cur) != bool((sb.free_map[c >> 6] >> (c & 63)) & 1):
            problems.append(f"free-class bitmap bit {c} disagrees with its list")
        prev = 0
        for cur in list_walk(base, cur, free_blocks, listed, f"free list {c}", "free", problems):
            fb = <cx_freeblk*>(base + cur)
            if cx_class(CX_SIZE(fb.size_state)) != <unsigned>c:
                problems.append(f"free block {cur} of size {CX_SIZE(fb.size_state)} is in class {c}")
            if fb.prev != prev:
                problems.append(f"free list {c}: back link of {cur} is {fb.prev}, expected {prev}")
            prev = cur
    if listed != free_blocks:
        problems.append(f"{len(free_blocks - listed)} free blocks are on no free list")
    listed = set()
    for c in range(CX_QUICK_CLASSES):
        blocks = list_walk(base, sb.quick_head[c], quick_blocks, listed, f"quick list {c}", "quick", problems)
        for cur in blocks:
            if CX_SIZE((<cx_freeblk*>(base + cur)).size_state) != <uint64_t>c * 64:
                problems.append(f"quick block {cur} of size {CX_SIZE((<cx_freeblk*>(base + cur)).size_state)} "
                                f"is on quick list {c}")
        if len(blocks) != sb.quick_len[c] or len(blocks) > CX_QUICK_DEPTH:
            problems.append(f"quick list {c} holds {len(blocks)} blocks, counts {sb.quick_len[c]}")
    if listed != quick_blocks:
        problems.append(f"{len(quick_blocks - listed)} quick blocks are on no quick list")

    indexed = set()
    names = set()
    for b in range(mask + 1):
        cur = bk[b]
        while cur:
            if cur not in live or cur in indexed:
                problems.append(f"bucket {b} reaches {cur}, which is not a live entry (or is reached twice)")
                break
            indexed.add(cur)
            if live[cur] in names:
                problems.append(f"key {live[cur]!r} is indexed twice")
            names.add(live[cur])
            e = CX_E(base, cur)
            if (e.hash & mask) != b:
                problems.append(f"entry {cur} is chained in bucket {b}, its hash says {e.hash & mask}")
            cur = e.chain_next
    if len(indexed) != len(live):
        problems.append(f"{len(live) - len(indexed)} live entries are not in the index")

    in_lru = set()
    for ti in range(CX_NTENANT):
        t = &sb.tenants[ti]
        for l in range(2):
            cur = t.head[l]
            prev = 0
            nbytes = 0
            while cur:
                if cur not in live or cur in in_lru:
                    problems.append(f"LRU list {ti}/{l} reaches {cur}, not a live entry (or twice)")
                    break
                in_lru.add(cur)
                e = CX_E(base, cur)
                if e.lru_prev != prev:
                    problems.append(f"LRU list {ti}/{l}: back link of {cur} is {e.lru_prev}, expected {prev}")
                if (e.expire_at != -1) != l or e.tenant != ti:
                    problems.append(f"entry {cur} is on the wrong LRU list {ti}/{l}")
                nbytes += CX_SIZE(e.size_state) + (cx_coll_of(e).bytes if cx_is_coll(e.type) else 0)
                prev = cur
                cur = e.lru_next
            if t.tail[l] != prev:
                problems.append(f"LRU list {ti}/{l}: tail is {t.tail[l]}, the walk ends at {prev}")
            if t.list_bytes[l] != nbytes:
                problems.append(f"LRU list {ti}/{l}: counts {t.list_bytes[l]} bytes, holds {nbytes}")
        if t.used_bytes != tenant_used[ti] or t.keys != tenant_keys[ti] or t.volatile_keys != tenant_volatile[ti]:
            problems.append(f"tenant {ti} counters (bytes/keys/volatile) {t.used_bytes}/{t.keys}/"
                            f"{t.volatile_keys}, recounted {tenant_used[ti]}/{tenant_keys[ti]}/{tenant_volatile[ti]}")
        if ti == 0:
            keys_of, volatile_of = sb.db_keys, sb.db_volatile
        else:
            if bool(sb.tmeta[ti].incarnation) != bool((sb.tenant_bits >> ti) & 1):
                problems.append(f"tenant {ti}: the existence bit disagrees with its slot")
            if not (bits >> ti) & 1:
                continue
            if sb.tmeta[ti].dataset != tenant_dataset[ti]:
                problems.append(f"tenant {ti}: dataset counter {sb.tmeta[ti].dataset}, recounted {tenant_dataset[ti]}")
            if not cx_dbtab_intact(base, ti):
                problems.append(f"tenant {ti}: its counter table at {sb.tmeta[ti].dbtab} is missing or not its own")
                continue
            keys_of, volatile_of = cx_db_keys(base, ti), cx_db_volatile(base, ti)
        for c in range(CX_NDB):
            counts = db_counts.get((ti, c), (0, 0))
            if keys_of[c] != counts[0] or volatile_of[c] != counts[1]:
                problems.append(f"tenant {ti} db {c} counters keys/volatile {keys_of[c]}/{volatile_of[c]}, "
                                f"recounted {counts[0]}/{counts[1]}")
    if len(in_lru) != len(live):
        problems.append(f"{len(live) - len(in_lru)} live entries are on no LRU list")
    check_wheel(base, live, problems)
    check_collections(base, live, nodes, problems)
    if sb.rename.state != CX_RENAME_NONE:
        problems.append(f"a rename is recorded as under way (state {sb.rename.state})")
    for off, owner in tables.items():
        if not cx_dbtab_owned(base, off):
            problems.append(f"counter table at {off} (of tenant {owner}) belongs to no existing tenant")

    for name, stored, counted in (("heap_used", sb.heap_used, heap_used), ("dataset", sb.dataset, dataset),
                                  ("entries", sb.entries, len(live)), ("reserved", sb.reserved, reserved),
                                  ("zombies", sb.zombies, zombies), ("pinned", sb.pinned, pinned)):
        if stored != counted:
            problems.append(f"counter {name} is {stored}, recounted {counted}")
    if sorted(sb.db_map[c] for c in range(CX_NDB)) != list(range(CX_NDB)):
        problems.append("the logical -> physical db map is not a permutation")
    return problems
