/* NaN/Inf in the local check (src/compare/bounds.c, docs/verdicts.md): where the reference is
 * non-finite too, B is held to it. Same-sign Inf and NaN against NaN agree; a sign flip, NaN
 * against Inf or a finite value where the reference overflowed far from the range are faults;
 * a value at the top of the range of the side that overflowed (an fp16 store beyond 65504) and
 * a magnitude that reaches the range (partial sums may overflow in any order) are not. */
#include <criterion/criterion.h>
#include <math.h>
#include "compare/bounds.h"

#define F32 ((cd_arith){.u = CD_U32, .half_store = false})
#define H16 ((cd_arith){.u = CD_U32, .half_store = true})

static cd_local_result check(const cd_bound_spec *s, const float *ref, const float *val, const float *mag, int n) {
    cd_local_result r;
    cd_local_check(s, ref, val, mag, NULL, n, -1, -1, &r);
    return r;
}

Test(bounds_nonfinite, agree_when_equal) {
    cd_bound_spec s = {.fam = CD_FAM_TRANSCENDENTAL, .ulps = 8, .K = 2, .ref = F32, .b = F32, .safety = 2};
    float ref[4] = {INFINITY, -INFINITY, NAN, 1}, val[4] = {INFINITY, -INFINITY, -NAN, 1};
    cd_local_result r = check(&s, ref, val, NULL, 4);
    cr_assert(r.pass);
    cr_assert_eq(r.nonfinite, 0);
}

Test(bounds_nonfinite, mismatch_where_the_reference_is_not_finite) {
    /* each element alone: a fault (was skipped: "a NaN reference holds B to nothing") */
    cd_bound_spec s = {.fam = CD_FAM_TRANSCENDENTAL, .ulps = 8, .K = 2, .ref = F32, .b = F32, .safety = 2};
    const float ref[5] = {INFINITY, INFINITY, NAN, -INFINITY, NAN};
    const float val[5] = {-INFINITY, NAN, INFINITY, -5, 0};
    for (int i = 0; i < 5; i++) {
        cd_local_result r = check(&s, &ref[i], &val[i], NULL, 1);
        cr_assert(!r.pass, "element %d: %g vs %g passed", i, ref[i], val[i]);
        cr_assert_eq(r.nonfinite, 1);
        cr_assert_eq(r.exceed, 1);
        cr_assert_eq(r.worst, 0);
        cr_assert(isinf(r.ratio));
    }
    /* the exact family (a copy of an Inf must copy it) */
    cd_bound_spec e = {.fam = CD_FAM_EXACT, .K = 1, .ref = F32, .b = F32, .safety = 2};
    float a[2] = {INFINITY, 1}, b[2] = {-INFINITY, 1};
    cd_local_result r = check(&e, a, b, NULL, 2);
    cr_assert(!r.pass);
    cr_assert_eq(r.worst, 0);
}

Test(bounds_nonfinite, range_of_half_storage) {
    /* B stores half: 70000 and 65510 (within its bound of 65504) stored as Inf are a range
     * hazard; 1000 as Inf, or -Inf for 70000, a fault */
    cd_bound_spec s = {.fam = CD_FAM_ELEMENTWISE, .ulps = 1, .K = 2, .ref = F32, .b = H16, .safety = 2};
    float ref[2] = {70000, 65510}, val[2] = {INFINITY, INFINITY};
    cr_assert(check(&s, ref, val, NULL, 2).pass);
    float r2[1] = {1000}, v2[1] = {INFINITY};
    cr_assert(!check(&s, r2, v2, NULL, 1).pass);
    float r3[1] = {70000}, v3[1] = {-INFINITY};
    cr_assert(!check(&s, r3, v3, NULL, 1).pass);
    /* the reference stores half (the CPU's fp16 path) and overflowed; B, in float, holds
     * 65520: the mirror case, allowed; B at 30000 is not near the range: a fault */
    cd_bound_spec m = {.fam = CD_FAM_ELEMENTWISE, .ulps = 1, .K = 2, .ref = H16, .b = F32, .safety = 2};
    float r4[1] = {INFINITY}, v4[1] = {65520};
    cr_assert(check(&m, r4, v4, NULL, 1).pass);
    float v5[1] = {30000};
    cr_assert(!check(&m, r4, v5, NULL, 1).pass);
    /* float storage: an Inf reference against a finite 1e30 is no range hazard */
    cd_bound_spec f = {.fam = CD_FAM_ELEMENTWISE, .ulps = 1, .K = 2, .ref = F32, .b = F32, .safety = 2};
    float r6[1] = {INFINITY}, v6[1] = {1e30f};
    cr_assert(!check(&f, r6, v6, NULL, 1).pass);
    float v7[1] = {3.4028234e38f};
    cr_assert(check(&f, r6, v7, NULL, 1).pass);
}

Test(bounds_nonfinite, magnitude_in_the_range) {
    /* an accumulation whose terms reach the float range may overflow in one order and not in
     * another, to either sign (and Inf - Inf is NaN): no bound; with small terms a sign flip is
     * a fault */
    cd_bound_spec s = {
        .fam = CD_FAM_ACCUMULATE, .K = 64, .lipschitz = 1, .ref = F32, .b = F32, .safety = 2, .mag_run = true};
    float ref[1] = {INFINITY}, val[1] = {-INFINITY};
    float big[1] = {3e38f}, inf[1] = {INFINITY}, small[1] = {10};
    cr_assert(check(&s, ref, val, big, 1).pass);
    cr_assert(check(&s, ref, val, inf, 1).pass);
    cd_local_result r = check(&s, ref, val, small, 1);
    cr_assert(!r.pass);
    cr_assert_eq(r.nonfinite, 1);
    cr_assert(!r.needs_mag);
    /* without the magnitude the element cannot be judged: it asks for it */
    r = check(&s, ref, val, NULL, 1);
    cr_assert(!r.pass);
    cr_assert(r.needs_mag);
    /* NaN in B where the reference is finite stays a fault without a magnitude */
    float r2[1] = {1}, v2[1] = {NAN};
    r = check(&s, r2, v2, NULL, 1);
    cr_assert(!r.pass);
    cr_assert(!r.needs_mag);
    /* an elementwise sum of infinite operands follows IEEE rules on both sides alike: a
     * sign flip there is a fault even though the magnitude is infinite */
    cd_bound_spec e = {
        .fam = CD_FAM_ELEMENTWISE, .ulps = 1, .K = 2, .ref = F32, .b = F32, .safety = 2, .mag_run = true};
    cr_assert(!check(&e, ref, val, inf, 1).pass);
    cr_assert(check(&e, ref, val, big, 1).pass);
}

typedef struct probe {
    const float *mag;
    int calls;
} probe;
static double probe_mag(void *u, int64_t i) {
    probe *p = u;
    p->calls++;
    return p->mag[i];
}

Test(bounds_nonfinite, lazy_check_asks_for_the_magnitude) {
    cd_bound_spec s = {
        .fam = CD_FAM_ACCUMULATE, .K = 64, .lipschitz = 1, .ref = F32, .b = F32, .safety = 2, .mag_run = true};
    float ref[3] = {1, INFINITY, 2}, val[3] = {1, -INFINITY, 2}, mag[3] = {1, 10, 2};
    probe p = {.mag = mag};
    cd_local_result r;
    cd_local_check_lazy(&s, ref, val, NULL, probe_mag, &p, NULL, 3, -1, -1, 100, &r);
    cr_assert(!r.pass);
    cr_assert(!r.needs_mag);
    cr_assert_eq(r.worst, 1);
    cr_assert_eq(p.calls, 1);
    /* settling's one-pass form (max_calls 0) decides the same */
    p.calls = 0;
    cd_local_check_lazy(&s, ref, val, NULL, probe_mag, &p, NULL, 3, -1, -1, 0, &r);
    cr_assert(!r.pass);
    cr_assert_eq(p.calls, 1);
    float huge[3] = {1, 3e38f, 2};
    probe q = {.mag = huge};
    cd_local_check_lazy(&s, ref, val, NULL, probe_mag, &q, NULL, 3, -1, -1, 100, &r);
    cr_assert(r.pass, "ratio %g", r.ratio);
}

Test(bounds_nonfinite, int8_rail_is_one_sided) {
    /* an int8 output on its +-127 quanta rail: A saturated. B beyond the rail on its side is
     * unbounded (A hides how far); B inside the rail, at 0 or of the other sign is held to the
     * bound (was: no bound on either side, so a rail element flipped or zeroed passed) */
    cd_bound_spec s = {
        .fam = CD_FAM_INT8, .K = 9, .lipschitz = 1, .safety = CD_BOUND_SAFETY, .quantum = 0.5, .ref = F32, .b = F32};
    float rail = 127 * 0.5f;
    float ref[1] = {rail};
    float beyond[1] = {2 * rail}, near[1] = {rail - 0.2f}, inside[1] = {rail - 2}, flip[1] = {-rail}, zero[1] = {0};
    cr_assert(check(&s, ref, beyond, NULL, 1).pass);
    cr_assert(check(&s, ref, near, NULL, 1).pass);
    cr_assert(!check(&s, ref, inside, NULL, 1).pass);
    cr_assert(!check(&s, ref, flip, NULL, 1).pass);
    cr_assert(!check(&s, ref, zero, NULL, 1).pass);
    float nref[1] = {-rail}, nbeyond[1] = {-3 * rail}, nflip[1] = {rail};
    cr_assert(check(&s, nref, nbeyond, NULL, 1).pass);
    cr_assert(!check(&s, nref, nflip, NULL, 1).pass);
}
