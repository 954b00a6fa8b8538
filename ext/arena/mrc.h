/* References sampled for the tenants' miss-ratio curves (cxlredis/mrc.py).

   Spatial sampling, as SHARDS does: a reference is kept when its key's hash is below
   a threshold, so every reference to a sampled key is kept and the rate is
   threshold / 2^64. A lookup that counts a hit or a miss is a read; a commit is a
   write. Kept references go to a ring that the server drains from its cron; a
   reference that finds the ring full is not kept, so the cost stays bounded
   whatever the load. Process state, not the mapping's: nothing persists. */
#ifndef CX_MRC_H
#define CX_MRC_H

#include <stdint.h>

#include "common.h"

#define CX_MRC_RING 65536

typedef struct {
    uint64_t hash;
    uint64_t size;      /* the entry's block, as quotas count it; 0: a read that missed */
    uint64_t base;      /* the arena's mapping, which tells whose tenant slot it is */
    uint32_t tenant;
    uint32_t read;
} cx_mrc_ref;

typedef struct {
    uint64_t threshold;     /* keep references whose hash is below; 0: sampling is off */
    uint64_t len;
    cx_mrc_ref ring[CX_MRC_RING];
} cx_mrc_log;

static cx_mrc_log cx_mrc;

static inline void cx_mrc_note(char *base, unsigned tenant, uint64_t hash, uint64_t size, int read) {
    if (__builtin_expect(hash < cx_mrc.threshold, 0)) {
        if (cx_mrc.len == CX_MRC_RING) return;
        cx_mrc_ref *r = &cx_mrc.ring[cx_mrc.len++];
        r->hash = hash;
        r->size = size;
        r->base = (uint64_t)(uintptr_t)base;
        r->tenant = tenant;
        r->read = (uint32_t)read;
    }
}

#endif
