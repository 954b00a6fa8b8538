"""cxlredis.acl without a server: the rule compiler's description reads back
to the same permissions (tests/acl/test_acl_diff.py compares it with Redis's),
the ACL LOG's grouping, ACL file parsing, and what the audit log redacts."""
import pytest
from hypothesis import given, settings, strategies as st

from cxlredis import acl
from cxlredis.acl import AclLog, RuleError, User, merge_selectors, parse_acl_file
from cxlredis.audit import redacted_rule, sensitive_option
from cxlredis.commands import COMMANDS

RULES = st.sampled_from([
    "on", "off", "nopass", "resetpass", ">pw", ">other", "<pw", "#" + "ab" * 32, "!" + "ab" * 32,
    "skip-sanitize-payload", "sanitize-payload", "~*", "allkeys", "resetkeys", "~cache:*",
    "%R~ro:*", "%W~wo:*", "%RW~both", "~", "&*", "allchannels", "resetchannels", "&news.*",
    "+@all", "-@all", "allcommands", "nocommands", "+@read", "-@write", "+@hash", "-@dangerous",
    "+get", "-get", "+set", "+client", "-client|id", "+client|list", "+select|0", "+SELECT|A",
    "+select|a", "+config|get", "-config", "+command", "-command|count", "+@slow", "-@slow",
    "+@string", "-@connection", "+xadd", "-xadd", "+xadd|x", "+acl|whoami", "reset", "clearselectors",
    "(~s:* +get)", "(%R~r:* -@all +@read)", "()",
])


def compiled(user):
    return (user.flags, user.passwords,
            [(sorted(s.allowed), {k: list(v.values()) for k, v in s.first_args.items()}, s.all_keys,
              dict(s.keys), s.all_channels, s.channels) for s in user.selectors])


def applied(rules):
    user = User(b"u")
    for rule in rules:
        try:
            user.apply(rule.encode(), False)
        except RuleError:
            pass    # e.g. "<pw" without that password: Redis refuses that one rule
    user.compile()
    return user


@settings(max_examples=300, deadline=None)
@given(st.lists(RULES, max_size=12))
def test_description_reads_back_to_the_same_permissions(rules):
    # Redis checks the same at every ACL LIST: a description that read back
    # differently would be a security hole.
    user = applied(rules)
    merged, unclosed = merge_selectors(user.describe().split(b" "))
    assert unclosed is None
    again = User(b"u")
    for op in merged:
        again.apply(op, False)
    again.compile()
    assert compiled(again) == compiled(user)
    assert again.describe() == user.describe()
    assert (again.unrestricted, again.unrestricted_keys) == (user.unrestricted, user.unrestricted_keys)


def test_unrestricted_means_every_command_on_every_key_and_channel():
    # Redis 7.0's acl-pubsub-default is resetchannels: ~* +@all alone reaches no channel.
    user = applied(["on", "nopass", "~*", "+@all"])
    assert user.unrestricted_keys and not user.unrestricted
    assert applied(["on", "nopass", "~*", "&*", "+@all"]).unrestricted
    assert not applied(["~*", "&*", "+@all", "-get"]).unrestricted_keys
    assert not applied(["%R~*", "&*", "+@all"]).unrestricted_keys
    assert applied(["-@all", "(~* &* +@all)"]).unrestricted
    # a selector with every channel but not every key does not make the user unrestricted
    split = applied(["~*", "+@all", "(~a &* +@all)"])
    assert split.unrestricted_keys and not split.unrestricted


def test_denials_pick_the_most_relevant_selector():
    # Redis reports a key denial over a command denial, and the later argument among keys.
    user = applied(["~a", "+@all", "(~b -@all +mget)"])
    assert user.check(COMMANDS["mget"], [b"MGET", b"a", b"x"]) == (acl.DENIED_KEY, 2)
    assert user.check(COMMANDS["mget"], [b"MGET", b"a", b"b"]) == (acl.DENIED_KEY, 2)
    assert user.check(COMMANDS["mget"], [b"MGET", b"a"]) is None
    assert user.check(COMMANDS["set"], [b"SET", b"b", b"v"]) == (acl.DENIED_KEY, 1)
    assert applied(["-@all"]).check(COMMANDS["get"], [b"GET", b"k"]) == (acl.DENIED_COMMAND, 0)


def test_set_needs_read_permission_only_with_get():
    user = applied(["%W~w", "+@all"])
    assert user.check(COMMANDS["set"], [b"SET", b"w", b"v", b"EX", b"1"]) is None
    assert user.check(COMMANDS["set"], [b"SET", b"w", b"v", b"get"]) == (acl.DENIED_KEY, 1)


def test_pfmerge_with_its_destkey_alone_checks_that_key():
    # Redis 7.0 finds no keys in PFMERGE a (its source keys' spec starts past the
    # arguments), so its ACL lets ~b* write a; cxlredis checks the one key it writes.
    user = applied(["~b*", "+@all"])
    assert user.check(COMMANDS["pfmerge"], [b"PFMERGE", b"a"]) == (acl.DENIED_KEY, 1)
    assert user.check(COMMANDS["pfmerge"], [b"PFMERGE", b"b1"]) is None


def test_acl_log_groups_repeats_within_a_minute(monkeypatch):
    now = [1_000_000]
    monkeypatch.setattr(acl, "now_ms", lambda: now[0])
    log = AclLog()
    log.add("key", "toplevel", b"k", b"u", "info1", 128)
    now[0] += 60_000
    log.add("key", "toplevel", b"k", b"u", "info2", 128)
    assert [(e.count, e.client_info) for e in log.entries] == [(2, "info2")]
    now[0] += 60_001
    log.add("key", "toplevel", b"k", b"u", "info3", 128)
    assert [e.count for e in log.entries] == [1, 2]
    for n in range(10):      # only the 10 newest entries are looked at for a repeat
        log.add("command", "toplevel", str(n).encode(), b"u", "", 128)
    log.add("key", "toplevel", b"k", b"u", "info4", 128)
    assert [e.count for e in log.entries][0] == 1 and len(log.entries) == 13
    log.add("command", "multi", b"x", b"u", "", 3)
    assert len(log.entries) == 3


def test_acl_file_parsing_reports_like_redis():
    users, errors = parse_acl_file(b"user a on (~x +get\n", "f.acl", False)
    assert errors == "f.acl:1: Unmatched parenthesis in selector definition."
    users, errors = parse_acl_file(b"user a on <x >y <z +nocmd\n\n  user b\tx\n", "f.acl", False)
    assert errors == ("f.acl:1: The password you are trying to remove from the user does not exist. "
                      "f.acl:1: Error in applying operation '+nocmd': Unknown command or category "
                      "name in ACL. 'f.acl:3: username 'b\tx' contains invalid characters. ")
    users, errors = parse_acl_file(b"user a  on ~k\r\nuser b\n", "f.acl", False)
    assert errors == "" and sorted(users) == [b"a", b"b"]
    assert users[b"a"].describe() == b"on ~k resetchannels -@all"


def test_redis_commands_we_lack_are_accepted_allow_nothing_and_are_not_described():
    # Streams stand for any Redis 7.0 command cxlredis does not implement.
    user = applied(["-@all", "+xadd", "+xinfo|stream", "+xadd|x", "-xgroup"])
    assert user.root.allowed == set() and user.root.first_args == {}
    assert user.describe().endswith(b"-@all")
    with pytest.raises(RuleError, match="Unknown command"):
        applied(["+xinfo|nosuch"]).root.apply(b"+xinfo|nosuch")


@pytest.mark.parametrize("rules, described", [
    # the best fit: a category, then the single commands that still differ
    ("+memory|doctor +memory -get +@string -set", "-@all +@string +memory -set"),
    # a container has a bit of its own: its rule and +@slow set it, its subcommands' rules do not
    ("+@all -config +config|get", "+@all -config +config|get"),
    ("-@all +config -config|set", "-@all +config -config|set"),
    ("-@all +@admin -config", "-@all +@admin -config|get -config|resetstat -config|rewrite -config|set"),
    ("-@all +config|get +config|set", "-@all +config|get +config|set"),
    ("-@all +command -command|docs", "-@all +command -command|docs"),
    # first arguments: after their command, in the order first given, repeats (any case) dropped
    ("-@all +select|0 +SELECT|A +select|a +get", "-@all +get +select|0 +select|A"),
    ("-@all +select|0 +select", "-@all +select"),
    ("-@all +select|0 +@keyspace -@keyspace", "-@all +select|0"),
    # repeated and contradicting rules leave only their outcome
    ("+@all -get +get -@all +@hash -hset +hset", "-@all +@hash"),
    ("allcommands -@all nocommands", "-@all"),
])
def test_commands_are_described_from_the_permissions(rules, described):
    assert applied(rules.split()).root.describe_commands() == described.encode()


def test_audit_redaction():
    assert [redacted_rule(r) for r in (b">pw", b"<pw", b"#" + b"a" * 64, b"!x", b"~*", b"on")] == [
        ">(redacted)", "<(redacted)", "#(redacted)", "!(redacted)", "~*", "on"]
    assert all(map(sensitive_option, ["requirepass", "masterauth", "tls-key-file-pass", "REQUIREPASS"]))
    assert not any(map(sensitive_option, ["maxmemory", "aclfile", "tls-cert-file"]))
