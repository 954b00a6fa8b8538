"""The differential harness must be able to fail: its RESP reader, its
comparators and its mismatch reports are checked here against known answers."""
import pytest

from conftest import ServerProcess, encode_command, parse_reply, reply_end
from diff_harness import (COMPARATORS, Mismatch, cmd, comparator_for, encoding_family,
                          exec_comparator, hello_fields, normalised, raw, run_sequence,
                          sorted_elements, split_aggregate, within)


@pytest.mark.parametrize("reply", [
    b"+OK\r\n", b"-ERR x\r\n", b":-5\r\n", b"$-1\r\n", b"$0\r\n\r\n", b"$5\r\na\r\nbc\r\n",
    b"*-1\r\n", b"*0\r\n", b"_\r\n", b"#t\r\n", b",1.5\r\n", b"(12345678901234567890\r\n",
    b"!5\r\nERR x\r\n", b"=8\r\ntxt:abcd\r\n", b"%1\r\n+k\r\n*2\r\n:1\r\n$1\r\nx\r\n",
    b"~2\r\n:1\r\n:2\r\n", b">2\r\n+a\r\n+b\r\n", b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n",
])
def test_reply_end_needs_every_byte(reply):
    assert reply_end(reply) == len(reply)
    for cut in range(len(reply)):
        assert reply_end(reply[:cut]) is None, f"{reply[:cut]!r} taken as complete"
    assert reply_end(reply + b"+NEXT\r\n") == len(reply)


def test_parse_reply_types():
    assert parse_reply(b"%2\r\n$1\r\na\r\n:1\r\n+b\r\n_\r\n") == {b"a": 1, "b": None}
    assert parse_reply(b"*3\r\n#f\r\n,-0.5\r\n$-1\r\n") == [False, -0.5, None]
    assert parse_reply(b"|1\r\n+key-popularity\r\n:1\r\n$2\r\nhi\r\n") == b"hi"
    assert parse_reply(b"-WRONGTYPE x\r\n") == "WRONGTYPE x"
    with pytest.raises(ValueError):
        parse_reply(b"+OK\r\n+OK\r\n")


def test_encode_command():
    assert encode_command("SET", b"k\r\n", 12) == b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$2\r\n12\r\n"


def test_comparators_reject_real_differences():
    ttl = COMPARATORS["TTL"]
    assert ttl((b"TTL",), b":100\r\n", b":99\r\n")
    assert not ttl((b"TTL",), b":100\r\n", b":50\r\n")
    assert not ttl((b"TTL",), b":-1\r\n", b":-2\r\n")
    assert not ttl((b"TTL",), b":-1\r\n", b":1\r\n")
    assert not within(1)((), b"-ERR a\r\n", b"-ERR b\r\n")

    hello = normalised(hello_fields)
    oracle = b"*4\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:7\r\n"
    assert hello((), oracle, b"*4\r\n$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:9\r\n")
    assert not hello((), oracle, b"*4\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:7\r\n")
    assert not hello((), oracle, b"+OK\r\n")

    keys = normalised(sorted_elements)
    assert keys((), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n", b"*2\r\n$1\r\nb\r\n$1\r\na\r\n")
    assert not keys((), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n", b"*2\r\n$1\r\na\r\n$1\r\nc\r\n")
    assert not keys((), b"*1\r\n$1\r\na\r\n", b"*2\r\n$1\r\na\r\n$1\r\na\r\n")

    encoding = normalised(encoding_family)
    assert encoding((), b"$3\r\nint\r\n", b"$3\r\nraw\r\n")
    assert not encoding((), b"$3\r\nint\r\n", b"$8\r\nlistpack\r\n")
    assert not encoding((), b"$3\r\nint\r\n", b"$-1\r\n")

    time_shape = COMPARATORS["TIME"]
    now = b"*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n"
    assert time_shape((), now, b"*2\r\n$10\r\n1700000001\r\n$1\r\n0\r\n")
    assert not time_shape((), now, b"*2\r\n$10\r\n1600000000\r\n$1\r\n0\r\n")
    assert not time_shape((), now, b"*2\r\n:1700000000\r\n:0\r\n")

    integer = COMPARATORS["MEMORY USAGE"]
    assert integer((), b":56\r\n", b":1024\r\n")
    assert not integer((), b":56\r\n", b"$2\r\n56\r\n")
    assert not integer((), b"$-1\r\n", b":0\r\n")

    listing = COMPARATORS["COMMAND LIST"]
    everything = b"*3\r\n$3\r\nget\r\n$3\r\nset\r\n$4\r\nlpop\r\n"
    assert not listing((), everything, b"*1\r\n$3\r\nget\r\n")
    assert not listing((), everything, b"*3\r\n$3\r\nget\r\n$3\r\nset\r\n$3\r\nfoo\r\n")


def test_exec_replies_use_the_queued_commands_comparators():
    queued = [(b"TTL", b"k"), (b"GET", b"k")]
    compare = exec_comparator(queued)
    oracle = b"*2\r\n:100\r\n$1\r\nv\r\n"
    assert split_aggregate(oracle) == [b":100\r\n", b"$1\r\nv\r\n"]
    assert compare((b"EXEC",), oracle, b"*2\r\n:99\r\n$1\r\nv\r\n")
    assert not compare((b"EXEC",), oracle, b"*2\r\n:99\r\n$1\r\nw\r\n")
    assert not compare((b"EXEC",), oracle, b"*-1\r\n")
    assert comparator_for((b"object", b"encoding", b"k")) is COMPARATORS["OBJECT ENCODING"]


@pytest.fixture(scope="module")
def different_redis():
    """A redis-server that differs from the oracle in one visible way: 4 databases."""
    server = ServerProcess("redis", {"databases": 4})
    try:
        yield server.start()
    finally:
        server.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_mismatch_is_reported_with_both_replies(redis_oracle, different_redis, protocol):
    steps = [("SET", "k", "v"), ("SELECT", "1"), ("SELECT", "5"), ("PING",)]
    with pytest.raises(Mismatch) as failure:
        run_sequence(redis_oracle, different_redis, steps, protocol, "databases")
    message = str(failure.value)
    assert f"'databases' (RESP{protocol}) differs at step {2 + (protocol == 3)}: SELECT 5" in message
    assert "redis-server: b'+OK\\r\\n'" in message
    assert "cxlredis:     b'-ERR DB index is out of range\\r\\n'" in message
    assert "SELECT 1 -> b'+OK\\r\\n'" in message


def test_a_missing_close_is_a_mismatch(redis_oracle, different_redis):
    # QUIT closes the connection; PING does not.  Claiming it must close has to fail.
    run_sequence(redis_oracle, different_redis, [cmd("QUIT", closes=True)])
    with pytest.raises(Mismatch):
        run_sequence(redis_oracle, different_redis, [("SELECT", "5"), cmd("PING", closes=True)])


def test_an_unexpected_reply_shifts_into_the_next_step(redis_oracle, different_redis):
    # The oracle is told to stay silent, the other server is not: the extra
    # reply must surface as a mismatch on the next step instead of vanishing.
    steps = [cmd("CLIENT", "REPLY", "OFF", replies=0), raw(b"PING\r\n", replies=0),
             ("CLIENT", "REPLY", "ON")]
    run_sequence(redis_oracle, different_redis, steps)
    with pytest.raises(Mismatch):
        run_sequence(redis_oracle, different_redis, [raw(b"SELECT 5\r\n", replies=0), ("PING",)])
