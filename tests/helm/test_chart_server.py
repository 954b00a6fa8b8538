"""What the chart renders, as the server sees it: every scenario's cxlredis.conf
(with users.conf and the TLS files laid out where the pod mounts them) goes
through the server's own config loader; then real servers start from the
rendered files, the StatefulSet's probe command checks them, and the helm test
Pod's script runs against them as the hook would.

Only the host-specific options are replaced when a server starts: the ports,
the unix socket (unless it is in a node directory, which a temporary directory
stands in for), and the arena's directory and size. NUMA binding, huge pages
and DAX devices need hardware this machine may not have, so those scenarios
are checked through the loader only."""
import hashlib
import json
import os
import posixpath
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis
import yaml

from conftest import free_port
from cxlredis.config import ConfigError, Config
from cxlredis.lmcache_plugin import client_options
from cxlredis.local import LocalClient
from helm_helpers import (NAMESPACE, RELEASE, SCENARIOS, CHART, ChartServer, helm, load_config,
                          node_directory, render, run_helm_test, run_probe, server_config,
                          values_args)

MB, GB = 1024**2, 1024**3
HASHED = hashlib.sha256(b"not in the file").hexdigest()
# The Secret that ci/existing-secret-values.yaml names, as an operator would make it.
EXISTING_USERS = f"""\
requirepass "admin pw"
user reader on >readpw ~* -@all +@read +@connection
user hashed on #{HASHED} ~* +@all
user retired off >oldpw ~* +@all
user writer on >writepw ~kv:* +@all -@dangerous
tenant lab quota 64mb users writer
"""


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def external(tmp_path_factory):
    """The Secrets the scenarios expect to exist: users.conf, a server certificate
    (for 127.0.0.1, as the hook runs here) with its CA, and the hook's client certificate."""
    directory = tmp_path_factory.mktemp("certs")
    (directory / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                       "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl("req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=cxlredis chart test CA", cwd=directory)
    for name in ("server", "client"):
        _openssl("req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", f"{name}.crt",
                 cwd=directory)
    read = lambda name: (directory / name).read_bytes()     # noqa: E731
    return {
        "cxlredis-users": {"users.conf": EXISTING_USERS.encode()},
        "cxlredis-tls": {"tls.crt": read("server.crt"), "tls.key": read("server.key"),
                         "ca.crt": read("ca.crt")},
        "cxlredis-test-client-tls": {"tls.crt": read("client.crt"), "tls.key": read("client.key")},
    }


# ---------------------------------------------------------------- the loader

EXPECTED = {
    "defaults": {"arena-size": 1 * GB, "port": 6379, "maxmemory-policy": "allkeys-lru",
                 "arena-path": "/var/lib/cxlredis-arena/cxlredis.arena", "requirepass": ""},
    "shm": {"arena-size": 2 * GB, "maxmemory": 1800 * MB, "timeout": 300,
            "large-value-threshold": 128 * 1024, "requirepass": 's3cret "quoted" pass'},
    "hugepages": {"arena-size": 4 * GB, "arena-hugepages": True, "arena-prefault": True,
                  "arena-numa-node": 1},
    "devdax": {"arena-path": "/dev/dax0.0", "arena-size": 16 * GB, "arena-numa-node": 2},
    "devdax-hostpath": {"arena-path": "/dev/dax1.0", "arena-size": 8 * GB},
    "file": {"arena-size": 8 * GB, "audit-log-file": "audit.log", "audit-log-max-size": 32 * MB,
             "audit-log-max-files": 3},
    "file-hostpath": {"arena-path": "/var/lib/cxlredis-arena/cxlredis.arena", "arena-size": 4 * GB},
    "tls": {"port": 0, "tls-port": 6380, "tls-auth-clients": "yes", "requirepass": "tlspass"},
    "tenants": {"requirepass": "adminsecret"},
    "metrics": {"metrics-port": 9121, "metrics-bind": "0.0.0.0"},
    "disktier": {"disk-tier-dir": "/var/lib/cxlredis-tier", "disk-tier-size": 12 * GB,
                 "disk-tier-promote": False, "disk-tier-write-buffer": 128 * MB},
    "existing-secret": {"requirepass": "admin pw"},
    "colocated": {"requirepass": "adminsecret", "unixsocketperm": 0o770},
    "cluster": {"cluster-enabled": True, "cluster-port": 16379, "cluster-node-timeout": 5000,
                "cluster-config-file": "/var/lib/cxlredis-arena/nodes.conf",
                "cluster-require-full-coverage": False, "cluster-allow-reads-when-down": False,
                "cluster-preferred-endpoint-type": "ip", "cluster-announce-ip": "",
                "requirepass": 'cluster "pw" \\x'},
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_server_loads_the_rendered_config(scenario, external, tmp_path):
    config = load_config(render(scenario), tmp_path, external)
    assert config["bind"] == ("0.0.0.0",)
    if scenario == "colocated":         # in the node directory shared with inference pods
        node = node_directory(tmp_path, "/run/cxlredis")
        assert config["unixsocket"] == str(node / "cxlredis.sock")
        assert config["tenant-arena-dir"] == str(node)
    else:
        assert config["unixsocket"] == "/tmp/cxlredis.sock"
        assert config["tenant-arena-dir"] == ""
    assert config["daemonize"] is False and config["logfile"] == ""
    assert config["dir"] == os.getcwd()     # not set: the server's dir is the pod's workingDir
    for name, value in EXPECTED[scenario].items():
        assert config[name] == value, name
    if scenario == "tls":
        for option, key in (("tls-cert-file", "tls.crt"), ("tls-key-file", "tls.key"),
                            ("tls-ca-cert-file", "ca.crt")):
            with open(config[option], "rb") as file:     # the projected Secret's file
                assert file.read() == external["cxlredis-tls"][key]


def test_users_and_tenants_load_as_declared(tmp_path, external):
    config = load_config(render("tenants"), tmp_path, external)
    users = {user[0].decode(): [rule.decode() for rule in user[1:]] for user in config.users}
    assert users == {
        "publisher": ["on", ">pubpass", "~*", "+@all", "-@admin"],
        "alice": ["on", ">alicepass", "~*", "+@all", "-@admin"],
        "bob": ["on", ">bobpass", "~*", "+@all", "-@admin"],
        "dashboard": ["on", ">dashpass", "~*", "-@all", "+@read", "+@connection"],
    }
    assert config.tenants == (
        ("common", "users", "publisher"),
        ("team-a", "quota", "512mb", "disk", "no", "policy", "allkeys-lru", "users", "alice", "shared-read",
         "common"),
        ("team-b", "quota", "256mb", "min", "128mb", "priority", "2", "users", "bob", "dashboard",
         "shared-read", "common", "shared-write", "common"),
    )


def test_passwords_are_quoted_for_the_config_syntax(tmp_path, external):
    password = 'a "b" \\c\td ~e #f\'g'
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"auth": {"password": password, "users": [
        {"name": "odd", "password": password, "rules": "~* +@all"}]}}))
    config = load_config(render("defaults", "-f", values), tmp_path, external)
    assert config["requirepass"] == password
    assert config.users[0][:3] == (b"odd", b"on", b">" + password.encode())


def test_a_bad_acl_rule_is_refused_by_the_loader(tmp_path, external):
    """The loader really checks what the chart passes through: a rule it does not know fails."""
    docs = render("defaults", "--set", "auth.users[0].name=x", "--set", "auth.users[0].rules=+nosuchcommand")
    with pytest.raises(ConfigError, match="Error in user declaration 'x'"):
        load_config(docs, tmp_path, external)


# ---------------------------------------------------------------- real servers

def start_server(docs, tmp_path, external, node_root) -> ChartServer:
    conf = server_config(docs, tmp_path, external, node_root)
    rendered = Config.load([str(conf)], environ={})
    # Room for every scenario's tenant quotas: a QUOTA above maxmemory stops the start.
    options = {"arena-size": "1gb"}
    if rendered["port"] == 0:
        options["port"] = 0
    if rendered["tls-port"]:
        options["tls-port"] = free_port()
    server = ChartServer(conf, options)
    # The arena's file name as the chart has it: tenant arenas are named after it.
    server.arena_path = str(server.dir / posixpath.basename(rendered["arena-path"]))
    if Path(rendered["unixsocket"]).is_relative_to(node_root):      # in a node directory
        server.unixsocket = rendered["unixsocket"]
    return server.start()


@pytest.fixture
def node_root():
    """Where the stand-ins of node directories go: outside pytest's tmp_path (whose
    parents are 0700) and traversable (0711) like the node's, so that a process of
    another UID reaches the socket and the arena files as an inference pod does."""
    root = Path(tempfile.mkdtemp(prefix="cxlnode-"))
    root.chmod(0o711)
    try:
        yield root
    finally:
        shutil.rmtree(root)


@pytest.fixture
def live(tmp_path, external, node_root):
    """live(scenario) -> (docs, server, hook port); servers are stopped afterwards."""
    started = []

    def start(scenario):
        docs = render(scenario)
        server = start_server(docs, tmp_path, external, node_root)
        started.append(server)
        port = server.options.get("tls-port") or server.port
        return SimpleNamespace(docs=docs, server=server, port=port,
                               hook=lambda **kw: run_helm_test(docs, tmp_path, port, external, **kw))

    try:
        yield start
    finally:
        for server in started:
            server.close()


HOOK_LINES = {
    "defaults": ["ok   default: logged in, PING, SET/GET/DEL cxlredis-helm-test:default:"],
    "shm": ["ok   default: logged in, PING, SET/GET/DEL"],
    "tenants": ["ok   default: logged in, PING, SET/GET/DEL",
                "ok   publisher: logged in, PING, SET/GET/DEL",
                "ok   alice: logged in, PING, SET/GET/DEL",
                "ok   bob: logged in, PING, SET/GET/DEL",
                "ok   dashboard: logged in, PING; SET refused by its ACL rules (NOPERM)",
                "smoke test: 5 of 5 users passed"],
    "file": ["ok   default: logged in, PING, SET/GET/DEL",
             "ok   admin: logged in, PING, SET/GET/DEL cxlredis-helm-test:admin:",
             "ok   lmcache: logged in, PING, SET/GET/DEL kv:cxlredis-helm-test:lmcache:"],
    "existing-secret": ["skip hashed: no plaintext password in users.conf",
                        "skip retired: off",
                        "ok   default: logged in, PING, SET/GET/DEL",
                        "ok   reader: logged in, PING; SET refused by its ACL rules (NOPERM)",
                        "ok   writer: logged in, PING, SET/GET/DEL kv:cxlredis-helm-test:writer:",
                        "smoke test: 3 of 3 users passed"],
    "tls": ["ok   default: logged in, PING, SET/GET/DEL", "smoke test: 1 of 1 users passed"],
    "colocated": ["ok   default: logged in, PING, SET/GET/DEL",
                  "ok   carol: logged in, PING, SET/GET/DEL",
                  "ok   dave: logged in, PING, SET/GET/DEL",
                  "ok   erin: logged in, PING, SET/GET/DEL",
                  "smoke test: 4 of 4 users passed"],
}


@pytest.mark.parametrize("scenario", sorted(HOOK_LINES))
def test_probes_and_helm_test_pass_on_a_server_from_the_chart(scenario, live):
    deployment = live(scenario)
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        probe = run_probe(deployment.docs, deployment.server, kind)
        assert probe.returncode == 0, probe.stderr
    result = deployment.hook()
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for expected in HOOK_LINES[scenario]:
        assert any(line.startswith(expected) for line in lines), (expected, result.stdout)
    assert "FAIL" not in result.stdout


def test_tenants_and_options_take_effect(live):
    tenants = live("tenants")
    admin = redis.Redis(port=tenants.server.port, password="adminsecret", decode_responses=True)
    try:
        assert sorted(admin.execute_command("TENANT", "LIST")) == ["common", "default", "team-a", "team-b"]
        info = admin.execute_command("TENANT", "INFO", "team-a")
        info = dict(zip(info[::2], info[1::2])) if isinstance(info, list) else info
        assert int(info["quota"]) == 512 * MB
        info = admin.execute_command("TENANT", "INFO", "team-b")
        info = dict(zip(info[::2], info[1::2])) if isinstance(info, list) else info
        assert (int(info["quota"]), int(info["guaranteed_bytes"]), int(info["priority"])) == (
            256 * MB, 128 * MB, 2)
    finally:
        admin.close()
    shm = live("shm")
    admin = redis.Redis(port=shm.server.port, password='s3cret "quoted" pass', decode_responses=True)
    try:
        assert admin.config_get("maxmemory")["maxmemory"] == str(1800 * MB)
        assert admin.config_get("timeout")["timeout"] == "300"
    finally:
        admin.close()


def test_audit_log_lands_in_the_working_directory(live):
    deployment = live("file")
    assert deployment.hook().returncode == 0
    events = [json.loads(line) for line in (deployment.server.dir / "audit.log").read_text().splitlines()]
    logins = {event["user"] for event in events if event["event"] == "auth_success"}
    assert {"admin", "lmcache"} <= logins


def test_helm_test_fails_on_a_wrong_password(live):
    deployment = live("tenants")
    result = deployment.hook(replace={"users.conf": (">alicepass", ">wrong")})
    assert result.returncode == 1
    assert "FAIL alice: AuthenticationError" in result.stdout, result.stdout


def test_helm_test_and_probes_fail_without_a_server(live):
    deployment = live("defaults")
    deployment.server.stop()
    assert run_probe(deployment.docs, deployment.server).returncode == 1
    result = deployment.hook()
    assert result.returncode == 1
    assert "FAIL default: ConnectionError" in result.stdout, result.stdout


def test_tls_hook_needs_its_client_certificate(live, external):
    deployment = live("tls")
    unsigned = external["cxlredis-test-client-tls"]["tls.crt"]
    result = deployment.hook(replace={"tls/client.crt": (unsigned.decode(),
                                                         external["cxlredis-tls"]["ca.crt"].decode())})
    assert result.returncode == 1, result.stdout
    assert "FAIL default" in result.stdout


# ---------------------------------------------------------------- co-located access

def notes_plugin_url(scenario) -> str:
    """The LMCache plugin url that NOTES.txt tells inference pods to use."""
    notes = helm("install", RELEASE, CHART, *values_args(scenario), "--namespace", NAMESPACE,
                 "--dry-run=client").stdout.split("NOTES:", 1)[1]
    (url,) = [line.split('"')[1] for line in notes.splitlines()
              if "remote_storage_plugin.cxlredis.url:" in line]
    return url


# An inference pod's UID: neither root nor the server's (the server runs as root here).
POD_UID = 20001


def as_inference_pod(groups, work):
    """work()'s result (JSON), computed in a child process of POD_UID with these
    supplementary groups, as an inference pod's securityContext gives them. The child is
    forked, not started: this interpreter lives where that UID may not enter."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            try:
                os.setgroups(groups)
                os.setgid(POD_UID)
                os.setuid(POD_UID)
                answer = {"result": work()}
            except Exception as e:
                answer = {"error": f"{type(e).__name__}: {e}"}
            with os.fdopen(write_end, "w") as pipe:
                json.dump(answer, pipe)
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        reply = pipe.read()
    (_, status) = os.waitpid(pid, 0)
    assert reply, f"the pod's process died without an answer (wait status {status})"
    answer = json.loads(reply)
    assert "error" not in answer, answer["error"]
    return answer["result"]


def write_and_read_mapped(url, node):
    """What a tenant's inference process does: connect with the url the NOTES give, SET a
    value (through the mapping if writable, else over the socket), read it through the
    mapping; and which other arena files in the node directory it can open."""
    kv = LocalClient(**client_options(url), socket_timeout=30)
    try:
        value = os.urandom(1 << 20)
        kv.set(b"kv:chunk", value)
        with kv.get(b"kv:chunk") as ref:
            read_mapped = ref.mapped and bytes(ref.view) == value and ref.valid()
        opened = []
        for path in node.glob("*.arena"):
            if str(path) != kv.info["backing-path"]:
                try:
                    os.close(os.open(path, os.O_RDONLY))
                    opened.append(path.name)
                except PermissionError:
                    pass
        return {"mapped": kv.mapped, "why_not_mapped": kv.why_not_mapped,
                "backing_path": kv.info["backing-path"], "read_mapped": read_mapped,
                "why_not_writable": kv.why_not_writable, "other_files_opened": opened}
    finally:
        kv.close()


def command_calls(admin, command) -> int:
    return admin.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0)


def test_colocated_tenants_map_their_own_arenas_through_the_unix_socket(live, node_root):
    """What inference pods on the node do, with the node directory a temporary one: each
    tenant's user connects with the url the NOTES give and maps its own tenant's arena file
    in that directory. team-c's process runs as the server's user (0600); team-d's and
    team-e's as another UID with the socket's group and their tenant's arenaGroup: team-d's
    0640 file maps read-only (its SET goes over the socket), team-e's 0660 (arenaWrite) also
    takes the value through the mapping (CXL COMMIT). Neither opens another tenant's file."""
    deployment = live("colocated")
    node = node_directory(node_root, "/run/cxlredis")
    socket = node / "cxlredis.sock"
    assert deployment.server.unixsocket == str(socket)
    assert stat.S_ISSOCK(socket.stat().st_mode) and stat.S_IMODE(socket.stat().st_mode) == 0o770
    assert run_probe(deployment.docs, deployment.server).returncode == 0
    url = notes_plugin_url("colocated").replace("/run/cxlredis/", f"{node}/")
    socket_group = socket.stat().st_gid
    admin = redis.Redis(port=deployment.server.port, password="adminsecret")
    try:
        def run(user, password, arena_group=None):
            """(what its process saw, CXL COMMIT calls, SET calls) for a tenant's user."""
            (commits, sets) = (command_calls(admin, "cxl|commit"), command_calls(admin, "set"))
            user_url = url.replace("<user>:<password>", f"{user}:{password}")
            if arena_group is None:
                seen = write_and_read_mapped(user_url, node)
            else:
                seen = as_inference_pod([socket_group, arena_group],
                                        lambda: write_and_read_mapped(user_url, node))
            return (seen, command_calls(admin, "cxl|commit") - commits,
                    command_calls(admin, "set") - sets)

        for user, password, tenant, group in (("carol", "carolpass", "team-c", None),
                                              ("dave", "davepass", "team-d", 3001),
                                              ("erin", "erinpass", "team-e", 3002)):
            (seen, commits, sets) = run(user, password, group)
            assert seen["mapped"], seen["why_not_mapped"]
            assert seen["backing_path"] == str(node / f"cxlredis.tenant-{tenant}.arena")
            assert seen["read_mapped"], (tenant, seen)
            if user == "dave":          # 0640: its group reads the file, and may not write it
                assert "Permission denied" in seen["why_not_writable"], seen
                assert (commits, sets) == (0, 1)
            else:
                assert seen["why_not_writable"] == "", seen
                assert (commits, sets) == (1, 0)
            if group is not None:
                assert seen["other_files_opened"] == [], seen
        assert admin.ping()
    finally:
        admin.close()
    assert stat.S_IMODE((node / "cxlredis.tenant-team-c.arena").stat().st_mode) == 0o600
    for tenant, mode, group in (("team-d", 0o640, 3001), ("team-e", 0o660, 3002)):
        file = (node / f"cxlredis.tenant-{tenant}.arena").stat()
        assert (stat.S_IMODE(file.st_mode), file.st_gid) == (mode, group), tenant
    assert sorted(p.name for p in node.iterdir()) == [
        "cxlredis.sock", "cxlredis.tenant-team-c.arena", "cxlredis.tenant-team-d.arena",
        "cxlredis.tenant-team-e.arena"]


def test_colocated_tenants_load_as_declared(tmp_path, external):
    config = load_config(render("colocated"), tmp_path, external)
    assert config.tenants == (
        ("team-c", "quota", "64mb", "arena", "own", "users", "carol"),
        ("team-d", "quota", "32mb", "arena", "own", "arena-group", "3001", "users", "dave"),
        ("team-e", "quota", "16mb", "arena", "own", "arena-group", "3002", "arena-write", "yes",
         "users", "erin"),
    )
