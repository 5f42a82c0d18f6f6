#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include "compare/analysis.h"
#include "compare/metrics.h"
#include "compare/policy.h"
#include "util/fp16.h"

static const cd_tol T32 = {.atol = 1e-4, .rtol = 1e-4, .max_fail_fraction = 0, .min_cos = 0.99999};

Test(metrics, identical_tensors) {
    float a[6] = {1, -2, 3, 0, 5, -6};
    cd_shape s = {.rank = 2, .d = {2, 3}};
    cd_metrics m;
    cd_metrics_compute(a, a, 6, &s, false, &T32, &m);
    cr_assert_eq(m.max_abs, 0);
    cr_assert_eq(m.cosine, 1);
    cr_assert(isinf(m.snr_db) && m.snr_db > 0);
    cr_assert_eq(m.fail_count, 0);
    cr_assert(m.pass);
}

Test(metrics, worst_element_and_coords) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 5.5f, 6};
    cd_shape s = {.rank = 2, .d = {2, 3}};
    cd_metrics m;
    cd_metrics_compute(a, b, 6, &s, false, &T32, &m);
    cr_assert_float_eq(m.max_abs, 0.5, 1e-12);
    cr_assert_eq(m.worst_index, 4);
    cr_assert_eq(m.worst_coord[0], 1);
    cr_assert_eq(m.worst_coord[1], 1);
    cr_assert_eq(m.fail_count, 1);
    cr_assert_float_eq(m.fail_fraction, 1.0 / 6, 1e-12);
    cr_assert_float_eq(m.mean_abs, 0.5 / 6, 1e-12);
    cr_assert_float_eq(m.rmse, sqrt(0.25 / 6), 1e-12);
    double sr = 1 + 4 + 9 + 16 + 25 + 36;
    cr_assert_float_eq(m.snr_db, 10 * log10(sr / 0.25), 1e-9);
    cr_assert(!m.pass);
}

Test(metrics, ulps_float_and_half) {
    float one = 1.0f, next = nextafterf(1.0f, 2.0f);
    cr_assert_eq(cd_ulp_distance(one, next, false), 1);
    cr_assert_eq(cd_ulp_distance(-0.0f, 0.0f, false), 0);
    cr_assert_eq(cd_ulp_distance(-next, next, false), 2 * (double)0x3f800001);
    /* 1 and 1 + 2^-10 are adjacent halves */
    cr_assert_eq(cd_ulp_distance(1.0f, 1.0f + 1.0f / 1024, true), 1);
}

Test(metrics, nonfinite_mismatch_fails_layer) {
    float a[3] = {1, 2, 3}, b[3] = {1, NAN, 3};
    cd_tol loose = {.atol = 1e9, .rtol = 1, .max_fail_fraction = 1, .min_cos = 0};
    cd_metrics m;
    cd_metrics_compute(a, b, 3, NULL, false, &loose, &m);
    cr_assert_eq(m.nan_val, 1);
    cr_assert_eq(m.nonfinite_mismatch, 1);
    cr_assert_eq(m.worst_index, 1);
    cr_assert(!m.pass);
    float c[2] = {INFINITY, NAN}, d[2] = {INFINITY, NAN};
    cd_metrics_compute(c, d, 2, NULL, false, &loose, &m);
    cr_assert_eq(m.nonfinite_mismatch, 0);
    cr_assert_eq(m.inf_ref, 1);
}

Test(metrics, relative_error_guard_near_zero) {
    float a[4] = {1, 1, 1, 0}, b[4] = {1, 1, 1, 1e-6f};
    cd_metrics m;
    cd_metrics_compute(a, b, 4, NULL, false, &T32, &m);
    /* floor = 1e-3 * rms = 1e-3 * sqrt(3/4) */
    cr_assert_float_eq(m.max_rel, 1e-6 / (1e-3 * sqrt(0.75)), 1e-9);
}

Test(metrics, topk) {
    float r[10] = {0.1f, 0.9f, 0.3f, 0.2f, 0.5f, 1, 0, 0, 0, 0};
    float v[10] = {0.1f, 0.9f, 0.3f, 0.2f, 0.5f, 0, 1, 0, 0, 0};
    double t1, t5;
    cd_topk_agreement(r, v, 2, 5, &t1, &t5);
    cr_assert_float_eq(t1, 0.5, 1e-12);
}

Test(policy, defaults_and_file_rules) {
    cd_policy p;
    cd_error err = {0};
    cd_policy_init(&p, CD_PREC_FP32);
    cr_assert_eq(cd_policy_parse(&p, "# tol\ndefault atol=1e-3\nop:conv2d rtol=0.5\nlayer:conv2d_1* min_cos=0.9\n", "t.tol", &err), CD_OK, "%s", err.msg);
    char rule[160];
    cd_tol t = cd_policy_for(&p, "conv2d", "conv2d_12", rule, sizeof rule);
    cr_assert_float_eq(t.atol, 1e-3, 1e-15);
    cr_assert_float_eq(t.rtol, 0.5, 1e-15);
    cr_assert_float_eq(t.min_cos, 0.9, 1e-15);
    cr_assert_str_eq(rule, "t.tol:4 layer:conv2d_1*");
    t = cd_policy_for(&p, "relu", "relu_0", rule, sizeof rule);
    cr_assert_float_eq(t.rtol, 1e-4, 1e-15);
    cr_assert_str_eq(rule, "t.tol:2 default");
    cd_policy_free(&p);
}

Test(policy, errors_name_the_line) {
    cd_policy p;
    cd_error err = {0};
    cd_policy_init(&p, CD_PREC_FP16);
    cr_assert_eq(cd_policy_parse(&p, "default atol=1\n\nop:x rtl=2\n", "bad.tol", &err), CD_E_USAGE);
    cr_assert(strstr(err.msg, "bad.tol:3") && strstr(err.msg, "rtl"), "%s", err.msg);
    cd_policy_free(&p);
    cd_policy_init(&p, CD_PREC_FP16);
    cr_assert_eq(cd_policy_parse(&p, "frob atol=1\n", "b2", &err), CD_E_USAGE);
    cr_assert(strstr(err.msg, "b2:1: unknown selector 'frob'"), "%s", err.msg);
    cr_assert_eq(cd_policy_parse(&p, "default atol=-1\n", "b3", &err), CD_E_USAGE);
    cr_assert_eq(cd_policy_load(&p, "/nonexistent/x.tol", &err), CD_E_USAGE);
    cd_policy_free(&p);
}

Test(analysis, first_divergence_growth_and_jump) {
    cd_analysis a = {0};
    a.n_layers = 4;
    a.layers = calloc(4, sizeof *a.layers);
    double rmse[4] = {1e-7, 2e-7, 1e-4, 2e-4}; /* floor 1e-6: growth at layer 2 = 1e-4/1e-6 */
    for (int i = 0; i < 4; i++) {
        a.layers[i].m.ref_rms = 1;
        a.layers[i].m.rmse = rmse[i];
        a.layers[i].m.pass = i < 2;
    }
    cd_analyze(&a);
    cr_assert_eq(a.first_fail, 2);
    cr_assert_eq(a.n_fail, 2);
    cr_assert_eq(a.verdict, CD_VERDICT_FAIL);
    cr_assert(a.layers[2].jump);
    cr_assert_float_eq(a.layers[2].growth, 100, 1e-6);
    cr_assert_float_eq(a.layers[1].growth, 1, 1e-12);
    cr_assert_eq(a.n_jumps, 1);
    cr_assert_str_eq(a.first_kind, "unknown");
    a.layers[2].isolated = true;
    a.layers[2].iso.pass = false;
    cd_classify_first(&a);
    cr_assert_str_eq(a.first_kind, "local");
    cd_analysis_free(&a);
}
