"""Cluster mode (cluster.enabled) of the chart: what `helm template` renders for it (the
manifests themselves go through kubernetes-validate with every other scenario, as
ci/cluster-values.yaml), then the real thing on loopback: one cxlredis process per
shard, each from the rendered config with the environment the kubelet would give its
pod (its IP: 127.0.0.1), formed by the hook's own script from the rendered Job.

Only what differs between this machine and the pods is replaced: every pod listens on
6379 and 16379, so each process gets ports of its own; the pod DNS names in the hook's
address list become those ports on 127.0.0.1 (localhost for the first, when it
resolves to 127.0.0.1, so that the script's name lookup runs too); the arena volume
(a memory-backed emptyDir) is a directory on /dev/shm."""
import base64
import os
import posixpath
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from redis.cluster import RedisCluster

from conftest import free_port
from cxlredis.config import Config
from helm_helpers import (CHART, FULLNAME, NAMESPACE, RELEASE, SCENARIOS, ChartServer,
                          config_lines, helm, hook_pod, kinds, one, pod_environment, render,
                          render_error, run_helm_test, run_probe, server_config, server_container,
                          server_pod_spec, users_conf)

DOMAIN = f"{FULLNAME}-headless.{NAMESPACE}.svc.cluster.local"
JOB = f"{FULLNAME}-cluster"
PASSWORD = 'cluster "pw" \\x'           # ci/cluster-values.yaml's auth.password
SELECTOR = {"app.kubernetes.io/name": "cxlredis", "app.kubernetes.io/instance": RELEASE}
SCRIPT = (CHART / "files" / "form-cluster.sh").read_text()


def job_container(docs) -> dict:
    (container,) = one(docs, "Job", JOB)["spec"]["template"]["spec"]["containers"]
    return container


def env_items(container) -> dict:
    return {item["name"]: item for item in container.get("env", [])}


def pod_names(shards):
    return [f"{FULLNAME}-{ordinal}.{DOMAIN}:6379" for ordinal in range(shards)]


# ---------------------------------------------------------------- what renders

def test_the_statefulset_runs_the_shards_and_each_pod_announces_itself(tmp_path):
    docs = render("cluster", "--set", "replicaCount=7")      # unused in cluster mode
    assert one(docs, "StatefulSet")["spec"]["replicas"] == 3
    container = server_container(docs)
    env = env_items(container)
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["CXLREDIS_CLUSTER_ANNOUNCE_IP"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "status.podIP"}}
    assert env["CXLREDIS_CLUSTER_ANNOUNCE_HOSTNAME"]["value"] == f"$(POD_NAME).{DOMAIN}"
    names = list(env)       # a $(VAR) reference needs VAR defined above it
    assert names.index("POD_NAME") < names.index("CXLREDIS_CLUSTER_ANNOUNCE_HOSTNAME")
    # What the server of pod 2 reads: the rendered file, then that pod's environment.
    conf = server_config(docs, tmp_path)
    pod_env = pod_environment(docs, container, f"{FULLNAME}-2", "10.1.2.3")
    config = Config.load([str(conf)], environ=pod_env)
    assert config["cluster-enabled"] is True
    assert config["cluster-announce-ip"] == "10.1.2.3"
    assert config["cluster-announce-hostname"] == f"{FULLNAME}-2.{DOMAIN}"
    assert {"name": "cluster-bus", "containerPort": 16379, "protocol": "TCP"} in container["ports"]
    headless = one(docs, "Service", f"{FULLNAME}-headless")
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert {"name": "cluster-bus", "port": 16379, "targetPort": "cluster-bus",
            "protocol": "TCP"} in headless["spec"]["ports"]
    assert [p["name"] for p in one(docs, "Service", FULLNAME)["spec"]["ports"]] == ["redis"]
    # Readiness is PING, as without cluster mode: a pod is ready before its cluster is formed.
    assert container["readinessProbe"] == server_container(render("defaults"))["readinessProbe"]


def test_cluster_options_follow_the_values():
    lines = config_lines(render("cluster"))
    assert {name: value for name, value in lines.items() if name.startswith("cluster-")} == {
        "cluster-enabled": "yes", "cluster-config-file": "/var/lib/cxlredis-arena/nodes.conf",
        "cluster-port": "16379", "cluster-node-timeout": "5000",
        "cluster-require-full-coverage": "no", "cluster-allow-reads-when-down": "no",
        "cluster-preferred-endpoint-type": "ip"}
    docs = render("cluster", "--set", "cluster.busPort=17000", "--set", "cluster.nodeTimeout=2000",
                  "--set", "cluster.requireFullCoverage=true",
                  "--set", "cluster.allowReadsWhenDown=true",
                  "--set", "cluster.announce.preferredEndpointType=hostname",
                  "--set", "cluster.announce.clusterDomain=k8s.example")
    lines = config_lines(docs)
    assert (lines["cluster-port"], lines["cluster-node-timeout"], lines["cluster-require-full-coverage"],
            lines["cluster-allow-reads-when-down"], lines["cluster-preferred-endpoint-type"]) == (
        "17000", "2000", "yes", "yes", "hostname")
    container = server_container(docs)
    assert {"name": "cluster-bus", "containerPort": 17000, "protocol": "TCP"} in container["ports"]
    domain = f"{FULLNAME}-headless.{NAMESPACE}.svc.k8s.example"
    assert env_items(container)["CXLREDIS_CLUSTER_ANNOUNCE_HOSTNAME"]["value"] == f"$(POD_NAME).{domain}"
    assert env_items(job_container(docs))["CLUSTER_NODES"]["value"].split() == [
        f"{FULLNAME}-{ordinal}.{domain}:6379" for ordinal in range(3)]
    bus = one(docs, "NetworkPolicy")["spec"]["ingress"][1]
    assert bus["ports"] == [{"port": 17000, "protocol": "TCP"}]


@pytest.mark.parametrize("scenario, extra, where, claim", [
    ("cluster", [], "arena", None),                               # shm: both last as the pod
    ("cluster", ["--set", "persistence.enabled=true"], "data", "data"),     # outlives the arena
    ("file", [], "arena", "arena"),                               # the arena's claim
    ("file-hostpath", ["--set", "podAntiAffinity=hard"], "arena", None),    # the node's directory
    ("hugepages", [], "data", None),                              # hugetlbfs holds no ordinary file
    ("devdax", [], "data", None),                                 # nor does a device
])
def test_nodes_conf_lives_as_long_as_the_arena(scenario, extra, where, claim):
    docs = render(scenario, "--set", "cluster.enabled=true", *extra)
    path = config_lines(docs)["cluster-config-file"]
    mounts = {m["name"]: m["mountPath"] for m in server_container(docs)["volumeMounts"]}
    assert posixpath.dirname(path) == mounts[where] and posixpath.basename(path) == "nodes.conf"
    claims = [c["metadata"]["name"] for c in one(docs, "StatefulSet")["spec"].get("volumeClaimTemplates", [])]
    volumes = {v["name"]: v for v in server_pod_spec(docs)["volumes"]}
    if claim:
        assert claim in claims
    else:
        assert where in volumes
    if where == "arena" and "emptyDir" in volumes.get("arena", {}):
        # The shm arena fills its sizeLimit: nodes.conf (and its next version) need room beside it.
        assert volumes["arena"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1025Mi"}


def test_the_hook_job_forms_the_cluster_with_the_charts_script():
    docs = render("cluster")
    job = one(docs, "Job", JOB)
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    assert job["spec"]["backoffLimit"] == 2
    template = job["spec"]["template"]
    labels = template["metadata"]["labels"]
    assert labels[f"{FULLNAME}-client"] == "true"                  # through the NetworkPolicy
    assert not SELECTOR.items() <= labels.items()                  # not a pod of the Services
    spec = template["spec"]
    assert spec["restartPolicy"] == "Never" and spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    container = job_container(docs)
    assert container["image"] == "redis:7.0.15"         # the server image has no redis-cli
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    (mount,) = container["volumeMounts"]
    assert container["command"] == ["sh", f"{mount['mountPath']}/form-cluster.sh"]
    (volume,) = spec["volumes"]
    assert volume["name"] == mount["name"] and volume["configMap"]["name"] == JOB
    script = one(docs, "ConfigMap", JOB)
    assert "helm.sh/hook" not in script["metadata"].get("annotations", {})   # there before the hook
    assert script["data"]["form-cluster.sh"] == SCRIPT
    env = env_items(container)
    assert env["CLUSTER_NODES"]["value"].split() == pod_names(3)
    assert env["CLUSTER_WAIT_SECONDS"]["value"] == "240"
    assert env["REDISCLI_AUTH"]["valueFrom"] == {"secretKeyRef": {
        "name": f"{FULLNAME}-auth", "key": "default-password"}}
    secret = one(docs, "Secret", f"{FULLNAME}-auth")
    assert base64.b64decode(secret["data"]["default-password"]).decode() == PASSWORD
    assert 'requirepass "cluster \\"pw\\" \\\\x"' in users_conf(docs)
    more = render("cluster", "--set", "cluster.shards=5", "--set", "cluster.hook.waitSeconds=900")
    env = env_items(job_container(more))
    assert env["CLUSTER_NODES"]["value"].split() == pod_names(5)
    assert env["CLUSTER_WAIT_SECONDS"]["value"] == "900"
    assert one(more, "StatefulSet")["spec"]["replicas"] == 5


@pytest.mark.parametrize("extra, expected", [
    (["--set", "auth.existingSecret=cxlredis-users",
      "--set", "cluster.hook.existingSecretPasswordKey=password"],
     {"secretKeyRef": {"name": "cxlredis-users", "key": "password"}}),
    (["--set", "auth.existingSecret=cxlredis-users"], None),       # its default user has none
    (["--set", "auth.users[0].name=u", "--set", "auth.users[0].rules=nopass"], None),
])
def test_the_hooks_password_comes_from_the_secret_that_has_it(extra, expected):
    docs = render("cluster", "--set", "auth.password=", *extra)
    env = env_items(job_container(docs))
    assert env.get("REDISCLI_AUTH", {}).get("valueFrom") == expected
    for secret in (doc for doc in docs if doc["kind"] == "Secret"):
        assert set(secret["data"]) == {"users.conf"}


def test_helm_test_pod_uses_a_cluster_client_on_the_plain_port():
    docs = render("cluster", "--set", "tls.enabled=true", "--set", "tls.existingSecret=cxlredis-tls")
    (container,) = hook_pod(docs)["spec"]["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}
    assert (env["SMOKE_CLUSTER"], env["SMOKE_PORT"]) == ("yes", "6379")
    assert not any(name.startswith("SMOKE_TLS") for name in env)
    (volume,) = hook_pod(docs)["spec"]["volumes"]
    assert [source["secret"]["name"] for source in volume["projected"]["sources"]] == [f"{FULLNAME}-auth"]
    # Without cluster mode the same values test over TLS, as before.
    plain = render("cluster", "--set", "cluster.enabled=false", "--set", "tls.enabled=true",
                   "--set", "tls.existingSecret=cxlredis-tls")
    env = {item["name"]: item["value"] for item in hook_pod(plain)["spec"]["containers"][0]["env"]}
    assert (env.get("SMOKE_CLUSTER"), env["SMOKE_PORT"], env["SMOKE_TLS"]) == (None, "6380", "yes")


def test_more_shards_change_no_pod():
    """Scaling up adds pods and leaves the others as they are: no rolling restart."""
    three, four = render("cluster"), render("cluster", "--set", "cluster.shards=4")
    assert one(three, "StatefulSet")["spec"]["template"] == one(four, "StatefulSet")["spec"]["template"]
    for kind, name in (("ConfigMap", FULLNAME), ("Secret", f"{FULLNAME}-auth"), ("ConfigMap", JOB)):
        assert one(three, kind, name) == one(four, kind, name)


def test_the_network_policy_admits_the_bus_between_the_shards():
    (clients, bus) = one(render("cluster"), "NetworkPolicy")["spec"]["ingress"]
    assert clients["ports"] == [{"port": 6379, "protocol": "TCP"}]
    assert bus == {"ports": [{"port": 16379, "protocol": "TCP"}],
                   "from": [{"podSelector": {"matchLabels": SELECTOR}}]}


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s != "cluster"])
def test_without_cluster_mode_nothing_of_it_renders(scenario):
    docs = render(scenario)
    assert "Job" not in kinds(docs)
    assert JOB not in [doc["metadata"]["name"] for doc in docs]
    assert not any(name.startswith("cluster-") for name in config_lines(docs))
    container = server_container(docs)
    assert "env" not in container
    assert "cluster-bus" not in [port["name"] for port in container["ports"]]
    for secret in (doc for doc in docs if doc["kind"] == "Secret"):
        assert set(secret["data"]) == {"users.conf"}


def test_notes_tell_how_the_cluster_is_formed_and_what_a_lost_pod_costs():
    def notes(*extra):
        return helm("install", RELEASE, CHART, "-f", CHART / "ci" / "cluster-values.yaml",
                    *extra, "--namespace", NAMESPACE, "--dry-run=client").stdout.split("NOTES:", 1)[1]

    text = notes()
    assert "a Redis Cluster of 3 shards (one pod each, no replicas)" in text
    assert f"kubectl -n {NAMESPACE} logs job/{JOB}" in text
    assert f"redis-cli --cluster check {FULLNAME}-0.{DOMAIN}:6379" in text
    assert "WARNING: nodes.conf (which node a pod is) lasts as long as the pod" in text
    assert "WARNING: nodes.conf" not in notes("--set", "persistence.enabled=true")


@pytest.mark.parametrize("values, message", [
    (["--set", "cluster.shards=2"], "/cluster/shards"),
    (["--set", "cluster.busPort=0"], "/cluster/busPort"),
    (["--set", "cluster.nodeTimeout=0"], "/cluster/nodeTimeout"),
    (["--set", "cluster.announce.preferredEndpointType=name"],
     "/cluster/announce/preferredEndpointType"),
    (["--set", "cluster.announce.clusterDomain=cluster local"], "/cluster/announce/clusterDomain"),
    (["--set", "cluster.hook.image.repository="], "/cluster/hook/image/repository"),
    (["--set", "tls.enabled=true", "--set", "tls.existingSecret=s",
      "--set", "tls.disablePlainPort=true"],
     "cluster.enabled needs the plain port: the cluster hook's redis-cli connects to it"),
    (["--set", "colocated.enabled=true", "--set", "podAntiAffinity=hard"],
     "cluster.enabled and colocated.enabled: a co-located client maps one node's arena"),
    (["--set", "cluster.hook.existingSecretPasswordKey=pw"],
     "cluster.hook.existingSecretPasswordKey is a key of auth.existingSecret, which is not set"),
    (["--set", "config.cluster-enabled=no"], "config.cluster-enabled is set by the chart; use cluster.enabled"),
    (["--set", "config.cluster-port=7000"], "use cluster.busPort"),
    (["--set", "config.cluster-announce-hostname=x"], "use (each pod's DNS name)"),
    (["--set", "config.cluster-config-file=n.conf"], "config.cluster-config-file is set by the chart"),
    (["--set", "arena.backing=file", "--set", "arena.file.hostPath=/mnt/x"],
     "a hostPath arena is one per node: with cluster.shards > 1 set podAntiAffinity: hard"),
])
def test_chart_refuses_in_cluster_mode(values, message):
    assert message in render_error("-f", CHART / "ci" / "cluster-values.yaml", *values)


# ---------------------------------------------------------------- the real thing

def localhost_is_ipv4() -> bool:
    result = subprocess.run(["getent", "hosts", "localhost"], capture_output=True, text=True)
    return result.stdout.split()[:1] == ["127.0.0.1"]


@pytest.fixture(scope="module")
def volumes_root():
    """Where each pod's volumes go: tmpfs, as the shm arena's emptyDir (and nodes.conf beside
    it, rewritten at every slot change of a rebalance) is."""
    root = Path(tempfile.mkdtemp(prefix="cxlpods-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    try:
        yield root
    finally:
        shutil.rmtree(root)


def start_pod(docs, ordinal, root) -> ChartServer:
    """Pod <ordinal> of the StatefulSet: its config volume projected, its environment as the
    kubelet makes it, the arena and nodes.conf in its arena volume."""
    name = f"{FULLNAME}-{ordinal}"
    directory = root / name
    conf = server_config(docs, directory)
    container = server_container(docs)
    env = pod_environment(docs, container, name, "127.0.0.1")
    rendered = Config.load([str(conf)], environ={})
    arena_mount = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}["arena"]
    arena_volume = directory / "arena"
    arena_volume.mkdir()
    nodes_conf = posixpath.relpath(rendered["cluster-config-file"], arena_mount)
    assert not nodes_conf.startswith("..")
    server = ChartServer(conf, {"cluster-port": free_port(),
                                "cluster-config-file": str(arena_volume / nodes_conf)}, env=env)
    server.arena_path = str(arena_volume / posixpath.basename(rendered["arena-path"]))
    return server.start()


def run_cluster_hook(docs, pods, work: Path, **env_changes) -> subprocess.CompletedProcess:
    """The Job's container, run here: the script from the rendered ConfigMap where the Job
    mounts it, the Job's environment with its pod names pointed at the processes (and
    env_changes applied, None removing a variable)."""
    container = job_container(docs)
    (mount,) = container["volumeMounts"]
    script = work / "etc-cxlredis-cluster" / "form-cluster.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(one(docs, "ConfigMap", JOB)["data"]["form-cluster.sh"])
    (shell, path) = container["command"]
    assert (shell, path) == ("sh", f"{mount['mountPath']}/form-cluster.sh")
    env = pod_environment(docs, container, f"{JOB}-x7k2p", "127.0.0.2")
    assert env["CLUSTER_NODES"].split() == pod_names(len(pods))
    first = "localhost" if localhost_is_ipv4() else "127.0.0.1"
    env["CLUSTER_NODES"] = " ".join(f"{first if i == 0 else '127.0.0.1'}:{pod.port}"
                                    for i, pod in enumerate(pods))
    env["PATH"] = os.environ["PATH"]
    env.update(env_changes)
    env = {name: value for name, value in env.items() if value is not None}
    return subprocess.run([shell, str(script)], env=env, capture_output=True, text=True, timeout=600)


def client(pod):
    return pod.client(password=PASSWORD, decode_responses=True)


def cluster_info(pod) -> dict:
    return dict(line.split(":", 1) for line in client(pod).execute_command("CLUSTER", "INFO").split())


def cluster_check(pod) -> str:
    result = subprocess.run(["redis-cli", "--cluster", "check", f"127.0.0.1:{pod.port}"],
                            env=dict(os.environ, REDISCLI_AUTH=PASSWORD),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[OK] All nodes agree about slots configuration." in result.stdout
    assert "[OK] All 16384 slots covered." in result.stdout
    assert "[ERR]" not in result.stdout and "[WARNING]" not in result.stdout, result.stdout
    return result.stdout


def cluster_view(pods) -> list:
    """What forming or rebalancing changes: each node's id and epochs, and how it sees every
    node (address, hostname, config epoch, slots)."""
    view = []
    for pod in pods:
        info = cluster_info(pod)
        nodes = {}
        for line in client(pod).execute_command("CLUSTER", "NODES").splitlines():
            words = line.split()
            nodes[words[0]] = (words[1], words[6], tuple(words[8:]))
        view.append((client(pod).execute_command("CLUSTER", "MYID"), info["cluster_current_epoch"],
                     info["cluster_my_epoch"], nodes))
    return view


def owned_slots(pod) -> int:
    me = client(pod).execute_command("CLUSTER", "MYID")
    for line in client(pod).execute_command("CLUSTER", "NODES").splitlines():
        words = line.split()
        if words[0] == me:
            return sum(int(w.split("-")[-1]) - int(w.split("-")[0]) + 1 for w in words[8:])
    raise AssertionError("no line of its own")


def read_back(pods, values):
    """A cluster client that knows only the first pod reads every value."""
    cluster = RedisCluster(host="127.0.0.1", port=pods[0].port, password=PASSWORD)
    try:
        assert [cluster.get(key) for key in values] == list(values.values())
    finally:
        cluster.close()


def write_and_read(pods, prefix, count=600) -> dict:
    values = {f"{prefix}:{i}": os.urandom(i * 13 % 3000) for i in range(count)}
    cluster = RedisCluster(host="127.0.0.1", port=pods[0].port, password=PASSWORD)
    try:
        for key, value in values.items():
            cluster.set(key, value)
    finally:
        cluster.close()
    read_back(pods, values)
    return values


@pytest.fixture(scope="module")
def formed(volumes_root, tmp_path_factory):
    """Three pods of ci/cluster-values.yaml, ready before they are a cluster, then formed by
    one run of the hook (its result kept for the tests)."""
    docs = render("cluster")
    pods = []
    try:
        for ordinal in range(3):
            pods.append(start_pod(docs, ordinal, volumes_root))
        unformed = [(run_probe(docs, pod).returncode, cluster_info(pod)["cluster_state"])
                    for pod in pods]
        work = tmp_path_factory.mktemp("hook")
        first = run_cluster_hook(docs, pods, work)
        yield docs, pods, work, unformed, first
    finally:
        for pod in pods:
            pod.close()


def test_pods_are_ready_before_the_cluster_is_formed(formed):
    (_, _, _, unformed, _) = formed
    assert unformed == [(0, "fail")] * 3


def test_the_hook_forms_the_cluster(formed):
    (docs, pods, _, _, first) = formed
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no pod knows another: creating the cluster" in first.stdout
    assert "the cluster of 3 pods is formed" in first.stdout
    cluster_check(pods[0])
    for ordinal, pod in enumerate(pods):
        info = cluster_info(pod)
        assert (info["cluster_state"], info["cluster_known_nodes"], info["cluster_size"]) == ("ok", "3", "3")
        # Each node announces its pod IP and its pod DNS name.
        cport = pod.options["cluster-port"]
        endpoints = [line.split()[1] for line in client(pods[0]).execute_command("CLUSTER", "NODES").splitlines()]
        assert f"127.0.0.1:{pod.port}@{cport},{FULLNAME}-{ordinal}.{DOMAIN}" in endpoints
        # nodes.conf is beside the arena, and it is this node's.
        nodes_conf = Path(pod.options["cluster-config-file"])
        assert nodes_conf.parent == Path(pod.arena_path).parent
        myself = [line for line in nodes_conf.read_text().splitlines() if "myself" in line]
        assert myself[0].split()[0] == client(pod).execute_command("CLUSTER", "MYID")


def test_a_cluster_client_reads_back_what_it_wrote(formed):
    (_, pods, _, _, _) = formed
    values = write_and_read(pods, "formed")
    counts = [client(pod).dbsize() for pod in pods]
    assert all(counts) and sum(counts) == len(values)


def test_running_the_hook_again_changes_nothing(formed):
    (docs, pods, work, _, _) = formed
    values = write_and_read(pods, "again", 100)
    before = cluster_view(pods)
    again = run_cluster_hook(docs, pods, work)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "every pod is in the cluster already" in again.stdout
    assert "creating" not in again.stdout and "adding" not in again.stdout
    assert "rebalancing" not in again.stdout
    assert cluster_view(pods) == before
    cluster_check(pods[0])
    read_back(pods, values)


def test_a_killed_pod_comes_back_as_the_same_node_with_its_keys(formed):
    """kill -9 and a start on the same volumes, as the kubelet restarts a container: the
    node reads nodes.conf and the arena beside it, rejoins as itself, and the hook then
    finds nothing to do."""
    (docs, pods, work, _, _) = formed
    values = write_and_read(pods, "warm", 300)
    before = cluster_view(pods)
    victim = pods[1]
    (name, keys) = (client(victim).execute_command("CLUSTER", "MYID"), client(victim).dbsize())
    assert keys
    victim.kill9()
    victim.start()
    assert client(victim).execute_command("CLUSTER", "MYID") == name
    assert client(victim).dbsize() == keys
    again = run_cluster_hook(docs, pods, work)      # waits until the nodes agree again
    assert again.returncode == 0, again.stdout + again.stderr
    assert "every pod is in the cluster already" in again.stdout
    assert all(cluster_info(pod)["cluster_state"] == "ok" for pod in pods)
    assert cluster_view(pods) == before
    read_back(pods, values)


def test_a_pod_that_lost_nodes_conf_is_rejoined_by_hand(volumes_root, tmp_path):
    """A pod recreated without its volumes (the shm default) is a new node: the hook fails,
    and the README's recovery (FORGET, ADDSLOTSRANGE, MEET) makes the cluster whole."""
    docs = render("cluster")
    pods = []
    try:
        for ordinal in range(3):
            pods.append(start_pod(docs, ordinal, volumes_root / tmp_path.name))
        assert run_cluster_hook(docs, pods, tmp_path).returncode == 0
        old = pods[2]
        old_id = client(old).execute_command("CLUSTER", "MYID")
        ranges = [line.split()[8:] for line in client(old).execute_command("CLUSTER", "NODES").splitlines()
                  if line.startswith(old_id)][0]
        old.close()
        pods[2] = start_pod(docs, 2, volumes_root / tmp_path.name / "recreated")
        failed = run_cluster_hook(docs, pods, tmp_path, CLUSTER_WAIT_SECONDS="10")
        assert failed.returncode == 1, failed.stdout + failed.stderr
        for pod in pods[:2]:
            assert client(pod).execute_command("CLUSTER", "FORGET", old_id) == "OK"
        bounds = [bound for word in ranges for bound in (word.split("-") * 2)[:2]]
        client(pods[2]).execute_command("CLUSTER", "ADDSLOTSRANGE", *bounds)
        client(pods[2]).execute_command("CLUSTER", "MEET", "127.0.0.1", pods[0].port,
                                        pods[0].options["cluster-port"])
        healed = run_cluster_hook(docs, pods, tmp_path)
        assert healed.returncode == 0, healed.stdout + healed.stderr
        cluster_check(pods[0])
        write_and_read(pods, "healed", 200)
    finally:
        for pod in pods:
            pod.close()


def test_helm_test_uses_a_cluster_client(formed, tmp_path):
    (docs, pods, _, _, _) = formed
    env = {item["name"]: item["value"] for item in hook_pod(docs)["spec"]["containers"][0]["env"]}
    assert env["SMOKE_CLUSTER"] == "yes" and env["SMOKE_PORT"] == "6379"
    passed = run_helm_test(docs, tmp_path / "passes", pods[1].port)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "ok   default: logged in, PING, SET/GET/DEL cxlredis-helm-test:default:" in passed.stdout
    refused = run_helm_test(docs, tmp_path / "refused", pods[1].port,
                            replace={"users.conf": ("cluster", "klaster")})
    assert refused.returncode == 1
    assert "FAIL default: RedisClusterException" in refused.stdout, refused.stdout


def test_the_hook_fails_when_a_pod_never_answers(formed):
    (docs, pods, work, _, _) = formed
    silent = free_port()
    result = run_cluster_hook(docs, pods, work, CLUSTER_WAIT_SECONDS="3",
                              CLUSTER_NODES=f"127.0.0.1:{pods[0].port} 127.0.0.1:{silent}")
    assert result.returncode == 1
    assert f"form-cluster: 127.0.0.1:{silent} did not answer PING within 3s" in result.stderr


def test_the_hook_needs_the_password(formed):
    (docs, pods, work, _, _) = formed
    result = run_cluster_hook(docs, pods, work, CLUSTER_WAIT_SECONDS="3", REDISCLI_AUTH="wrong")
    assert result.returncode == 1
    assert "did not answer PING within 3s" in result.stderr and "WRONGPASS" in result.stderr


def test_the_hook_refuses_a_server_outside_cluster_mode(volumes_root, tmp_path):
    docs = render("defaults")
    server = ChartServer(server_config(docs, tmp_path)).start()
    try:
        result = run_cluster_hook(render("cluster", "--set", "cluster.shards=3"), [server] * 3,
                                  tmp_path, REDISCLI_AUTH=None)
        assert result.returncode == 1, result.stdout
        assert "gives no CLUSTER INFO: is it running with cluster-enabled yes?" in result.stderr
    finally:
        server.close()


@pytest.fixture
def scaling(volumes_root, tmp_path):
    """scaling() -> (the render for 4 shards, 4 pods): 3 formed by the hook for 3 shards,
    and pod 3 of the upgrade to 4 started."""
    pods = []

    def start():
        three, four = render("cluster"), render("cluster", "--set", "cluster.shards=4")
        for ordinal in range(3):
            pods.append(start_pod(three, ordinal, volumes_root / tmp_path.name))
        formed = run_cluster_hook(three, pods, tmp_path)
        assert formed.returncode == 0, formed.stdout + formed.stderr
        pods.append(start_pod(four, 3, volumes_root / tmp_path.name))
        return four, pods

    try:
        yield start
    finally:
        for pod in pods:
            pod.close()


@pytest.mark.slow       # the rebalance moves 4096 slots, one at a time (about 15 s)
def test_more_shards_take_their_share_of_the_slots(scaling, tmp_path):
    """The post-upgrade path: cluster.shards 3 -> 4 adds pod 3 and rebalances slots onto it,
    with the keys in them (the slots of a key-less cluster move the same way)."""
    (four, pods) = scaling()
    kept = write_and_read(pods[:3], "kept", 300)
    scaled = run_cluster_hook(four, pods, tmp_path)
    assert scaled.returncode == 0, scaled.stdout + scaled.stderr
    assert f"adding 127.0.0.1:{pods[3].port} to the cluster of" in scaled.stdout
    assert f"rebalancing the slots onto the pods that have none: 127.0.0.1:{pods[3].port}" in scaled.stdout
    cluster_check(pods[0])
    slots = [owned_slots(pod) for pod in pods]
    assert sum(slots) == 16384 and all(abs(count - 4096) <= 2 for count in slots), slots
    read_back(pods, kept)
    values = write_and_read(pods, "scaled")
    assert all(client(pod).dbsize() for pod in pods)
    before = cluster_view(pods)
    again = run_cluster_hook(four, pods, tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "every pod is in the cluster already" in again.stdout
    assert "rebalancing" not in again.stdout
    assert cluster_view(pods) == before
    read_back(pods, values)
