"""The server process: listeners, shared state, background cron, shutdown.

`Server` holds what every connection shares (config, arena, clients, stats);
`serve()` runs it on the current event loop until SHUTDOWN or a signal.
"""
import asyncio
import fcntl
import logging
import os
import secrets
import signal
import socket
import tempfile
import time

from . import REDIS_COMPAT_VERSION, metrics
from ._fastpath import Counters as FastCounters
from ._resp import LargeValueThreshold
from ._store import Arena, ArenaError, region_locked
from .acl import Acl
from .audit import AuditLog
from .cluster.links import Bus
from .cluster.nodes_conf import NodesConfError
from .cluster.state import PORT_INCREMENT, ClusterState
from .clients import Clients
from .cluster.migrate import MigrateLinks
from .connection import Client
from .context import Services
from .config import ConfigSetError
from .errors import CommandError
from .leases import Leases
from .metrics import LATENCY_BUCKETS, human_bytes
from .prometheus import Exporter
from .monitoring import Monitoring
from .slot_keys import SlotKeys
from .tenants import Tenants
from .tls import LISTEN_FAILED, TLSListeners, listen_failure

BACKING_FULL_LOG_INTERVAL = 60.0       # seconds between warnings that an arena's backing is full

log = logging.getLogger("cxlredis")


class Stats:
    """Counters for INFO stats / commandstats / errorstats (reset by CONFIG RESETSTAT)."""

    def __init__(self):
        self.reset()

    def reset(self):
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


def default_arena_path(port):
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"cxlredis-{port}.arena")


class Server:
    """The composition root: builds every part with the collaborators it names, and
    runs the listeners, the cron and shutdown. Commands see none of it: each connection's
    session carries `services` (context.Services), the part of it a command may use."""

    def __init__(self, config):
        self.config = config
        self.pid = os.getpid()
        self.run_id = secrets.token_hex(20)
        self.start_time = time.time()
        self.lastsave = int(self.start_time)
        self.stats = Stats()
        self.fast_counters = FastCounters()     # the C fast path's, folded into stats per batch
        self.exporter = Exporter(self)          # Prometheus (metrics-port)
        self.watchers = set()                   # sessions WATCHing a key that did not exist
        self.migrate_links = MigrateLinks()     # MIGRATE's cached connections to its targets
        self.listeners = []
        self.unix_listener = None
        self.shutdown_requested = None
        self.cluster = None                     # ClusterState in cluster mode
        # every connection's parser and reply writer, and the fast path, read this one
        self.large_threshold = LargeValueThreshold(config["large-value-threshold"])
        # What this start created, removed if it fails: arena files (unless another process
        # has locked one meanwhile) and other files (the unix socket, the pid and tenants files).
        self.new_arena_files = []
        self.new_files = []
        self.monitoring = Monitoring(config)       # SLOWLOG, LATENCY and MONITOR clients
        self.clients = Clients(config, self.stats, self.monitoring.monitors)
        # Before the arena: a bad audit log path or ACL setup stops the start untouched.
        self.audit = AuditLog(config)
        self.acl = Acl(config, self.audit, self.clients)
        self._watch_config()
        self.tls = TLSListeners(config, self.new_connection, bind_tcp)
        # So is a busy port or a bad TLS setup: the listeners are bound before any file is made.
        self._bind_listeners()
        try:
            self._attach_arena()
            # Users → tenants, and the keyspace each connection is bound to (after the arena,
            # which keeps the tenants themselves).
            self._note_new_file(Tenants.file_path(config))
            self.tenants = Tenants(config, self.store, self.acl, self.clients, self.memory_limit,
                                   self.new_arena_files)
            self.acl.tenants = self.tenants
            self.leases = Leases(config)            # co-located clients' leases (CXL commands)
            self.cluster = self._load_cluster() if config["cluster-enabled"] else None
        except BaseException:
            self.abandon_start()
            raise
        self.services = Services(
            config=config, acl=self.acl, tenants=self.tenants, audit=self.audit, stats=self.stats,
            leases=self.leases, monitoring=self.monitoring, clients=self.clients,
            watchers=self.watchers, cluster=self.cluster, migrate_links=self.migrate_links,
            version=REDIS_COMPAT_VERSION, lastsave=self.lastsave,
            info=lambda sections, session: metrics.info(self, sections, session),
            check_arenas=self.check_arenas, reset_stats=self.reset_stats,
            request_shutdown=self.request_shutdown,
            check_shutdown_allowed=self.check_shutdown_allowed)

    def new_connection(self):
        """The protocol object of one accepted connection (every listener's factory)."""
        return Client(self.services, self.large_threshold, self.fast_counters)

    def _load_cluster(self):
        """This node's cluster view from nodes.conf (a new node writes one), which no other
        running node may share."""
        cfg = self.config
        path = os.path.join(cfg["dir"], cfg["cluster-config-file"])
        self._note_new_file(path + ".lock")
        self.cluster_lock = open(path + ".lock", "a")
        try:
            fcntl.flock(self.cluster_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SystemExit(f"Sorry, the cluster configuration file {cfg['cluster-config-file']} is "
                             "already used by a different Redis Cluster node. Please make sure that "
                             "different nodes use different cluster configuration files.") from None
        self._note_new_file(path)
        # every key by slot from now on, not from the first slot command (a walk of the index)
        for arena in self.arenas():
            arena.index_slots()
        state = ClusterState(cfg, SlotKeys(self.tenants), self.bus.connect, path)
        try:
            state.load()
        except (NodesConfError, OSError) as e:
            raise SystemExit(f"Unrecoverable error: corrupted cluster config file {path}: {e}") from None
        return state

    def _attach_arena(self):
        config = self.config
        self.arena_path = config["arena-path"] or default_arena_path(config["port"] or config["tls-port"])
        if not os.path.lexists(self.arena_path):
            self.new_arena_files.append(self.arena_path)
        try:
            self.store = Arena(
                self.arena_path, config["arena-size"], offset=config["arena-offset"],
                databases=config["databases"],
                reset=config["arena-reset"], hugepages=config["arena-hugepages"],
                prefault=config["arena-prefault"], numa_node=config["arena-numa-node"])
        except ArenaError as e:
            raise ArenaError(explain_arena_error(str(e), self.arena_path, config["arena-offset"],
                                                 config["arena-size"])) from None
        self.apply_maxmemory(config["maxmemory"])
        self.store.policy = config["maxmemory-policy"]
        self.store.maxmemory_samples = config["maxmemory-samples"]
        self.store.checksums = config["arena-checksum"]
        self.checksum_failures_logged = 0
        self.backing_full_logged = {}          # arena path -> when its full backing was last logged

    # --- configuration applied at runtime ----------------------------
    def apply_maxmemory(self, value):
        """maxmemory bounds used_memory as INFO shows it: the heap plus the arena's fixed
        superblock and index. 0 means 90% of the arena, the arena itself being the hard bound."""
        st = self.store.stats()
        fixed = st["used_memory"] - st["heap_used"]
        self.store.maxmemory = max(self.memory_limit(value) - fixed, 1)

    def memory_limit(self, maxmemory=None):
        """The maxmemory in effect (of `maxmemory`, default the configured one): 0 is 90% of the arena."""
        value = self.config["maxmemory"] if maxmemory is None else maxmemory
        return value or int(self.config["arena-size"] * 0.9)

    def _watch_config(self):
        cfg = self.config
        cfg.on_change("maxmemory", self.apply_maxmemory)
        cfg.on_change("maxmemory-policy", lambda v: setattr(self.store, "policy", v))
        cfg.on_change("maxmemory-samples", lambda v: [setattr(a, "maxmemory_samples", v)
                                                      for a in self.arenas()])
        cfg.on_change("arena-checksum", lambda v: [setattr(a, "checksums", v) for a in self.arenas()])
        cfg.on_change("loglevel", set_log_level)
        cfg.on_change("port", lambda v: self._rebind(port=v))
        cfg.on_change("bind", lambda v: self._rebind(bind=v))
        cfg.on_change("large-value-threshold", lambda v: setattr(self.large_threshold, "value", v))
        for name, attr in (("proto-max-bulk-len", "proto_max_bulk_len"),
                           ("client-query-buffer-limit", "query_buffer_limit")):
            cfg.on_change(name, lambda v, attr=attr: [setattr(c.parser, attr, v)
                                                      for c in self.clients.connections()])

    # --- what commands ask of the server ---------------------------------
    def check_arenas(self):
        """DEBUG ARENA-CHECK: the problems found in every arena, named by arena."""
        problems = self.store.check()
        for name, arena in self.tenants.arenas.by_name.items():
            problems += [f"tenant {name}'s arena: {problem}" for problem in arena.check()]
        return problems

    def reset_stats(self):
        """CONFIG RESETSTAT."""
        self.stats.reset()
        self.store.reset_stats()

    # --- lifecycle ----------------------------------------------------
    def request_shutdown(self, reason):
        if self.shutdown_requested is None:
            self.shutdown_requested = reason
            self._stop.set()

    def check_shutdown_allowed(self):
        if self.shutdown_requested is not None:
            raise CommandError("ERR shutdown already in progress")

    def _bind_listeners(self):
        """Bind TCP, TLS and the unix socket; SystemExit says why one cannot be."""
        cfg = self.config
        try:
            self.tcp_sockets = bind_tcp(cfg["bind"], cfg["port"], cfg["tcp-backlog"])
        except OSError as e:
            raise SystemExit(listen_failure("TCP", "port", cfg["bind"], cfg["port"], e)) from None
        self.bound = (cfg["bind"], cfg["port"])
        self.tls.bind()
        self.unix_socket = self._bind_unix(cfg["unixsocket"]) if cfg["unixsocket"] else None
        if cfg["cluster-enabled"]:
            bus_port = cfg["cluster-port"] or (cfg["port"] or cfg["tls-port"]) + PORT_INCREMENT
            try:
                self.bus = Bus(bind_tcp(cfg["bind"], bus_port, cfg["tcp-backlog"]))
            except OSError as e:
                raise SystemExit(listen_failure("cluster bus", "cluster-port", cfg["bind"],
                                                bus_port, e)) from None

    def _bind_unix(self, path):
        if os.path.exists(path):
            os.unlink(path)          # a stale socket of an earlier run, as Redis does
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
        except OSError as e:
            sock.close()
            raise SystemExit(f"Failed opening Unix socket {path}: {e.strerror} (check unixsocket "
                             f"and that its directory exists and is writable)") from None
        self.new_files.append(path)
        if self.config["unixsocketperm"]:
            os.chmod(path, self.config["unixsocketperm"])
        sock.listen(self.config["tcp-backlog"])
        sock.setblocking(False)
        return sock

    def _note_new_file(self, path):
        if path and not os.path.lexists(path):
            self.new_files.append(path)

    async def start(self):
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        cfg = self.config
        await self.tls.start()
        await self._serve_tcp(self.tcp_sockets)
        if self.unix_socket is not None:
            self.unix_listener = await loop.create_unix_server(self.new_connection, sock=self.unix_socket,
                                                               backlog=cfg["tcp-backlog"])
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_shutdown, signal.Signals(sig).name)
        self._cron_task = asyncio.create_task(self._cron())
        if self.cluster is not None:
            await self.bus.start(self.cluster)
            self._cluster_cron_task = asyncio.create_task(self._cluster_cron())
        self.exporter.start()
        if cfg["pidfile"]:
            self._note_new_file(cfg["pidfile"])
            with open(cfg["pidfile"], "w") as f:
                f.write(f"{self.pid}\n")

    def abandon_start(self):
        """Undo a start that failed: the arenas are detached clean (nothing was served, so
        the next start trusts them) and the files this start created are removed. A file
        that was there before, such as someone's warm arena, is left as it was. (The
        listening sockets close as the process exits.)"""
        self.exporter.stop()
        if hasattr(self, "tenants"):
            self.tenants.arenas.close_all()
        if hasattr(self, "store"):
            self.store.close(clean=True)
        for path in self.new_files:
            _unlink_quietly(path)
        for path in self.new_arena_files:
            _unlink_unless_locked(path)

    async def _serve_tcp(self, sockets):
        loop = asyncio.get_running_loop()
        old, self.listeners = self.listeners, []
        for sock in sockets:
            # the loop listens again on the socket, with this backlog
            self.listeners.append(await loop.create_server(self.new_connection, sock=sock,
                                                           backlog=self.config["tcp-backlog"]))
        for srv in old:
            srv.close()

    def _rebind(self, bind=None, port=None):
        """CONFIG SET bind/port, in Redis's order: close, bind anew, and on failure restore the old."""
        old_hosts, old_port = self.bound
        hosts = bind if bind is not None else old_hosts
        port = port if port is not None else old_port
        for srv in self.listeners:
            srv.close()
        self.listeners = []
        backlog = self.config["tcp-backlog"]
        try:
            sockets = bind_tcp(hosts, port, backlog)
        except OSError:
            self._listen_later(bind_tcp(old_hosts, old_port, backlog))
            # Redis's own texts for the two options
            raise ConfigSetError("Failed to bind to specified addresses." if bind is not None
                                 else LISTEN_FAILED) from None
        self.bound = (hosts, port)
        self._listen_later(sockets)

    def _listen_later(self, sockets):
        asyncio.get_running_loop().create_task(self._serve_tcp(sockets))

    async def _cron(self):
        """Active expiry, output-buffer soft limits and idle timeouts, hz times a second."""
        while True:
            await asyncio.sleep(1.0 / self.config["hz"])
            try:
                self._cron_tick()
            except Exception:  # one bad tick must not end active expiry for good
                log.exception("Error in the background cron")

    async def _cluster_cron(self):
        """The cluster's own clock: ten times a second, as Redis's clusterCron."""
        while True:
            await asyncio.sleep(0.1)
            try:
                self.cluster.cron()
            except Exception:
                log.exception("Error in the cluster cron")

    def _expire_cycle(self):
        # like Redis's slow cycle: at most a quarter of each tick, shared by the arenas
        arenas = self.arenas()
        budget_us = 250_000 // self.config["hz"] // len(arenas)
        for arena in arenas:
            arena.expire_cycle(budget_us)

    def arenas(self):
        """The server's arena, then the arenas of tenants with ARENA own."""
        return [self.store, *self.tenants.arenas.every()]

    @property
    def checksum_failures(self):
        """Values dropped since start because they failed their checksum, in every arena."""
        return (sum(arena.checksum_failures for arena in self.arenas())
                + self.tenants.arenas.closed_checksum_failures)

    def close_arenas(self):
        """Detach every arena cleanly: the next start trusts them as they are."""
        self.tenants.arenas.close_all()
        self.store.close(clean=True)

    def _release_free_pages(self):
        now = time.monotonic()
        for arena in self.arenas():
            arena.release_free_pages()
            err = arena.take_backing_error()
            if err and now - self.backing_full_logged.get(arena.path, -BACKING_FULL_LOG_INTERVAL) \
                    >= BACKING_FULL_LOG_INTERVAL:
                self.backing_full_logged[arena.path] = now
                log.warning("The backing of arena %s cannot supply memory for writes (%s): they get "
                            "-OOM until space is freed on its file system", arena.path, os.strerror(err))

    def _cron_tick(self):
        # An expire step is bounded so a cron tick never stalls clients.
        self.monitoring.latency.timed("expire-cycle", self._expire_cycle)
        # Idle big free blocks go back to the kernel, a bounded amount per tick.
        self.monitoring.latency.timed("release-free-pages", self._release_free_pages)
        self.leases.expire()
        self.tenants.arenas.close_idle(self.leases.arenas())
        self.migrate_links.close_idle()
        failures = self.checksum_failures
        if failures != self.checksum_failures_logged:
            log.warning("%d value(s) failed their checksum on read and were dropped "
                        "(%d since start): the arena's memory is corrupting data",
                        failures - self.checksum_failures_logged, failures)
            self.checksum_failures_logged = failures
        for c in self.clients.connections():
            if c.soft_limit_since is not None and not c.closing:
                c.check_output_limit(c.transport.get_write_buffer_size())
        timeout = self.config["timeout"]
        if timeout:
            now = time.monotonic()
            for c in self.clients.connections():
                if now - c.last_interaction > timeout:  # MULTI or not, as in Redis
                    log.debug("Closing idle client")
                    c.close()

    async def run(self):
        try:
            await self.start()
        except BaseException:
            self.abandon_start()
            raise
        cfg = self.config
        log.notice("Running mode=%s, port=%d.", "cluster" if self.cluster else "standalone",
                   cfg["port"] or cfg["tls-port"])
        if self.cluster is not None:
            log.notice("Cluster node %s, bus port %d", self.cluster.myself.name,
                       self.cluster.myself.cport)
        log.notice("Server initialized")
        recovery = self.store.recovery
        if self.store.dropped_entries:
            recovery += f", {self.store.dropped_entries} unfinished entries dropped"
        log.notice("Arena %s: %s, %s; maxmemory %s%s", self.arena_path, human_bytes(self.store.size),
                   recovery, human_bytes(self.memory_limit(cfg["maxmemory"])),
                   "" if cfg["maxmemory"] else " (90% of the arena, as maxmemory is 0)")
        for kind, address in self.listening_on():
            log.notice("Ready to accept connections %s %s", kind, address)
        await self._stop.wait()
        await self.stop()

    def listening_on(self):
        """(kind, address) of every listener: tcp/tls host:port, unix path."""
        found = []
        for kind, servers in (("tcp", self.listeners), ("tls", self.tls.listeners)):
            for srv in servers:
                for sock in srv.sockets:
                    host, port = sock.getsockname()[:2]
                    found.append((kind, f"[{host}]:{port}" if ":" in host else f"{host}:{port}"))
        if self.unix_listener is not None:
            found.append(("unix", self.config["unixsocket"]))
        return found

    async def stop(self):
        log.warning("%s received, scheduling shutdown...", self.shutdown_requested)
        self._cron_task.cancel()
        if self.cluster is not None:
            self._cluster_cron_task.cancel()
            await self.bus.stop()
            try:
                self.cluster.save(durable=True)
            except OSError as e:
                log.warning("Could not save the cluster config %s: %s", self.cluster.path, e)
        for srv in self.listeners + ([self.unix_listener] if self.unix_listener else []):
            srv.close()
        self.tls.close()
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
        if self.config["unixsocket"] and os.path.exists(self.config["unixsocket"]):
            os.unlink(self.config["unixsocket"])
        if self.config["pidfile"] and os.path.exists(self.config["pidfile"]):
            os.unlink(self.config["pidfile"])
        self.migrate_links.close_all()
        self.exporter.stop()  # its thread reads the arena: stop it before the arena goes
        self.close_arenas()
        log.warning("cxlredis is now ready to exit, bye bye...")

    def uptime(self):
        return int(time.time() - self.start_time)

    @property
    def version(self):
        return REDIS_COMPAT_VERSION


def bind_tcp(hosts, port, backlog):
    """Listening sockets for every bind address ("-addr" may fail, as in redis.conf); none when port is 0."""
    if not port:
        return []
    sockets = []
    try:
        for host in hosts:
            optional = host.startswith("-")
            host = host.lstrip("-")
            try:
                infos = socket.getaddrinfo(None if host == "*" else host, port, type=socket.SOCK_STREAM,
                                           flags=socket.AI_PASSIVE)
                family, kind, proto, _, addr = infos[0]
                sock = socket.socket(family, kind, proto)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                sock.bind(addr)
                sock.listen(backlog)
                sock.setblocking(False)
            except OSError:
                if optional:
                    continue
                raise
            sockets.append(sock)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


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


def _unlink_quietly(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _unlink_unless_locked(path):
    """Remove an arena file this process created, unless another process has locked a
    region of it since (it started on the same new path at the same moment, or at another
    arena-offset of it, and uses it now)."""
    if not region_locked(path):
        _unlink_quietly(path)


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
