"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST.

A HyperLogLog is a string in Redis 7.0's own format (ext/strops/hll.h: the "HYLL"
header with its cached cardinality, sparse or dense registers), so GET, SET, DUMP and
RESTORE carry it between cxlredis and Redis unchanged, and the same commands leave the
same bytes. The registers, the encodings and the estimates are computed in C
(cxlredis._strops) over the entry's view; a changed HLL is written back whole,
copy-on-write, keeping its TTL (one is at most 12 KiB dense, hll-sparse-max-bytes
sparse). PFCOUNT refreshes the cached cardinality in place, as Redis does, and so
changes the key for WATCH and client tracking, though it is a read.

Lookups follow Redis 7.0's: PFCOUNT and PFMERGE's sources (the destination among them)
read; PFADD, PFMERGE's destination and PFDEBUG look up for writing. The events are
Redis's too: "pfadd" for PFADD and PFMERGE alike, "new" before it for a key made.
"""
import random

from .. import errors
from .._store import TYPE_STRING
from .._strops import (HLL_REGISTERS, HLL_SPARSE, hll_add, hll_count, hll_count_registers,
                       hll_decode, hll_encoding, hll_merge, hll_merge_into, hll_registers,
                       hll_selftest, hll_to_dense, hll_valid)
from ..errors import CommandError
from ..notifications import NEW, STRING
from .args import c_word

# PFSELFTEST estimates distinct elements up to this cardinality: Redis goes to 10 million
# (half a second with the server stalled); a million checks the same paths in a tenth.
_SELFTEST_MAX_CARD = 1_000_000
_CACHE_OFFSET = 8


def _sparse_max(c):
    return c.services.config["hll-sparse-max-bytes"]


def _find_hll(c, key, for_write=False):
    """The entry of the HLL at key, None if missing: WRONGTYPE for another type, and
    Redis's other WRONGTYPE for a string that is not an HLL (isHLLObjectOrReply)."""
    entry = c.find(key, for_write, TYPE_STRING)
    if entry is not None and not hll_valid(entry.view()):
        raise CommandError(errors.NOT_HLL)
    return entry


def _store_hll(c, key, value):
    c.store.set(c.db, key, value, keep_ttl=True)


def cmd_pfadd(c, argv):
    key = argv[1]
    entry = _find_hll(c, key, for_write=True)
    changed, value = hll_add(entry.view() if entry is not None else None, argv[2:], _sparse_max(c))
    if value is not None:
        _store_hll(c, key, value)
    if changed < 0:
        # what the elements before the corrupt opcode changed stays, unannounced, as in Redis
        raise CommandError(errors.HLL_CORRUPT)
    if entry is None:
        c.notify(NEW, b"new", key)
    if changed:
        c.notify(STRING, b"pfadd", key)
    c.reply.integer(1 if changed else 0)


def _merged_registers(c, keys):
    """The registers of the union of the HLLs at keys (16384 bytes, one per register),
    and whether one of them is dense; each key read and checked in turn, as Redis's
    loop does."""
    registers = bytearray(HLL_REGISTERS)
    any_dense = False
    for key in keys:
        entry = _find_hll(c, key)
        if entry is None:
            continue
        view = entry.view()
        any_dense = any_dense or hll_encoding(view) != HLL_SPARSE
        if not hll_merge(registers, view):
            raise CommandError(errors.HLL_CORRUPT)
    return registers, any_dense


def cmd_pfcount(c, argv):
    if len(argv) > 2:
        registers, _ = _merged_registers(c, argv[1:])
        c.reply.integer(hll_count_registers(registers))
        return
    key = argv[1]
    entry = _find_hll(c, key)
    if entry is None:
        c.reply.integer(0)
        return
    card, cache = hll_count(entry.view())
    if card is None:
        raise CommandError(errors.HLL_CORRUPT)
    if cache is not None:
        c.store.setrange(c.db, key, _CACHE_OFFSET, cache)
        c.services.tracking.written(c.store, key, c)
    c.reply.integer(card)


def cmd_pfmerge(c, argv):
    dest = argv[1]
    registers, any_dense = _merged_registers(c, argv[1:])
    entry = c.find(dest, for_write=True, type=TYPE_STRING)
    value = hll_merge_into(entry.view() if entry is not None else None, registers, any_dense,
                           _sparse_max(c))
    if value is None:
        raise CommandError(errors.HLL_CORRUPT)
    _store_hll(c, dest, value)
    if entry is None:
        c.notify(NEW, b"new", dest)
    c.notify(STRING, b"pfadd", dest)
    c.reply.ok()


def _dense_hll(c, key, view):
    """The HLL at key made dense and stored (PFDEBUG GETREG and TODENSE): its value."""
    value = hll_to_dense(view)
    if value is None:
        raise CommandError(errors.HLL_CORRUPT)
    _store_hll(c, key, value)
    return value


def cmd_pfdebug(c, argv):
    subcommand, key = c_word(argv[1]), argv[2]
    entry = _find_hll(c, key, for_write=True)
    if entry is None:
        raise CommandError(errors.HLL_NO_KEY)
    view = entry.view()
    sparse = hll_encoding(view) == HLL_SPARSE
    if subcommand == b"getreg":
        registers = hll_registers(_dense_hll(c, key, view) if sparse else view)
        c.reply.array(len(registers))
        for register in registers:
            c.reply.integer(register)
    elif subcommand == b"decode":
        if not sparse:
            raise CommandError(errors.HLL_NOT_SPARSE)
        c.reply.bulk(hll_decode(view))
    elif subcommand == b"encoding":
        c.reply.simple(b"sparse" if sparse else b"dense")
    elif subcommand == b"todense":
        if sparse:
            _dense_hll(c, key, view)
        c.reply.integer(1 if sparse else 0)
    else:
        raise CommandError(errors.formatted(f"ERR Unknown PFDEBUG subcommand '{errors.c_string(argv[1])}'"))


def cmd_pfselftest(c, argv):
    failure = hll_selftest(_sparse_max(c), random.getrandbits(64), _SELFTEST_MAX_CARD)
    if failure is not None:
        raise CommandError(failure)
    c.reply.ok()
