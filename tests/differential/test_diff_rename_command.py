"""rename-command, as redis.conf gives it, on redis-server and cxlredis side by side."""
import pytest
from conftest import ServerProcess
from diff_harness import raw, run_sequence


RENAMES = 'rename-command FLUSHALL ""\nrename-command config cfg\nrename-command GET fetch\n'


@pytest.fixture(scope="module")
def renamed_pair(tmp_path_factory):
    """redis-server and cxlredis started from the same rename-command lines."""
    conf = tmp_path_factory.mktemp("renames") / "renames.conf"
    conf.write_text(RENAMES)
    servers = [ServerProcess("redis", conf=conf), ServerProcess(conf=conf)]
    try:
        yield [server.start() for server in servers]
    finally:
        for server in servers:
            server.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_rename_command_like_redis(renamed_pair, protocol):
    """A renamed command answers to its new name only (GET, a command the C fast path
    runs, too), scripts and MULTI see the table as renamed, and ACL rules and COMMAND
    INFO's reply keep the command's own name."""
    oracle, ours = renamed_pair
    run_sequence(oracle, ours, [
        ("FLUSHALL",), ("flushall", "ASYNC"), ("CONFIG", "GET", "timeout"), ("cfg", "GET", "timeout"),
        ("CFG", "SET", "timeout", "0"), ("SET", "k", "v"), ("GET", "k"), ("fetch", "k"), ("FETCH", "k"),
        raw(b"*2\r\n$5\r\nfetch\r\n$1\r\nk\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*2\r\n$3\r\nget\r\n$1\r\nk\r\n",
            replies=3),
        raw(b"fetch k\r\n"),
        ("EVAL", "return redis.call('fetch', KEYS[1])", "1", "k"),
        ("EVAL", "return redis.pcall('get', KEYS[1])", "1", "k"),
        ("EVAL", "return redis.pcall('flushall')", "0"),
        ("MULTI",), ("fetch", "k"), ("GET", "k"), ("EXEC",),
        ("MULTI",), ("fetch", "k"), ("EXEC",),
        ("COMMAND", "INFO", "fetch", "get", "flushall", "cfg|get", "config|get"),
        ("COMMAND", "GETKEYS", "fetch", "k"), ("COMMAND", "GETKEYS", "get", "k"),
        ("ACL", "SETUSER", "u", "on", "nopass", "+get", "~*"), ("ACL", "SETUSER", "u", "+fetch"),
        ("ACL", "SETUSER", "u", "+flushall"), ("ACL", "DRYRUN", "u", "fetch", "k"),
        ("ACL", "DELUSER", "u"),
    ], protocol)
