/* ext/strops/: BITCOUNT's, BITPOS's and BITOP's bit operations, and LCS, each against
   a plain bit-by-bit (or cell-by-cell) version of itself over many pseudo-random
   strings, at every alignment and length up to a few words, and at the edges (empty
   ranges of one bit, all zeros, all ones). The buffers are malloc'd to their exact
   size, so AddressSanitizer catches a read or write past either end. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "strops/bitops.h"
#include "strops/lcs.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* bytes that make runs of zeros and ones as well as noise */
static void fill(uint8_t *p, size_t n) {
    int style = (int)(next_random() % 4);
    for (size_t i = 0; i < n; i++) {
        uint8_t byte = (uint8_t)next_random();
        p[i] = style == 0 ? byte : style == 1 ? 0x00 : style == 2 ? 0xff
               : (next_random() % 8 == 0 ? byte : (uint8_t)(i % 2 ? 0xff : 0x00));
    }
}

static int bit_at(const uint8_t *p, uint64_t bit) { return (p[bit >> 3] >> (7 - (bit & 7))) & 1; }

static uint64_t slow_count(const uint8_t *p, uint64_t first, uint64_t last) {
    uint64_t count = 0;
    for (uint64_t bit = first; bit <= last; bit++)
        count += (uint64_t)bit_at(p, bit);
    return count;
}

static int64_t slow_pos(const uint8_t *p, uint64_t first, uint64_t last, int value) {
    for (uint64_t bit = first; bit <= last; bit++)
        if (bit_at(p, bit) == value)
            return (int64_t)bit;
    return -1;
}

static void test_bitcount_and_bitpos(void) {
    for (int round = 0; round < 3000; round++) {
        size_t n = 1 + (size_t)(next_random() % 70);
        uint8_t *p = malloc(n);
        fill(p, n);
        uint64_t bits = 8 * (uint64_t)n;
        uint64_t first = next_random() % bits, last = first + next_random() % (bits - first);
        CHECK_EQ(cx_bitcount(p, first, last), slow_count(p, first, last));
        CHECK_EQ(cx_bitpos(p, first, last, 1), slow_pos(p, first, last, 1));
        CHECK_EQ(cx_bitpos(p, first, last, 0), slow_pos(p, first, last, 0));
        CHECK_EQ(cx_bitcount(p, 0, bits - 1), slow_count(p, 0, bits - 1));
        CHECK_EQ(cx_bitpos(p, first, first, 1), (int64_t)(bit_at(p, first) ? (int64_t)first : -1));
        free(p);
    }
}

static void test_bitpos_past_long_runs(void) {
    size_t n = 4096 + 3;
    uint8_t *p = malloc(n);
    memset(p, 0, n);
    CHECK_EQ(cx_bitpos(p, 0, 8 * n - 1, 1), -1);
    CHECK_EQ(cx_bitpos(p, 5, 8 * n - 1, 0), 5);
    p[n - 1] = 0x01;
    CHECK_EQ(cx_bitpos(p, 0, 8 * n - 1, 1), (int64_t)(8 * n - 1));
    CHECK_EQ(cx_bitpos(p, 0, 8 * n - 2, 1), -1);
    CHECK_EQ(cx_bitcount(p, 0, 8 * n - 1), 1);
    memset(p, 0xff, n);
    CHECK_EQ(cx_bitpos(p, 3, 8 * n - 1, 0), -1);
    p[2000] = 0xef;
    CHECK_EQ(cx_bitpos(p, 3, 8 * n - 1, 0), 2000 * 8 + 3);
    CHECK_EQ(cx_bitcount(p, 0, 8 * n - 1), 8 * n - 1);
    free(p);
}

static void slow_bitop(int op, uint8_t **src, const size_t *len, size_t n, uint8_t *dst, size_t dst_len) {
    for (size_t i = 0; i < dst_len; i++) {
        uint8_t out = i < len[0] ? src[0][i] : 0;
        if (op == CX_BITOP_NOT)
            out = (uint8_t)~out;
        for (size_t k = 1; k < n; k++) {
            uint8_t byte = i < len[k] ? src[k][i] : 0;
            out = op == CX_BITOP_AND ? (out & byte) : op == CX_BITOP_OR ? (out | byte) : (out ^ byte);
        }
        dst[i] = out;
    }
}

static void test_bitop(void) {
    for (int round = 0; round < 2000; round++) {
        int op = (int)(next_random() % 4);
        size_t n = op == CX_BITOP_NOT ? 1 : 1 + (size_t)(next_random() % 4), dst_len = 0;
        uint8_t *src[4];
        size_t len[4];
        for (size_t k = 0; k < n; k++) {
            len[k] = next_random() % 5 == 0 ? 0 : (size_t)(next_random() % 90);
            src[k] = len[k] ? malloc(len[k]) : NULL;
            if (len[k])
                fill(src[k], len[k]);
            if (len[k] > dst_len)
                dst_len = len[k];
        }
        if (dst_len) {
            uint8_t *got = malloc(dst_len), *want = malloc(dst_len);
            cx_bitop(op, (const uint8_t *const *)src, len, n, got, dst_len);
            slow_bitop(op, src, len, n, want, dst_len);
            CHECK(memcmp(got, want, dst_len) == 0);
            free(got);
            free(want);
        }
        for (size_t k = 0; k < n; k++)
            free(src[k]);
    }
}

/* the LCS length by the textbook recursion's table, kept apart from cx_lcs_table's */
static uint32_t slow_lcs_length(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen) {
    uint32_t *t = calloc(((size_t)alen + 1) * ((size_t)blen + 1), sizeof *t);
    for (uint32_t i = 1; i <= alen; i++)
        for (uint32_t j = 1; j <= blen; j++) {
            uint32_t up = t[(i - 1) * (blen + 1) + j], left = t[i * (blen + 1) + j - 1];
            t[i * (blen + 1) + j] = a[i - 1] == b[j - 1] ? t[(i - 1) * (blen + 1) + j - 1] + 1
                                    : up > left ? up : left;
        }
    uint32_t length = t[(size_t)alen * (blen + 1) + blen];
    free(t);
    return length;
}

/* whether sub is a subsequence of s */
static int is_subsequence(const uint8_t *sub, uint32_t n, const uint8_t *s, uint32_t m) {
    uint32_t i = 0;
    for (uint32_t j = 0; j < m && i < n; j++)
        if (s[j] == sub[i])
            i++;
    return i == n;
}

static void test_lcs(void) {
    static const uint8_t ohmytext[] = "ohmytext", mynewtext[] = "mynewtext";
    uint32_t table[9 * 10], ranges[4 * 8];
    uint8_t out[8];
    cx_lcs_table(ohmytext, 8, mynewtext, 9, table);
    CHECK_EQ(table[8 * 10 + 9], 6);
    /* Redis: "mytext", matches [4-7 / 5-8] and [2-3 / 0-1] */
    CHECK_EQ(cx_lcs_walk(ohmytext, 8, mynewtext, 9, table, 0, out, ranges), 2);
    CHECK(memcmp(out, "mytext", 6) == 0);
    CHECK_EQ(ranges[0], 4);
    CHECK_EQ(ranges[1], 7);
    CHECK_EQ(ranges[2], 5);
    CHECK_EQ(ranges[3], 8);
    CHECK_EQ(ranges[4], 2);
    CHECK_EQ(ranges[5], 3);
    CHECK_EQ(ranges[6], 0);
    CHECK_EQ(ranges[7], 1);
    CHECK_EQ(cx_lcs_walk(ohmytext, 8, mynewtext, 9, table, 4, out, ranges), 1);
    CHECK_EQ(cx_lcs_walk(ohmytext, 8, mynewtext, 9, table, 0, out, NULL), 0);

    for (int round = 0; round < 500; round++) {
        uint32_t alen = (uint32_t)(next_random() % 40), blen = (uint32_t)(next_random() % 40);
        uint8_t *a = malloc(alen + 1), *b = malloc(blen + 1);
        for (uint32_t i = 0; i < alen; i++)
            a[i] = (uint8_t)('a' + next_random() % 3);
        for (uint32_t j = 0; j < blen; j++)
            b[j] = (uint8_t)('a' + next_random() % 3);
        uint32_t *t = malloc(((size_t)alen + 1) * ((size_t)blen + 1) * sizeof *t);
        cx_lcs_table(a, alen, b, blen, t);
        uint32_t length = t[(size_t)alen * (blen + 1) + blen];
        CHECK_EQ(length, slow_lcs_length(a, alen, b, blen));
        uint8_t *sub = malloc(length + 1);
        uint32_t *found = malloc(4 * ((size_t)length + 1) * sizeof *found);
        size_t count = cx_lcs_walk(a, alen, b, blen, t, 0, sub, found), covered = 0;
        CHECK(is_subsequence(sub, length, a, alen) && is_subsequence(sub, length, b, blen));
        for (size_t k = 0; k < count; k++) {
            uint32_t *r = found + 4 * k;
            /* each range is the same bytes in both strings, and they come from the end backwards */
            CHECK(r[1] - r[0] == r[3] - r[2] && r[1] < alen && r[3] < blen);
            CHECK(memcmp(a + r[0], b + r[2], r[1] - r[0] + 1) == 0);
            if (k)
                CHECK(r[1] < found[4 * (k - 1)] && r[3] < found[4 * (k - 1) + 2]);
            covered += r[1] - r[0] + 1;
        }
        CHECK_EQ(covered, length);
        free(found);
        free(sub);
        free(t);
        free(a);
        free(b);
    }
}

int main(void) {
    RUN(test_bitcount_and_bitpos);
    RUN(test_bitpos_past_long_runs);
    RUN(test_bitop);
    RUN(test_lcs);
    return check_exit_code();
}
