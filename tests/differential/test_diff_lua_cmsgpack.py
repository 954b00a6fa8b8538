"""The cmsgpack library of Redis's Lua (lua-cmsgpack 0.4.0), replayed on redis-server and
cxlredis: every encoding boundary of pack (integers, floats, strings, arrays, maps,
nesting), the decoding of hand-written input, offsets, the Lua stack limits and the
argument and input errors must match byte for byte. Packed bytes come back as hex."""
import pytest

from diff_harness import run_sequence

pytestmark = pytest.mark.usefixtures("flushed")

HEX = "local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end "


def ev(body):
    return ("EVAL", HEX + body, 0)


def pairs_of(expression):
    """A script listing the key=value pairs of a table in the order pairs() visits them."""
    return ev(f"local r = {{}} for k, v in pairs({expression}) do r[#r + 1] = tostring(k) .. '=' .. tostring(v) end return r")


# A tail of arguments that brings pack's C frame to its 8000 slots: 4000 arguments
# fill half of it (the packed strings take the other half).
MANY = "local t = {} for i = 1, 4000 do t[i] = 1 end "

PACK = [
    ev("return {type(cmsgpack), cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}"),
    ev("cmsgpack.x = 1"),
    ev("return hex(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536, 2^32 - 1, 2^32, 2^53, 2^62, 2^63 - 1024))"),
    ev("return hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31 - 1, -2^53, -2^63))"),
    ev("return hex(cmsgpack.pack(0/0, -(0/0), 1/0, -1/0, 2^63, -2^63 - 4096, 2^64, -2^64, 1e300, -0.0))"),
    ev("return hex(cmsgpack.pack(0.1, 1.5, -0.5, 1/3, 1e-300, 1e38, 1e39, 3.4028234663852886e38, 1e-46, 2^-149))"),
    ev("return hex(cmsgpack.pack(2^31, 2^31 - 1, -2^31 + 1, 4294967295.5, 16777216, 16777217, 2^53 + 2))"),
    ev("return hex(cmsgpack.pack('', 'a', string.rep('x', 31), string.rep('y', 32)))"),
    ev("return {hex(cmsgpack.pack(string.rep('x', 255))):sub(1, 10), hex(cmsgpack.pack(string.rep('x', 256))):sub(1, 10)}"),
    ev("return {hex(cmsgpack.pack(string.rep('x', 65535))):sub(1, 10), hex(cmsgpack.pack(string.rep('x', 65536))):sub(1, 14)}"),
    ev("return {#cmsgpack.pack(string.rep('z', 70000)), redis.sha1hex(cmsgpack.pack(string.rep('z', 70000)))}"),
    ev("return hex(cmsgpack.pack('12', 12, '1.5', '\\0\\255'))"),
    ev("return hex(cmsgpack.pack(true, false, nil, tostring, cjson.null, coroutine.create(function() end), cmsgpack.pack))"),
    ev("return {hex(cmsgpack.pack(nil)), hex(cmsgpack.pack(nil, nil)), hex(cmsgpack.pack(1, 'a', {2}, nil, true))}"),
    ev("return hex(cmsgpack.pack({}, {1, 2, 3}, {a = 1}, {[1] = 1, [3] = 3}, {[0] = 1}, {[1.5] = 1}, {1, x = 2}))"),
    ev("return hex(cmsgpack.pack({[2] = 2, [1] = 1}, {[2^31] = 1}, {[2^31 - 1] = 1}, {[2^53] = 1}, {[-0.0] = 1}))"),
    ev("return hex(cmsgpack.pack({true, false}, {[true] = 1}, {['1'] = 1}, {[1.0] = 1, [2] = 2}, {1, 2, 3, nil, 5}))"),
    ev("local t = {1, 2, 3} t[5] = 5 return hex(cmsgpack.pack(t))"),
    ev("local t = {} for i = 1, 50 do t[i] = i end for i = 1, 50, 3 do t[i] = nil end return hex(cmsgpack.pack(t))"),
    ev("local t = {} for i = 1, 40 do t[i * 0.5] = i end return hex(cmsgpack.pack(t))"),
    ev("local t = {} for i = 1, 40 do t[-i] = 'v' .. i t['s' .. i] = i t[i + 0.25] = true end return hex(cmsgpack.pack(t))"),
    ev("local t, u = {}, {} for i = 1, 15 do t[i] = i end for i = 1, 16 do u[i] = i end return hex(cmsgpack.pack(t, u))"),
    ev("local t = {} for i = 1, 65535 do t[i] = 0 end local s = cmsgpack.pack(t) return {#s, hex(s:sub(1, 5))}"),
    ev("local t = {} for i = 1, 65536 do t[i] = 0 end local s = cmsgpack.pack(t) return {#s, hex(s:sub(1, 5))}"),
    ev("local t, u = {}, {} for i = 1, 15 do t['k' .. i] = i end for i = 1, 16 do u['k' .. i] = i end return hex(cmsgpack.pack(t, u))"),
    ev("local t = {} for i = 1, 65535 do t[-i] = i end local s = cmsgpack.pack(t) return {#s, hex(s:sub(1, 5)), redis.sha1hex(s)}"),
    ev("local t = {} for i = 1, 65536 do t['k' .. i] = i end local s = cmsgpack.pack(t) return {#s, hex(s:sub(1, 5)), redis.sha1hex(s)}"),
    ev("return hex(cmsgpack.pack({x = {y = {z = 1}}, 1.5, [true] = 'v'}, {a = 1, b = 2, c = 3, d = {1, 2, {e = 5}}}))"),
    # Nesting: a table 16 levels down is packed as nil (so cycles end).
    ev("local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return hex(cmsgpack.pack(t))"),
    ev("local t = {} local c = t for i = 1, 15 do c[1] = {} c = c[1] end return hex(cmsgpack.pack(t))"),
    ev("local t = {} local c = t for i = 1, 20 do c.k = {} c = c.k end return hex(cmsgpack.pack(t))"),
    ev("local t = {} t.self = t return hex(cmsgpack.pack(t))"),
    ev("local t = {} t[1] = t return hex(cmsgpack.pack(t, 7))"),
    ev("local t = setmetatable({}, {__index = function() return 1 end}) return hex(cmsgpack.pack(t))"),
    ev("local t = setmetatable({1, 2}, {__len = function() return 5 end}) return hex(cmsgpack.pack(t))"),
    ev("return hex(cmsgpack.pack(KEYS, ARGV))"),
    ev("local co = coroutine.wrap(function() return hex(cmsgpack.pack({1, {a = {2}}})) end) return co()"),
    # Argument errors and the C stack.
    ev("return cmsgpack.pack()"),
    ev(MANY + "return #cmsgpack.pack(unpack(t, 1, 4000))"),
    ev(MANY + "t[4001] = 1 return #cmsgpack.pack(unpack(t, 1, 4001))"),
    ev(MANY + "t[4000] = {} return #cmsgpack.pack(unpack(t))"),
    ev(MANY + "t[3999] = {} return #cmsgpack.pack(unpack(t))"),
    ev(MANY + "t[3998] = {} return #cmsgpack.pack(unpack(t))"),
    ev(MANY + "t[3998] = {{}} return #cmsgpack.pack(unpack(t))"),
    ev(MANY + "t[3997] = {a = 1} return #cmsgpack.pack(unpack(t))"),
    ev(MANY + "t[3995] = {a = {}} return #cmsgpack.pack(unpack(t))"),
    ev(MANY + "t[3995] = {a = {{}}} return #cmsgpack.pack(unpack(t))"),
]

UNPACK = [
    ev(r"return {cmsgpack.unpack('\1\2\3')}"),
    ev(r"return {select('#', cmsgpack.unpack('')), select('#', cmsgpack.unpack('\192\192')), select('#', cmsgpack.unpack('\1\192'))}"),
    ev(r"return {cmsgpack.unpack('\204\255\205\255\255\206\255\255\255\255\207\0\0\0\1\0\0\0\0')}"),
    ev(r"return {tostring(cmsgpack.unpack('\207\255\255\255\255\255\255\255\255')), tostring(cmsgpack.unpack('\207\127\255\255\255\255\255\255\255'))}"),
    ev(r"return {tostring(cmsgpack.unpack('\207\128\0\0\0\0\0\0\0')), tostring(cmsgpack.unpack('\211\128\0\0\0\0\0\0\1'))}"),
    ev(r"return {cmsgpack.unpack('\208\128\209\128\0\210\128\0\0\0\211\255\255\255\255\255\255\255\255\255\224\127\0')}"),
    ev(r"return {tostring(cmsgpack.unpack('\202\63\192\0\0')), tostring(cmsgpack.unpack('\203\63\185\153\153\153\153\153\154'))}"),
    ev(r"return {tostring(cmsgpack.unpack('\202\127\192\0\0')), tostring(cmsgpack.unpack('\202\255\128\0\0')), tostring(cmsgpack.unpack('\203\255\248\0\0\0\0\0\0'))}"),
    ev(r"return {tostring(cmsgpack.unpack('\202\0\0\0\1')), tostring(cmsgpack.unpack('\202\128\0\0\0'))}"),
    ev(r"return {cmsgpack.unpack('\195\194\192\1')}"),
    ev(r"return {cmsgpack.unpack('\160\161a\191' .. string.rep('s', 31) .. '\217\3abc\218\0\2xy\219\0\0\0\1z')}"),
    ev(r"return {cmsgpack.unpack('\147\1\2\3', '\220\0\2\1\2', '\221\0\0\0\2\1\2', '\144', '\220\0\0')}"),
    ev(r"return {cmsgpack.unpack('\147\1\2\3')}"),
    ev(r"local a, b, c = cmsgpack.unpack('\220\0\2\1\2\221\0\0\0\2\1\2\144') return {a, b, c}"),
    ev(r"return {cmsgpack.unpack('\130\161a\1\161b\2').b, cmsgpack.unpack('\222\0\1\161a\1').a, cmsgpack.unpack('\223\0\0\0\1\161a\1').a}"),
    ev(r"return {cmsgpack.unpack('\147\1\192\3'), #cmsgpack.unpack('\147\1\192\3'), cmsgpack.unpack('\129\161a\192').a}"),
    ev(r"return {cmsgpack.unpack('\129\195\1')[true], cmsgpack.unpack('\129\203\63\248\0\0\0\0\0\0\1')[1.5], cmsgpack.unpack('\129\202\63\128\0\0\7')[1]}"),
    ev(r"return cmsgpack.unpack('\129\147\1\2\3\1')"),
    ev("local t = {} for i = 1, 70000 do t[i] = i end local u = cmsgpack.unpack(cmsgpack.pack(t)) return {#u, u[70000], u[65536]}"),
    ev("local t = {} for i = 1, 70000 do t['x' .. i] = i end local u = cmsgpack.unpack(cmsgpack.pack(t)) local n = 0 for k in pairs(u) do n = n + 1 end return {n, u.x70000}"),
    ev("return {#cmsgpack.unpack(cmsgpack.pack(string.rep('a', 70000))), cmsgpack.unpack(cmsgpack.pack(string.rep('ab', 40000))):sub(-3)}"),
    ev("local a, b, c = cmsgpack.unpack(cmsgpack.pack({1, {2, {3}}}, 'x', {k = {v = 1}})) return {a[2][2][1], b, c.k.v}"),
    ev("local t = {} for i = 1, 100 do t['key' .. i] = {i, tostring(i)} end local s = cmsgpack.pack(t) "
       "return {redis.sha1hex(s), redis.sha1hex(cmsgpack.pack(cmsgpack.unpack(s))), #s}"),
    ev("return {cmsgpack.unpack(cmsgpack.pack(1.5, 0.1, 2^63, -2^63, 1e300, 2^53 + 1))}"),
    ev("local r = {cmsgpack.unpack(cmsgpack.pack(1.5, 0.1, 2^63, -2^63, 1e300, 2^53 + 1))} "
       "for i = 1, #r do r[i] = tostring(r[i]) end return r"),
    ev(r"local co = coroutine.wrap(function() return cmsgpack.unpack('\129\161a\147\1\2\3').a[3] end) return co()"),
    # The order pairs() visits a decoded table in: nil values still took their slots.
    pairs_of(r"cmsgpack.unpack('\134\161a\1\161b\2\161c\3\1\4\195\5\203\63\248\0\0\0\0\0\0\6')"),
    pairs_of(r"cmsgpack.unpack('\150\1\192\3\192\192\6\7\192\192\192\11\192\192\14\192\192\192\192\192\192\21\192')"),
    pairs_of(r"cmsgpack.unpack('\136\161a\192\161b\192\161c\192\161d\1\161e\192\161f\2\161a\3\161g\4')"),
    pairs_of(r"cmsgpack.unpack('\223\0\0\0\3\1\192\2\192\3\1')"),
    pairs_of(r"cmsgpack.unpack('\222\0\3\161a\1\161a\192\161a\2')"),
    pairs_of("cmsgpack.unpack(cmsgpack.pack({[3] = 1, [100] = 2, [-1] = 3, x = 4, [2.5] = 5, [true] = 6, [false] = 7}))"),
    ev("local s = '\\222\\0\\40' for i = 1, 40 do s = s .. string.char(i) .. (i % 3 == 0 and '\\192' or '\\1') end "
       "local r = {} for k, v in pairs(cmsgpack.unpack(s)) do r[#r + 1] = k .. '=' .. v end return r"),
    ev("local s = '\\220\\0\\40' for i = 1, 40 do s = s .. (i % 4 == 0 and '\\1' or '\\192') end "
       "local r = {} for k, v in pairs(cmsgpack.unpack(s)) do r[#r + 1] = k .. '=' .. v end return r"),
    # Input errors: unknown types (bin, ext, 0xc1), truncation at every form, bad keys.
    *[ev(f"return cmsgpack.unpack('{data}')") for data in (
        r"\193", r"\196\1a", r"\197\0\1a", r"\198\0\0\0\1a", r"\199\1\1a", r"\200\0\1\1a", r"\201\0\0\0\1\1a",
        r"\212\1\1", r"\213\1\1\1", r"\216\1\1", r"\1\2\193", r"\147\1\193",
        r"\204", r"\205\1", r"\206\1\1\1", r"\207\1", r"\208", r"\209\1", r"\210\1", r"\211\1\1", r"\202\1", r"\203\1",
        r"\162a", r"\217", r"\217\5abc", r"\218\0", r"\218\0\5ab", r"\219\0\0\0", r"\219\0\0\0\9ab",
        r"\220\0", r"\220\0\1", r"\221\255\255\255\255", r"\222\0", r"\222\0\1\1", r"\223\0\0\0\1", r"\129\1", r"\145",
        r"\129\192\1", r"\129\192", r"\129\203\255\248\0\0\0\0\0\0\1", r"\129\192\193")],
    ev("return pcall(cmsgpack.unpack, '\\193')"),
    ev("return cmsgpack.unpack({})"), ev("return cmsgpack.unpack(nil)"), ev("return cmsgpack.unpack()"),
    ev("return {cmsgpack.unpack(5), cmsgpack.unpack(1.5)}"),
    ev(r"return {cmsgpack.unpack('\1\2', 'extra', 'more')}"),
]

OFFSETS = [
    *[ev(f"return {{cmsgpack.unpack_one('\\1\\2\\3'{offset})}}") for offset in (
        "", ", 0", ", 1", ", 2", ", 3", ", 4", ", -1", ", '1'", ", ' 0x2 '", ", nil", ", 1.9", ", 0/0", ", 1/0",
        ", 2^40", ", -2^40", ", 2^32 + 1", ", 2^63", ", 'x'", ", {}", ", 1, 'extra'")],
    ev("return {cmsgpack.unpack_one('')}"), ev(r"return {cmsgpack.unpack_one('\204')}"),
    ev("return {cmsgpack.unpack_one()}"), ev("return {cmsgpack.unpack_one({}, 'x')}"), ev("return cmsgpack.unpack_one(true)"),
    ev("return {cmsgpack.unpack_one(cmsgpack.pack(1, 'two', {3}), 1)}"),
    ev("local s = cmsgpack.pack(1, 'two', {3}, {a = 'b'}) local r, offset, v = {}, 0 "
       "repeat offset, v = cmsgpack.unpack_one(s, offset) r[#r + 1] = offset until offset == -1 return r"),
    *[ev(f"return {{cmsgpack.unpack_limit('\\1\\2\\3'{arguments})}}") for arguments in (
        ", 1", ", 2", ", 2, 2", ", 0", ", 0, 0", ", 0, 1", ", 0, 3", ", 10", ", 10, 3", ", -1", ", -1, -5", ", 1, 4",
        ", 1, -2^31", ", 1, 2^33", ", 1, 2^63", ", 1/0", ", 2^62", ", -2^63", ", 1e10", ", 1, 1e10", ", '1', '1'",
        ", ' 0x1 '", "", ", nil", ", {}", ", 1, 'z'", ", 1, nil", ", 1, false")],
    ev("return {cmsgpack.unpack_limit('', 1)}"), ev("return {cmsgpack.unpack_limit('', 0, 0)}"),
    ev("return {cmsgpack.unpack_limit(nil, 1)}"), ev("return {cmsgpack.unpack_limit(nil)}"),
    ev("return {cmsgpack.unpack_limit(cmsgpack.pack(1, 'two', {3}, 4), 2, 1)}"),
]

# The C frame's 8000 slots: the argument, each value decoded so far, and two slots per
# array (one per map, two once its key is read) open around the value being decoded.
STACK = [
    ev("return #{cmsgpack.unpack(string.rep('\\1', 7999))}"),
    ev("return #{cmsgpack.unpack(string.rep('\\1', 8000))}"),
    ev("return #{cmsgpack.unpack(string.rep('\\1', 7998), 1)}"),
    ev("return #{cmsgpack.unpack(string.rep('\\1', 7999), 1)}"),
    *[ev(f"return #{{cmsgpack.unpack(string.rep('{level}', {depth}) .. '{inner}')}}") for level, depth, inner in (
        (r"\145", 3999, r"\1"), (r"\145", 4000, r"\1"), (r"\145", 3998, r"\144"), (r"\145", 3999, r"\144"),
        (r"\129\161a", 3999, r"\1"), (r"\129\161a", 4000, r"\1"), (r"\129\161a", 7999, r"\1"),
        (r"\145\129\161a", 2666, r"\1"), (r"\145\129\161a", 2667, r"\1"))],
    ev("return #{cmsgpack.unpack('\\1' .. string.rep('\\145', 3998) .. '\\144')}"),
    ev("return #{cmsgpack.unpack(string.rep('\\129', 3998) .. '\\1' .. string.rep('\\1', 3998))}"),
    ev("return #{cmsgpack.unpack(string.rep('\\129', 4000) .. '\\1' .. string.rep('\\1', 4000))}"),
    ev("return #{cmsgpack.unpack_limit(string.rep('\\1', 7998), 9000)}"),
    ev("return #{cmsgpack.unpack_limit(string.rep('\\1', 7999), 9000)}"),
    ev("return #{cmsgpack.unpack_limit(string.rep('\\1', 7999), 7998)}"),
    ev("return #{cmsgpack.unpack_limit(string.rep('\\1', 7999), 7999)}"),
    ev("return #{cmsgpack.unpack_one(string.rep('\\145', 3999) .. '\\1')}"),
    ev("return #{cmsgpack.unpack_one(string.rep('\\145', 4000) .. '\\1')}"),
]


@pytest.mark.parametrize("protocol", [2, 3], ids=["RESP2", "RESP3"])
@pytest.mark.parametrize("name, sequence", [("pack", PACK), ("unpack", UNPACK), ("offsets", OFFSETS), ("stack", STACK)],
                         ids=["pack", "unpack", "offsets", "stack"])
def test_cmsgpack_library_as_redis(redis_oracle, cxl, protocol, name, sequence):
    run_sequence(redis_oracle, cxl, sequence, protocol=protocol, name=f"cmsgpack {name}")
