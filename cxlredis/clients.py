"""The open connections of a server, as the services see them.

Commands and services name a connection by its session (context.CallContext);
this registry holds the connections themselves and does for a session what
needs its connection: describe it (CLIENT LIST, ACL LOG), close it, drop the
arena blocks its half-received arguments hold, make it a MONITOR."""
import asyncio
import logging
import socket
import time

from .sessions import watched_keys_changed

log = logging.getLogger("cxlredis")


def normal_output_budget(limits):
    """The replies a normal client may have pending: the lower of its hard and soft
    output limits that is set, 0 if neither is."""
    hard, soft, _ = limits["normal"]
    return min(hard or soft, soft or hard)


class Clients:
    def __init__(self, config, stats, monitors, flushes):
        self.config = config
        self.stats = stats
        self.by_id = {}              # id → connection (connection.Client)
        self.monitors = monitors     # monitoring.Monitors, which writes to connections
        self.flushes = flushes
        self.next_id = 1
        self.output_budget = normal_output_budget(config["client-output-buffer-limit"])
        config.on_change("client-output-buffer-limit",
                         lambda limits: setattr(self, "output_budget", normal_output_budget(limits)))

    def __len__(self):
        return len(self.by_id)

    def connections(self):
        return list(self.by_id.values())

    def client_session(self, ident):
        """The session of client id ident, None if there is no such client."""
        connection = self.by_id.get(ident)
        return connection.session if connection is not None else None

    def flush(self, session):
        """Send what session's replies hold now, not at the end of this loop turn."""
        connection = self.by_id.get(session.id)
        if connection is not None and not connection.closing:
            connection.flush()

    def flush_soon(self, ids):
        """The replies of the sessions ids (messages pushed to them) go out with the others
        of this loop turn (Flushes)."""
        for ident in ids:
            connection = self.by_id.get(ident)
            if connection is not None:
                self.flushes.add(connection)

    def sessions(self):
        """Every session, by id."""
        return [self.by_id[ident].session for ident in sorted(self.by_id)]

    def connected(self, connection):
        """Admit a new connection (False: refused, with the reply why, over maxclients)."""
        self.stats.total_connections_received += 1
        session = connection.session
        if len(self.by_id) >= self.config["maxclients"]:
            self.stats.rejected_connections += 1
            session.reply.error("ERR max number of clients reached")
            return False
        session.id = self.next_id
        self.next_id += 1
        self.by_id[session.id] = connection
        if connection.fd >= 0 and not session.unix:
            _set_keepalive(connection.transport.get_extra_info("socket"), self.config["tcp-keepalive"])
        return True

    def unregister(self, connection):
        if self.by_id.get(connection.session.id) is connection:
            del self.by_id[connection.session.id]
            self.monitors.discard(connection)

    def disconnect(self, sessions, caller):
        """Close the sessions' connections: at once, except the caller's, which gets the
        reply of the command it runs first (as Redis closes a client that kills itself)."""
        for session in sessions:
            connection = self.by_id.get(session.id)
            if connection is None:
                continue
            if session is caller:
                session.close_after_command = True
            else:
                connection.close()

    def release_reservations(self, session):
        connection = self.by_id.get(session.id)
        if connection is not None:
            connection.release_reservations()

    def start_monitor(self, session):
        session.monitoring = True
        self.monitors.add(self.by_id[session.id])

    def stop_monitor(self, session):
        session.monitoring = False
        connection = self.by_id.get(session.id)
        if connection is not None:
            self.monitors.discard(connection)

    def info_line(self, session, running=None):
        return info_line(self.by_id[session.id], running)


def client_flags(connection):
    """Redis's flag letters, in its order: O monitor, P subscribed, x MULTI, b blocked (a
    pause holds its command, or WAIT), t tracking (R its redirect is gone, B in BCAST mode),
    d a watched key changed, c closing after the reply, U unix socket, e no-evict; N for none."""
    s = connection.session
    flags = "O" if s.monitoring else ""
    if s.subscribed:
        flags += "P"
    if s.multi is not None:
        flags += "x"
    if s.blocked is not None:
        flags += "b"
    if s.tracking is not None:
        flags += "t" + ("R" if s.tracking.broken_redirect else "") + ("B" if s.tracking.bcast else "")
    if s.watched and watched_keys_changed(s):
        flags += "d"
    if connection.closing:
        flags += "c"
    if s.unix:
        flags += "U"
    if s.no_evict:
        flags += "e"
    return flags or "N"


def info_line(connection, running=None):
    """One CLIENT LIST line: Redis 7.0's fields in its order, then those of Redis 7.2's
    CLIENT SETINFO, then cxlredis's own tenant. `running` is the command the client is
    running (CLIENT LIST/INFO itself, for the caller): its arguments are argv-mem. Buffer
    fields are cxlredis's: qbuf the bytes received and not yet parsed, qbuf-free the room
    left in the input buffer, obl the reply bytes not yet handed to the transport, oll the
    arena values they reference, omem the bytes the transport still holds; tot-mem adds
    them up. Redis's reply-buffer fields (rbs, rbp) are 0: replies have no fixed buffer."""
    s = connection.session
    subs = s.subscriptions
    now = time.monotonic()
    qbuf, qbuf_free = connection.parser.buffered, connection.parser.free
    argv_mem = sum(len(arg) for arg in running) if running else 0
    multi_mem = sum(len(arg) for queued in s.multi for arg in queued) if s.multi else 0
    obl = s.reply.pending
    omem = connection.transport.get_write_buffer_size() if connection.transport is not None else 0
    events = ("" if connection.reading_paused else "r") + ("w" if omem else "")
    return (f"id={s.id} addr={s.addr} laddr={s.laddr} fd={connection.fd} "
            f"name={s.name.decode('utf-8', 'replace')} age={int(now - s.created)} "
            f"idle={int(now - connection.last_interaction)} flags={client_flags(connection)} "
            f"db={s.db} sub={len(subs.channels)} psub={len(subs.patterns)} "
            f"ssub={len(subs.shard_channels)} multi={len(s.multi) if s.multi is not None else -1} "
            f"qbuf={qbuf} qbuf-free={qbuf_free} argv-mem={argv_mem} multi-mem={multi_mem} "
            f"rbs=0 rbp=0 obl={obl} oll={len(connection.inflight_pins)} omem={omem} "
            f"tot-mem={qbuf + qbuf_free + argv_mem + multi_mem + obl + omem} events={events} "
            f"cmd={s.last_command} user={s.user.name.decode('utf-8', 'replace')} "
            f"redir={s.tracking.redirect if s.tracking is not None else -1} "
            f"resp={s.protocol} lib-name={s.lib_name.decode('utf-8', 'replace')} "
            f"lib-ver={s.lib_ver.decode('utf-8', 'replace')} tenant={s.tenant or ''}")


def _set_keepalive(sock, interval):
    if sock is None or not interval or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    if hasattr(socket, "TCP_KEEPIDLE"):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, interval)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(interval // 3, 1))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)


class Flushes:
    """The connections whose replies wait to be sent, written together once the loop has
    run every callback its poll woke: call_soon's callbacks run after those, as Redis
    writes its clients' replies before it sleeps. A connection's pipeline still gets one
    write per batch; what this saves is wake-ups of the peers. Written one connection at
    a time between reads, each reply woke a client process that had gone back to sleep
    after the previous one; a burst of writes finds it awake. (Measured with
    redis-benchmark -P 16 -c 50: the kernel's wake-up path was a quarter of the server's
    CPU before, and each pipelined small command cost 30 % less CPU after.)"""

    def __init__(self):
        self.waiting = []
        # (asyncio.get_running_loop() makes a getpid() system call on Python 3.11, once
        # per loop turn here)
        self.loop = None

    def add(self, client):
        if client.flush_queued:
            return
        client.flush_queued = True
        if not self.waiting:
            if self.loop is None or self.loop.is_closed():
                self.loop = asyncio.get_running_loop()
            self.loop.call_soon(self.run)
        self.waiting.append(client)

    def run(self):
        waiting, self.waiting = self.waiting, []
        for client in waiting:
            client.flush_queued = False
            if client.closing:      # gone, or closed after a reply it flushed itself
                continue
            try:
                client.flush()
            except Exception:   # one connection's failure must not hold the others' replies
                log.exception("Internal error sending replies to %s", client.describe())
                client.close()
