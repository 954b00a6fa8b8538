/* An entry's life (see entry.h). */
#include <string.h>

#include "coll.h"
#include "entry.h"
#include "evict.h"
#include "hash.h"
#include "spill.h"
#include "heap.h"
#include "index.h"
#include "lru.h"
#include "mrc.h"
#include "notes.h"
#include "tenant.h"
#include "ttl.h"

/* entry counters and the expiry wheel, +1 when an entry becomes live, -1 when it
   stops being live. A tenant's used_bytes follows its blocks instead (cx_reserve /
   cx_block_free). */
static void cx_account(char *base, cx_entry *e, int add) {
    cx_super *sb = CX_SB(base);
    cx_tenant *t = &sb->tenants[e->tenant];
    uint64_t one = add ? 1 : (uint64_t)-1;
    /* a collection's dataset is its records too */
    uint64_t bytes = (uint64_t)e->key_len + e->value_len + (cx_is_coll(e->type) ? cx_coll_of(e)->elems : 0);
    sb->entries += one;
    cx_dataset_add(base, e, add ? bytes : (uint64_t)0 - bytes);
    cx_db_keys(base, e->tenant)[e->db] += one;
    t->keys += one;
    if (e->expire_at != -1) {
        cx_db_volatile(base, e->tenant)[e->db] += one;
        t->volatile_keys += one;
        if (add) cx_wheel_push(base, (uint64_t)((char *)e - base));
        else cx_wheel_unlink(base, (uint64_t)((char *)e - base));
    }
}

/* a reserved or zombie block goes back to the heap and off its tenant's bill */
static uint64_t cx_block_free(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    CX_SB(base)->tenants[e->tenant].used_bytes -= CX_SIZE(e->size_state);
    return cx_heap_free(base, off);
}

/* Stop `off` being live: marked non-live first, then unlinked; freed now, or
   left as a zombie until its last unpin. A collection's trees go at once: nothing
   reads them through a pin (a reply copies what it sends of them). */
CX_API void cx_drop(char *base, uint64_t off, int in_index) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    cx_store(&e->size_state, CX_SIZE(e->size_state) | CX_ZOMBIE);
    if (in_index) cx_index_unlink(base, off);
    cx_lru_unlink(base, off);
    cx_account(base, e, 0);
    if (cx_is_coll(e->type)) {
        cx_coll_free(base, e);
        cx_coll_of(e)->root[0] = cx_coll_of(e)->root[1] = 0;
    }
    if (e->pins) sb->zombies++;
    else cx_block_free(base, off);
}

CX_API void cx_pin(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    if (e->pins++ == 0) CX_SB(base)->pinned++;
}

CX_API void cx_unpin(char *base, uint64_t off) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    if (--e->pins) return;
    sb->pinned--;
    if (CX_STATE(e->size_state) == CX_ZOMBIE) {
        sb->zombies--;
        cx_block_free(base, off);
    }
}

/* After the value changed in place (APPEND, SETRANGE past the end): a new generation,
   the value's checksum if it has one, and the header's. */
CX_API void cx_reseal(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    if (e->type & CX_SUMMED) *cx_sum_slot(e) = cx_value_sum(CX_VAL(e), e->value_len);
    e->generation = ++CX_SB(base)->generation;
    e->checksum = cx_entry_sum(e);
}

/* A reserved block of `tenant`, charged to it, with room for a key of key_cap bytes
   and value_cap bytes of value; value_len is set to value_len. 0 = out of memory. */
CX_API uint64_t cx_reserve(char *base, unsigned tenant, uint64_t key_cap, uint64_t value_cap, uint64_t value_len,
                           const cx_cfg *cfg, int64_t now) {
    if (key_cap > CX_SB(base)->heap_size || value_cap > CX_SB(base)->heap_size) return 0;
    uint64_t area = cx_key_area(key_cap);
    uint64_t off = cx_alloc_room(base, (int)tenant, cx_block_bytes(area, value_cap), cfg, now);
    if (!off) return 0;
    cx_entry *e = CX_E(base, off);
    e->chain_next = e->lru_prev = e->lru_next = 0;
    e->expire_at = -1;
    e->last_access = now;
    e->value_len = value_len;
    e->generation = 0;
    e->hash = 0;
    e->key_len = 0;
    e->key_cap = (uint32_t)area;
    e->pins = 0;
    e->checksum = 0;
    e->db = 0;
    e->type = 0;
    e->lfu = CX_LFU_INIT;
    e->tenant = (uint16_t)tenant;
    e->lfu_minutes = cx_minutes(now);
    CX_SB(base)->tenants[tenant].used_bytes += CX_SIZE(e->size_state);
    CX_SB(base)->reserved++;
    return off;
}

CX_API void cx_release(char *base, uint64_t off) {
    CX_SB(base)->reserved--;
    cx_block_free(base, off);
}

/* Make reserved block `off` the live entry for (its tenant, pdb, key), replacing any
   current entry: the new entry is complete and live before it is linked, the old
   one is unlinked by the same store and then dropped. */
CX_API void cx_commit(char *base, uint64_t off, unsigned pdb, const uint8_t *key, size_t klen,
                      int64_t expire_at, int type, int keep_ttl, int64_t now, int checksum) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    uint64_t h = cx_key_hash(sb, e->tenant, pdb, key, klen), *link = NULL;
    uint64_t old = cx_find(base, h, e->tenant, pdb, key, klen, &link);
    if (keep_ttl && old && !cx_expired(CX_E(base, old), now)) expire_at = CX_E(base, old)->expire_at;
    memcpy(CX_KEY(e), key, klen);
    e->key_len = (uint32_t)klen;
    e->db = (uint16_t)pdb;
    type &= CX_TYPE_MASK;
    if (checksum && !cx_is_coll((unsigned)type) && e->key_cap >= klen + 8) {
        *cx_sum_slot(e) = cx_value_sum(CX_VAL(e), e->value_len);
        type |= CX_SUMMED;
    }
    e->type = (uint8_t)type;
    e->hash = h;
    e->expire_at = expire_at;
    e->last_access = now;
    e->generation = ++sb->generation;
    e->checksum = cx_entry_sum(e);
    cx_store(&e->size_state, CX_SIZE(e->size_state) | CX_LIVE);
    sb->reserved--;
    if (old) {
        cx_index_replace(base, link, old, off);
        cx_drop(base, old, 0);
    } else {
        cx_index_push(base, off);
    }
    cx_account(base, e, 1);
    cx_lru_push(base, off);
    cx_mrc_note(base, e->tenant, h, CX_SIZE(e->size_state), 0);
    cx_spill_committed(base, h);
}

/* corrupt: NULL, or where to count a value that fails its checksum (it is dropped and
   the lookup is a miss) */
CX_API uint64_t cx_lookup(char *base, unsigned tenant, unsigned pdb, const uint8_t *key, size_t klen,
                          int touch, int stats, int lfu, uint64_t *rng, uint64_t *corrupt) {
    cx_super *sb = CX_SB(base);
    cx_tenant *t = &sb->tenants[tenant];
    uint64_t h = cx_key_hash(sb, tenant, pdb, key, klen);
    uint64_t off = cx_find(base, h, tenant, pdb, key, klen, NULL);
    int64_t now = 0;
    if (off) {
        cx_entry *e = CX_E(base, off);
        if (e->expire_at != -1 || touch) now = cx_now_ms();
        if (cx_expired(e, now)) {
            if (!cx_expiry_held) {
                cx_note_drop(base, off, CX_NOTE_EXPIRED);
                cx_drop(base, off, 1);
                sb->expired++;
                t->expired++;
            }
            off = 0;
        } else if (corrupt && !cx_value_intact(e)) {
            cx_drop(base, off, 1);
            (*corrupt)++;
            off = 0;
        } else if (touch) {
            e->last_access = now;
            if (t->head[cx_list_of(e)] != off) {
                cx_lru_unlink(base, off);
                cx_lru_push(base, off);
            }
            if (lfu) cx_lfu_touch(e, now, rng);
        }
    }
    if (stats) {
        if (off) { sb->hits++; t->hits++; }
        else { sb->misses++; t->misses++; }
        cx_mrc_note(base, tenant, h, off ? CX_SIZE(CX_E(base, off)->size_state) : 0, 1);
    }
    return off;
}

/* Change the expiry of live entry `off`; moving between the persistent and
   volatile lists makes it the most recent of its new list (the write touched it). */
CX_API void cx_set_expire(char *base, uint64_t off, int64_t at, int64_t now) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    int was = cx_list_of(e), will = at != -1;
    if (was != will) {
        cx_lru_unlink(base, off);
        uint64_t one = will ? 1 : (uint64_t)-1;
        cx_db_volatile(base, e->tenant)[e->db] += one;
        sb->tenants[e->tenant].volatile_keys += one;
    }
    if (was) cx_wheel_unlink(base, off);
    e->expire_at = at;
    if (will) cx_wheel_push(base, off);
    cx_reseal(base, off);
    if (was != will) {
        e->last_access = now;
        cx_lru_push(base, off);
    }
}
