"""LOLWUT on redis-server and cxlredis, RESP2 and RESP3: Redis 7.0's own answer (its
version), the VERSION option and its errors byte for byte, the Schotter of VERSION 5 byte
for byte where it draws no random square (its first two rows), and where Redis draws at
random (Schotter's lower rows, VERSION 6's skyline) the shape: the rows, their widths and
the captions."""
from conftest import raw_connection

EXACT = [
    ("LOLWUT",), ("lolwut", "foo", "bar"), ("LOLWUT", "VERSION", "7"), ("LOLWUT", "version", "-1"),
    ("LOLWUT", "VERSION"), ("LOLWUT", "VERSION", "x"), ("LOLWUT", "VERSION", "5", "x"),
    ("LOLWUT", "VERSION", "6", "1", "y"), ("LOLWUT", "VERSION", "5", "10", "1", "1"),
    ("LOLWUT", "VERSION", "5", "66", "8", "2"), ("LOLWUT", "VERSION", "5", "0", "0", "0"),
    ("LOLWUT", "VERSION", "5", "3", "500", "1"), ("LOLWUT", "VERSION", "59"),
]
RANDOM = [("LOLWUT", "VERSION", "5"), ("LOLWUT", "VERSION", "5", "40", "3", "9"),
          ("LOLWUT", "VERSION", "6"), ("LOLWUT", "VERSION", "6", "30", "7"), ("LOLWUT", "VERSION", "6", "1", "1")]


def replies(server, protocol, calls):
    with raw_connection(server.port) as conn:
        if protocol == 3:
            conn.request("HELLO", "3")
        return [conn.request(*call) for call in calls]


def shape(reply):
    """The reply's type, then each line's length in characters (an ANSI-coloured cell
    counted as one), and its last two lines (the captions) as they are."""
    head, _, body = reply.partition(b"\r\n")
    lines = body.decode().split("\n")
    cells = [line.count("\033[0m") if "\033[" in line else len(line) for line in lines[:-3]]
    return reply[:1], cells, lines[-3:]


def test_lolwut_as_redis(redis_oracle, cxl, protocol):
    assert replies(cxl, protocol, EXACT) == replies(redis_oracle, protocol, EXACT)
    ours, theirs = replies(cxl, protocol, RANDOM), replies(redis_oracle, protocol, RANDOM)
    for call, mine, redis in zip(RANDOM, ours, theirs):
        assert shape(mine) == shape(redis), call
