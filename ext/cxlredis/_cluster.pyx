# cython: language_level=3
"""The hot loops of Redis Cluster in C: key slots, CRC64 and LZF.

Every function takes bytes, bytearray, memoryview or any other contiguous
buffer without copying it (bytes, the common case for keys, skip the buffer
protocol altogether).
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.stdint cimport uint16_t, uint64_t

cdef extern from "cluster/keyslot.h":
    const int CX_CLUSTER_SLOTS
    void cx_crc16_init()
    uint16_t cx_crc16(const unsigned char *buf, size_t len) nogil
    unsigned int cx_key_slot(const unsigned char *key, size_t len) nogil

cdef extern from "cluster/crc64.h":
    void cx_crc64_init()
    uint64_t cx_crc64(uint64_t crc, const unsigned char *buf, size_t len) nogil

cdef extern from "cluster/lzf.h":
    Py_ssize_t cx_lzf_decompress(const unsigned char *src, size_t src_len,
                                 unsigned char *dst, size_t dst_len) nogil

cx_crc16_init()
cx_crc64_init()

CLUSTER_SLOTS = CX_CLUSTER_SLOTS

# Above this size CRC64 releases the GIL: the other threads' work outweighs the switch.
DEF CRC64_NOGIL_BYTES = 1 << 20


def key_slot(key):
    """The cluster slot (0..16383) of key, by Redis's keyHashSlot and its {hash tag} rule."""
    cdef Py_buffer view
    cdef unsigned int slot
    if type(key) is bytes:
        return cx_key_slot(<const unsigned char *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
    PyObject_GetBuffer(key, &view, PyBUF_SIMPLE)
    slot = cx_key_slot(<const unsigned char *>view.buf, view.len)
    PyBuffer_Release(&view)
    return slot


def crc16(data):
    """CRC16/XMODEM of data, the checksum key slots are taken from."""
    cdef Py_buffer view
    cdef uint16_t crc
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    crc = cx_crc16(<const unsigned char *>view.buf, view.len)
    PyBuffer_Release(&view)
    return crc


def crc64(data, uint64_t crc=0):
    """CRC-64/Jones of data, continuing from crc (so a payload can be summed in pieces)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if view.len >= CRC64_NOGIL_BYTES:
            with nogil:
                crc = cx_crc64(crc, <const unsigned char *>view.buf, view.len)
        else:
            crc = cx_crc64(crc, <const unsigned char *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return crc


def lzf_decompress(data, Py_ssize_t length):
    """The length bytes LZF-compressed in data; ValueError if data is not exactly that."""
    cdef Py_buffer view
    cdef Py_ssize_t written
    cdef unsigned char *dst
    if length < 0:
        raise ValueError("negative LZF length")
    out = PyBytes_FromStringAndSize(NULL, length)
    dst = <unsigned char *>PyBytes_AS_STRING(out)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            written = cx_lzf_decompress(<const unsigned char *>view.buf, view.len, dst, length)
    finally:
        PyBuffer_Release(&view)
    if written != length:
        raise ValueError("malformed LZF data")
    return out
