/* ext/strops/hll.c: Redis 7.0's HyperLogLog. Strings and estimates Redis 7.0.15 gave for
   the same elements (golden values); a sparse HLL against a dense one fed the same
   elements, at several hll-sparse-max-bytes (the same registers and estimates, the
   sparse opcodes always covering exactly 16384 registers); corrupt sparse strings
   (random opcodes, cut short, overflowing) through every function, which must report
   them or take them as Redis does, never reading or writing out of bounds (the strings
   are malloc'd to their exact size, so AddressSanitizer sees any such access); the
   estimator's edges; PFSELFTEST's checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "strops/hll.h"

#define SPARSE_MAX 3000

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* an exact-size heap copy of an HLL being changed, for the functions that read strings */
static uint8_t *exact_copy(const cx_hll *h) {
    uint8_t *s = malloc(h->len);
    memcpy(s, h->p, h->len);
    return s;
}

static int add_text(cx_hll *h, const char *text, size_t sparse_max) {
    return cx_hll_add(h, (const uint8_t *)text, strlen(text), sparse_max);
}

/* the registers a sparse string's opcodes cover, walked here independently */
static long sparse_span(const uint8_t *s, size_t len) {
    long total = 0;
    for (size_t i = CX_HLL_HDR_SIZE; i < len;) {
        uint8_t op = s[i];
        if ((op & 0xc0) == 0) {
            total += (op & 0x3f) + 1;
            i++;
        } else if ((op & 0xc0) == 0x40) {
            total += ((op & 0x3f) << 8 | (i + 1 < len ? s[i + 1] : 0)) + 1;
            i += 2;
        } else {
            total += (op & 3) + 1;
            i++;
        }
    }
    return total;
}

static void test_golden_strings(void) {
    /* PFADD h a b c, then PFADD y hello world 12345678 123456789abcdef, on redis-server */
    static const uint8_t abc[] = {'H', 'Y', 'L', 'L', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80,
                                  0x60, 0xf3, 0x80, 0x50, 0xb1, 0x84, 0x4b, 0xfb, 0x80, 0x42, 0x5a};
    static const uint8_t words[] = {'H', 'Y', 'L', 'L', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80,
                                    0x47, 0xb8, 0x88, 0x42, 0xfb, 0x88, 0x59, 0x48, 0x80, 0x45,
                                    0x51, 0x88, 0x56, 0xab};
    cx_hll h;
    CHECK_EQ(cx_hll_init_empty(&h), 0);
    CHECK_EQ(h.len, 18);
    CHECK(cx_hll_valid(h.p, h.len));
    uint64_t card = 99;
    CHECK(cx_hll_cached(h.p, &card) && card == 0);
    CHECK_EQ(add_text(&h, "a", SPARSE_MAX) + add_text(&h, "b", SPARSE_MAX) + add_text(&h, "c", SPARSE_MAX), 3);
    CHECK_EQ(add_text(&h, "a", SPARSE_MAX), 0);
    cx_hll_invalidate(h.p);
    CHECK(h.len == sizeof abc && memcmp(h.p, abc, sizeof abc) == 0);
    char decoded[64];
    size_t n = cx_hll_decode(h.p, h.len, NULL, 0);
    CHECK_EQ(cx_hll_decode(h.p, h.len, decoded, n + 2), n);
    CHECK(n == strlen("Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603")
          && memcmp(decoded, "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603", n) == 0);
    int invalid = 0;
    CHECK_EQ(cx_hll_count(h.p, h.len, &invalid), 3);
    CHECK(!invalid && !cx_hll_cached(h.p, &card));
    cx_hll_free(&h);

    CHECK_EQ(cx_hll_init_empty(&h), 0);
    const char *elements[] = {"hello", "world", "12345678", "123456789abcdef"};
    for (int i = 0; i < 4; i++)
        CHECK_EQ(add_text(&h, elements[i], SPARSE_MAX), 1);
    cx_hll_invalidate(h.p);
    CHECK(h.len == sizeof words && memcmp(h.p, words, sizeof words) == 0);
    CHECK_EQ(cx_hll_count(h.p, h.len, &invalid), 4);
    cx_hll_free(&h);
}

static void test_golden_estimates(void) {
    /* PFADD of "e:0" ... "e:<n-1>", then PFCOUNT and PFDEBUG ENCODING, on redis-server */
    static const struct { long n; uint64_t card; int encoding; size_t len; } golden[] = {
        {1, 1, CX_HLL_SPARSE, 21},          {10, 10, CX_HLL_SPARSE, 48},
        {100, 100, CX_HLL_SPARSE, 279},     {1000, 995, CX_HLL_SPARSE, 1880},
        {10000, 10077, CX_HLL_DENSE, 12304}, {100000, 100342, CX_HLL_DENSE, 12304},
    };
    for (size_t g = 0; g < sizeof golden / sizeof golden[0]; g++) {
        cx_hll h;
        CHECK_EQ(cx_hll_init_empty(&h), 0);
        for (long j = 0; j < golden[g].n; j++) {
            char element[32];
            snprintf(element, sizeof element, "e:%ld", j);
            CHECK(add_text(&h, element, SPARSE_MAX) >= 0);
        }
        uint8_t *s = exact_copy(&h);
        int invalid = 0;
        CHECK_EQ(cx_hll_count(s, h.len, &invalid), golden[g].card);
        CHECK_EQ(s[4], golden[g].encoding);
        CHECK_EQ(h.len, golden[g].len);
        free(s);
        cx_hll_free(&h);
    }
}

/* the same elements into a sparse HLL (sparse_max) and a dense one: the same registers,
   the same estimates, promotion when the sparse string would pass sparse_max */
static void test_sparse_matches_dense(void) {
    static const size_t limits[] = {0, 40, 300, 3000, 20000, 100000};
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        for (int round = 0; round < 4; round++) {
            cx_hll sparse, dense;
            CHECK_EQ(cx_hll_init_empty(&sparse), 0);
            CHECK_EQ(cx_hll_init_empty(&dense), 0);
            CHECK_EQ(cx_hll_to_dense(&dense), 1);
            CHECK_EQ(cx_hll_to_dense(&dense), 0);
            long count = 1 + (long)(next_random() % 6000);
            for (long j = 0; j < count; j++) {
                uint64_t element = next_random() % 100000;
                int a = cx_hll_add(&sparse, (const uint8_t *)&element, sizeof element, limits[l]);
                int b = cx_hll_add(&dense, (const uint8_t *)&element, sizeof element, limits[l]);
                CHECK_EQ(a, b);
                if (sparse.p[4] == CX_HLL_SPARSE) {
                    CHECK_EQ(sparse_span(sparse.p, sparse.len), CX_HLL_REGISTERS);
                    CHECK(sparse.len <= (limits[l] > 18 ? limits[l] : 18));
                }
            }
            uint8_t *s = exact_copy(&sparse), *d = exact_copy(&dense);
            int invalid = 0;
            CHECK_EQ(cx_hll_count(s, sparse.len, &invalid), cx_hll_count(d, dense.len, &invalid));
            CHECK(!invalid);
            uint8_t from_sparse[CX_HLL_REGISTERS] = {0}, from_dense[CX_HLL_REGISTERS];
            CHECK_EQ(cx_hll_merge(from_sparse, s, sparse.len), 0);
            cx_hll_dense_registers(d, from_dense);
            CHECK(memcmp(from_sparse, from_dense, sizeof from_dense) == 0);
            CHECK_EQ(cx_hll_count_registers(from_dense), cx_hll_count(d, dense.len, &invalid));
            CHECK(cx_hll_to_dense(&sparse) >= 0);
            CHECK(memcmp(sparse.p + CX_HLL_HDR_SIZE, dense.p + CX_HLL_HDR_SIZE,
                         CX_HLL_DENSE_SIZE - CX_HLL_HDR_SIZE) == 0);
            free(s);
            free(d);
            cx_hll_free(&sparse);
            cx_hll_free(&dense);
        }
    }
}

/* raising registers one by one (PFMERGE's write) keeps the sparse form exact */
static void test_set_registers(void) {
    cx_hll h;
    uint8_t want[CX_HLL_REGISTERS] = {0}, got[CX_HLL_REGISTERS] = {0};
    CHECK_EQ(cx_hll_init_empty(&h), 0);
    for (int i = 0; i < 3000; i++) {
        uint32_t index = (uint32_t)(next_random() % CX_HLL_REGISTERS);
        uint8_t value = (uint8_t)(1 + next_random() % 31);
        int changed = cx_hll_set(&h, index, value, 100000);
        CHECK_EQ(changed, value > want[index]);
        if (value > want[index])
            want[index] = value;
    }
    CHECK_EQ(h.p[4], CX_HLL_SPARSE);
    CHECK_EQ(cx_hll_merge(got, h.p, h.len), 0);
    CHECK(memcmp(want, got, sizeof want) == 0);
    /* a value the sparse form cannot hold makes it dense */
    CHECK_EQ(cx_hll_set(&h, 5, 40, 100000), 1);
    CHECK_EQ(h.p[4], CX_HLL_DENSE);
    CHECK_EQ(h.len, CX_HLL_DENSE_SIZE);
    want[5] = 40;
    cx_hll_dense_registers(h.p, got);
    CHECK(memcmp(want, got, sizeof want) == 0);
    cx_hll_free(&h);
}

static uint8_t *sparse_string(const uint8_t *ops, size_t n) {
    uint8_t *s = malloc(CX_HLL_HDR_SIZE + n);
    memcpy(s, "HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80", CX_HLL_HDR_SIZE);
    memcpy(s + CX_HLL_HDR_SIZE, ops, n);
    return s;
}

static void test_corrupt_sparse(void) {
    uint8_t max[CX_HLL_REGISTERS] = {0};
    int invalid = 0;
    /* XZERO:16383 then a VAL of 2 registers: one past the last */
    static const uint8_t overflow[] = {0x7f, 0xfe, 0x81};
    uint8_t *s = sparse_string(overflow, sizeof overflow);
    CHECK_EQ(cx_hll_merge(max, s, CX_HLL_HDR_SIZE + sizeof overflow), CX_HLL_CORRUPT);
    cx_hll_count(s, CX_HLL_HDR_SIZE + sizeof overflow, &invalid);
    CHECK(invalid);
    cx_hll h;
    CHECK_EQ(cx_hll_init_copy(&h, s, CX_HLL_HDR_SIZE + sizeof overflow), 0);
    CHECK_EQ(cx_hll_to_dense(&h), CX_HLL_CORRUPT);
    cx_hll_free(&h);
    free(s);

    /* an XZERO cut short by the end reads a zero byte after it */
    static const uint8_t cut[] = {0x7f};
    s = sparse_string(cut, sizeof cut);
    char decoded[16];
    size_t n = cx_hll_decode(s, CX_HLL_HDR_SIZE + 1, decoded, sizeof decoded);
    CHECK(n == 7 && memcmp(decoded, "Z:16129", 7) == 0);
    CHECK_EQ(cx_hll_merge(max, s, CX_HLL_HDR_SIZE + 1), CX_HLL_CORRUPT);
    free(s);

    /* no opcodes: no register to find */
    CHECK_EQ(cx_hll_init_copy(&h, (const uint8_t *)"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0", CX_HLL_HDR_SIZE), 0);
    CHECK_EQ(cx_hll_set(&h, 1, 1, SPARSE_MAX), CX_HLL_CORRUPT);
    CHECK_EQ(cx_hll_decode(h.p, h.len, decoded, sizeof decoded), 0);
    cx_hll_free(&h);

    /* random opcodes of random lengths through everything */
    for (int round = 0; round < 3000; round++) {
        size_t n_ops = (size_t)(next_random() % 60);
        uint8_t ops[64];
        for (size_t i = 0; i < n_ops; i++)
            ops[i] = (uint8_t)next_random();
        size_t len = CX_HLL_HDR_SIZE + n_ops;
        s = sparse_string(ops, n_ops);
        long span = sparse_span(s, len);
        memset(max, 0, sizeof max);
        CHECK_EQ(cx_hll_merge(max, s, len) == 0, span == CX_HLL_REGISTERS);
        invalid = 0;
        cx_hll_count(s, len, &invalid);
        CHECK_EQ(invalid, span != CX_HLL_REGISTERS);
        size_t text_len = cx_hll_decode(s, len, NULL, 0);
        char *text = malloc(text_len + 2);
        CHECK_EQ(cx_hll_decode(s, len, text, text_len + 2), text_len);
        CHECK(text_len == 0 || (strlen(text) == text_len + 1 && text[text_len] == ' '));
        free(text);
        CHECK_EQ(cx_hll_init_copy(&h, s, len), 0);
        for (int k = 0; k < 8; k++) {
            uint8_t element = (uint8_t)next_random();
            int added = cx_hll_add(&h, &element, 1, next_random() % 2 ? SPARSE_MAX : 20);
            CHECK(added >= CX_HLL_CORRUPT && added <= 1);
            if (added == CX_HLL_CORRUPT)
                break;
        }
        cx_hll_free(&h);
        free(s);
    }
}

static void test_valid_and_cache(void) {
    uint8_t dense[CX_HLL_DENSE_SIZE] = {'H', 'Y', 'L', 'L', CX_HLL_DENSE};
    CHECK(cx_hll_valid(dense, sizeof dense));
    CHECK(!cx_hll_valid(dense, sizeof dense - 1));
    CHECK(cx_hll_valid(dense, CX_HLL_HDR_SIZE) == 0);
    dense[4] = CX_HLL_SPARSE;
    CHECK(cx_hll_valid(dense, CX_HLL_HDR_SIZE));
    CHECK(!cx_hll_valid(dense, CX_HLL_HDR_SIZE - 1));
    dense[4] = 2;
    CHECK(!cx_hll_valid(dense, CX_HLL_HDR_SIZE));
    dense[4] = CX_HLL_SPARSE;
    dense[0] = 'h';
    CHECK(!cx_hll_valid(dense, CX_HLL_HDR_SIZE));

    uint64_t card = 0;
    cx_hll_set_cached(dense, 0x0123456789abcdefULL);
    CHECK(cx_hll_cached(dense, &card) && card == 0x0123456789abcdefULL);
    CHECK_EQ(dense[8], 0xef);
    cx_hll_invalidate(dense);
    CHECK(!cx_hll_cached(dense, &card));
}

static void test_estimator_edges(void) {
    uint8_t registers[CX_HLL_REGISTERS] = {0};
    CHECK_EQ(cx_hll_count_registers(registers), 0);
    registers[7] = 1;
    CHECK_EQ(cx_hll_count_registers(registers), 1);
    /* every register past what the estimator looks at: Redis's llroundl overflows */
    memset(registers, 63, sizeof registers);
    CHECK_EQ(cx_hll_count_registers(registers), 1ULL << 63);
    uint8_t *dense = malloc(CX_HLL_DENSE_SIZE);
    memset(dense, 0xff, CX_HLL_DENSE_SIZE);
    memcpy(dense, "HYLL\0\0\0\0", 8);
    int invalid = 0;
    CHECK_EQ(cx_hll_count(dense, CX_HLL_DENSE_SIZE, &invalid), 1ULL << 63);
    free(dense);
}

static void test_selftest(void) {
    char error[128] = "";
    CHECK_EQ(cx_hll_selftest(SPARSE_MAX, 42, 100000, error, sizeof error), 0);
    CHECK_EQ(cx_hll_selftest(0, 7, 10000, error, sizeof error), 0);
    CHECK_EQ(error[0], 0);
}

int main(void) {
    RUN(test_golden_strings);
    RUN(test_golden_estimates);
    RUN(test_sparse_matches_dense);
    RUN(test_set_registers);
    RUN(test_corrupt_sparse);
    RUN(test_valid_and_cache);
    RUN(test_estimator_edges);
    RUN(test_selftest);
    return check_exit_code();
}
