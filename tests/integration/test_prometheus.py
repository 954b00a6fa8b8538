"""The Prometheus exporter: scraped over HTTP from a running server and parsed
with prometheus-client's own parser; the values must be the server's."""
import threading
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import ServerStartError, encode_command, free_port, raw_connection


def scrape(port, timeout=5.0):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as response:
        assert response.status == 200
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


def info(conn, section):
    text = conn.request("INFO", section).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


@pytest.fixture
def exported(cxl_factory):
    port = free_port()
    return cxl_factory(metrics_port=port), port


def test_off_by_default(cxl_factory):
    server = cxl_factory()
    with raw_connection(server.port) as conn:
        assert conn.request("CONFIG", "GET", "metrics-port") == b"*2\r\n$12\r\nmetrics-port\r\n$1\r\n0\r\n"


def test_a_taken_metrics_port_stops_the_start_with_a_clear_error(cxl_factory):
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ServerStartError, match="Could not start the Prometheus exporter"):
            cxl_factory(metrics_port=taken.getsockname()[1])


def test_commands_keys_and_arena_match_info(exported):
    server, port = exported
    with raw_connection(server.port) as conn:
        conn.send(b"".join(encode_command("SET", f"k{i}", "v" * 100) for i in range(50)))
        for _ in range(50):
            conn.read_reply()
        for i in range(60):
            conn.request("GET", f"k{i}")           # 50 hits, 10 misses
        conn.request("INCR", "k0")                  # an error: not an integer
        conn.request("SELECT", "3")
        conn.request("SET", "other", "x")
        samples = scrape(port)
        arena = info(conn, "arena")
        stats = info(conn, "stats")
    assert value(samples, "cxlredis_commands_total", command="set") == 51
    assert value(samples, "cxlredis_commands_total", command="get") == 60
    assert value(samples, "cxlredis_command_errors_total", command="incr") == 1
    assert value(samples, "cxlredis_command_duration_seconds_count", command="get") == 60
    assert value(samples, "cxlredis_command_duration_seconds_bucket", command="get", le="+Inf") == 60
    buckets = [v for (name, labels), v in samples.items()
               if name == "cxlredis_command_duration_seconds_bucket" and ("command", "get") in labels]
    assert buckets == sorted(buckets)      # cumulative
    assert value(samples, "cxlredis_keyspace_hits_total") == int(stats["keyspace_hits"]) >= 50
    assert value(samples, "cxlredis_keyspace_misses_total") == int(stats["keyspace_misses"]) >= 10
    assert value(samples, "cxlredis_keys", db="0") == 50
    assert value(samples, "cxlredis_keys", db="3") == 1
    assert value(samples, "cxlredis_arena_entries") == int(arena["arena_entries"]) == 51
    assert value(samples, "cxlredis_arena_used_bytes") == int(arena["arena_heap_used"])
    assert value(samples, "cxlredis_arena_size_bytes") == int(arena["arena_size"])
    assert value(samples, "cxlredis_connected_clients") == 1
    assert value(samples, "cxlredis_net_input_bytes_total") > 50 * 100


def test_tenant_metrics_carry_the_tenant_label(exported):
    server, port = exported
    with raw_connection(server.port) as admin:
        admin.request("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all")
        assert admin.request("TENANT", "CREATE", "team-a", "QUOTA", "10mb", "USERS", "alice") == b"+OK\r\n"
    with raw_connection(server.port) as alice:
        alice.request("AUTH", "alice", "pw")
        alice.request("SET", "chunk", "x" * 5000)
        alice.request("GET", "chunk")
        alice.request("GET", "absent")
    samples = scrape(port)
    assert value(samples, "cxlredis_tenant_quota_bytes", tenant="team-a") == 10 * 1024 * 1024
    assert value(samples, "cxlredis_tenant_keys", tenant="team-a") == 1
    assert value(samples, "cxlredis_tenant_stored_bytes", tenant="team-a") >= 5000
    assert value(samples, "cxlredis_tenant_hits_total", tenant="team-a") == 1
    assert value(samples, "cxlredis_tenant_misses_total", tenant="team-a") == 1
    assert value(samples, "cxlredis_tenant_commands_total", tenant="team-a") >= 3
    assert value(samples, "cxlredis_tenant_net_output_bytes_total", tenant="team-a") > 5000
    assert value(samples, "cxlredis_tenant_keys", tenant="default") == 0


def test_a_scrape_does_not_wait_for_a_busy_event_loop(exported):
    server, port = exported
    with raw_connection(server.port) as conn:
        conn.send(encode_command("DEBUG", "SLEEP", "2"))   # blocks the event loop for 2 s
        time.sleep(0.2)
        started = time.monotonic()
        samples = scrape(port, timeout=10)
        took = time.monotonic() - started
        assert conn.read_reply(timeout=10) == b"+OK\r\n"
    assert took < 1.5, f"the scrape waited {took:.2f}s for the event loop"
    assert value(samples, "cxlredis_connected_clients") == 1


def test_scrapes_during_load_and_shutdown_stay_clean(exported):
    server, port = exported
    stop = threading.Event()
    failures = []

    def scraper():
        while not stop.is_set():
            try:
                scrape(port)
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(repr(e))

    thread = threading.Thread(target=scraper)
    thread.start()
    try:
        with raw_connection(server.port) as conn:
            for round_no in range(20):
                conn.send(b"".join(encode_command("SET", f"k{i}", b"x" * 70000) for i in range(20)))
                for _ in range(20):
                    assert conn.read_reply() == b"+OK\r\n"
    finally:
        stop.set()
        thread.join()
    assert failures == []
    # SIGTERM: the exporter stops before the arena closes, and the exit is clean
    assert server.stop() == 0


def test_every_metric_the_grafana_dashboard_uses_is_served(exported):
    """The chart's dashboard (helm/cxlredis/dashboards) against a real scrape."""
    import json
    import re
    from pathlib import Path
    server, port = exported
    with raw_connection(server.port) as admin:
        admin.request("ACL", "SETUSER", "bob", "on", ">pw", "~*", "+@all")
        admin.request("TENANT", "CREATE", "team-b", "USERS", "bob")
        # every key sampled, so the miss-ratio curve has a read to show
        admin.request("CONFIG", "SET", "tenant-mrc-sampling", "1")
        admin.request("SET", "k", "v")
        admin.request("GET", "k")
        time.sleep(0.3)         # a cron tick takes the sampled references
        served = {name for name, _ in scrape(port)}
        admin.request("CONFIG", "SET", "tenant-mrc-sampling", "100")
    dashboard = Path(__file__).parents[2] / "helm" / "cxlredis" / "dashboards" / "cxlredis.json"
    used = set(re.findall(r"cxlredis_[a-z_]+", json.dumps(json.loads(dashboard.read_text()))))
    assert used and used <= served, f"the dashboard uses metrics the server does not serve: {used - served}"
