/* The OpenCL backend's kernel sources (embedded or --kernel-dir) and program builds (through
 * the binary cache); shared with `cldiff doctor`. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backends/opencl/backend_cl.h"
#include "backends/opencl/loader.h"
#include "engine/op_list.h"

static const cd_embedded_kernel *embedded(const char *file) {
    for (int i = 0; cd_embedded_kernels[i].name; i++)
        if (!strcmp(cd_embedded_kernels[i].name, file)) return &cd_embedded_kernels[i];
    return NULL;
}

static char *read_text(const char *path, cd_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            size_t nc = cap ? cap * 2 : 16384;
            if (nc > (64u << 20)) {
                cd_err(err, CD_E_USAGE, "kernel file %s is larger than 64 MiB; not an OpenCL source", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                cd_err(err, CD_E_NOMEM, "out of memory reading %s", path);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        cd_err(err, CD_E_USAGE, "cannot read kernel file %s: %s", path, strerror(errno));
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

char *cd_cl_kernel_source(const char *kernel_dir, const char *file, char *origin, size_t on, cd_error *err) {
    if (kernel_dir && *kernel_dir) {
        char path[1024];
        snprintf(path, sizeof path, "%.900s/%.100s", kernel_dir, file);
        cd_error e2;
        cd_err_clear(&e2);
        char *s = read_text(path, &e2);
        if (s) {
            if (origin) snprintf(origin, on, "%s", path);
            return s;
        }
        if (e2.code) {
            if (err) *err = e2;
            return NULL;
        }
    }
    const cd_embedded_kernel *k = embedded(file);
    if (!k) {
        cd_err(err, CD_E_USAGE, "no OpenCL kernel source %s (not embedded in this build%s%s)", file,
               kernel_dir && *kernel_dir ? " and not in --kernel-dir " : "",
               kernel_dir && *kernel_dir ? kernel_dir : "");
        return NULL;
    }
    if (origin) snprintf(origin, on, "embedded");
    char *s = cd_strdup(k->source);
    if (!s) cd_err(err, CD_E_NOMEM, "out of memory copying kernel %s", file);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void cd_cl_kernel_files_free(char **names, int n) {
    if (!names) return;
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

static bool push_name(char ***names, int *n, int *cap, const char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*names)[i], s)) return true;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        char **nn = realloc(*names, (size_t)nc * sizeof *nn);
        if (!nn) return false;
        *names = nn;
        *cap = nc;
    }
    if (!((*names)[*n] = cd_strdup(s))) return false;
    (*n)++;
    return true;
}

int cd_cl_kernel_files(const char *kernel_dir, char ***names, cd_error *err) {
    *names = NULL;
    int n = 0, cap = 0;
    for (int i = 0; cd_embedded_kernels[i].name; i++)
        if (strcmp(cd_embedded_kernels[i].name, CD_CL_PRELUDE) &&
            !push_name(names, &n, &cap, cd_embedded_kernels[i].name))
            goto oom;
    if (kernel_dir && *kernel_dir) {
        DIR *d = opendir(kernel_dir);
        if (!d) {
            cd_cl_kernel_files_free(*names, n);
            *names = NULL;
            cd_err(err, CD_E_USAGE, "--kernel-dir %s: %s", kernel_dir, strerror(errno));
            return -1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t l = strlen(e->d_name);
            if (l > 3 && !strcmp(e->d_name + l - 3, ".cl") && strcmp(e->d_name, CD_CL_PRELUDE) &&
                !push_name(names, &n, &cap, e->d_name)) {
                closedir(d);
                goto oom;
            }
        }
        closedir(d);
    }
    if (n) qsort(*names, (size_t)n, sizeof **names, cmp_str);
    return n;
oom:
    cd_cl_kernel_files_free(*names, n);
    *names = NULL;
    cd_err(err, CD_E_NOMEM, "out of memory listing kernel files");
    return -1;
}

const char *cd_cl_build_options(cd_cl_variant v, const cd_cl_devinfo *info) {
    bool cr = info && info->correct_div;
    switch (v) {
    case CD_CLV_FP16:
        return cr ? "-cl-std=CL1.2 -DCD_FP16=1 -cl-fp32-correctly-rounded-divide-sqrt" : "-cl-std=CL1.2 -DCD_FP16=1";
    case CD_CLV_FP16_COMPUTE:
        return cr ? "-cl-std=CL1.2 -DCD_FP16_COMPUTE=1 -cl-fp32-correctly-rounded-divide-sqrt"
                  : "-cl-std=CL1.2 -DCD_FP16_COMPUTE=1";
    default:
        return cr ? "-cl-std=CL1.2 -DCD_FP32=1 -cl-fp32-correctly-rounded-divide-sqrt" : "-cl-std=CL1.2 -DCD_FP32=1";
    }
}

char *cd_cl_program_source(const char *kernel_dir, const char *family, cd_cl_variant v, cd_error *err) {
    char file[160];
    size_t fl = strlen(family);
    snprintf(file, sizeof file, "%.150s%s", family, fl > 3 && !strcmp(family + fl - 3, ".cl") ? "" : ".cl");
    char *pre = cd_cl_kernel_source(kernel_dir, CD_CL_PRELUDE, NULL, 0, err);
    if (!pre) return NULL;
    char *src = cd_cl_kernel_source(kernel_dir, file, NULL, 0, err);
    if (!src) {
        free(pre);
        return NULL;
    }
    const char *pragma = v == CD_CLV_FP16_COMPUTE ? "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" : "";
    /* the kinds are this binary's (engine/op_list.h), whichever folder the kernels come from */
    size_t n = strlen(pragma) + strlen(pre) + strlen(cd_cl_op_kinds) + strlen(src) + strlen(file) + 64;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s%s\n%s#line 1 \"%s\"\n%s", pragma, pre, cd_cl_op_kinds, file, src);
    else
        cd_err(err, CD_E_NOMEM, "out of memory assembling kernel %s", file);
    free(pre);
    free(src);
    return out;
}

static char *build_log(const cd_clfn *cl, cl_program p, cl_device_id dev) {
    size_t n = 0;
    if (cl->clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n == 0) return NULL;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    if (cl->clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, s, NULL) != CL_SUCCESS) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    return s;
}

/* First line of the log that says something (drivers often start with blank lines). */
static void first_line(const char *log, char *out, size_t n) {
    out[0] = 0;
    if (!log) return;
    const char *p = log;
    while (*p) {
        while (*p == '\n' || *p == '\r' || *p == ' ' || *p == '\t') p++;
        size_t l = strcspn(p, "\r\n");
        if (l) {
            snprintf(out, n, "%.*s", (int)(l < n - 1 ? l : n - 1), p);
            return;
        }
        if (!*p) break;
    }
}

static cd_status build_from_source(const cd_clfn *cl, cl_context ctx, cl_device_id dev, const char *source,
                                   const char *options, cl_program *out, char **log, cd_error *err) {
    cl_int rc;
    const char *srcs[1] = {source};
    cl_program p = cl->clCreateProgramWithSource(ctx, 1, srcs, NULL, &rc);
    if (!p || rc != CL_SUCCESS)
        return cd_err(err, CD_E_BACKEND, "clCreateProgramWithSource failed: %s", cd_cl_err_name(rc));
    rc = cl->clBuildProgram(p, 1, &dev, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        char *l = build_log(cl, p, dev);
        char fl[300];
        first_line(l, fl, sizeof fl);
        cl->clReleaseProgram(p);
        cd_err(err, CD_E_UNSUPPORTED, "%s (clBuildProgram: %s, options \"%s\")",
               fl[0] ? fl : "build failed without a log", cd_cl_err_name(rc), options);
        if (log)
            *log = l;
        else
            free(l);
        return CD_E_UNSUPPORTED;
    }
    *out = p;
    return CD_OK;
}

/* The cache key of a program: device, driver and platform versions, options, source. */
static void program_key(const cd_cl_devinfo *info, const char *source, const char *options, char *driver, size_t dn,
                        cd_cl_cache_key *key) {
    snprintf(driver, dn, "%s | %s", info ? info->driver : "", info ? info->platform_version : "");
    key->device = info ? info->name : "";
    key->driver = driver;
    key->options = options;
    cd_cl_cache_hash_source(key, source, strlen(source));
}

bool cd_cl_program_cached(const cd_cl_devinfo *info, const char *source, const char *options, const cd_cl_cache *cache,
                          char *path, size_t pn) {
    if (path && pn) path[0] = 0;
    if (!cache || !cache->enabled) return false;
    cd_cl_cache_key key;
    char driver[300], p[1200];
    program_key(info, source, options, driver, sizeof driver, &key);
    cd_cl_cache_path(cache, &key, p, sizeof p);
    if (path && pn) snprintf(path, pn, "%s", p);
    return access(p, R_OK) == 0;
}

/* A driver that keeps compiled programs itself: PoCL with its kernel cache on (the default;
 * POCL_KERNEL_CACHE=0 turns it off). Asking PoCL for a program's binary makes it compile
 * every kernel of the program for a generic work-group size, which the run never uses: on
 * ppocr_v3_det that doubled the CPU time of a first run (docs/benchmarks.md "First runs").
 * For such a driver the cache entry is a marker saying "built once, the driver keeps it",
 * and the program is built from source, which the driver's cache answers. */
static const char k_driver_kept[] = "cldiff: the driver's own cache keeps this program\n";

static bool driver_keeps_programs(const cd_cl_devinfo *info) {
    if (!info || (!strstr(info->platform_version, "PoCL") && !strstr(info->platform_version, "pocl"))) return false;
    /* CLDIFF_CL_BINARIES=1 keeps binaries all the same: a warm run then never calls the
     * compiler (scripts/sanitize.sh: under valgrind even PoCL's source hashing is slow) */
    const char *b = getenv("CLDIFF_CL_BINARIES");
    if (b && *b && strcmp(b, "0")) return false;
    const char *e = getenv("POCL_KERNEL_CACHE");
    return !(e && !strcmp(e, "0"));
}

static bool is_marker(const uint8_t *bin, size_t n) {
    return n == sizeof k_driver_kept - 1 && !memcmp(bin, k_driver_kept, n);
}

cd_status cd_cl_build_program(const cd_clfn *cl, cl_context ctx, cl_device_id dev, const cd_cl_devinfo *info,
                              const char *source, const char *options, cd_cl_cache *cache, cl_program *out, char **log,
                              cd_error *err) {
    *out = NULL;
    if (log) *log = NULL;
    cd_cl_cache_key key;
    char driver[300];
    program_key(info, source, options, driver, sizeof driver, &key);
    uint8_t *bin = NULL;
    size_t n = 0;
    bool kept = driver_keeps_programs(info), marker = false;
    if (cache && cd_cl_cache_get(cache, &key, &bin, &n) && (marker = is_marker(bin, n))) {
        free(bin); /* built before: from source, through the driver's cache */
    } else if (bin) {
        /* A binary that passed the checksum can still be refused (driver changed without a
         * version bump): it is then dropped and the source is built. */
        cl_int rc, bst = CL_SUCCESS;
        const unsigned char *bins[1] = {bin};
        cl_program p = cl->clCreateProgramWithBinary(ctx, 1, &dev, &n, bins, &bst, &rc);
        if (p && rc == CL_SUCCESS && bst == CL_SUCCESS) rc = cl->clBuildProgram(p, 1, &dev, options, NULL, NULL);
        free(bin);
        if (p && rc == CL_SUCCESS && bst == CL_SUCCESS) {
            *out = p;
            return CD_OK;
        }
        if (p) cl->clReleaseProgram(p);
        char why[128];
        snprintf(why, sizeof why, "driver refused the cached binary: %s", cd_cl_err_name(rc != CL_SUCCESS ? rc : bst));
        cd_cl_cache_drop(cache, &key, why);
    }
    cd_status st = build_from_source(cl, ctx, dev, source, options, out, log, err);
    if (st || !cache || !cache->enabled) return st;
    if (kept) {
        if (!marker) cd_cl_cache_put(cache, &key, (const uint8_t *)k_driver_kept, sizeof k_driver_kept - 1);
        return CD_OK;
    }
    size_t bsz = 0;
    if (cl->clGetProgramInfo(*out, CL_PROGRAM_BINARY_SIZES, sizeof bsz, &bsz, NULL) == CL_SUCCESS && bsz > 0) {
        unsigned char *b = malloc(bsz);
        unsigned char *bp[1] = {b};
        if (b && cl->clGetProgramInfo(*out, CL_PROGRAM_BINARIES, sizeof bp, bp, NULL) == CL_SUCCESS)
            cd_cl_cache_put(cache, &key, b, bsz);
        free(b);
    }
    return CD_OK;
}
