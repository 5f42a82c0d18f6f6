/* bilinear_interp, nearest_interp and their _v2 forms (docs/nb-format.md §7.20), NCHW.
 *
 * Coordinates and weights are computed in float exactly as §7.20 states (Lite derives the
 * bilinear ratio from the sizes, nearest_v2 from 1/scale when a scale is available); the
 * blend is computed in float on the input values and rounded once to the tensor type, so
 * the half variant is the float variant with half storage. Per-axis source indices and
 * weights are precomputed once per op, then every (n, c, y) row is independent. */
#include "backends/cpu/par.h"
#include "engine/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef _Float16 f16;

typedef struct {
    bool bilinear, v2, align_corners;
    int align_mode;
    int64_t in_h, in_w, out_h, out_w;
    float ratio_h, ratio_w; /* source step per output index */
} interp_cfg;

/* Reads the integer values of a plan-time tensor input (OutSize / SizeTensor). */
static cd_status int_input(cd_op_ctx *c, cd_value *v, const char *slot, int64_t *out, int n) {
    if (v->dtype != CD_I32 && v->dtype != CD_I64)
        return cd_op_fail(c, CD_E_MODEL, "input %s must be int32 or int64, it is %s", slot, cd_dtype_name(v->dtype));
    if (cd_value_numel(v) != n)
        return cd_op_fail(c, CD_E_MODEL, "input %s must hold %d value(s), it holds %lld", slot, n,
                          (long long)cd_value_numel(v));
    if (!v->data)
        return cd_op_fail(c, CD_E_UNSUPPORTED,
                          "input %s is computed at run time; its value must be known when "
                          "shapes are planned (only shape/fill_constant/slice chains are evaluated then)",
                          slot);
    for (int i = 0; i < n; i++) out[i] = (int64_t)cd_value_get(v, i);
    return CD_OK;
}

static cd_status interp_config(cd_op_ctx *c, const cd_value *x, interp_cfg *k) {
    const char *t = c->op->type;
    char b[160];
    memset(k, 0, sizeof *k);
    k->bilinear = !strncmp(t, "bilinear", 8);
    k->v2 = strstr(t, "_v2") != NULL;
    if (x->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "X must be 4-D NCHW, got %s", cd_shape_str(&x->shape, b, sizeof b));
    if (x->dtype != CD_F32 && x->dtype != CD_F16)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "element type %s is not supported (float32, float16)",
                          cd_dtype_name(x->dtype));
    const char *layout = cd_attr_str(c->op, "data_layout", "NCHW");
    if (strcmp(layout, "NCHW") && strcmp(layout, "AnyLayout"))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "data_layout '%s' is not supported (NCHW only)", layout);
    const char *method = cd_attr_str(c->op, "interp_method", k->bilinear ? "bilinear" : "nearest");
    if (strcmp(method, k->bilinear ? "bilinear" : "nearest"))
        return cd_op_fail(c, CD_E_MODEL, "interp_method '%s' does not match the op type", method);
    if (!cd_op_attr(c->op, "align_corners"))
        return cd_op_fail(c, CD_E_MODEL, "required BOOLEAN attribute 'align_corners' is missing");
    k->align_corners = cd_attr_bool(c->op, "align_corners", false);
    k->align_mode = (int)cd_attr_int(c->op, "align_mode", 1);
    if (k->align_mode != 0 && k->align_mode != 1)
        return cd_op_fail(c, CD_E_MODEL, "align_mode %d is not 0 or 1", k->align_mode);
    k->in_h = x->shape.d[2];
    k->in_w = x->shape.d[3];

    /* scales available: Scale tensor, then the scale attribute */
    float sh = -1.0f, sw = -1.0f;
    bool scale_for_ratio = false; /* nearest_v2 uses 1/scale as its ratio */
    cd_value *st = cd_in(c, "Scale", 0);
    if (st) {
        int64_t n = cd_value_numel(st);
        if (n != 1 && n != 2)
            return cd_op_fail(c, CD_E_MODEL, "input Scale must hold 1 or 2 values, it holds %lld", (long long)n);
        if (!st->data)
            return cd_op_fail(c, CD_E_UNSUPPORTED,
                              "input Scale is computed at run time; its value must be known "
                              "when shapes are planned");
        sh = (float)cd_value_get(st, 0);
        sw = (float)cd_value_get(st, n - 1);
        if (!(sh > 0.0f) || !(sw > 0.0f) || !isfinite(sh) || !isfinite(sw))
            return cd_op_fail(c, CD_E_MODEL, "input Scale holds %g, %g; scales must be finite and > 0", sh, sw);
        scale_for_ratio = true;
    } else if (k->v2) {
        const double *sv;
        int n = cd_attr_floats(c->op, "scale", &sv);
        if (n == 1 && sv[0] > 0)
            sh = sw = (float)sv[0];
        else if (n >= 2 && sv[0] > 0 && sv[1] > 0) {
            sh = (float)sv[0];
            sw = (float)sv[1];
            scale_for_ratio = true;
        }
    } else {
        double s = cd_attr_float(c->op, "scale", 0.0);
        if (s > 0) sh = sw = (float)s;
    }
    if ((sh > 0 && !isfinite(sh)) || (sw > 0 && !isfinite(sw))) return cd_op_fail(c, CD_E_MODEL, "scale is not finite");

    int64_t oh = cd_attr_int(c->op, "out_h", -1), ow = cd_attr_int(c->op, "out_w", -1);
    cd_value *s0 = cd_in(c, "SizeTensor", 0);
    cd_value *os = cd_in(c, "OutSize", 0);
    cd_status s;
    if (s0) {
        cd_value *s1 = cd_in(c, "SizeTensor", 1);
        if (!s1) return cd_op_fail(c, CD_E_MODEL, "SizeTensor must list two 1-element tensors (out_h, out_w)");
        if ((s = int_input(c, s0, "SizeTensor[0]", &oh, 1)) || (s = int_input(c, s1, "SizeTensor[1]", &ow, 1)))
            return s;
        scale_for_ratio = false;
    } else if (os) {
        int64_t v[2];
        if ((s = int_input(c, os, "OutSize", v, 2))) return s;
        oh = v[0];
        ow = v[1];
    } else if (sh > 0) {
        oh = (int64_t)((float)k->in_h * sh);
        ow = (int64_t)((float)k->in_w * sw);
    }
    if (oh <= 0 || ow <= 0)
        return cd_op_fail(c, CD_E_MODEL,
                          "output size %lld x %lld is not positive (give out_h/out_w, scale, "
                          "OutSize or SizeTensor)",
                          (long long)oh, (long long)ow);
    if (oh > (1 << 20) || ow > (1 << 20))
        return cd_op_fail(c, CD_E_MODEL, "output size %lld x %lld is implausibly large", (long long)oh, (long long)ow);
    k->out_h = oh;
    k->out_w = ow;

    if (k->align_corners) {
        k->ratio_h = (oh > 1 && k->in_h > 1) ? (float)(k->in_h - 1) / (float)(oh - 1) : 0.0f;
        k->ratio_w = (ow > 1 && k->in_w > 1) ? (float)(k->in_w - 1) / (float)(ow - 1) : 0.0f;
    } else if (!k->bilinear && k->v2 && scale_for_ratio) {
        k->ratio_h = 1.0f / sh;
        k->ratio_w = 1.0f / sw;
    } else {
        k->ratio_h = (float)k->in_h / (float)oh;
        k->ratio_w = (float)k->in_w / (float)ow;
    }
    return CD_OK;
}

cd_status cd_basic_interp_infer(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    interp_cfg k;
    cd_status s = interp_config(c, x, &k);
    if (s) return s;
    o->shape = x->shape;
    o->shape.d[2] = k.out_h;
    o->shape.d[3] = k.out_w;
    o->dtype = x->dtype;
    return CD_OK;
}

/* Per-axis taps: i0, i1 and the weight of i1. */
static void axis_taps(const interp_cfg *k, int64_t in, int64_t out, float ratio, int32_t *i0, int32_t *i1, float *lam) {
    for (int64_t d = 0; d < out; d++) {
        if (!k->bilinear) {
            float src = k->align_corners ? (float)d * ratio + 0.5f : (float)d * ratio;
            int64_t i = (int64_t)src;
            if (i > in - 1) i = in - 1;
            if (i < 0) i = 0;
            i0[d] = i1[d] = (int32_t)i;
            lam[d] = 0.0f;
            continue;
        }
        float src;
        if (!k->align_corners && k->align_mode == 0) {
            src = ((float)d + 0.5f) * ratio - 0.5f;
            if (src < 0.0f) src = 0.0f;
        } else {
            src = (float)d * ratio;
        }
        int64_t i = (int64_t)src;
        if (i > in - 1) i = in - 1;
        i0[d] = (int32_t)i;
        i1[d] = (int32_t)(i + 1 < in ? i + 1 : in - 1);
        lam[d] = src - (float)i;
        if (lam[d] < 0.0f) lam[d] = 0.0f;
    }
}

#define IP_T float
#define IP_NAME interp_f32
#include "ops_basic_interp_tmpl.h"
#define IP_T f16
#define IP_NAME interp_f16
#include "ops_basic_interp_tmpl.h"

cd_status cd_basic_interp_run(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    interp_cfg k;
    cd_status s = interp_config(c, x, &k);
    if (s) return s;
    if (o->dtype != x->dtype || o->shape.rank != 4 || o->shape.d[2] != k.out_h || o->shape.d[3] != k.out_w)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    int64_t planes = x->shape.d[0] * x->shape.d[1];
    if (planes == 0 || k.in_h == 0 || k.in_w == 0) {
        if (k.in_h == 0 || k.in_w == 0) memset(o->data, 0, o->nbytes);
        return CD_OK;
    }
    size_t nh = (size_t)k.out_h, nw = (size_t)k.out_w;
    int32_t *idx = malloc((2 * nh + 2 * nw) * sizeof *idx);
    float *lam = malloc((nh + nw) * sizeof *lam);
    if (!idx || !lam) {
        free(idx);
        free(lam);
        return cd_op_fail(c, CD_E_NOMEM, "out of memory for %zu interpolation taps", nh + nw);
    }
    int32_t *y0 = idx, *y1 = idx + nh, *x0 = idx + 2 * nh, *x1 = idx + 2 * nh + nw;
    axis_taps(&k, k.in_h, k.out_h, k.ratio_h, y0, y1, lam);
    axis_taps(&k, k.in_w, k.out_w, k.ratio_w, x0, x1, lam + nh);
    int th = c->threads > 0 ? c->threads : 1;
    if (x->dtype == CD_F32)
        interp_f32(&k, planes, x->data, o->data, y0, y1, lam, x0, x1, lam + nh, th);
    else
        interp_f16(&k, planes, x->data, o->data, y0, y1, lam, x0, x1, lam + nh, th);
    free(idx);
    free(lam);
    return CD_OK;
}
