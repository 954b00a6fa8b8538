/* The arena's C (ext/arena/) on its own: arenas formatted in anonymous shared memory
   (and one over a real file, argv[1] being a directory for it), driven through the
   same entry points ext/cxlredis/_store.pyx calls, and through the internal functions where a
   structure is checked directly. Compiled as one unit with the arena, as _store is. */
#include "arena/arena.c"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define ARENA_BYTES (8ull << 20)
#define KIB 1024ull
#define MIB (1024ull * 1024ull)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int backing_errno;

static cx_cfg settings(int policy) {
    cx_cfg c = {.policy = policy, .samples = 5, .rng = &rng, .backing_fd = -1, .backing_errno = &backing_errno};
    return c;
}

/* shared, so a forked child's stores are seen by the parent (the crash tests) */
static char *new_arena(void) {
    char *base = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    cx_format(base, ARENA_BYTES, 42);
    return base;
}

static void free_arena(char *base) { munmap(base, ARENA_BYTES); }

static uint64_t word(char *base, uint64_t off) { return *(uint64_t *)(base + off); }

/* SET key value as Keyspace.set does it: reserve, fill, commit */
static uint64_t put_at(char *base, const cx_cfg *cfg, unsigned tenant, unsigned pdb, const char *key,
                       const char *value, size_t value_len, int64_t expire_at, int64_t now, int checksum) {
    size_t klen = strlen(key);
    uint64_t off = cx_reserve(base, tenant, klen + (checksum ? 8 : 0), value_len, value_len, cfg, now);
    if (!off) return 0;
    memcpy(CX_VAL(CX_E(base, off)), value, value_len);
    cx_commit(base, off, pdb, (const uint8_t *)key, klen, expire_at, 0, 0, now, checksum);
    return off;
}

static uint64_t put(char *base, const cx_cfg *cfg, unsigned tenant, const char *key, const char *value,
                    int64_t expire_at, int64_t now) {
    return put_at(base, cfg, tenant, 0, key, value, strlen(value), expire_at, now, 0);
}

static uint64_t find(char *base, unsigned tenant, unsigned pdb, const char *key) {
    size_t klen = strlen(key);
    uint64_t h = cx_key_hash(CX_SB(base), tenant, pdb, (const uint8_t *)key, klen);
    return cx_find(base, h, tenant, pdb, (const uint8_t *)key, klen, NULL);
}

static int holds(char *base, uint64_t off, const char *value) {
    cx_entry *e = CX_E(base, off);
    return off && e->value_len == strlen(value) && memcmp(CX_VAL(e), value, e->value_len) == 0;
}

/* Walks the heap: the blocks tile it, each footer repeats its block's size, no two
   free blocks touch (they were coalesced), every free block is on the free list of
   its class and nothing else is, the bitmap marks exactly the non-empty classes, every
   quick block is on the quick list of its size, and heap_used is what is neither free
   nor quick. Returns the number of free blocks, -1 if broken. */
static int heap_check(char *base) {
    cx_super *sb = CX_SB(base);
    uint64_t off, size, used = 0, listed = 0, quick_blocks = 0;
    int free_blocks = 0, ok = 1, prev_free = 0;
    for (off = sb->heap_off; off < sb->heap_off + sb->heap_size; off += size) {
        size = CX_SIZE(word(base, off));
        if (size < CX_MIN_BLOCK || size > sb->heap_off + sb->heap_size - off) return -1;
        ok &= CHECK(word(base, off + size - 8) == size);
        unsigned st = CX_STATE(word(base, off));
        int is_free = st == CX_FREE;
        ok &= CHECK(!(is_free && prev_free));
        prev_free = is_free;
        if (is_free) free_blocks++;
        else if (st == CX_QUICK) quick_blocks++;
        else used += size;
    }
    ok &= CHECK(off == sb->heap_off + sb->heap_size);
    ok &= CHECK(used == sb->heap_used);
    for (unsigned c = 0; c < CX_NCLASS; c++) {
        int marked = (sb->free_map[c >> 6] >> (c & 63)) & 1;
        ok &= CHECK(marked == (sb->free_head[c] != 0));
        uint64_t prev = 0;
        for (uint64_t cur = sb->free_head[c]; cur; prev = cur, cur = ((cx_freeblk *)(base + cur))->next) {
            cx_freeblk *f = (cx_freeblk *)(base + cur);
            ok &= CHECK(CX_STATE(f->size_state) == CX_FREE && cx_class(CX_SIZE(f->size_state)) == c);
            ok &= CHECK(f->prev == prev);
            listed++;
        }
    }
    ok &= CHECK(listed == (uint64_t)free_blocks);
    listed = 0;
    for (unsigned c = 0; c < CX_QUICK_CLASSES; c++) {
        for (uint64_t cur = sb->quick_head[c]; cur; cur = ((cx_freeblk *)(base + cur))->next) {
            ok &= CHECK(word(base, cur) == ((uint64_t)c << 6 | CX_QUICK));
            listed++;
        }
    }
    ok &= CHECK(listed == quick_blocks);
    return ok ? free_blocks : -1;
}

/* ---------------------------------------------------------------- the heap */

static void test_size_classes(void) {
    CHECK_EQ(cx_class(64), 1);
    CHECK_EQ(cx_class(4032), 63);          /* exact classes up to 4 KiB ... */
    CHECK_EQ(cx_class(4096), 64);          /* ... then eight per power of two */
    CHECK_EQ(cx_class(4096 + 511), 64);
    CHECK_EQ(cx_class(4096 + 512), 65);
    CHECK_EQ(cx_class(8192), 72);
    CHECK_EQ(cx_class(MIB), 128);
    CHECK_EQ(cx_class(~0ull & ~63ull), CX_NCLASS - 1);
    unsigned last = 0;
    for (uint64_t size = 64; size < (1ull << 44); size += size / 7 + 64 - (size / 7) % 64) {
        unsigned c = cx_class(size);
        CHECK(c >= last && c < CX_NCLASS);
        last = c;
    }
}

static void test_heap_alloc_free_coalesce(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int err = 0;
    /* blocks above the quick lists' sizes (test_heap_quick_lists has those) */
    CHECK_EQ(heap_check(base), 1);                          /* formatted: one free block */
    CHECK_EQ(CX_SIZE(word(base, sb->heap_off)), sb->heap_size);

    uint64_t a = cx_heap_alloc(base, 4096, &cfg, &err);
    uint64_t b = cx_heap_alloc(base, 8192, &cfg, &err);
    uint64_t c = cx_heap_alloc(base, 16384, &cfg, &err);
    CHECK_EQ(err, 0);
    CHECK_EQ(a, sb->heap_off);                             /* each split off the front of the rest */
    CHECK_EQ(b, a + 4096);
    CHECK_EQ(c, b + 8192);
    CHECK_EQ(word(base, b), 8192 | CX_RESERVED);
    CHECK_EQ(sb->heap_used, 4096 + 8192 + 16384);
    CHECK_EQ(heap_check(base), 1);

    CHECK_EQ(cx_heap_free(base, b), b);                    /* between two allocated blocks */
    CHECK_EQ(word(base, b), 8192 | CX_FREE);
    CHECK_EQ(heap_check(base), 2);
    CHECK_EQ(cx_heap_free(base, a), a);                    /* merges with b on its right */
    CHECK_EQ(word(base, a), 12288 | CX_FREE);
    CHECK_EQ(heap_check(base), 2);
    CHECK_EQ(cx_heap_free(base, c), sb->heap_off);         /* merges left and right: all free again */
    CHECK_EQ(word(base, sb->heap_off), sb->heap_size | CX_FREE);
    CHECK_EQ(sb->heap_used, 0);
    CHECK_EQ(heap_check(base), 1);
    free_arena(base);
}

static void test_heap_reuses_holes_by_class(void) {
    /* blocks above the quick lists' sizes, so that a free goes to the free lists */
    const uint64_t big = CX_QUICK_CLASSES * 64 + 448;
    char *base = new_arena();
    cx_cfg cfg = settings(CX_NOEVICTION);
    int err = 0;
    uint64_t x = cx_heap_alloc(base, big, &cfg, &err);
    uint64_t y = cx_heap_alloc(base, big, &cfg, &err);
    uint64_t z = cx_heap_alloc(base, big, &cfg, &err);
    cx_heap_free(base, y);
    CHECK_EQ(word(base, y), big | CX_FREE);
    /* a smaller request takes the hole (the nearest class above its own) and splits it */
    CHECK_EQ(cx_heap_alloc(base, big - 64, &cfg, &err), y);
    CHECK_EQ(word(base, y + big - 64), 64 | CX_FREE);
    /* the 64-byte rest is first in its own class */
    CHECK_EQ(cx_heap_alloc(base, 64, &cfg, &err), y + big - 64);
    CHECK_EQ(heap_check(base), 1);
    /* a block too small to split off (under 64 bytes left) goes whole; the 64-byte block
       waits on its quick list until a drain merges it */
    cx_heap_free(base, y);
    cx_heap_free(base, y + big - 64);
    CHECK_EQ(word(base, y + big - 64), 64 | CX_QUICK);
    CHECK_EQ(cx_quick_drain(base), 1);
    CHECK_EQ(word(base, y), big | CX_FREE);
    CHECK_EQ(cx_heap_alloc(base, big, &cfg, &err), y);
    CHECK_EQ(word(base, y), big | CX_RESERVED);
    CHECK_EQ(heap_check(base), 1);
    cx_heap_free(base, x);
    cx_heap_free(base, y);
    cx_heap_free(base, z);
    CHECK_EQ(heap_check(base), 1);
    CHECK_EQ(err, 0);
    free_arena(base);
}

/* Small freed blocks wait whole on the quick list of their size, last in first out, at
   most CX_QUICK_DEPTH of them; they count as free; an allocation the free lists cannot
   serve merges them back first; a rebuild turns them into free blocks, dropping nothing. */
static void test_heap_quick_lists(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int err = 0;
    uint64_t a = cx_heap_alloc(base, 256, &cfg, &err);
    uint64_t b = cx_heap_alloc(base, 256, &cfg, &err);
    uint64_t guard = cx_heap_alloc(base, 256, &cfg, &err);
    uint64_t used = sb->heap_used;
    cx_heap_free(base, a);
    cx_heap_free(base, b);
    /* unmerged though they touch, and off heap_used */
    CHECK_EQ(word(base, a), 256 | CX_QUICK);
    CHECK_EQ(word(base, b), 256 | CX_QUICK);
    CHECK_EQ(sb->heap_used, used - 512);
    CHECK_EQ(sb->quick_len[4], 2);
    CHECK_EQ(heap_check(base), 1);
    /* the last freed comes back first, for its own size only */
    CHECK(cx_heap_alloc(base, 192, &cfg, &err) > guard);
    CHECK_EQ(cx_heap_alloc(base, 256, &cfg, &err), b);
    CHECK_EQ(word(base, b), 256 | CX_RESERVED);
    CHECK_EQ(cx_heap_alloc(base, 256, &cfg, &err), a);
    CHECK_EQ(sb->quick_len[4], 0);
    CHECK_EQ(heap_check(base), 1);
    /* a full list sends the rest to the free lists, merged */
    uint64_t blocks[CX_QUICK_DEPTH + 4];
    for (int i = 0; i < CX_QUICK_DEPTH + 4; i++) blocks[i] = cx_heap_alloc(base, 128, &cfg, &err);
    for (int i = 0; i < CX_QUICK_DEPTH + 4; i++) cx_heap_free(base, blocks[i]);
    CHECK_EQ(sb->quick_len[2], CX_QUICK_DEPTH);
    CHECK_EQ(word(base, blocks[CX_QUICK_DEPTH - 1]), 128 | CX_QUICK);
    CHECK_EQ(CX_STATE(word(base, blocks[CX_QUICK_DEPTH])), CX_FREE);
    CHECK(CX_SIZE(word(base, blocks[CX_QUICK_DEPTH])) > 4 * 128);   /* with the heap's rest */
    CHECK_EQ(heap_check(base), 1);
    /* the free lists run dry: the quick blocks merge first, and a request no single one
       of them fits is served from the space they make together */
    for (unsigned c = cx_class_above(sb, 0); c < CX_NCLASS; c = cx_class_above(sb, 0)) {
        uint64_t off = sb->free_head[c];
        CHECK_EQ(cx_heap_alloc(base, CX_SIZE(word(base, off)), &cfg, &err), off);
    }
    CHECK_EQ(cx_heap_alloc(base, CX_QUICK_DEPTH * 128, &cfg, &err), blocks[0]);
    for (unsigned c = 0; c < CX_QUICK_CLASSES; c++) CHECK_EQ(sb->quick_len[c] + (sb->quick_head[c] != 0), 0);
    CHECK_EQ(heap_check(base), 0);
    CHECK_EQ(cx_heap_alloc(base, 64, &cfg, &err), 0);
    CHECK_EQ(err, 0);
    free_arena(base);

    /* a rebuild finds quick blocks free, and drops nothing for them */
    base = new_arena();
    sb = CX_SB(base);
    uint64_t k1 = put(base, &cfg, 0, "k1", "v1", -1, 1000);
    put(base, &cfg, 0, "k2", "v2", -1, 1000);
    cx_drop(base, k1, 1);
    CHECK_EQ(CX_STATE(word(base, k1)), CX_QUICK);
    CHECK_EQ(cx_rebuild(base), 0);
    for (unsigned c = 0; c < CX_QUICK_CLASSES; c++) CHECK_EQ(sb->quick_len[c] + (sb->quick_head[c] != 0), 0);
    CHECK_EQ(CX_STATE(word(base, k1)), CX_FREE);
    CHECK_EQ(heap_check(base), 2);
    CHECK(holds(base, find(base, 0, 0, "k2"), "v2"));
    free_arena(base);
}

/* The backing's pages: allocated (fallocate) before a block is handed out, punched out
   of a big free block once it has been idle, allocated again when it is reused. */
static void test_backing_pages(const char *dir) {
    char path[4096];
    int fd = -1, is_chr = 1, created = 0, err = 0;
    uint64_t file_size = 1, avail, total, grain = 0;
    char *base = NULL;
    snprintf(path, sizeof path, "%s/test.arena", dir);
    unlink(path);
    CHECK_EQ(cx_os_open(path, &fd, &file_size, &is_chr, &created), 0);
    CHECK(created && !is_chr && file_size == 0);
    CHECK_EQ(cx_os_lock(fd, 0, ARENA_BYTES), 0);
    int other = open(path, O_RDWR);
    CHECK_EQ(cx_os_lock(other, 0, ARENA_BYTES), EAGAIN);   /* another open of it is refused */
    close(other);
    CHECK_EQ(cx_os_space(fd, &avail, &total, &grain), 0);
    CHECK(avail >= ARENA_BYTES && total >= avail && grain >= 4096 && !(grain & (grain - 1)));
    CHECK_EQ(cx_os_truncate(fd, ARENA_BYTES), 0);
    CHECK_EQ(cx_os_map(fd, 0, ARENA_BYTES, &base), 0);
    CHECK_EQ(cx_os_held(fd, 0, ARENA_BYTES), 0);           /* sparse: nothing allocated yet */

    /* what Arena._back_metadata allocates before formatting */
    uint64_t heap_off = cx_heap_off_for(ARENA_BYTES);
    CHECK_EQ(cx_back_range(base, fd, 0, grain, ARENA_BYTES, 0, heap_off + CX_HDR), 0);
    CHECK_EQ(cx_back_range(base, fd, 0, grain, ARENA_BYTES, ARENA_BYTES - 8, 8), 0);
    cx_format(base, ARENA_BYTES, 7);
    uint64_t metadata = cx_os_held(fd, 0, ARENA_BYTES);
    CHECK(metadata >= heap_off && metadata < heap_off + 2 * MIB);

    cx_cfg cfg = settings(CX_NOEVICTION);
    cfg.backing_fd = fd;
    cfg.grain = grain;
    uint64_t off = cx_heap_alloc(base, 3 * MIB, &cfg, &err);
    CHECK(off && err == 0);
    uint64_t backed = cx_os_held(fd, 0, ARENA_BYTES);
    CHECK(backed >= metadata + 3 * MIB);
    memset(base + off + CX_HDR, 0xab, 3 * MIB - CX_HDR - 8);

    cx_heap_free(base, off);
    int64_t now = cx_now_ms();
    /* the first look only notes when the block was first seen idle */
    CHECK_EQ(cx_release_free(base, &cfg, now, 1000, 64 * MIB, 4096), 0);
    CHECK_EQ(cx_release_free(base, &cfg, now + 999, 1000, 64 * MIB, 4096), 0);
    uint64_t punched = cx_release_free(base, &cfg, now + 1000, 1000, 64 * MIB, 4096);
    CHECK(punched >= 3 * MIB);
    CHECK(cx_os_held(fd, 0, ARENA_BYTES) <= backed - 3 * MIB + 2 * grain);
    CHECK_EQ(cx_release_free(base, &cfg, now + 2000, 1000, 64 * MIB, 4096), 0);   /* hollow: not again */
    CHECK_EQ(heap_check(base), 1);

    /* reusing the punched pages allocates them again first */
    uint64_t again = cx_heap_alloc(base, 3 * MIB, &cfg, &err);
    CHECK(again == off && err == 0);
    CHECK(cx_os_held(fd, 0, ARENA_BYTES) >= backed - 2 * grain);
    CHECK(base[again + CX_HDR + MIB] == 0);                /* punched pages read as zeros */
    cx_heap_free(base, again);

    cx_os_unmap(base, ARENA_BYTES, fd, 1);
    unlink(path);
}

/* The warmer faults in the pages past the fresh memory the allocator took, within the
   free block that memory came from, touches no byte, and gives its pages back once no
   hint has come for the release's min_age; the heap stays whole throughout. */
static void test_warmer_runs_ahead_and_gives_back(const char *dir) {
    const uint64_t size = 64 * MIB, window = 8 * MIB;
    char path[4096];
    int fd = -1, is_chr = 1, created = 0, err = 0;
    uint64_t file_size = 1, avail, total, grain = 0;
    char *base = NULL;
    snprintf(path, sizeof path, "%s/warm.arena", dir);
    unlink(path);
    CHECK_EQ(cx_os_open(path, &fd, &file_size, &is_chr, &created), 0);
    CHECK_EQ(cx_os_space(fd, &avail, &total, &grain), 0);
    CHECK_EQ(cx_os_truncate(fd, size), 0);
    CHECK_EQ(cx_os_map(fd, 0, size, &base), 0);
    uint64_t heap_off = cx_heap_off_for(size);
    CHECK_EQ(cx_back_range(base, fd, 0, grain, size, 0, heap_off + CX_HDR), 0);
    CHECK_EQ(cx_back_range(base, fd, 0, grain, size, size - 8, 8), 0);
    cx_format(base, size, 7);

    cx_cfg cfg = settings(CX_NOEVICTION);
    cfg.backing_fd = fd;
    cfg.grain = grain;
    cfg.warmer = cx_warmer_start(base, size, window);
    if (!cfg.warmer) {                  /* before Linux 5.14: no MADV_POPULATE_WRITE, no warmer */
        CHECK_EQ(madvise(base, 0, MADV_POPULATE_WRITE) != 0 && errno == EINVAL, 1);
        printf("skip test_warmer_runs_ahead_and_gives_back: no MADV_POPULATE_WRITE\n");
        cx_os_unmap(base, size, fd, 1);
        unlink(path);
        return;
    }
    uint64_t before = cx_os_held(fd, 0, size);
    uint64_t off = cx_heap_alloc(base, 3 * MIB, &cfg, &err);
    CHECK(off && err == 0);
    memset(base + off + CX_HDR, 0x5a, 3 * MIB - CX_HDR - 8);
    for (int i = 0; i < 500 && cx_warmer_warmed(cfg.warmer) < window - grain; i++) usleep(10000);
    uint64_t warmed = cx_warmer_warmed(cfg.warmer);
    CHECK(warmed >= window - grain && warmed <= window);
    /* the block, the 2 MiB backed ahead of it, and the warmed pages are the file's */
    CHECK(cx_os_held(fd, 0, size) >= before + 5 * MIB + warmed - grain);

    /* not given back while the hint is fresh; then all of it, and only once */
    int64_t hinted = cfg.warmer->hinted_ms;
    CHECK_EQ(cx_release_free(base, &cfg, hinted + 999, 1000, 64 * MIB, 4096), 0);
    uint64_t punched = cx_release_free(base, &cfg, hinted + 1000, 1000, 64 * MIB, 4096);
    CHECK(punched >= warmed - 2 * grain && punched <= warmed);
    CHECK(cx_os_held(fd, 0, size) <= before + 5 * MIB + 3 * grain);
    CHECK_EQ(cx_release_free(base, &cfg, hinted + 2000, 1000, 64 * MIB, 4096), 0);
    CHECK_EQ(heap_check(base), 1);
    int intact = 1;
    for (uint64_t i = CX_HDR; i < 3 * MIB - 8; i++) intact &= (unsigned char)base[off + i] == 0x5a;
    CHECK(intact);

    /* the next fresh block is backed by the allocator as before, and warmed past again */
    uint64_t next = cx_heap_alloc(base, 3 * MIB, &cfg, &err);
    CHECK(next == off + 3 * MIB && err == 0);
    CHECK(base[next + CX_HDR + 2 * MIB] == 0);
    for (int i = 0; i < 500 && cx_warmer_warmed(cfg.warmer) < warmed + window / 2; i++) usleep(10000);
    CHECK(cx_warmer_warmed(cfg.warmer) >= warmed + window / 2);
    cx_heap_free(base, next);
    cx_heap_free(base, off);
    CHECK_EQ(heap_check(base), 1);

    cx_warmer_stop(cfg.warmer);
    cx_os_unmap(base, size, fd, 1);
    unlink(path);
}

/* Two arenas in one file, at offsets 0 and ARENA_BYTES: each locks, allocates and
   punches only its own region. */
static void test_backing_regions(const char *dir) {
    char path[4096];
    int fd[2], other, is_chr = 1, created = 0, err = 0, locked = -1;
    uint64_t file_size = 1, avail, total, grain = 0, region[2] = {0, ARENA_BYTES};
    char *base[2];
    snprintf(path, sizeof path, "%s/regions.arena", dir);
    unlink(path);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(cx_os_open(path, &fd[i], &file_size, &is_chr, &created), 0);
        CHECK_EQ(cx_os_lock(fd[i], region[i], ARENA_BYTES), 0);  /* the other region's lock is not in the way */
    }
    other = open(path, O_RDWR);
    CHECK_EQ(cx_os_lock(other, ARENA_BYTES / 2, ARENA_BYTES), EAGAIN);     /* overlaps both */
    CHECK_EQ(cx_os_locked(other, 2 * ARENA_BYTES, 0, &locked), 0);
    CHECK_EQ(locked, 0);
    CHECK_EQ(cx_os_locked(other, ARENA_BYTES, 0, &locked), 0);
    CHECK_EQ(locked, 1);
    close(other);
    CHECK_EQ(cx_os_space(fd[0], &avail, &total, &grain), 0);
    CHECK_EQ(cx_os_truncate(fd[0], 2 * ARENA_BYTES), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(cx_os_map(fd[i], region[i], ARENA_BYTES, &base[i]), 0);
        CHECK_EQ(cx_back_range(base[i], fd[i], region[i], grain, ARENA_BYTES, 0, ARENA_BYTES), 0);
        cx_format(base[i], ARENA_BYTES, 11 + (uint64_t)i);
    }
    CHECK_EQ(cx_os_held(fd[1], ARENA_BYTES, ARENA_BYTES), ARENA_BYTES);
    /* the first region, full of its own bytes; the second frees a big block and punches it */
    memset(base[0] + cx_heap_off_for(ARENA_BYTES), 0x5a, ARENA_BYTES - cx_heap_off_for(ARENA_BYTES));
    cx_cfg cfg = settings(CX_NOEVICTION);
    cfg.backing_fd = fd[1];
    cfg.backing_off = ARENA_BYTES;
    cfg.grain = grain;
    uint64_t off = cx_heap_alloc(base[1], 3 * MIB, &cfg, &err);
    CHECK(off && err == 0);
    cx_heap_free(base[1], off);
    int64_t now = cx_now_ms();
    CHECK_EQ(cx_release_free(base[1], &cfg, now, 1000, 64 * MIB, 4096), 0);
    CHECK(cx_release_free(base[1], &cfg, now + 1000, 1000, 64 * MIB, 4096) >= 2 * MIB);
    CHECK(cx_os_held(fd[1], ARENA_BYTES, ARENA_BYTES) <= ARENA_BYTES - 2 * MIB);
    CHECK_EQ(cx_os_held(fd[0], 0, ARENA_BYTES), ARENA_BYTES);
    int intact = 1;
    for (uint64_t i = cx_heap_off_for(ARENA_BYTES); i < ARENA_BYTES; i++) intact &= base[0][i] == 0x5a;
    CHECK(intact);
    CHECK_EQ(heap_check(base[1]), 1);
    for (int i = 0; i < 2; i++) cx_os_unmap(base[i], ARENA_BYTES, fd[i], 1);
    unlink(path);
}

/* ---------------------------------------------------------------- the index */

static void test_index_chains_with_colliding_buckets(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    uint64_t mask = sb->index_buckets - 1;
    uint64_t bucket = cx_key_hash(sb, 0, 0, (const uint8_t *)"k0", 2) & mask;
    char keys[3][16] = {"k0"};
    int found = 1;
    for (int i = 1; found < 3; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%d", i);
        if ((cx_key_hash(sb, 0, 0, (const uint8_t *)key, strlen(key)) & mask) == bucket)
            strcpy(keys[found++], key);
    }
    uint64_t off[3];
    for (int i = 0; i < 3; i++) off[i] = put(base, &cfg, 0, keys[i], keys[i], -1, now);
    put(base, &cfg, 0, "elsewhere", "x", -1, now);

    /* the chain holds the three, the latest first */
    uint64_t chain[4] = {0}, n = 0;
    for (uint64_t cur = CX_BUCKETS(base)[bucket]; cur && n < 4; cur = CX_E(base, cur)->chain_next) chain[n++] = cur;
    CHECK_EQ(n, 3);
    CHECK(chain[0] == off[2] && chain[1] == off[1] && chain[2] == off[0]);
    for (int i = 0; i < 3; i++) CHECK_EQ(find(base, 0, 0, keys[i]), off[i]);

    /* dropping the middle one relinks the chain around it */
    cx_drop(base, off[1], 1);
    CHECK_EQ(find(base, 0, 0, keys[1]), 0);
    CHECK_EQ(find(base, 0, 0, keys[0]), off[0]);
    CHECK_EQ(find(base, 0, 0, keys[2]), off[2]);
    CHECK_EQ(CX_E(base, off[2])->chain_next, off[0]);
    CHECK_EQ(sb->entries, 3);
    CHECK_EQ(sb->db_keys[0], 3);
    CHECK_EQ(word(base, off[1]) & 63, CX_QUICK);             /* off[1]'s block was freed */
    CHECK_EQ(heap_check(base), 1);
    free_arena(base);
}

/* Entries whose whole 64-bit hash is the same are told apart by tenant, db and key. */
static void test_index_identity_beyond_the_hash(void) {
    char *base = new_arena();
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    const uint64_t h = 0x5eed5eed5eed5eedull;
    uint64_t off[3];
    const char *keys[3] = {"xa", "xb", "xa"};
    const unsigned dbs[3] = {0, 0, 1};
    for (int i = 0; i < 3; i++) {
        off[i] = cx_reserve(base, 0, 2, 1, 1, &cfg, now);
        cx_entry *e = CX_E(base, off[i]);
        memcpy(CX_KEY(e), keys[i], 2);
        e->key_len = 2;
        e->db = (uint16_t)dbs[i];
        e->hash = h;
        cx_index_push(base, off[i]);
    }
    CHECK_EQ(cx_find(base, h, 0, 0, (const uint8_t *)"xa", 2, NULL), off[0]);
    CHECK_EQ(cx_find(base, h, 0, 0, (const uint8_t *)"xb", 2, NULL), off[1]);
    CHECK_EQ(cx_find(base, h, 0, 1, (const uint8_t *)"xa", 2, NULL), off[2]);
    CHECK_EQ(cx_find(base, h, 0, 0, (const uint8_t *)"xc", 2, NULL), 0);
    CHECK_EQ(cx_find(base, h, 1, 0, (const uint8_t *)"xa", 2, NULL), 0);
    CHECK_EQ(cx_find(base, h, 0, 0, (const uint8_t *)"x", 1, NULL), 0);
    uint64_t *link = NULL;
    CHECK_EQ(cx_find(base, h, 0, 0, (const uint8_t *)"xb", 2, &link), off[1]);
    CHECK(link == &CX_E(base, off[2])->chain_next);        /* pushed after it: it comes first */
    cx_index_unlink(base, off[0]);
    CHECK_EQ(cx_find(base, h, 0, 0, (const uint8_t *)"xa", 2, NULL), 0);
    CHECK_EQ(cx_find(base, h, 0, 0, (const uint8_t *)"xb", 2, NULL), off[1]);
    cx_index_unlink(base, off[1]);
    cx_index_unlink(base, off[2]);
    for (int i = 0; i < 3; i++) cx_release(base, off[i]);
    CHECK_EQ(CX_SB(base)->reserved, 0);
    CHECK_EQ(heap_check(base), 1);
    free_arena(base);
}

static void test_same_key_per_db_and_tenant(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    CHECK(cx_tenant_create(base, 5, (const uint8_t *)"five", 4, 0, 0, &cfg, now));
    uint64_t a = put_at(base, &cfg, 0, 0, "k", "db0", 3, -1, now, 0);
    uint64_t b = put_at(base, &cfg, 0, 1, "k", "db1", 3, -1, now, 0);
    uint64_t c = put_at(base, &cfg, 5, 0, "k", "five", 4, -1, now, 0);
    CHECK(a && b && c && a != b && b != c);
    CHECK(holds(base, find(base, 0, 0, "k"), "db0"));
    CHECK(holds(base, find(base, 0, 1, "k"), "db1"));
    CHECK(holds(base, find(base, 5, 0, "k"), "five"));
    CHECK(sb->db_keys[0] == 1 && sb->db_keys[1] == 1 && cx_db_keys(base, 5)[0] == 1);
    CHECK(sb->tenants[0].keys == 2 && sb->tenants[5].keys == 1);
    /* an overwrite replaces the entry of its own identity only */
    uint64_t a2 = put_at(base, &cfg, 0, 0, "k", "new", 3, -1, now, 0);
    CHECK(holds(base, find(base, 0, 0, "k"), "new"));
    CHECK(a2 != a && CX_STATE(word(base, a)) == CX_QUICK);
    CHECK(holds(base, find(base, 0, 1, "k"), "db1") && holds(base, find(base, 5, 0, "k"), "five"));
    CHECK_EQ(sb->entries, 3);
    /* dropping the tenant takes its entries and its counter table, nothing else */
    cx_tenant_drop(base, 5);
    CHECK_EQ(find(base, 5, 0, "k"), 0);
    CHECK(!(cx_tenant_bits(sb) & (1ull << 5)) && sb->tmeta[5].incarnation == 0);
    CHECK_EQ(sb->entries, 2);
    CHECK(heap_check(base) >= 1);
    free_arena(base);
}

/* ---------------------------------------------------------------- LRU and eviction */

/* the first letters of tenant t's list l, from the head (most recent) */
static void lru_letters(char *base, unsigned t, int l, char *out, size_t cap) {
    cx_tenant *tn = &CX_SB(base)->tenants[t];
    size_t n = 0;
    uint64_t prev = 0, cur;
    for (cur = tn->head[l]; cur && n + 1 < cap; prev = cur, cur = CX_E(base, cur)->lru_next) {
        CHECK_EQ(CX_E(base, cur)->lru_prev, prev);
        out[n++] = (char)CX_KEY(CX_E(base, cur))[0];
    }
    CHECK_EQ(tn->tail[l], prev);
    out[n] = 0;
}

static void test_lru_order(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 10000;
    char order[16];
    uint64_t a = put(base, &cfg, 0, "a", "1", -1, t0);
    uint64_t b = put(base, &cfg, 0, "b", "2", -1, t0 + 1);
    uint64_t c = put(base, &cfg, 0, "c", "3", -1, t0 + 2);
    put(base, &cfg, 0, "v", "4", t0 + 3600000, t0 + 3);
    lru_letters(base, 0, 0, order, sizeof order);
    CHECK(strcmp(order, "cba") == 0);
    lru_letters(base, 0, 1, order, sizeof order);
    CHECK(strcmp(order, "v") == 0);
    CHECK_EQ(sb->tenants[0].list_bytes[0], CX_SIZE(word(base, a)) + CX_SIZE(word(base, b)) + CX_SIZE(word(base, c)));

    /* a touching lookup makes the entry the most recent; a plain one does not */
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"a", 1, 1, 1, 0, &rng, NULL), a);
    lru_letters(base, 0, 0, order, sizeof order);
    CHECK(strcmp(order, "acb") == 0);
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"b", 1, 0, 1, 0, &rng, NULL), b);
    lru_letters(base, 0, 0, order, sizeof order);
    CHECK(strcmp(order, "acb") == 0);
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"z", 1, 1, 1, 0, &rng, NULL), 0);
    CHECK(sb->hits == 2 && sb->misses == 1 && sb->tenants[0].hits == 2);

    /* a TTL moves it to the volatile list, PERSIST back, each time as the most recent */
    cx_set_expire(base, b, t0 + 7200000, t0 + 10);
    lru_letters(base, 0, 0, order, sizeof order);
    CHECK(strcmp(order, "ac") == 0);
    lru_letters(base, 0, 1, order, sizeof order);
    CHECK(strcmp(order, "bv") == 0);
    CHECK(sb->db_volatile[0] == 2 && sb->tenants[0].volatile_keys == 2);
    cx_set_expire(base, b, -1, t0 + 11);
    lru_letters(base, 0, 0, order, sizeof order);
    CHECK(strcmp(order, "bac") == 0);
    CHECK_EQ(sb->db_volatile[0], 1);
    free_arena(base);
}

/* references to keys whose hash is below the threshold are kept for the miss-ratio
   curves: counted reads (hit: the block's size, miss: 0) and commits; nothing else */
static void test_sampled_references(void) {
    char *base = new_arena();
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t now = cx_now_ms();
    uint64_t a = put(base, &cfg, 0, "a", "1", -1, now);
    CHECK_EQ(cx_mrc.len, 0);                      /* sampling off: nothing kept */
    cx_mrc.threshold = UINT64_MAX;                /* every key */
    uint64_t b = put(base, &cfg, 0, "b", "22", -1, now);
    cx_lookup(base, 0, 0, (const uint8_t *)"a", 1, 1, 1, 0, &rng, NULL);
    cx_lookup(base, 0, 0, (const uint8_t *)"z", 1, 1, 1, 0, &rng, NULL);
    cx_lookup(base, 0, 0, (const uint8_t *)"a", 1, 1, 0, 0, &rng, NULL);   /* uncounted */
    CHECK_EQ(cx_mrc.len, 3);
    cx_mrc_ref *r = cx_mrc.ring;
    CHECK(r[0].read == 0 && r[0].tenant == 0 && r[0].size == CX_SIZE(word(base, b)));
    CHECK(r[0].hash == CX_E(base, b)->hash && r[0].base == (uint64_t)(uintptr_t)base);
    CHECK(r[1].read == 1 && r[1].size == CX_SIZE(word(base, a)) && r[1].hash == CX_E(base, a)->hash);
    CHECK(r[2].read == 1 && r[2].size == 0);
    /* a full ring keeps no more; a threshold at a key's hash leaves it out */
    cx_mrc.len = CX_MRC_RING;
    cx_lookup(base, 0, 0, (const uint8_t *)"a", 1, 1, 1, 0, &rng, NULL);
    CHECK_EQ(cx_mrc.len, CX_MRC_RING);
    cx_mrc.len = 0;
    cx_mrc.threshold = CX_E(base, a)->hash;
    cx_lookup(base, 0, 0, (const uint8_t *)"a", 1, 1, 1, 0, &rng, NULL);
    CHECK_EQ(cx_mrc.len, 0);
    cx_mrc.threshold = 0;
    free_arena(base);
}

static void test_victims_within_a_tenant(void) {
    char *base = new_arena();
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 10000;
    uint64_t a = put(base, &cfg, 0, "a", "1", -1, t0);
    uint64_t v = put(base, &cfg, 0, "v", "2", t0 + 3600000, t0 + 1);
    uint64_t b = put(base, &cfg, 0, "b", "3", -1, t0 + 2);
    uint64_t w = put(base, &cfg, 0, "w", "4", t0 + 60000, t0 + 3);
    /* allkeys-lru: the least recent of either list */
    CHECK_EQ(cx_victim(base, &cfg, 0, CX_ALLKEYS_LRU, t0 + 10), a);
    cx_pin(base, a);                                       /* a reader holds it: not a victim */
    CHECK_EQ(cx_victim(base, &cfg, 0, CX_ALLKEYS_LRU, t0 + 10), v);
    /* volatile-lru: volatile entries only */
    cx_unpin(base, a);
    CHECK_EQ(cx_victim(base, &cfg, 0, CX_VOLATILE_LRU, t0 + 10), v);
    CHECK_EQ(cx_victim(base, &cfg, 0, CX_NOEVICTION, t0 + 10), 0);
    /* volatile-ttl: the sooner expiry (enough samples to see both) */
    cfg.samples = 64;
    CHECK_EQ(cx_victim(base, &cfg, 0, CX_VOLATILE_TTL, t0 + 10), w);
    /* allkeys-lfu: the lower counter */
    CX_E(base, a)->lfu = CX_E(base, v)->lfu = CX_E(base, w)->lfu = 200;
    CX_E(base, b)->lfu = 2;
    CX_E(base, a)->lfu_minutes = CX_E(base, v)->lfu_minutes = CX_E(base, w)->lfu_minutes =
        CX_E(base, b)->lfu_minutes = cx_minutes(t0 + 10);
    CHECK_EQ(cx_victim(base, &cfg, 0, CX_ALLKEYS_LFU, t0 + 10), b);
    /* the counter decays by one per idle minute */
    CHECK_EQ(cx_lfu_value(CX_E(base, a), t0 + 10 + 3 * 60000), 197);
    CHECK_EQ(cx_lfu_value(CX_E(base, b), t0 + 10 + 3 * 60000), 0);
    free_arena(base);
}

/* fills tenant t with n entries of 4 KiB, oldest first; returns the block size of one */
static uint64_t fill(char *base, const cx_cfg *cfg, unsigned t, int n, int64_t t0) {
    static char value[4 * KIB];
    uint64_t off = 0;
    memset(value, 'v', sizeof value);
    for (int i = 0; i < n; i++) {
        char key[32];
        snprintf(key, sizeof key, "t%u-%02d", t, i);
        off = put_at(base, cfg, t, 0, key, value, sizeof value, -1, t0 + i, 0);
        CHECK(off != 0);
    }
    return CX_SIZE(word(base, off));
}

/* Over the arena's limit, tenants give in tiers: over their quota first (down to it),
   then those without a quota (the largest first), then those within theirs (the
   fullest first); a tenant within its quota loses nothing while one over its quota, or
   one without a quota, can give. */
static void test_eviction_tiers_across_tenants(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 100000;
    CHECK(cx_tenant_create(base, 1, (const uint8_t *)"over", 4, 0, 0, &cfg, t0));
    CHECK(cx_tenant_create(base, 2, (const uint8_t *)"within", 6, 1 * MIB, 0, &cfg, t0));
    CHECK(cx_tenant_create(base, 3, (const uint8_t *)"bigger", 6, 0, 0, &cfg, t0));
    uint64_t block = fill(base, &cfg, 1, 20, t0);
    fill(base, &cfg, 2, 20, t0 + 100);
    fill(base, &cfg, 0, 20, t0 + 200);
    fill(base, &cfg, 3, 25, t0 + 300);
    sb->tenants[1].quota = 10 * block;                     /* lowered below what it holds */

    /* a limit 5 blocks under the heap: tenant 1, over its quota by 10, gives them all */
    cfg.maxmemory = sb->heap_used - 5 * block;
    CHECK(cx_evict_to_limit(base, &cfg, t0 + 1000));
    CHECK(sb->tenants[1].keys == 15 && sb->tenants[0].keys == 20 && sb->tenants[2].keys == 20);
    CHECK_EQ(sb->tenants[3].keys, 25);
    CHECK_EQ(find(base, 1, 0, "t1-04"), 0);                /* its least recent went */
    CHECK(find(base, 1, 0, "t1-05") != 0);
    CHECK_EQ(sb->tenants[1].evicted, 5);
    CHECK_EQ(sb->evicted, 5);

    /* in victim order: tenant 1 down to its quota; then the tenants without a quota,
       the larger first (tenant 3 down to tenant 0's size, then the two in turn); then
       the fullest of the tenants within their quotas (tenant 1 again, then tenant 2) */
    int order[128], n = 0;
    for (uint64_t v; n < 128 && (v = cx_global_victim(base, &cfg, -1, t0 + 1000)); ) {
        order[n++] = CX_E(base, v)->tenant;
        cx_evict(base, v, -1, 0);
    }
    CHECK_EQ(n, 80);
    int i = 0, gap = 0;
    while (i < n && order[i] == 1) i++;
    CHECK_EQ(i, 5);
    while (i < n && order[i] == 3) i++;
    CHECK_EQ(i, 10);
    for (; i < n && (order[i] == 0 || order[i] == 3); i++) {
        gap += order[i] == 0 ? 1 : -1;
        CHECK(gap == 0 || gap == 1);
    }
    CHECK_EQ(i, 50);
    while (i < n && order[i] == 1) i++;
    CHECK_EQ(i, 60);
    while (i < n && order[i] == 2) i++;
    CHECK_EQ(i, 80);
    CHECK_EQ(sb->entries, 0);
    free_arena(base);
}

static void test_eviction_spares_pinned_and_noeviction_tenants(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 100000;
    CHECK(cx_tenant_create(base, 1, (const uint8_t *)"pinned", 6, 0, 0, &cfg, t0));
    CHECK(cx_tenant_create(base, 2, (const uint8_t *)"keeper", 6, 0, CX_NOEVICTION + 1, &cfg, t0));
    uint64_t block = fill(base, &cfg, 1, 10, t0);
    fill(base, &cfg, 2, 10, t0 + 100);
    fill(base, &cfg, 0, 2, t0 + 200);
    sb->tenants[1].quota = block;                          /* far over its quota, but... */
    for (uint64_t b = 0; b < sb->index_buckets; b++)       /* ...a reader holds every entry */
        for (uint64_t cur = CX_BUCKETS(base)[b]; cur; cur = CX_E(base, cur)->chain_next)
            if (CX_E(base, cur)->tenant == 1) cx_pin(base, cur);
    cfg.maxmemory = sb->heap_used - 4 * block;
    CHECK(!cx_evict_to_limit(base, &cfg, t0 + 1000));     /* only tenant 0's two could go */
    CHECK(sb->tenants[0].keys == 0 && sb->tenants[1].keys == 10 && sb->tenants[2].keys == 10);
    free_arena(base);
}

/* tenants 1, 2 and 3, named so, with no quota and the arena's policy */
static void three_tenants(char *base, const cx_cfg *cfg, int64_t t0, const char *names[3]) {
    for (unsigned t = 1; t <= 3; t++)
        CHECK(cx_tenant_create(base, t, (const uint8_t *)names[t - 1], (uint32_t)strlen(names[t - 1]),
                               0, 0, cfg, t0));
}

/* Guarantees (MIN): a tenant past its guarantee borrows, up to its quota, and gives the
   borrowed memory back first, counted as reclaimed when another tenant writes within its
   own guarantee; a tenant within its guarantee loses nothing to another's write. */
static void test_guarantees_and_borrowed_memory(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 100000;
    char value[4 * KIB], key[32];
    memset(value, 'w', sizeof value);
    three_tenants(base, &cfg, t0, (const char *[]){"lender", "borrower", "besteffort"});
    uint64_t block = fill(base, &cfg, 2, 40, t0);              /* memory idle: it borrows 30 */
    sb->tenants[1].guaranteed = 20 * block;
    sb->tenants[2].guaranteed = 10 * block;
    sb->tenants[2].quota = 40 * block;
    cfg.maxmemory = sb->heap_used;                             /* now the arena is full */
    /* the lender takes its guarantee back: every block from the borrower, counted */
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof key, "t1-%02d", i);
        CHECK(put_at(base, &cfg, 1, 0, key, value, sizeof value, -1, t0 + 100 + i, 0) != 0);
    }
    CHECK(sb->tenants[1].keys == 20 && sb->tenants[2].keys == 20);
    CHECK_EQ(sb->tenants[2].reclaimed, 20 * block);
    CHECK_EQ(find(base, 2, 0, "t2-19"), 0);                    /* its least recent went */
    CHECK(find(base, 2, 0, "t2-20") != 0);
    /* past its guarantee the lender borrows too: the most borrowed gives, not counted */
    for (int i = 20; i < 25; i++) {
        snprintf(key, sizeof key, "t1-%02d", i);
        CHECK(put_at(base, &cfg, 1, 0, key, value, sizeof value, -1, t0 + 100 + i, 0) != 0);
    }
    CHECK(sb->tenants[1].keys == 25 && sb->tenants[2].keys == 15);
    CHECK_EQ(sb->tenants[2].reclaimed, 20 * block);
    /* a tenant with no guarantee takes borrowed memory, its own included, the most
       borrowed first, and never a guaranteed byte, however much it writes */
    for (int i = 0; i < 60; i++) {
        snprintf(key, sizeof key, "t3-%02d", i);
        CHECK(put_at(base, &cfg, 3, 0, key, value, sizeof value, -1, t0 + 200 + i, 0) != 0);
        CHECK(sb->tenants[1].keys >= 20 && sb->tenants[2].keys >= 10);
    }
    CHECK_EQ(sb->tenants[1].keys + sb->tenants[2].keys + sb->tenants[3].keys, 40);
    /* the borrowers are evened out: none holds more than one block past the others */
    uint64_t b1 = sb->tenants[1].used_bytes - 20 * block, b2 = sb->tenants[2].used_bytes - 10 * block;
    uint64_t b3 = sb->tenants[3].used_bytes;
    CHECK(b1 <= b3 + block && b2 <= b3 + block && b3 <= (b1 > b2 ? b1 : b2) + block);
    CHECK(sb->tenants[1].reclaimed == 0 && sb->tenants[2].reclaimed == 20 * block);
    /* a write that only guaranteed memory could make room for is refused up front */
    uint64_t evicted = sb->evicted;
    static char big[64 * KIB];
    CHECK_EQ(put_at(base, &cfg, 3, 0, "t3-big", big, sizeof big, -1, t0 + 300, 0), 0);
    CHECK_EQ(sb->evicted, evicted);
    free_arena(base);
}

/* Of the tenants borrowing, a lower service class (priority) gives memory back first,
   however little it borrows; within one class, the most borrowed first. */
static void test_borrowers_give_back_by_priority(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 100000;
    char value[4 * KIB], key[32];
    memset(value, 'w', sizeof value);
    three_tenants(base, &cfg, t0, (const char *[]){"gold", "bronze", "writer"});
    uint64_t block = fill(base, &cfg, 1, 8, t0);
    fill(base, &cfg, 2, 4, t0 + 100);
    sb->tenants[1].guaranteed = sb->tenants[2].guaranteed = 2 * block;   /* borrowing 6 and 2 */
    sb->tenants[3].guaranteed = 10 * block;
    sb->tmeta[1].priority = 5;
    cfg.maxmemory = sb->heap_used;
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "t3-%02d", i);
        CHECK(put_at(base, &cfg, 3, 0, key, value, sizeof value, -1, t0 + 200 + i, 0) != 0);
    }
    CHECK(sb->tenants[2].keys == 2 && sb->tenants[1].keys == 6);       /* bronze went first */
    CHECK(sb->tenants[2].reclaimed == 2 * block && sb->tenants[1].reclaimed == 2 * block);
    free_arena(base);
}

/* A tenant over its own quota makes room from its own entries, never another's. */
static void test_quota_evicts_own_entries(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 100000;
    CHECK(cx_tenant_create(base, 3, (const uint8_t *)"small", 5, 0, 0, &cfg, t0));
    fill(base, &cfg, 0, 5, t0);
    fill(base, &cfg, 3, 5, t0 + 100);
    sb->tenants[3].quota = sb->tenants[3].used_bytes;
    char value[4 * KIB];
    memset(value, 'w', sizeof value);
    CHECK(put_at(base, &cfg, 3, 0, "t3-new", value, sizeof value, -1, t0 + 200, 0) != 0);
    CHECK(sb->tenants[3].keys == 5 && sb->tenants[0].keys == 5);
    CHECK_EQ(find(base, 3, 0, "t3-00"), 0);
    CHECK(sb->tenants[3].used_bytes <= sb->tenants[3].quota);
    /* a value bigger than the whole quota is refused, and evicts nothing */
    uint64_t before = sb->evicted;
    CHECK_EQ(cx_reserve(base, 3, 8, sb->tenants[3].quota, 0, &cfg, t0 + 300), 0);
    CHECK_EQ(sb->evicted, before);
    /* noeviction: full is full */
    cfg.policy = CX_NOEVICTION;
    CHECK_EQ(put_at(base, &cfg, 3, 0, "t3-more", value, sizeof value, -1, t0 + 400, 0), 0);
    CHECK_EQ(sb->tenants[3].keys, 5);
    free_arena(base);
}

/* ---------------------------------------------------------------- pins: a blob being sent */

static void test_pinned_value_outlives_overwrite(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    uint64_t old = put(base, &cfg, 0, "blob", "being sent", -1, now);
    cx_pin(base, old);
    uint64_t fresh = put(base, &cfg, 0, "blob", "replacement", -1, now);
    CHECK(fresh != old);
    CHECK(holds(base, find(base, 0, 0, "blob"), "replacement"));
    CHECK_EQ(CX_STATE(word(base, old)), CX_ZOMBIE);       /* unlinked, its bytes kept */
    CHECK(holds(base, old, "being sent"));
    CHECK(sb->zombies == 1 && sb->pinned == 1);
    /* nothing allocated meanwhile takes its block */
    for (int i = 0; i < 50; i++) {
        char key[32];
        snprintf(key, sizeof key, "filler%d", i);
        CHECK(put(base, &cfg, 0, key, "xxxxxxxxxx", -1, now) != old);
    }
    CHECK(holds(base, old, "being sent"));
    cx_unpin(base, old);
    CHECK_EQ(CX_STATE(word(base, old)), CX_QUICK);         /* freed, to its quick list */
    CHECK(sb->zombies == 0 && sb->pinned == 0);
    CHECK(heap_check(base) >= 1);
    free_arena(base);
}

static void test_release_process_state(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    uint64_t kept = put(base, &cfg, 0, "kept", "1", -1, now);
    uint64_t zombie = put(base, &cfg, 0, "gone", "2", -1, now);
    cx_pin(base, kept);
    cx_pin(base, zombie);
    cx_drop(base, zombie, 1);
    cx_reserve(base, 0, 4, 100, 100, &cfg, now);           /* a write that never committed */
    CHECK(sb->pinned == 2 && sb->zombies == 1 && sb->reserved == 1);
    cx_release_process_state(base);
    CHECK(sb->pinned == 0 && sb->zombies == 0 && sb->reserved == 0);
    CHECK_EQ(CX_E(base, kept)->pins, 0);
    CHECK(holds(base, find(base, 0, 0, "kept"), "1"));
    CHECK_EQ(heap_check(base), 1);                         /* the freed two merged with the free rest */
    free_arena(base);
}

/* ---------------------------------------------------------------- the expiry wheel */

/* a wheel period whose slot is 8 before the end of a turn (so a walk wraps) */
static uint64_t late_period(void) { return (cx_period(cx_now_ms()) | (CX_WHEEL_SLOTS - 1)) - 7; }

static int64_t at_period(uint64_t p) { return (int64_t)(p * CX_WHEEL_MS); }

static int in_slot(char *base, uint64_t period, uint64_t off) {
    for (uint64_t cur = *cx_wheel_slot(CX_SB(base), period); cur; cur = CX_E(base, cur)->ttl_next)
        if (cur == off) return 1;
    return 0;
}

static void test_expiry_wheel_drops_what_is_due(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t p = late_period(), mask = CX_WHEEL_SLOTS - 1;
    int64_t t0 = at_period(p);
    sb->wheel_next = p;
    CHECK_EQ(p & mask, CX_WHEEL_SLOTS - 8);
    uint64_t due1 = put(base, &cfg, 0, "due1", "1", at_period(p + 2), t0);
    uint64_t due2 = put(base, &cfg, 0, "due2", "2", at_period(p + 10), t0);     /* past the turn's end */
    uint64_t later = put(base, &cfg, 0, "later", "3", at_period(p + 20) + 5, t0);
    uint64_t turn = put(base, &cfg, 0, "turn", "4", at_period(p + 10 + CX_WHEEL_SLOTS), t0);
    put(base, &cfg, 0, "persistent", "5", -1, t0);
    CHECK(in_slot(base, p + 2, due1) && in_slot(base, p + 10, due2) && in_slot(base, p + 20, later));
    CHECK(in_slot(base, p + 10, turn));                    /* a turn later, the same slot */
    CHECK_EQ((p + 10) & mask, 2);

    CHECK_EQ(cx_expire_cycle(base, at_period(p + 12), 1000000000), 2);
    CHECK(!find(base, 0, 0, "due1") && !find(base, 0, 0, "due2"));
    CHECK(find(base, 0, 0, "later") && find(base, 0, 0, "turn") && find(base, 0, 0, "persistent"));
    CHECK_EQ(sb->wheel_next, p + 12);                      /* walked across the turn */
    CHECK(sb->expired == 2 && sb->tenants[0].expired == 2);
    CHECK(sb->db_volatile[0] == 2 && sb->db_keys[0] == 3);

    /* nothing more is due until `later`; then `turn`, a turn on */
    CHECK_EQ(cx_expire_cycle(base, at_period(p + 19), 1000000000), 0);
    CHECK_EQ(cx_expire_cycle(base, at_period(p + 21), 1000000000), 1);
    CHECK(!find(base, 0, 0, "later") && find(base, 0, 0, "turn"));
    CHECK_EQ(cx_expire_cycle(base, at_period(p + 10 + CX_WHEEL_SLOTS), 1000000000), 0);   /* not before */
    CHECK_EQ(cx_expire_cycle(base, at_period(p + 10 + CX_WHEEL_SLOTS) + 1, 1000000000), 1);
    CHECK(!find(base, 0, 0, "turn") && find(base, 0, 0, "persistent"));
    CHECK(sb->db_volatile[0] == 0 && sb->entries == 1);
    CHECK(heap_check(base) >= 1);
    free_arena(base);
}

/* A cycle out of budget stops after a batch of 32 and resumes where it stopped. */
static void test_expiry_cycle_resumes(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    uint64_t p = late_period();
    sb->wheel_next = p;
    for (int i = 0; i < 100; i++) {
        char key[32];
        snprintf(key, sizeof key, "e%d", i);
        put(base, &cfg, 0, key, "v", at_period(p + 1) + i % 7, at_period(p));
    }
    int64_t now = at_period(p + 5);
    CHECK_EQ(cx_expire_cycle(base, now, 0), 32);
    CHECK(sb->wheel_cursor != 0);
    CHECK_EQ(cx_expire_cycle(base, now, 0), 32);
    CHECK_EQ(cx_expire_cycle(base, now, 0), 32);
    CHECK_EQ(cx_expire_cycle(base, now, 0), 4);
    CHECK_EQ(cx_expire_cycle(base, now, 0), 0);
    CHECK(sb->entries == 0 && sb->expired == 100);
    CHECK(heap_check(base) >= 1);
    CHECK_EQ(cx_quick_drain(base), CX_QUICK_DEPTH);         /* all freed: one block once merged */
    CHECK_EQ(heap_check(base), 1);
    free_arena(base);
}

/* A lookup of an expired key drops it and misses, whether or not active expiry ran. */
static void test_lookup_drops_expired(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    put(base, &cfg, 0, "old", "1", now - 1, now - 100);
    uint64_t fresh = put(base, &cfg, 0, "new", "2", now + 3600000, now);
    CHECK(cx_expired(CX_E(base, find(base, 0, 0, "old")), now));
    CHECK(!cx_expired(CX_E(base, fresh), now));
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"old", 3, 1, 1, 0, &rng, NULL), 0);
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"new", 3, 1, 1, 0, &rng, NULL), fresh);
    CHECK(sb->expired == 1 && sb->misses == 1 && sb->hits == 1 && sb->entries == 1);
    free_arena(base);
}

/* ---------------------------------------------------------------- checksums */

/* Stored in the arena, so pinned: a change to either function is a format change. */
static void test_hashes_are_stable(void) {
    static const struct { size_t n; uint64_t hash, sum; } pinned[] = {
        {0, 0x9105d00edcb25fd1ull, 0xa6a79b55a8b5476bull},   {1, 0xb0791dfa244eaa4cull, 0x4811aaf5dfc4bbd1ull},
        {3, 0x4a93876e2d022b5dull, 0x9c4a27e47022190cull},   {4, 0x9d973a308bd7472eull, 0xd0a90991b8c302e4ull},
        {7, 0xb4ff1aae08e61ef0ull, 0x8a4ec9f68b565eccull},   {8, 0xbead5d3c0040cbdfull, 0xe44ebc65bd2a866cull},
        {16, 0xb547bc779cbb905bull, 0x2b85f497c25a82c9ull},  {17, 0xacb6ee5e814585cfull, 0x68a3fc17c72b3cd2ull},
        {31, 0x6bdefad89d219892ull, 0x769869d72f4335e9ull},  {32, 0x64056766c95fc5cbull, 0xb7f886ba6fe4bf4bull},
        {33, 0x04cde3651e1cbb9dull, 0xa13912ca59799edbull},  {100, 0x5ec02d1e65979173ull, 0x0f3b6d8202d03b63ull},
        {200, 0x043d0bb46f971fe0ull, 0x503477763d9bff2cull},
    };
    uint8_t buf[200];
    for (int i = 0; i < 200; i++) buf[i] = (uint8_t)(i * 7 + 1);
    for (size_t i = 0; i < sizeof pinned / sizeof *pinned; i++) {
        CHECK_EQ(cx_hash_bytes(buf, pinned[i].n, 42), pinned[i].hash);
        CHECK_EQ(cx_value_sum(buf, pinned[i].n), pinned[i].sum);
    }
    cx_entry e;
    memset(&e, 0, sizeof e);
    e.size_state = 256 | CX_LIVE;
    e.hash = 0x0123456789abcdefull;
    e.key_len = 5;
    e.key_cap = 16;
    e.db = 3;
    e.type = 1;
    e.tenant = 7;
    CHECK_EQ(cx_entry_sum(&e), 0xbec1b5bf);
    e.generation = 99;                                     /* updated in place: not sealed */
    e.expire_at = 12345;
    CHECK_EQ(cx_entry_sum(&e), 0xbec1b5bf);
    e.db = 4;
    CHECK(cx_entry_sum(&e) != 0xbec1b5bf);
}

static void test_value_checksums(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    uint64_t corrupt = 0;
    uint64_t off = put_at(base, &cfg, 0, 0, "summed", "some value", 10, -1, now, 1);
    cx_entry *e = CX_E(base, off);
    CHECK(e->type & CX_SUMMED);
    CHECK_EQ((e->type & CX_TYPE_MASK), 0);
    CHECK_EQ(*cx_sum_slot(e), cx_value_sum((const uint8_t *)"some value", 10));
    CHECK_EQ(cx_key_room(e), e->key_cap - 8);
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"summed", 6, 1, 1, 0, &rng, &corrupt), off);

    /* changed in place (as APPEND does) and resealed: still intact, a new generation */
    uint64_t generation = e->generation;
    memcpy(CX_VAL(e) + 10, "!", 1);
    e->value_len = 11;
    CHECK(!cx_value_intact(e));
    cx_reseal(base, off);
    CHECK(cx_value_intact(e) && e->generation > generation);
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"summed", 6, 1, 1, 0, &rng, &corrupt), off);
    CHECK_EQ(corrupt, 0);

    /* a flipped byte: the read misses and the entry is dropped, never served */
    CX_VAL(e)[3] ^= 0x20;
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"summed", 6, 1, 1, 0, &rng, &corrupt), 0);
    CHECK_EQ(corrupt, 1);
    CHECK_EQ(find(base, 0, 0, "summed"), 0);
    CHECK_EQ(sb->entries, 0);

    /* an entry committed without one is not checked */
    off = put_at(base, &cfg, 0, 0, "plain", "value", 5, -1, now, 0);
    CHECK(!(CX_E(base, off)->type & CX_SUMMED));
    CX_VAL(CX_E(base, off))[0] ^= 1;
    CHECK_EQ(cx_lookup(base, 0, 0, (const uint8_t *)"plain", 5, 1, 1, 0, &rng, &corrupt), off);
    free_arena(base);
}

static void test_superblock_verdicts(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_OK);
    CHECK_EQ(cx_validate(base, ARENA_BYTES - 65536), CX_BAD_SIZE);
    sb->heap_size -= 64;
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_BAD_CHECKSUM);
    sb->heap_size += 64;
    sb->generation += 5;                                   /* mutable state is not sealed */
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_OK);
    sb->magic[0] = 'X';
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_BAD_MAGIC);
    sb->magic[0] = 'C';
    sb->version = CX_LAYOUT_VERSION + 1;
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_BAD_VERSION);
    sb->version = CX_LAYOUT_VERSION;
    sb->heap_off += 64;
    sb->checksum = cx_super_sum(sb);                       /* sealed, but inconsistent */
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_BAD_GEOMETRY);
    memset(base, 0, CX_SUPER_BYTES);                       /* the heap still holds blocks */
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_ZEROED_SUPER);
    memset(base, 0, ARENA_BYTES);                          /* a new device */
    CHECK_EQ(cx_validate(base, ARENA_BYTES), CX_ZERO);
    free_arena(base);
}

/* A rebuild drops an entry whose sealed identity no longer matches its header, and
   rebuilds the rest: index, LRU order, counters, free lists. */
static void test_rebuild_drops_torn_entries(void) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t t0 = cx_now_ms() - 10000;
    uint64_t k1 = put(base, &cfg, 0, "k1", "one", -1, t0);
    put(base, &cfg, 0, "k2", "two", -1, t0 + 1);
    put(base, &cfg, 0, "k3", "three", t0 + 3600000, t0 + 2);
    uint64_t size = CX_SIZE(word(base, k1));
    CHECK(cx_entry_intact(base, k1, size));
    CX_KEY(CX_E(base, k1))[1] = '9';                       /* a key byte the hash does not cover now */
    CHECK(!cx_entry_intact(base, k1, size));
    CX_KEY(CX_E(base, k1))[1] = '1';
    CX_E(base, k1)->type = 1;                              /* sealed, and outside the hash */
    CHECK(!cx_entry_intact(base, k1, size));
    sb->clean = 0;
    CHECK_EQ(cx_rebuild(base), 1);
    CHECK(!find(base, 0, 0, "k1"));
    CHECK(holds(base, find(base, 0, 0, "k2"), "two") && holds(base, find(base, 0, 0, "k3"), "three"));
    CHECK(sb->entries == 2 && sb->db_keys[0] == 2 && sb->db_volatile[0] == 1);
    CHECK(in_slot(base, cx_period(t0 + 3600000), find(base, 0, 0, "k3")));
    char order[8];
    lru_letters(base, 0, 0, order, sizeof order);
    CHECK(strcmp(order, "k") == 0);
    CHECK_EQ(heap_check(base), 2);
    free_arena(base);
}

/* ---------------------------------------------------------------- rename after a crash */

#define VALUE "the value"

/* Renames "src" (VALUE) to new_key in a forked child that kills itself at crash point
   `point` (0: none). by_copy: through a fresh block, as for a key too long for the
   entry's key area. Returns the child's wait status. */
static int rename_in_child(char *base, const char *new_key, int by_copy, int point) {
    pid_t child = fork();
    if (child == 0) {
        cx_cfg cfg = settings(CX_NOEVICTION);
        uint64_t src = find(base, 0, 0, "src");
        size_t klen = strlen(new_key);
        int64_t now = cx_now_ms();
        cx_crash_at = point;
        if (!by_copy) {
            cx_rename_in_place(base, src, 0, (const uint8_t *)new_key, klen);
        } else {
            cx_pin(base, src);
            cfg.beyond_limits = 1;
            uint64_t fresh = cx_reserve(base, 0, klen, CX_E(base, src)->value_len, CX_E(base, src)->value_len,
                                        &cfg, now);
            memcpy(CX_VAL(CX_E(base, fresh)), CX_VAL(CX_E(base, src)), CX_E(base, src)->value_len);
            cx_rename_by_copy(base, src, fresh, 0, (const uint8_t *)new_key, klen, now, 0);
            cx_unpin(base, src);
        }
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return status;
}

static void check_rename_recovered(int point, int by_copy, int with_destination) {
    char long_key[200];
    memset(long_key, 'd', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    const char *dst = by_copy ? long_key : "dst";
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    uint64_t src = put(base, &cfg, 0, "src", VALUE, now + 3600000, now);
    if (with_destination) put(base, &cfg, 0, dst, "replaced", -1, now);
    CHECK(by_copy ? strlen(dst) > cx_key_room(CX_E(base, src)) : strlen(dst) <= cx_key_room(CX_E(base, src)));

    int status = rename_in_child(base, dst, by_copy, point);
    if (point) {
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* what the kill left: the intent, and (at 4) a key half renamed */
        CHECK_EQ(sb->rename.state, by_copy ? CX_RENAME_BY_COPY : CX_RENAME_IN_PLACE);
        if (point == 4) CHECK(!cx_entry_intact(base, src, CX_SIZE(word(base, src))));
        if (point == 12) CHECK(find(base, 0, 0, "src") && find(base, 0, 0, dst));
        sb->clean = 0;
        CHECK(cx_rebuild(base) >= 0);
    } else {
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK_EQ(sb->rename.state, CX_RENAME_NONE);

    /* one name holds the value, with its TTL; a replaced destination holds the value
       if the rename happened, its own if not */
    int done = !(by_copy && point == 11);
    uint64_t at_new = find(base, 0, 0, dst), at_old = find(base, 0, 0, "src");
    if (done) {
        CHECK(holds(base, at_new, VALUE) && !at_old);
        CHECK(at_new && CX_E(base, at_new)->expire_at == now + 3600000);
    } else {
        CHECK(holds(base, at_old, VALUE));
        CHECK(with_destination ? holds(base, at_new, "replaced") : !at_new);
    }
    CHECK_EQ(sb->entries, done ? 1 : 1 + with_destination);
    CHECK_EQ(sb->db_volatile[0], 1);
    CHECK_EQ(sb->reserved, 0);
    CHECK(heap_check(base) >= 1);
    free_arena(base);
}

static void test_rename_in_place_at_every_crash_point(void) {
    for (int point = 0; point <= 6; point++) {
        check_rename_recovered(point, 0, 0);
        check_rename_recovered(point, 0, 1);
    }
}

static void test_rename_by_copy_at_every_crash_point(void) {
    static const int points[] = {0, 11, 12, 13};
    for (size_t i = 0; i < sizeof points / sizeof *points; i++) {
        check_rename_recovered(points[i], 1, 0);
        check_rename_recovered(points[i], 1, 1);
    }
}

/* The keys a walk of the whole index finds in slot, of tenant (or every tenant) in pdb 0:
   what the slot index must answer. */
static int64_t slot_entries_by_walk(char *base, unsigned slot, unsigned tenant) {
    int64_t n = 0;
    for (uint64_t b = 0; b < CX_SB(base)->index_buckets; b++)
        for (uint64_t cur = CX_BUCKETS(base)[b]; cur; cur = CX_E(base, cur)->chain_next) {
            cx_entry *e = CX_E(base, cur);
            if (e->db == 0 && (tenant == CX_ANY_TENANT || e->tenant == tenant)
                && cx_key_slot(CX_KEY(e), e->key_len) == slot) n++;
        }
    return n;
}

/* The slot index answers what a walk answers through every way an entry enters or leaves
   the index: set, overwrite, delete, rename in place (to a key of the same slot or
   another), a block freed and reused, an append that changes a value in place, and a
   rebuild; the keys share a few {hash tags}, so slots hold many. Offsets come back once
   each, and a slot whose keys all left gives its memory back. */
static void test_slot_index_follows_the_index(void) {
    char *base = new_arena();
    cx_cfg cfg = settings(CX_NOEVICTION);
    int64_t now = cx_now_ms();
    unsigned tenant = 1;
    CHECK(cx_tenant_create(base, tenant, (const uint8_t *)"t1", 2, 0, 0, &cfg, now));
    char key[64], other[64];
    uint64_t out[512];
    uint64_t seed = 7;
    for (int i = 0; i < 300; i++) {    /* before the index exists: the enable walk finds them */
        snprintf(key, sizeof key, "{tag%d}before%d", i % 5, i);
        CHECK(put(base, &cfg, i % 2 ? tenant : 0, key, "v", -1, now));
    }
    CHECK_EQ(cx_slot_entries(base, 0, 0, 0, now, NULL, -1), -1);
    CHECK_EQ(cx_slots_enable(base), 0);
    CHECK(cx_slots_enabled(base));
    for (int round = 0; round < 4000; round++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned pick = (unsigned)(seed >> 33), t = pick & 1 ? tenant : 0;
        snprintf(key, sizeof key, "{tag%u}k%u", pick % 5, (pick >> 3) % 200);
        uint64_t off = find(base, t, 0, key);
        switch ((pick >> 12) % 4) {
        case 0: case 1: put(base, &cfg, t, key, "value", -1, now); break;
        case 2: if (off) cx_drop(base, off, 1); break;
        case 3:
            if (!off) break;
            snprintf(other, sizeof other, "{tag%u}r%u", (pick >> 16) % 6, (pick >> 20) % 200);
            if (!find(base, t, 0, other)) cx_rename_in_place(base, off, 0, (const uint8_t *)other, strlen(other));
            break;
        }
    }
    int64_t total = 0;
    for (unsigned tag = 0; tag < 6; tag++) {
        snprintf(key, sizeof key, "tag%u", tag);
        unsigned slot = cx_key_slot((const uint8_t *)key, strlen(key));
        CHECK_EQ(cx_slot_entries(base, slot, 0, 0, now, NULL, -1), slot_entries_by_walk(base, slot, 0));
        CHECK_EQ(cx_slot_entries(base, slot, tenant, 0, now, NULL, -1), slot_entries_by_walk(base, slot, tenant));
        int64_t n = cx_slot_entries(base, slot, CX_ANY_TENANT, 0, now, out, 512);
        CHECK_EQ(n, slot_entries_by_walk(base, slot, CX_ANY_TENANT));
        for (int64_t i = 0; i < n; i++) {
            cx_entry *e = CX_E(base, out[i]);
            CHECK_EQ(cx_find(base, e->hash, e->tenant, 0, CX_KEY(e), e->key_len, NULL), out[i]);
            for (int64_t j = 0; j < i; j++) CHECK(out[j] != out[i]);
        }
        CHECK_EQ(cx_slot_entries(base, slot, CX_ANY_TENANT, 0, now, NULL, 3), n < 3 ? n : 3);
        total += n;
    }
    CHECK_EQ(total, (int64_t)CX_SB(base)->entries);

    /* a rebuild re-indexes every entry; emptying a slot frees its array */
    CHECK(cx_rebuild(base) >= 0);
    snprintf(key, sizeof key, "tag%u", 1u);
    unsigned slot = cx_key_slot((const uint8_t *)key, strlen(key));
    int64_t n = cx_slot_entries(base, slot, CX_ANY_TENANT, 0, now, out, 512);
    CHECK_EQ(n, slot_entries_by_walk(base, slot, CX_ANY_TENANT));
    for (int64_t i = 0; i < n; i++) cx_drop(base, out[i], 1);
    CHECK_EQ(cx_slot_entries(base, slot, CX_ANY_TENANT, 0, now, NULL, -1), 0);
    CHECK(cx_slots_of(base)->slot[slot].offs == NULL);

    /* a value changed in place keeps its entry in its slot */
    snprintf(key, sizeof key, "{tag1}appended");
    uint64_t off = put(base, &cfg, 0, key, "v", -1, now);
    cx_reseal(base, off);
    CHECK_EQ(cx_slot_entries(base, slot, 0, 0, now, NULL, -1), 1);
    /* an expired key is not counted, though it is still indexed until it is dropped */
    put(base, &cfg, 0, "{tag1}brief", "v", now + 10, now);
    CHECK_EQ(cx_slot_entries(base, slot, 0, 0, now, NULL, -1), 2);
    CHECK_EQ(cx_slot_entries(base, slot, 0, 0, now + 20, NULL, -1), 1);
    cx_slots_disable(base);
    CHECK(!cx_slots_enabled(base));
    free_arena(base);
}

/* ---------------------------------------------------------------- the disk tier's writes */

/* An evicted string is written whole by the writer thread, with a header that checks;
   an expired entry and a tenant that does not spill are not; a full segment goes on in
   the next one; a commit of a key that was written is noted as stale, in order; a record
   dropped while queued is written dead; with no room to queue, records are written in
   place. */
static void test_spill_writes_what_is_evicted(const char *dir) {
    char *base = new_arena();
    cx_super *sb = CX_SB(base);
    cx_cfg cfg = settings(CX_ALLKEYS_LRU);
    int64_t now = cx_now_ms();
    char path[512], value[8 * KIB], key[32];
    snprintf(path, sizeof path, "%s/cx-spill-%d", dir, getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    snprintf(path + strlen(path), 16, ".next");
    int next = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && next >= 0);
    CHECK_EQ(cx_spill_start(base, 40 * KIB, 100, 32 * KIB, 1024 * KIB), 0);
    cx_spill.fd = fd;
    cx_spill.next_fd = next;
    for (int i = 0; i < 8; i++) {
        snprintf(key, sizeof key, "k%d", i);
        memset(value, 'a' + i, sizeof value);
        CHECK(put_at(base, &cfg, 0, 0, key, value, sizeof value, i == 1 ? now + 1 : -1, now + i, 0) != 0);
    }
    cfg.maxmemory = sb->heap_used;
    usleep(5000);                                        /* k1's expiry passes */
    for (int i = 8; i < 16; i++) {
        snprintf(key, sizeof key, "k%d", i);
        CHECK(put_at(base, &cfg, 0, 0, key, value, sizeof value, -1, now + i, 0) != 0);
    }
    /* k0..k7 were evicted: k1 had expired, so 7 records; a 40 KiB segment holds 4 */
    CHECK_EQ(sb->evicted, 8);
    CHECK_EQ(cx_spill.written, 7);
    CHECK_EQ(cx_spill.skipped, 1);
    CHECK_EQ(cx_spill.segment, 1);
    cx_spill_drain();
    CHECK_EQ(cx_spill_written_seq(), 107);
    CHECK(cx_spill.head == NULL && cx_spill.staged == 0);
    cx_spill_head head;
    uint8_t kbuf[8], vbuf[8 * KIB];
    CHECK_EQ(pread(fd, &head, sizeof head, 0), sizeof head);
    CHECK_EQ(head.magic, CX_SPILL_MAGIC);
    CHECK_EQ(head.seq, 101);
    CHECK_EQ(head.key_len, 2);
    CHECK_EQ(pread(fd, kbuf, 2, sizeof head), 2);
    CHECK(memcmp(kbuf, "k0", 2) == 0);
    CHECK_EQ(cx_spill_head_sum(&head, kbuf), head.head_sum);
    CHECK_EQ(pread(fd, vbuf, sizeof vbuf, cx_spill_value_pos(0, 2, sizeof vbuf)), sizeof vbuf);
    CHECK_EQ(cx_value_sum(vbuf, sizeof vbuf), head.value_sum);
    CHECK(vbuf[0] == 'a' && vbuf[sizeof vbuf - 1] == 'a');
    kbuf[1] = '9';                                       /* another key: the header does not check */
    CHECK(cx_spill_head_sum(&head, kbuf) != head.head_sum);
    /* the log: the records in eviction order (the put of k0 evicts k8 first), then the
       stale note of its commit */
    CHECK(cx_spill_maybe(base, cx_key_hash(sb, 0, 0, (const uint8_t *)"k0", 2)));
    CHECK(put_at(base, &cfg, 0, 0, "k0", "back", 4, -1, now + 20, 0) != 0);
    size_t at = 0;
    int records = 0, stale = 0;
    while (at < cx_spill.log_len) {
        cx_spill_note *note = (cx_spill_note *)(cx_spill.log + at);
        at += sizeof *note + CX_SPILL_PADDED(note->key_len);
        if (note->type == CX_SPILL_STALE) {
            stale++;
            CHECK_EQ(note->hash, cx_key_hash(sb, 0, 0, (const uint8_t *)"k0", 2));
        } else {
            CHECK_EQ(stale, 0);
            CHECK_EQ(note->seq, 101 + records);
            records++;
        }
    }
    CHECK_EQ(records, 8);
    CHECK_EQ(stale, 1);
    /* a tenant with no disk tier has nothing written */
    cx_spill_log_clear();
    cx_spill.pos = 0;                                   /* as if in a fresh, larger segment */
    cx_spill.cap = 1024 * KIB;
    CHECK(cx_tenant_create(base, 2, (const uint8_t *)"other", 5, 0, 0, &cfg, now));
    sb->tmeta[2].flags |= CX_TENANT_NO_DISK;
    for (int i = 0; i < 12; i++) {
        snprintf(key, sizeof key, "o%d", i);
        CHECK(put_at(base, &cfg, 2, 0, key, value, sizeof value, -1, now + 30 + i, 0) != 0);
    }
    CHECK(sb->tenants[2].evicted > 0 && sb->tenants[0].evicted > 8);
    for (at = 0, records = 0; at < cx_spill.log_len; records++) {
        cx_spill_note *note = (cx_spill_note *)(cx_spill.log + at);
        at += sizeof *note + CX_SPILL_PADDED(note->key_len);
        CHECK_EQ(note->tenant, 0);
    }
    CHECK_EQ(records, sb->tenants[0].evicted - 9);     /* k0..k8 went before */
    /* dropped while queued: written dead; dropped once written: marked in the file */
    cx_spill_drain();
    uint64_t written_before = cx_spill_written_seq();
    cx_spill_note *first = (cx_spill_note *)cx_spill.log;
    CHECK(records >= 1 && first->seq == written_before - (uint64_t)records + 1);
    int written_to = cx_spill.fd;               /* the segment these went to (the second) */
    CHECK_EQ(written_to, next);
    uint8_t dead = 0;
    CHECK_EQ(pread(written_to, &dead, 1, first->pos + offsetof(cx_spill_head, dead)), 1);
    CHECK_EQ(dead, 0);
    CHECK_EQ(cx_spill_kill(first->seq, written_to, first->pos), 0);
    CHECK_EQ(pread(written_to, &dead, 1, first->pos + offsetof(cx_spill_head, dead)), 1);
    CHECK_EQ(dead, 1);
    /* no room to queue: written in place, after the queue (cx_spill_evicted called on a
       live entry of tenant 0, as an eviction would) */
    uint64_t live = find(base, 0, 0, "k0");
    CHECK(live != 0);
    cx_spill.staging_cap = 0;
    cx_spill_log_clear();
    cx_spill_evicted(base, live);
    CHECK(cx_spill.log_len != 0 && cx_spill.head == NULL);
    CHECK_EQ(cx_spill_written_seq(), cx_spill.seq);
    cx_spill_note *in_place = (cx_spill_note *)cx_spill.log;
    CHECK_EQ(pread(written_to, &head, sizeof head, in_place->pos), sizeof head);
    CHECK_EQ(head.seq, in_place->seq);
    CHECK_EQ(head.value_len, 4);                       /* "back" */
    cx_spill_stop();
    CHECK(!cx_spill_maybe(base, cx_key_hash(sb, 0, 0, (const uint8_t *)"k3", 2)));
    /* a record dropped while still queued is written dead (no writer runs now: it stays queued) */
    cx_spill_job *job = calloc(1, sizeof *job + sizeof head);
    *job = (cx_spill_job){NULL, fd, 0, sizeof head, 999, 0};
    cx_spill.head = cx_spill.tail = job;
    CHECK_EQ(cx_spill_kill(999, fd, 0), 0);
    CHECK_EQ(job->data[offsetof(cx_spill_head, dead)], 1);
    cx_spill.head = cx_spill.tail = NULL;
    free(job);
    close(fd);
    close(next);
    unlink(path);
    path[strlen(path) - 5] = 0;
    unlink(path);
    free_arena(base);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    RUN(test_size_classes);
    RUN(test_heap_alloc_free_coalesce);
    RUN(test_heap_reuses_holes_by_class);
    RUN(test_heap_quick_lists);
    RUN(test_backing_pages, dir);
    RUN(test_backing_regions, dir);
    RUN(test_warmer_runs_ahead_and_gives_back, dir);
    RUN(test_index_chains_with_colliding_buckets);
    RUN(test_index_identity_beyond_the_hash);
    RUN(test_same_key_per_db_and_tenant);
    RUN(test_lru_order);
    RUN(test_sampled_references);
    RUN(test_guarantees_and_borrowed_memory);
    RUN(test_borrowers_give_back_by_priority);
    RUN(test_victims_within_a_tenant);
    RUN(test_eviction_tiers_across_tenants);
    RUN(test_eviction_spares_pinned_and_noeviction_tenants);
    RUN(test_quota_evicts_own_entries);
    RUN(test_pinned_value_outlives_overwrite);
    RUN(test_release_process_state);
    RUN(test_expiry_wheel_drops_what_is_due);
    RUN(test_expiry_cycle_resumes);
    RUN(test_lookup_drops_expired);
    RUN(test_hashes_are_stable);
    RUN(test_value_checksums);
    RUN(test_superblock_verdicts);
    RUN(test_rebuild_drops_torn_entries);
    RUN(test_rename_in_place_at_every_crash_point);
    RUN(test_rename_by_copy_at_every_crash_point);
    RUN(test_slot_index_follows_the_index);
    RUN(test_spill_writes_what_is_evicted, dir);
    return check_exit_code();
}
