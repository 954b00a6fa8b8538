"""Shards on one backing (arena-offset): several servers on one file, each with its own
region of it. Their data never meet, each comes back warm after a kill -9, a server on a
region that overlaps a running one's is refused naming the holder, a region the backing
cannot hold or map from is refused at start with one line, and one shard's deletes give
back only its own pages. Real servers on a real tmpfs (a test skips when it cannot mount one).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

from conftest import ServerProcess, free_port
from test_backing import run_until_exit

MIB = 1 << 20


def shard(path, offset, size="64mb", **options):
    options = {name.replace("_", "-"): value for name, value in options.items()}
    return ServerProcess("cxlredis", {"arena-path": str(path), "arena-offset": offset, "arena-size": size,
                                      **options})


def refused_start(*args):
    """The one Fatal line of a cxlredis started with `args`, which must exit with 1 by itself."""
    code, stderr = run_until_exit(*args)
    assert code == 1 and "Traceback" not in stderr, stderr
    fatal = [line for line in stderr.splitlines() if "Fatal:" in line]
    assert len(fatal) == 1, stderr
    return fatal[0]


def value(tag, size):
    unit = tag.encode() + b"|"
    return (unit * (size // len(unit) + 1))[:size]


def arena_info(server):
    with server.client() as c:
        return c.info("arena")


def backing_bytes(server):
    return arena_info(server)["arena_backing_bytes"]


def settled_backing_bytes(server, within=15.0):
    """arena_backing_bytes once it has held still for 1.5 s: the pages the warmer faulted in
    ahead of the last writes go back after 1 s without writes."""
    deadline = time.monotonic() + within
    last, since = backing_bytes(server), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = backing_bytes(server)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= 1.5:
            break
    return last


def test_two_shards_on_one_file_keep_apart_and_come_back_warm_after_kill_9(tmpfs):
    path = tmpfs("320m") / "shards.arena"
    a, b = shard(path, 0), shard(path, "64mb")
    try:
        a.start()
        b.start()
        assert os.path.getsize(path) == 128 * MIB
        keys = [f"k:{i}" for i in range(40)]
        with a.client() as ca, b.client() as cb:
            for i, key in enumerate(keys):
                ca.set(key, value(f"a{key}", 100 + i * 5000))      # small and large (zero-copy) values
                cb.set(key, value(f"b{key}", 300_000 - i * 1000))
            cb.set("only-b", "b")
            assert ca.get("only-b") is None and ca.dbsize() == 40 and cb.dbsize() == 41
            ca.delete(*keys[:10])
            assert cb.dbsize() == 41
        assert arena_info(a)["arena_offset"] == 0 and arena_info(b)["arena_offset"] == 64 * MIB
        assert a.kill9() == -9 and b.kill9() == -9
        b.start()               # in the other order: neither needs the other
        a.start()
        with a.client() as ca, b.client() as cb:
            assert arena_info(a)["arena_recovery"] == arena_info(b)["arena_recovery"] == "rebuilt"
            assert ca.dbsize() == 30 and cb.dbsize() == 41
            for i, key in enumerate(keys):
                assert ca.get(key) == (value(f"a{key}", 100 + i * 5000) if i >= 10 else None), key
                assert cb.get(key) == value(f"b{key}", 300_000 - i * 1000), key
            assert ca.execute_command("DEBUG", "ARENA-CHECK") == cb.execute_command("DEBUG", "ARENA-CHECK") == []
    finally:
        a.close()
        b.close()


def test_a_server_on_an_overlapping_region_is_refused_naming_who_holds_it(tmpfs):
    path = tmpfs("320m") / "shards.arena"
    a, b, c = shard(path, 0), shard(path, "64mb"), shard(path, "128mb")
    try:
        a.start()
        b.start()
        with b.client() as cb:
            cb.set("k", "b")
        for offset, size in (("64mb", "64mb"), ("32mb", "64mb"), ("96mb", "8mb")):
            line = refused_start("--arena-path", str(path), "--arena-offset", offset, "--arena-size", size)
            assert f"arena {path} is in use by another process" in line, line
            holders = [a.pid, b.pid] if offset == "32mb" else [b.pid]
            pids = line.split("(pid ")[1].split(" holds it")[0].split(", ")
            assert sorted(map(int, pids)) == sorted(holders), line
            assert line.endswith("stop that process, or give this server another arena-path or arena-offset)")
        # the next region is free: a third shard starts beside them
        c.start()
        with c.client() as cc, b.client() as cb:
            cc.set("k", "c")
            assert cb.get("k") == b"b"
        assert os.path.getsize(path) == 192 * MIB
        assert a.client().ping()
    finally:
        for server in (a, b, c):
            server.close()


def test_an_offset_that_cannot_start_a_mapping_is_refused_with_one_line(tmp_path):
    path = tmp_path / "a.arena"
    line = refused_start("--arena-path", str(path), "--arena-offset", "1000")
    assert f"{path}: arena-offset 1000 is not a multiple of {os.sysconf('SC_PAGESIZE')} bytes" in line, line
    line = refused_start("--arena-path", str(path), "--arena-offset", "1mb", "--arena-hugepages", "yes")
    assert "arena-offset 1048576 is not a multiple of 2097152 bytes (arena-hugepages maps 2 MiB pages)" in line
    assert not path.exists()
    # a negative one is not a memory value, as in Redis's config
    done = subprocess.run([sys.executable, "-m", "cxlredis", "--port", str(free_port()), "--arena-path",
                           str(path), "--arena-offset", "-4096"], capture_output=True, text=True, timeout=20)
    assert done.returncode == 1, done.stderr
    assert ">>> 'arena-offset \"-4096\"'\nargument must be a memory value" in done.stderr, done.stderr
    assert not path.exists()


def test_a_region_beyond_its_backing_is_refused_at_start(tmpfs):
    where = tmpfs("64m")
    path = where / "shards.arena"
    line = refused_start("--arena-path", str(path), "--arena-offset", "48mb", "--arena-size", "32mb")
    assert (f"{path}: the arena's {32 * MIB} bytes at arena-offset {48 * MIB} (set by arena-size and "
            f"arena-offset) end beyond its backing: the file system there holds {64 * MIB} bytes (64.0 MiB); "
            f"lower arena-size or arena-offset") in line, line
    assert os.listdir(where) == []
    # within its size but beyond its free space, once a first shard holds most of it
    a = shard(path, 0, size="32mb", arena_prefault="yes")
    try:
        a.start()
        with open(where / "filler", "wb") as f:
            f.write(b"f" * (16 * MIB))
        line = refused_start("--arena-path", str(path), "--arena-offset", "32mb", "--arena-size", "32mb")
        assert "do not fit its backing" in line and "the region holds 0; lower arena-size" in line, line
        assert os.path.getsize(path) == 32 * MIB and a.client().ping()
    finally:
        a.close()


def test_deletes_in_one_shard_give_back_only_its_own_pages(tmpfs):
    path = tmpfs("400m") / "shards.arena"
    a, b = shard(path, 0, size="160mb"), shard(path, "160mb", size="160mb")
    try:
        a.start()
        b.start()
        kept = {f"kept:{i}": value(f"kept:{i}", 4 * MIB) for i in range(20)}
        with a.client(socket_timeout=20) as ca, b.client(socket_timeout=20) as cb:
            for key, data in kept.items():
                ca.set(key, data)
            held_a = settled_backing_bytes(a)
            assert held_a >= 80 * MIB
            for round in range(4):
                churn = [f"churn:{round}:{i}" for i in range(25)]
                for key in churn:
                    cb.set(key, value(key, 4 * MIB))
                assert backing_bytes(b) >= 100 * MIB
                cb.delete(*churn)
                deadline = time.monotonic() + 15        # the cron punches blocks idle for 1 s
                while backing_bytes(b) >= 8 * MIB and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert backing_bytes(b) < 8 * MIB, f"round {round}: b still holds {backing_bytes(b)}"
            assert backing_bytes(a) == held_a
            assert abs(os.stat(path).st_blocks * 512 - held_a - backing_bytes(b)) <= 2 * MIB
            for key, data in kept.items():
                assert ca.get(key) == data, key
            assert ca.execute_command("DEBUG", "ARENA-CHECK") == cb.execute_command("DEBUG", "ARENA-CHECK") == []
    finally:
        a.close()
        b.close()
