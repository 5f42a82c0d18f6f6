/* pool2d (docs/nb-format.md §7.5): max / avg, global, adaptive, exclusive, ceil_mode, 2/4-value
 * paddings, SAME/VALID/EXPLICIT. One template body for float and _Float16
 * (ops_nn_pool_tmpl.h).
 *
 * fp16 average pooling sums the window in float and rounds the mean to half once. A half
 * running sum overflows to Inf once it passes 65504 even though the mean is in range:
 * ppocr_v3_det's global pool over 40x40 = 1600 values (op #107 pool2d_6) gave Inf, then
 * NaN downstream. That is a hazard of the accumulator, not of the model, so we widen it.
 * This is our choice, not a copy of Paddle-Lite: its ARM fp16 pooling
 * (lite/backends/arm/math/fp16/pooling_fp16.cc) keeps a float16_t sum (`fadd v.8h` in the
 * global-average assembly, which spreads the sum over 8 lanes and so overflows later but
 * still can). Max pooling compares stored values, exact in either type.
 *
 * Choices where the sheet is silent: global_pooling wins over adaptive (output 1x1); a
 * window that lies entirely in padding (possible when padding >= ksize) yields 0; the
 * non-exclusive divisor clips the window to the padded extent using the actual trailing
 * padding (identical to Lite's leading-pad rule for the symmetric paddings real models
 * use, and to ONNX count_include_pad for asymmetric ones); max propagates NaN. */
#include "backends/cpu/par.h"
#include "engine/ops.h"
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#endif
#include <omp.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t N, C, H, W, Ho, Wo, kh, kw, sh, sw, pt, pb, pl, pr;
    bool is_max, global, adaptive, exclusive;
} pool_geo;

static cd_status pool_parse(cd_op_ctx *c, pool_geo *g) {
    memset(g, 0, sizeof *g);
    cd_value *x = cd_in_req(c, "X", 0);
    if (!x) return c->err->code;
    if (!cd_out(c, "Out", 0)) return cd_op_fail(c, CD_E_MODEL, "output slot Out is not connected");
    char b[96];
    if (x->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "X must be 4-D NCHW but has shape %s", cd_shape_str(&x->shape, b, sizeof b));
    for (int i = 0; i < 4; i++)
        if (x->shape.d[i] <= 0)
            return cd_op_fail(c, CD_E_MODEL, "X shape %s has a non-positive dim", cd_shape_str(&x->shape, b, sizeof b));
    g->N = x->shape.d[0];
    g->C = x->shape.d[1];
    g->H = x->shape.d[2];
    g->W = x->shape.d[3];
    const char *pt = cd_attr_str(c->op, "pooling_type", NULL);
    if (!pt) return cd_op_fail(c, CD_E_MODEL, "required attribute pooling_type is missing");
    if (!strcmp(pt, "max"))
        g->is_max = true;
    else if (strcmp(pt, "avg"))
        return cd_op_fail(c, CD_E_MODEL, "pooling_type '%s' is not max or avg", pt);
    g->global = cd_attr_bool(c->op, "global_pooling", false);
    g->adaptive = cd_attr_bool(c->op, "adaptive", false);
    g->exclusive = cd_attr_bool(c->op, "exclusive", true);
    bool ceil_mode = cd_attr_bool(c->op, "ceil_mode", false);
    const int64_t *v;
    int n = cd_attr_ints(c->op, "ksize", &v);
    if (n != 2 && !g->global) return cd_op_fail(c, CD_E_MODEL, "ksize has %d values; expected 2", n);
    g->kh = n == 2 ? v[0] : 1;
    g->kw = n == 2 ? v[1] : 1;
    if (!g->global && (g->kh <= 0 || g->kw <= 0))
        return cd_op_fail(c, CD_E_MODEL, "ksize [%lld, %lld] must be > 0", (long long)g->kh, (long long)g->kw);
    n = cd_attr_ints(c->op, "strides", &v);
    if (n != 0 && n != 2) return cd_op_fail(c, CD_E_MODEL, "strides has %d values; expected 2", n);
    g->sh = n ? v[0] : 1;
    g->sw = n ? v[1] : 1;
    if (g->sh <= 0 || g->sw <= 0)
        return cd_op_fail(c, CD_E_MODEL, "strides [%lld, %lld] must be > 0", (long long)g->sh, (long long)g->sw);
    n = cd_attr_ints(c->op, "paddings", &v);
    if (n == 2) {
        g->pt = g->pb = v[0];
        g->pl = g->pr = v[1];
    } else if (n == 4) {
        g->pt = v[0];
        g->pb = v[1];
        g->pl = v[2];
        g->pr = v[3];
    } else if (n != 0)
        return cd_op_fail(c, CD_E_MODEL, "paddings has %d values; expected 2 or 4", n);
    if (g->pt < 0 || g->pb < 0 || g->pl < 0 || g->pr < 0) return cd_op_fail(c, CD_E_MODEL, "paddings must be >= 0");
    const char *alg = cd_attr_str(c->op, "padding_algorithm", "EXPLICIT");
    if (!strcmp(alg, "VALID")) {
        g->pt = g->pb = g->pl = g->pr = 0;
    } else if (!strcmp(alg, "SAME")) {
        int64_t oh = (g->H + g->sh - 1) / g->sh, ow = (g->W + g->sw - 1) / g->sw;
        int64_t th = (oh - 1) * g->sh + g->kh - g->H, tw = (ow - 1) * g->sw + g->kw - g->W;
        if (th < 0) th = 0;
        if (tw < 0) tw = 0;
        g->pt = th / 2;
        g->pb = th - g->pt;
        g->pl = tw / 2;
        g->pr = tw - g->pl;
    } else if (alg[0] && strcmp(alg, "EXPLICIT")) {
        return cd_op_fail(c, CD_E_MODEL, "padding_algorithm '%s' is not one of EXPLICIT, SAME, VALID", alg);
    }
    if (g->global || g->adaptive) g->pt = g->pb = g->pl = g->pr = 0;
    if (g->global) {
        g->kh = g->H;
        g->kw = g->W;
        g->Ho = g->Wo = 1;
        g->adaptive = false;
        g->sh = g->sw = 1;
    } else if (g->adaptive) {
        g->Ho = g->kh;
        g->Wo = g->kw;
    } else {
        int64_t eh = g->H - g->kh + g->pt + g->pb, ew = g->W - g->kw + g->pl + g->pr;
        /* A window larger than the padded input still gives one output row when the
         * excess is below the stride: C division truncates toward zero (docs/nb-format.md §7),
         * exactly as Paddle-Lite computes it; the window is then clipped to the input.
         * (PP-OCR slim cls at its declared 32x100 input relies on this.) */
        if (eh <= -g->sh || ew <= -g->sw)
            return cd_op_fail(c, CD_E_MODEL, "ksize %lldx%lld is larger than the padded input %lldx%lld",
                              (long long)g->kh, (long long)g->kw, (long long)(g->H + g->pt + g->pb),
                              (long long)(g->W + g->pl + g->pr));
        g->Ho = (ceil_mode ? eh + g->sh - 1 : eh) / g->sh + 1;
        g->Wo = (ceil_mode ? ew + g->sw - 1 : ew) / g->sw + 1;
    }
    if (g->Ho <= 0 || g->Wo <= 0)
        return cd_op_fail(c, CD_E_MODEL, "computed output size %lldx%lld is not positive", (long long)g->Ho,
                          (long long)g->Wo);
    return CD_OK;
}

cd_status cd_nn_pool_infer(cd_op_ctx *c) {
    pool_geo g;
    cd_status s = pool_parse(c, &g);
    if (s) return s;
    cd_value *o = cd_out(c, "Out", 0);
    o->dtype = cd_act_dtype(c);
    o->shape.rank = 4;
    o->shape.d[0] = g.N;
    o->shape.d[1] = g.C;
    o->shape.d[2] = g.Ho;
    o->shape.d[3] = g.Wo;
    return CD_OK;
}

static inline int64_t pmax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t pmin(int64_t a, int64_t b) { return a < b ? a : b; }

/* Window [s, e) of output index o along one dim, clipped to [0, in); *div_e/[*div_s] is
 * the window clipped only to the padded extent (for the non-exclusive divisor). */
static inline void pool_window(const pool_geo *g, bool rows, int64_t o, int64_t *s, int64_t *e, int64_t *pad_cnt) {
    int64_t in = rows ? g->H : g->W, out = rows ? g->Ho : g->Wo;
    if (g->adaptive) {
        *s = o * in / out;
        *e = ((o + 1) * in + out - 1) / out;
        *pad_cnt = *e - *s;
        return;
    }
    int64_t k = rows ? g->kh : g->kw, st = rows ? g->sh : g->sw, p0 = rows ? g->pt : g->pl, p1 = rows ? g->pb : g->pr;
    int64_t a = o * st - p0, b = a + k;
    *pad_cnt = pmin(b, in + p1) - pmax(a, -p0);
    *s = pmax(a, 0);
    *e = pmin(b, in);
}

#define NN_T float
#define NN_S f32
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define POOL_VEC 1 /* float: the AVX-512 max-pool planes (ops_nn_pool_tmpl.h F(max_plane512)) */
#else
#define POOL_VEC 0
#endif
#include "ops_nn_pool_tmpl.h"
#undef POOL_VEC
#define POOL_VEC 0
#define NN_T _Float16
#define NN_S f16
#include "ops_nn_pool_tmpl.h"
#undef POOL_VEC

cd_status cd_nn_pool_run(cd_op_ctx *c) {
    pool_geo g;
    cd_status s = pool_parse(c, &g);
    if (s) return s;
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (x->dtype != cd_act_dtype(c) || !x->data || !o->data)
        return cd_op_fail(c, CD_E_INTERNAL, "X dtype %s does not match the run precision or data is missing",
                          cd_dtype_name(x->dtype));
    if (c->prec == CD_PREC_FP16)
        pool_run_f16(&g, x->data, o->data, c->threads);
    else
        pool_run_f32(&g, x->data, o->data, c->threads);
    return CD_OK;
}
