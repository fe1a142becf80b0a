#ifndef BATCHDL_CSYSTEM_H
#define BATCHDL_CSYSTEM_H

/* Linux constants and calls that Swift's Glibc module does not import: they are declared only for
 * _GNU_SOURCE, or in headers the module leaves out. Their values differ between architectures, so
 * they are read from the C library here rather than written out in Swift. */

/* O_DIRECT: writes that bypass the page cache. */
int csystem_direct_flag(void);
/* O_TMPFILE: an unnamed file in a folder. */
int csystem_unnamed_file_flag(void);
/* AT_EMPTY_PATH: an *at call on the descriptor itself. */
int csystem_empty_path_flag(void);
/* The filesystem's type (statfs f_type, e.g. 0xEF53 for ext2/3/4), or -1 when it cannot be read. */
long csystem_filesystem_type(int descriptor);
/* Sets a file's modification time to `seconds` since 1970, leaving its access time (utimensat with
 * UTIME_OMIT); a symbolic link at `path` is not followed (its own time is set). 0, or -1 with
 * errno. */
int csystem_set_modified(const char *path, long long seconds);

/* The same for an open file (futimens). */
int csystem_set_modified_descriptor(int descriptor, long long seconds);

/* Drops the clean pages of [offset, offset + length) from the page cache (posix_fadvise
 * POSIX_FADV_DONTNEED; dirty pages and pages under writeback stay): 0, or an error number. */
int csystem_drop_cached(int descriptor, long long offset, long long length);

/* Reserves the blocks of [offset, offset + length) for the file without changing its size:
 * fallocate(2) with FALLOC_FL_KEEP_SIZE, which allocates unwritten blocks and writes nothing
 * (posix_fallocate writes zeros where the filesystem has no fallocate). 0, or an error number:
 * ENOSPC or EDQUOT when the filesystem cannot hold them, EOPNOTSUPP or ENOSYS when it cannot
 * reserve. Retried on EINTR. */
int csystem_reserve(int descriptor, long long offset, long long length);

/* Asks for [address, address + length) to be backed by transparent huge pages (madvise
 * MADV_HUGEPAGE), where the kernel offers them: 0, or an error number (EINVAL where it does not). */
int csystem_huge_pages(void *address, unsigned long length);

#endif
