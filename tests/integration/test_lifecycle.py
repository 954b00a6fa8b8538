"""Server lifecycle: start-up on defaults, warm restart, signals, SHUTDOWN, bad arenas."""
import os
import signal
import subprocess
import sys

import pytest
import redis

from conftest import ServerProcess, free_port, raw_connection


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
    proc = subprocess.run([sys.executable, "-m", "cxlredis", "--port", str(free_port()),
                           "--arena-path", srv.arena_path, "--arena-size", "64mb"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "arena" in proc.stderr.lower()
    assert "Traceback" not in proc.stderr


def test_arena_size_mismatch_is_refused(cxl_factory):
    srv = cxl_factory()
    srv.stop()
    proc = subprocess.run([sys.executable, "-m", "cxlredis", "--port", str(free_port()),
                           "--arena-path", srv.arena_path, "--arena-size", "32mb"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "arena-reset" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_two_servers_cannot_share_one_arena(cxl_factory):
    srv = cxl_factory()
    proc = subprocess.run([sys.executable, "-m", "cxlredis", "--port", str(free_port()),
                           "--arena-path", srv.arena_path, "--arena-size", "64mb"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert "in use" in proc.stderr
    assert srv.client().ping()


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
    import re
    pattern = re.compile(r"^\d+:M \d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} [.\-*#] ")
    assert all(pattern.match(line) for line in lines), lines


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
    proc = subprocess.Popen([sys.executable, "-m", "cxlredis", "--port", str(port),
                             "--arena-size", "16mb"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
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
