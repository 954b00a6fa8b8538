"""A client process killed while it holds leases: its leased value and its half-filled
reservation stay untouched, whatever the server writes and evicts meanwhile, until
the leases expire (a closed socket does not prove the process stopped using its
mapping); then the server frees them. Nothing of the reservation ever shows."""
import mmap
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from conftest import free_port
from cxl_helpers import cxl_server, info, unix_client

REPO = str(Path(__file__).resolve().parents[2])
LEASE_MS = 1500
VALUE = 1 << 20

HOLDER = r"""
import sys, time
from cxlredis.local import LocalClient
kv = LocalClient(unix_socket_path=sys.argv[1])
ref = kv.get(b"victim")
slot = kv.reserve(b"never", int(sys.argv[2]))
slot.view[:] = b"\xee" * len(slot.view)           # filled, never committed
print(ref.lease, slot.lease, flush=True)
time.sleep(60)
"""


def test_leases_of_a_killed_client_hold_until_they_expire():
    server = cxl_server(**{"cxl-lease-ms": LEASE_MS, "maxmemory": "16mb",
                           "maxmemory-policy": "allkeys-lru"}).start()
    r = unix_client(server)
    holder = None
    try:
        victim = os.urandom(VALUE)
        r.set(b"victim", victim)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, server.unixsocket, str(VALUE)],
                                  stdout=subprocess.PIPE, env=env, start_new_session=True)
        assert len(holder.stdout.readline().split()) == 2
        fields = info(r)
        assert (fields["leases-refs"], fields["leases-slots"]) == (1, 1)
        # where the holder's blocks are, as the server sees them: through an admin ref
        value_off, _, _, lease, _, _ = r.execute_command("CXL", "GETREF", b"victim")
        r.execute_command("CXL", "RELEASE", lease)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        killed = time.monotonic()

        r.delete(b"victim")
        with open(server.arena_path, "rb") as f:
            arena = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
        try:
            # churn through four times maxmemory while the orphaned leases run
            for n in range(64):
                r.set(b"churn%d" % n, bytes([n]) * VALUE)
            assert time.monotonic() - killed < LEASE_MS / 1000, "churn too slow for the lease"
            assert arena[value_off:value_off + VALUE] == victim     # the pinned block, untouched
            assert r.get(b"never") is None
            fields = info(r)
            assert (fields["leases-refs"], fields["leases-slots"]) == (1, 1)
            used = r.info("memory")["used_memory"]

            # the reference ends at its expiry, the reservation one period later
            deadline = killed + 2 * LEASE_MS / 1000 + 2.0
            while (info(r)["leases-slots"] or info(r)["leases-refs"]) and time.monotonic() < deadline:
                time.sleep(0.05)
            fields = info(r)
            assert (fields["leases-refs"], fields["leases-slots"]) == (0, 0)
            assert time.monotonic() - killed >= 2 * LEASE_MS / 1000 - 0.1
            assert r.info("memory")["used_memory"] <= used - 2 * VALUE   # both blocks freed
            assert r.get(b"never") is None
            # freed means reusable: churn until the reference's old block is written over
            for n in range(64, 256):
                r.set(b"churn%d" % (n % 64), bytes([n % 256]) * VALUE)
                if arena[value_off:value_off + 16] != victim[:16]:
                    break
            assert arena[value_off:value_off + 16] != victim[:16], "the freed block was never reused"
        finally:
            arena.close()
        assert r.execute_command("DEBUG", "ARENA-CHECK") == []
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
            holder.wait()
        r.close()
        server.close()


def test_lease_counters_in_info_and_metrics():
    """What operators watch for leaking clients: leases held, granted, and those that ran
    out instead of being released, in INFO arena and in the Prometheus exposition."""
    port = free_port()
    server = cxl_server(**{"cxl-lease-ms": 200, "metrics-port": port}).start()
    try:
        r = unix_client(server)
        r.set(b"k", b"v")
        lease = r.execute_command("CXL", "GETREF", b"k")[3]
        r.execute_command("CXL", "RELEASE", lease)                 # released: not expired
        r.execute_command("CXL", "MGETREF", b"k", b"k")             # two left to run out
        slot = r.execute_command("CXL", "RESERVE", b"new", 3)[0]
        r.execute_command("CXL", "COMMIT", slot)
        r.execute_command("CXL", "RESERVE", b"never", 3)           # runs out, uncommitted
        held = r.info("arena")
        assert (held["cxl_leases_refs"], held["cxl_leases_slots"]) == (2, 1)
        time.sleep(0.2 * 2 + 0.3)                                   # a slot is freed a period late
        fields = r.info("arena")
        assert {k: v for k, v in fields.items() if k.startswith("cxl_")} == {
            "cxl_leases_refs": 0, "cxl_leases_slots": 0, "cxl_leased_bytes": 0,
            "cxl_refs_granted": 3, "cxl_slots_granted": 2, "cxl_refs_expired": 2,
            "cxl_slots_expired": 1, "cxl_refs_refused": 0, "cxl_slots_refused": 0,
            "cxl_slots_committed": 1}
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            samples = {(s.name, s.labels.get("kind")): s.value
                       for family in text_string_to_metric_families(response.read().decode())
                       for s in family.samples}
        assert samples[("cxlredis_cxl_leases", "ref")] == 0
        assert samples[("cxlredis_cxl_leases_granted_total", "ref")] == 3
        assert samples[("cxlredis_cxl_leases_expired_total", "ref")] == 2
        assert samples[("cxlredis_cxl_leases_expired_total", "slot")] == 1
        assert samples[("cxlredis_cxl_slots_committed_total", None)] == 1
    finally:
        server.close()
