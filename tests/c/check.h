/* The C tests' harness: CHECK and CHECK_EQ report a failed expectation (where, what,
   and for CHECK_EQ both values) and let the test go on; RUN runs one test function;
   check_exit_code() is main's return value, nonzero when any expectation failed.
   tests/c/test_c_units.py builds and runs each test program. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

static const char *check_current = "";
static int check_failed, check_passed;

static int check_report(int ok, const char *what, const char *file, int line) {
    if (ok) {
        check_passed++;
        return 1;
    }
    check_failed++;
    fprintf(stderr, "%s:%d: %s: CHECK failed: %s\n", file, line, check_current, what);
    return 0;
}

#define CHECK(cond) check_report((cond) != 0, #cond, __FILE__, __LINE__)

/* both sides compared as unsigned 64-bit integers (a negative one wraps, consistently) */
#define CHECK_EQ(a, b) do {                                                                   \
        unsigned long long check_a_ = (unsigned long long)(a), check_b_ = (unsigned long long)(b); \
        if (!check_report(check_a_ == check_b_, #a " == " #b, __FILE__, __LINE__))           \
            fprintf(stderr, "    left %llu (0x%llx), right %llu (0x%llx)\n",                \
                    check_a_, check_a_, check_b_, check_b_);                                  \
    } while (0)

#define RUN(test, ...) do {                                                                   \
        int check_before_ = check_failed;                                                     \
        check_current = #test;                                                                \
        test(__VA_ARGS__);                                                                    \
        printf("%s %s\n", check_failed == check_before_ ? "ok  " : "FAIL", #test);            \
    } while (0)

static int check_exit_code(void) {
    printf("%d checks passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
