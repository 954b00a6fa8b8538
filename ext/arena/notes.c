/* Drop notes (see notes.h). */
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "notes.h"

static void cx_note_drop(char *base, uint64_t off, int kind) {
    if (!cx_notes.on) return;
    const cx_entry *e = CX_E(base, off);
    size_t need = sizeof(cx_note) + e->key_len;
    if (cx_notes.len + need > cx_notes.cap) {
        size_t cap = cx_notes.cap ? cx_notes.cap : 4096;
        while (cap < cx_notes.len + need) cap *= 2;
        uint8_t *grown = realloc(cx_notes.buf, cap);
        if (!grown) {
            cx_notes.lost++;
            return;
        }
        cx_notes.buf = grown;
        cx_notes.cap = cap;
    }
    cx_note note = {(uint64_t)(uintptr_t)base, e->key_len, e->tenant, e->db, (uint8_t)kind, {0}};
    memcpy(cx_notes.buf + cx_notes.len, &note, sizeof note);
    memcpy(cx_notes.buf + cx_notes.len + sizeof note, CX_KEY(e), e->key_len);
    cx_notes.len += need;
}

CX_API void cx_notes_clear(void) {
    cx_notes.len = 0;
    if (cx_notes.cap > (1u << 20)) {     /* a burst's buffer is not kept */
        free(cx_notes.buf);
        cx_notes.buf = NULL;
        cx_notes.cap = 0;
    }
}
