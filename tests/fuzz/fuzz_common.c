/* Helpers shared by the fuzz harnesses; see fuzz_common.h. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int write_all(int fd, const uint8_t *data, size_t size) {
    while (size) {
        ssize_t w = write(fd, data, size);
        if (w <= 0) return -1;
        data += w;
        size -= (size_t)w;
    }
    return 0;
}

int cd_fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t n) {
    int fd = memfd_create("cldiff-fuzz", MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (write_all(fd, data, size) != 0) { close(fd); return -1; }
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

int cd_fuzz_tmpfile(const uint8_t *data, size_t size, const char *suffix, char *path, size_t n) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(path, n, "%s/cldiff-fuzz-XXXXXX%s", dir, suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0) return -1;
    int rc = write_all(fd, data, size);
    close(fd);
    if (rc) unlink(path);
    return rc;
}
