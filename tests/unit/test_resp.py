"""RequestParser and ReplyWriter (cxlredis._resp).

Expected bytes and error texts were taken from redis-server 7.0.15; the
differential tests at the end check them against a live redis-server.
"""
import asyncio
import math
import shutil
import socket
import subprocess
import time
import tracemalloc

import pytest
from hypothesis import given, settings, strategies as st

from cxlredis._resp import (LargeValueThreshold, ProtocolError, QueryBufferLimit, ReplyWriter,
                            RequestParser)
from cxlredis._store import Arena


class Large:
    """Token standing in for a large argument; keeps its target."""

    def __init__(self, target):
        self.target = target


def drain(parser, out):
    while True:
        argv = parser.next_command()
        if argv is None:
            size = parser.wants_target
            if not size:
                return
            target = bytearray(size)
            parser.set_target(target, Large(target))
            continue
        out.append([bytes(a.target) if isinstance(a, Large) else a for a in argv])


def feed(parser, *chunks, out=None):
    """Push each chunk through get_buffer/buffer_updated, draining after every
    read as a BufferedProtocol would; returns the commands (large arguments
    turned back into bytes)."""
    out = [] if out is None else out
    for chunk in chunks:
        pos = 0
        while pos < len(chunk):
            buf = parser.get_buffer(-1)
            n = min(len(buf), len(chunk) - pos)
            buf[:n] = chunk[pos:pos + n]
            parser.buffer_updated(n)
            pos += n
            drain(parser, out)
    return out


def push(parser, data):
    """One read of data (it must fit the buffer handed out), no draining; returns what
    buffer_updated() says: whether next_command() may have anything new."""
    buf = parser.get_buffer(-1)
    buf[:len(data)] = data
    return parser.buffer_updated(len(data))


def test_reads_that_only_fill_a_large_argument_leave_nothing_to_parse():
    """The connection runs nothing after a read buffer_updated() answers False for."""
    value = bytes(range(256)) * 400
    parser = RequestParser()
    assert push(parser, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % len(value)) is True
    assert parser.next_command() is None
    target = bytearray(parser.wants_target)
    parser.set_target(target, target)
    pieces = [value[i:i + 30000] for i in range(0, len(value), 30000)]
    assert [push(parser, piece) for piece in pieces] == [False] * (len(pieces) - 1) + [True]
    assert push(parser, b"\r\n") is True
    assert parser.next_command() == [b"SET", b"k", target] and target == value
    # past the query buffer limit mid-argument: True, so the next next_command() raises
    parser = RequestParser()
    parser.query_buffer_limit = 50000
    push(parser, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % len(value))
    parser.next_command()
    target = bytearray(parser.wants_target)
    parser.set_target(target, target)
    assert push(parser, value[:30000]) is False
    assert push(parser, value[30000:60000]) is True
    with pytest.raises(QueryBufferLimit):
        parser.next_command()


def test_a_target_with_room_for_the_crlf_ends_the_command_in_the_read_that_fills_it():
    """A target 2 bytes longer than the argument (an arena block has the room) takes the
    CRLF after it as well: the read bringing the value's end completes the command, with
    no read left for the CRLF alone; what follows parses as before."""
    value = bytes(range(256)) * 40
    data = multibulk(b"SET", b"k", value) + multibulk(b"GET", b"k")
    head = data.index(value) + 100
    parser = RequestParser(large_arg_threshold=1024)
    push(parser, data[:head])
    assert parser.next_command() is None
    room = bytearray(len(value) + 2)
    parser.set_target(room, "tok")
    assert parser.filling_target
    assert len(parser.get_buffer(-1)) == len(value) + 2 - 100
    rest = data[head:data.index(value) + len(value) + 2]
    assert push(parser, rest[:-3]) is False
    assert push(parser, rest[-3:]) is True                  # the value's last byte and the CRLF
    assert not parser.filling_target
    assert room[:len(value)] == value and room[len(value):] == b"\r\n"
    assert parser.next_command() == [b"SET", b"k", "tok"]
    assert feed(parser, multibulk(b"GET", b"k")) == [[b"GET", b"k"]]
    # value, CRLF and the next command already buffered when the target comes: taken at once
    parser = RequestParser(large_arg_threshold=1024)
    push(parser, data)
    assert parser.next_command() is None
    room = bytearray(len(value) + 2)
    parser.set_target(room, "tok")
    assert not parser.filling_target
    assert parser.next_command() == [b"SET", b"k", "tok"]
    assert parser.next_command() == [b"GET", b"k"]
    # the CRLF is not checked, as Redis does not check it after a large argument
    parser = RequestParser(large_arg_threshold=1024)
    push(parser, data[:head])
    assert parser.next_command() is None
    parser.set_target(bytearray(len(value) + 2), "tok")
    assert feed(parser, data[head:data.index(value) + len(value)] + b"??" + b"PING\r\n") == [
        [b"SET", b"k", "tok"], [b"PING"]]


def multibulk(*args):
    out = b"*%d\r\n" % len(args)
    for arg in args:
        out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    return out


def parse_error(parser, data):
    """Feed data; return (commands before the error, error text)."""
    out = []
    with pytest.raises(ProtocolError) as info:
        feed(parser, data, out=out)
    return out, str(info.value)


# ---- parser: valid input -------------------------------------------------------

def test_multibulk_and_pipelining():
    data = multibulk(b"SET", b"key", b"va\r\nlue") + multibulk(b"GET", b"key") * 3
    assert feed(RequestParser(), data) == [[b"SET", b"key", b"va\r\nlue"]] + [[b"GET", b"key"]] * 3


def test_small_arguments_are_bytes():
    (argv,) = feed(RequestParser(), multibulk(b"SET", b"k", b"x" * 65535))
    assert all(type(a) is bytes for a in argv)


@pytest.mark.parametrize("line, argv", [
    (b"PING", [b"PING"]),
    (b'SET a "b c"', [b"SET", b"a", b"b c"]),
    (b'ECHO "a\\x41\\n\\q"', [b"ECHO", b"aA\nq"]),
    (b"ECHO 'a\\'b\\n'", [b"ECHO", b"a'b\\n"]),
    (b'ECHO "a\\"b"', [b"ECHO", b'a"b']),
    (b'ECHO "\\xZZ" "\\x4" "\\xff\\x00"', [b"ECHO", b"xZZ", b"x4", b"\xff\x00"]),
    (b"ECHO 'a\\x41'", [b"ECHO", b"a\\x41"]),
    (b'ECHO "\\b\\a\\t\\r"', [b"ECHO", b"\b\a\t\r"]),
    (b"  ECHO   \t x  ", [b"ECHO", b"x"]),
    (b'ECHO\t"a"\t', [b"ECHO", b"a"]),
    (b"ECHO a\x0bb", [b"ECHO", b"a\x0bb"]),         # \v is skipped between tokens, kept inside
    (b'ECHO "a"\x0b', [b"ECHO", b"a"]),
    (b"ECHO a\rb", [b"ECHO", b"a", b"b"]),
    (b"ECHO \"\" ''", [b"ECHO", b"", b""]),
    (b'a"b c" d', [b"ab c", b"d"]),                 # a quote may open mid-token
    (b"\x0b\x0cPING", [b"PING"]),
])
def test_inline_splitting(line, argv):
    assert feed(RequestParser(), line + b"\r\n") == [argv]
    assert feed(RequestParser(), line + b"\n") == [argv]


def test_blank_lines_and_empty_multibulks_are_skipped():
    data = b"\r\n\n   \r\n*0\r\n*-1\r\n*-5\r\n*-9223372036854775808\r\nPING\r\n"
    assert feed(RequestParser(), data) == [[b"PING"]]


def test_crlf_after_bulk_is_not_checked():
    # Redis skips the two bytes after a bulk without looking at them.
    assert feed(RequestParser(), b"*1\r\n$4\r\nPINGXYPING\r\n") == [[b"PING"], [b"PING"]]
    assert feed(RequestParser(), b"*1\rX$4\r\nPING\r\n") == [[b"PING"]]


def test_incomplete_command_waits():
    parser = RequestParser()
    assert feed(parser, b"*2\r\n$4\r\nECHO\r\n$3\r\nab") == []
    assert parser.pending_args == [b"ECHO"]
    assert parser.buffered == 2              # the parsed "ECHO" is no longer buffered
    assert feed(parser, b"c\r\n") == [[b"ECHO", b"abc"]]
    assert parser.buffered == 0


def test_nul_before_line_end_hides_it():
    # Redis searches header lines with strchr(), which stops at a NUL.
    parser = RequestParser()
    assert feed(parser, b"*1\x00\r\n$4\r\nPING\r\n") == []
    assert feed(RequestParser(), b"PI\x00NG\r\n") == []
    _, text = parse_error(parser, b"x" * 70000)
    assert text == "Protocol error: too big mbulk count string"


PIPELINE = (
    multibulk(b"SET", b"k", b"v\r\n")
    + b"PING\r\n\r\n*0\r\n"
    + b'SET a "b c" \'d\'\n'
    + multibulk(b"SET", b"big", b"L" * 40, b"EX", b"10")
    + multibulk(b"MSET", b"a", b"B" * 33, b"b", b"C" * 32)
    + multibulk(b"")
    + b"*-1\r\n"
    + multibulk(b"GET", b"k")
)
PIPELINE_COMMANDS = [
    [b"SET", b"k", b"v\r\n"], [b"PING"], [b"SET", b"a", b"b c", b"d"],
    [b"SET", b"big", b"L" * 40, b"EX", b"10"],
    [b"MSET", b"a", b"B" * 33, b"b", b"C" * 32], [b""], [b"GET", b"k"],
]


def test_every_split_point_gives_the_same_commands():
    # threshold 32: the 40-, 33- and 32-byte arguments go through targets
    for cut in range(len(PIPELINE) + 1):
        parser = RequestParser(large_arg_threshold=32)
        assert feed(parser, PIPELINE[:cut], PIPELINE[cut:]) == PIPELINE_COMMANDS, cut
        assert parser.buffered == 0


def test_byte_by_byte():
    parser = RequestParser(large_arg_threshold=32)
    assert feed(parser, *[PIPELINE[i:i + 1] for i in range(len(PIPELINE))]) == PIPELINE_COMMANDS


@settings(max_examples=150, deadline=None)
@given(commands=st.lists(st.lists(st.binary(max_size=80), min_size=1, max_size=5), min_size=1, max_size=8),
       cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=10),
       threshold=st.sampled_from([1, 16, 65536]))
def test_random_pipelines_and_chunking(commands, cuts, threshold):
    data = b"".join(multibulk(*argv) for argv in commands)
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in zip(bounds, bounds[1:])]
    assert feed(RequestParser(large_arg_threshold=threshold), *chunks) == commands


# ---- parser: large arguments ----------------------------------------------------

def test_large_argument_is_received_into_the_target():
    parser = RequestParser(large_arg_threshold=1024)
    value = bytes(range(256)) * 20                       # 5120 bytes
    data = multibulk(b"SET", b"key", value) + b"PING\r\n"
    head = data.index(value) + 1000                       # 1000 bytes of the value already here
    push(parser, data[:head])
    assert parser.next_command() is None
    assert parser.wants_target == len(value)
    assert parser.pending_args == [b"SET", b"key"]
    assert parser.buffered == 1000

    target = bytearray(len(value))
    token = object()
    parser.set_target(target, token)
    assert parser.wants_target == 0
    assert target[:1000] == value[:1000]
    assert parser.buffered == 1000
    rest = data[head:]
    view = parser.get_buffer(-1)
    assert len(view) == len(value) - 1000                 # exactly the rest of the target
    view[:2000] = rest[:2000]
    parser.buffer_updated(2000)
    assert parser.next_command() is None
    view = parser.get_buffer(-1)
    assert len(view) == len(value) - 3000
    view[:] = rest[2000:len(value) - 1000]
    parser.buffer_updated(len(view))
    assert target == value
    assert parser.next_command() is None                  # the CRLF is still missing
    assert feed(parser, rest[len(value) - 1000:]) == [[b"SET", b"key", token], [b"PING"]]


def test_large_argument_already_buffered_with_following_commands():
    parser = RequestParser(large_arg_threshold=100)
    push(parser, multibulk(b"ECHO", b"v" * 500) + b"PING\r\n" + multibulk(b"GET", b"k"))
    assert parser.next_command() is None
    target = memoryview(bytearray(500))
    parser.set_target(target, "tok")                       # completes at once
    assert bytes(target) == b"v" * 500
    assert parser.next_command() == [b"ECHO", "tok"]
    assert parser.next_command() == [b"PING"]
    assert parser.next_command() == [b"GET", b"k"]
    assert parser.next_command() is None


def test_after_a_large_argument_a_read_asks_for_16_kib():
    """A client that sends large arguments gets reads of 16 KiB (Redis's PROTO_IOBUF_LEN),
    so the next one's header comes with at most that much of its value, copied into its
    target; after a command without one, a read asks for the whole buffer again."""
    parser = RequestParser(large_arg_threshold=1024)
    assert len(parser.get_buffer(-1)) == 65536
    data = multibulk(b"SET", b"k", b"v" * 4096)
    push(parser, data[:100])
    assert parser.next_command() is None
    parser.set_target(bytearray(4096), "tok")
    assert feed(parser, data[100:]) == [[b"SET", b"k", "tok"]]
    assert len(parser.get_buffer(-1)) == 16384
    # an element that needs more than 16 KiB still gets all it needs in one read
    assert feed(parser, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n") == []
    assert feed(parser, b"x" * 1002) == [[b"SET", b"k", b"x" * 1000]]
    assert len(parser.get_buffer(-1)) == 65536             # a small command: whole reads again


def test_large_argument_target_misuse():
    parser = RequestParser(large_arg_threshold=10)
    with pytest.raises(RuntimeError):
        parser.set_target(bytearray(10), None)             # nothing waits
    push(parser, b"*1\r\n$20\r\n")
    assert parser.next_command() is None
    with pytest.raises(RuntimeError):
        parser.get_buffer(-1)                               # must set a target first
    with pytest.raises(ValueError):
        parser.set_target(bytearray(19), None)
    with pytest.raises(ValueError):
        parser.set_target(bytearray(21), None)              # the argument, or 2 more
    with pytest.raises(ValueError):
        parser.set_target(bytearray(23), None)
    with pytest.raises((BufferError, TypeError)):
        parser.set_target(bytes(20), None)                  # read-only
    assert parser.wants_target == 20
    target = bytearray(20)
    parser.set_target(target, None)
    with pytest.raises(RuntimeError):
        parser.set_target(bytearray(20), None)


def test_drop_target_releases_the_buffer():
    parser = RequestParser(large_arg_threshold=10)
    push(parser, b"*2\r\n$3\r\nSET\r\n$100\r\n" + b"x" * 30)
    assert parser.next_command() is None
    target = bytearray(100)
    parser.set_target(target, "tok")
    assert target[:30] == b"x" * 30
    with pytest.raises(BufferError):
        target.extend(b"!")                                  # exported to the parser
    assert parser.drop_target() == "tok"
    target.extend(b"!")                                      # released
    assert parser.wants_target == 0 and parser.buffered == 0
    assert parser.pending_args == [b"SET"]                   # for releasing completed large arguments
    assert feed(parser, b"PING\r\n") == []                   # closing: input is ignored
    assert parser.drop_target() is None


# ---- parser: errors ---------------------------------------------------------------

@pytest.mark.parametrize("data, text", [
    (b"*-0\r\n", "invalid multibulk length"),
    (b"*01\r\n", "invalid multibulk length"),
    (b"*+1\r\n", "invalid multibulk length"),
    (b"* 1\r\n", "invalid multibulk length"),
    (b"*\r\n", "invalid multibulk length"),
    (b"*abc\r\n", "invalid multibulk length"),
    (b"*2147483648\r\n", "invalid multibulk length"),
    (b"*99999999999999999999\r\n", "invalid multibulk length"),
    (b"*-9223372036854775809\r\n", "invalid multibulk length"),
    (b"*1\r\n$-1\r\n", "invalid bulk length"),
    (b"*1\r\n$-0\r\n", "invalid bulk length"),
    (b"*1\r\n$04\r\n", "invalid bulk length"),
    (b"*1\r\n$abc\r\n", "invalid bulk length"),
    (b"*1\r\n$\r\n", "invalid bulk length"),
    (b"*1\r\n$536870913\r\n", "invalid bulk length"),
    (b"*1\r\n$99999999999999999999\r\n", "invalid bulk length"),
    (b"*1\r\n$" + b"1" * 65534 + b"\r\n", "invalid bulk length"),
    (b"*1\r\nX4\r\n", "expected '$', got 'X'"),
    (b"*1\r\n\r\nPING\r\n", "expected '$', got ' '"),
    (b"*1\r\n\xff4\r\n", "expected '$', got '\udcff'"),
    (b'ECHO "a"b\r\n', "unbalanced quotes in request"),
    (b"ECHO 'a'b\r\n", "unbalanced quotes in request"),
    (b'ECHO a"b c"d\r\n', "unbalanced quotes in request"),
    (b'ECHO "a\r\n', "unbalanced quotes in request"),
    (b"ECHO 'a\r\n", "unbalanced quotes in request"),
    (b'ECHO "a\\\r\n', "unbalanced quotes in request"),
    (b"a" * 65537, "too big inline request"),
    (b"*" + b"1" * 65536, "too big mbulk count string"),
    (b"*1\r\n$" + b"1" * 65536, "too big bulk count string"),
])
def test_protocol_error_texts(data, text):
    before, got = parse_error(RequestParser(), b"PING\r\n" + data)
    assert before == [[b"PING"]]
    assert got == "Protocol error: " + text


def test_lines_up_to_the_limit_are_accepted():
    assert feed(RequestParser(), b"a" * 65536) == []
    assert feed(RequestParser(), b"*" + b"1" * 65535) == []


def test_error_is_sticky():
    parser = RequestParser()
    parse_error(parser, b"*1\r\n$-3\r\nPING\r\n")
    with pytest.raises(ProtocolError):
        parser.next_command()


def test_unauthenticated_limits():
    parser = RequestParser()
    parser.authenticated = False
    assert feed(parser, b"*10\r\n") == []
    assert feed(RequestParser(), b"*11\r\n") == []                    # authenticated: fine
    parser = RequestParser()
    parser.authenticated = False
    assert parse_error(parser, b"*11\r\n")[1] == "Protocol error: unauthenticated multibulk length"
    parser = RequestParser()
    parser.authenticated = False
    assert feed(parser, b"*1\r\n$16384\r\n") == []
    parser = RequestParser()
    parser.authenticated = False
    assert parse_error(parser, b"*1\r\n$16385\r\n")[1] == "Protocol error: unauthenticated bulk length"


def test_unauthenticated_limits_do_not_apply_after_auth():
    parser = RequestParser()
    parser.authenticated = False
    parser.authenticated = True
    assert feed(parser, b"*11\r\n$16385\r\n") == []


def test_runtime_limits():
    parser = RequestParser(proto_max_bulk_len=100)
    assert parser.proto_max_bulk_len == 100
    assert feed(parser, b"*1\r\n$100\r\n") == []
    parser = RequestParser()
    parser.proto_max_bulk_len = 100
    assert parse_error(parser, b"*1\r\n$101\r\n")[1] == "Protocol error: invalid bulk length"


def _peak_allocation(action):
    tracemalloc.start()
    try:
        action()
    except ProtocolError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_limits_are_checked_before_allocating():
    def oversized_bulk():
        parser = RequestParser(proto_max_bulk_len=1 << 20, large_arg_threshold=1 << 40)
        feed(parser, b"*1\r\n$2000000000\r\n")

    def allowed_bulk():   # control: proves the measurement sees the buffer growing
        parser = RequestParser(proto_max_bulk_len=1 << 30, large_arg_threshold=1 << 40)
        feed(parser, b"*1\r\n$20000000\r\n")
        parser.get_buffer(-1)

    def huge_multibulk():
        parser = RequestParser()
        feed(parser, b"*2147483647\r\n$3\r\nGET\r\n")
        assert parser.pending_args == [b"GET"]

    def huge_large_argument():   # waits for a target: the parser itself allocates nothing
        parser = RequestParser(proto_max_bulk_len=1 << 32)
        push(parser, b"*1\r\n$4000000000\r\n")
        assert parser.next_command() is None
        assert parser.wants_target == 4000000000

    assert _peak_allocation(allowed_bulk) > 20_000_000
    for action in (oversized_bulk, huge_multibulk, huge_large_argument):
        assert _peak_allocation(action) < 1 << 20, action.__name__


def test_query_buffer_limit():
    parser = RequestParser(query_buffer_limit=1000)
    assert feed(parser, b"*2\r\n$3\r\nGET\r\n$2000\r\n" + b"x" * 900) == []
    # checked when the bytes arrive, before parsing: the complete command in
    # this read is not returned
    push(parser, b"x" * 1100 + b"\r\nPING\r\n")
    with pytest.raises(QueryBufferLimit):
        parser.next_command()
    with pytest.raises(QueryBufferLimit):
        parser.next_command()


def test_query_buffer_limit_counts_the_large_argument_in_its_target():
    parser = RequestParser(large_arg_threshold=100, query_buffer_limit=1000)
    parser.query_buffer_limit = 5000
    assert parser.query_buffer_limit == 5000
    assert feed(parser, b"*2\r\n$3\r\nSET\r\n$8000\r\n" + b"x" * 4000) == []
    assert parser.buffered == 4000
    with pytest.raises(QueryBufferLimit):
        feed(parser, b"x" * 1001)


def test_buffer_compacts_grows_and_shrinks():
    parser = RequestParser()
    assert len(parser.get_buffer(-1)) == 65536
    # a 65535-byte argument (below the threshold) needs more than 64 KiB
    data = multibulk(b"SET", b"k", b"v" * 65535)
    assert feed(parser, data[:60000]) == []
    assert len(parser.get_buffer(-1)) >= len(data) - 60000
    assert feed(parser, data[60000:]) == [[b"SET", b"k", b"v" * 65535]]
    assert len(parser.get_buffer(-1)) == 65536            # idle: back to the initial size
    # pipelined small commands never grow it, and the partial command left at
    # the end of the buffer is moved to the front instead of forcing tiny reads
    small = multibulk(b"SET", b"key:000001", b"x" * 100) * 5000
    commands, pos = [], 0
    while pos < len(small):
        buf = parser.get_buffer(-1)
        assert 4096 <= len(buf) <= 65536
        n = min(len(buf), len(small) - pos, 1000)
        buf[:n] = small[pos:pos + n]
        parser.buffer_updated(n)
        pos += n
        drain(parser, commands)
    assert len(commands) == 5000


# ---- writer ---------------------------------------------------------------------

class Transport:
    def __init__(self):
        self.calls = []

    def writelines(self, parts):
        self.calls.append(list(parts))

    def data(self):
        return b"".join(bytes(p) for call in self.calls for p in call)


def written(protocol, action):
    writer = ReplyWriter(protocol)
    action(writer)
    transport = Transport()
    writer.flush(transport)
    assert writer.pending == 0
    return transport.data()


@pytest.mark.parametrize("action, resp2, resp3", [
    (lambda w: w.ok(), b"+OK\r\n", b"+OK\r\n"),
    (lambda w: w.simple("PONG"), b"+PONG\r\n", b"+PONG\r\n"),
    (lambda w: w.simple(b"QUEUED"), b"+QUEUED\r\n", b"+QUEUED\r\n"),
    (lambda w: w.error("ERR bad\r\nthing\n"), b"-ERR bad  thing \r\n", b"-ERR bad  thing \r\n"),
    (lambda w: w.integer(0), b":0\r\n", b":0\r\n"),
    (lambda w: w.integer(-42), b":-42\r\n", b":-42\r\n"),
    (lambda w: w.integer(2**63 - 1), b":9223372036854775807\r\n", b":9223372036854775807\r\n"),
    (lambda w: w.integer(-2**63), b":-9223372036854775808\r\n", b":-9223372036854775808\r\n"),
    (lambda w: w.bulk(b""), b"$0\r\n\r\n", b"$0\r\n\r\n"),
    (lambda w: w.bulk("h\xe9"), b"$3\r\nh\xc3\xa9\r\n", b"$3\r\nh\xc3\xa9\r\n"),
    (lambda w: w.bulk(bytearray(b"ab")), b"$2\r\nab\r\n", b"$2\r\nab\r\n"),
    (lambda w: w.bulk(memoryview(b"xabc")[1:]), b"$3\r\nabc\r\n", b"$3\r\nabc\r\n"),
    (lambda w: w.null(), b"$-1\r\n", b"_\r\n"),
    (lambda w: w.null_array(), b"*-1\r\n", b"_\r\n"),
    (lambda w: w.array(3), b"*3\r\n", b"*3\r\n"),
    (lambda w: w.map(2), b"*4\r\n", b"%2\r\n"),
    (lambda w: w.set(2), b"*2\r\n", b"~2\r\n"),
    (lambda w: w.push(3), b"*3\r\n", b">3\r\n"),
    (lambda w: w.boolean(True), b":1\r\n", b"#t\r\n"),
    (lambda w: w.boolean(False), b":0\r\n", b"#f\r\n"),
    (lambda w: w.verbatim("a\nb"), b"$3\r\na\nb\r\n", b"=7\r\ntxt:a\nb\r\n"),
    (lambda w: w.verbatim(b"x", fmt="mkd"), b"$1\r\nx\r\n", b"=5\r\nmkd:x\r\n"),
    (lambda w: w.bulk_array([b"a", None, "b"]), b"*3\r\n$1\r\na\r\n$-1\r\n$1\r\nb\r\n",
     b"*3\r\n$1\r\na\r\n_\r\n$1\r\nb\r\n"),
    (lambda w: w.bulk_array(iter([])), b"*0\r\n", b"*0\r\n"),
    (lambda w: w.raw(b"+X\r\n"), b"+X\r\n", b"+X\r\n"),
])
def test_writer_encodings(action, resp2, resp3):
    assert written(2, action) == resp2
    assert written(3, action) == resp3


# Formatting observed from redis-server 7.0.15 (ZADD + ZSCORE, RESP2 and RESP3)
DOUBLES = [
    (1.5, b"1.5"), (10.0, b"10"), (0.1, b"0.10000000000000001"), (1e100, b"1e+100"),
    (3.0000000000000004, b"3.0000000000000004"), (math.inf, b"inf"), (-math.inf, b"-inf"),
    (-0.0, b"-0"), (1.2345678901234568e17, b"1.2345678901234568e+17"), (1e-300, b"1e-300"),
    (5e-324, b"4.9406564584124654e-324"), (1e15, b"1000000000000000"), (123.456, b"123.456"),
    (-1.5e-7, b"-1.4999999999999999e-07"), (0.30000000000000004, b"0.30000000000000004"),
]


@pytest.mark.parametrize("value, text", DOUBLES)
def test_writer_doubles(value, text):
    assert written(2, lambda w: w.double(value)) == b"$%d\r\n%s\r\n" % (len(text), text)
    assert written(3, lambda w: w.double(value)) == b",%s\r\n" % text


def test_writer_protocol_switch_and_validation():
    writer = ReplyWriter()
    assert writer.protocol == 2
    writer.protocol = 3
    writer.null()
    with pytest.raises(ValueError):
        writer.protocol = 4
    with pytest.raises(OverflowError):
        writer.integer(2**63)
    with pytest.raises(ValueError):
        writer.verbatim("x", fmt="text")
    transport = Transport()
    writer.flush(transport)
    assert transport.data() == b"_\r\n"


def test_protocol_error_text_round_trips_raw_bytes():
    with pytest.raises(ProtocolError) as info:
        feed(RequestParser(), b"*1\r\n\xff4\r\n")
    assert written(2, lambda w: w.error("ERR " + str(info.value))) == \
        b"-ERR Protocol error: expected '$', got '\xff'\r\n"


def test_large_bytes_are_queued_by_reference_other_buffers_copied():
    writer = ReplyWriter(large_threshold=1000)
    big = memoryview(bytearray(b"B" * 5000))
    writer.simple("a")
    writer.bulk(big)                             # not bytes: copied, however large
    writer.bulk(b"s" * 999)                      # below the threshold: copied
    big_bytes = b"C" * 1000
    writer.bulk(big_bytes)
    writer.bulk(bytearray(b"D" * 2000))
    assert writer.pending == 4 + 7 + 5000 + 2 + (6 + 999 + 2) + 7 + 1000 + 2 + 7 + 2000 + 2
    transport = Transport()
    assert writer.flush(transport) == []
    (parts,) = transport.calls
    assert parts[0] == b"+a\r\n$5000\r\n" + b"B" * 5000 + b"\r\n$999\r\n" + b"s" * 999 + b"\r\n$1000\r\n"
    assert parts[1] is big_bytes
    assert parts[2] == b"\r\n$2000\r\n" + b"D" * 2000 + b"\r\n"
    assert writer.pending == 0
    assert writer.flush(transport) == [] and len(transport.calls) == 1   # nothing to write


@pytest.fixture
def arena(tmp_path):
    a = Arena(str(tmp_path / "writer.arena"), 8 << 20)
    yield a
    a.close()


def pinned(arena):
    return arena.stats()["pinned"]


def test_entry_tokens_and_rollback(arena):
    writer = ReplyWriter(large_threshold=1000)
    big = arena.set(0, b"big", b"v" * 3000)
    other = arena.set(0, b"other", b"o" * 2000)
    writer.entry(arena.find(0, b"big"))
    mark = writer.mark()
    writer.integer(5)
    writer.entry(arena.find(0, b"other"))
    writer.bulk(b"x" * 100000)
    assert pinned(arena) == 2
    assert writer.rollback(mark) == [(arena, other)]
    arena.unpin(other)
    assert writer.pending == 7 + 3000 + 2
    transport = Transport()
    assert writer.flush(transport) == [(arena, big)]
    assert type(transport.calls[0][1]) is memoryview
    assert transport.data() == b"$3000\r\n" + b"v" * 3000 + b"\r\n"
    arena.unpin(big)
    with pytest.raises(ValueError):
        writer.rollback(mark)                     # predates the flush
    writer.entry(arena.find(0, b"big"), 1000, 2500)
    assert writer.discard() == [(arena, big)]
    arena.unpin(big)
    assert writer.pending == 0 and pinned(arena) == 0


def test_framed_entry_frames_the_value_by_the_same_rule(arena):
    """A DUMP payload: header + value + footer in one bulk; the value copied below the
    threshold, pinned and sent as its arena view at or above it."""
    writer = ReplyWriter(large_threshold=1000)
    small = b"s" * 999
    big = arena.set(0, b"big", b"b" * 1000)
    bigger = arena.set(0, b"bigger", b"B" * 2000)
    arena.set(0, b"small", small)
    writer.framed_entry(b"HEAD", arena.find(0, b"small"), b"FOOTER")
    assert pinned(arena) == 0
    writer.framed_entry(b"H", arena.find(0, b"big"), b"")
    writer.framed_entry(b"", arena.find(0, b"bigger"), b"F")
    assert pinned(arena) == 2
    transport = Transport()
    assert writer.flush(transport) == [(arena, big), (arena, bigger)]
    assert [type(part) for part in transport.calls[0]].count(memoryview) == 2
    assert transport.data() == (b"$1009\r\nHEAD" + small + b"FOOTER\r\n"
                                + b"$1001\r\nH" + b"b" * 1000 + b"\r\n"
                                + b"$2001\r\n" + b"B" * 2000 + b"F\r\n")
    arena.unpin(big)
    arena.unpin(bigger)
    assert pinned(arena) == 0


def test_entry_copies_below_the_threshold_and_ranges(arena):
    writer = ReplyWriter(large_threshold=1000)
    off = arena.set(0, b"k", bytes(range(256)) * 8)
    writer.entry(arena.find(0, b"k"), 0, 999)              # 999 bytes: copied, no pin
    writer.entry(arena.find(0, b"k"), 100)                 # to the end: 1948 bytes, pinned
    writer.entry(arena.find(0, b"k"), 5, 6)
    assert pinned(arena) == 1
    transport = Transport()
    assert writer.flush(transport) == [(arena, off)]
    value = bytes(range(256)) * 8
    assert transport.data() == (b"$999\r\n" + value[:999] + b"\r\n$1948\r\n" + value[100:]
                                + b"\r\n$1\r\n" + value[5:6] + b"\r\n")
    arena.unpin(off)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["entry", "bulk-view", "bulk-bytes", "threshold"]),
                          st.integers(1, 6000)), max_size=25))
def test_arena_memory_is_never_queued_without_a_pin(tmp_path_factory, steps):
    """Whatever the threshold does between calls, every part flush() hands over that is
    not a bytes object is the bytes of an entry the writer pinned and returns a token of;
    and what the client receives is the value as it was, after the entries were freed
    and their blocks reused."""
    arena = Arena(str(tmp_path_factory.mktemp("w") / "a.arena"), 8 << 20)
    try:
        threshold = LargeValueThreshold(1024)
        writer = ReplyWriter(2, threshold)
        expected = b""
        for i, (action, size) in enumerate(steps):
            if action == "threshold":
                threshold.value = size
                continue
            value = bytes([i % 251]) * size
            off = arena.set(0, b"k%d" % i, value)
            if action == "entry":
                writer.entry(arena.find(0, b"k%d" % i))
            elif action == "bulk-view":
                writer.bulk(arena.view(off))
            else:
                writer.bulk(value)
            expected += b"$%d\r\n%s\r\n" % (size, value)
            arena.delete(0, b"k%d" % i)
        transport = Transport()
        tokens = writer.flush(transport)
        assert pinned(arena) == len(tokens)
        parts = transport.calls[0] if transport.calls else []
        by_reference = [part for part in parts if type(part) is not bytes]
        assert len(by_reference) == len(tokens)
        for i in range(len(steps)):               # reuse every freed block
            arena.set(0, b"n%d" % i, b"\xee" * 6000)
        assert transport.data() == expected
        for token_arena, off in tokens:
            token_arena.unpin(off)
    finally:
        arena.close()


def test_one_threshold_for_parser_and_writer(arena):
    """CONFIG SET large-value-threshold changes the one object every connection reads."""
    threshold = LargeValueThreshold(1000)
    parser, writer = RequestParser(large_arg_threshold=threshold), ReplyWriter(2, threshold)
    off = arena.set(0, b"k", b"v" * 2000)
    threshold.value = 4000
    assert parser.large_arg_threshold == writer.large_threshold == 4000
    assert feed(parser, b"*2\r\n$4\r\necho\r\n$2000\r\n" + b"a" * 2000 + b"\r\n") == \
        [[b"echo", b"a" * 2000]]                  # 2000 < 4000: an ordinary argument now
    writer.entry(arena.find(0, b"k"))                      # and a value copied, not pinned
    assert pinned(arena) == 0
    threshold.value = 10
    writer.entry(arena.find(0, b"k"))
    assert pinned(arena) == 1
    assert writer.discard() == [(arena, off)]
    arena.unpin(off)
    with pytest.raises(ValueError):
        threshold.value = 0


def test_writer_buffer_grows_and_keeps_order():
    writer = ReplyWriter(large_threshold=1 << 30)
    expected = b""
    for i in range(3000):
        value = bytes([65 + i % 26]) * (i % 700)
        writer.bulk(value)
        expected += b"$%d\r\n%s\r\n" % (len(value), value)
    transport = Transport()
    writer.flush(transport)
    assert transport.data() == expected
    writer.ok()
    writer.flush(transport)
    assert transport.calls[-1] == [b"+OK\r\n"]


# ---- differential: the same bytes to redis-server and to a RESP echo server -------

REDIS = shutil.which("redis-server")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_port():
    if REDIS is None:
        pytest.skip("redis-server not installed")
    port = _free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


class EchoProtocol(asyncio.BufferedProtocol):
    """Just enough of a server for the differential: PING, ECHO and SET."""

    def __init__(self, settings):
        self.parser = RequestParser(query_buffer_limit=settings["query_buffer_limit"])
        self.parser.authenticated = not settings["requirepass"]
        self.writer = ReplyWriter()

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        return self.parser.get_buffer(sizehint)

    def buffer_updated(self, nbytes):
        try:
            self.parser.buffer_updated(nbytes)
            while True:
                argv = self.parser.next_command()
                if argv is None:
                    size = self.parser.wants_target
                    if not size:
                        break
                    target = bytearray(size)
                    self.parser.set_target(target, target)
                    continue
                self.execute(argv)
        except ProtocolError as error:
            self.writer.error("ERR " + str(error))
            self.writer.flush(self.transport)
            self.transport.close()
            return
        except QueryBufferLimit:
            self.writer.discard()
            self.transport.close()
            return
        self.writer.flush(self.transport)

    def execute(self, argv):
        name = bytes(argv[0]).upper()
        if name == b"PING":
            self.writer.simple("PONG") if len(argv) == 1 else self.writer.bulk(argv[1])
        elif name == b"ECHO":
            self.writer.bulk(argv[1])
        elif name == b"SET":
            self.writer.ok()
        else:
            self.writer.error("ERR unsupported by the echo server")


async def _exchange(port, data, timeout):
    """Send data, collect the reply until the server closes or goes quiet;
    returns (reply, closed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    reply, closed = b"", False
    try:
        writer.write(data)
        await writer.drain()
    except ConnectionError:
        pass
    try:
        while True:
            chunk = await asyncio.wait_for(reader.read(1 << 20), timeout)
            if not chunk:
                closed = True
                break
            reply += chunk
    except asyncio.TimeoutError:
        pass
    except ConnectionError:
        closed = True
    writer.close()
    return reply, closed


def _raw(port, data):
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(data)
        s.settimeout(5)
        reply = b""
        while not reply.endswith(b"\r\n"):
            reply += s.recv(65536)
        return reply


DIFFERENTIAL_CASES = [
    b"PING\r\n", b"PING\n", b"\r\nPING\r\n", b"   \r\nPING\r\n", b"PING\r\n\n",
    b"*0\r\nPING\r\n", b"*-1\r\nPING\r\n", b"*-5\r\nPING\r\n", b"*-9223372036854775808\r\nPING\r\n",
    b"*-0\r\nPING\r\n", b"*01\r\n$4\r\nPING\r\n", b"*+1\r\n$4\r\nPING\r\n", b"* 1\r\n$4\r\nPING\r\n",
    b"*1\rX$4\r\nPING\r\n", b"*1\r\n$4\r\nPINGXYPING\r\n", b"*1\r\n$4\r\nPINGXY",
    b"PING\r\n*abc\r\n", b"*2147483648\r\n", b"*2147483647\r\n", b"*99999999999999999999\r\n",
    b"*-9223372036854775809\r\n", b"*\r\n",
    b"*1\r\n$-1\r\n", b"*1\r\n$-0\r\n", b"*1\r\n$04\r\nPING\r\n", b"*1\r\n$\r\n", b"*1\r\n$abc\r\n",
    b"*1\r\nX4\r\nPING\r\n", b"*1\r\n\r\nPING\r\n", b"*1\r\n\xff4\r\n",
    b"*1\r\n$536870913\r\n", b"*1\r\n$99999999999999999999\r\n",
    b"*1\r\n$" + b"1" * 65534 + b"\r\n",
    b"PING\r\n*1\r\n$4\r\nPING\r\n*1\r\n$-3\r\nPING\r\n",
    b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nPING\r\nZ",
    b'ECHO "a\\x41\\n\\q"\r\n', b"ECHO 'a\\'b\\n'\r\n", b'ECHO "a\\"b"\r\n', b'ECHO "\\xZZ"\r\n',
    b'ECHO "\\x4"\r\n', b'ECHO "\\xff\\x00"\r\n', b"ECHO 'a\\x41'\r\n", b'ECHO "\\b\\a\\t\\r"\r\n',
    b"  ECHO   \t x  \r\n", b'ECHO\t"a"\t\r\n', b"ECHO a\x0bb\r\n", b'ECHO "a"\x0b\r\n', b"ECHO \"\"\r\n",
    b'ECHO a"b c" \r\n', b"PING \"a b\"\r\n",
    b'PING\r\nSET a "b\r\n', b'ECHO "a"b\r\n', b"ECHO 'a'b\r\n", b'ECHO a"b c"d\r\n', b'ECHO "a\r\n',
    b"ECHO 'a\r\n", b'ECHO "a\\\r\n',
    b"*1\x00\r\n$4\r\nPING\r\n", b"PI\x00NG\r\n",
    b"*1\x00\r\n" + b"x" * 70000, b"*1\r\n$4\x00\r\nPING\r\n" + b"x" * 70000, b"PING\x00\n" + b"x" * 70000,
    b"PING\r\n" + b"a" * 65536, b"PING\r\n" + b"a" * 65537,
    b"*" + b"1" * 65535, b"*" + b"1" * 65536, b"*1\r\n$" + b"1" * 65535, b"*1\r\n$" + b"1" * 65536,
    multibulk(b"ECHO", b"e" * 70000) + b"PING\r\n*1\r\n$x\r\n",
    multibulk(b"ECHO", bytes(range(256)) * 300) + multibulk(b"ECHO", b"small") + b"*1\r\n$-1\r\n",
]
UNAUTHENTICATED_CASES = [b"*11\r\n", b"*10\r\n", b"*1\r\n$16385\r\n", b"*1\r\n$16384\r\n"]
QUERY_LIMIT_CASES = [multibulk(b"SET", b"k", b"x" * (2 << 20)), multibulk(b"SET", b"k", b"x" * (900 << 10))]


def _run(loop_kind, coro):
    if loop_kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        factory = uvloop.new_event_loop
    else:
        factory = asyncio.new_event_loop
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coro)


@pytest.mark.parametrize("loop_kind", ["asyncio", "uvloop"])
def test_differential_against_redis(redis_port, loop_kind):
    async def main():
        settings = {"query_buffer_limit": 1 << 30, "requirepass": False}
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: EchoProtocol(settings), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]

        async def compare(cases, timeout=0.5):
            results = await asyncio.gather(*[_exchange(p, data, timeout)
                                             for data in cases for p in (redis_port, port)])
            for i, data in enumerate(cases):
                assert results[2 * i + 1] == results[2 * i], data[:60]

        try:
            await compare(DIFFERENTIAL_CASES)
            assert _raw(redis_port, multibulk(b"CONFIG", b"SET", b"client-query-buffer-limit", b"1mb")) == b"+OK\r\n"
            settings["query_buffer_limit"] = 1 << 20
            await compare(QUERY_LIMIT_CASES, timeout=2)
            assert _raw(redis_port, multibulk(b"CONFIG", b"SET", b"requirepass", b"pw")) == b"+OK\r\n"
            settings["requirepass"] = True
            await compare(UNAUTHENTICATED_CASES)
        finally:
            _raw(redis_port, multibulk(b"AUTH", b"pw") + multibulk(b"CONFIG", b"SET", b"requirepass", b""))
            _raw(redis_port, multibulk(b"CONFIG", b"SET", b"client-query-buffer-limit", b"1gb"))
            server.close()
            await server.wait_closed()

    _run(loop_kind, main())


def test_writer_matches_redis_replies(redis_port):
    """Typed replies (doubles, nulls, maps, sets, booleans) byte for byte."""
    values = [b"1.5", b"10", b"0.1", b"1e100", b"3.0000000000000004", b"inf", b"-inf", b"-0",
              b"1e15", b"-1.5e-7", b"5e-324"]
    setup = multibulk(b"CONFIG", b"SET", b"zset-max-listpack-entries", b"0")   # keeps -0 as -0
    setup += b"".join(multibulk(b"ZADD", b"resp:z", v, b"m%d" % i) for i, v in enumerate(values))
    queries = [(multibulk(b"ZSCORE", b"resp:z", b"m%d" % i), lambda w, v=v: w.double(float(v)))
               for i, v in enumerate(values)]
    queries += [
        (multibulk(b"GET", b"resp:none"), lambda w: w.null()),
        (multibulk(b"LPOP", b"resp:none", b"2"), lambda w: w.null_array()),
        (multibulk(b"HGETALL", b"resp:none"), lambda w: w.map(0)),
        (multibulk(b"SMEMBERS", b"resp:none"), lambda w: w.set(0)),
        (multibulk(b"MGET", b"resp:none", b"resp:z"), lambda w: w.bulk_array([None, None])),
        (multibulk(b"EVAL", b"redis.setresp(3); return true", b"0"), lambda w: w.boolean(True)),
        (multibulk(b"EVAL", b"redis.setresp(3); return false", b"0"), lambda w: w.boolean(False)),
        (multibulk(b"EXISTS", b"resp:z"), lambda w: w.integer(1)),
    ]
    for protocol in (2, 3):
        with socket.create_connection(("127.0.0.1", redis_port)) as s:
            s.settimeout(5)
            s.sendall(setup + multibulk(b"HELLO", b"%d" % protocol) + multibulk(b"PING"))
            reply = b""
            while not reply.endswith(b"+PONG\r\n"):
                reply += s.recv(65536)
            for query, action in queries:
                s.sendall(query + multibulk(b"PING"))
                reply = b""
                while not reply.endswith(b"+PONG\r\n"):
                    reply += s.recv(65536)
                assert reply[:-7] == written(protocol, action), (protocol, query)
            s.sendall(multibulk(b"DEL", b"resp:z"))
            s.recv(100)
