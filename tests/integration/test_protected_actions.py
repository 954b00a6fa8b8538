"""DEBUG and CONFIG SET of protected options, gated as Redis 7 gates them
(enable-debug-command, enable-protected-configs: no | yes | local), replayed on a real
redis-server started with the same options: replies must be identical, from 127.0.0.1,
from 127.0.0.2 (not local to Redis) and through the unix socket."""
import socket
import subprocess

import pytest

from conftest import RawConnection, ServerProcess

DEBUG_REFUSED = (b'-ERR DEBUG command not allowed. If the enable-debug-command option is set to '
                 b'"local", you can run it from a local connection, otherwise you need to set this '
                 b'option in the configuration file, and then restart the server.\r\n')
DIR_REFUSED = (b"-ERR CONFIG SET failed (possibly related to argument 'dir') - "
               b"can't set protected config\r\n")

STEPS = [
    ("DEBUG", "SLEEP", "0"),
    ("DEBUG",),
    ("debug", "sleep", "0"),
    ("DEBUG", "NOSUCH"),
    ("DEBUG", "SLEEP"),
    ("MULTI",), ("DEBUG", "SLEEP", "0"), ("EXEC",),
    ("CONFIG", "SET", "dir", "."),
    ("CONFIG", "SET", "maxmemory-samples", "5", "dir", "."),
    ("CONFIG", "SET", "enable-debug-command", "yes"),
    ("CONFIG", "SET", "enable-protected-configs", "local"),
    ("CONFIG", "GET", "enable-debug-command"),
    ("CONFIG", "GET", "enable-protected-configs"),
    ("PING",),
]


class SourceConnection(RawConnection):
    """A RawConnection to 127.0.0.1 from another loopback address (127.0.0.2)."""

    def __init__(self, port, source, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                             source_address=(source, 0))
        self.timeout = timeout
        self.buffer = b""


def connect(server, origin):
    if origin == "unix":
        return RawConnection(unixsocket=server.unixsocket)
    if origin == "127.0.0.1":
        return RawConnection(server.port)
    try:
        return SourceConnection(server.port, origin)
    except OSError as e:
        pytest.skip(f"cannot connect from {origin}: {e}")


@pytest.fixture(scope="module", params=["no", "yes", "local"])
def pair(request):
    """A redis-server and a cxlredis with both options set to the same value."""
    options = {"enable-debug-command": request.param, "enable-protected-configs": request.param,
               "protected-mode": "no"}     # redis-server: answer 127.0.0.2 at all
    servers = [ServerProcess("redis", options).start(), ServerProcess("cxlredis", options).start()]
    yield request.param, servers
    for server in servers:
        server.close()


def replies(server, origin, steps):
    with connect(server, origin) as conn:
        return [conn.request(*step) for step in steps]


@pytest.mark.parametrize("origin", ["127.0.0.1", "127.0.0.2", "unix"])
def test_gates_answer_as_redis(pair, origin):
    setting, (oracle, ours) = pair
    expected = replies(oracle, origin, STEPS)
    assert replies(ours, origin, STEPS) == expected
    allowed = setting == "yes" or (setting == "local" and origin != "127.0.0.2")
    assert expected[0] == (b"+OK\r\n" if allowed else DEBUG_REFUSED)
    assert expected[8] == (b"+OK\r\n" if allowed else DIR_REFUSED)


def test_refused_before_noauth_as_redis():
    """Redis checks the DEBUG gate right after the arity, before authentication."""
    servers = [ServerProcess(kind, {"enable-debug-command": "no"}).start()
               for kind in ("redis", "cxlredis")]
    try:
        for server in servers:
            assert replies(server, "127.0.0.1", [("CONFIG", "SET", "requirepass", "pw")]) == [b"+OK\r\n"]
        steps = [("DEBUG", "SLEEP", "0"), ("CONFIG", "SET", "dir", "."), ("AUTH", "pw"),
                 ("DEBUG", "SLEEP", "0")]
        oracle, ours = (replies(server, "127.0.0.1", steps) for server in servers)
        assert ours == oracle
        assert ours[0] == DEBUG_REFUSED and ours[1].startswith(b"-NOAUTH")
    finally:
        for server in servers:
            server.close()


def test_redis_cli_sees_the_refusal_and_the_server_does_not_stall(cxl_factory):
    server = cxl_factory(enable_debug_command="no")
    result = subprocess.run(["redis-cli", "-p", str(server.port), "DEBUG", "SLEEP", "30"],
                            capture_output=True, timeout=20)
    assert result.stdout.strip() == DEBUG_REFUSED[1:-2]
    with RawConnection(server.port) as conn:
        assert conn.request("PING") == b"+PONG\r\n"


@pytest.mark.parametrize("setting, origin, allowed", [
    ("no", "127.0.0.1", False), ("no", "unix", False), ("yes", "127.0.0.2", True),
    ("local", "127.0.0.1", True), ("local", "unix", True), ("local", "127.0.0.2", False)])
def test_audit_log_file_is_protected(cxl_factory, tmp_path, setting, origin, allowed):
    """cxlredis's own protected option: the audit log is a file the server writes."""
    server = cxl_factory(enable_protected_configs=setting)
    moved = tmp_path / "moved.log"
    with connect(server, origin) as conn:
        reply = conn.request("CONFIG", "SET", "audit-log-file", str(moved))
        assert reply == (b"+OK\r\n" if allowed else
                         b"-ERR CONFIG SET failed (possibly related to argument 'audit-log-file') - "
                         b"can't set protected config\r\n")
        current = conn.request("CONFIG", "GET", "audit-log-file")
    assert (str(moved).encode() in current) == allowed
    assert moved.exists() == allowed
