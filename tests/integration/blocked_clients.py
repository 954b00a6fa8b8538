"""Clients blocked in a command (BLPOP, BZPOPMIN, ...), for the blocking tests: how many
the server counts, and a connection that sent a command and is blocked in it."""
import time

from conftest import encode_command, raw_connection


def blocked_count(admin):
    info = admin.request("INFO", "clients").decode()
    return int(info.split("blocked_clients:")[1].split("\r\n")[0])


def wait_blocked(admin, count):
    deadline = time.monotonic() + 5
    while blocked_count(admin) != count:
        assert time.monotonic() < deadline, f"never {count} blocked clients"
        time.sleep(0.005)


def block(target, admin, *argv, protocol=2):
    """A new connection that sent argv and is blocked in it (once the server counts it)."""
    conn = raw_connection(target.port)
    if protocol == 3:
        conn.request("HELLO", "3")
    before = blocked_count(admin)
    conn.send(encode_command(*argv))
    wait_blocked(admin, before + 1)
    return conn
