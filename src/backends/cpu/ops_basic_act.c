/* Unary float ops: standalone activations (docs/nb-format.md §7.21), prelu, clip, scale (§7.10) and
 * dropout. The kernel is one body (ops_basic_act_tmpl.h) instantiated for float and _Float16;
 * which op is which kind, and its attributes with their defaults, come from the op table
 * (engine/op_list.def).
 *
 * Precision: affine ops (scale, dropout, prelu, square, reciprocal, clip) compute in the
 * tensor's own type, so fp16 runs use half arithmetic with one rounding per operation;
 * transcendental ones (sigmoid, tanh, exp, log, erf, gelu, ...) evaluate the float formula on
 * the half input and round once, which is what a half kernel with float intermediates gives.
 * The fused-activation kinds use exactly the formulas of cd_act_apply (engine/ops_util.c):
 * the cheap kinds are inlined here for speed, the others call it -- except gelu, which is
 * evaluated in a cancellation-free form (gelu_f) so small negative outputs stay accurate. */
#include "backends/cpu/par.h"
#include "engine/ops.h"
#include "engine/op_list.h"
#include <float.h>
#include <math.h>
#include <string.h>

typedef _Float16 f16;

#define PAR_MIN 32768

/* un_cfg.kind: U_ACT (a cd_act kind), a standalone-only kind of the op table (CD_K_<type>,
 * 20 and up: engine/op_list.def), U_AFFINE or U_PRELU. */
enum { U_ACT = 0, U_AFFINE = 1000 /* scale, dropout: x * p0 + p1 (bias first when p2 != 0) */, U_PRELU };
_Static_assert(CD_ACT_SQRT < 20, "the op table's standalone-only kinds start at 20");

typedef struct {
    int kind;
    cd_act act;       /* U_ACT; also scale's fused activation */
    float p0, p1, p2; /* per-kind parameters */
    float s1, b1;     /* scale: fuse_scaleact second affine stage */
    bool scaleact;
    /* prelu */
    const void *alpha;
    int64_t amode, inner, chans; /* 0 all, 1 channel, 2 element */
    int64_t per_sample;
} un_cfg;

/* gelu written without cancellation: 1 + erf(-t) = erfc(t) and 1 + tanh(y) = 2 sigmoid(2y),
 * so the result keeps full relative precision for negative x (the textbook forms lose all
 * digits below x = -4 in float). */
static inline float gelu_f(float x, bool approx) {
    if (approx) {
        const float y = 0.7978845608028654f * (x + 0.044715f * x * x * x);
        return x / (1.0f + expf(-2.0f * y));
    }
    return 0.5f * x * erfcf(-x * 0.7071067811865476f);
}

static inline float softplus_f(float x, float beta, float thr) {
    float bx = beta * x;
    return bx > thr ? x : log1pf(expf(bx)) / beta;
}

/* PFOR(body): body over i in [0, n), on threads from PAR_MIN elements (backends/cpu/par.h).
 * FLOOP: float formula on each element; TLOOP: arithmetic in the storage type T. */
#define PFOR(...) CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, __VA_ARGS__)
#define FLOOP(T, EXPR)                                                                                                 \
    PFOR({                                                                                                             \
        const float x = (float)in[i];                                                                                  \
        out[i] = (T)(EXPR);                                                                                            \
    })
#define TLOOP(T, EXPR)                                                                                                 \
    PFOR({                                                                                                             \
        const T x = in[i];                                                                                             \
        out[i] = (EXPR);                                                                                               \
    })

#define UN_T float
#define UN_NAME unary_f32
#include "ops_basic_act_tmpl.h"
#define UN_T f16
#define UN_NAME unary_f16
#include "ops_basic_act_tmpl.h"

/* ------------------------------------------------------------------ op glue */

static cd_status fattr(cd_op_ctx *c, const char *name, double dflt, bool required, float *out) {
    if (required && !cd_op_attr(c->op, name))
        return cd_op_fail(c, CD_E_MODEL, "required FLOAT attribute '%s' is missing", name);
    *out = (float)cd_attr_float(c->op, name, dflt); /* NaN/Inf as stored (docs/int8.md §1) */
    return CD_OK;
}

/* A 1-element float tensor input (scale's ScaleTensor, clip's Min/Max) read at run time;
 * at plan time (no data yet) only its size is checked. */
static cd_status scalar_input(cd_op_ctx *c, const char *slot, float *out) {
    cd_value *v = cd_in(c, slot, 0);
    if (!v) return CD_OK;
    if (cd_value_numel(v) != 1)
        return cd_op_fail(c, CD_E_MODEL, "input %s must hold exactly 1 element, it holds %lld", slot,
                          (long long)cd_value_numel(v));
    if (v->data) *out = (float)cd_value_get(v, 0); /* NaN/Inf as it is */
    return CD_OK;
}

static cd_status un_config(cd_op_ctx *c, const cd_value *x, un_cfg *u) {
    memset(u, 0, sizeof *u);
    const char *t = c->op->type;
    const cd_op_info *oi = cd_op_info_find(t);
    cd_status s;
    if (oi && oi->group == CD_OPL_ACT) {
        /* kind and attributes from the op table (engine/op_list.def), parsed once */
        if (oi->kind <= CD_ACT_SQRT) {
            u->kind = U_ACT;
            return cd_act_from_standalone(c, &u->act);
        }
        cd_op_params p;
        cd_op_params_parse(c->op, oi, &p);
        u->kind = oi->kind;
        u->p0 = p.v[0];
        u->p1 = p.v[1];
        /* clip: Min / Max tensors override min / max; min > max: Paddle-Lite computes
         * min(max(x, min), max) = max everywhere; so does cldiff. softplus beta 0: the
         * division gives Inf/NaN */
        if (oi->id == CD_OPID_clip && ((s = scalar_input(c, "Min", &u->p0)) || (s = scalar_input(c, "Max", &u->p1))))
            return s;
        return CD_OK;
    }
    u->kind = oi && oi->id == CD_OPID_prelu ? U_PRELU : U_AFFINE; /* scale, dropout */
    switch (u->kind) {
    case U_AFFINE:
        if (oi && oi->id == CD_OPID_dropout) {
            float p = 0.5f;
            if ((s = fattr(c, "dropout_prob", 0.5, false, &p))) return s;
            /* lite/kernels/arm/dropout_compute.cc: upscale_in_train copies, any other value scales by
             * 1 - dropout_prob (whatever its value): so does cldiff */
            const char *impl = cd_attr_str(c->op, "dropout_implementation", "downgrade_in_infer");
            u->p0 = !strcmp(impl, "upscale_in_train") ? 1.0f : 1.0f - p;
            return CD_OK;
        }
        /* scale: scale/bias/bias_after_scale are required (docs/nb-format.md §7.10) */
        if ((s = fattr(c, "scale", 1.0, true, &u->p0)) || (s = fattr(c, "bias", 0.0, true, &u->p1))) return s;
        if (!cd_op_attr(c->op, "bias_after_scale"))
            return cd_op_fail(c, CD_E_MODEL, "required BOOLEAN attribute 'bias_after_scale' is missing");
        u->p2 = cd_attr_bool(c->op, "bias_after_scale", true) ? 0.0f : 1.0f;
        if ((s = scalar_input(c, "ScaleTensor", &u->p0))) return s;
        {
            const char *an = cd_attr_str(c->op, "activation_type", "");
            if (an[0]) {
                if ((s = cd_act_from_op(c, "activation_type", &u->act))) return s;
                if (u->act.kind == CD_ACT_LEAKY_RELU && (s = fattr(c, "alpha", 0.02, false, &u->act.a))) return s;
                if (u->act.kind != CD_ACT_RELU && u->act.kind != CD_ACT_RELU6 && u->act.kind != CD_ACT_LEAKY_RELU)
                    return cd_op_fail(c, CD_E_MODEL, "scale activation_type '%s' is not relu, relu6 or leaky_relu", an);
            }
        }
        if (cd_attr_bool(c->op, "fuse_scaleact", false)) {
            u->scaleact = true;
            if ((s = fattr(c, "scale1", 1.0, false, &u->s1)) || (s = fattr(c, "bias1", 0.0, false, &u->b1))) return s;
        }
        return CD_OK;
    case U_PRELU: {
        const char *m = cd_attr_str(c->op, "mode", "all");
        cd_value *al = cd_in(c, "Alpha", 0);
        if (!al) return cd_op_fail(c, CD_E_MODEL, "required input Alpha is not connected");
        if (al->dtype != x->dtype)
            return cd_op_fail(c, CD_E_MODEL, "Alpha is %s but X is %s", cd_dtype_name(al->dtype),
                              cd_dtype_name(x->dtype));
        int64_t an = cd_value_numel(al), xn = cd_value_numel(x);
        if (!strcmp(m, "all")) {
            u->amode = 0;
            if (an < 1)
                return cd_op_fail(c, CD_E_MODEL, "prelu mode 'all' needs at least 1 alpha value, Alpha is empty");
        } else if (!strcmp(m, "channel")) {
            u->amode = 1;
            if (x->shape.rank < 2) return cd_op_fail(c, CD_E_MODEL, "prelu mode 'channel' needs X of rank >= 2");
            u->chans = x->shape.d[1];
            u->inner = 1;
            for (int i = 2; i < x->shape.rank; i++) u->inner *= x->shape.d[i];
            if (an != u->chans)
                return cd_op_fail(c, CD_E_MODEL, "prelu mode 'channel': Alpha has %lld values but X has %lld channels",
                                  (long long)an, (long long)u->chans);
            if (u->inner == 0) u->inner = 1;
        } else if (!strcmp(m, "element")) {
            /* One alpha per element of a sample (dims 1..end); the alpha repeats per batch item.
             * (Lite ARM indexes with the batch offset too, i.e. assumes batch 1: same for N = 1.) */
            u->amode = 2;
            u->per_sample = x->shape.rank > 0 && x->shape.d[0] > 0 ? xn / x->shape.d[0] : xn;
            if (an != u->per_sample && an != xn)
                return cd_op_fail(c, CD_E_MODEL,
                                  "prelu mode 'element': Alpha has %lld values, expected %lld "
                                  "(one per element of a sample)",
                                  (long long)an, (long long)u->per_sample);
            if (u->per_sample == 0) u->per_sample = 1;
        } else {
            return cd_op_fail(c, CD_E_MODEL, "prelu mode '%s' is not one of all, channel, element", m);
        }
        u->alpha = al->data;
        return CD_OK;
    }
    default: return CD_OK;
    }
}

cd_status cd_basic_unary_infer(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0);
    if (!x) return cd_op_fail(c, CD_E_MODEL, "required input X is not connected");
    cd_value *o = cd_out(c, "Out", 0);
    if (!o) return cd_op_fail(c, CD_E_MODEL, "output Out is not connected");
    un_cfg u;
    cd_status s = un_config(c, x, &u);
    if (s) return s;
    bool is_int = x->dtype == CD_I32 || x->dtype == CD_I64, is_scale = cd_op_id_of(c->op->type) == CD_OPID_scale;
    if (x->dtype != CD_F32 && x->dtype != CD_F16 && !(is_int && is_scale))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "element type %s is not supported (float32 or float16%s)",
                          cd_dtype_name(x->dtype), is_scale ? ", int32, int64" : "");
    if (is_int && (u.act.kind != CD_ACT_NONE || u.scaleact))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "a fused activation on an integer scale is not supported");
    o->shape = x->shape;
    o->dtype = x->dtype;
    cd_value *mask = cd_out(c, "Mask", 0);
    if (mask) { /* dropout's training mask: nothing reads it at inference, allocate nothing */
        mask->shape.rank = 1;
        mask->shape.d[0] = 0;
        mask->dtype = CD_U8;
    }
    return CD_OK;
}

/* Integer scale: computed in double, truncated toward zero and saturated (Paddle casts the
 * float result back to the integer type; ops_basic_act_iscale_tmpl.h). */
#define IS_T int32_t
#define IS_NAME iscale_i32
#define IS_LO INT32_MIN
#define IS_HI INT32_MAX
#include "ops_basic_act_iscale_tmpl.h"
#define IS_T int64_t
#define IS_NAME iscale_i64
#define IS_LO INT64_MIN
#define IS_HI INT64_MAX
#include "ops_basic_act_iscale_tmpl.h"

cd_status cd_basic_unary_run(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    un_cfg u;
    cd_status s = un_config(c, x, &u);
    if (s) return s;
    int64_t n = cd_value_numel(x);
    if (n != cd_value_numel(o) || x->dtype != o->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (n == 0) return CD_OK;
    if (!x->data || !o->data || (u.kind == U_PRELU && !u.alpha))
        return cd_op_fail(c, CD_E_INTERNAL, "input or output data is missing");
    int th = c->threads > 0 ? c->threads : 1;
    switch (x->dtype) {
    case CD_F32: unary_f32(x->data, o->data, n, &u, th); break;
    case CD_F16: unary_f16(x->data, o->data, n, &u, th); break;
    case CD_I32: iscale_i32(x->data, o->data, n, &u); break;
    case CD_I64: iscale_i64(x->data, o->data, n, &u); break;
    default: return cd_op_fail(c, CD_E_INTERNAL, "unexpected element type %s", cd_dtype_name(x->dtype));
    }
    return CD_OK;
}
