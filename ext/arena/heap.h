/* The heap's allocator: boundary-tagged blocks (the size in a header word, with the
   block's state in its low bits, and again in a footer word), free lists segregated
   by size class with a bitmap of the non-empty classes, coalescing with free
   neighbours on free, and what each free block knows of its backing's pages (they are
   allocated before a block is handed out, and punched out of big idle ones). */
#ifndef CX_HEAP_H
#define CX_HEAP_H

#include <stdint.h>

#include "common.h"
#include "layout.h"

/* ---- free lists: segregated by size class, with a bitmap of non-empty classes ---- */
static inline unsigned cx_class(uint64_t size) {
    uint64_t u = size >> 6;
    if (u < 64) return (unsigned)u;
    unsigned top = 63u - (unsigned)__builtin_clzll(u);
    unsigned c = 64u + (top - 6u) * 8u + (unsigned)((u >> (top - 3u)) & 7u);
    return c < CX_NCLASS ? c : CX_NCLASS - 1;
}

static void cx_free_push(char *base, uint64_t off, uint64_t size, uint64_t backing);
static inline int cx_free_backed(char *base, uint64_t off) {
    return cx_bk_kind(((cx_freeblk *)(base + off))->backing) == CX_BK_BACKED;
}
static uint64_t cx_heap_alloc(char *base, uint64_t need, const cx_cfg *cfg, int *err);
static uint64_t cx_heap_free(char *base, uint64_t off);

/* ---- quick lists: small freed blocks kept whole for the next block of their size ----
   A rewrite of a small value (INCR, HSET, a SET over a SET) frees one block and takes
   another of the same size. Merging the freed block with its neighbours reads their
   boundary tags, two cache misses, and the new block comes from wherever the free
   lists had one, cold. So a freed block of up to 2 KiB goes, unmerged, on a LIFO list
   of its class (CX_QUICK state, at most CX_QUICK_DEPTH per class), and the next
   allocation of its size takes it back while its lines are still in the cache. A quick
   block counts as free in heap_used; an allocation the free lists cannot serve first
   merges every quick block back into them (cx_quick_drain), so they never cost a fit.
   A rebuild turns them into plain free blocks. */
static uint64_t cx_quick_drain(char *base);
CX_API uint64_t cx_release_free(char *base, const cx_cfg *cfg, int64_t now, uint64_t min_age,
                                uint64_t max_bytes, uint64_t max_visits);

#endif
