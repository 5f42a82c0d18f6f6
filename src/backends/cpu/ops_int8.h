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
/* For a claimed op on the planned values (parameters with data): its parsed attributes, folded
 * scales and float weight copy in one malloc'd block (*state, freed with free()), so that the
 * timed run only computes. Fails (no state) when that cannot be built ahead, e.g. a bias that
 * is not a parameter. */
cd_status cd_cpu_int8_prepare(cd_op_ctx *c, void **state);
/* Bytes of scratch a run of the prepared op uses: a backend that hands that much (or more) in
 * c->scratch, its pages touched, spares the run an allocation and its page faults. */
size_t cd_cpu_int8_scratch(const void *state);
/* Runs a claimed op with its prepared state, or without one (NULL: built and freed here, the
 * same code); kernel[] receives the variant name for the report ("conv2d:int8:int8_out"). */
cd_status cd_cpu_int8_run(cd_op_ctx *c, const void *state, char *kernel, size_t kn, char *note, size_t nn);
#endif
