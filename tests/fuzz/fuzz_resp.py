"""Fuzz harness for the RESP request parser, ``cxlredis._resp.RequestParser``.

Each input is one case, in one of two modes chosen by its first byte:

* **raw**: arbitrary bytes after a few parameter bytes (large-argument
  threshold, proto-max-bulk-len, client-query-buffer-limit, authenticated or
  not) are fed to a parser the way a connection feeds it, split at points the
  input chooses, with large arguments received into targets (bytearrays or
  memoryview slices, as arena slots are).  Checked: only ``ProtocolError`` or
  ``QueryBufferLimit`` ever escapes, and the error is sticky; the outcome
  (commands and error) does not depend on where the bytes were split (the
  query-buffer limit may only cut it short, and only when the buffered bytes
  really exceed it); ``drop_target()`` stops all further commands; no target
  is requested outside [threshold, proto-max-bulk-len] and the input buffer
  never grows past 128 KiB, whatever lengths the input declares.
* **structured**: the input describes argument lists (binary, CR/LF and NUL
  bytes included, lengths around the large-argument threshold and
  proto-max-bulk-len), encoded as multibulk or inline (quoted) requests with
  the no-ops Redis ignores between them (``*0``, ``*-1``, blank lines), split
  at random points.  Checked: the parser returns exactly those argument lists
  and nothing else, and ends idle; followed by a bulk length over
  proto-max-bulk-len, it returns the same commands and then
  ``Protocol error: invalid bulk length`` without asking for a target; followed
  by a truncated command, it returns the same commands and waits.

Run it (atheris, libFuzzer's flags; instrumented build of the parser, see sancov.py):

    python tests/fuzz/fuzz_resp.py -max_total_time=3600          # a long run
    python tests/fuzz/fuzz_resp.py -runs=200000 -print_final_stats=1
    python tests/fuzz/fuzz_resp.py --uninstrumented ...           # the installed cxlredis._resp

tests/fuzz/test_fuzz_resp.py runs it for a bounded time in CI, and drives
``check_one_input`` with hypothesis too.  A crash (a failed check or an
unexpected exception) is written by libFuzzer as ``crash-<sha1>`` in the
working directory; replay it with ``python tests/fuzz/fuzz_resp.py crash-<sha1>``.
"""
from __future__ import annotations

import mmap
import sys
from pathlib import Path
from typing import NamedTuple

DICTIONARY = Path(__file__).with_name("resp.dict")

UNLIMITED = 1 << 62
MAX_BULK_DEFAULT = 512 << 20
# The parser's input buffer: twice Redis's 64 KiB inline limit is the most a
# line or a small bulk (below the large-argument threshold, at most 64 KiB)
# can make it grow to.
BUFFER_CEILING = 2 * 65536
INLINE_MAX = 65536
LAZY_TARGET = 1 << 20
UNAUTH_MAX_BULK = 16384


class Draw:
    """Decisions taken from the input's bytes (zeros once they run out), so a
    mutation of one byte changes one decision rather than the whole case."""

    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def bytes(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk + bytes(n - len(chunk))

    def int(self, low: int, high: int) -> int:
        span = high - low
        if span <= 0:
            return low
        width = (span.bit_length() + 7) // 8
        return low + int.from_bytes(self.bytes(width), "big") % (span + 1)

    def bool(self) -> bool:
        return self.int(0, 1) == 1

    def choice(self, options):
        return options[self.int(0, len(options) - 1)]

    def rest(self) -> bytes:
        chunk = self.data[self.pos:]
        self.pos = len(self.data)
        return chunk


class Params(NamedTuple):
    threshold: int
    max_bulk: int
    query_limit: int
    authenticated: bool


class Outcome(NamedTuple):
    commands: list           # argument lists, large arguments as bytes
    error: tuple | None      # (class name, text)


class Large:
    """The token a large argument stands for in an argument list."""
    __slots__ = ("target",)

    def __init__(self, target):
        self.target = target


class Feeder:
    """Drives one parser as a connection does, checking its invariants on the way."""

    def __init__(self, resp, params: Params, draw: Draw | None = None):
        self.resp = resp
        self.params = params
        self.parser = resp.RequestParser(params.max_bulk, params.threshold, params.query_limit)
        self.parser.authenticated = params.authenticated
        self.draw = draw              # chooses target kinds; None = plain bytearrays
        self.commands: list = []
        self.error: tuple | None = None
        self.issued: dict[int, Large] = {}     # tokens handed to set_target(), not yet returned
        self.target_bases: dict[int, object] = {}  # the objects behind the targets handed out, by id
        self.dropped = False

    def feed(self, chunk: bytes) -> None:
        pos = 0
        while pos < len(chunk):
            if self.error and self.error[0] == "QueryBufferLimit":
                return      # the server aborts such a connection: nothing more is read
            buf = self.parser.get_buffer(-1)
            room = len(buf)
            assert room > 0, "get_buffer() handed out an empty buffer"
            if id(buf.obj) not in self.target_bases:      # the parser's own buffer
                assert room <= BUFFER_CEILING, f"input buffer grew to {room} bytes"
            n = min(room, len(chunk) - pos)
            buf[:n] = chunk[pos:pos + n]
            del buf
            self.parser.buffer_updated(n)
            pos += n
            self.pump()

    def pump(self) -> None:
        while True:
            try:
                argv = self.parser.next_command()
            except (self.resp.ProtocolError, self.resp.QueryBufferLimit) as exc:
                self._record_error(exc)
                return
            if self.dropped:
                assert argv is None, "a command after drop_target()"
                return
            if argv is None:
                wanted = self.parser.wants_target
                if not wanted:
                    return
                self._supply(wanted)
                continue
            self._accept(argv)

    def _record_error(self, exc) -> None:
        seen = (type(exc).__name__, str(exc))
        if self.error is None:
            self.error = seen
            if isinstance(exc, self.resp.ProtocolError):
                assert str(exc).startswith("Protocol error: "), str(exc)
            else:
                assert self.parser.buffered > self.params.query_limit, (
                    f"QueryBufferLimit with {self.parser.buffered} bytes buffered, "
                    f"limit {self.params.query_limit}")
        else:
            assert seen == self.error, f"error changed from {self.error} to {seen}"

    def _supply(self, wanted: int) -> None:
        p = self.params
        assert p.threshold <= wanted <= p.max_bulk, (
            f"target of {wanted} bytes requested (threshold {p.threshold}, "
            f"proto-max-bulk-len {p.max_bulk})")
        if not p.authenticated:
            assert wanted <= UNAUTH_MAX_BULK, f"unauthenticated client got a {wanted}-byte target"
        if wanted > LAZY_TARGET:
            # A declared length the input cannot fill: pages are only committed when written.
            base = target = given = mmap.mmap(-1, wanted)
        elif self.draw is not None and self.draw.bool():
            lead = self.draw.int(0, 64)   # a slot inside a larger mapping, as in the arena
            base = bytearray(lead + wanted + 64)
            target = given = memoryview(base)[lead:lead + wanted]
            if self.draw.bool():          # with the block's room for the CRLF after it
                given = memoryview(base)[lead:lead + wanted + 2]
        else:
            base = target = given = bytearray(wanted)
        self.target_bases[id(base)] = base
        token = Large(target)
        self.issued[id(token)] = token
        self.parser.set_target(given, token)

    def _accept(self, argv) -> None:
        assert isinstance(argv, list) and argv, f"next_command() returned {argv!r}"
        # (An unauthenticated inline request may have any number of arguments,
        # as in Redis: its 64 KiB line limit bounds it.)
        args = []
        for arg in argv:
            if isinstance(arg, Large):
                assert self.issued.pop(id(arg), None) is arg, "a token not issued, or returned twice"
                args.append(bytes(arg.target))
            else:
                assert type(arg) is bytes, f"argument of type {type(arg).__name__}"
                args.append(arg)
        self.commands.append(args)

    def drop(self) -> None:
        token = self.parser.drop_target()
        assert token is None or self.issued.get(id(token)) is token, \
            f"drop_target() returned {token!r}, not a pending token"
        self.dropped = True

    def finish(self) -> Outcome:
        if self.error is not None:
            # Sticky: the connection is dead, every later call says so again,
            # and after a protocol error (the reply is still being flushed)
            # bytes still arriving are accepted and ignored.
            try:
                self.parser.next_command()
            except (self.resp.ProtocolError, self.resp.QueryBufferLimit) as exc:
                assert (type(exc).__name__, str(exc)) == self.error, "error not sticky"
            else:
                raise AssertionError("next_command() returned after an error")
            if self.error[0] == "ProtocolError":
                buf = self.parser.get_buffer(-1)
                assert len(buf) > 0
                buf[:1] = b"*"
                del buf
                self.parser.buffer_updated(1)
        return Outcome(self.commands, self.error)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:]) if b > a]


def run(resp, params: Params, chunks: list[bytes], draw: Draw | None = None,
        drop_after: int | None = None) -> Outcome:
    feeder = Feeder(resp, params, draw)
    for i, chunk in enumerate(chunks):
        feeder.feed(chunk)
        if i == drop_after:
            feeder.drop()
    feeder.pump()
    return feeder.finish()


# ---------------------------------------------------------------- raw mode

def check_raw(resp, draw: Draw) -> None:
    params = Params(
        threshold=draw.choice([1, 2, 7, 16, 64, 300, 4096, 65536]),
        max_bulk=draw.choice([0, 1, 5, 100, 5000, MAX_BULK_DEFAULT]),
        query_limit=draw.choice([UNLIMITED, UNLIMITED, 16, 64, 1000, 20000]),
        authenticated=draw.int(0, 3) != 0,
    )
    cuts = [draw.int(0, 65535) for _ in range(draw.int(0, 12))]
    drop_at = draw.int(0, 15)
    data = draw.rest()

    reference = run(resp, params._replace(query_limit=UNLIMITED), [data])
    assert reference.error is None or reference.error[0] == "ProtocolError", reference.error
    chunks = split(data, cuts)
    outcome = run(resp, params, chunks, draw=Draw(data[::-1]))
    if outcome.error and outcome.error[0] == "QueryBufferLimit":
        assert reference.commands[:len(outcome.commands)] == outcome.commands, \
            "the query buffer limit changed commands instead of cutting them short"
    else:
        assert outcome == reference, (
            f"split at {[len(c) for c in chunks]} gave {outcome!r}, one piece {reference!r}")

    if chunks and drop_at < len(chunks):
        dropped = run(resp, params._replace(query_limit=UNLIMITED), chunks, drop_after=drop_at)
        assert reference.commands[:len(dropped.commands)] == dropped.commands


# ---------------------------------------------------------------- structured mode

def encode_multibulk(args: list[bytes]) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def encode_inline(args: list[bytes], draw: Draw) -> bytes:
    words = []
    for arg in args:
        if arg.isalnum() and draw.bool():
            words.append(arg)
        else:
            words.append(b'"' + b"".join(b"\\x%02x" % b for b in arg) + b'"')
    gap = draw.choice([b" ", b"  ", b"\t"])
    return draw.choice([b"", b" "]) + gap.join(words) + draw.choice([b"\r\n", b"\n"])


NOOPS = [b"*0\r\n", b"*-1\r\n", b"\r\n", b"\n", b"   \r\n"]


def make_arg(draw: Draw, threshold: int) -> bytes:
    length = draw.choice([0, draw.int(1, 16), threshold - 1, threshold, threshold + 1,
                          draw.int(17, 600)])
    length = max(0, min(length, 4096))
    fill = draw.choice(["input", "byte", "crlf"])
    if fill == "input":
        return draw.bytes(length)
    if fill == "crlf":     # protocol bytes inside a value must stay data
        return (b"\r\n$1\r\n*\x00" * (length // 8 + 1))[:length]
    return bytes([draw.int(0, 255)]) * length


def check_structured(resp, draw: Draw) -> None:
    threshold = draw.choice([1, 3, 16, 100, 700, 4096, 65536])
    commands = []
    for _ in range(draw.int(0, 8)):
        count = draw.choice([1, 1, 2, 3, 3, 4, 6, 12])
        commands.append([make_arg(draw, threshold) for _ in range(count)])
    longest = max((len(a) for argv in commands for a in argv), default=0)
    max_bulk = draw.choice([longest, longest + 1, MAX_BULK_DEFAULT])
    query_limit = draw.choice([UNLIMITED, UNLIMITED, UNLIMITED, 200, 5000])
    params = Params(threshold, max_bulk, query_limit, True)

    pieces = []
    for argv in commands:
        if draw.int(0, 3) == 0:
            pieces.append(draw.choice(NOOPS))
        inline = encode_inline(argv, draw) if draw.int(0, 3) == 0 else b""
        # An inline request longer than Redis's 64 KiB is refused once that much is buffered.
        pieces.append(inline if 0 < len(inline) <= INLINE_MAX else encode_multibulk(argv))
    tail = draw.choice(["none", "none", "oversized", "truncated"])
    if tail == "oversized":
        declared = max_bulk + draw.choice([1, 2, 1000, 1 << 40, (1 << 63) - 1 - max_bulk])
        pieces.append(b"*2\r\n$3\r\nSET\r\n$%d\r\n" % declared + draw.bytes(draw.int(0, 40)))
    elif tail == "truncated":
        extra = encode_multibulk([b"GET"[:max_bulk], b"k" * draw.int(0, min(200, max_bulk))])
        pieces.append(extra[:draw.int(1, len(extra) - 1)])
    data = b"".join(pieces)
    cuts = [draw.int(0, 1 << 20) for _ in range(draw.int(0, 16))]

    feeder = Feeder(resp, params, draw)
    for chunk in split(data, cuts):
        feeder.feed(chunk)
    feeder.pump()
    outcome = feeder.finish()

    if outcome.error and outcome.error[0] == "QueryBufferLimit":
        assert commands[:len(outcome.commands)] == outcome.commands, \
            "commands before the query buffer limit differ from those sent"
        return
    assert outcome.commands == commands, (
        f"sent {summarise(commands)}, parsed {summarise(outcome.commands)}")
    if tail == "oversized":
        # Refused at its header: _supply() would have failed on a target that
        # large, and a small buffered one would not end in this error.
        assert outcome.error == ("ProtocolError", "Protocol error: invalid bulk length"), outcome.error
    else:
        assert outcome.error is None, f"well-formed input gave {outcome.error}"
        assert feeder.parser.wants_target == 0
        if tail == "none":
            assert feeder.parser.buffered == 0 and feeder.parser.pending_args == [], \
                "the parser holds bytes after complete commands"


def summarise(commands) -> list:
    return [[(len(a), a[:12]) for a in argv] for argv in commands]


# ---------------------------------------------------------------- entry points

def check_one_input(data: bytes, resp) -> None:
    """Run one fuzz case; raises AssertionError (or whatever escaped the parser) on a bug."""
    draw = Draw(data)
    if draw.int(0, 1) == 0:
        check_raw(resp, draw)
    else:
        check_structured(resp, draw)


def load_parser(instrumented: bool):
    if instrumented:
        sys.path.insert(0, str(Path(__file__).parent))
        import sancov
        return sancov.load(sancov.build())
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from cxlredis import _resp
    return _resp


def main(argv: list[str]) -> None:
    import atheris

    instrumented = "--uninstrumented" not in argv
    argv = [a for a in argv if a != "--uninstrumented"]
    if DICTIONARY.exists() and not any(a.startswith("-dict=") for a in argv):
        argv.append(f"-dict={DICTIONARY}")
    if not any(a.startswith("-max_len=") for a in argv):
        argv.append("-max_len=16384")
    resp = load_parser(instrumented)
    atheris.Setup(argv, lambda data: check_one_input(data, resp))
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
