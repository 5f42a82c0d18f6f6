/* Error bounds of docs/verdicts.md, each against the value its formula gives, computed by
 * hand (python, double precision) and written here as literals. */
#include <criterion/criterion.h>
#include <math.h>
#include "compare/bounds.h"

#define F32 ((cd_arith){.u = CD_U32, .half_store = false})
#define H16 ((cd_arith){.u = CD_U32, .half_store = true})
#define REL_EQ(a, b) cr_assert(fabs((a) - (b)) <= 1e-12 * fabs(b), "%.17g != %.17g", (double)(a), (double)(b))

Test(bounds, gamma) {
    REL_EQ(cd_gamma(100, CD_U32), 5.96050000488761e-06); /* 100u / (1 - 100u) */
    cr_assert(isinf(cd_gamma(3000, CD_U16)));            /* K u >= 1: no bound */
    cr_assert_eq(cd_gamma(0, CD_U32), cd_gamma(1, CD_U32));
}

Test(bounds, exact_family_is_zero_in_float_and_half_rounding_in_half) {
    cd_bound_spec s = {.fam = CD_FAM_EXACT, .ref = F32, .b = F32, .safety = 2};
    cr_assert_eq(cd_bound_elem(&s, 3.0, NAN, NAN, 3.0), 0.0);
    s.b = H16; /* B stores half: half an ulp (u16 relative) plus a flushed half denormal */
    REL_EQ(cd_bound_elem(&s, 2.0, NAN, NAN, 2.0), 4.8828125e-04 * 2 + 6.103515625e-05);
}

Test(bounds, accumulate_scales_with_K_and_magnitude) {
    /* K = 98 (+ bias and residual = 100 roundings per side), both sides float, mag 5:
     * 2 * (gamma_100 + gamma_100) * 5 + 100 flushed denormals * 2 */
    cd_bound_spec s = {.fam = CD_FAM_ACCUMULATE, .K = 98, .lipschitz = 1, .ref = F32, .b = F32, .safety = 2};
    REL_EQ(cd_bound_elem(&s, 1.0, 5.0, NAN, 1.0), 0.00011921000009775219);
    /* without a magnitude, |ref| stands in: smaller */
    cr_assert(cd_bound_elem(&s, 1.0, NAN, NAN, 1.0) < cd_bound_elem(&s, 1.0, 5.0, NAN, 1.0));
}

Test(bounds, elementwise_relative_ulps) {
    /* 1 u per side, relative to |ref| = 0.5, safety 2: 2 * 1 * 2u * 0.5 plus 4 denormals * 2 */
    cd_bound_spec s = {.fam = CD_FAM_ELEMENTWISE, .K = 2, .ulps = 1, .ref = F32, .b = F32, .safety = 2};
    REL_EQ(cd_bound_elem(&s, 0.5, NAN, NAN, 0.5), 2 * 1 * (2 * CD_U32) * 0.5 + 4 * 2 * CD_ETA32);
}

Test(bounds, normalize_softmax) {
    /* y = 0.5, K = 10: 2 * ((g10 + g10) * y + (|ln y| + 8) * 2u * y) + 12 * 2 * eta32 */
    cd_bound_spec s = {.fam = CD_FAM_NORMALIZE, .K = 10, .ulps = 8, .ref = F32, .b = F32, .safety = 2};
    REL_EQ(cd_bound_elem(&s, 0.5, NAN, NAN, 0.5), 2.2283975054059e-06);
}

Test(bounds, rounding_allows_one_quantum_only_at_ties) {
    cd_bound_spec s = {.fam = CD_FAM_ROUNDING, .quantum = 0.1, .ref = F32, .b = F32, .safety = 2};
    /* x / q = 2.5: a tie, one quantum allowed */
    cr_assert(cd_bound_elem(&s, 0.3, NAN, 0.25, 0.3) >= 0.1);
    /* x / q = 2.7: far from a tie, only the dequantisation multiply's rounding */
    double b = cd_bound_elem(&s, 0.3, NAN, 0.27, 0.3);
    cr_assert(b < 1e-6, "%g", b);
    REL_EQ(b, 2 * 2 * (2 * CD_U32) * 0.3 + 3 * 2 * CD_ETA32);
}

Test(bounds, local_check_counts_and_locates) {
    cd_bound_spec s = {.fam = CD_FAM_EXACT, .ref = F32, .b = F32, .safety = 2};
    float ref[4] = {1, 2, 3, 4}, val[4] = {1, 2, 3.5f, 4};
    cd_local_result r;
    cd_local_check(&s, ref, ref, NULL, NULL, 4, -1, -1, &r);
    cr_assert(r.pass);
    cr_assert_eq(r.ratio, 0);
    cd_local_check(&s, ref, val, NULL, NULL, 4, -1, -1, &r);
    cr_assert(!r.pass);
    cr_assert_eq(r.exceed, 1);
    cr_assert_eq(r.worst, 2);
    cr_assert_eq(r.err, 0.5);
    cr_assert(isinf(r.ratio));
    /* the user's element tolerance is an extra allowance */
    cd_local_check(&s, ref, val, NULL, NULL, 4, 0.6, 0, &r);
    cr_assert(r.pass);
}

Test(bounds, nonfinite_and_half_overflow) {
    cd_bound_spec s = {.fam = CD_FAM_ELEMENTWISE, .ulps = 1, .K = 2, .ref = F32, .b = H16, .safety = 2};
    float ref[3] = {1, 70000, NAN}, val[3] = {NAN, INFINITY, 5};
    cd_local_result r;
    cd_local_check(&s, ref, val, NULL, NULL, 3, -1, -1, &r);
    /* NaN where the reference is finite: a fault; Inf from a half store of 70000: a range
     * hazard, allowed; a finite B where the reference is NaN: a fault too (it was skipped;
     * tests/unit/test_bounds_nonfinite.c) */
    cr_assert_eq(r.nonfinite, 2);
    cr_assert_eq(r.exceed, 2);
    cr_assert_eq(r.worst, 0);
    cr_assert(!r.pass);
}

Test(bounds, cheap_check_asks_for_the_magnitude) {
    cd_bound_spec s = {
        .fam = CD_FAM_ACCUMULATE, .K = 100, .lipschitz = 1, .ref = F32, .b = F32, .safety = 2, .mag_run = true};
    /* a cancelled output: 1e-3 from terms of magnitude 10, error 1e-6 */
    float ref[1] = {1e-3f}, val[1] = {1e-3f + 1e-6f}, mag[1] = {10};
    cd_local_result r;
    cd_local_check(&s, ref, val, NULL, NULL, 1, -1, -1, &r);
    cr_assert(!r.pass);
    cr_assert(r.needs_mag);
    cd_local_check(&s, ref, val, mag, NULL, 1, -1, -1, &r);
    cr_assert(r.pass, "ratio %g", r.ratio);
    cr_assert(!r.needs_mag);
}

/* The lazy check: magnitudes one by one for the elements nearest their cheap bound. */
typedef struct mag_probe {
    const float *mag;
    int calls;
    bool fail;
} mag_probe;
static double probe_mag(void *u, int64_t i) {
    mag_probe *p = u;
    p->calls++;
    return p->fail ? NAN : p->mag[i];
}

Test(bounds, lazy_check_asks_only_near_the_bound) {
    /* K = 98, float both sides. Element 0: error 1e-5 on ref 0.01 is far over its cheap bound
     * (|ref| standing in) but within the bound of its true magnitude 5. Element 1: error 0,
     * never asked. Elements 2..9: error 1 ulp on ref 1, far below a quarter of the cheap bound,
     * but element 2 at 5e-6, about a fifth of it: not refined, yet the worst ratio. */
    cd_bound_spec s = {
        .fam = CD_FAM_ACCUMULATE, .K = 98, .lipschitz = 1, .ref = F32, .b = F32, .safety = 2, .mag_run = true};
    float ref[10], val[10], mag[10];
    for (int i = 0; i < 10; i++) {
        ref[i] = 1;
        val[i] = 1 + 1e-7f;
        mag[i] = 1;
    }
    ref[0] = 0.01f;
    val[0] = 0.01f + 1e-5f;
    mag[0] = 5;
    ref[1] = val[1] = 2;
    mag[1] = 2;
    val[2] = 1 + 5e-6f;
    mag_probe p = {.mag = mag};
    cd_local_result r;
    cd_local_check_lazy(&s, ref, val, NULL, probe_mag, &p, NULL, 10, -1, -1, 100, &r);
    cr_assert(r.pass, "ratio %g", r.ratio);
    cr_assert(!r.needs_mag);
    cr_assert_eq(r.mag_elems, 1);
    cr_assert_eq(p.calls, 1, "asked %d times", p.calls);
    /* the worst ratio now sits on an element left on its cheap bound: flagged as an upper bound */
    cr_assert(r.ratio_upper);
    cr_assert_eq(r.worst, 2);
    /* a magnitude that cannot be had one by one: the caller must run the whole magnitude */
    mag_probe q = {.mag = mag, .fail = true};
    cd_local_check_lazy(&s, ref, val, NULL, probe_mag, &q, NULL, 10, -1, -1, 100, &r);
    cr_assert(!r.pass);
    cr_assert(r.needs_mag);
    /* a real fault stays a fault with the exact magnitude */
    val[0] = 0.01f + 1e-2f;
    mag_probe f = {.mag = mag};
    cd_local_check_lazy(&s, ref, val, NULL, probe_mag, &f, NULL, 10, -1, -1, 100, &r);
    cr_assert(!r.pass);
    cr_assert(!r.needs_mag);
    cr_assert_eq(r.worst, 0);
}
