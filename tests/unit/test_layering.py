"""The handler contract and the layering rules of docs/internals.md, read from the source:
command modules reach the server only through their call context."""
import ast
import pathlib

import cxlredis

PACKAGE = pathlib.Path(cxlredis.__file__).parent
COMMAND_MODULES = sorted((PACKAGE / "commands").glob("*.py"))
# What a command module may not import: the connection, the server, dispatch and the
# subsystems it is handed through c.services instead.
FORBIDDEN_IMPORTS = {"connection", "server", "dispatch", "clients", "tls", "cli", "prometheus"}
# What a handler may not reach through its context: the server, and connections (their I/O,
# or the connection objects the services hold: clients.Clients names them by session).
# Nor arena offsets: a lookup gives an Entry (Keyspace.find), never the offset lookup() returns.
FORBIDDEN_ATTRIBUTES = {"server", "transport", "parser", "inflight_pins", "session", "connections",
                        "by_id", "monitors", "lookup", "entry_type", "value_offset"}


def imported_modules(tree):
    """The cxlredis modules (outside commands/) a command module imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 2:
            # "from .. import x" imports module x; "from ..x import y" module x
            if node.module:
                yield node.module.split(".")[0]
            else:
                yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.startswith("cxlredis."):
            yield node.module.split(".")[1]
        elif isinstance(node, ast.Import):
            yield from (alias.name.split(".")[1] for alias in node.names
                        if alias.name.startswith("cxlredis."))


def test_command_modules_import_no_upper_layer():
    for path in COMMAND_MODULES:
        tree = ast.parse(path.read_text(), str(path))
        assert not set(imported_modules(tree)) & FORBIDDEN_IMPORTS, path.name


def test_handlers_reach_neither_the_connection_nor_the_server():
    for path in COMMAND_MODULES:
        tree = ast.parse(path.read_text(), str(path))
        reached = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        assert not reached & FORBIDDEN_ATTRIBUTES, (path.name, reached & FORBIDDEN_ATTRIBUTES)


def test_the_rules_catch_a_violation():
    """The checks above have teeth: a module written the old way fails both."""
    tree = ast.parse("from ..server import Server\nfrom .. import dispatch\n"
                     "def cmd_x(c, argv):\n    c.server.clients.clear()\n")
    assert set(imported_modules(tree)) & FORBIDDEN_IMPORTS == {"server", "dispatch"}
    assert {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} & FORBIDDEN_ATTRIBUTES


def test_no_part_is_handed_the_server():
    """The composition root (server.py) builds every part with the collaborators it names:
    nothing else holds the Server. So no other module imports Server or reads a `.server`
    attribute, and server.py hands no call `self`."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "server.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    for alias in node.names}
        held = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        assert "Server" not in imported and "server" not in held, path.name
    tree = ast.parse((PACKAGE / "server.py").read_text())
    handed_self = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                   and any(isinstance(arg, ast.Name) and arg.id == "self"
                           for arg in [*node.args, *(k.value for k in node.keywords)])]
    assert handed_self == []
