/* Hashing and checksums: the seeded hash of (tenant, physical db, key) the index is
   built on, the checksums that seal an entry's identity and the superblock's geometry,
   and the optional value checksums (arena-checksum). Their results are stored in the
   arena, so they are part of its format as much as layout.h is. */
#ifndef CX_HASH_H
#define CX_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "layout.h"

/* ---- hashing: 64x64->128 multiply-fold mixing ---- */
#define CX_K0 0x9E3779B97F4A7C15ull
#define CX_K1 0xC2B2AE3D27D4EB4Full
#define CX_K2 0x165667B19E3779F9ull
#define CX_K3 0xD6E8FEB86659FD93ull

static uint64_t cx_hash_bytes(const uint8_t *p, size_t n, uint64_t seed);

/* key identity is (tenant, physical db, key); tenant 0's hashes are those of a
   single-tenant arena */
static inline uint64_t cx_key_hash(const cx_super *sb, unsigned tenant, unsigned pdb,
                                   const uint8_t *key, size_t klen) {
    return cx_hash_bytes(key, klen, sb->hash_seed + (uint64_t)pdb * CX_K2 + (uint64_t)tenant * CX_K3);
}

static uint32_t cx_entry_sum(const cx_entry *e);
static uint32_t cx_super_sum(const cx_super *sb);
CX_API uint64_t cx_value_sum(const uint8_t *p, uint64_t n);

static inline int cx_value_intact(cx_entry *e) {
    return !(e->type & CX_SUMMED) || *cx_sum_slot(e) == cx_value_sum(CX_VAL(e), e->value_len);
}

#endif
