"""MIGRATE's side of the wire: blocking connections to target instances, cached per
host:port as Redis's migrate_cached_sockets are, and the exchange Redis's
migrateCommand has over one.

MIGRATE blocks the server while it transfers, as Redis does: every step waits on the
socket for at most the command's timeout — the connect, each write and each read of
the replies. What is written goes out with sendmsg over the buffers as they are, so a
large value is handed from its arena view to the kernel, never joined into a copy.

A connection stays cached, with the db it last SELECTed, for the next MIGRATE to the
same host:port (the same strings: Redis keys its cache by them) until it has been idle
for more than 10 s (`close_idle`, from the server's cron) or an I/O error closes it; at
most 64 are kept, a random one making room for a new one.
"""
import errno
import random
import re
import select
import socket
import time

CACHE_TTL_S = 10            # Redis's MIGRATE_SOCKET_CACHE_TTL
CACHE_ITEMS = 64            # Redis's MIGRATE_SOCKET_CACHE_ITEMS
_IOV_BATCH = 512            # buffers per sendmsg, under any IOV_MAX
_MAX_WAIT_MS = (1 << 31) - 1    # poll() takes an int of ms: a longer timeout waits this long
_RECV_BYTES = 65536

CONNECT_ERROR = "IOERR error or timeout connecting to the client"
WRITE_ERROR = "IOERR error or timeout writing to target instance"
READ_ERROR = "IOERR error or timeout reading to target instance"
TARGET_ERROR = "ERR Target instance replied with error: "

# C's atoi: optional blanks and sign, then the digits up to the first other character.
_ATOI = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def resp_command(*args):
    """A command as a RESP multibulk request (arguments are bytes)."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(parts)


def restore_command(key, ttl_ms, head, body, footer, replace, by_reference_from, asking, tenant=None):
    """The buffers of one RESTORE (RESTORE-ASKING if asking: a cluster node sends that, so
    the target takes it into a slot it is importing) key ttl payload [REPLACE] [TENANT
    name], the payload given as its parts; a body of by_reference_from bytes or more stays
    a buffer of its own (an arena view: sent as it is), anything smaller is joined with
    the framing. TENANT (RESTORE-ASKING between cxlredis nodes) names the tenant whose key
    it is."""
    name = b"RESTORE-ASKING" if asking else b"RESTORE"
    options = b"$7\r\nREPLACE\r\n" if replace else b""
    if tenant is not None:
        tenant = tenant.encode("latin-1")
        options += b"$6\r\nTENANT\r\n$%d\r\n%s\r\n" % (len(tenant), tenant)
    framing = bytearray(b"*%d\r\n$%d\r\n%s\r\n$%d\r\n" % (4 + replace + 2 * (tenant is not None),
                                                          len(name), name, len(key)))
    framing += key
    ttl = b"%d" % ttl_ms
    framing += b"\r\n$%d\r\n%s\r\n$%d\r\n" % (len(ttl), ttl, len(head) + len(body) + len(footer))
    framing += head
    tail = footer + b"\r\n" + options
    if len(body) >= by_reference_from:
        return [framing, body, tail]
    framing += body
    framing += tail
    return [framing]


def _port_number(port):
    """The port as Redis reads it (atoi: "abc" is 0), as the decimal getaddrinfo takes."""
    found = _ATOI.match(port)
    return b"%d" % int(found.group(1)) if found else b"0"


def _connect(host, port, timeout_ms):
    """Redis's blocking connect (connSocketBlockingConnect): a non-blocking connect to
    the first address that takes it, then a wait of up to timeout_ms for it to
    complete. As there, only a connect that fails at once (no such host, no route) is
    an error; a refused or unfinished one is found out by the first write."""
    try:
        addresses = socket.getaddrinfo(host, _port_number(port), type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        return None
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        if sock.connect_ex(address) in (0, errno.EINPROGRESS):
            waiting = select.poll()
            waiting.register(sock, select.POLLOUT)
            waiting.poll(timeout_ms)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        sock.close()
    return None


class Link:
    """One cached connection to a target, and the db it last SELECTed there (-1: unknown)."""

    __slots__ = ("sock", "last_db", "last_use", "received")

    def __init__(self, sock, now):
        self.sock = sock
        self.last_db = -1
        self.last_use = now
        self.received = bytearray()

    def send(self, buffers, timeout):
        """Write the buffers in order; each sendmsg waits up to timeout seconds for room."""
        self.sock.settimeout(timeout)
        views = [memoryview(buffer).cast("B") for buffer in buffers if len(buffer)]
        i = 0
        while i < len(views):
            sent = self.sock.sendmsg(views[i:i + _IOV_BATCH])
            while sent:
                size = len(views[i])
                if sent < size:
                    views[i] = views[i][sent:]
                    break
                sent -= size
                i += 1

    def read_line(self, timeout):
        """The next reply line without its CRLF, as Redis's syncReadLine reads it: a
        TimeoutError when nothing arrives for timeout seconds, ConnectionError at the end
        of the stream, and an empty line counts as a failed read."""
        self.sock.settimeout(timeout)
        while True:
            end = self.received.find(b"\n")
            if end >= 0:
                line = bytes(self.received[:end])
                del self.received[:end + 1]
                line = line[:-1] if line.endswith(b"\r") else line
                if not line:
                    raise ConnectionError("an empty reply line")
                return line
            chunk = self.sock.recv(_RECV_BYTES)
            if not chunk:
                raise ConnectionError("the target closed the connection")
            self.received += chunk

    def close(self):
        self.sock.close()


class MigrateLinks:
    """The server's cached connections to MIGRATE targets (a service of the commands)."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.links = {}

    def _link(self, host, port, timeout_ms):
        """The cached connection to host:port, or a new one; None if it cannot be made."""
        key = (bytes(host), bytes(port))
        link = self.links.get(key)
        if link is None:
            if len(self.links) >= CACHE_ITEMS:
                self.links.pop(random.choice(list(self.links))).close()
            sock = _connect(key[0], key[1], timeout_ms)
            if sock is None:
                return None, key
            link = self.links[key] = Link(sock, self.clock())
        link.last_use = self.clock()
        return link, key

    def _drop(self, key):
        link = self.links.pop(key, None)
        if link is not None:
            link.close()

    def close_idle(self):
        """Close the connections idle for more than CACHE_TTL_S (Redis's cron does it once a second)."""
        now = self.clock()
        for key in [key for key, link in self.links.items() if now - link.last_use > CACHE_TTL_S]:
            self._drop(key)

    def close_all(self):
        for key in list(self.links):
            self._drop(key)

    def transfer(self, host, port, timeout_ms, db, auth, restores):
        """MIGRATE's exchange with host:port: AUTH with the arguments `auth` (none: no
        AUTH), SELECT db unless the connection has it selected, then the RESTOREs (each a
        list of buffers, see restore_command), pipelined; then every reply is read.

        Returns (indexes of the RESTOREs the target accepted, MIGRATE's error or None).
        As in Redis: the first error the target answers is the reply (an AUTH or SELECT
        error stands for every RESTORE); a failure before any RESTORE reply is retried once
        on a new connection unless it was a timeout; an I/O failure closes the connection."""
        timeout_ms = min(timeout_ms, _MAX_WAIT_MS)
        timeout = timeout_ms / 1000
        retry = True
        while True:
            link, key = self._link(host, port, timeout_ms)
            if link is None:
                return [], CONNECT_ERROR
            selecting = link.last_db != db
            preamble = resp_command(b"AUTH", *auth) if auth else b""
            if selecting:
                preamble += resp_command(b"SELECT", b"%d" % db)
            try:
                link.send([preamble] + [buffer for restore in restores for buffer in restore], timeout)
            except OSError as failure:
                self._drop(key)
                if retry and not isinstance(failure, TimeoutError):
                    retry = False
                    continue
                return [], WRITE_ERROR
            accepted, error = [], None
            try:
                refusal = None
                for wanted in (bool(auth), selecting):
                    line = link.read_line(timeout) if wanted else b""
                    if refusal is None and line.startswith(b"-"):
                        refusal = line
                for index in range(len(restores)):
                    line = link.read_line(timeout)
                    answer = refusal or line
                    if not answer.startswith(b"-"):
                        accepted.append(index)
                    elif error is None:
                        link.last_db = -1
                        error = TARGET_ERROR + answer[1:].decode("utf-8", "surrogateescape")
            except OSError as failure:
                self._drop(key)
                if error is None and not accepted and retry and not isinstance(failure, TimeoutError):
                    retry = False
                    continue
                return accepted, error or READ_ERROR
            if error is None:
                link.last_db = db
            return accepted, error
