/* The differential run (default command), `cldiff compare` and `cldiff report`:
 * runs are stored in the dump first, then compared from the dump, so every report can be
 * rebuilt later from the dump alone. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/session.h"
#include "compare/dumpcmp.h"
#include "diag/diag.h"
#include "diag/pins.h"
#include "model/nb_writer.h"
#include "util/npy.h"
#include "util/fp16.h"
#include "cli/local.h"
#include "model/extract.h"
#include "report/report.h"

/* ---------------------------------------------------------------- local check */

/* How a side computes (docs/verdicts.md): the CPU's fp16 path rounds every operation to half;
 * OpenCL computes in float on half storage unless it ran the fp16-compute variant. */
static cd_arith side_arith(const char *backend, cd_precision prec, const char *variant) {
    if (prec != CD_PREC_FP16) return (cd_arith){.u = CD_U32, .half_store = false};
    bool half_math = !strcmp(backend, "cpu") || (variant && !strcmp(variant, "fp16-compute"));
    return (cd_arith){.u = half_math ? CD_U16 : CD_U32, .half_store = true};
}

/* The fp16 local reference: the float32 plan with every parameter the fp16 plan keeps in
 * half rounded to half, so it sees exactly the weights B sees. */
static cd_status ref_plan(cd_session *s, cd_plan *out, cd_error *err) {
    cd_status st = cd_plan_build(s->g, s->in_shapes, CD_PREC_FP32, out, err);
    if (st) return st;
    for (int t = 0; t < s->g->n_tensors; t++) {
        cd_value *m = &out->meta[t];
        if (!s->g->tensors[t].persistable || !m->data || m->dtype != CD_F32 || s->plan.meta[t].dtype != CD_F16) continue;
        float *x = m->data;
        for (int64_t i = 0; i < cd_value_numel(m); i++) x[i] = cd_round_half(x[i]);
    }
    return CD_OK;
}

/* ---------------------------------------------------------------- reports */

static void iso_time(char *buf, size_t n) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cd_status write_reports(const cd_cmp_request *q, const cd_analysis *an, const cd_report_env *env,
                               const char *out_dir, bool quiet, cd_error *err) {
    /* Per-channel charts and heatmaps: the first failing layer and the worst (largest
     * relative error) failing layers, up to 4. */
    int pick[4], np = 0;
    if (an->first_fail >= 0) pick[np++] = an->first_fail;
    for (int round = 0; round < 3; round++) {
        int best = -1;
        for (int i = 0; i < an->n_layers; i++) {
            if (an->layers[i].m.pass) continue;
            bool taken = false;
            for (int j = 0; j < np; j++) taken |= pick[j] == i;
            if (!taken && (best < 0 || an->layers[i].rel_err > an->layers[best].rel_err)) best = i;
        }
        if (best >= 0) pick[np++] = best;
    }
    cd_report_detail det[4];
    int nd = 0;
    for (int j = 0; j < np; j++) {
        float *ra = NULL, *rb = NULL;
        if (cd_compare_read_pair(q, &an->layers[pick[j]], &ra, &rb, err) == CD_OK)
            det[nd++] = (cd_report_detail){.layer = pick[j], .ref = ra, .val = rb};
    }
    cd_report_input in = {.env = env, .an = an, .details = det, .n_details = nd};
    cd_status st = cd_report_all(&in, out_dir, err);
    if (!quiet) cd_report_terminal(&in, stdout, isatty(1) && !getenv("NO_COLOR"));
    for (int j = 0; j < nd; j++) { free((void *)det[j].ref); free((void *)det[j].val); }
    return st;
}

static int verdict_code(const cd_analysis *an) {
    if (an->verdict == CD_VERDICT_CRASH) return CD_E_CRASH;
    return an->verdict == CD_VERDICT_FAIL ? CD_E_TOLERANCE : 0;
}

static void policy_desc(const cd_policy *p, char *buf, size_t n) {
    snprintf(buf, n, "%s: atol=%g rtol=%g range_atol=%g min_cos=%g max_fail_fraction=%g%s%s", p->base_source, p->base.atol,
             p->base.rtol, p->base.range_atol, p->base.min_cos, p->base.max_fail_fraction, p->n_rules ? "; rules from " : "",
             p->n_rules ? p->file : "");
}

static cd_status load_policy(const cd_cli_opts *o, cd_precision prec, cd_policy *p, cd_error *err) {
    cd_policy_init(p, prec);
    cd_policy_override(p, o->atol, o->rtol, o->min_cos, o->max_fail_fraction);
    /* "auto" is not a file: the caller sets cd_cmp_request.auto_tol */
    return o->tolerance_file && strcmp(o->tolerance_file, "auto") ? cd_policy_load(p, o->tolerance_file, err) : CD_OK;
}

/* Compares the new run against the same run in a stored dump (regression gate). */
static cd_status baseline_gate(const cd_cli_opts *o, const cd_dump_reader *r, const char *run, const cd_policy *pol,
                               int *n_fail, cd_error *err) {
    cd_dump_reader *rb = NULL;
    cd_status st = cd_dump_open_untrusted(o->baseline, &rb, err);
    if (st) return st;
    const char *brun = cd_dump_find_run(rb, run) >= 0 ? run : (cd_dump_n_runs(rb) ? cd_dump_run_name(rb, 0) : NULL);
    if (!brun) { cd_dump_reader_close(rb); return cd_err(err, CD_E_MODEL, "baseline '%s' holds no runs", o->baseline); }
    cd_cmp_request q = {.ra = rb, .rb = r, .run_a = brun, .run_b = run, .policy = pol, .by_op_index = false,
                        .half_ulps = o->prec == CD_PREC_FP16};
    cd_analysis an;
    cd_cmp_unmatched *um = NULL;
    int nu = 0;
    st = cd_compare_runs(&q, &an, &um, &nu, err);
    if (!st) {
        *n_fail = an.n_fail + nu;
        printf("baseline %s (run %s): %d of %d layers regressed%s", o->baseline, brun, an.n_fail, an.n_layers,
               an.first_fail >= 0 ? ", first " : "");
        if (an.first_fail >= 0) printf("%s", an.layers[an.first_fail].layer);
        if (nu) printf("; %d tensors unmatched", nu);
        printf("\n");
        cd_analysis_free(&an);
    }
    free(um);
    cd_dump_reader_close(rb);
    return st;
}

/* ---------------------------------------------------------------- diagnosis helpers */

/* --repeat: compares every repeat of B with its first run, element by element, exactly:
 * any change marks the layer nondeterministic (a race or an uninitialised read). */
static cd_status merge_repeats(const cd_cmp_request *q0, const char *run_b, int repeat, cd_analysis *an,
                               cd_error *err) {
    cd_policy zero;
    cd_policy_init(&zero, CD_PREC_FP32);
    zero.base = (cd_tol){.atol = 0, .rtol = 0, .max_fail_fraction = 0, .min_cos = 0};
    an->repeat_n = repeat;
    for (int i = 0; i < an->n_layers; i++) an->layers[i].has_repeat = repeat > 1;
    for (int r = 1; r < repeat; r++) {
        char rep[48];
        snprintf(rep, sizeof rep, "%s_rep%d", run_b, r);
        cd_cmp_request q = {.ra = q0->rb, .rb = q0->rb, .run_a = run_b, .run_b = rep, .policy = &zero,
                            .by_op_index = true, .half_ulps = q0->half_ulps};
        cd_analysis ar;
        cd_cmp_unmatched *um = NULL;
        int nu = 0;
        cd_status st = cd_compare_runs(&q, &ar, &um, &nu, err);
        free(um);
        if (st) { cd_policy_free(&zero); return st; }
        for (int j = 0; j < ar.n_layers; j++) {
            const cd_layer_cmp *x = &ar.layers[j];
            for (int i = 0; i < an->n_layers; i++) {
                cd_layer_cmp *l = &an->layers[i];
                if (l->op_index != x->op_index || strcmp(l->tensor, x->tensor)) continue;
                double sp = x->m.nonfinite_mismatch ? INFINITY : x->m.max_abs;
                if (sp > l->spread) l->spread = sp;
                if (x->m.fail_count > l->spread_count) l->spread_count = x->m.fail_count;
                if (sp > 0) l->nondet = true;
                break;
            }
        }
        cd_analysis_free(&ar);
    }
    cd_policy_free(&zero);
    return CD_OK;
}

static void sh_quote(char *buf, size_t n, const char *s) {
    size_t o = strlen(buf);
    if (o + 3 >= n) return;
    bool plain = s[0] != 0;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("_-./=:,@+%", *p))) plain = false;
    if (plain) { snprintf(buf + o, n - o, "%s", s); return; }
    buf[o++] = '\'';
    for (const char *p = s; *p && o + 6 < n; p++) {
        if (*p == '\'') { memcpy(buf + o, "'\\''", 4); o += 4; }
        else buf[o++] = *p;
    }
    buf[o++] = '\'';
    buf[o] = 0;
}

static void cat_arg(char *buf, size_t n, const char *opt, const char *val) {
    size_t o = strlen(buf);
    snprintf(buf + o, n - o, " %s", opt);
    if (val) { o = strlen(buf); snprintf(buf + o, n - o, " "); sh_quote(buf, n, val); }
}

static cd_status write_text(const char *path, const char *text, cd_error *err) {
    FILE *f = fopen(path, "w");
    if (!f) return cd_err(err, CD_E_IO, "cannot write '%s': %s", path, strerror(errno));
    fputs(text, f);
    if (fclose(f) != 0) return cd_err(err, CD_E_IO, "cannot write '%s': %s", path, strerror(errno));
    return CD_OK;
}

/* The repro pack (docs/diagnosis.md): layer.nb with only the failing op, its inputs from
 * backend A, both outputs, the devices, and the command that reproduces the finding. */
static cd_status write_repro(cd_session *s, const cd_dump_reader *r, const char *run_a, const char *run_b,
                             const cd_layer_cmp *l, const cd_analysis *an, const cd_report_env *env, const char *dir,
                             char *cmd_out, size_t cmd_n, cd_error *err) {
    const cd_cli_opts *o = s->o;
    const cd_graph *g = s->g;
    cd_status st = cd_make_dirs(dir, err);
    if (st) return st;
    cd_extracted ex;
    st = cd_graph_extract_op(g, l->op_index, s->plan.meta, &ex, err);
    if (st) return st;
    cd_value *ins = calloc((size_t)ex.n_inputs + 1, sizeof *ins);
    cd_shape *in_shapes = calloc((size_t)ex.n_inputs + 1, sizeof *in_shapes);
    char path[1200], note[256] = "", cmd[4096] = "", readme[8192];
    float *fa = NULL, *fb = NULL;
    if (!ins || !in_shapes) { st = cd_err(err, CD_E_NOMEM, "out of memory"); goto done; }
    snprintf(path, sizeof path, "%s/layer.nb", dir);
    if ((st = cd_nb_write(ex.g, path, err))) goto done;
    if ((st = cd_local_load_inputs(g, &s->plan, r, run_a, &ex, ins, in_shapes, note, sizeof note, err))) goto done;
    if (note[0]) { st = cd_err(err, CD_E_USAGE, "repro pack of %s: %s", l->layer, note); goto done; }
    snprintf(cmd, sizeof cmd, "cldiff layer.nb");
    for (int k = 0; k < ex.n_inputs; k++) {
        char fn[32], spec[600];
        snprintf(fn, sizeof fn, "in%d.npy", k);
        snprintf(path, sizeof path, "%s/%s", dir, fn);
        ins[k].shape = in_shapes[k];
        if ((st = cd_npy_write(path, &ins[k], err))) goto done;
        snprintf(spec, sizeof spec, "%s=%s", g->tensors[ex.src_inputs[k]].name, fn);
        cat_arg(cmd, sizeof cmd, "--input", spec);
    }
    cat_arg(cmd, sizeof cmd, "--layers", "all");
    char be[64];
    snprintf(be, sizeof be, "%s,%s", o->backends[0], o->backends[1]);
    cat_arg(cmd, sizeof cmd, "--backends", be);
    if (o->prec == CD_PREC_FP16) cat_arg(cmd, sizeof cmd, "--fp16", NULL);
    if (o->fp16_compute) cat_arg(cmd, sizeof cmd, "--fp16-compute", NULL);
    if (o->kernel_dir) {
        char abs_[PATH_MAX];
        cat_arg(cmd, sizeof cmd, "--kernel-dir", realpath(o->kernel_dir, abs_) ? abs_ : o->kernel_dir);
    }
    if (o->cl_lib) cat_arg(cmd, sizeof cmd, "--cl-lib", o->cl_lib);
    if (o->cl_platform) cat_arg(cmd, sizeof cmd, "--cl-platform", o->cl_platform);
    if (o->cl_device) cat_arg(cmd, sizeof cmd, "--cl-device", o->cl_device);
    if (o->tolerance_file) {
        char abs_[PATH_MAX];
        cat_arg(cmd, sizeof cmd, "--tolerance", !strcmp(o->tolerance_file, "auto") ? "auto" : realpath(o->tolerance_file, abs_) ? abs_ : o->tolerance_file);
    }
    char num[64];
    if (o->atol >= 0) { snprintf(num, sizeof num, "%.17g", o->atol); cat_arg(cmd, sizeof cmd, "--atol", num); }
    if (o->rtol >= 0) { snprintf(num, sizeof num, "%.17g", o->rtol); cat_arg(cmd, sizeof cmd, "--rtol", num); }
    if (o->min_cos >= 0) { snprintf(num, sizeof num, "%.17g", o->min_cos); cat_arg(cmd, sizeof cmd, "--min-cos", num); }
    if (o->max_fail_fraction >= 0) { snprintf(num, sizeof num, "%.17g", o->max_fail_fraction); cat_arg(cmd, sizeof cmd, "--max-fail-fraction", num); }
    cat_arg(cmd, sizeof cmd, "--no-repro", NULL);
    cat_arg(cmd, sizeof cmd, "--out", "repro-out");
    /* both outputs of the layer as the full run saw them */
    {
        int64_t n1 = 0, n2 = 0;
        if ((st = cd_dump_read_f32(r, run_a, l->dataset_a, &fa, &n1, err))) goto done;
        if ((st = cd_dump_read_f32(r, run_b, l->dataset_b, &fb, &n2, err))) goto done;
        cd_value va = {.dtype = CD_F32, .shape = l->shape, .data = fa, .nbytes = (size_t)n1 * 4};
        cd_value vb = {.dtype = CD_F32, .shape = l->shape, .data = fb, .nbytes = (size_t)n2 * 4};
        snprintf(path, sizeof path, "%s/out_%s.npy", dir, run_a);
        if ((st = cd_npy_write(path, &va, err))) goto done;
        snprintf(path, sizeof path, "%s/out_%s.npy", dir, run_b);
        if ((st = cd_npy_write(path, &vb, err))) goto done;
    }
    snprintf(path, sizeof path, "%s/command.txt", dir);
    {
        char line[4200];
        snprintf(line, sizeof line, "%s\n", cmd);
        if ((st = write_text(path, line, err))) goto done;
    }
    char sh[96];
    snprintf(readme, sizeof readme,
             "# cldiff repro pack: %s (%s, op #%d of %s)\n\n"
             "Finding: layer `%s` is out of tolerance (%s error%s): max |a-b| = %.6g, cosine = %.9f, "
             "%lld of %lld elements out (%s vs %s, %s).\n\n"
             "Reproduce (from this folder):\n\n    %s\n\n"
             "Expected: exit 1 and `%s` named as the first divergence in repro-out/summary.json.\n\n"
             "Files:\n- `layer.nb`: the op alone (params included), inputs declared as model inputs\n"
             "- `in<k>.npy`: its exact inputs as backend %s computed them (float32)\n"
             "- `out_%s.npy`, `out_%s.npy`: the layer's output on both backends in the full run, shape %s\n"
             "- `command.txt`: the command above\n\n"
             "Environment:\n- A: %s: %s %s\n- B: %s: %s %s (%s)\n- model: %s (sha256 %s)\n- cldiff %s: `%s`\n",
             l->layer, l->op_type, l->op_index, env->model_path, l->layer,
             !strcmp(an->first_kind, "local") ? "local" : !strcmp(an->first_kind, "inherited") ? "inherited" : "unclassified",
             !strcmp(an->first_kind, "inherited") ? "; on A's inputs this layer is within tolerance, so the pack may pass" : "",
             l->m.max_abs, l->m.cosine, (long long)l->m.fail_count, (long long)l->m.n, run_a, run_b, env->precision, cmd,
             l->layer, run_a, run_a, run_b, cd_shape_str(&l->shape, sh, sizeof sh), env->backend_a,
             env->device_a ? env->device_a : "", env->driver_a ? env->driver_a : "", env->backend_b,
             env->device_b ? env->device_b : "", env->driver_b ? env->driver_b : "", env->variant_b ? env->variant_b : "",
             env->model_path, env->model_sha256, env->tool_version, env->command_line ? env->command_line : "");
    snprintf(path, sizeof path, "%s/README.md", dir);
    if ((st = write_text(path, readme, err))) goto done;
    snprintf(path, sizeof path, "%s/device.txt", dir);
    snprintf(readme, sizeof readme, "A %s\ndevice_a %s\ndriver_a %s\nB %s\ndevice_b %s\ndriver_b %s\nvariant_b %s\nprecision %s\n",
             env->backend_a, env->device_a ? env->device_a : "", env->driver_a ? env->driver_a : "", env->backend_b,
             env->device_b ? env->device_b : "", env->driver_b ? env->driver_b : "", env->variant_b ? env->variant_b : "",
             env->precision);
    if ((st = write_text(path, readme, err))) goto done;
    snprintf(cmd_out, cmd_n, "%s", cmd);
done:
    free(fa);
    free(fb);
    for (int k = 0; ins && k < ex.n_inputs; k++) cd_value_release(&ins[k]);
    free(ins);
    free(in_shapes);
    cd_graph_free(ex.g);
    return st;
}

/* --inputs: per-layer values of each metric over every input, for worst/mean/p99. */
typedef struct agg_state {
    int n_inputs, cap;
    char (*names)[256];
    int n_layers;
    cd_layer_cmp *proto;        /* layer identities (from the first input) */
    double *v[4];               /* [input * n_layers + layer] */
    bool *fail;
} agg_state;

static double metric_of(const cd_layer_cmp *l, int k) {
    switch (k) {
    case CD_AGG_MAX_ABS: return l->m.max_abs;
    case CD_AGG_REL_ERR: return l->rel_err;
    case CD_AGG_FAIL_FRACTION: return l->m.fail_fraction;
    default: return l->m.cosine;
    }
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static cd_status agg_add(agg_state *g, const char *name, const cd_analysis *an, cd_error *err) {
    if (!g->proto) {
        g->n_layers = an->n_layers;
        g->proto = calloc((size_t)an->n_layers + 1, sizeof *g->proto);
        if (!g->proto) return cd_err(err, CD_E_NOMEM, "out of memory");
        memcpy(g->proto, an->layers, (size_t)an->n_layers * sizeof *g->proto);
    }
    if (g->n_inputs == g->cap) {
        int nc = g->cap ? g->cap * 2 : 16;
        void *p = realloc(g->names, (size_t)nc * sizeof *g->names);
        if (!p) return cd_err(err, CD_E_NOMEM, "out of memory");
        g->names = p;
        for (int k = 0; k < 4; k++) {
            p = realloc(g->v[k], (size_t)nc * (size_t)(g->n_layers + 1) * sizeof(double));
            if (!p) return cd_err(err, CD_E_NOMEM, "out of memory");
            g->v[k] = p;
        }
        p = realloc(g->fail, (size_t)nc * (size_t)(g->n_layers + 1));
        if (!p) return cd_err(err, CD_E_NOMEM, "out of memory");
        g->fail = p;
        g->cap = nc;
    }
    int ii = g->n_inputs++;
    snprintf(g->names[ii], sizeof g->names[ii], "%s", name);
    for (int i = 0; i < g->n_layers; i++) {
        /* match by op index + tensor: every input runs the same model and probes */
        const cd_layer_cmp *l = NULL;
        for (int j = 0; j < an->n_layers && !l; j++)
            if (an->layers[j].op_index == g->proto[i].op_index && !strcmp(an->layers[j].tensor, g->proto[i].tensor))
                l = &an->layers[j];
        for (int k = 0; k < 4; k++) g->v[k][(size_t)ii * (size_t)g->n_layers + (size_t)i] = l ? metric_of(l, k) : NAN;
        g->fail[(size_t)ii * (size_t)g->n_layers + (size_t)i] = l && !l->m.pass;
    }
    return CD_OK;
}

/* Fills the aggregate fields of an (the final, worst input's analysis). */
static void agg_apply(const agg_state *g, cd_analysis *an) {
    double *tmp = malloc((size_t)(g->n_inputs + 1) * sizeof *tmp);
    if (!tmp) return;
    an->n_inputs_run = g->n_inputs;
    for (int i = 0; i < an->n_layers; i++) {
        cd_layer_cmp *l = &an->layers[i];
        int pi = -1;
        for (int j = 0; j < g->n_layers && pi < 0; j++)
            if (g->proto[j].op_index == l->op_index && !strcmp(g->proto[j].tensor, l->tensor)) pi = j;
        if (pi < 0) continue;
        l->n_agg = g->n_inputs;
        l->n_agg_fail = 0;
        double worst_rel = -1;
        for (int ii = 0; ii < g->n_inputs; ii++) {
            size_t at = (size_t)ii * (size_t)g->n_layers + (size_t)pi;
            l->n_agg_fail += g->fail[at];
            double re = g->v[CD_AGG_REL_ERR][at];
            if (!isnan(re) && re > worst_rel) { worst_rel = re; snprintf(l->worst_input, sizeof l->worst_input, "%s", g->names[ii]); }
        }
        for (int k = 0; k < 4; k++) {
            int n = 0;
            double sum = 0;
            for (int ii = 0; ii < g->n_inputs; ii++) {
                double v = g->v[k][(size_t)ii * (size_t)g->n_layers + (size_t)pi];
                if (isnan(v)) continue;
                tmp[n++] = v;
                sum += v;
            }
            if (!n) continue;
            qsort(tmp, (size_t)n, sizeof *tmp, cmp_dbl);
            bool low_is_bad = k == CD_AGG_COSINE;  /* cosine: worst is the smallest */
            l->agg_worst[k] = low_is_bad ? tmp[0] : tmp[n - 1];
            l->agg_mean[k] = sum / n;
            /* p99 by nearest rank on the bad side (p1 for cosine) */
            int rank = (int)ceil(0.99 * n);
            l->agg_p99[k] = low_is_bad ? tmp[n - rank] : tmp[rank - 1];
        }
    }
    free(tmp);
}

static void agg_free(agg_state *g) {
    free(g->names);
    free(g->proto);
    for (int k = 0; k < 4; k++) free(g->v[k]);
    free(g->fail);
    memset(g, 0, sizeof *g);
}

/* ---------------------------------------------------------------- the differential run */

static int compare_and_report(const cd_cli_opts *o, cd_dump_reader *ra, cd_dump_reader *rb, const char *run_a,
                              const char *run_b, cd_dump_reader *rg, bool same);

typedef struct diff_ctx {
    bool collect_only;          /* --inputs pass: run and compare, keep the analysis, no reports */
    cd_analysis *an_out;        /* collect_only: receives the analysis */
    const agg_state *agg;       /* final pass of --inputs */
    const char *worst_input;
} diff_ctx;

static int diff_core(const cd_cli_opts *o, diff_ctx *ctx) {
    cd_install_signal_handlers();
    cd_session s;
    cd_error err = {0};
    cd_policy pol;
    bool auto_tol = o->tolerance_file && !strcmp(o->tolerance_file, "auto");
    cd_policy_init(&pol, o->prec);
    cd_policy_override(&pol, o->atol, o->rtol, o->min_cos, o->max_fail_fraction);
    cd_status st = o->tolerance_file && !auto_tol ? cd_policy_load(&pol, o->tolerance_file, &err) : CD_OK;
    if (st) { cd_policy_free(&pol); return cd_cli_fail(&err); }
    if ((st = cd_session_open(&s, o, &err))) { cd_session_free(&s); cd_policy_free(&pol); return cd_cli_fail(&err); }
    const char *A = o->backends[0], *B = o->backends[1];
    char run_a[32], run_b[32];
    snprintf(run_a, sizeof run_a, "%s", A);
    snprintf(run_b, sizeof run_b, strcmp(A, B) ? "%s" : "%s_b", B);
    if (!o->quiet && !ctx->collect_only)
        printf("cldiff %s: %s (%s), %d ops, %d probed, %s, %s vs %s%s\n", CLDIFF_VERSION, o->model, s.model_format,
               s.g->n_ops, s.n_probed, o->prec == CD_PREC_FP16 ? "fp16" : "fp32", A, B,
               o->repeat > 1 ? ", B repeated" : "");
    cd_run_result ra, rb, rg, rr, rl;
    memset(&rg, 0, sizeof rg);
    memset(&rb, 0, sizeof rb);
    memset(&rl, 0, sizeof rl);
    cd_error eb = {0};
    /* The local check (docs/verdicts.md): A's run records the activations every probed
     * layer reads; B's run then runs each probed layer again on them (run <b>_local). */
    bool local = cd_local_enabled(o);
    cd_forcing *rec = NULL;
    char run_local[48] = "";
    if (local) {
        snprintf(run_local, sizeof run_local, "%s_local", run_b);
        st = cd_forcing_new(o->out_dir, s.g->n_tensors, &rec, &err);
    }
    if (!st) {
        cd_run_req qa = {.backend = A, .run = run_a, .prec = o->prec, .record = rec};
        st = cd_session_run_req(&s, &qa, &ra, &err);
    }
    cd_status stb = CD_OK;
    if (!st) {
        cd_run_req qb = {.backend = B, .run = run_b, .prec = o->prec, .force = rec, .local_run = local ? run_local : NULL,
                         .forced_from = run_a};
        stb = cd_session_run_req(&s, &qb, &rb, &eb);
    }
    bool crashed = stb == CD_E_CRASH;
    double wall_rep = 0;
    for (int r = 1; !st && !stb && r < o->repeat; r++) {
        char rep[48];
        snprintf(rep, sizeof rep, "%s_rep%d", run_b, r);
        stb = cd_session_run(&s, B, rep, o->prec, &rr, &eb);
        wall_rep += rr.wall_ms;
        if (stb == CD_E_CRASH) crashed = true;
    }
    if (!st && (stb == CD_OK || crashed) && o->prec == CD_PREC_FP16) st = cd_session_run(&s, "cpu", "golden", CD_PREC_FP32, &rg, &err);
    if (!st && !stb && local && o->prec == CD_PREC_FP16) {
        /* the fp16 local reference: float32 arithmetic on A's half inputs and half weights */
        cd_plan pref;
        st = ref_plan(&s, &pref, &err);
        if (!st) {
            cd_run_req qr = {.backend = "cpu", .prec = CD_PREC_FP32, .plan = &pref, .force = rec, .local_run = "ref_local",
                             .forced_from = run_a, .local_only = true};
            st = cd_session_run_req(&s, &qr, &rl, &err);
            cd_plan_free(&pref);
        }
    }
    cd_forcing_free(rec);
    rec = NULL;
    if (!st && stb && !crashed) { st = stb; err = eb; }
    if (st) {
        /* Interrupted or a backend failed: keep what was captured, marked incomplete. */
        cd_error e2 = {0};
        bool closed = cd_session_close(&s, false, &e2) == CD_OK;
        if (st == CD_E_INTERRUPTED && closed && ra.complete && !ctx->collect_only) {
            /* Ctrl-C during run B (or the golden run): the reports cover what both runs
             * captured before the stop; the dump says complete=0 and so do the reports'
             * unmatched-tensor notes. */
            cd_dump_reader *rr2 = NULL;
            if (cd_dump_open(s.dump_path, &rr2, &e2) == CD_OK) {
                fprintf(stderr, "cldiff: interrupted during run %s: writing the reports for the layers compared so far\n",
                        run_b);
                compare_and_report(o, rr2, rr2, run_a, run_b, NULL, true);
                cd_dump_reader_close(rr2);
            }
        }
        cd_session_free(&s);
        cd_policy_free(&pol);
        return cd_cli_fail(&err);
    }
    if ((st = cd_session_close(&s, true, &err))) { cd_session_free(&s); cd_policy_free(&pol); return cd_cli_fail(&err); }

    cd_dump_reader *r = NULL;
    if ((st = cd_dump_open(s.dump_path, &r, &err))) { cd_session_free(&s); cd_policy_free(&pol); return cd_cli_fail(&err); }
    const char **outs = calloc((size_t)s.g->n_outputs + 1, sizeof *outs);
    for (int k = 0; outs && k < s.g->n_outputs; k++) outs[k] = s.g->tensors[s.g->outputs[k]].name;
    int64_t *acck = calloc((size_t)s.g->n_ops + 1, sizeof *acck);
    for (int i = 0; acck && i < s.g->n_ops; i++) acck[i] = cd_diag_acc_len(&s.plan, i);
    cd_cmp_request q = {.ra = r, .rb = r, .run_a = run_a, .run_b = run_b, .rg = o->prec == CD_PREC_FP16 ? r : NULL,
                        .run_g = "golden", .policy = &pol, .by_op_index = true, .half_ulps = o->prec == CD_PREC_FP16,
                        .output_tensors = outs, .n_outputs = outs ? s.g->n_outputs : 0, .acc_k = acck,
                        .n_acc_k = acck ? s.g->n_ops : 0, .auto_tol = auto_tol, .fp16 = o->prec == CD_PREC_FP16};
    cd_analysis an;
    memset(&an, 0, sizeof an);
    cd_cmp_unmatched *um = NULL;
    int nu = 0;
    int rc = 0;
    if ((st = cd_compare_runs(&q, &an, &um, &nu, &err))) { rc = cd_cli_fail(&err); goto out; }
    if (o->repeat > 1 && !crashed && (st = merge_repeats(&q, run_b, o->repeat, &an, &err))) { rc = cd_cli_fail(&err); goto out_an; }
    if (crashed) an.verdict = CD_VERDICT_CRASH;
    an.noise_floor = o->prec == CD_PREC_FP16 ? 1e-3 : 1e-6;
    an.auto_tol = auto_tol;
    cd_analyze(&an);
    cd_diag_rank_hazards(&an);
    /* The local check of every layer, then the verdict (docs/verdicts.md). */
    if (local && !crashed && !stb) {
        cd_local_req lq = {.s = &s, .r = r, .run_a = run_a, .run_ref = o->prec == CD_PREC_FP16 ? "ref_local" : run_a,
                           .run_local = run_local, .ref = side_arith(o->prec == CD_PREC_FP16 ? "opencl" : A, o->prec == CD_PREC_FP16 ? CD_PREC_FP32 : o->prec, ra.variant),
                           .b = side_arith(B, o->prec, rb.variant), .policy = &pol, .user_tol = pol.user};
        if (o->prec == CD_PREC_FP16) lq.ref = (cd_arith){.u = CD_U32, .half_store = false};
        cd_status ls = cd_local_check_layers(&lq, &an, &err);
        if (ls) { rc = cd_cli_fail(&err); goto out_an; }
        for (int i = 0; i < an.n_layers; i++) {
            /* the isolation columns of earlier reports are the local check now */
            cd_layer_cmp *l = &an.layers[i];
            l->isolated = l->has_local;
            if (l->has_local) { l->iso = l->loc; l->iso.pass = l->loc_pass; }
        }
    }
    cd_decide_verdict(&an, &pol);
    cd_classify_first(&an);
    if (ctx->collect_only) {
        *ctx->an_out = an;
        memset(&an, 0, sizeof an);
        rc = verdict_code(ctx->an_out);
        goto out;
    }
    if (ctx->agg) {
        agg_apply(ctx->agg, &an);
        snprintf(an.inputs_dir, sizeof an.inputs_dir, "%s", o->inputs_dir ? o->inputs_dir : "");
        snprintf(an.worst_input, sizeof an.worst_input, "%s", ctx->worst_input ? ctx->worst_input : "");
    }
    char pdesc[512];
    policy_desc(&pol, pdesc, sizeof pdesc);
    if (auto_tol)
        snprintf(pdesc, sizeof pdesc, "auto: atol = %g*u*sqrt(K)*rms(ref), rtol = %g*u, u = %s; min_cos=%g max_fail_fraction=%g",
                 CD_AUTO_C, CD_AUTO_C, o->prec == CD_PREC_FP16 ? "2^-11" : "2^-24", pol.base.min_cos, pol.base.max_fail_fraction);
    char created[32], crash_desc[512] = "";
    iso_time(created, sizeof created);
    if (crashed) cd_crash_describe(&rb.crash, &s.plan, crash_desc, sizeof crash_desc);
    cd_report_env env = {.tool_version = CLDIFF_VERSION, .command_line = o->command_line, .model_path = o->model,
                         .model_sha256 = s.sha256, .model_format = s.model_format,
                         .precision = o->prec == CD_PREC_FP16 ? "fp16" : "fp32", .backend_a = A, .backend_b = B,
                         .device_a = ra.device, .driver_a = ra.driver, .device_b = rb.device, .driver_b = rb.driver,
                         .variant_b = rb.variant, .seed = o->seed, .input_desc = s.input_desc, .wall_ms_a = ra.wall_ms,
                         .wall_ms_b = rb.wall_ms, .wall_ms_total = ra.wall_ms + rb.wall_ms + rg.wall_ms + wall_rep,
                         .tolerance_desc = pdesc, .crash = crashed ? crash_desc : NULL, .n_ops = s.g->n_ops,
                         .created = created};
    /* Repro pack of the first failing layer: always with --repro, else on failure. */
    /* the repro pack: of the faulty layer; of the layer that made NaN/Inf; on request, of the
     * first divergence */
    int repro_at = an.kind == CD_KIND_FAULT ? an.first_fault
                   : an.nonfinite_origin >= 0 ? an.nonfinite_origin : o->repro_dir ? an.first_fail : -1;
    if (repro_at >= 0 && !crashed && !o->no_repro) {
        char dir[1100];
        if (o->repro_dir) snprintf(dir, sizeof dir, "%s", o->repro_dir);
        else snprintf(dir, sizeof dir, "%s/repro", o->out_dir);
        cd_error pe = {0};
        char cmd[4096] = "";
        if (write_repro(&s, r, run_a, run_b, &an.layers[repro_at], &an, &env, dir, cmd, sizeof cmd, &pe) == CD_OK) {
            snprintf(an.repro_dir, sizeof an.repro_dir, "%s", dir);
            snprintf(an.repro_cmd, sizeof an.repro_cmd, "cd %s && %s", dir, cmd);
        } else if (!o->quiet) fprintf(stderr, "cldiff: warning: repro pack not written: %s\n", pe.msg);
    }
    cd_dump_reader_close(r);
    r = NULL;
    /* --suggest-pins: float32 CPU pins for failing layers inside the fp16 OpenCL run. */
    if (o->suggest_pins && !crashed) {
        cd_error pe = {0};
        cd_status ps = cd_diag_suggest_pins(&s, &an, &pol, B, &pe);
        if (ps == CD_E_INTERRUPTED) { rc = cd_cli_fail(&pe); goto out_an; }
        if (ps) snprintf(an.pins_note, sizeof an.pins_note, "%s", pe.msg);
    }
    {
        cd_dump *d = NULL;
        cd_error e2 = {0};
        if (cd_dump_open_append(s.dump_path, &d, &e2) == CD_OK) {
            cd_status cs = cd_compare_store(d, run_a, run_b, &an, pdesc, &e2);
            if (!cs && an.local_ran) cs = cd_local_store(d, run_local, &an, &e2);
            cd_dump_close(d, cs == CD_OK, &e2);
        }
        if (e2.code && !o->quiet) fprintf(stderr, "cldiff: warning: comparison table not stored in the dump: %s\n", e2.msg);
    }
    if ((st = cd_dump_open(s.dump_path, &r, &err))) { rc = cd_cli_fail(&err); goto out_an; }
    q.ra = q.rb = r;
    if (q.rg) q.rg = r;
    if ((st = write_reports(&q, &an, &env, o->out_dir, o->quiet, &err))) { rc = cd_cli_fail(&err); goto out_an; }
    for (int i = 0; i < nu && !o->quiet; i++)
        fprintf(stderr, "cldiff: note: tensor '%s' of %s (op #%d) is only in run %s\n", um[i].tensor, um[i].layer,
                um[i].op_index, um[i].side == 'a' ? run_a : run_b);
    rc = verdict_code(&an);
    if (crashed && !o->quiet) fprintf(stderr, "cldiff: %s\n", eb.msg);
    if (o->baseline) {
        int nf = 0;
        cd_error be = {0};
        cd_status bs = baseline_gate(o, r, run_b, &pol, &nf, &be);
        if (bs) rc = cd_cli_fail(&be);
        else if (nf && !rc) rc = CD_E_TOLERANCE;
    }
out_an:
    cd_analysis_free(&an);
out:
    free(um);
    free(outs);
    free(acck);
    if (r) cd_dump_reader_close(r);
    cd_session_free(&s);
    cd_policy_free(&pol);
    return rc;
}

/* --calibrate N: N pairs of runs (A and B at the run's precision, seeds seed..seed+N-1 for
 * random inputs), per-layer worst error times the safety factor, written as a tolerance
 * file (the --tolerance format) that later runs load. */
static int calibrate(const cd_cli_opts *o) {
    cd_cli_opts o2 = *o;
    o2.calibrate = 0;
    o2.no_repro = true;
    o2.isolate_mode = "none";
    o2.quiet = true;
    typedef struct { int op; char layer[128], type[64], tensor[256]; double max_abs, min_cos, rms; } cal;
    cal *c = NULL;
    int nc = 0, rc = 0;
    char work[1100];
    snprintf(work, sizeof work, "%s/calibrate-work", o->out_dir);
    o2.out_dir = work;
    for (int i = 0; i < o->calibrate; i++) {
        o2.seed = o->seed + (uint64_t)i;
        cd_analysis an;
        memset(&an, 0, sizeof an);
        diff_ctx ctx = {.collect_only = true, .an_out = &an};
        if (!o->quiet) fprintf(stderr, "calibrate: run %d/%d (seed %llu)\n", i + 1, o->calibrate, (unsigned long long)o2.seed);
        rc = diff_core(&o2, &ctx);
        if (rc != 0 && rc != CD_E_TOLERANCE) { cd_analysis_free(&an); free(c); return rc; }
        if (!c) { c = calloc((size_t)an.n_layers + 1, sizeof *c); nc = an.n_layers; if (!c) { cd_analysis_free(&an); return CD_E_NOMEM; } }
        for (int j = 0; j < an.n_layers && j < nc; j++) {
            const cd_layer_cmp *l = &an.layers[j];
            if (i == 0) { c[j].op = l->op_index; snprintf(c[j].layer, sizeof c[j].layer, "%s", l->layer);
                          snprintf(c[j].type, sizeof c[j].type, "%s", l->op_type); snprintf(c[j].tensor, sizeof c[j].tensor, "%s", l->tensor);
                          c[j].min_cos = 1; }
            if (l->m.nonfinite_mismatch || l->nf_hard) continue;  /* NaN/Inf is never noise */
            if (l->m.max_abs > c[j].max_abs) c[j].max_abs = l->m.max_abs;
            if (l->m.cosine < c[j].min_cos) c[j].min_cos = l->m.cosine;
            if (l->m.ref_rms > c[j].rms) c[j].rms = l->m.ref_rms;
        }
        cd_analysis_free(&an);
    }
    double S = o->calibrate_safety, u = o->prec == CD_PREC_FP16 ? 4.8828125e-04 : 5.9604644775390625e-08;
    size_t cap = 4096 + (size_t)nc * 400, off = 0;
    char *txt = malloc(cap);
    if (!txt) { free(c); return CD_E_NOMEM; }
    off += (size_t)snprintf(txt + off, cap - off,
                            "# cldiff tolerance file written by --calibrate %d (safety factor %g), %s, %s vs %s\n"
                            "# model %s\n# per layer: atol = %g x worst max|a-b| over the runs (at least %g x u x rms(ref)),\n"
                            "# min_cos = 1 - %g x worst (1 - cosine); load with --tolerance FILE\n",
                            o->calibrate, S, o->prec == CD_PREC_FP16 ? "fp16" : "fp32", o->backends[0], o->backends[1],
                            o->model, S, S, S);
    for (int j = 0; j < nc; j++) {
        /* a layer name is a glob: escape its metacharacters so it matches only itself */
        char pat[300];
        size_t p = 0;
        for (const char *x = c[j].layer; *x && p + 3 < sizeof pat; x++) {
            if (strchr("*?[]\\", *x)) pat[p++] = '\\';
            pat[p++] = *x;
        }
        pat[p] = 0;
        /* 1.0001: the %.6g below must not round the bound under the measured error */
        double atol = 1.0001 * S * c[j].max_abs, floor_ = S * u * c[j].rms;
        if (atol < floor_) atol = floor_;
        if (!(atol > 0)) atol = 1e-30;
        double mc = 1 - S * (1 - c[j].min_cos) - 1e-12;
        if (mc < 0) mc = 0;
        if (off + 400 < cap)
            off += (size_t)snprintf(txt + off, cap - off, "layer:%s atol=%.6g rtol=0 min_cos=%.12g max_fail_fraction=0  # %s #%d %s\n",
                                    pat, atol, mc, c[j].type, c[j].op, c[j].tensor);
    }
    free(c);
    char path[1200];
    snprintf(path, sizeof path, "%s/dump.h5", work);
    unlink(path);
    rmdir(work);
    snprintf(path, sizeof path, "%s/tolerance.txt", o->out_dir);
    cd_error err = {0};
    cd_status st = write_text(path, txt, &err);
    free(txt);
    if (st) return cd_cli_fail(&err);
    if (!o->quiet) printf("calibrated %d layers over %d runs: %s (use --tolerance %s)\n", nc, o->calibrate, path, path);
    return 0;
}

static bool input_file(const char *n) {
    const char *dot = strrchr(n, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".npy") || !strcasecmp(dot, ".h5") || !strcasecmp(dot, ".hdf5"));
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* How bad one input's analysis is: failing layers first, then the largest relative error. */
static double badness(const cd_analysis *an) {
    double worst = 0;
    for (int i = 0; i < an->n_layers; i++) {
        double v = an->layers[i].rel_err;
        if (isnan(v) || isinf(v)) v = 1e30;
        if (v > worst) worst = v;
    }
    return (double)an->n_fail * 1e31 + worst;
}

/* --inputs DIR: every input is run and compared (no reports, tensors dropped after its
 * comparison); the worst input is run again for the full reports, with the per-layer
 * aggregates attached. Memory stays bounded by one input's tensors plus 4 doubles per layer
 * and input. */
static int diff_inputs(const cd_cli_opts *o) {
    cd_error err = {0};
    DIR *d = opendir(o->inputs_dir);
    if (!d) { cd_err(&err, CD_E_USAGE, "--inputs: cannot open folder '%s': %s", o->inputs_dir, strerror(errno)); return cd_cli_fail(&err); }
    char **files = NULL;
    int nf = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !input_file(e->d_name)) continue;
        char **nfp = realloc(files, (size_t)(nf + 1) * sizeof *files);
        if (!nfp) break;
        files = nfp;
        files[nf] = malloc(strlen(o->inputs_dir) + strlen(e->d_name) + 2);
        if (!files[nf]) break;
        sprintf(files[nf], "%s/%s", o->inputs_dir, e->d_name);
        nf++;
    }
    closedir(d);
    if (!nf) {
        free(files);
        cd_err(&err, CD_E_USAGE, "--inputs: folder '%s' holds no .png, .npy or .h5 files", o->inputs_dir);
        return cd_cli_fail(&err);
    }
    qsort(files, (size_t)nf, sizeof *files, name_cmp);
    agg_state agg = {0};
    cd_cli_opts o2 = *o;
    o2.n_inputs = 1;
    o2.no_repro = true;
    o2.suggest_pins = false;  /* the per-run layer progress bar stays on (silent when quiet) */
    o2.isolate_mode = "none";
    char work[1100];
    snprintf(work, sizeof work, "%s/inputs-work", o->out_dir);
    o2.out_dir = work;
    int worst = -1, rc = 0;
    double worst_bad = -1;
    bool tty = !o->quiet && isatty(2) && !getenv("CLDIFF_NO_PROGRESS");
    for (int i = 0; i < nf; i++) {
        o2.inputs[0] = files[i];
        if (!o->quiet) fprintf(stderr, "%sinput %d/%d: %s%s", tty ? "\r\033[K" : "", i + 1, nf, files[i], tty ? "" : "\n");
        cd_analysis an;
        memset(&an, 0, sizeof an);
        diff_ctx ctx = {.collect_only = true, .an_out = &an};
        rc = diff_core(&o2, &ctx);
        if (rc != 0 && rc != CD_E_TOLERANCE) { cd_analysis_free(&an); goto done; }
        const char *base = strrchr(files[i], '/');
        if ((rc = agg_add(&agg, base ? base + 1 : files[i], &an, &err) ? cd_cli_fail(&err) : 0)) { cd_analysis_free(&an); goto done; }
        double b = badness(&an);
        if (b > worst_bad) { worst_bad = b; worst = i; }
        if (!o->quiet)
            fprintf(stderr, "%s  %d of %d layers out of tolerance%s%s\n", tty ? "\r\033[K" : "", an.n_fail, an.n_layers,
                    an.first_fail >= 0 ? ", first " : "", an.first_fail >= 0 ? an.layers[an.first_fail].layer : "");
        cd_analysis_free(&an);
    }
    {
        char p[1200];
        snprintf(p, sizeof p, "%s/dump.h5", work);
        unlink(p);
        rmdir(work);
    }
    /* full reports of the worst input */
    o2 = *o;
    o2.n_inputs = 1;
    o2.inputs[0] = files[worst];
    if (!o->quiet) printf("worst input: %s (of %d); full tensors and reports for it follow\n", files[worst], nf);
    {
        const char *base = strrchr(files[worst], '/');
        diff_ctx ctx = {.agg = &agg, .worst_input = base ? base + 1 : files[worst]};
        rc = diff_core(&o2, &ctx);
    }
done:
    agg_free(&agg);
    for (int i = 0; i < nf; i++) free(files[i]);
    free(files);
    return rc;
}

int cd_cmd_diff(const cd_cli_opts *o) {
    if (o->calibrate > 0) return calibrate(o);
    if (o->inputs_dir) {
        if (o->n_inputs) {
            cd_error err = {0};
            cd_err(&err, CD_E_USAGE, "--inputs DIR and --input cannot be combined (each file of DIR is the input)");
            return cd_cli_fail(&err);
        }
        return diff_inputs(o);
    }
    diff_ctx ctx = {0};
    return diff_core(o, &ctx);
}

/* ---------------------------------------------------------------- compare / report */

static const char *pick_run(const cd_dump_reader *r, const char *prefer) {
    if (prefer && cd_dump_find_run(r, prefer) >= 0) return prefer;
    if (cd_dump_find_run(r, "opencl") >= 0) return "opencl";
    return cd_dump_n_runs(r) ? cd_dump_run_name(r, 0) : NULL;
}

static int compare_and_report(const cd_cli_opts *o, cd_dump_reader *ra, cd_dump_reader *rb, const char *run_a,
                              const char *run_b, cd_dump_reader *rg, bool same) {
    cd_error err = {0};
    char prec[16] = "fp32";
    cd_dump_attr_str(ra, "/", "precision", prec, sizeof prec, &err);
    cd_precision p = !strcmp(prec, "fp16") ? CD_PREC_FP16 : CD_PREC_FP32;
    cd_policy pol;
    cd_status st = load_policy(o, p, &pol, &err);
    if (st) return cd_cli_fail(&err);
    cd_cmp_request q = {.ra = ra, .rb = rb, .run_a = run_a, .run_b = run_b, .rg = rg, .run_g = "golden",
                        .policy = &pol, .by_op_index = same, .half_ulps = p == CD_PREC_FP16,
                        .auto_tol = o->tolerance_file && !strcmp(o->tolerance_file, "auto"), .fp16 = p == CD_PREC_FP16};
    cd_analysis an;
    cd_cmp_unmatched *um = NULL;
    int nu = 0;
    if ((st = cd_compare_runs(&q, &an, &um, &nu, &err))) { cd_policy_free(&pol); return cd_cli_fail(&err); }
    char cmd[2048] = "", model[1024] = "", sha[80] = "", fmt[160] = "", dev_a[256] = "", dev_b[256] = "",
         drv_a[512] = "", drv_b[512] = "", crash[512] = "", created[32], pdesc[512], runpath[128];
    cd_dump_attr_str(ra, "/", "command_line", cmd, sizeof cmd, &err);
    cd_dump_attr_str(ra, "/", "model_path", model, sizeof model, &err);
    cd_dump_attr_str(ra, "/", "model_sha256", sha, sizeof sha, &err);
    cd_dump_attr_str(ra, "/", "model_format", fmt, sizeof fmt, &err);
    snprintf(runpath, sizeof runpath, "/runs/%s", run_a);
    cd_dump_attr_str(ra, runpath, "device", dev_a, sizeof dev_a, &err);
    cd_dump_attr_str(ra, runpath, "driver", drv_a, sizeof drv_a, &err);
    snprintf(runpath, sizeof runpath, "/runs/%s", run_b);
    cd_dump_attr_str(rb, runpath, "device", dev_b, sizeof dev_b, &err);
    cd_dump_attr_str(rb, runpath, "driver", drv_b, sizeof drv_b, &err);
    if (cd_dump_attr_str(rb, runpath, "crash_message", crash, sizeof crash, &err) == CD_OK && crash[0]) an.verdict = CD_VERDICT_CRASH;
    an.noise_floor = p == CD_PREC_FP16 ? 1e-3 : 1e-6;
    cd_analyze(&an);
    {
        /* the local check as the differential run stored it (none for older dumps) */
        char lrun[64];
        bool found = false;
        snprintf(lrun, sizeof lrun, "%s_local", run_b);
        if ((st = cd_local_load(rb, lrun, &an, &found, &err))) { cd_analysis_free(&an); free(um); cd_policy_free(&pol); return cd_cli_fail(&err); }
        for (int i = 0; found && i < an.n_layers; i++) {
            cd_layer_cmp *l = &an.layers[i];
            l->isolated = l->has_local;
            if (l->has_local) { l->iso = l->loc; l->iso.pass = l->loc_pass; }
        }
    }
    cd_decide_verdict(&an, &pol);
    cd_classify_first(&an);
    double wa = 0, wb = 0;
    snprintf(runpath, sizeof runpath, "/runs/%s", run_a);
    cd_dump_attr_f64(ra, runpath, "wall_ms", &wa, &err);
    snprintf(runpath, sizeof runpath, "/runs/%s", run_b);
    cd_dump_attr_f64(rb, runpath, "wall_ms", &wb, &err);
    iso_time(created, sizeof created);
    policy_desc(&pol, pdesc, sizeof pdesc);
    char cl[2048];
    snprintf(cl, sizeof cl, "%s", o->command_line);
    cd_report_env env = {.tool_version = CLDIFF_VERSION, .command_line = same ? cmd : cl, .model_path = model,
                         .model_sha256 = sha, .model_format = fmt, .precision = prec, .backend_a = run_a,
                         .backend_b = run_b, .device_a = dev_a, .driver_a = drv_a, .device_b = dev_b, .driver_b = drv_b,
                         .variant_b = prec, .seed = 0, .input_desc = "", .wall_ms_a = wa, .wall_ms_b = wb,
                         .tolerance_desc = pdesc, .crash = crash[0] ? crash : NULL, .n_ops = an.n_layers, .created = created};
    int rc;
    if ((st = write_reports(&q, &an, &env, o->out_dir, o->quiet, &err))) rc = cd_cli_fail(&err);
    else rc = verdict_code(&an);
    if (!o->quiet) {
        for (int i = 0; i < nu && i < 10; i++)
            printf("unmatched: %s (%s, op #%d) only in %s\n", um[i].tensor, um[i].layer, um[i].op_index,
                   same ? (um[i].side == 'a' ? run_a : run_b)
                        : (um[i].side == 'a' ? o->positional[0] : o->positional[o->n_positional - 1]));
        if (nu) printf("%d tensors unmatched%s\n", nu, nu > 10 ? " (first 10 listed)" : "");
    }
    cd_analysis_free(&an);
    free(um);
    cd_policy_free(&pol);
    return rc;
}

int cd_cmd_compare(const cd_cli_opts *o) {
    cd_error err = {0};
    cd_dump_reader *ra = NULL, *rb = NULL;
    cd_status st = cd_dump_open_untrusted(o->positional[0], &ra, &err);
    if (!st) st = cd_dump_open_untrusted(o->positional[1], &rb, &err);
    if (!st) st = cd_make_dirs(o->out_dir, &err);
    if (st) { if (ra) cd_dump_reader_close(ra); if (rb) cd_dump_reader_close(rb); return cd_cli_fail(&err); }
    const char *run_a = pick_run(ra, NULL), *run_b = run_a ? pick_run(rb, run_a) : NULL;
    int rc;
    if (!run_a || !run_b) {
        cd_err(&err, CD_E_MODEL, "%s holds no runs to compare", !run_a ? o->positional[0] : o->positional[1]);
        rc = cd_cli_fail(&err);
    } else {
        if (!o->quiet) printf("comparing %s (run %s) with %s (run %s)\n", o->positional[0], run_a, o->positional[1], run_b);
        rc = compare_and_report(o, ra, rb, run_a, run_b, NULL, false);
    }
    cd_dump_reader_close(ra);
    cd_dump_reader_close(rb);
    return rc;
}

int cd_cmd_report(const cd_cli_opts *o) {
    cd_error err = {0};
    cd_dump_reader *r = NULL;
    cd_status st = cd_dump_open_untrusted(o->positional[0], &r, &err);
    if (!st) st = cd_make_dirs(o->out_dir, &err);
    if (st) { if (r) cd_dump_reader_close(r); return cd_cli_fail(&err); }
    int n = cd_dump_n_runs(r);
    const char *run_a = NULL, *run_b = NULL;
    for (int i = 0; i < n; i++) {
        const char *nm = cd_dump_run_name(r, i);
        if (!strcmp(nm, "golden")) continue;
        if (!run_a) run_a = nm;
        else if (!run_b) run_b = nm;
    }
    if (cd_dump_find_run(r, "cpu") >= 0 && cd_dump_find_run(r, "opencl") >= 0) { run_a = "cpu"; run_b = "opencl"; }
    int rc;
    if (!run_a || !run_b) {
        cd_err(&err, CD_E_MODEL, "%s holds %d run(s); a report needs two (run cldiff MODEL to make them)", o->positional[0], n);
        rc = cd_cli_fail(&err);
    } else {
        rc = compare_and_report(o, r, r, run_a, run_b, cd_dump_find_run(r, "golden") >= 0 ? r : NULL, true);
    }
    cd_dump_reader_close(r);
    return rc;
}
