/* The differential command's side of the verdict: the tolerance policy from the command line,
 * the local check's run description handed to src/verdict/, and --baseline. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/diff_priv.h"

void cd_diff_policy_desc(const cd_policy *p, char *buf, size_t n) {
    snprintf(buf, n, "%s: atol=%g rtol=%g range_atol=%g min_cos=%g max_fail_fraction=%g%s%s", p->base_source,
             p->base.atol, p->base.rtol, p->base.range_atol, p->base.min_cos, p->base.max_fail_fraction,
             p->n_rules ? "; rules from " : "", p->n_rules ? p->file : "");
}

cd_status cd_diff_load_policy(const cd_cli_opts *o, cd_precision prec, cd_policy *p, cd_error *err) {
    cd_policy_init(p, prec);
    cd_policy_override(p, o->atol, o->rtol, o->min_cos, o->max_fail_fraction);
    /* "auto" is not a file: the caller sets cd_cmp_request.auto_tol */
    return o->tolerance_file && strcmp(o->tolerance_file, "auto") ? cd_policy_load(p, o->tolerance_file, err) : CD_OK;
}

/* The local check of every layer (docs/verdicts.md): B's run of each probed layer on A's
 * inputs against the reference side's arithmetic, as each run recorded it in the dump. */
bool cd_diff_verdict_run(diff_run *d, cd_verdict_run *v) {
    const cd_cli_opts *o = d->o;
    if (!d->local || d->crashed || d->stb) return false;
    cd_verdict_run_compute(d->r, d->run_a, d->compute_a, sizeof d->compute_a);
    cd_verdict_run_compute(d->r, d->run_b, d->compute_b, sizeof d->compute_b);
    *v = (cd_verdict_run){.g = d->s.g,
                          .plan = &d->s.plan,
                          .cpu_opts = cd_session_backend_opts(o, CD_PREC_FP32),
                          .stop_flag = &cd_stop_flag,
                          .r = d->r,
                          .prec = o->prec,
                          .a = d->A,
                          .b = d->B,
                          .engine_b = d->engine_b,
                          .compute_a = d->compute_a,
                          .compute_b = d->compute_b,
                          .run_a = d->run_a,
                          .run_b = d->run_b,
                          .run_local = d->run_local,
                          .policy = &d->pol,
                          .settled = d->settled,
                          .settled_info = d->settled_info,
                          .force = d->rec,
                          .own_inputs = d->own_inputs};
    return true;
}

/* Whether the differential run does the local check (--isolate/--local none and --dump
 * stats turn it off). */
bool cd_local_enabled(const cd_cli_opts *o) {
    /* a whole-model engine as run B: cldiff's CPU runs each layer on B's inputs instead
     * (docs/verdicts.md, "Engines"); the wheel engine keeps its own notes */
    return strcmp(o->isolate_mode, "none") && strcmp(o->dump_mode, "stats");
}

/* Compares the new run against the same run in a stored dump (regression gate). */
cd_status cd_diff_baseline_gate(const cd_cli_opts *o, const cd_dump_reader *r, const char *run, const cd_policy *pol,
                                int *n_fail, cd_error *err) {
    cd_dump_reader *rb = NULL;
    cd_status st = cd_dump_open_untrusted(o->baseline, &rb, err);
    if (st) return st;
    const char *brun = cd_dump_find_run(rb, run) >= 0 ? run : (cd_dump_n_runs(rb) ? cd_dump_run_name(rb, 0) : NULL);
    if (!brun) {
        cd_dump_reader_close(rb);
        return cd_err(err, CD_E_MODEL, "baseline '%s' holds no runs", o->baseline);
    }
    cd_cmp_request q = {.ra = rb,
                        .rb = r,
                        .run_a = brun,
                        .run_b = run,
                        .policy = pol,
                        .by_op_index = false,
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
