/* Redis 7.0's HyperLogLog (see hll.h): the same steps as src/hyperloglog.c, written
   anew, so that every string and every estimate comes out as Redis's. Where Redis's code
   reads the byte after a string (an XZERO opcode cut short by the end) it reads its sds
   terminator: a zero in a string read from the store, and in an HLL being changed the
   byte its buffer holds there (a change at such an XZERO writes past the end, as in
   Redis, and what it left is read again within the command). */
#include "hll.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* held to -Wall -Wextra -Werror in the extension build too (see arena/arena.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

#define REGISTERS CX_HLL_REGISTERS
#define HDR CX_HLL_HDR_SIZE
#define DENSE_BYTES (CX_HLL_DENSE_SIZE - HDR)
#define REGISTER_MAX 63
#define Q 50                          /* the hash bits after the register index */
#define SPARSE_VAL_MAX_VALUE 32
#define SPARSE_VAL_MAX_LEN 4
#define SPARSE_ZERO_MAX_LEN 64
#define SPARSE_XZERO_MAX_LEN 16384
#define ALPHA_INF 0.721347520444481703680  /* 0.5 / ln(2) */
#define HASH_SEED 0xadc83b19U
/* what a buffer keeps past its string: the 3 bytes a sparse change may grow by, the
   terminator, and what a change at an XZERO cut short by the end writes past it */
#define ROOM 8

/* ---- the dense registers: 6 bits each, from each byte's least significant bit ---- */

static inline uint8_t dense_get(const uint8_t *regs, uint32_t index) {
    size_t byte = (size_t)index * 6 / 8;
    unsigned shift = (index * 6) & 7;
    unsigned low = regs[byte];
    /* the last register lies in the last byte: nothing of it beyond */
    unsigned high = byte + 1 < DENSE_BYTES ? regs[byte + 1] : 0;
    return (uint8_t)(((low >> shift) | (high << (8 - shift))) & REGISTER_MAX);
}

static inline void dense_put(uint8_t *regs, uint32_t index, uint8_t value) {
    size_t byte = (size_t)index * 6 / 8;
    unsigned shift = (index * 6) & 7;
    regs[byte] = (uint8_t)((regs[byte] & ~(REGISTER_MAX << shift)) | (value << shift));
    if (byte + 1 < DENSE_BYTES)
        regs[byte + 1] = (uint8_t)((regs[byte + 1] & ~(REGISTER_MAX >> (8 - shift))) | (value >> (8 - shift)));
}

/* hllDenseSet: raise a register to count; 1 if it grew */
static int dense_raise(uint8_t *regs, uint32_t index, uint8_t count) {
    if (count <= dense_get(regs, index))
        return 0;
    dense_put(regs, index, count);
    return 1;
}

/* Every register of a dense string, four from each three bytes. */
static void dense_unpack(const uint8_t *regs, uint8_t *out) {
    for (size_t i = 0, r = 0; i < DENSE_BYTES; i += 3, r += 4) {
        out[r] = regs[i] & REGISTER_MAX;
        out[r + 1] = (uint8_t)((regs[i] >> 6 | regs[i + 1] << 2) & REGISTER_MAX);
        out[r + 2] = (uint8_t)((regs[i + 1] >> 4 | regs[i + 2] << 4) & REGISTER_MAX);
        out[r + 3] = regs[i + 2] >> 2;
    }
}

/* ---- the sparse opcodes ---- */

static inline int is_zero(uint8_t op) { return (op & 0xc0) == 0; }
static inline int is_xzero(uint8_t op) { return (op & 0xc0) == 0x40; }
static inline int is_val(uint8_t op) { return (op & 0x80) != 0; }
static inline long zero_len(uint8_t op) { return (op & 0x3f) + 1; }
static inline long val_value(uint8_t op) { return ((op >> 2) & 0x1f) + 1; }
static inline long val_len(uint8_t op) { return (op & 0x3) + 1; }

/* limit: where the readable bytes end (the string's end, or its buffer's terminator) */
static inline long xzero_len(const uint8_t *p, const uint8_t *limit) {
    return (((long)(*p & 0x3f) << 8) | (p + 1 < limit ? p[1] : 0)) + 1;
}

static inline uint8_t val_op(long value, long len) {
    return (uint8_t)(((value - 1) << 2 | (len - 1)) | 0x80);
}

/* A run of zeros as one ZERO (up to 64) or one XZERO opcode; returns what it wrote. */
static size_t put_zeros(uint8_t *out, long len) {
    if (len > SPARSE_ZERO_MAX_LEN) {
        out[0] = (uint8_t)(((len - 1) >> 8) | 0x40);
        out[1] = (uint8_t)((len - 1) & 0xff);
        return 2;
    }
    out[0] = (uint8_t)(len - 1);
    return 1;
}

/* Calls visit(ctx, first register, run length, value) for each opcode of a sparse string,
   in order; returns the register count the opcodes cover, or -1 when a VAL run passes
   the last register (hllSparseToDense's and hllMerge's walk; runs of zeros past it are
   caught by the count). */
typedef void (*visit_fn)(void *ctx, long first, long len, long value);

static long walk_sparse(const uint8_t *s, size_t len, size_t readable, visit_fn visit, void *ctx) {
    const uint8_t *p = s + HDR, *end = s + len, *limit = s + readable;
    long index = 0;
    while (p < end) {
        if (is_zero(*p)) {
            index += zero_len(*p);
            p++;
        } else if (is_xzero(*p)) {
            index += xzero_len(p, limit);
            p += 2;
        } else {
            long run = val_len(*p);
            if (index + run > REGISTERS)
                return -1;
            visit(ctx, index, run, val_value(*p));
            index += run;
            p++;
        }
    }
    return index;
}

static void visit_dense(void *ctx, long first, long len, long value) {
    for (long i = first; i < first + len; i++)
        dense_put(ctx, (uint32_t)i, (uint8_t)value);
}

static void visit_max(void *ctx, long first, long len, long value) {
    uint8_t *max = ctx;
    for (long i = first; i < first + len; i++)
        if (value > max[i])
            max[i] = (uint8_t)value;
}

/* ---- buffers ---- */

static int reserve(cx_hll *h, size_t need) {
    if (need <= h->cap)
        return 0;
    size_t cap = need * 2;
    uint8_t *p = realloc(h->p, cap);
    if (p == NULL)
        return CX_HLL_NOMEM;
    memset(p + h->cap, 0, cap - h->cap);
    h->p = p;
    h->cap = cap;
    return 0;
}

/* sdsIncrLen: the string's new length, and its terminator */
static void set_len(cx_hll *h, size_t len) {
    h->len = len;
    h->p[len] = 0;
}

int cx_hll_valid(const uint8_t *s, size_t len) {
    if (len < HDR || memcmp(s, "HYLL", 4) != 0 || s[4] > CX_HLL_SPARSE)
        return 0;
    return s[4] != CX_HLL_DENSE || len == CX_HLL_DENSE_SIZE;
}

int cx_hll_init_empty(cx_hll *h) {
    size_t len = HDR + 2 * ((REGISTERS + SPARSE_XZERO_MAX_LEN - 1) / SPARSE_XZERO_MAX_LEN);
    h->p = calloc(len + ROOM, 1);
    if (h->p == NULL)
        return CX_HLL_NOMEM;
    h->len = len;
    h->cap = len + ROOM;
    memcpy(h->p, "HYLL", 4);
    h->p[4] = CX_HLL_SPARSE;
    uint8_t *op = h->p + HDR;
    for (long left = REGISTERS; left > 0; left -= SPARSE_XZERO_MAX_LEN)
        op += put_zeros(op, left < SPARSE_XZERO_MAX_LEN ? left : SPARSE_XZERO_MAX_LEN);
    return 0;
}

int cx_hll_init_copy(cx_hll *h, const uint8_t *s, size_t len) {
    h->p = calloc(len + ROOM, 1);
    if (h->p == NULL)
        return CX_HLL_NOMEM;
    memcpy(h->p, s, len);
    h->len = len;
    h->cap = len + ROOM;
    return 0;
}

void cx_hll_free(cx_hll *h) {
    free(h->p);
    h->p = NULL;
    h->len = h->cap = 0;
}

void cx_hll_invalidate(uint8_t *s) { s[15] |= 0x80; }

int cx_hll_cached(const uint8_t *s, uint64_t *card) {
    if (s[15] & 0x80)
        return 0;
    uint64_t value = 0;
    for (int i = 7; i >= 0; i--)
        value = value << 8 | s[8 + i];
    *card = value;
    return 1;
}

void cx_hll_set_cached(uint8_t *s, uint64_t card) {
    for (int i = 0; i < 8; i++)
        s[8 + i] = (uint8_t)(card >> (8 * i));
}

/* ---- hashing ---- */

uint64_t cx_hll_murmur64a(const void *key, size_t len, uint32_t seed) {
    const uint64_t m = 0xc6a4a7935bd1e995ULL;
    const int r = 47;
    const uint8_t *data = key, *end = data + (len - (len & 7));
    uint64_t h = seed ^ (len * m);
    for (; data != end; data += 8) {
        uint64_t k = 0;
        for (int i = 7; i >= 0; i--)          /* little endian on every machine, as Redis */
            k = k << 8 | data[i];
        k *= m;
        k ^= k >> r;
        k *= m;
        h ^= k;
        h *= m;
    }
    if (len & 7) {
        for (size_t i = len & 7; i > 0; i--)
            h ^= (uint64_t)data[i - 1] << (8 * (i - 1));
        h *= m;
    }
    h ^= h >> r;
    h *= m;
    h ^= h >> r;
    return h;
}

uint8_t cx_hll_pattern(const uint8_t *ele, size_t len, uint32_t *index) {
    uint64_t hash = cx_hll_murmur64a(ele, len, HASH_SEED);
    *index = (uint32_t)(hash & (REGISTERS - 1));
    /* the run of zeros above the index bits, and its ending 1: at most Q + 1 */
    hash = hash >> 14 | (uint64_t)1 << Q;
    return (uint8_t)(__builtin_ctzll(hash) + 1);
}

/* ---- changes ---- */

int cx_hll_to_dense(cx_hll *h) {
    if (h->p[4] == CX_HLL_DENSE)
        return 0;
    uint8_t *dense = calloc(CX_HLL_DENSE_SIZE + ROOM, 1);
    if (dense == NULL)
        return CX_HLL_NOMEM;
    memcpy(dense, h->p, HDR);                 /* the magic and the cached cardinality */
    dense[4] = CX_HLL_DENSE;
    if (walk_sparse(h->p, h->len, h->len + 1, visit_dense, dense + HDR) != REGISTERS) {
        free(dense);
        return CX_HLL_CORRUPT;
    }
    free(h->p);
    h->p = dense;
    h->len = CX_HLL_DENSE_SIZE;
    h->cap = CX_HLL_DENSE_SIZE + ROOM;
    return 1;
}

static int promote(cx_hll *h, uint32_t index, uint8_t count) {
    int converted = cx_hll_to_dense(h);
    if (converted < 0)
        return converted;
    return dense_raise(h->p + HDR, index, count);
}

/* hllSparseSet: find the opcode covering the register; leave it if it holds as much;
   else rewrite it (a split into at most three opcodes), promote to dense if the string
   would grow past sparse_max, and merge equal VAL neighbours around the change. */
static int sparse_set(cx_hll *h, uint32_t index, uint8_t count, size_t sparse_max) {
    if (count > SPARSE_VAL_MAX_VALUE)
        return promote(h, index, count);
    if (reserve(h, h->len + ROOM) != 0)
        return CX_HLL_NOMEM;
    uint8_t *sparse = h->p + HDR, *end = h->p + h->len, *p = sparse, *prev = NULL, *next;
    long first = 0, span = 0;
    while (p < end) {
        long oplen = 1;
        if (is_zero(*p)) {
            span = zero_len(*p);
        } else if (is_val(*p)) {
            span = val_len(*p);
        } else {
            span = xzero_len(p, end + 1);
            oplen = 2;
        }
        if ((long)index <= first + span - 1)
            break;
        prev = p;
        p += oplen;
        first += span;
    }
    if (p >= end)
        return CX_HLL_CORRUPT;                /* the opcodes end before the register */
    int xzero = is_xzero(*p), zero = is_zero(*p);
    next = xzero ? p + 2 : p + 1;
    if (next >= end)
        next = NULL;

    if (!zero && !xzero) {
        if (val_value(*p) >= count)
            return 0;
        if (val_len(*p) == 1) {
            *p = val_op(count, 1);
            goto updated;
        }
    }
    if (zero && zero_len(*p) == 1) {
        *p = val_op(count, 1);
        goto updated;
    }

    /* the general case: the opcode split around the register */
    uint8_t seq[5];
    size_t seqlen = 0;
    long last = first + span - 1;
    if (zero || xzero) {
        if (index != first)
            seqlen += put_zeros(seq + seqlen, (long)index - first);
        seq[seqlen++] = val_op(count, 1);
        if (index != last)
            seqlen += put_zeros(seq + seqlen, last - (long)index);
    } else {
        long value = val_value(*p);
        if (index != first)
            seq[seqlen++] = val_op(value, (long)index - first);
        seq[seqlen++] = val_op(count, 1);
        if (index != last)
            seq[seqlen++] = val_op(value, last - (long)index);
    }
    long delta = (long)seqlen - (xzero ? 2 : 1);
    if (delta > 0 && h->len + (size_t)delta > sparse_max)
        return promote(h, index, count);
    if (delta && next)
        memmove(next + delta, next, (size_t)(end - next));
    set_len(h, (size_t)((long)h->len + delta));
    memcpy(p, seq, seqlen);
    end += delta;

updated:
    /* up to five opcodes from the one before the change: equal VALs joined */
    p = prev ? prev : sparse;
    for (int scan = 5; p < end && scan-- > 0;) {
        if (is_xzero(*p)) {
            p += 2;
            continue;
        }
        if (is_zero(*p)) {
            p++;
            continue;
        }
        if (p + 1 < end && is_val(p[1]) && val_value(*p) == val_value(p[1])) {
            long len = val_len(*p) + val_len(p[1]);
            if (len <= SPARSE_VAL_MAX_LEN) {
                p[1] = val_op(val_value(*p), len);
                memmove(p, p + 1, (size_t)(end - p));
                set_len(h, h->len - 1);
                end--;
                continue;                     /* and again with the next one */
            }
        }
        p++;
    }
    cx_hll_invalidate(h->p);
    return 1;
}

int cx_hll_set(cx_hll *h, uint32_t index, uint8_t count, size_t sparse_max) {
    switch (h->p[4]) {
    case CX_HLL_DENSE:
        return dense_raise(h->p + HDR, index, count);
    case CX_HLL_SPARSE:
        return sparse_set(h, index, count, sparse_max);
    default:
        return CX_HLL_CORRUPT;
    }
}

int cx_hll_add(cx_hll *h, const uint8_t *ele, size_t len, size_t sparse_max) {
    uint32_t index;
    uint8_t count = cx_hll_pattern(ele, len, &index);
    return cx_hll_set(h, index, count, sparse_max);
}

/* ---- reading ---- */

int cx_hll_merge(uint8_t *max, const uint8_t *s, size_t len) {
    if (s[4] == CX_HLL_DENSE) {
        uint8_t regs[REGISTERS];
        dense_unpack(s + HDR, regs);
        for (size_t i = 0; i < REGISTERS; i++)
            if (regs[i] > max[i])
                max[i] = regs[i];
        return 0;
    }
    return walk_sparse(s, len, len, visit_max, max) == REGISTERS ? 0 : CX_HLL_CORRUPT;
}

void cx_hll_dense_registers(const uint8_t *s, uint8_t *out) { dense_unpack(s + HDR, out); }

/* Ertl's sigma and tau ("New cardinality estimation algorithms for HyperLogLog
   sketches", arXiv:1702.01284), step for step as Redis sums them. */
static double sigma(double x) {
    if (x == 1.)
        return INFINITY;
    double y = 1, z = x, previous;
    do {
        x *= x;
        previous = z;
        z += x * y;
        y += y;
    } while (previous != z);
    return z;
}

static double tau(double x) {
    if (x == 0. || x == 1.)
        return 0.;
    double y = 1.0, z = 1 - x, previous;
    do {
        x = sqrt(x);
        previous = z;
        y *= 0.5;
        z -= (1 - x) * (1 - x) * y;           /* pow(1 - x, 2), which compilers make this */
    } while (previous != z);
    return z / 3;
}

/* hllCount's estimate from the histogram of register values, as the uint64_t Redis gets
   from llroundl(E): a value out of a long long's range (an estimate over zero registers
   that have seen everything) is LLONG_MIN there, 2^63 once converted. */
static uint64_t estimate(const long *histo) {
    double m = REGISTERS;
    double z = m * tau((m - (double)histo[Q + 1]) / m);
    for (int j = Q; j >= 1; --j) {
        z += (double)histo[j];
        z *= 0.5;
    }
    z += m * sigma((double)histo[0] / m);
    double e = ALPHA_INF * m * m / z;
    if (!(e < 0x1p63))
        return (uint64_t)1 << 63;
    uint64_t whole = (uint64_t)e;             /* then rounded half away from zero */
    return whole + (e - (double)whole >= 0.5);
}

uint64_t cx_hll_count(const uint8_t *s, size_t len, int *invalid) {
    long histo[64] = {0};
    if (s[4] == CX_HLL_DENSE) {
        uint8_t regs[REGISTERS];
        dense_unpack(s + HDR, regs);
        for (size_t i = 0; i < REGISTERS; i++)
            histo[regs[i]]++;
        return estimate(histo);
    }
    /* hllSparseRegHisto: every run counted, checked for its total only */
    const uint8_t *p = s + HDR, *end = s + len;
    long index = 0;
    while (p < end) {
        long run, value = 0;
        if (is_zero(*p)) {
            run = zero_len(*p);
            p++;
        } else if (is_xzero(*p)) {
            run = xzero_len(p, end);
            p += 2;
        } else {
            run = val_len(*p);
            value = val_value(*p);
            p++;
        }
        index += run;
        histo[value] += run;
    }
    if (index != REGISTERS)
        *invalid = 1;
    return estimate(histo);
}

uint64_t cx_hll_count_registers(const uint8_t *max) {
    long histo[64] = {0};
    for (size_t i = 0; i < REGISTERS; i++)
        histo[max[i] & 63]++;
    return estimate(histo);
}

size_t cx_hll_decode(const uint8_t *s, size_t len, char *out, size_t cap) {
    const uint8_t *p = s + HDR, *end = s + len;
    size_t n = 0;
    while (p < end) {
        char *at = n < cap ? out + n : NULL;
        size_t room = n < cap ? cap - n : 0;
        if (is_zero(*p)) {
            n += (size_t)snprintf(at, room, "z:%ld ", zero_len(*p));
            p++;
        } else if (is_xzero(*p)) {
            n += (size_t)snprintf(at, room, "Z:%ld ", xzero_len(p, end));
            p += 2;
        } else {
            n += (size_t)snprintf(at, room, "v:%ld,%ld ", val_value(*p), val_len(*p));
            p++;
        }
    }
    return n ? n - 1 : 0;                     /* without the last space */
}

/* ---- PFSELFTEST ---- */

static uint64_t xorshift(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

int cx_hll_selftest(size_t sparse_max, uint64_t seed, uint64_t max_card, char *error, size_t error_cap) {
    uint64_t state = seed | 1;
    uint8_t *dense = calloc(CX_HLL_DENSE_SIZE + ROOM, 1);   /* header zeros: dense */
    uint8_t values[REGISTERS];
    cx_hll sparse = {NULL, 0, 0};
    int result = CX_HLL_NOMEM;
    if (dense == NULL)
        return CX_HLL_NOMEM;

    /* registers keep their values, and leave their neighbours alone */
    for (int cycle = 0; cycle < 1000; cycle++) {
        for (uint32_t i = 0; i < REGISTERS; i++) {
            values[i] = (uint8_t)(xorshift(&state) & REGISTER_MAX);
            dense_put(dense + HDR, i, values[i]);
        }
        for (uint32_t i = 0; i < REGISTERS; i++) {
            uint8_t value = dense_get(dense + HDR, i);
            if (value != values[i]) {
                snprintf(error, error_cap, "TESTFAILED Register %u should be %d but is %d", i, values[i], value);
                result = CX_HLL_CORRUPT;
                goto done;
            }
        }
    }

    /* the estimates of distinct elements, dense and sparse */
    memset(dense + HDR, 0, DENSE_BYTES);
    if (cx_hll_init_empty(&sparse) != 0)
        goto done;
    double relerr = 1.04 / sqrt(REGISTERS);
    uint64_t base = xorshift(&state), checkpoint = 1;
    for (uint64_t j = 1; j <= max_card; j++) {
        uint8_t ele[8];
        uint64_t word = j ^ base;
        memcpy(ele, &word, sizeof ele);
        uint32_t index;
        uint8_t count = cx_hll_pattern(ele, sizeof ele, &index);
        dense_raise(dense + HDR, index, count);
        if (cx_hll_add(&sparse, ele, sizeof ele, sparse_max) == CX_HLL_NOMEM)
            goto done;
        if (j != checkpoint)
            continue;
        if (j < sparse_max / 2 && sparse.p[4] != CX_HLL_SPARSE) {
            snprintf(error, error_cap, "TESTFAILED sparse encoding not used");
            result = CX_HLL_CORRUPT;
            goto done;
        }
        int invalid = 0;
        uint64_t card = cx_hll_count(dense, CX_HLL_DENSE_SIZE, &invalid);
        if (card != cx_hll_count(sparse.p, sparse.len, &invalid)) {
            snprintf(error, error_cap, "TESTFAILED dense/sparse disagree");
            result = CX_HLL_CORRUPT;
            goto done;
        }
        int64_t abserr = (int64_t)checkpoint - (int64_t)card;
        uint64_t maxerr = j == 10 ? 1 : (uint64_t)ceil(relerr * 6 * (double)checkpoint);
        if (abserr < 0)
            abserr = -abserr;
        if (abserr > (int64_t)maxerr) {
            snprintf(error, error_cap, "TESTFAILED Too big error. card:%llu abserr:%llu",
                     (unsigned long long)checkpoint, (unsigned long long)abserr);
            result = CX_HLL_CORRUPT;
            goto done;
        }
        checkpoint *= 10;
    }
    result = 0;
done:
    free(dense);
    cx_hll_free(&sparse);
    return result;
}

#pragma GCC diagnostic pop
