/* Regression tests of the CPU conv2d im2col + GEMM path (backends/cpu/ops_nn_conv.c),
 * through cd_op_find with a hand-built op, against an explicit im2col matrix multiplied by
 * cd_gemm (the same arithmetic, so the same bits) and a naive double-precision loop.
 *
 * The bug these pin: in F(im2col_seg), a stride-1 row segment whose first tap lies more
 * than one column past the input's right edge (right padding >= 2: a 5x5 filter with
 * padding 2, 7x7 with 3, a dilated 3x3 with 2) got a negative end of its valid range
 * (jhi = W - ixs < 0); the zero fill `for (j = jhi; j < len; j++) d[j] = 0` then wrote
 * before the segment, clearing lane 15 (or 14..15) of the previous tap's row in the packed
 * B panel: a valid input tap of another pixel was replaced by 0. In picodet's conv2d_70
 * (Cout 1, Cin 96, 13x13, 5x5, padding 2) the panel of pixels 64..79 starts on the last
 * column of a row, and pixel 79 lost its 478 kx = 3 taps (all but those whose kx = 4 tap
 * opens a K slice): 0.3820389 instead of 0.3891017. When that tap opened a K slice in a
 * chunk's first panel, the write landed before the thread's panel buffer. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/gemm.h"
#include "engine/ops.h"
#include "util/fp16.h"

/* ---- a tiny hand-made conv2d op: tests/unit/conv_fixture.h ---- */
#include "conv_fixture.h"

static T *t_new(bool half, int threads) { return t_new_op("conv2d", "conv2d_70", 179, half, threads); }

static unsigned seed = 1;
static float frand(void) { /* [-1, 1) in steps of 2^-10: exact in half */
    seed = seed * 1103515245u + 12345u;
    return (float)((int)((seed >> 12) & 2047) - 1024) / 1024.0f;
}

typedef struct {
    int Cout, Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pb, pl, pr;
} geo;

static int out_h(const geo *g) { return (g->H + g->pt + g->pb - (g->dh * (g->KH - 1) + 1)) / g->sh + 1; }
static int out_w(const geo *g) { return (g->W + g->pl + g->pr - (g->dw * (g->KW - 1) + 1)) / g->sw + 1; }

/* The conv2d op on x / w (fp32, or rounded to half when `half`), optional bias + relu6;
 * returns the output as floats (malloc'd, Cout * Ho * Wo). */
static float *run_conv(const geo *g, const float *x, const float *w, const float *bias, bool half, int threads) {
    const cd_dtype dt = half ? CD_F16 : CD_F32;
    T *t = t_new(half, threads);
    t_val(t, 0, dt, 4, (int64_t[]){1, g->Cin, g->H, g->W}, x);
    t_val(t, 1, dt, 4, (int64_t[]){g->Cout, g->Cin, g->KH, g->KW}, w);
    t_in(t, "Input", 0);
    t_in(t, "Filter", 1);
    if (bias) t_bias_relu6(t, 2, dt, g->Cout, bias);
    t_out(t, "Output", 3);
    a_ints(t, "strides", 2, (int64_t[]){g->sh, g->sw});
    a_ints(t, "paddings", 4, (int64_t[]){g->pt, g->pb, g->pl, g->pr});
    a_ints(t, "dilations", 2, (int64_t[]){g->dh, g->dw});
    const cd_op_def *d = cd_op_find("conv2d");
    cr_assert(d);
    cr_assert_eq(d->infer(&t->c), CD_OK, "%s", t->err.msg);
    cd_value *o = &t->vals[3];
    cr_assert_eq(o->shape.rank, 4);
    cr_assert(o->shape.d[1] == g->Cout && o->shape.d[2] == out_h(g) && o->shape.d[3] == out_w(g));
    cr_assert_eq(cd_value_alloc(o, NULL), CD_OK);
    cr_assert_eq(d->run(&t->c), CD_OK, "%s", t->err.msg);
    const int64_t n = cd_value_numel(o);
    float *y = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) y[i] = (float)cd_value_get(o, i);
    t_free(t);
    return y;
}

/* im2col: col[k][p] = x tap k = (ic, ky, kx) of output pixel p, 0 in padding */
static float tap(const geo *g, const float *x, int k, int p) {
    const int Wo = out_w(g), KHW = g->KH * g->KW;
    const int ic = k / KHW, ky = k % KHW / g->KW, kx = k % g->KW, oy = p / Wo, ox = p % Wo;
    const int iy = oy * g->sh - g->pt + ky * g->dh, ix = ox * g->sw - g->pl + kx * g->dw;
    return iy >= 0 && iy < g->H && ix >= 0 && ix < g->W ? x[((size_t)ic * g->H + iy) * g->W + ix] : 0.0f;
}

static void conv_case(const char *what, const geo *g, bool half, int threads) {
    const int Ho = out_h(g), Wo = out_w(g), N = Ho * Wo, K = g->Cin * g->KH * g->KW, M = g->Cout;
    float *x = malloc(sizeof(float) * (size_t)g->Cin * g->H * g->W), *w = malloc(sizeof(float) * (size_t)M * K);
    for (int i = 0; i < g->Cin * g->H * g->W; i++) x[i] = frand();
    for (int i = 0; i < M * K; i++) w[i] = frand() * 0.125f;
    float *y = run_conv(g, x, w, NULL, half, threads);

    /* same arithmetic on an explicit im2col matrix: the same bits */
    float *col = malloc(sizeof(float) * (size_t)K * N), *ref = malloc(sizeof(float) * (size_t)M * N);
    for (int k = 0; k < K; k++)
        for (int p = 0; p < N; p++) col[(size_t)k * N + p] = tap(g, x, k, p);
    if (!half) {
        cd_gemm_f32(M, N, K, 1.0f, w, K, false, col, N, false, 0.0f, ref, N, threads);
    } else {
        _Float16 *wh = malloc(2 * (size_t)M * K), *ch = malloc(2 * (size_t)K * N), *rh = malloc(2 * (size_t)M * N);
        for (size_t i = 0; i < (size_t)M * K; i++) wh[i] = (_Float16)w[i];
        for (size_t i = 0; i < (size_t)K * N; i++) ch[i] = (_Float16)col[i];
        cd_gemm_f16(M, N, K, (_Float16)1, wh, K, false, ch, N, false, (_Float16)0, rh, N, threads);
        for (size_t i = 0; i < (size_t)M * N; i++) ref[i] = (float)rh[i];
        free(wh);
        free(ch);
        free(rh);
    }
    for (int i = 0; i < M * N; i++)
        cr_assert(memcmp(&y[i], &ref[i], 4) == 0,
                  "%s %s threads=%d: y[%d] (oc %d, row %d, col %d) = %.9g, im2col + cd_gemm gives %.9g", what,
                  half ? "fp16" : "fp32", threads, i, i / N, i % N / Wo, i % Wo, (double)y[i], (double)ref[i]);

    /* and a naive double loop (fp32 only: half rounding is far above a dropped tap) */
    for (int oc = 0; !half && oc < M; oc++)
        for (int p = 0; p < N; p++) {
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) {
                const double v = (double)w[(size_t)oc * K + k] * tap(g, x, k, p);
                s += v;
                sa += fabs(v);
            }
            const float got = y[(size_t)oc * N + p];
            cr_assert(fabs(got - s) <= 1e-5 * sa + 1e-7,
                      "%s threads=%d: y[%d][row %d, col %d] = %.9g, double loop %.9g", what, threads, oc, p / Wo,
                      p % Wo, (double)got, s);
        }
    free(x);
    free(w);
    free(y);
    free(col);
    free(ref);
}

/* picodet conv2d_70: [1,96,13,13] * [1,96,5,5], padding 2, stride 1, bias + relu6. */
Test(conv_regress, picodet_conv2d_70_5x5_pad2_bias_relu6) {
    const geo g = {1, 96, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
    const int K = 96 * 25, N = 169;
    seed = 70;
    float *x = malloc(sizeof(float) * 96 * N), *w = malloc(sizeof(float) * K), bias = 0.26975495f;
    for (int i = 0; i < 96 * N; i++) x[i] = frand();
    for (int i = 0; i < K; i++) w[i] = frand() * 0.015625f; /* outputs mostly inside (0, 6) */
    for (int threads = 1; threads <= 2; threads++) {
        float *y = run_conv(&g, x, w, &bias, false, threads);
        int inside = 0;
        for (int p = 0; p < N; p++) {
            double s = 0, sa = 0;
            for (int k = 0; k < K; k++) {
                const double v = (double)w[k] * tap(&g, x, k, p);
                s += v;
                sa += fabs(v);
            }
            s += bias;
            const double want = s < 0 ? 0 : s > 6 ? 6 : s;
            inside += s > 0 && s < 6;
            cr_assert(fabs(y[p] - want) <= 1e-5 * sa + 1e-7,
                      "threads=%d: element %d (row %d, col %d) = %.9g, double loop gives %.9g", threads, p, p / 13,
                      p % 13, (double)y[p], want);
        }
        cr_assert(inside > N / 2, "only %d of %d outputs inside relu6's (0, 6)", inside, N);
        free(y);
    }
    free(x);
    free(w);
}

/* Geometries where a stride-1 row segment starts past the right edge by 2 or more taps,
 * around them, and others that never could (stride 2, padding 1), each checked for the
 * same bits as im2col + cd_gemm and against the double loop. */
Test(conv_regress, im2col_right_padding_geometries) {
    const struct {
        const char *what;
        geo g;
    } cs[] = {
        {"picodet 5x5 p2, Cout 1 (M = 1)", {1, 96, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"5x5 p2, Cout 3 < MR", {3, 96, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"5x5 p2, Cout 8 = MR", {8, 96, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"5x5 p2, Cout 11, K 1000 (not a multiple of KC)", {11, 40, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"5x5 p2, wide rows (N 330)", {4, 12, 10, 33, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"5x5 p2, short rows (Wo 7 < NR)", {2, 12, 11, 7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"7x7 p3 (two lanes past the edge)", {5, 7, 20, 21, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3}},
        {"3x3 dilation 2 p2", {4, 30, 12, 19, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}},
        {"1x5 asymmetric padding r2", {3, 60, 7, 15, 1, 5, 1, 1, 1, 1, 0, 0, 0, 2}},
        {"3x3 stride 2 p2", {6, 30, 14, 14, 3, 3, 2, 2, 1, 1, 2, 2, 2, 2}},
        {"3x3 p1 (never past the edge)", {9, 40, 13, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int threads = 1; threads <= 2; threads++) {
            seed = 100 + (unsigned)i;
            conv_case(cs[i].what, &cs[i].g, false, threads);
        }
}

/* Several column chunks (NCHUNK 256) on two threads: panels at pixels 80 and 512 start on
 * the last column of a 27-wide row; 512 is also a chunk start, and the slice at k0 = 1024
 * opens with a kx = 4 tap, so there the stray write fell just before the thread's panel
 * buffer. */
Test(conv_regress, im2col_chunk_start_at_row_end_two_threads) {
    const geo g = {8, 48, 27, 27, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
    seed = 27;
    conv_case("5x5 p2 27x27, K 1200", &g, false, 2);
    seed = 27;
    conv_case("5x5 p2 27x27, K 1200", &g, false, 1);
}

/* The half path keeps im2col for every reduction length (no direct conv), so short K hits
 * it too. */
Test(conv_regress, im2col_right_padding_fp16) {
    const struct {
        const char *what;
        geo g;
    } cs[] = {
        {"picodet 5x5 p2", {1, 96, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"5x5 p2, K 75", {3, 3, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2}},
        {"7x7 p3", {5, 7, 20, 21, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3}},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        for (int threads = 1; threads <= 2; threads++) {
            seed = 200 + (unsigned)i;
            conv_case(cs[i].what, &cs[i].g, true, threads);
        }
}
