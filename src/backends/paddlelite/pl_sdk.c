/* Paddle-Lite SDKs, the runner built against them, and the doctor's checks (pl_sdk.h). */
#define _GNU_SOURCE
#include "backends/paddlelite/pl_sdk.h"
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "backends/opencl/device.h"
#include "backends/opencl/loader.h"
#include "backends/paddlelite/pl_phone.h"
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/subproc.h"

extern char **environ;

#define PL_LIB "libpaddle_light_api_shared.so"
#define SDK_ARM "sdk-armv8-armlinux"
#define SDK_X86_NEW "sdk-x86_64-ubuntu24" /* needs glibc >= 2.38 */
#define SDK_X86_OLD "sdk-x86_64-debian12"
#define ARM_SYSROOT "/usr/aarch64-linux-gnu"

const char *cd_pl_engine_name(cd_pl_engine_kind k) {
    return k == CD_PL_ENGINE_ARM  ? "paddle-lite-arm"
        : k == CD_PL_ENGINE_PHONE ? "paddle-lite-phone"
                                  : "paddle-lite-opencl";
}

const char *cd_pl_sdk_env_name(cd_pl_engine_kind k) {
    return k == CD_PL_ENGINE_ARM  ? "CLDIFF_PL_ARM_SDK"
        : k == CD_PL_ENGINE_PHONE ? "CLDIFF_PL_PHONE_SDK"
                                  : "CLDIFF_PL_OPENCL_SDK";
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int host_glibc_minor(void) {
    const char *v = gnu_get_libc_version();
    int ma = 0, mi = 0;
    if (!v || sscanf(v, "%d.%d", &ma, &mi) != 2 || ma != 2) return 0;
    return mi;
}

/* ELF machine of a file: "aarch64", "x86_64", "arm", "i386", "riscv64" or "machine N". */
static bool elf_arch(const char *path, char *arch, size_t n, char *why, size_t wn) {
    unsigned char h[20];
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, wn, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    size_t got = fread(h, 1, sizeof h, f);
    fclose(f);
    if (got < sizeof h || memcmp(h, "\177ELF", 4) != 0) {
        snprintf(why, wn, "%s is not an ELF shared library", path);
        return false;
    }
    unsigned m = h[5] == 2 ? (unsigned)h[18] << 8 | h[19] : (unsigned)h[18] | (unsigned)h[19] << 8;
    switch (m) {
    case 183: snprintf(arch, n, "aarch64"); break;
    case 62: snprintf(arch, n, "x86_64"); break;
    case 40: snprintf(arch, n, "arm"); break;
    case 3: snprintf(arch, n, "i386"); break;
    case 243: snprintf(arch, n, "riscv64"); break;
    default: snprintf(arch, n, "machine %u", m); break;
    }
    return true;
}

/* Scans the library's bytes: whether it holds the OpenCL runtime (its dlsym table names
 * clCreateProgramWithSource) and the highest GLIBC_2.N version it asks for. */
static void lib_scan(const char *path, bool *opencl, int *glibc_minor) {
    *opencl = false;
    *glibc_minor = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return;
    }
    size_t len = (size_t)st.st_size;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return;
    const char *b = m, *e = b + len;
    *opencl = memmem(b, len, "clCreateProgramWithSource", 25) != NULL;
    for (const char *p = b; p < e;) {
        const char *q = memmem(p, (size_t)(e - p), "GLIBC_2.", 8);
        if (!q) break;
        int v = 0;
        for (q += 8; q < e && *q >= '0' && *q <= '9' && v < 1000; q++) v = v * 10 + (*q - '0');
        if (v > *glibc_minor && v < 1000) *glibc_minor = v;
        p = q;
    }
    munmap(m, len);
}

static cd_status sdk_check(cd_pl_engine_kind k, const char *path, const char *from, cd_pl_sdk *out, cd_error *err) {
    const char *eng = cd_pl_engine_name(k);
    char dir[PATH_MAX], p[PATH_MAX + 64];
    memset(out, 0, sizeof *out);
    if (!path || !*path) return cd_err(err, CD_E_BACKEND, "%s: empty Paddle-Lite SDK path (from %s)", eng, from);
    if (!realpath(path, dir) || !cd_fs_is_dir(dir))
        return cd_err(err, CD_E_BACKEND,
                      "%s: Paddle-Lite SDK folder %s (from %s) %s; give the folder that holds "
                      "include/paddle_api.h and lib/" PL_LIB,
                      eng, path, from, cd_fs_is_file(path) ? "is a file, not a folder" : "does not exist");
    snprintf(p, sizeof p, "%s/include/paddle_api.h", dir);
    if (!cd_fs_is_file(p)) {
        /* a release archive (inference_lite_lib.<os>.<arch>/) holds the SDK in cxx/ */
        char c[PATH_MAX + 64];
        snprintf(c, sizeof c, "%s/cxx/include/paddle_api.h", dir);
        if (cd_fs_is_file(c)) {
            size_t l = strlen(dir);
            snprintf(dir + l, sizeof dir - l, "/cxx");
            snprintf(p, sizeof p, "%s/include/paddle_api.h", dir);
        }
    }
    char lib[PATH_MAX + 64];
    snprintf(lib, sizeof lib, "%s/lib", dir);
    bool has_inc = cd_fs_is_file(p), has_libdir = cd_fs_is_dir(lib);
    snprintf(lib, sizeof lib, "%s/lib/" PL_LIB, dir);
    if (!has_libdir || !cd_fs_is_file(lib) || !has_inc)
        return cd_err(err, CD_E_BACKEND,
                      "%s: %s (from %s) is not a Paddle-Lite SDK: %s%s%s; the release layout is "
                      "include/paddle_api.h and lib/" PL_LIB " (scripts/setup.sh unpacks the SDKs of "
                      "../shared/paddle-lite into .paddle-lite/; scripts/build_paddle_lite_sdk.sh builds one from a "
                      "Paddle-Lite source tree)",
                      eng, dir, from,
                      !has_libdir               ? "it has no lib/ folder"
                          : !cd_fs_is_file(lib) ? "no lib/" PL_LIB
                                                : "",
                      (!has_libdir || !cd_fs_is_file(lib)) && !has_inc ? " and " : "",
                      !has_inc ? "no include/paddle_api.h" : "");
    char arch[16], why[PATH_MAX + 64];
    if (!elf_arch(lib, arch, sizeof arch, why, sizeof why))
        return cd_err(err, CD_E_BACKEND, "%s: Paddle-Lite SDK %s (from %s): %s", eng, dir, from, why);
    const char *host = cd_fs_host_arch();
    bool ocl = false;
    int gmin = 0;
    lib_scan(lib, &ocl, &gmin);
    if (k != CD_PL_ENGINE_OPENCL && strcmp(arch, "aarch64"))
        return cd_err(err, CD_E_BACKEND,
                      "%s: Paddle-Lite SDK %s (from %s) is built for %s; the %s engine "
                      "runs Paddle-Lite's ARM kernels and needs an armv8 (aarch64) SDK such as " SDK_ARM,
                      eng, dir, from, arch, eng);
    if (k == CD_PL_ENGINE_PHONE && !ocl)
        return cd_err(err, CD_E_BACKEND,
                      "%s: the armv8 Paddle-Lite SDK %s (from %s) has no OpenCL runtime (its library does not "
                      "call clCreateProgramWithSource): the phone route needs the phone's library, built with "
                      "-DLITE_WITH_OPENCL=ON (" SDK_ARM " of ../shared/paddle-lite is)",
                      eng, dir, from);
    if (k == CD_PL_ENGINE_OPENCL && strcmp(arch, host))
        return cd_err(err, CD_E_BACKEND,
                      "%s: Paddle-Lite SDK %s (from %s) is built for %s, this machine is %s: "
                      "Paddle-Lite's OpenCL kernels need the OpenCL driver of the machine they run on, so the "
                      "paddle-lite-opencl engine needs an SDK for %s (%s)",
                      eng, dir, from, arch, host, host,
                      !strcmp(host, "x86_64") ? SDK_X86_OLD " or " SDK_X86_NEW : SDK_ARM);
    if (k == CD_PL_ENGINE_OPENCL && !ocl)
        return cd_err(err, CD_E_BACKEND,
                      "%s: Paddle-Lite SDK %s (from %s) has no OpenCL runtime (its library does not "
                      "call clCreateProgramWithSource): build it with -DLITE_WITH_OPENCL=ON "
                      "(scripts/build_paddle_lite_sdk.sh does)",
                      eng, dir, from);
    int hmin = host_glibc_minor();
    if (!strcmp(arch, host) && gmin && hmin && gmin > hmin)
        return cd_err(err, CD_E_BACKEND,
                      "%s: Paddle-Lite SDK %s (from %s) needs glibc 2.%d, this machine has %s: use "
                      "an SDK built on an older system (" SDK_X86_OLD " needs 2.34) or build one here with "
                      "scripts/build_paddle_lite_sdk.sh",
                      eng, dir, from, gmin, gnu_get_libc_version());
    snprintf(out->dir, sizeof out->dir, "%s", dir);
    snprintf(out->lib, sizeof out->lib, "%s", lib);
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    snprintf(out->from, sizeof out->from, "%s", from);
    out->opencl = ocl;
    out->glibc_minor = gmin;
    return CD_OK;
}

/* The default SDK folder names for an engine on this machine, in preference order. */
static int default_names(cd_pl_engine_kind k, const char *names[2]) {
    if (k != CD_PL_ENGINE_OPENCL || strcmp(cd_fs_host_arch(), "x86_64")) {
        names[0] = SDK_ARM;
        return 1;
    }
    int n = 0;
    if (host_glibc_minor() >= 38) names[n++] = SDK_X86_NEW;
    names[n++] = SDK_X86_OLD;
    return n;
}

static cd_status find_in(cd_pl_engine_kind k, const char *given, const char *const *roots, int nr, const char *looked,
                         cd_pl_sdk *out, cd_error *err) {
    const char *eng = cd_pl_engine_name(k), *envn = cd_pl_sdk_env_name(k);
    char from[256];
    if (given && *given) {
        snprintf(from, sizeof from, "--backend-opt %s:sdk=%s", eng, given);
        return sdk_check(k, given, from, out, err);
    }
    const char *ev = getenv(envn);
    if (ev && *ev) {
        snprintf(from, sizeof from, "%s=%s", envn, ev);
        return sdk_check(k, ev, from, out, err);
    }
    const char *names[2];
    int nn = default_names(k, names);
    cd_error first = {0};
    for (int j = 0; j < nn; j++)
        for (int i = 0; i < nr; i++) {
            char p[PATH_MAX + 64];
            snprintf(p, sizeof p, "%s/%s", roots[i], names[j]);
            if (!cd_fs_is_dir(p)) continue;
            snprintf(from, sizeof from, "default: %s", p);
            cd_error e;
            if (sdk_check(k, p, from, out, &e) == CD_OK) return CD_OK;
            if (!first.code) first = e;
        }
    if (first.code) return cd_err(err, first.code, "%s", first.msg);
    char list[1600] = "";
    if (!looked) {
        size_t l = 0;
        for (int i = 0; i < nr && l < sizeof list; i++)
            l += (size_t)snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", roots[i]);
        looked = nr ? list : "(no folder)";
    }
    return cd_err(err, CD_E_BACKEND,
                  "%s unavailable: no Paddle-Lite SDK given (%s unset, no --backend-opt %s:sdk=DIR) "
                  "and none of the defaults exists: %s%s%s in %s. Run scripts/setup.sh (it unpacks "
                  "../shared/paddle-lite/sdk-*.tar.xz into .paddle-lite/), set %s=DIR (a folder with "
                  "include/paddle_api.h and lib/" PL_LIB "), or build one with "
                  "scripts/build_paddle_lite_sdk.sh %s SRC_TREE OUT_SDK",
                  eng, envn, eng, names[0], nn > 1 ? " or " : "", nn > 1 ? names[1] : "", looked, envn,
                  k != CD_PL_ENGINE_OPENCL || strcmp(cd_fs_host_arch(), "x86_64") ? "armv8" : "x86");
}

cd_status cd_pl_sdk_find_in(cd_pl_engine_kind k, const char *given, const char *const *roots, int n_roots,
                            cd_pl_sdk *out, cd_error *err) {
    return find_in(k, given, roots, n_roots, NULL, out, err);
}

cd_status cd_pl_sdk_find(cd_pl_engine_kind k, const char *given, cd_pl_sdk *out, cd_error *err) {
    /* the defaults: .paddle-lite/ beside the executable and above it, an installed share/, the source tree */
    char(*roots)[PATH_MAX] = malloc(72 * sizeof *roots);
    if (!roots) return cd_err(err, CD_E_NOMEM, "out of memory looking for the Paddle-Lite SDK");
    const char *rp[72];
    int nr = 0;
    char d[PATH_MAX], ed[PATH_MAX], looked[1600] = "";
    cd_fs_exe_dir(ed, sizeof ed);
    if (ed[0]) {
        snprintf(d, sizeof d, "%s", ed);
        do snprintf(roots[nr++], PATH_MAX, "%s%s.paddle-lite", d, !strcmp(d, "/") ? "" : "/");
        while (nr < 64 && cd_fs_up(d));
        snprintf(d, sizeof d, "%s", ed);
        bool has_up = cd_fs_up(d);
        if (has_up) snprintf(roots[nr++], PATH_MAX, "%s/share/cldiff/paddle-lite", !strcmp(d, "/") ? "" : d);
        snprintf(looked, sizeof looked, "%s/.paddle-lite and .paddle-lite in each folder above it%s%s", ed,
                 has_up ? ", " : "", has_up ? roots[nr - 1] : "");
    }
#ifdef CLDIFF_SOURCE_DIR
    snprintf(roots[nr++], PATH_MAX, "%s/.paddle-lite", CLDIFF_SOURCE_DIR);
    size_t l = strlen(looked);
    snprintf(looked + l, sizeof looked - l, "%s%s", l ? ", " : "", roots[nr - 1]);
#endif
    for (int i = 0; i < nr; i++) rp[i] = roots[i];
    cd_status st = find_in(k, given, rp, nr, looked, out, err);
    free(roots);
    return st;
}

bool cd_pl_find_helper(const char *rel, char *out, size_t n) {
    char r[4][PATH_MAX];
    int nr = 0;
    char ed[PATH_MAX];
    cd_fs_exe_dir(ed, sizeof ed);
    if (ed[0]) {
        snprintf(r[nr++], PATH_MAX, "%s", ed);
        char d[PATH_MAX];
        snprintf(d, sizeof d, "%s", ed);
        if (cd_fs_up(d)) {
            snprintf(r[nr++], PATH_MAX, "%s", d);
            snprintf(r[nr++], PATH_MAX, "%s/share/cldiff", !strcmp(d, "/") ? "" : d);
        }
    }
#ifdef CLDIFF_SOURCE_DIR
    snprintf(r[nr++], PATH_MAX, "%s", CLDIFF_SOURCE_DIR);
#endif
    for (int i = 0; i < nr; i++) {
        char p[PATH_MAX + 256];
        snprintf(p, sizeof p, "%s/%s", r[i], rel);
        if (cd_fs_is_file(p)) {
            char rp[PATH_MAX];
            snprintf(out, n, "%s", realpath(p, rp) ? rp : p);
            return true;
        }
    }
    if (n) out[0] = 0;
    return false;
}

/* ---- child processes ---- */

/* Runs argv (argv[0] a path) with stdout+stderr into buf (the last n-1 bytes), stdin from
 * /dev/null, killed after timeout_s. Returns false when it could not start (buf says why);
 * *status is the wait status, *timed_out set when killed. */
static bool run_capture(char *const argv[], double timeout_s, char *buf, size_t n, int *status, bool *timed_out) {
    buf[0] = 0;
    *timed_out = false;
    *status = 0;
    cd_subproc_opts so = {.timeout_s = timeout_s};
    cd_subproc sp;
    int rc = cd_subproc_spawn(&sp, &so, argv, NULL);
    if (rc) {
        snprintf(buf, n, "cannot start %s: %s", argv[0], strerror(rc));
        return false;
    }
    cd_subproc_text t = {.out_max = n - 1}; /* the end of the output */
    cd_subproc_result r;
    cd_subproc_wait(&sp, cd_subproc_collect, &t, &r);
    if (t.out) snprintf(buf, n, "%s", t.out);
    free(t.out);
    *status = r.wstatus;
    *timed_out = r.timed_out;
    return true;
}

/* The Debian package that provides a shared library the loader could not find. */
static const char *package_of(const char *lib, bool aarch64) {
    static const struct {
        const char *lib, *pkg, *pkg_arm;
    } t[] = {
        {"libopenblas.so.0", "libopenblas0-pthread", NULL},
        {"libgfortran.so.5", "libgfortran5", NULL},
        {"libquadmath.so.0", "libquadmath0", NULL},
        {"libstdc++.so.6", "libstdc++6", "libstdc++6-arm64-cross"},
        {"libgcc_s.so.1", "libgcc-s1", "libgcc-s1-arm64-cross"},
        {"libgomp.so.1", "libgomp1", "libgomp1-arm64-cross"},
        {"libc.so.6", "libc6", "libc6-arm64-cross"},
        {"libm.so.6", "libc6", "libc6-arm64-cross"},
        {"ld-linux-aarch64.so.1", "libc6-arm64-cross", "libc6-arm64-cross"},
        {"libOpenCL.so.1", "ocl-icd-libopencl1", NULL},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!strcmp(lib, t[i].lib)) return aarch64 && t[i].pkg_arm ? t[i].pkg_arm : t[i].pkg;
    return NULL;
}

/* The last non-empty lines of s (at most k), joined with " | ". */
static void tail_lines(const char *s, int k, char *out, size_t n) {
    const char *starts[64];
    size_t lens[64];
    int m = 0;
    while (*s) {
        size_t l = strcspn(s, "\n");
        bool blank = true;
        for (size_t i = 0; i < l; i++)
            if (s[i] != ' ' && s[i] != '\r' && s[i] != '\t') blank = false;
        if (!blank) {
            starts[m % 64] = s;
            lens[m % 64] = l;
            m++;
        }
        s += l;
        if (*s) s++;
    }
    size_t o = 0;
    out[0] = 0;
    for (int i = m > k ? m - k : 0; i < m && o < n; i++)
        o += (size_t)snprintf(out + o, n - o, "%s%.*s", o ? " | " : "", (int)lens[i % 64], starts[i % 64]);
}

int cd_pl_runner_argv(const cd_pl_runner *r, const char *argv[4]) {
    int n = 0;
    if (r->launcher[0]) {
        argv[n++] = r->launcher;
        if (r->sysroot[0]) {
            argv[n++] = "-L";
            argv[n++] = r->sysroot;
        }
    }
    argv[n++] = r->exe;
    return n;
}

bool cd_pl_runner_loads(const cd_pl_runner *r, double *ms, char *msg, size_t n) {
    const char *pre[4];
    int np = cd_pl_runner_argv(r, pre);
    char *argv[5];
    for (int i = 0; i < np; i++) argv[i] = (char *)pre[i];
    argv[np] = NULL;
    char out[4096];
    int ws;
    bool to;
    double t0 = now_ms();
    bool started = run_capture(argv, 120, out, sizeof out, &ws, &to);
    if (ms) *ms = now_ms() - t0;
    if (!started) {
        snprintf(msg, n, "%s", out);
        return false;
    }
    if (!to && WIFEXITED(ws) && WEXITSTATUS(ws) == 2 && strstr(out, "usage:")) {
        snprintf(msg, n, "answers with its usage (exit 2)");
        return true;
    }
    char tl[1024];
    tail_lines(out, 3, tl, sizeof tl);
    const char *miss = strstr(out, "error while loading shared libraries: ");
    if (miss) {
        char lib[128];
        miss += strlen("error while loading shared libraries: ");
        size_t l = strcspn(miss, ":\n");
        snprintf(lib, sizeof lib, "%.*s", (int)(l < 127 ? l : 127), miss);
        const char *pkg = package_of(lib, r->launcher[0] != 0);
        snprintf(msg, n, "does not load: %s is missing%s%s%s (%s)", lib, pkg ? " (Debian: apt-get install " : "",
                 pkg ? pkg : "", pkg ? ", or scripts/setup.sh)" : "", tl);
        return false;
    }
    if (to)
        snprintf(msg, n, "did not answer within 120 s (killed)%s%s", tl[0] ? ": " : "", tl);
    else if (WIFSIGNALED(ws))
        snprintf(msg, n, "died with %s%s%s", cd_signal_name(WTERMSIG(ws)) ? cd_signal_name(WTERMSIG(ws)) : "a signal",
                 tl[0] ? ": " : "", tl);
    else
        snprintf(msg, n, "exit %d instead of its usage (exit 2)%s%s", WEXITSTATUS(ws), tl[0] ? ": " : "", tl);
    return false;
}

/* Compiler, launcher and sysroot for an SDK on this machine. */
static cd_status toolchain(const cd_pl_sdk *sdk, cd_pl_runner *r, cd_error *err) {
    const char *host = cd_fs_host_arch();
    bool native = !strcmp(sdk->arch, host);
    if (!native && !(strcmp(sdk->arch, "aarch64") == 0 && strcmp(host, "x86_64") == 0))
        return cd_err(err, CD_E_BACKEND,
                      "Paddle-Lite SDK %s is built for %s; this %s machine can run it neither natively "
                      "nor under qemu-aarch64 (only an aarch64 SDK on x86-64 is emulated)",
                      sdk->dir, sdk->arch, host);
    const char *cxx = getenv("CLDIFF_PL_CXX");
    const char *want = cxx && *cxx ? cxx : native ? "c++" : "aarch64-linux-gnu-g++";
    if (!cd_fs_which(want, r->compiler, sizeof r->compiler))
        return cd_err(err, CD_E_BACKEND,
                      "no C++ compiler for the Paddle-Lite runner: %s not found%s (Debian: apt-get "
                      "install %s, or scripts/setup.sh; CLDIFF_PL_CXX names another)",
                      want, cxx && *cxx ? " (CLDIFF_PL_CXX)" : " on PATH", native ? "g++" : "g++-aarch64-linux-gnu");
    if (native) return CD_OK;
    if (!cd_fs_which("qemu-aarch64", r->launcher, sizeof r->launcher))
        return cd_err(err, CD_E_BACKEND,
                      "the aarch64 Paddle-Lite SDK %s runs on this %s machine under qemu-aarch64, "
                      "which is not on PATH (Debian: apt-get install qemu-user, or scripts/setup.sh)",
                      sdk->dir, host);
    const char *sr = getenv("QEMU_LD_PREFIX");
    snprintf(r->sysroot, sizeof r->sysroot, "%s", sr && *sr ? sr : ARM_SYSROOT);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/lib/ld-linux-aarch64.so.1", r->sysroot);
    if (!cd_fs_is_file(p))
        return cd_err(err, CD_E_BACKEND,
                      "no aarch64 sysroot for qemu-aarch64 -L %s: %s is missing (Debian: apt-get "
                      "install libc6-arm64-cross; QEMU_LD_PREFIX names another sysroot)",
                      r->sysroot, p);
    snprintf(p, sizeof p, "%s/lib/libstdc++.so.6", r->sysroot);
    if (!cd_fs_is_file(p))
        return cd_err(err, CD_E_BACKEND,
                      "the aarch64 sysroot %s has no libstdc++.so.6 for the Paddle-Lite runner "
                      "(Debian: apt-get install libstdc++6-arm64-cross)",
                      r->sysroot);
    return CD_OK;
}

static bool hash_file(cd_sha256_ctx *c, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) cd_sha256_update(c, buf, n);
    fclose(f);
    return true;
}

cd_status cd_pl_runner_get(const cd_pl_sdk *sdk, cd_pl_runner *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    cd_status st = toolchain(sdk, out, err);
    if (st) return st;
    char src[PATH_MAX];
    const char *se = getenv("CLDIFF_PL_RUNNER_SRC");
    if (se && *se) {
        if (!cd_fs_is_file(se))
            return cd_err(err, CD_E_BACKEND,
                          "CLDIFF_PL_RUNNER_SRC=%s: no such file (the runner source, "
                          "probes/paddle-lite/pl_probe_runner.cc)",
                          se);
        snprintf(src, sizeof src, "%s", se);
    } else if (!cd_pl_find_helper("probes/paddle-lite/pl_probe_runner.cc", src, sizeof src))
        return cd_err(err, CD_E_BACKEND,
                      "the Paddle-Lite runner source probes/paddle-lite/pl_probe_runner.cc was not "
                      "found beside cldiff, in ../share/cldiff (cmake --install puts it there) or in the source tree "
                      "(set CLDIFF_PL_RUNNER_SRC=/path/to/pl_probe_runner.cc)");
    struct stat ls;
    if (stat(sdk->lib, &ls) != 0)
        return cd_err(err, CD_E_BACKEND, "Paddle-Lite library %s: %s", sdk->lib, strerror(errno));
    cd_sha256_ctx c;
    cd_sha256_init(&c);
    char meta[PATH_MAX * 3];
    int ml =
        snprintf(meta, sizeof meta, "pl-runner v1\n%s\n%s\n%lld\n%lld.%09ld\n%s\n%s\n", sdk->dir, sdk->lib,
                 (long long)ls.st_size, (long long)ls.st_mtim.tv_sec, ls.st_mtim.tv_nsec, out->compiler, sdk->arch);
    cd_sha256_update(&c, meta, (size_t)(ml < (int)sizeof meta ? ml : (int)sizeof meta - 1));
    if (!hash_file(&c, src)) return cd_err(err, CD_E_BACKEND, "cannot read %s: %s", src, strerror(errno));
    uint8_t dg[32];
    char hex[65];
    cd_sha256_final(&c, dg);
    cd_sha256_hex(dg, hex);
    hex[16] = 0;
    char root[PATH_MAX], dir[PATH_MAX + 64];
    cd_fs_cache_root(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/pl-runner/%s", root, hex);
    snprintf(out->exe, sizeof out->exe, "%s/pl_probe_runner", dir);
    if (cd_fs_is_exec(out->exe)) return CD_OK;
    if (!cd_fs_mkdirs(dir, 0755))
        return cd_err(err, CD_E_IO, "cannot make the runner cache folder %s: %s (CLDIFF_CACHE_DIR names another)", dir,
                      strerror(errno));
    /* built under a name of its own, checked, then renamed: a concurrent cldiff sees all or nothing */
    char tmp[PATH_MAX + 128], log[PATH_MAX + 128], inc[PATH_MAX + 16], libd[PATH_MAX + 16], rpath[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s/pl_probe_runner.tmp.%ld", dir, (long)getpid());
    snprintf(log, sizeof log, "%s/build.log", dir);
    snprintf(inc, sizeof inc, "-I%s/include", sdk->dir);
    snprintf(libd, sizeof libd, "-L%s/lib", sdk->dir);
    snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s/lib", sdk->dir);
    /* --allow-shlib-undefined: a library the SDK links but this machine lacks (libopenblas.so.0)
     * is then named by the loader when the runner is tried, instead of a link error */
    char *argv[] = {out->compiler,
                    "-std=c++14",
                    "-O2",
                    inc,
                    src,
                    "-o",
                    tmp,
                    libd,
                    "-lpaddle_light_api_shared",
                    rpath,
                    "-Wl,--allow-shlib-undefined",
                    "-ldl", /* dlsym: --trace (glibc < 2.34 keeps it in libdl) */
                    NULL};
    char cout[8192];
    int ws;
    bool to;
    double t0 = now_ms();
    bool started = run_capture(argv, 600, cout, sizeof cout, &ws, &to);
    FILE *lf = fopen(log, "w");
    if (lf) {
        for (int i = 0; argv[i]; i++) fprintf(lf, "%s%s", i ? " " : "", argv[i]);
        fprintf(lf, "\n%s", cout);
        fclose(lf);
    }
    if (!started || to || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || !cd_fs_is_exec(tmp)) {
        char tl[1200];
        tail_lines(cout, 4, tl, sizeof tl);
        unlink(tmp);
        return cd_err(err, CD_E_BACKEND, "compiling the Paddle-Lite runner for %s failed (%s, %s): %s; full log: %s",
                      sdk->dir, out->compiler,
                      !started            ? "did not start"
                          : to            ? "killed after 600 s"
                          : WIFEXITED(ws) ? "exit status != 0"
                                          : "killed",
                      tl[0] ? tl : "no output", log);
    }
    double build_ms = now_ms() - t0;
    char msg[1200];
    snprintf(out->exe, sizeof out->exe, "%s", tmp);
    bool ok = cd_pl_runner_loads(out, NULL, msg, sizeof msg);
    snprintf(out->exe, sizeof out->exe, "%s/pl_probe_runner", dir);
    if (!ok) {
        unlink(tmp);
        return cd_err(err, CD_E_BACKEND, "the Paddle-Lite runner built for %s %s", sdk->dir, msg);
    }
    if (rename(tmp, out->exe) != 0) {
        int e = errno;
        unlink(tmp);
        return cd_err(err, CD_E_IO, "cannot move the runner into %s: %s", out->exe, strerror(e));
    }
    (void)build_ms;
    out->built = true;
    return CD_OK;
}

/* ---- cldiff doctor ---- */

/* The libOpenCL.so Paddle-Lite's Linux build dlopens: the first of its fixed list of paths
 * (lite/backends/opencl/cl_wrapper.cc) that exists and is built for the SDK's machine. */
static bool pl_opencl_lib(const char *arch, char *out, size_t n) {
    static const char *const paths[] = {
        "/usr/lib/aarch64-linux-gnu/libOpenCL.so", "/usr/lib/arm-linux-gnueabihf/libOpenCL.so", "/usr/lib/libOpenCL.so",
        "/opt/intel/opencl/linux/compiler/lib/intel64_lin/libOpenCL.so", "/usr/lib/x86_64-linux-gnu/libOpenCL.so"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        char a[16], why[256], rp[PATH_MAX];
        if (!cd_fs_is_file(paths[i]) || !realpath(paths[i], rp)) continue;
        if (elf_arch(rp, a, sizeof a, why, sizeof why) && !strcmp(a, arch)) {
            snprintf(out, n, "%s", paths[i]);
            return true;
        }
    }
    out[0] = 0;
    return false;
}

/* The platform lister's child: one line per fact on fd (E error, N count, P pick, G gpu, L line). */
static void list_platforms_child(int fd, void *arg) {
    const char *a = arg;
    FILE *w = fdopen(fd, "w");
    if (!w) _exit(1);
    cd_clfn cl;
    cd_error e = {0};
    cd_cl_platform *ps = NULL;
    int np = 0;
    if (cd_cl_load(a, &cl, NULL, &e) || cd_cl_platforms(&cl, &ps, &np, &e)) {
        fprintf(w, "E%s\n", e.msg);
        fclose(w);
        return;
    }
    fprintf(w, "N%d\n", np);
    for (int i = 0; i < np; i++) {
        char devs[768] = "", pickname[300] = "";
        int gpu = -1, cpu = -1;
        size_t o = 0;
        for (int j = 0; j < ps[i].n_devices; j++) {
            cd_cl_devinfo info;
            memset(&info, 0, sizeof info);
            cd_cl_describe(&cl, ps[i].id, ps[i].devices[j], &info, &e);
            if (o < sizeof devs)
                o += (size_t)snprintf(devs + o, sizeof devs - o, "%s%s (%s)", j ? ", " : "", info.name, info.type);
            /* Paddle-Lite asks the first platform for GPU devices, and only if none for CPU ones */
            if (!strcmp(info.type, "GPU") && gpu < 0) {
                gpu = j;
                snprintf(pickname, sizeof pickname, "%s (GPU)", info.name);
            } else if (!strcmp(info.type, "CPU") && cpu < 0 && gpu < 0) {
                cpu = j;
                snprintf(pickname, sizeof pickname, "%s (CPU)", info.name);
            }
        }
        if (i == 0 && pickname[0]) fprintf(w, "P%s on platform 0, %s\n", pickname, ps[i].name);
        if (i > 0 && gpu >= 0) fprintf(w, "Gplatform %d (%s): %s\n", i, ps[i].name, pickname);
        fprintf(w, "L          platform %d: %s (%s, %s): %s\n", i, ps[i].name, ps[i].vendor, ps[i].version,
                ps[i].n_devices ? devs : "no device");
    }
    fclose(w);
}

/* Lists the platforms of the OpenCL library lib in a child process (the driver's code stays out
 * of this one); marks the device Paddle-Lite takes: the first platform's first GPU, else its
 * first CPU device. Returns the number of platforms (-1: failed, msg says why). */
static int list_platforms(const char *lib, char *msg, size_t n, char *pick, size_t pn, char *gpu, size_t gn) {
    msg[0] = pick[0] = gpu[0] = 0;
    cd_subproc_opts so = {.timeout_s = 60, .quiet_child = true};
    cd_subproc sp;
    if (cd_subproc_fork(&sp, &so, list_platforms_child, (void *)lib) != 0) {
        snprintf(msg, n, "fork: %s", strerror(errno));
        return -1;
    }
    cd_subproc_text t = {0};
    cd_subproc_result r;
    cd_subproc_wait(&sp, cd_subproc_collect, &t, &r);
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", t.out ? t.out : "");
    size_t have = strlen(buf);
    free(t.out);
    int ws = r.wstatus;
    if (r.timed_out) {
        snprintf(msg, n, "listing the platforms of %s hung (killed after 60 s)", lib);
        return -1;
    }
    if (WIFSIGNALED(ws)) {
        snprintf(msg, n, "the OpenCL driver crashed (%s) while listing the platforms of %s",
                 cd_signal_name(WTERMSIG(ws)) ? cd_signal_name(WTERMSIG(ws)) : "signal", lib);
        return -1;
    }
    int np = -1;
    size_t o = 0;
    for (char *l = buf; *l;) {
        size_t ll = strcspn(l, "\n");
        char c = l[0];
        l[ll] = 0;
        if (c == 'E') {
            snprintf(msg, n, "%s", l + 1);
            return -1;
        }
        if (c == 'N') np = atoi(l + 1);
        if (c == 'P' && !pick[0]) snprintf(pick, pn, "%s", l + 1);
        if (c == 'G' && !gpu[0]) snprintf(gpu, gn, "%s", l + 1);
        if (c == 'L' && o < n) o += (size_t)snprintf(msg + o, n - o, "%s\n", l + 1);
        l += ll + 1;
        if ((size_t)(l - buf) > have) break;
    }
    if (np < 0) snprintf(msg, n, "no answer from the child that lists the platforms of %s", lib);
    return np;
}

/* ldd of a native library: the libraries it links that the loader does not find. */
static bool ldd_missing(const char *lib, char *missing, size_t n, char *found, size_t fn) {
    char ldd[PATH_MAX], out[8192];
    missing[0] = found[0] = 0;
    if (!cd_fs_which("ldd", ldd, sizeof ldd)) {
        snprintf(missing, n, "(ldd not found)");
        return false;
    }
    char *argv[] = {ldd, (char *)lib, NULL};
    int ws;
    bool to;
    if (!run_capture(argv, 60, out, sizeof out, &ws, &to) || to) {
        snprintf(missing, n, "(ldd failed)");
        return false;
    }
    size_t mo = 0, fo = 0;
    for (char *l = out; *l;) {
        size_t ll = strcspn(l, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(ll < 511 ? ll : 511), l);
        char name[128];
        if (sscanf(line, " %127s", name) == 1) {
            if (strstr(line, "not found")) {
                const char *pkg = package_of(name, false);
                if (mo < n)
                    mo += (size_t)snprintf(missing + mo, n - mo, "%s%s%s%s%s", mo ? ", " : "", name, pkg ? " (" : "",
                                           pkg ? pkg : "", pkg ? ")" : "");
            } else if ((!strncmp(name, "libopenblas", 11) || !strncmp(name, "libgfortran", 11)) && fo < fn) {
                const char *arrow = strstr(line, "=> ");
                char path[400] = "";
                if (arrow) sscanf(arrow + 3, "%399s", path);
                fo += (size_t)snprintf(found + fo, fn - fo, "%s%s%s%s", fo ? ", " : "", name, path[0] ? " -> " : "",
                                       path);
            }
        }
        l += ll;
        if (*l) l++;
    }
    return mo == 0;
}

bool cd_pl_engine_check(cd_pl_engine_kind k, const char *given_sdk, char *report, size_t n) {
    if (!n) return false;
    report[0] = 0;
    bool usable = true;
    cd_pl_sdk sdk;
    cd_error err = {0};
    const char *host = cd_fs_host_arch();
    if (cd_pl_sdk_find(k, given_sdk, &sdk, &err)) {
        const char *m = err.msg, *eng = cd_pl_engine_name(k);
        if (!strncmp(m, eng, strlen(eng)) && !strncmp(m + strlen(eng), ": ", 2)) m += strlen(eng) + 2;
        cd_appendf(report, n, "  MISSING SDK: %s\n", m);
        if (k == CD_PL_ENGINE_PHONE) cd_pl_phone_check(NULL, report, n);
        cd_appendf(report, n, "  => %s NOT usable (see above)\n", eng);
        return false;
    }
    cd_appendf(report, n, "  ok      SDK %s (%s), %s library%s\n", sdk.dir, sdk.from, sdk.arch,
               sdk.opencl ? " with Paddle-Lite's OpenCL runtime" : "");
    bool native = !strcmp(sdk.arch, host);
    cd_pl_runner r;
    memset(&r, 0, sizeof r);
    cd_status tst = toolchain(&sdk, &r, &err);
    if (r.compiler[0]) cd_appendf(report, n, "  ok      compiler %s\n", r.compiler);
    if (!native && r.launcher[0] && (!tst || strstr(err.msg, "sysroot")))
        cd_appendf(report, n, "  ok      runs under %s (emulated %s on %s)\n", r.launcher, sdk.arch, host);
    if (!native && !tst) cd_appendf(report, n, "  ok      aarch64 sysroot %s (qemu-aarch64 -L)\n", r.sysroot);
    if (tst) {
        cd_appendf(report, n, "  MISSING %s\n", err.msg);
        usable = false;
    }
    if (k == CD_PL_ENGINE_OPENCL) {
        char ocl[PATH_MAX];
        if (!pl_opencl_lib(sdk.arch, ocl, sizeof ocl)) {
            cd_appendf(report, n,
                       "  MISSING the unversioned libOpenCL.so that Paddle-Lite dlopens (%s): Debian: apt-get "
                       "install ocl-icd-opencl-dev (or scripts/setup.sh)\n",
                       !strcmp(sdk.arch, "x86_64") ? "/usr/lib/x86_64-linux-gnu/libOpenCL.so"
                                                   : "/usr/lib/aarch64-linux-gnu/libOpenCL.so");
            usable = false;
        } else {
            cd_appendf(report, n, "  ok      %s (the unversioned OpenCL library Paddle-Lite dlopens)\n", ocl);
            char msg[4096], pick[512], gpu[512];
            int np = list_platforms(ocl, msg, sizeof msg, pick, sizeof pick, gpu, sizeof gpu);
            if (np <= 0) {
                cd_appendf(report, n, "  MISSING an OpenCL platform through %s: %s\n", ocl,
                           np < 0 ? msg : "the ICD loader lists none (Debian: pocl-opencl-icd, or a GPU vendor's ICD)");
                usable = false;
            } else {
                const char *vend = getenv("OCL_ICD_VENDORS");
                cd_appendf(report, n, "  ok      %d OpenCL platform(s) in the ICD loader's order%s%s%s:\n", np,
                           vend && *vend ? " (OCL_ICD_VENDORS=" : "", vend && *vend ? vend : "",
                           vend && *vend ? ")" : "");
                cd_appendf(report, n, "%s", msg);
                if (pick[0])
                    cd_appendf(report, n,
                               "          Paddle-Lite takes the FIRST platform (its first GPU, else its first CPU "
                               "device): %s\n",
                               pick);
                else {
                    cd_appendf(report, n,
                               "  MISSING a GPU or CPU device on the first platform: Paddle-Lite takes the first "
                               "platform only\n");
                    usable = false;
                }
                if (pick[0] && strstr(pick, "(CPU) on platform 0") && gpu[0])
                    cd_appendf(
                        report, n,
                        "  NOTE    Paddle-Lite will run on the first platform's CPU device although %s has a "
                        "GPU: to run on that GPU, point OCL_ICD_VENDORS at a folder holding only its .icd file\n",
                        gpu);
                cd_appendf(report, n,
                           "          to put another driver first, point OCL_ICD_VENDORS at a folder holding only "
                           "its .icd file (e.g. one line libnvidia-opencl.so.1 in nvidia.icd)\n");
            }
        }
    }
    if (native) {
        char miss[1024], found[1024];
        if (ldd_missing(sdk.lib, miss, sizeof miss, found, sizeof found))
            cd_appendf(report, n, "  ok      the libraries %s links are present%s%s\n", PL_LIB, found[0] ? ": " : "",
                       found);
        else {
            cd_appendf(report, n,
                       "  MISSING libraries %s links: %s (Debian: apt-get install the package named, or "
                       "scripts/setup.sh)\n",
                       PL_LIB, miss);
            usable = false;
        }
    }
    if (!tst) {
        double t0 = now_ms();
        if (cd_pl_runner_get(&sdk, &r, &err)) {
            cd_appendf(report, n, "  FAILED runner: %s\n", err.msg);
            usable = false;
        } else {
            double build_ms = now_ms() - t0, run_ms = 0;
            char msg[1200];
            bool ok = cd_pl_runner_loads(&r, &run_ms, msg, sizeof msg);
            cd_appendf(report, n, "  %s runner %s (%s); run with no arguments it %s (%.0f ms)\n",
                       ok ? "ok     " : "FAILED", r.exe, r.built ? "built now" : "cached", msg, run_ms);
            if (r.built) cd_appendf(report, n, "          (build and first load took %.1f s)\n", build_ms / 1e3);
            if (!ok) usable = false;
        }
    }
    /* the phone route's own pieces: qemu, the arm64 PoCL sysroot, its ICD, the kernel linker */
    if (k == CD_PL_ENGINE_PHONE && !cd_pl_phone_check(NULL, report, n)) usable = false;
    cd_appendf(report, n, "  => %s %s\n", cd_pl_engine_name(k), usable ? "usable" : "NOT usable (see above)");
    return usable;
}
