"""Bounded runs of the RESP parser fuzz harness (tests/fuzz/fuzz_resp.py).

* atheris for FUZZ_SECONDS (default 12; ``CXLREDIS_FUZZ_SECONDS`` changes it)
  on the coverage-instrumented build of the parser;
* the same checks driven by hypothesis on the installed ``cxlredis._resp``;
* proof that the checks have teeth: parsers that corrupt or swallow a
  command are caught.

A long run is one command: ``python tests/fuzz/fuzz_resp.py -max_total_time=3600``.
"""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
import fuzz_resp  # noqa: E402
import sancov  # noqa: E402

from cxlredis import _resp  # noqa: E402

HARNESS = Path(__file__).with_name("fuzz_resp.py")
FUZZ_SECONDS = int(os.environ.get("CXLREDIS_FUZZ_SECONDS", "12"))


@pytest.mark.timeout(FUZZ_SECONDS + 90)
def test_atheris_bounded_run(tmp_path):
    pytest.importorskip("atheris", reason="atheris is not installed (see pyproject's test extras)")
    sancov.build()      # a build failure is reported as one, not as a fuzzer finding
    seed = random.randrange(1, 1 << 31)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    proc = subprocess.run(
        [sys.executable, str(HARNESS), f"-max_total_time={FUZZ_SECONDS}", f"-seed={seed}",
         f"-artifact_prefix={tmp_path}/", "-print_final_stats=1", str(corpus)],
        capture_output=True, text=True, timeout=FUZZ_SECONDS + 80, cwd=tmp_path)
    output = proc.stdout + proc.stderr
    runs = re.search(r"stat::number_of_executed_units: (\d+)", output)
    coverage = re.findall(r"cov: (\d+)", output)
    print(f"atheris: seed {seed}, {runs.group(1) if runs else '?'} inputs in {FUZZ_SECONDS}s, "
          f"coverage {coverage[-1] if coverage else '?'} counters")
    assert proc.returncode == 0, (
        f"the fuzzer found a failing input (seed {seed}); replay the crash file it names with "
        f"`python {HARNESS} <file>`:\n{output[-6000:]}")
    assert runs and int(runs.group(1)) > 1000, output[-3000:]
    # The instrumented build feeds libFuzzer the parser's own branches, not just the harness's.
    assert coverage and int(coverage[-1]) > 500, output[-3000:]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4096))
def test_harness_under_hypothesis(data):
    fuzz_resp.check_one_input(data, _resp)


class CorruptingParser(_resp.RequestParser):
    """Flips one byte of the last argument of every command with two or more."""

    def next_command(self):
        argv = super().next_command()
        if argv and len(argv) > 1 and isinstance(argv[-1], bytes) and argv[-1]:
            argv[-1] = bytes([argv[-1][0] ^ 1]) + argv[-1][1:]
        return argv


class SwallowingParser(_resp.RequestParser):
    """Loses every third command."""

    count = 0

    def next_command(self):
        argv = super().next_command()
        if argv is not None:
            self.count += 1
            if self.count % 3 == 0:
                return super().next_command()
        return argv


class FakeModule:
    ProtocolError = _resp.ProtocolError
    QueryBufferLimit = _resp.QueryBufferLimit

    def __init__(self, parser_class):
        self.RequestParser = parser_class


@pytest.mark.parametrize("parser_class", [CorruptingParser, SwallowingParser])
def test_harness_catches_a_faulty_parser(parser_class):
    rng = random.Random(1234)
    module = FakeModule(parser_class)
    for attempt in range(3000):
        data = bytes([1]) + rng.randbytes(rng.randrange(16, 400))   # structured mode
        try:
            fuzz_resp.check_one_input(data, module)
        except AssertionError:
            return
    pytest.fail(f"3000 structured inputs did not catch {parser_class.__name__}")


def test_bytes_after_query_buffer_limit_during_a_large_argument_are_ignored():
    parser = _resp.RequestParser(512 << 20, 16, 100)
    header = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200\r\n"

    def feed(data):
        buf = parser.get_buffer(-1)
        assert len(buf) > 0, "get_buffer() handed out an empty buffer"
        buf[:len(data)] = data
        del buf
        parser.buffer_updated(len(data))

    feed(header + b"x" * 50)
    assert parser.next_command() is None and parser.wants_target == 200
    parser.set_target(bytearray(200), "token")
    feed(b"x" * 100)                      # 150 bytes held: over the 100-byte limit
    with pytest.raises(_resp.QueryBufferLimit):
        parser.next_command()
    feed(b"x" * 50)                       # the target is full now
    feed(b"x")                            # a connection may still read before it is closed
    with pytest.raises(_resp.QueryBufferLimit):
        parser.next_command()
    assert parser.drop_target() == "token"
