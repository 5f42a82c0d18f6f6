/* MNN SDKs, the runner built against them, child processes (mnn_sdk.h). The pattern is the
 * Paddle-Lite engines' (src/backends/paddlelite/pl_sdk.c), kept apart until the shared
 * child-process module lands. */
#define _GNU_SOURCE
#include "backends/mnn/mnn_sdk.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/subproc.h"

extern char **environ;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The engine's SDK architecture: aarch64 for mnn-arm (MNN's ARM kernels), else this machine's. */
static const char *want_arch(const char *eng) { return !strcmp(eng, "mnn-arm") ? "aarch64" : cd_fs_host_arch(); }

/* ELF machine of a library, whether it names clCreateProgramWithSource, and whether it holds
 * MNN's ARMv8.2 backend (MNN_ARM82: its error message "... Arm82 Backend", Arm82Backend.cpp). */
static bool lib_scan(const char *path, char *arch, size_t an, bool *opencl, bool *arm82) {
    *opencl = *arm82 = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 20) {
        close(fd);
        return false;
    }
    size_t len = (size_t)st.st_size;
    const unsigned char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return false;
    bool elf = !memcmp(m, "\177ELF", 4);
    if (elf) {
        unsigned mc = m[5] == 2 ? (unsigned)m[18] << 8 | m[19] : (unsigned)m[18] | (unsigned)m[19] << 8;
        snprintf(arch, an, "%s", mc == 183 ? "aarch64" : mc == 62 ? "x86_64" : "other");
        *opencl = memmem(m, len, "clCreateProgramWithSource", 25) != NULL;
        *arm82 = memmem(m, len, "Arm82 Backend", 13) != NULL;
    }
    munmap((void *)m, len);
    return elf;
}

static cd_status sdk_check(const char *eng, const char *path, const char *from, bool need_ocl, cd_mnn_sdk *out,
                           cd_error *err) {
    char dir[PATH_MAX], p[PATH_MAX + 64], lib[PATH_MAX + 64];
    memset(out, 0, sizeof *out);
    if (!realpath(path, dir) || !cd_fs_is_dir(dir))
        return cd_err(err, CD_E_BACKEND,
                      "%s: MNN SDK folder %s (from %s) does not exist; give the folder that holds "
                      "include/MNN/Interpreter.hpp and lib/libMNN.so",
                      eng, path, from);
    snprintf(p, sizeof p, "%s/include/MNN/Interpreter.hpp", dir);
    snprintf(lib, sizeof lib, "%s/lib/libMNN.so", dir);
    if (!cd_fs_is_file(p) || !cd_fs_is_file(lib))
        return cd_err(err, CD_E_BACKEND,
                      "%s: %s (from %s) is not an MNN SDK: %s is missing; the release layout is "
                      "include/MNN/*.hpp and lib/libMNN.so (scripts/setup_mnn.sh unpacks ../shared/mnn/sdk-*.tar.xz "
                      "into .mnn/; scripts/mnn/build_mnn_sdk.sh builds one from MNN's source)",
                      eng, dir, from, !cd_fs_is_file(p) ? "include/MNN/Interpreter.hpp" : "lib/libMNN.so");
    bool ocl = false, arm82 = false;
    char arch[16] = "";
    if (!lib_scan(lib, arch, sizeof arch, &ocl, &arm82))
        return cd_err(err, CD_E_BACKEND, "%s: %s (from %s) is not an ELF shared library", eng, lib, from);
    bool arm = !strcmp(eng, "mnn-arm");
    if (strcmp(arch, want_arch(eng)))
        return cd_err(
            err, CD_E_BACKEND,
            arm ? "%s: MNN SDK %s (from %s) is built for %s: mnn-arm runs MNN's ARM kernels and needs an "
                  "aarch64 SDK (scripts/mnn/build_mnn_sdk.sh aarch64 SRC .mnn/sdk-mnn-aarch64-debian12, or "
                  "CLDIFF_BUILD_MNN_ARM=1 scripts/setup_mnn.sh)%.0s"
                : "%s: MNN SDK %s (from %s) is built for %s, this machine is %s: the engine runs MNN natively "
                  "(an aarch64 SDK runs under qemu only for mnn-arm)",
            eng, dir, from, arch, cd_fs_host_arch());
    if (need_ocl && !ocl)
        return cd_err(err, CD_E_BACKEND,
                      "%s: MNN SDK %s (from %s) has no OpenCL runtime (its library does not name "
                      "clCreateProgramWithSource): build it with -DMNN_OPENCL=ON",
                      eng, dir, from);
    snprintf(out->dir, sizeof out->dir, "%s", dir);
    snprintf(out->lib, sizeof out->lib, "%s", lib);
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    snprintf(out->from, sizeof out->from, "%s", from);
    out->opencl = ocl;
    out->arm82 = arm82;
    return CD_OK;
}

/* The runner's compiler, and for an aarch64 SDK on x86-64 qemu-aarch64 and its sysroot. */
static cd_status toolchain(const char *eng, cd_mnn_sdk *sdk, cd_error *err) {
    const char *host = cd_fs_host_arch();
    bool native = !strcmp(sdk->arch, host);
    if (!native && !(strcmp(sdk->arch, "aarch64") == 0 && strcmp(host, "x86_64") == 0))
        return cd_err(err, CD_E_BACKEND,
                      "%s: MNN SDK %s is built for %s; this %s machine runs it neither natively "
                      "nor under qemu-aarch64",
                      eng, sdk->dir, sdk->arch, host);
    const char *cx = getenv(native ? "CLDIFF_MNN_CXX" : "CLDIFF_MNN_ARM_CXX");
    const char *want = cx && *cx ? cx : native ? "c++" : "aarch64-linux-gnu-g++";
    if (!cd_fs_which(want, sdk->cxx, sizeof sdk->cxx) &&
        !(native && !(cx && *cx) && cd_fs_which("g++", sdk->cxx, sizeof sdk->cxx)))
        return cd_err(err, CD_E_BACKEND,
                      "%s: no C++ compiler to build the MNN runner for the %s SDK %s: %s not found%s (Debian: apt-get "
                      "install %s, or scripts/setup.sh; %s names another)",
                      eng, sdk->arch, sdk->dir, want, cx && *cx ? "" : " on PATH",
                      native ? "g++" : "g++-aarch64-linux-gnu", native ? "CLDIFF_MNN_CXX" : "CLDIFF_MNN_ARM_CXX");
    if (native) return CD_OK;
    if (!cd_fs_which("qemu-aarch64", sdk->qemu, sizeof sdk->qemu))
        return cd_err(err, CD_E_BACKEND,
                      "%s: the aarch64 MNN SDK %s runs on this %s machine under qemu-aarch64, which is not on PATH "
                      "(Debian: apt-get install qemu-user, or scripts/setup.sh)",
                      eng, sdk->dir, host);
    const char *sr = getenv("QEMU_LD_PREFIX");
    snprintf(sdk->sysroot, sizeof sdk->sysroot, "%s", sr && *sr ? sr : "/usr/aarch64-linux-gnu");
    char p[PATH_MAX];
    static const char *const need[] = {"lib/ld-linux-aarch64.so.1", "lib/libstdc++.so.6"},
                             *const pkg[] = {"libc6-arm64-cross", "libstdc++6-arm64-cross"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", sdk->sysroot, need[i]);
        if (!cd_fs_is_file(p))
            return cd_err(err, CD_E_BACKEND,
                          "%s: no aarch64 sysroot for qemu-aarch64 -L %s: %s is missing (Debian: apt-get install %s; "
                          "QEMU_LD_PREFIX names another sysroot)",
                          eng, sdk->sysroot, p, pkg[i]);
    }
    return CD_OK;
}

int cd_mnn_runner_prefix(const cd_mnn_sdk *sdk, char *argv[5]) {
    if (!sdk->qemu[0]) return 0;
    argv[0] = (char *)sdk->qemu;
    argv[1] = "-cpu";
    argv[2] = "max";
    argv[3] = "-L";
    argv[4] = (char *)sdk->sysroot;
    return 5;
}

/* The first .mnn/sdk-mnn-<arch>-* folder in root that is an SDK. */
static bool find_in_root(const char *eng, const char *root, bool need_ocl, cd_mnn_sdk *out, cd_error *first) {
    DIR *d = opendir(root);
    if (!d) return false;
    char pre[64];
    snprintf(pre, sizeof pre, "sdk-mnn-%s-", want_arch(eng));
    struct dirent *e;
    char best[NAME_MAX + 1] = "";
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, pre, strlen(pre)) && (!best[0] || strcmp(e->d_name, best) < 0))
            snprintf(best, sizeof best, "%s", e->d_name);
    closedir(d);
    if (!best[0]) return false;
    char p[PATH_MAX + NAME_MAX + 2], from[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", root, best);
    snprintf(from, sizeof from, "default: %s", p);
    cd_error e2 = {0};
    if (sdk_check(eng, p, from, need_ocl, out, &e2) == CD_OK) return true;
    if (first && !first->code) *first = e2;
    return false;
}

static cd_status sdk_find(const char *eng, const char *given, bool need_ocl, cd_mnn_sdk *out, cd_error *err) {
    char from[PATH_MAX + 64];
    if (given && *given) {
        snprintf(from, sizeof from, "--backend-opt %s:sdk=%s", eng, given);
        return sdk_check(eng, given, from, need_ocl, out, err);
    }
    bool arm = !strcmp(eng, "mnn-arm");
    const char *evn = arm ? "CLDIFF_MNN_ARM_SDK" : "CLDIFF_MNN_SDK", *ev = getenv(evn);
    if (ev && *ev) {
        snprintf(from, sizeof from, "%s=%s", evn, ev);
        return sdk_check(eng, ev, from, need_ocl, out, err);
    }
    cd_error first = {0};
    char d[PATH_MAX], r[PATH_MAX + 16], looked[2048] = "";
    cd_fs_exe_dir(d, sizeof d);
    for (int i = 0; d[0] && i < 64; i++) {
        snprintf(r, sizeof r, "%s%s.mnn", d, !strcmp(d, "/") ? "" : "/");
        if (find_in_root(eng, r, need_ocl, out, &first)) return CD_OK;
        if (!i) snprintf(looked, sizeof looked, "%s and each folder above it", r);
        if (!cd_fs_up(d)) break;
    }
#ifdef CLDIFF_SOURCE_DIR
    snprintf(r, sizeof r, "%s/.mnn", CLDIFF_SOURCE_DIR);
    if (find_in_root(eng, r, need_ocl, out, &first)) return CD_OK;
    size_t l = strlen(looked);
    snprintf(looked + l, sizeof looked - l, ", %s", r);
#endif
    if (first.code) return cd_err(err, first.code, "%s", first.msg);
    if (arm)
        return cd_err(err, CD_E_BACKEND,
                      "mnn-arm unavailable: no aarch64 MNN SDK given (CLDIFF_MNN_ARM_SDK unset, no --backend-opt "
                      "mnn-arm:sdk=DIR) and no sdk-mnn-aarch64-* folder in %s. Build one (25-60 min): "
                      "CLDIFF_BUILD_MNN_ARM=1 scripts/setup_mnn.sh (scripts/mnn/build_mnn_sdk.sh aarch64 into "
                      ".mnn/sdk-mnn-aarch64-debian12), or put sdk-mnn-aarch64-*.tar.xz in ../shared/mnn and run "
                      "scripts/setup_mnn.sh",
                      looked[0] ? looked : "(no folder)");
    return cd_err(err, CD_E_BACKEND,
                  "%s unavailable: no MNN SDK given (CLDIFF_MNN_SDK unset, no --backend-opt %s:sdk=DIR) and no "
                  "sdk-mnn-%s-* folder in %s. Run scripts/setup_mnn.sh (it unpacks ../shared/mnn/sdk-*.tar.xz into "
                  ".mnn/) or set CLDIFF_MNN_SDK=DIR (include/MNN/, lib/libMNN.so)",
                  eng, eng, cd_fs_host_arch(), looked[0] ? looked : "(no folder)");
}

cd_status cd_mnn_sdk_find(const char *eng, const char *given, bool need_ocl, cd_mnn_sdk *out, cd_error *err) {
    cd_status st = sdk_find(eng, given, need_ocl, out, err);
    return st ? st : toolchain(eng, out, err);
}

cd_status cd_mnn_spawn_wait(char *const argv[], const char *log_path, double timeout_s, int *wstatus, bool *timed_out,
                            volatile int *stop, cd_error *err) {
    /* one child-process module for every child cldiff starts (util/subproc.h) */
    cd_subproc_opts o = {.timeout_s = timeout_s, .stop = stop, .own_group = true, .log_path = log_path};
    cd_subproc p;
    int rc = cd_subproc_spawn(&p, &o, argv, NULL);
    if (rc) return cd_err(err, CD_E_BACKEND, "cannot start %s: %s", argv[0], strerror(rc));
    cd_subproc_result r;
    cd_subproc_wait(&p, NULL, NULL, &r);
    *wstatus = r.wstatus;
    *timed_out = r.timed_out;
    if (r.stopped) return cd_err(err, CD_E_INTERRUPTED, "interrupted while MNN ran (%s)", argv[0]);
    return CD_OK;
}

void cd_mnn_log_tail(const char *path, int k, char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char line[1024], keep[8][1024];
    int m = 0;
    if (k > 8) k = 8;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || !strncmp(line, "The device supports:", 20)) continue;
        snprintf(keep[m % 8], sizeof keep[0], "%s", line);
        m++;
    }
    fclose(f);
    size_t o = 0;
    for (int i = m > k ? m - k : 0; i < m && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? " | " : "", keep[i % 8]);
}

static bool find_source(char *out, size_t n) {
    const char *env = getenv("CLDIFF_MNN_RUNNER_SRC");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return cd_fs_is_file(out);
    }
    char d[PATH_MAX], p[PATH_MAX + 64];
    cd_fs_exe_dir(d, sizeof d);
    for (int i = 0; d[0] && i < 3; i++) {
        snprintf(p, sizeof p, "%s/probes/mnn/mnn_probe_runner.cc", d);
        if (cd_fs_is_file(p)) return snprintf(out, n, "%s", p), true;
        snprintf(p, sizeof p, "%s/share/cldiff/probes/mnn/mnn_probe_runner.cc", d);
        if (cd_fs_is_file(p)) return snprintf(out, n, "%s", p), true;
        if (!cd_fs_up(d)) break;
    }
#ifdef CLDIFF_SOURCE_DIR
    snprintf(p, sizeof p, "%s/probes/mnn/mnn_probe_runner.cc", CLDIFF_SOURCE_DIR);
    if (cd_fs_is_file(p)) return snprintf(out, n, "%s", p), true;
#endif
    return false;
}

/* Runs the runner with no arguments (under qemu for an emulated SDK): usage and exit 2 mean it loads. */
static bool runner_loads(const cd_mnn_sdk *sdk, const char *exe, char *msg, size_t n) {
    char logp[] = "/tmp/cldiff-mnn-runner-XXXXXX";
    int fd = mkstemp(logp);
    if (fd < 0) return snprintf(msg, n, "mkstemp: %s", strerror(errno)), false;
    close(fd);
    char *argv[8];
    int na = cd_mnn_runner_prefix(sdk, argv);
    argv[na++] = (char *)exe;
    argv[na] = NULL;
    int ws = 0;
    bool to = false;
    cd_error e = {0};
    bool ok = false;
    if (cd_mnn_spawn_wait(argv, logp, 120, &ws, &to, NULL, &e))
        snprintf(msg, n, "%s", e.msg);
    else {
        char tail[600];
        cd_mnn_log_tail(logp, 3, tail, sizeof tail);
        ok = !to && WIFEXITED(ws) && WEXITSTATUS(ws) == 2 && strstr(tail, "usage:");
        if (ok)
            snprintf(msg, n, "answers with its usage (exit 2)");
        else
            snprintf(msg, n, "%s (%s)",
                     to                    ? "did not answer within 120 s"
                         : WIFSIGNALED(ws) ? "died with a signal"
                                           : "does not answer with its usage",
                     tail[0] ? tail : "no output");
    }
    unlink(logp);
    return ok;
}

cd_status cd_mnn_runner_get(const cd_mnn_sdk *sdk, char *exe, size_t n, bool *built, cd_error *err) {
    *built = false;
    char src[PATH_MAX], cxx[PATH_MAX];
    snprintf(cxx, sizeof cxx, "%s", sdk->cxx);
    if (!find_source(src, sizeof src))
        return cd_err(err, CD_E_BACKEND,
                      "the MNN runner's source probes/mnn/mnn_probe_runner.cc was found neither next to cldiff nor in "
                      "its source tree ($CLDIFF_MNN_RUNNER_SRC names it)");
    if (!cxx[0])
        return cd_err(err, CD_E_BACKEND,
                      "no C++ compiler to build the MNN runner (c++ / g++ not on PATH): Debian: apt-get install g++");
    /* the cache key: SDK path, the library's size and mtime, the runner source, the compiler */
    cd_sha256_ctx h;
    cd_sha256_init(&h);
    cd_sha256_update(&h, sdk->dir, strlen(sdk->dir));
    struct stat st;
    if (stat(sdk->lib, &st) == 0) {
        long long v[2] = {(long long)st.st_size, (long long)st.st_mtime};
        cd_sha256_update(&h, v, sizeof v);
    }
    char shex[65];
    cd_error e2 = {0};
    if (cd_sha256_file(src, shex, &e2) == CD_OK) cd_sha256_update(&h, shex, 64);
    cd_sha256_update(&h, cxx, strlen(cxx));
    cd_sha256_update(&h, sdk->arch, strlen(sdk->arch));
    uint8_t dg[32];
    char key[65], root[PATH_MAX], dir[PATH_MAX + 200];
    cd_sha256_final(&h, dg);
    cd_sha256_hex(dg, key);
    key[16] = 0;
    cd_fs_cache_root(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/mnn-runner/%s", root, key);
    snprintf(exe, n, "%s/mnn_probe_runner", dir);
    if (cd_fs_is_file(exe) && access(exe, X_OK) == 0) return CD_OK;
    if (!cd_fs_mkdirs(dir, 0777))
        return cd_err(err, CD_E_IO, "cannot create the runner cache folder %s: %s", dir, strerror(errno));
    char tmp[PATH_MAX + 300], logp[PATH_MAX + 300], inc[PATH_MAX + 16], libd[PATH_MAX + 16], rpath[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s/mnn_probe_runner.%d.tmp", dir, (int)getpid());
    snprintf(logp, sizeof logp, "%s/build.log", dir);
    snprintf(inc, sizeof inc, "-I%s/include", sdk->dir);
    snprintf(libd, sizeof libd, "-L%s/lib", sdk->dir);
    snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s/lib", sdk->dir);
    char *argv[] = {cxx, "-std=c++14", "-O2", inc, src, "-o", tmp, libd, "-lMNN", rpath, NULL};
    int ws = 0;
    bool to = false;
    cd_status s = cd_mnn_spawn_wait(argv, logp, 600, &ws, &to, NULL, err);
    if (s) return s;
    if (to || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || !cd_fs_is_file(tmp)) {
        char tail[1200];
        cd_mnn_log_tail(logp, 4, tail, sizeof tail);
        unlink(tmp);
        return cd_err(err, CD_E_BACKEND, "compiling the MNN runner for %s with %s failed: %s; full log: %s", sdk->dir,
                      cxx, tail[0] ? tail : "no output", logp);
    }
    char msg[1200];
    if (!runner_loads(sdk, tmp, msg, sizeof msg)) {
        unlink(tmp);
        return cd_err(err, CD_E_BACKEND, "the MNN runner built for %s %s", sdk->dir, msg);
    }
    if (rename(tmp, exe) != 0) {
        int e = errno;
        unlink(tmp);
        return cd_err(err, CD_E_IO, "cannot move the runner into %s: %s", exe, strerror(e));
    }
    *built = true;
    return CD_OK;
}

bool cd_mnn_engine_check(const char *eng, bool need_ocl, char *report, size_t n) {
    report[0] = 0;
    bool usable = true;
    cd_mnn_sdk sdk;
    cd_error err = {0};
    if (cd_mnn_sdk_find(eng, NULL, need_ocl, &sdk, &err)) {
        cd_appendf(report, n, "  MISSING SDK: %s\n  => %s NOT usable (see above)\n", err.msg, eng);
        return false;
    }
    bool arm = !strcmp(eng, "mnn-arm");
    cd_appendf(report, n, "  ok      SDK %s (%s), %s library%s%s\n", sdk.dir, sdk.from, sdk.arch,
               sdk.opencl ? " with MNN's OpenCL runtime" : "",
               arm ? (sdk.arm82 ? ", with MNN's ARMv8.2 fp16 kernels (MNN_ARM82)"
                                : ", WITHOUT MNN's ARMv8.2 fp16 kernels "
                                  "(precision=low stays fp32)")
                   : "");
    if (sdk.qemu[0])
        cd_appendf(report, n, "  ok      %s -cpu max -L %s (ARMv8.2 half arithmetic), runner compiled with %s\n",
                   sdk.qemu, sdk.sysroot, sdk.cxx);
    char exe[PATH_MAX + 300];
    bool built = false;
    double t0 = now_ms();
    if (cd_mnn_runner_get(&sdk, exe, sizeof exe, &built, &err)) {
        cd_appendf(report, n, "  FAILED runner: %s\n  => %s NOT usable (see above)\n", err.msg, eng);
        return false;
    }
    cd_appendf(report, n, "  ok      runner %s (%s%s)\n", exe, built ? "built now" : "cached", built ? "" : "");
    if (built) cd_appendf(report, n, "          (build and first load took %.1f s)\n", (now_ms() - t0) / 1e3);
    if (need_ocl || arm) {
        /* a real session: testdata/mnn/conv.mnn (beside cldiff or in its source tree) on MNN's OpenCL;
         * for mnn-arm on its CPU at precision low (the ARMv8.2 fp16 kernels where the CPU has them) */
        char model[PATH_MAX + 64] = "", d[PATH_MAX];
        cd_fs_exe_dir(d, sizeof d);
        for (int i = 0; d[0] && i < 3 && !model[0]; i++) {
            snprintf(model, sizeof model, "%s/testdata/mnn/conv.mnn", d);
            if (!cd_fs_is_file(model)) model[0] = 0;
            if (!cd_fs_up(d)) break;
        }
#ifdef CLDIFF_SOURCE_DIR
        if (!model[0]) snprintf(model, sizeof model, "%s/testdata/mnn/conv.mnn", CLDIFF_SOURCE_DIR);
#endif
        char dir[] = "/tmp/cldiff-mnn-doctor-XXXXXX";
        if (cd_fs_is_file(model) && mkdtemp(dir)) {
            char in[PATH_MAX], out[PATH_MAX], logp[PATH_MAX], runp[PATH_MAX + 16], line[512];
            snprintf(in, sizeof in, "%s/inputs.txt", dir);
            FILE *f = fopen(in, "w");
            if (f) fclose(f); /* no inputs given: MNN's own zero-filled input is enough to place the session */
            snprintf(out, sizeof out, "%s/out", dir);
            snprintf(logp, sizeof logp, "%s/log", dir);
            char *argv[16];
            int na = cd_mnn_runner_prefix(&sdk, argv);
            char *rest[] = {
                exe, model, dir, out, "--forward", arm ? "cpu" : "opencl", "--precision", arm ? "low" : "high", NULL};
            for (int i = 0; rest[i]; i++) argv[na++] = rest[i];
            argv[na] = NULL;
            int ws = 0;
            bool to = false;
            cd_error e2 = {0};
            double t1 = now_ms();
            cd_status st = cd_mnn_spawn_wait(argv, logp, 120, &ws, &to, NULL, &e2);
            char sess[64] = "?", comp[64] = "?", tail[600];
            snprintf(runp, sizeof runp, "%s/run.txt", out);
            f = fopen(runp, "r");
            while (f && fgets(line, sizeof line, f)) {
                if (!strncmp(line, "session_backend ", 16)) {
                    snprintf(sess, sizeof sess, "%s", line + 16);
                    sess[strcspn(sess, "\r\n")] = 0;
                }
                if (!strncmp(line, "cpu_kernels ", 12)) {
                    snprintf(comp, sizeof comp, "%s", line + 12);
                    comp[strcspn(comp, "\r\n")] = 0;
                }
            }
            if (f) fclose(f);
            cd_mnn_log_tail(logp, 2, tail, sizeof tail);
            if (!st && !to && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && !arm)
                cd_appendf(report, n, "  ok      MNN's OpenCL session on %s runs on backend %s (%.1f s)\n", model, sess,
                           (now_ms() - t1) / 1e3);
            else if (!st && !to && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
                cd_appendf(report, n,
                           "  ok      MNN's CPU session at precision low on %s runs on backend %s with the %s kernels "
                           "(%.1f s)\n",
                           model, sess, comp, (now_ms() - t1) / 1e3);
            else {
                cd_appendf(report, n, "  FAILED  MNN's %s session on %s: %s\n", arm ? "CPU" : "OpenCL", model,
                           st            ? e2.msg
                               : to      ? "timed out"
                               : tail[0] ? tail
                                         : "the runner failed");
                usable = false;
            }
            /* the folder holds the runner's files only */
            char cmdp[PATH_MAX + 32];
            const char *files[] = {"out/ops.txt", "out/run.txt", "inputs.txt", "log"};
            for (int i = 0; i < 4; i++) {
                snprintf(cmdp, sizeof cmdp, "%s/%s", dir, files[i]);
                unlink(cmdp);
            }
            for (int i = 0; i < 64; i++) {
                snprintf(cmdp, sizeof cmdp, "%s/out/t_%d_0.npy", dir, i);
                unlink(cmdp);
            }
            rmdir(out);
            rmdir(dir);
        }
        if (!arm)
            cd_appendf(report, n,
                       "          MNN takes the first OpenCL platform's devices; a session it moves to its CPU is "
                       "refused (exit 4)\n");
    }
    cd_appendf(report, n, "  => %s %s\n", eng, usable ? "usable" : "NOT usable (see above)");
    return usable;
}
