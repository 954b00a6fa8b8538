"""Tenants: key namespaces with a quota, a guarantee, an eviction policy, users and shared
grants.

The arena keeps what has to live as long as the data (ext/cxlredis/_store.pyx, Arena):
each tenant's name, quota, policy, counters and entries. This module keeps
the rest and binds every connection to the keyspace of its user's tenant.

What a connection's `c.store` is:

- the Arena itself (the default namespace) for a user that belongs to no
  tenant: an administrator, who sees the default namespace and manages the
  tenants with the TENANT commands;
- the tenant's Namespace when the tenant has no shared grants, so its
  commands cost nothing more than an administrator's;
- a TenantKeyspace over that Namespace when it has some (below);
- for a tenant created with ARENA own, the Arena of its own (tenant_arenas.py),
  whose default keyspace it is: the one kind of tenant whose users may map
  their values (docs/colocated.md says why).

Shared namespaces. A shared namespace is an ordinary tenant (say `common`)
whose own users publish into it. Another tenant may be granted:

- SHARED-READ common: a read that misses in the tenant's own namespace falls
  through to `common` (then to its next read grant, in the order given);
- SHARED-WRITE common: keys written as `common:<key>` address `<key>` in
  `common` directly, for reads and writes alike.

Every other write lands in the tenant's own namespace, where a key of the
same name shadows the shared one (SET, INCR, APPEND, HSET...; APPEND and
SETRANGE first copy the shared value up). Deleting a key or changing its TTL
or name acts on the entry the tenant sees; for one seen through fall-through
that needs a write grant to its namespace (RENAME never moves a key between
namespaces). KEYS, SCAN, DBSIZE, RANDOMKEY, FLUSHDB, FLUSHALL, INFO keyspace
and MEMORY USAGE see the tenant's own namespace only. A read served by a
shared namespace counts as a miss of the tenant and a hit of that namespace.

Where definitions live. Users and grants (with a copy of each quota and
policy) are kept in `tenants-file` (JSON, replaced atomically after every
change). At startup the file's tenants are taken first, the config file's
`tenant` lines then reset the tenants they declare to what they say, and the
arena is brought in line: missing tenants are created, quotas and policies
set. A tenant found in the arena that neither defines keeps its data, quota
and policy, with no users; one whose `tenant` line disappeared is kept as the
file has it. Both cases are logged: data is only dropped by TENANT DELETE.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field

from ._store import (COLLECTION_TYPES, DEFAULT_TENANT, POLICY_NAMES, TENANT_NAME_MAX, ArenaError, Keyspace, OutOfMemory,
                     TenantError)
from .config import _Invalid as InvalidValue, format_memory, parse_memory, quote
from .errors import CommandError
from .files import write_atomically
from .mrc import hit_ratios
from .tenant_arenas import check_quota, group_id

log = logging.getLogger("cxlredis")

INHERIT = "inherit"                 # POLICY inherit: follow the server's maxmemory-policy
FILE_VERSION = 1
LIST_SETTINGS = ("users", "shared-read", "shared-write")
SETTINGS = ("quota", "min", "priority", "disk", "policy", "arena", "arena-group", "arena-write") + LIST_SETTINGS
MEMORY_SETTINGS = {"quota": "no quota", "min": "no guarantee"}      # → what 0 means
PRIORITY_MAX = (1 << 32) - 1
ARENAS = ("shared", "own")           # ARENA: the server's arena, or a backing of the tenant's own


def as_text(data) -> str:
    return data if isinstance(data, str) else bytes(data).decode("utf-8", "surrogateescape")


def as_bytes(data) -> bytes:
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)


# ---------------------------------------------------------------- settings

def check_name(name) -> str:
    """A valid tenant name as str; raises ValueError."""
    raw = as_bytes(name)
    if not 1 <= len(raw) <= TENANT_NAME_MAX or any(b < 0x21 or b > 0x7e for b in raw):
        raise ValueError(f"invalid tenant name '{as_text(name)}': 1 to {TENANT_NAME_MAX} visible "
                         f"ASCII characters")
    return raw.decode("ascii")


def parse_settings(args) -> dict:
    """The settings given in `QUOTA q MIN m PRIORITY n DISK yes|no POLICY p USERS u..
    SHARED-READ t.. SHARED-WRITE t..` (keywords in any case and order, each once; a list
    ends at the next keyword): {"quota": int, "min": int, "priority": int, "disk": bool,
    "policy": name or None, "users": [bytes], "shared-read": [str], ...}.
    Raises ValueError with the reason."""
    settings = {}
    i = 0
    while i < len(args):
        word = as_text(args[i]).lower()
        if word not in SETTINGS:
            raise ValueError(f"unknown tenant setting '{as_text(args[i])}' (expected QUOTA, MIN, "
                             f"PRIORITY, DISK, POLICY, ARENA, ARENA-GROUP, ARENA-WRITE, USERS, "
                             f"SHARED-READ or SHARED-WRITE)")
        if word in settings:
            raise ValueError(f"{word.upper()} given twice")
        i += 1
        if word in LIST_SETTINGS:
            values = []
            while i < len(args) and as_text(args[i]).lower() not in SETTINGS:
                values.append(args[i])
                i += 1
            if word == "users":
                settings[word] = list(dict.fromkeys(as_bytes(v) for v in values))
            else:
                settings[word] = list(dict.fromkeys(check_name(v) for v in values))
            continue
        if i == len(args):
            raise ValueError(f"{word.upper()} needs a value")
        value = as_text(args[i])
        i += 1
        if word == "arena":
            settings[word] = value.lower()
            if settings[word] not in ARENAS:
                raise ValueError(f"invalid ARENA '{value}': shared (the server's arena) or own (a "
                                 f"backing file of the tenant's own, which its users may map)")
        elif word == "arena-group":
            settings[word] = None if value.lower() == "none" else value
            if settings[word] is not None:
                group_id(value)
        elif word == "arena-write":
            if value.lower() not in ("yes", "no"):
                raise ValueError(f"invalid ARENA-WRITE '{value}': yes (the group may map the arena "
                                 f"read-write) or no (read-only, the default)")
            settings[word] = value.lower() == "yes"
        elif word == "disk":
            if value.lower() not in ("yes", "no"):
                raise ValueError(f"invalid DISK '{value}': yes (what the arena evicts of the tenant's "
                                 f"goes to the server's disk tier, the default) or no")
            settings[word] = value.lower() == "yes"
        elif word == "priority":
            # ASCII digits only: str.isdigit() also takes '²' and '١'
            if not (value.isascii() and value.isdigit()) or int(value) > PRIORITY_MAX:
                raise ValueError(f"invalid PRIORITY '{value}': a service class from 0 (the default, "
                                 f"the first to give borrowed memory back) to {PRIORITY_MAX}")
            settings[word] = int(value)
        elif word in MEMORY_SETTINGS:
            try:
                settings[word] = parse_memory(value)
            except InvalidValue:
                raise ValueError(f"invalid {word.upper()} '{value}': a number of bytes, optionally "
                                 f"with a unit (kb, mb, gb); 0 means {MEMORY_SETTINGS[word]}") from None
        else:
            policy = value.lower()
            if policy not in POLICY_NAMES and policy != INHERIT:
                raise ValueError(f"invalid POLICY '{value}': one of {', '.join(POLICY_NAMES)}, "
                                 f"or {INHERIT} (the server's maxmemory-policy)")
            settings[word] = None if policy == INHERIT else policy
    return settings


def parse_directive(args) -> tuple[str, dict]:
    """A `tenant <name> <settings>` config line's arguments: (name, settings)."""
    if not args:
        raise ValueError("a tenant line needs a tenant name")
    name = check_name(args[0])
    if name == DEFAULT_TENANT:
        raise ValueError("the default tenant cannot be declared: it is the administrators' "
                         "namespace, bounded by maxmemory")
    settings = parse_settings(args[1:])
    if settings.get("arena") == "own":
        check_quota(name, settings.get("quota", 0))
    check_guarantee(settings)
    return name, settings


def check_guarantee(settings):
    """ValueError if the settings' MIN, PRIORITY or DISK cannot be: a MIN above the QUOTA,
    any of them with ARENA own (DISK yes: an arena of its own has no disk tier)."""
    guaranteed = settings.get("min", 0)
    if settings.get("arena") == "own":
        for word in ("min", "priority", "disk"):
            if settings.get(word, 0):
                raise ValueError(f"{word.upper()} is for tenants in the server's arena: a tenant "
                                 f"with ARENA own has its whole arena to itself")
    if not guaranteed:
        return
    if settings.get("quota", 0) and guaranteed > settings["quota"]:
        raise ValueError(f"MIN {guaranteed} is above the QUOTA {settings['quota']}: the quota is "
                         f"the most the tenant may hold, borrowing past its guarantee")


@dataclass
class Tenant:
    """What the arena does not keep about a tenant."""

    name: str
    users: list = field(default_factory=list)          # user names (bytes), in order given
    shared_read: list = field(default_factory=list)    # tenant names, in fall-through order
    shared_write: list = field(default_factory=list)
    declared: bool = False                             # by a `tenant` line of the config file
    arena: str = "shared"                              # ARENA: where its values live
    arena_group: str | None = None                     # ARENA-GROUP: who may map an own arena
    arena_write: bool = False                          # ARENA-WRITE: ...read-write, not read-only

    @property
    def own_arena(self):
        return self.arena == "own"

    def apply(self, settings):
        self.users = list(settings.get("users", self.users))
        self.shared_read = list(settings.get("shared-read", self.shared_read))
        self.shared_write = list(settings.get("shared-write", self.shared_write))
        self.arena = settings.get("arena", self.arena)
        self.arena_group = settings.get("arena-group", self.arena_group)
        self.arena_write = settings.get("arena-write", self.arena_write)

    def copy(self):
        return Tenant(self.name, list(self.users), list(self.shared_read), list(self.shared_write),
                      self.declared, self.arena, self.arena_group, self.arena_write)


# ---------------------------------------------------------------- a tenant's keyspace with grants

def own_keyspace(store):
    """The caller's own namespace: `store` itself, or the one a TenantKeyspace wraps."""
    return store.own if type(store) is TenantKeyspace else store


def _own(name):
    """A Keyspace method that only ever concerns the tenant's own namespace."""
    method = getattr(Keyspace, name)

    def on_own(self, *args):
        return method(self.own, *args)

    on_own.__name__ = name
    on_own.__doc__ = f"Keyspace.{name}, on the tenant's own namespace."
    return on_own


class TenantKeyspace:
    """A tenant's keyspace when it has shared grants: the Keyspace methods over its own
    Namespace, with reads falling through to the namespaces it may read and `ns:` keys
    routed to the namespaces it may write (the rules are in the module docstring)."""

    __slots__ = ("own", "readable", "routes", "writable")

    def __init__(self, own, readable, writable):
        """own: the tenant's Namespace; readable: Namespaces in fall-through order;
        writable: (name, Namespace) pairs. One Namespace object per tenant, shared by
        both lists, so `is` tells namespaces apart."""
        self.own = own
        self.readable = tuple(readable)
        self.routes = tuple((name.encode("ascii") + b":", ns) for name, ns in writable)
        self.writable = frozenset(ns.tenant for _, ns in writable)

    def __repr__(self):
        return f"<TenantKeyspace of tenant {self.own.tenant}>"

    # -- routing

    def route(self, key):
        """(namespace, key in it): `ns:rest` goes to ns when the tenant may write it."""
        for prefix, ns in self.routes:
            if key[:len(prefix)] == prefix:
                return ns, key[len(prefix):]
        return self.own, key

    def fall_through(self, db, key, touch=True, stats=True, type=-1):
        """The entry for key in the first readable namespace holding it, or None."""
        for ns in self.readable:
            entry = ns.find(db, key, touch, stats, type)
            if entry is not None:
                return entry
        return None

    def read_only(self, ns):
        return CommandError(f"ERR the key is in shared namespace '{ns.name}', read-only for "
                            f"tenant '{self.own.name}'")

    # -- what the tenant is

    @property
    def tenant(self):
        return self.own.tenant

    @property
    def name(self):
        return self.own.name

    @property
    def arena(self):
        return self.own.arena

    @property
    def databases(self):
        return self.own.databases

    @property
    def policy(self):
        return self.own.policy

    @property
    def quota(self):
        return self.own.quota

    # -- reads

    def find(self, db, key, touch=True, stats=True, type=-1):
        """Keyspace.find; an entry found through fall-through names its own namespace."""
        ns, key = self.route(key)
        entry = ns.find(db, key, touch, stats, type)
        if entry is not None or ns is not self.own:
            return entry
        return self.fall_through(db, key, touch, stats, type)

    def collection(self, db, key, type, touch=True, stats=True):
        """Keyspace.collection, falling through as find() does."""
        ns, key = self.route(key)
        found = ns.collection(db, key, type, touch, stats)
        if found is not None or ns is not self.own:
            return found
        for shared in self.readable:
            found = shared.collection(db, key, type, touch, stats)
            if found is not None:
                return found
        return None

    def collection_at(self, off):
        return self.own.collection_at(off)

    def write_collection(self, db, key, type, replace=False):
        """Keyspace.write_collection; a collection seen through fall-through is copied into
        the tenant's own namespace first, as APPEND copies a string (not when replaced)."""
        ns, key = self.route(key)
        if ns is self.own and not replace:
            self._copy_up(db, key)
        return ns.write_collection(db, key, type, replace)

    def key_generation(self, db, key):
        ns, key = self.route(key)
        generation = ns.key_generation(db, key)
        if generation or ns is not self.own:
            return generation
        for shared in self.readable:
            generation = shared.key_generation(db, key)
            if generation:
                return generation
        return 0

    # blocks reserved in the tenant's own namespace (slots.SlotArg, leases.Lease, MONITOR)
    view = _own("view")
    value_len = _own("value_len")

    # -- writes

    def set(self, db, key, value, expire_at=-1, type=0, keep_ttl=False):
        ns, key = self.route(key)
        return ns.set(db, key, value, expire_at, type, keep_ttl)

    reserve = _own("reserve")
    slot = _own("slot")
    receive_view = _own("receive_view")
    release = _own("release")

    def commit(self, off, db, key, expire_at=-1, type=0, keep_ttl=False):
        """A value received into the tenant's reservation; one for a shared namespace is
        copied there (a reservation is on its maker's bill and cannot change hands)."""
        ns, key = self.route(key)
        if ns is self.own:
            return self.own.commit(off, db, key, expire_at, type, keep_ttl)
        try:
            return ns.set(db, key, self.own.slot(off), expire_at, type, keep_ttl)
        finally:
            self.own.release(off)

    def _copy_up(self, db, key):
        """Give the tenant its own copy of a key it sees through fall-through."""
        if self.own.find(db, key, False, False) is not None:
            return
        entry = self.fall_through(db, key, True, False)
        if entry is not None:
            self._copy_entry(entry, self.own, db, key)

    @staticmethod
    def _copy_entry(entry, dst, db, key):
        arena, off = entry.pin()     # the write may need room: never by evicting what it copies
        try:
            if entry.type not in COLLECTION_TYPES:
                dst.set(db, key, entry.view(), entry.expire_at, entry.type)
                return
            with entry.collection().copy_to(dst, db, key):
                pass                 # (its trees are the namespace's own, keyed by its arena)
            if entry.expire_at != -1:
                dst.set_expire(dst.find(db, key, False, False), entry.expire_at)
        finally:
            arena.unpin(off)

    def append(self, db, key, data):
        ns, key = self.route(key)
        if ns is self.own:
            self._copy_up(db, key)
        return ns.append(db, key, data)

    def setrange(self, db, key, offset, data):
        ns, key = self.route(key)
        if ns is self.own:
            self._copy_up(db, key)
        return ns.setrange(db, key, offset, data)

    def set_expire(self, entry, at_ms):
        return self._writable(entry).set_expire(entry, at_ms)

    def set_recency(self, entry, idle_ms=-1, lfu=-1):
        return self._writable(entry).set_recency(entry, idle_ms, lfu)

    def _writable(self, entry):
        """The namespace holding entry, if the tenant may change it there."""
        ns = entry.store
        if ns is not self.own and ns.tenant not in self.writable:
            raise self.read_only(ns)
        return ns

    def delete(self, db, key):
        ns, key = self.route(key)
        if ns is not self.own:
            return ns.delete(db, key)
        if self.own.delete(db, key):
            return True
        entry = self.fall_through(db, key, False, False)
        if entry is None:
            return False
        shared = entry.store
        if shared.tenant not in self.writable:
            raise self.read_only(shared)
        return shared.delete(db, key)

    def copy(self, db, key, dstdb, dstkey, replace=False):
        src, key = self.route(key)
        dst, dstkey = self.route(dstkey)
        entry = src.find(db, key, True, False)
        if entry is None and src is self.own:
            entry = self.fall_through(db, key, True, False)
        if entry is None:
            return False
        if entry.store is dst:
            return dst.copy(db, key, dstdb, dstkey, replace)
        if not replace and dst.find(dstdb, dstkey, False, False) is not None:
            return False
        self._copy_entry(entry, dst, dstdb, dstkey)
        return True

    def rename(self, db, key, dstdb, dstkey):
        src, key = self.route(key)
        dst, dstkey = self.route(dstkey)
        if src is self.own and src.find(db, key, False, False) is None:
            entry = self.fall_through(db, key, False, False)
            if entry is None:
                return False
            src = entry.store
            if src.tenant not in self.writable:
                raise self.read_only(src)
        if src is not dst:
            raise CommandError("ERR a key cannot be renamed into another namespace (write both "
                               "names with the same shared prefix, or neither)")
        return src.rename(db, key, dstdb, dstkey)

    # -- the tenant's own keyspace only

    dbsize = _own("dbsize")
    db_expires = _own("db_expires")
    flushdb = _own("flushdb")
    flushall = _own("flushall")
    scan = _own("scan")
    keys = _own("keys")
    count_keys_in_slot = _own("count_keys_in_slot")
    keys_in_slot = _own("keys_in_slot")
    random_key = _own("random_key")
    add_command = _own("add_command")
    add_bytes_in = _own("add_bytes_in")
    add_bytes_out = _own("add_bytes_out")

    def swapdb(self, a, b):
        return self.own.swapdb(a, b)

    def stats(self):
        return self.own.stats()


# ---------------------------------------------------------------- the registry

def _reads(stats):
    return stats["keyspace_hits"] + stats["keyspace_misses"]


class StartupError(Exception):
    """The tenant definitions cannot be applied; str(self) says why."""


class Tenants:
    """The server's tenants: membership, grants, persistence and connection binding.

    A tenant with ARENA shared (the default) is a namespace of the server's arena,
    which keeps its quota, policy and meters; one with ARENA own is the default
    keyspace of an arena of its own (cxlredis/tenant_arenas.py)."""

    def __init__(self, config, arena, own_arenas, acl, clients, memory_limit, curves):
        """arena: the server's; own_arenas: the TenantArenas that ARENA own tenants' arenas
        open in; memory_limit(): the server's maxmemory in effect, which a QUOTA may not pass;
        curves: the tenants' miss-ratio curves (mrc.MissRatioCurves)."""
        self.arena = arena
        self.curves = curves
        self.acl = acl
        self.clients = clients
        self.memory_limit = memory_limit
        self.arenas = own_arenas
        self.path = self.file_path(config)
        self.tenants = {}       # name → Tenant, in creation order
        self.member_of = {}     # user name (bytes) → tenant name
        self.stores = {}        # tenant name → the keyspace its connections use
        try:
            self._start(config.tenants)
        except StartupError as e:
            # the start is abandoned: its arenas are detached clean, as nothing was served
            log.warning("Aborting startup because of the tenant definitions: %s", e)
            raise SystemExit(1) from None
        config.tenant_lines = self.config_lines
        config.on_change("maxmemory-policy", lambda _: self._follow_server_policy())

    @staticmethod
    def file_path(config):
        """Where tenants-file is, None when there is none."""
        return os.path.join(config["dir"], config["tenants-file"]) if config["tenants-file"] else None

    # -- startup

    def _start(self, directives):
        records = self._read_file()
        declared = {}
        for args in directives:
            name, settings = parse_directive(args)      # validated when the config was read
            declared[name] = settings
        for name, record in records.items():
            if record["tenant"].declared and name not in declared:
                log.warning("Tenant '%s' is no longer declared by a tenant line: it is kept as the "
                            "tenants file has it (TENANT DELETE %s drops it and its data)", name, name)
                record["tenant"].declared = False
        for name, settings in declared.items():
            tenant = Tenant(name, declared=True)
            tenant.apply(settings)
            records[name] = {"tenant": tenant, "quota": settings.get("quota", 0),
                             "min": settings.get("min", 0), "priority": settings.get("priority", 0),
                             "disk": settings.get("disk", True), "policy": settings.get("policy")}
        tenants = {name: record["tenant"] for name, record in records.items()}
        try:
            self._check(tenants)
            self._check_guarantees({name: record["min"] for name, record in records.items()
                                    if not record["tenant"].own_arena})
        except ValueError as e:
            raise StartupError(str(e)) from None
        for name, record in records.items():
            tenant_id = self.arena.tenant_id(name)
            try:
                if record["tenant"].own_arena:
                    if tenant_id is not None:
                        raise StartupError(
                            f"tenant '{name}' has ARENA own, but its keys are in the server's arena: "
                            f"values cannot move between arenas (declare it ARENA shared, or TENANT "
                            f"DELETE it first)")
                    self.arenas.open(name, record["quota"], record["tenant"], create=False)
                    self.arenas.set_policy(name, record["policy"])
                else:
                    self._check_shared_quota(record["quota"])
                    if tenant_id is None:
                        tenant_id = self.arena.create_tenant(name, record["quota"], record["policy"])
                    else:
                        self.arena.set_tenant_quota(tenant_id, record["quota"])
                        self.arena.set_tenant_policy(tenant_id, record["policy"])
                    self.arena.set_tenant_guarantee(tenant_id, record["min"])
                    self.arena.set_tenant_priority(tenant_id, record["priority"])
                    self.arena.set_tenant_disk(tenant_id, record["disk"])
            except (ArenaError, TenantError, OutOfMemory, ValueError, OSError) as e:
                raise StartupError(f"tenant '{name}': {e}") from None
        for stats in self.arena.tenants():
            if stats["id"] and stats["name"] not in tenants:
                log.warning("Tenant '%s' is in the arena but in neither the config nor the tenants "
                            "file: it keeps its %d keys, quota and policy, with no users (TENANT "
                            "DELETE %s drops it)", stats["name"], stats["keys"], stats["name"])
                tenants[stats["name"]] = Tenant(stats["name"])
        self._install(tenants)
        if self.tenants:
            try:
                self._save(self.tenants)
            except OSError as e:
                raise StartupError(f"cannot write the tenants file {self.path}: {e.strerror}") from None

    def _read_file(self):
        """{name: {"tenant": Tenant, "quota": int, "min": int, "priority": int, "disk": bool,
        "policy": name or None}} from tenants-file."""
        if self.path is None:
            return {}
        try:
            with open(self.path, "rb") as file:
                content = json.loads(file.read())
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise StartupError(f"cannot read the tenants file {self.path}: {e.strerror}") from None
        except ValueError as e:
            raise StartupError(f"the tenants file {self.path} is not valid JSON: {e}") from None
        try:
            if content["version"] != FILE_VERSION:
                raise StartupError(f"the tenants file {self.path} has version {content['version']}, "
                                   f"this server reads version {FILE_VERSION}")
            records = {}
            for entry in content["tenants"]:
                name = check_name(entry["name"])
                policy = entry["policy"]
                if policy is not None and policy not in POLICY_NAMES:
                    raise ValueError(f"unknown policy {policy!r}")
                arena = entry.get("arena", "shared")
                if arena not in ARENAS:
                    raise ValueError(f"unknown arena {arena!r}")
                tenant = Tenant(name, [as_bytes(u) for u in entry["users"]],
                                [check_name(t) for t in entry["shared_read"]],
                                [check_name(t) for t in entry["shared_write"]], bool(entry["declared"]),
                                arena, entry.get("arena_group"), bool(entry.get("arena_write")))
                records[name] = {"tenant": tenant, "quota": int(entry["quota"]),
                                 "min": int(entry.get("min", 0)),
                                 "priority": int(entry.get("priority", 0)),
                                 "disk": bool(entry.get("disk", True)), "policy": policy}
        except (KeyError, TypeError, ValueError) as e:
            raise StartupError(f"the tenants file {self.path} is malformed: {e!r}") from None
        return records

    # -- state

    @staticmethod
    def _check(tenants, changed=None):
        """Raise ValueError if a user is in two tenants or a grant names no tenant (or itself,
        or a tenant with an arena of its own: fall-through reads and `ns:` routes work within
        one arena). The `changed` tenant is checked last, so an error names the tenant a user
        was in."""
        owner = {}
        ordered = sorted(tenants.values(), key=lambda tenant: tenant.name == changed)
        for tenant in ordered:
            for user in tenant.users:
                if owner.setdefault(user, tenant.name) != tenant.name:
                    raise ValueError(f"user '{as_text(user)}' already belongs to tenant '{owner[user]}'")
            if tenant.arena_group is not None and not tenant.own_arena:
                raise ValueError(f"tenant '{tenant.name}' has ARENA shared: ARENA-GROUP is for a "
                                 f"tenant with ARENA own")
            if tenant.arena_write and tenant.arena_group is None:
                raise ValueError(f"tenant '{tenant.name}': ARENA-WRITE needs ARENA-GROUP (without a "
                                 f"group only the server's own user may open the file)")
            grants = tenant.shared_read + tenant.shared_write
            if grants and tenant.own_arena:
                raise ValueError(f"tenant '{tenant.name}' has ARENA own: shared namespaces are in the "
                                 f"server's arena, so it can be granted none")
            for granted in grants:
                if granted == tenant.name:
                    raise ValueError(f"tenant '{tenant.name}' cannot be granted its own namespace")
                if granted == DEFAULT_TENANT:
                    raise ValueError("the default namespace cannot be shared")
                if granted not in tenants:
                    raise ValueError(f"tenant '{tenant.name}' is granted '{granted}', which is no tenant")
                if tenants[granted].own_arena:
                    raise ValueError(f"tenant '{granted}' has ARENA own: its namespace cannot be "
                                     f"shared with tenant '{tenant.name}'")

    def _install(self, tenants):
        """Make `tenants` the registry: membership, and the keyspace each tenant's
        connections use (namespaces bound anew, so none refers to a dropped tenant)."""
        self.tenants = tenants
        self.member_of = {user: t.name for t in tenants.values() for user in t.users}
        namespaces = {name: self.arena.namespace(self.arena.tenant_id(name))
                      for name, tenant in tenants.items() if not tenant.own_arena}
        stores = {}
        for name, tenant in tenants.items():
            if tenant.own_arena:
                stores[name] = self.arenas.by_name[name]
            elif tenant.shared_read or tenant.shared_write:
                stores[name] = TenantKeyspace(namespaces[name],
                                              [namespaces[t] for t in tenant.shared_read],
                                              [(t, namespaces[t]) for t in tenant.shared_write])
            else:
                stores[name] = namespaces[name]
        self.stores = stores

    def _save(self, tenants):
        """Replace tenants-file with `tenants` (atomically: a crash leaves the old or the new)."""
        if self.path is None:
            return
        entries = []
        for tenant in tenants.values():
            stats = self.stats(tenant.name) if self.exists(tenant.name) else None
            entries.append({
                "name": tenant.name,
                "quota": stats["quota"] if stats else 0,
                "min": stats["guaranteed"] if stats else 0,
                "priority": stats["priority"] if stats else 0,
                "disk": stats["disk"] if stats else True,
                "policy": None if stats is None or stats["policy_inherited"] else stats["policy"],
                "users": [as_text(u) for u in tenant.users],
                "shared_read": tenant.shared_read,
                "shared_write": tenant.shared_write,
                "declared": tenant.declared,
                "arena": tenant.arena,
                "arena_group": tenant.arena_group,
                "arena_write": tenant.arena_write,
            })
        content = json.dumps({"version": FILE_VERSION, "tenants": entries}, indent=1) + "\n"
        write_atomically(self.path, content.encode())

    def _persist(self, tenants):
        try:
            self._save(tenants)
        except OSError as e:
            raise CommandError(f"ERR cannot write the tenants file {self.path}: {e.strerror}") from None

    def _activate(self, tenants):
        """Install a changed registry and move every connection to its keyspace."""
        self._install(tenants)
        for c in self.clients.sessions():
            self.bind(c)

    def _follow_server_policy(self):
        for name in self.arenas.by_name:
            self.arenas.set_policy(name, self.arenas.policies[name])

    # -- connections

    def bind(self, c):
        """Give c the keyspace of its user's tenant (the default namespace if none)."""
        name = self.member_of.get(c.user.name)
        c.tenant = name
        c.store = self.arena if name is None else self.stores[name]

    def own_arena(self, name):
        """The arena of tenant `name` if it has one of its own, else None."""
        return self.arenas.by_name.get(name)

    def own_keyspaces(self):
        """(tenant name, None for the default one; its own keyspace) of every tenant with
        keys here, users or not: the server arena's, the default one first, then those
        with an arena of their own. Only for what moves or drops a cluster slot's keys
        (slot_keys.py): no connection is ever bound to another tenant's keyspace."""
        found = [(None, self.arena)]
        found += [(stats["name"], self.arena.namespace(stats["id"])) for stats in self.arena.tenants()[1:]]
        found += list(self.arenas.by_name.items())
        return found

    # -- meters, for a tenant of either kind

    def exists(self, name):
        return name in self.arenas.by_name or self.arena.tenant_id(name) is not None

    def stats(self, name):
        """Arena.tenant_stats() of tenant `name`; for one with its own arena, that arena's
        default tenant's, with the tenant's name, quota and policy."""
        arena = self.arenas.by_name.get(name)
        if arena is None:
            return self._with_curve(self.arena, self.arena.tenant_stats(self.tenant_id(name)))
        return self._own_stats(name, arena)

    def _own_stats(self, name, arena):
        stats = arena.tenant_stats(0)
        # its arena is its own: nothing it holds is borrowed, and it has no disk tier
        stats.update(name=name, quota=arena.maxmemory, policy=arena.policy,
                     policy_inherited=self.arenas.policies.get(name) is None, borrowed=0, disk=False)
        return self._with_curve(arena, stats)

    def _with_curve(self, arena, stats):
        """stats with its tenant's miss-ratio curve: "mrc_memory", the bytes the curve's
        factors multiply (the quota, or what the tenant holds without one), "mrc", None or
        the hit ratio at each factor, and "mrc_rate", the share of keys it samples."""
        memory = stats["quota"] or stats["used_bytes"]
        stats["mrc_memory"] = memory
        stats["mrc"] = self.curves.curve(arena.address, stats["id"], memory, _reads(stats))
        stats["mrc_rate"] = self.curves.rate(arena.address, stats["id"])
        return stats

    def read_counts(self):
        """{(arena address, tenant slot): reads counted} of every tenant, for the curves."""
        counts = {(self.arena.address, stats["id"]): _reads(stats) for stats in self.arena.tenants()}
        for arena in list(self.arenas.by_name.values()):
            counts[(arena.address, 0)] = _reads(arena.tenant_stats(0))
        return counts

    def all_stats(self):
        """stats() of every tenant: the server arena's, the default one first, then the others.
        (The metrics thread calls it too: it works on a copy of the arenas, which a deleted
        tenant's outlives for a while.)"""
        return ([self._with_curve(self.arena, stats) for stats in self.arena.tenants()]
                + [self._own_stats(name, arena) for name, arena in list(self.arenas.by_name.items())])

    # -- management (the TENANT commands)

    def tenant_id(self, name):
        """The arena id of an existing tenant (the default one included); CommandError if none."""
        tenant_id = self.arena.tenant_id(name)
        if tenant_id is None:
            raise CommandError(f"ERR no such tenant '{name}'")
        return tenant_id

    def _require(self, name):
        if not self.exists(name):
            raise CommandError(f"ERR no such tenant '{name}'")

    def create(self, name, settings):
        if name == DEFAULT_TENANT or name in self.tenants:
            raise CommandError(f"ERR tenant '{name}' already exists")
        tenant = Tenant(name)
        tenant.apply(settings)
        tenants = {**self.tenants, name: tenant}
        self._checked(tenants, name)
        try:
            check_guarantee(settings)
            if tenant.own_arena:
                self.arenas.open(name, settings.get("quota", 0), tenant, create=True)
                self.arenas.set_policy(name, settings.get("policy"))
            else:
                self._check_shared_quota(settings.get("quota", 0))
                self._check_guarantees({name: settings.get("min", 0)})
                tenant_id = self.arena.create_tenant(name, settings.get("quota", 0),
                                                     settings.get("policy"))
                self.arena.set_tenant_guarantee(tenant_id, settings.get("min", 0))
                self.arena.set_tenant_priority(tenant_id, settings.get("priority", 0))
                self.arena.set_tenant_disk(tenant_id, settings.get("disk", True))
        except (ArenaError, TenantError, ValueError) as e:
            raise CommandError(f"ERR {e}") from None
        except OSError as e:
            raise CommandError(f"ERR cannot create tenant '{name}''s arena: {e}") from None
        try:
            self._persist(tenants)
        except CommandError:
            if tenant.own_arena:
                self.arenas.retire(name)
            else:
                self.arena.drop_tenant(tenant_id)
            raise
        self._activate(tenants)

    def update(self, name, settings):
        if name == DEFAULT_TENANT:
            raise CommandError("ERR the default tenant cannot be changed: it is the administrators' "
                               "namespace, bounded by maxmemory")
        self._require(name)
        tenant = self.tenants[name].copy()
        if settings.get("arena", tenant.arena) != tenant.arena:
            raise CommandError(f"ERR tenant '{name}' has ARENA {tenant.arena}: values cannot move "
                               f"between arenas (create another tenant)")
        tenant.apply(settings)
        tenants = {**self.tenants, name: tenant}
        self._checked(tenants, name)
        old = self.stats(name)
        old_limits = (old["quota"], old["guaranteed"], old["priority"], old["disk"],
                      None if old["policy_inherited"] else old["policy"])
        limits = (settings.get("quota", old_limits[0]), settings.get("min", old_limits[1]),
                  settings.get("priority", old_limits[2]), settings.get("disk", old_limits[3]),
                  settings.get("policy", old_limits[4]))
        try:
            if "quota" in settings and not tenant.own_arena:
                self._check_shared_quota(limits[0])
            if "quota" in settings or "min" in settings or "priority" in settings or "disk" in settings:
                check_guarantee({"quota": limits[0], "min": limits[1], "priority": limits[2],
                                 "disk": "disk" in settings and limits[3], "arena": tenant.arena})
            if "min" in settings:
                self._check_guarantees({name: limits[1]})
        except ValueError as e:
            raise CommandError(f"ERR {e}") from None
        old_access = self.tenants[name].arena_group, self.tenants[name].arena_write
        # in the arena first: the tenants file copies quota, guarantee and policy from there
        try:
            self._apply_limits(name, tenant, *limits)
        except (ValueError, OSError) as e:
            self._apply_limits(name, self.tenants[name], *old_limits)
            raise CommandError(f"ERR {e}") from None
        try:
            self._persist(tenants)
        except CommandError:
            self._apply_limits(name, self.tenants[name], *old_limits)
            raise
        if (tenant.arena_group, tenant.arena_write) != old_access:
            log.notice("Tenant '%s': its arena %s is now mode %s", name, self.arenas.path(name),
                       self.arenas.describe_access(tenant))
        self._activate(tenants)

    def _check_shared_quota(self, quota):
        """ValueError if a tenant in the server's arena would have a QUOTA it could never reach."""
        limit = self.memory_limit()
        if quota > limit:
            raise ValueError(f"QUOTA {quota} is above the server's maxmemory ({limit} bytes), which "
                             f"bounds every tenant in its arena: raise maxmemory (or arena-size) or "
                             f"lower the QUOTA")

    def _check_guarantees(self, mins):
        """ValueError if the MINs given ({tenant name: bytes}) and the other tenants'
        guarantees would pass the server's maxmemory: the arena must be able to keep every
        guarantee at once."""
        guaranteed = sum(mins.values())
        if not guaranteed:
            return
        limit = self.memory_limit()
        others = sum(stats["guaranteed"] for stats in self.arena.tenants() if stats["name"] not in mins)
        if others + guaranteed > limit:
            named = f"MIN {guaranteed}" if len(mins) == 1 else f"the MINs declared ({guaranteed} bytes)"
            raise ValueError(f"{named} and the other tenants' guarantees ({others} bytes) "
                             f"pass the server's maxmemory ({limit} bytes): the arena could not keep "
                             f"them all; raise maxmemory or lower a MIN")

    def _apply_limits(self, name, tenant, quota, guaranteed, priority, disk, policy):
        """Quota, guarantee, priority, disk tier, policy (and, for an own arena, group) of
        tenant `name`, where they are kept."""
        if tenant.own_arena:
            self.arenas.set_quota(name, quota)
            self.arenas.set_policy(name, policy)
            self.arenas.set_access(self.arenas.by_name[name], tenant)
        else:
            tenant_id = self.tenant_id(name)
            self.arena.set_tenant_quota(tenant_id, quota)
            self.arena.set_tenant_guarantee(tenant_id, guaranteed)
            self.arena.set_tenant_priority(tenant_id, priority)
            self.arena.set_tenant_disk(tenant_id, disk)
            self.arena.set_tenant_policy(tenant_id, policy)

    def delete(self, name, current):
        """Drop the tenant and its data; its connections go back to the default namespace
        and are closed (`current` after its reply). Returns how many keys it had."""
        if name == DEFAULT_TENANT:
            raise CommandError("ERR the default tenant cannot be deleted")
        self._require(name)
        tenants = {}
        for other in self.tenants.values():
            if other.name != name:
                other = other.copy()
                other.shared_read = [t for t in other.shared_read if t != name]
                other.shared_write = [t for t in other.shared_write if t != name]
                tenants[other.name] = other
        self._persist(tenants)
        doomed = [c for c in self.clients.sessions() if c.tenant == name]
        for c in doomed:
            # Its reservations are on the tenant's bill: free them while its namespace exists.
            self.clients.release_reservations(c)
        users = self.tenants[name].users
        self.reset_curve(name)
        if name in self.arenas.by_name:
            keys = self.arenas.retire(name)
        else:
            keys = self.arena.drop_tenant(self.tenant_id(name))
        self._activate(tenants)
        self.clients.disconnect(doomed, current)
        if users:
            log.warning("Tenant '%s' deleted: its users %s now belong to no tenant", name,
                        ", ".join(as_text(u) for u in users))
        return keys

    def _checked(self, tenants, changed):
        try:
            self._check(tenants, changed)
        except ValueError as e:
            raise CommandError(f"ERR {e}") from None

    def reset_stats(self, name):
        self.reset_curve(name)
        arena = self.arenas.by_name.get(name)
        if arena is not None:
            arena.reset_stats()
        else:
            self.arena.reset_tenant_stats(self.tenant_id(name))

    def reset_curve(self, name):
        """Start tenant `name`'s miss-ratio curve anew (its meters were reset, or it is gone)."""
        arena = self.arenas.by_name.get(name)
        if arena is not None:
            self.curves.forget(arena.address, 0)
        else:
            self.curves.forget(self.arena.address, self.tenant_id(name))

    def info(self, name):
        """(field, value) pairs of TENANT INFO; values are ints, strs or lists."""
        self._require(name)
        stats = self.stats(name)
        if name == DEFAULT_TENANT:
            users = [u for u in sorted(self.acl.users) if u not in self.member_of]
            tenant = Tenant(name, users)
        else:
            tenant = self.tenants[name]
        fields = [("name", name), ("quota", stats["quota"]), ("guaranteed_bytes", stats["guaranteed"]),
                  ("priority", stats["priority"]), ("disk_tier", "yes" if stats["disk"] else "no"),
                  ("policy", stats["policy"]),
                  ("policy_inherited", int(stats["policy_inherited"]))]
        fields += [(key, stats[key]) for key in (
            "keys", "expires", "used_bytes", "dataset_bytes", "keyspace_hits", "keyspace_misses",
            "evicted_keys", "expired_keys", "rejected_writes", "bytes_written", "commands",
            "bytes_in", "bytes_out")]
        fields += [("borrowed_bytes", stats["borrowed"]), ("reclaimed_bytes", stats["reclaimed"])]
        tier = self.arena.tier
        if tier is not None and name not in self.arenas.by_name:
            fields += [("disk_tier_hits", tier.tenant_hits.get(stats["id"], 0))]
        fields += [("mrc_memory", stats["mrc_memory"])]
        if stats["mrc_rate"] is not None:
            fields += [("mrc_sample_rate", f"{stats['mrc_rate']:.6g}")]
        fields += [(f"hit_ratio_at_{factor}x", ratio) for factor, ratio in hit_ratios(stats)]
        fields += [("users", tenant.users), ("shared_read", tenant.shared_read),
                   ("shared_write", tenant.shared_write), ("arena", tenant.arena)]
        arena = self.arenas.by_name.get(name)
        if arena is not None:
            fields += [("arena_path", arena.path), ("arena_size", arena.size),
                       ("arena_group", tenant.arena_group or ""),
                       ("arena_write", "yes" if tenant.arena_write else "no"),
                       ("arena_recovery", arena.recovery)]
        return fields

    def names(self):
        """Every tenant, the default one first, then the server arena's in id order, then
        those with arenas of their own."""
        return [stats["name"] for stats in self.all_stats()]

    def info_lines(self, only=None):
        """INFO tenants: one line per tenant (only `only`'s, for a tenant's connection)."""
        lines = []
        for s in self.all_stats():
            if only is not None and s["name"] != only:
                continue
            lines.append((f"tenant_{s['name']}",
                          f"keys={s['keys']},used_bytes={s['used_bytes']},quota={s['quota']},"
                          f"guaranteed={s['guaranteed']},borrowed={s['borrowed']},"
                          f"reclaimed={s['reclaimed']},"
                          f"hits={s['keyspace_hits']},misses={s['keyspace_misses']},"
                          f"evicted={s['evicted_keys']},expired={s['expired_keys']},"
                          f"rejected={s['rejected_writes']},commands={s['commands']},"
                          f"bytes_in={s['bytes_in']},bytes_out={s['bytes_out']}"
                          + "".join(f",hit_ratio_at_{factor}x={ratio}" for factor, ratio in hit_ratios(s))))
        return lines

    # -- CONFIG REWRITE

    def config_lines(self):
        """`tenant` lines describing every tenant (CONFIG REWRITE)."""
        lines = []
        for tenant in self.tenants.values():
            stats = self.stats(tenant.name)
            words = ["tenant", tenant.name]
            if stats["quota"]:
                words += ["quota", format_memory(stats["quota"])]
            if stats["guaranteed"]:
                words += ["min", format_memory(stats["guaranteed"])]
            if stats["priority"]:
                words += ["priority", str(stats["priority"])]
            if not stats["disk"] and not tenant.own_arena:
                words += ["disk", "no"]
            if not stats["policy_inherited"]:
                words += ["policy", stats["policy"]]
            if tenant.own_arena:
                words += ["arena", "own"]
                if tenant.arena_group:
                    words += ["arena-group", _config_word(tenant.arena_group)]
                if tenant.arena_write:
                    words += ["arena-write", "yes"]
            for keyword, values in (("users", [as_text(u) for u in tenant.users]),
                                    ("shared-read", tenant.shared_read),
                                    ("shared-write", tenant.shared_write)):
                if values:
                    words += [keyword] + [_config_word(v) for v in values]
            lines.append(" ".join(words))
        return lines


def _config_word(text):
    """A word as a config line needs it: quoted when it holds a blank, quote or oddity."""
    if text and all(0x21 <= ord(ch) <= 0x7e and ch not in "\"'\\" for ch in text):
        return text
    return quote(text)
