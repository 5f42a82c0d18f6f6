#include "compare/analysis.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cd_analyze(cd_analysis *a) {
    a->first_fail = -1;
    a->n_fail = 0;
    a->n_jumps = 0;
    a->nonfinite_origin = -1;
    a->n_nonfinite_hard = 0;
    a->nonfinite_side[0] = 0;
    a->n_nondet = 0;
    a->first_nondet = -1;
    double prev = -1, floor_ = a->noise_floor > 0 ? a->noise_floor : 1e-6;
    for (int i = 0; i < a->n_layers; i++) {
        cd_layer_cmp *l = &a->layers[i];
        const cd_metrics *m = &l->m;
        if (m->nonfinite_mismatch) l->rel_err = INFINITY;
        else if (m->ref_rms > 0) l->rel_err = m->rmse / m->ref_rms;
        else l->rel_err = m->rmse;
        /* Growth relative to the previous layer, both floored at the rounding-noise level,
         * so that going from exact (0) to a few ulps is not reported as a jump. */
        double base = prev > floor_ ? prev : floor_, cur = l->rel_err > floor_ ? l->rel_err : floor_;
        l->growth = prev < 0 ? 1.0 : cur / base;
        l->jump = prev >= 0 && l->growth > CD_JUMP_GROWTH;
        prev = l->rel_err;
        if (!m->pass) {
            a->n_fail++;
            if (a->first_fail < 0) a->first_fail = i;
        }
        /* Origin of NaN/Inf: the first layer where a side holds NaN/Inf at a position the
         * reference (golden, else the other side) has finite, whatever later layers do with
         * it (a sigmoid or a max can absorb it and make the output look finite). */
        if (l->nf_hard) {
            a->n_nonfinite_hard++;
            if (a->nonfinite_origin < 0) {
                a->nonfinite_origin = i;
                snprintf(a->nonfinite_side, sizeof a->nonfinite_side, "%s",
                         l->nf_new_a && l->nf_new_b ? "a+b" : l->nf_new_a ? "a" : "b");
            }
        }
        if (l->nondet) {
            a->n_nondet++;
            if (a->first_nondet < 0) a->first_nondet = i;
        }
    }
    /* The largest jumps, by growth, descending. */
    for (int i = 0; i < a->n_layers; i++) {
        if (!a->layers[i].jump) continue;
        int k = a->n_jumps < 8 ? a->n_jumps++ : 7;
        if (k == 7 && a->n_jumps == 8 && a->layers[a->jumps[7]].growth >= a->layers[i].growth) continue;
        a->jumps[k] = i;
        while (k > 0 && a->layers[a->jumps[k - 1]].growth < a->layers[a->jumps[k]].growth) {
            int t = a->jumps[k - 1]; a->jumps[k - 1] = a->jumps[k]; a->jumps[k] = t; k--;
        }
    }
    /* A nondeterministic layer fails the run even when every repeat is within tolerance. */
    if (a->verdict != CD_VERDICT_CRASH) a->verdict = (a->n_fail || a->n_nondet) ? CD_VERDICT_FAIL : CD_VERDICT_PASS;
    snprintf(a->first_kind, sizeof a->first_kind, "%s", a->first_fail < 0 ? "none" : "unknown");
}

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
    if (!l->isolated) return;
    /* Within tolerance on A's inputs: the layer is right and only inherits error. */
    snprintf(a->first_kind, sizeof a->first_kind, "%s", l->iso.pass ? "inherited" : "local");
}

void cd_analysis_free(cd_analysis *a) {
    free(a->layers);
    a->layers = NULL;
    free(a->pins);
    a->pins = NULL;
    a->n_pins = 0;
    a->n_layers = 0;
}
