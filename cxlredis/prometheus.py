"""The Prometheus exporter (metrics-port): the counters INFO shows, as metrics.

prometheus-client serves GET /metrics from a thread of its own, so a scrape
never waits for the event loop and the loop never waits for a scrape. The
collector reads the server's counters at scrape time: Python counters are
copied (each copy is atomic under the GIL) and the arena's counters are read by
one Cython call each, which also holds the GIL; the exporter is stopped before
the arena is unmapped.
"""
import logging
import time

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from .leases import REF, SLOT
from .metrics import LATENCY_BUCKETS

log = logging.getLogger("cxlredis")

# Upper bounds of the command latency buckets, in seconds: bucket i counts calls under
# 2**i microseconds (Stats.commands); the last one is +Inf.
_BOUNDS = [f"{(1 << i) / 1e6:.6g}" for i in range(LATENCY_BUCKETS - 1)] + ["+Inf"]

# Per-tenant metrics: (name, help, key in Arena.tenants(), counter?)
_TENANT_METRICS = (
    ("tenant_stored_bytes", "Bytes of arena blocks on the tenant's bill.", "used_bytes", False),
    ("tenant_quota_bytes", "The tenant's memory quota (0: none).", "quota", False),
    ("tenant_guaranteed_bytes", "Bytes of the tenant's that no other tenant's pressure evicts "
     "(MIN; 0: none).", "guaranteed", False),
    ("tenant_borrowed_bytes", "Bytes the tenant holds past its guarantee (all of them with "
     "neither a guarantee nor a quota): what pressure evicts first.", "borrowed", False),
    ("tenant_reclaimed_bytes", "Bytes of the tenant evicted to give another tenant its "
     "guaranteed share back.", "reclaimed", True),
    ("tenant_keys", "Keys the tenant holds.", "keys", False),
    ("tenant_commands", "Commands run by the tenant's connections.", "commands", True),
    ("tenant_hits", "Key lookups that found a key.", "keyspace_hits", True),
    ("tenant_misses", "Key lookups that found nothing.", "keyspace_misses", True),
    ("tenant_evictions", "The tenant's keys evicted.", "evicted_keys", True),
    ("tenant_expirations", "The tenant's keys expired.", "expired_keys", True),
    ("tenant_rejected_writes", "Writes refused for lack of room (-OOM).", "rejected_writes", True),
    ("tenant_net_input_bytes", "Request bytes received for the tenant.", "bytes_in", True),
    ("tenant_net_output_bytes", "Reply bytes sent to the tenant's clients.", "bytes_out", True),
)


# The disk tier's metrics (disktier.DiskTier.stats), as (field, is a counter, help).
DISK_TIER_METRICS = (
    ("disk_tier_keys", False, "Keys whose only copy is in the disk tier."),
    ("disk_tier_bytes", False, "Value bytes of those copies."),
    ("disk_tier_file_bytes", False, "Bytes the disk tier's segment files take (what its budget counts)."),
    ("disk_tier_budget", False, "The disk tier's budget in bytes (disk-tier-size)."),
    ("disk_tier_hits", True, "Keys brought back from the disk tier for a command."),
    ("disk_tier_hit_bytes", True, "Value bytes brought back from the disk tier."),
    ("disk_tier_reads", True, "Reads of the disk tier."),
    ("disk_tier_read_usec", True, "Microseconds those reads took, summed."),
    ("disk_tier_written", True, "Entries evicted from the arena and written to the disk tier."),
    ("disk_tier_written_bytes", True, "Value bytes written to the disk tier."),
    ("disk_tier_queued_bytes", False, "Bytes of evicted values waiting for the disk tier's writer thread."),
    ("disk_tier_not_written", True,
     "Evicted entries not written: collections, expired, too large, or no segment ready."),
    ("disk_tier_write_errors", True, "Writes to the disk tier that failed (e.g. a full file system)."),
    ("disk_tier_bad_records", True, "Records dropped on read because they failed their checksum."),
    ("disk_tier_dropped_for_budget", True, "Records dropped to keep the disk tier within its budget."),
)


class ServerCollector:
    """Builds every metric family at scrape time from the counters INFO reads (metrics.Sources)."""

    def __init__(self, sources):
        self.sources = sources

    def collect(self):
        sources = self.sources
        arena = sources.arenas.main.stats()        # one walk of the free lists per scrape
        yield from self._commands(sources.stats)
        yield from self._server(sources, arena)
        yield from self._arena(sources, arena)
        if sources.disk_tier is not None:
            yield from self._disk_tier(sources.disk_tier.stats())
        yield from self._tenants(sources.tenants)

    @staticmethod
    def _disk_tier(stats):
        for field, counter, help_text in DISK_TIER_METRICS:
            family = CounterMetricFamily if counter else GaugeMetricFamily
            yield family(f"cxlredis_{field}", help_text, value=stats[field])

    @staticmethod
    def _commands(stats):
        calls = CounterMetricFamily("cxlredis_commands", "Commands run, by command.", labels=["command"])
        errors = CounterMetricFamily("cxlredis_command_errors",
                                     "Commands refused before running or failed, by command.",
                                     labels=["command"])
        latency = HistogramMetricFamily("cxlredis_command_duration_seconds",
                                        "Time spent running each command.", labels=["command"])
        for name, counters in sorted(dict(stats.commands).items()):
            count, usec, rejected, failed, buckets = counters[0], counters[1], counters[2], counters[3], \
                list(counters[4])
            calls.add_metric([name], count)
            errors.add_metric([name], rejected + failed)
            cumulative, total = [], 0
            for bound, n in zip(_BOUNDS, buckets):
                total += n
                cumulative.append((bound, total))
            latency.add_metric([name], cumulative, usec / 1e6)
        yield from (calls, errors, latency)

    @staticmethod
    def _server(sources, arena):
        stats = sources.stats
        yield GaugeMetricFamily("cxlredis_uptime_seconds", "Seconds since the server started.",
                                value=time.time() - sources.process.start_time)
        yield GaugeMetricFamily("cxlredis_connected_clients", "Client connections open.",
                                value=len(sources.clients))
        yield GaugeMetricFamily("cxlredis_blocked_clients",
                                "Clients blocked: held by CLIENT PAUSE, or in WAIT.",
                                value=sources.blocked.count())
        yield CounterMetricFamily("cxlredis_connections_received", "Connections accepted.",
                                  value=stats.total_connections_received)
        yield CounterMetricFamily("cxlredis_rejected_connections", "Connections refused (maxclients).",
                                  value=stats.rejected_connections)
        yield CounterMetricFamily("cxlredis_net_input_bytes", "Bytes received from clients.",
                                  value=stats.net_input_bytes)
        yield CounterMetricFamily("cxlredis_net_output_bytes", "Bytes of replies sent to clients.",
                                  value=stats.net_output_bytes)
        yield CounterMetricFamily("cxlredis_error_replies", "Error replies sent.",
                                  value=stats.total_error_replies)
        for name, key, help_text in (
                ("expired_keys", "expired_keys", "Keys deleted because their TTL passed."),
                ("evicted_keys", "evicted_keys", "Keys evicted to stay within maxmemory or a quota."),
                ("keyspace_hits", "keyspace_hits", "Key lookups that found a key."),
                ("keyspace_misses", "keyspace_misses", "Key lookups that found nothing.")):
            yield CounterMetricFamily(f"cxlredis_{name}", help_text, value=arena[key])
        keys = GaugeMetricFamily("cxlredis_keys", "Keys in each database (default tenant).",
                                 labels=["db"])
        for db in range(sources.config["databases"]):
            count = sources.arenas.main.dbsize(db)
            if count:
                keys.add_metric([str(db)], count)
        yield keys

    def _arena(self, sources, arena):
        for name, value, help_text in (
                ("arena_size_bytes", sources.arenas.main.size, "Size of the arena mapping."),
                ("arena_heap_bytes", arena["heap_size"], "Bytes of the arena's value heap."),
                ("arena_used_bytes", arena["heap_used"], "Heap bytes in use (entries, reservations)."),
                ("arena_free_bytes", arena["free_bytes"], "Heap bytes free."),
                ("arena_backing_bytes", arena["backing_bytes"],
                 "Bytes the arena's backing file holds (resident memory on tmpfs)."),
                ("arena_largest_free_block_bytes", arena["largest_free"], "The largest free block."),
                ("arena_dataset_bytes", arena["used_memory_dataset"], "Bytes of keys and values stored."),
                ("arena_entries", arena["entries"], "Entries in the arena, every tenant's."),
                ("arena_pinned_entries", arena["pinned"], "Entries pinned by replies being sent."),
                ("maxmemory_bytes", arena["maxmemory"] or arena["heap_size"],
                 "The effective maxmemory (the heap size when maxmemory is 0)."),
                ("used_memory_bytes", arena["used_memory"], "used_memory as INFO reports it.")):
            yield GaugeMetricFamily(f"cxlredis_{name}", help_text, value=value)
        yield CounterMetricFamily("cxlredis_arena_checksum_failures",
                                  "Values dropped on read because they failed their checksum.",
                                  value=sources.arenas.checksum_failures)
        yield GaugeMetricFamily("cxlredis_arena_fragmentation_ratio",
                                "1 - largest free block / free bytes (0: the free space is one block).",
                                value=arena["fragmentation"])
        yield from self._leases(sources.leases)

    @staticmethod
    def _leases(leases):
        held = GaugeMetricFamily("cxlredis_cxl_leases", "Leases co-located clients hold now.",
                                 labels=["kind"])
        granted = CounterMetricFamily("cxlredis_cxl_leases_granted", "Leases granted.", labels=["kind"])
        expired = CounterMetricFamily("cxlredis_cxl_leases_expired",
                                      "Leases that ran out instead of being released (clients that "
                                      "died, stalled or forgot them).", labels=["kind"])
        refused = CounterMetricFamily("cxlredis_cxl_leases_refused",
                                      "Lease requests refused by cxl-lease-max-bytes.", labels=["kind"])
        for kind, count in zip((REF, SLOT), leases.counts()):
            held.add_metric([kind], count)
            granted.add_metric([kind], leases.granted[kind])
            expired.add_metric([kind], leases.expired[kind])
            refused.add_metric([kind], leases.refused[kind])
        yield held
        yield granted
        yield expired
        yield refused
        yield GaugeMetricFamily("cxlredis_cxl_leased_bytes",
                                "Bytes held under leases now (what cxl-lease-max-bytes caps).",
                                value=leases.leased_bytes())
        yield CounterMetricFamily("cxlredis_cxl_slots_committed",
                                  "Reservations committed as values.", value=leases.commits)

    @staticmethod
    def _tenants(tenants):
        families = {}
        for name, help_text, _, counter in _TENANT_METRICS:
            kind = CounterMetricFamily if counter else GaugeMetricFamily
            families[name] = kind(f"cxlredis_{name}", help_text, labels=["tenant"])
        curves = GaugeMetricFamily(
            "cxlredis_tenant_hit_ratio_at_memory",
            "The tenant's miss-ratio curve: the hit ratio an LRU cache of factor × the tenant's "
            "memory (its quota, or what it holds) would get, from sampled references.",
            labels=["tenant", "factor"])
        for tenant in tenants.all_stats():
            for name, _, key, _ in _TENANT_METRICS:
                families[name].add_metric([tenant["name"]], tenant[key])
            for factor, ratio in (tenant["mrc"] or {}).items():
                curves.add_metric([tenant["name"], str(factor)], ratio)
        yield from families.values()
        yield curves


class Exporter:
    """The HTTP endpoint's thread, started and stopped with the server."""

    def __init__(self, sources):
        """sources: metrics.Sources, the counters to export (its config names the port)."""
        self.sources = sources
        self.httpd = None

    def start(self):
        cfg = self.sources.config
        port = cfg["metrics-port"]
        if not port:
            return
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ServerCollector(self.sources))
        try:
            self.httpd, _ = start_http_server(port, cfg["metrics-bind"], registry=registry)
        except OSError as e:
            raise SystemExit(f"Could not start the Prometheus exporter on "
                             f"{cfg['metrics-bind']}:{port}: {e}")
        log.notice("Prometheus metrics on http://%s:%d/metrics", cfg["metrics-bind"], port)

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
