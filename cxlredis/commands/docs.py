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

    # --- transactions -----------------------------------------------------
    "watch": doc(key("key", 0, multiple=True)),

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
    # --- cxlredis's co-located access family (commands/cxl.py) ---
    "cxl|getref": doc(_KEY),
    "cxl|mgetref": doc(key("key", 0, multiple=True)),
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
