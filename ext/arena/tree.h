/* Collections' trees: copy-on-write counted B+trees of records, in blocks of their own.

   A list, set or sorted set keeps its elements in one or two trees (coll.h) whose nodes
   are heap blocks in state CX_NODE, on the bill of the collection's tenant. A record is
   a key and a value, either of which may be empty. A keyed tree holds its records in
   key order (memcmp, then length: the types encode their order into the key); an
   unkeyed one (a list) in the order they were put at their positions. Every node knows
   how many records lie below it, so a record is reached by its position as well as by
   its key, in O(log n) either way.

   A record longer than CX_INLINE_MAX keeps its key and value in a blob, a NODE block
   of its own that one record references. A node's payload holds its records from the
   start and a u16 slot per record (the record's offset) from the end.

   Nothing published is changed in place. A transaction (cx_txn) writes each node it
   changes into a fresh block, which it then changes in place as often as it likes, so
   the old tree stays whole and readable until the collection's header switches to the
   new root in one store (coll.c). The blocks the new tree no longer uses are freed
   then (cx_txn_commit); an aborted transaction frees its fresh blocks instead. After a
   crash a rebuild keeps what the live headers reach (cx_tree_mark) and frees the rest. */
#ifndef CX_TREE_H
#define CX_TREE_H

#include <stdint.h>

#include "common.h"
#include "layout.h"

#define CX_NODE_HDR 48u
/* most payload bytes a node holds: a node of this much is one 4 KiB block */
#define CX_NODE_MAX 4032u
/* a node filled below this after a delete is merged with a neighbour (or refilled from it) */
#define CX_NODE_MIN 1344u
/* a record longer than this (8 bytes of lengths, key, value) keeps them in a blob */
#define CX_INLINE_MAX 384u
#define CX_OOL 0x80000000u
/* deepest tree: nodes hold at least two records, and a full one ten */
#define CX_TREE_DEPTH 40
/* the longest key or value a record may have */
#define CX_REC_MAX 0x3fffffffu

enum { CX_LEAF = 1, CX_INNER = 2, CX_BLOB = 3 };

typedef struct {
    uint64_t size_state;    /* block size | CX_NODE */
    uint64_t txn;           /* the transaction that wrote it: changed in place while that one runs */
    uint64_t count;         /* records below it (a leaf: its own; a blob: 0) */
    uint32_t nrec;          /* its records (an inner node: one per child) */
    uint32_t used;          /* payload bytes its records take (their slots not counted) */
    uint16_t tenant;        /* whose bill it is on */
    uint8_t kind;           /* CX_LEAF, CX_INNER or CX_BLOB */
    uint8_t spare;
    uint32_t mark;          /* a rebuild's: the collection that reached it (0: none yet) */
    uint64_t fresh;         /* while its transaction runs: its place in the fresh list + 1 */
} cx_node;
_Static_assert(sizeof(cx_node) == CX_NODE_HDR, "node header size");

#define CX_N(base, off) ((cx_node *)((base) + (off)))

/* A record as read: its key and value (in the arena: valid until the next change), and
   the blob holding them (0: inline), or its key alone (an inner node's long key). */
typedef struct {
    const uint8_t *k, *v;
    uint32_t kl, vl;
    uint64_t blob;
    int key_only;
} cx_rec;

/* A transaction over one tenant's trees: the blocks it made (fresh) and the published
   ones its trees no longer use (retired). */
typedef struct {
    char *base;
    const cx_cfg *cfg;
    unsigned tenant;
    int err;                /* 0, or why it failed (below) */
    uint64_t id;
    int64_t now;
    int64_t bytes;          /* change of its trees' block bytes */
    int64_t elems;          /* change of its leaf records' key and value bytes */
    uint64_t *fresh, *retired;
    uint64_t nfresh, nretired, capfresh, capretired;
} cx_txn;
/* why a transaction failed: no room in the arena (or its backing), no process memory, or
   a position or length out of range (a caller's mistake: nothing was changed) */
enum { CX_TXN_FULL = 1, CX_TXN_NOMEM = 2, CX_TXN_BAD = 3 };

/* A position in a tree, for walking its records in order (either way). */
typedef struct {
    char *base;
    int depth;              /* nodes on the path; 0: not on a record */
    uint64_t node[CX_TREE_DEPTH];
    uint32_t idx[CX_TREE_DEPTH];
} cx_cursor;

CX_API void cx_txn_begin(cx_txn *t, char *base, const cx_cfg *cfg, unsigned tenant, int64_t now);
CX_API void cx_txn_commit(cx_txn *t);
CX_API void cx_txn_abort(cx_txn *t);

CX_API uint64_t cx_tree_count(char *base, uint64_t root);
CX_API int cx_tree_get(char *base, uint64_t root, uint64_t pos, cx_rec *r);
CX_API uint64_t cx_tree_seek(char *base, uint64_t root, const uint8_t *k, uint32_t kl, int *exact);
CX_API int cx_tree_insert_at(cx_txn *t, uint64_t *root, uint64_t pos, const uint8_t *v, uint32_t vl);
CX_API int cx_tree_put(cx_txn *t, uint64_t *root, const uint8_t *k, uint32_t kl, const uint8_t *v, uint32_t vl,
                       int replace, int *existed);
CX_API int cx_tree_set_at(cx_txn *t, uint64_t *root, uint64_t pos, const uint8_t *v, uint32_t vl);
CX_API int cx_tree_delete_range(cx_txn *t, uint64_t *root, uint64_t from, uint64_t to);
CX_API int cx_tree_clone(cx_txn *t, uint64_t src, uint64_t *dst);
CX_API void cx_tree_free(char *base, uint64_t root);

CX_API int cx_cursor_seek(cx_cursor *c, char *base, uint64_t root, uint64_t pos);
CX_API int cx_cursor_next(cx_cursor *c);
CX_API int cx_cursor_prev(cx_cursor *c);
CX_API void cx_cursor_rec(const cx_cursor *c, cx_rec *r);
CX_API void cx_node_rec(char *base, uint64_t off, uint32_t i, cx_rec *r);

static int cx_tree_mark(char *base, uint64_t root, unsigned tenant, uint32_t seq, uint64_t *maxtxn,
                        uint64_t *bytes, uint64_t *elems);
static void cx_tree_unmark(char *base, uint64_t root, uint32_t seq);
static void cx_node_free(char *base, uint64_t off);

#endif
