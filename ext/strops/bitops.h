/* The bit operations of Redis's bitmap commands over a string's bytes (cxlredis._strops):
   counting (BITCOUNT), finding (BITPOS) and combining (BITOP). Bits are numbered as
   Redis numbers them: bit 0 is the most significant bit of byte 0, bit 8 that of byte 1. */
#ifndef CX_STROPS_BITOPS_H
#define CX_STROPS_BITOPS_H

#include <stddef.h>
#include <stdint.h>

enum { CX_BITOP_AND = 0, CX_BITOP_OR = 1, CX_BITOP_XOR = 2, CX_BITOP_NOT = 3 };

/* The set bits of p from bit first to bit last, both included (first <= last, and p
   holds at least last / 8 + 1 bytes). */
uint64_t cx_bitcount(const uint8_t *p, uint64_t first, uint64_t last);

/* The position of the first bit equal to bit (0 or 1) from bit first to bit last, both
   included (as for cx_bitcount); -1 if there is none. */
int64_t cx_bitpos(const uint8_t *p, uint64_t first, uint64_t last, int bit);

/* dst (dst_len bytes) = src[0] op src[1] op ... op src[n - 1], each source read as if
   zero-padded to dst_len bytes (a missing key is a source of length 0). CX_BITOP_NOT
   takes one source. The sources may be the same bytes; dst overlaps none of them. */
void cx_bitop(int op, const uint8_t *const *src, const size_t *src_len, size_t n,
              uint8_t *restrict dst, size_t dst_len);

#endif
