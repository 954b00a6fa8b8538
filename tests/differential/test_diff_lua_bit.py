"""The bit library of Redis's Lua (Lua BitOp), replayed on redis-server and cxlredis:
results, number conversion (rounding, wrap-around, inf and nan, strings) and argument
errors must match byte for byte."""
import pytest

from diff_harness import run_sequence

pytestmark = pytest.mark.usefixtures("flushed")


def ev(body):
    return ("EVAL", body, 0)


SEQUENCE = [
    ev("return type(bit)"), ev("bit.x = 1"), ev("return type(bit.band)"),
    ev("return {bit.tobit(2^32 + 5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-2.5), bit.tobit(2^53)}"),
    ev("return {bit.tobit(1/0), bit.tobit(-1/0), bit.tobit(0/0), bit.tobit('0x10'), bit.tobit(' 7 '), bit.tobit(2^31)}"),
    ev("return {bit.tobit(2^52 + 3), bit.tobit(-2^52 - 3), bit.tobit(2^63), bit.tobit(1e300), bit.tobit(0.49999)}"),
    ev("return {bit.bnot(0), bit.bnot(-1), bit.bnot(0x7fffffff)}"),
    ev("return {bit.band(0xff, 0x0f), bit.band(-1, -1, 0x1234), bit.band(7)}"),
    ev("return {bit.bor(1, 2, 4, '8'), bit.bxor(7, 2), bit.bxor(-1, 0x0f0f0f0f, 3)}"),
    ev("return {bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(3, -1)}"),
    ev("return {bit.rshift(-1, 28), bit.rshift(-1, 0), bit.arshift(-256, 4), bit.arshift(256, 36)}"),
    ev("return {bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), bit.rol(1, 0), bit.ror(1, 32)}"),
    ev("return {bit.bswap(0x12345678), bit.bswap(-1), bit.bswap(0xff)}"),
    ev("return {bit.tohex(-1), bit.tohex(255, -4), bit.tohex(255, 2), bit.tohex(255, 20), bit.tohex(1, 0)}"),
    ev("return {bit.tohex(0xabcdef, -8), bit.tohex(2^32 + 1), bit.tohex(65535, -2^31)}"),
    ev("return bit.band()"), ev("return bit.band(1, {})"), ev("return bit.lshift(1)"),
    ev("return bit.tobit('x')"), ev("return bit.tobit(nil)"), ev("return bit.tohex(1, 'z')"),
    ev("return bit.bor(1, true)"), ev("return bit.bswap()"),
]


@pytest.mark.parametrize("protocol", [2, 3], ids=["RESP2", "RESP3"])
def test_bit_library_as_redis(redis_oracle, cxl, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCE, protocol=protocol, name="bit")
