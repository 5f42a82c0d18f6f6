/* Dispatchers of kernels/norm.cl (batch_norm and sync_batch_norm, layer_norm, instance_norm) and
 * kernels/interp.cl (bilinear/nearest interpolation, v1 and v2). */
#include "backends/opencl/cl_ops_util.h"
#include <math.h>
#include <string.h>

#define WG 256 /* norm.cl work-group size */

static cd_status eps_attr(cd_cl_ctx *c, float *eps, cd_error *err) {
    (void)err; /* as stored, as the CPU side (ops_nn_norm.c) */
    *eps = (float)cd_attr_float(c->op, "epsilon", 1e-5);
    return CD_OK;
}

static cd_status op_batch_norm(cd_cl_ctx *c, cd_error *err) {
    int x, y, t[4];
    static const char *slots[4] = {"Scale", "Bias", "Mean", "Variance"};
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Y", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    if (xs->rank < 2) return clu_fail(c, err, CD_E_MODEL, "X must have rank >= 2 (channel = dim 1)");
    const char *lay = cd_attr_str(c->op, "data_layout", "NCHW");
    if (strcmp(lay, "NCHW") && strcmp(lay, "AnyLayout"))
        return clu_fail(c, err, CD_E_UNSUPPORTED, "data_layout '%s' is not supported (NCHW only)", lay);
    int64_t C = xs->d[1], inner = 1, n = cd_value_numel(clu_meta(c, x));
    for (int i = 2; i < xs->rank; i++) inner *= xs->d[i];
    for (int i = 0; i < 4; i++) {
        if ((s = clu_need_in(c, slots[i], 0, &t[i], err)) || (s = clu_need_float(c, t[i], slots[i], err))) return s;
        if (cd_value_numel(clu_meta(c, t[i])) != C)
            return clu_fail(c, err, CD_E_MODEL, "%s has %lld values, expected C = %lld", slots[i],
                            (long long)cd_value_numel(clu_meta(c, t[i])), (long long)C);
    }
    float eps;
    if ((s = eps_attr(c, &eps, err)) || (s = clu_fits(c, n, "element count", err))) return s;
    cl_mem bx, by, bt[4];
    cl_kernel k;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    for (int i = 0; i < 4; i++)
        if ((s = clu_buf(c, t[i], &bt[i], err))) return s;
    if ((s = c->kernel(c, "norm", "batch_norm", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    for (int i = 0; i < 4; i++) clu_mem(&g, bt[i]);
    clu_int(&g, n);
    clu_int(&g, C);
    clu_int(&g, inner);
    clu_flt(&g, eps);
    if (g.st) return g.st;
    if ((s = clu_launch1(c, k, n, err))) return s;
    /* The training outputs, where the program binds them, mirror the running statistics as on
     * the CPU (ops_nn_norm_tmpl.h): left unwritten they held whatever the device buffer held,
     * and the comparison read that (an unfused batch_norm of a Paddle 2.6.2 model: 7e+07 in
     * SavedMean on PoCL). */
    static const char *mirror[4] = {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"};
    for (int i = 0; i < 4; i++) {
        int o = clu_out(c, mirror[i], 0), src = t[i % 2 ? 3 : 2];
        if (o >= 0 && o != src && cd_value_numel(clu_meta(c, o)) == C &&
            clu_meta(c, o)->dtype == clu_meta(c, src)->dtype && (s = clu_copy(c, src, o, err)))
            return s;
    }
    return CD_OK;
}

/* Optional float input with an exact element count; -1 when absent. */
static cd_status opt_param(cd_cl_ctx *c, const char *slot, int64_t count, int *tid, cl_mem *m, cd_error *err) {
    cd_status s;
    *m = NULL;
    *tid = clu_in(c, slot, 0);
    if (*tid < 0) return CD_OK;
    if ((s = clu_need_float(c, *tid, slot, err))) return s;
    if (cd_value_numel(clu_meta(c, *tid)) != count)
        return clu_fail(c, err, CD_E_MODEL, "%s has %lld values, expected %lld", slot,
                        (long long)cd_value_numel(clu_meta(c, *tid)), (long long)count);
    return clu_buf(c, *tid, m, err);
}

/* Optional statistics output (Mean/Variance): its buffer when connected and float. */
static cd_status opt_out(cd_cl_ctx *c, const char *slot, int64_t count, cl_mem *m, cd_error *err) {
    *m = NULL;
    int tid = clu_out(c, slot, 0);
    if (tid < 0) return CD_OK;
    const cd_value *v = clu_meta(c, tid);
    if (cd_value_numel(v) != count) return CD_OK; /* planned as a shape-only by-product: not written */
    cd_status s = clu_need_float(c, tid, slot, err);
    return s ? s : clu_buf(c, tid, m, err);
}

static cd_status op_layer_norm(cd_cl_ctx *c, cd_error *err) {
    int x, y, ts, tb;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Y", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    int64_t ax = cd_attr_int(c->op, "begin_norm_axis", 1);
    if (ax < 0) ax += xs->rank;
    if (ax < 0 || (ax >= xs->rank && xs->rank > 0))
        return clu_fail(c, err, CD_E_MODEL, "begin_norm_axis %lld is out of range for rank %d",
                        (long long)cd_attr_int(c->op, "begin_norm_axis", 1), xs->rank);
    int64_t L = 1, R = 1;
    for (int i = 0; i < xs->rank; i++) *(i < ax ? &L : &R) *= xs->d[i];
    float eps;
    if ((s = eps_attr(c, &eps, err)) || (s = clu_fits(c, L * R, "element count", err))) return s;
    cl_mem bx, by, bs, bb, bm, bv;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err)) ||
        (s = opt_param(c, "Scale", R, &ts, &bs, err)) || (s = opt_param(c, "Bias", R, &tb, &bb, err)) ||
        (s = opt_out(c, "Mean", L, &bm, err)) || (s = opt_out(c, "Variance", L, &bv, err)))
        return s;
    if (L * R == 0) return CD_OK;
    cl_kernel k;
    if ((s = c->kernel(c, "norm", "layer_norm", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_mem(&g, bs);
    clu_mem(&g, bb);
    clu_mem(&g, bm);
    clu_mem(&g, bv);
    clu_int(&g, R);
    clu_flt(&g, eps);
    if (g.st) return g.st;
    size_t gl = (size_t)L * WG, lo = WG;
    return c->launch(c, k, 1, &gl, &lo, err);
}

static cd_status op_instance_norm(cd_cl_ctx *c, cd_error *err) {
    int x, y, ts, tb;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Y", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    if (xs->rank < 2) return clu_fail(c, err, CD_E_MODEL, "X must have rank >= 2");
    int64_t C = xs->d[1], NC = xs->d[0] * C, hw = 1;
    for (int i = 2; i < xs->rank; i++) hw *= xs->d[i];
    float eps, act_a = 0.0f;
    if ((s = eps_attr(c, &eps, err)) || (s = clu_fits(c, NC * hw, "element count", err))) return s;
    const char *at = cd_attr_str(c->op, "activation_type", "");
    int act = 0;
    if (!strcmp(at, "relu"))
        act = 1;
    else if (!strcmp(at, "leaky_relu"))
        act = 3, act_a = (float)cd_attr_float(c->op, "alpha", 0.02);
    else if (at[0])
        return clu_fail(c, err, CD_E_MODEL, "activation_type '%s' is not relu or leaky_relu", at);
    cl_mem bx, by, bs, bb, bm, bv;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err)) ||
        (s = opt_param(c, "Scale", C, &ts, &bs, err)) || (s = opt_param(c, "Bias", C, &tb, &bb, err)) ||
        (s = opt_out(c, "SavedMean", NC, &bm, err)) || (s = opt_out(c, "SavedVariance", NC, &bv, err)))
        return s;
    if (NC * hw == 0) return CD_OK;
    cl_kernel k;
    if ((s = c->kernel(c, "norm", "instance_norm", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_mem(&g, bs);
    clu_mem(&g, bb);
    clu_mem(&g, bm);
    clu_mem(&g, bv);
    clu_int(&g, C);
    clu_int(&g, hw);
    clu_flt(&g, eps);
    clu_int(&g, act);
    clu_flt(&g, act_a);
    if (g.st) return g.st;
    size_t gl = (size_t)NC * WG, lo = WG;
    return c->launch(c, k, 1, &gl, &lo, err);
}

/* ---- interpolation: ratios exactly as the CPU kernel derives them (ops_basic_interp.c) ---- */
static cd_status op_interp(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape, *ys = &clu_meta(c, y)->shape;
    if (xs->rank != 4 || ys->rank != 4) return clu_fail(c, err, CD_E_MODEL, "X and Out must be 4-D NCHW");
    const char *t = c->op->type;
    bool bil = !strncmp(t, "bilinear", 8), v2 = strstr(t, "_v2") != NULL;
    bool ac = cd_attr_bool(c->op, "align_corners", false);
    int am = (int)cd_attr_int(c->op, "align_mode", 1);
    int64_t H = xs->d[2], W = xs->d[3], Ho = ys->d[2], Wo = ys->d[3];
    /* nearest_v2 steps by 1/scale when a scale is available (Scale tensor, or two positive
     * attribute scales) unless SizeTensor set the size */
    float sh = -1.0f, sw = -1.0f;
    bool scale_ratio = false;
    int st = clu_in(c, "Scale", 0);
    if (st >= 0) {
        const cd_value *m = clu_meta(c, st);
        if (!m->data)
            return clu_fail(c, err, CD_E_UNSUPPORTED,
                            "the Scale input is computed at run time; this op runs on the CPU");
        int64_t n = cd_value_numel(m);
        if (n != 1 && n != 2) return clu_fail(c, err, CD_E_MODEL, "input Scale must hold 1 or 2 values");
        sh = (float)cd_value_get(m, 0);
        sw = (float)cd_value_get(m, n - 1);
        scale_ratio = true;
    } else if (v2) {
        const double *sv;
        int n = cd_attr_floats(c->op, "scale", &sv);
        if (n >= 2 && sv[0] > 0 && sv[1] > 0) sh = (float)sv[0], sw = (float)sv[1], scale_ratio = true;
    }
    if (clu_in(c, "SizeTensor", 0) >= 0) scale_ratio = false;
    float rh, rw;
    if (ac) {
        rh = (Ho > 1 && H > 1) ? (float)(H - 1) / (float)(Ho - 1) : 0.0f;
        rw = (Wo > 1 && W > 1) ? (float)(W - 1) / (float)(Wo - 1) : 0.0f;
    } else if (!bil && v2 && scale_ratio) {
        rh = 1.0f / sh;
        rw = 1.0f / sw;
    } else {
        rh = (float)H / (float)Ho;
        rw = (float)W / (float)Wo;
    }
    int64_t planes = xs->d[0] * xs->d[1];
    if ((s = clu_fits(c, planes * (H * W > Ho * Wo ? H * W : Ho * Wo), "tensor size", err))) return s;
    if (planes * Ho * Wo == 0 || H * W == 0) return CD_OK;
    cl_mem bx, by;
    cl_kernel k;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "interp", "interp", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_int(&g, H);
    clu_int(&g, W);
    clu_int(&g, Ho);
    clu_int(&g, Wo);
    clu_flt(&g, rh);
    clu_flt(&g, rw);
    clu_int(&g, bil);
    clu_int(&g, ac);
    clu_int(&g, am);
    if (g.st) return g.st;
    size_t gl[3] = {(size_t)Wo, (size_t)Ho, (size_t)planes};
    return c->launch(c, k, 3, gl, NULL, err);
}

static const cd_cl_op_def norm_defs[] = {
    {"batch_norm", "norm", op_batch_norm},
    {"sync_batch_norm", "norm", op_batch_norm}, /* one device: batch_norm */
    {"layer_norm", "norm", op_layer_norm},
    {"instance_norm", "norm", op_instance_norm},
};
const cd_cl_op_table cd_cl_ops_norm = {norm_defs, (int)(sizeof norm_defs / sizeof norm_defs[0])};
static const cd_cl_op_def interp_defs[] = {
    {"bilinear_interp", "interp", op_interp},
    {"bilinear_interp_v2", "interp", op_interp},
    {"nearest_interp", "interp", op_interp},
    {"nearest_interp_v2", "interp", op_interp},
};
const cd_cl_op_table cd_cl_ops_interp = {interp_defs, (int)(sizeof interp_defs / sizeof interp_defs[0])};
