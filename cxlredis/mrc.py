"""Miss-ratio curves per tenant, computed online by spatial sampling, as SHARDS does
(Waldspurger et al., "Efficient MRC Construction with SHARDS", FAST '15).

The arena keeps the references whose key hash is below a threshold (ext/arena/mrc.h):
reads (lookups that count a hit or a miss) and writes (commits). The cron hands them
here. For each tenant a sample of its keys is held in order of last reference (a
read that misses brings its key in, as the client's write after a miss does); a
read's reuse distance is the bytes of the distinct sampled keys referenced since the
key's previous reference, scaled up by the sampling rate, plus the key's own bytes.
An LRU cache of C bytes would have served the read if its distance is at most C, so
the histogram of distances is the tenant's hit ratio as a function of its memory.
Sizes are blocks as the quota counts them.

Fixed size: a tenant's sample holds at most `max_keys` keys. When one more is sampled,
the key with the largest hash leaves and the tenant's threshold drops to that hash,
its rate with it, so time and memory per tenant stay bounded whatever its key count.
Bounded time: when one cron tick brings more than TICK_REFERENCES references, the
server-wide rate drops in proportion (every sample leaves the keys above it), so the
cron's share of the event loop stays bounded whatever the load.

Adjusted, as SHARDS_adj: a hot key in (or out of) the sample skews it most at small
sizes. The arena counts every read (the tenant's hits and misses), so the difference
between those and the sampled reads, scaled up, goes to the smallest distance.
A curve begins at start, at TENANT RESETSTAT or at a change of tenant-mrc-sampling or
tenant-mrc-keys, and ages: each time its reads pass AGE_READS, everything it counted
weighs half, so it follows the tenant's recent traffic.
"""
import heapq
import math

from ._store import mrc_set_threshold, take_mrc_references

FACTORS = (0.25, 0.5, 1, 2, 4)
HASH_SPACE = 1 << 64
BINS_PER_OCTAVE = 32        # a distance is binned to within 2.2 % of itself
BINS = 64 * BINS_PER_OCTAVE
AGE_READS = 1 << 22         # a curve's counts weigh half past this many (estimated) reads
TICK_REFERENCES = 8192      # sampled references one cron tick takes; past it the rate drops


class ReuseSample:
    """One tenant's sampled keys and the histogram of its reads' reuse distances."""

    def __init__(self, threshold, max_keys):
        self.threshold = threshold
        self.max_keys = max_keys
        self.last = {}              # hash → [time of its last reference, its size]
        self.largest = []           # heap of -hash, to drop the largest hash first
        self.clock = 0
        self.tree = [0] * (4 * max_keys + 1)    # Fenwick tree: bytes by time of last reference
        self.histogram = [0.0] * BINS
        self.reads = 0.0            # reads, cold ones (never referenced before) included
        self.reads_before = 0       # the tenant's read count when the sample began

    def reference(self, key_hash, size, read):
        if key_hash >= self.threshold:
            return
        previous = self.last.get(key_hash)
        if read:
            self._count_read(previous, size)
            if not size and previous is not None:
                size = previous[1]      # missed here, as a larger cache would not have
        if previous is not None:
            self._add(previous[0], -previous[1])
        elif len(self.last) >= self.max_keys:
            if self._shrink(key_hash):
                return
        else:
            heapq.heappush(self.largest, -key_hash)
        if self.clock == len(self.tree) - 1:
            self._renumber()
        self.clock += 1
        self.last[key_hash] = [self.clock, size]
        self._add(self.clock, size)

    def _count_read(self, previous, size):
        # a sampled read stands for 1/rate reads: weighed so, counts taken before the
        # threshold dropped keep their share
        weight = HASH_SPACE / self.threshold
        self.reads += weight
        if previous is not None:
            others = self._bytes_after(previous[0])
            distance = others * weight + (size or previous[1])
            self.histogram[_bin(distance)] += weight

    def _shrink(self, key_hash):
        """Make room for key_hash by lowering the threshold below the largest hash held
        (key_hash's own, if it is the largest: True, it is not sampled after all)."""
        largest = -self.largest[0]
        if key_hash > largest:
            self.threshold = key_hash
            return True
        heapq.heapreplace(self.largest, -key_hash)
        dropped = self.last.pop(largest)
        self._add(dropped[0], -dropped[1])
        self.threshold = largest
        return False

    def lower(self, threshold):
        """Sample only hashes below threshold from now on: the keys above it leave."""
        if threshold >= self.threshold:
            return
        self.threshold = threshold
        for key_hash in [key_hash for key_hash in self.last if key_hash >= threshold]:
            clock, size = self.last.pop(key_hash)
            self._add(clock, -size)
        self.largest = [-key_hash for key_hash in self.last]
        heapq.heapify(self.largest)

    def _renumber(self):
        """The clock ran out of tree: number the keys' last references 1..n anew."""
        order = sorted(self.last.values())
        self.tree = [0] * len(self.tree)
        for clock, entry in enumerate(order, 1):
            entry[0] = clock
            self._add(clock, entry[1])
        self.clock = len(order)

    def _add(self, clock, nbytes):
        tree = self.tree
        while clock < len(tree):
            tree[clock] += nbytes
            clock += clock & -clock

    def _bytes_after(self, clock):
        """Bytes of the keys referenced after `clock`."""
        return self._bytes_upto(self.clock) - self._bytes_upto(clock)

    def _bytes_upto(self, clock):
        tree, total = self.tree, 0
        while clock:
            total += tree[clock]
            clock -= clock & -clock
        return total

    def age(self, reads_now):
        """Halve what the sample counted (the tenant has counted reads_now reads)."""
        self.histogram = [count / 2 for count in self.histogram]
        self.reads /= 2
        self.reads_before = reads_now - (reads_now - self.reads_before) / 2

    def hit_ratio(self, nbytes, reads_now):
        """The fraction of the tenant's reads an LRU cache of nbytes would have served,
        given how many reads the tenant has counted now."""
        reads = max(reads_now - self.reads_before, 1)
        served = reads - self.reads         # the adjustment: reads the sample missed (or
                                            # took too many of, when negative)
        if nbytes >= 1:
            position = math.log2(nbytes) * BINS_PER_OCTAVE
            whole = min(int(position), BINS)
            served += sum(self.histogram[:whole])
            if whole < BINS:
                served += self.histogram[whole] * (position - whole)
        return min(max(served / reads, 0.0), 1.0)


def _bin(distance):
    return min(int(math.log2(max(distance, 1)) * BINS_PER_OCTAVE), BINS - 1)


class MissRatioCurves:
    """The curves of every tenant, fed from the arena's sampled references."""

    def __init__(self, config):
        self.config = config
        self.samples = {}           # (arena address, tenant slot) → ReuseSample
        self.configure()
        for name in ("tenant-mrc-sampling", "tenant-mrc-keys"):
            config.on_change(name, lambda _: self.configure())

    def configure(self):
        """Sample one key in tenant-mrc-sampling (0: none), at most tenant-mrc-keys per
        tenant; the samples start anew."""
        one_in = self.config["tenant-mrc-sampling"]
        self.threshold = 0 if one_in == 0 else (HASH_SPACE - 1) // one_in
        self.samples.clear()
        take_mrc_references()
        mrc_set_threshold(self.threshold)

    def feed(self, read_counts):
        """Take the references the arena sampled since the last call (the cron's step);
        read_counts(): {(arena address, tenant slot): the tenant's reads}, asked when a
        sample begins or ages."""
        references = take_mrc_references()
        if not references:
            return
        if len(references) > TICK_REFERENCES:
            self._lower(self.threshold * TICK_REFERENCES // len(references))
            references = [ref for ref in references if ref[0] < self.threshold]
        samples, max_keys, begun = self.samples, self.config["tenant-mrc-keys"], []
        for key_hash, size, address, tenant, read in references:
            sample = samples.get((address, tenant))
            if sample is None:
                sample = samples[(address, tenant)] = ReuseSample(self.threshold, max_keys)
                begun.append((address, tenant))
            sample.reference(key_hash, size, read)
        aging = [key for key, sample in samples.items() if sample.reads >= AGE_READS]
        if begun or aging:
            counts = read_counts()
            for key in begun:
                # the reads of this first batch are taken to be what its sample says
                samples[key].reads_before = counts.get(key, 0) - samples[key].reads
            for key in aging:
                samples[key].age(counts.get(key, 0))

    def _lower(self, threshold):
        """The server-wide rate drops to threshold / 2^64, every sample with it."""
        self.threshold = max(threshold, 1)
        mrc_set_threshold(self.threshold)
        for sample in self.samples.values():
            sample.lower(self.threshold)

    def forget(self, address, tenant):
        """A tenant slot was dropped: its curve must not carry over to the next one."""
        self.samples.pop((address, tenant), None)

    def curve(self, address, tenant, memory, reads_now):
        """{factor: the hit ratio at factor × memory} for the tenant, which has counted
        reads_now reads; None before any sampled read."""
        sample = self.samples.get((address, tenant))
        if sample is None or not sample.reads:
            return None
        return {factor: sample.hit_ratio(factor * memory, reads_now) for factor in FACTORS}

    def rate(self, address, tenant):
        """The share of the tenant's keys its curve samples now, or None without a curve."""
        sample = self.samples.get((address, tenant))
        return None if sample is None or not sample.reads else sample.threshold / HASH_SPACE


def hit_ratios(stats):
    """(factor, hit ratio as text) of a tenant's curve in its stats (Tenants.stats), as
    TENANT INFO and INFO tenants show them; none before the curve has a sampled read."""
    curve = stats.get("mrc")
    if curve is None:
        return []
    return [(factor, f"{ratio:.4f}") for factor, ratio in curve.items()]
