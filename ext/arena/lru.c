/* Recency and frequency (see lru.h). */
#include "common.h"
#include "lru.h"

static void cx_lru_push(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    cx_tenant *t = &CX_SB(base)->tenants[e->tenant];
    int l = cx_list_of(e);
    e->lru_prev = 0;
    e->lru_next = t->head[l];
    if (t->head[l]) CX_E(base, t->head[l])->lru_prev = off;
    else t->tail[l] = off;
    t->head[l] = off;
    t->list_bytes[l] += cx_lru_weight(e);
}

static void cx_lru_unlink(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    cx_tenant *t = &CX_SB(base)->tenants[e->tenant];
    int l = cx_list_of(e);
    if (e->lru_prev) CX_E(base, e->lru_prev)->lru_next = e->lru_next;
    else t->head[l] = e->lru_next;
    if (e->lru_next) CX_E(base, e->lru_next)->lru_prev = e->lru_prev;
    else t->tail[l] = e->lru_prev;
    e->lru_prev = e->lru_next = 0;
    t->list_bytes[l] -= cx_lru_weight(e);
}

static void cx_lfu_touch(cx_entry *e, int64_t now, uint64_t *rng) {
    unsigned c = cx_lfu_value(e, now);
    if (c < 255) {
        double base_val = c > CX_LFU_INIT ? (double)(c - CX_LFU_INIT) : 0.0;
        double r = (double)(cx_rand(rng) >> 11) * (1.0 / 9007199254740992.0);
        if (r < 1.0 / (base_val * CX_LFU_LOG_FACTOR + 1.0)) c++;
    }
    e->lfu = (uint8_t)c;
    e->lfu_minutes = cx_minutes(now);
}

/* The recency another server knew an entry by (RESTORE's IDLETIME and FREQ): idle for
   idle_ms, and/or an LFU counter of lfu as of now; a negative one changes nothing. The
   entry keeps its place at the head of its LRU list, where its write put it: placing it
   by age would walk the list, so exact LRU evicts it after the entries written before. */
CX_API void cx_set_recency(cx_entry *e, int64_t idle_ms, int lfu, int64_t now) {
    if (idle_ms >= 0) e->last_access = idle_ms < now ? now - idle_ms : 0;
    if (lfu >= 0) {
        e->lfu = (uint8_t)lfu;
        e->lfu_minutes = cx_minutes(now);
    }
}
