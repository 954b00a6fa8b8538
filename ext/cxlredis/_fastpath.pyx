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
before it is handed back. A GET of a value large enough to be sent by reference
pins it and queues it by reference, as ReplyWriter.entry does (a large GET's Python
costs more than its lookup). A SET whose value arrived in a block reserved for it
(SlotArg) commits it there. MGET and HGET of large values take the general path, and
so do keys that may have a copy in the disk tier (cxlredis/disktier.py), whose segments
the caller settles after each run. In cluster mode only keys of the slots the node
serves as they are (its own, stable, cluster up: ClusterState.serve_here) are run here,
and EXISTS, DEL and MGET of one key only (several may be a CROSSSLOT); every other key
goes to the general path for its redirect. While some client tracks keys
(CLIENT TRACKING), the keys the commands changed are listed for the caller, which
tells the trackers before the replies go out.

Per command it builds nothing: a command whose whole text has arrived is read where it
lies in the input buffer (RequestParser.peek_command), and one clock read ends one
command's time and starts the next's, whose expiries and LRU times it gives too
(hold_clock).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.limits cimport LLONG_MAX, LLONG_MIN
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport strlen

from cxlredis._resp cimport ArgSpan, ReplyWriter, RequestParser
from cxlredis._store cimport (PREFETCH_KEYS, Arena, Keyspace, SlotArg, commit_slot, delete_key, expire_key,
                              get_string, hash_get, hash_set, hold_clock, incr_string, key_exists, key_ttl_ms,
                              maybe_on_disk, mget_string, pin_value, prefetch_lookups, set_string,
                              string_fits, under_maxmemory)

cdef extern from "cluster/keyslot.h":
    void cx_crc16_init()
    unsigned int cx_key_slot(const unsigned char *key, size_t len) nogil

cx_crc16_init()

cdef extern from "string2ll.h":
    bint cx_string2ll(const char *s, size_t n, long long *out) noexcept nogil

cdef enum:
    # commands of up to this many arguments are read where they lie in the input buffer
    PEEKED_ARGS = 32
    # the most commands one look ahead down the pipeline covers (prefetch_window)
    PREFETCH_COMMANDS = 16

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec *tp)
    enum: CLOCK_MONOTONIC
    enum: CLOCK_REALTIME

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


cdef inline int64_t clock_ns(int clock) noexcept nogil:
    cdef timespec ts
    clock_gettime(clock, &ts)
    return <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec


cdef struct FastCommand:
    const char *name            # in capitals: every fast command's name is letters only
    Py_ssize_t length
    Py_ssize_t min_argc, max_argc   # max_argc 0: any number

cdef FastCommand FAST_COMMANDS[FAST_OPS]


cdef void declare(int op, const char *name, Py_ssize_t min_argc, Py_ssize_t max_argc) noexcept:
    FAST_COMMANDS[op].name = name
    FAST_COMMANDS[op].length = strlen(name)
    FAST_COMMANDS[op].min_argc = min_argc
    FAST_COMMANDS[op].max_argc = max_argc


declare(FAST_GET, b"GET", 2, 2)
declare(FAST_SET, b"SET", 3, 3)
declare(FAST_EXISTS, b"EXISTS", 2, 0)
declare(FAST_DEL, b"DEL", 2, 0)
declare(FAST_TTL, b"TTL", 2, 2)
declare(FAST_PTTL, b"PTTL", 2, 2)
declare(FAST_MGET, b"MGET", 2, 0)
declare(FAST_INCR, b"INCR", 2, 2)
declare(FAST_DECR, b"DECR", 2, 2)
declare(FAST_INCRBY, b"INCRBY", 3, 3)
declare(FAST_DECRBY, b"DECRBY", 3, 3)
declare(FAST_EXPIRE, b"EXPIRE", 3, 3)
declare(FAST_HGET, b"HGET", 3, 3)
declare(FAST_HSET, b"HSET", 4, 4)


cdef inline bint is_name(const ArgSpan *arg, const FastCommand *command) noexcept:
    """arg spells the command's name in any case (clearing bit 5 turns only a lower-case
    letter into its capital)."""
    cdef Py_ssize_t i
    if arg.len != command.length:
        return False
    for i in range(arg.len):
        if (arg.ptr[i] & ~0x20) != command.name[i]:
            return False
    return True


cdef inline int op_of(const ArgSpan *args, Py_ssize_t argc) noexcept:
    cdef int op
    cdef const FastCommand *command
    for op in range(FAST_OPS):
        command = &FAST_COMMANDS[op]
        if (command.min_argc <= argc and (command.max_argc == 0 or argc <= command.max_argc)
                and is_name(&args[0], command)):
            return op
    return NOT_FAST


cdef inline bytes span_bytes(const ArgSpan *arg):
    return PyBytes_FromStringAndSize(arg.ptr, arg.len)


cdef list span_list(const ArgSpan *args, Py_ssize_t argc):
    return [span_bytes(&args[i]) for i in range(argc)]


cdef ArgSpan *spans_of(list argv, ArgSpan *room, ArgSpan **grown, Keyspace store) except? NULL:
    """argv's arguments as spans (in room, or *grown when more than PEEKED_ARGS), or NULL
    when one of them is not bytes; but the third of three may be a value received into a
    block store reserved (a SET's value): its span has no bytes (ptr NULL)."""
    cdef Py_ssize_t i, argc = PyList_GET_SIZE(argv)
    cdef ArgSpan *args = room
    cdef object arg
    if argc > PEEKED_ARGS:
        args = <ArgSpan *>PyMem_Realloc(grown[0], argc * sizeof(ArgSpan))
        if args == NULL:
            raise MemoryError()
        grown[0] = args
    for i in range(argc):
        arg = <object>PyList_GET_ITEM(argv, i)
        if type(arg) is SlotArg and i == 2 and argc == 3 and (<SlotArg>arg).store is store:
            args[i].ptr = NULL
            args[i].len = (<SlotArg>arg).length
            continue
        if type(arg) is not bytes:
            return NULL
        args[i].ptr = PyBytes_AS_STRING(arg)
        args[i].len = PyBytes_GET_SIZE(arg)
    return args


cdef inline bint int_arg(const ArgSpan *arg, long long *out) noexcept:
    """arg is an integer as Redis reads one."""
    return cx_string2ll(arg.ptr, arg.len, out)


cdef int mget_fits(Keyspace store, int db, const ArgSpan *args, Py_ssize_t argc, Py_ssize_t max_len) except -1:
    """No key of the MGET holds a string at or above max_len (sent by reference, which
    the general path does)."""
    cdef Py_ssize_t i
    for i in range(1, argc):
        if not string_fits(store, db, args[i].ptr, args[i].len, max_len):
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
        for op in range(FAST_OPS):
            if not self.calls[op]:
                continue
            counters = command_counters(names[op])
            counters[0] += self.calls[op]
            counters[1] += self.usec[op]
            buckets = counters[4]
            for i in range(LATENCY_BUCKETS):
                if self.buckets[op][i]:
                    buckets[i] += self.buckets[op][i]
                    self.buckets[op][i] = 0
            self.calls[op] = self.usec[op] = 0


cdef bint served_here(const ArgSpan *args, Py_ssize_t argc, int op, const unsigned char[::1] serve_here):
    """Cluster mode: the command's key is of a slot the node serves as it is; EXISTS, DEL
    and MGET of several keys are left to the general path (they may be a CROSSSLOT)."""
    if argc > 2 and (op == FAST_EXISTS or op == FAST_DEL or op == FAST_MGET):
        return False
    return serve_here[cx_key_slot(<const unsigned char *>args[1].ptr, args[1].len)] != 0


cdef inline Py_ssize_t keys_end(int op, Py_ssize_t argc) noexcept:
    """The command's keys are its arguments 1 up to this one (excluded)."""
    return argc if op == FAST_EXISTS or op == FAST_DEL or op == FAST_MGET else 2


cdef bint any_on_disk(Keyspace store, int db, const ArgSpan *args, Py_ssize_t argc, int op):
    """A key of the command may have a copy in the disk tier: the general path, which
    brings such copies back before a command runs, takes it (and any error of its
    keyspace, e.g. a tenant dropped meanwhile)."""
    cdef Py_ssize_t i
    try:
        for i in range(1, keys_end(op, argc)):
            if maybe_on_disk(store, db, args[i].ptr, args[i].len):
                return True
    except Exception:
        return True
    return False


cdef struct Peeked:
    # a fast command of the look ahead, read where it lies in the input buffer
    int op
    Py_ssize_t argc
    Py_ssize_t length           # of its text, for RequestParser.consume
    ArgSpan args[PEEKED_ARGS]


cdef Py_ssize_t prefetch_window(RequestParser parser, Keyspace store, int db, Peeked *window) noexcept:
    """Read the fast commands at the head of the input into window, up to
    PREFETCH_COMMANDS of them and PREFETCH_KEYS keys, and prefetch their keys, so that
    the cache misses of their lookups overlap rather than follow one another; returns
    how many it read (serve runs them from the window, then looks again). A single
    command gains nothing from a prefetch and gets none."""
    cdef const char *keys[PREFETCH_KEYS]
    cdef Py_ssize_t key_lens[PREFETCH_KEYS]
    cdef Py_ssize_t skip = 0, read_to, end, i, n = 0, commands = 0
    cdef Peeked *command
    while commands < PREFETCH_COMMANDS:
        command = &window[commands]
        read_to = skip
        command.argc = parser.peek_ahead(&read_to, command.args, PEEKED_ARGS)
        command.op = NOT_FAST if command.argc == 0 else op_of(command.args, command.argc)
        if command.op == NOT_FAST:
            break
        end = keys_end(command.op, command.argc)
        if n + end - 1 > PREFETCH_KEYS:
            break
        for i in range(1, end):
            keys[n] = command.args[i].ptr
            key_lens[n] = command.args[i].len
            n += 1
        command.length = read_to - skip
        skip = read_to
        commands += 1
    if commands > 1:
        prefetch_lookups(store, db, keys, key_lens, n)
    return commands


def look_ahead(RequestParser parser, Keyspace store, int db):
    """prefetch_window's look at the head of parser's input (for the tests): how many
    commands it read."""
    cdef Peeked window[PREFETCH_COMMANDS]
    return prefetch_window(parser, store, db, window)


cdef int run(int op, const ArgSpan *args, Py_ssize_t argc, ReplyWriter reply, Keyspace store, int db,
             list changed, SlotArg slot) except -2:
    """Run one fast command and queue its reply: 1, or 0 when the general path must run it
    instead (WRONGTYPE, not an integer, an overflow, a value of HGET or MGET large enough
    to be sent by reference), with nothing done. Raises OutOfMemory (or for a tenant dropped
    meanwhile) with nothing done either."""
    cdef const ArgSpan *key = &args[1]
    cdef int found = 0
    cdef Py_ssize_t i, value_len
    cdef long long count = 0, delta
    cdef const char *value
    cdef uint64_t entry
    if op == FAST_GET or op == FAST_HGET:
        if op == FAST_GET:
            found = get_string(store, db, key.ptr, key.len, reply._threshold.nbytes, &value, &value_len,
                               &entry)
            if found == 2:
                token, view = pin_value(store, entry)
                reply._by_reference(token, view, value_len, b"", b"")
                return 1
        else:
            found = hash_get(store, db, key.ptr, key.len, args[2].ptr, args[2].len,
                             reply._threshold.nbytes, &value, &value_len)
        if found < 0:
            return 0
        if found:
            reply._copied_bulk(value, value_len)
        else:
            reply._null()
        return 1
    if op == FAST_SET:
        if slot is not None:
            commit_slot(slot, db, key.ptr, key.len)
        else:
            set_string(store, db, key.ptr, key.len, args[2].ptr, args[2].len)
        if changed is not None:
            changed.append(span_bytes(key))
        reply._put(b"+OK\r\n", 5)
        return 1
    if op == FAST_MGET:
        if not mget_fits(store, db, args, argc, reply._threshold.nbytes):
            return 0
        # mget_fits reached every key's keyspace, so once the reply has begun nothing
        # below raises (short of MemoryError)
        reply._header(b'*', argc - 1)
        for i in range(1, argc):
            if mget_string(store, db, args[i].ptr, args[i].len, &value, &value_len):
                reply._copied_bulk(value, value_len)
            else:
                reply._null()
        return 1
    if op == FAST_TTL or op == FAST_PTTL:
        count = key_ttl_ms(store, db, key.ptr, key.len)
        if op == FAST_TTL and count > 0:
            count = (count + 500) // 1000
    elif op == FAST_EXISTS:
        for i in range(1, argc):
            count += key_exists(store, db, args[i].ptr, args[i].len)
    elif op == FAST_DEL:
        for i in range(1, argc):
            if delete_key(store, db, args[i].ptr, args[i].len):
                count += 1
                if changed is not None:
                    changed.append(span_bytes(&args[i]))
    elif op == FAST_EXPIRE:
        # seconds whose milliseconds overflow are the general path's error
        if not int_arg(&args[2], &delta) or not -(LLONG_MAX // 1000) <= delta <= LLONG_MAX // 1000:
            return 0
        found = count = expire_key(store, db, key.ptr, key.len, delta * 1000)
        if found < 0:
            return 0
        if count and changed is not None:
            changed.append(span_bytes(key))
    elif op == FAST_HSET:
        found = count = hash_set(store, db, key.ptr, key.len, args[2].ptr, args[2].len, args[3].ptr,
                                 args[3].len)
        if found < 0:
            return 0
        if changed is not None:
            changed.append(span_bytes(key))
    else:                               # INCR, DECR, INCRBY, DECRBY
        delta = 1 if op == FAST_INCR else -1
        if op == FAST_INCRBY or op == FAST_DECRBY:
            # DECRBY of the least integer is the general path's error: its negation overflows
            if not int_arg(&args[2], &delta) or op == FAST_DECRBY and delta == LLONG_MIN:
                return 0
            if op == FAST_DECRBY:
                delta = -delta
        if incr_string(store, db, key.ptr, key.len, delta, &count) < 0:
            return 0
        if changed is not None:
            changed.append(span_bytes(key))
    reply._header(b':', count)
    return 1


def serve(RequestParser parser, ReplyWriter reply, Keyspace store, Arena arena, int db,
          Counters counters, long long watch_from_us, Py_ssize_t output_budget,
          const unsigned char[::1] serve_here=None, list changed=None, bint disk_tier=False):
    """Run the fast commands (the module's docstring) at the head of the parser's input.

    Stops at the first other command (left to the parser, so next_command() gives it),
    at the end of the input, on a parse error (next_command() raises it again), when the
    arena is over maxmemory (the general path evicts), and after a command that took
    watch_from_us or longer (counters.observed, for the caller to show to SLOWLOG,
    LATENCY and MONITOR), and once the pending replies reach output_budget (if not 0:
    the caller applies client-output-buffer-limit). Returns how many commands ran.
    serve_here (cluster mode): a byte per slot, set where the node serves the slot's keys
    without a redirect. changed, if given, gets every key a command changed (as Redis's
    signalModifiedKey would be told of it). disk_tier: the server has one, so a key that
    may have a copy there is left to the general path.

    A command whose whole text is in the buffer is read there in place: up to
    PREFETCH_COMMANDS at a time by prefetch_window, which also prefetches their keys, or
    one by peek_command; others (split across reads, inline, many arguments) come from
    next_command().
    """
    cdef Peeked window[PREFETCH_COMMANDS]
    cdef Py_ssize_t window_len = 0, window_next = 0
    cdef Peeked *peeked
    cdef ArgSpan room[PEEKED_ARGS]
    cdef ArgSpan *grown = NULL
    cdef ArgSpan *args
    cdef Py_ssize_t argc
    cdef list argv
    cdef SlotArg slot
    cdef int op, bucket, done, ran = 0
    cdef int64_t began = clock_ns(CLOCK_MONOTONIC), ended, elapsed_us
    # Each command's wall clock is the time it began, as Redis holds it still for a command:
    # the monotonic reading that starts its time, plus the wall clock's lead read once here.
    cdef int64_t wall_lead = clock_ns(CLOCK_REALTIME) - began
    try:
        while True:
            argv = None
            slot = None
            peeked = NULL
            if window_next == window_len:
                window_len = prefetch_window(parser, store, db, window)
                window_next = 0
            if window_next < window_len:
                peeked = &window[window_next]
                window_next += 1
                op, args, argc = peeked.op, peeked.args, peeked.argc
            else:
                args = room
                argc = parser.peek_command(room, PEEKED_ARGS)
                if argc == 0:
                    try:
                        argv = parser.next_command()
                    except Exception:
                        break
                    if argv is None:
                        break
                    argc = PyList_GET_SIZE(argv)
                    args = spans_of(argv, room, &grown, store)
                    if args != NULL and argc == 3 and args[2].ptr == NULL:
                        slot = <SlotArg>PyList_GET_ITEM(argv, 2)
                op = NOT_FAST if args == NULL else op_of(args, argc)
                if slot is not None and op != FAST_SET:
                    op = NOT_FAST
            done = 0
            if (op != NOT_FAST and under_maxmemory(arena)
                    and (serve_here is None or served_here(args, argc, op, serve_here))
                    and not (disk_tier and any_on_disk(store, db, args, argc, op))):
                hold_clock((began + wall_lead) // 1000000)
                try:
                    done = run(op, args, argc, reply, store, db, changed, slot)
                except Exception:
                    # OutOfMemory (or a tenant dropped meanwhile): nothing was done, and the
                    # general path runs the command again to answer and count the error
                    done = 0
            if not done:
                if argv is not None:
                    parser.hand_back(argv)
                break
            if peeked != NULL:
                parser.consume(peeked.length)
            elif argv is None:
                parser.consume_peeked()
            ended = clock_ns(CLOCK_MONOTONIC)
            elapsed_us = (ended - began) // 1000
            began = ended
            bucket = 0
            while bucket < LATENCY_BUCKETS - 1 and (elapsed_us >> bucket):
                bucket += 1
            counters.calls[op] += 1
            counters.usec[op] += elapsed_us
            counters.buckets[op][bucket] += 1
            counters.last = op
            ran += 1
            if elapsed_us >= watch_from_us:
                counters.observed = argv if argv is not None else span_list(args, argc)
                counters.observed_us = elapsed_us
                break
            if output_budget and reply._len + reply._large_bytes >= output_budget:
                break
    finally:
        hold_clock(0)
        PyMem_Free(grown)
    return ran
