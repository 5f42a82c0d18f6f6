/* Reading an untrusted dump: a complete read in a forked child first (see dump.h). */
#include <errno.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "store/dump.h"

/* Sanitizer builds: the fuzzing engine registers a "death callback" that saves the current
 * input as a crash; a crash of the validation child is an expected outcome, not a finding,
 * so the child unregisters it. Absent (NULL) in normal builds. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

cd_status cd_dump_walk(const char *path, cd_error *err) {
    cd_dump_reader *r = NULL;
    cd_status st = cd_dump_open(path, &r, err);
    if (st) return st;
    /* checksums first: a damaged dataset is named, whatever reads it later */
    if ((st = cd_dump_verify(r, err))) {
        cd_dump_reader_close(r);
        return st;
    }
    cd_error e;
    cd_dump_read_all_attrs(r, "/", &e);
    char gpath[600];
    for (int k = 0; k < cd_dump_n_runs(r); k++) {
        const char *run = cd_dump_run_name(r, k);
        snprintf(gpath, sizeof gpath, "/runs/%s", run);
        cd_dump_read_all_attrs(r, gpath, &e);
        cd_dump_tensor_info *t = NULL;
        int n = 0;
        if (cd_dump_list_tensors(r, run, &t, &n, &e)) continue;
        for (int j = 0; j < n; j++) {
            if (t[j].stats_only) continue;
            float *v = NULL;
            int64_t nv = 0;
            if (cd_dump_read_f32(r, run, t[j].dataset, &v, &nv, &e) == CD_OK) free(v);
        }
        free(t);
    }
    static const char *const groups[] = {"/inputs", "/compare"};
    for (int g = 0; g < 2; g++) {
        char **names = NULL;
        int n = 0;
        if (!cd_dump_has(r, groups[g]) || cd_dump_list_group(r, groups[g], &names, &n, &e)) continue;
        for (int j = 0; j < n; j++) {
            snprintf(gpath, sizeof gpath, "%s/%s", groups[g], names[j]);
            cd_dump_read_all_attrs(r, gpath, &e);
            if (g == 0) {
                float *v = NULL;
                cd_shape s;
                if (cd_dump_read_path_f32(r, gpath, &v, &s, &e) == CD_OK) free(v);
            }
        }
        cd_dump_names_free(names, n);
    }
    if (cd_dump_has(r, "/model/ops")) {
        cd_column cols[3] = {{"index", CD_COL_I64, NULL}, {"name", CD_COL_STR, NULL}, {"type", CD_COL_STR, NULL}};
        int64_t nrows = 0;
        if (cd_dump_read_table(r, "/model/ops", cols, 3, &nrows, &e) == CD_OK) cd_dump_table_free(cols, 3, nrows);
    }
    cd_dump_reader_close(r);
    return CD_OK;
}

typedef struct {
    const char *path;
    cd_error *damage; /* shared with the parent: the checksum failure the walk found */
} walk_arg;

static void walk_fn(void *p) {
    walk_arg *w = p;
    cd_error e = {0};
    if (cd_dump_walk(w->path, &e) && strstr(e.msg, "checksum")) {
        *w->damage = e;
        _exit(3);
    }
}

cd_status cd_dump_run_isolated(const char *path, void (*fn)(void *), void *arg, cd_error *err) {
    struct stat sb;
    if (stat(path, &sb) != 0) return CD_OK; /* the caller's own open gives the message */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        return cd_err(err, CD_E_INTERNAL, "cannot start the process that checks HDF5 file '%s': %s", path, strerror(e));
    }
    if (pid == 0) {
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGALRM};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
        if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(NULL);
#if defined(__GLIBC__)
        /* glibc's default block placement again (the process keeps large freed blocks in its
         * heap, backends/cpu/backend_cpu.c): whether HDF5's faults on a crafted file show as a
         * signal can depend on it (tests/fuzz/regressions/dump/hdf5-attr-exists-segv crashed
         * only with the defaults), and catching them is this child's purpose */
        mallopt(M_MMAP_THRESHOLD, 128 << 10);
        mallopt(M_TRIM_THRESHOLD, 128 << 10);
#endif
        /* a file crafted to make HDF5 loop: 30 s plus 1 s per 50 MB read */
        alarm(30 + (unsigned)(sb.st_size / (50 << 20)));
        fn(arg);
        _exit(0);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0) {
        if (errno != EINTR) {
            int e = errno;
            return cd_err(err, CD_E_INTERNAL, "lost the process that checks HDF5 file '%s': %s", path, strerror(e));
        }
    }
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return CD_OK;
    if (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGALRM)
        return cd_err(err, CD_E_MODEL,
                      "HDF5 file '%s': reading it did not finish within the time limit (HDF5 looped on its "
                      "structure); the file is damaged or was not written by cldiff",
                      path);
    if (WIFSIGNALED(ws)) {
        const char *sn = cd_signal_name(WTERMSIG(ws));
        return cd_err(err, CD_E_MODEL,
                      "HDF5 file '%s' is damaged: the HDF5 library crashed (%s) while reading it in cldiff's "
                      "checking process; cldiff refuses the file (re-create it, or check it with h5dump)",
                      path, sn ? sn : "a signal");
    }
    return cd_err(err, CD_E_MODEL, "HDF5 file '%s': the process that checks it stopped with status %d", path,
                  WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
}

cd_status cd_dump_check_isolated(const char *path, cd_error *err) {
    cd_error *dmg = mmap(NULL, sizeof *dmg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (dmg == MAP_FAILED) dmg = NULL;
    if (dmg) memset(dmg, 0, sizeof *dmg);
    cd_error local = {0};
    walk_arg w = {path, dmg ? dmg : &local};
    cd_status st = cd_dump_run_isolated(path, walk_fn, &w, err);
    if (dmg && dmg->code && dmg->msg[0]) {
        dmg->msg[sizeof dmg->msg - 1] = 0;
        st = cd_err(err, CD_E_MODEL, "%s", dmg->msg);
    }
    if (dmg) munmap(dmg, sizeof *dmg);
    return st;
}

cd_status cd_dump_open_untrusted(const char *path, cd_dump_reader **out, cd_error *err) {
    *out = NULL;
    cd_status st = cd_dump_check_isolated(path, err);
    if (st) return st;
    return cd_dump_open(path, out, err);
}
