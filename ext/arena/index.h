/* The index: a power-of-two array of buckets, each the head of a chain of entries
   linked through chain_next. An entry's identity is (tenant, physical db, key); its
   bucket is the low bits of its hash (cx_key_hash). */
#ifndef CX_INDEX_H
#define CX_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "layout.h"

/* the live entry for the identity (0 if none); *link, unless link is NULL, is the
   word that points at it (a bucket or the previous entry's chain_next) */
CX_API uint64_t cx_find(char *base, uint64_t h, unsigned tenant, unsigned pdb, const uint8_t *key, size_t klen,
                        uint64_t **link);
/* A lookup of hash h waits for two cache misses in a row: its bucket, then the entry
   the bucket points at. A pipeline's lookups ask for them ahead, each step for all
   its keys at once, so the misses overlap: first the buckets, then (once they are
   in) the first entry of each chain, its header and key. */
static inline void cx_prefetch_bucket(char *base, uint64_t h) {
    __builtin_prefetch(&CX_BUCKETS(base)[h & (CX_SB(base)->index_buckets - 1)], 0, 3);
}

static inline void cx_prefetch_chain(char *base, uint64_t h) {
    uint64_t first = CX_BUCKETS(base)[h & (CX_SB(base)->index_buckets - 1)];
    if (!first) return;
    /* the first line for writing (the LRU touch), the second for the hash and key, the
       third for what a short key's value starts with */
    __builtin_prefetch(base + first, 1, 3);
    __builtin_prefetch(base + first + 64, 0, 3);
    __builtin_prefetch(base + first + 128, 0, 3);
}

static void cx_index_unlink(char *base, uint64_t off);
static void cx_index_push(char *base, uint64_t off);
static void cx_index_replace(char *base, uint64_t *link, uint64_t old, uint64_t off);

#endif
