"""`python -m cxlredis.healthcheck`: is a cxlredis server answering? (Kubernetes probes.)

Connects over a unix socket or TCP, sends PING and exits 0 when the server
answers ``+PONG`` or ``-NOAUTH ...``: a server that demands a password still
proves with NOAUTH that its event loop reads, parses and replies, so a probe
needs no credentials. Anything else (refused, timed out, closed, another
reply) exits 1 with the reason on stderr. Standard library only: it starts
in a few tens of milliseconds and imports nothing of the server.
"""
from __future__ import annotations

import argparse
import socket
import sys
import time

PING = b"*1\r\n$4\r\nPING\r\n"
HEALTHY_PREFIXES = (b"+PONG", b"-NOAUTH ")


class Unhealthy(Exception):
    pass


def _connect(address, timeout: float) -> socket.socket:
    if isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address)
        return sock
    return socket.create_connection(address, timeout=timeout)


def check(address, timeout: float = 2.0) -> str:
    """PING the server at `address` (a unix socket path, or a (host, port) pair) and
    return its reply line; raises Unhealthy when it is not a healthy answer."""
    deadline = time.monotonic() + timeout
    try:
        with _connect(address, timeout) as sock:
            sock.sendall(PING)
            reply = b""
            while b"\r\n" not in reply:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise socket.timeout
                sock.settimeout(remaining)
                chunk = sock.recv(512)
                if not chunk:
                    raise Unhealthy(f"connection closed after {reply!r}")
                reply += chunk
    except (socket.timeout, TimeoutError):
        raise Unhealthy(f"no reply to PING within {timeout:g} s") from None
    except OSError as error:
        raise Unhealthy(f"cannot connect: {error.strerror or error}") from None
    line = reply.split(b"\r\n", 1)[0]
    if not line.startswith(HEALTHY_PREFIXES):
        raise Unhealthy(f"unexpected reply to PING: {line.decode('utf-8', 'replace')}")
    return line.decode("utf-8", "replace")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cxlredis.healthcheck",
        description="Exit 0 if a cxlredis server answers PING (+PONG or -NOAUTH), 1 otherwise.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--unixsocket", metavar="PATH", help="connect to this unix socket")
    where.add_argument("--host", default="127.0.0.1", help="TCP host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=6379, help="TCP port (default 6379)")
    parser.add_argument("--timeout", type=float, default=2.0,
                        help="seconds for connecting and the reply together (default 2)")
    args = parser.parse_args(argv)
    address = args.unixsocket if args.unixsocket else (args.host, args.port)
    try:
        check(address, args.timeout)
    except Unhealthy as problem:
        print(f"unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
