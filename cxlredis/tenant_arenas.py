"""Arenas of their own for tenants that map their values (TENANT ... ARENA own).

A process that maps a backing reads every byte in it, so a tenant whose users map
values (the CXL commands, cxlredis.local) cannot share the server's arena with
other tenants: its values live in an Arena of their own, one file per tenant, and
the operating system keeps other tenants' processes out of it. The file is 0600;
0640 with the tenant's ARENA-GROUP, whose processes then map it read-only; 0660
with ARENA-WRITE too. Read-only is the default because a process that can write
the file can also rewrite the arena's structures (index, headers, lists), which
the server trusts as it walks them: a writer can take the server down, or plant
offsets that lead it outside the arena. docs/colocated.md gives the reasoning.

Such a tenant is the default keyspace (tenant 0) of its arena: its quota is the
arena's maxmemory, its policy the arena's, its meters the arena's tenant-0
counters, and a restart re-attaches the file as the server's own arena is. The
file is sized from the quota at creation and does not grow (a mapped file cannot
be resized under its readers), so a later QUOTA may not exceed what it holds.

A deleted tenant's arena is emptied and its file unlinked at once; the mapping
itself is closed only when no reply in flight and no lease still refers to it.
"""
import grp
import logging
import os
import re
import stat

from ._store import Arena
from .metrics import human_bytes

log = logging.getLogger("cxlredis")

SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+\Z")
ALIGN = 2 << 20                     # a huge page: the file may sit on hugetlbfs


def group_id(group):
    """The gid of a group name or number; ValueError if there is none."""
    if group.isdigit():
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise ValueError(f"no such group '{group}'") from None


def check_quota(name, quota):
    """ValueError unless `quota` can size tenant `name`'s own arena."""
    if quota <= 0:
        raise ValueError(f"tenant '{name}' needs a QUOTA to have ARENA own: it sizes the tenant's "
                         f"arena file")


def size_for(quota):
    """A file size whose heap holds `quota` bytes: the index takes at most 1/256 of the
    size and the superblock 64 KiB, rounded to the alignment."""
    return (quota + quota // 128 + 2 * ALIGN + ALIGN - 1) // ALIGN * ALIGN


class TenantArenas:
    """The open arenas of ARENA own tenants, by tenant name, and those being retired."""

    def __init__(self, config, main_arena_path, created):
        self.config = config
        self.created = created      # files.CreatedFiles: what this start made, removed if it fails
        self.by_name = {}
        self.policies = {}          # tenant name -> its own maxmemory-policy, None: the server's
        self.retired = []           # deleted tenants' arenas, closed once nothing refers to them
        self.closed_checksum_failures = 0   # of the retired arenas closed since start
        main = main_arena_path
        self.directory = self.config["tenant-arena-dir"] or os.path.dirname(os.path.abspath(main))
        self.stem = os.path.basename(main).removesuffix(".arena")
        self.main_is_device = os.path.exists(main) and stat.S_ISCHR(os.stat(main).st_mode)

    def path(self, name):
        return os.path.join(self.directory, f"{self.stem}.tenant-{name}.arena")

    def check_name(self, name):
        """ValueError unless `name` may have an arena of its own (it becomes a file name)."""
        if not SAFE_NAME.match(name) or name.startswith("."):
            raise ValueError(f"tenant '{name}' cannot have ARENA own: its name becomes a file name, "
                             f"so it must be letters, digits, '.', '_' and '-' only")
        if self.main_is_device and not self.config["tenant-arena-dir"]:
            raise ValueError("ARENA own needs tenant-arena-dir: the server's arena is a device, "
                             "so there is no directory to put tenant arenas beside it")

    def open(self, name, quota, tenant, *, create):
        """Attach (create=True: create, empty) the arena of tenant `name` (a Tenant: its
        ARENA-GROUP and ARENA-WRITE); returns it. ValueError or ArenaError say why not."""
        self.check_name(name)
        check_quota(name, quota)
        path = self.path(name)
        existing = os.path.exists(path)
        if create and existing:
            raise ValueError(f"{path} exists: another tenant's arena, or one left behind "
                             f"(remove it to reuse the name)")
        if not create and not existing:     # at start-up: a failed start removes it again
            log.warning("Tenant '%s' has ARENA own but its arena %s is missing: it starts empty",
                        name, path)
            self.created.note_arena(path)
        size = os.path.getsize(path) if existing and not self.config["arena-reset"] else size_for(quota)
        arena = Arena(path, size, databases=self.config["databases"],
                      reset=create or self.config["arena-reset"],
                      hugepages=self.config["arena-hugepages"], prefault=self.config["arena-prefault"],
                      numa_node=self.config["arena-numa-node"], warm_ahead=self.config["arena-warm-ahead"],
                      size_option=f"tenant '{name}' QUOTA")
        try:
            self._check_capacity(name, arena, quota)
            self.set_access(arena, tenant)
        except BaseException:
            arena.close(clean=True)
            if create:
                os.unlink(path)
            raise
        arena.maxmemory = quota
        arena.maxmemory_samples = self.config["maxmemory-samples"]
        arena.checksums = self.config["arena-checksum"]
        self.by_name[name] = arena
        log.notice("Tenant '%s' arena %s: %s (%s)", name, path, arena.recovery, human_bytes(arena.size))
        return arena

    @staticmethod
    def _check_capacity(name, arena, quota):
        capacity = arena.stats()["heap_size"]
        if quota > capacity:
            raise ValueError(f"tenant '{name}' has an arena of its own holding {capacity} bytes: "
                             f"its QUOTA can be at most that (a mapped file cannot grow)")

    def set_quota(self, name, quota):
        arena = self.by_name[name]
        check_quota(name, quota)
        self._check_capacity(name, arena, quota)
        arena.maxmemory = quota

    def set_policy(self, name, policy):
        self.policies[name] = policy
        self.by_name[name].policy = policy or self.config["maxmemory-policy"]

    @staticmethod
    def mode(tenant):
        if tenant.arena_group is None:
            return 0o600
        return 0o660 if tenant.arena_write else 0o640

    def set_access(self, arena, tenant):
        """The file's group and mode for the tenant's ARENA-GROUP and ARENA-WRITE."""
        if tenant.arena_group is not None:
            os.chown(arena.path, -1, group_id(tenant.arena_group))
        os.chmod(arena.path, self.mode(tenant))

    def describe_access(self, tenant):
        group = f", group {tenant.arena_group}" if tenant.arena_group else ""
        return f"{self.mode(tenant):04o}{group}"

    def retire(self, name):
        """Delete tenant `name`'s arena: drop its keys, unlink the file, keep the mapping
        until close_idle finds nothing referring to it. Returns how many keys it had."""
        arena = self.by_name.pop(name)
        self.policies.pop(name, None)
        keys = sum(arena.dbsize(db) for db in range(arena.databases))
        arena.flushall()
        os.unlink(arena.path)
        self.retired.append(arena)
        return keys

    def close_idle(self, referenced):
        """Close retired arenas with no pinned or reserved block and none in `referenced`."""
        for arena in list(self.retired):
            st = arena.stats()
            if not st["pinned"] and not st["reserved"] and arena not in referenced:
                self.closed_checksum_failures += arena.checksum_failures
                arena.close(clean=False)
                self.retired.remove(arena)

    def every(self):
        """Every open tenant arena, retired ones included (expiry, checks, leases)."""
        return [*self.by_name.values(), *self.retired]

    def close_all(self):
        for arena in self.every():
            arena.close(clean=True)
        self.by_name.clear()
        self.retired.clear()

