/* What every part of the arena uses: how its entry points are declared, the settings
   of the process running it (cx_cfg), ordered stores, the clock, the random numbers
   and the crash points of the recovery tests. */
#ifndef CX_COMMON_H
#define CX_COMMON_H

#include <signal.h>
#include <stdint.h>
#include <time.h>

/* The entry points: the functions ext/cxlredis/_store.pyx calls. Like every function of the
   arena they are static, in one translation unit with the Cython layer, so the compiler
   inlines across the two; "unused" because a unit that calls only some of them (a C
   test) is not dead code. */
#define CX_API static __attribute__((unused))

/* The process's settings an allocation is made under (kept by the Arena object, not in
   the mapping: another process may run the same arena with other settings). */
typedef struct {
    int policy;                       /* the arena's; tenants without their own follow it */
    int samples;
    int no_evict;                     /* allocate only if no eviction is needed */
    uint64_t maxmemory;
    uint64_t *rng;
    int backing_fd;                   /* the arena file, whose pages cx_back_range allocates */
    uint64_t backing_off;             /* where the arena starts in it (arena-offset) */
    uint64_t grain;                   /* its page size; 0 = nothing to allocate (a device) */
    int *backing_errno;               /* set when the backing could not take a block */
    int beyond_limits;                /* RENAME/MOVE by copy: the value only changes blocks (the
                                         source is freed next), so any free block may take it */
    struct cx_warmer *warmer;         /* faults in fresh pages ahead of the allocator, or NULL */
} cx_cfg;

/* a store that is seen (by another process mapping the arena, or by a rebuild after a
   crash) only after every store before it */
static inline void cx_store(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
/* A reader through the mapping calls this between using a value's bytes and
   re-reading the entry header (see acquire_fence in ext/cxlredis/_store.pyx). */
static inline void cx_acquire_fence(void) { __atomic_thread_fence(__ATOMIC_ACQUIRE); }

/* Tests kill the process at numbered points of a multi-store update
   (CXLREDIS_TEST_CRASH_POINT) to check that a rebuild recovers from each. */
static int cx_crash_at = 0;
#define CX_CRASH_POINT(n) do { if (__builtin_expect(cx_crash_at == (n), 0)) raise(SIGKILL); } while (0)

/* While clients are paused (CLIENT PAUSE) the dataset holds still, as Redis keeps it
   then: a lookup reports an expired entry missing but leaves it where it is, for the
   first lookup after the pause (or active expiry) to drop. Process-wide, every arena. */
static int cx_expiry_held = 0;

/* The wall clock of the command running, in ms, as Redis holds its time still for one
   command: what cx_now_ms returns while it is set (the fast path sets it per command
   from the clock read it makes anyway). 0: read the clock. */
static int64_t cx_command_ms = 0;

static inline int64_t cx_now_ms(void) {
    if (cx_command_ms) return cx_command_ms;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* xorshift64*: the draws of random eviction and sampling and of the LFU counter */
static inline uint64_t cx_rand(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

#endif
