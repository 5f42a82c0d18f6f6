/* `cldiff doctor`: where OpenCL was looked for, what is there, and whether every kernel
 * builds on the chosen device in every precision variant. Everything that calls into the
 * driver runs in a child process, so a compiler that aborts is a line in the table.
 *
 * Exit codes: 0 every build ok; 4 no OpenCL library / platform / device; 5 the driver
 * crashed or hung (enumeration or a build); 8 some build failed (those ops fall back to the
 * CPU in a run); 2 bad options. Then, whatever the OpenCL result, the Paddle-Lite engines
 * (paddle-lite-arm, paddle-lite-opencl): usable or what is missing; they do not change the
 * exit code. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/inspect_mnn.h"
#include "util/error.h"
#include "util/subproc.h"
#include "backends/opencl/backend_cl.h"
#include "backends/opencl/loader.h"
#include "backends/paddlelite/pl_sdk.h"
#include "cli/cli.h"
#include "cli/session.h"
#include "backends/registry.h"

typedef struct {
    char *out; /* what the child wrote to its result pipe */
    size_t out_len;
    char err[2048]; /* tail of its stderr */
    int sig;        /* terminating signal, 0 if none */
    int exit_code;
    bool timed_out;
} child_res;

typedef void (*child_fn)(int fd, void *arg);

/* Runs fn in a child; its result pipe and stderr are collected (stderr is not shown unless
 * echo_err: build logs of crashes belong in the table, not on the terminal). */
static int run_child(child_fn fn, void *arg, double timeout_s, bool echo_err, child_res *r) {
    memset(r, 0, sizeof *r);
    cd_subproc_opts so = {.timeout_s = timeout_s, .capture_err = true};
    cd_subproc sp;
    if (cd_subproc_fork(&sp, &so, fn, arg) != 0) return -1;
    cd_subproc_text t = {.echo_err = echo_err};
    cd_subproc_result sr;
    cd_subproc_wait(&sp, cd_subproc_collect, &t, &sr);
    r->out = t.out;
    r->out_len = t.out_len;
    snprintf(r->err, sizeof r->err, "%s", t.err);
    r->sig = sr.sig;
    r->exit_code = sr.exit_code < 0 ? 0 : sr.exit_code;
    r->timed_out = sr.timed_out;
    return 0;
}

typedef struct {
    const cd_cli_opts *o;
    cd_cl_devinfo info; /* chosen device (filled by the enumeration child) */
    const char *file;
    cd_cl_variant v;
} doc_ctx;

static void write_str(int fd, const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

/* Child: prints platforms and devices to stdout, sends the chosen device's description. */
static void enum_child(int fd, void *arg) {
    doc_ctx *d = arg;
    cd_clfn cl;
    cd_error err;
    cd_err_clear(&err);
    if (cd_cl_load(d->o->cl_lib, &cl, NULL, &err)) {
        write_str(fd, "E");
        write_str(fd, err.msg);
        return;
    }
    cd_cl_platform *ps;
    int np;
    if (cd_cl_platforms(&cl, &ps, &np, &err)) {
        write_str(fd, "E");
        write_str(fd, err.msg);
        return;
    }
    printf("\nPlatforms and devices:\n");
    for (int i = 0; i < np; i++) {
        printf("  platform %d: %s\n    vendor: %s\n    version: %s\n", i, ps[i].name, ps[i].vendor, ps[i].version);
        if (ps[i].n_devices == 0) printf("    (no device: %s)\n", cd_cl_err_name(ps[i].device_status));
        for (int j = 0; j < ps[i].n_devices; j++) {
            cd_cl_devinfo info;
            cd_cl_describe(&cl, ps[i].id, ps[i].devices[j], &info, &err);
            printf("    device %d:\n", j);
            cd_cl_devinfo_print(&info, stdout, "      ");
        }
    }
    cd_cl_platforms_free(ps, np);
    fflush(stdout);
    cl_platform_id pid;
    cl_device_id did;
    cd_cl_devinfo info;
    if (cd_cl_pick(&cl, d->o->cl_platform, d->o->cl_device, &pid, &did, &info, &err)) {
        write_str(fd, err.code == CD_E_USAGE ? "U" : "E");
        write_str(fd, err.msg);
        return;
    }
    char hdr = 'D';
    if (write(fd, &hdr, 1) != 1) return;
    const char *p = (const char *)&info;
    size_t n = sizeof info;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Child: builds one kernel file in one variant; sends "OK" or "FAIL <message>\n<log>". */
static void build_child(int fd, void *arg) {
    doc_ctx *d = arg;
    cd_clfn cl;
    cd_error err;
    cd_err_clear(&err);
    cl_platform_id pid;
    cl_device_id did;
    cd_cl_devinfo info;
    if (cd_cl_load(d->o->cl_lib, &cl, NULL, &err) ||
        cd_cl_pick(&cl, d->o->cl_platform, d->o->cl_device, &pid, &did, &info, &err)) {
        write_str(fd, "FAIL ");
        write_str(fd, err.msg);
        return;
    }
    cl_int rc;
    cl_context_properties props[3] = {CL_CONTEXT_PLATFORM, (cl_context_properties)pid, 0};
    cl_context ctx = cl.clCreateContext(props, 1, &did, NULL, NULL, &rc);
    if (!ctx || rc != CL_SUCCESS) {
        write_str(fd, "FAIL clCreateContext: ");
        write_str(fd, cd_cl_err_name(rc));
        return;
    }
    char *src = cd_cl_program_source(d->o->kernel_dir, d->file, d->v, &err);
    if (!src) {
        write_str(fd, "FAIL ");
        write_str(fd, err.msg);
        return;
    }
    cl_program prog;
    char *log = NULL;
    /* no cache: the point is to exercise the compiler */
    cd_status st =
        cd_cl_build_program(&cl, ctx, did, &info, src, cd_cl_build_options(d->v, &info), NULL, &prog, &log, &err);
    if (st) {
        write_str(fd, "FAIL ");
        write_str(fd, err.msg);
        write_str(fd, "\n");
        if (log) write_str(fd, log);
    } else {
        write_str(fd, "OK");
        cl.clReleaseProgram(prog);
    }
    free(log);
    free(src);
    cl.clReleaseContext(ctx);
}

static cd_status backend_available(const cd_cli_opts *o, const cd_backend_def *def, cd_error *err) {
    cd_backend_opts bo = cd_session_backend_opts(o, o->prec);
    cd_runner_req q = {.backend = def ? def->name : "", .bo = &bo, .timeout_s = o->timeout_s, .quiet = true};
    return cd_backend_available(def, &q, err);
}

static const char *signame(int s) {
    const char *n = cd_signal_name(s);
    return n ? n : "signal";
}

/* Up to max_lines non-empty lines of s, indented, for the table. */
static void print_lines(const char *s, int max_lines, const char *indent) {
    int n = 0;
    while (s && *s && n < max_lines) {
        size_t l = strcspn(s, "\n");
        bool blank = true;
        for (size_t i = 0; i < l; i++)
            if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') blank = false;
        if (!blank) {
            printf("%s%.*s\n", indent, (int)(l > 200 ? 200 : l), s);
            n++;
        }
        s += l;
        if (*s) s++;
    }
}

/* Paddle-Lite's engines (backends/paddlelite/pl_sdk.h): the helpers cldiff runs, and for each
 * engine its SDK, compiler, qemu, OpenCL library and platform order, runner. Informational: the
 * exit code stays the OpenCL check's. */
/* The SDK given with --backend-opt ENGINE:sdk=DIR (the last one), or NULL. */
static const char *given_sdk(int argc, char **argv, const char *engine) {
    const char *got = NULL;
    char pre[64];
    snprintf(pre, sizeof pre, "%s:sdk=", engine);
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--backend-opt") && i + 1 < argc)
            v = argv[++i];
        else if (!strncmp(argv[i], "--backend-opt=", 14))
            v = argv[i] + 14;
        if (v && !strncmp(v, pre, strlen(pre))) got = v + strlen(pre);
    }
    return got;
}

static void doctor_paddle_lite(const cd_cli_opts *o, int argc, char **argv) {
    printf("\nPaddle-Lite engines (docs/paddle-lite.md):\n");
    static const char *const helpers[] = {"scripts/pl_bridge.py", "scripts/pl_ocl.py",
                                          "probes/paddle-lite/pl_probe_runner.cc"};
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++) {
        char p[4096];
        if (cd_pl_find_helper(helpers[i], p, sizeof p))
            printf("  helper  %s: %s\n", helpers[i], p);
        else
            printf("  MISSING helper %s: not beside cldiff, in ../share/cldiff or in the source tree\n", helpers[i]);
    }
    for (int k = CD_PL_ENGINE_ARM; k <= CD_PL_ENGINE_PHONE; k++) {
        printf("%s:\n", cd_pl_engine_name((cd_pl_engine_kind)k));
        fflush(stdout);
        char rep[16384];
        const char *name = cd_pl_engine_name((cd_pl_engine_kind)k);
        bool usable = cd_pl_engine_check((cd_pl_engine_kind)k, given_sdk(argc, argv, name), rep, sizeof rep);
        /* the check a run makes before it starts (cd_backend_def.available: Opt, too) has the
         * last word: doctor never calls usable what a run then refuses */
        cd_error ae = {0};
        if (usable && backend_available(o, cd_backend_lookup(name), &ae)) {
            char tail[64];
            snprintf(tail, sizeof tail, "  => %s usable\n", name);
            char *at = strstr(rep, tail);
            if (at) *at = 0;
            size_t l = strlen(rep);
            snprintf(rep + l, sizeof rep - l, "  MISSING %s\n  => %s NOT usable (see above)\n", ae.msg, name);
        }
        fputs(rep, stdout);
    }
    fflush(stdout);
}

/* Every registered backend through the check a run makes before it starts (no model: what
 * every model needs), one line each. */
static void doctor_backends(const cd_cli_opts *o) {
    printf("\nBackends (the check `cldiff MODEL --backends A,B` makes before it starts):\n");
    for (int i = 0; i < cd_backend_count(); i++) {
        const cd_backend_def *d = cd_backend_at(i);
        cd_error e = {0};
        fflush(stdout);
        if (backend_available(o, d, &e))
            printf("  %-20s NOT usable: %s\n", d->name, e.msg);
        else
            printf("  %-20s usable\n", d->name);
    }
    fflush(stdout);
}

static int doctor_opencl(const cd_cli_opts *o);

int cd_cmd_doctor(int argc, char **argv) {
    cd_cli_opts o;
    int rc = cd_cli_parse(argc, argv, 1, &o, "doctor");
    if (rc) return rc;
    if (o.n_positional) {
        fprintf(stderr, "cldiff doctor: unexpected argument '%s' (doctor takes options only)\n", o.positional[0]);
        return CD_E_USAGE;
    }
    rc = doctor_opencl(&o);
    if (rc != CD_E_USAGE) { /* a bad --cl-device: fix the command first */
        doctor_paddle_lite(&o, argc, argv);
        cd_doctor_mnn();
        doctor_backends(&o);
    }
    return rc;
}

static int doctor_opencl(const cd_cli_opts *o) {
    double limit = o->timeout_s > 0 ? o->timeout_s : 600;
    printf("OpenCL library search (--cl-lib, CLDIFF_OPENCL_LIB, ICD loader, vendor libraries):\n");
    cd_clfn cl;
    cd_cl_search s;
    cd_error err;
    cd_err_clear(&err);
    /* dlopen only: no driver code runs in this process before the children fork */
    cd_status st = cd_cl_load(o->cl_lib, &cl, &s, &err);
    cd_cl_search_print(&s, stdout);
    if (st) {
        printf("\nNo OpenCL: %s\n", err.msg);
        fflush(stdout);
        return CD_E_BACKEND;
    }
    printf("Using %s\n", cl.path);
    cd_cl_unload(&cl);

    doc_ctx d = {.o = o};
    child_res r;
    if (run_child(enum_child, &d, limit, true, &r) != 0) {
        fprintf(stderr, "cldiff doctor: cannot start a child process: %s\n", strerror(errno));
        return CD_E_INTERNAL;
    }
    if (r.sig || r.timed_out || !r.out_len) {
        printf("\nThe OpenCL driver %s while listing platforms and devices%s%s\n",
               r.timed_out ? "hung (killed after the timeout)"
                   : r.sig ? "crashed"
                           : "exited without an answer",
               r.sig ? ": " : "", r.sig ? signame(r.sig) : "");
        if (r.err[0]) print_lines(r.err, 5, "  driver: ");
        free(r.out);
        return CD_E_CRASH;
    }
    if (r.out[0] != 'D' || r.out_len != 1 + sizeof d.info) {
        printf("\n%s\n", r.out + 1);
        int code = r.out[0] == 'U' ? CD_E_USAGE : CD_E_BACKEND;
        free(r.out);
        return code;
    }
    memcpy(&d.info, r.out + 1, sizeof d.info);
    free(r.out);
    printf("\nChosen device: platform %d device %d: %s (%s), driver %s\n", d.info.platform_index, d.info.device_index,
           d.info.name, d.info.platform, d.info.driver);

    char **files;
    int nf = cd_cl_kernel_files(o->kernel_dir, &files, &err);
    if (nf < 0) {
        fprintf(stderr, "cldiff doctor: %s\n", err.msg);
        return err.code;
    }
    printf("\nKernel builds (%d file(s)%s%s, each in a child process):\n", nf,
           o->kernel_dir ? ", --kernel-dir " : ", embedded", o->kernel_dir ? o->kernel_dir : "");
    printf("  %-24s %-13s %s\n", "kernel", "variant", "result");
    int n_ok = 0, n_fail = 0, n_crash = 0, n_skip = 0;
    for (int i = 0; i < nf; i++) {
        for (int v = CD_CLV_FP32; v <= CD_CLV_FP16_COMPUTE; v++) {
            const char *vn = cd_cl_variant_name((cd_cl_variant)v);
            printf("  %-24s %-13s ", files[i], vn);
            if (v == CD_CLV_FP16_COMPUTE && !d.info.fp16) {
                printf("skipped: device lacks cl_khr_fp16\n");
                n_skip++;
                continue;
            }
            fflush(stdout);
            d.file = files[i];
            d.v = (cd_cl_variant)v;
            if (run_child(build_child, &d, limit, false, &r) != 0) {
                printf("cannot start a child process: %s\n", strerror(errno));
                n_crash++;
                continue;
            }
            if (r.sig || r.timed_out) {
                n_crash++;
                if (r.timed_out)
                    printf("HUNG: clBuildProgram did not return within %.0f s (killed)\n", limit);
                else
                    printf("CRASHED with %s in the driver\n", signame(r.sig));
                if (r.err[0]) print_lines(r.err, 4, "      driver: ");
            } else if (r.out && !strncmp(r.out, "OK", 2)) {
                n_ok++;
                printf("ok\n");
            } else {
                n_fail++;
                const char *m = r.out && !strncmp(r.out, "FAIL ", 5) ? r.out + 5 : "no answer from the build child";
                size_t l = strcspn(m, "\n");
                printf("FAILED: %.*s\n", (int)(l > 300 ? 300 : l), m);
                if (m[l]) print_lines(m + l + 1, 6, "      log: ");
            }
            free(r.out);
        }
    }
    cd_cl_kernel_files_free(files, nf);
    printf("\n%d ok, %d failed, %d crashed, %d skipped\n", n_ok, n_fail, n_crash, n_skip);
    if (n_fail) printf("Ops whose kernel fails to build run on the CPU (cpu-fallback) in `cldiff run`.\n");
    fflush(stdout);
    return n_crash ? CD_E_CRASH : n_fail ? CD_E_UNSUPPORTED : 0;
}
