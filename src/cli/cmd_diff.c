/* The differential run (default command), `cldiff compare` and `cldiff report`:
 * runs are stored in the dump first, then compared from the dump, so every report can be
 * rebuilt later from the dump alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/session.h"
#include "compare/dumpcmp.h"
#include "model/extract.h"
#include "report/report.h"

/* ---------------------------------------------------------------- isolation */

/* A sink that keeps the outputs of one op in memory (float32). */
typedef struct keep_sink {
    int want_op;
    int n;
    int ids[64];
    float *data[64];
    int64_t numel[64];
} keep_sink;

static cd_status keep_hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                          cd_error *err) {
    (void)rep;
    keep_sink *k = user;
    if (op_index != k->want_op || k->n == 64) return CD_OK;
    int64_t n = cd_value_numel(host);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return cd_err(err, CD_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) f[i] = (float)cd_value_get(host, i);
    k->ids[k->n] = tensor_id;
    k->data[k->n] = f;
    k->numel[k->n] = n;
    k->n++;
    return CD_OK;
}

static void keep_free(keep_sink *k) {
    for (int i = 0; i < k->n; i++) free(k->data[i]);
    k->n = 0;
}

/* Finds the dataset of run `run` holding tensor `name` written by op `op_index`. */
static const cd_dump_tensor_info *find_tensor(const cd_dump_tensor_info *t, int n, int op_index, const char *name) {
    for (int i = 0; i < n; i++)
        if (t[i].op_index == op_index && !strcmp(t[i].tensor, name)) return &t[i];
    return NULL;
}

/* Re-runs layer l on backend B with backend A's inputs (read from the dump) and compares
 * with A's output. Fills l->iso; returns CD_OK with l->isolated=false and note when A's
 * inputs were not captured. */
static cd_status isolate_layer(cd_session *s, const cd_dump_reader *r, const char *run_a, const char *backend_b,
                               cd_layer_cmp *l, char *note, size_t note_len, cd_error *err) {
    const cd_graph *g = s->g;
    const cd_plan *plan = &s->plan;
    int oi = l->op_index;
    cd_shape *shapes = calloc((size_t)g->n_tensors, sizeof *shapes);
    if (!shapes) return cd_err(err, CD_E_NOMEM, "out of memory");
    for (int t = 0; t < g->n_tensors; t++) shapes[t] = plan->meta[t].shape;
    cd_extracted ex;
    cd_status st = cd_graph_extract_op(g, oi, shapes, &ex, err);
    free(shapes);
    if (st) return st;
    cd_dump_tensor_info *ta = NULL;
    int na = 0;
    cd_value *ins = calloc((size_t)ex.n_inputs + 1, sizeof *ins);
    cd_shape *in_shapes = calloc((size_t)ex.n_inputs + 1, sizeof *in_shapes);
    cd_plan xp;
    bool have_plan = false;
    keep_sink ks = {.want_op = -1};
    if (!ins || !in_shapes) { st = cd_err(err, CD_E_NOMEM, "out of memory"); goto done; }
    if ((st = cd_dump_list_tensors(r, run_a, &ta, &na, err))) goto done;
    for (int k = 0; k < ex.n_inputs; k++) {
        int src = ex.src_inputs[k];
        const cd_tensor *t = &g->tensors[src];
        in_shapes[k] = plan->meta[src].shape;
        int prod = t->producer;
        const cd_op *pop = prod >= 0 ? &g->ops[prod] : NULL;
        if (pop && !strcmp(pop->type, "feed")) {
            st = cd_dump_read_input(r, t->name, &ins[k], err);
            if (st) goto done;
            continue;
        }
        const cd_dump_tensor_info *ti = prod >= 0 ? find_tensor(ta, na, prod, t->name) : NULL;
        if (!ti || ti->stats_only) {
            snprintf(note, note_len, "input '%s' (from op #%d) was not captured in full; probe it (--layers all) to isolate this layer", t->name, prod);
            goto done;
        }
        float *f = NULL;
        int64_t n = 0;
        if ((st = cd_dump_read_f32(r, run_a, ti->dataset, &f, &n, err))) goto done;
        ins[k].dtype = CD_F32;
        ins[k].shape = ti->shape;
        ins[k].data = f;
        ins[k].nbytes = (size_t)n * sizeof(float);
        ins[k].owned = true;
    }
    if ((st = cd_plan_build(ex.g, in_shapes, s->o->prec, &xp, err))) goto done;
    have_plan = true;
    int target = -1;
    for (int i = 0; i < ex.g->n_ops; i++)
        if (strcmp(ex.g->ops[i].type, "feed") && strcmp(ex.g->ops[i].type, "fetch")) target = i;
    ks.want_op = target;
    cd_probe_sink sink = {.user = &ks, .hit = keep_hit};
    bool *mask = calloc((size_t)ex.g->n_ops, 1);
    if (!mask) { st = cd_err(err, CD_E_NOMEM, "out of memory"); goto done; }
    mask[target] = true;
    cd_exec_opts xo = {.probe_mask = mask, .stop_flag = &cd_stop_flag};
    cd_backend_opts bo = cd_session_backend_opts(s->o, s->o->prec);
    if (!strcmp(backend_b, "opencl") && s->o->isolate_child) {
        cd_isolated_run ir;
        memset(&ir, 0, sizeof ir);
        st = cd_run_isolated(&xp, &bo, ins, &xo, &sink, s->o->timeout_s, &ir, err);
    } else {
        cd_backend *b = NULL;
        st = !strcmp(backend_b, "opencl") ? cd_opencl_backend_open(&bo, &b, err) : cd_cpu_backend_open(&bo, &b, err);
        if (!st) st = cd_execute(&xp, b, ins, &xo, &sink, err);
        if (b) cd_backend_close(b);
    }
    free(mask);
    if (st) goto done;
    /* A's output of the layer, from the dump; compare with the isolated B output. */
    const cd_dump_tensor_info *ao = find_tensor(ta, na, oi, l->tensor);
    int src_out = -1;
    for (int k = 0; k < ex.n_outputs; k++)
        if (!strcmp(g->tensors[ex.src_outputs[k]].name, l->tensor)) src_out = k;
    if (!ao || src_out < 0 || src_out >= ks.n) { snprintf(note, note_len, "isolated run produced no output for '%s'", l->tensor); goto done; }
    float *fa = NULL;
    int64_t n = 0;
    if ((st = cd_dump_read_f32(r, run_a, ao->dataset, &fa, &n, err))) goto done;
    int kk = -1;
    for (int k = 0; k < ks.n; k++) {
        const cd_tensor *xt = &ex.g->tensors[ks.ids[k]];
        if (!strcmp(xt->name, l->tensor)) kk = k;
    }
    if (kk < 0 || ks.numel[kk] != n) {
        snprintf(note, note_len, "isolated output of '%s' has a different size", l->tensor);
    } else {
        cd_metrics_compute(fa, ks.data[kk], n, &l->shape, s->o->prec == CD_PREC_FP16, &l->tol, &l->iso);
        l->isolated = true;
    }
    free(fa);
done:
    keep_free(&ks);
    if (have_plan) cd_plan_free(&xp);
    for (int k = 0; ins && k < ex.n_inputs; k++) cd_value_release(&ins[k]);
    free(ins);
    free(in_shapes);
    free(ta);
    cd_graph_free(ex.g);
    return st;
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
    snprintf(buf, n, "%s: atol=%g rtol=%g min_cos=%g max_fail_fraction=%g%s%s", p->base_source, p->base.atol,
             p->base.rtol, p->base.min_cos, p->base.max_fail_fraction, p->n_rules ? "; rules from " : "",
             p->n_rules ? p->file : "");
}

static cd_status load_policy(const cd_cli_opts *o, cd_precision prec, cd_policy *p, cd_error *err) {
    cd_policy_init(p, prec);
    cd_policy_override(p, o->atol, o->rtol, o->min_cos, o->max_fail_fraction);
    return o->tolerance_file ? cd_policy_load(p, o->tolerance_file, err) : CD_OK;
}

/* Compares the new run against the same run in a stored dump (regression gate). */
static cd_status baseline_gate(const cd_cli_opts *o, const cd_dump_reader *r, const char *run, const cd_policy *pol,
                               int *n_fail, cd_error *err) {
    cd_dump_reader *rb = NULL;
    cd_status st = cd_dump_open(o->baseline, &rb, err);
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

int cd_cmd_diff(const cd_cli_opts *o) {
    cd_install_signal_handlers();
    cd_session s;
    cd_error err = {0};
    cd_policy pol;
    cd_status st = load_policy(o, o->prec, &pol, &err);
    if (st) return cd_cli_fail(&err);
    if ((st = cd_session_open(&s, o, &err))) { cd_session_free(&s); cd_policy_free(&pol); return cd_cli_fail(&err); }
    const char *A = o->backends[0], *B = o->backends[1];
    char run_a[32], run_b[32];
    snprintf(run_a, sizeof run_a, "%s", A);
    snprintf(run_b, sizeof run_b, strcmp(A, B) ? "%s" : "%s_b", B);
    if (!o->quiet)
        printf("cldiff %s: %s (%s), %d ops, %d probed, %s, %s vs %s\n", CLDIFF_VERSION, o->model, s.model_format,
               s.g->n_ops, s.n_probed, o->prec == CD_PREC_FP16 ? "fp16" : "fp32", A, B);
    cd_run_result ra, rb, rg;
    memset(&rg, 0, sizeof rg);
    cd_error eb = {0};
    st = cd_session_run(&s, A, run_a, o->prec, &ra, &err);
    cd_status stb = CD_OK;
    if (!st) stb = cd_session_run(&s, B, run_b, o->prec, &rb, &eb);
    bool crashed = stb == CD_E_CRASH;
    if (!st && (stb == CD_OK || crashed) && o->prec == CD_PREC_FP16) st = cd_session_run(&s, "cpu", "golden", CD_PREC_FP32, &rg, &err);
    if (!st && stb && !crashed) { st = stb; err = eb; }
    if (st) {
        /* Interrupted or a backend failed: keep what was captured, marked incomplete. */
        cd_error e2 = {0};
        cd_session_close(&s, false, &e2);
        cd_session_free(&s);
        cd_policy_free(&pol);
        return cd_cli_fail(&err);
    }
    if ((st = cd_session_close(&s, true, &err))) { cd_session_free(&s); cd_policy_free(&pol); return cd_cli_fail(&err); }

    cd_dump_reader *r = NULL;
    if ((st = cd_dump_open(s.dump_path, &r, &err))) { cd_session_free(&s); cd_policy_free(&pol); return cd_cli_fail(&err); }
    const char **outs = calloc((size_t)s.g->n_outputs + 1, sizeof *outs);
    for (int k = 0; outs && k < s.g->n_outputs; k++) outs[k] = s.g->tensors[s.g->outputs[k]].name;
    cd_cmp_request q = {.ra = r, .rb = r, .run_a = run_a, .run_b = run_b, .rg = o->prec == CD_PREC_FP16 ? r : NULL,
                        .run_g = "golden", .policy = &pol, .by_op_index = true, .half_ulps = o->prec == CD_PREC_FP16,
                        .output_tensors = outs, .n_outputs = outs ? s.g->n_outputs : 0};
    cd_analysis an;
    cd_cmp_unmatched *um = NULL;
    int nu = 0;
    int rc = 0;
    if ((st = cd_compare_runs(&q, &an, &um, &nu, &err))) { rc = cd_cli_fail(&err); goto out; }
    if (crashed) an.verdict = CD_VERDICT_CRASH;
    an.noise_floor = o->prec == CD_PREC_FP16 ? 1e-3 : 1e-6;
    cd_analyze(&an);
    /* Local vs inherited: isolate the first failing layer (or every failing one). */
    if (strcmp(o->isolate_mode, "none") && !crashed) {
        for (int i = 0; i < an.n_layers; i++) {
            bool want = !strcmp(o->isolate_mode, "all") || i == an.first_fail;
            if (!want) continue;
            char note[256] = "";
            cd_error ie = {0};
            cd_status is = isolate_layer(&s, r, run_a, B, &an.layers[i], note, sizeof note, &ie);
            if (is == CD_E_INTERRUPTED) { st = is; err = ie; break; }
            if (is && !o->quiet) fprintf(stderr, "cldiff: warning: could not isolate %s: %s\n", an.layers[i].layer, ie.msg);
            else if (note[0] && !o->quiet) fprintf(stderr, "cldiff: note: %s: %s\n", an.layers[i].layer, note);
        }
        cd_classify_first(&an);
    }
    cd_dump_reader_close(r);
    r = NULL;
    char pdesc[512];
    policy_desc(&pol, pdesc, sizeof pdesc);
    {
        cd_dump *d = NULL;
        cd_error e2 = {0};
        if (cd_dump_open_append(s.dump_path, &d, &e2) == CD_OK) {
            cd_status cs = cd_compare_store(d, run_a, run_b, &an, pdesc, &e2);
            cd_dump_close(d, cs == CD_OK, &e2);
        }
        if (e2.code && !o->quiet) fprintf(stderr, "cldiff: warning: comparison table not stored in the dump: %s\n", e2.msg);
    }
    if ((st = cd_dump_open(s.dump_path, &r, &err))) { rc = cd_cli_fail(&err); goto out_an; }
    q.ra = q.rb = r;
    if (q.rg) q.rg = r;
    char created[32], crash_desc[512] = "";
    iso_time(created, sizeof created);
    if (crashed) cd_crash_describe(&rb.crash, &s.plan, crash_desc, sizeof crash_desc);
    cd_report_env env = {.tool_version = CLDIFF_VERSION, .command_line = o->command_line, .model_path = o->model,
                         .model_sha256 = s.sha256, .model_format = s.model_format,
                         .precision = o->prec == CD_PREC_FP16 ? "fp16" : "fp32", .backend_a = A, .backend_b = B,
                         .device_a = ra.device, .driver_a = ra.driver, .device_b = rb.device, .driver_b = rb.driver,
                         .variant_b = rb.variant, .seed = o->seed, .input_desc = s.input_desc, .wall_ms_a = ra.wall_ms,
                         .wall_ms_b = rb.wall_ms, .wall_ms_total = ra.wall_ms + rb.wall_ms + rg.wall_ms,
                         .tolerance_desc = pdesc, .crash = crashed ? crash_desc : NULL, .n_ops = s.g->n_ops,
                         .created = created};
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
    if (r) cd_dump_reader_close(r);
    cd_session_free(&s);
    cd_policy_free(&pol);
    return rc;
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
                        .policy = &pol, .by_op_index = same, .half_ulps = p == CD_PREC_FP16};
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
        for (int i = 0; i < nu; i++)
            printf("unmatched: %s (%s, op #%d) only in %s\n", um[i].tensor, um[i].layer, um[i].op_index,
                   um[i].side == 'a' ? o->positional[0] : o->positional[o->n_positional - 1]);
        if (nu) printf("%d tensors unmatched\n", nu);
    }
    cd_analysis_free(&an);
    free(um);
    cd_policy_free(&pol);
    return rc;
}

int cd_cmd_compare(const cd_cli_opts *o) {
    cd_error err = {0};
    cd_dump_reader *ra = NULL, *rb = NULL;
    cd_status st = cd_dump_open(o->positional[0], &ra, &err);
    if (!st) st = cd_dump_open(o->positional[1], &rb, &err);
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
    cd_status st = cd_dump_open(o->positional[0], &r, &err);
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
