/* The Winograd bound (docs/verdicts.md "Winograd convolutions", compare/bounds.h cd_wino_*):
 * the transforms built from the engines' interpolation points compute the correlation exactly;
 * the stagewise magnitude is at most the one through the absolute transforms, which is at least
 * sum |w x|;
 * an emulated half-precision Winograd convolution (every operation rounded to half, MNN's ARMv8.2
 * path) stays within the bound on the Winograd magnitude, where it may exceed the direct
 * kernel's; and a conv whose output is off by a relative 1e-3 in every element is still over the
 * bound in float32 for MNN's F(2,3), F(4,3), F(6,3) and Paddle-Lite's F(6,3). Which layers of
 * which engines get the Winograd bound (the tiles MNN, Paddle-Lite ARM and OpenCL may pick), and a
 * backend without Winograd keeps the direct bound unchanged. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "compare/bounds.h"
#include <string.h>
#include "util/fp16.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* uniform in [0, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* direct correlation of an alpha x alpha tile d with a k x k g: output (i, j) */
static double direct(const double *d, int al, const double *g, int k, int i, int j) {
    double a = 0;
    for (int s = 0; s < k; s++)
        for (int t = 0; t < k; t++) a += g[s * k + t] * d[(i + s) * al + j + t];
    return a;
}

/* y = A^T [(G g G^T) . (B^T d B)] A in double with the signed transforms */
static void wino_exact(const cd_wino_mats *t, const double *d, const double *g, double *y) {
    int al = t->alpha, m = t->m, k = t->k;
    double U[64], V[64], T[64];
    for (int p = 0; p < al; p++)
        for (int q = 0; q < k; q++) {
            T[p * k + q] = 0;
            for (int s = 0; s < k; s++) T[p * k + q] += t->G[p][s] * g[s * k + q];
        }
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            U[p * al + q] = 0;
            for (int s = 0; s < k; s++) U[p * al + q] += T[p * k + s] * t->G[q][s];
        }
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            T[p * al + q] = 0;
            for (int s = 0; s < al; s++) T[p * al + q] += t->BT[p][s] * d[s * al + q];
        }
    for (int p = 0; p < al; p++)
        for (int q = 0; q < al; q++) {
            V[p * al + q] = 0;
            for (int s = 0; s < al; s++) V[p * al + q] += T[p * al + s] * t->BT[q][s];
        }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) {
            double a = 0;
            for (int p = 0; p < al; p++)
                for (int q = 0; q < al; q++) a += t->A[p][i] * U[p * al + q] * V[p * al + q] * t->A[q][j];
            y[i * m + j] = a;
        }
}

Test(winograd, transforms_compute_the_correlation) {
    /* MNN's tiles 4, 6, 8 for 3x3, 6 and 8 for 5x5, 8 for 7x7; Paddle-Lite ARM's 8-tile */
    const struct {
        int alpha, k;
        const double *pts;
    } cases[] = {{4, 3, cd_wino_points_mnn}, {6, 3, cd_wino_points_mnn}, {8, 3, cd_wino_points_mnn},
                 {6, 5, cd_wino_points_mnn}, {8, 5, cd_wino_points_mnn}, {8, 7, cd_wino_points_mnn},
                 {8, 3, cd_wino_points_pl8}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cd_wino_mats t;
        cr_assert(cd_wino_mats_make(&t, cases[c].alpha, cases[c].k, cases[c].pts));
        cr_assert_eq(t.m, cases[c].alpha - cases[c].k + 1);
        double d[64], g[49], y[64];
        for (int i = 0; i < t.alpha * t.alpha; i++) d[i] = 2 * urand() - 1;
        for (int i = 0; i < t.k * t.k; i++) g[i] = 2 * urand() - 1;
        wino_exact(&t, d, g, y);
        for (int i = 0; i < t.m; i++)
            for (int j = 0; j < t.m; j++) {
                double want = direct(d, t.alpha, g, t.k, i, j);
                cr_assert(fabs(y[i * t.m + j] - want) <= 1e-9 * (1 + fabs(want)), "F(%d,%d) (%d,%d): %.17g != %.17g",
                          t.m, t.k, i, j, y[i * t.m + j], want);
            }
    }
    cd_wino_mats t;
    cr_assert(!cd_wino_mats_make(&t, 10, 3, cd_wino_points_mnn), "no tile beyond 8");
    cr_assert(!cd_wino_mats_make(&t, 3, 3, cd_wino_points_mnn), "m >= 2");
}

/* the magnitude the local check hands the Winograd bound for output (i, j) of C channels
 * (tiles d[c], weights w[c]; local_mag.c): the stagewise allowance in units of gamma_n(u) */
static double wino_mag(const cd_wino_mats *t, int C, const double *d, const float *w, int i, int j, double u) {
    int al = t->alpha;
    double acc[4 * 64] = {0}, U[64], Ua[64], V[64], Va[64], out[64];
    for (int c = 0; c < C; c++) {
        cd_wino_weight_tf(t, w + c * t->k * t->k, U);
        cd_wino_weight_mag(t, w + c * t->k * t->k, Ua);
        cd_wino_input_tf(t, d + c * al * al, V);
        cd_wino_input_mag(t, d + c * al * al, Va);
        cd_wino_acc(t, U, Ua, V, Va, acc);
    }
    cd_wino_tile_allow(t, acc, C, u, 0, out);
    return out[i * t->m + j];
}

/* the cruder magnitude: gamma_n times the output through the absolute transforms */
static double wino_mag_abs(const cd_wino_mats *t, int C, const double *d, const float *w, int i, int j) {
    int al = t->alpha;
    double M[64] = {0}, U[64], V[64], out[64];
    for (int c = 0; c < C; c++) {
        cd_wino_weight_mag(t, w + c * t->k * t->k, U);
        cd_wino_input_mag(t, d + c * al * al, V);
        for (int e = 0; e < al * al; e++) M[e] += U[e] * V[e];
    }
    cd_wino_output_mag(t, M, out);
    return out[i * t->m + j];
}

static float rh(double x) { return cd_round_half((float)x); }

/* One output tile of a C-channel Winograd conv computed as MNN's fp16 path does: weights
 * transformed in float then stored in half, every other operation in half. */
static void wino_half(const cd_wino_mats *t, int C, const double *d, const float *w, double *y) {
    int al = t->alpha, k = t->k;
    float M[64] = {0};
    for (int c = 0; c < C; c++) {
        float U[64], V[64], T[64];
        const float *g = w + c * k * k;
        const double *dc = d + c * al * al;
        for (int p = 0; p < al; p++)
            for (int q = 0; q < al; q++) {
                double a = 0;
                for (int s = 0; s < k; s++)
                    for (int u = 0; u < k; u++) a += t->G[p][s] * g[s * k + u] * t->G[q][u];
                U[p * al + q] = rh(a);
            }
        for (int p = 0; p < al; p++)
            for (int q = 0; q < al; q++) {
                float a = 0;
                for (int s = 0; s < al; s++) a = rh(a + rh(t->BT[p][s] * dc[s * al + q]));
                T[p * al + q] = a;
            }
        for (int p = 0; p < al; p++)
            for (int q = 0; q < al; q++) {
                float a = 0;
                for (int s = 0; s < al; s++) a = rh(a + rh(T[p * al + s] * t->BT[q][s]));
                V[p * al + q] = a;
            }
        for (int e = 0; e < al * al; e++) M[e] = rh(M[e] + rh(U[e] * V[e]));
    }
    for (int i = 0; i < t->m; i++)
        for (int j = 0; j < t->m; j++) {
            float a = 0;
            for (int p = 0; p < al; p++) {
                float r = 0;
                for (int q = 0; q < al; q++) r = rh(r + rh(M[p * al + q] * t->A[q][j]));
                a = rh(a + rh(t->A[p][i] * r));
            }
            y[i * t->m + j] = a;
        }
}

static cd_bound_spec spec_of(int64_t K, int64_t wino_k, cd_arith ref, cd_arith b) {
    return (cd_bound_spec){.fam = CD_FAM_ACCUMULATE,
                           .K = K,
                           .wino_k = wino_k,
                           .ref = ref,
                           .b = b,
                           .safety = CD_BOUND_SAFETY,
                           .lipschitz = 1};
}

/* the magnitude the local check hands the bound of a Winograd conv (local_mag.c): the Winograd
 * magnitude, or B's direct kernel's in the same units where larger (and at least sum |w x|), plus
 * the reference's direct term in B's units */
static double wino_eff(const cd_bound_spec *s, double wm, double mag) {
    double gn = cd_gamma(s->wino_k, s->b.u), dir = fmax(1, cd_gamma(s->K + 2, s->b.u) / gn);
    return fmax(wm, dir * mag) + cd_gamma(s->K + 2, s->ref.u) / gn * mag;
}

Test(winograd, half_winograd_within_the_bound_on_its_magnitude) {
    enum { C = 16 };
    const cd_arith f32 = {.u = CD_U32}, f16 = {.u = CD_U16, .half_store = true};
    double worst = 0, worst_direct = 0, tighter = 0;
    for (int alpha = 4; alpha <= 6; alpha += 2) {
        cd_wino_mats t;
        cr_assert(cd_wino_mats_make(&t, alpha, 3, cd_wino_points_mnn));
        cd_bound_spec wino = spec_of(C * 9, cd_wino_roundings(C, alpha), f32, f16), dir = spec_of(C * 9, 0, f32, f16);
        for (int trial = 0; trial < 200; trial++) {
            double d[C * 64], y[64];
            float w[C * 9];
            for (int i = 0; i < C * alpha * alpha; i++) d[i] = rh(4 * urand() - 2);
            for (int i = 0; i < C * 9; i++) w[i] = rh(urand() - 0.5);
            wino_half(&t, C, d, w, y);
            for (int i = 0; i < t.m; i++)
                for (int j = 0; j < t.m; j++) {
                    double exact = 0, mag = 0;
                    for (int c = 0; c < C; c++)
                        for (int s = 0; s < 3; s++)
                            for (int u = 0; u < 3; u++) {
                                double p =
                                    (double)w[c * 9 + s * 3 + u] * d[c * alpha * alpha + (i + s) * alpha + j + u];
                                exact += p;
                                mag += fabs(p);
                            }
                    double wm = wino_mag(&t, C, d, w, i, j, CD_U16), err = fabs(y[i * t.m + j] - exact);
                    double wa = wino_mag_abs(&t, C, d, w, i, j);
                    cr_assert(wa >= mag * (1 - 1e-12), "the absolute-transform magnitude %g is at least sum|w x| %g",
                              wa, mag);
                    cr_assert(wm <= wa * (1 + 1e-12), "the stagewise magnitude %g is at most the absolute one %g", wm,
                              wa);
                    if (wa / wm > tighter) tighter = wa / wm;
                    double bw = cd_bound_elem(&wino, exact, wino_eff(&wino, wm, mag), NAN, 0);
                    /* never below the direct bound: the engine may have run its direct kernel */
                    cr_assert(bw >= cd_bound_elem(&dir, exact, mag, NAN, 0) * (1 - 1e-12));
                    double rb = err / bw;
                    double rd = err / cd_bound_elem(&dir, exact, mag, NAN, 0);
                    if (rb > worst) worst = rb;
                    if (rd > worst_direct) worst_direct = rd;
                    cr_assert(rb <= 1, "F(%d,3) fp16 (%d,%d): error %g over the Winograd bound (ratio %g)", t.m, i, j,
                              err, rb);
                }
        }
    }
    printf("winograd: fp16 F(2,3)/F(4,3), C=%d, 200 tiles each: worst error / Winograd bound %.3f, / direct bound "
           "%.3f; the stagewise magnitude up to %.1fx below the absolute-transform one\n",
           C, worst, worst_direct, tighter);
    /* the direct bound is the one the emulated kernel strains, not the Winograd one */
    cr_assert(worst_direct > 2 * worst, "direct ratio %g vs Winograd ratio %g", worst_direct, worst);
}

Test(winograd, an_output_off_by_a_relative_1e3_is_over_the_bound) {
    enum { C = 32 };
    const cd_arith f32 = {.u = CD_U32};
    const struct {
        int alpha;
        const double *pts;
        double off;
    } cases[] = {{4, cd_wino_points_mnn, 1e-3},
                 {6, cd_wino_points_mnn, 1e-3},
                 {8, cd_wino_points_mnn, 1e-3},
                 {8, cd_wino_points_pl8, 1e-3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        cd_wino_mats t;
        cr_assert(cd_wino_mats_make(&t, cases[c].alpha, 3, cases[c].pts));
        cd_bound_spec s = spec_of(C * 9, cd_wino_roundings(C, t.alpha), f32, f32);
        double d[C * 64];
        float w[C * 9];
        /* a typical layer after a relu: nonnegative inputs, weights of both signs mostly positive */
        for (int i = 0; i < C * t.alpha * t.alpha; i++) d[i] = urand();
        for (int i = 0; i < C * 9; i++) w[i] = (float)(urand() - 0.2);
        double best = 0;
        for (int i = 0; i < t.m; i++)
            for (int j = 0; j < t.m; j++) {
                double y = 0;
                for (int ch = 0; ch < C; ch++)
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 3; b++)
                            y += (double)w[ch * 9 + a * 3 + b] * d[ch * t.alpha * t.alpha + (i + a) * t.alpha + j + b];
                double mag = 0;
                for (int ch = 0; ch < C; ch++)
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 3; b++)
                            mag += fabs((double)w[ch * 9 + a * 3 + b] *
                                        d[ch * t.alpha * t.alpha + (i + a) * t.alpha + j + b]);
                double wm = wino_eff(&s, wino_mag(&t, C, d, w, i, j, CD_U32), mag);
                double r = fabs(y) * cases[c].off / cd_bound_elem(&s, y, wm, NAN, 0);
                if (r > best) best = r;
            }
        printf("winograd: fp32 F(%d,3)%s, C=%d: an output %g off, largest ratio to the bound %.2f\n", t.m,
               cases[c].pts == cd_wino_points_pl8 ? " (Paddle-Lite points)" : "", C, cases[c].off, best);
        cr_assert(best > 1, "F(%d,3): a relative %g error in every output must exceed the bound (ratio %g)", t.m,
                  cases[c].off, best);
    }
}

/* ---------------------------------------------------------------- which layers, which engines */

#include "engine/backend_def.h"
#include "engine/executor.h"
#include "verdict/verdict.h"

static cd_error gerr;

static void attr_ints(cd_graph *g, const char *name, const int64_t *v, int n) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = CD_ATTR_INTS;
    a.n = n;
    a.ints = malloc(sizeof(int64_t) * (size_t)n);
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)n);
    cr_assert_eq(cd_op_add_attr(g, &a, &gerr), CD_OK, "%s", gerr.msg);
}
static void attr_int(cd_graph *g, const char *name, int64_t v) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = CD_ATTR_INT;
    a.i = v;
    cr_assert_eq(cd_op_add_attr(g, &a, &gerr), CD_OK, "%s", gerr.msg);
}
static void op1(cd_graph *g, const char *type, const char *islot, const char *in, const char *oslot, const char *out) {
    cr_assert_not_null(cd_graph_add_op(g, type, &gerr), "%s", gerr.msg);
    cr_assert_eq(cd_op_add_input(g, islot, &in, 1, &gerr), CD_OK, "%s", gerr.msg);
    cr_assert_eq(cd_op_add_output(g, oslot, &out, 1, &gerr), CD_OK, "%s", gerr.msg);
}

/* feed -> conv2d (C -> O channels, k x k, stride, dilation, groups, HxW, padding 1) -> fetch; the
 * spec of the conv for checked side b */
static cd_bound_spec conv_spec(int64_t C, int64_t O, int64_t k, int64_t stride, int64_t dil, int64_t groups, int64_t H,
                               const char *type, cd_arith b, char *desc, size_t n) {
    cd_graph *g = cd_graph_new();
    int64_t none[1] = {0}, xd[4] = {1, C, H, H}, fd[4] = {O, C / groups, k, k}, yd[4] = {1, O, -1, -1};
    cd_graph_declare_var(g, "feed", CD_F32, none, 0, false, &gerr);
    cd_graph_declare_var(g, "fetch", CD_F32, none, 0, false, &gerr);
    cd_graph_declare_var(g, "x", CD_F32, xd, 4, false, &gerr);
    cd_graph_declare_var(g, "y", CD_F32, yd, 4, false, &gerr);
    cr_assert_eq(cd_graph_declare_var(g, "w", CD_F32, fd, 4, true, &gerr), CD_OK, "%s", gerr.msg);
    size_t nw = (size_t)(O * (C / groups) * k * k);
    float *w = calloc(nw, sizeof *w);
    for (size_t i = 0; i < nw; i++) w[i] = (float)(i % 7) - 3;
    cr_assert_eq(cd_graph_set_param(g, "w", CD_F32, fd, 4, w, nw * sizeof *w, &gerr), CD_OK, "%s", gerr.msg);
    free(w);
    op1(g, "feed", "X", "feed", "Out", "x");
    attr_int(g, "col", 0);
    cr_assert_not_null(cd_graph_add_op(g, type, &gerr));
    const char *in = "x", *f = "w", *out = "y";
    cd_op_add_input(g, "Input", &in, 1, &gerr);
    cd_op_add_input(g, "Filter", &f, 1, &gerr);
    cd_op_add_output(g, "Output", &out, 1, &gerr);
    int64_t s2[2] = {stride, stride}, d2[2] = {dil, dil}, p2[2] = {dil, dil};
    attr_ints(g, "strides", s2, 2);
    attr_ints(g, "dilations", d2, 2);
    attr_ints(g, "paddings", p2, 2);
    attr_int(g, "groups", groups);
    op1(g, "fetch", "X", "y", "Out", "fetch");
    attr_int(g, "col", 0);
    cr_assert_eq(cd_graph_finalize(g, &gerr), CD_OK, "%s", gerr.msg);
    cd_plan plan;
    cd_shape s = {4, {1, C, H, H}};
    cr_assert_eq(cd_plan_build(g, &s, CD_PREC_FP32, &plan, &gerr), CD_OK, "%s", gerr.msg);
    cd_bound_spec spec;
    cd_local_spec(g, &plan, 1, (cd_arith){.u = CD_U32}, b, &spec, desc, n);
    cd_plan_free(&plan);
    cd_graph_free(g);
    return spec;
}

Test(winograd, which_layers_of_which_engines) {
    char desc[160];
    const cd_arith f32 = {.u = CD_U32}, f16 = {.u = CD_U16, .half_store = true};
    cd_arith mnn32 = f32, mnn16 = f16, pla = f32, plo = f16;
    mnn32.wino = mnn16.wino = CD_WINO_MNN;
    mnn32.wino_alpha = 8;
    mnn16.wino_alpha = 6;
    pla.wino = CD_WINO_PADDLE_ARM;
    pla.wino_alpha = 8;
    plo.wino = CD_WINO_PADDLE_OPENCL;
    plo.wino_alpha = 4;
    /* a backend without Winograd: the direct bound, unchanged (K = 9 C) */
    cd_bound_spec s = conv_spec(16, 32, 3, 1, 1, 1, 16, "conv2d", f32, desc, sizeof desc);
    cr_assert(s.fam == CD_FAM_ACCUMULATE && s.wino_k == 0 && s.K == 144 && !strstr(desc, "winograd"), "%s", desc);
    cd_bound_spec plain = s;
    plain.b = mnn32;
    cr_assert_eq(cd_bound_elem(&s, 1.5, 3.0, NAN, 0), cd_bound_elem(&plain, 1.5, 3.0, NAN, 0));
    /* MNN: 16x16 outputs allow m up to 8: tiles 4, 6, 8 in fp32, 6 at most in fp16 */
    s = conv_spec(16, 32, 3, 1, 1, 1, 16, "conv2d", mnn32, desc, sizeof desc);
    cr_assert(s.wino_k == 16 + 4 * 8 + 12 && s.K == 144 && strstr(desc, "winograd tile 8"), "%s", desc);
    s = conv_spec(16, 32, 3, 1, 1, 1, 16, "conv2d", mnn16, desc, sizeof desc);
    cr_assert(s.wino_k == 16 + 4 * 6 + 12 && strstr(desc, "winograd tile 6"), "%s", desc);
    /* 3x3 outputs: m <= sqrt(9) = 3, so m = 2; 4x4: m <= 4, tile 6 */
    s = conv_spec(16, 32, 3, 1, 1, 1, 4, "conv2d", mnn32, desc, sizeof desc);
    cr_assert(strstr(desc, "winograd tile 6"), "%s", desc);
    s = conv_spec(16, 32, 3, 1, 1, 1, 3, "conv2d", mnn32, desc, sizeof desc);
    cr_assert(s.wino_k == 16 + 4 * 4 + 12 && strstr(desc, "winograd tile 4"), "%s", desc);
    /* below WINOGRAD_MEMORY_LEVEL 3: F(2, k) only */
    cd_arith lvl = mnn32;
    lvl.wino_max_m = 2;
    s = conv_spec(16, 32, 3, 1, 1, 1, 16, "conv2d", lvl, desc, sizeof desc);
    cr_assert(strstr(desc, "winograd tile 4 "), "%s", desc);
    /* a 5x5 kernel: tiles 6 and 8 (m 2, 4); groups: per group (C / G channels) */
    s = conv_spec(16, 32, 5, 1, 1, 1, 16, "conv2d", mnn32, desc, sizeof desc);
    cr_assert(strstr(desc, "winograd tile 8"), "%s", desc);
    s = conv_spec(16, 32, 3, 1, 1, 4, 16, "conv2d", mnn32, desc, sizeof desc);
    cr_assert(s.wino_k == 4 + 4 * 8 + 12, "%s", desc);
    /* not Winograd: strided, dilated, depthwise, 1x1 */
    cr_assert_eq(conv_spec(16, 32, 3, 2, 1, 1, 16, "conv2d", mnn32, desc, sizeof desc).wino_k, 0, "%s", desc);
    cr_assert_eq(conv_spec(16, 32, 3, 1, 2, 1, 16, "conv2d", mnn32, desc, sizeof desc).wino_k, 0, "%s", desc);
    cr_assert_eq(conv_spec(16, 16, 3, 1, 1, 16, 16, "depthwise_conv2d", mnn32, desc, sizeof desc).wino_k, 0, "%s",
                 desc);
    cr_assert_eq(conv_spec(16, 16, 3, 1, 1, 16, 16, "conv2d", mnn32, desc, sizeof desc).wino_k, 0, "%s", desc);
    cr_assert_eq(conv_spec(16, 32, 1, 1, 1, 1, 16, "conv2d", mnn32, desc, sizeof desc).wino_k, 0, "%s", desc);
    /* Paddle-Lite ARM: 3x3, one group; the tile by the outputs (16x16 / 8 = 32: tile 6) */
    s = conv_spec(16, 32, 3, 1, 1, 1, 16, "conv2d", pla, desc, sizeof desc);
    cr_assert(strstr(desc, "winograd tile 6"), "%s", desc);
    cr_assert_eq(conv_spec(16, 32, 3, 1, 1, 2, 16, "conv2d", pla, desc, sizeof desc).wino_k, 0, "%s", desc);
    cr_assert_eq(conv_spec(16, 32, 5, 1, 1, 1, 16, "conv2d", pla, desc, sizeof desc).wino_k, 0, "%s", desc);
    /* Paddle-Lite OpenCL: F(2,3) from 32 channels in and out */
    cr_assert_eq(conv_spec(16, 32, 3, 1, 1, 1, 16, "conv2d", plo, desc, sizeof desc).wino_k, 0, "%s", desc);
    s = conv_spec(32, 32, 3, 1, 1, 1, 16, "conv2d", plo, desc, sizeof desc);
    cr_assert(s.wino_k == 32 + 16 + 12 && strstr(desc, "winograd tile 4"), "%s", desc);
}
