"""Helpers for the Helm chart tests (no conftest.py here: see tests/conftest.py).

The tests run a real ``helm`` binary, found as ``$HELM``, else where
``.ci/install-helm`` puts it (``$HELM_INSTALL_DIR``, default
``~/.cache/cxlredis/bin``), else on PATH. Without one they fail and say to
run ``.ci/install-helm``; kubernetes-validate (installed by the same script)
is required the same way.

``helm(*args, check=True) -> CompletedProcess``  runs helm (text output).
``render(scenario, *extra) -> list[dict]``  ``helm template`` of the chart with
    ``ci/<scenario>-values.yaml`` ("defaults": no values file) and extra
    arguments (``--set ...``), as parsed documents; cached per arguments.
``render_error(*extra) -> str``  helm's error output for values the chart refuses.
``one(docs, kind, name=None) -> dict``  the single manifest of that kind (and name).
``kinds(docs) -> [kind, ...]``  in rendered order.
``server_container(docs) / server_pod_spec(docs) / hook_pod(docs)`` (the helm test Pod)
``rendered_config(docs) -> str`` the ConfigMap's cxlredis.conf.
``users_conf(docs) -> str`` the generated Secret's users.conf.
``project(docs, volume, directory, external=None)``  lay out a projected volume
    as the kubelet would, from the rendered ConfigMaps and Secrets, or for
    Secrets made outside the chart from ``external`` ({name: {key: bytes}}).
``server_config(docs, tmp_path, external=None, node_root=None) -> Path``  the
    server's config volume projected into tmp_path/etc-cxlredis, with the mount
    path in cxlredis.conf pointing there, and the node directories the pod
    mounts (hostPath volumes but the arena's, whose path the tests replace as
    for every backing) made at ``node_directory(node_root or tmp_path, host
    path)``; returns the cxlredis.conf path.
``node_directory(tmp_path, host_path) -> Path``  the stand-in of a node directory.
``probe_socket(docs) -> str``  the unix socket the readiness probe connects to.
``load_config(docs, tmp_path, external=None) -> Config``  that file through the
    server's own loader (``cxlredis.cli.load_config``).
``pod_environment(docs, container, pod_name, pod_ip, external=None) -> dict``  a
    container's env as the kubelet gives it to one pod: the downward API's fields,
    Secret keys, and $(VAR) references expanded.
``run_probe(docs, server, kind="readinessProbe")``  the server container's probe
    command, run here against that server.
``run_helm_test(docs, tmp_path, port, external=None, replace=None)``  the helm test
    Pod's script, run here against 127.0.0.1:port; ``replace`` edits its files
    ({path: (old, new)}).
``ChartServer(conf, options, env=None)``  a ServerProcess started from a rendered
    config, up when ``cxlredis.healthcheck`` answers on its unix socket (so a
    required password or a TLS-only port is fine).
``KUBERNETES_VERSION``  the newest Kubernetes that kubernetes-validate knows.
"""
from __future__ import annotations

import base64
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT, ServerProcess
from cxlredis import cli, healthcheck
from cxlredis.config import Config

CHART = REPO_ROOT / "helm" / "cxlredis"
RELEASE = "cache"
NAMESPACE = "inference"
FULLNAME = f"{RELEASE}-cxlredis"
SCENARIOS = ["defaults"] + sorted(p.name[:-len("-values.yaml")]
                                  for p in (CHART / "ci").glob("*-values.yaml"))
INSTALL_HINT = "run .ci/install-helm (it installs helm and kubernetes-validate)"

try:
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version
except ImportError:          # reported by the tests that need it, with INSTALL_HINT
    kubernetes_validate = None
    KUBERNETES_VERSION = None
else:
    KUBERNETES_VERSION = latest_version()


def require_validator():
    if kubernetes_validate is None:
        pytest.fail(f"kubernetes-validate is not installed: {INSTALL_HINT}")


@functools.cache
def helm_binary() -> str | None:
    candidates = [os.environ.get("HELM"),
                  os.path.join(os.environ.get("HELM_INSTALL_DIR",
                                              os.path.expanduser("~/.cache/cxlredis/bin")), "helm"),
                  shutil.which("helm")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def helm(*args, check=True) -> subprocess.CompletedProcess:
    binary = helm_binary()
    if binary is None:
        pytest.fail(f"no helm binary ($HELM, ~/.cache/cxlredis/bin/helm or PATH): {INSTALL_HINT}")
    result = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=60)
    if check and result.returncode != 0:
        pytest.fail(f"helm {' '.join(map(str, args))} failed:\n{result.stderr}{result.stdout}")
    return result


def values_args(scenario: str) -> list[str]:
    return [] if scenario == "defaults" else ["-f", str(CHART / "ci" / f"{scenario}-values.yaml")]


def _template_args(extra) -> list[str]:
    version = ["--kube-version", KUBERNETES_VERSION] if KUBERNETES_VERSION else []
    return ["template", RELEASE, CHART, "--namespace", NAMESPACE, *version, *extra]


@functools.cache
def _render(args: tuple) -> tuple:
    output = helm(*_template_args(args)).stdout
    return tuple(doc for doc in yaml.safe_load_all(output) if doc)


def render(scenario: str, *extra) -> list[dict]:
    # A fresh copy each time: tests may change what they get.
    docs = _render(tuple(values_args(scenario)) + tuple(extra))
    return yaml.safe_load(yaml.safe_dump(list(docs)))


def render_error(*extra) -> str:
    result = helm(*_template_args(extra), check=False)
    assert result.returncode != 0, f"helm template {extra} succeeded; expected a refusal"
    return result.stderr


def kinds(docs) -> list[str]:
    return [doc["kind"] for doc in docs]


def one(docs, kind, name=None) -> dict:
    found = [doc for doc in docs if doc["kind"] == kind
             and (name is None or doc["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''} manifests in {kinds(docs)}"
    return found[0]


def server_pod_spec(docs) -> dict:
    return one(docs, "StatefulSet")["spec"]["template"]["spec"]


def server_container(docs) -> dict:
    (container,) = server_pod_spec(docs)["containers"]
    return container


def hook_pod(docs) -> dict:
    return one(docs, "Pod", f"{FULLNAME}-test")


def rendered_config(docs) -> str:
    return one(docs, "ConfigMap", FULLNAME)["data"]["cxlredis.conf"]


def config_lines(docs) -> dict:
    """cxlredis.conf as {option: argument text} (the loader tests check the semantics)."""
    lines = {}
    for line in rendered_config(docs).splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, rest = line.partition(" ")
            lines[name] = rest
    return lines


def users_conf(docs) -> str:
    return base64.b64decode(one(docs, "Secret", f"{FULLNAME}-auth")["data"]["users.conf"]).decode()


def _secret_data(docs, name, external) -> dict:
    rendered = [doc for doc in docs if doc["kind"] == "Secret" and doc["metadata"]["name"] == name]
    if rendered:
        return {key: base64.b64decode(value) for key, value in rendered[0]["data"].items()}
    assert external and name in external, f"Secret {name} is neither rendered nor given"
    return external[name]


def project(docs, volume: dict, directory: Path, external: dict | None = None) -> None:
    for source in volume["projected"]["sources"]:
        (kind, ref), = source.items()
        if kind == "configMap":
            data = {key: value.encode() for key, value in one(docs, "ConfigMap", ref["name"])["data"].items()}
        else:
            data = _secret_data(docs, ref["name"], external)
        for item in ref["items"]:
            target = directory / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data[item["key"]])


def node_directory(tmp_path: Path, host_path: str) -> Path:
    # Short: a unix socket's path has at most 107 bytes.
    return tmp_path / "node" / host_path.lstrip("/")


def probe_socket(docs) -> str:
    command = server_container(docs)["readinessProbe"]["exec"]["command"]
    return command[command.index("--unixsocket") + 1]


def server_config(docs, tmp_path: Path, external: dict | None = None,
                  node_root: Path | None = None) -> Path:
    container = server_container(docs)
    mount_paths = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in server_pod_spec(docs)["volumes"]}
    directory = tmp_path / "etc-cxlredis"
    project(docs, volumes["config"], directory, external)
    conf = directory / "cxlredis.conf"
    text = conf.read_text().replace(mount_paths["config"] + "/", f"{directory}/")
    for name, volume in volumes.items():
        if "hostPath" in volume and volume["hostPath"]["type"] == "Directory" and name != "arena":
            node = node_directory(node_root or tmp_path, volume["hostPath"]["path"])
            node.mkdir(parents=True, exist_ok=True)
            # The mount path as a whole argument, or as the directory of one.
            text = re.sub(rf"(?<= ){re.escape(mount_paths[name])}(?=/|$)", str(node), text, flags=re.M)
    conf.write_text(text)
    return conf


def load_config(docs, tmp_path: Path, external: dict | None = None) -> Config:
    return cli.load_config([str(server_config(docs, tmp_path, external))], environ={})


def pod_environment(docs, container: dict, pod_name: str, pod_ip: str,
                    external: dict | None = None) -> dict:
    fields = {"metadata.name": pod_name, "metadata.namespace": NAMESPACE, "status.podIP": pod_ip}
    env = {}
    for item in container.get("env", []):
        if "value" in item:
            # $(NAME) of a variable defined above, $$ for a dollar; anything else stays.
            env[item["name"]] = re.sub(
                r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
                item["value"])
        elif "fieldRef" in item["valueFrom"]:
            env[item["name"]] = fields[item["valueFrom"]["fieldRef"]["fieldPath"]]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = _secret_data(docs, ref["name"], external)[ref["key"]].decode()
    return env


def run_probe(docs, server, kind="readinessProbe") -> subprocess.CompletedProcess:
    command = server_container(docs)[kind]["exec"]["command"]
    command = [sys.executable if arg == "python" else arg for arg in command]
    command = [server.unixsocket if arg == probe_socket(docs) else arg for arg in command]
    return subprocess.run(command, capture_output=True, text=True, timeout=30,
                          env={"PYTHONPATH": str(REPO_ROOT)})


def run_helm_test(docs, tmp_path, port, external=None, replace=None) -> subprocess.CompletedProcess:
    """The helm test Pod's container, run here: its projected volume laid out under
    tmp_path, its environment with the paths moved there and the server's address."""
    pod = hook_pod(docs)
    (container,) = pod["spec"]["containers"]
    env = {item["name"]: item["value"] for item in container["env"]}
    directory = tmp_path / "etc-cxlredis-test"
    for volume in pod["spec"].get("volumes", []):
        (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
        project(docs, volume, directory, external)
        env = {name: value.replace(mount["mountPath"] + "/", f"{directory}/")
               for name, value in env.items()}
    for path, (old, new) in (replace or {}).items():
        target = directory / path
        target.write_text(target.read_text().replace(old, new))
    env.update(SMOKE_HOST="127.0.0.1", SMOKE_PORT=str(port), PYTHONPATH=str(REPO_ROOT))
    assert container["command"][0] == "python"
    return subprocess.run([sys.executable, *container["command"][1:], *container["args"]],
                          capture_output=True, text=True, timeout=60, env=env)


class ChartServer(ServerProcess):
    """cxlredis on a rendered config; up when the chart's probe command would pass."""

    def __init__(self, conf, options=None, env=None):
        super().__init__("cxlredis", options, conf=conf, env=env)

    def _answers_ping(self) -> bool:
        try:
            healthcheck.check(self.unixsocket, timeout=1.0)
        except healthcheck.Unhealthy:
            return False
        return True
