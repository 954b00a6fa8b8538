"""Helpers for the tenant tests (no conftest.py here: see tests/conftest.py).

``tenant_server(lines, **options) -> ServerProcess``  a cxlredis (whatever
    CXLREDIS_TEST_TARGET says: tenants are ours) with a config file holding
    ``lines`` (tenant and user directives) in its directory; not started.
``as_user(server, user, password=PASSWORD, db=0, **kwargs) -> redis.Redis``  redis-py
    connecting with ``redis://user:password@127.0.0.1:port/db``.
``tenant_info(client, name) -> dict``  TENANT INFO as {str: int | str | list}.
``USERS``  user lines for alice, bob, carol, dave and publisher (password ``pw``,
    ``~* +@all``); the default user stays the password-less administrator.
"""
from __future__ import annotations

import redis

from conftest import ServerProcess

PASSWORD = "pw"
USERS = [f"user {name} on >{PASSWORD} ~* &* +@all" for name in
         ("alice", "bob", "carol", "dave", "publisher", "hog")]


def tenant_server(lines, **options) -> ServerProcess:
    server = ServerProcess("cxlredis", {name.replace("_", "-"): value for name, value in options.items()})
    conf = server.dir / "cxlredis.conf"
    conf.write_text("".join(line + "\n" for line in lines))
    server.conf = str(conf)
    return server


def as_user(server, user, password=PASSWORD, db=0, **kwargs) -> redis.Redis:
    return redis.Redis.from_url(f"redis://{user}:{password}@127.0.0.1:{server.port}/{db}",
                                socket_timeout=10, **kwargs)


def _decode(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def tenant_info(client, name) -> dict:
    reply = client.execute_command("TENANT", "INFO", name)
    if isinstance(reply, list):
        reply = dict(zip(reply[0::2], reply[1::2]))
    return {_decode(k): _decode(v) for k, v in reply.items()}
