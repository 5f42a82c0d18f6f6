/* Dispatchers of kernels/pool.cl (pool2d, docs/nb-format.md §7.5) and kernels/softmax.cl
 * (softmax, log_softmax, §7.11). */
#include "backends/opencl/cl_ops_util.h"
#include <string.h>

static cd_status ints2(cd_cl_ctx *c, const char *name, int64_t dflt, int64_t out[2], cd_error *err) {
    const int64_t *v;
    int n = cd_attr_ints(c->op, name, &v);
    if (n == 0)
        out[0] = out[1] = dflt;
    else if (n == 1)
        out[0] = out[1] = v[0];
    else if (n == 2)
        out[0] = v[0], out[1] = v[1];
    else
        return clu_fail(c, err, CD_E_MODEL, "attribute %s has %d values; pool2d takes 2", name, n);
    return CD_OK;
}

static cd_status op_pool(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape, *ys = &clu_meta(c, y)->shape;
    if (xs->rank != 4 || ys->rank != 4) return clu_fail(c, err, CD_E_MODEL, "X and Out must be 4-D NCHW");
    const char *pt = cd_attr_str(c->op, "pooling_type", "max");
    bool is_max = !strcmp(pt, "max");
    if (!is_max && strcmp(pt, "avg")) return clu_fail(c, err, CD_E_MODEL, "pooling_type '%s' is not max or avg", pt);
    bool global = cd_attr_bool(c->op, "global_pooling", false), adaptive = cd_attr_bool(c->op, "adaptive", false);
    bool exclusive = cd_attr_bool(c->op, "exclusive", true);
    int64_t k[2], st[2], pads[4], hw[2] = {xs->d[2], xs->d[3]};
    if ((s = ints2(c, "ksize", 1, k, err)) || (s = ints2(c, "strides", 1, st, err))) return s;
    if ((s = clu_pads(c, hw, k, st, NULL, pads, err))) return s;
    if (global || adaptive) pads[0] = pads[1] = pads[2] = pads[3] = 0;
    if (global) {
        k[0] = hw[0], k[1] = hw[1];
        adaptive = false; /* a full-size window; avg divides by H*W (no padding) */
    }
    if (!adaptive && (k[0] <= 0 || k[1] <= 0 || st[0] <= 0 || st[1] <= 0))
        return clu_fail(c, err, CD_E_MODEL, "ksize and strides must be positive");
    int64_t Ho = ys->d[2], Wo = ys->d[3], NC = ys->d[0] * ys->d[1];
    if (ys->d[0] != xs->d[0] || ys->d[1] != xs->d[1])
        return clu_fail(c, err, CD_E_INTERNAL, "planned Out shape differs from X in N or C");
    if ((s = clu_fits(c, cd_value_numel(clu_meta(c, x)), "input size", err)) ||
        (s = clu_fits(c, cd_value_numel(clu_meta(c, y)), "output size", err)))
        return s;
    if (NC * Ho * Wo == 0) return CD_OK;
    cl_mem bx, by;
    cl_kernel kr;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "pool", "pool2d", &kr, err))) return s;
    clu_args g;
    clu_args_init(&g, c, kr, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_int(&g, hw[0]);
    clu_int(&g, hw[1]);
    clu_int(&g, Ho);
    clu_int(&g, Wo);
    clu_int(&g, k[0]);
    clu_int(&g, k[1]);
    clu_int(&g, st[0]);
    clu_int(&g, st[1]);
    clu_int(&g, pads[0]);
    clu_int(&g, pads[1]);
    clu_int(&g, pads[2]);
    clu_int(&g, pads[3]);
    clu_int(&g, is_max);
    clu_int(&g, exclusive);
    clu_int(&g, adaptive);
    if (g.st) return g.st;
    size_t gl[3] = {(size_t)Wo, (size_t)Ho, (size_t)NC};
    return c->launch(c, kr, 3, gl, NULL, err);
}

static cd_status op_softmax(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    cd_shape sh = clu_meta(c, x)->shape;
    if (cd_attr_bool(c->op, "eleminate_success", false) && sh.rank >= 2) {
        /* reinterpreted as [d0, d1] (the other dims are 1 in the models that carry it) */
        int64_t rest = 1;
        for (int i = 2; i < sh.rank; i++) rest *= sh.d[i];
        sh.d[1] *= rest;
        sh.rank = 2;
    }
    int r = sh.rank;
    int64_t ax = cd_attr_int(c->op, "axis", -1);
    if (r == 0) r = 1, sh.d[0] = 1;
    if (ax < -r || ax >= r)
        return clu_fail(c, err, CD_E_MODEL, "axis %lld is out of range for rank %d", (long long)ax, r);
    if (ax < 0) ax += r;
    int64_t outer = 1, inner = 1, len = sh.d[ax];
    for (int i = 0; i < ax; i++) outer *= sh.d[i];
    for (int i = (int)ax + 1; i < r; i++) inner *= sh.d[i];
    if ((s = clu_fits(c, outer * len * inner, "element count", err))) return s;
    if (outer * inner * len == 0) return CD_OK;
    cl_mem bx, by;
    cl_kernel k;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "softmax", "softmax", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_int(&g, outer);
    clu_int(&g, len);
    clu_int(&g, inner);
    clu_int(&g, !strcmp(c->op->type, "log_softmax"));
    if (g.st) return g.st;
    return clu_launch1(c, k, outer * inner, err);
}

static const cd_cl_op_def pool_defs[] = {{"pool2d", "pool", op_pool}};
const cd_cl_op_table cd_cl_ops_pool = {pool_defs, 1};
static const cd_cl_op_def softmax_defs[] = {{"softmax", "softmax", op_softmax}, {"log_softmax", "softmax", op_softmax}};
const cd_cl_op_table cd_cl_ops_softmax = {softmax_defs, 2};
