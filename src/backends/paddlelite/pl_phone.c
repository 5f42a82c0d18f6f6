/* The phone route's pieces: qemu, the arm64 PoCL sysroot, its environment, progress (pl_phone.h). */
#define _GNU_SOURCE
#include "backends/paddlelite/pl_phone.h"
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include <limits.h>
#include "util/fsutil.h"

#define SETUP_HINT                                                                                                     \
    "run scripts/setup_phone.sh [DIR] (it downloads and extracts Debian's arm64 PoCL into DIR, default "               \
    ".phone/sysroot)"

/* Where the sysroot is: first candidate that exists (the given one and the environment's are
 * taken as they are, to be checked). */
static bool locate(const char *given, cd_pl_phone *o) {
    const char *ev = getenv("CLDIFF_PHONE_SYSROOT");
    char p[PATH_MAX + 32];
    if (given && *given) {
        snprintf(o->sysroot, sizeof o->sysroot, "%s", given);
        snprintf(o->from, sizeof o->from, "--backend-opt paddle-lite-phone:sysroot=%s", given);
        return true;
    }
    if (ev && *ev) {
        snprintf(o->sysroot, sizeof o->sysroot, "%s", ev);
        snprintf(o->from, sizeof o->from, "CLDIFF_PHONE_SYSROOT=%s", ev);
        return true;
    }
    /* .phone/sysroot in the executable's folder and every folder above it (a build folder inside
     * the source tree finds the one scripts/setup_phone.sh made there) */
    char d[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", d, sizeof d - 1);
    d[l > 0 ? l : 0] = 0;
    for (char *s = strrchr(d, '/'); s; s = strrchr(d, '/')) {
        *s = 0;
        snprintf(p, sizeof p, "%s/.phone/sysroot", d);
        if (cd_fs_is_dir(p)) {
            char rp[PATH_MAX];
            snprintf(o->sysroot, sizeof o->sysroot, "%s", realpath(p, rp) ? rp : p);
            snprintf(o->from, sizeof o->from, "default: %s", o->sysroot);
            return true;
        }
    }
    char c[PATH_MAX];
    cd_fs_cache_root(c, sizeof c);
    snprintf(p, sizeof p, "%s/phone/sysroot", c);
    snprintf(o->sysroot, sizeof o->sysroot, "%s", p);
    snprintf(o->from, sizeof o->from, "default: %s", p);
    return cd_fs_is_dir(p);
}

/* One check of a piece: fills why (what is missing) and returns false, or true. k: which piece. */
typedef enum { P_QEMU, P_SYSROOT, P_LIBS, P_ICD, P_KLIB, P_LINKER, P_N } piece;
static const char *const PIECE[P_N] = {"qemu-aarch64", "arm64 sysroot",       "arm64 runtime libraries",
                                       "PoCL ICD",     "PoCL kernel library", "kernel linker"};

static bool check_piece(piece k, cd_pl_phone *o, bool found, char *ok, size_t okn, char *why, size_t wn) {
    char p[PATH_MAX * 2];
    ok[0] = why[0] = 0;
    const char *ml = "usr/lib/aarch64-linux-gnu";
    switch (k) {
    case P_QEMU:
        if (!cd_fs_which("qemu-aarch64", o->qemu, sizeof o->qemu)) {
            snprintf(why, wn, "qemu-aarch64 is not on PATH (Debian: apt-get install qemu-user, or scripts/setup.sh)");
            return false;
        }
        snprintf(ok, okn, "%s", o->qemu);
        return true;
    case P_SYSROOT:
        if (!found || !cd_fs_is_dir(o->sysroot)) {
            snprintf(why, wn, "no arm64 PoCL sysroot at %s (%s): %s", o->sysroot, o->from, SETUP_HINT);
            return false;
        }
        snprintf(p, sizeof p, "%s/lib/ld-linux-aarch64.so.1", o->sysroot);
        if (!cd_fs_is_file(p)) {
            snprintf(why, wn, "%s has no lib/ld-linux-aarch64.so.1 (not a merged-/usr arm64 sysroot): %s", o->sysroot,
                     SETUP_HINT);
            return false;
        }
        snprintf(ok, okn, "%s (%s)", o->sysroot, o->from);
        return true;
    case P_LIBS: {
        static const char *const libs[] = {"libc.so.6",    "libstdc++.so.6",  "libgomp.so.1", "libOpenCL.so.1",
                                           "libOpenCL.so", "libLLVM-15.so.1", "libz.so.1"};
        for (size_t i = 0; i < sizeof libs / sizeof *libs; i++) {
            snprintf(p, sizeof p, "%s/%s/%s", o->sysroot, ml, libs[i]);
            if (!cd_fs_is_file(p)) {
                snprintf(why, wn, "%s is missing%s: %s", p,
                         !strcmp(libs[i], "libOpenCL.so") ? " (Paddle-Lite dlopens the unversioned name)" : "",
                         SETUP_HINT);
                return false;
            }
        }
        snprintf(ok, okn, "libc, libstdc++, libgomp, libOpenCL.so (ICD loader), LLVM 15 in %s/%s", o->sysroot, ml);
        return true;
    }
    case P_ICD: {
        snprintf(o->vendors, sizeof o->vendors, "%s/etc/OpenCL/vendors", o->sysroot);
        snprintf(p, sizeof p, "%s/pocl.icd", o->vendors);
        FILE *f = fopen(p, "r");
        char line[PATH_MAX] = "";
        if (f) {
            if (!fgets(line, sizeof line, f)) line[0] = 0;
            fclose(f);
        }
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) {
            snprintf(why, wn, "%s is missing or empty: %s", p, SETUP_HINT);
            return false;
        }
        /* qemu 7.2 applies -L to openat but not to faccessat, and PoCL checks its kernel library
         * beside libpocl with faccessat: the .icd file must name libpocl by its host path */
        if (line[0] != '/' || !cd_fs_is_file(line)) {
            snprintf(why, wn,
                     "%s names '%s', which is not a host path of the arm64 libpocl (PoCL would not find its "
                     "kernel library under qemu): %s",
                     p, line, SETUP_HINT);
            return false;
        }
        snprintf(o->pocl, sizeof o->pocl, "%s", line);
        snprintf(ok, okn, "%s -> %s", p, line);
        return true;
    }
    case P_KLIB: {
        snprintf(p, sizeof p, "%s/usr/share/pocl", o->sysroot);
        DIR *d = opendir(p);
        struct dirent *e;
        char hit[256] = "";
        while (d && (e = readdir(d)))
            if (!strncmp(e->d_name, "kernel-aarch64", 14) && strstr(e->d_name, ".bc"))
                snprintf(hit, sizeof hit, "%s", e->d_name);
        if (d) closedir(d);
        if (!hit[0]) {
            snprintf(why, wn, "%s has no kernel-aarch64-*.bc (libpocl2-common): %s", p, SETUP_HINT);
            return false;
        }
        snprintf(ok, okn, "%s/%s", p, hit);
        return true;
    }
    case P_LINKER: {
        snprintf(o->tools, sizeof o->tools, "%s", o->sysroot);
        char *s = strrchr(o->tools, '/');
        if (s) *s = 0;
        size_t l = strlen(o->tools);
        snprintf(o->tools + l, sizeof o->tools - l, "/tools");
        snprintf(p, sizeof p, "%s/ld", o->tools);
        if (!cd_fs_is_file(p) || access(p, X_OK)) {
            snprintf(why, wn, "the linker wrapper %s (PoCL links every kernel through it) is missing: %s", p,
                     SETUP_HINT);
            return false;
        }
        if (!cd_fs_is_file("/usr/bin/aarch64-linux-gnu-ld")) {
            snprintf(why, wn,
                     "/usr/bin/aarch64-linux-gnu-ld is missing (the wrapper %s calls it; Debian: apt-get install "
                     "binutils-aarch64-linux-gnu, or scripts/setup.sh)",
                     p);
            return false;
        }
        snprintf(ok, okn, "%s -> /usr/bin/aarch64-linux-gnu-ld", p);
        return true;
    }
    default: return false;
    }
}

static void kcache_dir(cd_pl_phone *o) {
    char c[PATH_MAX];
    cd_fs_cache_root(c, sizeof c);
    snprintf(o->kcache, sizeof o->kcache, "%.*s/phone/pocl-kcache", PATH_MAX - 32, c);
}

cd_status cd_pl_phone_find(const char *given, cd_pl_phone *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    bool found = locate(given, out);
    for (int k = 0; k < P_N; k++) {
        char ok[PATH_MAX * 2], why[PATH_MAX * 3];
        if (!check_piece((piece)k, out, found, ok, sizeof ok, why, sizeof why))
            return cd_err(err, CD_E_BACKEND, "paddle-lite-phone: %s: %s", PIECE[k], why);
    }
    kcache_dir(out);
    return CD_OK;
}

bool cd_pl_phone_check(const char *given, char *report, size_t n) {
    cd_pl_phone o;
    memset(&o, 0, sizeof o);
    bool found = locate(given, &o), all = true, sys_ok = true;
    for (int k = 0; k < P_N; k++) {
        char ok[PATH_MAX * 2], why[PATH_MAX * 3];
        if (k > P_SYSROOT && !sys_ok) continue; /* one line for a missing sysroot */
        if (check_piece((piece)k, &o, found, ok, sizeof ok, why, sizeof why))
            cd_appendf(report, n, "  ok      %s %s\n", PIECE[k], ok);
        else {
            cd_appendf(report, n, "  MISSING %s: %s\n", PIECE[k], why);
            all = false;
            if (k == P_SYSROOT) sys_ok = false;
        }
    }
    kcache_dir(&o);
    int nk = cd_pl_phone_kcache_count(o.kcache);
    cd_appendf(report, n, "  ok      PoCL kernel cache %s (%d compiled kernels%s)\n", o.kcache, nk,
               nk ? "" : ": the first run of a model compiles its kernels under emulation, minutes");
    return all;
}

char **cd_pl_phone_env(const cd_pl_phone *ph, char bufs[3][PATH_MAX * 2]) {
    int n = 0;
    while (environ[n]) n++;
    char **env = calloc((size_t)n + 5, sizeof *env);
    if (!env) return NULL;
    int k = 0;
    const char *path = NULL;
    for (int i = 0; i < n; i++) {
        if (!strncmp(environ[i], "PATH=", 5)) {
            path = environ[i] + 5;
            continue;
        }
        if (!strncmp(environ[i], "OCL_ICD_VENDORS=", 16) || !strncmp(environ[i], "POCL_CACHE_DIR=", 15) ||
            !strncmp(environ[i], "OCL_ICD_FILENAMES=", 18))
            continue;
        env[k++] = environ[i];
    }
    snprintf(bufs[0], PATH_MAX * 2, "PATH=%s:%s", ph->tools, path && *path ? path : "/usr/bin:/bin");
    snprintf(bufs[1], PATH_MAX * 2, "OCL_ICD_VENDORS=%s", ph->vendors);
    snprintf(bufs[2], PATH_MAX * 2, "POCL_CACHE_DIR=%s", ph->kcache);
    for (int i = 0; i < 3; i++) env[k++] = bufs[i];
    /* the arm64 PoCL compiles each kernel once, not once per work-group size, as on the host
     * (backend_cl.c): the shared opencl,arm model's first run 111 -> 50 s, 49 -> 10 kernels
     * compiled under qemu, its 163 tensors bit-identical; a value the user set is kept */
    if (!getenv("POCL_WORK_GROUP_SPECIALIZATION")) env[k++] = (char *)"POCL_WORK_GROUP_SPECIALIZATION=0";
    env[k] = NULL;
    return env;
}

/* Files named `name` (or ending in it, when it starts with '.') at depth `depth` below dir
 * (PoCL's kcache: XX/PROGRAM/program.bc, XX/PROGRAM/kernel/variant/kernel.so). */
static int count_files(const char *dir, int depth, const char *name) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    size_t nl = strlen(name);
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        size_t l = strlen(e->d_name);
        if (depth == 0) {
            if (name[0] == '.' ? l > nl && !strcmp(e->d_name + l - nl, name) : !strcmp(e->d_name, name)) n++;
            continue;
        }
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
        if (cd_fs_is_dir(p)) n += count_files(p, depth - 1, name);
    }
    closedir(d);
    return n;
}

int cd_pl_phone_kcache_count(const char *kcache) { return count_files(kcache, 4, ".so"); }

/* OpenCL programs PoCL built (clBuildProgram) into its cache. */
static int kcache_programs(const char *kcache) { return count_files(kcache, 2, "program.bc"); }

struct cd_pl_progress {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, printed, tty, quiet;
    int start_count, start_programs;
    char name[64], kcache[PATH_MAX], where[64];
};

void cd_pl_host_kcache(char *out, size_t n) {
    const char *d = getenv("POCL_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (d && *d)
        snprintf(out, n, "%s", d);
    else if (x && *x)
        snprintf(out, n, "%s/pocl/kcache", x);
    else if (h && *h)
        snprintf(out, n, "%s/.cache/pocl/kcache", h);
    else if (n)
        out[0] = 0;
}

static double mono_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *progress_main(void *arg) {
    cd_pl_progress *p = arg;
    double t0 = mono_s(), last = 0;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&p->cv, &p->mu, &until);
        if (p->stop) break;
        double el = mono_s() - t0;
        if (el < 3 || el - last < (p->tty ? 2 : 20)) continue;
        last = el;
        int made = cd_pl_phone_kcache_count(p->kcache) - p->start_count;
        int progs = kcache_programs(p->kcache) - p->start_programs;
        fprintf(stderr,
                "%scldiff: %s: Paddle-Lite running %s, %.0f s; PoCL built %d OpenCL program%s and "
                "compiled %d kernel%s so far%s%s",
                p->tty ? "\r" : "", p->name, p->where, el, progs, progs == 1 ? "" : "s", made, made == 1 ? "" : "s",
                made || progs ? " (a model's first run compiles its kernels: minutes; later runs reuse them)" : "",
                p->tty ? "\033[K" : "\n");
        fflush(stderr);
        p->printed = true;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

cd_pl_progress *cd_pl_progress_start(const char *name, const char *kcache, const char *where, bool quiet) {
    cd_pl_progress *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->where, sizeof p->where, "%s", where);
    snprintf(p->kcache, sizeof p->kcache, "%s", kcache);
    p->tty = isatty(2);
    p->start_count = cd_pl_phone_kcache_count(kcache);
    p->start_programs = kcache_programs(kcache);
    p->quiet = quiet;
    if (quiet) return p; /* counts only, no thread */
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->th, NULL, progress_main, p) != 0) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return NULL;
    }
    return p;
}

int cd_pl_progress_stop(cd_pl_progress *p, int *programs) {
    if (programs) *programs = 0;
    if (!p) return 0;
    if (!p->quiet) {
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->th, NULL);
        if (p->printed && p->tty) fputc('\n', stderr);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    int made = cd_pl_phone_kcache_count(p->kcache) - p->start_count;
    if (programs) *programs = kcache_programs(p->kcache) - p->start_programs;
    free(p);
    return made;
}
