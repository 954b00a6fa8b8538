"""Redis functions (FUNCTION LOAD / LIST / DELETE / FLUSH / DUMP / RESTORE / STATS /
HELP, FCALL, FCALL_RO), replayed on redis-server and cxlredis: replies and errors
must match byte for byte, in RESP2 and RESP3. Every sequence starts from no
libraries. Redis lists libraries (and a library's functions) in hash order, so
FUNCTION LIST is compared with both sorted by name."""
import pytest

from conftest import parse_reply, raw_connection
from diff_harness import cmd, normalised, run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

LIB = """#!lua name=lib
redis.register_function('echo', function(keys, args) return {keys[1], args[1], #keys, #args} end)
redis.register_function('w', function(keys, args) return redis.call('set', keys[1], args[1]) end)
redis.register_function{function_name='ro', callback=function(keys) return redis.call('get', keys[1]) end,
                        flags={'no-writes'}, description='reads a key'}
redis.register_function('g', function() return KEYS end)
redis.register_function('err', function() return redis.error_reply('MY bad') end)
redis.register_function('raise', function() error('boom') end)
redis.register_function('again', function() return redis.register_function('x', function() end) end)
redis.register_function{function_name='Flags', callback=function() return 1 end,
                        flags={'NO-WRITES', 'allow-oom', 'allow-stale', 'no-cluster'}}
"""


def load(code, *options):
    return ("FUNCTION", "LOAD", *options, code)


def library(name, *functions):
    body = "".join(f"redis.register_function('{f}', function() return '{f}' end)\n" for f in functions)
    return f"#!lua name={name}\n{body}"


def sorted_listing(argv, reply):
    """FUNCTION LIST with libraries, and each one's functions, in name order."""
    def fields(entry):
        return dict(zip(entry[0::2], entry[1::2])) if isinstance(entry, list) else entry

    libraries = [fields(lib) for lib in parse_reply(reply)]
    for lib in libraries:
        lib[b"functions"] = sorted((sorted(fields(f).items(), key=repr) for f in lib[b"functions"]), key=repr)
    return sorted((sorted(lib.items(), key=repr) for lib in libraries), key=repr)


LISTING = normalised(sorted_listing)


def listing(*args):
    return cmd("FUNCTION", "LIST", *args, compare=LISTING)


def start(*steps):
    return [("FUNCTION", "FLUSH"), *steps]


SEQUENCES = {
    "load and call": start(
        load(LIB),
        ("FCALL", "echo", "1", "k", "a", "b"), ("FCALL", "w", "1", "k", "v"),
        ("FCALL_RO", "w", "1", "k", "v"), ("FCALL_RO", "ro", "1", "k"), ("FCALL", "ro", "1", "k"),
        ("FCALL", "g", "0"), ("FCALL", "err", "0"), ("FCALL", "raise", "0"), ("FCALL", "again", "0"),
        ("FCALL", "ECHO", "0"), ("FCALL", "fLaGs", "0"), ("FCALL_RO", "flags", "0"),
        ("FCALL", "nosuch", "0"), ("FCALL", "echo", "x"), ("FCALL", "echo", "-1"),
        ("FCALL", "echo", "2", "a"), ("FCALL", "nosuch", "x"), ("FCALL", "echo"),
        ("MULTI",), ("FCALL", "w", "1", "m", "1"), ("FCALL", "ro", "1", "m"), ("EXEC",),
        ("EVAL", "return redis.call('fcall', 'echo', 0)", "0"),
    ),
    "load errors": start(
        load(LIB), load(LIB), load(library("lib2", "echo")), load(library("lib2", "EcHo")),
        load("#!lua name=lib3"), load("#!lua"), load("lua name=x"), load("#!js name=x\n"),
        load("#!LUA name=b-c\n"), load('#!lua name="a b"\n'), load("#!lua name=q foo=bar\n"),
        load("#!lua name=q name=r\n"), load("#!lua NAME=q\n"), load("#!lua name=\n"),
        load('#!lua "name=q\n'), load("#!lua name=q\n"),
        load("#!lua name=q\nredis.register_function('a-b', function() end)"),
        load("#!lua name=q\nredis.register_function('a', function() end)\nredis.register_function('a', function() end)"),
        load("#!lua name=q\nredis.register_function('a')"),
        load("#!lua name=q\nredis.register_function{function_name='a'}"),
        load("#!lua name=q\nredis.register_function{callback=function() end}"),
        load("#!lua name=q\nredis.register_function{function_name='a', callback=function() end, flags={'bad'}}"),
        load("#!lua name=q\nredis.register_function{function_name='a', callback=function() end, flags={1}}"),
        load("#!lua name=q\nredis.register_function{function_name='a', callback=function() end, flags='no-writes'}"),
        load("#!lua name=q\nredis.register_function{function_name='a', callback=function() end, other=1}"),
        load("#!lua name=q\nredis.register_function{[1]=5}"),
        load("#!lua name=q\nredis.register_function{function_name={}, callback=function() end}"),
        load("#!lua name=q\nredis.register_function{function_name='a', callback=function() end, description={}}"),
        load("#!lua name=q\nredis.register_function{function_name='a', callback=1}"),
        load("#!lua name=q\nredis.register_function(1, 2, 3)"), load("#!lua name=q\nredis.register_function()"),
        load("#!lua name=q\nredis.register_function('x', nil)"),
        load("#!lua name=q\nredis.register_function(nil, function() end)"),
        load("#!lua name=q\nredis.register_function(12, function() return 'twelve' end)"),
        ("FCALL", "12", "0"),
        load("#!lua name=q2\nredis.register_function(7)"),
        load("#!lua name=q\nif"), load("#!lua name=q\nlocal x = string.format('%d', 7)"),
        load("#!lua name=q\nredis.call('set','a','b')"), load("#!lua name=q\nlocal t = redis.pcall"),
        load("#!lua name=q\nx = 1"), load("#!lua name=q\nprint(1)"), load("#!lua name=q\nerror('x')"),
        load("#!lua name=q\nlocal v = redis.REDIS_VERSION_NUM\nredis.log(redis.LOG_DEBUG, 'loading')\n"
             "redis.register_function('v', function() return v end)"),
        ("FCALL", "v", "0"),
        load("#!lua name=q\nredis.register_function('u', function() return 1 end)", "REPLACE"),
        load("#!lua name=q\nredis.register_function('u', function() return 1 end)", "REPLACE", "replace"),
        load("#!lua name=r\n", "FOO"), ("FUNCTION", "LOAD"), ("FUNCTION", "LOAD", "REPLACE"),
        load("#!lua name=slow\nwhile true do end"),
    ),
    "list": start(
        load(LIB), load(library("other", "o1")), load(library("Other2", "o2", "o3")),
        listing(), listing("WITHCODE"), listing("LIBRARYNAME", "oth*"), listing("LIBRARYNAME", "LIB"),
        listing("libraryname", "none*", "withcode"), listing("WITHCODE", "LIBRARYNAME", "o*"),
        ("FUNCTION", "LIST", "LIBRARYNAME"), ("FUNCTION", "LIST", "FOO"),
        ("FUNCTION", "LIST", "WITHCODE", "WITHCODE"), ("FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b"),
        ("FUNCTION", "STATS"),
    ),
    "delete and flush": start(
        load(library("a", "fa")), load(library("b", "fb")),
        ("FUNCTION", "DELETE", "A"), ("FUNCTION", "DELETE", "a"), ("FUNCTION", "DELETE", "a"),
        ("FCALL", "fa", "0"), ("FCALL", "fb", "0"), load(library("c", "fa")), ("FUNCTION", "STATS"),
        ("FUNCTION", "FLUSH", "ASYNC"), ("FCALL", "fb", "0"), ("FUNCTION", "FLUSH", "sync"),
        ("FUNCTION", "FLUSH", "LATER"), ("FUNCTION", "FLUSH", "SYNC", "x"), ("FUNCTION", "DELETE"),
        ("FUNCTION", "STATS"), ("FUNCTION", "STATS", "x"), ("FUNCTION", "KILL"), ("FUNCTION", "HELP"),
        ("FUNCTION", "NOPE"), ("FUNCTION",), listing(),
    ),
    "dump and restore": start(
        load(library("d", "fd")), ("FUNCTION", "DUMP"),
        ("FUNCTION", "RESTORE", "bogus"), ("FUNCTION", "RESTORE", "x", "FLUSH", "extra"),
        ("FUNCTION", "RESTORE", "x", "SOMETIMES"), ("FUNCTION", "RESTORE", "x", "APPEND"),
        ("FUNCTION", "RESTORE"), ("FUNCTION", "DUMP", "x"),
    ),
    "boundary arguments": start(
        load(LIB),
        ("FCALL", "echo", "9223372036854775807"), ("FCALL", "echo", "-9223372036854775808"),
        ("FCALL", "echo", "9223372036854775808"), ("FCALL", "echo", "0"), ("FCALL", "echo", " 1", "k"),
        ("FCALL", "echo", "1.5", "k"), ("FCALL", "echo", ""), ("FCALL", "", "0"), ("FCALL", b"\x00\xff", "0"),
        ("FCALL_RO", "ro", "-1"), ("FCALL_RO", "ro", "4294967297", "k"),
        ("FUNCTION", "LOAD", ""), ("FUNCTION", "LOAD", b"\x00\xff"), ("FUNCTION", "LOAD", "#!"),
        ("FUNCTION", "LOAD", "#!\n"), ("FUNCTION", "LOAD", b"#!lua name=\xff\n"),
        ("FUNCTION", "LOAD", b"#!lua name=n\x00x\n"), ("FUNCTION", "LOAD", b"#!lua na\x00me=x\n"),
        ("FUNCTION", "LOAD", "#!lua name=b\nredis.register_function('', function() end)"),
        ("FUNCTION", "LOAD", "#!lua name=b\nredis.register_function('" + "x" * 10000 + "', function() end)"),
        ("FUNCTION", "RESTORE", ""), ("FUNCTION", "RESTORE", b"\x00" * 10), ("FUNCTION", "DELETE", ""),
        ("FUNCTION", "DELETE", b"\x00"), listing("LIBRARYNAME", ""), listing("LIBRARYNAME", b"\xff*"),
        ("PING",),
    ),
    "read-only and flags": start(
        load("#!lua name=f\n"
             "redis.register_function{function_name='rw', callback=function(k) return redis.call('set', k[1], 'x') end}\n"
             "redis.register_function{function_name='nw', callback=function(k) return redis.call('set', k[1], 'x') end,"
             " flags={'no-writes'}}\n"
             "redis.register_function{function_name='nc', callback=function() return 1 end, flags={'no-cluster'}}"),
        ("FCALL", "rw", "1", "k"), ("FCALL", "nw", "1", "k"), ("FCALL_RO", "nw", "1", "k"),
        ("FCALL_RO", "rw", "1", "k"), ("FCALL", "nc", "0"),
    ),
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_functions_sequence(redis_oracle, cxl, name, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCES[name], protocol=protocol, name=name)


def request(server, *args):
    with raw_connection(server.port) as conn:
        return parse_reply(conn.request(*args))


def test_a_dump_restores_on_the_other_server(redis_oracle, cxl):
    """Each server's FUNCTION DUMP restores on the other (the payload is Redis's; a code
    Redis compresses loads here too), under every policy and its collisions."""
    for source, target in ((redis_oracle, cxl), (cxl, redis_oracle)):
        for server in (source, target):
            request(server, "FUNCTION", "FLUSH")
        request(source, "FUNCTION", "LOAD", library("d", "fd"))
        payload = request(source, "FUNCTION", "DUMP")
        outcomes = [request(target, "FUNCTION", "RESTORE", payload, *policy)
                    for policy in ((), ("APPEND",), ("REPLACE",), ("FLUSH",))]
        request(target, "FUNCTION", "DELETE", "d")
        request(target, "FUNCTION", "LOAD", library("other", "fd"))
        outcomes.append(request(target, "FUNCTION", "RESTORE", payload, "REPLACE"))
        outcomes.append(request(target, "FUNCTION", "RESTORE", payload[:-1] + bytes([payload[-1] ^ 1])))
        assert outcomes == ["OK", "ERR Library d already exists", "OK", "OK", "ERR Function fd already exists",
                            "ERR DUMP payload version or checksum are wrong"], (source, outcomes)
        # a long, repetitive library: Redis writes it LZF-compressed
        request(source, "FUNCTION", "FLUSH")
        request(source, "FUNCTION", "LOAD", library("big", *(f"f{n}" for n in range(40))))
        payload = request(source, "FUNCTION", "DUMP")
        assert request(target, "FUNCTION", "RESTORE", payload, "FLUSH") == "OK"
        assert request(target, "FCALL", "f39", "0") == b"f39"
        assert sorted_listing(None, _raw(target, "FUNCTION", "LIST", "WITHCODE")) == \
            sorted_listing(None, _raw(source, "FUNCTION", "LIST", "WITHCODE"))


def _raw(server, *args):
    with raw_connection(server.port) as conn:
        return conn.request(*args)


def test_a_payload_from_cxlredis_is_byte_identical_when_redis_would_not_compress(redis_oracle, cxl):
    for server in (redis_oracle, cxl):
        request(server, "FUNCTION", "FLUSH")
        request(server, "FUNCTION", "LOAD", "#!lua name=s\nredis.register_function('s', function() end)")
    assert _raw(redis_oracle, "FUNCTION", "DUMP") == _raw(cxl, "FUNCTION", "DUMP")


@pytest.mark.parametrize("name", ["fcall", "fcall_ro", "function|load", "function|list", "function|delete",
                                  "function|flush", "function|dump", "function|restore", "function|stats",
                                  "function|kill", "function|help"])
def test_command_info_and_docs_match(redis_oracle, cxl, protocol, name):
    run_sequence(redis_oracle, cxl, [cmd("COMMAND", "INFO", name), cmd("COMMAND", "DOCS", name),
                                     cmd("COMMAND", "GETKEYS", "FCALL", "f", "2", "a", "b", "c")],
                 protocol=protocol, name=name)
