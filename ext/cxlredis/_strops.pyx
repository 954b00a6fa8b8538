# cython: language_level=3
"""String operations in C (ext/strops/) for the bitmap commands, LCS and HyperLogLog.

Every function reads its strings through the buffer protocol, so an entry's
memoryview over the arena is read where it lies, never copied; BITOP writes its
result straight into the buffer it is given (a reserved arena block). Bits are
numbered as Redis numbers them: bit 0 is the most significant bit of byte 0.
A HyperLogLog is changed in a C buffer of its own (its string may grow, or become
dense), handed back as the bytes to store.

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


# --- HyperLogLog (the PF* commands) ------------------------------------------
HLL_DENSE = CX_HLL_DENSE
HLL_SPARSE = CX_HLL_SPARSE
HLL_REGISTERS = CX_HLL_REGISTERS


cdef int hll_open(cx_hll *h, value) except -1:
    """h: a copy of the HLL string value to change, or a new, empty HLL for None."""
    cdef Py_buffer view
    cdef int opened
    if value is None:
        opened = cx_hll_init_empty(h)
    else:
        PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
        try:
            opened = cx_hll_init_copy(h, <const uint8_t *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
    if opened == CX_HLL_NOMEM:
        raise MemoryError()
    return 0


cdef int hll_checked(int result) except -2:
    """A result of cx_hll_add / cx_hll_set / cx_hll_to_dense, MemoryError for CX_HLL_NOMEM."""
    if result == CX_HLL_NOMEM:
        raise MemoryError()
    return result


cdef inline bytes hll_bytes(cx_hll *h):
    return PyBytes_FromStringAndSize(<char *>h.p, h.len)


def hll_valid(value):
    """Whether value is an HLL string as Redis checks one: a header with the magic, a
    known encoding, and the exact size if dense (the opcodes are checked where walked)."""
    cdef Py_buffer view
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        return bool(cx_hll_valid(<const uint8_t *>view.buf, view.len))
    finally:
        PyBuffer_Release(&view)


def hll_encoding(value):
    """HLL_DENSE or HLL_SPARSE: the encoding of a valid HLL string."""
    cdef Py_buffer view
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        return (<const uint8_t *>view.buf)[4]
    finally:
        PyBuffer_Release(&view)


def hll_add(value, elements, size_t sparse_max):
    """PFADD: the elements (buffers) added to the HLL string value (None: a new, empty
    HLL). Returns (how many changed it, its creation counted as one, or -1 at an element
    its sparse opcodes cannot take; the string it leaves, None if unchanged). A changed
    HLL has its cached cardinality marked stale; one that stopped at a corrupt opcode
    keeps what the elements before it changed, as in Redis."""
    cdef cx_hll h
    cdef Py_buffer view
    cdef long changed = 1 if value is None else 0
    cdef int added
    hll_open(&h, value)
    try:
        for element in elements:
            PyObject_GetBuffer(element, &view, PyBUF_SIMPLE)
            try:
                added = hll_checked(cx_hll_add(&h, <const uint8_t *>view.buf, view.len, sparse_max))
            finally:
                PyBuffer_Release(&view)
            if added == CX_HLL_CORRUPT:
                return -1, hll_bytes(&h) if changed else None
            changed += added
        if not changed:
            return 0, None
        cx_hll_invalidate(h.p)
        return changed, hll_bytes(&h)
    finally:
        cx_hll_free(&h)


def hll_count(value):
    """PFCOUNT of one HLL string: (its cardinality, as the signed 64 bits Redis replies
    with; the 8 bytes its cache (at offset 8) takes, None if the cache was fresh), or
    (None, None) if its sparse opcodes do not cover the registers."""
    cdef Py_buffer view
    cdef uint64_t card
    cdef int invalid = 0
    cdef uint8_t header[CX_HLL_HDR_SIZE]
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        if cx_hll_cached(<const uint8_t *>view.buf, &card):
            return <int64_t>card, None
        card = cx_hll_count(<const uint8_t *>view.buf, view.len, &invalid)
    finally:
        PyBuffer_Release(&view)
    if invalid:
        return None, None
    cx_hll_set_cached(header, card)
    return <int64_t>card, PyBytes_FromStringAndSize(<char *>header + 8, 8)


def hll_merge(registers, value):
    """registers (a writable buffer of 16384 bytes, one per register) raised to those of
    the HLL string value; False if its sparse opcodes do not cover the registers."""
    cdef Py_buffer regs, view
    PyObject_GetBuffer(registers, &regs, PyBUF_WRITABLE)
    try:
        if regs.len != CX_HLL_REGISTERS:
            raise ValueError("not 16384 registers")
        PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
        try:
            return cx_hll_merge(<uint8_t *>regs.buf, <const uint8_t *>view.buf, view.len) == 0
        finally:
            PyBuffer_Release(&view)
    finally:
        PyBuffer_Release(&regs)


def hll_count_registers(registers):
    """The cardinality estimate of 16384 registers of one byte each, as the signed 64
    bits Redis replies with (PFCOUNT of several keys)."""
    cdef Py_buffer regs
    PyObject_GetBuffer(registers, &regs, PyBUF_SIMPLE)
    try:
        if regs.len != CX_HLL_REGISTERS:
            raise ValueError("not 16384 registers")
        return <int64_t>cx_hll_count_registers(<const uint8_t *>regs.buf)
    finally:
        PyBuffer_Release(&regs)


def hll_merge_into(value, registers, bint dense, size_t sparse_max):
    """PFMERGE's write: the HLL string value (None: a new, empty one), made dense first
    if dense, with each register raised to registers' (16384 bytes) and its cached
    cardinality marked stale. None if it could not be made dense (corrupt)."""
    cdef cx_hll h
    cdef Py_buffer regs
    cdef int i
    PyObject_GetBuffer(registers, &regs, PyBUF_SIMPLE)
    try:
        if regs.len != CX_HLL_REGISTERS:
            raise ValueError("not 16384 registers")
        hll_open(&h, value)
        try:
            if dense and hll_checked(cx_hll_to_dense(&h)) == CX_HLL_CORRUPT:
                return None
            for i in range(CX_HLL_REGISTERS):
                if (<const uint8_t *>regs.buf)[i]:
                    # a register the opcodes cannot take is left, as Redis leaves it
                    hll_checked(cx_hll_set(&h, <uint32_t>i, (<const uint8_t *>regs.buf)[i], sparse_max))
            cx_hll_invalidate(h.p)
            return hll_bytes(&h)
        finally:
            cx_hll_free(&h)
    finally:
        PyBuffer_Release(&regs)


def hll_to_dense(value):
    """The dense form of a sparse HLL string; None if its opcodes do not cover the
    registers."""
    cdef cx_hll h
    hll_open(&h, value)
    try:
        if hll_checked(cx_hll_to_dense(&h)) == CX_HLL_CORRUPT:
            return None
        return hll_bytes(&h)
    finally:
        cx_hll_free(&h)


def hll_registers(value):
    """The 16384 registers of a dense HLL string, one byte each."""
    cdef Py_buffer view
    cdef bytes out = PyBytes_FromStringAndSize(NULL, CX_HLL_REGISTERS)
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        if view.len != CX_HLL_DENSE_SIZE:
            raise ValueError("not a dense HLL")
        cx_hll_dense_registers(<const uint8_t *>view.buf, <uint8_t *>PyBytes_AS_STRING(out))
        return out
    finally:
        PyBuffer_Release(&view)


def hll_decode(value):
    """PFDEBUG DECODE of a sparse HLL string: its opcodes as "z:N", "Z:N", "v:V,N"."""
    cdef Py_buffer view
    cdef char *out = NULL
    cdef size_t length
    PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
    try:
        length = cx_hll_decode(<const uint8_t *>view.buf, view.len, NULL, 0)
        out = <char *>malloc(length + 2)
        if out == NULL:
            raise MemoryError()
        cx_hll_decode(<const uint8_t *>view.buf, view.len, out, length + 2)
        return PyBytes_FromStringAndSize(out, length)
    finally:
        free(out)
        PyBuffer_Release(&view)


def hll_selftest(size_t sparse_max, uint64_t seed, uint64_t max_card):
    """PFSELFTEST's checks (see hll.h), with distinct elements up to max_card; None if
    they pass, else Redis's error text."""
    cdef char error[128]
    cdef int result = cx_hll_selftest(sparse_max, seed, max_card, error, sizeof(error))
    if result == CX_HLL_NOMEM:
        raise MemoryError()
    return error.decode() if result else None
