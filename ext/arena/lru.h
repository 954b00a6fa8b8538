/* Recency and frequency: each tenant's two LRU lists (its persistent and its volatile
   entries, the most recent at the head), and the LFU counter of each entry. */
#ifndef CX_LRU_H
#define CX_LRU_H

#include <stdint.h>

#include "coll.h"
#include "layout.h"

static inline int cx_list_of(const cx_entry *e) { return e->expire_at != -1; }
/* what evicting an entry gives back: its block, and a collection's trees (list_bytes) */
static inline uint64_t cx_lru_weight(cx_entry *e) {
    return CX_SIZE(e->size_state) + (cx_is_coll(e->type) ? cx_coll_of(e)->bytes : 0);
}
static void cx_lru_push(char *base, uint64_t off);
static void cx_lru_unlink(char *base, uint64_t off);

/* ---- LFU: 8-bit logarithmic counter with a decay of one per idle minute ---- */
#define CX_LFU_INIT 5
#define CX_LFU_LOG_FACTOR 10
static inline uint16_t cx_minutes(int64_t now) { return (uint16_t)((uint64_t)now / 60000u); }
static inline unsigned cx_lfu_value(const cx_entry *e, int64_t now) {
    unsigned idle = (uint16_t)(cx_minutes(now) - e->lfu_minutes);
    return idle >= e->lfu ? 0 : e->lfu - idle;
}
static void cx_lfu_touch(cx_entry *e, int64_t now, uint64_t *rng);
CX_API void cx_set_recency(cx_entry *e, int64_t idle_ms, int lfu, int64_t now);

#endif
