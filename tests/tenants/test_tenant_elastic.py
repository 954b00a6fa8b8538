"""Elastic tenant memory: a guaranteed minimum (MIN) and a burst maximum (QUOTA). A tenant
borrows idle memory past its minimum, up to its quota; when another tenant needs its
guaranteed share, the borrowed memory is taken back at once from the borrower's least
recent entries (counted as reclaimed), never the lender's, the borrowers of the lowest
PRIORITY first; and a tenant within its minimum never loses an entry to another tenant's
writes, however the load moves."""
import threading
import time
import urllib.request

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from conftest import ServerStartError, free_port
from tenant_helpers import USERS, as_user, tenant_info, tenant_server

MB = 1 << 20
VALUE = b"v" * (64 * 1024)
CONF = USERS + ["tenant team-a quota 20mb min 8mb users alice",
                "tenant team-b quota 16mb min 8mb users bob",
                "tenant team-c users carol",            # best effort: no guarantee, no quota
                "tenant team-d min 5mb users dave"]     # a guarantee and no quota


@pytest.fixture
def server():
    srv = tenant_server(CONF, maxmemory="24mb", maxmemory_policy="allkeys-lru",
                        metrics_port=free_port())
    try:
        yield srv.start()
    finally:
        srv.close()


def write(client, prefix, nbytes, start=0):
    """Keys prefix:start.. of 64 KiB values, nbytes of them, one after the other."""
    pipe = client.pipeline(transaction=False)
    count = nbytes // len(VALUE)
    for i in range(start, start + count):
        pipe.set(f"{prefix}:{i}", VALUE)
    pipe.execute()
    return count


def present(client, prefix, count, start=0):
    pipe = client.pipeline(transaction=False)
    for i in range(start, start + count):
        pipe.exists(f"{prefix}:{i}")
    return sum(pipe.execute())


def test_a_borrower_gives_back_what_another_tenant_is_guaranteed(server):
    admin, alice, bob = server.client(), as_user(server, "alice"), as_user(server, "bob")
    # memory idle: team-a grows past its 8 MiB minimum, borrowing, up to its 20 MiB quota
    written = write(alice, "a", 20 * MB)
    a = tenant_info(admin, "team-a")
    assert a["guaranteed_bytes"] == 8 * MB and a["borrowed_bytes"] == a["used_bytes"] - 8 * MB
    assert a["used_bytes"] > 19 * MB and a["reclaimed_bytes"] == 0
    # team-b takes its guarantee: the room comes from team-a's borrowed memory, its least
    # recent entries first, and is counted as reclaimed from team-a
    write(bob, "b", 8 * MB)
    a, b = tenant_info(admin, "team-a"), tenant_info(admin, "team-b")
    assert b["keys"] == 8 * MB // len(VALUE) and b["evicted_keys"] == 0 and b["reclaimed_bytes"] == 0
    assert a["reclaimed_bytes"] >= 4 * MB and a["used_bytes"] >= 8 * MB
    assert a["borrowed_bytes"] == a["used_bytes"] - 8 * MB
    newest = 100
    assert present(alice, "a", newest, start=written - newest) == newest      # the newest stayed
    assert present(alice, "a", written) == a["keys"]
    line = admin.info("tenants")["tenant_team-a"]
    assert (line["guaranteed"], line["borrowed"], line["reclaimed"]) == (
        8 * MB, a["borrowed_bytes"], a["reclaimed_bytes"])
    port = int(admin.config_get("metrics-port")["metrics-port"])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
        samples = {(sample.name, sample.labels.get("tenant")): sample.value
                   for family in text_string_to_metric_families(page.read().decode())
                   for sample in family.samples}
    assert samples[("cxlredis_tenant_guaranteed_bytes", "team-a")] == 8 * MB
    assert samples[("cxlredis_tenant_borrowed_bytes", "team-a")] == a["borrowed_bytes"]
    assert samples[("cxlredis_tenant_reclaimed_bytes_total", "team-a")] == a["reclaimed_bytes"]


def test_a_tenant_within_its_minimum_never_loses_an_entry_as_load_moves(server):
    admin = server.client()
    dave = as_user(server, "dave")
    kept = write(dave, "kept", 4 * MB)              # team-d stays within its 5 MiB minimum
    stop = threading.Event()
    errors = []

    def hammer(user, prefix, burst):
        client = as_user(server, user)
        i = 0
        try:
            while not stop.is_set():
                i += write(client, prefix, burst, start=i)
        except redis.RedisError as e:      # (OOM is an answer; anything else is not)
            if not isinstance(e, redis.exceptions.OutOfMemoryError):
                errors.append(e)
        finally:
            client.close()

    # the load moves: all three others write at once, then team-a and team-b take
    # turns at full speed while the best-effort tenant keeps writing
    threads = [threading.Thread(target=hammer, args=(user, f"{user}-{n}", burst))
               for n, (user, burst) in enumerate((("alice", 2 * MB), ("bob", 2 * MB), ("carol", 4 * MB)))]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    stop.set()
    for thread in threads:
        thread.join(30)
    stop.clear()
    for user in ("alice", "bob", "alice", "bob"):
        phase = threading.Thread(target=hammer, args=(user, f"{user}-phase", 4 * MB))
        carol = threading.Thread(target=hammer, args=("carol", "carol-phase", 1 * MB))
        phase.start()
        carol.start()
        time.sleep(0.5)
        stop.set()
        phase.join(30)
        carol.join(30)
        stop.clear()
        d = tenant_info(admin, "team-d")
        assert d["evicted_keys"] == 0 and d["keys"] == kept, d
        for name in ("team-a", "team-b"):      # each holds at least its minimum, or all it wrote
            info = tenant_info(admin, name)
            assert info["used_bytes"] >= 8 * MB or info["evicted_keys"] == 0, (name, info)
    assert not errors, errors
    assert present(dave, "kept", kept) == kept
    assert tenant_info(admin, "team-d")["reclaimed_bytes"] == 0
    assert tenant_info(admin, "team-c")["evicted_keys"] > 0     # the pressure was real


def test_min_and_priority_are_kept_across_restarts_and_written_back(server):
    admin = server.client()
    assert admin.execute_command("TENANT", "CREATE", "team-e", "MIN", "2mb", "PRIORITY", "3") == b"OK"
    server.restart()
    admin = server.client()
    info = tenant_info(admin, "team-e")                                     # (the tenants file)
    assert (info["guaranteed_bytes"], info["priority"]) == (2 * MB, 3)
    admin.execute_command("CONFIG", "REWRITE")
    lines = [line for line in open(server.conf).read().splitlines() if line.startswith("tenant ")]
    assert "tenant team-e min 2mb priority 3" in lines
    assert "tenant team-a quota 20mb min 8mb users alice" in lines


def test_minimums_that_do_not_fit_together_stop_the_start():
    server = tenant_server(USERS + ["tenant team-a min 16mb users alice",
                                    "tenant team-b min 16mb users bob"], maxmemory="24mb")
    try:
        with pytest.raises(ServerStartError, match=(
                r"the MINs declared \(33554432 bytes\) and the other tenants' guarantees \(0 bytes\) "
                r"pass the server's maxmemory \(25165824 bytes\)")):
            server.start()
    finally:
        server.close()


def test_the_lower_priority_borrower_gives_back_first(server):
    admin, alice, bob, carol = (server.client(), as_user(server, "alice"), as_user(server, "bob"),
                                as_user(server, "carol"))
    admin.execute_command("TENANT", "SET", "team-a", "PRIORITY", "1")
    write(alice, "a", 13 * MB)          # borrows 5 MiB past its 8 MiB, class 1
    write(carol, "c", 3 * MB)           # best effort: borrows all it holds, class 0
    write(bob, "b", 8 * MB)             # its guarantee: past the 24 MiB maxmemory
    a, c = tenant_info(admin, "team-a"), tenant_info(admin, "team-c")
    # team-c borrows less but is of the lower class: it gives everything asked
    assert c["reclaimed_bytes"] > 0 and a["reclaimed_bytes"] == 0 and a["evicted_keys"] == 0
