/* The unary float kernel of ops_basic_act.c, one body for every storage type.
 *
 * A part of ops_basic_act.c's template body, not a header: ops_basic_act.c includes it once
 * per storage type with UN_T (float, _Float16) and UN_NAME (the function's name) defined, and
 * un_cfg, PFOR/FLOOP/TLOOP, gelu_f and softplus_f in scope; it #undefs UN_T and UN_NAME at its
 * end. Include it nowhere else.
 *
 * Cases: U_ACT (the cd_act kinds, engine/ops.h), the standalone-only kinds of the op table
 * (CD_K_<type>, engine/op_list.def: the same numbers as the kernels' K_<TYPE>), U_AFFINE
 * (scale, dropout) and U_PRELU. p0, p1: the entry's attribute slots 0 and 1. */
#ifndef UN_T
#error "a part of ops_basic_act.c's template body: included by ops_basic_act.c only"
#endif

static void UN_NAME(const UN_T *in, UN_T *out, int64_t n, const un_cfg *u, int threads) {
    const cd_act A = u->act;
    const float p0 = u->p0, p1 = u->p1;
    switch (u->kind) {
    case U_ACT:
        switch (A.kind) {
        case CD_ACT_NONE: TLOOP(UN_T, x); break;
        case CD_ACT_RELU: TLOOP(UN_T, x < (UN_T)0 ? (UN_T)0 : x); break;
        case CD_ACT_RELU6: {
            const float t = A.a;
            FLOOP(UN_T, x < 0.0f ? 0.0f : (x > t ? t : x));
            break;
        }
        case CD_ACT_LEAKY_RELU: {
            const float a = A.a;
            FLOOP(UN_T, x < 0.0f ? a * x : x);
            break;
        }
        case CD_ACT_ABS: FLOOP(UN_T, fabsf(x)); break;
        case CD_ACT_HARD_SIGMOID: {
            const float a = A.a, b = A.b;
            FLOOP(UN_T, (a * x + b) < 0.0f ? 0.0f : ((a * x + b) > 1.0f ? 1.0f : (a * x + b)));
            break;
        }
        case CD_ACT_HARD_SWISH: {
            const float th = A.a, sc = A.b, of = A.c;
            FLOOP(UN_T, x * ((x + of) < 0.0f ? 0.0f : ((x + of) > th ? th : (x + of))) / sc);
            break;
        }
        case CD_ACT_GELU: {
            const bool ap = A.a != 0.0f;
            FLOOP(UN_T, gelu_f(x, ap));
            break;
        }
        /* the libm kinds as cd_act_apply writes them, without its call and switch per element */
        case CD_ACT_SIGMOID: FLOOP(UN_T, 1.0f / (1.0f + expf(-x))); break;
        case CD_ACT_SWISH: {
            const float a = A.a;
            FLOOP(UN_T, x / (1.0f + expf(-a * x)));
            break;
        }
        case CD_ACT_TANH: FLOOP(UN_T, tanhf(x)); break;
        case CD_ACT_EXP: FLOOP(UN_T, expf(x)); break;
        default: FLOOP(UN_T, cd_act_apply(&A, x)); break;
        }
        break;
    case CD_K_log: FLOOP(UN_T, logf(x)); break;
    case CD_K_rsqrt: FLOOP(UN_T, 1.0f / sqrtf(x)); break;
    case CD_K_square: TLOOP(UN_T, x * x); break;
    case CD_K_reciprocal: TLOOP(UN_T, (UN_T)1 / x); break;
    case CD_K_floor: FLOOP(UN_T, floorf(x)); break;
    case CD_K_ceil: FLOOP(UN_T, ceilf(x)); break;
    case CD_K_erf: FLOOP(UN_T, erff(x)); break;
    case CD_K_sign: FLOOP(UN_T, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x)); break;
    case CD_K_elu: FLOOP(UN_T, x > 0.0f ? x : p0 * expm1f(x)); break;
    case CD_K_thresholded_relu: FLOOP(UN_T, x > p0 ? x : 0.0f); break;
    case CD_K_softplus: FLOOP(UN_T, softplus_f(x, p0, p1)); break;
    case CD_K_mish: FLOOP(UN_T, x * tanhf(softplus_f(x, 1.0f, p0))); break;
    case CD_K_softsign: FLOOP(UN_T, x / (1.0f + fabsf(x))); break;
    case CD_K_clip: { /* also relu_clipped: min(max(x, lo), hi) */
        const UN_T lo = (UN_T)p0, hi = (UN_T)p1, lc = lo > hi ? hi : lo;
        TLOOP(UN_T, x < lo ? lc : (x > hi ? hi : x));
        break;
    }
    case U_AFFINE: {
        const UN_T s = (UN_T)p0, b = (UN_T)p1;
        if (u->p2 != 0.0f)
            TLOOP(UN_T, (x + b) * s);
        else
            TLOOP(UN_T, x * s + b);
        if (A.kind != CD_ACT_NONE) {
            PFOR({ out[i] = (UN_T)cd_act_apply(&A, (float)out[i]); });
        }
        if (u->scaleact) {
            const UN_T s1 = (UN_T)u->s1, b1 = (UN_T)u->b1;
            PFOR({ out[i] = out[i] * s1 + b1; });
        }
        break;
    }
    case U_PRELU: {
        const UN_T *al = u->alpha;
        const int64_t inner = u->inner, ch = u->chans, ps = u->per_sample, mode = u->amode;
        PFOR({
            const UN_T x = in[i];
            UN_T a = mode == 0 ? al[0] : (mode == 1 ? al[(i / inner) % ch] : al[i % ps]);
            out[i] = x < (UN_T)0 ? a * x : x;
        });
        break;
    }
    }
}

#undef UN_T
#undef UN_NAME
