"""Users, ACL rules and the per-command permission check, with Redis 7's semantics.

A user has flags (on/off, nopass, ...), passwords (SHA-256 hex digests) and
selectors: the root selector, plus any added with a "(...)" rule. A command
is allowed if any selector allows it. Each selector keeps what its rules mean
in a form compiled for the check:

- `allowed`: the names of the commands it may run (plain commands and
  "container|sub" subcommands), so the command check is one set lookup: Redis's
  command bits (a container, CLIENT or CONFIG, has a bit of its own too);
- `first_args`: Redis's "+select|0" (a command allowed with that first
  argument only);
- key patterns, each with read and/or write permission (~, %R~, %W~), or all
  keys; which permission a key argument needs comes from the command's key
  specs (ACCESS needs read; INSERT, DELETE and UPDATE need write);
- channel patterns (&...), or all channels, checked against the arguments a command's
  spec names as channels (PUBLISH, SUBSCRIBE, ...; a PSUBSCRIBE pattern must be a rule).

To describe a user back (ACL LIST, ACL GETUSER, ACL SAVE, CONFIG REWRITE) the
command rules are recomputed from those bits as Redis 7.0 does, not kept as
given: +@all or -@all, the categories that best fit, then single commands
(Selector.describe_commands).

Rule names of Redis 7.0 commands that cxlredis does not implement are
accepted, so ACL files written for Redis load; they allow nothing here, and
the description, which speaks only of commands that exist here, drops them.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections import deque

from ._store import glob_match
from .commands.keyspecs import READ, WRITE, key_arguments
from .commands.table import ACL_CATEGORIES, SPECS
from .errors import CommandError
from .files import write_atomically

log = logging.getLogger("cxlredis")

# Denial reasons, in Redis's order of precedence between selectors.
DENIED_COMMAND, DENIED_KEY, DENIED_CHANNEL = 1, 2, 4   # Redis's ACL_DENIED_* (3 is AUTH)

NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOPERM_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"
NOPERM_CHANNEL = "NOPERM this user has no permissions to access one of the channels used as arguments"
NO_ACL_FILE = ("ERR This Redis instance is not configured to use an ACL file. You may want to "
               "specify users via the ACL SETUSER command and then issue a CONFIG REWRITE "
               "(assuming you have a Redis configuration file set) in order to store users in the "
               "Redis configuration.")
BAD_USERNAME = "Usernames can't contain spaces or null characters"
FILE_ERRORS_TAIL = ("WARNING: ACL errors detected, no change to the previously active ACL rules "
                    "was performed")

# Seconds within which ACL LOG folds a repeated denial into the same entry, and
# how many of the newest entries it looks through, as Redis does.
LOG_GROUPING_MS = 60_000
LOG_GROUPING_SCAN = 10

USER_FLAGS = ("on", "off", "nopass", "skip-sanitize-payload", "sanitize-payload")

# Every command and subcommand of Redis 7.0: rules may name those cxlredis lacks.
REDIS_COMMANDS = frozenset("""
acl acl|cat acl|deluser acl|dryrun acl|genpass acl|getuser acl|help acl|list acl|load acl|log
acl|save acl|setuser acl|users acl|whoami append asking auth bgrewriteaof bgsave bitcount bitfield
bitfield_ro bitop bitpos blmove blmpop blpop brpop brpoplpush bzmpop bzpopmax bzpopmin client
client|caching client|getname client|getredir client|help client|id client|info client|kill
client|list client|no-evict client|pause client|reply client|setname client|tracking
client|trackinginfo client|unblock client|unpause cluster cluster|addslots cluster|addslotsrange
cluster|bumpepoch cluster|count-failure-reports cluster|countkeysinslot cluster|delslots
cluster|delslotsrange cluster|failover cluster|flushslots cluster|forget cluster|getkeysinslot
cluster|help cluster|info cluster|keyslot cluster|links cluster|meet cluster|myid cluster|nodes
cluster|replicas cluster|replicate cluster|reset cluster|saveconfig cluster|set-config-epoch
cluster|setslot cluster|shards cluster|slaves cluster|slots command command|count command|docs
command|getkeys command|getkeysandflags command|help command|info command|list config config|get
config|help config|resetstat config|rewrite config|set copy dbsize debug decr decrby del discard
dump echo eval eval_ro evalsha evalsha_ro exec exists expire expireat expiretime failover fcall
fcall_ro flushall flushdb function function|delete function|dump function|flush function|help
function|kill function|list function|load function|restore function|stats geoadd geodist geohash
geopos georadius georadius_ro georadiusbymember georadiusbymember_ro geosearch geosearchstore get
getbit getdel getex getrange getset hdel hello hexists hget hgetall hincrby hincrbyfloat hkeys hlen
hmget hmset hrandfield hscan hset hsetnx hstrlen hvals incr incrby incrbyfloat info keys lastsave
latency latency|doctor latency|graph latency|help latency|histogram latency|history latency|latest
latency|reset lcs lindex linsert llen lmove lmpop lolwut lpop lpos lpush lpushx lrange lrem lset
ltrim memory memory|doctor memory|help memory|malloc-stats memory|purge memory|stats memory|usage
mget migrate module module|help module|list module|load module|loadex module|unload monitor move
mset msetnx multi object object|encoding object|freq object|help object|idletime object|refcount
persist pexpire pexpireat pexpiretime pfadd pfcount pfdebug pfmerge pfselftest ping psetex
psubscribe psync pttl publish pubsub pubsub|channels pubsub|help pubsub|numpat pubsub|numsub
pubsub|shardchannels pubsub|shardnumsub punsubscribe quit randomkey readonly readwrite rename
renamenx replconf replicaof reset restore restore-asking role rpop rpoplpush rpush rpushx sadd save
scan scard script script|debug script|exists script|flush script|help script|kill script|load
sdiff sdiffstore select set setbit setex setnx setrange shutdown sinter sintercard sinterstore
sismember slaveof slowlog slowlog|get slowlog|help slowlog|len slowlog|reset smembers smismember
smove sort sort_ro spop spublish srandmember srem sscan ssubscribe strlen subscribe substr sunion
sunionstore sunsubscribe swapdb sync time touch ttl type unlink unsubscribe unwatch wait watch xack
xadd xautoclaim xclaim xdel xgroup xgroup|create xgroup|createconsumer xgroup|delconsumer
xgroup|destroy xgroup|help xgroup|setid xinfo xinfo|consumers xinfo|groups xinfo|help xinfo|stream
xlen xpending xrange xread xreadgroup xrevrange xsetid xtrim zadd zcard zcount zdiff zdiffstore
zincrby zinter zintercard zinterstore zlexcount zmpop zmscore zpopmax zpopmin zrandmember zrange
zrangebylex zrangebyscore zrangestore zrank zrem zremrangebylex zremrangebyrank zremrangebyscore
zrevrange zrevrangebylex zrevrangebyscore zrevrank zscan zscore zunion zunionstore
""".split())


class RuleError(Exception):
    """A rule could not be applied; str(self) is Redis's reason text."""

    def __init__(self, reason, unknown_name=False):
        super().__init__(reason)
        self.unknown_name = unknown_name    # Redis's ENOENT: reported per rule when loading a file


def _syntax_error():
    return RuleError("Syntax error")


def _unknown_name():
    return RuleError("Unknown command or category name in ACL", unknown_name=True)


# ---------------------------------------------------------------- the command table, as ACLs see it

class _Commands:
    """Names and categories from the command table, built on first use."""

    def __init__(self):
        self.names = frozenset(spec.name for spec in SPECS)
        subcommands = {}
        for spec in SPECS:
            if spec.container:
                subcommands.setdefault(spec.container, {spec.container}).add(spec.name)
        # A rule naming a container covers its own bit and all its subcommands'.
        self.containers = {name: frozenset(names) for name, names in subcommands.items()}
        self.by_category = {cat: frozenset(spec.name for spec in SPECS if cat in spec.acl_categories)
                            for cat in ACL_CATEGORIES}
        # The order single-command rules are described in: a container first, as a rule
        # on it changes its subcommands too (Redis's own order is its hash order).
        self.described_order = sorted(self.names, key=lambda name: name.split("|"))
        self.redis_containers = frozenset(name.split("|")[0] for name in REDIS_COMMANDS if "|" in name)

    def known(self, name):
        return name in self.names or name in REDIS_COMMANDS

    def is_container(self, name):
        return name in self.containers or name in self.redis_containers

    def names_of(self, name):
        """The command bits a rule on `name` covers (none for a command we lack)."""
        if name in self.containers:
            return self.containers[name]
        return frozenset((name,)) if name in self.names else frozenset()


_commands = None


def command_table():
    global _commands
    if _commands is None:
        _commands = _Commands()
    return _commands


def _lower(op: bytes) -> str:
    return op.decode("utf-8", "surrogateescape").lower()


# ---------------------------------------------------------------- selectors and users

def channel_allowed(rules, channel, is_pattern):
    """A channel matches a rule's pattern; a PSUBSCRIBE pattern must be a rule itself."""
    if is_pattern:
        return channel in rules
    return any(glob_match(rule, channel, False) for rule in rules)


class Selector:
    """What one selector's rules allow: commands, keys and channels."""

    __slots__ = ("allowed", "first_args", "from_all", "all_keys", "keys", "all_channels", "channels")

    def __init__(self, all_channels=False):
        self.allowed = set()        # command names this selector may run
        self.first_args = {}        # command name → {first argument lowercased: as first given}
        self.from_all = False       # +@all came last of +@all/-@all: Redis's "future commands" bit
        self.all_keys = False
        self.keys = {}              # pattern → READ|WRITE, in the order added
        self.all_channels = all_channels
        self.channels = []

    def copy(self):
        other = Selector()
        other.allowed = set(self.allowed)
        other.first_args = {name: dict(args) for name, args in self.first_args.items()}
        other.from_all = self.from_all
        other.all_keys = self.all_keys
        other.keys = dict(self.keys)
        other.all_channels = self.all_channels
        other.channels = list(self.channels)
        return other

    @property
    def unrestricted_keys(self):
        return self.all_keys and len(self.allowed) == len(command_table().names)

    # -- rules

    def apply(self, op: bytes):
        """Apply one selector rule (Redis's ACLSetSelector); raises RuleError."""
        word = _lower(op)
        if word == "allkeys" or op == b"~*":
            self.all_keys = True
            self.keys.clear()
        elif word == "resetkeys":
            self.all_keys = False
            self.keys.clear()
        elif word == "allchannels" or op == b"&*":
            self.all_channels = True
            self.channels.clear()
        elif word == "resetchannels":
            self.all_channels = False
            self.channels.clear()
        elif word in ("allcommands", "+@all"):
            self._reset_commands(True)
        elif word in ("nocommands", "-@all"):
            self._reset_commands(False)
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.all_channels:
                raise RuleError("Adding a pattern after the * pattern (or the 'allchannels' flag) is "
                                "not valid and does not have any effect. Try 'resetchannels' to start "
                                "with an empty list of channels")
            if op[1:] not in self.channels:
                self.channels.append(op[1:])
        elif op[:2] in (b"+@", b"-@"):
            category = word[2:]
            if category not in ACL_CATEGORIES:
                raise _unknown_name()
            self._change(command_table().by_category[category], op[:1] == b"+")
        elif op[:1] == b"+":
            self._allow(op[1:])
        elif op[:1] == b"-":
            name = word[1:]
            if not command_table().known(name):
                raise _unknown_name()
            self._change(command_table().names_of(name), False)
        else:
            raise _syntax_error()

    def _reset_commands(self, allow):
        self.allowed = set(command_table().names) if allow else set()
        self.first_args.clear()
        self.from_all = allow

    def _change(self, names, allow):
        if allow:
            self.allowed |= names
        else:
            self.allowed -= names
        for name in names:
            self.first_args.pop(name, None)

    def _allow(self, rule: bytes):
        table = command_table()
        name = _lower(rule)
        if "|" not in name:
            if not table.known(name):
                raise _unknown_name()
            self._change(table.names_of(name), True)
            return
        base, _, first_arg = name.rpartition("|")
        if not table.known(base):
            raise _unknown_name()
        if "|" in base:
            raise RuleError("Allowing first-arg of a subcommand is not supported")
        if not first_arg:
            raise _syntax_error()
        if table.is_container(base):
            if not table.known(name):
                raise _unknown_name()
            self._change(table.names_of(name), True)
        elif base in table.names and base not in self.allowed:
            # Redis's first-arg rule: the command only with this first argument, matched
            # regardless of case and described as first given. (Redis also keeps one given
            # while the whole command is allowed, to no effect: what denies the command
            # drops its first arguments.)
            given = rule.rpartition(b"|")[2]
            self.first_args.setdefault(base, {}).setdefault(given.lower(), given)

    def _add_key_pattern(self, op):
        if self.all_keys:
            raise RuleError("Adding a pattern after the * pattern (or the 'allkeys' flag) is not "
                            "valid and does not have any effect. Try 'resetkeys' to start with an "
                            "empty list of patterns")
        if op[:1] == b"~":
            flags, pattern = READ | WRITE, op[1:]
        else:
            flags, offset = 0, 1
            while True:
                letter = op[offset:offset + 1].upper()
                if letter == b"R" and not flags & READ:
                    flags |= READ
                elif letter == b"W" and not flags & WRITE:
                    flags |= WRITE
                elif letter == b"~" and flags:
                    break
                else:
                    raise _syntax_error()
                offset += 1
            pattern = op[offset + 1:]
        if pattern == b"*" and flags == READ | WRITE:
            self.all_keys = True
            self.keys.clear()
        else:
            self.keys[pattern] = self.keys.get(pattern, 0) | flags

    # -- the check

    def check(self, spec, argv):
        """None if this selector allows the call, else (reason, index of the argument at fault)."""
        name = spec.name
        if name not in self.allowed:
            first_args = self.first_args.get(name)
            if first_args is None or len(argv) < 2 or bytes(argv[1]).lower() not in first_args:
                return DENIED_COMMAND, 0
        if not self.all_keys:
            for index, needs in key_arguments(spec, argv):
                if not self.may_access(argv[index], needs):
                    return DENIED_KEY, index
        if spec.channel_args and not self.all_channels:
            first, last, patterns = spec.channel_args
            for index in range(first, len(argv) if last < 0 else last + 1):
                if not self.may_use_channel(bytes(argv[index]), patterns):
                    return DENIED_CHANNEL, index
        return None

    def may_use_channel(self, channel, is_pattern):
        return channel_allowed(self.channels, channel, is_pattern)

    @property
    def reads_every_key(self):
        """~*, or a pattern * that reads (Redis's ACLSelectorHasUnrestrictedKeyAccess)."""
        return self.all_keys or bool(self.keys.get(b"*", 0) & READ)

    def may_access(self, key, needs):
        for pattern, flags in self.keys.items():
            if flags & needs == needs and glob_match(pattern, key, False):
                return True
        return False

    # -- description

    def describe_commands(self) -> bytes:
        """The command rules recomputed from the bits, as Redis 7.0's ACLDescribeSelectorCommandRules:
        +@all or -@all, then, one at a time, the category that best fits the bits still
        unexplained, then the single commands (and first arguments) that still differ."""
        table = command_table()
        adding = not self.from_all
        sign = "+" if adding else "-"
        words = ["-@all" if adding else "+@all"]
        described = set() if adding else set(table.names)       # what the words so far allow
        # What no category word accounts for yet: the allowed commands when adding, the
        # denied ones when removing (Redis's temp selector).
        unexplained = set(self.allowed) if adding else table.names - self.allowed
        candidates = list(ACL_CATEGORIES)
        while True:
            best, best_fit = None, None
            for category in candidates:
                members = table.by_category[category]
                same = len(members & unexplained)
                different = len(members) - same
                # More in common than different; the fewest differences, then the most in common.
                if same > different and (best is None or (different, -same) < best_fit):
                    best, best_fit = category, (different, -same)
            if best is None:
                break
            candidates.remove(best)
            members = table.by_category[best]
            unexplained -= members
            if adding:
                described |= members
            else:
                described -= members
            words.append(sign + "@" + best)
        for name in table.described_order:
            allowed = name in self.allowed
            if allowed != (name in described):
                words.append(("+" if allowed else "-") + name)
                if allowed:
                    described |= table.names_of(name)
                else:
                    described -= table.names_of(name)
            if not allowed and name in self.first_args:
                words += [f"+{name}|{arg.decode('utf-8', 'surrogateescape')}"
                          for arg in self.first_args[name].values()]
        return " ".join(words).encode("utf-8", "surrogateescape")

    def describe_keys(self) -> bytes:
        if self.all_keys:
            return b"~*"
        prefix = {READ | WRITE: b"~", READ: b"%R~", WRITE: b"%W~"}
        return b" ".join(prefix[flags] + pattern for pattern, flags in self.keys.items())

    def describe_channels(self) -> bytes:
        if self.all_channels:
            return b"&*"
        return b" ".join(b"&" + channel for channel in self.channels)

    def describe(self) -> bytes:
        parts = [self.describe_keys()] if self.all_keys or self.keys else []
        if self.all_channels:
            parts.append(b"&*")
        else:
            parts.append(b"resetchannels")
            if self.channels:
                parts.append(self.describe_channels())
        parts.append(self.describe_commands())
        return b" ".join(parts)


class User:
    __slots__ = ("name", "enabled", "nopass", "sanitize", "passwords", "selectors", "unrestricted",
                 "unrestricted_keys")

    def __init__(self, name: bytes, all_channels=False):
        self.name = name
        self.enabled = False
        self.nopass = False
        self.sanitize = ""          # "", "sanitize-payload" or "skip-sanitize-payload"
        self.passwords = []         # SHA-256 hex digests, in the order added
        self.selectors = [Selector(all_channels)]    # the root selector first
        # compiled: some selector allows every command on every key (what the fast path's
        # commands need) and, for unrestricted, on every channel too
        self.unrestricted_keys = self.unrestricted = False

    @property
    def root(self):
        return self.selectors[0]

    def copy(self):
        other = User(self.name)
        other.assign(self)
        return other

    def assign(self, other):
        """Take other's rules (clients keep this object, so they see the change at once)."""
        self.enabled, self.nopass, self.sanitize = other.enabled, other.nopass, other.sanitize
        self.passwords = list(other.passwords)
        self.selectors = [selector.copy() for selector in other.selectors]
        self.compile()

    def compile(self):
        self.unrestricted_keys = any(selector.unrestricted_keys for selector in self.selectors)
        self.unrestricted = any(selector.unrestricted_keys and selector.all_channels
                                for selector in self.selectors)

    @property
    def flags(self):
        return [flag for flag, on in zip(USER_FLAGS, (
            self.enabled, not self.enabled, self.nopass,
            self.sanitize == "skip-sanitize-payload", self.sanitize == "sanitize-payload")) if on]

    # -- rules

    def apply(self, op: bytes, pubsub_default_all: bool):
        """Apply one rule (Redis's ACLSetUser); raises RuleError."""
        if not op:
            return
        word = _lower(op)
        if word == "on":
            self.enabled = True
        elif word == "off":
            self.enabled = False
        elif word in ("skip-sanitize-payload", "sanitize-payload"):
            self.sanitize = word
        elif word == "nopass":
            self.nopass = True
            self.passwords.clear()
        elif word == "resetpass":
            self.nopass = False
            self.passwords.clear()
        elif op[:1] in (b">", b"#"):
            digest = password_hash(op[1:]) if op[:1] == b">" else _checked_hash(op[1:])
            if digest not in self.passwords:
                self.passwords.append(digest)
            self.nopass = False
        elif op[:1] in (b"<", b"!"):
            digest = password_hash(op[1:]) if op[:1] == b"<" else _checked_hash(op[1:])
            if digest not in self.passwords:
                raise RuleError("The password you are trying to remove from the user does not exist")
            self.passwords.remove(digest)
        elif word == "reset":
            self.nopass = False
            self.passwords.clear()
            self.enabled = False
            self.sanitize = "sanitize-payload"
            self.selectors = [Selector(pubsub_default_all)]
        elif word == "clearselectors":
            del self.selectors[1:]
        elif op[:1] == b"(" and op[-1:] == b")":
            selector = Selector(pubsub_default_all)
            for inner in op[1:-1].split():
                selector.apply(inner)
            self.selectors.append(selector)
        else:
            self.root.apply(op)

    def check(self, spec, argv):
        """None if the user may run the call, else (reason, argument index) of the most
        relevant denial among the selectors (Redis: the highest reason, then the last index)."""
        worst = None
        for selector in self.selectors:
            denial = selector.check(spec, argv)
            if denial is None:
                return None
            if worst is None or denial > worst:
                worst = denial
        return worst

    def reads_every_key(self, spec, argv):
        """Whether a selector that allows the call may read every key, as SORT's BY and
        GET patterns need (Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess)."""
        return any(selector.check(spec, argv) is None and selector.reads_every_key
                   for selector in self.selectors)

    # -- description

    def describe(self) -> bytes:
        """The rules in ACL LIST / ACL file form, without "user <name>"."""
        parts = [flag.encode() for flag in self.flags] + [b"#" + p.encode() for p in self.passwords]
        parts.append(self.root.describe())
        parts += [b"(" + selector.describe() + b")" for selector in self.selectors[1:]]
        return b" ".join(parts)


def password_hash(password) -> str:
    return hashlib.sha256(bytes(password)).hexdigest()


def _checked_hash(text: bytes) -> str:
    if len(text) != 64 or any(ch not in b"0123456789abcdef" for ch in text):
        raise RuleError("The password hash must be exactly 64 characters and contain only "
                        "lowercase hexadecimal characters")
    return text.decode()


def has_spaces(name: bytes) -> bool:
    """Redis's ACLStringHasSpaces: C isspace() or a NUL byte."""
    return any(ch in b" \t\n\v\f\r\x00" for ch in name)


def merge_selectors(ops):
    """Join "(rule" ... "rule)" arguments into one "(rule ... rule)" operation.

    Returns (operations, None), or (None, the argument that opened an
    unclosed selector), as Redis's ACLMergeSelectorArguments.
    """
    merged, opener, opened = [], None, None
    for op in ops:
        if op[:1] == b"(" and op[-1:] != b")":
            opener = opened = op
            continue
        if opened is not None:
            opened += b" " + op
            if op[-1:] == b")":
                merged.append(opened)
                opened = None
            continue
        merged.append(op)
    if opened is not None:
        return None, opener
    return merged, None


def check_user_directive(args, earlier_names):
    """Validate a config-file `user <name> <rule>...` directive (args as bytes).

    Raises ValueError with the reason shown in the fatal config error.
    """
    name = args[0]
    shown = name.decode("utf-8", "replace")
    if name in earlier_names:
        raise ValueError(f"Error in user declaration '{shown}': Duplicate user found. "
                         "A user can only be defined once in config files")
    if has_spaces(name):
        raise ValueError(f"Error in user declaration '{shown}': {BAD_USERNAME}")
    ops, unclosed = merge_selectors(args[1:])
    if ops is None:
        raise ValueError(f"Error in user declaration '{shown}': Unmatched parenthesis in acl "
                         f"selector starting at '{unclosed.decode('utf-8', 'replace')}'.")
    trial = User(name)
    for op in ops:
        try:
            trial.apply(op, False)
        except RuleError as e:
            raise ValueError(f"Error in user declaration '{shown}': {e}") from None


# ---------------------------------------------------------------- ACL LOG

def now_ms():
    return int(time.time() * 1000)


class LogEntry:
    __slots__ = ("count", "reason", "context", "object", "username", "created_ms", "client_info")

    def __init__(self, reason, context, obj, username, client_info, created_ms):
        self.count = 1
        self.reason, self.context, self.object, self.username = reason, context, obj, username
        self.created_ms = created_ms
        self.client_info = client_info


class AclLog:
    """Denied commands, keys and authentications, newest first (ACL LOG)."""

    def __init__(self):
        self.entries = deque()

    def add(self, reason, context, obj: bytes, username: bytes, client_info: str, max_len: int):
        now = now_ms()
        for i, entry in enumerate(self.entries):
            if i == LOG_GROUPING_SCAN:
                break
            if (entry.reason == reason and entry.context == context and entry.object == obj
                    and entry.username == username and now - entry.created_ms <= LOG_GROUPING_MS):
                del self.entries[i]
                entry.count += 1
                entry.created_ms = now
                entry.client_info = client_info
                self.entries.appendleft(entry)
                return
        self.entries.appendleft(LogEntry(reason, context, obj, username, client_info, now))
        while len(self.entries) > max_len:
            self.entries.pop()

    def reset(self):
        self.entries.clear()


# ---------------------------------------------------------------- the server's users

class Acl:
    """The users of one server, its ACL log, and authentication."""

    def __init__(self, config, audit, clients):
        self.config = config
        self.audit = audit
        self.clients = clients           # clients.Clients: ACL LOG's client lines, closing users'
        self.tenants = None              # tenants.Tenants, given by the server once the arena
                                         # (which keeps them) is attached, before any connection
        self.log = AclLog()
        self.default = self._new_default()
        self.users = {b"default": self.default}
        self.set_default_password(config["requirepass"])
        if config.users and config["aclfile"]:
            self._startup_failure(
                "Configuring Redis with users defined in redis.conf and at the same setting an ACL "
                "file path is invalid. This setup is very likely to lead to configuration errors "
                "and security holes, please define either an ACL file or declare users directly "
                "in your redis.conf, but not both.")
        for name, *ops in config.users:
            user = self._user_for_config(name)
            merged, _ = merge_selectors(ops)
            for op in merged:     # validated when the config was read
                user.apply(op, self.pubsub_default_all)
            user.compile()
        if config["aclfile"]:
            errors = self.load_file()
            if errors:
                self._startup_failure(f"Aborting Redis startup because of ACL errors: {errors}")
        config.on_change("requirepass", self.set_default_password)
        config.user_lines = self.config_lines

    @staticmethod
    def _startup_failure(message):
        log.warning("%s", message)
        raise SystemExit(1)

    def _user_for_config(self, name):
        if name == b"default":
            self.default.apply(b"reset", self.pubsub_default_all)
            return self.default
        user = self.users[name] = User(name, self.pubsub_default_all)
        return user

    @staticmethod
    def _new_default():
        user = User(b"default")
        for op in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            user.apply(op, False)
        user.compile()
        return user

    @property
    def pubsub_default_all(self):
        return self.config["acl-pubsub-default"] == "allchannels"

    @property
    def auth_required(self):
        """Whether a new connection must authenticate before running commands."""
        return not self.default.nopass or not self.default.enabled

    def set_default_password(self, password):
        """requirepass: the default user's only password, or nopass when empty."""
        self.default.apply(b"resetpass", False)
        self.default.apply(b">" + password.encode("utf-8", "surrogateescape") if password else b"nopass",
                           False)

    # -- connections

    def attach(self, c):
        """A new connection, or one that sent RESET, is `default`, authenticated if that
        needs no password."""
        c.user = self.default
        c.authenticated = not self.auth_required
        self.tenants.bind(c)

    def authenticate(self, c, username, password, command) -> bool:
        """AUTH / HELLO AUTH: switch the connection to the user, or log the failure."""
        username = bytes(username)
        user = self.users.get(username)
        digest = password_hash(password)
        if user is not None and user.enabled and (
                user.nopass or any(hmac.compare_digest(digest, p) for p in user.passwords)):
            c.user = user
            c.authenticated = True
            self.tenants.bind(c)     # the keyspace of the user's tenant, from now on
            self.audit.record(c, "auth_success", command=_text(command))
            return True
        self.log_denial(c, "auth", bytes(command), username)
        self.audit.record(c, "auth_failure", command=_text(command), username=_text(username))
        return False

    def disconnect_users(self, users, current):
        """Close the connections of deleted or replaced users (the caller after its reply)."""
        doomed = [c for c in self.clients.sessions() if any(c.user is u for u in users)]
        for c in doomed:
            c.user = self.default
            c.authenticated = False
            self.tenants.bind(c)
        self.clients.disconnect(doomed, current)

    # -- the check on every command

    def denial(self, c, spec, argv, in_exec=False):
        """None if the connection's user may run the call; else log it and return the error text."""
        denied = c.user.check(spec, argv)
        if denied is None:
            return None
        reason, index = denied
        context = "multi" if c.multi is not None else "toplevel"
        if reason == DENIED_KEY:
            kind, obj = "key", bytes(argv[index])
        elif reason == DENIED_CHANNEL:
            kind, obj = "channel", bytes(argv[index])
        else:
            kind, obj = "command", spec.name.encode()
        if not in_exec:
            c.last_command = spec.name     # CLIENT LIST shows the denied command, as in Redis
        self.log_denial(c, kind, obj, c.user.name, context)
        self.audit.record(c, "acl_denied", reason=kind, context=context, command=spec.name,
                          object=_text(obj))
        if in_exec:
            why = ("no permission to touch the specified keys" if reason == DENIED_KEY
                   else "no permission to access one of the channels used as arguments"
                   if reason == DENIED_CHANNEL
                   else "no permission to execute the command or subcommand")
            return ("NOPERM ACLs rules changed between the moment the transaction was accumulated "
                    "and the EXEC call. This command is no longer allowed for the following "
                    f"reason: {why}")
        if reason == DENIED_KEY:
            return NOPERM_KEY
        if reason == DENIED_CHANNEL:
            return NOPERM_CHANNEL
        return f"NOPERM this user has no permissions to run the '{spec.name}' command"

    def log_denial(self, c, reason, obj, username, context=None):
        if context is None:
            context = "multi" if c.multi is not None else "toplevel"
        self.log.add(reason, context, obj, username, self.clients.info_line(c),
                     self.config["acllog-max-len"])

    # -- ACL SETUSER / DELUSER

    def set_user(self, name: bytes, ops, current=None):
        """ACL SETUSER: all rules or none; raises CommandError with Redis's text."""
        if has_spaces(name):
            raise CommandError(f"ERR {BAD_USERNAME}")
        merged, unclosed = merge_selectors(ops)
        if merged is None:
            raise CommandError("ERR Unmatched parenthesis in acl selector starting at "
                               f"'{_text(unclosed)}'.")
        existing = self.users.get(name)
        trial = existing.copy() if existing is not None else User(name, self.pubsub_default_all)
        for op in merged:
            try:
                trial.apply(op, self.pubsub_default_all)
            except RuleError as e:
                raise CommandError(f"ERR Error in ACL SETUSER modifier '{_text(op)}': {e}") from None
        if existing is None:
            self.users[name] = existing = User(name)
            existing.assign(trial)
            return existing
        revoked = self.revoked_subscribers(existing, trial)
        existing.assign(trial)
        self.clients.disconnect(revoked, current)
        return existing

    def revoked_subscribers(self, user, upcoming):
        """The sessions of user subscribed where the upcoming rules no longer let them
        (Redis's ACLKillPubsubClientsIfNeeded, with its shortcuts: none when an upcoming
        selector allows every channel, or when every channel rule of the user is kept)."""
        if any(selector.all_channels for selector in upcoming.selectors):
            return []
        rules = [rule for selector in upcoming.selectors for rule in selector.channels]
        if all(not selector.all_channels and all(rule in rules for rule in selector.channels)
               for selector in user.selectors):
            return []

        def still_allowed(subscriptions):
            return (all(channel_allowed(rules, name, True) for _, name in subscriptions.patterns)
                    and all(channel_allowed(rules, name, False)
                            for kind in (subscriptions.channels, subscriptions.shard_channels)
                            for _, name in kind))
        return [c for c in self.clients.sessions()
                if c.user is user and c.subscribed and not still_allowed(c.subscriptions)]

    def delete_users(self, names, current):
        """ACL DELUSER: remove the users and close their connections; the number removed."""
        removed = [self.users.pop(name) for name in dict.fromkeys(names) if name in self.users]
        self.disconnect_users(removed, current)
        return len(removed)

    # -- the ACL file

    def load_file(self, current=None):
        """ACL LOAD: replace every user with the file's; the error text, or None when loaded.

        Connections of users other than `default` are closed (`current`, the
        connection that asked, after its reply), as Redis does.
        """
        path = self.config["aclfile"]
        try:
            with open(path, "rb") as file:
                content = file.read()
        except OSError as e:
            return f"Error loading ACLs, opening file '{path}': {e.strerror}"
        users, errors = parse_acl_file(content, path, self.pubsub_default_all)
        if errors:
            return errors + FILE_ERRORS_TAIL
        new_default = users.pop(b"default", None) or self._new_default()
        replaced = [user for name, user in self.users.items() if name != b"default"]
        self.default.assign(new_default)
        self.users = {b"default": self.default, **users}
        self.disconnect_users(replaced, current)
        return None

    def save_file(self):
        """ACL SAVE: write every user to the ACL file, atomically."""
        path = self.config["aclfile"]
        write_atomically(path, b"".join(line + b"\n" for line in self.list_lines()))

    # -- description

    def sorted_users(self):
        return [self.users[name] for name in sorted(self.users)]

    def list_lines(self):
        return [b"user " + user.name + b" " + user.describe() for user in self.sorted_users()]

    def config_lines(self):
        """CONFIG REWRITE's `user` lines: none when the users live in an ACL file."""
        if self.config["aclfile"]:
            return []
        return [line.decode("utf-8", "surrogateescape") for line in self.list_lines()]


def parse_acl_file(content: bytes, path: str, pubsub_default_all: bool):
    """Users from an ACL file's text, and the errors found (Redis's ACLLoadFromFile rules).

    Lines are trimmed and split on single spaces; every error is collected
    (for each line, every unknown command or category and the first other error).
    """
    users, errors = {}, []
    for number, line in enumerate(content.split(b"\n"), 1):
        line = line.strip(b" \t\r\n")
        if not line:
            continue
        argv = line.split(b" ")
        if argv[0] != b"user" or len(argv) < 2:
            errors.append(f"{path}:{number} should start with user keyword followed by the username. ")
            continue
        name = argv[1]
        if has_spaces(name):
            errors.append(f"'{path}:{number}: username '{_text(name)}' contains invalid characters. ")
            continue
        if name in users:
            errors.append(f"WARNING: Duplicate user '{_text(name)}' found on line {number}. ")
            continue
        ops, _ = merge_selectors(argv[2:])
        if ops is None:
            errors.append(f"{path}:{number}: Unmatched parenthesis in selector definition.")
            continue
        user = users[name] = User(name, pubsub_default_all)
        reported_other = False
        for op in ops:
            op = op.strip(b"\t\r\n")
            try:
                user.apply(op, pubsub_default_all)
            except RuleError as e:
                if e.unknown_name:
                    errors.append(f"{path}:{number}: Error in applying operation '{_text(op)}': {e}. ")
                elif not reported_other:
                    errors.append(f"{path}:{number}: {e}. ")
                    reported_other = True
        user.compile()
    return users, "".join(errors)


def generate_password(bits: int) -> str:
    """ACL GENPASS: `bits` random bits as hex digits (rounded up to whole digits)."""
    digits = (bits + 3) // 4
    return secrets.token_hex((digits + 1) // 2)[:digits]


def _text(data) -> str:
    return bytes(data).decode("utf-8", "replace")
