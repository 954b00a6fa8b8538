"""Clients that wait: the commands CLIENT PAUSE holds, and WAIT's replies.

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
"""
import asyncio

from ._store import hold_expiry, now_ms

PAUSE_OFF, PAUSE_WRITE, PAUSE_ALL = 0, 1, 2
POSTPONED, WAITING = "postponed", "waiting"     # CallContext.blocked: why a client waits
INT64_MAX = (1 << 63) - 1


def _wrapped(value):
    """A sum as Redis's signed 64-bit arithmetic leaves it."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


class Blocked:
    def __init__(self):
        self.pause_kind = PAUSE_OFF
        self.pause_end = 0            # ms since the epoch: the pause ends once the clock passes it
        self.postponed = []           # the sessions the pause holds, in the order it held them
        self.waiting = {}             # session in WAIT → its timeout's timer (None: no timeout)
        self._timer = None

    @property
    def paused(self):
        return self.pause_kind != PAUSE_OFF

    def count(self):
        """INFO's blocked_clients: the clients a pause holds and those in WAIT."""
        return len(self.postponed) + len(self.waiting)

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

    # --- WAIT ----------------------------------------------------------------
    def wait(self, c, timeout_ms, reply):
        """Suspend c until timeout_ms (> 0) milliseconds have passed, then reply(c); with 0,
        or a deadline past what 64 bits hold (Redis keeps it unsigned: never), for good."""
        timer = None
        if timeout_ms and now_ms() + timeout_ms <= INT64_MAX:
            timer = asyncio.get_running_loop().call_later(timeout_ms / 1000, self._timed_out, c, reply)
        c.blocked = WAITING
        c.suspended = True
        self.waiting[c] = timer

    def _timed_out(self, c, reply):
        if self.waiting.pop(c, False) is False:
            return
        c.blocked = None
        reply(c)
        c.suspended = False
        c.resume()

    # --- a connection gone ---------------------------------------------------
    def forget(self, c):
        if c.blocked == POSTPONED and c in self.postponed:
            self.postponed.remove(c)
        elif c.blocked == WAITING:
            timer = self.waiting.pop(c, None)
            if timer is not None:
                timer.cancel()
        c.blocked = None
