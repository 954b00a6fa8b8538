"""Redis 7.0's pqsort (pqsort.c: NetBSD's qsort, after Bentley & McIlroy, that sorts only
the partitions a range of positions needs), for the replies Redis sorts with it: SORT BY
a pattern with a LIMIT, GEOSEARCH with a COUNT. It is not stable, so where elements
compare equal, which of them a range holds and in what order is what its partitioning
leaves; sorting them any other way answers differently. As in 7.0.15 (checked against it
on presorted and reversed inputs), a pass without swaps does not switch to insertion
sort, as older versions of that code did.
"""


def pqsort(items, cmp, first, last):
    """Sort items in place as far as positions first..last need (Redis's lrange and
    rrange), cmp(a, b) answering below, at or above 0 as sortCompare does. Partitions are
    taken from a list rather than by recursion: they are disjoint, so the order they are
    sorted in changes nothing, and a deep one cannot reach Python's recursion limit."""
    pending = [(0, len(items))]
    while pending:
        start, n = pending.pop()
        while n >= 7:
            left, right = _partition(items, start, n, cmp)
            if left > 1 and _needed(start, left, first, last):
                pending.append((start, left))
            start, n = start + n - right, right
            if right <= 1 or not _needed(start, right, first, last):
                break
        else:
            _insertion_sort(items, start, n, cmp)


def _needed(start, n, first, last):
    """Whether positions start..start+n-1 meet the range (pqsort's test on the pointers
    of the range's ends, which may lie before the array when the range is empty)."""
    end = start + n - 1
    return not ((first < start and last < start) or (first > end and last > end))


def _partition(items, start, n, cmp):
    """One pass over items[start:start + n]: everything below the pivot moves to the
    front, everything above it to the back, and what equals it between them; the sizes of
    the parts below and above."""
    middle = start + n // 2
    if n > 7:
        low, high = start, start + n - 1
        if n > 40:
            d = n // 8
            low = _median_of_three(items, low, low + d, low + 2 * d, cmp)
            middle = _median_of_three(items, middle - d, middle, middle + d, cmp)
            high = _median_of_three(items, high - 2 * d, high - d, high, cmp)
        middle = _median_of_three(items, low, middle, high, cmp)
    items[start], items[middle] = items[middle], items[start]
    pa = pb = start + 1
    pc = pd = start + n - 1
    while True:
        while pb <= pc:
            result = cmp(items[pb], items[start])
            if result > 0:
                break
            if result == 0:
                items[pa], items[pb] = items[pb], items[pa]
                pa += 1
            pb += 1
        while pb <= pc:
            result = cmp(items[pc], items[start])
            if result < 0:
                break
            if result == 0:
                items[pc], items[pd] = items[pd], items[pc]
                pd -= 1
            pc -= 1
        if pb > pc:
            break
        items[pb], items[pc] = items[pc], items[pb]
        pb += 1
        pc -= 1
    end = start + n
    r = min(pa - start, pb - pa)
    _swap_blocks(items, start, pb - r, r)
    r = min(pd - pc, end - pd - 1)
    _swap_blocks(items, pb, end - r, r)
    return pb - pa, pd - pc


def _insertion_sort(items, start, n, cmp):
    for m in range(start + 1, start + n):
        at = m
        while at > start and cmp(items[at - 1], items[at]) > 0:
            items[at - 1], items[at] = items[at], items[at - 1]
            at -= 1


def _median_of_three(items, a, b, c, cmp):
    if cmp(items[a], items[b]) < 0:
        return b if cmp(items[b], items[c]) < 0 else (c if cmp(items[a], items[c]) < 0 else a)
    return b if cmp(items[b], items[c]) > 0 else (a if cmp(items[a], items[c]) < 0 else c)


def _swap_blocks(items, a, b, n):
    for i in range(n):
        items[a + i], items[b + i] = items[b + i], items[a + i]
