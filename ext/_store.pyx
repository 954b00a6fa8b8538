# cython: freethreading_compatible = False
"""The arena: one mmap'ed region holding a whole cache (see docs/internals.md, section 1).

Layout: superblock (64 KiB) | index (u64 bucket array) | heap (boundary-tagged blocks).
Every link is an offset from the start of the mapping, so another process (or
this one after a restart) can map the same bytes and follow them.

The allocator, index, LRU and expiry logic is plain C (below), so the hot paths
run without touching Python objects; the Arena class is a thin wrapper that
turns buffers into pointers and error codes into exceptions.

Not thread-safe: callers run every method on one thread (the event loop). Views
returned by view()/slot() point straight into the mapping and must not be used
after close().
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_CheckExact, PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t
from libc.string cimport memcmp, memcpy, memset
from libc.errno cimport EAGAIN
from posix.unistd cimport close as close_fd

import os

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    int PyBUF_WRITE

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #include <stdlib.h>
    #include <errno.h>
    #include <time.h>
    #include <fcntl.h>
    #include <unistd.h>
    #include <stddef.h>
    #include <sys/mman.h>
    #include <sys/stat.h>
    #include <sys/file.h>
    #include <sys/syscall.h>
    #include <signal.h>
    #include <sys/statvfs.h>
    #include <linux/falloc.h>

    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23
    #endif
    #ifndef MADV_HUGEPAGE
    #define MADV_HUGEPAGE 14
    #endif

    #define CX_LAYOUT_VERSION 3u
    #define CX_SUPER_BYTES 65536ull
    #define CX_HDR 112ull           /* entry header; the key follows it */
    #define CX_MIN_BLOCK 64ull
    #define CX_NDB 256
    #define CX_NTENANT 64
    #define CX_NCLASS 384           /* free-list size classes */
    #define CX_MAP_WORDS (CX_NCLASS / 64)
    #define CX_BYTES_PER_BUCKET 2048ull
    #define CX_MIN_BUCKETS 1024ull
    /* the expiry wheel: slot i lists the volatile entries due in a CX_WHEEL_MS-long
       period congruent to i (one turn is about 262 s) */
    #define CX_WHEEL_SLOTS 2048ull
    #define CX_WHEEL_MS 128
    /* the longest key a rename in place records in its intent (longer ones are copied) */
    #define CX_RENAME_KEY_MAX 1024

    /* block states, kept in the low 6 bits of the header word (sizes are multiples of 64);
       a TABLE block holds one tenant's per-db key counters (see cx_dbtab) */
    enum { CX_FREE = 1, CX_RESERVED = 2, CX_LIVE = 3, CX_ZOMBIE = 4, CX_TABLE = 5 };
    enum { CX_NOEVICTION, CX_ALLKEYS_LRU, CX_VOLATILE_LRU, CX_ALLKEYS_RANDOM,
           CX_VOLATILE_RANDOM, CX_VOLATILE_TTL, CX_ALLKEYS_LFU, CX_VOLATILE_LFU };
    /* attach verdicts */
    enum { CX_OK = 0, CX_ZERO, CX_BAD_MAGIC, CX_BAD_VERSION, CX_BAD_CHECKSUM, CX_BAD_SIZE, CX_BAD_GEOMETRY,
           CX_ZEROED_SUPER };

    #define CX_SIZE(w) ((w) & ~63ull)
    #define CX_STATE(w) ((unsigned)((w) & 63ull))
    #define CX_E(base, off) ((cx_entry *)((base) + (off)))
    #define CX_KEY(e) ((uint8_t *)(e) + CX_HDR)
    #define CX_VAL(e) ((uint8_t *)(e) + CX_HDR + (e)->key_cap)

    typedef struct {
        uint64_t size_state;     /* block size | state */
        uint64_t chain_next;     /* next entry in the hash bucket */
        uint64_t lru_prev, lru_next;
        int64_t expire_at;       /* ms since the epoch, -1 = persistent */
        int64_t last_access;     /* ms since the epoch */
        uint64_t value_len;
        uint64_t generation;
        uint64_t hash;           /* hash of (physical db, key) */
        uint32_t key_len;
        uint32_t key_cap;        /* key area size: header + key_cap is 64-byte aligned */
        uint32_t pins;
        uint32_t checksum;       /* over the identity fields: see cx_entry_sum */
        uint16_t db;             /* physical db */
        uint8_t type;
        uint8_t lfu;             /* logarithmic access counter */
        uint16_t tenant;
        uint16_t lfu_minutes;    /* time of the last LFU update, minutes mod 2^16 */
        /* the expiry wheel (volatile entries only): ttl_prev is slot + 1 for the first of a slot */
        uint64_t ttl_prev, ttl_next;
    } cx_entry;

    /* backing: whether the block's pages are in the backing (see cx_back_range);
       prefix: bytes from its start known to be backed all the same (0 if unknown);
       punched: how much of its interior cx_release_free has punched so far */
    typedef struct { uint64_t size_state, next, prev, backing, prefix, punched; } cx_freeblk;

    /* A free block's backing word. Its header and footer pages are always backed; the
       pages between may not be: BACKED = every page is (so the allocator can hand it out
       as it is), MIXED = some may have been punched or never touched, HOLLOW = the
       interior was punched (and so is not punched again). Any word without the tag (a
       block freed by a rebuild, or by a build before this word existed) counts as MIXED.
       The low 40 bits: when the release pass first saw the block idle (ms, 0 = not yet). */
    #define CX_BK_TAG 0xB4C0000000000000ull
    #define CX_BK_TAG_MASK 0xFFFF000000000000ull
    #define CX_BK_SEEN_MASK ((1ull << 40) - 1)
    enum { CX_BK_BACKED = 1, CX_BK_MIXED = 2, CX_BK_HOLLOW = 3 };
    #define CX_BK_WORD(kind) (CX_BK_TAG | ((uint64_t)(kind) << 40))
    static inline unsigned cx_bk_kind(uint64_t w) {
        return (w & CX_BK_TAG_MASK) == CX_BK_TAG ? (unsigned)((w >> 40) & 0xff) : CX_BK_MIXED;
    }
    /* free blocks at least this big have their interior returned to the kernel */
    #define CX_RELEASE_MIN (1ull << 20)
    /* a block taken from a not fully backed one gets this much more backed with it, so
       small writes into fresh memory make one fallocate per 2 MiB, not one each */
    #define CX_BACK_AHEAD (2ull << 20)

    typedef struct {
        uint64_t head[2], tail[2];        /* LRU lists: [0] persistent, [1] volatile; head = most recent */
        uint64_t list_bytes[2];
        uint64_t used_bytes;              /* its live, reserved and zombie blocks: what the quota limits */
        uint64_t keys, volatile_keys;
        uint64_t quota;                   /* bytes, 0 = none */
        uint64_t hits, misses, expired, evicted;
        uint64_t spare[2];
    } cx_tenant;

    /* The rest of a tenant slot (appended after the tenant table, so an arena formatted
       before tenants existed reads as "only the default tenant"). Tenant 0 always exists. */
    typedef struct {
        uint64_t incarnation;             /* 0 = free slot; else a unique generation number */
        uint64_t dbtab;                   /* offset of its cx_dbtab block (tenants 1..63) */
        uint64_t dataset;                 /* key + value bytes of its live entries (tenants 1..63) */
        uint64_t rejected, bytes_written, bytes_in, bytes_out, commands;
        uint32_t policy;                  /* 0 = the arena's maxmemory-policy, else policy id + 1 */
        uint32_t name_len;
        char name[64];
        uint64_t spare[15];
    } cx_tenant_meta;

    /* Per-db key counters of a tenant other than 0 (tenant 0 uses the superblock's):
       64 tenants x 256 dbs do not fit in the superblock, so each lives in a heap block. */
    typedef struct {
        uint64_t size_state;
        uint64_t tenant, incarnation;     /* whose, so a rebuild can tell a stray block */
        uint64_t spare[5];
        uint64_t keys[CX_NDB], volatile_keys[CX_NDB];
    } cx_dbtab;
    #define CX_DBTAB_BYTES ((sizeof(cx_dbtab) + 8 + 63) & ~63ull)

    /* A rename under way, so a rebuild after a kill -9 finishes it (state is stored
       last and cleared after the rename is complete). In place: the entry gets the
       recorded identity; by copy: once the copy (of the recorded generation) is
       live, the source goes. */
    enum { CX_RENAME_NONE = 0, CX_RENAME_IN_PLACE, CX_RENAME_BY_COPY };
    typedef struct {
        uint64_t state;
        uint64_t entry;                   /* in place: the entry renamed; by copy: the source */
        uint64_t entry_generation;        /* by copy: the source's (its block may be reused) */
        uint64_t generation;              /* the renamed entry's */
        uint64_t hash;                    /* in place: the new identity */
        uint32_t key_len;
        uint16_t db;
        uint16_t spare;
        uint8_t key[CX_RENAME_KEY_MAX];
    } cx_rename_intent;

    typedef struct {
        /* geometry: written once by format, covered by the checksum */
        char magic[8];
        uint32_t version;
        uint32_t checksum;
        uint64_t arena_size, index_off, index_buckets, heap_off, heap_size, hash_seed, formatted_ms;
        uint64_t geometry_spare[7];
        /* mutable state; every counter is recomputed by a rebuild */
        uint64_t clean;
        uint64_t generation;
        uint64_t wheel_next;              /* the wheel period (expire_at / CX_WHEEL_MS) active expiry looks at next */
        uint64_t hits, misses, expired, evicted;
        uint64_t heap_used, dataset, entries, reserved, zombies, pinned;
        uint64_t free_map[CX_MAP_WORDS];
        uint64_t free_head[CX_NCLASS];
        uint8_t db_map[CX_NDB];           /* logical -> physical db */
        uint64_t db_keys[CX_NDB], db_volatile[CX_NDB];    /* tenant 0's */
        cx_tenant tenants[CX_NTENANT];
        cx_tenant_meta tmeta[CX_NTENANT];
        uint64_t tenant_bits;             /* bit i: tenant i exists (derived from incarnations; bit 0 implied) */
        uint64_t wheel_cursor;            /* the entry of period wheel_next to look at next, 0 = its first */
        uint64_t wheel_walk_from;         /* now's period when that look started from its first entry */
        cx_rename_intent rename;
        uint64_t wheel[CX_WHEEL_SLOTS];   /* first entry of each slot; rebuilt, like the LRU lists */
    } cx_super;

    typedef struct {
        int policy;                       /* the arena's; tenants without their own follow it */
        int samples;
        int no_evict;                     /* allocate only if no eviction is needed */
        uint64_t maxmemory;
        uint64_t *rng;
        int backing_fd;                   /* the arena file, whose pages cx_back_range allocates */
        uint64_t grain;                   /* its page size; 0 = nothing to allocate (a device) */
        int *backing_errno;               /* set when the backing could not take a block */
        int beyond_limits;                /* RENAME/MOVE by copy: the value only changes blocks (the
                                             source is freed next), so any free block may take it */
    } cx_cfg;

    _Static_assert(sizeof(cx_entry) == CX_HDR, "entry header size");
    _Static_assert(sizeof(cx_tenant) == 128, "tenant slot size");
    _Static_assert(sizeof(cx_tenant_meta) == 256, "tenant metadata size");
    _Static_assert(offsetof(cx_super, clean) == 128, "geometry block size");
    _Static_assert(sizeof(cx_super) <= CX_SUPER_BYTES, "superblock too large");

    #define CX_SB(base) ((cx_super *)(base))
    #define CX_BUCKETS(base) ((uint64_t *)((base) + CX_SB(base)->index_off))

    static inline void cx_store(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

    /* Tests kill the process at numbered points of a multi-store update
       (CXLREDIS_TEST_CRASH_POINT) to check that a rebuild recovers from each. */
    static int cx_crash_at = 0;
    #define CX_CRASH_POINT(n) do { if (__builtin_expect(cx_crash_at == (n), 0)) raise(SIGKILL); } while (0)

    static inline int64_t cx_now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }

    /* ---- hashing: 64x64->128 multiply-fold mixing ---- */
    #define CX_K0 0x9E3779B97F4A7C15ull
    #define CX_K1 0xC2B2AE3D27D4EB4Full
    #define CX_K2 0x165667B19E3779F9ull
    #define CX_K3 0xD6E8FEB86659FD93ull

    static inline uint64_t cx_fold(uint64_t a, uint64_t b) {
        __uint128_t r = (__uint128_t)a * b;
        return (uint64_t)r ^ (uint64_t)(r >> 64);
    }
    static inline uint64_t cx_rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
    static inline uint64_t cx_rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

    static uint64_t cx_hash_bytes(const uint8_t *p, size_t n, uint64_t seed) {
        uint64_t a, b, state = cx_fold(seed ^ CX_K0, CX_K1 ^ (uint64_t)n);
        if (n > 16) {
            size_t left = n;
            while (left > 16) {
                state = cx_fold(cx_rd64(p) ^ CX_K1, cx_rd64(p + 8) ^ state);
                p += 16;
                left -= 16;
            }
            /* the last 16 bytes, overlapping the previous chunk when short */
            a = cx_rd64(p + left - 16);
            b = cx_rd64(p + left - 8);
        } else if (n >= 8) {
            a = cx_rd64(p);
            b = cx_rd64(p + n - 8);
        } else if (n >= 4) {
            a = cx_rd32(p);
            b = cx_rd32(p + n - 4);
        } else if (n > 0) {
            a = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1];
            b = 0;
        } else {
            a = b = 0;
        }
        return cx_fold(state ^ CX_K2, cx_fold(a ^ CX_K1, b ^ CX_K3 ^ state));
    }

    /* key identity is (tenant, physical db, key); tenant 0's hashes are those of a
       single-tenant arena */
    static inline uint64_t cx_key_hash(const cx_super *sb, unsigned tenant, unsigned pdb,
                                       const uint8_t *key, size_t klen) {
        return cx_hash_bytes(key, klen, sb->hash_seed + (uint64_t)pdb * CX_K2 + (uint64_t)tenant * CX_K3);
    }

    /* ---- tenants ---- */
    static inline uint64_t cx_tenant_bits(const cx_super *sb) { return sb->tenant_bits | 1; }
    /* the policy tenant t's entries are evicted by: its own, else the arena's (always
       the arena's for the default tenant) */
    static inline int cx_policy_of(const cx_super *sb, unsigned t, const cx_cfg *cfg) {
        uint32_t p = t ? sb->tmeta[t].policy : 0;
        return p ? (int)p - 1 : cfg->policy;
    }
    static inline uint64_t *cx_db_keys(char *base, unsigned t) {
        return t ? ((cx_dbtab *)(base + CX_SB(base)->tmeta[t].dbtab))->keys : CX_SB(base)->db_keys;
    }
    static inline uint64_t *cx_db_volatile(char *base, unsigned t) {
        return t ? ((cx_dbtab *)(base + CX_SB(base)->tmeta[t].dbtab))->volatile_keys : CX_SB(base)->db_volatile;
    }

    /* The checksum seals an entry's identity (block size, key geometry, key hash, db,
       type, tenant), written once at commit. The fields updated in place later —
       expire_at, value_len (after its bytes), generation — are single aligned stores
       a kill -9 cannot tear, so they stay outside it: a crash right after such an
       update keeps the entry instead of failing its check and dropping it. */
    static uint32_t cx_entry_sum(const cx_entry *e) {
        uint64_t h = cx_fold(CX_SIZE(e->size_state) ^ CX_K0, CX_K1);
        h = cx_fold(h ^ e->hash, (((uint64_t)e->key_len << 32) | e->key_cap) ^ CX_K3);
        h = cx_fold(h ^ ((uint64_t)e->db | ((uint64_t)e->type << 16) | ((uint64_t)e->tenant << 32)), CX_K0);
        return (uint32_t)(h ^ (h >> 32));
    }

    static uint32_t cx_super_sum(const cx_super *sb) {
        uint8_t g[128];
        memcpy(g, sb, sizeof g);
        memset(g + offsetof(cx_super, checksum), 0, 4);
        uint64_t h = cx_hash_bytes(g, sizeof g, CX_K3);
        return (uint32_t)(h ^ (h >> 32));
    }

    static inline uint64_t cx_rand(uint64_t *s) {
        uint64_t x = *s;
        x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
        *s = x;
        return x * 0x2545F4914F6CDD1Dull;
    }

    /* ---- entry geometry ---- */
    static inline uint64_t cx_key_area(uint64_t key_cap) { return ((CX_HDR + key_cap + 63) & ~63ull) - CX_HDR; }
    /* header + key area + value + the 8-byte footer (boundary tag) */
    static inline uint64_t cx_block_bytes(uint64_t key_area, uint64_t value_cap) {
        return (CX_HDR + key_area + value_cap + 8 + 63) & ~63ull;
    }
    static inline uint64_t cx_value_cap(const cx_entry *e) {
        return CX_SIZE(e->size_state) - CX_HDR - e->key_cap - 8;
    }
    static inline void cx_footer(char *base, uint64_t off, uint64_t size) {
        *(uint64_t *)(base + off + size - 8) = size;
    }

    /* ---- free lists: segregated by size class, with a bitmap of non-empty classes ---- */
    static inline unsigned cx_class(uint64_t size) {
        uint64_t u = size >> 6;
        if (u < 64) return (unsigned)u;
        unsigned top = 63u - (unsigned)__builtin_clzll(u);
        unsigned c = 64u + (top - 6u) * 8u + (unsigned)((u >> (top - 3u)) & 7u);
        return c < CX_NCLASS ? c : CX_NCLASS - 1;
    }

    static void cx_free_push(char *base, uint64_t off, uint64_t size, uint64_t backing) {
        cx_super *sb = CX_SB(base);
        unsigned c = cx_class(size);
        cx_freeblk *f = (cx_freeblk *)(base + off);
        f->backing = backing;
        f->prefix = f->punched = 0;
        f->prev = 0;
        f->next = sb->free_head[c];
        if (f->next) ((cx_freeblk *)(base + f->next))->prev = off;
        sb->free_head[c] = off;
        sb->free_map[c >> 6] |= 1ull << (c & 63);
    }

    static void cx_free_remove(char *base, uint64_t off) {
        cx_super *sb = CX_SB(base);
        cx_freeblk *f = (cx_freeblk *)(base + off);
        unsigned c = cx_class(CX_SIZE(f->size_state));
        if (f->prev) ((cx_freeblk *)(base + f->prev))->next = f->next;
        else sb->free_head[c] = f->next;
        if (f->next) ((cx_freeblk *)(base + f->next))->prev = f->prev;
        if (!sb->free_head[c]) sb->free_map[c >> 6] &= ~(1ull << (c & 63));
    }

    /* first non-empty class strictly above c, or CX_NCLASS */
    static unsigned cx_class_above(const cx_super *sb, unsigned c) {
        unsigned w = (c + 1) >> 6;
        if (w >= CX_MAP_WORDS) return CX_NCLASS;
        uint64_t bits = sb->free_map[w] & (~0ull << ((c + 1) & 63));
        for (;;) {
            if (bits) return w * 64 + (unsigned)__builtin_ctzll(bits);
            if (++w >= CX_MAP_WORDS) return CX_NCLASS;
            bits = sb->free_map[w];
        }
    }

    /* ---- the backing's pages ---- */
    /* Allocate the backing's pages under [off, off + len), rounded out to whole pages of
       `grain` bytes and clipped to the arena's `size`: a store there can then never fault
       for want of memory (a file system that cannot supply a page raises SIGBUS), so a
       full backing is an error here instead. 0 or an errno (ENOSPC). */
    static int cx_back_range(char *base, int fd, uint64_t grain, uint64_t size, uint64_t off, uint64_t len) {
        uint64_t lo = off & ~(grain - 1), hi = (off + len + grain - 1) & ~(grain - 1);
        if (hi > size) hi = size;
        if (fallocate(fd, 0, (off_t)lo, (off_t)(hi - lo)) == 0) return 0;
        if (errno != EOPNOTSUPP) return errno;
        /* no fallocate: faulting the pages in reports what would be a SIGBUS as EFAULT */
        return madvise(base + lo, hi - lo, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
    }

    static inline int cx_free_backed(char *base, uint64_t off) {
        return cx_bk_kind(((cx_freeblk *)(base + off))->backing) == CX_BK_BACKED;
    }
    /* bytes from free block off's start that are backed (an untagged block's fields are
       not to be trusted) */
    static inline uint64_t cx_free_prefix(char *base, uint64_t off) {
        cx_freeblk *f = (cx_freeblk *)(base + off);
        if (cx_free_backed(base, off)) return CX_SIZE(f->size_state);
        return (f->backing & CX_BK_TAG_MASK) == CX_BK_TAG ? f->prefix : 0;
    }

    /* Take a block of exactly `need` bytes (a multiple of 64) from the free lists;
       returns its offset with state RESERVED, or 0. Good fit: a first fit among the
       first few blocks of the request's own class, else any block of a higher class
       (all of which are big enough), else the rest of the own class. A block whose
       pages may not all be backed gets them first; 0 with *err set if the backing has
       no room for them. */
    static uint64_t cx_heap_alloc(char *base, uint64_t need, const cx_cfg *cfg, int *err) {
        cx_super *sb = CX_SB(base);
        unsigned c = cx_class(need);
        uint64_t off = 0, cur = sb->free_head[c];
        int steps = 0;
        for (; cur && steps < 16; steps++, cur = ((cx_freeblk *)(base + cur))->next)
            if (CX_SIZE(*(uint64_t *)(base + cur)) >= need) { off = cur; break; }
        if (!off) {
            unsigned up = cx_class_above(sb, c);
            if (up < CX_NCLASS) off = sb->free_head[up];
        }
        for (; !off && cur; cur = ((cx_freeblk *)(base + cur))->next)
            if (CX_SIZE(*(uint64_t *)(base + cur)) >= need) off = cur;
        if (!off) return 0;
        uint64_t size = CX_SIZE(*(uint64_t *)(base + off)), backing = ((cx_freeblk *)(base + off))->backing;
        uint64_t prefix = cx_free_prefix(base, off);
        int split = size - need >= CX_MIN_BLOCK;
        /* the block's own pages, and the one the remainder's header goes to */
        uint64_t want = split ? need + CX_MIN_BLOCK : need;
        if (cfg->grain && want > prefix) {
            /* what is not backed yet, with some ahead; just what is wanted if that is too much */
            uint64_t ahead = want + CX_BACK_AHEAD < size ? want + CX_BACK_AHEAD : size;
            if (cx_back_range(base, cfg->backing_fd, cfg->grain, sb->arena_size, off + prefix, ahead - prefix) == 0)
                prefix = ahead;
            else if ((*err = cx_back_range(base, cfg->backing_fd, cfg->grain, sb->arena_size, off + prefix,
                                           want - prefix)))
                return 0;
            else
                prefix = want;
        }
        cx_free_remove(base, off);
        if (split) {
            /* the remainder's header is written before the first block shrinks, so a
               heap walk is valid at every instant */
            uint64_t rest = off + need, rsize = size - need;
            *(uint64_t *)(base + rest) = rsize | CX_FREE;
            cx_footer(base, rest, rsize);
            cx_free_push(base, rest, rsize, backing);
            ((cx_freeblk *)(base + rest))->prefix = prefix > need ? prefix - need : 0;
            size = need;
        }
        cx_store((uint64_t *)(base + off), size | CX_RESERVED);
        cx_footer(base, off, size);
        sb->heap_used += size;
        return off;
    }

    /* Return a block (all of whose pages are backed) to the heap, merging it with free
       neighbours; returns the offset of the resulting free block. */
    static uint64_t cx_heap_free(char *base, uint64_t off) {
        cx_super *sb = CX_SB(base);
        uint64_t size = CX_SIZE(*(uint64_t *)(base + off));
        uint64_t heap_end = sb->heap_off + sb->heap_size;
        int backed = 1;
        uint64_t prefix = size;     /* the freed block is backed, and so what follows it if it is */
        sb->heap_used -= size;
        uint64_t right = off + size;
        if (right < heap_end && CX_STATE(*(uint64_t *)(base + right)) == CX_FREE) {
            backed = cx_free_backed(base, right);
            prefix += cx_free_prefix(base, right);
            cx_free_remove(base, right);
            size += CX_SIZE(*(uint64_t *)(base + right));
        }
        cx_store((uint64_t *)(base + off), size | CX_FREE);
        if (off > sb->heap_off) {
            uint64_t lsize = *(uint64_t *)(base + off - 8);
            if (lsize >= CX_MIN_BLOCK && !(lsize & 63) && lsize <= off - sb->heap_off) {
                uint64_t left = off - lsize;
                uint64_t lw = *(uint64_t *)(base + left);
                if (CX_STATE(lw) == CX_FREE && CX_SIZE(lw) == lsize) {
                    uint64_t lprefix = cx_free_prefix(base, left);
                    prefix = lprefix == lsize ? lsize + prefix : lprefix;
                    backed &= cx_free_backed(base, left);
                    cx_free_remove(base, left);
                    off = left;
                    size += lsize;
                    cx_store((uint64_t *)(base + off), size | CX_FREE);
                }
            }
        }
        cx_footer(base, off, size);
        cx_free_push(base, off, size, CX_BK_WORD(backed ? CX_BK_BACKED : CX_BK_MIXED));
        ((cx_freeblk *)(base + off))->prefix = prefix;
        return off;
    }

    /* Give the pages of big, idle free blocks back to the kernel: punch out each one's
       interior, keeping its header and footer pages, so the backing holds about what is
       allocated. A block qualifies after it has been seen free for min_age ms, so a block
       freed by an overwrite and soon reused is not punched and re-backed for nothing.
       At most max_bytes punched (a bigger block goes in parts, over several calls) and
       max_visits blocks looked at per call; returns the bytes punched. */
    static uint64_t cx_release_free(char *base, const cx_cfg *cfg, int64_t now, uint64_t min_age,
                                    uint64_t max_bytes, uint64_t max_visits) {
        cx_super *sb = CX_SB(base);
        uint64_t g = cfg->grain, done = 0, stamp = (uint64_t)now & CX_BK_SEEN_MASK;
        if (!g) return 0;
        if (!stamp) stamp = 1;
        for (unsigned c = cx_class_above(sb, cx_class(CX_RELEASE_MIN) - 1); c < CX_NCLASS;
             c = cx_class_above(sb, c)) {
            for (uint64_t cur = sb->free_head[c]; cur; cur = ((cx_freeblk *)(base + cur))->next) {
                cx_freeblk *f = (cx_freeblk *)(base + cur);
                unsigned kind = cx_bk_kind(f->backing);
                uint64_t seen = f->backing & CX_BK_SEEN_MASK, size = CX_SIZE(f->size_state);
                uint64_t lo = (cur & ~(g - 1)) + g, hi = (cur + size - 8) & ~(g - 1);
                if (!max_visits--) return done;
                if (kind == CX_BK_HOLLOW) continue;
                if ((f->backing & CX_BK_TAG_MASK) != CX_BK_TAG) {
                    f->prefix = f->punched = 0;
                    seen = 0;
                }
                if (!seen) {
                    f->backing = CX_BK_WORD(kind) | stamp;
                    continue;
                }
                if (((stamp - seen) & CX_BK_SEEN_MASK) < min_age) continue;
                uint64_t from = lo + f->punched, to = hi;
                if (to > from && to - from > max_bytes - done) to = from + ((max_bytes - done) & ~(g - 1));
                /* marked first: a crash after the punch must not leave it marked backed */
                f->backing = to < hi ? CX_BK_WORD(CX_BK_MIXED) | seen : CX_BK_WORD(CX_BK_HOLLOW);
                f->prefix = 0;
                if (to > from) {
                    if (fallocate(cfg->backing_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                  (off_t)from, (off_t)(to - from)) != 0) {
                        f->backing = CX_BK_WORD(CX_BK_HOLLOW);   /* cannot punch: leave it be */
                        continue;
                    }
                    f->punched += to - from;
                    done += to - from;
                }
                if (done + g > max_bytes) return done;
            }
        }
        return done;
    }

    /* ---- index ---- */
    static uint64_t cx_find(char *base, uint64_t h, unsigned tenant, unsigned pdb, const uint8_t *key, size_t klen,
                            uint64_t **link) {
        cx_super *sb = CX_SB(base);
        uint64_t *slot = &CX_BUCKETS(base)[h & (sb->index_buckets - 1)];
        for (uint64_t cur = *slot; cur; cur = *slot) {
            cx_entry *e = CX_E(base, cur);
            if (e->hash == h && e->key_len == klen && e->db == pdb && e->tenant == tenant
                && memcmp(CX_KEY(e), key, klen) == 0) {
                if (link) *link = slot;
                return cur;
            }
            slot = &e->chain_next;
        }
        return 0;
    }

    static void cx_index_unlink(char *base, uint64_t off) {
        cx_entry *e = CX_E(base, off);
        uint64_t *slot = &CX_BUCKETS(base)[e->hash & (CX_SB(base)->index_buckets - 1)];
        while (*slot && *slot != off) slot = &CX_E(base, *slot)->chain_next;
        if (*slot) cx_store(slot, e->chain_next);
    }

    static void cx_index_push(char *base, uint64_t off) {
        cx_entry *e = CX_E(base, off);
        uint64_t *slot = &CX_BUCKETS(base)[e->hash & (CX_SB(base)->index_buckets - 1)];
        e->chain_next = *slot;
        cx_store(slot, off);
    }

    /* ---- LRU lists ---- */
    static inline int cx_list_of(const cx_entry *e) { return e->expire_at != -1; }

    static void cx_lru_push(char *base, uint64_t off) {
        cx_entry *e = CX_E(base, off);
        cx_tenant *t = &CX_SB(base)->tenants[e->tenant];
        int l = cx_list_of(e);
        e->lru_prev = 0;
        e->lru_next = t->head[l];
        if (t->head[l]) CX_E(base, t->head[l])->lru_prev = off;
        else t->tail[l] = off;
        t->head[l] = off;
        t->list_bytes[l] += CX_SIZE(e->size_state);
    }

    static void cx_lru_unlink(char *base, uint64_t off) {
        cx_entry *e = CX_E(base, off);
        cx_tenant *t = &CX_SB(base)->tenants[e->tenant];
        int l = cx_list_of(e);
        if (e->lru_prev) CX_E(base, e->lru_prev)->lru_next = e->lru_next;
        else t->head[l] = e->lru_next;
        if (e->lru_next) CX_E(base, e->lru_next)->lru_prev = e->lru_prev;
        else t->tail[l] = e->lru_prev;
        e->lru_prev = e->lru_next = 0;
        t->list_bytes[l] -= CX_SIZE(e->size_state);
    }

    /* ---- the expiry wheel: every volatile live entry, in the slot of its period, so
       active expiry finds what is due by looking at the periods that have passed.
       Arena-wide: a drop counts against the entry's own tenant. ---- */
    static inline uint64_t cx_period(int64_t ms) { return ms > 0 ? (uint64_t)ms / CX_WHEEL_MS : 0; }
    static inline uint64_t *cx_wheel_slot(cx_super *sb, uint64_t period) {
        return &sb->wheel[period & (CX_WHEEL_SLOTS - 1)];
    }

    /* Volatile entry `off` joins the slot of its period, or of the period active expiry
       looks at next when its own has passed already; within that one, where a look cut
       short by its budget resumes (it becomes the cursor), so the look still meets it. */
    static void cx_wheel_push(char *base, uint64_t off) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        uint64_t period = cx_period(e->expire_at), *slot, at;
        if (period <= sb->wheel_next) period = sb->wheel_next;
        slot = cx_wheel_slot(sb, period);
        at = period == sb->wheel_next ? sb->wheel_cursor : 0;
        e->ttl_next = at ? at : *slot;
        e->ttl_prev = at ? CX_E(base, at)->ttl_prev : (uint64_t)(slot - sb->wheel) + 1;
        if (e->ttl_next) CX_E(base, e->ttl_next)->ttl_prev = off;
        if (e->ttl_prev > CX_WHEEL_SLOTS) CX_E(base, e->ttl_prev)->ttl_next = off;
        else *slot = off;
        if (at) sb->wheel_cursor = off;
    }

    static void cx_wheel_unlink(char *base, uint64_t off) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        if (sb->wheel_cursor == off) sb->wheel_cursor = e->ttl_next;
        if (e->ttl_prev > CX_WHEEL_SLOTS) CX_E(base, e->ttl_prev)->ttl_next = e->ttl_next;
        else sb->wheel[e->ttl_prev - 1] = e->ttl_next;
        if (e->ttl_next) CX_E(base, e->ttl_next)->ttl_prev = e->ttl_prev;
        e->ttl_prev = e->ttl_next = 0;
    }

    /* key + value bytes of live entry e changed by delta (tenant 0's share is derived) */
    static inline void cx_dataset_add(char *base, const cx_entry *e, uint64_t delta) {
        CX_SB(base)->dataset += delta;
        if (e->tenant) CX_SB(base)->tmeta[e->tenant].dataset += delta;
    }

    /* entry counters and the expiry wheel, +1 when an entry becomes live, -1 when it
       stops being live. A tenant's used_bytes follows its blocks instead (cx_reserve /
       cx_block_free). */
    static void cx_account(char *base, cx_entry *e, int add) {
        cx_super *sb = CX_SB(base);
        cx_tenant *t = &sb->tenants[e->tenant];
        uint64_t one = add ? 1 : (uint64_t)-1;
        uint64_t bytes = (uint64_t)e->key_len + e->value_len;
        sb->entries += one;
        cx_dataset_add(base, e, add ? bytes : (uint64_t)0 - bytes);
        cx_db_keys(base, e->tenant)[e->db] += one;
        t->keys += one;
        if (e->expire_at != -1) {
            cx_db_volatile(base, e->tenant)[e->db] += one;
            t->volatile_keys += one;
            if (add) cx_wheel_push(base, (uint64_t)((char *)e - base));
            else cx_wheel_unlink(base, (uint64_t)((char *)e - base));
        }
    }

    /* a reserved or zombie block goes back to the heap and off its tenant's bill */
    static uint64_t cx_block_free(char *base, uint64_t off) {
        cx_entry *e = CX_E(base, off);
        CX_SB(base)->tenants[e->tenant].used_bytes -= CX_SIZE(e->size_state);
        return cx_heap_free(base, off);
    }

    /* ---- LFU: 8-bit logarithmic counter with a decay of one per idle minute ---- */
    #define CX_LFU_INIT 5
    #define CX_LFU_LOG_FACTOR 10
    static inline uint16_t cx_minutes(int64_t now) { return (uint16_t)((uint64_t)now / 60000u); }
    static inline unsigned cx_lfu_value(const cx_entry *e, int64_t now) {
        unsigned idle = (uint16_t)(cx_minutes(now) - e->lfu_minutes);
        return idle >= e->lfu ? 0 : e->lfu - idle;
    }
    static void cx_lfu_touch(cx_entry *e, int64_t now, uint64_t *rng) {
        unsigned c = cx_lfu_value(e, now);
        if (c < 255) {
            double base_val = c > CX_LFU_INIT ? (double)(c - CX_LFU_INIT) : 0.0;
            double r = (double)(cx_rand(rng) >> 11) * (1.0 / 9007199254740992.0);
            if (r < 1.0 / (base_val * CX_LFU_LOG_FACTOR + 1.0)) c++;
        }
        e->lfu = (uint8_t)c;
        e->lfu_minutes = cx_minutes(now);
    }

    /* ---- entry lifecycle ---- */

    /* Stop `off` being live: marked non-live first, then unlinked; freed now, or
       left as a zombie until its last unpin. */
    static void cx_drop(char *base, uint64_t off, int in_index) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        cx_store(&e->size_state, CX_SIZE(e->size_state) | CX_ZOMBIE);
        if (in_index) cx_index_unlink(base, off);
        cx_lru_unlink(base, off);
        cx_account(base, e, 0);
        if (e->pins) sb->zombies++;
        else cx_block_free(base, off);
    }

    static void cx_pin(char *base, uint64_t off) {
        cx_entry *e = CX_E(base, off);
        if (e->pins++ == 0) CX_SB(base)->pinned++;
    }

    static void cx_unpin(char *base, uint64_t off) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        if (--e->pins) return;
        sb->pinned--;
        if (CX_STATE(e->size_state) == CX_ZOMBIE) {
            sb->zombies--;
            cx_block_free(base, off);
        }
    }

    /* `off` (live) gets a new generation and header checksum after an in-place change */
    /* ---- optional value checksums (arena-checksum) ----
       An entry committed while checksums are on carries CX_SUMMED in its type and a
       64-bit checksum of its value in the last 8 bytes of its key area, just before
       the value (its key area was reserved 8 bytes larger for it). */
    #define CX_TYPE_MASK 0x7f
    #define CX_SUMMED 0x80

    static inline uint64_t cx_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

    /* Four independent multiply-rotate lanes over 32-byte stripes, then the tail and a
       final avalanche: fast enough to verify multi-MiB values on every read. */
    static uint64_t cx_value_sum(const uint8_t *p, uint64_t n) {
        const uint64_t m1 = 0x9E3779B185EBCA87ull, m2 = 0xC2B2AE3D27D4EB4Full;
        uint64_t lane[4] = {m1 ^ n, m2, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
        uint64_t i = 0, w, h;
        for (; i + 32 <= n; i += 32) {
            for (int j = 0; j < 4; j++) {
                memcpy(&w, p + i + 8 * j, 8);
                lane[j] = cx_rotl(lane[j] + w * m2, 31) * m1;
            }
        }
        h = cx_rotl(lane[0], 1) + cx_rotl(lane[1], 7) + cx_rotl(lane[2], 12) + cx_rotl(lane[3], 18);
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, p + i, 8);
            h = cx_rotl(h ^ (cx_rotl(w * m2, 31) * m1), 27) * m1 + m2;
        }
        for (; i < n; i++) h = cx_rotl(h ^ (p[i] * m1), 11) * m2;
        h ^= h >> 33; h *= m2; h ^= h >> 29; h *= m1; h ^= h >> 32;
        return h;
    }

    static inline uint64_t *cx_sum_slot(cx_entry *e) { return (uint64_t *)(CX_VAL(e) - 8); }

    static inline int cx_value_intact(cx_entry *e) {
        return !(e->type & CX_SUMMED) || *cx_sum_slot(e) == cx_value_sum(CX_VAL(e), e->value_len);
    }

    /* Key bytes the entry's key area can take (a summed entry keeps 8 for its checksum). */
    static inline uint64_t cx_key_room(const cx_entry *e) {
        return e->key_cap - ((e->type & CX_SUMMED) ? 8 : 0);
    }

    /* After the value changed in place (APPEND, SETRANGE past the end): a new generation,
       the value's checksum if it has one, and the header's. */
    static void cx_reseal(char *base, uint64_t off) {
        cx_entry *e = CX_E(base, off);
        if (e->type & CX_SUMMED) *cx_sum_slot(e) = cx_value_sum(CX_VAL(e), e->value_len);
        e->generation = ++CX_SB(base)->generation;
        e->checksum = cx_entry_sum(e);
    }

    static int cx_expired(const cx_entry *e, int64_t now) { return e->expire_at != -1 && e->expire_at < now; }

    /* ---- eviction ---- */
    static uint64_t cx_lru_oldest(char *base, uint64_t cur) {
        while (cur && CX_E(base, cur)->pins) cur = CX_E(base, cur)->lru_prev;
        return cur;
    }

    /* Which entries a random pick may return: one tenant's, of physical db `db` unless -1,
       volatile only, unpinned only. */
    typedef struct { unsigned tenant; int db, volatile_only, unpinned_only; } cx_filter;

    static inline int cx_eligible(const cx_entry *e, const cx_filter *f) {
        return e->tenant == f->tenant && (f->db < 0 || e->db == (unsigned)f->db)
            && (!f->volatile_only || e->expire_at != -1) && (!f->unpinned_only || !e->pins);
    }
    static uint64_t cx_pick_in_bucket(char *base, uint64_t head, uint64_t *rng, const cx_filter *f) {
        uint64_t n = 0, cur;
        for (cur = head; cur; cur = CX_E(base, cur)->chain_next) n += cx_eligible(CX_E(base, cur), f);
        if (!n) return 0;
        uint64_t pick = cx_rand(rng) % n;
        for (cur = head; cur; cur = CX_E(base, cur)->chain_next)
            if (cx_eligible(CX_E(base, cur), f) && pick-- == 0) return cur;
        return 0;
    }
    /* A random eligible entry. Buckets are drawn at random until one holds a match, so
       every non-empty bucket is equally likely however the entries are spread; after a
       budget proportional to the expected number of draws it falls back to a scan from
       a random bucket. */
    static uint64_t cx_random_entry(char *base, uint64_t *rng, const cx_filter *f) {
        cx_super *sb = CX_SB(base);
        uint64_t *bk = CX_BUCKETS(base), mask = sb->index_buckets - 1, found, b, i;
        uint64_t candidates = f->db >= 0 ? cx_db_keys(base, f->tenant)[f->db] : sb->tenants[f->tenant].keys;
        if (!candidates) return 0;
        uint64_t budget = 8 * (sb->index_buckets / candidates + 1);
        if (budget > (1u << 16)) budget = 1u << 16;
        for (i = 0; i < budget; i++) {
            b = cx_rand(rng) & mask;
            if (bk[b] && (found = cx_pick_in_bucket(base, bk[b], rng, f))) return found;
        }
        b = cx_rand(rng) & mask;
        for (i = 0; i <= mask; i++, b = (b + 1) & mask)
            if (bk[b] && (found = cx_pick_in_bucket(base, bk[b], rng, f))) return found;
        return 0;
    }

    static inline int cx_volatile_policy(int policy) {
        return policy == CX_VOLATILE_LRU || policy == CX_VOLATILE_RANDOM || policy == CX_VOLATILE_TTL
            || policy == CX_VOLATILE_LFU;
    }

    /* bytes of tenant t that `policy` lets eviction take (pinned entries included: an upper bound) */
    static uint64_t cx_evictable(const cx_tenant *t, int policy) {
        if (policy == CX_NOEVICTION) return 0;
        return cx_volatile_policy(policy) ? t->list_bytes[1] : t->list_bytes[0] + t->list_bytes[1];
    }

    /* the entry of `tenant` that `policy` evicts next, 0 if none */
    static uint64_t cx_victim(char *base, const cx_cfg *cfg, unsigned tenant, int policy, int64_t now) {
        cx_tenant *t = &CX_SB(base)->tenants[tenant];
        cx_filter f = { tenant, -1, cx_volatile_policy(policy), 1 };
        uint64_t a, b, best = 0;
        int i;
        switch (policy) {
        case CX_ALLKEYS_LRU:
            a = cx_lru_oldest(base, t->tail[0]);
            b = cx_lru_oldest(base, t->tail[1]);
            if (!a || !b) return a ? a : b;
            return CX_E(base, a)->last_access <= CX_E(base, b)->last_access ? a : b;
        case CX_VOLATILE_LRU:
            return cx_lru_oldest(base, t->tail[1]);
        case CX_ALLKEYS_RANDOM:
        case CX_VOLATILE_RANDOM:
            return cx_random_entry(base, cfg->rng, &f);
        case CX_VOLATILE_TTL:
            for (i = 0; i < cfg->samples; i++) {
                a = cx_random_entry(base, cfg->rng, &f);
                if (!a) break;
                if (!best || CX_E(base, a)->expire_at < CX_E(base, best)->expire_at) best = a;
            }
            return best;
        case CX_ALLKEYS_LFU:
        case CX_VOLATILE_LFU:
            for (i = 0; i < cfg->samples; i++) {
                a = cx_random_entry(base, cfg->rng, &f);
                if (!a) break;
                if (!best) { best = a; continue; }
                unsigned fa = cx_lfu_value(CX_E(base, a), now), fb = cx_lfu_value(CX_E(base, best), now);
                if (fa < fb || (fa == fb && CX_E(base, a)->last_access < CX_E(base, best)->last_access)) best = a;
            }
            return best;
        default:
            return 0;
        }
    }

    /* An entry to evict because the arena as a whole is over its memory limit. Tenants
       give memory back in tiers, and a tier is used only when no tenant of the tiers
       before it has anything its policy lets go:
         1. tenants over their quota, the largest overage first (down to the quota);
         2. tenants without a quota (the default tenant unless it has one), the largest first;
         3. tenants within their quota, the fullest (highest used/quota) first.
       Each tenant's own policy picks the entry; a noeviction tenant gives nothing. */
    static uint64_t cx_global_victim(char *base, const cx_cfg *cfg, int64_t now) {
        cx_super *sb = CX_SB(base);
        uint64_t tried = 0, m, v;
        for (;;) {
            int best = -1, best_tier = 4;
            uint64_t best_score = 0, best_used = 0, best_quota = 1;
            for (m = cx_tenant_bits(sb) & ~tried; m; m &= m - 1) {
                unsigned i = (unsigned)__builtin_ctzll(m);
                cx_tenant *t = &sb->tenants[i];
                int tier, better;
                uint64_t score = 0;
                if (!cx_evictable(t, cx_policy_of(sb, i, cfg))) continue;
                if (!t->quota) { tier = 2; score = t->used_bytes; }
                else if (t->used_bytes > t->quota) { tier = 1; score = t->used_bytes - t->quota; }
                else tier = 3;
                if (tier != best_tier) better = tier < best_tier;
                else if (tier == 3) better = (__uint128_t)t->used_bytes * best_quota > (__uint128_t)best_used * t->quota;
                else better = score > best_score;
                if (better) {
                    best = (int)i;
                    best_tier = tier;
                    best_score = score;
                    best_used = t->used_bytes;
                    best_quota = t->quota;
                }
            }
            if (best < 0) return 0;
            v = cx_victim(base, cfg, (unsigned)best, cx_policy_of(sb, (unsigned)best, cfg), now);
            if (v) return v;
            tried |= 1ull << best;      /* everything it could give is pinned */
        }
    }

    static void cx_evict(char *base, uint64_t off) {
        cx_super *sb = CX_SB(base);
        sb->tenants[CX_E(base, off)->tenant].evicted++;
        sb->evicted++;
        cx_drop(base, off, 1);
    }

    /* Allocate `need` bytes for `tenant` (-1: for no tenant, e.g. a counter table),
       evicting until the block fits the tenant's quota, the memory limit and one free
       block: first the tenant's own entries (its policy) while it would exceed its
       quota, then, while the arena is over its limit, entries cx_global_victim picks.
       0 = out of memory; nothing is evicted when it is clear up front that eviction
       cannot make room, so a write bigger than the quota or the limit evicts nothing. */
    static uint64_t cx_alloc_room(char *base, int tenant, uint64_t need, const cx_cfg *cfg, int64_t now) {
        cx_super *sb = CX_SB(base);
        cx_tenant *t = tenant >= 0 ? &sb->tenants[tenant] : NULL;
        uint64_t limit = cfg->maxmemory && cfg->maxmemory < sb->heap_size ? cfg->maxmemory : sb->heap_size;
        uint64_t quota = t ? t->quota : 0, evictable = 0, off, v, m;
        int own = 0, err = 0;
        if (cfg->beyond_limits && (off = cx_heap_alloc(base, need, cfg, &err))) return off;
        if (err) { *cfg->backing_errno = err; return 0; }
        if (need > limit || (quota && need > quota)) return 0;
        if ((!quota || t->used_bytes + need <= quota) && sb->heap_used + need <= limit
            && (off = cx_heap_alloc(base, need, cfg, &err)))
            return off;
        /* a full backing: evicting would lose entries without making the file system any
           room (their blocks are backed already and reusable only if one fits) */
        if (err) { *cfg->backing_errno = err; return 0; }
        if (cfg->no_evict) return 0;
        if (quota) {
            own = cx_policy_of(sb, (unsigned)tenant, cfg);
            if (t->used_bytes + need > quota + cx_evictable(t, own)) return 0;
        }
        for (m = cx_tenant_bits(sb); m; m &= m - 1) {
            unsigned i = (unsigned)__builtin_ctzll(m);
            evictable += cx_evictable(&sb->tenants[i], cx_policy_of(sb, i, cfg));
        }
        if (sb->heap_used + need > limit + evictable) return 0;
        for (;;) {
            if (quota && t->used_bytes + need > quota) {
                v = cx_victim(base, cfg, (unsigned)tenant, own, now);
            } else {
                if (sb->heap_used + need <= limit && (off = cx_heap_alloc(base, need, cfg, &err))) return off;
                if (err) { *cfg->backing_errno = err; return 0; }
                v = cx_global_victim(base, cfg, now);
            }
            if (!v) return 0;
            cx_evict(base, v);
        }
    }

    /* Redis's performEvictions before a command: evict (in cx_global_victim's order)
       until the heap is back within the limit, e.g. after maxmemory was lowered.
       1 = within it, 0 = still over it with nothing left that may be evicted. */
    static int cx_evict_to_limit(char *base, const cx_cfg *cfg, int64_t now) {
        cx_super *sb = CX_SB(base);
        uint64_t limit = cfg->maxmemory && cfg->maxmemory < sb->heap_size ? cfg->maxmemory : sb->heap_size;
        uint64_t v;
        while (sb->heap_used > limit) {
            if (cfg->no_evict || !(v = cx_global_victim(base, cfg, now))) return 0;
            cx_evict(base, v);
        }
        return 1;
    }

    /* A reserved block of `tenant`, charged to it, with room for a key of key_cap bytes
       and value_cap bytes of value; value_len is set to value_len. 0 = out of memory. */
    static uint64_t cx_reserve(char *base, unsigned tenant, uint64_t key_cap, uint64_t value_cap, uint64_t value_len,
                               const cx_cfg *cfg, int64_t now) {
        if (key_cap > CX_SB(base)->heap_size || value_cap > CX_SB(base)->heap_size) return 0;
        uint64_t area = cx_key_area(key_cap);
        uint64_t off = cx_alloc_room(base, (int)tenant, cx_block_bytes(area, value_cap), cfg, now);
        if (!off) return 0;
        cx_entry *e = CX_E(base, off);
        e->chain_next = e->lru_prev = e->lru_next = 0;
        e->expire_at = -1;
        e->last_access = now;
        e->value_len = value_len;
        e->generation = 0;
        e->hash = 0;
        e->key_len = 0;
        e->key_cap = (uint32_t)area;
        e->pins = 0;
        e->checksum = 0;
        e->db = 0;
        e->type = 0;
        e->lfu = CX_LFU_INIT;
        e->tenant = (uint16_t)tenant;
        e->lfu_minutes = cx_minutes(now);
        CX_SB(base)->tenants[tenant].used_bytes += CX_SIZE(e->size_state);
        CX_SB(base)->reserved++;
        return off;
    }

    static void cx_release(char *base, uint64_t off) {
        CX_SB(base)->reserved--;
        cx_block_free(base, off);
    }

    /* Make reserved block `off` the live entry for (its tenant, pdb, key), replacing any
       current entry: the new entry is complete and live before it is linked, the old
       one is unlinked by the same store and then dropped. */
    static void cx_commit(char *base, uint64_t off, unsigned pdb, const uint8_t *key, size_t klen,
                          int64_t expire_at, int type, int keep_ttl, int64_t now, int checksum) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        uint64_t h = cx_key_hash(sb, e->tenant, pdb, key, klen), *link = NULL;
        uint64_t old = cx_find(base, h, e->tenant, pdb, key, klen, &link);
        if (keep_ttl && old && !cx_expired(CX_E(base, old), now)) expire_at = CX_E(base, old)->expire_at;
        memcpy(CX_KEY(e), key, klen);
        e->key_len = (uint32_t)klen;
        e->db = (uint16_t)pdb;
        type &= CX_TYPE_MASK;
        if (checksum && e->key_cap >= klen + 8) {
            *cx_sum_slot(e) = cx_value_sum(CX_VAL(e), e->value_len);
            type |= CX_SUMMED;
        }
        e->type = (uint8_t)type;
        e->hash = h;
        e->expire_at = expire_at;
        e->last_access = now;
        e->generation = ++sb->generation;
        e->checksum = cx_entry_sum(e);
        cx_store(&e->size_state, CX_SIZE(e->size_state) | CX_LIVE);
        sb->reserved--;
        if (old) {
            e->chain_next = CX_E(base, old)->chain_next;
            cx_store(link, off);
            cx_drop(base, old, 0);
        } else {
            cx_index_push(base, off);
        }
        cx_account(base, e, 1);
        cx_lru_push(base, off);
    }

    /* corrupt: NULL, or where to count a value that fails its checksum (it is dropped and
       the lookup is a miss) */
    static uint64_t cx_lookup(char *base, unsigned tenant, unsigned pdb, const uint8_t *key, size_t klen,
                              int touch, int stats, int lfu, uint64_t *rng, uint64_t *corrupt) {
        cx_super *sb = CX_SB(base);
        cx_tenant *t = &sb->tenants[tenant];
        uint64_t h = cx_key_hash(sb, tenant, pdb, key, klen);
        uint64_t off = cx_find(base, h, tenant, pdb, key, klen, NULL);
        int64_t now = 0;
        if (off) {
            cx_entry *e = CX_E(base, off);
            if (e->expire_at != -1 || touch) now = cx_now_ms();
            if (cx_expired(e, now)) {
                cx_drop(base, off, 1);
                sb->expired++;
                t->expired++;
                off = 0;
            } else if (corrupt && !cx_value_intact(e)) {
                cx_drop(base, off, 1);
                (*corrupt)++;
                off = 0;
            } else if (touch) {
                e->last_access = now;
                if (t->head[cx_list_of(e)] != off) {
                    cx_lru_unlink(base, off);
                    cx_lru_push(base, off);
                }
                if (lfu) cx_lfu_touch(e, now, rng);
            }
        }
        if (stats) {
            if (off) { sb->hits++; t->hits++; }
            else { sb->misses++; t->misses++; }
        }
        return off;
    }

    /* Change the expiry of live entry `off`; moving between the persistent and
       volatile lists makes it the most recent of its new list (the write touched it). */
    static void cx_set_expire(char *base, uint64_t off, int64_t at, int64_t now) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        int was = cx_list_of(e), will = at != -1;
        if (was != will) {
            cx_lru_unlink(base, off);
            uint64_t one = will ? 1 : (uint64_t)-1;
            cx_db_volatile(base, e->tenant)[e->db] += one;
            sb->tenants[e->tenant].volatile_keys += one;
        }
        if (was) cx_wheel_unlink(base, off);
        e->expire_at = at;
        if (will) cx_wheel_push(base, off);
        cx_reseal(base, off);
        if (was != will) {
            e->last_access = now;
            cx_lru_push(base, off);
        }
    }

    /* ---- RENAME / MOVE: a kill -9 at any point leaves the key at its old name or at
       its new one (the rebuild finishes a rename it finds recorded) ---- */

    /* entry `off` takes the identity recorded in r (its rest, value and TTL, stay): the
       key bytes, then the header fields and checksum that make them its identity */
    static void cx_rename_write_key(char *base, uint64_t off, const cx_rename_intent *r) {
        memcpy(CX_KEY(CX_E(base, off)), r->key, r->key_len);
    }
    static void cx_rename_seal(char *base, uint64_t off, const cx_rename_intent *r) {
        cx_entry *e = CX_E(base, off);
        e->key_len = r->key_len;
        e->db = r->db;
        e->hash = r->hash;
        e->generation = r->generation;
        e->checksum = cx_entry_sum(e);
    }

    /* Rename live entry `off` to (its tenant, pdb, key) without moving its value; the
       caller checked that the key fits its key area and CX_RENAME_KEY_MAX. */
    static void cx_rename_in_place(char *base, uint64_t off, unsigned pdb, const uint8_t *key, size_t klen) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        cx_rename_intent *r = &sb->rename;
        uint64_t h = cx_key_hash(sb, e->tenant, pdb, key, klen);
        uint64_t dst = cx_find(base, h, e->tenant, pdb, key, klen, NULL);
        memcpy(r->key, key, klen);
        r->key_len = (uint32_t)klen;
        r->db = (uint16_t)pdb;
        r->hash = h;
        r->entry = off;
        r->generation = ++sb->generation;   /* newer than the destination's: it wins a rebuild */
        cx_store(&r->state, CX_RENAME_IN_PLACE);
        CX_CRASH_POINT(1);
        if (dst) cx_drop(base, dst, 1);
        CX_CRASH_POINT(2);
        cx_index_unlink(base, off);
        cx_account(base, e, 0);
        CX_CRASH_POINT(3);
        cx_rename_write_key(base, off, r);
        CX_CRASH_POINT(4);
        cx_rename_seal(base, off, r);
        CX_CRASH_POINT(5);
        cx_index_push(base, off);
        cx_account(base, e, 1);
        CX_CRASH_POINT(6);
        cx_store(&r->state, CX_RENAME_NONE);
    }

    /* Rename live entry `src` to (its tenant, pdb, key) by committing reserved block
       `fresh`, which holds a copy of its value; the caller pins src. */
    static void cx_rename_by_copy(char *base, uint64_t src, uint64_t fresh, unsigned pdb, const uint8_t *key,
                                  size_t klen, int64_t now, int checksum) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, src);
        cx_rename_intent *r = &sb->rename;
        r->entry = src;
        r->entry_generation = e->generation;
        r->generation = sb->generation + 1;   /* the one cx_commit gives the copy */
        cx_store(&r->state, CX_RENAME_BY_COPY);
        CX_CRASH_POINT(11);
        cx_commit(base, fresh, pdb, key, klen, e->expire_at, e->type, 0, now, checksum);
        CX_CRASH_POINT(12);
        cx_drop(base, src, 1);
        CX_CRASH_POINT(13);
        cx_store(&r->state, CX_RENAME_NONE);
    }

    /* A rebuild's first step: a recorded in-place rename gets its entry's new identity,
       so the heap walk sees a whole entry (the destination's older one loses to it). */
    static void cx_rename_redo(char *base) {
        cx_super *sb = CX_SB(base);
        cx_rename_intent *r = &sb->rename;
        uint64_t off = r->entry;
        if (r->state != CX_RENAME_IN_PLACE) return;
        if (off >= sb->heap_off && off < sb->heap_off + sb->heap_size && !(off & 63)
            && CX_STATE(CX_E(base, off)->size_state) == CX_LIVE && r->key_len <= CX_RENAME_KEY_MAX
            && r->key_len <= cx_key_room(CX_E(base, off))) {
            cx_rename_write_key(base, off, r);
            cx_rename_seal(base, off, r);
        }
        r->state = CX_RENAME_NONE;      /* after: a kill -9 during the rebuild redoes it */
    }

    /* After the rebuild's heap walk: a rename by copy whose copy is live loses its
       source (copy_live: the walk indexed an entry of the recorded generation). */
    static void cx_rename_undo_source(char *base, int copy_live) {
        cx_super *sb = CX_SB(base);
        cx_rename_intent *r = &sb->rename;
        uint64_t off = r->entry;
        if (r->state != CX_RENAME_BY_COPY) return;
        if (copy_live && off >= sb->heap_off && off < sb->heap_off + sb->heap_size && !(off & 63)) {
            cx_entry *e = CX_E(base, off);
            if (CX_STATE(e->size_state) == CX_LIVE && e->generation == r->entry_generation) {
                cx_index_unlink(base, off);
                e->size_state = CX_SIZE(e->size_state) | CX_FREE;
            }
        }
        r->state = CX_RENAME_NONE;
    }

    /* Active expiry: look at the wheel's periods from wheel_next up to now's, dropping
       what is due, for about budget_ns (the clock is read every 32 entries, so a
       budget of 0 looks at 32). It resumes where it stopped; a period that has not
       passed yet is looked at again next time, and so is one whose look began
       before it was over. An entry met in another period's slot
       (one whose period is a turn or more away, or placed there before a clock step)
       moves to its own. A walk behind by a whole turn or more (a stopped server) or
       ahead of the clock (it was set back) looks at every slot once. */
    static uint64_t cx_expire_cycle(char *base, int64_t now, int64_t budget_ns) {
        cx_super *sb = CX_SB(base);
        uint64_t target = cx_period(now), expired = 0, checked = 0, cur, next, mask = CX_WHEEL_SLOTS - 1;
        struct timespec ts;
        int64_t start;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        start = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        if (sb->wheel_next > target || target - sb->wheel_next >= CX_WHEEL_SLOTS) {
            sb->wheel_next = target >= mask ? target - mask : 0;
            sb->wheel_cursor = 0;
        }
        for (;;) {
            if (sb->wheel_cursor) {
                cur = sb->wheel_cursor;
            } else {
                cur = *cx_wheel_slot(sb, sb->wheel_next);
                sb->wheel_walk_from = target;
            }
            sb->wheel_cursor = 0;
            for (; cur; cur = next) {
                if (checked && !(checked & 31)) {
                    clock_gettime(CLOCK_MONOTONIC, &ts);
                    if ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - start >= budget_ns) {
                        sb->wheel_cursor = cur;
                        goto out;
                    }
                }
                cx_entry *e = CX_E(base, cur);
                next = e->ttl_next;
                checked++;
                if (e->expire_at < now) {
                    sb->tenants[e->tenant].expired++;
                    cx_drop(base, cur, 1);
                    expired++;
                } else if ((cx_period(e->expire_at) & mask) != (sb->wheel_next & mask)) {
                    cx_wheel_unlink(base, cur);
                    cx_wheel_push(base, cur);
                }
            }
            if (sb->wheel_next == target) break;
            /* entries passed over while the period was running may have come due since */
            if (sb->wheel_walk_from <= sb->wheel_next) continue;
            sb->wheel_next++;
        }
    out:
        sb->expired += expired;
        return expired;
    }

    /* ---- format, validate, rebuild ---- */
    static uint64_t cx_buckets_for(uint64_t size) {
        uint64_t n = CX_MIN_BUCKETS;
        while (n * 2 <= size / CX_BYTES_PER_BUCKET) n *= 2;
        return n;
    }

    /* Where cx_format puts the heap: it follows from the arena size alone. */
    static uint64_t cx_heap_off_for(uint64_t size) {
        return (CX_SUPER_BYTES + cx_buckets_for(size) * 8 + CX_SUPER_BYTES - 1) & ~(CX_SUPER_BYTES - 1);
    }

    static void cx_format(char *base, uint64_t size, uint64_t seed) {
        cx_super *sb = CX_SB(base);
        memset(sb, 0, CX_SUPER_BYTES);
        uint64_t nb = cx_buckets_for(size);
        sb->arena_size = size;
        sb->index_off = CX_SUPER_BYTES;
        sb->index_buckets = nb;
        sb->heap_off = cx_heap_off_for(size);
        sb->heap_size = (size - sb->heap_off) & ~63ull;
        sb->hash_seed = seed;
        sb->formatted_ms = (uint64_t)cx_now_ms();
        sb->wheel_next = cx_period((int64_t)sb->formatted_ms);
        memset(base + sb->index_off, 0, nb * 8);
        for (int i = 0; i < CX_NDB; i++) sb->db_map[i] = (uint8_t)i;
        *(uint64_t *)(base + sb->heap_off) = sb->heap_size | CX_FREE;
        cx_footer(base, sb->heap_off, sb->heap_size);
        cx_free_push(base, sb->heap_off, sb->heap_size, CX_BK_WORD(CX_BK_HOLLOW));  /* never touched */
        memcpy(sb->magic, "CXLREDIS", 8);
        sb->version = CX_LAYOUT_VERSION;
        sb->checksum = cx_super_sum(sb);    /* last: a torn format fails the checksum */
    }

    static int cx_validate(const char *base, uint64_t size) {
        const cx_super *sb = (const cx_super *)base;
        const uint64_t *words = (const uint64_t *)base;
        size_t i = 0;
        while (i < CX_SUPER_BYTES / 8 && words[i] == 0) i++;
        if (i == CX_SUPER_BYTES / 8) {
            /* A new device reads as zeros throughout. A formatted heap's first block
               header is never 0: a zeroed superblock over it is damage, not a new arena. */
            uint64_t heap_off = cx_heap_off_for(size);
            return heap_off + 8 <= size && *(const uint64_t *)(base + heap_off) ? CX_ZEROED_SUPER : CX_ZERO;
        }
        if (memcmp(sb->magic, "CXLREDIS", 8) != 0) return CX_BAD_MAGIC;
        if (sb->version != CX_LAYOUT_VERSION) return CX_BAD_VERSION;
        if (sb->checksum != cx_super_sum(sb)) return CX_BAD_CHECKSUM;
        if (sb->arena_size != size) return CX_BAD_SIZE;
        uint64_t nb = sb->index_buckets;
        if (sb->index_off != CX_SUPER_BYTES || nb < CX_MIN_BUCKETS || (nb & (nb - 1))
            || sb->heap_off < sb->index_off + nb * 8 || (sb->heap_off & 63) || (sb->heap_size & 63)
            || sb->heap_size < CX_MIN_BLOCK || sb->heap_off + sb->heap_size > size)
            return CX_BAD_GEOMETRY;
        return CX_OK;
    }

    static int cx_entry_intact(char *base, uint64_t off, uint64_t size) {
        cx_super *sb = CX_SB(base);
        cx_entry *e = CX_E(base, off);
        if (e->key_len > e->key_cap || ((CX_HDR + e->key_cap) & 63)) return 0;
        if (CX_HDR + (uint64_t)e->key_cap + 8 > size || e->value_len > size - CX_HDR - e->key_cap - 8) return 0;
        if (e->db >= CX_NDB || e->tenant >= CX_NTENANT) return 0;
        if (e->checksum != cx_entry_sum(e)) return 0;
        return e->hash == cx_key_hash(sb, e->tenant, e->db, CX_KEY(e), e->key_len);
    }

    /* does existing tenant t (1..63) point at its own, intact counter table? */
    static int cx_dbtab_intact(char *base, unsigned t) {
        cx_super *sb = CX_SB(base);
        uint64_t off = sb->tmeta[t].dbtab;
        if (off < sb->heap_off || off > sb->heap_off + sb->heap_size - CX_DBTAB_BYTES || (off & 63)) return 0;
        cx_dbtab *tb = (cx_dbtab *)(base + off);
        return tb->size_state == (CX_DBTAB_BYTES | CX_TABLE) && tb->tenant == t
            && tb->incarnation == sb->tmeta[t].incarnation;
    }

    /* is the TABLE block at off the counter table of an existing tenant? */
    static int cx_dbtab_owned(char *base, uint64_t off) {
        cx_super *sb = CX_SB(base);
        uint64_t t = ((cx_dbtab *)(base + off))->tenant;
        return t > 0 && t < CX_NTENANT && sb->tmeta[t].incarnation && sb->tmeta[t].dbtab == off;
    }

    typedef struct { int64_t last_access; uint64_t off; } cx_recency;
    static int cx_recency_cmp(const void *a, const void *b) {
        const cx_recency *x = (const cx_recency *)a, *y = (const cx_recency *)b;
        if (x->last_access != y->last_access) return x->last_access < y->last_access ? -1 : 1;
        return x->off < y->off ? -1 : x->off > y->off;
    }

    /* Rebuild everything derived from the heap after an unclean shutdown. Returns
       the number of discarded blocks, or -1 if memory for sorting ran out. */
    static int64_t cx_rebuild(char *base) {
        cx_super *sb = CX_SB(base);
        uint64_t lo = sb->heap_off, hi = sb->heap_off + sb->heap_size, off, size, w;
        uint64_t maxgen = sb->generation, live = 0;
        int64_t dropped = 0;
        int i, seen[CX_NDB], copy_live = 0;

        cx_rename_redo(base);
        memset(CX_BUCKETS(base), 0, sb->index_buckets * 8);
        memset(sb->free_map, 0, sizeof sb->free_map);
        memset(sb->free_head, 0, sizeof sb->free_head);
        memset(sb->db_keys, 0, sizeof sb->db_keys);
        memset(sb->db_volatile, 0, sizeof sb->db_volatile);
        sb->tenant_bits = 0;
        for (i = 0; i < CX_NTENANT; i++) {
            cx_tenant *t = &sb->tenants[i];
            cx_tenant_meta *m = &sb->tmeta[i];
            memset(t->head, 0, sizeof t->head);
            memset(t->tail, 0, sizeof t->tail);
            memset(t->list_bytes, 0, sizeof t->list_bytes);
            t->used_bytes = t->keys = t->volatile_keys = 0;
            m->dataset = 0;
            if (i == 0 || !m->incarnation) continue;
            /* a tenant whose table is gone cannot have been fully created: it goes, and
               its entries with it */
            if (!cx_dbtab_intact(base, (unsigned)i)) {
                m->incarnation = 0;
                continue;
            }
            cx_dbtab *tb = (cx_dbtab *)(base + m->dbtab);
            memset(tb->keys, 0, sizeof tb->keys);
            memset(tb->volatile_keys, 0, sizeof tb->volatile_keys);
            sb->tenant_bits |= 1ull << i;
        }
        sb->heap_used = sb->dataset = sb->entries = sb->reserved = sb->zombies = sb->pinned = 0;
        memset(sb->wheel, 0, sizeof sb->wheel);
        sb->wheel_cursor = 0;
        /* a crash between the two stores of a SWAPDB leaves a non-permutation */
        memset(seen, 0, sizeof seen);
        for (i = 0; i < CX_NDB; i++) seen[sb->db_map[i]]++;
        for (i = 0; i < CX_NDB; i++) {
            if (seen[sb->db_map[i]] > 1) {
                /* a torn swap: either completing or undoing it is a valid state */
                int missing = 0;
                while (seen[missing]) missing++;
                seen[sb->db_map[i]]--;
                seen[missing]++;
                sb->db_map[i] = (uint8_t)missing;
            }
        }

        /* pass 1: index the intact live entries of existing tenants, newest generation
           wins; keep the counter tables of existing tenants (a stray one is a torn
           create or drop) */
        for (off = lo; off < hi; off += size) {
            w = *(uint64_t *)(base + off);
            size = CX_SIZE(w);
            if (size < CX_MIN_BLOCK || size > hi - off) {
                /* a torn size cannot happen with ordered stores; never walk past it */
                *(uint64_t *)(base + off) = (hi - off) | CX_FREE;
                ((cx_freeblk *)(base + off))->backing = CX_BK_WORD(CX_BK_MIXED);
                dropped++;
                break;
            }
            unsigned st = CX_STATE(w);
            if (st == CX_FREE) continue;
            if (st == CX_TABLE) {
                if (!cx_dbtab_owned(base, off)) *(uint64_t *)(base + off) = size | CX_FREE;
                continue;
            }
            if (st != CX_LIVE || !cx_entry_intact(base, off, size)
                || !((cx_tenant_bits(sb) >> CX_E(base, off)->tenant) & 1)) {
                *(uint64_t *)(base + off) = size | CX_FREE;
                dropped++;
                continue;
            }
            cx_entry *e = CX_E(base, off);
            uint64_t *link = NULL;
            uint64_t other = cx_find(base, e->hash, e->tenant, e->db, CX_KEY(e), e->key_len, &link);
            if (other) {
                cx_entry *o = CX_E(base, other);
                if (o->generation > e->generation) {
                    *(uint64_t *)(base + off) = size | CX_FREE;
                    continue;
                }
                e->chain_next = o->chain_next;
                *link = off;
                o->size_state = CX_SIZE(o->size_state) | CX_FREE;
            } else {
                cx_index_push(base, off);
            }
            if (e->generation > maxgen) maxgen = e->generation;
            if (e->generation == sb->rename.generation) copy_live = 1;
        }
        cx_rename_undo_source(base, copy_live);
        /* pass 2: coalesce free runs into the free lists, count the live entries */
        for (off = lo; off < hi; off += size) {
            w = *(uint64_t *)(base + off);
            size = CX_SIZE(w);
            if (CX_STATE(w) == CX_FREE) {
                /* backed only if every part says so: a block pass 1 freed has no backing
                   word (its header's bytes there are a list link), which reads as MIXED */
                uint64_t end = off + size;
                int backed = cx_free_backed(base, off);
                while (end < hi && CX_STATE(*(uint64_t *)(base + end)) == CX_FREE) {
                    backed &= cx_free_backed(base, end);
                    end += CX_SIZE(*(uint64_t *)(base + end));
                }
                size = end - off;
                *(uint64_t *)(base + off) = size | CX_FREE;
                cx_footer(base, off, size);
                cx_free_push(base, off, size, CX_BK_WORD(backed ? CX_BK_BACKED : CX_BK_MIXED));
            } else if (CX_STATE(w) == CX_TABLE) {
                cx_footer(base, off, size);
                sb->heap_used += size;
            } else {
                cx_entry *e = CX_E(base, off);
                e->pins = 0;
                e->lru_prev = e->lru_next = 0;
                cx_footer(base, off, size);
                sb->heap_used += size;
                sb->tenants[e->tenant].used_bytes += size;
                cx_account(base, e, 1);
                live++;
            }
        }
        /* pass 3: LRU lists in last-access order */
        if (live) {
            cx_recency *order = (cx_recency *)malloc(live * sizeof *order);
            uint64_t n = 0;
            if (!order) return -1;
            for (off = lo; off < hi; off += size) {
                w = *(uint64_t *)(base + off);
                size = CX_SIZE(w);
                if (CX_STATE(w) == CX_LIVE) {
                    order[n].last_access = CX_E(base, off)->last_access;
                    order[n++].off = off;
                }
            }
            qsort(order, n, sizeof *order, cx_recency_cmp);
            for (uint64_t k = 0; k < n; k++) cx_lru_push(base, order[k].off);
            free(order);
        }
        sb->generation = maxgen;
        return dropped;
    }

    /* Before a clean close: pins and reservations belong to this process, so
       reset the pins, free zombies and uncommitted reservations. */
    static void cx_release_process_state(char *base) {
        cx_super *sb = CX_SB(base);
        uint64_t off, size;
        if (!sb->pinned && !sb->zombies && !sb->reserved) return;
        for (off = sb->heap_off; off < sb->heap_off + sb->heap_size; off += size) {
            uint64_t w = *(uint64_t *)(base + off);
            size = CX_SIZE(w);
            unsigned st = CX_STATE(w);
            if (st == CX_LIVE) {
                CX_E(base, off)->pins = 0;
            } else if (st == CX_ZOMBIE || st == CX_RESERVED) {
                if (st == CX_RESERVED) sb->reserved--; else sb->zombies--;
                /* the freed block may merge with free neighbours: continue after the merged block */
                off = cx_block_free(base, off);
                size = CX_SIZE(*(uint64_t *)(base + off));
            }
        }
        sb->pinned = 0;
    }

    /* Make free slot t (1..63, nothing left on its bill) an empty tenant; 0 = no room
       for its counter table. The table is complete before the slot points at it and
       the slot exists only once its incarnation is set: a crash in between leaves a
       stray table, which a rebuild frees. */
    static int cx_tenant_create(char *base, unsigned t, const uint8_t *name, uint32_t name_len, uint64_t quota,
                                uint32_t policy, const cx_cfg *cfg, int64_t now) {
        cx_super *sb = CX_SB(base);
        cx_tenant *s = &sb->tenants[t];
        cx_tenant_meta *m = &sb->tmeta[t];
        uint64_t off = cx_alloc_room(base, -1, CX_DBTAB_BYTES, cfg, now);
        if (!off) return 0;
        cx_dbtab *tb = (cx_dbtab *)(base + off);
        uint64_t incarnation = ++sb->generation;
        memset((char *)tb + 8, 0, sizeof *tb - 8);
        tb->tenant = t;
        tb->incarnation = incarnation;
        cx_store(&tb->size_state, CX_DBTAB_BYTES | CX_TABLE);
        memset(s, 0, sizeof *s);
        s->quota = quota;
        memset(m, 0, sizeof *m);
        m->dbtab = off;
        m->policy = policy;
        m->name_len = name_len;
        memcpy(m->name, name, name_len);
        cx_store(&m->incarnation, incarnation);
        sb->tenant_bits |= 1ull << t;
        return 1;
    }

    /* Delete tenant t (1..63) and every entry it has: it stops existing first, so a
       crash part way leaves entries of a missing tenant, which a rebuild discards.
       Pinned entries become zombies that stay on its bill until their last unpin. */
    static void cx_tenant_drop(char *base, unsigned t) {
        cx_super *sb = CX_SB(base);
        uint64_t *bk = CX_BUCKETS(base), b, cur, nxt, table = sb->tmeta[t].dbtab;
        cx_store(&sb->tmeta[t].incarnation, 0);
        sb->tenant_bits &= ~(1ull << t);
        for (b = 0; b < sb->index_buckets; b++) {
            for (cur = bk[b]; cur; cur = nxt) {
                nxt = CX_E(base, cur)->chain_next;
                if (CX_E(base, cur)->tenant == t) cx_drop(base, cur, 1);
            }
        }
        sb->tmeta[t].dbtab = 0;
        cx_heap_free(base, table);
    }

    /* ---- glob matching with Redis's rules (stringmatchlen) ---- */
    static inline int cx_lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

    /* does the single-character pattern token at p[i] match ch? *next = index after it */
    static int cx_glob_token(const uint8_t *p, size_t n, size_t i, uint8_t ch, int nocase, size_t *next) {
        if (p[i] == '?') { *next = i + 1; return 1; }
        if (p[i] == '[') {
            int neg = 0, hit = 0;
            i++;
            if (i < n && p[i] == '^') { neg = 1; i++; }
            while (i < n) {
                if (p[i] == '\\\\' && n - i >= 2) {
                    i++;
                    if (p[i] == ch) hit = 1;
                } else if (p[i] == ']') {
                    break;
                } else if (n - i >= 3 && p[i + 1] == '-') {
                    /* Redis compares plain (signed) chars here */
                    int lo = (signed char)p[i], hi = (signed char)p[i + 2], c = (signed char)ch;
                    if (lo > hi) { int t = lo; lo = hi; hi = t; }
                    if (nocase) { lo = cx_lower(lo); hi = cx_lower(hi); c = cx_lower(c); }
                    if (c >= lo && c <= hi) hit = 1;
                    i += 2;
                } else if (nocase ? cx_lower(p[i]) == cx_lower(ch) : p[i] == ch) {
                    hit = 1;
                }
                i++;
            }
            *next = i < n ? i + 1 : n;   /* an unterminated class runs to the end */
            return neg ? !hit : hit;
        }
        if (p[i] == '\\\\' && n - i >= 2) i++;
        *next = i + 1;
        return nocase ? cx_lower(p[i]) == cx_lower(ch) : p[i] == ch;
    }

    static int cx_glob(const uint8_t *p, size_t pn, const uint8_t *s, size_t sn, int nocase) {
        size_t pi = 0, si = 0, star_p = (size_t)-1, star_s = 0, next;
        if (sn == 0) return pn == 0;    /* Redis never matches an empty string, not even with '*' */
        while (si < sn) {
            if (pi < pn && p[pi] == '*') {
                while (pi < pn && p[pi] == '*') pi++;
                if (pi == pn) return 1;
                star_p = pi;
                star_s = si;
                continue;
            }
            if (pi < pn && cx_glob_token(p, pn, pi, s[si], nocase, &next)) {
                pi = next;
                si++;
                continue;
            }
            if (star_p == (size_t)-1) return 0;
            pi = star_p;
            si = ++star_s;
        }
        while (pi < pn && p[pi] == '*') pi++;
        return pi == pn;
    }

    /* ---- the backing ---- */
    /* *created: the file did not exist (the caller removes it if the arena cannot start) */
    static int cx_os_open(const char *path, int *fd, uint64_t *file_size, int *is_chr, int *created) {
        int f = open(path, O_RDWR | O_CLOEXEC);
        struct stat st;
        *created = 0;
        if (f < 0 && errno == ENOENT) {
            f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            *created = f >= 0;
        }
        if (f < 0) return errno;
        if (fstat(f, &st) != 0) { int err = errno; close(f); return err; }
        *fd = f;
        *file_size = (uint64_t)st.st_size;
        *is_chr = S_ISCHR(st.st_mode);
        return 0;
    }
    static int cx_os_lock(int fd) { return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno; }
    /* The backing file's file system: bytes free for it (UINT64_MAX: the file system does
       not say, as hugetlbfs without a size limit), bytes the file holds already, and the
       unit its pages are allocated and punched in. */
    static int cx_os_space(int fd, uint64_t *avail, uint64_t *held, uint64_t *grain) {
        struct statvfs vfs;
        struct stat st;
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), blk;
        if (fstatvfs(fd, &vfs) != 0 || fstat(fd, &st) != 0) return errno;
        *avail = vfs.f_blocks ? (uint64_t)vfs.f_bavail * vfs.f_frsize : UINT64_MAX;
        *held = (uint64_t)st.st_blocks * 512;
        blk = (uint64_t)st.st_blksize;
        *grain = blk > page && !(blk & (blk - 1)) ? blk : page;
        return 0;
    }
    static uint64_t cx_os_held(int fd) {
        struct stat st;
        return fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
    }
    static int cx_os_truncate(int fd, uint64_t size) { return ftruncate(fd, (off_t)size) == 0 ? 0 : errno; }
    static int cx_os_map(int fd, uint64_t size, char **out) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) return errno;
        *out = (char *)p;
        return 0;
    }
    static void cx_os_hugepages(char *base, uint64_t size) { (void)madvise(base, size, MADV_HUGEPAGE); }
    static int cx_os_bind(char *base, uint64_t size, int node) {
        unsigned long mask[16];
        if (node < 0 || node >= (int)(sizeof mask * 8)) return EINVAL;
        memset(mask, 0, sizeof mask);
        mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
        /* MPOL_BIND = 2, MPOL_MF_MOVE = 2: also migrate pages a previous run faulted in */
        long r = syscall(SYS_mbind, base, (unsigned long)size, 2, mask, (unsigned long)(sizeof mask * 8), 2u);
        return r == 0 ? 0 : errno;
    }
    /* only after the whole file is allocated (cx_back_range): a page the file system could
       not supply would be a SIGBUS in the loop */
    static void cx_os_prefault(char *base, uint64_t size) {
        if (madvise(base, size, MADV_POPULATE_WRITE) == 0) return;
        long page = sysconf(_SC_PAGESIZE);
        for (uint64_t i = 0; i < size; i += (uint64_t)page) {
            volatile char *c = base + i;
            *c = *c;
        }
    }
    static void cx_os_unmap(char *base, uint64_t size, int fd, int sync) {
        if (sync) msync(base, size, MS_SYNC);
        munmap(base, size);
        close(fd);
    }
    """
    enum:
        CX_LAYOUT_VERSION
        CX_HDR
        CX_NDB
        CX_NTENANT
        CX_NCLASS
        CX_MAP_WORDS
        CX_FREE
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
        CX_ZERO
        CX_ZEROED_SUPER
        CX_BAD_MAGIC
        CX_BAD_VERSION
        CX_BAD_CHECKSUM
        CX_BAD_SIZE
        CX_BAD_GEOMETRY

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

    ctypedef struct cx_dbtab:
        uint64_t size_state
        uint64_t tenant
        uint64_t incarnation
        uint64_t keys[CX_NDB]
        uint64_t volatile_keys[CX_NDB]

    ctypedef struct cx_rename_intent:
        uint64_t state

    ctypedef struct cx_super:
        uint32_t version
        uint64_t arena_size
        uint64_t index_off
        uint64_t index_buckets
        uint64_t heap_off
        uint64_t heap_size
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

    ctypedef struct cx_cfg:
        int policy
        int samples
        int no_evict
        uint64_t maxmemory
        uint64_t* rng
        int backing_fd
        uint64_t grain
        int* backing_errno
        int beyond_limits

    ctypedef struct cx_filter:
        unsigned tenant
        int db
        int volatile_only
        int unpinned_only

    uint64_t CX_SIZE(uint64_t w) nogil
    unsigned CX_STATE(uint64_t w) nogil
    cx_super* CX_SB(char* base) nogil
    cx_entry* CX_E(char* base, uint64_t off) nogil
    uint64_t* CX_BUCKETS(char* base) nogil
    uint8_t* CX_KEY(cx_entry* e) nogil
    uint8_t* CX_VAL(cx_entry* e) nogil

    void cx_store(uint64_t* p, uint64_t v) nogil
    int64_t cx_now_ms() nogil
    int cx_evict_to_limit(char* base, const cx_cfg* cfg, int64_t now) nogil
    unsigned cx_lfu_value(const cx_entry *e, int64_t now) nogil
    uint64_t cx_key_hash(const cx_super* sb, unsigned tenant, unsigned pdb, const uint8_t* key, size_t klen) nogil
    uint64_t cx_tenant_bits(const cx_super* sb) nogil
    int cx_policy_of(const cx_super* sb, unsigned t, const cx_cfg* cfg) nogil
    uint64_t* cx_db_keys(char* base, unsigned t) nogil
    uint64_t* cx_db_volatile(char* base, unsigned t) nogil
    void cx_dataset_add(char* base, const cx_entry* e, uint64_t delta) nogil
    unsigned cx_class(uint64_t size) nogil
    uint64_t cx_value_cap(const cx_entry* e) nogil
    uint64_t cx_find(char* base, uint64_t h, unsigned tenant, unsigned pdb, const uint8_t* key, size_t klen,
                     uint64_t** link) nogil
    void cx_drop(char* base, uint64_t off, int in_index) nogil
    void cx_pin(char* base, uint64_t off) nogil
    void cx_unpin(char* base, uint64_t off) nogil
    void cx_reseal(char* base, uint64_t off) nogil
    int cx_expired(const cx_entry* e, int64_t now) nogil
    uint64_t cx_reserve(char* base, unsigned tenant, uint64_t key_cap, uint64_t value_cap, uint64_t value_len,
                        const cx_cfg* cfg, int64_t now) nogil
    void cx_release(char* base, uint64_t off) nogil
    void cx_commit(char* base, uint64_t off, unsigned pdb, const uint8_t* key, size_t klen, int64_t expire_at, int type, int keep_ttl, int64_t now, int checksum) nogil
    uint64_t cx_lookup(char* base, unsigned tenant, unsigned pdb, const uint8_t* key, size_t klen, int touch,
                       int stats, int lfu, uint64_t* rng, uint64_t* corrupt) nogil
    uint64_t cx_key_room(const cx_entry* e) nogil
    uint64_t cx_value_sum(const uint8_t *p, uint64_t n) nogil
    int CX_TYPE_MASK
    int CX_SUMMED
    void cx_set_expire(char* base, uint64_t off, int64_t at, int64_t now) nogil
    void cx_rename_in_place(char* base, uint64_t off, unsigned pdb, const uint8_t* key, size_t klen) nogil
    void cx_rename_by_copy(char* base, uint64_t src, uint64_t fresh, unsigned pdb, const uint8_t* key, size_t klen,
                           int64_t now, int checksum) nogil
    uint64_t cx_period(int64_t ms) nogil
    int cx_crash_at
    uint64_t cx_random_entry(char* base, uint64_t* rng, const cx_filter* f) nogil
    uint64_t cx_expire_cycle(char* base, int64_t now, int64_t budget_ns) nogil
    void cx_format(char* base, uint64_t size, uint64_t seed) nogil
    int cx_validate(const char* base, uint64_t size) nogil
    int cx_entry_intact(char* base, uint64_t off, uint64_t size) nogil
    int64_t cx_rebuild(char* base) nogil
    void cx_release_process_state(char* base) nogil
    int cx_dbtab_intact(char* base, unsigned t) nogil
    int cx_dbtab_owned(char* base, uint64_t off) nogil
    int cx_tenant_create(char* base, unsigned t, const uint8_t* name, uint32_t name_len, uint64_t quota,
                         uint32_t policy, const cx_cfg* cfg, int64_t now) nogil
    void cx_tenant_drop(char* base, unsigned t) nogil
    int cx_glob(const uint8_t* p, size_t pn, const uint8_t* s, size_t sn, int nocase) nogil
    int cx_os_open(const char* path, int* fd, uint64_t* file_size, int* is_chr, int* created) nogil
    int cx_os_lock(int fd) nogil
    int cx_os_space(int fd, uint64_t* avail, uint64_t* held, uint64_t* grain) nogil
    uint64_t cx_os_held(int fd) nogil
    int cx_back_range(char* base, int fd, uint64_t grain, uint64_t size, uint64_t off, uint64_t len) nogil
    uint64_t cx_release_free(char* base, const cx_cfg* cfg, int64_t now, uint64_t min_age,
                             uint64_t max_bytes, uint64_t max_visits) nogil
    uint64_t cx_heap_off_for(uint64_t size) nogil
    int cx_os_truncate(int fd, uint64_t size) nogil
    int cx_os_map(int fd, uint64_t size, char** out) nogil
    void cx_os_hugepages(char* base, uint64_t size) nogil
    int cx_os_bind(char* base, uint64_t size, int node) nogil
    void cx_os_prefault(char* base, uint64_t size) nogil
    void cx_os_unmap(char* base, uint64_t size, int fd, int sync) nogil


class ArenaError(Exception):
    """The backing cannot be used as an arena (foreign, corrupt, busy, wrong size, too small)."""


def check_device_size(path, int fd, uint64_t size, size_option):
    """ArenaError if the character device (devdax) is smaller than the arena: a store past
    its end would be a SIGBUS. Its size is in sysfs; a device that has none is trusted."""
    rdev = os.fstat(fd).st_rdev
    try:
        with open(f"/sys/dev/char/{os.major(rdev)}:{os.minor(rdev)}/size") as f:
            device_size = int(f.read())
    except (OSError, ValueError):
        return
    if size > device_size:
        raise ArenaError(f"{path}: the arena's {size} bytes (set by {size_option}) do not fit its "
                         f"backing: the device holds {device_size} bytes ({device_size / 1048576:.1f} MiB); "
                         f"lower {size_option}")


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

TYPE_STRING = STRING_TYPE
TYPE_HASH = HASH_TYPE


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


cdef extern from *:
    """
    static inline void cx_acquire_fence(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }
    """
    void cx_acquire_fence() nogil


def acquire_fence():
    """A load-acquire barrier: no load after it is satisfied before the loads before it.
    A reader through the mapping calls it between using a value's bytes and re-reading
    the entry header, so a weakly ordered CPU cannot read the header before the copy.
    No instruction on x86 (loads are not reordered with older loads); dmb ishld on ARM."""
    cx_acquire_fence()


def now_ms():
    """Wall-clock time in ms, the clock every expire_at and last-access uses."""
    return cx_now_ms()


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
    c.grain = a.grain
    c.backing_errno = &a.backing_errno
    c.beyond_limits = 0
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
                               int64_t now, bint beyond_limits=False) except 0:
    cdef cx_cfg cfg = eviction_cfg(a)
    cfg.beyond_limits = beyond_limits
    cdef uint64_t off = cx_reserve(a.base, tenant, key_cap + checksum_room(a), value_len, value_len, &cfg, now)
    if not off:
        raise_oom(a, tenant, value_len)
    return off


cdef uint64_t put(Arena a, unsigned tenant, unsigned pdb, Buf* key, Buf* value, int64_t expire_at, int type,
                  bint keep_ttl) except 0:
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
    off = reserve_or_raise(a, tenant, key.len, value.len, now)
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
    """The physical db: the default tenant's logical dbs go through the SWAPDB map,
    another tenant's are its own (the map is arena-wide, so it cannot be theirs)."""
    if db < 0 or db >= a.ndb:
        raise ValueError(f"db {db} out of range (0..{a.ndb - 1})")
    return CX_SB(a.base).db_map[db] if tenant == 0 else <unsigned>db


# ---------------------------------------------------------------- the fast path's GET and SET

cdef int get_string(Keyspace ks, int db, const char *key, Py_ssize_t key_len, Py_ssize_t max_len,
                    const char **value, Py_ssize_t *value_len) except -2:
    """GET: 1 and the value (valid until the next write) when key holds a string shorter
    than max_len, 0 when it is missing; -1, with nothing touched or counted, when it holds
    another type or a longer value, so the general path can run the command instead."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef const uint8_t *k = <const uint8_t *>key
    cdef uint64_t off = cx_find(a.base, cx_key_hash(CX_SB(a.base), ks.tenant, pdb, k, key_len),
                                ks.tenant, pdb, k, key_len, NULL)
    cdef cx_entry* e
    if off and ((CX_E(a.base, off).type & CX_TYPE_MASK) != STRING_TYPE
                or CX_E(a.base, off).value_len >= <uint64_t>max_len):
        return -1
    off = cx_lookup(a.base, ks.tenant, pdb, k, key_len, 1, 1, lfu_policy(a, ks.tenant), &a.rng,
                    &a.checksum_failures if a.checksums else NULL)
    if not off:
        return 0
    e = CX_E(a.base, off)
    value[0] = <const char *>CX_VAL(e)
    value_len[0] = e.value_len
    return 1


cdef int set_string(Keyspace ks, int db, object key, object value) except -1:
    """SET key value without options (Keyspace.set); raises OutOfMemory as it does."""
    cdef Arena a = ks_arena(ks)
    cdef unsigned pdb = ks_pdb(a, ks.tenant, db)
    cdef Buf k, v
    key_open(&k, key)
    try:
        buf_open(&v, value)
        try:
            put(a, ks.tenant, pdb, &k, &v, -1, STRING_TYPE, False)
        finally:
            buf_close(&v)
    finally:
        buf_close(&k)
    return 0


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


cdef class Entry:
    """A live entry a lookup found (Keyspace.find): the keyspace holding it and, kept
    from Python, its offset. Each read goes through that keyspace's checks (a live or
    pinned entry of its tenant), so an Entry held past its entry's end raises ValueError
    rather than reading a reused block."""
    cdef readonly object store           # the keyspace holding it (a granted one, for fall-through)
    cdef uint64_t off
    cdef readonly int type               # TYPE_STRING, TYPE_HASH

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
        """Bytes the entry's block occupies in the heap (header, key, value, padding): MEMORY USAGE."""
        return CX_SIZE(ks_entry(self, ks_arena(self), off, SERVED).size_state)

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

    def commit(self, uint64_t off, int db, key, int64_t expire_at=-1, int type=0, bint keep_ttl=False):
        """Make a filled reservation the live entry for key; returns off. The reservation
        must have been made by this tenant (it was admitted against its quota then)."""
        cdef Arena a = ks_arena(self)
        cdef cx_entry* e = entry_at(a, off, RESERVED_ONLY)
        cdef unsigned pdb = ks_pdb(a, self.tenant, db)
        cdef Buf k
        if e.tenant != self.tenant:
            raise ValueError(f"the reservation at {off} belongs to tenant {e.tenant}, not {self.tenant}")
        buf_open(&k, key)
        try:
            if <uint64_t>k.len > e.key_cap:
                raise ValueError(f"key of {k.len} bytes does not fit the reserved key_cap")
            cx_commit(a.base, off, pdb, k.ptr, k.len, expire_at, type, keep_ttl, cx_now_ms(), a.checksums)
            CX_SB(a.base).tmeta[self.tenant].bytes_written += e.value_len
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

    def delete(self, int db, key):
        cdef Arena a = ks_arena(self)
        cdef uint64_t off = self.lookup(db, key, False, False)
        if not off:
            return False
        cx_drop(a.base, off, 1)
        return True

    def copy(self, int db, key, int dstdb, dstkey, bint replace=False):
        """COPY: the value (and TTL and type) copied by memcpy; False if the source is
        missing or the destination exists and replace is false."""
        cdef Arena a = ks_arena(self)
        cdef unsigned spdb = ks_pdb(a, self.tenant, db), dpdb = ks_pdb(a, self.tenant, dstdb)
        cdef uint64_t src
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
                cx_commit(a.base, reserve_copy(a, self.tenant, src, &dk, now), dpdb, dk.ptr, dk.len,
                          e.expire_at, e.type, 0, now, a.checksums)
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
        drop_all(a, self.tenant, ks_pdb(a, self.tenant, db))

    def flushall(self):
        drop_all(ks_arena(self), self.tenant, -1)

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
    quota (bytes of its blocks, 0 = none), eviction policy (its own or the arena's),
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
        down to their quota; (2) tenants without a quota (tenant 0 unless it has one),
        the largest first; (3) only when no tenant of tiers 1-2 has anything its policy
        lets go: tenants within their quota, the highest used/quota first. Each
        tenant's own policy picks its entry; a noeviction tenant is never evicted.
    So a tenant within its quota loses nothing while an over-quota or quota-less
    tenant can give memory back, and one tenant's quota pressure evicts only its own
    entries. Lowering a quota evicts nothing by itself: the tenant's next write does.
    A failed write (not a failed reserve) counts as a rejected write of the tenant.
    """

    def __cinit__(self):
        self.base = NULL
        self.fd = -1
        self.is_arena = True

    def __init__(self, path, size, *, int databases=16, bint reset=False, bint hugepages=False,
                 bint prefault=False, int numa_node=-1, size_option="arena-size"):
        """size_option: what sets `size`, for the message when the backing cannot hold it."""
        cdef bytes bpath = os.fsencode(path)
        cdef uint64_t nbytes, file_size = 0, avail = 0, held = 0, grain = 0
        cdef int fd = -1, is_chr = 0, created = 0, err
        cdef char* base = NULL
        if self.base != NULL:
            raise ArenaError("this Arena is already attached")
        if not 1 <= databases <= CX_NDB:
            raise ValueError(f"databases must be 1..{CX_NDB}")
        self.path = os.fsdecode(bpath)
        if size < <int64_t>MIN_ARENA_BYTES:
            raise ArenaError(f"{self.path}: arena size {size} is below the minimum of 4 MiB")
        nbytes = size
        err = cx_os_open(bpath, &fd, &file_size, &is_chr, &created)
        if err:
            raise ArenaError(f"{self.path}: cannot open: {os.strerror(err)}")
        try:
            err = cx_os_lock(fd)
            if err == EAGAIN:    # flock reports EWOULDBLOCK, the same value on Linux
                raise ArenaError(f"arena {self.path} is in use by another process")
            if err:
                raise ArenaError(f"{self.path}: cannot lock: {os.strerror(err)}")
            if is_chr:
                check_device_size(self.path, fd, nbytes, size_option)
            else:
                err = cx_os_space(fd, &avail, &held, &grain)
                if err:
                    raise ArenaError(f"{self.path}: cannot query its file system: {os.strerror(err)}")
                if nbytes > avail + held:
                    raise ArenaError(
                        f"{self.path}: the arena's {nbytes} bytes (set by {size_option}) do not fit its "
                        f"backing: the file system there has {avail} bytes free ({avail / 1048576:.1f} MiB) "
                        f"and the file holds {held}; lower {size_option} or free space there")
                if file_size != nbytes and file_size != 0 and not reset:
                    raise ArenaError(
                        f"{self.path}: the arena file is {file_size} bytes but the arena size is "
                        f"{nbytes} bytes; set arena-reset yes to re-format it at the new size "
                        f"(this discards its contents)")
                if file_size != nbytes:
                    err = cx_os_truncate(fd, nbytes)
                    if err:
                        raise ArenaError(f"{self.path}: cannot resize to {nbytes} bytes: {os.strerror(err)}")
            err = cx_os_map(fd, nbytes, &base)
            if err:
                raise ArenaError(f"{self.path}: cannot map {nbytes} bytes: {os.strerror(err)}")
        except BaseException:
            close_fd(fd)
            if created:
                os.unlink(bpath)
            raise
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
            err = cx_back_range(self.base, self.fd, self.grain, size, 0,
                                size if whole else heap_off + CX_HDR)
            if not err:
                err = cx_back_range(self.base, self.fd, self.grain, size, last, 8)
        if err:
            raise ArenaError(f"{self.path}: its backing cannot supply the arena's "
                             f"{'pages' if whole else 'superblock and index'}: {os.strerror(err)}")
        return 0

    def close(self, bint clean=True):
        """Detach. clean=True releases this process's pins and reservations, sets the
        clean-shutdown flag and msyncs, so the next attach trusts the structures."""
        if self.base == NULL:
            return
        if clean:
            cx_release_process_state(self.base)
            cx_store(&CX_SB(self.base).clean, 1)
        with nogil:
            cx_os_unmap(self.base, self.map_size, self.fd, clean)
        self.base = NULL
        self.fd = -1

    def __dealloc__(self):
        # never closed: leave the clean flag cleared so the next attach rebuilds
        if self.base != NULL:
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

    def expire_cycle(self, int64_t budget_us):
        """Active expiry step: delete due entries (of any tenant) from the expiry wheel
        for about budget_us microseconds (at least 32 entries are looked at), resuming
        where the last step stopped. Returns how many were deleted."""
        return cx_expire_cycle(open_base(self), cx_now_ms(), budget_us * 1000)

    # ---- tenants ----
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
            "backing_bytes": cx_os_held(self.fd) if self.grain else self.map_size,
        }

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
    s.hits = s.misses = s.expired = s.evicted = 0
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
        elif st == CX_TABLE:
            heap_used += size
            tables[off] = (<cx_dbtab*>(base + off)).tenant
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
                dataset += e.key_len + e.value_len
                tenant_dataset[e.tenant] += e.key_len + e.value_len
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
        while cur:
            if cur in listed or cur not in free_blocks:
                problems.append(f"free list {c}: {cur} is not a free block (or listed twice)")
                break
            listed.add(cur)
            fb = <cx_freeblk*>(base + cur)
            if cx_class(CX_SIZE(fb.size_state)) != <unsigned>c:
                problems.append(f"free block {cur} of size {CX_SIZE(fb.size_state)} is in class {c}")
            if fb.prev != prev:
                problems.append(f"free list {c}: back link of {cur} is {fb.prev}, expected {prev}")
            prev = cur
            cur = fb.next
    if listed != free_blocks:
        problems.append(f"{len(free_blocks - listed)} free blocks are on no free list")

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
                nbytes += CX_SIZE(e.size_state)
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
