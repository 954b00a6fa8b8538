/* Redis 7.0's HyperLogLog over a string's bytes, for the PF* commands (cxlredis._strops).

   The string is Redis's own format, so the bytes a command leaves and the estimates it
   answers are Redis's: a 16-byte header ("HYLL", the encoding byte, three unused bytes,
   the cached cardinality as 64 bits little endian whose top bit set means "stale"),
   then either the dense registers (16384 of 6 bits, packed from each byte's least
   significant bit) or the sparse opcodes (ZERO 00xxxxxx: 1..64 zero registers; XZERO
   01xxxxxx yyyyyyyy: 1..16384 zero registers; VAL 1vvvvvxx: 1..4 registers of value
   1..32). Elements are hashed with MurmurHash64A and Redis's seed; a sparse string
   becomes dense when a register needs a value above 32 or the string would grow past
   hll-sparse-max-bytes; cardinalities come from Ertl's improved estimator, computed
   in the same double-precision steps as Redis (built without contracting a * b + c
   into fused multiply-adds, as Redis's x86-64 build is). */
#ifndef CX_STROPS_HLL_H
#define CX_STROPS_HLL_H

#include <stddef.h>
#include <stdint.h>

#define CX_HLL_REGISTERS 16384
#define CX_HLL_HDR_SIZE 16
#define CX_HLL_DENSE_SIZE (CX_HLL_HDR_SIZE + CX_HLL_REGISTERS * 6 / 8)

enum { CX_HLL_DENSE = 0, CX_HLL_SPARSE = 1 };

/* Results of the functions that change an HLL, besides 0 (unchanged) and 1 (changed). */
enum { CX_HLL_CORRUPT = -1, CX_HLL_NOMEM = -2 };

/* An HLL string being changed: len bytes in a heap buffer of cap bytes, with room past
   the end for what Redis's code reads and writes there (an sds string's terminator and
   the 3 bytes sdsMakeRoomFor reserves); the bytes past len are initialized. */
typedef struct {
    uint8_t *p;
    size_t len, cap;
} cx_hll;

/* Whether s looks like an HLL to Redis's isHLLObjectOrReply: at least a header, the
   magic, a known encoding, and the exact size if dense. The opcodes are checked only by
   the functions that walk them. */
int cx_hll_valid(const uint8_t *s, size_t len);

/* An empty HLL (sparse, cached cardinality 0), as PFADD and PFMERGE create one. */
int cx_hll_init_empty(cx_hll *h);
/* A copy of the HLL string s to change. Both return CX_HLL_NOMEM or 0. */
int cx_hll_init_copy(cx_hll *h, const uint8_t *s, size_t len);
void cx_hll_free(cx_hll *h);

/* PFADD of one element: 1 if a register grew, 0 if not, CX_HLL_CORRUPT for sparse
   opcodes that do not cover the register (or a corrupt string that had to become
   dense), CX_HLL_NOMEM. A sparse string may become dense (see the top). The cached
   cardinality is marked stale by a sparse change only, as in Redis: PFADD marks it
   once it is done (cx_hll_invalidate). */
int cx_hll_add(cx_hll *h, const uint8_t *ele, size_t len, size_t sparse_max);

/* Raises register index to count if it is lower; results as cx_hll_add's. */
int cx_hll_set(cx_hll *h, uint32_t index, uint8_t count, size_t sparse_max);

/* Makes a sparse HLL dense (header kept); 1 if converted, 0 if it was dense already,
   CX_HLL_CORRUPT if its opcodes do not cover exactly 16384 registers, CX_HLL_NOMEM. */
int cx_hll_to_dense(cx_hll *h);

/* Marks the cached cardinality stale. */
void cx_hll_invalidate(uint8_t *s);

/* max[i] = MAX(max[i], register i of the HLL string s) for the 16384 registers (one
   byte each): 0, or CX_HLL_CORRUPT for sparse opcodes that do not cover exactly 16384
   registers (max may then be partly merged). */
int cx_hll_merge(uint8_t *max, const uint8_t *s, size_t len);

/* The cardinality estimate of the HLL string s (its cache ignored); *invalid is set to
   1 when sparse opcodes do not cover exactly 16384 registers. */
uint64_t cx_hll_count(const uint8_t *s, size_t len, int *invalid);

/* The estimate of 16384 registers of one byte each (PFCOUNT of several keys). */
uint64_t cx_hll_count_registers(const uint8_t *max);

/* The cached cardinality of s in *card, if it is not stale: 1, else 0. */
int cx_hll_cached(const uint8_t *s, uint64_t *card);
/* Stores card as s's cached cardinality. */
void cx_hll_set_cached(uint8_t *s, uint64_t card);

/* The 16384 registers of a dense HLL string, one byte each. */
void cx_hll_dense_registers(const uint8_t *s, uint8_t *out);

/* PFDEBUG DECODE: the opcodes of a sparse HLL string as "z:N", "Z:N" and "v:V,N"
   separated by spaces; returns its length. What fits of it, a space and a NUL after it
   is written to out (cap bytes: the length + 2 for all of it); out NULL and cap 0 only
   measure it. */
size_t cx_hll_decode(const uint8_t *s, size_t len, char *out, size_t cap);

/* PFSELFTEST's checks: the dense registers keep what is set in them, and an HLL fed with
   distinct elements, dense and sparse (hll-sparse-max-bytes sparse_max), estimates
   within six standard errors at cardinalities 1, 10, ... up to max_card, the two
   encodings agreeing. 0 if all pass, else CX_HLL_CORRUPT with Redis's message in
   error (error_cap bytes), or CX_HLL_NOMEM. */
int cx_hll_selftest(size_t sparse_max, uint64_t seed, uint64_t max_card, char *error, size_t error_cap);

/* Redis's MurmurHash64A and the (register, run of zeros + 1) an element sets. */
uint64_t cx_hll_murmur64a(const void *key, size_t len, uint32_t seed);
uint8_t cx_hll_pattern(const uint8_t *ele, size_t len, uint32_t *index);

#endif
