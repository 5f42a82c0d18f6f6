/* The Winograd bound (docs/verdicts.md "Winograd convolutions", compare/bounds.h cd_wino_*):
 * the transforms built from the engines' interpolation points compute the correlation exactly;
 * the stagewise magnitude is at most the one through the absolute transforms, which is at least
 * sum |w x|;
 * an emulated half-precision Winograd convolution (every operation rounded to half, MNN's ARMv8.2
 * path) stays within the bound on the Winograd magnitude, where it may exceed the direct
 * kernel's; and a conv whose output is off by a relative 1e-3 in every element is still over the
 * bound in float32 for MNN's F(2,3), F(4,3), F(6,3) and Paddle-Lite's F(6,3). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "compare/bounds.h"
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
