/* Every op type cldiff runs has a bound family derived from its arithmetic (docs/verdicts.md):
 * the registry is walked and each type's family asked for; none may fall back to "generic". A
 * new op type whose entry in src/engine/op_list.def has no bound family (GENERIC) fails here, not
 * at run time with a bound nobody derived. Also the arithmetic parts of the families added for it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "verdict/verdict.h"
#include "compare/bounds.h"
#include "engine/ops.h"

#define F32 ((cd_arith){.u = CD_U32, .half_store = false})
#define REL_EQ(a, b) cr_assert(fabs((a) - (b)) <= 1e-12 * fabs(b), "%.17g != %.17g", (double)(a), (double)(b))

Test(families, every_registered_op_type_has_a_derived_family) {
    const cd_op_def *const *defs = NULL;
    int n = cd_op_all(&defs);
    cr_assert_gt(n, 100, "registry holds %d op types", n);
    cd_error err = {0};
    cd_graph *g = cd_graph_new();
    cr_assert_not_null(g);
    int missing = 0;
    char list[4096] = "";
    for (int i = 0; i < n; i++) {
        cr_assert_not_null(cd_graph_add_op(g, defs[i]->type, &err), "%s", err.msg);
        cd_bound_spec spec;
        char desc[160];
        cd_local_spec(g, NULL, g->n_ops - 1, F32, F32, &spec, desc, sizeof desc);
        if (spec.fam == CD_FAM_GENERIC || spec.fam >= CD_FAM_COUNT || !strncmp(desc, "generic", 7)) {
            missing++;
            size_t w = strlen(list);
            snprintf(list + w, sizeof list - w, " %s", defs[i]->type);
        }
        /* families whose allowance is computed from the inputs must take the dense path */
        if (cd_bound_family_allowance(spec.fam))
            cr_assert(spec.mag_run, "%s: allowance family without mag_run", defs[i]->type);
    }
    cd_graph_free(g);
    cr_assert_eq(missing, 0,
                 "op types without a bound family (give them one in src/engine/op_list.def and "
                 "docs/verdicts.md):%s",
                 list);
}

Test(families, recurrent_and_norm_add_the_allowance) {
    cd_bound_spec s = {.fam = CD_FAM_RECURRENT, .K = 304, .ref = F32, .b = F32, .safety = 2};
    /* arithmetic part = the allowance (mag), plus (K + 2) * 2 * 2^-126 flushed denormals */
    REL_EQ(cd_bound_elem(&s, 0.5, 1e-3, NAN, 1), 1e-3 + 306 * 2 * CD_ETA32);
    /* no allowance (inputs not in the dump): 0, a lower bound, so that an element over the
     * storage terms asks for it */
    REL_EQ(cd_bound_elem(&s, 0.5, NAN, NAN, 1), 306 * 2 * CD_ETA32);
    s.fam = CD_FAM_NORM;
    s.b.half_store = true;
    /* half store on B: u16 (r + a) + 2^-14 */
    REL_EQ(cd_bound_elem(&s, 0.5, 1e-3, NAN, 1), 1e-3 + 306 * 2 * CD_ETA32 + CD_U16 * (0.5 + 1e-3) + CD_ETA16);
    cr_assert(cd_bound_family_allowance(CD_FAM_RECURRENT) && cd_bound_family_allowance(CD_FAM_NORM));
    cr_assert(!cd_bound_family_allowance(CD_FAM_ACCUMULATE));
}

Test(families, detection_and_interpolation) {
    cd_bound_spec s = {.fam = CD_FAM_DETECTION, .K = 2, .ulps = 16, .ref = F32, .b = F32, .safety = 2};
    /* 2 * 16 * (u + u) * (r + 2 absmax) = 64 u (0.25 + 2) */
    REL_EQ(cd_bound_elem(&s, 0.25, NAN, NAN, 1), 64 * CD_U32 * 2.25 + 4 * 2 * CD_ETA32);
    s = (cd_bound_spec){.fam = CD_FAM_INTERP, .K = 8 + 4 * 32, .ref = F32, .b = F32, .safety = 2};
    REL_EQ(cd_bound_elem(&s, 1, NAN, NAN, 2), 2 * 2 * cd_gamma(136, CD_U32) * 5 + 138 * 2 * CD_ETA32);
    cr_assert_str_eq(cd_bound_family_name(CD_FAM_RECURRENT), "recurrent");
    cr_assert_str_eq(cd_bound_family_name(CD_FAM_NORM), "norm");
    cr_assert_str_eq(cd_bound_family_name(CD_FAM_DETECTION), "detection");
    cr_assert_str_eq(cd_bound_family_name(CD_FAM_INTERP), "interpolate");
}

/* gelu's cancellation: for x < 0, 1 + erf(x / sqrt 2) cancels and erf's error is absolute. A
 * zoo SVTR block (Paddle 2.6.2, PoCL) had x = -2.93, y = -0.00494 and a CPU/OpenCL difference of
 * 4.3e-8, over the relative-only bound (2.4e-8): a false KERNEL FAULT in fp32. */
Test(families, gelu_cancellation_is_absolute) {
    cd_error err = {0};
    cd_graph *g = cd_graph_new();
    cr_assert_not_null(cd_graph_add_op(g, "gelu", &err), "%s", err.msg);
    cd_bound_spec spec;
    char desc[160];
    cd_local_spec(g, NULL, 0, F32, F32, &spec, desc, sizeof desc);
    cr_assert_eq(spec.fam, CD_FAM_TRANSCENDENTAL);
    double b = cd_bound_elem(&spec, -0.0049406574, NAN, -2.9317636, 1);
    cr_assert_gt(b, 4.3e-8, "gelu bound at x = -2.93: %g", b);
    /* still far below what a different formula gives (erf vs the tanh approximation differ by
     * up to 4.7e-4 near |x| = 2) */
    cr_assert_lt(cd_bound_elem(&spec, 1.9545, NAN, 2.0, 1), 1e-4);
    cd_graph_free(g);
}
