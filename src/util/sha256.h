/* SHA-256 (FIPS 180-4), used to fingerprint the model file in the dump (model_sha256). */
#ifndef CD_SHA256_H
#define CD_SHA256_H
#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

typedef struct cd_sha256_ctx {
    uint32_t h[8];
    uint64_t total; /* bytes hashed so far */
    uint8_t buf[64];
    size_t used; /* bytes pending in buf */
    int impl;    /* the compression function cd_sha256_init picked (sha256.c) */
} cd_sha256_ctx;

void cd_sha256_init(cd_sha256_ctx *c);
void cd_sha256_update(cd_sha256_ctx *c, const void *data, size_t n);
void cd_sha256_final(cd_sha256_ctx *c, uint8_t digest[32]);
/* One-shot digest of a buffer. */
void cd_sha256(const void *data, size_t n, uint8_t digest[32]);
/* The compression function this machine runs: "sha-ni" (x86-64 SHA extensions) or "generic";
 * CLDIFF_SHA256=generic forces the portable one (same digests). */
const char *cd_sha256_impl(void);
/* Lower-case hex of a digest into hex[65] (NUL-terminated). */
void cd_sha256_hex(const uint8_t digest[32], char hex[65]);
/* Hashes a whole file; missing/unreadable file -> CD_E_USAGE naming the path and errno text. */
cd_status cd_sha256_file(const char *path, char hex[65], cd_error *err);
#endif
