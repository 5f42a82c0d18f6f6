#include "compare/bounds.h"
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *k_names[CD_FAM_COUNT] = {"exact",     "elementwise", "transcendental", "accumulate",
                                            "normalize", "rounding",    "generic",        "int8",
                                            "recurrent", "norm",        "detection",      "interpolate"};

const char *cd_bound_family_name(cd_bound_family f) { return f >= 0 && f < CD_FAM_COUNT ? k_names[f] : "unknown"; }

bool cd_bound_family_allowance(cd_bound_family f) { return f == CD_FAM_RECURRENT || f == CD_FAM_NORM; }

double cd_gamma(int64_t k, double u) {
    double ku = (double)(k < 1 ? 1 : k) * u;
    return ku >= 1 ? INFINITY : ku / (1 - ku);
}

/* CD_FAM_INT8 (docs/int8.md §4, its int8 bound). The reference side is exact integer arithmetic and one
 * final float evaluation: y = fma((float)S, m, b) with m = ws*in_s (/out_s), each of the int ->
 * float conversion, the folded multiplier and the fma rounding once (4 u relative to the
 * magnitude). The checked side sums the same products of dequantized floats (gamma_{K+2}). An
 * int8 output adds half a quantum (the requantization) and is clamped to +-127 quanta: an
 * element on the rail bounds nothing (the float side may lie anywhere beyond it). */
static bool int8_rail(const cd_bound_spec *s, double r) {
    return s->fam == CD_FAM_INT8 && s->quantum > 0 && r >= 127 * s->quantum * (1 - 8 * s->ref.u);
}

/* On the rail the bound is one-sided (check_core): B beyond the rail on its side bounds nothing,
 * B inside is held to the bound below, which holds for the unclamped value too: A' >= A = 127 q
 * > B gives |A - B| <= |A' - B|. (It was infinite on both sides: a rail element turned to the
 * other sign or to 0 passed.) */
static double int8_part(const cd_bound_spec *s, double r, double m, double ur, double ub, double sf) {
    double L = s->lipschitz > 0 ? s->lipschitz : 1, q = s->quantum > 0 ? s->quantum : 0;
    double a = sf * (L * (cd_gamma(s->K + 2, ub) + 4 * ur) * m + s->act_ulps * (ur + ub) * r) + L * s->abs_terms;
    return q > 0 ? a + 0.5 * q + sf * 4 * ur * r : a;
}

/* The arithmetic part of the bound: what the two sides' operations may do to the exact
 * result before it is stored. */
static double arith_part(const cd_bound_spec *s, double r, double mag, double x, double absmax) {
    double ur = s->ref.u, ub = s->b.u, sf = s->safety > 0 ? s->safety : 1;
    double m = isnan(mag) ? r : mag;
    switch (s->fam) {
    case CD_FAM_EXACT: return 0;
    case CD_FAM_ELEMENTWISE:
    case CD_FAM_TRANSCENDENTAL:
        /* an engine's approximate exp (exp_rel) under exp, sigmoid, tanh, ...: relative in exp
         * and sigmoid, absolute (at most half of it) in tanh near 0 */
        return sf * (s->ulps * (ur + ub) * m + s->abs_terms * (ur + ub) + (s->ref.exp_rel + s->b.exp_rel) * (r + 1));
    case CD_FAM_ACCUMULATE: {
        double L = s->lipschitz > 0 ? s->lipschitz : 1;
        /* K products, the bias and a fused residual: K + 2 roundings on each side; a Winograd
         * conv on B: its roundings on a magnitude that holds the reference's term too */
        double g = s->wino_k > 0 ? cd_gamma(s->wino_k, ub) : cd_gamma(s->K + 2, ur) + cd_gamma(s->K + 2, ub);
        return sf * (L * g * m + (s->act_ulps * r + s->abs_terms) * (ur + ub));
    }
    case CD_FAM_NORMALIZE: {
        /* y = exp(x - max) / sum: x - max rounds (relative error |x - max| u in exp's result,
         * and |x - max| <= |ln y| because sum >= 1), exp has a few ulps, the K-term sum of
         * positive terms gamma_K, the division one more rounding. */
        double lnr = r > 0 ? fabs(log(r)) : 0;
        /* an engine's approximate exp (exp_rel) errs in y's own term and in the sum (a weighted
         * mean of the terms' errors): twice its relative error */
        return sf *
            ((cd_gamma(s->K, ur) + cd_gamma(s->K, ub)) * r + (lnr + s->ulps) * (ur + ub) * r +
             2 * (s->ref.exp_rel + s->b.exp_rel) * r);
    }
    case CD_FAM_ROUNDING: {
        /* identical inputs round identically, except within a few roundings of a tie of
         * x / quantum, where one side may land one quantum away */
        double q = s->quantum > 0 ? s->quantum : 0;
        double allow = 0;
        if (q > 0) {
            if (isnan(x))
                allow = q;
            else {
                double t = fabs(x) / q, frac = t - floor(t);
                double zone = sf * 4 * (ur + ub) * (t + 1);
                if (fabs(frac - 0.5) <= zone || frac <= zone || 1 - frac <= zone) allow = q;
            }
        }
        return allow + sf * 2 * (ur + ub) * r;
    }
    case CD_FAM_INT8: return int8_part(s, r, m, ur, ub, sf);
    case CD_FAM_RECURRENT:
    case CD_FAM_NORM:
        /* the allowance already holds both sides and the safety factor (local_allow.c) */
        return isnan(mag) ? 0 : mag;
    case CD_FAM_DETECTION:
        /* a few roundings of coordinates whose operands (centre, half size, prior) are at most
         * twice the range of the box tensor */
        return sf * s->ulps * (ur + ub) * (r + 2 * absmax);
    case CD_FAM_INTERP:
        /* weights from coordinates each side rounds (K = 8 + 4 extent, as bilinear): the
         * output moves by at most the neighbours' difference, within twice the range */
        return sf * (cd_gamma(s->K, ur) + cd_gamma(s->K, ub)) * (r + 2 * absmax);
    case CD_FAM_GENERIC:
    default: return sf * (cd_gamma(2 * s->K + 16, ur) + cd_gamma(2 * s->K + 16, ub)) * (r + absmax);
    }
}

double cd_bound_elem(const cd_bound_spec *s, double ref, double mag, double x, double absmax) {
    double r = fabs(ref);
    double a = arith_part(s, r, mag, x, absmax);
    /* denormals a side may flush to zero, per operation that can produce one */
    int64_t terms = s->fam == CD_FAM_EXACT ? 0 : (s->K > 0 ? s->K : 1) + 2;
    double eta = 0;
    if (terms) eta += (double)terms * CD_ETA32 * 2;
    /* storage: a side that stores half rounds its own result once (to nearest: half an ulp,
     * u16 relative) and may flush a half denormal */
    double bnd = a + eta;
    if (s->b.half_store) bnd += CD_U16 * (r + a) + CD_ETA16;
    if (s->ref.half_store) bnd += CD_U16 * r + CD_ETA16;
    return bnd;
}

/* Whether the bound depends on the tensor's range (arith_part's absmax). */
static bool uses_absmax(cd_bound_family f) {
    return !(f == CD_FAM_EXACT || f == CD_FAM_ELEMENTWISE || f == CD_FAM_TRANSCENDENTAL || f == CD_FAM_ACCUMULATE ||
             f == CD_FAM_NORMALIZE || f == CD_FAM_ROUNDING || f == CD_FAM_INT8 || f == CD_FAM_RECURRENT ||
             f == CD_FAM_NORM);
}

/* max |ref| over the finite elements; 0 (never read) where the family does not use it */
static double ref_absmax(const cd_bound_spec *s, const float *ref, int64_t n) {
    double absmax = 0;
    if (!uses_absmax(s->fam)) return 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabs(ref[i]) > absmax) absmax = fabs(ref[i]);
    return absmax;
}

/* The certified filter of the check (check_core, cd_local_check_lazy's pass 1).
 *
 * Most elements of a layer are far inside their bound, and computing that bound one by one
 * (cd_bound_elem's switch, cd_gamma's divisions, then e / b) was most of the check's time. For
 * the parameters of one call, the bound is an affine function of |ref| and the magnitude:
 *     bound >= c0 + cr |ref| + cm mag            (mag not NaN, finite, >= 0)
 *     bound >= c0 + cnan |ref|                   (mag NaN: |ref| stands in, or 0 for an allowance)
 * with equality up to rounding for every family but NORMALIZE (|ln ref| left out) and ROUNDING
 * (the tie allowance left out), where it is only a lower bound ('tight' false).
 *
 * Why its decisions are exact: both the affine form and cd_bound_elem add and multiply
 * nonnegative numbers (lin_bound_of checks the parameters are finite and >= 0) from the same
 * leaves (the same cd_gamma values, u, U16, eta, |ref|, mag, absmax), fewer than 32 roundings
 * deep, so each is within a relative 2^-48 of the same real number (for NORMALIZE, of one not
 * above cd_bound_elem's). An underflow adds at most a few 2^-1074 to either, nothing next to
 * a threshold the error can meet: a nonzero |ref - val| of two floats is >= 2^-149. The filter
 * compares the error with the affine value times a factor taken 2^-40 to the safe side, so
 * that whatever it decides (ratio under min(worst, 1) in check_core, in which power-of-two
 * bucket in the lazy pass 1), cd_bound_elem and the division would have decided the same. The
 * elements it cannot decide take the exact per-element code, which alone writes the result;
 * tests/unit/test_bounds_filter.c holds the old code as its oracle. */
#define LIN_BELOW (1 - 0x1p-40) /* a threshold certainly below: scale by this */
#define LIN_ABOVE (1 + 0x1p-40) /* certainly above */

typedef struct {
    bool on;    /* the parameters allow the filter */
    bool tight; /* c0 + cnan |ref| is the cheap bound itself up to rounding, not only below it */
    double c0, cr, cm, cnan;
    double rail; /* |ref| from which an int8 output is on its rail (int8_rail); +inf: no rail */
} lin_bound;

static bool nonneg(double v) { return v >= 0 && v <= 1e250; }

static lin_bound lin_bound_of(const cd_bound_spec *s, bool has_x, double absmax) {
    lin_bound lb = {.rail = INFINITY};
    double ur = s->ref.u, ub = s->b.u, sf = s->safety > 0 ? s->safety : 1;
    double L = s->lipschitz > 0 ? s->lipschitz : 1, q = s->quantum > 0 ? s->quantum : 0;
    if (!nonneg(ur) || !nonneg(ub) || !nonneg(s->ulps) || !nonneg(s->abs_terms) || !nonneg(s->act_ulps) ||
        !nonneg(s->ref.exp_rel) || !nonneg(s->b.exp_rel))
        return lb;
    /* arith_part = a0 + ar |ref| + am m, m the magnitude (|ref| when NaN) */
    double a0 = 0, ar = 0, am = 0;
    bool tight = true, allowance = false;
    switch (s->fam) {
    case CD_FAM_EXACT: break;
    case CD_FAM_ELEMENTWISE:
    case CD_FAM_TRANSCENDENTAL:
        am = sf * s->ulps * (ur + ub);
        a0 = sf * s->abs_terms * (ur + ub);
        if (s->fam == CD_FAM_TRANSCENDENTAL) {
            ar = sf * (s->ref.exp_rel + s->b.exp_rel);
            a0 += ar;
        }
        break;
    case CD_FAM_ACCUMULATE:
        am = sf * L * (s->wino_k > 0 ? cd_gamma(s->wino_k, ub) : cd_gamma(s->K + 2, ur) + cd_gamma(s->K + 2, ub));
        ar = sf * s->act_ulps * (ur + ub);
        a0 = sf * s->abs_terms * (ur + ub);
        break;
    case CD_FAM_NORMALIZE: /* |ln ref| (ur + ub) |ref| left out: a lower bound */
        ar = sf * (cd_gamma(s->K, ur) + cd_gamma(s->K, ub) + s->ulps * (ur + ub) + 2 * (s->ref.exp_rel + s->b.exp_rel));
        tight = false;
        break;
    case CD_FAM_ROUNDING: /* the quantum allowed near a tie left out, but for an unknown x */
        ar = sf * 2 * (ur + ub);
        a0 = q > 0 && !has_x ? q : 0;
        tight = false;
        break;
    case CD_FAM_INT8:
        am = sf * L * (cd_gamma(s->K + 2, ub) + 4 * ur);
        ar = sf * s->act_ulps * (ur + ub) + (q > 0 ? sf * 4 * ur : 0);
        a0 = L * s->abs_terms + (q > 0 ? 0.5 * q : 0);
        if (q > 0) lb.rail = 127 * s->quantum * (1 - 8 * s->ref.u);
        break;
    case CD_FAM_RECURRENT:
    case CD_FAM_NORM:
        am = 1; /* the allowance itself; none (0) when NaN */
        allowance = true;
        break;
    case CD_FAM_DETECTION:
        ar = sf * s->ulps * (ur + ub);
        a0 = ar * 2 * absmax;
        break;
    case CD_FAM_INTERP:
        ar = sf * (cd_gamma(s->K, ur) + cd_gamma(s->K, ub));
        a0 = ar * 2 * absmax;
        break;
    case CD_FAM_GENERIC:
    default:
        ar = sf * (cd_gamma(2 * s->K + 16, ur) + cd_gamma(2 * s->K + 16, ub));
        a0 = ar * absmax;
        break;
    }
    /* cd_bound_elem: a + eta, + U16 (|ref| + a) + ETA16 for B's half store, + U16 |ref| + ETA16 for
     * the reference's */
    int64_t terms = s->fam == CD_FAM_EXACT ? 0 : (s->K > 0 ? s->K : 1) + 2;
    double eta = (double)terms * CD_ETA32 * 2;
    double hb = s->b.half_store ? 1 : 0, hs = hb + (s->ref.half_store ? 1 : 0), g = 1 + hb * CD_U16;
    lb.c0 = a0 * g + eta + hs * CD_ETA16;
    lb.cr = ar * g + hs * CD_U16;
    lb.cm = am * g;
    lb.cnan = allowance ? lb.cr : lb.cr + lb.cm;
    lb.tight = tight;
    lb.on = nonneg(lb.c0) && nonneg(lb.cr) && nonneg(lb.cm) && nonneg(lb.cnan);
    return lb;
}

/* The affine bound of element i (above): NaN where the magnitude is negative or infinite (the
 * exact code decides those). */
static inline double lin_at(const lin_bound *lb, double r, const float *mag, int64_t i) {
    if (!mag || isnan(mag[i])) return lb->c0 + lb->cnan * r;
    float m = mag[i];
    return m >= 0 && m <= FLT_MAX ? lb->c0 + lb->cr * r + lb->cm * m : NAN;
}

static void check_core(const cd_bound_spec *s, const float *ref, const float *val, const float *mag,
                       cd_mag_at_fn mag_at, void *mag_user, const float *x, int64_t n, double user_atol,
                       double user_rtol, bool first_only, cd_local_result *r);

enum { LAZY_BUCKETS = 64, LAZY_OFFSET = 40 }; /* bucket k holds cheap ratios in [2^(k-40), 2^(k-39)) */

void cd_local_check_lazy(const cd_bound_spec *s, const float *ref, const float *val, const float *mag,
                         cd_mag_at_fn mag_at, void *mag_user, const float *x, int64_t n, double user_atol,
                         double user_rtol, int64_t max_calls, cd_local_result *r) {
    if (!mag && mag_at && s->mag_run && max_calls <= 0) {
        /* pass/fail only: one pass, magnitudes for the elements over their cheap bound */
        check_core(s, ref, val, NULL, mag_at, mag_user, x, n, user_atol, user_rtol, false, r);
        return;
    }
    float *m2 = NULL;
    if (!mag && mag_at && s->mag_run && n > 0) m2 = malloc((size_t)n * sizeof *m2);
    if (!m2) {
        cd_local_check(s, ref, val, mag, x, n, user_atol, user_rtol, r);
        return;
    }
    /* Pass 1: every element's ratio to its cheap bound (|ref| standing for the magnitude, an
     * upper bound of the true ratio), in power-of-two buckets. The exact magnitudes then go to
     * the elements with the largest cheap ratios, as many as max_calls allows: every element
     * over the cheap bound first, and below it down to where the budget ends, so that the
     * reported worst ratio is the exact one whenever it is at least that low. */
    double absmax = ref_absmax(s, ref, n);
    lin_bound lb = lin_bound_of(s, x != NULL, absmax);
    /* Only the buckets from LAZY_OFFSET - 2 up are read (the cut loop below stops there) and
     * an element is refined only where m2 >= cut >= LAZY_OFFSET - 2: a cheap ratio under 1/4
     * may as well be counted in bucket LAZY_OFFSET - 3. The filter (lin_bound) settles those,
     * and, where the affine bound is tight, the ratios in [1/4, 1/2) and [1/2, 1) away from the
     * edges, with a few products and no branch; the rest (near an edge, over the cheap bound,
     * non-finite, an int8 rail element, which the exact code may skip) take the exact code. */
    double cls_rail = lb.on && lb.tight && max_calls > 0 ? lb.rail : -1; /* |ref| < cls_rail: may classify */
    int64_t n_quarter = 0, n_half = 0;
    int64_t count[LAZY_BUCKETS] = {0};
    for (int64_t i = 0; i < n; i++) {
        double a = ref[i], v = val[i];
        double e = fabs(a - v);
        if (lb.on && e < INFINITY) { /* e NaN or Inf: a non-finite side (and lin Inf for an infinite ref) */
            double r = fabs(a), lin = lb.c0 + lb.cnan * r;
            /* at most one holds (with lin 0, e 0 is low only); integers, not branches: which one
             * is as random as the data */
            int low = e <= lin * (0.25 * LIN_BELOW);
            int cls = !low & (r < cls_rail);
            int quarter = cls & (e >= lin * (0.25 * LIN_ABOVE)) & (e <= lin * (0.5 * LIN_BELOW));
            int half = cls & (e >= lin * (0.5 * LIN_ABOVE)) & (e <= lin * LIN_BELOW);
            n_quarter += quarter;
            n_half += half;
            m2[i] = (float)(LAZY_OFFSET - 3 + quarter + 2 * half);
            if (low + quarter + half) continue;
        }
        m2[i] = -1;
        if (a == v || (isnan(a) && isnan(v))) continue;
        if (!isfinite(a) || !isfinite(v)) {
            count[LAZY_BUCKETS - 1]++;
            m2[i] = LAZY_BUCKETS - 1;
            continue;
        }
        if (int8_rail(s, fabs(a)) && (v > 0) == (a > 0) && fabs(v) >= fabs(a)) continue;
        double b = cd_bound_elem(s, a, NAN, x ? (double)x[i] : NAN, absmax);
        double ratio = b > 0 ? fabs(a - v) / b : INFINITY;
        int k = 0, e2;
        if (ratio >= 1e300)
            k = LAZY_BUCKETS - 1;
        else if (ratio >= 1 || (max_calls > 0 && ratio > 0)) {
            frexp(ratio, &e2); /* ratio = f 2^e2, f in [0.5, 1): floor(log2 ratio) = e2 - 1 */
            k = e2 - 1 + LAZY_OFFSET;
        }
        if (k < 0) k = 0;
        if (k >= LAZY_BUCKETS) k = LAZY_BUCKETS - 1;
        count[k]++;
        m2[i] = (float)k;
    }
    count[LAZY_OFFSET - 2] += n_quarter;
    count[LAZY_OFFSET - 1] += n_half;
    /* refine down to a quarter of the cheap bound (the ratios a reader compares), fewer where
     * the budget ends, but always every element over the cheap bound */
    int cut = LAZY_BUCKETS, floor_cut = LAZY_OFFSET - 2;
    for (int64_t sum = 0; cut > floor_cut && sum + count[cut - 1] <= max_calls;) sum += count[--cut];
    if (cut > LAZY_OFFSET) cut = LAZY_OFFSET;
    int64_t calls = 0;
    for (int64_t i = 0; i < n; i++) {
        double m = NAN;
        if (m2[i] >= cut) {
            m = mag_at(mag_user, i);
            calls += !isnan(m);
        }
        m2[i] = (float)m;
    }
    cd_local_check(s, ref, val, m2, x, n, user_atol, user_rtol, r);
    r->mag_elems = calls;
    /* an element left on its cheap bound may hold the worst (upper-bound) ratio */
    r->ratio_upper = r->worst >= 0 && isnan(m2[r->worst]) && r->ratio > 0 && isfinite(r->ratio);
    free(m2);
}

/* NaN/Inf in either side where the two differ (NaN against NaN and Inf against an Inf of the
 * same sign agree). Two correct kernels on the same inputs differ there only in two ways:
 * - the range: a value within its bound of the largest finite number of the arithmetic or the
 *   storage of the side that overflowed (an fp16 output beyond 65504 stores as Inf: a range
 *   hazard, which the fp16 hazards report, not a wrong kernel), with the same sign;
 * - the magnitude (sum |w x| + |b|, sum |operands|, or an allowance) reaching that range: the
 *   partial sums may then overflow in one order and not in another, to either sign, and Inf -
 *   Inf makes NaN. For an accumulation a non-finite magnitude (an Inf input) may hide such
 *   terms among the infinite ones; a sum of operands that are themselves NaN/Inf follows IEEE
 *   rules on both sides alike.
 * Anything else (a sign flip of an Inf, NaN against Inf, a finite value where the reference
 * overflowed far from the range, NaN/Inf where the reference is finite) is a wrong kernel.
 * The magnitude is asked for where it could explain the difference; NF_NEEDS_MAG where it
 * could and was not had. */
typedef enum { NF_FAULT, NF_EXPLAINED, NF_NEEDS_MAG } nf_why;

static double range_of(const cd_arith *a) {
    return a->half_store || a->u >= CD_U16 ? CD_HALF_MAX : 3.4028234663852886e38;
}

static nf_why nonfinite_why(const cd_bound_spec *s, double a, double v, double m, double x, double absmax) {
    double tr = range_of(&s->ref), tb = range_of(&s->b), t = tr < tb ? tr : tb;
    /* the range: one side finite, the other an Inf of its sign beyond what that side holds */
    bool same_sign = (a > 0) == (v > 0);
    if (isfinite(a) && isinf(v) && same_sign && fabs(a) + cd_bound_elem(s, a, m, x, absmax) >= tb) return NF_EXPLAINED;
    if (isfinite(v) && isinf(a) && same_sign && fabs(v) + cd_bound_elem(s, v, m, x, absmax) >= tr) return NF_EXPLAINED;
    if (!s->mag_run) return NF_FAULT; /* |ref| is the magnitude: nothing more to learn */
    if (isnan(m)) return isfinite(a) ? NF_FAULT : NF_NEEDS_MAG;
    bool allow = s->fam == CD_FAM_RECURRENT || s->fam == CD_FAM_NORM;
    if (isinf(m)) return s->fam == CD_FAM_ELEMENTWISE ? NF_FAULT : NF_EXPLAINED;
    /* the magnitude in (half of) the range: partial sums may overflow (an allowance that large
     * bounds nothing either) */
    return (allow ? m + fabs(isfinite(a) ? a : v) : 2 * m) >= t ? NF_EXPLAINED : NF_FAULT;
}

/* The check; mag_at (may be NULL) is asked for the magnitude of an element over its cheap
 * bound, one by one, as it is met. */
static void check_core(const cd_bound_spec *s, const float *ref, const float *val, const float *mag,
                       cd_mag_at_fn mag_at, void *mag_user, const float *x, int64_t n, double user_atol,
                       double user_rtol, bool first_only, cd_local_result *r) {
    memset(r, 0, sizeof *r);
    r->worst = -1;
    double absmax = ref_absmax(s, ref, n);
    lin_bound lb = lin_bound_of(s, x != NULL, absmax);
    /* The filter (lin_bound): an element whose error is at most its bound times min(ratio, 1),
     * ratio the worst so far, changes nothing below: its exact ratio is <= 1 (no exceed, no
     * mag_at) and not above the worst (ties keep the first). 0 until there is a worst: every
     * element with an error takes the exact code. */
    double scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = ref[i], v = val[i];
        /* NaN/Inf in either side make e NaN or Inf (the threshold too, for an infinite ref) */
        double e0 = fabs(a - v);
        if (lb.on && e0 < INFINITY && e0 <= lin_at(&lb, fabs(a), mag, i) * scale) continue;
        bool af = isfinite(a), vf = isfinite(v);
        if (!af || !vf) {
            if ((isnan(a) && isnan(v)) || (isinf(a) && isinf(v) && (a > 0) == (v > 0))) continue;
            double m = mag ? (double)mag[i] : NAN;
            if (isnan(m) && mag_at && s->mag_run && !isnan(m = mag_at(mag_user, i))) r->mag_elems++;
            nf_why why = nonfinite_why(s, a, v, m, x ? (double)x[i] : NAN, absmax);
            if (why == NF_EXPLAINED) continue;
            /* NaN/Inf that no correct pair of kernels explains: an element over its bound */
            if (why == NF_NEEDS_MAG) r->needs_mag = true;
            r->nonfinite++;
            r->exceed++;
            if (r->ratio != INFINITY || r->worst < 0) {
                r->ratio = INFINITY;
                r->worst = i;
                r->err = INFINITY;
                r->bound = 0;
                scale = LIN_BELOW;
            }
            if (first_only) break;
            continue;
        }
        double e = fabs(a - v);
        if (e == 0) continue;
        /* an int8 output on its +-127 quanta rail: A saturated, so B beyond it says nothing */
        if (int8_rail(s, fabs(a)) && (v > 0) == (a > 0) && fabs(v) >= fabs(a)) continue;
        double m = mag ? (double)mag[i] : NAN;
        double xi = x ? (double)x[i] : NAN;
        double b = cd_bound_elem(s, a, m, xi, absmax);
        double ratio = b > 0 ? e / b : INFINITY;
        if (ratio > 1 && isnan(m) && mag_at && s->mag_run && !isnan(m = mag_at(mag_user, i))) {
            r->mag_elems++;
            b = cd_bound_elem(s, a, m, xi, absmax);
            ratio = b > 0 ? e / b : INFINITY;
        }
        if (ratio > r->ratio || r->worst < 0) {
            r->ratio = ratio;
            r->worst = i;
            r->err = e;
            r->bound = b;
            r->ratio_upper = s->mag_run && isnan(m);
            scale = LIN_BELOW * (ratio < 1 ? ratio : 1);
        }
        if (ratio > 1) {
            if (user_atol >= 0 && e <= user_atol + (user_rtol > 0 ? user_rtol : 0) * fabs(a)) continue;
            r->exceed++;
            if (s->mag_run && isnan(m)) r->needs_mag = true;
            if (first_only) break; /* the pass/fail answer is known */
        }
    }
    r->pass = r->exceed == 0;
}

void cd_local_check(const cd_bound_spec *s, const float *ref, const float *val, const float *mag, const float *x,
                    int64_t n, double user_atol, double user_rtol, cd_local_result *r) {
    check_core(s, ref, val, mag, NULL, NULL, x, n, user_atol, user_rtol, false, r);
    if (mag) r->ratio_upper = false;
}

bool cd_local_certainly_within(const cd_bound_spec *s, const float *ref, const float *val, const float *x, int64_t n) {
    lin_bound lb = lin_bound_of(s, x != NULL, ref_absmax(s, ref, n));
    if (!lb.on) return false;
    const double c0 = lb.c0, cn = lb.cnan;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = ref[i], e = fabs(a - (double)val[i]);
        bad |= !(e <= (c0 + cn * fabs(a)) * LIN_BELOW); /* NaN/Inf: not <= */
    }
    return !bad;
}

bool cd_bound_cheap_lin(const cd_bound_spec *s, double absmax, double *c0, double *cnan) {
    lin_bound lb = lin_bound_of(s, false, absmax);
    *c0 = lb.c0 * LIN_BELOW;
    *cnan = lb.cnan * LIN_BELOW;
    return lb.on;
}

bool cd_local_check_passes(const cd_bound_spec *s, const float *ref, const float *val, int64_t n) {
    cd_local_result r;
    check_core(s, ref, val, NULL, NULL, NULL, NULL, n, -1, -1, true, &r);
    return r.pass;
}

bool cd_bound_uses_absmax(cd_bound_family f) { return uses_absmax(f); }

/* ---------------------------------------------------------------- Winograd convolutions */

const double cd_wino_points_mnn[7] = {0, 1, -1, 2, -2, 3, -3}, cd_wino_points_pl8[7] = {0, 1, -1, 2, -2, 0.5, -0.5};

static double ipow(double p, int j) {
    double r = 1;
    while (j-- > 0) r *= p;
    return r;
}

bool cd_wino_mats_make(cd_wino_mats *t, int alpha, int k, const double *pts) {
    memset(t, 0, sizeof *t);
    if (alpha > 8 || k < 1 || alpha - k + 1 < 2) return false;
    t->alpha = alpha;
    t->m = alpha - k + 1;
    t->k = k;
    double V[8][16] = {{0}};
    for (int i = 0; i < alpha; i++) {
        bool inf = i == alpha - 1;
        for (int j = 0; j < alpha; j++) V[i][j] = inf ? j == alpha - 1 : ipow(pts[i], j);
        V[i][alpha + i] = 1;
        for (int j = 0; j < t->m; j++) t->A[i][j] = inf ? j == t->m - 1 : ipow(pts[i], j);
        for (int j = 0; j < k; j++) t->G[i][j] = inf ? j == k - 1 : ipow(pts[i], j);
    }
    /* V^-1 by Gauss-Jordan with partial pivoting */
    for (int c = 0; c < alpha; c++) {
        int piv = c;
        for (int r = c + 1; r < alpha; r++)
            if (fabs(V[r][c]) > fabs(V[piv][c])) piv = r;
        if (!(fabs(V[piv][c]) > 1e-12)) return false;
        for (int j = 0; j < 2 * alpha; j++) {
            double tmp = V[c][j];
            V[c][j] = V[piv][j];
            V[piv][j] = tmp;
        }
        double d = V[c][c];
        for (int j = 0; j < 2 * alpha; j++) V[c][j] /= d;
        for (int r = 0; r < alpha; r++)
            if (r != c && V[r][c] != 0) {
                double f = V[r][c];
                for (int j = 0; j < 2 * alpha; j++) V[r][j] -= f * V[c][j];
            }
    }
    for (int i = 0; i < alpha; i++)
        for (int j = 0; j < alpha; j++) t->BT[i][j] = V[j][alpha + i]; /* (V^-1)^T */
    return true;
}

void cd_wino_weight_mag(const cd_wino_mats *t, const float *w, double *u) {
    int al = t->alpha, k = t->k;
    double R[8][8];
    for (int p = 0; p < al; p++)
        for (int q = 0; q < k; q++) {
            double a = 0;
            for (int s = 0; s < k; s++) a += fabs(t->G[p][s]) * fabs(w[s * k + q]);
            R[p][q] = a;
        }
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            double a = 0;
            for (int s = 0; s < k; s++) a += R[p][s] * fabs(t->G[q][s]);
            u[p * al + q] = a;
        }
}

void cd_wino_input_mag(const cd_wino_mats *t, const double *d, double *v) {
    int al = t->alpha;
    double T[8][8];
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            double a = 0;
            for (int s = 0; s < al; s++) a += fabs(t->BT[p][s]) * fabs(d[s * al + q]);
            T[p][q] = a;
        }
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            double a = 0;
            for (int s = 0; s < al; s++) a += T[p][s] * fabs(t->BT[q][s]);
            v[p * al + q] = a;
        }
}

void cd_wino_output_mag(const cd_wino_mats *t, const double *M, double *out) {
    int al = t->alpha;
    for (int i = 0; i < t->m; i++)
        for (int j = 0; j < t->m; j++) {
            double a = 0;
            for (int p = 0; p < al; p++) {
                double r = 0;
                for (int q = 0; q < al; q++) r += M[p * al + q] * fabs(t->A[q][j]);
                a += fabs(t->A[p][i]) * r;
            }
            out[i * t->m + j] = a;
        }
}

int64_t cd_wino_roundings(int64_t c, int alpha) { return (c > 0 ? c : 1) + 4 * (int64_t)alpha + 12; }

void cd_wino_weight_tf(const cd_wino_mats *t, const float *w, double *u) {
    int al = t->alpha, k = t->k;
    double R[8][8];
    for (int p = 0; p < al; p++)
        for (int q = 0; q < k; q++) {
            double a = 0;
            for (int s = 0; s < k; s++) a += t->G[p][s] * w[s * k + q];
            R[p][q] = a;
        }
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            double a = 0;
            for (int s = 0; s < k; s++) a += R[p][s] * t->G[q][s];
            u[p * al + q] = a;
        }
}

void cd_wino_input_tf(const cd_wino_mats *t, const double *d, double *v) {
    int al = t->alpha;
    double T[8][8];
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            double a = 0;
            for (int s = 0; s < al; s++) a += t->BT[p][s] * d[s * al + q];
            T[p][q] = a;
        }
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            double a = 0;
            for (int s = 0; s < al; s++) a += T[p][s] * t->BT[q][s];
            v[p * al + q] = a;
        }
}

void cd_wino_acc(const cd_wino_mats *t, const double *U, const double *Uabs, const double *V, const double *Vabs,
                 double *acc) {
    int a2 = t->alpha * t->alpha;
    for (int e = 0; e < a2; e++) {
        double uv = U[e] * V[e];
        acc[e] += fabs(uv);
        acc[a2 + e] += uv;
        acc[2 * a2 + e] += fabs(U[e]) * Vabs[e];
        acc[3 * a2 + e] += Uabs[e] * fabs(V[e]);
    }
}

void cd_wino_tile_allow(const cd_wino_mats *t, const double *acc, int64_t c, double u, double bias_abs, double *out) {
    int al = t->alpha, a2 = al * al;
    double gn = cd_gamma(cd_wino_roundings(c, al), u);
    double w0 = cd_gamma((c > 0 ? c : 1) + 1, u) / gn, w1 = cd_gamma(2 * al + 5, u) / gn,
           w2 = cd_gamma(2 * al + 4, u) / gn, w3 = cd_gamma(2, u) / gn;
    double M[64];
    for (int e = 0; e < a2; e++)
        M[e] = w0 * acc[e] + w1 * fabs(acc[a2 + e]) + w2 * acc[2 * a2 + e] + w3 * acc[3 * a2 + e];
    cd_wino_output_mag(t, M, out);
    for (int e = 0; e < t->m * t->m; e++) out[e] += w1 * bias_abs;
}
