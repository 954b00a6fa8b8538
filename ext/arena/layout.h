/* The on-arena format: the superblock, the entry header and the other blocks of the
   heap, their states, and the constants that size them. Every process that maps the
   arena reads these bytes, and they outlive the process: a change here is a new
   CX_LAYOUT_VERSION.

   Layout: superblock (CX_SUPER_BYTES) | index (u64 bucket array) | heap (boundary-tagged
   blocks). Every link is an offset from the start of the mapping, never a pointer. */
#ifndef CX_LAYOUT_H
#define CX_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* 4: collections (NODE blocks, types 2-4); an arena of version 3 has none, and is taken as
   it is and marked 4 */
#define CX_LAYOUT_VERSION 4u
#define CX_LAYOUT_VERSION_PLAIN 3u
#define CX_SUPER_BYTES 65536ull
#define CX_HDR 112ull           /* entry header; the key follows it */
#define CX_MIN_BLOCK 64ull
#define CX_NDB 256
#define CX_NTENANT 64
#define CX_NCLASS 384           /* free-list size classes */
#define CX_MAP_WORDS (CX_NCLASS / 64)
#define CX_QUICK_CLASSES 33     /* quick lists, by class: blocks of 64 B to 2 KiB (heap.h) */
#define CX_QUICK_DEPTH 16       /* the most blocks one quick list keeps */
#define CX_BYTES_PER_BUCKET 2048ull
#define CX_MIN_BUCKETS 1024ull
/* the expiry wheel: slot i lists the volatile entries due in a CX_WHEEL_MS-long
   period congruent to i (one turn is about 262 s) */
#define CX_WHEEL_SLOTS 2048ull
#define CX_WHEEL_MS 128
/* the longest key a rename in place records in its intent (longer ones are copied) */
#define CX_RENAME_KEY_MAX 1024

/* block states, kept in the low 6 bits of the header word (sizes are multiples of 64);
   a TABLE block holds one tenant's per-db key counters (see cx_dbtab), a NODE block a
   part of a collection's tree (tree.h), a QUICK block is free but kept whole on a quick
   list (heap.h) */
enum { CX_FREE = 1, CX_RESERVED = 2, CX_LIVE = 3, CX_ZOMBIE = 4, CX_TABLE = 5, CX_NODE = 6, CX_QUICK = 7 };
/* maxmemory policies (a tenant's own is stored as its id + 1, see cx_tenant_meta) */
enum { CX_NOEVICTION, CX_ALLKEYS_LRU, CX_VOLATILE_LRU, CX_ALLKEYS_RANDOM,
       CX_VOLATILE_RANDOM, CX_VOLATILE_TTL, CX_ALLKEYS_LFU, CX_VOLATILE_LFU };

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

typedef struct {
    uint64_t head[2], tail[2];        /* LRU lists: [0] persistent, [1] volatile; head = most recent */
    uint64_t list_bytes[2];
    uint64_t used_bytes;              /* its live, reserved and zombie blocks: what the quota limits */
    uint64_t keys, volatile_keys;
    uint64_t quota;                   /* bytes, 0 = none: its burst maximum when guaranteed */
    uint64_t hits, misses, expired, evicted;
    uint64_t guaranteed;              /* bytes no other tenant's pressure evicts (MIN), 0 = none */
    uint64_t reclaimed;               /* bytes evicted to give another tenant its guaranteed share */
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
    uint64_t priority;                /* its service class: of the tenants borrowing memory,
                                         a lower class gives it back first (0: the lowest) */
    uint64_t flags;                   /* CX_TENANT_* */
    uint64_t spare[13];
} cx_tenant_meta;
/* its evicted entries are not written to the disk tier (spill.h) */
#define CX_TENANT_NO_DISK 1ull

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
    /* the quick lists (heap.h), linked through cx_freeblk.next; emptied by a rebuild (an
       arena formatted before they existed has them empty: zero) */
    uint64_t quick_head[CX_QUICK_CLASSES];
    uint32_t quick_len[CX_QUICK_CLASSES];
} cx_super;

_Static_assert(sizeof(cx_entry) == CX_HDR, "entry header size");
_Static_assert(sizeof(cx_tenant) == 128, "tenant slot size");
_Static_assert(sizeof(cx_tenant_meta) == 256, "tenant metadata size");
_Static_assert(offsetof(cx_super, clean) == 128, "geometry block size");
_Static_assert(sizeof(cx_super) <= CX_SUPER_BYTES, "superblock too large");

#define CX_SB(base) ((cx_super *)(base))
#define CX_BUCKETS(base) ((uint64_t *)((base) + CX_SB(base)->index_off))

/* ---- value checksums (arena-checksum) ----
   An entry committed while checksums are on carries CX_SUMMED in its type and a
   64-bit checksum of its value in the last 8 bytes of its key area, just before
   the value (its key area was reserved 8 bytes larger for it). */
#define CX_TYPE_MASK 0x7f
#define CX_SUMMED 0x80

/* an entry's type (below CX_SUMMED): a string's or a hash's value is its bytes; a list's,
   set's or sorted set's is the header of its trees (coll.h), and is never summed */
enum { CX_TYPE_STRING = 0, CX_TYPE_HASH = 1, CX_TYPE_LIST = 2, CX_TYPE_SET = 3, CX_TYPE_ZSET = 4 };
static inline int cx_is_coll(unsigned type) {
    type &= CX_TYPE_MASK;
    return type >= CX_TYPE_LIST && type <= CX_TYPE_ZSET;
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

static inline uint64_t *cx_sum_slot(cx_entry *e) { return (uint64_t *)(CX_VAL(e) - 8); }

/* Key bytes the entry's key area can take (a summed entry keeps 8 for its checksum). */
static inline uint64_t cx_key_room(const cx_entry *e) {
    return e->key_cap - ((e->type & CX_SUMMED) ? 8 : 0);
}

#endif
