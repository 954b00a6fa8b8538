"""SCRIPT DEBUG: Redis 7.0's Lua debugger (LDB), which `redis-cli --ldb` drives.

A client that asked for it (SCRIPT DEBUG YES or SYNC) has its next EVAL run as a
debugging session: the script stops at its first line, and the session talks with the
client on its socket directly, outside RESP's one reply per command: it sends what the
debugger logged as an array of status lines, reads a debugger command (a RESP array),
and so on until the script ends; then `<endsession>`, the EVAL's reply, and the
connection closes.

SYNC runs the session in the server, which serves nobody else meanwhile; what the
script writes stays. YES (redis-cli --ldb's default) forks, as Redis does: the child
runs the session over the inherited socket, on private copies of the arenas
(Arena.privatize), and exits; the parent drops the connection at once and serves the
others, so nothing the script writes reaches the server's data. The parent reaps its
children and kills them at SHUTDOWN (Children).

Session is the debugger itself: its I/O, its commands, breakpoints, stepping and maxlen,
and what redis.call logs; lua/ldb.lua is its Lua side, the line hook and what needs the
script's frames (print, eval, trace) or values (redis.debug).
"""
import importlib.resources
import logging
import os
import re
import signal
import socket
import stat
import struct
import time
from array import array

from ._resp import quoted
from .errors import CommandError
from .lualibs.base import ScriptError

log = logging.getLogger("cxlredis")

SYNC, FORKED = "sync", "yes"      # a session's SCRIPT DEBUG mode (CallContext.lua_debug)
MAX_BREAKPOINTS = 64
DEFAULT_MAXLEN = 256
TIME_LIMIT_MS = 5000              # when lua-time-limit is 0: the stop of a script that runs on
SEND_TIMEOUT = struct.pack("ll", 5, 0)      # SO_SNDTIMEO's timeval: Redis's 5 s
NO_TIMEOUT = struct.pack("ll", 0, 0)
MAX_BUFFER = 1 << 20              # of a command being read
NO_NEWLINES = bytes.maketrans(b"\r\n", b"  ")
INTEGER_PREFIX = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]+)")

HELP = (
    b"Redis Lua debugger help:",
    b"[h]elp               Show this help.",
    b"[s]tep               Run current line and stop again.",
    b"[n]ext               Alias for step.",
    b"[c]ontinue           Run till next breakpoint.",
    b"[l]ist               List source code around current line.",
    b"[l]ist [line]        List source code around [line].",
    b"                     line = 0 means: current position.",
    b"[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    b"                     to show before/after [line].",
    b"[w]hole              List all source code. Alias for 'list 1 1000000'.",
    b"[p]rint              Show all the local variables.",
    b"[p]rint <var>        Show the value of the specified variable.",
    b"                     Can also show global vars KEYS and ARGV.",
    b"[b]reak              Show all breakpoints.",
    b"[b]reak <line>       Add a breakpoint to the specified line.",
    b"[b]reak -<line>      Remove breakpoint from the specified line.",
    b"[b]reak 0            Remove all breakpoints.",
    b"[t]race              Show a backtrace.",
    b"[e]val <code>        Execute some Lua code (in a different callframe).",
    b"[r]edis <cmd>        Execute a Redis command.",
    b"[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    b"                     Specifying zero as <len> means unlimited.",
    b"[a]bort              Stop the execution of the script. In sync",
    b"                     mode dataset changes will be retained.",
    b"",
    b"Debugger functions you can call from Lua scripts:",
    b"redis.debug()        Produce logs in the debugger console.",
    b"redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    b"                     next line of code.",
)
UNKNOWN = b"<error> Unknown Redis Lua debugger command or wrong number of arguments."


def debug_eval(c, argv, run):
    """EVAL (or EVAL_RO) argv of a session in SCRIPT DEBUG mode: run(session) runs it as
    the handler would, the script stopping where `session` (a Session) says."""
    # As Redis: the monitors see the EVAL in the server, before any fork.
    c.services.monitoring.feed_now(c, argv)
    if c.lua_debug == SYNC:
        _synchronous(c, argv, run)
    else:
        _forked(c, argv, run)


def _synchronous(c, argv, run):
    log.warning("Redis synchronous debugging eval session started")
    session = Session(c.socket_fd, bytes(argv[1]), c.services.config["busy-reply-threshold"])
    try:
        run(session)
    finally:
        session.end()
        session.close()
        log.warning("Redis synchronous debugging eval session ended")
        # the connection sends the EVAL's reply, and the close ends the session for the client
        c.close_after_reply()


def _forked(c, argv, run):
    try:
        pid = os.fork()
    except OSError as e:
        c.lua_debug = None
        raise CommandError(f"ERR Fork() failed: can't run EVAL in debugging mode: {e.strerror}") from None
    if pid:
        c.services.scripts.debug_children.add(pid)
        c.lua_debug = None          # (the rest of an EXEC runs here, undebugged, as in Redis)
        c.handed_over = True        # the socket is the child's: the connection writes no more
        return
    status = 1
    try:
        _child(c, argv, run)
        status = 0
    except BaseException:   # nothing may take the child back into the server's loop
        log.exception("Lua debugging session child failed")
    finally:
        os._exit(status)


def _child(c, argv, run):
    """The forked session: the script runs on private copies of the arenas, with a Lua
    runtime of its own (the server's may be held by a thread that stayed in the parent),
    and nothing it does reaches another client (their sockets are closed here)."""
    for signum in (signal.SIGTERM, signal.SIGINT):     # the parent's to act on, as in Redis
        signal.signal(signum, signal.SIG_IGN)
    log.warning("Redis forked for debugging eval")
    _close_sockets_but(c.socket_fd)
    session = Session(c.socket_fd, bytes(argv[1]), c.services.config["busy-reply-threshold"])
    mark = c.reply.mark()
    try:
        c.services.privatize_arenas()
    except OSError as e:        # a backing that cannot be mapped privately (a device)
        c.reply.error(f"ERR Can't run EVAL in debugging mode: {e}")
    else:
        c.services.scripts = c.services.scripts.fresh()
        try:
            run(session)
        except CommandError as e:       # answered as dispatch answers it
            c.reply.rollback(mark)
            c.reply.error(str(e))
    if c.reply_mode != "on":            # CLIENT REPLY OFF or SKIP: no reply to the EVAL
        c.reply.rollback(mark)
    session.end()
    c.reply.flush(session)              # what the connection would have sent: the EVAL's reply
    session.close()
    log.warning("Lua debugging session child exiting")


def _close_sockets_but(kept):
    """Every socket of the process but `kept` (and stdio) becomes /dev/null: a PUBLISH, an
    invalidation or MONITOR's feed from the child reaches nobody, as the forked Redis never
    sends them, and no number of theirs is reused by anything the child opens."""
    null = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in (kept, null):
            try:
                if stat.S_ISSOCK(os.fstat(fd).st_mode):
                    os.dup2(null, fd)
            except OSError:
                pass            # the listing's own descriptor, gone already
    os.close(null)


class Children:
    """The forked sessions of a server (Redis's ldb.children): reaped by its cron, killed by
    its shutdown."""

    def __init__(self):
        self.pids = set()

    def add(self, pid):
        self.pids.add(pid)

    def reap(self):
        for pid in list(self.pids):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.pids.discard(pid)

    def kill(self):
        for pid in self.pids:
            log.warning("Killing debugging session %d", pid)
            os.kill(pid, signal.SIGKILL)
        for pid in self.pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.pids.clear()


def atoi(text):
    """C's atoi: leading blanks, a sign and digits; 0 when there are none."""
    found = INTEGER_PREFIX.match(text)
    return int(found.group(1)) if found else 0


def strict_integer(text):
    """Redis's string2l: the whole text an integer as Redis writes one ("-3", not "03" or
    "+3"), else None."""
    if re.fullmatch(rb"0|-?[1-9][0-9]*", text) is None or not -2 ** 63 <= int(text) < 2 ** 63:
        return None
    return int(text)


def human(reply):
    """Redis's ldbRedisProtocolToHuman: a reply (RESP2 or RESP3) as the debugger logs it."""
    return _human(reply, 0)[0]


def _human(reply, at):
    """The text of the reply at `at`, and where the next one starts."""
    kind = reply[at:at + 1]
    eol = reply.find(b"\r", at + 1)
    line, after = reply[at + 1:eol], eol + 2
    if kind == b":":
        return line, after
    if kind == b"$":
        length = int(line)
        if length == -1:
            return b"NULL", after
        return quoted(reply[after:after + length]), after + length + 2
    if kind in (b"+", b"-"):
        return quoted(reply[at:eol]), after
    if kind == b"*" and int(line) == -1:
        return b"NULL", after
    if kind in (b"*", b"~", b"%"):
        items = []
        for _ in range(int(line)):
            text, after = _human(reply, after)
            if kind == b"%":
                value, after = _human(reply, after)
                text += b" => " + value
            items.append(text)
        opening, closing = {b"*": (b"[", b"]"), b"~": (b"~(", b")"), b"%": (b"{", b"}")}[kind]
        return opening + b",".join(items) + closing, after
    if kind == b"_":
        return b"(null)", after
    if kind == b"#":
        return b"#true" if line == b"t" else b"#false", after
    if kind == b",":
        return b"(double) " + line, after
    return b"", at          # a type Redis 7.0's debugger does not show: nothing, and no step


class Session:
    """One debugging session: the client's socket, the script's source lines, and the
    debugger's state (Redis's struct ldbState)."""

    def __init__(self, fd, body, time_limit_ms):
        self.sock = socket.socket(fileno=os.dup(fd))
        self.sock.setblocking(True)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, SEND_TIMEOUT)
        source = body.rstrip(b"\r\n")
        self.lines = source.split(b"\n") if source else []
        self.time_limit_ms = time_limit_ms or TIME_LIMIT_MS
        self.logs = []
        self.buffer = b""
        # Redis's int bp[64], whose removal moves bytes, not entries (see remove_breakpoint)
        self.breakpoints = array("i", bytes(4 * MAX_BREAKPOINTS))
        self.breakpoint_count = 0
        self.step = True             # stop at the next line; redis.call logs meanwhile
        self.lua_breakpoint = False  # redis.breakpoint() was called: stop at the next line
        self.line = 0                # the current line
        self.maxlen = DEFAULT_MAXLEN
        self.maxlen_hint_sent = False
        self.resumed = time.monotonic()
        self.timed_out = False
        self.redis_pcall = None      # the script's redis.pcall, for the redis command

    def lua_side(self, runtime, engine, redis_pcall):
        """The debugger the sandbox's engine.run takes (lua/ldb.lua), in `runtime`."""
        self.redis_pcall = redis_pcall
        code = importlib.resources.files(__package__).joinpath("lua/ldb.lua").read_bytes()
        return runtime.execute(code, engine, quoted, self.at_line, self.next_command, self.log,
                               self.log_trimmed, self.log_source_line, self.breakpoint,
                               self.debug_line, self.error)

    def end(self):
        """Send what is left to say, and the end mark."""
        self.log(b"<endsession>")
        self.send_logs()

    def writelines(self, parts):
        """ReplyWriter.flush's transport: a forked session sends the EVAL's reply itself."""
        self.write(b"".join(parts))

    def close(self):
        """Leave the socket as the connection had it (SYNC goes on with it)."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, NO_TIMEOUT)
        self.sock.setblocking(False)
        self.sock.close()

    # --- the log, sent as an array of status lines
    def log(self, text):
        self.logs.append(text)

    def log_trimmed(self, text):
        """Log text cut at maxlen; the first cut one comes with a hint."""
        if not self.maxlen or len(text) <= self.maxlen:
            self.logs.append(text)
            return
        self.logs.append(text[:self.maxlen] + b" ...")
        if not self.maxlen_hint_sent:
            self.maxlen_hint_sent = True
            self.logs.append(b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")

    def send_logs(self):
        lines = [b"*%d\r\n" % len(self.logs)]
        lines.extend(b"+%s\r\n" % entry.translate(NO_NEWLINES) for entry in self.logs)
        self.logs = []
        self.write(b"".join(lines))

    def write(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            pass        # the next read finds the client gone, as in Redis

    def log_source_line(self, number):
        text = self.lines[number - 1] if 0 < number <= len(self.lines) else b"<out of range source code line>"
        current, at_breakpoint = number == self.line, self.is_breakpoint(number)
        prefix = (b"->#" if at_breakpoint else b"-> ") if current else b"  #" if at_breakpoint else b"   "
        self.log(b"%s%-3d %s" % (prefix, number, text))

    def list_source(self, around, context):
        for number in range(1, len(self.lines) + 1):
            if around == 0 or abs(around - number) <= context:
                self.log_source_line(number)

    # --- what the script's redis.* functions log while the session steps
    def command(self, argv):
        """redis.call's command: its first 10 arguments (and a count of the rest, one short
        as Redis's)."""
        if self.step:
            shown = [b"<redis>", *argv[:10]]
            if len(argv) > 10:
                shown.append(b"... (%d more)" % (len(argv) - 11))
            self.log(b" ".join(shown))

    def reply(self, raw, failed):
        """redis.call's reply, or why the command did not run."""
        if not self.step:
            return
        if failed:
            self.log(b"<error> " + raw)
            return
        if raw[:1] == b"-":
            self.log(b"<error> " + raw[:raw.index(b"\r\n")])
        self.log_trimmed(b"<reply> " + human(raw))

    def error(self, text):
        """An error a redis.* function made (Redis's luaPushError)."""
        if self.step:
            self.log(b"<error> " + text)

    def breakpoint(self):
        """redis.breakpoint(): stop at the next line."""
        self.lua_breakpoint = True
        return True

    def debug_line(self, text):
        """redis.debug(): its arguments, shown."""
        self.log(b"<debug> line %d: %s" % (self.line, text))

    # --- breakpoints
    def is_breakpoint(self, line):
        return line in self.breakpoints[:self.breakpoint_count]

    def remove_breakpoint(self, line):
        for j in range(self.breakpoint_count):
            if self.breakpoints[j] == line:
                self.breakpoint_count -= 1
                # Redis 7.0's memmove moves bpcount - j bytes, not entries: what it leaves is
                # what its clients see
                size = self.breakpoint_count - j
                raw = memoryview(self.breakpoints).cast("B")
                raw[4 * j:4 * j + size] = bytes(raw[4 * j + 4:4 * j + 4 + size])
                return True
        return False

    def break_command(self, argv):
        if len(argv) == 1:
            if not self.breakpoint_count:
                self.log(b"No breakpoints set. Use 'b <line>' to add one.")
                return
            self.log(b"%d breakpoints set:" % self.breakpoint_count)
            for line in self.breakpoints[:self.breakpoint_count]:
                self.log_source_line(line)
            return
        for arg in argv[1:]:
            line = strict_integer(arg)
            if line is None:
                self.log(b"Invalid argument:'%s'" % arg)
            elif line == 0:
                self.breakpoint_count = 0
                self.log(b"All breakpoints removed.")
            elif line < 0:
                self.log(b"Breakpoint removed." if self.remove_breakpoint(-line)
                         else b"No breakpoint in the specified line.")
            elif self.breakpoint_count == MAX_BREAKPOINTS:
                self.log(b"Too many breakpoints set.")
            elif line <= len(self.lines) and not self.is_breakpoint(line):
                self.breakpoints[self.breakpoint_count] = line
                self.breakpoint_count += 1
                self.list_source(line, 1)
            else:
                self.log(b"Wrong line number.")

    def maxlen_command(self, argv):
        if len(argv) == 2:
            self.maxlen_hint_sent = True        # the client knows of maxlen now
            value = atoi(argv[1])
            self.maxlen = 60 if value != 0 and value <= 60 else value
        if self.maxlen:
            self.log(b"<value> replies are truncated at %d bytes." % self.maxlen)
        else:
            self.log(b"<value> replies are unlimited.")

    # --- stopping, and the commands
    def at_line(self, line, in_script):
        """The line hook's question (in_script: the line is the script's, not a chunk it
        loaded): None to go on, else what the client asked of the Lua side (see repl).
        A script that runs on past lua-time-limit (Redis looks every 100000 instructions,
        here at every line) stops too."""
        self.line = line
        at_breakpoint = self.lua_breakpoint or self.is_breakpoint(line)
        if not in_script:
            return None
        timed_out = False
        if not (self.step or at_breakpoint):
            if (time.monotonic() - self.resumed) * 1000 < self.time_limit_ms:
                return None
            timed_out = True
        if at_breakpoint:
            reason = b"redis.breakpoint() called" if self.lua_breakpoint else b"break point"
        else:
            reason = b"timeout reached, infinite loop?" if timed_out else b"step over"
        self.step = self.lua_breakpoint = False
        self.log(b"* Stopped at %d, stop reason = %s" % (line, reason))
        self.log_source_line(line)
        self.send_logs()
        self.timed_out = timed_out
        return self.repl()

    def next_command(self):
        """After the Lua side did a command: send what it logged, and read on."""
        self.send_logs()
        return self.repl()

    def repl(self):
        """Run the client's commands until one goes on with the script (None) or needs the
        Lua side: (b"print"[, name]), (b"eval", code) or (b"trace",)."""
        while True:
            argv = self.read_command()
            if argv is None:
                # the client is gone: the script runs to its end unattended
                self.step = False
                self.breakpoint_count = 0
                if self.timed_out:
                    raise ScriptError(b"timeout during Lua debugging with client closing connection")
                break
            name = argv[0].lower()
            if name in (b"s", b"step", b"n", b"next"):
                self.step = True
                break
            if name in (b"c", b"continue"):
                break
            if name in (b"a", b"abort"):
                raise ScriptError(b"script aborted for user request")
            if name in (b"p", b"print"):
                return (b"print", argv[1]) if len(argv) == 2 else (b"print",)
            if name in (b"e", b"eval"):
                return b"eval", b" ".join(argv[1:])
            if name in (b"t", b"trace"):
                return (b"trace",)
            self.python_command(name, argv)
            self.send_logs()
        self.resumed = time.monotonic()     # the time limit counts from here
        return None

    def python_command(self, name, argv):
        """A command that needs nothing of Lua's."""
        if name in (b"h", b"help"):
            self.logs.extend(HELP)
        elif name in (b"m", b"maxlen"):
            self.maxlen_command(argv)
        elif name in (b"b", b"break"):
            self.break_command(argv)
        elif name in (b"r", b"redis") and len(argv) > 1:
            self.step = True        # so redis.call logs the command and its reply
            self.redis_pcall(*argv[1:])
            self.step = False
        elif name in (b"l", b"list"):
            around = atoi(argv[1]) if len(argv) > 1 else 0
            self.list_source(around if around > 0 else self.line, atoi(argv[2]) if len(argv) > 2 else 5)
        elif name in (b"w", b"whole"):
            self.list_source(1, 1000000)
        else:
            self.log(UNKNOWN)

    # --- reading commands
    def read_command(self):
        """The client's next command (its arguments), or None once it is gone. What came
        with it in the same read is dropped, as Redis drops it."""
        while True:
            argv = self.parse()
            if argv is not None:
                self.buffer = b""
                return argv
            try:
                data = self.sock.recv(1024)
            except OSError:
                data = b""
            if not data:
                return None
            self.buffer += data
            if len(self.buffer) > MAX_BUFFER:
                self.buffer = b""
                raise ScriptError(b"max client buffer reached")

    def parse(self):
        """Redis's ldbReplParseCommand: a command, or None while it is incomplete;
        ScriptError("protocol error") for what cannot be one. Forgiving as Redis's: it
        looks for the '*' anywhere, and its searches stop at a NUL byte, as C's do."""
        buf = self.buffer
        if not buf:
            return None
        star = _c_find(buf, b"*", 0)
        if star < 0:
            raise ScriptError(b"protocol error")
        eol = _c_find(buf, b"\r\n", star)
        if eol < 0:
            return None
        count = atoi(buf[star + 1:eol])
        if not 0 < count <= 1024:
            raise ScriptError(b"protocol error")
        at, argv = eol + 2, []
        while len(argv) < count:
            if at >= len(buf) or buf[at] == 0:
                return None
            if buf[at] != ord("$"):
                raise ScriptError(b"protocol error")
            eol = _c_find(buf, b"\r\n", at)
            if eol < 0:
                return None
            size = atoi(buf[at + 1:eol])
            if not 0 < size <= 1024:
                raise ScriptError(b"protocol error")
            at = eol + 2
            if at + size + 2 > len(buf):
                return None
            argv.append(buf[at:at + size])
            at += size
            if buf[at:at + 2] != b"\r\n":
                raise ScriptError(b"protocol error")
            at += 2
        return argv


def _c_find(buf, needle, start):
    """strstr (strchr) from start: the search ends at the first NUL byte."""
    nul = buf.find(b"\0", start)
    return buf.find(needle, start, len(buf) if nul < 0 else nul)
