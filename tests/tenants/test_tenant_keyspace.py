"""TenantKeyspace on a real arena: reads fall through to shared namespaces in order,
`ns:` keys reach the namespaces a tenant may write, everything else stays in the
tenant's own namespace, and shared entries change only with a write grant."""
import pytest

from cxlredis._store import Arena, TYPE_HASH, TenantError
from cxlredis.errors import CommandError
from cxlredis.tenants import TenantKeyspace, own_keyspace

MiB = 1 << 20


@pytest.fixture
def arena(tmp_path):
    with Arena(str(tmp_path / "a.arena"), 16 * MiB) as a:
        yield a


@pytest.fixture
def spaces(arena):
    """team (reads common then docs, writes docs), common, docs: (keyspace, namespaces)."""
    ns = {name: arena.namespace(arena.create_tenant(name)) for name in ("team", "common", "docs")}
    ks = TenantKeyspace(ns["team"], [ns["common"], ns["docs"]], [("docs", ns["docs"])])
    return ks, ns


def stored(ns, key, db=0):
    off = ns.lookup(db, key, False, False)
    return ns.value_bytes(off) if off else None


def test_reads_fall_through_in_grant_order(spaces):
    ks, ns = spaces
    ns["docs"].set(0, b"k", b"from-docs")
    assert ks.find(0, b"k").value_bytes() == b"from-docs"
    ns["common"].set(0, b"k", b"from-common")
    assert ks.find(0, b"k").value_bytes() == b"from-common"
    ks.set(0, b"k", b"own")
    assert ks.find(0, b"k").value_bytes() == b"own"
    assert ks.find(0, b"missing") is None


def test_a_shared_hit_is_a_miss_of_the_tenant_and_a_hit_of_the_namespace(spaces):
    ks, ns = spaces
    ns["common"].set(0, b"k", b"v")
    ks.find(0, b"k")
    ks.find(0, b"nothing")
    team, common, docs = (ns[n].stats() for n in ("team", "common", "docs"))
    assert (team["keyspace_hits"], team["keyspace_misses"]) == (0, 2)
    assert (common["keyspace_hits"], common["keyspace_misses"]) == (1, 1)
    assert (docs["keyspace_hits"], docs["keyspace_misses"]) == (0, 1)


def test_entries_found_through_fall_through_read_their_namespace(spaces, arena):
    ks, ns = spaces
    ns["common"].set(0, b"k", b"x" * 1000, expire_at=4102444800000)
    entry = ks.find(0, b"k")
    assert entry.store is ns["common"]
    assert entry.value_len == 1000 and bytes(entry.view()) == b"x" * 1000
    assert entry.expire_at == 4102444800000 and entry.type == 0
    assert entry.block_size >= 1000 and entry.generation > 0
    token_arena, off = entry.pin()
    ns["common"].delete(0, b"k")                 # a reply in flight keeps its bytes
    assert arena.stats()["zombies"] == 1
    token_arena.unpin(off)                       # the connection unpins through the arena
    assert arena.stats()["zombies"] == 0
    with pytest.raises(ValueError):
        entry.view()                             # gone: the Entry does not read a freed block


def test_namespaces_without_a_grant_are_out_of_reach(spaces, arena):
    ks, ns = spaces
    other = arena.namespace(arena.create_tenant("other"))
    off = other.set(0, b"k", b"secret")
    assert ks.find(0, b"k") is None
    with pytest.raises(ValueError):
        ks.view(off)
    with pytest.raises(CommandError, match="read-only"):
        ks.set_expire(other.find(0, b"k"), -1)     # an entry of a namespace it may not write


def test_writes_go_to_the_own_namespace_and_shadow(spaces):
    ks, ns = spaces
    ns["common"].set(0, b"k", b"shared")
    ks.set(0, b"k", b"mine")
    assert stored(ns["common"], b"k") == b"shared" and stored(ns["team"], b"k") == b"mine"
    assert ks.delete(0, b"k") is True            # the own copy; the shared one shows again
    assert ks.find(0, b"k").value_bytes() == b"shared"


def test_prefixed_keys_reach_a_writable_namespace(spaces):
    ks, ns = spaces
    ks.set(0, b"docs:manual", b"v1")
    assert stored(ns["docs"], b"manual") == b"v1" and stored(ns["team"], b"docs:manual") is None
    assert ks.find(0, b"docs:manual").value_bytes() == b"v1"
    assert ks.append(0, b"docs:manual", b"+") == 3
    assert ks.delete(0, b"docs:manual") is True and stored(ns["docs"], b"manual") is None
    # no write grant to common: the prefix is just part of an own key
    ks.set(0, b"common:x", b"own")
    assert stored(ns["team"], b"common:x") == b"own" and stored(ns["common"], b"x") is None


def test_a_value_received_in_a_slot_lands_in_the_routed_namespace(spaces):
    ks, ns = spaces
    off = ks.reserve(5, 16)
    ks.slot(off)[:] = b"hello"
    ks.commit(off, 0, b"docs:big")
    assert stored(ns["docs"], b"big") == b"hello"
    assert ns["team"].stats()["used_bytes"] == 0      # the reservation was released
    off = ks.reserve(3, 16)
    ks.slot(off)[:] = b"abc"
    ks.commit(off, 0, b"mine")
    assert stored(ns["team"], b"mine") == b"abc"


def test_shared_keys_change_only_with_a_write_grant(spaces):
    ks, ns = spaces
    ns["common"].set(0, b"c", b"v")
    ns["docs"].set(0, b"d", b"v")
    with pytest.raises(CommandError, match="shared namespace 'common', read-only for tenant 'team'"):
        ks.delete(0, b"c")
    with pytest.raises(CommandError, match="read-only"):
        ks.set_expire(ks.find(0, b"c"), 4102444800000)
    with pytest.raises(CommandError, match="read-only"):
        ks.rename(0, b"c", 0, b"c2")
    assert stored(ns["common"], b"c") == b"v" and ns["common"].expire_at(ns["common"].lookup(0, b"c")) == -1
    # docs is writable: its entry seen through fall-through can be changed
    ks.set_expire(ks.find(0, b"d"), 4102444800000)
    assert ns["docs"].expire_at(ns["docs"].lookup(0, b"d")) == 4102444800000
    with pytest.raises(CommandError, match="another namespace"):
        ks.rename(0, b"d", 0, b"d2")
    assert ks.rename(0, b"docs:d", 0, b"docs:d2") is True and stored(ns["docs"], b"d2") == b"v"
    assert ks.delete(0, b"d2") is True and stored(ns["docs"], b"d2") is None
    assert ks.delete(0, b"never") is False


def test_append_and_setrange_copy_a_shared_value_up(spaces):
    ks, ns = spaces
    ns["common"].set(0, b"a", b"hello", expire_at=4102444800000)
    assert ks.append(0, b"a", b" world") == 11
    assert stored(ns["team"], b"a") == b"hello world" and stored(ns["common"], b"a") == b"hello"
    assert ns["team"].expire_at(ns["team"].lookup(0, b"a")) == 4102444800000
    ns["common"].set(0, b"r", b"abcdef")
    assert ks.setrange(0, b"r", 2, b"XY") == 6
    assert stored(ns["team"], b"r") == b"abXYef" and stored(ns["common"], b"r") == b"abcdef"


def test_copy_from_a_shared_namespace_into_the_own_one(spaces):
    ks, ns = spaces
    ns["common"].set(0, b"h", b"\x00fields", type=TYPE_HASH)
    assert ks.copy(0, b"h", 1, b"h2") is True
    off = ns["team"].lookup(1, b"h2")
    assert ns["team"].value_bytes(off) == b"\x00fields" and ns["team"].entry_type(off) == TYPE_HASH
    assert ks.copy(0, b"h", 1, b"h2") is False            # exists, no REPLACE
    assert ks.copy(0, b"h", 1, b"h2", True) is True
    assert ks.copy(0, b"nothing", 0, b"x") is False
    ks.set(0, b"own", b"o")
    assert ks.copy(0, b"own", 0, b"docs:own") is True and stored(ns["docs"], b"own") == b"o"


def test_key_generation_sees_what_a_read_sees(spaces):
    ks, ns = spaces
    assert ks.key_generation(0, b"w") == 0
    ns["common"].set(0, b"w", b"v")
    shared = ks.key_generation(0, b"w")
    assert shared == ns["common"].key_generation(0, b"w") != 0
    ks.set(0, b"w", b"own")
    assert ks.key_generation(0, b"w") not in (0, shared)


def test_keyspace_commands_see_only_the_own_namespace(spaces):
    ks, ns = spaces
    ns["common"].set(0, b"shared", b"v")
    ks.set(0, b"own", b"v")
    assert ks.keys(0, b"*") == [b"own"] and ks.dbsize(0) == 1
    assert ks.scan(0, 0, 1000)[1] == [b"own"] and ks.random_key(0) == b"own"
    assert own_keyspace(ks) is ns["team"] and own_keyspace(ns["team"]) is ns["team"]
    ks.flushall()
    assert ks.dbsize(0) == 0 and stored(ns["common"], b"shared") == b"v"
    with pytest.raises(TenantError, match="SWAPDB"):
        ks.swapdb(0, 1)


def test_metering_goes_to_the_own_namespace(spaces):
    ks, ns = spaces
    ks.add_command(3)
    ks.add_bytes_in(100)
    ks.add_bytes_out(7)
    team = ns["team"].stats()
    assert (team["commands"], team["bytes_in"], team["bytes_out"]) == (3, 100, 7)
    assert ns["common"].stats()["commands"] == 0
