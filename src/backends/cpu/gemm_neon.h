/* The aarch64 fp32 micro-kernel of the blocked GEMM (gemm.c includes it once, before the float
 * instantiation, whose G_MICRO_ARCH names it; gemm_f16.c does not). Not a header of its own. */
#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define CD_GEMM_NEON 1

/* fp32 micro-kernel for aarch64: the MR x NR (8 x 16) tile as two 4 x 16 register tiles
 * (16 accumulators + 4 B vectors + 1 A vector of the 32 NEON registers; rows 4..7 are
 * skipped when the tile has mr <= 4). Per output element it does exactly what the x86
 * kernels compiled with FMA do: acc = fma(a[i][k], b[k][j], acc) for k in order from 0,
 * then alpha * acc, then + C (later K slices) or + beta * C as one fma (first slice), so
 * aarch64 and AVX2/AVX-512 give the same bits. The only fused operations are the vfmaq
 * ones written here: alpha * acc is kept a separate rounding by an empty asm (and, in GCC,
 * fp-contract is off for this function). */
#ifndef __clang__
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
static void micro_neon_f32(int kc, const float *restrict a, const float *restrict b, float *restrict c, int ldc, int mr,
                           int nr, float alpha, float beta, int first) {
    for (int r0 = 0; r0 < mr; r0 += 4) {
        float32x4_t c00 = vdupq_n_f32(0), c01 = c00, c02 = c00, c03 = c00;
        float32x4_t c10 = c00, c11 = c00, c12 = c00, c13 = c00;
        float32x4_t c20 = c00, c21 = c00, c22 = c00, c23 = c00;
        float32x4_t c30 = c00, c31 = c00, c32 = c00, c33 = c00;
        const float *ap = a + r0, *bp = b;
        for (int k = 0; k < kc; k++, ap += MR, bp += NR) {
            float32x4_t av = vld1q_f32(ap);
            float32x4_t b0 = vld1q_f32(bp), b1 = vld1q_f32(bp + 4);
            float32x4_t b2 = vld1q_f32(bp + 8), b3 = vld1q_f32(bp + 12);
            c00 = vfmaq_laneq_f32(c00, b0, av, 0);
            c01 = vfmaq_laneq_f32(c01, b1, av, 0);
            c02 = vfmaq_laneq_f32(c02, b2, av, 0);
            c03 = vfmaq_laneq_f32(c03, b3, av, 0);
            c10 = vfmaq_laneq_f32(c10, b0, av, 1);
            c11 = vfmaq_laneq_f32(c11, b1, av, 1);
            c12 = vfmaq_laneq_f32(c12, b2, av, 1);
            c13 = vfmaq_laneq_f32(c13, b3, av, 1);
            c20 = vfmaq_laneq_f32(c20, b0, av, 2);
            c21 = vfmaq_laneq_f32(c21, b1, av, 2);
            c22 = vfmaq_laneq_f32(c22, b2, av, 2);
            c23 = vfmaq_laneq_f32(c23, b3, av, 2);
            c30 = vfmaq_laneq_f32(c30, b0, av, 3);
            c31 = vfmaq_laneq_f32(c31, b1, av, 3);
            c32 = vfmaq_laneq_f32(c32, b2, av, 3);
            c33 = vfmaq_laneq_f32(c33, b3, av, 3);
        }
        float32x4_t acc[4][4] = {
            {c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}};
        float32x4_t va = vdupq_n_f32(alpha), vb = vdupq_n_f32(beta);
        int rows = imin(4, mr - r0);
        for (int i = 0; i < rows; i++) {
            float *cr = c + (size_t)(r0 + i) * ldc;
            float32x4_t r[4];
            for (int q = 0; q < 4; q++) {
                r[q] = acc[i][q];
                if (alpha != 1.0f) {
                    r[q] = vmulq_f32(r[q], va);
                    __asm__("" : "+w"(r[q])); /* rounded on its own, as in the generic kernel */
                }
            }
            /* a partial tile (nr < NR) goes through a zero-padded copy of its C row */
            float t[NR] = {0};
            float *cp = nr == NR ? cr : t;
            if (nr < NR && (!first || beta != 0.0f)) memcpy(t, cr, (size_t)nr * sizeof(float));
            for (int q = 0; q < 4; q++) {
                float32x4_t v = r[q];
                if (!first)
                    v = vaddq_f32(vld1q_f32(cp + 4 * q), v);
                else if (beta != 0.0f)
                    v = vfmaq_f32(v, vb, vld1q_f32(cp + 4 * q));
                vst1q_f32(cp + 4 * q, v);
            }
            if (nr < NR) memcpy(cr, t, (size_t)nr * sizeof(float));
        }
    }
}
#ifndef __clang__
#pragma GCC pop_options
#endif
#endif
