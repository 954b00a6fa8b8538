"""The struct library of Redis's Lua, replayed on redis-server and cxlredis: packed bytes
(shown as hex), unpacked values and positions, sizes, number conversion (truncation,
wrap-around, out-of-range and NaN casts, integers wider than 8 bytes), alignment, and
the error of every check must match byte for byte."""
import pytest

from diff_harness import run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

# hex(s): the bytes of s as hex; show(...): every value as text (numbers with %.17g),
# so floats, huge integers and NaN reach the reply exactly.
HELPERS = (
    "local function hex(s) return (string.gsub(s, '.', function(c) "
    "return string.format('%02x', string.byte(c)) end)) end "
    "local function show(...) local out = {} for i = 1, select('#', ...) do "
    "local v = select(i, ...) out[i] = type(v) == 'number' and string.format('%.17g', v) "
    "or type(v) == 'string' and 's:' .. hex(v) or tostring(v) end return out end ")


def ev(body):
    return ("EVAL", HELPERS + body, 0)


def packed(fmt, args):
    """A Lua table of the hex of struct.pack(fmt, args) little-endian, big-endian and native."""
    return "{" + ", ".join(f"hex(struct.pack('{order}{fmt}', {args}))" for order in ("<", ">", "")) + "}"


def packs(fmt, *values):
    """Pack values (Lua expressions) together with fmt, little-endian, big-endian and native."""
    return ev("return " + packed(fmt, ", ".join(values)))


def each(fmt, *values):
    """Pack each value (a Lua expression) alone with fmt, in the three orders."""
    return ev("return {" + ", ".join(packed(fmt, value) for value in values) + "}")


def unpacks(fmt, data, *rest):
    """Unpack data (a Lua expression) with fmt in both byte orders."""
    extra = "".join(", " + r for r in rest)
    return ev(" ".join(
        f"local {name} = show(struct.unpack('{order}{fmt}', {data}{extra}))"
        for name, order in (("little", "<"), ("big", ">")))
        + " return {little, big}")


BYTES_16 = r"'\1\2\3\4\5\6\7\8\9\10\11\12\13\14\15\16'"
HIGH_16 = r"'\255\254\253\252\251\250\249\248\247\246\245\244\243\242\241\240'"

SEQUENCE = [
    ev("return {type(struct), type(struct.pack), type(struct.unpack), type(struct.size)}"),
    ev("struct.x = 1"), ev("return struct.nothing"),

    # integers of every code, at and past their bounds
    each("b", "0", "127", "-128", "128", "255", "256", "-129", "-1"),
    each("B", "0", "127", "-128", "128", "255", "256", "-129", "-1"),
    each("h", "0x1234", "-2", "32767", "-32768", "65535", "65536", "-32769"),
    each("H", "0x1234", "-2", "32767", "-32768", "65535", "65536", "-32769"),
    each("l", "2^53", "-2^53", "2^63 - 2^10", "2^63", "-2^63", "-1", "2^64", "2^64 - 2^11"),
    each("L", "2^53", "-2^53", "2^63 - 2^10", "2^63", "-2^63", "-1", "2^64", "2^64 - 2^11"),
    each("T", "1", "-1", "2^63 + 4096", "2^64", "-2^64", "2^70"),
    each("i", "1", "-1", "2^31", "2^32 + 7", "2^40 + 5", "-2^31 - 1"),
    each("I", "1", "-1", "2^31", "2^32 + 7", "2^40 + 5", "-2^31 - 1"),
    each("i1", "300", "-300"), packs("i2", "-3"), each("i3", "0x123456", "-2"),
    each("I5", "2^39 + 1", "-1"), packs("i6", "-2^40"), each("I7", "2^56 - 1", "2^56"),
    each("i8", "-2", "2^62"), each("I8", "2^63", "2^64"),
    each("i9", "-1", "2^63"), each("I12", "-1", "1"), each("i16", "-1", "2^63 + 2^12"),
    each("I16", "-2", "2^64"), packs("i17", "5"), packs("i31", "-1"), each("I32", "-1", "258"),
    packs("i0", "5"), packs("I0", "-1"),
    # numbers that are not integers: truncated toward zero, out of range cast as C casts
    each("i", "1.9", "-1.9", "0.5", "-0.5", "2^31 + 0.5", "1e10 + 0.75"),
    each("I8", "1e20", "-1e20", "1/0", "-1/0", "0/0", "-(0/0)", "2^63 - 2^10 + 0.5"),
    each("i8", "1e20", "-1e20", "1/0", "-1/0", "0/0", "-(0/0)", "-2^63 - 2^11"),
    each("b", "1/0", "-1/0", "0/0", "2^64", "-2^64"),
    each("i16", "-1/0", "0/0", "1e300"),
    # numeric strings are numbers
    each("i", "'12'", "' 0x10 '", "'1e3'", "'-7.9'", "'  3  '"),
    each("d", "'1.5'", "'0x20'", "'-0'"),

    # floats: rounding to single precision, overflow to infinity, denormals, NaN
    each("f", "1.5", "1/3", "1e300", "-1e300", "1e-50", "3.4028235e38"),
    each("f", "3.4028235677973366e38", "3.402823669209385e38", "2^-149", "2^-150", "2^-150 * 1.5"),
    each("f", "0/0", "-(0/0)", "1/0", "-1/0", "16777217", "0.1"),
    each("d", "1.5", "1/3", "1e300", "2^-1074", "0/0", "-(0/0)", "1/0", "-1/0", "0.1"),
    packs("fd", "1", "2"), packs("df", "1", "2"),

    # strings: zero-terminated, fixed size (cut), c0 (the whole string), numbers as text
    packs("s", "'abc'"), packs("s", "''"), packs("s", r"'a\0b'"), packs("ss", "'ab'", "'c'"),
    packs("c3", "'abcdef'"), packs("c1", "'xy'"), packs("c", "'q'"), packs("c0", "'abc'"),
    packs("c0", "''"), packs("c0c2s", "'ab'", "'cd'", "'ef'"), packs("c10", "'0123456789'"),
    packs("s", "12.5"), packs("s", "2^53"), packs("s", "1e100"),
    packs("c2", "12"), packs("s", "0/0"), packs("s", "-(0/0)"), packs("s", "1/0"), packs("s", "-1/0"),
    packs("x"), packs("xxbx", "7"), packs("bxh", "1", "2"),
    ev("return #struct.pack('c0', string.rep('a', 20000))"),
    ev("return #struct.pack('s', string.rep('a', 9000))"),
    ev("return hex(struct.pack('i', 1, 2, 3))"),

    # alignment: '!' alone is 8; padding up to min(size, alignment); c is never aligned
    packs("!bh", "1", "2"), packs("!bi", "1", "2"), packs("!bl", "1", "2"), packs("!bd", "1", "2"),
    packs("!bf", "1", "2"), packs("!bT", "1", "2"), packs("!bi16", "1", "2"),
    packs("!1bd", "1", "2"), packs("!2bd", "1", "2"), packs("!4bd", "1", "2"), packs("!8bd", "1", "2"),
    packs("!16bi16", "1", "2"), packs("!16bd", "1", "2"), packs("!bc3h", "1", "'abc'", "2"),
    packs("!bsh", "1", "'abc'", "2"), packs("!bxh", "1", "2"), packs("!bi3", "1", "2"),
    packs("!bxi3bd", "1", "2", "3", "4"), packs("!8bi6", "1", "2"), packs("!4bi5b i6", "1", "2", "3", "4"),
    packs("!bh!1bh", "1", "2", "3", "4"), packs("b!h", "1", "2"), packs("!2bi!4bi", "1", "2", "3", "4"),
    packs("bi0b", "1", "2", "3"),

    # byte order switches mid-format; spaces are skipped
    ev("return hex(struct.pack('<h>h<h', 1, 2, 3))"),
    ev("return hex(struct.pack(' < i 2', 1))"), ev("return hex(struct.pack(' > h  H ', -1, 2))"),
    ev("return hex(struct.pack('', 1))"), ev("return hex(struct.pack(''))"),
    ev(r"return hex(struct.pack('i\0zz', 1))"),

    # unpack: every code, both orders, the next position last
    unpacks("b", r"'\127\128\255\0'"), unpacks("B", r"'\127\128\255\0'"),
    unpacks("bB", r"'\128\128'"), unpacks("hH", r"'\1\128\255\127'"),
    unpacks("lL", HIGH_16), unpacks("T", HIGH_16), unpacks("iI", r"'\255\255\255\127\0\0\0\128'"),
    unpacks("i1I1i2I2", r"'\200\200\1\128\1\128'"), unpacks("i3I3", r"'\1\2\131\1\2\131'"),
    unpacks("i5I6i7", r"'\1\2\3\4\133\1\2\3\4\5\134\1\2\3\4\5\6\135'"),
    unpacks("i8", HIGH_16), unpacks("I8", HIGH_16), unpacks("I8", r"'\255\255\255\255\255\255\255\255'"),
    unpacks("i8", r"'\0\0\0\0\0\0\0\128'"), unpacks("I8", r"'\1\8\0\0\0\0\0\128'"),
    # wider than 8: the 8 least significant bytes, and the sign mask's shift modulo 64
    unpacks("i9", HIGH_16), unpacks("I9", HIGH_16), unpacks("i9", BYTES_16),
    unpacks("i9", r"'\255\0\0\0\0\0\0\0\0'"), unpacks("i9", r"'\0\0\0\0\0\0\0\0\255'"),
    unpacks("i9", r"'\127\0\0\0\0\0\0\0\0'"), unpacks("i12", HIGH_16), unpacks("I12", BYTES_16),
    unpacks("i16", HIGH_16), unpacks("I16", HIGH_16), unpacks("i16", BYTES_16),
    unpacks("i16", "string.rep('\\255', 16)"), unpacks("i15", BYTES_16),
    unpacks("i32", "string.rep('\\128', 32)"), unpacks("I32", "string.rep('\\1', 32)"),
    unpacks("i0", "''"), unpacks("i0I0b", r"'\255'"),
    unpacks("f", r"'\0\0\192\127'"), unpacks("f", r"'\1\0\128\127'"), unpacks("f", r"'\0\0\128\255'"),
    unpacks("f", r"'\1\0\0\0'"), unpacks("f", r"'\205\204\204\61'"), unpacks("f", r"'\0\0\0\128'"),
    unpacks("d", r"'\0\0\0\0\0\0\248\255'"), unpacks("d", r"'\1\0\0\0\0\0\240\127'"),
    unpacks("d", r"'\1\0\0\0\0\0\0\0'"), unpacks("d", r"'\154\153\153\153\153\153\185\63'"),
    unpacks("fd", r"'\0\0\128\63\0\0\0\0\0\0\0\64'"),
    unpacks("s", r"'abc\0def'"), unpacks("ss", r"'a\0\0b\0'"), unpacks("sb", r"'\0\1'"),
    unpacks("c3", "'abcdef'"), unpacks("c3c2c1", "'abcdef'"), unpacks("c", "'xy'"), unpacks("c0", "''", "1"),
    unpacks("x", "'a'"), unpacks("xbxb", r"'\1\2\3\4'"),
    # c0 takes the previous value as its size: a number or a numeric string
    unpacks("bc0", r"'\2abc'"), unpacks("bc0b", r"'\0\5'"), unpacks("c1c0", "'3abcd'"),
    unpacks("Bc0", r"'\255abc'"), unpacks("bc0", r"'\255abc'"), unpacks("dc0", r"'\0\0\0\0\0\0\4\64abcdef'"),
    unpacks("sc0", r"'2\0xyz'"), unpacks("sc0", r"'x\0xyz'"), unpacks("xc0", "'abc'"),
    unpacks("c0", "'abc'"), unpacks("bsc0", r"'\1\0abc'"), unpacks("bbc0c0", r"'\1\2abcd'"),
    unpacks("c2c0", "' 1abc'"), unpacks("c3c0", "'0x2abc'"), unpacks("c2c0", "'1.9abc'"),
    # positions: the start (truncated, numeric strings), its checks, and wrap-around
    unpacks("b", r"'\1\2\3'", "2"), unpacks("b", r"'\1\2\3'", "3"), unpacks("b", r"'\1\2\3'", "4"),
    unpacks("", "'abc'", "10"), unpacks("<", "'abc'", "10"), unpacks("", "'abc'", "4"), unpacks("x", "'abc'", "4"),
    unpacks("b", r"'\1\2\3'", "2.9"), unpacks("b", r"'\1\2\3'", "'2'"), unpacks("b", r"'\1\2\3'", "nil"),
    unpacks("b", r"'\1\2\3'", "0"), unpacks("b", r"'\1\2\3'", "0.5"), unpacks("", "'abc'", "-3"),
    unpacks("b", "'abc'", "-3"), unpacks("", "'abc'", "1e30"), unpacks("", "'abc'", "0/0"),
    unpacks("", "'abc'", "2^63"), unpacks("", "'abc'", "-2^63"), unpacks("", "'abc'", "2^53 + 2"),
    unpacks("b", "'abc'", "'x'"), unpacks("b", "'abc'", "{}"), unpacks("b", "'abc'", "true"),
    unpacks("s", r"'ab\0cd\0'", "2"), unpacks("s", r"'ab\0cd\0'", "4"), unpacks("s", r"'ab\0'", "4"),
    unpacks("s", r"'ab\0'", "5"), unpacks("bbs", r"'\1\2\0'"),
    unpacks("!bh", r"'\1\0\2\0'"), unpacks("!bd", "string.rep('\\64', 16)"),
    unpacks("!4bd", "string.rep('\\64', 12)"), unpacks("!bi3", r"'\1\0\0\2\0\0'"),
    unpacks("!bh", r"'\0\1\0\2\0'", "2"), unpacks("!bi", r"'\0\0\1\0\0\0\2\0\0\0'", "3"),
    unpacks("!bc2h", r"'\1ab\2\0'"), unpacks("!bsh", r"'\1a\0\2\0'"),
    unpacks("i", "12345"), unpacks("c4", "-0.5"), unpacks("c4", "0/0"), unpacks("c0", "12"),
    ev("local s = struct.pack('!<bhilTdfs', -1, -2, -3, -4, 5, 0.25, 0.5, 'end') "
       "return {hex(s), show(struct.unpack('!<bhilTdfs', s))}"),
    ev("local s = struct.pack('>c0bc0', 'ab', 3, 'xyz') return {hex(s), show(struct.unpack('>c2bc0', s))}"),
    ev("return #{struct.unpack(string.rep('b', 7997), string.rep('a', 8000))}"),
    ev("return #{struct.unpack(string.rep('b', 7998), string.rep('a', 8000))}"),
    ev("return #{struct.unpack(string.rep('b', 7996), string.rep('a', 8000), 1)}"),
    ev("return #{struct.unpack(string.rep('b', 7997), string.rep('a', 8000), 1)}"),
    ev("return #{struct.unpack(string.rep('x', 7998), string.rep('a', 8000))}"),
    ev("return #{struct.unpack(string.rep('x', 7997) .. 'b', string.rep('a', 8000), 1, 2)}"),
    ev(r"return struct.unpack('b', '\200')"), ev(r"return struct.unpack('d', '\0\0\0\0\0\0\16\64')"),

    # size
    ev("return {struct.size(''), struct.size('b'), struct.size('h'), struct.size('i'), struct.size('l'),"
       " struct.size('T'), struct.size('f'), struct.size('d'), struct.size('x'), struct.size('c'),"
       " struct.size('c10'), struct.size('i16'), struct.size('I3'), struct.size('i0')}"),
    ev("return {struct.size('!bd'), struct.size('!4bd'), struct.size('bd'), struct.size('!bhbi'),"
       " struct.size('!bi3'), struct.size('!bc3d'), struct.size('!bi16'), struct.size('!16bi16'),"
       " struct.size('! b d'), struct.size('<>!2bi')}"),
    ev("return {struct.size('z'), struct.size('bz'), struct.size('5'), struct.size(12), struct.size('bq7'),"
       " struct.size('c2147483647'), struct.size('!8 d b')}"),
    ev("return struct.size('#')"), ev("return struct.size('b=')"), ev("return struct.size('s')"),
    ev("return struct.size('bs')"), ev("return struct.size('c0')"), ev("return struct.size('bc0')"),
    ev("return struct.size('!3')"), ev("return struct.size('!0')"), ev("return struct.size('!6b')"),
    ev("return struct.size('i33')"), ev("return struct.size('i99')"), ev("return struct.size('i2147483647')"),
    ev("return struct.size('c2147483648')"), ev("return struct.size('i99999999999')"),
    ev("return struct.size('!99999999999')"), ev("return struct.size()"), ev("return struct.size({})"),
    ev(r"return struct.size('\200')"), ev(r"return struct.size('b\0s')"),

    # errors of pack
    ev("return struct.pack()"), ev("return struct.pack({})"), ev("return struct.pack(nil, 1)"),
    ev("return struct.pack('i')"), ev("return struct.pack('bbi', 1, 2)"), ev("return struct.pack('i', 'x')"),
    ev("return struct.pack('i', {})"), ev("return struct.pack('d', true)"), ev("return struct.pack('f', nil)"),
    ev("return struct.pack('b', nil, 1)"), ev("return struct.pack('s')"), ev("return struct.pack('c2')"),
    ev("return struct.pack('s', {})"), ev("return struct.pack('c0', false)"),
    ev("return struct.pack('c2', 'a')"), ev("return struct.pack('ic2', 1, 'a')"),
    ev("return struct.pack('c100000', 'x')"), ev("return struct.pack('y')"), ev("return struct.pack('b=', 1)"),
    ev("return struct.pack('b5', 1)"), ev("return struct.pack('<5', 1)"), ev("return struct.pack('b%', 1)"),
    ev(r"return struct.pack('\200')"), ev(r"return struct.pack('\178')"), ev("return struct.pack('i33', 1)"),
    ev("return struct.pack('c99999999999', 'a')"), ev("return struct.pack('!5b', 1)"),
    ev("return struct.pack('!0', 1)"), ev("return struct.pack('iy', 'x')"), ev("return struct.pack('yi', 'x')"),
    ev("return struct.pack('c0i', string.rep('x', 9000))"),
    ev("return struct.pack('c0c0i', string.rep('x', 9000), string.rep('y', 9000))"),

    # errors of unpack
    ev("return struct.unpack()"), ev("return struct.unpack('b')"), ev("return struct.unpack({}, 'a')"),
    ev("return struct.unpack('b', {})"), ev("return struct.unpack('b', nil)"), ev("return struct.unpack('i', 'abc')"),
    ev("return struct.unpack('bi', 'abcd')"), ev("return struct.unpack('c5', 'abc')"),
    ev("return struct.unpack('s', 'abc')"), ev("return struct.unpack('bs', 'a')"), ev("return struct.unpack('y', 'abc')"),
    ev("return struct.unpack('y', 'abc', 10)"), ev("return struct.unpack('by', 'abc')"),
    ev("return struct.unpack('i33', 'abc')"), ev("return struct.unpack('!3b', 'abc')"),
    ev("return struct.unpack('c99999999999', 'abc')"), ev("return struct.unpack('!bd', 'abcdefgh')"),
    ev("return struct.unpack('bc0', '\\5abc')"), ev("return struct.unpack('bc0', '\\255abc')"),
    ev("return struct.unpack('c2147483647', 'abc')"),
]


@pytest.mark.parametrize("protocol", [2, 3], ids=["RESP2", "RESP3"])
def test_struct_library_as_redis(redis_oracle, cxl, protocol):
    run_sequence(redis_oracle, cxl, SEQUENCE, protocol=protocol, name="struct")


@pytest.mark.xfail(strict=True, reason="lupa hands a Lua -0.0 to Python as the int 0, so its sign is lost "
                                       "before struct.pack sees it")
def test_negative_zero_as_redis(redis_oracle, cxl):
    run_sequence(redis_oracle, cxl, [each("f", "-0.0"), each("d", "-0.0"), packs("s", "-0.0")],
                 name="struct -0.0")
