/* Elementwise family: activations, scale, binary elementwise ops with Paddle axis
 * broadcasting, fusion_elementwise_*_activation, calib fake-quant (docs/nb-format.md §7.4, §7.10,
 * §7.21, §7.22). The host (cl_ops_eltwise.c) resolves broadcasting into merged dims and
 * element strides (0 = broadcast), so a kernel only walks an index.
 *
 * Activation kinds K_<TYPE> and binary op codes K_ELEMENTWISE_<OP>: the header generated from
 * src/engine/op_list.def (prepended by the runtime); 0..13 are cd_act_kind (engine/ops.h),
 * 20.. the standalone-only ones.
 * NaN handling mirrors the CPU kernels: relu-like clamps are written so that NaN passes. */


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
    case K_LEAKY_RELU: return x < ACC_ZERO ? (ACC)(a * f) : x;
    case K_PRELU: return x < ACC_ZERO ? al * x : x;
    case K_SIGMOID: return (ACC)(1.0f / (1.0f + exp(-f)));
    case K_TANH: return (ACC)tanh(f);
    case K_SWISH: return (ACC)(f / (1.0f + exp(-a * f)));
    case K_HARD_SWISH: {
        float t = f + c;
        return (ACC)(f * (t < 0.0f ? 0.0f : (t > a ? a : t)) / b);
    }
    case K_HARD_SIGMOID: {
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
    case K_RECIPROCAL: return (ACC)(1.0f / f);
    case K_FLOOR: return (ACC)floor(f);
    case K_CEIL: return (ACC)ceil(f);
    case K_ERF: return (ACC)erf(f);
    case K_SIGN: return f > 0.0f ? ACC_ONE : (f < 0.0f ? -ACC_ONE : x);
    case K_ELU: return f > 0.0f ? x : (ACC)(a * expm1(f));
    case K_THRESHOLDED_RELU: return f > a ? x : ACC_ZERO;
    case K_SOFTPLUS: return (ACC)(a * f > b ? f : log1p(exp(a * f)) / a);
    case K_SOFTSIGN: return (ACC)(f / (1.0f + fabs(f)));
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

/* op: K_ELEMENTWISE_<OP>, the same code for fusion_elementwise_<op>_activation */

ACC ew_binop(int op, ACC x, ACC y) {
    switch (op) {
    case K_ELEMENTWISE_ADD: return x + y;
    case K_ELEMENTWISE_SUB: return x - y;
    case K_ELEMENTWISE_MUL: return x * y;
    case K_ELEMENTWISE_DIV: return x / y;
    case K_ELEMENTWISE_MAX: return x > y ? x : y;
    case K_ELEMENTWISE_MIN: return x < y ? x : y;
    case K_ELEMENTWISE_POW: return (ACC)pow((float)x, (float)y);
    case K_ELEMENTWISE_FLOORDIV: return (ACC)floor((float)(x / y));
    case K_ELEMENTWISE_MOD: {
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
