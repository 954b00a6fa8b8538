"""SAVE, BGSAVE, BGREWRITEAOF and LASTSAVE, over arenas that are the persistence.

The data lives in mapped arenas, and each arena's backing (a file, or a device) is the
durable copy that Redis would write to an RDB file: a restarted server re-attaches it.
So a save does not write the dataset anywhere else; it makes the backing durable: every
arena's mapping is written back to its backing and waited for (msync, Arena.sync). Then
LASTSAVE and INFO persistence move as Redis's do after an RDB save.

SAVE syncs on the event loop, as Redis's SAVE blocks. BGSAVE syncs on a thread of its
own (Arena.sync releases the GIL), so clients go on meanwhile, and reports the end to
the loop; while it runs another BGSAVE or a SAVE is refused as Redis refuses them, and
one asked inside EXEC is scheduled, to start once the transaction is done.

There is no append-only file (appendonly is no): BGREWRITEAOF answers as Redis 7.0 does
then and has nothing to rewrite, so it is never in progress.

rdb_changes_since_last_save counts the write commands that succeeded since the last
save (`changes`, from the command counters): Redis counts each change a command made,
so a write that changed nothing (DEL of a missing key) counts here and not there.
"""
import asyncio
import logging
import threading
import time

from ._store import ArenaError

log = logging.getLogger("cxlredis")

BGSAVE_IN_PROGRESS = "ERR Background save already in progress"


class Persistence:
    """The saves of one server: `arenas` (arenas.Arenas, whose every() are synced) and
    `changes` (a function: write commands that succeeded since start)."""

    def __init__(self, arenas, changes):
        self.arenas = arenas
        self.changes = changes
        self.lastsave = int(time.time())     # seconds since the epoch; the start counts as one
        self.changes_saved = 0              # changes() as of the last successful save
        self.saves = 0                      # rdb_saves: saves started (SAVE and BGSAVE)
        self.last_bgsave_ok = True
        self.last_bgsave_seconds = -1       # how long the last BGSAVE took; -1 before any
        self.background = None              # the running BGSAVE's thread
        self.background_started = 0.0       # when it started (time.monotonic())
        self.scheduled = False              # a BGSAVE to start once the running one ends

    # --- what INFO persistence shows
    @property
    def in_progress(self):
        return self.background is not None

    def changes_since_save(self):
        return self.changes() - self.changes_saved

    def current_bgsave_seconds(self):
        return int(time.monotonic() - self.background_started) if self.background is not None else -1

    # --- SAVE
    def save(self):
        """Sync every arena now; OSError if a backing cannot take its pages."""
        self.saves += 1
        changes = self.changes()
        sync_arenas(self.arenas.every())
        self._saved(changes)
        log.notice("DB saved on disk")

    # --- BGSAVE
    def start_background(self):
        """Start a BGSAVE on a thread; its end is reported on the running loop."""
        loop = asyncio.get_running_loop()
        arenas = self.arenas.every()
        changes = self.changes()
        self.saves += 1
        self.background_started = time.monotonic()

        def run():
            try:
                sync_arenas(arenas)
                failed = None
            except OSError as e:
                failed = e
            loop.call_soon_threadsafe(self._background_done, failed, changes)

        self.background = threading.Thread(target=run, name="cxlredis-bgsave", daemon=True)
        self.background.start()
        log.notice("Background saving started")

    def schedule_background(self):
        """BGSAVE inside EXEC: it starts once this turn of the loop (the transaction) is done."""
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self._start_scheduled)

    def _start_scheduled(self):
        if self.scheduled and self.background is None:
            self.scheduled = False
            self.start_background()

    def _background_done(self, failed, changes):
        self.background = None
        self.last_bgsave_seconds = int(time.monotonic() - self.background_started)
        self.last_bgsave_ok = failed is None
        if failed is None:
            self._saved(changes)
            log.notice("Background saving terminated with success")
        else:
            log.warning("Background saving error: %s", failed)
        self._start_scheduled()

    def _saved(self, changes):
        self.lastsave = int(time.time())
        self.changes_saved = changes

    def join(self):
        """Wait for a running BGSAVE (before the arenas are detached)."""
        if self.background is not None:
            self.background.join()


def sync_arenas(arenas):
    """msync each arena; one detached meanwhile (a tenant's closed while idle) is skipped."""
    for arena in arenas:
        try:
            arena.sync()
        except (OSError, ArenaError):
            if not arena.closed:
                raise
