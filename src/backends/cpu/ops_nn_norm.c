/* batch_norm (docs/nb-format.md §7.3), layer_norm (§7.23), instance_norm (Paddle semantics: per (n, c) over
 * the spatial dims, optional Scale/Bias [C], epsilon; OpenCL pass may add activation_type).
 *
 * Precision: the statistics (mean, variance) are accumulated in double from the stored
 * values, in both precisions: E[x^2] - mean^2 in half would overflow past 65504 and cancel
 * catastrophically, and no fp16 kernel that gets statistics right does that. The
 * normalisation itself, y = (x - mean) * inv_std * scale + bias, runs in the storage type
 * (half arithmetic in fp16 runs), like the elementwise part of an fp16 kernel. */
#include "backends/cpu/par.h"
#include "engine/ops.h"
#include <math.h>
#include <string.h>

static int64_t nprod(const cd_shape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= s->d[i];
    return p;
}

static cd_status eps_attr(cd_op_ctx *c, float *eps) {
    /* as stored: a negative or NaN epsilon gives NaN where var + eps < 0, as in Paddle-Lite */
    *eps = (float)cd_attr_float(c->op, "epsilon", 1e-5);
    return CD_OK;
}

static cd_status vec_len(cd_op_ctx *c, const char *slot, int64_t need, bool required) {
    cd_value *v = required ? cd_in_req(c, slot, 0) : cd_in(c, slot, 0);
    if (!v) return required ? c->err->code : CD_OK;
    if (cd_value_numel(v) != need)
        return cd_op_fail(c, CD_E_MODEL, "%s has %lld elements; expected %lld", slot, (long long)cd_value_numel(v),
                          (long long)need);
    if (c->vals && v->data && v->dtype != cd_act_dtype(c))
        return cd_op_fail(c, CD_E_INTERNAL, "%s has dtype %s but the run expects %s", slot, cd_dtype_name(v->dtype),
                          cd_dtype_name(cd_act_dtype(c)));
    return CD_OK;
}

static void set_vec_out(cd_op_ctx *c, const char *slot, int64_t n) {
    cd_value *o = cd_out(c, slot, 0);
    if (!o) return;
    o->dtype = cd_act_dtype(c);
    o->shape.rank = 1;
    o->shape.d[0] = n;
}

static cd_value *main_input(cd_op_ctx *c, int min_rank, const char *what) {
    cd_value *x = cd_in_req(c, "X", 0);
    if (!x) return NULL;
    char b[96];
    if (x->shape.rank < min_rank) {
        cd_op_fail(c, CD_E_MODEL, "X %s must have rank >= %d (%s)", cd_shape_str(&x->shape, b, sizeof b), min_rank,
                   what);
        return NULL;
    }
    for (int i = 0; i < x->shape.rank; i++)
        if (x->shape.d[i] <= 0) {
            cd_op_fail(c, CD_E_MODEL, "X %s has a non-positive dim", cd_shape_str(&x->shape, b, sizeof b));
            return NULL;
        }
    if (!cd_out(c, "Y", 0)) {
        cd_op_fail(c, CD_E_MODEL, "output slot Y is not connected");
        return NULL;
    }
    return x;
}

/* ---------------- batch_norm ---------------- */
static cd_status bn_check(cd_op_ctx *c, cd_value **xo, float *eps) {
    cd_value *x = main_input(c, 2, "N, C, ...");
    if (!x) return c->err->code;
    const char *dl = cd_attr_str(c->op, "data_layout", "NCHW");
    if (strcmp(dl, "NCHW") && strcmp(dl, "AnyLayout"))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "data_layout '%s' is not supported (only NCHW)", dl);
    int64_t C = x->shape.d[1];
    cd_status s;
    const char *slots[] = {"Scale", "Bias", "Mean", "Variance"};
    for (int i = 0; i < 4; i++)
        if ((s = vec_len(c, slots[i], C, true))) return s;
    *xo = x;
    return eps_attr(c, eps);
}

cd_status cd_nn_batch_norm_infer(cd_op_ctx *c) {
    cd_value *x;
    float eps;
    cd_status s = bn_check(c, &x, &eps);
    if (s) return s;
    cd_value *y = cd_out(c, "Y", 0);
    y->dtype = cd_act_dtype(c);
    y->shape = x->shape;
    /* training outputs, when bound, just mirror the running statistics */
    const char *extra[] = {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
    for (int i = 0; i < 4; i++) set_vec_out(c, extra[i], x->shape.d[1]);
    return CD_OK;
}

/* ---------------- layer_norm ---------------- */
static cd_status ln_check(cd_op_ctx *c, cd_value **xo, int *axis, float *eps) {
    cd_value *x = main_input(c, 1, "any rank");
    if (!x) return c->err->code;
    int64_t a = cd_attr_int(c->op, "begin_norm_axis", 1);
    if (a < 0) a += x->shape.rank;
    if (a < 0 || a >= x->shape.rank)
        return cd_op_fail(c, CD_E_MODEL, "begin_norm_axis = %lld is out of range for rank %d",
                          (long long)cd_attr_int(c->op, "begin_norm_axis", 1), x->shape.rank);
    *axis = (int)a;
    int64_t R = nprod(&x->shape, *axis, x->shape.rank);
    cd_status s;
    if ((s = vec_len(c, "Scale", R, false)) || (s = vec_len(c, "Bias", R, false))) return s;
    *xo = x;
    return eps_attr(c, eps);
}

cd_status cd_nn_layer_norm_infer(cd_op_ctx *c) {
    cd_value *x;
    int axis;
    float eps;
    cd_status s = ln_check(c, &x, &axis, &eps);
    if (s) return s;
    cd_value *y = cd_out(c, "Y", 0);
    y->dtype = cd_act_dtype(c);
    y->shape = x->shape;
    int64_t L = nprod(&x->shape, 0, axis);
    set_vec_out(c, "Mean", L);
    set_vec_out(c, "Variance", L);
    return CD_OK;
}

/* ---------------- instance_norm ---------------- */
static cd_status in_check(cd_op_ctx *c, cd_value **xo, float *eps, cd_act *act) {
    cd_value *x = main_input(c, 3, "N, C, spatial...");
    if (!x) return c->err->code;
    int64_t C = x->shape.d[1];
    cd_status s;
    if ((s = vec_len(c, "Scale", C, false)) || (s = vec_len(c, "Bias", C, false))) return s;
    if ((s = cd_act_from_op(c, "activation_type", act))) return s;
    if (act->kind == CD_ACT_PRELU)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "activation_type prelu is not defined for instance_norm");
    *xo = x;
    return eps_attr(c, eps);
}

cd_status cd_nn_instance_norm_infer(cd_op_ctx *c) {
    cd_value *x;
    float eps;
    cd_act act;
    cd_status s = in_check(c, &x, &eps, &act);
    if (s) return s;
    cd_value *y = cd_out(c, "Y", 0);
    y->dtype = cd_act_dtype(c);
    y->shape = x->shape;
    set_vec_out(c, "SavedMean", x->shape.d[0] * x->shape.d[1]);
    set_vec_out(c, "SavedVariance", x->shape.d[0] * x->shape.d[1]);
    return CD_OK;
}

static void *vdata(cd_op_ctx *c, const char *slot, bool out) {
    cd_value *v = out ? cd_out(c, slot, 0) : cd_in(c, slot, 0);
    return v ? v->data : NULL;
}

#define NN_T float
#define NN_S f32
#include "ops_nn_norm_tmpl.h"
#define NN_T _Float16
#define NN_S f16
#include "ops_nn_norm_tmpl.h"

static cd_status x_dtype(cd_op_ctx *c, cd_value *x) {
    if (x->dtype != cd_act_dtype(c) || !x->data)
        return cd_op_fail(c, CD_E_INTERNAL, "X has dtype %s (or no data) but the run expects %s",
                          cd_dtype_name(x->dtype), cd_dtype_name(cd_act_dtype(c)));
    return CD_OK;
}

cd_status cd_nn_batch_norm_run(cd_op_ctx *c) {
    cd_value *x;
    float eps;
    cd_status s = bn_check(c, &x, &eps);
    if (s || (s = x_dtype(c, x))) return s;
    if (c->prec == CD_PREC_FP16)
        bn_run_f16(c, x, eps);
    else
        bn_run_f32(c, x, eps);
    return CD_OK;
}

cd_status cd_nn_layer_norm_run(cd_op_ctx *c) {
    cd_value *x;
    int axis;
    float eps;
    cd_status s = ln_check(c, &x, &axis, &eps);
    if (s || (s = x_dtype(c, x))) return s;
    if (c->prec == CD_PREC_FP16)
        ln_run_f16(c, x, axis, eps);
    else
        ln_run_f32(c, x, axis, eps);
    return CD_OK;
}

cd_status cd_nn_instance_norm_run(cd_op_ctx *c) {
    cd_value *x;
    float eps;
    cd_act act;
    cd_status s = in_check(c, &x, &eps, &act);
    if (s || (s = x_dtype(c, x))) return s;
    if (c->prec == CD_PREC_FP16)
        in_run_f16(c, x, eps, &act);
    else
        in_run_f32(c, x, eps, &act);
    return CD_OK;
}
