/* cx_glob (ext/globmatch.c) against Redis 7.0's stringmatchlen. The case-sensitive
   answers below were each checked against redis-server 7.0.15 (KEYS pattern over a
   single key); the nocase ones follow stringmatchlen's code, which only CONFIG GET
   reaches in Redis. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "globmatch.h"

typedef struct {
    const char *pattern;
    size_t pattern_len;      /* 0: strlen */
    const char *string;
    size_t string_len;       /* 0: strlen */
    int nocase, matches;
} glob_case;

static const glob_case CASES[] = {
    /* empty strings: an empty string matches only the empty pattern, not even '*' */
    {"", 0, "", 0, 0, 1},
    {"", 0, "a", 0, 0, 0},
    {"a", 0, "", 0, 0, 0},
    {"*", 0, "", 0, 0, 0},
    /* '*' */
    {"*", 0, "anything", 0, 0, 1},
    {"**", 0, "x", 0, 0, 1},
    {"a*", 0, "a", 0, 0, 1},
    {"*a", 0, "a", 0, 0, 1},
    {"a**b", 0, "ab", 0, 0, 1},
    {"h*llo", 0, "hllo", 0, 0, 1},
    {"h*llo", 0, "heeeello", 0, 0, 1},
    {"h*llo", 0, "hellox", 0, 0, 0},
    {"*.txt", 0, "a.b.txt", 0, 0, 1},
    {"*.txt", 0, "a.txt.gz", 0, 0, 0},
    /* '?' */
    {"h?llo", 0, "hello", 0, 0, 1},
    {"h?llo", 0, "hllo", 0, 0, 0},
    {"h?llo", 0, "heello", 0, 0, 0},
    /* classes, negated classes, ranges (a reversed range is swapped) */
    {"h[ae]llo", 0, "hello", 0, 0, 1},
    {"h[ae]llo", 0, "hallo", 0, 0, 1},
    {"h[ae]llo", 0, "hillo", 0, 0, 0},
    {"h[^e]llo", 0, "hallo", 0, 0, 1},
    {"h[^e]llo", 0, "hello", 0, 0, 0},
    {"h[a-b]llo", 0, "hbllo", 0, 0, 1},
    {"h[a-b]llo", 0, "hcllo", 0, 0, 0},
    {"[c-a]", 0, "b", 0, 0, 1},
    {"[]]", 0, "]", 0, 0, 0},              /* "[]" matches nothing; "]" is left over */
    /* range bounds compare as signed chars, as Redis's plain chars do on x86 */
    {"[\x01-\xff]", 0, "\x80", 1, 0, 0},
    {"[\x01-\xff]", 5, "\0", 1, 0, 1},
    /* backslash escapes, in and out of classes; a trailing backslash is itself */
    {"h\\*llo", 0, "h*llo", 0, 0, 1},
    {"h\\*llo", 0, "hello", 0, 0, 0},
    {"\\?", 0, "?", 0, 0, 1},
    {"\\?", 0, "a", 0, 0, 0},
    {"[\\]]", 0, "]", 0, 0, 1},
    {"a\\", 0, "a\\", 0, 0, 1},
    {"[a\\", 0, "\\", 0, 0, 1},
    /* an unterminated class runs to the end of the pattern */
    {"[abc", 0, "a", 0, 0, 1},
    {"[abc", 0, "d", 0, 0, 0},
    {"[abc", 0, "ab", 0, 0, 0},
    {"a[", 0, "a", 0, 0, 0},
    {"[", 0, "[", 0, 0, 0},
    {"[^", 0, "a", 0, 0, 1},
    {"[a-]", 0, "_", 0, 0, 1},             /* the range a-] (swapped: ]..a), unterminated */
    {"[a-]", 0, "-", 0, 0, 0},
    /* Redis's regression test for nested '*' (it must also be quick) */
    {"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", 0,
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0, 0, 0},
    {"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", 0,
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", 0, 0, 1},
    /* nocase folds ASCII letters, in literals, classes and ranges */
    {"HELLO", 0, "hello", 0, 0, 0},
    {"HELLO", 0, "hello", 0, 1, 1},
    {"HE[K-M]LO", 0, "hello", 0, 1, 1},
    {"h[A-Z]llo", 0, "hello", 0, 1, 1},
    {"h[A-Z]llo", 0, "hello", 0, 0, 0},
    {"[^A]", 0, "a", 0, 1, 0},
    {"\\A", 0, "a", 0, 1, 1},
    /* ...except an escaped character inside a class, which Redis compares exactly */
    {"[\\A]", 0, "a", 0, 1, 0},
    {"[\\A]", 0, "A", 0, 1, 1},
};

static void test_redis_cases(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        const glob_case *c = &CASES[i];
        size_t pn = c->pattern_len ? c->pattern_len : strlen(c->pattern);
        size_t sn = c->string_len ? c->string_len : strlen(c->string);
        int got = cx_glob((const uint8_t *)c->pattern, pn, (const uint8_t *)c->string, sn, c->nocase);
        if (!CHECK(got == c->matches))
            fprintf(stderr, "    pattern \"%s\" string \"%s\" nocase %d: got %d, Redis %d\n",
                    c->pattern, c->string, c->nocase, got, c->matches);
    }
}

/* The lengths bound the match: a NUL is an ordinary byte, and nothing past the
   given length is read (the heap copies have no terminator: ASan reports a read past). */
static uint8_t *copy(const char *s, size_t n) {
    uint8_t *p = malloc(n);
    memcpy(p, s, n);
    return p;
}

static void test_lengths_not_terminators(void) {
    uint8_t *key = copy("a\0b", 3), *pattern = copy("h*o", 3), *string = copy("hello", 5);
    CHECK(cx_glob((const uint8_t *)"a?b", 3, key, 3, 0));
    CHECK(!cx_glob((const uint8_t *)"a", 1, key, 3, 0));
    CHECK(cx_glob((const uint8_t *)"a*", 2, key, 1, 0));
    CHECK(cx_glob(pattern, 3, string, 5, 0));
    CHECK(!cx_glob(pattern, 3, string, 4, 0));
    CHECK(cx_glob(pattern, 2, string, 5, 0));
    free(key);
    free(pattern);
    free(string);
}

int main(void) {
    RUN(test_redis_cases);
    RUN(test_lengths_not_terminators);
    return check_exit_code();
}
