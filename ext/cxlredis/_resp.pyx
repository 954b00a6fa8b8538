# cython: language_level=3
"""RESP request parsing and reply encoding (of the store it knows only the view, pin
and arena of a keyspace, in ReplyWriter.entry).

RequestParser turns the bytes a client sends into argument lists with the
exact acceptance rules and error texts of Redis 7.0; a large bulk argument is
received straight into a buffer the connection supplies (an arena slot), so
it is never copied through a Python bytes object.

ReplyWriter encodes replies for RESP2 or RESP3 into one growing buffer and
queues large values by reference, to be handed to the transport in order. It
alone decides whether arena bytes are copied or sent by reference (pinned):
handlers give it an entry of a keyspace (ReplyWriter.entry), never a view.

Both read one LargeValueThreshold, shared by every connection of a server, so
CONFIG SET large-value-threshold reaches every parser, writer and the fast
path at once.
"""
from cpython.buffer cimport Py_buffer, PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_WRITABLE
from cpython.bytearray cimport PyByteArray_FromStringAndSize, PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from libc.math cimport isinf
from libc.stdio cimport snprintf
from libc.string cimport memchr, memcpy, memmove

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL

cdef extern from "string2ll.h":
    bint cx_string2ll(const char *s, size_t n, long long *out) noexcept nogil

cdef extern from "sdsrepr.h":
    void cx_repr_init()
    Py_ssize_t cx_repr_size(const unsigned char *s, Py_ssize_t n) noexcept
    char *cx_repr_write(char *out, const unsigned char *s, Py_ssize_t n) noexcept

cx_repr_init()


class ProtocolError(Exception):
    """The client broke the protocol; str(self) is Redis's text without '-ERR '.

    Redis replies `-ERR <text>` and closes the connection after executing the
    complete commands that preceded the bad one.
    """


class QueryBufferLimit(Exception):
    """The client's unparsed input exceeds client-query-buffer-limit.

    Redis closes such a client without a reply.
    """


cdef enum:
    # Redis's PROTO_INLINE_MAX_SIZE: how much may be buffered without finding
    # the end of an inline request or of a count line.
    LINE_MAX = 65536
    INITIAL_BUFFER = 65536
    # Redis's PROTO_IOBUF_LEN: what a read asks for after a command with a large argument
    # (unless the element being parsed needs more), so the next one's header comes with
    # at most this much of its value, which is then copied into its target; the rest is
    # received there. After other commands a read asks for the whole buffer: a pipeline
    # of small commands is then parsed from fewer reads.
    READ_SIZE = 16384
    # Reads smaller than this compact the buffer first rather than trickle in.
    MIN_READ = 4096
    MAX_MULTIBULK = 2147483647          # INT_MAX, Redis 7.0's cap on a multibulk count
    # Before authentication Redis refuses commands with more arguments or
    # longer arguments than these (CVE-2021-32675).
    UNAUTH_MAX_ARGS = 10
    UNAUTH_MAX_BULK = 16384
    WRITER_INITIAL = 16384
    WRITER_KEEP = 1048576               # a writer buffer grown beyond this is freed after a flush


cdef inline bint _is_space(char c) noexcept:
    # C isspace() in the "C" locale
    return c == b' ' or c == b'\t' or c == b'\n' or c == b'\v' or c == b'\f' or c == b'\r'


cdef inline int _hex_value(char c) noexcept:
    if b'0' <= c <= b'9':
        return c - 48
    if b'a' <= c <= b'f':
        return c - 87
    if b'A' <= c <= b'F':
        return c - 55
    return -1


cdef list _split_inline(const char *line, Py_ssize_t n):
    """Split an inline request like Redis's sdssplitargs; None if a quote is
    unbalanced or a closing quote is not followed by a space."""
    cdef list argv = []
    cdef bytearray scratch = PyByteArray_FromStringAndSize(NULL, n)
    cdef char *out = PyByteArray_AS_STRING(scratch)
    cdef Py_ssize_t i = 0, length
    cdef char c
    cdef bint in_double, in_single
    while True:
        while i < n and _is_space(line[i]):
            i += 1
        if i == n:
            return argv
        length = 0
        in_double = in_single = False
        while True:
            if in_double:
                if i == n:
                    return None
                c = line[i]
                if (c == b'\\' and i + 3 < n and line[i + 1] == b'x'
                        and _hex_value(line[i + 2]) >= 0 and _hex_value(line[i + 3]) >= 0):
                    out[length] = <char>(_hex_value(line[i + 2]) * 16 + _hex_value(line[i + 3]))
                    i += 4
                elif c == b'\\' and i + 1 < n:
                    c = line[i + 1]
                    if c == b'n':
                        c = b'\n'
                    elif c == b'r':
                        c = b'\r'
                    elif c == b't':
                        c = b'\t'
                    elif c == b'b':
                        c = b'\b'
                    elif c == b'a':
                        c = b'\a'
                    out[length] = c
                    i += 2
                elif c == b'"':
                    if i + 1 < n and not _is_space(line[i + 1]):
                        return None
                    i += 1
                    break
                else:
                    out[length] = c
                    i += 1
                length += 1
            elif in_single:
                if i == n:
                    return None
                c = line[i]
                if c == b'\\' and i + 1 < n and line[i + 1] == b"'":
                    out[length] = b"'"
                    i += 2
                elif c == b"'":
                    if i + 1 < n and not _is_space(line[i + 1]):
                        return None
                    i += 1
                    break
                else:
                    out[length] = c
                    i += 1
                length += 1
            else:
                if i == n:
                    break
                c = line[i]
                i += 1
                if c == b' ' or c == b'\n' or c == b'\r' or c == b'\t':
                    break
                if c == b'"':
                    in_double = True
                elif c == b"'":
                    in_single = True
                else:
                    out[length] = c
                    length += 1
        argv.append(PyBytes_FromStringAndSize(out, length))


cdef inline const char *_count_line(const char *p, const char *end, long long *out) noexcept:
    """A count as peek_command accepts one: 1 to 18 digits, no leading zero but in "0",
    then CRLF; where the line ends, or NULL (next_command() reads it instead)."""
    cdef long long value = 0
    cdef const char *first = p
    while p < end and c'0' <= p[0] <= c'9' and p - first < 18:
        value = value * 10 + (p[0] - c'0')
        p += 1
    if p == first or (first[0] == c'0' and p - first > 1) or end - p < 2 or p[0] != c'\r' or p[1] != c'\n':
        return NULL
    out[0] = value
    return p + 2


def receive_buffer(Py_ssize_t n):
    """A bytearray of n bytes for a large argument to be received into. Its memory is
    not initialised, so no page is touched (and counted in RSS) before its bytes
    arrive: a client declaring a huge bulk length costs nothing until it sends it.
    The parser hands the argument out only once every byte has been received."""
    return PyByteArray_FromStringAndSize(NULL, n)


def quoted(data):
    """Redis's sdscatrepr of a byte string (any buffer): double quotes, \\n \\r \\t \\a
    \\b \\\\ \\" escapes, \\xhh for every other byte outside printable ASCII."""
    cdef Py_buffer view
    cdef bytes text
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        text = PyBytes_FromStringAndSize(NULL, cx_repr_size(<const unsigned char *>view.buf, view.len))
        cx_repr_write(PyBytes_AS_STRING(text), <const unsigned char *>view.buf, view.len)
        return text
    finally:
        PyBuffer_Release(&view)


def monitor_line(bytes head, list args):
    """A MONITOR line: head, then each argument (any buffer) quoted by sdscatrepr after a
    space, then CRLF; complete however long the arguments are, as Redis 7.0 writes it."""
    cdef Py_ssize_t count = len(args), i, size = PyBytes_GET_SIZE(head) + 2
    cdef Py_buffer *views = <Py_buffer *>PyMem_Malloc(max(count, 1) * sizeof(Py_buffer))
    cdef Py_ssize_t opened = 0
    cdef bytes line
    cdef char *out
    if views == NULL:
        raise MemoryError()
    try:
        for i in range(count):
            PyObject_GetBuffer(args[i], &views[i], PyBUF_SIMPLE)
            opened += 1
            size += 1 + cx_repr_size(<const unsigned char *>views[i].buf, views[i].len)
        line = PyBytes_FromStringAndSize(NULL, size)
        out = PyBytes_AS_STRING(line)
        memcpy(out, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
        out += PyBytes_GET_SIZE(head)
        for i in range(count):
            out[0] = b' '
            out = cx_repr_write(out + 1, <const unsigned char *>views[i].buf, views[i].len)
        out[0] = b'\r'
        out[1] = b'\n'
        return line
    finally:
        for i in range(opened):
            PyBuffer_Release(&views[i])
        PyMem_Free(views)


def split_args(data):
    """Redis's sdssplitargs over bytes (inline requests, and config lines too):
    the arguments, or None when a quote is unbalanced."""
    cdef bytes raw = bytes(data)
    return _split_inline(raw, len(raw))


cdef class LargeValueThreshold:
    """large-value-threshold, one object per server that every parser, reply writer and
    the fast path read when they decide (the server sets `value` on CONFIG SET): an
    argument this long is received into a target, a value this long is sent by reference."""

    def __init__(self, Py_ssize_t value):
        self.value = value

    @property
    def value(self):
        return self.nbytes

    @value.setter
    def value(self, Py_ssize_t nbytes):
        if nbytes < 1:
            raise ValueError("large-value-threshold must be positive")
        self.nbytes = nbytes


cdef LargeValueThreshold _shared_threshold(object threshold):
    """threshold itself when it is one, else a threshold of its own (tests, tools)."""
    if isinstance(threshold, LargeValueThreshold):
        return threshold
    return LargeValueThreshold(threshold)


cdef str _printable(char c):
    """The byte as Redis's error reply carries it: CR/LF become spaces, other
    bytes pass through (non-ASCII as surrogate escapes, see ReplyWriter.error)."""
    if c == b'\r' or c == b'\n':
        return " "
    return PyBytes_FromStringAndSize(&c, 1).decode("utf-8", "surrogateescape")


cdef class RequestParser:
    """Incremental RESP request parser owning a connection's input buffer.

    Drive it from an asyncio.BufferedProtocol: get_buffer() / buffer_updated()
    feed it, next_command() is called in a loop until it returns None. When it
    returns None with wants_target > 0, a large argument is waiting: give it a
    writable buffer of exactly that size with set_target().
    """


    def __init__(self, long long proto_max_bulk_len=512 * 1024 * 1024,
                 large_arg_threshold=65536,
                 long long query_buffer_limit=1024 * 1024 * 1024):
        """large_arg_threshold: the server's LargeValueThreshold, or a number of bytes."""
        self._max_bulk = proto_max_bulk_len
        self._threshold = _shared_threshold(large_arg_threshold)
        self._query_limit = query_buffer_limit
        self._authenticated = True
        self._new_buffer(INITIAL_BUFFER)
        self._args = None
        self._bulk_len = -1
        self._need = 1

    def __dealloc__(self):
        if self._target_set:
            PyBuffer_Release(&self._target_buf)

    cdef int _new_buffer(self, Py_ssize_t capacity) except -1:
        """Move the unparsed bytes to the front of a fresh buffer."""
        cdef bytearray fresh = PyByteArray_FromStringAndSize(NULL, capacity)
        cdef Py_ssize_t unparsed = self._end - self._start
        if unparsed:
            memcpy(PyByteArray_AS_STRING(fresh), self._data + self._start, unparsed)
        self._buf = fresh
        self._view = memoryview(fresh)
        self._data = PyByteArray_AS_STRING(fresh)
        self._cap = capacity
        self._start = 0
        self._end = unparsed
        return 0

    # ---- configuration -------------------------------------------------------

    @property
    def proto_max_bulk_len(self):
        return self._max_bulk

    @proto_max_bulk_len.setter
    def proto_max_bulk_len(self, long long value):
        self._max_bulk = value

    @property
    def query_buffer_limit(self):
        return self._query_limit

    @query_buffer_limit.setter
    def query_buffer_limit(self, long long value):
        self._query_limit = value

    @property
    def large_arg_threshold(self):
        return self._threshold.nbytes

    @property
    def authenticated(self):
        """False while the client must still authenticate: Redis then refuses
        more than 10 arguments or bulks longer than 16384 bytes."""
        return self._authenticated

    @authenticated.setter
    def authenticated(self, bint value):
        self._authenticated = value

    # ---- state ---------------------------------------------------------------

    @property
    def buffered(self):
        """Bytes received but not yet returned as arguments, including the part
        of a large argument already in its target (Redis's querybuf length)."""
        return self._end - self._start + (self._filled if self._target_set else 0)

    @property
    def free(self):
        """Room left in the input buffer before it must grow (Redis's qbuf-free)."""
        return self._cap - self._end

    @property
    def wants_target(self):
        return 0 if self._target_set else self._target_len

    @property
    def filling_target(self):
        """A large argument's target is set and not yet full: until it is, every byte read
        goes there and next_command() has nothing to give."""
        return self._target_set

    @property
    def pending_args(self):
        """Arguments parsed so far of the command being assembled (do not mutate)."""
        return [] if self._args is None else self._args

    # ---- BufferedProtocol side ---------------------------------------------

    def get_buffer(self, Py_ssize_t sizehint=-1):
        if self._receiving_target():
            return self._target_view[self._filled:]
        if self._target_len and self._error_class is None:
            raise RuntimeError("a large argument waits for set_target()")
        self._make_room()
        if not self._large_last:
            return self._view[self._end:]
        return self._view[self._end:min(self._cap,
                                        self._end + max(READ_SIZE, self._need - (self._end - self._start)))]

    def buffer_updated(self, Py_ssize_t nbytes):
        """Take nbytes more of input (in the buffer get_buffer() handed out); returns
        False while they only went on filling a large argument's target that is not
        complete yet (next_command() has nothing new to give), else True."""
        cdef Py_ssize_t held
        if self._receiving_target():
            if nbytes < 0 or nbytes > self._target_fill - self._filled:
                raise ValueError("buffer_updated() beyond the buffer handed out")
            self._filled += nbytes
        else:
            if nbytes < 0 or nbytes > self._cap - self._end:
                raise ValueError("buffer_updated() beyond the buffer handed out")
            self._end += nbytes
        if self._error_class is not None:
            return True
        # Redis checks right after reading, before parsing anything: the
        # next next_command() raises, so nothing from this read runs.
        held = self._end - self._start + (self._filled if self._target_set else 0)
        if held > self._query_limit:
            self._error_class = QueryBufferLimit
            self._error_text = ("query buffer of %d bytes exceeds client-query-buffer-limit %d"
                                % (held, self._query_limit))
        elif self._target_set:
            if self._filled < self._target_fill:
                return False
            self._finish_target()
        return True

    cdef bint _receiving_target(self) noexcept:
        """Input goes into the large argument's target, not the scratch buffer. After an
        error the connection is closing: bytes still read go to the (emptied) scratch
        buffer and are ignored, and the target keeps what it had for drop_target()."""
        return self._target_set and self._error_class is None

    cdef int _make_room(self) except -1:
        cdef Py_ssize_t unparsed = self._end - self._start
        if self._error_class is not None or self._closed:
            # The connection is closing: keep accepting bytes, ignore them.
            self._start = self._end = 0
            return 0
        if unparsed == 0:
            self._start = self._end = 0
        if self._need > self._cap:
            self._new_buffer(max(self._need, 2 * self._cap))
        elif unparsed == 0:
            if self._cap > INITIAL_BUFFER and self._need <= INITIAL_BUFFER:
                self._new_buffer(INITIAL_BUFFER)        # idle again: give memory back
        elif self._start and (self._cap - self._start < self._need
                              or self._cap - self._end < MIN_READ):
            memmove(self._data, self._data + self._start, unparsed)
            self._start = 0
            self._end = unparsed
        return 0

    # ---- large arguments -----------------------------------------------------

    def set_target(self, buf, token):
        """Receive the waiting large argument into buf (writable, exactly
        wants_target bytes); token stands in for it in the argument list. A buf of
        2 bytes more takes the CRLF after the argument too (unchecked, as Redis does):
        the read that fills the argument then ends the command, where the CRLF alone
        would otherwise take a read of its own."""
        cdef Py_ssize_t n
        if self._target_len == 0 or self._target_set:
            raise RuntimeError("no large argument waits for a target")
        view = memoryview(buf)
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")
        # The pointer comes from buf itself, not from the view handed out
        # by get_buffer(), so that view never has exports of its own.
        PyObject_GetBuffer(buf, &self._target_buf, PyBUF_WRITABLE)
        if self._target_buf.len != self._target_len and self._target_buf.len != self._target_len + 2:
            n = self._target_buf.len
            PyBuffer_Release(&self._target_buf)
            raise ValueError("target has %d bytes, the argument %d" % (n, self._target_len))
        self._target_fill = self._target_buf.len
        self._target_set = True
        self._target_view = view
        self._token = token
        self._large_in_command = True
        n = min(self._end - self._start, self._target_fill)
        memcpy(self._target_buf.buf, self._data + self._start, n)
        self._start += n
        self._filled = n
        if n == self._target_fill:
            self._finish_target()

    def drop_target(self):
        """The connection is closing: abandon the unfinished large argument
        and ignore all input from now on (next_command() returns None).
        Returns the abandoned argument's token (None if none was set), so the
        caller can release its target; pending_args stays readable for the
        tokens of the command's completed large arguments."""
        token = self._token
        self._release_target()
        self._closed = True
        self._start = self._end = 0
        return token

    cdef int _finish_target(self) except -1:
        self._args.append(self._token)
        self._remaining -= 1
        # the CRLF after the argument (not checked, as Redis), unless it came in the target
        self._skip = 2 if self._target_fill == self._target_len else 0
        self._release_target()
        return 0

    cdef void _release_target(self) noexcept:
        if self._target_set:
            PyBuffer_Release(&self._target_buf)
            self._target_set = False
        self._target_view = None
        self._token = None
        self._target_len = self._target_fill = 0
        self._filled = 0

    # ---- parsing -------------------------------------------------------------

    cpdef object next_command(self):
        """The next complete command's arguments, or None when more input (or
        a target, see wants_target) is needed. Raises ProtocolError, or
        QueryBufferLimit when the last read went over the limit."""
        cdef list argv = self._handed_back
        if argv is not None:
            self._handed_back = None
            return argv
        if self._error_class is not None:
            raise self._error_class(self._error_text)
        if self._closed:
            return None
        return self._advance()

    cdef int hand_back(self, list argv) except -1:
        """Return a command next_command() gave out: the next call gives it again."""
        self._handed_back = argv
        return 0

    cdef Py_ssize_t peek_command(self, ArgSpan *args, Py_ssize_t max_args) noexcept:
        """The arguments of the next command where they lie in the buffer, for the fast
        path to run it without building them: their count, or 0 where next_command()
        must read it instead (anything but a whole multibulk command of 1 to max_args
        small arguments, its counts in plain digits). consume_peeked() moves past it;
        the spans hold until the next read into the buffer."""
        cdef Py_ssize_t argc
        cdef const char *end
        if not self._peekable():
            return 0
        end = self._peek_at(self._data + self._start, args, max_args, &argc)
        if end == NULL:
            return 0
        self._peeked_end = end - self._data
        return argc

    cdef Py_ssize_t peek_ahead(self, Py_ssize_t *skip, ArgSpan *args, Py_ssize_t max_args) noexcept:
        """peek_command() for the command that starts *skip bytes after the next one (0:
        the next one), moving *skip past it: a look further down a pipeline, which consumes
        nothing."""
        cdef Py_ssize_t argc
        cdef const char *end
        if not self._peekable():
            return 0
        end = self._peek_at(self._data + self._start + skip[0], args, max_args, &argc)
        if end == NULL:
            return 0
        skip[0] = end - (self._data + self._start)
        return argc

    cdef bint _peekable(self) noexcept:
        return not (self._handed_back is not None or self._error_class is not None or self._closed
                    or not self._authenticated or self._args is not None or self._target_len
                    or self._skip or self._blocked)

    cdef const char *_peek_at(self, const char *p, ArgSpan *args, Py_ssize_t max_args,
                              Py_ssize_t *argc) noexcept:
        """Read the whole command at p as peek_command() does: where it ends (its count of
        arguments in argc, they in args), or NULL."""
        cdef const char *end = self._data + self._end
        cdef long long count, n
        cdef Py_ssize_t i
        if p == end or p[0] != b'*':
            return NULL
        p = _count_line(p + 1, end, &count)
        if p == NULL or count < 1 or count > max_args:
            return NULL
        for i in range(count):
            if p == end or p[0] != b'$':
                return NULL
            p = _count_line(p + 1, end, &n)
            if p == NULL or n >= self._threshold.nbytes or n > self._max_bulk or end - p < n + 2:
                return NULL
            args[i].ptr = p
            args[i].len = n
            p += n + 2              # the CRLF is skipped unchecked, as _advance does
        argc[0] = count
        return p

    cdef void consume_peeked(self) noexcept:
        """Move past the command peek_command() read."""
        self.consume(self._peeked_end - self._start)

    cdef void consume(self, Py_ssize_t length) noexcept:
        """Move past the next command, length bytes long, as peek_ahead() read it."""
        self._start += length
        self._scanned = 0
        self._large_last = False

    cdef int _fail(self, str message) except -1:
        self._error_class = ProtocolError
        self._error_text = "Protocol error: " + message
        raise ProtocolError(self._error_text)

    cdef Py_ssize_t _find_line(self, char terminator) noexcept:
        """Offset from _start of the line terminator, -1 if not (yet) found.
        Like Redis's strchr() on its query buffer, a NUL byte before the
        terminator hides it for good."""
        cdef const char *base = self._data + self._start
        cdef Py_ssize_t unparsed = self._end - self._start
        cdef const char *hit
        cdef Py_ssize_t limit
        if self._blocked:
            return -1
        hit = <const char *>memchr(base + self._scanned, terminator, unparsed - self._scanned)
        limit = hit - base if hit != NULL else unparsed
        if memchr(base + self._scanned, 0, limit - self._scanned) != NULL:
            self._blocked = True
            return -1
        self._scanned = limit
        return limit if hit != NULL else -1

    cdef object _advance(self):
        cdef const char *base
        cdef Py_ssize_t unparsed, line, n
        cdef long long length = 0
        cdef list argv
        while True:
            if self._target_len:
                return None
            if self._skip:
                n = min(self._skip, self._end - self._start)
                self._start += n
                self._skip -= n
                if self._skip:
                    self._need = self._skip
                    return None
            if self._args is not None and self._remaining == 0:
                argv = self._args
                self._args = None
                self._large_last, self._large_in_command = self._large_in_command, False
                return argv
            base = self._data + self._start
            unparsed = self._end - self._start

            if self._args is None:
                if unparsed == 0:
                    self._need = 1
                    return None
                if base[0] == b'*':
                    line = self._find_line(b'\r')
                    if line < 0 or line > unparsed - 2:
                        if line < 0 and unparsed > LINE_MAX:
                            self._fail("too big mbulk count string")
                        self._need = unparsed + 1
                        return None
                    if not cx_string2ll(base + 1, line - 1, &length) or length > MAX_MULTIBULK:
                        self._fail("invalid multibulk length")
                    if length > UNAUTH_MAX_ARGS and not self._authenticated:
                        self._fail("unauthenticated multibulk length")
                    self._start += line + 2
                    self._scanned = 0
                    if length > 0:         # *0 and negative counts are ignored
                        self._remaining = length
                        self._args = []
                else:
                    line = self._find_line(b'\n')
                    if line < 0:
                        if unparsed > LINE_MAX:
                            self._fail("too big inline request")
                        self._need = unparsed + 1
                        return None
                    n = line - 1 if line > 0 and base[line - 1] == b'\r' else line
                    argv = _split_inline(base, n)
                    if argv is None:
                        self._fail("unbalanced quotes in request")
                    self._start += line + 1
                    self._scanned = 0
                    if argv:                # blank lines are ignored
                        return argv

            elif self._bulk_len < 0:
                line = self._find_line(b'\r')
                if line < 0 or line > unparsed - 2:
                    if line < 0 and unparsed > LINE_MAX:
                        self._fail("too big bulk count string")
                    self._need = unparsed + 1
                    return None
                if base[0] != b'$':
                    self._fail("expected '$', got '%s'" % _printable(base[0]))
                if (not cx_string2ll(base + 1, line - 1, &length) or length < 0
                        or length > self._max_bulk):
                    self._fail("invalid bulk length")
                if length > UNAUTH_MAX_BULK and not self._authenticated:
                    self._fail("unauthenticated bulk length")
                self._start += line + 2
                self._scanned = 0
                # decided once per argument: a later CONFIG SET does not move it
                if length >= self._threshold.nbytes:
                    self._target_len = length
                    return None
                self._bulk_len = length

            else:
                n = self._bulk_len
                if unparsed < n + 2:
                    self._need = n + 2
                    return None
                self._args.append(PyBytes_FromStringAndSize(base, n))
                self._start += n + 2    # the CRLF is skipped unchecked, as Redis does
                self._bulk_len = -1
                self._remaining -= 1


# ---- replies ------------------------------------------------------------------

cdef inline Py_ssize_t _format_ll(char *out, long long value) noexcept:
    cdef char digits[24]
    cdef Py_ssize_t i = 24
    cdef unsigned long long u
    if value < 0:
        u = <unsigned long long>(-(value + 1)) + 1
    else:
        u = <unsigned long long>value
    while True:
        i -= 1
        digits[i] = <char>(48 + u % 10)
        u //= 10
        if u == 0:
            break
    if value < 0:
        i -= 1
        digits[i] = b'-'
    memcpy(out, digits + i, 24 - i)
    return 24 - i


def fan_out(list writers, long long parts, bytes body):
    """Append one push of `parts` elements, encoded already as body, to every writer (an
    array header on a RESP2 connection): Pub/Sub's delivery of one PUBLISH. A large body
    goes by reference, so the subscribers of a big message share its one copy."""
    cdef ReplyWriter writer
    cdef Py_ssize_t size = PyBytes_GET_SIZE(body)
    for writer in writers:
        writer._header(b'>' if writer._resp == 3 else b'*', parts)
        if size >= writer._threshold.nbytes:
            writer._queue(body, size)
        else:
            writer._put(PyBytes_AS_STRING(body), size)


cdef class ReplyWriter:
    """Encodes replies for one connection (RESP2 or RESP3) until flush().

    What it holds by reference until flush() must not change meanwhile: a bytes
    object (immutable), or an arena entry's bytes it pinned itself (entry()). Any
    other buffer is copied, whatever its size: only entry() knows how to keep
    arena memory from being reused while the transport still sends it.
    """


    def __cinit__(self):
        self._buf = <char *>PyMem_Malloc(WRITER_INITIAL)
        if self._buf == NULL:
            raise MemoryError()
        self._cap = WRITER_INITIAL
        self._large = []
        self._tokens = []

    def __init__(self, int protocol=2, large_threshold=65536):
        """large_threshold: the server's LargeValueThreshold, or a number of bytes."""
        self.protocol = protocol
        self._threshold = _shared_threshold(large_threshold)

    def __dealloc__(self):
        PyMem_Free(self._buf)

    @property
    def protocol(self):
        return self._resp

    @protocol.setter
    def protocol(self, int value):
        if value != 2 and value != 3:
            raise ValueError("protocol must be 2 or 3")
        self._resp = value

    @property
    def large_threshold(self):
        return self._threshold.nbytes

    @property
    def pending(self):
        return self._len + self._large_bytes

    # ---- buffer primitives ---------------------------------------------------

    cdef char *_reserve(self, Py_ssize_t n) except NULL:
        """Room for n more bytes at the end of the buffer."""
        cdef Py_ssize_t capacity
        cdef char *grown
        if self._len + n > self._cap:
            capacity = max(2 * self._cap, self._len + n)
            grown = <char *>PyMem_Realloc(self._buf, capacity)
            if grown == NULL:
                raise MemoryError()
            self._buf = grown
            self._cap = capacity
        return self._buf + self._len

    cdef int _put(self, const char *data, Py_ssize_t n) except -1:
        memcpy(self._reserve(n), data, n)
        self._len += n
        return 0

    cdef int _header(self, char kind, long long n) except -1:
        cdef char *out = self._reserve(24)
        cdef Py_ssize_t size
        out[0] = kind
        size = 1 + _format_ll(out + 1, n)
        out[size] = b'\r'
        out[size + 1] = b'\n'
        self._len += size + 2
        return 0

    cdef int _queue(self, object obj, Py_ssize_t n) except -1:
        self._large.append((self._len, obj, n))
        self._large_bytes += n
        return 0

    cdef int _null(self) except -1:
        if self._resp == 3:
            self._put(b"_\r\n", 3)
        else:
            self._put(b"$-1\r\n", 5)
        return 0

    cdef int _copied_bulk(self, const char *data, Py_ssize_t n) except -1:
        cdef char *out = self._reserve(n + 26)
        cdef Py_ssize_t digits
        out[0] = b'$'
        digits = _format_ll(out + 1, n)
        out[1 + digits] = b'\r'
        out[2 + digits] = b'\n'
        memcpy(out + 3 + digits, data, n)
        out[3 + digits + n] = b'\r'
        out[4 + digits + n] = b'\n'
        self._len += n + 5 + digits
        return 0

    cdef int _bulk_from(self, object data) except -1:
        """A bulk reply of bytes, str or any other buffer: a large bytes object by
        reference, everything else copied (a buffer may be arena memory: see entry())."""
        cdef const char *text
        cdef Py_ssize_t n
        cdef Py_buffer view
        if type(data) is bytes:
            n = PyBytes_GET_SIZE(data)
            if n < self._threshold.nbytes:
                return self._copied_bulk(PyBytes_AS_STRING(data), n)
        elif isinstance(data, str):
            text = PyUnicode_AsUTF8AndSize(data, &n)
            if n < self._threshold.nbytes:
                return self._copied_bulk(text, n)
            data = data.encode()
        else:
            PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
            try:
                return self._copied_bulk(<const char *>view.buf, view.len)
            finally:
                PyBuffer_Release(&view)
        self._header(b'$', n)
        self._queue(data, n)
        self._put(b"\r\n", 2)
        return 0

    # ---- replies -------------------------------------------------------------

    def ok(self):
        self._put(b"+OK\r\n", 5)

    def simple(self, s):
        cdef bytes data = s.encode() if isinstance(s, str) else bytes(s)
        self._put(b"+", 1)
        self._put(data, len(data))
        self._put(b"\r\n", 2)

    def error(self, s):
        """-s; CR and LF inside become spaces so the reply stays one line."""
        cdef bytes data = s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)
        cdef Py_ssize_t i, n = len(data)
        cdef char *out = self._reserve(n + 3)
        cdef const char *src = data
        out[0] = b'-'
        for i in range(n):
            out[i + 1] = b' ' if src[i] == b'\r' or src[i] == b'\n' else src[i]
        out[n + 1] = b'\r'
        out[n + 2] = b'\n'
        self._len += n + 3

    def integer(self, long long n):
        self._header(b':', n)

    def bulk(self, data):
        self._bulk_from(data)

    def entry(self, entry, Py_ssize_t start=0, Py_ssize_t stop=-1):
        """A bulk reply of the value of `entry` (what Keyspace.find found), or of its
        bytes [start, stop) (stop -1: to the end). The one place that chooses between
        copying arena bytes and sending them by reference, reading the threshold as it
        is now: below it they are copied here; at or above it the entry is pinned and
        its bytes queued, and the pin's token (arena, offset) comes back from the flush()
        that hands them over (or from rollback() / discard()), for the caller to unpin."""
        view = entry.view()
        if start or stop >= 0:
            view = view[start:stop] if stop >= 0 else view[start:]
        self._entry_bulk(entry, view, b"", b"")

    def framed_entry(self, bytes head, entry, bytes tail):
        """One bulk reply of head + the value of `entry` + tail (a DUMP payload: the
        value between its RDB header and footer), the value copied or sent by reference
        as entry() decides."""
        self._entry_bulk(entry, entry.view(), head, tail)

    cdef int _entry_bulk(self, entry, view, bytes head, bytes tail) except -1:
        cdef Py_buffer info
        cdef Py_ssize_t n, framing = len(head) + len(tail)
        PyObject_GetBuffer(view, &info, PyBUF_SIMPLE)
        n = info.len
        try:
            if n < self._threshold.nbytes:
                if not framing:
                    return self._copied_bulk(<const char *>info.buf, n)
                self._header(b'$', n + framing)
                self._put(head, len(head))
                self._put(<const char *>info.buf, n)
                self._put(tail, len(tail))
                self._put(b"\r\n", 2)
                return 0
        finally:
            PyBuffer_Release(&info)
        # the token names the arena: it unpins even after the tenant is gone
        return self._by_reference(entry.pin(), view, n, head, tail)

    cdef int _by_reference(self, object token, object view, Py_ssize_t n, bytes head, bytes tail) except -1:
        """A bulk reply of head + the n arena bytes of view + tail, those bytes sent by
        reference: token is the pin that keeps them, handed back by the flush() that sends
        them (or by rollback() / discard())."""
        self._tokens.append(token)
        self._header(b'$', n + len(head) + len(tail))
        self._put(head, len(head))
        self._queue(view, n)
        self._put(tail, len(tail))
        self._put(b"\r\n", 2)
        return 0

    def null(self):
        self._null()

    def null_array(self):
        if self._resp == 3:
            self._put(b"_\r\n", 3)
        else:
            self._put(b"*-1\r\n", 5)

    def array(self, long long n):
        self._header(b'*', n)

    def map(self, long long n):
        if self._resp == 3:
            self._header(b'%', n)
        else:
            self._header(b'*', 2 * n)

    def set(self, long long n):
        self._header(b'~' if self._resp == 3 else b'*', n)

    def push(self, long long n):
        self._header(b'>' if self._resp == 3 else b'*', n)

    def double(self, double x):
        """Redis 7.0's addReplyDouble: "%.17g", infinities spelled inf/-inf."""
        cdef char text[64]
        cdef int n
        if isinf(x):
            n = snprintf(text, sizeof(text), "inf" if x > 0 else "-inf")
        else:
            n = snprintf(text, sizeof(text), "%.17g", x)
        if self._resp == 3:
            self._put(b",", 1)
            self._put(text, n)
            self._put(b"\r\n", 2)
        else:
            self._header(b'$', n)
            self._put(text, n)
            self._put(b"\r\n", 2)

    def boolean(self, b):
        if self._resp == 3:
            self._put(b"#t\r\n" if b else b"#f\r\n", 4)
        else:
            self._put(b":1\r\n" if b else b":0\r\n", 4)

    def verbatim(self, text, fmt="txt"):
        """RESP3 verbatim string (=len, "fmt:" + text); RESP2 a bulk string."""
        cdef bytes data, kind
        if self._resp == 2:
            self._bulk_from(text)
            return
        data = text.encode() if isinstance(text, str) else bytes(text)
        kind = fmt.encode() if isinstance(fmt, str) else bytes(fmt)
        if len(kind) != 3:
            raise ValueError("a verbatim format has 3 characters")
        self._header(b'=', len(data) + 4)
        self._put(kind, 3)
        self._put(b":", 1)
        self._put(data, len(data))
        self._put(b"\r\n", 2)

    def bulk_array(self, items):
        if not isinstance(items, (list, tuple)):
            items = list(items)
        self._header(b'*', len(items))
        for item in items:
            if item is None:
                self._null()
            else:
                self._bulk_from(item)

    def raw(self, data):
        """data as it is; a large bytes object (a MONITOR line) by reference."""
        cdef Py_buffer view
        if type(data) is bytes and PyBytes_GET_SIZE(data) >= self._threshold.nbytes:
            self._queue(data, PyBytes_GET_SIZE(data))
            return
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            self._put(<const char *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    # ---- rollback and flush --------------------------------------------------

    def mark(self):
        """A point to roll back to (valid until the next flush)."""
        return (self._epoch, self._len, len(self._large), len(self._tokens))

    def rollback(self, mark):
        """Drop everything written since mark; returns the tokens of the
        pins entry() took for what was dropped, for the caller to unpin."""
        epoch, length, large, tokens = mark
        if epoch != self._epoch:
            raise ValueError("mark predates the last flush")
        for item in self._large[large:]:
            self._large_bytes -= item[2]
        del self._large[large:]
        dropped = self._tokens[tokens:]
        del self._tokens[tokens:]
        self._len = length
        return dropped

    def discard(self):
        """Drop everything pending (connection lost); returns all tokens."""
        dropped = self.rollback((self._epoch, 0, 0, 0))
        self._epoch += 1
        return dropped

    def flush(self, transport):
        """Hand everything to transport.writelines() in order and reset;
        returns the tokens of the pins entry() took for what it handed over."""
        cdef list parts
        cdef Py_ssize_t previous = 0, position
        if self._len == 0 and not self._large:
            return []
        parts = []
        for position, obj, _ in self._large:
            if position > previous:
                parts.append(PyBytes_FromStringAndSize(self._buf + previous, position - previous))
            parts.append(obj)
            previous = position
        if self._len > previous:
            parts.append(PyBytes_FromStringAndSize(self._buf + previous, self._len - previous))
        transport.writelines(parts)
        tokens = self._tokens
        self._tokens = []
        self._large = []
        self._large_bytes = 0
        self._len = 0
        self._epoch += 1
        if self._cap > WRITER_KEEP:
            PyMem_Free(self._buf)
            self._buf = <char *>PyMem_Malloc(WRITER_INITIAL)
            self._cap = WRITER_INITIAL
            if self._buf == NULL:
                self._cap = 0
                raise MemoryError()
        return tokens
