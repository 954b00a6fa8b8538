/* Glob matching with Redis's rules (see globmatch.h). Where Redis recurses at each
   '*', this loop backtracks to the last '*' only: a later '*' can absorb whatever an
   earlier one would, so the answers are the same. */
#include "globmatch.h"

/* held to -Wall -Wextra -Werror in the extension build too (see arena/arena.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

static inline int cx_lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* does the single-character pattern token at p[i] match ch? *next = index after it */
static int cx_glob_token(const uint8_t *p, size_t n, size_t i, uint8_t ch, int nocase, size_t *next) {
    if (p[i] == '?') { *next = i + 1; return 1; }
    if (p[i] == '[') {
        int neg = 0, hit = 0;
        i++;
        if (i < n && p[i] == '^') { neg = 1; i++; }
        while (i < n) {
            if (p[i] == '\\' && n - i >= 2) {
                i++;
                if (p[i] == ch) hit = 1;
            } else if (p[i] == ']') {
                break;
            } else if (n - i >= 3 && p[i + 1] == '-') {
                /* Redis compares plain (signed) chars here */
                int lo = (signed char)p[i], hi = (signed char)p[i + 2], c = (signed char)ch;
                if (lo > hi) { int t = lo; lo = hi; hi = t; }
                if (nocase) { lo = cx_lower(lo); hi = cx_lower(hi); c = cx_lower(c); }
                if (c >= lo && c <= hi) hit = 1;
                i += 2;
            } else if (nocase ? cx_lower(p[i]) == cx_lower(ch) : p[i] == ch) {
                hit = 1;
            }
            i++;
        }
        *next = i < n ? i + 1 : n;   /* an unterminated class runs to the end */
        return neg ? !hit : hit;
    }
    if (p[i] == '\\' && n - i >= 2) i++;
    *next = i + 1;
    return nocase ? cx_lower(p[i]) == cx_lower(ch) : p[i] == ch;
}

int cx_glob(const uint8_t *p, size_t pn, const uint8_t *s, size_t sn, int nocase) {
    size_t pi = 0, si = 0, star_p = (size_t)-1, star_s = 0, next;
    if (sn == 0) return pn == 0;    /* Redis never matches an empty string, not even with '*' */
    while (si < sn) {
        if (pi < pn && p[pi] == '*') {
            while (pi < pn && p[pi] == '*') pi++;
            if (pi == pn) return 1;
            star_p = pi;
            star_s = si;
            continue;
        }
        if (pi < pn && cx_glob_token(p, pn, pi, s[si], nocase, &next)) {
            pi = next;
            si++;
            continue;
        }
        if (star_p == (size_t)-1) return 0;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < pn && p[pi] == '*') pi++;
    return pi == pn;
}

#pragma GCC diagnostic pop
