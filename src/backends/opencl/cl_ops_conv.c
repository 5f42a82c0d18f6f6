/* Dispatchers of kernels/conv.cl: conv2d, depthwise_conv2d, conv2d_transpose
 * (docs/nb-format.md §7.1, §7.2). Picks the kernel: depthwise direct (one channel per group),
 * 1x1 GEMM (stride 1, no padding: the input is the im2col matrix), general implicit GEMM. */
#include "backends/opencl/cl_ops_util.h"
#include <stdio.h>
#include <string.h>

typedef struct {
    int x, w, b, res, alpha, y;
    int64_t N, Cin, H, W, Cout, Ho, Wo, KH, KW, groups;
    int64_t stride[2], dil[2], pads[4];
    cd_act act;
    int amode, res_relu;
} conv_args;

static cd_status read_ints2(cd_cl_ctx *c, const char *name, int64_t dflt, int64_t out[2], cd_error *err) {
    const int64_t *v;
    int n = cd_attr_ints(c->op, name, &v);
    if (n == 0) {
        out[0] = out[1] = dflt;
        return CD_OK;
    }
    if (n == 1) {
        out[0] = out[1] = v[0];
    } else if (n == 2) {
        out[0] = v[0];
        out[1] = v[1];
    } else
        return clu_fail(c, err, CD_E_MODEL, "attribute %s has %d values; a 2-D op takes 2", name, n);
    if (out[0] <= 0 || out[1] <= 0)
        return clu_fail(c, err, CD_E_MODEL, "attribute %s = [%lld, %lld] must be positive", name, (long long)out[0],
                        (long long)out[1]);
    return CD_OK;
}

/* Reads and checks everything both conv directions share. */
static cd_status conv_common(cd_cl_ctx *c, conv_args *a, bool transpose, cd_error *err) {
    cd_status s;
    memset(a, 0, sizeof *a);
    if ((s = clu_need_in(c, "Input", 0, &a->x, err)) || (s = clu_need_in(c, "Filter", 0, &a->w, err)) ||
        (s = clu_need_out(c, "Output", 0, &a->y, err)))
        return s;
    a->b = clu_in(c, "Bias", 0);
    if ((s = clu_need_float(c, a->x, "Input", err)) || (s = clu_need_float(c, a->w, "Filter", err)) ||
        (a->b >= 0 && (s = clu_need_float(c, a->b, "Bias", err))))
        return s;
    const cd_shape *xs = &clu_meta(c, a->x)->shape, *ws = &clu_meta(c, a->w)->shape, *ys = &clu_meta(c, a->y)->shape;
    if (xs->rank != 4 || ws->rank != 4 || ys->rank != 4)
        return clu_fail(c, err, CD_E_MODEL, "Input, Filter and Output must be 4-D (ranks %d, %d, %d)", xs->rank,
                        ws->rank, ys->rank);
    a->N = xs->d[0], a->Cin = xs->d[1], a->H = xs->d[2], a->W = xs->d[3];
    a->Cout = ys->d[1], a->Ho = ys->d[2], a->Wo = ys->d[3];
    a->KH = ws->d[2], a->KW = ws->d[3];
    a->groups = cd_attr_int(c->op, "groups", 1);
    if (a->groups < 1 || a->Cin % a->groups || a->Cout % a->groups)
        return clu_fail(c, err, CD_E_MODEL, "groups %lld does not divide Cin %lld and Cout %lld", (long long)a->groups,
                        (long long)a->Cin, (long long)a->Cout);
    bool wok = transpose ? (ws->d[0] == a->Cin && ws->d[1] * a->groups == a->Cout)
                         : (ws->d[0] == a->Cout && ws->d[1] * a->groups == a->Cin);
    if (!wok || ys->d[0] != a->N)
        return clu_fail(c, err, CD_E_MODEL, "Filter shape does not match Input/Output channels and groups %lld",
                        (long long)a->groups);
    if (a->b >= 0 && cd_value_numel(clu_meta(c, a->b)) != a->Cout)
        return clu_fail(c, err, CD_E_MODEL, "Bias has %lld values, expected Cout = %lld",
                        (long long)cd_value_numel(clu_meta(c, a->b)), (long long)a->Cout);
    if ((s = read_ints2(c, "strides", 1, a->stride, err)) || (s = read_ints2(c, "dilations", 1, a->dil, err))) return s;
    int64_t hw[2] = {a->H, a->W}, k[2] = {a->KH, a->KW};
    if ((s = clu_pads(c, hw, k, a->stride, a->dil, a->pads, err))) return s;
    /* The planner derived the output size from the same rule; a disagreement is a bug. */
    for (int i = 0; i < 2; i++) {
        int64_t in = hw[i], st = a->stride[i], d = a->dil[i], kk = k[i], pb = a->pads[2 * i], pe = a->pads[2 * i + 1];
        int64_t base =
            transpose ? (in - 1) * st - pb - pe + d * (kk - 1) + 1 : (in + pb + pe - (d * (kk - 1) + 1)) / st + 1;
        int64_t got = ys->d[2 + i];
        if (transpose ? (got < base || got >= base + (st > d ? st : d)) : got != base)
            return clu_fail(c, err, CD_E_INTERNAL, "planned output dim %d is %lld but the attributes give %lld", 2 + i,
                            (long long)got, (long long)base);
    }
    cd_op_ctx oc;
    clu_op_ctx(c, &oc, err);
    if ((s = cd_act_from_conv(&oc, &a->act))) return s;
    a->alpha = -1;
    if (a->act.kind == CD_ACT_PRELU) {
        if (transpose) return clu_fail(c, err, CD_E_MODEL, "prelu is not a conv2d_transpose fused activation");
        if ((s = clu_need_in(c, "Prelu_alpha", 0, &a->alpha, err))) return s;
        if ((s = clu_need_float(c, a->alpha, "Prelu_alpha", err))) return s;
        a->amode = clu_prelu_mode(cd_attr_str(c->op, "prelu_mode", "channel"));
        int64_t need = a->amode == 0 ? 1 : (a->amode == 1 ? a->Cout : a->Cout * a->Ho * a->Wo);
        if (cd_value_numel(clu_meta(c, a->alpha)) < need)
            return clu_fail(c, err, CD_E_MODEL, "Prelu_alpha has %lld values, prelu_mode needs %lld",
                            (long long)cd_value_numel(clu_meta(c, a->alpha)), (long long)need);
    }
    a->res = -1;
    const char *fe = cd_attr_str(c->op, "fuse_elementwise_op_type", "");
    if (!transpose && fe[0]) {
        if (strcmp(fe, "elementwise_add") && strcmp(fe, "fusion_elementwise_add_activation"))
            return clu_fail(c, err, CD_E_MODEL,
                            "fuse_elementwise_op_type '%s' is not elementwise_add or "
                            "fusion_elementwise_add_activation",
                            fe);
        if ((s = clu_need_in(c, "SecondInput", 0, &a->res, err))) return s;
        if ((s = clu_need_float(c, a->res, "SecondInput", err))) return s;
        if (!cd_shape_eq(&clu_meta(c, a->res)->shape, ys))
            return clu_fail(c, err, CD_E_MODEL, "SecondInput shape differs from the Output shape");
        a->res_relu = !strcmp(fe, "fusion_elementwise_add_activation");
    }
    int64_t big =
        a->N * (a->Cin > a->Cout ? a->Cin : a->Cout) * (a->H * a->W > a->Ho * a->Wo ? a->H * a->W : a->Ho * a->Wo);
    if ((s = clu_fits(c, big, "tensor size", err)) ||
        (s = clu_fits(c, cd_value_numel(clu_meta(c, a->w)), "filter size", err)))
        return s;
    return CD_OK;
}

static cd_status op_conv(cd_cl_ctx *c, cd_error *err) {
    conv_args a;
    cd_status s;
    if ((s = conv_common(c, &a, false, err))) return s;
    if (a.N * a.Cout * a.Ho * a.Wo == 0) return CD_OK;
    cl_mem bx, bw, bb = NULL, br = NULL, ba = NULL, by;
    if ((s = clu_buf(c, a.x, &bx, err)) || (s = clu_buf(c, a.w, &bw, err)) || (s = clu_buf(c, a.y, &by, err)) ||
        (a.b >= 0 && (s = clu_buf(c, a.b, &bb, err))) || (a.res >= 0 && (s = clu_buf(c, a.res, &br, err))) ||
        (a.alpha >= 0 && (s = clu_buf(c, a.alpha, &ba, err))))
        return s;
    int64_t cin_g = a.Cin / a.groups, cout_g = a.Cout / a.groups;
    bool dw = cin_g == 1 && cout_g == 1;
    bool one = a.KH == 1 && a.KW == 1 && a.stride[0] == 1 && a.stride[1] == 1 && !a.pads[0] && !a.pads[1] &&
        !a.pads[2] && !a.pads[3];
    /* Register block: as many output channels per work-item as keep the 16 rm-row tile mostly
     * used (detection heads have 4..30 channels over a long K: a 64-row tile would compute
     * mostly padding), 8 pixels when there are enough pixels to keep every compute unit busy
     * with 128-wide tiles. */
    int rm = cout_g <= 16 ? 1 : (cout_g <= 32 ? 2 : (cout_g <= 64 ? 4 : 8));
    int rn = a.Ho * a.Wo >= 16384 ? 8 : 4;
    /* CPU devices: the barrier-free kernel (PoCL runs the local-memory tiles at 1-5 GFLOP/s) */
    bool cpu = !dw && c->cpu_device;
    if (cpu) rm = cout_g <= 4 ? 4 : 8;
    char name[32];
    if (dw)
        snprintf(name, sizeof name, "conv2d_dw");
    else if (cpu)
        snprintf(name, sizeof name, "conv2d_cpu_%d", rm);
    else
        snprintf(name, sizeof name, "conv2d_gemm_%d%d", rm, rn);
    cl_kernel k;
    if ((s = c->kernel(c, "conv", name, &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, bw);
    clu_mem(&g, bb);
    clu_mem(&g, br);
    clu_mem(&g, by);
    clu_mem(&g, ba);
    clu_int(&g, a.Cin);
    clu_int(&g, a.H);
    clu_int(&g, a.W);
    if (!dw) clu_int(&g, a.Cout);
    clu_int(&g, a.Ho);
    clu_int(&g, a.Wo);
    clu_int(&g, a.KH);
    clu_int(&g, a.KW);
    clu_int(&g, a.stride[0]);
    clu_int(&g, a.stride[1]);
    clu_int(&g, a.pads[0]);
    clu_int(&g, a.pads[2]);
    clu_int(&g, a.dil[0]);
    clu_int(&g, a.dil[1]);
    if (!dw) clu_int(&g, a.groups);
    clu_int(&g, a.act.kind);
    clu_flt(&g, a.act.a);
    clu_flt(&g, a.act.b);
    clu_flt(&g, a.act.c);
    clu_int(&g, a.amode);
    clu_int(&g, a.res_relu);
    if (!dw) clu_int(&g, one);
    if (g.st) return g.st;
    if (dw) {
        size_t gl[3] = {(size_t)a.Wo, (size_t)a.Ho, (size_t)(a.N * a.Cout)};
        return c->launch(c, k, 3, gl, NULL, err);
    }
    if (cpu) {
        size_t gc[3] = {((size_t)(a.Ho * a.Wo) + 7) / 8, ((size_t)cout_g + (size_t)rm - 1) / (size_t)rm,
                        (size_t)(a.N * a.groups)};
        return c->launch(c, k, 3, gc, NULL, err);
    }
    size_t gl[3] = {clu_round((size_t)(a.Ho * a.Wo), (size_t)(16 * rn)) / (size_t)rn,
                    clu_round((size_t)cout_g, (size_t)(16 * rm)) / (size_t)rm, (size_t)(a.N * a.groups)};
    size_t lo[3] = {16, 16, 1};
    return c->launch(c, k, 3, gl, lo, err);
}

static cd_status op_conv_transpose(cd_cl_ctx *c, cd_error *err) {
    conv_args a;
    cd_status s;
    if ((s = conv_common(c, &a, true, err))) return s;
    if (a.N * a.Cout * a.Ho * a.Wo == 0) return CD_OK;
    cl_mem bx, bw, bb = NULL, by;
    if ((s = clu_buf(c, a.x, &bx, err)) || (s = clu_buf(c, a.w, &bw, err)) || (s = clu_buf(c, a.y, &by, err)) ||
        (a.b >= 0 && (s = clu_buf(c, a.b, &bb, err))))
        return s;
    cl_kernel k;
    if ((s = c->kernel(c, "conv", "conv2d_transpose", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, bw);
    clu_mem(&g, bb);
    clu_mem(&g, by);
    clu_int(&g, a.Cin);
    clu_int(&g, a.H);
    clu_int(&g, a.W);
    clu_int(&g, a.Cout);
    clu_int(&g, a.Ho);
    clu_int(&g, a.Wo);
    clu_int(&g, a.KH);
    clu_int(&g, a.KW);
    clu_int(&g, a.stride[0]);
    clu_int(&g, a.stride[1]);
    clu_int(&g, a.pads[0]);
    clu_int(&g, a.pads[2]);
    clu_int(&g, a.dil[0]);
    clu_int(&g, a.dil[1]);
    clu_int(&g, a.groups);
    clu_int(&g, a.act.kind);
    clu_flt(&g, a.act.a);
    clu_flt(&g, a.act.b);
    clu_flt(&g, a.act.c);
    if (g.st) return g.st;
    size_t gl[3] = {(size_t)a.Wo, (size_t)a.Ho, (size_t)(a.N * a.Cout)};
    return c->launch(c, k, 3, gl, NULL, err);
}

static const cd_cl_op_def defs[] = {
    {"conv2d", "conv", op_conv},
    {"depthwise_conv2d", "conv", op_conv},
    {"conv2d_transpose", "conv", op_conv_transpose},
    {"depthwise_conv2d_transpose", "conv", op_conv_transpose},
};
const cd_cl_op_table cd_cl_ops_conv = {defs, (int)(sizeof defs / sizeof defs[0])};
