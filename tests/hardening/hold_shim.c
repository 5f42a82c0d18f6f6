/* Test-only LD_PRELOAD library: holds cldiff at a named moment of a run until a signal has
 * been handled, so tests/hardening/test_interrupt.py interrupts "during the CPU run" or
 * "during the OpenCL run" by an event, not by a guess at timing.
 *
 *   CDHOLD_GROUP=/runs/cpu   HDF5 group whose datasets are counted (one per probed tensor)
 *   CDHOLD_AT=N              hold when the N-th dataset of that group has been created (1-based)
 *   CDHOLD_FD=FD             file descriptor to which "held GROUP/NAME\n" is written then
 *
 * How: H5Dcreate2 is interposed (cldiff links libhdf5 dynamically). When the N-th dataset is
 * created in the group, the calling thread reports on CDHOLD_FD and blocks until one SIGINT or
 * SIGTERM has been *handled*: sigaction is interposed too, and every handler cldiff installs
 * for those two signals runs inside a wrapper that, after cldiff's handler returns, writes a
 * byte to a private pipe that the held thread reads. Whichever thread the kernel picks for the
 * signal, cldiff's stop flag is set before the run goes on, so what the run does after the
 * signal (stop before the next op) is certain, whatever the machine's load.
 *
 * Nothing else changes: the real H5Dcreate2 creates the dataset, cldiff's handler does what it
 * does. The library removes itself from LD_PRELOAD for programs cldiff (or PoCL) executes, and
 * marks CDHOLD_FD close-on-exec. Built without sanitizers (it is preloaded before the ASan
 * runtime; the test sets verify_asan_link_order=0). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef hid_t (*dcreate_fn)(hid_t, const char *, hid_t, hid_t, hid_t, hid_t, hid_t);
typedef ssize_t (*getname_fn)(hid_t, char *, size_t);

static struct sigaction g_user[2]; /* cldiff's own actions for SIGINT, SIGTERM */
static int g_wrapped[2];
static int g_wake[2] = {-1, -1}; /* a byte per handled signal */
static const char *g_group;
static long g_at = 1, g_seen;
static int g_fd = -1, g_done;

static int slot(int sig) { return sig == SIGINT ? 0 : sig == SIGTERM ? 1 : -1; }

__attribute__((constructor)) static void hold_init(void) {
    unsetenv("LD_PRELOAD"); /* not for the compilers and linkers PoCL may execute */
    g_group = getenv("CDHOLD_GROUP");
    const char *at = getenv("CDHOLD_AT"), *fd = getenv("CDHOLD_FD");
    if (at && *at) g_at = strtol(at, NULL, 10);
    if (fd && *fd) {
        g_fd = (int)strtol(fd, NULL, 10);
        fcntl(g_fd, F_SETFD, FD_CLOEXEC);
    }
    if (pipe2(g_wake, O_CLOEXEC) != 0) g_wake[0] = g_wake[1] = -1;
}

static void wrapper(int sig, siginfo_t *si, void *uc) {
    int saved = errno, s = slot(sig);
    if (s >= 0) {
        const struct sigaction *a = &g_user[s];
        if (a->sa_flags & SA_SIGINFO)
            a->sa_sigaction(sig, si, uc);
        else if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN)
            a->sa_handler(sig);
    }
    char c = (char)sig;
    if (g_wake[1] >= 0 && write(g_wake[1], &c, 1) < 0) { /* nothing to do in a handler */
    }
    errno = saved;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    static sigaction_fn real;
    if (!real) real = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
    int s = slot(sig);
    if (s < 0) return real(sig, act, old);
    struct sigaction prev_user = g_user[s];
    int was_wrapped = g_wrapped[s], rc;
    if (act && !(act->sa_flags & SA_SIGINFO) && (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN)) {
        rc = real(sig, act, old);
        if (rc == 0) g_wrapped[s] = 0;
    } else if (act) {
        struct sigaction w = *act;
        w.sa_flags |= SA_SIGINFO;
        w.sa_sigaction = wrapper;
        g_user[s] = *act;
        rc = real(sig, &w, old);
        if (rc == 0)
            g_wrapped[s] = 1;
        else
            g_user[s] = prev_user;
    } else {
        rc = real(sig, NULL, old);
    }
    if (rc == 0 && old && was_wrapped) *old = prev_user; /* cldiff sees its own handler */
    return rc;
}

static void report(const char *group, const char *name) {
    if (g_fd < 0) return;
    char line[1200];
    int n = snprintf(line, sizeof line, "held %s/%s\n", group, name);
    if (n > (int)sizeof line - 1) n = (int)sizeof line - 1;
    for (int off = 0; off < n;) {
        ssize_t w = write(g_fd, line + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (int)w;
    }
}

static void wait_for_handled_signal(void) {
    char c;
    for (;;) {
        ssize_t r = read(g_wake[0], &c, 1);
        if (r == 1) return;
        if (r < 0 && errno == EINTR) continue;
        return; /* the pipe is gone: do not hold forever */
    }
}

hid_t H5Dcreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl, hid_t dcpl, hid_t dapl) {
    static dcreate_fn real;
    static getname_fn getname;
    if (!real) real = (dcreate_fn)dlsym(RTLD_NEXT, "H5Dcreate2");
    if (!getname) getname = (getname_fn)dlsym(RTLD_NEXT, "H5Iget_name");
    hid_t ds = real(loc, name, type, space, lcpl, dcpl, dapl);
    if (ds < 0 || g_done || !g_group || !getname || g_wake[0] < 0) return ds;
    char where[1024];
    ssize_t n = getname(loc, where, sizeof where);
    if (n <= 0 || (size_t)n >= sizeof where || strcmp(where, g_group) != 0) return ds;
    if (++g_seen < g_at) return ds;
    g_done = 1;
    report(g_group, name);
    wait_for_handled_signal();
    return ds;
}
