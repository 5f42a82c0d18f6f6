/* The differential command's verdict glue: tolerance policy, the comparison with diag's rules
 * plugged in, the local check of every layer (docs/verdicts.md), --repeat and --baseline. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/diff_priv.h"
#include "verdict/local.h"
#include "backends/registry.h"
#include "diag/diag.h"
#include "util/fp16.h"

/* How a side computes (docs/verdicts.md): the CPU's fp16 path rounds every operation to half;
 * OpenCL computes in float on half storage unless it ran the fp16-compute variant. */
static cd_arith side_arith(const char *backend, cd_precision prec, const char *variant) {
    if (prec != CD_PREC_FP16) return (cd_arith){.u = CD_U32, .half_store = false};
    bool half_math = !strcmp(backend, "cpu") || (variant && !strcmp(variant, "fp16-compute"));
    return (cd_arith){.u = half_math ? CD_U16 : CD_U32, .half_store = true};
}

/* The fp16 local reference: the float32 plan with every parameter the fp16 plan keeps in
 * half rounded to half, so it sees exactly the weights B sees. */
cd_status cd_diff_ref_plan(cd_session *s, cd_plan *out, cd_error *err) {
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

int cd_diff_verdict_code(const cd_analysis *an) {
    if (an->verdict == CD_VERDICT_CRASH) return CD_E_CRASH;
    return an->verdict == CD_VERDICT_FAIL ? CD_E_TOLERANCE : 0;
}

void cd_diff_policy_desc(const cd_policy *p, char *buf, size_t n) {
    snprintf(buf, n, "%s: atol=%g rtol=%g range_atol=%g min_cos=%g max_fail_fraction=%g%s%s", p->base_source, p->base.atol,
             p->base.rtol, p->base.range_atol, p->base.min_cos, p->base.max_fail_fraction, p->n_rules ? "; rules from " : "",
             p->n_rules ? p->file : "");
}

cd_status cd_diff_load_policy(const cd_cli_opts *o, cd_precision prec, cd_policy *p, cd_error *err) {
    cd_policy_init(p, prec);
    cd_policy_override(p, o->atol, o->rtol, o->min_cos, o->max_fail_fraction);
    /* "auto" is not a file: the caller sets cd_cmp_request.auto_tol */
    return o->tolerance_file && strcmp(o->tolerance_file, "auto") ? cd_policy_load(p, o->tolerance_file, err) : CD_OK;
}

cd_status cd_diff_compare_runs(cd_cmp_request *q, bool auto_tol, cd_analysis *an, cd_cmp_unmatched **um, int *nu,
                               cd_error *err) {
    q->auto_tol = auto_tol ? cd_diag_auto_tol : NULL;
    q->hazard_counts = cd_diag_hazard_counts;
    cd_status st = cd_compare_runs(q, an, um, nu, err);
    if (!st) cd_diag_rank_hazards(an);
    return st;
}

void cd_diff_local_as_isolation(cd_analysis *an) {
    for (int i = 0; i < an->n_layers; i++) {
        cd_layer_cmp *l = &an->layers[i];
        l->isolated = l->has_local;
        if (l->has_local) { l->iso = l->loc; l->iso.pass = l->loc_pass; }
    }
}

/* The local check of every layer (docs/verdicts.md): B's run of each probed layer on A's
 * inputs against the reference side's arithmetic. */
cd_status cd_diff_local_check(diff_run *d, cd_error *err) {
    const cd_cli_opts *o = d->o;
    if (!d->local || d->crashed || d->stb) return CD_OK;
    cd_local_req lq = {.s = &d->s, .r = d->r, .run_a = d->run_a, .run_ref = o->prec == CD_PREC_FP16 ? "ref_local" : d->run_a,
                       .run_local = d->run_local, .ref = side_arith(o->prec == CD_PREC_FP16 ? "opencl" : d->A, o->prec == CD_PREC_FP16 ? CD_PREC_FP32 : o->prec, d->ra.variant),
                       .b = side_arith(d->B, o->prec, d->rb.variant), .policy = &d->pol, .user_tol = d->pol.user,
                       .run_free = d->run_b, .settled = d->settled,
                       .settled_info = d->settled_info, .force = d->rec};
    if (o->prec == CD_PREC_FP16) lq.ref = (cd_arith){.u = CD_U32, .half_store = false};
    /* Paddle-Lite's own kernels approximate transcendental functions (NEON sigmoid: a reciprocal
     * estimate and one Newton step, measured 128 u on picodet): 256 u where an engine is a side */
    {
        const cd_backend_def *da = cd_backend_lookup(d->A), *db = cd_backend_lookup(d->B);
        double tu = (da && !da->op_by_op) || (db && !db->op_by_op) ? 256 : 0;
        lq.ref.trans_ulps = lq.b.trans_ulps = tu;
    }
    if (d->engine_b) {
        /* B's own output of each layer against cldiff's CPU on B's inputs (run <b>_local) */
        lq.run_a = d->run_b;
        lq.run_ref = d->run_local;
        lq.run_local = d->run_b;
        lq.ref = side_arith("cpu", o->prec, "fp32");
        lq.b = (cd_arith){.u = CD_U32, .half_store = false};
        lq.ref.trans_ulps = lq.b.trans_ulps = 256;
        lq.run_free = NULL;
        lq.settled = NULL;
        lq.settled_info = NULL;
        lq.force = NULL;
    }
    cd_status ls = cd_local_check_layers(&lq, &d->an, err);
    if (ls) return ls;
    cd_diff_local_as_isolation(&d->an);
    return CD_OK;
}

/* Compares the new run against the same run in a stored dump (regression gate). */
cd_status cd_diff_baseline_gate(const cd_cli_opts *o, const cd_dump_reader *r, const char *run, const cd_policy *pol,
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

/* --repeat: compares every repeat of B with its first run, element by element, exactly:
 * any change marks the layer nondeterministic (a race or an uninitialised read). */
cd_status cd_diff_merge_repeats(const cd_cmp_request *q0, const char *run_b, int repeat, cd_analysis *an,
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
