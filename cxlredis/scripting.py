"""Lua scripting (EVAL, EVALSHA, SCRIPT) on a real Lua 5.1: lupa's lua51 module.

One Lua runtime, set up by lua/sandbox.lua as Redis's scripting environment (read-only
globals, Redis's builtins and the redis.* API), runs every script. It runs on one
worker thread so that the event loop is free while a script runs too long: past
busy-reply-threshold other clients get -BUSY and SCRIPT KILL reaches the script, as
in Redis. Until then the event loop waits for the script, as Redis is blocked while a
script runs; once the threshold passes, the script's own connection waits (suspended,
CallContext.suspended) and the loop goes on.

Everything a script does to the server still happens on the event loop thread:
redis.call hands its command to the loop (Run.ask) and waits for the reply, so no two
commands ever run at once. The worker thread only runs Lua.

Scripts are cached per namespace (a tenant's, or the administrators'), so one tenant's
SCRIPT EXISTS, EVALSHA or SCRIPT FLUSH never sees another's scripts; function libraries
(functions.py) are per namespace too. A function runs as a script does, on the same
worker and runtime, with its library's flags.

An EVAL under SCRIPT DEBUG (ldb.py) runs on the loop thread itself, its redis.call
commands answered there: the client steps through it, and nothing else is served meanwhile.
"""
import asyncio
import hashlib
import importlib.resources
import logging
import math
import os
import queue
import threading
import time

import lupa.lua51 as lua51

from ._resp import ReplyWriter
from .context import CallContext
from .errors import CommandError
from .functions import (ENGINE, NAME_ERROR, Function, Libraries, Library, parse_library, read_libraries,
                        save_libraries)
from .ldb import Children
from .lualibs import forget as forget_library_state, library_tables
from .lualibs.base import ScriptError, check_int, lua_number, number_text

log = logging.getLogger("cxlredis")

NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."
NOTBUSY = "NOTBUSY No scripts in execution right now."
UNKILLABLE = ("UNKILLABLE Sorry the script already executed write commands against the dataset. "
              "You can either wait the script termination or kill the server in a hard way "
              "using the SHUTDOWN NOSAVE command.")
BUSY_EVAL = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
BUSY_FUNCTION = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
# How long a library's code may run while FUNCTION LOAD loads it.
LOAD_TIMEOUT_MS = 500
SHEBANG_FLAGS = ("no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys")
# redis.log's levels (debug, verbose, notice, warning) as Python's
LOG_LEVELS = (logging.DEBUG, logging.DEBUG, logging.INFO, logging.WARNING)
# Replies inside a script are copied out at once: never pinned, never queued by reference.
COPY_EVERYTHING = 1 << 62


def sha1hex(data):
    return hashlib.sha1(data).hexdigest().encode()


def version_number(version):
    major, minor, patch = (int(part) for part in version.split("."))
    return (major << 16) | (minor << 8) | patch


class Rand48:
    """Redis's redisLrand48: the same sequence on every platform from the same seed (its
    initial state, or math.randomseed's), so math.random is deterministic as scripts must be."""

    MAX = (1 << 31) - 1

    def __init__(self):
        self.state = 0x1234ABCD330E      # its initial state, before any seed

    def seed(self, value):
        self.state = ((int(value) & 0xFFFFFFFF) << 16 | 0x330E) & ((1 << 48) - 1)

    def next(self):
        """A number in [0, 1): lrand48() % MAX / MAX, as Redis's math.random."""
        self.state = (0x5DEECE66D * self.state + 0xB) & ((1 << 48) - 1)
        return ((self.state >> 17) % self.MAX) / self.MAX


class Script:
    """A compiled script and what its shebang line declares."""

    __slots__ = ("sha", "function", "flags", "shebang")

    def __init__(self, sha, function, flags, shebang):
        self.sha = sha
        self.function = function
        self.flags = flags           # the shebang's flags (a set of names)
        self.shebang = shebang       # False: compatibility mode (no "#!lua" line)

    @property
    def label(self):
        """How errors and the slow-script log name it."""
        return self.sha


def parse_shebang(body):
    """(flags, whether there is a shebang, the body to compile) of a script: "#!lua
    flags=a,b" declares flags; the line becomes a comment so line numbers hold."""
    if not body.startswith(b"#!"):
        return set(), False, body
    end = body.find(b"\n")
    line = body[:end if end >= 0 else len(body)]
    parts = line[2:].split(b" ")
    if parts[0] != b"lua":
        raise CommandError("ERR Unexpected engine in script shebang: " + line.decode("utf-8", "replace"))
    flags = set()
    for option in parts[1:]:
        if not option:
            continue
        if not option.startswith(b"flags="):
            raise CommandError("ERR Unknown lua shebang option: " + option.decode("utf-8", "replace"))
        for flag in option[len(b"flags="):].split(b","):
            if not flag:
                continue
            name = flag.decode("utf-8", "replace")
            if name not in SHEBANG_FLAGS:
                raise CommandError("ERR Unexpected flag in script shebang: " + name)
            flags.add(name)
    return flags, True, b"--" + body[2:]


class Run:
    """One script in flight: the worker asks (a command to run) and the loop answers;
    the loop learns of the end the same way. Before the script went past the threshold
    the loop thread takes the requests itself (Scripts.run waits for them); after, each
    is posted to the loop (drain)."""

    def __init__(self, scripts, c, argv, script, keys, args, readonly, debugger=None):
        self.scripts = scripts
        self.caller = c
        self.argv = argv             # the caller's EVAL or FCALL (FUNCTION STATS shows it)
        self.script = script         # a Script or a functions.Function
        self.is_function = isinstance(script, Function)
        self.keys = keys
        self.args = args
        self.readonly = readonly
        self.compat = not script.shebang
        self.allow_oom = "allow-oom" in script.flags
        self.client = scripts.script_client(c)
        self.script_resp = 2         # redis.setresp: the protocol of redis.call's replies
        self.wrote = False           # a write command ran: SCRIPT KILL may not stop it any more
        self.kill = False
        self.suspended = False
        self.started = time.monotonic()
        self.requests = queue.SimpleQueue()      # worker → loop
        self.answers = queue.SimpleQueue()       # loop → worker
        self.lock = threading.Lock()
        self.loop = None
        self.debugger = debugger     # SCRIPT DEBUG's session (ldb.Session): all on the loop thread

    def duration_ms(self):
        return int((time.monotonic() - self.started) * 1000)

    # --- the worker's side
    def ask(self, request):
        """From the worker: have the loop thread run request, and wait for its answer.
        (Under SCRIPT DEBUG the script runs on the loop thread, which runs it at once.)"""
        if self.debugger is not None:
            self.scripts.handle(self, request)
        else:
            self.post(request)
        return self.answers.get()

    def post(self, request):
        with self.lock:
            self.requests.put(request)
            if self.suspended:
                self.loop.call_soon_threadsafe(self.drain)

    # --- the loop's side
    def suspend(self, loop):
        with self.lock:
            self.suspended = True
            self.loop = loop
            if not self.requests.empty():
                loop.call_soon(self.drain)

    def drain(self):
        while True:
            try:
                request = self.requests.get_nowait()
            except queue.Empty:
                return
            self.scripts.handle(self, request)


class Scripts:
    """The scripting engine and the script caches (see the module docstring).

    call(script_client, argv, run) runs one redis.call on the loop thread and returns
    (reply bytes, False) or (error text, True): dispatch.script_call, handed over by
    the composition root since dispatch sits above the command modules."""

    def __init__(self, config, call, monitoring, version):
        self.config = config
        self.call = call
        self.monitoring = monitoring
        self.version = version
        self.debug_children = Children()     # SCRIPT DEBUG YES sessions, forked (ldb.py)
        self.caches = {}             # namespace (tenant name, None) → {sha: Script}
        self.function_libraries = {}     # namespace → functions.Libraries
        self.functions_file = (os.path.join(config["dir"], config["functions-file"])
                               if config["functions-file"] else None)
        self.busy = None             # the Run gone past busy-reply-threshold, if any
        self.rand = Rand48()
        self.current = None          # the Run the worker is running
        self.jobs = queue.SimpleQueue()
        self.worker = None
        self.lua = lua51.LuaRuntime(encoding=None, unpack_returned_tuples=True,
                                    register_eval=False, register_builtins=False,
                                    attribute_filter=_no_attributes,
                                    max_memory=config["lua-memory-limit"])
        prelude = importlib.resources.files(__package__).joinpath("lua/sandbox.lua").read_bytes()
        null = self.lua.eval("newproxy(false)")       # cjson.null: a userdata of Lua's own
        self.engine = self.lua.execute(
            prelude, self._call, self._pcall, self._sha1hex, self._log, self._setresp,
            self._set_repl, self._random, self._randomseed, self._interrupted,
            lambda: self.current.script_resp, _unwrap, version.encode(), version_number(version),
            library_tables(self.lua, null, lambda: self.current.caller.tenant), null)
        # Looked up once: lupa reads a Lua table's field wrongly while a coroutine runs
        # (a tuple for the function), and redis.call may run inside one.
        self.parse_reply = self.engine.parse
        self.error_table = self.engine.error_table
        self.collect_garbage = self.lua.eval("collectgarbage")

    def fresh(self):
        """An engine of its own, with a runtime of its own, for a forked debugging session:
        this one's may be held by a thread the fork left behind (ldb.py)."""
        return Scripts(self.config, self.call, self.monitoring, self.version)

    # --- the cache
    def cache(self, namespace):
        return self.caches.setdefault(namespace, {})

    def load(self, namespace, body):
        """SCRIPT LOAD and EVAL: the cached script of body, compiled if new."""
        sha = sha1hex(body)
        cache = self.cache(namespace)
        script = cache.get(sha)
        if script is None:
            flags, shebang, source = parse_shebang(body)
            function, error = self.engine.compile(source, b"@user_script")
            if function is None:
                raise CommandError("ERR Error compiling script (new function): "
                                   + error.decode("utf-8", "surrogateescape"))
            script = cache[sha] = Script(sha, function, flags, shebang)
        return script

    def find(self, namespace, sha):
        return self.cache(namespace).get(bytes(sha).lower())

    def declared_flags(self, namespace, command, argv):
        """The flags the script or function of an EVAL-like or FCALL-like call declares (a
        set), or None when it declares none (no shebang: compatibility mode) or is not
        known yet: Redis's evalGetCommandFlags and fcallGetCommandFlags, which make a call
        a write, or not, before it runs (CLIENT PAUSE WRITE asks)."""
        if command.startswith("fcall"):
            function = self.libraries(namespace).function(argv[1])
            return function.flags if function is not None else None
        if command.startswith("evalsha"):
            script = self.find(namespace, argv[1]) if len(argv[1]) == 40 else None
        else:
            body = bytes(argv[1])
            script = self.cache(namespace).get(sha1hex(body))
            if script is None:
                try:
                    flags, shebang, _ = parse_shebang(body)
                except CommandError:
                    return None
                return flags if shebang else None
        return script.flags if script is not None and script.shebang else None

    def memory(self):
        """(bytes the Lua runtime holds, bytes of the function libraries' code, scripts
        cached): MEMORY STATS's lua.caches and functions.caches, and MEMORY DOCTOR's count."""
        lua = self.lua.get_memory_used() or 0
        code = sum(len(library.code) for libraries in self.function_libraries.values()
                   for library in libraries.libraries.values())
        return lua, code, sum(len(cache) for cache in self.caches.values())

    def flush(self, namespace):
        self.caches.pop(namespace, None)
        forget_library_state(namespace)

    # --- function libraries
    def libraries(self, namespace):
        return self.function_libraries.setdefault(namespace, Libraries())

    def change_libraries(self, namespace, change):
        """Run change(libraries) on a copy of namespace's libraries, install the result and
        keep it in functions-file; if that write fails, nothing changed."""
        libraries = self.libraries(namespace).copy()
        change(libraries)
        before = self.function_libraries.get(namespace)
        self.function_libraries[namespace] = libraries
        try:
            self.save_libraries()
        except OSError as e:
            self.function_libraries[namespace] = before
            raise CommandError(f"ERR cannot write the functions file {self.functions_file}: "
                               f"{e.strerror}") from None

    def forget_namespace(self, namespace):
        """A tenant is gone: its cached scripts and its libraries too."""
        self.caches.pop(namespace, None)
        forget_library_state(namespace)
        if self.function_libraries.pop(namespace, None) is not None:
            try:
                self.save_libraries()
            except OSError as e:
                log.warning("Cannot write the functions file %s: %s", self.functions_file, e.strerror)

    def save_libraries(self):
        if self.functions_file:
            save_libraries(self.functions_file, self.function_libraries)

    def load_saved_libraries(self):
        """At startup: the libraries functions-file keeps, each loaded again (one that no
        longer loads is logged and left out)."""
        if not self.functions_file or not os.path.exists(self.functions_file):
            return
        try:
            saved = read_libraries(self.functions_file)
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.warning("Ignoring the functions file %s: %s", self.functions_file, e)
            return
        for namespace, code in saved:
            libraries = self.libraries(namespace)
            try:
                libraries.add(self.load_library(code, libraries, replace=False), replace=False)
            except CommandError as e:
                log.warning("Function library of %s not loaded from %s: %s",
                            f"tenant {namespace}" if namespace else "the administrators",
                            self.functions_file, e)

    def load_library(self, code, libraries, replace):
        """FUNCTION LOAD's code, run to register its functions: a Library for libraries,
        not linked yet (Redis's functionsCreateWithLibraryCtx, up to the linking)."""
        engine, name, body = parse_library(code)
        if engine.upper() != ENGINE.encode():
            raise CommandError(f"ERR Engine '{engine.decode('utf-8', 'surrogateescape')}' not found")
        if name in libraries.libraries and not replace:
            raise CommandError(f"ERR Library '{name.decode('utf-8', 'replace')}' already exists")
        started = time.monotonic()
        known_flags = self.lua.table_from({flag.encode(): flag.encode() for flag in SHEBANG_FLAGS})
        registered, error = self.engine.load_library(body, known_flags, NAME_ERROR.encode(),
                                                     lambda: (time.monotonic() - started) * 1000,
                                                     LOAD_TIMEOUT_MS)
        if error is not None:
            raise CommandError("ERR " + error.decode("utf-8", "surrogateescape"))
        library = Library(name, code)
        for n in range(1, len(registered) + 1):
            function_name, function, description, flags = (registered[n][i] for i in range(1, 5))
            flags = {flag.decode() for flag in flags.values()}
            library.functions[function_name] = Function(function_name, function, description or None,
                                                        flags, library)
        if not library.functions:
            raise CommandError("ERR No functions registered")
        return library

    # --- running
    def script_client(self, c):
        """The session redis.call runs in: the caller's user, tenant and db, with a
        reply writer of its own (its protocol is the one redis.setresp chose)."""
        sc = CallContext(c.services, ReplyWriter(2, COPY_EVERYTHING), c.store, c.created,
                         c.dispatch_queued)
        sc.user, sc.authenticated, sc.tenant, sc.db = c.user, True, c.tenant, c.db
        sc.id, sc.addr, sc.local = c.id, "lua", c.local
        sc.in_script = True
        return sc

    def run(self, c, argv, script, numkeys, readonly, debugger=None):
        """Run script (or function) for c's EVAL-like (or FCALL) argv. Replies now, or
        (past busy-reply-threshold) suspends c and replies when the script ends; inside
        MULTI/EXEC it always waits. Under SCRIPT DEBUG (debugger: an ldb.Session) it runs
        here, on this thread, for as long as the client debugs it."""
        keys, args = argv[3:3 + numkeys], argv[3 + numkeys:]
        if debugger is not None:
            run = Run(self, c, argv, script, keys, args, readonly, debugger)
            self.handle(run, ("done", self._execute(run)))
            return
        # MONITOR shows the EVAL before the commands of its script (it is skip_monitor).
        self.monitoring.feed_now(c, argv)
        run = Run(self, c, argv, script, keys, args, readonly)
        self._start_worker()
        self.jobs.put(run)
        threshold = self.config["busy-reply-threshold"] / 1000
        may_suspend = threshold > 0 and c.multi is None
        while True:
            timeout = max(run.started + threshold - time.monotonic(), 0) if may_suspend else None
            try:
                request = run.requests.get(timeout=timeout)
            except queue.Empty:
                log.warning("Slow script detected: still in execution after %d milliseconds. "
                            "You can try killing the script using the %s command. "
                            "Script name is: %s.", threshold * 1000,
                            "FUNCTION KILL" if run.is_function else "SCRIPT KILL",
                            script.label.decode("utf-8", "replace"))
                self.busy = run
                c.suspended = True
                run.suspend(asyncio.get_running_loop())
                return
            if self.handle(run, request):
                return

    def handle(self, run, request):
        """One request of the worker (on the loop thread); True once the script ended."""
        kind, payload = request
        if kind == "call":
            resp, argv = payload
            try:
                run.client.set_protocol(resp)
                answer = self.call(run.client, argv, run)
            except Exception as e:  # the worker waits for an answer: it must get one
                log.exception("Internal error in a script's command")
                answer = f"ERR internal error: {type(e).__name__}".encode(), True
            run.answers.put(answer)
            return False
        self.current = None
        c = run.caller
        reply, failed, source, line, counted = payload
        if not failed:
            c.reply.raw(reply)
        else:
            text = reply.decode("utf-8", "surrogateescape")
            if source is not None and line is not None:
                text += (f" script: {run.script.label.decode('utf-8', 'replace')}, on "
                         f"{source.decode('utf-8', 'surrogateescape')}:{line}.")
            if counted:
                c.services.stats.error(text)
            c.reply.error(text)
        if self.busy is run:
            self.busy = None
            c.suspended = False
            c.resume()
        return True

    @property
    def busy_error(self):
        """What a command other than the allow_busy ones gets while a script runs too long."""
        return BUSY_FUNCTION if self.busy is not None and self.busy.is_function else BUSY_EVAL

    def kill(self, function):
        """SCRIPT KILL (function False) or FUNCTION KILL: stop the running script or
        function, unless it wrote; each command stops its own kind only."""
        run = self.busy
        if run is None:
            raise CommandError(NOTBUSY)
        if run.wrote:
            raise CommandError(UNKILLABLE)
        if run.is_function != function:
            raise CommandError(self.busy_error)
        run.kill = True

    # --- the worker thread
    def _start_worker(self):
        if self.worker is None:
            self.worker = threading.Thread(target=self._work, name="cxlredis-lua", daemon=True)
            self.worker.start()

    def _work(self):
        while True:
            run = self.jobs.get()
            run.post(("done", self._execute(run)))
            # Lua 5.1 collects no garbage when an allocation fails: a script that ran out
            # of memory would leave the next ones without any.
            if self.lua.get_memory_used() > self.config["lua-memory-limit"] // 2:
                self.collect_garbage()

    def _execute(self, run):
        """Run run's script on this thread: what handle() takes as "done"."""
        self.current = run
        try:
            keys = self.lua.table_from([bytes(key) for key in run.keys])
            args = self.lua.table_from([bytes(arg) for arg in run.args])
            debugger = (run.debugger.lua_side(self.lua, self.engine, self._pcall)
                        if run.debugger is not None else None)
            result = self.engine.run(run.script.function, keys, args, run.caller.protocol,
                                     self.config["busy-reply-threshold"] > 0, run.is_function, debugger)
            reply, failed, source, line, counted_already = result
            return reply, failed, source, line, failed and not counted_already
        except Exception as e:   # the engine itself failed: the caller must still get a reply
            log.exception("Lua engine error")
            return f"ERR internal scripting error: {type(e).__name__}".encode(), True, None, None, True

    # --- the redis.* functions that may raise, and the sandbox's hooks (worker thread)
    def _raise(self, text):
        raise ScriptError(self.error_table(text))

    def _call(self, *args):
        return self._redis_call(args, True)

    def _pcall(self, *args):
        return self._redis_call(args, False)

    def _redis_call(self, args, raise_errors):
        """redis.call and redis.pcall: the loop runs the command; its reply as a Lua value.
        A debugging session that steps logs the command and its reply (ldb.Session)."""
        run = self.current
        debugger = run.debugger
        argv, raw = _command_argv(args)
        if argv is None:
            failed = True
            if debugger is not None:
                debugger.error(raw)
        else:
            if debugger is not None:
                debugger.command(argv)
            raw, failed = run.ask(("call", (run.script_resp, argv)))
            if debugger is not None:
                debugger.reply(raw, failed)
            if not failed and raw[:1] == b"$" and raw[1:3] != b"-1":
                return raw[raw.index(b"\r\n") + 2:-2]     # a bulk string, the usual reply
            if not failed and raw[:1] == b":":
                return int(raw[1:-2])
        value, is_error = self.parse_reply(raw, failed)
        if is_error and raise_errors:
            raise ScriptError(value)
        return value

    def _sha1hex(self, *args):
        if len(args) != 1:
            self._raise(b"wrong number of arguments")
        value = args[0]
        if type(value) in (int, float):
            value = number_text(value)
        return sha1hex(value if type(value) is bytes else b"")

    def _log(self, *args):
        if len(args) < 2:
            self._raise(b"redis.log() requires two arguments or more.")
        level = lua_number(args[0])
        if level is None:
            self._raise(b"First argument must be a number (log level).")
        if not 0 <= level <= 3:
            self._raise(b"Invalid debug level.")
        parts = [part if type(part) is bytes else number_text(part)
                 for part in args[1:] if type(part) in (bytes, int, float)]
        log.log(LOG_LEVELS[int(level)], "%s", b" ".join(parts).decode("utf-8", "replace"))

    def _setresp(self, *args):
        if len(args) != 1:
            self._raise(b"redis.setresp() requires one argument.")
        resp = lua_number(args[0])
        if resp not in (2, 3):
            self._raise(b"RESP version must be 2 or 3.")
        self.current.script_resp = int(resp)

    def _set_repl(self, *args):
        if len(args) != 1:
            self._raise(b"redis.set_repl() requires two arguments.")
        flags = int(lua_number(args[0]) or 0)
        if flags & ~3:
            self._raise(b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")

    def _random(self, *args):
        """math.random as Redis's (Lua's own, on Rand48); its argument errors are Lua's."""
        r = self.rand.next()
        if not args:
            return r
        if len(args) > 2:
            raise ScriptError(b"wrong number of arguments", positioned=True)
        bounds = [check_int(args, i, "random") for i in range(len(args))]
        if len(bounds) == 1:
            if bounds[0] < 1:
                raise ScriptError(b"bad argument #1 to 'random' (interval is empty)", positioned=True)
            return math.floor(r * bounds[0]) + 1
        lower, upper = bounds
        if lower > upper:
            raise ScriptError(b"bad argument #2 to 'random' (interval is empty)", positioned=True)
        return math.floor(r * (upper - lower + 1)) + lower

    def _randomseed(self, *args):
        self.rand.seed(check_int(args, 0, "randomseed"))

    def _interrupted(self):
        run = self.current
        return run is not None and run.kill


def _command_argv(args):
    """redis.call's arguments as a command's, and None; or None and why they are not one.
    Numbers go as "%.17g" (lua_tolstring would lose precision)."""
    if not args:
        return None, b"Please specify at least one argument for this redis lib call"
    argv = []
    for arg in args:
        kind = type(arg)
        if kind is bytes:
            argv.append(arg)
        elif kind is int or kind is float:
            argv.append(b"%.17g" % arg)
        else:
            return None, b"Lua redis lib command arguments must be strings or integers"
    return argv, None


def _no_attributes(obj, name, is_setting):
    """lupa's attribute filter: a Python object a script reaches (redis.call, an error it
    caught) is a function to the script, so none of its attributes is there. Without
    this, redis.call.__self__ would hand a script the server."""
    raise ScriptError(b"attempt to index a function value", positioned=True)


def _unwrap(error):
    """A Python exception raised into Lua, as the Lua error value it stands for."""
    if isinstance(error, ScriptError):
        return error.value, error.positioned
    return f"internal error: {type(error).__name__}".encode(), False
