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

/* ELF machine of a library, and whether it names clCreateProgramWithSource. */
static bool lib_scan(const char *path, char *arch, size_t an, bool *opencl) {
    *opencl = false;
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
    bool ocl = false;
    char arch[16] = "";
    if (!lib_scan(lib, arch, sizeof arch, &ocl))
        return cd_err(err, CD_E_BACKEND, "%s: %s (from %s) is not an ELF shared library", eng, lib, from);
    if (strcmp(arch, cd_fs_host_arch()))
        return cd_err(err, CD_E_BACKEND,
                      "%s: MNN SDK %s (from %s) is built for %s, this machine is %s: the engine runs MNN natively "
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
    return CD_OK;
}

/* The first .mnn/sdk-mnn-<arch>-* folder in root that is an SDK. */
static bool find_in_root(const char *eng, const char *root, bool need_ocl, cd_mnn_sdk *out, cd_error *first) {
    DIR *d = opendir(root);
    if (!d) return false;
    char pre[64];
    snprintf(pre, sizeof pre, "sdk-mnn-%s-", cd_fs_host_arch());
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

cd_status cd_mnn_sdk_find(const char *eng, const char *given, bool need_ocl, cd_mnn_sdk *out, cd_error *err) {
    char from[PATH_MAX + 64];
    if (given && *given) {
        snprintf(from, sizeof from, "--backend-opt %s:sdk=%s", eng, given);
        return sdk_check(eng, given, from, need_ocl, out, err);
    }
    const char *ev = getenv("CLDIFF_MNN_SDK");
    if (ev && *ev) {
        snprintf(from, sizeof from, "CLDIFF_MNN_SDK=%s", ev);
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
    return cd_err(err, CD_E_BACKEND,
                  "%s unavailable: no MNN SDK given (CLDIFF_MNN_SDK unset, no --backend-opt %s:sdk=DIR) and no "
                  "sdk-mnn-%s-* folder in %s. Run scripts/setup_mnn.sh (it unpacks ../shared/mnn/sdk-*.tar.xz into "
                  ".mnn/) or set CLDIFF_MNN_SDK=DIR (include/MNN/, lib/libMNN.so)",
                  eng, eng, cd_fs_host_arch(), looked[0] ? looked : "(no folder)");
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

/* Runs the runner with no arguments: usage and exit 2 mean it loads. */
static bool runner_loads(const char *exe, char *msg, size_t n) {
    char logp[] = "/tmp/cldiff-mnn-runner-XXXXXX";
    int fd = mkstemp(logp);
    if (fd < 0) return snprintf(msg, n, "mkstemp: %s", strerror(errno)), false;
    close(fd);
    char *argv[] = {(char *)exe, NULL};
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
    if (!find_source(src, sizeof src))
        return cd_err(err, CD_E_BACKEND,
                      "the MNN runner's source probes/mnn/mnn_probe_runner.cc was found neither next to cldiff nor in "
                      "its source tree ($CLDIFF_MNN_RUNNER_SRC names it)");
    const char *cx = getenv("CLDIFF_MNN_CXX");
    if (!cd_fs_which(cx && *cx ? cx : "c++", cxx, sizeof cxx) && !cd_fs_which("g++", cxx, sizeof cxx))
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
    if (!runner_loads(tmp, msg, sizeof msg)) {
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
    cd_appendf(report, n, "  ok      SDK %s (%s), %s library%s\n", sdk.dir, sdk.from, sdk.arch,
               sdk.opencl ? " with MNN's OpenCL runtime" : "");
    char exe[PATH_MAX + 300];
    bool built = false;
    double t0 = now_ms();
    if (cd_mnn_runner_get(&sdk, exe, sizeof exe, &built, &err)) {
        cd_appendf(report, n, "  FAILED runner: %s\n  => %s NOT usable (see above)\n", err.msg, eng);
        return false;
    }
    cd_appendf(report, n, "  ok      runner %s (%s%s)\n", exe, built ? "built now" : "cached", built ? "" : "");
    if (built) cd_appendf(report, n, "          (build and first load took %.1f s)\n", (now_ms() - t0) / 1e3);
    if (need_ocl) {
        /* a real session: testdata/mnn/conv.mnn (beside cldiff or in its source tree) on MNN's OpenCL */
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
            char *argv[] = {exe, model, dir, out, "--forward", "opencl", NULL};
            int ws = 0;
            bool to = false;
            cd_error e2 = {0};
            double t1 = now_ms();
            cd_status st = cd_mnn_spawn_wait(argv, logp, 120, &ws, &to, NULL, &e2);
            char sess[64] = "?", tail[600];
            snprintf(runp, sizeof runp, "%s/run.txt", out);
            f = fopen(runp, "r");
            while (f && fgets(line, sizeof line, f))
                if (!strncmp(line, "session_backend ", 16)) {
                    snprintf(sess, sizeof sess, "%s", line + 16);
                    sess[strcspn(sess, "\r\n")] = 0;
                }
            if (f) fclose(f);
            cd_mnn_log_tail(logp, 2, tail, sizeof tail);
            if (!st && !to && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
                cd_appendf(report, n, "  ok      MNN's OpenCL session on %s runs on backend %s (%.1f s)\n", model, sess,
                           (now_ms() - t1) / 1e3);
            else {
                cd_appendf(report, n, "  FAILED  MNN's OpenCL session on %s: %s\n", model,
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
        cd_appendf(report, n,
                   "          MNN takes the first OpenCL platform's devices; a session it moves to its CPU is refused "
                   "(exit 4)\n");
    }
    cd_appendf(report, n, "  => %s %s\n", eng, usable ? "usable" : "NOT usable (see above)");
    return usable;
}
