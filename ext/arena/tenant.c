/* Tenants (see tenant.h). */
#include <string.h>

#include "entry.h"
#include "evict.h"
#include "heap.h"
#include "tenant.h"

/* does existing tenant t (1..63) point at its own, intact counter table? */
CX_API int cx_dbtab_intact(char *base, unsigned t) {
    cx_super *sb = CX_SB(base);
    uint64_t off = sb->tmeta[t].dbtab;
    if (off < sb->heap_off || off > sb->heap_off + sb->heap_size - CX_DBTAB_BYTES || (off & 63)) return 0;
    cx_dbtab *tb = (cx_dbtab *)(base + off);
    return tb->size_state == (CX_DBTAB_BYTES | CX_TABLE) && tb->tenant == t
        && tb->incarnation == sb->tmeta[t].incarnation;
}

/* is the TABLE block at off the counter table of an existing tenant? */
CX_API int cx_dbtab_owned(char *base, uint64_t off) {
    cx_super *sb = CX_SB(base);
    uint64_t t = ((cx_dbtab *)(base + off))->tenant;
    return t > 0 && t < CX_NTENANT && sb->tmeta[t].incarnation && sb->tmeta[t].dbtab == off;
}

/* Make free slot t (1..63, nothing left on its bill) an empty tenant; 0 = no room
   for its counter table. The table is complete before the slot points at it and
   the slot exists only once its incarnation is set: a crash in between leaves a
   stray table, which a rebuild frees. */
CX_API int cx_tenant_create(char *base, unsigned t, const uint8_t *name, uint32_t name_len, uint64_t quota,
                            uint32_t policy, const cx_cfg *cfg, int64_t now) {
    cx_super *sb = CX_SB(base);
    cx_tenant *s = &sb->tenants[t];
    cx_tenant_meta *m = &sb->tmeta[t];
    uint64_t off = cx_alloc_room(base, -1, CX_DBTAB_BYTES, cfg, now);
    if (!off) return 0;
    cx_dbtab *tb = (cx_dbtab *)(base + off);
    uint64_t incarnation = ++sb->generation;
    memset((char *)tb + 8, 0, sizeof *tb - 8);
    tb->tenant = t;
    tb->incarnation = incarnation;
    cx_store(&tb->size_state, CX_DBTAB_BYTES | CX_TABLE);
    memset(s, 0, sizeof *s);
    s->quota = quota;
    memset(m, 0, sizeof *m);
    m->dbtab = off;
    m->policy = policy;
    m->name_len = name_len;
    memcpy(m->name, name, name_len);
    cx_store(&m->incarnation, incarnation);
    sb->tenant_bits |= 1ull << t;
    return 1;
}

/* Delete tenant t (1..63) and every entry it has: it stops existing first, so a
   crash part way leaves entries of a missing tenant, which a rebuild discards.
   Pinned entries become zombies that stay on its bill until their last unpin. */
CX_API void cx_tenant_drop(char *base, unsigned t) {
    cx_super *sb = CX_SB(base);
    uint64_t *bk = CX_BUCKETS(base), b, cur, nxt, table = sb->tmeta[t].dbtab;
    cx_store(&sb->tmeta[t].incarnation, 0);
    sb->tenant_bits &= ~(1ull << t);
    for (b = 0; b < sb->index_buckets; b++) {
        for (cur = bk[b]; cur; cur = nxt) {
            nxt = CX_E(base, cur)->chain_next;
            if (CX_E(base, cur)->tenant == t) cx_drop(base, cur, 1);
        }
    }
    sb->tmeta[t].dbtab = 0;
    cx_heap_free(base, table);
}
