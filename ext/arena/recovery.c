/* An arena's start and end (see recovery.h). */
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "entry.h"
#include "hash.h"
#include "heap.h"
#include "index.h"
#include "layout.h"
#include "lru.h"
#include "recovery.h"
#include "rename.h"
#include "slots.h"
#include "tenant.h"
#include "tree.h"
#include "ttl.h"

static uint64_t cx_buckets_for(uint64_t size) {
    uint64_t n = CX_MIN_BUCKETS;
    while (n * 2 <= size / CX_BYTES_PER_BUCKET) n *= 2;
    return n;
}

/* Where cx_format puts the heap: it follows from the arena size alone. */
CX_API uint64_t cx_heap_off_for(uint64_t size) {
    return (CX_SUPER_BYTES + cx_buckets_for(size) * 8 + CX_SUPER_BYTES - 1) & ~(CX_SUPER_BYTES - 1);
}

CX_API void cx_format(char *base, uint64_t size, uint64_t seed) {
    cx_super *sb = CX_SB(base);
    memset(sb, 0, CX_SUPER_BYTES);
    uint64_t nb = cx_buckets_for(size);
    sb->arena_size = size;
    sb->index_off = CX_SUPER_BYTES;
    sb->index_buckets = nb;
    sb->heap_off = cx_heap_off_for(size);
    sb->heap_size = (size - sb->heap_off) & ~63ull;
    sb->hash_seed = seed;
    sb->formatted_ms = (uint64_t)cx_now_ms();
    sb->wheel_next = cx_period((int64_t)sb->formatted_ms);
    memset(base + sb->index_off, 0, nb * 8);
    cx_slots_clear(base);
    for (int i = 0; i < CX_NDB; i++) sb->db_map[i] = (uint8_t)i;
    *(uint64_t *)(base + sb->heap_off) = sb->heap_size | CX_FREE;
    cx_footer(base, sb->heap_off, sb->heap_size);
    cx_free_push(base, sb->heap_off, sb->heap_size, CX_BK_WORD(CX_BK_HOLLOW));  /* never touched */
    memcpy(sb->magic, "CXLREDIS", 8);
    sb->version = CX_LAYOUT_VERSION;
    sb->checksum = cx_super_sum(sb);    /* last: a torn format fails the checksum */
}

CX_API int cx_validate(const char *base, uint64_t size) {
    const cx_super *sb = (const cx_super *)base;
    const uint64_t *words = (const uint64_t *)base;
    size_t i = 0;
    while (i < CX_SUPER_BYTES / 8 && words[i] == 0) i++;
    if (i == CX_SUPER_BYTES / 8) {
        /* A new device reads as zeros throughout. A formatted heap's first block
           header is never 0: a zeroed superblock over it is damage, not a new arena. */
        uint64_t heap_off = cx_heap_off_for(size);
        return heap_off + 8 <= size && *(const uint64_t *)(base + heap_off) ? CX_ZEROED_SUPER : CX_ZERO;
    }
    if (memcmp(sb->magic, "CXLREDIS", 8) != 0) return CX_BAD_MAGIC;
    if (sb->version != CX_LAYOUT_VERSION && sb->version != CX_LAYOUT_VERSION_PLAIN) return CX_BAD_VERSION;
    if (sb->checksum != cx_super_sum(sb)) return CX_BAD_CHECKSUM;
    if (sb->arena_size != size) return CX_BAD_SIZE;
    uint64_t nb = sb->index_buckets;
    if (sb->index_off != CX_SUPER_BYTES || nb < CX_MIN_BUCKETS || (nb & (nb - 1))
        || sb->heap_off < sb->index_off + nb * 8 || (sb->heap_off & 63) || (sb->heap_size & 63)
        || sb->heap_size < CX_MIN_BLOCK || sb->heap_off + sb->heap_size > size)
        return CX_BAD_GEOMETRY;
    return CX_OK;
}

/* An arena of the version before collections holds none: it is one of this version as it
   is, and is marked so (an older build then refuses it rather than misread a collection). */
CX_API void cx_upgrade(char *base) {
    cx_super *sb = CX_SB(base);
    if (sb->version == CX_LAYOUT_VERSION_PLAIN) {
        sb->version = CX_LAYOUT_VERSION;
        sb->checksum = cx_super_sum(sb);
    }
}

CX_API int cx_entry_intact(char *base, uint64_t off, uint64_t size) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    if (e->key_len > e->key_cap || ((CX_HDR + e->key_cap) & 63)) return 0;
    if (CX_HDR + (uint64_t)e->key_cap + 8 > size || e->value_len > size - CX_HDR - e->key_cap - 8) return 0;
    if (e->db >= CX_NDB || e->tenant >= CX_NTENANT) return 0;
    if (e->checksum != cx_entry_sum(e)) return 0;
    return e->hash == cx_key_hash(sb, e->tenant, e->db, CX_KEY(e), e->key_len);
}

typedef struct { int64_t last_access; uint64_t off; } cx_recency;
static int cx_recency_cmp(const void *a, const void *b) {
    const cx_recency *x = (const cx_recency *)a, *y = (const cx_recency *)b;
    if (x->last_access != y->last_access) return x->last_access < y->last_access ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* Rebuild everything derived from the heap after an unclean shutdown. Returns
   the number of discarded blocks, or -1 if memory for sorting ran out. */
CX_API int64_t cx_rebuild(char *base) {
    cx_super *sb = CX_SB(base);
    uint64_t lo = sb->heap_off, hi = sb->heap_off + sb->heap_size, off, size, w;
    uint64_t maxgen = sb->generation, live = 0;
    int64_t dropped = 0;
    int i, seen[CX_NDB], copy_live = 0;

    cx_rename_redo(base);
    memset(CX_BUCKETS(base), 0, sb->index_buckets * 8);
    cx_slots_clear(base);
    memset(sb->free_map, 0, sizeof sb->free_map);
    memset(sb->free_head, 0, sizeof sb->free_head);
    memset(sb->quick_head, 0, sizeof sb->quick_head);
    memset(sb->quick_len, 0, sizeof sb->quick_len);
    memset(sb->db_keys, 0, sizeof sb->db_keys);
    memset(sb->db_volatile, 0, sizeof sb->db_volatile);
    sb->tenant_bits = 0;
    for (i = 0; i < CX_NTENANT; i++) {
        cx_tenant *t = &sb->tenants[i];
        cx_tenant_meta *m = &sb->tmeta[i];
        memset(t->head, 0, sizeof t->head);
        memset(t->tail, 0, sizeof t->tail);
        memset(t->list_bytes, 0, sizeof t->list_bytes);
        t->used_bytes = t->keys = t->volatile_keys = 0;
        m->dataset = 0;
        if (i == 0 || !m->incarnation) continue;
        /* a tenant whose table is gone cannot have been fully created: it goes, and
           its entries with it */
        if (!cx_dbtab_intact(base, (unsigned)i)) {
            m->incarnation = 0;
            continue;
        }
        cx_dbtab *tb = (cx_dbtab *)(base + m->dbtab);
        memset(tb->keys, 0, sizeof tb->keys);
        memset(tb->volatile_keys, 0, sizeof tb->volatile_keys);
        sb->tenant_bits |= 1ull << i;
    }
    sb->heap_used = sb->dataset = sb->entries = sb->reserved = sb->zombies = sb->pinned = 0;
    memset(sb->wheel, 0, sizeof sb->wheel);
    sb->wheel_cursor = 0;
    /* a crash between the two stores of a SWAPDB leaves a non-permutation */
    memset(seen, 0, sizeof seen);
    for (i = 0; i < CX_NDB; i++) seen[sb->db_map[i]]++;
    for (i = 0; i < CX_NDB; i++) {
        if (seen[sb->db_map[i]] > 1) {
            /* a torn swap: either completing or undoing it is a valid state */
            int missing = 0;
            while (seen[missing]) missing++;
            seen[sb->db_map[i]]--;
            seen[missing]++;
            sb->db_map[i] = (uint8_t)missing;
        }
    }

    /* pass 1: index the intact live entries of existing tenants, newest generation
       wins; keep the counter tables of existing tenants (a stray one is a torn
       create or drop) */
    for (off = lo; off < hi; off += size) {
        w = *(uint64_t *)(base + off);
        size = CX_SIZE(w);
        if (size < CX_MIN_BLOCK || size > hi - off) {
            /* a torn size cannot happen with ordered stores; never walk past it */
            *(uint64_t *)(base + off) = (hi - off) | CX_FREE;
            ((cx_freeblk *)(base + off))->backing = CX_BK_WORD(CX_BK_MIXED);
            dropped++;
            break;
        }
        unsigned st = CX_STATE(w);
        if (st == CX_QUICK) *(uint64_t *)(base + off) = size | CX_FREE;     /* its list is gone */
        if (st == CX_FREE || st == CX_QUICK) continue;
        if (st == CX_NODE) {
            CX_N(base, off)->mark = 0;      /* kept if a live collection reaches it (below) */
            continue;
        }
        if (st == CX_TABLE) {
            if (!cx_dbtab_owned(base, off)) *(uint64_t *)(base + off) = size | CX_FREE;
            continue;
        }
        if (st != CX_LIVE || !cx_entry_intact(base, off, size)
            || !((cx_tenant_bits(sb) >> CX_E(base, off)->tenant) & 1)) {
            *(uint64_t *)(base + off) = size | CX_FREE;
            dropped++;
            continue;
        }
        cx_entry *e = CX_E(base, off);
        uint64_t *link = NULL;
        uint64_t other = cx_find(base, e->hash, e->tenant, e->db, CX_KEY(e), e->key_len, &link);
        if (other) {
            cx_entry *o = CX_E(base, other);
            if (o->generation > e->generation) {
                *(uint64_t *)(base + off) = size | CX_FREE;
                continue;
            }
            cx_index_replace(base, link, other, off);
            o->size_state = CX_SIZE(o->size_state) | CX_FREE;
        } else {
            cx_index_push(base, off);
        }
        if (e->generation > maxgen) maxgen = e->generation;
        if (e->generation == sb->rename.generation) copy_live = 1;
    }
    cx_rename_undo_source(base, copy_live);
    /* the collections: each live one keeps what its trees reach, if they are whole (else
       it goes); a node nothing reaches is from a transaction cut short, or one that had
       not yet freed what it replaced */
    uint32_t seq = 0;
    uint64_t *bk = CX_BUCKETS(base), maxtxn = 0;
    for (uint64_t b = 0; b < sb->index_buckets; b++) {
        uint64_t *link = &bk[b];
        while (*link) {
            off = *link;
            cx_entry *e = CX_E(base, off);
            if (cx_is_coll(e->type) && cx_coll_mark(base, off, ++seq, &maxtxn)) {
                *link = e->chain_next;
                e->size_state = CX_SIZE(e->size_state) | CX_FREE;
                dropped++;
                continue;
            }
            link = &e->chain_next;
        }
    }
    if (maxtxn > maxgen) maxgen = maxtxn;
    for (off = lo; off < hi; off += size) {
        w = *(uint64_t *)(base + off);
        size = CX_SIZE(w);
        if (CX_STATE(w) == CX_NODE && !CX_N(base, off)->mark) *(uint64_t *)(base + off) = size | CX_FREE;
    }
    /* pass 2: coalesce free runs into the free lists, count the live entries */
    for (off = lo; off < hi; off += size) {
        w = *(uint64_t *)(base + off);
        size = CX_SIZE(w);
        if (CX_STATE(w) == CX_FREE) {
            /* backed only if every part says so: a block pass 1 freed has no backing
               word (its header's bytes there are a list link), which reads as MIXED */
            uint64_t end = off + size;
            int backed = cx_free_backed(base, off);
            while (end < hi && CX_STATE(*(uint64_t *)(base + end)) == CX_FREE) {
                backed &= cx_free_backed(base, end);
                end += CX_SIZE(*(uint64_t *)(base + end));
            }
            size = end - off;
            *(uint64_t *)(base + off) = size | CX_FREE;
            cx_footer(base, off, size);
            cx_free_push(base, off, size, CX_BK_WORD(backed ? CX_BK_BACKED : CX_BK_MIXED));
        } else if (CX_STATE(w) == CX_TABLE) {
            cx_footer(base, off, size);
            sb->heap_used += size;
        } else if (CX_STATE(w) == CX_NODE) {
            CX_N(base, off)->mark = 0;
            cx_footer(base, off, size);
            sb->heap_used += size;
            sb->tenants[CX_N(base, off)->tenant].used_bytes += size;
        } else {
            cx_entry *e = CX_E(base, off);
            e->pins = 0;
            e->lru_prev = e->lru_next = 0;
            cx_footer(base, off, size);
            sb->heap_used += size;
            sb->tenants[e->tenant].used_bytes += size;
            cx_account(base, e, 1);
            live++;
        }
    }
    /* pass 3: LRU lists in last-access order */
    if (live) {
        cx_recency *order = (cx_recency *)malloc(live * sizeof *order);
        uint64_t n = 0;
        if (!order) return -1;
        for (off = lo; off < hi; off += size) {
            w = *(uint64_t *)(base + off);
            size = CX_SIZE(w);
            if (CX_STATE(w) == CX_LIVE) {
                order[n].last_access = CX_E(base, off)->last_access;
                order[n++].off = off;
            }
        }
        qsort(order, n, sizeof *order, cx_recency_cmp);
        for (uint64_t k = 0; k < n; k++) cx_lru_push(base, order[k].off);
        free(order);
    }
    sb->generation = maxgen;
    return dropped;
}

/* Before a clean close: pins and reservations belong to this process, so
   reset the pins, free zombies and uncommitted reservations. */
CX_API void cx_release_process_state(char *base) {
    cx_super *sb = CX_SB(base);
    uint64_t off, size;
    if (!sb->pinned && !sb->zombies && !sb->reserved) return;
    for (off = sb->heap_off; off < sb->heap_off + sb->heap_size; off += size) {
        uint64_t w = *(uint64_t *)(base + off);
        size = CX_SIZE(w);
        unsigned st = CX_STATE(w);
        if (st == CX_LIVE) {
            CX_E(base, off)->pins = 0;
        } else if (st == CX_ZOMBIE || st == CX_RESERVED) {
            if (st == CX_RESERVED) sb->reserved--; else sb->zombies--;
            /* the freed block may merge with free neighbours: continue after the merged block */
            off = cx_block_free(base, off);
            size = CX_SIZE(*(uint64_t *)(base + off));
        }
    }
    sb->pinned = 0;
}
