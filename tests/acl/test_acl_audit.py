"""The audit log (cxlredis only: Redis has none): one well-formed JSON line per
security event, never a password, and size-based rotation that loses no line
under concurrent load."""
import hashlib
import json
import re
import threading

import pytest

from acl_helpers import request, server_under_test
from conftest import TARGET, ServerStartError, parse_reply, raw_connection

pytestmark = pytest.mark.skipif(TARGET == "redis", reason="the audit log is cxlredis's own")

ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")
FIELDS = {"time", "event", "client_id", "client_addr", "user", "tenant", "details"}


@pytest.fixture
def audited(tmp_path):
    """cxlredis with a config file, an ACL file (user alice) and an audit log."""
    started = []

    def start(**options):
        acl_file = tmp_path / "users.acl"
        acl_file.write_text("user default on nopass ~* &* +@all\nuser alice on >apw ~cache:* +@all\n")
        conf = tmp_path / "cxlredis.conf"
        conf.write_text("# audited\n")
        server = server_under_test(conf, aclfile=str(acl_file),
                                   audit_log_file=str(tmp_path / "audit.log"), **options)
        started.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in started:
            server.close()


def read_events(*paths):
    events = []
    for path in paths:
        for line in path.read_text().splitlines():
            events.append(json.loads(line))
    return events


def test_each_event_once_well_formed_and_without_passwords(audited, tmp_path):
    server = audited()
    with raw_connection(server.port) as admin, raw_connection(server.port) as alice:
        alice_id = parse_reply(alice.request("CLIENT", "ID"))
        steps = [
            (alice, ("AUTH", "alice", "wrong"), b"-WRONGPASS"),
            (alice, ("AUTH", "alice", "apw"), b"+OK"),
            (alice, ("GET", "other"), b"-NOPERM"),
            (admin, ("ACL", "SETUSER", "bob", "on", ">bobpw", "#" + "a" * 64, "~*", "+@all"), b"+OK"),
            (admin, ("ACL", "DELUSER", "bob"), b":1"),
            (admin, ("ACL", "SAVE"), b"+OK"),
            (admin, ("CONFIG", "SET", "maxmemory-samples", "7", "requirepass", "hunter2"), b"+OK"),
            (admin, ("CONFIG", "REWRITE"), b"+OK"),
            (admin, ("CONFIG", "RESETSTAT"), b"+OK"),
            (admin, ("SELECT", "3"), b"+OK"),
            (admin, ("FLUSHDB", "ASYNC"), b"+OK"),
            (admin, ("FLUSHALL",), b"+OK"),
            (admin, ("CLIENT", "KILL", "ID", str(alice_id)), b":1"),
            (admin, ("ACL", "LOAD"), b"+OK"),
            # Not events: reading, failing before any change, and plain commands.
            (admin, ("ACL", "LIST"), b"*"),
            (admin, ("ACL", "SETUSER", "carol", "bogus"), b"-ERR"),
            (admin, ("CONFIG", "GET", "maxmemory"), b"*"),
            (admin, ("CONFIG", "SET", "maxmemory", "lots"), b"-ERR"),
            (admin, ("SET", "k", "v"), b"+OK"),
        ]
        for conn, args, expected in steps:
            assert conn.request(*args).startswith(expected), args
        admin_id = parse_reply(admin.request("CLIENT", "ID"))

    text = (tmp_path / "audit.log").read_text()
    events = read_events(tmp_path / "audit.log")
    assert [e["event"] for e in events] == [
        "auth_failure", "auth_success", "acl_denied", "acl_setuser", "acl_deluser", "acl_save",
        "config_set", "config_rewrite", "config_resetstat", "flushdb", "flushall", "client_kill",
        "acl_load"]
    for event in events:
        assert set(event) == FIELDS, event
        assert ISO_TIME.match(event["time"]), event
        assert event["client_id"] in (alice_id, admin_id)
        assert re.fullmatch(r"127\.0\.0\.1:\d+", event["client_addr"]), event
        assert event["tenant"] is None
        assert isinstance(event["details"], dict)
    by_type = {e["event"]: e for e in events}
    assert by_type["auth_failure"]["user"] == "default"
    assert by_type["auth_failure"]["details"] == {"command": "AUTH", "username": "alice"}
    assert by_type["auth_success"]["user"] == "alice"
    assert by_type["acl_denied"]["user"] == "alice"
    assert by_type["acl_denied"]["details"] == {"reason": "key", "context": "toplevel",
                                                "command": "get", "object": "other"}
    assert by_type["acl_setuser"]["details"] == {
        "username": "bob", "rules": ["on", ">(redacted)", "#(redacted)", "~*", "+@all"]}
    assert by_type["acl_deluser"]["details"] == {"usernames": ["bob"], "deleted": 1}
    assert by_type["config_set"]["details"] == {
        "parameters": {"maxmemory-samples": "7", "requirepass": "(redacted)"}}
    assert by_type["config_rewrite"]["details"] == {"file": str(tmp_path / "cxlredis.conf")}
    assert by_type["flushdb"]["details"] == {"db": 3, "mode": "ASYNC"}
    assert by_type["flushall"]["details"] == {"mode": "SYNC"}
    assert by_type["client_kill"]["details"] == {"filters": ["ID", str(alice_id)],
                                                 "killed": [alice_id]}
    assert by_type["acl_load"]["details"]["file"] == str(tmp_path / "users.acl")
    for secret in ("wrong", "apw", "bobpw", "hunter2", "a" * 64):
        assert secret not in text
        assert hashlib.sha256(secret.encode()).hexdigest() not in text


def test_audit_log_can_be_switched_at_runtime(audited, tmp_path):
    server = audited(enable_protected_configs="local")     # audit-log-file is protected
    with raw_connection(server.port) as admin:
        assert admin.request("CONFIG", "SET", "audit-log-file", str(tmp_path)) == (
            b"-ERR CONFIG SET failed (possibly related to argument 'audit-log-file') - Can't open "
            b"the audit log file: Is a directory\r\n")
        assert parse_reply(admin.request("CONFIG", "GET", "audit-log-file"))[1] == \
            str(tmp_path / "audit.log").encode()
        assert admin.request("CONFIG", "SET", "audit-log-file", "") == b"+OK\r\n"
        assert admin.request("FLUSHALL") == b"+OK\r\n"                   # not logged: off
        second = tmp_path / "second.log"
        assert admin.request("CONFIG", "SET", "audit-log-file", str(second)) == b"+OK\r\n"
        assert admin.request("FLUSHDB") == b"+OK\r\n"
    # The CONFIG SET that turns the log off or moves it ends the old file, and starts the new.
    first = read_events(tmp_path / "audit.log")
    assert [(e["event"], e["details"]) for e in first] == [
        ("config_set", {"parameters": {"audit-log-file": ""}})]
    assert [(e["event"], e["details"]) for e in read_events(second)] == [
        ("config_set", {"parameters": {"audit-log-file": str(second)}}),
        ("flushdb", {"db": 0, "mode": "SYNC"})]


def test_unopenable_audit_log_stops_the_start(tmp_path):
    server = server_under_test(audit_log_file=str(tmp_path))     # a directory
    with pytest.raises(ServerStartError):
        server.start(timeout=15)
    assert f"Can't open the audit log file '{tmp_path}': Is a directory" in server.log
    server.close()


def _deny_concurrently(port, clients, per_client):
    """Each client makes `per_client` ACL denials with keys naming the client and the step."""
    errors = []

    def work(n):
        try:
            with raw_connection(port) as conn:
                assert conn.request("AUTH", "alice", "apw") == b"+OK\r\n"
                for i in range(per_client):
                    assert conn.request("GET", f"mark:{n}:{i}").startswith(b"-NOPERM")
        except Exception as e:     # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_rotation_under_concurrent_load_loses_no_line(audited, tmp_path):
    server = audited(audit_log_max_size="4kb", audit_log_max_files=1000)
    clients, per_client = 8, 150
    _deny_concurrently(server.port, clients, per_client)
    files = sorted(tmp_path.glob("audit.log*"))
    assert len(files) > 20, "the test must rotate many times"
    marks = []
    for path in files:
        assert path.stat().st_size <= 4096, path
        for event in read_events(path):
            if event["event"] == "acl_denied":
                marks.append(event["details"]["object"])
    assert sorted(marks) == sorted(f"mark:{n}:{i}" for n in range(clients) for i in range(per_client))
    # Newest first: audit.log, then .1, .2, ... hold ever older lines.
    numbered = sorted(tmp_path.glob("audit.log.*"), key=lambda p: int(p.suffix[1:]))
    order = [read_events(path)[0]["time"] for path in [tmp_path / "audit.log"] + numbered]
    assert order == sorted(order, reverse=True)


def test_rotation_keeps_at_most_max_files(audited, tmp_path):
    server = audited(audit_log_max_size="1kb", audit_log_max_files=2)
    _deny_concurrently(server.port, 1, 60)
    assert sorted(p.name for p in tmp_path.glob("audit.log*")) == ["audit.log", "audit.log.1",
                                                                   "audit.log.2"]
    kept = [e["details"]["object"] for path in ("audit.log.2", "audit.log.1", "audit.log")
            for e in read_events(tmp_path / path) if e["event"] == "acl_denied"]
    # The newest lines survive, in order, ending with the last one.
    assert kept == [f"mark:0:{i}" for i in range(60 - len(kept), 60)]
    assert request(server, "CONFIG", "SET", "audit-log-max-files", "0") == b"+OK\r\n"
    _deny_concurrently(server.port, 1, 20)
    assert not (tmp_path / "audit.log.3").exists()
