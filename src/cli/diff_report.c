/* Report writing of the differential command, and the comparison behind `cldiff compare`
 * and `cldiff report`: runs are stored in the dump first, then compared from the dump, so
 * every report can be rebuilt later from the dump alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/diff_priv.h"
#include "verdict/verdict.h"
#include "diag/diag.h"

/* ---------------------------------------------------------------- --inputs aggregates */

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Fills the aggregate fields of an (the final, worst input's analysis). */
void cd_diff_agg_apply(const agg_state *g, cd_analysis *an) {
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
            if (!isnan(re) && re > worst_rel) {
                worst_rel = re;
                snprintf(l->worst_input, sizeof l->worst_input, "%s", g->names[ii]);
            }
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
            bool low_is_bad = k == CD_AGG_COSINE; /* cosine: worst is the smallest */
            l->agg_worst[k] = low_is_bad ? tmp[0] : tmp[n - 1];
            l->agg_mean[k] = sum / n;
            /* p99 by nearest rank on the bad side (p1 for cosine) */
            int rank = (int)ceil(0.99 * n);
            l->agg_p99[k] = low_is_bad ? tmp[n - rank] : tmp[rank - 1];
        }
    }
    free(tmp);
}

void cd_diff_iso_time(char *buf, size_t n) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

cd_status cd_diff_write_reports(const cd_cmp_request *q, const cd_analysis *an, const cd_cmp_unmatched *um, int nu,
                                const cd_report_env *env, const char *out_dir, bool quiet, cd_error *err) {
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
    cd_report_input in = {.env = env, .an = an, .details = det, .n_details = nd, .unchecked = um, .n_unchecked = nu};
    cd_status st = cd_report_all(&in, out_dir, err);
    if (!quiet) cd_report_terminal(&in, stdout, isatty(1) && !getenv("NO_COLOR"));
    for (int j = 0; j < nd; j++) {
        free((void *)det[j].ref);
        free((void *)det[j].val);
    }
    return st;
}

/* The report environment of a differential run (the tolerance description included). */
void cd_diff_fill_env(diff_run *d) {
    const cd_cli_opts *o = d->o;
    cd_diff_policy_desc(&d->pol, d->pdesc, sizeof d->pdesc);
    if (d->auto_tol)
        snprintf(d->pdesc, sizeof d->pdesc,
                 "auto: atol = %g*u*sqrt(K)*rms(ref), rtol = %g*u, u = %s; min_cos=%g max_fail_fraction=%g", CD_AUTO_C,
                 CD_AUTO_C, o->prec == CD_PREC_FP16 ? "2^-11" : "2^-24", d->pol.base.min_cos,
                 d->pol.base.max_fail_fraction);
    d->crash_desc[0] = 0;
    cd_diff_iso_time(d->created, sizeof d->created);
    if (d->crashed) cd_crash_describe(&d->rb.crash, &d->s.plan, d->crash_desc, sizeof d->crash_desc);
    d->env = (cd_report_env){.tool_version = CLDIFF_VERSION,
                             .command_line = o->command_line,
                             .model_path = o->model,
                             .model_sha256 = d->s.sha256,
                             .model_format = d->s.model_format,
                             .precision = o->prec == CD_PREC_FP16 ? "fp16" : "fp32",
                             .backend_a = d->A,
                             .backend_b = d->B,
                             .device_a = d->ra.device,
                             .driver_a = d->ra.driver,
                             .device_b = d->rb.device,
                             .driver_b = d->rb.driver,
                             .variant_b = d->rb.variant[0] ? d->rb.variant
                                 : o->prec == CD_PREC_FP16 ? "fp16"
                                                           : "fp32",
                             .seed = o->seed,
                             .input_desc = d->s.input_desc,
                             .wall_ms_a = d->ra.wall_ms,
                             .wall_ms_b = d->rb.wall_ms,
                             .wall_ms_total = d->ra.wall_ms + d->rb.wall_ms + d->rg.wall_ms + d->wall_rep,
                             .tolerance_desc = d->pdesc,
                             .crash = d->crashed ? d->crash_desc : NULL,
                             .n_ops = d->s.g->n_ops,
                             .created = d->created};
}

/* The comparison table (and the local check's) into the dump; a failure is a warning. */
void cd_diff_store_table(diff_run *d) {
    cd_dump *dd = NULL;
    cd_error e2 = {0};
    if (cd_dump_open_append(d->s.dump_path, &dd, &e2) == CD_OK) {
        cd_status cs = cd_compare_store(dd, d->run_a, d->run_b, &d->an, d->pdesc, &e2);
        if (!cs && d->stop_phase) cs = cd_dump_set_attr_str(dd, "/", "interrupted", d->stop_phase, &e2);
        if (!cs && d->an.local_ran) cs = cd_local_store(dd, d->run_local, &d->an, &e2);
        cd_dump_close(dd, cs == CD_OK, &e2);
    }
    if (e2.code && !d->o->quiet)
        fprintf(stderr, "cldiff: warning: comparison table not stored in the dump: %s\n", e2.msg);
}

/* ---------------------------------------------------------------- compare / report */

/* The run of a dump that `compare` takes: the recorded run B of a differential run, else the
 * run of the default checked backend (`opencl`: dumps of older versions), else the first. */
static const char *pick_run(const cd_dump_reader *r, const char *prefer, char *buf, size_t n) {
    char a[128];
    if (prefer && cd_dump_find_run(r, prefer) >= 0) return prefer;
    if (cd_judge_pick_runs(r, a, buf, n) && cd_dump_find_run(r, buf) >= 0) return buf;
    if (cd_dump_find_run(r, "opencl") >= 0) return "opencl";
    return cd_dump_n_runs(r) ? cd_dump_run_name(r, 0) : NULL;
}

/* What the dump recorded of two runs: the command, the model, devices, drivers, a crash. */
typedef struct stored_env {
    char cmd[2048], model[1024], sha[80], fmt[320], dev_a[256], dev_b[256], drv_a[512], drv_b[512], crash[512];
    char variant_b[32]; /* the variant run B was asked for (its attribute precision) */
    double wa, wb, wg;  /* wall_ms of A, B and the golden run (0 when absent) */
    int64_t seed;
    char input_desc[1024];
} stored_env;

static void read_stored_env(const cd_dump_reader *ra, const cd_dump_reader *rb, const char *run_a, const char *run_b,
                            stored_env *e) {
    char runpath[300];
    cd_error err = {0};
    memset(e, 0, sizeof *e);
    cd_dump_attr_str(ra, "/", "command_line", e->cmd, sizeof e->cmd, &err);
    cd_dump_attr_str(ra, "/", "model_path", e->model, sizeof e->model, &err);
    cd_dump_attr_str(ra, "/", "model_sha256", e->sha, sizeof e->sha, &err);
    cd_dump_attr_str(ra, "/", "model_format", e->fmt, sizeof e->fmt, &err);
    snprintf(runpath, sizeof runpath, "/runs/%s", run_a);
    cd_dump_attr_str(ra, runpath, "device", e->dev_a, sizeof e->dev_a, &err);
    cd_dump_attr_str(ra, runpath, "driver", e->drv_a, sizeof e->drv_a, &err);
    cd_dump_attr_f64(ra, runpath, "wall_ms", &e->wa, &err);
    snprintf(runpath, sizeof runpath, "/runs/%s", run_b);
    cd_dump_attr_str(rb, runpath, "device", e->dev_b, sizeof e->dev_b, &err);
    cd_dump_attr_str(rb, runpath, "driver", e->drv_b, sizeof e->drv_b, &err);
    cd_dump_attr_str(rb, runpath, "crash_message", e->crash, sizeof e->crash, &err);
    cd_dump_attr_str(rb, runpath, "precision", e->variant_b, sizeof e->variant_b, &err);
    cd_dump_attr_f64(rb, runpath, "wall_ms", &e->wb, &err);
    if (cd_dump_find_run(ra, "golden") >= 0) cd_dump_attr_f64(ra, "/runs/golden", "wall_ms", &e->wg, &err);
    if (cd_dump_attr_i64(ra, "/", "seed", &e->seed, &err) != CD_OK) e->seed = 0;
    /* the inputs' description (/inputs) */
    char **names = NULL;
    int nn = 0;
    if (cd_dump_has(ra, "/inputs") && cd_dump_list_group(ra, "/inputs", &names, &nn, &err) == CD_OK) {
        size_t off = 0;
        for (int k = 0; k < nn && off < sizeof e->input_desc; k++) {
            char ip[600], tn[256] = "", src[512] = "", sh[96] = "";
            snprintf(ip, sizeof ip, "/inputs/%s", names[k]);
            cd_dump_attr_str(ra, ip, "tensor", tn, sizeof tn, &err);
            cd_dump_attr_str(ra, ip, "source", src, sizeof src, &err);
            float *data = NULL;
            cd_shape shp = {0};
            if (cd_dump_read_path_f32(ra, ip, &data, &shp, &err) == CD_OK) cd_shape_str(&shp, sh, sizeof sh);
            free(data);
            int w = snprintf(e->input_desc + off, sizeof e->input_desc - off, "%s%s: %s %s", k ? "; " : "",
                             tn[0] ? tn : names[k], src, sh);
            if (w > 0) off += (size_t)w;
        }
        cd_dump_names_free(names, nn);
    }
}

/* The repro pack the live run wrote beside its dump (<out>/repro/command.txt), if still there. */
static void find_stored_repro(const char *dump_path, cd_analysis *an) {
    char dir[1100], path[1200], cmd[2048];
    const char *slash = strrchr(dump_path, '/');
    if (slash)
        snprintf(dir, sizeof dir, "%.*s/repro", (int)(slash - dump_path), dump_path);
    else
        snprintf(dir, sizeof dir, "repro");
    snprintf(path, sizeof path, "%s/command.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(cmd, sizeof cmd, f)) {
        cmd[strcspn(cmd, "\n")] = 0;
        snprintf(an->repro_dir, sizeof an->repro_dir, "%s", dir);
        snprintf(an->repro_cmd, sizeof an->repro_cmd, "cd %s && %s", dir, cmd);
    }
    fclose(f);
}

static void print_unmatched(const cd_cli_opts *o, const cd_cmp_unmatched *um, int nu, const char *run_a,
                            const char *run_b, bool same) {
    if (o->quiet) return;
    for (int i = 0; i < nu && i < 10; i++)
        printf("unmatched: %s (%s, op #%d) only in %s\n", um[i].tensor, um[i].layer, um[i].op_index,
               same ? (um[i].side == 'a' ? run_a : run_b)
                    : (um[i].side == 'a' ? o->positional[0] : o->positional[o->n_positional - 1]));
    if (nu) printf("%d tensors unmatched%s\n", nu, nu > 10 ? " (first 10 listed)" : "");
}

/* `cldiff report` (same: one dump; run_a/run_b NULL: the pair it records) and `cldiff compare`:
 * the judge's verdict of the stored runs, then the reports. */
int cd_diff_compare_and_report(const cd_cli_opts *o, cd_dump_reader *ra, cd_dump_reader *rb, const char *run_a,
                               const char *run_b, bool same) {
    cd_error err = {0};
    cd_precision p = cd_judge_precision(ra);
    cd_policy pol;
    cd_status st = cd_diff_load_policy(o, p, &pol, &err);
    if (st) return cd_cli_fail(&err);
    cd_judge_req jq = {.ra = ra,
                       .rb = rb,
                       .run_a = run_a,
                       .run_b = run_b,
                       .policy = &pol,
                       .auto_tol = o->tolerance_file && !strcmp(o->tolerance_file, "auto"),
                       .threads = cd_session_helper_threads(o),
                       .force = o->force};
    cd_judgement j;
    if ((st = cd_judge(&jq, &j, &err))) {
        cd_judgement_free(&j);
        cd_policy_free(&pol);
        return cd_cli_fail(&err);
    }
    cd_analysis *an = &j.an;
    if (same) find_stored_repro(o->positional[0], an);
    stored_env se;
    read_stored_env(ra, rb, j.run_a, j.run_b, &se);
    char created[32], pdesc[512], cl[2048];
    cd_diff_iso_time(created, sizeof created);
    cd_diff_policy_desc(&pol, pdesc, sizeof pdesc);
    snprintf(cl, sizeof cl, "%s", o->command_line);
    cd_report_env env = {.tool_version = CLDIFF_VERSION,
                         .command_line = same ? se.cmd : cl,
                         .model_path = se.model,
                         .model_sha256 = se.sha,
                         .model_format = se.fmt,
                         .precision = p == CD_PREC_FP16 ? "fp16" : "fp32",
                         .backend_a = j.run_a,
                         .backend_b = j.run_b,
                         .device_a = se.dev_a,
                         .driver_a = se.drv_a,
                         .device_b = se.dev_b,
                         .driver_b = se.drv_b,
                         .variant_b = se.variant_b[0] ? se.variant_b
                             : p == CD_PREC_FP16      ? "fp16"
                                                      : "fp32",
                         .seed = (unsigned long long)se.seed,
                         .input_desc = se.input_desc,
                         .wall_ms_a = se.wa,
                         .wall_ms_b = se.wb,
                         .wall_ms_total = se.wa + se.wb + se.wg,
                         .tolerance_desc = pdesc,
                         .crash = se.crash[0] ? se.crash : NULL,
                         .n_ops = an->n_layers,
                         .created = created};
    int rc;
    if ((st = cd_diff_write_reports(&j.q, an, j.um, j.nu, &env, o->out_dir, o->quiet, &err)))
        rc = cd_cli_fail(&err);
    else
        rc = cd_verdict_exit_code(an);
    if (an->incomplete[0] && !o->quiet) fprintf(stderr, "cldiff: incomplete: %s\n", an->incomplete);
    print_unmatched(o, j.um, j.nu, j.run_a, j.run_b, same);
    cd_judgement_free(&j);
    cd_policy_free(&pol);
    return rc;
}

int cd_cmd_compare(const cd_cli_opts *o) {
    cd_error err = {0};
    cd_dump_reader *ra = NULL, *rb = NULL;
    cd_status st = cd_dump_open_untrusted(o->positional[0], &ra, &err);
    if (!st) st = cd_dump_open_untrusted(o->positional[1], &rb, &err);
    if (!st) st = cd_make_dirs(o->out_dir, &err);
    if (st) {
        if (ra) cd_dump_reader_close(ra);
        if (rb) cd_dump_reader_close(rb);
        return cd_cli_fail(&err);
    }
    char ba[128], bb[128];
    const char *run_a = pick_run(ra, NULL, ba, sizeof ba), *run_b = run_a ? pick_run(rb, run_a, bb, sizeof bb) : NULL;
    int rc;
    if (!run_a || !run_b) {
        cd_err(&err, CD_E_MODEL, "%s holds no runs to compare", !run_a ? o->positional[0] : o->positional[1]);
        rc = cd_cli_fail(&err);
    } else {
        if (!o->quiet)
            printf("comparing %s (run %s) with %s (run %s)\n", o->positional[0], run_a, o->positional[1], run_b);
        rc = cd_diff_compare_and_report(o, ra, rb, run_a, run_b, false);
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
    if (st) {
        if (r) cd_dump_reader_close(r);
        return cd_cli_fail(&err);
    }
    int rc;
    char a[128], b[128];
    /* a partial dump is judged (incomplete) whatever it holds; a complete one needs two runs */
    if (!cd_dump_n_runs(r) || (!cd_judge_pick_runs(r, a, b, sizeof a) && cd_dump_reader_complete(r))) {
        cd_err(&err, CD_E_MODEL, "%s holds %d run(s); a report needs two (run cldiff MODEL to make them)",
               o->positional[0], cd_dump_n_runs(r));
        rc = cd_cli_fail(&err);
    } else {
        rc = cd_diff_compare_and_report(o, r, r, NULL, NULL, true);
    }
    cd_dump_reader_close(r);
    return rc;
}
