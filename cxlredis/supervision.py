"""Running under a supervisor or in the background, as redis-server does.

`daemonize yes` detaches the server from the terminal (the process that started it
returns at once); `supervised` tells systemd (READY=1 over NOTIFY_SOCKET, for a
Type=notify unit) or upstart (a SIGSTOP) that the server is ready. A supervised
server stays in the foreground even with daemonize yes, as Redis's does.
"""
import os
import signal
import socket

# Where a daemon's pid goes when pidfile names no file (Redis's is /var/run/redis.pid).
DEFAULT_PIDFILE = "/var/run/cxlredis.pid"


def supervisor(mode: str, environ=os.environ) -> str | None:
    """"systemd", "upstart" or None for the `supervised` mode; auto looks at the environment."""
    if mode == "auto":
        if "UPSTART_JOB" in environ:
            return "upstart"
        return "systemd" if "NOTIFY_SOCKET" in environ else None
    return mode if mode in ("systemd", "upstart") else None


def daemonize() -> None:
    """Go on in a child with a session of its own, reading and writing /dev/null; the
    starting process exits at once with 0. Call it before any thread or loop exists."""
    if os.fork():
        os._exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def notify_ready(kind: str | None, log) -> None:
    """Tell the supervisor the server accepts connections."""
    if kind == "upstart":
        os.environ.pop("UPSTART_JOB", None)
        os.kill(os.getpid(), signal.SIGSTOP)    # upstart's `expect stop`: it resumes us
    elif kind == "systemd":
        address = os.environ.get("NOTIFY_SOCKET", "")
        if not address:
            log.warning("systemd supervision requested or auto-detected, but NOTIFY_SOCKET "
                        "is not set")
            return
        if address.startswith("@"):             # an abstract socket
            address = "\0" + address[1:]
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify:
                notify.sendto(b"STATUS=Ready to accept connections\nREADY=1\n", address)
        except OSError as error:
            log.warning("Could not notify systemd through NOTIFY_SOCKET %s: %s",
                        os.environ["NOTIFY_SOCKET"], error)
