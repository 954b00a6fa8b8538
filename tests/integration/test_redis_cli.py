"""redis-cli (Debian's redis-tools) against cxlredis: arguments, stdin, --pipe,
RESP3, --scan, INFO and the interactive mode.  Where redis-cli's output is a
rendering of the server's replies it is compared with its output against a
real redis-server."""
import os
import re
import select
import shutil
import subprocess
import time

import pytest

from conftest import parse_reply, raw_connection

pytestmark = [
    pytest.mark.usefixtures("flushed"),
    pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli is not installed"),
]


def _cli_env(tmp_path):
    # No history file in $HOME, no colours or hints that depend on the terminal.
    return dict(os.environ, HOME=str(tmp_path), REDISCLI_HISTFILE="/dev/null", TERM="dumb")


@pytest.fixture
def cli(tmp_path):
    def run(server, *args, input=None, timeout=30, check=True):
        result = subprocess.run(
            ["redis-cli", "-p", str(server.port), *args], input=input, capture_output=True,
            timeout=timeout, env=_cli_env(tmp_path))
        if check:
            assert result.returncode == 0, f"redis-cli {args} exited {result.returncode}: {result.stderr!r}"
        return result
    return run


def _both(cli, oracle, cxl, *args, input=None):
    """redis-cli's stdout for the same invocation against both servers."""
    return [cli(server, *args, input=input).stdout for server in (oracle, cxl)]


def test_commands_as_arguments(cli, redis_oracle, cxl):
    for server in (redis_oracle, cxl):
        assert cli(server, "SET", "foo", "bar").stdout == b"OK\n"
        assert cli(server, "GET", "foo").stdout == b"bar\n"
        assert cli(server, "INCR", "n").stdout == b"1\n"
        assert cli(server, "--no-raw", "INCR", "n").stdout == b"(integer) 2\n"
        assert cli(server, "--no-raw", "GET", "missing").stdout == b"(nil)\n"
        assert cli(server, "--no-raw", "GET", "foo").stdout == b'"bar"\n'
    for args in [("SET", "foo", "bar"), ("MGET", "foo", "missing", "n"), ("--no-raw", "MGET", "foo", "x"),
                 ("SET", "k", "v", "EX", "0"), ("--no-raw", "INCRBYFLOAT", "f", "1.5"),
                 ("--no-raw", "EXISTS", "foo", "k"), ("NOSUCHCOMMAND", "a"), ("PING",)]:
        expected, actual = _both(cli, redis_oracle, cxl, *args)
        assert actual == expected, f"redis-cli {' '.join(args)}"


def test_error_exit_code(cli, redis_oracle, cxl):
    outcomes = []
    for server in (redis_oracle, cxl):
        result = cli(server, "-e", "NOSUCHCOMMAND", "x", check=False)
        outcomes.append((result.returncode, result.stdout + result.stderr))
    assert outcomes[1] == outcomes[0]
    assert outcomes[1][0] != 0


def test_commands_from_stdin(cli, redis_oracle, cxl):
    script = b"SET a 1\nGET a\nINCR a\nAPPEND a xyz\nGET a\nNOSUCH x\nDEL a\nEXISTS a\n"
    expected, actual = _both(cli, redis_oracle, cxl, input=script)
    assert actual == expected
    assert actual.startswith(b"OK\n1\n2\n4\n2xyz\n")


def test_last_argument_from_stdin(cli, cxl):
    blob = bytes(range(256)) * 4
    assert cli(cxl, "-x", "SET", "blob", input=blob).stdout == b"OK\n"
    with raw_connection(cxl.port) as conn:
        assert parse_reply(conn.request("GET", "blob")) == blob


def test_unix_socket(tmp_path, cxl):
    result = subprocess.run(["redis-cli", "-s", cxl.unixsocket, "PING"], capture_output=True,
                            timeout=30, env=_cli_env(tmp_path))
    assert result.stdout == b"PONG\n", result.stderr


def test_pipe_mass_insertion(cli, cxl):
    count = 10_000
    payload = b"".join(
        b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)
        for k, v in ((b"key:%d" % i, b"value:%d" % i) for i in range(count)))
    result = cli(cxl, "--pipe", input=payload, timeout=120)
    output = result.stdout.decode()
    assert f"errors: 0, replies: {count}" in output, output
    with raw_connection(cxl.port) as conn:
        assert conn.request("DBSIZE") == b":%d\r\n" % count
        assert conn.request("GET", "key:9999") == b"$10\r\nvalue:9999\r\n"


@pytest.mark.parametrize("args", [
    ("-3", "PING"),
    ("-3", "GET", "missing"),
    ("-3", "--no-raw", "GET", "missing"),
    ("-3", "--no-raw", "CONFIG", "GET", "databases"),
    ("-3", "CONFIG", "GET", "databases"),
    ("-3", "--no-raw", "INCRBYFLOAT", "f", "2.5"),
    ("-3", "--no-raw", "MGET", "f", "missing"),
    ("-3", "--no-raw", "EXISTS", "f"),
    ("-3", "--no-raw", "COMMAND", "GETKEYS", "SET", "a", "b"),
], ids=" ".join)
def test_resp3_mode(cli, redis_oracle, cxl, args):
    expected, actual = _both(cli, redis_oracle, cxl, *args)
    assert actual == expected


def test_resp3_hello(cli, cxl):
    # Without a terminal, redis-cli prints each map entry as "key value".
    lines = cli(cxl, "-3", "HELLO", "3").stdout.decode().splitlines()
    assert "proto 3" in lines, lines


def test_scan_with_pattern(cli, cxl):
    users = {f"user:{i}" for i in range(120)}
    with raw_connection(cxl.port) as conn:
        args = ["MSET"]
        for key in sorted(users) + [f"other:{i}" for i in range(30)] + ["user"]:
            args += [key, "1"]
        assert conn.request(*args) == b"+OK\r\n"
    for extra in ((), ("-i", "0.01")):
        lines = cli(cxl, "--scan", "--pattern", "user:*", *extra).stdout.decode().splitlines()
        assert set(lines) == users
    assert len(cli(cxl, "--scan").stdout.decode().splitlines()) >= 151


def _parse_info(text):
    sections, current = {}, None
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# "):
            current = sections.setdefault(line[2:], {})
            continue
        name, sep, value = line.partition(":")
        assert sep and current is not None, f"INFO line not 'name:value' in a section: {line!r}"
        current[name] = value
    return sections


def test_info_is_parsable(cli, cxl):
    with raw_connection(cxl.port) as conn:
        conn.request("MSET", "a", "1", "b", "2")
        conn.request("EXPIRE", "a", "1000")
    sections = _parse_info(cli(cxl, "INFO").stdout.decode())
    for name in ("Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Keyspace"):
        assert name in sections, f"INFO has no {name} section: {sorted(sections)}"
    assert sections["Server"]["tcp_port"] == str(cxl.port)
    assert re.fullmatch(r"\d+\.\d+\.\d+", sections["Server"]["redis_version"])
    assert int(sections["Clients"]["connected_clients"]) >= 1
    assert int(sections["Memory"]["used_memory"]) > 0
    assert sections["Keyspace"]["db0"].startswith("keys=2,expires=1,")
    for section in ("keyspace", "stats", "memory"):
        only = _parse_info(cli(cxl, "INFO", section).stdout.decode())
        assert list(only) == [section.capitalize()]


# ------------------------------------------------------------ interactive mode

ANSI = re.compile(rb"\x1b\[[0-9;]*m")


def _interactive(server, lines, tmp_path, *options, timeout=15.0):
    """Type ``lines`` into an interactive redis-cli on a pty; return what it printed."""
    master, slave = os.openpty()
    proc = subprocess.Popen(["redis-cli", "-p", str(server.port), *options], stdin=slave,
                            stdout=slave, stderr=slave, env=_cli_env(tmp_path), start_new_session=True)
    os.close(slave)
    prompt = f"127.0.0.1:{server.port}>".encode()
    output = b""

    def read_until_prompts(count):
        nonlocal output
        deadline = time.monotonic() + timeout
        while output.count(prompt) < count:
            assert time.monotonic() < deadline, f"redis-cli stopped answering; printed so far:\n{output!r}"
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the pty closes when redis-cli exits
                    chunk = b""
                assert chunk or proc.poll() is None, f"redis-cli exited; printed:\n{output!r}"
                output += chunk

    try:
        read_until_prompts(1)
        for number, line in enumerate(lines, start=2):
            os.write(master, line.encode() + b"\r")
            read_until_prompts(number)
        os.write(master, b"quit\r")
        proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return ANSI.sub(b"", output).replace(b"\r", b"")


@pytest.mark.parametrize("options", [(), ("-3",)], ids=["resp2", "resp3"])
def test_interactive_help_uses_command_docs(tmp_path, redis_oracle, cxl, options):
    # On start-up the interactive client fetches COMMAND DOCS to build `help`
    # and the hints; a reply it cannot digest shows up as an error or as help
    # text different from what the same redis-cli prints against Redis.
    lines = ["help GET", "help SET", "help CLIENT SETNAME", "help EXPIRE", "SET k v", "GET k"]
    expected = _interactive(redis_oracle, lines, tmp_path, *options)
    actual = _interactive(cxl, lines, tmp_path, *options)
    assert b"summary: Get the value of a key" in actual
    assert b"(error)" not in actual and b"ERR" not in actual, actual.decode(errors="replace")
    assert actual.replace(str(cxl.port).encode(), b"PORT") == (
        expected.replace(str(redis_oracle.port).encode(), b"PORT"))
