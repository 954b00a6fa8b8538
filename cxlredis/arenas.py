"""The server's arenas: its own, attached from the configuration, and the arenas of its
ARENA own tenants (tenant_arenas.py); the options applied to them at start and at CONFIG
SET, and the upkeep the cron does on them."""
import logging
import os
import tempfile
import time

from ._store import Arena, ArenaError, region_locked
from .files import CreatedFiles
from .tenant_arenas import TenantArenas

BACKING_FULL_LOG_INTERVAL = 60.0       # seconds between warnings that an arena's backing is full

log = logging.getLogger("cxlredis")


def default_arena_path(port):
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"cxlredis-{port}.arena")


class Arenas:
    """`main` is the server's arena (the keyspace of the administrators and of ARENA shared
    tenants); `tenants` the tenants' own. Attaching `main` is the step of a start that
    creates or recovers a file: ArenaError says why it cannot, and how to fix it."""

    def __init__(self, config):
        self.config = config
        self.path = config["arena-path"] or default_arena_path(config["port"] or config["tls-port"])
        self.created = CreatedFiles()       # the arena files this start made
        self.created.note_arena(self.path)
        try:
            self.main = Arena(
                self.path, config["arena-size"], offset=config["arena-offset"],
                databases=config["databases"], reset=config["arena-reset"],
                hugepages=config["arena-hugepages"], prefault=config["arena-prefault"],
                numa_node=config["arena-numa-node"], warm_ahead=config["arena-warm-ahead"])
        except ArenaError as e:     # (Arena removes a file it created itself)
            raise ArenaError(explain_arena_error(str(e), self.path, config["arena-offset"],
                                                 config["arena-size"])) from None
        self.tenants = TenantArenas(config, self.path, self.created)
        self.apply_maxmemory(config["maxmemory"])
        self.main.policy = config["maxmemory-policy"]
        self.main.maxmemory_samples = config["maxmemory-samples"]
        self.main.checksums = config["arena-checksum"]
        self.checksum_failures_logged = 0
        self.backing_full_logged = {}          # arena path -> when its full backing was last logged
        config.on_change("maxmemory", self.apply_maxmemory)
        config.on_change("maxmemory-policy", lambda v: setattr(self.main, "policy", v))
        config.on_change("maxmemory-samples", lambda v: [setattr(a, "maxmemory_samples", v)
                                                         for a in self.every()])
        config.on_change("arena-checksum", lambda v: [setattr(a, "checksums", v) for a in self.every()])

    def every(self):
        """The server's arena, then the arenas of tenants with ARENA own."""
        return [self.main, *self.tenants.every()]

    def privatize(self):
        """In a forked child (ldb.py): every arena a private copy, which the server never
        sees written (Arena.privatize)."""
        for arena in self.every():
            arena.privatize()

    # --- maxmemory ------------------------------------------------------
    def apply_maxmemory(self, value):
        """maxmemory bounds used_memory as INFO shows it: the heap plus the arena's fixed
        superblock and index. 0 means 90% of the arena, the arena itself being the hard bound."""
        st = self.main.stats()
        fixed = st["used_memory"] - st["heap_used"]
        self.main.maxmemory = max(self.memory_limit(value) - fixed, 1)

    def memory_limit(self, maxmemory=None):
        """The maxmemory in effect (of `maxmemory`, default the configured one): 0 is 90% of the arena."""
        value = self.config["maxmemory"] if maxmemory is None else maxmemory
        return value or int(self.config["arena-size"] * 0.9)

    # --- what commands ask of them ----------------------------------------
    def check(self):
        """DEBUG ARENA-CHECK: the problems found in every arena, named by arena."""
        problems = self.main.check()
        for name, arena in self.tenants.by_name.items():
            problems += [f"tenant {name}'s arena: {problem}" for problem in arena.check()]
        return problems

    @property
    def checksum_failures(self):
        """Values dropped since start because they failed their checksum, in every arena."""
        return (sum(arena.checksum_failures for arena in self.every())
                + self.tenants.closed_checksum_failures)

    # --- the cron's upkeep -------------------------------------------------
    def expire_cycle(self, hz):
        # like Redis's slow cycle: at most a quarter of each tick, shared by the arenas
        arenas = self.every()
        budget_us = 250_000 // hz // len(arenas)
        for arena in arenas:
            arena.expire_cycle(budget_us)

    def release_free_pages(self):
        """Small freed blocks merge back into the free lists, and idle big free blocks go
        back to the kernel, a bounded amount per call; a backing that cannot supply pages is
        logged once a minute per arena."""
        now = time.monotonic()
        for arena in self.every():
            arena.merge_quick_lists()
            arena.release_free_pages()
            err = arena.take_backing_error()
            if err and now - self.backing_full_logged.get(arena.path, -BACKING_FULL_LOG_INTERVAL) \
                    >= BACKING_FULL_LOG_INTERVAL:
                self.backing_full_logged[arena.path] = now
                log.warning("The backing of arena %s cannot supply memory for writes (%s): they get "
                            "-OOM until space is freed on its file system", arena.path, os.strerror(err))

    def log_checksum_failures(self):
        failures = self.checksum_failures
        if failures != self.checksum_failures_logged:
            log.warning("%d value(s) failed their checksum on read and were dropped "
                        "(%d since start): the arena's memory is corrupting data",
                        failures - self.checksum_failures_logged, failures)
            self.checksum_failures_logged = failures

    def close(self):
        """Detach every arena cleanly: the next start trusts them as they are."""
        self.tenants.close_all()
        self.main.close(clean=True)

    def abandon(self):
        """Undo a start that failed: detach clean (nothing was served) and remove the arena
        files it created, unless another process has locked one since (it started on the
        same new path at the same moment, or at another arena-offset of it, and uses it now)."""
        self.close()
        self.created.remove(region_locked)


def lock_holders(path, offset=0, size=0):
    """Pids of the processes holding an arena's lock on [offset, offset + size) of the file
    at path (size 0: to its end); [] when that cannot be told. The locks are open file
    description locks, which /proc/locks lists without a pid: each holder's are in the
    fdinfo of its descriptors of the file."""
    try:
        st = os.stat(path)
        procs = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    end = offset + size if size else None
    pids = []
    for pid in procs:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.stat(f"/proc/{pid}/fd/{fd}")
                if (target.st_dev, target.st_ino) != (st.st_dev, st.st_ino):
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            # "lock:\t1: OFDLCK ADVISORY  WRITE -1 00:1a:5678 4096 12287" (its last byte, or EOF)
            if any(_overlaps(line.split(), offset, end) for line in lines if line.startswith("lock:")):
                pids.append(int(pid))
                break
    return pids


def _overlaps(fields, offset, end):
    if len(fields) < 9 or fields[2] != "OFDLCK" or not fields[7].isdigit():
        return False
    start, last = int(fields[7]), None if fields[8] == "EOF" else int(fields[8])
    return (end is None or start < end) and (last is None or last >= offset)


def explain_arena_error(text, path, offset=0, size=0):
    """An ArenaError's text with how to fix it: who holds an arena in use, which options
    deal with a file that is not this server's arena."""
    holders = lock_holders(path, offset, size) if "in use by another process" in text else []
    if holders:
        return (f"{text} (pid {', '.join(map(str, holders))} holds it: stop that process, "
                f"or give this server another arena-path{' or arena-offset' if offset else ''})")
    if ("not a cxlredis arena" in text or "corrupt superblock" in text) and "arena-reset" not in text:
        return (f"{text}: give this server another arena-path, or start it once with "
                f"--arena-reset yes to re-format this file (discarding what it holds)")
    return text
