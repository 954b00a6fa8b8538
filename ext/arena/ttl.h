/* Expiry: the expiry wheel, which holds every volatile live entry in the slot of its
   period (expire_at / CX_WHEEL_MS, modulo CX_WHEEL_SLOTS), and active expiry, which
   walks the periods that have passed and drops what is due. The wheel is arena-wide:
   a drop counts against the entry's own tenant. */
#ifndef CX_TTL_H
#define CX_TTL_H

#include <stdint.h>

#include "common.h"
#include "layout.h"

static inline uint64_t cx_period(int64_t ms) { return ms > 0 ? (uint64_t)ms / CX_WHEEL_MS : 0; }
static inline uint64_t *cx_wheel_slot(cx_super *sb, uint64_t period) {
    return &sb->wheel[period & (CX_WHEEL_SLOTS - 1)];
}

static void cx_wheel_push(char *base, uint64_t off);
static void cx_wheel_unlink(char *base, uint64_t off);
CX_API int cx_expired(const cx_entry *e, int64_t now);
CX_API uint64_t cx_expire_cycle(char *base, int64_t now, int64_t budget_ns);

#endif
