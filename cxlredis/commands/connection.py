"""Connection commands: PING, ECHO, HELLO, QUIT, RESET, SELECT, CLIENT *."""
import time

from .. import acl, errors
from ..errors import CommandError
from .args import parse_int, upper

PROTOCOL_NOT_INTEGER = "ERR Protocol version is not an integer or out of range"
BAD_CLIENT_NAME = "ERR Client names cannot contain spaces, newlines or special characters."
NO_SUCH_CLIENT = "ERR No such client"
HELLO_NOAUTH = ("NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
                "the RESP protocol version at the same time")


def cmd_ping(c, argv):
    if len(argv) > 2:
        raise CommandError(errors.wrong_arity("ping"))
    if len(argv) == 2:
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
            raise CommandError(f"ERR Syntax error in HELLO option '{errors._clip(argv[i], 128)}'")
    if not c.authenticated:
        raise CommandError(HELLO_NOAUTH)
    c.set_protocol(protover)
    server = c.server
    c.reply.map(7)
    c.reply.bulk("server")
    c.reply.bulk("redis")
    c.reply.bulk("version")
    c.reply.bulk(server.version)
    c.reply.bulk("proto")
    c.reply.integer(protover)
    c.reply.bulk("id")
    c.reply.integer(c.id)
    c.reply.bulk("mode")
    c.reply.bulk("standalone")
    c.reply.bulk("role")
    c.reply.bulk("master")
    c.reply.bulk("modules")
    c.reply.array(0)


def authenticate(c, username, password, command):
    """AUTH and HELLO AUTH: become `username`, or fail with WRONGPASS (logged in ACL LOG)."""
    if not c.server.acl.authenticate(c, username, password, command):
        raise CommandError(acl.WRONGPASS)


def cmd_quit(c, argv):
    c.reply.ok()
    c.close_after_reply()


def cmd_reset(c, argv):
    c.discard_multi()
    c.watched.clear()
    c.db = 0
    c.set_protocol(2)
    c.reply_mode = "on"
    c.name = b""
    c.no_evict = False
    c.server.acl.attach(c)
    c.reply.simple("RESET")


def cmd_select(c, argv):
    c.db = select_db(c, argv[1])
    c.reply.ok()


def select_db(c, arg):
    db = parse_int(arg)
    if db < -(1 << 31) or db >= 1 << 31:  # Redis reads the index as a C int
        raise CommandError(errors.int_out_of_range(-(1 << 31), (1 << 31) - 1))
    if db < 0 or db >= c.server.config["databases"]:
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
    clients = list(c.server.clients.values())
    i = 2
    while i < len(argv):
        option = upper(argv[i])
        if option == "TYPE" and i + 1 < len(argv):
            kind = upper(argv[i + 1])
            if kind not in ("NORMAL", "MASTER", "REPLICA", "SLAVE", "PUBSUB"):
                raise CommandError(f"ERR Unknown client type '{errors._clip(argv[i + 1], 128)}'")
            # Every client here is a normal one: no replication, no pub/sub yet.
            clients = clients if kind == "NORMAL" else []
            i += 2
        elif option == "ID" and i + 1 < len(argv):
            ids = set()
            for arg in argv[i + 1:]:
                ident = parse_int(arg, "ERR Invalid client ID")
                if ident <= 0:
                    raise CommandError("ERR Invalid client ID")
                ids.add(ident)
            clients = [cl for cl in clients if cl.id in ids]
            i = len(argv)
        else:
            raise CommandError(errors.SYNTAX)
    c.reply.verbatim("".join(client_info_line(cl) + "\n" for cl in sorted(clients, key=lambda cl: cl.id)))


def cmd_client_info(c, argv):
    c.reply.verbatim(client_info_line(c) + "\n")


def client_info_line(cl):
    now = time.monotonic()
    flags = ("x" if cl.multi is not None else "") + ("e" if cl.no_evict else "") or "N"
    qbuf = cl.parser.buffered
    obl = cl.reply.pending
    omem = cl.transport.get_write_buffer_size() if cl.transport is not None else 0
    return (f"id={cl.id} addr={cl.addr} laddr={cl.laddr} fd={cl.fd} "
            f"name={cl.name.decode('utf-8', 'replace')} age={int(now - cl.created)} "
            f"idle={int(now - cl.last_interaction)} flags={flags} db={cl.db} sub=0 psub=0 ssub=0 "
            f"multi={len(cl.multi) if cl.multi is not None else -1} qbuf={qbuf} qbuf-free=0 "
            f"argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl={obl} oll={len(cl.inflight_pins)} omem={omem} "
            f"tot-mem={qbuf + obl + omem} events=r cmd={cl.last_command} "
            f"user={cl.user.name.decode('utf-8', 'replace')} redir=-1 "
            f"resp={cl.protocol} lib-name={cl.lib_name.decode('utf-8', 'replace')} "
            f"lib-ver={cl.lib_ver.decode('utf-8', 'replace')}")


def cmd_client_kill(c, argv):
    server = c.server
    if len(argv) == 3:  # the old form: CLIENT KILL addr:port
        addr = bytes(argv[2]).decode("utf-8", "replace")
        victims = [cl for cl in server.clients.values() if cl.addr == addr]
        if not victims:
            raise CommandError(NO_SUCH_CLIENT)
        kill(c, victims[:1], argv)
        c.reply.ok()
        return
    if len(argv) % 2 != 0:
        raise CommandError(errors.SYNTAX)
    filters = []
    skipme = True
    for i in range(2, len(argv), 2):
        option, value = upper(argv[i]), bytes(argv[i + 1]).decode("utf-8", "replace")
        if option == "ID":
            ident = parse_int(argv[i + 1], "ERR client-id should be greater than 0")
            if ident <= 0:
                raise CommandError("ERR client-id should be greater than 0")
            filters.append(lambda cl, ident=ident: cl.id == ident)
        elif option == "ADDR":
            filters.append(lambda cl, value=value: cl.addr == value)
        elif option == "LADDR":
            filters.append(lambda cl, value=value: cl.laddr == value)
        elif option == "TYPE":
            kind = value.lower()
            if kind not in ("normal", "master", "replica", "slave", "pubsub"):
                raise CommandError(f"ERR Unknown client type '{value}'")
            filters.append(lambda cl, kind=kind: kind == "normal")
        elif option == "USER":
            user = server.acl.users.get(bytes(argv[i + 1]))
            if user is None:
                raise CommandError(f"ERR No such user '{errors._clip(argv[i + 1], 128)}'")
            filters.append(lambda cl, user=user: cl.user is user)
        elif option == "SKIPME":
            if value.lower() not in ("yes", "no"):
                raise CommandError(errors.SYNTAX)
            skipme = value.lower() == "yes"
        elif option == "MAXAGE":
            maxage = parse_int(argv[i + 1], errors.NOT_INTEGER)
            now = time.monotonic()
            filters.append(lambda cl, maxage=maxage: now - cl.created >= maxage)
        else:
            raise CommandError(errors.SYNTAX)
    victims = [cl for cl in c.server.clients.values()
               if all(f(cl) for f in filters) and not (skipme and cl is c)]
    kill(c, victims, argv)
    c.reply.integer(len(victims))


def kill(c, victims, argv):
    c.server.audit.record(c, "client_kill", filters=[bytes(a).decode("utf-8", "backslashreplace")
                                                     for a in argv[2:]],
                          killed=[cl.id for cl in victims])
    for cl in victims:
        cl.killed = True
        if cl is c:
            c.close_after_reply()  # Redis answers the caller before closing it
        else:
            cl.close()


def cmd_client_setinfo(c, argv):
    attr = upper(argv[2])
    value = bytes(argv[3])
    if attr not in ("LIB-NAME", "LIB-VER"):
        raise CommandError(f"ERR Unrecognized option '{errors._clip(argv[2], 128)}'")
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


CLIENT_HELP = (
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
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
    "HELP",
    "    Print this help.",
)


def cmd_client_help(c, argv):
    reply_help(c, CLIENT_HELP)


def reply_help(c, lines):
    c.reply.array(len(lines))
    for line in lines:
        c.reply.simple(line)
