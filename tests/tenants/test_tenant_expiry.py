"""Active expiry per tenant: in the server's arena and in a tenant's own (ARENA own),
each tenant's due keys leave within about a second of their time (the arenas are 1 GiB,
far more index than one cron tick used to sweep), its expired_keys counts them, and
nobody else's keys of the same names are touched."""
import time

import pytest

from tenant_helpers import USERS, as_user, tenant_info, tenant_server

TENANTS = {"alice": "shared-a", "bob": "own-b"}


@pytest.fixture
def server():
    lines = USERS + ["tenant shared-a users alice", "tenant own-b quota 1gb arena own users bob"]
    srv = tenant_server(lines, **{"arena-size": "1gb"})
    try:
        yield srv.start()
    finally:
        srv.close()


def wait_for(predicate, due, what, limit=3.0):
    while not predicate():
        late = time.monotonic() - due
        assert late < limit, f"{what} {late:.2f} s after due"
        time.sleep(0.01)
    return max(time.monotonic() - due, 0.0)


def test_each_tenants_due_keys_leave_on_time_and_count_as_its_own(server):
    admin = server.client()
    clients = {user: as_user(server, user) for user in TENANTS}
    for c in (admin, *clients.values()):
        c.set("k", "persistent")
    admin.set("x", "default's", ex=1000)
    clients["bob"].set("x", "bob's")
    for i in range(3):
        clients["alice"].psetex(f"x{i}" if i else "x", 500, "alice's")
    due = time.monotonic() + 0.5
    late = wait_for(lambda: clients["alice"].dbsize() == 1, due, "alice's keys still there")
    print(f"shared arena tenant: gone {late:.3f} s after due")
    assert tenant_info(admin, "shared-a")["expired_keys"] == 3
    assert clients["bob"].get("x") == b"bob's" and admin.get("x") == b"default's"

    for i in range(4):
        clients["bob"].psetex(f"y{i}", 500, "bob's")
    due = time.monotonic() + 0.5
    late = wait_for(lambda: clients["bob"].dbsize() == 2, due, "bob's keys still there")
    print(f"own arena tenant: gone {late:.3f} s after due")
    assert tenant_info(admin, "own-b")["expired_keys"] == 4
    assert tenant_info(admin, "shared-a")["expired_keys"] == 3
    assert tenant_info(admin, "default")["expired_keys"] == 0
    assert admin.dbsize() == 2 and clients["alice"].get("k") == b"persistent"
    assert admin.execute_command("DEBUG", "ARENA-CHECK") == []
