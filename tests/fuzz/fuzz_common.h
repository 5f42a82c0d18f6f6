/* Shared by the fuzz harnesses (tests/fuzz/fuzz_*.c): the libFuzzer entry point and a
 * helper that gives an input a path for readers that only take file names. */
#ifndef CD_FUZZ_COMMON_H
#define CD_FUZZ_COMMON_H
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to "/dev/shm/cldiff-fuzz-<pid><suffix>" (tmpfs: no disk traffic; /tmp when
 * /dev/shm is absent), the same name on every call of one process. An anonymous memfd does
 * not work: HDF5 resolves /proc/self/fd/N to its real path, "/memfd:... (deleted)", and
 * fails. The caller unlinks path. Returns 0 or -1. */
int cd_fuzz_shmfile(const uint8_t *data, size_t size, const char *suffix, char *path, size_t n);
#endif
