/* The index (see index.h). */
#include <string.h>

#include "index.h"
#include "layout.h"
#include "slots.h"

CX_API uint64_t cx_find(char *base, uint64_t h, unsigned tenant, unsigned pdb, const uint8_t *key, size_t klen,
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
    cx_slots_unlink(base, off);
    while (*slot && *slot != off) slot = &CX_E(base, *slot)->chain_next;
    if (*slot) cx_store(slot, e->chain_next);
}

static void cx_index_push(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    uint64_t *slot = &CX_BUCKETS(base)[e->hash & (CX_SB(base)->index_buckets - 1)];
    e->chain_next = *slot;
    cx_store(slot, off);
    cx_slots_push(base, off);
}

/* Put off in old's place in the chain, *link being the word that points at old: a new
   entry for the same identity. */
static void cx_index_replace(char *base, uint64_t *link, uint64_t old, uint64_t off) {
    CX_E(base, off)->chain_next = CX_E(base, old)->chain_next;
    cx_slots_unlink(base, old);
    cx_store(link, off);
    cx_slots_push(base, off);
}
