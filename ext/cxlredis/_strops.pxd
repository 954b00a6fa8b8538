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
