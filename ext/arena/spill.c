/* The disk tier's C part (see spill.h). */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hash.h"
#include "layout.h"
#include "spill.h"

static const uint8_t cx_spill_zeros[4096];
static pthread_t cx_spill_thread;
static pthread_mutex_t cx_spill_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cx_spill_work = PTHREAD_COND_INITIALIZER, cx_spill_done = PTHREAD_COND_INITIALIZER;

CX_API uint32_t cx_spill_head_sum(const cx_spill_head *head, const uint8_t *key) {
    cx_spill_head h = *head;
    h.dead = 0;
    h.head_sum = 0;
    uint64_t s = cx_value_sum((const uint8_t *)&h, sizeof h) ^ (cx_value_sum(key, head->key_len) * CX_K1);
    return (uint32_t)(s ^ (s >> 32));
}

/* a note, and its key padded to 8 bytes so the next note is aligned */
static int cx_spill_log_note(const cx_spill_note *note, const void *key) {
    size_t need = sizeof *note + CX_SPILL_PADDED(note->key_len);
    if (cx_spill.log_len + need > cx_spill.log_cap) {
        size_t cap = cx_spill.log_cap ? cx_spill.log_cap : 4096;
        while (cap < cx_spill.log_len + need) cap *= 2;
        uint8_t *grown = realloc(cx_spill.log, cap);
        if (!grown) return -1;
        cx_spill.log = grown;
        cx_spill.log_cap = cap;
    }
    memcpy(cx_spill.log + cx_spill.log_len, note, sizeof *note);
    if (note->key_len) memcpy(cx_spill.log + cx_spill.log_len + sizeof *note, key, note->key_len);
    cx_spill.log_len += need;
    return 0;
}

static inline void cx_spill_committed(const char *base, uint64_t h) {
    if (!cx_spill_maybe(base, h)) return;
    cx_spill_note note = {0, 0, 0, 0, 0, h, 0, 0, 0, 0, 0, CX_SPILL_STALE, {0}};
    if (cx_spill_log_note(&note, NULL)) cx_spill.stale_lost = 1;
}

static void cx_spill_evicted(char *base, uint64_t off) {
    cx_entry *e = CX_E(base, off);
    if (cx_spill.base != base || cx_spill.fd < 0 || (CX_SB(base)->tmeta[e->tenant].flags & CX_TENANT_NO_DISK))
        return;
    /* a collection's value is its trees: written flattened (coll.h), from a copy in any case */
    int coll = cx_is_coll(e->type);
    uint64_t value_len = coll ? cx_coll_flat_len(base, cx_coll_of(e)) : e->value_len;
    if (value_len > cx_spill.max_value || !cx_value_intact(e)
        || (e->expire_at != -1 && e->expire_at <= cx_now_ms())) {
        cx_spill.skipped++;
        return;
    }
    /* a record larger than a segment goes alone in one */
    if (cx_spill.pos && cx_spill_end(cx_spill.pos, e->key_len, value_len) > cx_spill.cap) {
        if (cx_spill.next_fd < 0) {
            cx_spill.skipped++;
            return;
        }
        cx_spill.fd = cx_spill.next_fd;
        cx_spill.next_fd = -1;
        cx_spill.segment++;
        cx_spill.pos = 0;
    }
    uint64_t pos = cx_spill.pos, value_pos = cx_spill_value_pos(pos, e->key_len, value_len);
    uint64_t pad = value_pos - pos - sizeof(cx_spill_head) - e->key_len, len = value_pos - pos + value_len;
    int queued = cx_spill_staged() + len <= cx_spill.staging_cap;
    cx_spill_job *job = NULL;
    const uint8_t *value = CX_VAL(e);
    if (queued || coll) {
        job = malloc(sizeof *job + len);
        if (!job) {
            cx_spill.skipped++;
            return;
        }
        *job = (cx_spill_job){NULL, cx_spill.fd, pos, len, cx_spill.seq + 1, 0};
        uint8_t *job_value = job->data + (value_pos - pos);
        if (coll) cx_coll_flatten(base, cx_coll_of(e), job_value);
        else memcpy(job_value, value, value_len);
        value = job_value;
    }
    cx_spill_head head = {CX_SPILL_MAGIC, cx_spill.seq + 1, CX_SB(base)->tmeta[e->tenant].incarnation,
                          value_len, e->expire_at, cx_value_sum(value, value_len), e->key_len,
                          e->tenant, e->db, (uint8_t)(e->type & CX_TYPE_MASK), 0, {0}, 0};
    head.head_sum = cx_spill_head_sum(&head, CX_KEY(e));
    cx_spill_note note = {pos, head.seq, head.incarnation, value_len, head.value_sum, e->hash, e->expire_at,
                          cx_spill.segment, e->key_len, e->tenant, e->db, head.type, {0}};
    if (job) {
        memcpy(job->data, &head, sizeof head);
        memcpy(job->data + sizeof head, CX_KEY(e), e->key_len);
        memset(job->data + sizeof head + e->key_len, 0, pad);
    }
    if (!queued) {
        /* the writer is that far behind: this one is written here, after the others */
        cx_spill_drain();
        struct iovec iov[4] = {
            {&head, sizeof head}, {CX_KEY(e), e->key_len}, {(void *)cx_spill_zeros, pad}, {(void *)value, value_len},
        };
        ssize_t n = pwritev(cx_spill.fd, iov, 4, (off_t)pos);
        free(job);
        job = NULL;
        if (n < 0 || (uint64_t)n != len) {
            /* the next record goes where this one failed, so a segment has no gap */
            __atomic_add_fetch(&cx_spill.errors, 1, __ATOMIC_RELAXED);
            cx_spill.last_errno = n < 0 ? errno : ENOSPC;
            return;
        }
    }
    if (cx_spill_log_note(&note, CX_KEY(e))) {
        free(job);
        cx_spill.skipped++;       /* not indexed, so never read: as good as dead */
        return;
    }
    if (job) {
        cx_spill_queue(job);
    } else {
        pthread_mutex_lock(&cx_spill_mu);
        cx_spill.written_seq = head.seq;
        pthread_mutex_unlock(&cx_spill_mu);
    }
    cx_spill.seq++;
    cx_spill.pos = cx_spill_end(pos, e->key_len, value_len);
    cx_spill.written++;
    cx_spill.written_bytes += value_len;
    cx_spill_mark(e->hash);
}

/* ---- the writer thread: the records' writes, in the order they were queued ---- */

CX_API uint64_t cx_spill_staged(void) {
    pthread_mutex_lock(&cx_spill_mu);
    uint64_t staged = cx_spill.staged;
    pthread_mutex_unlock(&cx_spill_mu);
    return staged;
}

static void cx_spill_queue(cx_spill_job *job) {
    pthread_mutex_lock(&cx_spill_mu);
    if (cx_spill.tail) cx_spill.tail->next = job;
    else cx_spill.head = job;
    cx_spill.tail = job;
    cx_spill.staged += job->len;
    pthread_cond_signal(&cx_spill_work);
    pthread_mutex_unlock(&cx_spill_mu);
}

static void *cx_spill_writer(void *unused) {
    (void)unused;
    pthread_mutex_lock(&cx_spill_mu);
    for (;;) {
        while (!cx_spill.head && !cx_spill.stopping) pthread_cond_wait(&cx_spill_work, &cx_spill_mu);
        cx_spill_job *job = cx_spill.head;
        if (!job) break;                    /* stopping, and nothing left */
        job->started = 1;
        pthread_mutex_unlock(&cx_spill_mu);
        uint64_t done = 0;
        while (done < job->len) {
            ssize_t n = pwrite(job->fd, job->data + done, job->len - done, (off_t)(job->pos + done));
            if (n <= 0) {
                if (n < 0 && errno == EINTR) continue;
                __atomic_add_fetch(&cx_spill.errors, 1, __ATOMIC_RELAXED);
                cx_spill.last_errno = n < 0 ? errno : ENOSPC;
                break;
            }
            done += (uint64_t)n;
        }
        pthread_mutex_lock(&cx_spill_mu);
        cx_spill.head = job->next;
        if (!cx_spill.head) cx_spill.tail = NULL;
        cx_spill.staged -= job->len;
        cx_spill.written_seq = job->seq;
        pthread_cond_broadcast(&cx_spill_done);
        free(job);
    }
    pthread_mutex_unlock(&cx_spill_mu);
    return NULL;
}

CX_API void cx_spill_wait(uint64_t seq) {
    pthread_mutex_lock(&cx_spill_mu);
    while (cx_spill.written_seq < seq && cx_spill.head) pthread_cond_wait(&cx_spill_done, &cx_spill_mu);
    pthread_mutex_unlock(&cx_spill_mu);
}

CX_API void cx_spill_drain(void) {
    pthread_mutex_lock(&cx_spill_mu);
    while (cx_spill.head) pthread_cond_wait(&cx_spill_done, &cx_spill_mu);
    pthread_mutex_unlock(&cx_spill_mu);
}

CX_API uint64_t cx_spill_written_seq(void) {
    pthread_mutex_lock(&cx_spill_mu);
    uint64_t seq = cx_spill.written_seq;
    pthread_mutex_unlock(&cx_spill_mu);
    return seq;
}

CX_API int cx_spill_kill(uint64_t seq, int fd, uint64_t pos) {
    pthread_mutex_lock(&cx_spill_mu);
    for (cx_spill_job *job = cx_spill.head; job; job = job->next) {
        if (job->seq == seq && !job->started) {
            job->data[offsetof(cx_spill_head, dead)] = 1;      /* written dead, then */
            pthread_mutex_unlock(&cx_spill_mu);
            return 0;
        }
    }
    /* written, or being written: the mark goes after it */
    while (cx_spill.written_seq < seq && cx_spill.head) pthread_cond_wait(&cx_spill_done, &cx_spill_mu);
    pthread_mutex_unlock(&cx_spill_mu);
    static const uint8_t dead = 1;
    return pwrite(fd, &dead, 1, (off_t)(pos + offsetof(cx_spill_head, dead))) == 1 ? 0 : errno;
}

CX_API int cx_spill_start(char *base, uint64_t cap, uint64_t seq, uint64_t max_value, uint64_t staging_cap) {
    if (!cx_spill.bits) {
        cx_spill.bits = calloc((1ull << CX_SPILL_BITS_LOG2) / 64, sizeof(uint64_t));
        if (!cx_spill.bits) return ENOMEM;
    }
    cx_spill.stopping = 0;
    int err = pthread_create(&cx_spill_thread, NULL, cx_spill_writer, NULL);
    if (err) return err;
    cx_spill.base = base;
    cx_spill.cap = cap;
    cx_spill.seq = cx_spill.written_seq = seq;
    cx_spill.max_value = max_value;
    cx_spill.staging_cap = staging_cap;
    return 0;
}

/* the tier off: the writer finishes what was queued and ends; nothing spills and no
   commit is noted (the fds are the server's to close) */
CX_API void cx_spill_stop(void) {
    if (cx_spill.base) {
        pthread_mutex_lock(&cx_spill_mu);
        cx_spill.stopping = 1;
        pthread_cond_signal(&cx_spill_work);
        pthread_mutex_unlock(&cx_spill_mu);
        pthread_join(cx_spill_thread, NULL);
    }
    cx_spill.base = NULL;
    cx_spill.fd = cx_spill.next_fd = -1;
    free(cx_spill.bits);
    cx_spill.bits = NULL;
    cx_spill.bits_set = 0;
    cx_spill_log_clear();
}

/* In a forked child (SCRIPT DEBUG YES): the writer thread stayed in the parent and the
   segments are the parent's, so nothing spills and no commit is noted here; the queue is
   forgotten, not freed (its jobs were the parent's), and the lock made anew (the
   parent's writer may have held it at the fork). */
CX_API void cx_spill_forget(void) {
    cx_spill.base = NULL;
    cx_spill.fd = cx_spill.next_fd = -1;
    cx_spill.head = cx_spill.tail = NULL;
    cx_spill.staged = 0;
    pthread_mutex_init(&cx_spill_mu, NULL);
    pthread_cond_init(&cx_spill_work, NULL);
    pthread_cond_init(&cx_spill_done, NULL);
}

CX_API void cx_spill_mark(uint64_t h) {
    uint64_t b = h & ((1ull << CX_SPILL_BITS_LOG2) - 1), bit = 1ull << (b & 63);
    if (!cx_spill.bits || (cx_spill.bits[b >> 6] & bit)) return;
    cx_spill.bits[b >> 6] |= bit;
    cx_spill.bits_set++;
}

CX_API void cx_spill_bits_clear(void) {
    if (cx_spill.bits) memset(cx_spill.bits, 0, (1ull << CX_SPILL_BITS_LOG2) / 8);
    cx_spill.bits_set = 0;
}

CX_API void cx_spill_log_clear(void) {
    cx_spill.log_len = 0;
    cx_spill.stale_lost = 0;
    if (cx_spill.log_cap > (4u << 20)) {      /* a burst's buffer is not kept */
        free(cx_spill.log);
        cx_spill.log = NULL;
        cx_spill.log_cap = 0;
    }
}
