"""Redis functions (FUNCTION LOAD, FCALL): libraries of Lua functions, one set per namespace.

A library is the code FUNCTION LOAD was given: a `#!lua name=<library>` line, then
Lua that registers its functions with redis.register_function when it is loaded
(scripting.Scripts.load_library runs it). Function names are one namespace across
the libraries of a tenant (and, as in Redis, case-insensitive); library names are
case-sensitive. Each tenant has its own libraries, as it has its own script cache.

FUNCTION DUMP and RESTORE use Redis 7.0's payload: per library an
RDB_OPCODE_FUNCTION2 byte and the library's code as an RDB string, then the RDB
version and CRC-64 footer of cluster/dump.py.

Redis keeps its functions in the RDB; here the arena outlives a restart, and the
libraries are kept beside it, in functions-file (JSON: each library's tenant and code),
rewritten atomically after every change and loaded again at startup.
"""
import base64
import json

from ._resp import split_args
from ._store import glob_match
from .cluster.dump import DumpPayloadError, Reader, encode_string, footer_for, verify_payload
from .errors import CommandError, c_string
from .files import write_atomically

FILE_VERSION = 1

ENGINE = "LUA"
OPCODE_FUNCTION_PRE_GA, OPCODE_FUNCTION2 = 246, 245
NAME_ERROR = ("Library names can only contain letters, numbers, or underscores(_) and must be at "
              "least one character long")
NAME_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class Function:
    """A registered function, run as a script that declared its flags (never in the
    compatibility mode of a script without a shebang)."""

    __slots__ = ("name", "function", "description", "flags", "library")
    shebang = True

    def __init__(self, name, function, description, flags, library):
        self.name = name                  # bytes
        self.function = function          # the Lua callback
        self.description = description    # bytes or None
        self.flags = flags                # set of flag names
        self.library = library

    @property
    def label(self):
        """How errors and the slow-script log name it."""
        return self.name


class Library:
    __slots__ = ("name", "code", "functions")

    def __init__(self, name, code):
        self.name = name                  # bytes
        self.code = code                  # all FUNCTION LOAD was given, the shebang line included
        self.functions = {}               # name → Function, in registration order


class Libraries:
    """One namespace's libraries, and their functions by case-folded name."""

    def __init__(self):
        self.libraries = {}
        self.functions = {}

    def function(self, name):
        return self.functions.get(bytes(name).lower())

    def clear(self):
        self.libraries.clear()
        self.functions.clear()

    def copy(self):
        copied = Libraries()
        copied.libraries, copied.functions = dict(self.libraries), dict(self.functions)
        return copied

    def matching(self, pattern):
        """The libraries whose name matches pattern (case-insensitively, as Redis), or all."""
        return [lib for name, lib in self.libraries.items()
                if pattern is None or glob_match(pattern, name, True)]

    def link(self, library):
        self.libraries[library.name] = library
        for name, function in library.functions.items():
            self.functions[name.lower()] = function

    def unlink(self, library):
        del self.libraries[library.name]
        for name in library.functions:
            self.functions.pop(name.lower(), None)

    # add and join may leave these half-changed when they raise: changes are made on a
    # copy (scripting.Scripts.change_libraries), installed only once they succeeded.

    def add(self, library, replace):
        """Link a loaded library, replacing one of its name if replace (Redis's
        functionsCreateWithLibraryCtx, after the load)."""
        old = self.libraries.get(library.name)
        if old is not None:
            if not replace:
                raise CommandError(f"ERR Library '{_text(library.name)}' already exists")
            self.unlink(old)
        for name in library.functions:
            if name.lower() in self.functions:
                raise CommandError(f"ERR Function {_text(name)} already exists")
        self.link(library)

    def join(self, other, replace):
        """FUNCTION RESTORE's APPEND and REPLACE: other's libraries join these."""
        for name in other.libraries:
            old = self.libraries.get(name)
            if old is not None:
                if not replace:
                    raise CommandError(f"ERR Library {_text(name)} already exists")
                self.unlink(old)
        for name, function in other.functions.items():
            if name in self.functions:
                raise CommandError(f"ERR Function {_text(function.name)} already exists")
        for library in other.libraries.values():
            self.link(library)

    def counts(self):
        return len(self.libraries), len(self.functions)

    def dump(self):
        parts = []
        for library in self.libraries.values():
            parts += (bytes((OPCODE_FUNCTION2,)), encode_string(library.code))
        body = b"".join(parts)
        return body + footer_for(body)


def parse_library(code):
    """(engine name, library name, the code the engine runs) of FUNCTION LOAD's code, with
    Redis's errors: the first line is `#!<engine> name=<library>`; the engine gets the rest,
    from that line's end, so its line numbers are the code's."""
    if not code.startswith(b"#!"):
        raise CommandError("ERR Missing library metadata")
    end = code.find(b"\n")
    if b"\0" in code[:end]:
        end = -1                   # (Redis looks for the line's end as a C string)
    parts = split_args(code[:end]) if end >= 0 else None
    if not parts:
        raise CommandError("ERR Invalid library metadata")
    name = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise CommandError("ERR Invalid metadata value, name argument was given multiple times")
            name = part[5:]
            continue
        raise CommandError(f"ERR Invalid metadata value given: {c_string(part)}")
    if name is None:
        raise CommandError("ERR Library name was not given")
    if not valid_name(name):
        raise CommandError("ERR " + NAME_ERROR)
    return parts[0][2:], name, code[end:]


def valid_name(name):
    return bool(name) and NAME_CHARS.issuperset(name)


def read_payload(payload):
    """The library codes of a FUNCTION DUMP payload, in order (Redis's errors)."""
    verify_payload(payload)
    reader = Reader(memoryview(payload)[:-10])
    codes = []
    while reader.pos < len(reader.data):
        kind = reader.byte()
        if kind == OPCODE_FUNCTION_PRE_GA:
            raise CommandError("ERR Pre-GA function format not supported")
        if kind != OPCODE_FUNCTION2:
            raise CommandError("ERR given type is not a function")
        try:
            codes.append(bytes(reader.string()))
        except DumpPayloadError:
            raise CommandError("ERR Failed loading library payload") from None
    return codes


def save_libraries(path, by_namespace):
    """Replace the functions file with every namespace's libraries."""
    entries = [{"tenant": namespace, "code": base64.b64encode(library.code).decode()}
               for namespace, libraries in by_namespace.items() for library in libraries.libraries.values()]
    content = json.dumps({"version": FILE_VERSION, "libraries": entries}, indent=1) + "\n"
    write_atomically(path, content.encode())


def read_libraries(path):
    """(tenant name or None, library code) of each library the functions file keeps."""
    with open(path, "rb") as file:
        content = json.load(file)
    if content.get("version") != FILE_VERSION:
        raise ValueError(f"unknown version {content.get('version')!r}")
    return [(entry["tenant"], base64.b64decode(entry["code"])) for entry in content["libraries"]]


def _text(data):
    return bytes(data).decode("utf-8", "replace")

