/* Program binary cache: one file per (device name, driver version, source hash, build
 * options), so a driver update or an edited kernel never reuses an old binary. Entries
 * are written to a temporary file and renamed (readers never see half an entry) and carry
 * a header repeating the full key and a SHA-256 of the binary; an entry whose header,
 * size or checksum does not match is deleted and reported as a miss. */
#ifndef CD_CL_CACHE_H
#define CD_CL_CACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

typedef struct cd_cl_cache {
    bool enabled;
    char dir[1024];
    char note[512]; /* last thing worth telling the user (entry rejected, dir unusable) */
    int hits, misses, rejected, stored;
} cd_cl_cache;

typedef struct cd_cl_cache_key {
    const char *device;  /* CL_DEVICE_NAME */
    const char *driver;  /* CL_DRIVER_VERSION (+ platform version, as the caller sees fit) */
    const char *options; /* build options */
    char source_sha256[65];
} cd_cl_cache_key;

/* dir: NULL for the default ($XDG_CACHE_HOME/cldiff, else $HOME/.cache/cldiff). disabled:
 * --no-cache. A directory that cannot be created disables the cache with a note (a cache
 * is an optimisation; it never fails a run). */
void cd_cl_cache_open(cd_cl_cache *c, const char *dir, bool disabled);
/* Fills key->source_sha256 from the full program source. */
void cd_cl_cache_hash_source(cd_cl_cache_key *key, const char *source, size_t len);
/* Returns true and a malloc'd binary on a valid hit. Corrupt or mismatching entries are
 * deleted (c->rejected++, c->note says why). */
bool cd_cl_cache_get(cd_cl_cache *c, const cd_cl_cache_key *key, uint8_t **bin, size_t *n);
/* Stores an entry atomically; failures only set c->note. */
void cd_cl_cache_put(cd_cl_cache *c, const cd_cl_cache_key *key, const uint8_t *bin, size_t n);
/* Deletes the entry of key: the driver refused a binary that passed the checksum. */
void cd_cl_cache_drop(cd_cl_cache *c, const cd_cl_cache_key *key, const char *why);
/* Path of the entry file for key. */
void cd_cl_cache_path(const cd_cl_cache *c, const cd_cl_cache_key *key, char *buf, size_t n);
#endif
