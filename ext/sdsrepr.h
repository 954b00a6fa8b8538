/* Redis's sdscatrepr, the quoted form MONITOR gives each argument (cxlredis._resp). */
#ifndef CXLREDIS_SDSREPR_H
#define CXLREDIS_SDSREPR_H

#include <stddef.h>
#include <string.h>
#include <Python.h>

/* The quoted form: backslash, double quote, LF, CR, TAB, BEL and BS as a backslash and
   one character, printable ASCII as it is, every other byte as \x and two hex digits.
   CX_REPR_CODE[c] is the form of byte c, CX_REPR_LEN[c] its length (1, 2 or 4). */
static char CX_REPR_CODE[256][4];
static unsigned char CX_REPR_LEN[256];

static void cx_repr_init(void) {
    static const char hex[] = "0123456789abcdef";
    static const unsigned char named[][2] = {{'\\', '\\'}, {'"', '"'},
        {'\n', 'n'}, {'\r', 'r'}, {'\t', 't'}, {'\a', 'a'}, {'\b', 'b'}};
    for (int c = 0; c < 256; c++) {
        if (c >= 0x20 && c < 0x7f) {
            CX_REPR_CODE[c][0] = (char)c;
            CX_REPR_LEN[c] = 1;
        } else {
            memcpy(CX_REPR_CODE[c], (char[]){'\\', 'x', hex[c >> 4], hex[c & 15]}, 4);
            CX_REPR_LEN[c] = 4;
        }
    }
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        CX_REPR_CODE[named[i][0]][0] = '\\';
        CX_REPR_CODE[named[i][0]][1] = (char)named[i][1];
        CX_REPR_LEN[named[i][0]] = 2;
    }
}

/* The length of the quoted form of s[0, n), quotes included. */
static Py_ssize_t cx_repr_size(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t size = 2;
    for (Py_ssize_t i = 0; i < n; i++)
        size += CX_REPR_LEN[s[i]];
    return size;
}

/* Writes the quoted form of s[0, n) at out (cx_repr_size bytes); returns its end.
   A byte's form is stored as 4 bytes whatever its length: past the last two bytes'
   forms there are always 3 more bytes of the quoted form to be written, so those
   stores stay inside it; the last two are stored at their length. */
static char *cx_repr_write(char *out, const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    *out++ = '"';
    for (; i + 2 < n; i++) {
        memcpy(out, CX_REPR_CODE[s[i]], 4);
        out += CX_REPR_LEN[s[i]];
    }
    for (; i < n; i++) {
        memcpy(out, CX_REPR_CODE[s[i]], CX_REPR_LEN[s[i]]);
        out += CX_REPR_LEN[s[i]];
    }
    *out++ = '"';
    return out;
}

#endif
