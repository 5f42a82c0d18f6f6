/* fp32 convolution with the vector over output channels ("ocv"): the filter packed once (at
 * prepare) into blocks of 16 output channels, [block][k][16], and every input value broadcast
 * from a zero-padded copy of the input, so no im2col panels are built whatever the stride and
 * map size. Per output element the arithmetic is the im2col + GEMM one: k = (ic, ky, kx) in
 * order, acc = fma(w, x, acc) from 0 within each KC (256) slice of K, the first slice's sum
 * stored and each later one added to it, padding taps included as w * 0 (cd_conv_direct_f32
 * and the packed GEMM give the same bits). Bias and a simple activation (none, relu, relu6,
 * leaky_relu) are applied in the store, exactly as the conv epilogue writes them (y + b, then
 * the activation), so the epilogue pass is skipped. x86-64 AVX-512 and AVX2 + FMA only
 * (CLDIFF_GEMM_F32_KERNEL caps the level as for the GEMM); elsewhere cd_conv_ocv_level() is 0
 * and conv2d keeps im2col + GEMM. docs/cpu-backend.md "ISA levels". */
#ifndef CD_CPU_CONV_OCV_H
#define CD_CPU_CONV_OCV_H
#include "backends/cpu/gemm.h"
#include "engine/ops.h"
#include <stddef.h>

/* Output channels per packed filter block. */
#define CD_OCV_BLOCK 16

/* The level this machine runs: 2 AVX-512, 1 AVX2 + FMA, 0 none (keep im2col + GEMM). */
int cd_conv_ocv_level(void);
/* Floats of the packed filter of one group: ceil(Cout / 16) * 16 * K. */
size_t cd_conv_ocv_packed_floats(int Cout, int K);
/* W [Cout][K] row-major -> dst [ceil(Cout/16)][K][16], zeros past Cout. */
void cd_conv_ocv_pack(const float *W, int Cout, int K, float *dst);

/* What the store applies after the sum: y = act(y + bias[oc]) (bias may be NULL). act kinds:
 * CD_ACT_NONE, CD_ACT_RELU, CD_ACT_RELU6 (a = threshold), CD_ACT_LEAKY_RELU (a = alpha),
 * CD_ACT_HARD_SWISH (a threshold, b scale, c offset), each as the conv epilogue computes it. */
typedef struct {
    const float *bias;
    cd_act act;
} cd_conv_ocv_epi;
/* Whether the store can apply this activation (the kinds above). */
bool cd_conv_ocv_epi_ok(const cd_act *act);

/* One group: Y [Cout][Ho][Wo] from g->x [Cin][H][W] and the packed filter; epi NULL: the plain
 * sums (the caller's epilogue follows). Returns false (nothing written) when out of memory for
 * the padded input copy or when cd_conv_ocv_level() is 0. */
bool cd_conv_ocv_f32(const cd_conv_direct_geo *g, int Cout, const float *wpack, float *Y, const cd_conv_ocv_epi *epi,
                     int threads);

/* Depthwise conv (one input and one output channel per group: C = g->Cin groups, channel
 * multiplier 1) of N images, g->x [N][C][H][W], W [C][KH*KW], Y [N][C][Ho][Wo]: the vector over
 * 16 channels, for small maps where a plane's row is shorter than a vector. The bits of the
 * plane kernel of ops_nn_conv_tmpl.h (acc = fma(w, x, acc) from +0, ky outer, kx inner, tap rows
 * wholly in the top/bottom padding skipped, left/right padding taps as w * 0). epi as above.
 * Returns false (nothing written) when out of memory or cd_conv_ocv_level() is 0. */
bool cd_conv_ocv_dw_f32(const cd_conv_direct_geo *g, int N, const float *W, float *Y, const cd_conv_ocv_epi *epi,
                        int threads);
/* The transposed conv's gather pass (ops_nn_conv_tmpl.h F(conv_transpose_fwd)) on AVX-512
 * (16 channels per vector) or AVX2 (8) for output channels [oc0, oc0 + 16) (fewer at the end):
 * col = [HW pixels][cog x tap] (the product's (oc, ky, kx) rows on the second axis), y =
 * [cog][Ho][Wo] of this group; each output is the sum from +0 of its taps, ky outer, kx inner
 * (ascending), as the scalar pass adds them. Returns false (nothing written) where it does not
 * run: neither level (or CLDIFF_GEMM_F32_KERNEL=generic), more than 16 taps, or no memory. */
bool cd_convt_gather_f32(const float *col, float *y, int oc0, int cog, int H, int W, int Ho, int Wo, int KH, int KW,
                         int sh, int sw, int dh, int dw, int pt, int pl);
#endif
