"""cxlredis.local.ClusterLocalClient on a 3-shard cxlredis cluster on loopback: every
shard's arena mapped (over TCP as a user with a password, or over the shards' unix
sockets), values of 1 KiB..32 MiB byte-exact on every shard, mget_into across shards,
a slot moved under the client (MOVED), a slot mid-migration (ASK, TRYAGAIN), a
reservation whose slot moved before its COMMIT, a shard killed and restarted warm;
and the LMCache plugin over a redis-cluster:// and a unix-cluster:// url."""
import random
import sys
from pathlib import Path

import pytest
import redis
from redis.exceptions import AskError, MovedError

from cluster_harness import address, cluster_node, formed, node_id, wait_for, wait_until_stable
from cxlredis.cluster.slots import key_slot
from cxlredis.local import ClusterLocalClient, LocalClient

KiB, MiB = 1 << 10, 1 << 20
PASSWORD = "pw"
USER = f"kv on >{PASSWORD} ~* &* +@all"      # TCP on loopback maps only for a password user
SIZES = (KiB, 64 * KiB + 1, MiB, 2 * MiB + 3, 32 * MiB)


@pytest.fixture(scope="module")
def shards():
    # leases of a minute: a reservation must outlast the slot moves a test makes under it
    nodes = [cluster_node("cxlredis", arena_size="320mb", user=USER, cxl_lease_ms=60000,
                          cxl_lease_max_bytes="160mb") for _ in range(3)]
    with formed(nodes):
        yield nodes


def connect(shards, transport, **options):
    if transport == "tcp":          # one startup node: the others are learnt from the map
        return ClusterLocalClient([address(shards[0])], username="kv", password=PASSWORD,
                                  socket_timeout=30, **options)
    return ClusterLocalClient([n.unixsocket for n in shards], socket_timeout=30, **options)


def endpoint(node, transport):
    return address(node) if transport == "tcp" else node.unixsocket


@pytest.fixture(params=["tcp", "unix"])
def transport(request):
    return request.param


@pytest.fixture
def kv(shards, transport):
    client = connect(shards, transport)
    try:
        yield client
    finally:
        client.close()


def owner(shards, slot):
    """The node serving slot, as the first node's CLUSTER SLOTS says."""
    for start, end, master, *_ in shards[0].client().execute_command("CLUSTER", "SLOTS"):
        if start <= slot <= end:
            return next(n for n in shards if n.port == master[1])
    raise AssertionError(f"slot {slot} is not served")


def keys_on(shards, node, prefix, count):
    """count keys (bytes) whose slots node serves, each in a slot of its own."""
    found, slots, i = [], set(), 0
    while len(found) < count:
        key = f"{prefix}:{i}".encode()
        i += 1
        slot = key_slot(key)
        if slot not in slots and owner(shards, slot) is node:
            found.append(key)
            slots.add(slot)
    return found


def empty_slot_key(shards, node, prefix):
    """A key of a slot node serves and that holds no key yet."""
    for i in range(100000):
        key = f"{{{prefix}{i}}}".encode()
        slot = key_slot(key)
        if owner(shards, slot) is node and not node.client().execute_command(
                "CLUSTER", "COUNTKEYSINSLOT", slot):
            return key
    raise AssertionError("no empty slot found")


def stats(node, section="commandstats"):
    return node.client().info(section)


def calls(info, command):
    return info.get(f"cmdstat_{command}", {}).get("calls", 0)


def errors(node, prefix):
    return stats(node, "errorstats").get(f"errorstat_{prefix}", {}).get("count", 0)


def reset_stats(shards):
    for node in shards:
        node.client().config_resetstat()


def set_slot_everywhere(shards, slot, target):
    """CLUSTER SETSLOT slot NODE target on the target first, then on every other node
    (the order redis-cli uses), and wait until they all agree. The target must be
    importing the slot: giving it to itself then bumps its config epoch past every
    other, so the old owner's gossip, sent before it heard, cannot take it back."""
    target_id = node_id(target)
    for node in [target] + [n for n in shards if n is not target]:
        node.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    wait_until_stable(shards)
    wait_for(lambda: all(owner([n] + shards, slot) is target for n in shards),
             f"every node to give slot {slot} to {target.port}")


def start_migration(slot, source, target):
    target.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", node_id(source))
    source.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", node_id(target))


def migrate(source, target, *keys):
    reply = source.client(socket_timeout=60).execute_command(
        "MIGRATE", "127.0.0.1", target.port, "", 0, 10000, "KEYS", *keys)
    assert reply == b"OK"


def read_asking(node, key):
    """GET key on node right after ASKING (a slot it imports)."""
    client = node.client(single_connection_client=True)
    try:
        client.execute_command("ASKING")
        return client.get(key)
    finally:
        client.close()


# --- every shard mapped, values byte-exact ------------------------------------------

def test_every_shard_is_mapped_and_values_read_back_exactly(shards, kv, transport):
    reset_stats(shards)
    assert set(kv.shards) == {endpoint(n, transport) for n in shards}
    assert all(client.mapped for client in kv.shards.values()), kv.why_not_mapped
    assert kv.mapped and kv.why_not_mapped == {}
    rng = random.Random(transport)
    values = {}
    for node in shards:
        for key, size in zip(keys_on(shards, node, f"v-{transport}", len(SIZES)), SIZES):
            values[key] = (node, rng.randbytes(size))
    for key, (_, value) in values.items():
        assert kv.set(key, value) is True
    buffer = bytearray(32 * MiB)
    for key, (node, value) in values.items():
        assert node.client().get(key) == value                  # on the shard of its slot
        assert kv.get_bytes(key) == value
        assert kv.get_into(key, buffer) == len(value) and buffer[:len(value)] == value
        with kv.get(key) as ref:
            assert ref.mapped and ref.view == value and ref.valid()
    for node in shards:             # every write and read went through that shard's mapping
        info = stats(node)
        assert calls(info, "cxl|commit") == len(SIZES) and calls(info, "set") == 0
        assert calls(info, "cxl|getref") == 3 * len(SIZES) and calls(info, "get") == 1 * len(SIZES)
    assert kv.get_bytes(b"no-such-key") is None and kv.get_into(b"no-such-key", buffer) is None


def test_a_value_may_be_given_in_parts_and_a_key_as_str(kv):
    header, body = b"header!", random.Random(1).randbytes(MiB)
    assert kv.set("str-key", (header, body), ex=100)
    assert kv.get_bytes(b"str-key") == header + body
    assert 0 < kv.client_for("str-key").redis.ttl("str-key") <= 100


def test_mget_into_mget_and_mset_across_shards(shards, kv, transport):
    rng = random.Random(2)
    keys = [f"m-{transport}:{i}".encode() for i in range(60)]
    values = [rng.randbytes(rng.choice((100, 5000, 70 * KiB, 600 * KiB))) for _ in keys]
    assert {owner(shards, key_slot(k)).port for k in keys} == {n.port for n in shards}
    reset_stats(shards)
    assert kv.mset(dict(zip(keys, values)))
    assert sum(calls(stats(n), "cxl|commit") for n in shards) == len(keys)
    wanted = keys + [b"missing-a", b"missing-b"]
    buffers = [bytearray(600 * KiB) for _ in wanted]
    reset_stats(shards)
    lengths = kv.mget_into(wanted, buffers)
    assert lengths == [len(v) for v in values] + [None, None]
    assert all(buffers[i][:len(v)] == v for i, v in enumerate(values))
    for node in shards:             # one MGETREF per slot of each window, nothing over RESP
        info = stats(node)
        assert calls(info, "cxl|mgetref") >= 1 and calls(info, "mget") == 0
        assert calls(info, "cxl|getref") == 0
    refs = kv.mget(wanted)
    assert [None if r is None else bytes(r.view) for r in refs] == values + [None, None]
    assert all(r.mapped and r.valid() for r in refs[:-2])
    for ref in refs[:-2]:
        ref.release()
    kv.flush_releases()
    assert kv.exists(*wanted) == len(keys)
    assert kv.delete(*keys[:10], b"missing-a") == 10
    assert kv.exists(*keys) == len(keys) - 10
    # buffers are looked up only once their leases are granted, on each shard
    asked = []

    class Lazy:
        def __len__(self):
            return len(keys)

        def __getitem__(self, i):
            asked.append(i)
            return buffers[i]
    assert kv.mget_into(keys, Lazy()) == [None] * 10 + [len(v) for v in values[10:]]
    assert sorted(asked) == list(range(10, len(keys)))
    with pytest.raises(ValueError, match="^3 keys but 2 buffers$"):
        kv.mget_into(keys[:3], buffers[:2])
    with pytest.raises(ValueError, match="does not fit buffer"):
        kv.mget_into(keys[10:12], [bytearray(10), bytearray(10)])
    assert kv.mget_into([], []) == [] and kv.mget([]) == []


def test_the_longest_cached_prefix_across_shards(shards, kv, transport):
    rng = random.Random(3)
    prompt = [f"prompt-{transport}:{i}".encode() for i in range(30)]
    assert {owner(shards, key_slot(k)).port for k in prompt} == {n.port for n in shards}
    values = [rng.randbytes(rng.choice((10, 70 * KiB, MiB))) for _ in prompt[:20]]
    kv.mset(dict(zip(prompt, values)))
    kv.set(prompt[25], b"past the gap")
    reset_stats(shards)
    assert kv.prefix(prompt) == 20 and kv.prefix(prompt[20:]) == 0 and kv.prefix([]) == 0
    for node in shards:             # each shard's runs in one write: one call per run
        assert calls(stats(node), "exists") == 0
    refs = kv.prefix_get(prompt)
    assert [bytes(ref.view) for ref in refs] == values
    assert all(ref.mapped and ref.valid() for ref in refs)
    for ref in refs:
        ref.release()
    kv.flush_releases()
    # chunks that share a hash tag share a slot: one CXL PREFIX, one CXL PREFIXREF
    tagged = [f"{{prompt-{transport}}}:{i}".encode() for i in range(10)]
    node = owner(shards, key_slot(tagged[0]))
    kv.mset({key: b"v" for key in tagged[:6]})
    reset_stats(shards)
    assert kv.prefix(tagged) == 6
    assert [bytes(ref.view) for ref in kv.prefix_get(tagged)] == [b"v"] * 6
    assert calls(stats(node), "cxl|prefix") == 1 and calls(stats(node), "cxl|prefixref") == 1
    elsewhere = next(key for key in prompt if key_slot(key) != key_slot(tagged[0]))
    with pytest.raises(redis.ResponseError, match="don't hash to the same slot"):
        node.client().execute_command("CXL", "PREFIX", tagged[0], elsewhere)


def test_a_shard_over_resp_reads_the_same(shards):
    """A user without a password over TCP may not map: every shard goes over RESP, with
    multi-key commands split by slot (a cluster node refuses CROSSSLOT)."""
    with ClusterLocalClient([address(n) for n in shards]) as plain:
        assert not plain.mapped
        assert set(plain.why_not_mapped) == {address(n) for n in shards}
        keys = [f"resp:{i}".encode() for i in range(30)]
        values = [random.Random(i).randbytes(3000) for i in range(30)]
        plain.mset(dict(zip(keys, values)))
        buffers = [bytearray(3000) for _ in keys]
        assert plain.mget_into(keys, buffers) == [3000] * 30 and buffers == values
        assert [bytes(r.view) for r in plain.mget(keys)] == values
        assert plain.get_bytes(keys[0]) == values[0] and plain.exists(*keys) == 30


# --- slots that move under the client -----------------------------------------------

def test_the_client_follows_moved_after_a_slot_migrates(shards, kv, transport):
    source = shards[0]
    target = shards[1]
    key = empty_slot_key(shards, source, f"moved-{transport}")
    slot = key_slot(key)
    value = random.Random(3).randbytes(MiB)
    kv.set(key, value)
    assert kv.client_for(key) is kv.shards[endpoint(source, transport)]
    start_migration(slot, source, target)
    migrate(source, target, key)
    set_slot_everywhere(shards, slot, target)
    reset_stats(shards)
    assert kv.get_bytes(key) == value                       # MOVED, new map, the new shard
    assert errors(source, "MOVED") == 1
    assert kv.client_for(key) is kv.shards[endpoint(target, transport)]
    assert calls(stats(target), "cxl|getref") == 1 and calls(stats(target), "get") == 0
    with kv.get(key) as ref:
        assert ref.mapped and ref.view == value
    kv.set(key + b"2", b"x" * 5000)                          # the same slot: straight there
    assert target.client().get(key + b"2") == b"x" * 5000 and errors(source, "MOVED") == 1


def test_the_client_follows_ask_and_tryagain_mid_migration(shards, kv, transport):
    source, target = shards[1], shards[2]
    tag = empty_slot_key(shards, source, f"ask-{transport}")
    slot = key_slot(tag)
    moved, stays, new = tag + b"moved", tag + b"stays", tag + b"new"
    v_moved, v_stays = random.Random(4).randbytes(MiB), random.Random(5).randbytes(2 * MiB)
    kv.mset({moved: v_moved, stays: v_stays})
    held = kv.reserve(moved, 1000)              # on the source, while the key is there
    held.view[:] = b"r" * 1000
    start_migration(slot, source, target)
    migrate(source, target, moved)
    try:
        reset_stats(shards)
        assert kv.get_bytes(moved) == v_moved                   # ASK: ASKING, then the target
        assert kv.get_bytes(stays) == v_stays                   # still the source's
        assert errors(source, "ASK") == 1 and errors(source, "MOVED") == 0
        assert calls(stats(target), "cxl|getref") == 1 and calls(stats(target), "asking") == 1
        assert kv.client_for(moved) is kv.shards[endpoint(source, transport)]   # no refresh
        # a window naming a key on each side: TRYAGAIN, then key by key
        buffers = [bytearray(2 * MiB) for _ in range(3)]
        assert kv.mget_into([moved, stays, new], buffers) == [MiB, 2 * MiB, None]
        assert buffers[0][:MiB] == v_moved and buffers[1] == v_stays
        assert errors(source, "TRYAGAIN") == 1
        # a new key of the migrating slot is written on the target
        assert kv.set(new, b"n" * 3000)
        assert read_asking(target, new) == b"n" * 3000
        assert source.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
        # the reservation made before the key left: committing it would leave a second copy
        with pytest.raises(AskError, match=f"^{slot} 127.0.0.1:{target.port}$"):
            held.commit()
        assert source.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
        assert read_asking(target, moved) == v_moved
        migrate(source, target, stays)
        set_slot_everywhere(shards, slot, target)
        assert kv.mget_into([moved, stays, new], buffers) == [MiB, 2 * MiB, 3000]
        assert buffers[0][:MiB] == v_moved and buffers[1] == v_stays
        assert kv.client_for(stays) is kv.shards[endpoint(target, transport)]
    finally:
        for node in (source, target):           # a failed test leaves no slot half-moved
            node.client().execute_command("CLUSTER", "SETSLOT", slot, "STABLE")


def test_a_reservation_whose_slot_moved_is_refused_at_commit(shards, kv, transport):
    source, target = shards[2], shards[0]
    key = empty_slot_key(shards, source, f"commit-{transport}")
    slot = key_slot(key)
    reservation = kv.reserve(key, 4096)
    reservation.view[:] = b"c" * 4096
    # the slot holds no key, so it may be given away while the block is reserved
    start_migration(slot, source, target)
    set_slot_everywhere(shards, slot, target)
    with pytest.raises(MovedError, match=f"^{slot} 127.0.0.1:{target.port}$"):
        reservation.commit()
    for node in shards:                          # stored nowhere: no key no node serves
        assert node.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    info = source.client().execute_command("CXL", "INFO")
    assert dict(zip(info[::2], info[1::2]))[b"leases-slots"] == 0
    assert kv.set(key, b"c" * 4096)              # MOVED: written on the new owner
    assert target.client().get(key) == b"c" * 4096


# --- a shard restarts -------------------------------------------------------------------

def test_a_shard_killed_and_restarted_warm_is_reconnected(shards, kv, transport):
    victim = shards[1]
    keys = {node: keys_on(shards, node, f"warm-{transport}", 4) for node in shards}
    values = {key: random.Random(key).randbytes(2 * MiB) for ks in keys.values() for key in ks}
    kv.mset(values)
    before = kv.shards[endpoint(victim, transport)]
    ref = kv.get(keys[victim][0])
    assert ref.mapped and ref.view == values[keys[victim][0]]
    victim.kill9()
    victim.start()                     # same port, arena, nodes.conf and socket
    wait_until_stable(shards)
    assert kv.get_bytes(keys[victim][1]) == values[keys[victim][1]]
    after = kv.shards[endpoint(victim, transport)]
    assert after is not before and after.mapped
    assert not ref.valid()             # its lease was given on a connection that is gone
    ref.release()
    all_keys = list(values)
    buffers = [bytearray(2 * MiB) for _ in all_keys]
    assert kv.mget_into(all_keys, buffers) == [2 * MiB] * len(all_keys)
    assert all(buffer == values[key] for key, buffer in zip(all_keys, buffers))


# --- boundaries -------------------------------------------------------------------------

@pytest.mark.parametrize("nodes, message", [
    ([], "needs at least one startup node"),
    (["localhost"], "not 'localhost'"),
    (["127.0.0.1:port"], "not '127.0.0.1:port'"),
    (["127.0.0.1:"], "not '127.0.0.1:'"),
])
def test_bad_startup_nodes_are_refused(nodes, message):
    with pytest.raises(ValueError, match=message):
        ClusterLocalClient(nodes)


def test_no_answering_node_or_no_cluster_is_an_error(cxl):
    from conftest import free_port
    with pytest.raises(redis.ConnectionError, match="no node gave the slot map: 127.0.0.1:"):
        ClusterLocalClient([f"127.0.0.1:{free_port()}"])
    with pytest.raises(redis.ConnectionError, match="cluster support disabled"):
        ClusterLocalClient([f"127.0.0.1:{cxl.port}"])


def test_a_standalone_local_client_sends_multi_key_commands_whole(cxl):
    """cluster=False (the default): one MGETREF, one MGET, one EXISTS for every key."""
    with LocalClient(unix_socket_path=cxl.unixsocket) as local:
        local.mset({b"a": b"1", b"b": b"2", b"c": b"3"})
        cxl.client().config_resetstat()
        assert [bytes(r.view) for r in local.mget([b"a", b"b", b"c"])] == [b"1", b"2", b"3"]
        assert local.exists(b"a", b"b", b"c", b"d") == 3
        info = cxl.client().info("commandstats")
        assert calls(info, "cxl|mgetref") == 1 and calls(info, "exists") == 1


# --- the LMCache plugin ---------------------------------------------------------------

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cxl"))


@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_the_lmcache_plugin_over_a_cluster_url(shards, transport):
    pytest.importorskip("lmcache")
    from test_lmcache_plugin import check, drive      # LMCache driven as in tests/cxl
    if transport == "tcp":
        url = (f"redis-cluster://kv:{PASSWORD}@"
               + ",".join(f"127.0.0.1:{n.port}" for n in shards))
    else:
        url = "unix-cluster://" + ",".join(n.unixsocket for n in shards)
    for node in shards:
        node.client().flushall()
    reset_stats(shards)
    out = drive(url)
    assert out["mapped"] is True and out["mapped_at_end"] is True
    check(out)
    counts = [n.client().dbsize() for n in shards]
    assert sum(counts) == 7 and sum(1 for c in counts if c) >= 2      # one key per chunk
    assert sum(calls(stats(n), "cxl|commit") for n in shards) == 7
    assert sum(calls(stats(n), "set") for n in shards) == 0


@pytest.mark.parametrize("url, options", [
    ("redis-cluster://h1:1,h2:2", {"startup_nodes": ["h1:1", "h2:2"]}),
    ("redis-cluster://u:p%40w@h1:1/", {"startup_nodes": ["h1:1"], "username": "u",
                                         "password": "p@w"}),
    ("redis-cluster://h1:1/0", {"startup_nodes": ["h1:1"]}),
    ("unix-cluster:///a.sock,/b/c.sock", {"startup_nodes": ["/a.sock", "/b/c.sock"]}),
    ("unix-cluster://lm:pw@/a.sock", {"startup_nodes": ["/a.sock"], "username": "lm",
                                      "password": "pw"}),
])
def test_cluster_urls(url, options):
    pytest.importorskip("lmcache")
    from cxlredis.lmcache_plugin import cluster_options
    assert cluster_options(url) == options


@pytest.mark.parametrize("url, message", [
    ("redis-cluster://h1:1/3", "a cluster has only db 0"),
    ("redis-cluster://", "no cluster node"),
    ("unix-cluster://", "no cluster node"),
    ("redis://h1:1", "not a cluster url"),
])
def test_bad_cluster_urls(url, message):
    pytest.importorskip("lmcache")
    from cxlredis.lmcache_plugin import cluster_options, connect
    with pytest.raises(ValueError, match=message):
        cluster_options(url)
    with pytest.raises(ValueError, match="backing_path names one server's arena"):
        connect("redis-cluster://h1:1", backing_path="/dev/dax0.0")
