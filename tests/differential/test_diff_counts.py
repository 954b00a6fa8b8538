"""Counts, cursors and indexes from the client at every 64-bit boundary, replayed on
redis-server and cxlredis: the replies must agree, and after each one a second
connection's PING must answer (a count must never drive a loop or an allocation the
server cannot bound). HRANDFIELD's counts are in test_diff_hashes.py."""
import pytest

from conftest import parse_reply
from diff_harness import cmd, normalised, pause, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

LONG_MAX, LONG_MIN = 2**63 - 1, -(2**63)
BOUNDARIES = [0, 1, -1, 2, LONG_MAX, LONG_MIN, LONG_MIN + 1, LONG_MAX // 2 + 1, 2**63, 2**64 - 1,
              2**64, -(2**64)]
CURSORS = ["-1", "-9223372036854775808", "18446744073709551615", "18446744073709551616", "+5",
           "", " 1", "1.5", "0x1", "00"]


def whole_scan(argv, reply):
    """A scan that covered everything: the final cursor and the keys in any order."""
    cursor, keys = parse_reply(reply)
    return cursor, sorted(keys)


def shape(argv, reply):
    """Only the kind of reply must agree (its content is each server's own state)."""
    return reply[:1]


def genpass_length(argv, reply):
    return len(parse_reply(reply))


def steps():
    setup = [("MSET", "k1", "v", "k2", "v", "k3", "v"), ("HSET", "h", "a", "1", "b", "2")]
    hostile = []
    for cursor in CURSORS:          # before SWAPDB below moves h away
        hostile += [("HSCAN", "h", cursor), ("HSCAN", "missing", cursor), ("HSCAN", "k1", cursor)]
    # Redis parses HSCAN's cursor, then looks the key up, and only then its options
    hostile += [("HSCAN", "missing", "0", "COUNT", "0"), ("HSCAN", "missing", "0", "BOGUS"),
                ("HSCAN", "k1", "0", "COUNT", "0"), ("HSCAN", "h", "0", "COUNT", "0"),
                ("HSCAN", "h", "0", "MATCH", "a", "COUNT", "1")]
    for n in map(str, BOUNDARIES):
        # a count under the number of keys stops anywhere in each server's own table
        scan = normalised(shape if n in ("1", "2") else whole_scan)
        hostile += [
            cmd("SCAN", "0", "COUNT", n, compare=scan),
            cmd("SCAN", "0", "COUNT", n, "MATCH", "k*", compare=scan),
            ("HSCAN", "h", "0", "COUNT", n),
            cmd("SLOWLOG", "GET", n, compare=normalised(shape)),
            ("ACL", "LOG", n),
            cmd("ACL", "GENPASS", n, compare=normalised(genpass_length)),
            ("SELECT", n), ("SWAPDB", "0", n), ("MOVE", "k1", n), ("COPY", "k1", "k9", "DB", n),
            ("SETRANGE", "sr", n, "x"), ("GETRANGE", "k1", "0", n), ("GETRANGE", "k1", n, "-1"),
            ("HELLO", n), ("EXPIRE", "k3", n), ("SET", "k2", "v", "PX", n), ("INCRBY", "i", n),
        ]
        if n in ("1", "2"):
            # PX 1 and PX 2 leave k2 for a millisecond or two: past its deadline on both
            # servers before the next SCAN, or the replies race the clock
            hostile.append(pause(0.01))
        else:                                   # no client has these ids on either server
            hostile.append(("CLIENT", "LIST", "ID", n))
    sequence = list(setup)
    for step in hostile:
        sequence += [step, cmd("PING", conn=1)]
    return sequence


@pytest.mark.parametrize("protocol", [2, 3])
def test_counts_at_the_boundaries(redis_oracle, cxl, protocol):
    # The oracle lives for the whole session: start from an ACL LOG as empty as ours.
    run_sequence(redis_oracle, cxl, [("ACL", "LOG", "RESET"), *steps()], protocol=protocol,
                 name="counts")
