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
        if (a->nonfinite_origin < 0 && (m->nan_val + m->inf_val) > 0 && (m->nan_ref + m->inf_ref) == 0)
            a->nonfinite_origin = i;
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
    if (a->verdict != CD_VERDICT_CRASH) a->verdict = a->n_fail ? CD_VERDICT_FAIL : CD_VERDICT_PASS;
    snprintf(a->first_kind, sizeof a->first_kind, "%s", a->first_fail < 0 ? "none" : "unknown");
}

void cd_classify_first(cd_analysis *a) {
    if (a->first_fail < 0) return;
    cd_layer_cmp *l = &a->layers[a->first_fail];
    if (!l->isolated) return;
    /* Within tolerance on A's inputs: the layer is right and only inherits error. */
    snprintf(a->first_kind, sizeof a->first_kind, "%s", l->iso.pass ? "inherited" : "local");
}

void cd_analysis_free(cd_analysis *a) {
    free(a->layers);
    a->layers = NULL;
    a->n_layers = 0;
}
