"""Clients that wait: the commands CLIENT PAUSE holds, WAIT's replies, and the blocking
list and sorted-set commands (BLPOP, BLMOVE, BZPOPMIN, ...) waiting for their keys.

A waiting client is suspended (context.CallContext.suspended): its connection runs no
command of it until `resume()`, though it goes on reading, so a client that goes away
meanwhile is noticed (`forget`). `blocked` says why (CLIENT LIST's flag b, INFO's
blocked_clients).

CLIENT PAUSE, as Redis 7.0: while a pause is on, a command that reaches the point where
Redis's processCommand postpones it (every check before passed: dispatch.py) is kept as
it came (`postponed`) instead of running; ALL holds every command, the pausing client's
and CLIENT UNPAUSE included, WRITE those that may change the dataset. A later pause
widens the kind and the end of the one in force, never narrows them. When the pause
ends (its end passes, or CLIENT UNPAUSE), the held clients are resumed in the order
they were held, each command dispatched again with every check, as Redis re-processes a
postponed client. While a pause is on the dataset holds still, as in Redis: an expired
key reads as missing but stays (cxlredis._store.hold_expiry), and neither active expiry
nor eviction runs (server.py's cron, dispatch.py).

WAIT, with no replica to acknowledge anything: 0 of them, at once when none was asked
for, else once the timeout passes (never with timeout 0, as in Redis).

Blocked on keys, as Redis 7.0's blockForKeys: a client whose command found nothing at
any of its keys waits for them (`block_on_keys`), in the order clients blocked, per key.
A write command that succeeds names its keys (`written`; dispatch.call does it for every
write, MOVE and SWAPDB name what they moved); once the command a client sent is over
(after the whole EXEC or script), `serve_ready` offers each key written to the clients
waiting on it, first come first served: a client's `serve(c, key)` pops what its
command pops from that key and replies, or finds nothing there for it (the key is gone,
empty, or of another type) and waits on. A timeout (0: none) answers as the command
does on timeout; CLIENT UNBLOCK answers that or an error. Keys are a tenant's own: one
tenant's write never serves another's client.
"""
import asyncio

from ._store import hold_expiry, now_ms

PAUSE_OFF, PAUSE_WRITE, PAUSE_ALL = 0, 1, 2
# CallContext.blocked: why a client waits (a pause holds its command, WAIT, its keys)
POSTPONED, WAITING, KEYS = "postponed", "waiting", "keys"
UNBLOCKED = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
INT64_MAX = (1 << 63) - 1


def _wrapped(value):
    """A sum as Redis's signed 64-bit arithmetic leaves it."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


class KeyWait:
    """What a client blocked on keys waits for: its keys ((tenant, db, key) each), how to
    serve it from one of them, what to answer when its time is up, and that timer."""

    __slots__ = ("keys", "serve", "timed_out", "timer")

    def __init__(self, keys, serve, timed_out):
        self.keys = keys
        self.serve = serve
        self.timed_out = timed_out
        self.timer = None


class Blocked:
    def __init__(self):
        self.pause_kind = PAUSE_OFF
        self.pause_end = 0            # ms since the epoch: the pause ends once the clock passes it
        self.postponed = []           # the sessions the pause holds, in the order it held them
        self.waiting = {}             # session in WAIT → (its timeout's timer or None, its reply)
        self.on_keys = {}             # (tenant, db, key) → the sessions waiting on it, oldest first
        self.key_waits = {}           # session blocked on keys → its KeyWait
        self.ready = {}               # (tenant, db, key) written since the last serve (in order)
        self._timer = None

    @property
    def paused(self):
        return self.pause_kind != PAUSE_OFF

    def count(self):
        """INFO's blocked_clients: the clients a pause holds, in WAIT, and blocked on keys."""
        return len(self.postponed) + len(self.waiting) + len(self.key_waits)

    def in_timeout_table(self):
        """INFO's clients_in_timeout_table: blocked clients with a timeout."""
        return (sum(1 for timer, _ in self.waiting.values() if timer is not None)
                + sum(1 for wait in self.key_waits.values() if wait.timer is not None))

    # --- CLIENT PAUSE / UNPAUSE ------------------------------------------
    def pause(self, timeout_ms, kind):
        """Pause clients for timeout_ms (>= 0) milliseconds, or widen the pause in force.
        An end past what 64 bits hold wraps, as in Redis: a pause already over."""
        now = now_ms()
        end = _wrapped(now + timeout_ms) if timeout_ms else 0
        self.pause_kind = max(self.pause_kind, kind)
        self.pause_end = max(self.pause_end, end)
        hold_expiry(True)
        self._arm(now)

    def _arm(self, now):
        if self._timer is not None:
            self._timer.cancel()
        delay = max(self.pause_end - now, 0) / 1000
        self._timer = asyncio.get_running_loop().call_later(delay, self._check_end)

    def _check_end(self):
        self._timer = None
        now = now_ms()
        if self.pause_end < now:
            self.unpause()
        else:
            self._arm(now)

    def unpause(self):
        """End the pause: the held clients go on, in the order they were held."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.paused:
            return
        self.pause_kind, self.pause_end = PAUSE_OFF, 0
        hold_expiry(False)
        held, self.postponed = self.postponed, []
        if held:
            # after this turn of the loop, as Redis re-processes them before it sleeps
            asyncio.get_running_loop().call_soon(self._resume_all, held)
        if self.ready:          # keys written before or during the pause
            asyncio.get_running_loop().call_soon(self.serve_ready)

    def _resume_all(self, held):
        for session in held:
            if session.blocked == POSTPONED and session not in self.postponed:
                session.blocked = None
                session.suspended = False
                session.resume()        # its command again, then the rest of its input

    def postpone(self, c, argv):
        """Hold session c's command argv until the pause ends."""
        c.postponed = argv
        c.blocked = POSTPONED
        c.suspended = True
        self.postponed.append(c)

    # --- WAIT, WAITAOF -------------------------------------------------------
    def wait(self, c, timeout_ms, reply):
        """Suspend c until timeout_ms (> 0) milliseconds have passed, then reply(c); with 0,
        or a deadline past what 64 bits hold (Redis keeps it unsigned: never), for good."""
        timer = None
        if timeout_ms and now_ms() + timeout_ms <= INT64_MAX:
            timer = asyncio.get_running_loop().call_later(timeout_ms / 1000, self._timed_out, c)
        c.blocked = WAITING
        c.suspended = True
        self.waiting[c] = (timer, reply)

    def _timed_out(self, c):
        waited = self.waiting.pop(c, None)
        if waited is None:
            return
        c.blocked = None
        waited[1](c)
        c.suspended = False
        c.resume()

    # --- blocked on keys ------------------------------------------------------
    def block_on_keys(self, c, keys, timeout_at_ms, serve, timed_out):
        """Suspend c until one of keys (of its db and tenant) serves it: serve(c, key) is
        tried each time a command wrote key, in the order clients blocked on it, and
        replies and returns True when it served; timed_out(c) replies once the clock
        passes timeout_at_ms (ms since the epoch; 0: never)."""
        wait = KeyWait([(c.tenant, c.db, bytes(key)) for key in keys], serve, timed_out)
        for name in dict.fromkeys(wait.keys):
            self.on_keys.setdefault(name, []).append(c)
        if timeout_at_ms:
            delay = max(timeout_at_ms - now_ms(), 0) / 1000
            wait.timer = asyncio.get_running_loop().call_later(delay, self._keys_timed_out, c)
        self.key_waits[c] = wait
        c.blocked = KEYS
        c.suspended = True

    def written(self, c, keys, db=None):
        """Keys of c's tenant (in db, else c's) a command just wrote: the clients waiting on
        them are offered them once the command c sent is over."""
        if not self.on_keys:
            return
        db = c.db if db is None else db
        for key in keys:
            name = (c.tenant, db, bytes(key))
            if name in self.on_keys:
                self.ready[name] = None

    def written_db(self, c, db):
        """Every key of c's tenant in db may have changed (SWAPDB)."""
        for name in self.on_keys:
            if name[0] == c.tenant and name[1] == db:
                self.ready[name] = None

    def serve_ready(self):
        """Offer the keys written to the clients waiting on them, oldest first, until no
        write is left unoffered (a client served may write, as BLMOVE pushes). Not while a
        pause holds writes: the dataset holds still until it ends."""
        while self.ready and not self.pause_kind:
            ready, self.ready = self.ready, {}
            for name in ready:
                for c in list(self.on_keys.get(name, ())):
                    wait = self.key_waits.get(c)
                    if wait is not None and wait.serve(c, name[2]):
                        self._unblock(c)

    def redirect(self, error_for):
        """In cluster mode, each cron tick: a client blocked on keys this node no longer
        serves (their slot moved, or the cluster is down) is answered error_for(keys)."""
        for c, wait in list(self.key_waits.items()):
            error = error_for([name[2] for name in wait.keys])
            if error is not None:
                c.reply.error(error)
                self._unblock(c)

    def _keys_timed_out(self, c):
        wait = self.key_waits.get(c)
        if wait is not None:
            wait.timer = None
            wait.timed_out(c)
            self._unblock(c)

    def unblock(self, c, error):
        """CLIENT UNBLOCK of c: answered as its command times out, or with the UNBLOCKED
        error; False if c is not blocked in a way it can end."""
        if c.blocked == KEYS:
            if error:
                c.reply.error(UNBLOCKED)
            else:
                self.key_waits[c].timed_out(c)
            self._unblock(c)
            return True
        if c.blocked == WAITING:
            timer, reply = self.waiting.pop(c)
            if timer is not None:
                timer.cancel()
            if error:
                c.reply.error(UNBLOCKED)
            else:
                reply(c)                    # what its timeout answers: nothing acknowledged
            c.blocked = None
            c.suspended = False
            asyncio.get_running_loop().call_soon(c.resume)
            return True
        return False

    def _unblock(self, c):
        """c goes on: off every key it waited on, its input processed again (soon: not in
        the middle of the command that served it)."""
        self._forget_keys(c)
        c.blocked = None
        c.suspended = False
        asyncio.get_running_loop().call_soon(c.resume)

    def _forget_keys(self, c):
        wait = self.key_waits.pop(c)
        if wait.timer is not None:
            wait.timer.cancel()
        for name in dict.fromkeys(wait.keys):
            waiters = self.on_keys.get(name)
            if waiters is not None:
                waiters.remove(c)
                if not waiters:
                    del self.on_keys[name]

    # --- a connection gone ---------------------------------------------------
    def forget(self, c):
        if c.blocked == POSTPONED and c in self.postponed:
            self.postponed.remove(c)
        elif c.blocked == WAITING:
            timer, _ = self.waiting.pop(c, (None, None))
            if timer is not None:
                timer.cancel()
        elif c.blocked == KEYS:
            self._forget_keys(c)
        c.blocked = None
