"""Every command cxlredis implements, declared once, as data.

This table drives dispatch (name → handler, arity), the replies of COMMAND,
COMMAND INFO/DOCS/LIST/COUNT/GETKEYS, and ACL category checks. The facts
(arity, flags, key positions, categories, docs) are Redis 7.0's, so clients
that introspect the server see what they expect.

A handler is `cmd_<name>` (with `|` → `_` and `-` → `_`) in the module of the
command's family (see FAMILY_MODULES); a container command (CLIENT, CONFIG...)
lists its subcommands as `container|sub` entries.
"""
from dataclasses import dataclass, field, replace

from .args import c_word
from .._fastpath import (FAST_DECR_OP, FAST_DECRBY_OP, FAST_DEL_OP, FAST_EXISTS_OP, FAST_EXPIRE_OP, FAST_GET_OP,
                         FAST_HGET_OP, FAST_HSET_OP, FAST_INCR_OP, FAST_INCRBY_OP, FAST_MGET_OP, FAST_PTTL_OP,
                         FAST_SET_OP, FAST_TTL_OP)

# Redis's ACL categories in their bit order (COMMAND INFO lists a command's
# categories in this order), then cxlredis's own: "cxl", the co-located mapping
# commands, so that mapping is granted only by name (+@cxl or +@all).
ACL_CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
    "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
    "blocking", "dangerous", "connection", "transaction", "scripting",
    "cxl",
)

# Which module holds the handlers of each family.
FAMILY_MODULES = {
    "string": "strings",
    "bitmap": "bitmaps",
    "hyperloglog": "hyperloglog",
    "generic": "keys",
    "hash": "hashes",
    "list": "lists",
    "set": "sets",
    "sorted-set": "zsets",
    "geo": "geo",
    "connection": "connection",
    "server": "server",
    "transactions": "transactions",
    "cluster": "cluster",
    "pubsub": "pubsub",
    "scripting": "scripting",
}


# The access a key argument needs, as the ACL checks it against %R~ / %W~ patterns.
READ, WRITE = 1, 2


@dataclass(frozen=True)
class KeySpec:
    """A Redis 7 key specification: begin_search by index (or by keyword, searched from
    startfrom), find_keys by range (or by keynum: a count of keys at an argument); or both
    unknown, keys only the command's get_keys finds (SORT's)."""

    flags: tuple
    index: int
    last_key: int = 0
    key_step: int = 1
    limit: int = 0
    notes: str = ""
    keyword: str = ""            # begin_search by keyword: the keys follow this argument...
    startfrom: int = 0           # ...searched for from here (negative: from the end, backwards)
    keynum: tuple = ()           # find_keys by keynum: (keynumidx, firstkey, keystep) from index
    unknown: bool = False        # begin_search and find_keys "unknown"

    @property
    def access(self):
        """READ and/or WRITE, from the key spec's flags (ACCESS reads; INSERT, DELETE, UPDATE write)."""
        needs = READ if "access" in self.flags else 0
        if any(flag in self.flags for flag in ("insert", "delete", "update")):
            needs |= WRITE
        return needs


@dataclass
class CommandSpec:
    name: str                    # lowercase; subcommands as "container|sub"
    arity: int                   # Redis convention: -N means "at least N"
    flags: tuple                 # Redis's command flags, as COMMAND INFO shows them
    categories: tuple = ()       # explicit categories; implicit ones derive from flags
    group: str = "generic"
    summary: str = ""
    since: str = ""
    complexity: str = ""
    tips: tuple = ()
    key_specs: tuple = ()
    family: str = ""             # handler module; defaults from the group
    value_args: tuple = ()       # (first, step): arguments that may go straight into arena slots
    # What cxlredis needs to know of a command beyond Redis's flags (which COMMAND INFO shows):
    queued_in_multi: bool = True  # False: runs at once even inside MULTI (EXEC, WATCH, ...)
    audit_event: str = ""        # its success is this audit-log event (audit.py words the details)
    fast_op: int = -1            # its code in the C fast path (ext/cxlredis/_fastpath.pxd), -1: not there
    # For key specs flagged variable_flags: argv → the access (READ/WRITE bits) its keys need.
    key_access: object = None
    # For key specs flagged incomplete or unknown: argv → (index, key spec number) of each
    # of its keys, the key spec whose flags the key has (Redis's getkeys_proc, which Redis
    # falls back to when a key spec cannot find every key).
    get_keys: object = None
    # Its replies are pushes (SUBSCRIBE and co.), which CLIENT REPLY OFF/SKIP do not hide.
    replies_are_pushes: bool = False
    # The arguments that are channels, as ACL channel rules (&...) check them (Redis's
    # getChannelsFromCommand): (first, last (-1: to the end), whether they are patterns).
    channel_args: tuple = ()
    # Redis's CMD_MAY_REPLICATE, which COMMAND INFO hides: not flagged write, yet it may
    # change the dataset (or a replica's view of it), so CLIENT PAUSE WRITE holds it too.
    # Of the commands here Redis 7.0 gives it to EVAL, EVALSHA, FCALL, PUBLISH and SPUBLISH
    # (found by sending each command not flagged write to a paused redis-server 7.0.15);
    # cxlredis adds the commands of its own that change the dataset (CXL RESERVE/COMMIT,
    # TENANT DELETE).
    may_replicate: bool = False
    subcommands: dict = field(default_factory=dict)
    handler: object = None

    @property
    def container(self):
        return self.name.split("|", 1)[0] if "|" in self.name else None

    @property
    def touches_keyspace(self):
        """Whether it reads or writes keys (a MONITOR connection, a replica to Redis, may not)."""
        return any(flag in self.flags for flag in ("readonly", "write", "may_replicate"))

    @property
    def legacy_key_range(self):
        """COMMAND INFO's (first key, last key, step), derived from the key specs as Redis 7's
        populateCommandLegacyRangeSpec does: the key specs' plain ranges that follow each other."""
        if len(self.key_specs) == 1 and not self.key_specs[0].keyword and not self.key_specs[0].keynum:
            only = self.key_specs[0]
            last = only.index + only.last_key if only.last_key >= 0 else only.last_key
            return only.index, last, only.key_step
        first, last = None, 0
        for spec in self.key_specs:
            if (spec.keyword or spec.keynum or spec.unknown or spec.key_step != 1
                    or (first is not None and last != spec.index - 1)):
                continue  # found by keyword, not plain, or not next to the previous range: movable keys
            first = spec.index if first is None else min(first, spec.index)
            end = spec.index + spec.last_key if spec.last_key >= 0 else spec.last_key
            # Redis compares as unsigned: a range to the end (negative) beats any index.
            last = max(last, end, key=lambda index: index % (1 << 32))
        return (first, last, 1) if first is not None else (0, 0, 0)

    @property
    def acl_categories(self):
        """Explicit categories plus those Redis implies from the flags, in bit order."""
        cats = set(self.categories)
        flags = set(self.flags)
        if "write" in flags:
            cats.add("write")
        if "readonly" in flags and "scripting" not in cats:
            cats.add("read")
        if "admin" in flags:
            cats.update(("admin", "dangerous"))
        if "pubsub" in flags:
            cats.add("pubsub")
        if "blocking" in flags:
            cats.add("blocking")
        cats.add("fast" if "fast" in flags else "slow")
        return tuple(c for c in ACL_CATEGORIES if c in cats)

    def is_value_arg(self, index):
        """Whether argument `index` becomes a stored value (so it may land in an arena slot)."""
        if not self.value_args:
            return False
        first, step = self.value_args
        if index < first:
            return False
        return index == first if step == 0 else (index - first) % step == 0


def ks(flags, index, last_key=0, key_step=1, limit=0, notes=""):
    return KeySpec(tuple(flags.split()), index, last_key, key_step, limit, notes)


def ks_keynum(flags, index, keynumidx, firstkey, keystep, notes=""):
    return KeySpec(tuple(flags.split()), index, notes=notes, keynum=(keynumidx, firstkey, keystep))


def ks_keyword(flags, keyword, startfrom, last_key=0, key_step=1, limit=0):
    return KeySpec(tuple(flags.split()), 0, last_key, key_step, limit, keyword=keyword,
                   startfrom=startfrom)


def ks_unknown(flags, notes=""):
    return KeySpec(tuple(flags.split()), 0, notes=notes, unknown=True)


def cmd(name, arity, flags="", acl="", **docs):
    return CommandSpec(name=name, arity=arity, flags=tuple(flags.split()),
                       categories=tuple(acl.split()), **docs)


def _set_key_access(argv):
    """SET's key is read as well as written only with the GET option (Redis's setGetKeys)."""
    for arg in argv[3:]:
        if len(arg) == 3 and bytes(arg).lower() == b"get":
            return READ | WRITE
    return WRITE


def _bitfield_key_access(argv):
    """BITFIELD only reads its key when every subcommand is a GET (or an OVERFLOW), as
    Redis's bitfieldGetKeys walks them; anything else, a syntax error too, may write it."""
    i, argc = 2, len(argv)
    while i < argc:
        word, more = c_word(argv[i]), argc - i - 1
        if word == b"get" and more >= 2:
            i += 3
        elif word == b"overflow" and more >= 1:
            i += 2
        else:
            return READ | WRITE
    return READ


# MIGRATE's options before KEYS, and how many arguments each takes.
_MIGRATE_OPTION_ARGS = {b"copy": 0, b"replace": 0, b"auth": 1, b"auth2": 2}


def _migrate_keys(argv):
    """MIGRATE's keys, as Redis's migrateGetKeys finds them: argv[3], or with KEYS every
    argument after it (none when argv[3] is not empty then); all with key spec 0's flags."""
    i = 6
    while i < len(argv):
        word = bytes(argv[i]).lower()
        if word == b"keys":
            return [] if len(argv[3]) else [(index, 0) for index in range(i + 1, len(argv))]
        i += 1 + _MIGRATE_OPTION_ARGS.get(word, 0)
    return [(3, 0)]


# SORT's options that take arguments, and how many (STORE's is its key).
_SORT_OPTION_ARGS = {b"limit": 2, b"get": 1, b"by": 1}


def _sort_keys(argv):
    """SORT's keys, as Redis's sortGetKeys finds them: the key to sort (key spec 0's
    flags), and the last STORE's key (key spec 2's), options skipped by their arguments."""
    store = []
    i = 2
    while i < len(argv):
        word = c_word(argv[i])
        if word == b"store" and i + 1 < len(argv):
            store = [(i + 1, 2)]        # (its key is looked at as an option next)
        i += 1 + _SORT_OPTION_ARGS.get(word, 0)
    return [(1, 0)] + store


def _sort_ro_keys(argv):
    """SORT_RO's key: the one to sort (sortROGetKeys)."""
    return [(1, 0)]


_CONN = dict(group="connection")
_PUBSUB = dict(group="pubsub")
_PUBSUB_PUSHED = dict(group="pubsub", replies_are_pushes=True)
_SUBSCRIBE = "pubsub noscript loading stale"
_PUBSUB_SUB = "pubsub loading stale"
_CLIENT_SUB = "noscript loading stale"
_SERVER = dict(group="server")
_TX = dict(group="transactions")
_SET = dict(group="set")
_SET_INTER = "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."
_SET_UNION = "O(N) where N is the total number of elements in all given sets."
_HASH = dict(group="hash")
_LIST = dict(group="list")
_LIST_PUSH = ("O(1) for each element added, so O(N) to add N elements when the command is called with "
              "multiple arguments.")
_LIST_POP_KEY = ks("RW access delete", 1)
_LIST_MOVE_KEYS = (ks("RW access delete", 1), ks("RW insert", 2))
_LIST_MPOP = "O(N+M) where N is the number of provided keys and M is the number of elements returned."
_ZSET = dict(group="sorted-set")
_ZSET_KEY_RO = (ks("RO access", 1),)
_ZSET_RANGE = ("O(log(N)+M) with N being the number of elements in the sorted set and M the number of "
               "elements being returned. If M is constant (e.g. always asking for the first 10 elements "
               "with LIMIT), you can consider it O(log(N)).")
_ZSET_REMOVE_RANGE = ("O(log(N)+M) with N being the number of elements in the sorted set and M the number "
                      "of elements removed by the operation.")
_ZSET_POP = ("O(log(N)*M) with N being the number of elements in the sorted set, and M being the number "
             "of elements popped.")
_ZSET_MPOP = ("O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements "
              "in the sorted set, and M being the number of elements popped.")
_ZSET_BZPOP = "O(log(N)) with N being the number of elements in the sorted set."
_ZSET_UNION = ("O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being "
               "the number of elements in the resulting sorted set.")
_ZSET_INTER = ("O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the "
               "number of input sorted sets and M being the number of elements in the resulting sorted set.")
_ZSET_DIFF = ("O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N "
              "is the size of the first set, and K is the size of the result set.")
_ZSET_STORE_KEYS = (ks("OW update", 1), ks_keynum("RO access", 2, 0, 1, 1))
_ZSET_INPUT_KEYS = (ks_keynum("RO access", 1, 0, 1, 1),)
_GEO = dict(group="geo")
_GEO_RADIUS = ("O(N+log(M)) where N is the number of elements inside the bounding box of the circular "
               "area delimited by center and radius and M is the number of items inside the index.")
_GEO_SEARCH = ("O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area "
               "around the shape provided as the filter and M is the number of items inside the shape")


def _georadius_keys(options_from):
    """GEORADIUS's and GEORADIUSBYMEMBER's keys: the set, and a STORE or STOREDIST key
    among the options."""
    return (ks("RO access", 1), ks_keyword("OW update", "STORE", options_from),
            ks_keyword("OW update", "STOREDIST", options_from))


_ACL = dict(group="server", family="acl")
_ACL_ADMIN = "admin noscript loading stale"
# cxlredis's own family: no Redis has it, so "since" is the cxlredis version that added it.
# Management is flagged admin (@admin @dangerous): Redis's category list is fixed, and
# ACL CAT must answer as Redis's does, so the family has no category of its own.
_TENANT = dict(group="server", family="tenant", since="0.1.0")
_TENANT_ADMIN = "admin noscript loading stale"
# The co-located mapping family (commands/cxl.py, docs/colocated.md). No readonly/write
# flag, so @read and @write do not grant it: a mapping exposes the whole arena.
_CXL = dict(group="server", family="cxl", since="0.1.0")
_CXL_MAPPING = "cxl dangerous"
_CLUSTER = dict(group="cluster", family="cluster")
_SCRIPTING = dict(group="scripting")
_EVAL = "noscript stale skip_monitor no_mandatory_keys movablekeys"
_EVAL_KEYS = (ks_keynum("RW access update", 2, 0, 1, 1, notes=(
    "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")),)
_EVAL_RO_KEYS = (ks_keynum("RO access", 2, 0, 1, 1, notes=(
    "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")),)
_EVAL_DOCS = dict(since="2.6.0", complexity="Depends on the script that is executed.")
_FCALL_DOCS = dict(since="7.0.0", complexity="Depends on the function that is executed.")
_ALL_SHARDS = ("request_policy:all_shards", "response_policy:all_succeeded")
_WATCH = dict(group="server", family="monitoring")
_WATCH_ADMIN = "admin noscript loading stale"
_MIGRATION = dict(family="migration")
_SORT = dict(group="generic", family="sort", complexity=(
    "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number "
    "of returned elements. When the elements are not sorted, complexity is O(N)."))
_SORT_BY_GET_KEYS = ks_unknown("RO access", notes=(
    "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from "
    "the content of the key we sort"))
_RESTORE_COMPLEXITY = (
    "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N "
    "is the number of Redis objects composing the value and M their average size. For small string "
    "values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for "
    "sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is "
    "O(log(N)).")
_LATENCY_TIPS = ("nondeterministic_output", "request_policy:all_nodes", "response_policy:special")
_MEMORY_REPORT_TIPS = ("nondeterministic_output", "request_policy:all_shards", "response_policy:special")

SPECS = [
    # --- connection -------------------------------------------------------
    cmd("ping", -1, "fast", acl="connection", **_CONN, summary="Ping the server", since="1.0.0",
        complexity="O(1)", tips=("request_policy:all_shards", "response_policy:all_succeeded")),
    cmd("echo", 2, "loading stale fast", acl="connection", **_CONN, summary="Echo the given string",
        since="1.0.0", complexity="O(1)"),
    cmd("hello", -1, "noscript loading stale fast no_auth allow_busy", acl="connection", **_CONN,
        summary="Handshake with Redis", since="6.0.0", complexity="O(1)"),
    cmd("quit", -1, "noscript loading stale fast no_auth allow_busy", acl="connection", **_CONN,
        queued_in_multi=False, summary="Close the connection", since="1.0.0", complexity="O(1)"),
    cmd("reset", 1, "noscript loading stale fast no_auth allow_busy", acl="connection", **_CONN,
        queued_in_multi=False, summary="Reset the connection", since="6.2.0", complexity="O(1)"),
    cmd("select", 2, "loading stale fast", acl="connection", **_CONN,
        summary="Change the selected database for the current connection", since="1.0.0",
        complexity="O(1)"),
    cmd("client", -2, **_CONN, summary="A container for client connection commands", since="2.4.0",
        complexity="Depends on subcommand."),
    cmd("client|id", 2, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Returns the client ID for the current connection", since="5.0.0", complexity="O(1)"),
    cmd("client|setname", 3, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Set the current connection name", since="2.6.9", complexity="O(1)"),
    cmd("client|getname", 2, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Get the current connection name", since="2.6.9", complexity="O(1)"),
    cmd("client|list", -2, "admin " + _CLIENT_SUB, acl="connection", **_CONN,
        summary="Get the list of client connections", since="2.4.0",
        complexity="O(N) where N is the number of client connections", tips=("nondeterministic_output",)),
    cmd("client|info", 2, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Returns information about the current client connection.", since="6.2.0",
        complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("client|kill", -3, "admin " + _CLIENT_SUB, acl="connection", **_CONN,
        summary="Kill the connection of a client", since="2.4.0",
        complexity="O(N) where N is the number of client connections"),
    # Redis 7.2 added SETINFO; redis-py 8 and valkey-glide send it on every connect.
    cmd("client|setinfo", 4, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Set client or connection specific info", since="7.2.0", complexity="O(1)",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    # redis-py 8 probes maintenance notifications after HELLO 3; we never move slots under a client.
    cmd("client|maint_notifications", -3, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Enable or disable server maintenance notifications for the connection",
        since="8.2.0", complexity="O(1)"),
    cmd("client|no-evict", 3, "admin " + _CLIENT_SUB, acl="connection", **_CONN,
        summary="Set client eviction mode for the current connection", since="7.0.0",
        complexity="O(1)"),
    cmd("client|pause", -3, "admin " + _CLIENT_SUB, acl="connection", **_CONN,
        summary="Stop processing commands from clients for some time", since="2.9.50",
        complexity="O(1)"),
    cmd("client|unblock", -3, "admin " + _CLIENT_SUB, acl="connection", **_CONN,
        summary="Unblock a client blocked in a blocking command from a different connection",
        since="5.0.0", complexity="O(log N) where N is the number of client connections"),
    cmd("client|unpause", 2, "admin " + _CLIENT_SUB, acl="connection", **_CONN,
        summary="Resume processing of clients that were paused", since="6.2.0",
        complexity="O(N) Where N is the number of paused clients"),
    cmd("client|reply", 3, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Instruct the server whether to reply to commands", since="3.2.0", complexity="O(1)"),
    cmd("client|tracking", -3, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Enable or disable server assisted client side caching support", since="6.0.0",
        complexity="O(1). Some options may introduce additional complexity."),
    cmd("client|caching", 3, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Instruct the server about tracking or not keys in the next request", since="6.0.0",
        complexity="O(1)"),
    cmd("client|getredir", 2, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Get tracking notifications redirection client ID if any", since="6.0.0",
        complexity="O(1)"),
    cmd("client|trackinginfo", 2, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Return information about server assisted client side caching for the current "
        "connection", since="6.2.0", complexity="O(1)"),
    cmd("client|help", 2, "loading stale", acl="connection", **_CONN,
        summary="Show helpful text about the different subcommands", since="5.0.0", complexity="O(1)"),

    # --- authentication and ACLs (commands/acl.py) ------------------------
    cmd("auth", -2, "noscript loading stale fast no_auth allow_busy", acl="connection", **_CONN,
        family="acl", summary="Authenticate to the server", since="1.0.0",
        complexity="O(N) where N is the number of passwords defined for the user"),
    cmd("acl", -2, **_ACL, summary="A container for Access List Control commands ", since="6.0.0",
        complexity="Depends on subcommand."),
    cmd("acl|cat", -2, "noscript loading stale", **_ACL,
        summary="List the ACL categories or the commands inside a category", since="6.0.0",
        complexity="O(1) since the categories and commands are a fixed set."),
    cmd("acl|deluser", -3, _ACL_ADMIN, **_ACL,
        summary="Remove the specified ACL users and the associated rules", since="6.0.0",
        complexity="O(1) amortized time considering the typical user."),
    cmd("acl|dryrun", -4, _ACL_ADMIN, **_ACL,
        summary="Returns whether the user can execute the given command without executing the "
        "command.", since="7.0.0", complexity="O(1)."),
    cmd("acl|genpass", -2, "noscript loading stale", **_ACL,
        summary="Generate a pseudorandom secure password to use for ACL users", since="6.0.0",
        complexity="O(1)"),
    cmd("acl|getuser", 3, _ACL_ADMIN, **_ACL, summary="Get the rules for a specific ACL user",
        since="6.0.0", complexity="O(N). Where N is the number of password, command and pattern "
        "rules that the user has."),
    cmd("acl|help", 2, "loading stale", **_ACL,
        summary="Show helpful text about the different subcommands", since="6.0.0", complexity="O(1)"),
    cmd("acl|list", 2, _ACL_ADMIN, **_ACL,
        summary="List the current ACL rules in ACL config file format", since="6.0.0",
        complexity="O(N). Where N is the number of configured users."),
    cmd("acl|load", 2, _ACL_ADMIN, **_ACL, summary="Reload the ACLs from the configured ACL file",
        since="6.0.0", complexity="O(N). Where N is the number of configured users."),
    cmd("acl|log", -2, _ACL_ADMIN, **_ACL,
        summary="List latest events denied because of ACLs in place", since="6.0.0",
        complexity="O(N) with N being the number of entries shown."),
    cmd("acl|save", 2, _ACL_ADMIN, **_ACL,
        summary="Save the current ACL rules in the configured ACL file", since="6.0.0",
        complexity="O(N). Where N is the number of configured users."),
    cmd("acl|setuser", -3, _ACL_ADMIN, **_ACL,
        summary="Modify or create the rules for a specific ACL user", since="6.0.0",
        complexity="O(N). Where N is the number of rules provided."),
    cmd("acl|users", 2, _ACL_ADMIN, **_ACL,
        summary="List the username of all the configured ACL rules", since="6.0.0",
        complexity="O(N). Where N is the number of configured users."),
    cmd("acl|whoami", 2, "noscript loading stale", **_ACL,
        summary="Return the name of the user associated to the current connection", since="6.0.0",
        complexity="O(1)"),

    # --- tenants (commands/tenant.py) -------------------------------------
    cmd("tenant", -2, **_TENANT, summary="A container for tenant commands",
        complexity="Depends on subcommand."),
    cmd("tenant|create", -3, _TENANT_ADMIN, **_TENANT,
        summary="Create a tenant: a key namespace with a quota, a policy, users and shared grants",
        complexity="O(N) where N is the number of connected clients"),
    cmd("tenant|delete", 3, _TENANT_ADMIN, **_TENANT, may_replicate=True,
        summary="Delete a tenant and all its keys, closing its users' connections",
        complexity="O(N) where N is the number of keys in the arena"),
    cmd("tenant|info", 3, _TENANT_ADMIN, **_TENANT,
        summary="Show the settings and meters of a tenant", complexity="O(1)"),
    cmd("tenant|list", 2, _TENANT_ADMIN, **_TENANT, summary="List the tenants",
        complexity="O(N) where N is the number of tenants"),
    cmd("tenant|set", -4, _TENANT_ADMIN, **_TENANT,
        summary="Change the quota, policy, users or shared grants of a tenant",
        complexity="O(N) where N is the number of connected clients"),
    cmd("tenant|resetstat", 3, _TENANT_ADMIN, **_TENANT, summary="Reset the meters of a tenant",
        complexity="O(1)"),
    cmd("tenant|whoami", 2, "noscript loading stale fast", acl="connection", **_TENANT,
        summary="Return the tenant of the current connection", complexity="O(1)"),
    cmd("tenant|help", 2, "loading stale", **_TENANT,
        summary="Show helpful text about the different subcommands", complexity="O(1)"),

    # --- co-located access (commands/cxl.py) ---------------------------------
    cmd("cxl", -2, **_CXL, summary="A container for co-located (mapped) access commands",
        complexity="Depends on subcommand."),
    cmd("cxl|info", 2, "loading stale fast", acl="cxl", **_CXL,
        summary="Describe the arena's backing and layout, and whether this connection may map it",
        complexity="O(1)"),
    cmd("cxl|getref", 3, "noscript fast", acl=_CXL_MAPPING, **_CXL,
        summary="Lease a reference (offset, length, generation) to a string value in the mapping",
        complexity="O(1)", key_specs=(ks("RO access", 2),)),
    cmd("cxl|mgetref", -3, "noscript fast", acl=_CXL_MAPPING, **_CXL,
        summary="Lease references to the string values of several keys",
        complexity="O(N) where N is the number of keys", key_specs=(ks("RO access", 2, -1),)),
    cmd("cxl|prefix", -3, "readonly fast", acl="keyspace", **_CXL,
        summary="Count the leading keys that exist, up to the first missing one",
        complexity="O(N) where N is the number of keys up to the first missing one",
        key_specs=(ks("RO", 2, -1),)),
    cmd("cxl|prefixget", -3, "readonly fast", acl="string", **_CXL,
        summary="Get the values of the leading keys, up to the first missing one",
        complexity="O(N) where N is the number of keys up to the first missing one",
        key_specs=(ks("RO access", 2, -1),)),
    cmd("cxl|prefixref", -3, "noscript fast", acl=_CXL_MAPPING, **_CXL,
        summary="Lease references to the values of the leading keys, up to the first missing one",
        complexity="O(N) where N is the number of keys up to the first missing one",
        key_specs=(ks("RO access", 2, -1),)),
    cmd("cxl|release", -3, "noscript fast", acl=_CXL_MAPPING, **_CXL,
        summary="End leases held by this connection", complexity="O(N) where N is the number of leases"),
    cmd("cxl|reserve", -4, "denyoom noscript", acl=_CXL_MAPPING, **_CXL, may_replicate=True,
        summary="Lease an uncommitted arena block that the client fills through its mapping",
        complexity="O(1)", key_specs=(ks("OW update", 2),)),
    cmd("cxl|commit", 3, "noscript fast", acl=_CXL_MAPPING, **_CXL, may_replicate=True,
        summary="Make a filled reservation the key's value, atomically", complexity="O(1)"),
    cmd("cxl|abort", 3, "noscript fast", acl=_CXL_MAPPING, **_CXL,
        summary="Free a reservation without storing it", complexity="O(1)"),
    cmd("cxl|help", 2, "loading stale", acl="cxl", **_CXL,
        summary="Show helpful text about the different subcommands", complexity="O(1)"),

    # --- server -----------------------------------------------------------
    cmd("info", -1, "loading stale", acl="dangerous", **_SERVER,
        summary="Get information and statistics about the server", since="1.0.0", complexity="O(1)",
        tips=("nondeterministic_output", "request_policy:all_shards", "response_policy:special")),
    cmd("config", -2, **_SERVER, summary="A container for server configuration commands", since="2.0.0",
        complexity="Depends on subcommand."),
    cmd("config|get", -3, "admin noscript loading stale", **_SERVER,
        summary="Get the values of configuration parameters", since="2.0.0",
        complexity="O(N) when N is the number of configuration parameters provided"),
    cmd("config|set", -4, "admin noscript loading stale", audit_event="config_set", **_SERVER,
        summary="Set configuration parameters to the given values", since="2.0.0",
        complexity="O(N) when N is the number of configuration parameters provided",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    cmd("config|resetstat", 2, "admin noscript loading stale", audit_event="config_resetstat", **_SERVER,
        summary="Reset the stats returned by INFO", since="2.0.0", complexity="O(1)"),
    cmd("config|rewrite", 2, "admin noscript loading stale", audit_event="config_rewrite", **_SERVER,
        summary="Rewrite the configuration file with the in memory configuration", since="2.8.0",
        complexity="O(1)"),
    cmd("config|help", 2, "loading stale", **_SERVER,
        summary="Show helpful text about the different subcommands", since="5.0.0", complexity="O(1)"),
    cmd("command", -1, "loading stale", acl="connection", **_SERVER,
        summary="Get array of Redis command details", since="2.8.13",
        complexity="O(N) where N is the total number of Redis commands",
        tips=("nondeterministic_output_order",)),
    cmd("command|count", 2, "loading stale", acl="connection", **_SERVER,
        summary="Get total number of Redis commands", since="2.8.13", complexity="O(1)"),
    cmd("command|list", -2, "loading stale", acl="connection", **_SERVER,
        summary="Get an array of Redis command names", since="7.0.0",
        complexity="O(N) where N is the total number of Redis commands",
        tips=("nondeterministic_output_order",)),
    cmd("command|info", -2, "loading stale", acl="connection", **_SERVER,
        summary="Get array of specific Redis command details, or all when no argument is given.",
        since="2.8.13", complexity="O(N) where N is the number of commands to look up",
        tips=("nondeterministic_output_order",)),
    cmd("command|docs", -2, "loading stale", acl="connection", **_SERVER,
        summary="Get array of specific Redis command documentation", since="7.0.0",
        complexity="O(N) where N is the number of commands to look up",
        tips=("nondeterministic_output_order",)),
    cmd("command|getkeys", -4, "loading stale", acl="connection", **_SERVER,
        summary="Extract keys given a full Redis command", since="2.8.13",
        complexity="O(N) where N is the number of arguments to the command"),
    cmd("command|getkeysandflags", -4, "loading stale", acl="connection", **_SERVER,
        summary="Extract keys and access flags given a full Redis command", since="7.0.0",
        complexity="O(N) where N is the number of arguments to the command"),
    cmd("command|help", 2, "loading stale", acl="connection", **_SERVER,
        summary="Show helpful text about the different subcommands", since="5.0.0", complexity="O(1)"),
    cmd("time", 1, "loading stale fast", **_SERVER, summary="Return the current server time",
        since="2.6.0", complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("lastsave", 1, "loading stale fast", acl="admin dangerous", **_SERVER,
        summary="Get the UNIX time stamp of the last successful save to disk", since="1.0.0",
        complexity="O(1)", tips=("nondeterministic_output",)),
    # The arena is the persistence: a save makes it durable on its backing (persistence.py).
    cmd("save", 1, "admin noscript no_async_loading no_multi", **_SERVER,
        summary="Synchronously save the dataset to disk", since="1.0.0",
        complexity="O(N) where N is the total number of keys in all databases"),
    cmd("bgsave", -1, "admin noscript no_async_loading", **_SERVER,
        summary="Asynchronously save the dataset to disk", since="1.0.0", complexity="O(1)"),
    cmd("bgrewriteaof", 1, "admin noscript no_async_loading", **_SERVER,
        summary="Asynchronously rewrite the append-only file", since="1.0.0", complexity="O(1)"),
    cmd("lolwut", -1, "readonly fast", acl="", group="server", family="lolwut",
        summary="Display some computer art and the Redis version", since="5.0.0"),
    cmd("role", 1, "noscript loading stale fast", acl="admin dangerous", **_SERVER,
        summary="Return the role of the instance in the context of replication", since="2.8.12",
        complexity="O(1)"),
    cmd("wait", 3, "noscript", acl="connection", group="generic", family="server",
        summary="Wait for the synchronous replication of all the write commands sent in the "
        "context of the current connection", since="3.0.0", complexity="O(1)",
        tips=("request_policy:all_shards", "response_policy:agg_min")),
    # Redis 7.2's (answered as a primary without AOF or replicas)
    cmd("waitaof", 4, "noscript", acl="connection", group="generic", family="server",
        summary="Blocks until all of the preceding commands sent by the connection are written to the "
        "append-only file of the master and/or replicas", since="7.2.0", complexity="O(1)",
        tips=("request_policy:all_shards", "response_policy:agg_min")),
    cmd("shutdown", -1, "admin noscript loading stale no_multi allow_busy", **_SERVER,
        summary="Synchronously save the dataset to disk and then shut down the server", since="1.0.0",
        complexity="O(N) when saving, where N is the total number of keys in all databases when "
                   "saving data, otherwise O(1)"),
    # --- scripting -------------------------------------------------------
    cmd("eval", -3, _EVAL, acl="scripting", **_SCRIPTING, key_specs=_EVAL_KEYS, may_replicate=True,
        summary="Execute a Lua script server side", **_EVAL_DOCS),
    cmd("evalsha", -3, _EVAL, acl="scripting", **_SCRIPTING, key_specs=(replace(_EVAL_KEYS[0], notes=""),),
        may_replicate=True, summary="Execute a Lua script server side", **_EVAL_DOCS),
    cmd("eval_ro", -3, "readonly " + _EVAL, acl="scripting", **_SCRIPTING, key_specs=_EVAL_RO_KEYS,
        summary="Execute a read-only Lua script server side", since="7.0.0",
        complexity="Depends on the script that is executed."),
    cmd("evalsha_ro", -3, "readonly " + _EVAL, acl="scripting", **_SCRIPTING,
        key_specs=(replace(_EVAL_RO_KEYS[0], notes=""),),
        summary="Execute a read-only Lua script server side", since="7.0.0",
        complexity="Depends on the script that is executed."),
    cmd("script", -2, **_SCRIPTING, summary="A container for Lua scripts management commands",
        since="2.6.0", complexity="Depends on subcommand."),
    cmd("script|load", 3, "noscript stale", acl="scripting", **_SCRIPTING,
        summary="Load the specified Lua script into the script cache.", since="2.6.0",
        complexity="O(N) with N being the length in bytes of the script body.",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    cmd("script|debug", 3, "noscript", acl="scripting", **_SCRIPTING,
        summary="Set the debug mode for executed scripts.", since="3.2.0", complexity="O(1)"),
    cmd("script|exists", -3, "noscript", acl="scripting", **_SCRIPTING,
        summary="Check existence of scripts in the script cache.", since="2.6.0",
        complexity="O(N) with N being the number of scripts to check (so checking a single script "
                   "is an O(1) operation).",
        tips=("request_policy:all_shards", "response_policy:agg_logical_and")),
    cmd("script|flush", -2, "noscript", acl="scripting", **_SCRIPTING,
        summary="Remove all the scripts from the script cache.", since="2.6.0",
        complexity="O(N) with N being the number of scripts in cache",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    cmd("script|kill", 2, "noscript allow_busy", acl="scripting", **_SCRIPTING,
        summary="Kill the script currently in execution.", since="2.6.0", complexity="O(1)",
        tips=("request_policy:all_shards", "response_policy:one_succeeded")),
    cmd("script|help", 2, "loading stale", acl="scripting", **_SCRIPTING,
        summary="Show helpful text about the different subcommands", since="5.0.0", complexity="O(1)"),
    cmd("fcall", -3, _EVAL, acl="scripting", **_SCRIPTING, key_specs=_EVAL_KEYS, may_replicate=True,
        summary="Invoke a function", **_FCALL_DOCS),
    cmd("fcall_ro", -3, "readonly " + _EVAL, acl="scripting", **_SCRIPTING, key_specs=_EVAL_RO_KEYS,
        summary="Invoke a read-only function", **_FCALL_DOCS),
    cmd("function", -2, **_SCRIPTING, summary="A container for function commands",
        since="7.0.0", complexity="Depends on subcommand."),
    cmd("function|load", -3, "write denyoom noscript", acl="scripting", **_SCRIPTING,
        summary="Create a function with the given arguments (name, code, description)", since="7.0.0",
        complexity="O(1) (considering compilation time is redundant)", tips=_ALL_SHARDS),
    cmd("function|list", -2, "noscript", acl="scripting", **_SCRIPTING,
        summary="List information about all the functions", since="7.0.0",
        complexity="O(N) where N is the number of functions", tips=("nondeterministic_output_order",)),
    cmd("function|delete", 3, "write noscript", acl="scripting", **_SCRIPTING,
        summary="Delete a function by name", since="7.0.0", complexity="O(1)", tips=_ALL_SHARDS),
    cmd("function|flush", -2, "write noscript", acl="scripting", **_SCRIPTING,
        summary="Deleting all functions", since="7.0.0",
        complexity="O(N) where N is the number of functions deleted", tips=_ALL_SHARDS),
    cmd("function|dump", 2, "noscript", acl="scripting", **_SCRIPTING,
        summary="Dump all functions into a serialized binary payload", since="7.0.0",
        complexity="O(N) where N is the number of functions"),
    cmd("function|restore", -3, "write denyoom noscript", acl="scripting", **_SCRIPTING,
        summary="Restore all the functions on the given payload", since="7.0.0",
        complexity="O(N) where N is the number of functions on the payload", tips=_ALL_SHARDS),
    cmd("function|stats", 2, "noscript allow_busy", acl="scripting", **_SCRIPTING,
        summary="Return information about the function currently running (name, description, duration)",
        since="7.0.0", complexity="O(1)",
        tips=("nondeterministic_output", "request_policy:all_shards", "response_policy:special")),
    cmd("function|kill", 2, "noscript allow_busy", acl="scripting", **_SCRIPTING,
        summary="Kill the function currently in execution.", since="7.0.0", complexity="O(1)",
        tips=("request_policy:all_shards", "response_policy:one_succeeded")),
    cmd("function|help", 2, "loading stale", acl="scripting", **_SCRIPTING,
        summary="Show helpful text about the different subcommands", since="7.0.0", complexity="O(1)"),
    cmd("debug", -2, "admin noscript loading stale", **_SERVER,
        summary="A container for debugging commands", since="1.0.0", complexity="Depends on subcommand."),

    # --- introspection (commands/monitoring.py) ---------------------------
    cmd("slowlog", -2, **_WATCH, summary="A container for slow log commands", since="2.2.12",
        complexity="Depends on subcommand."),
    cmd("slowlog|get", -2, "admin loading stale", **_WATCH, summary="Get the slow log's entries",
        since="2.2.12", complexity="O(N) where N is the number of entries returned",
        tips=("request_policy:all_nodes", "nondeterministic_output")),
    cmd("slowlog|len", 2, "admin loading stale", **_WATCH, summary="Get the slow log's length",
        since="2.2.12", complexity="O(1)",
        tips=("request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output")),
    cmd("slowlog|reset", 2, "admin loading stale", **_WATCH,
        summary="Clear all entries from the slow log", since="2.2.12",
        complexity="O(N) where N is the number of entries in the slowlog",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    cmd("slowlog|help", 2, "loading stale", **_WATCH,
        summary="Show helpful text about the different subcommands", since="6.2.0", complexity="O(1)"),
    cmd("latency", -2, **_WATCH, summary="A container for latency diagnostics commands",
        since="2.8.13", complexity="Depends on subcommand."),
    cmd("latency|latest", 2, _WATCH_ADMIN, **_WATCH,
        summary="Return the latest latency samples for all events.", since="2.8.13",
        complexity="O(1)", tips=_LATENCY_TIPS),
    cmd("latency|history", 3, _WATCH_ADMIN, **_WATCH,
        summary="Return timestamp-latency samples for the event.", since="2.8.13",
        complexity="O(1)", tips=_LATENCY_TIPS),
    cmd("latency|reset", -2, _WATCH_ADMIN, **_WATCH,
        summary="Reset latency data for one or more events.", since="2.8.13", complexity="O(1)",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    cmd("latency|doctor", 2, _WATCH_ADMIN, **_WATCH,
        summary="Return a human readable latency analysis report.", since="2.8.13",
        complexity="O(1)", tips=_LATENCY_TIPS),
    cmd("latency|graph", 3, _WATCH_ADMIN, **_WATCH, summary="Return a latency graph for the event.",
        since="2.8.13", complexity="O(1)", tips=_LATENCY_TIPS),
    cmd("latency|histogram", -2, _WATCH_ADMIN, **_WATCH,
        summary="Return the cumulative distribution of latencies of a subset of commands or all.",
        since="7.0.0", complexity="O(N) where N is the number of commands with latency "
        "information being retrieved.", tips=_LATENCY_TIPS),
    cmd("latency|help", 2, "loading stale", **_WATCH,
        summary="Show helpful text about the different subcommands.", since="2.8.13",
        complexity="O(1)"),
    cmd("monitor", 1, _WATCH_ADMIN, **_WATCH,
        summary="Listen for all requests received by the server in real time", since="1.0.0"),

    # --- pub/sub ----------------------------------------------------------
    cmd("subscribe", -2, _SUBSCRIBE, **_PUBSUB_PUSHED, channel_args=(1, -1, False),
        summary="Listen for messages published to the given channels", since="2.0.0",
        complexity="O(N) where N is the number of channels to subscribe to."),
    cmd("unsubscribe", -1, _SUBSCRIBE, **_PUBSUB_PUSHED,
        summary="Stop listening for messages posted to the given channels", since="2.0.0",
        complexity="O(N) where N is the number of clients already subscribed to a channel."),
    cmd("psubscribe", -2, _SUBSCRIBE, **_PUBSUB_PUSHED, channel_args=(1, -1, True),
        summary="Listen for messages published to channels matching the given patterns", since="2.0.0",
        complexity="O(N) where N is the number of patterns the client is already subscribed to."),
    cmd("punsubscribe", -1, _SUBSCRIBE, **_PUBSUB_PUSHED,
        summary="Stop listening for messages posted to channels matching the given patterns",
        since="2.0.0",
        complexity="O(N+M) where N is the number of patterns the client is already subscribed and M "
                   "is the number of total patterns subscribed in the system (by any client)."),
    cmd("publish", 3, "pubsub loading stale fast", **_PUBSUB, channel_args=(1, 1, False),
        may_replicate=True,
        summary="Post a message to a channel", since="2.0.0",
        complexity="O(N+M) where N is the number of clients subscribed to the receiving channel and M "
                   "is the total number of subscribed patterns (by any client)."),
    cmd("ssubscribe", -2, _SUBSCRIBE, **_PUBSUB_PUSHED, channel_args=(1, -1, False),
        key_specs=(ks("not_key", 1, -1),),
        summary="Listen for messages published to the given shard channels", since="7.0.0",
        complexity="O(N) where N is the number of shard channels to subscribe to."),
    cmd("sunsubscribe", -1, _SUBSCRIBE, **_PUBSUB_PUSHED, key_specs=(ks("not_key", 1, -1),),
        summary="Stop listening for messages posted to the given shard channels", since="7.0.0",
        complexity="O(N) where N is the number of clients already subscribed to a shard channel."),
    cmd("spublish", 3, "pubsub loading stale fast", **_PUBSUB, channel_args=(1, 1, False),
        may_replicate=True,
        key_specs=(ks("not_key", 1),),
        summary="Post a message to a shard channel", since="7.0.0",
        complexity="O(N) where N is the number of clients subscribed to the receiving shard channel."),
    cmd("pubsub", -2, **_PUBSUB, summary="A container for Pub/Sub commands", since="2.8.0",
        complexity="Depends on subcommand."),
    cmd("pubsub|channels", -2, _PUBSUB_SUB, **_PUBSUB, summary="List active channels", since="2.8.0",
        complexity="O(N) where N is the number of active channels, and assuming constant time pattern "
                   "matching (relatively short channels and patterns)"),
    cmd("pubsub|numpat", 2, _PUBSUB_SUB, **_PUBSUB,
        summary="Get the count of unique patterns pattern subscriptions", since="2.8.0",
        complexity="O(1)"),
    cmd("pubsub|numsub", -2, _PUBSUB_SUB, **_PUBSUB, summary="Get the count of subscribers for channels",
        since="2.8.0",
        complexity="O(N) for the NUMSUB subcommand, where N is the number of requested channels"),
    cmd("pubsub|shardchannels", -2, _PUBSUB_SUB, **_PUBSUB, summary="List active shard channels",
        since="7.0.0",
        complexity="O(N) where N is the number of active shard channels, and assuming constant time "
                   "pattern matching (relatively short shard channels)."),
    cmd("pubsub|shardnumsub", -2, _PUBSUB_SUB, **_PUBSUB,
        summary="Get the count of subscribers for shard channels", since="7.0.0",
        complexity="O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard "
                   "channels"),
    cmd("pubsub|help", 2, "loading stale", **_PUBSUB,
        summary="Show helpful text about the different subcommands", since="6.2.0", complexity="O(1)"),

    # --- transactions -----------------------------------------------------
    cmd("multi", 1, "noscript loading stale fast allow_busy", queued_in_multi=False, acl="transaction", **_TX,
        summary="Mark the start of a transaction block", since="1.2.0", complexity="O(1)"),
    cmd("exec", 1, "noscript loading stale skip_slowlog", queued_in_multi=False, acl="transaction", **_TX,
        summary="Execute all commands issued after MULTI", since="1.2.0",
        complexity="Depends on commands in the transaction"),
    cmd("discard", 1, "noscript loading stale fast allow_busy", acl="transaction", **_TX,
        queued_in_multi=False, summary="Discard all commands issued after MULTI", since="2.0.0",
        complexity="O(N), when N is the number of queued commands"),
    cmd("watch", -2, "noscript loading stale fast allow_busy", acl="transaction", **_TX,
        queued_in_multi=False,
        summary="Watch the given keys to determine execution of the MULTI/EXEC block", since="2.2.0",
        complexity="O(1) for every key.", key_specs=(ks("RO", 1, -1),)),
    cmd("unwatch", 1, "noscript loading stale fast allow_busy", acl="transaction", **_TX,
        summary="Forget about all watched keys", since="2.2.0", complexity="O(1)"),

    # --- hashes (commands/hashes.py) --------------------------------------
    cmd("hset", -4, "write denyoom fast", acl="hash", **_HASH, fast_op=FAST_HSET_OP,
        summary="Set the string value of a hash field", since="2.0.0",
        complexity="O(1) for each field/value pair added, so O(N) to add N field/value pairs when "
                   "the command is called with multiple field/value pairs.",
        key_specs=(ks("RW update", 1),)),
    cmd("hmset", -4, "write denyoom fast", acl="hash", **_HASH,
        summary="Set multiple hash fields to multiple values", since="2.0.0",
        complexity="O(N) where N is the number of fields being set.", key_specs=(ks("RW update", 1),)),
    cmd("hsetnx", 4, "write denyoom fast", acl="hash", **_HASH,
        summary="Set the value of a hash field, only if the field does not exist", since="2.0.0",
        complexity="O(1)", key_specs=(ks("RW insert", 1),)),
    cmd("hget", 3, "readonly fast", acl="hash", **_HASH, fast_op=FAST_HGET_OP,
        summary="Get the value of a hash field", since="2.0.0", complexity="O(1)",
        key_specs=(ks("RO access", 1),)),
    cmd("hmget", -3, "readonly fast", acl="hash", **_HASH,
        summary="Get the values of all the given hash fields", since="2.0.0",
        complexity="O(N) where N is the number of fields being requested.",
        key_specs=(ks("RO access", 1),)),
    cmd("hgetall", 2, "readonly", acl="hash", **_HASH,
        summary="Get all the fields and values in a hash", since="2.0.0",
        complexity="O(N) where N is the size of the hash.", tips=("nondeterministic_output_order",),
        key_specs=(ks("RO access", 1),)),
    cmd("hdel", -3, "write fast", acl="hash", **_HASH,
        summary="Delete one or more hash fields", since="2.0.0",
        complexity="O(N) where N is the number of fields to be removed.",
        key_specs=(ks("RW delete", 1),)),
    cmd("hexists", 3, "readonly fast", acl="hash", **_HASH,
        summary="Determine if a hash field exists", since="2.0.0", complexity="O(1)",
        key_specs=(ks("RO", 1),)),
    cmd("hlen", 2, "readonly fast", acl="hash", **_HASH,
        summary="Get the number of fields in a hash", since="2.0.0", complexity="O(1)",
        key_specs=(ks("RO", 1),)),
    cmd("hkeys", 2, "readonly", acl="hash", **_HASH,
        summary="Get all the fields in a hash", since="2.0.0",
        complexity="O(N) where N is the size of the hash.", tips=("nondeterministic_output_order",),
        key_specs=(ks("RO access", 1),)),
    cmd("hvals", 2, "readonly", acl="hash", **_HASH,
        summary="Get all the values in a hash", since="2.0.0",
        complexity="O(N) where N is the size of the hash.", tips=("nondeterministic_output_order",),
        key_specs=(ks("RO access", 1),)),
    cmd("hincrby", 4, "write denyoom fast", acl="hash", **_HASH,
        summary="Increment the integer value of a hash field by the given number", since="2.0.0",
        complexity="O(1)", key_specs=(ks("RW access update", 1),)),
    cmd("hincrbyfloat", 4, "write denyoom fast", acl="hash", **_HASH,
        summary="Increment the float value of a hash field by the given amount", since="2.6.0",
        complexity="O(1)", key_specs=(ks("RW access update", 1),)),
    cmd("hstrlen", 3, "readonly fast", acl="hash", **_HASH,
        summary="Get the length of the value of a hash field", since="3.2.0", complexity="O(1)",
        key_specs=(ks("RO", 1),)),
    cmd("hscan", -3, "readonly", acl="hash", **_HASH,
        summary="Incrementally iterate hash fields and associated values", since="2.8.0",
        complexity="O(1) for every call. O(N) for a complete iteration, including enough command "
                   "calls for the cursor to return back to 0. N is the number of elements inside "
                   "the collection..", tips=("nondeterministic_output",),
        key_specs=(ks("RO access", 1),)),
    cmd("hrandfield", -2, "readonly", acl="hash", **_HASH,
        summary="Get one or multiple random fields from a hash", since="6.2.0",
        complexity="O(N) where N is the number of fields returned", tips=("nondeterministic_output",),
        key_specs=(ks("RO access", 1),)),

    # --- lists (commands/lists.py) ----------------------------------------
    cmd("lpush", -3, "write denyoom fast", acl="list", **_LIST,
        summary="Prepend one or multiple elements to a list", since="1.0.0", complexity=_LIST_PUSH,
        key_specs=(ks("RW insert", 1),)),
    cmd("rpush", -3, "write denyoom fast", acl="list", **_LIST,
        summary="Append one or multiple elements to a list", since="1.0.0", complexity=_LIST_PUSH,
        key_specs=(ks("RW insert", 1),)),
    cmd("lpushx", -3, "write denyoom fast", acl="list", **_LIST,
        summary="Prepend an element to a list, only if the list exists", since="2.2.0",
        complexity=_LIST_PUSH, key_specs=(ks("RW insert", 1),)),
    cmd("rpushx", -3, "write denyoom fast", acl="list", **_LIST,
        summary="Append an element to a list, only if the list exists", since="2.2.0",
        complexity=_LIST_PUSH, key_specs=(ks("RW insert", 1),)),
    cmd("lpop", -2, "write fast", acl="list", **_LIST,
        summary="Remove and get the first elements in a list", since="1.0.0",
        complexity="O(N) where N is the number of elements returned", key_specs=(_LIST_POP_KEY,)),
    cmd("rpop", -2, "write fast", acl="list", **_LIST,
        summary="Remove and get the last elements in a list", since="1.0.0",
        complexity="O(N) where N is the number of elements returned", key_specs=(_LIST_POP_KEY,)),
    cmd("llen", 2, "readonly fast", acl="list", **_LIST, summary="Get the length of a list",
        since="1.0.0", complexity="O(1)", key_specs=(ks("RO", 1),)),
    cmd("lrange", 4, "readonly", acl="list", **_LIST, summary="Get a range of elements from a list",
        since="1.0.0",
        complexity="O(S+N) where S is the distance of start offset from HEAD for small lists, from "
                   "nearest end (HEAD or TAIL) for large lists; and N is the number of elements in "
                   "the specified range.", key_specs=(ks("RO access", 1),)),
    cmd("lindex", 3, "readonly", acl="list", **_LIST,
        summary="Get an element from a list by its index", since="1.0.0",
        complexity="O(N) where N is the number of elements to traverse to get to the element at "
                   "index. This makes asking for the first or the last element of the list O(1).",
        key_specs=(ks("RO access", 1),)),
    cmd("lset", 4, "write denyoom", acl="list", **_LIST,
        summary="Set the value of an element in a list by its index", since="1.0.0",
        complexity="O(N) where N is the length of the list. Setting either the first or the last "
                   "element of the list is O(1).", key_specs=(ks("RW update", 1),)),
    cmd("linsert", 5, "write denyoom", acl="list", **_LIST,
        summary="Insert an element before or after another element in a list", since="2.2.0",
        complexity="O(N) where N is the number of elements to traverse before seeing the value "
                   "pivot. This means that inserting somewhere on the left end on the list (head) "
                   "can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
        key_specs=(ks("RW insert", 1),)),
    cmd("lrem", 4, "write", acl="list", **_LIST, summary="Remove elements from a list", since="1.0.0",
        complexity="O(N+M) where N is the length of the list and M is the number of elements removed.",
        key_specs=(ks("RW delete", 1),)),
    cmd("ltrim", 4, "write", acl="list", **_LIST, summary="Trim a list to the specified range",
        since="1.0.0", complexity="O(N) where N is the number of elements to be removed by the operation.",
        key_specs=(ks("RW delete", 1),)),
    cmd("lpos", -3, "readonly", acl="list", **_LIST,
        summary="Return the index of matching elements on a list", since="6.0.6",
        complexity="O(N) where N is the number of elements in the list, for the average case. When "
                   "searching for elements near the head or the tail of the list, or when the MAXLEN "
                   "option is provided, the command may run in constant time.",
        key_specs=(ks("RO access", 1),)),
    cmd("lmove", 5, "write denyoom", acl="list", **_LIST,
        summary="Pop an element from a list, push it to another list and return it", since="6.2.0",
        complexity="O(1)", key_specs=_LIST_MOVE_KEYS),
    cmd("rpoplpush", 3, "write denyoom", acl="list", **_LIST,
        summary="Remove the last element in a list, prepend it to another list and return it",
        since="1.2.0", complexity="O(1)", key_specs=_LIST_MOVE_KEYS),
    cmd("lmpop", -4, "write movablekeys", acl="list", **_LIST, summary="Pop elements from a list",
        since="7.0.0", complexity=_LIST_MPOP, key_specs=(ks_keynum("RW access delete", 1, 0, 1, 1),)),
    cmd("blpop", -3, "write noscript blocking", acl="list", **_LIST,
        summary="Remove and get the first element in a list, or block until one is available",
        since="2.0.0", complexity="O(N) where N is the number of provided keys.",
        key_specs=(ks("RW access delete", 1, last_key=-2),)),
    cmd("brpop", -3, "write noscript blocking", acl="list", **_LIST,
        summary="Remove and get the last element in a list, or block until one is available",
        since="2.0.0", complexity="O(N) where N is the number of provided keys.",
        key_specs=(ks("RW access delete", 1, last_key=-2),)),
    cmd("blmove", 6, "write denyoom noscript blocking", acl="list", **_LIST,
        summary="Pop an element from a list, push it to another list and return it; or block until "
                "one is available", since="6.2.0", complexity="O(1)", key_specs=_LIST_MOVE_KEYS),
    cmd("brpoplpush", 4, "write denyoom noscript blocking", acl="list", **_LIST,
        summary="Pop an element from a list, push it to another list and return it; or block until "
                "one is available", since="2.2.0", complexity="O(1)", key_specs=_LIST_MOVE_KEYS),
    cmd("blmpop", -5, "write blocking movablekeys", acl="list", **_LIST,
        summary="Pop elements from a list, or block until one is available", since="7.0.0",
        complexity=_LIST_MPOP, key_specs=(ks_keynum("RW access delete", 2, 0, 1, 1),)),

    # --- sets (commands/sets.py) ------------------------------------------
    cmd("sadd", -3, "write denyoom fast", acl="set", **_SET,
        summary="Add one or more members to a set", since="1.0.0",
        complexity="O(1) for each element added, so O(N) to add N elements when the command is called "
                   "with multiple arguments.", key_specs=(ks("RW insert", 1),)),
    cmd("srem", -3, "write fast", acl="set", **_SET,
        summary="Remove one or more members from a set", since="1.0.0",
        complexity="O(N) where N is the number of members to be removed.", key_specs=(ks("RW delete", 1),)),
    cmd("smembers", 2, "readonly", acl="set", **_SET, summary="Get all the members in a set",
        since="1.0.0", complexity="O(N) where N is the set cardinality.",
        tips=("nondeterministic_output_order",), key_specs=(ks("RO access", 1),)),
    cmd("sismember", 3, "readonly fast", acl="set", **_SET,
        summary="Determine if a given value is a member of a set", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RO", 1),)),
    cmd("smismember", -3, "readonly fast", acl="set", **_SET,
        summary="Returns the membership associated with the given elements for a set", since="6.2.0",
        complexity="O(N) where N is the number of elements being checked for membership",
        key_specs=(ks("RO access", 1),)),
    cmd("scard", 2, "readonly fast", acl="set", **_SET, summary="Get the number of members in a set",
        since="1.0.0", complexity="O(1)", key_specs=(ks("RO", 1),)),
    cmd("spop", -2, "write fast", acl="set", **_SET,
        summary="Remove and return one or multiple random members from a set", since="1.0.0",
        complexity="Without the count argument O(1), otherwise O(N) where N is the value of the passed "
                   "count.", tips=("nondeterministic_output",), key_specs=(ks("RW access delete", 1),)),
    cmd("srandmember", -2, "readonly", acl="set", **_SET,
        summary="Get one or multiple random members from a set", since="1.0.0",
        complexity="Without the count argument O(1), otherwise O(N) where N is the absolute value of the "
                   "passed count.", tips=("nondeterministic_output",), key_specs=(ks("RO access", 1),)),
    cmd("smove", 4, "write fast", acl="set", **_SET, summary="Move a member from one set to another",
        since="1.0.0", complexity="O(1)", key_specs=(ks("RW access delete", 1), ks("RW insert", 2))),
    cmd("sinter", -2, "readonly", acl="set", **_SET, summary="Intersect multiple sets", since="1.0.0",
        complexity=_SET_INTER, tips=("nondeterministic_output_order",), key_specs=(ks("RO access", 1, -1),)),
    cmd("sintercard", -3, "readonly movablekeys", acl="set", **_SET,
        summary="Intersect multiple sets and return the cardinality of the result", since="7.0.0",
        complexity=_SET_INTER, key_specs=(ks_keynum("RO access", 1, 0, 1, 1),)),
    cmd("sinterstore", -3, "write denyoom", acl="set", **_SET,
        summary="Intersect multiple sets and store the resulting set in a key", since="1.0.0",
        complexity=_SET_INTER, key_specs=(ks("RW update", 1), ks("RO access", 2, -1))),
    cmd("sunion", -2, "readonly", acl="set", **_SET, summary="Add multiple sets", since="1.0.0",
        complexity=_SET_UNION, tips=("nondeterministic_output_order",), key_specs=(ks("RO access", 1, -1),)),
    cmd("sunionstore", -3, "write denyoom", acl="set", **_SET,
        summary="Add multiple sets and store the resulting set in a key", since="1.0.0",
        complexity=_SET_UNION, key_specs=(ks("OW update", 1), ks("RO access", 2, -1))),
    cmd("sdiff", -2, "readonly", acl="set", **_SET, summary="Subtract multiple sets", since="1.0.0",
        complexity=_SET_UNION, tips=("nondeterministic_output_order",), key_specs=(ks("RO access", 1, -1),)),
    cmd("sdiffstore", -3, "write denyoom", acl="set", **_SET,
        summary="Subtract multiple sets and store the resulting set in a key", since="1.0.0",
        complexity=_SET_UNION, key_specs=(ks("OW update", 1), ks("RO access", 2, -1))),
    cmd("sscan", -3, "readonly", acl="set", **_SET, summary="Incrementally iterate Set elements",
        since="2.8.0",
        complexity="O(1) for every call. O(N) for a complete iteration, including enough command "
                   "calls for the cursor to return back to 0. N is the number of elements inside "
                   "the collection..", tips=("nondeterministic_output",),
        key_specs=(ks("RO access", 1),)),

    # --- sorted sets (commands/zsets.py) ----------------------------------
    cmd("zadd", -4, "write denyoom fast", acl="sortedset", **_ZSET,
        summary="Add one or more members to a sorted set, or update its score if it already exists",
        since="1.2.0", complexity="O(log(N)) for each item added, where N is the number of elements in "
                                  "the sorted set.", key_specs=(ks("RW update", 1),)),
    cmd("zincrby", 4, "write denyoom fast", acl="sortedset", **_ZSET,
        summary="Increment the score of a member in a sorted set", since="1.2.0",
        complexity="O(log(N)) where N is the number of elements in the sorted set.",
        key_specs=(ks("RW access update", 1),)),
    cmd("zrem", -3, "write fast", acl="sortedset", **_ZSET,
        summary="Remove one or more members from a sorted set", since="1.2.0",
        complexity="O(M*log(N)) with N being the number of elements in the sorted set and M the number "
                   "of elements to be removed.", key_specs=(ks("RW delete", 1),)),
    cmd("zcard", 2, "readonly fast", acl="sortedset", **_ZSET,
        summary="Get the number of members in a sorted set", since="1.2.0", complexity="O(1)",
        key_specs=(ks("RO", 1),)),
    cmd("zcount", 4, "readonly fast", acl="sortedset", **_ZSET,
        summary="Count the members in a sorted set with scores within the given values", since="2.0.0",
        complexity="O(log(N)) with N being the number of elements in the sorted set.",
        key_specs=_ZSET_KEY_RO),
    cmd("zlexcount", 4, "readonly fast", acl="sortedset", **_ZSET,
        summary="Count the number of members in a sorted set between a given lexicographical range",
        since="2.8.9", complexity="O(log(N)) with N being the number of elements in the sorted set.",
        key_specs=_ZSET_KEY_RO),
    cmd("zscore", 3, "readonly fast", acl="sortedset", **_ZSET,
        summary="Get the score associated with the given member in a sorted set", since="1.2.0",
        complexity="O(1)", key_specs=_ZSET_KEY_RO),
    cmd("zmscore", -3, "readonly fast", acl="sortedset", **_ZSET,
        summary="Get the score associated with the given members in a sorted set", since="6.2.0",
        complexity="O(N) where N is the number of members being requested.", key_specs=_ZSET_KEY_RO),
    cmd("zrank", 3, "readonly fast", acl="sortedset", **_ZSET,
        summary="Determine the index of a member in a sorted set", since="2.0.0", complexity="O(log(N))",
        key_specs=_ZSET_KEY_RO),
    cmd("zrevrank", 3, "readonly fast", acl="sortedset", **_ZSET,
        summary="Determine the index of a member in a sorted set, with scores ordered from high to low",
        since="2.0.0", complexity="O(log(N))", key_specs=_ZSET_KEY_RO),
    cmd("zrange", -4, "readonly", acl="sortedset", **_ZSET,
        summary="Return a range of members in a sorted set", since="1.2.0",
        complexity="O(log(N)+M) with N being the number of elements in the sorted set and M the number "
                   "of elements returned.", key_specs=_ZSET_KEY_RO),
    cmd("zrangestore", -5, "write denyoom", acl="sortedset", **_ZSET,
        summary="Store a range of members from sorted set into another key", since="6.2.0",
        complexity="O(log(N)+M) with N being the number of elements in the sorted set and M the number "
                   "of elements stored into the destination key.",
        key_specs=(ks("OW update", 1), ks("RO access", 2))),
    cmd("zrangebyscore", -4, "readonly", acl="sortedset", **_ZSET,
        summary="Return a range of members in a sorted set, by score", since="1.0.5",
        complexity=_ZSET_RANGE, key_specs=_ZSET_KEY_RO),
    cmd("zrevrangebyscore", -4, "readonly", acl="sortedset", **_ZSET,
        summary="Return a range of members in a sorted set, by score, with scores ordered from high to low",
        since="2.2.0", complexity=_ZSET_RANGE, key_specs=_ZSET_KEY_RO),
    cmd("zrangebylex", -4, "readonly", acl="sortedset", **_ZSET,
        summary="Return a range of members in a sorted set, by lexicographical range", since="2.8.9",
        complexity=_ZSET_RANGE, key_specs=_ZSET_KEY_RO),
    cmd("zrevrangebylex", -4, "readonly", acl="sortedset", **_ZSET,
        summary="Return a range of members in a sorted set, by lexicographical range, ordered from higher "
                "to lower strings.", since="2.8.9", complexity=_ZSET_RANGE, key_specs=_ZSET_KEY_RO),
    cmd("zrevrange", -4, "readonly", acl="sortedset", **_ZSET,
        summary="Return a range of members in a sorted set, by index, with scores ordered from high to low",
        since="1.2.0", complexity="O(log(N)+M) with N being the number of elements in the sorted set and M "
                                  "the number of elements returned.", key_specs=_ZSET_KEY_RO),
    cmd("zremrangebyrank", 4, "write", acl="sortedset", **_ZSET,
        summary="Remove all members in a sorted set within the given indexes", since="2.0.0",
        complexity=_ZSET_REMOVE_RANGE, key_specs=(ks("RW delete", 1),)),
    cmd("zremrangebyscore", 4, "write", acl="sortedset", **_ZSET,
        summary="Remove all members in a sorted set within the given scores", since="1.2.0",
        complexity=_ZSET_REMOVE_RANGE, key_specs=(ks("RW delete", 1),)),
    cmd("zremrangebylex", 4, "write", acl="sortedset", **_ZSET,
        summary="Remove all members in a sorted set between the given lexicographical range", since="2.8.9",
        complexity=_ZSET_REMOVE_RANGE, key_specs=(ks("RW delete", 1),)),
    cmd("zpopmin", -2, "write fast", acl="sortedset", **_ZSET,
        summary="Remove and return members with the lowest scores in a sorted set", since="5.0.0",
        complexity=_ZSET_POP, key_specs=(ks("RW access delete", 1),)),
    cmd("zpopmax", -2, "write fast", acl="sortedset", **_ZSET,
        summary="Remove and return members with the highest scores in a sorted set", since="5.0.0",
        complexity=_ZSET_POP, key_specs=(ks("RW access delete", 1),)),
    cmd("zmpop", -4, "write movablekeys", acl="sortedset", **_ZSET,
        summary="Remove and return members with scores in a sorted set", since="7.0.0",
        complexity=_ZSET_MPOP, key_specs=(ks_keynum("RW access delete", 1, 0, 1, 1),)),
    cmd("bzpopmin", -3, "write noscript blocking fast", acl="sortedset", **_ZSET,
        summary="Remove and return the member with the lowest score from one or more sorted sets, or "
                "block until one is available", since="5.0.0", complexity=_ZSET_BZPOP,
        key_specs=(ks("RW access delete", 1, -2),)),
    cmd("bzpopmax", -3, "write noscript blocking fast", acl="sortedset", **_ZSET,
        summary="Remove and return the member with the highest score from one or more sorted sets, or "
                "block until one is available", since="5.0.0", complexity=_ZSET_BZPOP,
        key_specs=(ks("RW access delete", 1, -2),)),
    cmd("bzmpop", -5, "write blocking movablekeys", acl="sortedset", **_ZSET,
        summary="Remove and return members with scores in a sorted set or block until one is available",
        since="7.0.0", complexity=_ZSET_MPOP, key_specs=(ks_keynum("RW access delete", 2, 0, 1, 1),)),
    cmd("zrandmember", -2, "readonly", acl="sortedset", **_ZSET,
        summary="Get one or multiple random elements from a sorted set", since="6.2.0",
        complexity="O(N) where N is the number of elements returned", tips=("nondeterministic_output",),
        key_specs=_ZSET_KEY_RO),
    cmd("zunion", -3, "readonly movablekeys", acl="sortedset", **_ZSET, summary="Add multiple sorted sets",
        since="6.2.0", complexity=_ZSET_UNION, key_specs=_ZSET_INPUT_KEYS),
    cmd("zinter", -3, "readonly movablekeys", acl="sortedset", **_ZSET,
        summary="Intersect multiple sorted sets", since="6.2.0", complexity=_ZSET_INTER,
        key_specs=_ZSET_INPUT_KEYS),
    cmd("zdiff", -3, "readonly movablekeys", acl="sortedset", **_ZSET, summary="Subtract multiple sorted sets",
        since="6.2.0", complexity=_ZSET_DIFF, key_specs=_ZSET_INPUT_KEYS),
    cmd("zunionstore", -4, "write denyoom movablekeys", acl="sortedset", **_ZSET,
        summary="Add multiple sorted sets and store the resulting sorted set in a new key", since="2.0.0",
        complexity="O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M "
                   "being the number of elements in the resulting sorted set.", key_specs=_ZSET_STORE_KEYS),
    cmd("zinterstore", -4, "write denyoom movablekeys", acl="sortedset", **_ZSET,
        summary="Intersect multiple sorted sets and store the resulting sorted set in a new key",
        since="2.0.0", complexity=_ZSET_INTER, key_specs=_ZSET_STORE_KEYS),
    cmd("zdiffstore", -4, "write denyoom movablekeys", acl="sortedset", **_ZSET,
        summary="Subtract multiple sorted sets and store the resulting sorted set in a new key",
        since="6.2.0", complexity=_ZSET_DIFF, key_specs=_ZSET_STORE_KEYS),
    cmd("zintercard", -3, "readonly movablekeys", acl="sortedset", **_ZSET,
        summary="Intersect multiple sorted sets and return the cardinality of the result", since="7.0.0",
        complexity="O(N*K) worst case with N being the smallest input sorted set, K being the number of "
                   "input sorted sets.", key_specs=_ZSET_INPUT_KEYS),
    cmd("zscan", -3, "readonly", acl="sortedset", **_ZSET,
        summary="Incrementally iterate sorted sets elements and associated scores", since="2.8.0",
        complexity="O(1) for every call. O(N) for a complete iteration, including enough command "
                   "calls for the cursor to return back to 0. N is the number of elements inside "
                   "the collection..", tips=("nondeterministic_output",), key_specs=_ZSET_KEY_RO),

    # --- geo (commands/geo.py) --------------------------------------------
    cmd("geoadd", -5, "write denyoom", acl="geo", **_GEO,
        summary="Add one or more geospatial items in the geospatial index represented using a sorted set",
        since="3.2.0", complexity="O(log(N)) for each item added, where N is the number of elements in "
                                  "the sorted set.", key_specs=(ks("RW update", 1),)),
    cmd("geodist", -4, "readonly", acl="geo", **_GEO,
        summary="Returns the distance between two members of a geospatial index", since="3.2.0",
        complexity="O(log(N))", key_specs=(ks("RO access", 1),)),
    cmd("geohash", -2, "readonly", acl="geo", **_GEO,
        summary="Returns members of a geospatial index as standard geohash strings", since="3.2.0",
        complexity="O(log(N)) for each member requested, where N is the number of elements in the "
                   "sorted set.", key_specs=(ks("RO access", 1),)),
    cmd("geopos", -2, "readonly", acl="geo", **_GEO,
        summary="Returns longitude and latitude of members of a geospatial index", since="3.2.0",
        complexity="O(N) where N is the number of members requested.", key_specs=(ks("RO access", 1),)),
    cmd("geosearch", -7, "readonly", acl="geo", **_GEO,
        summary="Query a sorted set representing a geospatial index to fetch members inside an area of a "
                "box or a circle.", since="6.2.0", complexity=_GEO_SEARCH, key_specs=(ks("RO access", 1),)),
    cmd("geosearchstore", -8, "write denyoom", acl="geo", **_GEO,
        summary="Query a sorted set representing a geospatial index to fetch members inside an area of a "
                "box or a circle, and store the result in another key.", since="6.2.0",
        complexity=_GEO_SEARCH, key_specs=(ks("OW update", 1), ks("RO access", 2))),
    cmd("georadius", -6, "write denyoom movablekeys", acl="geo", **_GEO,
        summary="Query a sorted set representing a geospatial index to fetch members matching a given "
                "maximum distance from a point", since="3.2.0", complexity=_GEO_RADIUS,
        key_specs=_georadius_keys(6)),
    cmd("georadiusbymember", -5, "write denyoom movablekeys", acl="geo", **_GEO,
        summary="Query a sorted set representing a geospatial index to fetch members matching a given "
                "maximum distance from a member", since="3.2.0", complexity=_GEO_RADIUS,
        key_specs=_georadius_keys(5)),
    cmd("georadius_ro", -6, "readonly", acl="geo", **_GEO, summary="A read-only variant for GEORADIUS",
        since="3.2.10", complexity=_GEO_RADIUS, key_specs=(ks("RO access", 1),)),
    cmd("georadiusbymember_ro", -5, "readonly", acl="geo", **_GEO,
        summary="A read-only variant for GEORADIUSBYMEMBER", since="3.2.10", complexity=_GEO_RADIUS,
        key_specs=(ks("RO access", 1),)),

    # --- strings (commands/strings.py) ------------------------------------
    cmd("get", 2, "readonly fast", acl="string", group="string", fast_op=FAST_GET_OP,
        summary="Get the value of a key", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RO access", 1),)),
    cmd("set", -3, "write denyoom", acl="string", group="string", fast_op=FAST_SET_OP,
        summary="Set the string value of a key", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RW access update variable_flags", 1,
                      notes="RW and ACCESS due to the optional `GET` argument"),),
        key_access=_set_key_access, value_args=(2, 0)),
    cmd("setnx", 3, "write denyoom fast", acl="string", group="string",
        summary="Set the value of a key, only if the key does not exist", since="1.0.0",
        complexity="O(1)", key_specs=(ks("OW insert", 1),),
        value_args=(2, 0)),
    cmd("setex", 4, "write denyoom", acl="string", group="string",
        summary="Set the value and expiration of a key", since="2.0.0", complexity="O(1)",
        key_specs=(ks("OW update", 1),),
        value_args=(3, 0)),
    cmd("psetex", 4, "write denyoom", acl="string", group="string",
        summary="Set the value and expiration in milliseconds of a key", since="2.6.0",
        complexity="O(1)", key_specs=(ks("OW update", 1),),
        value_args=(3, 0)),
    cmd("mget", -2, "readonly fast", acl="string", group="string", fast_op=FAST_MGET_OP,
        summary="Get the values of all the given keys", since="1.0.0",
        complexity="O(N) where N is the number of keys to retrieve.",
        tips=("request_policy:multi_shard",), key_specs=(ks("RO access", 1, -1),)),
    cmd("mset", -3, "write denyoom", acl="string", group="string",
        summary="Set multiple keys to multiple values", since="1.0.1",
        complexity="O(N) where N is the number of keys to set.",
        tips=("request_policy:multi_shard", "response_policy:all_succeeded"),
        key_specs=(ks("OW update", 1, -1, 2),),
        value_args=(2, 2)),
    cmd("msetnx", -3, "write denyoom", acl="string", group="string",
        summary="Set multiple keys to multiple values, only if none of the keys exist", since="1.0.1",
        complexity="O(N) where N is the number of keys to set.",
        tips=("request_policy:multi_shard", "response_policy:agg_min"),
        key_specs=(ks("OW insert", 1, -1, 2),),
        value_args=(2, 2)),
    cmd("getdel", 2, "write fast", acl="string", group="string",
        summary="Get the value of a key and delete the key", since="6.2.0", complexity="O(1)",
        key_specs=(ks("RW access delete", 1),)),
    cmd("getex", -2, "write fast", acl="string", group="string",
        summary="Get the value of a key and optionally set its expiration", since="6.2.0",
        complexity="O(1)",
        key_specs=(ks("RW access update", 1, notes="RW and UPDATE because it changes the TTL"),)),
    cmd("getset", 3, "write denyoom fast", acl="string", group="string",
        summary="Set the string value of a key and return its old value", since="1.0.0",
        complexity="O(1)", key_specs=(ks("RW access update", 1),),
        value_args=(2, 0)),
    cmd("append", 3, "write denyoom fast", acl="string", group="string",
        summary="Append a value to a key", since="2.0.0", complexity="O(1). The amortized time "
        "complexity is O(1) assuming the appended value is small and the already present value is of "
        "any size, since the dynamic string library used by Redis will double the free space available "
        "on every reallocation.", key_specs=(ks("RW insert", 1),)),
    cmd("strlen", 2, "readonly fast", acl="string", group="string",
        summary="Get the length of the value stored in a key", since="2.2.0", complexity="O(1)",
        key_specs=(ks("RO", 1),)),
    cmd("getrange", 4, "readonly", acl="string", group="string",
        summary="Get a substring of the string stored at a key", since="2.4.0",
        complexity="O(N) where N is the length of the returned string. The complexity is ultimately "
        "determined by the returned length, but because creating a substring from an existing string "
        "is very cheap, it can be considered O(1) for small strings.", key_specs=(ks("RO access", 1),)),
    cmd("setrange", 4, "write denyoom", acl="string", group="string",
        summary="Overwrite part of a string at key starting at the specified offset", since="2.2.0",
        complexity="O(1), not counting the time taken to copy the new string in place. Usually, this "
        "string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with "
        "M being the length of the value argument.", key_specs=(ks("RW update", 1),)),
    cmd("substr", 4, "readonly", acl="string", group="string",
        summary="Get a substring of the string stored at a key", since="1.0.0",
        complexity="O(N) where N is the length of the returned string. The complexity is ultimately "
        "determined by the returned length, but because creating a substring from an existing string "
        "is very cheap, it can be considered O(1) for small strings.", key_specs=(ks("RO access", 1),)),
    cmd("incr", 2, "write denyoom fast", acl="string", group="string", fast_op=FAST_INCR_OP,
        summary="Increment the integer value of a key by one", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RW access update", 1),)),
    cmd("decr", 2, "write denyoom fast", acl="string", group="string", fast_op=FAST_DECR_OP,
        summary="Decrement the integer value of a key by one", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RW access update", 1),)),
    cmd("incrby", 3, "write denyoom fast", acl="string", group="string", fast_op=FAST_INCRBY_OP,
        summary="Increment the integer value of a key by the given amount", since="1.0.0",
        complexity="O(1)", key_specs=(ks("RW access update", 1),)),
    cmd("decrby", 3, "write denyoom fast", acl="string", group="string", fast_op=FAST_DECRBY_OP,
        summary="Decrement the integer value of a key by the given number", since="1.0.0",
        complexity="O(1)", key_specs=(ks("RW access update", 1),)),
    cmd("incrbyfloat", 3, "write denyoom fast", acl="string", group="string",
        summary="Increment the float value of a key by the given amount", since="2.6.0",
        complexity="O(1)", key_specs=(ks("RW access update", 1),)),

    cmd("lcs", -3, "readonly", acl="string", group="string",
        summary="Find longest common substring", since="7.0.0",
        complexity="O(N*M) where N and M are the lengths of s1 and s2, respectively",
        key_specs=(ks("RO access", 1, 1),)),

    # --- bitmaps (commands/bitmaps.py) ------------------------------------
    cmd("setbit", 4, "write denyoom", acl="bitmap", group="bitmap",
        summary="Sets or clears the bit at offset in the string value stored at key", since="2.2.0",
        complexity="O(1)", key_specs=(ks("RW access update", 1),)),
    cmd("getbit", 3, "readonly fast", acl="bitmap", group="bitmap",
        summary="Returns the bit value at offset in the string value stored at key", since="2.2.0",
        complexity="O(1)", key_specs=(ks("RO access", 1),)),
    cmd("bitcount", -2, "readonly", acl="bitmap", group="bitmap",
        summary="Count set bits in a string", since="2.6.0", complexity="O(N)",
        key_specs=(ks("RO access", 1),)),
    cmd("bitpos", -3, "readonly", acl="bitmap", group="bitmap",
        summary="Find first bit set or clear in a string", since="2.8.7", complexity="O(N)",
        key_specs=(ks("RO access", 1),)),
    cmd("bitop", -4, "write denyoom", acl="bitmap", group="bitmap",
        summary="Perform bitwise operations between strings", since="2.6.0", complexity="O(N)",
        key_specs=(ks("OW update", 2), ks("RO access", 3, -1))),
    cmd("bitfield", -2, "write denyoom", acl="bitmap", group="bitmap",
        summary="Perform arbitrary bitfield integer operations on strings", since="3.2.0",
        complexity="O(1) for each subcommand specified",
        key_specs=(ks("RW access update variable_flags", 1,
                      notes="This command allows both access and modification of the key"),),
        key_access=_bitfield_key_access),
    cmd("bitfield_ro", -2, "readonly fast", acl="bitmap", group="bitmap",
        summary="Perform arbitrary bitfield integer operations on strings. Read-only variant of "
        "BITFIELD", since="6.0.0", complexity="O(1) for each subcommand specified",
        key_specs=(ks("RO access", 1),)),

    # --- HyperLogLog (commands/hyperloglog.py) ------------------------------
    cmd("pfadd", -2, "write denyoom fast", acl="hyperloglog", group="hyperloglog",
        summary="Adds the specified elements to the specified HyperLogLog.", since="2.8.9",
        complexity="O(1) to add every element.", key_specs=(ks("RW insert", 1),)),
    cmd("pfcount", -2, "readonly", acl="hyperloglog", group="hyperloglog",
        summary="Return the approximated cardinality of the set(s) observed by the HyperLogLog at "
        "key(s).", since="2.8.9", complexity="O(1) with a very small average constant time when "
        "called with a single key. O(N) with N being the number of keys, and much bigger constant "
        "times, when called with multiple keys.",
        key_specs=(ks("RW access", 1, -1, notes="RW because it may change the internal representation "
                      "of the key, and propagate to replicas"),)),
    cmd("pfmerge", -2, "write denyoom", acl="hyperloglog", group="hyperloglog",
        summary="Merge N different HyperLogLogs into a single one.", since="2.8.9",
        complexity="O(N) to merge N HyperLogLogs, but with high constant times.",
        key_specs=(ks("RW access insert", 1), ks("RO access", 2, -1))),
    cmd("pfdebug", 3, "write denyoom admin", acl="hyperloglog", group="hyperloglog",
        summary="Internal commands for debugging HyperLogLog values", since="2.8.9",
        complexity="N/A", key_specs=(ks("RW access", 2),)),
    cmd("pfselftest", 1, "admin", acl="hyperloglog", group="hyperloglog",
        summary="An internal command for testing HyperLogLog values", since="2.8.9",
        complexity="N/A"),

    # --- serialized values and their transfer (commands/migration.py) ------
    cmd("dump", 2, "readonly", acl="keyspace", group="generic", **_MIGRATION,
        summary="Return a serialized version of the value stored at the specified key.",
        since="2.6.0", complexity="O(1) to access the key and additional O(N*M) to serialize it, "
        "where N is the number of Redis objects composing the value and M their average size. For "
        "small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply "
        "O(1).", tips=("nondeterministic_output",), key_specs=(ks("RO access", 1),)),
    cmd("restore", -4, "write denyoom", acl="keyspace dangerous", group="generic", **_MIGRATION,
        summary="Create a key using the provided serialized value, previously obtained using DUMP.",
        since="2.6.0", complexity=_RESTORE_COMPLEXITY, key_specs=(ks("OW update", 1),)),
    cmd("restore-asking", -4, "write denyoom asking", acl="keyspace dangerous", group="server",
        **_MIGRATION, summary="An internal command for migrating keys in a cluster", since="3.0.0",
        complexity=_RESTORE_COMPLEXITY, key_specs=(ks("OW update", 1),)),
    cmd("migrate", -6, "write movablekeys", acl="keyspace dangerous", group="generic", **_MIGRATION,
        summary="Atomically transfer a key from a Redis instance to another one.", since="2.6.0",
        complexity="This command actually executes a DUMP+DEL in the source instance, and a RESTORE "
        "in the target instance. See the pages of these commands for time complexity. Also an O(N) "
        "data transfer between the two instances is performed.", tips=("nondeterministic_output",),
        key_specs=(ks("RW access delete", 3),
                   ks_keyword("RW access delete incomplete", "KEYS", -2, last_key=-1)),
        get_keys=_migrate_keys),

    # --- sorting (commands/sort.py) ----------------------------------------
    cmd("sort", -2, "write denyoom movablekeys", acl="set sortedset list dangerous", **_SORT,
        summary="Sort the elements in a list, set or sorted set", since="1.0.0",
        key_specs=(ks("RO access", 1), _SORT_BY_GET_KEYS,
                   ks_unknown("OW update", notes="For the optional STORE keyword. It is marked 'unknown' "
                              "because the keyword can appear anywhere in the argument array")),
        get_keys=_sort_keys),
    cmd("sort_ro", -2, "readonly movablekeys", acl="set sortedset list dangerous", **_SORT,
        summary="Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
        since="7.0.0", key_specs=(ks("RO access", 1), _SORT_BY_GET_KEYS), get_keys=_sort_ro_keys),

    # --- keyspace (commands/keys.py) --------------------------------------
    cmd("del", -2, "write", acl="keyspace", group="generic", fast_op=FAST_DEL_OP, summary="Delete a key",
        since="1.0.0", complexity="O(N) where N is the number of keys that will be removed. When a key "
        "to remove holds a value other than a string, the individual complexity for this key is O(M) "
        "where M is the number of elements in the list, set, sorted set or hash. Removing a single key "
        "that holds a string value is O(1).",
        tips=("request_policy:multi_shard", "response_policy:agg_sum"),
        key_specs=(ks("RM delete", 1, -1),)),
    cmd("unlink", -2, "write fast", acl="keyspace", group="generic",
        summary="Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non "
        "blocking.", since="4.0.0", complexity="O(1) for each key removed regardless of its size. Then "
        "the command does O(N) work in a different thread in order to reclaim memory, where N is the "
        "number of allocations the deleted objects where composed of.",
        tips=("request_policy:multi_shard", "response_policy:agg_sum"),
        key_specs=(ks("RM delete", 1, -1),)),
    cmd("exists", -2, "readonly fast", acl="keyspace", group="generic", fast_op=FAST_EXISTS_OP,
        summary="Determine if a key exists", since="1.0.0",
        complexity="O(N) where N is the number of keys to check.",
        tips=("request_policy:multi_shard", "response_policy:agg_sum"), key_specs=(ks("RO", 1, -1),)),
    cmd("type", 2, "readonly fast", acl="keyspace", group="generic",
        summary="Determine the type stored at key", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RO", 1),)),
    cmd("expire", -3, "write fast", acl="keyspace", group="generic", fast_op=FAST_EXPIRE_OP,
        summary="Set a key's time to live in seconds", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RW update", 1),)),
    cmd("pexpire", -3, "write fast", acl="keyspace", group="generic",
        summary="Set a key's time to live in milliseconds", since="2.6.0", complexity="O(1)",
        key_specs=(ks("RW update", 1),)),
    cmd("expireat", -3, "write fast", acl="keyspace", group="generic",
        summary="Set the expiration for a key as a UNIX timestamp", since="1.2.0", complexity="O(1)",
        key_specs=(ks("RW update", 1),)),
    cmd("pexpireat", -3, "write fast", acl="keyspace", group="generic",
        summary="Set the expiration for a key as a UNIX timestamp specified in milliseconds",
        since="2.6.0", complexity="O(1)", key_specs=(ks("RW update", 1),)),
    cmd("ttl", 2, "readonly fast", acl="keyspace", group="generic", fast_op=FAST_TTL_OP,
        summary="Get the time to live for a key in seconds", since="1.0.0", complexity="O(1)",
        tips=("nondeterministic_output",), key_specs=(ks("RO access", 1),)),
    cmd("pttl", 2, "readonly fast", acl="keyspace", group="generic", fast_op=FAST_PTTL_OP,
        summary="Get the time to live for a key in milliseconds", since="2.6.0", complexity="O(1)",
        tips=("nondeterministic_output",), key_specs=(ks("RO access", 1),)),
    cmd("expiretime", 2, "readonly fast", acl="keyspace", group="generic",
        summary="Get the expiration Unix timestamp for a key", since="7.0.0", complexity="O(1)",
        key_specs=(ks("RO access", 1),)),
    cmd("pexpiretime", 2, "readonly fast", acl="keyspace", group="generic",
        summary="Get the expiration Unix timestamp for a key in milliseconds", since="7.0.0",
        complexity="O(1)", key_specs=(ks("RO access", 1),)),
    cmd("persist", 2, "write fast", acl="keyspace", group="generic",
        summary="Remove the expiration from a key", since="2.2.0", complexity="O(1)",
        key_specs=(ks("RW update", 1),)),
    cmd("keys", 2, "readonly", acl="keyspace dangerous", group="generic",
        summary="Find all keys matching the given pattern", since="1.0.0",
        complexity="O(N) with N being the number of keys in the database, under the assumption that "
        "the key names in the database and the given pattern have limited length.",
        tips=("request_policy:all_shards", "nondeterministic_output_order")),
    cmd("scan", -2, "readonly", acl="keyspace", group="generic",
        summary="Incrementally iterate the keys space", since="2.8.0", complexity="O(1) for every "
        "call. O(N) for a complete iteration, including enough command calls for the cursor to return "
        "back to 0. N is the number of elements inside the collection.",
        tips=("nondeterministic_output", "request_policy:special")),
    cmd("randomkey", 1, "readonly", acl="keyspace", group="generic",
        summary="Return a random key from the keyspace", since="1.0.0", complexity="O(1)",
        tips=("request_policy:all_shards", "nondeterministic_output")),
    cmd("rename", 3, "write", acl="keyspace", group="generic", summary="Rename a key",
        since="1.0.0", complexity="O(1)", key_specs=(ks("RW access delete", 1), ks("OW update", 2))),
    cmd("renamenx", 3, "write fast", acl="keyspace", group="generic",
        summary="Rename a key, only if the new key does not exist", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RW access delete", 1), ks("OW insert", 2))),
    cmd("copy", -3, "write denyoom", acl="keyspace", group="generic", summary="Copy a key",
        since="6.2.0", complexity="O(N) worst case for collections, where N is the number of nested "
        "items. O(1) for string values.", key_specs=(ks("RO access", 1), ks("OW update", 2))),
    cmd("move", 3, "write fast", acl="keyspace", group="generic",
        summary="Move a key to another database", since="1.0.0", complexity="O(1)",
        key_specs=(ks("RW access update", 1),)),
    cmd("touch", -2, "readonly fast", acl="keyspace", group="generic",
        summary="Alters the last access time of a key(s). Returns the number of existing keys "
        "specified.", since="3.2.1",
        complexity="O(N) where N is the number of keys that will be touched.",
        tips=("request_policy:multi_shard", "response_policy:agg_sum"), key_specs=(ks("RO", 1, -1),)),
    cmd("object", -2, group="generic", summary="A container for object introspection commands",
        since="2.2.3", complexity="Depends on subcommand."),
    cmd("object|encoding", 3, "readonly", acl="keyspace", group="generic",
        summary="Inspect the internal encoding of a Redis object", since="2.2.3", complexity="O(1)",
        tips=("nondeterministic_output",), key_specs=(ks("RO", 2),)),
    cmd("object|freq", 3, "readonly", acl="keyspace", group="generic",
        summary="Get the logarithmic access frequency counter of a Redis object", since="4.0.0",
        complexity="O(1)", tips=("nondeterministic_output",), key_specs=(ks("RO", 2),)),
    cmd("object|help", 2, "loading stale", acl="keyspace", group="generic",
        summary="Show helpful text about the different subcommands", since="6.2.0", complexity="O(1)"),
    cmd("object|idletime", 3, "readonly", acl="keyspace", group="generic",
        summary="Get the time since a Redis object was last accessed", since="2.2.3", complexity="O(1)",
        tips=("nondeterministic_output",), key_specs=(ks("RO", 2),)),
    cmd("object|refcount", 3, "readonly", acl="keyspace", group="generic",
        summary="Get the number of references to the value of the key", since="2.2.3",
        complexity="O(1)", tips=("nondeterministic_output",), key_specs=(ks("RO", 2),)),
    cmd("dbsize", 1, "readonly fast", acl="keyspace", group="server", family="keys",
        summary="Return the number of keys in the selected database", since="1.0.0", complexity="O(1)",
        tips=("request_policy:all_shards", "response_policy:agg_sum")),
    cmd("flushdb", -1, "write", acl="keyspace dangerous", group="server", family="keys",
        audit_event="flushdb", summary="Remove all keys from the current database", since="1.0.0",
        complexity="O(N) where N is the number of keys in the selected database",
        tips=("request_policy:all_shards", "response_policy:all_succeeded")),
    cmd("flushall", -1, "write", acl="keyspace dangerous", group="server", family="keys",
        audit_event="flushall", summary="Remove all keys from all databases", since="1.0.0",
        complexity="O(N) where N is the total number of keys in all databases",
        tips=("request_policy:all_shards", "response_policy:all_succeeded")),
    cmd("swapdb", 3, "write fast", acl="keyspace dangerous", group="server", family="keys",
        summary="Swaps two Redis databases", since="4.0.0", complexity="O(N) where N is the count of "
        "clients watching or blocking on keys from both databases."),
    cmd("memory", -2, group="server", family="keys",
        summary="A container for memory diagnostics commands", since="4.0.0",
        complexity="Depends on subcommand."),
    cmd("memory|usage", -3, "readonly", group="server", family="keys",
        summary="Estimate the memory usage of a key", since="4.0.0",
        complexity="O(N) where N is the number of samples.", key_specs=(ks("RO", 2),)),
    cmd("memory|help", 2, "loading stale", group="server", family="keys",
        summary="Show helpful text about the different subcommands", since="4.0.0", complexity="O(1)"),
    # The arena is the allocator these report on (commands/server.py, metrics.py).
    cmd("memory|doctor", 2, group="server", summary="Outputs memory problems report", since="4.0.0",
        complexity="O(1)", tips=_MEMORY_REPORT_TIPS),
    cmd("memory|stats", 2, group="server", summary="Show memory usage details", since="4.0.0",
        complexity="O(1)", tips=_MEMORY_REPORT_TIPS),
    cmd("memory|malloc-stats", 2, group="server", summary="Show allocator internal stats",
        since="4.0.0", complexity="Depends on how much memory is allocated, could be slow",
        tips=_MEMORY_REPORT_TIPS),
    cmd("memory|purge", 2, group="server", summary="Ask the allocator to release memory",
        since="4.0.0", complexity="Depends on how much memory is allocated, could be slow",
        tips=("request_policy:all_shards", "response_policy:all_succeeded")),
    # --- cluster (commands/cluster.py, docs/cluster.md) ------------------
cmd("asking", 1, "fast", acl="connection", **_CLUSTER,
        summary="Sent by cluster clients after an -ASK redirect", since="3.0.0", complexity="O(1)"),
    cmd("readonly", 1, "loading stale fast", acl="connection", **_CLUSTER,
        summary="Enables read queries for a connection to a cluster replica node", since="3.0.0",
        complexity="O(1)"),
    cmd("readwrite", 1, "loading stale fast", acl="connection", **_CLUSTER,
        summary="Disables read queries for a connection to a cluster replica node", since="3.0.0",
        complexity="O(1)"),
    cmd("cluster", -2, **_CLUSTER,
        summary="A container for cluster commands", since="3.0.0",
        complexity="Depends on subcommand."),
    cmd("cluster|addslots", -3, "admin stale no_async_loading", **_CLUSTER,
        summary="Assign new hash slots to receiving node", since="3.0.0",
        complexity="O(N) where N is the total number of hash slot arguments"),
    cmd("cluster|addslotsrange", -4, "admin stale no_async_loading", **_CLUSTER,
        summary="Assign new hash slots to receiving node", since="7.0.0",
        complexity="O(N) where N is the total number of the slots between the start slot and end slot arguments."),
    cmd("cluster|bumpepoch", 2, "admin stale no_async_loading", **_CLUSTER,
        summary="Advance the cluster config epoch", since="3.0.0",
        complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("cluster|count-failure-reports", 3, "admin stale", **_CLUSTER,
        summary="Return the number of failure reports active for a given node", since="3.0.0",
        complexity="O(N) where N is the number of failure reports",
        tips=("nondeterministic_output",)),
    cmd("cluster|countkeysinslot", 3, "stale", **_CLUSTER,
        summary="Return the number of local keys in the specified hash slot", since="3.0.0",
        complexity="O(1)"),
    cmd("cluster|delslots", -3, "admin stale no_async_loading", **_CLUSTER,
        summary="Set hash slots as unbound in receiving node", since="3.0.0",
        complexity="O(N) where N is the total number of hash slot arguments"),
    cmd("cluster|delslotsrange", -4, "admin stale no_async_loading", **_CLUSTER,
        summary="Set hash slots as unbound in receiving node", since="7.0.0",
        complexity="O(N) where N is the total number of the slots between the start slot and end slot arguments."),
    cmd("cluster|failover", -2, "admin stale no_async_loading", **_CLUSTER,
        summary="Forces a replica to perform a manual failover of its master.", since="3.0.0",
        complexity="O(1)"),
    cmd("cluster|flushslots", 2, "admin stale no_async_loading", **_CLUSTER,
        summary="Delete a node's own slots information", since="3.0.0", complexity="O(1)"),
    cmd("cluster|forget", 3, "admin stale no_async_loading", **_CLUSTER,
        summary="Remove a node from the nodes table", since="3.0.0", complexity="O(1)"),
    cmd("cluster|getkeysinslot", 4, "stale", **_CLUSTER,
        summary="Return local key names in the specified hash slot", since="3.0.0",
        complexity="O(log(N)) where N is the number of requested keys",
        tips=("nondeterministic_output",)),
    cmd("cluster|help", 2, "loading stale", **_CLUSTER,
        summary="Show helpful text about the different subcommands", since="5.0.0",
        complexity="O(1)"),
    cmd("cluster|info", 2, "stale", **_CLUSTER,
        summary="Provides info about Redis Cluster node state", since="3.0.0",
        complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("cluster|keyslot", 3, "stale", **_CLUSTER,
        summary="Returns the hash slot of the specified key", since="3.0.0",
        complexity="O(N) where N is the number of bytes in the key"),
    cmd("cluster|links", 2, "stale", **_CLUSTER,
        summary="Returns a list of all TCP links to and from peer nodes in cluster", since="7.0.0",
        complexity="O(N) where N is the total number of Cluster nodes",
        tips=("nondeterministic_output",)),
    cmd("cluster|meet", -4, "admin stale no_async_loading", **_CLUSTER,
        summary="Force a node cluster to handshake with another node", since="3.0.0",
        complexity="O(1)"),
    cmd("cluster|myid", 2, "stale", **_CLUSTER,
        summary="Return the node id", since="3.0.0", complexity="O(1)"),
    cmd("cluster|nodes", 2, "stale", **_CLUSTER,
        summary="Get Cluster config for the node", since="3.0.0",
        complexity="O(N) where N is the total number of Cluster nodes",
        tips=("nondeterministic_output",)),
    cmd("cluster|replicas", 3, "admin stale", **_CLUSTER,
        summary="List replica nodes of the specified master node", since="5.0.0",
        complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("cluster|replicate", 3, "admin stale no_async_loading", **_CLUSTER,
        summary="Reconfigure a node as a replica of the specified master node", since="3.0.0",
        complexity="O(1)"),
    cmd("cluster|reset", -2, "admin noscript stale", **_CLUSTER,
        summary="Reset a Redis Cluster node", since="3.0.0",
        complexity="O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect."),
    cmd("cluster|saveconfig", 2, "admin stale no_async_loading", **_CLUSTER,
        summary="Forces the node to save cluster state on disk", since="3.0.0", complexity="O(1)"),
    cmd("cluster|set-config-epoch", 3, "admin stale no_async_loading", **_CLUSTER,
        summary="Set the configuration epoch in a new node", since="3.0.0", complexity="O(1)"),
    cmd("cluster|setslot", -4, "admin stale no_async_loading", **_CLUSTER,
        summary="Bind a hash slot to a specific node", since="3.0.0", complexity="O(1)"),
    cmd("cluster|shards", 2, "stale", **_CLUSTER,
        summary="Get array of cluster slots to node mappings", since="7.0.0",
        complexity="O(N) where N is the total number of cluster nodes",
        tips=("nondeterministic_output",)),
    cmd("cluster|slaves", 3, "admin stale", **_CLUSTER,
        summary="List replica nodes of the specified master node", since="3.0.0",
        complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("cluster|slots", 2, "stale", **_CLUSTER,
        summary="Get array of Cluster slot to node mappings", since="3.0.0",
        complexity="O(N) where N is the total number of Cluster nodes",
        tips=("nondeterministic_output",)),
]
