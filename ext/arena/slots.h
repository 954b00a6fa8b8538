/* Keys by cluster slot (see slots.c): which entries of the index hold the keys of each
   of Redis Cluster's 16384 slots, in the memory of the process that runs the arena. */
#ifndef CX_SLOTS_H
#define CX_SLOTS_H

#include <stdint.h>

#include "common.h"

/* the tenant argument that matches every tenant's keys */
#define CX_ANY_TENANT 0xFFFFFFFFu

/* Start (or keep) indexing base's keys by slot, from a walk of its index: 0, or -1 if
   there is no memory for it (nothing changes). Later pushes and unlinks keep it. */
CX_API int cx_slots_enable(char *base);
/* Stop and free base's slot index (before base is unmapped). */
CX_API void cx_slots_disable(char *base);
/* Whether base's keys are indexed by slot. */
CX_API int cx_slots_enabled(char *base);
/* Up to max (all if max < 0) entries of slot, of tenant (or CX_ANY_TENANT) in physical
   db pdb, not expired at now, stored in out if it is not NULL; the number found, or -1
   if base's keys are not indexed by slot. */
CX_API int64_t cx_slot_entries(char *base, unsigned slot, unsigned tenant, unsigned pdb, int64_t now,
                               uint64_t *out, int64_t max);

/* called by the index */
static void cx_slots_push(char *base, uint64_t off);
static void cx_slots_unlink(char *base, uint64_t off);
/* called by a format or rebuild, which empties the index */
static void cx_slots_clear(char *base);

#endif
