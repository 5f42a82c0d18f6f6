/* The local check's certified filter (src/compare/bounds.c): cd_local_check and
 * cd_local_check_lazy skip the elements whose error is certainly under the current threshold by
 * an affine lower bound of the cheap bound, and compute the exact per-element bound only for the
 * others. Every result must be bit-identical to the per-element code it replaced: that code is
 * copied below (oracle_*, from commit 2ebd85c, only renamed) and both run on many generated
 * cases, every family, with and without magnitudes, mag_at callbacks, x, half storage on either
 * side, int8 quanta and rails, NaN/Inf/subnormal/+-0 values, user tolerances and ties. The
 * sequence of mag_at calls must be the same too.
 *
 * CD_BOUNDS_SEED=N runs other generated cases. CD_BOUNDS_BENCH=N (elements, e.g. 4194304)
 * turns the test "bench" into a micro-benchmark of both on fp16-like data (median of 7 runs;
 * it asserts nothing about time). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "compare/bounds.h"

/* ---- the oracle: bounds.c's check before the filter, verbatim but for the names ---- */

static bool oracle_int8_rail(const cd_bound_spec *s, double r) {
    return s->fam == CD_FAM_INT8 && s->quantum > 0 && r >= 127 * s->quantum * (1 - 8 * s->ref.u);
}

static double oracle_ref_absmax(const float *ref, int64_t n) {
    double absmax = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabs(ref[i]) > absmax) absmax = fabs(ref[i]);
    return absmax;
}

typedef enum { NF_FAULT, NF_EXPLAINED, NF_NEEDS_MAG } nf_why;

static double oracle_range_of(const cd_arith *a) {
    return a->half_store || a->u >= CD_U16 ? CD_HALF_MAX : 3.4028234663852886e38;
}

static nf_why oracle_nonfinite_why(const cd_bound_spec *s, double a, double v, double m, double x, double absmax) {
    double tr = oracle_range_of(&s->ref), tb = oracle_range_of(&s->b), t = tr < tb ? tr : tb;
    bool same_sign = (a > 0) == (v > 0);
    if (isfinite(a) && isinf(v) && same_sign && fabs(a) + cd_bound_elem(s, a, m, x, absmax) >= tb) return NF_EXPLAINED;
    if (isfinite(v) && isinf(a) && same_sign && fabs(v) + cd_bound_elem(s, v, m, x, absmax) >= tr) return NF_EXPLAINED;
    if (!s->mag_run) return NF_FAULT;
    if (isnan(m)) return isfinite(a) ? NF_FAULT : NF_NEEDS_MAG;
    bool allow = s->fam == CD_FAM_RECURRENT || s->fam == CD_FAM_NORM;
    if (isinf(m)) return s->fam == CD_FAM_ELEMENTWISE ? NF_FAULT : NF_EXPLAINED;
    return (allow ? m + fabs(isfinite(a) ? a : v) : 2 * m) >= t ? NF_EXPLAINED : NF_FAULT;
}

static void oracle_check_core(const cd_bound_spec *s, const float *ref, const float *val, const float *mag,
                              cd_mag_at_fn mag_at, void *mag_user, const float *x, int64_t n, double user_atol,
                              double user_rtol, cd_local_result *r) {
    memset(r, 0, sizeof *r);
    r->worst = -1;
    double absmax = oracle_ref_absmax(ref, n);
    for (int64_t i = 0; i < n; i++) {
        double a = ref[i], v = val[i];
        bool af = isfinite(a), vf = isfinite(v);
        if (!af || !vf) {
            if ((isnan(a) && isnan(v)) || (isinf(a) && isinf(v) && (a > 0) == (v > 0))) continue;
            double m = mag ? (double)mag[i] : NAN;
            if (isnan(m) && mag_at && s->mag_run && !isnan(m = mag_at(mag_user, i))) r->mag_elems++;
            nf_why why = oracle_nonfinite_why(s, a, v, m, x ? (double)x[i] : NAN, absmax);
            if (why == NF_EXPLAINED) continue;
            if (why == NF_NEEDS_MAG) r->needs_mag = true;
            r->nonfinite++;
            r->exceed++;
            if (r->ratio != INFINITY || r->worst < 0) {
                r->ratio = INFINITY;
                r->worst = i;
                r->err = INFINITY;
                r->bound = 0;
            }
            continue;
        }
        double e = fabs(a - v);
        if (e == 0) continue;
        if (oracle_int8_rail(s, fabs(a)) && (v > 0) == (a > 0) && fabs(v) >= fabs(a)) continue;
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
        }
        if (ratio > 1) {
            if (user_atol >= 0 && e <= user_atol + (user_rtol > 0 ? user_rtol : 0) * fabs(a)) continue;
            r->exceed++;
            if (s->mag_run && isnan(m)) r->needs_mag = true;
        }
    }
    r->pass = r->exceed == 0;
}

static void oracle_check(const cd_bound_spec *s, const float *ref, const float *val, const float *mag, const float *x,
                         int64_t n, double user_atol, double user_rtol, cd_local_result *r) {
    oracle_check_core(s, ref, val, mag, NULL, NULL, x, n, user_atol, user_rtol, r);
    if (mag) r->ratio_upper = false;
}

enum { LAZY_BUCKETS = 64, LAZY_OFFSET = 40 };

static void oracle_lazy(const cd_bound_spec *s, const float *ref, const float *val, const float *mag,
                        cd_mag_at_fn mag_at, void *mag_user, const float *x, int64_t n, double user_atol,
                        double user_rtol, int64_t max_calls, cd_local_result *r) {
    if (!mag && mag_at && s->mag_run && max_calls <= 0) {
        oracle_check_core(s, ref, val, NULL, mag_at, mag_user, x, n, user_atol, user_rtol, r);
        return;
    }
    float *m2 = NULL;
    if (!mag && mag_at && s->mag_run && n > 0) m2 = malloc((size_t)n * sizeof *m2);
    if (!m2) {
        oracle_check(s, ref, val, mag, x, n, user_atol, user_rtol, r);
        return;
    }
    double absmax = oracle_ref_absmax(ref, n);
    int64_t count[LAZY_BUCKETS] = {0};
    for (int64_t i = 0; i < n; i++) {
        m2[i] = -1;
        double a = ref[i], v = val[i];
        if (a == v || (isnan(a) && isnan(v))) continue;
        if (!isfinite(a) || !isfinite(v)) {
            count[LAZY_BUCKETS - 1]++;
            m2[i] = LAZY_BUCKETS - 1;
            continue;
        }
        if (oracle_int8_rail(s, fabs(a)) && (v > 0) == (a > 0) && fabs(v) >= fabs(a)) continue;
        double b = cd_bound_elem(s, a, NAN, x ? (double)x[i] : NAN, absmax);
        double ratio = b > 0 ? fabs(a - v) / b : INFINITY;
        int k = 0, e2;
        if (ratio >= 1e300)
            k = LAZY_BUCKETS - 1;
        else if (ratio >= 1 || (max_calls > 0 && ratio > 0)) {
            frexp(ratio, &e2);
            k = e2 - 1 + LAZY_OFFSET;
        }
        if (k < 0) k = 0;
        if (k >= LAZY_BUCKETS) k = LAZY_BUCKETS - 1;
        count[k]++;
        m2[i] = (float)k;
    }
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
    oracle_check(s, ref, val, m2, x, n, user_atol, user_rtol, r);
    r->mag_elems = calls;
    r->ratio_upper = r->worst >= 0 && isnan(m2[r->worst]) && r->ratio > 0 && isfinite(r->ratio);
    free(m2);
}

/* ---- generated cases ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) * 0x1p-53; }
static int pick(int k) { return (int)(rnd() % (uint64_t)k); }
static double gauss(void) {
    double s = 0;
    for (int k = 0; k < 4; k++) s += unif() - 0.5;
    return s * 1.7;
}

/* mag_at: logs the indices asked for, answers a value that depends on the index only (NaN for
 * some: "could not be had") */
typedef struct {
    const float *ref;
    int kind;
    int64_t *log, nlog, cap;
} mag_src;

static double mag_at(void *user, int64_t i) {
    mag_src *m = user;
    if (m->nlog < m->cap) m->log[m->nlog] = i;
    m->nlog++;
    uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15u >> 40;
    double r = fabs(m->ref[i]);
    switch (m->kind) {
    case 0: return isfinite(r) ? r * (1 + (double)(h % 8)) : 1e3;
    case 1: return h % 5 == 0 ? NAN : (isfinite(r) ? r * 4 + 1e-3 : 1e5);
    case 2: return h % 7 == 0 ? INFINITY : h % 7 == 1 ? 0 : h % 7 == 2 ? NAN : r * 1.5;
    default: return 40000.0 * (double)(h % 3);
    }
}

static double same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

#define SAME_RESULT(x, y, what)                                                                                        \
    do {                                                                                                               \
        cr_assert(same_bits((x).err, (y).err), "%s: err %.17g != %.17g", what, (x).err, (y).err);                      \
        cr_assert(same_bits((x).bound, (y).bound), "%s: bound %.17g != %.17g", what, (x).bound, (y).bound);            \
        cr_assert(same_bits((x).ratio, (y).ratio), "%s: ratio %.17g != %.17g", what, (x).ratio, (y).ratio);            \
        cr_assert_eq((x).exceed, (y).exceed, "%s: exceed %lld != %lld", what, (long long)(x).exceed,                   \
                     (long long)(y).exceed);                                                                           \
        cr_assert_eq((x).worst, (y).worst, "%s: worst %lld != %lld", what, (long long)(x).worst,                       \
                     (long long)(y).worst);                                                                            \
        cr_assert_eq((x).nonfinite, (y).nonfinite, "%s: nonfinite", what);                                             \
        cr_assert_eq((x).pass, (y).pass, "%s: pass", what);                                                            \
        cr_assert_eq((x).needs_mag, (y).needs_mag, "%s: needs_mag", what);                                             \
        cr_assert_eq((x).mag_elems, (y).mag_elems, "%s: mag_elems %lld != %lld", what, (long long)(x).mag_elems,       \
                     (long long)(y).mag_elems);                                                                        \
        cr_assert_eq((x).ratio_upper, (y).ratio_upper, "%s: ratio_upper", what);                                       \
    } while (0)

static cd_arith gen_arith(void) {
    switch (pick(4)) {
    case 0: return (cd_arith){.u = CD_U32, .half_store = false};
    case 1: return (cd_arith){.u = CD_U32, .half_store = true};
    case 2: return (cd_arith){.u = CD_U16, .half_store = true};
    default: return (cd_arith){.u = CD_U16, .half_store = false};
    }
}

static cd_bound_spec gen_spec(void) {
    static const int64_t Ks[] = {0, 1, 2, 9, 27, 576, 4700, 20000};
    static const double ulps[] = {0, 1, 4, 8, 256};
    static const double abst[] = {0, 1e-3, 5};
    static const double lips[] = {0, 1, 2.5};
    static const double quanta[] = {0, 0, 0.05, 1.0 / 127, 0.75};
    static const double safety[] = {0, 1, 2, 2};
    cd_bound_spec s = {.fam = (cd_bound_family)pick(CD_FAM_COUNT),
                       .K = Ks[pick(8)],
                       .ulps = ulps[pick(5)],
                       .abs_terms = abst[pick(3)],
                       .lipschitz = lips[pick(3)],
                       .act_ulps = pick(2) ? 0 : 2,
                       .quantum = quanta[pick(5)],
                       .ref = gen_arith(),
                       .b = gen_arith(),
                       .safety = safety[pick(4)],
                       .mag_run = pick(2)};
    if (pick(40) == 0) s.ulps = -1; /* parameters the filter must not trust */
    if (pick(40) == 0) s.abs_terms = NAN;
    if (pick(40) == 0) s.quantum = INFINITY;
    if (pick(60) == 0) s.fam = CD_FAM_COUNT; /* out of the enum: the generic default */
    return s;
}

/* a reference value: ordinary magnitudes of several scales, and the special ones */
static float gen_ref(const cd_bound_spec *s, double scale) {
    double q = s->quantum > 0 && isfinite(s->quantum) ? s->quantum : 0.05;
    switch (pick(40)) {
    case 0: return 0.0f;
    case 1: return -0.0f;
    case 2: return pick(2) ? 1e-40f : -3e-44f; /* float subnormals */
    case 3: return NAN;
    case 4: return pick(2) ? INFINITY : -INFINITY;
    case 5: return pick(2) ? 65504.0f : -65000.0f;
    case 6: return (float)(127 * q * (pick(2) ? 1 : -1)); /* the int8 rail */
    case 7: return (float)((pick(2) ? 1 : -1) * 127 * q * (1 - 8 * CD_U32 * unif()));
    case 8:
    case 9:
    case 10: return (float)(q * (pick(261) - 130)); /* on the int8 grid */
    case 11: return FLT_MIN;
    default: return (float)(gauss() * scale);
    }
}

static const double ratios[] = {0.1,    0.2499999, 0.25, 0.2500001, 0.4999999, 0.5, 0.5000001,
                                0.9999, 0.9999999, 1,    1.0000001, 1.5,       3,   1e10};

/* B's value: equal, at a chosen ratio of the element's cheap bound (on both sides of each
 * bucket edge), rounded to half, near, an earlier element's pair (ties), or non-finite */
static float gen_val(const cd_bound_spec *s, const float *ref, int64_t i, double absmax) {
    float a = ref[i];
    switch (pick(24)) {
    case 0:
    case 1: return a;
    case 2: return NAN;
    case 3: return pick(2) ? INFINITY : -INFINITY;
    case 4: return -a;
    case 5: return 0.0f;
    case 6:
    case 7: return (float)(_Float16)a;
    case 8: return nextafterf(a, pick(2) ? INFINITY : -INFINITY);
    case 9: return a * (1 + (float)(gauss() * 0x1p-11));
    case 10: return (float)(a * 1.5);
    default: {
        double b = cd_bound_elem(s, a, NAN, NAN, absmax);
        double t = ratios[pick(14)] * (pick(2) ? 1 : -1);
        if (!isfinite(b)) b = fabs(a) * 1e-3;
        return (float)(a + t * b);
    }
    }
}

static void gen_case(cd_bound_spec *s, float *ref, float *val, float *mag, float *x, int64_t n) {
    double scale = pow(10, pick(9) - 4);
    for (int64_t i = 0; i < n; i++) ref[i] = gen_ref(s, scale);
    double absmax = oracle_ref_absmax(ref, n);
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && pick(10) == 0) { /* an earlier pair again: an equal ratio, the first must stay */
            int64_t j = pick((int)i);
            ref[i] = ref[j];
            val[i] = val[j];
            continue;
        }
        val[i] = gen_val(s, ref, i, absmax);
    }
    for (int64_t i = 0; i < n; i++) {
        double r = fabs(ref[i]);
        switch (pick(12)) {
        case 0: mag[i] = INFINITY; break;
        case 1: mag[i] = -1; break;
        case 2: mag[i] = 0; break;
        case 3:
        case 4:
        case 5: mag[i] = (float)(r * (1 + 4 * unif())); break;
        case 6: mag[i] = (float)(r * 1e-3); break;
        default: mag[i] = NAN; break;
        }
        double q = s->quantum > 0 && isfinite(s->quantum) ? s->quantum : 0.05;
        switch (pick(5)) {
        case 0: x[i] = NAN; break;
        case 1: x[i] = (float)((pick(200) - 100 + 0.5) * q); break; /* a tie of x / quantum */
        case 2: x[i] = (float)(pick(200) * q); break;
        default: x[i] = (float)(gauss() * 50 * q); break;
        }
    }
}

static void run_cases(int ncases, int64_t nmax) {
    const char *seed = getenv("CD_BOUNDS_SEED"); /* another fixed sequence of cases */
    if (seed) rng_state += 0x2545f4914f6cdd1du * (uint64_t)atoll(seed);
    float *ref = malloc((size_t)nmax * sizeof *ref), *val = malloc((size_t)nmax * sizeof *val);
    float *mag = malloc((size_t)nmax * sizeof *mag), *x = malloc((size_t)nmax * sizeof *x);
    int64_t cap = 4 * nmax + 16;
    int64_t *log1 = malloc((size_t)cap * sizeof *log1), *log2 = malloc((size_t)cap * sizeof *log2);
    static const double atols[][2] = {{-1, -1}, {0, 0}, {1e-3, 0}, {1e-6, 1e-2}, {-1, 0.5}};
    for (int c = 0; c < ncases; c++) {
        cd_bound_spec s = gen_spec();
        int64_t n = pick(4) == 0 ? pick(6) : 1 + pick((int)nmax);
        gen_case(&s, ref, val, mag, x, n);
        const double *tol = atols[pick(5)];
        const float *mg = pick(3) == 0 ? mag : NULL;
        const float *xs = pick(2) ? x : NULL;
        char what[160];
        snprintf(what, sizeof what, "case %d: %s K %lld n %lld mag %d x %d mag_run %d", c, cd_bound_family_name(s.fam),
                 (long long)s.K, (long long)n, mg != NULL, xs != NULL, s.mag_run);
        cd_local_result r1, r2;
        oracle_check(&s, ref, val, mg, xs, n, tol[0], tol[1], &r1);
        cd_local_check(&s, ref, val, mg, xs, n, tol[0], tol[1], &r2);
        SAME_RESULT(r1, r2, what);
        /* the lazy check: mag_at asked for magnitudes, with budgets from none to all */
        int64_t budgets[] = {0, 1, 7, n / 8 + 1, 2 * n + 4};
        mag_src m1 = {.ref = ref, .kind = pick(4), .log = log1, .cap = cap}, m2 = m1;
        m2.log = log2;
        int64_t mc = budgets[pick(5)];
        const float *lmag = pick(4) == 0 ? mg : NULL;
        cd_mag_at_fn fn = pick(8) ? mag_at : NULL;
        oracle_lazy(&s, ref, val, lmag, fn, &m1, xs, n, tol[0], tol[1], mc, &r1);
        cd_local_check_lazy(&s, ref, val, lmag, fn, &m2, xs, n, tol[0], tol[1], mc, &r2);
        snprintf(what + strlen(what), sizeof what - strlen(what), " lazy max_calls %lld", (long long)mc);
        SAME_RESULT(r1, r2, what);
        cr_assert_eq(m1.nlog, m2.nlog, "%s: %lld mag_at calls != %lld", what, (long long)m1.nlog, (long long)m2.nlog);
        for (int64_t k = 0; k < m1.nlog && k < cap; k++)
            cr_assert_eq(log1[k], log2[k], "%s: mag_at call %lld", what, (long long)k);
    }
    free(ref);
    free(val);
    free(mag);
    free(x);
    free(log1);
    free(log2);
}

Test(bounds_filter, small_cases_every_family) { run_cases(40000, 40); }

Test(bounds_filter, larger_cases_every_family) { run_cases(3000, 3000); }

/* every family on fp16-like data, where the filter decides almost every element */
Test(bounds_filter, fp16_like_data) {
    enum { N = 20000 };
    float *ref = malloc(N * sizeof *ref), *val = malloc(N * sizeof *val);
    int64_t *log1 = malloc(4 * N * sizeof *log1), *log2 = malloc(4 * N * sizeof *log2);
    for (int fam = 0; fam <= CD_FAM_COUNT; fam++)
        for (int variant = 0; variant < 8; variant++) {
            cd_bound_spec s = {.fam = (cd_bound_family)fam,
                               .K = variant & 1 ? 576 : 9,
                               .ulps = 4,
                               .lipschitz = 1,
                               .quantum = fam == CD_FAM_INT8 || fam == CD_FAM_ROUNDING ? 0.02 : 0,
                               .ref = {.u = CD_U32, .half_store = (variant & 4) != 0},
                               .b = {.u = variant & 2 ? CD_U16 : CD_U32, .half_store = true},
                               .safety = 2,
                               .mag_run = true};
            for (int i = 0; i < N; i++) {
                ref[i] = (float)(gauss() * (i % 3 ? 1 : 100));
                val[i] = (float)(_Float16)(ref[i] * (1 + gauss() * 0x1p-12));
            }
            char what[96];
            snprintf(what, sizeof what, "%s variant %d", cd_bound_family_name(s.fam), variant);
            cd_local_result r1, r2;
            oracle_check(&s, ref, val, NULL, NULL, N, -1, -1, &r1);
            cd_local_check(&s, ref, val, NULL, NULL, N, -1, -1, &r2);
            SAME_RESULT(r1, r2, what);
            mag_src m1 = {.ref = ref, .kind = variant % 3, .log = log1, .cap = 4 * N}, m2 = m1;
            m2.log = log2;
            oracle_lazy(&s, ref, val, NULL, mag_at, &m1, NULL, N, -1, -1, N / 8 + 16, &r1);
            cd_local_check_lazy(&s, ref, val, NULL, mag_at, &m2, NULL, N, -1, -1, N / 8 + 16, &r2);
            SAME_RESULT(r1, r2, what);
            cr_assert_eq(m1.nlog, m2.nlog, "%s: mag_at calls", what);
            for (int64_t k = 0; k < m1.nlog; k++)
                cr_assert_eq(log1[k], log2[k], "%s: mag_at call %lld", what, (long long)k);
        }
    free(ref);
    free(val);
    free(log1);
    free(log2);
}

/* ---- the micro-benchmark (CD_BOUNDS_BENCH=N) ---- */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { BENCH_RUNS = 7 };

static double median(double *t) {
    qsort(t, BENCH_RUNS, sizeof *t, cmp_d);
    return t[BENCH_RUNS / 2];
}

static double bench_mag_at(void *user, int64_t i) { return fabs(((const float *)user)[i]) * 3; }

Test(bounds_filter, bench) {
    const char *env = getenv("CD_BOUNDS_BENCH");
    if (!env) cr_skip_test("CD_BOUNDS_BENCH=N runs the micro-benchmark on N elements");
    int64_t n = atoll(env);
    cr_assert(n > 0);
    float *ref = malloc((size_t)n * sizeof *ref), *val = malloc((size_t)n * sizeof *val);
    /* a conv's outputs in an fp16 run: the reference in float, B accumulating in float (or half)
     * and storing half, plus a little noise of its own order of summation */
    for (int64_t i = 0; i < n; i++) {
        ref[i] = (float)(gauss() * (i % 7 ? 1 : 30));
        val[i] = (float)(_Float16)(ref[i] * (1 + gauss() * 0x1p-13));
    }
    struct {
        const char *name;
        cd_bound_spec s;
    } specs[] = {
        {"accumulate K=576, B float math, half store",
         {.fam = CD_FAM_ACCUMULATE,
          .K = 576,
          .lipschitz = 1,
          .ref = {.u = CD_U32},
          .b = {.u = CD_U32, .half_store = true},
          .safety = 2,
          .mag_run = true}},
        {"elementwise ulps=1, B half math, half store",
         {.fam = CD_FAM_ELEMENTWISE,
          .K = 2,
          .ulps = 1,
          .ref = {.u = CD_U32},
          .b = {.u = CD_U16, .half_store = true},
          .safety = 2,
          .mag_run = false}},
    };
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const cd_bound_spec *s = &specs[k].s;
        double t[4][BENCH_RUNS];
        cd_local_result r[4];
        for (int run = 0; run < BENCH_RUNS; run++) {
            double t0 = now_s();
            oracle_check(s, ref, val, NULL, NULL, n, -1, -1, &r[0]);
            double t1 = now_s();
            cd_local_check(s, ref, val, NULL, NULL, n, -1, -1, &r[1]);
            double t2 = now_s();
            oracle_lazy(s, ref, val, NULL, bench_mag_at, ref, NULL, n, -1, -1, n / 8 + 4096, &r[2]);
            double t3 = now_s();
            cd_local_check_lazy(s, ref, val, NULL, bench_mag_at, ref, NULL, n, -1, -1, n / 8 + 4096, &r[3]);
            double t4 = now_s();
            t[0][run] = t1 - t0;
            t[1][run] = t2 - t1;
            t[2][run] = t3 - t2;
            t[3][run] = t4 - t3;
        }
        SAME_RESULT(r[0], r[1], specs[k].name);
        SAME_RESULT(r[2], r[3], specs[k].name);
        printf("%s, %lld elements (ratio %.3g, lazy %lld mag_at):\n", specs[k].name, (long long)n, r[1].ratio,
               (long long)r[3].mag_elems);
        printf("  cd_local_check       old %8.2f ms  new %8.2f ms\n", 1e3 * median(t[0]), 1e3 * median(t[1]));
        printf("  cd_local_check_lazy  old %8.2f ms  new %8.2f ms\n", 1e3 * median(t[2]), 1e3 * median(t[3]));
    }
    fflush(stdout);
    free(ref);
    free(val);
}
