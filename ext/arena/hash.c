/* Hashing and checksums (see hash.h). */
#include <string.h>

#include "hash.h"

static inline uint64_t cx_fold(uint64_t a, uint64_t b) {
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}
static inline uint64_t cx_rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint64_t cx_rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static uint64_t cx_hash_bytes(const uint8_t *p, size_t n, uint64_t seed) {
    uint64_t a, b, state = cx_fold(seed ^ CX_K0, CX_K1 ^ (uint64_t)n);
    if (n > 16) {
        size_t left = n;
        while (left > 16) {
            state = cx_fold(cx_rd64(p) ^ CX_K1, cx_rd64(p + 8) ^ state);
            p += 16;
            left -= 16;
        }
        /* the last 16 bytes, overlapping the previous chunk when short */
        a = cx_rd64(p + left - 16);
        b = cx_rd64(p + left - 8);
    } else if (n >= 8) {
        a = cx_rd64(p);
        b = cx_rd64(p + n - 8);
    } else if (n >= 4) {
        a = cx_rd32(p);
        b = cx_rd32(p + n - 4);
    } else if (n > 0) {
        a = ((uint64_t)p[0] << 16) | ((uint64_t)p[n >> 1] << 8) | p[n - 1];
        b = 0;
    } else {
        a = b = 0;
    }
    return cx_fold(state ^ CX_K2, cx_fold(a ^ CX_K1, b ^ CX_K3 ^ state));
}

/* The checksum seals an entry's identity (block size, key geometry, key hash, db,
   type, tenant), written once at commit. The fields updated in place later —
   expire_at, value_len (after its bytes), generation — are single aligned stores
   a kill -9 cannot tear, so they stay outside it: a crash right after such an
   update keeps the entry instead of failing its check and dropping it. */
static uint32_t cx_entry_sum(const cx_entry *e) {
    uint64_t h = cx_fold(CX_SIZE(e->size_state) ^ CX_K0, CX_K1);
    h = cx_fold(h ^ e->hash, (((uint64_t)e->key_len << 32) | e->key_cap) ^ CX_K3);
    h = cx_fold(h ^ ((uint64_t)e->db | ((uint64_t)e->type << 16) | ((uint64_t)e->tenant << 32)), CX_K0);
    return (uint32_t)(h ^ (h >> 32));
}

static uint32_t cx_super_sum(const cx_super *sb) {
    uint8_t g[128];
    memcpy(g, sb, sizeof g);
    memset(g + offsetof(cx_super, checksum), 0, 4);
    uint64_t h = cx_hash_bytes(g, sizeof g, CX_K3);
    return (uint32_t)(h ^ (h >> 32));
}

static inline uint64_t cx_rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Four independent multiply-rotate lanes over 32-byte stripes, then the tail and a
   final avalanche: fast enough to verify multi-MiB values on every read. */
CX_API uint64_t cx_value_sum(const uint8_t *p, uint64_t n) {
    const uint64_t m1 = 0x9E3779B185EBCA87ull, m2 = 0xC2B2AE3D27D4EB4Full;
    uint64_t lane[4] = {m1 ^ n, m2, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
    uint64_t i = 0, w, h;
    for (; i + 32 <= n; i += 32) {
        for (int j = 0; j < 4; j++) {
            memcpy(&w, p + i + 8 * j, 8);
            lane[j] = cx_rotl(lane[j] + w * m2, 31) * m1;
        }
    }
    h = cx_rotl(lane[0], 1) + cx_rotl(lane[1], 7) + cx_rotl(lane[2], 12) + cx_rotl(lane[3], 18);
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = cx_rotl(h ^ (cx_rotl(w * m2, 31) * m1), 27) * m1 + m2;
    }
    for (; i < n; i++) h = cx_rotl(h ^ (p[i] * m1), 11) * m2;
    h ^= h >> 33; h *= m2; h ^= h >> 29; h *= m1; h ^= h >> 32;
    return h;
}
