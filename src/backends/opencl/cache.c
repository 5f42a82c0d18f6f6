/* Program binary cache (see cache.h for the rules). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "backends/opencl/cache.h"
#include "util/sha256.h"

#define CACHE_MAGIC "CLDIFFCACHE 1\n"
#define CACHE_MAX_ENTRY (512u << 20) /* larger files are not ours */

static int mkdir_p(const char *path) {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    struct stat st;
    return stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

void cd_cl_cache_open(cd_cl_cache *c, const char *dir, bool disabled) {
    memset(c, 0, sizeof *c);
    if (disabled) {
        snprintf(c->note, sizeof c->note, "program cache disabled (--no-cache)");
        return;
    }
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir && *dir)
        snprintf(c->dir, sizeof c->dir, "%s", dir);
    else if (xdg && *xdg == '/')
        snprintf(c->dir, sizeof c->dir, "%.1000s/cldiff", xdg);
    else if (home && *home)
        snprintf(c->dir, sizeof c->dir, "%.1000s/.cache/cldiff", home);
    else {
        snprintf(c->note, sizeof c->note,
                 "program cache disabled: neither XDG_CACHE_HOME nor HOME is set "
                 "(pass --cache-dir DIR to enable it)");
        return;
    }
    if (mkdir_p(c->dir) != 0) {
        snprintf(c->note, sizeof c->note, "program cache disabled: cannot create %.300s: %s", c->dir, strerror(errno));
        return;
    }
    c->enabled = true;
}

void cd_cl_cache_hash_source(cd_cl_cache_key *key, const char *source, size_t len) {
    uint8_t d[32];
    cd_sha256(source, len, d);
    cd_sha256_hex(d, key->source_sha256);
}

/* The key as text; newlines inside fields would let one key mimic another, so they are
 * replaced. */
static char *key_text(const cd_cl_cache_key *k) {
    const char *f[4] = {k->device ? k->device : "", k->driver ? k->driver : "", k->source_sha256,
                        k->options ? k->options : ""};
    const char *lab[4] = {"device ", "driver ", "source ", "options "};
    size_t n = 1;
    for (int i = 0; i < 4; i++) n += strlen(lab[i]) + strlen(f[i]) + 1;
    char *s = malloc(n), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < 4; i++) {
        p += sprintf(p, "%s", lab[i]);
        for (const char *q = f[i]; *q; q++) *p++ = (*q == '\n' || *q == '\r') ? ' ' : *q;
        *p++ = '\n';
    }
    *p = 0;
    return s;
}

void cd_cl_cache_path(const cd_cl_cache *c, const cd_cl_cache_key *key, char *buf, size_t n) {
    char *kt = key_text(key);
    uint8_t d[32];
    char hex[65];
    cd_sha256(kt ? kt : "", kt ? strlen(kt) : 0, d);
    cd_sha256_hex(d, hex);
    free(kt);
    snprintf(buf, n, "%.900s/%s.clbin", c->dir, hex);
}

static void reject(cd_cl_cache *c, const char *path, const char *why) {
    c->rejected++;
    snprintf(c->note, sizeof c->note, "program cache entry %.300s rejected (%s); deleted and rebuilt", path, why);
    unlink(path);
}

bool cd_cl_cache_get(cd_cl_cache *c, const cd_cl_cache_key *key, uint8_t **bin, size_t *n) {
    *bin = NULL;
    *n = 0;
    if (!c->enabled) return false;
    char path[1024];
    cd_cl_cache_path(c, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        c->misses++;
        return false;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size <= 0 || (uint64_t)st.st_size > CACHE_MAX_ENTRY) {
        fclose(f);
        c->misses++;
        reject(c, path, "unreadable or implausible size");
        return false;
    }
    size_t sz = (size_t)st.st_size;
    char *buf = malloc(sz + 1);
    if (!buf) {
        fclose(f);
        c->misses++;
        return false;
    }
    size_t got = fread(buf, 1, sz, f);
    fclose(f);
    buf[got] = 0;
    c->misses++; /* undone below on a hit */
    char *kt = key_text(key);
    if (!kt) {
        free(buf);
        return false;
    }
    size_t ml = strlen(CACHE_MAGIC), kl = strlen(kt);
    const char *why = NULL;
    unsigned long long size = 0;
    char sum[65] = "";
    char *payload = NULL;
    if (got != sz)
        why = "short read";
    else if (got < ml + kl || memcmp(buf, CACHE_MAGIC, ml) != 0)
        why = "not a cldiff cache entry";
    else if (memcmp(buf + ml, kt, kl) != 0)
        why = "key in the header differs (hash collision or foreign file)";
    else {
        char *p = buf + ml + kl;
        char expect[128];
        if (sscanf(p, "size %llu\nsha256 %64[0-9a-f]\n", &size, sum) != 2 ||
            snprintf(expect, sizeof expect, "size %llu\nsha256 %s\n\n", size, sum) <= 0 ||
            strncmp(p, expect, strlen(expect)) != 0)
            why = "malformed header";
        else {
            payload = p + strlen(expect);
            {
                size_t have = got - (size_t)(payload - buf);
                if (have != size)
                    why = "size in the header differs from the stored binary (truncated entry)";
                else {
                    uint8_t d[32];
                    char hex[65];
                    cd_sha256(payload, have, d);
                    cd_sha256_hex(d, hex);
                    if (strcmp(hex, sum) != 0) why = "checksum mismatch (corrupt entry)";
                }
            }
        }
    }
    free(kt);
    if (why) {
        reject(c, path, why);
        free(buf);
        return false;
    }
    uint8_t *out = malloc(size ? size : 1);
    if (!out) {
        free(buf);
        return false;
    }
    memcpy(out, payload, size);
    free(buf);
    c->misses--;
    c->hits++;
    *bin = out;
    *n = size;
    return true;
}

void cd_cl_cache_put(cd_cl_cache *c, const cd_cl_cache_key *key, const uint8_t *bin, size_t n) {
    if (!c->enabled || !bin || !n) return;
    char path[1024], tmp[1100];
    cd_cl_cache_path(c, key, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    char *kt = key_text(key);
    if (!kt) return;
    uint8_t d[32];
    char hex[65];
    cd_sha256(bin, n, d);
    cd_sha256_hex(d, hex);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        snprintf(c->note, sizeof c->note, "cannot write program cache entry %.300s: %s", tmp, strerror(errno));
        free(kt);
        return;
    }
    bool ok = fprintf(f, "%s%ssize %zu\nsha256 %s\n\n", CACHE_MAGIC, kt, n, hex) > 0 && fwrite(bin, 1, n, f) == n;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    free(kt);
    if (!ok || rename(tmp, path) != 0) {
        snprintf(c->note, sizeof c->note, "cannot write program cache entry %.300s: %s", path, strerror(errno));
        unlink(tmp);
        return;
    }
    c->stored++;
}

void cd_cl_cache_drop(cd_cl_cache *c, const cd_cl_cache_key *key, const char *why) {
    if (!c->enabled) return;
    char path[1024];
    cd_cl_cache_path(c, key, path, sizeof path);
    reject(c, path, why);
}
