"""Slots moving with their keys, by redis-cli --cluster reshard / add-node / rebalance /
del-node, between cxlredis nodes and between cxlredis and redis-server nodes, while a
cluster client keeps reading and writing: no acknowledged key is lost, every value is
byte-identical after it moved."""
import random
import threading

import pytest
from redis.cluster import RedisCluster

from cluster_harness import (address, close_all, cluster_node, form, keys_in_slots, node_id,
                             owned_slots, redis_cli, slot_view, wait_until_stable)


class Traffic(threading.Thread):
    """A cluster client writing new keys and reading old ones until stopped; what it was
    told OK is what must survive."""

    def __init__(self, port, known):
        super().__init__(daemon=True)
        self.client = RedisCluster(host="127.0.0.1", port=port)
        self.known = known
        self.acknowledged = {}
        self.errors = []
        self.stopping = threading.Event()

    def run(self):
        rng = random.Random(7)
        sample = list(self.known)
        i = 0
        while not self.stopping.is_set():
            try:
                key = f"live:{i}".encode()
                value = rng.randbytes(rng.randrange(1, 4096))
                if self.client.set(key, value):
                    self.acknowledged[key] = value
                probe = rng.choice(sample)
                if self.client.get(probe) != self.known[probe]:
                    self.errors.append(f"{probe!r} read wrong during the reshard")
                pipe = self.client.pipeline()
                batch = rng.sample(sample, 8)
                for k in batch:
                    pipe.get(k)
                if pipe.execute() != [self.known[k] for k in batch]:
                    self.errors.append("a pipeline read wrong during the reshard")
            except Exception as e:          # the client gave up: that is a failure too
                self.errors.append(f"{type(e).__name__}: {e}")
            i += 1

    def stop(self):
        self.stopping.set()
        self.join(60)
        self.client.close()


def check_all(port, values):
    client = RedisCluster(host="127.0.0.1", port=port)
    pipe = client.pipeline()
    keys = list(values)
    for key in keys:
        pipe.get(key)
    got = pipe.execute()
    client.close()
    wrong = [k for k, v in zip(keys, got) if v != values[k]]
    assert not wrong, f"{len(wrong)} of {len(keys)} values wrong or missing, e.g. {wrong[:3]}"


def clean_check(node):
    output = redis_cli("--cluster", "check", address(node))
    assert "[OK] All 16384 slots covered." in output and "[ERR]" not in output, output


@pytest.mark.timeout(240)      # about 7000 slot moves, each a few bus and client round trips
def test_reshard_add_node_rebalance_and_del_node_keep_every_value():
    nodes = [cluster_node("cxlredis", arena_size="256mb") for _ in range(3)]
    extra = None
    try:
        form(nodes)
        rng = random.Random(14)
        client = RedisCluster(host="127.0.0.1", port=nodes[0].port)
        values = {f"k:{i}".encode(): rng.randbytes(rng.choice((10, 1000, 20000)))
                  for i in range(3000)}
        values.update({f"big:{i}".encode(): rng.randbytes(1 << 20) for i in range(8)})
        for key, value in values.items():
            client.set(key, value)
        client.close()

        traffic = Traffic(nodes[0].port, values)
        traffic.start()
        redis_cli("--cluster", "reshard", address(nodes[0]), "--cluster-from", node_id(nodes[0]),
                  "--cluster-to", node_id(nodes[1]), "--cluster-slots", 1000, "--cluster-yes")
        traffic.stop()
        assert not traffic.errors, traffic.errors[:5]
        assert traffic.acknowledged
        values.update(traffic.acknowledged)
        wait_until_stable(nodes)
        clean_check(nodes[0])
        assert len(owned_slots(nodes[1])) == 5462 + 1000
        check_all(nodes[0].port, values)

        extra = cluster_node("cxlredis", arena_size="256mb")
        redis_cli("--cluster", "add-node", address(extra), address(nodes[0]))
        wait_until_stable(nodes + [extra])
        redis_cli("--cluster", "rebalance", address(nodes[0]), "--cluster-use-empty-masters")
        wait_until_stable(nodes + [extra])
        clean_check(extra)
        assert len(owned_slots(extra)) > 3000 and extra.client().dbsize() > 0
        check_all(nodes[0].port, values)

        # empty the new node again, then take it out of the cluster
        redis_cli("--cluster", "reshard", address(nodes[0]), "--cluster-from", node_id(extra),
                  "--cluster-to", node_id(nodes[2]), "--cluster-slots", len(owned_slots(extra)),
                  "--cluster-yes")
        assert extra.client().dbsize() == 0
        redis_cli("--cluster", "del-node", address(nodes[0]), node_id(extra))
        wait_until_stable(nodes)
        clean_check(nodes[0])
        assert all(node_id(extra) not in slot_view(n) for n in nodes)
        check_all(nodes[0].port, values)
    finally:
        close_all(nodes + ([extra] if extra else []))


SIZES = [1 << 10, 64 << 10, 1 << 20, 8 << 20, 32 << 20]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("direction", ["redis-to-cxlredis", "cxlredis-to-redis"])
def test_slots_move_both_ways_between_redis_server_and_cxlredis(direction):
    # a redis-server master left without slots would turn itself into a replica
    redis_node = cluster_node("redis", cluster_allow_replica_migration="no")
    cxl_node = cluster_node("cxlredis", arena_size="512mb")
    third = cluster_node("redis", cluster_allow_replica_migration="no")
    nodes = [redis_node, cxl_node, third]
    try:
        form(nodes)
        source, target = ((redis_node, cxl_node) if direction == "redis-to-cxlredis"
                          else (cxl_node, redis_node))
        moving = owned_slots(source)[:10]
        rng = random.Random(len(direction))
        keys = keys_in_slots(moving, 2, "blob:")
        values = {key: rng.randbytes(SIZES[i % len(SIZES)]) for i, key in enumerate(keys)}
        client = RedisCluster(host="127.0.0.1", port=source.port)
        for key, value in values.items():
            client.set(key, value)
        client.close()
        redis_cli("--cluster", "reshard", address(source), "--cluster-from", node_id(source),
                  "--cluster-to", node_id(target), "--cluster-slots", len(moving), "--cluster-yes",
                  "--cluster-timeout", 60000)
        wait_until_stable(nodes)
        clean_check(cxl_node)
        assert set(moving) <= set(owned_slots(target))
        direct = target.client(socket_timeout=60)
        for key, value in values.items():
            assert direct.get(key) == value, key
        assert source.client().dbsize() == 0
        check_all(third.port, values)
    finally:
        close_all(nodes)
