"""Real clients with users and passwords: redis-py with redis://user:pass@host
URLs (RESP2 and RESP3, which log in with HELLO 3 AUTH) and redis-cli --user
--pass, each against redis-server and cxlredis configured alike; what the
client sees must be the same."""
import os
import re
import shutil
import subprocess
import time

import pytest
import redis

from acl_helpers import acl_servers, oracle_process, server_under_test  # noqa: F401
from conftest import TARGET, encode_command, parse_reply, raw_connection

USERS = [
    ("alice", "apw", ["~cache:*", "+@all", "-@dangerous"]),
    ("reader", "rpw", ["~*", "-@all", "+@read", "+@connection"]),
]


@pytest.fixture(scope="module")
def pair():
    servers = [oracle_process(requirepass="secret"), server_under_test(requirepass="secret")]
    try:
        for server in servers:
            server.start()
            admin = redis.Redis(port=server.port, password="secret")
            for name, password, rules in USERS:
                admin.acl_setuser(name, enabled=True, passwords=[f"+{password}"], reset=True)
                admin.execute_command("ACL", "SETUSER", name, *rules)
            admin.close()
        yield servers
    finally:
        for server in servers:
            server.close()


def outcome(action):
    """What a client sees: the value, or the exception's type and message."""
    try:
        return "ok", action()
    except redis.RedisError as e:
        return type(e).__name__, str(e)


def session(port, url_credentials, protocol):
    client = redis.Redis.from_url(f"redis://{url_credentials}127.0.0.1:{port}/0", protocol=protocol)
    try:
        return [
            outcome(lambda: client.execute_command("ACL", "WHOAMI")),
            outcome(lambda: client.set("cache:1", "v")),
            outcome(lambda: client.get("cache:1")),
            outcome(lambda: client.set("other", "v")),
            outcome(lambda: client.flushall()),
            outcome(lambda: client.mget("cache:1", "other")),
            outcome(lambda: client.hset("cache:h", "f", "1")),
            outcome(lambda: client.hgetall("cache:h")),
        ]
    finally:
        client.close()


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("credentials", [
    "alice:apw@", "reader:rpw@", ":secret@", "default:secret@", "alice:wrong@", "nobody:x@", "",
    ":wrong@",
])
def test_redis_py_urls(pair, credentials, protocol):
    oracle, ours = pair
    expected = session(oracle.port, credentials, protocol)
    assert session(ours.port, credentials, protocol) == expected
    logged_in_as = {"alice:apw@": b"alice", ":secret@": b"default", "default:secret@": b"default"}
    if credentials in logged_in_as:     # the test's own sanity: these logins work
        assert expected[0] == ("ok", logged_in_as[credentials])


def _cli(server, tmp_path, *args):
    env = dict(os.environ, HOME=str(tmp_path), REDISCLI_HISTFILE="/dev/null", TERM="dumb")
    result = subprocess.run(["redis-cli", "-p", str(server.port), *args], capture_output=True,
                            text=True, timeout=30, env=env)
    return result.returncode, result.stdout, result.stderr


@pytest.mark.skipif(shutil.which("redis-cli") is None, reason="redis-cli is not installed")
@pytest.mark.parametrize("args", [
    ("--user", "alice", "--pass", "apw", "SET", "cache:1", "v"),
    ("--user", "alice", "--pass", "apw", "SET", "other", "v"),
    ("--user", "alice", "--pass", "apw", "--no-auth-warning", "ACL", "WHOAMI"),
    ("--user", "alice", "--pass", "apw", "-3", "--no-auth-warning", "GET", "cache:1"),
    ("--user", "reader", "--pass", "rpw", "--no-auth-warning", "SET", "x", "1"),
    ("--user", "reader", "--pass", "rpw", "--no-auth-warning", "-3", "CONFIG", "GET", "port"),
    ("--user", "alice", "--pass", "wrong", "--no-auth-warning", "PING"),
    ("--user", "nobody", "--pass", "x", "--no-auth-warning", "PING"),
    ("-a", "secret", "--no-auth-warning", "ACL", "WHOAMI"),
    ("PING",),
    ("-3", "PING"),
])
def test_redis_cli_user_and_pass(pair, tmp_path, args):
    oracle, ours = pair
    assert _cli(ours, tmp_path, *args) == _cli(oracle, tmp_path, *args)


def _used_memory(conn):
    info = parse_reply(conn.request("INFO", "memory")).decode()
    return int(re.search(r"used_memory:(\d+)", info).group(1))


@pytest.mark.skipif(TARGET == "redis", reason="the arena is cxlredis's")
def test_unauthenticated_upload_reserves_no_arena_memory(acl_servers):
    # Values from the large-value threshold up go straight into an arena slot as
    # they arrive, but not for a connection that has yet to authenticate.
    server = acl_servers(requirepass="secret", large_value_threshold="1kb")
    half_sent = encode_command("SET", "k", "x" * 8000)[:-4000]
    with raw_connection(server.port) as admin, raw_connection(server.port) as stranger, \
            raw_connection(server.port) as member:
        assert admin.request("AUTH", "secret") == b"+OK\r\n"
        baseline = _used_memory(admin)
        stranger.send(half_sent)
        time.sleep(0.2)
        assert _used_memory(admin) == baseline
        assert member.request("AUTH", "secret") == b"+OK\r\n"
        member.send(half_sent)       # the control: an authenticated upload takes its slot
        time.sleep(0.2)
        assert _used_memory(admin) >= baseline + 8000
        stranger.send(b"x" * 3998 + b"\r\n")
        assert stranger.read_reply() == b"-NOAUTH Authentication required.\r\n"
