/* RENAME and MOVE (see rename.h). */
#include <string.h>

#include "coll.h"
#include "entry.h"
#include "hash.h"
#include "spill.h"
#include "index.h"
#include "layout.h"
#include "rename.h"

/* entry `off` takes the identity recorded in r (its rest, value and TTL, stay): the
   key bytes, then the header fields and checksum that make them its identity */
static void cx_rename_write_key(char *base, uint64_t off, const cx_rename_intent *r) {
    memcpy(CX_KEY(CX_E(base, off)), r->key, r->key_len);
}
static void cx_rename_seal(char *base, uint64_t off, const cx_rename_intent *r) {
    cx_entry *e = CX_E(base, off);
    e->key_len = r->key_len;
    e->db = r->db;
    e->hash = r->hash;
    e->generation = r->generation;
    e->checksum = cx_entry_sum(e);
}

/* Rename live entry `off` to (its tenant, pdb, key) without moving its value; the
   caller checked that the key fits its key area and CX_RENAME_KEY_MAX. */
CX_API void cx_rename_in_place(char *base, uint64_t off, unsigned pdb, const uint8_t *key, size_t klen) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    cx_rename_intent *r = &sb->rename;
    uint64_t h = cx_key_hash(sb, e->tenant, pdb, key, klen);
    uint64_t dst = cx_find(base, h, e->tenant, pdb, key, klen, NULL);
    memcpy(r->key, key, klen);
    r->key_len = (uint32_t)klen;
    r->db = (uint16_t)pdb;
    r->hash = h;
    r->entry = off;
    r->generation = ++sb->generation;   /* newer than the destination's: it wins a rebuild */
    cx_store(&r->state, CX_RENAME_IN_PLACE);
    CX_CRASH_POINT(1);
    if (dst) cx_drop(base, dst, 1);
    CX_CRASH_POINT(2);
    cx_index_unlink(base, off);
    cx_account(base, e, 0);
    CX_CRASH_POINT(3);
    cx_rename_write_key(base, off, r);
    CX_CRASH_POINT(4);
    cx_rename_seal(base, off, r);
    CX_CRASH_POINT(5);
    cx_index_push(base, off);
    cx_spill_committed(base, h);
    cx_account(base, e, 1);
    CX_CRASH_POINT(6);
    cx_store(&r->state, CX_RENAME_NONE);
}

/* Rename live entry `src` to (its tenant, pdb, key) by committing reserved block
   `fresh`, which holds a copy of its value; the caller pins src. */
CX_API void cx_rename_by_copy(char *base, uint64_t src, uint64_t fresh, unsigned pdb, const uint8_t *key,
                              size_t klen, int64_t now, int checksum) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, src);
    cx_rename_intent *r = &sb->rename;
    r->entry = src;
    r->entry_generation = e->generation;
    r->generation = sb->generation + 1;   /* the one cx_commit gives the copy */
    cx_store(&r->state, CX_RENAME_BY_COPY);
    CX_CRASH_POINT(11);
    cx_commit(base, fresh, pdb, key, klen, e->expire_at, e->type, 0, now, checksum);
    CX_CRASH_POINT(12);
    if (cx_is_coll(e->type)) cx_coll_disown(base, src);     /* its trees are the copy's now */
    cx_drop(base, src, 1);
    CX_CRASH_POINT(13);
    cx_store(&r->state, CX_RENAME_NONE);
}

/* A rebuild's first step: a recorded in-place rename gets its entry's new identity,
   so the heap walk sees a whole entry (the destination's older one loses to it). */
static void cx_rename_redo(char *base) {
    cx_super *sb = CX_SB(base);
    cx_rename_intent *r = &sb->rename;
    uint64_t off = r->entry;
    if (r->state != CX_RENAME_IN_PLACE) return;
    if (off >= sb->heap_off && off < sb->heap_off + sb->heap_size && !(off & 63)
        && CX_STATE(CX_E(base, off)->size_state) == CX_LIVE && r->key_len <= CX_RENAME_KEY_MAX
        && r->key_len <= cx_key_room(CX_E(base, off))) {
        cx_rename_write_key(base, off, r);
        cx_rename_seal(base, off, r);
    }
    r->state = CX_RENAME_NONE;      /* after: a kill -9 during the rebuild redoes it */
}

/* After the rebuild's heap walk: a rename by copy whose copy is live loses its
   source (copy_live: the walk indexed an entry of the recorded generation). */
static void cx_rename_undo_source(char *base, int copy_live) {
    cx_super *sb = CX_SB(base);
    cx_rename_intent *r = &sb->rename;
    uint64_t off = r->entry;
    if (r->state != CX_RENAME_BY_COPY) return;
    if (copy_live && off >= sb->heap_off && off < sb->heap_off + sb->heap_size && !(off & 63)) {
        cx_entry *e = CX_E(base, off);
        if (CX_STATE(e->size_state) == CX_LIVE && e->generation == r->entry_generation) {
            cx_index_unlink(base, off);
            e->size_state = CX_SIZE(e->size_state) | CX_FREE;
        }
    }
    r->state = CX_RENAME_NONE;
}
