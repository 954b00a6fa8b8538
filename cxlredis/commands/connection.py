"""Connection commands: PING, ECHO, HELLO, QUIT, RESET, SELECT, CLIENT *."""
import time

from .. import acl, errors
from ..blocked import PAUSE_ALL, PAUSE_WRITE
from ..errors import CommandError
from ..tracking import Mode
from .args import keyword, parse_int, parse_timeout_ms, upper

PROTOCOL_NOT_INTEGER = "ERR Protocol version is not an integer or out of range"
BAD_CLIENT_NAME = "ERR Client names cannot contain spaces, newlines or special characters."
NO_SUCH_CLIENT = "ERR No such client"
HELLO_NOAUTH = ("NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
                "the RESP protocol version at the same time")


def cmd_ping(c, argv):
    if len(argv) > 2:
        raise CommandError(errors.wrong_arity("ping"))
    if c.subscribed and c.protocol == 2:
        # Between RESP2 messages a reply must look like one: ["pong", message or ""].
        c.reply.array(2)
        c.reply.bulk("pong")
        c.reply.bulk(argv[1] if len(argv) == 2 else b"")
    elif len(argv) == 2:
        c.reply.bulk(argv[1])
    else:
        c.reply.simple("PONG")


def cmd_echo(c, argv):
    c.reply.bulk(argv[1])


def cmd_hello(c, argv):
    protover = c.protocol
    if len(argv) >= 2:
        protover = parse_int(argv[1], PROTOCOL_NOT_INTEGER)
        if protover < 2 or protover > 3:
            raise CommandError(errors.NOPROTO)
    i = 2
    # Each option takes effect as it is read, as in Redis: a later bad option
    # leaves an earlier AUTH or SETNAME done.
    while i < len(argv):
        option = upper(argv[i])
        more = len(argv) - i - 1
        if option == "AUTH" and more >= 2:
            authenticate(c, argv[i + 1], argv[i + 2], argv[0])
            i += 3
        elif option == "SETNAME" and more >= 1:
            c.name = check_client_name(argv[i + 1])
            i += 2
        else:
            raise CommandError(f"ERR Syntax error in HELLO option '{errors.clipped(argv[i])}'")
    if not c.authenticated:
        raise CommandError(HELLO_NOAUTH)
    c.set_protocol(protover)
    c.reply.map(7)
    c.reply.bulk("server")
    c.reply.bulk("redis")
    c.reply.bulk("version")
    c.reply.bulk(c.services.version)
    c.reply.bulk("proto")
    c.reply.integer(protover)
    c.reply.bulk("id")
    c.reply.integer(c.id)
    c.reply.bulk("mode")
    c.reply.bulk("standalone" if c.services.cluster is None else "cluster")
    c.reply.bulk("role")
    c.reply.bulk("master")
    c.reply.bulk("modules")
    c.reply.array(0)


def authenticate(c, username, password, command):
    """AUTH and HELLO AUTH: become `username`, or fail with WRONGPASS (logged in ACL LOG)."""
    if not c.services.acl.authenticate(c, username, password, command):
        raise CommandError(acl.WRONGPASS)


def cmd_quit(c, argv):
    c.reply.ok()
    c.close_after_reply()


def cmd_reset(c, argv):
    c.discard_multi()
    c.unwatch_all()
    c.db = 0
    c.set_protocol(2)
    c.reply_mode = "on"
    c.name = b""
    # CLIENT NO-EVICT survives RESET in Redis 7.0 (7.2 started turning it off).
    c.services.clients.stop_monitor(c)
    c.services.pubsub.drop_all(c)
    c.services.tracking.disable(c)
    c.services.acl.attach(c)
    c.reply.simple("RESET")


def cmd_select(c, argv):
    c.db = select_db(c, argv[1])
    c.reply.ok()


def select_db(c, arg):
    db = parse_int(arg)
    if db < -(1 << 31) or db >= 1 << 31:  # Redis reads the index as a C int
        raise CommandError(errors.int_out_of_range(-(1 << 31), (1 << 31) - 1))
    if db != 0 and c.services.cluster is not None:    # a cluster node has db 0 only
        raise CommandError("ERR SELECT is not allowed in cluster mode")
    if db < 0 or db >= c.services.config["databases"]:
        raise CommandError(errors.DB_INDEX_OUT_OF_RANGE)
    return db


def cmd_client_id(c, argv):
    c.reply.integer(c.id)


def cmd_client_setname(c, argv):
    c.name = check_client_name(argv[2])
    c.reply.ok()


def check_client_name(name):
    name = bytes(name)
    if any(ch < 33 or ch > 126 for ch in name):
        raise CommandError(BAD_CLIENT_NAME)
    return name


def cmd_client_getname(c, argv):
    if c.name:
        c.reply.bulk(c.name)
    else:
        c.reply.null()


def cmd_client_list(c, argv):
    """CLIENT LIST [TYPE type | ID id...], as Redis 7.0 parses it: one filter at most."""
    if len(argv) == 4 and upper(argv[2]) == "TYPE":
        kind = client_type(argv[3])
        clients = [cl for cl in visible_clients(c) if class_of(cl) == kind]
    elif len(argv) > 3 and upper(argv[2]) == "ID":
        # IDs in the order given, repeats included; an ID that is no client lists nothing.
        ids = [parse_int(arg, "ERR Invalid client ID") for arg in argv[3:]]
        by_id = {cl.id: cl for cl in visible_clients(c)}
        clients = [by_id[ident] for ident in ids if ident in by_id]
    elif len(argv) == 2:
        clients = visible_clients(c)
    else:
        raise CommandError(errors.SYNTAX)
    info_line = c.services.clients.info_line
    c.reply.verbatim("".join(info_line(cl, argv if cl is c else None) + "\n" for cl in clients))


def cmd_client_info(c, argv):
    c.reply.verbatim(c.services.clients.info_line(c, argv) + "\n")


def visible_clients(c):
    """The clients c may list or kill, by id: all of them for an administrator, its own
    tenant's for a tenant's connection (their names and commands are that tenant's)."""
    sessions = c.services.clients.sessions()
    if c.tenant is None:
        return sessions
    return [session for session in sessions if session.tenant == c.tenant]


def client_type(arg):
    """A client type name as CLIENT LIST/KILL TYPE take it ("slave" is "replica")."""
    kind = bytes(arg).decode("utf-8", "replace").lower()
    if kind not in ("normal", "master", "replica", "slave", "pubsub"):
        raise CommandError(f"ERR Unknown client type '{errors.clipped(arg)}'")
    return "replica" if kind == "slave" else kind


def class_of(session):
    """Redis's getClientType: pubsub while subscribed, else normal (monitors too; there is
    no replication here)."""
    return "pubsub" if session.subscribed else "normal"


def cmd_client_kill(c, argv):
    """CLIENT KILL addr:port (OK or an error), or CLIENT KILL <filter> <value>... (the number
    killed): Redis 7.0's filters ID, TYPE, USER, ADDR, LADDR, SKIPME, plus Redis 7.4's
    MAXAGE. Options are read in order, the first bad one answering; a repeated option
    replaces the earlier one. A tenant's connection reaches its own tenant's clients only."""
    if len(argv) == 3:  # the old form, which may kill the caller itself
        addr = bytes(argv[2]).decode("utf-8", "replace")
        victims = [cl for cl in visible_clients(c) if cl.addr == addr]
        if not victims:
            raise CommandError(NO_SUCH_CLIENT)
        c.reply.ok()
        kill(c, victims, argv)
        return
    wanted = {}
    skipme = True
    for i in range(2, len(argv), 2):
        option = upper(argv[i])
        if i + 1 == len(argv):
            raise CommandError(errors.SYNTAX)
        value = argv[i + 1]
        if option == "ID":
            ident = parse_int(value, "ERR client-id should be greater than 0")
            if ident <= 0:
                raise CommandError("ERR client-id should be greater than 0")
            wanted["id"] = ident
        elif option == "TYPE":
            wanted["type"] = client_type(value)
        elif option == "USER":
            user = c.services.acl.users.get(bytes(value))
            if user is None:
                raise CommandError(f"ERR No such user '{errors.clipped(value)}'")
            wanted["user"] = user
        elif option == "ADDR":
            wanted["addr"] = bytes(value).decode("utf-8", "replace")
        elif option == "LADDR":
            wanted["laddr"] = bytes(value).decode("utf-8", "replace")
        elif option == "SKIPME":
            answer = upper(value)
            if answer not in ("YES", "NO"):
                raise CommandError(errors.SYNTAX)
            skipme = answer == "YES"
        elif option == "MAXAGE":
            wanted["maxage"] = parse_int(value)
        else:
            raise CommandError(errors.SYNTAX)
    now = time.monotonic()
    victims = [cl for cl in visible_clients(c)
               if ("id" not in wanted or cl.id == wanted["id"])
               and ("type" not in wanted or class_of(cl) == wanted["type"])
               and ("user" not in wanted or cl.user is wanted["user"])
               and ("addr" not in wanted or cl.addr == wanted["addr"])
               and ("laddr" not in wanted or cl.laddr == wanted["laddr"])
               and ("maxage" not in wanted or now - cl.created > wanted["maxage"])
               and not (skipme and cl is c)]
    c.reply.integer(len(victims))
    kill(c, victims, argv)


def kill(c, victims, argv):
    """Close the victims (the caller itself after this command's reply)."""
    c.services.audit.record(c, "client_kill",
                            filters=[bytes(a).decode("utf-8", "backslashreplace") for a in argv[2:]],
                            killed=[cl.id for cl in victims])
    c.services.clients.disconnect(victims, c)


def for_administrators(c, what):
    """Refuse what (a command's name) to a tenant's connection: it acts on the whole server,
    every tenant's clients or data, as TENANT's management does."""
    if c.tenant is not None:
        raise CommandError(f"ERR {what} is for administrators: this connection belongs to "
                           f"tenant '{c.tenant}'")


def cmd_client_pause(c, argv):
    """CLIENT PAUSE timeout [WRITE|ALL], as Redis 7.0 (blocked.py holds the commands)."""
    if len(argv) > 4:
        raise CommandError(errors.subcommand_syntax(argv))
    kind = PAUSE_ALL
    if len(argv) == 4:
        kind = keyword(argv[3], {b"write": PAUSE_WRITE, b"all": PAUSE_ALL},
                       "ERR CLIENT PAUSE mode must be WRITE or ALL")
    timeout = parse_timeout_ms(argv[2])
    for_administrators(c, "CLIENT PAUSE")
    c.services.blocked.pause(timeout, kind)
    c.reply.ok()


def cmd_client_unblock(c, argv):
    """CLIENT UNBLOCK id [TIMEOUT|ERROR], as Redis 7.0: a client blocked on keys or in WAIT
    is answered as if its timeout had passed, or with an UNBLOCKED error. A tenant's
    connection reaches its own tenant's clients only. (Redis 7.0.15 dies on a client a
    pause holds; here it is not blocked in a way this ends: 0.)"""
    if len(argv) > 4:
        raise CommandError(errors.subcommand_syntax(argv))
    error = False
    if len(argv) == 4:
        error = keyword(argv[3], {b"timeout": False, b"error": True},
                        "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    ident = parse_int(argv[2])
    target = next((s for s in visible_clients(c) if s.id == ident), None)
    c.reply.integer(int(target is not None and c.services.blocked.unblock(target, error)))


def cmd_client_unpause(c, argv):
    for_administrators(c, "CLIENT UNPAUSE")
    c.services.blocked.unpause()
    c.reply.ok()


def cmd_client_setinfo(c, argv):
    attr = upper(argv[2])
    value = bytes(argv[3])
    if attr not in ("LIB-NAME", "LIB-VER"):
        raise CommandError(f"ERR Unrecognized option '{errors.clipped(argv[2])}'")
    if any(ch < 33 or ch > 126 for ch in value):
        raise CommandError(f"ERR {attr.lower()} cannot contain spaces, newlines or special characters.")
    if attr == "LIB-NAME":
        c.lib_name = value
    else:
        c.lib_ver = value
    c.reply.ok()


def cmd_client_maint_notifications(c, argv):
    if upper(argv[2]) not in ("ON", "OFF"):
        raise CommandError(errors.SYNTAX)
    c.reply.ok()


def cmd_client_no_evict(c, argv):
    mode = upper(argv[2])
    if mode not in ("ON", "OFF"):
        raise CommandError(errors.SYNTAX)
    c.no_evict = mode == "ON"
    c.reply.ok()


def cmd_client_reply(c, argv):
    mode = upper(argv[2])
    if mode == "ON":
        c.reply_mode = "on"
        c.reply.ok()
    elif mode == "OFF":
        c.reply_mode = "off"
    elif mode == "SKIP":
        if c.reply_mode != "off":  # SKIP means nothing while replies are off
            c.reply_mode = "skip"
    else:
        raise CommandError(errors.SYNTAX)


def cmd_client_tracking(c, argv):
    """CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]... [OPTIN] [OPTOUT] [NOLOOP]:
    the options are read first (OFF too checks them), then ON's compatibility rules, in
    Redis's order."""
    redirect, prefixes = 0, []
    flags = set()
    i = 3
    while i < len(argv):
        option = upper(argv[i])
        more = i + 1 < len(argv)
        if option == "REDIRECT" and more:
            i += 1
            if redirect:
                raise CommandError("ERR A client can only redirect to a single other client")
            redirect = parse_int(argv[i])
            # Invalidations name keys: they go to a client of the same tenant only.
            target = c.services.clients.client_session(redirect)
            if target is None or target.tenant != c.tenant:
                raise CommandError("ERR The client ID you want redirect to does not exist")
        elif option in ("BCAST", "OPTIN", "OPTOUT", "NOLOOP"):
            flags.add(option)
        elif option == "PREFIX" and more:
            i += 1
            prefixes.append(bytes(argv[i]))
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    switch = upper(argv[2])
    if switch == "OFF":
        c.services.tracking.disable(c)
    elif switch == "ON":
        old = c.tracking
        bcast = "BCAST" in flags
        if prefixes and not bcast:
            raise CommandError("ERR PREFIX option requires BCAST mode to be enabled")
        if old is not None and old.bcast != bcast:
            raise CommandError("ERR You can't switch BCAST mode on/off before disabling tracking for "
                               "this client, and then re-enabling it with a different mode.")
        if bcast and flags & {"OPTIN", "OPTOUT"}:
            raise CommandError("ERR OPTIN and OPTOUT are not compatible with BCAST")
        if {"OPTIN", "OPTOUT"} <= flags:
            raise CommandError("ERR You can't specify both OPTIN mode and OPTOUT mode")
        if old is not None and ("OPTIN" in flags and old.optout or "OPTOUT" in flags and old.optin):
            raise CommandError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for "
                               "this client, and then re-enabling it with a different mode.")
        if bcast:
            check_prefixes(prefixes, old.prefixes if old is not None else {})
        mode = Mode(redirect, bcast, "OPTIN" in flags, "OPTOUT" in flags, "NOLOOP" in flags)
        if bcast:
            mode.prefixes = dict.fromkeys(prefixes or (b"",))
        if old is not None:
            mode.caching = old.caching      # Redis's enableTracking leaves CACHING as it was
        c.services.tracking.enable(c, mode)
    else:
        raise CommandError(errors.SYNTAX)
    c.reply.ok()


# Up to this many prefixes in a call, the overlap named is the one Redis names, found
# as Redis searches (pair by pair); past it, an overlap is found in sorted order, so a
# call with many prefixes costs n log n, not n².
PREFIX_PAIRS_LIMIT = 256


def check_prefixes(given, existing):
    """BCAST prefixes of one client must not overlap: no two would match the same key."""
    if len(given) + len(existing) <= PREFIX_PAIRS_LIMIT:
        for i, prefix in enumerate(given):
            for other in sorted(existing):
                if _overlap(prefix, other):
                    raise _overlap_error(prefix, other, True)
            for other in given[i + 1:]:
                if _overlap(prefix, other):
                    raise _overlap_error(prefix, other, False)
        return
    # (any string sorted between a prefix and a string it starts is started by it too,
    # so an overlap shows between neighbours; existing prefixes may overlap each other
    # only through "", which BCAST without PREFIX adds unchecked)
    if b"" in existing and given:
        raise _overlap_error(given[0], b"", True)
    ranked = sorted([(prefix, False) for prefix in given] + [(prefix, True) for prefix in existing])
    for (first, old_first), (second, old_second) in zip(ranked, ranked[1:]):
        if not (old_first and old_second) and second.startswith(first):
            if old_first or old_second:
                new, old = (second, first) if old_first else (first, second)
                raise _overlap_error(new, old, True)
            raise _overlap_error(first, second, False)


def _overlap(a, b):
    return a.startswith(b) or b.startswith(a)


def _overlap_error(prefix, other, existing):
    where = "an existing prefix" if existing else "another provided prefix"
    return CommandError(f"ERR Prefix '{errors.c_string(prefix)}' overlaps with {where} "
                        f"'{errors.c_string(other)}'. Prefixes for a single client must not overlap.")


def cmd_client_caching(c, argv):
    mode = c.tracking
    if mode is None:
        raise CommandError("ERR CLIENT CACHING can be called only when the client is in tracking mode "
                           "with OPTIN or OPTOUT mode enabled")
    answer = upper(argv[2])
    if answer == "YES":
        if not mode.optin:
            raise CommandError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
    elif answer == "NO":
        if not mode.optout:
            raise CommandError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    else:
        raise CommandError(errors.SYNTAX)
    mode.caching = True
    c.reply.ok()


def cmd_client_getredir(c, argv):
    c.reply.integer(c.tracking.redirect if c.tracking is not None else -1)


def cmd_client_trackinginfo(c, argv):
    mode = c.tracking
    flags = ["off"]
    if mode is not None:
        flags = ["on"]
        if mode.bcast:
            flags.append("bcast")
        if mode.optin:
            flags += ["optin"] + (["caching-yes"] if mode.caching else [])
        if mode.optout:
            flags += ["optout"] + (["caching-no"] if mode.caching else [])
        if mode.noloop:
            flags.append("noloop")
        if mode.broken_redirect:
            flags.append("broken_redirect")
    c.reply.map(3)
    c.reply.bulk("flags")
    c.reply.set(len(flags))
    for flag in flags:
        c.reply.bulk(flag)
    c.reply.bulk("redirect")
    c.reply.integer(mode.redirect if mode is not None else -1)
    c.reply.bulk("prefixes")
    c.reply.bulk_array(sorted(mode.prefixes) if mode is not None else ())


CLIENT_HELP = (
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <LIB-NAME|LIB-VER> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "HELP",
    "    Prints this help.",
)


def cmd_client_help(c, argv):
    reply_help(c, CLIENT_HELP)


def reply_help(c, lines):
    c.reply.array(len(lines))
    for line in lines:
        c.reply.simple(line)


def reply_fields(c, fields):
    """A map of (name, value) pairs: integers as integers, anything else as bulk strings."""
    c.reply.map(len(fields))
    for name, value in fields:
        c.reply.bulk(name)
        if isinstance(value, int):
            c.reply.integer(value)
        else:
            c.reply.bulk(value)
