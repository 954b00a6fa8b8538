"""The TENANT command family (cxlredis's own): tenants, their quotas, users and
shared grants, and their meters. The registry and its rules live in
cxlredis/tenants.py.

Managing tenants is for administrators: the subcommands are flagged `admin`
(ACL categories @admin and @dangerous) and, whatever a user's ACL rules, a
connection bound to a tenant may only ask TENANT WHOAMI, TENANT HELP and
TENANT INFO about its own tenant.
"""
from .. import tenants as registry
from ..errors import CommandError
from .args import upper
from .connection import reply_help

TENANT_HELP = (
    "TENANT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <name> [QUOTA <bytes>] [MIN <bytes>] [PRIORITY <n>] [DISK YES|NO]",
    "       [POLICY <policy>] [ARENA SHARED|OWN] [ARENA-GROUP <group>|NONE] [ARENA-WRITE YES|NO]",
    "       [USERS <user> ...] [SHARED-READ <tenant> ...] [SHARED-WRITE <tenant> ...]",
    "    Create a tenant: a key namespace with a memory quota (0: none), a guaranteed",
    "    minimum no other tenant's pressure evicts (0: none; past it, up to the quota,",
    "    it borrows idle memory, given back first, the lowest PRIORITY first), an",
    "    eviction policy (inherit: the server's maxmemory-policy), whether what is",
    "    evicted of it goes to the server's disk tier (DISK, yes by default), its users,",
    "    and the shared namespaces reads fall through to or '<tenant>:' keys are written to.",
    "    ARENA OWN keeps its values in an arena file of its own, which its users may",
    "    map; it needs a QUOTA. Mode 0600, or 0640 and ARENA-GROUP's group (who map",
    "    it read-only), or 0660 with ARENA-WRITE YES (who also write through it).",
    "DELETE <name>",
    "    Delete a tenant and all its keys; its users' connections are closed.",
    "INFO <name>",
    "    Show a tenant's settings and meters.",
    "LIST",
    "    List the tenants, the default one (the administrators') first.",
    "RESETSTAT <name>",
    "    Reset a tenant's meters (its keys and bytes stay).",
    "SET <name> [QUOTA <bytes>] [MIN <bytes>] [PRIORITY <n>] [DISK YES|NO] [POLICY <policy>]",
    "    [ARENA-GROUP <group>|NONE] [ARENA-WRITE YES|NO] [USERS <user> ...]",
    "    [SHARED-READ <tenant> ...] [SHARED-WRITE <tenant> ...]",
    "    Change the settings given; a list given replaces the old one (ARENA is",
    "    fixed at creation).",
    "WHOAMI",
    "    Return the tenant of the current connection, or nil for an administrator.",
    "HELP",
    "    Print this help.",
)


def _for_administrators(c, argv):
    if c.tenant is not None:
        raise CommandError(f"ERR TENANT {upper(argv[1])} is for administrators: this connection "
                           f"belongs to tenant '{c.tenant}'")


def _name(arg):
    try:
        return registry.check_name(arg)
    except ValueError as e:
        raise CommandError(f"ERR {e}") from None


def _settings(args):
    try:
        return registry.parse_settings(args)
    except ValueError as e:
        raise CommandError(f"ERR {e}") from None


def _audited(settings):
    """Settings as the audit log shows them."""
    return {key.replace("-", "_"): [registry.as_text(v) for v in value] if isinstance(value, list)
            else (registry.INHERIT if key == "policy" and value is None else value)
            for key, value in settings.items()}


def cmd_tenant_create(c, argv):
    _for_administrators(c, argv)
    name, settings = _name(argv[2]), _settings(argv[3:])
    c.services.tenants.create(name, settings)
    c.services.audit.record(c, "tenant_create", name=name, **_audited(settings))
    c.reply.ok()


def cmd_tenant_delete(c, argv):
    _for_administrators(c, argv)
    name = _name(argv[2])
    keys = c.services.tenants.delete(name, c)
    c.services.scripts.forget_namespace(name)
    c.services.audit.record(c, "tenant_delete", name=name, keys=keys)
    c.reply.ok()


def cmd_tenant_set(c, argv):
    _for_administrators(c, argv)
    name, settings = _name(argv[2]), _settings(argv[3:])
    if not settings:
        raise CommandError("ERR TENANT SET needs at least one of QUOTA, MIN, PRIORITY, DISK, POLICY, "
                           "ARENA-GROUP, ARENA-WRITE, USERS, SHARED-READ or SHARED-WRITE")
    c.services.tenants.update(name, settings)
    c.services.audit.record(c, "tenant_set", name=name, **_audited(settings))
    c.reply.ok()


def cmd_tenant_resetstat(c, argv):
    _for_administrators(c, argv)
    name = _name(argv[2])
    c.services.tenants.reset_stats(name)
    c.services.audit.record(c, "tenant_resetstat", name=name)
    c.reply.ok()


def cmd_tenant_list(c, argv):
    _for_administrators(c, argv)
    c.reply.bulk_array([name.encode() for name in c.services.tenants.names()])


def cmd_tenant_info(c, argv):
    name = _name(argv[2])
    if c.tenant is not None and name != c.tenant:
        _for_administrators(c, argv)
    fields = c.services.tenants.info(name)
    c.reply.map(len(fields))
    for key, value in fields:
        c.reply.bulk(key)
        if isinstance(value, int):
            c.reply.integer(value)
        elif isinstance(value, list):
            c.reply.bulk_array([registry.as_bytes(v) for v in value])
        else:
            c.reply.bulk(value)


def cmd_tenant_whoami(c, argv):
    if c.tenant is None:
        c.reply.null()
    else:
        c.reply.bulk(c.tenant)


def cmd_tenant_help(c, argv):
    reply_help(c, TENANT_HELP)
