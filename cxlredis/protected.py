"""Redis 7's protected actions: DEBUG (enable-debug-command) and CONFIG SET of the
protected options (enable-protected-configs), each `no`, `yes` or `local`."""
from .monitoring import is_unix_client

DEBUG_NOT_ALLOWED = (
    'ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you '
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")
_LOOPBACK = ("127.0.0.1", "::1")     # exactly Redis's islocalClient: not 127.0.0.2, not ::ffff:127.0.0.1


def allowed(c, option):
    """Whether client c may do what `option` (enable-debug-command, enable-protected-configs)
    guards: yes, or local and c came through the unix socket or from a loopback address."""
    setting = c.server.config[option]
    if setting != "local":
        return setting == "yes"
    if is_unix_client(c):
        return True
    peer = c.transport.get_extra_info("peername") if c.transport is not None else None
    return isinstance(peer, tuple) and peer[0] in _LOOPBACK
