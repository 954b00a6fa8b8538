"""SCRIPT DEBUG, Redis 7.0's Lua debugger (LDB), on redis-server and cxlredis.

The same debugging sessions go to both servers over raw sockets, in both modes (YES: a
forked session; SYNC: in the server), and every frame the debugger sends is compared
byte for byte, but for the addresses of functions, which no two processes share. A
forked session leaves the data as it was and the server serves others meanwhile; a
synchronous one keeps its writes. The real `redis-cli --ldb` (and `--ldb-sync-mode`),
fed its debugger commands on stdin, prints the same on both servers. No forked session
outlives its test.
"""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import ServerProcess, encode_command, parse_reply, raw_connection
from diff_harness import _pairs, cmd, normalised, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

MODES = ["YES", "SYNC"]
END = b"+<endsession>\r\n"
# What two correct servers may answer differently: a function's address, a client's id.
VARYING = [(re.compile(rb"@0x[0-9a-f]+"), b"@0x"), (re.compile(rb"\$2\r\nid\r\n:[0-9]+"), b"$2\r\nid\r\n:")]

# Functions, redis.call, redis.debug and redis.breakpoint: what most commands look at.
SCRIPT = """local function double(x)
  local y = x * 2
  return y
end
local z = double(3)
redis.debug(z, "s", {1, {a = 2}}, nil, true)
redis.breakpoint()
redis.call("set", KEYS[1], ARGV[1])
local w = redis.call("get", KEYS[1])
return {z, w}"""


def read_frame(conn):
    """One frame of the debugger; after <endsession>, with everything up to the close."""
    frame = conn.read_reply()
    if frame.endswith(END):
        frame += conn.read_until_close() + b"(closed)"
    return frame


def session(server, mode, script, *steps, eval_args=("0",), before=()):
    """Every frame of a session: the replies to `before` (commands first), SCRIPT DEBUG's,
    then the debugger's for the EVAL and each step (a command, or raw bytes) until it ends."""
    with raw_connection(server.port) as conn:
        frames = [conn.request(*args) for args in before]
        frames.append(conn.request("SCRIPT", "DEBUG", mode))
        conn.send(encode_command("EVAL", script, *eval_args))
        frames.append(read_frame(conn))
        for step in steps:
            if frames[-1].endswith(b"(closed)"):
                break
            conn.send(step if isinstance(step, bytes) else encode_command(*step))
            frames.append(read_frame(conn))
        return frames


def comparable(frames):
    for pattern, replacement in VARYING:
        frames = [pattern.sub(replacement, frame) for frame in frames]
    return frames


def assert_same_session(redis_oracle, cxl, mode, script, *steps, **options):
    expected = session(redis_oracle, mode, script, *steps, **options)
    assert comparable(session(cxl, mode, script, *steps, **options)) == comparable(expected)
    assert expected[-1].endswith(b"(closed)"), "the session should have ended"


def debugging_children(server, count=0):
    """The server's child processes (forked sessions), once there are `count` of them (an
    ended session's is reaped by the cron, hz times a second), or after 2 s."""
    deadline = time.monotonic() + 2
    while True:
        with open(f"/proc/{server.pid}/task/{server.pid}/children") as f:
            children = f.read().split()
        if len(children) == count or time.monotonic() > deadline:
            return children
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def no_session_outlives_the_test(cxl):
    yield
    assert debugging_children(cxl) == [], "a forked debugging session is still running (or unreaped)"


def subcommands_sorted(argv, reply):
    """COMMAND INFO/DOCS of SCRIPT: Redis lists the subcommands in its hash table's order."""
    value = parse_reply(reply)
    if argv[1].upper() == b"INFO":
        (entry,) = value
        return entry[:9] + [sorted(entry[9], key=lambda sub: sub[0])]
    (name, docs), = _pairs(value)
    docs = dict(_pairs(docs))
    docs[b"subcommands"] = sorted(_pairs(docs[b"subcommands"]))
    return name, sorted(docs.items())


def test_command_info_and_docs(redis_oracle, cxl, protocol):
    run_sequence(redis_oracle, cxl, [
        cmd("COMMAND", "INFO", "script|debug"), cmd("COMMAND", "DOCS", "script|debug"),
        cmd("COMMAND", "INFO", "script", compare=normalised(subcommands_sorted)),
        cmd("COMMAND", "DOCS", "script", compare=normalised(subcommands_sorted)),
        cmd("COMMAND", "GETKEYS", "SCRIPT", "DEBUG", "YES")], protocol=protocol)


@pytest.mark.parametrize("mode", MODES)
def test_stepping_printing_listing_and_the_commands(redis_oracle, cxl, mode):
    assert_same_session(
        redis_oracle, cxl, mode, SCRIPT,
        ("s",), ("next",), ("S",), ("t",), ("p",), ("p", "x"), ("print", "z"), ("p", "KEYS"),
        ("p", "ARGV"), ("p", "nope"), ("p", "a", "b"), ("c",), ("p",), ("w",), ("l",), ("list", "2"),
        ("l", "2", "1"), ("l", "0", "2"), ("l", "-4", "x"), ("e", "1+1"), ("eval", "x", "=", "5"),
        ("e", "local q = 1"), ("e", 'error("boo")'), ("e", "syntax error"), ("e",), ("e", "1, 2"),
        ("e", "math.random(0)"), ("e", "redis.call"), ("e", "cjson.null"), ("r", "set", "a", "b"),
        ("redis", "nosuch"), ("r", "get", "a"), ("r",), ("h",), ("zz",), ("m",), ("m", "10"),
        ("maxlen", "0"), ("m", "100", "x"), ("s",), ("s",), ("s",),
        eval_args=("1", "k", "v"))


@pytest.mark.parametrize("mode", MODES)
def test_how_values_print_and_maxlen_trims_them(redis_oracle, cxl, mode):
    script = "\n".join([
        "local t = {1, 2.5, -0.0, 1e20, 1/0, -1/0, 0/0, true, false}",
        'local text = "a\\0b\\n\\"\\\\\\r\\t\\7\\8\\127\\200"',
        'local u = {x = 1, [2.5] = "y", [true] = 1}',
        "local r = {}",
        "r.self = r",
        "local n = {{{{{{{{{{{{1}}}}}}}}}}}}",
        "local holes, h = {1, nil, 3}, {[1] = 1, [3] = 3}",
        'local long = string.rep("x", 300)',
        "return 1"])
    assert_same_session(redis_oracle, cxl, mode, script,
                        *[("s",)] * 8, ("p",), ("p", "long"), ("m", "70"), ("p", "long"), ("m", "0"),
                        ("p",), ("e", "{long, long}"), ("c",))


@pytest.mark.parametrize("mode", MODES)
def test_what_redis_call_and_the_error_helpers_log(redis_oracle, cxl, mode):
    script = "\n".join([
        'redis.call("set", "s", "x")',
        'redis.pcall("incr", "s")',
        'redis.pcall("nosuch")',
        'redis.pcall("get")',
        'redis.pcall("get", {})',
        "redis.pcall()",
        'redis.call("hset", "h", "a", "1", "b", "2.5")',
        'redis.call("hgetall", "h")',
        'redis.call("mget", "s", "nope")',
        'redis.call("mset", "a", 1, "b", 2, "c", 3, "d", 4, "e", 5, "f", 6.5)',
        'local e = redis.error_reply("E1")',
        'local e2 = redis.error_reply("-E2 with code")',
        "local e3 = redis.error_reply(1)",
        "local s = redis.status_reply(1)",
        'local s2 = redis.status_reply("fine")',
        "redis.setresp(3)",
        'redis.call("hgetall", "h")',
        'redis.call("get", "nope")',
        'redis.call("sadd", "st", "m")',
        'redis.call("smembers", "st")',
        'redis.call("exists", "h")',
        'return redis.call("incr", "s")'])
    assert_same_session(redis_oracle, cxl, mode, script,
                        *[("s",)] * 21, ("r", "debug", "sleep", "0"), ("r", "hgetall", "h"),
                        ("e", 'redis.call("set", "x", "1")'), ("s",))


def test_breakpoints(redis_oracle, cxl):
    script = "\n".join(f"local v{i} = {i}" for i in range(1, 71))
    assert_same_session(
        redis_oracle, cxl, "YES", script,
        ("b",), ("b", "2", "5", "7", "9"), ("break",), ("b", "-2"), ("b",), ("b", "-5"), ("b",),
        ("b", "3"), ("b", "3"), ("b", "-100"), ("b", "+4", "04", "-0", "1.5", "x", "99"), ("c",),
        ("l",), ("s",), ("b", "0"), ("b",), ("b", *map(str, range(1, 65))), ("b", "65"), ("c",),
        ("b", "0"), ("c",))


def test_breakpoints_in_calls_and_coroutines_and_the_trace(redis_oracle, cxl):
    script = "\n".join([
        "local function g(a)",
        "  local b = a + 1",
        "  redis.breakpoint()",
        "  return b",
        "end",
        "local function f(x)",
        "  local y = g(x)",
        "  return y",
        "end",
        "local co = coroutine.wrap(function(q) local r = f(q) return r end)",
        "local ok = pcall(function()",
        "  error('caught')",
        "end)",
        'local chunk = loadstring("local z = 1\\nreturn z")',
        "local i = 0",
        "while i < 2 do",
        "  i = i + 1",
        "end",
        "return {co(1), chunk()}"])
    assert_same_session(redis_oracle, cxl, "SYNC", script,
                        ("c",), ("t",), ("p",), ("p", "x"), ("p", "a"), ("p", "q"), ("p", "co"),
                        *[("s",)] * 10)
    assert_same_session(redis_oracle, cxl, "YES", script, *[("s",), ("t",)] * 40)


@pytest.mark.parametrize("script, steps", [
    ("local a = 1\nreturn a", [("a",)]),
    ("local a = 1\nlocal t = nil\nreturn t.x", [("c",)]),
    ("local a = 1\nreturn redis.call('nosuch')", [("s",), ("s",)]),
    ("local a = 1\nreturn a", [b"not a command\r\n"]),
    ("local a = 1\nreturn a", [b"*1\r\n$0\r\n\r\n"]),
    ("local a = 1\nlocal b = 2\nreturn a", [encode_command("s") + encode_command("s"), ("c",)]),
    ("return +", []),
    ("#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", [("c",)]),
], ids=["abort", "runtime error", "redis.call error", "protocol error", "empty argument",
        "pipelined commands", "compile error", "shebang flags"])
def test_how_a_session_ends(redis_oracle, cxl, script, steps):
    assert_same_session(redis_oracle, cxl, "YES", script, *steps)


@pytest.mark.parametrize("before, script, eval_args, steps", [
    ([], "return 1", ("x",), []),                                 # numkeys: after <endsession>
    ([("SCRIPT", "DEBUG", "NO"), ("EVAL", "return 'plain'", "0"), ("SCRIPT", "DEBUG", "SYNC"),
      ("EVALSHA", "a" * 40, "0"), ("EVALSHA_RO", "a" * 40, "0"), ("EVALSHA", "x", "0"),
      ("FCALL", "nofunc", "0"), ("RESET",), ("EVALSHA", "a" * 40, "0")], "return 1", ("0",), [("s",)]),
    ([("HELLO", "3")], "return {1, true, {ok = 'fine'}}", ("0",), [("c",)]),
], ids=["numkeys", "what is and is not debugged", "RESP3"])
def test_which_evals_are_debugged(redis_oracle, cxl, before, script, eval_args, steps):
    for mode in MODES:
        assert_same_session(redis_oracle, cxl, mode, script, *steps, before=before, eval_args=eval_args)


def exchange(server, steps):
    """The replies to steps (bytes, and how many replies they get), a session's frames
    read to the close."""
    with raw_connection(server.port) as conn:
        replies = []
        for data, count in steps:
            conn.send(data)
            replies.extend(read_frame(conn) for _ in range(count))
        return replies


def test_script_debug_itself(redis_oracle, cxl):
    steps = [
        (encode_command("SCRIPT", "DEBUG", "MAYBE"), 1), (encode_command("SCRIPT", "DEBUG"), 1),
        (encode_command("SCRIPT", "DEBUG", "yes", "no"), 1), (encode_command("SCRIPT", "HELP"), 1),
        (encode_command("EVAL", "return redis.call('script', 'debug', 'yes')", "0"), 1),
        (encode_command("MULTI"), 1), (encode_command("SCRIPT", "DEBUG", "YES"), 1),
        (encode_command("EXEC"), 1),
        (encode_command("PING") + encode_command("SCRIPT", "DEBUG", "YES"), 2),
        # a session inside EXEC, whose reply ends it
        (encode_command("SCRIPT", "DEBUG", "sync"), 1), (encode_command("MULTI"), 1),
        (encode_command("EVAL", "return 1", "0"), 1), (encode_command("EXEC"), 1), (encode_command("c"), 1),
    ]
    assert exchange(cxl, steps) == exchange(redis_oracle, steps)
    # SCRIPT DEBUG's +OK, pipelined with the EVAL, comes after the session
    steps = [(encode_command("SCRIPT", "DEBUG", "YES") + encode_command("EVAL", "return 1", "0"), 1),
             (encode_command("s"), 1)]
    assert exchange(cxl, steps) == exchange(redis_oracle, steps)
    # CLIENT REPLY OFF hides the EVAL's reply, not the session. (In SYNC mode Redis then
    # leaves the connection open, deaf to every command; cxlredis closes it.)
    steps = [(encode_command("CLIENT", "REPLY", "OFF") + encode_command("SCRIPT", "DEBUG", "YES")
              + encode_command("EVAL", "return 1", "0"), 1), (encode_command("s"), 1)]
    assert exchange(cxl, steps) == exchange(redis_oracle, steps)


def test_a_script_that_runs_on_stops_after_lua_time_limit(redis_oracle, cxl):
    loop = "local i = 0\nwhile true do\n  i = i + 1\nend"
    try:
        for server in (redis_oracle, cxl):
            with raw_connection(server.port) as conn:
                assert conn.request("CONFIG", "SET", "lua-time-limit", "100") == b"+OK\r\n"
        for mode in MODES:
            assert_same_session(redis_oracle, cxl, mode, loop, ("c",), ("s",), ("c",), ("a",))
        # A client that goes away leaves its forked session to run on: it ends at the next
        # stop of the time limit (no_session_outlives_the_test sees it gone).
        with raw_connection(cxl.port) as conn:
            conn.request("SCRIPT", "DEBUG", "YES")
            conn.send(encode_command("EVAL", loop, "0"))
            assert read_frame(conn).startswith(b"*2\r\n+* Stopped at 1")
    finally:
        for server in (redis_oracle, cxl):
            with raw_connection(server.port) as conn:
                conn.request("CONFIG", "SET", "lua-time-limit", "5000")


WRITES = "redis.call('set', 'k', 'changed')\nredis.call('set', 'new', 'x')\nreturn redis.call('get', 'k')"


@pytest.mark.parametrize("mode, kept", [("YES", False), ("SYNC", True)])
def test_what_a_session_writes_stays_only_in_sync_mode(redis_oracle, cxl, mode, kept):
    for server in (redis_oracle, cxl):
        with raw_connection(server.port) as other, raw_connection(server.port) as conn:
            assert other.request("SET", "k", "orig") == b"+OK\r\n"
            conn.request("SCRIPT", "DEBUG", mode)
            conn.send(encode_command("EVAL", WRITES, "0"))
            for _ in range(3):
                read_frame(conn)
                conn.send(encode_command("s"))
            if mode == "YES":
                # the script wrote, in its child; the server serves the others meanwhile
                assert other.request("GET", "k") == b"$4\r\norig\r\n"
                assert other.request("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
            assert read_frame(conn) == b"*3\r\n+<redis> get k\r\n+<reply> \"changed\"\r\n" + END + \
                b"$7\r\nchanged\r\n(closed)"
            assert other.request("MGET", "k", "new") == (b"*2\r\n$7\r\nchanged\r\n$1\r\nx\r\n" if kept
                                                         else b"*2\r\n$4\r\norig\r\n$-1\r\n")


@pytest.mark.parametrize("option, ending", [("--ldb", b"dataset changes rolled back"),
                                             ("--ldb-sync-mode", b"(Lua debugging session ended)")])
def test_redis_cli_ldb_reading_its_commands_from_stdin(redis_oracle, cxl, tmp_path, option, ending):
    if shutil.which("redis-cli") is None:
        pytest.skip("redis-cli is not installed")
    script = tmp_path / "debugged.lua"
    script.write_text('local a = KEYS[1]\nredis.call("set", a, ARGV[1])\nredis.debug(a)\n'
                      'return redis.call("get", a)\n')
    commands = "s\np\nn\nprint a\nb 4\nhelp\nc\nwhole\nc\n"
    outputs = [subprocess.run(["redis-cli", "-p", str(server.port), option, "--eval", str(script),
                               "k1", ",", "v1"], input=commands.encode(), capture_output=True, timeout=10).stdout
               for server in (redis_oracle, cxl)]
    assert outputs[1] == outputs[0]
    assert ending in outputs[0] and b'"v1"' in outputs[0]


def test_tenants_sessions_and_shutdown():
    """A tenant's session sees its own keyspace; a forked one writes nothing to a tenant's
    own arena either; SHUTDOWN kills the sessions still running, as Redis's does."""
    server = ServerProcess("cxlredis")
    conf = server.dir / "cxlredis.conf"
    conf.write_text("user alice on >pw ~* &* +@all\nuser carol on >pw ~* &* +@all\n"
                    "tenant team-a users alice\ntenant own-c quota 16mb arena own users carol\n")
    server.conf = str(conf)
    server.start()
    try:
        with raw_connection(server.port) as admin:
            admin.request("SET", "k", "admin's")
            for user in ("alice", "carol"):
                with raw_connection(server.port) as conn:
                    conn.request("AUTH", user, "pw")
                    conn.request("SET", "k", f"{user}'s")
                    conn.request("SCRIPT", "DEBUG", "YES")
                    conn.send(encode_command("EVAL", "local v = redis.call('get', 'k')\n"
                                             "redis.call('set', 'k', 'changed')\nreturn v", "0"))
                    frames = [read_frame(conn)]
                    for _ in range(3):
                        conn.send(encode_command("s"))
                        frames.append(read_frame(conn))
                    value = b"%s's" % user.encode()
                    assert b'+<reply> "%s"' % value in frames[1]
                    assert frames[-1] == b"*1\r\n" + END + b"$%d\r\n%s\r\n(closed)" % (len(value), value)
                with raw_connection(server.port) as conn:
                    conn.request("AUTH", user, "pw")
                    assert conn.request("GET", "k") == b"$%d\r\n%s's\r\n" % (len(user) + 2, user.encode())
            assert admin.request("GET", "k") == b"$7\r\nadmin's\r\n"
            with raw_connection(server.port) as conn:
                conn.request("SCRIPT", "DEBUG", "YES")
                conn.send(encode_command("EVAL", "return 1", "0"))
                read_frame(conn)
                (child,) = debugging_children(server, 1)
                admin.send(encode_command("SHUTDOWN", "NOSAVE"))
                assert conn.read_until_close() == b""
        server.proc.wait(10)
        assert not os.path.exists(f"/proc/{child}")
        assert f"Killing debugging session {child}" in server.log
    finally:
        server.close()
