"""A slot moves whole, with the keys of every tenant: redis-cli --cluster reshard run by an
administrator moves them all, byte-identical, into the same tenants on the target; a slot
that still holds any tenant's key is not given away; a node that loses a slot drops every
tenant's keys of it; and a tenant's own users still see only their own keys."""
import random

import pytest
import redis

from cluster_harness import (address, cluster_node, formed, keys_in_slots, node_id, owned_slots,
                             redis_cli, wait_for, wait_until_stable)
from conftest import ServerProcess
from cxlredis.cluster.slots import key_slot

PASSWORD = "pw"
TENANTS = ["team-a", "team-b"]
USERS = {"team-a": "alice", "team-b": "bob"}
CONF = [f"user {user} on >{PASSWORD} ~* &* +@all" for user in USERS.values()] + [
    f"tenant {tenant} users {user}" for tenant, user in USERS.items()]


def tenant_cluster():
    return formed([cluster_node("cxlredis", conf_lines=CONF, arena_size="256mb") for _ in range(3)])


def as_user(node, tenant):
    """A connection of the tenant's user (None: the administrator, the default user)."""
    if tenant is None:
        return node.client(socket_timeout=30)
    return redis.Redis(port=node.port, username=USERS[tenant], password=PASSWORD, socket_timeout=30)


def keys_of_every_tenant(node):
    """(a slot of node's, a key in it, a key in another of its slots), both written by
    every tenant and the administrator."""
    slot = owned_slots(node)[0]
    lost, kept = keys_in_slots([slot], 1, "lost:")[0], keys_in_slots([owned_slots(node)[1]], 1, "kept:")[0]
    for tenant in [None, *TENANTS]:
        as_user(node, tenant).set(lost, b"stale once the slot is gone")
        as_user(node, tenant).set(kept, b"stays")
    return slot, lost, kept


def claim(node, slot):
    """node takes slot with a newer config epoch, as a failover would."""
    admin = as_user(node, None)
    admin.execute_command("CLUSTER", "SETSLOT", slot, "NODE", node_id(node))
    admin.execute_command("CLUSTER", "BUMPEPOCH")


def count_in_slot(client, slot):
    return client.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)


@pytest.mark.timeout(180)
def test_reshard_by_an_administrator_moves_every_tenants_keys():
    with tenant_cluster() as nodes:
        source, target = nodes[0], nodes[1]
        moving = owned_slots(source)[:12]
        names = keys_in_slots(moving, 3, "kv:")
        rng = random.Random(5)
        written = {}        # (tenant, key) -> value: the same names in every tenant, other bytes
        for tenant in [None, *TENANTS]:
            client = as_user(source, tenant)
            for i, key in enumerate(names):
                if tenant == "team-b" and i % 3 == 0:
                    continue        # keys only some tenants have move too
                value = rng.randbytes([100, 70_000, 1 << 20][i % 3])
                client.set(key, value)
                written[tenant, key] = value
        # the only key of its name in slot moving[0]: team-a's
        only_a = keys_in_slots([moving[0]], 1, "only-a:")[0]
        as_user(source, "team-a").set(only_a, b"team-a alone")
        written["team-a", only_a] = b"team-a alone"

        admin = as_user(source, None)
        slot = moving[0]
        per_tenant = {t: sum(1 for (owner, key) in written if owner == t and key_slot(key) == slot)
                      for t in [None, *TENANTS]}
        assert count_in_slot(admin, slot) == sum(per_tenant.values())
        assert count_in_slot(as_user(source, "team-a"), slot) == per_tenant["team-a"]
        listed = admin.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
        assert sorted(listed) == sorted({key for (_, key) in written if key_slot(key) == slot})
        assert len(admin.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 2)) == 2
        own = as_user(source, "team-b").execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
        assert sorted(own) == sorted(key for (t, key) in written if t == "team-b" and key_slot(key) == slot)

        redis_cli("--cluster", "reshard", address(source), "--cluster-from", node_id(source),
                  "--cluster-to", node_id(target), "--cluster-slots", len(moving), "--cluster-yes",
                  "--cluster-pipeline", 2)
        wait_until_stable(nodes)
        assert set(moving) <= set(owned_slots(target))
        for tenant in [None, *TENANTS]:
            on_target, on_source = as_user(target, tenant), as_user(source, tenant)
            for (owner, key), value in written.items():
                if owner == tenant:
                    assert on_target.get(key) == value, (tenant, key)
            assert on_source.dbsize() == 0, tenant
        # a tenant without a key of a name gets none from the move
        assert as_user(target, "team-b").exists(names[0]) == 0
        assert as_user(target, "team-b").exists(only_a) == 0
        assert sum(count_in_slot(as_user(source, None), s) for s in moving) == 0


@pytest.mark.timeout(120)
def test_a_slot_holding_a_tenants_key_is_not_given_away():
    with tenant_cluster() as nodes:
        source, target = nodes[0], nodes[1]
        slot = owned_slots(source)[0]
        key = keys_in_slots([slot], 1, "held:")[0]
        as_user(source, "team-b").set(key, b"v")
        admin = as_user(source, None)
        assert admin.dbsize() == 0
        with pytest.raises(redis.ResponseError, match=f"^Can't assign hashslot {slot} to a different "
                                                      "node while I still hold keys for this hash slot.$"):
            admin.execute_command("CLUSTER", "SETSLOT", slot, "NODE", node_id(target))
        with pytest.raises(redis.ResponseError, match="^DB must be empty to perform CLUSTER FLUSHSLOTS.$"):
            admin.execute_command("CLUSTER", "FLUSHSLOTS")
        with pytest.raises(redis.ResponseError, match="^CLUSTER RESET can't be called with master nodes "
                                                      "containing keys$"):
            admin.execute_command("CLUSTER", "RESET")
        assert as_user(source, "team-b").get(key) == b"v"


@pytest.mark.timeout(120)
def test_a_node_that_loses_a_slot_drops_every_tenants_keys_of_it():
    with tenant_cluster() as nodes:
        source, taker = nodes[0], nodes[1]
        slot, lost, kept = keys_of_every_tenant(source)
        claim(taker, slot)      # with a newer epoch: the source learns it and lets go
        wait_for(lambda: slot not in owned_slots(source), what="the source to learn it lost the slot")
        for tenant in [None, *TENANTS]:
            client = as_user(source, tenant)    # asked for lost, it answers MOVED now
            wait_for(lambda: client.dbsize() == 1, what=f"{tenant}'s key of the lost slot to go")
            assert client.get(kept) == b"stays"
            assert count_in_slot(client, slot) == 0


@pytest.mark.timeout(120)
def test_restore_asking_into_a_tenant_is_for_administrators():
    with tenant_cluster() as nodes:
        node = nodes[0]
        key, source = keys_in_slots([owned_slots(node)[0]], 2, "r:")
        admin, alice = as_user(node, None), as_user(node, "team-a")
        admin.set(source, b"payload")
        payload = admin.dump(source)
        admin.execute_command("RESTORE-ASKING", key, 0, payload, "TENANT", "team-b")
        assert as_user(node, "team-b").get(key) == b"payload"
        assert admin.exists(key) == 0 and alice.exists(key) == 0
        with pytest.raises(redis.ResponseError, match="^RESTORE-ASKING TENANT is for administrators: "
                                                      "this connection belongs to tenant 'team-a'$"):
            alice.execute_command("RESTORE-ASKING", key, 0, payload, "TENANT", "team-b")
        with pytest.raises(redis.ResponseError, match="^no such tenant 'nobody'$"):
            admin.execute_command("RESTORE-ASKING", key, 0, payload, "TENANT", "nobody")
        # RESTORE itself is Redis's: no such option
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            admin.execute_command("RESTORE", key, 0, payload, "TENANT", "team-b")


@pytest.mark.timeout(120)
def test_a_tenants_key_is_not_migrated_to_a_server_without_tenants():
    plain = ServerProcess("redis", {})
    plain.start()
    try:
        with tenant_cluster() as nodes:
            source, target = nodes[0], nodes[1]
            slot = owned_slots(source)[0]
            key = keys_in_slots([slot], 1, "m:")[0]
            as_user(source, "team-a").set(key, b"team-a's")
            admin = as_user(source, None)
            admin.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", node_id(target))
            with pytest.raises(redis.ResponseError, match="^Target instance replied with error: "):
                admin.execute_command("MIGRATE", "127.0.0.1", plain.port, key, 0, 5000)
            assert as_user(source, "team-a").get(key) == b"team-a's"
            assert plain.client().dbsize() == 0
    finally:
        plain.stop()


@pytest.mark.timeout(120)
def test_a_lost_slots_keys_on_disk_do_not_come_back_with_it():
    """A node with a disk tier loses a slot whose keys are on disk only: those copies go
    with the slot, so when the slot comes back the old values do not."""
    nodes = [cluster_node("cxlredis", conf_lines=CONF, arena_size="256mb", maxmemory="8mb",
                          maxmemory_policy="allkeys-lru", disk_tier_dir="tier", disk_tier_size="64mb")
             for _ in range(3)]
    with formed(nodes):
        source, taker = nodes[0], nodes[1]
        slot, lost, kept = keys_of_every_tenant(source)
        admin = as_user(source, None)
        admin.config_set("maxmemory", 1)      # everything is evicted, so only on disk
        admin.config_set("maxmemory", "8mb")
        assert admin.info("disktier")["disk_tier_keys"] == 6
        claim(taker, slot)
        wait_for(lambda: slot not in owned_slots(source), what="the source to learn it lost the slot")
        wait_for(lambda: admin.info("disktier")["disk_tier_keys"] == 3, what="the lost slot's copies to go")
        # the slot comes back, empty on the taker: the source has no key of it either
        claim(source, slot)
        wait_for(lambda: slot in owned_slots(source), what="the source to own the slot again")
        for tenant in [None, *TENANTS]:
            client = as_user(source, tenant)
            assert client.get(lost) is None
            assert client.get(kept) == b"stays"
