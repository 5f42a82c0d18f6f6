/* Data-movement and sampling ops added for op coverage (docs/op-coverage.md): expand,
 * expand_v2, tile, gather, pixel_shuffle, grid_sampler, assign_value (a constant), top_k,
 * top_k_v2, unbind and gather_nd.
 *
 * expand/expand_v2/tile/gather/pixel_shuffle copy elements (any dtype, bit-exact); expand,
 * expand_v2, tile, gather and assign_value are CD_OPF_SHAPE so integer shape chains through them resolve at plan
 * time. Tensor-valued attributes (ExpandTimes, Shape, Axis, ...) must be known when shapes
 * are planned.
 *
 * Paddle semantics (facts from the Paddle op definitions):
 *  - expand: INTS `expand_times` (or ExpandTimes tensor / expand_times_tensor list); Out dim
 *    i = X dim i * times[i] (tiling).
 *  - tile: INTS `repeat_times` (or RepeatTimes / repeat_times_tensor); the shorter of X's dims
 *    and repeat_times gets leading 1s; Out dim i = X dim i * repeat_times[i].
 *  - expand_v2: INTS `shape` (or Shape tensor / expand_shapes_tensor list), at least rank(X)
 *    values; X is aligned to the right; -1 keeps X's dim; X dims of 1 broadcast.
 *  - gather: X, Index (int32/int64, 1-D or [N, 1]), optional Axis tensor over INT `axis`
 *    (default 0): Out = X with dim `axis` replaced by the N indexed slices.
 *  - pixel_shuffle: INT `upscale_factor` r, NCHW: Out[n, c, h*r + i, w*r + j] =
 *    X[n, c*r*r + i*r + j, h, w].
 *  - grid_sampler: X [N, C, H, W], Grid [N, Ho, Wo, 2] (x, y in [-1, 1]) -> Output
 *    [N, C, Ho, Wo]; STRING `mode` bilinear|nearest (bilinear), STRING `padding_mode`
 *    zeros|border|reflection (zeros), BOOLEAN `align_corners` (true). Nearest rounds halves
 *    away from zero (Paddle's round). Coordinates and weights are computed in float. */
/* Multiplies and adds stay separately rounded (no FMA contraction, which GCC does by default
 * for gnu11 on FMA ISAs such as aarch64): the results are the same bits on every CPU, and the
 * OpenCL kernels (FP_CONTRACT OFF) compute the same roundings. */
#pragma GCC optimize("fp-contract=off")
#include "backends/cpu/par.h"
#include "backends/cpu/ops_util.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef _Float16 f16;
#define PAR_MIN 32768
#define MAXV CD_OPS_MAXV

/* ------------------------------------------------------------------ helpers */

/* An integer list from (in order of precedence) a tensor slot, a list slot of 1-element
 * tensors, or an INTS attribute. */
static cd_status int_list(cd_op_ctx *c, const char *tslot, const char *lslot, const char *attr, int64_t *out, int *n) {
    cd_value *t = cd_in(c, tslot, 0);
    if (t) return cd_ops_tensor_ints(c, t, tslot, out, n);
    cd_status s = cd_ops_list_ints(c, lslot, out, n);
    if (s || *n > 0) return s;
    const int64_t *v;
    int k = cd_attr_ints(c->op, attr, &v);
    if (k > MAXV) return cd_op_fail(c, CD_E_MODEL, "attribute %s has %d values (at most %d)", attr, k, MAXV);
    for (int i = 0; i < k; i++) out[i] = v[i];
    *n = k;
    return CD_OK;
}

/* Shape rule of an op whose Out has X's dtype: from X (and the extra input e, when the op has
 * one) the Out shape os, plus what the kernel needs of the parse in *cfg (when not NULL). */
typedef cd_status (*shape_fn)(cd_op_ctx *c, const cd_value *x, const cd_value *e, void *cfg, cd_shape *os);

/* X, Out (slot `out`), the extra input `extra` when named (else *e = NULL) and the shape rule
 * f, into os (NULL: Out's shape). */
static cd_status io_shape(cd_op_ctx *c, const char *out, const char *extra, shape_fn f, void *cfg, cd_value **x,
                          cd_value **o, cd_value **e, cd_shape *os) {
    cd_status s = cd_ops_need_io(c, "X", out, x, o);
    if (s) return s;
    *e = extra ? cd_in(c, extra, 0) : NULL;
    if (extra && !*e) return cd_op_fail(c, CD_E_MODEL, "required input %s is not connected", extra);
    return f(c, *x, *e, cfg, os ? os : &(*o)->shape);
}

static cd_status data_infer(cd_op_ctx *c, const char *out, const char *extra, shape_fn f) {
    cd_value *x, *o, *e;
    cd_status s = io_shape(c, out, extra, f, NULL, &x, &o, &e, NULL);
    if (!s) o->dtype = x->dtype;
    return s;
}

/* The start of a run: io_shape, and Out still as planned. */
static cd_status data_run_begin(cd_op_ctx *c, const char *out, const char *extra, shape_fn f, void *cfg, cd_value **x,
                                cd_value **o, cd_value **e) {
    cd_shape os;
    cd_status s = io_shape(c, out, extra, f, cfg, x, o, e, &os);
    if (s) return s;
    if (!cd_shape_eq(&os, &(*o)->shape) || (*o)->dtype != (*x)->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    return CD_OK;
}

static inline void copy_elem(char *dst, const char *src, size_t es) {
    switch (es) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, es); break;
    }
}

/* ------------------------------------------------------------------ expand / expand_v2 */

/* Out shape of expand / expand_v2 and X's shape aligned to Out's rank (leading 1s). */
static cd_status expand_shapes(cd_op_ctx *c, const cd_value *x, const cd_value *e, void *cfg, cd_shape *os) {
    cd_shape tmp, *xa = cfg ? cfg : &tmp;
    int64_t v[MAXV];
    int n;
    cd_status s;
    const cd_shape *xs = &x->shape;
    memset(os, 0, sizeof *os);
    memset(xa, 0, sizeof *xa);
    if (!strcmp(c->op->type, "expand")) {
        if ((s = int_list(c, "ExpandTimes", "expand_times_tensor", "expand_times", v, &n))) return s;
        if (n != xs->rank)
            return cd_op_fail(c, CD_E_MODEL, "expand_times has %d values but X has rank %d", n, xs->rank);
        os->rank = xa->rank = xs->rank;
        for (int i = 0; i < n; i++) {
            if (v[i] < 1) return cd_op_fail(c, CD_E_MODEL, "expand_times[%d] = %lld must be >= 1", i, (long long)v[i]);
            xa->d[i] = xs->d[i];
            if (__builtin_mul_overflow(xs->d[i], v[i], &os->d[i]))
                return cd_op_fail(c, CD_E_MODEL, "expand_times[%d] = %lld overflows dim %d", i, (long long)v[i], i);
        }
        return CD_OK;
    }
    if (!strcmp(c->op->type, "tile")) {
        /* repeat_times shorter than rank(X): leading 1s; longer: X gets leading 1s */
        if ((s = int_list(c, "RepeatTimes", "repeat_times_tensor", "repeat_times", v, &n))) return s;
        int r = n > xs->rank ? n : xs->rank;
        if (r > CD_MAX_RANK) return cd_op_fail(c, CD_E_MODEL, "tile needs rank %d (at most %d)", r, CD_MAX_RANK);
        os->rank = xa->rank = r;
        for (int i = 0; i < r; i++) {
            int ix = i - (r - xs->rank), iv = i - (r - n);
            int64_t t = iv >= 0 ? v[iv] : 1;
            if (t < 1) return cd_op_fail(c, CD_E_MODEL, "repeat_times[%d] = %lld must be >= 1", iv, (long long)t);
            xa->d[i] = ix >= 0 ? xs->d[ix] : 1;
            if (__builtin_mul_overflow(xa->d[i], t, &os->d[i]))
                return cd_op_fail(c, CD_E_MODEL, "repeat_times[%d] = %lld overflows dim %d", iv, (long long)t, i);
        }
        return CD_OK;
    }
    if ((s = int_list(c, "Shape", "expand_shapes_tensor", "shape", v, &n))) return s;
    if (n < xs->rank || n > CD_MAX_RANK)
        return cd_op_fail(c, CD_E_MODEL, "expand_v2 shape has %d values; X has rank %d (need rank(X) .. %d values)", n,
                          xs->rank, CD_MAX_RANK);
    os->rank = xa->rank = n;
    int lead = n - xs->rank;
    for (int i = 0; i < n; i++) {
        int64_t xd = i < lead ? 1 : xs->d[i - lead];
        xa->d[i] = xd;
        if (v[i] == -1) {
            if (i < lead) return cd_op_fail(c, CD_E_MODEL, "expand_v2 shape[%d] = -1 names a dim X does not have", i);
            os->d[i] = xd;
        } else if (v[i] < 1) {
            return cd_op_fail(c, CD_E_MODEL, "expand_v2 shape[%d] = %lld is invalid", i, (long long)v[i]);
        } else if (xd != 1 && xd != v[i]) {
            return cd_op_fail(c, CD_E_MODEL,
                              "expand_v2 shape[%d] = %lld does not match X dim %lld (must be equal or X "
                              "dim 1)",
                              i, (long long)v[i], (long long)xd);
        } else {
            os->d[i] = v[i];
        }
    }
    return CD_OK;
}

cd_status cd_more_expand_infer(cd_op_ctx *c) { return data_infer(c, "Out", NULL, expand_shapes); }

cd_status cd_more_expand_run(cd_op_ctx *c) {
    cd_value *x, *o, *e;
    cd_shape xa;
    cd_status s = data_run_begin(c, "Out", NULL, expand_shapes, &xa, &x, &o, &e);
    if (s) return s;
    const cd_shape os = o->shape;
    const size_t es = cd_dtype_size(x->dtype);
    int64_t st[CD_MAX_RANK], p = 1, n = cd_value_numel(o);
    for (int i = xa.rank - 1; i >= 0; i--) st[i] = p, p *= xa.d[i];
    const char *in = x->data;
    char *out = o->data;
    const int r = os.rank;
    int threads = c->threads > 0 ? c->threads : 1;
    CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, {
        int64_t q = i, off = 0;
        for (int d = r - 1; d >= 0; d--) {
            off += ((q % os.d[d]) % xa.d[d]) * st[d];
            q /= os.d[d];
        }
        copy_elem(out + (size_t)i * es, in + (size_t)off * es, es);
    });
    return CD_OK;
}

/* ------------------------------------------------------------------ gather */

static cd_status gather_shapes(cd_op_ctx *c, const cd_value *x, const cd_value *ix, void *cfg, cd_shape *os) {
    int64_t tmp, *axis = cfg ? cfg : &tmp;
    cd_status s = cd_ops_axis(c, "Axis", "gather axis", x->shape.rank, axis);
    if (s) return s;
    if (ix->dtype != CD_I32 && ix->dtype != CD_I64)
        return cd_op_fail(c, CD_E_MODEL, "Index must be int32 or int64, it is %s", cd_dtype_name(ix->dtype));
    if (ix->shape.rank > 2 || (ix->shape.rank == 2 && ix->shape.d[1] != 1))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "Index must be 1-D or [N, 1], it has rank %d", ix->shape.rank);
    *os = x->shape;
    os->d[*axis] = cd_value_numel(ix);
    return CD_OK;
}

cd_status cd_more_gather_infer(cd_op_ctx *c) { return data_infer(c, "Out", "Index", gather_shapes); }

cd_status cd_more_gather_run(cd_op_ctx *c) {
    cd_value *x, *o, *ix;
    int64_t axis;
    cd_status s = data_run_begin(c, "Out", "Index", gather_shapes, &axis, &x, &o, &ix);
    if (s) return s;
    int64_t outer = 1, inner = 1, A = x->shape.d[axis], N = cd_value_numel(ix);
    for (int i = 0; i < axis; i++) outer *= x->shape.d[i];
    for (int i = (int)axis + 1; i < x->shape.rank; i++) inner *= x->shape.d[i];
    for (int64_t j = 0; j < N; j++) {
        int64_t k = ix->dtype == CD_I32 ? ((const int32_t *)ix->data)[j] : ((const int64_t *)ix->data)[j];
        if (k < 0 || k >= A)
            return cd_op_fail(c, CD_E_MODEL, "Index[%lld] = %lld is out of range [0, %lld) for axis %lld", (long long)j,
                              (long long)k, (long long)A, (long long)axis);
    }
    const size_t es = cd_dtype_size(x->dtype), run = (size_t)inner * es;
    const char *in = x->data;
    char *out = o->data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t j = 0; j < N; j++) {
            int64_t k = ix->dtype == CD_I32 ? ((const int32_t *)ix->data)[j] : ((const int64_t *)ix->data)[j];
            memcpy(out + (size_t)(a * N + j) * run, in + (size_t)(a * A + k) * run, run);
        }
    return CD_OK;
}

/* ------------------------------------------------------------------ pixel_shuffle */

static cd_status ps_parse(cd_op_ctx *c, const cd_value *x, const cd_value *e, void *cfg, cd_shape *os) {
    int64_t tmp, *r = cfg ? cfg : &tmp;
    *r = cd_attr_int(c->op, "upscale_factor", 1);
    const char *df = cd_attr_str(c->op, "data_format", "NCHW");
    if (strcmp(df, "NCHW") && strcmp(df, "AnyLayout"))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "pixel_shuffle data_format '%s' is not supported (NCHW only)", df);
    if (*r < 1 || *r > 65536)
        return cd_op_fail(c, CD_E_MODEL, "upscale_factor %lld must be in [1, 65536]", (long long)*r);
    if (x->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "pixel_shuffle needs 4-D NCHW X, it has rank %d", x->shape.rank);
    if (x->shape.d[1] % (*r * *r))
        return cd_op_fail(c, CD_E_MODEL, "channels %lld are not divisible by upscale_factor^2 = %lld",
                          (long long)x->shape.d[1], (long long)(*r * *r));
    *os = x->shape;
    os->d[1] = x->shape.d[1] / (*r * *r);
    if (__builtin_mul_overflow(x->shape.d[2], *r, &os->d[2]) || __builtin_mul_overflow(x->shape.d[3], *r, &os->d[3]))
        return cd_op_fail(c, CD_E_MODEL, "upscale_factor %lld overflows the output size", (long long)*r);
    return CD_OK;
}

cd_status cd_more_pixel_shuffle_infer(cd_op_ctx *c) { return data_infer(c, "Out", NULL, ps_parse); }

cd_status cd_more_pixel_shuffle_run(cd_op_ctx *c) {
    cd_value *x, *o, *e;
    int64_t r;
    cd_status s = data_run_begin(c, "Out", NULL, ps_parse, &r, &x, &o, &e);
    if (s) return s;
    const int64_t C = o->shape.d[1], Ho = o->shape.d[2], Wo = o->shape.d[3], H = x->shape.d[2], W = x->shape.d[3];
    const int64_t n = cd_value_numel(o);
    const size_t es = cd_dtype_size(x->dtype);
    const char *in = x->data;
    char *out = o->data;
    int threads = c->threads > 0 ? c->threads : 1;
    CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, {
        const int64_t ox = i % Wo, oy = (i / Wo) % Ho, ch = (i / (Wo * Ho)) % C, nb = i / (Wo * Ho * C);
        const int64_t ic = ch * r * r + (oy % r) * r + (ox % r);
        const int64_t src = ((nb * C * r * r + ic) * H + oy / r) * W + ox / r;
        copy_elem(out + (size_t)i * es, in + (size_t)src * es, es);
    });
    return CD_OK;
}

/* ------------------------------------------------------------------ grid_sampler */

typedef struct {
    bool nearest;
    int pad;
    bool align;
} gs_cfg; /* pad: 0 zeros, 1 border, 2 reflection */

static cd_status gs_parse(cd_op_ctx *c, const cd_value *x, const cd_value *g, void *cfg, cd_shape *os) {
    gs_cfg tmp, *p = cfg ? cfg : &tmp;
    const char *m = cd_attr_str(c->op, "mode", "bilinear"), *pm = cd_attr_str(c->op, "padding_mode", "zeros");
    if (!strcmp(m, "bilinear"))
        p->nearest = false;
    else if (!strcmp(m, "nearest"))
        p->nearest = true;
    else
        return cd_op_fail(c, CD_E_UNSUPPORTED, "grid_sampler mode '%s' is not bilinear or nearest", m);
    if (!strcmp(pm, "zeros"))
        p->pad = 0;
    else if (!strcmp(pm, "border"))
        p->pad = 1;
    else if (!strcmp(pm, "reflection"))
        p->pad = 2;
    else
        return cd_op_fail(c, CD_E_MODEL, "grid_sampler padding_mode '%s' is not zeros, border or reflection", pm);
    p->align = cd_attr_bool(c->op, "align_corners", true);
    if (x->shape.rank != 4 || g->shape.rank != 4 || g->shape.d[3] != 2 || g->shape.d[0] != x->shape.d[0])
        return cd_op_fail(c, CD_E_MODEL, "grid_sampler needs X [N, C, H, W] and Grid [N, Ho, Wo, 2]");
    if (!cd_ops_is_float(x->dtype) || g->dtype != x->dtype)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "X and Grid must both be float32 or float16 (X %s, Grid %s)",
                          cd_dtype_name(x->dtype), cd_dtype_name(g->dtype));
    *os = x->shape;
    os->d[2] = g->shape.d[1];
    os->d[3] = g->shape.d[2];
    return CD_OK;
}

/* Reflects v into [lo2/2, hi2/2] (bounds given doubled so that -0.5 stays exact). */
static float gs_reflect(float v, int lo2, int hi2) {
    if (lo2 == hi2) return 0.0f;
    const float mn = (float)lo2 / 2.0f, span = (float)(hi2 - lo2) / 2.0f;
    v = fabsf(v - mn);
    const float extra = fmodf(v, span);
    const int flips = (int)floorf(v / span);
    return (flips % 2 == 0) ? extra + mn : span - extra + mn;
}

/* Source coordinate of a normalised grid value g along an axis of `size` pixels. */
static float gs_coord(float g, int64_t size, const gs_cfg *p) {
    const float sz = (float)size;
    float v = p->align ? (g + 1.0f) / 2.0f * (sz - 1.0f) : ((g + 1.0f) * sz - 1.0f) / 2.0f;
    if (p->pad == 2) { v = p->align ? gs_reflect(v, 0, 2 * (int)(size - 1)) : gs_reflect(v, -1, 2 * (int)size - 1); }
    if (p->pad >= 1) v = fminf(fmaxf(v, 0.0f), sz - 1.0f);
    return v;
}

cd_status cd_more_grid_sampler_infer(cd_op_ctx *c) { return data_infer(c, "Output", "Grid", gs_parse); }

cd_status cd_more_grid_sampler_run(cd_op_ctx *c) {
    cd_value *x, *o, *g;
    gs_cfg p;
    cd_status s = data_run_begin(c, "Output", "Grid", gs_parse, &p, &x, &o, &g);
    if (s) return s;
    const int64_t C = x->shape.d[1], H = x->shape.d[2], W = x->shape.d[3], Ho = o->shape.d[2], Wo = o->shape.d[3];
    const int64_t n = cd_value_numel(o);
    const cd_dtype t = x->dtype;
    const void *in = x->data, *gd = g->data;
    void *out = o->data;
    int threads = c->threads > 0 ? c->threads : 1;
    CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, {
        const int64_t ox = i % Wo, oy = (i / Wo) % Ho, ch = (i / (Wo * Ho)) % C, nb = i / (Wo * Ho * C);
        const int64_t gi = ((nb * Ho + oy) * Wo + ox) * 2;
        const float fx = gs_coord(cd_ops_ldf(gd, t, gi), W, &p), fy = gs_coord(cd_ops_ldf(gd, t, gi + 1), H, &p);
        const int64_t base = (nb * C + ch) * H * W;
        float v = 0.0f;
        if (p.nearest) {
            const float rx = roundf(fx), ry = roundf(fy);
            if (rx >= 0.0f && rx <= (float)(W - 1) && ry >= 0.0f && ry <= (float)(H - 1))
                v = cd_ops_ldf(in, t, base + (int64_t)ry * W + (int64_t)rx);
        } else if (isfinite(fx) && isfinite(fy) && fx > -2.0f && fy > -2.0f && fx < (float)W + 1.0f &&
                   fy < (float)H + 1.0f) {
            const float x0f = floorf(fx), y0f = floorf(fy);
            const int64_t x0 = (int64_t)x0f, y0 = (int64_t)y0f;
            const float wx1 = fx - x0f, wy1 = fy - y0f, wx0 = 1.0f - wx1, wy0 = 1.0f - wy1;
            for (int dy = 0; dy < 2; dy++)
                for (int dx = 0; dx < 2; dx++) {
                    const int64_t yy = y0 + dy, xx = x0 + dx;
                    if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                    v += cd_ops_ldf(in, t, base + yy * W + xx) * (dy ? wy1 : wy0) * (dx ? wx1 : wx0);
                }
        }
        if (t == CD_F16)
            ((f16 *)out)[i] = (f16)v;
        else
            ((float *)out)[i] = v;
    });
    return CD_OK;
}

/* ------------------------------------------------------------------ assign_value */

/* assign_value: a constant tensor from attributes: INTS `shape`, INT `dtype` (Paddle VarType:
 * 0 bool, 2 int32, 3 int64, 5 float32) and the matching list `bool_values`, `int32_values`,
 * `int64_values` or `fp32_values`. Float values follow the run precision. */
static cd_status av_parse(cd_op_ctx *c, cd_shape *os, cd_dtype *dt, const char **list, int *count) {
    const int64_t *sh;
    int n = cd_attr_ints(c->op, "shape", &sh);
    if (n > CD_MAX_RANK)
        return cd_op_fail(c, CD_E_MODEL, "assign_value shape has %d entries (at most %d)", n, CD_MAX_RANK);
    memset(os, 0, sizeof *os);
    os->rank = n;
    for (int i = 0; i < n; i++) {
        if (sh[i] < 0)
            return cd_op_fail(c, CD_E_MODEL, "assign_value shape[%d] = %lld is negative", i, (long long)sh[i]);
        os->d[i] = sh[i];
    }
    int64_t vt = cd_attr_int(c->op, "dtype", 5);
    switch (vt) {
    case 0: *dt = CD_BOOL, *list = "bool_values"; break;
    case 2: *dt = CD_I32, *list = "int32_values"; break;
    case 3: *dt = CD_I64, *list = "int64_values"; break;
    case 5: *dt = cd_act_dtype(c), *list = "fp32_values"; break;
    default:
        return cd_op_fail(c, CD_E_UNSUPPORTED, "assign_value dtype %lld is not bool, int32, int64 or float32",
                          (long long)vt);
    }
    const cd_attr *a = cd_op_attr(c->op, *list);
    *count = a ? a->n : 0;
    if (*count != cd_shape_numel(os))
        return cd_op_fail(c, CD_E_MODEL, "assign_value %s holds %d values but shape has %lld elements", *list, *count,
                          (long long)cd_shape_numel(os));
    return CD_OK;
}

cd_status cd_more_assign_value_infer(cd_op_ctx *c) {
    cd_value *o = cd_out(c, "Out", 0);
    if (!o) return cd_op_fail(c, CD_E_MODEL, "required output Out is not connected");
    const char *list;
    int n;
    return av_parse(c, &o->shape, &o->dtype, &list, &n);
}

cd_status cd_more_assign_value_run(cd_op_ctx *c) {
    cd_value *o = cd_out(c, "Out", 0);
    if (!o) return cd_op_fail(c, CD_E_MODEL, "required output Out is not connected");
    cd_shape os;
    cd_dtype dt;
    const char *list;
    int n;
    cd_status s = av_parse(c, &os, &dt, &list, &n);
    if (s) return s;
    if (!cd_shape_eq(&os, &o->shape) || dt != o->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    const cd_attr *a = cd_op_attr(c->op, list);
    for (int i = 0; i < n; i++) {
        if (dt == CD_I64)
            ((int64_t *)o->data)[i] = a->ints ? a->ints[i] : (int64_t)a->floats[i];
        else
            cd_value_set(o, i, a->ints ? (double)a->ints[i] : (a->floats ? a->floats[i] : 0.0));
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ top_k, top_k_v2 */

/* top_k (v1: the last axis, INT `k` or K tensor) and top_k_v2 (INT `axis` -1, BOOLEAN `largest`
 * true, BOOLEAN `sorted` true): Out = the k largest (smallest) values along the axis, Indices
 * (int64) their positions. The result is always sorted (sorted=false leaves the order to the
 * implementation in Paddle); equal values keep the lower index first; NaN counts as larger than
 * every number. The OpenCL kernel uses the same order, so both give the same indices. */
typedef struct {
    int64_t k, outer, len, inner;
    bool largest;
} topk_cfg;

static cd_status topk_parse(cd_op_ctx *c, const cd_value *x, const cd_value *e, void *cfg, cd_shape *os) {
    topk_cfg tmp, *p = cfg ? cfg : &tmp;
    cd_status s = cd_ops_need_float(c, x);
    if (s) return s;
    const bool v2 = !strcmp(c->op->type, "top_k_v2");
    int64_t axis = v2 ? cd_attr_int(c->op, "axis", -1) : -1, v[MAXV];
    int r = x->shape.rank, n;
    p->k = cd_attr_int(c->op, "k", 1);
    p->largest = v2 ? cd_attr_bool(c->op, "largest", true) : true;
    cd_value *kt = cd_in(c, "K", 0);
    if (kt) {
        if ((s = cd_ops_tensor_ints(c, kt, "K", v, &n))) return s;
        if (n != 1) return cd_op_fail(c, CD_E_MODEL, "K must hold 1 value, it holds %d", n);
        p->k = v[0];
    }
    if (r == 0) return cd_op_fail(c, CD_E_MODEL, "top_k needs an input of rank >= 1");
    if (axis < -r || axis >= r)
        return cd_op_fail(c, CD_E_MODEL, "axis %lld is out of range for rank %d", (long long)axis, r);
    if (axis < 0) axis += r;
    p->len = x->shape.d[axis];
    if (p->k < 1 || p->k > p->len)
        return cd_op_fail(c, CD_E_MODEL, "k = %lld must be in [1, %lld] (the size of axis %lld)", (long long)p->k,
                          (long long)p->len, (long long)axis);
    p->outer = p->inner = 1;
    for (int i = 0; i < axis; i++) p->outer *= x->shape.d[i];
    for (int i = (int)axis + 1; i < r; i++) p->inner *= x->shape.d[i];
    *os = x->shape;
    os->d[axis] = p->k;
    return CD_OK;
}

cd_status cd_more_topk_infer(cd_op_ctx *c) {
    cd_value *o = cd_out(c, "Out", 0), *ix = cd_out(c, "Indices", 0);
    cd_status s = data_infer(c, "Out", NULL, topk_parse);
    if (s) return s;
    if (ix) {
        ix->shape = o->shape;
        ix->dtype = CD_I64;
    }
    return CD_OK;
}

/* a before b in the result order: larger first (smaller with !largest), NaN largest, then the
 * lower index */
static inline bool topk_before(float a, int64_t ia, float b, int64_t ib, bool largest) {
    const bool na = isnan(a), nb = isnan(b);
    const bool gt = (na && !nb) || (!na && !nb && a > b), lt = (nb && !na) || (!na && !nb && a < b);
    if (largest ? gt : lt) return true;
    if (largest ? lt : gt) return false;
    return ia < ib;
}

cd_status cd_more_topk_run(cd_op_ctx *c) {
    cd_value *x, *o, *e, *ix = cd_out(c, "Indices", 0);
    topk_cfg p;
    cd_status s = data_run_begin(c, "Out", NULL, topk_parse, &p, &x, &o, &e);
    if (s) return s;
    if (ix && (!cd_shape_eq(&o->shape, &ix->shape) || ix->dtype != CD_I64))
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    const int64_t rows = p.outer * p.inner, k = p.k, len = p.len, inner = p.inner;
    const cd_dtype t = x->dtype;
    float *val = malloc(sizeof(float) * (size_t)k);
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)k);
    if (!val || !idx) {
        free(val);
        free(idx);
        return CD_E_NOMEM;
    }
    for (int64_t row = 0; row < rows; row++) {
        const int64_t ob = row / inner, in = row % inner;
        int64_t cnt = 0;
        for (int64_t j = 0; j < len; j++) {
            const float v = cd_ops_ldf(x->data, t, (ob * len + j) * inner + in);
            if (cnt == k && !topk_before(v, j, val[k - 1], idx[k - 1], p.largest)) continue;
            int64_t pos = cnt < k ? cnt++ : k - 1;
            while (pos > 0 && topk_before(v, j, val[pos - 1], idx[pos - 1], p.largest)) {
                val[pos] = val[pos - 1];
                idx[pos] = idx[pos - 1];
                pos--;
            }
            val[pos] = v;
            idx[pos] = j;
        }
        for (int64_t q = 0; q < k; q++) {
            const int64_t off = (ob * k + q) * inner + in;
            if (t == CD_F16)
                ((f16 *)o->data)[off] = (f16)val[q];
            else
                ((float *)o->data)[off] = val[q];
            if (ix) ((int64_t *)ix->data)[off] = idx[q];
        }
    }
    free(val);
    free(idx);
    return CD_OK;
}

/* ------------------------------------------------------------------ unbind */

/* unbind: INT `axis` (0); output list Out gets the X[..., i, ...] slices, dim `axis` removed. */
static cd_status unbind_parse(cd_op_ctx *c, cd_value **xp, int64_t *axis, const cd_slot **outs) {
    const cd_value *x = *xp = cd_in(c, "X", 0);
    if (!x) return cd_op_fail(c, CD_E_MODEL, "required input X is not connected");
    int r = x->shape.rank;
    *axis = cd_attr_int(c->op, "axis", 0);
    if (r == 0 || *axis < -r || *axis >= r)
        return cd_op_fail(c, CD_E_MODEL, "unbind axis %lld is out of range for rank %d", (long long)*axis, r);
    if (*axis < 0) *axis += r;
    *outs = cd_op_out_slot(c->op, "Out");
    if (!*outs || (*outs)->n != x->shape.d[*axis])
        return cd_op_fail(c, CD_E_MODEL, "unbind along axis %lld of size %lld needs that many Out tensors, it has %d",
                          (long long)*axis, (long long)x->shape.d[*axis], *outs ? (*outs)->n : 0);
    return CD_OK;
}

cd_status cd_more_unbind_infer(cd_op_ctx *c) {
    cd_value *x;
    int64_t axis;
    const cd_slot *outs;
    cd_status s = unbind_parse(c, &x, &axis, &outs);
    if (s) return s;
    for (int i = 0; i < outs->n; i++) {
        if (outs->ids[i] < 0) continue;
        cd_value *o = &c->vals[outs->ids[i]];
        memset(&o->shape, 0, sizeof o->shape);
        for (int d = 0; d < x->shape.rank; d++)
            if (d != axis) o->shape.d[o->shape.rank++] = x->shape.d[d];
        o->dtype = x->dtype;
    }
    return CD_OK;
}

cd_status cd_more_unbind_run(cd_op_ctx *c) {
    cd_value *x;
    int64_t axis;
    const cd_slot *outs;
    cd_status s = unbind_parse(c, &x, &axis, &outs);
    if (s) return s;
    int64_t outer = 1, inner = 1, A = x->shape.d[axis];
    for (int d = 0; d < axis; d++) outer *= x->shape.d[d];
    for (int d = (int)axis + 1; d < x->shape.rank; d++) inner *= x->shape.d[d];
    const size_t es = cd_dtype_size(x->dtype), run = (size_t)inner * es;
    for (int i = 0; i < outs->n; i++) {
        if (outs->ids[i] < 0) continue;
        cd_value *o = &c->vals[outs->ids[i]];
        if (cd_value_numel(o) != outer * inner || o->dtype != x->dtype)
            return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
        for (int64_t a = 0; a < outer; a++)
            memcpy((char *)o->data + (size_t)a * run, (const char *)x->data + (size_t)(a * A + i) * run, run);
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ gather_nd */

/* gather_nd: Index [..., K] (int32/int64, K <= rank X) selects X[i0, ..., iK-1, :]; Out shape =
 * Index.shape[:-1] + X.shape[K:]. Indices outside [0, dim) are a model error (0 on the device). */
static cd_status gnd_shapes(cd_op_ctx *c, const cd_value *x, const cd_value *ix, void *cfg, cd_shape *os) {
    int tmp, *K = cfg ? cfg : &tmp;
    if (ix->dtype != CD_I32 && ix->dtype != CD_I64)
        return cd_op_fail(c, CD_E_MODEL, "Index must be int32 or int64, it is %s", cd_dtype_name(ix->dtype));
    if (ix->shape.rank < 1) return cd_op_fail(c, CD_E_MODEL, "Index must have rank >= 1");
    *K = (int)ix->shape.d[ix->shape.rank - 1];
    if (*K < 0 || *K > x->shape.rank)
        return cd_op_fail(c, CD_E_MODEL, "Index's last dim %d exceeds the rank %d of X", *K, x->shape.rank);
    int r = ix->shape.rank - 1 + x->shape.rank - *K;
    if (r > CD_MAX_RANK) return cd_op_fail(c, CD_E_UNSUPPORTED, "output rank %d is above %d", r, CD_MAX_RANK);
    memset(os, 0, sizeof *os);
    for (int i = 0; i < ix->shape.rank - 1; i++) os->d[os->rank++] = ix->shape.d[i];
    for (int i = *K; i < x->shape.rank; i++) os->d[os->rank++] = x->shape.d[i];
    return CD_OK;
}

cd_status cd_more_gather_nd_infer(cd_op_ctx *c) { return data_infer(c, "Out", "Index", gnd_shapes); }

cd_status cd_more_gather_nd_run(cd_op_ctx *c) {
    cd_value *x, *o, *ix;
    int K;
    cd_status s = data_run_begin(c, "Out", "Index", gnd_shapes, &K, &x, &o, &ix);
    if (s) return s;
    int64_t inner = 1, st[CD_MAX_RANK], M = 1; /* M index tuples of K values, slices of inner elements */
    for (int i = 0; i < ix->shape.rank - 1; i++) M *= ix->shape.d[i];
    for (int i = K; i < x->shape.rank; i++) inner *= x->shape.d[i];
    if (K > 0) {
        st[K - 1] = inner;
        for (int i = K - 2; i >= 0; i--) st[i] = st[i + 1] * x->shape.d[i + 1];
    }
    const size_t es = cd_dtype_size(x->dtype), run = (size_t)inner * es;
    for (int64_t m = 0; m < M; m++) {
        int64_t off = 0;
        for (int j = 0; j < K; j++) {
            int64_t k =
                ix->dtype == CD_I32 ? ((const int32_t *)ix->data)[m * K + j] : ((const int64_t *)ix->data)[m * K + j];
            if (k < 0 || k >= x->shape.d[j])
                return cd_op_fail(c, CD_E_MODEL, "Index[%lld][%d] = %lld is out of range [0, %lld)", (long long)m, j,
                                  (long long)k, (long long)x->shape.d[j]);
            off += k * st[j];
        }
        memcpy((char *)o->data + (size_t)m * run, (const char *)x->data + (size_t)off * es, run);
    }
    return CD_OK;
}
