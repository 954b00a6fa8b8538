"""The audit log: security-relevant events as JSON lines in `audit-log-file`.

One line per event:

    {"time": "2026-11-30T02:34:13.953Z", "event": "auth_failure", "client_id": 7,
     "client_addr": "127.0.0.1:50412", "user": "default", "tenant": null,
     "details": {"command": "AUTH", "username": "alice"}}

Events: auth_success, auth_failure, acl_denied, acl_setuser, acl_deluser,
acl_load, acl_save, config_set, config_rewrite, config_resetstat, flushdb,
flushall, client_kill. `user` is the connection's user when the event
happened (for auth_success, the user it became). Passwords never appear:
password rules and password-like configuration values are redacted.

Each event is one write(2) on a file opened with O_APPEND, right away. These
events are rare next to ordinary commands, and a write to the page cache
costs microseconds, so the event loop is not held up; nothing waits in a
user-space buffer, so no event is lost when the process is killed, and a
line is never split. Before a line would take the file past
`audit-log-max-size`, the file is rotated: file.(N-1) → file.N, ...,
file → file.1, keeping `audit-log-max-files` rotated files. The CONFIG SET
that turns the log off or moves it is the last line of the file it leaves
(and the first of the new one).
"""
from __future__ import annotations

import datetime
import errno
import json
import logging
import os

from .config import ConfigSetError

log = logging.getLogger("cxlredis")

REDACTED = "(redacted)"


def _text(data) -> str:
    return bytes(data).decode("utf-8", "backslashreplace")


def sensitive_option(name: str) -> bool:
    """requirepass, masterauth, tls-key-file-pass...: values never logged."""
    name = name.lower()
    return "pass" in name or name == "masterauth"


def redacted_rule(rule) -> str:
    """An ACL SETUSER rule as logged: password rules (>, <, #, !) keep only their kind."""
    rule = _text(rule)
    return rule[0] + REDACTED if rule[:1] in (">", "<", "#", "!") else rule


def _config_set_details(c, argv):
    parameters = {}
    for i in range(2, len(argv), 2):
        name = _text(argv[i])
        parameters[name] = REDACTED if sensitive_option(name) else _text(argv[i + 1])
    return {"parameters": parameters}


def _flush_mode(argv):
    return _text(argv[1]).upper() if len(argv) > 1 else "SYNC"


# The details of the events that a command's success is (the table's `audit_event`),
# from its arguments.
COMMAND_EVENT_DETAILS = {
    "config_set": _config_set_details,
    "config_rewrite": lambda c, argv: {"file": c.services.config.path},
    "config_resetstat": lambda c, argv: {},
    "flushdb": lambda c, argv: {"db": c.db, "mode": _flush_mode(argv)},
    "flushall": lambda c, argv: {"mode": _flush_mode(argv)},
}


def _open_for_append(path):
    # Readable by the server's user only: the log names users, keys and addresses.
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)


class AuditLog:
    """Appends events to `audit-log-file` (off while it is empty), rotating by size."""

    def __init__(self, config):
        self.config = config
        self.path = ""
        self._fd = -1
        self._size = 0
        self._failing = False
        # The file a CONFIG SET audit-log-file just left: that command's own event
        # is its last line, so turning the log off or moving it is on record.
        self._left_fd = -1
        if config["audit-log-file"]:
            try:
                self._open(config["audit-log-file"])
            except OSError as e:
                log.warning("Can't open the audit log file '%s': %s", config["audit-log-file"],
                            e.strerror)
                raise SystemExit(1) from None
        config.on_change("audit-log-file", self._switch)

    def _open(self, path):
        """Start writing to `path` (at startup, and after a rotation)."""
        fd = _open_for_append(path)
        if self._fd >= 0:
            os.close(self._fd)
        self._fd, self.path = fd, path
        self._size = os.fstat(fd).st_size

    def _switch(self, path):
        """CONFIG SET audit-log-file: a path that cannot be opened refuses the change."""
        fd = -1
        if path:
            try:
                fd = _open_for_append(path)
            except OSError as e:
                raise ConfigSetError(f"Can't open the audit log file: {e.strerror}") from None
        self._close_left()
        self._left_fd, self._fd, self.path = self._fd, fd, path
        self._size = os.fstat(fd).st_size if fd >= 0 else 0

    def _close_left(self):
        if self._left_fd >= 0:
            os.close(self._left_fd)
            self._left_fd = -1

    def close(self):
        self._close_left()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    # -- events

    def record(self, client, event, tenant=None, **details):
        """Append one event about `client` (None for the server itself)."""
        if self._fd < 0 and self._left_fd < 0:
            return
        now = datetime.datetime.now(datetime.timezone.utc)
        entry = {
            "time": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
            "event": event,
            "client_id": client.id if client is not None else None,
            "client_addr": client.addr if client is not None else None,
            "user": _text(client.user.name) if client is not None else None,
            "tenant": client.tenant if client is not None else tenant,
            "details": details,
        }
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        if self._left_fd >= 0:
            try:
                self._append(self._left_fd, line)
            except OSError as e:
                log.warning("Can't write to the previous audit log file: %s", e.strerror)
            self._close_left()
        if self._fd >= 0:
            self._write(line)

    def after_command(self, c, spec, argv):
        """The event of a command that succeeded, when its spec names one."""
        event = spec.audit_event
        self.record(c, event, **COMMAND_EVENT_DETAILS[event](c, argv))

    def _write(self, line: bytes):
        try:
            limit = self.config["audit-log-max-size"]
            if limit and self._size and self._size + len(line) > limit:
                self._rotate()
            self._append(self._fd, line)
            self._size += len(line)
            self._failing = False
        except OSError as e:
            if not self._failing:   # one warning per outage, not one per event
                log.warning("Can't write to the audit log file '%s': %s", self.path, e.strerror)
                self._failing = True

    @staticmethod
    def _append(fd, line):
        written = 0
        while written < len(line):
            written += os.write(fd, line[written:])

    def _rotate(self):
        keep = self.config["audit-log-max-files"]
        path = self.path
        os.close(self._fd)
        self._fd = -1
        if keep:
            for n in range(keep - 1, 0, -1):
                try:
                    os.replace(f"{path}.{n}", f"{path}.{n + 1}")
                except FileNotFoundError:
                    pass
            os.replace(path, f"{path}.1")
        else:
            try:
                os.unlink(path)
            except OSError as e:
                if e.errno != errno.ENOENT:
                    raise
        self._open(path)
