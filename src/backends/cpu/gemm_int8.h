/* Exact int32 sums of int8 convolutions through the float32 GEMM (backends/cpu/gemm.h).
 *
 * int8 values are integers a float holds exactly; so is every product (|p| <= 127*127 = 16129)
 * and every partial sum of at most CD_INT8_FLOAT_EXACT_K products (16129 * 1040 < 2^24). A
 * float GEMM over such a reduction therefore returns the exact integer sum whatever its
 * summation order and whether it fuses multiply-adds; longer reductions are cut into pieces of
 * whole input channels and the pieces added in int32. The result is the same as a direct
 * integer loop, bit for bit; the speed is the float GEMM's. */
#ifndef CD_CPU_GEMM_INT8_H
#define CD_CPU_GEMM_INT8_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CD_INT8_FLOAT_EXACT_K 1040

typedef struct {
    const float *x; /* one group of one image: [Cin][H][W], int8 values held as floats */
    int Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pl, Ho, Wo;
} cd_conv8_geo;

/* True when the sums of g can run on floats (KH*KW <= CD_INT8_FLOAT_EXACT_K). */
bool cd_conv8_exact(const cd_conv8_geo *g);
/* The int8 weights W [Cout][Cin*KH*KW] of one group as the floats cd_conv8_sums reads: for each
 * exact piece of input channels (c0, cn), the block [Cout][cn*KH*KW] at offset Cout*c0*KH*KW
 * (Cout*Cin*KH*KW floats in all; k-major [cn][Cout] for a pointwise conv on a 1x1 map). Done once per op (the int8 kernel's prepared state). */
void cd_conv8_weights(const cd_conv8_geo *g, int Cout, const int8_t *W, float *wf);
/* Y[oc][oy*Wo + ox] = (float) of the exact sum over (ic, ky, kx) of W[oc][(ic*KH + ky)*KW + kx] *
 * x[ic][iy][ix] (0 outside the input), for Cout output channels; wf: the weights from
 * cd_conv8_weights. The float is the int32 sum rounded to float (exact below 2^24: always, for
 * one piece). Returns false (Y unspecified) when out of memory or when !cd_conv8_exact(g). */
bool cd_conv8_sums(const cd_conv8_geo *g, int Cout, const float *wf, float *Y, void *scratch, int threads);
/* Bytes of scratch cd_conv8_sums needs (0 for a single piece); scratch NULL: it allocates them. */
size_t cd_conv8_scratch(const cd_conv8_geo *g, int Cout);

/* Pointwise (1x1, stride 1, no padding) int8 conv sums in integer SIMD where the CPU has
 * AVX512-VNNI (vpdpbusd: 64 int8 products per instruction, 4x the multiply-adds of an fp32
 * FMA): the input is quantized (cd_q8_vec rule, x * inv) straight into packed unsigned bytes
 * q + 128, four input channels per 32-bit lane, and 128 * sum_k W[oc][k] is taken off again:
 * the exact int32 sum S, written as float(S) (scvtf's rounding). Y [Cout][P] from x [K][P].
 * cd_pw8_available: the CPU has it (else nothing here runs; the float path does). */
bool cd_pw8_available(void);
/* Scratch bytes cd_pw8_sums needs for K input channels and P pixels. */
size_t cd_pw8_pack_bytes(int K, int P);
/* W [Cout][K] int8 -> wp [Cout][(K + 3) / 4] (4 weights per int32, zero padded), corr [Cout]. */
void cd_pw8_weights(const int8_t *W, int Cout, int K, int32_t *wp, int32_t *corr);
void cd_pw8_sums(const float *x, float inv, int K, int P, const int32_t *wp, const int32_t *corr, int Cout, float *Y,
                 void *scratch, int threads);
#endif
