"""Client-side caching against hostile or careless clients: a tracking client that stops
reading is closed at its output limit and leaves nothing behind, thousands of prefixes
in one CLIENT TRACKING cost no stall, huge and binary key names travel whole, and the
table stays within tracking-table-max-keys however much a client reads."""
import socket
import time

import redis

from conftest import encode_command, parse_reply, raw_connection


def test_a_bcast_client_that_stops_reading_is_closed_at_its_output_limit(cxl_factory):
    server = cxl_factory(client_output_buffer_limit="normal 1mb 0 0")
    slow = socket.create_connection(("127.0.0.1", server.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sendall(encode_command("HELLO", "3") + encode_command("CLIENT", "TRACKING", "ON", "BCAST"))
    with redis.Redis(port=server.port, socket_timeout=10) as writer:
        deadline = time.monotonic() + 5
        while writer.info()["tracking_clients"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        name = b"k" * 60000                  # each change of it is a 60 KB message
        deadline = time.monotonic() + 30
        while writer.info()["tracking_clients"] and time.monotonic() < deadline:
            writer.set(name, "v")
        assert writer.info()["tracking_clients"] == 0, "the slow tracker was never closed"
        assert writer.info()["tracking_total_prefixes"] == 0
        assert all(c["flags"] == "N" for c in writer.client_list())
    slow.close()


def test_many_prefixes_in_one_call_cost_no_stall(cxl):
    many = [f"p{n}:" for n in range(50_000)] + ["zz:"]
    with raw_connection(cxl.port, timeout=10) as conn, raw_connection(cxl.port) as other:
        args = ["CLIENT", "TRACKING", "ON", "BCAST"]
        for prefix in many:
            args += ["PREFIX", prefix]
        started = time.monotonic()
        assert conn.request(*args) == b"+OK\r\n"
        overlapping = args[:4] + ["PREFIX", "q"] * 2 + args[4:]
        assert conn.request("CLIENT", "TRACKING", "OFF") == b"+OK\r\n"
        assert conn.request(*overlapping) == (b"-ERR Prefix 'q' overlaps with another provided prefix "
                                              b"'q'. Prefixes for a single client must not overlap.\r\n")
        assert conn.request(*args[:4], "PREFIX", "zz") == b"+OK\r\n"
        assert conn.request(*args) == (b"-ERR Prefix 'zz:' overlaps with an existing prefix 'zz'. "
                                       b"Prefixes for a single client must not overlap.\r\n")
        assert time.monotonic() - started < 10
        assert other.request("PING") == b"+PONG\r\n"
        assert conn.request("CLIENT", "TRACKING", "OFF") == b"+OK\r\n"


def test_huge_and_binary_key_names_are_invalidated_whole(cxl):
    names = [b"\x00\r\n\xff" * 3, b"n" * (1 << 20)]
    with raw_connection(cxl.port, timeout=10) as tracker, redis.Redis(port=cxl.port, socket_timeout=10) as writer:
        tracker.request("HELLO", "3")
        assert tracker.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"
        for name in names:
            tracker.request("GET", name)
            writer.set(name, "v")
            assert parse_reply(tracker.read_reply()) == [b"invalidate", [name]]
        writer.delete(*names)


def test_the_table_stays_bounded_however_much_is_read(cxl_factory):
    server = cxl_factory(tracking_table_max_keys=100)
    with raw_connection(server.port, timeout=10) as tracker, redis.Redis(port=server.port, socket_timeout=10) as admin:
        assert tracker.request("CLIENT", "TRACKING", "ON") == b"+OK\r\n"      # RESP2: no messages
        batch = b"".join(encode_command("GET", f"many:{n}") for n in range(5000))
        tracker.send(batch)
        for _ in range(5000):
            tracker.read_reply()
        assert admin.info()["tracking_total_keys"] <= 100 + 1
        assert tracker.request("PING") == b"+PONG\r\n"
