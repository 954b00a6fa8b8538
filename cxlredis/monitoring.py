"""What the server observes about the commands it runs: the slow log (SLOWLOG),
the latency monitor (LATENCY) and the clients in MONITOR mode.

dispatch.call() times every command and hands it to `Monitoring.after_call` only
when its time reaches `watch_from_us`: the lowest threshold anything is
interested in — 0 while a MONITOR client is attached, else the slow log's or
the latency monitor's, out of reach when all are off — so an unobserved command
costs one comparison.

As in Redis 7.0, commands are observed after they ran (a transaction shows as
MULTI, its commands, then EXEC), secrets are redacted from what is kept or shown,
admin commands never reach monitors and EXEC never reaches the slow log.

Tenants (invariant 3): the arguments of a command are its tenant's keys and
values, so slow log entries and monitor lines carry the tenant of the
connection that ran the command, and a connection bound to a tenant sees only
its own tenant's; administrators see everything.
"""
import time
from collections import deque

from ._resp import monitor_line
from .slots import SlotArg

NEVER = 1 << 62                 # µs: a threshold no command reaches
SLOWLOG_MAX_ARGC = 32           # Redis keeps at most 32 arguments of an entry...
SLOWLOG_MAX_ARG_BYTES = 128     # ...and at most 128 bytes of each
LATENCY_HISTORY = 160           # samples kept per latency event (one per second at most)
REDACTED = b"(redacted)"
# Options whose CONFIG SET value Redis 7.0 redacts (it has masterauth too; cxlredis has none).
SENSITIVE_OPTIONS = frozenset((b"requirepass",))


# ---------------------------------------------------------------- arguments as shown

def _redact_hello(argv):
    shown, i = list(argv), 2
    while i < len(argv):            # HELLO's own option parsing: AUTH <user> <pass>, SETNAME <name>
        option = bytes(argv[i]).upper()
        if option == b"AUTH" and len(argv) - i > 2:
            shown[i + 1] = shown[i + 2] = REDACTED
            i += 3
        elif option == b"SETNAME" and len(argv) - i > 1:
            i += 2
        else:
            break
    return shown


def _redact_config_set(argv):
    shown = list(argv)
    for i in range(2, len(argv) - 1, 2):
        if bytes(argv[i]).lower() in SENSITIVE_OPTIONS:
            shown[i + 1] = REDACTED
    return shown


def _redact_migrate(argv):
    shown, i = list(argv), 6
    while i < len(argv):            # MIGRATE's option parsing, up to KEYS or a bad option
        option = bytes(argv[i]).upper()
        if option in (b"COPY", b"REPLACE"):
            i += 1
        elif option == b"AUTH" and len(argv) - i > 1:
            shown[i + 1] = REDACTED
            i += 2
        elif option == b"AUTH2" and len(argv) - i > 2:
            shown[i + 1] = shown[i + 2] = REDACTED
            i += 3
        else:
            break
    return shown


_REDACTORS = {
    "auth": lambda argv: [argv[0]] + [REDACTED] * (len(argv) - 1),
    "hello": _redact_hello,
    "acl|setuser": lambda argv: list(argv[:2]) + [REDACTED] * (len(argv) - 2),
    "config|set": _redact_config_set,
    "migrate": _redact_migrate,
}


def shown_argv(spec, argv):
    """argv as the slow log and monitors show it: with the secrets Redis 7.0 redacts
    (AUTH's arguments, HELLO's AUTH pair, ACL SETUSER's rules, CONFIG SET requirepass,
    MIGRATE's AUTH and AUTH2)."""
    redact = _REDACTORS.get(spec.name)
    return redact(argv) if redact is not None else argv


def arg_view(arg):
    """A readable view of one argument. A large value argument was received into an arena
    slot: readable there until the command committed it, then as the entry it became —
    unless the same command replaced that entry already (MSET k <big> k <big>): its bytes
    are gone then, and an empty view stands for them."""
    if type(arg) is not SlotArg:
        return arg
    try:
        view = arg.store.view(arg.off) if arg.consumed else arg.view()
    except ValueError:
        return b""
    return view if len(view) == arg.length else b""


def slowlog_args(argv):
    """Redis's slow log form: at most 32 arguments, the last one standing for the rest
    ("... (N more arguments)"), each cut at 128 bytes ("... (N more bytes)")."""
    argc = len(argv)
    kept = min(argc, SLOWLOG_MAX_ARGC)
    args = []
    for index in range(kept):
        if index == kept - 1 and kept != argc:
            args.append(b"... (%d more arguments)" % (argc - kept + 1))
            break
        arg = argv[index]
        size = len(arg)
        if size > SLOWLOG_MAX_ARG_BYTES:
            args.append(bytes(arg_view(arg)[:SLOWLOG_MAX_ARG_BYTES])
                        + b"... (%d more bytes)" % (size - SLOWLOG_MAX_ARG_BYTES))
        else:
            args.append(bytes(arg_view(arg)))
    return args


# ---------------------------------------------------------------- the slow log

class SlowLogEntry:
    __slots__ = ("id", "time", "duration_us", "args", "addr", "name", "tenant")

    def __init__(self, ident, duration_us, args, c):
        self.id = ident
        self.time = int(time.time())
        self.duration_us = duration_us
        self.args = args
        self.addr = c.addr
        self.name = c.name          # the name at the time the command ran, as Redis keeps it
        self.tenant = c.tenant


class SlowLog:
    """Commands slower than slowlog-log-slower-than, newest first. Ids keep counting
    across SLOWLOG RESET; slowlog-max-len applies when the next entry arrives."""

    def __init__(self, max_len):
        self.max_len = max_len
        self.entries = deque()
        self.next_id = 0

    def push(self, c, argv, duration_us):
        self.entries.appendleft(SlowLogEntry(self.next_id, duration_us, slowlog_args(argv), c))
        self.next_id += 1
        while len(self.entries) > self.max_len:
            self.entries.pop()

    def visible(self, tenant):
        """The entries a connection bound to `tenant` may see (None: an administrator, all)."""
        if tenant is None:
            return list(self.entries)
        return [entry for entry in self.entries if entry.tenant == tenant]

    def reset(self, tenant):
        if tenant is None:
            self.entries.clear()
        else:
            self.entries = deque(entry for entry in self.entries if entry.tenant != tenant)


# ---------------------------------------------------------------- the latency monitor

class LatencyEvent:
    __slots__ = ("samples", "max")

    def __init__(self):
        self.samples = deque(maxlen=LATENCY_HISTORY)   # [unix time, ms], oldest first
        self.max = 0                                   # all-time worst, in ms


class LatencyMonitor:
    """Events (command, fast-command, expire-cycle, eviction-cycle) that took at least
    latency-monitor-threshold milliseconds: per event, one sample a second (the worst of
    that second), the latest 160, and the all-time worst."""

    def __init__(self, threshold_ms):
        self.threshold_ms = threshold_ms
        self.events = {}

    def add(self, event, ms):
        if self.threshold_ms and ms >= self.threshold_ms:
            self.record(event, ms)

    def record(self, event, ms):
        series = self.events.get(event)
        if series is None:
            series = self.events[event] = LatencyEvent()
        series.max = max(series.max, ms)
        now = int(time.time())
        if series.samples and series.samples[-1][0] == now:
            series.samples[-1][1] = max(series.samples[-1][1], ms)
        else:
            series.samples.append([now, ms])

    def timed(self, event, function, *args):
        """function(*args), its time recorded as `event`."""
        start = time.perf_counter_ns()
        try:
            return function(*args)
        finally:
            self.add(event, (time.perf_counter_ns() - start) // 1_000_000)

    def reset(self, events=None):
        """Forget the given events (all when None); returns how many there were."""
        if events is None:
            count = len(self.events)
            self.events.clear()
            return count
        return sum(self.events.pop(name, None) is not None for name in events)


# ---------------------------------------------------------------- MONITOR

class Monitors:
    """Connections in MONITOR mode. Each command becomes one line, written into every
    monitor's reply buffer and flushed once per event-loop turn, so a monitor is an
    ordinary output stream: its transport buffers what it has not read yet, and
    client-output-buffer-limit closes it like any client."""

    def __init__(self, config, changed, flushes):
        self.config = config
        self.connections = {}       # id → connection.Client
        self._changed = changed     # called when the first monitor comes or the last goes
        self._flushes = flushes     # clients.Flushes

    def __len__(self):
        return len(self.connections)

    def add(self, connection):
        self.connections[connection.session.id] = connection
        self._changed()

    def discard(self, connection):
        if self.connections.get(connection.session.id) is connection:
            del self.connections[connection.session.id]
            self._changed()

    def feed(self, c, argv):
        """c: the session that ran the command."""
        line = None
        for monitor in list(self.connections.values()):
            if monitor.closing:     # disconnected or killed: a monitor leaves when it is gone
                self.discard(monitor)
                continue
            session = monitor.session
            # a monitor closing after this command's reply (its QUIT) takes no more output
            if session.close_after_command or (session.tenant is not None and session.tenant != c.tenant):
                continue
            if line is None:
                line = self.line(c, argv)
            session.reply.raw(line)
            self._flushes.add(monitor)

    def line(self, c, argv):
        """+<seconds>.<microseconds> [<db> <client address>] "arg" ... as Redis writes it."""
        seconds, rest = divmod(time.time_ns(), 1_000_000_000)
        origin = f"unix:{self.config['unixsocket']}" if c.unix else c.addr
        head = b"+%d.%06d [%d %s]" % (seconds, rest // 1000, c.db,
                                      origin.encode("utf-8", "replace"))
        return monitor_line(head, [arg_view(arg) for arg in argv])

# ---------------------------------------------------------------- the server's part

class Monitoring:
    """The slow log, the latency monitor and the monitors of one server, kept in step
    with the config (slowlog-log-slower-than, slowlog-max-len, latency-monitor-threshold)."""

    def __init__(self, config, flushes):
        self.config = config
        self.slowlog = SlowLog(config["slowlog-max-len"])
        self.latency = LatencyMonitor(config["latency-monitor-threshold"])
        self.monitors = Monitors(config, self._retune, flushes)
        self._retune()
        config.on_change("slowlog-log-slower-than", lambda _: self._retune())
        config.on_change("latency-monitor-threshold", lambda _: self._retune())
        config.on_change("slowlog-max-len", lambda value: setattr(self.slowlog, "max_len", value))

    def _retune(self):
        slowest = self.config["slowlog-log-slower-than"]
        self.slowlog_from_us = slowest if slowest >= 0 else NEVER
        threshold_ms = self.latency.threshold_ms = self.config["latency-monitor-threshold"]
        latency_from_us = threshold_ms * 1000 if threshold_ms else NEVER
        self.watch_from_us = 0 if self.monitors else min(self.slowlog_from_us, latency_from_us)

    def evict_to_maxmemory(self, arena):
        """What dispatch calls before every command (Redis's performEvictions), on the arena
        of the connection's keyspace: timed as the eviction-cycle event only while the
        latency monitor is on."""
        if self.latency.threshold_ms:
            return self.latency.timed("eviction-cycle", arena.evict_to_maxmemory)
        return arena.evict_to_maxmemory()

    def feed_now(self, c, argv):
        """Show a call to the monitors before it runs (EVAL, ahead of its script's commands)."""
        if self.monitors:
            self.monitors.feed(c, argv)

    def after_call(self, c, spec, argv, elapsed_us):
        """A command ran for elapsed_us and reached watch_from_us: feed the monitors, the
        slow log and the latency monitor what each of them wants of it."""
        flags = spec.flags
        shown = None
        if self.monitors and "admin" not in flags and "skip_monitor" not in flags:
            shown = shown_argv(spec, argv)
            self.monitors.feed(c, shown)
        if elapsed_us >= self.slowlog_from_us and "skip_slowlog" not in flags:
            self.slowlog.push(c, shown if shown is not None else shown_argv(spec, argv), elapsed_us)
        self.latency.add("fast-command" if "fast" in flags else "command", elapsed_us // 1000)
