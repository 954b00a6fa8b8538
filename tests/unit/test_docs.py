"""The argument documentation of cxlredis/commands/docs.py: every entry is well
formed and agrees with the command table; COMMAND DOCS renders it as complete
replies. (The differential tests compare the bytes with redis-server's.)"""
import re
from types import SimpleNamespace

import pytest

from conftest import parse_reply
from cxlredis._resp import ReplyWriter
from cxlredis.commands import COMMANDS, all_specs
from cxlredis.commands.docs import ARG_FLAGS, DOCS, NO_DOCS, string
from cxlredis.commands.server import reply_command_docs

SPECS = {spec.name: spec for spec in all_specs()}
VERSION = re.compile(r"\d+\.\d+\.\d+\Z")
VALUE_TYPES = {"key", "string", "integer", "double", "unix-time", "pattern", "pure-token"}
GROUP_TYPES = {"oneof", "block"}


def version(text):
    return tuple(int(part) for part in text.split("."))


def walk(arguments):
    for arg in arguments:
        yield arg
        yield from walk(arg.arguments)


def test_every_entry_names_a_command():
    assert set(DOCS) <= set(SPECS)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_key_arguments_match_the_key_specs(name):
    spec = SPECS[name]
    docs = DOCS.get(name, NO_DOCS)
    indexes = [arg.key_spec_index for arg in walk(docs.arguments) if arg.key_spec_index >= 0]
    assert all(0 <= i < len(spec.key_specs) for i in indexes), indexes
    # Each key spec is documented by exactly one key argument (Redis's rule for the
    # commands cxlredis has), except a not_key one: a shard channel is a string; a
    # spec whose range holds several fixed keys (LCS's key1 and key2) by one argument each;
    # and an unknown one by the patterns that name its keys (SORT's BY and GET).
    keys = [i for i, ks in enumerate(spec.key_specs) if "not_key" not in ks.flags]
    assert sorted(set(indexes)) == keys
    for i in keys:
        if spec.key_specs[i].unknown:
            continue
        last_key = spec.key_specs[i].last_key
        assert indexes.count(i) == (last_key + 1 if last_key > 0 else 1), (i, indexes)


@pytest.mark.parametrize("name", sorted(DOCS))
def test_arguments_are_well_formed(name):
    spec = SPECS[name]
    for arg in walk(DOCS[name].arguments):
        assert arg.name and arg.type in VALUE_TYPES | GROUP_TYPES, arg
        # a key names its key spec; so may a pattern whose matches are keys (SORT's BY)
        assert arg.type != "key" or arg.key_spec_index >= 0, arg
        assert arg.key_spec_index < 0 or arg.type in ("key", "pattern"), arg
        assert (arg.type in GROUP_TYPES) == bool(arg.arguments), arg
        if arg.type == "pure-token":
            assert arg.token is not None, arg
        assert arg.flags == tuple(f for f in ARG_FLAGS if f in arg.flags), arg
        for when in (arg.since, arg.deprecated_since):
            if when:
                assert VERSION.match(when) and version(when) >= version(spec.since), arg


EARLIER_HISTORY = {"zrevrangebyscore"}


@pytest.mark.parametrize("name", sorted(DOCS))
def test_history_and_deprecation_are_well_formed(name):
    docs, spec = DOCS[name], SPECS[name]
    versions = [version(v) for v, _ in docs.history]
    assert all(VERSION.match(v) and change for v, change in docs.history), docs.history
    assert versions == sorted(versions)
    # Redis's own docs date one change before the command (ZREVRANGEBYSCORE: since 2.2.0,
    # "2.1.6: `min` and `max` can be exclusive."); COMMAND DOCS must say it as Redis does.
    assert all(v >= version(spec.since) for v in versions) or name in EARLIER_HISTORY
    assert set(docs.doc_flags) <= {"deprecated", "syscmd"}
    deprecated = "deprecated" in docs.doc_flags
    assert deprecated == bool(docs.deprecated_since) == bool(docs.replaced_by), docs


def test_a_misspelt_flag_is_rejected():
    with pytest.raises(TypeError, match="optinal"):
        string("message", optinal=True)


class Transport:
    def __init__(self):
        self.data = b""

    def writelines(self, parts):
        self.data += b"".join(bytes(p) for p in parts)


def rendered(spec, protocol):
    client = SimpleNamespace(reply=ReplyWriter(protocol))
    reply_command_docs(client, spec)
    transport = Transport()
    client.reply.flush(transport)
    return transport.data


def as_reply(arg):
    """What a RESP3 client decodes from one argument's map."""
    fields = {b"name": arg.name.encode(), b"type": arg.type.encode()}
    if arg.key_spec_index >= 0:
        fields[b"key_spec_index"] = arg.key_spec_index
    if arg.token is not None:
        fields[b"token"] = arg.token.encode()
    for field in ("since", "deprecated_since"):
        if getattr(arg, field):
            fields[field.encode()] = getattr(arg, field).encode()
    if arg.flags:
        fields[b"flags"] = list(arg.flags)
    if arg.arguments:
        fields[b"arguments"] = [as_reply(sub) for sub in arg.arguments]
    return fields


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_docs_renders_complete_replies(name):
    spec = COMMANDS[name]
    for protocol in (2, 3):
        entry = parse_reply(rendered(spec, protocol))  # raises on a short or overlong reply
        if protocol == 2:
            assert isinstance(entry, list) and len(entry) % 2 == 0
    entry = parse_reply(rendered(spec, 3))
    for sub in [spec, *spec.subcommands.values()]:
        docs = DOCS.get(sub.name, NO_DOCS)
        fields = entry if sub is spec else entry[b"subcommands"][sub.name.encode()]
        assert fields[b"summary"] == sub.summary.encode()
        assert fields.get(b"doc_flags", []) == list(docs.doc_flags)
        assert fields.get(b"history", []) == [[v.encode(), c.encode()] for v, c in docs.history]
        assert fields.get(b"arguments", []) == [as_reply(arg) for arg in docs.arguments]
