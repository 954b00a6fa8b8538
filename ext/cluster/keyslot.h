/* Redis Cluster key slots: CRC16 (XMODEM) of the key, or of its {hash tag} (cxlredis._cluster). */
#ifndef CXLREDIS_KEYSLOT_H
#define CXLREDIS_KEYSLOT_H

/* held to -Wall -Wextra -Werror (see arena/arena.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CX_CLUSTER_SLOTS 16384

/* CRC16-CCITT as XMODEM computes it: polynomial 0x1021, initial value 0, no reflection.
   The table is filled once at module import by cx_crc16_init. */
static uint16_t CX_CRC16_TABLE[256];

static void cx_crc16_init(void) {
    for (int byte = 0; byte < 256; byte++) {
        uint16_t crc = (uint16_t)(byte << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
        CX_CRC16_TABLE[byte] = crc;
    }
}

static uint16_t cx_crc16(const unsigned char *buf, size_t len) {
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ CX_CRC16_TABLE[((crc >> 8) ^ buf[i]) & 0xff]);
    return crc;
}

/* Redis's keyHashSlot: only the bytes between the first '{' and the first '}' after it
   are hashed, unless there is no such '}' or the tag between them is empty. */
static unsigned int cx_key_slot(const unsigned char *key, size_t len) {
    const unsigned char *open = memchr(key, '{', len);
    if (open != NULL) {
        const unsigned char *tag = open + 1;
        const unsigned char *close = memchr(tag, '}', len - (size_t)(tag - key));
        if (close != NULL && close != tag)
            return cx_crc16(tag, (size_t)(close - tag)) & (CX_CLUSTER_SLOTS - 1);
    }
    return cx_crc16(key, len) & (CX_CLUSTER_SLOTS - 1);
}

#pragma GCC diagnostic pop

#endif
