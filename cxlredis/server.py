"""The server process: `serve(config, listeners, store, shutdown)` builds every part
around bound listeners (listeners.py) and attached arenas (arenas.py) and runs them on
the current event loop until SHUTDOWN or a signal.
"""
import asyncio
import fcntl
import logging
import os
import signal
import time

from . import REDIS_COMPAT_VERSION, dispatch, metrics
from ._fastpath import Counters as FastCounters
from ._resp import LargeValueThreshold
from ._store import DEFAULT_TENANT, region_locked
from .acl import Acl
from .audit import AuditLog
from .blocked import Blocked
from .clients import Clients, Flushes
from .commands import all_specs
from .cluster.links import Bus
from .cluster.migrate import MigrateLinks
from .cluster.nodes_conf import NodesConfError
from .cluster.state import ClusterState
from .disktier import DiskTier
from .connection import Client
from .context import Services
from .errors import CommandError
from .files import CreatedFiles
from .leases import Leases
from .metrics import LATENCY_BUCKETS, Process, Sources, human_bytes
from .monitoring import Monitoring
from .mrc import MissRatioCurves
from .notifications import Notifications
from .persistence import Persistence
from .prometheus import Exporter
from .pubsub import PubSub
from .redirects import blocked_redirect
from .scripting import Scripts
from .slot_keys import SlotKeys
from .tenants import Tenants
from .tracking import Tracking

log = logging.getLogger("cxlredis")


class Stats:
    """Counters for INFO stats / commandstats / errorstats (reset by CONFIG RESETSTAT)."""

    def __init__(self):
        # the write commands, whose successful calls are the dataset's changes (persistence.py)
        self.write_commands = frozenset(spec.name for spec in all_specs() if "write" in spec.flags)
        self.changes_before_reset = 0
        self.commands = {}
        self.reset()

    def changes(self):
        """Write commands that succeeded since start, CONFIG RESETSTAT or not (what INFO's
        rdb_changes_since_last_save counts from), from the per-command counters."""
        return self.changes_before_reset + sum(
            counters[0] - counters[3] for name, counters in self.commands.items() if name in self.write_commands)

    def reset(self):
        self.changes_before_reset = self.changes()
        self.total_connections_received = 0
        self.total_commands_processed = 0
        self.net_input_bytes = 0
        self.net_output_bytes = 0
        self.rejected_connections = 0
        self.total_error_replies = 0
        # name → [calls, usec, rejected_calls, failed_calls, latency buckets]: bucket i counts
        # calls that took under 2**i microseconds and at least 2**(i-1) (INFO latencystats,
        # the Prometheus histogram).
        self.commands = {}
        self.errors = {}     # error prefix → count

    def command(self, name):
        counters = self.commands.get(name)
        if counters is None:
            counters = self.commands[name] = [0, 0, 0, 0, [0] * LATENCY_BUCKETS]
        return counters

    def error(self, text):
        prefix = text.split(" ", 1)[0]
        self.errors[prefix] = self.errors.get(prefix, 0) + 1
        self.total_error_replies += 1


class Shutdown:
    """How a server is asked to stop (SHUTDOWN, SIGTERM, SIGINT): the first request's
    reason wins, a later SHUTDOWN is refused as Redis refuses it."""

    def __init__(self):
        self.reason = None
        self._requested = asyncio.Event()

    def request(self, reason):
        if self.reason is None:
            self.reason = reason
            self._requested.set()

    def check_allowed(self):
        if self.reason is not None:
            raise CommandError("ERR shutdown already in progress")

    async def wait(self):
        await self._requested.wait()


async def serve(config, listeners, store, shutdown, ready=None):
    """Run a server on bound `listeners` (listeners.Listeners) over attached arenas (`store`,
    arenas.Arenas) until `shutdown` (Shutdown) is requested, calling `ready()` once it
    accepts connections (the supervisor's signal), then drain its clients and
    detach the arenas clean. A start that fails undoes itself: the arenas are detached
    clean (nothing was served, so the next start trusts them) and the files it created are
    removed, while a file that was there before, such as someone's warm arena, is left."""
    created = CreatedFiles()
    server = None
    try:
        server = Server(config, listeners, store, shutdown, created)
        await server.start()
    except BaseException:
        if server is not None:
            server.exporter.stop()
            if server.disk_tier is not None:
                server.disk_tier.close()    # its reads and writes use the arena
        listeners.close()
        store.abandon()
        created.remove(region_locked)
        raise
    server.log_ready()
    if ready is not None:
        ready()
    await shutdown.wait()
    await server.stop()


class Server:
    """The composition root: every part of a running server, each built with the
    collaborators it names, and the cron and the drain that run them. Commands see none
    of it: each connection's session carries `services` (context.Services), the part of
    it a command may use."""

    def __init__(self, config, listeners, store, shutdown, created):
        """created: files.CreatedFiles, told of every file this start makes (the tenants
        file, nodes.conf and its lock, the pid file)."""
        self.config = config
        self.listeners = listeners
        self.store = store
        self.shutdown = shutdown
        self.created = created
        self.process = Process(REDIS_COMPAT_VERSION)
        self.stats = Stats()
        self.fast_counters = FastCounters()     # the C fast path's, folded into stats per batch
        self.flushes = Flushes()                # connections whose replies go out after the loop's callbacks
        self.watchers = set()                   # sessions WATCHing a key that did not exist
        self.migrate_links = MigrateLinks()     # MIGRATE's cached connections to its targets
        self.persistence = Persistence(store, self.stats.changes)   # SAVE, BGSAVE, LASTSAVE
        self.blocked = Blocked()                # CLIENT PAUSE and WAIT
        # every connection's parser and reply writer, and the fast path, read this one
        self.large_threshold = LargeValueThreshold(config["large-value-threshold"])
        self.monitoring = Monitoring(config, self.flushes)     # SLOWLOG, LATENCY and MONITOR clients
        self.clients = Clients(config, self.stats, self.monitoring.monitors, self.flushes)
        self.pubsub = PubSub(self.clients)
        self.audit = AuditLog(config)
        self.acl = Acl(config, self.audit, self.clients)
        self._watch_config()
        # Users → tenants, and the keyspace each connection is bound to (the server's arena
        # keeps the tenants themselves).
        created.note(Tenants.file_path(config))
        self.curves = MissRatioCurves(config)     # each tenant's, from the arena's samples
        self.tenants = Tenants(config, store.main, store.tenants, self.acl, self.clients,
                               store.memory_limit, self.curves)
        self.acl.tenants = self.tenants
        self.notifications = Notifications(self.pubsub, self.tenants.own_keyspaces)
        self.notifications.configure(config["notify-keyspace-events"])
        config.on_change("notify-keyspace-events", self.notifications.configure)
        self.tracking = Tracking(self.clients, self.notifications, config)
        self.leases = Leases(config)            # co-located clients' leases (CXL commands)
        self.scripts = Scripts(config, dispatch.script_call, self.monitoring, REDIS_COMPAT_VERSION)
        self.scripts.load_saved_libraries()
        self.cluster = self._load_cluster() if config["cluster-enabled"] else None
        self.disk_tier = self._disk_tier()
        sources = Sources(process=self.process, config=config, stats=self.stats,
                          clients=self.clients, arenas=store, leases=self.leases,
                          tenants=self.tenants, cluster=self.cluster, pubsub=self.pubsub,
                          tracking=self.tracking, persistence=self.persistence, blocked=self.blocked,
                          scripts=self.scripts, disk_tier=self.disk_tier)
        self.exporter = Exporter(sources)          # Prometheus (metrics-port)
        self.services = Services(
            config=config, acl=self.acl, tenants=self.tenants, audit=self.audit, stats=self.stats,
            leases=self.leases, monitoring=self.monitoring, pubsub=self.pubsub,
            notifications=self.notifications, tracking=self.tracking, scripts=self.scripts,
            clients=self.clients, watchers=self.watchers, cluster=self.cluster, migrate_links=self.migrate_links,
            version=REDIS_COMPAT_VERSION, persistence=self.persistence, blocked=self.blocked,
            info=lambda sections, session: metrics.info(sources, sections, session),
            memory_report=lambda session: metrics.memory_report(sources, session),
            check_arenas=store.check, release_memory=store.release_free_pages, reset_stats=self.reset_stats,
            request_shutdown=shutdown.request, check_shutdown_allowed=shutdown.check_allowed,
            privatize_arenas=store.privatize, disk_tier=self.disk_tier)

    def new_connection(self):
        """The protocol object of one accepted connection (every listener's factory)."""
        return Client(self.services, self.large_threshold, self.fast_counters, self.flushes)

    def _load_cluster(self):
        """This node's cluster view from nodes.conf (a new node writes one), which no other
        running node may share."""
        cfg = self.config
        path = os.path.join(cfg["dir"], cfg["cluster-config-file"])
        self.created.note(path + ".lock")
        self.cluster_lock = open(path + ".lock", "a")
        try:
            fcntl.flock(self.cluster_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SystemExit(f"Sorry, the cluster configuration file {cfg['cluster-config-file']} is "
                             "already used by a different Redis Cluster node. Please make sure that "
                             "different nodes use different cluster configuration files.") from None
        self.created.note(path)
        # every key by slot from now on, not from the first slot command (a walk of the index)
        for arena in self.store.every():
            arena.index_slots()
        self.bus = Bus(self.listeners.bus_sockets)
        state = ClusterState(cfg, SlotKeys(self.tenants), self.pubsub, self.bus.connect, path)
        try:
            state.load()
        except (NodesConfError, OSError) as e:
            raise SystemExit(f"Unrecoverable error: corrupted cluster config file {path}: {e}") from None
        return state

    def _disk_tier(self):
        """The disk tier under the server's arena (disk-tier-dir), or None; opened by start()."""
        cfg = self.config
        if not cfg["disk-tier-dir"]:
            return None
        tier = DiskTier(self.store.main, os.path.join(cfg["dir"], cfg["disk-tier-dir"]), cfg["disk-tier-size"],
                        cfg["disk-tier-promote"], cfg["disk-tier-write-buffer"])
        cfg.on_change("disk-tier-promote", lambda on: setattr(tier, "promote", on))
        return tier

    def _watch_config(self):
        cfg = self.config
        cfg.on_change("loglevel", set_log_level)
        cfg.on_change("large-value-threshold", lambda v: setattr(self.large_threshold, "value", v))
        for name, attr in (("proto-max-bulk-len", "proto_max_bulk_len"),
                           ("client-query-buffer-limit", "query_buffer_limit")):
            cfg.on_change(name, lambda v, attr=attr: [setattr(c.parser, attr, v)
                                                      for c in self.clients.connections()])

    def reset_stats(self):
        """CONFIG RESETSTAT."""
        self.stats.reset()
        self.store.main.reset_stats()
        self.tenants.reset_curve(DEFAULT_TENANT)     # its read count began anew

    # --- lifecycle ----------------------------------------------------
    async def start(self):
        loop = asyncio.get_running_loop()
        cfg = self.config
        if self.disk_tier is not None:
            # its records are indexed again over an arena attached as it was; a new arena
            # starts it empty (what dropped its copies may have been lost with the old one)
            try:
                self.disk_tier.open(warm=self.store.main.recovery != "new")
            except OSError as e:
                raise SystemExit(f"Cannot open the disk tier {self.disk_tier.directory}: {e.strerror}") from None
        await self.listeners.start(self.new_connection)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.shutdown.request, signal.Signals(sig).name)
        self._cron_task = asyncio.create_task(self._cron())
        if self.cluster is not None:
            await self.bus.start(self.cluster)
            self._cluster_cron_task = asyncio.create_task(self._cluster_cron())
        self.exporter.start()
        if cfg["pidfile"]:
            self.created.note(cfg["pidfile"])
            with open(cfg["pidfile"], "w") as f:
                f.write(f"{self.process.pid}\n")

    def log_ready(self):
        cfg = self.config
        log.notice("Running mode=%s, port=%d.", "cluster" if self.cluster else "standalone",
                   cfg["port"] or cfg["tls-port"])
        if self.cluster is not None:
            log.notice("Cluster node %s, bus port %d", self.cluster.myself.name,
                       self.cluster.myself.cport)
        log.notice("Server initialized")
        main = self.store.main
        recovery = main.recovery
        if main.dropped_entries:
            recovery += f", {main.dropped_entries} unfinished entries dropped"
        log.notice("Arena %s: %s, %s; maxmemory %s%s", self.store.path, human_bytes(main.size),
                   recovery, human_bytes(self.store.memory_limit(cfg["maxmemory"])),
                   "" if cfg["maxmemory"] else " (90% of the arena, as maxmemory is 0)")
        for kind, address in self.listeners.listening_on():
            log.notice("Ready to accept connections %s %s", kind, address)

    async def _cron(self):
        """Active expiry, output-buffer soft limits and idle timeouts, hz times a second."""
        while True:
            await asyncio.sleep(1.0 / self.config["hz"])
            try:
                self._cron_tick()
            except Exception:  # one bad tick must not end active expiry for good
                log.exception("Error in the background cron")

    async def _cluster_cron(self):
        """The cluster's own clock: ten times a second, as Redis's clusterCron; then the
        clients blocked on keys whose slot went elsewhere are answered (Redis's clients cron)."""
        while True:
            await asyncio.sleep(0.1)
            try:
                self.cluster.cron()
                if self.blocked.key_waits:
                    self.blocked.redirect(lambda keys: blocked_redirect(self.cluster, keys))
            except Exception:
                log.exception("Error in the cluster cron")

    def _cron_tick(self):
        self.scripts.debug_children.reap()
        if self.scripts.busy is not None:
            return      # the keyspace is a running script's (Redis runs no cron meanwhile either)
        store = self.store
        if self.disk_tier is not None:
            self.disk_tier.cron()
        self.process.note_memory(store.main.used_memory)
        # While clients are paused (blocked.py) the dataset holds still: no expiry, no eviction.
        if not self.blocked.paused:
            # An expire step is bounded so a cron tick never stalls clients.
            self.monitoring.latency.timed("expire-cycle", lambda: store.expire_cycle(self.config["hz"]))
            # A lowered maxmemory takes effect without waiting for a command (Redis's eviction
            # time proc), so its evicted events go out.
            for arena in store.every():
                self.monitoring.evict_to_maxmemory(arena)
        self.notifications.publish_drops()
        self.curves.feed(self.tenants.read_counts)
        # Small freed blocks merge back (quick lists), idle big free blocks go back to the
        # kernel, a bounded amount per tick.
        self.monitoring.latency.timed("release-free-pages", store.release_free_pages)
        self.leases.expire()
        store.tenants.close_idle(self.leases.arenas())
        self.migrate_links.close_idle()
        store.log_checksum_failures()
        for c in self.clients.connections():
            if c.soft_limit_since is not None and not c.closing:
                c.check_output_limit(c.transport.get_write_buffer_size())
        timeout = self.config["timeout"]
        if timeout:
            now = time.monotonic()
            for c in self.clients.connections():
                # MULTI or not, as in Redis; not a blocked client, nor a subscriber
                if (now - c.last_interaction > timeout and c.session.blocked is None
                        and not c.session.subscribed):
                    log.debug("Closing idle client")
                    c.close()

    async def stop(self):
        log.warning("%s received, scheduling shutdown...", self.shutdown.reason)
        self.scripts.debug_children.kill()
        self._cron_task.cancel()
        if self.cluster is not None:
            self._cluster_cron_task.cancel()
            await self.bus.stop()
            try:
                self.cluster.save(durable=True)
            except OSError as e:
                log.warning("Could not save the cluster config %s: %s", self.cluster.path, e)
        self.listeners.close()
        self.blocked.unpause()      # (the expiry hold is process-wide: not left behind)
        connections = self.clients.connections()
        for c in connections:
            c.flush()
            c.closing = True
            c.transport.close()
        # Give transports a moment to flush their last replies (e.g. SHUTDOWN's peers).
        deadline = time.monotonic() + 2.0
        while any(c.transport.get_write_buffer_size() for c in connections) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for c in connections:
            c.transport.abort()
        await asyncio.sleep(0)
        if self.config["pidfile"] and os.path.exists(self.config["pidfile"]):
            os.unlink(self.config["pidfile"])
        self.migrate_links.close_all()
        self.exporter.stop()  # its thread reads the arena: stop it before the arena goes
        self.persistence.join()     # a BGSAVE's thread syncs the arenas: let it end first
        if self.disk_tier is not None:
            self.disk_tier.close()      # its reads in flight write into the arena
        self.store.close()
        log.warning("cxlredis is now ready to exit, bye bye...")


# --- logging, in Redis's line format: "pid:M 30 Nov 2026 01:39:23.123 * text" ---
NOTICE = 25
logging.addLevelName(NOTICE, "NOTICE")
_LEVELS = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": NOTICE,
           "warning": logging.WARNING, "nothing": logging.CRITICAL + 10}
_MARKS = {logging.DEBUG: ".", logging.INFO: "-", NOTICE: "*", logging.WARNING: "#",
          logging.ERROR: "#", logging.CRITICAL: "#"}


def _notice(self, msg, *args, **kwargs):
    if self.isEnabledFor(NOTICE):
        self._log(NOTICE, msg, args, **kwargs)


logging.Logger.notice = _notice


class RedisLogFormatter(logging.Formatter):
    def format(self, record):
        ms = int(record.created * 1000) % 1000
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(record.created))
        text = f"{os.getpid()}:M {stamp}.{ms:03d} {_MARKS.get(record.levelno, '*')} {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def setup_logging(config):
    handler = logging.FileHandler(config["logfile"]) if config["logfile"] else logging.StreamHandler()
    handler.setFormatter(RedisLogFormatter())
    log.handlers[:] = [handler]
    log.propagate = False
    set_log_level(config["loglevel"])


def set_log_level(level):
    log.setLevel(_LEVELS[level])
