"""Error replies, with Redis 7's exact texts.

A handler raises CommandError(text); the dispatcher writes `-<text>` and
counts the error under its prefix (the first word) in INFO errorstats.
"""


class CommandError(Exception):
    """A command failed; str(self) is the reply text without the leading '-'."""

    @property
    def prefix(self):
        return str(self).split(" ", 1)[0]


SYNTAX = "ERR syntax error"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INTEGER = "ERR value is not an integer or out of range"
NOT_FLOAT = "ERR value is not a valid float"
OVERFLOW = "ERR increment or decrement would overflow"
NO_SUCH_KEY = "ERR no such key"
DB_INDEX_OUT_OF_RANGE = "ERR DB index is out of range"
OOM = "OOM command not allowed when used memory > 'maxmemory'."
NOT_POSITIVE = "ERR value is out of range, must be positive"
OFFSET_OUT_OF_RANGE = "ERR offset is out of range"
STRING_TOO_LONG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
INCRFLOAT_NAN_INF = "ERR increment would produce NaN or Infinity"
SAME_OBJECT = "ERR source and destination objects are the same"
MULTI_NESTED = "ERR MULTI calls can not be nested"
EXEC_WITHOUT_MULTI = "ERR EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "ERR DISCARD without MULTI"
WATCH_INSIDE_MULTI = "ERR WATCH inside MULTI is not allowed"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
NOPROTO = "NOPROTO unsupported protocol version"


def wrong_arity(fullname):
    return f"ERR wrong number of arguments for '{fullname}' command"


def invalid_expire(command):
    return f"ERR invalid expire time in '{command}' command"


def unknown_subcommand(subcommand, container):
    """Both as sent (bytes); Redis echoes the subcommand and upper-cases the container."""
    return f"ERR unknown subcommand '{clipped(subcommand)}'. Try {_text(_clip(container, 128).upper())} HELP."


def subcommand_syntax(argv):
    """Redis's reply to a known subcommand given the wrong arguments (argv as sent)."""
    return (f"ERR unknown subcommand or wrong number of arguments for '{clipped(argv[1])}'. "
            f"Try {_text(_clip(argv[0], 128).upper())} HELP.")


def unknown_command(argv):
    """Redis quotes up to ~128 bytes of the arguments after the name."""
    args = b""
    for arg in argv[1:]:
        if len(args) >= 128:
            break
        args += b"'" + _clip(arg, 128 - len(args)) + b"' "
    return f"ERR unknown command '{clipped(argv[0])}', with args beginning with: {_text(args)}"


def _clip(arg, limit):
    """arg as Redis's printf("%.<limit>s") writes it: at most limit bytes, up to a NUL."""
    if isinstance(arg, str):
        arg = arg.encode("utf-8", "surrogateescape")
    return bytes(arg[:limit]).split(b"\0", 1)[0]


def clipped(arg, limit=128):
    """arg inside an error text as Redis's "%.<limit>s" puts it there."""
    return _text(_clip(arg, limit))


def _text(data):
    """Bytes inside an error text, kept as they are: the reply writer encodes the text back
    with surrogateescape, so bytes that are not UTF-8 reach the client unchanged."""
    return data.decode("utf-8", "surrogateescape")


# Keyspace and string commands.
DECREMENT_OVERFLOW = "ERR decrement would overflow"
INVALID_CURSOR = "ERR invalid cursor"
EXPIRE_NX_AND_OTHERS = "ERR NX and XX, GT or LT options at the same time are not compatible"
EXPIRE_GT_AND_LT = "ERR GT and LT options at the same time are not compatible"
INVALID_FIRST_DB_INDEX = "ERR invalid first DB index"
INVALID_SECOND_DB_INDEX = "ERR invalid second DB index"
LFU_SELECTED = ("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when "
                "switching between policies at runtime LRU and LFU data will take some time to adjust.")
LFU_NOT_SELECTED = ("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please "
                    "note that when switching between policies at runtime LRU and LFU data will take "
                    "some time to adjust.")


def unsupported_option(option):
    return f"ERR Unsupported option {option}"


def int_out_of_range(low, high):
    return f"ERR value is out of range, value must between {low} and {high}"


def c_string(arg):
    """An argument as Redis's "%s" prints it: up to a NUL byte, its bytes kept (the reply
    writer encodes them back with surrogateescape)."""
    return bytes(arg).partition(b"\0")[0].decode("utf-8", "surrogateescape")


def formatted(text):
    """An error as Redis's addReplyErrorFormat sends it: CR and LF at its ends trimmed (the
    reply writer turns those inside into spaces)."""
    return text.strip("\r\n")


# Bitmap commands and LCS.
BIT_OFFSET = "ERR bit offset is not an integer or out of range"
BIT_VALUE = "ERR bit is not an integer or out of range"
BIT_ARGUMENT = "ERR The bit argument must be 1 or 0."
BITFIELD_TYPE = ("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported "
                 "but i64 is.")
BITFIELD_OVERFLOW = "ERR Invalid OVERFLOW type specified"
BITFIELD_RO_GET_ONLY = "ERR BITFIELD_RO only supports the GET subcommand"
BITOP_NOT_ONE_KEY = "ERR BITOP NOT must be called with a single source key."
LCS_NOT_STRINGS = "ERR The specified keys must contain string values"
LCS_LEN_AND_IDX = "ERR If you want both the length and indexes, please just use IDX."
LCS_TOO_LONG = "ERR String too long for LCS"
LCS_OVER_LIMIT = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
LCS_NO_MEMORY = "ERR Insufficient memory, failed allocating transient memory for LCS"

# HyperLogLog commands.
NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
HLL_CORRUPT = "INVALIDOBJ Corrupted HLL object detected"
HLL_NO_KEY = "ERR The specified key does not exist"
HLL_NOT_SPARSE = "ERR HLL encoding is not sparse"
