/* The warmer (see warm.h). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "warm.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
/* one madvise per step: the thread looks at new hints between steps */
#define CX_WARM_STEP (2ull << 20)
#define CX_WARM_PAGE 4096ull

static void *cx_warm_run(void *arg) {
    cx_warmer *w = arg;
    /* Idle priority: the warmer only moves a fault's work off the writer's path, which
       pays when a core has nothing else to run. Competing with the server or its
       clients for a core costs more than the fault it saves (measured on 2 cores, a
       first fill of 2 MiB values on hugetlbfs: 0.98-1.05 of warm with no warmer,
       0.82-0.89 with one at normal priority, 0.92-0.98 with this one, which also takes
       32 MiB values from 0.76-0.78 to 0.91-0.96). Starved, it warms nothing and the
       writes fault their pages themselves; refused idle priority, it runs at normal. */
    struct sched_param idle = {0};
    pthread_setname_np(pthread_self(), "cxlredis-warm");
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        uint64_t goal = w->hint + w->window < w->limit ? w->hint + w->window : w->limit;
        goal &= ~(CX_WARM_PAGE - 1);
        if (w->to >= goal) {
            w->served = w->hints;
            pthread_cond_wait(&w->wake, &w->lock);
            continue;
        }
        uint64_t at = w->to, len = goal - at < CX_WARM_STEP ? goal - at : CX_WARM_STEP;
        pthread_mutex_unlock(&w->lock);
        /* EFAULT: the backing cannot supply the pages; the allocator will say so itself */
        int ok = madvise(w->base + at, len, MADV_POPULATE_WRITE) == 0;
        pthread_mutex_lock(&w->lock);
        if (w->to == at) {          /* the hint did not jump meanwhile */
            w->to = ok ? at + len : goal;
            if (ok) __atomic_store_n(&w->warmed, w->warmed + len, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

CX_API cx_warmer *cx_warmer_start(char *base, uint64_t size, uint64_t window) {
    /* a kernel without MADV_POPULATE_WRITE (before 5.14) says EINVAL even to an empty range */
    if (madvise(base, 0, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) return NULL;
    cx_warmer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->base = base;
    w->size = size;
    w->window = window;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    if (pthread_create(&w->thread, NULL, cx_warm_run, w) != 0) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
    }
    return w;
}

CX_API void cx_warmer_stop(cx_warmer *w) {
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

CX_API uint64_t cx_warmer_warmed(cx_warmer *w) {
    return w ? __atomic_load_n(&w->warmed, __ATOMIC_RELAXED) : 0;
}

CX_API void cx_warm_hint(cx_warmer *w, uint64_t end, uint64_t limit, int64_t now_ms) {
    if (!w) return;
    /* from the first whole page after end: the page holding end is the allocator's */
    uint64_t start = (end + CX_WARM_PAGE - 1) & ~(CX_WARM_PAGE - 1);
    /* The server never waits for the thread: at idle priority it can be preempted
       holding the lock for as long as both cores have other work. A hint it misses
       only leaves it warming toward the one before; the next allocation hints again. */
    if (pthread_mutex_trylock(&w->lock) != 0) return;
    if (start < w->from || start > w->to || limit != w->limit) w->from = w->to = start;
    w->hint = start;
    w->limit = limit < w->size ? limit : w->size;
    w->hints++;
    w->hinted_ms = now_ms;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

static uint64_t cx_warm_release(cx_warmer *w, uint64_t lo, uint64_t hi, int64_t now_ms,
                                uint64_t min_age, uint64_t *from) {
    uint64_t len = 0;
    if (!w || pthread_mutex_trylock(&w->lock) != 0) return 0;     /* the next tick will do */
    if (w->served == w->hints && (uint64_t)(now_ms - w->hinted_ms) >= min_age) {
        /* below the hint is the allocator's (handed out, or backed ahead and so marked) */
        uint64_t a = w->from > lo ? w->from : lo, b = w->to < hi ? w->to : hi;
        if (a < w->hint) a = w->hint;
        if (b > a) {
            *from = a;
            len = b - a;
        }
        /* forgotten: nothing is warm, nor warmed, until the next hint */
        w->from = w->to = w->limit = w->hint;
    }
    pthread_mutex_unlock(&w->lock);
    return len;
}
