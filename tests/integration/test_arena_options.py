"""Arena backing options, through the real server: prefault, huge pages, NUMA binding."""
import os
import subprocess
import sys

from conftest import free_port


def rss_bytes(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Rss:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no Rss line")


def test_prefault_populates_the_arena(cxl_factory):
    lazy = cxl_factory(**{"arena-size": "64mb"})
    eager = cxl_factory(**{"arena-size": "64mb", "arena-prefault": "yes"})
    assert rss_bytes(eager.pid) - rss_bytes(lazy.pid) > 48 << 20
    eager.client().set("k", "v")
    assert eager.client().get("k") == b"v"


def test_hugepages_and_numa_node_zero_start(cxl_factory):
    srv = cxl_factory(**{"arena-hugepages": "yes", "arena-numa-node": "0"})
    c = srv.client()
    c.set("k", b"x" * 100_000)
    assert c.get("k") == b"x" * 100_000


def test_missing_numa_node_is_a_clear_startup_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "cxlredis", "--port", str(free_port()),
                           "--arena-path", str(tmp_path / "a.arena"), "--arena-size", "16mb",
                           "--arena-numa-node", "200"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    fatal = [line for line in proc.stderr.splitlines() if "NUMA node 200" in line]
    assert len(fatal) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert os.listdir(tmp_path) == []       # the arena file it had created is gone again
