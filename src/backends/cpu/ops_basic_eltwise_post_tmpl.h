/* The fused post-stage of ops_basic_eltwise.c on a float or half output: the optional affine
 * (fuse_scale), then the activation, in float.
 *
 * A part of ops_basic_eltwise.c's template body: included with PS_T (the element type) and
 * PS_NAME (the function's name) defined, elt_cfg, gelu_f, CD_PAR_FOR and PAR_MIN in scope;
 * #undefs both at its end (docs/design.md §7). */
#ifndef PS_T
#error "a part of ops_basic_eltwise.c's template body: included by ops_basic_eltwise.c only"
#endif

static void PS_NAME(PS_T *o, int64_t n, const elt_cfg *e, int threads) {
    const cd_act a = e->act;
    const float sc = e->scale, bi = e->bias;
    const bool aff = e->fuse_scale;
    CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, {
        float v = (float)o[i];
        if (aff) v = sc * v + bi;
        o[i] = (PS_T)(a.kind == CD_ACT_GELU ? gelu_f(v, a.a != 0.0f) : cd_act_apply(&a, v));
    });
}

#undef PS_T
#undef PS_NAME
