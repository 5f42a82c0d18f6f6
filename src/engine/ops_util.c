/* Helpers shared by op implementations: slot access, error messages naming the op,
 * fused activations (parsing from attributes and applying). */
#include "engine/ops.h"
#include "engine/op_list.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

cd_value *cd_in(cd_op_ctx *c, const char *slot, int idx) {
    int id = cd_op_in(c->op, slot, idx);
    return id < 0 ? NULL : &c->vals[id];
}

cd_value *cd_out(cd_op_ctx *c, const char *slot, int idx) {
    int id = cd_op_out(c->op, slot, idx);
    return id < 0 ? NULL : &c->vals[id];
}

cd_status cd_op_fail(cd_op_ctx *c, cd_status code, const char *fmt, ...) {
    char body[CD_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    return cd_err(c->err, code, "op #%d %s (%s): %s", c->op_index, c->op->name ? c->op->name : "?",
                  c->op->type ? c->op->type : "?", body);
}

cd_value *cd_in_req(cd_op_ctx *c, const char *slot, int idx) {
    cd_value *v = cd_in(c, slot, idx);
    if (!v)
        cd_op_fail(c, CD_E_MODEL,
                   "required input %s[%d] is not connected; the model is malformed "
                   "(check the converter output)",
                   slot, idx);
    return v;
}

/* ---- fused activations ---- */

/* The fused activations are the op table's CD_OPL_FUSED_ACT entries (engine/op_list.def): their
 * names, kinds (cd_act_kind) and the defaults of their standalone ops (docs/nb-format.md §7.21). */
static const cd_op_info *fused_act(cd_act_kind k) {
    for (int i = 0; i < CD_OPID_COUNT; i++) {
        const cd_op_info *oi = cd_op_info_at((cd_op_id)i);
        if ((oi->flags & CD_OPL_FUSED_ACT) && oi->kind == (int)k) return oi;
    }
    return NULL;
}

const char *cd_act_name(cd_act_kind k) {
    if (k == CD_ACT_NONE) return "none";
    const cd_op_info *oi = fused_act(k);
    return oi ? oi->type : "?";
}

static void act_defaults(cd_act *a, cd_act_kind k) {
    cd_op_params p = {{0, 0, 0}};
    const cd_op_info *oi = k == CD_ACT_NONE ? NULL : fused_act(k);
    if (oi) cd_op_params_parse(NULL, oi, &p); /* no op: every slot its default */
    *a = (cd_act){k, p.v[0], p.v[1], p.v[2]};
}

cd_status cd_act_from_name(cd_op_ctx *c, const char *name, cd_act *out) {
    act_defaults(out, CD_ACT_NONE);
    if (!name || !name[0]) return CD_OK;
    const cd_op_info *oi = cd_op_info_find(name);
    if (oi && (oi->flags & CD_OPL_FUSED_ACT)) {
        act_defaults(out, (cd_act_kind)oi->kind);
        return CD_OK;
    }
    return cd_op_fail(c, CD_E_UNSUPPORTED,
                      "unknown fused activation '%s' (known: relu, relu6, leaky_relu, sigmoid, tanh, "
                      "swish, hard_swish, hard_sigmoid, prelu, abs, gelu, exp, sqrt)",
                      name);
}

/* A FLOAT attribute as stored. NaN and Inf are taken as they are, as Paddle-Lite computes with
 * them (docs/int8.md §1: refuse only what it refuses); the outputs then show them. */
static cd_status float_attr(cd_op_ctx *c, const char *name, float dflt, float *out) {
    (void)c;
    *out = (float)cd_attr_float(c->op, name, dflt);
    return CD_OK;
}

cd_status cd_act_from_conv(cd_op_ctx *c, cd_act *out) {
    act_defaults(out, CD_ACT_NONE);
    /* Only with_act/act_type count: a bare fuse_relu left over from training must not act. */
    if (!cd_attr_bool(c->op, "with_act", false)) return CD_OK;
    const char *t = cd_attr_str(c->op, "act_type", "");
    if (!t[0]) return cd_op_fail(c, CD_E_MODEL, "with_act is true but act_type is empty or missing");
    cd_status s = cd_act_from_name(c, t, out);
    if (s) return s;
    switch (out->kind) {
    case CD_ACT_RELU6: return float_attr(c, "fuse_brelu_threshold", 6.0f, &out->a);
    case CD_ACT_LEAKY_RELU: return float_attr(c, "leaky_relu_alpha", 0.02f, &out->a);
    case CD_ACT_SWISH: return float_attr(c, "swish_scale", 1.0f, &out->a);
    case CD_ACT_HARD_SWISH:
        if ((s = float_attr(c, "hard_swish_threshold", 6.0f, &out->a))) return s;
        if ((s = float_attr(c, "hard_swish_scale", 6.0f, &out->b))) return s;
        if ((s = float_attr(c, "hard_swish_offset", 3.0f, &out->c))) return s;
        return CD_OK; /* scale 0: x * t / 0 gives +-Inf or NaN, as in Paddle-Lite */
    case CD_ACT_HARD_SIGMOID:
        if ((s = float_attr(c, "slope", 0.2f, &out->a))) return s;
        return float_attr(c, "offset", 0.5f, &out->b);
    case CD_ACT_PRELU: {
        const char *m = cd_attr_str(c->op, "prelu_mode", "channel");
        if (strcmp(m, "all") && strcmp(m, "channel") && strcmp(m, "element"))
            return cd_op_fail(c, CD_E_MODEL, "prelu_mode '%s' is not one of all, channel, element", m);
        return CD_OK;
    }
    case CD_ACT_GELU:
    case CD_ACT_EXP:
    case CD_ACT_SQRT: return cd_op_fail(c, CD_E_UNSUPPORTED, "act_type '%s' is not a conv fused activation", t);
    default: return CD_OK;
    }
}

cd_status cd_act_from_op(cd_op_ctx *c, const char *kind_attr, cd_act *out) {
    cd_status s = cd_act_from_name(c, cd_attr_str(c->op, kind_attr, ""), out);
    if (s) return s;
    /* fc and elementwise_mul(fuse_scale) carry the relu6 clip in FLOAT `alpha`. */
    if (out->kind == CD_ACT_RELU6) return float_attr(c, "alpha", 6.0f, &out->a);
    if (out->kind == CD_ACT_GELU) out->a = cd_attr_bool(c->op, "approximate", false) ? 1.0f : 0.0f;
    return CD_OK;
}

cd_status cd_act_from_standalone(cd_op_ctx *c, cd_act *out) {
    const cd_op_info *oi = cd_op_info_find(c->op->type);
    act_defaults(out, CD_ACT_NONE);
    if (!oi || oi->group != CD_OPL_ACT || oi->kind < 0 || oi->kind > CD_ACT_SQRT)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "'%s' is not a standalone activation of the op table", c->op->type);
    cd_op_params p;
    cd_op_params_parse(c->op, oi, &p); /* the attributes and defaults of op_list.def */
    *out = (cd_act){(cd_act_kind)oi->kind, p.v[0], p.v[1], p.v[2]};
    return CD_OK;
}

float cd_act_apply(const cd_act *a, float x) {
    switch (a->kind) {
    case CD_ACT_NONE: return x;
    /* Comparisons written so that NaN propagates (x > 0 is false for NaN -> returns x). */
    case CD_ACT_RELU: return x < 0.0f ? 0.0f : x;
    case CD_ACT_RELU6: return x < 0.0f ? 0.0f : (x > a->a ? a->a : x);
    case CD_ACT_LEAKY_RELU:
    case CD_ACT_PRELU: return x < 0.0f ? a->a * x : x;
    case CD_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case CD_ACT_TANH: return tanhf(x);
    case CD_ACT_SWISH: return x / (1.0f + expf(-a->a * x));
    case CD_ACT_HARD_SWISH: {
        float t = x + a->c;
        t = t < 0.0f ? 0.0f : (t > a->a ? a->a : t);
        return x * t / a->b;
    }
    case CD_ACT_HARD_SIGMOID: {
        float t = a->a * x + a->b;
        return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    }
    case CD_ACT_ABS: return fabsf(x);
    case CD_ACT_GELU:
        if (a->a != 0.0f) {
            const float k = 0.7978845608028654f; /* sqrt(2/pi) */
            return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
        }
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case CD_ACT_EXP: return expf(x);
    case CD_ACT_SQRT: return sqrtf(x);
    }
    return x;
}
