"""Clusters of real processes on loopback: cxlredis nodes, redis-server nodes, or both,
formed by redis-cli --cluster create as an operator would.

    nodes = [cluster_node("cxlredis"), cluster_node("redis"), ...]   # started
    form(nodes)             # redis-cli --cluster create, then wait until all agree
    wait_for(lambda: ..., what="...")
    close_all(nodes)

    with formed([cluster_node("cxlredis") for _ in range(3)]) as nodes:   # both at once
        ...

    owned_slots(node), keys_in_slots(slots, per_slot, prefix)    # what to move, with what
"""
import contextlib
import subprocess
import time

from conftest import ServerProcess, free_port
from cxlredis.cluster.slots import key_slot

NODE_TIMEOUT_MS = 1000          # short, so failure detection takes seconds in tests


def cluster_node(kind, conf_lines=(), **options):
    """A started cluster node with its own directory, nodes.conf and bus port (port + 10000
    may not exist for a free port above 55535); conf_lines go in its config file (the
    directives that may repeat: user, tenant)."""
    settings = {"cluster-enabled": "yes", "cluster-config-file": "nodes.conf",
                "cluster-port": free_port(), "cluster-node-timeout": NODE_TIMEOUT_MS}
    if kind == "cxlredis":
        settings["tenants-file"] = ""
    settings.update({name.replace("_", "-"): value for name, value in options.items()})
    node = ServerProcess(kind, settings)
    if conf_lines:
        conf = node.dir / "node.conf"
        conf.write_text("".join(line + "\n" for line in conf_lines))
        node.conf = str(conf)
    node.start()
    return node


def address(node):
    return f"127.0.0.1:{node.port}"


def redis_cli(*args, timeout=120, check=True):
    done = subprocess.run(["redis-cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"redis-cli {' '.join(map(str, args))} exited {done.returncode}:\n"
                             f"{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def form(nodes):
    """redis-cli --cluster create over the nodes (slots split evenly, no replicas), then
    wait until every node says cluster_state:ok and they all agree on the slots."""
    output = redis_cli("--cluster", "create", *map(address, nodes), "--cluster-yes")
    wait_until_stable(nodes)
    return output


def cluster_info(node):
    text = node.client().execute_command("CLUSTER", "INFO")
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.strip().splitlines())


def slot_view(node):
    """{node id: sorted slot ranges} as one node sees the cluster."""
    text = node.client().execute_command("CLUSTER", "NODES")
    text = text.decode() if isinstance(text, bytes) else text
    view = {}
    for line in text.strip().splitlines():
        words = line.split()
        view[words[0]] = tuple(w for w in words[8:] if not w.startswith("["))
    return view


def wait_for(predicate, what, timeout=30.0, interval=0.1):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except (OSError, ConnectionError) as e:       # a node still starting or restarting
            last = e
        else:
            last = None
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}"
                                 + (f" (last error: {last})" if last else ""))
        time.sleep(interval)


def wait_until_stable(nodes, timeout=30.0):
    def stable():
        views = [slot_view(n) for n in nodes]
        return (all(cluster_info(n)["cluster_state"] == "ok" for n in nodes)
                and all(v == views[0] for v in views) and len(views[0]) == len(nodes))
    wait_for(stable, "every node to be ok and agree on the slots", timeout)


def node_id(node):
    value = node.client().execute_command("CLUSTER", "MYID")
    return value.decode() if isinstance(value, bytes) else value


def close_all(nodes):
    for node in nodes:
        node.close()


@contextlib.contextmanager
def formed(nodes):
    """The nodes formed into one cluster for the block, and stopped after it."""
    try:
        form(nodes)
        yield nodes
    finally:
        close_all(nodes)


def owned_slots(node):
    """The slots node says it owns."""
    slots = []
    for word in slot_view(node)[node_id(node)]:
        first, _, last = word.partition("-")
        slots.extend(range(int(first), int(last or first) + 1))
    return slots


def keys_in_slots(slots, per_slot, prefix):
    """Key names whose slots are the given ones, per_slot of each."""
    wanted = {slot: [] for slot in slots}
    i = 0
    while any(len(found) < per_slot for found in wanted.values()):
        key = f"{prefix}{i}".encode()
        found = wanted.get(key_slot(key))
        if found is not None and len(found) < per_slot:
            found.append(key)
        i += 1
    return [key for found in wanted.values() for key in found]
