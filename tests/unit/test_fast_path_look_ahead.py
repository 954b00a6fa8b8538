"""The fast path's look ahead down a pipeline (cxlredis._fastpath.look_ahead): which
commands at the head of the input have their keys prefetched before they run.

It changes no reply (tests/differential/test_diff_fast_path.py runs the same
pipelines against redis-server); what is checked here is where a look ahead stops:
at PREFETCH_COMMANDS commands, at PREFETCH_KEYS keys, at the first command the fast
path does not run and at a command not wholly in the buffer. A closed arena (whose
mapping is gone), a dropped tenant or a db out of range get no prefetch at all.
"""
import pytest

from cxlredis._fastpath import look_ahead
from cxlredis._resp import RequestParser
from cxlredis._store import Arena

PREFETCH_COMMANDS = 16
PREFETCH_KEYS = 32


def multibulk(*args):
    out = b"*%d\r\n" % len(args)
    for arg in args:
        out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    return out


def parser_with(data):
    parser = RequestParser()
    buf = parser.get_buffer(-1)
    buf[:len(data)] = data
    parser.buffer_updated(len(data))
    return parser


@pytest.fixture
def arena(tmp_path):
    a = Arena(str(tmp_path / "look-ahead.arena"), 8 << 20)
    for i in range(100):
        a.set(0, b"k%d" % i, b"v%d" % i)
    yield a
    if not a.closed:
        a.close()


def gets(n, start=0):
    return b"".join(multibulk(b"GET", b"k%d" % i) for i in range(start, start + n))


def test_a_look_covers_at_most_its_window_of_commands(arena):
    assert look_ahead(parser_with(gets(40)), arena, 0) == PREFETCH_COMMANDS
    assert look_ahead(parser_with(gets(5)), arena, 0) == 5


def test_a_single_command_is_covered_but_the_parser_keeps_it(arena):
    parser = parser_with(gets(1))
    assert look_ahead(parser, arena, 0) == 1
    assert parser.next_command() == [b"GET", b"k0"]
    assert parser.next_command() is None


def test_every_fast_command_counts_with_its_keys(arena):
    pipeline = b"".join([
        multibulk(b"set", b"k1", b"x"), multibulk(b"EXISTS", b"k1", b"k2", b"k3"),
        multibulk(b"DEL", b"k4"), multibulk(b"TTL", b"k5"), multibulk(b"PTTL", b"k5"),
        multibulk(b"MGET", b"k1", b"k2"), multibulk(b"INCR", b"n"), multibulk(b"DECR", b"n"),
        multibulk(b"INCRBY", b"n", b"5"), multibulk(b"DECRBY", b"n", b"5"),
        multibulk(b"EXPIRE", b"k6", b"100"), multibulk(b"HGET", b"h", b"f"),
        multibulk(b"HSET", b"h", b"f", b"v"), multibulk(b"get", b"k7"),
    ])
    assert look_ahead(parser_with(pipeline), arena, 0) == 14


def test_it_stops_at_a_command_the_fast_path_does_not_run(arena):
    pipeline = gets(3) + multibulk(b"PING") + gets(3, 3)
    assert look_ahead(parser_with(pipeline), arena, 0) == 3
    # a fast command's name with the wrong number of arguments is not one either
    assert look_ahead(parser_with(gets(2) + multibulk(b"GET", b"a", b"b") + gets(2)), arena, 0) == 2


def test_it_stops_before_the_key_that_would_pass_its_room(arena):
    mget = multibulk(b"MGET", *[b"k%d" % i for i in range(PREFETCH_KEYS - 1)])
    assert look_ahead(parser_with(mget + gets(1) + gets(1)), arena, 0) == 2
    wide = multibulk(b"EXISTS", *[b"k%d" % i for i in range(20)])
    assert look_ahead(parser_with(wide + wide), arena, 0) == 1


def test_it_stops_at_a_command_not_wholly_in_the_buffer(arena):
    whole = gets(4)
    cut = multibulk(b"GET", b"k9")[:-3]
    assert look_ahead(parser_with(whole + cut), arena, 0) == 4
    assert look_ahead(parser_with(whole + b"GET k9\r\n" + gets(2)), arena, 0) == 4   # inline


def test_a_closed_arena_a_dropped_tenant_or_a_missing_db_get_no_prefetch(arena):
    tenant = arena.create_tenant("gone")
    space = arena.namespace(tenant)
    arena.drop_tenant(tenant)
    assert look_ahead(parser_with(gets(4)), space, 0) == 4
    assert look_ahead(parser_with(gets(4)), arena, 99) == 4     # no such db
    arena.close()
    assert look_ahead(parser_with(gets(4)), arena, 0) == 4
