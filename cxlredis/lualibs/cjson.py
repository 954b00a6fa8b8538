"""Lua CJSON 2.1.0 as Redis 7.0 bundles it (cjson.encode, cjson.decode, cjson.null and
the configuration functions), with Redis's number conversions: "%.14g" printing and
strtod reading.

Its configuration outlasts the script that set it, as in Redis, where it is C state of
the Lua VM: here it is kept per namespace (tenant), since every tenant's scripts share
one runtime, and SCRIPT FLUSH starts it over, as Redis's new VM does.

Encoding and decoding walk nested data with explicit stacks, so a depth limit of
thousands stays far from Python's recursion limit. Lua's C stack (LUAI_MAXCSTACK, 8000
slots) is modelled too: the C library fails on it before a raised depth limit."""
import math
import re
import weakref

from lupa import lua51

from .base import ScriptError, argument_error, check_int, check_string, lua_type

INT_MAX = 2 ** 31 - 1
INT_MIN = -2 ** 31
LUA_STACK_SLOTS = 8000          # LUAI_MAXCSTACK: what lua_checkstack allows a C function
VERSION = b"2.1.0"

ESCAPES = {bytes([c]): b"\\u%04x" % c for c in range(32)}
ESCAPES.update({b"\b": b"\\b", b"\t": b"\\t", b"\n": b"\\n", b"\f": b"\\f", b"\r": b"\\r",
                b'"': b'\\"', b"\\": b"\\\\", b"/": b"\\/", b"\x7f": b"\\u007f"})
NEEDS_ESCAPE = re.compile(rb'[\x00-\x1f"\\/\x7f]')

UNESCAPES = {ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b",
             ord("t"): b"\t", ord("n"): b"\n", ord("f"): b"\f", ord("r"): b"\r"}
HEX_DIGITS = b"0123456789abcdefABCDEF"
WHITESPACE = b" \t\n\r"
SINGLE_TOKENS = {ord("{"): "T_OBJ_BEGIN", ord("}"): "T_OBJ_END", ord("["): "T_ARR_BEGIN",
                 ord("]"): "T_ARR_END", ord(","): "T_COMMA", ord(":"): "T_COLON"}
NUMBER_START = b"-0123456789"
# strtod's forms: hex (with a binary exponent), inf/infinity, nan(...), decimal
HEX_NUMBER = re.compile(rb"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?")
SPECIAL_NUMBER = re.compile(rb"([+-]?)(?:(inf(?:inity)?)|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)
DECIMAL_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def quoted(text):
    """A string as JSON: quoted, with cjson's escapes."""
    return b'"' + NEEDS_ESCAPE.sub(lambda m: ESCAPES[m.group()], text) + b'"'


def c_int(number):
    """A double converted to a C int as x86-64 does it: truncated, INT_MIN out of range."""
    if math.isfinite(number) and INT_MIN <= number < INT_MAX + 1:
        return int(number)
    return INT_MIN


def wrap32(number):
    return (number + 2 ** 31) % 2 ** 32 - 2 ** 31


def strtod(data, start):
    """glibc's strtod at start: (value, end), end == start when nothing reads as a number."""
    match = HEX_NUMBER.match(data, start)
    if match:
        text = match.group()
        try:
            return float.fromhex(text.decode()), match.end()
        except OverflowError:
            return (-math.inf if text[:1] == b"-" else math.inf), match.end()
    match = SPECIAL_NUMBER.match(data, start)
    if match:
        negative = match.group(1) == b"-"
        value = math.inf if match.group(2) else math.nan
        return (-value if negative else value), match.end()
    match = DECIMAL_NUMBER.match(data, start)
    if match:
        return float(match.group()), match.end()
    return 0.0, start


class Config:
    """One cjson table's settings (json_config_t), with Redis's defaults."""

    def __init__(self):
        self.sparse_convert = 0
        self.sparse_ratio = 2
        self.sparse_safe = 10
        self.encode_max_depth = 1000
        self.decode_max_depth = 1000
        self.encode_invalid_numbers = 0        # 0 refuse, 1 print inf/nan, 2 print null
        self.decode_invalid_numbers = 1
        self.encode_keep_buffer = 1
        self.precision = 14


def padded(args, count, name):
    """json_arg_init: at most count arguments, the missing ones nil."""
    if len(args) > count:
        raise argument_error(count, name, "found too many arguments")
    return list(args) + [None] * (count - len(args))


def integer_option(args, i, name, current, low, high):
    """A setter's integer argument i: the new value, or current when it is nil."""
    if args[i] is None:
        return current
    value = check_int(args, i, name)
    if not low <= value <= high:        # the C library names argument 1 whichever it is
        raise argument_error(0, name, f"expected integer between {low} and {high}")
    return value


def enum_option(args, i, name, current, options):
    """A setter's boolean-or-option argument i: the new value, or current when it is nil."""
    value = args[i]
    if value is None:
        return current
    if type(value) is bool:
        return int(value)
    text = check_string(args, i, name)
    if text not in options:
        raise argument_error(i, name, f"invalid option '{text.decode('latin-1')}'")
    return options.index(text)


def enum_reply(setting, options):
    return bool(setting) if setting in (0, 1) else options[setting]


ON_OFF = (b"off", b"on")
INVALID_NUMBER_OPTIONS = (b"off", b"on", b"null")


class CJson:
    """The functions of one cjson table, over its Config."""

    def __init__(self, lua, null, is_null, negative_zero, scope):
        self.lua = lua
        self.null = null
        self.is_null = is_null
        self.negative_zero = negative_zero
        self.scope = scope               # None: one Config (a cjson.new table's)
        self.configs = {}                # namespace → Config

    @property
    def config(self):
        namespace = self.scope() if self.scope is not None else None
        config = self.configs.get(namespace)
        if config is None:
            config = self.configs[namespace] = Config()
        return config

    # ---- configuration ---------------------------------------------------------

    def encode_sparse_array(self, *args):
        name = "encode_sparse_array"
        args, cfg = padded(args, 3, name), self.config
        cfg.sparse_convert = enum_option(args, 0, name, cfg.sparse_convert, ON_OFF)
        cfg.sparse_ratio = integer_option(args, 1, name, cfg.sparse_ratio, 0, INT_MAX)
        cfg.sparse_safe = integer_option(args, 2, name, cfg.sparse_safe, 0, INT_MAX)
        return bool(cfg.sparse_convert), cfg.sparse_ratio, cfg.sparse_safe

    def encode_max_depth(self, *args):
        return self.integer_setting(args, "encode_max_depth", "encode_max_depth", 1, INT_MAX)

    def decode_max_depth(self, *args):
        return self.integer_setting(args, "decode_max_depth", "decode_max_depth", 1, INT_MAX)

    def encode_number_precision(self, *args):
        return self.integer_setting(args, "encode_number_precision", "precision", 1, 14)

    def encode_keep_buffer(self, *args):
        return self.option_setting(args, "encode_keep_buffer", "encode_keep_buffer", ON_OFF)

    def encode_invalid_numbers(self, *args):
        return self.option_setting(args, "encode_invalid_numbers", "encode_invalid_numbers",
                                   INVALID_NUMBER_OPTIONS)

    def decode_invalid_numbers(self, *args):
        return self.option_setting(args, "decode_invalid_numbers", "decode_invalid_numbers", ON_OFF)

    def integer_setting(self, args, name, field, low, high):
        """A setter of one integer setting: set it when given, hand it back."""
        cfg = self.config
        value = integer_option(padded(args, 1, name), 0, name, getattr(cfg, field), low, high)
        setattr(cfg, field, value)
        return value

    def option_setting(self, args, name, field, options):
        """A setter of one boolean-or-option setting: set it when given, hand it back."""
        cfg = self.config
        value = enum_option(padded(args, 1, name), 0, name, getattr(cfg, field), options)
        setattr(cfg, field, value)
        return enum_reply(value, options)

    # ---- encoding --------------------------------------------------------------

    def type_name(self, value):
        """Lua's type name of a value, as the error messages give it."""
        kind = lua_type(value)
        if kind != "table":
            return kind
        if type(value).__name__ == "_LuaCoroutineFunction":    # lupa's view of a thread not yet started
            return "thread"
        kind = lua51.lua_type(value)
        if kind is None:            # a Python function (redis.call...): a C function to Redis
            return "function"
        return kind

    def number(self, value):
        number = float(value)
        if not math.isfinite(number):
            mode = self.config.encode_invalid_numbers
            if mode == 0:
                raise ScriptError(b"Cannot serialise number: must not be NaN or Inf", positioned=True)
            if mode == 2:
                return b"null"
            if math.isnan(number):      # not "-nan", whatever its sign
                return b"nan"
        return b"%.*g" % (self.config.precision, number)

    def array_length(self, items):
        """lua_array_length: the array's length, or -1 for an object (a key not a positive
        integer, or an excessively sparse array to convert)."""
        largest, count = 0, 0
        for key in items:
            kind = type(key)
            if (kind is int or kind is float) and key >= 1 and (kind is int or math.isinf(key)
                                                                 or key.is_integer()):
                if key > largest:
                    largest = c_int(key)
                count += 1
            else:
                return -1
        cfg = self.config
        if cfg.sparse_ratio > 0 and largest > wrap32(count * cfg.sparse_ratio) and largest > cfg.sparse_safe:
            if not cfg.sparse_convert:
                raise ScriptError(b"Cannot serialise table: excessively sparse array", positioned=True)
            return -1
        return largest

    def encode(self, *args):
        if len(args) != 1:
            raise argument_error(0, "encode", "expected 1 argument")
        out = []
        # one frame per open table: its pieces still to write, last first, each (what,
        # table, key, value, separator) with what "element", "member" (whose key is checked
        # only as lua_next reaches it) or "close" (value the closing bracket); its depth;
        # and the Lua stack slots the C walk holds inside it
        stack = []
        self.append_value(args[0], out, stack, 0, 1)
        while stack:
            pieces, depth, slots = stack[-1]
            if not pieces:
                stack.pop()
                continue
            what, table, key, value, separator = pieces.pop()
            out.append(separator)
            if what == "close":
                out.append(value)
                continue
            if what == "member":
                out.append(self.key_label(key))
            if type(value) is int and value == 0 and self.negative_zero(table, key):
                value = -0.0
            self.append_value(value, out, stack, depth, slots)
        return b"".join(out)

    def append_value(self, value, out, stack, depth, slots):
        kind = type(value)
        if kind is bytes:
            out.append(quoted(value))
        elif kind is int or kind is float:
            out.append(self.number(value))
        elif kind is bool:
            out.append(b"true" if value else b"false")
        elif value is None:
            out.append(b"null")
        else:
            name = self.type_name(value)
            if name == "table":
                self.open_table(value, out, stack, depth + 1, slots)
            elif name == "userdata" and self.is_null(value):
                out.append(b"null")
            else:
                raise ScriptError(f"Cannot serialise {name}: type not supported".encode(), positioned=True)

    def key_label(self, key):
        kind = type(key)
        if kind is bytes:
            return quoted(key) + b":"
        if kind is int or kind is float:
            return b'"' + self.number(key) + b'":'
        raise ScriptError(f"Cannot serialise {self.type_name(key)}: table key must be a number or string".encode(),
                          positioned=True)

    def open_table(self, table, out, stack, depth, slots):
        if depth > self.config.encode_max_depth or slots + 3 > LUA_STACK_SLOTS:
            raise ScriptError(b"Cannot serialise, excessive nesting (%d)" % depth, positioned=True)
        items = dict(table.items())
        length = self.array_length(items)
        pieces = []
        if length > 0:
            out.append(b"[")
            for index in range(1, length + 1):
                pieces.append(("element", table, index, items.get(index), b"," if index > 1 else b""))
            pieces.append(("close", None, None, b"]", b""))
            slots += 1          # the element rawgeti pushed
        else:
            out.append(b"{")
            for position, (key, value) in enumerate(items.items()):
                pieces.append(("member", table, key, value, b"," if position else b""))
            pieces.append(("close", None, None, b"}", b""))
            slots += 2          # the key and value lua_next pushed
        pieces.reverse()
        stack.append((pieces, depth, slots))

    # ---- decoding --------------------------------------------------------------

    def decode(self, *args):
        if len(args) != 1:
            raise argument_error(0, "decode", "expected 1 argument")
        text = check_string(args, 0, "decode")
        if len(text) >= 2 and (text[0] == 0 or text[1] == 0):
            raise ScriptError(b"JSON parser does not support UTF-16 or UTF-32", positioned=True)
        return Decoder(text, self.config, self.lua, self.null).document()


PLAIN_STRING = re.compile(rb'[^"\\\x00]*')


def parse_error(expected, token):
    kind, index, value = token
    found = value if kind == "T_ERROR" else kind
    return ScriptError(f"Expected {expected} but found {found} at character {index + 1}".encode(),
                       positioned=True)


class Decoder:
    """One cjson.decode: a token reader over the text (read as the C string it is, so up
    to its first NUL) and a parser that builds the Lua tables as the C library does."""

    def __init__(self, text, config, lua, null):
        end = text.find(b"\0")
        self.data = (text if end < 0 else text[:end]) + b"\0" * 16     # reads past the end see NULs
        self.pos = 0
        self.config = config
        self.lua = lua
        self.null = null

    # ---- tokens: (type name, index, value or error text) ----

    def next_token(self):
        data, pos = self.data, self.pos
        while data[pos] in WHITESPACE:
            pos += 1
        self.pos = pos
        ch = data[pos]
        if ch == 0:
            return ("T_END", pos, None)
        single = SINGLE_TOKENS.get(ch)
        if single is not None:
            self.pos = pos + 1
            return (single, pos, None)
        if ch == 34:                            # '"'
            return self.string_token(pos)
        invalid_allowed = self.config.decode_invalid_numbers
        if ch in NUMBER_START:
            if not invalid_allowed and self.invalid_number(pos):
                return ("T_ERROR", pos, "invalid number")
            return self.number_token(pos)
        if ch in b"ftnINi+":
            for word, kind, value in ((b"true", "T_BOOLEAN", True), (b"false", "T_BOOLEAN", False),
                                      (b"null", "T_NULL", self.null)):
                if data.startswith(word, pos):
                    self.pos = pos + len(word)
                    return (kind, pos, value)
            if invalid_allowed and self.invalid_number(pos):
                return self.number_token(pos)
        return ("T_ERROR", pos, "invalid token")

    def invalid_number(self, pos):
        """json_is_invalid_number: a number strict JSON refuses (+, hex, leading zeros,
        inf, nan)."""
        data = self.data
        if data[pos] == 43:                     # '+'
            return True
        if data[pos] == 45:                     # '-'
            pos += 1
        if data[pos] == 48:                     # '0'
            following = data[pos + 1]
            return following | 0x20 == 120 or 48 <= following <= 57
        if data[pos] <= 57:
            return False
        return data[pos:pos + 3].lower() in (b"inf", b"nan")

    def number_token(self, pos):
        value, end = strtod(self.data, pos)
        if end == pos:
            return ("T_ERROR", pos, "invalid number")
        self.pos = end
        return ("T_NUMBER", pos, value)

    def string_token(self, start):
        data = self.data
        pieces = []
        pos = start + 1
        while True:
            plain = PLAIN_STRING.match(data, pos)
            pieces.append(plain.group())
            pos = plain.end()
            ch = data[pos]
            if ch == 34:
                break
            if ch == 0:
                self.pos = pos
                return ("T_ERROR", pos, "unexpected end of string")
            escaped = data[pos + 1]
            if escaped == 117:                  # 'u'
                decoded, length = unicode_escape(data, pos)
                if decoded is None:
                    self.pos = pos
                    return ("T_ERROR", pos, "invalid unicode escape code")
                pieces.append(decoded)
                pos += length
                continue
            replacement = UNESCAPES.get(escaped)
            if replacement is None:
                self.pos = pos
                return ("T_ERROR", pos, "invalid escape code")
            pieces.append(replacement)
            pos += 2
        self.pos = pos + 1
        return ("T_STRING", start, b"".join(pieces))

    # ---- values ----

    def document(self):
        value = self.value(self.next_token())
        token = self.next_token()
        if token[0] != "T_END":
            raise parse_error("the end", token)
        return value

    def member_key(self, token):
        """An object member's key token and its colon; the key."""
        if token[0] != "T_STRING":
            raise parse_error("object key string", token)
        colon = self.next_token()
        if colon[0] != "T_COLON":
            raise parse_error("colon", colon)
        return token[2]

    def value(self, token):
        """The value starting at token, containers parsed with a stack of open ones:
        [is object, items, current key]. slots counts what the C parser holds on the Lua
        stack (the text, each open array's table, each open object's table and key)."""
        open_containers = []
        slots = 1
        table_from = self.lua.table_from
        while True:
            kind = token[0]
            if kind == "T_OBJ_BEGIN" or kind == "T_ARR_BEGIN":
                is_object = kind == "T_OBJ_BEGIN"
                depth = len(open_containers) + 1
                if depth > self.config.decode_max_depth or slots + (3 if is_object else 2) > LUA_STACK_SLOTS:
                    raise ScriptError(b"Found too many nested data structures (%d) at character %d"
                                      % (depth, token[1] + 1), positioned=True)
                token = self.next_token()
                if token[0] == ("T_OBJ_END" if is_object else "T_ARR_END"):
                    value = table_from()
                elif is_object:
                    open_containers.append([True, {}, self.member_key(token)])
                    slots += 2
                    token = self.next_token()
                    continue
                else:
                    open_containers.append([False, [], None])
                    slots += 1
                    continue
            elif kind in ("T_STRING", "T_NUMBER", "T_BOOLEAN", "T_NULL"):
                value = token[2]
            else:
                raise parse_error("value", token)
            # the value is complete: store it, closing every container it completes
            while True:
                if not open_containers:
                    return value
                container = open_containers[-1]
                token = self.next_token()
                if container[0]:
                    container[1][container[2]] = value
                    if token[0] == "T_OBJ_END":
                        open_containers.pop()
                        slots -= 2
                        value = table_from(container[1])
                        continue
                    if token[0] != "T_COMMA":
                        raise parse_error("comma or object end", token)
                    container[2] = self.member_key(self.next_token())
                else:
                    container[1].append(value)
                    if token[0] == "T_ARR_END":
                        open_containers.pop()
                        slots -= 1
                        value = table_from(container[1])
                        continue
                    if token[0] != "T_COMMA":
                        raise parse_error("comma or array end", token)
                token = self.next_token()
                break


def hex4(digits):
    if len(digits) != 4 or any(d not in HEX_DIGITS for d in digits):
        return -1
    return int(digits, 16)


def unicode_escape(data, pos):
    """The \\uXXXX escape (or surrogate pair) at pos as UTF-8, and its length; None when
    it is invalid."""
    code = hex4(data[pos + 2:pos + 6])
    if code < 0:
        return None, 0
    length = 6
    if code & 0xF800 == 0xD800:
        if code & 0x400 or data[pos + 6:pos + 8] != b"\\u":
            return None, 0
        low = hex4(data[pos + 8:pos + 12])
        if low < 0 or low & 0xFC00 != 0xDC00:
            return None, 0
        code = (((code & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000
        length = 12
    return chr(code).encode("utf-8"), length


def functions(lua, null, scope, fresh=False):
    """A cjson table's contents (luaopen_cjson): settings per namespace of scope(), or, for
    cjson.new (fresh), settings of the table's own."""
    # Lua's own comparisons, for what lupa hands over without identity or sign: a userdata
    # is cjson.null only when rawequal says so, and a table's 0 may be a -0.
    is_null = lua.eval("function(null) return function(v) return rawequal(v, null) end end")(null)
    negative_zero = lua.eval("function(t, k) local v = rawget(t, k) return v == 0 and 1 / v < 0 end")
    cjson = CJson(lua, null, is_null, negative_zero, None if fresh else scope)
    if not fresh:
        SCOPED.add(cjson)
    library = {
        name: getattr(cjson, name)
        for name in ("encode", "decode", "encode_sparse_array", "encode_max_depth", "decode_max_depth",
                     "encode_number_precision", "encode_keep_buffer", "encode_invalid_numbers",
                     "decode_invalid_numbers")}
    library.update({"null": null, "_NAME": b"cjson", "_VERSION": VERSION,
                    "new": lambda *args: lua.table_from({name.encode(): value for name, value
                                                         in functions(lua, null, scope, fresh=True).items()})})
    return library


# The libraries whose settings are per namespace, for forget.
SCOPED = weakref.WeakSet()


def forget(namespace):
    for cjson in SCOPED:
        cjson.configs.pop(namespace, None)
