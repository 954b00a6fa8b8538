"""A minimal RESP2 client built so that it is never the bottleneck for blobs.

* SET hands the kernel the command header, the caller's value buffer(s) and
  the trailing CRLF in one ``sendmsg`` call: the value is never concatenated
  or copied in Python.
* GET parses the ``$<len>`` header from a small read buffer, copies only the
  few payload bytes that arrived with the header, then ``recv_into`` the
  caller's preallocated buffer (bytearray, numpy array, any writable buffer)
  for the rest: one copy, kernel to destination.
* Pipelined variants send a batch of commands before reading the replies.

Only what the benchmarks need is here; it is not a general Redis client.
"""

import socket

CRLF = b"\r\n"
READ_CHUNK = 256 * 1024
IOV_MAX = 1024  # Linux limit on buffers per sendmsg call
PIPELINE_BATCH = 256  # commands in flight before their replies are drained


class ReplyError(Exception):
    """An error reply (``-ERR ...``) from the server."""


def _as_bytes(arg) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, str):
        return arg.encode()
    if isinstance(arg, int):
        return b"%d" % arg
    return bytes(arg)


def encode_command(args) -> bytes:
    """RESP array of bulk strings for small arguments."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = _as_bytes(arg)
        parts.append(b"$%d\r\n" % len(data))
        parts.append(data)
        parts.append(CRLF)
    return b"".join(parts)


def _byte_views(value):
    """The value as a list of flat byte views (a value may be given in parts)."""
    if isinstance(value, (list, tuple)):
        return [memoryview(part).cast("B") for part in value]
    return [memoryview(value).cast("B")]


class BlobClient:
    def __init__(self, host: str = "127.0.0.1", port: int = 6379, *,
                 timeout: float | None = None):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._rbuf = bytearray(READ_CHUNK)
        self._rview = memoryview(self._rbuf)
        self._start = 0  # first unread byte in _rbuf
        self._end = 0    # one past the last received byte in _rbuf

    def close(self) -> None:
        self._rview.release()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- sending -----------------------------------------------------------
    def _send_parts(self, parts) -> None:
        """sendmsg all parts, resuming after partial sends without copying."""
        while parts:
            batch = parts[:IOV_MAX]
            sent = self.sock.sendmsg(batch)
            total = sum(part.nbytes if isinstance(part, memoryview) else len(part)
                        for part in batch)
            if sent == total:
                parts = parts[IOV_MAX:]
                continue
            views = [memoryview(part) for part in parts]
            while sent:
                head = views[0]
                if sent >= head.nbytes:
                    sent -= head.nbytes
                    views.pop(0)
                else:
                    views[0] = head[sent:]
                    sent = 0
            parts = views

    @staticmethod
    def _set_parts(key, value, extra_args=()):
        key = _as_bytes(key)
        views = _byte_views(value)
        length = sum(view.nbytes for view in views)
        extra = [_as_bytes(arg) for arg in extra_args]
        header = b"*%d\r\n$3\r\nSET\r\n$%d\r\n%b\r\n$%d\r\n" % (
            3 + len(extra), len(key), key, length)
        tail = CRLF
        if extra:
            tail = CRLF + b"".join(b"$%d\r\n%b\r\n" % (len(arg), arg) for arg in extra)
        return [header, *views, tail]

    # -- receiving ---------------------------------------------------------
    def _fill(self) -> None:
        """Receive more bytes into the read buffer, compacting it if full."""
        if self._start == self._end:
            self._start = self._end = 0
        elif self._end == len(self._rbuf):
            pending = self._end - self._start
            if self._start == 0:  # a single line longer than the buffer
                self._rbuf.extend(bytes(len(self._rbuf)))
                self._rview.release()
                self._rview = memoryview(self._rbuf)
            else:
                self._rview[:pending] = self._rview[self._start:self._end]
                self._start, self._end = 0, pending
        received = self.sock.recv_into(self._rview[self._end:])
        if received == 0:
            raise ConnectionError("server closed the connection")
        self._end += received

    def _readline(self) -> bytes:
        while True:
            eol = self._rbuf.find(CRLF, self._start, self._end)
            if eol >= 0:
                line = bytes(self._rview[self._start:eol])
                self._start = eol + 2
                return line
            self._fill()

    def _read_exact_into(self, target: memoryview) -> None:
        """Fill target: first from the read buffer, then straight from the socket."""
        wanted = target.nbytes
        buffered = min(self._end - self._start, wanted)
        if buffered:
            target[:buffered] = self._rview[self._start:self._start + buffered]
            self._start += buffered
        got = buffered
        while got < wanted:
            received = self.sock.recv_into(target[got:])
            if received == 0:
                raise ConnectionError("server closed the connection")
            got += received

    def _skip_crlf(self) -> None:
        while self._end - self._start < 2:
            self._fill()
        self._start += 2

    def read_reply(self):
        """One RESP2 reply: str-free (bytes, int, None, list); raises ReplyError."""
        line = self._readline()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise ReplyError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            length = int(rest)
            if length < 0:
                return None
            data = bytearray(length)
            self._read_exact_into(memoryview(data))
            self._skip_crlf()
            return bytes(data)
        if kind == b"*":
            count = int(rest)
            if count < 0:
                return None
            return [self.read_reply() for _ in range(count)]
        raise ConnectionError(f"unexpected reply line {line[:60]!r}")

    def _read_bulk_into(self, out) -> int:
        """Read a bulk reply into out; return its length or -1 for nil."""
        line = self._readline()
        if line[:1] == b"-":
            raise ReplyError(line[1:].decode(errors="replace"))
        if line[:1] != b"$":
            raise ConnectionError(f"expected a bulk reply, got {line[:60]!r}")
        length = int(line[1:])
        if length < 0:
            return -1
        view = memoryview(out).cast("B")
        if length > view.nbytes:
            raise ValueError(f"value of {length} bytes does not fit a {view.nbytes} byte buffer")
        self._read_exact_into(view[:length])
        self._skip_crlf()
        return length

    # -- commands ----------------------------------------------------------
    def execute(self, *args):
        """Send one command of small arguments and return its reply."""
        self.sock.sendall(encode_command(args))
        return self.read_reply()

    def execute_many(self, commands) -> list:
        """Pipeline small commands; error replies come back as ReplyError objects."""
        replies = []
        for first in range(0, len(commands), PIPELINE_BATCH):
            batch = commands[first:first + PIPELINE_BATCH]
            self.sock.sendall(b"".join(encode_command(args) for args in batch))
            for _ in batch:
                try:
                    replies.append(self.read_reply())
                except ReplyError as error:
                    replies.append(error)
        return replies

    def set(self, key, value, *extra_args) -> None:
        """SET key value [extra args]; value is a buffer or a list of buffers."""
        self._send_parts(self._set_parts(key, value, extra_args))
        reply = self.read_reply()
        if reply != b"OK":
            raise ReplyError(f"SET replied {reply!r}")

    def set_many(self, items) -> None:
        """Pipelined SETs of (key, value) pairs."""
        for first in range(0, len(items), PIPELINE_BATCH):
            batch = items[first:first + PIPELINE_BATCH]
            parts = []
            for key, value in batch:
                parts.extend(self._set_parts(key, value))
            self._send_parts(parts)
            failures = []
            for key, _ in batch:
                try:
                    self.read_reply()
                except ReplyError as error:
                    failures.append((key, error))
            if failures:
                raise ReplyError(f"{len(failures)} SETs failed, first: {failures[0]}")

    def get_into(self, key, out) -> int:
        """GET key into the writable buffer out; return the length, -1 if missing."""
        key = _as_bytes(key)
        self.sock.sendall(b"*2\r\n$3\r\nGET\r\n$%d\r\n%b\r\n" % (len(key), key))
        return self._read_bulk_into(out)

    def get_many_into(self, keys, outs) -> list[int]:
        """Pipelined GETs, each into its own buffer; lengths (-1 = missing)."""
        lengths = []
        for first in range(0, len(keys), PIPELINE_BATCH):
            batch = [_as_bytes(key) for key in keys[first:first + PIPELINE_BATCH]]
            self.sock.sendall(b"".join(
                b"*2\r\n$3\r\nGET\r\n$%d\r\n%b\r\n" % (len(key), key) for key in batch))
            for out in outs[first:first + len(batch)]:
                lengths.append(self._read_bulk_into(out))
        return lengths

    def get(self, key) -> bytes | None:
        """GET for small values (allocates)."""
        return self.execute(b"GET", key)

    def exists(self, *keys) -> int:
        return self.execute(b"EXISTS", *keys)

    def delete(self, *keys) -> int:
        return self.execute(b"DEL", *keys)

    def ping(self) -> bool:
        return self.execute(b"PING") == b"PONG"
