# The typed boundary of cxlredis._strops (ext/cxlredis/_strops.pyx): the C it wraps, in ext/strops/.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cdef extern from "strops/bitops.h":
    enum:
        CX_BITOP_AND
        CX_BITOP_OR
        CX_BITOP_XOR
        CX_BITOP_NOT
    uint64_t cx_bitcount(const uint8_t *p, uint64_t first, uint64_t last) nogil
    int64_t cx_bitpos(const uint8_t *p, uint64_t first, uint64_t last, int bit) nogil
    void cx_bitop(int op, const uint8_t *const *src, const size_t *src_len, size_t n,
                  uint8_t *dst, size_t dst_len) nogil

cdef extern from "strops/lcs.h":
    void cx_lcs_table(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
                      uint32_t *table) nogil
    size_t cx_lcs_walk(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen,
                       const uint32_t *table, uint64_t minlen, uint8_t *out, uint32_t *ranges) nogil

cdef extern from "strops/hll.h":
    enum:
        CX_HLL_REGISTERS
        CX_HLL_HDR_SIZE
        CX_HLL_DENSE_SIZE
        CX_HLL_DENSE
        CX_HLL_SPARSE
        CX_HLL_CORRUPT
        CX_HLL_NOMEM
    ctypedef struct cx_hll:
        uint8_t *p
        size_t len
        size_t cap
    int cx_hll_valid(const uint8_t *s, size_t len) nogil
    int cx_hll_init_empty(cx_hll *h) nogil
    int cx_hll_init_copy(cx_hll *h, const uint8_t *s, size_t len) nogil
    void cx_hll_free(cx_hll *h) nogil
    int cx_hll_add(cx_hll *h, const uint8_t *ele, size_t len, size_t sparse_max) nogil
    int cx_hll_set(cx_hll *h, uint32_t index, uint8_t count, size_t sparse_max) nogil
    int cx_hll_to_dense(cx_hll *h) nogil
    void cx_hll_invalidate(uint8_t *s) nogil
    int cx_hll_merge(uint8_t *max, const uint8_t *s, size_t len) nogil
    uint64_t cx_hll_count(const uint8_t *s, size_t len, int *invalid) nogil
    uint64_t cx_hll_count_registers(const uint8_t *max) nogil
    int cx_hll_cached(const uint8_t *s, uint64_t *card) nogil
    void cx_hll_set_cached(uint8_t *s, uint64_t card) nogil
    void cx_hll_dense_registers(const uint8_t *s, uint8_t *out) nogil
    size_t cx_hll_decode(const uint8_t *s, size_t len, char *out, size_t cap) nogil
    int cx_hll_selftest(size_t sparse_max, uint64_t seed, uint64_t max_card, char *error,
                        size_t error_cap) nogil
