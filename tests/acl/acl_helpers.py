"""Helpers shared by the tests/acl modules: servers that may require a password,
a redis-server + cxlredis pair whose ACL state tests may change, and the
comparators for replies that legitimately differ between the two.

Why replies may differ, and what must still agree:

- ACL LIST / ACL GETUSER / ACL SAVE: both recompute a selector's command
  rules from its permissions: "+@all"/"-@all", the best-fitting categories,
  then single commands. Redis 7.0 finds those last ones walking its command
  table, whose order is its hash order (each process seeds its own), so that
  tail alone is compared as a set; everything else, the categories' order
  included, must agree exactly. (A rule set involving commands cxlredis does
  not implement is described differently: it knows only its own commands.)
- ACL LOG: ages and the client-info line belong to each process (the
  client-info fields that describe the client's state must agree).
- ACL CAT <category>: Redis lists commands in hash order and has more of
  them; cxlredis must list exactly the category's commands that it
  implements.
- ACL GENPASS: random; only the length and the hex alphabet agree.
- ACL CAT: cxlredis lists Redis's categories, then its own (cxl).
"""
from __future__ import annotations

import string
import sys
from pathlib import Path

import pytest

from conftest import (ConnectionClosed, ReplyTimeout, ServerProcess, TARGET, parse_reply,
                      raw_connection)

# The differential harness lives next door; pytest puts a test file's own
# directory on sys.path, and this one may be collected first.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "differential"))
from diff_harness import NEWER_THAN_ORACLE, _pairs, client_info_fields, normalised  # noqa: E402

from cxlredis.commands import all_specs

ADMIN = ("harness-admin", "harness-admin-pw")   # the user the cleanup logs in with
NOAUTH_REPLY = b"-NOAUTH Authentication required.\r\n"


class AclServerProcess(ServerProcess):
    """A server that may require a password: a NOAUTH answer to PING means it is up."""

    def _answers_ping(self) -> bool:
        try:
            with raw_connection(self.port, timeout=1.0) as conn:
                return conn.request("PING") in (b"+PONG\r\n", NOAUTH_REPLY)
        except (OSError, ReplyTimeout, ConnectionClosed):
            return False


def server_under_test(conf=None, **options) -> AclServerProcess:
    """cxlredis (or redis-server with CXLREDIS_TEST_TARGET=redis), not started."""
    options = {name.replace("_", "-"): value for name, value in options.items()}
    if TARGET == "redis":
        options = {k: v for k, v in options.items() if not k.startswith(("arena-", "audit-"))}
    return AclServerProcess(TARGET, options, conf=conf)


def oracle_process(conf=None, **options) -> AclServerProcess:
    """redis-server, not started."""
    return AclServerProcess("redis", {k.replace("_", "-"): v for k, v in options.items()}, conf=conf)


@pytest.fixture
def acl_servers():
    """`acl_servers(conf=None, **options)` starts cxlredis (which may require a password);
    `acl_servers(..., kind="redis")` starts redis-server. All are stopped after the test."""
    started = []

    def start(conf=None, kind=TARGET, **options):
        make = oracle_process if kind == "redis" else server_under_test
        server = make(conf, **options)
        started.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in started:
            server.close()


def request(server, *args, auth=None):
    """One command on a new connection (after AUTH user pass when given), its raw reply."""
    with raw_connection(server.port) as conn:
        if auth is not None:
            assert conn.request("AUTH", *auth) == b"+OK\r\n"
        return conn.request(*args)


def add_admin(server):
    """The user the cleanup authenticates as, whatever a test did to `default`."""
    assert request(server, "ACL", "SETUSER", ADMIN[0], "on", ">" + ADMIN[1], "~*", "&*",
                   "+@all") == b"+OK\r\n"


def reset_acl(server):
    """Back to a fresh server's users (plus the harness admin), an empty log and no keys."""
    with raw_connection(server.port) as conn:
        assert conn.request("AUTH", *ADMIN) == b"+OK\r\n", "a test changed the harness admin"
        for step in (("CONFIG", "SET", "requirepass", ""),
                     ("ACL", "SETUSER", "default", "on", "nopass", "resetkeys", "~*", "resetchannels",
                      "&*", "+@all", "clearselectors"),
                     ("ACL", "LOG", "RESET"),
                     ("CONFIG", "SET", "acllog-max-len", "128"),
                     ("FLUSHALL",)):
            assert conn.request(*step) == b"+OK\r\n", step
        users = parse_reply(conn.request("ACL", "USERS"))
        extra = [u for u in users if u not in (b"default", ADMIN[0].encode())]
        if extra:
            conn.request("ACL", "DELUSER", *extra)


# ------------------------------------------------------------ comparators

def _split_rules(text: str) -> list[str]:
    """Top-level words of an ACL description; a "(...)" selector stays one word."""
    words, depth, current = [], 0, []
    for ch in text:
        if ch == " " and depth == 0:
            if current:
                words.append("".join(current))
            current = []
            continue
        depth += ch == "("
        depth -= ch == ")"
        current.append(ch)
    if current:
        words.append("".join(current))
    return words


def canonical_rules(text: str) -> list:
    """A description with the single-command rules that end each selector's command
    rules (Redis 7.0's hash-ordered tail, after "+@all"/"-@all" and the categories)
    as a sorted list; every other word in its place."""
    out, in_commands, tail = [], False, None
    for word in _split_rules(text):
        if word.startswith("("):
            out.append(["selector", canonical_rules(word[1:-1])])
            in_commands, tail = False, None
        elif word in ("+@all", "-@all"):
            out.append(word)
            in_commands, tail = True, None
        elif in_commands and word[:1] in "+-" and word[1:2] != "@":
            if tail is None:
                tail = ("tail", [])
                out.append(tail)
            tail[1].append(word)
        else:
            out.append(word)     # flags, passwords, keys, channels, categories: in order
    return [("tail", sorted(part[1])) if isinstance(part, tuple) else part for part in out]


def acl_list_rules(argv, reply):
    return [canonical_rules(line.decode()) for line in parse_reply(reply)]


def getuser_rules(argv, reply):
    value = parse_reply(reply)
    if value is None:
        return None
    fields = dict(_pairs(value))
    fields[b"commands"] = canonical_rules(fields[b"commands"].decode())
    fields[b"selectors"] = [
        {k: canonical_rules(v.decode()) if k == b"commands" else v for k, v in _pairs(s)}
        for s in fields[b"selectors"]]
    # RESP3 sends flags as a set: the order Redis fills it in is its own.
    fields[b"flags"] = sorted(fields[b"flags"])
    return sorted(fields.items())


def acl_log_entries(argv, reply):
    entries = []
    for entry in parse_reply(reply):
        fields = dict(_pairs(entry))
        info = fields.pop(b"client-info")
        age = fields.pop(b"age-seconds")
        assert 0 <= float(age) < 30, age
        fields[b"client-info"] = client_info_fields(argv, b"$%d\r\n%s\r\n" % (len(info), info))
        entries.append(sorted(fields.items()))
    return entries


def genpass_shape(argv, reply):
    value = parse_reply(reply)
    return len(value), set(value.decode()) <= set(string.hexdigits.lower())


OUR_NAMES = {spec.name.encode() for spec in all_specs()}


def cat_members(argv, a, b):
    """ACL CAT <category>: exactly the category's commands that cxlredis implements."""
    if a[:1] == b"-" or b[:1] == b"-" or len(argv) < 3:
        return a == b
    oracle, ours = parse_reply(a), parse_reply(b)
    if len(set(ours)) != len(ours):
        return False
    if TARGET == "redis":
        return set(ours) == set(oracle)
    category = argv[2].decode().lower()
    newer = {name for name in NEWER_THAN_ORACLE
             if category in next(s for s in all_specs() if s.name.encode() == name).acl_categories}
    return set(ours) == (set(oracle) & OUR_NAMES) | newer


def categories(argv, a, b):
    """ACL CAT: Redis's categories in Redis's order, then cxlredis's own (@cxl)."""
    if TARGET == "redis" or a[:1] != b"*":
        return a == b
    return parse_reply(b) == parse_reply(a) + [b"cxl"]


ACL_LIST = normalised(acl_list_rules)
GETUSER = normalised(getuser_rules)
ACL_LOG = normalised(acl_log_entries)
GENPASS = normalised(genpass_shape)
CLIENT_INFO = normalised(client_info_fields)
