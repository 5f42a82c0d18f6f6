/* Elementwise family: activations, scale, binary elementwise ops with Paddle axis
 * broadcasting, fusion_elementwise_*_activation, calib fake-quant (docs/nb-format.md §7.4, §7.10,
 * §7.21, §7.22). The host (cl_ops_eltwise.c) resolves broadcasting into merged dims and
 * element strides (0 = broadcast), so a kernel only walks an index.
 *
 * Activation kinds: 0..13 are cd_act_kind (engine/ops.h), 20.. the standalone-only ones.
 * NaN handling mirrors the CPU kernels: relu-like clamps are written so that NaN passes. */

#define K_NONE 0
#define K_RELU 1
#define K_RELU6 2
#define K_LEAKY 3
#define K_SIGMOID 4
#define K_TANH 5
#define K_SWISH 6
#define K_HSWISH 7
#define K_HSIGMOID 8
#define K_PRELU 9
#define K_ABS 10
#define K_GELU 11
#define K_EXP 12
#define K_SQRT 13
#define K_LOG 20
#define K_RSQRT 21
#define K_SQUARE 22
#define K_RECIP 23
#define K_FLOOR 24
#define K_CEIL 25
#define K_ERF 26
#define K_SIGN 27
#define K_ELU 28
#define K_TRELU 29
#define K_SOFTPLUS 30
#define K_MISH 31
#define K_CLIP 32

/* One activation on an ACC value; transcendental ones are evaluated in float and rounded
 * once (like the CPU fp16 path). `al` is the prelu slope already fetched by the caller. */
ACC ew_act(int kind, ACC x, float a, float b, float c, ACC al) {
    float f = (float)x;
    switch (kind) {
    case K_NONE: return x;
    case K_RELU: return x < ACC_ZERO ? ACC_ZERO : x;
    case K_RELU6: return f < 0.0f ? ACC_ZERO : (f > a ? (ACC)a : x);
    /* min(max(x, lo), hi) as Paddle-Lite: lo > hi gives hi everywhere */
    case K_CLIP: return f < a ? (a > b ? (ACC)b : (ACC)a) : (f > b ? (ACC)b : x);
    case K_LEAKY: return x < ACC_ZERO ? (ACC)(a * f) : x;
    case K_PRELU: return x < ACC_ZERO ? al * x : x;
    case K_SIGMOID: return (ACC)(1.0f / (1.0f + exp(-f)));
    case K_TANH: return (ACC)tanh(f);
    case K_SWISH: return (ACC)(f / (1.0f + exp(-a * f)));
    case K_HSWISH: {
        float t = f + c;
        return (ACC)(f * (t < 0.0f ? 0.0f : (t > a ? a : t)) / b);
    }
    case K_HSIGMOID: {
        float t = a * f + b;
        return (ACC)(t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t));
    }
    case K_ABS: return (ACC)fabs(f);
    case K_GELU:
        if (a != 0.0f) return (ACC)(0.5f * f * (1.0f + tanh(0.7978845608028654f * (f + 0.044715f * f * f * f))));
        return (ACC)(0.5f * f * (1.0f + erf(f * 0.7071067811865476f)));
    case K_EXP: return (ACC)exp(f);
    case K_SQRT: return (ACC)sqrt(f);
    case K_LOG: return (ACC)log(f);
    case K_RSQRT: return (ACC)(1.0f / sqrt(f));
    case K_SQUARE: return x * x;
    case K_RECIP: return (ACC)(1.0f / f);
    case K_FLOOR: return (ACC)floor(f);
    case K_CEIL: return (ACC)ceil(f);
    case K_ERF: return (ACC)erf(f);
    case K_SIGN: return f > 0.0f ? ACC_ONE : (f < 0.0f ? -ACC_ONE : x);
    case K_ELU: return f > 0.0f ? x : (ACC)(a * expm1(f));
    case K_TRELU: return f > a ? x : ACC_ZERO;
    case K_SOFTPLUS: return (ACC)(b * f > c ? f : log1p(exp(b * f)) / b);
    case K_MISH: {
        float sp = f > a ? f : log1p(exp(f));
        return (ACC)(f * tanh(sp));
    }
    }
    return x;
}

/* prelu slope for element i: amode 0 = one alpha, 1 = per channel (dim 1 of an
 * [N, C, inner] view), 2 = per element of one sample (C*inner values). */
ACC ew_alpha(__global const REAL *alpha, int amode, int i, int C, int inner) {
    if (amode == 0) return LOAD(alpha, 0);
    if (amode == 1) return LOAD(alpha, (i / inner) % C);
    return LOAD(alpha, i % (C * inner));
}

__kernel void act(__global const REAL *x, __global REAL *y, int n, int kind, float a, float b, float c,
                  __global const REAL *alpha, int amode, int C, int inner) {
    int i = get_global_id(0);
    if (i >= n) return;
    ACC al = kind == K_PRELU ? ew_alpha(alpha, amode, i, C, inner) : ACC_ZERO;
    STORE(y, i, ew_act(kind, LOAD(x, i), a, b, c, al));
}

/* scale op: y = s*x + bias (bias_after_scale) or s*(x + bias), then an optional fused
 * activation, then an optional second affine stage (OpenCL fuse_scaleact). */
__kernel void scale(__global const REAL *x, __global REAL *y, int n, float s, float bias, int after, int kind,
                    float a, float b, float c, int has2, float s1, float b1) {
    int i = get_global_id(0);
    if (i >= n) return;
    ACC v = LOAD(x, i);
    ACC r = after ? (ACC)s * v + (ACC)bias : (ACC)s * (v + (ACC)bias);
    r = ew_act(kind, r, a, b, c, ACC_ZERO);
    if (has2) r = (ACC)s1 * r + (ACC)b1;
    STORE(y, i, r);
}

/* calib fp32 -> int8 -> fp32 as seen by float consumers: q = clamp(round_half_away(x/s),
 * -127, 127) * s. (round() rounds halves away from zero.) */
__kernel void fake_quant(__global const REAL *x, __global REAL *y, int n, float s) {
    int i = get_global_id(0);
    if (i >= n) return;
    float q = round((float)LOAD(x, i) / s);
    STORE(y, i, fmin(fmax(q, -127.0f), 127.0f) * s);
}

/* Component d of an int8 vector (OpenCL C cannot index vectors with a variable). */
int ew_get(int8 v, int d) {
    switch (d) {
    case 0: return v.s0; case 1: return v.s1; case 2: return v.s2; case 3: return v.s3;
    case 4: return v.s4; case 5: return v.s5; case 6: return v.s6;
    }
    return v.s7;
}

#define OP_ADD 0
#define OP_SUB 1
#define OP_MUL 2
#define OP_DIV 3
#define OP_MAX 4
#define OP_MIN 5
#define OP_POW 6
#define OP_FLOORDIV 7
#define OP_MOD 8

ACC ew_binop(int op, ACC x, ACC y) {
    switch (op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_MAX: return x > y ? x : y;
    case OP_MIN: return x < y ? x : y;
    case OP_POW: return (ACC)pow((float)x, (float)y);
    case OP_FLOORDIV: return (ACC)floor((float)(x / y));
    case OP_MOD: {
        /* Paddle semantics: the remainder takes the divisor's sign */
        float r = fmod((float)x, (float)y);
        if (r != 0.0f && ((r < 0.0f) != ((float)y < 0.0f))) r += (float)y;
        return (ACC)r;
    }
    }
    return x;
}

/* out[i] = act(post(x[xo] op y[yo])) where (xo, yo) come from i split over `nd` merged dims
 * (dims/strides: dim 0 outermost); post is the optional elementwise_mul fuse_scale affine. */
__kernel void binary(__global const REAL *x, __global const REAL *y, __global REAL *out, int n, int op, int nd,
                     int8 dims, int8 sx, int8 sy, int has_post, float ps, float pb, int kind, float a, float b,
                     float c) {
    int i = get_global_id(0);
    if (i >= n) return;
    int xo = 0, yo = 0, r = i;
    for (int d = nd - 1; d >= 0; d--) {
        int dim = ew_get(dims, d), q = r % dim;
        r /= dim;
        xo += q * ew_get(sx, d);
        yo += q * ew_get(sy, d);
    }
    ACC v = ew_binop(op, LOAD(x, xo), LOAD(y, yo));
    if (has_post) v = (ACC)ps * v + (ACC)pb;
    STORE(out, i, ew_act(kind, v, a, b, c, ACC_ZERO));
}

/* clip whose Min / Max come from 1-element tensors computed at run time (a NULL pointer:
 * the attribute value lo / hi): the bounds are read on the device, then K_CLIP. */
__kernel void clip_t(__global const REAL *x, __global REAL *y, int n, float lo, float hi,
                     __global const REAL *tmin, __global const REAL *tmax) {
    int i = get_global_id(0);
    if (i >= n) return;
    float a = tmin ? LOADF(tmin, 0) : lo, b = tmax ? LOADF(tmax, 0) : hi;
    STORE(y, i, ew_act(K_CLIP, LOAD(x, i), a, b, 0.0f, ACC_ZERO));
}
