/* The backing (see backing.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backing.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif

/* ---- the backing's pages ---- */
/* Allocate the backing's pages under [off, off + len), rounded out to whole pages of
   `grain` bytes and clipped to the arena's `size`: a store there can then never fault
   for want of memory (a file system that cannot supply a page raises SIGBUS), so a
   full backing is an error here instead. 0 or an errno (ENOSPC). */
CX_API int cx_back_range(char *base, int fd, uint64_t grain, uint64_t size, uint64_t off, uint64_t len) {
    uint64_t lo = off & ~(grain - 1), hi = (off + len + grain - 1) & ~(grain - 1);
    if (hi > size) hi = size;
    if (fallocate(fd, 0, (off_t)lo, (off_t)(hi - lo)) == 0) return 0;
    if (errno != EOPNOTSUPP) return errno;
    /* no fallocate: faulting the pages in reports what would be a SIGBUS as EFAULT */
    return madvise(base + lo, hi - lo, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
}

/* Give the pages under [off, off + len) back to the file system (the file keeps its
   size, and reads there see zeros); 0 or an errno. */
static int cx_back_punch(int fd, uint64_t off, uint64_t len) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0 ? 0 : errno;
}

/* ---- the file or device ---- */
/* *created: the file did not exist (the caller removes it if the arena cannot start) */
CX_API int cx_os_open(const char *path, int *fd, uint64_t *file_size, int *is_chr, int *created) {
    int f = open(path, O_RDWR | O_CLOEXEC);
    struct stat st;
    *created = 0;
    if (f < 0 && errno == ENOENT) {
        f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        *created = f >= 0;
    }
    if (f < 0) return errno;
    if (fstat(f, &st) != 0) { int err = errno; close(f); return err; }
    *fd = f;
    *file_size = (uint64_t)st.st_size;
    *is_chr = S_ISCHR(st.st_mode);
    return 0;
}
CX_API int cx_os_lock(int fd) { return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno; }
/* The backing file's file system: bytes free for it (UINT64_MAX: the file system does
   not say, as hugetlbfs without a size limit), bytes the file holds already, and the
   unit its pages are allocated and punched in. */
CX_API int cx_os_space(int fd, uint64_t *avail, uint64_t *held, uint64_t *grain) {
    struct statvfs vfs;
    struct stat st;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), blk;
    if (fstatvfs(fd, &vfs) != 0 || fstat(fd, &st) != 0) return errno;
    *avail = vfs.f_blocks ? (uint64_t)vfs.f_bavail * vfs.f_frsize : UINT64_MAX;
    *held = (uint64_t)st.st_blocks * 512;
    blk = (uint64_t)st.st_blksize;
    *grain = blk > page && !(blk & (blk - 1)) ? blk : page;
    return 0;
}
CX_API uint64_t cx_os_held(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}
CX_API int cx_os_truncate(int fd, uint64_t size) { return ftruncate(fd, (off_t)size) == 0 ? 0 : errno; }
CX_API int cx_os_map(int fd, uint64_t size, char **out) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return errno;
    *out = (char *)p;
    return 0;
}
CX_API void cx_os_hugepages(char *base, uint64_t size) { (void)madvise(base, size, MADV_HUGEPAGE); }
CX_API int cx_os_bind(char *base, uint64_t size, int node) {
    unsigned long mask[16];
    if (node < 0 || node >= (int)(sizeof mask * 8)) return EINVAL;
    memset(mask, 0, sizeof mask);
    mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
    /* MPOL_BIND = 2, MPOL_MF_MOVE = 2: also migrate pages a previous run faulted in */
    long r = syscall(SYS_mbind, base, (unsigned long)size, 2, mask, (unsigned long)(sizeof mask * 8), 2u);
    return r == 0 ? 0 : errno;
}
/* only after the whole file is allocated (cx_back_range): a page the file system could
   not supply would be a SIGBUS in the loop */
CX_API void cx_os_prefault(char *base, uint64_t size) {
    if (madvise(base, size, MADV_POPULATE_WRITE) == 0) return;
    long page = sysconf(_SC_PAGESIZE);
    for (uint64_t i = 0; i < size; i += (uint64_t)page) {
        volatile char *c = base + i;
        *c = *c;
    }
}
CX_API void cx_os_unmap(char *base, uint64_t size, int fd, int sync) {
    if (sync) msync(base, size, MS_SYNC);
    munmap(base, size);
    close(fd);
}
