/* Depthwise conv (backends/cpu/ops_nn_conv.c, conv_ocv.c) through the depthwise_conv2d op, fp32,
 * against the arithmetic every depthwise path promises (docs/cpu-backend.md "Kernels and the
 * bits they promise"): per output acc = fmaf(w, x, acc) from +0 over the taps, ky outer, kx
 * inner, tap rows wholly in the top or bottom padding skipped, left/right padding taps added
 * as w * 0; then y + bias and relu6 as the epilogue computes them. Bit for bit.
 *
 * The geometries are the ones the kernels pick by: maps up to 24 wide (the channel-vector
 * kernel on AVX-512, whole rows of the flattened plane per transpose, 16-pixel pieces of wider
 * rows, an input wider than the taps read), and the plane kernel's runs of interior rows
 * (8 x 1, 4 x 2, 3 x 3, 2 x 4 vectors, their remainders down to single rows, strides 1 and 2,
 * dilation 2), one and two threads (above the one-thread threshold too). And conv2d_transpose
 * whose (oc, ky, kx) rows outnumber the input pixels (keypoint's 4x4 stride-2 upsampling): the
 * product X^T x W by cd_gemm_f32 as the op calls it, then each output the sum from +0 of its
 * taps, ky outer, kx inner; the AVX-512 pass (cd_convt_gather_f32, 16 channels per vector) and
 * the scalar one must both give these bits. ctest runs it again with
 * CLDIFF_GEMM_F32_KERNEL=avx2-fma (tests/dw.cmake): the AVX2 + FMA kernels' bits. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include "backends/cpu/gemm.h"
#include "engine/ops.h"

#include "conv_fixture.h"

static T *t_new(int threads) { return t_new_op("depthwise_conv2d", "depthwise_conv2d_0", 3, false, threads); }

static unsigned seed = 7;
static float frand(void) { /* (-1, 1), 23-bit mantissas: no two sums alike by luck */
    seed = seed * 1103515245u + 12345u;
    return (float)((int)(seed >> 8) - (1 << 23)) / (float)(1 << 23);
}

typedef struct {
    int C, H, W, K, s, d, pt, pb, pl, pr;
} geo;

static int out_h(const geo *g) { return (g->H + g->pt + g->pb - (g->d * (g->K - 1) + 1)) / g->s + 1; }
static int out_w(const geo *g) { return (g->W + g->pl + g->pr - (g->d * (g->K - 1) + 1)) / g->s + 1; }

static void dw_case(const geo *g, int threads, bool relu6) {
    const int C = g->C, H = g->H, W = g->W, K = g->K, Ho = out_h(g), Wo = out_w(g);
    const size_t nin = (size_t)C * H * W, nout = (size_t)C * Ho * Wo;
    float *x = malloc(nin * 4), *w = malloc((size_t)C * K * K * 4), *b = malloc((size_t)C * 4), *ref = malloc(nout * 4);
    for (size_t i = 0; i < nin; i++) x[i] = frand() * 4.0f;
    for (int i = 0; i < C * K * K; i++) w[i] = frand();
    for (int i = 0; i < C; i++) b[i] = frand();
    for (int ch = 0; ch < C; ch++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                float acc = 0.0f;
                for (int ky = 0; ky < K; ky++) {
                    const int iy = oy * g->s - g->pt + ky * g->d;
                    if (iy < 0 || iy >= H) continue; /* a tap row wholly in the padding: skipped */
                    for (int kx = 0; kx < K; kx++) {
                        const int ix = ox * g->s - g->pl + kx * g->d;
                        const float xv = ix >= 0 && ix < W ? x[((size_t)ch * H + iy) * W + ix] : 0.0f;
                        acc = fmaf(w[(size_t)ch * K * K + ky * K + kx], xv, acc);
                    }
                }
                if (relu6) {
                    volatile float v = acc + b[ch];
                    acc = v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
                }
                ref[((size_t)ch * Ho + oy) * Wo + ox] = acc;
            }

    T *t = t_new(threads);
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, C, H, W}, x);
    t_val(t, 1, CD_F32, 4, (int64_t[]){C, 1, K, K}, w);
    t_in(t, "Input", 0);
    t_in(t, "Filter", 1);
    if (relu6) t_bias_relu6(t, 2, CD_F32, C, b);
    t_out(t, "Output", 3);
    t_attr(t, "groups", CD_ATTR_INT)->i = C;
    a_ints(t, "strides", 2, (int64_t[]){g->s, g->s});
    a_ints(t, "paddings", 4, (int64_t[]){g->pt, g->pb, g->pl, g->pr});
    a_ints(t, "dilations", 2, (int64_t[]){g->d, g->d});
    const cd_op_def *def = cd_op_find("depthwise_conv2d");
    cr_assert(def);
    cr_assert_eq(def->infer(&t->c), CD_OK, "%s", t->err.msg);
    cd_value *o = &t->vals[3];
    cr_assert(o->shape.rank == 4 && o->shape.d[1] == C && o->shape.d[2] == Ho && o->shape.d[3] == Wo);
    cr_assert_eq(cd_value_alloc(o, NULL), CD_OK);
    memset(o->data, 0xff, nout * 4); /* NaN: every output must be written */
    cr_assert_eq(def->run(&t->c), CD_OK, "%s", t->err.msg);
    const float *y = o->data;
    for (size_t i = 0; i < nout; i++)
        cr_assert(memcmp(&y[i], &ref[i], 4) == 0,
                  "dw C%d %dx%d k%d s%d d%d p%d,%d,%d,%d threads=%d relu6=%d (%s): y[%zu] (ch %zu, row %zu, col %zu) "
                  "= %.9g, fmaf chain %.9g",
                  C, H, W, K, g->s, g->d, g->pt, g->pb, g->pl, g->pr, threads, relu6, cd_gemm_kernel_name_f32(), i,
                  i / ((size_t)Ho * Wo), i / (size_t)Wo % (size_t)Ho, i % (size_t)Wo, (double)y[i], (double)ref[i]);
    t_free(t);
    free(x);
    free(w);
    free(b);
    free(ref);
}

static void dw_both(geo g) {
    dw_case(&g, 1, false);
    dw_case(&g, 2, true);
}

/* maps up to 24 wide: the channel-vector kernel (AVX-512 or AVX2 + FMA) */
Test(dw, narrow_maps_match_fmaf_chain_bits) {
    dw_both((geo){48, 16, 12, 3, 1, 1, 1, 1, 1, 1});            /* keypoint: 16 x 12, one row per store */
    dw_both((geo){72, 32, 24, 3, 2, 1, 1, 1, 1, 1});            /* stride 2 to 16 x 12 */
    dw_both((geo){120, 3, 12, 5, 1, 1, 2, 2, 2, 2});            /* ocr_cls: 3 x 12, 5 x 5: 1-2 tap rows skipped */
    dw_both((geo){72, 6, 24, 5, 2, 1, 2, 2, 2, 2});             /* to 3 x 12 */
    dw_both((geo){48, 12, 48, 3, 2, 1, 1, 1, 1, 1});            /* to 6 x 24: 16 + 8 pixels of a row */
    dw_both((geo){20, 7, 20, 3, 1, 1, 1, 1, 1, 1});             /* 20 wide, one partial block */
    dw_both((geo){33, 8, 18, 3, 2, 1, 0, 0, 0, 0});             /* the taps read 17 of 18 columns and 7 of 8 rows */
    dw_both((geo){17, 9, 4, 3, 1, 1, 1, 1, 1, 1});              /* 4 wide: four rows per store, 9 rows */
    dw_both((geo){40, 10, 3, 3, 1, 1, 1, 1, 1, 1});             /* 3 wide: five rows per store */
    dw_both((geo){24, 13, 13, 3, 1, 2, 2, 2, 2, 2});            /* dilation 2 */
    dw_both((geo){16, 15, 14, 5, 2, 1, 2, 1, 2, 1});            /* asymmetric padding */
    dw_case(&(geo){256, 24, 24, 3, 1, 1, 1, 1, 1, 1}, 2, true); /* above the one-thread threshold */
}

/* wider maps: the plane kernel, runs of interior rows */
Test(dw, plane_row_runs_match_fmaf_chain_bits) {
    dw_both((geo){24, 24, 96, 3, 2, 1, 1, 1, 1, 1});           /* ocr_cls: to 12 x 48, 3 x 3 vectors */
    dw_both((geo){16, 32, 32, 3, 1, 1, 1, 1, 1, 1});           /* 4 x 2, 2 x 2, single rows */
    dw_both((geo){8, 19, 40, 3, 1, 1, 1, 1, 1, 1});            /* 40 wide: 3 vectors, 3 and 2 rows */
    dw_both((geo){4, 20, 64, 3, 1, 1, 1, 1, 1, 1});            /* 2 x 4 */
    dw_both((geo){6, 40, 33, 5, 1, 1, 2, 2, 2, 2});            /* 33 wide, 5 x 5 */
    dw_both((geo){5, 22, 60, 3, 2, 1, 1, 1, 1, 1});            /* stride 2 to 11 x 30 */
    dw_both((geo){3, 30, 50, 3, 1, 2, 2, 2, 2, 2});            /* dilation 2 */
    dw_both((geo){7, 12, 130, 3, 1, 1, 1, 1, 1, 1});           /* 130 wide: rows of single runs */
    dw_case(&(geo){64, 64, 64, 3, 1, 1, 1, 1, 1, 1}, 2, true); /* above the one-thread threshold */
}

/* ---- conv2d_transpose (groups 1), Filter [Cin][Cout][K][K] ---- */
static void convt_case(int Cin, int Cout, int H, int W, int K, int s, int p, int threads) {
    const int Ho = (H - 1) * s - 2 * p + K, Wo = (W - 1) * s - 2 * p + K, HW = H * W, tap = K * K, Mrows = Cout * tap;
    float *x = malloc(sizeof(float) * (size_t)Cin * HW), *w = malloc(sizeof(float) * (size_t)Cin * Mrows);
    float *col = malloc(sizeof(float) * (size_t)HW * Mrows), *ref = malloc(sizeof(float) * (size_t)Cout * Ho * Wo);
    for (int i = 0; i < Cin * HW; i++) x[i] = frand() * 3.0f;
    for (int i = 0; i < Cin * Mrows; i++) w[i] = frand();
    /* col = X^T x W ([pixel][(oc, ky, kx)]), as the op computes it */
    cd_gemm_f32(HW, Mrows, Cin, 1.0f, x, HW, true, w, Mrows, false, 0.0f, col, Mrows, threads);
    for (int oc = 0; oc < Cout; oc++)
        for (int oy = 0; oy < Ho; oy++)
            for (int ox = 0; ox < Wo; ox++) {
                float acc = 0.0f;
                for (int ky = 0; ky < K; ky++) {
                    const int ty = oy + p - ky;
                    if (ty < 0 || ty % s || ty / s >= H) continue;
                    for (int kx = 0; kx < K; kx++) {
                        const int tx = ox + p - kx;
                        if (tx < 0 || tx % s || tx / s >= W) continue;
                        acc += col[(size_t)(ty / s * W + tx / s) * Mrows + oc * tap + ky * K + kx];
                    }
                }
                ref[((size_t)oc * Ho + oy) * Wo + ox] = acc;
            }
    T *t = t_new(threads);
    t->op.type = (char *)"conv2d_transpose";
    t->op.name = (char *)"conv2d_transpose_0";
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, Cin, H, W}, x);
    t_val(t, 1, CD_F32, 4, (int64_t[]){Cin, Cout, K, K}, w);
    t_in(t, "Input", 0);
    t_in(t, "Filter", 1);
    t_out(t, "Output", 3);
    a_ints(t, "strides", 2, (int64_t[]){s, s});
    a_ints(t, "paddings", 2, (int64_t[]){p, p});
    a_ints(t, "dilations", 2, (int64_t[]){1, 1});
    const cd_op_def *def = cd_op_find("conv2d_transpose");
    cr_assert(def);
    cr_assert_eq(def->infer(&t->c), CD_OK, "%s", t->err.msg);
    cd_value *o = &t->vals[3];
    cr_assert(o->shape.rank == 4 && o->shape.d[1] == Cout && o->shape.d[2] == Ho && o->shape.d[3] == Wo);
    cr_assert_eq(cd_value_alloc(o, NULL), CD_OK);
    memset(o->data, 0xff, (size_t)Cout * Ho * Wo * 4);
    cr_assert_eq(def->run(&t->c), CD_OK, "%s", t->err.msg);
    const float *y = o->data;
    for (size_t i = 0; i < (size_t)Cout * Ho * Wo; i++)
        cr_assert(memcmp(&y[i], &ref[i], 4) == 0,
                  "conv2d_transpose Cin%d Cout%d %dx%d k%d s%d p%d threads=%d (%s): y[%zu] = %.9g, the sums %.9g", Cin,
                  Cout, H, W, K, s, p, threads, cd_gemm_kernel_name_f32(), i, (double)y[i], (double)ref[i]);
    t_free(t);
    free(x);
    free(w);
    free(col);
    free(ref);
}

Test(dw, conv_transpose_gather_matches_sums_bits) {
    for (int th = 1; th <= 2; th++) {
        convt_case(64, 32, 4, 3, 4, 2, 1, th);  /* keypoint: 4 x 3 -> 8 x 6 */
        convt_case(32, 32, 8, 6, 4, 2, 1, th);  /* 8 x 6 -> 16 x 12 */
        convt_case(24, 20, 5, 12, 3, 2, 1, th); /* 20 channels (16 + 4), rows of 23: 16 + 7 */
        convt_case(8, 40, 3, 3, 4, 2, 0, th);   /* no padding, three blocks */
        convt_case(16, 17, 6, 6, 3, 1, 1, th);  /* stride 1 */
    }
}
