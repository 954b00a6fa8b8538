"""The blob client's own ceiling: SET and GET GB/s against a raw-socket server that never makes it wait.

The server stores nothing and answers *ahead* of the requests: from the
moment a connection opens, one thread streams replies into it (``+OK`` for
the SET run, ``$<n>`` + payload + CRLF for the GET run) as fast as the
client reads them, while another thread receives and drops whatever the
client sends. The client still sends every command in full and parses
every reply, but never waits for a server to think, so what is measured is
the client's own send/receive loop plus the kernel's socket copy: its
ceiling. The server runs in its own process, the client in the same worker
process as in the blob benchmarks, with the same workload code.

A plain one-way TCP stream (sendall in a loop, the receiver drops the
bytes) is measured too: that is the kernel's limit for any client here.
"""

import multiprocessing
import os
import signal
import socket
import threading
import time

from blobs import DEFAULT_SIZES, BlobWorkload, random_tail, ring_for
from common import (BenchConfig, BenchResult, MiB, format_size, parse_size_list, run_phased,
                    standalone_main)

SCRATCH = 4 * MiB
OK_BATCH = b"+OK\r\n" * 4096


def drop_input(sock: socket.socket) -> None:
    scratch = memoryview(bytearray(SCRATCH))
    try:
        while sock.recv_into(scratch):
            pass
    except OSError:
        pass


def answer_ahead(sock: socket.socket, reply: bytes) -> None:
    """Send `reply` over and over until the client goes away."""
    try:
        while True:
            sock.sendall(reply)
    except OSError:
        pass


def serve(listener: socket.socket, reply: bytes) -> None:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=drop_input, args=(sock,), daemon=True).start()
        threading.Thread(target=answer_ahead, args=(sock, reply), daemon=True).start()


class AheadServer:
    """The answer-ahead server in a forked process, for one operation and value size."""

    def __init__(self, op: str, size: int):
        if op == "set":
            reply = OK_BATCH
        else:
            reply = b"$%d\r\n" % size + os.urandom(size) + b"\r\n"
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.process = multiprocessing.get_context("fork").Process(
            target=serve, args=(self.listener, reply), daemon=True)

    def __enter__(self):
        self.process.start()
        return self

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.listener.close()


def drain(listener: socket.socket) -> None:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    sock, _ = listener.accept()
    drop_input(sock)


def raw_stream_gbps(size: int, duration: float) -> float:
    """One-way TCP loopback stream (sendall of a buffer, receiver discards): the kernel's limit."""
    listener = socket.create_server(("127.0.0.1", 0))
    receiver = multiprocessing.get_context("fork").Process(target=drain, args=(listener,), daemon=True)
    receiver.start()
    try:
        with socket.create_connection(listener.getsockname()) as sock:
            data = os.urandom(size)
            sent, began = 0, time.perf_counter()
            while time.perf_counter() - began < duration:
                sock.sendall(data)
                sent += size
            elapsed = time.perf_counter() - began
        receiver.join(10)
        return sent / elapsed / 1e9
    finally:
        if receiver.is_alive():
            receiver.kill()
            receiver.join()
        listener.close()


def run(config: BenchConfig, sizes=None, duration: float | None = None) -> BenchResult:
    sizes = sizes or DEFAULT_SIZES
    duration = duration or (0.3 if config.quick else 1.0)
    label = "blobclient"
    result = BenchResult("client_ceiling", [label], {
        "sizes": "/".join(format_size(size) for size in sizes),
        "server": "raw sockets, answers ahead, stores nothing", "rounds": config.rounds})
    for size in sizes:
        tail = random_tail(size, config.seed + size)
        for op in ("set", "get"):
            with AheadServer(op, size) as server:
                for _ in range(config.rounds):
                    # every GET returns the server's one random payload: nothing to verify
                    workload = BlobWorkload(op, size, f"ceiling:{size}", tail,
                                            ring_for(size, config.quick), verify=False)
                    measured = run_phased(workload, server.port, 1, duration, warmup_phases=1)
                    name = f"{op.upper()} {format_size(size)} c=1"
                    tags = dict(op=op.upper(), size=size, conns=1)
                    result.add(f"{name} throughput", label, measured.gbps, "GB/s", "higher",
                               stat="gbps", **tags)
                    result.add(f"{name} client user CPU", label,
                               measured.ms_per_gb(measured.client_user),
                               "ms/GB", "lower", stat="user", **tags)
                    result.add(f"{name} client kernel CPU", label,
                               measured.ms_per_gb(measured.client_system),
                               "ms/GB", "lower", stat="system", **tags)
    for _ in range(config.rounds):
        result.add("raw TCP loopback stream (2 MiB sendall)", label, raw_stream_gbps(2 * MiB, duration),
                   "GB/s", "higher", stat="raw")
    result.notes.append("client CPU = CPU time of the client per GB moved, user space (the client's own "
                        "work) and kernel (the socket copy every TCP client pays); "
                        "1000 ms/GB is one full core at 1 GB/s.")
    result.notes.append("one connection against a server that answers ahead and stores nothing: the most "
                        "this client can move; compare with the c=1 rows of blobs.")
    return result


def add_arguments(parser):
    parser.add_argument("--sizes", type=parse_size_list, help="value sizes (default: those of blobs)")
    parser.add_argument("--duration", type=float, help="seconds of I/O per measurement")


if __name__ == "__main__":
    standalone_main(__doc__.splitlines()[0], run, add_arguments,
                    lambda args: dict(sizes=args.sizes, duration=args.duration))
