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
#include <stdint.h>

#define CD_INT8_FLOAT_EXACT_K 1040

typedef struct {
    const float *x;   /* one group of one image: [Cin][H][W], int8 values held as floats */
    int Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pl, Ho, Wo;
} cd_conv8_geo;

/* Y[oc][oy*Wo + ox] = (float) of the exact sum over (ic, ky, kx) of W[oc][(ic*KH + ky)*KW + kx] *
 * x[ic][iy][ix] (0 outside the input), for Cout output channels; W is [Cout][Cin*KH*KW] int8. The
 * float is the int32 sum rounded to float (exact below 2^24: always, for one piece). Returns false
 * (Y unspecified) when out of memory or when KH*KW alone exceeds CD_INT8_FLOAT_EXACT_K. */
bool cd_conv8_sums(const cd_conv8_geo *g, int Cout, const int8_t *W, float *Y, int threads);
#endif
