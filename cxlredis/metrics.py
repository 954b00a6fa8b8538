"""INFO sections, built from the same counters the Prometheus exporter will read.

Field names follow Redis 7.0 where a field means the same thing, so tools
that parse INFO (redis-cli, exporters, valkey-glide, LMCache) keep working;
the `arena` section is ours.
"""
import os
import platform
import resource
import secrets
import struct
import sys
import time

from . import __version__
from ._fastpath import LATENCY_BUCKET_COUNT
from .config import format_double
from .context import Parts
from .files import mount_of
from .pubsub import CHANNELS, PATTERNS, SHARD_CHANNELS

# Redis 7.0's order (INFO lists sections in it whatever order they were asked in), ours last.
ALL_SECTIONS = ("server", "clients", "memory", "persistence", "stats", "replication", "cpu",
                "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace",
                "arena", "disktier", "tenants")
DEFAULT_SECTIONS = tuple(n for n in ALL_SECTIONS
                         if n not in ("commandstats", "latencystats", "tenants"))
# Per-command latency buckets (Stats.commands): bucket i counts calls under 2**i µs; the last
# takes every call of 2**34 µs (4.8 hours) or more. One number with the C fast path's.
LATENCY_BUCKETS = LATENCY_BUCKET_COUNT
# Sections that depend on who asks: a tenant's connection sees only its own tenant.
_PER_CLIENT = ("keyspace", "tenants")


class Process:
    """This process as INFO server and the exporter name it."""

    def __init__(self, version):
        self.version = version
        self.pid = os.getpid()
        self.run_id = secrets.token_hex(20)
        self.start_time = time.time()
        self.memory_peak = 0         # the highest used_memory seen (the cron samples it)

    def note_memory(self, used):
        """used_memory as seen now: the peak follows it (MEMORY STATS's peak.allocated)."""
        if used > self.memory_peak:
            self.memory_peak = used

    def uptime(self):
        return int(time.time() - self.start_time)


class Sources(Parts):
    """What INFO and the Prometheus exporter read, handed over by the composition root:
    process (Process), config, stats (the command counters), clients, arenas
    (arenas.Arenas), leases, tenants, cluster (None outside cluster mode), pubsub,
    tracking, persistence (persistence.Persistence), blocked (blocked.Blocked),
    scripts (scripting.Scripts) and disk_tier (disktier.DiskTier, or None)."""

    __slots__ = ("process", "config", "stats", "clients", "arenas", "leases", "tenants", "cluster",
                 "pubsub", "tracking", "persistence", "blocked", "scripts", "disk_tier")


def info(sources, requested, client=None):
    if not requested or requested == ["default"]:
        names = DEFAULT_SECTIONS
    elif "all" in requested or "everything" in requested:
        names = ALL_SECTIONS
    else:
        wanted = set(requested)
        if "default" in wanted:
            wanted.update(DEFAULT_SECTIONS)
        names = [n for n in ALL_SECTIONS if n in wanted]
    parts = []
    for name in names:
        lines = SECTIONS[name](sources, client) if name in _PER_CLIENT else SECTIONS[name](sources)
        title = "CPU" if name == "cpu" else name.capitalize()
        parts.append(f"# {title}\r\n"
                     + "".join(f"{k}:{v}\r\n" for k, v in lines))
    return "\r\n".join(parts)


def human_bytes(n):
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return f"{n}B"


def _server(s):
    now = time.time()
    uptime = s.process.uptime()
    return [
        ("redis_version", s.process.version),
        ("cxlredis_version", __version__),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0),
        ("redis_build_id", "0"),
        ("redis_mode", "cluster" if s.cluster is not None else "standalone"),
        ("os", f"{platform.system()} {platform.release()} {platform.machine()}"),
        ("arch_bits", 64 if sys.maxsize > 2 ** 32 else 32),
        ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", "epoll"),
        ("python_version", platform.python_version()),
        ("process_id", s.process.pid),
        ("process_supervised", "no"),
        ("run_id", s.process.run_id),
        ("tcp_port", s.config["port"]),
        ("server_time_usec", int(now * 1_000_000)),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("hz", s.config["hz"]),
        ("configured_hz", s.config["hz"]),
        ("executable", os.path.abspath(sys.argv[0])),
        ("config_file", s.config.path or ""),
        ("io_threads_active", 0),
    ]


def _clients(s):
    return [
        ("connected_clients", len(s.clients)),
        ("cluster_connections", 0),
        ("maxclients", s.config["maxclients"]),
        ("client_recent_max_input_buffer",
         max((c.parser.buffered for c in s.clients.connections()), default=0)),
        ("client_recent_max_output_buffer",
         max((c.session.reply.pending for c in s.clients.connections()), default=0)),
        ("blocked_clients", s.blocked.count()),
        ("tracking_clients", len(s.tracking.sessions)),
        ("clients_in_timeout_table", s.blocked.in_timeout_table()),
    ]


def _rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _memory(s):
    st = s.arenas.main.stats()
    used = st["used_memory"]
    rss = _rss_bytes()
    maxmemory = s.config["maxmemory"]  # as configured (0 = none), like Redis; the arena section has the effective limit
    return [
        ("used_memory", used),
        ("used_memory_human", human_bytes(used)),
        ("used_memory_rss", rss),
        ("used_memory_rss_human", human_bytes(rss)),
        ("used_memory_dataset", st["used_memory_dataset"]),
        ("total_system_memory", os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")),
        ("total_system_memory_human", human_bytes(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))),
        ("maxmemory", maxmemory),
        ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", s.config["maxmemory-policy"]),
        ("mem_fragmentation_ratio", f"{st['fragmentation']:.2f}"),
        ("mem_allocator", "cxlredis-arena"),
    ]


def _persistence(s):
    saves = s.persistence
    return [
        ("loading", 0),
        ("async_loading", 0),
        ("arena_recovery", s.arenas.main.recovery),
        ("rdb_changes_since_last_save", saves.changes_since_save()),
        ("rdb_bgsave_in_progress", int(saves.in_progress)),
        ("rdb_last_save_time", saves.lastsave),
        ("rdb_last_bgsave_status", "ok" if saves.last_bgsave_ok else "err"),
        ("rdb_last_bgsave_time_sec", saves.last_bgsave_seconds),
        ("rdb_current_bgsave_time_sec", saves.current_bgsave_seconds()),
        ("rdb_saves", saves.saves),
        ("aof_enabled", 0),
        ("aof_rewrite_in_progress", 0),
        ("aof_rewrite_scheduled", 0),
        ("aof_last_rewrite_time_sec", -1),
        ("aof_current_rewrite_time_sec", -1),
        ("aof_last_bgrewrite_status", "ok"),
    ]


def _stats(s):
    st = s.arenas.main.stats()
    stats = s.stats
    return [
        ("total_connections_received", stats.total_connections_received),
        ("total_commands_processed", stats.total_commands_processed),
        ("total_net_input_bytes", stats.net_input_bytes),
        ("total_net_output_bytes", stats.net_output_bytes),
        ("rejected_connections", stats.rejected_connections),
        ("expired_keys", st["expired_keys"]),
        ("evicted_keys", st["evicted_keys"]),
        ("keyspace_hits", st["keyspace_hits"]),
        ("keyspace_misses", st["keyspace_misses"]),
        ("pubsub_channels", s.pubsub.count(CHANNELS)),
        ("pubsub_patterns", s.pubsub.count(PATTERNS)),
        ("pubsubshard_channels", s.pubsub.count(SHARD_CHANNELS)),
        ("tracking_total_keys", s.tracking.keys),
        ("tracking_total_items", s.tracking.items),
        ("tracking_total_prefixes", s.tracking.prefix_count()),
        ("total_error_replies", stats.total_error_replies),
    ]


def _replication(s):
    return [
        ("role", "master"),
        ("connected_slaves", 0),
        ("master_failover_state", "no-failover"),
        ("master_replid", s.process.run_id),
        ("master_replid2", "0" * 40),
        ("master_repl_offset", 0),
        ("second_repl_offset", -1),
        ("repl_backlog_active", 0),
    ]


def _cpu(s):
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return [
        ("used_cpu_sys", f"{me.ru_stime:.6f}"),
        ("used_cpu_user", f"{me.ru_utime:.6f}"),
        ("used_cpu_sys_children", f"{kids.ru_stime:.6f}"),
        ("used_cpu_user_children", f"{kids.ru_utime:.6f}"),
    ]


def _errorstats(s):
    return [(f"errorstat_{prefix}", f"count={n}") for prefix, n in sorted(s.stats.errors.items())]


def _commandstats(s):
    lines = []
    for name, (calls, usec, rejected, failed, _) in sorted(s.stats.commands.items()):
        per_call = usec / calls if calls else 0.0
        lines.append((f"cmdstat_{name}", f"calls={calls},usec={usec},usec_per_call={per_call:.2f},"
                                         f"rejected_calls={rejected},failed_calls={failed}"))
    return lines


def _latencystats(s):
    """Per-command latency percentiles from the power-of-two buckets: a percentile is reported
    as the upper bound of the bucket it falls in (Redis reads its HdrHistogram likewise)."""
    if not s.config["latency-tracking"]:
        return []
    percentiles = s.config["latency-tracking-info-percentiles"]
    lines = []
    for name, counters in sorted(s.stats.commands.items()):
        buckets = counters[4]
        total = sum(buckets)
        if not total:
            continue
        values = []
        for percentile in percentiles:
            # HdrHistogram's rank: the nearest, and at least the first call
            rank = max(1, int(percentile / 100 * total + 0.5))
            seen = 0
            for index, count in enumerate(buckets):
                seen += count
                if seen >= rank:
                    break
            values.append(f"p{format_double(percentile)}={1 << index:.3f}")
        lines.append((f"latency_percentiles_usec_{name}", ",".join(values)))
    return lines


def _keyspace(s, client):
    store = client.store if client is not None else s.arenas.main
    lines = []
    for db in range(s.config["databases"]):
        keys = store.dbsize(db)
        if keys:
            lines.append((f"db{db}", f"keys={keys},expires={store.db_expires(db)},avg_ttl=0"))
    return lines


def _arena(s):
    st = s.arenas.main.stats()
    lines = [
        ("arena_path", s.arenas.path),
        ("arena_backing", _backing_kind(s.arenas.path)),
        ("arena_size", s.arenas.main.size),
        ("arena_offset", s.arenas.main.offset),
        ("arena_recovery", s.arenas.main.recovery),
        ("arena_dropped_entries", s.arenas.main.dropped_entries),
        ("arena_checksum", "yes" if s.arenas.main.checksums else "no"),
        ("arena_checksum_failures", s.arenas.checksum_failures),       # tenants' own arenas too
    ]
    lines += [(f"arena_{k}", f"{v:.4f}" if isinstance(v, float) else v)
              for k, v in st.items() if k != "policy"]
    return lines + s.leases.info_lines()


def _disktier(s):
    if s.disk_tier is None:
        return [("disk_tier_enabled", 0)]
    s.disk_tier.settle()        # (on the loop: what was written since the last command counts)
    return [("disk_tier_enabled", 1), ("disk_tier_dir", s.disk_tier.directory)] + list(s.disk_tier.stats().items())


def _tenants(s, client):
    return s.tenants.info_lines(client.tenant if client is not None else None)


def _backing_kind(path):
    if path.startswith("/dev/dax"):
        return "devdax"
    if path.startswith("/dev/shm/"):
        return "shm"
    mount = mount_of(path)
    return mount[0] if mount else "file"


SECTIONS = {
    "server": _server, "clients": _clients, "memory": _memory, "persistence": _persistence,
    "stats": _stats, "replication": _replication, "cpu": _cpu, "modules": lambda s: [],
    "errorstats": _errorstats, "cluster": lambda s: [("cluster_enabled", int(s.cluster is not None))],
    "keyspace": _keyspace, "commandstats": _commandstats, "latencystats": _latencystats,
    "arena": _arena, "disktier": _disktier, "tenants": _tenants,
}


# --- MEMORY STATS / DOCTOR / MALLOC-STATS -----------------------------------------
# The arena is the allocator these report on: total.allocated is INFO's used_memory,
# dataset.bytes its used_memory_dataset (the keys' and values' bytes), overhead.total the
# rest of what the arena holds (superblock, index, entry headers, alignment), and
# fragmentation INFO's mem_fragmentation_ratio (how split the free space is). What lives
# outside the arena (client buffers, the Lua runtime) is reported in its own fields.
MEMORY_DOCTOR_EMPTY_BYTES = 5 << 20
_DOCTOR_EMPTY = (
    "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be "
    "used in these conditions. Please, leave for your mission on Earth and fill it with some data. "
    "The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
_DOCTOR_FINE = ("Hi Sam, I can't find any memory issue in your instance. I can only account for "
                "what occurs on this base.\n")
_DOCTOR_ISSUES = "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
_DOCTOR_END = "I'm here to keep you safe, Sam. I want to help you.\n"
_DOCTOR_PEAK = (
    " * Peak memory: In the past this instance used more than 150% the memory that is currently "
    "using. The allocator is normally not able to release memory after a peak, so you can expect to "
    "see a big fragmentation ratio, however this is actually harmless and is only due to the memory "
    "peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the "
    "memory will be used as soon as you fill the Redis instance with more data. If the memory peak "
    "was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, "
    "otherwise the only other option is to shutdown and restart the instance.\n\n")
_DOCTOR_ALLOCATOR_RSS = (
    " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 "
    "(this means that the Resident Set Size of the allocator is much larger than the sum what the "
    "allocator actually holds). This problem is usually due to a large peak memory (check if there "
    "is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim "
    "it.\n\n")
_DOCTOR_CLIENT_BUFFERS = (
    " * Big client buffers: The clients output buffers in this instance are greater than 200K per "
    "client (on average). This may result from different causes, like Pub/Sub clients subscribed to "
    "channels bot not receiving data fast enough, so that data piles on the Redis instance output "
    "buffer, or clients sending commands with large replies or very large sequences of commands in "
    "the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it "
    "causes problems in your instance, or to understand better why certain clients are using a big "
    "amount of memory.\n\n")
_DOCTOR_SCRIPTS = (
    " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This "
    "may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS "
    "and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the "
    "scripts' caches may end up consuming most of your memory.\n\n")


def _float32(x):
    """x as Redis's struct redisMemOverhead keeps its ratios: a C float."""
    return struct.unpack("f", struct.pack("f", x))[0]


class MemoryReport:
    """MEMORY STATS's fields (`fields`: (name, value) pairs in Redis 7.0's order, a db's
    entry a list of pairs; ratios and percentages floats), MEMORY DOCTOR's text
    (`doctor`) and MEMORY MALLOC-STATS's (`allocator`)."""

    def __init__(self, fields, doctor, allocator):
        self.fields = fields
        self.doctor = doctor
        self.allocator = allocator


def memory_report(s, client=None):
    """The report for a connection: the arena's totals, the keys of the keyspace it sees
    (a tenant's own, as INFO keyspace)."""
    arena = s.arenas.main
    st = arena.stats()
    total = st["used_memory"]
    s.process.note_memory(total)
    peak = s.process.memory_peak
    startup = total - st["heap_used"]           # the superblock and the index, fixed at format
    connections = s.clients.connections()
    clients_normal = sum(c.parser.buffered + c.session.reply.pending
                         + (c.transport.get_write_buffer_size() if c.transport is not None else 0)
                         for c in connections)
    lua, functions, scripts = s.scripts.memory()
    store = client.store if client is not None else arena
    header = arena.layout()["header_bytes"]
    dbs, keys = [], 0
    for db in range(s.config["databases"]):
        count = store.dbsize(db)
        if count:
            keys += count
            # each key's entry header is its index entry and its object (the TTL lives in it)
            dbs.append((f"db.{db}", [("overhead.hashtable.main", count * header),
                                     ("overhead.hashtable.expires", 0),
                                     ("overhead.hashtable.slot-to-keys", 0)]))
    dataset = st["used_memory_dataset"]
    net = total - startup if total > startup else 1
    resident = st["backing_bytes"]
    rss = _rss_bytes()
    fields = [
        ("peak.allocated", peak),
        ("total.allocated", total),
        ("startup.allocated", startup),
        ("replication.backlog", 0),
        ("clients.slaves", 0),
        ("clients.normal", clients_normal),
        ("cluster.links", 0),
        ("aof.buffer", 0),
        ("lua.caches", lua),
        ("functions.caches", functions),
        *dbs,
        ("overhead.total", total - dataset),
        ("keys.count", keys),
        ("keys.bytes-per-key", net // keys if keys else 0),
        ("dataset.bytes", dataset),
        ("dataset.percentage", _float32(dataset * 100 / net)),
        ("peak.percentage", _float32(total * 100 / peak) if peak else 0.0),
        ("allocator.allocated", total),
        ("allocator.active", total),
        ("allocator.resident", resident),
        ("allocator-fragmentation.ratio", _float32(1.0)),
        ("allocator-fragmentation.bytes", 0),
        ("allocator-rss.ratio", _float32(resident / total) if total else 0.0),
        ("allocator-rss.bytes", resident - total),
        ("rss-overhead.ratio", _float32(rss / resident) if resident else 0.0),
        ("rss-overhead.bytes", rss - resident),
        ("fragmentation", _float32(st["fragmentation"])),
        ("fragmentation.bytes", st["free_bytes"] - st["largest_free"]),
    ]
    return MemoryReport(fields, _doctor(total, peak, resident, clients_normal, len(connections), scripts),
                        _allocator_text(s, st))


def _doctor(total, peak, resident, clients_normal, clients, scripts):
    """MEMORY DOCTOR as Redis words it. Of its checks, those that can fire on an arena:
    the peak, backed pages the arena no longer uses (MEMORY PURGE gives them back), client
    buffers, the script cache. (Its allocator fragmentation checks cannot: blocks are what
    they hold; nor does it count the interpreter's own memory as the process's overhead.)"""
    if total < MEMORY_DOCTOR_EMPTY_BYTES:
        return _DOCTOR_EMPTY
    issues = []
    if _float32(peak / total) > 1.5:
        issues.append(_DOCTOR_PEAK)
    if resident / total > 1.1 and resident - total > 10 << 20:
        issues.append(_DOCTOR_ALLOCATOR_RSS)
    if clients and clients_normal // clients > 200 << 10:
        issues.append(_DOCTOR_CLIENT_BUFFERS)
    if scripts > 1000:
        issues.append(_DOCTOR_SCRIPTS)
    if not issues:
        return _DOCTOR_FINE
    return _DOCTOR_ISSUES + "".join(issues) + _DOCTOR_END


def _allocator_text(s, st):
    """MEMORY MALLOC-STATS: the arena allocator's own numbers, one "name: value" a line."""
    lines = ["___ Begin cxlredis arena statistics ___", f"arena: {s.arenas.path}"]
    lines += [f"{name}: {value:.4f}" if isinstance(value, float) else f"{name}: {value}"
              for name, value in st.items()]
    for name, arena in s.arenas.tenants.by_name.items():
        tenant = arena.stats()
        lines.append(f"tenant {name}'s arena: used_memory {tenant['used_memory']}, heap_size "
                     f"{tenant['heap_size']}, free_bytes {tenant['free_bytes']}, largest_free "
                     f"{tenant['largest_free']}")
    lines.append("___ End cxlredis arena statistics ___")
    return "\n".join(lines) + "\n"
