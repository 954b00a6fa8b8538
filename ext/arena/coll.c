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

#define CX_FLAT_HEAD 24u

/* calls each(arg, record) for every record of tree root, in order */
static void cx_coll_walk(char *base, uint64_t root, void (*each)(void *, const cx_rec *), void *arg) {
    cx_cursor cur;
    cx_rec r;
    if (!cx_cursor_seek(&cur, base, root, 0)) return;
    do {
        cx_cursor_rec(&cur, &r);
        each(arg, &r);
    } while (cx_cursor_next(&cur));
}

static void cx_flat_measure(void *total, const cx_rec *r) { *(uint64_t *)total += 8 + (uint64_t)r->kl + r->vl; }

static void cx_flat_write(void *cursor, const cx_rec *r) {
    uint8_t **p = cursor;
    memcpy(*p, &r->kl, 4);
    memcpy(*p + 4, &r->vl, 4);
    if (r->kl) memcpy(*p + 8, r->k, r->kl);
    if (r->vl) memcpy(*p + 8 + r->kl, r->v, r->vl);
    *p += 8 + (uint64_t)r->kl + r->vl;
}

CX_API uint64_t cx_coll_flat_len(char *base, const cx_coll *c) {
    uint64_t total = CX_FLAT_HEAD;
    cx_coll_walk(base, c->root[0], cx_flat_measure, &total);
    cx_coll_walk(base, c->root[1], cx_flat_measure, &total);
    return total;
}

CX_API void cx_coll_flatten(char *base, const cx_coll *c, uint8_t *out) {
    uint64_t head[3] = {c->flags, cx_tree_count(base, c->root[0]), cx_tree_count(base, c->root[1])};
    memcpy(out, head, sizeof head);
    out += sizeof head;
    cx_coll_walk(base, c->root[0], cx_flat_write, &out);
    cx_coll_walk(base, c->root[1], cx_flat_write, &out);
}

CX_API int cx_coll_unflatten(cx_txn *t, cx_coll *c, const uint8_t *p, uint64_t len, int list) {
    uint64_t head[3], at = CX_FLAT_HEAD;
    memset(c, 0, sizeof *c);
    if (len < CX_FLAT_HEAD) return -1;
    memcpy(head, p, sizeof head);
    if (list && head[2]) return -1;    /* a list has one tree */
    c->flags = head[0];
    for (int tree = 0; tree < 2; tree++) {
        for (uint64_t i = 0; i < head[1 + tree]; i++) {
            uint32_t kl, vl;
            int existed = 0;
            if (len - at < 8) return -1;
            memcpy(&kl, p + at, 4);
            memcpy(&vl, p + at + 4, 4);
            if (len - at - 8 < (uint64_t)kl + vl) return -1;
            const uint8_t *k = p + at + 8;
            at += 8 + (uint64_t)kl + vl;
            if (list && tree == 0) {
                if (kl || cx_tree_insert_at(t, &c->root[0], i, k, vl)) return -1;
            } else if (cx_tree_put(t, &c->root[tree], k, kl, k + kl, vl, 0, &existed) || existed) {
                return -1;   /* a key twice: not what a flattened tree holds */
            }
        }
    }
    return at == len && c->root[0] ? 0 : -1;
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
