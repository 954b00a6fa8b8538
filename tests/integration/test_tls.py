"""TLS: the tls-port listener, client certificates, CONFIG GET/SET of the tls-*
options and startup errors, each run against cxlredis and a real redis-server
started with the same options (Debian's redis-server is built with TLS), plus
redis-py rediss:// (RESP2 and RESP3), redis-cli --tls, a 32 MiB value, and
cxlredis on the stock asyncio loop.

Certificates are made by the openssl command in a temporary directory: a CA,
a server certificate for 127.0.0.1/127.0.0.2/localhost, a client certificate,
a second server certificate (reload tests), an encrypted copy of the server
key, and a "rogue" CA with a client certificate it signed.
"""
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import redis

from conftest import (REPO_ROOT, TARGET, ConnectionClosed, RawConnection, ServerProcess,
                      free_port, parse_reply, raw_connection)

pytestmark = [
    pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl command is not installed"),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server (the oracle) is not installed"),
]

KINDS = list(dict.fromkeys([TARGET, "redis"]))     # the server under test, then the oracle
KEY_PASS = "s3cret pass"
UPDATE_FAILED = "Unable to update TLS configuration. Check server logs."


# ---------------------------------------------------------------- certificates

def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def _issue(directory, name, subject, ca):
    """A P-256 key and a certificate for it signed by `ca` (a name in directory)."""
    _openssl("req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", f"{name}.crt",
             cwd=directory)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("certs")
    (directory / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1,IP:127.0.0.2,DNS:localhost\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n")
    for ca in ("ca", "rogue-ca"):
        _openssl("req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
                 "ec_paramgen_curve:prime256v1", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                 "-days", "2", "-subj", f"/O=cxlredis tests/CN={ca}", cwd=directory)
    _issue(directory, "server", "/O=cxlredis tests/CN=server", "ca")
    _issue(directory, "other-server", "/O=cxlredis tests/CN=other-server", "ca")
    _issue(directory, "client", "/O=cxlredis tests/CN=client", "ca")
    _issue(directory, "rogue", "/O=cxlredis tests/CN=rogue", "rogue-ca")
    _openssl("ec", "-in", "server.key", "-out", "encrypted.key", "-aes256",
             "-passout", f"pass:{KEY_PASS}", cwd=directory)
    (directory / "ca-dir").mkdir()
    shutil.copy(directory / "ca.crt", directory / "ca-dir" / "ca.crt")
    _openssl("rehash", "ca-dir", cwd=directory)
    return SimpleNamespace(dir=directory, **{
        name.replace("-", "_").replace(".", "_"): str(directory / name)
        for name in ("ca.crt", "rogue-ca.crt", "server.crt", "server.key", "other-server.crt",
                     "other-server.key", "client.crt", "client.key", "rogue.crt", "rogue.key",
                     "encrypted.key", "ca-dir")})


def base_options(certs):
    """The TLS options every server here starts with (CONFIG SET puts them back)."""
    return {"tls-cert-file": certs.server_crt, "tls-key-file": certs.server_key,
            "tls-key-file-pass": "", "tls-ca-cert-file": certs.ca_crt, "tls-ca-cert-dir": "",
            "tls-auth-clients": "yes", "tls-protocols": "", "tls-ciphers": "",
            "tls-ciphersuites": "", "tls-prefer-server-ciphers": "no"}


# ---------------------------------------------------------------- TLS clients

def client_context(certs, identity="client", *, maximum=None, ciphers=None):
    """A verifying client context presenting `identity`'s certificate (None: no certificate)."""
    context = ssl.create_default_context(cafile=certs.ca_crt)
    if identity is not None:
        context.load_cert_chain(getattr(certs, f"{identity}_crt"), getattr(certs, f"{identity}_key"))
    if maximum is not None:
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(ciphers)
    return context


def tls_connection(port, context, host="127.0.0.1", timeout=5.0) -> RawConnection:
    conn = RawConnection(port, host=host, timeout=timeout)
    try:
        conn.sock = context.wrap_socket(conn.sock, server_hostname=host)
    except BaseException:
        conn.close()
        raise
    return conn


def tls_ping(port, context, host="127.0.0.1"):
    """"PONG", or "rejected" when the handshake or the first exchange fails.

    In TLS 1.3 the client finishes its handshake before the server has checked
    the client's certificate, so a rejection can show up on the first read.
    """
    try:
        with tls_connection(port, context, host) as conn:
            return parse_reply(conn.request("PING"))
    except (OSError, ConnectionClosed):     # ssl.SSLError is an OSError
        return "rejected"


def peer_name(port, context):
    with tls_connection(port, context) as conn:
        return dict(part[0] for part in conn.sock.getpeercert()["subject"])["commonName"]


def negotiated(port, context):
    with tls_connection(port, context) as conn:
        assert conn.request("PING") == b"+PONG\r\n"
        return conn.sock.version(), conn.sock.cipher()[0]


def ask(server, *args):
    with raw_connection(server.port) as conn:
        return parse_reply(conn.request(*args))


def config_get(server, pattern):
    flat = ask(server, "CONFIG", "GET", pattern)
    return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}


# ---------------------------------------------------------------- servers

class TLSServer(ServerProcess):
    """A server with a TLS port; with `port 0` it is ready when a TLS PING answers."""

    def __init__(self, kind, certs, **options):
        self.certs = certs
        self.tls_port = free_port()
        super().__init__(kind, {"tls-port": self.tls_port, **base_options(certs), **options})

    def _answers_ping(self):
        if str(self.options.get("port")) != "0":
            return super()._answers_ping()
        return tls_ping(self.tls_port, client_context(self.certs)) == "PONG"


@pytest.fixture(scope="module")
def servers(certs):
    """One server of each kind, started with the same TLS options."""
    started = {}
    try:
        for kind in KINDS:
            started[kind] = TLSServer(kind, certs)
            started[kind].start()
        yield started
    finally:
        for server in started.values():
            server.close()


@pytest.fixture(params=KINDS)
def server(request, servers, certs):
    """Each test runs on both kinds; the TLS options are put back afterwards."""
    server = servers[request.param]
    yield server
    flat = [part for pair in base_options(certs).items() for part in pair]
    assert ask(server, "CONFIG", "SET", *flat) == "OK"
    assert ask(server, "FLUSHALL") == "OK"


@pytest.fixture
def start(certs):
    started = []

    def factory(kind, server_class=TLSServer, **options):
        server = server_class(kind, certs, **{k.replace("_", "-"): v for k, v in options.items()})
        started.append(server)
        return server.start()

    try:
        yield factory
    finally:
        for server in started:
            server.close()


# ---------------------------------------------------------------- clients over TLS

@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_rediss_url(server, certs, protocol):
    client = redis.Redis.from_url(
        f"rediss://127.0.0.1:{server.tls_port}/0", protocol=protocol, ssl_ca_certs=certs.ca_crt,
        ssl_certfile=certs.client_crt, ssl_keyfile=certs.client_key, ssl_cert_reqs="required",
        socket_timeout=10)
    try:
        assert client.ping() is True
        assert client.set("greeting", "hello") is True
        assert client.get("greeting") == b"hello"
        assert client.incrby("counter", 5) == 5
        assert client.hset("h", mapping={"a": "1", "b": "2"}) == 2
        assert client.hgetall("h") == {b"a": b"1", b"b": b"2"}
        assert client.mget("greeting", "missing") == [b"hello", None]
        assert str(client.client_info()["resp"]) == str(protocol)     # as the server sees it
    finally:
        client.close()
    # The same data through the plain port.
    assert ask(server, "GET", "greeting") == b"hello"


def test_32mib_value_over_tls_with_stats(servers, certs):
    server = servers[TARGET]
    value = os.urandom(32 << 20)
    client = redis.Redis(host="127.0.0.1", port=server.tls_port, ssl=True, ssl_ca_certs=certs.ca_crt,
                         ssl_certfile=certs.client_crt, ssl_keyfile=certs.client_key,
                         socket_timeout=30)
    try:
        before = int(ask(server, "INFO", "stats").decode().split("total_net_output_bytes:")[1].split()[0])
        assert client.set("big", value) is True
        assert client.strlen("big") == len(value)
        assert client.get("big") == value
        assert client.getrange("big", len(value) - 4, -1) == value[-4:]
        after = int(ask(server, "INFO", "stats").decode().split("total_net_output_bytes:")[1].split()[0])
        assert after - before >= len(value)
    finally:
        client.delete("big")
        client.close()


def test_upload_cut_mid_value_over_tls_leaves_nothing(server, certs):
    value_len = 8 << 20
    with tls_connection(server.tls_port, client_context(certs)) as conn:
        conn.send(b"*3\r\n$3\r\nSET\r\n$4\r\ncut!\r\n$%d\r\n" % value_len)
        conn.send(b"x" * (value_len // 2))
    deadline = time.monotonic() + 5
    while ask(server, "CLIENT", "LIST").count(b"\n") > 1 and time.monotonic() < deadline:
        time.sleep(0.02)      # until the server has seen the disconnect
    assert ask(server, "EXISTS", "cut!") == 0
    assert ask(server, "DBSIZE") == 0


def test_redis_cli_tls(server, certs, tmp_path):
    usage = subprocess.run(["redis-cli", "--help"], capture_output=True, timeout=30)
    if b"--tls" not in usage.stdout + usage.stderr:
        pytest.skip("this redis-cli is built without TLS")
    env = dict(os.environ, HOME=str(tmp_path), REDISCLI_HISTFILE="/dev/null", TERM="dumb")

    def cli(*args, identity=True):
        tls = ["--tls", "--cacert", certs.ca_crt]
        if identity:
            tls += ["--cert", certs.client_crt, "--key", certs.client_key]
        return subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(server.tls_port), *tls, *args],
                              capture_output=True, timeout=30, env=env)

    assert cli("SET", "k", "v").stdout == b"OK\n"
    assert cli("GET", "k").stdout == b"v\n"
    assert cli("--no-raw", "INCR", "n").stdout == b"(integer) 1\n"
    assert cli("-3", "--no-raw", "HELLO", "3").returncode == 0
    refused = cli("PING", identity=False)
    assert refused.returncode != 0 and b"PONG" not in refused.stdout


# ---------------------------------------------------------------- client certificates

# mode → (no certificate, certificate from the trusted CA, certificate from another CA)
AUTH_OUTCOMES = {
    "yes": ("rejected", "PONG", "rejected"),
    "optional": ("PONG", "PONG", "rejected"),
    "no": ("PONG", "PONG", "PONG"),
}


@pytest.mark.parametrize("mode", list(AUTH_OUTCOMES))
def test_client_certificates(server, certs, mode):
    assert ask(server, "CONFIG", "SET", "tls-auth-clients", mode) == "OK"
    outcomes = tuple(tls_ping(server.tls_port, client_context(certs, identity))
                     for identity in (None, "client", "rogue"))
    assert outcomes == AUTH_OUTCOMES[mode]


def test_ca_cert_dir_instead_of_file(server, certs):
    assert ask(server, "CONFIG", "SET", "tls-ca-cert-file", "", "tls-ca-cert-dir", certs.ca_dir) == "OK"
    assert tls_ping(server.tls_port, client_context(certs, "client")) == "PONG"
    assert tls_ping(server.tls_port, client_context(certs, "rogue")) == "rejected"
    assert tls_ping(server.tls_port, client_context(certs, None)) == "rejected"


def test_plain_and_tls_ports_together(server, certs):
    with raw_connection(server.port) as plain, tls_connection(server.tls_port, client_context(certs)) as tls:
        assert plain.request("SET", "shared", "from plain") == b"+OK\r\n"
        assert tls.request("GET", "shared") == b"$10\r\nfrom plain\r\n"
        assert tls.request("SET", "shared", "from tls") == b"+OK\r\n"
        assert plain.request("GET", "shared") == b"$8\r\nfrom tls\r\n"
        listed = parse_reply(plain.request("CLIENT", "LIST")).decode()
    assert f"laddr=127.0.0.1:{server.tls_port} " in listed
    assert f"laddr=127.0.0.1:{server.port} " in listed


@pytest.mark.parametrize("kind", KINDS)
def test_tls_only_with_port_0(start, certs, kind):
    server = start(kind, port=0)
    assert tls_ping(server.tls_port, client_context(certs)) == "PONG"
    with tls_connection(server.tls_port, client_context(certs)) as conn:
        assert parse_reply(conn.request("CONFIG", "GET", "port")) == [b"port", b"0"]
        assert parse_reply(conn.request("CONFIG", "GET", "tls-port")) == [b"tls-port", b"%d" % server.tls_port]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=2).close()


@pytest.mark.parametrize("kind", KINDS)
def test_shutdown_with_tls_clients_connected(start, certs, kind):
    server = start(kind)
    with tls_connection(server.tls_port, client_context(certs)) as idle, \
            tls_connection(server.tls_port, client_context(certs)) as busy:
        assert idle.request("PING") == b"+PONG\r\n"
        busy.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n" + b"x" * 1000)   # mid-upload
        assert server.stop() == 0
        assert idle.is_closed()


# ---------------------------------------------------------------- CONFIG GET / SET

def test_config_get_tls_options_like_redis(servers, certs):
    ours, theirs = (config_get(servers[kind], "tls-*") for kind in (TARGET, "redis"))
    for kind, reply in zip((TARGET, "redis"), (ours, theirs)):
        assert reply.pop("tls-port") == str(servers[kind].tls_port)
    assert set(base_options(certs)) <= set(ours) <= set(theirs)
    assert {name: theirs[name] for name in ours} == ours
    assert ours["tls-auth-clients"] == "yes" and ours["tls-prefer-server-ciphers"] == "no"


BAD_SETS = [
    ("tls-cert-file", "/nonexistent/server.crt"),
    ("tls-cert-file", "{certs.server_key}"),           # a key, not a certificate
    ("tls-key-file", "{certs.other_server_key}"),      # does not match the certificate
    ("tls-key-file", "{certs.encrypted_key}"),         # encrypted, no passphrase set
    ("tls-ca-cert-file", "/nonexistent/ca.crt"),
    ("tls-ca-cert-file", ""),                          # no CA while clients must authenticate
    ("tls-cert-file", ""),
    ("tls-protocols", "TLSv1.4"),
    ("tls-ciphers", "NO-SUCH-CIPHER"),
    ("tls-ciphersuites", "TLS_NO_SUCH_SUITE"),
    ("tls-auth-clients", "maybe"),
    ("tls-prefer-server-ciphers", "sometimes"),
    ("tls-port", "70000"),
]


@pytest.mark.parametrize("name, value", BAD_SETS, ids=[f"{n}={v}" for n, v in BAD_SETS])
def test_bad_config_set_is_refused_and_the_old_context_stays(servers, certs, name, value):
    value = value.format(certs=certs)
    replies = {}
    for kind in KINDS:
        server = servers[kind]
        before = config_get(server, "tls-*")
        replies[kind] = ask(server, "CONFIG", "SET", name, value)
        assert config_get(server, "tls-*") == before, kind
        assert tls_ping(server.tls_port, client_context(certs)) == "PONG", kind
    assert replies[TARGET] == replies["redis"]
    if name not in ("tls-auth-clients", "tls-prefer-server-ciphers", "tls-port"):   # context options
        assert replies[TARGET] == (f"ERR CONFIG SET failed (possibly related to argument '{name}') - "
                                   + UPDATE_FAILED)


def test_tls_port_busy_or_moved(server, certs):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        reply = ask(server, "CONFIG", "SET", "tls-port", busy.getsockname()[1])
    assert reply == ("ERR CONFIG SET failed (possibly related to argument 'tls-port') - "
                     "Unable to listen on this port. Check server logs.")
    assert config_get(server, "tls-port") == {"tls-port": str(server.tls_port)}
    assert tls_ping(server.tls_port, client_context(certs)) == "PONG"

    moved = free_port()
    try:
        assert ask(server, "CONFIG", "SET", "tls-port", moved) == "OK"
        assert _eventually(lambda: tls_ping(moved, client_context(certs))) == "PONG"
        assert tls_ping(server.tls_port, client_context(certs)) == "rejected"   # refused
        assert ask(server, "CONFIG", "SET", "tls-port", 0) == "OK"
        assert tls_ping(moved, client_context(certs)) == "rejected"
    finally:
        assert ask(server, "CONFIG", "SET", "tls-port", server.tls_port) == "OK"
    assert _eventually(lambda: tls_ping(server.tls_port, client_context(certs))) == "PONG"


def _eventually(probe, timeout=5.0):
    """A listener set up by CONFIG SET serves once the event loop has run the change."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = probe()
        if outcome != "rejected" or time.monotonic() > deadline:
            return outcome
        time.sleep(0.05)


@pytest.mark.parametrize("kind", KINDS)
def test_config_set_bind_moves_the_tls_listener(start, certs, kind):
    server = start(kind, bind="127.0.0.1")
    with raw_connection(server.port) as admin:
        assert admin.request("CONFIG", "SET", "bind", "127.0.0.2") == b"+OK\r\n"
        assert _eventually(lambda: tls_ping(server.tls_port, client_context(certs), "127.0.0.2")) == "PONG"
        assert tls_ping(server.tls_port, client_context(certs), "127.0.0.1") == "rejected"   # refused
        assert admin.request("CONFIG", "SET", "bind", "127.0.0.1") == b"+OK\r\n"
    assert _eventually(lambda: tls_ping(server.tls_port, client_context(certs))) == "PONG"
    assert tls_ping(server.tls_port, client_context(certs), "127.0.0.2") == "rejected"


def test_tls_options_are_only_stored_while_tls_is_off(start, certs):
    for kind in KINDS:
        server = start(kind, tls_port=0)
        assert ask(server, "CONFIG", "SET", "tls-cert-file", "/nonexistent.crt") == "OK"
        assert ask(server, "CONFIG", "SET", "tls-port", server.tls_port) == (
            "ERR CONFIG SET failed (possibly related to argument 'tls-port') - " + UPDATE_FAILED)
        assert ask(server, "CONFIG", "SET", "tls-cert-file", certs.server_crt) == "OK"
        assert ask(server, "CONFIG", "SET", "tls-port", server.tls_port) == "OK"
        assert _eventually(lambda: tls_ping(server.tls_port, client_context(certs))) == "PONG", kind


def test_config_set_reloads_certificates(server, certs, tmp_path):
    context = client_context(certs)
    assert peer_name(server.tls_port, context) == "server"
    with tls_connection(server.tls_port, context) as established:
        assert ask(server, "CONFIG", "SET", "tls-cert-file", certs.other_server_crt,
                   "tls-key-file", certs.other_server_key) == "OK"
        assert peer_name(server.tls_port, context) == "other-server"
        # A file replaced under the same name is loaded again by CONFIG SET of that name.
        cert, key = tmp_path / "rotating.crt", tmp_path / "rotating.key"
        shutil.copy(certs.server_crt, cert)
        shutil.copy(certs.server_key, key)
        assert ask(server, "CONFIG", "SET", "tls-cert-file", str(cert), "tls-key-file", str(key)) == "OK"
        assert peer_name(server.tls_port, context) == "server"
        shutil.copy(certs.other_server_crt, cert)
        shutil.copy(certs.other_server_key, key)
        assert peer_name(server.tls_port, context) == "server"     # not reloaded behind our back
        assert ask(server, "CONFIG", "SET", "tls-cert-file", str(cert), "tls-key-file", str(key)) == "OK"
        assert peer_name(server.tls_port, context) == "other-server"
        # Connections made before keep working with what they negotiated.
        assert established.request("PING") == b"+PONG\r\n"


def test_encrypted_key_with_passphrase(server, certs):
    assert ask(server, "CONFIG", "SET", "tls-key-file", certs.encrypted_key,
               "tls-key-file-pass", KEY_PASS) == "OK"
    assert tls_ping(server.tls_port, client_context(certs)) == "PONG"
    assert ask(server, "CONFIG", "SET", "tls-key-file-pass", "wrong").startswith(
        "ERR CONFIG SET failed (possibly related to argument 'tls-key-file-pass')")


def test_protocols_ciphers_and_preference(server, certs):
    port = server.tls_port
    tls12 = ssl.TLSVersion.TLSv1_2
    assert negotiated(port, client_context(certs))[0] == "TLSv1.3"
    assert ask(server, "CONFIG", "SET", "tls-protocols", "TLSv1.3") == "OK"
    assert tls_ping(port, client_context(certs, maximum=tls12)) == "rejected"
    assert ask(server, "CONFIG", "SET", "tls-protocols", "tlsv1.2") == "OK"
    assert negotiated(port, client_context(certs))[0] == "TLSv1.2"

    assert ask(server, "CONFIG", "SET", "tls-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256",
               "tls-protocols", "TLSv1.3") == "OK"
    assert negotiated(port, client_context(certs)) == ("TLSv1.3", "TLS_CHACHA20_POLY1305_SHA256")

    # TLSv1.2: the client lists AES128 first, the server AES256 first.
    client_order = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384"
    assert ask(server, "CONFIG", "SET", "tls-protocols", "TLSv1.2",
               "tls-ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256") == "OK"
    assert negotiated(port, client_context(certs, ciphers=client_order))[1] == "ECDHE-ECDSA-AES128-GCM-SHA256"
    assert ask(server, "CONFIG", "SET", "tls-prefer-server-ciphers", "yes") == "OK"
    assert negotiated(port, client_context(certs, ciphers=client_order))[1] == "ECDHE-ECDSA-AES256-GCM-SHA384"
    assert ask(server, "CONFIG", "SET", "tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256") == "OK"
    assert tls_ping(port, client_context(certs, ciphers="ECDHE-ECDSA-AES256-GCM-SHA384")) == "rejected"


# ---------------------------------------------------------------- startup

STARTUP_ERRORS = [
    ({"tls-cert-file": "/nonexistent/server.crt"}, "Failed to load certificate: /nonexistent/server.crt"),
    ({"tls-key-file": "{certs.other_server_key}"}, "Failed to load private key: {certs.other_server_key}"),
    ({"tls-ca-cert-file": ""}, "tls-ca-cert-file or tls-ca-cert-dir must be specified"),
    ({"tls-protocols": "SSLv3"}, "Invalid tls-protocols specified."),
]


@pytest.mark.skipif(TARGET != "cxlredis", reason="runs cxlredis itself")
@pytest.mark.parametrize("options, message", STARTUP_ERRORS, ids=[m for _, m in STARTUP_ERRORS])
def test_startup_errors(certs, tmp_path, options, message):
    options = {name: value.format(certs=certs) for name, value in options.items()}
    message = message.format(certs=certs)
    args = []
    for name, value in {"port": str(free_port()), "tls-port": str(free_port()),
                        **base_options(certs), **options}.items():
        args += [f"--{name}", value]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    ours = subprocess.run([sys.executable, "-m", "cxlredis", *args, "--arena-path",
                           str(tmp_path / "a.arena"), "--arena-size", "16mb"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    theirs = subprocess.run(["redis-server", *args, "--save", "", "--dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert theirs.returncode != 0 and message in theirs.stdout + theirs.stderr
    output = ours.stdout + ours.stderr
    assert ours.returncode == 1, output
    assert "Traceback" not in output
    fatal = [line for line in output.splitlines() if "Failed to configure TLS" in line]
    assert len(fatal) == 1 and message in fatal[0], output


@pytest.mark.skipif(TARGET != "cxlredis", reason="runs cxlredis itself")
def test_tls_port_in_use_is_one_line_and_creates_nothing(certs, tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    args = []
    for name, value in {"port": str(free_port()), "tls-port": str(busy.getsockname()[1]),
                        **base_options(certs)}.items():
        args += [f"--{name}", value]
    with busy:
        ours = subprocess.run([sys.executable, "-m", "cxlredis", *args, "--arena-path", "a.arena",
                               "--arena-size", "16mb", "--unixsocket", "s.sock"],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert ours.returncode == 1, ours.stderr
    fatal = [line for line in ours.stderr.splitlines() if "TLS listening socket" in line]
    assert len(fatal) == 1 and "Address already in use" in fatal[0], ours.stderr
    assert "another tls-port" in fatal[0]
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(TARGET != "cxlredis", reason="runs cxlredis itself")
def test_startup_log_names_the_tls_listener(start):
    server = start("cxlredis", loglevel="notice")
    assert f"* Ready to accept connections tls 127.0.0.1:{server.tls_port}\n" in server.log
    assert f"* Ready to accept connections tcp 127.0.0.1:{server.port}\n" in server.log


def test_encrypted_key_at_startup(start, certs):
    server = start(TARGET, tls_key_file=certs.encrypted_key, tls_key_file_pass=KEY_PASS)
    assert tls_ping(server.tls_port, client_context(certs)) == "PONG"


# ---------------------------------------------------------------- the stock asyncio loop

class AsyncioTLSServer(TLSServer):
    """cxlredis with uvloop made unimportable: the CLI falls back to asyncio's own loop."""

    def _argv(self):
        argv = super()._argv()
        launcher = ("import sys; sys.modules['uvloop'] = None; "
                    "from cxlredis.cli import main; sys.exit(main(sys.argv[1:]))")
        return [sys.executable, "-c", launcher, *argv[3:]]     # argv[:3] is python -m cxlredis


@pytest.mark.skipif(TARGET != "cxlredis", reason="runs cxlredis itself")
def test_stock_asyncio_loop(start, certs):
    server = start("cxlredis", server_class=AsyncioTLSServer)
    assert "running on the stock asyncio loop" in server.log
    value = os.urandom(4 << 20)
    with tls_connection(server.tls_port, client_context(certs), timeout=20) as conn:
        assert conn.request("SET", "big", value) == b"+OK\r\n"
        assert conn.request("GET", "big") == b"$%d\r\n%s\r\n" % (len(value), value)
    assert tls_ping(server.tls_port, client_context(certs, None)) == "rejected"
    assert ask(server, "CONFIG", "SET", "tls-cert-file", certs.other_server_crt,
               "tls-key-file", certs.other_server_key) == "OK"
    assert peer_name(server.tls_port, client_context(certs)) == "other-server"
