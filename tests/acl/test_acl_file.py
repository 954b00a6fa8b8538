"""ACL files and `user` directives: a generated ACL file loaded by redis-server
and cxlredis (the `aclfile` option), ACL LIST / GETUSER / SAVE / LOAD
compared, the errors of bad files, and the startup errors of bad setups."""
import hashlib
import random
import subprocess

import pytest

from acl_helpers import (ACL_LIST, GETUSER, acl_servers, canonical_rules, oracle_process,  # noqa: F401
                         request, server_under_test)
from conftest import ServerStartError, TARGET, free_port, parse_reply, raw_connection
from diff_harness import cmd, run_sequence

# Command rules, described back (ACL LIST, GETUSER, SAVE, CONFIG REWRITE) as Redis 7.0
# recomputes them (acl_helpers; test_acl_diff has more).
COMMAND_RULES = [
    "+@all", "-@all", "+@all -@dangerous", "-@all +@read", "-@all +get +hset",
    "-@all +@hash +get", "+@all -flushall -flushdb", "-@all +client|id +config|get",
    "-@all +select|0", "-@all +@connection", "-@all +@transaction", "+@all -@admin",
    "-@all +@keyspace", "+memory|doctor +memory -get +@string -set", "-@all +@admin -config",
    "-@all +select|0 +SELECT|A +select|a", "+@all -get +get -@all +@hash -hset",
]
KEY_RULES = ["~*", "allkeys", "~cache:*", "%R~ro:* %W~wo:*", "~a ~b", "", "%RW~x:*"]
CHANNEL_RULES = ["&*", "resetchannels", "resetchannels &news.*", "allchannels", ""]
PASSWORD_RULES = [">pw1", "nopass", "#" + hashlib.sha256(b"hashed").hexdigest(), ">a >b", ""]
SELECTORS = ["", "(~sel:* -@all +get)", "(%R~r:* +@read) (~w:* -@all +set)"]


def generated_acl_file(seed, users=14):
    rng = random.Random(seed)
    lines = ["user default on nopass ~* &* +@all"]
    for n in range(users):
        rules = [rng.choice(["on", "off"]), rng.choice(PASSWORD_RULES), rng.choice(KEY_RULES),
                 rng.choice(CHANNEL_RULES), rng.choice(COMMAND_RULES), rng.choice(SELECTORS)]
        lines.append(" ".join(["user", f"user{n}"] + [r for r in rules if r]))
    return "\n".join(lines) + "\n"


@pytest.fixture
def acl_pair(tmp_path):
    """redis-server and cxlredis, each with its own copy of the same ACL file."""
    started = []

    def start(content, **options):
        servers = []
        for kind in ("redis", "cxlredis"):
            path = tmp_path / f"{kind}.acl"
            path.write_text(content)
            server = oracle_process() if kind == "redis" else server_under_test()
            server.options.update(aclfile=str(path), **options)
            started.append(server)
            servers.append(server.start())
        return servers

    try:
        yield start
    finally:
        for server in started:
            server.close()


def test_generated_acl_files_load_alike(acl_pair, tmp_path):
    # The first file is loaded at startup, the next ones by ACL LOAD (the same servers).
    oracle, ours = acl_pair(generated_acl_file(1))
    for seed in (1, 2, 3):
        content = generated_acl_file(seed)
        steps = []
        if seed > 1:
            for kind in ("redis", "cxlredis"):
                (tmp_path / f"{kind}.acl").write_text(content)
            steps.append(("ACL", "LOAD"))
        names = [line.split(" ")[1] for line in content.splitlines()]
        steps += [cmd("ACL", "LIST", compare=ACL_LIST), ("ACL", "USERS")]
        steps += [cmd("ACL", "GETUSER", name, compare=GETUSER) for name in names]
        for conn, password in enumerate(["pw1", "a", "b", "hashed", "wrong"], 1):
            steps += [cmd("AUTH", name, password, conn=conn) for name in names]
        for protocol in (2, 3):
            run_sequence(oracle, ours, steps, protocol, f"ACL file {seed}")
        assert len(parse_reply(request(ours, "ACL", "LIST"))) == len(names)


def test_acl_save_and_load_round_trip(acl_pair, tmp_path):
    oracle, ours = acl_pair(generated_acl_file(4))
    steps = [
        ("ACL", "SETUSER", "added", "on", ">new", "~n:*", "-@all", "+get"),
        ("ACL", "DELUSER", "user0"),
        ("ACL", "SETUSER", "user1", "resetpass", ">changed"),
        ("ACL", "SAVE"),
        ("ACL", "SETUSER", "unsaved", "on"),
        ("ACL", "LOAD"),
        ("ACL", "USERS"),
        cmd("ACL", "LIST", compare=ACL_LIST),
        cmd("AUTH", "added", "new", conn=1),
        cmd("AUTH", "user1", "changed", conn=2),
    ]
    run_sequence(oracle, ours, steps, 2, "ACL SAVE / LOAD")
    saved = {kind: (tmp_path / f"{kind}.acl").read_text().splitlines() for kind in ("redis", "cxlredis")}
    assert [canonical_rules(line) for line in saved["cxlredis"]] == \
        [canonical_rules(line) for line in saved["redis"]]
    assert saved["cxlredis"] == sorted(saved["cxlredis"])     # users in name order, as Redis


BAD_FILES = [
    "# a comment\nuser a on\n",
    "user\n",
    "usr a on\n",
    "user a on bogus\n",
    "user a on\nuser a off\n",
    'user "a b" on\n',
    "user  a on\n",
    "user a on +@all\nuser b on +nocmd -nocmd2\nuser c bogus bogus2\nuser d <x\n",
    "user a on -@all +config|get|x\n",
    "user a on\nuser b on\nuser a on\nuser q bad\n",
    "user a on ~* ~x\n",
]
GOOD_FILES = ["", "user a  on\n", "user a on\r\n\n\n", "  user a on ( ~x ) (~y +get)\t\n",
              "user a\n", "user a on >pw\nuser default on >secret\n"]


def test_acl_load_errors_and_edge_cases(acl_pair, tmp_path):
    admin = "user admin on nopass ~* &* +@all\n"
    oracle, ours = acl_pair(admin)
    for content in BAD_FILES + GOOD_FILES:
        loaded, listed = [], []
        for server, kind in ((oracle, "redis"), (ours, "cxlredis")):
            # The admin line comes last, so the line numbers in errors are the case's own.
            (tmp_path / f"{kind}.acl").write_text(content + admin)
            loaded.append(request(server, "ACL", "LOAD", auth=("admin", "x")))
            listed.append(request(server, "ACL", "LIST", auth=("admin", "x")))
        assert loaded[1] == loaded[0].replace(b"redis.acl", b"cxlredis.acl"), content
        assert ACL_LIST((b"ACL", b"LIST"), *listed), content


def test_unclosed_selector_in_a_file(cxl_factory, tmp_path):
    # redis-server 7.0.15 crashes on this line (a NULL dereference); cxlredis reports it.
    path = tmp_path / "users.acl"
    path.write_text("user admin on nopass ~* +@all\n")
    if TARGET == "redis":
        pytest.skip("redis-server 7.0 crashes on an unclosed selector in an ACL file")
    server = cxl_factory(aclfile=str(path))
    path.write_text("user a on (~x +get\n")
    assert request(server, "ACL", "LOAD") == (
        f"-ERR {path}:1: Unmatched parenthesis in selector definition.WARNING: ACL errors "
        "detected, no change to the previously active ACL rules was performed\r\n").encode()


def test_acl_load_disconnects_other_users(acl_pair):
    oracle, ours = acl_pair("user default on nopass ~* &* +@all\nuser u on >p ~* +@all\n")
    steps = [
        cmd("AUTH", "u", "p", conn=1),
        cmd("PING", conn=2),
        ("ACL", "LOAD"),
        cmd("PING", conn=1, closes=True),     # users other than default are replaced
        cmd("PING", conn=2),
        cmd("AUTH", "u", "p", conn=3),
        cmd("ACL", "LOAD", conn=3, closes=True),
    ]
    run_sequence(oracle, ours, steps, 2, "ACL LOAD disconnects")


def test_acl_file_without_default_user_drops_requirepass(acl_pair):
    # Redis recreates `default` (no password) when the file does not declare it.
    oracle, ours = acl_pair("user alice on >a ~* +@all\n", requirepass="secret")
    run_sequence(oracle, ours, [("PING",), ("CONFIG", "GET", "requirepass"),
                                cmd("ACL", "LIST", compare=ACL_LIST)], 2, "no default")


# ------------------------------------------------------------ startup and config files

def _redis_start_failure(tmp_path, *argv):
    # A real port: with port 0 redis-server exits before it reads the ACLs.
    result = subprocess.run(["redis-server", *argv, "--port", str(free_port()), "--save", ""],
                            capture_output=True, text=True, timeout=10, cwd=tmp_path)
    assert result.returncode != 0
    return result.stdout + result.stderr


def _our_start_failure(*argv, **options):
    server = server_under_test(*argv, **options)
    with pytest.raises(ServerStartError):
        server.start(timeout=15)
    log = server.log
    server.close()
    return log


@pytest.mark.skipif(TARGET == "redis", reason="checks cxlredis's startup against redis-server's")
def test_aclfile_and_user_directives_together_are_refused(tmp_path):
    (tmp_path / "users.acl").write_text("user a on\n")
    conf = tmp_path / "both.conf"
    conf.write_text(f"aclfile {tmp_path / 'users.acl'}\nuser x on\n")
    message = ("Configuring Redis with users defined in redis.conf and at the same setting an ACL "
               "file path is invalid. This setup is very likely to lead to configuration errors and "
               "security holes, please define either an ACL file or declare users directly in your "
               "redis.conf, but not both.")
    assert message in _redis_start_failure(tmp_path, str(conf))
    assert message in _our_start_failure(str(conf))


@pytest.mark.skipif(TARGET == "redis", reason="checks cxlredis's startup against redis-server's")
def test_bad_acl_file_stops_the_start(tmp_path):
    path = tmp_path / "users.acl"
    path.write_text("user a on bogus\nusr b\n")
    expected = (f"Aborting Redis startup because of ACL errors: {path}:1: Syntax error. {path}:2 "
                "should start with user keyword followed by the username. WARNING: ACL errors "
                "detected, no change to the previously active ACL rules was performed")
    assert expected in _redis_start_failure(tmp_path, "--aclfile", str(path))
    assert expected in _our_start_failure(aclfile=str(path))
    missing = tmp_path / "missing.acl"
    expected = ("Aborting Redis startup because of ACL errors: Error loading ACLs, opening file "
                f"'{missing}': No such file or directory")
    assert expected in _redis_start_failure(tmp_path, "--aclfile", str(missing))
    assert expected in _our_start_failure(aclfile=str(missing))


@pytest.mark.parametrize("lines, line_number", [
    ("user x on bogus", 1),
    ("user x on\nuser y on <pw", 2),
    ("user x on\nuser x off", 2),
    ("user", 1),
])
def test_bad_user_directives_are_fatal_config_errors(tmp_path, lines, line_number):
    from cxlredis.cli import load_config
    from cxlredis.config import ConfigError
    conf = tmp_path / "users.conf"
    conf.write_text(lines + "\n")
    redis_output = _redis_start_failure(tmp_path, str(conf))
    with pytest.raises(ConfigError) as ours:
        load_config([str(conf)], environ={})
    our_lines = str(ours.value).split("\n")
    assert our_lines[1] == f"Reading the configuration file, at line {line_number}"
    # The offending line and the reason, as redis-server prints them.
    for line in our_lines[2:]:
        assert line in redis_output, (line, redis_output)


def test_unclosed_selector_in_a_user_directive(tmp_path):
    # redis-server 7.0 reports this one as an unknown command; cxlredis says what is wrong.
    from cxlredis.cli import load_config
    from cxlredis.config import ConfigError
    conf = tmp_path / "users.conf"
    conf.write_text("user x on (~a +get\n")
    with pytest.raises(ConfigError) as error:
        load_config([str(conf)], environ={})
    assert str(error.value).split("\n")[1:] == [
        "Reading the configuration file, at line 1", ">>> 'user x on (~a +get'",
        "Error in user declaration 'x': Unmatched parenthesis in acl selector starting at '(~a'."]


def test_user_directives_and_config_rewrite(tmp_path):
    conf_text = ("# users\nuser alice on >a ~cache:* -@all +@read\n"
                 "user default on nopass ~* &* +@all\nport 0\n")
    servers = []
    try:
        for kind in ("redis", "cxlredis"):
            conf = tmp_path / f"{kind}.conf"
            conf.write_text(conf_text)
            server = oracle_process(conf) if kind == "redis" else server_under_test(conf)
            servers.append(server.start())
        steps = [
            cmd("ACL", "LIST", compare=ACL_LIST),
            cmd("AUTH", "alice", "a", conn=1),
            cmd("GET", "cache:1", conn=1),
            cmd("SET", "cache:1", "v", conn=1),
            ("ACL", "SETUSER", "bob", "on", ">b", "~*", "+@all", "-@dangerous"),
            ("ACL", "DELUSER", "alice"),
            ("CONFIG", "SET", "requirepass", "secret"),
            ("CONFIG", "REWRITE"),
        ]
        run_sequence(*servers, steps, 2, "user directives")
        users = {}
        for kind in ("redis", "cxlredis"):
            lines = (tmp_path / f"{kind}.conf").read_text().splitlines()
            users[kind] = sorted(canonical_rules(line) for line in lines if line.startswith("user "))
            assert "# users" in lines
        assert users["cxlredis"] == users["redis"]
        for server in servers:      # the rewritten file starts the same users
            server.restart()
        run_sequence(*servers, [cmd("ACL", "LIST", compare=ACL_LIST),
                                cmd("AUTH", "bob", "b", conn=1),
                                cmd("AUTH", "secret", conn=2)], 2, "after rewrite")
    finally:
        for server in servers:
            server.close()


def test_config_set_of_an_unchanged_requirepass_changes_nothing(acl_servers):
    # As in Redis: only a new value resets the default user's passwords.
    server = acl_servers(requirepass="secret")
    steps = [("AUTH", "secret"),
             ("ACL", "SETUSER", "default", ">other"),
             ("CONFIG", "SET", "requirepass", "secret"),
             ("CONFIG", "SET", "requirepass", "new")]
    with raw_connection(server.port) as conn:
        for step in steps[:3]:
            assert conn.request(*step) == b"+OK\r\n", step
        assert request(server, "AUTH", "other") == b"+OK\r\n"
        assert conn.request(*steps[3]) == b"+OK\r\n"
    for password in ("other", "secret"):
        assert request(server, "AUTH", password) == (
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    assert request(server, "AUTH", "new") == b"+OK\r\n"


def test_immutable_aclfile(cxl_factory, tmp_path):
    server = cxl_factory()
    assert request(server, "CONFIG", "SET", "aclfile", str(tmp_path / "x.acl")) == (
        b"-ERR CONFIG SET failed (possibly related to argument 'aclfile') - can't set immutable "
        b"config\r\n")
