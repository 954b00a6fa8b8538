# The typed boundary of cxlredis._store (ext/cxlredis/_store.pyx), for the C fast path (ext/cxlredis/_fastpath.pyx).
from libc.stdint cimport int64_t, uint64_t

cdef extern from *:
    # the warmer thread of ext/arena/warm.h, opaque here
    ctypedef struct cx_warmer "struct cx_warmer"


cdef class Arena


cdef class Keyspace:
    cdef bint is_arena           # this is the Arena itself (tenant 0)
    cdef Arena owner             # a namespace's arena
    cdef readonly unsigned tenant
    cdef uint64_t incarnation    # the tenant's when bound: a dropped tenant's namespace
                                 # must not reach a new tenant created in the same slot


cdef class Arena(Keyspace):
    # the process's handle on the mapping and its eviction settings; everything
    # that describes the cache lives in the mapping itself
    cdef char* base              # start of the mapping (the superblock); NULL once closed
    cdef size_t map_size
    cdef readonly uint64_t offset   # where the mapping starts in the backing (arena-offset)
    cdef int fd
    cdef uint64_t grain          # the backing's page size (cx_back_range); 0 = a device, always backed
    cdef int backing_errno       # why the backing last refused pages for a block (ENOSPC), 0 = never
    cdef bint releases_pages     # punch idle free blocks (not with arena-prefault)
    cdef cx_warmer* warmer       # faults in fresh pages ahead of the allocator, or NULL
    cdef int policy_id           # the arena's maxmemory-policy (tenants without their own follow it)
    cdef int samples
    cdef uint64_t maxmem         # 0 = the whole heap
    cdef uint64_t rng            # xorshift state for the random/LFU policies
    cdef int ndb
    cdef public bint checksums   # arena-checksum: commit values with a checksum, verify it on reads
    cdef readonly uint64_t checksum_failures    # values dropped because they failed it
    cdef readonly object path
    cdef readonly str recovery
    cdef readonly Py_ssize_t dropped_entries
    cdef public object tier      # its disk tier (cxlredis.disktier.DiskTier), or None

    cdef int _attach(self, bint reset, bint hugepages, bint prefault, int numa_node) except -1
    cdef int _back_metadata(self, bint whole) except -1


cdef class Namespace(Keyspace):
    pass


# the fast path's command clock: the wall clock every arena call sees, in ms (0: read it)
cdef void hold_clock(int64_t now_ms) noexcept
# GET and SET of plain strings, for the fast path: the same lookups, LRU touches,
# counters and commits as the Python-level methods, without a Python call.
cdef int get_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len, Py_ssize_t max_len,
                    const char **value, Py_ssize_t *value_len, uint64_t *entry) except -2
cdef tuple pin_value(Keyspace ks, uint64_t off)
# a large value received straight into a reserved block (the connection makes them), and
# SET key <it> without options
cdef class SlotArg:
    cdef readonly object store      # the keyspace that reserved the block
    cdef readonly uint64_t off
    cdef readonly Py_ssize_t length
    cdef public bint consumed       # committed or released: nothing left to free
cdef int commit_slot(SlotArg slot, int db, const char *key, Py_ssize_t key_len) except -1
cdef int set_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len, const char *value,
                    Py_ssize_t value_len) except -1
# MGET's check and lookup of one key; EXISTS, TTL/PTTL and DEL of one key, likewise
cdef int string_fits(Keyspace ks, int db, const char *key, Py_ssize_t key_len, Py_ssize_t max_len) except -1
cdef int mget_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len,
                     const char **value, Py_ssize_t *value_len) except -1
cdef int key_exists(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -1
cdef int64_t key_ttl_ms(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -3
cdef int delete_key(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -1
# INCRBY, EXPIRE (in milliseconds from now), HGET and HSET of one field, likewise
cdef int incr_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len, long long delta,
                     long long *result) except -2
cdef int expire_key(Keyspace ks, int db, const char *key, Py_ssize_t key_len, int64_t ttl_ms) except -2
cdef int hash_get(Keyspace ks, int db, const char *key, Py_ssize_t key_len, const char *field,
                  Py_ssize_t field_len, Py_ssize_t max_len, const char **value,
                  Py_ssize_t *value_len) except -2
cdef int hash_set(Keyspace ks, int db, const char *key, Py_ssize_t key_len, const char *field,
                  Py_ssize_t field_len, const char *value, Py_ssize_t value_len) except -2
cdef bint under_maxmemory(Arena a) except -1
# a pipeline's keys, looked up ahead: their lookups' cache misses overlap
cdef enum:
    PREFETCH_KEYS = 32          # the most keys one prefetch_lookups takes
cdef void prefetch_lookups(Keyspace ks, int db, const char **keys, const Py_ssize_t *key_lens,
                           Py_ssize_t n) noexcept
# whether key may have a copy in the disk tier (then the general path runs the command)
cdef bint maybe_on_disk(Keyspace ks, int db, const char *key, Py_ssize_t key_len) except -1
