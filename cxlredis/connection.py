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
from ._resp import ProtocolError, QueryBufferLimit, ReplyWriter, RequestParser, receive_buffer
from ._fastpath import serve as serve_fast
from ._store import Keyspace, OutOfMemory
from .commands import COMMANDS, find
from .sessions import check_absent_watched_keys
from .slots import SlotArg, release_slots

log = logging.getLogger("cxlredis")

# Stop reading from a client while this much reply data waits in its
# transport: a client that pipelines GETs without reading back must not make
# the server buffer without bound.
OUTPUT_BACKPRESSURE = 8 << 20

# The commands cxlredis._fastpath runs, by its Counters.last code.
_FAST_COMMANDS = (COMMANDS["get"], COMMANDS["set"])


class Client(asyncio.BufferedProtocol):
    """Per-connection state, as CLIENT LIST shows it, plus the I/O plumbing."""

    def __init__(self, server):
        self.server = server
        self.store = server.store
        cfg = server.config
        # one threshold object for the server, read when each decision is made
        self.parser = RequestParser(cfg["proto-max-bulk-len"], server.large_threshold,
                                    cfg["client-query-buffer-limit"])
        self.reply = ReplyWriter(2, server.large_threshold)
        self.transport = None
        self.id = 0
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.addr = self.laddr = ""
        self.fd = -1
        self.created = self.last_interaction = time.monotonic()
        self.db = 0
        self.protocol = 2
        self.multi = None            # queued argv lists while in MULTI
        self.multi_dirty = False     # an error while queueing: EXEC answers EXECABORT
        self.watched = {}            # (db, key) → generation when WATCHed
        self.watch_dirty = False     # a key WATCHed while absent was created since
        self.reply_mode = "on"       # CLIENT REPLY on|off|skip
        self.no_evict = False
        self.last_command = "NULL"
        self.closing = False
        self.killed = False
        self.reading_paused = False
        self.inflight_pins = []      # arena entries referenced by replies the transport still holds
        self.slots_received = False  # a SlotArg arrived since the last command: release what it left
        self.user = None             # the ACL user, and whether it authenticated (acl.Acl.attach)
        self.authenticated = False
        self.close_after_command = False    # e.g. ACL DELUSER of its own user: reply, then close
        self.tenant = None           # the tenant's name, None for an administrator (tenants.bind)
        self.metered_out = 0         # bytes of the pending replies already metered (see _meter)
        self.soft_limit_since = None  # when the output first went over the soft limit
        server.acl.attach(self)      # binds self.store to the user's tenant too

    # --- asyncio protocol ------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        # high=0/low=0: pause_writing fires whenever anything is left unsent and
        # resume_writing exactly when everything is flushed — our unpin signal.
        transport.set_write_buffer_limits(high=0, low=0)
        sock = transport.get_extra_info("socket")
        self.fd = sock.fileno() if sock is not None else -1
        self.laddr = _format_addr(transport.get_extra_info("sockname"))
        # A unix-socket peer has no name of its own; Redis shows the socket path.
        self.addr = _format_addr(transport.get_extra_info("peername")) or self.laddr
        self.server.client_connected(self)

    def connection_lost(self, exc):
        self.closing = True
        self.release_reservations()
        self.server.leases.disown(self)     # its CXL leases run to their expiry
        self.inflight_pins.extend(self.reply.discard())  # replies that will never be sent
        self._unpin_all()
        self.server.absent_watchers.discard(self)
        self.server.client_disconnected(self)

    def release_reservations(self):
        """Free the arena blocks holding arguments this connection will never store."""
        abandoned = self.parser.drop_target()
        if isinstance(abandoned, SlotArg):
            abandoned.release()  # a client that vanished mid-upload leaves nothing behind
        self.release_pending_slot()
        self.discard_multi()

    def get_buffer(self, sizehint):
        return self.parser.get_buffer(sizehint)

    def buffer_updated(self, nbytes):
        self.server.stats.net_input_bytes += nbytes
        self.store.add_bytes_in(nbytes)      # metered to the tenant the bytes arrive for
        self.last_interaction = time.monotonic()
        self.parser.buffer_updated(nbytes)
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

    # --- the request loop ------------------------------------------------
    def process(self):
        # Each command and its reply are metered to the tenant the connection was bound to
        # when the command started (AUTH, HELLO, RESET and TENANT can move it), per batch.
        store, commands = self.store, 0
        # Redis closes a client as soon as its pending replies pass an output limit, not
        # after the whole pipeline: a client that stops reading cannot make us buffer more.
        hard, soft, _ = self.server.config["client-output-buffer-limit"]["normal"]
        output_budget = min(hard or soft, soft or hard)     # the lower limit set; 0 if none
        while not self.closing:
            if not self.authenticated:
                # Redis's pre-authentication limits hold while a password is required.
                self.parser.authenticated = not self.server.acl.auth_required
            elif (self.multi is None and self.reply_mode == "on" and self.user.unrestricted
                  and isinstance(store, Keyspace) and self.server.monitoring.watch_from_us):
                # (watch_from_us is 0 while a client is in MONITOR: the general path refuses
                # its keyspace commands and feeds every command to it)
                commands += self._serve_fast(store, output_budget)
                if output_budget and self.reply.pending >= output_budget and self._over_output_limit():
                    break
            try:
                argv = self.parser.next_command()
            except ProtocolError as e:
                self.reply.error("ERR " + str(e))
                log.debug("Protocol error (%s) from client: %s", e, self.describe())
                self.close_after_reply()
                break
            except QueryBufferLimit:
                log.warning("Closing client that reached max query buffer length: %s", self.describe())
                self.close()
                break
            if argv is None:
                wanted = self.parser.wants_target
                if not wanted:
                    break
                self._supply_target(wanted)
                continue
            self.server.stats.total_commands_processed += 1
            commands += 1
            try:
                dispatch.dispatch(self, argv)
            except Exception:  # a bug must cost one reply, not the connection or the server
                log.exception("Internal error dispatching a command")
                self.reply.error("ERR internal error")
            if self.store is not store:
                self._meter(store, commands)
                store, commands = self.store, 0
            if self.slots_received and self.multi is None:
                self.slots_received = False
                release_slots(argv)
            if self.close_after_command:
                store.add_command(commands)
                self.close_after_reply()
                return
            if output_budget and self.reply.pending >= output_budget and self._over_output_limit():
                break
        if commands:
            store.add_command(commands)
        self.flush()

    def _serve_fast(self, store, output_budget):
        """Run the plain GETs and SETs at the head of the input in C (cxlredis._fastpath),
        with the bookkeeping dispatch.call does; returns how many ran."""
        server = self.server
        fast = server.fast_counters
        ran = serve_fast(self.parser, self.reply, store, store.arena, self.db, fast,
                         server.monitoring.watch_from_us, output_budget)
        if ran:
            if server.absent_watchers:
                check_absent_watched_keys(server)
            server.stats.total_commands_processed += ran
            fast.fold(server.stats.command("get"), server.stats.command("set"))
            self.last_command = _FAST_COMMANDS[fast.last].name
            if fast.observed is not None:
                argv, fast.observed = fast.observed, None
                server.monitoring.after_call(self, _FAST_COMMANDS[fast.last], argv, fast.observed_us)
        return ran

    def _meter(self, store, commands):
        """Charge `store`'s tenant with `commands` and with the replies queued since the
        last charge (the connection is about to be metered to another tenant)."""
        store.add_command(commands)
        if self.reply.pending > self.metered_out:
            store.add_bytes_out(self.reply.pending - self.metered_out)
        self.metered_out = self.reply.pending

    def _supply_target(self, length):
        """Receive a large argument into an arena slot when it will be stored, else a bytearray."""
        pending = self.parser.pending_args
        spec = find(pending) if pending else None
        # No arena memory for a client that has not authenticated yet.
        if spec is not None and spec.is_value_arg(len(pending)) and self.parser.authenticated:
            key_cap = max((len(a) for a in pending[1:]), default=0)
            try:
                off = self.store.reserve(length, key_cap)
            except OutOfMemory:
                pass  # the command will meet the OOM itself; keep the bytes on the heap meanwhile
            else:
                self.parser.set_target(self.store.slot(off), SlotArg(self.store, off, length))
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
        if self.reply.pending:
            # Counted from the reply, not the transport's buffer: a transport sends what it
            # can at once, and a TLS transport buffers ciphertext, not reply bytes.
            self.server.stats.net_output_bytes += self.reply.pending
            if self.reply.pending > self.metered_out:
                self.store.add_bytes_out(self.reply.pending - self.metered_out)
            self.inflight_pins.extend(self.reply.flush(self.transport))
        self.metered_out = 0
        queued = self.transport.get_write_buffer_size()
        if self.inflight_pins and queued == 0:
            self._unpin_all()
        elif queued:
            self.check_output_limit(queued)

    def _over_output_limit(self):
        """check_output_limit on the replies not yet handed to the transport plus what
        it still holds; True if that closed the client."""
        self.check_output_limit(self.reply.pending + self.transport.get_write_buffer_size())
        return self.closing

    def check_output_limit(self, queued):
        """client-output-buffer-limit (normal class), as Redis applies it: over the hard
        limit, or over the soft one for longer than its seconds, the client is closed."""
        hard, soft, soft_seconds = self.server.config["client-output-buffer-limit"]["normal"]
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

    # --- helpers for handlers ------------------------------------------
    def store_value(self, key, value, expire_at=-1, keep_ttl=False):
        """Store a string value under key in the current db, zero-copy when it arrived in a slot."""
        if isinstance(value, SlotArg):
            return value.commit(self.db, key, expire_at, keep_ttl)
        return self.store.set(self.db, key, value, expire_at, 0, keep_ttl)

    def set_protocol(self, protover):
        self.protocol = protover
        self.reply.protocol = protover

    def unwatch_all(self):
        self.watched.clear()
        self.watch_dirty = False
        self.server.absent_watchers.discard(self)

    def discard_multi(self):
        if self.multi is not None:
            for argv in self.multi:
                release_slots(argv)
        self.multi = None
        self.multi_dirty = False

    def run_queued(self, argv):
        """Run a command EXEC takes from the MULTI queue, through dispatch."""
        dispatch.call_queued(self, argv)

    def close_after_reply(self):
        self.closing = True
        self.flush()
        self.transport.close()

    def close(self):
        self.closing = True
        if self.transport is not None:
            self.transport.abort()

    def describe(self):
        return f"id={self.id} addr={self.addr} laddr={self.laddr} name={self.name.decode('utf-8', 'replace')}"


def _format_addr(addr):
    if not addr:
        return ""
    if isinstance(addr, str):
        return f"{addr}:0"
    host, port = addr[0], addr[1]
    return f"{host}:{port}"
