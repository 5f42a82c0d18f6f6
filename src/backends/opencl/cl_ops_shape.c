/* Dispatchers of kernels/shape.cl: data-movement ops as strided copies of raw element bits
 * (transpose, concat, split, slice, stack), reshape-like ops as buffer copies, pad2d/pad3d,
 * arg_max, and calib (fake quantisation through kernels/eltwise.cl). Shapes come from the
 * plan (the CPU shape rules already validated attributes); only offsets are derived here. */
#include "backends/opencl/cl_ops_util.h"
#include "util/fp16.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Launches strided_copy_<elem size>: n elements over nd dims, strides in elements. */
static cd_status strided_copy(cd_cl_ctx *c, int src, int dst, int nd, const int64_t *dims, const int64_t *sstr,
                              const int64_t *dstr, int64_t sbase, int64_t dbase, cd_error *err) {
    cd_status s;
    const cd_value *ms = clu_meta(c, src), *md = clu_meta(c, dst);
    size_t es = cd_dtype_size(ms->dtype);
    if (es != cd_dtype_size(md->dtype)) return clu_fail(c, err, CD_E_INTERNAL, "input and output element sizes differ");
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return clu_fail(c, err, CD_E_UNSUPPORTED, "element size %zu has no copy kernel", es);
    if (nd > 8) return clu_fail(c, err, CD_E_UNSUPPORTED, "rank %d exceeds the copy kernel's 8 dims", nd);
    int64_t n = 1, d8[8], s8[8], t8[8];
    for (int i = 0; i < 8; i++) {
        d8[i] = i < nd ? dims[i] : 1;
        s8[i] = i < nd ? sstr[i] : 0;
        t8[i] = i < nd ? dstr[i] : 0;
        n *= d8[i];
    }
    if (n == 0) return CD_OK;
    if ((s = clu_fits(c, cd_value_numel(ms), "input size", err)) || (s = clu_fits(c, cd_value_numel(md), "output size", err)))
        return s;
    cl_mem bs, bd;
    cl_kernel k;
    char name[32];
    snprintf(name, sizeof name, "strided_copy_%zu", es);
    if ((s = clu_buf(c, src, &bs, err)) || (s = clu_buf(c, dst, &bd, err))) return s;
    if ((s = c->kernel(c, "shape", name, &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bs);
    clu_mem(&g, bd);
    clu_int(&g, n);
    clu_int(&g, nd > 0 ? nd : 1);
    clu_int8(&g, d8);
    clu_int8(&g, s8);
    clu_int8(&g, t8);
    clu_int(&g, sbase);
    clu_int(&g, dbase);
    if (g.st) return g.st;
    return clu_launch1(c, k, n, err);
}

static void contiguous_strides(const cd_shape *s, int64_t *st) {
    int64_t p = 1;
    for (int i = s->rank - 1; i >= 0; i--) st[i] = p, p *= s->d[i];
}

static cd_status op_reshape(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    const char *in = clu_in(c, "X", 0) >= 0 ? "X" : "Input";
    if ((s = clu_need_in(c, in, 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    return clu_copy(c, x, y, err);
}

static cd_status op_transpose(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    const int64_t *perm;
    int np = cd_attr_ints(c->op, "axis", &perm);
    if (np != xs->rank) return clu_fail(c, err, CD_E_MODEL, "axis has %d entries for rank %d", np, xs->rank);
    int64_t xst[CD_MAX_RANK], dims[CD_MAX_RANK], sst[CD_MAX_RANK], dst[CD_MAX_RANK];
    contiguous_strides(xs, xst);
    for (int i = 0; i < np; i++) {
        if (perm[i] < 0 || perm[i] >= xs->rank) return clu_fail(c, err, CD_E_MODEL, "axis[%d] = %lld is out of range", i, (long long)perm[i]);
        dims[i] = xs->d[perm[i]];
        sst[i] = xst[perm[i]];
    }
    cd_shape os = {.rank = np};
    for (int i = 0; i < np; i++) os.d[i] = dims[i];
    contiguous_strides(&os, dst);
    return strided_copy(c, x, y, np, dims, sst, dst, 0, 0, err);
}

/* Axis attribute (or AxisTensor known at plan time), normalised to [0, rank). */
static cd_status get_axis(cd_cl_ctx *c, int rank, int64_t *axis, cd_error *err) {
    int at = clu_in(c, "AxisTensor", 0);
    int64_t a = cd_attr_int(c->op, "axis", 0);
    if (at >= 0) {
        const cd_value *m = clu_meta(c, at);
        if (!m->data || cd_value_numel(m) != 1)
            return clu_fail(c, err, CD_E_UNSUPPORTED, "AxisTensor is not known at plan time; this op runs on the CPU");
        a = (int64_t)cd_value_get(m, 0);
    }
    if (a < -rank || a >= rank) return clu_fail(c, err, CD_E_MODEL, "axis %lld is out of range for rank %d", (long long)a, rank);
    *axis = a < 0 ? a + rank : a;
    return CD_OK;
}

/* concat: each input X[i] lands at offset off_i along `axis` of the output. */
static cd_status op_concat(cd_cl_ctx *c, cd_error *err) {
    int y;
    cd_status s;
    if ((s = clu_need_out(c, "Out", 0, &y, err))) return s;
    const cd_slot *xs = cd_op_in_slot(c->op, "X");
    if (!xs || xs->n < 1) return clu_fail(c, err, CD_E_MODEL, "input X lists no tensors");
    const cd_shape *os = &clu_meta(c, y)->shape;
    int64_t axis;
    if ((s = get_axis(c, os->rank, &axis, err))) return s;
    int64_t ost[CD_MAX_RANK], off = 0;
    contiguous_strides(os, ost);
    for (int i = 0; i < xs->n; i++) {
        int x = xs->ids[i];
        if (x < 0) return clu_fail(c, err, CD_E_MODEL, "input X[%d] is not connected", i);
        const cd_shape *is = &clu_meta(c, x)->shape;
        if (is->rank != os->rank) return clu_fail(c, err, CD_E_MODEL, "X[%d] rank differs from the output", i);
        int64_t ist[CD_MAX_RANK];
        contiguous_strides(is, ist);
        if ((s = strided_copy(c, x, y, is->rank, is->d, ist, ost, 0, off * ost[axis], err))) return s;
        off += is->d[axis];
    }
    if (off != os->d[axis]) return clu_fail(c, err, CD_E_INTERNAL, "inputs fill %lld of %lld along the axis", (long long)off, (long long)os->d[axis]);
    return CD_OK;
}

/* stack: input i becomes index i of a new dim `axis` of the output. */
static cd_status op_stack(cd_cl_ctx *c, cd_error *err) {
    int y;
    cd_status s;
    if ((s = clu_need_out(c, "Y", 0, &y, err))) return s;
    const cd_slot *xs = cd_op_in_slot(c->op, "X");
    if (!xs || xs->n < 1) return clu_fail(c, err, CD_E_MODEL, "input X lists no tensors");
    const cd_shape *os = &clu_meta(c, y)->shape;
    int64_t axis = cd_attr_int(c->op, "axis", 0);
    if (axis < 0) axis += os->rank;
    if (axis < 0 || axis >= os->rank || os->d[axis] != xs->n) return clu_fail(c, err, CD_E_MODEL, "axis does not match the output");
    int64_t ost[CD_MAX_RANK];
    contiguous_strides(os, ost);
    for (int i = 0; i < xs->n; i++) {
        int x = xs->ids[i];
        if (x < 0) return clu_fail(c, err, CD_E_MODEL, "input X[%d] is not connected", i);
        /* the input's dims are the output's without `axis` */
        int64_t dims[CD_MAX_RANK], sst[CD_MAX_RANK], dst[CD_MAX_RANK];
        int nd = 0;
        int64_t ist[CD_MAX_RANK];
        const cd_shape *is = &clu_meta(c, x)->shape;
        if (is->rank != os->rank - 1) return clu_fail(c, err, CD_E_MODEL, "X[%d] rank is not output rank - 1", i);
        contiguous_strides(is, ist);
        for (int d = 0; d < os->rank; d++) {
            if (d == axis) continue;
            dims[nd] = os->d[d];
            sst[nd] = ist[nd];
            dst[nd] = ost[d];
            nd++;
        }
        if ((s = strided_copy(c, x, y, nd, dims, sst, dst, 0, i * ost[axis], err))) return s;
    }
    return CD_OK;
}

/* split: output i is the slab [off_i, off_i + size_i) along axis of X; sizes from the plan. */
static cd_status op_split(cd_cl_ctx *c, cd_error *err) {
    int x;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err))) return s;
    const cd_slot *os = cd_op_out_slot(c->op, "Out");
    if (!os || os->n < 1) return clu_fail(c, err, CD_E_MODEL, "output Out lists no tensors");
    const cd_shape *is = &clu_meta(c, x)->shape;
    int64_t axis;
    if ((s = get_axis(c, is->rank, &axis, err))) return s;
    int64_t ist[CD_MAX_RANK], off = 0;
    contiguous_strides(is, ist);
    for (int i = 0; i < os->n; i++) {
        int y = os->ids[i];
        if (y < 0) return clu_fail(c, err, CD_E_MODEL, "output Out[%d] is not connected", i);
        const cd_shape *ys = &clu_meta(c, y)->shape;
        if (ys->rank != is->rank) return clu_fail(c, err, CD_E_INTERNAL, "Out[%d] rank differs from X", i);
        int64_t yst[CD_MAX_RANK];
        contiguous_strides(ys, yst);
        if ((s = strided_copy(c, x, y, ys->rank, ys->d, ist, yst, off * ist[axis], 0, err))) return s;
        off += ys->d[axis];
    }
    if (off > is->d[axis]) return clu_fail(c, err, CD_E_INTERNAL, "outputs exceed X along the axis");
    return CD_OK;
}

/* slice: starts from the attributes (tensor forms must be plan-time values); the sliced
 * extents come from the plan's output (decrease_axis only drops size-1 dims). */
static cd_status op_slice(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "Input", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if (clu_in(c, "StartsTensor", 0) >= 0 || clu_in(c, "EndsTensor", 0) >= 0 || clu_in(c, "StartsTensorList", 0) >= 0 ||
        clu_in(c, "EndsTensorList", 0) >= 0)
        return clu_fail(c, err, CD_E_UNSUPPORTED, "tensor-valued starts/ends are read on the host; this op runs on the CPU");
    const cd_shape *is = &clu_meta(c, x)->shape;
    const int64_t *axa, *sta, *ena, *ifa, *dea;
    int na = cd_attr_ints(c->op, "axes", &axa), r = is->rank;
    int ns = cd_attr_ints(c->op, "starts", &sta), ne = cd_attr_ints(c->op, "ends", &ena);
    int nif = cd_attr_ints(c->op, "infer_flags", &ifa), nde = cd_attr_ints(c->op, "decrease_axis", &dea);
    if (ns != na || ne != na) return clu_fail(c, err, CD_E_MODEL, "axes, starts and ends differ in length");
    int64_t start[CD_MAX_RANK] = {0}, ext[CD_MAX_RANK];
    for (int i = 0; i < r; i++) ext[i] = is->d[i];
    for (int i = 0; i < na; i++) {
        int64_t a = axa[i] < 0 ? axa[i] + r : axa[i];
        if (a < 0 || a >= r) return clu_fail(c, err, CD_E_MODEL, "axes[%d] is out of range", i);
        int64_t d = is->d[a], b = sta[i], f = ena[i];
        bool dec = false;
        for (int k = 0; k < nde; k++) if (dea[k] == a || dea[k] + r == a) dec = true;
        if (b == -1 && f == 0 && i < nif && ifa[i] == -1 && dec) f = d;
        if (b < 0) b += d;
        if (f < 0) f += d;
        b = b < 0 ? 0 : (b > d ? d : b);
        f = f < 0 ? 0 : (f > d ? d : f);
        if (f <= b) return clu_fail(c, err, CD_E_MODEL, "slice of axis %lld is empty", (long long)a);
        start[a] = b;
        ext[a] = f - b;
    }
    int64_t ist[CD_MAX_RANK], ost[CD_MAX_RANK], base = 0, n = 1;
    contiguous_strides(is, ist);
    cd_shape full = {.rank = r};
    for (int i = 0; i < r; i++) full.d[i] = ext[i], base += start[i] * ist[i], n *= ext[i];
    contiguous_strides(&full, ost);
    if (n != cd_value_numel(clu_meta(c, y))) return clu_fail(c, err, CD_E_INTERNAL, "planned Out size differs from the slice");
    return strided_copy(c, x, y, r, ext, ist, ost, base, 0, err);
}

/* calib: fake quantisation of a float activation (fp32_to_int8); float<->float conversions
 * are identities in a single-float-type run. Integer conversions go to the CPU. */
static cd_status op_calib(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "Input", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "Input", err)) || (s = clu_need_float(c, y, "Out", err))) return s;
    const char *al = c->op->kernel.present ? c->op->kernel.alias : "";
    const char *us = strstr(al, "_to_");
    bool to_int8;
    if (us) to_int8 = !strcmp(us + 4, "int8");
    else to_int8 = c->plan->g->tensors[y].dtype == CD_I8;
    if (!to_int8) return clu_copy(c, x, y, err);
    double sc = cd_attr_float(c->op, "scale", 1.0);
    if (!(sc > 0.0) || !isfinite(sc)) return clu_fail(c, err, CD_E_MODEL, "calib fp32_to_int8 needs a finite scale > 0, got %g", sc);
    int64_t n = cd_value_numel(clu_meta(c, x));
    if ((s = clu_fits(c, n, "element count", err))) return s;
    cl_mem bx, by;
    cl_kernel k;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "eltwise", "fake_quant", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_int(&g, n);
    clu_flt(&g, sc);
    if (g.st) return g.st;
    return clu_launch1(c, k, n, err);
}

static const cd_cl_op_def defs[] = {
    {"reshape", "shape", op_reshape}, {"reshape2", "shape", op_reshape}, {"flatten", "shape", op_reshape},
    {"flatten2", "shape", op_reshape}, {"flatten_contiguous_range", "shape", op_reshape},
    {"squeeze", "shape", op_reshape}, {"squeeze2", "shape", op_reshape}, {"unsqueeze", "shape", op_reshape},
    {"unsqueeze2", "shape", op_reshape}, {"assign", "shape", op_reshape},
    {"transpose", "shape", op_transpose}, {"transpose2", "shape", op_transpose},
    {"concat", "shape", op_concat}, {"stack", "shape", op_stack}, {"split", "shape", op_split},
    {"slice", "shape", op_slice}, {"calib", "eltwise", op_calib}, {"calib_once", "eltwise", op_calib},
};
const cd_cl_op_table cd_cl_ops_shape = {defs, (int)(sizeof defs / sizeof defs[0])};
