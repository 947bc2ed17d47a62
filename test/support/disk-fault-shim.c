/*
 * LD_PRELOAD shim for the disk fault soak (soak/families/disk.ts): makes the writes or the fsyncs
 * of LevelDB's write-ahead files (`<number>.log`) in one directory fail, as a full disk or a
 * failing device would. LevelDB 1.20 (classic-level's) writes them through stdio
 * (fwrite_unlocked, fflush_unlocked) and syncs them with fdatasync, all called from the addon
 * through the dynamic linker, so interposing these symbols reaches them.
 *
 * Compiled at test time into a temporary directory (never committed as a binary):
 *   cc -shared -fPIC -O2 -o disk-fault-shim.so disk-fault-shim.c -ldl
 *
 * Environment:
 *   DISK_FAULT_DIR    the log directory (absolute; only its `<number>.log` files are touched)
 *   DISK_FAULT_MODE   "enospc": after the allowed writes, a write stores half its bytes and fails
 *                     with ENOSPC, and every later one fails whole (the disk stays full);
 *                     "fsync": after the allowed syncs, fdatasync/fsync fail with EIO;
 *                     "slow": every write waits DISK_FAULT_DELAY_MS (default 20) before it
 *                     starts, and then succeeds — a slow disk, so a kill can land mid-write
 *   DISK_FAULT_AFTER  how many writes (enospc) or syncs (fsync) of those files succeed first
 *   DISK_FAULT_DELAY_MS  the wait of each write in "slow" mode
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc defines fwrite_unlocked as a macro when optimizing; the function is what is interposed. */
#undef fwrite_unlocked

static long counted = 0;
static int tripped = 0;

static int is_target(int fd) {
  const char *dir = getenv("DISK_FAULT_DIR");
  if (dir == NULL || fd < 0) return 0;
  char link[64];
  char target[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t length = readlink(link, target, sizeof target - 1);
  if (length <= 0) return 0;
  target[length] = '\0';
  size_t dir_length = strlen(dir);
  if (strncmp(target, dir, dir_length) != 0 || target[dir_length] != '/') return 0;
  const char *name = target + dir_length + 1;
  size_t name_length = strlen(name);
  if (name_length < 5 || strcmp(name + name_length - 4, ".log") != 0) return 0;
  for (size_t i = 0; i < name_length - 4; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
  }
  return 1;
}

static int mode_is(const char *mode) {
  const char *value = getenv("DISK_FAULT_MODE");
  return value != NULL && strcmp(value, mode) == 0;
}

static long allowed(void) {
  const char *value = getenv("DISK_FAULT_AFTER");
  return value == NULL ? 0 : atol(value);
}

static void announce(const char *what) {
  /* One line on stderr, so the parent knows the fault was injected (and where). */
  char line[128];
  int length = snprintf(line, sizeof line, "disk-fault-shim: %s after %ld\n", what, counted);
  if (length > 0) (void)!write(2, line, (size_t)length);
}

size_t fwrite_unlocked(const void *data, size_t size, size_t count, FILE *stream) {
  static size_t (*real)(const void *, size_t, size_t, FILE *) = NULL;
  if (real == NULL) real = (size_t (*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite_unlocked");
  if (mode_is("slow") && is_target(fileno(stream))) {
    const char *delay = getenv("DISK_FAULT_DELAY_MS");
    usleep((useconds_t)(delay == NULL ? 20 : atol(delay)) * 1000);
  }
  if (mode_is("enospc") && size == 1 && is_target(fileno(stream))) {
    if (tripped) {
      errno = ENOSPC;
      return 0;
    }
    if (counted >= allowed()) {
      tripped = 1;
      announce("ENOSPC");
      size_t half = count / 2;
      size_t written = half == 0 ? 0 : real(data, 1, half, stream);
      errno = ENOSPC;
      return written;
    }
    counted += 1;
  }
  return real(data, size, count, stream);
}

static int failed_sync(int fd) {
  if (!mode_is("fsync") || !is_target(fd)) return 0;
  if (tripped) return 1;
  if (counted >= allowed()) {
    tripped = 1;
    announce("EIO on fsync");
    return 1;
  }
  counted += 1;
  return 0;
}

int fdatasync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  if (failed_sync(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  if (failed_sync(fd)) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}
