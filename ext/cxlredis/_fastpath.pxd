# The typed boundary of cxlredis._fastpath (ext/cxlredis/_fastpath.pyx): its counters, which the
# server folds into commandstats, and the codes of the commands it runs.

cdef enum:
    # commandstats' latency buckets: bucket i counts calls under 2**i microseconds (and at
    # least 2**(i-1)); cxlredis.metrics.LATENCY_BUCKETS is this number
    LATENCY_BUCKETS = 36

cdef enum FastOp:
    # a command's CommandSpec.fast_op (cxlredis/commands/table.py) names it here
    NOT_FAST = -1
    FAST_GET = 0
    FAST_SET = 1
    FAST_EXISTS = 2
    FAST_DEL = 3
    FAST_TTL = 4
    FAST_PTTL = 5
    FAST_MGET = 6
    FAST_INCR = 7
    FAST_DECR = 8
    FAST_INCRBY = 9
    FAST_DECRBY = 10
    FAST_EXPIRE = 11
    FAST_HGET = 12
    FAST_HSET = 13
    FAST_OPS = 14


cdef class Counters:
    cdef long long calls[FAST_OPS]
    cdef long long usec[FAST_OPS]
    cdef long long buckets[FAST_OPS][LATENCY_BUCKETS]
    cdef readonly int last                  # the FastOp of the last command run
    cdef public object observed             # argv of a command that reached watch_from_us...
    cdef public long long observed_us       # ...and its microseconds
