/* Eviction (see evict.h). */
#include "entry.h"
#include "evict.h"
#include "heap.h"
#include "layout.h"
#include "lru.h"
#include "notes.h"
#include "spill.h"
#include "tenant.h"

static uint64_t cx_lru_oldest(char *base, uint64_t cur) {
    while (cur && CX_E(base, cur)->pins) cur = CX_E(base, cur)->lru_prev;
    return cur;
}

static inline int cx_eligible(const cx_entry *e, const cx_filter *f) {
    return e->tenant == f->tenant && (f->db < 0 || e->db == (unsigned)f->db)
        && (!f->volatile_only || e->expire_at != -1) && (!f->unpinned_only || !e->pins);
}
static uint64_t cx_pick_in_bucket(char *base, uint64_t head, uint64_t *rng, const cx_filter *f) {
    uint64_t n = 0, cur;
    for (cur = head; cur; cur = CX_E(base, cur)->chain_next) n += cx_eligible(CX_E(base, cur), f);
    if (!n) return 0;
    uint64_t pick = cx_rand(rng) % n;
    for (cur = head; cur; cur = CX_E(base, cur)->chain_next)
        if (cx_eligible(CX_E(base, cur), f) && pick-- == 0) return cur;
    return 0;
}
/* A random eligible entry. Buckets are drawn at random until one holds a match, so
   every non-empty bucket is equally likely however the entries are spread; after a
   budget proportional to the expected number of draws it falls back to a scan from
   a random bucket. */
CX_API uint64_t cx_random_entry(char *base, uint64_t *rng, const cx_filter *f) {
    cx_super *sb = CX_SB(base);
    uint64_t *bk = CX_BUCKETS(base), mask = sb->index_buckets - 1, found, b, i;
    uint64_t candidates = f->db >= 0 ? cx_db_keys(base, f->tenant)[f->db] : sb->tenants[f->tenant].keys;
    if (!candidates) return 0;
    uint64_t budget = 8 * (sb->index_buckets / candidates + 1);
    if (budget > (1u << 16)) budget = 1u << 16;
    for (i = 0; i < budget; i++) {
        b = cx_rand(rng) & mask;
        if (bk[b] && (found = cx_pick_in_bucket(base, bk[b], rng, f))) return found;
    }
    b = cx_rand(rng) & mask;
    for (i = 0; i <= mask; i++, b = (b + 1) & mask)
        if (bk[b] && (found = cx_pick_in_bucket(base, bk[b], rng, f))) return found;
    return 0;
}

static inline int cx_volatile_policy(int policy) {
    return policy == CX_VOLATILE_LRU || policy == CX_VOLATILE_RANDOM || policy == CX_VOLATILE_TTL
        || policy == CX_VOLATILE_LFU;
}

/* bytes of tenant t that `policy` lets eviction take (pinned entries included: an upper bound) */
static uint64_t cx_evictable(const cx_tenant *t, int policy) {
    if (policy == CX_NOEVICTION) return 0;
    return cx_volatile_policy(policy) ? t->list_bytes[1] : t->list_bytes[0] + t->list_bytes[1];
}

/* the entry of `tenant` that `policy` evicts next, 0 if none */
static uint64_t cx_victim(char *base, const cx_cfg *cfg, unsigned tenant, int policy, int64_t now) {
    cx_tenant *t = &CX_SB(base)->tenants[tenant];
    cx_filter f = { tenant, -1, cx_volatile_policy(policy), 1 };
    uint64_t a, b, best = 0;
    int i;
    switch (policy) {
    case CX_ALLKEYS_LRU:
        a = cx_lru_oldest(base, t->tail[0]);
        b = cx_lru_oldest(base, t->tail[1]);
        if (!a || !b) return a ? a : b;
        return CX_E(base, a)->last_access <= CX_E(base, b)->last_access ? a : b;
    case CX_VOLATILE_LRU:
        return cx_lru_oldest(base, t->tail[1]);
    case CX_ALLKEYS_RANDOM:
    case CX_VOLATILE_RANDOM:
        return cx_random_entry(base, cfg->rng, &f);
    case CX_VOLATILE_TTL:
        for (i = 0; i < cfg->samples; i++) {
            a = cx_random_entry(base, cfg->rng, &f);
            if (!a) break;
            if (!best || CX_E(base, a)->expire_at < CX_E(base, best)->expire_at) best = a;
        }
        return best;
    case CX_ALLKEYS_LFU:
    case CX_VOLATILE_LFU:
        for (i = 0; i < cfg->samples; i++) {
            a = cx_random_entry(base, cfg->rng, &f);
            if (!a) break;
            if (!best) { best = a; continue; }
            unsigned fa = cx_lfu_value(CX_E(base, a), now), fb = cx_lfu_value(CX_E(base, best), now);
            if (fa < fb || (fa == fb && CX_E(base, a)->last_access < CX_E(base, best)->last_access)) best = a;
        }
        return best;
    default:
        return 0;
    }
}

/* An entry to evict because the arena as a whole is over its memory limit, for a write
   of tenant `writer` (-1: none). Tenants give memory back in tiers, and a tier is used
   only when no tenant of the tiers before it has anything its policy lets go:
     1. tenants over their quota, the largest overage first (down to the quota);
     2. tenants borrowing: those without a quota (the default tenant unless it has one)
        and those with a guarantee holding more than it, the lowest priority (service
        class) first, and within one, the most borrowed first;
     3. tenants within their quota that have no guarantee, the fullest (highest
        used/quota) first;
     4. the writer itself.
   A tenant within its guarantee is in none but the last: another tenant's pressure
   never evicts it. Each tenant's own policy picks the entry; a noeviction tenant
   gives nothing. */
static uint64_t cx_global_victim(char *base, const cx_cfg *cfg, int writer, int64_t now) {
    cx_super *sb = CX_SB(base);
    uint64_t tried = 0, m, v;
    for (;;) {
        int best = -1, best_tier = 5;
        uint64_t best_score = 0, best_used = 0, best_quota = 1, best_priority = 0;
        for (m = cx_tenant_bits(sb) & ~tried; m; m &= m - 1) {
            unsigned i = (unsigned)__builtin_ctzll(m);
            cx_tenant *t = &sb->tenants[i];
            int tier, better;
            uint64_t score = 0;
            if (!cx_evictable(t, cx_policy_of(sb, i, cfg))) continue;
            if (t->quota && t->used_bytes > t->quota) { tier = 1; score = t->used_bytes - t->quota; }
            else if (t->guaranteed && t->used_bytes > t->guaranteed) { tier = 2; score = t->used_bytes - t->guaranteed; }
            else if (!t->quota && !t->guaranteed) { tier = 2; score = t->used_bytes; }
            else if (!t->guaranteed) tier = 3;
            else if ((int)i == writer) tier = 4;
            else continue;
            uint64_t priority = sb->tmeta[i].priority;
            if (tier != best_tier) better = tier < best_tier;
            else if (tier == 3) better = (__uint128_t)t->used_bytes * best_quota > (__uint128_t)best_used * t->quota;
            else if (tier == 2 && priority != best_priority) better = priority < best_priority;
            else better = score > best_score;
            if (better) {
                best = (int)i;
                best_tier = tier;
                best_score = score;
                best_used = t->used_bytes;
                best_quota = t->quota;
                best_priority = priority;
            }
        }
        if (best < 0) return 0;
        v = cx_victim(base, cfg, (unsigned)best, cx_policy_of(sb, (unsigned)best, cfg), now);
        if (v) return v;
        tried |= 1ull << best;      /* everything it could give is pinned */
    }
}

/* Evict `off` for a write of tenant `writer` (-1: none). Taken from another tenant
   while the writer is within its guarantee, it is memory reclaimed for that share. */
static void cx_evict(char *base, uint64_t off, int writer, uint64_t need) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    cx_tenant *t = &sb->tenants[e->tenant];
    if (writer >= 0 && (unsigned)writer != e->tenant) {
        cx_tenant *w = &sb->tenants[writer];
        if (w->guaranteed && w->used_bytes + need <= w->guaranteed) t->reclaimed += CX_SIZE(e->size_state);
    }
    t->evicted++;
    sb->evicted++;
    cx_note_drop(base, off, CX_NOTE_EVICTED);
    cx_spill_evicted(base, off);
    cx_drop(base, off, 1);
}

/* Allocate `need` bytes for `tenant` (-1: for no tenant, e.g. a counter table),
   evicting until the block fits the tenant's quota, the memory limit and one free
   block: first the tenant's own entries (its policy) while it would exceed its
   quota, then, while the arena is over its limit, entries cx_global_victim picks.
   0 = out of memory; nothing is evicted when it is clear up front that eviction
   cannot make room, so a write bigger than the quota or the limit evicts nothing. */
static uint64_t cx_alloc_room(char *base, int tenant, uint64_t need, const cx_cfg *cfg, int64_t now) {
    cx_super *sb = CX_SB(base);
    cx_tenant *t = tenant >= 0 ? &sb->tenants[tenant] : NULL;
    uint64_t limit = cfg->maxmemory && cfg->maxmemory < sb->heap_size ? cfg->maxmemory : sb->heap_size;
    uint64_t quota = t ? t->quota : 0, evictable = 0, off, v, m;
    int own = 0, err = 0;
    if (cfg->beyond_limits && (off = cx_heap_alloc(base, need, cfg, &err))) return off;
    if (err) { *cfg->backing_errno = err; return 0; }
    if (need > limit || (quota && need > quota)) return 0;
    if ((!quota || t->used_bytes + need <= quota) && sb->heap_used + need <= limit
        && (off = cx_heap_alloc(base, need, cfg, &err)))
        return off;
    /* a full backing: evicting would lose entries without making the file system any
       room (their blocks are backed already and reusable only if one fits) */
    if (err) { *cfg->backing_errno = err; return 0; }
    if (cfg->no_evict) return 0;
    if (quota) {
        own = cx_policy_of(sb, (unsigned)tenant, cfg);
        if (t->used_bytes + need > quota + cx_evictable(t, own)) return 0;
    }
    for (m = cx_tenant_bits(sb); m; m &= m - 1) {
        unsigned i = (unsigned)__builtin_ctzll(m);
        cx_tenant *o = &sb->tenants[i];
        uint64_t can = cx_evictable(o, cx_policy_of(sb, i, cfg));
        /* another tenant gives only what it holds past its guarantee */
        if (o->guaranteed && (int)i != tenant) {
            uint64_t borrowed = o->used_bytes > o->guaranteed ? o->used_bytes - o->guaranteed : 0;
            if (can > borrowed) can = borrowed;
        }
        evictable += can;
    }
    if (sb->heap_used + need > limit + evictable) return 0;
    for (;;) {
        if (quota && t->used_bytes + need > quota) {
            v = cx_victim(base, cfg, (unsigned)tenant, own, now);
        } else {
            if (sb->heap_used + need <= limit && (off = cx_heap_alloc(base, need, cfg, &err))) return off;
            if (err) { *cfg->backing_errno = err; return 0; }
            v = cx_global_victim(base, cfg, tenant, now);
        }
        if (!v) return 0;
        cx_evict(base, v, tenant, need);
    }
}

/* Redis's performEvictions before a command: evict (in cx_global_victim's order)
   until the heap is back within the limit, e.g. after maxmemory was lowered.
   1 = within it, 0 = still over it with nothing left that may be evicted. */
CX_API int cx_evict_to_limit(char *base, const cx_cfg *cfg, int64_t now) {
    cx_super *sb = CX_SB(base);
    uint64_t limit = cfg->maxmemory && cfg->maxmemory < sb->heap_size ? cfg->maxmemory : sb->heap_size;
    uint64_t v;
    while (sb->heap_used > limit) {
        if (cfg->no_evict || !(v = cx_global_victim(base, cfg, -1, now))) return 0;
        cx_evict(base, v, -1, 0);
    }
    return 1;
}
