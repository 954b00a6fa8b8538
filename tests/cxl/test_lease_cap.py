"""cxl-lease-max-bytes: a keyspace (a tenant, or the administrators' default one) holds at
most that many bytes under CXL leases, references and reservations together; a lease past
it is refused with an error naming the cap, counted, and the room comes back when leases
are released, committed, aborted or expire. LocalClient then goes over RESP instead."""
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import free_port
from cxl_helpers import PASSWORD, cxl_server, info, local, unix_client

MiB = 1 << 20
USERS = [f"user admin on >{PASSWORD} ~* &* +@all",
         f"user acme-user on >{PASSWORD} ~* &* +@all",
         f"user beta-user on >{PASSWORD} ~* &* +@all"]
TENANTS = ["tenant acme quota 16mb arena own users acme-user",
           "tenant beta quota 16mb arena own users beta-user"]
LEASE_MS = 300
VALUE = b"v" * (MiB // 2)


@pytest.fixture(scope="module")
def server():
    metrics_port = free_port()
    srv = cxl_server(USERS + TENANTS, cxl_lease_ms=LEASE_MS, metrics_port=metrics_port)
    srv.metrics_port = metrics_port
    try:
        yield srv.start()
    finally:
        srv.close()


def as_user(server, name):
    return unix_client(server, username=name, password=PASSWORD)


@pytest.fixture
def admin(server):
    client = as_user(server, "admin")
    client.config_set("cxl-lease-max-bytes", 0)
    for tenant in ("acme", "beta"):
        with as_user(server, f"{tenant}-user") as user:
            user.flushall()
    client.flushall()
    wait_for_no_leases(client)
    yield client
    client.config_set("cxl-lease-max-bytes", 0)
    client.close()


def wait_for_no_leases(admin, timeout=5.0):
    deadline = time.monotonic() + timeout
    while admin.info("arena")["cxl_leased_bytes"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert admin.info("arena")["cxl_leased_bytes"] == 0


def cost(client, key, value_len):
    return info(client)["header-bytes"] + len(key) + value_len


def refusal(whose, held, more, cap):
    return (f"CXL lease cap reached: {whose} holds {held} leased bytes, and {more} more would "
            f"pass cxl-lease-max-bytes ({cap}); release leases or let them expire")


def counters(admin):
    fields = admin.info("arena")
    return {k: fields[k] for k in ("cxl_refs_refused", "cxl_slots_refused", "cxl_leased_bytes")}


def test_a_tenant_at_its_default_cap_is_refused_and_others_are_not(server, admin):
    """By default a tenant may lease a quarter of its quota (16 MiB: 4 MiB)."""
    acme, beta = as_user(server, "acme-user"), as_user(server, "beta-user")
    acme.set(b"k", b"x" * MiB)
    beta.set(b"k", b"x" * MiB)
    admin.set(b"k", b"x" * MiB)
    one = cost(acme, b"k", MiB)
    before = counters(admin)
    leases = [acme.execute_command("CXL", "GETREF", b"k")[3] for _ in range(3)]
    with pytest.raises(Exception) as refused:
        acme.execute_command("CXL", "GETREF", b"k")
    assert str(refused.value) == refusal("tenant 'acme'", 3 * one, one, 4 * MiB)
    # the other tenant and the default keyspace lease as before
    for other in (beta, admin):
        assert other.execute_command("CXL", "GETREF", b"k") is not None
    assert counters(admin) == {"cxl_refs_refused": before["cxl_refs_refused"] + 1,
                               "cxl_slots_refused": before["cxl_slots_refused"],
                               "cxl_leased_bytes": 5 * one}
    # a released lease gives its room back
    assert acme.execute_command("CXL", "RELEASE", leases[0]) == 1
    assert acme.execute_command("CXL", "GETREF", b"k") is not None
    # nothing else of acme's was touched: it still reads and writes over RESP
    assert acme.get(b"k") == b"x" * MiB and acme.set(b"other", b"1")


def test_reservations_count_and_come_back_on_commit_abort_and_expiry(server, admin):
    cap = 2 * MiB
    admin.config_set("cxl-lease-max-bytes", cap)
    size = MiB // 2
    one = cost(admin, b"s0", size)
    slots = [admin.execute_command("CXL", "RESERVE", f"s{i}".encode(), size)[0] for i in range(3)]
    free_before = admin.info("arena")
    with pytest.raises(Exception) as refused:
        admin.execute_command("CXL", "RESERVE", b"s3", size * 2)
    assert str(refused.value) == refusal("the default keyspace", 3 * one,
                                         cost(admin, b"s3", size * 2), cap)
    assert admin.info("arena")["cxl_leases_slots"] == free_before["cxl_leases_slots"]   # nothing reserved
    admin.execute_command("CXL", "COMMIT", slots[0])          # committed: a value, not a lease
    admin.execute_command("CXL", "ABORT", slots[1])
    assert counters(admin)["cxl_leased_bytes"] == one
    assert admin.execute_command("CXL", "RESERVE", b"s3", size * 2)[0]   # the room came back
    # a lease nobody ends gives its room back when it expires (a slot: one period late)
    wait_for_no_leases(admin, timeout=2 * LEASE_MS / 1000 + 3)
    assert admin.execute_command("CXL", "RESERVE", b"s4", cap - cost(admin, b"s4", 0))[0]


def test_mgetref_over_the_cap_is_all_or_nothing(server, admin):
    """As for a WRONGTYPE key: the whole MGETREF is refused and holds no lease; a miss is
    a nil and costs nothing."""
    admin.config_set("cxl-lease-max-bytes", MiB)
    admin.mset({b"a": VALUE, b"b": VALUE})
    before = counters(admin)
    with pytest.raises(Exception) as refused:
        admin.execute_command("CXL", "MGETREF", b"a", b"missing", b"b")
    one = cost(admin, b"a", len(VALUE))
    assert str(refused.value) == refusal("the default keyspace", one, one, MiB)
    assert counters(admin) == dict(before, cxl_refs_refused=before["cxl_refs_refused"] + 1)
    assert admin.info("arena")["cxl_leases_refs"] == 0
    refs = admin.execute_command("CXL", "MGETREF", b"a", b"missing")
    assert refs[1] is None and counters(admin)["cxl_leased_bytes"] == one


def test_refusals_in_prometheus(server, admin):
    admin.config_set("cxl-lease-max-bytes", MiB)
    admin.set(b"big", b"x" * MiB)
    with pytest.raises(Exception):
        admin.execute_command("CXL", "GETREF", b"big")
    with pytest.raises(Exception):
        admin.execute_command("CXL", "RESERVE", b"new", MiB)
    held = admin.execute_command("CXL", "RESERVE", b"new", 1000)
    fields = counters(admin)
    url = f"http://127.0.0.1:{server.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        samples = {(s.name, s.labels.get("kind")): s.value
                   for family in text_string_to_metric_families(response.read().decode())
                   for s in family.samples}
    assert samples[("cxlredis_cxl_leases_refused_total", "ref")] == fields["cxl_refs_refused"] >= 1
    assert samples[("cxlredis_cxl_leases_refused_total", "slot")] == fields["cxl_slots_refused"] >= 1
    assert samples[("cxlredis_cxl_leased_bytes", None)] == fields["cxl_leased_bytes"] == \
        cost(admin, b"new", 1000)
    admin.execute_command("CXL", "ABORT", held[0])


def test_local_client_goes_over_resp_when_refused(server, admin):
    admin.config_set("cxl-lease-max-bytes", MiB)
    kv = local(server, username="admin", password=PASSWORD)
    try:
        assert kv.mapped, kv.why_not_mapped
        big = b"B" * (2 * MiB)
        refused = counters(admin)
        assert kv.set(b"big", big) is True                       # RESERVE refused: SET
        assert kv.mset({b"m1": big, b"m2": b"small"}) is True     # one RESERVE refused: all SET
        with kv.get(b"big") as ref:                              # GETREF refused: GET
            assert not ref.mapped and bytes(ref.view) == big
        assert [bytes(r.view) for r in kv.mget([b"m1", b"m2"])] == [big, b"small"]
        buffer = bytearray(3 * MiB)
        assert kv.get_into(b"big", buffer) == len(big) and buffer[:len(big)] == big
        buffers = [bytearray(3 * MiB), bytearray(10)]
        assert kv.mget_into([b"m1", b"m2"], buffers) == [len(big), 5]
        assert buffers[0][:len(big)] == big and buffers[1][:5] == b"small"
        # under the cap the mapped path is used again
        assert kv.set(b"small", b"s" * 1000) is True and kv.get_bytes(b"small") == b"s" * 1000
        now = counters(admin)
        assert now["cxl_slots_refused"] - refused["cxl_slots_refused"] == 2
        assert now["cxl_refs_refused"] - refused["cxl_refs_refused"] == 4
    finally:
        kv.close()
