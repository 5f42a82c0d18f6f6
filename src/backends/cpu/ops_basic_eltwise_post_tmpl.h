/* The fused post-stage of ops_basic_eltwise.c on a float or half output: the optional affine
 * (fuse_scale), then the activation, in float.
 *
 * A part of ops_basic_eltwise.c's template body: included with PS_T (the element type) and
 * PS_NAME (the function's name) defined, elt_cfg, gelu_f, CD_PAR_FOR and PAR_MIN in scope;
 * #undefs both at its end (docs/design.md §7). */
#ifndef PS_T
#error "a part of ops_basic_eltwise.c's template body: included by ops_basic_eltwise.c only"
#endif

/* The cheap activations inline, written exactly as cd_act_apply (engine/ops_util.c) writes
 * them: a call per element into another file was most of a residual add's time (19% of
 * resnet50's warm run was cd_act_apply under its five add + relu fusions). */
#define PS_LOOP(EXPR)                                                                                                  \
    CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, {                                                                 \
        float v = (float)o[i];                                                                                         \
        if (aff) v = sc * v + bi;                                                                                      \
        o[i] = (PS_T)(EXPR);                                                                                           \
    })
static void PS_NAME(PS_T *o, int64_t n, const elt_cfg *e, int threads) {
    const cd_act a = e->act;
    const float sc = e->scale, bi = e->bias;
    const bool aff = e->fuse_scale;
    const float aa = a.a, ab = a.b, ac = a.c;
    switch (a.kind) {
    case CD_ACT_NONE: PS_LOOP(v); break;
    case CD_ACT_RELU: PS_LOOP(v < 0.0f ? 0.0f : v); break;
    case CD_ACT_RELU6: PS_LOOP(v < 0.0f ? 0.0f : (v > aa ? aa : v)); break;
    case CD_ACT_LEAKY_RELU: PS_LOOP(v < 0.0f ? aa * v : v); break;
    case CD_ACT_HARD_SWISH: PS_LOOP(v * ((v + ac) < 0.0f ? 0.0f : ((v + ac) > aa ? aa : (v + ac))) / ab); break;
    case CD_ACT_GELU: PS_LOOP(gelu_f(v, aa != 0.0f)); break;
    default: PS_LOOP(cd_act_apply(&a, v)); break;
    }
}
#undef PS_LOOP

#undef PS_T
#undef PS_NAME
