"""cxlredis.config: loading, CONFIG GET/SET/REWRITE, with redis-server 7.0 as the oracle."""
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import REDIS_TEST_SUITE_CONF, ServerProcess, parse_reply, raw_connection
from hypothesis import given
from hypothesis import strategies as st

from cxlredis.config import (ALL_OPTIONS, OPTIONS, REDIS_ONLY_OPTIONS, REWRITE_SIGNATURE, Config,
                             ConfigError, ConfigSetError,
                             OutputBufferLimit, format_memory, glob_match, parse_memory, quote,
                             split_args)
from cxlredis.errors import CommandError

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONF = REPO / "conf" / "cxlredis.conf"
NAMES = {option.name for option in ALL_OPTIONS}
# Every name CONFIG GET * lists: the options and Redis's aliases of them (slave-*, *-ziplist-*).
LISTED = [name for name, _ in Config.load([], environ={}).get(["*"])]
# Names cxlredis shares with Redis 7.0 (the rest are ours: arena-*, audit-*,
# metrics-*, cxl-*, disk-tier-*, large-value-threshold, tenants-file, functions-file,
# tenant-arena-dir, lua-memory-limit, tenant-mrc-*).
SHARED = [name for name in LISTED if not name.startswith(("arena-", "audit-", "metrics-", "cxl-", "disk-tier-"))
          and name not in ("large-value-threshold", "tenants-file", "functions-file", "tenant-arena-dir",
                           "lua-memory-limit", "tenant-mrc-sampling", "tenant-mrc-keys")]
# Defaults that differ from redis-server's on purpose; the oracle is started with ours.
OUR_DEFAULTS = {"bind": "127.0.0.1 -::1", "protected-mode": "no", "maxmemory-policy": "allkeys-lru",
                "unixsocketperm": "700"}

needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server (the oracle) is not installed")


def load(*argv, environ=None):
    return Config.load(list(argv), environ={} if environ is None else environ)


def values(config):
    return {option.name: config[option.name] for option in ALL_OPTIONS}


def set_reply(config, pairs):
    """Our CONFIG SET outcome as the reply text Redis would send."""
    try:
        config.set(pairs)
    except ConfigSetError as error:
        return str(error)
    return "OK"


def write(path, text):
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------- the oracle

@pytest.fixture(scope="module")
def oracle():
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server (the oracle) is not installed")
    server = ServerProcess("redis", options=OUR_DEFAULTS)
    try:
        yield server.start()
    finally:
        server.close()


@pytest.fixture(scope="module")
def mirror(oracle):
    """Our Config loaded with the options the oracle was started with."""
    argv = ["--port", str(oracle.port), "--unixsocket", oracle.unixsocket, "--save", "",
            "--appendonly", "no", "--dir", str(oracle.dir), "--loglevel", "warning",
            "--enable-debug-command", "local"]
    for name, value in OUR_DEFAULTS.items():
        argv += [f"--{name}", value]
    return load(*argv)


def ask(server, *args):
    with raw_connection(server.port) as conn:
        return parse_reply(conn.request(*args))


def redis_get(server, *patterns):
    if not patterns:
        return {}
    flat = ask(server, "CONFIG", "GET", *patterns)
    return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}


def shared_only(pairs):
    return {name: value for name, value in dict(pairs).items() if name.lower() in SHARED}


@needs_redis
def test_defaults_format_like_redis(oracle, mirror):
    ours = dict(mirror.get(SHARED))
    theirs = redis_get(oracle, *SHARED)
    assert set(ours) == set(SHARED)
    assert ours == theirs


@needs_redis
@pytest.mark.parametrize("patterns", [
    ["*"], ["max*"], ["*port*"], ["bin?"], ["b[h-j]nd"], ["b[^a]nd"], ["b[j-h]nd"], ["B[I"],
    ["b\\ind"], ["BIND"], ["PORT", "port"], ["port", "PORT"], ["BIND", "*bind*"], ["*bind*", "BIND"],
    ["*-*-*"], ["[a-c]*"], ["[^a-m]*"], ["*MEMORY*"], ["nonexistent"], ["save", "s*", "*e"],
    ["client-*-limit"], ["*[lm]"], ["?????"], ["p\\*"], ["[\\p]ort"],
])
def test_config_get_globs_like_redis(oracle, mirror, patterns):
    assert shared_only(mirror.get(patterns)) == shared_only(redis_get(oracle, *patterns))


COB = "client-output-buffer-limit"
SET_CASES = [
    *[[("maxmemory", v)] for v in ["1kb", "1k", "1GB", "1gB", "1B", "", "kb", "01", "abc", "-1",
                                   "1.5mb", " 1", "+1", "1t", "18446744073709551615", "0"]],
    *[[("maxmemory-policy", v)] for v in ["ALLKEYS-LFU", "volatile-ttl", "foo", ""]],
    *[[("maxmemory-samples", v)] for v in ["0", "64", "65", "2147483648"]],
    *[[("timeout", v)] for v in ["010", "+1", " 1", "-0", "1e3", "", "1k", "99999999999",
                                 "9999999999999999999999", "-1", "30"]],
    *[[("tcp-keepalive", v)] for v in ["-1", "60"]],
    *[[("maxclients", v)] for v in ["0", "4294967296", "5000"]],
    *[[("hz", v)] for v in ["0", "1000", "-1", "20"]],
    *[[("protected-mode", v)] for v in ["maybe", "1", "YES", "no"]],
    *[[("loglevel", v)] for v in ["WARNING", "verbose", "notice"]],
    *[[("proto-max-bulk-len", v)] for v in ["100", "2gb", "1mb", "9223372036854775808"]],
    *[[("client-query-buffer-limit", v)] for v in ["100", "1073741825", "1048575"]],
    *[[(COB, v)] for v in ["normal 1 2", "foo 1 2 3", "master 1 2 3", "normal x 2 3",
                           "normal 1 x 3", "normal 1 2 x", "normal 1 2 -1", "normal 1 2 +3",
                           'normal 1 2 " 3"', "replica 1kb 2MB 3 NORMAL 1 0 0", "pubsub 4gb 1k 5",
                           "", "normal 0 0 0 normal 1 1 1", "normal -1 0 0", "normal 1 0 2b",
                           "SLAVE 1 1 1", "normal 1  1 1"]],
    *[[("slowlog-log-slower-than", v)] for v in ["-2", "-1", "0"]],
    *[[("slowlog-max-len", v)] for v in ["-1", "0", "9223372036854775807"]],
    *[[("latency-monitor-threshold", v)] for v in ["-1", "100"]],
    *[[("save", v)] for v in ["", "100", "a b", "100 1 200 2", "0 0", "-1 1", " ", "100 1 100 1",
                              "+5 0", "3600 1 300 100 60 10000"]],
    *[[("appendonly", v)] for v in ["no", "maybe"]],
    [("requirepass", "")],
    *[[(name, "1")] for name in ["databases", "unixsocket", "unixsocketperm", "tcp-backlog",
                                 "logfile", "pidfile", "daemonize", "DATABASES"]],
    [("dir", "/tmp")], [("dir", "/nonexistent")],
    *[[("port", v)] for v in ["abc", "70000", "-1"]],
    [("bind", " ".join(str(n) for n in range(1, 18)))],
    [("foo", "bar")], [("FOO", "bar")],
    [("foo", "bar"), ("databases", "3")],
    [("databases", "3"), ("foo", "bar")],
    [("maxmemory", "abc"), ("foo", "bar")],
    [("maxmemory", "1"), ("maxmemory", "abc")],
    [("MAXMEMORY", "abc")],
    [("PORT", "1"), ("port", "2")],
    [("timeout", "5"), ("maxmemory", "abc")],
    [("timeout", "5"), ("hz", "30"), ("maxmemory", "2mb")],
    [("maxmemory-policy", "noeviction"), ("save", "1 1"), (COB, "pubsub 1 1 1"), ("timeout", "x")],
]


@needs_redis
@pytest.mark.parametrize("pairs", SET_CASES, ids=lambda pairs: " ".join(f"{n}={v!r}" for n, v in pairs))
def test_config_set_like_redis(oracle, mirror, pairs):
    names = sorted({name.lower() for name, _ in pairs} & NAMES)
    before = redis_get(oracle, *names)
    assert dict(mirror.get(names)) == before
    flat = [part for pair in pairs for part in pair]
    theirs = ask(oracle, "CONFIG", "SET", *flat)
    ours = set_reply(mirror, pairs)
    try:
        assert ours == theirs, pairs
        assert dict(mirror.get(names)) == redis_get(oracle, *names)
    finally:   # put both back, so every case starts from the defaults
        restore = [(name, value) for name, value in before.items()
                   if name not in ("databases", "unixsocket", "unixsocketperm", "tcp-backlog",
                                   "logfile", "pidfile", "daemonize", "dir")]
        if restore:
            assert ask(oracle, "CONFIG", "SET", *[p for pair in restore for p in pair]) == "OK"
            mirror.set(restore)


# Redis 7.0's other options: every value class of each, next to redis-server. Values that
# would change how the oracle itself runs (client eviction, TLS for the bus or replicas,
# a watchdog, the AOF) are tried only where they are refused.
_SPECIAL_VALUES = {
    "oom-score-adj-values": ["1 2", "0 200 3000", "0 -2000 3", "-1000 0 1000", "0 200 800 ", "a b c",
                             "1 +2 3", "1 2x 3", "10 5 1", ""],
    "shutdown-on-sigint": ["nosave now force", "save nosave", "default now", "", "NOW Force",
                           "force save", "save save", "x"],
    "shutdown-on-sigterm": ["now", "default", "save"],
    "maxmemory-clients": ["abc", "-5%", "100%", "0%", "5%", "101%", "05%", "%", "5.5%", "1gb", "-1"],
    "proc-title-template": ["{title}", "{listen-addr} x", "{bad", "", "{}", "{server-mode}",
                            "{config-file}", "{tls-port}", "}", "a}b", "{{title}}",
                            "  ", "{TITLE} x", "x{port}y",
                            "{title} {server-mode} {port} {tls-port} {unixsocket} {config-file}"],
    "replicaof": ["no one", "1.2.3.4 5"],
    "dbfilename": ["a/b", "x.rdb"],
    "activedefrag": ["yes", "no", "maybe"],
    "appendonly": ["no", "maybe"],
    "watchdog-period": ["-1", "abc"],
    "tls-cluster": ["maybe"], "tls-replication": ["maybe"],
}


def _value_classes(option):
    """Boundary and malformed values for an option of a plain kind."""
    kind = option.kind
    if option.name in _SPECIAL_VALUES:
        return _SPECIAL_VALUES[option.name]
    if option.type == "bool":
        return ["YES", "no", "maybe", ""]
    if option.type == "enum":
        return [choice.upper() for choice in kind.choices] + ["foo", ""]
    if option.type in ("int", "memory"):
        low, high = option.bounds
        values = [str(low), str(high), str(low - 1), "abc", " 1", "+1", "010"]
        if high < 2**64 - 1:    # past it Redis's memtoull wraps around, where ours refuses
            values.append(str(high + 1))
        return values + (["1kb", "2mb", "1t"] if option.type == "memory" else ["1k"])
    return ["some text", "", "a b"]


REDIS_ONLY_CASES = [(option.name, value) for option in REDIS_ONLY_OPTIONS
                    if option.name != "save" for value in _value_classes(option)]
REDIS_ONLY_CASES += [(alias, value) for alias in ("slave-priority", "hash-max-ziplist-entries",
                                                   "lua-time-limit", "min-slaves-to-write")
                     for value in ("7", "-1", "x")]


@needs_redis
@pytest.mark.parametrize("name, value", REDIS_ONLY_CASES, ids=lambda x: repr(x))
def test_redis_only_options_set_like_redis(oracle, mirror, name, value):
    before = redis_get(oracle, name)
    assert dict(mirror.get([name])) == before
    theirs = ask(oracle, "CONFIG", "SET", name, value)
    ours = set_reply(mirror, [(name, value)])
    try:
        assert ours == theirs
        assert dict(mirror.get([name])) == redis_get(oracle, name)
    finally:
        if theirs == "OK":
            assert ask(oracle, "CONFIG", "SET", *before.popitem()) == "OK"
        if ours == "OK":
            mirror.set([(name, redis_get(oracle, name)[name])])


@needs_redis
def test_aliases_are_names_of_their_own(oracle, mirror):
    """An option and its alias may both be set at once (the last one wins), and each is
    answered under the name asked for, as by Redis."""
    pairs = [("slave-priority", "5"), ("replica-priority", "6")]
    try:
        assert set_reply(mirror, pairs) == ask(oracle, "CONFIG", "SET", *sum(pairs, ())) == "OK"
        names = ["slave-priority", "replica-priority", "*priority*", "SLAVE-PRIORITY"]
        assert dict(mirror.get(names)) == redis_get(oracle, *names)
        assert set_reply(mirror, [("slave-priority", "1"), ("SLAVE-priority", "2")]) == \
            ask(oracle, "CONFIG", "SET", "slave-priority", "1", "SLAVE-priority", "2")
    finally:
        mirror.set([("replica-priority", "100")])
        ask(oracle, "CONFIG", "SET", "replica-priority", "100")


@needs_redis
def test_hidden_options_answer_only_by_name(oracle, mirror):
    names = ["key-load-delay", "*delay*", "rdb-key-save-delay", "*-save-*", "watchdog-period",
             "use-exit-on-panic", "loading-process-events-interval-bytes", "*interval*"]
    assert dict(mirror.get(names)) == redis_get(oracle, *names)


@needs_redis
def test_loglevel_also_accepts_nothing(oracle, mirror):
    # Redis 7.2 added "nothing"; 7.0.15 lists the other four in its error.
    theirs = ask(oracle, "CONFIG", "SET", "loglevel", "foo")
    assert set_reply(mirror, [("loglevel", "foo")]) == theirs.replace("warning", "warning, nothing")
    assert set_reply(mirror, [("loglevel", "nothing")]) == "OK"
    assert mirror["loglevel"] == "nothing"
    mirror.set([("loglevel", "warning")])


# ---------------------------------------------------------------- startup errors vs redis-server

def redis_startup_error(args, cwd):
    """The lines after redis-server's FATAL title for a config that must fail to load."""
    run = subprocess.run(["redis-server", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    assert run.returncode != 0, run.stdout
    lines = run.stderr.strip().split("\n")
    assert lines[0] == "*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***", run.stderr
    return lines[1:]


def our_startup_error(argv):
    with pytest.raises(ConfigError) as caught:
        load(*argv)
    lines = str(caught.value).split("\n")
    assert lines[0] == "*** FATAL CONFIG FILE ERROR (cxlredis) ***"
    return lines[1:]


BAD_FILES = [
    "maxmemory abc", "port 16400 1", "foo bar", 'requirepass "abc', 'requirepass "abc"x',
    "requirepass 'a'b", "timeout -1", "timeout", "save 100", f"{COB} foo 1 2 3", f'{COB} ""',
    "hz abc", "unixsocketperm 8", "unixsocketperm 1000", "protected-mode maybe", "maxmemory-policy foo",
    "dir /nonexistent", "dir /etc/passwd", 'bind "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"',
    "maxclients 0", "include", "proto-max-bulk-len 1kb",
    "rdbcompression maybe", "dbfilename a/b", "appendfilename a/b", "appenddirname a/b",
    "replicaof 1.2.3.4", "replicaof 1.2.3.4 99999", "slaveof a b c", "supervised foo",
    "activedefrag yes", "oom-score-adj-values 1 2", 'shutdown-on-sigint ""',
    "maxmemory-clients 101%", "socket-mark-id -1", "io-threads 0", "io-threads 129",
    "proc-title-template {bad}", "list-max-ziplist-entries 1 2", "lua-replicate-commands",
    "repl-backlog-size 0", "hash-max-ziplist-entries -1", "syslog-facility local8",
]


@needs_redis
@pytest.mark.parametrize("bad_line", BAD_FILES)
def test_file_errors_like_redis(tmp_path, bad_line):
    # "port 0" first: should a line load after all, redis-server must not listen anywhere.
    conf = write(tmp_path / "bad.conf", f"# a comment\n\nport 0\n  {bad_line}  \n")
    assert our_startup_error([conf]) == redis_startup_error([conf], tmp_path)


BAD_COMMAND_LINES = [
    ["--timeout", "abc"], ["--maxmemory", "1", "2"], ["--foo", "bar"], ["--daemonize"],
    ["--maxmemory 'abc"], ["--hz", "1", "--timeout", "-5"], ["--save", "100"], ["--timeout", "--hz"],
    ["--port", "0", "stray"],
]


@needs_redis
@pytest.mark.parametrize("argv", BAD_COMMAND_LINES)
def test_command_line_errors_like_redis(tmp_path, argv):
    theirs = redis_startup_error(["--port", "0", *argv], tmp_path)
    ours = our_startup_error(["--port", "0", *argv])
    assert ours[0].startswith("Reading the command line, at option ")
    assert ours[1:] == theirs[1:]     # '>>> line' and the reason


def test_error_blocks_name_their_source(tmp_path):
    conf = write(tmp_path / "a.conf", "timeout 1\n\ntimeout x\n")
    assert str(pytest.raises(ConfigError, load, conf).value) == (
        "*** FATAL CONFIG FILE ERROR (cxlredis) ***\n"
        "Reading the configuration file, at line 3\n"
        ">>> 'timeout x'\n"
        "argument couldn't be parsed into an integer")
    assert our_startup_error(["--port", "1", "--hz", "x"]) == [
        "Reading the command line, at option 2", ">>> 'hz \"x\"'",
        "argument couldn't be parsed into an integer"]
    error = pytest.raises(ConfigError, load, environ={"CXLREDIS_ARENA_SIZE": "huge"}).value
    assert str(error).split("\n")[1:] == [
        "Reading the environment variable CXLREDIS_ARENA_SIZE", ">>> 'CXLREDIS_ARENA_SIZE=huge'",
        "argument must be a memory value"]
    write(tmp_path / "inc.conf", "port 1\nmaxmemory-policy lots\n")
    main = write(tmp_path / "main.conf", "include inc.conf\n")
    assert str(pytest.raises(ConfigError, load, main).value).split("\n")[1:] == [
        f"Reading the included file '{tmp_path / 'inc.conf'}', at line 2", ">>> 'maxmemory-policy lots'",
        "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, "
        "volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction"]


def test_missing_files_are_fatal(tmp_path):
    missing = tmp_path / "missing.conf"
    assert str(pytest.raises(ConfigError, load, str(missing)).value) == (
        f"Fatal error, can't open config file '{missing}': No such file or directory")
    main = write(tmp_path / "main.conf", "include missing.conf\n")
    assert "can't open config file" in str(pytest.raises(ConfigError, load, main).value)


def test_include_cycle_is_an_error(tmp_path):
    write(tmp_path / "b.conf", "include a.conf\n")
    a = write(tmp_path / "a.conf", "include b.conf\n")
    assert "includes itself" in str(pytest.raises(ConfigError, load, a).value)


# ---------------------------------------------------------------- parsing pieces

@pytest.mark.parametrize("text, expected", [
    ("0", 0), ("1", 1), ("1b", 1), ("1B", 1), ("1k", 1000), ("1K", 1000), ("1kb", 1024), ("1KB", 1024),
    ("2m", 2_000_000), ("2mb", 2 * 1024**2), ("2Mb", 2 * 1024**2), ("3g", 3_000_000_000),
    ("3gb", 3 * 1024**3), ("3gB", 3 * 1024**3), ("", 0), ("kb", 0), ("007", 7),
    ("18446744073709551615", 2**64 - 1),
])
def test_memory_units(text, expected):
    assert parse_memory(text) == expected


@pytest.mark.parametrize("text", ["-1", "1.5mb", " 1", "+1", "1t", "1 kb", "1kib", "1e3",
                                  "18446744073709551616", "17179869184gb", "١"])
def test_memory_values_refused(text):
    with pytest.raises(ConfigSetError, match="argument must be a memory value"):
        load().set([("maxmemory", text)])


@pytest.mark.parametrize("value, text", [(0, "0"), (1000, "1000"), (1024, "1kb"), (1536, "1536"),
                                         (3 * 1024**2, "3mb"), (1024**3, "1gb"), (5 * 1024**3, "5gb")])
def test_memory_rewrite_form(value, text):
    assert format_memory(value) == text
    assert parse_memory(text) == value


@pytest.mark.parametrize("line, args", [
    ("a b  c", ["a", "b", "c"]),
    ("  \t a\t\tb \r\n", ["a", "b"]),
    ('"a b" c', ["a b", "c"]),
    ('"\\n\\r\\t\\b\\a\\"\\\\\\q"', ["\n\r\t\b\a\"\\q"]),
    ('"\\x41\\x7a\\x4" x', ["Azx4", "x"]),      # \x without two hex digits is a plain x
    ("'a \\' \\n b'", ["a ' \\n b"]),
    ('a"b c"d', None),
    ('a"b c" d', ["ab c", "d"]),
    ('""', [""]),
    ("''  ''", ["", ""]),
    ('"abc', None), ("'abc", None), ('"abc"x', None), ("'abc'x", None),
    ("", []), ("   ", []),
])
def test_split_args_follows_redis_quoting(line, args):
    if args is None:
        with pytest.raises(ValueError):
            split_args(line)
    else:
        assert split_args(line) == args


@given(st.binary())
def test_quote_round_trips_any_bytes(data):
    text = data.decode("utf-8", "surrogateescape")
    assert split_args(quote(text)) == [text]


def test_quote_is_redis_repr():
    assert quote('a "b"\\\n\x01é') == '"a \\"b\\"\\\\\\n\\x01\\xc3\\xa9"'


@pytest.mark.parametrize("pattern, name, matches", [
    ("*", "port", True), ("p*", "port", True), ("P*T", "port", True), ("*x*", "port", False),
    ("p?rt", "port", True), ("p??rt", "port", False), ("p[a-z]rt", "port", True),
    ("p[^o]rt", "port", False), ("p[z-a]rt", "port", True), ("p[O]rt", "port", True),
    ("p\\ort", "port", True), ("p[\\o]rt", "port", True), ("p[\\O]rt", "port", False),
    ("por[t", "port", True), ("po[", "port", False), ("port*", "port", True), ("port**", "port", True),
    ("*-*", "port", False), ("m*-*", "maxmemory-policy", True), ("*y", "maxmemory-policy", True),
])
def test_glob_match(pattern, name, matches):
    assert glob_match(pattern, name) is matches


# ---------------------------------------------------------------- loading

def test_defaults_without_a_file():
    config = load()
    assert config.path is None
    assert config["port"] == 6379
    assert config["bind"] == ("127.0.0.1",)
    assert config["maxmemory"] == 0
    assert config["arena-size"] == 1024**3
    assert config["large-value-threshold"] == 64 * 1024
    assert config["maxmemory-policy"] == "allkeys-lru"
    assert config["dir"] == os.getcwd()
    assert config["save"] == ()
    replica = OutputBufferLimit(hard=256 * 1024**2, soft=64 * 1024**2, soft_seconds=60)
    assert config["client-output-buffer-limit"]["replica"] == replica


def test_file_syntax(tmp_path):
    conf = write(tmp_path / "c.conf", "\n".join([
        "# comment", "   # indented comment", "", "PORT 7001", "  timeout   5  ",
        'requirepass "with space\\x21"', "logfile 'it\\'s.log'", "bind 127.0.0.1 ::1",
        'unixsocket ""', "unixsocketperm 0770", "maxmemory 100MB", "hz 1000",
        "maxmemory-policy VOLATILE-TTL", "arena-hugepages YES", "arena-numa-node 1",
        "save 900 1", "save 300 10", f"{COB} pubsub 1mb 2mb 3", f"{COB} normal 1 2 3 replica 0 0 0",
        "dir .", "\r",
    ]))
    config = load(conf)
    assert config.path == conf
    assert config["port"] == 7001 and config["timeout"] == 5
    assert config["requirepass"] == "with space!"
    assert config["logfile"] == "it's.log"
    assert config["bind"] == ("127.0.0.1", "::1")
    assert config["unixsocketperm"] == 0o770
    assert config["maxmemory"] == 100 * 1024**2
    assert config["hz"] == 500          # clamped like Redis
    assert config["maxmemory-policy"] == "volatile-ttl"
    assert config["arena-hugepages"] is True and config["arena-numa-node"] == 1
    assert config["save"] == ((900, 1), (300, 10))   # file lines accumulate
    assert config["client-output-buffer-limit"] == {
        "normal": (1, 2, 3), "replica": (0, 0, 0), "pubsub": (1024**2, 2 * 1024**2, 3)}
    assert config["dir"] == os.getcwd()
    assert dict(config.get(["unixsocketperm", "save", "hz"])) == {
        "unixsocketperm": "770", "save": "900 1 300 10", "hz": "500"}


def test_multi_argument_options_split_a_single_argument(tmp_path):
    conf = write(tmp_path / "c.conf", 'bind "127.0.0.1 -::1"\nsave "60 1"\n')
    config = load(conf, "--client-output-buffer-limit", "pubsub 1 2 3 normal '4' 5 6")
    assert config["bind"] == ("127.0.0.1", "-::1")
    assert config["save"] == ((60, 1),)
    assert config["client-output-buffer-limit"]["normal"] == (4, 5, 6)
    assert load("--bind", "")["bind"] == ()
    assert load("--bind")["bind"] == ()


def test_include_is_relative_to_the_including_file(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "inner.conf", "timeout 9\nhz 20\n")
    write(tmp_path / "sub" / "middle.conf", "include inner.conf\nhz 30\n")
    main = write(tmp_path / "main.conf", "timeout 1\ninclude sub/middle.conf\nport 7002\n")
    config = load(main)
    assert (config["timeout"], config["hz"], config["port"]) == (9, 30, 7002)
    absolute = write(tmp_path / "abs.conf", f"include {tmp_path / 'sub' / 'inner.conf'}\n")
    assert load(absolute)["timeout"] == 9


def test_precedence_defaults_file_environment_command_line(tmp_path):
    conf = write(tmp_path / "c.conf", "port 7000\ntimeout 1\nhz 11\nsave 1 1\nsave 2 2\n")
    environ = {"CXLREDIS_TIMEOUT": "2", "CXLREDIS_HZ": "12", "CXLREDIS_MAXMEMORY_POLICY": "noeviction",
               "CXLREDIS_ONLY": "_store", "CXLREDIS_NOT_AN_OPTION": "x", "CXLREDIS_SAVE": "3 3",
               "CXLREDIS_CLIENT_OUTPUT_BUFFER_LIMIT": "pubsub 1 1 1", "CXLREDIS_REQUIREPASS": "a b"}
    config = load(conf, "--hz", "13", "--save", "4", "4", environ=environ)
    assert config["port"] == 7000                    # file over default
    assert config["timeout"] == 2                    # environment over file
    assert config["hz"] == 13                        # command line over environment
    assert config["maxmemory-policy"] == "noeviction"
    assert config["requirepass"] == "a b"            # a single-argument value is taken whole
    assert config["save"] == ((4, 4),)               # save from the command line replaces
    assert config["client-output-buffer-limit"]["pubsub"] == (1, 1, 1)
    assert load(conf, environ=environ)["save"] == ((3, 3),)


def test_command_line_grouping_like_redis_server():
    config = load("--save", "--requirepass", "--timeout", "--hz", "3", "--bind", "127.0.0.1", "::1",
                  "--port 7003")
    assert config["save"] == ()                      # a bare --save means --save ""
    assert config["requirepass"] == "--timeout"      # the argument after --name is its value
    assert config["hz"] == 3
    assert config["bind"] == ("127.0.0.1", "::1")
    assert config["port"] == 7003                    # "--name value" in one argument
    assert load("--save")["save"] == ()


def test_shipped_conf_documents_every_option_and_loads_to_the_defaults():
    text = SHIPPED_CONF.read_text()
    lines = [line.strip() for line in text.split("\n")]
    for option in OPTIONS:
        assert any(line.split(" ")[0] == option.name or line.startswith(f"# {option.name} ")
                   for line in lines), option.name
        # a comment paragraph right above the option line
        index = next(i for i, line in enumerate(lines)
                     if line.split(" ")[0] == option.name or line.startswith(f"# {option.name} "))
        assert lines[index - 1].startswith("#"), option.name
    assert values(load(str(SHIPPED_CONF))) == values(load())


def test_option_table_is_complete():
    assert len(NAMES) == len(ALL_OPTIONS)
    for option in Config.options():
        assert option.doc and option.doc.endswith(".")
        assert option.mutability in ("mutable", "immutable", "protected")
        assert option.type in ("bool", "int", "octal", "memory", "enum", "string", "special")
        if option.type in ("int", "octal", "memory"):
            low, high = option.bounds
            assert low <= option.initial() <= high
        assert option.name == option.name.lower()
    immutable = {o.name for o in OPTIONS if o.mutability == "immutable"}
    assert {"databases", "arena-size", "arena-offset", "arena-path", "arena-hugepages", "arena-prefault",
            "arena-numa-node", "arena-reset"} <= immutable
    assert all("accepted with no effect" in o.doc for o in REDIS_ONLY_OPTIONS)
    assert not {o.name for o in OPTIONS} & {o.name for o in REDIS_ONLY_OPTIONS}


# ---------------------------------------------------------------- CONFIG SET

def test_set_is_atomic():
    config = load()
    before = values(config)
    message = set_reply(config, [("timeout", "5"), ("maxmemory", "1mb"), ("hz", "abc")])
    assert message == ("ERR CONFIG SET failed (possibly related to argument 'hz') - "
                       "argument couldn't be parsed into an integer")
    assert values(config) == before
    config.set([(b"timeout", b"5"), ("MaxMemory", "1mb")])
    assert (config["timeout"], config["maxmemory"]) == (5, 1024**2)


def test_set_error_is_a_command_error():
    with pytest.raises(CommandError) as caught:
        load().set([("nope", "1")])
    assert caught.value.prefix == "ERR"


def test_on_change_sees_all_new_values_and_runs_only_on_change():
    config = load()
    seen = []
    config.on_change("port", lambda port: seen.append(("port", port, tuple(config["bind"]))))
    config.on_change("bind", lambda bind: seen.append(("bind", bind, config["port"])))
    config.set([("port", "7005"), ("bind", "127.0.0.2")])
    assert seen == [("port", 7005, ("127.0.0.2",)), ("bind", ("127.0.0.2",), 7005)]
    seen.clear()
    config.set([("port", "7005"), ("bind", "127.0.0.2"), ("timeout", "3")])
    assert seen == []


def test_on_change_veto_rolls_everything_back():
    config = load()
    calls = []
    config.on_change("timeout", lambda value: calls.append(("timeout", value)))

    def refuse(port):
        calls.append(("port", port))
        if port == 1:
            raise ConfigSetError("Unable to listen on this port: Permission denied")

    config.on_change("port", refuse)
    before = values(config)
    message = set_reply(config, [("timeout", "7"), ("port", "1"), ("hz", "50")])
    assert message == ("ERR CONFIG SET failed (possibly related to argument 'port') - "
                       "Unable to listen on this port: Permission denied")
    assert values(config) == before
    # the timeout callback ran, then was called again with the old value
    assert calls == [("timeout", 7), ("port", 1), ("timeout", 0)]
    with pytest.raises(KeyError):
        config.on_change("no-such-option", print)


def test_hooks_and_values_are_per_instance():
    first, second = load(), load()
    first.set([("timeout", "9")])
    assert second["timeout"] == 0


# ---------------------------------------------------------------- CONFIG REWRITE

def test_rewrite_without_a_file():
    assert set_reply_rewrite(load()) == "ERR The server is running without a config file"


def set_reply_rewrite(config):
    try:
        config.rewrite()
    except ConfigSetError as error:
        return str(error)
    return "OK"


ORIGINAL = """\
# top comment
port 7010

# the policy, with a trailing comment line below
maxmemory-policy volatile-lru
# maxmemory 100mb
timeout 5
timeout 6
include extra.conf
save 900 1
client-output-buffer-limit normal 1mb 0 0
client-output-buffer-limit pubsub 1mb 0 0
requirepass "a b\\x41"
"""


def test_rewrite_round_trip(tmp_path):
    write(tmp_path / "extra.conf", "hz 15\n")
    path = write(tmp_path / "c.conf", ORIGINAL)
    os.chmod(path, 0o640)
    config = load(path, "--slowlog-max-len", "64")
    assert config["timeout"] == 6 and config["requirepass"] == "a bA"
    config.set([("maxmemory-policy", "allkeys-lru"), ("timeout", "7"), ("maxmemory", "3000000"),
                ("proto-max-bulk-len", "2gb"), ("save", "100 1 200 2"), ("requirepass", 'x"y z\n'),
                (COB, "pubsub 0 0 0")])
    config.rewrite()
    lines = Path(path).read_text().split("\n")
    assert lines[:15] == [
        "# top comment",
        "port 7010",
        "",
        "# the policy, with a trailing comment line below",
        "maxmemory-policy allkeys-lru",          # updated in place, although now the default
        "# maxmemory 100mb",                     # comments kept
        "timeout 7",
        "",                                      # the second timeout line is blanked
        "include extra.conf",                    # kept as it is
        "save 100 1",
        "client-output-buffer-limit normal 1mb 0 0",
        "client-output-buffer-limit replica 256mb 64mb 60",   # lines of an option are reused
        'requirepass "x\\"y z\\n"',
        "",
        REWRITE_SIGNATURE,
    ]
    assert sorted(lines[15:]) == sorted([
        "hz 15", "maxmemory 3000000", "proto-max-bulk-len 2gb", "save 200 2",
        "client-output-buffer-limit pubsub 0 0 0", "slowlog-max-len 64", ""])
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert values(load(path)) == values(config)
    # a second rewrite changes nothing
    content = Path(path).read_text()
    config.rewrite()
    assert Path(path).read_text() == content


def test_rewrite_shipped_file_is_a_no_op_at_defaults(tmp_path):
    path = str(tmp_path / "cxlredis.conf")
    shutil.copy(SHIPPED_CONF, path)
    config = load(path)
    config.rewrite()
    assert Path(path).read_text() == SHIPPED_CONF.read_text()
    config.set([("maxmemory", "2gb"), ("large-value-threshold", "1mb")])
    config.rewrite()
    text = Path(path).read_text()
    assert "\nmaxmemory 2gb\n" in text and "\nlarge-value-threshold 1mb\n" in text
    assert REWRITE_SIGNATURE not in text           # both options were already in the file
    assert text.count("# Bytes of keys and values the arena may hold") == 1
    assert values(load(path)) == values(config)


def test_rewrite_creates_a_missing_file_and_reports_errors(tmp_path):
    path = tmp_path / "gone.conf"
    config = load(write(path, "timeout 3\n"))
    path.unlink()
    config.rewrite()
    assert path.read_text() == f"{REWRITE_SIGNATURE}\ntimeout 3\n"
    path.unlink()
    path.mkdir()        # unreadable as a file, whoever we run as
    assert set_reply_rewrite(config) == "ERR Rewriting config file: Is a directory"


def test_a_multi_argument_value_with_broken_quotes_is_an_error():
    # redis-server 7.0 silently treats `save "100 'x"` as `save ""`; we refuse it.
    lines = our_startup_error(["--save", "100 'x"])
    assert lines[1:] == [">>> 'save \"100 \'x\"'", "Unbalanced quotes in configuration line"]


@needs_redis
def test_rewrite_lines_like_redis(tmp_path):
    """Same file, same CONFIG SETs: the rewritten lines of the shared options agree with Redis's."""
    redis_conf = write(tmp_path / "redis.conf", "# c\ntimeout 5\ntimeout 6\nsave 900 1\n"
                       f"{COB} normal 1mb 0 0\n{COB} pubsub 1mb 0 0\n")
    our_conf = write(tmp_path / "ours.conf", Path(redis_conf).read_text())
    server = ServerProcess("redis", conf=redis_conf)
    try:
        server.start()
        sets = [("maxmemory", "3000000"), ("proto-max-bulk-len", "2gb"), ("save", "100 1 200 2"),
                ("slowlog-log-slower-than", "-1"), ("client-query-buffer-limit", "1073741825"),
                ("timeout", "7"), ("requirepass", 'x"y z\n\x01')]
        with raw_connection(server.port) as conn:   # one connection: requirepass applies to new ones
            for name, value in sets:
                assert parse_reply(conn.request("CONFIG", "SET", name, value)) == "OK"
            assert parse_reply(conn.request("CONFIG", "REWRITE")) == "OK"
    finally:
        server.close()
    config = load(our_conf)
    config.set(sets)
    config.rewrite()
    names = {name for name, _ in sets} | {COB}

    def option_lines(path):
        return sorted(line for line in Path(path).read_text().split("\n") if line.split(" ")[0] in names)

    assert option_lines(our_conf) == option_lines(redis_conf)


# ---------------------------------------------------------------- Redis's own configuration files

DEBIAN_CONF = Path("/etc/redis/redis.conf")     # from Debian's redis-server package


def _redis_conf(name, tmp_path):
    if name == "debian":
        if not DEBIAN_CONF.exists():
            pytest.skip("Debian's redis-server package is not installed")
        return str(DEBIAN_CONF)
    return write(tmp_path / "default.conf", REDIS_TEST_SUITE_CONF)


@needs_redis
@pytest.mark.parametrize("name", ["redis test suite", "debian"])
def test_redis_conf_loads_to_redis_values(tmp_path, name):
    """A Redis 7.0 configuration file loads as it is, every shared option (aliases too) at
    the value redis-server gives it from the same file. Where the servers must differ (the
    port, the directories, the foreground), the same overrides go to both."""
    conf = _redis_conf(name, tmp_path)
    overrides = {"daemonize": "no", "pidfile": str(tmp_path / "pid"), "logfile": "",
                 "enable-debug-command": "local"}
    server = ServerProcess("redis", conf=conf, options=overrides)
    try:
        server.start()
        theirs = redis_get(server, "*")
        argv = [conf, "--port", str(server.port), "--unixsocket", server.unixsocket, "--save", "",
                "--appendonly", "no", "--dir", str(server.dir), "--loglevel", "warning"]
        for option, value in overrides.items():
            argv += [f"--{option}", value]
        ours = dict(load(*argv).get(["*"]))
    finally:
        server.close()
    text = Path(conf).read_text()
    set_by_file = {line.split()[0].lower() for line in text.split("\n")
                   if line.strip() and not line.startswith("#")}
    # cxlredis's own defaults, where the file leaves them to the server.
    compared = [option for option in SHARED
                if option not in OUR_DEFAULTS or option in set_by_file]
    assert {n: ours[n] for n in compared} == {n: theirs[n] for n in compared}


@pytest.mark.parametrize("name", ["redis test suite", "debian"])
def test_redis_conf_names_each_directive_without_effect_once(tmp_path, name):
    config = load(_redis_conf(name, tmp_path), "--daemonize", "no")
    groups = dict((why, names) for why, names in config.ignored_directives())
    persistence = groups["the arena is the persistence: there are no RDB or AOF files"]
    assert {"rdbcompression", "dbfilename", "appendonly", "appendfsync"} <= set(persistence)
    assert ("save" in persistence) == (name == "redis test suite")    # Debian's has none
    assert "repl-diskless-sync-delay" in groups["cxlredis has no replicas"]
    named = [name for names in groups.values() for name in names]
    assert len(named) == len(set(named))        # `save` has three lines, one mention
    assert not {"port", "bind", "timeout", "databases", "notify-keyspace-events",
                "latency-monitor-threshold", "daemonize", "loglevel"} & set(named)


def test_deprecated_directives_are_skipped_and_replication_refused(tmp_path):
    conf = write(tmp_path / "old.conf", "list-max-ziplist-entries 512\nlist-max-ziplist-value 64\n"
                 "lua-replicate-commands yes\nslaveof no one\nhash-max-ziplist-entries 7\n")
    config = load(conf)
    assert config["hash-max-listpack-entries"] == 7 and config["replicaof"] == ""
    assert "list-max-ziplist-entries" in dict(config.ignored_directives()).get(
        "it tunes a part of redis-server that cxlredis does not have", [])
    reason = our_startup_error(["--replicaof", "10.0.0.1", "6379"])[-1]
    assert reason.startswith("cxlredis does not replicate")
    assert our_startup_error(["--loadmodule", "/x.so"])[-1] == "cxlredis does not load Redis modules"


def test_include_with_a_glob_reads_every_match_in_order(tmp_path):
    (tmp_path / "conf.d").mkdir()
    write(tmp_path / "conf.d" / "b.conf", "timeout 2\n")
    write(tmp_path / "conf.d" / "a.conf", "timeout 1\nhz 7\n")
    main = write(tmp_path / "main.conf", "include conf.d/*.conf\ninclude none.d/*.conf\n")
    config = load(main)
    assert (config["timeout"], config["hz"]) == (2, 7)


@needs_redis
def test_rewrite_of_redis_only_options_and_aliases_like_redis(tmp_path):
    text = "slave-priority 5\nrdbcompression no\nappendfsync always\n"
    redis_conf = write(tmp_path / "redis.conf", text)
    our_conf = write(tmp_path / "ours.conf", text)
    sets = [("replica-priority", "7"), ("appendfsync", "everysec"), ("lazyfree-lazy-expire", "yes"),
            ("oom-score-adj-values", "1 2 3"), ("shutdown-on-sigint", "nosave now")]
    server = ServerProcess("redis", conf=redis_conf)
    try:
        server.start()
        for name, value in sets:
            assert ask(server, "CONFIG", "SET", name, value) == "OK"
        assert ask(server, "CONFIG", "REWRITE") == "OK"
    finally:
        server.close()
    config = load(our_conf)
    config.set(sets)
    config.rewrite()
    names = {name for name, _ in sets} | {"slave-priority", "rdbcompression"}

    def option_lines(path):
        return sorted(line for line in Path(path).read_text().split("\n") if line.split(" ")[0] in names)

    assert option_lines(our_conf) == option_lines(redis_conf)
