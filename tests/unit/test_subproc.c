/* The child-process module (util/subproc.h): exit status and signal of a forked function, a
 * spawned program's output, the timeout killing the whole process group (a grandchild holding
 * the pipe included), the stop flag, and a reader that refuses the data. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/subproc.h"

static void exit3(int fd, void *arg) {
    (void)arg;
    if (write(fd, "ab", 2) != 2) _exit(9);
    _exit(3);
}

static void segv(int fd, void *arg) {
    (void)fd;
    (void)arg;
    signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn the signal into an exit code */
    raise(SIGSEGV);
}

static void chatter(int fd, void *arg) {
    (void)arg;
    for (;;)
        if (write(fd, "x", 1) != 1) _exit(1);
}

Test(subproc, fork_exit_code_and_output) {
    cd_subproc p;
    cd_subproc_opts o = {0};
    cr_assert_eq(cd_subproc_fork(&p, &o, exit3, NULL), 0);
    cd_subproc_text t = {0};
    cd_subproc_result r;
    cd_subproc_wait(&p, cd_subproc_collect, &t, &r);
    cr_expect_eq(r.exit_code, 3);
    cr_expect_eq(r.sig, 0);
    cr_expect(!r.timed_out && !r.stopped);
    cr_assert_not_null(t.out);
    cr_expect_str_eq(t.out, "ab");
    free(t.out);
}

Test(subproc, fork_signal) {
    cd_subproc p;
    cd_subproc_opts o = {.capture_err = true};
    cr_assert_eq(cd_subproc_fork(&p, &o, segv, NULL), 0);
    cd_subproc_result r;
    cd_subproc_wait(&p, NULL, NULL, &r);
    cr_expect_eq(r.sig, SIGSEGV);
    cr_expect_eq(r.exit_code, -1);
}

Test(subproc, spawn_captures_stdout_and_stderr) {
    char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 4", NULL};
    cd_subproc p;
    cd_subproc_opts o = {.timeout_s = 30};
    cr_assert_eq(cd_subproc_spawn(&p, &o, argv, NULL), 0);
    cd_subproc_text t = {0};
    cd_subproc_result r;
    cd_subproc_wait(&p, cd_subproc_collect, &t, &r);
    cr_expect_eq(r.exit_code, 4);
    cr_assert_not_null(t.out);
    cr_expect_str_eq(t.out, "out\nerr\n");
    free(t.out);
}

Test(subproc, spawn_missing_program) {
    char *argv[] = {"/nonexistent/prog", NULL};
    cd_subproc p;
    cd_subproc_opts o = {0};
    int rc = cd_subproc_spawn(&p, &o, argv, NULL);
    /* posix_spawn reports ENOENT, or the child exits 127 */
    if (rc == 0) {
        cd_subproc_result r;
        cd_subproc_wait(&p, NULL, NULL, &r);
        cr_expect_eq(r.exit_code, 127);
    } else
        cr_expect_eq(rc, ENOENT);
}

/* The grandchild (a background sleep) keeps the pipe open: only a kill of the whole group
 * closes it at once; a kill of the child alone would leave the reader waiting for its grace
 * period (2 s). */
Test(subproc, timeout_kills_the_group) {
    char *argv[] = {"/bin/sh", "-c", "sleep 60 & sleep 60", NULL};
    cd_subproc p;
    cd_subproc_opts o = {.timeout_s = 0.3, .own_group = true};
    cr_assert_eq(cd_subproc_spawn(&p, &o, argv, NULL), 0);
    cd_subproc_text t = {0};
    cd_subproc_result r;
    cd_subproc_wait(&p, cd_subproc_collect, &t, &r);
    free(t.out);
    cr_expect(r.timed_out);
    cr_expect_eq(r.sig, SIGKILL);
    cr_expect(r.elapsed_s >= 0.3 && r.elapsed_s < 1.5, "elapsed %.2f s", r.elapsed_s);
}

Test(subproc, timeout_with_a_log_file) {
    char log[] = "/tmp/cd_test_subproc_XXXXXX";
    int fd = mkstemp(log);
    cr_assert(fd >= 0);
    close(fd);
    char *argv[] = {"/bin/sh", "-c", "echo started; sleep 60", NULL};
    cd_subproc p;
    cd_subproc_opts o = {.timeout_s = 0.3, .own_group = true, .log_path = log};
    cr_assert_eq(cd_subproc_spawn(&p, &o, argv, NULL), 0);
    cd_subproc_result r;
    cd_subproc_wait(&p, NULL, NULL, &r);
    cr_expect(r.timed_out);
    cr_expect(r.elapsed_s < 5);
    FILE *f = fopen(log, "r");
    char line[64] = "";
    cr_assert_not_null(f);
    cr_expect_not_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(log);
    cr_expect_str_eq(line, "started\n");
}

Test(subproc, stop_flag_sends_the_signal) {
    volatile int stop = 1;
    char *argv[] = {"/bin/sh", "-c", "sleep 60", NULL};
    cd_subproc p;
    cd_subproc_opts o = {.stop = &stop, .stop_signal = SIGTERM, .log_path = "/dev/null"};
    cr_assert_eq(cd_subproc_spawn(&p, &o, argv, NULL), 0);
    cd_subproc_result r;
    cd_subproc_wait(&p, NULL, NULL, &r);
    cr_expect(r.stopped);
    cr_expect_eq(r.sig, SIGTERM);
}

static bool refuse(void *user, int which, const char *buf, size_t n) {
    (void)buf;
    (void)which;
    *(size_t *)user += n;
    return false;
}

Test(subproc, reader_refusal_kills) {
    cd_subproc p;
    cd_subproc_opts o = {.timeout_s = 30};
    cr_assert_eq(cd_subproc_fork(&p, &o, chatter, NULL), 0);
    size_t got = 0;
    cd_subproc_result r;
    cd_subproc_wait(&p, refuse, &got, &r);
    cr_expect(got > 0);
    cr_expect(r.sig == SIGKILL || r.exit_code == 1, "sig %d exit %d", r.sig, r.exit_code);
    cr_expect(!r.timed_out);
}

Test(subproc, collect_keeps_the_tail) {
    cd_subproc_text t = {.out_max = 4};
    cd_subproc_collect(&t, 0, "abc", 3);
    cd_subproc_collect(&t, 0, "defg", 4);
    cr_expect_str_eq(t.out, "defg");
    cd_subproc_collect(&t, 0, "hi", 2);
    cr_expect_str_eq(t.out, "fghi");
    free(t.out);
}
