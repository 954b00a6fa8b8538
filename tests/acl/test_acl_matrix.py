"""The permission matrix: several users × every implemented command × a key
their patterns allow and one they do not.

The calls are generated from the command table and the argument docs (the
required arguments of each command, keys named after the pattern being
tested), so a new command is covered without touching this file; a command
whose generated call cannot run gets an entry in OVERRIDES.

Redis decides: for every call, `ACL DRYRUN` on a redis-server 7.0 holding the
same users says whether the user may run it. cxlredis must then answer the
real call with exactly Redis's -NOPERM text when it is denied, and run it
when it is allowed (no error, except the few calls listed in FAILS_ANYWAY,
which fail for any user with the error given). cxlredis's own ACL DRYRUN must
answer as Redis's.
"""
import pytest

from acl_helpers import NEWER_THAN_ORACLE, add_admin, reset_acl, server_under_test
from conftest import TARGET, ServerProcess, raw_connection
from cxlredis.commands import all_specs
from cxlredis.commands.docs import DOCS, NO_DOCS

USERS = {
    "reader": ["~app:*", "-@all", "+@read"],
    "writer": ["%W~app:*", "%R~ro:*", "+@all", "-@dangerous"],
    "strings": ["~app:*", "-@all", "+@string", "+@connection", "-@write"],
    "selectors": ["-@all", "(~app:* +@read +@hash)", "(~other:* +@write -@dangerous)"],
    "nothing": ["-@all"],
    "firstargs": ["~*", "-@all", "+select|0", "+client|id", "+config|get", "+object",
                  "+get|app:1"],
    "almighty": ["~*", "&*", "+@all"],
    "channels": ["~*", "&v", "-@all", "+@pubsub"],
}
KEY_PREFIXES = ("app:", "other:")

# Calls whose generated form cannot run (or must not: SHUTDOWN), as argument lists;
# a callable receives the user name and the key prefix.
OVERRIDES = {
    "shutdown": ["SHUTDOWN", "ABORT"],
    "debug": ["DEBUG", "SLEEP", "0"],
    "select": ["SELECT", "0"],
    "bitop": lambda user, prefix: ["BITOP", "AND", f"{prefix}1", f"{prefix}2"],    # "v" is no operation
    "auth": lambda user, prefix: ["AUTH", user, "any"],
    # a host to resolve would wait on DNS; nothing listens on port 1
    "migrate": lambda user, prefix: ["MIGRATE", "127.0.0.1", "1", f"{prefix}1", "0", "100"],
    "client|kill": ["CLIENT", "KILL", "ID", "999999"],
    "eval": lambda user, prefix: ["EVAL", "return 1", "1", f"{prefix}1"],
    "eval_ro": lambda user, prefix: ["EVAL_RO", "return 1", "1", f"{prefix}1"],
    "evalsha": lambda user, prefix: ["EVALSHA", "f" * 40, "1", f"{prefix}1"],
    "evalsha_ro": lambda user, prefix: ["EVALSHA_RO", "f" * 40, "1", f"{prefix}1"],
    "script|load": ["SCRIPT", "LOAD", "return 1"],
    "config|set": ["CONFIG", "SET", "maxmemory-samples", "5"],
    "command|getkeys": ["COMMAND", "GETKEYS", "GET", "k"],
    "command|getkeysandflags": ["COMMAND", "GETKEYSANDFLAGS", "GET", "k"],
    # one BGSAVE could still be running when the next user's comes: a call that fails alike
    "bgsave": ["BGSAVE", "NOW"],
    "acl|dryrun": ["ACL", "DRYRUN", "default", "GET", "k"],
    "pfdebug": lambda user, prefix: ["PFDEBUG", "ENCODING", f"{prefix}1"],
    "waitaof": ["WAITAOF", "0", "0", "0"],        # numlocal 1 needs an append-only file
    # sorted set ranges whose ends are strings: ranks, members
    "zrange": lambda user, prefix: ["ZRANGE", f"{prefix}1", "0", "-1"],
    "zrangestore": lambda user, prefix: ["ZRANGESTORE", f"{prefix}1", f"{prefix}2", "0", "-1"],
    "zlexcount": lambda user, prefix: ["ZLEXCOUNT", f"{prefix}1", "-", "+"],
    "zrangebylex": lambda user, prefix: ["ZRANGEBYLEX", f"{prefix}1", "-", "+"],
    "zrevrangebylex": lambda user, prefix: ["ZREVRANGEBYLEX", f"{prefix}1", "+", "-"],
    "zremrangebylex": lambda user, prefix: ["ZREMRANGEBYLEX", f"{prefix}1", "-", "+"],
    "acl|setuser": ["ACL", "SETUSER", "matrix-scratch"],
    "acl|deluser": ["ACL", "DELUSER", "matrix-scratch"],
    # The default tenant always exists: these change nothing, whoever runs them.
    "tenant|create": ["TENANT", "CREATE", "default"],
    "tenant|delete": ["TENANT", "DELETE", "default"],
    "tenant|info": ["TENANT", "INFO", "default"],
    "tenant|set": ["TENANT", "SET", "default", "QUOTA", "0"],
    "tenant|resetstat": ["TENANT", "RESETSTAT", "default"],
}
# Allowed calls that fail whoever runs them, with the error they give.
FAILS_ANYWAY = {
    "shutdown": b"-ERR No shutdown in progress.\r\n",
    "bgsave": b"-ERR syntax error\r\n",
    "exec": b"-ERR EXEC without MULTI\r\n",
    "discard": b"-ERR DISCARD without MULTI\r\n",
    "config|rewrite": b"-ERR The server is running without a config file\r\n",
    "acl|load": None,    # no ACL file: Redis's long "not configured" error
    "acl|save": None,
    "object|freq": None,  # an LRU policy: "An LFU maxmemory policy is not selected..."
    "tenant|create": b"-ERR tenant 'default' already exists\r\n",
    "tenant|delete": b"-ERR the default tenant cannot be deleted\r\n",
    "tenant|set": None,  # the default tenant is bounded by maxmemory, not changed by TENANT SET
    "latency|graph": b"-ERR No samples available for event 'v'\r\n",
    # the matrix's servers are not cluster nodes
    **{name: b"-ERR This instance has cluster support disabled\r\n"
       for name in ("asking", "readonly", "readwrite", *(spec.name for spec in all_specs()
                                                        if spec.name.startswith("cluster|")))},
    # the key was given a value first; "v" would not be a payload anyway
    "restore": b"-BUSYKEY Target key name already exists.\r\n",
    "restore-asking": b"-BUSYKEY Target key name already exists.\r\n",
    "migrate": b"-IOERR error or timeout writing to target instance\r\n",
    "evalsha": b"-NOSCRIPT No matching script. Please use EVAL.\r\n",
    "evalsha_ro": b"-NOSCRIPT No matching script. Please use EVAL.\r\n",
    "script|kill": b"-NOTBUSY No scripts in execution right now.\r\n",
    "fcall": b"-ERR Function not found\r\n",
    "fcall_ro": b"-ERR Function not found\r\n",
    "function|load": b"-ERR Missing library metadata\r\n",
    "function|delete": b"-ERR Library not found\r\n",
    "function|restore": b"-ERR DUMP payload version or checksum are wrong\r\n",
    "function|kill": b"-NOTBUSY No scripts in execution right now.\r\n",
    "client|caching": b"-ERR CLIENT CACHING can be called only when the client is in tracking mode "
                      b"with OPTIN or OPTOUT mode enabled\r\n",
    # past the ACL, mapping is refused to password-less users over TCP (commands/cxl.py)
    **{f"cxl|{sub}": b"-ERR CXL mapping is offered only over the unix socket, or to loopback "
                     b"peers authenticated with a password\r\n"
       for sub in ("getref", "mgetref", "prefixref", "release", "reserve", "commit", "abort")},
}
# Calls that change the connection itself: run on a connection of their own.
OWN_CONNECTION = {"quit", "reset", "multi", "hello", "client|reply", "client|setname",
                  "client|no-evict", "client|setinfo", "client|maint_notifications", "client|tracking",
                  "auth",
                  "monitor", "subscribe", "psubscribe", "ssubscribe"}

VALUES = {"string": "v", "integer": "1", "double": "1.5", "unix-time": "4102444800",
          "pattern": "*"}


def _arguments(arg, key):
    """The words a required argument needs (the first choice of a oneof)."""
    if arg.type == "pure-token":
        return [arg.token]
    if arg.type == "oneof":
        words = _arguments(arg.arguments[0], key)
    elif arg.type == "block":
        words = [w for part in arg.arguments if "optional" not in part.flags
                 for w in _arguments(part, key)]
    elif arg.type == "key":
        words = [key(arg.key_spec_index)]
    else:
        words = [VALUES[arg.type]]
    return ([arg.token] if arg.token else []) + words


def generated_call(spec, prefix, user):
    override = OVERRIDES.get(spec.name)
    if override is not None:
        return override(user, prefix) if callable(override) else list(override)
    call = [word.upper() for word in spec.name.split("|")]
    for arg in DOCS.get(spec.name, NO_DOCS).arguments:
        if "optional" not in arg.flags:
            call += _arguments(arg, lambda index: f"{prefix}{index + 1}")
    return call


# With CXLREDIS_TEST_TARGET=redis the server under test is Redis 7.0 too, which
# lacks the commands newer than it.
SPECS = [spec for spec in all_specs() if not spec.subcommands
         and not (TARGET == "redis" and spec.name.encode() in NEWER_THAN_ORACLE)]


def _prepare_keys(conn, spec, call):
    """Give the call's keys values of the type its command expects."""
    from cxlredis.commands.keyspecs import key_arguments
    for index, _ in key_arguments(spec, [w.encode() for w in call]):
        key = call[index]
        conn.request("DEL", key)
        if spec.group == "hash":
            conn.request("HSET", key, "v", "1")
        elif spec.group == "list" or spec.family == "sort":
            conn.request("RPUSH", key, "1", "1")     # two: LSET's index 1 is there
        elif spec.group == "sorted-set":
            conn.request("ZADD", key, "1", "v")
        elif spec.group == "set":
            conn.request("SADD", key, "v", "1")
        elif spec.group == "geo":
            conn.request("GEOADD", key, "13.361389", "38.115556", "v")
        elif spec.group == "hyperloglog":
            conn.request("PFADD", key, "v")
        else:
            conn.request("SET", key, "1")


@pytest.fixture(scope="module")
def pair():
    oracle, ours = ServerProcess("redis"), server_under_test()
    try:
        oracle.start()
        ours.start()
        for server in (oracle, ours):
            add_admin(server)
            reset_acl(server)
            with raw_connection(server.port) as conn:
                for user, rules in USERS.items():
                    assert conn.request("ACL", "SETUSER", user, "on", "nopass", *rules) == b"+OK\r\n"
        yield oracle, ours
    finally:
        oracle.close()
        ours.close()


def _expected(spec, oracle_dryrun: bytes) -> bytes:
    """The reply Redis gives for the real call, from its DRYRUN verdict."""
    if oracle_dryrun == b"+OK\r\n":
        return oracle_dryrun
    text = oracle_dryrun.split(b"\r\n")[1]
    if text.endswith(b"' key"):
        error = b"NOPERM this user has no permissions to access one of the keys used as arguments"
    elif text.endswith(b"' channel"):
        error = (b"NOPERM this user has no permissions to access one of the channels used "
                 b"as arguments")
    else:
        assert text.startswith(b"This user has no permissions to run the '"), oracle_dryrun
        error = b"NOPERM t" + text[1:]
    if spec.name == "exec":    # a refused EXEC discards the transaction, saying why
        error = b"EXECABORT Transaction discarded because of: " + error
    return b"-" + error + b"\r\n"


@pytest.mark.parametrize("user", list(USERS))
def test_permission_matrix(pair, user):
    oracle, ours = pair
    checked = denied = 0
    with raw_connection(oracle.port) as redis_admin, raw_connection(ours.port) as admin, \
            raw_connection(ours.port) as conn:
        assert admin.request("AUTH", "harness-admin", "harness-admin-pw") == b"+OK\r\n"
        assert conn.request("AUTH", user, "x") == b"+OK\r\n"
        for spec in SPECS:
            for prefix in KEY_PREFIXES:
                call = generated_call(spec, prefix, user)
                where = f"{user}: {' '.join(call)}"
                ours_dryrun = admin.request("ACL", "DRYRUN", user, *call)
                if spec.name.encode() in NEWER_THAN_ORACLE:
                    expected = _expected(spec, ours_dryrun)     # Redis 7.0 has no such command
                else:
                    oracle_dryrun = redis_admin.request("ACL", "DRYRUN", user, *call)
                    assert ours_dryrun == oracle_dryrun, where
                    expected = _expected(spec, oracle_dryrun)
                if expected == b"+OK\r\n":
                    _prepare_keys(admin, spec, call)
                if spec.name in OWN_CONNECTION:
                    with raw_connection(ours.port) as own:
                        assert own.request("AUTH", user, "x") == b"+OK\r\n"
                        reply = own.request(*call)
                else:
                    reply = conn.request(*call)
                checked += 1
                if expected != b"+OK\r\n":
                    denied += 1
                    assert reply == expected, where
                elif spec.name in FAILS_ANYWAY:
                    assert reply[:1] == b"-" and reply == (FAILS_ANYWAY[spec.name] or reply), where
                else:
                    assert not reply.startswith((b"-", b"!")), f"{where} -> {reply!r}"
    assert checked == len(SPECS) * len(KEY_PREFIXES)
    if user == "almighty":
        assert denied == 0
    elif user == "nothing":
        # Only the commands that need no authentication run.
        no_auth = sum("no_auth" in spec.flags for spec in SPECS)
        assert denied == checked - no_auth * len(KEY_PREFIXES)
    else:
        assert 0 < denied < checked
