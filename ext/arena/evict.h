/* Eviction: the entry a maxmemory policy gives up next within one tenant (cx_victim),
   the tenant that gives when the whole arena is over its limit (cx_global_victim), and
   allocation that makes room by evicting (cx_alloc_room); also random picks of an
   entry (the random policies, RANDOMKEY and sampling). */
#ifndef CX_EVICT_H
#define CX_EVICT_H

#include <stdint.h>

#include "common.h"

/* Which entries a random pick may return: one tenant's, of physical db `db` unless -1,
   volatile only, unpinned only. */
typedef struct { unsigned tenant; int db, volatile_only, unpinned_only; } cx_filter;

CX_API uint64_t cx_random_entry(char *base, uint64_t *rng, const cx_filter *f);
static uint64_t cx_alloc_room(char *base, int tenant, uint64_t need, const cx_cfg *cfg, int64_t now);
CX_API int cx_evict_to_limit(char *base, const cx_cfg *cfg, int64_t now);

#endif
