"""The cjson library of Redis's Lua (Lua CJSON 2.1.0), replayed on redis-server and
cxlredis: encoded text, decoded values, number formatting, escapes, array detection,
depth limits, configuration and every error message must match byte for byte.

The configuration outlasts a script on both servers (it is per Lua VM), so every case
that changes it sets it back before the next one."""
import pytest

from diff_harness import run_sequence

pytestmark = pytest.mark.usefixtures("flushed")


def ev(body, *args):
    return ("EVAL", body, 0, *args)


def encode(expr):
    return ev(f"return cjson.encode({expr})")


def decode(text):
    """Decode ARGV[1] and hand back its type, re-encoding (inside an array: see
    NEGATIVE_ZERO) and value (as a reply)."""
    return ev("local v = cjson.decode(ARGV[1]) return {type(v), cjson.encode({v}), v}", text)


def decode_zero(text):
    """A decoded -0, re-encoded: not handed back, as cxlredis's reply of -0 is ":-0"."""
    return ev("return cjson.encode({cjson.decode(ARGV[1])})", text)


ENCODING = [
    ev("return {type(cjson), type(cjson.encode), cjson._NAME, cjson._VERSION, type(cjson.null)}"),
    ev("cjson.x = 1"), ev("return cjson.null == cjson.null"),
    encode("1"), encode("-1"), encode("0"), encode("1.5"), encode("0.1"), encode("1/3"), encode("-1/3"),
    encode("2^53"), encode("2^63"), encode("1e300"), encode("-1e-300"), encode("123456789012345"),
    encode("12345678901234567890"), encode("1e15"), encode("1e14"), encode("5e-324"), encode("3.14159265358979"),
    encode("{-0.0, 0, 1/-1e308/1e308}"),
    encode("'hello'"), encode("''"), encode("'a\"b\\\\c/d'"), encode("'\\0\\1\\2\\8\\9\\10\\11\\12\\13\\14\\31\\127'"),
    encode("'\\128\\255\\200é€😀'"), encode("'tab\\there'"),
    encode("true"), encode("false"), encode("nil"), encode("cjson.null"), encode("{cjson.null, 1}"),
    encode("{}"), encode("{{}}"), encode("{1, 2, 3}"), encode("{'a', 'b', {1, {2, {3}}}}"),
    encode("{a = 1}"), encode("{a = {b = {c = 'd'}}}"), encode("{[1] = 'x', [2] = 'y'}"),
    encode("{1, 2, nil, 4}"), encode("{nil, nil, 3}"), encode("{[10] = 1}"), encode("{[11] = 1}"),
    encode("{[1] = 1, [20] = 2}"), encode("{[1] = 1, [2] = 1, [3] = 1, [4] = 1, [5] = 1, [6] = 1, [13] = 1}"),
    encode("{[0] = 'zero'}"), encode("{[-1] = 'neg'}"), encode("{[1.5] = 'half'}"), encode("{[2^40] = 1}"),
    encode("{[1] = 1, x = 2}"), encode("{[3] = 3, [2] = 2, [1] = 1}"), encode("{[1/0] = 1}"),
    encode("{a = 1, b = 2, c = 3, d = 4, e = 5, f = 6}"), encode("{10, 20, x = {y = {1, 2}}}"),
    encode("{['a/b'] = '\\n'}"), encode("{[true] = 1}"), encode("{[{}] = 1}"), encode("{[pcall] = 1}"),
    encode("pcall"), encode("{1, pcall}"), encode("coroutine.create(function() end)"),
    encode("{[true] = 1, a = pcall}"), encode("{a = pcall, [true] = 1, b = 1/0}"), encode("{[1] = 1, ['1'] = 2}"),
    encode("redis.call"), encode("{a = redis.call}"),
    encode("1/0"), encode("-1/0"), encode("0/0"), encode("{1/0}"),
    ev("return cjson.encode()"), ev("return cjson.encode(1, 2)"), ev("return cjson.encode(nil, nil)"),
    ev("local t = {} for i = 1, 1000 do t = {t} end return #cjson.encode(t)"),
    ev("local t = {} for i = 1, 1001 do t = {t} end return cjson.encode(t)"),
    ev("local t = {} for i = 1, 1000 do t = {a = t} end return #cjson.encode(t)"),
    ev("local t = {} t[1] = t return cjson.encode(t)"),
    ev("local t = {} for i = 1, 300 do t[i] = i * 1.5 end return cjson.encode(t)"),
    ev("local t = setmetatable({}, {__index = function() return 1 end}) t[3] = 3 return cjson.encode(t)"),
    ev("local ok, err = pcall(cjson.encode, {[true] = 1}) return {tostring(ok), err}"),
    ev("local co = coroutine.wrap(function() return cjson.encode({1, {a = cjson.null}, 'x'}) end) return co()"),
    ev("local co = coroutine.wrap(function() return cjson.encode({-0.0, cjson.null, {a = {-0.0}}}) end) return co()"),
    ev("redis.call('SET', 'doc', '{\"n\":[1,2.5,\"x\"]}') local v = cjson.decode(redis.call('GET', 'doc')) "
       "v.n[4] = cjson.null redis.call('SET', 'doc', cjson.encode(v)) return redis.call('GET', 'doc')"),
]

DECODING = [
    decode("1"), decode("-1"), decode("1.5"), decode("  12  "), decode("1e3"), decode("1E-2"), decode_zero("-0"), decode_zero("-0.0"), decode_zero("[-0]"),
    decode("123456789012345678901234567890"), decode("1e400"), decode("-1e400"), decode("1e-400"),
    decode("0.1"), decode("3.0"), decode("01"), decode("-012"), decode("+1"), decode("0x1F"), decode("0x1p4"),
    decode("-0x10"), decode("0x"), decode("1."), decode_zero("-.5"), decode(".5"), decode("1e"), decode("1e+"),
    decode("inf"), decode("-Infinity"), decode("nan"), decode("NaN"), decode("-nan"), decode("infinit"),
    decode("[nan]"), decode("[1, inf]"), decode("-"), decode("+"), decode("-x"), decode("- 1"),
    decode('"abc"'), decode('""'), decode('"a\\"b\\\\c\\/d\\b\\f\\n\\r\\t"'), decode('"\\u0041\\u00e9\\u20ac"'),
    decode('"\\ud83d\\ude00"'), decode('"\\uD83D\\uDE00x"'), decode('"\\u0000"'), decode('"\\ude00"'),
    decode('"\\ud83d"'), decode('"\\ud83d\\u0041"'), decode('"\\ud83dx"'), decode('"\\u12"'), decode('"\\u12G4"'),
    decode('"\\x"'), decode('"abc'), decode('"a\tb"'), decode('"é€"'), decode('"\\u007f\\u0080\\u07ff\\u0800"'),
    decode("true"), decode("false"), decode("null"), decode("tru"), decode("nul"), decode("True"),
    decode("[]"), decode("{}"), decode("[1,2,3]"), decode("[1,[2,[3,[4]]]]"), decode('{"a":1}'),
    decode('{"a":{"b":[1,2,{"c":null}]}}'), decode('[null, null, 1]'), decode('[null]'),
    decode('{"a":1,"a":2}'), decode('{"x":1,"y":2,"z":3,"w":4,"v":5}'), decode(' [ 1 , 2 ] '),
    decode("\t\r\n[\n1\t]\r\n"), decode("[1]\x00garbage"), decode(""), decode("   "), decode("a"),
    decode("[1,]"), decode("[,1]"), decode("[1 2]"), decode("[1"), decode("["), decode("]"), decode("{"),
    decode('{"a"}'), decode('{"a":}'), decode('{"a":1,}'), decode('{"a" 1}'), decode('{1:1}'), decode('{"a":1 "b":2}'),
    decode('{"a":1'), decode("[1] [2]"), decode("1 2"), decode('"a" x'), decode("[1]]"), decode("\x00\x01"),
    decode("0x1.8p1"), decode("0X.8"), decode("0x1p"), decode("1e+5"), decode("infinity"), decode("-infinityx"),
    decode("nan(abc)"), decode("[nan(]"), decode("1.5e3.2"), decode("1e5x"), decode('"\u00C9\u00e9"'),
    decode("[1,2,3]x"), decode("[0x]"), decode("[-]"), decode("[.1]"), decode("[Inf, -inf, NAN]"), decode("00"),
    decode("a\x00"), decode("1\x00"), decode("@"), decode("[true, false, null, tru]"),
    ev("return cjson.decode()"), ev("return cjson.decode('1', '2')"), ev("return cjson.decode(nil)"),
    ev("return cjson.decode({})"), ev("return cjson.decode(12)"), ev("return cjson.decode(1.25)"),
    ev("return cjson.decode('[1,2,3]')[2]"), ev("return cjson.decode('{\"k\":\"v\"}').k"),
    ev("return cjson.decode('[null]')[1] == cjson.null"), ev("return cjson.decode('null') == cjson.null"),
    ev("return type(cjson.decode('null'))"), ev("return cjson.decode('null')"), ev("return cjson.decode('[1,null,2]')"),
    ev("return {tostring(cjson.decode('nan')), tostring(cjson.decode('-nan')), tostring(cjson.decode('-0'))}"),
    ev("return string.rep('[', 1000) .. string.rep(']', 1000) == cjson.encode(cjson.decode(string.rep('[', 1000) .. "
       "string.rep(']', 1000)))"),
    ev("return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))"),
    ev("return cjson.decode(' ' .. string.rep('{\"a\":', 1001))"),
    ev("local ok, err = pcall(cjson.decode, '[1,') return {tostring(ok), err}"),
    ev("local co = coroutine.wrap(function() return cjson.decode('{\"a\":[1,2,{\"b\":null}]}') end) "
       "return cjson.encode(co())"),
]

CONFIGURATION = [
    ev("return {cjson.encode_sparse_array()}"), ev("return cjson.encode_max_depth()"),
    ev("return cjson.decode_max_depth()"), ev("return cjson.encode_number_precision()"),
    ev("return {cjson.encode_keep_buffer(), cjson.encode_invalid_numbers(), cjson.decode_invalid_numbers()}"),
    ev("cjson.encode_number_precision(3) return cjson.encode({1/3, 12345, 0.5, 1e20})"),
    ev("return cjson.encode(1/3)"),                  # the precision outlasts the script
    ev("return cjson.encode_number_precision(14)"), ev("return cjson.encode_number_precision(15)"),
    ev("return cjson.encode_number_precision(0)"), ev("return cjson.encode_number_precision('5')"),
    ev("return cjson.encode_number_precision('x')"), ev("return cjson.encode_number_precision(1, 2)"),
    ev("return cjson.encode_number_precision(14.9)"), ev("return cjson.encode_number_precision(14)"),
    ev("return cjson.encode_max_depth(2)"), encode("{{1}}"), encode("{{{1}}}"), encode("{a = {b = {}}}"),
    ev("return cjson.encode_max_depth(0)"), ev("return cjson.encode_max_depth(true)"),
    ev("return cjson.encode_max_depth(1000)"),
    ev("return cjson.decode_max_depth(2)"), decode("[[1]]"), decode("[[[1]]]"), decode('{"a":{"b":{}}}'),
    ev("return cjson.decode_max_depth(-1)"), ev("return cjson.decode_max_depth(1000)"),
    ev("return {cjson.encode_sparse_array(true)}"), encode("{[1] = 1, [20] = 2}"),
    ev("return {cjson.encode_sparse_array(false, 0)}"), encode("{[1] = 1, [20] = 2}"),
    ev("return {cjson.encode_sparse_array(false, 2, 30)}"), encode("{[1] = 1, [20] = 2}"), encode("{[31] = 1}"),
    ev("return {cjson.encode_sparse_array(true, -1)}"), ev("return {cjson.encode_sparse_array()}"),
    ev("return {cjson.encode_sparse_array('on', 2, 10)}"), ev("return {cjson.encode_sparse_array('maybe')}"),
    ev("return {cjson.encode_sparse_array(1)}"), ev("return {cjson.encode_sparse_array(nil, nil, 'x')}"),
    ev("return {cjson.encode_sparse_array(false, 2, 10, 1)}"), ev("return {cjson.encode_sparse_array(false, 2, 10)}"),
    ev("return cjson.encode_invalid_numbers(true)"), encode("{1/0, -1/0, 0/0, -(0/0)}"), encode("{[1/0] = 1}"),
    ev("return cjson.encode_invalid_numbers('null')"), encode("{1/0, -1/0, 0/0}"), encode("{[1/0] = 1}"),
    ev("return cjson.encode_invalid_numbers('on')"), ev("return cjson.encode_invalid_numbers('off')"),
    ev("return cjson.encode_invalid_numbers('bad')"), ev("return cjson.encode_invalid_numbers(2)"),
    ev("return cjson.encode_invalid_numbers(false)"),
    ev("return cjson.decode_invalid_numbers(false)"), decode("inf"), decode("0x10"), decode("01"), decode_zero("-0"),
    decode("+1"), decode("-inf"), decode("nan"), decode("1.5"), decode("-"),
    ev("return cjson.decode_invalid_numbers('on')"), ev("return cjson.decode_invalid_numbers('null')"),
    ev("return cjson.decode_invalid_numbers(true)"),
    ev("return cjson.encode_keep_buffer(false)"), encode("{1, 2}"), ev("return cjson.encode_keep_buffer('on')"),
    ev("return cjson.encode_keep_buffer({})"),
    # raised limits meet the Lua stack's (8000 slots for a C function)
    ev("cjson.encode_max_depth(100000) local t = {} for i = 1, 9000 do t = {t} end "
       "local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return e"),
    ev("cjson.encode_max_depth(100000) local t = {} for i = 1, 9000 do t = {a = t} end "
       "local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return e"),
    ev("cjson.encode_max_depth(100000) local t = {} for i = 1, 7997 do t = {t} end "
       "local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return {tostring(ok), #e}"),
    ev("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[', 9000)) "
       "cjson.decode_max_depth(1000) return e"),
    ev("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{\"a\":', 9000)) "
       "cjson.decode_max_depth(1000) return e"),
    ev("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[{\"a\":', 9000)) "
       "cjson.decode_max_depth(1000) return e"),
    ev("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[', 7998) .. "
       "string.rep(']', 7998)) cjson.decode_max_depth(1000) return {tostring(ok), #e}"),
    ev("return {cjson.encode_sparse_array(false, 2147483647, 0)}"), encode("{[1] = 1, [3] = 1}"),
    encode("{[1] = 1, [2] = 1, [5] = 1}"), ev("return {cjson.encode_sparse_array(false, 2, 10)}"),
    ev("return cjson.encode_number_precision(2^32 + 5)"), encode("1/3"), ev("return cjson.encode_number_precision(-2^32 + 3)"),
    ev("return cjson.encode_number_precision(14)"),
    ev("local j = cjson.new() j.encode_number_precision(2) return {j.encode(1/3), cjson.encode(1/3), "
       "type(j.null), j._VERSION}"),
]

# Fixed documents: each is decoded, re-encoded and decoded again; both texts must match.
DOCUMENTS = [
    '{"id":17,"name":"widget","tags":["a","b"],"price":12.5,"stock":null,"active":true}',
    '[{"x":1,"y":[2,3,{"z":[]}]},{"x":-4.25e-3},[[[[]]]],"\\u00fc\\n",false]',
    '{"nested":{"deeper":{"deepest":{"value":[1,2,3,{"k":"v"}]}}},"list":[0.5,1e-7,1e21,-0.0]}',
    '[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]',
    '{"unicode":"\\ud834\\udd1e \\u2603 caf\\u00e9","escapes":"\\"\\\\\\/\\b\\f\\n\\r\\t","empty":""}',
    '{"a":{},"b":[],"c":[{}],"d":[[]],"e":{"f":{}}}',
    '[123456789012345,1234567890123456,0.1,0.2,0.30000000000000004,1e308,2.2250738585072014e-308]',
    '{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12}',
]

ROUND_TRIPS = [ev("local a = cjson.encode(cjson.decode(ARGV[1])) return {a, cjson.encode(cjson.decode(a))}", doc)
               for doc in DOCUMENTS]


@pytest.mark.parametrize("protocol", [2, 3], ids=["RESP2", "RESP3"])
@pytest.mark.parametrize("name, sequence", [("encode", ENCODING), ("decode", DECODING),
                                            ("configuration", CONFIGURATION), ("round trips", ROUND_TRIPS)],
                         ids=["encode", "decode", "configuration", "round-trips"])
def test_cjson_library_as_redis(redis_oracle, cxl, protocol, name, sequence):
    run_sequence(redis_oracle, cxl, sequence, protocol=protocol, name=f"cjson {name}")
