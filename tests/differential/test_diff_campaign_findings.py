"""Differences the command-table campaign (tests/fuzz/campaign.py) found, one
sequence per finding, named after the command that showed it; each is fixed
in the handler and compared with redis-server here so it stays fixed.
"""
import pytest

from diff_harness import cmd, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")


def flags_only(argv, a, b):
    # CLIENT INFO's flags field: what the sequences below are about.
    def flags(reply):
        return [f for f in reply.split(b" ") if f.startswith(b"flags=")]
    return a[:1] == b[:1] and flags(a) == flags(b)


def multi_count_of_tx(argv, a, b):
    # CLIENT LIST's multi= field of the connection named "tx".
    def count(reply):
        lines = [line for line in reply.split(b"\n") if b" name=tx " in line]
        return [f for line in lines for f in line.split(b" ") if f.startswith(b"multi=")]
    return count(a) == count(b) != []


def same_reply_type(argv, a, b):
    # COMMAND lists the whole table (Redis has more commands); refusals compared exactly.
    return a == b if b"-" in (a[:1], b[:1]) else a[:1] == b[:1]


def help_tail(argv, a, b):
    # CLIENT HELP lists cxlredis's newer subcommands too; its HELP lines must be Redis's.
    return a.endswith(b"+HELP\r\n+    Prints this help.\r\n") and b.endswith(
        b"+HELP\r\n+    Prints this help.\r\n")


SEQUENCES = {
    # Redis counts a field repeated in one HSET once.
    "HSET with a repeated field": [
        ("HSET", "h", "f", "1", "f", "2"),
        ("HSET", "h", "g", "1", "f", "3", "g", "2"),
        ("HGETALL", "h"),
    ],
    # HSCAN reads the cursor as strtoul does, then the key, then the options.
    "HSCAN cursor and argument order": [
        ("SET", "s", "x"),
        ("HSET", "h", "f", "v"),
        ("HSCAN", "s", "-9223372036854775809"),
        ("HSCAN", "h", "-1"),
        ("HSCAN", "h", "+0"),
        ("HSCAN", "h", ""),
        ("HSCAN", "h", "-"),
        ("HSCAN", "h", "18446744073709551616"),
        ("HSCAN", "s", "0", "COUNT", "-0"),
        ("HSCAN", "missing", "0", "BOGUS", "1"),
        ("HSCAN", "missing", "0", "COUNT", "0"),
        ("HSCAN", "h", "0", "BOGUS", "1"),
        ("HSCAN", "missing", "x"),
    ],
    # A command without keys answers so before its arity is checked.
    "COMMAND GETKEYS of a keyless command": [
        ("COMMAND", "GETKEYS", "DISCARD", ""),
        ("COMMAND", "GETKEYS", "PING", "a", "b", "c"),
        ("COMMAND", "GETKEYS", "GET"),
        ("COMMAND", "GETKEYS", "GET", "a", "b"),
    ],
    # A key spec that starts past the arguments (PFMERGE's source keys, with only its
    # destkey given) leaves the whole call without keys, so Redis refuses it.
    "COMMAND GETKEYS of PFMERGE with its destkey alone": [
        ("COMMAND", "GETKEYS", "PFMERGE", ""),
        ("COMMAND", "GETKEYS", "PFMERGE", "a"),
        ("COMMAND", "GETKEYSANDFLAGS", "PFMERGE", "a"),
        ("COMMAND", "GETKEYS", "PFMERGE", "a", "b"),
        ("COMMAND", "GETKEYSANDFLAGS", "PFMERGE", "a", "b", "c"),
    ],
    # A numkeys of 0 leaves the whole call without keys (ZUNIONSTORE's getkeys_proc finds
    # none then, its destination neither).
    "COMMAND GETKEYS with numkeys 0": [
        ("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "0", "x"),
        ("COMMAND", "GETKEYSANDFLAGS", "ZDIFFSTORE", "d", "0", "x", "y"),
        ("COMMAND", "GETKEYS", "ZINTERSTORE", "d", "1", "x"),
        ("COMMAND", "GETKEYS", "LMPOP", "0", "a", "LEFT"),
        ("COMMAND", "GETKEYS", "EVAL", "s", "0"),
    ],
    # A count the key spec cannot read whole (" 1", "+1", "01") leaves the call to the
    # getkeys_proc: the counted keys, then the destination, none with flags. The spec
    # reads its count as a C int, so 2**32 + 1 is its 1.
    "COMMAND GETKEYS with a count only atoi reads": [
        ("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", " 1", "x", "y"),
        ("COMMAND", "GETKEYSANDFLAGS", "ZDIFFSTORE", "d", "+1", "x"),
        ("COMMAND", "GETKEYSANDFLAGS", "EVAL", "s", "01", "x"),
        ("COMMAND", "GETKEYSANDFLAGS", "LMPOP", "1 ", "a", "LEFT"),
        ("COMMAND", "GETKEYSANDFLAGS", "ZINTERSTORE", "d", "4294967297", "x", "y"),
        ("COMMAND", "GETKEYSANDFLAGS", "SINTERCARD", "2147483648", "a", "b"),
    ],
    "CONFIG HELP, COMMAND HELP and CLIENT HELP": [
        ("CONFIG", "HELP"),
        ("COMMAND", "HELP"),
        cmd("CLIENT", "HELP", compare=help_tail),
    ],
    # Section order is Redis's, whatever the order asked (cxlredis's own sections aside).
    "INFO all / everything": [
        ("INFO", "all"),
        ("INFO", "everything"),
        ("INFO", "latencystats", "commandstats", "server"),
        ("INFO", "KEYSPACE", "everything", "bogus"),
    ],
    # Redis 7.0's RESET keeps CLIENT NO-EVICT (7.2 started turning it off).
    "RESET after CLIENT NO-EVICT ON": [
        ("CLIENT", "NO-EVICT", "ON"),
        ("RESET",),
        cmd("CLIENT", "INFO", compare=flags_only),
    ],
    # A key WATCHed while absent dirties the transaction once created, even if it is
    # gone again by EXEC.
    "WATCH of an absent key created and deleted again": [
        ("WATCH", "k"),
        ("SET", "k", "1"),
        ("DEL", "k"),
        cmd("CLIENT", "INFO", compare=flags_only),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "k", "j"),
        cmd("HSET", "k", "f", "1", conn=1),
        cmd("PEXPIRE", "k", "-9223372036854775808", "LT", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "k"),
        cmd("SET", "k", "1", conn=1),      # a plain SET: cxlredis's C fast path
        cmd("DEL", "k", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "k"),
        cmd("SET", "k", "1", "PXAT", "1", conn=1),   # stored already expired: k was written
        cmd("CLIENT", "INFO", compare=flags_only),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "k"),
        cmd("DEL", "k", conn=1),            # nothing happened to k: EXEC runs
        ("MULTI",),
        ("PING",),
        ("EXEC",),
        ("WATCH", "k"),
        ("UNWATCH",),
        cmd("SET", "k", "1", conn=1),
        cmd("DEL", "k", conn=1),
        ("MULTI",),
        ("PING",),
        ("EXEC",),
    ],
    # COMMAND alone (a container that also runs without a subcommand) for a user with
    # rules: +@all, +@connection and +command allow it as in Redis, -command denies it.
    "COMMAND for a restricted user": [
        ("ACL", "SETUSER", "u", "on", "nopass", "~*", "+@all", "-set"),
        ("ACL", "SETUSER", "c", "on", "nopass", "-@all", "+@connection"),
        ("ACL", "SETUSER", "n", "on", "nopass", "-@all", "+command"),
        ("ACL", "SETUSER", "d", "on", "nopass", "+@all", "-command"),
        ("ACL", "SETUSER", "s", "on", "nopass", "-@all", "+command|count"),
        *[step for user in ("u", "c", "n", "d", "s") for step in (
            ("AUTH", user, "x"), cmd("COMMAND", compare=same_reply_type), ("COMMAND", "COUNT"),
            ("ACL", "DRYRUN", user, "COMMAND"))],
        ("AUTH", "default", "x"),
        ("ACL", "DELUSER", "u", "c", "n", "d", "s"),
    ],
    # EXEC unwatches before it runs the queue: the transaction's own writes to its
    # watched keys do not show it as dirty (CLIENT INFO flags inside EXEC).
    "CLIENT INFO inside EXEC after writing a watched key": [
        ("SET", "k", "0"),
        ("WATCH", "k", "absent"),
        ("MULTI",),
        ("SET", "k", "1"),
        ("SET", "absent", "1"),
        ("CLIENT", "INFO"),
        ("EXEC",),
    ],
    # Redis stops storing the commands of a transaction that can no longer run (an error
    # while queueing, a watched key touched): still +QUEUED, but multi= stays put.
    "MULTI queue after an error or a touched watched key": [
        ("CLIENT", "SETNAME", "tx"),
        ("MULTI",),
        ("SET", "a", "1"),
        ("NOSUCHCOMMAND",),
        ("SET", "b", "2"),
        ("SET", "c", "3"),
        cmd("CLIENT", "LIST", conn=1, compare=multi_count_of_tx),
        ("EXEC",),
        ("WATCH", "k"),
        cmd("SET", "k", "1", conn=1),
        ("MULTI",),
        ("SET", "a", "1"),
        ("SET", "b", "2"),
        cmd("CLIENT", "LIST", conn=1, compare=multi_count_of_tx),
        ("EXEC",),
        ("MGET", "a", "b", "c"),
    ],
    # An 8 MiB category name lowered once per command took cxlredis seconds (seed 2026
    # episode 3146); a binary pattern is matched as the bytes sent, not as decoded text.
    "COMMAND LIST FILTERBY with a huge or binary value": [
        ("COMMAND", "LIST", "FILTERBY", "ACLCAT", b"-\xfb\x81" * ((8 << 20) // 3)),
        ("COMMAND", "LIST", "FILTERBY", "ACLCAT", "HyperLogLog"),
        ("COMMAND", "LIST", "FILTERBY", "ACLCAT", "CONNECTION"),
        ("COMMAND", "LIST", "FILTERBY", "PATTERN", b"g\xff*"),
        ("COMMAND", "LIST", "FILTERBY", "PATTERN", b"*" * (1 << 20)),
    ],
}


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_campaign_finding(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol, name)
