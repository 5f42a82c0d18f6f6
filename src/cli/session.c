#include "cli/session.h"
#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include "model/nb_reader.h"
#include "model/mnn_reader.h"
#include "probes/select.h"
#include "probes/sink.h"
#include "util/sha256.h"
#include "backends/registry.h"
#include "backends/mnn/mnn_sdk.h"

volatile int cd_stop_flag = 0;

static void on_signal(int sig) { cd_stop_flag = sig; }

void cd_install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

cd_status cd_make_dirs(const char *path, cd_error *err) {
    char buf[1024];
    if (strlen(path) >= sizeof buf) return cd_err(err, CD_E_USAGE, "--out path too long");
    strcpy(buf, path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return cd_err(err, CD_E_IO, "cannot create output folder '%s': %s (choose a writable --out DIR)", buf,
                              strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return cd_err(err, CD_E_IO, "output path '%s' is not a folder (choose another --out DIR)", path);
    if (access(path, W_OK) != 0)
        return cd_err(err, CD_E_IO, "output folder '%s' is not writable: %s (choose a writable --out DIR)", path,
                      strerror(errno));
    return CD_OK;
}

cd_backend_opts cd_session_backend_opts(const cd_cli_opts *o, cd_precision prec) {
    cd_backend_opts b = {0};
    b.prec = prec;
    b.threads = o->threads;
    b.cl_lib = o->cl_lib;
    b.cl_platform = o->cl_platform;
    b.cl_device = o->cl_device;
    b.kernel_dir = o->kernel_dir;
    b.cache_dir = o->cache_dir;
    b.no_cache = o->no_cache;
    b.fp16_compute = o->fp16_compute;
    /* int8 layers in integer arithmetic on the CPU (docs/int8.md); fp16 runs stay dequantized */
    b.int8_arm = prec == CD_PREC_FP32 && !(o->int8_mode && !strcmp(o->int8_mode, "dequant"));
    b.int8_on_arm = b.int8_arm && !(o->int8_placement && !strcmp(o->int8_placement, "gpu"));
    b.isolate = o->isolate_child;
    b.kv = o->backend_kv;
    b.n_kv = o->n_backend_kv;
    cd_error e = {0};
    (void)cd_backend_apply_opts(&b, &e); /* values were checked when the command line was parsed */
    return b;
}

int cd_session_helper_threads(const cd_cli_opts *o) {
    const char *e = getenv("CLDIFF_HELPER_THREADS"); /* e.g. to time the runs with 2 */
    char *end = NULL;
    long v = e && *e ? strtol(e, &end, 10) : 0;
    if (e && *e && !*end && v >= 1 && v <= 256) return (int)v;
    static bool warned;
    if (e && *e && !warned) {
        warned = true;
        fprintf(stderr, "cldiff: CLDIFF_HELPER_THREADS='%s' is not a thread count 1..256: ignored (using %s)\n", e,
                o->threads != 2 ? "--threads" : "half the online cores, up to 8");
    }
    if (o->threads != 2) return o->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    return n > 8 ? 8 : n > 2 ? (int)n : 2;
}

/* /model/macs: multiply-accumulates per op from the plan (conv, fc, matmul...), so GFLOP/s
 * can be computed from any dump together with the per-layer times. */
static cd_status write_macs(cd_session *s, cd_error *err) {
    int n = s->g->n_ops;
    int64_t *idx = calloc((size_t)(n ? n : 1), sizeof *idx);
    double *macs = calloc((size_t)(n ? n : 1), sizeof *macs);
    cd_status st = CD_OK;
    if (!idx || !macs) st = cd_err(err, CD_E_NOMEM, "out of memory");
    for (int i = 0; i < n && !st; i++) {
        const cd_op_def *d = s->plan.defs[i];
        cd_error e = {0};
        cd_op_ctx c = {.g = s->g,
                       .op = &s->g->ops[i],
                       .op_index = i,
                       .vals = s->plan.meta,
                       .prec = s->plan.prec,
                       .threads = 1,
                       .err = &e};
        idx[i] = i;
        macs[i] = d && d->macs ? d->macs(&c) : 0;
    }
    cd_column cols[] = {{"op_index", CD_COL_I64, idx}, {"macs", CD_COL_F64, macs}};
    if (!st) st = cd_dump_write_table(s->dump, "/model/macs", cols, 2, n, err);
    free(idx);
    free(macs);
    return st;
}

/* The memory budget, checked after planning (shapes only, nothing big allocated yet):
 * every run holds the params in its dtype plus its peak live activations; the dump side
 * holds one probed tensor at a time (host copy + float conversion for the stats). */
static cd_status check_memory(cd_session *s, cd_error *err) {
    int64_t limit = s->o->max_memory;
    if (limit <= 0) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
        limit = pages > 0 && psz > 0 ? (int64_t)((double)pages * (double)psz * 0.8) : INT64_MAX;
    }
    int64_t biggest = 0;
    const cd_plan *p = &s->plan;
    for (int t = 0; t < s->g->n_tensors; t++) {
        int64_t n = cd_shape_numel(&p->meta[t].shape);
        if (p->meta[t].shape.rank < 0) continue;
        int64_t b = n < 0 ? -1 : n * (int64_t)cd_dtype_size(p->meta[t].dtype);
        if (n < 0 || b < 0 || b / (int64_t)cd_dtype_size(p->meta[t].dtype) != n || b > limit) {
            char sh[160];
            return cd_err(err, CD_E_NOMEM,
                          "tensor '%s' would need %s bytes (shape %s), more than the memory budget "
                          "of %.1f MiB; check the input shapes (--shape) or raise --max-memory",
                          s->g->tensors[t].name, n < 0 ? "an overflowing number of" : "too many",
                          cd_shape_str(&p->meta[t].shape, sh, sizeof sh), (double)limit / 1048576.0);
        }
        if (b > biggest) biggest = b;
    }
    double need = (double)p->param_bytes + (double)p->act_bytes_peak + 3.0 * (double)biggest;
    if (s->have_plan32) need += (double)s->plan32.param_bytes;
    if (need > (double)limit)
        return cd_err(err, CD_E_NOMEM,
                      "the run needs about %.1f MiB (params %.1f MiB, peak activations %.1f MiB, "
                      "largest tensor %.1f MiB), over the memory budget of %.1f MiB; use smaller --shape values, "
                      "--dump stats, or raise --max-memory",
                      need / 1048576.0, (double)p->param_bytes / 1048576.0, (double)p->act_bytes_peak / 1048576.0,
                      (double)biggest / 1048576.0, (double)limit / 1048576.0);
    return CD_OK;
}

/* "12.3 GiB" / "512 MiB" */
static const char *human_bytes(double b, char *buf, size_t n) {
    if (b >= 1073741824.0)
        snprintf(buf, n, "%.1f GiB", b / 1073741824.0);
    else if (b >= 1048576.0)
        snprintf(buf, n, "%.0f MiB", b / 1048576.0);
    else
        snprintf(buf, n, "%.0f KiB", b / 1024.0);
    return buf;
}

/* The dump's size before anything runs: the probed layers' output tensors of every run that
 * stores them whole (A, B, B's repeats, fp16's golden run), with --dump full. Refused over
 * --max-dump (default 8 GiB) or over the free space of the disk it goes to (exit 6), naming
 * --dump stats: a 4096x4096 detector input would otherwise start silently and write 12 GB. */
static cd_status check_dump_size(cd_session *s, cd_error *err) {
    const cd_cli_opts *o = s->o;
    if (!strcmp(o->dump_mode, "stats")) return CD_OK;
    const cd_plan *p = &s->plan;
    double per_run = 0;
    for (int i = 0; i < s->g->n_ops; i++) {
        if (!s->mask[i]) continue;
        const cd_op *op = &s->g->ops[i];
        for (int k = 0; k < op->n_out; k++)
            for (int j = 0; j < op->out[k].n; j++) {
                int t = op->out[k].ids[j];
                int64_t n = t >= 0 ? cd_shape_numel(&p->meta[t].shape) : 0;
                if (n > 0) per_run += (double)n * (double)cd_dtype_size(p->meta[t].dtype);
            }
    }
    int runs = o->n_backends + (o->repeat > 1 ? o->repeat - 1 : 0) + (o->prec == CD_PREC_FP16 && o->n_backends > 1);
    double need = per_run * runs;
    double limit = o->max_dump > 0 ? (double)o->max_dump : 8.0 * 1073741824.0;
    char a[32], b[32], c[32];
    /* --dump stats keeps statistics only: right for one run, while a differential run on it has
     * nothing to compare element by element and is judged incomplete (docs/verdicts.md) */
    const char *stats_hint = o->n_backends > 1
        ? "; --dump stats keeps statistics only, so a differential run on it compares no layer and is incomplete"
        : "";
    if (need > limit)
        return cd_err(err, CD_E_IO,
                      "the dump would hold about %s (%s per run of %d probed layers, %d runs) with --dump full, "
                      "over --max-dump %s: use fewer --layers (--layers outputs, a range '#0-40'), a smaller --shape, "
                      "--dump stats (statistics only, a few KiB per layer), or raise --max-dump%s",
                      human_bytes(need, a, sizeof a), human_bytes(per_run, b, sizeof b), s->n_probed, runs,
                      human_bytes(limit, c, sizeof c), stats_hint);
    /* the free space where the dump goes: the nearest folder of --out that exists */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", o->out_dir);
    struct statvfs vf;
    while (statvfs(dir, &vf) != 0) {
        char *sl = strrchr(dir, '/');
        if (!sl || sl == dir) {
            snprintf(dir, sizeof dir, "%s", sl == dir ? "/" : ".");
            if (statvfs(dir, &vf) != 0) return CD_OK;
            break;
        }
        *sl = 0;
    }
    double avail = (double)vf.f_bavail * (double)vf.f_frsize;
    if (need > avail)
        return cd_err(err, CD_E_IO,
                      "disk full before the run could end: the dump would hold about %s (%d probed layers, %d runs) "
                      "but %s has only %s free; use --dump stats (statistics only), fewer --layers, a smaller "
                      "--shape, or an --out on a larger disk",
                      human_bytes(need, a, sizeof a), s->n_probed, runs, dir, human_bytes(avail, b, sizeof b));
    return CD_OK;
}

/* Every backend of the command can start (cd_backend_def.available: driver, SDK, qemu, wheel,
 * Opt), asked before any run: a missing backend B must not cost run A's time, nor leave a dump
 * of run A alone (exit 4 before anything ran). */
static cd_status check_backends(cd_session *s, int defer, cd_error *err) {
    const cd_cli_opts *o = s->o;
    for (int k = 0; k < o->n_backends; k++) {
        if (k == 1 && !strcmp(o->backends[1], o->backends[0])) continue;
        if (k == defer) continue; /* asked by its prestart (cd_session_prestart) */
        const cd_backend_def *def = cd_backend_lookup(o->backends[k]);
        if (!def) continue;
        cd_backend_opts bo = cd_session_backend_opts(o, o->prec);
        cd_runner_req q = {.backend = def->name,
                           .plan = &s->plan,
                           .bo = &bo,
                           .model_path = o->model,
                           .model_sha256 = s->sha256,
                           .work_dir = o->out_dir,
                           .timeout_s = o->timeout_s,
                           .quiet = o->quiet};
        cd_status st = cd_backend_available(def, &q, err);
        if (st) return st;
    }
    return CD_OK;
}

cd_status cd_session_open(cd_session *s, const cd_cli_opts *o, cd_error *err) {
    return cd_session_open_defer(s, o, -1, err);
}

cd_status cd_session_open_defer(cd_session *s, const cd_cli_opts *o, int defer, cd_error *err) {
    memset(s, 0, sizeof *s);
    s->o = o;
    cd_status st = cd_model_load(o->model, &s->g, err);
    /* MNN ops that map onto nothing of cldiff's op table: MNN's engines run them (planned from
     * MNN's shapes below, compared and named unchecked); cldiff's own backends cannot */
    bool mnn_only = o->n_backends > 0;
    for (int k = 0; k < o->n_backends; k++) mnn_only = mnn_only && !strncmp(o->backends[k], "mnn-", 4);
    if (!st && !mnn_only) st = cd_mnn_check_runnable(s->g, err);
    if (st) return st;
    for (const char *w = s->g->warnings; !o->quiet && w && *w;) {
        const char *nl = strchr(w, '\n');
        int len = nl ? (int)(nl - w) : (int)strlen(w);
        fprintf(stderr, "cldiff: warning: %.*s\n", len, w);
        w = nl ? nl + 1 : w + len;
    }
    snprintf(s->model_format, sizeof s->model_format, "paddle-lite nb meta %d, opt %s", s->g->meta_version,
             s->g->opt_version[0] ? s->g->opt_version : "(none)");
    if ((st = cd_sha256_file(o->model, s->sha256, err))) return st;
    s->in_shapes = calloc((size_t)(s->g->n_inputs ? s->g->n_inputs : 1), sizeof *s->in_shapes);
    if (!s->in_shapes) return cd_err(err, CD_E_NOMEM, "out of memory");
    char notice[512] = "";
    st = cd_inputs_resolve_shapes(s->g, o->shapes, o->n_shapes, o->inputs, o->n_inputs, s->in_shapes, notice,
                                  sizeof notice, err);
    if (st) return st;
    if (notice[0] && !o->quiet) fprintf(stderr, "cldiff: note: %s\n", notice);
    char override[512];
    if ((st = cd_inputs_check_declared(s->g, o->shapes, o->n_shapes, s->in_shapes, override, sizeof override, err)))
        return st;
    if (mnn_only && cd_mnn_unmapped_ops(s->g)) {
        cd_backend_opts bo = cd_session_backend_opts(o, o->prec);
        const char *sdk = cd_backend_opt(&bo, "mnn-cpu", "sdk");
        if (!sdk || !*sdk) sdk = cd_backend_opt(&bo, "mnn-opencl", "sdk");
        if ((st = cd_mnn_shape_pass(s->g, o->model, s->in_shapes, sdk, o->timeout_s, o->quiet, err))) return st;
    }
    if ((st = cd_plan_build(s->g, s->in_shapes, o->prec, &s->plan, err))) {
        if (override[0] && st != CD_E_NOMEM) return cd_inputs_override_failed(override, err);
        /* a --shape too large for a kernel is the option's fault, not an unsupported op */
        if (st == CD_E_UNSUPPORTED && o->n_shapes && strstr(err->msg, "exceed")) {
            char m[CD_ERR_MSG];
            snprintf(m, sizeof m, "%s", err->msg);
            st = cd_err(err, CD_E_USAGE, "--shape %s%s is too large for this model: %s; use a smaller --shape",
                        o->shapes[0], o->n_shapes > 1 ? " (and the others)" : "", m);
        }
        return st;
    }
    s->have_plan = true;
    if (override[0] && !o->quiet)
        fprintf(stderr,
                "cldiff: note: %s; the model plans at that size (a fixed dim overridden, as Paddle-Lite's "
                "Resize allows)\n",
                override);
    if (s->plan.int8_dequantized) {
        /* Labelled everywhere the model format appears (dump root, every report). */
        size_t l = strlen(s->model_format);
        cd_backend_opts bo = cd_session_backend_opts(o, CD_PREC_FP32);
        bool arm = bo.int8_arm, on_arm = bo.int8_on_arm;
        snprintf(s->model_format + l, sizeof s->model_format - l, "%s",
                 !arm         ? "; int8/int16 weights dequantized by their stored scales (--int8 dequant)"
                     : on_arm ? "; int8 layers: integer arithmetic as Paddle-Lite ARM (--int8 arm), on the CPU side "
                                "and, as Paddle-Lite places them, in the OpenCL run (--int8-placement arm)"
                              : "; int8 layers: CPU integer arithmetic as Paddle-Lite ARM (--int8 arm), OpenCL float "
                                "with dequantized weights (--int8-placement gpu)");
        if (!o->quiet)
            fprintf(stderr, "cldiff: note: %s\n",
                    !arm ? "int8/int16 weights are dequantized by their stored scales and run in float (--int8 "
                           "dequant); activations keep the model's calib ops"
                        : on_arm
                        ? "int8 layers run in integer arithmetic as Paddle-Lite's ARM int8 kernels, in both runs: "
                          "Paddle-Lite keeps them on ARM in an OpenCL model (--int8-placement gpu runs them as "
                          "float OpenCL kernels; --int8 dequant for float everywhere)"
                        : "int8 layers run on the CPU in integer arithmetic as Paddle-Lite's ARM int8 kernels "
                          "(--int8 arm); the OpenCL run computes them in float with dequantized weights "
                          "(--int8-placement gpu)");
    }
    if (o->prec == CD_PREC_FP16) {
        if ((st = cd_plan_build(s->g, s->in_shapes, CD_PREC_FP32, &s->plan32, err))) return st;
        s->have_plan32 = true;
    }
    if ((st = check_memory(s, err))) return st;
    if ((st = check_backends(s, defer, err))) return st;
    cd_input_opts io = {
        .seed = o->seed, .resize = !o->no_resize, .mean = o->mean, .std = o->std, .channel_order = o->channel_order};
    if ((st = cd_inputs_build(s->g, s->in_shapes, o->inputs, o->n_inputs, &io, &s->inputs, err))) return st;
    size_t off = 0;
    for (int k = 0; k < s->inputs.n && off < sizeof s->input_desc; k++) {
        char sh[96];
        off +=
            (size_t)snprintf(s->input_desc + off, sizeof s->input_desc - off, "%s%s: %s %s", k ? "; " : "",
                             s->inputs.names[k], s->inputs.sources[k], cd_shape_str(&s->in_shapes[k], sh, sizeof sh));
    }
    s->mask = calloc((size_t)(s->g->n_ops ? s->g->n_ops : 1), sizeof *s->mask);
    if (!s->mask) return cd_err(err, CD_E_NOMEM, "out of memory");
    if ((st = cd_select_layers_in(s->g, o->model, o->layers, s->mask, &s->n_probed, err))) return st;
    if ((st = check_dump_size(s, err))) return st;
    if ((st = cd_make_dirs(o->out_dir, err))) return st;
    snprintf(s->dump_path, sizeof s->dump_path, "%s/dump.h5", o->out_dir);
    cd_dump_meta meta = {.command_line = o->command_line,
                         .model_path = o->model,
                         .model_sha256 = s->sha256,
                         .model_format = s->model_format,
                         .precision = o->prec == CD_PREC_FP16 ? "fp16" : "fp32",
                         .seed = o->seed,
                         .deflate = o->deflate};
    if ((st = cd_dump_create(s->dump_path, &meta, &s->dump, err))) return st;
    if ((st = cd_dump_write_model(s->dump, s->g, err))) return st;
    if ((st = write_macs(s, err))) return st;
    for (int k = 0; k < s->inputs.n; k++)
        if ((st = cd_dump_write_input(s->dump, s->inputs.names[k], &s->inputs.values[k], s->inputs.sources[k], err)))
            return st;
    return CD_OK;
}

typedef struct progress {
    const char *run;
    int n_ops;
    bool tty;
    double last;
    int pending; /* length of the start line still shown (cleared by the first bar) */
} progress;

/* Tests of interruptions (docs/verdicts.md "Incomplete"): CLDIFF_TEST_SIGNAL_AT=run:RUN:N raises
 * SIGINT on this process once op N of run RUN has run, an interruption at a known point. */
static void test_signal(const char *run, int op_index) {
    const char *e = getenv("CLDIFF_TEST_SIGNAL_AT");
    if (!e || strncmp(e, "run:", 4)) return;
    size_t l = strlen(run);
    if (strncmp(e + 4, run, l) || e[4 + l] != ':' || atoi(e + 5 + l) != op_index) return;
    raise(SIGINT);
}

static void on_op_done(void *user, int op_index, const cd_op_report *rep) {
    (void)rep;
    progress *p = user;
    test_signal(p->run, op_index);
    if (!p->tty) return;
    double t = now_ms();
    if (op_index + 1 < p->n_ops && t - p->last < 100) return;
    p->last = t;
    if (p->pending) fprintf(stderr, "\r%*s", p->pending, "");
    p->pending = 0;
    int width = 30, done = (int)((double)(op_index + 1) * width / (p->n_ops ? p->n_ops : 1));
    fprintf(stderr, "\r  %-7s [", p->run);
    for (int i = 0; i < width; i++) fputc(i < done ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d layers", op_index + 1, p->n_ops);
    if (op_index + 1 >= p->n_ops) fputc('\n', stderr);
    fflush(stderr);
}

/* Begins a dump run and its sink. */
static cd_status open_run(cd_session *s, const char *run, const char *backend, const char *variant, bool cl,
                          const char *int8_mode, int threads, cd_dump_sink **sink, cd_error *err) {
    cd_run_info info = {.backend = backend,
                        .precision = variant,
                        .device = cl ? "" : "host CPU",
                        .platform = "",
                        .driver = "",
                        .library_path = "",
                        .threads = threads};
    cd_status st = cd_dump_begin_run(s->dump, run, &info, err);
    if (st) return st;
    if (s->plan.int8_dequantized) { /* which int8 arithmetic this run used (docs/int8.md) */
        char path[256];
        snprintf(path, sizeof path, "/runs/%s", run);
        bool arm = !cl && !strcmp(variant, "fp32") && cd_session_backend_opts(s->o, CD_PREC_FP32).int8_arm;
        if ((st = cd_dump_set_attr_str(s->dump, path, "int8_mode",
                                       int8_mode ? int8_mode
                                           : arm ? "arm"
                                                 : "dequant",
                                       err)))
            return st;
    }
    return cd_dump_sink_new(s->dump, run, s->g, !strcmp(s->o->dump_mode, "stats") ? CD_SINK_STATS : CD_SINK_FULL, sink,
                            err);
}

static void crash_attrs(cd_session *s, const char *run, const cd_crash_info *c, const cd_plan *plan, cd_error *e2) {
    char path[256], desc[512];
    snprintf(path, sizeof path, "/runs/%s", run);
    cd_crash_describe(c, plan, desc, sizeof desc);
    cd_dump_set_attr_i64(s->dump, path, "crashed", 1, e2);
    cd_dump_set_attr_i64(s->dump, path, "timed_out", c->timed_out, e2);
    cd_dump_set_attr_str(s->dump, path, "crash_message", desc, e2);
    cd_dump_set_attr_str(s->dump, path, "crash_phase", c->phase, e2);
    cd_dump_set_attr_str(s->dump, path, "crash_signal", c->timed_out ? "timeout" : c->signal_name, e2);
    cd_dump_set_attr_i64(s->dump, path, "crash_op_index", c->op_index, e2);
    cd_dump_set_attr_str(s->dump, path, "crash_layer", c->layer, e2);
    cd_dump_set_attr_str(s->dump, path, "crash_kernel", c->kernel, e2);
    cd_dump_set_attr_str(s->dump, path, "crash_variant", c->variant, e2);
}

/* Finishes one dump run: sink summary, device attributes, complete flag. */
static cd_status close_run(cd_session *s, const char *run, cd_dump_sink *sink, const cd_run_result *res, double wall_ms,
                           bool complete, const char *forced_from, int *hits, cd_error *err) {
    cd_error e2 = {0};
    cd_status s2 = cd_dump_sink_finish(sink, &e2);
    if (hits) *hits = cd_dump_sink_count(sink);
    cd_dump_sink_free(sink);
    char path[256];
    snprintf(path, sizeof path, "/runs/%s", run);
    cd_dump_set_attr_str(s->dump, path, "device", res->device, &e2);
    cd_dump_set_attr_str(s->dump, path, "driver", res->driver, &e2);
    if (forced_from) cd_dump_set_attr_str(s->dump, path, "forced_from", forced_from, &e2);
    cd_status s3 = cd_dump_end_run(s->dump, run, wall_ms, complete, err);
    if (s2) {
        *err = e2;
        return s2;
    }
    return s3;
}

/* The attributes an engine reported for its run (/runs/<run>). */
static void write_run_attrs(cd_session *s, const char *run, const cd_runner_result *rr) {
    char path[256];
    cd_error e = {0};
    snprintf(path, sizeof path, "/runs/%s", run);
    for (int i = 0; i < rr->n_attrs; i++) {
        const cd_run_attr *a = &rr->attrs[i];
        if (a->is_num)
            cd_dump_set_attr_f64(s->dump, path, a->key, a->num, &e);
        else
            cd_dump_set_attr_str(s->dump, path, a->key, a->str, &e);
    }
}

static void mark_settled(void *user, int op, const cd_settle_info *info) {
    const cd_run_req *q = user;
    q->settled[op] = true;
    if (q->settled_info && info) q->settled_info[op] = *info;
}

/* The runner's request of run q (its sink and progress are the caller's). */
static void runner_req(cd_session *s, const cd_run_req *q, const cd_plan *plan, int threads, cd_exec_opts *xo,
                       cd_backend_opts *bo, cd_runner_req *rq) {
    *bo = cd_session_backend_opts(s->o, q->prec);
    if (q->no_quant || q->int8_dequant) bo->int8_arm = false;
    bo->no_quant = q->no_quant;
    bo->threads = threads;
    *rq = (cd_runner_req){.backend = cd_backend_lookup(q->backend)->name,
                          .plan = plan,
                          .inputs = s->inputs.values,
                          .xo = xo,
                          .bo = bo,
                          .model_path = s->o->model,
                          .model_sha256 = s->sha256,
                          .work_dir = s->o->out_dir,
                          .timeout_s = s->o->timeout_s,
                          .quiet = s->o->quiet,
                          .run_name = q->local_only ? q->local_run : q->run};
}

/* The exec options of run q, less its sinks. */
static void exec_opts(cd_session *s, const cd_run_req *q, cd_exec_opts *xo) {
    bool local = q->force && q->local_run;
    *xo = (cd_exec_opts){.probe_mask = s->mask,
                         .stop_flag = &cd_stop_flag,
                         .record = q->record,
                         .force = local ? q->force : NULL,
                         .local_only = q->local_only};
    if (local && q->settle && q->settled) {
        xo->settle = q->settle;
        xo->settle_user = q->settle_user;
        xo->on_settled = mark_settled;
        xo->on_settled_user = (void *)q;
    }
}

static const cd_plan *run_plan(cd_session *s, const cd_run_req *q) {
    return q->plan ? q->plan : (q->prec == CD_PREC_FP32 && s->have_plan32) ? &s->plan32 : &s->plan;
}

static int run_threads(cd_session *s, const cd_run_req *q) { return q->threads > 0 ? q->threads : s->o->threads; }

cd_status cd_session_prestart(cd_session *s, const cd_run_req *q, cd_error *err) {
    const cd_backend_def *def = cd_backend_lookup(q->backend);
    if (!def) return cd_err(err, CD_E_USAGE, "unknown backend '%s'", q->backend);
    if (s->pre_handle || !def->prestart) return CD_OK;
    cd_exec_opts xo;
    cd_backend_opts bo;
    cd_runner_req rq;
    exec_opts(s, q, &xo);
    runner_req(s, q, run_plan(s, q), run_threads(s, q), &xo, &bo, &rq);
    cd_status st = def->prestart(&rq, &s->pre_handle, err);
    if (s->pre_handle) {
        s->pre_q = q;
        s->pre_def = def;
    }
    return st;
}

cd_status cd_session_prestart_check(cd_session *s, cd_error *err) {
    if (!s->pre_handle || !s->pre_def->check) return CD_OK;
    bool dropped = false;
    cd_status st = s->pre_def->check(s->pre_handle, &dropped, err);
    if (dropped) s->pre_handle = NULL;
    return st;
}

cd_status cd_session_run_req(cd_session *s, const cd_run_req *q, cd_run_result *res, cd_error *err) {
    memset(res, 0, sizeof *res);
    cd_precision prec = q->prec;
    const cd_plan *plan = run_plan(s, q);
    const cd_backend_def *def = cd_backend_lookup(q->backend);
    if (!def) return cd_err(err, CD_E_USAGE, "unknown backend '%s'", q->backend);
    bool cl = def->opencl;
    snprintf(res->variant, sizeof res->variant, "%s",
             prec == CD_PREC_FP16 ? (cl && s->o->fp16_compute ? "fp16-compute" : "fp16") : "fp32");
    bool free_run = !q->local_only;
    bool local = q->force && q->local_run;
    const char *run = free_run ? q->run : q->local_run;
    cd_dump_sink *sink = NULL, *lsink = NULL;
    cd_status st = CD_OK;
    /* runs that must not use the int8 kernels: the unquantized model, float references */
    const char *i8 = q->no_quant ? "float (unquantized model)" : q->int8_dequant ? "dequant" : NULL;
    int threads = run_threads(s, q);
    if (free_run && (st = open_run(s, q->run, q->backend, res->variant, cl, i8, threads, &sink, err))) return st;
    if (local && (st = open_run(s, q->local_run, q->backend, res->variant, cl, i8, threads, &lsink, err))) {
        if (sink) cd_dump_sink_free(sink);
        return st;
    }
    progress pr = {.run = run,
                   .n_ops = s->g->n_ops,
                   .tty = free_run && !s->o->quiet && (s->o->progress || (isatty(2) && !getenv("CLDIFF_NO_PROGRESS")))};
    if (sink) cd_dump_sink_on_op_done(sink, on_op_done, &pr);
    cd_exec_opts xo;
    exec_opts(s, q, &xo);
    xo.local_sink = lsink ? cd_dump_sink_probe(lsink) : NULL;
    cd_probe_sink *main_sink = sink ? cd_dump_sink_probe(sink) : NULL;
    cd_backend_opts bo;
    cd_runner_req rq;
    runner_req(s, q, plan, threads, &xo, &bo, &rq);
    rq.sink = main_sink;
    rq.progress = pr.tty;
    if (s->pre_handle && q == s->pre_q) { /* the run started ahead (cd_session_prestart) */
        rq.prestart = s->pre_handle;
        s->pre_handle = NULL;
    }
    cd_runner_result *rr = calloc(1, sizeof *rr);
    if (!rr) st = cd_err(err, CD_E_NOMEM, "out of memory");
    double t0 = now_ms();
    if (pr.tty) {
        /* the silent part before the first layer: kernels building, an engine's whole run */
        pr.pending = fprintf(stderr, "  %-7s %s", run,
                             def->opencl          ? "preparing the OpenCL run ..."
                                 : !def->op_by_op ? "the engine runs the whole model, no layer-by-layer progress ..."
                                                  : "preparing ...");
        fflush(stderr);
        if (pr.pending < 0) pr.pending = 0;
    }
    if (!st) st = def->run(&rq, rr, err);
    if (rr) {
        snprintf(res->device, sizeof res->device, "%s", rr->device);
        snprintf(res->driver, sizeof res->driver, "%s", rr->driver);
        res->crash = rr->crash;
        for (int i = 0; i < rr->n_attrs; i++)
            if (!rr->attrs[i].is_num && !strcmp(rr->attrs[i].key, CD_RUN_ATTR_COMPUTE))
                snprintf(res->compute, sizeof res->compute, "%s", rr->attrs[i].str);
        if (free_run) write_run_attrs(s, q->run, rr);
        if (local && !def->op_by_op) {
            char lp[256];
            cd_error e3 = {0};
            snprintf(lp, sizeof lp, "/runs/%s", q->local_run);
            cd_dump_set_attr_str(s->dump, lp, "unavailable",
                                 "local check unavailable: a whole-model engine cannot run one layer on given inputs",
                                 &e3);
        }
    }
    res->wall_ms = now_ms() - t0;
    if (pr.tty) fputc('\n', stderr);
    res->complete = st == CD_OK;
    cd_error e2 = {0};
    cd_status s2 = CD_OK, s3 = CD_OK;
    /* The free run's time excludes the local pass: its layer times carry it (elapsed_us). */
    double local_ms = 0;
    if (lsink) {
        int n = 0;
        s3 = close_run(s, q->local_run, lsink, res, 0, res->complete, q->forced_from, &n, &e2);
        res->n_local_hits = n;
        (void)local_ms;
    }
    if (sink) {
        if (res->crash.crashed) crash_attrs(s, q->run, &res->crash, plan, &e2);
        s2 = close_run(s, q->run, sink, res, res->wall_ms, res->complete, NULL, &res->n_hits, st ? &e2 : err);
    }
    if (rr && rr->has_hits) res->n_hits = rr->n_hits;
    free(rr);
    if (st) return st;
    if (s3) {
        *err = e2;
        return s3;
    }
    return s2;
}

cd_status cd_session_run(cd_session *s, const char *backend, const char *run, cd_precision prec, cd_run_result *res,
                         cd_error *err) {
    cd_run_req q = {.backend = backend, .run = run, .prec = prec};
    return cd_session_run_req(s, &q, res, err);
}

cd_status cd_session_close(cd_session *s, bool complete, cd_error *err) {
    /* a run started ahead and never made (A failed or was interrupted): its child holds the
     * dump's file (and HDF5's lock on it) since the fork */
    if (s->pre_handle) s->pre_def->drop(s->pre_handle);
    s->pre_handle = NULL;
    cd_dump *d = s->dump;
    s->dump = NULL;
    return cd_dump_close(d, complete, err);
}

void cd_session_free(cd_session *s) {
    if (s->pre_handle) s->pre_def->drop(s->pre_handle);
    s->pre_handle = NULL;
    if (s->dump) cd_dump_discard(s->dump);
    if (s->have_plan) cd_plan_free(&s->plan);
    if (s->have_plan32) cd_plan_free(&s->plan32);
    cd_inputs_free(&s->inputs);
    free(s->mask);
    free(s->in_shapes);
    if (s->g) cd_graph_free(s->g);
    memset(s, 0, sizeof *s);
}
