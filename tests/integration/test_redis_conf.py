"""A server started from a Redis 7.0 configuration file as it is: Debian's (which
daemonizes), and the one Redis's own test suite uses; supervision by systemd."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REDIS_TEST_SUITE_CONF, REPO_ROOT, ServerProcess, free_port, raw_connection

DEBIAN_CONF = Path("/etc/redis/redis.conf")


def _answers_ping(port):
    try:
        with raw_connection(port, timeout=1.0) as conn:
            return conn.request("PING") == b"+PONG\r\n"
    except OSError:
        return False


def _wait(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (our own child, not reaped) is as good as gone.
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"


@pytest.mark.skipif(not DEBIAN_CONF.exists(), reason="Debian's redis-server package is not installed")
def test_debian_redis_conf_daemonizes(tmp_path):
    """Debian's /etc/redis/redis.conf, unchanged, with daemonize yes: the command returns at
    once, the daemon writes its pid file, serves, names the directives it ignores, and goes
    on SIGTERM. Only what must differ on a shared machine is given on the command line."""
    port = free_port()
    pidfile, logfile = tmp_path / "server.pid", tmp_path / "server.log"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "cxlredis", str(DEBIAN_CONF), "--port", str(port),
         "--pidfile", str(pidfile), "--logfile", str(logfile), "--dir", str(tmp_path),
         "--arena-path", str(tmp_path / "a.arena"), "--arena-size", "64mb"],
        env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    assert run.stdout == b"" and run.stderr == b""     # the daemon writes to its log only
    pid = None
    try:
        assert _wait(lambda: pidfile.exists() and pidfile.read_text().strip()), logfile.read_text()
        pid = int(pidfile.read_text())
        assert _wait(lambda: _answers_ping(port)), logfile.read_text()
        assert time.monotonic() - started < 30
        assert os.getsid(pid) == pid            # a session of its own: no terminal reaches it
        with raw_connection(port) as conn:
            assert conn.request("CONFIG", "GET", "daemonize") == b"*2\r\n$9\r\ndaemonize\r\n$3\r\nyes\r\n"
            assert conn.request("SET", "k", "v") == b"+OK\r\n"
        log = logfile.read_text()
        assert f"pid={pid}, just started" in log
        assert "Configuration loaded" in log
        assert "Ready to accept connections" in log
        warning = next(line for line in log.split("\n") if "the arena is the persistence" in line)
        for name in ("stop-writes-on-bgsave-error", "rdbcompression", "dbfilename", "appendonly",
                     "appendfsync", "aof-use-rdb-preamble"):
            assert f" {name}," in warning or warning.endswith(f" {name}"), name
        assert log.count("rdbcompression") == 1     # each directive named once
        assert "replica-serve-stale-data" in log and "lazyfree-lazy-eviction" in log
        os.kill(pid, signal.SIGTERM)
        assert _wait(lambda: not _alive(pid)), logfile.read_text()
        assert not pidfile.exists()
        pid = None
    finally:
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_redis_test_suite_conf_serves(tmp_path):
    """The configuration file Redis's test suite starts its servers with, as it is."""
    conf = tmp_path / "default.conf"
    conf.write_text(REDIS_TEST_SUITE_CONF)
    server = ServerProcess(conf=conf, options={"pidfile": str(tmp_path / "pid"),
                                                "loglevel": "notice", "dir": str(tmp_path)})
    try:
        server.start()
        client = server.client()
        assert client.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
        assert client.config_get("propagation-error-behavior") == {"propagation-error-behavior": "panic"}
        assert client.config_get("save") == {"save": "900 1 300 10 60 10000"}   # three lines
        client.set("k", "v")
        assert client.get("k") == b"v"
        assert "Accepted with no effect, as cxlredis has no replicas: repl-diskless-sync-delay, " \
               "replica-serve-stale-data" in server.log
    finally:
        server.close()


def test_supervised_systemd_is_told_ready(tmp_path):
    """supervised systemd: READY=1 reaches NOTIFY_SOCKET once the server answers; with
    daemonize yes it stays in the foreground, as a supervised redis-server does."""
    address = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
        notify.bind(address)
        notify.settimeout(20)
        server = ServerProcess(options={"supervised": "systemd", "daemonize": "yes"},
                               env={"NOTIFY_SOCKET": address})
        try:
            server.start()
            assert notify.recv(4096) == b"STATUS=Ready to accept connections\nREADY=1\n"
            assert server.running           # not detached: the supervisor keeps its pid
            assert server.client().ping()
        finally:
            server.close()


@pytest.mark.parametrize("lines, reason", [
    ("rename-command nosuch x\n", "No such command in rename-command"),
    ("rename-command get set\n", "Target command name already exists"),
    ("rename-command get x\nrename-command get y\n", "No such command in rename-command"),
])
def test_rename_command_errors_like_redis(tmp_path, lines, reason):
    conf = tmp_path / "bad.conf"
    conf.write_text("port 0\n" + lines)
    outputs = []
    for argv in (["redis-server", str(conf)], [sys.executable, "-m", "cxlredis", str(conf)]):
        run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=30,
                             env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
        assert run.returncode != 0
        outputs.append(run.stderr.strip().split("\n")[-2:])
    theirs, ours = outputs
    assert ours == theirs == [f">>> '{lines.strip().split(chr(10))[-1]}'", reason]
