/* cldiff OpenCL prelude (kernels/common.h.cl).
 *
 * The runtime prepends this file to every kernels/<family>.cl before building it, so a
 * family source includes no header and starts right away with its kernels. It is built
 * three times, once per precision variant, selected by exactly one of these defines
 * (passed as -D build options):
 *
 *   CD_FP32          storage float, arithmetic float
 *   CD_FP16          storage IEEE half (buffers hold half bits), arithmetic float; loads and
 *                    stores go through vload_half / vstore_half_rte, so this variant builds
 *                    and runs on every OpenCL 1.2 device (no cl_khr_fp16 needed)
 *   CD_FP16_COMPUTE  storage half, arithmetic half (needs cl_khr_fp16; the runtime only
 *                    builds it where the device reports the extension)
 *
 * Contract for kernel writers (clops):
 *   REAL            element type of activation and weight buffers: declare kernel args as
 *                   `__global const REAL *x`, `__global REAL *y`. Never dereference a REAL
 *                   pointer directly: in CD_FP16 a half pointer may not be dereferenced.
 *   ACC             arithmetic type (float, or half in CD_FP16_COMPUTE). Accumulate in ACC.
 *   LOAD(p, i)      element i of REAL buffer p as ACC.
 *   STORE(p, i, v)  writes ACC (or float) v to element i of p, rounding to nearest even.
 *   LOADF(p, i) / STOREF(p, i, v)   the same in float whatever the variant, for the few
 *                   places that must not lose range (softmax sums, variance, index math).
 *   LOAD4(p, i) / STORE4(p, i, v)   four consecutive elements starting at p + 4*i, as ACC4.
 *   ACC_C(x)        a literal in ACC (write ACC_C(0.5f), never a bare 0.5, which is double).
 *   ACC_ZERO, ACC_ONE, ACC_LOWEST (most negative finite), ACC_HIGHEST.
 *   cd_relu, cd_relu6, cd_leaky, cd_sigmoid, cd_tanh_, cd_hard_sigmoid, cd_hard_swish,
 *   cd_swish, cd_gelu: activations on ACC, evaluated in float and rounded back to ACC so
 *   that fp16-compute rounds once per activation like the CPU _Float16 path.
 *   CD_IDX          index type (int); tensors larger than 2^31 elements are rejected by
 *                   the runtime before launch.
 * Integer tensors (int32/int64 indices, shapes) stay as stored: use `__global const int *`
 * or `__global const long *` and plain indexing.
 */
#if !defined(CD_FP32) && !defined(CD_FP16) && !defined(CD_FP16_COMPUTE)
#define CD_FP32 1
#endif

#if defined(CD_FP16_COMPUTE)
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
typedef half REAL;
typedef half ACC;
typedef half4 ACC4;
#define LOAD(p, i) ((p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = (half)(v))
#define LOADF(p, i) vload_half((i), (p))
#define STOREF(p, i, v) vstore_half_rte((float)(v), (i), (p))
#define LOAD4(p, i) vload4((i), (p))
#define STORE4(p, i, v) vstore4((half4)(v), (i), (p))
#define ACC_C(x) ((half)(x))
#define ACC_LOWEST ((half)-65504.0f)
#define ACC_HIGHEST ((half)65504.0f)
#define CD_TO_ACC4(v) convert_half4(v)
#elif defined(CD_FP16)
typedef half REAL;
typedef float ACC;
typedef float4 ACC4;
#define LOAD(p, i) vload_half((i), (p))
#define STORE(p, i, v) vstore_half_rte((float)(v), (i), (p))
#define LOADF(p, i) vload_half((i), (p))
#define STOREF(p, i, v) vstore_half_rte((float)(v), (i), (p))
#define LOAD4(p, i) vload_half4((i), (p))
#define STORE4(p, i, v) vstore_half4_rte((float4)(v), (i), (p))
#define ACC_C(x) ((float)(x))
#define ACC_LOWEST (-FLT_MAX)
#define ACC_HIGHEST FLT_MAX
#define CD_TO_ACC4(v) convert_float4(v)
#else
typedef float REAL;
typedef float ACC;
typedef float4 ACC4;
#define LOAD(p, i) ((p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = (float)(v))
#define LOADF(p, i) ((p)[(i)])
#define STOREF(p, i, v) ((p)[(i)] = (float)(v))
#define LOAD4(p, i) vload4((i), (p))
#define STORE4(p, i, v) vstore4((float4)(v), (i), (p))
#define ACC_C(x) ((float)(x))
#define ACC_LOWEST (-FLT_MAX)
#define ACC_HIGHEST FLT_MAX
#define CD_TO_ACC4(v) convert_float4(v)
#endif

#define ACC_ZERO ACC_C(0.0f)
#define ACC_ONE ACC_C(1.0f)
typedef int CD_IDX;

/* Activations. The float evaluation then one rounding to ACC mirrors the CPU kernels, which
 * compute transcendental functions in float and round the result to the activation type. */
ACC cd_relu(ACC x) { return x > ACC_ZERO ? x : ACC_ZERO; }
ACC cd_relu6(ACC x, float t) { return (ACC)fmin(fmax((float)x, 0.0f), t); }
ACC cd_leaky(ACC x, float alpha) { return x > ACC_ZERO ? x : (ACC)((float)x * alpha); }
ACC cd_sigmoid(ACC x) { return (ACC)(1.0f / (1.0f + exp(-(float)x))); }
ACC cd_tanh_(ACC x) { return (ACC)tanh((float)x); }
ACC cd_hard_sigmoid(ACC x, float slope, float offset) {
    return (ACC)fmin(fmax((float)x * slope + offset, 0.0f), 1.0f);
}
ACC cd_hard_swish(ACC x, float threshold, float scale, float offset) {
    float f = (float)x;
    return (ACC)(f * fmin(fmax(f + offset, 0.0f), threshold) / scale);
}
ACC cd_swish(ACC x, float beta) { float f = (float)x; return (ACC)(f / (1.0f + exp(-beta * f))); }
ACC cd_gelu(ACC x) {
    float f = (float)x;
    return (ACC)(0.5f * f * (1.0f + erf(f * 0.70710678118654752f)));
}
