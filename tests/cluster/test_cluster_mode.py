"""cxlredis as a Redis Cluster node: formed by redis-cli --cluster create, alone and with
redis-server 7.0 nodes, used by cluster clients, and surviving a node's death."""
import random
import socket
import struct

import pytest
import redis
from redis.cluster import RedisCluster

from conftest import encode_command, raw_connection
from cluster_harness import (address, close_all, cluster_info, cluster_node, form, formed, node_id,
                             redis_cli, slot_view, wait_for, wait_until_stable)
from cxlredis.cluster import bus
from cxlredis.cluster.slots import key_slot


@pytest.fixture(scope="module")
def trio():
    with formed([cluster_node("cxlredis") for _ in range(3)]) as nodes:
        yield nodes


def test_redis_cli_forms_and_checks_a_cxlredis_cluster(trio):
    check = redis_cli("--cluster", "check", address(trio[0]))
    assert "[OK] All nodes agree about slots configuration." in check
    assert "[OK] All 16384 slots covered." in check
    assert "[ERR]" not in check and "[WARNING]" not in check
    for node in trio:
        info = cluster_info(node)
        assert (info["cluster_state"], info["cluster_known_nodes"], info["cluster_size"],
                info["cluster_slots_assigned"]) == ("ok", "3", "3", "16384")
    # every node has its own config epoch, and knows the greatest as the current one
    epochs = sorted(int(cluster_info(n)["cluster_my_epoch"]) for n in trio)
    assert len(set(epochs)) == 3
    assert all(int(cluster_info(n)["cluster_current_epoch"]) == epochs[-1] for n in trio)


def test_a_cluster_client_reads_every_value_back(trio):
    client = RedisCluster(host="127.0.0.1", port=trio[0].port)
    values = {f"key:{i}".encode(): bytes([i % 251]) * (i * 37 % 5000) for i in range(1500)}
    values[b"big"] = bytes(range(256)) * 8192                      # 2 MiB
    for key, value in values.items():
        client.set(key, value)
    pipe = client.pipeline()
    for key in values:
        pipe.get(key)
    assert pipe.execute() == list(values.values())
    # each node holds exactly the keys of its own slots
    total = 0
    for node in trio:
        direct = node.client()
        mine = {int(s) for r in slot_view(node)[node_id(node)] for s in _expand(r)}
        keys = direct.keys("*")
        assert all(key_slot(k) in mine for k in keys)
        total += len(keys)
    assert total == len(values)
    client.close()


def _expand(word):
    first, _, last = word.partition("-")
    return range(int(first), int(last or first) + 1)


def test_moved_crossslot_and_redis_cli_follows_redirects(trio):
    slot_owner = {}
    for node in trio:
        for word in slot_view(node)[node_id(node)]:
            for slot in _expand(word):
                slot_owner[slot] = node
    key = b"somekey"
    owner = slot_owner[key_slot(key)]
    other = next(n for n in trio if n is not owner)
    with raw_connection(other.port) as conn:
        assert conn.request("GET", key) == f"-MOVED {key_slot(key)} 127.0.0.1:{owner.port}\r\n".encode()
    with raw_connection(owner.port) as conn:
        assert conn.request("MSET", "a", "1", "b", "2") == (
            b"-CROSSSLOT Keys in request don't hash to the same slot\r\n")
    # hash tags put keys in one slot, and a transaction of them runs
    tagged = slot_owner[key_slot(b"{user1}")].client()
    pipe = tagged.pipeline(transaction=True)
    pipe.set("{user1}.a", "1").set("{user1}.b", "2").mget("{user1}.a", "{user1}.b")
    assert pipe.execute() == [True, True, [b"1", b"2"]]
    assert redis_cli("-c", "-p", other.port, "set", key.decode(), "via-cli").strip() == "OK"
    assert owner.client().get(key) == b"via-cli"


def test_exec_with_a_key_of_another_node_is_refused_whole(trio):
    node = trio[0]
    mine = {s for w in slot_view(node)[node_id(node)] for s in _expand(w)}
    foreign = next(f"k{i}" for i in range(1000) if key_slot(f"k{i}".encode()) not in mine)
    local = next(f"k{i}" for i in range(1000) if key_slot(f"k{i}".encode()) in mine)
    with raw_connection(node.port) as conn:
        assert conn.request("MULTI") == b"+OK\r\n"
        assert conn.request("SET", local, "1") == b"+QUEUED\r\n"
        assert conn.request("SET", foreign, "1").startswith(b"-MOVED ")
        assert conn.request("EXEC") == (
            b"-EXECABORT Transaction discarded because of previous errors.\r\n")
    assert node.client().get(local) is None


@pytest.fixture(scope="module")
def mixed():
    nodes = [cluster_node("redis"), cluster_node("cxlredis", cluster_announce_hostname="cx1"),
             cluster_node("redis"), cluster_node("cxlredis")]
    with formed(nodes):
        yield nodes


def test_a_mixed_cluster_agrees_on_the_slots(mixed):
    check = redis_cli("--cluster", "check", address(mixed[1]))
    assert "[OK] All 16384 slots covered." in check and "[ERR]" not in check
    views = [slot_view(n) for n in mixed]
    assert all(v == views[0] for v in views)

    def slots_reply(node):
        return sorted(map(repr, node.client().execute_command("CLUSTER", "SLOTS")))

    def shards_reply(node):
        shards = node.client(protocol=3).execute_command("CLUSTER", "SHARDS")
        return sorted(repr(sorted((k, repr(v)) for k, v in shard.items())) for shard in shards)

    assert all(slots_reply(n) == slots_reply(mixed[0]) for n in mixed)
    wait_for(lambda: all(shards_reply(n) == shards_reply(mixed[0]) for n in mixed),
             "every node to give the same CLUSTER SHARDS")
    # the hostname gossiped by the cxlredis node reached the redis-server nodes
    assert any(",cx1 " in line for line in
               mixed[0].client().execute_command("CLUSTER", "NODES").decode().splitlines())


def test_a_cluster_client_spans_both_kinds_of_node(mixed):
    client = RedisCluster(host="127.0.0.1", port=mixed[0].port)
    for i in range(500):
        client.set(f"m{i}", f"v{i}" * 100)
    assert [client.get(f"m{i}") for i in range(500)] == [f"v{i}".encode() * 100 for i in range(500)]
    counts = [n.client().dbsize() for n in mixed]
    assert all(counts) and sum(counts) == 500
    client.close()


def test_kill9_fails_the_node_and_its_warm_restart_heals_the_cluster():
    nodes = [cluster_node("cxlredis") for _ in range(3)]
    try:
        form(nodes)
        client = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        for i in range(300):
            client.set(f"w{i}", f"value-{i}")
        client.close()
        victim = nodes[2]
        victim_id, victim_keys = node_id(victim), victim.client().dbsize()
        assert victim_keys
        victim.kill9()
        survivors = nodes[:2]

        def failed():
            return all("fail" in line.split()[2].split(",")           # FAIL, not just fail?
                       for n in survivors for line in
                       n.client().execute_command("CLUSTER", "NODES").decode().splitlines()
                       if line.startswith(victim_id))
        # within about 2 node timeouts: PFAIL after one, FAIL once the majority agrees
        wait_for(failed, "the survivors to flag the killed node fail", timeout=10)
        wait_for(lambda: all(cluster_info(n)["cluster_state"] == "fail" for n in survivors),
                 "the survivors to see the cluster down", timeout=5)
        with raw_connection(survivors[0].port) as conn:
            assert conn.request("GET", "anything") == b"-CLUSTERDOWN The cluster is down\r\n"
        # without full coverage the survivors serve the slots that are still up
        for node in survivors:
            node.client().config_set("cluster-require-full-coverage", "no")
        wait_for(lambda: all(cluster_info(n)["cluster_state"] == "ok" for n in survivors),
                 "the survivors to serve again")
        victim.start()            # same port, arena and nodes.conf: a warm restart
        assert node_id(victim) == victim_id
        assert victim.client().dbsize() == victim_keys
        wait_until_stable(nodes)
        client = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        assert [client.get(f"w{i}") for i in range(300)] == [f"value-{i}".encode() for i in range(300)]
        client.close()
    finally:
        close_all(nodes)


def _bus_socket(node):
    sock = socket.create_connection(("127.0.0.1", int(node.options["cluster-port"])), timeout=5)
    return sock


def test_bad_bus_input_and_strangers_change_nothing(trio):
    node = trio[0]
    before = slot_view(node)
    epoch = cluster_info(node)["cluster_current_epoch"]
    stranger = b"f" * 40
    claim_all = bus.slot_bitmap(range(16384))
    hostile = [
        b"garbage that is not the bus at all\r\n",
        b"RCmb" + struct.pack(">I", 8),                                  # shorter than a header
        b"RCmb" + struct.pack(">I", 0xFFFFFFFF) + bytes(64),              # announces 4 GiB
        bus.encode(bus.Message(type=bus.PING, sender=stranger, port=1, cport=2,
                               flags=bus.NODE_MASTER, config_epoch=1 << 60, current_epoch=1 << 60,
                               slots=claim_all))[:3000],                  # truncated
        bus.encode(bus.Message(type=99, sender=stranger, port=1, cport=2, flags=0)),
    ]
    # a stranger's well-formed messages: slots claimed with a huge epoch, a FAIL, an UPDATE
    names = list(before)
    strangers = [
        bus.Message(type=bus.PING, sender=stranger, port=1, cport=2, flags=bus.NODE_MASTER,
                    config_epoch=1 << 60, current_epoch=1 << 60, slots=claim_all),
        bus.Message(type=bus.FAIL, sender=stranger, port=1, cport=2, flags=bus.NODE_MASTER,
                    about=names[1].encode()),
        bus.Message(type=bus.UPDATE, sender=stranger, port=1, cport=2, flags=bus.NODE_MASTER,
                    update_epoch=1 << 60, update_name=names[1].encode(), update_slots=claim_all),
    ]
    for data in hostile + [bus.encode(m) for m in strangers]:
        with _bus_socket(node) as sock:
            sock.sendall(data)
            sock.settimeout(0.5)
            try:
                while sock.recv(65536):
                    pass
            except (socket.timeout, ConnectionResetError):
                pass
    assert node.client().ping()
    assert slot_view(node) == before
    info = cluster_info(node)
    assert (info["cluster_state"], info["cluster_current_epoch"]) == ("ok", epoch)
    assert "f" * 40 not in node.client().execute_command("CLUSTER", "NODES").decode()


def test_mutated_bus_messages_never_take_a_node_down(trio):
    """Valid messages of every kind with random bytes flipped, cut or appended, sent by a
    peer that is not in the cluster, many per connection: the node keeps serving and its
    slots and epochs stay as they were."""
    node = trio[1]
    before, epoch = slot_view(node), cluster_info(node)["cluster_current_epoch"]
    rng = random.Random(2024)
    stranger = b"e" * 40
    templates = [bus.encode(bus.Message(type=kind, sender=stranger, port=7, cport=8,
                                        flags=bus.NODE_MASTER, config_epoch=1 << 40,
                                        slots=bus.slot_bitmap(range(0, 16384, 3)),
                                        gossip=[bus.Gossip(b"d" * 40, 0, 0, b"127.0.0.1", 9, 10,
                                                           bus.NODE_MASTER)],
                                        about=b"c" * 40, update_name=b"c" * 40,
                                        update_slots=bytes(2048), channel=b"ch", payload=b"m"))
                 for kind in (bus.PING, bus.PONG, bus.FAIL, bus.UPDATE, bus.PUBLISH)]
    for _ in range(40):
        with _bus_socket(node) as sock:
            for _ in range(10):
                data = bytearray(rng.choice(templates))
                for _ in range(rng.randrange(1, 8)):
                    data[rng.randrange(len(data))] = rng.randrange(256)
                if rng.random() < 0.3:
                    data = data[:rng.randrange(len(data))]
                if rng.random() < 0.2:
                    data += rng.randbytes(rng.randrange(1, 300))
                try:
                    sock.sendall(data)
                except OSError:
                    break               # the node dropped the link: as Redis does
    assert node.client().ping()
    wait_until_stable(trio)
    assert slot_view(node) == before
    assert cluster_info(node)["cluster_current_epoch"] == epoch


def test_a_node_refuses_a_corrupt_nodes_conf_and_a_shared_one():
    node = cluster_node("cxlredis")
    try:
        conf = node.dir / "nodes.conf"
        assert "myself,master" in conf.read_text()
        # a second node pointed at the same nodes.conf while the first runs
        with pytest.raises(Exception, match="is already used by a different Redis Cluster node"):
            cluster_node("cxlredis", dir=str(node.dir))
        node.stop()
        conf.write_text("this is not a nodes.conf\n")
        with pytest.raises(Exception, match="corrupted cluster config file"):
            node.start()
    finally:
        node.close()


def test_cluster_commands_outside_cluster_mode_answer_as_redis(redis_oracle, cxl):
    for argv in (("CLUSTER", "INFO"), ("CLUSTER", "NODES"), ("ASKING",), ("READONLY",),
                 ("READWRITE",), ("CLUSTER", "KEYSLOT", "x")):
        replies = []
        for server in (redis_oracle, cxl):
            try:
                replies.append(server.client().execute_command(*argv))
            except redis.ResponseError as e:
                replies.append(str(e))
        assert replies[0] == replies[1], argv


@pytest.mark.parametrize("kind", ["redis-server", "cxlredis"])
def test_a_client_blocked_on_a_slot_that_goes_is_answered(kind):
    """Redis's clusterRedirectBlockedClientIfNeeded: a client blocked on a key whose slot
    this node stops serving is told so (here the slot is deleted: the cluster goes down)
    instead of waiting for a push that can never come; the same answer on both servers."""
    node = cluster_node("redis" if kind == "redis-server" else "cxlredis")
    try:
        admin = raw_connection(node.port)
        assert admin.request("CLUSTER", "ADDSLOTSRANGE", "0", "16383") == b"+OK\r\n"
        wait_for(lambda: cluster_info(node)["cluster_state"] == "ok", "the node to be ok")
        waiting = raw_connection(node.port)
        waiting.send(encode_command("BLPOP", "queue", "0"))
        wait_for(lambda: b"cmd=blpop" in admin.request("CLIENT", "LIST"), "the client to block")
        assert admin.request("CLUSTER", "DELSLOTS", str(key_slot(b"queue"))) == b"+OK\r\n"
        assert waiting.read_reply(timeout=5) == b"-CLUSTERDOWN The cluster is down\r\n"
    finally:
        node.close()
