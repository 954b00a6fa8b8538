/* Keys by cluster slot (see slots.h), so that CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT,
   and a node dropping the keys of slots another node took, cost the keys of the slot
   rather than a walk of the whole index (Redis keeps slots_to_keys for the same reason).

   It lives in the process's memory, not in the arena: only the process running the
   arena changes its index (co-located clients read through the mapping), so nothing
   else needs it; it is built from the index when that process enables it (cluster mode),
   and an arena that never enables it pays one branch per index change.

   Each slot has an array of entry offsets that pushes append to. An unlink only lowers
   the slot's count of live keys: finding the offset in the array would cost the slot's
   size, and one {hash tag} can put every key in one slot. An offset that went stale
   (its entry was deleted, renamed or its block reused) is dropped when the slot is
   compacted, which happens before the slot is read and when its array would otherwise
   grow past twice its live keys: so each slot holds at most about twice its keys, and a
   push costs amortized O(log n) at worst. An offset is live when the index, asked for
   the identity of the entry at it, answers that same offset. */
#include <stdlib.h>

#include "../cluster/keyslot.h"
#include "index.h"
#include "layout.h"
#include "slots.h"
#include "ttl.h"

typedef struct {
    uint64_t *offs;
    uint64_t len, cap;
    uint64_t live;     /* pushes minus unlinks since the last compaction: an estimate */
} cx_slot_keys;

typedef struct {
    char *base;
    cx_slot_keys slot[CX_CLUSTER_SLOTS];
} cx_slot_index;

/* one per arena the process runs with the index enabled (its own and its tenants') */
#define CX_SLOT_INDEXES 128
static cx_slot_index *cx_slot_indexes[CX_SLOT_INDEXES];
static unsigned cx_slot_index_count;

static cx_slot_index *cx_slots_of(char *base) {
    for (unsigned i = 0; i < cx_slot_index_count; i++)
        if (cx_slot_indexes[i]->base == base) return cx_slot_indexes[i];
    return NULL;
}

static unsigned cx_entry_slot(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    return cx_key_slot(CX_KEY(e), e->key_len);
}

/* Whether off is an entry the index holds, with a key of slot. off was an entry's once,
   so it is inside the heap, but its block may since have been freed, merged or reused:
   its header is read only as far as the heap goes, and the index has the last word. */
static int cx_slot_entry_live(char *base, uint64_t off, unsigned slot) {
    cx_super *sb = CX_SB(base);
    uint64_t end = sb->heap_off + sb->heap_size;
    cx_entry *e = CX_E(base, off);
    if (off + CX_HDR > end || CX_STATE(e->size_state) != CX_LIVE) return 0;
    if (e->key_len > e->key_cap || off + CX_HDR + e->key_len > end) return 0;
    if (cx_find(base, e->hash, e->tenant, e->db, CX_KEY(e), e->key_len, NULL) != off) return 0;
    return cx_key_slot(CX_KEY(e), e->key_len) == slot;
}

static int cx_offset_order(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Keep only the live offsets of the slot, once each (a block renamed within its slot,
   or freed and reused for a key of it, was pushed twice). */
static void cx_slot_compact(char *base, cx_slot_keys *k, unsigned slot) {
    uint64_t kept = 0;
    for (uint64_t i = 0; i < k->len; i++)
        if (cx_slot_entry_live(base, k->offs[i], slot)) k->offs[kept++] = k->offs[i];
    if (kept > 1) {
        qsort(k->offs, kept, sizeof(uint64_t), cx_offset_order);
        uint64_t unique = 1;
        for (uint64_t i = 1; i < kept; i++)
            if (k->offs[i] != k->offs[unique - 1]) k->offs[unique++] = k->offs[i];
        kept = unique;
    }
    k->len = k->live = kept;
    if (!kept) {    /* a slot that moved away gives its array back */
        free(k->offs);
        k->offs = NULL;
        k->cap = 0;
    }
}

static void cx_slot_index_free(cx_slot_index *idx) {
    for (unsigned s = 0; s < CX_CLUSTER_SLOTS; s++) free(idx->slot[s].offs);
    free(idx);
}

CX_API void cx_slots_disable(char *base) {
    for (unsigned i = 0; i < cx_slot_index_count; i++) {
        if (cx_slot_indexes[i]->base != base) continue;
        cx_slot_index_free(cx_slot_indexes[i]);
        cx_slot_indexes[i] = cx_slot_indexes[--cx_slot_index_count];
        return;
    }
}

/* Append off to its slot; 0, or -1 if the slot's array could not grow. */
static int cx_slot_append(cx_slot_index *idx, uint64_t off) {
    unsigned slot = cx_entry_slot(idx->base, off);
    cx_slot_keys *k = &idx->slot[slot];
    if (k->len == k->cap && k->len >= 2 * k->live + 16) cx_slot_compact(idx->base, k, slot);
    if (k->len == k->cap) {
        uint64_t cap = k->cap ? 2 * k->cap : 4;
        uint64_t *offs = realloc(k->offs, cap * sizeof(uint64_t));
        if (!offs) return -1;
        k->offs = offs;
        k->cap = cap;
    }
    k->offs[k->len++] = off;
    k->live++;
    return 0;
}

static void cx_slots_push(char *base, uint64_t off) {
    if (!cx_slot_index_count) return;
    cx_slot_index *idx = cx_slots_of(base);
    /* A key the index lacks would be left behind when its slot moves: with no memory to
       index it, there is no index, and readers walk the whole index instead. */
    if (idx && cx_slot_append(idx, off)) cx_slots_disable(base);
}

static void cx_slots_unlink(char *base, uint64_t off) {
    if (!cx_slot_index_count) return;
    cx_slot_index *idx = cx_slots_of(base);
    if (!idx) return;
    cx_slot_keys *k = &idx->slot[cx_entry_slot(base, off)];
    if (k->live) k->live--;
}

static void cx_slots_clear(char *base) {
    if (!cx_slot_index_count) return;
    cx_slot_index *idx = cx_slots_of(base);
    if (!idx) return;
    for (unsigned s = 0; s < CX_CLUSTER_SLOTS; s++) idx->slot[s].len = idx->slot[s].live = 0;
}

CX_API int cx_slots_enabled(char *base) { return cx_slots_of(base) != NULL; }

CX_API int cx_slots_enable(char *base) {
    if (cx_slots_of(base)) return 0;
    if (cx_slot_index_count == CX_SLOT_INDEXES) return -1;
    cx_slot_index *idx = calloc(1, sizeof(cx_slot_index));
    if (!idx) return -1;
    idx->base = base;
    cx_crc16_init();
    uint64_t *bk = CX_BUCKETS(base), nb = CX_SB(base)->index_buckets;
    for (uint64_t b = 0; b < nb; b++) {
        for (uint64_t cur = bk[b]; cur; cur = CX_E(base, cur)->chain_next) {
            if (cx_slot_append(idx, cur)) {
                cx_slot_index_free(idx);
                return -1;
            }
        }
    }
    cx_slot_indexes[cx_slot_index_count++] = idx;
    return 0;
}

CX_API int64_t cx_slot_entries(char *base, unsigned slot, unsigned tenant, unsigned pdb, int64_t now,
                               uint64_t *out, int64_t max) {
    cx_slot_index *idx = cx_slots_of(base);
    if (!idx) return -1;
    cx_slot_keys *k = &idx->slot[slot % CX_CLUSTER_SLOTS];
    cx_slot_compact(base, k, slot % CX_CLUSTER_SLOTS);
    int64_t found = 0;
    for (uint64_t i = 0; i < k->len && (max < 0 || found < max); i++) {
        cx_entry *e = CX_E(base, k->offs[i]);
        if (e->db != pdb || (tenant != CX_ANY_TENANT && e->tenant != tenant) || cx_expired(e, now)) continue;
        if (out) out[found] = k->offs[i];
        found++;
    }
    return found;
}
