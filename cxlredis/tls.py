"""TLS for client connections: the listeners on tls-port and the context they use.

The tls-* options map onto Python's `ssl` module; the event loop (uvloop or
asyncio) runs the TLS records itself and hands decrypted bytes to the same
BufferedProtocol `Client` as the plain port, so a large value argument is still
decrypted straight into its arena slot (one copy, the decryption itself).

Redis reloads its TLS context when a tls-* option is set, and new connections
use the new context while established ones keep theirs. The listeners hold one
`_SwitchableContext` for their lifetime and it hands every new connection the
latest context, so a reload is one synchronous assignment: no listener is
re-created and no connection is refused meanwhile.
"""
import asyncio
import ctypes
import errno
import logging
import re
import ssl
import warnings

import _ssl

from .config import ConfigSetError

log = logging.getLogger("cxlredis")

# Options the context is built from: setting one rebuilds it while TLS is on.
CONTEXT_OPTIONS = ("tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-ca-cert-file",
                   "tls-ca-cert-dir", "tls-protocols", "tls-ciphers", "tls-ciphersuites",
                   "tls-prefer-server-ciphers")

# Redis's reply texts for a failed CONFIG SET; the reason goes to the log.
UPDATE_FAILED = "Unable to update TLS configuration. Check server logs."
LISTEN_FAILED = "Unable to listen on this port. Check server logs."
BIND_FAILED = "Failed to bind to specified addresses."

_VERIFY_MODES = {"yes": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL, "no": ssl.CERT_NONE}
_PROTOCOLS = {"tlsv1": ssl.TLSVersion.TLSv1, "tlsv1.1": ssl.TLSVersion.TLSv1_1,
              "tlsv1.2": ssl.TLSVersion.TLSv1_2, "tlsv1.3": ssl.TLSVersion.TLSv1_3}
_DEFAULT_PROTOCOLS = (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)   # Redis's default
_SSL_ERROR_TEXT = re.compile(r"^\[[^\]]*\]\s*(.*?)\s*\(_ssl\.c:\d+\)$")


def listen_failure(kind, option, hosts, port, error):
    """The start-up error for a listening socket that cannot be made, with the fix when
    the port is taken (kind: "TCP" or "TLS"; option: the port's option name)."""
    text = f"Could not create server {kind} listening socket {' '.join(hosts)}:{port}: {error.strerror or error}"
    if error.errno == errno.EADDRINUSE:
        text += f" (another process listens there: stop it, or choose another {option})"
    return text


class TLSConfigError(Exception):
    """The options do not make a usable context; str(self) says why, in Redis's log wording."""


def build_context(cfg) -> ssl.SSLContext:
    """A server context from the tls-* options, checked in the order Redis checks them."""
    cert, key = cfg["tls-cert-file"], cfg["tls-key-file"]
    ca_file, ca_dir = cfg["tls-ca-cert-file"], cfg["tls-ca-cert-dir"]
    if not cert:
        raise TLSConfigError("No tls-cert-file configured!")
    if not key:
        raise TLSConfigError("No tls-key-file configured!")
    if cfg["tls-auth-clients"] != "no" and not (ca_file or ca_dir):
        raise TLSConfigError("Either tls-ca-cert-file or tls-ca-cert-dir must be specified "
                             "when tls-auth-clients is enabled!")
    lowest, highest = _protocol_range(cfg["tls-protocols"])

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # TLSv1 and TLSv1.1 are deprecated
        context.minimum_version, context.maximum_version = lowest, highest
    try:
        # Parsed alone first so a bad certificate is not blamed on the key.
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_verify_locations(cafile=cert)
    except (OSError, ValueError) as error:
        raise TLSConfigError(f"Failed to load certificate: {cert}: {_reason(error)}") from None
    try:
        # A password (even empty) keeps OpenSSL from prompting on the terminal for an encrypted key.
        context.load_cert_chain(cert, key, password=cfg["tls-key-file-pass"])
    except (OSError, ValueError) as error:
        raise TLSConfigError(f"Failed to load private key: {key}: {_reason(error)}") from None
    if ca_file or ca_dir:
        try:
            context.load_verify_locations(cafile=ca_file or None, capath=ca_dir or None)
        except (OSError, ValueError) as error:
            raise TLSConfigError("Failed to configure CA certificate(s) file/directory: "
                                 + _reason(error)) from None
    context.verify_mode = _VERIFY_MODES[cfg["tls-auth-clients"]]
    if cfg["tls-prefer-server-ciphers"]:
        context.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:   # Python turns it on by default; Redis leaves it off unless asked
        context.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    if cfg["tls-ciphers"]:
        try:
            context.set_ciphers(cfg["tls-ciphers"])
        except ssl.SSLError:
            raise TLSConfigError(f"Failed to configure ciphers: {cfg['tls-ciphers']}") from None
    if cfg["tls-ciphersuites"]:
        _set_ciphersuites(context, cfg["tls-ciphersuites"])
    return context


def _protocol_range(text):
    """tls-protocols → (lowest, highest) version; empty means TLSv1.2 and TLSv1.3.

    OpenSSL enables a contiguous range, so "TLSv1 TLSv1.3" enables everything between.
    """
    words = text.lower().split()
    if not words:
        return _DEFAULT_PROTOCOLS
    if any(word not in _PROTOCOLS for word in words):
        raise TLSConfigError("Invalid tls-protocols specified. Use a combination of "
                             "'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
    versions = sorted(_PROTOCOLS[word] for word in words)
    return versions[0], versions[-1]


def _reason(error):
    """The readable part of an ssl/OS error ("key values mismatch", "No such file or directory")."""
    if isinstance(error, ssl.SSLError):
        text = str(error.args[1]) if len(error.args) > 1 else str(error)
        found = _SSL_ERROR_TEXT.match(text)
        text = found.group(1) if found else text
        if text == "PEM lib":   # all OpenSSL says about a wrong passphrase or a non-PEM file
            return "unreadable PEM data (not PEM, or wrong tls-key-file-pass)"
        return text
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error)


def _set_ciphersuites(context, suites):
    """SSL_CTX_set_ciphersuites on the context's SSL_CTX (TLSv1.3 suites).

    Python's ssl module has no call for it, so this goes to the libssl that the
    _ssl module is linked against, through ctypes. The SSL_CTX pointer is the
    first field after the object header of an SSLContext. The result is checked
    against get_ciphers(), so a layout that ever differed would be reported,
    not silently ignored.
    """
    set_suites = ctypes.CDLL(_ssl.__file__).SSL_CTX_set_ciphersuites
    set_suites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    set_suites.restype = ctypes.c_int
    ssl_ctx = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
    if not set_suites(ssl_ctx, suites.encode("ascii", "replace")):
        raise TLSConfigError(f"Failed to configure ciphersuites: {suites}")
    enabled = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.3"}
    if not enabled <= set(suites.split(":")):
        raise TLSConfigError(f"Failed to configure ciphersuites: {suites} "
                             "(this Python's ssl module cannot be configured for it)")


class _SwitchableContext(ssl.SSLContext):
    """What the listeners are given: each new connection gets `current`'s SSLObject.

    An event loop makes a TLS connection's SSLObject with `context.wrap_bio()`
    (the only public way to make one), so delegating that call is enough.
    """

    current: ssl.SSLContext

    def wrap_bio(self, incoming, outgoing, server_side=False, server_hostname=None, session=None):
        return self.current.wrap_bio(incoming, outgoing, server_side, server_hostname, session)


class TLSListeners:
    """The TLS listeners (one per bind address on tls-port) and their context.

    Follows CONFIG SET of tls-port, bind, tls-auth-clients and the context
    options. `new_connection()` makes the protocol of an accepted connection and
    `bind_tcp(hosts, port, backlog) -> [listening sockets]` is the server's socket
    binder (both passed in: server.py imports this module).
    """

    def __init__(self, config, new_connection, bind_tcp):
        self.config = config
        self._new_connection = new_connection
        self._bind_tcp = bind_tcp
        self.context = None        # the _SwitchableContext while TLS is on
        self.sockets = []          # bound listening sockets; each server listens on a dup
        self.bound = ((), 0)       # (hosts, port) of self.sockets
        self.listeners = []
        cfg = config
        for name in CONTEXT_OPTIONS:
            cfg.on_change(name, self._reload)
        cfg.on_change("tls-auth-clients", self._set_verify_mode)
        cfg.on_change("tls-port", lambda _port: self._rebind(LISTEN_FAILED))
        cfg.on_change("bind", lambda _hosts: self._rebind(BIND_FAILED))

    def bind(self):
        """Build the context and bind tls-port, if set; a bad option or a busy port ends the
        process (at start-up, before the arena exists)."""
        cfg = self.config
        if not cfg["tls-port"]:
            return
        try:
            self.context = self._switchable(build_context(cfg))
        except TLSConfigError as error:
            raise SystemExit(f"Failed to configure TLS: {error}") from None
        try:
            sockets = self._bind_tcp(cfg["bind"], cfg["tls-port"], cfg["tcp-backlog"])
        except OSError as error:
            raise SystemExit(listen_failure("TLS", "tls-port", cfg["bind"], cfg["tls-port"], error)) from None
        self.sockets, self.bound = sockets, (cfg["bind"], cfg["tls-port"])

    async def start(self):
        """Serve the sockets bind() bound."""
        if self.sockets:
            await self._serve(self.sockets)

    def close(self):
        for listener in self.listeners:
            listener.close()
        for sock in self.sockets:
            sock.close()
        self.listeners, self.sockets, self.bound = [], [], ((), 0)

    # --- CONFIG SET ----------------------------------------------------------
    @staticmethod
    def _switchable(context):
        switchable = _SwitchableContext(ssl.PROTOCOL_TLS_SERVER)
        switchable.current = context
        return switchable

    def _new_context(self):
        try:
            return build_context(self.config)
        except TLSConfigError as error:
            log.warning("%s", error)
            raise ConfigSetError(UPDATE_FAILED) from None

    def _reload(self, _value):
        # While TLS is off the options are only stored, as in Redis: setting tls-port checks them.
        if self.context is not None:
            self.context.current = self._new_context()

    def _set_verify_mode(self, mode):
        # Read per connection in Redis, so no rebuild (which could fail on unrelated options).
        if self.context is not None:
            self.context.current.verify_mode = _VERIFY_MODES[mode]

    def _rebind(self, failure_text):
        """Listen on the current bind/tls-port: old sockets closed first (the addresses may
        overlap), the old ones bound again if the new ones cannot be."""
        cfg = self.config
        wanted = (cfg["bind"], cfg["tls-port"])
        if wanted == self.bound:
            return
        if not wanted[1]:
            self.close()
            self.context = None
            return
        context = self.context or self._switchable(self._new_context())
        previous = self.bound
        self.close()
        try:
            sockets = self._bind_tcp(*wanted, cfg["tcp-backlog"])
        except OSError as error:
            log.warning("Could not create server TLS listening socket %s:%s: %s",
                        " ".join(wanted[0]), wanted[1], error)
            self._restore(previous)
            raise ConfigSetError(failure_text) from None
        self.context, self.sockets, self.bound = context, sockets, wanted
        asyncio.get_running_loop().create_task(self._serve(sockets))

    def _restore(self, previous):
        if not previous[1]:
            return
        try:
            self.sockets = self._bind_tcp(*previous, self.config["tcp-backlog"])
        except OSError as error:
            log.warning("TLS listener lost: could not bind its previous addresses again: %s", error)
            self.context = None
            return
        self.bound = previous
        asyncio.get_running_loop().create_task(self._serve(self.sockets))

    async def _serve(self, sockets):
        loop = asyncio.get_running_loop()
        for sock in sockets:
            if sockets is not self.sockets:
                return      # rebound meanwhile: these sockets are closed
            listener = await loop.create_server(self._new_connection, sock=sock.dup(),
                                                ssl=self.context, backlog=self.config["tcp-backlog"])
            if sockets is not self.sockets:
                listener.close()
                return
            self.listeners.append(listener)
