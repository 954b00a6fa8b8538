/* The backing (see backing.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
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
#ifndef SYS_cachestat
#define SYS_cachestat 451       /* Linux 6.5; the same number on every architecture */
#endif

/* ---- the backing's pages ---- */
/* Offsets here are the arena's (from `base`, its mapping); the arena's region starts
   `region` bytes into the file (arena-offset, a multiple of `grain`), which the calls
   on the file add. */

/* Allocate the backing's pages under [off, off + len), rounded out to whole pages of
   `grain` bytes and clipped to the arena's `size`: a store there can then never fault
   for want of memory (a file system that cannot supply a page raises SIGBUS), so a
   full backing is an error here instead. 0 or an errno (ENOSPC). */
CX_API int cx_back_range(char *base, int fd, uint64_t region, uint64_t grain, uint64_t size, uint64_t off,
                         uint64_t len) {
    uint64_t lo = off & ~(grain - 1), hi = (off + len + grain - 1) & ~(grain - 1);
    if (hi > size) hi = size;
    if (fallocate(fd, 0, (off_t)(region + lo), (off_t)(hi - lo)) == 0) return 0;
    if (errno != EOPNOTSUPP) return errno;
    /* no fallocate: faulting the pages in reports what would be a SIGBUS as EFAULT */
    return madvise(base + lo, hi - lo, MADV_POPULATE_WRITE) == 0 ? 0 : errno;
}

/* Give the pages under [off, off + len) back to the file system (the file keeps its
   size, and reads there see zeros); 0 or an errno. */
static int cx_back_punch(int fd, uint64_t region, uint64_t off, uint64_t len) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(region + off), (off_t)len) == 0
        ? 0 : errno;
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
/* An arena locks its bytes [off, off + len) of the file (len 0: to its end) with an open
   file description lock (F_OFD_SETLK), not the whole file: arenas in other regions of it
   are not in its way, a second one on an overlapping region is, even in this process. */
static struct flock cx_range(short type, uint64_t off, uint64_t len) {
    struct flock l;
    memset(&l, 0, sizeof l);
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = (off_t)off;
    l.l_len = (off_t)len;
    return l;
}
/* 0, or EAGAIN when another open of the file holds a lock there */
CX_API int cx_os_lock(int fd, uint64_t off, uint64_t len) {
    struct flock l = cx_range(F_WRLCK, off, len);
    if (fcntl(fd, F_OFD_SETLK, &l) == 0) return 0;
    return errno == EACCES ? EAGAIN : errno;
}
/* *locked: whether another open of the file holds a lock on [off, off + len) */
CX_API int cx_os_locked(int fd, uint64_t off, uint64_t len, int *locked) {
    struct flock l = cx_range(F_WRLCK, off, len);
    if (fcntl(fd, F_OFD_GETLK, &l) != 0) return errno;
    *locked = l.l_type != F_UNLCK;
    return 0;
}
/* The backing file's file system: bytes free for it and its size (both UINT64_MAX: the
   file system does not say, as hugetlbfs without a size limit), and the unit its pages
   are allocated and punched in. */
CX_API int cx_os_space(int fd, uint64_t *avail, uint64_t *total, uint64_t *grain) {
    struct statvfs vfs;
    struct stat st;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), blk;
    if (fstatvfs(fd, &vfs) != 0 || fstat(fd, &st) != 0) return errno;
    *avail = vfs.f_blocks ? (uint64_t)vfs.f_bavail * vfs.f_frsize : UINT64_MAX;
    *total = vfs.f_blocks ? (uint64_t)vfs.f_blocks * vfs.f_frsize : UINT64_MAX;
    blk = (uint64_t)st.st_blksize;
    *grain = blk > page && !(blk & (blk - 1)) ? blk : page;
    return 0;
}
/* Bytes the file holds of [off, off + len). The whole file (offset 0, no bigger than
   len): its blocks. A region: its pages in memory or swapped out (or, on a disk file,
   evicted), by cachestat (Linux 6.5; exact on tmpfs); where that cannot tell (an older
   kernel, hugetlbfs) the region's part of the file, as if all of it were held. */
struct cx_cachestat_range { uint64_t off, len; };
struct cx_cachestat { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted; };
CX_API uint64_t cx_os_held(int fd, uint64_t off, uint64_t len) {
    struct stat st;
    struct cx_cachestat_range range = {off, len};
    struct cx_cachestat cs;
    if (fstat(fd, &st) != 0) return 0;
    uint64_t file_size = (uint64_t)st.st_size;
    if (off == 0 && file_size <= len) return (uint64_t)st.st_blocks * 512;
    if (syscall(SYS_cachestat, fd, &range, &cs, 0) == 0)
        return (cs.nr_cache + cs.nr_evicted) * (uint64_t)sysconf(_SC_PAGESIZE);
    if (file_size <= off) return 0;
    return file_size - off < len ? file_size - off : len;
}
CX_API int cx_os_truncate(int fd, uint64_t size) { return ftruncate(fd, (off_t)size) == 0 ? 0 : errno; }
/* map the arena: `size` bytes from `off` in the file (a multiple of its page size) */
CX_API int cx_os_map(int fd, uint64_t off, uint64_t size, char **out) {
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
    if (p == MAP_FAILED) return errno;
    *out = (char *)p;
    return 0;
}
/* The mapping at base replaced, in place, by a private one of the same bytes: what this
   process writes from now on stays in it (a forked SCRIPT DEBUG session's copy of the
   server's data). Pages it has not written still read the file, as the server goes on. */
CX_API int cx_os_map_private(int fd, uint64_t off, uint64_t size, char *base) {
    void *p = mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off);
    return p == MAP_FAILED ? errno : 0;
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
/* SAVE: every page of the mapping written back to the backing, waited for; 0 or an errno
   (a device's pages need no writing back: its msync returns at once) */
CX_API int cx_os_sync(char *base, uint64_t size) { return msync(base, size, MS_SYNC) == 0 ? 0 : errno; }
CX_API void cx_os_unmap(char *base, uint64_t size, int fd, int sync) {
    if (sync) msync(base, size, MS_SYNC);
    munmap(base, size);
    close(fd);
}
