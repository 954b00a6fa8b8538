"""What COMMAND DOCS tells about each command beyond its summary: arguments,
history and deprecation, keyed by the command's full name ("set", "client|kill").

The facts are Redis 7.0's (redis-cli builds `help` and its input hints from
them), written in a small vocabulary that mirrors Redis's argument model:

    key("key", 0)                  a key, documented by key spec 0 of the command
    string / integer / double / unix_time / pattern ("name")   a plain value
    token("NX")                    a keyword standing alone (Redis's "pure-token"), named
                                   after it unless name= says otherwise
    oneof("name", *choices)        exactly one of the choices
    block("name", *parts)          the parts, in sequence

Every constructor takes `token="EX"` (the keyword before the value),
`since=`, `deprecated_since=` and the flags `optional`, `multiple` and
`multiple_token`. A command's entry is `doc(*arguments, history=...,
doc_flags=..., deprecated_since=..., replaced_by=...)`; history lines read
"version: what changed". A command without an entry has no arguments and no
history.
"""
from dataclasses import dataclass

ARG_FLAGS = ("optional", "multiple", "multiple_token")  # in the order Redis lists them


@dataclass(frozen=True)
class Arg:
    name: str
    type: str
    key_spec_index: int = -1     # only for type "key": which of the command's key specs covers it
    token: str = None            # None: no token ("" is one: MIGRATE's empty key)
    since: str = ""
    deprecated_since: str = ""
    flags: tuple = ()
    arguments: tuple = ()        # only for "oneof" and "block"


@dataclass(frozen=True)
class CommandDocs:
    doc_flags: tuple = ()
    deprecated_since: str = ""
    replaced_by: str = ""
    history: tuple = ()          # (version, what changed) pairs, oldest first
    arguments: tuple = ()


NO_DOCS = CommandDocs()


def _arg(name, type_, arguments=(), key_spec_index=-1, token=None, since="", deprecated_since="",
         **flags):
    unknown = set(flags) - set(ARG_FLAGS)
    if unknown:
        raise TypeError(f"argument {name!r}: unknown flags {sorted(unknown)}")
    return Arg(name, type_, key_spec_index, token, since, deprecated_since,
               tuple(f for f in ARG_FLAGS if flags.get(f)), tuple(arguments))


def key(name, key_spec_index, **opts):
    return _arg(name, "key", key_spec_index=key_spec_index, **opts)


def string(name, **opts):
    return _arg(name, "string", **opts)


def integer(name, **opts):
    return _arg(name, "integer", **opts)


def double(name, **opts):
    return _arg(name, "double", **opts)


def unix_time(name, **opts):
    return _arg(name, "unix-time", **opts)


def pattern(name, **opts):
    return _arg(name, "pattern", **opts)


def token(word, name="", **opts):
    return _arg(name or word.lower(), "pure-token", token=word, **opts)


def oneof(name, *choices, **opts):
    return _arg(name, "oneof", choices, **opts)


def block(name, *parts, **opts):
    return _arg(name, "block", parts, **opts)


def doc(*arguments, history=(), doc_flags="", deprecated_since="", replaced_by=""):
    flags = doc_flags.split()
    if deprecated_since:
        flags.append("deprecated")
    pairs = []
    for line in history:
        version, _, change = line.partition(": ")
        pairs.append((version, change))
    return CommandDocs(tuple(flags), deprecated_since, replaced_by, tuple(pairs), arguments)


# Shapes several commands share.
_KEY = key("key", 0)
_EXPIRE_CONDITION = oneof("condition", token("NX"), token("XX"), token("GT"), token("LT"),
                          since="7.0.0", optional=True)
_EXPIRE_HISTORY = ("7.0.0: Added options: `NX`, `XX`, `GT` and `LT`.",)
_FIELD_VALUES = block("field_value", string("field"), string("value"), multiple=True)
_KEY_VALUES = block("key_value", key("key", 0), string("value"), multiple=True)
_FLUSH_MODE = oneof("async", token("ASYNC", since="4.0.0"), token("SYNC", since="6.2.0"),
                    optional=True)
_FLUSH_HISTORY = ("4.0.0: Added the `ASYNC` flushing mode modifier.",
                  "6.2.0: Added the `SYNC` flushing mode modifier.")
_SCAN_TAIL = (pattern("pattern", token="MATCH", optional=True),
              integer("count", token="COUNT", optional=True))
# Lists: elements pushed, LMOVE's and LMPOP's arguments, the blocking commands' timeout.
_ELEMENTS = string("element", multiple=True)
_LIST_SIDE = (token("LEFT"), token("RIGHT"))
_LIST_MOVE = (key("source", 0), key("destination", 1), oneof("wherefrom", *_LIST_SIDE),
              oneof("whereto", *_LIST_SIDE))
_LIST_MPOP = (integer("numkeys"), key("key", 0, multiple=True), oneof("where", *_LIST_SIDE),
              integer("count", token="COUNT", optional=True))
_BLOCKING_HISTORY = ("6.0.0: `timeout` is interpreted as a double instead of an integer.",)
# Sorted sets: range options, the set algebra's options, ZMPOP's and BZMPOP's arguments.
_WITHSCORES = token("WITHSCORES", optional=True)
_ZSET_LIMIT = block("offset_count", integer("offset"), integer("count"), token="LIMIT", optional=True)
_ZSET_SORTBY = (token("BYSCORE"), token("BYLEX"))
_ZSET_AGGREGATION = (integer("weight", token="WEIGHTS", optional=True, multiple=True),
                     oneof("aggregate", token("SUM"), token("MIN"), token("MAX"), token="AGGREGATE",
                           optional=True))
_ZSET_INPUTS = (integer("numkeys"), key("key", 0, multiple=True))
_ZSET_STORE_INPUTS = (key("destination", 0), integer("numkeys"), key("key", 1, multiple=True))
_ZSET_MPOP = (integer("numkeys"), key("key", 0, multiple=True), oneof("where", token("MIN"), token("MAX")),
              integer("count", token="COUNT", optional=True))
# Geo: units, and the options the searches share (GEORADIUS's ANY is documented since 6.2).
_GEO_UNITS = (token("M"), token("KM"), token("FT"), token("MI"))
_GEO_UNIT = oneof("unit", *_GEO_UNITS)
_GEO_WITH = (token("WITHCOORD", optional=True), token("WITHDIST", optional=True),
             token("WITHHASH", optional=True))
_GEO_ORDER = oneof("order", token("ASC"), token("DESC"), optional=True)
_GEO_SEARCH = (oneof("from", string("member", token="FROMMEMBER"),
                     block("longitude_latitude", double("longitude"), double("latitude"), token="FROMLONLAT")),
               oneof("by", block("circle", double("radius", token="BYRADIUS"), _GEO_UNIT),
                     block("box", double("width", token="BYBOX"), double("height"), _GEO_UNIT)),
               _GEO_ORDER)
_GEO_UNITS_HISTORY = "7.0.0: Added support for uppercase unit names."


def _geo_count(any_since=""):
    return block("count", integer("count", token="COUNT"), token("ANY", since=any_since, optional=True),
                 optional=True)


def _georadius(*center, any_since="", store=True):
    store_keys = (key("key", 1, token="STORE", optional=True),
                  key("key", 2, token="STOREDIST", optional=True)) if store else ()
    return (_KEY, *center, double("radius"), _GEO_UNIT, *_GEO_WITH, _geo_count(any_since), _GEO_ORDER,
            *store_keys)


_GEORADIUS = (double("longitude"), double("latitude"))
_GEORADIUSBYMEMBER = (string("member"),)
# BITCOUNT's and BITPOS's unit of start and end (7.0), and BITFIELD's GET.
_INDEX_UNIT = oneof("index_unit", token("BYTE"), token("BIT"), since="7.0.0", optional=True)
_INDEX_UNIT_HISTORY = ("7.0.0: Added the `BYTE|BIT` option.",)
_BITFIELD_GET = block("encoding_offset", string("encoding"), integer("offset"), token="GET")
_RESTORE_ARGUMENTS = (_KEY, integer("ttl"), string("serialized-value"),
                      token("REPLACE", since="3.0.0", optional=True),
                      token("ABSTTL", since="5.0.0", optional=True),
                      integer("seconds", token="IDLETIME", since="5.0.0", optional=True),
                      integer("frequency", token="FREQ", since="5.0.0", optional=True))
_RESTORE_HISTORY = ("3.0.0: Added the `REPLACE` modifier.",
                    "5.0.0: Added the `ABSTTL` modifier.",
                    "5.0.0: Added the `IDLETIME` and `FREQ` options.")
# SORT's and SORT_RO's, but STORE; the patterns name keys of its unknown key spec.
_SORT_ARGUMENTS = (_KEY, pattern("pattern", key_spec_index=1, token="BY", optional=True),
                   block("offset_count", integer("offset"), integer("count"), token="LIMIT",
                         optional=True),
                   pattern("pattern", key_spec_index=1, token="GET", optional=True, multiple=True,
                           multiple_token=True),
                   oneof("order", token("ASC"), token("DESC"), optional=True),
                   token("ALPHA", name="sorting", optional=True))

DOCS = {
    # --- connection -------------------------------------------------------
    "ping": doc(string("message", optional=True)),
    "echo": doc(string("message")),
    "hello": doc(
        block("arguments",
              integer("protover"),
              block("username_password", string("username"), string("password"),
                    token="AUTH", optional=True),
              string("clientname", token="SETNAME", optional=True),
              optional=True),
        history=("6.2.0: `protover` made optional; when called without arguments the command "
                 "reports the current connection's context.",)),
    "select": doc(integer("index")),
    "auth": doc(string("username", since="6.0.0", optional=True), string("password"),
                history=("6.0.0: Added ACL style (username and password).",)),
    "acl|cat": doc(string("categoryname", optional=True)),
    "acl|deluser": doc(string("username", multiple=True)),
    "acl|dryrun": doc(string("username"), string("command"),
                      string("arg", optional=True, multiple=True)),
    "acl|genpass": doc(integer("bits", optional=True)),
    "acl|getuser": doc(
        string("username"),
        history=("6.2.0: Added Pub/Sub channel patterns.",
                 "7.0.0: Added selectors and changed the format of key and channel patterns from "
                 "a list to their rule representation.")),
    "acl|log": doc(oneof("operation", integer("count"), token("RESET"), optional=True)),
    "acl|setuser": doc(
        string("username"), string("rule", optional=True, multiple=True),
        history=("6.2.0: Added Pub/Sub channel patterns.",
                 "7.0.0: Added selectors and key based permissions.")),
    "client|setname": doc(string("connection-name")),
    "client|list": doc(
        oneof("normal_master_replica_pubsub",
              token("NORMAL"), token("MASTER"), token("REPLICA"), token("PUBSUB"),
              token="TYPE", since="5.0.0", optional=True),
        block("id", integer("client-id", multiple=True), token="ID", since="6.2.0", optional=True),
        history=("2.8.12: Added unique client `id` field.",
                 "5.0.0: Added optional `TYPE` filter.",
                 "6.0.0: Added `user` field.",
                 "6.2.0: Added `argv-mem`, `tot-mem`, `laddr` and `redir` fields and the optional "
                 "`ID` filter.",
                 "7.0.0: Added `resp`, `multi-mem`, `rbs` and `rbp` fields.",
                 "7.0.3: Added `ssub` field.")),
    "client|kill": doc(
        oneof("filter",
              string("ip:port", deprecated_since="2.8.12"),
              oneof("new-format",
                    integer("client-id", token="ID", since="2.8.12", optional=True),
                    oneof("normal_master_slave_pubsub",
                          token("NORMAL"), token("MASTER", since="3.2.0"), token("SLAVE"),
                          token("REPLICA", since="5.0.0"), token("PUBSUB"),
                          token="TYPE", since="2.8.12", optional=True),
                    string("username", token="USER", optional=True),
                    string("ip:port", token="ADDR", optional=True),
                    string("ip:port", token="LADDR", since="6.2.0", optional=True),
                    string("yes/no", token="SKIPME", optional=True),
                    multiple=True)),
        history=("2.8.12: Added new filter format.",
                 "2.8.12: `ID` option.",
                 "3.2.0: Added `master` type in for `TYPE` option.",
                 "5.0.0: Replaced `slave` `TYPE` with `replica`. `slave` still supported for "
                 "backward compatibility.",
                 "6.2.0: `LADDR` option.")),
    # Newer than Redis 7.0: SETINFO as Redis 7.2 documents it (cxlredis takes
    # the two attributes 7.2 had)...
    "client|setinfo": doc(
        oneof("attr", string("libname", token="lib-name"), string("libver", token="lib-ver"))),
    # ...and MAINT_NOTIFICATIONS as clients send it (Redis 8.2); cxlredis
    # accepts and ignores the endpoint type, since it never moves slots.
    "client|maint_notifications": doc(
        oneof("enabled", token("ON"), token("OFF")),
        string("endpoint-type", token="moving-endpoint-type", optional=True)),
    "client|no-evict": doc(oneof("enabled", token("ON"), token("OFF"))),
    "client|unblock": doc(
        integer("client-id"),
        oneof("timeout_error", token("TIMEOUT"), token("ERROR"), optional=True)),
    "client|pause": doc(
        integer("timeout"),
        oneof("mode", token("WRITE"), token("ALL"), since="6.2.0", optional=True),
        history=("6.2.0: `CLIENT PAUSE WRITE` mode added along with the `mode` option.",)),
    "client|tracking": doc(
        oneof("status", token("ON"), token("OFF")),
        integer("client-id", token="REDIRECT", optional=True),
        string("prefix", token="PREFIX", optional=True, multiple=True, multiple_token=True),
        token("BCAST", optional=True), token("OPTIN", optional=True), token("OPTOUT", optional=True),
        token("NOLOOP", optional=True)),
    "client|caching": doc(oneof("mode", token("YES"), token("NO"))),
    "subscribe": doc(string("channel", multiple=True)),
    "unsubscribe": doc(string("channel", optional=True, multiple=True)),
    "psubscribe": doc(block("pattern", pattern("pattern"), multiple=True)),
    "punsubscribe": doc(pattern("pattern", optional=True, multiple=True)),
    "publish": doc(string("channel"), string("message")),
    "ssubscribe": doc(string("shardchannel", multiple=True)),
    "sunsubscribe": doc(string("shardchannel", optional=True, multiple=True)),
    "spublish": doc(string("shardchannel"), string("message")),
    "pubsub|channels": doc(pattern("pattern", optional=True)),
    "pubsub|numsub": doc(string("channel", optional=True, multiple=True)),
    "pubsub|shardchannels": doc(pattern("pattern", optional=True)),
    "pubsub|shardnumsub": doc(string("shardchannel", optional=True, multiple=True)),
    "client|reply": doc(oneof("on_off_skip", token("ON"), token("OFF"), token("SKIP"))),

    # --- server -----------------------------------------------------------
    "slowlog|get": doc(integer("count", optional=True),
                       history=("4.0.0: Added client IP address, port and name to the reply.",)),
    "latency|history": doc(string("event")),
    "latency|graph": doc(string("event")),
    "latency|reset": doc(string("event", optional=True, multiple=True)),
    "latency|histogram": doc(string("command", optional=True, multiple=True)),
    "info": doc(string("section", optional=True, multiple=True),
                history=("7.0.0: Added support for taking multiple section arguments.",)),
    "config|get": doc(
        block("parameter", string("parameter"), multiple=True),
        history=("7.0.0: Added the ability to pass multiple pattern parameters in one call",)),
    "config|set": doc(
        block("parameter_value", string("parameter"), string("value"), multiple=True),
        history=("7.0.0: Added the ability to set multiple parameters in one call.",)),
    "command|list": doc(
        oneof("filterby",
              string("module-name", token="MODULE"),
              string("category", token="ACLCAT"),
              pattern("pattern", token="PATTERN"),
              token="FILTERBY", optional=True)),
    "command|info": doc(
        string("command-name", optional=True, multiple=True),
        history=("7.0.0: Allowed to be called with no argument to get info on all commands.",)),
    "command|docs": doc(string("command-name", optional=True, multiple=True)),
    "shutdown": doc(
        oneof("nosave_save", token("NOSAVE"), token("SAVE"), optional=True),
        token("NOW", since="7.0.0", optional=True),
        token("FORCE", since="7.0.0", optional=True),
        token("ABORT", since="7.0.0", optional=True),
        history=("7.0.0: Added the `NOW`, `FORCE` and `ABORT` modifiers.",)),
    "eval": doc(string("script"), integer("numkeys"), key("key", 0, optional=True, multiple=True),
                 string("arg", optional=True, multiple=True)),
    "evalsha": doc(string("sha1"), integer("numkeys"), key("key", 0, optional=True, multiple=True),
                    string("arg", optional=True, multiple=True)),
    "eval_ro": doc(string("script"), integer("numkeys"), key("key", 0, optional=True, multiple=True),
                    string("arg", optional=True, multiple=True)),
    "evalsha_ro": doc(string("sha1"), integer("numkeys"), key("key", 0, optional=True, multiple=True),
                       string("arg", optional=True, multiple=True)),
    "script|load": doc(string("script")),
    "script|debug": doc(oneof("mode", token("YES"), token("SYNC"), token("NO"))),
    "script|exists": doc(string("sha1", multiple=True)),
    "script|flush": doc(oneof("async", token("ASYNC"), token("SYNC"), optional=True, since="6.2.0"),
                        history=("6.2.0: Added the `ASYNC` and `SYNC` flushing mode modifiers.",)),
    "function|flush": doc(oneof("async", token("ASYNC"), token("SYNC"), optional=True)),
    "fcall": doc(string("function"), integer("numkeys"), key("key", 0, optional=True, multiple=True),
                 string("arg", optional=True, multiple=True)),
    "fcall_ro": doc(string("function"), integer("numkeys"), key("key", 0, optional=True, multiple=True),
                    string("arg", optional=True, multiple=True)),
    "function|load": doc(token("REPLACE", optional=True), string("function-code")),
    "function|list": doc(string("library-name-pattern", token="LIBRARYNAME", optional=True),
                         token("WITHCODE", optional=True)),
    "function|delete": doc(string("library-name")),
    "function|restore": doc(string("serialized-value"),
                            oneof("policy", token("FLUSH"), token("APPEND"), token("REPLACE"), optional=True)),
    # Redis documents DEBUG only as a system command, without arguments; its
    # subcommands (cxlredis's ARENA-CHECK among them) are listed by DEBUG HELP.
    "debug": doc(doc_flags="syscmd"),
    "flushdb": doc(_FLUSH_MODE, history=_FLUSH_HISTORY),
    "flushall": doc(_FLUSH_MODE, history=_FLUSH_HISTORY),
    "swapdb": doc(integer("index1"), integer("index2")),
    "memory|usage": doc(_KEY, integer("count", token="SAMPLES", optional=True)),
    "bgsave": doc(token("SCHEDULE", since="3.2.2", optional=True),
                  history=("3.2.2: Added the `SCHEDULE` option.",)),
    "wait": doc(integer("numreplicas"), integer("timeout")),
    "waitaof": doc(integer("numlocal"), integer("numreplicas"), integer("timeout")),
    "lolwut": doc(integer("version", token="VERSION", optional=True)),

    # --- transactions -----------------------------------------------------
    "watch": doc(key("key", 0, multiple=True)),

    # --- lists ------------------------------------------------------------
    "lpush": doc(_KEY, _ELEMENTS, history=("2.4.0: Accepts multiple `element` arguments.",)),
    "rpush": doc(_KEY, _ELEMENTS, history=("2.4.0: Accepts multiple `element` arguments.",)),
    "lpushx": doc(_KEY, _ELEMENTS, history=("4.0.0: Accepts multiple `element` arguments.",)),
    "rpushx": doc(_KEY, _ELEMENTS, history=("4.0.0: Accepts multiple `element` arguments.",)),
    "lpop": doc(_KEY, integer("count", since="6.2.0", optional=True),
                history=("6.2.0: Added the `count` argument.",)),
    "rpop": doc(_KEY, integer("count", since="6.2.0", optional=True),
                history=("6.2.0: Added the `count` argument.",)),
    "llen": doc(_KEY),
    "lrange": doc(_KEY, integer("start"), integer("stop")),
    "lindex": doc(_KEY, integer("index")),
    "lset": doc(_KEY, integer("index"), string("element")),
    "linsert": doc(_KEY, oneof("where", token("BEFORE"), token("AFTER")), string("pivot"),
                   string("element")),
    "lrem": doc(_KEY, integer("count"), string("element")),
    "ltrim": doc(_KEY, integer("start"), integer("stop")),
    "lpos": doc(_KEY, string("element"), integer("rank", token="RANK", optional=True),
                integer("num-matches", token="COUNT", optional=True),
                integer("len", token="MAXLEN", optional=True)),
    "lmove": doc(*_LIST_MOVE),
    "rpoplpush": doc(key("source", 0), key("destination", 1), deprecated_since="6.2.0",
                     replaced_by="`LMOVE` with the `RIGHT` and `LEFT` arguments"),
    "lmpop": doc(*_LIST_MPOP),
    "blpop": doc(key("key", 0, multiple=True), double("timeout"), history=_BLOCKING_HISTORY),
    "brpop": doc(key("key", 0, multiple=True), double("timeout"), history=_BLOCKING_HISTORY),
    "blmove": doc(*_LIST_MOVE, double("timeout")),
    "brpoplpush": doc(key("source", 0), key("destination", 1), double("timeout"),
                      history=_BLOCKING_HISTORY, deprecated_since="6.2.0",
                      replaced_by="`BLMOVE` with the `RIGHT` and `LEFT` arguments"),
    "blmpop": doc(double("timeout"), *_LIST_MPOP),

    # --- hashes -----------------------------------------------------------
    "hset": doc(_KEY, _FIELD_VALUES,
                history=("4.0.0: Accepts multiple `field` and `value` arguments.",)),
    "hmset": doc(_KEY, _FIELD_VALUES, deprecated_since="4.0.0",
                 replaced_by="`HSET` with multiple field-value pairs"),
    "hsetnx": doc(_KEY, string("field"), string("value")),
    "hget": doc(_KEY, string("field")),
    "hmget": doc(_KEY, string("field", multiple=True)),
    "hgetall": doc(_KEY),
    "hdel": doc(_KEY, string("field", multiple=True),
                history=("2.4.0: Accepts multiple `field` arguments.",)),
    "hexists": doc(_KEY, string("field")),
    "hlen": doc(_KEY),
    "hkeys": doc(_KEY),
    "hvals": doc(_KEY),
    "hincrby": doc(_KEY, string("field"), integer("increment")),
    "hincrbyfloat": doc(_KEY, string("field"), double("increment")),
    "hstrlen": doc(_KEY, string("field")),
    "hscan": doc(_KEY, integer("cursor"), *_SCAN_TAIL),
    "hrandfield": doc(_KEY, block("options", integer("count"),
                                  token("WITHVALUES", optional=True), optional=True)),

    # --- sets -------------------------------------------------------------
    "sadd": doc(_KEY, string("member", multiple=True),
                history=("2.4.0: Accepts multiple `member` arguments.",)),
    "srem": doc(_KEY, string("member", multiple=True),
                history=("2.4.0: Accepts multiple `member` arguments.",)),
    "smembers": doc(_KEY),
    "sismember": doc(_KEY, string("member")),
    "smismember": doc(_KEY, string("member", multiple=True)),
    "scard": doc(_KEY),
    "spop": doc(_KEY, integer("count", since="3.2.0", optional=True),
                history=("3.2.0: Added the `count` argument.",)),
    "srandmember": doc(_KEY, integer("count", since="2.6.0", optional=True),
                       history=("2.6.0: Added the optional `count` argument.",)),
    "smove": doc(key("source", 0), key("destination", 1), string("member")),
    "sinter": doc(key("key", 0, multiple=True)),
    "sintercard": doc(integer("numkeys"), key("key", 0, multiple=True),
                      integer("limit", token="LIMIT", optional=True)),
    "sinterstore": doc(key("destination", 0), key("key", 1, multiple=True)),
    "sunion": doc(key("key", 0, multiple=True)),
    "sunionstore": doc(key("destination", 0), key("key", 1, multiple=True)),
    "sdiff": doc(key("key", 0, multiple=True)),
    "sdiffstore": doc(key("destination", 0), key("key", 1, multiple=True)),
    "sscan": doc(_KEY, integer("cursor"), *_SCAN_TAIL),

    # --- sorted sets ------------------------------------------------------
    "zadd": doc(_KEY, oneof("condition", token("NX"), token("XX"), since="3.0.2", optional=True),
                oneof("comparison", token("GT"), token("LT"), since="6.2.0", optional=True),
                token("CH", name="change", since="3.0.2", optional=True),
                token("INCR", name="increment", since="3.0.2", optional=True),
                block("score_member", double("score"), string("member"), multiple=True),
                history=("2.4.0: Accepts multiple elements.",
                         "3.0.2: Added the `XX`, `NX`, `CH` and `INCR` options.",
                         "6.2.0: Added the `GT` and `LT` options.")),
    "zincrby": doc(_KEY, integer("increment"), string("member")),
    "zrem": doc(_KEY, string("member", multiple=True), history=("2.4.0: Accepts multiple elements.",)),
    "zcard": doc(_KEY),
    "zcount": doc(_KEY, double("min"), double("max")),
    "zlexcount": doc(_KEY, string("min"), string("max")),
    "zscore": doc(_KEY, string("member")),
    "zmscore": doc(_KEY, string("member", multiple=True)),
    "zrank": doc(_KEY, string("member")),
    "zrevrank": doc(_KEY, string("member")),
    "zrange": doc(_KEY, string("start"), string("stop"),
                  oneof("sortby", *_ZSET_SORTBY, since="6.2.0", optional=True),
                  token("REV", since="6.2.0", optional=True),
                  block("offset_count", integer("offset"), integer("count"), token="LIMIT", since="6.2.0",
                        optional=True),
                  _WITHSCORES,
                  history=("6.2.0: Added the `REV`, `BYSCORE`, `BYLEX` and `LIMIT` options.",)),
    "zrangestore": doc(key("dst", 0), key("src", 1), string("min"), string("max"),
                       oneof("sortby", *_ZSET_SORTBY, optional=True), token("REV", optional=True),
                       _ZSET_LIMIT),
    "zrangebyscore": doc(_KEY, double("min"), double("max"),
                         token("WITHSCORES", since="2.0.0", optional=True), _ZSET_LIMIT,
                         history=("2.0.0: Added the `WITHSCORES` modifier.",),
                         deprecated_since="6.2.0", replaced_by="`ZRANGE` with the `BYSCORE` argument"),
    "zrevrangebyscore": doc(_KEY, double("max"), double("min"), _WITHSCORES, _ZSET_LIMIT,
                            history=("2.1.6: `min` and `max` can be exclusive.",),
                            deprecated_since="6.2.0",
                            replaced_by="`ZRANGE` with the `REV` and `BYSCORE` arguments"),
    "zrangebylex": doc(_KEY, string("min"), string("max"), _ZSET_LIMIT, deprecated_since="6.2.0",
                       replaced_by="`ZRANGE` with the `BYLEX` argument"),
    "zrevrangebylex": doc(_KEY, string("max"), string("min"), _ZSET_LIMIT, deprecated_since="6.2.0",
                          replaced_by="`ZRANGE` with the `REV` and `BYLEX` arguments"),
    "zrevrange": doc(_KEY, integer("start"), integer("stop"), _WITHSCORES, deprecated_since="6.2.0",
                     replaced_by="`ZRANGE` with the `REV` argument"),
    "zremrangebyrank": doc(_KEY, integer("start"), integer("stop")),
    "zremrangebyscore": doc(_KEY, double("min"), double("max")),
    "zremrangebylex": doc(_KEY, string("min"), string("max")),
    "zpopmin": doc(_KEY, integer("count", optional=True)),
    "zpopmax": doc(_KEY, integer("count", optional=True)),
    "zmpop": doc(*_ZSET_MPOP),
    "bzpopmin": doc(key("key", 0, multiple=True), double("timeout"), history=_BLOCKING_HISTORY),
    "bzpopmax": doc(key("key", 0, multiple=True), double("timeout"), history=_BLOCKING_HISTORY),
    "bzmpop": doc(double("timeout"), *_ZSET_MPOP),
    "zrandmember": doc(_KEY, block("options", integer("count"), _WITHSCORES, optional=True)),
    "zunion": doc(*_ZSET_INPUTS, *_ZSET_AGGREGATION, _WITHSCORES),
    "zinter": doc(*_ZSET_INPUTS, *_ZSET_AGGREGATION, _WITHSCORES),
    "zdiff": doc(*_ZSET_INPUTS, _WITHSCORES),
    "zunionstore": doc(*_ZSET_STORE_INPUTS, *_ZSET_AGGREGATION),
    "zinterstore": doc(*_ZSET_STORE_INPUTS, *_ZSET_AGGREGATION),
    "zdiffstore": doc(*_ZSET_STORE_INPUTS),
    "zintercard": doc(*_ZSET_INPUTS, integer("limit", token="LIMIT", optional=True)),
    "zscan": doc(_KEY, integer("cursor"), *_SCAN_TAIL),

    # --- geo --------------------------------------------------------------
    "geoadd": doc(_KEY, oneof("condition", token("NX"), token("XX"), since="6.2.0", optional=True),
                  token("CH", name="change", since="6.2.0", optional=True),
                  block("longitude_latitude_member", double("longitude"), double("latitude"),
                        string("member"), multiple=True),
                  history=("6.2.0: Added the `CH`, `NX` and `XX` options.",)),
    "geodist": doc(_KEY, string("member1"), string("member2"),
                   oneof("unit", *_GEO_UNITS, optional=True)),
    "geohash": doc(_KEY, string("member", multiple=True)),
    "geopos": doc(_KEY, string("member", multiple=True)),
    "geosearch": doc(_KEY, *_GEO_SEARCH, _geo_count(), *_GEO_WITH, history=(_GEO_UNITS_HISTORY,)),
    "geosearchstore": doc(key("destination", 0), key("source", 1), *_GEO_SEARCH, _geo_count(),
                          token("STOREDIST", optional=True), history=(_GEO_UNITS_HISTORY,)),
    "georadius": doc(*_georadius(*_GEORADIUS, any_since="6.2.0"),
                     history=("6.2.0: Added the `ANY` option for `COUNT`.", _GEO_UNITS_HISTORY),
                     deprecated_since="6.2.0",
                     replaced_by="`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument"),
    "georadiusbymember": doc(*_georadius(*_GEORADIUSBYMEMBER), history=(_GEO_UNITS_HISTORY,),
                             deprecated_since="6.2.0",
                             replaced_by="`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and "
                                         "`FROMMEMBER` arguments"),
    "georadius_ro": doc(*_georadius(*_GEORADIUS, any_since="6.2.0", store=False),
                        history=("6.2.0: Added the `ANY` option for `COUNT`.",), deprecated_since="6.2.0",
                        replaced_by="`GEOSEARCH` with the `BYRADIUS` argument"),
    "georadiusbymember_ro": doc(*_georadius(*_GEORADIUSBYMEMBER, store=False), deprecated_since="6.2.0",
                                replaced_by="`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments"),

    # --- strings ----------------------------------------------------------
    "get": doc(_KEY),
    "set": doc(
        _KEY, string("value"),
        oneof("condition", token("NX"), token("XX"), since="2.6.12", optional=True),
        token("GET", since="6.2.0", optional=True),
        oneof("expiration",
              integer("seconds", token="EX", since="2.6.12"),
              integer("milliseconds", token="PX", since="2.6.12"),
              unix_time("unix-time-seconds", token="EXAT", since="6.2.0"),
              unix_time("unix-time-milliseconds", token="PXAT", since="6.2.0"),
              token("KEEPTTL", since="6.0.0"),
              optional=True),
        history=("2.6.12: Added the `EX`, `PX`, `NX` and `XX` options.",
                 "6.0.0: Added the `KEEPTTL` option.",
                 "6.2.0: Added the `GET`, `EXAT` and `PXAT` option.",
                 "7.0.0: Allowed the `NX` and `GET` options to be used together.")),
    "setnx": doc(_KEY, string("value")),
    "setex": doc(_KEY, integer("seconds"), string("value")),
    "psetex": doc(_KEY, integer("milliseconds"), string("value")),
    "mget": doc(key("key", 0, multiple=True)),
    "mset": doc(_KEY_VALUES),
    "msetnx": doc(_KEY_VALUES),
    "getdel": doc(_KEY),
    "getex": doc(
        _KEY,
        oneof("expiration",
              integer("seconds", token="EX"),
              integer("milliseconds", token="PX"),
              unix_time("unix-time-seconds", token="EXAT"),
              unix_time("unix-time-milliseconds", token="PXAT"),
              token("PERSIST"),
              optional=True)),
    "getset": doc(_KEY, string("value"), deprecated_since="6.2.0",
                  replaced_by="`SET` with the `!GET` argument"),
    "append": doc(_KEY, string("value")),
    "strlen": doc(_KEY),
    "getrange": doc(_KEY, integer("start"), integer("end")),
    "setrange": doc(_KEY, integer("offset"), string("value")),
    "substr": doc(_KEY, integer("start"), integer("end"), deprecated_since="2.0.0",
                  replaced_by="`GETRANGE`"),
    "incr": doc(_KEY),
    "decr": doc(_KEY),
    "incrby": doc(_KEY, integer("increment")),
    "decrby": doc(_KEY, integer("decrement")),
    "incrbyfloat": doc(_KEY, double("increment")),
    "lcs": doc(key("key1", 0), key("key2", 0), token("LEN", optional=True),
               token("IDX", optional=True), integer("len", token="MINMATCHLEN", optional=True),
               token("WITHMATCHLEN", optional=True)),

    # --- bitmaps ----------------------------------------------------------
    "setbit": doc(_KEY, integer("offset"), integer("value")),
    "getbit": doc(_KEY, integer("offset")),
    "bitcount": doc(
        _KEY,
        block("index", integer("start"), integer("end"), _INDEX_UNIT, optional=True),
        history=_INDEX_UNIT_HISTORY),
    "bitpos": doc(
        _KEY, integer("bit"),
        block("index", integer("start"),
              block("end_index", integer("end"), _INDEX_UNIT, optional=True),
              optional=True),
        history=_INDEX_UNIT_HISTORY),
    "bitop": doc(string("operation"), key("destkey", 0), key("key", 1, multiple=True)),
    "bitfield": doc(
        _KEY,
        oneof("operation",
              _BITFIELD_GET,
              block("write",
                    oneof("wrap_sat_fail", token("WRAP"), token("SAT"), token("FAIL"),
                          token="OVERFLOW", optional=True),
                    oneof("write_operation",
                          block("encoding_offset_value", string("encoding"), integer("offset"),
                                integer("value"), token="SET"),
                          block("encoding_offset_increment", string("encoding"), integer("offset"),
                                integer("increment"), token="INCRBY"))),
              optional=True, multiple=True)),
    "bitfield_ro": doc(
        _KEY,
        block("encoding_offset", string("encoding"), integer("offset"), token="GET",
              optional=True, multiple=True, multiple_token=True)),

    # --- HyperLogLog ------------------------------------------------------
    "pfadd": doc(_KEY, string("element", optional=True, multiple=True)),
    "pfcount": doc(key("key", 0, multiple=True)),
    "pfmerge": doc(key("destkey", 0), key("sourcekey", 1, multiple=True)),
    "pfdebug": doc(string("subcommand"), _KEY, doc_flags="syscmd"),
    "pfselftest": doc(doc_flags="syscmd"),

    # --- keyspace ---------------------------------------------------------
    "del": doc(key("key", 0, multiple=True)),
    "unlink": doc(key("key", 0, multiple=True)),
    "exists": doc(key("key", 0, multiple=True),
                  history=("3.0.3: Accepts multiple `key` arguments.",)),
    "type": doc(_KEY),
    "expire": doc(_KEY, integer("seconds"), _EXPIRE_CONDITION, history=_EXPIRE_HISTORY),
    "pexpire": doc(_KEY, integer("milliseconds"), _EXPIRE_CONDITION, history=_EXPIRE_HISTORY),
    "expireat": doc(_KEY, unix_time("unix-time-seconds"), _EXPIRE_CONDITION,
                    history=_EXPIRE_HISTORY),
    "pexpireat": doc(_KEY, unix_time("unix-time-milliseconds"), _EXPIRE_CONDITION,
                     history=_EXPIRE_HISTORY),
    "ttl": doc(_KEY, history=("2.8.0: Added the -2 reply.",)),
    "pttl": doc(_KEY, history=("2.8.0: Added the -2 reply.",)),
    "expiretime": doc(_KEY),
    "pexpiretime": doc(_KEY),
    "persist": doc(_KEY),
    "keys": doc(pattern("pattern")),
    "scan": doc(integer("cursor"), *_SCAN_TAIL,
                string("type", token="TYPE", since="6.0.0", optional=True),
                history=("6.0.0: Added the `TYPE` subcommand.",)),
    "rename": doc(_KEY, key("newkey", 1)),
    "renamenx": doc(_KEY, key("newkey", 1),
                    history=("3.2.0: The command no longer returns an error when source and "
                             "destination names are the same.",)),
    "copy": doc(key("source", 0), key("destination", 1),
                integer("destination-db", token="DB", optional=True),
                token("REPLACE", optional=True)),
    "move": doc(_KEY, integer("db")),
    "touch": doc(key("key", 0, multiple=True)),
    "object|encoding": doc(_KEY),
    "object|freq": doc(_KEY),
    "object|idletime": doc(_KEY),
    "object|refcount": doc(_KEY),

    # --- serialized values and their transfer -----------------------------
    "dump": doc(_KEY),
    "restore": doc(*_RESTORE_ARGUMENTS, history=_RESTORE_HISTORY),
    "restore-asking": doc(*_RESTORE_ARGUMENTS, history=_RESTORE_HISTORY, doc_flags="syscmd"),
    "migrate": doc(
        string("host"), integer("port"),
        oneof("key_or_empty_string", _KEY, token("", name="empty_string")),
        integer("destination-db"), integer("timeout"),
        token("COPY", since="3.0.0", optional=True),
        token("REPLACE", since="3.0.0", optional=True),
        oneof("authentication",
              string("password", token="AUTH", since="4.0.7", optional=True),
              block("username_password", string("username"), string("password"),
                    token="AUTH2", since="6.0.0", optional=True),
              optional=True),
        key("key", 1, token="KEYS", since="3.0.6", optional=True, multiple=True),
        history=("3.0.0: Added the `COPY` and `REPLACE` options.",
                 "3.0.6: Added the `KEYS` option.",
                 "4.0.7: Added the `AUTH` option.",
                 "6.0.0: Added the `AUTH2` option.")),
    # --- sorting ------------------------------------------------------------
    "sort": doc(*_SORT_ARGUMENTS, key("destination", 2, token="STORE", optional=True)),
    "sort_ro": doc(*_SORT_ARGUMENTS),
    # --- cxlredis's co-located access family (commands/cxl.py) ---
    "cxl|getref": doc(_KEY),
    "cxl|mgetref": doc(key("key", 0, multiple=True)),
    "cxl|prefix": doc(key("key", 0, multiple=True)),
    "cxl|prefixget": doc(key("key", 0, multiple=True)),
    "cxl|prefixref": doc(key("key", 0, multiple=True)),
    "cxl|release": doc(integer("lease", multiple=True)),
    "cxl|reserve": doc(
        _KEY, integer("nbytes"),
        oneof("expiration",
              integer("seconds", token="EX"),
              integer("milliseconds", token="PX"),
              optional=True)),
    "cxl|commit": doc(integer("lease")),
    "cxl|abort": doc(integer("lease")),
    # --- cluster ----------------------------------------------------------
"cluster|addslots": doc(integer("slot", multiple=True)),
    "cluster|addslotsrange": doc(block("start-slot_end-slot", integer("start-slot"),
                                       integer("end-slot"), multiple=True)),
    "cluster|count-failure-reports": doc(string("node-id")),
    "cluster|countkeysinslot": doc(integer("slot")),
    "cluster|delslots": doc(integer("slot", multiple=True)),
    "cluster|delslotsrange": doc(block("start-slot_end-slot", integer("start-slot"),
                                       integer("end-slot"), multiple=True)),
    "cluster|failover": doc(oneof("options", token("FORCE"), token("TAKEOVER"), optional=True)),
    "cluster|forget": doc(string("node-id")),
    "cluster|getkeysinslot": doc(integer("slot"), integer("count")),
    "cluster|keyslot": doc(string("key")),
    "cluster|meet": doc(string("ip"), integer("port"),
                        integer("cluster_bus_port", since="4.0.0", optional=True),
                        history=("4.0.0: Added the optional `cluster_bus_port` argument.",)),
    "cluster|replicas": doc(string("node-id")),
    "cluster|replicate": doc(string("node-id")),
    "cluster|reset": doc(oneof("hard_soft", token("HARD"), token("SOFT"), optional=True)),
    "cluster|set-config-epoch": doc(integer("config-epoch")),
    "cluster|setslot": doc(integer("slot"),
                           oneof("subcommand", string("node-id", token="IMPORTING"),
                                 string("node-id", token="MIGRATING"),
                                 string("node-id", token="NODE"), token("STABLE"))),
    "cluster|slaves": doc(string("node-id"), deprecated_since="5.0.0",
                          replaced_by="`CLUSTER REPLICAS`"),
    "cluster|slots": doc(history=("4.0.0: Added node IDs.",
                                  "7.0.0: Added additional networking metadata field."),
                         deprecated_since="7.0.0", replaced_by="`CLUSTER SHARDS`"),
}
