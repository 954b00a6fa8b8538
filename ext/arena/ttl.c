/* Expiry (see ttl.h). */
#include <time.h>

#include "entry.h"
#include "notes.h"
#include "ttl.h"

/* Volatile entry `off` joins the slot of its period, or of the period active expiry
   looks at next when its own has passed already; within that one, where a look cut
   short by its budget resumes (it becomes the cursor), so the look still meets it. */
static void cx_wheel_push(char *base, uint64_t off) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    uint64_t period = cx_period(e->expire_at), *slot, at;
    if (period <= sb->wheel_next) period = sb->wheel_next;
    slot = cx_wheel_slot(sb, period);
    at = period == sb->wheel_next ? sb->wheel_cursor : 0;
    e->ttl_next = at ? at : *slot;
    e->ttl_prev = at ? CX_E(base, at)->ttl_prev : (uint64_t)(slot - sb->wheel) + 1;
    if (e->ttl_next) CX_E(base, e->ttl_next)->ttl_prev = off;
    if (e->ttl_prev > CX_WHEEL_SLOTS) CX_E(base, e->ttl_prev)->ttl_next = off;
    else *slot = off;
    if (at) sb->wheel_cursor = off;
}

static void cx_wheel_unlink(char *base, uint64_t off) {
    cx_super *sb = CX_SB(base);
    cx_entry *e = CX_E(base, off);
    if (sb->wheel_cursor == off) sb->wheel_cursor = e->ttl_next;
    if (e->ttl_prev > CX_WHEEL_SLOTS) CX_E(base, e->ttl_prev)->ttl_next = e->ttl_next;
    else sb->wheel[e->ttl_prev - 1] = e->ttl_next;
    if (e->ttl_next) CX_E(base, e->ttl_next)->ttl_prev = e->ttl_prev;
    e->ttl_prev = e->ttl_next = 0;
}

CX_API int cx_expired(const cx_entry *e, int64_t now) { return e->expire_at != -1 && e->expire_at < now; }

/* Active expiry: look at the wheel's periods from wheel_next up to now's, dropping
   what is due, for about budget_ns (the clock is read every 32 entries, so a
   budget of 0 looks at 32). It resumes where it stopped; a period that has not
   passed yet is looked at again next time, and so is one whose look began
   before it was over. An entry met in another period's slot
   (one whose period is a turn or more away, or placed there before a clock step)
   moves to its own. A walk behind by a whole turn or more (a stopped server) or
   ahead of the clock (it was set back) looks at every slot once. */
CX_API uint64_t cx_expire_cycle(char *base, int64_t now, int64_t budget_ns) {
    cx_super *sb = CX_SB(base);
    uint64_t target = cx_period(now), expired = 0, checked = 0, cur, next, mask = CX_WHEEL_SLOTS - 1;
    struct timespec ts;
    int64_t start;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    start = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    if (sb->wheel_next > target || target - sb->wheel_next >= CX_WHEEL_SLOTS) {
        sb->wheel_next = target >= mask ? target - mask : 0;
        sb->wheel_cursor = 0;
    }
    for (;;) {
        if (sb->wheel_cursor) {
            cur = sb->wheel_cursor;
        } else {
            cur = *cx_wheel_slot(sb, sb->wheel_next);
            sb->wheel_walk_from = target;
        }
        sb->wheel_cursor = 0;
        for (; cur; cur = next) {
            if (checked && !(checked & 31)) {
                clock_gettime(CLOCK_MONOTONIC, &ts);
                if ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - start >= budget_ns) {
                    sb->wheel_cursor = cur;
                    goto out;
                }
            }
            cx_entry *e = CX_E(base, cur);
            next = e->ttl_next;
            checked++;
            if (e->expire_at < now) {
                sb->tenants[e->tenant].expired++;
                cx_note_drop(base, cur, CX_NOTE_EXPIRED);
                cx_drop(base, cur, 1);
                expired++;
            } else if ((cx_period(e->expire_at) & mask) != (sb->wheel_next & mask)) {
                cx_wheel_unlink(base, cur);
                cx_wheel_push(base, cur);
            }
        }
        if (sb->wheel_next == target) break;
        /* entries passed over while the period was running may have come due since */
        if (sb->wheel_walk_from <= sb->wheel_next) continue;
        sb->wheel_next++;
    }
out:
    sb->expired += expired;
    return expired;
}
