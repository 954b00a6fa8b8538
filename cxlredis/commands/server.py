"""Server commands: INFO, CONFIG *, COMMAND *, TIME, SAVE, BGSAVE, BGREWRITEAOF, LASTSAVE,
ROLE, WAIT, SHUTDOWN, DEBUG, and MEMORY's server-wide reports (DOCTOR, STATS, MALLOC-STATS,
PURGE)."""
import logging
import time

from .. import errors, protected
from .._store import TYPE_LIST, glob_match
from ..cluster.dump import quicklist_nodes
from ..config import ConfigSetError
from ..errors import CommandError
from ..persistence import BGSAVE_IN_PROGRESS
from . import registry
from .args import c_word, parse_int, parse_timeout_ms, upper
from .keys import encoding, refcount
from .keyspecs import key_flags
from .connection import for_administrators, reply_help
from .docs import DOCS, NO_DOCS
from .migration import dump_limits, payload_parts

log = logging.getLogger("cxlredis")


def cmd_info(c, argv):
    sections = [bytes(a).decode("utf-8", "replace").lower() for a in argv[1:]]
    c.reply.verbatim(c.services.info(sections, c))


# --- CONFIG -------------------------------------------------------------
def cmd_config_get(c, argv):
    patterns = [bytes(a).decode("utf-8", "replace") for a in argv[2:]]
    pairs = c.services.config.get(patterns)
    c.reply.map(len(pairs))
    for name, value in pairs:
        c.reply.bulk(name)
        c.reply.bulk(value)


def cmd_config_set(c, argv):
    if len(argv) % 2 != 0:
        raise CommandError(errors.SYNTAX)
    pairs = [(bytes(argv[i]).decode("utf-8", "replace"), bytes(argv[i + 1]).decode("utf-8", "replace"))
             for i in range(2, len(argv), 2)]
    try:
        c.services.config.set(pairs, protected.allowed(c, "enable-protected-configs"))
    except ConfigSetError as e:
        raise CommandError(str(e)) from None
    c.reply.ok()


def cmd_config_resetstat(c, argv):
    c.services.reset_stats()
    c.reply.ok()


def cmd_config_rewrite(c, argv):
    try:
        c.services.config.rewrite()
    except ConfigSetError as e:
        raise CommandError(str(e)) from None
    c.reply.ok()


CONFIG_HELP = (
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
)


def cmd_config_help(c, argv):
    reply_help(c, CONFIG_HELP)


# --- COMMAND ------------------------------------------------------------
def cmd_command(c, argv):
    specs = list(registry.COMMANDS.values())
    c.reply.array(len(specs))
    for spec in specs:
        reply_command_info(c, spec)


def cmd_command_count(c, argv):
    c.reply.integer(len(registry.COMMANDS))


def cmd_command_list(c, argv):
    names = [spec.name for spec in registry.all_specs()]
    if len(argv) > 2:
        if len(argv) != 5 or upper(argv[2]) != "FILTERBY":
            raise CommandError(errors.SYNTAX)
        kind, value = upper(argv[3]), bytes(argv[4])
        if kind == "PATTERN":
            names = [n for n in names if glob_match(value, n.encode(), True)]
        elif kind == "ACLCAT":
            # read once: the argument may be megabytes long (and is then no category)
            category = value.decode("utf-8", "replace").lower() if len(value) <= 64 else None
            names = [spec.name for spec in registry.all_specs() if category in spec.acl_categories]
        elif kind == "MODULE":
            names = []
        else:
            raise CommandError(errors.SYNTAX)
    c.reply.array(len(names))
    for name in names:
        c.reply.bulk(name)


def cmd_command_info(c, argv):
    if len(argv) == 2:
        cmd_command(c, argv)
        return
    c.reply.array(len(argv) - 2)
    for arg in argv[2:]:
        spec = registry.find_by_full_name(arg)
        if spec is None:
            c.reply.null()  # Redis sends a null bulk here, not a null array
        else:
            reply_command_info(c, spec)


def cmd_command_docs(c, argv):
    if len(argv) == 2:
        specs = list(registry.COMMANDS.values())
    else:
        specs = [s for s in (registry.find_by_full_name(a) for a in argv[2:]) if s is not None]
    c.reply.map(len(specs))
    for spec in specs:
        c.reply.bulk(spec.name)
        reply_command_docs(c, spec)


def cmd_command_getkeys(c, argv):
    target, spec = _command_to_read(argv)
    keys = key_flags(spec, target)
    _check_keys_found(spec, keys)
    c.reply.array(len(keys))
    for i, _ in keys:
        c.reply.bulk(target[i])


def cmd_command_getkeysandflags(c, argv):
    target, spec = _command_to_read(argv)
    keys = key_flags(spec, target)
    _check_keys_found(spec, keys)
    c.reply.array(len(keys))
    for i, flags in keys:
        c.reply.array(2)
        c.reply.bulk(target[i])
        _reply_simple_set(c.reply, flags)


def _command_to_read(argv):
    """COMMAND GETKEYS[ANDFLAGS]'s full command and its spec, with Redis's checks."""
    target = argv[2:]
    spec = registry.find(target)
    if spec is None:
        raise CommandError("ERR Invalid command specified")
    if all("not_key" in ks.flags for ks in spec.key_specs):   # before the arity, as Redis
        raise CommandError("ERR The command has no key arguments")
    if not registry.arity_fits(spec, len(target)):
        raise CommandError("ERR Invalid number of arguments specified for command")
    return target, spec


def _check_keys_found(spec, keys):
    """None in these arguments (MIGRATE k ... KEYS x) is an error, but where keys are
    optional (EVAL with none): then the reply is empty."""
    if not keys and "no_mandatory_keys" not in spec.flags:
        raise CommandError("ERR Invalid arguments specified for command")


COMMAND_HELP = (
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
)


def cmd_command_help(c, argv):
    reply_help(c, COMMAND_HELP)


def reply_command_info(c, spec):
    r = c.reply
    r.array(10)
    r.bulk(spec.name)
    r.integer(spec.arity)
    r.set(len(spec.flags))
    for flag in spec.flags:
        r.simple(flag)
    for number in spec.legacy_key_range:
        r.integer(number)
    categories = spec.acl_categories
    r.set(len(categories))
    for cat in categories:
        r.simple("@" + cat)
    r.set(len(spec.tips))
    for tip in spec.tips:
        r.bulk(tip)
    r.set(len(spec.key_specs))
    for ks in spec.key_specs:
        r.map(4 if ks.notes else 3)
        if ks.notes:
            r.bulk("notes")
            r.bulk(ks.notes)
        r.bulk("flags")
        r.set(len(ks.flags))
        for flag in ks.flags:
            r.simple(flag)
        r.bulk("begin_search")
        r.map(2)
        r.bulk("type")
        if ks.unknown:
            _reply_unknown_search(r)
            r.bulk("find_keys")
            r.map(2)
            r.bulk("type")
            _reply_unknown_search(r)
            continue
        if ks.keyword:
            r.bulk("keyword")
            r.bulk("spec")
            r.map(2)
            r.bulk("keyword")
            r.bulk(ks.keyword)
            r.bulk("startfrom")
            r.integer(ks.startfrom)
        else:
            r.bulk("index")
            r.bulk("spec")
            r.map(1)
            r.bulk("index")
            r.integer(ks.index)
        r.bulk("find_keys")
        r.map(2)
        r.bulk("type")
        if ks.keynum:
            r.bulk("keynum")
            r.bulk("spec")
            r.map(3)
            for name, value in zip(("keynumidx", "firstkey", "keystep"), ks.keynum):
                r.bulk(name)
                r.integer(value)
            continue
        r.bulk("range")
        r.bulk("spec")
        r.map(3)
        r.bulk("lastkey")
        r.integer(ks.last_key)
        r.bulk("keystep")
        r.integer(ks.key_step)
        r.bulk("limit")
        r.integer(ks.limit)
    if spec.subcommands:
        r.array(len(spec.subcommands))
        for sub in spec.subcommands.values():
            reply_command_info(c, sub)
    else:
        r.set(0)


def _reply_unknown_search(r):
    r.bulk("unknown")
    r.bulk("spec")
    r.map(0)


def reply_command_docs(c, spec):
    """One COMMAND DOCS entry: Redis 7.0's fields, in its order, each only when it has content."""
    r = c.reply
    docs = DOCS.get(spec.name, NO_DOCS)
    optional = (docs.doc_flags, docs.deprecated_since, docs.replaced_by, docs.history,
                docs.arguments, spec.subcommands)
    r.map(3 + bool(spec.complexity) + sum(1 for part in optional if part))
    for field in ("summary", "since", "group", "complexity"):
        if getattr(spec, field):    # only MONITOR has no complexity
            r.bulk(field)
            r.bulk(getattr(spec, field))
    if docs.doc_flags:
        r.bulk("doc_flags")
        _reply_simple_set(r, docs.doc_flags)
    for field in ("deprecated_since", "replaced_by"):
        if getattr(docs, field):
            r.bulk(field)
            r.bulk(getattr(docs, field))
    if docs.history:
        r.bulk("history")
        r.set(len(docs.history))
        for version, change in docs.history:
            r.array(2)
            r.bulk(version)
            r.bulk(change)
    if docs.arguments:
        r.bulk("arguments")
        _reply_doc_arguments(r, docs.arguments)
    if spec.subcommands:
        r.bulk("subcommands")
        r.map(len(spec.subcommands))
        for sub in spec.subcommands.values():
            r.bulk(sub.name)
            reply_command_docs(c, sub)


def _reply_doc_arguments(r, arguments):
    r.array(len(arguments))
    for arg in arguments:
        texts = [("token", arg.token)] if arg.token is not None else []
        texts += [(field, getattr(arg, field)) for field in ("since", "deprecated_since")
                  if getattr(arg, field)]
        has_key_spec = arg.key_spec_index >= 0
        r.map(2 + has_key_spec + len(texts) + bool(arg.flags) + bool(arg.arguments))
        r.bulk("name")
        r.bulk(arg.name)
        r.bulk("type")
        r.bulk(arg.type)
        if has_key_spec:
            r.bulk("key_spec_index")
            r.integer(arg.key_spec_index)
        for field, text in texts:
            r.bulk(field)
            r.bulk(text)
        if arg.flags:
            r.bulk("flags")
            _reply_simple_set(r, arg.flags)
        if arg.arguments:
            r.bulk("arguments")
            _reply_doc_arguments(r, arg.arguments)


def _reply_simple_set(r, words):
    r.set(len(words))
    for word in words:
        r.simple(word)


# --- the rest -------------------------------------------------------------
def cmd_time(c, argv):
    now = time.time_ns() // 1000
    c.reply.array(2)
    c.reply.bulk(str(now // 1_000_000))
    c.reply.bulk(str(now % 1_000_000))


# --- persistence (persistence.py: the arenas are it) --------------------------
def cmd_lastsave(c, argv):
    c.reply.integer(c.services.persistence.lastsave)


def cmd_save(c, argv):
    persistence = c.services.persistence
    for_administrators(c, "SAVE")
    if persistence.in_progress:
        raise CommandError(BGSAVE_IN_PROGRESS)
    try:
        persistence.save()
    except OSError as e:
        log.warning("Failed saving the DB: %s", e)
        raise CommandError("ERR") from None     # Redis's bare -ERR
    c.reply.ok()


def cmd_bgsave(c, argv):
    # SCHEDULE waits for another child process in Redis; here there is none to wait for.
    if len(argv) > 1 and (len(argv) > 2 or c_word(argv[1]) != b"schedule"):
        raise CommandError(errors.SYNTAX)
    persistence = c.services.persistence
    for_administrators(c, "BGSAVE")
    if persistence.in_progress:
        raise CommandError(BGSAVE_IN_PROGRESS)
    if c.multi is not None:         # inside EXEC: once the transaction is done
        persistence.schedule_background()
        c.reply.simple("Background saving scheduled")
        return
    persistence.start_background()
    c.reply.simple("Background saving started")


def cmd_bgrewriteaof(c, argv):
    # No append-only file, so nothing to rewrite; Redis's answers, as with appendonly no.
    if c.services.persistence.in_progress or c.multi is not None:
        c.reply.simple("Background append only file rewriting scheduled")
    else:
        c.reply.simple("Background append only file rewriting started")


# --- replication: a primary without replicas ------------------------------------
def cmd_role(c, argv):
    c.reply.array(3)
    c.reply.bulk("master")
    c.reply.integer(0)          # master_repl_offset: nothing is replicated
    c.reply.array(0)            # no replicas


def cmd_wait(c, argv):
    numreplicas = parse_int(argv[1])
    timeout = parse_timeout_ms(argv[2])
    if numreplicas <= 0 or c.multi is not None:     # as many as asked acknowledged (0), or EXEC
        c.reply.integer(0)
        return
    c.services.blocked.wait(c, timeout, _no_replica_acknowledged)


def cmd_waitaof(c, argv):
    """WAITAOF numlocal numreplicas timeout (Redis 7.2), with no append-only file and no
    replica: a local fsync cannot be asked for; none acknowledged ([0, 0]), at once when
    no replica is asked for (or inside a transaction), else once the timeout passes."""
    numlocal = parse_int(argv[1])
    if not 0 <= numlocal <= 1:
        raise CommandError("ERR value is out of range, value must between 0 and 1")
    numreplicas = parse_int(argv[2], WAITAOF_REPLICAS_RANGE)
    if numreplicas < 0:
        raise CommandError(WAITAOF_REPLICAS_RANGE)
    timeout = parse_timeout_ms(argv[3])
    if numlocal:
        raise CommandError("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
    if not numreplicas or not c.may_block:
        _nothing_fsynced(c)
        return
    c.services.blocked.wait(c, timeout, _nothing_fsynced)


WAITAOF_REPLICAS_RANGE = "ERR value is out of range, must be positive"


def _nothing_fsynced(c):
    c.reply.array(2)
    c.reply.integer(0)          # local AOFs fsynced: there is none
    c.reply.integer(0)          # replicas that acknowledged


def _no_replica_acknowledged(c):
    c.reply.integer(0)


def cmd_shutdown(c, argv):
    for arg in argv[1:]:
        if upper(arg) not in ("NOSAVE", "SAVE", "NOW", "FORCE", "ABORT"):
            raise CommandError(errors.SYNTAX)
    if any(upper(a) == "ABORT" for a in argv[1:]):
        raise CommandError("ERR No shutdown in progress.")
    c.services.check_shutdown_allowed()
    # Redis closes the caller's connection without a reply on success.
    c.services.request_shutdown("User requested shutdown")


DEBUG_HELP = (
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ARENA-CHECK",
    "    Check every structure of the arena (index, allocator, LRU lists, counters);",
    "    returns the list of problems found, empty when consistent.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "HELP",
    "    Print this help.",
)


def cmd_debug(c, argv):
    sub = upper(argv[1])
    if sub == "HELP":
        reply_help(c, DEBUG_HELP)
    elif sub == "SLEEP" and len(argv) == 3:
        try:
            seconds = float(bytes(argv[2]))
        except ValueError:
            seconds = 0.0  # Redis uses strtod and sleeps 0 on junk
        time.sleep(max(seconds, 0.0))  # blocks the whole server on purpose, like Redis
        c.reply.ok()
    elif sub == "ARENA-CHECK" and len(argv) == 2:
        problems = c.services.check_arenas()
        c.reply.array(len(problems))
        for p in problems:
            c.reply.bulk(p)
    elif sub == "OBJECT" and len(argv) == 3:
        debug_object(c, argv[2])
    else:
        raise CommandError(errors.subcommand_syntax(argv))


LRU_CLOCK_MAX = (1 << 24) - 1       # Redis's LRU clock: seconds, in 24 bits


def debug_object(c, key):
    """DEBUG OBJECT's line, Redis's fields: where the value is (in this process's mapping
    of the arena), OBJECT REFCOUNT's and ENCODING's answers, the length of its RDB (DUMP)
    serialization, the LRU clock of its last access and the seconds since; for a list,
    the quicklist Redis would hold it in (as DUMP writes it)."""
    entry = c.store.find(c.db, key, touch=False, stats=False)
    if entry is None:
        raise CommandError(errors.NO_SUCH_KEY)
    limits = dump_limits(c.services.config)
    head, body, footer = payload_parts(entry, limits)
    serialized = len(head) + len(body) + len(footer) - 11   # not its type byte, version, CRC
    idle_ms = entry.idle_ms
    lru = ((time.time_ns() // 1_000_000 - idle_ms) // 1000) & LRU_CLOCK_MAX
    quicklist = _quicklist_fields(c, entry, limits) if entry.type == TYPE_LIST else ""
    c.reply.simple(f"Value at:{hex(c.store.arena.address + entry.mapped_offset)} "
                   f"refcount:{refcount(c, entry)} encoding:{encoding(c, entry)} "
                   f"serializedlength:{serialized} lru:{lru} lru_seconds_idle:{idle_ms // 1000}"
                   f"{quicklist}")


def _quicklist_fields(c, entry, limits):
    """What DEBUG OBJECT adds for a list: its quicklist's nodes, their average count, the
    fill, whether inner nodes are compressed (list-compress-depth), the nodes' bytes."""
    coll = entry.collection()
    nodes = quicklist_nodes(coll.list_range(0, len(coll)), limits.list_max_listpack_size)
    compressed = int(c.services.config["list-compress-depth"] != 0)
    return (f" ql_nodes:{len(nodes)} ql_avg_node:{len(coll) / len(nodes):.2f}"
            f" ql_listpack_max:{limits.list_max_listpack_size} ql_compressed:{compressed}"
            f" ql_uncompressed_size:{sum(len(blob) for _, blob in nodes)}")


# --- MEMORY's server-wide reports (metrics.memory_report; MEMORY USAGE is in keys.py) ----
def cmd_memory_stats(c, argv):
    r = c.reply
    fields = c.services.memory_report(c).fields
    r.map(len(fields))
    for name, value in fields:
        r.bulk(name)
        if isinstance(value, list):         # a db's
            r.map(len(value))
            for inner, number in value:
                r.bulk(inner)
                r.integer(number)
        elif isinstance(value, float):
            r.double(value)
        else:
            r.integer(value)


def cmd_memory_doctor(c, argv):
    c.reply.verbatim(c.services.memory_report(c).doctor)


def cmd_memory_malloc_stats(c, argv):
    c.reply.verbatim(c.services.memory_report(c).allocator)


def cmd_memory_purge(c, argv):
    c.services.release_memory()     # the arenas' idle free pages back to their backings
    c.reply.ok()
