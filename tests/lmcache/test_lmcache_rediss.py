"""rediss:// : LMCache's RedisConnector over TLS (mutual, verified both ways).

Runs once the server has a TLS listener (CONFIG GET tls-port answers);
until then it skips and says so.  Certificates come from the openssl
command, made fresh in a temporary directory.
"""
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from conftest import free_port, parse_reply, raw_connection
from lmcache_driver import SMALL_CHUNK, LMCacheConnector, missing_requirements, payload

_missing = missing_requirements()
if _missing:
    pytest.skip(f"LMCache is not installed: {_missing}", allow_module_level=True)

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="the openssl command is not installed")


def _openssl(directory, *args):
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    directory = tmp_path_factory.mktemp("lmcache-tls")
    new_key = ["-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    _openssl(directory, "req", "-x509", "-new", *new_key, "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/O=cxlredis lmcache tests/CN=ca")
    (directory / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                       "extendedKeyUsage=serverAuth,clientAuth\n")
    for name in ("server", "client"):
        _openssl(directory, "req", "-new", *new_key, "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/O=cxlredis lmcache tests/CN={name}")
        _openssl(directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", f"{name}.crt")
    return SimpleNamespace(**{f"{name}_{part}": str(directory / f"{name}.{part}")
                              for name in ("ca", "server", "client") for part in ("crt", "key")})


def has_tls_listener(server) -> bool:
    with raw_connection(server.port) as conn:
        return parse_reply(conn.request("CONFIG", "GET", "tls-port")) != {}


@pytest.fixture
def tls_server(cxl_factory, certs):
    probe = cxl_factory()
    if not has_tls_listener(probe):
        pytest.skip("the server has no TLS listener yet: CONFIG GET tls-port answers nothing")
    probe.close()
    server = cxl_factory(tls_port=free_port(), tls_cert_file=certs.server_crt,
                         tls_key_file=certs.server_key, tls_ca_cert_file=certs.ca_crt,
                         tls_auth_clients="yes", arena_size="256mb")
    server.tls_port = int(server.options["tls-port"])
    return server


def test_redis_connector_over_tls(tls_server, certs):
    url = (f"rediss://127.0.0.1:{tls_server.tls_port}?ssl_cert_reqs=required"
           f"&ssl_ca_certs={certs.ca_crt}&ssl_certfile={certs.client_crt}"
           f"&ssl_keyfile={certs.client_key}")
    raw = tls_server.client()
    with LMCacheConnector(url, SMALL_CHUNK, max_chunks=32) as lm:
        single, batch, missing = [0xB001, 0xB002], list(range(0xB100, 0xB118)), 0xBFFF
        assert lm.exists(single) == [False, False]
        lm.put(single, version=1)
        lm.batched_put(batch, version=1)
        assert raw.dbsize() == 2 * (len(single) + len(batch))   # <key>kv_bytes + <key>metadata
        assert lm.exists(single + [missing]) == [True, True, False]
        assert lm.exists_sync(single) == [True, True]
        assert lm.contains(batch) == len(batch)
        assert lm.contains(batch[:5] + [missing] + batch[5:]) == 5
        assert lm.get(single + [missing]) == lm.expected(single, 1) + [None]
        assert lm.get_prefix(batch) == lm.expected(batch, 1)
        kv_key = (lm.key_strings(single[:1])[0] + "kv_bytes").encode()
        assert raw.get(kv_key) == payload(single[0], 1, lm.chunk_bytes)

        lm.put(single, version=2)
        assert lm.get(single) == lm.expected(single, 2)
    raw.close()
