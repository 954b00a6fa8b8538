"""The command table as the single source: lookups, key positions and the per-command
facts that dispatch, the audit log and COMMAND read from it (in-process)."""
import pytest

from cxlredis import audit, commands, errors
from cxlredis.commands import all_specs
from cxlredis.commands.keyspecs import READ, WRITE, key_arguments, key_positions


def test_lookup_folds_ascii_case_and_finds_subcommands():
    assert commands.lookup([b"GeT", b"k"]) == (commands.COMMANDS["get"], None)
    spec, error = commands.lookup([b"config", b"GET", b"maxmemory"])
    assert (spec.name, error) == ("config|get", None)


@pytest.mark.parametrize("argv, error", [
    ([b"nosuch", b"a"], errors.unknown_command([b"nosuch", b"a"])),
    ([b"config", b"nosuch"], errors.unknown_subcommand(b"nosuch", b"config")),
    ([b"get"], errors.wrong_arity("get")),
    ([b"config"], errors.wrong_arity("config")),
])
def test_lookup_errors_are_redis_texts(argv, error):
    assert commands.lookup(argv)[1] == error


def test_find_by_full_name():
    assert commands.find_by_full_name(b"CLIENT|List").name == "client|list"
    assert commands.find_by_full_name(b"client|nosuch") is None
    assert commands.find_by_full_name(b"nosuch") is None


def test_only_redis_immediate_commands_skip_the_multi_queue():
    immediate = {spec.name for spec in all_specs() if not spec.queued_in_multi}
    # processCommand's list in Redis 7.0
    assert immediate == {"exec", "discard", "multi", "watch", "quit", "reset"}


def test_every_audit_event_has_its_details():
    events = {spec.name: spec.audit_event for spec in all_specs() if spec.audit_event}
    assert events == {"config|set": "config_set", "config|rewrite": "config_rewrite",
                      "config|resetstat": "config_resetstat", "flushdb": "flushdb",
                      "flushall": "flushall"}
    assert set(events.values()) == set(audit.COMMAND_EVENT_DETAILS)


@pytest.mark.parametrize("name, legacy", [
    ("get", (1, 1, 1)), ("mset", (1, -1, 2)), ("copy", (1, 2, 1)), ("del", (1, -1, 1)),
    ("cxl|mgetref", (2, -1, 1)), ("ping", (0, 0, 0)), ("object|encoding", (2, 2, 1)),
    ("migrate", (3, 3, 1)),     # its second key spec is found by keyword: not in the range
])
def test_legacy_key_range_derives_from_the_key_specs(name, legacy):
    assert commands.find_by_full_name(name.encode()).legacy_key_range == legacy


def test_key_positions_follow_the_key_specs():
    mset = commands.COMMANDS["mset"]
    assert key_positions(mset, [b"mset", b"a", b"1", b"b", b"2"]) == [1, 3]
    # A variadic command given too few arguments has no key past them.
    assert key_positions(commands.COMMANDS["del"], [b"del"]) == []


@pytest.mark.parametrize("argv, keys", [
    ([b"k", b"0", b"100"], [3]),
    ([b"k", b"0", b"100", b"COPY", b"REPLACE"], [3]),
    ([b"", b"0", b"100", b"KEYS", b"a", b"b"], [7, 8]),
    # KEYS last is not searched for (from argc-2 down): only the empty key, as in Redis
    ([b"", b"0", b"100", b"keys"], [3]),
    # AUTH takes one argument and AUTH2 two, even when they read KEYS (Redis's migrateGetKeys)
    ([b"", b"0", b"100", b"AUTH", b"keys", b"KEYS", b"a"], [9]),
    ([b"", b"0", b"100", b"auth2", b"keys", b"keys", b"keys", b"a", b"b"], [10, 11]),
    ([b"k", b"0", b"100", b"KEYS", b"a"], []),        # KEYS needs the key argument empty
    ([b"", b"0", b"100", b"KEYS", b"a", b"KEYS", b"b"], [7, 8, 9]),
])
def test_migrate_finds_its_keys_as_redis_does(argv, keys):
    spec = commands.COMMANDS["migrate"]
    argv = [b"migrate", b"host", b"6379"] + argv
    assert key_arguments(spec, argv) == [(index, READ | WRITE) for index in keys]


def test_set_reads_its_key_only_with_get():
    spec = commands.COMMANDS["set"]
    assert key_arguments(spec, [b"set", b"k", b"v"]) == [(1, WRITE)]
    assert key_arguments(spec, [b"set", b"k", b"v", b"gEt"]) == [(1, READ | WRITE)]


def test_the_fast_path_takes_the_commands_the_table_flags():
    """fast_op on a spec is the fast path's code for it (ext/cxlredis/_fastpath.pxd): the
    table names the commands, the connection maps the codes back, one to one."""
    from cxlredis import _fastpath, connection, metrics, server
    flagged = {spec.fast_op: spec.name for spec in commands.SPECS if spec.fast_op >= 0}
    assert flagged == {_fastpath.FAST_GET_OP: "get", _fastpath.FAST_SET_OP: "set",
                       _fastpath.FAST_EXISTS_OP: "exists", _fastpath.FAST_DEL_OP: "del",
                       _fastpath.FAST_TTL_OP: "ttl", _fastpath.FAST_PTTL_OP: "pttl",
                       _fastpath.FAST_MGET_OP: "mget", _fastpath.FAST_INCR_OP: "incr",
                       _fastpath.FAST_DECR_OP: "decr", _fastpath.FAST_INCRBY_OP: "incrby",
                       _fastpath.FAST_DECRBY_OP: "decrby", _fastpath.FAST_EXPIRE_OP: "expire",
                       _fastpath.FAST_HGET_OP: "hget", _fastpath.FAST_HSET_OP: "hset"}
    assert [spec.name for spec in connection._FAST_COMMANDS] == [flagged[i] for i in sorted(flagged)]
    assert metrics.LATENCY_BUCKETS == _fastpath.LATENCY_BUCKET_COUNT
    assert len(server.Stats().command("get")[4]) == _fastpath.LATENCY_BUCKET_COUNT
