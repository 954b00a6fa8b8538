/* LZF decompression, for the compressed strings in RDB and DUMP payloads (cxlredis._cluster).

   An LZF stream is a sequence of runs, each led by a control byte c:
     c < 32:  a literal run, the next c + 1 bytes are copied as they are;
     c >= 32: a back reference of length (c >> 5) + 2 (when c >> 5 is 7, the next byte
              adds to the length), at distance ((c & 31) << 8) + next byte + 1 behind the
              output position.
   Every read and write is bounds-checked: the input comes from the network. */
#ifndef CXLREDIS_LZF_H
#define CXLREDIS_LZF_H

/* held to -Wall -Wextra -Werror (see arena/arena.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wall"
#pragma GCC diagnostic error "-Wextra"

#include <stddef.h>
#include <string.h>

/* Decompresses in[0..in_len) into out[0..out_len); returns the number of bytes written,
   or -1 when the stream is malformed or does not fit in out_len bytes. */
static ptrdiff_t cx_lzf_decompress(const unsigned char *in, size_t in_len,
                                   unsigned char *out, size_t out_len) {
    const unsigned char *ip = in, *in_end = in + in_len;
    unsigned char *op = out, *out_end = out + out_len;
    while (ip < in_end) {
        unsigned int ctrl = *ip++;
        if (ctrl < 32) {
            size_t run = ctrl + 1;
            if ((size_t)(in_end - ip) < run || (size_t)(out_end - op) < run)
                return -1;
            memcpy(op, ip, run);
            op += run;
            ip += run;
            continue;
        }
        size_t run = ctrl >> 5;
        if (run == 7) {
            if (ip >= in_end)
                return -1;
            run += *ip++;
        }
        run += 2;
        if (ip >= in_end)
            return -1;
        size_t distance = ((size_t)(ctrl & 31) << 8) + *ip++ + 1;
        if ((size_t)(op - out) < distance || (size_t)(out_end - op) < run)
            return -1;
        /* Byte by byte: source and destination overlap when distance < run. */
        const unsigned char *ref = op - distance;
        for (size_t i = 0; i < run; i++)
            op[i] = ref[i];
        op += run;
    }
    return op - out;
}

#pragma GCC diagnostic pop

#endif
