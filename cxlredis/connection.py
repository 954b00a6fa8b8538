"""One client connection: bytes in → parser → dispatch → reply writer → transport.

The protocol is an asyncio BufferedProtocol so the kernel copies socket bytes
straight into the parser's buffer, or, for a large value argument, straight
into the arena slot that will hold the value (invariant: no Python copy of a
large value). Replies that reference arena memory pin their entry until the
transport has flushed them (DESIGN.md invariant 2): the ReplyWriter takes those
pins itself (ReplyWriter.entry), and `inflight_pins` holds them until then.
"""
import asyncio
import logging
import time

from . import dispatch
from .context import CallContext
from .protected import is_local_peer
from .redirects import redirected_unread
from ._resp import ProtocolError, QueryBufferLimit, ReplyWriter, RequestParser, receive_buffer
from ._fastpath import serve as serve_fast
from ._store import Keyspace, OutOfMemory
from .commands import SPECS, find, registry
from .sessions import check_absent_watched_keys
from .slots import SlotArg, release_slots

log = logging.getLogger("cxlredis")

# Stop reading from a client while this much reply data waits in its
# transport: a client that pipelines GETs without reading back must not make
# the server buffer without bound.
OUTPUT_BACKPRESSURE = 8 << 20

# The commands cxlredis._fastpath runs, by their fast_op (its Counters.last).
_FAST_COMMANDS = tuple(sorted((spec for spec in SPECS if spec.fast_op >= 0), key=lambda spec: spec.fast_op))
_FAST_NAMES = tuple(spec.name for spec in _FAST_COMMANDS)


class Client(asyncio.BufferedProtocol):
    """One connection's I/O: the parser and its buffer, the transport, the replies in
    flight and their pins, the output limits. What commands see of it is its session
    (context.CallContext); connections are built by Server.new_connection."""

    def __init__(self, services, large_threshold, fast_counters, flushes):
        self.services = services
        config = services.config
        # one threshold object for the server, read when each decision is made
        self.parser = RequestParser(config["proto-max-bulk-len"], large_threshold,
                                    config["client-query-buffer-limit"])
        self.fast_counters = fast_counters
        self.flushes = flushes
        self.flush_queued = False    # in flushes, to be flushed once the loop's callbacks have run
        now = time.monotonic()
        self.session = CallContext(services, ReplyWriter(2, large_threshold), None, now,
                                   dispatch.call_queued)
        self.transport = None
        self.fd = -1
        self.last_interaction = now
        self.closing = False
        self.reading_paused = False
        self.reading_held = False    # reading paused while its script runs on (resume_after_script)
        self.inflight_pins = []      # arena entries referenced by replies the transport still holds
        self.slots_received = False  # a SlotArg arrived since the last command: release what it left
        self.metered_out = 0         # bytes of the pending replies already metered (see _meter)
        self.soft_limit_since = None  # when the output first went over the soft limit
        self.session.resume = self.resume_after_script
        services.acl.attach(self.session)      # binds the session's store to the user's tenant too

    # --- asyncio protocol ------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        # high=0/low=0: pause_writing fires whenever anything is left unsent and
        # resume_writing exactly when everything is flushed — our unpin signal.
        transport.set_write_buffer_limits(high=0, low=0)
        sock = transport.get_extra_info("socket")
        self.fd = sock.fileno() if sock is not None else -1
        session = self.session
        session.laddr = _format_addr(transport.get_extra_info("sockname"))
        peer = transport.get_extra_info("peername")
        # A unix-socket peer has no name of its own; Redis shows the socket path.
        session.addr = _format_addr(peer) or session.laddr
        unixsocket = self.services.config["unixsocket"]
        session.unix = bool(unixsocket) and session.laddr == f"{unixsocket}:0"
        session.local = session.unix or is_local_peer(peer)
        if transport.get_extra_info("ssl_object") is None:
            session.socket_fd = self.fd
        if not self.services.clients.connected(self):
            self.close_after_reply()

    def connection_lost(self, exc):
        self.closing = True
        self.session.closed = True      # a disk tier read for its command unpins what it brought back
        self.release_reservations()
        services, session = self.services, self.session
        services.leases.disown(session)     # its CXL leases run to their expiry
        self.inflight_pins.extend(session.reply.discard())  # replies that will never be sent
        self._unpin_all()
        services.watchers.discard(session)
        services.blocked.forget(session)     # a pause or a WAIT held it
        services.pubsub.drop_all(session)
        services.tracking.disable(session)
        services.clients.unregister(self)

    def release_reservations(self):
        """Free the arena blocks holding arguments this connection will never store."""
        abandoned = self.parser.drop_target()
        if isinstance(abandoned, SlotArg):
            abandoned.release()  # a client that vanished mid-upload leaves nothing behind
        self.release_pending_slot()
        if self.session.postponed is not None:     # the command a pause held
            release_slots(self.session.postponed)
            self.session.postponed = None
        self.session.discard_multi()

    def get_buffer(self, sizehint):
        return self.parser.get_buffer(sizehint)

    def buffer_updated(self, nbytes):
        self.services.stats.net_input_bytes += nbytes
        self.session.store.add_bytes_in(nbytes)      # metered to the tenant the bytes arrive for
        self.last_interaction = time.monotonic()
        # A large argument arrives over many reads; until its last byte there is nothing
        # to run.
        if self.parser.buffer_updated(nbytes):
            self.process()

    def eof_received(self):
        return False

    def pause_writing(self):
        if not self.reading_paused and self.transport.get_write_buffer_size() > OUTPUT_BACKPRESSURE:
            self.reading_paused = True
            self.transport.pause_reading()

    def resume_writing(self):
        self._unpin_all()
        if self.reading_paused and not self.closing:
            self.reading_paused = False
            self.transport.resume_reading()

    def resume_after_script(self):
        """Its script ended after being suspended (scripting.py), or what blocked it is
        over (blocked.py: the pause that held its command, its WAIT): reply, and go on with
        the input that waited meanwhile (the held command first)."""
        if self.closing:
            return
        if self.reading_held:
            self.reading_held = False
            if not self.reading_paused:
                self.transport.resume_reading()
        self.process()

    # --- the request loop ------------------------------------------------
    def process(self):
        # Each command and its reply are metered to the tenant the session was bound to
        # when the command started (AUTH, HELLO, RESET and TENANT can move it), per batch.
        session, services, parser = self.session, self.services, self.parser
        reply = session.reply
        store, commands = session.store, 0
        # Redis closes a client as soon as its pending replies pass an output limit, not
        # after the whole pipeline: a client that stops reading cannot make us buffer more.
        output_budget = services.clients.output_budget
        while not self.closing and not session.suspended:
            held, session.postponed = session.postponed, None   # the command a pause held (blocked.py)
            if held is None and not session.authenticated:
                # Redis's pre-authentication limits hold while a password is required.
                parser.authenticated = not services.acl.auth_required
            elif held is None:
                parser.authenticated = True
                if (session.multi is None and session.reply_mode == "on" and session.user.unrestricted_keys
                    and registry.fast_names_intact
                        and isinstance(store, Keyspace) and services.monitoring.watch_from_us
                        and not session.asking and not session.subscribed and session.tracking is None
                        and not services.notifications.from_commands and services.scripts.busy is None
                        and not services.blocked.paused):
                    # (watch_from_us is 0 while a client is in MONITOR: the general path refuses
                    # its keyspace commands and feeds every command to it; while clients are
                    # paused every command goes to dispatch, which holds those the pause holds)
                    commands += self._serve_fast(store, output_budget)
                    if services.notifications.noting_drops:
                        services.notifications.publish_drops()
                    if output_budget and reply.pending >= output_budget and self._over_output_limit():
                        break
            try:
                # a held command is dispatched again, with every check, before any later input
                argv = held if held is not None else parser.next_command()
            except ProtocolError as e:
                reply.error("ERR " + str(e))
                log.debug("Protocol error (%s) from client: %s", e, self.describe())
                self.close_after_reply()
                break
            except QueryBufferLimit:
                log.warning("Closing client that reached max query buffer length: %s", self.describe())
                self.close()
                break
            if argv is None:
                wanted = parser.wants_target
                if not wanted:
                    break
                self._supply_target(wanted)
                if parser.filling_target:
                    break
                continue
            if held is None:        # (a held command was counted when it came)
                services.stats.total_commands_processed += 1
                commands += 1
            tracking = services.tracking
            tracking.running = session
            try:
                dispatch.dispatch(session, argv)
            except Exception:  # a bug must cost one reply, not the connection or the server
                log.exception("Internal error dispatching a command")
                reply.error("ERR internal error")
            tracking.command_done(session)
            if services.blocked.ready and services.scripts.busy is None:
                services.blocked.serve_ready()      # the keys it wrote, to clients blocked on them
            if session.store is not store:
                self._meter(store, commands)
                store, commands = session.store, 0
            if self.slots_received and session.multi is None and session.postponed is None:
                self.slots_received = False
                release_slots(argv)
            if session.handed_over:
                store.add_command(commands)
                self.close()
                return
            if session.close_after_command:
                store.add_command(commands)
                self.close_after_reply()
                return
            if session.suspended:
                # the rest of the input waits (resume_after_script): for a script that runs
                # on, unread; for a blocked client, read on, so a client that goes away is
                # seen (the query buffer limit still holds)
                if session.blocked is None:
                    self.transport.pause_reading()
                    self.reading_held = True
                break
            if output_budget and reply.pending >= output_budget and self._over_output_limit():
                break
        if commands:
            store.add_command(commands)
        self.flushes.add(self)

    def _serve_fast(self, store, output_budget):
        """Run the fast commands at the head of the input in C (cxlredis._fastpath), with
        the bookkeeping dispatch.call does; returns how many ran."""
        services, session, fast = self.services, self.session, self.fast_counters
        monitoring = services.monitoring
        cluster = services.cluster
        tracking = services.tracking
        changed = [] if tracking.sessions else None
        ran = serve_fast(self.parser, session.reply, store, store.arena, session.db, fast,
                         monitoring.watch_from_us, output_budget,
                         cluster.serve_here if cluster is not None else None, changed,
                         services.disk_tier is not None)
        if changed:
            # told now, while the replies of the commands that changed them still wait here
            tracking.fast_writes(store, changed, session)
        if ran:
            if services.disk_tier is not None:
                # what its writes' evictions spilled is indexed and the tier's segments move
                # on, as the general path's lookup of a command's keys does (DiskTier.waiting)
                services.disk_tier.settle()
            if services.watchers:
                check_absent_watched_keys(services.watchers)
            stats = services.stats
            stats.total_commands_processed += ran
            fast.fold(stats.command, _FAST_NAMES)
            session.last_command = _FAST_COMMANDS[fast.last].name
            if fast.observed is not None:
                argv, fast.observed = fast.observed, None
                monitoring.after_call(session, _FAST_COMMANDS[fast.last], argv, fast.observed_us)
        return ran

    def _meter(self, store, commands):
        """Charge `store`'s tenant with `commands` and with the replies queued since the
        last charge (the session is about to be metered to another tenant)."""
        store.add_command(commands)
        pending = self.session.reply.pending
        if pending > self.metered_out:
            store.add_bytes_out(pending - self.metered_out)
        self.metered_out = pending

    def _supply_target(self, length):
        """Receive a large argument into an arena slot when it will be stored, else a bytearray."""
        pending = self.parser.pending_args
        spec = find(pending) if pending else None
        # No arena memory for a client that has not authenticated yet.
        cluster = self.services.cluster
        if (spec is not None and spec.is_value_arg(len(pending)) and self.parser.authenticated
                and (cluster is None or not redirected_unread(cluster, spec, pending))):
            store = self.session.store
            key_cap = max((len(a) for a in pending[1:]), default=0)
            try:
                off = store.reserve(length, key_cap)
            except OutOfMemory:
                pass  # the command will meet the OOM itself; keep the bytes on the heap meanwhile
            else:
                self.parser.set_target(store.receive_view(off), SlotArg(store, off, length))
                self.slots_received = True
                return
        target = receive_buffer(length)
        self.parser.set_target(target, target)

    def release_pending_slot(self):
        for arg in self.parser.pending_args:
            if isinstance(arg, SlotArg):
                arg.release()

    def flush(self):
        if self.transport is None or self.transport.is_closing() and not self.closing:
            return
        reply = self.session.reply
        if reply.pending:
            # Counted from the reply, not the transport's buffer: a transport sends what it
            # can at once, and a TLS transport buffers ciphertext, not reply bytes.
            self.services.stats.net_output_bytes += reply.pending
            if reply.pending > self.metered_out:
                self.session.store.add_bytes_out(reply.pending - self.metered_out)
            self.inflight_pins.extend(reply.flush(self.transport))
        self.metered_out = 0
        queued = self.transport.get_write_buffer_size()
        if self.inflight_pins and queued == 0:
            self._unpin_all()
        elif queued:
            self.check_output_limit(queued)

    def _over_output_limit(self):
        """check_output_limit on the replies not yet handed to the transport plus what
        it still holds; True if that closed the client."""
        self.check_output_limit(self.session.reply.pending + self.transport.get_write_buffer_size())
        return self.closing

    def check_output_limit(self, queued):
        """client-output-buffer-limit, as Redis applies it: over the hard limit, or over the
        soft one for longer than its seconds, the client is closed. A subscribed client is
        in the pubsub class."""
        limits = self.services.config["client-output-buffer-limit"]
        hard, soft, soft_seconds = limits["pubsub" if self.session.subscribed else "normal"]
        if soft and queued > soft:
            if self.soft_limit_since is None:
                self.soft_limit_since = time.monotonic()
            over_soft = time.monotonic() - self.soft_limit_since > soft_seconds
        else:
            self.soft_limit_since = None
            over_soft = False
        if (hard and queued > hard) or over_soft:
            log.warning("Client %s scheduled to be closed ASAP for overcoming of output buffer limits.",
                        self.describe())
            self.close()

    def _unpin_all(self):
        pins, self.inflight_pins = self.inflight_pins, []
        for arena, off in pins:
            arena.unpin(off)

    def close_after_reply(self):
        self.closing = True
        self.flush()
        self.transport.close()

    def close(self):
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    def describe(self):
        s = self.session
        return f"id={s.id} addr={s.addr} laddr={s.laddr} name={s.name.decode('utf-8', 'replace')}"


def _format_addr(addr):
    if not addr:
        return ""
    if isinstance(addr, str):
        return f"{addr}:0"
    host, port = addr[0], addr[1]
    return f"{host}:{port}"
