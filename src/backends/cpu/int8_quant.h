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

static inline int8_t cd_q8_round(float v) {
    if (!(v >= -127.0f)) return -127;
    if (v >= 127.0f) return 127;
    return (int8_t)roundf(v);
}
#endif
