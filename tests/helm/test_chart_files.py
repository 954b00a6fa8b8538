"""The chart's files that helm does not check: every value documented and typed
in values.schema.json (and nothing typed that does not exist), the Grafana
dashboard against the exporter's metric names, and the Dockerfile against
what the chart expects of the image."""
import json
import re
import shlex

import yaml

from conftest import REPO_ROOT
from helm_helpers import CHART

VALUES_TEXT = (CHART / "values.yaml").read_text()
VALUES = yaml.safe_load(VALUES_TEXT)
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
DASHBOARD = json.loads((CHART / "dashboards" / "cxlredis.json").read_text())

# The exporter's metric families (cxlredis/metrics.py serves them at /metrics).
METRICS = {
    "cxlredis_commands_total", "cxlredis_command_errors_total",
    "cxlredis_command_duration_seconds_bucket", "cxlredis_command_duration_seconds_sum",
    "cxlredis_command_duration_seconds_count", "cxlredis_connected_clients",
    "cxlredis_blocked_clients", "cxlredis_net_input_bytes_total", "cxlredis_net_output_bytes_total",
    "cxlredis_keys", "cxlredis_expired_keys_total", "cxlredis_evicted_keys_total",
    "cxlredis_keyspace_hits_total", "cxlredis_keyspace_misses_total", "cxlredis_arena_size_bytes",
    "cxlredis_arena_used_bytes", "cxlredis_arena_free_bytes",
    "cxlredis_arena_largest_free_block_bytes", "cxlredis_arena_fragmentation_ratio",
    "cxlredis_arena_entries", "cxlredis_arena_pinned_entries", "cxlredis_maxmemory_bytes",
    "cxlredis_tenant_stored_bytes", "cxlredis_tenant_quota_bytes", "cxlredis_tenant_keys",
    "cxlredis_tenant_commands_total", "cxlredis_tenant_hits_total", "cxlredis_tenant_misses_total",
    "cxlredis_tenant_evictions_total", "cxlredis_tenant_net_input_bytes_total",
    "cxlredis_tenant_net_output_bytes_total", "cxlredis_tenant_hit_ratio_at_memory",
    "cxlredis_tenant_guaranteed_bytes", "cxlredis_tenant_borrowed_bytes",
    "cxlredis_tenant_reclaimed_bytes_total",
    "cxlredis_uptime_seconds",
}
LABELS = {"cxlredis_commands_total": {"command"}, "cxlredis_command_errors_total": {"command"},
          "cxlredis_command_duration_seconds_bucket": {"command", "le"},
          "cxlredis_command_duration_seconds_sum": {"command"},
          "cxlredis_command_duration_seconds_count": {"command"}, "cxlredis_keys": {"db"},
          "cxlredis_tenant_hit_ratio_at_memory": {"factor"}}


# ---------------------------------------------------------------- values.yaml and the schema

def owned(schema) -> bool:
    """An object whose keys the chart defines (not a Kubernetes object passed through)."""
    return schema.get("type") == "object" and schema.get("additionalProperties") is False


def key_lines():
    """(path, index of the line) for every mapping key in values.yaml."""
    stack = []          # (indent, key)
    lines = VALUES_TEXT.splitlines()
    for index, line in enumerate(lines):
        found = re.match(r"^( *)([A-Za-z0-9_.-]+):( |$)", line)
        if not found:
            continue
        indent = len(found.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, found.group(2)))
        yield tuple(key for _, key in stack), index


def schema_at(path):
    schema = SCHEMA
    for key in path:
        if not owned(schema):
            return None
        schema = schema["properties"].get(key)
        if schema is None:
            return None
    return schema


def test_every_value_is_documented():
    lines = VALUES_TEXT.splitlines()
    undocumented = []
    for path, index in key_lines():
        parent = schema_at(path[:-1])
        if parent is None or not owned(parent):
            continue        # inside a Kubernetes object, documented as a whole
        above = lines[index - 1].strip() if index else ""
        if not above.startswith("#"):
            undocumented.append(".".join(path))
    assert not undocumented, f"values without a comment right above them: {undocumented}"


def test_schema_and_values_have_the_same_keys():
    def walk(schema, values, path):
        if not owned(schema):
            return
        assert set(schema["properties"]) == set(values), f"{path or 'top level'}: schema " \
            f"{sorted(set(schema['properties']) ^ set(values))} differ"
        for key, sub in schema["properties"].items():
            if isinstance(values[key], dict):
                walk(sub, values[key], f"{path}.{key}".strip("."))
    walk(SCHEMA, VALUES, "")


# ---------------------------------------------------------------- the Grafana dashboard

def expressions():
    for panel in DASHBOARD["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def test_dashboard_uses_exactly_the_exporters_metrics():
    used = set()
    for title, expr in expressions():
        names = set(re.findall(r"\bcxlredis_[a-z_]+", expr))
        assert names, f"panel {title!r} queries no cxlredis metric: {expr}"
        assert names <= METRICS, f"panel {title!r}: unknown {names - METRICS}"
        used |= names
    assert used == METRICS, f"metrics without a panel: {METRICS - used}"


def test_dashboard_groups_by_labels_the_metrics_have():
    for title, expr in expressions():
        for labels, metric in re.findall(r"by \(([a-z, ]+)\) \(\s*(?:rate\()?(cxlredis_[a-z_]+)", expr):
            allowed = LABELS.get(metric, set()) | {"instance"}
            if metric.startswith("cxlredis_tenant_"):
                allowed |= {"tenant"}
            assert set(map(str.strip, labels.split(","))) <= allowed, (title, expr)


def test_dashboard_is_well_formed():
    assert DASHBOARD["uid"] == "cxlredis" and DASHBOARD["title"] == "cxlredis"
    ids = [panel["id"] for panel in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in DASHBOARD["templating"]["list"]}
    assert variables == {"datasource", "instance", "tenant"}
    for panel in DASHBOARD["panels"]:
        box = panel["gridPos"]
        assert box["x"] + box["w"] <= 24
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}"
            assert panel["description"]
    # Panels never overlap.
    cells = set()
    for panel in DASHBOARD["panels"]:
        box = panel["gridPos"]
        area = {(x, y) for x in range(box["x"], box["x"] + box["w"])
                for y in range(box["y"], box["y"] + box["h"])}
        assert not area & cells, panel["title"]
        cells |= area


# ---------------------------------------------------------------- the image

def dockerfile_instructions():
    text = (REPO_ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            instruction, _, rest = line.strip().partition(" ")
            yield instruction.upper(), rest.strip()


def test_image_matches_what_the_chart_expects():
    instructions = list(dockerfile_instructions())
    froms = [rest for name, rest in instructions if name == "FROM"]
    assert froms == ["python:3.11-slim AS build", "python:3.11-slim"]
    runtime = instructions[[i for i, (name, _) in enumerate(instructions) if name == "FROM"][1]:]
    (user,) = [rest for name, rest in runtime if name == "USER"]
    security = VALUES["podSecurityContext"]
    assert user == f"{security['runAsUser']}:{security['runAsGroup']}"
    (entrypoint,) = [json.loads(rest) for name, rest in runtime if name == "ENTRYPOINT"]
    (cmd,) = [json.loads(rest) for name, rest in runtime if name == "CMD"]
    assert entrypoint == ["cxlredis-server"] and cmd[0] == "/etc/cxlredis/cxlredis.conf"
    (workdir,) = [rest for name, rest in runtime if name == "WORKDIR"]
    assert workdir == "/var/lib/cxlredis"
    # The chart's probes and test hook run modules the package must ship.
    assert (REPO_ROOT / "cxlredis" / "healthcheck.py").is_file()
    builds = " ".join(rest for name, rest in instructions if name == "RUN")
    assert "redis>=" in builds and "hiredis" in builds


def test_dockerfile_copies_only_what_exists_and_is_not_ignored():
    ignored = [line.strip() for line in (REPO_ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    for name, rest in dockerfile_instructions():
        if name != "COPY" or rest.startswith("--from"):
            continue
        sources = shlex.split(rest)[:-1]
        for source in sources:
            assert (REPO_ROOT / source).exists(), source
            assert source not in ignored and source.split("/")[0] not in ignored, source


def test_options_reserved_by_the_chart_are_real_options():
    """The chart refuses these in `config` (templates/_helpers.tpl); a renamed option would slip through."""
    from cxlredis.config import OPTIONS
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    block = helpers.split('define "cxlredis.reservedOptions" -}}', 1)[1].split("{{- end -}}", 1)[0]
    reserved = set(yaml.safe_load(block))
    directives = {"include", "user", "tenant"}
    assert reserved - directives <= {option.name for option in OPTIONS}
    chart_set = {"bind", "port", "unixsocket", "arena-path", "arena-size", "tls-port",
                 "tls-cert-file", "tls-key-file", "tls-ca-cert-file", "metrics-port",
                 "metrics-bind", "requirepass", "aclfile", "dir", "logfile", "daemonize"}
    assert chart_set | directives <= reserved
