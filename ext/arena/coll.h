/* Collections: the entries of lists, sets and sorted sets, whose value is the header of
   their trees (tree.h). The header is kept twice, with a word saying which copy is
   current: a transaction writes the other copy and switches the word in one store, so a
   kill -9 leaves the old collection or the new one, never a part of either. */
#ifndef CX_COLL_H
#define CX_COLL_H

#include <stdint.h>

#include "common.h"
#include "layout.h"
#include "tree.h"

typedef struct {
    uint64_t root[2];       /* its trees (0: empty); a list and a set have one, a sorted set two */
    uint64_t bytes;         /* the blocks of its trees */
    uint64_t elems;         /* the key and value bytes of its trees' records */
    uint64_t flags;         /* its type's (the encoding Redis would report for it) */
    uint64_t spare;
} cx_coll;

typedef struct {
    uint64_t current;       /* which copy is the collection */
    cx_coll copy[2];
} cx_coll_value;

#define CX_COLL_VALUE_BYTES ((uint64_t)sizeof(cx_coll_value))

static inline cx_coll *cx_coll_of(cx_entry *e) {
    cx_coll_value *cv = (cx_coll_value *)CX_VAL(e);
    return &cv->copy[cv->current & 1];
}

CX_API void cx_coll_init(char *base, uint64_t off, const cx_coll *c);
CX_API void cx_coll_publish(char *base, uint64_t off, const cx_coll *c);
CX_API void cx_coll_disown(char *base, uint64_t off);

/* A collection as one flat run of bytes, for the disk tier: its flags and each tree's
   record count (three u64), then every record of tree 0 and then of tree 1, in order, as
   u32 key length, u32 value length, key, value. Unflattening puts the records into new
   trees of t (a list's tree 0 is unkeyed: its records have no key) and gives c their
   roots and flags: 0, or -1 if t failed (t->err) or the bytes are not such a run. */
CX_API uint64_t cx_coll_flat_len(char *base, const cx_coll *c);
CX_API void cx_coll_flatten(char *base, const cx_coll *c, uint8_t *out);
CX_API int cx_coll_unflatten(cx_txn *t, cx_coll *c, const uint8_t *p, uint64_t len, int list);
static void cx_coll_free(char *base, cx_entry *e);
static int cx_coll_mark(char *base, uint64_t off, uint32_t seq, uint64_t *maxtxn);

#endif
