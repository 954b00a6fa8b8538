/* The warmer: a thread of the server's that faults in the pages just past where the
   allocator last took fresh memory, so the first writes into a new arena find their
   pages mapped instead of taking a fault per page (on a tmpfs of small pages the faults,
   not the copy, are most of a first write's cost; on huge pages, clearing each one). It
   runs at idle priority (warm.c says why). It changes no byte:
   MADV_POPULATE_WRITE maps a page as a store would without storing, and reports a page
   the backing cannot supply as an error where a store would raise SIGBUS. The allocator
   still backs every block it hands out (cx_back_range); the warmer only gets there first.
   Its pages lie in free blocks the heap calls HOLLOW: cx_release_free gives them back
   (cx_warm_release) once no hint has come for a while. */
#ifndef CX_WARM_H
#define CX_WARM_H

#include <pthread.h>
#include <stdint.h>

#include "common.h"

typedef struct cx_warmer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    char *base;
    uint64_t size;            /* the arena's: nothing past it is touched */
    uint64_t window;          /* bytes kept warm past the last hint */
    uint64_t hint, limit;     /* the end of the fresh memory the allocator last backed, and
                                 of the free block it lies in: the warmer stays inside it */
    uint64_t hints, served;   /* hints given, and the last one the thread has warmed for */
    int64_t hinted_ms;        /* when the last hint came */
    uint64_t from, to;        /* what the thread has warmed since the last jump of the hint */
    uint64_t warmed;          /* bytes faulted in since start (read without the lock) */
    int stop;
} cx_warmer;

/* Start a warmer for the mapping [base, base + size), keeping `window` bytes warm past
   each hint. NULL if the thread cannot start or the kernel cannot populate. */
CX_API cx_warmer *cx_warmer_start(char *base, uint64_t size, uint64_t window);
/* Stop the thread and free the warmer (before the mapping goes). */
CX_API void cx_warmer_stop(cx_warmer *w);
/* Bytes it has faulted in since start (0 without a warmer). */
CX_API uint64_t cx_warmer_warmed(cx_warmer *w);
/* The allocator backed fresh memory up to `end`, which the free block ending at `limit`
   goes on from: warm what follows, up to `limit`. */
CX_API void cx_warm_hint(cx_warmer *w, uint64_t end, uint64_t limit, int64_t now_ms);
/* Of the free block interior [lo, hi) (page aligned, HOLLOW), the part the warmer has
   faulted in, once it has been idle for min_age ms: *from and the length (0: nothing to
   give back). The warmer forgets what it warmed. */
static uint64_t cx_warm_release(cx_warmer *w, uint64_t lo, uint64_t hi, int64_t now_ms,
                                uint64_t min_age, uint64_t *from);

#endif
