/* Tenants: the 64 slots of the superblock's tenant table (slot 0, the default tenant,
   always exists), each tenant's per-db key counters (for tenants 1..63 a TABLE block in
   the heap), and creating and dropping a tenant so that a crash part way leaves
   nothing a rebuild cannot tell apart. */
#ifndef CX_TENANT_H
#define CX_TENANT_H

#include <stdint.h>

#include "common.h"
#include "layout.h"

static inline uint64_t cx_tenant_bits(const cx_super *sb) { return sb->tenant_bits | 1; }
/* the policy tenant t's entries are evicted by: its own, else the arena's (always
   the arena's for the default tenant) */
static inline int cx_policy_of(const cx_super *sb, unsigned t, const cx_cfg *cfg) {
    uint32_t p = t ? sb->tmeta[t].policy : 0;
    return p ? (int)p - 1 : cfg->policy;
}
static inline uint64_t *cx_db_keys(char *base, unsigned t) {
    return t ? ((cx_dbtab *)(base + CX_SB(base)->tmeta[t].dbtab))->keys : CX_SB(base)->db_keys;
}
static inline uint64_t *cx_db_volatile(char *base, unsigned t) {
    return t ? ((cx_dbtab *)(base + CX_SB(base)->tmeta[t].dbtab))->volatile_keys : CX_SB(base)->db_volatile;
}

CX_API int cx_dbtab_intact(char *base, unsigned t);
CX_API int cx_dbtab_owned(char *base, uint64_t off);
CX_API int cx_tenant_create(char *base, unsigned t, const uint8_t *name, uint32_t name_len, uint64_t quota,
                            uint32_t policy, const cx_cfg *cfg, int64_t now);
CX_API void cx_tenant_drop(char *base, unsigned t);

#endif
