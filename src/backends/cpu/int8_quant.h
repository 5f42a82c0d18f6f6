/* Paddle-Lite's ARM float -> int8 conversion, shared by calib and the int8 kernels
 * (docs/int8.md has the sources). On aarch64 lite/backends/arm/math/type_trans.cc
 * (fp32_to_int8) and the int8 GEMM/depthwise write-back (gemm_prepacked_int8.cc,
 * conv3x3s1_depthwise_int8.cc) all do, per element:
 *     v = value (already multiplied by the scale's inverse / folded multiplier)
 *     if !(v >= -127) v = -127          fcmge + bif: a NaN also becomes -127
 *     q = fcvtas(v)                     round to nearest, ties away from zero
 *     q = sqxtn(sqxtn(q))               saturate to int16, then to int8 (upper end 127)
 * so the range is [-127, 127] and NaN maps to -127. */
#ifndef CD_INT8_QUANT_H
#define CD_INT8_QUANT_H
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Written without branches or libm so that loops over it vectorize: after the clamp (which
 * also turns NaN into -127) v - trunc(v) is exact, and a fraction of at least one half moves
 * the truncated value one step away from zero. */
static inline int cd_q8_int(float v) {
    v = v >= -127.0f ? v : -127.0f;
    v = v <= 127.0f ? v : 127.0f;
    int i = (int)v;
    float f = v - (float)i;
    return i + (f >= 0.5f) - (f <= -0.5f);
}
static inline int8_t cd_q8_round(float v) { return (int8_t)cd_q8_int(v); }
/* The same value as a float (what cldiff carries, times the scale). */
static inline float cd_q8_float(float v) { return (float)cd_q8_int(v); }

/* cd_q8_int on CD_QL lanes (GCC vector extensions), written so that the compiler cannot fail to
 * vectorize it (a comparison gives -1 where true): after the same clamp, the value moved
 * 0.49999997 (the float just below one half) away from zero and truncated. Equal to cd_q8_int
 * for every one of the 2^32 float inputs (checked exhaustively; test_int8_quant re-checks it
 * on every float of [-128, 128] and the specials): for |v| <= 127 the sum rounds to at least
 * the next integer exactly when the fraction is at least one half. */
#define CD_QL 16 /* lanes: one AVX-512 register (two AVX2 ones, four SSE ones: the same lane results) */
typedef float cd_fq __attribute__((vector_size(4 * CD_QL)));
typedef int32_t cd_iq __attribute__((vector_size(4 * CD_QL)));
#define CD_SELQ(m, a, b) ((cd_fq)(((m) & (cd_iq)(a)) | (~(m) & (cd_iq)(b))))
/* Vectors go by pointer and the helpers are always inlined: a vector passed by value would have
 * an ABI that depends on the ISA level (-Wpsabi). */
static inline __attribute__((always_inline)) void cd_q8_vec(const cd_fq *in, cd_iq *out) {
    const cd_fq z = {0}, lo = z - 127.0f, hi = z + 127.0f, h = z + 0.49999997f;
    const cd_iq sign = (cd_iq){0} + INT32_MIN;
    cd_fq v = *in;
    v = CD_SELQ(v >= lo, v, lo);
    v = CD_SELQ(v <= hi, v, hi);
    cd_fq hs = (cd_fq)(((cd_iq)v & sign) | (cd_iq)h);
    *out = __builtin_convertvector(v + hs, cd_iq);
}

/* q[i] = cd_q8_float(x[i] * inv) for a row: the int8 values held as floats. Inlined into its
 * callers so that each ISA variant of them (target_clones, target attributes) vectorizes it. */
static inline __attribute__((always_inline)) void cd_q8f_row(float *q, const float *x, int64_t n, float inv) {
    int64_t i = 0;
    for (; i + CD_QL <= n; i += CD_QL) {
        cd_fq v;
        cd_iq qi;
        memcpy(&v, x + i, sizeof v);
        v = v * inv;
        cd_q8_vec(&v, &qi);
        v = __builtin_convertvector(qi, cd_fq);
        memcpy(q + i, &v, sizeof v);
    }
    for (; i < n; i++) q[i] = cd_q8_float(x[i] * inv);
}
#endif
