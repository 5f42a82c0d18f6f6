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
#define CD_METRICS_MIN_PARALLEL 4

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

/* The fused loop keeps the three pairs in the lanes of two 2-double vectors: lane 0 of the
 * first is A against B (reference a, candidate b), lane 1 golden against A; lane 0 of the
 * second is golden against B, lane 1 B's sum of squares (the candidate's, shared by A against
 * B and golden against B). A lane's arithmetic is IEEE double arithmetic on that lane alone, so
 * each lane's running sum is the general loop's sum, element by element in index order. GCC and
 * clang vector extensions (SSE2 on x86-64). */
typedef double v2d __attribute__((vector_size(16)));
typedef int64_t v2l __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));

/* Elements per chunk: the order-free parts (ULPs, fail counts, the chunk's largest error, the
 * relative-error filter) are reduced per chunk; the rare updates rescan the chunk. */
#define FUSED_CHUNK 256

/* mask ? x : y per lane */
static inline v2d v2d_select(v2l mask, v2d x, v2d y) { return (v2d)(((v2l)x & mask) | ((v2l)y & ~mask)); }

/* half_order_fast on four floats. */
static inline v4i half_order_v4(v4f f) {
    v4i x = (v4i)f, ax = x & 0x7fffffff;
    v4i mn = ((ax + 0xfff + ((ax >> 13) & 1)) >> 13) - (112 << 10); /* ax + 0x1000 fits: finite */
    v4i big = mn > 0x7c00;
    mn = (mn & ~big) | (0x7c00 & big);
    v4i sub = (v4i)((v4f)ax + 0.5f) - 0x3f000000;
    v4i normal = ax >= 0x38800000;
    v4i mag = (mn & normal) | (sub & ~normal);
    v4i sg = x >> 31;
    return (mag ^ sg) - sg;
}

static inline v4i v4i_absdiff(v4i p, v4i q) {
    v4i d = p - q, sg = d >> 31;
    return (d ^ sg) - sg;
}

static inline v4i v4i_max(v4i p, v4i q) {
    v4i m = p > q;
    return (p & m) | (q & ~m);
}

void cd_metrics_half_order4(const float *f, int32_t *out) {
    v4f x;
    memcpy(&x, f, sizeof x);
    v4i o = half_order_v4(x);
    memcpy(out, &o, sizeof o);
}

/* Largest ULP distance of each pair over [lo, hi) into u[0..2] (running maxima). */
static void chunk_ulps(const float *a, const float *b, const float *g, int64_t lo, int64_t hi, bool half, int64_t *u) {
    int64_t i = lo;
    if (half) {
        v4i m0 = {0, 0, 0, 0}, m1 = m0, m2 = m0;
        for (; i + 4 <= hi; i += 4) {
            v4f fa, fb, fg;
            memcpy(&fa, a + i, sizeof fa);
            memcpy(&fb, b + i, sizeof fb);
            v4i oa = half_order_v4(fa), ob = half_order_v4(fb);
            m0 = v4i_max(m0, v4i_absdiff(oa, ob));
            if (g) {
                memcpy(&fg, g + i, sizeof fg);
                v4i og = half_order_v4(fg);
                m1 = v4i_max(m1, v4i_absdiff(og, oa));
                m2 = v4i_max(m2, v4i_absdiff(og, ob));
            }
        }
        for (int k = 0; k < 4; k++) {
            if (m0[k] > u[0]) u[0] = m0[k];
            if (m1[k] > u[1]) u[1] = m1[k];
            if (m2[k] > u[2]) u[2] = m2[k];
        }
    }
    for (; i < hi; i++) {
        int64_t oa = half ? half_order_fast(a[i]) : ordered_bits32(a[i]);
        int64_t ob = half ? half_order_fast(b[i]) : ordered_bits32(b[i]);
        int64_t d = oa > ob ? oa - ob : ob - oa;
        if (d > u[0]) u[0] = d;
        if (g) {
            int64_t og = half ? half_order_fast(g[i]) : ordered_bits32(g[i]);
            int64_t d1 = og > oa ? og - oa : oa - og, d2 = og > ob ? og - ob : ob - og;
            if (d1 > u[1]) u[1] = d1;
            if (d2 > u[2]) u[2] = d2;
        }
    }
}

/* pass2_block's relative-error maximum of one pair over [lo, hi), continuing from *max_rel:
 * the same division filter (only a quotient above the running maximum changes it). */
static void chunk_max_rel(const float *r, const float *v, int64_t lo, int64_t hi, double rel_floor, double *max_rel) {
    double mr = *max_rel;
    for (int64_t i = lo; i < hi; i++) {
        double d = fabs((double)r[i] - (double)v[i]), ar = fabs((double)r[i]);
        double den = ar > rel_floor ? ar : rel_floor;
        double lim = mr * den;
        if (d > lim * (1.0 - 0x1p-50) || lim < 0x1p-1000) {
            double q = d / den;
            if (q > mr) mr = q;
        }
    }
    *max_rel = mr;
}

/* The first index in [lo, hi) where |r - v| equals dmax (the chunk's largest error). */
static int64_t chunk_first(const float *r, const float *v, int64_t lo, int64_t hi, double dmax) {
    for (int64_t i = lo; i < hi; i++)
        if (fabs((double)r[i] - (double)v[i]) == dmax) return i;
    return lo; /* not reached: dmax is one of the chunk's errors */
}

static void part_store(pass2_part *p, double sum_abs, double sum_d2, double dot, double sv2, double max_abs,
                       int64_t worst, double max_rel, int64_t max_ulp, int64_t fail, int64_t n) {
    memset(p, 0, sizeof *p);
    p->sum_abs = sum_abs;
    p->sum_d2 = sum_d2;
    p->dot = dot;
    p->sv2 = sv2;
    p->max_abs = max_abs;
    p->worst = worst;
    p->max_rel = max_rel;
    p->max_ulp = (double)max_ulp; /* exact: below 2^33 */
    p->fail = fail;
    p->finite_n = n;
}

/* What one layer's comparison needs in pass 2: A against B (args[0]) and, with g, golden
 * against A (args[1]) and against B (args[2]). */
typedef struct layer_args {
    const float *a, *b, *g;
    pass2_args args[3];
    bool fast;
} layer_args;

/* The fused loop over a block where A, B and golden are all finite. Per element, per lane: the error
 * d = |r - v|, the sums of d, d^2 and r*v, the fail test d > atol + rtol*|r|, the guard
 * max(|r|, rel_floor), exactly as pass2_block. */
static void fast_block(const layer_args *L, int64_t lo, int64_t hi, double s2a, pass2_part *out) {
    const float *a = L->a, *b = L->b, *g = L->g;
    const bool half = L->args[0].half_ulps;
    const pass2_args *pa = L->args;
    const double rtol = pa[0].rtol, atol_g = pa[1].atol, floor_g = pa[1].rel_floor;
    /* lane 3 compares B with itself: never fails (threshold +inf), guard 1 */
    /* the lane of B against itself never fails (threshold +inf) and has guard 1 */
    const v2d atol0 = {pa[0].atol, atol_g}, atol1 = {atol_g, INFINITY}, rt0 = {rtol, rtol}, rt1 = {rtol, 0};
    const v2d fl0 = {pa[0].rel_floor, floor_g}, fl1 = {floor_g, 1};
    const v2l absmask = {INT64_MAX, INT64_MAX};
    const v2d tiny = {0x1p-1000, 0x1p-1000};
    v2d s_abs0 = {0, 0}, s_abs1 = s_abs0, s_d20 = s_abs0, s_d21 = s_abs0, s_dot0 = s_abs0, s_dot1 = s_abs0;
    v2l fails0 = {0, 0}, fails1 = fails0;
    double max_abs[3] = {-1, -1, -1}, max_rel[3] = {0, 0, 0};
    int64_t worst[3] = {-1, -1, -1}, ulp[3] = {0, 0, 0};
    const float *ref[3] = {a, g, g}, *val[3] = {b, a, b};
    for (int64_t c = lo; c < hi; c += FUSED_CHUNK) {
        int64_t e = c + FUSED_CHUNK < hi ? c + FUSED_CHUNK : hi;
        /* the filter of the relative error, shrunk as in pass2_block (conservative: the running
         * maximum only grows within the chunk); the lane of B against itself never passes it */
        const v2d rl0 = {max_rel[0] * (1.0 - 0x1p-50), max_rel[1] * (1.0 - 0x1p-50)},
                  rl1 = {max_rel[2] * (1.0 - 0x1p-50), INFINITY};
        v2d cmax0 = {-1, -1}, cmax1 = cmax0;
        v2l cand0 = {0, 0}, cand1 = cand0;
        for (int64_t i = c; i < e; i++) {
            double ra = a[i], vb = b[i], rg = g[i];
            v2d x0 = {ra, rg}, y0 = {vb, ra}, x1 = {rg, vb}, y1 = {vb, vb};
            v2d d0 = (v2d)((v2l)(x0 - y0) & absmask), d1 = (v2d)((v2l)(x1 - y1) & absmask);
            v2d ax0 = (v2d)((v2l)x0 & absmask), ax1 = (v2d)((v2l)x1 & absmask);
            s_abs0 += d0;
            s_abs1 += d1;
            s_d20 += d0 * d0;
            s_d21 += d1 * d1;
            s_dot0 += x0 * y0;
            s_dot1 += x1 * y1;
            fails0 -= (v2l)(d0 > atol0 + rt0 * ax0); /* a true comparison is -1 */
            fails1 -= (v2l)(d1 > atol1 + rt1 * ax1);
            cmax0 = v2d_select((v2l)(d0 > cmax0), d0, cmax0);
            cmax1 = v2d_select((v2l)(d1 > cmax1), d1, cmax1);
            v2d lim0 = rl0 * v2d_select((v2l)(ax0 > fl0), ax0, fl0),
                lim1 = rl1 * v2d_select((v2l)(ax1 > fl1), ax1, fl1);
            cand0 |= (v2l)(d0 > lim0) | (v2l)(lim0 < tiny);
            cand1 |= (v2l)(d1 > lim1) | (v2l)(lim1 < tiny);
        }
        const double cmax[3] = {cmax0[0], cmax0[1], cmax1[0]};
        const int64_t cand[3] = {cand0[0], cand0[1], cand1[0]};
        for (int p = 0; p < 3; p++) {
            if (cmax[p] > max_abs[p]) { /* strictly larger: the first of equal errors stays */
                max_abs[p] = cmax[p];
                worst[p] = chunk_first(ref[p], val[p], c, e, cmax[p]);
            }
            if (cand[p]) chunk_max_rel(ref[p], val[p], c, e, pa[p].rel_floor, &max_rel[p]);
        }
        chunk_ulps(a, b, g, c, e, half, ulp);
    }
    /* A's sum of squares over an all-finite block is pass 1's (the same sum in the same order) */
    part_store(&out[0], s_abs0[0], s_d20[0], s_dot0[0], s_dot1[1], max_abs[0], worst[0], max_rel[0], ulp[0], fails0[0],
               hi - lo);
    part_store(&out[1], s_abs0[1], s_d20[1], s_dot0[1], s2a, max_abs[1], worst[1], max_rel[1], ulp[1], fails0[1],
               hi - lo);
    part_store(&out[2], s_abs1[0], s_d21[0], s_dot1[0], s_dot1[1], max_abs[2], worst[2], max_rel[2], ulp[2], fails1[0],
               hi - lo);
}

/* The float32 ULP distance of finite floats through their sign and magnitude bits: the ordered
 * index is the magnitude for a positive float and minus it for a negative one (ordered_bits32),
 * so two floats of one sign are |ma - mb| apart and of opposite signs ma + mb, below 2^32
 * either way: exact in uint32 lanes. */
typedef uint32_t v4u __attribute__((vector_size(16)));
static void chunk_ulps32(const float *a, const float *b, int64_t lo, int64_t hi, int64_t *u) {
    int64_t i = lo;
    v4u m = {0, 0, 0, 0};
    for (; i + 4 <= hi; i += 4) {
        v4u x, y;
        memcpy(&x, a + i, sizeof x);
        memcpy(&y, b + i, sizeof y);
        v4u mx = x & 0x7fffffffu, my = y & 0x7fffffffu;
        v4u opp = (v4u)(((x ^ y) >> 31) * 0xffffffffu); /* all ones where the signs differ */
        v4u big = (v4u)(mx > my), dif = (mx - my) & big, neg = (my - mx) & ~big;
        v4u d = ((dif | neg) & ~opp) | ((mx + my) & opp);
        v4u gt = (v4u)(d > m);
        m = (d & gt) | (m & ~gt);
    }
    for (int k = 0; k < 4; k++)
        if ((int64_t)m[k] > u[0]) u[0] = m[k];
    for (; i < hi; i++) {
        int64_t oa = ordered_bits32(a[i]), ob = ordered_bits32(b[i]);
        int64_t d = oa > ob ? oa - ob : ob - oa;
        if (d > u[0]) u[0] = d;
    }
}

/* One pair (no golden tensor) over a block where both sides are finite. Per chunk: the four
 * sums in index order with pass2_block's arithmetic, element by element, in a loop of their own
 * (four chains, nothing else in the registers); then the order-free parts (the fail count, the
 * chunk's largest error, the relative-error filter) in two-double vectors; the rare updates
 * rescan the chunk, as in fast_block; the ULPs per chunk. */
static void fast_block1(const pass2_args *pa, int64_t lo, int64_t hi, pass2_part *out) {
    const float *ref = pa->ref, *val = pa->val;
    const double atol = pa->atol, rtol = pa->rtol, rel_floor = pa->rel_floor;
    double sum_abs = 0, sum_d2 = 0, dot = 0, sv2 = 0, max_abs = -1, max_rel = 0;
    int64_t worst = -1, fail = 0, ulp[3] = {0, 0, 0};
    const v2l absmask = {INT64_MAX, INT64_MAX};
    const v2d at2 = {atol, atol}, rt2 = {rtol, rtol}, fl2 = {rel_floor, rel_floor}, tiny = {0x1p-1000, 0x1p-1000};
    for (int64_t c = lo; c < hi; c += FUSED_CHUNK) {
        int64_t e = c + FUSED_CHUNK < hi ? c + FUSED_CHUNK : hi;
        for (int64_t i = c; i < e; i++) {
            double r = ref[i], v = val[i];
            double d = fabs(r - v);
            sum_abs += d;
            sum_d2 += d * d;
            dot += r * v;
            sv2 += v * v;
        }
        const double rl = max_rel * (1.0 - 0x1p-50);
        const v2d rl2 = {rl, rl};
        v2d cmax2 = {-1, -1};
        v2l cand2 = {0, 0}, fails2 = {0, 0};
        int64_t i = c;
        for (; i + 2 <= e; i += 2) {
            v2d r = {ref[i], ref[i + 1]}, v = {val[i], val[i + 1]};
            v2d d = (v2d)((v2l)(r - v) & absmask), ar = (v2d)((v2l)r & absmask);
            fails2 -= (v2l)(d > at2 + rt2 * ar); /* a true comparison is -1 */
            cmax2 = v2d_select((v2l)(d > cmax2), d, cmax2);
            v2d lim = rl2 * v2d_select((v2l)(ar > fl2), ar, fl2);
            cand2 |= (v2l)(d > lim) | (v2l)(lim < tiny);
        }
        double cmax = cmax2[0] > cmax2[1] ? cmax2[0] : cmax2[1];
        int64_t cand = cand2[0] | cand2[1];
        fail += fails2[0] + fails2[1];
        for (; i < e; i++) {
            double r = ref[i], v = val[i];
            double d = fabs(r - v), ar = fabs(r);
            fail += d > atol + rtol * ar;
            cmax = d > cmax ? d : cmax;
            double lim = rl * (ar > rel_floor ? ar : rel_floor);
            cand |= (d > lim) | (lim < 0x1p-1000);
        }
        if (cmax > max_abs) { /* strictly larger: the first of equal errors stays */
            max_abs = cmax;
            worst = chunk_first(ref, val, c, e, cmax);
        }
        if (cand) chunk_max_rel(ref, val, c, e, rel_floor, &max_rel);
        if (pa->half_ulps)
            chunk_ulps(ref, val, NULL, c, e, true, ulp);
        else
            chunk_ulps32(ref, val, c, e, ulp);
    }
    part_store(out, sum_abs, sum_d2, dot, sv2, max_abs, worst, max_rel, ulp[0], fail, hi - lo);
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
    /* the fused loop for three pairs; one pair has its own (fast_block1) */
    if (L->fast && golden && all_finite(L->a, lo, hi) && all_finite(L->b, lo, hi) && all_finite(L->g, lo, hi)) {
        fast_block(L, lo, hi, s2a, out);
        return;
    }
    if (L->fast && !golden && all_finite(L->a, lo, hi) && all_finite(L->b, lo, hi)) {
        fast_block1(&L->args[0], lo, hi, &out[0]);
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
    /* Threads only from CD_METRICS_MIN_PARALLEL blocks on: a smaller layer takes a millisecond
     * or two on one thread, and each parallel region leaves the OpenMP workers spinning (burning
     * a core: several milliseconds with libgomp's default spin count) while the caller reads the
     * next tensors. */
    int nt = threads > 1 && nb >= CD_METRICS_MIN_PARALLEL && parts ? threads : 1;
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
