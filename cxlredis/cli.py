"""`cxlredis-server [path/to.conf] [--option value ...]`, like redis-server."""
import asyncio
import logging
import os
import sys

from . import __version__
from ._store import ArenaError
from .acl import check_user_directive
from .arenas import Arenas
from .commands.registry import rename
from .config import Config, ConfigError
from .listeners import Listeners
from .server import Shutdown, serve, setup_logging
from .supervision import DEFAULT_PIDFILE, daemonize, notify_ready, supervisor
from .tenants import parse_directive

USAGE = """Usage: cxlredis-server [/path/to/cxlredis.conf] [options]
       cxlredis-server -v or --version
       cxlredis-server -h or --help

Every option of conf/cxlredis.conf can be given as --name value, e.g.
       cxlredis-server --port 7777 --arena-size 4gb
       cxlredis-server /etc/cxlredis/cxlredis.conf --loglevel verbose
With no configuration file the embedded defaults apply: 127.0.0.1:6379 and a
1 GiB arena in a /dev/shm file named after the port."""


def load_config(argv, environ=os.environ):
    """The configuration, with its `user` and `tenant` directives checked by the ACL and the
    tenants, and its `rename-command` directives applied to the command table: a bad one
    is a fatal config error at its line. Raises ConfigError."""
    config = Config.load(argv, environ)
    for index, args in enumerate(config.users):
        try:
            check_user_directive(args, [user[0] for user in config.users[:index]])
        except ValueError as error:
            raise config.declaration_error("user", index, str(error)) from None
    names = []
    for index, args in enumerate(config.tenants):
        try:
            name, _ = parse_directive(args)
        except ValueError as error:
            raise config.declaration_error("tenant", index, f"Error in tenant declaration: {error}") from None
        if name in names:
            raise config.declaration_error(
                "tenant", index, f"Error in tenant declaration '{name}': Duplicate tenant found")
        names.append(name)
    for index, (old, new) in enumerate(config.renames):
        try:
            rename(old, new)
        except ValueError as error:
            raise config.declaration_error("rename-command", index, str(error)) from None
    return config


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if argv[:1] in (["-v"], ["--version"]):
        print(f"cxlredis server v={__version__}")
        return 0
    try:
        config = load_config(argv)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    if config["dir"]:
        os.chdir(config["dir"])
    supervised = supervisor(config["supervised"])
    if config["daemonize"] and supervised is None:
        daemonize()
        if not config["pidfile"]:
            config.settle("pidfile", DEFAULT_PIDFILE)
    setup_logging(config)
    log = logging.getLogger("cxlredis")
    # The lines redis-server starts with, which tools and scripts wait for.
    log.warning("oO0OoO0OoO0Oo cxlredis is starting oO0OoO0OoO0Oo")
    log.warning("cxlredis version=%s, bits=64, commit=00000000, modified=0, pid=%d, just started",
                __version__, os.getpid())
    if config.path is None:
        log.warning("no config file specified, using the default config. "
                    "In order to specify a config file use cxlredis-server /path/to/cxlredis.conf")
    else:
        log.warning("Configuration loaded")
    for why, names in config.ignored_directives():
        log.warning("Accepted with no effect, as %s: %s", why, ", ".join(names))
    try:
        import uvloop
    except ImportError:
        uvloop = None
        log.warning("uvloop is not installed; running on the stock asyncio loop")
    runner = uvloop.run if uvloop is not None else asyncio.run
    try:
        # A busy port or a bad TLS setup stops the start before any file is made.
        listeners = Listeners(config)
        try:
            store = Arenas(config)
        except BaseException:
            listeners.close()
            raise
        runner(serve(config, listeners, store, Shutdown(), lambda: notify_ready(supervised, log)))
    except (ArenaError, SystemExit) as e:
        # A failed start (the server has removed what it created). SystemExit(1) was logged
        # where it was raised; any other carries the reason.
        if not isinstance(e, SystemExit) or not isinstance(e.code, int):
            report_fatal(log, config, f"Fatal: {e}" if isinstance(e, ArenaError) else str(e.code))
        return 1
    return 0


def report_fatal(log, config, message):
    """One line in the log, and one on stderr when the log does not go there."""
    log.warning("%s", message)
    if config["logfile"] or not log.isEnabledFor(logging.WARNING):
        print(message, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
