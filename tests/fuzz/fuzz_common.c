/* Helpers shared by the fuzz harnesses; see fuzz_common.h. */
#define _GNU_SOURCE
#include "fuzz_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
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

int cd_fuzz_shmfile(const uint8_t *data, size_t size, const char *suffix, char *path, size_t n) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(path, n, "%s/cldiff-fuzz-%ld%s", dir, (long)getpid(), suffix);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    int rc = write_all(fd, data, size);
    close(fd);
    if (rc) unlink(path);
    return rc;
}
