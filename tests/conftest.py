"""Shared fixtures and helpers for the cxlredis test suite.

Helpers (import them with ``from conftest import ...``; do not add conftest.py
files in sub-directories: pytest would then shadow this module's name):

``free_port() -> int``
    A TCP port on 127.0.0.1 that was free a moment ago.

``ServerProcess(kind="cxlredis", options=None, conf=None, port=None)``
    Runs ``python -m cxlredis`` (kind "cxlredis") or ``redis-server`` (kind
    "redis") on a free port in its own temporary directory, with a unix socket
    and, for cxlredis, ``--arena-path <dir>/a.arena --arena-size 64mb
    --enable-debug-command yes`` (as Redis's own test suite enables DEBUG).
    ``options`` maps config names to values (``{"maxmemory": "2mb"}``), passed
    as ``--name value``; ``conf`` is a config file path given first.
    ``start()`` waits until the server answers PING (raising ServerStartError
    with the server's log on timeout or early exit).  Attributes and methods:
    ``.port .unixsocket .arena_path .dir .pid .log`` (text of stdout+stderr),
    ``.running``, ``.stop(sig=signal.SIGTERM, timeout=10) -> exit code``
    (SIGKILL if still alive after ``timeout``), ``.kill9()``, ``.restart()``
    (same port, arena and options; ``restart(**options)`` changes some),
    ``.close()`` (stop and remove the directory).  Every started process is
    killed by pid when the interpreter exits, and by the kernel if pytest
    itself dies (PR_SET_PDEATHSIG).  ``.client(protocol=2,
    **kwargs) -> redis.Redis`` is a redis-py client on the server's port.

``raw_connection(port=None, *, unixsocket=None, timeout=5.0) -> RawConnection``
    A socket for byte-level RESP exchanges: ``.send(data)``,
    ``.read_reply() -> bytes`` (exactly one complete RESP2/RESP3 reply, an
    attribute frame included with the reply it precedes),
    ``.request(*args) -> bytes`` (encode a multibulk command, send, read one
    reply), ``.read_until_close() -> bytes``, ``.is_closed() -> bool``,
    ``.close()``; usable as a context manager.  Raises ``ReplyTimeout`` when no
    complete reply arrives in time and ``ConnectionClosed`` when the server
    closes mid-reply.

``server_under_test(conf=None, **options) -> ServerProcess``  a not yet started
    server of kind ``TARGET`` (what ``cxl`` and ``cxl_factory`` use).
``TARGET``  "cxlredis", or "redis" when ``CXLREDIS_TEST_TARGET=redis`` (below).
``ServerStartError``  raised by ``start()``; its message holds the command line and the log.

``run_steps(server, protocol, steps)``  send (args, expected) pairs over one raw
    connection (after ``HELLO 3`` when protocol is 3) and assert each exact reply;
    expected is bytes or ``{2: bytes, 3: bytes}``.

``invalid_expire(command) -> bytes``  Redis's reply for a bad SET/GETEX/EXPIRE time.

``encode_command(*args) -> bytes``  a RESP multibulk request (str, bytes or int arguments).
``reply_end(buf, pos=0) -> int | None``  index just past the complete reply at ``pos``
    (None while incomplete).
``parse_reply(data) -> object``     decode one reply: simple strings as ``Simple``,
    errors as ``Error`` (both ``str`` subclasses), bulk strings as bytes, null as None, integers as int,
    doubles as float, booleans as bool, arrays/sets/pushes as list, maps as dict
    (list of pairs if a key is unhashable), big numbers as int.

Fixtures:

``cxl``            a cxlredis server per test module (arena in a temp dir).
``cxl_factory``    function-scoped; ``cxl_factory(conf=None, **options)`` starts
                   another cxlredis with extra options (underscores in names
                   become dashes), e.g. ``cxl_factory(maxmemory="2mb",
                   **{"maxmemory-policy": "volatile-lru"})``; all are stopped
                   at the end of the test.
``redis_oracle``   one real redis-server per session (``--save '' --appendonly no``;
                   every redis-server started here also has ``--enable-debug-command
                   local`` so DEBUG SLEEP answers as on cxlredis).
``r2`` / ``r3``    redis-py clients (hiredis parser) on ``cxl``, protocol 2 / 3,
                   ``decode_responses=False``.
``target``         parametrised over cxlredis and the real redis-server (each
                   FLUSHALLed first): expectations that both must meet.
``tmpfs``          function-scoped; ``tmpfs(size) -> Path``: a directory on a tmpfs of
                   its own (``mount -t tmpfs -o size=...``; unmounted after the test;
                   the test is skipped when mounting is not permitted);
                   ``tmpfs(None, "ramfs")``: a file system of another type, no size.
``flushed``        FLUSHALLs ``redis_oracle`` and ``cxl`` before the test and
                   yields ``(redis_oracle, cxl)``; differential modules use it
                   with ``pytestmark = pytest.mark.usefixtures("flushed")``.

Environment: ``CXLREDIS_TEST_TARGET=redis`` makes ``cxl``/``cxl_factory`` start
redis-server instead of cxlredis (``arena-*`` options are then dropped), so
the differential tests can be exercised redis-server against redis-server.

Timeouts: every test gets a 60 s pytest-timeout unless it is marked ``slow``
(then the ini default applies) or carries its own ``timeout`` mark.
"""
from __future__ import annotations

import atexit
import ctypes
import fcntl
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import redis
import redis.utils

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET = os.environ.get("CXLREDIS_TEST_TARGET", "cxlredis")
if TARGET not in ("cxlredis", "redis"):
    raise RuntimeError(f"CXLREDIS_TEST_TARGET must be 'cxlredis' or 'redis', not {TARGET!r}")

DEFAULT_TEST_TIMEOUT = 60
START_TIMEOUT = 30.0


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("timeout") is None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.timeout(DEFAULT_TEST_TIMEOUT))


def _kernel_at_least(major, minor):
    release = platform.release().split("-")[0].split(".")
    try:
        return (int(release[0]), int(release[1])) >= (major, minor)
    except (IndexError, ValueError):
        return False


# The arena's warmer faults pages in with MADV_POPULATE_WRITE (Linux 5.14): without it
# the server runs with none, and the tests of the warmer have nothing to test.
needs_populate_write = pytest.mark.skipif(not _kernel_at_least(5, 14),
                                          reason="MADV_POPULATE_WRITE needs Linux 5.14")


# The directives of the configuration file Redis 7.0's test suite starts its servers with
# (tests/assets/default.conf), the file's comments left out.
REDIS_TEST_SUITE_CONF = """\
always-show-logo yes
notify-keyspace-events KEA
daemonize no
pidfile /var/run/redis.pid
port 6379
timeout 0
bind 127.0.0.1
loglevel verbose
logfile ''
databases 16
latency-monitor-threshold 1
repl-diskless-sync-delay 0
save 900 1
save 300 10
save 60 10000
rdbcompression yes
dbfilename dump.rdb
dir ./
slave-serve-stale-data yes
appendonly no
appendfsync everysec
no-appendfsync-on-rewrite no
activerehashing yes
enable-protected-configs yes
enable-debug-command yes
enable-module-command yes
propagation-error-behavior panic
shutdown-on-sigterm force
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------- RESP bytes

class ReplyTimeout(Exception):
    """No complete reply arrived within the connection's timeout."""


class ConnectionClosed(Exception):
    """The peer closed the connection before a complete reply arrived."""


class Simple(str):
    """A RESP simple string (``+OK``), distinct from a bulk string."""


class Error(str):
    """A RESP error reply (``-ERR ...``, ``!<len>`` blob errors too)."""


def _to_bytes(arg) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, (bytearray, memoryview)):
        return bytes(arg)
    if isinstance(arg, str):
        return arg.encode()
    if isinstance(arg, (int, float)):
        return str(arg).encode()
    raise TypeError(f"cannot send {type(arg).__name__} as a RESP argument")


def encode_command(*args) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = _to_bytes(arg)
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


_LINE_TYPES = frozenset(b"+-:_#,(")
_BLOB_TYPES = frozenset(b"$!=")
_AGGREGATE_TYPES = frozenset(b"*~>%|")


def reply_end(buf: bytes, pos: int = 0) -> int | None:
    """Index just past the complete reply starting at ``pos``, or None if incomplete."""
    eol = buf.find(b"\r\n", pos)
    if eol < 0:
        return None
    kind = buf[pos]
    header = buf[pos + 1:eol]
    after = eol + 2
    if kind in _LINE_TYPES:
        return after
    if kind in _BLOB_TYPES:
        length = int(header)
        if length < 0:
            return after
        end = after + length + 2
        return end if len(buf) >= end else None
    if kind in _AGGREGATE_TYPES:
        count = int(header)
        if kind in b"%|":
            count *= 2
        for _ in range(max(count, 0)):
            after = reply_end(buf, after)
            if after is None:
                return None
        if kind == ord("|"):  # an attribute precedes the reply it annotates
            return reply_end(buf, after)
        return after
    raise ValueError(f"not a RESP reply at byte {pos}: {buf[pos:pos + 40]!r}")


def parse_reply(data: bytes):
    value, end = _parse(data, 0)
    if end != len(data):
        raise ValueError(f"trailing bytes after reply: {data[end:end + 40]!r}")
    return value


def _parse(buf: bytes, pos: int):
    eol = buf.index(b"\r\n", pos)
    kind = chr(buf[pos])
    header = buf[pos + 1:eol]
    after = eol + 2
    if kind == "+":
        return Simple(header.decode()), after
    if kind == "-":
        return Error(header.decode()), after
    if kind in ":(":
        return int(header), after
    if kind == "_":
        return None, after
    if kind == "#":
        return header == b"t", after
    if kind == ",":
        return float(header), after
    if kind in "$!=":
        length = int(header)
        if length < 0:
            return None, after
        blob = buf[after:after + length]
        if kind == "!":
            return Error(blob.decode()), after + length + 2
        return blob, after + length + 2
    count = int(header)
    if count < 0:
        return None, after
    if kind in "*~>":
        items = []
        for _ in range(count):
            item, after = _parse(buf, after)
            items.append(item)
        return items, after
    pairs = []
    for _ in range(count):
        key, after = _parse(buf, after)
        val, after = _parse(buf, after)
        pairs.append((key, val))
    if kind == "|":
        return _parse(buf, after)
    try:
        return dict(pairs), after
    except TypeError:
        return pairs, after


class RawConnection:
    """A blocking socket speaking RESP byte for byte (see the module docstring)."""

    def __init__(self, port=None, *, unixsocket=None, host="127.0.0.1", timeout=5.0):
        if unixsocket is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(unixsocket)
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _receive(self, deadline: float) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout
        self.sock.settimeout(remaining)
        return self.sock.recv(65536)

    def read_reply(self, timeout: float | None = None) -> bytes:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            if self.buffer:
                end = reply_end(self.buffer)
                if end is not None:
                    reply, self.buffer = self.buffer[:end], self.buffer[end:]
                    return reply
            try:
                chunk = self._receive(deadline)
            except (socket.timeout, TimeoutError):
                raise ReplyTimeout(f"no complete reply; received so far: {self.buffer[:200]!r}") from None
            if not chunk:
                raise ConnectionClosed(f"closed by peer; received so far: {self.buffer[:200]!r}")
            self.buffer += chunk

    def request(self, *args) -> bytes:
        self.send(encode_command(*args))
        return self.read_reply()

    def read_until_close(self, timeout: float | None = None) -> bytes:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        data, self.buffer = self.buffer, b""
        while True:
            try:
                chunk = self._receive(deadline)
            except (socket.timeout, TimeoutError):
                raise ReplyTimeout(f"connection still open; received: {data[:200]!r}") from None
            except ConnectionResetError:
                return data
            if not chunk:
                return data
            data += chunk

    def is_closed(self, timeout: float = 1.0) -> bool:
        """True if the peer closes (EOF or reset) within ``timeout`` with no further bytes."""
        try:
            return self.read_until_close(timeout) == b""
        except ReplyTimeout:
            return False

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def pubsub_messages(pubsub, wait=0.5) -> list:
    """(type, channel, data) of every message a redis-py PubSub receives until none has
    come for `wait` seconds."""
    heard = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        message = pubsub.get_message(ignore_subscribe_messages=True, timeout=0.05)
        if message is not None:
            heard.append((message["type"], message["channel"], message["data"]))
            deadline = time.monotonic() + wait
    return heard


def raw_connection(port=None, *, unixsocket=None, timeout=5.0) -> RawConnection:
    return RawConnection(port, unixsocket=unixsocket, timeout=timeout)


# ---------------------------------------------------------------- processes

def run_steps(server, protocol, steps):
    """Send each (args, expected) step; expected is bytes or {protocol: bytes}."""
    with raw_connection(server.port) as conn:
        if protocol == 3:
            conn.request("HELLO", "3")
        for args, expected in steps:
            if isinstance(expected, dict):
                expected = expected[protocol]
            reply = conn.request(*args)
            assert reply == expected, f"{server.kind} RESP{protocol} {args!r}: {reply!r}"


def invalid_expire(command):
    return b"-ERR invalid expire time in '%s' command\r\n" % command.encode()


@pytest.fixture(params=["cxlredis", "redis-server"])
def target(request, cxl, redis_oracle):
    """Each expectation runs against cxlredis and the real redis-server."""
    server = cxl if request.param == "cxlredis" else redis_oracle
    with raw_connection(server.port) as conn:
        assert conn.request("FLUSHALL") == b"+OK\r\n"
    return server


TEST_DIR = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


class ServerStartError(RuntimeError):
    pass


_live_processes: dict[int, subprocess.Popen] = {}
_live_dirs: set[Path] = set()       # server directories not removed yet (ServerProcess.close)


@atexit.register
def _kill_leftovers():
    # A run interrupted with ^C skips fixture teardown, and a test whose server never
    # started may not close it: never leave servers, or their directories, behind.
    for pid, proc in list(_live_processes.items()):
        if proc.poll() is None:
            os.kill(pid, signal.SIGKILL)
            proc.wait()
    for directory in list(_live_dirs):
        shutil.rmtree(directory, ignore_errors=True)


_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    # If pytest itself is killed (CI time limit, kill -9), take the server along.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ServerProcess:
    """A cxlredis or redis-server process in its own temporary directory."""

    def __init__(self, kind: str = "cxlredis", options: dict | None = None,
                 conf: str | os.PathLike | None = None, port: int | None = None,
                 env: dict | None = None):
        if kind not in ("cxlredis", "redis"):
            raise ValueError(f"unknown server kind {kind!r}")
        self.kind = kind
        self.options = dict(options or {})
        self.env = dict(env or {})          # added to this process's environment
        self.conf = conf
        self._fixed_port = port is not None
        self.port = port if port is not None else free_port()
        # A short directory (unix socket paths are limited to 107 bytes) in memory, where
        # the embedded default puts arenas: a disk's writeback and fsyncs (nodes.conf, the
        # arena's pages) would make the suite's time follow the disk's.
        self.dir = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=TEST_DIR))
        _live_dirs.add(self.dir)
        self.unixsocket = str(self.dir / "s.sock")
        self.arena_path = str(self.dir / "a.arena") if kind == "cxlredis" else None
        self.log_path = self.dir / "server.log"
        self.proc: subprocess.Popen | None = None

    # -- command line

    def _argv(self) -> list[str]:
        if self.kind == "cxlredis":
            argv = [sys.executable, "-m", "cxlredis"]
            base = {
                "port": self.port,
                "unixsocket": self.unixsocket,
                "arena-path": self.arena_path,
                "arena-size": "64mb",
                "loglevel": "warning",
                # DEBUG SLEEP / ARENA-CHECK drive many tests; the default (no) refuses DEBUG.
                "enable-debug-command": "yes",
            }
        else:
            argv = ["redis-server"]
            base = {
                "port": self.port,
                "unixsocket": self.unixsocket,
                "save": "",
                "appendonly": "no",
                "dir": str(self.dir),
                "loglevel": "warning",
                # cxlredis always serves DEBUG SLEEP; Redis 7 refuses DEBUG unless enabled.
                "enable-debug-command": "local",
            }
        if self.conf is not None:
            argv.append(str(self.conf))
        base.update(self.options)
        for name, value in base.items():
            argv += [f"--{name}", str(value)]
        return argv

    # -- lifecycle

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def start(self, timeout: float = START_TIMEOUT) -> "ServerProcess":
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            try:
                self._spawn_and_wait(timeout)
                return self
            except ServerStartError:
                # Another process may have taken the port between free_port() and bind().
                if attempt + 1 == attempts or "in use" not in self.log.lower():
                    raise
                self.port = free_port()
        return self

    def _spawn_and_wait(self, timeout: float) -> None:
        env = dict(os.environ, **self.env)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self._argv(), cwd=self.dir, env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        _live_processes[self.proc.pid] = self.proc
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self._forget()
                raise ServerStartError(
                    f"{self.kind} exited with code {code} before answering PING; "
                    f"command: {self._argv()}\nlog:\n{self.log}")
            if self._answers_ping():
                return
            time.sleep(0.05)
        self.stop(signal.SIGKILL)
        raise ServerStartError(
            f"{self.kind} did not answer PING on port {self.port} within {timeout}s; "
            f"command: {self._argv()}\nlog:\n{self.log}")

    def _answers_ping(self) -> bool:
        try:
            with raw_connection(self.port, timeout=1.0) as conn:
                return conn.request("PING") == b"+PONG\r\n"
        except (OSError, ReplyTimeout, ConnectionClosed):
            return False

    def _forget(self) -> None:
        if self.proc is not None:
            _live_processes.pop(self.proc.pid, None)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        """Signal the server and wait for it; SIGKILL after ``timeout``. Returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._forget()
        return self.proc.returncode

    def kill9(self) -> int | None:
        return self.stop(signal.SIGKILL)

    def restart(self, timeout: float = START_TIMEOUT, **options) -> "ServerProcess":
        """Stop (SIGTERM) if running and start again on the same port, arena and options."""
        self.stop()
        self.options.update(_option_names(options))
        self._fixed_port = True
        return self.start(timeout)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        _live_dirs.discard(self.dir)

    def client(self, protocol: int = 2, **kwargs) -> redis.Redis:
        return redis.Redis(port=self.port, protocol=protocol, **kwargs)

    def __repr__(self):
        return f"<ServerProcess {self.kind} port={self.port} pid={self.pid}>"


def _option_names(options: dict) -> dict:
    return {name.replace("_", "-"): value for name, value in options.items()}


def server_under_test(conf=None, **options) -> ServerProcess:
    """A not yet started server under test: cxlredis, or redis-server when CXLREDIS_TEST_TARGET=redis."""
    options = _option_names(options)
    if TARGET == "redis":
        options = {k: v for k, v in options.items() if not k.startswith("arena-")}
    return ServerProcess(TARGET, options, conf=conf)


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def cxl():
    server = server_under_test()
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture
def cxl_factory():
    started: list[ServerProcess] = []

    def factory(conf=None, **options) -> ServerProcess:
        server = server_under_test(conf, **options)
        started.append(server)  # before start(), so a failed start is cleaned up too
        return server.start()

    try:
        yield factory
    finally:
        for server in started:
            server.close()


@pytest.fixture
def tmpfs(tmp_path):
    mounted = []

    def mount(size, kind="tmpfs") -> Path:
        where = tmp_path / f"{kind}{len(mounted)}"
        where.mkdir()
        options = ["-o", f"size={size}"] if size is not None else []
        done = subprocess.run(["mount", "-t", kind, *options, kind, str(where)],
                              capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a {kind} for the test: {done.stderr.strip()}")
        mounted.append(where)
        return where

    try:
        yield mount
    finally:
        for where in mounted:
            subprocess.run(["umount", "-l", str(where)], check=False)


HUGE_PAGE = 2 << 20


@pytest.fixture
def huge_page_pool():
    """Sees to it that `pages` 2 MiB huge pages are free: as root, grows the kernel's pool
    and shrinks it back after the test; skips when they cannot be had. The pool is the
    machine's: tests that use it take turns (a lock), so none shrinks it under another."""
    pool = "/proc/sys/vm/nr_hugepages"
    grown = []
    turn = open(os.path.join(tempfile.gettempdir(), "cxlredis-tests-huge-pages.lock"), "w")

    def free_pages():
        with open("/proc/meminfo") as f:
            info = dict(line.split(":", 1) for line in f)
        if int(info["Hugepagesize"].split()[0]) * 1024 != HUGE_PAGE:
            pytest.skip("the default huge page is not 2 MiB")
        return int(info["HugePages_Free"])

    def reserve(pages):
        fcntl.flock(turn, fcntl.LOCK_EX)
        missing = pages - free_pages()
        if missing > 0:
            with open(pool) as f:
                before = int(f.read())
            try:
                with open(pool, "w") as f:
                    f.write(str(before + missing))
            except OSError as e:
                pytest.skip(f"cannot grow the huge page pool: {e}")
            grown.append(before)
            if free_pages() < pages:
                pytest.skip(f"the kernel could not find {pages} free 2 MiB pages")

    try:
        yield reserve
    finally:
        for before in grown:
            with open(pool, "w") as f:
                f.write(str(before))
        turn.close()            # and with it the lock


@pytest.fixture(scope="session")
def redis_oracle():
    server = ServerProcess("redis")
    try:
        yield server.start()
    finally:
        server.close()


def _redis_py_client(server: ServerProcess, protocol: int) -> redis.Redis:
    if not redis.utils.HIREDIS_AVAILABLE:
        pytest.fail("hiredis is not importable: the r2/r3 fixtures must use the hiredis parser")
    return redis.Redis(port=server.port, protocol=protocol, decode_responses=False,
                       socket_timeout=10)


@pytest.fixture
def r2(cxl):
    client = _redis_py_client(cxl, 2)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def r3(cxl):
    client = _redis_py_client(cxl, 3)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def flushed(redis_oracle, cxl):
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as conn:
            reply = conn.request("FLUSHALL")
            assert reply == b"+OK\r\n", f"FLUSHALL on {server!r} answered {reply!r}"
    yield redis_oracle, cxl


@pytest.fixture(params=[2, 3], ids=["RESP2", "RESP3"])
def protocol(request):
    """Each test once in RESP2 and once in RESP3."""
    return request.param


@pytest.fixture(scope="module")
def uncompressed_oracle(redis_oracle):
    """redis-server writing DUMP payloads as cxlredis does, uncompressed, so their bytes
    can be compared (rdbcompression back on afterwards)."""
    with raw_connection(redis_oracle.port) as conn:
        assert conn.request("CONFIG", "SET", "rdbcompression", "no") == b"+OK\r\n"
    yield
    with raw_connection(redis_oracle.port) as conn:
        assert conn.request("CONFIG", "SET", "rdbcompression", "yes") == b"+OK\r\n"
