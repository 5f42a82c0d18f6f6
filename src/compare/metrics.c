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

void cd_metrics_compute(const float *ref, const float *val, int64_t n, const cd_shape *shape, bool half_ulps,
                        const cd_tol *tol, cd_metrics *m) {
    cd_metrics_compute_mt(ref, val, n, shape, half_ulps, tol, m, 1);
}

void cd_metrics_compute_mt(const float *ref, const float *val, int64_t n, const cd_shape *shape, bool half_ulps,
                           const cd_tol *tol, cd_metrics *m, int threads) {
    memset(m, 0, sizeof *m);
    m->n = n;
    m->worst_index = -1;
    int64_t nb = n > 0 ? (n + CD_METRICS_BLOCK - 1) / CD_METRICS_BLOCK : 0;
    pass2_part one;
    double one1[2];
    pass2_part *parts = nb > 1 ? malloc((size_t)nb * sizeof *parts) : &one;
    double *p1 = nb > 1 ? malloc((size_t)nb * 2 * sizeof *p1) : one1;
    if (!parts || !p1) { /* no memory for the partials: one thread, the same blocks in turn */
        if (parts != &one) free(parts);
        if (p1 != one1) free(p1);
        parts = NULL;
        p1 = NULL;
    }
    int nt = threads > 1 && nb > 1 && parts ? threads : 1;
    /* Pass 1 gives the reference scale for the relative-error guard; both passes stream. */
    double sum_ref2 = 0, absmax = 0;
    if (parts) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t b = 0; b < nb; b++) {
            int64_t lo = b * CD_METRICS_BLOCK, hi = lo + CD_METRICS_BLOCK < n ? lo + CD_METRICS_BLOCK : n;
            pass1_block(ref, lo, hi, &p1[2 * b], &p1[2 * b + 1]);
        }
    }
    for (int64_t b = 0; b < nb; b++) {
        double s2, mx;
        if (p1) {
            s2 = p1[2 * b];
            mx = p1[2 * b + 1];
        } else {
            int64_t lo = b * CD_METRICS_BLOCK, hi = lo + CD_METRICS_BLOCK < n ? lo + CD_METRICS_BLOCK : n;
            pass1_block(ref, lo, hi, &s2, &mx);
        }
        sum_ref2 += s2;
        if (mx > absmax) absmax = mx;
    }
    m->ref_absmax = absmax;
    m->ref_rms = n ? sqrt(sum_ref2 / (double)n) : 0;
    /* Relative error is meaningless where the reference is ~0; below 1e-3 of the tensor's
     * RMS we divide by that floor instead (and by the smallest normal float if all zero). */
    m->rel_floor = m->ref_rms > 0 ? 1e-3 * m->ref_rms : 1.17549435e-38;
    pass2_args args = {.ref = ref,
                       .val = val,
                       .half_ulps = half_ulps,
                       .atol = tol->atol + tol->range_atol * absmax,
                       .rtol = tol->rtol,
                       .rel_floor = m->rel_floor};
    if (parts) {
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
        for (int64_t b = 0; b < nb; b++) {
            int64_t lo = b * CD_METRICS_BLOCK, hi = lo + CD_METRICS_BLOCK < n ? lo + CD_METRICS_BLOCK : n;
            pass2_block(&args, lo, hi, &parts[b]);
        }
    }
    double sum_abs = 0, sum_d2 = 0, dot = 0, sv2 = 0;
    int64_t finite_n = 0;
    for (int64_t b = 0; b < nb; b++) {
        pass2_part q;
        const pass2_part *p = parts ? &parts[b] : &q;
        if (!parts) {
            int64_t lo = b * CD_METRICS_BLOCK, hi = lo + CD_METRICS_BLOCK < n ? lo + CD_METRICS_BLOCK : n;
            pass2_block(&args, lo, hi, &q);
        }
        sum_abs += p->sum_abs;
        sum_d2 += p->sum_d2;
        dot += p->dot;
        sv2 += p->sv2;
        finite_n += p->finite_n;
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
    if (parts && parts != &one) free(parts);
    if (p1 && p1 != one1) free(p1);
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
