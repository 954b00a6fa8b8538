"""The arena and its backing's pages (cxlredis._store): allocated before first use,
punched out of idle free blocks, and never assumed backed after a restart.

A store into a tmpfs page the file system cannot supply is a SIGBUS, so every check
that could end in one runs in a child process: its exit status says whether the
arena answered OutOfMemory (0) or the process died of the signal (-SIGBUS).
"""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from cxlredis._store import Arena, ArenaError, OutOfMemory

from conftest import HUGE_PAGE, REPO_ROOT, needs_populate_write

MiB = 1 << 20


def held(path):
    return os.stat(path).st_blocks * 512


def release_until_idle(arena, within=10.0, **budget):
    """Run the cron's release step until it has punched something; returns the bytes."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        done = arena.release_free_pages(**budget)
        if done:
            return done
        time.sleep(0.05)
    return 0


def run_child(code):
    """Run `code` (Python, with Arena, OutOfMemory, MiB, fill imported) in a child process."""
    prelude = textwrap.dedent("""
        import os
        from cxlredis._store import Arena, OutOfMemory
        MiB = 1 << 20
        def fill(path):
            with open(path, "wb", buffering=0) as f:
                try:
                    while True:
                        f.write(b"x" * MiB)
                except OSError:
                    pass
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_new_arena_backs_only_its_metadata(tmp_path):
    path = str(tmp_path / "a.arena")
    with Arena(path, 256 * MiB) as a:
        assert held(path) < 2 * MiB
        assert a.stats()["backing_bytes"] == held(path)
        a.set(0, b"k", os.urandom(3 * MiB))
        assert held(path) >= 3 * MiB


def test_start_refuses_what_the_backing_cannot_hold_and_leaves_no_file(tmpfs):
    where = tmpfs("32m")
    path = str(where / "a.arena")
    with pytest.raises(ArenaError, match=r"the arena's 67108864 bytes \(set by arena-size\) do not fit its "
                                         r"backing: the file system there has 33554432 bytes free \(32.0 MiB\)"):
        Arena(path, 64 * MiB)
    assert os.listdir(where) == []
    with pytest.raises(ArenaError, match=r"set by tenant 't' QUOTA"):
        Arena(path, 64 * MiB, size_option="tenant 't' QUOTA")
    Arena(path, 16 * MiB).close()          # fits; an existing file counts what it holds
    Arena(path, 16 * MiB).close()


def test_idle_free_blocks_are_punched_once_and_then_reused(tmpfs):
    where = tmpfs("128m")
    path = str(where / "a.arena")
    with Arena(path, 96 * MiB) as a:
        values = {b"k%d" % i: os.urandom(4 * MiB) for i in range(16)}
        for key, value in values.items():
            a.set(0, key, value)
        assert held(path) >= 64 * MiB
        for key in values:
            a.delete(0, key)
        # freshly freed blocks are not punched (an overwrite may reuse them at once)
        assert a.release_free_pages() == 0
        assert held(path) >= 64 * MiB
        released = release_until_idle(a)
        while more := a.release_free_pages():          # 64 MiB a call
            released += more
        assert released >= 64 * MiB
        assert held(path) < 4 * MiB
        assert a.release_free_pages() == 0            # a punched block is not punched again
        for key, value in values.items():
            a.set(0, key, value[::-1])
        for key, value in values.items():
            assert a.value_bytes(a.lookup(0, key)) == value[::-1]
        assert a.check() == []


def test_the_release_step_respects_its_byte_budget(tmp_path):
    path = str(tmp_path / "a.arena")
    with Arena(path, 128 * MiB) as a:
        # separate free blocks: live small keys between them keep them from merging
        for i in range(8):
            a.set(0, b"big%d" % i, os.urandom(4 * MiB))
            a.set(0, b"pin%d" % i, b"x")
        for i in range(8):
            a.delete(0, b"big%d" % i)
        assert a.release_free_pages() == 0          # seen idle from now on
        first = release_until_idle(a, max_bytes=4 * MiB)
        assert 0 < first <= 4 * MiB
        assert a.release_free_pages(max_bytes=1 << 40) >= 6 * 4 * MiB - 7 * 2 * 4096
        assert a.check() == []


def test_a_block_bigger_than_the_budget_is_punched_in_parts(tmp_path):
    path = str(tmp_path / "a.arena")
    with Arena(path, 128 * MiB) as a:
        a.set(0, b"big", os.urandom(64 * MiB))
        a.set(0, b"after", b"x")                # keeps the freed block apart from the heap's tail
        a.delete(0, b"big")
        assert a.release_free_pages() == 0
        parts = [release_until_idle(a, max_bytes=8 * MiB)]
        while parts[-1]:
            parts.append(a.release_free_pages(max_bytes=8 * MiB))
        assert all(0 < part <= 8 * MiB for part in parts[:-1]) and len(parts) >= 9
        assert sum(parts) >= 64 * MiB - 3 * 4096
        assert held(path) < 4 * MiB
        a.set(0, b"big", b"y" * (64 * MiB))
        assert a.value_bytes(a.lookup(0, b"big")) == b"y" * (64 * MiB) and a.check() == []


@pytest.mark.parametrize("clean", [True, False])
def test_after_a_restart_punched_blocks_are_not_taken_for_backed(tmpfs, clean):
    """Punch, detach (clean: the marks are kept; not: a rebuild recomputes them), fill the
    file system, write: OutOfMemory, not a SIGBUS."""
    where = tmpfs("64m")
    path = str(where / "a.arena")
    done = run_child(f"""
        import time
        a = Arena({path!r}, 48 * MiB)
        for i in range(8):
            a.set(0, b"k%d" % i, os.urandom(4 * MiB))
        a.set(0, b"small", b"s" * 100)
        for i in range(8):
            a.delete(0, b"k%d" % i)
        deadline = time.monotonic() + 10
        while not a.release_free_pages() and time.monotonic() < deadline:
            time.sleep(0.05)
        a.close(clean={clean})
        b = Arena({path!r}, 48 * MiB)
        assert b.recovery == {"clean" if clean else "rebuilt"!r}, b.recovery
        fill({str(where / "filler")!r})
        try:
            b.set(0, b"after", os.urandom(8 * MiB))
            raise SystemExit("the write fit a full file system")
        except OutOfMemory:
            pass
        assert b.take_backing_error() == 28 and b.take_backing_error() == 0
        assert b.check() == [], b.check()
        os.unlink({str(where / "filler")!r})
        value = os.urandom(8 * MiB)
        b.set(0, b"after", value)
        assert b.value_bytes(b.lookup(0, b"after")) == value and b.value_bytes(b.lookup(0, b"small")) == b"s" * 100
        assert b.check() == []
        b.close()
    """)
    assert done.returncode == 0, f"exit {done.returncode} ({'SIGBUS' if done.returncode == -signal.SIGBUS else ''})" \
                                 f"\n{done.stderr}"


def warmer_threads():
    """This process's warmer threads, by thread id: their scheduling policy."""
    threads = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() == "cxlredis-warm":
                    threads[int(tid)] = os.sched_getscheduler(int(tid))
        except (FileNotFoundError, ProcessLookupError):
            pass                # a thread that ended meanwhile
    return threads


@needs_populate_write
@pytest.mark.parametrize("kind", ["tmpfs", "hugetlbfs"])
def test_the_warmer_faults_in_ahead_of_writes_and_gives_the_pages_back(tmpfs, huge_page_pool, kind):
    page = HUGE_PAGE if kind == "hugetlbfs" else 4096
    if kind == "hugetlbfs":
        huge_page_pool(80)              # the mapping reserves all 64 of the arena's
    where = tmpfs("256m" if kind == "tmpfs" else None, kind)
    path = str(where / "a.arena")
    with Arena(path, 128 * MiB, warm_ahead=8 * MiB) as a:
        metadata = held(path)
        value = os.urandom(3 * MiB)
        a.set(0, b"k", value)
        deadline = time.monotonic() + 10
        while a.stats()["warmed_bytes"] < 8 * MiB - 8192 and time.monotonic() < deadline:
            time.sleep(0.01)
        warmed = a.stats()["warmed_bytes"]
        assert 8 * MiB - 8192 <= warmed <= 8 * MiB
        assert held(path) >= metadata + 3 * MiB + warmed
        assert a.value_bytes(a.lookup(0, b"k")) == value
        # it runs only on a core nothing else wants
        assert os.SCHED_IDLE in warmer_threads().values()
        # writes paused: the cron's release step takes the warmed pages back
        assert release_until_idle(a) >= warmed - 2 * page
        # the value, backed ahead, and the free block's first page (its header)
        assert held(path) <= metadata + 3 * MiB + 2 * MiB + 3 * page
        assert a.release_free_pages() == 0
        assert a.value_bytes(a.lookup(0, b"k")) == value
        assert a.check() == []


def test_no_warmer_with_prefault_or_when_asked_for_none(tmp_path):
    threads = warmer_threads()
    for options in (dict(warm_ahead=0), dict(warm_ahead=8 * MiB, prefault=True)):
        with Arena(str(tmp_path / "a.arena"), 64 * MiB, reset=True, **options) as a:
            a.set(0, b"k", os.urandom(3 * MiB))
            time.sleep(0.2)
            assert a.stats()["warmed_bytes"] == 0, options
            assert warmer_threads().keys() <= threads.keys(), options


@pytest.mark.parametrize("warm_ahead", [0, 16 * MiB])
def test_a_squeezed_backing_fails_the_write_and_evicts_nothing(tmpfs, warm_ahead):
    where = tmpfs("64m")
    path = str(where / "a.arena")
    done = run_child(f"""
        a = Arena({path!r}, 48 * MiB, warm_ahead={warm_ahead})
        a.policy = "allkeys-lru"
        kept = {{b"k%d" % i: os.urandom(MiB) for i in range(4)}}
        for key, value in kept.items():
            a.set(0, key, value)
        fill({str(where / "filler")!r})
        for size in (8 * MiB, 64 * 1024, 4096):
            try:
                for i in range(20000):
                    a.set(0, b"new%d" % i, os.urandom(size))
                raise SystemExit("no OutOfMemory")
            except OutOfMemory:
                pass
        assert a.stats()["evicted_keys"] == 0, a.stats()["evicted_keys"]
        for key, value in kept.items():
            assert a.value_bytes(a.lookup(0, key)) == value
        assert a.check() == []
        a.close()
    """)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr}"
