/* The verdict of a differential run (docs/verdicts.md, docs/design.md §5.4): what kind the
 * first divergence is (local or inherited), and kernel fault / output drift / pass once the
 * local check and the output summaries are in. The output yardstick it applies is a comparison
 * rule that diag's pins use too (compare/analysis.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "verdict/verdict.h"

void cd_classify_first(cd_analysis *a) {
    if (a->first_fail < 0) return;
    cd_layer_cmp *l = &a->layers[a->first_fail];
    /* The layer where NaN/Inf first appears (its inputs are finite wherever the reference
     * is) made them itself: a local fault, whatever the isolated comparison with an
     * equally overflowing side says. */
    if (a->first_fail == a->nonfinite_origin && l->nf_hard) {
        snprintf(a->first_kind, sizeof a->first_kind, "local");
        return;
    }
    /* The local check when it ran (docs/verdicts.md), else the older isolation: within its
     * bound on the inputs it was given (A's, or B's own in fp16), the layer is right and only
     * inherits error. */
    if (l->has_local) {
        snprintf(a->first_kind, sizeof a->first_kind, "%s", l->loc_pass ? "inherited" : "local");
        return;
    }
    if (!l->isolated) return;
    snprintf(a->first_kind, sizeof a->first_kind, "%s", l->iso.pass ? "inherited" : "local");
}

static void top_by(cd_analysis *a, int *out, int *n, double (*key)(const cd_layer_cmp *),
                   bool (*want)(const cd_layer_cmp *)) {
    *n = 0;
    for (int i = 0; i < a->n_layers; i++) {
        const cd_layer_cmp *l = &a->layers[i];
        double k = key(l);
        if (!want(l) || !(k > 0)) continue;
        int pos;
        if (*n < 8)
            pos = (*n)++;
        else if (key(&a->layers[out[7]]) < k)
            pos = 7;
        else
            continue;
        out[pos] = i;
        while (pos > 0 && key(&a->layers[out[pos - 1]]) < key(&a->layers[out[pos]])) {
            int t = out[pos - 1];
            out[pos - 1] = out[pos];
            out[pos] = t;
            pos--;
        }
    }
}

static double growth_key(const cd_layer_cmp *l) { return isfinite(l->growth) ? l->growth : 1e300; }
static bool amp_want(const cd_layer_cmp *l) { return l->jump && (!l->has_local || l->loc_pass); }
static double contrib_key(const cd_layer_cmp *l) {
    if (!l->has_local) return 0;
    if (l->loc.nonfinite_mismatch) return 1e300;
    return l->loc.ref_rms > 0 ? l->loc.rmse / l->loc.ref_rms : l->loc.rmse;
}
static bool contrib_want(const cd_layer_cmp *l) { return l->has_local; }

void cd_decide_verdict(cd_analysis *a, const cd_policy *p) {
    a->first_fault = -1;
    a->n_faults = 0;
    a->first_defect = -1;
    a->n_defects = 0;
    a->n_drift = 0;
    a->n_outputs = 0;
    a->n_out_fail = 0;
    /* Outputs downstream of fake quantisation (calib) move by whole quanta when a rounding
     * difference meets a tie: 4 quanta of an int8 range (4/127 of max|ref|, the quantised
     * rule QNN's AdjustedRtolAtol uses) are allowed there (docs/verdicts.md). */
    bool quantized = false;
    for (int i = 0; i < a->n_layers; i++) quantized |= !strcmp(a->layers[i].op_type, "calib");
    cd_policy pe = *p;
    if (quantized && !p->user) {
        if (pe.out_range < 4.0 / 127) pe.out_range = 4.0 / 127;
        if (pe.out_min_cos > 0.999) pe.out_min_cos = 0.999;
    }
    p = &pe;
    snprintf(a->out_tol_desc, sizeof a->out_tol_desc,
             p->user ? "user tolerance (element rule of --atol/--rtol/--tolerance)"
                     : "max|a-b| <= %.3g x max|ref|, cosine >= %g, no NaN/Inf where the reference is finite%s",
             p->out_range, p->out_min_cos, quantized ? " (quantised model: 4 int8 quanta of the range)" : "");
    /* A reused name may be written by several ops: the model output is the last of them. */
    for (int i = 0; i < a->n_layers; i++) {
        cd_layer_cmp *l = &a->layers[i];
        if (!l->is_output) continue;
        for (int j = 0; j < a->n_layers; j++)
            if (j != i && a->layers[j].is_output && !strcmp(a->layers[j].tensor, l->tensor) &&
                a->layers[j].op_index > l->op_index) {
                l->is_output = false;
                break;
            }
    }
    for (int i = 0; i < a->n_layers; i++) {
        cd_layer_cmp *l = &a->layers[i];
        l->drift = !l->m.pass;
        if (l->drift && !l->is_output) a->n_drift++;
        if (!strncmp(l->note_b, CD_MODEL_DEFECT_NOTE, strlen(CD_MODEL_DEFECT_NOTE))) {
            /* the engine did what its code does with what the model gives it: a finding about
             * the model, not about a kernel (docs/paddle-lite-phone.md) */
            a->n_defects++;
            if (a->first_defect < 0) a->first_defect = i;
        } else if (l->has_local && !l->loc_pass) {
            a->n_faults++;
            if (a->first_fault < 0) a->first_fault = i;
        }
        if (!l->is_output) continue;
        a->n_outputs++;
        l->out_range_err = l->m.nonfinite_mismatch ? INFINITY
            : l->m.ref_absmax > 0                  ? l->m.max_abs / l->m.ref_absmax
                                                   : (l->m.max_abs > 0 ? INFINITY : 0);
        if (!strcmp(l->task, "detection")) {
            l->out_pass = l->det_ref == l->det_val && l->det_matched == l->det_ref && !l->nf_hard;
            snprintf(l->out_rule, sizeof l->out_rule, "detection: every box matched (IoU >= 0.5, same class)");
            if (!l->out_pass && l->det_golden_ok && !l->nf_hard) {
                /* fp16: the box count moved with the precision; B is held to A's own distance from
                 * the float32 golden run's boxes */
                l->out_pass = true;
                snprintf(l->out_rule, sizeof l->out_rule,
                         "fp16 detection: B matches %lld of the float32 golden run's %lld boxes, A %lld (B no "
                         "further than A)",
                         (long long)l->det_gold_b, (long long)l->det_gold, (long long)l->det_gold_a);
            }
        } else if (!strcmp(l->op_type, "arg_max") || !strcmp(l->op_type, "arg_min")) {
            /* class labels (a segmentation map, a classifier's index): a near-tie flips a label
             * by a whole class, so the range rule says nothing; what counts is how many flip.
             * At most 0.1% of them, or in fp16 B no more than twice A's own flips against the
             * float32 golden run's labels (plus 0.1%) */
            double flips = l->m.fail_fraction;
            bool golden = l->has_golden;
            l->out_pass =
                !l->nf_hard && (flips <= 1e-3 || (golden && l->gb.fail_fraction <= 2 * l->ga.fail_fraction + 1e-3));
            if (golden)
                snprintf(l->out_rule, sizeof l->out_rule,
                         "labels: %.3g%% differ; against the float32 golden run A %.3g%%, B %.3g%% (B within twice "
                         "A's + 0.1%%)",
                         100 * flips, 100 * l->ga.fail_fraction, 100 * l->gb.fail_fraction);
            else
                snprintf(l->out_rule, sizeof l->out_rule, "labels: %.3g%% differ (at most 0.1%%)", 100 * flips);
        } else if (l->counts_differ) {
            /* an index or count output of a detection op (NMS's Index, RoisNum) follows the
             * boxes: judged with the op's detection output; anything else cannot be compared */
            const cd_layer_cmp *sib = NULL;
            for (int j = 0; j < a->n_layers && !sib; j++)
                if (j != i && a->layers[j].op_index == l->op_index && !strcmp(a->layers[j].task, "detection"))
                    sib = &a->layers[j];
            l->out_pass =
                sib && ((sib->det_ref == sib->det_val && sib->det_matched == sib->det_ref) || sib->det_golden_ok);
            snprintf(l->out_rule, sizeof l->out_rule, "%s",
                     sib ? "element count differs: judged with this op's detection output (its boxes)"
                         : "element counts differ between the runs: not comparable");
        } else {
            l->out_pass = cd_policy_output_pass(p, &l->m) && !l->nf_hard;
            if (p->user)
                snprintf(l->out_rule, sizeof l->out_rule, "%s", l->rule);
            else
                snprintf(l->out_rule, sizeof l->out_rule, "output: range %g, cosine %g", p->out_range, p->out_min_cos);
        }
        /* A quantized model's output means something only to within its own quantization
         * error: A against the unquantized float model (run float_ref). Two quantized
         * evaluations each that close to the float model are within twice that of each other;
         * B is held to that (plus the float tolerance), not to bit-level agreement. */
        /* the model's own yardsticks (docs/verdicts.md "Output tolerance") */
        if (!l->out_pass && !l->nf_hard && !p->user) {
            if (cd_output_half_floor(l)) {
                l->out_pass = true;
                snprintf(l->out_rule, sizeof l->out_rule,
                         "fp16: below half's normal range (max|ref| %.2g, golden %.2g < 2^-14), off by %.2g < 2^-14: "
                         "what half cannot represent there",
                         l->m.ref_absmax, l->gref_b.has ? l->gref_b.ref_absmax : l->gref_a.ref_absmax, l->m.max_abs);
            } else if (l->gref_b.has && cd_output_yardstick(l, p, l->gref_b.range_err, l->gref_b.cos, true)) {
                l->out_pass = true;
                snprintf(
                    l->out_rule, sizeof l->out_rule,
                    "fp16: B no further from the float32 golden run (range %.3g, cosine %.6f) than the tolerance or "
                    "A (range %.3g, cosine %.6f)",
                    l->gref_b.range_err, l->gref_b.cos, l->gref_a.range_err, l->gref_a.cos);
            } else if (!l->m.nonfinite_mismatch && cd_output_yardstick(l, p, l->out_range_err, l->m.cosine, false)) {
                l->out_pass = true;
                snprintf(l->out_rule, sizeof l->out_rule,
                         "quantized: within twice the model's own quantization error (A vs float model: range %.3g, "
                         "cosine %.6f)",
                         l->qref.range_err, l->qref.cos);
            }
        }
        if (!l->out_pass) a->n_out_fail++;
    }
    top_by(a, a->amplifiers, &a->n_amplifiers, growth_key, amp_want);
    top_by(a, a->contributors, &a->n_contributors, contrib_key, contrib_want);
    if (a->verdict == CD_VERDICT_CRASH) {
        a->kind = CD_KIND_CRASH;
        return;
    }
    if (a->first_fault >= 0) a->kind = CD_KIND_FAULT;
    /* a model defect explains failing outputs: not drift */
    else if (a->n_defects)
        a->kind = CD_KIND_DEFECT;
    /* NaN/Inf where the float32 golden run is finite (fp16 range overflow) is never noise:
     * a correct kernel cannot fix it, so it is drift of the model in that precision */
    else if (a->n_out_fail || a->n_nonfinite_hard)
        a->kind = CD_KIND_DRIFT;
    else if (a->n_nondet)
        a->kind = CD_KIND_NONDET;
    else
        a->kind = CD_KIND_PASS;
    a->verdict = a->kind == CD_KIND_PASS ? CD_VERDICT_PASS : CD_VERDICT_FAIL;
}
