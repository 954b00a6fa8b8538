"""AUTH and the ACL command family; the rules and checks live in cxlredis/acl.py."""
import logging

from .. import acl as rules
from .. import errors
from . import registry
from ..audit import redacted_rule
from ..errors import CommandError
from .args import parse_int, upper
from .table import ACL_CATEGORIES
from .connection import authenticate, reply_help

log = logging.getLogger("cxlredis")

AUTH_WITHOUT_PASSWORD = ("ERR AUTH <password> called without any password configured for the "
                         "default user. Are you sure your configuration is correct?")
GENPASS_RANGE = ("ERR ACL GENPASS argument must be the number of bits for the output password, "
                 "a positive number up to 4096")
SAVE_FAILED = ("ERR There was an error trying to save the ACLs. Please check the server logs for "
               "more information")


def cmd_auth(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    if len(argv) == 2:
        if c.services.acl.default.nopass:
            raise CommandError(AUTH_WITHOUT_PASSWORD)
        username, password = b"default", argv[1]
    else:
        username, password = argv[1], argv[2]
    authenticate(c, username, password, argv[0])
    c.reply.ok()


def cmd_acl_cat(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    if len(argv) == 2:
        c.reply.array(len(ACL_CATEGORIES))
        for category in ACL_CATEGORIES:
            c.reply.bulk(category)
        return
    category = bytes(argv[2]).decode("utf-8", "replace").lower()
    if category not in ACL_CATEGORIES:
        raise CommandError(f"ERR Unknown category '{errors.clipped(argv[2])}'")
    names = [spec.name for spec in registry.all_specs() if category in spec.acl_categories]
    c.reply.array(len(names))
    for name in names:
        c.reply.bulk(name)


def cmd_acl_deluser(c, argv):
    names = [bytes(a) for a in argv[2:]]
    if b"default" in names:
        raise CommandError("ERR The 'default' user cannot be removed")
    deleted = c.services.acl.delete_users(names, c)
    c.services.audit.record(c, "acl_deluser", usernames=[rules._text(n) for n in names], deleted=deleted)
    c.reply.integer(deleted)


def cmd_acl_dryrun(c, argv):
    user = c.services.acl.users.get(bytes(argv[2]))
    if user is None:
        raise CommandError(f"ERR User '{errors.clipped(argv[2])}' not found")
    target = argv[3:]
    spec = registry.find(target)
    if spec is None:
        raise CommandError(f"ERR Command '{errors.clipped(target[0])}' not found")
    if not registry.arity_fits(spec, len(target)):
        raise CommandError(errors.wrong_arity(spec.name))
    denied = None if "no_auth" in spec.flags else user.check(spec, target)
    if denied is None:
        c.reply.ok()
    elif denied[0] in (rules.DENIED_KEY, rules.DENIED_CHANNEL):
        kind = b"key" if denied[0] == rules.DENIED_KEY else b"channel"
        c.reply.bulk(b"This user has no permissions to access the '%s' %s" % (bytes(target[denied[1]]), kind))
    else:
        c.reply.bulk(f"This user has no permissions to run the '{spec.name}' command")


def cmd_acl_genpass(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    bits = 256
    if len(argv) == 3:
        bits = parse_int(argv[2])
        if bits <= 0 or bits > 4096:
            raise CommandError(GENPASS_RANGE)
    c.reply.bulk(rules.generate_password(bits))


def cmd_acl_getuser(c, argv):
    user = c.services.acl.users.get(bytes(argv[2]))
    if user is None:
        c.reply.null()
        return
    r = c.reply
    root = user.root
    r.map(6)
    r.bulk("flags")
    flags = user.flags
    r.set(len(flags))
    for flag in flags:
        r.bulk(flag)
    r.bulk("passwords")
    r.array(len(user.passwords))
    for digest in user.passwords:
        r.bulk(digest)
    _reply_selector_fields(r, root)
    r.bulk("selectors")
    r.array(len(user.selectors) - 1)
    for selector in user.selectors[1:]:
        r.map(3)
        _reply_selector_fields(r, selector)


def _reply_selector_fields(r, selector):
    r.bulk("commands")
    r.bulk(selector.describe_commands())
    r.bulk("keys")
    r.bulk(selector.describe_keys())
    r.bulk("channels")
    r.bulk(selector.describe_channels())


def cmd_acl_list(c, argv):
    c.reply.bulk_array(c.services.acl.list_lines())


def cmd_acl_users(c, argv):
    c.reply.bulk_array([user.name for user in c.services.acl.sorted_users()])


def cmd_acl_whoami(c, argv):
    c.reply.bulk(c.user.name)


def cmd_acl_load(c, argv):
    acl = c.services.acl
    if not c.services.config["aclfile"]:
        raise CommandError(rules.NO_ACL_FILE)
    problems = acl.load_file(current=c)
    if problems:
        raise CommandError("ERR " + problems)
    c.services.audit.record(c, "acl_load", file=c.services.config["aclfile"], users=len(acl.users))
    c.reply.ok()


def cmd_acl_save(c, argv):
    path = c.services.config["aclfile"]
    if not path:
        raise CommandError(rules.NO_ACL_FILE)
    try:
        c.services.acl.save_file()
    except OSError as e:
        log.warning("Saving the ACLs to '%s' failed: %s", path, e.strerror)
        raise CommandError(SAVE_FAILED) from None
    c.services.audit.record(c, "acl_save", file=path, users=len(c.services.acl.users))
    c.reply.ok()


def cmd_acl_log(c, argv):
    if len(argv) > 3:
        raise CommandError(errors.subcommand_syntax(argv))
    log_ = c.services.acl.log
    count = 10
    if len(argv) == 3:
        if upper(argv[2]) == "RESET":
            log_.reset()
            c.reply.ok()
            return
        count = parse_int(argv[2])
    entries = list(log_.entries)[:max(count, 0)]
    now_ms = rules.now_ms()
    r = c.reply
    r.array(len(entries))
    for entry in entries:
        r.map(7)
        r.bulk("count")
        r.integer(entry.count)
        r.bulk("reason")
        r.bulk(entry.reason)
        r.bulk("context")
        r.bulk(entry.context)
        r.bulk("object")
        r.bulk(entry.object)
        r.bulk("username")
        r.bulk(entry.username)
        r.bulk("age-seconds")
        r.double((now_ms - entry.created_ms) / 1000.0)
        r.bulk("client-info")
        r.bulk(entry.client_info)


def cmd_acl_setuser(c, argv):
    name = bytes(argv[2])
    ops = [bytes(a) for a in argv[3:]]
    c.services.acl.set_user(name, ops, c)
    c.services.audit.record(c, "acl_setuser", username=rules._text(name),
                          rules=[redacted_rule(op) for op in ops])
    c.reply.ok()


ACL_HELP = (
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
    "    Prints this help.",
)


def cmd_acl_help(c, argv):
    reply_help(c, ACL_HELP)
