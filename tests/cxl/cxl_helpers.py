"""Helpers for the co-located access tests (no conftest.py here: see tests/conftest.py).

``cxl_server(lines=(), **options) -> ServerProcess``  a cxlredis (always: the CXL
    family is ours) with `lines` in a config file of its own; not started.
``unix_client(server, **kwargs) -> redis.Redis``  redis-py over the unix socket.
``local(server, **kwargs) -> LocalClient``  cxlredis.local over the unix socket.
``info(client) -> dict``  CXL INFO as {str: int | str}.
``corrupt(path, marker, offset=0)``  flip one byte of the value that starts with
    `marker` in the arena file at `path`, `offset` bytes into it, as failing memory
    (or a stray writer) would.
``PASSWORD``, ``USERS``  user lines with password ``pw``: admin (+@all), mapper
    (+@cxl plus strings), reader (+@read +@string, no @cxl), tenant-user (+@all,
    bound to tenant team-a by TENANT_LINES).
"""
from __future__ import annotations

import mmap

import redis

from conftest import ServerProcess
from cxlredis.local import LocalClient

PASSWORD = "pw"
USERS = [
    f"user admin on >{PASSWORD} ~* &* +@all",
    f"user mapper on >{PASSWORD} ~* +@cxl +@string +@connection",
    f"user reader on >{PASSWORD} ~* +@read +@string +@connection",
    f"user tenant-user on >{PASSWORD} ~* &* +@all",
]
TENANT_LINES = ["tenant team-a users tenant-user"]


def cxl_server(lines=(), **options) -> ServerProcess:
    server = ServerProcess("cxlredis", {name.replace("_", "-"): value for name, value in options.items()})
    if lines:
        conf = server.dir / "cxlredis.conf"
        conf.write_text("".join(line + "\n" for line in lines))
        server.conf = str(conf)
    return server


def unix_client(server, **kwargs) -> redis.Redis:
    return redis.Redis(unix_socket_path=server.unixsocket, socket_timeout=10, **kwargs)


def local(server, **kwargs) -> LocalClient:
    return LocalClient(unix_socket_path=server.unixsocket, socket_timeout=10, **kwargs)


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def info(client) -> dict:
    reply = client.execute_command("CXL", "INFO")
    if isinstance(reply, list):
        reply = dict(zip(reply[0::2], reply[1::2]))
    return {_text(k): _text(v) for k, v in reply.items()}


def corrupt(path, marker, offset=0):
    with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        at = m.find(marker)
        assert at >= 0, f"{marker!r} is not in {path}"
        m[at + offset] ^= 0xFF
