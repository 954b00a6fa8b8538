"""Every command cxlredis implements, declared once, as data.

This table drives dispatch (name → handler, arity), the replies of COMMAND,
COMMAND INFO/DOCS/LIST/COUNT/GETKEYS, and ACL category checks. The facts
(arity, flags, key positions, categories, docs) are Redis 7.0's, so clients
that introspect the server see what they expect.

A handler is `cmd_<name>` (with `|` → `_` and `-` → `_`) in the module of the
command's family (see FAMILY_MODULES); a container command (CLIENT, CONFIG...)
lists its subcommands as `container|sub` entries.
"""
from dataclasses import dataclass, field

# Redis's ACL categories in their bit order: COMMAND INFO lists a command's
# categories in this order.
ACL_CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
    "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
    "blocking", "dangerous", "connection", "transaction", "scripting",
)

# Which module holds the handlers of each family.
FAMILY_MODULES = {
    "string": "strings",
    "generic": "keys",
    "hash": "hashes",
    "connection": "connection",
    "server": "server",
    "transactions": "transactions",
}


@dataclass(frozen=True)
class KeySpec:
    """A Redis 7 key specification: begin_search by index, find_keys by range."""

    flags: tuple
    index: int
    last_key: int = 0
    key_step: int = 1
    limit: int = 0
    notes: str = ""


@dataclass
class CommandSpec:
    name: str                    # lowercase; subcommands as "container|sub"
    arity: int                   # Redis convention: -N means "at least N"
    flags: tuple
    first_key: int = 0
    last_key: int = 0
    key_step: int = 0
    categories: tuple = ()       # explicit categories; implicit ones derive from flags
    group: str = "generic"
    summary: str = ""
    since: str = ""
    complexity: str = ""
    tips: tuple = ()
    key_specs: tuple = ()
    family: str = ""             # handler module; defaults from the group
    value_args: tuple = ()       # (first, step): arguments that may go straight into arena slots
    subcommands: dict = field(default_factory=dict)
    handler: object = None

    @property
    def container(self):
        return self.name.split("|", 1)[0] if "|" in self.name else None

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


def cmd(name, arity, flags="", keys=(0, 0, 0), acl="", **docs):
    first, last, step = keys
    return CommandSpec(name=name, arity=arity, flags=tuple(flags.split()), first_key=first,
                       last_key=last, key_step=step, categories=tuple(acl.split()), **docs)


_CONN = dict(group="connection")
_CLIENT_SUB = "noscript loading stale"
_SERVER = dict(group="server")
_TX = dict(group="transactions")

SPECS = [
    # --- connection -------------------------------------------------------
    cmd("ping", -1, "fast", acl="connection", **_CONN, summary="Ping the server", since="1.0.0",
        complexity="O(1)", tips=("request_policy:all_shards", "response_policy:all_succeeded")),
    cmd("echo", 2, "loading stale fast", acl="connection", **_CONN, summary="Echo the given string",
        since="1.0.0", complexity="O(1)"),
    cmd("hello", -1, "noscript loading stale fast no_auth allow_busy", acl="connection", **_CONN,
        summary="Handshake with Redis", since="6.0.0", complexity="O(1)"),
    cmd("quit", -1, "noscript loading stale fast no_auth allow_busy", acl="connection", **_CONN,
        summary="Close the connection", since="1.0.0", complexity="O(1)"),
    cmd("reset", 1, "noscript loading stale fast no_auth allow_busy", acl="connection", **_CONN,
        summary="Reset the connection", since="6.2.0", complexity="O(1)"),
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
    cmd("client|reply", 3, _CLIENT_SUB, acl="connection", **_CONN,
        summary="Instruct the server whether to reply to commands", since="3.2.0", complexity="O(1)"),
    cmd("client|help", 2, "loading stale", acl="connection", **_CONN,
        summary="Show helpful text about the different subcommands", since="5.0.0", complexity="O(1)"),

    # --- server -----------------------------------------------------------
    cmd("info", -1, "loading stale", acl="dangerous", **_SERVER,
        summary="Get information and statistics about the server", since="1.0.0", complexity="O(1)",
        tips=("nondeterministic_output", "request_policy:all_shards", "response_policy:special")),
    cmd("config", -2, **_SERVER, summary="A container for server configuration commands", since="2.0.0",
        complexity="Depends on subcommand."),
    cmd("config|get", -3, "admin noscript loading stale", **_SERVER,
        summary="Get the values of configuration parameters", since="2.0.0",
        complexity="O(N) when N is the number of configuration parameters provided"),
    cmd("config|set", -4, "admin noscript loading stale", **_SERVER,
        summary="Set configuration parameters to the given values", since="2.0.0",
        complexity="O(N) when N is the number of configuration parameters provided",
        tips=("request_policy:all_nodes", "response_policy:all_succeeded")),
    cmd("config|resetstat", 2, "admin noscript loading stale", **_SERVER,
        summary="Reset the stats returned by INFO", since="2.0.0", complexity="O(1)"),
    cmd("config|rewrite", 2, "admin noscript loading stale", **_SERVER,
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
    cmd("command|help", 2, "loading stale", acl="connection", **_SERVER,
        summary="Show helpful text about the different subcommands", since="5.0.0", complexity="O(1)"),
    cmd("time", 1, "loading stale fast", **_SERVER, summary="Return the current server time",
        since="2.6.0", complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("lastsave", 1, "loading stale fast", acl="admin dangerous", **_SERVER,
        summary="Get the UNIX time stamp of the last successful save to disk", since="1.0.0",
        complexity="O(1)", tips=("nondeterministic_output",)),
    cmd("shutdown", -1, "admin noscript loading stale no_multi allow_busy", **_SERVER,
        summary="Synchronously save the dataset to disk and then shut down the server", since="1.0.0",
        complexity="O(N) when saving, where N is the total number of keys in all databases when "
                   "saving data, otherwise O(1)"),
    cmd("function", -2, group="scripting", family="server", summary="A container for function commands",
        since="7.0.0", complexity="Depends on subcommand."),
    cmd("function|flush", -2, "write noscript", acl="scripting", group="scripting", family="server",
        summary="Deleting all functions", since="7.0.0",
        complexity="O(N) where N is the number of functions deleted",
        tips=("request_policy:all_shards", "response_policy:all_succeeded")),
    cmd("debug", -2, "admin noscript loading stale", **_SERVER,
        summary="A container for debugging commands", since="1.0.0", complexity="Depends on subcommand."),

    # --- transactions -----------------------------------------------------
    cmd("multi", 1, "noscript loading stale fast allow_busy", acl="transaction", **_TX,
        summary="Mark the start of a transaction block", since="1.2.0", complexity="O(1)"),
    cmd("exec", 1, "noscript loading stale skip_slowlog", acl="transaction", **_TX,
        summary="Execute all commands issued after MULTI", since="1.2.0",
        complexity="Depends on commands in the transaction"),
    cmd("discard", 1, "noscript loading stale fast allow_busy", acl="transaction", **_TX,
        summary="Discard all commands issued after MULTI", since="2.0.0",
        complexity="O(N), when N is the number of queued commands"),
    cmd("watch", -2, "noscript loading stale fast allow_busy", (1, -1, 1), acl="transaction", **_TX,
        summary="Watch the given keys to determine execution of the MULTI/EXEC block", since="2.2.0",
        complexity="O(1) for every key.", key_specs=(ks("RO", 1, -1),)),
    cmd("unwatch", 1, "noscript loading stale fast allow_busy", acl="transaction", **_TX,
        summary="Forget about all watched keys", since="2.2.0", complexity="O(1)"),

    # --- strings (commands/strings.py) ------------------------------------

    # --- keyspace (commands/keys.py) --------------------------------------
]
