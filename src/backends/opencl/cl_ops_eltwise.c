/* Dispatchers of kernels/eltwise.cl: standalone activations, prelu, scale, binary
 * elementwise ops with Paddle axis broadcasting (strides computed here), fused
 * elementwise+activation. Semantics follow the CPU kernels (ops_basic_eltwise.c and the
 * activation helpers of engine/ops_util.c). */
#include "backends/cpu/ops_util.h"
#include "backends/opencl/cl_ops_util.h"
#include "engine/op_list.h"
#include <float.h>
#include <math.h>
#include <string.h>

typedef struct {
    int kind;
    float a, b, c;
} ew_act;

static cd_status float_attr(cd_cl_ctx *c, const char *name, double dflt, float *out, cd_error *err) {
    (void)err; /* NaN/Inf as stored, as the CPU side (docs/int8.md §1) */
    *out = (float)cd_attr_float(c->op, name, dflt);
    return CD_OK;
}

/* clip's Min / Max tensor when its value is known at plan time (a parameter or a folded
 * constant): read here with the CPU's checks. A run-time value is left to clip_t. */
static cd_status plan_scalar(cd_cl_ctx *c, const char *slot, float *out, cd_error *err) {
    int t = clu_in(c, slot, 0);
    if (t < 0) return CD_OK;
    const cd_value *m = clu_meta(c, t);
    if (!m || cd_value_numel(m) != 1) return clu_fail(c, err, CD_E_MODEL, "input %s must hold exactly 1 element", slot);
    if (!m->data) return CD_OK;
    *out = (float)cd_value_get(m, 0); /* NaN/Inf as it is */
    return CD_OK;
}

/* Activation of a standalone (ACT) op: its kernel kind and attributes from the op table
 * (engine/op_list.def), parsed with the CPU's defaults; clip's Min / Max when known at plan time. */
static cd_status standalone_act(cd_cl_ctx *c, ew_act *a, cd_error *err) {
    const cd_op_info *oi = cd_op_info_find(c->op->type);
    if (!oi || oi->group != CD_OPL_ACT)
        return clu_fail(c, err, CD_E_INTERNAL, "not a standalone activation (op table)");
    cd_op_params p;
    cd_op_params_parse(c->op, oi, &p);
    a->kind = oi->kind;
    a->a = p.v[0];
    a->b = p.v[1];
    a->c = p.v[2];
    if (oi->id == CD_OPID_clip) {
        cd_status s = plan_scalar(c, "Min", &a->a, err);
        if (!s) s = plan_scalar(c, "Max", &a->b, err);
        return s;
    }
    return CD_OK;
}

static cd_status launch_act(cd_cl_ctx *c, int x, int y, const ew_act *a, int alpha, int amode, int64_t C, int64_t inner,
                            cd_error *err) {
    cd_status s;
    cl_mem ba = NULL;
    int64_t n = cd_value_numel(clu_meta(c, y));
    if ((s = clu_need_float(c, x, "input X", err)) || (s = clu_fits(c, n, "element count", err))) return s;
    if (cd_value_numel(clu_meta(c, x)) != n)
        return clu_fail(c, err, CD_E_INTERNAL, "input and output element counts differ (planner bug)");
    clu_args g;
    if ((alpha >= 0 && (s = clu_buf(c, alpha, &ba, err))) || (s = CLU_BEGIN(&g, c, "eltwise", "act", err, x, y)))
        return s;
    clu_int(&g, n);
    clu_int(&g, a->kind);
    clu_flt(&g, a->a);
    clu_flt(&g, a->b);
    clu_flt(&g, a->c);
    clu_mem(&g, ba);
    clu_int(&g, amode);
    clu_int(&g, C);
    clu_int(&g, inner);
    return clu_end(&g, n);
}

static cd_status launch_clip_t(cd_cl_ctx *c, int x, int y, const ew_act *a, int tmin, int tmax, cd_error *err) {
    cd_status s;
    cl_mem bmin = NULL, bmax = NULL;
    int64_t n = cd_value_numel(clu_meta(c, y));
    if ((s = clu_need_float(c, x, "input X", err)) || (s = clu_fits(c, n, "element count", err))) return s;
    if (tmin >= 0 && ((s = clu_need_float(c, tmin, "input Min", err)) || (s = clu_buf(c, tmin, &bmin, err)))) return s;
    if (tmax >= 0 && ((s = clu_need_float(c, tmax, "input Max", err)) || (s = clu_buf(c, tmax, &bmax, err)))) return s;
    if (cd_value_numel(clu_meta(c, x)) != n)
        return clu_fail(c, err, CD_E_INTERNAL, "input and output element counts differ (planner bug)");
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "eltwise", "clip_t", err, x, y))) return s;
    clu_int(&g, n);
    clu_flt(&g, a->a);
    clu_flt(&g, a->b);
    clu_mem(&g, bmin);
    clu_mem(&g, bmax);
    return clu_end(&g, n);
}

static cd_status op_act(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    ew_act a;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if ((s = standalone_act(c, &a, err))) return s;
    if (cd_op_id_of(c->op->type) == CD_OPID_clip) {
        /* Min / Max produced at run time: the kernel reads them from their device buffers */
        int tmin = clu_in(c, "Min", 0), tmax = clu_in(c, "Max", 0);
        if (tmin >= 0 && clu_meta(c, tmin)->data) tmin = -1;
        if (tmax >= 0 && clu_meta(c, tmax)->data) tmax = -1;
        if (tmin >= 0 || tmax >= 0) return launch_clip_t(c, x, y, &a, tmin, tmax, err);
    }
    return launch_act(c, x, y, &a, -1, 0, 1, 1, err);
}

static cd_status op_prelu(cd_cl_ctx *c, cd_error *err) {
    int x, y, al;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_in(c, "Alpha", 0, &al, err)) ||
        (s = clu_need_out(c, "Out", 0, &y, err)))
        return s;
    if ((s = clu_need_float(c, al, "input Alpha", err))) return s;
    const char *ms = cd_attr_str(c->op, "mode", "all");
    int mode = clu_prelu_mode(ms);
    if (mode < 0) return clu_fail(c, err, CD_E_MODEL, "mode '%s' is not one of all, channel, element", ms);
    const cd_shape *xs = &clu_meta(c, x)->shape;
    int64_t C = xs->rank >= 2 ? xs->d[1] : 1, inner = 1, na = cd_value_numel(clu_meta(c, al));
    for (int i = 2; i < xs->rank; i++) inner *= xs->d[i];
    int64_t need = mode == 0 ? 1 : (mode == 1 ? C : C * inner);
    if (na < need)
        return clu_fail(c, err, CD_E_MODEL, "Alpha has %lld values; mode '%s' needs %lld", (long long)na, ms,
                        (long long)need);
    ew_act a = {CD_ACT_PRELU, 0, 0, 0};
    return launch_act(c, x, y, &a, al, mode, C, inner, err);
}

static cd_status op_scale(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    if (clu_in(c, "ScaleTensor", 0) >= 0)
        return clu_fail(c, err, CD_E_UNSUPPORTED, "a ScaleTensor input is read on the host; this op runs on the CPU");
    float sc = 1.0f, bias = 0.0f, s1 = 1.0f, b1 = 0.0f;
    bool after = true;
    cd_op_ctx oc;
    cd_act act = {CD_ACT_NONE, 0, 0, 0};
    clu_op_ctx(c, &oc, err);
    if (cd_op_id_of(c->op->type) == CD_OPID_dropout) {
        /* downgrade_in_infer scales by 1 - p at inference; upscale_in_train is the identity */
        float p;
        if ((s = float_attr(c, "dropout_prob", 0.5, &p, err))) return s;
        const char *impl = cd_attr_str(c->op, "dropout_implementation", "downgrade_in_infer");
        sc = !strcmp(impl, "upscale_in_train") ? 1.0f : 1.0f - p; /* as the CPU side (ops_basic_act.c) */
    } else {
        if ((s = float_attr(c, "scale", 1.0, &sc, err)) || (s = float_attr(c, "bias", 0.0, &bias, err))) return s;
        after = cd_attr_bool(c->op, "bias_after_scale", true);
        const char *an = cd_attr_str(c->op, "activation_type", "");
        if ((s = cd_act_from_name(&oc, an, &act))) return s;
        if (act.kind == CD_ACT_RELU6 || act.kind == CD_ACT_LEAKY_RELU) {
            if ((s = float_attr(c, "alpha", act.kind == CD_ACT_RELU6 ? 6.0 : 0.02, &act.a, err))) return s;
        } else if (act.kind != CD_ACT_NONE && act.kind != CD_ACT_RELU) {
            return clu_fail(c, err, CD_E_MODEL, "activation_type '%s' is not a scale fusion (relu, relu6, leaky_relu)",
                            an);
        }
    }
    bool has2 = cd_attr_bool(c->op, "fuse_scaleact", false);
    if (has2 && ((s = float_attr(c, "scale1", 1.0, &s1, err)) || (s = float_attr(c, "bias1", 0.0, &b1, err)))) return s;
    int64_t n = cd_value_numel(clu_meta(c, y));
    if ((s = clu_fits(c, n, "element count", err))) return s;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "eltwise", "scale", err, x, y))) return s;
    clu_int(&g, n);
    clu_flt(&g, sc);
    clu_flt(&g, bias);
    clu_int(&g, after);
    clu_int(&g, act.kind);
    clu_flt(&g, act.a);
    clu_flt(&g, act.b);
    clu_flt(&g, act.c);
    clu_int(&g, has2);
    clu_flt(&g, s1);
    clu_flt(&g, b1);
    return clu_end(&g, n);
}

/* ---- binary ops ---- */

/* The binary kernel's op code (K_ELEMENTWISE_<OP>, the op table's kind); -1 for other types. */
static int binop_code(const char *t) {
    const cd_op_info *oi = cd_op_info_find(t);
    bool binary = !strncmp(t, "elementwise_", 12) || !strncmp(t, "fusion_elementwise_", 19);
    return oi && oi->kind >= 0 && binary ? oi->kind : -1;
}

/* Merged iteration dims and element strides (0 = broadcast) of out = X op Y, docs/nb-format.md §7.0. */
static cd_status bcast(cd_cl_ctx *c, const cd_shape *x, const cd_shape *y, const cd_shape *o, int64_t axis, int *nd,
                       int64_t dim[8], int64_t sx[8], int64_t sy[8], cd_error *err) {
    int r = x->rank >= y->rank ? x->rank : y->rank, lo = x->rank + y->rank - r;
    int64_t ax[CD_MAX_RANK], ay[CD_MAX_RANK];
    if (cd_bcast_align(x, y, axis, ax, ay))
        return clu_fail(c, err, CD_E_MODEL, "axis %lld cannot place the rank-%d operand inside the rank-%d one",
                        (long long)axis, lo, r);
    if (o->rank != r)
        return clu_fail(c, err, CD_E_INTERNAL, "planned output rank %d differs from broadcast rank %d", o->rank, r);
    int64_t px = 1, py = 1, tx[CD_MAX_RANK], ty[CD_MAX_RANK];
    for (int i = r - 1; i >= 0; i--) {
        int64_t od = ax[i] == 1 ? ay[i] : ax[i];
        if (od != o->d[i] || (ax[i] != ay[i] && ax[i] != 1 && ay[i] != 1))
            return clu_fail(c, err, CD_E_MODEL, "X and Y do not broadcast to the planned output at dim %d", i);
        tx[i] = (ax[i] == 1 && od != 1) ? 0 : px;
        ty[i] = (ay[i] == 1 && od != 1) ? 0 : py;
        px *= ax[i];
        py *= ay[i];
    }
    /* drop size-1 dims, merge neighbours that are jointly contiguous */
    int k = 0;
    for (int i = 0; i < r; i++) {
        if (o->d[i] == 1) continue;
        if (k > 0 && sx[k - 1] == tx[i] * o->d[i] && sy[k - 1] == ty[i] * o->d[i]) {
            dim[k - 1] *= o->d[i];
            sx[k - 1] = tx[i];
            sy[k - 1] = ty[i];
        } else {
            if (k == 8) return clu_fail(c, err, CD_E_UNSUPPORTED, "broadcast needs more than 8 dims");
            dim[k] = o->d[i];
            sx[k] = tx[i];
            sy[k] = ty[i];
            k++;
        }
    }
    for (int i = k; i < 8; i++) dim[i] = 1, sx[i] = sy[i] = 0;
    if (k == 0) {
        k = 1;
        dim[0] = 1;
        sx[0] = sy[0] = 1;
    }
    *nd = k;
    return CD_OK;
}

static cd_status op_binary(cd_cl_ctx *c, cd_error *err) {
    int x, y, o;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_in(c, "Y", 0, &y, err)) ||
        (s = clu_need_out(c, "Out", 0, &o, err)))
        return s;
    if ((s = clu_need_float(c, x, "input X", err)) || (s = clu_need_float(c, y, "input Y", err)) ||
        (s = clu_need_float(c, o, "output Out", err)))
        return s;
    int op = binop_code(c->op->type);
    if (op < 0) return clu_fail(c, err, CD_E_INTERNAL, "not an elementwise op type");
    cd_op_ctx oc;
    cd_act act = {CD_ACT_NONE, 0, 0, 0};
    clu_op_ctx(c, &oc, err);
    bool fused = !strncmp(c->op->type, "fusion_", 7);
    bool post = !fused && op == 2 && cd_attr_bool(c->op, "fuse_scale", false);
    float ps = 1.0f, pb = 0.0f;
    if (fused) {
        if ((s = cd_act_from_op(&oc, "act_type", &act))) return s;
    } else if (post) {
        if ((s = float_attr(c, "scale", 1.0, &ps, err)) || (s = float_attr(c, "bias", 0.0, &pb, err))) return s;
        if ((s = cd_act_from_op(&oc, "activation_type", &act))) return s;
    }
    if (act.kind == CD_ACT_PRELU)
        return clu_fail(c, err, CD_E_MODEL, "prelu is not an elementwise fused activation (it needs an alpha tensor)");
    int nd = 0;
    int64_t dim[8], sx[8], sy[8];
    const cd_value *mo = clu_meta(c, o);
    if ((s = bcast(c, &clu_meta(c, x)->shape, &clu_meta(c, y)->shape, &mo->shape, cd_attr_int(c->op, "axis", -1), &nd,
                   dim, sx, sy, err)))
        return s;
    int64_t n = cd_value_numel(mo);
    if ((s = clu_fits(c, n, "element count", err))) return s;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "eltwise", "binary", err, x, y, o))) return s;
    clu_int(&g, n);
    clu_int(&g, op);
    clu_int(&g, nd);
    clu_int8(&g, dim);
    clu_int8(&g, sx);
    clu_int8(&g, sy);
    clu_int(&g, post);
    clu_flt(&g, ps);
    clu_flt(&g, pb);
    clu_int(&g, act.kind);
    clu_flt(&g, act.a);
    clu_flt(&g, act.b);
    clu_flt(&g, act.c);
    return clu_end(&g, n);
}

#define ACT_DEF(type) {#type, "eltwise", op_act},
static const cd_cl_op_def defs[] = {
/* every ACT op of the op table (engine/op_list.def) */
#define CD_OP(type, group, ...) CD_OPL_SELECT_##group(ACT_DEF, type)
#include "engine/op_list.def"
#undef CD_OP
    {"dropout", "eltwise", op_scale},
    {"prelu", "eltwise", op_prelu},
    {"scale", "eltwise", op_scale},
    {"elementwise_add", "eltwise", op_binary},
    {"elementwise_sub", "eltwise", op_binary},
    {"elementwise_mul", "eltwise", op_binary},
    {"elementwise_div", "eltwise", op_binary},
    {"elementwise_max", "eltwise", op_binary},
    {"elementwise_min", "eltwise", op_binary},
    {"elementwise_pow", "eltwise", op_binary},
    {"elementwise_floordiv", "eltwise", op_binary},
    {"elementwise_mod", "eltwise", op_binary},
    {"fusion_elementwise_add_activation", "eltwise", op_binary},
    {"fusion_elementwise_sub_activation", "eltwise", op_binary},
    {"fusion_elementwise_mul_activation", "eltwise", op_binary},
    {"fusion_elementwise_div_activation", "eltwise", op_binary},
    {"fusion_elementwise_max_activation", "eltwise", op_binary},
    {"fusion_elementwise_min_activation", "eltwise", op_binary},
};
const cd_cl_op_table cd_cl_ops_eltwise = {defs, (int)(sizeof defs / sizeof defs[0])};
