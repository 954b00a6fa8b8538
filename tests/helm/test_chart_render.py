"""The chart under a real helm: `helm lint --strict` and `helm template` for every
scenario in helm/cxlredis/ci/ (and the defaults), every manifest validated
against the newest Kubernetes schemas kubernetes-validate ships (strict: no
unknown fields), and the fields that make each scenario work."""
import copy
import json
import os
import posixpath
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from cxlredis.config import parse_memory
from cxlredis.tenant_arenas import size_for
from helm_helpers import (CHART, FULLNAME, KUBERNETES_VERSION, NAMESPACE, RELEASE, SCENARIOS,
                          config_lines, helm, hook_pod, kinds, load_config, one, probe_socket,
                          render, render_error, require_validator, server_container,
                          server_pod_spec, users_conf, values_args)

# Custom resources whose schemas kubernetes-validate does not ship (checked by hand below).
CUSTOM_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}
SELECTOR = {"app.kubernetes.io/name": "cxlredis", "app.kubernetes.io/instance": RELEASE}
PROBE_COMMAND = ["python", "-m", "cxlredis.healthcheck", "--unixsocket"]
MiB = 1 << 20


def mounts(container) -> dict:
    return {m["name"]: m for m in container["volumeMounts"]}


def volumes(docs) -> dict:
    return {v["name"]: v for v in server_pod_spec(docs)["volumes"]}


def projected_paths(volume) -> dict:
    """{path in the volume: (kind, object name, key)} of a projected volume."""
    paths = {}
    for source in volume["projected"]["sources"]:
        (kind, ref), = source.items()
        for item in ref["items"]:
            paths[item["path"]] = (kind, ref["name"], item["key"])
    return paths


def capabilities_added(container) -> list:
    return container["securityContext"].get("capabilities", {}).get("add", [])


# ---------------------------------------------------------------- helm itself

def test_helm_is_a_real_helm():
    version = helm("version", "--template", "{{.Version}}").stdout
    assert re.fullmatch(r"v[34]\.\d+\.\d+", version), version


def test_without_helm_the_tests_fail_and_say_how_to_install_it(tmp_path):
    env = {name: value for name, value in os.environ.items() if name != "HELM"}
    env.update(HELM_INSTALL_DIR=str(tmp_path), PATH=os.path.dirname(sys.executable))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"{__file__}::test_helm_is_a_real_helm"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout
    assert "no helm binary" in result.stdout and "run .ci/install-helm" in result.stdout


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_lint_strict(scenario):
    result = helm("lint", "--strict", CHART, *values_args(scenario), "--namespace", NAMESPACE,
                  "--kube-version", KUBERNETES_VERSION or "1.33.0")
    assert "0 chart(s) failed" in result.stdout, result.stdout
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout, result.stdout


def test_scenarios_cover_every_backing_and_feature():
    assert {"shm", "hugepages", "devdax", "devdax-hostpath", "file", "file-hostpath", "tls",
            "tenants", "metrics", "existing-secret", "colocated"} <= set(SCENARIOS)


# ---------------------------------------------------------------- Kubernetes schemas

@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_manifest_is_valid_kubernetes(scenario):
    require_validator()
    import kubernetes_validate
    docs = render(scenario)
    for doc in docs:
        where = f"{doc['kind']}/{doc['metadata']['name']}"
        if (doc["apiVersion"], doc["kind"]) in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{scenario}: {where} is invalid for Kubernetes {KUBERNETES_VERSION} at "
                        f"{'.'.join(map(str, error.path))}: {error.message}")
        assert doc["metadata"]["namespace"] == NAMESPACE, where
        assert doc["metadata"]["labels"]["app.kubernetes.io/instance"] == RELEASE, where


def test_kubernetes_version_is_current():
    require_validator()
    major, minor = map(int, KUBERNETES_VERSION.split(".")[:2])
    assert (major, minor) >= (1, 33)


def test_validation_catches_what_kubernetes_would_refuse():
    require_validator()
    import kubernetes_validate
    statefulset = one(render("defaults"), "StatefulSet")
    unknown_field = copy.deepcopy(statefulset)
    unknown_field["spec"]["template"]["spec"]["containers"][0]["memoryLimit"] = "1Gi"
    wrong_type = copy.deepcopy(statefulset)
    wrong_type["spec"]["replicas"] = "two"
    for broken in (unknown_field, wrong_type):
        with pytest.raises(kubernetes_validate.ValidationError):
            kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)


# ---------------------------------------------------------------- what every scenario has

@pytest.mark.parametrize("scenario", SCENARIOS)
def test_pod_security(scenario):
    docs = render(scenario)
    pod = server_pod_spec(docs)
    container = server_container(docs)
    context = container["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001 != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["runAsNonRoot"] is True
    assert context["capabilities"]["drop"] == ["ALL"]
    expected_added = ["IPC_LOCK"] if scenario == "hugepages" else []     # the one asking for it
    assert capabilities_added(container) == expected_added
    privileged = scenario == "devdax-hostpath"
    assert context.get("privileged", False) is privileged
    assert context["allowPrivilegeEscalation"] is privileged
    # The hook runs the same image, unprivileged too.
    test_container = hook_pod(docs)["spec"]["containers"][0]
    assert test_container["image"] == container["image"]
    assert test_container["securityContext"]["readOnlyRootFilesystem"] is True
    assert test_container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_probes_and_graceful_drain(scenario):
    docs = render(scenario)
    pod = server_pod_spec(docs)
    container = server_container(docs)
    socket = "/run/cxlredis/cxlredis.sock" if scenario == "colocated" else "/tmp/cxlredis.sock"
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = container[kind]
        assert probe["exec"]["command"][:5] == PROBE_COMMAND + [socket], kind
        assert probe["timeoutSeconds"] >= 1 and probe["failureThreshold"] >= 1
    # The probes reach the server on the socket its config opens.
    assert config_lines(docs)["unixsocket"] == probe_socket(docs) == socket
    assert container["startupProbe"]["failureThreshold"] * container["startupProbe"]["periodSeconds"] >= 300
    sleep = container["lifecycle"]["preStop"]["exec"]["command"]
    assert sleep[0] == "sleep" and int(sleep[1]) > 0
    assert pod["terminationGracePeriodSeconds"] > int(sleep[1]) + 10


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_volumes_make_every_written_path_writable(scenario):
    """Read-only root: the config is a read-only projection; dir, /tmp and the arena are volumes."""
    docs = render(scenario)
    container = server_container(docs)
    statefulset = one(docs, "StatefulSet")
    claims = {c["metadata"]["name"] for c in statefulset["spec"].get("volumeClaimTemplates", [])}
    by_name = mounts(container)
    assert set(volumes(docs)) | claims >= set(by_name), "a mount without a volume"
    assert by_name["config"]["mountPath"] == "/etc/cxlredis" and by_name["config"]["readOnly"]
    assert container["args"] == ["/etc/cxlredis/cxlredis.conf"]
    assert container["command"] == ["cxlredis-server"]
    assert by_name["data"]["mountPath"] == container["workingDir"] == "/var/lib/cxlredis"
    assert by_name["tmp"]["mountPath"] == "/tmp"
    arena_path = config_lines(docs)["arena-path"]
    if scenario == "devdax":      # the device plugin places the device: no volume
        assert "arena" not in by_name and arena_path == "/dev/dax0.0"
    elif scenario == "devdax-hostpath":
        assert by_name["arena"]["mountPath"] == arena_path == "/dev/dax1.0"
    else:
        assert posixpath.dirname(arena_path) == by_name["arena"]["mountPath"]
    config = projected_paths(volumes(docs)["config"])
    assert config["cxlredis.conf"] == ("configMap", FULLNAME, "cxlredis.conf")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_services_select_the_pods(scenario):
    docs = render(scenario)
    statefulset = one(docs, "StatefulSet")
    pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
    assert statefulset["spec"]["selector"]["matchLabels"] == SELECTOR
    assert SELECTOR.items() <= pod_labels.items()
    container_ports = {p["name"]: p["containerPort"] for p in server_container(docs)["ports"]}
    client = one(docs, "Service", FULLNAME)
    headless = one(docs, "Service", f"{FULLNAME}-headless")
    assert statefulset["spec"]["serviceName"] == headless["metadata"]["name"]
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"]
    for service in (client, headless):
        assert service["spec"]["selector"] == SELECTOR
        for port in service["spec"]["ports"]:
            assert container_ports[port["targetPort"]] == port["port"]
    lines = config_lines(docs)
    expected = {}
    if lines["port"] != "0":
        expected["redis"] = int(lines["port"])
    if "tls-port" in lines:
        expected["rediss"] = int(lines["tls-port"])
    assert {p["name"]: p["port"] for p in client["spec"]["ports"]} == expected
    assert lines["bind"] == '"0.0.0.0"'


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scheduling(scenario):
    pod = server_pod_spec(render(scenario))
    spread = pod["topologySpreadConstraints"]
    assert spread[0]["topologyKey"] == "topology.kubernetes.io/zone"
    assert spread[0]["labelSelector"]["matchLabels"] == SELECTOR
    anti = pod["affinity"]["podAntiAffinity"]
    if scenario in ("shm", "devdax-hostpath", "colocated"):      # replicaCount 2, one per node
        (term,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    else:
        (preferred,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
        term = preferred["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == SELECTOR
    if scenario in ("shm", "devdax", "devdax-hostpath"):
        assert pod["nodeSelector"] == {"example.com/cxl-memory": "true"}
    if scenario in ("shm", "devdax"):
        assert pod["tolerations"] == [{"key": "example.com/cxl-memory", "operator": "Exists",
                                       "effect": "NoSchedule"}]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_helm_test_hook(scenario):
    docs = render(scenario)
    pod = hook_pod(docs)
    annotations = pod["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "test"
    assert "hook-succeeded" in annotations["helm.sh/hook-delete-policy"]
    assert pod["metadata"]["labels"][f"{FULLNAME}-client"] == "true"     # passes the NetworkPolicy
    assert pod["spec"]["restartPolicy"] == "Never"
    container = pod["spec"]["containers"][0]
    assert container["command"] == ["python", "-c"]
    assert container["args"][0] == (CHART / "files" / "smoke-test.py").read_text()
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["SMOKE_HOST"] == f"{FULLNAME}.{NAMESPACE}.svc"
    client_ports = {p["name"]: p["port"] for p in one(docs, "Service", FULLNAME)["spec"]["ports"]}
    assert int(env["SMOKE_PORT"]) == client_ports["rediss" if "SMOKE_TLS" in env else "redis"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_notes_render(scenario):
    result = helm("install", RELEASE, CHART, *values_args(scenario), "--namespace", NAMESPACE,
                  "--dry-run=client")
    notes = result.stdout.split("NOTES:", 1)[1]
    assert f"helm test {RELEASE} -n {NAMESPACE}" in notes
    warned = "WARNING: no password and no ACL users" in notes
    assert warned == (scenario in ("defaults", "hugepages", "devdax", "devdax-hostpath",
                                   "file-hostpath", "metrics", "disktier"))


# ---------------------------------------------------------------- each scenario's own fields

def test_defaults():
    docs = render("defaults")
    assert sorted(kinds(docs)) == ["ConfigMap", "Pod", "Service", "Service", "StatefulSet"]
    arena = volumes(docs)["arena"]["emptyDir"]
    assert arena == {"medium": "Memory", "sizeLimit": "1Gi"}
    resources = server_container(docs)["resources"]
    # tmpfs pages are charged to the container: arena (1024 Mi) + overhead (512 Mi).
    assert resources["limits"] == {"memory": "1536Mi"}
    assert resources["requests"] == {"cpu": "500m", "memory": "1536Mi"}
    assert "include" not in config_lines(docs)
    assert one(docs, "StatefulSet")["spec"]["replicas"] == 1


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_debug_and_protected_configs_keep_redis_secure_defaults(scenario):
    lines = config_lines(render(scenario))
    assert (lines["enable-debug-command"], lines["enable-protected-configs"]) == ("no", "no")


def test_debug_and_protected_configs_can_be_allowed_locally(tmp_path):
    docs = render("defaults", "--set", "config.enable-debug-command=local",
                  "--set", "config.enable-protected-configs=yes")
    loaded = load_config(docs, tmp_path)
    assert (loaded["enable-debug-command"], loaded["enable-protected-configs"]) == ("local", "yes")


def test_shm():
    docs = render("shm")
    assert volumes(docs)["arena"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "2Gi"}
    assert server_container(docs)["resources"]["limits"]["memory"] == f"{2048 + 256}Mi"
    assert one(docs, "StatefulSet")["spec"]["replicas"] == 2
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SELECTOR}}
    policy = one(docs, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == SELECTOR
    assert policy["policyTypes"] == ["Ingress"]
    (clients,) = policy["ingress"]
    assert clients["ports"] == [{"port": 6379, "protocol": "TCP"}]
    assert clients["from"][0] == {"podSelector": {"matchLabels": {f"{FULLNAME}-client": "true"}}}
    assert clients["from"][1]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "inference"}
    assert config_lines(docs)["include"] == "users.conf"
    assert projected_paths(volumes(docs)["config"])["users.conf"] == (
        "secret", f"{FULLNAME}-auth", "users.conf")


def test_hugepages():
    docs = render("hugepages")
    container = server_container(docs)
    assert volumes(docs)["arena"]["emptyDir"] == {"medium": "HugePages-2Mi"}
    resources = container["resources"]
    assert resources["requests"]["hugepages-2Mi"] == resources["limits"]["hugepages-2Mi"] == "4Gi"
    # Huge pages are their own resource: memory is the process overhead alone.
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == "512Mi"
    assert resources["requests"]["cpu"] == "2"
    lines = config_lines(docs)
    assert (lines["arena-hugepages"], lines["arena-prefault"], lines["arena-numa-node"]) == (
        "yes", "yes", "1")


def test_gigantic_hugepages():
    docs = render("hugepages", "--set", "arena.hugepages.pageSize=1Gi", "--set", "ipcLock=false")
    resources = server_container(docs)["resources"]
    assert resources["limits"]["hugepages-1Gi"] == "4Gi"
    assert "hugepages-2Mi" not in resources["limits"]
    assert volumes(docs)["arena"]["emptyDir"]["medium"] == "HugePages-1Gi"
    assert capabilities_added(server_container(docs)) == []


def test_devdax_from_a_device_plugin():
    docs = render("devdax")
    resources = server_container(docs)["resources"]
    assert resources["requests"]["example.com/cxl-dax"] == resources["limits"]["example.com/cxl-dax"] == "1"
    assert resources["limits"]["memory"] == "512Mi"          # the device is not container memory
    assert "arena" not in volumes(docs)
    assert config_lines(docs)["arena-numa-node"] == "2"


def test_devdax_from_a_host_path():
    docs = render("devdax-hostpath")
    assert volumes(docs)["arena"]["hostPath"] == {"path": "/dev/dax1.0", "type": "CharDevice"}
    assert server_pod_spec(docs)["securityContext"]["supplementalGroups"] == [993]
    assert not any(name.startswith(("hugepages-", "example.com"))
                   for name in server_container(docs)["resources"]["limits"])


def test_file_on_claims():
    docs = render("file")
    statefulset = one(docs, "StatefulSet")
    claims = {c["metadata"]["name"]: c["spec"] for c in statefulset["spec"]["volumeClaimTemplates"]}
    assert claims["arena"]["storageClassName"] == "local-dax"
    assert claims["arena"]["resources"]["requests"]["storage"] == "9Gi"
    assert claims["data"]["storageClassName"] == "standard"
    assert claims["data"]["resources"]["requests"]["storage"] == "2Gi"
    assert {"arena", "data"}.isdisjoint(volumes(docs))     # the claims, not emptyDirs
    lines = config_lines(docs)
    assert lines["audit-log-file"] == "audit.log"          # in dir: the data claim


def test_disk_tier_on_a_claim():
    docs = render("disktier")
    claims = {c["metadata"]["name"]: c["spec"] for c in one(docs, "StatefulSet")["spec"]["volumeClaimTemplates"]}
    assert claims["disk-tier"]["storageClassName"] == "local-nvme"
    assert claims["disk-tier"]["resources"]["requests"]["storage"] == "16Gi"
    assert mounts(server_container(docs))["disk-tier"]["mountPath"] == "/var/lib/cxlredis-tier"
    lines = config_lines(docs)
    assert lines["disk-tier-dir"] == "/var/lib/cxlredis-tier"
    assert lines["disk-tier-size"] == "12288mb"        # three quarters of the claim
    assert lines["disk-tier-promote"] == "no"
    assert lines["disk-tier-write-buffer"] == "128mb"
    # the writer's buffer is the container's memory too: arena 1024 Mi + 512 Mi + 128 Mi
    assert server_container(docs)["resources"]["limits"]["memory"] == "1664Mi"
    assert "disk-tier-dir" not in config_lines(render("defaults"))


def test_file_on_a_host_path():
    docs = render("file-hostpath")
    assert volumes(docs)["arena"]["hostPath"] == {"path": "/mnt/pmem0/cxlredis", "type": "Directory"}
    assert "volumeClaimTemplates" not in one(docs, "StatefulSet")["spec"]


def test_tls_only():
    docs = render("tls")
    lines = config_lines(docs)
    assert lines["port"] == "0" and lines["tls-port"] == "6380"
    assert lines["tls-auth-clients"] == "yes"
    # Each file the config names is where the projected Secret puts it.
    config = projected_paths(volumes(docs)["config"])
    for option, key in (("tls-cert-file", "tls.crt"), ("tls-key-file", "tls.key"),
                        ("tls-ca-cert-file", "ca.crt")):
        path = posixpath.relpath(lines[option], "/etc/cxlredis")
        assert config[path] == ("secret", "cxlredis-tls", key), option
    assert [p["name"] for p in server_container(docs)["ports"]] == ["rediss"]
    test_container = hook_pod(docs)["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in test_container["env"]}
    assert env["SMOKE_TLS"] == "yes" and env["SMOKE_PORT"] == "6380"
    credentials = projected_paths(hook_pod(docs)["spec"]["volumes"][0])
    assert credentials["tls/ca.crt"] == ("secret", "cxlredis-tls", "ca.crt")
    assert credentials["tls/client.crt"] == ("secret", "cxlredis-test-client-tls", "tls.crt")
    for name in ("SMOKE_TLS_CA", "SMOKE_TLS_CERT", "SMOKE_TLS_KEY", "SMOKE_USERS_FILE"):
        assert posixpath.relpath(env[name], "/etc/cxlredis-test") in credentials, name


def test_tenants_secret_and_restart_on_change():
    docs = render("tenants")
    secret = one(docs, "Secret")
    assert secret["metadata"]["name"] == f"{FULLNAME}-auth" and secret["type"] == "Opaque"
    annotations = one(docs, "StatefulSet")["spec"]["template"]["metadata"]["annotations"]
    changed = render("tenants", "--set", "tenants[1].quota=1gb")
    changed_annotations = one(changed, "StatefulSet")["spec"]["template"]["metadata"]["annotations"]
    assert changed_annotations["checksum/auth"] != annotations["checksum/auth"]
    assert changed_annotations["checksum/config"] == annotations["checksum/config"]
    env = {e["name"]: e["value"] for e in hook_pod(docs)["spec"]["containers"][0]["env"]}
    assert env["SMOKE_USERS_FILE"] == "/etc/cxlredis-test/users.conf"
    tenant_lines = [line for line in users_conf(docs).splitlines() if line.startswith("tenant ")]
    assert tenant_lines == [
        "tenant common users publisher",
        "tenant team-a quota 512mb disk no policy allkeys-lru users alice shared-read common",
        "tenant team-b quota 256mb min 128mb priority 2 users bob dashboard shared-read common "
        "shared-write common"]


def test_existing_secret():
    docs = render("existing-secret")
    assert "Secret" not in kinds(docs)
    assert projected_paths(volumes(docs)["config"])["users.conf"] == (
        "secret", "cxlredis-users", "users.conf")
    assert projected_paths(hook_pod(docs)["spec"]["volumes"][0])["users.conf"] == (
        "secret", "cxlredis-users", "users.conf")
    annotations = one(docs, "StatefulSet")["spec"]["template"]["metadata"]["annotations"]
    assert "checksum/auth" not in annotations


def test_metrics():
    docs = render("metrics")
    lines = config_lines(docs)
    assert (lines["metrics-port"], lines["metrics-bind"]) == ("9121", "0.0.0.0")
    metrics = one(docs, "Service", f"{FULLNAME}-metrics")
    assert metrics["spec"]["selector"] == SELECTOR
    assert metrics["spec"]["ports"] == [{"name": "metrics", "port": 9121, "targetPort": "metrics",
                                         "protocol": "TCP"}]
    assert metrics["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert {"name": "metrics", "containerPort": 9121, "protocol": "TCP"} in server_container(docs)["ports"]
    monitor = one(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    selected = monitor["spec"]["selector"]["matchLabels"]
    services = [s for s in docs if s["kind"] == "Service"
                and selected.items() <= s["metadata"]["labels"].items()]
    assert services == [metrics]            # the metrics Service only
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint == {"port": "metrics", "path": "/metrics", "interval": "15s",
                        "scrapeTimeout": "5s"}
    dashboard = one(docs, "ConfigMap", f"{FULLNAME}-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["annotations"] == {"grafana_folder": "cxlredis"}
    assert json.loads(dashboard["data"]["cxlredis.json"]) == json.loads(
        (CHART / "dashboards" / "cxlredis.json").read_text())
    (clients, scrapers) = one(docs, "NetworkPolicy")["spec"]["ingress"]
    assert scrapers["ports"] == [{"port": 9121, "protocol": "TCP"}]
    assert scrapers["from"] == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}]


def test_colocated():
    """The node directory is the server's socket and tenant-arena-dir, one server per node."""
    docs = render("colocated")
    pod = server_pod_spec(docs)
    assert volumes(docs)["colocated"] == {"name": "colocated", "hostPath": {
        "path": "/run/cxlredis", "type": "Directory"}}
    assert mounts(server_container(docs))["colocated"] == {"name": "colocated",
                                                           "mountPath": "/run/cxlredis"}
    lines = config_lines(docs)
    assert (lines["unixsocket"], lines["unixsocketperm"], lines["tenant-arena-dir"]) == (
        "/run/cxlredis/cxlredis.sock", "770", "/run/cxlredis")
    tenant_lines = [line for line in users_conf(docs).splitlines() if line.startswith("tenant ")]
    assert tenant_lines == [
        "tenant team-c quota 64mb arena own users carol",
        "tenant team-d quota 32mb arena own arena-group 3001 users dave",
        "tenant team-e quota 16mb arena own arena-group 3002 arena-write yes users erin"]
    # The server must belong to a group to give a tenant's file to it (no CAP_CHOWN).
    assert pod["securityContext"]["supplementalGroups"] == [3001, 3002]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert one(docs, "StatefulSet")["spec"]["replicas"] == 2
    # The tenants' arena files on the node's tmpfs are charged to the server's container,
    # sized as the server sizes them; the shm arena and the overhead as without colocated.
    tenant_files = (size_for(64 * MiB) + size_for(32 * MiB) + size_for(16 * MiB)) // MiB
    resources = server_container(docs)["resources"]
    expected = f"{1024 + 512 + tenant_files}Mi"
    assert resources["limits"]["memory"] == resources["requests"]["memory"] == expected
    on_disk = render("colocated", "--set", "colocated.memoryBacked=false")
    assert server_container(on_disk)["resources"]["limits"]["memory"] == f"{1024 + 512}Mi"


@pytest.mark.parametrize("quota", ["3gb", "1000000k", "7340033", "2g", "5m", "1mb"])
def test_colocated_memory_follows_the_servers_arena_sizes(quota):
    """Redis's units (k = 1000, kb = 1024) and the server's rounding, for quotas of every form."""
    docs = render("colocated", "--set-string", f"tenants[1].quota={quota}")
    expected = 1024 + 512 + (size_for(64 * MiB) + size_for(parse_memory(quota))
                             + size_for(16 * MiB)) // MiB
    assert server_container(docs)["resources"]["limits"]["memory"] == f"{expected}Mi"


def test_arena_write_is_rendered_only_when_true():
    """`arena-write yes` in the word order the server writes back (after arena-group, before
    users); an explicit false is the default (the group maps read-only), even on a shared tenant."""
    def tenant_lines(docs):
        return [line for line in users_conf(docs).splitlines() if line.startswith("tenant ")]

    docs = render("colocated", "--set", "tenants[1].arenaWrite=true",
                  "--set", "tenants[2].policy=allkeys-lru")
    assert tenant_lines(docs)[1:] == [
        "tenant team-d quota 32mb arena own arena-group 3001 arena-write yes users dave",
        "tenant team-e quota 16mb policy allkeys-lru arena own arena-group 3002 arena-write yes users erin"]
    docs = render("colocated", "--set", "tenants[2].arenaWrite=false")
    assert tenant_lines(docs)[2] == "tenant team-e quota 16mb arena own arena-group 3002 users erin"
    docs = render("tenants", "--set", "tenants[1].arenaWrite=false")
    assert not any("arena" in line for line in tenant_lines(docs))


def test_arena_groups_join_the_pods_supplemental_groups():
    docs = render("devdax-hostpath", "--set", "colocated.enabled=true",
                  "--set", "auth.users[0].name=u", "--set", "auth.users[0].rules=nopass",
                  "--set", "tenants[0].name=t", "--set", "tenants[0].quota=1gb",
                  "--set", "tenants[0].arena=own", "--set", "tenants[0].arenaGroup=993",
                  "--set", "tenants[1].name=s", "--set", "tenants[1].quota=1gb",
                  "--set", "tenants[1].arena=own", "--set", "tenants[1].arenaGroup=4000")
    assert server_pod_spec(docs)["securityContext"]["supplementalGroups"] == [993, 4000]
    # A device arena has no directory for tenant arenas beside it: the node directory is theirs.
    assert config_lines(docs)["tenant-arena-dir"] == "/run/cxlredis"


def test_colocated_notes_show_how_inference_pods_mount_it():
    result = helm("install", RELEASE, CHART, *values_args("colocated"), "--namespace", NAMESPACE,
                  "--dry-run=client")
    notes = result.stdout.split("NOTES:", 1)[1]
    assert "hostPath: {path: /run/cxlredis, type: Directory}" in notes
    assert "- {name: cxlredis, mountPath: /run/cxlredis}" in notes
    assert "supplementalGroups: [10001, <arenaGroup>]" in notes
    assert '"unix://<user>:<password>@/run/cxlredis/cxlredis.sock"' in notes
    assert "team-c (users carol): cxlredis.tenant-team-c.arena, mode 0600" in notes
    assert ("team-d (users dave): cxlredis.tenant-team-d.arena, mode 0640, group 3001: "
            "its pods map it read-only") in notes
    assert ("team-e (users erin): cxlredis.tenant-team-e.arena, mode 0660, group 3002: "
            "its pods map it read-write") in notes
    assert re.search(r"never run them as\s+root or as the\s+server's UID \(10001\)", notes)
    assert re.search(r"arenaWrite lets the group write\s+the file as well", notes)
    plain = helm("install", RELEASE, CHART, *values_args("tenants"), "--namespace", NAMESPACE,
                 "--dry-run=client").stdout
    assert "Co-located access" not in plain


def test_optional_objects_are_off_by_default():
    docs = render("defaults")
    for kind in ("PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "Secret"):
        assert kind not in kinds(docs)
    assert f"{FULLNAME}-metrics" not in [d["metadata"]["name"] for d in docs]
    assert "metrics-port" not in config_lines(docs)


def test_pdb_min_available():
    docs = render("defaults", "--set", "podDisruptionBudget.enabled=true",
                  "--set", "podDisruptionBudget.minAvailable=50%")
    assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == "50%"


# ---------------------------------------------------------------- what the chart refuses

# A tenant "t" with a user, for the tenant refusals.
OWN = ["--set", "auth.users[0].name=u", "--set", "auth.users[0].rules=nopass",
       "--set", "tenants[0].name=t", "--set", "tenants[0].users[0]=u"]

@pytest.mark.parametrize("values, message", [
    (["--set", "config.port=7000"], "config.port is set by the chart; use port"),
    (["--set", "config.arena-size=2gb"], "config.arena-size is set by the chart; use arena.size"),
    (["--set", "config.disk-tier-dir=/x"], "config.disk-tier-dir is set by the chart; use diskTier.enabled"),
    (["--set", "diskTier.size=16G"], "/diskTier/size': '16G' does not match"),
    (["--set", "config.requirepass=x"], "use auth.password"),
    (["--set", "auth.existingSecret=s", "--set", "auth.password=x"], "leave auth.password"),
    (["--set", "tls.enabled=true"], "tls.enabled needs tls.existingSecret"),
    (["--set", "tls.disablePlainPort=true"], "leaves no port"),
    (["--set", "arena.backing=devdax"], "exactly one of arena.devdax.resourceName"),
    (["--set", "arena.backing=hugepages", "--set", "arena.size=1025Mi"],
     "not a whole number of 2Mi huge pages"),
    (["--set", "arena.backing=hugepages", "--set", "arena.size=1536Mi",
      "--set", "arena.hugepages.pageSize=1Gi"], "not a whole number of 1Gi huge pages"),
    (["--set", "arena.backing=file", "--set", "arena.file.hostPath=/mnt/x",
      "--set", "replicaCount=2"], "set podAntiAffinity: hard"),
    (["--set", "tenants[0].name=t", "--set", "tenants[0].users[0]=ghost"],
     'user "ghost" is not in auth.users'),
    (["--set", "auth.users[0].name=a", "--set", "auth.users[0].rules=nopass",
      "--set", "auth.users[1].name=a", "--set", "auth.users[1].rules=nopass"], "declared twice"),
    (["--set", "colocated.enabled=true", "--set", "replicaCount=2"],
     "colocated.hostPath (the node's unix socket and tenant arenas) is one per node: with "
     "replicaCount > 1 set podAntiAffinity: hard"),
    (["--set", "config.tenant-arena-dir=/x"],
     "config.tenant-arena-dir is set by the chart; use colocated.hostPath"),
    (["--set", "config.unixsocketperm=777"], "use colocated.socketPerm"),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arena=own"],
     """tenant "t" needs a quota to have arena own: it sizes the tenant's arena file"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arena=own",
      "--set", "tenants[0].quota=0mb"], """tenant "t" needs a quota to have arena own"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arenaGroup=3001"],
     """tenant "t" has arena shared: arenaGroup is for a tenant with arena own"""),
    ([*OWN, "--set", "tenants[0].arena=own", "--set", "tenants[0].quota=1gb"],
     """tenant "t" has arena own, which needs colocated.enabled"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arena=own",
      "--set", "tenants[0].quota=1gb", "--set", "tenants[0].arenaWrite=true"],
     """tenant "t": arenaWrite needs arenaGroup (without a group only the server's own user may """
     """open the file)"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arena=own",
      "--set", "tenants[0].quota=1gb", "--set-string", "tenants[0].arenaGroup=",
      "--set", "tenants[0].arenaWrite=true"], """tenant "t": arenaWrite needs arenaGroup"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arenaWrite=true"],
     """tenant "t" has arena shared: arenaWrite is for a tenant with arena own"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arena=shared",
      "--set", "tenants[0].quota=1gb", "--set", "tenants[0].arenaWrite=true"],
     """tenant "t" has arena shared: arenaWrite is for a tenant with arena own"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arena=own",
      "--set", "tenants[0].quota=1gb", "--set", "tenants[1].name=c",
      "--set", "tenants[0].sharedRead[0]=c"],
     """tenant "t" has arena own: shared namespaces are in the server's arena, so it can be granted none"""),
    (["--set", "colocated.enabled=true", *OWN, "--set", "tenants[0].arena=own",
      "--set", "tenants[0].quota=1gb", "--set", "tenants[1].name=c",
      "--set", "tenants[1].sharedWrite[0]=t"],
     'tenant "t" has arena own: its namespace cannot be shared with tenant "c"'),
    # values.schema.json
    (["--set", "arena.backing=ram"], "/arena/backing"),
    (["--set", "arena.size=1GB"], "/arena/size"),
    (["--set", "auth.users[0].name=default", "--set", "auth.users[0].rules=nopass"],
     "/auth/users/0/name"),
    (["--set", "tenants[0].name=t", "--set", "tenants[0].policy=lru"], "/tenants/0/policy"),
    (["--set", "tls.authClients=maybe"], "/tls/authClients"),
    (["--set", "replicas=3"], "additional properties 'replicas' not allowed"),
    (["--set", "arena.sizeLimit=3"], "additional properties 'sizeLimit' not allowed"),
    ([*OWN, "--set", "tenants[0].arena=private"], "/tenants/0/arena"),
    ([*OWN, "--set", "tenants[0].arenaGroup=none"], "/tenants/0/arenaGroup"),
    ([*OWN, "--set", "tenants[0].arenaGroup=0"], "/tenants/0/arenaGroup"),
    ([*OWN, "--set", "tenants[0].arenaGroup=team c"], "/tenants/0/arenaGroup"),
    ([*OWN, "--set-string", "tenants[0].arenaWrite=true"], "/tenants/0/arenaWrite"),
    ([*OWN, "--set", "tenants[0].arenaWrite=yes"], "/tenants/0/arenaWrite"),
    (["--set-string", "colocated.socketPerm=0770"], "/colocated/socketPerm"),
    (["--set", "colocated.socketPerm=770"], "/colocated/socketPerm"),       # a number, not octal text
    (["--set", "colocated.hostPath=run/cxlredis"], "/colocated/hostPath"),
    (["--set", f"colocated.mountPath=/{'m' * 93}"], "/colocated/mountPath"),   # the socket path: 107 at most
])
def test_chart_refuses(values, message):
    assert message in render_error(*values)
