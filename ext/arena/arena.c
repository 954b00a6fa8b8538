/* The arena's C, as one translation unit: ext/cxlredis/_store.pyx includes this file, so its
   functions stay static and the compiler inlines across the parts and into the Cython
   layer (the fast path's lookups and commits). tests/c compiles it with -Wall -Wextra
   -Werror and runs its tests under ASan and UBSan.

   layout.h    the on-arena format: superblock, entry header, blocks, constants
   common.h    entry points (CX_API), process settings, ordered stores, clock, crash points
   hash.c      key hashes, header and superblock checksums, value checksums
   heap.c      the allocator: boundary tags, size classes, coalescing, backed pages
   backing.c   the backing file or device: open, map, allocate and punch pages
   index.c     buckets and chains
   lru.c       LRU lists and LFU counters
   ttl.c       the expiry wheel and active expiry
   entry.c     reserve, commit, lookup, pin, drop: an entry's life and its counters
   tree.c      collections' trees: copy-on-write counted B+trees of records, transactions
   coll.c      collections' entries: their trees' header, published in one store
   evict.c     victims, tenant tiers, allocation that evicts
   tenant.c    tenant slots, their counter tables, create and drop
   rename.c    RENAME/MOVE with the rename intent, its redo and undo
   slots.c     keys by cluster slot, in the process's memory (cluster mode)
   warm.c      the warmer: a thread faulting in fresh pages ahead of the allocator
   notes.c     drop notes: the keys expired or evicted, for keyspace notifications
   spill.c     the disk tier's writes of evicted entries, and the commits that make copies stale
   mrc.h       references sampled for the tenants' miss-ratio curves
   recovery.c  format, validate, rebuild, clean close */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* fallocate (a Python extension has it from Python.h) */
#endif

/* The extension's build compiles Cython's generated C too, which is not warning-clean:
   only the arena's own code is held to -Wall -Wextra -Werror, here as in tests/c. */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

#include "backing.c"
#include "coll.c"
#include "entry.c"
#include "evict.c"
#include "hash.c"
#include "heap.c"
#include "index.c"
#include "lru.c"
#include "notes.c"
#include "recovery.c"
#include "rename.c"
#include "slots.c"
#include "spill.c"
#include "tenant.c"
#include "tree.c"
#include "ttl.c"
#include "warm.c"

#pragma GCC diagnostic pop
