"""Cache hit ratio of a replayed multi-turn conversation trace at equal maxmemory.

The trace (deterministic for a seed): a few applications, each with its own
system prompt; many sessions, picked with Zipf popularity, each belonging
to an application. Every turn appends a user message to the session's
history, sends the whole history as the prompt, then appends the assistant
reply. A session whose history outgrows the context starts a new
conversation. Prompts therefore share prefixes: the system prompt across a
whole application, and the earlier turns within a session.

Chunk keys are made the way LMCache makes them: the prompt is cut into
256-token chunks (only full chunks are cached), each chunk hash is chained
on the previous one (sha256 over the previous hash and the chunk's tokens),
and the key string is ``<model>@<world>@<worker>@<chunk_hash>@<dtype>``
with LMCache's ``kv_bytes`` / ``metadata`` suffixes.

Each request is replayed as LMCache's Redis connector would: EXISTS on the
metadata keys in order until the first miss (the cached prefix), GET
metadata + kv_bytes of the prefix chunks (pipelined), then SET kv_bytes +
metadata for every chunk after the prefix. Redis runs allkeys-lru (sampled
LRU); cxlredis runs its exact LRU under the same policy name.

The hit ratio is hit chunks / requested chunks. "infinite cache" is the
ceiling: every chunk seen before is a hit. Each server counts maxmemory its
own way (Redis: used_memory, allocator size classes included; cxlredis: heap
blocks), so the rows "chunks held at end" and "chunk bytes held / maxmemory"
show how much useful data each actually kept in the same budget.
"""

import bisect
import dataclasses
import hashlib
import random
import time
from array import array
from collections import OrderedDict

from blobs import random_tail
from common import (BenchConfig, BenchResult, KiB, MiB, Server, format_size, parse_size,
                    round_order, standalone_main)

CHUNK_TOKENS = 256
VOCABULARY = 32_000
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
METADATA_BYTES = 100
STAMP_BYTES = 16
NONE_HASH = "0" * 64


@dataclasses.dataclass
class TraceShape:
    sessions: int = 300
    requests: int = 3000
    applications: int = 6
    zipf_exponent: float = 1.0
    system_prompt_tokens: tuple = (1024, 3072)
    user_tokens: tuple = (32, 512)
    reply_tokens: tuple = (64, 768)
    max_context_tokens: int = 16384


def chunk_hash(previous: str, tokens) -> str:
    """LMCache-style chained prefix hash of one chunk."""
    digest = hashlib.sha256(previous.encode())
    digest.update(array("i", tokens).tobytes())
    return digest.hexdigest()


def zipf_cumulative(count: int, exponent: float) -> list[float]:
    total, cumulative = 0.0, []
    for rank in range(1, count + 1):
        total += 1.0 / rank ** exponent
        cumulative.append(total)
    return [value / total for value in cumulative]


def make_trace(shape: TraceShape, seed: int) -> list[list[str]]:
    """Requests in arrival order, each as the chunk hashes of its prompt."""
    rng = random.Random(seed)

    def tokens(bounds) -> list[int]:
        return [rng.randrange(VOCABULARY) for _ in range(rng.randint(*bounds))]

    system_prompts = [tokens(shape.system_prompt_tokens) for _ in range(shape.applications)]
    app_popularity = zipf_cumulative(shape.applications, shape.zipf_exponent)
    session_popularity = zipf_cumulative(shape.sessions, shape.zipf_exponent)
    session_app = [bisect.bisect_left(app_popularity, rng.random()) for _ in range(shape.sessions)]
    histories: dict[int, list[int]] = {}
    hashes: dict[int, list[str]] = {}
    requests = []
    for _ in range(shape.requests):
        session = bisect.bisect_left(session_popularity, rng.random())
        history = histories.get(session)
        if history is None or len(history) > shape.max_context_tokens:
            history = histories[session] = list(system_prompts[session_app[session]])
            hashes[session] = []
        history.extend(tokens(shape.user_tokens))
        chain = hashes[session]
        for chunk_no in range(len(chain), len(history) // CHUNK_TOKENS):
            start = chunk_no * CHUNK_TOKENS
            chain.append(chunk_hash(chain[-1] if chain else NONE_HASH,
                                    history[start:start + CHUNK_TOKENS]))
        requests.append(list(chain))
        history.extend(tokens(shape.reply_tokens))
    return requests


def infinite_cache_hit_ratio(trace) -> tuple[float, int]:
    seen, hits, total = set(), 0, 0
    for chunks in trace:
        total += len(chunks)
        hits += sum(1 for chunk in chunks if chunk in seen)
        seen.update(chunks)
    return (hits / total if total else 0.0), len(seen)


def exact_lru_hit_ratio(trace, capacity_chunks: int) -> float:
    """The same replay against an ideal exact LRU holding `capacity_chunks` whole chunks."""
    cache: OrderedDict[str, None] = OrderedDict()
    hits = total = 0
    for chunks in trace:
        prefix = 0
        while prefix < len(chunks) and chunks[prefix] in cache:
            cache.move_to_end(chunks[prefix])
            prefix += 1
        hits += prefix
        total += len(chunks)
        for chunk in chunks[prefix:]:
            cache[chunk] = None
            cache.move_to_end(chunk)
            while len(cache) > capacity_chunks:
                cache.popitem(last=False)
    return hits / total if total else 0.0


def cache_key(chunk: str) -> str:
    return f"{MODEL}@1@0@{chunk[:32]}@bfloat16"


def metadata_for(chunk: str, size: int) -> bytes:
    record = b"%d:%s:" % (size, chunk[:32].encode())
    return record + bytes(METADATA_BYTES - len(record))


@dataclasses.dataclass
class ReplayStats:
    chunks: int = 0
    hits: int = 0
    orphans: int = 0  # metadata present but kv_bytes evicted: the prefix ends there


class Replayer:
    """Plays the trace against one server as LMCache's Redis connector would."""

    def __init__(self, client, chunk_bytes: int, tail: bytearray):
        self.client = client
        self.chunk_bytes = chunk_bytes
        self.tail = tail
        self.blob_buffers: list[bytearray] = []
        self.meta_buffers: list[bytearray] = []

    def buffers(self, count: int):
        while len(self.blob_buffers) < count:
            self.blob_buffers.append(bytearray(self.chunk_bytes))
            self.meta_buffers.append(bytearray(METADATA_BYTES))
        return self.blob_buffers, self.meta_buffers

    def request(self, chunks: list[str], stats: ReplayStats) -> None:
        client = self.client
        keys = [cache_key(chunk) for chunk in chunks]
        prefix = 0
        for key in keys:
            if client.exists(key + "metadata") != 1:
                break
            prefix += 1
        if prefix:
            prefix = self.fetch(chunks[:prefix], keys[:prefix], stats)
        stats.chunks += len(chunks)
        stats.hits += prefix
        stores = []
        for chunk, key in zip(chunks[prefix:], keys[prefix:]):
            stamp = bytes.fromhex(chunk[:2 * STAMP_BYTES])
            stores.append((key + "kv_bytes", (stamp, self.tail)))
            stores.append((key + "metadata", metadata_for(chunk, self.chunk_bytes)))
        if stores:
            client.set_many(stores)

    def fetch(self, chunks, keys, stats: ReplayStats) -> int:
        """GET the prefix chunks; returns how many arrived whole (verified)."""
        blobs, metas = self.buffers(len(keys))
        request_keys, outs = [], []
        for n, key in enumerate(keys):
            request_keys += [key + "metadata", key + "kv_bytes"]
            outs += [metas[n], blobs[n]]
        lengths = self.client.get_many_into(request_keys, outs)
        for n, chunk in enumerate(chunks):
            meta_length, blob_length = lengths[2 * n], lengths[2 * n + 1]
            if meta_length < 0 or blob_length < 0:
                if meta_length >= 0:
                    stats.orphans += 1
                    self.client.delete(keys[n] + "metadata")  # as LMCache does
                return n
            expected_meta = metadata_for(chunk, self.chunk_bytes)
            blob = blobs[n]
            if (meta_length != METADATA_BYTES or metas[n] != expected_meta
                    or blob_length != self.chunk_bytes
                    or blob[:STAMP_BYTES] != bytes.fromhex(chunk[:2 * STAMP_BYTES])
                    or self.tail != memoryview(blob)[STAMP_BYTES:]):
                raise AssertionError(f"chunk {keys[n]!r} came back different from what was stored")
        return len(chunks)


def count_held(client) -> tuple[int, int]:
    """(kv_bytes keys, metadata keys) the server holds, by SCAN."""
    blobs = metadata = 0
    cursor = b"0"
    while True:
        cursor, keys = client.execute(b"SCAN", cursor, b"COUNT", b"1000")
        blobs += sum(1 for key in keys if key.endswith(b"kv_bytes"))
        metadata += sum(1 for key in keys if key.endswith(b"metadata"))
        if cursor == b"0":
            return blobs, metadata


def run(config: BenchConfig, chunk_bytes: int | None = None, maxmemory: int | None = None,
        capacity_fraction: float = 0.25, policy: str = "allkeys-lru",
        shape: TraceShape | None = None, pace: float = 0.0) -> BenchResult:
    shape = shape or (TraceShape(sessions=100, requests=600) if config.quick else TraceShape())
    chunk_bytes = chunk_bytes or 128 * KiB
    trace = make_trace(shape, config.seed)
    ideal, unique = infinite_cache_hit_ratio(trace)
    footprint = unique * (chunk_bytes + METADATA_BYTES)
    maxmemory = maxmemory or max(16 * MiB, int(footprint * capacity_fraction) // MiB * MiB)
    result = BenchResult("hitratio", config.labels, {
        "sessions": shape.sessions, "requests": len(trace), "apps": shape.applications,
        "zipf": shape.zipf_exponent, "chunk": f"{CHUNK_TOKENS} tokens = {format_size(chunk_bytes)}",
        "unique chunks": unique, "footprint": f"{footprint / MiB:.0f} MiB",
        "maxmemory": format_size(maxmemory), "policy": policy, "seed": config.seed,
        "pace": f"{pace} s/request", "rounds": config.rounds})
    tail = random_tail(chunk_bytes, config.seed)
    for round_no in range(config.rounds):
        for spec in round_order(config.servers, round_no):
            with Server(spec, maxmemory=maxmemory, policy=policy) as server, \
                    server.client() as client:
                replayer, stats = Replayer(client, chunk_bytes, tail), ReplayStats()
                for chunks in trace:
                    replayer.request(chunks, stats)
                    if pace:
                        time.sleep(pace)
                info = server.info()
                blobs_held, metadata_held = count_held(client)
                result.add("chunk hit ratio", spec.label, stats.hits / stats.chunks, "", "higher")
                result.add("chunks held at end", spec.label, blobs_held, "chunks", "higher")
                result.add("chunk bytes held at end / maxmemory", spec.label,
                           (blobs_held * chunk_bytes + metadata_held * METADATA_BYTES) / maxmemory,
                           "x", "higher")
                result.add("exact LRU with the chunks held at end", spec.label,
                           exact_lru_hit_ratio(trace, blobs_held), "", "")
                result.add("infinite cache hit ratio", spec.label, ideal, "", "")
                result.add("metadata left without kv_bytes", spec.label, stats.orphans, "chunks", "lower")
                result.add("evicted keys", spec.label, info.get("evicted_keys", 0), "keys", "")
                result.add("used_memory at end / maxmemory", spec.label,
                           info.get("used_memory", 0) / maxmemory, "x", "")
    result.notes.append("every hit was verified (metadata and kv_bytes byte-exact).")
    result.notes.append("'exact LRU with the chunks held' replays the trace in Python against an ideal "
                        "LRU of that many chunks: the gap to it is the eviction policy's, not the "
                        "capacity's.")
    if not pace:
        result.notes.append("replayed as fast as possible: Redis's LRU clock ticks once per second, so when "
                            "the cache turns over within seconds its sampled LRU is close to random; "
                            "--pace spreads requests out in time.")
    return result


def add_arguments(parser):
    parser.add_argument("--chunk-bytes", type=parse_size, help="kv_bytes per 256-token chunk (default 128kb)")
    parser.add_argument("--maxmemory", type=parse_size,
                        help="maxmemory of both servers (default: --capacity-fraction of the footprint)")
    parser.add_argument("--capacity-fraction", type=float, default=0.25,
                        help="maxmemory as a fraction of all unique chunks' bytes")
    parser.add_argument("--policy", default="allkeys-lru")
    parser.add_argument("--sessions", type=int)
    parser.add_argument("--requests", type=int)
    parser.add_argument("--zipf", type=float, help="Zipf exponent of session popularity")
    parser.add_argument("--pace", type=float, default=0.0, help="seconds to wait between requests")


def options_from_args(args) -> dict:
    shape = TraceShape(sessions=100, requests=600) if args.quick else TraceShape()
    shape = dataclasses.replace(shape, **{field: value for field, value in (
        ("sessions", args.sessions), ("requests", args.requests), ("zipf_exponent", args.zipf))
        if value is not None})
    return dict(chunk_bytes=args.chunk_bytes, maxmemory=args.maxmemory,
                capacity_fraction=args.capacity_fraction, policy=args.policy, shape=shape,
                pace=args.pace)


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments, options_from_args)
