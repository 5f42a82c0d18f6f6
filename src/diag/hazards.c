/* Accumulation lengths, FP16 hazard counts and ranking, and the auto tolerance. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "diag/diag.h"
#include "engine/op_list.h"

static const cd_shape *shape_of(const cd_plan *p, int id) { return id >= 0 ? &p->meta[id].shape : NULL; }

static int64_t prod(const cd_shape *s, int from, int to) {
    int64_t k = 1;
    for (int i = from; i < to && i < s->rank; i++) k *= s->d[i] > 0 ? s->d[i] : 1;
    return k;
}

static int norm_axis(int64_t axis, int rank) { return (int)(axis < 0 ? axis + rank : axis); }

/* The accumulation length K of a layer by its fp16 hazard class (the op table's `hazard`
 * column, engine/op_list.def). */
int64_t cd_diag_acc_len(const cd_plan *plan, int op_index) {
    const cd_op *op = &plan->g->ops[op_index];
    const char *t = op->type;
    const cd_op_info *oi = cd_op_info_find(t);
    cd_opl_hazard hz = oi ? oi->hazard : (!strncmp(t, "reduce_", 7) ? CD_ACC_REDUCE : CD_ACC_NONE);
    const cd_shape *x;
    switch (hz) {
    case CD_ACC_CONV:
    case CD_ACC_CONVT: {
        const cd_shape *f = shape_of(plan, cd_op_in(op, "Filter", 0));
        if (!f || f->rank < 3) return 1;
        int64_t g = cd_attr_int(op, "groups", 1);
        if (g < 1) g = 1;
        /* transpose filters are [Cin, Cout/groups, KH, KW]: each output sums Cin/groups
         * channels over the window (an upper bound: strides skip some taps) */
        if (hz == CD_ACC_CONVT) return (f->d[0] / g > 0 ? f->d[0] / g : 1) * prod(f, 2, f->rank);
        return prod(f, 1, f->rank);
    }
    case CD_ACC_FC: {
        const cd_shape *w = shape_of(plan, cd_op_in(op, "W", 0));
        return w && w->rank >= 1 ? (w->d[0] > 0 ? w->d[0] : 1) : 1;
    }
    case CD_ACC_MUL: {
        const cd_shape *y = shape_of(plan, cd_op_in(op, "Y", 0));
        if (!y) return 1;
        int64_t yn = cd_attr_int(op, "y_num_col_dims", 1);
        return prod(y, 0, (int)(yn < 1 ? 1 : yn));
    }
    case CD_ACC_MATMUL:
    case CD_ACC_MATMUL_V2: {
        x = shape_of(plan, cd_op_in(op, "X", 0));
        if (!x || x->rank < 1) return 1;
        bool tx = cd_attr_bool(op, hz == CD_ACC_MATMUL_V2 ? "trans_x" : "transpose_X", false);
        if (x->rank == 1) return x->d[0];
        return tx ? x->d[x->rank - 2] : x->d[x->rank - 1];
    }
    case CD_ACC_AXIS: {
        x = shape_of(plan, cd_op_in(op, "X", 0));
        if (!x || x->rank < 1) return 1;
        int a = norm_axis(cd_attr_int(op, "axis", -1), x->rank);
        return a >= 0 && a < x->rank ? x->d[a] : 1;
    }
    case CD_ACC_LAYER_NORM:
        x = shape_of(plan, cd_op_in(op, "X", 0));
        if (!x) return 1;
        return prod(x, norm_axis(cd_attr_int(op, "begin_norm_axis", 1), x->rank), x->rank);
    case CD_ACC_INSTANCE_NORM:
    case CD_ACC_GROUP_NORM: {
        x = shape_of(plan, cd_op_in(op, "X", 0));
        if (!x || x->rank < 3) return 1;
        int64_t k = prod(x, 2, x->rank);
        if (hz == CD_ACC_GROUP_NORM) {
            int64_t g = cd_attr_int(op, "groups", 1);
            k *= x->d[1] / (g > 0 ? g : 1);
        }
        return k;
    }
    case CD_ACC_POOL: {
        x = shape_of(plan, cd_op_in(op, "X", 0));
        if (cd_attr_bool(op, "global_pooling", false) && x && x->rank == 4) return x->d[2] * x->d[3];
        const int64_t *ks = NULL;
        int n = cd_attr_ints(op, "ksize", &ks);
        if (cd_attr_bool(op, "adaptive", false) && x && x->rank == 4 && n == 2 && ks[0] > 0 && ks[1] > 0)
            return ((x->d[2] + ks[0] - 1) / ks[0]) * ((x->d[3] + ks[1] - 1) / ks[1]);
        return n == 2 ? ks[0] * ks[1] : 1;
    }
    case CD_ACC_REDUCE:
    case CD_ACC_ALL: {
        x = shape_of(plan, cd_op_in(op, "X", 0));
        if (!x) return 1;
        if (hz == CD_ACC_ALL || cd_attr_bool(op, "reduce_all", false)) return prod(x, 0, x->rank);
        const int64_t *dims = NULL;
        int n = cd_attr_ints(op, "dim", &dims);
        if (n == 0) return prod(x, 0, x->rank);
        int64_t k = 1;
        for (int i = 0; i < n; i++) {
            int a = norm_axis(dims[i], x->rank);
            if (a >= 0 && a < x->rank) k *= x->d[a];
        }
        return k;
    }
    case CD_ACC_NONE: break;
    }
    return 1;
}

void cd_diag_hazard_counts(const float *g, int64_t n, int64_t *over, int64_t *under, double *absmax) {
    /* On the bits of |g| (integer compares of non-negative floats order them as their values,
     * NaN and Inf above every finite one), without branches, so the loop vectorizes: over is
     * 65504 < |g| < Inf, under 0 < |g| < 2^-14, and the largest finite |g| widens exactly. */
    const int32_t inf = 0x7f800000, hmax = 0x477fe000 /* 65504 */, hmin = 0x38800000 /* 2^-14 */;
    int64_t o = 0, u = 0;
    int32_t mx = 0;
    for (int64_t c = 0; c < n; c += 1 << 20) {
        int64_t e = c + (1 << 20) < n ? c + (1 << 20) : n;
        int32_t oc = 0, uc = 0, mc = 0; /* per chunk: no overflow */
        for (int64_t i = c; i < e; i++) {
            int32_t x;
            memcpy(&x, &g[i], 4);
            x &= 0x7fffffff;
            int32_t fin = x < inf;
            oc += fin & (x > hmax);
            uc += (x > 0) & (x < hmin);
            int32_t xf = fin ? x : 0;
            mc = xf > mc ? xf : mc;
        }
        o += oc;
        u += uc;
        mx = mc > mx ? mc : mx;
    }
    float m;
    memcpy(&m, &mx, 4);
    *over = o;
    *under = u;
    *absmax = m;
}

/* Risk score: an overflow is certain trouble (3 + log10 of the count); values within 8x of
 * the half maximum leave no headroom for a different summation order (2 + absmax/65504);
 * more than 0.1% of values below the smallest normal half are flushed or lose bits on many
 * GPUs (1 + that fraction); an accumulation long enough that u16*sqrt(K) exceeds the layer's
 * rtol predicts rounding error beyond tolerance (its ratio to rtol, capped below 1). */
void cd_diag_rank_hazards(cd_analysis *a) {
    a->n_at_risk = 0;
    for (int i = 0; i < a->n_layers; i++) {
        cd_layer_cmp *l = &a->layers[i];
        l->risk = 0;
        l->risk_rank = 0;
        l->risk_reason[0] = 0;
        if (!l->has_hazard) continue;
        double n = l->m.n > 0 ? (double)l->m.n : 1, ufrac = (double)l->g_under / n;
        double acc = CD_U_FP16 * sqrt((double)(l->acc_k > 0 ? l->acc_k : 1));
        if (l->g_over > 0) {
            l->risk = 3 + log10(1 + (double)l->g_over);
            snprintf(l->risk_reason, sizeof l->risk_reason, "overflow: %lld values above 65504", (long long)l->g_over);
        } else if (l->g_absmax > CD_HALF_MAX / 8) {
            l->risk = 2 + l->g_absmax / CD_HALF_MAX;
            snprintf(l->risk_reason, sizeof l->risk_reason, "near overflow: max |x| = %.4g (headroom %.2gx)",
                     l->g_absmax, CD_HALF_MAX / l->g_absmax);
        } else if (ufrac > 1e-3) {
            l->risk = 1 + ufrac;
            snprintf(l->risk_reason, sizeof l->risk_reason, "underflow: %.3g%% of values below 2^-14", 100 * ufrac);
        } else if (l->tol.rtol > 0 && acc > l->tol.rtol) {
            l->risk = fmin(0.999, acc / l->tol.rtol / 100);
            snprintf(l->risk_reason, sizeof l->risk_reason, "long accumulation: K = %lld, u*sqrt(K) = %.3g > rtol",
                     (long long)l->acc_k, acc);
        }
        if (l->risk > 0) a->n_at_risk++;
    }
    /* rank: 1 for the largest score, ties by execution order */
    for (int i = 0; i < a->n_layers; i++) {
        cd_layer_cmp *l = &a->layers[i];
        if (l->risk <= 0) continue;
        int r = 1;
        for (int j = 0; j < a->n_layers; j++) {
            const cd_layer_cmp *o = &a->layers[j];
            if (o->risk > l->risk || (o->risk == l->risk && o->risk > 0 && j < i)) r++;
        }
        l->risk_rank = r;
    }
}

cd_tol cd_diag_auto_tol(const cd_tol *base, bool fp16, int64_t k, double ref_rms, char *rule, size_t n) {
    double u = fp16 ? CD_U_FP16 : CD_U_FP32;
    double kk = (double)(k > 0 ? k : 1);
    cd_tol t = *base;
    t.atol = CD_AUTO_C * u * sqrt(kk) * ref_rms;
    t.rtol = CD_AUTO_C * u;
    /* an all-zero reference still needs a bound above exact zero */
    if (!(t.atol > 0)) t.atol = CD_AUTO_C * u * 1e-6;
    if (rule && n)
        snprintf(rule, n, "auto: %g*u*sqrt(K)*rms, u=2^%d K=%lld rms=%.3g", CD_AUTO_C, fp16 ? -11 : -24,
                 (long long)(k > 0 ? k : 1), ref_rms);
    return t;
}
