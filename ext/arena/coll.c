/* Collections (see coll.h). */
#include <string.h>

#include "coll.h"
#include "entry.h"
#include "lru.h"
#include "tree.h"

/* the value of reserved entry `off`, not yet committed: the collection c */
CX_API void cx_coll_init(char *base, uint64_t off, const cx_coll *c) {
    cx_coll_value *cv = (cx_coll_value *)CX_VAL(CX_E(base, off));
    memset(cv, 0, sizeof *cv);
    cv->copy[0] = *c;
}

/* Live collection `off` becomes c (whose trees its transaction wrote): the other copy of
   the header is written, then made current by one store; a new generation, as after any
   change of a value. */
CX_API void cx_coll_publish(char *base, uint64_t off, const cx_coll *c) {
    cx_entry *e = CX_E(base, off);
    cx_coll_value *cv = (cx_coll_value *)CX_VAL(e);
    uint64_t next = (cv->current & 1) ^ 1;
    uint64_t delta = c->elems - cv->copy[cv->current & 1].elems;
    uint64_t weight = c->bytes - cv->copy[cv->current & 1].bytes;
    cv->copy[next] = *c;
    cx_store(&cv->current, next);
    if (CX_STATE(e->size_state) == CX_LIVE) {
        cx_dataset_add(base, e, delta);
        CX_SB(base)->tenants[e->tenant].list_bytes[cx_list_of(e)] += weight;
    }
    e->generation = ++CX_SB(base)->generation;
}

/* A collection renamed by copy: its copy holds its trees now, so the source, about to be
   dropped, lets go of them. */
CX_API void cx_coll_disown(char *base, uint64_t off) {
    cx_coll none;
    memset(&none, 0, sizeof none);
    cx_coll_publish(base, off, &none);
}

/* its trees freed (the collection is being dropped) */
static void cx_coll_free(char *base, cx_entry *e) {
    cx_coll *c = cx_coll_of(e);
    cx_tree_free(base, c->root[0]);
    cx_tree_free(base, c->root[1]);
}

/* A rebuild's check of live collection `off`: 0 if its trees are whole (then marked with
   seq, its byte counts made what they hold), -1 if not (nothing is left marked). */
static int cx_coll_mark(char *base, uint64_t off, uint32_t seq, uint64_t *maxtxn) {
    cx_entry *e = CX_E(base, off);
    cx_coll *c;
    uint64_t bytes = 0, elems = 0;
    if (e->value_len != CX_COLL_VALUE_BYTES || (e->type & CX_SUMMED)) return -1;
    c = cx_coll_of(e);
    if (cx_tree_mark(base, c->root[0], e->tenant, seq, maxtxn, &bytes, &elems)
        || cx_tree_mark(base, c->root[1], e->tenant, seq, maxtxn, &bytes, &elems)) {
        cx_tree_unmark(base, c->root[0], seq);
        cx_tree_unmark(base, c->root[1], seq);
        return -1;
    }
    c->bytes = bytes;
    c->elems = elems;
    return 0;
}
