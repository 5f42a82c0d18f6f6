/* Shared by the fuzz harnesses (tests/fuzz/fuzz_*.c): the libFuzzer entry point and a
 * helper that gives an input a path for readers that only take file names. */
#ifndef CD_FUZZ_COMMON_H
#define CD_FUZZ_COMMON_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to a fresh anonymous in-memory file (memfd: no disk traffic, nothing left
 * behind when closed) and returns its descriptor; path receives "/proc/self/fd/N". The
 * caller closes the descriptor. Returns -1 on failure. */
int cd_fuzz_memfile(const uint8_t *data, size_t size, char *path, size_t n);
/* Writes data to a file under $TMPDIR (or /tmp) whose name ends in suffix (".png");
 * path receives its name. The caller unlinks it. Returns 0 or -1. */
int cd_fuzz_tmpfile(const uint8_t *data, size_t size, const char *suffix, char *path, size_t n);
#endif
