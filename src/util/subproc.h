/* Child processes with a timeout (docs/design.md §2, util): start one (a function of this
 * program in a forked child, or another program), read what it writes as it comes, end it on a
 * timeout or when a stop flag is raised, reap it and say how it ended. One module for every
 * child cldiff starts: the isolated OpenCL run, doctor's driver probes, Paddle-Lite's runner,
 * bridge and Opt. Nothing here knows what the child does. */
#ifndef CD_UTIL_SUBPROC_H
#define CD_UTIL_SUBPROC_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct cd_subproc_opts {
    double timeout_s;   /* <= 0: none; then SIGKILL (to the group with own_group) */
    volatile int *stop; /* when it becomes non-zero: stop_signal is sent once */
    int stop_signal;    /* 0: SIGKILL */
    bool own_group;     /* the child leads its own process group; signals go to the whole group */
    /* fork: the function's result pipe (its fd argument) is always read; stderr too when
     * capture_err, else stdout and stderr stay the parent's (quiet_child: /dev/null) */
    bool capture_err;
    bool quiet_child;
    /* spawn: stdout and stderr into log_path (truncated) when given, else into one pipe read as
     * "out"; stdin is /dev/null */
    const char *log_path;
} cd_subproc_opts;

typedef struct cd_subproc {
    pid_t pid;
    int fd[2]; /* read ends: [0] out (result pipe or stdout+stderr), [1] stderr; -1 when none */
    double t0;
    cd_subproc_opts o;
} cd_subproc;

typedef struct cd_subproc_result {
    int wstatus;    /* as waitpid gave it */
    int exit_code;  /* exit status, -1 when ended by a signal */
    int sig;        /* the terminating signal, 0 when it exited */
    bool timed_out; /* killed by the timeout */
    bool stopped;   /* the stop flag was seen and stop_signal sent */
    double elapsed_s;
} cd_subproc_result;

/* Runs fn(out_fd, arg) in a forked child that then exits 0. Returns 0, or -1 with errno set
 * (pipe or fork failed; nothing started). */
int cd_subproc_fork(cd_subproc *p, const cd_subproc_opts *o, void (*fn)(int out_fd, void *arg), void *arg);
/* Starts argv[0] (a path) with argv and envp (NULL: this process's environment). Returns 0, or
 * an errno value (nothing started). */
int cd_subproc_spawn(cd_subproc *p, const cd_subproc_opts *o, char *const argv[], char *const envp[]);

/* Called with what the child wrote (which: 0 out, 1 stderr), as it comes. Returning false
 * kills the child (SIGKILL) and stops reading that stream. */
typedef bool (*cd_subproc_on_data)(void *user, int which, const char *buf, size_t n);

/* Reads the child's streams until they close (on_data may be NULL: discarded), applying the
 * timeout and the stop flag, then reaps it. After a kill the streams are read for at most two
 * more seconds (a grandchild may hold them). Always reaps; fills r. */
void cd_subproc_wait(cd_subproc *p, cd_subproc_on_data on_data, void *user, cd_subproc_result *r);

/* Sends sig to the child (its group with own_group). */
void cd_subproc_kill(const cd_subproc *p, int sig);

/* Collects out (whole, grown as needed; NUL-terminated) and the tail of stderr: the common
 * on_data for children that answer with a short text. */
typedef struct cd_subproc_text {
    char *out; /* malloc'ed; the caller frees */
    size_t out_len, out_cap;
    size_t out_max; /* 0: unlimited; else only the last out_max bytes are kept */
    char err[2048]; /* tail of stderr */
    bool echo_err;  /* also copy stderr to this process's stderr as it comes */
} cd_subproc_text;
bool cd_subproc_collect(void *text, int which, const char *buf, size_t n);
#endif
