# cython: language_level=3
"""The connection's fast path: the commands KV clients send most run in C.

A pipeline of small GETs and SETs spends most of its time in the general
Python path (spec lookup, ACL and MULTI checks, timing, handler frames) rather
than in the work itself. When a connection is in the common state -
authenticated as an unrestricted user, outside MULTI, replies on, nobody
MONITORing - `serve` runs the `GET key`, `SET key value`, `EXISTS key...`,
`DEL key...`, `TTL key`, `PTTL key`, `MGET key...`, `INCR key`, `DECR key`,
`INCRBY key n`, `DECRBY key n`, `EXPIRE key seconds`, `HGET key field` and
`HSET key field value` commands at the head of its input here: the same arena calls,
replies, eviction check and commandstats (calls, microseconds, latency buckets) as the
general path, which still runs everything else, and every command that would answer
with an error (WRONGTYPE, not an integer, overflow, OOM): nothing is changed or counted
before it is handed back. Values that arrived in arena slots, and values
large enough to be sent by reference, take the general path too: for them the
per-command cost does not matter. In cluster mode only keys of the slots the node
serves as they are (its own, stable, cluster up: ClusterState.serve_here) are run
here, and EXISTS, DEL and MGET of one key only (several may be a CROSSSLOT); every other
key goes to the general path for its redirect. While some client tracks keys
(CLIENT TRACKING), the keys the commands changed are listed for the caller, which
tells the trackers before the replies go out.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.limits cimport LLONG_MAX, LLONG_MIN
from libc.stdint cimport int64_t

from cxlredis._resp cimport ReplyWriter, RequestParser
from cxlredis._store cimport (Arena, Keyspace, delete_key, expire_key, get_string, hash_get, hash_set,
                              incr_string, key_exists, key_ttl_ms, mget_string, set_string, string_fits,
                              under_maxmemory)

cdef extern from "cluster/keyslot.h":
    void cx_crc16_init()
    unsigned int cx_key_slot(const unsigned char *key, size_t len) nogil

cx_crc16_init()

cdef extern from "string2ll.h":
    bint cx_string2ll(const char *s, size_t n, long long *out) noexcept nogil

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec *tp)
    enum: CLOCK_MONOTONIC

# Python's view of the boundary (ext/cxlredis/_fastpath.pxd)
LATENCY_BUCKET_COUNT = LATENCY_BUCKETS
FAST_GET_OP = FAST_GET
FAST_SET_OP = FAST_SET
FAST_EXISTS_OP = FAST_EXISTS
FAST_DEL_OP = FAST_DEL
FAST_TTL_OP = FAST_TTL
FAST_PTTL_OP = FAST_PTTL
FAST_MGET_OP = FAST_MGET
FAST_INCR_OP = FAST_INCR
FAST_DECR_OP = FAST_DECR
FAST_INCRBY_OP = FAST_INCRBY
FAST_DECRBY_OP = FAST_DECRBY
FAST_EXPIRE_OP = FAST_EXPIRE
FAST_HGET_OP = FAST_HGET
FAST_HSET_OP = FAST_HSET


cdef inline int64_t monotonic_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef inline bint is_name(object arg, const char *upper, const char *lower, int n) noexcept:
    """arg spells the n-letter command name in any case."""
    cdef const char *s
    cdef int i
    if type(arg) is not bytes or PyBytes_GET_SIZE(arg) != n:
        return False
    s = PyBytes_AS_STRING(arg)
    for i in range(n):
        if s[i] != upper[i] and s[i] != lower[i]:
            return False
    return True


cdef inline bint all_bytes(list argv, Py_ssize_t first) noexcept:
    """Every argument from `first` on arrived as bytes (not in an arena slot)."""
    cdef Py_ssize_t i
    for i in range(first, PyList_GET_SIZE(argv)):
        if type(<object>PyList_GET_ITEM(argv, i)) is not bytes:
            return False
    return True


cdef inline int op_of(list argv) noexcept:
    cdef Py_ssize_t argc = PyList_GET_SIZE(argv)
    cdef object name = <object>PyList_GET_ITEM(argv, 0)
    cdef int op = NOT_FAST
    if argc == 2 and is_name(name, b"GET", b"get", 3):
        op = FAST_GET
    elif argc == 3 and is_name(name, b"SET", b"set", 3):
        op = FAST_SET
    elif argc >= 2 and is_name(name, b"EXISTS", b"exists", 6):
        op = FAST_EXISTS
    elif argc >= 2 and is_name(name, b"DEL", b"del", 3):
        op = FAST_DEL
    elif argc == 2 and is_name(name, b"TTL", b"ttl", 3):
        op = FAST_TTL
    elif argc == 2 and is_name(name, b"PTTL", b"pttl", 4):
        op = FAST_PTTL
    elif argc >= 2 and is_name(name, b"MGET", b"mget", 4):
        op = FAST_MGET
    elif argc == 2 and is_name(name, b"INCR", b"incr", 4):
        op = FAST_INCR
    elif argc == 2 and is_name(name, b"DECR", b"decr", 4):
        op = FAST_DECR
    elif argc == 3 and is_name(name, b"INCRBY", b"incrby", 6):
        op = FAST_INCRBY
    elif argc == 3 and is_name(name, b"DECRBY", b"decrby", 6):
        op = FAST_DECRBY
    elif argc == 3 and is_name(name, b"EXPIRE", b"expire", 6):
        op = FAST_EXPIRE
    elif argc == 3 and is_name(name, b"HGET", b"hget", 4):
        op = FAST_HGET
    elif argc == 4 and is_name(name, b"HSET", b"hset", 4):
        op = FAST_HSET
    return op if op != NOT_FAST and all_bytes(argv, 1) else NOT_FAST


cdef inline const char *arg_at(list argv, Py_ssize_t i, Py_ssize_t *n) noexcept:
    """The bytes of argv[i] (bytes) and, in n, their length."""
    cdef object arg = <object>PyList_GET_ITEM(argv, i)
    n[0] = PyBytes_GET_SIZE(arg)
    return PyBytes_AS_STRING(arg)


cdef inline bint int_arg(list argv, Py_ssize_t i, long long *out) noexcept:
    """argv[i] (bytes) is an integer as Redis reads one."""
    cdef Py_ssize_t n
    cdef const char *text = arg_at(argv, i, &n)
    return cx_string2ll(text, n, out)


cdef int mget_fits(Keyspace store, int db, list argv, Py_ssize_t max_len) except -1:
    """No key of the MGET holds a string at or above max_len (sent by reference, which
    the general path does)."""
    cdef Py_ssize_t i
    cdef object key
    for i in range(1, PyList_GET_SIZE(argv)):
        key = <object>PyList_GET_ITEM(argv, i)
        if not string_fits(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), max_len):
            return False
    return True


cdef class Counters:
    """What the fast path ran since the last fold into the server's Stats (fields in
    ext/cxlredis/_fastpath.pxd)."""

    def fold(self, command_counters, names):
        """Add the counts to the commandstats lists [calls, usec, rejected, failed,
        buckets] that command_counters(name) gives for each command that ran (names: one
        per FastOp, in its order), and start again from zero."""
        cdef int op, i
        for op, name in enumerate(names):
            if not self.calls[op]:
                continue
            counters = command_counters(name)
            counters[0] += self.calls[op]
            counters[1] += self.usec[op]
            buckets = counters[4]
            for i in range(LATENCY_BUCKETS):
                if self.buckets[op][i]:
                    buckets[i] += self.buckets[op][i]
                    self.buckets[op][i] = 0
            self.calls[op] = self.usec[op] = 0


def serve(RequestParser parser, ReplyWriter reply, Keyspace store, Arena arena, int db,
          Counters counters, long long watch_from_us, Py_ssize_t output_budget,
          const unsigned char[::1] serve_here=None, list changed=None):
    """Run the fast commands (the module's docstring) at the head of the parser's input.

    Stops at the first other command (handed back to the parser, so next_command()
    gives it), at the end of the input, on a parse error (next_command() raises it
    again), when the arena is over maxmemory (the general path evicts), and after a
    command that took watch_from_us or longer (counters.observed, for the caller to
    show to SLOWLOG, LATENCY and MONITOR), and once the pending replies reach
    output_budget (if not 0: the caller applies client-output-buffer-limit). Returns
    how many commands ran. serve_here (cluster mode): a byte per slot, set where the
    node serves the slot's keys without a redirect. changed, if given, gets every key a
    command changed (as Redis's signalModifiedKey would be told of it).
    """
    cdef int op, bucket, found = 0
    cdef int ran = 0
    cdef Py_ssize_t i, argc
    cdef long long count = 0, delta
    cdef bint fits
    cdef list argv
    cdef object key
    cdef const char *value
    cdef const char *field
    cdef const char *data
    cdef Py_ssize_t value_len, field_len
    cdef int64_t start, elapsed_us
    while True:
        try:
            argv = parser.next_command()
        except Exception:
            break
        if argv is None:
            break
        op = op_of(argv)
        if op == NOT_FAST or not under_maxmemory(arena):
            parser.hand_back(argv)
            break
        argc = PyList_GET_SIZE(argv)
        key = <object>PyList_GET_ITEM(argv, 1)
        if serve_here is not None and (argc > 2 and (op == FAST_EXISTS or op == FAST_DEL or op == FAST_MGET)
                                       or not serve_here[
                cx_key_slot(<const unsigned char*>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))]):
            parser.hand_back(argv)
            break
        if op == FAST_MGET:
            try:
                fits = mget_fits(store, db, argv, reply._threshold.nbytes)
            except Exception:
                fits = False        # (a tenant dropped meanwhile) the general path answers
            if not fits:
                parser.hand_back(argv)
                break
        start = monotonic_ns()
        found = 0
        try:
            if op == FAST_GET:
                found = get_string(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                                   reply._threshold.nbytes, &value, &value_len)
            elif op == FAST_SET:
                set_string(store, db, key, <object>PyList_GET_ITEM(argv, 2))
            elif op == FAST_MGET:
                # mget_fits reached every key's keyspace, so once the reply has begun
                # nothing below raises (short of MemoryError)
                reply._header(b'*', argc - 1)
                for i in range(1, argc):
                    key = <object>PyList_GET_ITEM(argv, i)
                    if mget_string(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                                   &value, &value_len):
                        reply._copied_bulk(value, value_len)
                    else:
                        reply._null()
            elif op == FAST_TTL or op == FAST_PTTL:
                count = key_ttl_ms(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
                if op == FAST_TTL and count > 0:
                    count = (count + 500) // 1000
            elif op == FAST_EXISTS or op == FAST_DEL:
                count = 0
                for i in range(1, argc):
                    key = <object>PyList_GET_ITEM(argv, i)
                    if op == FAST_EXISTS:
                        count += key_exists(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
                    elif delete_key(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)):
                        count += 1
                        if changed is not None:
                            changed.append(key)
            elif op == FAST_EXPIRE:
                # seconds whose milliseconds overflow are the general path's error
                if not int_arg(argv, 2, &delta) or not -(LLONG_MAX // 1000) <= delta <= LLONG_MAX // 1000:
                    found = -1
                else:
                    found = count = expire_key(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                                               delta * 1000)
            elif op == FAST_HGET:
                field = arg_at(argv, 2, &field_len)
                found = hash_get(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), field,
                                 field_len, reply._threshold.nbytes, &value, &value_len)
            elif op == FAST_HSET:
                field = arg_at(argv, 2, &field_len)
                data = arg_at(argv, 3, &value_len)
                found = count = hash_set(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                                         field, field_len, data, value_len)
            else:                       # INCR, DECR, INCRBY, DECRBY
                delta = 1 if op == FAST_INCR else -1
                if op == FAST_INCRBY or op == FAST_DECRBY:
                    # DECRBY of the least integer is the general path's error: its negation overflows
                    if not int_arg(argv, 2, &delta) or op == FAST_DECRBY and delta == LLONG_MIN:
                        found = -1
                    elif op == FAST_DECRBY:
                        delta = -delta
                if found == 0:
                    found = incr_string(store, db, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), delta,
                                        &count)
        except Exception:
            # OutOfMemory (or a tenant dropped meanwhile): nothing was done, and the
            # general path runs the command again to answer and count the error.
            parser.hand_back(argv)
            break
        if found < 0:
            # WRONGTYPE, not an integer, an overflow or a value sent by reference: nothing
            # was done, and the general path runs the command
            parser.hand_back(argv)
            break
        if changed is not None and (op == FAST_SET or op == FAST_HSET or op == FAST_INCR or op == FAST_DECR
                                    or op == FAST_INCRBY or op == FAST_DECRBY or op == FAST_EXPIRE and count):
            changed.append(key)
        if op == FAST_SET:
            reply._put(b"+OK\r\n", 5)
        elif op == FAST_MGET:
            pass                        # replied key by key
        elif op == FAST_GET or op == FAST_HGET:
            if found:
                reply._copied_bulk(value, value_len)
            else:
                reply._null()
        else:
            reply._header(b':', count)
        elapsed_us = (monotonic_ns() - start) // 1000
        bucket = 0
        while bucket < LATENCY_BUCKETS - 1 and (elapsed_us >> bucket):
            bucket += 1
        counters.calls[op] += 1
        counters.usec[op] += elapsed_us
        counters.buckets[op][bucket] += 1
        counters.last = op
        ran += 1
        if elapsed_us >= watch_from_us:
            counters.observed = argv
            counters.observed_us = elapsed_us
            break
        if output_budget and reply._len + reply._large_bytes >= output_budget:
            break
    return ran
