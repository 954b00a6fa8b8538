"""Introspection commands: SLOWLOG, LATENCY and MONITOR (state in cxlredis/monitoring.py).

A connection bound to a tenant sees and resets only its own tenant's slow log
entries and monitors only its own tenant's commands; latency events are about
the server, not about anyone's data, and are the same for everyone.
"""
import time

from . import registry
from .. import errors
from ..errors import CommandError
from .args import is_int64
from .connection import reply_help

SLOWLOG_HELP = (
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
)
LATENCY_HELP = (
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the "
    "specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
)
SLOWLOG_DEFAULT_COUNT = 10
BAD_COUNT = "ERR count should be greater than or equal to -1"
MONITOR_IN_EXEC = "ERR MONITOR isn't allowed for DENY BLOCKING client"
GRAPH_COLUMNS = 80
GRAPH_ROWS = 4


# --- SLOWLOG ---------------------------------------------------------------
def cmd_slowlog_get(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    count = SLOWLOG_DEFAULT_COUNT
    if len(argv) == 3:
        raw = bytes(argv[2])
        if not is_int64(raw) or int(raw) < -1:
            raise CommandError(BAD_COUNT)
        count = int(raw)
    entries = c.services.monitoring.slowlog.visible(c.tenant)
    if count != -1:
        entries = entries[:count]
    r = c.reply
    r.array(len(entries))
    for entry in entries:
        r.array(6)
        r.integer(entry.id)
        r.integer(entry.time)
        r.integer(entry.duration_us)
        r.bulk_array(entry.args)
        r.bulk(entry.addr)
        r.bulk(entry.name)


def cmd_slowlog_len(c, argv):
    c.reply.integer(len(c.services.monitoring.slowlog.visible(c.tenant)))


def cmd_slowlog_reset(c, argv):
    c.services.monitoring.slowlog.reset(c.tenant)
    c.reply.ok()


def cmd_slowlog_help(c, argv):
    reply_help(c, SLOWLOG_HELP)


# --- LATENCY ---------------------------------------------------------------
def cmd_latency_latest(c, argv):
    events = c.services.monitoring.latency.events
    c.reply.array(len(events))
    for name, series in events.items():
        when, latest = series.samples[-1]
        c.reply.array(4)
        c.reply.bulk(name)
        c.reply.integer(when)
        c.reply.integer(latest)
        c.reply.integer(series.max)


def cmd_latency_history(c, argv):
    series = c.services.monitoring.latency.events.get(_text(argv[2]))
    samples = series.samples if series is not None else ()
    c.reply.array(len(samples))
    for when, ms in samples:
        c.reply.array(2)
        c.reply.integer(when)
        c.reply.integer(ms)


def cmd_latency_reset(c, argv):
    latency = c.services.monitoring.latency
    c.reply.integer(latency.reset([_text(a) for a in argv[2:]] if len(argv) > 2 else None))


def cmd_latency_doctor(c, argv):
    c.reply.verbatim(doctor_report(c.services.config, c.services.monitoring.latency))


def cmd_latency_graph(c, argv):
    event = _text(argv[2])
    series = c.services.monitoring.latency.events.get(event)
    if series is None:
        raise CommandError(f"ERR No samples available for event '{event}'")
    c.reply.verbatim(latency_graph(event, series, int(time.time())))


def cmd_latency_histogram(c, argv):
    """Per command, its calls and the cumulative count at each power-of-two bucket
    (upper bound in µs) that has calls: Redis's log-2 iteration of its histogram. A
    container name stands for its subcommands; unknown names and unused commands are
    left out."""
    stats = c.services.stats.commands
    if len(argv) == 2:
        names = sorted(stats)
    else:
        names = []
        for arg in argv[2:]:
            spec = registry.find_by_full_name(arg)
            if spec is not None:
                names += [spec.name] + [sub.name for sub in spec.subcommands.values()]
    histograms = [(name, stats[name][4]) for name in names
                  if name in stats and any(stats[name][4])]
    r = c.reply
    r.map(len(histograms))
    for name, buckets in histograms:
        r.bulk(name)
        r.map(2)
        r.bulk("calls")
        r.integer(sum(buckets))
        r.bulk("histogram_usec")
        r.map(sum(1 for count in buckets if count))
        cumulative = 0
        for index, count in enumerate(buckets):
            if count:
                cumulative += count
                r.integer(1 << index)
                r.integer(cumulative)


def cmd_latency_help(c, argv):
    reply_help(c, LATENCY_HELP)


def doctor_report(config, latency):
    """LATENCY DOCTOR: each event's spikes, then what usually causes them here."""
    threshold_ms = config["latency-monitor-threshold"]
    if not threshold_ms:
        return ("Latency monitoring is disabled in this instance. Use \"CONFIG SET "
                "latency-monitor-threshold <milliseconds>\" to enable it.\n")
    events = latency.events
    if not events:
        return ("No latency spike was observed since the latency monitor was enabled or last "
                f"reset (threshold: {threshold_ms} ms).\n")
    lines = [f"Latency spikes of {threshold_ms} ms or more were observed:", ""]
    for number, (name, series) in enumerate(events.items(), 1):
        values = [ms for _, ms in series.samples]
        average = sum(values) / len(values)
        deviation = sum(abs(v - average) for v in values) / len(values)
        spread = ""
        if len(values) > 1:
            period = (series.samples[-1][0] - series.samples[0][0]) / (len(values) - 1)
            spread = f", one every {period:.2f} sec on average"
        lines.append(f"{number}. {name}: {len(values)} latency spikes (average {average:.0f}ms, "
                     f"mean deviation {deviation:.0f}ms{spread}). Worst all time event "
                     f"{series.max}ms.")
    lines += ["", "Suggestions:", ""]
    slowest_us = config["slowlog-log-slower-than"]
    if {"command", "fast-command"} & set(events):
        lines.append("- SLOWLOG GET shows the commands that were slow. Large values stored or read "
                     "in one command, and O(N) commands such as KEYS or FLUSHALL on big "
                     "databases, are the usual causes.")
        if slowest_us < 0 or slowest_us > threshold_ms * 1000:
            logged = ("is disabled" if slowest_us < 0
                      else f"only logs commands slower than {slowest_us} µs")
            lines.append(f"- The slow log {logged}: 'CONFIG SET slowlog-log-slower-than "
                         f"{threshold_ms * 1000}' makes it log the commands this report counts.")
    if "fast-command" in events:
        lines.append("- O(1) commands were slow: the server process was probably not running "
                     "(CPU contention, swapping, a paused VM or a throttled container).")
    if "expire-cycle" in events:
        lines.append("- Active expiry was slow: many keys expiring at the same time, or large "
                     "values being freed. Spreading the TTLs out helps.")
    if "eviction-cycle" in events:
        lines.append("- Eviction was slow: writes had to make room under maxmemory first. A larger "
                     "maxmemory (or arena) or fewer large writes at once helps.")
    return "\n".join(lines) + "\n"


def latency_graph(event, series, now):
    """LATENCY GRAPH: the latest samples (one column each, oldest on the left) as bars
    between the lowest and the highest, with each sample's age written under its bar."""
    samples = list(series.samples)[-GRAPH_COLUMNS:]
    values = [ms for _, ms in samples]
    high, low = max(values), min(values)
    heights = [GRAPH_ROWS if high == low else 1 + round((v - low) * (GRAPH_ROWS - 1) / (high - low))
               for v in values]
    lines = [f"{event} - high {high} ms, low {low} ms (all time high {series.max} ms)",
             "-" * GRAPH_COLUMNS]
    for row in range(GRAPH_ROWS, 0, -1):
        lines.append("".join("#" if height >= row else " " for height in heights).rstrip())
    ages = [_age(now - when) for when, _ in samples]
    for row in range(max(map(len, ages))):
        lines.append("".join(age[row] if row < len(age) else " " for age in ages).rstrip())
    return "\n".join(lines) + "\n"


def _age(seconds):
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _text(arg):
    return bytes(arg).decode("utf-8", "replace")


# --- MONITOR ---------------------------------------------------------------
def cmd_monitor(c, argv):
    # Inside EXEC a client must get one reply per command: Redis refuses (DENY BLOCKING).
    if c.multi is not None:
        raise CommandError(MONITOR_IN_EXEC)
    if c.monitoring:
        return      # already monitoring: Redis ignores it, without a reply
    c.services.clients.start_monitor(c)
    c.reply.ok()
