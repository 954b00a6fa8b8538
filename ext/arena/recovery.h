/* An arena's start and end: formatting a backing, checking one at attach (the
   verdicts below), rebuilding after an unclean shutdown everything derived from the
   heap (index, free lists, LRU lists, expiry wheel, counters), and releasing this
   process's pins and reservations before a clean close. */
#ifndef CX_RECOVERY_H
#define CX_RECOVERY_H

#include <stdint.h>

#include "common.h"

/* attach verdicts */
enum { CX_OK = 0, CX_ZERO, CX_BAD_MAGIC, CX_BAD_VERSION, CX_BAD_CHECKSUM, CX_BAD_SIZE, CX_BAD_GEOMETRY,
       CX_ZEROED_SUPER };

CX_API uint64_t cx_heap_off_for(uint64_t size);
CX_API void cx_format(char *base, uint64_t size, uint64_t seed);
CX_API int cx_validate(const char *base, uint64_t size);
CX_API int cx_entry_intact(char *base, uint64_t off, uint64_t size);
CX_API int64_t cx_rebuild(char *base);
CX_API void cx_release_process_state(char *base);

#endif
