/* Glob matching with Redis's rules (stringmatchlen in Redis 7.0's util.c), for KEYS,
   SCAN MATCH and the key patterns of ACL rules: '*', '?', '[abc]', '[^a]', '[a-z]' and
   '\' escapes. (Not named glob.h: ext/ is on the include path, where it would hide
   the C library's <glob.h>.) */
#ifndef CX_GLOBMATCH_H
#define CX_GLOBMATCH_H

#include <stddef.h>
#include <stdint.h>

/* 1 if string s (sn bytes) matches pattern p (pn bytes), else 0; nocase folds ASCII
   letters. As in Redis, an empty string matches only an empty pattern. */
int cx_glob(const uint8_t *p, size_t pn, const uint8_t *s, size_t sn, int nocase);

#endif
