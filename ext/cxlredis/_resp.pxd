# The typed boundary of cxlredis._resp (ext/cxlredis/_resp.pyx), for the C fast path (ext/cxlredis/_fastpath.pyx).
from cpython.buffer cimport Py_buffer


cdef struct ArgSpan:
    # one argument of a command the fast path reads in place (RequestParser.peek_command)
    const char *ptr
    Py_ssize_t len


cdef class LargeValueThreshold:
    cdef Py_ssize_t nbytes          # read live by every parser, writer and the fast path


cdef class RequestParser:
    # Input buffer: a bytearray that is replaced, never resized, so a view
    # handed out by get_buffer() stays valid even if the parser grows.
    cdef bytearray _buf
    cdef object _view               # memoryview over _buf
    cdef char *_data
    cdef Py_ssize_t _cap
    cdef Py_ssize_t _start          # first unparsed byte
    cdef Py_ssize_t _end            # end of received bytes
    cdef Py_ssize_t _need           # bytes needed from _start before parsing can move on
    cdef Py_ssize_t _scanned        # bytes of the current header line known to hold no terminator
    cdef bint _blocked              # a NUL precedes the terminator: the line can never complete

    # Command being assembled
    cdef list _args                 # None between commands
    cdef long long _remaining       # bulk arguments still expected
    cdef long long _bulk_len        # length of the small bulk being received, -1 = header expected
    cdef Py_ssize_t _skip           # bytes to drop before parsing (the CRLF after a large argument)
    cdef list _handed_back          # a complete command the fast path did not run: next_command() gives it first
    cdef Py_ssize_t _peeked_end     # where the command peek_command() read ends

    # Large argument received into a caller-supplied target
    cdef Py_ssize_t _target_len     # 0 = none
    cdef Py_ssize_t _target_fill    # bytes read into the target: _target_len, or 2 more for its CRLF
    cdef Py_ssize_t _filled
    cdef bint _target_set
    cdef Py_buffer _target_buf
    cdef object _target_view
    cdef object _token
    cdef bint _large_in_command     # the command being assembled has a large argument
    cdef bint _large_last           # the last command had one: reads ask for READ_SIZE

    # Sticky error (the connection is dead after one): class and text, raised
    # afresh each time so no traceback ties the parser into a cycle.
    cdef object _error_class
    cdef str _error_text
    cdef bint _closed               # drop_target() was called: input is ignored from then on
    cdef long long _max_bulk
    cdef long long _query_limit
    cdef LargeValueThreshold _threshold   # the server's, shared
    cdef bint _authenticated

    cdef int _new_buffer(self, Py_ssize_t capacity) except -1
    cdef bint _receiving_target(self) noexcept
    cdef int _make_room(self) except -1
    cdef int _finish_target(self) except -1
    cdef void _release_target(self) noexcept
    cpdef object next_command(self)
    cdef int hand_back(self, list argv) except -1
    cdef Py_ssize_t peek_command(self, ArgSpan *args, Py_ssize_t max_args) noexcept
    cdef Py_ssize_t peek_ahead(self, Py_ssize_t *skip, ArgSpan *args, Py_ssize_t max_args) noexcept
    cdef void consume_peeked(self) noexcept
    cdef void consume(self, Py_ssize_t length) noexcept
    cdef bint _peekable(self) noexcept
    cdef const char *_peek_at(self, const char *p, ArgSpan *args, Py_ssize_t max_args,
                              Py_ssize_t *argc) noexcept
    cdef int _fail(self, str message) except -1
    cdef Py_ssize_t _find_line(self, char terminator) noexcept
    cdef object _advance(self)


cdef class ReplyWriter:
    cdef char *_buf
    cdef Py_ssize_t _len
    cdef Py_ssize_t _cap
    cdef list _large                # [(position in _buf, object, nbytes)]: sent by reference before _buf[position:]
    cdef Py_ssize_t _large_bytes
    cdef list _tokens               # tokens of the pins entry() took, not yet handed over
    cdef int _resp
    cdef LargeValueThreshold _threshold   # the server's, shared
    cdef size_t _epoch              # bumped by flush() and discard(): older marks are stale

    cdef char *_reserve(self, Py_ssize_t n) except NULL
    cdef int _put(self, const char *data, Py_ssize_t n) except -1
    cdef int _header(self, char kind, long long n) except -1
    cdef int _queue(self, object obj, Py_ssize_t n) except -1
    cdef int _null(self) except -1
    cdef int _copied_bulk(self, const char *data, Py_ssize_t n) except -1
    cdef int _bulk_from(self, object data) except -1
    cdef int _entry_bulk(self, entry, view, bytes head, bytes tail) except -1
    cdef int _by_reference(self, object token, object view, Py_ssize_t n, bytes head, bytes tail) except -1
