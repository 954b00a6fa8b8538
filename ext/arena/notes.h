/* Drop notes: the keys this process drops because they expired or were evicted, noted
   while the server publishes them as keyspace notifications ("expired", "evicted").
   They live in the process's memory, not in the mapping: another process running the
   arena publishes its own drops. Each note is its header followed by the key. */
#ifndef CX_NOTES_H
#define CX_NOTES_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

enum { CX_NOTE_EXPIRED = 1, CX_NOTE_EVICTED = 2 };

typedef struct {
    uint64_t base;         /* the arena's mapping, which tells the server whose keys they are */
    uint32_t key_len;
    uint16_t tenant, db;   /* the entry's tenant slot and physical db */
    uint8_t kind;
    uint8_t pad[7];
} cx_note;

typedef struct {
    uint8_t *buf;
    size_t len, cap;
    int on;                /* note drops at all (keyspace notifications want them) */
    uint64_t lost;         /* notes not kept: no memory for them */
} cx_note_log;

static cx_note_log cx_notes;

static void cx_note_drop(char *base, uint64_t off, int kind);
/* forget the notes (the caller has read them) */
CX_API void cx_notes_clear(void);

#endif
