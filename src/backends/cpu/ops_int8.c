/* int8 kernels of the CPU backend (see ops_int8.h; numerics and their sources: docs/int8.md).
 *
 * Per output element of an int8 conv2d / depthwise_conv2d / fc, as Paddle-Lite's aarch64
 * kernels compute it (gemm_prepacked_int8.cc GEMM_INT8_*_OUT, conv3x3s1_depthwise_int8.cc,
 * gemv_arm_int8.cc; scale folding in conv_gemmlike.cc / fc_compute.cc PrepareForRun):
 *   acc   = sum of int8 input * int8 weight, exact in int32
 *   fp32_out:  m = ws[oc] * in_s                      b = bias[oc]
 *   int8_out:  m, b folded as the released library computes them, which differs per kernel
 *              (the armv8 library is built with -ffast-math: see pl_fold below)
 *   y     = fmaf((float)acc, m, b)                    (scvtf, then fmla onto the bias)
 *   y     = activation in float (relu6 clip, hard_swish offset/threshold/scale divided by
 *           out_s for int8_out; conv only)
 *   int8_out: q = cd_q8_round(y)                      ([-127, 127], ties away from zero)
 * Integer sums are exact, so the order of the sum does not matter; the float steps are the
 * ones above, each rounded once (fmaf is the only fused step; no other a*b+c appears). */
#include "backends/cpu/ops_int8.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/gemm_int8.h"
#include "backends/cpu/int8_quant.h"
#include "backends/cpu/matmul_geo.h"
#include "backends/cpu/par.h"
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* No contraction of a*b+c in this file: the one fused step is the explicit fmaf; every other
 * multiply and add rounds on its own on every ISA (an aarch64 or x86-64-v3 build would otherwise
 * fuse e.g. hard_swish's product with the SecondInput add), as the oracle computes them. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define PL_PREC_INT8 2 /* lite/api/paddle_place.h PrecisionType::kInt8 */

/* The hot loops are also compiled for x86-64-v4 (AVX-512) and x86-64-v3 (AVX2, FMA) and picked
 * at load time (GCC target_clones): the same C, so the same results (fmaf is the fused operation
 * in all, an instruction on v3/v4 and a libm call on the baseline); only the speed differs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(CD_NO_TARGET_CLONES)
#define I8_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define I8_HOT
#endif

/* Scratch slot of the calling thread inside a CD_PAR_FOR over `threads` threads. */
static inline int omp_slot(int threads) {
    int i = omp_get_thread_num();
    return i >= 0 && i < threads ? i : 0;
}

static const cd_tensor *int8_param(const cd_op_ctx *c, const char *slot) {
    int id = cd_op_in(c->op, slot, 0);
    if (id < 0) return NULL;
    const cd_tensor *t = &c->g->tensors[id];
    if (!t->persistable || t->dtype != CD_I8 || !t->data) return NULL;
    if ((size_t)cd_shape_numel(&t->shape) != t->nbytes) return NULL;
    return t;
}

static bool int8_kernel(const cd_op *op) {
    if (op->kernel.present) return op->kernel.precision == PL_PREC_INT8;
    return cd_attr_bool(op, "enable_int8", false);
}

/* int8 output: the kernel alias says so (int8_out); without an alias, an output scale does. */
static bool int8_out(const cd_op *op, const char *out_scale) {
    if (op->kernel.present && op->kernel.alias[0]) return strstr(op->kernel.alias, "int8") != NULL;
    const double *s;
    return cd_attr_floats(op, out_scale, &s) > 0;
}

static bool first_scale(const cd_op *op, const char *name, float *v) {
    const double *s;
    if (cd_attr_floats(op, name, &s) < 1) return false;
    *v = (float)s[0];
    return true;
}

static bool calib_dir(const cd_op *op, bool *to_int8) {
    const char *al = op->kernel.present ? op->kernel.alias : "";
    if (strstr(al, "fp32_to_int8")) {
        *to_int8 = true;
        return true;
    }
    if (strstr(al, "int8_to_fp32")) {
        *to_int8 = false;
        return true;
    }
    return false;
}

/* mul (lite/kernels/arm/mul_compute.cc, Mul_int8_f32; scales from X0_scale / Y0_scale,
 * lite/operators/mul_op.h): the only int8 mul kernel has a float output. X is [M, K] after
 * flattening at x_num_col_dims, the INT8 weight Y [K, N] at y_num_col_dims. */
typedef struct {
    int64_t M, K, N;
} mul8_dims;
static bool mul8_geometry(const cd_op_ctx *c, const cd_tensor *w, mul8_dims *d) {
    const cd_value *x = &c->vals[cd_op_in(c->op, "X", 0)];
    int64_t xc = cd_attr_int(c->op, "x_num_col_dims", 1), yc = cd_attr_int(c->op, "y_num_col_dims", 1);
    if (xc < 1 || xc >= x->shape.rank || yc < 1 || yc >= w->shape.rank) return false;
    d->M = 1;
    d->K = 1;
    d->N = 1;
    int64_t k2 = 1;
    for (int i = 0; i < x->shape.rank; i++) {
        if (i < xc)
            d->M *= x->shape.d[i];
        else
            d->K *= x->shape.d[i];
    }
    for (int i = 0; i < w->shape.rank; i++) {
        if (i < yc)
            k2 *= w->shape.d[i];
        else
            d->N *= w->shape.d[i];
    }
    return d->K == k2 && d->K > 0 && d->N > 0;
}

static bool mul8_claims(const cd_op_ctx *c) {
    const cd_op *op = c->op;
    if (!int8_kernel(op)) return false;
    const cd_tensor *w = int8_param(c, "Y");
    int in = cd_op_in(op, "X", 0), out = cd_op_out(op, "Out", 0);
    if (!w || in < 0 || out < 0 || c->vals[in].dtype != CD_F32 || c->vals[out].dtype != CD_F32) return false;
    float s;
    const double *ws;
    mul8_dims d;
    if (!first_scale(op, "X0_scale", &s) || !mul8_geometry(c, w, &d)) return false;
    int nws = cd_attr_floats(op, "Y0_scale", &ws);
    return (nws == 1 || nws == d.N) && cd_value_numel(&c->vals[out]) == d.M * d.N;
}

/* matmul / matmul_v2 (lite/kernels/arm/matmul_compute.cc, matmul_v2_compute.cc, kernel
 * Matmul_int8_f32; scales from X0_scale / Y0_scale, lite/operators/matmul_op.cc and
 * matmul_v2_op.cc AttachImpl): X and Y int8 (Y an INT8 weight record, or an activation quantized
 * with its one Y0_scale), float output. Claimed where Paddle-Lite's matrix views and cldiff's
 * agree: X of rank >= 2, or v1's outer product of two vectors. */
static bool mm8_claims(const cd_op_ctx *c) {
    const cd_op *op = c->op;
    if (!int8_kernel(op)) return false;
    int xi = cd_op_in(op, "X", 0), yi = cd_op_in(op, "Y", 0), oi = cd_op_out(op, "Out", 0);
    if (xi < 0 || yi < 0 || oi < 0 || c->vals[xi].dtype != CD_F32 || c->vals[oi].dtype != CD_F32) return false;
    bool yparam = int8_param(c, "Y") != NULL;
    if (!yparam && (c->g->tensors[yi].persistable || c->vals[yi].dtype != CD_F32)) return false;
    float s;
    const double *ws;
    int nws = cd_attr_floats(op, "Y0_scale", &ws);
    if (!first_scale(op, "X0_scale", &s) || nws < 1 || (!yparam && nws != 1)) return false;
    cd_error e = {0};
    cd_op_ctx cc = *c;
    cc.err = &e;
    cd_mm_geo g;
    if (cd_nn_matmul_parse(&cc, &g)) return false;
    if (!g.outer && c->vals[xi].shape.rank < 2) return false;
    return nws == 1 || nws == g.N;
}

bool cd_cpu_int8_claims(const cd_op_ctx *c) {
    const cd_op *op = c->op;
    if (c->prec != CD_PREC_FP32) return false;
    bool conv = !strcmp(op->type, "conv2d") || !strcmp(op->type, "depthwise_conv2d");
    bool fc = !strcmp(op->type, "fc");
    if (!strcmp(op->type, "calib")) {
        bool to8;
        int in = cd_op_in(op, "Input", 0), out = cd_op_out(op, "Out", 0);
        return calib_dir(op, &to8) && in >= 0 && out >= 0 && c->vals[in].dtype == CD_F32 &&
            c->vals[out].dtype == CD_F32;
    }
    if (!strcmp(op->type, "mul")) return mul8_claims(c);
    if (!strcmp(op->type, "matmul") || !strcmp(op->type, "matmul_v2")) return mm8_claims(c);
    if (!conv && !fc) return false;
    if (!int8_kernel(op)) return false;
    const cd_tensor *w = int8_param(c, conv ? "Filter" : "W");
    if (!w || w->shape.rank != (conv ? 4 : 2)) return false;
    float s;
    if (!first_scale(op, "Input0_scale", &s)) return false;
    const double *ws;
    int nws = cd_attr_floats(op, conv ? "Filter0_scale" : "W0_scale", &ws);
    int64_t ch = conv ? w->shape.d[0] : w->shape.d[1];
    if (nws != 1 && nws != ch) return false;
    if (int8_out(op, conv ? "Output0_scale" : "Out0_scale") &&
        !first_scale(op, conv ? "Output0_scale" : "Out0_scale", &s))
        return false;
    int in = cd_op_in(op, conv ? "Input" : "Input", 0), out = cd_op_out(op, conv ? "Output" : "Out", 0);
    if (in < 0 || out < 0 || c->vals[in].dtype != CD_F32 || c->vals[out].dtype != CD_F32) return false;
    if (conv && (c->vals[in].shape.rank != 4 || c->vals[out].shape.rank != 4)) return false;
    return true;
}

/* ------------------------------------------------------------------ shared pieces */

typedef int8_t i8xq __attribute__((vector_size(CD_QL)));
I8_HOT static void q8_chunk(const float *x, int8_t *q, int64_t n, float inv) {
    int64_t i = 0;
    for (; i + CD_QL <= n; i += CD_QL) {
        cd_fq v;
        cd_iq qi;
        memcpy(&v, x + i, sizeof v);
        v *= inv;
        cd_q8_vec(&v, &qi);
        i8xq r = __builtin_convertvector(qi, i8xq);
        memcpy(q + i, &r, sizeof r);
    }
    for (; i < n; i++) q[i] = (int8_t)cd_q8_int(x[i] * inv);
}

/* The same conversion, the int8 values written as floats (the float paths below). */
I8_HOT static void q8f_chunk(const float *x, float *q, int64_t n, float inv) { cd_q8f_row(q, x, n, inv); }

#define CHUNK 16384
/* Work (multiply-adds, or elements of a conversion) below which a loop stays on one thread: the
 * float kernels' threshold (gemm.h CD_GEMM_ONE_THREAD_MACS), since waking the OpenMP team after a
 * run of one-thread layers costs more than such work. */
#define PAR_MIN_WORK ((int64_t)CD_GEMM_ONE_THREAD_MACS)
/* The same for elementwise passes (quantization, epilogue): several operations per element. */
#define PAR_MIN_ELEMS (PAR_MIN_WORK / 8)
/* Input activation -> int8, the calib rule with 1/Input0_scale (q8) or the same values as floats (qf). */
static void quantize_input(const float *x, int8_t *q8, float *qf, int64_t n, float in_s, int threads) {
    float inv = 1.0f / in_s;
    int64_t nc = (n + CHUNK - 1) / CHUNK;
    CD_PAR_FOR(n >= PAR_MIN_ELEMS, threads, int64_t, c, nc, {
        int64_t a = c * CHUNK, m = n - a < CHUNK ? n - a : CHUNK;
        if (q8)
            q8_chunk(x + a, q8 + a, m, inv);
        else
            q8f_chunk(x + a, qf + a, m, inv);
    });
}

typedef enum { A_NONE, A_RELU, A_RELU6, A_LEAKY, A_HSWISH, A_OTHER } act8_kind;
typedef struct {
    act8_kind kind;
    float p0, p1, p2; /* RELU6: clip; LEAKY: alpha; HSWISH: 1/scale, offset, threshold */
    cd_act other;     /* A_OTHER: applied on the real-valued result (docs/int8.md) */
} act8;

/* Per-channel epilogue constants and the output rule. */
typedef struct {
    const float *m, *b;   /* folded multiplier and bias per output channel */
    const float *mr, *br; /* real-domain multiplier/bias (int8_out with A_OTHER) */
    act8 act;
    bool out8;
    float out_s, inv_out;
    float accm; /* the sum as the kernel holds it: 4*S or 576*S for a Winograd conv (pl_fold), else 1 */
    /* conv SecondInput residual (fuse_elementwise_op_type), see conv8_run: added in float
     * after the activation computed on the real value, then relu for the add+act fusion */
    const float *second;
    bool residual, residual_relu;
    act8 act_real;
} epi;

static inline float act8_apply(const act8 *a, float y) {
    switch (a->kind) {
    case A_RELU: return y > 0.0f ? y : 0.0f;
    case A_RELU6: y = y > 0.0f ? y : 0.0f; return y < a->p0 ? y : a->p0;
    case A_LEAKY: return y >= 0.0f ? y : y * a->p0;
    case A_HSWISH: {
        float g = y + a->p1;
        g = g > 0.0f ? g : 0.0f;
        g = g < a->p2 ? g : a->p2;
        float h = y * a->p0;
        return h * g;
    }
    default: return y;
    }
}

/* cd_act_apply, except hard_sigmoid written here so that it is not contracted (ops_util.c is
 * compiled with contraction: a fused slope*x+offset on FMA targets) */
static inline float act_other(const cd_act *a, float x) {
    if (a->kind == CD_ACT_HARD_SIGMOID) {
        float t = a->a * x;
        t = t + a->b;
        return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    }
    return cd_act_apply(a, x);
}

/* y = act(real value) + SecondInput[i] (relu for the add+activation fusion), then requantized;
 * res_post: the steps after the fused multiply-add */
static inline float res_post(const epi *e, float y, int64_t i) {
    y = e->act_real.kind == A_OTHER ? act_other(&e->act_real.other, y) : act8_apply(&e->act_real, y);
    y = y + e->second[i];
    if (e->residual_relu) y = y > 0.0f ? y : 0.0f;
    if (!e->out8) return y;
    float t = y * e->inv_out;
    return (float)cd_q8_round(t) * e->out_s;
}
static inline float epi_residual(const epi *e, int64_t oc, float acc, int64_t i) {
    return res_post(e, fmaf(acc, e->mr[oc], e->br[oc]), i);
}

/* acc: the int32 sum as a float ((float)S, what scvtf gives: exact below 2^24) */
static inline float epi_apply(const epi *e, int64_t oc, float acc) {
    if (e->act.kind == A_OTHER) {
        if (!e->out8) return act_other(&e->act.other, fmaf(acc, e->m[oc], e->b[oc]));
        float r = act_other(&e->act.other, fmaf(acc, e->mr[oc], e->br[oc]));
        float t = r * e->inv_out;
        return (float)cd_q8_round(t) * e->out_s;
    }
    float y = act8_apply(&e->act, fmaf(acc, e->m[oc], e->b[oc]));
    return e->out8 ? (float)cd_q8_round(y) * e->out_s : y;
}

/* One row of n outputs of channel oc on the common path (no residual, activation not A_OTHER):
 * epi_apply's arithmetic on CD_QL lanes in one pass: the fused multiply-add lane by lane (one
 * vfmadd in the v3/v4 clones, libm's fmaf in the baseline), then the activation and the int8
 * conversion, the same operations lane by lane as act8_apply and cd_q8_float. */
#define EPI_VEC(ACT)                                                                                                   \
    for (; i + CD_QL <= n; i += CD_QL) {                                                                               \
        cd_fq y;                                                                                                       \
        for (int l = 0; l < CD_QL; l++) y[l] = fmaf(acc[i + l], m, b);                                                 \
        ACT;                                                                                                           \
        if (o8) {                                                                                                      \
            cd_iq qi;                                                                                                  \
            cd_q8_vec(&y, &qi);                                                                                        \
            y = __builtin_convertvector(qi, cd_fq) * os;                                                               \
        }                                                                                                              \
        memcpy(out + i, &y, sizeof y);                                                                                 \
    }
/* The activations on CD_QL lanes (act8_apply's operations lane by lane), one LOOP (EPI_VEC or
 * EPI_VEC_RES) per kind; z, p0, p1, p2 the broadcast zero and constants. */
#define ACT_SWITCH(KIND, LOOP)                                                                                         \
    switch (KIND) {                                                                                                    \
    case A_RELU: LOOP(y = CD_SELQ(y > z, y, z)) break;                                                                 \
    case A_RELU6: LOOP(y = CD_SELQ(y > z, y, z); y = CD_SELQ(y < p0, y, p0)) break;                                    \
    case A_LEAKY: LOOP(y = CD_SELQ(y >= z, y, y * p0)) break;                                                          \
    case A_HSWISH:                                                                                                     \
        LOOP(cd_fq g = y + p1; g = CD_SELQ(g > z, g, z); g = CD_SELQ(g < p2, g, p2); cd_fq h = y * p0; y = h * g)      \
        break;                                                                                                         \
    default: LOOP((void)0) break;                                                                                      \
    }
/* acc: the sums as floats; may be out itself (the pass is elementwise) */
I8_HOT static void epi_row(const epi *e, int64_t oc, const float *acc, float *out, int64_t n) {
    const float m = e->m[oc], b = e->b[oc], os = e->out_s;
    const bool o8 = e->out8;
    const cd_fq z = {0}, p0 = z + e->act.p0, p1 = z + e->act.p1, p2 = z + e->act.p2;
    int64_t i = 0;
    ACT_SWITCH(e->act.kind, EPI_VEC)
    for (; i < n; i++) {
        float y = act8_apply(&e->act, fmaf(acc[i], m, b));
        out[i] = o8 ? cd_q8_float(y) * os : y;
    }
}

/* The residual path (res_post) the same way, for activations other than A_OTHER: s2 is the
 * SecondInput row of these n outputs. */
#define EPI_VEC_RES(ACT)                                                                                               \
    for (; i + CD_QL <= n; i += CD_QL) {                                                                               \
        cd_fq y, t;                                                                                                    \
        for (int l = 0; l < CD_QL; l++) y[l] = fmaf(acc[i + l], m, b);                                                 \
        memcpy(&t, s2 + i, sizeof t);                                                                                  \
        ACT;                                                                                                           \
        y = y + t;                                                                                                     \
        if (rr) y = CD_SELQ(y > z, y, z);                                                                              \
        if (o8) {                                                                                                      \
            cd_iq qi;                                                                                                  \
            y = y * inv;                                                                                               \
            cd_q8_vec(&y, &qi);                                                                                        \
            y = __builtin_convertvector(qi, cd_fq) * os;                                                               \
        }                                                                                                              \
        memcpy(out + i, &y, sizeof y);                                                                                 \
    }
I8_HOT static void epi_row_res(const epi *e, int64_t oc, const float *acc, float *out, int64_t n, int64_t base) {
    const float m = e->mr[oc], b = e->br[oc], os = e->out_s, inv = e->inv_out, *s2 = e->second + base;
    const bool o8 = e->out8, rr = e->residual_relu;
    const cd_fq z = {0}, p0 = z + e->act_real.p0, p1 = z + e->act_real.p1, p2 = z + e->act_real.p2;
    int64_t i = 0;
    ACT_SWITCH(e->act_real.kind, EPI_VEC_RES)
    for (; i < n; i++) out[i] = res_post(e, fmaf(acc[i], m, b), base + i);
}

static inline bool epi_fast(const epi *e) { return !e->residual && e->act.kind != A_OTHER; }

/* Which of Paddle-Lite's ARM kernels runs an int8 conv (lite/kernels/arm/conv_compute.cc
 * ConvCompute<kInt8, *>::PrepareForRun): the kernel decides how the scales are folded. */
typedef enum { PK_SRC, PK_GEMM, PK_DW, PK_DIRECT, PK_WINO2, PK_WINO4 } pl_kernel;

/* How Paddle-Lite's armv8 library folds the scales of each kernel, read from the machine code of
 * the released library (tiny publish: cmake/postproject.cmake adds -ffast-math -Ofast, so GCC
 * reassociates the source's `ws * in / out` and turns divisions by a loop-invariant value into a
 * multiplication by its reciprocal; docs/int8.md "Against Paddle-Lite's ARM kernels"):
 *   kernel (source)                                   int8_out m            int8_out b     fp32_out m
 *   GEMM     conv_gemmlike.cc:69,77                    ws * (in / out)       b / out        ws * in
 *   depthwise conv_depthwise.cc:284,295  per channel   ws * (in * (1/out))   b * (1/out)    ws * in
 *                                        one scale     (ws * (1/out)) * in
 *   direct 3x3s2 conv_direct.h:147-175                 ws * (in / out)       b * (1/out)    ws * in
 *   Winograd 3x3s1 conv_winograd.cc:177-240            ((ws*in)*(1/out))*c   b * (1/out)    (ws*in)*c
 * with c = 0.25 (2x2 tiles: the kernel's sum is 4*S) or (float)(1/576) (4x4 tiles: 576*S). The
 * relu6 clip and the hard_swish constants are real divisions by out in every kernel. PK_SRC (fc:
 * its int8out folding was not read from the machine code, and no shared model has one) keeps the
 * source's order, (ws * in) / out and b / out (fc_compute.cc:240,252). */
static void pl_fold(pl_kernel pk, bool out8, int nws, float w, float in_s, float out_s, float bb, float *m, float *b) {
    const float inv = 1.0f / out_s, c = pk == PK_WINO2 ? 0.25f : 1.0f / 576.0f;
    if (!out8) {
        *m = w * in_s;
        if (pk == PK_WINO2 || pk == PK_WINO4) *m = *m * c;
        *b = bb;
        return;
    }
    switch (pk) {
    case PK_DW:
        *m = nws == 1 ? (w * inv) * in_s : w * (in_s * inv);
        *b = bb * inv;
        break;
    case PK_DIRECT:
        *m = w * (in_s / out_s);
        *b = bb * inv;
        break;
    case PK_WINO2:
    case PK_WINO4:
        *m = ((w * in_s) * inv) * c;
        *b = bb * inv;
        break;
    case PK_GEMM:
        *m = w * (in_s / out_s);
        *b = bb / out_s;
        break;
    default:
        *m = (w * in_s) / out_s;
        *b = bb / out_s;
        break;
    }
}

/* Fills m/b (and mr/br) for nch output channels; pk: the conv kernel (PK_GEMM for fc). */
static cd_status epi_build(cd_op_ctx *c, epi *e, float *buf, int64_t nch, const double *ws, int nws, float in_s,
                           const cd_value *bias, bool out8, float out_s, pl_kernel pk) {
    float *m = buf, *b = buf + nch, *mr = buf + 2 * nch, *br = buf + 3 * nch;
    int64_t nb = bias ? cd_value_numel(bias) : 0;
    if (bias && (bias->dtype != CD_F32 || (nb != nch && nb != 1)))
        return cd_op_fail(c, CD_E_MODEL, "int8 kernel: bias has %lld values for %lld output channels", (long long)nb,
                          (long long)nch);
    const float *bv = bias ? bias->data : NULL;
    for (int64_t o = 0; o < nch; o++) {
        float w = (float)ws[nws == 1 ? 0 : o];
        float bb = bv ? bv[nb == 1 ? 0 : o] : 0.0f;
        pl_fold(pk, false, nws, w, in_s, 1.0f, bb, &mr[o], &br[o]);
        if (out8)
            pl_fold(pk, true, nws, w, in_s, out_s, bb, &m[o], &b[o]);
        else
            m[o] = mr[o], b[o] = br[o];
    }
    e->accm = pk == PK_WINO2 ? 4.0f : pk == PK_WINO4 ? 576.0f : 1.0f;
    e->m = m;
    e->b = b;
    e->mr = mr;
    e->br = br;
    e->out8 = out8;
    e->out_s = out_s;
    e->inv_out = 1.0f / out_s;
    return CD_OK;
}

/* Activation of an int8 conv (conv_gemmlike.cc PrepareForRun divides the relu6 clip and the
 * hard_swish constants by the output scale for int8_out) or fc (relu/relu6 only, clip not
 * divided: fc_compute.cc Run). */
static cd_status act8_build(cd_op_ctx *c, bool conv, bool out8, float out_s, act8 *a) {
    cd_act ca;
    cd_status st = conv ? cd_act_from_conv(c, &ca) : cd_act_from_op(c, "activation_type", &ca);
    if (st) return st;
    memset(a, 0, sizeof *a);
    float d = conv && out8 ? out_s : 1.0f;
    switch (ca.kind) {
    case CD_ACT_NONE: a->kind = A_NONE; break;
    case CD_ACT_RELU: a->kind = A_RELU; break;
    case CD_ACT_RELU6:
        a->kind = A_RELU6;
        a->p0 = conv && out8 ? ca.a / d : ca.a;
        break;
    case CD_ACT_LEAKY_RELU:
        a->kind = conv ? A_LEAKY : A_OTHER;
        a->p0 = ca.a;
        break;
    case CD_ACT_HARD_SWISH:
        if (!conv) {
            a->kind = A_OTHER;
            break;
        }
        a->kind = A_HSWISH;
        a->p0 = 1.0f / (out8 ? ca.b / d : ca.b);
        a->p1 = out8 ? ca.c / d : ca.c;
        a->p2 = out8 ? ca.a / d : ca.a;
        break;
    default: a->kind = A_OTHER; break;
    }
    a->other = ca;
    return CD_OK;
}

/* ------------------------------------------------------------------ conv */

typedef struct {
    int64_t N, C, H, W, OC, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, G;
    int64_t pb, pr; /* bottom and right padding (Paddle-Lite's kernel choice compares them) */
} geo8;

static cd_status ints2(cd_op_ctx *c, const char *name, int64_t dflt, int64_t *o, int max, int *n) {
    const int64_t *v;
    int k = cd_attr_ints(c->op, name, &v);
    if (k <= 0) {
        for (int i = 0; i < max; i++) o[i] = dflt;
        *n = 2;
        return CD_OK;
    }
    if (k != 2 && k != max) return cd_op_fail(c, CD_E_MODEL, "%s has %d values", name, k);
    for (int i = 0; i < k; i++) o[i] = v[i];
    *n = k;
    return CD_OK;
}

static cd_status geo8_parse(cd_op_ctx *c, const cd_tensor *w, geo8 *g) {
    const cd_value *x = cd_in(c, "Input", 0), *y = cd_out(c, "Output", 0);
    g->N = x->shape.d[0];
    g->C = x->shape.d[1];
    g->H = x->shape.d[2];
    g->W = x->shape.d[3];
    g->OC = y->shape.d[1];
    g->OH = y->shape.d[2];
    g->OW = y->shape.d[3];
    g->KH = w->shape.d[2];
    g->KW = w->shape.d[3];
    g->G = cd_attr_int(c->op, "groups", 1);
    int64_t st[2], dl[2], pd[4];
    int n;
    cd_status s;
    if ((s = ints2(c, "strides", 1, st, 2, &n)) || (s = ints2(c, "dilations", 1, dl, 2, &n))) return s;
    if ((s = ints2(c, "paddings", 0, pd, 4, &n))) return s;
    if (n == 2) {
        pd[3] = pd[2] = pd[1];
        pd[1] = pd[0];
    }
    const char *alg = cd_attr_str(c->op, "padding_algorithm", "EXPLICIT");
    if (!strcmp(alg, "VALID")) {
        memset(pd, 0, sizeof pd);
    } else if (!strcmp(alg, "SAME")) {
        dl[0] = dl[1] = 1;
        int64_t in[2] = {g->H, g->W}, k[2] = {g->KH, g->KW};
        for (int i = 0; i < 2; i++) {
            int64_t out = (in[i] + st[i] - 1) / st[i], tot = (out - 1) * st[i] + k[i] - in[i];
            if (tot < 0) tot = 0;
            pd[2 * i] = tot / 2;
            pd[2 * i + 1] = tot - tot / 2;
        }
    }
    g->sh = st[0];
    g->sw = st[1];
    g->dh = dl[0];
    g->dw = dl[1];
    g->pt = pd[0];
    g->pl = pd[2];
    g->pb = pd[1];
    g->pr = pd[3];
    if (g->G <= 0 || g->C % g->G || g->OC % g->G || w->shape.d[0] != g->OC || w->shape.d[1] * g->G != g->C ||
        g->sh <= 0 || g->sw <= 0 || g->dh <= 0 || g->dw <= 0)
        return cd_op_fail(c, CD_E_MODEL, "int8 conv: inconsistent geometry (groups %lld, Cin %lld, Cout %lld)",
                          (long long)g->G, (long long)g->C, (long long)g->OC);
    return CD_OK;
}

/* Paddle-Lite's choice (conv_compute.cc PARAM_INIT and ConvCompute<kInt8, *>::PrepareForRun):
 * depthwise for groups == Cin == Cout, 3x3 or 5x5, equal strides (1 or 2) and equal h/w padding,
 * top == bottom and left == right, no dilation; for groups 1 and 3x3 (equal strides, equal
 * top/bottom and left/right pads, no dilation) on a core without the dot-product instructions
 * (ctx.has_dot() false: A53/A72/A73, and any core Paddle-Lite does not recognise, e.g. under
 * qemu-user, where /proc/cpuinfo is the host's) the direct kernel for stride 2 and Winograd for
 * stride 1 (2x2 tiles when OH*OW / (8 * threads) < 16, else 4x4: conv_winograd.cc:222); else
 * the im2col GEMM. CLDIFF_INT8_ARM_DOTPROD=1 models a core with dot-product (A55, A76 and
 * later: the GEMM for those 3x3 convs too). */
static pl_kernel pl_kernel_of(const geo8 *g, int threads) {
    bool pads_equal = g->pt == g->pb && g->pl == g->pr;
    bool ks_equal = g->sh == g->sw && g->KH == g->KW, no_dil = g->dh == 1 && g->dw == 1;
    bool kps_equal = g->pt == g->pl && ks_equal;
    bool flag_dw = (g->KW == 3 && g->KH == 3) || (g->KW == 5 && g->KH == 5);
    flag_dw = flag_dw && (g->sw == 1 || g->sw == 2);
    if (g->G == g->C && g->C == g->OC && kps_equal && pads_equal && no_dil && flag_dw) return PK_DW;
    const char *dp = getenv("CLDIFF_INT8_ARM_DOTPROD");
    bool dot = dp && dp[0] == '1';
    if (g->G == 1 && g->KW == 3 && no_dil && pads_equal && ks_equal && !dot) {
        if (g->sw == 2 && g->sh == 2) return PK_DIRECT;
        if (g->sw == 1) {
            int64_t unit = g->OH * g->OW / (8 * (int64_t)(threads > 0 ? threads : 1));
            return unit < 16 ? PK_WINO2 : PK_WINO4;
        }
    }
    return PK_GEMM;
}

/* im2col of one group of one image: col[k][p], k = (ci, kh, kw), p = oh * OW + ow. */
static void im2col8(const geo8 *g, const int8_t *xg, int64_t cg, int8_t *col, int threads) {
    int64_t P = g->OH * g->OW, K = cg * g->KH * g->KW;
    CD_PAR_FOR(K * P >= PAR_MIN_WORK, threads, int64_t, k, K, {
        int64_t ci = k / (g->KH * g->KW), kh = (k / g->KW) % g->KH, kw = k % g->KW;
        int8_t *dst = col + k * P;
        const int8_t *xp = xg + ci * g->H * g->W;
        for (int64_t oh = 0; oh < g->OH; oh++) {
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
            int8_t *d = dst + oh * g->OW;
            if (ih < 0 || ih >= g->H) {
                memset(d, 0, (size_t)g->OW);
                continue;
            }
            const int8_t *xr = xp + ih * g->W;
            for (int64_t ow = 0; ow < g->OW; ow++) {
                int64_t iw = ow * g->sw - g->pl + kw * g->dw;
                d[ow] = (iw >= 0 && iw < g->W) ? xr[iw] : 0;
            }
        }
    });
}

#define TILE 256
/* acc[o][p] = sum_k w[o][k] * col[k][p] for up to 4 output channels over one tile of p. Two
 * products of int8 sum to at most 2 * 16129 < 2^15: each pair of k is added in int16, then
 * widened into the int32 sum (exact). */
I8_HOT static void dot4(const int8_t *w0, int64_t K, int64_t wstride, const int8_t *col, int64_t P, int64_t p0,
                        int64_t np, int no, int32_t acc[4][TILE]) {
    for (int o = 0; o < 4; o++) memset(acc[o], 0, sizeof(int32_t) * (size_t)np);
    const int8_t *w1 = w0 + (no > 1 ? wstride : 0), *w2 = w0 + (no > 2 ? 2 * wstride : 0),
                 *w3 = w0 + (no > 3 ? 3 * wstride : 0);
    int32_t *r0 = acc[0], *r1 = acc[1], *r2 = acc[2], *r3 = acc[3];
    int64_t k = 0;
    for (; k + 1 < K; k += 2) {
        const int8_t *c0 = col + k * P + p0, *c1 = c0 + P;
        int16_t a0 = w0[k], b0 = w0[k + 1], a1 = w1[k], b1 = w1[k + 1];
        int16_t a2 = w2[k], b2 = w2[k + 1], a3 = w3[k], b3 = w3[k + 1];
        for (int64_t p = 0; p < np; p++) {
            int16_t u = c0[p], v = c1[p];
            r0[p] += (int16_t)(a0 * u + b0 * v);
            r1[p] += (int16_t)(a1 * u + b1 * v);
            r2[p] += (int16_t)(a2 * u + b2 * v);
            r3[p] += (int16_t)(a3 * u + b3 * v);
        }
    }
    if (k < K) {
        const int8_t *c0 = col + k * P + p0;
        int16_t a0 = w0[k], a1 = w1[k], a2 = w2[k], a3 = w3[k];
        for (int64_t p = 0; p < np; p++) {
            int16_t u = c0[p];
            r0[p] += (int16_t)(a0 * u);
            r1[p] += (int16_t)(a1 * u);
            r2[p] += (int16_t)(a2 * u);
            r3[p] += (int16_t)(a3 * u);
        }
    }
}

/* ------------------------------------------------------------------ prepared state
 *
 * Everything an int8 op needs besides its input values: the parsed geometry, the folded
 * epilogue constants, the weights as floats for the exact float sums (gemm_int8.h), the kernel
 * name. Built once per op by the backend's prepare (cd_cpu_int8_prepare), outside the timed
 * run; a run without one (re-inferred shapes, the OpenCL host path) builds it on the spot and
 * frees it, so both go through the same code. One malloc block: the struct, then its arrays. */
typedef enum { I8_CONV, I8_FC, I8_MUL, I8_MATMUL, I8_CALIB } i8_kind;
typedef struct {
    i8_kind kind;
    char kernel[40];
    bool residual_note;
    float in_s;
    epi e;  /* conv, fc: constants; e.second is set per run */
    geo8 g; /* conv */
    bool dw, direct1x1, wf_ok;
    pl_kernel pk; /* conv: Paddle-Lite's kernel for it (pl_kernel_of) */
    bool vnni;    /* pointwise sums in integer SIMD (gemm_int8.h cd_pw8_*): wp, corr */
    const int32_t *wp, *corr;
    int64_t K, N; /* conv: Cin/G * KH * KW; fc: W [K, N] */
    mul8_dims md; /* mul */
    cd_mm_geo mm; /* matmul: geometry; yparam: Y is an INT8 record (its floats in wf) */
    bool yparam;
    float y_s;       /* matmul with an activation Y: its Y0_scale */
    const float *sc; /* mul: Y0_scale[n] * X0_scale; matmul: (X0_scale * Y0_scale[n]) * alpha */
    const float *wf; /* conv: weights as floats (cd_conv8_weights per group), NULL beyond exact windows */
    size_t scratch;  /* bytes of scratch a run needs (the input as int8 or floats, GEMM pieces) */
    float cs, cinv;  /* calib: scale, 1/scale */
    bool to8;        /* calib: fp32_to_int8 */
} i8_state;

static i8_state *state_alloc(cd_op_ctx *c, size_t nfloat) {
    i8_state *s = calloc(1, sizeof *s + sizeof(float) * nfloat);
    if (!s) cd_op_fail(c, CD_E_NOMEM, "out of memory preparing the int8 kernel");
    return s;
}
static float *state_floats(i8_state *s) { return (float *)(s + 1); }

/* The run's scratch: the backend's block (pages touched ahead) when it is big enough, else a
 * malloc'd one returned in *own for the caller to free. */
static void *scratch_get(cd_op_ctx *c, size_t need, void **own) {
    *own = NULL;
    if (c->scratch && c->scratch_bytes >= need) return c->scratch;
    return *own = malloc(need ? need : 1);
}
#define XF_BYTES(nx) (((size_t)(nx) * sizeof(float) + 63) / 64 * 64)

/* The bias of an int8 layer must be there when the state is built: a parameter at prepare,
 * any value at run time. Without data (a computed bias at prepare) the state is not built. */
static cd_status bias_of(cd_op_ctx *c, const cd_value **bias) {
    *bias = cd_in(c, "Bias", 0);
    if (*bias && !(*bias)->data) return CD_E_UNSUPPORTED;
    return CD_OK;
}

static cd_status conv8_build(cd_op_ctx *c, i8_state **out) {
    const cd_op *op = c->op;
    const cd_tensor *wt = int8_param(c, "Filter");
    const cd_value *y = cd_out(c, "Output", 0), *bias;
    geo8 g;
    cd_status st = geo8_parse(c, wt, &g);
    if (st || (st = bias_of(c, &bias))) return st;
    float in_s = 0, out_s = 1;
    first_scale(op, "Input0_scale", &in_s);
    bool out8 = int8_out(op, "Output0_scale");
    if (out8) first_scale(op, "Output0_scale", &out_s);
    const double *ws;
    int nws = cd_attr_floats(op, "Filter0_scale", &ws);
    int64_t cg = g.C / g.G, og = g.OC / g.G, K = cg * g.KH * g.KW;
    bool dw = cg == 1 && og == 1;
    cd_conv8_geo cg8 = {NULL,      (int)cg,   (int)g.H,  (int)g.W,  (int)g.KH, (int)g.KW, (int)g.sh,
                        (int)g.sw, (int)g.dh, (int)g.dw, (int)g.pt, (int)g.pl, (int)g.OH, (int)g.OW};
    bool wf_ok = cd_conv8_exact(&cg8);
    bool pw = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.OH == g.H && g.OW == g.W;
    /* pointwise layers of at least one vector of pixels: integer SIMD where the CPU has it
     * (CLDIFF_INT8_NO_VNNI=1 keeps the float-GEMM sums, e.g. to test both; the same bits) */
    const char *nv = getenv("CLDIFF_INT8_NO_VNNI");
    bool vnni = pw && !dw && g.OH * g.OW >= 16 && !(nv && nv[0] == '1') && cd_pw8_available();
    int64_t kg = (cg + 3) / 4;
    size_t nw = vnni ? (size_t)(g.OC * kg + g.OC) : wf_ok ? (size_t)(g.OC * K) : 0;
    i8_state *s = state_alloc(c, 4 * (size_t)g.OC + nw);
    if (!s) return CD_E_NOMEM;
    s->kind = I8_CONV;
    s->g = g;
    s->in_s = in_s;
    s->K = K;
    s->dw = dw;
    s->wf_ok = wf_ok;
    s->vnni = vnni;
    s->scratch = vnni ? cd_pw8_pack_bytes((int)cg, (int)(g.OH * g.OW))
        : dw          ? 0
        : wf_ok       ? XF_BYTES(cd_value_numel(cd_in(c, "Input", 0))) + cd_conv8_scratch(&cg8, (int)og)
                      : 0;
    s->direct1x1 = pw;
    float *f = state_floats(s);
    if ((st = act8_build(c, true, out8, out_s, &s->e.act))) goto fail;
    /* SecondInput: Paddle-Lite's ARM conv kernels never read it (conv_impl.cc; it is an OpenCL
     * fusion, conv_elementwise_tree_fuser.cc); cldiff's float conv and OpenCL side honour it, so
     * the int8 path does too, in float on the real value (docs/int8.md), keeping both sides of a
     * diff the same model. */
    const char *fe = cd_attr_str(op, "fuse_elementwise_op_type", "");
    const cd_value *sv = cd_in(c, "SecondInput", 0);
    if (fe[0] && sv) {
        if (sv->dtype != CD_F32 || cd_value_numel(sv) != cd_value_numel(y)) {
            st = cd_op_fail(c, CD_E_MODEL, "int8 conv: SecondInput does not match the output");
            goto fail;
        }
        s->e.residual = true;
        s->e.residual_relu = fe[0] == 'f';
        s->residual_note = true;
        if ((st = act8_build(c, true, false, 1.0f, &s->e.act_real))) goto fail;
    }
    s->pk = pl_kernel_of(&g, c->threads);
    if ((st = epi_build(c, &s->e, f, g.OC, ws, nws, in_s, bias, out8, out_s, s->pk))) goto fail;
    float *wf = f + 4 * g.OC;
    const int8_t *w = wt->data;
    if (vnni) {
        int32_t *wp = (int32_t *)wf, *corr = wp + g.OC * kg;
        for (int64_t gi = 0; gi < g.G; gi++)
            cd_pw8_weights(w + gi * og * K, (int)og, (int)cg, wp + gi * og * kg, corr + gi * og);
        s->wp = wp;
        s->corr = corr;
    } else if (wf_ok) {
        for (int64_t gi = 0; gi < g.G; gi++) cd_conv8_weights(&cg8, (int)og, w + gi * og * K, wf + gi * og * K);
    }
    s->wf = wf_ok && !vnni ? wf : NULL;
    snprintf(s->kernel, sizeof s->kernel, "%s:int8:%s", op->type, out8 ? "int8_out" : "fp32_out");
    *out = s;
    return CD_OK;
fail:
    free(s);
    return st;
}

/* The epilogue of one channel's P sums (acc, may be out itself) for output channel oc; base: the
 * index of its first element in the output (SecondInput). In the x86-64-v3 clone fmaf is one
 * instruction on the residual and other-activation paths too. */
I8_HOT static void epi_channel(const epi *e, int64_t oc, const float *acc, float *out, int64_t P, int64_t base) {
    if (e->accm != 1.0f) { /* Winograd: the kernel converts 4*S or 576*S (scvtf rounds as this does) */
        for (int64_t p = 0; p < P; p++) out[p] = acc[p] * e->accm;
        acc = out;
    }
    if (epi_fast(e))
        epi_row(e, oc, acc, out, P);
    else if (e->residual && e->act_real.kind != A_OTHER)
        epi_row_res(e, oc, acc, out, P, base);
    else if (e->residual)
        for (int64_t p = 0; p < P; p++) out[p] = epi_residual(e, oc, acc[p], base + p);
    else
        for (int64_t p = 0; p < P; p++) out[p] = epi_apply(e, oc, acc[p]);
}

/* Depthwise: the float depthwise kernel's sums over the input quantized into its padded plane
 * (the integers held as floats: every partial sum an integer below 2^24, so exact whatever its
 * order or fusion), then the epilogue per channel plane. x: the float input. */
static cd_status conv8_dw(cd_op_ctx *c, const i8_state *s, const epi *e, const float *x, float *out) {
    const geo8 *g = &s->g;
    int threads = c->threads > 0 ? c->threads : 1;
    int64_t P = g->OH * g->OW;
    cd_conv_direct_geo dg = {NULL,       (int)g->C,  (int)g->H,  (int)g->W,  (int)g->KH, (int)g->KW, (int)g->sh,
                             (int)g->sw, (int)g->dh, (int)g->dw, (int)g->pt, (int)g->pl, (int)g->OH, (int)g->OW};
    cd_status st = cd_nn_depthwise_sums_f32(c, &dg, (int)g->N, x, s->wf, out, 1.0f / s->in_s);
    if (st) return st;
    int64_t planes = g->N * g->C;
    CD_PAR_FOR(planes * P >= PAR_MIN_ELEMS, threads, int64_t, t, planes, {
        int64_t ch = t % g->C;
        epi_channel(e, ch, out + t * P, out + t * P, P, t * P);
    });
    return CD_OK;
}

/* Without float weights (a kernel window above CD_INT8_FLOAT_EXACT_K taps) or when the float
 * sums ran out of memory: int8 copies and direct integer sums (dot4) for group gi of image n. */
static cd_status conv8_int_group(cd_op_ctx *c, const i8_state *s, const epi *e, const int8_t *xq, int64_t n, int64_t gi,
                                 int8_t **col, float *out) {
    const geo8 *g = &s->g;
    int threads = c->threads > 0 ? c->threads : 1;
    int64_t P = g->OH * g->OW, cg = g->C / g->G, og = g->OC / g->G, K = s->K;
    const int8_t *w = int8_param(c, "Filter")->data;
    const int8_t *cl = xq + n * g->C * g->H * g->W + gi * cg * g->H * g->W;
    if (!s->direct1x1) {
        if (!*col && !(*col = malloc((size_t)(K * P > 0 ? K * P : 1))))
            return cd_op_fail(c, CD_E_NOMEM, "out of memory in the int8 conv");
        im2col8(g, cl, cg, *col, threads);
        cl = *col;
    }
    float *yn = out + n * g->OC * P;
    int64_t nob = (og + 3) / 4, ntile = (P + TILE - 1) / TILE;
    CD_PAR_FOR(og * P * K >= PAR_MIN_WORK, threads, int64_t, task, nob * ntile, {
        int64_t ob = task / ntile, t = task % ntile;
        int64_t o0 = gi * og + ob * 4, p0 = t * TILE, np = P - p0 < TILE ? P - p0 : TILE;
        int no = (int)(og - ob * 4 < 4 ? og - ob * 4 : 4);
        int32_t acc[4][TILE];
        float fa[TILE];
        dot4(w + o0 * K, K, K, cl, P, p0, np, no, acc);
        for (int o = 0; o < no; o++) {
            for (int64_t p = 0; p < np; p++) fa[p] = (float)acc[o][p];
            float *yo = yn + (o0 + o) * P + p0;
            if (e->residual)
                for (int64_t p = 0; p < np; p++)
                    yo[p] = epi_residual(e, o0 + o, fa[p], (n * g->OC + o0 + o) * P + p0 + p);
            else
                for (int64_t p = 0; p < np; p++) yo[p] = epi_apply(e, o0 + o, fa[p] * e->accm);
        }
    });
    return CD_OK;
}

/* Pointwise through the integer SIMD sums: the input quantized into packed bytes per group (no
 * float copy), float(S) written where the outputs go, then the epilogue in place. */
static cd_status conv8_vnni(cd_op_ctx *c, const i8_state *s, const epi *e, const float *x, float *out) {
    const geo8 *g = &s->g;
    int threads = c->threads > 0 ? c->threads : 1;
    int64_t P = g->OH * g->OW, cg = g->C / g->G, og = g->OC / g->G, kg = (cg + 3) / 4;
    void *own;
    void *pack = scratch_get(c, s->scratch, &own);
    if (!pack) return cd_op_fail(c, CD_E_NOMEM, "out of memory in the int8 conv");
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t gi = 0; gi < g->G; gi++) {
            float *yg = out + n * g->OC * P + gi * og * P;
            cd_pw8_sums(x + n * g->C * P + gi * cg * P, 1.0f / s->in_s, (int)cg, (int)P, s->wp + gi * og * kg,
                        s->corr + gi * og, (int)og, yg, pack, threads);
            CD_PAR_FOR(og * P >= PAR_MIN_ELEMS, threads, int64_t, o, og, {
                int64_t oc = gi * og + o;
                epi_channel(e, oc, yg + o * P, yg + o * P, P, (n * g->OC + oc) * P);
            });
        }
    free(own);
    return CD_OK;
}

static cd_status conv8_exec(cd_op_ctx *c, const i8_state *s) {
    const geo8 *g = &s->g;
    cd_value *x = cd_in(c, "Input", 0), *y = cd_out(c, "Output", 0);
    epi e = s->e;
    if (e.residual) e.second = cd_in(c, "SecondInput", 0)->data;
    int threads = c->threads > 0 ? c->threads : 1;
    int64_t nx = cd_value_numel(x), P = g->OH * g->OW, cg = g->C / g->G, og = g->OC / g->G;
    float *out = y->data;
    void *own = NULL;
    if (s->vnni) return conv8_vnni(c, s, &e, x->data, out);
    if (s->dw && s->wf_ok) return conv8_dw(c, s, &e, x->data, out); /* quantized in the kernel's copy */
    float *xf = s->wf_ok ? scratch_get(c, s->scratch, &own) : NULL;
    char *piece_scratch = xf ? (char *)xf + XF_BYTES(nx) : NULL;
    int8_t *xq = NULL, *col = NULL;
    cd_status st = CD_OK;
    if (s->wf_ok && !xf) return cd_op_fail(c, CD_E_NOMEM, "out of memory in the int8 conv");
    /* The sums run on the int8 values held as floats (exact: gemm_int8.h), the input quantized once. */
    if (xf) quantize_input(x->data, NULL, xf, nx, s->in_s, c->threads);
    for (int64_t n = 0; n < g->N && !st; n++)
        for (int64_t gi = 0; gi < g->G && !st; gi++) {
            /* the sums of this group's output channels are written where their outputs go and
             * turned into outputs in place */
            float *yg = out + n * g->OC * P + gi * og * P;
            cd_conv8_geo cg8 = {xf ? xf + n * g->C * g->H * g->W + gi * cg * g->H * g->W : NULL,
                                (int)cg,
                                (int)g->H,
                                (int)g->W,
                                (int)g->KH,
                                (int)g->KW,
                                (int)g->sh,
                                (int)g->sw,
                                (int)g->dh,
                                (int)g->dw,
                                (int)g->pt,
                                (int)g->pl,
                                (int)g->OH,
                                (int)g->OW};
            if (xf && cd_conv8_sums(&cg8, (int)og, s->wf + gi * og * s->K, yg, piece_scratch, threads)) {
                CD_PAR_FOR(og * P >= PAR_MIN_ELEMS, threads, int64_t, o, og, {
                    int64_t oc = gi * og + o;
                    epi_channel(&e, oc, yg + o * P, yg + o * P, P, (n * g->OC + oc) * P);
                });
                continue;
            }
            if (!xq) {
                if (!(xq = malloc((size_t)(nx ? nx : 1)))) {
                    st = cd_op_fail(c, CD_E_NOMEM, "out of memory in the int8 conv");
                    break;
                }
                quantize_input(x->data, xq, NULL, nx, s->in_s, c->threads);
            }
            st = conv8_int_group(c, s, &e, xq, n, gi, &col, out);
        }
    free(own);
    free(xq);
    free(col);
    return st;
}

/* ------------------------------------------------------------------ fc */

/* acc[j] = sum_k x[k] * W[k][n0 + j] (int16 products, int32 sums) */
I8_HOT static void fc_rows(const int8_t *xr, const int8_t *w, int64_t K, int64_t N, int64_t n0, int64_t nb,
                           int32_t *acc) {
    for (int64_t k = 0; k < K; k++) {
        int16_t xv = xr[k];
        if (!xv) continue;
        const int8_t *wr = w + k * N + n0;
        for (int64_t j = 0; j < nb; j++) acc[j] += (int16_t)(xv * (int16_t)wr[j]);
    }
}

static cd_status fc8_build(cd_op_ctx *c, i8_state **out) {
    const cd_op *op = c->op;
    const cd_tensor *wt = int8_param(c, "W");
    const cd_value *x = cd_in(c, "Input", 0), *y = cd_out(c, "Out", 0), *bias;
    int64_t K = wt->shape.d[0], N = wt->shape.d[1], nx = cd_value_numel(x);
    if (K <= 0 || nx % K || cd_value_numel(y) != nx / K * N)
        return cd_op_fail(c, CD_E_MODEL, "int8 fc: input of %lld elements does not fit W [%lld, %lld]", (long long)nx,
                          (long long)K, (long long)N);
    cd_status st = bias_of(c, &bias);
    if (st) return st;
    float in_s = 0, out_s = 1;
    first_scale(op, "Input0_scale", &in_s);
    bool out8 = int8_out(op, "Out0_scale");
    if (out8) first_scale(op, "Out0_scale", &out_s);
    const double *ws;
    int nws = cd_attr_floats(op, "W0_scale", &ws);
    i8_state *s = state_alloc(c, 4 * (size_t)N);
    if (!s) return CD_E_NOMEM;
    s->kind = I8_FC;
    s->in_s = in_s;
    s->scratch = (size_t)nx;
    s->K = K;
    s->N = N;
    if ((st = act8_build(c, false, out8, out_s, &s->e.act)) ||
        (st = epi_build(c, &s->e, state_floats(s), N, ws, nws, in_s, bias, out8, out_s, PK_SRC))) {
        free(s);
        return st;
    }
    snprintf(s->kernel, sizeof s->kernel, "fc:int8:%s", out8 ? "int8_out" : "fp32_out");
    *out = s;
    return CD_OK;
}

static cd_status fc8_exec(cd_op_ctx *c, const i8_state *s) {
    const int8_t *w = int8_param(c, "W")->data;
    cd_value *x = cd_in(c, "Input", 0), *y = cd_out(c, "Out", 0);
    int64_t K = s->K, N = s->N, nx = cd_value_numel(x), M = nx / K;
    void *own;
    int8_t *xq = scratch_get(c, (size_t)nx, &own);
    if (!xq) return cd_op_fail(c, CD_E_NOMEM, "out of memory in the int8 fc");
    quantize_input(x->data, xq, NULL, nx, s->in_s, c->threads);
    float *out = y->data;
    const epi *e = &s->e;
    CD_PAR_FOR(M * N * K >= PAR_MIN_WORK, c->threads, int64_t, m, M, {
        const int8_t *xr = xq + m * K;
        for (int64_t n0 = 0; n0 < N; n0 += TILE) {
            int64_t nb = N - n0 < TILE ? N - n0 : TILE;
            int32_t acc[TILE];
            memset(acc, 0, sizeof(int32_t) * (size_t)nb);
            fc_rows(xr, w, K, N, n0, nb, acc);
            for (int64_t j = 0; j < nb; j++) out[m * N + n0 + j] = epi_apply(e, n0 + j, (float)acc[j]);
        }
    });
    free(own);
    return CD_OK;
}

/* ------------------------------------------------------------------ calib */

I8_HOT static void calib_chunk(const float *x, float *o, int64_t n, float inv, float s) {
    int64_t i = 0;
    for (; i + CD_QL <= n; i += CD_QL) {
        cd_fq v;
        cd_iq qi;
        memcpy(&v, x + i, sizeof v);
        v *= inv;
        cd_q8_vec(&v, &qi);
        v = __builtin_convertvector(qi, cd_fq) * s;
        memcpy(o + i, &v, sizeof v);
    }
    for (; i < n; i++) o[i] = cd_q8_float(x[i] * inv) * s;
}

/* fp32_to_int8: q = cd_q8_round(x * (1/scale)) (type_trans.cc fp32_to_int8), carried as q * scale.
 * int8_to_fp32: q * scale (int8_to_fp32); the carried q is recovered with the same rule, which is
 * exact when the producer's output scale is this scale (docs/int8.md). */
static cd_status calib8_build(cd_op_ctx *c, i8_state **out) {
    i8_state *s = state_alloc(c, 0);
    if (!s) return CD_E_NOMEM;
    s->kind = I8_CALIB;
    calib_dir(c->op, &s->to8);
    s->cs = (float)cd_attr_float(c->op, "scale", 1.0);
    s->cinv = 1.0f / s->cs;
    snprintf(s->kernel, sizeof s->kernel, "calib:int8:%s", s->to8 ? "fp32_to_int8" : "int8_to_fp32");
    *out = s;
    return CD_OK;
}

static cd_status calib8_exec(cd_op_ctx *c, const i8_state *s) {
    cd_value *x = cd_in(c, "Input", 0), *o = cd_out(c, "Out", 0);
    int64_t n = cd_value_numel(x);
    if (cd_value_numel(o) != n) return cd_op_fail(c, CD_E_INTERNAL, "calib: output size changed");
    const float *xi = x->data;
    float *oo = o->data;
    int64_t nc = (n + CHUNK - 1) / CHUNK;
    CD_PAR_FOR(n >= PAR_MIN_ELEMS, c->threads, int64_t, k, nc, {
        int64_t a = k * CHUNK, m = n - a < CHUNK ? n - a : CHUNK;
        calib_chunk(xi + a, oo + a, m, s->cinv, s->cs);
    });
    return CD_OK;
}

/* ------------------------------------------------------------------ mul */

/* out[m][n] = float(S) * (Y0_scale[n] * X0_scale): the GEMM writes float(S) (scale 1, no bias),
 * then mul_add_n_scale_bias multiplies (vmulq_f32): two roundings, no bias, no activation. */
static cd_status mul8_build(cd_op_ctx *c, i8_state **out) {
    mul8_dims d;
    if (!mul8_geometry(c, int8_param(c, "Y"), &d)) return cd_op_fail(c, CD_E_MODEL, "int8 mul: X and Y do not fit");
    float in_s = 0;
    first_scale(c->op, "X0_scale", &in_s);
    const double *ws;
    int nws = cd_attr_floats(c->op, "Y0_scale", &ws);
    i8_state *s = state_alloc(c, (size_t)d.N);
    if (!s) return CD_E_NOMEM;
    s->kind = I8_MUL;
    s->md = d;
    s->scratch = (size_t)(d.M * d.K);
    s->in_s = in_s;
    float *sc = state_floats(s);
    for (int64_t n = 0; n < d.N; n++) sc[n] = (float)ws[nws == 1 ? 0 : n] * in_s;
    s->sc = sc;
    snprintf(s->kernel, sizeof s->kernel, "mul:int8:fp32_out");
    *out = s;
    return CD_OK;
}

static cd_status mul8_exec(cd_op_ctx *c, const i8_state *s) {
    const int8_t *w = int8_param(c, "Y")->data;
    cd_value *x = cd_in(c, "X", 0), *y = cd_out(c, "Out", 0);
    const mul8_dims d = s->md;
    void *own;
    int8_t *xq = scratch_get(c, (size_t)(d.M * d.K), &own);
    if (!xq) return cd_op_fail(c, CD_E_NOMEM, "out of memory in the int8 mul");
    quantize_input(x->data, xq, NULL, d.M * d.K, s->in_s, c->threads);
    float *out = y->data;
    const float *sc = s->sc;
    CD_PAR_FOR(d.M * d.N * d.K >= PAR_MIN_WORK, c->threads, int64_t, m, d.M, {
        for (int64_t n0 = 0; n0 < d.N; n0 += TILE) {
            int64_t nb = d.N - n0 < TILE ? d.N - n0 : TILE;
            int32_t acc[TILE];
            memset(acc, 0, sizeof(int32_t) * (size_t)nb);
            fc_rows(xq + m * d.K, w, d.K, d.N, n0, nb, acc);
            for (int64_t j = 0; j < nb; j++) out[m * d.N + n0 + j] = (float)acc[j] * sc[n0 + j];
        }
    });
    free(own);
    return CD_OK;
}

/* ------------------------------------------------------------------ matmul */

/* out[b][m][n] = float(S) * ((X0_scale * Y0_scale[n]) * alpha), S the exact int32 sum: gemm_s8
 * with unit scales writes float(S), then matmul_add_n_scale_bias multiplies (vmulq_f32); the
 * scale is folded in float in ReInitWhenNeeded, in that order. */
static cd_status mm8_build(cd_op_ctx *c, i8_state **out) {
    cd_mm_geo g;
    cd_status st = cd_nn_matmul_parse(c, &g);
    if (st) return st;
    const cd_tensor *yt = int8_param(c, "Y");
    float in_s = 0;
    first_scale(c->op, "X0_scale", &in_s);
    const double *ws;
    int nws = cd_attr_floats(c->op, "Y0_scale", &ws);
    int64_t nx = cd_value_numel(cd_in(c, "X", 0)), ny = cd_value_numel(cd_in(c, "Y", 0));
    size_t nyw = yt ? (size_t)ny : 0;
    i8_state *s = state_alloc(c, (size_t)g.N + nyw);
    if (!s) return CD_E_NOMEM;
    s->kind = I8_MATMUL;
    s->mm = g;
    s->in_s = in_s;
    s->yparam = yt != NULL;
    s->y_s = (float)ws[0];
    float *sc = state_floats(s), *wf = sc + g.N;
    for (int64_t n = 0; n < g.N; n++) {
        float t = in_s * (float)ws[nws == 1 ? 0 : n];
        sc[n] = t * g.alpha;
    }
    s->sc = sc;
    if (yt) {
        const int8_t *w = yt->data;
        for (int64_t i = 0; i < ny; i++) wf[i] = (float)w[i];
        s->wf = wf;
    }
    s->scratch = XF_BYTES(nx) + (yt ? 0 : XF_BYTES(ny));
    snprintf(s->kernel, sizeof s->kernel, "%s:int8:fp32_out", c->op->type);
    *out = s;
    return CD_OK;
}

/* Exact sums whatever K: one int32 sum per output from the int8 values held as floats. */
static void mm8_int_sums(const cd_mm_geo *g, const float *x, const float *y, float *out) {
    if (g->outer) {
        for (int64_t m = 0; m < g->M; m++)
            for (int64_t n = 0; n < g->N; n++) out[m * g->N + n] = (float)((int32_t)x[m] * (int32_t)y[n]);
        return;
    }
    const int64_t M = g->M, N = g->N, K = g->K, xsz = M * K, ysz = K * N;
    for (int64_t b = 0; b < g->batches; b++) {
        int64_t xo, yo;
        cd_mm_batch(g, b, &xo, &yo);
        const float *xb = x + xo * xsz, *yb = y + yo * ysz;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                int32_t acc = 0;
                for (int64_t k = 0; k < K; k++) {
                    float a = g->tx ? xb[k * M + m] : xb[m * K + k], w = g->ty ? yb[n * K + k] : yb[k * N + n];
                    acc += (int32_t)a * (int32_t)w;
                }
                out[b * M * N + m * N + n] = (float)acc;
            }
    }
}

static cd_status mm8_exec(cd_op_ctx *c, const i8_state *s) {
    const cd_value *x = cd_in(c, "X", 0), *y = cd_in(c, "Y", 0);
    float *out = cd_out(c, "Out", 0)->data;
    int64_t nx = cd_value_numel(x), ny = cd_value_numel(y), no = cd_value_numel(cd_out(c, "Out", 0));
    void *own;
    float *xf = scratch_get(c, s->scratch, &own);
    if (!xf) return cd_op_fail(c, CD_E_NOMEM, "out of memory in the int8 matmul");
    quantize_input(x->data, NULL, xf, nx, s->in_s, c->threads);
    const float *yf = s->wf;
    if (!s->yparam) {
        float *yq = (float *)((char *)xf + XF_BYTES(nx));
        quantize_input(y->data, NULL, yq, ny, s->y_s, c->threads);
        yf = yq;
    }
    /* K products of int8 sum exactly in float up to CD_INT8_FLOAT_EXACT_K (gemm_int8.h) */
    if (s->mm.outer || s->mm.K <= CD_INT8_FLOAT_EXACT_K)
        cd_nn_matmul_sums_f32(&s->mm, xf, yf, out, c->threads);
    else
        mm8_int_sums(&s->mm, xf, yf, out);
    const int64_t N = s->mm.N;
    for (int64_t i = 0; i < no; i++) out[i] = out[i] * s->sc[i % N];
    free(own);
    return CD_OK;
}

/* ------------------------------------------------------------------ entry points */

cd_status cd_cpu_int8_prepare(cd_op_ctx *c, void **state) {
    const char *t = c->op->type;
    i8_state *s = NULL;
    cd_status st = !strcmp(t, "calib")                    ? calib8_build(c, &s)
        : !strcmp(t, "mul")                               ? mul8_build(c, &s)
        : !strcmp(t, "fc")                                ? fc8_build(c, &s)
        : !strcmp(t, "matmul") || !strcmp(t, "matmul_v2") ? mm8_build(c, &s)
                                                          : conv8_build(c, &s);
    *state = st ? NULL : s;
    return st;
}

size_t cd_cpu_int8_scratch(const void *state) { return state ? ((const i8_state *)state)->scratch : 0; }

cd_status cd_cpu_int8_run(cd_op_ctx *c, const void *state, char *kernel, size_t kn, char *note, size_t nn) {
    void *own = NULL;
    cd_status st;
    if (!state) {
        if ((st = cd_cpu_int8_prepare(c, &own))) {
            if (st == CD_E_UNSUPPORTED) st = cd_op_fail(c, CD_E_INTERNAL, "int8 kernel: bias has no data");
            return st;
        }
        state = own;
    }
    const i8_state *s = state;
    switch (s->kind) {
    case I8_CALIB: st = calib8_exec(c, s); break;
    case I8_MUL: st = mul8_exec(c, s); break;
    case I8_FC: st = fc8_exec(c, s); break;
    case I8_MATMUL: st = mm8_exec(c, s); break;
    default: st = conv8_exec(c, s); break;
    }
    if (!st) {
        snprintf(kernel, kn, "%s", s->kernel);
        if (s->residual_note)
            snprintf(note, nn,
                     "SecondInput added in float after the activation; Paddle-Lite's ARM kernels ignore "
                     "it (docs/int8.md)");
    }
    free(own);
    return st;
}
