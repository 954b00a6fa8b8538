/* The longest common subsequence of two strings, as Redis 7.0's LCS command finds it
   (cxlredis._strops): the dynamic-programming table, then one walk back through it that
   spells the subsequence and the matched ranges in the order Redis reports them. */
#ifndef CX_STROPS_LCS_H
#define CX_STROPS_LCS_H

#include <stddef.h>
#include <stdint.h>

/* Fills table ((alen + 1) * (blen + 1) cells, row i for a's first i bytes, column j
   for b's first j) with the LCS lengths of every pair of prefixes; the last cell holds
   the answer. */
void cx_lcs_table(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
                  uint32_t *table);

/* Walks a filled table back from its last cell, as Redis does (on a tie it steps back
   in b). Writes the subsequence to out (the last cell's count of bytes) and, when ranges
   is not NULL, each run of consecutive matches as four numbers (start and end in a,
   start and end in b; from the end of the strings backwards) if it is at least minlen
   long (0: any). Returns the number of ranges written; ranges needs room for as many
   as the subsequence has bytes. */
size_t cx_lcs_walk(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
                   const uint32_t *table, uint64_t minlen, uint8_t *out, uint32_t *ranges);

#endif
