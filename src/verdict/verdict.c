/* The verdict of one differential run around the local check: how each side computes, the
 * local check's request, the fp16 reference plan, the comparison with diag's rules, --repeat's
 * nondeterminism and the exit code (docs/verdicts.md). */
#include "verdict/verdict.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/registry.h"
#include "diag/diag.h"
#include "util/fp16.h"

cd_arith cd_verdict_side_arith(const char *compute, cd_precision prec) {
    if (prec != CD_PREC_FP16) return (cd_arith){.u = CD_U32, .half_store = false};
    bool half_math = compute && !strcmp(compute, "fp16");
    return (cd_arith){.u = half_math ? CD_U16 : CD_U32, .half_store = true};
}

void cd_verdict_run_compute(const cd_dump_reader *r, const char *run, char *buf, size_t n) {
    char path[300], prec[32] = "";
    cd_error e = {0};
    buf[0] = 0;
    snprintf(path, sizeof path, "/runs/%s", run);
    if (cd_dump_attr_str(r, path, CD_RUN_ATTR_COMPUTE, buf, n, &e) == CD_OK && buf[0]) return;
    /* dumps made before runs recorded it: the variant the run was asked for */
    buf[0] = 0;
    if (cd_dump_attr_str(r, path, "precision", prec, sizeof prec, &e) == CD_OK)
        snprintf(buf, n, "%s", !strcmp(prec, "fp16-compute") ? "fp16" : "fp32");
}

cd_status cd_verdict_ref_plan(const cd_graph *g, const cd_shape *in_shapes, const cd_plan *plan16, cd_plan *out,
                              cd_error *err) {
    cd_status st = cd_plan_build(g, in_shapes, CD_PREC_FP32, out, err);
    if (st) return st;
    for (int t = 0; t < g->n_tensors; t++) {
        cd_value *m = &out->meta[t];
        if (!g->tensors[t].persistable || !m->data || m->dtype != CD_F32 || plan16->meta[t].dtype != CD_F16) continue;
        float *x = m->data;
        for (int64_t i = 0; i < cd_value_numel(m); i++) x[i] = cd_round_half(x[i]);
    }
    return CD_OK;
}

cd_status cd_verdict_compare_runs(cd_cmp_request *q, bool auto_tol, cd_analysis *an, cd_cmp_unmatched **um, int *nu,
                                  cd_error *err) {
    q->auto_tol = auto_tol ? cd_diag_auto_tol : NULL;
    q->hazard_counts = cd_diag_hazard_counts;
    cd_status st = cd_compare_runs(q, an, um, nu, err);
    if (!st) cd_diag_rank_hazards(an);
    return st;
}

void cd_verdict_local_as_isolation(cd_analysis *an) {
    for (int i = 0; i < an->n_layers; i++) {
        cd_layer_cmp *l = &an->layers[i];
        l->isolated = l->has_local;
        if (l->has_local) {
            l->iso = l->loc;
            l->iso.pass = l->loc_pass;
        }
    }
}

/* Which Winograd convolutions engine B may have run (docs/verdicts.md "Winograd convolutions"):
 * its definition's algorithm, and what its run recorded of the choice: MNN's CPU takes no
 * Winograd with WINOGRAD_MEMORY_LEVEL 0 or memory low (ConvolutionFloatFactory.cpp), only
 * F(2, k) below level 3, tiles of 6 at most in fp16, and a tile m with m * m <= outputs / threads. */
static void wino_of_run(const cd_verdict_run *v, const cd_backend_def *db, cd_arith *b) {
    b->wino = db ? db->winograd : CD_WINO_NONE;
    if (!b->wino) return;
    b->wino_alpha = b->wino == CD_WINO_PADDLE_OPENCL ? 4 : b->u >= CD_U16 && b->wino == CD_WINO_MNN ? 6 : 8;
    if (b->wino != CD_WINO_MNN || !v->r || !v->run_b) return;
    char path[300], val[32];
    cd_error e = {0};
    snprintf(path, sizeof path, "/runs/%s", v->run_b);
    if (cd_dump_attr_str(v->r, path, "mnn_memory", val, sizeof val, &e) == CD_OK && !strcmp(val, "low")) {
        b->wino = CD_WINO_NONE;
        return;
    }
    if (cd_dump_attr_str(v->r, path, "mnn_winograd", val, sizeof val, &e) == CD_OK && val[0] >= '0' && val[0] <= '2') {
        if (val[0] == '0') {
            b->wino = CD_WINO_NONE;
            return;
        }
        b->wino_max_m = 2;
    }
    /* the threads are left at one (the largest tile): MNN may run fewer than asked (its thread
     * pool takes what the machine has, CPUBackend.cpp _resetThreadPool), and fewer threads
     * allow a larger tile */
}

void cd_verdict_local_req(const cd_verdict_run *v, cd_local_req *q) {
    bool fp16 = v->prec == CD_PREC_FP16;
    *q = (cd_local_req){.g = v->g,
                        .plan = v->plan,
                        .cpu_opts = v->cpu_opts,
                        .stop_flag = v->stop_flag,
                        .r = v->r,
                        .run_a = v->run_a,
                        .run_ref = fp16 ? "ref_local" : v->run_a,
                        .run_local = v->run_local,
                        .ref = cd_verdict_side_arith(v->compute_a, v->prec),
                        .b = cd_verdict_side_arith(v->compute_b, v->prec),
                        .policy = v->policy,
                        .user_tol = v->policy && v->policy->user,
                        .run_free = v->run_b,
                        .settled = v->settled,
                        .settled_info = v->settled_info,
                        .force = v->force};
    /* fp16: the reference is the float32 kernel on A's half inputs (run ref_local) */
    if (fp16) q->ref = (cd_arith){.u = CD_U32, .half_store = false};
    /* Paddle-Lite's own kernels approximate transcendental functions (NEON sigmoid: a reciprocal
     * estimate and one Newton step, measured 128 u on picodet): 256 u where an engine is a side */
    const cd_backend_def *da = cd_backend_lookup(v->a), *db = cd_backend_lookup(v->b);
    double tu = (da && !da->op_by_op) || (db && !db->op_by_op) ? 256 : 0;
    q->ref.trans_ulps = q->b.trans_ulps = tu;
    if (v->own_inputs) {
        /* B's free-run output of each layer against the float32 kernel on B's own inputs */
        q->run_a = v->run_b;
        q->run_local = v->run_b;
        q->run_free = NULL;
        q->own_inputs = true;
    }
    if (v->engine_b) {
        /* B's own output of each layer against cldiff's CPU on B's inputs (run <b>_local) */
        q->run_a = v->run_b;
        q->run_ref = v->run_local;
        q->run_local = v->run_b;
        q->engine_b = true;
        /* the reference backend runs in-process at the run's precision (cd_runner_inproc) */
        q->ref = cd_verdict_side_arith(v->prec == CD_PREC_FP16 ? "fp16" : "fp32", v->prec);
        q->b = (cd_arith){.u = CD_U32, .half_store = false};
        /* an engine that recorded half arithmetic (mnn-arm at precision low: MNN's ARMv8.2
         * backend stores and computes in fp16, docs/mnn.md "mnn-arm") is bounded as half,
         * whatever the plan's precision */
        if (v->compute_b && !strcmp(v->compute_b, "fp16")) q->b = (cd_arith){.u = CD_U16, .half_store = true};
        q->b.exp_rel = db ? db->exp_rel : 0;
        wino_of_run(v, db, &q->b);
        q->ref.trans_ulps = q->b.trans_ulps = 256;
        q->run_free = NULL;
        q->settled = NULL;
        q->settled_info = NULL;
        q->force = NULL;
    }
}

cd_status cd_verdict_local(const cd_verdict_run *v, cd_analysis *an, cd_error *err) {
    cd_local_req q;
    cd_verdict_local_req(v, &q);
    cd_status st = cd_local_check_layers(&q, an, err);
    if (st) return st;
    cd_verdict_local_as_isolation(an);
    return CD_OK;
}

cd_status cd_verdict_merge_repeats(const cd_cmp_request *q0, const char *run_b, int repeat, cd_analysis *an,
                                   cd_error *err) {
    cd_policy zero;
    cd_policy_init(&zero, CD_PREC_FP32);
    zero.base = (cd_tol){.atol = 0, .rtol = 0, .max_fail_fraction = 0, .min_cos = 0};
    an->repeat_n = repeat;
    for (int i = 0; i < an->n_layers; i++) an->layers[i].has_repeat = repeat > 1;
    for (int r = 1; r < repeat; r++) {
        char rep[48];
        snprintf(rep, sizeof rep, "%s_rep%d", run_b, r);
        cd_cmp_request q = {.ra = q0->rb,
                            .rb = q0->rb,
                            .run_a = run_b,
                            .run_b = rep,
                            .policy = &zero,
                            .by_op_index = true,
                            .half_ulps = q0->half_ulps};
        cd_analysis ar;
        cd_cmp_unmatched *um = NULL;
        int nu = 0;
        cd_status st = cd_compare_runs(&q, &ar, &um, &nu, err);
        free(um);
        if (st) {
            cd_policy_free(&zero);
            return st;
        }
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
