/* RENAME and MOVE, crash-safely: the rename intent in the superblock records what a
   rename is about to do before it does it, so that after a kill -9 at any point the
   rebuild finds the key at its old name or at its new one (it finishes an in-place
   rename it finds recorded, cx_rename_redo, and drops the source of a rename by copy
   whose copy is live, cx_rename_undo_source). CX_CRASH_POINT marks where the recovery
   tests kill the process. */
#ifndef CX_RENAME_H
#define CX_RENAME_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

CX_API void cx_rename_in_place(char *base, uint64_t off, unsigned pdb, const uint8_t *key, size_t klen);
CX_API void cx_rename_by_copy(char *base, uint64_t src, uint64_t fresh, unsigned pdb, const uint8_t *key,
                              size_t klen, int64_t now, int checksum);
static void cx_rename_redo(char *base);
static void cx_rename_undo_source(char *base, int copy_live);

#endif
