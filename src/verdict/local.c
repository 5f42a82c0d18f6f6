#include "verdict/local_priv.h"
#include "verdict/local_int8.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag/diag.h"
#include "engine/executor.h"
#include "engine/op_list.h"
#include "engine/ops.h"
#include "model/extract.h"
#include "util/fp16.h"

/* ---------------------------------------------------------------- the check */

/* A layer settled by the free run: B's own output was within the bound (checked in B's process,
 * cd_local_settle), so the local comparison is the free-run one. */
static void settled_result(const cd_local_req *q, cd_layer_cmp *l, const cd_settle_info *si, bool sep_ref) {
    cd_bound_spec spec;
    char desc[120];
    cd_local_spec(q->g, q->plan, l->op_index, q->ref, q->b, &spec, desc, sizeof desc);
    snprintf(l->family, sizeof l->family, "%s", cd_bound_family_name(spec.fam));
    l->has_local = true;
    l->loc = l->m;
    if (si->local || sep_ref) { /* the comparison made where it ran (fp16: against ref_local, not A) */
        memset(&l->loc, 0, sizeof l->loc);
        l->loc.n = si->n;
        l->loc.max_abs = si->max_abs;
        l->loc.cosine = si->cosine;
        l->loc.rmse = si->rmse;
        l->loc.ref_rms = si->ref_rms;
        l->loc.ref_absmax = si->ref_absmax;
        l->loc.pass = true;
    }
    l->loc_err = si->err;
    l->loc_bound = si->bound;
    l->loc_ratio = si->ratio;
    l->loc_exceed = 0;
    l->loc_worst = si->worst;
    l->loc_pass = true;
    snprintf(l->loc_note, sizeof l->loc_note, "%s; %s%s", desc,
             q->own_inputs   ? "B's free-run output against the reference on B's own inputs, checked as the "
                               "reference ran (within the bound; reference not stored)"
                 : si->local ? "run again on A's inputs, checked in B's process (within the bound; tensor not stored)"
                             : "settled by the free run (its own output is within this bound; not run again)",
             si->ratio_upper ? "; ratio: an upper bound" : "");
}

cd_status cd_local_check_layers(const cd_local_req *q, cd_analysis *an, cd_error *err) {
    cd_dump_tensor_info *tl = NULL, *tr = NULL;
    int nl = 0, nr = 0;
    bool sep_ref = strcmp(q->run_ref, q->run_a) != 0;
    cd_status st = cd_dump_list_tensors(q->r, q->run_local, &tl, &nl, err);
    if (!st && sep_ref) st = cd_dump_list_tensors(q->r, q->run_ref, &tr, &nr, err);
    if (st) {
        free(tl);
        free(tr);
        return st;
    }
    cd_local_tab_keep(q->r, q->run_a);
    cd_local_allow_drop();
    an->local_ran = true;
    snprintf(an->local_ref, sizeof an->local_ref, "%s", q->run_ref);
    snprintf(an->local_inputs, sizeof an->local_inputs, "%s", q->run_a);
    an->n_local = 0;
    an->n_compared_only = 0;
    const cd_graph *g = q->g;
    bool int8_ref = cd_local_run_int8_arm(q->r, sep_ref ? q->run_ref : q->run_a); /* docs/int8.md */
    for (int i = 0; i < an->n_layers && !st; i++) {
        cd_layer_cmp *l = &an->layers[i];
        l->has_local = false;
        l->loc_compared_only = false;
        l->loc_worst = -1;
        if (l->op_index < 0 || l->op_index >= g->n_ops) continue;
        /* by design: an op cldiff has no definition of (an engine's op kept as mnn_<Type>, issue
         * 28) has no CPU kernel to check it against; it is compared and named, not missing */
        const cd_op_info *oinf = cd_op_info_find(g->ops[l->op_index].type);
        if (!oinf || (oinf->flags & CD_OPL_NOCPU) || !cd_op_find(g->ops[l->op_index].type)) {
            l->loc_compared_only = true;
            an->n_compared_only++;
            snprintf(l->loc_note, sizeof l->loc_note,
                     "compared only, not checkable locally: cldiff has no kernel for %s", g->ops[l->op_index].type);
            continue;
        }
        const cd_dump_tensor_info *v = cd_local_find_tensor(tl, nl, l->op_index, l->tensor);
        const cd_dump_tensor_info *rr = sep_ref ? cd_local_find_tensor(tr, nr, l->op_index, l->tensor) : NULL;
        /* settled by the free run: B's own output stands for the local one (it lies within the
         * bound on inputs that already differ from A's, docs/verdicts.md) */
        bool settled =
            q->settled && q->settled[l->op_index] && (q->own_inputs ? v != NULL : !v && q->run_free && l->dataset_b[0]);
        if (!settled && q->engine_b && v && !v->stats_only && sep_ref && (!rr || rr->stats_only)) {
            /* by design: an engine's route does not hand over this layer's inputs (the export
             * route's fused ops read tensors Opt made internal), so the CPU could keep only
             * statistics of its run on them: compared and named, not missing */
            l->loc_compared_only = true;
            an->n_compared_only++;
            snprintf(l->loc_note, sizeof l->loc_note,
                     "compared only, not checkable locally: %s does not hand over this layer's inputs",
                     q->run_a && q->run_a[0] ? q->run_a : "the engine");
            continue;
        }
        if (!settled && (!v || v->stats_only || (sep_ref && (!rr || rr->stats_only)))) {
            snprintf(l->loc_note, sizeof l->loc_note, "%s",
                     !v                   ? "not run locally: an input was not captured, or "
                                            "its shape changed at run time (dynamic shapes)"
                         : v->stats_only  ? "not run locally: statistics-only dump"
                         : sep_ref && !rr ? "not run locally: the reference has no run of this layer"
                                          : "not run locally: the reference kept statistics only");
            continue;
        }
        if (settled && q->settled_info) {
            const cd_settle_info *si = &q->settled_info[l->op_index];
            settled_result(q, l, si, sep_ref);
            an->n_local++;
            if (si->local && !sep_ref) {
                /* re-run and within its bound: the free run may still show a racy or
                 * state-dependent kernel (free-run evidence; fp32: its bound is A's) */
                cd_bound_spec spec;
                cd_local_spec(g, q->plan, l->op_index, q->ref, q->b, &spec, NULL, 0);
                float *ref = NULL;
                int64_t n1 = 0;
                cd_local_result fe = {.worst = -1};
                st = cd_dump_read_f32(q->r, q->run_a, l->dataset_a, &ref, &n1, err);
                if (!st && cd_local_free_evidence(q, l, &spec, ref, n1, &fe)) {
                    l->loc_err = fe.err;
                    l->loc_bound = fe.bound;
                    l->loc_ratio = fe.ratio;
                    l->loc_exceed = fe.exceed;
                    l->loc_worst = fe.worst;
                    l->loc_pass = false;
                    snprintf(l->loc_note, sizeof l->loc_note,
                             "%s; free run off beyond what its bound and B's own "
                             "inputs explain though "
                             "the re-run passed (racy or state-dependent kernel?)",
                             l->family);
                }
                free(ref);
            }
            continue;
        }
        float *ref = NULL, *val = NULL, *mag = NULL, *x = NULL;
        int64_t n1 = 0, n2 = 0, nm = 0;
        st = cd_dump_read_f32(q->r, sep_ref ? q->run_ref : q->run_a, sep_ref ? rr->dataset : l->dataset_a, &ref, &n1,
                              err);
        if (!st)
            st = cd_dump_read_f32(q->r, settled ? q->run_free : q->run_local, settled ? l->dataset_b : v->dataset, &val,
                                  &n2, err);
        if (!st && n1 != n2) {
            snprintf(l->loc_note, sizeof l->loc_note, "not comparable: %lld values locally, %lld in the reference",
                     (long long)n2, (long long)n1);
        } else if (!st) {
            cd_bound_spec spec;
            char desc[120];
            cd_local_spec(g, q->plan, l->op_index, q->ref, q->b, &spec, desc, sizeof desc);
            if (int8_ref) cd_local_spec_int8(g, l->op_index, q->r, q->run_a, &spec, desc, sizeof desc);
            snprintf(l->family, sizeof l->family, "%s", cd_bound_family_name(spec.fam));
            double ua = -1, ur = -1;
            if (q->user_tol) {
                cd_tol t = cd_policy_for(q->policy, l->op_type, l->layer, NULL, 0);
                ua = t.atol + t.range_atol * 0;
                ur = t.rtol;
            }
            if (spec.fam == CD_FAM_ROUNDING) st = cd_local_op_input(q, l, n1, &x, err);
            cd_local_result res;
            char mnote[256] = "";
            bool used_mag = false, mag_run = false;
            mag_elem me = {.q = q,
                           .g = g,
                           .plan = q->plan,
                           .op_index = l->op_index,
                           .out_shape = l->shape,
                           .n_out = n1,
                           .budget = n1 / 8 + 4096};
            const cd_op *op = &g->ops[l->op_index];
            if (!st && spec.mag_run && !cd_local_cheap_valid(op)) {
                /* |ref| is no lower bound here: every element needs its magnitude */
                if (!strcmp(op->type, "scale") && (mag = malloc((size_t)(n1 ? n1 : 1) * sizeof *mag))) {
                    me.budget = n1;
                    for (int64_t e = 0; e < n1; e++) mag[e] = (float)cd_local_mag_at(&me, e);
                    used_mag = me.state > 0;
                    if (!used_mag) {
                        free(mag);
                        mag = NULL;
                    }
                }
                if (!used_mag) {
                    st = cd_local_magnitude(q, l, &mag, &nm, mnote, sizeof mnote, err);
                    used_mag = mag_run = mag && nm == n1;
                }
            }
            if (!st)
                cd_local_check_lazy(&spec, ref, val, used_mag ? mag : NULL, used_mag ? NULL : cd_local_mag_at, &me, x,
                                    n1, ua, ur, me.budget, &res);
            if (!st && res.needs_mag && !used_mag) {
                /* some element's magnitude could not be had one by one: the whole run */
                st = cd_local_magnitude(q, l, &mag, &nm, mnote, sizeof mnote, err);
                if (!st && mag && nm == n1) {
                    used_mag = mag_run = true;
                    cd_local_check(&spec, ref, val, mag, x, n1, ua, ur, &res);
                }
            }
            cd_local_me_free(&me);
            if (!st && res.needs_mag && !used_mag) {
                /* over the cheap bound, and the magnitude that would decide cannot be had (an
                 * input of the layer is not in the dump: --layers left its producer out). No
                 * bound, no verdict: the layer is reported unchecked, not blamed. */
                snprintf(l->loc_note, sizeof l->loc_note,
                         "not checked: over |ref|'s bound and the magnitude needs "
                         "inputs not in the dump (%.90s); probe the producing layers (--layers all)",
                         mnote[0] ? mnote : "not captured");
                free(ref);
                free(val);
                free(mag);
                free(x);
                continue;
            }
            cd_local_result fe = {.worst = -1};
            bool evidence = !st && res.pass && q->settled && !settled && !sep_ref &&
                cd_local_free_evidence(q, l, &spec, ref, n1, &fe);
            if (evidence)
                res = (cd_local_result){.err = fe.err,
                                        .bound = fe.bound,
                                        .ratio = fe.ratio,
                                        .exceed = fe.exceed,
                                        .worst = fe.worst,
                                        .pass = false};
            if (!st) {
                l->has_local = true;
                an->n_local++;
                cd_metrics_compute(ref, val, n1, &l->shape, q->b.half_store, &l->tol, &l->loc);
                l->loc_err = res.err;
                l->loc_bound = res.bound;
                l->loc_ratio = res.ratio;
                l->loc_exceed = res.exceed;
                l->loc_worst = res.worst;
                l->loc_pass = res.pass;
                char mel[128] = "";
                /* a Winograd conv's magnitude goes through the absolute transforms (local_mag.c) */
                const char *mname = spec.wino_k ? "Winograd magnitude" : "magnitude sum|w x|+|b|";
                if (!used_mag && res.mag_elems)
                    snprintf(mel, sizeof mel, "; %s of the %lld elements nearest the bound%s", mname,
                             (long long)res.mag_elems, res.ratio_upper ? " (ratio: an upper bound)" : "");
                snprintf(
                    l->loc_note, sizeof l->loc_note, "%s%s%s%s%s%s%s%s", desc,
                    evidence ? "; free run off beyond what its bound and B's own inputs explain though the "
                               "re-run passed "
                               "(racy or state-dependent kernel?)"
                             : "",
                    settled ? "; settled by the free run (its own output is within this bound; not run again)" : "",
                    mag_run        ? (cd_local_allow_op(op) ? "; bound per element from the layer's inputs"
                                          : spec.wino_k     ? "; Winograd magnitude on a CPU run's sum|w x|+|b|"
                                                            : "; magnitude sum|w x|+|b| from a CPU run")
                        : used_mag ? "; magnitude per element"
                                   : "",
                    mel, mnote[0] ? "; " : "", mnote, res.nonfinite ? "; NaN/Inf where the reference is finite" : "");
            }
        }
        free(ref);
        free(val);
        free(mag);
        free(x);
    }
    cd_local_tab_keep(NULL, NULL);
    cd_local_allow_drop();
    free(tl);
    free(tr);
    return st;
}

/* ---------------------------------------------------------------- settling (in B's process) */

/* The op's first activation input holding n values, from the record (rounding ops). */
static float *record_input(const cd_local_settle_ctx *c, const cd_forcing *force, const cd_op *op, int64_t n) {
    for (int si = 0; si < op->n_in; si++)
        for (int k = 0; k < op->in[si].n; k++) {
            int id = op->in[si].ids[k];
            const cd_shape *sh = id >= 0 ? cd_forcing_shape(force, id) : NULL;
            if (!sh || !cd_exec_is_activation(c->plan, id) || cd_shape_numel(sh) != n) continue;
            cd_value v;
            cd_error e2 = {0};
            if (cd_forcing_get(force, id, CD_F32, false, &v, &e2)) return NULL;
            v.owned = false;
            return v.data;
        }
    return NULL;
}

/* Settling checks run in blocks of this many elements, on several threads: each block's check
 * and sums are the same whoever computes them, combined in block order (the result does not
 * depend on the thread count). */
#define SETTLE_BLOCK ((int64_t)1 << 16)

/* The check of n elements in blocks on up to threads threads (cd_local_check on each block,
 * combined as one pass over the whole would have found them). Only where that is the whole
 * tensor's result: the family does not read the tensor's range, and no block met an element
 * whose magnitude the lazy check would have asked for (none over its cheap bound, no NaN/Inf
 * mismatch). False: not decided here, the caller checks the tensor in one piece. */
static bool check_blocks(const cd_bound_spec *spec, const float *ad, const float *od, const float *mag, const float *x,
                         int64_t n, int threads, cd_local_result *res) {
    int64_t nb = (n + SETTLE_BLOCK - 1) / SETTLE_BLOCK;
    if (threads < 2 || nb < 2 || cd_bound_uses_absmax(spec->fam)) return false;
    cd_local_result *part = malloc((size_t)nb * sizeof *part);
    if (!part) return false;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4)
    for (int64_t b = 0; b < nb; b++) {
        int64_t lo = b * SETTLE_BLOCK, len = lo + SETTLE_BLOCK < n ? SETTLE_BLOCK : n - lo;
        cd_local_check(spec, ad + lo, od + lo, mag ? mag + lo : NULL, x ? x + lo : NULL, len, -1, -1, &part[b]);
        if (part[b].worst >= 0) part[b].worst += lo;
    }
    bool whole = true;
    memset(res, 0, sizeof *res);
    res->worst = -1;
    for (int64_t b = 0; b < nb && whole; b++) {
        const cd_local_result *p = &part[b];
        whole = p->exceed == 0 && p->nonfinite == 0 && !p->needs_mag && p->mag_elems == 0;
        /* the first of equal worst ratios, as one pass keeps it */
        if (p->worst >= 0 && (p->ratio > res->ratio || res->worst < 0)) {
            res->ratio = p->ratio;
            res->worst = p->worst;
            res->err = p->err;
            res->bound = p->bound;
            res->ratio_upper = p->ratio_upper;
        }
    }
    free(part);
    res->pass = whole;
    return whole;
}

/* The settled layer's summary: max |a - b|, max |a| and the sums of d^2, a^2, b^2, a b, per
 * block on up to threads threads, the blocks' sums added in order. */
static void settle_summary(const float *ad, const float *od, int64_t n, int threads, cd_settle_info *info, double *d2,
                           double *r2, double *v2, double *dot) {
    int64_t nb = (n + SETTLE_BLOCK - 1) / SETTLE_BLOCK;
    double(*s)[6] = nb > 0 ? malloc((size_t)nb * sizeof *s) : NULL;
    if (nb > 0 && !s) threads = 1, nb = 0; /* no memory: one block, in this thread */
    double one[6] = {0};
    int nt = threads > 1 && nb > 1 ? threads : 1;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
    for (int64_t b = 0; b < (nb ? nb : 1); b++) {
        int64_t lo = nb ? b * SETTLE_BLOCK : 0, hi = nb ? (lo + SETTLE_BLOCK < n ? lo + SETTLE_BLOCK : n) : n;
        double mx = 0, amx = 0, sd = 0, sr = 0, sv = 0, sp = 0;
        for (int64_t i = lo; i < hi; i++) {
            double a1 = ad[i], b1 = od[i], d = fabs(a1 - b1);
            if (d > mx) mx = d;
            if (fabs(a1) > amx) amx = fabs(a1);
            sd += d * d;
            sr += a1 * a1;
            sv += b1 * b1;
            sp += a1 * b1;
        }
        double *t = nb ? s[b] : one;
        t[0] = mx, t[1] = amx, t[2] = sd, t[3] = sr, t[4] = sv, t[5] = sp;
    }
    for (int64_t b = 0; b < (nb ? nb : 1); b++) {
        const double *t = nb ? s[b] : one;
        if (t[0] > info->max_abs) info->max_abs = t[0];
        if (t[1] > info->ref_absmax) info->ref_absmax = t[1];
        *d2 += t[2];
        *r2 += t[3];
        *v2 += t[4];
        *dot += t[5];
    }
    free(s);
}

/* The settling check of op op_index's output: ad the reference values, od B's (n of them);
 * force holds the op's inputs (magnitudes, rounding ops). */
static bool settle_check(const cd_local_settle_ctx *c, const cd_forcing *force, int op_index, const float *ad,
                         const float *od, const cd_shape *shape, cd_settle_info *info) {
    const cd_op *op = &c->g->ops[op_index];
    cd_bound_spec spec;
    cd_local_spec(c->g, c->plan, op_index, c->ref, c->b, &spec, NULL, 0);
    bool dense = spec.mag_run && !cd_local_cheap_valid(op);
    if (dense && strcmp(op->type, "scale")) return false; /* would need a whole magnitude run */
    int64_t n = cd_shape_numel(shape);
    float *x = spec.fam == CD_FAM_ROUNDING ? record_input(c, force, op, n) : NULL;
    mag_elem me = {.force = force,
                   .g = c->g,
                   .plan = c->plan,
                   .op_index = op_index,
                   .out_shape = *shape,
                   .n_out = n,
                   .budget = n / 8 + 4096};
    float *mag = NULL;
    bool ok = !(spec.fam == CD_FAM_ROUNDING && !x);
    if (ok && dense) {
        me.budget = n;
        ok = (mag = malloc((size_t)(n ? n : 1) * sizeof *mag)) != NULL;
        for (int64_t e = 0; ok && e < n; e++) ok = !isnan(mag[e] = (float)cd_local_mag_at(&me, e));
    }
    cd_local_result res;
    if (ok) {
        /* pass or fail is all that settling needs: magnitudes only for elements over the
         * cheap bound (max_calls 0); on c->threads threads where that gives the same result */
        if (!check_blocks(&spec, ad, od, mag, x, n, c->threads, &res))
            cd_local_check_lazy(&spec, ad, od, mag, mag ? NULL : cd_local_mag_at, &me, x, n, -1, -1, 0, &res);
        ok = res.pass && !res.needs_mag && res.nonfinite == 0;
        if (ok && info) {
            int32_t local = info->local;
            *info = (cd_settle_info){.err = res.err,
                                     .bound = res.bound,
                                     .ratio = res.ratio,
                                     .worst = res.worst,
                                     .ratio_upper = res.ratio_upper || (!mag && res.mag_elems == 0 && spec.mag_run),
                                     .local = local,
                                     .n = n};
            /* the comparison's summary (what a report shows beside the bound) */
            double d2 = 0, r2 = 0, v2 = 0, dot = 0;
            settle_summary(ad, od, n, c->threads, info, &d2, &r2, &v2, &dot);
            info->rmse = n ? sqrt(d2 / (double)n) : 0;
            info->ref_rms = n ? sqrt(r2 / (double)n) : 0;
            info->cosine = d2 == 0 || (r2 == 0 && v2 == 0) ? 1 : (r2 == 0 || v2 == 0) ? 0 : dot / (sqrt(r2) * sqrt(v2));
            if (info->cosine > 1) info->cosine = 1;
        }
    }
    cd_local_me_free(&me);
    free(mag);
    free(x);
    return ok;
}

/* A value of the record (or out) as float32: in place where it already is, else widened into
 * *tmp (freed by the caller). */
static const float *as_f32(const cd_value *v, float **tmp) {
    *tmp = NULL;
    if (v->dtype == CD_F32) return v->data;
    int64_t n = cd_value_numel(v);
    if (v->dtype != CD_F16 || !(*tmp = malloc((size_t)(n ? n : 1) * sizeof **tmp))) return NULL;
    const uint16_t *h = v->data;
    for (int64_t i = 0; i < n; i++) (*tmp)[i] = cd_half_to_float(h[i]);
    return *tmp;
}

bool cd_local_settle(void *user, const cd_forcing *force, int op_index, int tensor, const cd_value *out,
                     cd_settle_info *info) {
    const cd_local_settle_ctx *c = user;
    const cd_forcing *rf = force; /* the reference values: A's record */
    if (!force || (out->dtype != CD_F32 && out->dtype != CD_F16) || !cd_forcing_has(rf, tensor)) return false;
    const cd_shape *sh = cd_forcing_shape(rf, tensor);
    if (!sh || !cd_shape_eq(sh, &out->shape)) return false;
    cd_value a = {0};
    cd_error e2 = {0};
    const float *ad = cd_forcing_peek(rf, tensor, CD_F32); /* in place when in memory */
    if (!ad) {
        if (cd_forcing_get(rf, tensor, CD_F32, false, &a, &e2)) return false;
        ad = a.data;
    }
    float *ob = NULL; /* B's half output as float */
    const float *od = as_f32(out, &ob);
    bool ok = od && settle_check(c, force, op_index, ad, od, &out->shape, info);
    free(ob);
    cd_value_release(&a);
    return ok;
}

bool cd_local_settle_own(void *user, const cd_forcing *force, int op_index, int tensor, const cd_value *out,
                         cd_settle_info *info) {
    const cd_local_settle_ctx *c = user;
    /* out is the reference's output of the layer (run on B's recorded inputs); B's own
     * free-run output of it is in the record */
    if (!force || !info || !info->local || out->dtype != CD_F32 || !cd_forcing_has(force, tensor)) return false;
    const cd_shape *sh = cd_forcing_shape(force, tensor);
    if (!sh || !cd_shape_eq(sh, &out->shape)) return false;
    cd_value b = {0};
    cd_error e2 = {0};
    if (cd_forcing_get(force, tensor, CD_F32, false, &b, &e2)) return false;
    bool ok = settle_check(c, force, op_index, out->data, b.data, &out->shape, info);
    cd_value_release(&b);
    return ok;
}
