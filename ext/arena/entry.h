/* An entry's life: reserved (a block being filled, already charged to its tenant),
   committed (live: in the index, on its tenant's LRU list and, if volatile, in the
   expiry wheel), looked up, pinned while a reader holds its bytes, changed in place,
   and dropped (a zombie until its last unpin, then freed); and the counters that
   follow it. */
#ifndef CX_ENTRY_H
#define CX_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "layout.h"

/* key + value bytes of live entry e changed by delta (tenant 0's share is derived) */
static inline void cx_dataset_add(char *base, const cx_entry *e, uint64_t delta) {
    CX_SB(base)->dataset += delta;
    if (e->tenant) CX_SB(base)->tmeta[e->tenant].dataset += delta;
}

static void cx_account(char *base, cx_entry *e, int add);
static uint64_t cx_block_free(char *base, uint64_t off);
CX_API uint64_t cx_reserve(char *base, unsigned tenant, uint64_t key_cap, uint64_t value_cap, uint64_t value_len,
                           const cx_cfg *cfg, int64_t now);
CX_API void cx_release(char *base, uint64_t off);
CX_API void cx_commit(char *base, uint64_t off, unsigned pdb, const uint8_t *key, size_t klen,
                      int64_t expire_at, int type, int keep_ttl, int64_t now, int checksum);
CX_API uint64_t cx_lookup(char *base, unsigned tenant, unsigned pdb, const uint8_t *key, size_t klen,
                          int touch, int stats, int lfu, uint64_t *rng, uint64_t *corrupt);
CX_API void cx_set_expire(char *base, uint64_t off, int64_t at, int64_t now);
CX_API void cx_reseal(char *base, uint64_t off);
CX_API void cx_drop(char *base, uint64_t off, int in_index);
CX_API void cx_pin(char *base, uint64_t off);
CX_API void cx_unpin(char *base, uint64_t off);

#endif
