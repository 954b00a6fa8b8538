/* Collections' trees (see tree.h). */
#include <stdlib.h>
#include <string.h>

#include "evict.h"
#include "heap.h"
#include "tree.h"

/* a record's key lives in a blob with its value (a leaf's long record), or alone (an inner
   node's long key: its value, the child, stays in the node, where it is changed in place) */
#define CX_KEY_OOL 0x40000000u
#define CX_LEN_MASK 0x3fffffffu

typedef struct { uint64_t off, count; } cx_child;

/* ---- nodes and their records ---- */
static inline uint8_t *cx_payload(cx_node *n) { return (uint8_t *)n + CX_NODE_HDR; }
static inline uint32_t cx_cap(const cx_node *n) { return (uint32_t)(CX_SIZE(n->size_state) - CX_NODE_HDR - 8); }
static inline uint16_t *cx_slot(cx_node *n, uint32_t i) {
    return (uint16_t *)(cx_payload(n) + cx_cap(n) - 2 * (i + 1));
}
static inline uint32_t cx_fill(const cx_node *n) { return n->used + 2 * n->nrec; }
static inline uint32_t cx_rec_bytes(const cx_rec *r) {
    if (!r->blob) return 8 + r->kl + r->vl;
    return r->key_only ? 16 + r->vl : 16;
}

static void cx_rec_at(char *base, cx_node *n, uint32_t i, cx_rec *r) {
    const uint8_t *p = cx_payload(n) + *cx_slot(n, i);
    uint32_t kl, vl;
    memcpy(&kl, p, 4);
    memcpy(&vl, p + 4, 4);
    r->kl = kl & CX_LEN_MASK;
    r->vl = vl;
    r->key_only = (kl & CX_KEY_OOL) != 0;
    if (kl & (CX_OOL | CX_KEY_OOL)) {
        memcpy(&r->blob, p + 8, 8);
        r->k = (const uint8_t *)base + r->blob + CX_NODE_HDR;
        r->v = kl & CX_OOL ? r->k + r->kl : p + 16;
    } else {
        r->blob = 0;
        r->k = p + 8;
        r->v = r->k + r->kl;
    }
}

static inline cx_child cx_child_at(char *base, cx_node *n, uint32_t i) {
    cx_rec r;
    cx_child c;
    cx_rec_at(base, n, i, &r);
    memcpy(&c, r.v, sizeof c);
    return c;
}

/* append record r, as it is kept (inline, or by its blob), to node n, which has room */
static void cx_emit(cx_node *n, const cx_rec *r) {
    uint8_t *p = cx_payload(n) + n->used;
    uint32_t kl = r->kl;
    if (r->blob) kl |= r->key_only ? CX_KEY_OOL : CX_OOL;
    memcpy(p, &kl, 4);
    memcpy(p + 4, &r->vl, 4);
    if (!r->blob) {
        if (r->kl) memcpy(p + 8, r->k, r->kl);
        if (r->vl) memcpy(p + 8 + r->kl, r->v, r->vl);
    } else {
        memcpy(p + 8, &r->blob, 8);
        if (r->key_only && r->vl) memcpy(p + 16, r->v, r->vl);
    }
    *cx_slot(n, n->nrec) = (uint16_t)n->used;
    n->used += cx_rec_bytes(r);
    n->nrec++;
    if (n->kind == CX_LEAF) {
        n->count++;
    } else {
        cx_child c;
        memcpy(&c, r->v, sizeof c);
        n->count += c.count;
    }
}

static int cx_cmp(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl) {
    uint32_t m = al < bl ? al : bl;
    int c = m ? memcmp(a, b, m) : 0;
    return c ? c : (al > bl) - (al < bl);
}

/* ---- the transaction's blocks ---- */
static int cx_push(uint64_t **arr, uint64_t *n, uint64_t *cap, uint64_t v) {
    if (*n == *cap) {
        uint64_t ncap = *cap ? *cap * 2 : 16;
        uint64_t *grown = (uint64_t *)realloc(*arr, ncap * sizeof **arr);
        if (!grown) return -1;
        *arr = grown;
        *cap = ncap;
    }
    (*arr)[(*n)++] = v;
    return 0;
}

static void cx_node_free(char *base, uint64_t off) {
    cx_node *n = CX_N(base, off);
    CX_SB(base)->tenants[n->tenant].used_bytes -= CX_SIZE(n->size_state);
    cx_heap_free(base, off);
}

/* a fresh block of this transaction with room for `payload` bytes; 0 (and t->err) if
   none can be had */
static uint64_t cx_node_new(cx_txn *t, uint64_t payload, unsigned kind) {
    uint64_t need = (CX_NODE_HDR + payload + 8 + 63) & ~63ull, off, size;
    cx_node *n;
    if (t->err) return 0;
    if (cx_push(&t->fresh, &t->nfresh, &t->capfresh, 0)) {
        t->err = CX_TXN_NOMEM;
        return 0;
    }
    off = cx_alloc_room(t->base, (int)t->tenant, need, t->cfg, t->now);
    if (!off) {
        t->nfresh--;
        t->err = CX_TXN_FULL;
        return 0;
    }
    n = CX_N(t->base, off);
    size = CX_SIZE(n->size_state);
    CX_SB(t->base)->tenants[t->tenant].used_bytes += size;
    n->txn = t->id;
    n->count = 0;
    n->nrec = n->used = 0;
    n->tenant = (uint16_t)t->tenant;
    n->kind = (uint8_t)kind;
    n->spare = 0;
    n->mark = 0;
    t->fresh[t->nfresh - 1] = off;
    n->fresh = t->nfresh;
    t->bytes += (int64_t)size;
    cx_store(&n->size_state, size | CX_NODE);
    return off;
}

/* A block the transaction's trees no longer use: freed now if the transaction made it,
   else once it commits (the published tree still uses it until then). */
static void cx_discard(cx_txn *t, uint64_t off) {
    cx_node *n = CX_N(t->base, off);
    t->bytes -= (int64_t)CX_SIZE(n->size_state);
    if (n->txn == t->id) {
        t->fresh[n->fresh - 1] = 0;
        cx_node_free(t->base, off);
    } else if (cx_push(&t->retired, &t->nretired, &t->capretired, off)) {
        t->err = CX_TXN_NOMEM;
    }
}

CX_API void cx_txn_begin(cx_txn *t, char *base, const cx_cfg *cfg, unsigned tenant, int64_t now) {
    memset(t, 0, sizeof *t);
    t->base = base;
    t->cfg = cfg;
    t->tenant = tenant;
    t->now = now;
    t->id = ++CX_SB(base)->generation;
}

static void cx_txn_end(cx_txn *t) {
    free(t->fresh);
    free(t->retired);
    t->fresh = t->retired = NULL;
    t->nfresh = t->nretired = t->capfresh = t->capretired = 0;
}

/* after the new roots are published: what only the old trees used goes */
CX_API void cx_txn_commit(cx_txn *t) {
    for (uint64_t i = 0; i < t->nretired; i++) cx_node_free(t->base, t->retired[i]);
    cx_txn_end(t);
}

/* nothing was published: the blocks the transaction made go, the old trees stay */
CX_API void cx_txn_abort(cx_txn *t) {
    for (uint64_t i = 0; i < t->nfresh; i++)
        if (t->fresh[i]) cx_node_free(t->base, t->fresh[i]);
    cx_txn_end(t);
}

/* A record of key k and value v as a node of `kind` keeps it: inline when short, else in
   a fresh blob (a leaf's key and value, or an inner node's key alone). */
static int cx_rec_new(cx_txn *t, unsigned kind, const uint8_t *k, uint32_t kl, const uint8_t *v, uint32_t vl,
                      cx_rec *r) {
    r->k = k;
    r->kl = kl;
    r->v = v;
    r->vl = vl;
    r->blob = 0;
    r->key_only = 0;
    if (8ull + kl + vl <= CX_INLINE_MAX) return 0;
    uint64_t b = cx_node_new(t, kind == CX_LEAF ? (uint64_t)kl + vl : kl, CX_BLOB);
    if (!b) return -1;
    uint8_t *p = cx_payload(CX_N(t->base, b));
    if (kl) memcpy(p, k, kl);
    r->blob = b;
    r->k = p;
    if (kind == CX_LEAF) {
        if (vl) memcpy(p + kl, v, vl);
        r->v = p + kl;
    } else {
        r->key_only = 1;
    }
    return 0;
}

/* ---- writing nodes ---- */

/* A node's records with one change: the records of src[0] then src[1] (a merge reads
   two), with [at, at + drop) of them giving way to add[0..nadd). */
typedef struct {
    char *base;
    cx_node *src[2];
    uint32_t nsrc[2];
    uint32_t at, drop, nadd;
    cx_rec add[2];
} cx_seq;

static inline uint32_t cx_seq_len(const cx_seq *s) { return s->nsrc[0] + s->nsrc[1] - s->drop + s->nadd; }
static void cx_seq_get(const cx_seq *s, uint32_t i, cx_rec *r) {
    if (i >= s->at) {
        if (i - s->at < s->nadd) {
            *r = s->add[i - s->at];
            return;
        }
        i = i - s->nadd + s->drop;
    }
    if (i < s->nsrc[0]) cx_rec_at(s->base, s->src[0], i, r);
    else cx_rec_at(s->base, s->src[1], i - s->nsrc[0], r);
}

/* What a changed node gives its parent: nothing (it emptied), one node, or two (it
   split), and then the key the second starts at. */
typedef struct {
    int n;
    uint64_t off[2], count[2];
    const uint8_t *sep;
    uint32_t seplen;
} cx_res;

/* where a node written in place is composed first: its new records may be read from it */
static uint8_t cx_scratch[CX_NODE_HDR + CX_NODE_MAX + 128] __attribute__((aligned(64)));

static void cx_seq_emit(const cx_seq *s, uint32_t from, uint32_t to, cx_node *dst) {
    cx_rec r;
    for (uint32_t i = from; i < to; i++) {
        cx_seq_get(s, i, &r);
        cx_emit(dst, &r);
    }
}

/* the shortest key that is above every key of leaf l and at most the first of leaf r
   (a prefix of that first key), or an inner node's first key */
static void cx_sep_of(char *base, cx_node *l, cx_node *r, cx_res *out) {
    cx_rec a, b;
    cx_rec_at(base, r, 0, &b);
    out->sep = b.k;
    out->seplen = b.kl;
    if (r->kind == CX_INNER) return;
    cx_rec_at(base, l, l->nrec - 1, &a);
    uint32_t m = a.kl < b.kl ? a.kl : b.kl, p = 0;
    while (p < m && a.k[p] == b.k[p]) p++;
    if (p < b.kl) out->seplen = p + 1;
}

/* Write the records of s as nodes of `kind`: one, or two halves by bytes when they
   do not fit one, or none. In place in `reuse` (a fresh node of this transaction, one of
   s's sources) when they fit it; a node that replaces a fresh one gets room to grow, as
   the transaction is likely to change it again. */
static int cx_seq_write(cx_txn *t, const cx_seq *s, unsigned kind, uint64_t reuse, int grow, cx_res *out) {
    uint32_t len = cx_seq_len(s), split = len, i;
    uint64_t total = 0, part[2], acc = 0;
    cx_rec r;
    out->n = 0;
    if (!len) return 0;
    for (i = 0; i < len; i++) {
        cx_seq_get(s, i, &r);
        total += cx_rec_bytes(&r) + 2;
    }
    if (total > CX_NODE_MAX) {
        for (i = 0; i + 1 < len; i++) {
            cx_seq_get(s, i, &r);
            acc += cx_rec_bytes(&r) + 2;
            if (acc * 2 >= total) break;
        }
        split = i + 1 < len ? i + 1 : len - 1;
        if (!split) split = 1;
    }
    part[0] = 0;
    for (i = 0; i < split; i++) {
        cx_seq_get(s, i, &r);
        part[0] += cx_rec_bytes(&r) + 2;
    }
    part[1] = total - part[0];
    if (split == len && reuse && cx_cap(CX_N(t->base, reuse)) >= total) {
        cx_node *dst = CX_N(t->base, reuse), *sc = (cx_node *)cx_scratch;
        uint32_t cap = cx_cap(dst);
        sc->size_state = dst->size_state;
        sc->kind = dst->kind;
        sc->nrec = sc->used = 0;
        sc->count = 0;
        cx_seq_emit(s, 0, len, sc);
        memcpy(cx_payload(dst), cx_payload(sc), sc->used);
        memcpy(cx_payload(dst) + cap - 2 * sc->nrec, cx_payload(sc) + cap - 2 * sc->nrec, 2 * sc->nrec);
        dst->nrec = sc->nrec;
        dst->used = sc->used;
        dst->count = sc->count;
        out->n = 1;
        out->off[0] = reuse;
        out->count[0] = dst->count;
        return 0;
    }
    for (int p = 0; p < (split == len ? 1 : 2); p++) {
        uint64_t room = part[p];
        if (grow && split == len) room = room * 2 < CX_NODE_MAX ? room * 2 : (room > CX_NODE_MAX ? room : CX_NODE_MAX);
        uint64_t off = cx_node_new(t, room, kind);
        if (!off) return -1;
        cx_seq_emit(s, p ? split : 0, p ? len : split, CX_N(t->base, off));
        out->off[p] = off;
        out->count[p] = CX_N(t->base, off)->count;
        out->n = p + 1;
    }
    if (out->n == 2) cx_sep_of(t->base, CX_N(t->base, out->off[0]), CX_N(t->base, out->off[1]), out);
    return 0;
}

/* ---- finding records ---- */

/* the child of inner node n that holds position *pos (made relative to it); to insert,
   a position between two children goes to the end of the first */
static uint32_t cx_child_by_pos(char *base, cx_node *n, uint64_t *pos, int insert) {
    uint32_t i;
    for (i = 0; i + 1 < n->nrec; i++) {
        uint64_t c = cx_child_at(base, n, i).count;
        if (*pos < c || (insert && *pos == c)) break;
        *pos -= c;
    }
    return i;
}

/* the child of inner node n a key belongs under: the last whose key is not above it */
static uint32_t cx_child_by_key(char *base, cx_node *n, const uint8_t *k, uint32_t kl) {
    uint32_t lo = 1, hi = n->nrec;
    cx_rec r;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        cx_rec_at(base, n, mid, &r);
        if (cx_cmp(r.k, r.kl, k, kl) <= 0) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

/* the first record of leaf n whose key is not below k; *exact: it is k */
static uint32_t cx_leaf_seek(char *base, cx_node *n, const uint8_t *k, uint32_t kl, int *exact) {
    uint32_t lo = 0, hi = n->nrec;
    cx_rec r;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        cx_rec_at(base, n, mid, &r);
        if (cx_cmp(r.k, r.kl, k, kl) < 0) lo = mid + 1;
        else hi = mid;
    }
    *exact = 0;
    if (lo < n->nrec) {
        cx_rec_at(base, n, lo, &r);
        *exact = cx_cmp(r.k, r.kl, k, kl) == 0;
    }
    return lo;
}

CX_API uint64_t cx_tree_count(char *base, uint64_t root) { return root ? CX_N(base, root)->count : 0; }

CX_API int cx_tree_get(char *base, uint64_t root, uint64_t pos, cx_rec *r) {
    uint64_t off = root;
    if (!root || pos >= CX_N(base, root)->count) return 0;
    while (CX_N(base, off)->kind == CX_INNER) {
        cx_node *n = CX_N(base, off);
        off = cx_child_at(base, n, cx_child_by_pos(base, n, &pos, 0)).off;
    }
    cx_rec_at(base, CX_N(base, off), (uint32_t)pos, r);
    return 1;
}

/* the position of the first record whose key is not below k (the count if none is) */
CX_API uint64_t cx_tree_seek(char *base, uint64_t root, const uint8_t *k, uint32_t kl, int *exact) {
    uint64_t pos = 0, off = root;
    *exact = 0;
    if (!root) return 0;
    for (;;) {
        cx_node *n = CX_N(base, off);
        if (n->kind == CX_LEAF) return pos + cx_leaf_seek(base, n, k, kl, exact);
        uint32_t i = cx_child_by_key(base, n, k, kl);
        for (uint32_t j = 0; j < i; j++) pos += cx_child_at(base, n, j).count;
        off = cx_child_at(base, n, i).off;
    }
}

/* ---- changing a tree ---- */

enum { CX_OP_INSERT, CX_OP_PUT, CX_OP_SET, CX_OP_DELETE };
typedef struct {
    int op;
    uint64_t pos;           /* INSERT (a list), SET, DELETE: the record's position */
    const uint8_t *k, *v;
    uint32_t kl, vl;
    int replace;            /* PUT: an existing key gets the new value */
    int existed;            /* PUT: the key was there */
} cx_op;

/* children a and a + 1 of inner node `off` (of this transaction) become one node, or two
   of about equal size when they do not fit one */
static int cx_merge_pair(cx_txn *t, uint64_t off, uint32_t a, cx_res *out) {
    char *base = t->base;
    cx_node *n = CX_N(base, off);
    cx_rec ra, rb;
    cx_res m;
    cx_child c[2];
    cx_rec_at(base, n, a, &ra);
    cx_rec_at(base, n, a + 1, &rb);
    uint64_t l = cx_child_at(base, n, a).off, r = cx_child_at(base, n, a + 1).off;
    cx_seq ms = {base, {CX_N(base, l), CX_N(base, r)}, {CX_N(base, l)->nrec, CX_N(base, r)->nrec}, 0, 0, 0, {{0}}};
    if (cx_seq_write(t, &ms, CX_N(base, l)->kind, 0, 0, &m)) return -1;
    cx_discard(t, l);
    cx_discard(t, r);
    cx_seq s = {base, {n, NULL}, {n->nrec, 0}, a, 2, (uint32_t)m.n, {{0}}};
    c[0].off = m.off[0];
    c[0].count = m.count[0];
    s.add[0] = ra;
    s.add[0].v = (const uint8_t *)&c[0];
    if (m.n == 2) {
        c[1].off = m.off[1];
        c[1].count = m.count[1];
        if (cx_rec_new(t, CX_INNER, m.sep, m.seplen, (const uint8_t *)&c[1], sizeof c[1], &s.add[1])) return -1;
    }
    uint64_t gone = rb.blob;
    if (cx_seq_write(t, &s, CX_INNER, off, 0, out)) return -1;
    if (out->off[0] != off) cx_discard(t, off);
    if (gone) cx_discard(t, gone);
    return 0;
}

static inline int cx_fresh(const cx_txn *t, uint64_t off) { return CX_N(t->base, off)->txn == t->id; }

/* Inner node `off`'s child i became res: the node written anew (in place when this
   transaction made it), and a child left small merged with a neighbour. */
static int cx_inner_update(cx_txn *t, uint64_t off, uint32_t i, const cx_res *res, cx_res *out) {
    char *base = t->base;
    cx_node *n = CX_N(base, off);
    cx_rec old;
    cx_child c[2], oc = cx_child_at(base, n, i);
    cx_rec_at(base, n, i, &old);
    if (res->n == 1 && res->off[0] == oc.off && cx_fresh(t, off)) {
        c[0].off = oc.off;
        c[0].count = res->count[0];
        memcpy((uint8_t *)old.v, &c[0], sizeof c[0]);
        n->count = n->count - oc.count + res->count[0];
        out->n = 1;
        out->off[0] = off;
        out->count[0] = n->count;
    } else {
        cx_seq s = {base, {n, NULL}, {n->nrec, 0}, i, 1, (uint32_t)res->n, {{0}}};
        for (int j = 0; j < res->n; j++) {
            c[j].off = res->off[j];
            c[j].count = res->count[j];
        }
        if (res->n >= 1) {
            s.add[0] = old;
            s.add[0].v = (const uint8_t *)&c[0];
        }
        if (res->n == 2
            && cx_rec_new(t, CX_INNER, res->sep, res->seplen, (const uint8_t *)&c[1], sizeof c[1], &s.add[1]))
            return -1;
        if (cx_seq_write(t, &s, CX_INNER, cx_fresh(t, off) ? off : 0, cx_fresh(t, off), out)) return -1;
        if (!out->n || out->off[0] != off) cx_discard(t, off);
        if (!res->n && old.blob) cx_discard(t, old.blob);
    }
    if (out->n == 1 && res->n == 1 && CX_N(base, out->off[0])->nrec > 1
        && cx_fill(CX_N(base, res->off[0])) < CX_NODE_MIN) {
        uint32_t nrec = CX_N(base, out->off[0])->nrec;
        return cx_merge_pair(t, out->off[0], i + 1 < nrec ? i : i - 1, out);
    }
    return 0;
}

/* Apply op below node `off`: 0 with *out what the node became, 1 if nothing changed (a
   PUT of a key that is there, not to be replaced), -1 on failure (t->err). */
static int cx_modify(cx_txn *t, uint64_t off, cx_op *op, int depth, cx_res *out) {
    char *base = t->base;
    cx_node *n = CX_N(base, off);
    if (depth >= CX_TREE_DEPTH) {
        t->err = CX_TXN_BAD;
        return -1;
    }
    if (n->kind == CX_INNER) {
        uint32_t i = op->op == CX_OP_PUT ? cx_child_by_key(base, n, op->k, op->kl)
                                          : cx_child_by_pos(base, n, &op->pos, op->op == CX_OP_INSERT);
        cx_res res;
        int rc = cx_modify(t, cx_child_at(base, n, i).off, op, depth + 1, &res);
        return rc ? rc : cx_inner_update(t, off, i, &res, out);
    }
    cx_seq s = {base, {n, NULL}, {n->nrec, 0}, 0, 0, 1, {{0}}};
    cx_rec old = {0};
    const uint8_t *k = op->k;
    uint32_t kl = op->kl;
    int exact = 0;
    switch (op->op) {
    case CX_OP_INSERT:
        s.at = (uint32_t)op->pos;
        k = NULL;
        kl = 0;
        break;
    case CX_OP_PUT:
        s.at = cx_leaf_seek(base, n, op->k, op->kl, &exact);
        if (exact) {
            op->existed = 1;
            if (!op->replace) return 1;
        }
        break;
    case CX_OP_SET:
    case CX_OP_DELETE:
        s.at = (uint32_t)op->pos;
        exact = 1;
        break;
    }
    if (exact) {
        cx_rec_at(base, n, s.at, &old);
        s.drop = 1;
        t->elems -= (int64_t)old.kl + old.vl;
        if (op->op != CX_OP_PUT) {
            k = old.k;
            kl = old.kl;
        }
    }
    if (op->op == CX_OP_DELETE) {
        s.nadd = 0;
    } else {
        if (cx_rec_new(t, CX_LEAF, k, kl, op->v, op->vl, &s.add[0])) return -1;
        t->elems += (int64_t)kl + op->vl;
    }
    if (cx_seq_write(t, &s, CX_LEAF, cx_fresh(t, off) ? off : 0, cx_fresh(t, off), out)) return -1;
    if (!out->n || out->off[0] != off) cx_discard(t, off);
    if (old.blob) cx_discard(t, old.blob);
    return 0;
}

/* the root after its node became res: a new root over a split, none when it emptied, and
   an inner root left with one child gives way to it */
static int cx_root_update(cx_txn *t, uint64_t *root, const cx_res *res) {
    char *base = t->base;
    if (res->n == 2) {
        cx_child c[2] = {{res->off[0], res->count[0]}, {res->off[1], res->count[1]}};
        cx_seq s = {base, {NULL, NULL}, {0, 0}, 0, 0, 2, {{0}}};
        cx_res top;
        s.add[0].v = (const uint8_t *)&c[0];
        s.add[0].vl = sizeof c[0];
        if (cx_rec_new(t, CX_INNER, res->sep, res->seplen, (const uint8_t *)&c[1], sizeof c[1], &s.add[1])
            || cx_seq_write(t, &s, CX_INNER, 0, 0, &top))
            return -1;
        *root = top.off[0];
        return 0;
    }
    *root = res->n ? res->off[0] : 0;
    while (*root && CX_N(base, *root)->kind == CX_INNER && CX_N(base, *root)->nrec == 1) {
        cx_rec r;
        uint64_t only = cx_child_at(base, CX_N(base, *root), 0).off;
        cx_rec_at(base, CX_N(base, *root), 0, &r);
        if (r.blob) cx_discard(t, r.blob);
        cx_discard(t, *root);
        *root = only;
    }
    return t->err ? -1 : 0;
}

static int cx_apply(cx_txn *t, uint64_t *root, cx_op *op) {
    cx_res res;
    int rc;
    if (t->err) return -1;
    if (!*root) {
        if (op->op != CX_OP_INSERT && op->op != CX_OP_PUT) {
            t->err = CX_TXN_BAD;
            return -1;
        }
        cx_seq s = {t->base, {NULL, NULL}, {0, 0}, 0, 0, 1, {{0}}};
        const uint8_t *k = op->op == CX_OP_PUT ? op->k : NULL;
        uint32_t kl = op->op == CX_OP_PUT ? op->kl : 0;
        if (cx_rec_new(t, CX_LEAF, k, kl, op->v, op->vl, &s.add[0])) return -1;
        t->elems += (int64_t)kl + op->vl;
        if (cx_seq_write(t, &s, CX_LEAF, 0, 0, &res)) return -1;
        *root = res.off[0];
        return 0;
    }
    rc = cx_modify(t, *root, op, 0, &res);
    if (rc) return rc < 0 ? -1 : 0;
    return cx_root_update(t, root, &res);
}

CX_API int cx_tree_insert_at(cx_txn *t, uint64_t *root, uint64_t pos, const uint8_t *v, uint32_t vl) {
    cx_op op = {CX_OP_INSERT, pos, NULL, v, 0, vl, 0, 0};
    if (pos > cx_tree_count(t->base, *root) || vl > CX_REC_MAX) {
        t->err = CX_TXN_BAD;
        return -1;
    }
    return cx_apply(t, root, &op);
}

/* a key's record: inserted, or (replace) its value replaced if it is there; *existed says which */
CX_API int cx_tree_put(cx_txn *t, uint64_t *root, const uint8_t *k, uint32_t kl, const uint8_t *v, uint32_t vl,
                       int replace, int *existed) {
    cx_op op = {CX_OP_PUT, 0, k, v, kl, vl, replace, 0};
    int rc;
    if (kl > CX_REC_MAX || vl > CX_REC_MAX) {
        t->err = CX_TXN_BAD;
        return -1;
    }
    rc = cx_apply(t, root, &op);
    *existed = op.existed;
    return rc;
}

/* the value of the record at pos, its key kept */
CX_API int cx_tree_set_at(cx_txn *t, uint64_t *root, uint64_t pos, const uint8_t *v, uint32_t vl) {
    cx_op op = {CX_OP_SET, pos, NULL, v, 0, vl, 0, 0};
    if (pos >= cx_tree_count(t->base, *root) || vl > CX_REC_MAX) {
        t->err = CX_TXN_BAD;
        return -1;
    }
    return cx_apply(t, root, &op);
}

/* every block of the subtree at off, gone with the transaction */
static void cx_drop_subtree(cx_txn *t, uint64_t off) {
    cx_node *n = CX_N(t->base, off);
    cx_rec r;
    for (uint32_t i = 0; i < n->nrec; i++) {
        cx_rec_at(t->base, n, i, &r);
        if (n->kind == CX_INNER) cx_drop_subtree(t, cx_child_at(t->base, n, i).off);
        else t->elems -= (int64_t)r.kl + r.vl;
        if (r.blob) cx_discard(t, r.blob);
    }
    cx_discard(t, off);
}

/* the records at positions [from, to) below node off gone: whole children dropped, the
   ones at the edges changed, and those two merged when they are left small */
static int cx_delete_in(cx_txn *t, uint64_t off, uint64_t from, uint64_t to, int depth, cx_res *out) {
    char *base = t->base;
    cx_node *n = CX_N(base, off);
    cx_rec r;
    uint32_t i, first = n->nrec, last = 0;
    if (depth >= CX_TREE_DEPTH) {
        t->err = CX_TXN_BAD;
        return -1;
    }
    if (n->kind == CX_LEAF) {
        cx_seq s = {base, {n, NULL}, {n->nrec, 0}, (uint32_t)from, (uint32_t)(to - from), 0, {{0}}};
        uint64_t gone[CX_NODE_MAX / 16];
        uint32_t ngone = 0;
        for (i = (uint32_t)from; i < to; i++) {
            cx_rec_at(base, n, i, &r);
            t->elems -= (int64_t)r.kl + r.vl;
            if (r.blob) gone[ngone++] = r.blob;
        }
        if (cx_seq_write(t, &s, CX_LEAF, cx_fresh(t, off) ? off : 0, 0, out)) return -1;
        if (!out->n || out->off[0] != off) cx_discard(t, off);
        for (i = 0; i < ngone; i++) cx_discard(t, gone[i]);
        return 0;
    }
    /* the children it touches: [first, last]; the edge ones may keep some records */
    cx_res edge[2] = {{1, {0, 0}, {0, 0}, NULL, 0}, {1, {0, 0}, {0, 0}, NULL, 0}};
    uint64_t at = 0;
    for (i = 0; i < n->nrec && at < to; i++) {
        cx_child c = cx_child_at(base, n, i);
        uint64_t lo = at, hi = at + c.count;
        at = hi;
        if (hi <= from) continue;
        if (first == n->nrec) first = i;
        last = i;
        if (from <= lo && hi <= to) continue;
        if (cx_delete_in(t, c.off, from > lo ? from - lo : 0, (to < hi ? to : hi) - lo, depth + 1,
                         &edge[i == first ? 0 : 1]))
            return -1;
        n = CX_N(base, off);
    }
    if (first == n->nrec) return 1;
    /* the children wholly inside the range go, with their keys' blobs */
    cx_child c[2];
    cx_seq s = {base, {n, NULL}, {n->nrec, 0}, first, last - first + 1, 0, {{0}}};
    uint64_t lo = 0;
    for (i = 0; i < first; i++) lo += cx_child_at(base, n, i).count;
    for (i = first; i <= last; i++) {
        cx_child ch = cx_child_at(base, n, i);
        int partial = !(from <= lo && lo + ch.count <= to);
        cx_res *e = &edge[i == first ? 0 : 1];
        lo += ch.count;
        cx_rec_at(base, n, i, &r);
        if (partial && e->n) {
            c[s.nadd].off = e->off[0];
            c[s.nadd].count = e->count[0];
            s.add[s.nadd] = r;
            s.add[s.nadd].v = (const uint8_t *)&c[s.nadd];
            s.nadd++;
        } else {
            if (!partial) cx_drop_subtree(t, ch.off);
            if (r.blob) cx_discard(t, r.blob);
        }
    }
    if (t->err || cx_seq_write(t, &s, CX_INNER, cx_fresh(t, off) ? off : 0, 0, out)) return -1;
    if (!out->n || out->off[0] != off) cx_discard(t, off);
    /* the edges are neighbours now: a small one is merged (first with what follows it) */
    if (out->n == 1 && s.nadd && CX_N(base, out->off[0])->nrec > 1) {
        cx_node *p = CX_N(base, out->off[0]);
        uint32_t a = first + 1 < p->nrec ? first : first - 1;
        if (cx_fill(CX_N(base, cx_child_at(base, p, a).off)) < CX_NODE_MIN
            || cx_fill(CX_N(base, cx_child_at(base, p, a + 1).off)) < CX_NODE_MIN)
            return cx_merge_pair(t, out->off[0], a, out);
    }
    return 0;
}

/* the records at positions [from, to) gone */
CX_API int cx_tree_delete_range(cx_txn *t, uint64_t *root, uint64_t from, uint64_t to) {
    uint64_t count = cx_tree_count(t->base, *root);
    cx_res res;
    int rc;
    if (t->err) return -1;
    if (to > count) to = count;
    if (from >= to) return 0;
    if (to - from == 1) {
        cx_op op = {CX_OP_DELETE, from, NULL, NULL, 0, 0, 0, 0};
        return cx_apply(t, root, &op);
    }
    rc = cx_delete_in(t, *root, from, to, 0, &res);
    if (rc) return rc < 0 ? -1 : 0;
    return cx_root_update(t, root, &res);
}

/* ---- whole trees ---- */

static uint64_t cx_clone_blob(cx_txn *t, const cx_rec *r) {
    uint64_t bytes = r->key_only ? r->kl : (uint64_t)r->kl + r->vl;
    uint64_t b = cx_node_new(t, bytes, CX_BLOB);
    if (b && bytes) memcpy(cx_payload(CX_N(t->base, b)), r->k, bytes);
    return b;
}

static uint64_t cx_clone_in(cx_txn *t, uint64_t off, int depth) {
    char *base = t->base;
    cx_node *n = CX_N(base, off);
    uint64_t copy;
    cx_rec r;
    cx_child c;
    if (depth >= CX_TREE_DEPTH || !(copy = cx_node_new(t, cx_fill(n), n->kind))) return 0;
    for (uint32_t i = 0; i < n->nrec; i++) {
        cx_rec_at(base, n, i, &r);
        if (n->kind == CX_INNER) {
            c = cx_child_at(base, n, i);
            if (!(c.off = cx_clone_in(t, c.off, depth + 1))) return 0;
            r.v = (const uint8_t *)&c;
        }
        if (r.blob) {
            if (!(r.blob = cx_clone_blob(t, &r))) return 0;
            r.k = cx_payload(CX_N(base, r.blob));
            if (!r.key_only) r.v = r.k + r.kl;
        }
        if (n->kind == CX_LEAF) t->elems += (int64_t)r.kl + r.vl;
        cx_emit(CX_N(base, copy), &r);
    }
    return copy;
}

/* *dst: a copy of the tree at src, in blocks of this transaction (its tenant's) */
CX_API int cx_tree_clone(cx_txn *t, uint64_t src, uint64_t *dst) {
    *dst = 0;
    if (t->err) return -1;
    if (!src) return 0;
    *dst = cx_clone_in(t, src, 0);
    return *dst ? 0 : -1;
}

/* every block of the tree at root freed, now (its collection is gone) */
CX_API void cx_tree_free(char *base, uint64_t root) {
    cx_node *n;
    cx_rec r;
    if (!root) return;
    n = CX_N(base, root);
    for (uint32_t i = 0; i < n->nrec; i++) {
        cx_rec_at(base, n, i, &r);
        if (n->kind == CX_INNER) cx_tree_free(base, cx_child_at(base, n, i).off);
        if (r.blob) cx_node_free(base, r.blob);
    }
    cx_node_free(base, root);
}

/* ---- walking records in order ---- */

CX_API int cx_cursor_seek(cx_cursor *c, char *base, uint64_t root, uint64_t pos) {
    uint64_t off = root;
    c->base = base;
    c->depth = 0;
    if (!root || pos >= CX_N(base, root)->count) return 0;
    for (;;) {
        cx_node *n = CX_N(base, off);
        c->node[c->depth] = off;
        if (n->kind == CX_LEAF || c->depth + 1 >= CX_TREE_DEPTH) {
            c->idx[c->depth++] = (uint32_t)pos;
            return 1;
        }
        uint32_t i = cx_child_by_pos(base, n, &pos, 0);
        c->idx[c->depth++] = i;
        off = cx_child_at(base, n, i).off;
    }
}

/* down from level d to the leaves, along first (or last) children */
static void cx_cursor_descend(cx_cursor *c, int d, int last) {
    for (; d + 1 < c->depth; d++) {
        uint64_t child = cx_child_at(c->base, CX_N(c->base, c->node[d]), c->idx[d]).off;
        c->node[d + 1] = child;
        c->idx[d + 1] = last ? CX_N(c->base, child)->nrec - 1 : 0;
    }
}

CX_API int cx_cursor_next(cx_cursor *c) {
    int d = c->depth - 1;
    while (d >= 0 && c->idx[d] + 1 >= CX_N(c->base, c->node[d])->nrec) d--;
    if (d < 0) {
        c->depth = 0;
        return 0;
    }
    c->idx[d]++;
    cx_cursor_descend(c, d, 0);
    return 1;
}

CX_API int cx_cursor_prev(cx_cursor *c) {
    int d = c->depth - 1;
    while (d >= 0 && c->idx[d] == 0) d--;
    if (d < 0) {
        c->depth = 0;
        return 0;
    }
    c->idx[d]--;
    cx_cursor_descend(c, d, 1);
    return 1;
}

CX_API void cx_cursor_rec(const cx_cursor *c, cx_rec *r) {
    cx_rec_at(c->base, CX_N(c->base, c->node[c->depth - 1]), c->idx[c->depth - 1], r);
}

/* record i of node off (for a consistency check that walks the nodes itself) */
CX_API void cx_node_rec(char *base, uint64_t off, uint32_t i, cx_rec *r) { cx_rec_at(base, CX_N(base, off), i, r); }

/* ---- after a crash: what the live collections reach ---- */

/* a block at off that may be a node of `tenant`'s nobody has reached yet */
static cx_node *cx_node_ok(char *base, uint64_t off, unsigned tenant) {
    cx_super *sb = CX_SB(base);
    uint64_t end = sb->heap_off + sb->heap_size;
    if (off < sb->heap_off || off >= end || (off & 63) || end - off < 64) return NULL;
    cx_node *n = CX_N(base, off);
    uint64_t size = CX_SIZE(n->size_state);
    if (CX_STATE(n->size_state) != CX_NODE || size < 64 || size > end - off || n->tenant != tenant || n->mark)
        return NULL;
    return n;
}

/* Mark the subtree at off with seq, checking that it is whole: nodes of the tenant that
   nothing else reached, records inside their nodes, blobs that hold them, counts that add
   up. Returns its record count, or -1 (the caller unmarks what was marked). */
static int64_t cx_mark_in(char *base, uint64_t off, unsigned tenant, uint32_t seq, uint64_t *maxtxn,
                          uint64_t *bytes, uint64_t *elems, int depth) {
    cx_node *n = cx_node_ok(base, off, tenant);
    uint64_t count = 0;
    if (!n || depth >= CX_TREE_DEPTH || (n->kind != CX_LEAF && n->kind != CX_INNER)) return -1;
    uint32_t cap = cx_cap(n);
    if (!n->nrec || (uint64_t)n->used + 2ull * n->nrec > cap) return -1;
    n->mark = seq;
    *bytes += CX_SIZE(n->size_state);
    if (n->txn > *maxtxn) *maxtxn = n->txn;
    for (uint32_t i = 0; i < n->nrec; i++) {
        uint32_t s = *cx_slot(n, i), kl, vl;
        if (s + 8ull > n->used) return -1;
        memcpy(&kl, cx_payload(n) + s, 4);
        memcpy(&vl, cx_payload(n) + s + 4, 4);
        uint64_t len = kl & CX_OOL ? 16 : kl & CX_KEY_OOL ? 16ull + vl : 8ull + (kl & CX_LEN_MASK) + vl;
        if ((kl & CX_OOL && kl & CX_KEY_OOL) || s + len > n->used) return -1;
        cx_rec r;
        cx_rec_at(base, n, i, &r);
        if (r.blob) {
            cx_node *b = cx_node_ok(base, r.blob, tenant);
            uint64_t need = CX_NODE_HDR + 8ull + r.kl + (kl & CX_OOL ? vl : 0);
            if (!b || b->kind != CX_BLOB || CX_SIZE(b->size_state) < need) return -1;
            b->mark = seq;
            *bytes += CX_SIZE(b->size_state);
            if (b->txn > *maxtxn) *maxtxn = b->txn;
        }
        if (n->kind == CX_LEAF) {
            *elems += (uint64_t)r.kl + r.vl;
            count++;
            continue;
        }
        cx_child c;
        if (r.vl != sizeof c) return -1;
        memcpy(&c, r.v, sizeof c);
        int64_t below = cx_mark_in(base, c.off, tenant, seq, maxtxn, bytes, elems, depth + 1);
        if (below < 0 || (uint64_t)below != c.count) return -1;
        count += c.count;
    }
    return count == n->count ? (int64_t)count : -1;
}

/* 0 if the tree at root is whole (then marked seq, and its blocks' bytes and its records'
   bytes added up), -1 if not */
static int cx_tree_mark(char *base, uint64_t root, unsigned tenant, uint32_t seq, uint64_t *maxtxn,
                        uint64_t *bytes, uint64_t *elems) {
    if (!root) return 0;
    return cx_mark_in(base, root, tenant, seq, maxtxn, bytes, elems, 0) < 0 ? -1 : 0;
}

/* clear the marks seq left on a tree found broken part way */
static void cx_unmark_in(char *base, uint64_t off, uint32_t seq, int depth) {
    cx_super *sb = CX_SB(base);
    uint64_t end = sb->heap_off + sb->heap_size;
    if (off < sb->heap_off || off >= end || (off & 63) || end - off < 64 || depth >= CX_TREE_DEPTH) return;
    cx_node *n = CX_N(base, off);
    if (CX_STATE(n->size_state) != CX_NODE || n->mark != seq) return;
    n->mark = 0;
    if (n->kind == CX_BLOB || (uint64_t)n->used + 2ull * n->nrec > cx_cap(n)) return;
    for (uint32_t i = 0; i < n->nrec; i++) {
        uint32_t s = *cx_slot(n, i), kl;
        if (s + 16ull > n->used) continue;
        memcpy(&kl, cx_payload(n) + s, 4);
        if (kl & (CX_OOL | CX_KEY_OOL)) {
            uint64_t blob;
            memcpy(&blob, cx_payload(n) + s + 8, 8);
            cx_unmark_in(base, blob, seq, depth + 1);
        }
        if (n->kind == CX_INNER && !(kl & CX_OOL)) {
            cx_rec r;
            cx_child c;
            cx_rec_at(base, n, i, &r);
            if (r.vl == sizeof c && (r.blob ? s + 32ull : s + 24ull + r.kl) <= n->used) {
                memcpy(&c, r.v, sizeof c);
                cx_unmark_in(base, c.off, seq, depth + 1);
            }
        }
    }
}

static void cx_tree_unmark(char *base, uint64_t root, uint32_t seq) {
    if (root) cx_unmark_in(base, root, seq, 0);
}
