#define _GNU_SOURCE /* pipe2 */
#include "util/subproc.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/error.h"

extern char **environ;

static double mono_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void close_pair(int p[2]) {
    if (p[0] >= 0) close(p[0]);
    if (p[1] >= 0) close(p[1]);
}

int cd_subproc_fork(cd_subproc *p, const cd_subproc_opts *o, void (*fn)(int out_fd, void *arg), void *arg) {
    memset(p, 0, sizeof *p);
    p->o = *o;
    p->fd[0] = p->fd[1] = -1;
    int dp[2] = {-1, -1}, ep[2] = {-1, -1};
    if (pipe(dp) != 0) return -1;
    if (o->capture_err && pipe(ep) != 0) {
        int e = errno;
        close_pair(dp);
        errno = e;
        return -1;
    }
    fflush(NULL); /* buffered output must not be written twice */
    p->t0 = mono_s();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close_pair(dp);
        close_pair(ep);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        if (o->own_group) setpgid(0, 0);
        close(dp[0]);
        if (o->capture_err) {
            close(ep[0]);
            dup2(ep[1], STDERR_FILENO);
            close(ep[1]);
        } else if (o->quiet_child) {
            int dn = open("/dev/null", O_WRONLY);
            if (dn >= 0) {
                dup2(dn, STDOUT_FILENO);
                dup2(dn, STDERR_FILENO);
                close(dn);
            }
        }
        fn(dp[1], arg);
        fflush(NULL);
        _exit(0);
    }
    if (o->own_group) setpgid(pid, pid); /* both sides: no race with an early kill */
    close(dp[1]);
    if (o->capture_err) close(ep[1]);
    p->pid = pid;
    p->fd[0] = dp[0];
    p->fd[1] = o->capture_err ? ep[0] : -1;
    return 0;
}

int cd_subproc_spawn(cd_subproc *p, const cd_subproc_opts *o, char *const argv[], char *const envp[]) {
    memset(p, 0, sizeof *p);
    p->o = *o;
    p->fd[0] = p->fd[1] = -1;
    int pfd[2] = {-1, -1};
    if (!o->log_path && pipe2(pfd, O_CLOEXEC) != 0) return errno;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (o->log_path) {
        posix_spawn_file_actions_addopen(&fa, 1, o->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    } else {
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    if (o->own_group) {
        posix_spawnattr_setpgroup(&at, 0);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    }
    p->t0 = mono_s();
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (pfd[1] >= 0) close(pfd[1]);
    if (rc) {
        if (pfd[0] >= 0) close(pfd[0]);
        return rc;
    }
    p->pid = pid;
    p->fd[0] = pfd[0];
    return 0;
}

void cd_subproc_kill(const cd_subproc *p, int sig) {
    if (p->pid <= 0) return;
    if (p->o.own_group) kill(-p->pid, sig);
    kill(p->pid, sig);
}

void cd_subproc_wait(cd_subproc *p, cd_subproc_on_data on_data, void *user, cd_subproc_result *r) {
    memset(r, 0, sizeof *r);
    bool killed = false;
    double killed_at = 0;
    const size_t cap = 262144;
    char *buf = malloc(cap);
    char small[4096];
    char *b = buf ? buf : small;
    size_t bn = buf ? cap : sizeof small;
    int reaped = 0; /* no streams: waitpid polled (1 when done) */
    for (;;) {
        struct pollfd f[2];
        int nf = 0, idx[2];
        for (int k = 0; k < 2; k++)
            if (p->fd[k] >= 0) {
                f[nf] = (struct pollfd){.fd = p->fd[k], .events = POLLIN};
                idx[nf++] = k;
            }
        if (!nf) {
            pid_t w = waitpid(p->pid, &r->wstatus, WNOHANG);
            if (w == p->pid || (w < 0 && errno != EINTR)) {
                reaped = w == p->pid ? 1 : -1;
                break;
            }
        }
        double now = mono_s();
        if (killed && nf && now - killed_at > 2) break; /* a grandchild holds the pipe */
        int wait_ms = nf ? 200 : 20;
        if (p->o.timeout_s > 0 && !killed) {
            double left = p->o.timeout_s - (now - p->t0);
            if (left <= 0) {
                cd_subproc_kill(p, SIGKILL);
                killed = r->timed_out = true;
                killed_at = now;
            } else if (left * 1000 < wait_ms)
                wait_ms = (int)(left * 1000) + 1;
        }
        if (p->o.stop && *p->o.stop && !r->stopped) {
            int sig = p->o.stop_signal ? p->o.stop_signal : SIGKILL;
            cd_subproc_kill(p, sig);
            r->stopped = true;
            if (sig == SIGKILL) killed = true, killed_at = now;
        }
        int pr = poll(f, (nfds_t)nf, wait_ms);
        if (pr < 0 && errno != EINTR) break;
        if (pr <= 0) continue;
        for (int i = 0; i < nf; i++) {
            if (!(f[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int k = idx[i];
            ssize_t n = read(p->fd[k], b, bn);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            bool done = n <= 0;
            if (!done && on_data && !on_data(user, k, b, (size_t)n)) {
                if (!killed) cd_subproc_kill(p, SIGKILL);
                killed = true;
                killed_at = mono_s();
                done = true;
            }
            if (done) {
                close(p->fd[k]);
                p->fd[k] = -1;
            }
        }
        if (p->fd[0] < 0 && p->fd[1] < 0 && nf) break;
    }
    free(buf);
    for (int k = 0; k < 2; k++)
        if (p->fd[k] >= 0) {
            close(p->fd[k]);
            p->fd[k] = -1;
        }
    if (!reaped)
        while (waitpid(p->pid, &r->wstatus, 0) < 0 && errno == EINTR) {}
    r->elapsed_s = mono_s() - p->t0;
    if (WIFSIGNALED(r->wstatus)) {
        r->sig = WTERMSIG(r->wstatus);
        r->exit_code = -1;
    } else
        r->exit_code = WIFEXITED(r->wstatus) ? WEXITSTATUS(r->wstatus) : -1;
    p->pid = 0;
}

bool cd_subproc_collect(void *text, int which, const char *buf, size_t n) {
    cd_subproc_text *t = text;
    if (which == 1) {
        if (t->echo_err) fwrite(buf, 1, n, stderr);
        cd_tail_append(t->err, sizeof t->err, buf, n);
        return true;
    }
    if (t->out_max && n >= t->out_max) { /* keep the last out_max bytes */
        buf += n - t->out_max;
        n = t->out_max;
    }
    if (t->out_max && t->out_len + n > t->out_max) {
        size_t drop = t->out_len + n - t->out_max;
        memmove(t->out, t->out + drop, t->out_len - drop);
        t->out_len -= drop;
    }
    if (t->out_len + n + 1 > t->out_cap) {
        size_t nc = (t->out_cap ? t->out_cap * 2 : 8192) + n;
        char *no = realloc(t->out, nc);
        if (!no) return true; /* keep what fits: a text answer is short */
        t->out = no;
        t->out_cap = nc;
    }
    memcpy(t->out + t->out_len, buf, n);
    t->out_len += n;
    t->out[t->out_len] = 0;
    return true;
}
