/* CRC-64/Jones, the checksum of RDB files and DUMP payloads (cxlredis._cluster).

   Polynomial 0xad93d23594c935a9, reflected in and out, initial value 0, no final xor
   (check value of "123456789": 0xe9c6d914c4b8d9ca).  Slice-by-8: eight tables let the
   loop fold 8 input bytes per step, which keeps a 32 MiB RESTORE payload's check in the
   tens of milliseconds instead of the seconds a bytewise loop takes. */
#ifndef CXLREDIS_CRC64_H
#define CXLREDIS_CRC64_H

/* held to -Wall -Wextra -Werror (see arena/arena.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CX_CRC64_REFLECTED_POLY 0x95ac9329ac4bc9b5ULL   /* 0xad93d23594c935a9 bit-reversed */

static uint64_t CX_CRC64_TABLE[8][256];

static void cx_crc64_init(void) {
    for (int byte = 0; byte < 256; byte++) {
        uint64_t crc = (uint64_t)byte;
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 1) ? (crc >> 1) ^ CX_CRC64_REFLECTED_POLY : crc >> 1;
        CX_CRC64_TABLE[0][byte] = crc;
    }
    /* TABLE[k][b]: the CRC of byte b followed by k zero bytes. */
    for (int byte = 0; byte < 256; byte++) {
        uint64_t crc = CX_CRC64_TABLE[0][byte];
        for (int k = 1; k < 8; k++) {
            crc = CX_CRC64_TABLE[0][crc & 0xff] ^ (crc >> 8);
            CX_CRC64_TABLE[k][byte] = crc;
        }
    }
}

static uint64_t cx_crc64(uint64_t crc, const unsigned char *buf, size_t len) {
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, buf, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        word = __builtin_bswap64(word);
#endif
        word ^= crc;
        crc = CX_CRC64_TABLE[7][word & 0xff] ^
              CX_CRC64_TABLE[6][(word >> 8) & 0xff] ^
              CX_CRC64_TABLE[5][(word >> 16) & 0xff] ^
              CX_CRC64_TABLE[4][(word >> 24) & 0xff] ^
              CX_CRC64_TABLE[3][(word >> 32) & 0xff] ^
              CX_CRC64_TABLE[2][(word >> 40) & 0xff] ^
              CX_CRC64_TABLE[1][(word >> 48) & 0xff] ^
              CX_CRC64_TABLE[0][word >> 56];
        buf += 8;
        len -= 8;
    }
    while (len--)
        crc = CX_CRC64_TABLE[0][(crc ^ *buf++) & 0xff] ^ (crc >> 8);
    return crc;
}

#pragma GCC diagnostic pop

#endif
