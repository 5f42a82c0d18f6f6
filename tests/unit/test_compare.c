#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compare/analysis.h"
#include "verdict/verdict.h"
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

/* The metrics are defined blockwise: any thread count gives every field bit for bit, on a
 * tensor spanning several blocks with ties for the worst element, NaN/Inf on both sides,
 * +0/-0 and values near zero (the relative-error floor). */
Test(metrics, same_for_every_thread_count) {
    const int64_t n = 300007;
    float *r = malloc((size_t)n * sizeof *r), *v = malloc((size_t)n * sizeof *v);
    cr_assert(r && v);
    uint32_t x = 12345;
    for (int64_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        float a = ((float)(x >> 8) / 16777216.0f - 0.5f) * 8.0f;
        r[i] = a;
        v[i] = cd_round_half(a * (1.0f + ((x & 7) - 3.5f) * 1e-4f));
    }
    v[70000] = r[70000] + 3.0f; /* the worst element, tied at a later block */
    v[200000] = r[200000] + 3.0f;
    r[5] = 0.0f;
    v[5] = -0.0f;
    r[9] = 1e-30f;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            r[131073] = INFINITY;
            v[131073] = INFINITY;
            v[4] = NAN;
        }
        cd_tol tol = {.atol = 1e-3, .rtol = 1e-3, .max_fail_fraction = 0.01, .min_cos = 0.99};
        cd_shape s1 = {.rank = 1, .d = {n}};
        cd_metrics m1, mt;
        cd_metrics_compute_mt(r, v, n, &s1, true, &tol, &m1, 1);
        cr_expect_eq(m1.worst_index, pass ? 4 : 70000);
        for (int t = 2; t <= 7; t += 5) {
            cd_metrics_compute_mt(r, v, n, &s1, true, &tol, &mt, t);
            cr_expect(memcmp(&m1, &mt, sizeof m1) == 0, "threads %d differ from 1 (pass %d)", t, pass);
        }
        cd_metrics plain;
        cd_metrics_compute(r, v, n, &s1, true, &tol, &plain);
        cr_expect(memcmp(&m1, &plain, sizeof m1) == 0);
    }
    free(r);
    free(v);
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
    cr_assert_eq(cd_policy_parse(&p, "# tol\ndefault atol=1e-3\nop:conv2d rtol=0.5\nlayer:conv2d_1* min_cos=0.9\n",
                                 "t.tol", &err),
                 CD_OK, "%s", err.msg);
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

/* ---- diagnosis (docs/diagnosis.md) ---- */
#include "diag/diag.h"

Test(diag, hazard_counts_at_half_limits) {
    float g[] = {65504.0f, 65504.5f, -70000.0f, 6.0e-5f, -1e-7f, 0.0f, 6.103515625e-05f, NAN, INFINITY, 1.0f};
    int64_t over = 0, under = 0;
    double mx = 0;
    cd_diag_hazard_counts(g, 10, &over, &under, &mx);
    cr_assert_eq(over, 2);  /* 65504.5 and -70000; 65504 itself is representable */
    cr_assert_eq(under, 2); /* 6e-5 and -1e-7; 2^-14 is the smallest normal, 0 is exact */
    cr_assert_float_eq(mx, 70000.0, 0);
}

/* The counts against their definition (in double, one element at a time) on random bit
 * patterns, NaN/Inf and the limits included, over more than one chunk. */
Test(diag, hazard_counts_match_definition) {
    const int64_t n = (1 << 20) + 4099;
    float *g = malloc((size_t)n * sizeof *g);
    cr_assert(g);
    uint32_t x = 5;
    float special[] = {65504.0f,  nextafterf(65504.0f, INFINITY),
                       0x1p-14f,  nextafterf(0x1p-14f, 0),
                       0x1p-149f, 0.0f,
                       -0.0f,     INFINITY,
                       NAN,       FLT_MAX,
                       -65504.5f};
    for (int64_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        uint32_t u = x ^ (x >> 13) * 2654435761u;
        if (i % 3 == 0) u = (u & 0x80ffffffu) | ((0x60u + (u >> 24) % 0x40u) << 23); /* around the half range */
        memcpy(&g[i], &u, 4);
        if (i % 101 == 0) g[i] = special[(i / 101) % (int64_t)(sizeof special / sizeof *special)];
    }
    for (int64_t len = 1; len <= n; len = len * 7 + 3) {
        int64_t o = 0, un = 0, ro = 0, ru = 0;
        double mx = 0, rmx = 0;
        cd_diag_hazard_counts(g, len, &o, &un, &mx);
        for (int64_t i = 0; i < len; i++) {
            double a = fabs((double)g[i]);
            if (!isfinite(a)) continue;
            if (a > rmx) rmx = a;
            if (a > CD_HALF_MAX)
                ro++;
            else if (a > 0 && a < CD_HALF_MIN_NORMAL)
                ru++;
        }
        cr_assert_eq(o, ro, "len %lld: over %lld, definition %lld", (long long)len, (long long)o, (long long)ro);
        cr_assert_eq(un, ru, "len %lld: under %lld, definition %lld", (long long)len, (long long)un, (long long)ru);
        cr_assert(mx == rmx, "len %lld: absmax %a, definition %a", (long long)len, mx, rmx);
    }
    free(g);
}

Test(diag, auto_tolerance_formula) {
    cd_tol base = {.atol = 1, .rtol = 1, .min_cos = 0.5, .max_fail_fraction = 0.25};
    char rule[160];
    cd_tol t = cd_diag_auto_tol(&base, false, 100, 2.0, rule, sizeof rule);
    cr_assert_float_eq(t.atol, CD_AUTO_C * 5.9604644775390625e-08 * 10 * 2.0, 1e-20);
    cr_assert_float_eq(t.rtol, CD_AUTO_C * 5.9604644775390625e-08, 1e-20);
    cr_assert_float_eq(t.min_cos, 0.5, 0);
    cr_assert_float_eq(t.max_fail_fraction, 0.25, 0);
    cr_assert(strstr(rule, "auto:") == rule && strstr(rule, "K=100"), "%s", rule);
    cd_tol h = cd_diag_auto_tol(&base, true, 9, 1.0, NULL, 0);
    cr_assert_float_eq(h.atol, CD_AUTO_C * 4.8828125e-04 * 3, 1e-15);
    cd_tol z = cd_diag_auto_tol(&base, true, 0, 0.0, NULL, 0); /* all-zero reference: still > 0 */
    cr_assert(z.atol > 0);
}

Test(diag, hazard_ranking_and_nonfinite_origin) {
    cd_analysis a = {0};
    a.n_layers = 4;
    a.layers = calloc(4, sizeof *a.layers);
    for (int i = 0; i < 4; i++) {
        a.layers[i].op_index = i + 1;
        snprintf(a.layers[i].layer, sizeof a.layers[i].layer, "l%d", i);
        a.layers[i].m.pass = true;
        a.layers[i].m.n = 1000;
        a.layers[i].has_hazard = true;
        a.layers[i].tol.rtol = 1e-2;
        a.layers[i].acc_k = 1;
    }
    a.layers[1].g_absmax = 20000; /* near overflow */
    a.layers[2].g_over = 5;       /* overflow: riskiest */
    a.layers[2].m.pass = false;
    a.layers[2].nf_hard = true;
    a.layers[2].nf_new_b = 5;
    a.layers[3].m.pass = false; /* absorbed later: also nonfinite */
    a.layers[3].nf_hard = true;
    a.layers[3].nf_new_a = 1;
    a.layers[3].nf_new_b = 1;
    a.layers[0].acc_k = 1000000; /* u16*sqrt(K) = 0.49 > rtol */
    cd_analyze(&a);
    cd_diag_rank_hazards(&a);
    cr_assert_eq(a.n_at_risk, 3);
    cr_assert_eq(a.layers[2].risk_rank, 1);
    cr_assert_eq(a.layers[1].risk_rank, 2);
    cr_assert_eq(a.layers[0].risk_rank, 3);
    cr_assert_eq(a.layers[3].risk_rank, 0);
    cr_assert_eq(a.nonfinite_origin, 2);
    cr_assert_str_eq(a.nonfinite_side, "b");
    cr_assert_eq(a.n_nonfinite_hard, 2);
    cr_assert_eq(a.first_fail, 2);
    cd_classify_first(&a);
    cr_assert_str_eq(a.first_kind, "local");
    /* a nondeterministic layer fails the run even within tolerance */
    a.layers[2].m.pass = a.layers[3].m.pass = true;
    a.layers[2].nf_hard = a.layers[3].nf_hard = false;
    a.layers[0].nondet = true;
    cd_analyze(&a);
    cr_assert_eq(a.verdict, CD_VERDICT_FAIL);
    cr_assert_eq(a.first_nondet, 0);
    cr_assert_eq(a.n_nondet, 1);
    cd_analysis_free(&a);
}

/* ---- the fused all-finite loop (cd_metrics_compute_layer) against the general one ---- */

/* The binary16 ULP index by the definition: cd_float_to_half's signed magnitude. */
static int32_t half_order_ref(float f) {
    uint16_t h = cd_float_to_half(f);
    return (h & 0x8000) ? -(int32_t)(h & 0x7fff) : (int32_t)h;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void expect_half_order(float f) {
    int32_t got = cd_metrics_half_order(f), want = half_order_ref(f);
    uint32_t u;
    memcpy(&u, &f, 4);
    cr_assert_eq(got, want, "float 0x%08x (%a): fast index %d, cd_float_to_half gives %d", u, (double)f, got, want);
    /* the vector step, with f in each lane among other values */
    float four[4] = {1.0f, -0.0f, 3e-6f, -70000.0f};
    four[u & 3] = f;
    int32_t o4[4];
    cd_metrics_half_order4(four, o4);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(o4[k], half_order_ref(four[k]), "vector lane %d of float 0x%08x: %d, cd_float_to_half gives %d", k,
                     u, o4[k], half_order_ref(four[k]));
}

/* Every rounding boundary: each half value, the midpoints between neighbours (ties to even
 * both ways) and one float step either side of them, both signs; the overflow edge; then a
 * regular sweep of all finite floats and random bit patterns. */
Test(metrics_fused, half_order_matches_cd_float_to_half) {
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float lo = cd_half_to_float((uint16_t)h), hi = cd_half_to_float((uint16_t)(h + 1));
        float mid = (float)(((double)lo + (double)hi) / 2); /* exact: halves have 11 bits */
        float c[] = {lo,  nextafterf(lo, 0),  nextafterf(lo, INFINITY),
                     mid, nextafterf(mid, 0), nextafterf(mid, INFINITY)};
        for (int k = 0; k < 6; k++) {
            expect_half_order(c[k]);
            expect_half_order(-c[k]);
        }
    }
    float edge[] = {65504.0f,
                    65519.99f,
                    65520.0f,
                    nextafterf(65520.0f, 0),
                    1e30f,
                    FLT_MAX,
                    INFINITY,
                    0x1p-25f,
                    nextafterf(0x1p-25f, 1),
                    nextafterf(0x1p-25f, 0),
                    0x1p-149f,
                    0x1p-14f,
                    nextafterf(0x1p-14f, 0),
                    0.0f};
    for (size_t k = 0; k < sizeof edge / sizeof *edge; k++) {
        expect_half_order(edge[k]);
        expect_half_order(-edge[k]);
    }
    for (uint32_t u = 0; u < 0x7f800000u; u += 4099) {
        expect_half_order(bits_float(u));
        expect_half_order(bits_float(u | 0x80000000u));
    }
    uint32_t x = 7;
    for (int i = 0; i < 2000000; i++) {
        x = x * 1664525u + 1013904223u;
        uint32_t u = x ^ (x >> 15) * 2654435761u;
        if ((u & 0x7f800000u) == 0x7f800000u) continue; /* NaN/Inf never reach the fused loop */
        expect_half_order(bits_float(u));
    }
}

/* A value of one of the kinds the comparison meets: ordinary, tiny (float and half subnormal),
 * +-0, near and above the half maximum, exact ties between halves; NaN and Inf when
 * nonfinite. */
static float pick_value(uint32_t *x, bool nonfinite) {
    *x = *x * 1664525u + 1013904223u;
    uint32_t r = *x >> 8;
    float u = (float)(r & 0xffff) / 65536.0f - 0.5f;
    switch ((*x >> 4) % 12) {
    case 0: return u * 1e-6f;  /* half subnormal range */
    case 1: return u * 1e-40f; /* float subnormal */
    case 2: return (r & 1) ? 0.0f : -0.0f;
    case 3: return u * 140000.0f; /* around and above 65504 */
    case 4: {                     /* a tie between two halves */
        float lo = cd_half_to_float((uint16_t)(r & 0x7bff)), hi = cd_half_to_float((uint16_t)((r & 0x7bff) + 1));
        return (float)(((double)lo + (double)hi) / 2) * ((r & 0x10000) ? -1 : 1);
    }
    case 5:
        if (nonfinite) return (r & 3) == 0 ? NAN : (r & 3) == 1 ? INFINITY : (r & 3) == 2 ? -INFINITY : u;
        return u;
    default: return u * 8.0f;
    }
}

static void expect_same_metrics(const cd_metrics *x, const cd_metrics *y, const char *what, int t) {
    cr_assert(
        memcmp(x, y, sizeof *x) == 0,
        "%s (threads %d): max_abs %a/%a max_rel %a/%a max_ulp %a/%a sum-based rmse %a/%a cos %a/%a fails %lld/%lld "
        "worst %lld/%lld",
        what, t, x->max_abs, y->max_abs, x->max_rel, y->max_rel, x->max_ulp, y->max_ulp, x->rmse, y->rmse, x->cosine,
        y->cosine, (long long)x->fail_count, (long long)y->fail_count, (long long)x->worst_index,
        (long long)y->worst_index);
}

static void check_fused(const float *a, const float *b, const float *g, int64_t n, bool half, const cd_tol *tol,
                        int threads) {
    cd_shape s = {.rank = 2, .d = {n > 7 ? 7 : 1, n > 7 ? (n + 6) / 7 : n}};
    cd_metrics f[3], r[3], p[3];
    cd_metrics_compute_layer(a, b, g, n, &s, half, tol, &f[0], &f[1], &f[2], threads);
    cd_metrics_compute_general(a, b, g, n, &s, half, tol, &r[0], &r[1], &r[2], 1);
    expect_same_metrics(&f[0], &r[0], "A vs B", threads);
    if (!g) return;
    expect_same_metrics(&f[1], &r[1], "golden vs A", threads);
    expect_same_metrics(&f[2], &r[2], "golden vs B", threads);
    /* and each pair alone, as layers compared one pair at a time did */
    cd_metrics_compute_mt(g, a, n, &s, half, tol, &p[1], threads);
    cd_metrics_compute_mt(g, b, n, &s, half, tol, &p[2], threads);
    expect_same_metrics(&f[1], &p[1], "golden vs A, one pair", threads);
    expect_same_metrics(&f[2], &p[2], "golden vs B, one pair", threads);
}

/* One element at a time: every element's ULP distance, error and threshold decides the
 * metrics, so a wrong step of the fused loop cannot hide behind a larger one. */
Test(metrics_fused, single_elements_equal_general_loop) {
    uint32_t x = 99;
    cd_tol tol = {.atol = 1e-3, .rtol = 1e-2, .max_fail_fraction = 0, .min_cos = 0.99};
    for (int i = 0; i < 200000; i++) {
        float g = pick_value(&x, i % 10 == 0), a = cd_round_half(g), b;
        x = x * 1664525u + 1013904223u;
        b = (x >> 29) == 0   ? a
            : (x >> 29) == 1 ? pick_value(&x, false)
                             : cd_round_half(g * (1 + ((x & 15) - 7.5f) * 1e-3f));
        if (i % 7 == 0) a = pick_value(&x, i % 3 == 0); /* unrelated values, unrounded too */
        float ga[1] = {g}, aa[1] = {a}, ba[1] = {b};
        check_fused(aa, ba, ga, 1, i & 1, &tol, 1);
        check_fused(aa, ba, NULL, 1, i & 1, &tol, 1); /* one pair: its own loop (fast_block1) */
    }
    /* errors exactly at the threshold atol + rtol*|ref| pass (d > threshold fails) */
    cd_tol exact = {.atol = 0.5, .rtol = 0.25, .max_fail_fraction = 0, .min_cos = 0};
    float g2[2] = {2, -4}, a2[2] = {3, -2.5f}, b2[2] = {1, -5.5f};
    for (int half = 0; half < 2; half++) {
        check_fused(a2, b2, g2, 2, half, &exact, 1);
        cd_metrics m[3];
        cd_metrics_compute_layer(a2, b2, g2, 2, NULL, half, &exact, &m[0], &m[1], &m[2], 1);
        cr_expect_eq(m[1].fail_count, 0);
        cr_expect_eq(m[2].fail_count, 0);
    }
}

/* Whole tensors over several blocks (and a partial one), with and without NaN/Inf blocks, in
 * half and float ULPs, with a range-scaled atol, for several thread counts. */
Test(metrics_fused, tensors_equal_general_loop) {
    const int64_t n = 4 * 65536 + 1234;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b), *g = malloc((size_t)n * sizeof *g);
    cr_assert(a && b && g);
    uint32_t x = 4242;
    for (int variant = 0; variant < 4; variant++) {
        bool nonfinite = variant & 1, half = variant < 2;
        for (int64_t i = 0; i < n; i++) {
            bool nf = nonfinite && (i / 65536) % 2 == 1 && (i % 997) == 0; /* blocks 1 and 3 only */
            float v = pick_value(&x, nf);
            g[i] = v;
            a[i] = half ? cd_round_half(v) : v * (1 + 1e-6f);
            x = x * 1664525u + 1013904223u;
            b[i] = (x & 3) ? a[i] : (half ? cd_round_half(v * (1 + ((x >> 4 & 7) - 3.5f) * 1e-3f)) : v);
        }
        a[70000] = g[70000] + 300.0f; /* tied worst elements in two blocks */
        a[200000] = g[200000] + 300.0f;
        cd_tol tol = {.atol = 1e-4, .rtol = 1e-3, .max_fail_fraction = 0.01, .min_cos = 0.99, .range_atol = 1e-4};
        for (int t = 1; t <= 3; t++) {
            check_fused(a, b, g, n, half, &tol, t);
            check_fused(a, b, NULL, n, half, &tol, t);
        }
    }
    free(a);
    free(b);
    free(g);
}

/* One pair in float ULPs (fast_block1's uint32 lanes): values of both signs and around zero, so
 * that pairs of opposite signs (ULP distance ma + mb, up to 2^32 - 2) and of one sign meet in the
 * vector part and in the tail of a chunk. */
Test(metrics_fused, one_pair_float_ulps_both_signs) {
    const int64_t n = 3 * 256 + 7;
    float a[3 * 256 + 7], b[3 * 256 + 7];
    uint32_t x = 2024;
    for (int round = 0; round < 50; round++) {
        for (int64_t i = 0; i < n; i++) {
            a[i] = pick_value(&x, false);
            x = x * 1664525u + 1013904223u;
            b[i] = (x >> 30) == 0 ? -a[i] : (x >> 30) == 1 ? pick_value(&x, false) : a[i] * (1 + 1e-6f);
        }
        a[round * 5] = 3.0e38f; /* the largest distance: opposite extremes */
        b[round * 5] = -3.0e38f;
        cd_tol tol = {.atol = 1e-4, .rtol = 1e-3, .max_fail_fraction = 0.5, .min_cos = 0};
        check_fused(a, b, NULL, n, false, &tol, 1);
        cd_metrics m;
        cd_metrics_compute(a, b, n, NULL, false, &tol, &m);
        cr_expect_geq(m.max_ulp, 4.0e9, "3e38 against -3e38 is ~2^32 ULPs apart, got %g", m.max_ulp);
    }
}
