"""The arena's memory is guaranteed or refused, never a SIGBUS; freed memory goes back.

A tmpfs (or /dev/shm) file supplies a page when it is first stored to; when the file
system is full that store is a SIGBUS, which kills the server. So: an arena its backing
cannot hold is refused at start with one line naming the backing, its free space and
the option (arena-size, a tenant's QUOTA); the heap's pages are allocated in the file
before the allocator hands them out, so a backing squeezed later (another file takes
the space) answers -OOM and keeps everything stored; and big free blocks idle for a
second are punched out of the file, so after a DEL the backing holds about what is
live (INFO arena_backing_bytes). Real servers on real tmpfs mounts; a test that needs
a mount of its own skips when mounting is not permitted.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import urllib.request

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from conftest import HUGE_PAGE, ServerProcess, ServerStartError, free_port, needs_populate_write

MIB = 1 << 20
OOM_TEXT = "command not allowed when used memory > 'maxmemory'."     # redis-py drops the "OOM "
OOM = "^" + OOM_TEXT.replace(".", r"\.") + "$"


def start_server(arena_path, size, **options):
    options = {name.replace("_", "-"): value for name, value in options.items()}
    server = ServerProcess("cxlredis", {"arena-path": str(arena_path), "arena-size": size, **options})
    return server.start()


def run_until_exit(*args, grace=20.0):
    """(exit code, stderr) of cxlredis started with `args`; it must exit by itself."""
    proc = subprocess.Popen([sys.executable, "-m", "cxlredis", "--port", str(free_port()), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"cxlredis {args} started instead of refusing")
    return proc.returncode, stderr


def info_arena(client):
    return client.info("arena")


def fill(path):
    """Write a file at `path` until its file system is full; returns its size."""
    chunk = b"\xa5" * MIB
    written = 0
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                written += f.write(chunk)
        except OSError:
            pass
    return written


def value(tag, size):
    seed = hashlib.sha256(tag.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def file_holds(path):
    return os.stat(path).st_blocks * 512


def held_after_release(path, *, below, within=15.0):
    """Poll the bytes the arena file holds until below `below`; returns the last figure."""
    deadline = time.monotonic() + within
    while True:
        held = file_holds(path)
        if held < below or time.monotonic() > deadline:
            return held
        time.sleep(0.1)


# ---------------------------------------------------------------- refused at start

def test_an_arena_bigger_than_its_tmpfs_is_refused_with_one_line(tmpfs):
    where = tmpfs("64m")
    code, stderr = run_until_exit("--arena-path", str(where / "a.arena"), "--arena-size", "256mb")
    assert code == 1
    assert "Traceback" not in stderr
    fatal = [line for line in stderr.splitlines() if "Fatal:" in line]
    assert len(fatal) == 1, stderr
    line = fatal[0]
    assert str(where / "a.arena") in line and "arena-size" in line, line
    assert f"has {64 * MIB} bytes free (64.0 MiB)" in line, line
    assert os.listdir(where) == [], "a refused start must leave no arena file behind"


def test_an_arena_bigger_than_the_free_space_of_its_file_system_is_refused(tmp_path):
    vfs = os.statvfs(tmp_path)
    free = vfs.f_bavail * vfs.f_frsize
    size = max(free * 2, 100 << 30)              # e.g. 100gb on a smaller disk
    code, stderr = run_until_exit("--arena-path", str(tmp_path / "a.arena"), "--arena-size", str(size))
    assert code == 1 and "Traceback" not in stderr
    assert f"the arena's {size} bytes (set by arena-size) do not fit its backing" in stderr, stderr
    assert not (tmp_path / "a.arena").exists()


@pytest.mark.parametrize("kind, size, arena, kept", [
    # 40 MiB of a 64 MiB tmpfs: after a restart the file's own pages are not "used" space
    ("tmpfs", "64m", "40mb", 20 * MIB),
    # ramfs, like a hugetlbfs mounted without size=, reports no size (statvfs blocks 0:
    # unlimited); a restart once took that for UINT64_MAX bytes free plus what the file
    # holds, wrapped around, and refused to start
    ("ramfs", None, "16mb", 2 * MIB),
])
def test_an_existing_arena_counts_what_its_file_already_holds(tmpfs, kind, size, arena, kept):
    where = tmpfs(size, kind)
    server = start_server(where / "a.arena", arena)
    try:
        with server.client() as c:
            c.set("kept", value("kept", kept))
        assert server.stop() == 0
        server.start()
        with server.client() as c:
            assert c.get("kept") == value("kept", kept)
    finally:
        server.close()


def test_an_arena_size_huge_pages_cannot_make_is_refused_with_one_line(tmpfs):
    """On hugetlbfs a file is sized in whole huge pages; an arena-size that is not gets
    the reason, not ftruncate's bare "Invalid argument" (mounting needs no free page)."""
    where = tmpfs(None, "hugetlbfs")
    code, err = run_until_exit("--arena-path", str(where / "a.arena"), "--arena-size", "67000000")
    assert code == 1
    assert (f"{where / 'a.arena'}: the arena's 67000000 bytes (set by arena-size) are not a multiple "
            f"of 2097152 bytes, the huge page size of its file system") in err
    assert not (where / "a.arena").exists()


# ---------------------------------------------------------------- squeezed later: -OOM

def test_a_backing_filled_by_another_file_gets_oom_never_sigbus(tmpfs):
    where = tmpfs("64m")
    server = start_server(where / "a.arena", "48mb", maxmemory_policy="noeviction")
    try:
        c = server.client(socket_timeout=20)
        stored = {f"small:{i}": value(f"small:{i}", 4096) for i in range(64)}
        stored["big"] = value("big", 2 * MIB)
        for key, data in stored.items():
            c.set(key, data)
        assert file_holds(where / "a.arena") < 8 * MIB     # pages only as they are used
        fill(where / "filler")
        # 8 MiB writes, then many small ones: each gets -OOM once the file system is full
        for i in range(4):
            with pytest.raises(redis.exceptions.OutOfMemoryError, match=OOM):
                c.set(f"blob:{i}", value(f"blob:{i}", 8 * MIB))
        refused = 0
        for i in range(20000):
            try:
                c.set(f"more:{i}", value(f"more:{i}", 4000))
                stored[f"more:{i}"] = value(f"more:{i}", 4000)
            except redis.exceptions.OutOfMemoryError as e:
                assert str(e) == OOM_TEXT
                refused += 1
                if refused >= 50:
                    break
        assert refused >= 50, "the writes never ran out of backing"
        assert server.running and c.ping()
        for key, data in stored.items():
            assert c.get(key) == data, key
        deadline = time.monotonic() + 5      # the cron logs it, hz times a second
        while "cannot supply memory for writes" not in server.log and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "cannot supply memory for writes (No space left on device): they get -OOM" in server.log
        # room again: writes succeed
        os.unlink(where / "filler")
        c.set("after", value("after", 8 * MIB))
        assert c.get("after") == value("after", 8 * MIB)
        assert c.execute_command("DEBUG", "ARENA-CHECK") == []
        c.close()
    finally:
        server.close()
    assert server.proc.returncode == 0, "the server did not shut down cleanly"


# ---------------------------------------------------------------- tenants

def tenant_conf(server, lines):
    conf = server.dir / "cxlredis.conf"
    conf.write_text("".join(line + "\n" for line in lines))
    server.conf = str(conf)
    return server


def test_a_tenant_arena_its_directory_cannot_hold_is_refused(tmpfs):
    where = tmpfs("64m")
    server = ServerProcess("cxlredis", {"tenant-arena-dir": str(where)}).start()
    try:
        with server.client() as c:
            with pytest.raises(redis.exceptions.ResponseError) as refused:
                c.execute_command("TENANT", "CREATE", "big", "QUOTA", "200mb", "ARENA", "own")
            text = str(refused.value)
            assert "set by tenant 'big' QUOTA" in text and f"{64 * MIB} bytes free" in text, text
            assert os.listdir(where) == []
            assert c.execute_command("TENANT", "CREATE", "small", "QUOTA", "16mb", "ARENA", "own") in (b"OK", "OK")
            assert os.listdir(where) != []
    finally:
        server.close()


def test_a_shared_tenant_quota_above_maxmemory_is_refused():
    server = ServerProcess("cxlredis", {"maxmemory": "32mb"}).start()
    try:
        with server.client() as c:
            with pytest.raises(redis.exceptions.ResponseError,
                               match=r"^QUOTA 67108864 is above the server's maxmemory "
                                     r"\(33554432 bytes\), which bounds every tenant in its arena"):
                c.execute_command("TENANT", "CREATE", "big", "QUOTA", "64mb")
            assert c.execute_command("TENANT", "CREATE", "fits", "QUOTA", "32mb") in (b"OK", "OK")
            with pytest.raises(redis.exceptions.ResponseError, match=r"QUOTA 33554433 is above"):
                c.execute_command("TENANT", "SET", "fits", "QUOTA", str(32 * MIB + 1))
            assert c.execute_command("TENANT", "SET", "fits", "QUOTA", "16mb") in (b"OK", "OK")
    finally:
        server.close()


def test_a_tenant_line_with_a_quota_above_maxmemory_stops_the_start():
    server = tenant_conf(ServerProcess("cxlredis", {"maxmemory": "32mb"}), ["tenant big quota 1gb"])
    try:
        with pytest.raises(ServerStartError):
            server.start()
        assert "tenant 'big': QUOTA 1073741824 is above the server's maxmemory (33554432 bytes)" in server.log
    finally:
        server.close()


# ---------------------------------------------------------------- memory given back

@pytest.mark.parametrize("checksum", ["no", "yes"])
def test_deleted_big_values_go_back_to_the_kernel(tmpfs, checksum):
    where = tmpfs("400m")
    path = where / "a.arena"
    server = start_server(path, "320mb", arena_checksum=checksum)
    try:
        c = server.client(socket_timeout=20)
        c.set("small", b"s" * 100)
        keys = [f"chunk:{i}" for i in range(50)]
        for key in keys:
            c.set(key, value(key, 4 * MIB))
        assert file_holds(path) >= 200 * MIB
        c.delete(*keys)
        held = held_after_release(path, below=24 * MIB)
        assert held < 24 * MIB, f"the backing still holds {held} bytes after the DELs"
        # the punched blocks are reused: rewritten and read back byte-exact
        for key in keys:
            c.set(key, value(key + "again", 4 * MIB))
        for key in keys[::7]:
            assert c.get(key) == value(key + "again", 4 * MIB)
        assert c.execute_command("DEBUG", "ARENA-CHECK") == []
        # punch again, then a crash and a rebuild: every value back, intact
        c.delete(*keys[25:])
        held_after_release(path, below=140 * MIB)
        c.close()
        server.kill9()
        server.start()
        c = server.client(socket_timeout=20)
        assert info_arena(c)["arena_recovery"] == "rebuilt"
        for key in keys[:25]:
            assert c.get(key) == value(key + "again", 4 * MIB)
        assert c.dbsize() == 26 and c.get("small") == b"s" * 100
        for key in keys[25:]:
            c.set(key, value(key, 4 * MIB))
        for key in keys[25:]:
            assert c.get(key) == value(key, 4 * MIB)
        assert c.execute_command("DEBUG", "ARENA-CHECK") == []
        c.close()
    finally:
        server.close()


def test_an_idle_server_holds_little_of_its_arena(tmp_path):
    # the default 1 GiB arena: superblock and index backed at start, the heap as it is used
    path = tmp_path / "a.arena"
    server = start_server(path, "1gb")
    try:
        assert file_holds(path) < 8 * MIB
        with server.client() as c:
            c.set("v", value("v", 3 * MIB))
            assert file_holds(path) >= 3 * MIB
    finally:
        server.close()


@needs_populate_write
@pytest.mark.parametrize("kind", ["tmpfs", "hugetlbfs"])
def test_a_fresh_arena_is_warmed_ahead_of_the_writes_and_given_back(tmpfs, huge_page_pool, kind):
    if kind == "hugetlbfs":
        huge_page_pool(80)              # the mapping reserves all 64 of the arena's
    path = tmpfs("256m" if kind == "tmpfs" else None, kind) / "a.arena"
    # once given back, at most: the value, backed ahead, and the free block's first page
    # (its header); on hugetlbfs the value's two huge pages and that one
    kept = 6 * MIB if kind == "tmpfs" else 3 * HUGE_PAGE + MIB
    server = start_server(path, "128mb")        # arena-warm-ahead 64mb: capped at 1/16, 8 MiB
    try:
        with server.client(socket_timeout=20) as c:
            assert c.config_get("arena-warm-ahead") == {"arena-warm-ahead": str(64 * MIB)}
            before = file_holds(path)
            c.set("v", value("v", 3 * MIB))
            deadline = time.monotonic() + 10
            while info_arena(c)["arena_warmed_bytes"] < 8 * MIB - 8192 and time.monotonic() < deadline:
                time.sleep(0.02)
            warmed = info_arena(c)["arena_warmed_bytes"]
            assert 8 * MIB - 8192 <= warmed <= 8 * MIB
            assert file_holds(path) >= before + 3 * MIB + warmed
            # no writes for a second: the cron gives the warmed pages back
            held = held_after_release(path, below=before + kept)
            assert held < before + kept, f"the backing still holds {held - before} bytes more"
            assert c.get("v") == value("v", 3 * MIB)
            assert c.execute_command("DEBUG", "ARENA-CHECK") == []
    finally:
        server.close()
    off = start_server(tmpfs("64m") / "b.arena", "32mb", arena_warm_ahead=0)
    try:
        with off.client() as c:
            c.set("v", value("v", 3 * MIB))
            time.sleep(0.3)
            assert info_arena(c)["arena_warmed_bytes"] == 0
    finally:
        off.close()


def test_info_and_prometheus_report_what_the_backing_holds(tmp_path):
    path = tmp_path / "a.arena"
    # no warmer: it would add pages between the two reads
    server = ServerProcess("cxlredis", {"arena-path": str(path), "metrics-port": free_port(),
                                        "arena-warm-ahead": 0}).start()
    try:
        with server.client() as c:
            c.set("v", value("v", 5 * MIB))
            reported = info_arena(c)["arena_backing_bytes"]
            assert reported == file_holds(path) and reported >= 5 * MIB
            port = int(c.config_get("metrics-port")["metrics-port"])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            metrics = {m.name: m for m in text_string_to_metric_families(reply.read().decode())}
        assert metrics["cxlredis_arena_backing_bytes"].samples[0].value == file_holds(path)
    finally:
        server.close()
