"""Server lifecycle: start-up on defaults, warm restart, signals, SHUTDOWN, bad arenas,
the start-up log and starts that fail."""
import base64
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys

import pytest
import redis

from conftest import REPO_ROOT, ServerProcess, free_port, raw_connection


def failed_start(directory, *args, conf=None):
    """Run a cxlredis start (in `directory`, with the config file `conf`) that must fail;
    its stderr."""
    proc = subprocess.run([sys.executable, "-m", "cxlredis", *([conf] if conf else []),
                           "--arena-size", "16mb", *args],
                          capture_output=True, text=True, timeout=60, cwd=directory,
                          env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr


def fatal_lines(output, text):
    return [line for line in output.splitlines() if text in line]


def digest(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def busy_port():
    """A listening socket on 127.0.0.1 and its port (close the socket when done)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock, sock.getsockname()[1]


def fill(client, n=50, size=1000):
    expected = {}
    for i in range(n):
        value = os.urandom(size)
        client.set(f"k{i}", value)
        expected[f"k{i}".encode()] = value
    return expected


def assert_holds(client, expected):
    assert client.dbsize() == len(expected)
    for key, value in expected.items():
        assert client.get(key) == value


def test_warm_restart_after_shutdown(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    expected = fill(c)
    c.set("big", b"x" * (3 << 20))
    expected[b"big"] = b"x" * (3 << 20)
    c.set("ttl", "v", ex=1000)
    expected[b"ttl"] = b"v"
    c.shutdown()  # redis-py treats the closed connection as success
    assert srv.stop() == 0
    srv.restart()
    c = srv.client()
    assert_holds(c, expected)
    assert 0 < c.ttl("ttl") <= 1000
    info = c.info("persistence")
    assert info["arena_recovery"] == "clean"


def test_warm_restart_after_kill9_rebuilds(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    expected = fill(c, n=200, size=300)
    c.delete("k0")
    del expected[b"k0"]
    c.set("k1", b"overwritten")
    expected[b"k1"] = b"overwritten"
    srv.kill9()
    srv.restart()
    c = srv.client()
    assert_holds(c, expected)
    assert c.info("persistence")["arena_recovery"] == "rebuilt"
    assert c.execute_command("DEBUG", "ARENA-CHECK") == []


def test_kill9_during_upload_leaves_nothing(cxl_factory):
    """A value half-received into its slot when the server dies is dropped on restart."""
    srv = cxl_factory()
    c = srv.client()
    c.set("before", "ok")
    conn = raw_connection(srv.port)
    size = 8 << 20
    conn.send(b"*3\r\n$3\r\nSET\r\n$4\r\ntorn\r\n$%d\r\n" % size + b"y" * (size // 2))
    c.ping()  # the half value has been received by now
    srv.kill9()
    conn.close()
    srv.restart()
    c = srv.client()
    assert c.get("before") == b"ok"
    assert c.exists("torn") == 0
    assert c.execute_command("DEBUG", "ARENA-CHECK") == []


def test_client_vanishing_mid_upload_reclaims_slot(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    used_before = c.info("arena")["arena_heap_used"]
    conn = raw_connection(srv.port)
    size = 16 << 20
    conn.send(b"*3\r\n$3\r\nSET\r\n$4\r\ngone\r\n$%d\r\n" % size + b"z" * (size // 4))
    c.ping()
    assert c.info("arena")["arena_heap_used"] >= used_before + size  # the slot is reserved
    conn.close()
    for _ in range(100):
        if c.info("arena")["arena_heap_used"] == used_before:
            break
        c.execute_command("DEBUG", "SLEEP", "0.01")
    assert c.info("arena")["arena_heap_used"] == used_before
    assert c.exists("gone") == 0


def test_arena_reset_starts_empty(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    fill(c, n=5)
    srv.stop()
    srv.restart(**{"arena-reset": "yes"})
    c = srv.client()
    assert c.dbsize() == 0
    assert c.info("persistence")["arena_recovery"] == "new"


@pytest.mark.parametrize("damage", ["magic", "foreign"])
def test_corrupt_arena_is_refused_with_clear_error(cxl_factory, tmp_path, damage):
    srv = cxl_factory()
    srv.client().set("a", "b")
    srv.stop()
    with open(srv.arena_path, "r+b") as f:
        if damage == "magic":
            f.write(b"NOTCXL!!")
        else:
            f.write(os.urandom(4096))  # someone else's bytes where our superblock was
    before = digest(srv.arena_path)
    stderr = failed_start(tmp_path, "--port", str(free_port()), "--arena-path", srv.arena_path,
                          "--arena-size", "64mb")
    fatal = fatal_lines(stderr, "Fatal")
    assert len(fatal) == 1, stderr
    assert srv.arena_path in fatal[0]
    assert "arena-reset yes" in fatal[0] and "arena-path" in fatal[0]
    assert digest(srv.arena_path) == before     # refused, not touched


def test_arena_size_mismatch_is_refused(cxl_factory, tmp_path):
    srv = cxl_factory()
    srv.stop()
    before = digest(srv.arena_path)
    stderr = failed_start(tmp_path, "--port", str(free_port()), "--arena-path", srv.arena_path,
                          "--arena-size", "32mb")
    fatal = fatal_lines(stderr, "Fatal")
    assert len(fatal) == 1 and "arena-reset" in fatal[0], stderr
    assert digest(srv.arena_path) == before


def test_two_servers_cannot_share_one_arena(cxl_factory, tmp_path):
    srv = cxl_factory()
    stderr = failed_start(tmp_path, "--port", str(free_port()), "--arena-path", srv.arena_path,
                          "--arena-size", "64mb")
    fatal = fatal_lines(stderr, "in use")
    assert len(fatal) == 1, stderr
    assert f"pid {srv.pid} holds it" in fatal[0]
    assert srv.client().ping()


def test_port_in_use_creates_nothing(tmp_path):
    """Every file a start makes is gone after it failed: arena, unix socket, pid file."""
    sock, port = busy_port()
    with sock:
        stderr = failed_start(tmp_path, "--port", str(port), "--arena-path", "a.arena",
                              "--unixsocket", "s.sock", "--pidfile", "p.pid")
    fatal = fatal_lines(stderr, "Address already in use")
    assert len(fatal) == 1, stderr
    assert f"127.0.0.1:{port}" in fatal[0] and "another port" in fatal[0]
    assert sorted(os.listdir(tmp_path)) == []


def test_port_in_use_leaves_an_existing_arena_as_it_was(cxl_factory, tmp_path):
    srv = cxl_factory()
    srv.client().set("kept", "yes")
    srv.stop()
    before = digest(srv.arena_path)
    sock, port = busy_port()
    with sock:
        failed_start(tmp_path, "--port", str(port), "--arena-path", srv.arena_path,
                     "--arena-size", "64mb")
    assert digest(srv.arena_path) == before
    srv.restart()
    assert srv.client().get("kept") == b"yes"
    assert srv.client().info("persistence")["arena_recovery"] == "clean"


def test_late_failure_removes_the_new_arena_only(cxl_factory, tmp_path):
    """The metrics port is bound after the arena: its failure still leaves no new file,
    and an arena that was there before keeps its data (and is trusted: detached clean)."""
    sock, busy = busy_port()
    with sock:
        stderr = failed_start(tmp_path, "--port", str(free_port()), "--metrics-port", str(busy),
                              "--arena-path", "a.arena", "--unixsocket", "s.sock")
        assert len(fatal_lines(stderr, "Prometheus exporter")) == 1, stderr
        assert os.listdir(tmp_path) == []
        srv = cxl_factory()
        srv.client().set("kept", "yes")
        srv.stop()
        failed_start(tmp_path, "--port", str(free_port()), "--metrics-port", str(busy),
                     "--arena-path", srv.arena_path, "--arena-size", "64mb")
    assert os.path.exists(srv.arena_path)
    srv.restart()
    assert srv.client().get("kept") == b"yes"
    assert srv.client().info("persistence")["arena_recovery"] == "clean"


def test_late_failure_removes_new_tenant_arenas_and_tenants_file(tmp_path):
    (tmp_path / "c.conf").write_text("user acme-user on >pw ~* +@all\n"
                                     "user team-user on >pw ~* +@all\n"
                                     "tenant acme quota 8mb arena own users acme-user\n"
                                     "tenant team quota 8mb users team-user\n")
    sock, busy = busy_port()
    with sock:
        stderr = failed_start(tmp_path, "--port", str(free_port()), "--metrics-port", str(busy),
                              "--arena-path", "a.arena", conf="c.conf")
    assert "Tenant 'acme' arena" in stderr          # it was created, then removed again
    assert os.listdir(tmp_path) == ["c.conf"]


def test_bad_tenant_definitions_create_nothing(tmp_path):
    (tmp_path / "c.conf").write_text("user acme-user on >pw ~* +@all\n"
                                     "tenant acme quota 8mb users acme-user\n"
                                     "tenant team quota 8mb users acme-user\n")
    stderr = failed_start(tmp_path, "--port", str(free_port()), "--arena-path", "a.arena",
                          conf="c.conf")
    assert len(fatal_lines(stderr, "already belongs to tenant 'acme'")) == 1, stderr
    assert os.listdir(tmp_path) == ["c.conf"]


def test_fatal_error_goes_to_the_logfile_and_stderr_once_each(tmp_path):
    sock, port = busy_port()
    with sock:
        stderr = failed_start(tmp_path, "--port", str(port), "--arena-path", "a.arena",
                              "--logfile", "server.log")
    logged = (tmp_path / "server.log").read_text()
    assert len(fatal_lines(stderr, "Address already in use")) == 1, stderr
    assert len(fatal_lines(logged, "Address already in use")) == 1, logged
    assert sorted(os.listdir(tmp_path)) == ["server.log"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_shuts_down_gracefully(cxl_factory, sig):
    srv = cxl_factory()
    srv.client().set("kept", "yes")
    assert srv.stop(sig=sig) == 0
    assert "ready to exit" in srv.log
    srv.restart()
    c = srv.client()
    assert c.get("kept") == b"yes"
    assert c.info("persistence")["arena_recovery"] == "clean"


def test_log_lines_look_like_redis(cxl_factory):
    srv = cxl_factory(loglevel="notice")
    srv.stop()
    lines = [line for line in srv.log.splitlines() if line.strip()]
    assert any("Ready to accept connections" in line for line in lines)
    pattern = re.compile(r"^\d+:M \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} [.\-*#] ")
    assert all(pattern.match(line) for line in lines), lines


def test_startup_log_names_listeners_and_sizes(cxl_factory):
    """Where it listens (Redis's "Running mode=standalone, port=N."; one line per
    listener), the arena's size and maxmemory in human units, how it was recovered."""
    srv = cxl_factory(loglevel="notice", maxmemory="32mb")
    srv.client().set("a", "b")
    srv.kill9()
    srv.restart()
    first, second = srv.log.split("cxlredis is starting")[1:3]
    assert f"* Running mode=standalone, port={srv.port}." in first
    assert f"* Ready to accept connections tcp 127.0.0.1:{srv.port}\n" in first
    assert f"* Ready to accept connections unix {srv.unixsocket}\n" in first
    assert f"* Arena {srv.arena_path}: 64.00M, new; maxmemory 32.00M\n" in first
    assert "dropped" not in first
    assert f"* Arena {srv.arena_path}: 64.00M, rebuilt; maxmemory 32.00M\n" in second


def test_startup_log_of_an_unbounded_maxmemory(cxl_factory):
    srv = cxl_factory(loglevel="notice", bind="127.0.0.1 -::1")
    srv.stop()
    assert "maxmemory 57.60M (90% of the arena, as maxmemory is 0)" in srv.log
    tcp = [line for line in srv.log.splitlines() if "Ready to accept connections tcp" in line]
    assert tcp[0].endswith(f"tcp 127.0.0.1:{srv.port}")
    if socket.has_ipv6 and len(tcp) == 2:       # ::1 is optional ("-"): absent without IPv6
        assert tcp[1].endswith(f"tcp [::1]:{srv.port}")


def test_logfile_and_config_file(tmp_path):
    port = free_port()
    conf = tmp_path / "c.conf"
    logfile = tmp_path / "server.log"
    conf.write_text(f"port {port}\nlogfile {logfile}\nmaxmemory-policy volatile-ttl\n")
    srv = ServerProcess(conf=str(conf), port=port, options={"loglevel": "notice"}).start()
    try:
        c = srv.client()
        assert c.config_get("maxmemory-policy") == {"maxmemory-policy": "volatile-ttl"}
        c.config_set("maxmemory-policy", "allkeys-random")
        c.config_rewrite()
        assert "allkeys-random" in conf.read_text()
    finally:
        srv.close()
    assert "Ready to accept connections" in logfile.read_text()


def test_unix_socket(cxl):
    c = redis.Redis(unix_socket_path=cxl.unixsocket)
    assert c.ping()
    c.set("via-unix", "1")
    assert cxl.client().get("via-unix") == b"1"
    c.close()


def test_default_start_without_config(tmp_path):
    """The embedded default: no config file, a shm arena named after the port."""
    port = free_port()
    # run from an empty directory: the default `dir` is the working directory, and state
    # files a server left in the checkout (tenants.json) must not reach this one
    proc = subprocess.Popen([sys.executable, "-m", "cxlredis", "--port", str(port),
                             "--arena-size", "16mb"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, cwd=tmp_path)
    arena = f"/dev/shm/cxlredis-{port}.arena"
    try:
        c = redis.Redis(port=port)
        for _ in range(200):
            try:
                c.ping()
                break
            except redis.ConnectionError:
                import time
                time.sleep(0.05)
        assert c.info("arena")["arena_path"] == arena
        assert c.info("arena")["arena_backing"] == "shm"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if os.path.exists(arena):
            os.unlink(arena)


LIBRARY = "#!lua name=kept\nredis.register_function('kept', function(keys) return redis.call('get', keys[1]) end)"


def test_function_libraries_survive_a_restart_and_a_kill(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    c.function_load(LIBRARY)
    c.function_load("#!lua name=gone\nredis.register_function('gone', function() return 1 end)")
    c.function_delete("gone")
    c.set("k", "v")
    srv.kill9()                 # the functions file was written when the libraries changed
    srv.restart()
    c = srv.client()
    assert c.fcall("kept", 1, "k") == b"v"
    assert [lib[1] for lib in c.function_list()] == [b"kept"]
    with pytest.raises(redis.ResponseError, match="Function not found"):
        c.fcall("gone", 0)
    c.function_flush()
    c.shutdown()
    srv.stop()
    srv.restart()
    assert srv.client().function_list() == []


def test_a_functions_file_that_does_not_load_is_logged_and_left_out(cxl_factory):
    srv = cxl_factory()
    c = srv.client()
    c.function_load(LIBRARY)
    c.shutdown()
    srv.stop()
    path = srv.dir / "functions.json"
    content = json.loads(path.read_text())
    content["libraries"].append({"tenant": None, "code": base64.b64encode(b"#!lua name=bad\nif").decode()})
    path.write_text(json.dumps(content))
    srv.restart()
    assert [lib[1] for lib in srv.client().function_list()] == [b"kept"]
    srv.client().shutdown()
    srv.stop()
    path.write_text("not json")
    srv.restart()
    assert srv.client().function_list() == []
    assert "Ignoring the functions file" in srv.log


def test_without_a_functions_file_libraries_last_until_the_restart(cxl_factory):
    srv = cxl_factory(functions_file="")
    c = srv.client()
    c.function_load(LIBRARY)
    c.shutdown()
    srv.stop()
    srv.restart()
    assert srv.client().function_list() == []
    assert not (srv.dir / "functions.json").exists()


def test_a_functions_file_that_cannot_be_written_changes_nothing(cxl_factory, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the functions file's directory should be")
    srv = cxl_factory(functions_file=str(blocker / "functions.json"))
    c = srv.client()
    with pytest.raises(redis.ResponseError, match="cannot write the functions file .*: Not a directory"):
        c.function_load(LIBRARY)
    assert c.function_list() == []
    with pytest.raises(redis.ResponseError, match="Function not found"):
        c.fcall("kept", 1, "k")
    assert c.ping()
