/* Bit counting, finding and combining for the bitmap commands (see bitops.h). The
   inner loops go a 64-bit word at a time (loaded with memcpy: the bytes of a value
   need not be aligned); BITCOUNT uses the CPU's popcount instruction where it has one. */
#include "bitops.h"

#include <string.h>

/* held to -Wall -Wextra -Werror in the extension build too (see arena/arena.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

static inline uint64_t load64(const uint8_t *p) {
    uint64_t word;
    memcpy(&word, p, sizeof word);
    return word;
}

static inline unsigned popcount8(uint8_t byte) {
    unsigned x = byte;
    x = x - ((x >> 1) & 0x55u);
    x = (x & 0x33u) + ((x >> 2) & 0x33u);
    return (x + (x >> 4)) & 0x0fu;
}

/* the index (0 = most significant) of the highest set bit of a nonzero byte */
static inline unsigned first_set8(uint8_t byte) {
    return (unsigned)__builtin_clz((unsigned)byte) - (unsigned)(8 * (sizeof(unsigned) - 1));
}

static uint64_t count_words_swar(const uint8_t *p, size_t words) {
    uint64_t total = 0;
    for (size_t i = 0; i < words; i++) {
        uint64_t x = load64(p + 8 * i);
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
        total += (x * 0x0101010101010101ULL) >> 56;
    }
    return total;
}

#if defined(__GNUC__) && defined(__x86_64__)
__attribute__((target("popcnt")))
static uint64_t count_words_popcnt(const uint8_t *p, size_t words) {
    /* four independent sums, so the popcounts do not wait on each other */
    uint64_t sum[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= words; i += 4) {
        sum[0] += (uint64_t)__builtin_popcountll(load64(p + 8 * i));
        sum[1] += (uint64_t)__builtin_popcountll(load64(p + 8 * i + 8));
        sum[2] += (uint64_t)__builtin_popcountll(load64(p + 8 * i + 16));
        sum[3] += (uint64_t)__builtin_popcountll(load64(p + 8 * i + 24));
    }
    for (; i < words; i++)
        sum[0] += (uint64_t)__builtin_popcountll(load64(p + 8 * i));
    return sum[0] + sum[1] + sum[2] + sum[3];
}
#endif

static uint64_t count_words(const uint8_t *p, size_t words) {
#if defined(__GNUC__) && defined(__x86_64__)
    static int has_popcnt = -1;
    if (has_popcnt < 0)
        has_popcnt = __builtin_cpu_supports("popcnt") ? 1 : 0;
    if (has_popcnt)
        return count_words_popcnt(p, words);
#endif
    return count_words_swar(p, words);
}

/* the set bits of n whole bytes */
static uint64_t count_bytes(const uint8_t *p, size_t n) {
    size_t words = n / 8;
    uint64_t total = count_words(p, words);
    for (size_t i = words * 8; i < n; i++)
        total += popcount8(p[i]);
    return total;
}

/* the bits of a byte at and after bit `at` (0..7), and at and before bit `at` */
static inline uint8_t from_bit(uint64_t at) { return (uint8_t)(0xffu >> (at & 7)); }
static inline uint8_t to_bit(uint64_t at) { return (uint8_t)(0xffu << (7 - (at & 7))); }

uint64_t cx_bitcount(const uint8_t *p, uint64_t first, uint64_t last) {
    uint64_t head = first >> 3, tail = last >> 3;
    if (head == tail)
        return popcount8(p[head] & from_bit(first) & to_bit(last));
    return popcount8(p[head] & from_bit(first)) + popcount8(p[tail] & to_bit(last))
           + count_bytes(p + head + 1, (size_t)(tail - head - 1));
}

int64_t cx_bitpos(const uint8_t *p, uint64_t first, uint64_t last, int bit) {
    /* looking for a 0 is looking for a 1 in the inverted bytes */
    const uint8_t flip = bit ? 0x00 : 0xff;
    const uint64_t skip = bit ? 0 : UINT64_MAX;     /* a word with nothing to find */
    uint64_t head = first >> 3, tail = last >> 3, i;
    uint8_t found;
    if (head == tail) {
        found = (uint8_t)((p[head] ^ flip) & from_bit(first) & to_bit(last));
        return found ? (int64_t)(head * 8 + first_set8(found)) : -1;
    }
    found = (uint8_t)((p[head] ^ flip) & from_bit(first));
    if (found)
        return (int64_t)(head * 8 + first_set8(found));
    i = head + 1;
    while (i + 8 <= tail && load64(p + i) == skip)
        i += 8;
    for (; i < tail; i++) {
        found = (uint8_t)(p[i] ^ flip);
        if (found)
            return (int64_t)(i * 8 + first_set8(found));
    }
    found = (uint8_t)((p[tail] ^ flip) & to_bit(last));
    return found ? (int64_t)(tail * 8 + first_set8(found)) : -1;
}

void cx_bitop(int op, const uint8_t *const *src, const size_t *src_len, size_t n,
              uint8_t *restrict dst, size_t dst_len) {
    size_t first = src_len[0] < dst_len ? src_len[0] : dst_len;
    if (op == CX_BITOP_NOT) {
        for (size_t i = 0; i < first; i++)
            dst[i] = (uint8_t)~src[0][i];
        memset(dst + first, 0xff, dst_len - first);
        return;
    }
    if (first)
        memcpy(dst, src[0], first);
    memset(dst + first, 0, dst_len - first);
    for (size_t k = 1; k < n; k++) {
        const uint8_t *s = src[k];
        size_t len = src_len[k] < dst_len ? src_len[k] : dst_len;
        switch (op) {
        case CX_BITOP_AND:
            for (size_t i = 0; i < len; i++)
                dst[i] &= s[i];
            memset(dst + len, 0, dst_len - len);    /* past its end a source is zeros */
            break;
        case CX_BITOP_OR:
            for (size_t i = 0; i < len; i++)
                dst[i] |= s[i];
            break;
        case CX_BITOP_XOR:
            for (size_t i = 0; i < len; i++)
                dst[i] ^= s[i];
            break;
        default:
            break;
        }
    }
}

#pragma GCC diagnostic pop
