#include "compare/analysis.h"
#include "compare/bounds.h"
#include "compare/policy.h"
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
        if (m->nonfinite_mismatch)
            l->rel_err = INFINITY;
        else if (m->ref_rms > 0)
            l->rel_err = m->rmse / m->ref_rms;
        else
            l->rel_err = m->rmse;
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
                         l->nf_new_a && l->nf_new_b ? "a+b"
                             : l->nf_new_a          ? "a"
                                                    : "b");
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
            int t = a->jumps[k - 1];
            a->jumps[k - 1] = a->jumps[k];
            a->jumps[k] = t;
            k--;
        }
    }
    /* A nondeterministic layer fails the run even when every repeat is within tolerance. */
    if (a->verdict != CD_VERDICT_CRASH) a->verdict = (a->n_fail || a->n_nondet) ? CD_VERDICT_FAIL : CD_VERDICT_PASS;
    snprintf(a->first_kind, sizeof a->first_kind, "%s", a->first_fail < 0 ? "none" : "unknown");
}

bool cd_output_half_floor(const cd_layer_cmp *l) {
    /* only where a golden run was compared (fp16); the golden run itself below 2^-14, so that
     * an output the fp16 run underflowed from a normal value stays drift */
    if (!l->gref_a.has && !l->gref_b.has) return false;
    double g = l->gref_b.has ? l->gref_b.ref_absmax : l->gref_a.ref_absmax;
    if (l->gref_a.has && l->gref_a.ref_absmax > g) g = l->gref_a.ref_absmax;
    const cd_metrics *m = &l->m;
    return !m->nonfinite_mismatch && m->ref_absmax < CD_ETA16 && m->max_abs < CD_ETA16 && g < CD_ETA16;
}

bool cd_output_yardstick(const cd_layer_cmp *l, const cd_policy *p, double range_err, double cosine, bool vs_golden) {
    if (cd_output_half_floor(l)) return true;
    if (vs_golden) {
        /* fp16: both sides approximate the float32 model (the golden run); an output no further
         * from it than the fp16 tolerance or than A's own half arithmetic is not drifting */
        if (!l->gref_b.has && !l->gref_a.has) return false;
        double lim_r = p->out_range, lim_c = 1 - p->out_min_cos;
        if (l->gref_a.has && l->gref_a.range_err > lim_r) lim_r = l->gref_a.range_err;
        if (l->gref_a.has && 1 - l->gref_a.cos > lim_c) lim_c = 1 - l->gref_a.cos;
        return range_err <= lim_r && 1 - cosine <= lim_c;
    }
    /* a quantized model's output means something only to within its own quantization error
     * (A against the unquantized float model, run float_ref): two quantized evaluations each
     * that close to the float model are within twice that of each other */
    if (!l->qref.has) return false;
    return range_err <= 2 * l->qref.range_err + p->out_range &&
        1 - cosine <= 2 * (1 - l->qref.cos) + (1 - p->out_min_cos);
}

void cd_analysis_free(cd_analysis *a) {
    free(a->layers);
    a->layers = NULL;
    free(a->pins);
    a->pins = NULL;
    a->n_pins = 0;
    a->n_layers = 0;
}
