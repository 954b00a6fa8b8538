/* The heap's allocator (see heap.h). */
#include "backing.h"
#include "heap.h"
#include "warm.h"

/* free blocks at least this big have their interior returned to the kernel */
#define CX_RELEASE_MIN (1ull << 20)
/* a block taken from a not fully backed one gets this much more backed with it, so
   small writes into fresh memory make one fallocate per 2 MiB, not one each */
#define CX_BACK_AHEAD (2ull << 20)

static void cx_free_push(char *base, uint64_t off, uint64_t size, uint64_t backing) {
    cx_super *sb = CX_SB(base);
    unsigned c = cx_class(size);
    cx_freeblk *f = (cx_freeblk *)(base + off);
    f->backing = backing;
    f->prefix = f->punched = 0;
    f->prev = 0;
    f->next = sb->free_head[c];
    if (f->next) ((cx_freeblk *)(base + f->next))->prev = off;
    sb->free_head[c] = off;
    sb->free_map[c >> 6] |= 1ull << (c & 63);
}

static void cx_free_remove(char *base, uint64_t off) {
    cx_super *sb = CX_SB(base);
    cx_freeblk *f = (cx_freeblk *)(base + off);
    unsigned c = cx_class(CX_SIZE(f->size_state));
    if (f->prev) ((cx_freeblk *)(base + f->prev))->next = f->next;
    else sb->free_head[c] = f->next;
    if (f->next) ((cx_freeblk *)(base + f->next))->prev = f->prev;
    if (!sb->free_head[c]) sb->free_map[c >> 6] &= ~(1ull << (c & 63));
}

/* first non-empty class strictly above c, or CX_NCLASS */
static unsigned cx_class_above(const cx_super *sb, unsigned c) {
    unsigned w = (c + 1) >> 6;
    if (w >= CX_MAP_WORDS) return CX_NCLASS;
    uint64_t bits = sb->free_map[w] & (~0ull << ((c + 1) & 63));
    for (;;) {
        if (bits) return w * 64 + (unsigned)__builtin_ctzll(bits);
        if (++w >= CX_MAP_WORDS) return CX_NCLASS;
        bits = sb->free_map[w];
    }
}

/* bytes from free block off's start that are backed (an untagged block's fields are
   not to be trusted) */
static inline uint64_t cx_free_prefix(char *base, uint64_t off) {
    cx_freeblk *f = (cx_freeblk *)(base + off);
    if (cx_free_backed(base, off)) return CX_SIZE(f->size_state);
    return (f->backing & CX_BK_TAG_MASK) == CX_BK_TAG ? f->prefix : 0;
}

static inline int cx_quick_class(uint64_t size) {
    return size < CX_QUICK_CLASSES * 64ull ? (int)(size >> 6) : -1;
}

/* keep freed block off (of `size` bytes, backed, off heap_used already) on its quick
   list if it has one with room: 1, else 0 */
static int cx_quick_push(char *base, uint64_t off, uint64_t size) {
    cx_super *sb = CX_SB(base);
    int c = cx_quick_class(size);
    if (c < 0 || sb->quick_len[c] >= CX_QUICK_DEPTH) return 0;
    cx_freeblk *f = (cx_freeblk *)(base + off);
    cx_store(&f->size_state, size | CX_QUICK);
    f->backing = CX_BK_WORD(CX_BK_BACKED);
    f->next = sb->quick_head[c];
    sb->quick_head[c] = off;
    sb->quick_len[c]++;
    return 1;
}

static uint64_t cx_quick_pop(char *base, uint64_t need) {
    cx_super *sb = CX_SB(base);
    int c = cx_quick_class(need);
    if (c < 0 || !sb->quick_head[c]) return 0;
    uint64_t off = sb->quick_head[c];
    sb->quick_head[c] = ((cx_freeblk *)(base + off))->next;
    sb->quick_len[c]--;
    return off;
}

/* Take a block of exactly `need` bytes (a multiple of 64) from the free lists;
   returns its offset with state RESERVED, or 0. Good fit: a first fit among the
   first few blocks of the request's own class, else any block of a higher class
   (all of which are big enough), else the rest of the own class. A block whose
   pages may not all be backed gets them first; 0 with *err set if the backing has
   no room for them. */
static uint64_t cx_heap_alloc(char *base, uint64_t need, const cx_cfg *cfg, int *err) {
    cx_super *sb = CX_SB(base);
    uint64_t off = cx_quick_pop(base, need);
    if (off) {
        cx_store((uint64_t *)(base + off), need | CX_RESERVED);
        sb->heap_used += need;
        return off;
    }
    unsigned c = cx_class(need);
    uint64_t cur = sb->free_head[c];
    int steps = 0;
    for (; cur && steps < 16; steps++, cur = ((cx_freeblk *)(base + cur))->next)
        if (CX_SIZE(*(uint64_t *)(base + cur)) >= need) { off = cur; break; }
    if (!off) {
        unsigned up = cx_class_above(sb, c);
        if (up < CX_NCLASS) off = sb->free_head[up];
    }
    for (; !off && cur; cur = ((cx_freeblk *)(base + cur))->next)
        if (CX_SIZE(*(uint64_t *)(base + cur)) >= need) off = cur;
    if (!off) return cx_quick_drain(base) ? cx_heap_alloc(base, need, cfg, err) : 0;
    uint64_t size = CX_SIZE(*(uint64_t *)(base + off)), backing = ((cx_freeblk *)(base + off))->backing;
    uint64_t prefix = cx_free_prefix(base, off);
    int split = size - need >= CX_MIN_BLOCK;
    /* the block's own pages, and the one the remainder's header goes to */
    uint64_t want = split ? need + CX_MIN_BLOCK : need;
    if (cfg->grain && want > prefix) {
        /* what is not backed yet, with some ahead; just what is wanted if that is too much */
        uint64_t ahead = want + CX_BACK_AHEAD < size ? want + CX_BACK_AHEAD : size;
        if (cx_back_range(base, cfg->backing_fd, cfg->backing_off, cfg->grain, sb->arena_size, off + prefix,
                          ahead - prefix) == 0)
            prefix = ahead;
        else if ((*err = cx_back_range(base, cfg->backing_fd, cfg->backing_off, cfg->grain, sb->arena_size,
                                       off + prefix, want - prefix)))
            return 0;
        else
            prefix = want;
        /* fresh memory: what comes next in this block is warmed before it is needed */
        cx_warm_hint(cfg->warmer, off + prefix, off + size, cx_now_ms());
    }
    cx_free_remove(base, off);
    if (split) {
        /* the remainder's header is written before the first block shrinks, so a
           heap walk is valid at every instant */
        uint64_t rest = off + need, rsize = size - need;
        *(uint64_t *)(base + rest) = rsize | CX_FREE;
        cx_footer(base, rest, rsize);
        cx_free_push(base, rest, rsize, backing);
        ((cx_freeblk *)(base + rest))->prefix = prefix > need ? prefix - need : 0;
        size = need;
    }
    cx_store((uint64_t *)(base + off), size | CX_RESERVED);
    cx_footer(base, off, size);
    sb->heap_used += size;
    return off;
}

/* Merge block off (all of whose pages are backed, already off heap_used) with its free
   neighbours into the free lists; returns the offset of the resulting free block. */
static uint64_t cx_heap_merge(char *base, uint64_t off) {
    cx_super *sb = CX_SB(base);
    uint64_t size = CX_SIZE(*(uint64_t *)(base + off));
    uint64_t heap_end = sb->heap_off + sb->heap_size;
    int backed = 1;
    uint64_t prefix = size;     /* the freed block is backed, and so what follows it if it is */
    uint64_t right = off + size;
    if (right < heap_end && CX_STATE(*(uint64_t *)(base + right)) == CX_FREE) {
        backed = cx_free_backed(base, right);
        prefix += cx_free_prefix(base, right);
        cx_free_remove(base, right);
        size += CX_SIZE(*(uint64_t *)(base + right));
    }
    cx_store((uint64_t *)(base + off), size | CX_FREE);
    if (off > sb->heap_off) {
        uint64_t lsize = *(uint64_t *)(base + off - 8);
        if (lsize >= CX_MIN_BLOCK && !(lsize & 63) && lsize <= off - sb->heap_off) {
            uint64_t left = off - lsize;
            uint64_t lw = *(uint64_t *)(base + left);
            if (CX_STATE(lw) == CX_FREE && CX_SIZE(lw) == lsize) {
                uint64_t lprefix = cx_free_prefix(base, left);
                prefix = lprefix == lsize ? lsize + prefix : lprefix;
                backed &= cx_free_backed(base, left);
                cx_free_remove(base, left);
                off = left;
                size += lsize;
                cx_store((uint64_t *)(base + off), size | CX_FREE);
            }
        }
    }
    cx_footer(base, off, size);
    cx_free_push(base, off, size, CX_BK_WORD(backed ? CX_BK_BACKED : CX_BK_MIXED));
    ((cx_freeblk *)(base + off))->prefix = prefix;
    return off;
}

/* Return a block (all of whose pages are backed) to the heap: to its quick list, or
   merged with its free neighbours; returns the offset of the resulting free block. */
static uint64_t cx_heap_free(char *base, uint64_t off) {
    uint64_t size = CX_SIZE(*(uint64_t *)(base + off));
    CX_SB(base)->heap_used -= size;
    return cx_quick_push(base, off, size) ? off : cx_heap_merge(base, off);
}

/* Merge every quick block into the free lists; returns how many there were. */
static uint64_t cx_quick_drain(char *base) {
    uint64_t drained = 0;
    for (int c = 0; c < CX_QUICK_CLASSES; c++) {
        uint64_t off;
        while ((off = cx_quick_pop(base, (uint64_t)c << 6))) {
            cx_heap_merge(base, off);
            drained++;
        }
    }
    return drained;
}

/* The pages the warmer faulted in inside HOLLOW free block off ([lo, hi) its interior),
   punched once it has been idle for min_age ms; the bytes punched. (The block stays
   HOLLOW: it holds what it held before the warmer came.) */
static uint64_t cx_release_warmed(char *base, const cx_cfg *cfg, uint64_t off, uint64_t lo, uint64_t hi,
                                  int64_t now, uint64_t min_age) {
    uint64_t g = cfg->grain, at = 0;
    uint64_t kept = (off + cx_free_prefix(base, off) + g - 1) & ~(g - 1);    /* backed ahead */
    uint64_t len = cx_warm_release(cfg->warmer, kept > lo ? kept : lo, hi, now, min_age, &at);
    uint64_t from = (at + g - 1) & ~(g - 1), to = (at + len) & ~(g - 1);
    if (!len || to <= from || cx_back_punch(cfg->backing_fd, cfg->backing_off, from, to - from) != 0)
        return 0;
    return to - from;
}

/* Give the pages of big, idle free blocks back to the kernel: punch out each one's
   interior, keeping its header and footer pages, so the backing holds about what is
   allocated. A block qualifies after it has been seen free for min_age ms, so a block
   freed by an overwrite and soon reused is not punched and re-backed for nothing.
   At most max_bytes punched (a bigger block goes in parts, over several calls) and
   max_visits blocks looked at per call; returns the bytes punched. */
CX_API uint64_t cx_release_free(char *base, const cx_cfg *cfg, int64_t now, uint64_t min_age,
                                uint64_t max_bytes, uint64_t max_visits) {
    cx_super *sb = CX_SB(base);
    uint64_t g = cfg->grain, done = 0, stamp = (uint64_t)now & CX_BK_SEEN_MASK;
    if (!g) return 0;
    if (!stamp) stamp = 1;
    for (unsigned c = cx_class_above(sb, cx_class(CX_RELEASE_MIN) - 1); c < CX_NCLASS;
         c = cx_class_above(sb, c)) {
        for (uint64_t cur = sb->free_head[c]; cur; cur = ((cx_freeblk *)(base + cur))->next) {
            cx_freeblk *f = (cx_freeblk *)(base + cur);
            unsigned kind = cx_bk_kind(f->backing);
            uint64_t seen = f->backing & CX_BK_SEEN_MASK, size = CX_SIZE(f->size_state);
            uint64_t lo = (cur & ~(g - 1)) + g, hi = (cur + size - 8) & ~(g - 1);
            if (!max_visits--) return done;
            if (kind == CX_BK_HOLLOW) {
                done += cx_release_warmed(base, cfg, cur, lo, hi, now, min_age);
                continue;
            }
            if ((f->backing & CX_BK_TAG_MASK) != CX_BK_TAG) {
                f->prefix = f->punched = 0;
                seen = 0;
            }
            if (!seen) {
                f->backing = CX_BK_WORD(kind) | stamp;
                continue;
            }
            if (((stamp - seen) & CX_BK_SEEN_MASK) < min_age) continue;
            uint64_t from = lo + f->punched, to = hi;
            if (to > from && to - from > max_bytes - done) to = from + ((max_bytes - done) & ~(g - 1));
            /* marked first: a crash after the punch must not leave it marked backed */
            f->backing = to < hi ? CX_BK_WORD(CX_BK_MIXED) | seen : CX_BK_WORD(CX_BK_HOLLOW);
            f->prefix = 0;
            if (to > from) {
                if (cx_back_punch(cfg->backing_fd, cfg->backing_off, from, to - from) != 0) {
                    f->backing = CX_BK_WORD(CX_BK_HOLLOW);   /* cannot punch: leave it be */
                    continue;
                }
                f->punched += to - from;
                done += to - from;
            }
            if (done + g > max_bytes) return done;
        }
    }
    return done;
}
