/* A decimal 64-bit integer read as Redis's string2ll reads one (cxlredis._resp's lengths,
   the fast path's INCRBY deltas and the counters it increments), and written back (the
   counters: snprintf's stream set-up cost more than the rest of an INCR's store work). */
#ifndef CXLREDIS_STRING2LL_H
#define CXLREDIS_STRING2LL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* 1 and *out when s[0..n) is an integer: an optional '-', no '+', no leading zeros or
   blanks, fewer than 21 characters, within a signed 64-bit integer; else 0. */
static inline int cx_string2ll(const char *s, size_t n, long long *out) {
    size_t i = 0;
    uint64_t v = 0;
    int negative;
    if (n == 0 || n >= 21)
        return 0;
    if (n == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    negative = s[0] == '-';
    if (negative && ++i == n)
        return 0;
    if (s[i] < '1' || s[i] > '9')
        return 0;
    for (; i < n; i++) {
        unsigned digit = (unsigned char)s[i] - '0';
        if (digit > 9 || v > UINT64_MAX / 10 || v * 10 > UINT64_MAX - digit)
            return 0;
        v = v * 10 + digit;
    }
    if (negative) {
        if (v > (uint64_t)LLONG_MAX + 1)
            return 0;
        *out = -(long long)(v - 1) - 1;     /* v >= 1: a '-' is followed by 1-9 */
    } else {
        if (v > (uint64_t)LLONG_MAX)
            return 0;
        *out = (long long)v;
    }
    return 1;
}

/* v in decimal at out (room for 20 characters); returns the length. */
static inline size_t cx_ll2string(char *out, long long v) {
    char digits[20];
    size_t n = 0, len = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        out[len++] = '-';
    while (n)
        out[len++] = digits[--n];
    return len;
}

#endif
