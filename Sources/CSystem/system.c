#define _GNU_SOURCE
#include "csystem.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>

int csystem_direct_flag(void) { return O_DIRECT; }

int csystem_unnamed_file_flag(void) { return O_TMPFILE; }

int csystem_empty_path_flag(void) { return AT_EMPTY_PATH; }

long csystem_filesystem_type(int descriptor) {
  struct statfs info;
  if (fstatfs(descriptor, &info) != 0) return -1;
  return (long)info.f_type;
}

int csystem_set_modified(const char *path, long long seconds) {
  struct timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT}, {.tv_sec = (time_t)seconds, .tv_nsec = 0}};
  return utimensat(AT_FDCWD, path, times, AT_SYMLINK_NOFOLLOW);
}

int csystem_set_modified_descriptor(int descriptor, long long seconds) {
  struct timespec times[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT}, {.tv_sec = (time_t)seconds, .tv_nsec = 0}};
  return futimens(descriptor, times);
}

int csystem_drop_cached(int descriptor, long long offset, long long length) {
  return posix_fadvise(descriptor, (off_t)offset, (off_t)length, POSIX_FADV_DONTNEED);
}

int csystem_reserve(int descriptor, long long offset, long long length) {
  for (;;) {
    if (fallocate(descriptor, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length) == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

int csystem_huge_pages(void *address, unsigned long length) {
  return madvise(address, length, MADV_HUGEPAGE) == 0 ? 0 : errno;
}
