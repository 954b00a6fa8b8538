"""Redis 7's protected actions: DEBUG (enable-debug-command) and CONFIG SET of the
protected options (enable-protected-configs), each `no`, `yes` or `local`."""

DEBUG_NOT_ALLOWED = (
    'ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you '
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")
_LOOPBACK = ("127.0.0.1", "::1")


def allowed(c, option):
    """Whether session c may do what `option` (enable-debug-command, enable-protected-configs)
    guards: yes, or local and c came through the unix socket or from a loopback address."""
    setting = c.services.config[option]
    if setting != "local":
        return setting == "yes"
    return c.local


def is_local_peer(peer):
    """Exactly Redis's islocalClient for a TCP peer address: not 127.0.0.2, not ::ffff:127.0.0.1."""
    return isinstance(peer, tuple) and peer[0] in _LOOPBACK
