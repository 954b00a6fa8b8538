/* The disk tier's C part (cxlredis/disktier.py is the rest). While the server gives it
   a segment file, an entry the arena evicts is copied, before its block is freed, into
   a record a writer thread writes to the segment, in order, off the event loop; when the
   writer is staging_cap bytes behind, a record is written in place (one pwritev from
   the mapping) after the queue. Each record is noted for the server, which indexes it
   at once: a read of it waits for its write (cx_spill_wait), and a drop marks it dead in
   its queued bytes or, once written, in the file (cx_spill_kill).

   A copy on disk is never newer than the arena: a bitmap over the hashes of the keys
   written lets a commit tell, in one test, that its key may have a copy, and the hash
   is then noted as stale; the server drops such copies before it looks anything up on
   disk. Process state, not the mapping's: only the server's own arena spills.

   A segment is a sequence of records, each 64-byte aligned: its header, the key, then
   the value (a collection's: its trees flattened, coll.h), which starts on a page of
   the file when it is large. */
#ifndef CX_SPILL_H
#define CX_SPILL_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define CX_SPILL_MAGIC 0x3152454954445843ull    /* "CXDTIER1" */
#define CX_SPILL_PAGED (64u << 10)              /* values this large start on a file page */
#define CX_SPILL_BITS_LOG2 24                   /* the stale filter: 2 MiB of bits */

typedef struct {
    uint64_t magic;
    uint64_t seq;            /* rises over the tier's life: of two copies of a key the higher is newer */
    uint64_t incarnation;    /* the tenant slot's when written: a tenant made again owns none of it */
    uint64_t value_len;
    int64_t expire_at;
    uint64_t value_sum;      /* cx_value_sum of the value, checked when it is read back */
    uint32_t key_len;
    uint16_t tenant, db;     /* tenant slot, physical db */
    uint8_t type;
    uint8_t dead;            /* written 1 when the server drops the copy; not in head_sum */
    uint8_t pad[2];
    uint32_t head_sum;       /* over this header (dead and head_sum as 0) and the key */
} cx_spill_head;

/* What the server takes, in order: a record written (the key follows), or, with type
   CX_SPILL_STALE and no key, the hash of a key committed that may have a copy. */
#define CX_SPILL_STALE 0xff
#define CX_SPILL_PADDED(n) (((size_t)(n) + 7) & ~(size_t)7)
typedef struct {
    uint64_t pos, seq, incarnation, value_len, value_sum, hash;
    int64_t expire_at;
    uint32_t segment, key_len;
    uint16_t tenant, db;
    uint8_t type;
    uint8_t pad[3];
} cx_spill_note;

/* A record to write: its bytes, copied from the arena when it was evicted. */
typedef struct cx_spill_job {
    struct cx_spill_job *next;
    int fd;
    uint64_t pos, len, seq;
    int started;             /* the writer has taken it */
    uint8_t data[];
} cx_spill_job;

typedef struct {
    char *base;              /* the arena that spills; NULL: the tier is off */
    int fd, next_fd;         /* the segment written and the one to go on in when it is full (-1: none) */
    uint32_t segment;        /* the written segment's number; the next one's is one more */
    uint64_t pos, cap;       /* where its next record goes; the size a segment stops at (a
                                record larger than that is the only one in its segment) */
    uint64_t seq;
    uint64_t max_value;
    uint64_t *bits;          /* 1 << CX_SPILL_BITS_LOG2 bits, indexed by key hash */
    uint64_t bits_set;
    uint8_t *log;            /* cx_spill_notes, each with its key (padded to 8 bytes) */
    size_t log_len, log_cap;
    int stale_lost;          /* a stale hash was not kept: every copy must go */
    uint64_t written, written_bytes, skipped, errors;
    int last_errno;
    /* the writer thread's queue (under cx_spill_mu): jobs in seq order */
    cx_spill_job *head, *tail;
    uint64_t staged, staging_cap;     /* bytes queued; the most that may be (past it, written in place) */
    uint64_t written_seq;             /* every record up to this seq is written */
    int stopping;
} cx_spill_state;

static cx_spill_state cx_spill = {.base = NULL, .fd = -1, .next_fd = -1};

static inline int cx_spill_maybe(const char *base, uint64_t h) {
    uint64_t b = h & ((1ull << CX_SPILL_BITS_LOG2) - 1);
    return cx_spill.base == base && cx_spill.bits && (cx_spill.bits[b >> 6] >> (b & 63)) & 1;
}

/* where a record at pos puts its value, and where it ends (the next record's pos) */
static inline uint64_t cx_spill_value_pos(uint64_t pos, uint64_t key_len, uint64_t value_len) {
    uint64_t at = pos + sizeof(cx_spill_head) + key_len;
    uint64_t align = value_len >= CX_SPILL_PAGED ? 4096 : 8;
    return (at + align - 1) & ~(align - 1);
}
static inline uint64_t cx_spill_end(uint64_t pos, uint64_t key_len, uint64_t value_len) {
    return (cx_spill_value_pos(pos, key_len, value_len) + value_len + 63) & ~63ull;
}

/* entry `off`, about to be evicted, to the open segment if it fits and its tenant spills
   (no CX_TENANT_NO_DISK) */
static void cx_spill_evicted(char *base, uint64_t off);
/* a commit made (tenant, pdb, key) of hash h live: note h if a copy may be on disk */
static inline void cx_spill_committed(const char *base, uint64_t h);
CX_API uint32_t cx_spill_head_sum(const cx_spill_head *head, const uint8_t *key);
CX_API int cx_spill_start(char *base, uint64_t cap, uint64_t seq, uint64_t max_value, uint64_t staging_cap);
/* wait (off the event loop) until the record of seq is written */
CX_API void cx_spill_wait(uint64_t seq);
/* wait until every queued record is written */
CX_API void cx_spill_drain(void);
CX_API uint64_t cx_spill_written_seq(void);
/* mark record seq, at pos in fd, dropped: in its queued bytes, or in the file once written */
CX_API int cx_spill_kill(uint64_t seq, int fd, uint64_t pos);
/* bytes queued for the writer */
CX_API uint64_t cx_spill_staged(void);
static void cx_spill_queue(cx_spill_job *job);
CX_API void cx_spill_stop(void);
CX_API void cx_spill_forget(void);
CX_API void cx_spill_mark(uint64_t h);
CX_API void cx_spill_bits_clear(void);
CX_API void cx_spill_log_clear(void);

#endif
