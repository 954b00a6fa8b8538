/* Collections' trees (ext/arena/tree.c, coll.c) on their own: random changes in
   transactions, committed or aborted, checked after each against a model kept here (a
   list: an array; a keyed tree: a sorted array), with the arena's accounting; clones,
   drops and eviction; and kill -9 at random moments of a stream of transactions, after
   which a rebuild must keep a whole collection (the last published or the one being
   published) and free every block nothing reaches. */
#include "arena/arena.c"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define ARENA_BYTES (64ull << 20)

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static int backing_errno;

static cx_cfg settings(int policy) {
    cx_cfg c = {.policy = policy, .samples = 5, .rng = &rng, .backing_fd = -1, .backing_errno = &backing_errno};
    return c;
}

static char *new_arena(uint64_t bytes) {
    char *base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    cx_format(base, bytes, 7);
    return base;
}

static uint64_t draw(uint64_t n) { return n ? cx_rand(&rng) % n : 0; }

static int check_eq_ret(unsigned long long a, unsigned long long b, const char *what, const char *file, int line) {
    if (check_report(a == b, what, file, line)) return 1;
    fprintf(stderr, "    left %llu, right %llu\n", a, b);
    return 0;
}
#define CHECK_EQ_RET(a, b) \
    check_eq_ret((unsigned long long)(a), (unsigned long long)(b), #a " == " #b, __FILE__, __LINE__)

static uint64_t find_key(char *base, const char *key) {
    size_t klen = strlen(key);
    uint64_t h = cx_key_hash(CX_SB(base), 0, 0, (const uint8_t *)key, klen);
    return cx_find(base, h, 0, 0, (const uint8_t *)key, klen, NULL);
}

/* the blocks tile the heap, footers repeat sizes, free ones are coalesced and listed,
   quick ones are on the quick list of their size, heap_used is what is neither */
static int heap_ok(char *base) {
    cx_super *sb = CX_SB(base);
    uint64_t off, size, used = 0, listed = 0, free_blocks = 0, quick_blocks = 0;
    int ok = 1, prev_free = 0;
    for (off = sb->heap_off; off < sb->heap_off + sb->heap_size; off += size) {
        size = CX_SIZE(*(uint64_t *)(base + off));
        if (size < CX_MIN_BLOCK || size > sb->heap_off + sb->heap_size - off) return CHECK(!"heap walk");
        ok &= CHECK(*(uint64_t *)(base + off + size - 8) == size);
        unsigned st = CX_STATE(*(uint64_t *)(base + off));
        int is_free = st == CX_FREE;
        ok &= CHECK(!(is_free && prev_free));
        prev_free = is_free;
        if (is_free) free_blocks++;
        else if (st == CX_QUICK) quick_blocks++;
        else used += size;
    }
    ok &= CHECK_EQ_RET(used, sb->heap_used);
    for (unsigned c = 0; c < CX_NCLASS; c++)
        for (uint64_t cur = sb->free_head[c]; cur; cur = ((cx_freeblk *)(base + cur))->next) listed++;
    ok &= CHECK_EQ_RET(listed, free_blocks);
    listed = 0;
    for (unsigned c = 0; c < CX_QUICK_CLASSES; c++)
        for (uint64_t cur = sb->quick_head[c]; cur; cur = ((cx_freeblk *)(base + cur))->next) {
            ok &= CHECK(*(uint64_t *)(base + cur) == ((uint64_t)c << 6 | CX_QUICK));
            listed++;
        }
    ok &= CHECK_EQ_RET(listed, quick_blocks);
    return ok;
}

/* ---------------------------------------------------------------- the model */

typedef struct {
    uint8_t *k, *v;
    uint32_t kl, vl;
} item;

typedef struct {
    item *it;
    uint64_t n, cap;
} model;

static item make_item(const uint8_t *k, uint32_t kl, const uint8_t *v, uint32_t vl) {
    item x = {malloc(kl + 1), malloc(vl + 1), kl, vl};
    if (kl) memcpy(x.k, k, kl);
    if (vl) memcpy(x.v, v, vl);
    return x;
}

static void model_insert(model *m, uint64_t pos, item x) {
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->it = realloc(m->it, m->cap * sizeof *m->it);
    }
    memmove(&m->it[pos + 1], &m->it[pos], (m->n - pos) * sizeof *m->it);
    m->it[pos] = x;
    m->n++;
}

static void model_delete(model *m, uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; i++) {
        free(m->it[i].k);
        free(m->it[i].v);
    }
    memmove(&m->it[from], &m->it[to], (m->n - to) * sizeof *m->it);
    m->n -= to - from;
}

static void model_free(model *m) {
    model_delete(m, 0, m->n);
    free(m->it);
    m->it = NULL;
    m->cap = 0;
}

static model model_copy(const model *m) {
    model c = {malloc((m->n + 1) * sizeof *m->it), m->n, m->n + 1};
    for (uint64_t i = 0; i < m->n; i++) c.it[i] = make_item(m->it[i].k, m->it[i].kl, m->it[i].v, m->it[i].vl);
    return c;
}

static int keycmp(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl) {
    uint32_t l = al < bl ? al : bl;
    int c = l ? memcmp(a, b, l) : 0;
    return c ? c : (al > bl) - (al < bl);
}

static uint64_t model_seek(const model *m, const uint8_t *k, uint32_t kl, int *exact) {
    uint64_t lo = 0, hi = m->n;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (keycmp(m->it[mid].k, m->it[mid].kl, k, kl) < 0) lo = mid + 1;
        else hi = mid;
    }
    *exact = lo < m->n && keycmp(m->it[lo].k, m->it[lo].kl, k, kl) == 0;
    return lo;
}

/* a value of length len, its bytes following from seed */
static uint32_t fill(uint8_t *buf, uint32_t len, uint64_t seed) {
    for (uint32_t i = 0; i < len; i++) buf[i] = (uint8_t)((seed >> (8 * (i % 8))) + i * 31);
    return len;
}

/* lengths that cross every line: empty, short, near the inline limit, blobs */
static uint32_t some_length(void) {
    static const uint32_t lengths[] = {0, 1, 5, 17, 60, 200, 370, 377, 380, 400, 1000, 5000, 70000};
    uint64_t r = draw(100);
    if (r < 60) return (uint32_t)draw(24);
    return lengths[draw(sizeof lengths / sizeof *lengths)];
}

/* ---------------------------------------------------------------- checks */

static int same_rec(const cx_rec *r, const item *x, int keyed) {
    return r->vl == x->vl && (!r->vl || memcmp(r->v, x->v, r->vl) == 0)
        && (!keyed || (r->kl == x->kl && (!r->kl || memcmp(r->k, x->k, r->kl) == 0)));
}

/* the tree holds exactly the model: by cursor both ways, and by position */
static int tree_is(char *base, uint64_t root, const model *m, int keyed) {
    cx_cursor c;
    cx_rec r;
    int ok = CHECK_EQ_RET(cx_tree_count(base, root), m->n);
    uint64_t i = 0;
    if (cx_cursor_seek(&c, base, root, 0)) {
        do {
            cx_cursor_rec(&c, &r);
            if (i >= m->n || !same_rec(&r, &m->it[i], keyed)) {
                ok &= CHECK(!"forward walk differs");
                break;
            }
            i++;
        } while (cx_cursor_next(&c));
    }
    ok &= CHECK_EQ_RET(i, m->n);
    if (m->n && cx_cursor_seek(&c, base, root, m->n - 1)) {
        i = m->n;
        do {
            cx_cursor_rec(&c, &r);
            if (!i || !same_rec(&r, &m->it[i - 1], keyed)) {
                ok &= CHECK(!"backward walk differs");
                break;
            }
            i--;
        } while (cx_cursor_prev(&c));
        ok &= CHECK_EQ_RET(i, 0);
    }
    for (int probe = 0; probe < 8 && m->n; probe++) {
        uint64_t pos = draw(m->n);
        ok &= CHECK(cx_tree_get(base, root, pos, &r) && same_rec(&r, &m->it[pos], keyed));
    }
    ok &= CHECK(!cx_tree_get(base, root, m->n, &r));
    if (keyed) {
        for (uint64_t j = 0; j + 1 < m->n; j++)
            if (keycmp(m->it[j].k, m->it[j].kl, m->it[j + 1].k, m->it[j + 1].kl) >= 0) ok &= CHECK(!"model order");
    }
    return ok;
}

/* the blocks and record bytes the trees of collection `off` really hold agree with its
   header, and with its tenant's bill and the heap's (nothing else lives in the arena) */
static int accounting_holds(char *base, uint64_t off) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    cx_coll *c = cx_coll_of(e);
    uint64_t bytes = 0, elems = 0, maxtxn = 0, nodes = 0, nodes_bytes = 0, size;
    int ok = 1;
    ok &= CHECK(cx_tree_mark(base, c->root[0], e->tenant, 0xfffffffe, &maxtxn, &bytes, &elems) == 0);
    ok &= CHECK(cx_tree_mark(base, c->root[1], e->tenant, 0xfffffffe, &maxtxn, &bytes, &elems) == 0);
    for (uint64_t o = sb->heap_off; o < sb->heap_off + sb->heap_size; o += size) {
        size = CX_SIZE(*(uint64_t *)(base + o));
        if (CX_STATE(*(uint64_t *)(base + o)) == CX_NODE) {
            nodes++;
            nodes_bytes += size;
            ok &= CHECK(CX_N(base, o)->mark == 0xfffffffe);    /* no block leaked */
        }
    }
    cx_tree_unmark(base, c->root[0], 0xfffffffe);
    cx_tree_unmark(base, c->root[1], 0xfffffffe);
    ok &= CHECK_EQ_RET(bytes, c->bytes);
    ok &= CHECK_EQ_RET(elems, c->elems);
    ok &= CHECK_EQ_RET(nodes_bytes, c->bytes);
    ok &= CHECK_EQ_RET(sb->tenants[e->tenant].used_bytes, CX_SIZE(e->size_state) + c->bytes);
    ok &= CHECK_EQ_RET(sb->heap_used, CX_SIZE(e->size_state) + c->bytes);
    ok &= CHECK_EQ_RET(sb->dataset, (uint64_t)e->key_len + e->value_len + c->elems);
    (void)nodes;
    return ok;
}

/* ---------------------------------------------------------------- collections */

static uint64_t new_coll(char *base, const cx_cfg *cfg, const char *key, int type) {
    cx_coll empty;
    memset(&empty, 0, sizeof empty);
    uint64_t off = cx_reserve(base, 0, strlen(key), CX_COLL_VALUE_BYTES, CX_COLL_VALUE_BYTES, cfg, 1000);
    if (!off) return 0;
    cx_coll_init(base, off, &empty);
    cx_commit(base, off, 0, (const uint8_t *)key, strlen(key), -1, type, 0, 1000, 0);
    return off;
}

/* One transaction on the collection: `ops` random changes to tree 0, keyed or not, made
   to the model too; committed (the model kept) or, sometimes, aborted (the model put
   back). Returns 0, or -1 when the arena was full (the model put back too). */
static int random_txn(char *base, const cx_cfg *cfg, uint64_t off, model *m, int keyed, int ops, int may_abort,
                      int *aborted, int grow) {
    cx_txn t;
    cx_coll c = *cx_coll_of(CX_E(base, off));
    model before = model_copy(m);
    uint8_t kbuf[1024], vbuf[70000];
    cx_pin(base, off);
    cx_txn_begin(&t, base, cfg, 0, 1000);
    for (int i = 0; i < ops && !t.err; i++) {
        uint64_t r = grow ? draw(50) : draw(100);
        uint32_t vl = fill(vbuf, some_length(), cx_rand(&rng));
        if (!keyed) {
            if (r < 50 || !m->n) {
                uint64_t pos = r < 20 ? 0 : r < 35 ? m->n : draw(m->n + 1);
                if (cx_tree_insert_at(&t, &c.root[0], pos, vbuf, vl) == 0) model_insert(m, pos, make_item(NULL, 0, vbuf, vl));
            } else if (r < 70) {
                uint64_t pos = draw(m->n);
                if (cx_tree_set_at(&t, &c.root[0], pos, vbuf, vl) == 0) {
                    model_delete(m, pos, pos + 1);
                    model_insert(m, pos, make_item(NULL, 0, vbuf, vl));
                }
            } else if (r < 92) {
                uint64_t pos = draw(m->n);
                if (cx_tree_delete_range(&t, &c.root[0], pos, pos + 1) == 0) model_delete(m, pos, pos + 1);
            } else {
                uint64_t from = draw(m->n), to = from + draw(m->n - from + 1);
                if (r == 99 && draw(10) == 0) from = 0, to = m->n;
                if (cx_tree_delete_range(&t, &c.root[0], from, to) == 0) model_delete(m, from, to);
            }
            continue;
        }
        /* keys: short ones, and long ones sharing a long prefix (long separators) */
        uint32_t kl;
        if (draw(4) == 0) {
            kl = 300 + (uint32_t)draw(400);
            memset(kbuf, 'p', kl);
            kl += fill(kbuf + kl, 3, draw(50));
        } else {
            kl = fill(kbuf, 1 + (uint32_t)draw(12), draw(4000));
        }
        if (r < 60 || !m->n) {
            int existed, exact, replace = draw(2);
            uint64_t pos = model_seek(m, kbuf, kl, &exact);
            if (cx_tree_put(&t, &c.root[0], kbuf, kl, vbuf, vl, replace, &existed) == 0) {
                CHECK_EQ(existed, exact);
                if (exact && replace) model_delete(m, pos, pos + 1);
                if (!exact || replace) model_insert(m, pos, make_item(kbuf, kl, vbuf, vl));
            }
        } else if (r < 90) {
            int exact;
            uint64_t pos = cx_tree_seek(base, c.root[0], kbuf, kl, &exact), mpos;
            int mexact;
            mpos = model_seek(m, kbuf, kl, &mexact);
            CHECK_EQ(pos, mpos);
            CHECK_EQ(exact, mexact);
            if (!exact) pos = draw(m->n);
            if (cx_tree_delete_range(&t, &c.root[0], pos, pos + 1) == 0) model_delete(m, pos, pos + 1);
        } else {
            uint64_t from = draw(m->n), to = from + draw(m->n - from + 1);
            if (cx_tree_delete_range(&t, &c.root[0], from, to) == 0) model_delete(m, from, to);
        }
    }
    int full = t.err == CX_TXN_FULL;
    CHECK(t.err == 0 || full);
    *aborted = t.err || (may_abort && draw(5) == 0);
    if (*aborted) {
        cx_txn_abort(&t);
        model_free(m);
        *m = before;
    } else {
        c.bytes += (uint64_t)t.bytes;
        c.elems += (uint64_t)t.elems;
        cx_coll_publish(base, off, &c);
        cx_txn_commit(&t);
        model_free(&before);
    }
    cx_unpin(base, off);
    return full ? -1 : 0;
}

static void test_list_against_model(void) {
    char *base = new_arena(ARENA_BYTES);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t off = new_coll(base, &cfg, "list", CX_TYPE_LIST);
    model m = {0};
    int aborted, aborts = 0;
    for (int round = 0; round < 400; round++) {
        random_txn(base, &cfg, off, &m, 0, 1 + (int)draw(round % 10 == 0 ? 300 : 12), 1, &aborted, 0);
        aborts += aborted;
        if (!tree_is(base, cx_coll_of(CX_E(base, off))->root[0], &m, 0) || !accounting_holds(base, off)) {
            fprintf(stderr, "    after round %d (%llu records)\n", round, (unsigned long long)m.n);
            break;
        }
    }
    CHECK(aborts > 0);
    /* a big list: positions through several levels */
    for (int round = 0; round < 10; round++) random_txn(base, &cfg, off, &m, 0, 1000, 0, &aborted, 1);
    CHECK(m.n > 5000);
    for (int round = 0; round < 20; round++) random_txn(base, &cfg, off, &m, 0, 500, 1, &aborted, 0);
    CHECK(tree_is(base, cx_coll_of(CX_E(base, off))->root[0], &m, 0));
    CHECK(accounting_holds(base, off));
    CHECK(heap_ok(base));
    model_free(&m);
    munmap(base, ARENA_BYTES);
}

static void test_keyed_against_model(void) {
    char *base = new_arena(ARENA_BYTES);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t off = new_coll(base, &cfg, "set", CX_TYPE_SET);
    model m = {0};
    int aborted;
    uint64_t most = 0;
    for (int round = 0; round < 400; round++) {
        random_txn(base, &cfg, off, &m, 1, 1 + (int)draw(round % 10 == 0 ? 400 : 12), 1, &aborted, round % 3 == 0);
        if (m.n > most) most = m.n;
        if (!tree_is(base, cx_coll_of(CX_E(base, off))->root[0], &m, 1) || !accounting_holds(base, off)) {
            fprintf(stderr, "    after round %d (%llu records)\n", round, (unsigned long long)m.n);
            break;
        }
    }
    for (int round = 0; round < 10; round++) {
        random_txn(base, &cfg, off, &m, 1, 300, 0, &aborted, 1);
        if (m.n > most) most = m.n;
    }
    CHECK(most > 2000);
    CHECK(tree_is(base, cx_coll_of(CX_E(base, off))->root[0], &m, 1));
    /* every key is found where the model has it, and absent ones where they would go */
    uint8_t probe[8];
    for (uint64_t i = 0; i < m.n; i++) {
        int exact;
        uint64_t pos = cx_tree_seek(base, cx_coll_of(CX_E(base, off))->root[0], m.it[i].k, m.it[i].kl, &exact);
        if (!CHECK(pos == i && exact)) break;
    }
    for (int i = 0; i < 200; i++) {
        int exact, mexact;
        uint32_t kl = fill(probe, (uint32_t)draw(8), cx_rand(&rng));
        uint64_t pos = cx_tree_seek(base, cx_coll_of(CX_E(base, off))->root[0], probe, kl, &exact);
        CHECK_EQ(pos, model_seek(&m, probe, kl, &mexact));
        CHECK_EQ(exact, mexact);
    }
    CHECK(heap_ok(base));
    model_free(&m);
    munmap(base, ARENA_BYTES);
}

/* a transaction that finds the arena full fails whole: the old tree stays, nothing leaks */
static void test_full_arena_aborts_whole(void) {
    char *base = new_arena(4ull << 20);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t off = new_coll(base, &cfg, "list", CX_TYPE_LIST);
    model m = {0};
    int aborted, fulls = 0;
    for (int round = 0; round < 300 && fulls < 20; round++) {
        if (random_txn(base, &cfg, off, &m, 0, 200, 0, &aborted, round % 8 != 0) < 0) fulls++;
        if (!tree_is(base, cx_coll_of(CX_E(base, off))->root[0], &m, 0) || !accounting_holds(base, off)) {
            fprintf(stderr, "    after round %d\n", round);
            break;
        }
    }
    CHECK(fulls > 0);
    model_free(&m);
    munmap(base, 4ull << 20);
}

/* a clone is a tree of its own; dropping a collection, or replacing it, frees its trees */
static void test_clone_drop_and_replace(void) {
    char *base = new_arena(ARENA_BYTES);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t off = new_coll(base, &cfg, "list", CX_TYPE_LIST), copy;
    cx_super *sb = CX_SB(base);
    uint64_t empty_used = sb->heap_used - CX_SIZE(CX_E(base, off)->size_state);
    model m = {0};
    int aborted;
    for (int round = 0; round < 10; round++) random_txn(base, &cfg, off, &m, 0, 500, 0, &aborted, 0);

    copy = new_coll(base, &cfg, "copy", CX_TYPE_LIST);
    cx_txn t;
    cx_coll c = *cx_coll_of(CX_E(base, copy));
    cx_txn_begin(&t, base, &cfg, 0, 1000);
    CHECK(cx_tree_clone(&t, cx_coll_of(CX_E(base, off))->root[0], &c.root[0]) == 0);
    c.bytes += (uint64_t)t.bytes;
    c.elems += (uint64_t)t.elems;
    cx_coll_publish(base, copy, &c);
    cx_txn_commit(&t);
    CHECK(tree_is(base, cx_coll_of(CX_E(base, copy))->root[0], &m, 0));
    CHECK_EQ(cx_coll_of(CX_E(base, copy))->elems, cx_coll_of(CX_E(base, off))->elems);
    CHECK(cx_coll_of(CX_E(base, copy))->root[0] != cx_coll_of(CX_E(base, off))->root[0]);

    /* the original dropped: the copy still whole */
    cx_drop(base, off, 1);
    CHECK(tree_is(base, cx_coll_of(CX_E(base, copy))->root[0], &m, 0));
    CHECK(accounting_holds(base, copy));
    /* the copy replaced by a string: its trees go too */
    uint64_t s = cx_reserve(base, 0, 4, 3, 3, &cfg, 1000);
    memcpy(CX_VAL(CX_E(base, s)), "abc", 3);
    cx_commit(base, s, 0, (const uint8_t *)"copy", 4, -1, CX_TYPE_STRING, 0, 1000, 0);
    CHECK_EQ(sb->heap_used, CX_SIZE(CX_E(base, s)->size_state));
    CHECK_EQ(sb->dataset, 7);
    CHECK_EQ(sb->tenants[0].used_bytes, sb->heap_used);
    (void)empty_used;
    CHECK(heap_ok(base));
    model_free(&m);
    munmap(base, ARENA_BYTES);
}

/* under maxmemory, a collection is evicted like any entry, its trees with it; the one a
   transaction works on (pinned) is not */
static void test_eviction_takes_collections_whole(void) {
    char *base = new_arena(ARENA_BYTES);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    cx_super *sb = CX_SB(base);
    model ms[8] = {{0}};
    uint64_t offs[8];
    char key[16];
    int aborted;
    for (int i = 0; i < 8; i++) {
        snprintf(key, sizeof key, "l%d", i);
        offs[i] = new_coll(base, &cfg, key, CX_TYPE_LIST);
        for (int r = 0; r < 6; r++) random_txn(base, &cfg, offs[i], &ms[i], 0, 300, 0, &aborted, 1);
    }
    cfg.maxmemory = sb->heap_used / 2;
    /* the newest grows past the limit: older ones go, it stays */
    for (int r = 0; r < 6; r++) random_txn(base, &cfg, offs[7], &ms[7], 0, 300, 0, &aborted, 1);
    CHECK(sb->heap_used <= cfg.maxmemory + (1u << 20));
    CHECK(tree_is(base, cx_coll_of(CX_E(base, offs[7]))->root[0], &ms[7], 0));
    uint64_t bytes = 0, size;
    for (uint64_t o = sb->heap_off; o < sb->heap_off + sb->heap_size; o += size) {
        size = CX_SIZE(*(uint64_t *)(base + o));
        unsigned st = CX_STATE(*(uint64_t *)(base + o));
        if (st != CX_FREE && st != CX_QUICK) bytes += size;
    }
    CHECK_EQ(bytes, sb->heap_used);
    CHECK(sb->evicted > 0);
    CHECK(heap_ok(base));
    for (int i = 0; i < 8; i++) model_free(&ms[i]);
    munmap(base, ARENA_BYTES);
}

/* ---------------------------------------------------------------- crashes */

/* A child runs transactions on a list and is killed at a random moment. Before each
   publish it writes the length the list will have, after it the length it has: the
   rebuilt arena must hold a whole list of one of the two. */
typedef struct { volatile uint64_t before, after, rounds; } progress;

static void test_kill_during_transactions(void) {
    int runs = 0, rebuilt_whole = 0;
    for (int run = 0; run < 40; run++) {
        char *base = new_arena(16ull << 20);
        progress *p = mmap(NULL, sizeof *p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        cx_cfg cfg = settings(CX_NOEVICTION);
        uint64_t off = new_coll(base, &cfg, "list", CX_TYPE_LIST);
        int keyed = run % 2;
        p->before = p->after = p->rounds = 0;
        pid_t child = fork();
        if (child == 0) {
            for (;;) {
                /* (the model's length after the next commit is only known once it ran:
                   the child publishes its own header, with the length written first) */
                cx_txn t;
                cx_coll c = *cx_coll_of(CX_E(base, off));
                uint8_t v[600];
                cx_txn_begin(&t, base, &cfg, 0, 1000);
                int grow = draw(3) != 0 || cx_tree_count(base, c.root[0]) < 50;
                for (int i = 0; i < 1 + (int)draw(40); i++) {
                    uint32_t vl = fill(v, (uint32_t)draw(sizeof v), cx_rand(&rng));
                    if (keyed) {
                        int existed;
                        uint8_t k[16];
                        uint32_t kl = fill(k, 1 + (uint32_t)draw(15), cx_rand(&rng));
                        if (grow) cx_tree_put(&t, &c.root[0], k, kl, v, vl, 1, &existed);
                        else if (cx_tree_count(base, c.root[0]))
                            cx_tree_delete_range(&t, &c.root[0], 0, 1 + draw(5));
                    } else if (grow) {
                        cx_tree_insert_at(&t, &c.root[0], draw(cx_tree_count(base, c.root[0]) + 1), v, vl);
                    } else if (cx_tree_count(base, c.root[0])) {
                        uint64_t from = draw(cx_tree_count(base, c.root[0]));
                        cx_tree_delete_range(&t, &c.root[0], from, from + 1 + draw(20));
                    }
                }
                if (t.err) {
                    cx_txn_abort(&t);
                    continue;
                }
                c.bytes += (uint64_t)t.bytes;
                c.elems += (uint64_t)t.elems;
                p->before = cx_tree_count(base, c.root[0]);
                cx_coll_publish(base, off, &c);
                cx_txn_commit(&t);
                p->after = p->before;
                p->rounds++;
            }
        }
        struct timespec pause = {0, (long)(1000000 + draw(30000000))};
        nanosleep(&pause, NULL);
        kill(child, SIGKILL);
        int status;
        waitpid(child, &status, 0);
        runs++;
        uint64_t before = p->before, after = p->after;
        CHECK(cx_rebuild(base) >= 0);
        uint64_t found = find_key(base, "list");
        if (!CHECK(found == off)) {
            munmap(base, 16ull << 20);
            continue;
        }
        uint64_t n = cx_tree_count(base, cx_coll_of(CX_E(base, found))->root[0]);
        if (CHECK(n == before || n == after) && accounting_holds(base, found)) rebuilt_whole++;
        CHECK(heap_ok(base));
        munmap((void *)p, sizeof *p);
        munmap(base, 16ull << 20);
    }
    CHECK_EQ(rebuilt_whole, runs);
}

/* a collection whose tree is broken (a child offset overwritten) is dropped by a
   rebuild, and its blocks freed; the others stay */
static void test_rebuild_drops_a_broken_tree(void) {
    char *base = new_arena(ARENA_BYTES);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t good = new_coll(base, &cfg, "good", CX_TYPE_LIST), bad = new_coll(base, &cfg, "bad", CX_TYPE_LIST);
    model mg = {0}, mb = {0};
    int aborted;
    for (int r = 0; r < 10; r++) {
        random_txn(base, &cfg, good, &mg, 0, 400, 0, &aborted, 1);
        random_txn(base, &cfg, bad, &mb, 0, 400, 0, &aborted, 1);
    }
    uint64_t root = cx_coll_of(CX_E(base, bad))->root[0];
    CHECK(CX_N(base, root)->kind == CX_INNER);
    /* its last child's offset now points into the middle of some block */
    cx_node *n = CX_N(base, root);
    uint8_t *slot = (uint8_t *)n + CX_NODE_HDR + cx_cap(n) - 2 * n->nrec;
    uint16_t at;
    memcpy(&at, slot, 2);
    uint8_t *rec = (uint8_t *)n + CX_NODE_HDR + at;
    uint64_t wrong = 64 + CX_SB(base)->heap_off + 640;
    uint32_t kl;
    memcpy(&kl, rec, 4);
    memcpy(rec + (kl & 0x40000000u ? 16 : 8 + (kl & 0x3fffffffu)), &wrong, 8);
    CHECK_EQ(cx_rebuild(base), 1);
    CHECK(find_key(base, "bad") == 0);
    CHECK(find_key(base, "good") == good);
    CHECK(tree_is(base, cx_coll_of(CX_E(base, good))->root[0], &mg, 0));
    CHECK(accounting_holds(base, good));
    CHECK(heap_ok(base));
    model_free(&mg);
    model_free(&mb);
    munmap(base, ARENA_BYTES);
}

/* A collection flattened for the disk tier and unflattened again holds the same records,
   and bytes cut short or with a count that lies are refused with nothing left over. */
static void flatten_round_trip(int keyed) {
    char *base = new_arena(ARENA_BYTES);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t off = new_coll(base, &cfg, "c", keyed ? CX_TYPE_SET : CX_TYPE_LIST);
    model m = {0};
    int aborted;
    for (int round = 0; round < 6; round++) random_txn(base, &cfg, off, &m, keyed, 400, 0, &aborted, 1);
    cx_coll *c = cx_coll_of(CX_E(base, off));
    c->flags = 1;
    uint64_t len = cx_coll_flat_len(base, c), heap_used = CX_SB(base)->heap_used;
    uint8_t *flat = malloc(len);
    cx_coll_flatten(base, c, flat);
    cx_txn t;
    cx_coll back;
    cx_txn_begin(&t, base, &cfg, 0, 1000);
    CHECK(cx_coll_unflatten(&t, &back, flat, len, !keyed) == 0);
    CHECK(tree_is(base, back.root[0], &m, keyed));
    CHECK_EQ(back.flags, 1);
    CHECK_EQ(back.root[1], 0);
    CHECK_EQ((uint64_t)t.elems, c->elems);
    cx_txn_abort(&t);
    CHECK_EQ(CX_SB(base)->heap_used, heap_used);
    for (uint64_t cut = 0; cut < len; cut += 1 + draw(len / 50)) {
        cx_txn_begin(&t, base, &cfg, 0, 1000);
        CHECK(cx_coll_unflatten(&t, &back, flat, cut, !keyed) == -1);
        cx_txn_abort(&t);
    }
    if (!keyed) {   /* a list with a second tree */
        uint64_t one = 1;
        memcpy(flat + 16, &one, 8);
        cx_txn_begin(&t, base, &cfg, 0, 1000);
        CHECK(cx_coll_unflatten(&t, &back, flat, len, 1) == -1);
        cx_txn_abort(&t);
        one = 0;
        memcpy(flat + 16, &one, 8);
    }
    uint64_t lying = m.n + 1;
    memcpy(flat + 8, &lying, 8);
    cx_txn_begin(&t, base, &cfg, 0, 1000);
    CHECK(cx_coll_unflatten(&t, &back, flat, len, !keyed) == -1);
    cx_txn_abort(&t);
    CHECK_EQ(CX_SB(base)->heap_used, heap_used);
    CHECK(heap_ok(base));
    free(flat);
    model_free(&m);
    munmap(base, ARENA_BYTES);
}

static void test_flatten_round_trip(void) {
    flatten_round_trip(0);
    flatten_round_trip(1);
}

int main(void) {
    RUN(test_list_against_model);
    RUN(test_keyed_against_model);
    RUN(test_full_arena_aborts_whole);
    RUN(test_clone_drop_and_replace);
    RUN(test_flatten_round_trip);
    RUN(test_eviction_takes_collections_whole);
    RUN(test_kill_during_transactions);
    RUN(test_rebuild_drops_a_broken_tree);
    return check_exit_code();
}
