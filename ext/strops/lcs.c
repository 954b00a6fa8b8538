/* LCS as Redis 7.0's lcsCommand computes it (see lcs.h). */
#include "lcs.h"

/* held to -Wall -Wextra -Werror in the extension build too (see arena/arena.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

void cx_lcs_table(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
                  uint32_t *table) {
    size_t width = (size_t)blen + 1;
    for (size_t j = 0; j < width; j++)
        table[j] = 0;
    for (size_t i = 1; i <= alen; i++) {
        uint32_t *row = table + i * width;
        const uint32_t *above = row - width;
        uint8_t byte = a[i - 1];
        row[0] = 0;
        for (size_t j = 1; j < width; j++) {
            if (byte == b[j - 1])
                row[j] = above[j - 1] + 1;
            else
                row[j] = above[j] > row[j - 1] ? above[j] : row[j - 1];
        }
    }
}

size_t cx_lcs_walk(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
                   const uint32_t *table, uint64_t minlen, uint8_t *out, uint32_t *ranges) {
    size_t width = (size_t)blen + 1, count = 0;
    uint32_t i = alen, j = blen, left = table[(size_t)alen * width + blen];
    /* the run being followed backwards; a_start == alen: none */
    uint32_t a_start = alen, a_end = 0, b_start = 0, b_end = 0;
    while (i > 0 && j > 0) {
        int close = 0;
        if (a[i - 1] == b[j - 1]) {
            out[--left] = a[i - 1];
            if (a_start == alen) {
                a_start = a_end = i - 1;
                b_start = b_end = j - 1;
            } else if (a_start == i && b_start == j) {
                a_start--;              /* the run goes on, one byte earlier */
                b_start--;
            } else {
                close = 1;
            }
            if (a_start == 0 || b_start == 0)
                close = 1;              /* the walk ends at this byte */
            i--;
            j--;
        } else {
            if (table[(size_t)(i - 1) * width + j] > table[(size_t)i * width + j - 1])
                i--;
            else
                j--;
            if (a_start != alen)
                close = 1;
        }
        if (close) {
            uint64_t length = (uint64_t)(a_end - a_start) + 1;
            if (ranges && (minlen == 0 || length >= minlen)) {
                uint32_t *range = ranges + 4 * count++;
                range[0] = a_start;
                range[1] = a_end;
                range[2] = b_start;
                range[3] = b_end;
            }
            a_start = alen;
        }
    }
    return count;
}

#pragma GCC diagnostic pop
