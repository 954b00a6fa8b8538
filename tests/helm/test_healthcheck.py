"""`python -m cxlredis.healthcheck`, the chart's probe: healthy on +PONG or -NOAUTH
from a real server (TCP or unix socket), unhealthy on anything else — nothing
listening, a peer that never answers, closes, or answers something else."""
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import REPO_ROOT, ServerProcess, free_port, raw_connection
from cxlredis import healthcheck


def probe(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cxlredis.healthcheck", *map(str, args)],
                          capture_output=True, text=True, timeout=30,
                          env={"PYTHONPATH": str(REPO_ROOT)})


@pytest.fixture(scope="module")
def server():
    process = ServerProcess("cxlredis")
    try:
        yield process.start()
    finally:
        process.close()


@pytest.fixture
def password_server(server):
    """The same server while it requires a password."""
    with raw_connection(server.port) as conn:
        assert conn.request("CONFIG", "SET", "requirepass", "secret") == b"+OK\r\n"
    try:
        yield server
    finally:
        with raw_connection(server.port) as conn:
            assert conn.request("AUTH", "secret") == b"+OK\r\n"
            assert conn.request("CONFIG", "SET", "requirepass", "") == b"+OK\r\n"


def test_pong_over_tcp_and_unix_socket(server):
    result = probe("--host", "127.0.0.1", "--port", server.port)
    assert (result.returncode, result.stderr) == (0, "")
    result = probe("--unixsocket", server.unixsocket)
    assert (result.returncode, result.stderr) == (0, "")
    assert healthcheck.check(("127.0.0.1", server.port)) == "+PONG"


def test_noauth_counts_as_alive(password_server):
    assert healthcheck.check(password_server.unixsocket) == "-NOAUTH Authentication required."
    assert probe("--unixsocket", password_server.unixsocket).returncode == 0


def test_nothing_listening():
    result = probe("--port", free_port())
    assert result.returncode == 1
    assert result.stderr.startswith("unhealthy: cannot connect: Connection refused")
    result = probe("--unixsocket", "/nonexistent/cxlredis.sock")
    assert result.returncode == 1 and "No such file or directory" in result.stderr


class FakePeer:
    """A TCP listener that treats each connection with `behave(connection)`."""

    def __init__(self, behave):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.behave = behave
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        connection, _ = self.listener.accept()
        with connection:
            self.behave(connection)

    def close(self):
        self.listener.close()
        self.thread.join(5)


@pytest.mark.parametrize("behave, reason", [
    (lambda c: (c.recv(64), time.sleep(1.5)), "no reply to PING within 0.5 s"),
    (lambda c: c.recv(64), "connection closed after b''"),
    (lambda c: (c.recv(64), c.sendall(b"+PO")), "connection closed after b'+PO'"),
    (lambda c: (c.recv(64), c.sendall(b"-LOADING Redis is loading the dataset in memory\r\n")),
     "unexpected reply to PING: -LOADING Redis is loading the dataset in memory"),
    (lambda c: (c.recv(64), c.sendall(b"-NOAUTHX\r\n")), "unexpected reply to PING: -NOAUTHX"),
    (lambda c: (c.recv(64), c.sendall(b"$4\r\nPONG\r\n")), "unexpected reply to PING: $4"),
])
def test_unhealthy_answers(behave, reason):
    peer = FakePeer(behave)
    try:
        started = time.monotonic()
        with pytest.raises(healthcheck.Unhealthy) as caught:
            healthcheck.check(("127.0.0.1", peer.port), timeout=0.5)
        assert str(caught.value) == reason
        assert time.monotonic() - started < 1.4
    finally:
        peer.close()


def test_reply_split_over_packets_is_read_whole():
    def slow_pong(connection):
        connection.recv(64)
        for piece in (b"+P", b"ON", b"G\r", b"\n"):
            connection.sendall(piece)
            time.sleep(0.02)

    peer = FakePeer(slow_pong)
    try:
        assert healthcheck.check(("127.0.0.1", peer.port), timeout=2) == "+PONG"
    finally:
        peer.close()
