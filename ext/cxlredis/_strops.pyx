# cython: language_level=3
"""String operations in C (ext/strops/) for the bitmap commands and LCS.

Every function reads its strings through the buffer protocol, so an entry's
memoryview over the arena is read where it lies, never copied; BITOP writes its
result straight into the buffer it is given (a reserved arena block). Bits are
numbered as Redis numbers them: bit 0 is the most significant bit of byte 0.

The GIL is held throughout: the bytes read are live entries, which only the
thread holding it may change or free.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdlib cimport free, malloc

BITOP_AND = CX_BITOP_AND
BITOP_OR = CX_BITOP_OR
BITOP_XOR = CX_BITOP_XOR
BITOP_NOT = CX_BITOP_NOT


cdef int check_bits(Py_buffer *view, uint64_t first, uint64_t last) except -1:
    if first > last or last >= <uint64_t>view.len * 8:
        raise ValueError(f"bits {first}..{last} are not within {view.len} bytes")
    return 0


def bitcount(data, uint64_t first, uint64_t last):
    """The set bits of data from bit first to bit last, both included."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        check_bits(&view, first, last)
        return cx_bitcount(<const uint8_t *>view.buf, first, last)
    finally:
        PyBuffer_Release(&view)


def bitpos(data, uint64_t first, uint64_t last, int bit):
    """The position of the first bit of data equal to bit (0 or 1) from bit first to bit
    last, both included; -1 if there is none."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        check_bits(&view, first, last)
        return cx_bitpos(<const uint8_t *>view.buf, first, last, 1 if bit else 0)
    finally:
        PyBuffer_Release(&view)


def bitop(int op, sources, out):
    """out = sources[0] op sources[1] op ..., each source (a buffer, or None for a missing
    key) read as if zero-padded to len(out); out is a writable buffer. BITOP_NOT takes
    one source."""
    cdef Py_ssize_t n = len(sources), opened = 0, i
    cdef Py_buffer dst
    cdef Py_buffer *views = NULL
    cdef const uint8_t **ptrs = NULL
    cdef size_t *lens = NULL
    if op not in (CX_BITOP_AND, CX_BITOP_OR, CX_BITOP_XOR, CX_BITOP_NOT) or n < 1 \
            or (op == CX_BITOP_NOT and n != 1):
        raise ValueError("not a BITOP operation and its sources")
    PyObject_GetBuffer(out, &dst, PyBUF_WRITABLE)
    try:
        views = <Py_buffer *>malloc(n * sizeof(Py_buffer))
        ptrs = <const uint8_t **>malloc(n * sizeof(uint8_t *))
        lens = <size_t *>malloc(n * sizeof(size_t))
        if views == NULL or ptrs == NULL or lens == NULL:
            raise MemoryError()
        for i in range(n):
            source = sources[i]
            if source is None:
                ptrs[i] = NULL
                lens[i] = 0
                continue
            PyObject_GetBuffer(source, &views[opened], PyBUF_SIMPLE)
            ptrs[i] = <const uint8_t *>views[opened].buf
            lens[i] = views[opened].len
            opened += 1
        cx_bitop(op, ptrs, lens, n, <uint8_t *>dst.buf, dst.len)
    finally:
        for i in range(opened):
            PyBuffer_Release(&views[i])
        free(views)
        free(ptrs)
        free(lens)
        PyBuffer_Release(&dst)


def lcs_table_bytes(alen, blen):
    """The bytes of LCS's table for strings of alen and blen bytes (Redis bounds it by
    proto-max-bulk-len)."""
    return (alen + 1) * (blen + 1) * sizeof(uint32_t)


def lcs(a, b, bint walk=True, bint ranges=False, unsigned long long minlen=0):
    """The longest common subsequence of a and b, as Redis's LCS command finds it:
    (its length, its bytes (None unless walk), the matched ranges (a list of
    ((a_start, a_end), (b_start, b_end)) runs at least minlen long, 0 for any; empty
    unless ranges)). Each string must be shorter than 2**32 - 1 bytes. MemoryError if
    the table cannot be allocated."""
    cdef Py_buffer va, vb
    cdef uint32_t *table = NULL
    cdef uint32_t *found = NULL
    cdef uint32_t alen, blen, length
    cdef size_t cells, count = 0, k
    cdef bytes text = None
    PyObject_GetBuffer(a, &va, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(b, &vb, PyBUF_SIMPLE)
        try:
            if va.len >= 0xffffffff - 1 or vb.len >= 0xffffffff - 1:
                raise ValueError("a string too long for LCS")
            alen, blen = <uint32_t>va.len, <uint32_t>vb.len
            cells = (<size_t>alen + 1) * (<size_t>blen + 1)
            if cells > (<size_t>-1) / sizeof(uint32_t):
                raise MemoryError()
            table = <uint32_t *>malloc(cells * sizeof(uint32_t))
            if table == NULL:
                raise MemoryError()
            cx_lcs_table(<const uint8_t *>va.buf, alen, <const uint8_t *>vb.buf, blen, table)
            length = table[cells - 1]
            if not (walk or ranges):
                return length, None, []
            text = PyBytes_FromStringAndSize(NULL, length)
            if ranges and length:
                found = <uint32_t *>malloc(<size_t>length * 4 * sizeof(uint32_t))
                if found == NULL:
                    raise MemoryError()
            count = cx_lcs_walk(<const uint8_t *>va.buf, alen, <const uint8_t *>vb.buf, blen, table,
                                minlen, <uint8_t *>PyBytes_AS_STRING(text), found)
            return length, text, [((found[4 * k], found[4 * k + 1]), (found[4 * k + 2], found[4 * k + 3]))
                                  for k in range(count)]
        finally:
            free(table)
            free(found)
            PyBuffer_Release(&vb)
    finally:
        PyBuffer_Release(&va)
