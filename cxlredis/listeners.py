"""Every socket a server listens on: TCP on port, TLS on tls-port (tls.py), the unix
socket, and the cluster bus's port. They are bound when built, so a busy port or a bad
TLS setup ends a start before any file exists, and served once the server has a
connection factory. CONFIG SET port/bind rebind them as Redis does."""
import asyncio
import os
import socket

from .cluster.state import PORT_INCREMENT
from .config import ConfigSetError
from .tls import LISTEN_FAILED, TLSListeners, listen_failure


class Listeners:
    def __init__(self, config):
        """SystemExit says why a socket cannot be bound (nothing stays bound then)."""
        self.config = config
        self.new_connection = None      # the protocol factory, given by start()
        self.tcp = []                   # the loop's servers on the TCP sockets
        self.unix = None                # the loop's server on the unix socket
        self.unix_path = None           # the socket file, when this start made it
        cfg = config
        cfg.on_change("port", lambda v: self._rebind(port=v))
        cfg.on_change("bind", lambda v: self._rebind(bind=v))
        self.tls = TLSListeners(config, lambda: self.new_connection(), bind_tcp)
        self.unix_socket = None
        try:
            self.tcp_sockets = bind_tcp(cfg["bind"], cfg["port"], cfg["tcp-backlog"])
        except OSError as e:
            raise SystemExit(listen_failure("TCP", "port", cfg["bind"], cfg["port"], e)) from None
        self.bound = (cfg["bind"], cfg["port"])
        try:
            self.tls.bind()
            self.unix_socket = self._bind_unix(cfg["unixsocket"]) if cfg["unixsocket"] else None
            self.bus_sockets = self._bind_bus() if cfg["cluster-enabled"] else None
        except BaseException:
            self.close()
            raise

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
        self.unix_path = path
        if self.config["unixsocketperm"]:
            os.chmod(path, self.config["unixsocketperm"])
        sock.listen(self.config["tcp-backlog"])
        sock.setblocking(False)
        return sock

    def _bind_bus(self):
        cfg = self.config
        bus_port = cfg["cluster-port"] or (cfg["port"] or cfg["tls-port"]) + PORT_INCREMENT
        try:
            return bind_tcp(cfg["bind"], bus_port, cfg["tcp-backlog"])
        except OSError as e:
            raise SystemExit(listen_failure("cluster bus", "cluster-port", cfg["bind"],
                                            bus_port, e)) from None

    async def start(self, new_connection):
        """Serve every bound socket, each accepted connection's protocol from new_connection()."""
        self.new_connection = new_connection
        await self.tls.start()
        await self._serve_tcp(self.tcp_sockets)
        if self.unix_socket is not None:
            self.unix = await asyncio.get_running_loop().create_unix_server(
                new_connection, sock=self.unix_socket, backlog=self.config["tcp-backlog"])

    async def _serve_tcp(self, sockets):
        loop = asyncio.get_running_loop()
        old, self.tcp = self.tcp, []
        for sock in sockets:
            # the loop listens again on the socket, with this backlog
            self.tcp.append(await loop.create_server(self.new_connection, sock=sock,
                                                     backlog=self.config["tcp-backlog"]))
        for srv in old:
            srv.close()

    def _rebind(self, bind=None, port=None):
        """CONFIG SET bind/port, in Redis's order: close, bind anew, and on failure restore the old."""
        old_hosts, old_port = self.bound
        hosts = bind if bind is not None else old_hosts
        port = port if port is not None else old_port
        for srv in self.tcp:
            srv.close()
        self.tcp = []
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

    def listening_on(self):
        """(kind, address) of every listener: tcp/tls host:port, unix path."""
        found = []
        for kind, servers in (("tcp", self.tcp), ("tls", self.tls.listeners)):
            for srv in servers:
                for sock in srv.sockets:
                    host, port = sock.getsockname()[:2]
                    found.append((kind, f"[{host}]:{port}" if ":" in host else f"{host}:{port}"))
        if self.unix is not None:
            found.append(("unix", self.unix_path))
        return found

    def close(self):
        """Stop listening (the bus's sockets are the bus's once it runs) and remove the unix
        socket file this start made."""
        if self.new_connection is None:     # never served: the sockets are still ours to close
            for sock in self.tcp_sockets + ([self.unix_socket] if self.unix_socket else []):
                sock.close()
        for srv in self.tcp + ([self.unix] if self.unix is not None else []):
            srv.close()
        self.tls.close()
        if self.unix_path is not None and os.path.exists(self.unix_path):
            os.unlink(self.unix_path)


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
