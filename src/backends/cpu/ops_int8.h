/* int8 execution mode of the CPU backend (`--int8 arm`, the default for models whose kernel
 * records say int8): conv2d, depthwise_conv2d and fc layers whose kernel record is an ARM
 * int8 kernel run with integer products and int32 sums the way Paddle-Lite's ARM int8
 * kernels do, and calib converts with Paddle-Lite's rounding (docs/int8.md, with sources).
 *
 * Activations stay float32 tensors in the engine. An int8 activation is carried as the float
 * q * scale (scale = the producer's Output0_scale or the calib scale): the product of an
 * integer |q| <= 127 and a float rounds once, so q comes back exactly as round(v / scale);
 * dumps and the OpenCL side see the dequantized value. An int8 kernel reads its input as
 * q = quantize(v * (1 / Input0_scale)) (the calib rule), which returns the carried integer
 * unchanged and quantizes a float input the way a calib op would. */
#ifndef CD_CPU_OPS_INT8_H
#define CD_CPU_OPS_INT8_H
#include "engine/ops.h"

/* True when the op runs in integer arithmetic in int8 mode (checks type, kernel record,
 * enable_int8, an INT8 weight record, its scales and a float32 input). */
bool cd_cpu_int8_claims(const cd_op_ctx *c);
/* Runs a claimed op; kernel[] receives the variant name for the report ("conv2d:int8_out"). */
cd_status cd_cpu_int8_run(cd_op_ctx *c, char *kernel, size_t kn, char *note, size_t nn);
#endif
