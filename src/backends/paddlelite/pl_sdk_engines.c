/* The Paddle-Lite SDK engines (docs/paddle-lite-engines.md): paddle-lite-arm runs Paddle-Lite's
 * ARM kernels (the armv8 SDK; under qemu-aarch64 on other machines), paddle-lite-opencl its
 * OpenCL kernels (an SDK built with OpenCL for this machine). Both run the model once through
 * probes/paddle-lite/pl_probe_runner, built for the SDK (pl_sdk.h), with every probed tensor
 * fetched, and hand the fetched tensors to the probe sink as if their ops had just run.
 *
 * How the model gets to each engine:
 *   - ARM: the user's ARM .nb, instrumented (probes/instrument.h). A model whose kernels are not
 *     ARM's (an opencl,arm or x86 .nb) goes the OpenCL route with Opt places "arm".
 *   - OpenCL: Paddle-Lite's OpenCL library needs a model optimized for OpenCL places: cldiff
 *     exports the graph as a Paddle program (backends/paddlelite/pd_export.h) with a fetch op for every probed
 *     float tensor, and Opt (the paddlelite wheel, scripts/pl_ocl.py opt) optimizes it for
 *     "x86_opencl" ("opencl,arm" on an aarch64 host; or the places given). What Opt placed where is read back from the optimized
 *     model's kernel records and reported per layer.
 * A run that dies (signal, abort in a Paddle-Lite CHECK) is a finding: the engine is run again on
 * prefixes of the model (pl_search.h: from the runner's trace of the instruction it died in,
 * else in thirds, two prefixes side by side) to find the last layer that completes and the layer
 * that kills it; the prefix's probes are kept. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "backends/paddlelite/pl_phone.h"
#include "backends/paddlelite/pl_priv.h"
#include "backends/paddlelite/pl_sdk.h"
#include "backends/paddlelite/pl_search.h"
#include "engine/backend_def.h"
#include "model/nb_reader.h"
#include "backends/paddlelite/pd_export.h"
#include "util/fsutil.h"
#include "util/npy.h"
#include "util/sha256.h"
#include "util/subproc.h"

extern char **environ;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Copies a file; 0 on success. */
static int copy_file(const char *from, const char *to) {
    FILE *a = fopen(from, "rb");
    if (!a) return -1;
    FILE *b = fopen(to, "wb");
    if (!b) {
        fclose(a);
        return -1;
    }
    char buf[1 << 16];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n) {
            rc = -1;
            break;
        }
    if (ferror(a)) rc = -1;
    fclose(a);
    if (fclose(b) != 0) rc = -1;
    if (rc) remove(to);
    return rc;
}

/* One engine run's state. */
typedef struct eng {
    cd_pl_engine_kind kind;
    const char *name; /* registered backend name */
    const cd_runner_req *q;
    cd_pl_sdk sdk;
    cd_pl_runner runner;
    cd_pl_env env; /* the wheel's Python (Opt), when the route needs it */
    bool have_env;
    bool opt_cached;     /* Opt's output came from the cache */
    bool dequant;        /* int8 weights exported dequantized (OpenCL has no int8 kernels) */
    cd_shape *act_shape; /* inferred activation shapes for the export (owned) */
    bool act_shape_tried;
    char dir[PATH_MAX];    /* work folder */
    char places[128];      /* Opt places ("" : the model as given) */
    char route[600];       /* how the model reached the engine, for the report */
    cd_probe_fetch *fetch; /* fetch col -> op/tensor of the original graph */
    int n_fetch;
    cd_instrumented in; /* the instrumentation route's description (owns fetch) */
    bool have_in;
    char **kernel_of; /* per original op: the kernel Opt chose (OpenCL route) */
    int n_ops;
    int place_count[4]; /* ops Opt put on opencl, arm/x86, host, other */
    double prep_ms, opt_ms, run_ms, load_ms, wall_ms;
    char version[64];
    char device_line[256]; /* "Using device: ..." from the engine's log */
    cd_pl_phone phone;     /* the phone route's qemu, arm64 PoCL sysroot and caches (PHONE) */
    bool opencl_model;     /* the model has OpenCL kernel records: the runner gets --opencl-precision */
    int ok_prefix;         /* the bisection's prefix whose outputs are kept in <dir>/prefix-ok (0: none) */
    int kernels_built;     /* kernels PoCL compiled during the runs (PHONE, OPENCL on PoCL) */
    int programs_built;    /* programs PoCL built during the runs (the same) */
    char unfetched[480];   /* export route: probed ops none of whose outputs it fetches, by design */
    bool skip_2d_shared;   /* export route: 2-D tensors another op reads are not fetched (report M) */
    int n_skipped_2d;
    int crash_hint;     /* the original op of the instruction the whole run died in (-1: not known) */
    int bisect_rounds;  /* rounds of the crash search (one or two prefixes each, side by side) */
    int bisect_hint_ok; /* 1: the runner's trace named the op the search confirmed */
    bool no_opt;        /* export route: no Opt on this machine (the wheel's Python not found) */
} eng;

static void eng_free(eng *e) {
    free(e->act_shape);
    if (e->have_in)
        cd_instrumented_free(&e->in);
    else
        free(e->fetch);
    for (int i = 0; e->kernel_of && i < e->n_ops; i++) free(e->kernel_of[i]);
    free(e->kernel_of);
}

static const char *opt_str(const eng *e, const char *key) { return cd_backend_opt(e->q->bo, e->name, key); }

/* keep=1 or CLDIFF_PL_KEEP: the work folder stays after the run */
static bool keep_work(const eng *e) {
    const char *keep = getenv("CLDIFF_PL_KEEP");
    return (keep && *keep && strcmp(keep, "0")) || (opt_str(e, "keep") && strcmp(opt_str(e, "keep"), "0"));
}

/* Where the work folder goes: the run's staging folder, committed into --out with the run's
 * files (a kept one is found there, `.paddle-lite-<engine>-*`, as scripts/pl_planted.py reads it). */
static const char *work_base(const eng *e) {
    const char *wd = e->q->work_dir;
    return wd && *wd ? wd : "/tmp";
}

/* ---------------------------------------------------------------- the model's routes */

/* The ARM route: the user's .nb instrumented as it is. */
static cd_status route_instrument(eng *e, const cd_graph *g, int n_ops, const char *nb, cd_error *err) {
    const cd_plan *plan = e->q->plan;
    cd_shape *shapes = calloc((size_t)g->n_inputs + 1, sizeof *shapes);
    if (!shapes) return cd_err(err, CD_E_NOMEM, "out of memory");
    for (int k = 0; k < g->n_inputs; k++) shapes[k] = plan->meta[g->inputs[k]].shape;
    char mpath[PATH_MAX + 64];
    cd_graph gg = *g;
    gg.n_ops = n_ops;
    /* a prefix (crash bisection) fetches its probes only: the model's outputs are written later */
    if (n_ops < g->n_ops) gg.n_outputs = 0;
    cd_status st = cd_write_instrumented(&gg, e->q->xo->probe_mask, plan->meta, NULL, e->q->model_path,
                                         e->q->model_sha256, shapes, nb, mpath, sizeof mpath, &e->in, err);
    free(shapes);
    if (st) return st;
    e->have_in = true;
    e->fetch = e->in.fetch;
    e->n_fetch = e->in.n_fetch;
    return CD_OK;
}

/* whether one of the first n_ops ops reads tensor t */
static bool read_by_op(const cd_graph *g, int n_ops, int t) {
    for (int oi = 0; oi < n_ops && oi < g->n_ops; oi++)
        for (int s = 0; s < g->ops[oi].n_in; s++)
            for (int k = 0; k < g->ops[oi].in[s].n; k++)
                if (g->ops[oi].in[s].ids[k] == t) return true;
    return false;
}

/* An Opt started by route_export_opt() and not yet waited for (the crash search optimizes two
 * prefixes side by side). */
typedef struct opt_job {
    bool running;
    cd_subproc sp;
    double t0;
    char nb[PATH_MAX + 32];
    char logp[PATH_MAX + 32];
    char cached[PATH_MAX + 96]; /* where its output goes in the cache ("" : nowhere) */
} opt_job;

/* Waits for a started Opt, says how it ended and puts its output into the cache. */
static cd_status opt_finish(eng *e, opt_job *job, cd_error *err) {
    if (!job->running) return CD_OK;
    job->running = false;
    cd_subproc_result r;
    cd_subproc_wait(&job->sp, NULL, NULL, &r);
    if (r.stopped) return cd_err(err, CD_E_INTERRUPTED, "interrupted while Paddle-Lite ran (%s)", e->env.python);
    int ws = r.wstatus;
    bool to = r.timed_out;
    cd_status st = CD_OK;
    if (to || !WIFEXITED(ws) || WEXITSTATUS(ws)) {
        char tail[1024], how[64];
        cd_pl_log_tail(job->logp, tail, sizeof tail);
        const char *sn = WIFSIGNALED(ws) ? cd_signal_name(WTERMSIG(ws)) : NULL;
        if (to)
            snprintf(how, sizeof how, "timed out");
        else if (WIFSIGNALED(ws))
            snprintf(how, sizeof how, "died with %s", sn ? sn : "a signal");
        else
            snprintf(how, sizeof how, "failed (exit %d)", WEXITSTATUS(ws));
        st = cd_err(err, CD_E_BACKEND,
                    "%s: Paddle-Lite's Opt (paddlelite %s) %s optimizing the exported model for "
                    "places %s (the model cannot run in this engine): %s",
                    e->name, e->env.version, how, e->places, tail[0] ? tail : "no message");
    }
    if (!st && job->cached[0]) {
        /* into the cache: best effort (a read-only cache folder only costs the next run an Opt) */
        char d1[PATH_MAX + 96];
        snprintf(d1, sizeof d1, "%s", job->cached);
        char *sl = strrchr(d1, '/');
        if (sl) {
            *sl = 0;
            char *s2 = strrchr(d1, '/');
            if (s2) {
                *s2 = 0;
                mkdir(d1, 0777);
                *s2 = '/';
            }
            mkdir(d1, 0777);
        }
        char tmp[PATH_MAX + 128];
        snprintf(tmp, sizeof tmp, "%s.%d.tmp", job->cached, (int)getpid());
        if (copy_file(job->nb, tmp) == 0) {
            if (rename(tmp, job->cached) != 0) remove(tmp);
        }
    }
    return st;
}

/* Ends a started Opt whose output is not wanted (nothing goes into the cache). */
static void opt_cancel(opt_job *job) {
    if (!job->running) return;
    job->running = false;
    cd_subproc_kill(&job->sp, SIGKILL);
    cd_subproc_result r;
    cd_subproc_wait(&job->sp, NULL, NULL, &r);
}

/* The export route: the graph's first n_ops as a Paddle program with probed tensors fetched,
 * then Opt for e->places. Model outputs get fetched only when the whole model is exported.
 * slot >= 0 (the crash search): the program goes into export<slot>/, and with job the Opt is
 * only started (job->running; opt_finish() waits for it); else it is waited for here. */
static cd_status route_export_opt(eng *e, const cd_graph *g, int n_ops, const char *nb, int slot, opt_job *job,
                                  cd_error *err) {
    const cd_plan *plan = e->q->plan;
    const bool *mask = e->q->xo->probe_mask;
    char exp[PATH_MAX + 16];
    if (slot >= 0)
        snprintf(exp, sizeof exp, "%s/export%d", e->dir, slot);
    else
        snprintf(exp, sizeof exp, "%s/export", e->dir);
    if (mkdir(exp, 0777) != 0 && errno != EEXIST)
        return cd_err(err, CD_E_IO, "cannot create '%s': %s", exp, strerror(errno));
    cd_graph gg = *g;
    bool whole = n_ops >= g->n_ops;
    gg.n_ops = n_ops;
    if (!whole) gg.n_outputs = 0;
    cd_pd_export_opts o = {0};
    float **pf32 = NULL;
    if (e->dequant) {
        /* Paddle-Lite has no OpenCL int8 kernels: the float program, weights dequantized by their
         * stored scales (the plan holds them), calib ops passing values through */
        pf32 = calloc((size_t)g->n_tensors + 1, sizeof *pf32);
        if (!pf32) return cd_err(err, CD_E_NOMEM, "out of memory");
        for (int t = 0; t < g->n_tensors; t++)
            if (g->tensors[t].persistable && g->tensors[t].dtype != CD_F32 && plan->meta[t].dtype == CD_F32 &&
                plan->meta[t].data)
                pf32[t] = plan->meta[t].data;
        o.param_f32 = pf32;
        o.strip_quant = true;
    }
    cd_dtype *dt = calloc((size_t)g->n_tensors + 1, sizeof *dt);
    int *extra = calloc((size_t)g->n_tensors + 1, sizeof *extra);
    free(e->fetch);
    e->fetch = calloc((size_t)g->n_tensors + (size_t)g->n_outputs + 1, sizeof *e->fetch);
    e->n_fetch = 0;
    e->unfetched[0] = 0;
    e->n_skipped_2d = 0;
    if (!dt || !extra || !e->fetch) {
        free(dt);
        free(extra);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    cd_status st = CD_OK;
    const char *ds = opt_str(e, "declared-shapes");
    if (ds && strcmp(ds, "0")) e->act_shape_tried = true; /* the .nb's declared shapes, as cldiff once did */
    if (!e->act_shape && !e->act_shape_tried) {
        /* declare every activation with cldiff's inferred shape, not the .nb's (reused names carry
         * another tensor's shape, and Opt decides layouts and constant folding from it:
         * docs/paddle-lite-findings.md) */
        cd_shape *in = calloc((size_t)g->n_inputs + 1, sizeof *in);
        if (!in) st = cd_err(err, CD_E_NOMEM, "out of memory");
        for (int k = 0; in && k < g->n_inputs; k++) in[k] = plan->meta[g->inputs[k]].shape;
        char note[512] = "";
        if (!st) st = cd_pd_export_infer_shapes(g, in, &e->act_shape, note, sizeof note, err);
        free(in);
        e->act_shape_tried = true;
        if (!st && note[0] && !e->q->quiet) fprintf(stderr, "cldiff: note: %s: %s\n", e->name, note);
    }
    o.act_shape = e->act_shape;
    if (!st) st = cd_pd_export_dtypes(&gg, &o, dt, err);
    bool *is_out = calloc((size_t)g->n_tensors + 1, 1);
    bool *cst = calloc((size_t)g->n_tensors + 1, 1);
    if (!st && (!is_out || !cst)) st = cd_err(err, CD_E_NOMEM, "out of memory");
    /* constants (outputs of ops that read only parameters and constants) are not fetched: Opt
     * folds them into parameters for OpenCL, and a fetch of a folded one crashes Paddle-Lite's
     * layout op (docs/paddle-lite-findings.md, report C) */
    if (!st) cd_pd_export_constants(g, n_ops, cst);
    for (int j = 0; !st && j < gg.n_outputs; j++) {
        int t = g->outputs[j], p = g->tensors[t].producer;
        is_out[t] = true;
        e->fetch[e->n_fetch++] = (cd_probe_fetch){.col = j,
                                                  .op_index = p,
                                                  .tensor_id = t,
                                                  .model_output = true,
                                                  .probed = p >= 0 && mask && mask[p],
                                                  .dtype = plan->meta[t].dtype,
                                                  .shape = plan->meta[t].shape};
    }
    int n_extra = 0;
    for (int oi = 0; !st && oi < n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        if (mask && !mask[oi]) continue;
        bool skip_op = cd_pd_export_skips_fetch(op->type), fetched = false, any = false;
        for (int s = 0; s < op->n_out; s++) {
            if (cd_exec_training_only(op->type, op->out[s].name)) continue;
            for (int k = 0; k < op->out[s].n; k++) {
                int t = op->out[s].ids[k];
                if (t < 0 || g->tensors[t].persistable) continue;
                any = true;
                if (is_out[t]) fetched = true;
                if (skip_op || is_out[t] || cst[t] || (dt[t] != CD_F32 && dt[t] != CD_F16)) continue;
                if (e->skip_2d_shared && plan->meta[t].shape.rank == 2 && read_by_op(g, n_ops, t)) {
                    e->n_skipped_2d++;
                    continue;
                }
                fetched = true;
                e->fetch[e->n_fetch++] = (cd_probe_fetch){.col = gg.n_outputs + n_extra,
                                                          .op_index = oi,
                                                          .tensor_id = t,
                                                          .probed = true,
                                                          .dtype = plan->meta[t].dtype,
                                                          .shape = plan->meta[t].shape};
                extra[n_extra++] = t;
            }
        }
        /* a constant Opt folds into a parameter, an integer tensor, an op the export does not
         * fetch: the judge does not count the other run's tensor of it as unchecked (the ops
         * reading it are checked on the engine's own values) */
        size_t ul = strlen(e->unfetched);
        if (any && !fetched && ul + 12 < sizeof e->unfetched)
            snprintf(e->unfetched + ul, sizeof e->unfetched - ul, "%s%d", ul ? "," : "", oi);
    }
    o.extra_fetch = extra;
    o.n_extra_fetch = n_extra;
    cd_pd_export_info info;
    memset(&info, 0, sizeof info);
    if (!st) st = cd_pd_export(&gg, &o, exp, &info, err);
    free(dt);
    free(extra);
    free(is_out);
    free(cst);
    free(pf32);
    if (st) return cd_err_prefix(err, "%s: exporting the model for Opt: ", e->name);
    /* Opt's output depends only on the exported program, its parameters and the places: kept in
     * the cache (<cache>/pl-opt/<sha256>.nb), so a repeated run, or a machine without the wheel
     * that got the cache folder, needs no Opt */
    char key[65] = "", cached[PATH_MAX + 96] = "";
    {
        cd_sha256_ctx hc;
        cd_sha256_init(&hc);
        const char *files[] = {"model.pdmodel", "model.pdiparams"};
        for (int i = 0; i < 2 && !st; i++) {
            char fp[PATH_MAX + 32], hex[65];
            snprintf(fp, sizeof fp, "%s/%s", exp, files[i]);
            cd_error e2 = {0};
            if (cd_sha256_file(fp, hex, &e2) == CD_OK) cd_sha256_update(&hc, hex, 64);
        }
        cd_sha256_update(&hc, e->places, strlen(e->places));
        uint8_t dg[32];
        cd_sha256_final(&hc, dg);
        cd_sha256_hex(dg, key);
        char root[PATH_MAX];
        cd_fs_cache_root(root, sizeof root);
        snprintf(cached, sizeof cached, "%s/pl-opt/%s.nb", root, key);
        if (access(cached, R_OK) == 0 && copy_file(cached, nb) == 0) {
            e->opt_cached = true;
            return CD_OK;
        }
    }
    /* Opt, in the wheel's Python */
    if (!e->have_env) {
        if ((st = cd_pl_find(&e->env, err))) {
            e->no_opt = true;
            return cd_err_prefix(
                err, "%s needs Paddle-Lite's Opt (the paddlelite wheel) to optimize the model for %s: ", e->name,
                e->places);
        }
        e->have_env = true;
    }
    char ocl[PATH_MAX];
    if (!cd_pl_find_helper("scripts/pl_ocl.py", ocl, sizeof ocl))
        return cd_err(err, CD_E_BACKEND,
                      "%s: scripts/pl_ocl.py not found next to cldiff, in share/cldiff or in its "
                      "source tree (reinstall cldiff)",
                      e->name);
    opt_job own;
    opt_job *jb = job ? job : &own;
    memset(jb, 0, sizeof *jb);
    if (slot >= 0)
        snprintf(jb->logp, sizeof jb->logp, "%s/opt%d.log", e->dir, slot);
    else
        snprintf(jb->logp, sizeof jb->logp, "%s/opt.log", e->dir);
    snprintf(jb->nb, sizeof jb->nb, "%s", nb);
    snprintf(jb->cached, sizeof jb->cached, "%s", cached);
    char *argv[] = {e->env.python, ocl, "opt", exp, (char *)nb, "--places", e->places, NULL};
    /* its own process group: a timeout or Ctrl-C ends Python's children as well */
    cd_subproc_opts so = {.timeout_s = 600, .stop = e->q->xo->stop_flag, .own_group = true, .log_path = jb->logp};
    int rc = cd_subproc_spawn(&jb->sp, &so, argv, NULL);
    if (rc) return cd_err(err, CD_E_BACKEND, "cannot start %s: %s", argv[0], strerror(rc));
    jb->running = true;
    jb->t0 = now_ms();
    if (job) return CD_OK;
    st = opt_finish(e, jb, err);
    e->opt_ms += now_ms() - jb->t0;
    return st;
}

/* The original op that writes the tensor an exported name stands for: "<name>" or "<name>.cdv<k>"
 * (the k-th tensor of a reused name), also with the ".cdpre" / ".cdact" of an undone fusion; -1:
 * none (a name Opt made, a feed). */
static int orig_producer(const cd_graph *g, const char *name) {
    char want[512];
    snprintf(want, sizeof want, "%s", name);
    char *x = strstr(want, ".cdpre");
    if (!x) x = strstr(want, ".cdact");
    if (x) *x = 0;
    char *v = strstr(want, ".cdv");
    int ver = 0;
    if (v) {
        /* "<name>.cdv<digits>" only: "<name>.cdv3/layout_trans" is a tensor Opt made */
        char *end = NULL;
        ver = (int)strtol(v + 4, &end, 10);
        if (end == v + 4 || *end) return -1;
        *v = 0;
    }
    for (int gt = 0; gt < g->n_tensors; gt++)
        if (g->tensors[gt].version == ver && g->tensors[gt].producer >= 0 && !strcmp(g->tensors[gt].name, want))
            return g->tensors[gt].producer;
    return -1;
}

/* The original op that instruction k of the optimized model nb belongs to (the runner's --trace
 * counts its ops but feed and fetch, in order): the one that writes the same name; for an op Opt
 * inserted (layout, io_copy, calib), the first original op that reads its outputs, else one that
 * reads what it reads (a layout made for that op, which a fetch shares: report M), else the latest
 * original op behind its inputs. -1: not known. */
static int trace_op(const cd_graph *g, const char *nb, int k, char *what, size_t wn) {
    cd_graph *og = NULL;
    cd_error e2 = {0};
    if (k < 0 || cd_nb_load(nb, &og, &e2)) return -1;
    int *own = calloc((size_t)og->n_ops + 1, sizeof *own), *t_op = calloc((size_t)og->n_tensors + 1, sizeof *t_op);
    int j = -1, n_inst = 0, behind = -1, res = -1;
    for (int oi = 0; own && t_op && oi < og->n_ops; oi++) {
        const cd_op *op = &og->ops[oi];
        bool ff = !strcmp(op->type, "feed") || !strcmp(op->type, "fetch");
        if (!ff && n_inst++ == k) j = oi;
        own[oi] = -1;
        for (int s = 0; !ff && s < op->n_out; s++)
            for (int q = 0; q < op->out[s].n && !cd_exec_training_only(op->type, op->out[s].name); q++) {
                int t = op->out[s].ids[q];
                int o = t >= 0 ? orig_producer(g, og->tensors[t].name) : -1;
                if (o > own[oi]) own[oi] = o;
            }
        int bh = -1;
        for (int s = 0; own[oi] < 0 && s < op->n_in; s++)
            for (int q = 0; q < op->in[s].n; q++) {
                int t = op->in[s].ids[q];
                if (t >= 0 && t_op[t] > bh) bh = t_op[t];
            }
        if (oi == j) behind = bh;
        for (int s = 0; s < op->n_out; s++)
            for (int q = 0; q < op->out[s].n; q++)
                if (op->out[s].ids[q] >= 0) t_op[op->out[s].ids[q]] = own[oi] >= 0 ? own[oi] : bh;
    }
    if (j >= 0) snprintf(what, wn, "%s (%s)", og->ops[j].name, og->ops[j].type);
    if (j >= 0 && own[j] >= 0)
        res = own[j];
    else if (j >= 0) {
        const cd_op *op = &og->ops[j];
        /* pass 0: readers of its outputs; pass 1: other readers of its inputs */
        for (int pass = 0; pass < 2 && res < 0; pass++) {
            const cd_slot *sl = pass ? op->in : op->out;
            int ns = pass ? op->n_in : op->n_out;
            for (int r = 0; r < og->n_ops; r++) {
                if (r == j || own[r] < 0 || own[r] < behind) continue;
                const cd_op *ro = &og->ops[r];
                bool reads = false;
                for (int s = 0; s < ro->n_in && !reads; s++)
                    for (int q = 0; q < ro->in[s].n && !reads; q++)
                        for (int a = 0; a < ns && !reads; a++)
                            for (int b = 0; b < sl[a].n && !reads; b++)
                                reads = ro->in[s].ids[q] >= 0 && ro->in[s].ids[q] == sl[a].ids[b];
                if (reads && (res < 0 || own[r] < res)) res = own[r];
            }
        }
        if (res < 0) res = behind;
    }
    free(own);
    free(t_op);
    cd_graph_free(og);
    return res;
}

/* Reads the kernel records of the optimized model back onto the original ops: an optimized op
 * belongs to the original op whose (exported) output name it writes. */
static void read_placement(eng *e, const cd_graph *g, const char *nb) {
    cd_graph *og = NULL;
    cd_error e2 = {0};
    if (cd_nb_load(nb, &og, &e2)) return;
    e->n_ops = g->n_ops;
    e->kernel_of = calloc((size_t)g->n_ops + 1, sizeof *e->kernel_of);
    for (int oi = 0; e->kernel_of && oi < og->n_ops; oi++) {
        const cd_op *op = &og->ops[oi];
        if (!op->kernel.present || cd_pd_export_skips_fetch(op->type)) continue;
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int t = op->out[s].ids[k];
                if (t < 0) continue;
                char want[512];
                snprintf(want, sizeof want, "%s", og->tensors[t].name);
                char *pre = strstr(want, ".cdpre");
                if (pre) *pre = 0;
                /* the original tensor with that exported name: <name> or <name>.cdv<k> */
                char *v = strstr(want, ".cdv");
                int ver = v ? atoi(v + 4) : 0;
                if (v) *v = 0;
                for (int gt = 0; gt < g->n_tensors; gt++) {
                    const cd_tensor *x = &g->tensors[gt];
                    if (x->version != ver || strcmp(x->name, want) || x->producer < 0) continue;
                    int po = x->producer;
                    if (e->kernel_of[po]) break;
                    char kb[160];
                    cd_pl_kernel_str(&op->kernel, kb, sizeof kb);
                    e->kernel_of[po] = strdup(kb);
                    int tg = op->kernel.target;
                    e->place_count[tg == 5 ? 0 : (tg == 4 || tg == 2) ? 1 : tg == 1 ? 2 : 3]++;
                    break;
                }
            }
    }
    cd_graph_free(og);
}

/* ---------------------------------------------------------------- running the runner */

typedef struct run_out {
    bool crashed, timed_out;
    int signal, exit_code;
    char tail[1024];
    char phase[16]; /* "load" / "run" / "" as the runner last said */
} run_out;

static void runner_phase(const char *logp, run_out *ro) {
    FILE *f = fopen(logp, "rb");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "pl_probe_runner: phase ");
        if (p) {
            snprintf(ro->phase, sizeof ro->phase, "%s", p + 23);
            ro->phase[strcspn(ro->phase, " \r\n")] = 0;
        }
    }
    fclose(f);
}

/* The engine's environment: OCL_ICD_VENDORS from --backend-opt NAME:vendors=DIR. */
static char **engine_env(eng *e, char *buf, size_t bn) {
    const char *v = opt_str(e, "vendors");
    /* PoCL compiles each of Paddle-Lite's kernels once instead of once per work-group size,
     * as for cldiff's own OpenCL backend (backend_cl.c): blazeface's first run 80 -> 14
     * kernel compiles, the same tensors bit for bit (docs/benchmarks.md "First runs"); a value
     * the user set is kept */
    bool once = e->kind == CD_PL_ENGINE_OPENCL && !getenv("POCL_WORK_GROUP_SPECIALIZATION");
    /* NVIDIA's driver reports a kernel's fault (an out-of-bounds image write) at a later enqueue
     * unless launches are synchronous: with this, Paddle-Lite's abort names the kernel that faulted
     * (findings reports L and O: fc_image_compute.cc:279 instead of :324); other drivers ignore it */
    bool sync = e->kind == CD_PL_ENGINE_OPENCL && !getenv("CUDA_LAUNCH_BLOCKING");
    if (!v && !once && !sync) return NULL;
    int n = 0;
    while (environ[n]) n++;
    char **env = calloc((size_t)n + 4, sizeof *env);
    if (!env) return NULL;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!v || strncmp(environ[i], "OCL_ICD_VENDORS=", 16)) env[k++] = environ[i];
    if (v) {
        snprintf(buf, bn, "OCL_ICD_VENDORS=%s", v);
        env[k++] = buf;
    }
    if (once) env[k++] = (char *)"POCL_WORK_GROUP_SPECIALIZATION=0";
    if (sync) env[k++] = (char *)"CUDA_LAUNCH_BLOCKING=1";
    return env;
}

/* One start of the runner (the crash search starts two side by side). */
typedef struct runner_job {
    bool running;
    cd_subproc sp;
    char logp[PATH_MAX + 32];
} runner_job;

/* Starts the runner on nb with its outputs into out_dir (emptied first); trace: the file its
 * --trace writes (NULL: none). */
static cd_status runner_start(eng *e, const char *nb, const char *out_dir, const char *trace, runner_job *j,
                              cd_error *err) {
    memset(j, 0, sizeof *j);
    const char *pre[4];
    int np = cd_pl_runner_argv(&e->runner, pre);
    char threads[16];
    snprintf(threads, sizeof threads, "%d", e->q->bo->threads > 0 ? e->q->bo->threads : 1);
    const char *argv[20];
    int n = 0;
    for (int i = 0; i < np; i++) argv[n++] = pre[i];
    argv[n++] = nb;
    argv[n++] = e->dir;
    argv[n++] = out_dir;
    argv[n++] = "--threads";
    argv[n++] = threads;
    if (e->kind == CD_PL_ENGINE_OPENCL || (e->kind == CD_PL_ENGINE_PHONE && e->opencl_model)) {
        argv[n++] = "--opencl-precision";
        argv[n++] = "fp32";
    }
    if (trace) {
        argv[n++] = "--trace";
        argv[n++] = trace;
    }
    if (e->kind == CD_PL_ENGINE_PHONE && np == 4) {
        /* the phone route: qemu -L the arm64 PoCL sysroot (not the cross sysroot of the ARM engine) */
        argv[0] = e->phone.qemu;
        argv[1] = "-L";
        argv[2] = e->phone.sysroot;
    }
    argv[n] = NULL;
    char envbuf[PATH_MAX + 32];
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        return cd_err(err, CD_E_IO, "cannot create '%s': %s", out_dir, strerror(errno));
    /* files of an earlier (prefix) run must not be taken for this run's */
    cd_pl_rm_tree(out_dir);
    if (mkdir(out_dir, 0777) != 0) return cd_err(err, CD_E_IO, "cannot create '%s': %s", out_dir, strerror(errno));
    snprintf(j->logp, sizeof j->logp, "%s/engine.log", out_dir);
    char phone_bufs[3][PATH_MAX * 2];
    char **env =
        e->kind == CD_PL_ENGINE_PHONE ? cd_pl_phone_env(&e->phone, phone_bufs) : engine_env(e, envbuf, sizeof envbuf);
    if (e->kind == CD_PL_ENGINE_PHONE && !env) return cd_err(err, CD_E_NOMEM, "out of memory");
    /* its own process group: a timeout or Ctrl-C ends the whole engine */
    cd_subproc_opts so = {
        .timeout_s = e->q->timeout_s, .stop = e->q->xo->stop_flag, .own_group = true, .log_path = j->logp};
    int rc = cd_subproc_spawn(&j->sp, &so, (char *const *)argv, env);
    free(env);
    if (rc) return cd_err(err, CD_E_BACKEND, "cannot start %s: %s", argv[0], strerror(rc));
    j->running = true;
    return CD_OK;
}

/* Waits for a started runner and says how it ended. */
static cd_status runner_finish(eng *e, runner_job *j, run_out *ro, cd_error *err) {
    memset(ro, 0, sizeof *ro);
    if (!j->running) return cd_err(err, CD_E_BACKEND, "%s: the runner was not started", e->name);
    j->running = false;
    cd_subproc_result r;
    cd_subproc_wait(&j->sp, NULL, NULL, &r);
    int ws = r.wstatus;
    cd_pl_log_tail(j->logp, ro->tail, sizeof ro->tail);
    runner_phase(j->logp, ro);
    FILE *f = fopen(j->logp, "rb");
    char line[1024];
    while (f && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Using device: ");
        if (p) {
            snprintf(e->device_line, sizeof e->device_line, "%s", p + 14);
            e->device_line[strcspn(e->device_line, "\r\n")] = 0;
        }
    }
    if (f) fclose(f);
    if (r.stopped) return cd_err(err, CD_E_INTERRUPTED, "interrupted while Paddle-Lite ran (%s)", e->runner.exe);
    if (r.timed_out) {
        ro->crashed = ro->timed_out = true;
        return CD_OK;
    }
    if (WIFSIGNALED(ws)) {
        ro->crashed = true;
        ro->signal = WTERMSIG(ws);
        return CD_OK;
    }
    ro->exit_code = WEXITSTATUS(ws);
    /* qemu reports the guest's signal as its own exit status 128+n or dies by it */
    if (ro->exit_code >= 128 + 1 && ro->exit_code <= 128 + 31) {
        ro->crashed = true;
        ro->signal = ro->exit_code - 128;
    }
    return CD_OK;
}

/* The count of PoCL's compiles while runners run: the phone's arm64 PoCL, or the host's PoCL for
 * the OpenCL engine (when another driver runs it, nothing appears). */
static cd_pl_progress *runner_progress_start(eng *e) {
    char hostk[PATH_MAX];
    if (e->kind == CD_PL_ENGINE_OPENCL) cd_pl_host_kcache(hostk, sizeof hostk);
    if (e->kind == CD_PL_ENGINE_PHONE)
        return cd_pl_progress_start(e->name, e->phone.kcache, "under qemu-aarch64", e->q->quiet);
    if (e->kind == CD_PL_ENGINE_OPENCL && hostk[0]) return cd_pl_progress_start(e->name, hostk, "on PoCL", e->q->quiet);
    return NULL;
}

static void runner_progress_stop(eng *e, cd_pl_progress *prog) {
    if (!prog) return;
    int progs = 0;
    e->kernels_built += cd_pl_progress_stop(prog, &progs);
    e->programs_built += progs;
}

static cd_status run_runner(eng *e, const char *nb, const char *out_dir, const char *trace, run_out *ro,
                            cd_error *err) {
    memset(ro, 0, sizeof *ro);
    cd_pl_progress *prog = runner_progress_start(e);
    runner_job j;
    double t0 = now_ms();
    cd_status st = runner_start(e, nb, out_dir, trace, &j, err);
    if (!st) st = runner_finish(e, &j, ro, err);
    e->wall_ms += now_ms() - t0;
    runner_progress_stop(e, prog);
    return st;
}

static void read_run_txt(eng *e, const char *out_dir) {
    char p[PATH_MAX + 32], line[1024];
    snprintf(p, sizeof p, "%s/run.txt", out_dir);
    FILE *f = fopen(p, "rb");
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!strncmp(line, "version ", 8))
            snprintf(e->version, sizeof e->version, "%s", line + 8);
        else if (!strncmp(line, "run_ms ", 7))
            e->run_ms = atof(line + 7);
        else if (!strncmp(line, "load_ms ", 8))
            e->load_ms = atof(line + 8);
    }
    if (f) fclose(f);
}

/* Writes the model (prefix of n_ops ops: the whole model when n_ops == g->n_ops) for the engine. */
static cd_status make_model(eng *e, int n_ops, const char *nb, cd_error *err) {
    const cd_graph *g = e->q->plan->g;
    if (e->have_in) {
        cd_instrumented_free(&e->in);
        e->have_in = false;
        e->fetch = NULL;
    }
    return e->places[0] ? route_export_opt(e, g, n_ops, nb, -1, NULL, err) : route_instrument(e, g, n_ops, nb, err);
}

/* ---------------------------------------------------------------- finding the op a crash is at */

/* The last instruction the runner's --trace says it started (-1: none). */
static int trace_last(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char line[64];
    int last = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "op ", 3)) last = atoi(line + 3);
    fclose(f);
    return last;
}

/* Makes the prefix models of a round: the export route exports each and starts their Opts side
 * by side (made[i] false: that one could not be made; *err says why). */
static cd_status round_models(eng *e, const int *p, int np, char nbs[][PATH_MAX + 32], bool *made, cd_error *err) {
    const cd_graph *g = e->q->plan->g;
    opt_job jobs[2];
    memset(jobs, 0, sizeof jobs);
    cd_status first = CD_OK;
    double t0 = now_ms();
    for (int i = 0; i < np; i++) {
        cd_error e2 = {0};
        snprintf(nbs[i], sizeof nbs[i], "%s/prefix%d.nb", e->dir, i);
        cd_status st;
        if (e->places[0])
            st = route_export_opt(e, g, p[i], nbs[i], i, &jobs[i], &e2);
        else
            st = make_model(e, p[i], nbs[i], &e2);
        made[i] = !st;
        if (st && !first) first = cd_err(err, st, "%s", e2.msg);
    }
    for (int i = 0; i < np; i++) {
        cd_error e2 = {0};
        cd_status st = opt_finish(e, &jobs[i], &e2);
        if (st) made[i] = false;
        if (st && !first) first = cd_err(err, st, "%s", e2.msg);
    }
    if (e->places[0]) e->opt_ms += now_ms() - t0; /* wall time: the Opts ran side by side */
    return first;
}

/* A crashed run: the largest prefix of the model that runs (search above). *last_ok: ops
 * [0, last_ok) completed in a run of their own; the op at last_ok is the first one whose prefix
 * dies (-1: not found, e.g. a prefix died for another reason). */
static cd_status bisect_crash(eng *e, int hint, int *last_ok, int *tries, cd_error *err) {
    const cd_graph *g = e->q->plan->g;
    cd_pl_search s;
    cd_pl_search_init(&s, g->n_ops, hint);
    *last_ok = -1;
    *tries = 0;
    e->ok_prefix = 0;
    bool dbg = getenv("CLDIFF_PL_DEBUG") != NULL;
    const char *mode_name[] = {"trace", "thirds", "halves", "-"};
    int p[2];
    for (int np; (np = cd_pl_search_probes(&s, p)) > 0;) {
        char nbs[2][PATH_MAX + 32], ods[2][PATH_MAX + 32];
        bool made[2] = {false, false}, runs[2] = {false, false};
        cd_error e2 = {0};
        cd_status st = round_models(e, p, np, nbs, made, &e2);
        if (st == CD_E_INTERRUPTED) return cd_err(err, st, "%s", e2.msg);
        if (!made[0] || (np == 2 && !made[1])) {
            if (dbg)
                fprintf(stderr, "cldiff: %s search (%s): a prefix cannot be made: %s\n", e->name, mode_name[s.mode],
                        e2.msg);
            /* no Opt here: the prefixes of the next mode (a cache filled for them); Opt failing on
             * a prefix: the halving search, which leaves the op unknown at its first such prefix */
            if (e->no_opt ? !cd_pl_search_fallback(&s) : s.start == CD_PL_SEARCH_HALVES) return CD_OK;
            if (!e->no_opt) cd_pl_search_restart(&s, CD_PL_SEARCH_HALVES);
            continue;
        }
        runner_job jobs[2];
        run_out ro[2];
        memset(jobs, 0, sizeof jobs);
        memset(ro, 0, sizeof ro);
        cd_pl_progress *prog = runner_progress_start(e);
        double t0 = now_ms();
        for (int i = 0; i < np && !st; i++) {
            snprintf(ods[i], sizeof ods[i], "%s/prefix%d", e->dir, i);
            st = runner_start(e, nbs[i], ods[i], NULL, &jobs[i], &e2);
            if (st)
                for (int k = 0; k < i; k++) cd_subproc_kill(&jobs[k].sp, SIGKILL); /* reaped below */
            else
                (*tries)++;
        }
        /* every started runner is waited for, whatever the other one did */
        for (int i = 0; i < np; i++) {
            if (!jobs[i].running) continue;
            cd_error e3 = {0};
            cd_status fs = runner_finish(e, &jobs[i], &ro[i], &e3);
            if (fs && !st) st = cd_err(&e2, fs, "%s", e3.msg);
        }
        e->wall_ms += now_ms() - t0;
        runner_progress_stop(e, prog);
        e->bisect_rounds++;
        if (st == CD_E_INTERRUPTED) return cd_err(err, st, "%s", e2.msg);
        for (int i = 0; i < np && dbg; i++)
            fprintf(stderr, "cldiff: %s search (%s, round %d): ops 0-%d: %s%s\n", e->name, mode_name[s.mode],
                    e->bisect_rounds, p[i] - 1,
                    st                    ? e2.msg
                        : ro[i].crashed   ? "dies"
                        : ro[i].exit_code ? "fails: "
                                          : "runs",
                    st || !ro[i].exit_code ? "" : ro[i].tail);
        if (st) return CD_OK; /* a runner that cannot start: leave it unknown */
        for (int i = 0; i < np; i++) {
            if (!ro[i].crashed && ro[i].exit_code) return CD_OK; /* it failed otherwise: unknown */
            runs[i] = !ro[i].crashed;
        }
        cd_pl_search_update(&s, p, runs, np);
        /* the outputs of the largest prefix that ran so far: kept, so that the run after the
         * search need not run it again */
        for (int i = np - 1; i >= 0; i--)
            if (runs[i] && p[i] == s.lo && p[i] != e->ok_prefix) {
                char okd[PATH_MAX + 32];
                snprintf(okd, sizeof okd, "%s/prefix-ok", e->dir);
                cd_pl_rm_tree(okd);
                e->ok_prefix = rename(ods[i], okd) == 0 ? p[i] : 0;
                break;
            }
    }
    if (s.mode == CD_PL_SEARCH_NONE || s.hi - s.lo > 1) return CD_OK;
    *last_ok = s.lo;
    e->bisect_hint_ok = hint >= 0 && s.lo == hint;
    return CD_OK;
}

/* Paddle-Lite's enum names (lite/api/paddle_place.h), as its kernel registration names them:
 * REGISTER_LITE_KERNEL defines touch_<op><kTarget><kPrecision><kLayout><alias>() */
static const char *k_target[] = {"kUnk",
                                 "kHost",
                                 "kX86",
                                 "kCUDA",
                                 "kARM",
                                 "kOpenCL",
                                 "kAny",
                                 "kFPGA",
                                 "kNPU",
                                 "kXPU",
                                 "kBM",
                                 "kMLU",
                                 "kRKNPU",
                                 "kAPU",
                                 "kHuaweiAscendNPU",
                                 "kImaginationNNA",
                                 "kIntelFPGA",
                                 "kMetal",
                                 "kNNAdapter"};
static const char *k_precision[] = {"kUnk",  "kFloat", "kInt8",  "kInt32", "kAny", "kFP16",
                                    "kBool", "kInt64", "kInt16", "kUInt8", "kFP64"};
static const char *k_layout[] = {"kUnk",           "kNCHW",        "kAny",     "kNHWC",
                                 "kImageDefault",  "kImageFolder", "kImageNW", "kMetalTexture2DArray",
                                 "kMetalTexture2D"};

/* index of name among cldiff's names of that enum (cd_target_name ...), -1 when none */
static int enum_of(const char *name, size_t len, const char *(*fn)(int), int n) {
    for (int i = 0; i < n; i++)
        if (strlen(fn(i)) == len && !strncmp(fn(i), name, len)) return i;
    return -1;
}

/* Whether the library (its bytes: lib, n) registers the kernel of a kernel record written
 * "alias/target/precision/layout" (cd_pl_kernel_str) for op type: 1 yes, 0 no, -1 unknown. */
static int lib_has_kernel(const char *lib, size_t n, const char *type, const char *rec) {
    const char *p[4];
    size_t l[4];
    const char *s = rec;
    for (int i = 0; i < 4; i++) {
        p[i] = s;
        l[i] = strcspn(s, "/");
        if (i < 3 && s[l[i]] != '/') return -1;
        s += l[i] + 1;
    }
    int t = enum_of(p[1], l[1], cd_target_name, (int)(sizeof k_target / sizeof *k_target));
    int pr = enum_of(p[2], l[2], cd_precision_name, (int)(sizeof k_precision / sizeof *k_precision));
    int la = enum_of(p[3], l[3], cd_layout_name, (int)(sizeof k_layout / sizeof *k_layout));
    if (t < 0 || pr < 0 || la < 0) return -1;
    char sym[256];
    int sl = snprintf(sym, sizeof sym, "touch_%s%s%s%s%.*sv", type, k_target[t], k_precision[pr], k_layout[la],
                      (int)l[0], p[0]);
    if (sl <= 0 || (size_t)sl >= sizeof sym) return -1;
    for (const char *q = lib; q && (size_t)(q - lib) + (size_t)sl <= n;) {
        if (!memcmp(q, sym, (size_t)sl)) return 1;
        q = memchr(q + 1, 't', n - (size_t)(q + 1 - lib));
    }
    return 0;
}

/* What Paddle-Lite's own log says it lacks when it cannot load a model (lite/core/program.cc: "we
 * can not create operator 'X'", "operator 'X' is not supported by Paddle-Lite", "can not create
 * kernel for 'X'", "kernel for 'X' is not supported"): the op of type X it stops at (-1: none
 * said, or no such op), what ("operator" / "kernel") and Paddle-Lite's sentence.
 * Paddle-Lite names only the op type; the first
 * op of that type whose kernel record (what Opt picked: kernel_of) the library does not register
 * is the one, else the first op of the type. Opt can pick kernels of a target the library was not
 * built for (places "opencl" bring an ARM fallback: docs/paddle-lite-findings.md, report N). */
static int missing_from_log(const char *logp, const cd_graph *g, char *const *kernel_of, const char *libp, char *what,
                            size_t wn, char *said, size_t sn) {
    static const struct {
        const char *pre, *what;
    } pat[] = {{"can not create operator '", "operator"},
               {"because operator '", "operator"},
               {"can not create kernel for '", "kernel"},
               {"because kernel for '", "kernel"}};
    FILE *f = fopen(logp, "rb");
    if (!f) return -1;
    char line[1024];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        for (size_t i = 0; i < sizeof pat / sizeof *pat && found < 0; i++) {
            const char *p = strstr(line, pat[i].pre);
            if (!p) continue;
            p += strlen(pat[i].pre);
            char type[64];
            size_t l = strcspn(p, "'");
            if (!l || l >= sizeof type || p[l] != '\'') continue;
            snprintf(type, sizeof type, "%.*s", (int)l, p);
            for (int k = 0; k < g->n_ops && found < 0; k++)
                if (!strcmp(g->ops[k].type, type)) found = k;
            if (found >= 0 && kernel_of && !strcmp(pat[i].what, "kernel") && libp && libp[0]) {
                FILE *lf = fopen(libp, "rb");
                long ln = -1;
                char *lib = NULL;
                if (lf && !fseek(lf, 0, SEEK_END) && (ln = ftell(lf)) > 0 && !fseek(lf, 0, SEEK_SET) &&
                    (lib = malloc((size_t)ln)) && fread(lib, 1, (size_t)ln, lf) != (size_t)ln) {
                    free(lib);
                    lib = NULL;
                }
                if (lf) fclose(lf);
                for (int k = found; lib && k < g->n_ops; k++)
                    if (!strcmp(g->ops[k].type, type) && kernel_of[k] &&
                        lib_has_kernel(lib, (size_t)ln, type, kernel_of[k]) == 0) {
                        found = k;
                        break;
                    }
                free(lib);
            }
            if (found >= 0) {
                snprintf(what, wn, "%s", pat[i].what);
                line[strcspn(line, "\r\n")] = 0;
                const char *s = line;
                while (*s == ' ' || *s == '\t') s++;
                snprintf(said, sn, "%s", s);
                size_t sl = strlen(said);
                while (sl && said[sl - 1] == '.') said[--sl] = 0;
            }
        }
    }
    fclose(f);
    return found;
}

/* How the model reaches the engine: Opt places (OpenCL always; ARM only for a model whose kernel
 * records are not ARM's, or when the user names places), and whether int8 weights go dequantized. */
static void choose_route(eng *e, const char *target) {
    const char *pl = opt_str(e, "places");
    if (e->kind == CD_PL_ENGINE_OPENCL)
        /* the OpenCL library is built for this machine. Opt's "opencl" brings an ARM fallback
         * that comes before "x86"'s places: every op Opt moves off OpenCL (5-D tensors, reduce
         * without keep_dim, ...) would get an ARM kernel, which an x86 library lacks (report N);
         * "x86_opencl" is Opt's target for an x86 OpenCL library, with the x86 fallback */
        snprintf(e->places, sizeof e->places, "%s",
                 pl                                          ? pl
                     : !strcmp(cd_fs_host_arch(), "aarch64") ? "opencl,arm"
                                                             : "x86_opencl");
    else if (pl)
        snprintf(e->places, sizeof e->places, "%s", pl);
    else if (e->kind == CD_PL_ENGINE_PHONE)
        e->places[0] = 0; /* the phone's library runs the .nb as it is: opencl,arm, arm, ... */
    else if (strcmp(target, "arm"))
        snprintf(e->places, sizeof e->places, "arm");
    e->dequant = e->kind == CD_PL_ENGINE_OPENCL && e->q->plan->int8_dequantized;
}

/* ---------------------------------------------------------------- the runner interface */

static cd_status check_fp16(eng *e, cd_error *err) {
    if (e->q->plan->prec != CD_PREC_FP16) return CD_OK;
    if (e->kind == CD_PL_ENGINE_PHONE)
        return cd_err(
            err, CD_E_BACKEND,
            "%s --fp16: the phone route's OpenCL device is Debian's arm64 PoCL 3.1, which has no "
            "cl_khr_fp16, and Paddle-Lite aborts on CL_PRECISION_FP16 without it (\"unsupported precision "
            "for opencl\"); its ARM kernels compute in the precision the model's kernel records name: run --fp32",
            e->name);
    if (e->kind == CD_PL_ENGINE_OPENCL)
        return cd_err(err, CD_E_BACKEND,
                      "%s --fp16: Paddle-Lite's OpenCL fp16 (CL_PRECISION_FP16) needs a device with "
                      "cl_khr_fp16, and cldiff runs it in fp32 only: PoCL and NVIDIA's OpenCL offer no cl_khr_fp16, "
                      "where Paddle-Lite aborts on CL_PRECISION_FP16; run --fp32",
                      e->name);
    return cd_err(err, CD_E_BACKEND,
                  "%s --fp16: Paddle-Lite's ARM kernels compute in the precision the model's kernel "
                  "records name (fp32 for this model); run --fp32",
                  e->name);
}

static cd_status eng_run(cd_pl_engine_kind kind, const char *name, const cd_runner_req *q, cd_runner_result *res,
                         cd_error *err) {
    if (q->xo->local_only) return CD_OK; /* a whole-model engine has no local pass */
    eng *e = calloc(1, sizeof *e);
    if (!e) return cd_err(err, CD_E_NOMEM, "out of memory");
    e->kind = kind;
    e->name = name;
    e->q = q;
    e->crash_hint = -1;
    const cd_graph *g = q->plan->g;
    double t0 = now_ms();
    cd_status st = check_fp16(e, err);
    if (!st) st = cd_pl_sdk_find(kind, opt_str(e, "sdk"), &e->sdk, err);
    if (!st) st = cd_pl_runner_get(&e->sdk, &e->runner, err);
    if (!st && kind == CD_PL_ENGINE_PHONE) st = cd_pl_phone_find(opt_str(e, "sysroot"), &e->phone, err);
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].kernel.present && g->ops[i].kernel.target == 5) e->opencl_model = true;
    const char *target = cd_pl_model_target(g);
    if (!st) {
        choose_route(e, target);
        if (e->dequant && !q->quiet)
            fprintf(stderr,
                    "cldiff: note: %s: Paddle-Lite has no OpenCL int8 kernels (an opencl,arm model keeps int8 "
                    "layers on ARM, which this library lacks): the model's float program runs, int8 weights "
                    "dequantized by their scales; its local check is against the CPU's float path\n",
                    name);
        snprintf(e->dir, sizeof e->dir, "%s/.%s-XXXXXX", work_base(e), name);
        if (!mkdtemp(e->dir)) st = cd_err(err, CD_E_IO, "cannot create a work folder %s: %s", e->dir, strerror(errno));
    }
    char nb[PATH_MAX + 32], p[PATH_MAX + 64];
    snprintf(nb, sizeof nb, "%s/model.nb", e->dir);
    const char *f2 = opt_str(e, "fetch-2d-shared");
    e->skip_2d_shared = f2 && !strcmp(f2, "0");
    if (!st) st = make_model(e, g->n_ops, nb, err);
    if (!st && e->places[0]) read_placement(e, g, nb);
    const char *pfx = getenv("CLDIFF_PL_OPT_PREFIXES");
    if (!st && e->places[0] && pfx && *pfx) {
        /* fills the Opt cache with prefixes of the model, so that a machine without the wheel
         * can bisect a crash (docs/paddle-lite-engines.md, "Another machine"): every prefix
         * ("1", "all"), or those the bisection of bisect_crash() runs when the crash is at one
         * of the ops listed (names or #indices: "fc_0,#91") */
        char pnb[PATH_MAX + 32];
        snprintf(pnb, sizeof pnb, "%s/prefix.nb", e->dir);
        bool all = !strcmp(pfx, "1") || !strcmp(pfx, "all");
        char *want = calloc((size_t)g->n_ops + 1, 1);
        if (!want) st = cd_err(err, CD_E_NOMEM, "out of memory");
        for (const char *p = pfx; want && !all && *p;) {
            size_t l = strcspn(p, ",");
            int c = -1;
            if (*p == '#')
                c = atoi(p + 1);
            else
                for (int k = 0; k < g->n_ops && c < 0; k++)
                    if (strlen(g->ops[k].name) == l && !strncmp(g->ops[k].name, p, l)) c = k;
            /* the search's prefixes when prefix c runs and c + 1 dies: those of a trace that names
             * op c, and those of the search in thirds, which a trace that names another op falls
             * back on when its prefixes are not in the cache */
            if (c >= 0 && c < g->n_ops) {
                cd_pl_search_mark(g->n_ops, CD_PL_SEARCH_HINT, c, want);
                cd_pl_search_mark(g->n_ops, CD_PL_SEARCH_THIRDS, c, want);
                want[c] = 1; /* the largest prefix that runs, run again */
            }
            p += l + (p[l] == ',');
        }
        for (int k = 1; want && k < g->n_ops && !st; k++) {
            if (!all && !want[k]) continue;
            cd_error e2 = {0};
            cd_status ps = make_model(e, k, pnb, &e2);
            if (ps == CD_E_INTERRUPTED) st = cd_err(err, ps, "%s", e2.msg);
        }
        free(want);
        if (!st) st = make_model(e, g->n_ops, nb, err); /* the fetch list of the whole model again */
    }
    for (int k = 0; k < g->n_inputs && !st; k++) {
        snprintf(p, sizeof p, "%s/input_%d.npy", e->dir, k);
        st = cd_npy_write(p, &q->inputs[k], err);
    }
    e->prep_ms = now_ms() - t0;
    run_out ro = {0};
    char od[PATH_MAX + 32];
    snprintf(od, sizeof od, "%s/out", e->dir);
    /* the runner's trace: the instruction a run that dies was in (a crash is then found in one
     * round of the search instead of log2(ops) runs) */
    char trace[PATH_MAX + 48];
    snprintf(trace, sizeof trace, "%s/trace.txt", e->dir);
    /* the model without the 2-D fetches report M aborts on (below), optimized while the engine
     * runs, so that a run that aborts so runs again at once; where no such tensor is fetched the
     * program is the model's own, whose Opt output the cache holds: nothing runs. Only with cores
     * to spare: on two, Opt slowed the engine's first run (PoCL compiling) as much as it saved
     * (deep_v3_35_int8 cold: the OpenCL engine 18.7 and 23.0 s against 14.1 and 15.0 s without) */
    opt_job spec;
    memset(&spec, 0, sizeof spec);
    bool m_route = e->places[0] && !e->skip_2d_shared && !(f2 && !strcmp(f2, "force"));
    if (!st && m_route && sysconf(_SC_NPROCESSORS_ONLN) >= 4) {
        cd_probe_fetch *keep_fetch = e->fetch;
        int keep_n = e->n_fetch, keep_sk = e->n_skipped_2d;
        bool keep_cached = e->opt_cached;
        char keep_unf[sizeof e->unfetched], snb[PATH_MAX + 32];
        memcpy(keep_unf, e->unfetched, sizeof keep_unf);
        e->fetch = NULL;
        e->skip_2d_shared = true;
        snprintf(snb, sizeof snb, "%s/model-2d.nb", e->dir);
        cd_error e2 = {0};
        if (route_export_opt(e, g, g->n_ops, snb, 2, &spec, &e2)) opt_cancel(&spec);
        free(e->fetch);
        e->fetch = keep_fetch;
        e->n_fetch = keep_n;
        e->n_skipped_2d = keep_sk;
        memcpy(e->unfetched, keep_unf, sizeof keep_unf);
        e->skip_2d_shared = false;
        e->opt_cached = keep_cached;
    }
    if (!st) st = run_runner(e, nb, od, trace, &ro, err);
    bool m_abort = !st && ro.crashed && m_route && strstr(ro.tail, "target_wrapper.cc:278");
    if (m_abort && spec.running) {
        cd_error e2 = {0};
        opt_finish(e, &spec, &e2); /* into the cache: make_model() below finds it there */
        e->opt_ms += now_ms() - spec.t0;
    } else
        opt_cancel(&spec);
    if (m_abort) {
        /* an OpenCL buffer read that fails (CL_INVALID_VALUE, CL_INVALID_MEM_OBJECT): Opt links the
         * fetch of a 2-D tensor that another op reads to that op's image (report M, a Paddle-Lite
         * bug the probes trigger). Once more without fetching such tensors: their ops are not
         * compared, every other layer is; else the crash is isolated as any other */
        e->skip_2d_shared = true;
        run_out r2 = {0};
        cd_error e2 = {0};
        bool ok = !make_model(e, g->n_ops, nb, &e2) && e->n_skipped_2d > 0 && !run_runner(e, nb, od, NULL, &r2, &e2) &&
            !r2.crashed && !r2.exit_code;
        if (ok) {
            char first[sizeof ro.tail];
            snprintf(first, sizeof first, "%s", ro.tail);
            ro = r2;
            const char *ce = strstr(first, "OpenCL error with code ");
            if (!q->quiet)
                fprintf(stderr,
                        "cldiff: note: %s: Paddle-Lite aborted in an OpenCL buffer read (target_wrapper.cc:278%s%.*s) "
                        "when 2-D tensors that another op reads were fetched (Opt's layout cast: "
                        "docs/paddle-lite-findings.md, report M); it ran without fetching those %d tensor(s): their "
                        "layers are not compared\n",
                        name, ce ? ", " : "", ce ? (int)strcspn(ce + 23, " ") + 23 : 0, ce ? ce : "", e->n_skipped_2d);
            cd_run_attr_str(res, "engine_first_abort", "%s", first);
            cd_run_attr_num(res, "engine_2d_fetches_skipped", e->n_skipped_2d);
        } else {
            e->skip_2d_shared = false;
            cd_error e3 = {0};
            if (make_model(e, g->n_ops, nb, &e3)) e->n_fetch = 0;
        }
    }
    if (!st && !ro.crashed && ro.exit_code)
        st = cd_err(err,
                    ro.exit_code == 3       ? CD_E_MODEL
                        : ro.exit_code == 2 ? CD_E_USAGE
                                            : CD_E_BACKEND,
                    "%s: Paddle-Lite's runner failed (exit %d): %s", name, ro.exit_code,
                    ro.tail[0] ? ro.tail : "no message");
    if (!st && !ro.crashed) {
        read_run_txt(e, od);
        cd_pl_collect_req cq = {.plan = q->plan,
                                .fetch = e->fetch,
                                .n_fetch = e->n_fetch,
                                .dir = od,
                                .inputs = q->inputs,
                                .record = q->xo->record,
                                .sink = q->sink,
                                .kernel_of = (const char *const *)e->kernel_of,
                                .partial = true,
                                .model_kernels = !e->places[0]};
        int nm = 0, nd = 0;
        st = cd_pl_collect(&cq, &res->n_hits, &nm, &nd, err);
        cd_run_attr_num(res, "shape_differs_from_plan", nm);
        cd_run_attr_num(res, "fetches_unavailable", cq.n_missing);
        if (cq.n_missing && !q->quiet)
            fprintf(stderr,
                    "cldiff: note: %s: %d fetched tensors had no host data (Paddle-Lite kept them on the "
                    "device); those layers are not compared\n",
                    name, cq.n_missing);
        cd_run_attr_num(res, "int8_dequantized", nd);
    } else if (!st && ro.crashed) {
        /* the finding: where it dies */
        int last_ok = -1, tries = 0;
        char phase[16], lacks[16] = "", said[600] = "", logp[PATH_MAX + 48];
        snprintf(phase, sizeof phase, "%s", ro.phase);
        /* Paddle-Lite's own word first: a library without the op or its kernel says which one
         * (the first op of that type is where loading stops); else bisection over prefixes,
         * which works in the load phase as in the run */
        snprintf(logp, sizeof logp, "%s/engine.log", od);
        int named = !strcmp(phase, "load") || !phase[0]
            ? missing_from_log(logp, g, e->kernel_of, e->sdk.lib, lacks, sizeof lacks, said, sizeof said)
            : -1;
        if (named >= 0)
            last_ok = named;
        else {
            /* the trace's last instruction, as the original op it belongs to: the hint of the search */
            int k = !strcmp(phase, "run") ? trace_last(trace) : -1;
            char what[160] = "?";
            e->crash_hint = k >= 0 && e->places[0] ? trace_op(g, nb, k, what, sizeof what) : -1;
            if (getenv("CLDIFF_PL_DEBUG"))
                fprintf(stderr, "cldiff: %s: the runner's trace: instruction %d, Opt's %s, op #%d\n", name, k, what,
                        e->crash_hint);
            cd_status bs = bisect_crash(e, e->crash_hint, &last_ok, &tries, err);
            if (bs == CD_E_INTERRUPTED) st = bs;
        }
        int fail_op = last_ok >= 0 && last_ok < g->n_ops ? last_ok : -1;
        /* skip ops that write nothing the engine runs (feed) */
        cd_crash_info *c = &res->crash;
        c->crashed = true;
        c->timed_out = ro.timed_out;
        c->signal = ro.signal;
        const char *sn = ro.signal ? cd_signal_name(ro.signal) : NULL;
        snprintf(c->signal_name, sizeof c->signal_name, "%s", ro.timed_out ? "timeout" : sn ? sn : "?");
        c->exit_status = -1;
        c->op_index = fail_op;
        if (fail_op >= 0) {
            snprintf(c->layer, sizeof c->layer, "%s", g->ops[fail_op].name);
            snprintf(c->op_type, sizeof c->op_type, "%s", g->ops[fail_op].type);
            if (e->kernel_of && e->kernel_of[fail_op])
                snprintf(c->kernel, sizeof c->kernel, "%s", e->kernel_of[fail_op]);
            else if (!e->places[0] && g->ops[fail_op].kernel.present)
                cd_pl_kernel_str(&g->ops[fail_op].kernel, c->kernel, sizeof c->kernel);
        }
        snprintf(c->variant, sizeof c->variant, "fp32");
        snprintf(c->phase, sizeof c->phase, "engine-%s", phase[0] ? phase : "run");
        c->ops_done = last_ok > 0 ? last_ok : 0;
        snprintf(c->stderr_tail, sizeof c->stderr_tail, "%s", ro.tail);
        /* the probes that made it out: the largest prefix that ran */
        if (!st && last_ok > 0) {
            char pnb[PATH_MAX + 32], pod[PATH_MAX + 32];
            snprintf(pnb, sizeof pnb, "%s/prefix.nb", e->dir);
            snprintf(pod, sizeof pod, "%s/prefix", e->dir);
            cd_error e2 = {0};
            run_out r2;
            /* the bisection kept that prefix's outputs (the model is made again all the same: the
             * fetched tensors are read by its fetch list; Opt's output is in the cache) */
            bool kept = e->ok_prefix == last_ok;
            if (kept) snprintf(pod, sizeof pod, "%s/prefix-ok", e->dir);
            if (!make_model(e, last_ok, pnb, &e2) &&
                (kept || (!run_runner(e, pnb, pod, NULL, &r2, &e2) && !r2.crashed && !r2.exit_code))) {
                cd_pl_collect_req cq = {.plan = q->plan,
                                        .fetch = e->fetch,
                                        .n_fetch = e->n_fetch,
                                        .dir = pod,
                                        .inputs = q->inputs,
                                        .record = NULL,
                                        .sink = q->sink,
                                        .kernel_of = (const char *const *)e->kernel_of,
                                        .partial = true,
                                        .model_kernels = !e->places[0]};
                int nm = 0, nd = 0;
                if (cd_pl_collect(&cq, &res->n_hits, &nm, &nd, &e2)) res->n_hits = 0;
            }
        }
        c->hits = res->n_hits;
        if (!st) {
            char where[1200] = "";
            bool load = !strcmp(phase, "load");
            /* the op's first activation input and its shape: what the kernel was picked for (a
             * parameter such as a conv's Bias says nothing about that) */
            char shp[160] = "";
            if (fail_op >= 0) {
                const cd_op *fo = &g->ops[fail_op];
                for (int s = 0; s < fo->n_in && !shp[0]; s++)
                    if (fo->in[s].n > 0 && fo->in[s].ids[0] >= 0 && !g->tensors[fo->in[s].ids[0]].persistable) {
                        char sb[128];
                        snprintf(shp, sizeof shp, ", %s %s", fo->in[s].name,
                                 cd_shape_str(&q->plan->meta[fo->in[s].ids[0]].shape, sb, sizeof sb));
                    }
            }
            /* a kernel Opt picked for a CPU target this library was not built for */
            const char *kt = strchr(c->kernel, '/');
            char foreign[16] = "";
            if (kt && !strcmp(lacks, "kernel") && e->places[0])
                snprintf(foreign, sizeof foreign, "%.*s", (int)strcspn(kt + 1, "/"), kt + 1);
            bool cross = (!strcmp(foreign, "arm") && strcmp(e->sdk.arch, "aarch64")) ||
                (!strcmp(foreign, "x86") && !strcmp(e->sdk.arch, "aarch64"));
            if (fail_op >= 0 && named >= 0 && cross)
                snprintf(where, sizeof where,
                         ": Opt (places %s) gave op #%d %s (%s%s) the %s kernel %s, and this %s Paddle-Lite library "
                         "has no %s kernels; Paddle-Lite said: %s. Use places for this library's CPU "
                         "(--backend-opt %s:places=%s)",
                         e->places, fail_op, c->layer, c->op_type, shp, foreign, c->kernel, e->sdk.arch, foreign, said,
                         name, strcmp(e->sdk.arch, "aarch64") ? "x86_opencl" : "opencl,arm");
            else if (fail_op >= 0 && named >= 0)
                snprintf(where, sizeof where,
                         ": this Paddle-Lite library has no %s for '%s', first needed by op #%d %s (%s%s%s%s); "
                         "Paddle-Lite said: %s. Use a library built with it (with_extra, or the %s for this "
                         "target), or a model without it",
                         lacks, c->op_type, fail_op, c->layer, c->op_type, shp, c->kernel[0] ? ", kernel record " : "",
                         c->kernel, said, lacks);
            else if (fail_op >= 0 && load)
                snprintf(where, sizeof where,
                         " at op #%d %s (%s%s%s), the first op whose model prefix does not load (ops 0-%d load and "
                         "run; %d bisection runs): this library lacks the op or its kernel, or cannot read its "
                         "attributes (Paddle-Lite gave no message)",
                         fail_op, c->layer, c->op_type, c->kernel[0] ? ", kernel record " : "", c->kernel, fail_op - 1,
                         tries);
            else if (fail_op >= 0)
                snprintf(where, sizeof where,
                         " at op #%d %s (%s%s%s), the first op whose model prefix dies (ops 0-%d "
                         "run; %d bisection runs)",
                         fail_op, c->layer, c->op_type, c->kernel[0] ? ", kernel " : "", c->kernel, fail_op - 1, tries);
            else
                snprintf(where, sizeof where, " (the failing op could not be isolated: %d bisection runs)", tries);
            st = cd_err(err, CD_E_CRASH, "%s: Paddle-Lite %s%s in its %s%s: %s", name,
                        ro.timed_out ? "timed out (--timeout)" : "died with ", ro.timed_out ? "" : c->signal_name,
                        phase[0] ? phase : "run", where, ro.tail[0] ? ro.tail : "no message");
        }
    }
    /* what ran, for the dump and the reports */
    snprintf(
        res->device, sizeof res->device, "Paddle-Lite %s, %s kernels%s%s", e->version[0] ? e->version : "(version ?)",
        kind == CD_PL_ENGINE_ARM         ? "ARM"
            : kind == CD_PL_ENGINE_PHONE ? (e->opencl_model ? "armv8 ARM + OpenCL (the phone's library)" : "armv8 ARM")
                                         : "OpenCL",
        e->device_line[0] ? " on " : "", e->device_line);
    if (kind == CD_PL_ENGINE_PHONE) {
        size_t dl = strlen(res->device);
        snprintf(res->device + dl, sizeof res->device - dl, "%s",
                 e->opencl_model ? " (arm64 PoCL under qemu)" : " (qemu)");
        cd_run_attr_str(res, "engine_sysroot", "%s", e->phone.sysroot);
    }
    char hostk[PATH_MAX] = "";
    if (kind == CD_PL_ENGINE_OPENCL) cd_pl_host_kcache(hostk, sizeof hostk);
    if (kind == CD_PL_ENGINE_PHONE || hostk[0]) {
        /* what PoCL compiled of Paddle-Lite's kernels in this run; 0: all from its cache */
        cd_run_attr_str(res, "engine_kernel_cache", "%s", kind == CD_PL_ENGINE_PHONE ? e->phone.kcache : hostk);
        cd_run_attr_num(res, "engine_kernels_compiled", e->kernels_built);
        cd_run_attr_num(res, "engine_programs_built", e->programs_built);
    }
    snprintf(res->driver, sizeof res->driver, "SDK %s (%s); runner %s%s%s%s%s", e->sdk.dir, e->sdk.from, e->runner.exe,
             e->runner.launcher[0] ? " under " : "", e->runner.launcher, kind == CD_PL_ENGINE_PHONE ? " -L " : "",
             kind == CD_PL_ENGINE_PHONE ? e->phone.sysroot : "");
    cd_run_attr_str(res, "engine", "%s", name);
    cd_run_attr_str(res, "engine_version", "%s", e->version);
    cd_run_attr_str(res, "engine_sdk", "%s", e->sdk.dir);
    cd_run_attr_str(res, "engine_sdk_from", "%s", e->sdk.from);
    cd_run_attr_str(res, "engine_runner", "%s%s%s", e->runner.launcher, e->runner.launcher[0] ? " " : "",
                    e->runner.exe);
    cd_run_attr_str(res, "engine_precision", "%s", e->dequant ? "fp32 (int8 weights dequantized)" : "fp32");
    if (e->places[0])
        snprintf(e->route, sizeof e->route,
                 "cldiff export (probed tensors fetched%s) + Opt places %s (%s%s%s%s): %d ops on "
                 "opencl, %d on arm/x86, %d on host%s",
                 e->act_shape ? "" : ", declared shapes", e->places,
                 e->opt_cached ? "cached Opt output" : "paddlelite wheel ", e->opt_cached ? "" : e->env.version,
                 e->opt_cached ? "" : ", Python ", e->opt_cached ? "" : e->env.python_version, e->place_count[0],
                 e->place_count[1], e->place_count[2], e->place_count[3] ? ", some elsewhere" : "");
    else
        snprintf(e->route, sizeof e->route,
                 "the model as given (%s kernel records), instrumented: every probed tensor "
                 "fetched",
                 target);
    cd_run_attr_str(res, "engine_route", "%s", e->route);
    cd_run_attr_num(res, "engine_run_ms", e->run_ms);
    cd_run_attr_num(res, "engine_load_ms", e->load_ms);
    cd_run_attr_num(res, "engine_prepare_ms", e->prep_ms);
    cd_run_attr_num(res, "engine_opt_ms", e->opt_ms);
    cd_run_attr_num(res, "engine_wall_ms", e->wall_ms);
    if (e->bisect_rounds) {
        /* the crash search: its rounds, and the op the runner's trace named (-1: none) */
        cd_run_attr_num(res, "engine_search_rounds", e->bisect_rounds);
        cd_run_attr_num(res, "engine_crash_trace_op", e->crash_hint);
    }
    cd_run_attr_num(res, "fetched_tensors", e->n_fetch);
    if (e->unfetched[0]) cd_run_attr_str(res, CD_RUN_ATTR_NOT_FETCHED, "%s", e->unfetched);
    res->has_hits = true;
    if (!q->quiet && !st) fprintf(stderr, "cldiff: note: %s: %s\n", name, e->route);
    if (!q->quiet && !st && (kind == CD_PL_ENGINE_PHONE || hostk[0]) && (e->kernels_built || e->programs_built))
        fprintf(stderr,
                "cldiff: note: %s: PoCL built %d OpenCL program%s and compiled %d kernel%s of Paddle-Lite's in this "
                "run (%.1f s in the engine); kept in PoCL's cache %s: the next run of this model reuses them\n",
                name, e->programs_built, e->programs_built == 1 ? "" : "s", e->kernels_built,
                e->kernels_built == 1 ? "" : "s", e->wall_ms / 1000.0,
                kind == CD_PL_ENGINE_PHONE ? e->phone.kcache : hostk);
    if (keep_work(e))
        fprintf(stderr, "cldiff: %s work folder kept: %s\ncldiff: (it moves into --out with the run's files: %s)\n",
                name, e->dir, strrchr(e->dir, '/') ? strrchr(e->dir, '/') + 1 : e->dir);
    else if (e->dir[0]) {
        char cmd[PATH_MAX + 32];
        /* the folder holds subfolders (export/, out/, prefix/, prefix-ok/): remove them first */
        const char *subs[] = {"export", "export0", "export1", "export2",  "out",
                              "prefix", "prefix0", "prefix1", "prefix-ok"};
        for (int i = 0; i < 9; i++) {
            snprintf(cmd, sizeof cmd, "%s/%s", e->dir, subs[i]);
            cd_pl_rm_tree(cmd);
        }
        cd_pl_rm_tree(e->dir);
    }
    eng_free(e);
    free(e);
    return st;
}

static cd_status arm_run(const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    return eng_run(CD_PL_ENGINE_ARM, "paddle-lite-arm", q, res, err);
}

static cd_status ocl_run(const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    return eng_run(CD_PL_ENGINE_OPENCL, "paddle-lite-opencl", q, res, err);
}

static cd_status phone_run(const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    return eng_run(CD_PL_ENGINE_PHONE, "paddle-lite-phone", q, res, err);
}

/* Where each op runs: ARM from the model's records (or Opt's, for another target); OpenCL from
 * Opt's output for the places (run now: Opt is not a model run). */
static cd_status eng_placement(cd_pl_engine_kind kind, const char *name, const cd_runner_req *q, cd_op_place *out,
                               char *note, size_t nn, cd_error *err) {
    const cd_graph *g = q->plan->g;
    eng *e = calloc(1, sizeof *e);
    if (!e) return cd_err(err, CD_E_NOMEM, "out of memory");
    e->kind = kind;
    e->name = name;
    e->q = q;
    const char *target = cd_pl_model_target(g);
    choose_route(e, target);
    cd_status st = CD_OK;
    if (e->places[0]) {
        snprintf(e->dir, sizeof e->dir, "%s/.%s-XXXXXX", work_base(e), name);
        if (!mkdtemp(e->dir)) st = cd_err(err, CD_E_IO, "cannot create a work folder %s: %s", e->dir, strerror(errno));
        char nb[PATH_MAX + 32];
        snprintf(nb, sizeof nb, "%s/model.nb", e->dir);
        if (!st) st = route_export_opt(e, g, g->n_ops, nb, -1, NULL, err);
        if (!st) read_placement(e, g, nb);
        char sub[PATH_MAX + 16];
        snprintf(sub, sizeof sub, "%s/export", e->dir);
        cd_pl_rm_tree(sub);
        cd_pl_rm_tree(e->dir);
    }
    for (int i = 0; !st && i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        cd_op_place *o = &out[i];
        memset(o, 0, sizeof *o);
        o->supported = true;
        const char *k = e->kernel_of ? e->kernel_of[i] : NULL;
        if (e->places[0] && k) {
            char t[32];
            const char *s1 = strchr(k, '/');
            snprintf(t, sizeof t, "%.*s", s1 ? (int)strcspn(s1 + 1, "/") : 1, s1 ? s1 + 1 : "?");
            snprintf(o->where, sizeof o->where, "%s", t);
            snprintf(o->kernel, sizeof o->kernel, "%s", k);
            snprintf(o->why, sizeof o->why, "Opt (places %s)", e->places);
        } else if (e->places[0]) {
            snprintf(o->where, sizeof o->where, cd_pd_export_skips_fetch(op->type) ? "-" : "?");
            snprintf(o->why, sizeof o->why, "%s",
                     cd_pd_export_skips_fetch(op->type)
                         ? "left out by the export (Opt places copies "
                           "and layouts afresh)"
                         : "no op of the optimized model writes its output (fused or removed by Opt)");
        } else {
            cd_pl_place_by_record(op, o);
        }
    }
    if (!st)
        snprintf(note, nn, "%s: %s", name,
                 e->places[0] ? "Paddle-Lite's Opt places ops when cldiff converts the model "
                                "(export + Opt); kernels as Opt chose them"
                     : kind == CD_PL_ENGINE_PHONE
                     ? "the phone's Paddle-Lite (armv8 + OpenCL) runs the kernels the model's records name"
                     : "Paddle-Lite's ARM kernels as the model's records name them");
    if (!st && e->places[0])
        snprintf(note + strlen(note), nn - strlen(note), " (places %s: %d opencl, %d arm/x86, %d host)", e->places,
                 e->place_count[0], e->place_count[1], e->place_count[2]);
    eng_free(e);
    free(e);
    return st;
}

static cd_status arm_placement(const cd_runner_req *q, cd_op_place *out, char *note, size_t nn, cd_error *err) {
    return eng_placement(CD_PL_ENGINE_ARM, "paddle-lite-arm", q, out, note, nn, err);
}

static cd_status ocl_placement(const cd_runner_req *q, cd_op_place *out, char *note, size_t nn, cd_error *err) {
    return eng_placement(CD_PL_ENGINE_OPENCL, "paddle-lite-opencl", q, out, note, nn, err);
}

static cd_status phone_placement(const cd_runner_req *q, cd_op_place *out, char *note, size_t nn, cd_error *err) {
    return eng_placement(CD_PL_ENGINE_PHONE, "paddle-lite-phone", q, out, note, nn, err);
}

/* Before any run (and for `cldiff doctor`): what eng_run needs before it starts Paddle-Lite.
 * The SDK and its runner (built and cached on first use; qemu-aarch64 and the sysroot for an
 * aarch64 SDK here), fp32, and Opt (the wheel's Python) where the model's route converts it:
 * always for OpenCL, for ARM when the model's kernel records are not ARM's or places are given.
 * Without the wheel, a cache of Opt outputs brought from another machine still serves
 * (docs/paddle-lite-engines.md, "Another machine"). */
static cd_status eng_available(cd_pl_engine_kind kind, const char *name, const cd_runner_req *q, cd_error *err) {
    eng e = {.kind = kind, .name = name, .q = q};
    cd_status st = q->plan ? check_fp16(&e, err) : CD_OK;
    cd_pl_sdk sdk;
    cd_pl_runner runner;
    if (!st) st = cd_pl_sdk_find(kind, opt_str(&e, "sdk"), &sdk, err);
    if (!st) st = cd_pl_runner_get(&sdk, &runner, err);
    if (st) return st;
    if (kind == CD_PL_ENGINE_PHONE) { /* the .nb as given (Opt only for places=), on the arm64 PoCL sysroot */
        cd_pl_phone ph;
        if ((st = cd_pl_phone_find(opt_str(&e, "sysroot"), &ph, err))) return st;
        if (!opt_str(&e, "places")) return CD_OK;
    }
    bool needs_opt = kind == CD_PL_ENGINE_OPENCL || opt_str(&e, "places") ||
        (q->plan && strcmp(cd_pl_model_target(q->plan->g), "arm"));
    if (!needs_opt) return CD_OK;
    cd_pl_env env;
    cd_error e2 = {0};
    if (cd_pl_find(&env, &e2) == CD_OK) return CD_OK;
    char root[PATH_MAX], dir[PATH_MAX + 16];
    cd_fs_cache_root(root, sizeof root); /* the cache Opt's outputs are kept in (pl_sdk.h) */
    snprintf(dir, sizeof dir, "%s/pl-opt", root);
    DIR *d = opendir(dir);
    bool cached = false;
    for (struct dirent *de; d && !cached && (de = readdir(d));) cached = strstr(de->d_name, ".nb") != NULL;
    if (d) closedir(d);
    if (cached) return CD_OK; /* Opt outputs from another machine; a model not among them fails later */
    return cd_err(err, CD_E_BACKEND,
                  "%s needs Paddle-Lite's Opt (the paddlelite wheel) to convert the model, and neither the wheel "
                  "nor a cache of Opt outputs (%s) is here: %s; or copy <cache>/pl-opt/ from a machine with the "
                  "wheel (docs/paddle-lite-engines.md, \"Another machine\")",
                  name, dir, e2.msg);
}

static cd_status arm_available(const cd_runner_req *q, cd_error *err) {
    return eng_available(CD_PL_ENGINE_ARM, "paddle-lite-arm", q, err);
}

static cd_status ocl_available(const cd_runner_req *q, cd_error *err) {
    return eng_available(CD_PL_ENGINE_OPENCL, "paddle-lite-opencl", q, err);
}

static cd_status phone_available(const cd_runner_req *q, cd_error *err) {
    return eng_available(CD_PL_ENGINE_PHONE, "paddle-lite-phone", q, err);
}

static const cd_backend_optdef ARM_OPTS[] = {
    {"sdk", "DIR", "the armv8 Paddle-Lite SDK (include/, lib/); env CLDIFF_PL_ARM_SDK"},
    {"places", "LIST", "convert the model with Opt for these places first (default: the model as given)"},
    {"keep", "0|1", "keep the work folder (instrumented model, inputs, outputs, logs)"},
    {NULL, NULL, NULL},
};

static const cd_backend_optdef OCL_OPTS[] = {
    {"sdk", "DIR", "a Paddle-Lite SDK built with OpenCL for this machine; env CLDIFF_PL_OPENCL_SDK"},
    {"places", "LIST", "Opt's places for the model (default x86_opencl; opencl,arm on aarch64)"},
    {"vendors", "DIR", "OCL_ICD_VENDORS for the engine: Paddle-Lite takes the first OpenCL platform"},
    {"declared-shapes", "0|1",
     "export activations with the .nb's declared shapes instead of inferred ones (shows "
     "what Opt builds from them: docs/paddle-lite-findings.md)"},
    {"keep", "0|1", "keep the work folder (exported and optimized model, inputs, outputs, logs)"},
    {"fetch-2d-shared", "1|0|force",
     "0: do not fetch 2-D tensors that another op reads (1, the default: only on a second run after "
     "Paddle-Lite aborts at target_wrapper.cc:278, docs/paddle-lite-findings.md report M; force: never)"},
    {NULL, NULL, NULL},
};

const cd_backend_def cd_backend_def_paddle_lite_arm = {
    .name = "paddle-lite-arm",
    .summary = "Paddle-Lite's own ARM kernels (armv8 SDK; under qemu-aarch64 on x86-64)",
    .winograd = CD_WINO_PADDLE_ARM,
    .opts = ARM_OPTS,
    .run = arm_run,
    .placement = arm_placement,
    .available = arm_available,
};

const cd_backend_def cd_backend_def_paddle_lite_opencl = {
    .name = "paddle-lite-opencl",
    .summary = "Paddle-Lite's own OpenCL kernels (an SDK with OpenCL; the model converted with Opt for OpenCL)",
    .winograd = CD_WINO_PADDLE_OPENCL,
    .float_int8 = true,
    .opts = OCL_OPTS,
    .run = ocl_run,
    .placement = ocl_placement,
    .available = ocl_available,
};

static const cd_backend_optdef PHONE_OPTS[] = {
    {"sdk", "DIR", "the armv8 Paddle-Lite SDK built with OpenCL (the phone's library); env CLDIFF_PL_PHONE_SDK"},
    {"sysroot", "DIR", "the arm64 PoCL sysroot (scripts/setup_phone.sh); env CLDIFF_PHONE_SYSROOT"},
    {"places", "LIST", "convert the model with Opt for these places first (default: the model as given)"},
    {"keep", "0|1", "keep the work folder (instrumented model, inputs, outputs, logs)"},
    {NULL, NULL, NULL},
};

const cd_backend_def cd_backend_def_paddle_lite_phone = {
    .name = "paddle-lite-phone",
    .summary = "the phone's Paddle-Lite: the armv8 SDK with OpenCL, the .nb as given (opencl,arm, arm), under "
               "qemu-aarch64 on arm64 PoCL",
    /* its convs run on OpenCL (F(2,3) at 32+ channels) or ARM (F(2,3) to F(6,3)): ARM's cover both */
    .winograd = CD_WINO_PADDLE_ARM,
    .opts = PHONE_OPTS,
    .run = phone_run,
    .placement = phone_placement,
    .available = phone_available,
};
