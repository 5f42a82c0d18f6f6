#include "compare/metrics.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/fp16.h"

/* Maps a float to an integer line where adjacent representable values differ by one. */
static inline int64_t ordered_bits32(float f) {
    int32_t i;
    memcpy(&i, &f, 4);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
}

static inline int64_t ordered_bits16(float f) {
    uint16_t h = cd_float_to_half(f);
    int32_t i = (h & 0x8000) ? -(int32_t)(h & 0x7fff) : (int32_t)h;
    return i;
}

/* The ULP distance of two finite floats (the metrics loop's hot path). */
static inline double ulp_finite(float a, float b, bool half) {
    int64_t d = half ? ordered_bits16(a) - ordered_bits16(b) : ordered_bits32(a) - ordered_bits32(b);
    return (double)(d < 0 ? -d : d);
}

double cd_ulp_distance(float a, float b, bool half) {
    if (isnan(a) || isnan(b)) return (isnan(a) && isnan(b)) ? 0 : INFINITY;
    return ulp_finite(a, b, half);
}

static inline bool finite_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    return (x & 0x7f800000u) != 0x7f800000u;
}

/* The metrics are defined over fixed blocks of CD_METRICS_BLOCK elements: each block's sums,
 * maxima and counts, then the blocks combined in index order. A block's arithmetic is the same
 * whoever computes it, so the result does not depend on the thread count (and the blocked sums
 * are no less accurate than one running sum). */
#define CD_METRICS_BLOCK ((int64_t)1 << 16)

typedef struct pass2_part {
    double sum_abs, sum_d2, dot, sv2, max_abs, max_rel, max_ulp;
    int64_t worst, fail, finite_n, nan_ref, nan_val, inf_ref, inf_val, nonfinite_mismatch;
} pass2_part;

typedef struct pass2_args {
    const float *ref, *val;
    bool half_ulps;
    double atol, rtol, rel_floor;
} pass2_args;

static void pass1_block(const float *ref, int64_t lo, int64_t hi, double *sum_ref2, double *absmax) {
    double s2 = 0, mx = 0;
    for (int64_t i = lo; i < hi; i++) {
        double r = ref[i];
        if (isfinite(r)) {
            s2 += r * r;
            if (fabs(r) > mx) mx = fabs(r);
        }
    }
    *sum_ref2 = s2;
    *absmax = mx;
}

static void pass2_block(const pass2_args *a, int64_t lo, int64_t hi, pass2_part *p) {
    memset(p, 0, sizeof *p);
    p->worst = -1;
    const float *ref = a->ref, *val = a->val;
    const double atol = a->atol, rtol = a->rtol, rel_floor = a->rel_floor;
    /* running maxima and counts in locals: the compiler keeps them in registers */
    double sum_abs = 0, sum_d2 = 0, dot = 0, sv2 = 0, max_abs = 0, max_rel = 0, max_ulp = 0;
    int64_t worst = -1, fail = 0, finite_n = 0;
    for (int64_t i = lo; i < hi; i++) {
        float r = ref[i], v = val[i];
        if (!finite_bits(r) || !finite_bits(v)) {
            if (isnan(r))
                p->nan_ref++;
            else if (isinf(r))
                p->inf_ref++;
            if (isnan(v))
                p->nan_val++;
            else if (isinf(v))
                p->inf_val++;
            bool same = (isnan(r) && isnan(v)) || (isinf(r) && isinf(v) && (r > 0) == (v > 0));
            if (!same) {
                p->nonfinite_mismatch++;
                fail++;
            }
            continue;
        }
        double d = fabs((double)r - (double)v);
        finite_n++;
        sum_abs += d;
        sum_d2 += d * d;
        dot += (double)r * v;
        sv2 += (double)v * v;
        if (d > max_abs || worst < 0) {
            max_abs = d;
            worst = i;
        }
        double ar = fabs((double)r);
        double den = ar > rel_floor ? ar : rel_floor;
        /* d / den > max_rel can only hold where d > max_rel * den; the product, shrunk by more
         * than its rounding error, filters out the division (a long one) for almost every
         * element without changing which quotient wins */
        double lim = max_rel * den;
        if (d > lim * (1.0 - 0x1p-50) || lim < 0x1p-1000) {
            double q = d / den;
            if (q > max_rel) max_rel = q;
        }
        if (d != 0) { /* equal values are 0 ULPs apart (+0 and -0 included) */
            double u = ulp_finite(r, v, a->half_ulps);
            if (u > max_ulp) max_ulp = u;
        }
        if (d > atol + rtol * ar) fail++;
    }
    p->sum_abs = sum_abs;
    p->sum_d2 = sum_d2;
    p->dot = dot;
    p->sv2 = sv2;
    p->max_abs = max_abs;
    p->max_rel = max_rel;
    p->max_ulp = max_ulp;
    p->worst = worst;
    p->fail = fail;
    p->finite_n = finite_n;
}

/* ---- the fused all-finite path ----
 * Most blocks hold no NaN or Inf on any side. There one loop serves every pair of the layer
 * (A against B, and with a golden tensor golden against A and against B): each element is
 * read once, its ULP index computed once per tensor, the golden side's guard and threshold
 * once for both of its pairs. Each pair keeps its own accumulators, updated element by
 * element in index order with the general loop's arithmetic, so every block's partials are
 * bit for bit what pass2_block gives (the unit tests compare the two on random data). */

/* The binary16 ordered index of a finite float: ordered_bits16 without the general
 * conversion's branches. At and above the smallest normal half, adding 0xfff plus the kept low
 * bit to the magnitude rounds away its 13 low bits to nearest even (carrying into the exponent
 * as it should), and the result is capped at the infinity 0x7c00 (where cd_float_to_half
 * overflows). Below it the float sum |f| + 0.5 rounds |f| to a multiple of 2^-24, the
 * subnormal half step and the float step in [0.5, 1), to nearest even (the default rounding
 * mode, which cldiff never changes); its low bits are the subnormal half. */
static inline int32_t half_order_fast(float f) {
    uint32_t x, sb;
    memcpy(&x, &f, 4);
    uint32_t ax = x & 0x7fffffffu;
    uint32_t mn = ((ax + 0xfffu + ((ax >> 13) & 1u)) >> 13) - (112u << 10);
    mn = mn > 0x7c00u ? 0x7c00u : mn;
    float s = fabsf(f) + 0.5f;
    memcpy(&sb, &s, 4);
    /* selected by masks, not a branch: the data decide which side (half of all values are
     * negative, many are small) */
    uint32_t normal = -(uint32_t)(ax >= 0x38800000u);
    uint32_t mag = (mn & normal) | ((sb - 0x3f000000u) & ~normal);
    int32_t sg = -(int32_t)(x >> 31); /* 0 or -1 */
    return ((int32_t)mag ^ sg) - sg;
}

int32_t cd_metrics_half_order(float f) { return half_order_fast(f); }

/* One pair's running partials in the fused loop (the reference's sum of squares and the
 * candidate's are shared between pairs, see fast_block). */
typedef struct pair_acc {
    double sum_abs, sum_d2, dot, max_abs, max_rel;
    double rel_lim;  /* max_rel shrunk by 2^-50 relative: filters the divisions, see pair_step */
    int64_t max_ulp; /* exact integers, converted once at the end */
    int64_t worst, fail;
} pair_acc;

/* pass2_block's arithmetic for one finite element; ou, ov are the ULP indices of r and v.
 * Equal values are 0 ULPs apart in both indices (+0 and -0 included), so the distance needs
 * no d != 0 test; den and thr are the reference's guard and fail threshold. */
static inline __attribute__((always_inline)) void pair_step(pair_acc *s, double r, double v, int64_t our, int64_t ov,
                                                            int64_t i, double den, double thr) {
    double d = fabs(r - v);
    s->sum_abs += d;
    s->sum_d2 += d * d;
    s->dot += r * v;
    if (d > s->max_abs) { /* max_abs starts below 0: the block's first element sets it */
        s->max_abs = d;
        s->worst = i;
    }
    /* Only a quotient d / den above max_rel changes max_rel, so any test that lets every such
     * element through gives the same result. d / den > max_rel means d > max_rel * den exactly;
     * rel_lim * den, rounded, stays below that by the 2^-50 shrink (two roundings of 2^-53
     * each) unless it is too small to have a relative rounding error bound. */
    double lim = s->rel_lim * den;
    if (d > lim || lim < 0x1p-1000) {
        double q = d / den;
        if (q > s->max_rel) {
            s->max_rel = q;
            s->rel_lim = q * (1.0 - 0x1p-50);
        }
    }
    int64_t du = our - ov, sg = du >> 63;
    du = (du ^ sg) - sg; /* |du| without a branch on the sign */
    s->max_ulp = du > s->max_ulp ? du : s->max_ulp;
    s->fail += d > thr;
}

static void pair_acc_init(pair_acc *s) {
    memset(s, 0, sizeof *s);
    s->max_abs = -1;
    s->worst = -1;
}

static void pair_acc_store(const pair_acc *s, double sv2, int64_t n, pass2_part *p) {
    memset(p, 0, sizeof *p);
    p->sum_abs = s->sum_abs;
    p->sum_d2 = s->sum_d2;
    p->dot = s->dot;
    p->sv2 = sv2;
    p->max_abs = s->max_abs;
    p->max_rel = s->max_rel;
    p->max_ulp = (double)s->max_ulp;
    p->worst = s->worst;
    p->fail = s->fail;
    p->finite_n = n;
}

/* What one layer's comparison needs in pass 2: A against B (args[0]) and, with g, golden
 * against A (args[1]) and against B (args[2]). */
typedef struct layer_args {
    const float *a, *b, *g;
    pass2_args args[3];
    bool fast;
} layer_args;

static inline __attribute__((always_inline)) int64_t order_of(float f, bool half) {
    return half ? half_order_fast(f) : ordered_bits32(f);
}

/* The fused loop over an all-finite block; half and golden are constants in each copy. */
static inline __attribute__((always_inline)) void fast_block(const layer_args *L, int64_t lo, int64_t hi, double s2a,
                                                             pass2_part *out, bool half, bool golden) {
    const float *a = L->a, *b = L->b, *g = L->g;
    const double rtol = L->args[0].rtol, atol_a = L->args[0].atol, floor_a = L->args[0].rel_floor;
    const double atol_g = L->args[1].atol, floor_g = L->args[1].rel_floor;
    pair_acc ab, ga, gb;
    pair_acc_init(&ab);
    pair_acc_init(&ga);
    pair_acc_init(&gb);
    double sv2_b = 0;
    for (int64_t i = lo; i < hi; i++) {
        double ra = a[i], vb = b[i];
        int64_t oa = order_of(a[i], half), ob = order_of(b[i], half);
        double ara = fabs(ra);
        pair_step(&ab, ra, vb, oa, ob, i, ara > floor_a ? ara : floor_a, atol_a + rtol * ara);
        sv2_b += vb * vb;
        if (golden) {
            double rg = g[i];
            int64_t og = order_of(g[i], half);
            double arg = fabs(rg), den = arg > floor_g ? arg : floor_g, thr = atol_g + rtol * arg;
            pair_step(&ga, rg, ra, og, oa, i, den, thr);
            pair_step(&gb, rg, vb, og, ob, i, den, thr);
        }
    }
    /* A's sum of squares over an all-finite block is pass 1's (the same sum in the same order) */
    pair_acc_store(&ab, sv2_b, hi - lo, &out[0]);
    if (golden) {
        pair_acc_store(&ga, s2a, hi - lo, &out[1]);
        pair_acc_store(&gb, sv2_b, hi - lo, &out[2]);
    }
}

static void fast_block_h3(const layer_args *L, int64_t lo, int64_t hi, double s2a, pass2_part *out) {
    fast_block(L, lo, hi, s2a, out, true, true);
}
static void fast_block_h1(const layer_args *L, int64_t lo, int64_t hi, double s2a, pass2_part *out) {
    fast_block(L, lo, hi, s2a, out, true, false);
}
static void fast_block_f3(const layer_args *L, int64_t lo, int64_t hi, double s2a, pass2_part *out) {
    fast_block(L, lo, hi, s2a, out, false, true);
}
static void fast_block_f1(const layer_args *L, int64_t lo, int64_t hi, double s2a, pass2_part *out) {
    fast_block(L, lo, hi, s2a, out, false, false);
}

static bool all_finite(const float *x, int64_t lo, int64_t hi) {
    uint32_t bad = 0;
    for (int64_t i = lo; i < hi; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return !bad;
}

/* Pass 2 of block [lo, hi) for every pair of the layer into out[0..2]; s2a is pass 1's sum of
 * squares of A over the block. */
static void layer_block(const layer_args *L, int64_t lo, int64_t hi, double s2a, pass2_part *out) {
    bool golden = L->g != NULL;
    if (L->fast && all_finite(L->a, lo, hi) && all_finite(L->b, lo, hi) && (!golden || all_finite(L->g, lo, hi))) {
        bool half = L->args[0].half_ulps;
        if (half)
            (golden ? fast_block_h3 : fast_block_h1)(L, lo, hi, s2a, out);
        else
            (golden ? fast_block_f3 : fast_block_f1)(L, lo, hi, s2a, out);
        return;
    }
    pass2_block(&L->args[0], lo, hi, &out[0]);
    if (golden) {
        pass2_block(&L->args[1], lo, hi, &out[1]);
        pass2_block(&L->args[2], lo, hi, &out[2]);
    }
}

/* ---- combining the blocks ---- */

typedef struct combine_state {
    double sum_ref2, sum_abs, sum_d2, dot, sv2;
    int64_t finite_n;
} combine_state;

static void metrics_begin(cd_metrics *m, int64_t n) {
    memset(m, 0, sizeof *m);
    m->n = n;
    m->worst_index = -1;
}

/* Pass 1's totals: the reference's scale and the relative-error guard. */
static void set_ref_scale(cd_metrics *m, combine_state *c, int64_t n, double sum_ref2, double absmax) {
    c->sum_ref2 = sum_ref2;
    m->ref_absmax = absmax;
    m->ref_rms = n ? sqrt(sum_ref2 / (double)n) : 0;
    /* Relative error is meaningless where the reference is ~0; below 1e-3 of the tensor's
     * RMS we divide by that floor instead (and by the smallest normal float if all zero). */
    m->rel_floor = m->ref_rms > 0 ? 1e-3 * m->ref_rms : 1.17549435e-38;
}

static pass2_args make_args(const float *ref, const float *val, bool half_ulps, const cd_tol *tol,
                            const cd_metrics *m) {
    return (pass2_args){.ref = ref,
                        .val = val,
                        .half_ulps = half_ulps,
                        .atol = tol->atol + tol->range_atol * m->ref_absmax,
                        .rtol = tol->rtol,
                        .rel_floor = m->rel_floor};
}

/* Adds block p (blocks in index order). */
static void combine_part(cd_metrics *m, combine_state *c, const pass2_part *p) {
    c->sum_abs += p->sum_abs;
    c->sum_d2 += p->sum_d2;
    c->dot += p->dot;
    c->sv2 += p->sv2;
    c->finite_n += p->finite_n;
    if (p->worst >= 0 && (p->max_abs > m->max_abs || m->worst_index < 0)) {
        m->max_abs = p->max_abs;
        m->worst_index = p->worst;
    }
    if (p->max_rel > m->max_rel) m->max_rel = p->max_rel;
    if (p->max_ulp > m->max_ulp) m->max_ulp = p->max_ulp;
    m->fail_count += p->fail;
    m->nan_ref += p->nan_ref;
    m->nan_val += p->nan_val;
    m->inf_ref += p->inf_ref;
    m->inf_val += p->inf_val;
    m->nonfinite_mismatch += p->nonfinite_mismatch;
}

static void metrics_finish(cd_metrics *m, const combine_state *c, const float *ref, const float *val, int64_t n,
                           const cd_shape *shape, const cd_tol *tol) {
    const double sum_ref2 = c->sum_ref2, sum_abs = c->sum_abs, sum_d2 = c->sum_d2, dot = c->dot, sv2 = c->sv2;
    const int64_t finite_n = c->finite_n;
    if (m->nonfinite_mismatch) { /* a NaN/Inf mismatch is the worst element */
        for (int64_t i = 0; i < n; i++) {
            bool rf = isfinite(ref[i]), vf = isfinite(val[i]);
            if (rf != vf ||
                (!rf && !vf && !(isnan(ref[i]) && isnan(val[i])) &&
                 !(isinf(ref[i]) && isinf(val[i]) && (ref[i] > 0) == (val[i] > 0)))) {
                m->worst_index = i;
                m->max_abs = INFINITY;
                break;
            }
        }
    }
    m->mean_abs = finite_n ? sum_abs / (double)finite_n : 0;
    m->rmse = finite_n ? sqrt(sum_d2 / (double)finite_n) : 0;
    if (sum_d2 == 0 && finite_n == n)
        m->cosine = 1; /* identical: exactly 1, not rounded */
    else if (sum_ref2 == 0 && sv2 == 0)
        m->cosine = 1;
    else if (sum_ref2 == 0 || sv2 == 0)
        m->cosine = 0;
    else
        m->cosine = dot / (sqrt(sum_ref2) * sqrt(sv2));
    if (m->cosine > 1) m->cosine = 1;
    m->snr_db = sum_d2 == 0 ? INFINITY : (sum_ref2 == 0 ? -INFINITY : 10 * log10(sum_ref2 / sum_d2));
    m->fail_fraction = n ? (double)m->fail_count / (double)n : 0;
    if (m->worst_index >= 0) {
        m->worst_ref = ref[m->worst_index];
        m->worst_val = val[m->worst_index];
        int64_t rem = m->worst_index;
        for (int k = shape ? shape->rank - 1 : -1; k >= 0; k--) {
            int64_t dk = shape->d[k] > 0 ? shape->d[k] : 1;
            m->worst_coord[k] = rem % dk;
            rem /= dk;
        }
    }
    m->pass = m->fail_fraction <= tol->max_fail_fraction && m->cosine >= tol->min_cos && m->nonfinite_mismatch == 0;
}

static inline void block_range(int64_t b, int64_t n, int64_t *lo, int64_t *hi) {
    *lo = b * CD_METRICS_BLOCK;
    *hi = *lo + CD_METRICS_BLOCK < n ? *lo + CD_METRICS_BLOCK : n;
}

/* Pass 1 of block b: A's sum of squares and max |.|, then golden's (when g). */
static void pass1_layer_block(const float *a, const float *g, int64_t b, int64_t n, double *out4) {
    int64_t lo, hi;
    block_range(b, n, &lo, &hi);
    pass1_block(a, lo, hi, &out4[0], &out4[1]);
    if (g) pass1_block(g, lo, hi, &out4[2], &out4[3]);
}

/* Every metric of a layer: A against B into mab and, when g is given, golden against A into mga
 * and golden against B into mgb, each exactly what cd_metrics_compute_mt gives for that pair
 * (blocks of fixed size combined in order, whatever the thread count). */
static void compute_layer(const float *a, const float *b, const float *g, int64_t n, const cd_shape *shape,
                          bool half_ulps, const cd_tol *tol, cd_metrics *mab, cd_metrics *mga, cd_metrics *mgb,
                          int threads, bool fast) {
    metrics_begin(mab, n);
    if (g) {
        metrics_begin(mga, n);
        metrics_begin(mgb, n);
    }
    int64_t nb = n > 0 ? (n + CD_METRICS_BLOCK - 1) / CD_METRICS_BLOCK : 0;
    pass2_part one[3];
    double one1[4];
    pass2_part *parts = nb > 1 ? malloc((size_t)nb * 3 * sizeof *parts) : one;
    double *p1 = nb > 1 ? malloc((size_t)nb * 4 * sizeof *p1) : one1;
    if (!parts || !p1) { /* no memory for the partials: one thread, the same blocks in turn */
        if (parts != one) free(parts);
        if (p1 != one1) free(p1);
        parts = NULL;
        p1 = NULL;
    }
    int nt = threads > 1 && nb > 1 && parts ? threads : 1;
    /* Pass 1 gives the reference scale for the relative-error guard; both passes stream. */
    if (parts) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t bk = 0; bk < nb; bk++) pass1_layer_block(a, g, bk, n, &p1[4 * bk]);
    }
    double s2a = 0, mxa = 0, s2g = 0, mxg = 0;
    for (int64_t bk = 0; bk < nb; bk++) {
        double q[4];
        const double *p = p1 ? &p1[4 * bk] : q;
        if (!p1) pass1_layer_block(a, g, bk, n, q);
        s2a += p[0];
        if (p[1] > mxa) mxa = p[1];
        if (g) {
            s2g += p[2];
            if (p[3] > mxg) mxg = p[3];
        }
    }
    combine_state cab = {0}, cga = {0}, cgb = {0};
    set_ref_scale(mab, &cab, n, s2a, mxa);
    layer_args L = {.a = a, .b = b, .g = g, .fast = fast};
    L.args[0] = make_args(a, b, half_ulps, tol, mab);
    if (g) {
        set_ref_scale(mga, &cga, n, s2g, mxg);
        set_ref_scale(mgb, &cgb, n, s2g, mxg);
        L.args[1] = make_args(g, a, half_ulps, tol, mga);
        L.args[2] = make_args(g, b, half_ulps, tol, mgb);
    }
    if (parts) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t bk = 0; bk < nb; bk++) {
            int64_t lo, hi;
            block_range(bk, n, &lo, &hi);
            layer_block(&L, lo, hi, p1[4 * bk], &parts[3 * bk]);
        }
    }
    for (int64_t bk = 0; bk < nb; bk++) {
        pass2_part q[3];
        const pass2_part *p = parts ? &parts[3 * bk] : q;
        if (!parts) {
            int64_t lo, hi;
            double s[4];
            block_range(bk, n, &lo, &hi);
            pass1_layer_block(a, NULL, bk, n, s);
            layer_block(&L, lo, hi, s[0], q);
        }
        combine_part(mab, &cab, &p[0]);
        if (g) {
            combine_part(mga, &cga, &p[1]);
            combine_part(mgb, &cgb, &p[2]);
        }
    }
    if (parts && parts != one) free(parts);
    if (p1 && p1 != one1) free(p1);
    metrics_finish(mab, &cab, a, b, n, shape, tol);
    if (g) {
        metrics_finish(mga, &cga, g, a, n, shape, tol);
        metrics_finish(mgb, &cgb, g, b, n, shape, tol);
    }
}

void cd_metrics_compute(const float *ref, const float *val, int64_t n, const cd_shape *shape, bool half_ulps,
                        const cd_tol *tol, cd_metrics *m) {
    cd_metrics_compute_mt(ref, val, n, shape, half_ulps, tol, m, 1);
}

void cd_metrics_compute_mt(const float *ref, const float *val, int64_t n, const cd_shape *shape, bool half_ulps,
                           const cd_tol *tol, cd_metrics *m, int threads) {
    compute_layer(ref, val, NULL, n, shape, half_ulps, tol, m, NULL, NULL, threads, true);
}

void cd_metrics_compute_layer(const float *a, const float *b, const float *g, int64_t n, const cd_shape *shape,
                              bool half_ulps, const cd_tol *tol, cd_metrics *mab, cd_metrics *mga, cd_metrics *mgb,
                              int threads) {
    compute_layer(a, b, g, n, shape, half_ulps, tol, mab, mga, mgb, threads, true);
}

void cd_metrics_compute_general(const float *a, const float *b, const float *g, int64_t n, const cd_shape *shape,
                                bool half_ulps, const cd_tol *tol, cd_metrics *mab, cd_metrics *mga, cd_metrics *mgb,
                                int threads) {
    compute_layer(a, b, g, n, shape, half_ulps, tol, mab, mga, mgb, threads, false);
}

static void topk_idx(const float *row, int64_t w, int k, int64_t *out) {
    for (int j = 0; j < k; j++) out[j] = -1;
    for (int64_t i = 0; i < w; i++) {
        float x = row[i];
        for (int j = 0; j < k; j++) {
            if (out[j] < 0 || x > row[out[j]]) {
                memmove(out + j + 1, out + j, (size_t)(k - j - 1) * sizeof *out);
                out[j] = i;
                break;
            }
        }
    }
}

void cd_topk_agreement(const float *ref, const float *val, int64_t rows, int64_t width, double *top1, double *top5) {
    int k = width < 5 ? (int)width : 5;
    int64_t a1 = 0, a5 = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t ir[5], iv[5];
        topk_idx(ref + r * width, width, k, ir);
        topk_idx(val + r * width, width, k, iv);
        if (ir[0] == iv[0]) a1++;
        int same = 1;
        for (int i = 0; i < k && same; i++) {
            int found = 0;
            for (int j = 0; j < k; j++) found |= ir[i] == iv[j];
            same = found;
        }
        a5 += same;
    }
    *top1 = rows ? (double)a1 / (double)rows : 1;
    *top5 = rows ? (double)a5 / (double)rows : 1;
}
