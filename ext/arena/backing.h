/* The backing: the file or device the arena is mapped from. Opening, locking, sizing
   and mapping it (the whole file, or a region of it at arena-offset), binding it to a NUMA node and asking for huge pages, and allocating
   (cx_back_range) or punching (cx_back_punch) its pages. The only part that makes
   system calls on it. */
#ifndef CX_BACKING_H
#define CX_BACKING_H

#include <stdint.h>

#include "common.h"

CX_API int cx_back_range(char *base, int fd, uint64_t region, uint64_t grain, uint64_t size, uint64_t off,
                         uint64_t len);
static int cx_back_punch(int fd, uint64_t region, uint64_t off, uint64_t len);
CX_API int cx_os_open(const char *path, int *fd, uint64_t *file_size, int *is_chr, int *created);
CX_API int cx_os_lock(int fd, uint64_t off, uint64_t len);
CX_API int cx_os_locked(int fd, uint64_t off, uint64_t len, int *locked);
CX_API int cx_os_space(int fd, uint64_t *avail, uint64_t *total, uint64_t *grain);
CX_API uint64_t cx_os_held(int fd, uint64_t off, uint64_t len);
CX_API int cx_os_truncate(int fd, uint64_t size);
CX_API int cx_os_map(int fd, uint64_t off, uint64_t size, char **out);
CX_API int cx_os_map_private(int fd, uint64_t off, uint64_t size, char *base);
CX_API void cx_os_hugepages(char *base, uint64_t size);
CX_API int cx_os_bind(char *base, uint64_t size, int node);
CX_API void cx_os_prefault(char *base, uint64_t size);
CX_API int cx_os_sync(char *base, uint64_t size);
CX_API void cx_os_unmap(char *base, uint64_t size, int fd, int sync);

#endif
