/* Dispatchers of kernels/math.cl (sin, cos, tan, asin, acos, atan, pow, the comparisons, lrn,
 * reduce_sum/mean/max/min) and kernels/gather.cl (expand, expand_v2, tile, gather, gather_nd,
 * assign_value, pixel_shuffle, grid_sampler, top_k, top_k_v2, unbind). (sync_batch_norm is
 * batch_norm at inference: cl_ops_norm.c lists it with batch_norm's dispatcher.) Semantics follow the CPU kernels
 * (backends/cpu/ops_more_*.c); output shapes come from the plan, so only what a kernel needs
 * beyond them is parsed here. */
#include "backends/cpu/ops_util.h"
#include "backends/opencl/cl_ops_util.h"
#include <math.h>
#include <string.h>

static cd_status io(cd_cl_ctx *c, const char *in, const char *out, int *x, int *y, cd_error *err) {
    cd_status s;
    if ((s = clu_need_in(c, in, 0, x, err)) || (s = clu_need_out(c, out, 0, y, err))) return s;
    return clu_need_float(c, *x, "input X", err);
}

static void fill8(int64_t v[8], int64_t with) {
    for (int i = 0; i < 8; i++) v[i] = with;
}

/* ---------------------------------------------------------------- trig, pow */

static cd_status op_unary(cd_cl_ctx *c, cd_error *err) {
    int x, y, kind = cd_more_unary_code(c->op->type), ft = -1;
    cd_status s;
    if ((s = io(c, "X", "Out", &x, &y, err))) return s;
    if (kind < 0) return clu_fail(c, err, CD_E_INTERNAL, "not a math op type");
    double f = cd_attr_float(c->op, "factor", 1.0);
    if (kind == 6 && (ft = clu_in(c, "FactorTensor", 0)) >= 0) {
        const cd_value *m = clu_meta(c, ft);
        if (cd_value_numel(m) != 1) return clu_fail(c, err, CD_E_MODEL, "FactorTensor must hold 1 element");
        if (m->data) { /* known at plan time: an argument, like the attribute */
            f = cd_value_get(m, 0);
            ft = -1;
        } else if ((s = clu_need_float(c, ft, "input FactorTensor", err))) {
            return s;
        }
    }
    if (isnan(f)) return clu_fail(c, err, CD_E_MODEL, "pow factor is NaN");
    int64_t n = cd_value_numel(clu_meta(c, y));
    if ((s = clu_fits(c, n, "element count", err))) return s;
    if (n == 0) return CD_OK;
    cl_mem bf = NULL;
    clu_args g;
    if ((ft >= 0 && (s = clu_buf(c, ft, &bf, err))) || (s = CLU_BEGIN(&g, c, "math", "math_unary", err, x, y)))
        return s;
    clu_int(&g, n);
    clu_int(&g, kind);
    clu_flt(&g, f);
    clu_mem(&g, bf);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- greater_than */

/* Element strides of X and Y over the planned output (0 = broadcast), docs/nb-format.md §7.0. */
static cd_status bcast_strides(cd_cl_ctx *c, const cd_shape *x, const cd_shape *y, const cd_shape *o, int64_t axis,
                               int64_t sx[8], int64_t sy[8], cd_error *err) {
    int r = x->rank >= y->rank ? x->rank : y->rank, lo = x->rank + y->rank - r;
    int64_t ax[CD_MAX_RANK], ay[CD_MAX_RANK];
    if (cd_bcast_align(x, y, axis, ax, ay))
        return clu_fail(c, err, CD_E_MODEL, "axis %lld cannot place the rank-%d operand inside the rank-%d one",
                        (long long)axis, lo, r);
    if (o->rank != r || r > 8)
        return clu_fail(c, err, CD_E_INTERNAL, "planned output rank %d differs from %d", o->rank, r);
    fill8(sx, 0);
    fill8(sy, 0);
    int64_t px = 1, py = 1;
    for (int i = r - 1; i >= 0; i--) {
        if ((ax[i] == 1 ? ay[i] : ax[i]) != o->d[i])
            return clu_fail(c, err, CD_E_MODEL, "X and Y do not broadcast to the planned output at dim %d", i);
        sx[i] = ax[i] == 1 ? 0 : px;
        sy[i] = ay[i] == 1 ? 0 : py;
        px *= ax[i];
        py *= ay[i];
    }
    return CD_OK;
}

static cd_status op_compare(cd_cl_ctx *c, cd_error *err) {
    int code = cd_more_compare_code(c->op->type);
    if (code < 0) return clu_fail(c, err, CD_E_INTERNAL, "not a comparison op type");
    int x, y, o;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_in(c, "Y", 0, &y, err)) ||
        (s = clu_need_out(c, "Out", 0, &o, err)))
        return s;
    if ((s = clu_need_float(c, x, "input X", err)) || (s = clu_need_float(c, y, "input Y", err))) return s;
    const cd_value *mo = clu_meta(c, o);
    if (mo->dtype != CD_BOOL) return clu_fail(c, err, CD_E_INTERNAL, "output Out is not bool");
    int64_t dims[8], sx[8], sy[8];
    if ((s = bcast_strides(c, &clu_meta(c, x)->shape, &clu_meta(c, y)->shape, &mo->shape,
                           cd_attr_int(c->op, "axis", -1), sx, sy, err)))
        return s;
    fill8(dims, 1);
    for (int i = 0; i < mo->shape.rank; i++) dims[i] = mo->shape.d[i];
    int64_t n = cd_value_numel(mo);
    if ((s = clu_fits(c, n, "element count", err))) return s;
    if (n == 0) return CD_OK;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "math", "compare", err, x, y, o))) return s;
    clu_int(&g, n);
    clu_int(&g, code);
    clu_int(&g, mo->shape.rank);
    clu_int8(&g, dims);
    clu_int8(&g, sx);
    clu_int8(&g, sy);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- lrn */

static cd_status op_lrn(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = io(c, "X", "Out", &x, &y, err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    if (xs->rank != 4) return clu_fail(c, err, CD_E_MODEL, "lrn needs a 4-D NCHW input");
    int64_t size = cd_attr_int(c->op, "n", 5);
    double kk = cd_attr_float(c->op, "k", 2.0), al = cd_attr_float(c->op, "alpha", 1e-4),
           be = cd_attr_float(c->op, "beta", 0.75);
    if (size < 1) return clu_fail(c, err, CD_E_MODEL, "lrn n must be >= 1"); /* k, alpha, beta as stored */
    const char *df = cd_attr_str(c->op, "data_format", "AnyLayout");
    if (strcmp(df, "AnyLayout") && strcmp(df, "NCHW"))
        return clu_fail(c, err, CD_E_UNSUPPORTED, "lrn data_format '%s' is not supported (NCHW only)", df);
    int64_t n = cd_value_numel(clu_meta(c, x));
    if ((s = clu_fits(c, n, "element count", err))) return s;
    if (n == 0) return CD_OK;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "math", "lrn", err, x, y))) return s;
    clu_int(&g, n);
    clu_int(&g, xs->d[1]);
    clu_int(&g, xs->d[2] * xs->d[3]);
    clu_int(&g, size);
    clu_flt(&g, kk);
    clu_flt(&g, al);
    clu_flt(&g, be);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- reduce_max / reduce_mean */

static cd_status op_reduce(cd_cl_ctx *c, cd_error *err) {
    int x, y, code = cd_more_reduce_code(c->op->type);
    cd_status s;
    if (code < 0) return clu_fail(c, err, CD_E_INTERNAL, "not a reduce op type");
    if ((s = io(c, "X", "Out", &x, &y, err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    if (xs->rank > 8) return clu_fail(c, err, CD_E_UNSUPPORTED, "rank %d is above 8", xs->rank);
    const int64_t *dims = NULL;
    int nd = cd_attr_ints(c->op, "dim", &dims);
    bool all = cd_attr_bool(c->op, "reduce_all", false) || nd == 0, red[CD_MAX_RANK];
    for (int i = 0; i < CD_MAX_RANK; i++) red[i] = all;
    for (int i = 0; i < nd && !all; i++) {
        int64_t a = dims[i];
        if (a < -xs->rank || a >= xs->rank)
            return clu_fail(c, err, CD_E_MODEL, "reduce dim %lld is out of range", (long long)a);
        red[a < 0 ? a + xs->rank : a] = true;
    }
    int64_t kd[8], ks[8], rd[8], rs[8], st = 1, R = 1, M = 1;
    int nk = 0, nr = 0;
    fill8(kd, 1), fill8(ks, 0), fill8(rd, 1), fill8(rs, 0);
    for (int i = xs->rank - 1; i >= 0; i--) {
        if (red[i])
            rd[nr] = xs->d[i], rs[nr++] = st, R *= xs->d[i];
        else
            kd[nk] = xs->d[i], ks[nk++] = st, M *= xs->d[i];
        st *= xs->d[i];
    }
    if (M != cd_value_numel(clu_meta(c, y)))
        return clu_fail(c, err, CD_E_INTERNAL, "planned output has %lld elements, expected %lld",
                        (long long)cd_value_numel(clu_meta(c, y)), (long long)M);
    if ((s = clu_fits(c, M * R, "element count", err))) return s;
    if (M == 0 || R == 0) return M == 0 ? CD_OK : clu_fail(c, err, CD_E_MODEL, "reducing an empty tensor");
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "math", "reduce", err, x, y))) return s;
    clu_int(&g, M);
    clu_int(&g, nk);
    clu_int8(&g, kd);
    clu_int8(&g, ks);
    clu_int(&g, nr);
    clu_int8(&g, rd);
    clu_int8(&g, rs);
    clu_int(&g, R);
    clu_int(&g, code);
    return clu_end(&g, M);
}

/* ---------------------------------------------------------------- expand, expand_v2 */

static cd_status op_expand(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = io(c, "X", "Out", &x, &y, err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape, *os = &clu_meta(c, y)->shape;
    if (os->rank > 8 || os->rank < xs->rank) return clu_fail(c, err, CD_E_INTERNAL, "planned output rank %d", os->rank);
    int64_t od[8], xd[8], xst[8], p = 1, n = cd_value_numel(clu_meta(c, y));
    int lead = os->rank - xs->rank;
    if (n == 0) return CD_OK;
    fill8(od, 1), fill8(xd, 1), fill8(xst, 0);
    for (int i = os->rank - 1; i >= 0; i--) {
        od[i] = os->d[i];
        xd[i] = i < lead ? 1 : xs->d[i - lead];
        if (xd[i] < 1 || od[i] % xd[i]) return clu_fail(c, err, CD_E_INTERNAL, "planned output does not tile X");
        xst[i] = p;
        p *= xd[i];
    }
    if ((s = clu_fits(c, n, "element count", err))) return s;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "gather", "expand", err, x, y))) return s;
    clu_int(&g, n);
    clu_int(&g, os->rank);
    clu_int8(&g, od);
    clu_int8(&g, xd);
    clu_int8(&g, xst);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- gather */

static cd_status op_gather(cd_cl_ctx *c, cd_error *err) {
    int x, y, ix;
    cd_status s;
    if ((s = io(c, "X", "Out", &x, &y, err)) || (s = clu_need_in(c, "Index", 0, &ix, err))) return s;
    const cd_value *mi = clu_meta(c, ix);
    if (mi->dtype != CD_I32 && mi->dtype != CD_I64) return clu_fail(c, err, CD_E_MODEL, "Index must be int32 or int64");
    const cd_shape *xs = &clu_meta(c, x)->shape;
    int64_t axis = cd_attr_int(c->op, "axis", 0);
    int at = clu_in(c, "Axis", 0);
    if (at >= 0) {
        const cd_value *ma = clu_meta(c, at);
        if (!ma->data || cd_value_numel(ma) != 1)
            return clu_fail(c, err, CD_E_UNSUPPORTED, "the Axis tensor must be one value known at plan time");
        axis = (int64_t)cd_value_get(ma, 0);
    }
    if (axis < -xs->rank || axis >= xs->rank)
        return clu_fail(c, err, CD_E_MODEL, "gather axis %lld is out of range", (long long)axis);
    if (axis < 0) axis += xs->rank;
    int64_t inner = 1, N = cd_value_numel(mi), A = xs->d[axis], n = cd_value_numel(clu_meta(c, y));
    for (int i = (int)axis + 1; i < xs->rank; i++) inner *= xs->d[i];
    if ((s = clu_fits(c, n, "element count", err)) ||
        (s = clu_fits(c, cd_value_numel(clu_meta(c, x)), "input size", err)))
        return s;
    if (n == 0) return CD_OK;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "gather", "gather", err, x, y, mi->dtype == CD_I32 ? ix : -1,
                       mi->dtype == CD_I64 ? ix : -1)))
        return s;
    clu_int(&g, n);
    clu_int(&g, N);
    clu_int(&g, A);
    clu_int(&g, inner);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- gather_nd */

static cd_status op_gather_nd(cd_cl_ctx *c, cd_error *err) {
    int x, y, ix;
    cd_status s;
    if ((s = io(c, "X", "Out", &x, &y, err)) || (s = clu_need_in(c, "Index", 0, &ix, err))) return s;
    const cd_value *mi = clu_meta(c, ix);
    const cd_shape *xs = &clu_meta(c, x)->shape;
    if ((mi->dtype != CD_I32 && mi->dtype != CD_I64) || mi->shape.rank < 1)
        return clu_fail(c, err, CD_E_MODEL, "Index must be an int32 or int64 tensor of rank >= 1");
    int64_t K = mi->shape.d[mi->shape.rank - 1], inner = 1, xd[8], st[8], n = cd_value_numel(clu_meta(c, y));
    if (K < 0 || K > xs->rank || K > 8)
        return clu_fail(c, err, CD_E_MODEL, "Index's last dim %lld does not fit X", (long long)K);
    fill8(xd, 1), fill8(st, 0);
    for (int i = (int)K; i < xs->rank; i++) inner *= xs->d[i];
    for (int i = (int)K - 1; i >= 0; i--) {
        xd[i] = xs->d[i];
        st[i] = i == K - 1 ? inner : st[i + 1] * xs->d[i + 1];
    }
    if ((s = clu_fits(c, n, "element count", err)) ||
        (s = clu_fits(c, cd_value_numel(clu_meta(c, x)), "input size", err)))
        return s;
    if (n == 0) return CD_OK;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "gather", "gather_nd", err, x, y, mi->dtype == CD_I32 ? ix : -1,
                       mi->dtype == CD_I64 ? ix : -1)))
        return s;
    clu_int(&g, n);
    clu_int(&g, K);
    clu_int(&g, inner);
    clu_int8(&g, xd);
    clu_int8(&g, st);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- pixel_shuffle */

static cd_status op_pixel_shuffle(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = io(c, "X", "Out", &x, &y, err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape, *os = &clu_meta(c, y)->shape;
    int64_t r = cd_attr_int(c->op, "upscale_factor", 1);
    if (xs->rank != 4 || os->rank != 4 || r < 1 || os->d[2] != xs->d[2] * r || os->d[1] * r * r != xs->d[1])
        return clu_fail(c, err, CD_E_MODEL, "X, Out and upscale_factor %lld do not fit pixel_shuffle", (long long)r);
    int64_t n = cd_value_numel(clu_meta(c, y));
    if ((s = clu_fits(c, n, "element count", err))) return s;
    if (n == 0) return CD_OK;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "gather", "pixel_shuffle", err, x, y))) return s;
    clu_int(&g, n);
    clu_int(&g, os->d[1]);
    clu_int(&g, os->d[2]);
    clu_int(&g, os->d[3]);
    clu_int(&g, xs->d[2]);
    clu_int(&g, xs->d[3]);
    clu_int(&g, r);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- grid_sampler */

static cd_status op_grid_sampler(cd_cl_ctx *c, cd_error *err) {
    int x, y, gr;
    cd_status s;
    if ((s = io(c, "X", "Output", &x, &y, err)) || (s = clu_need_in(c, "Grid", 0, &gr, err)) ||
        (s = clu_need_float(c, gr, "input Grid", err)))
        return s;
    const cd_shape *xs = &clu_meta(c, x)->shape, *os = &clu_meta(c, y)->shape;
    const char *m = cd_attr_str(c->op, "mode", "bilinear"), *pm = cd_attr_str(c->op, "padding_mode", "zeros");
    int nearest = !strcmp(m, "nearest"), pad = !strcmp(pm, "border") ? 1 : !strcmp(pm, "reflection") ? 2 : 0;
    if (!nearest && strcmp(m, "bilinear"))
        return clu_fail(c, err, CD_E_UNSUPPORTED, "grid_sampler mode '%s' is not bilinear or nearest", m);
    if (pad == 0 && strcmp(pm, "zeros"))
        return clu_fail(c, err, CD_E_MODEL, "grid_sampler padding_mode '%s' is not zeros, border or reflection", pm);
    if (xs->rank != 4 || os->rank != 4) return clu_fail(c, err, CD_E_MODEL, "X and Output must be 4-D");
    int64_t n = cd_value_numel(clu_meta(c, y));
    if ((s = clu_fits(c, n, "element count", err)) ||
        (s = clu_fits(c, cd_value_numel(clu_meta(c, x)), "input size", err)))
        return s;
    if (n == 0) return CD_OK;
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "gather", "grid_sampler", err, x, gr, y))) return s;
    clu_int(&g, n);
    clu_int(&g, xs->d[1]);
    clu_int(&g, xs->d[2]);
    clu_int(&g, xs->d[3]);
    clu_int(&g, os->d[2]);
    clu_int(&g, os->d[3]);
    clu_int(&g, nearest);
    clu_int(&g, pad);
    clu_int(&g, cd_attr_bool(c->op, "align_corners", true));
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- assign_value */

/* The planner evaluates assign_value (a constant) while planning, so its value is in the plan
 * in the run's dtype: it is written to a scratch buffer and copied into the output by the
 * expand kernel (an identity copy here). Integer and bool constants stay on the host. */
static cd_status op_assign_value(cd_cl_ctx *c, cd_error *err) {
    int y;
    cd_status s;
    if ((s = clu_need_out(c, "Out", 0, &y, err)) || (s = clu_need_float(c, y, "output Out", err))) return s;
    const cd_value *m = clu_meta(c, y);
    int64_t n = cd_value_numel(m);
    if ((s = clu_fits(c, n, "element count", err))) return s;
    if (n == 0) return CD_OK;
    if (!m->data || m->nbytes < (size_t)n * cd_dtype_size(m->dtype))
        return clu_fail(c, err, CD_E_UNSUPPORTED,
                        "the constant was not evaluated while planning; this op runs on the CPU");
    size_t bytes = (size_t)n * cd_dtype_size(m->dtype);
    cl_mem src = c->scratch(c, bytes, err), by;
    cl_kernel k;
    if (!src) return err && err->code ? err->code : CD_E_BACKEND;
    cl_int rc = c->cl->clEnqueueWriteBuffer(c->queue, src, CL_TRUE, 0, bytes, m->data, 0, NULL, NULL);
    if (rc != CL_SUCCESS) return clu_fail(c, err, CD_E_BACKEND, "clEnqueueWriteBuffer failed (%d)", (int)rc);
    if ((s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "gather", "expand", &k, err))) return s;
    int64_t d[8];
    fill8(d, 1);
    d[0] = n;
    int64_t st[8];
    fill8(st, 0);
    st[0] = 1;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, src);
    clu_mem(&g, by);
    clu_int(&g, n);
    clu_int(&g, 1);
    clu_int8(&g, d);
    clu_int8(&g, d);
    clu_int8(&g, st);
    return clu_end(&g, n);
}

/* ---------------------------------------------------------------- top_k, top_k_v2, unbind */

/* Normalises *axis for X's shape xs; the element counts before and after that dim. */
static cd_status around_axis(cd_cl_ctx *c, const cd_shape *xs, int64_t *axis, int64_t *outer, int64_t *inner,
                             cd_error *err) {
    if (xs->rank < 1 || *axis < -xs->rank || *axis >= xs->rank)
        return clu_fail(c, err, CD_E_MODEL, "axis out of range");
    if (*axis < 0) *axis += xs->rank;
    *outer = *inner = 1;
    for (int i = 0; i < *axis; i++) *outer *= xs->d[i];
    for (int i = (int)*axis + 1; i < xs->rank; i++) *inner *= xs->d[i];
    return CD_OK;
}

static cd_status op_topk(cd_cl_ctx *c, cd_error *err) {
    int x, y, ix;
    cd_status s;
    if ((s = io(c, "X", "Out", &x, &y, err))) return s;
    ix = clu_out(c, "Indices", 0);
    const cd_shape *xs = &clu_meta(c, x)->shape, *os = &clu_meta(c, y)->shape;
    const bool v2 = !strcmp(c->op->type, "top_k_v2");
    int64_t axis = v2 ? cd_attr_int(c->op, "axis", -1) : -1, outer, inner;
    if ((s = around_axis(c, xs, &axis, &outer, &inner, err))) return s;
    int64_t len = xs->d[axis], k = os->d[axis];
    if (k < 1 || k > len)
        return clu_fail(c, err, CD_E_INTERNAL, "planned k %lld does not fit axis size %lld", (long long)k,
                        (long long)len);
    int64_t rows = outer * inner, n = rows * k;
    if ((s = clu_fits(c, cd_value_numel(clu_meta(c, x)), "input size", err))) return s;
    if (rows == 0) return CD_OK;
    cl_mem bi;
    if (ix >= 0) {
        if (clu_meta(c, ix)->dtype != CD_I64) return clu_fail(c, err, CD_E_INTERNAL, "Indices is not int64");
        if ((s = clu_buf(c, ix, &bi, err))) return s;
    } else if (!(bi = c->scratch(c, (size_t)n * sizeof(int64_t), err))) {
        return err && err->code ? err->code : CD_E_BACKEND;
    }
    clu_args g;
    if ((s = CLU_BEGIN(&g, c, "gather", "topk", err, x, y))) return s;
    clu_mem(&g, bi);
    clu_int(&g, rows);
    clu_int(&g, len);
    clu_int(&g, inner);
    clu_int(&g, k);
    clu_int(&g, v2 ? cd_attr_bool(c->op, "largest", true) : 1);
    return clu_end(&g, rows);
}

static cd_status op_unbind(cd_cl_ctx *c, cd_error *err) {
    int x;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_float(c, x, "input X", err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    int64_t axis = cd_attr_int(c->op, "axis", 0), outer, inner;
    if ((s = around_axis(c, xs, &axis, &outer, &inner, err))) return s;
    const cd_slot *outs = cd_op_out_slot(c->op, "Out");
    int64_t A = xs->d[axis];
    if (!outs || outs->n != A) return clu_fail(c, err, CD_E_MODEL, "unbind needs %lld Out tensors", (long long)A);
    int64_t n = outer * inner;
    if ((s = clu_fits(c, cd_value_numel(clu_meta(c, x)), "input size", err))) return s;
    if (n == 0) return CD_OK;
    cl_mem bx;
    cl_kernel k;
    if ((s = clu_buf(c, x, &bx, err)) || (s = c->kernel(c, "gather", "take", &k, err))) return s;
    for (int i = 0; i < outs->n; i++) {
        int y = outs->ids[i];
        cl_mem by;
        if (y < 0) continue;
        if (cd_value_numel(clu_meta(c, y)) != n)
            return clu_fail(c, err, CD_E_INTERNAL, "planned Out[%d] size differs", i);
        if ((s = clu_buf(c, y, &by, err))) return s;
        clu_args g;
        clu_args_init(&g, c, k, err);
        clu_mem(&g, bx);
        clu_mem(&g, by);
        clu_int(&g, n);
        clu_int(&g, A);
        clu_int(&g, inner);
        clu_int(&g, i);
        if ((s = clu_end(&g, n))) return s;
    }
    return CD_OK;
}

static const cd_cl_op_def defs[] = {
    {"sin", "math", op_unary},
    {"cos", "math", op_unary},
    {"tan", "math", op_unary},
    {"asin", "math", op_unary},
    {"acos", "math", op_unary},
    {"atan", "math", op_unary},
    {"pow", "math", op_unary},
    {"lrn", "math", op_lrn},
    {"greater_than", "math", op_compare},
    {"greater_equal", "math", op_compare},
    {"less_than", "math", op_compare},
    {"less_equal", "math", op_compare},
    {"equal", "math", op_compare},
    {"not_equal", "math", op_compare},
    {"reduce_max", "math", op_reduce},
    {"reduce_mean", "math", op_reduce},
    {"reduce_sum", "math", op_reduce},
    {"reduce_min", "math", op_reduce},
    {"expand", "gather", op_expand},
    {"expand_v2", "gather", op_expand},
    {"tile", "gather", op_expand},
    {"gather", "gather", op_gather},
    {"assign_value", "gather", op_assign_value},
    {"pixel_shuffle", "gather", op_pixel_shuffle},
    {"top_k", "gather", op_topk},
    {"top_k_v2", "gather", op_topk},
    {"unbind", "gather", op_unbind},
    {"gather_nd", "gather", op_gather_nd},
    {"grid_sampler", "gather", op_grid_sampler},
};
const cd_cl_op_table cd_cl_ops_more = {defs, (int)(sizeof defs / sizeof defs[0])};
