"""The server process: listeners, shared state, background cron, shutdown.

`Server` holds what every connection shares (config, arena, clients, stats);
`serve()` runs it on the current event loop until SHUTDOWN or a signal.
"""
import asyncio
import logging
import os
import secrets
import signal
import socket
import tempfile
import time

from . import REDIS_COMPAT_VERSION
from ._fastpath import Counters as FastCounters
from ._store import Arena
from .acl import Acl
from .audit import AuditLog
from .connection import Client
from .config import ConfigSetError
from .errors import CommandError
from .leases import Leases
from .metrics import LATENCY_BUCKETS
from .prometheus import Exporter
from .monitoring import Monitoring
from .tenants import Tenants
from .tls import LISTEN_FAILED, TLSListeners

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
    def __init__(self, config):
        self.config = config
        self.pid = os.getpid()
        self.run_id = secrets.token_hex(20)
        self.start_time = time.time()
        self.lastsave = int(self.start_time)
        self.stats = Stats()
        self.fast_counters = FastCounters()     # the C fast path's, folded into stats per batch
        self.exporter = Exporter(self)          # Prometheus (metrics-port)
        self.clients = {}
        self.absent_watchers = set()            # clients WATCHing a key that did not exist
        self.next_client_id = 1
        self.listeners = []
        self.unix_listener = None
        self.shutdown_requested = None
        self.large_threshold = config["large-value-threshold"]
        # Before the arena: a bad audit log path or ACL setup stops the start untouched.
        self.audit = AuditLog(config)
        self.acl = Acl(self)
        self.arena_path = config["arena-path"] or default_arena_path(config["port"] or config["tls-port"])
        self.store = Arena(
            self.arena_path, config["arena-size"], databases=config["databases"],
            reset=config["arena-reset"], hugepages=config["arena-hugepages"],
            prefault=config["arena-prefault"], numa_node=config["arena-numa-node"])
        self.apply_maxmemory(config["maxmemory"])
        self.store.policy = config["maxmemory-policy"]
        self.store.maxmemory_samples = config["maxmemory-samples"]
        self.store.checksums = config["arena-checksum"]
        self.checksum_failures_logged = 0
        self.monitoring = Monitoring(self)     # SLOWLOG, LATENCY and MONITOR clients
        # Users → tenants, and the keyspace each connection is bound to (after the arena,
        # which keeps the tenants themselves).
        self.tenants = Tenants(self)
        self.leases = Leases(self)             # co-located clients' leases (CXL commands)
        self._watch_config()
        self.tls = TLSListeners(self, bind_tcp)

    # --- configuration applied at runtime ----------------------------
    def apply_maxmemory(self, value):
        """maxmemory bounds used_memory as INFO shows it: the heap plus the arena's fixed
        superblock and index. 0 means 90% of the arena, the arena itself being the hard bound."""
        st = self.store.stats()
        fixed = st["used_memory"] - st["heap_used"]
        limit = value or int(self.config["arena-size"] * 0.9)
        self.store.maxmemory = max(limit - fixed, 1)

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
        cfg.on_change("large-value-threshold", lambda v: setattr(self, "large_threshold", v))
        for name, attr in (("proto-max-bulk-len", "proto_max_bulk_len"),
                           ("client-query-buffer-limit", "query_buffer_limit")):
            cfg.on_change(name, lambda v, attr=attr: [setattr(c.parser, attr, v)
                                                      for c in self.clients.values()])

    # --- clients -------------------------------------------------------
    def client_connected(self, client):
        self.stats.total_connections_received += 1
        if len(self.clients) >= self.config["maxclients"]:
            self.stats.rejected_connections += 1
            client.reply.error("ERR max number of clients reached")
            client.close_after_reply()
            return
        client.id = self.next_client_id
        self.next_client_id += 1
        self.clients[client.id] = client
        if client.fd >= 0 and client.laddr and not client.laddr.startswith("/"):
            _set_keepalive(client.transport.get_extra_info("socket"), self.config["tcp-keepalive"])

    def client_disconnected(self, client):
        self.clients.pop(client.id, None)

    # --- lifecycle ----------------------------------------------------
    def request_shutdown(self, reason):
        if self.shutdown_requested is None:
            self.shutdown_requested = reason
            self._stop.set()

    def check_shutdown_allowed(self):
        if self.shutdown_requested is not None:
            raise CommandError("ERR shutdown already in progress")

    async def start(self):
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        cfg = self.config
        await self.tls.start()
        try:
            sockets = bind_tcp(cfg["bind"], cfg["port"], cfg["tcp-backlog"])
            self.bound = (cfg["bind"], cfg["port"])
        except OSError as e:
            raise SystemExit(f"Could not create server TCP listening socket: {e}")
        await self._serve_tcp(sockets)
        if cfg["unixsocket"]:
            path = cfg["unixsocket"]
            if os.path.exists(path):
                os.unlink(path)
            srv = await loop.create_unix_server(lambda: Client(self), path, backlog=cfg["tcp-backlog"])
            if cfg["unixsocketperm"]:
                os.chmod(path, cfg["unixsocketperm"])
            self.unix_listener = srv
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request_shutdown, signal.Signals(sig).name)
        self._cron_task = asyncio.create_task(self._cron())
        self.exporter.start()
        if cfg["pidfile"]:
            with open(cfg["pidfile"], "w") as f:
                f.write(f"{self.pid}\n")

    async def _serve_tcp(self, sockets):
        loop = asyncio.get_running_loop()
        old, self.listeners = self.listeners, []
        for sock in sockets:
            self.listeners.append(await loop.create_server(lambda: Client(self), sock=sock))
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

    def _expire_cycle(self):
        for arena in self.arenas():
            arena.expire_cycle(200)

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

    def _cron_tick(self):
        # An expire step is bounded so a cron tick never stalls clients.
        self.monitoring.latency.timed("expire-cycle", self._expire_cycle)
        self.leases.expire()
        self.tenants.arenas.close_idle(self.leases.arenas())
        failures = self.checksum_failures
        if failures != self.checksum_failures_logged:
            log.warning("%d value(s) failed their checksum on read and were dropped "
                        "(%d since start): the arena's memory is corrupting data",
                        failures - self.checksum_failures_logged, failures)
            self.checksum_failures_logged = failures
        for c in list(self.clients.values()):
            if c.soft_limit_since is not None and not c.closing:
                c.check_output_limit(c.transport.get_write_buffer_size())
        timeout = self.config["timeout"]
        if timeout:
            now = time.monotonic()
            for c in list(self.clients.values()):
                if now - c.last_interaction > timeout:  # MULTI or not, as in Redis
                    log.debug("Closing idle client")
                    c.close()

    async def run(self):
        await self.start()
        log.notice("Server initialized")
        log.notice("Arena %s: %s (%d bytes, %s)", self.arena_path, self.store.recovery,
                   self.store.size, f"{self.store.dropped_entries} unfinished entries dropped"
                   if self.store.dropped_entries else "nothing dropped")
        log.notice("Ready to accept connections")
        await self._stop.wait()
        await self.stop()

    async def stop(self):
        log.warning("%s received, scheduling shutdown...", self.shutdown_requested)
        self._cron_task.cancel()
        for srv in self.listeners + ([self.unix_listener] if self.unix_listener else []):
            srv.close()
        self.tls.close()
        for c in list(self.clients.values()):
            c.flush()
            c.closing = True
            c.transport.close()
        # Give transports a moment to flush their last replies (e.g. SHUTDOWN's peers).
        deadline = time.monotonic() + 2.0
        while any(c.transport.get_write_buffer_size() for c in self.clients.values()) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for c in list(self.clients.values()):
            c.transport.abort()
        await asyncio.sleep(0)
        if self.config["unixsocket"] and os.path.exists(self.config["unixsocket"]):
            os.unlink(self.config["unixsocket"])
        if self.config["pidfile"] and os.path.exists(self.config["pidfile"]):
            os.unlink(self.config["pidfile"])
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


def _set_keepalive(sock, interval):
    if sock is None or not interval:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_KEEPIDLE"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, interval)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(interval // 3, 1))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)


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
