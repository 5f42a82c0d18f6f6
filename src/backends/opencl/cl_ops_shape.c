/* Dispatchers of kernels/shape.cl: data-movement ops as strided copies of raw element bits
 * (transpose, concat, split, slice, stack), reshape-like ops as buffer copies, pad2d/pad3d,
 * arg_max, and calib (fake quantisation through kernels/eltwise.cl). Shapes come from the
 * plan (the CPU shape rules already validated attributes); only offsets are derived here. */
#include "backends/opencl/cl_ops_util.h"
#include "util/fp16.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
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
    if (nd > CD_MAX_RANK) return clu_fail(c, err, CD_E_UNSUPPORTED, "rank %d exceeds %d dims", nd, CD_MAX_RANK);
    /* Merge dims that are contiguous in both source and destination and drop size-1 dims: the
     * kernel decodes one div/mod per dim and element, so a concat along axis 1 of NCHW tensors
     * becomes a 2-d copy instead of a 4-d one. */
    int64_t gd[CD_MAX_RANK], gs[CD_MAX_RANK], gt[CD_MAX_RANK];
    int m = 0;
    for (int i = 0; i < nd; i++) {
        if (dims[i] == 1) continue;
        if (m > 0 && gs[m - 1] == sstr[i] * dims[i] && gt[m - 1] == dstr[i] * dims[i]) {
            gd[m - 1] *= dims[i];
            gs[m - 1] = sstr[i];
            gt[m - 1] = dstr[i];
            continue;
        }
        gd[m] = dims[i], gs[m] = sstr[i], gt[m] = dstr[i];
        m++;
    }
    if (m > 8) return clu_fail(c, err, CD_E_UNSUPPORTED, "rank %d exceeds the copy kernel's 8 dims", m);
    int64_t n = 1, d8[8], s8[8], t8[8];
    for (int i = 0; i < nd; i++) n *= dims[i];
    for (int i = 0; i < 8; i++) {
        d8[i] = i < m ? gd[i] : 1;
        s8[i] = i < m ? gs[i] : 0;
        t8[i] = i < m ? gt[i] : 0;
    }
    nd = m;
    if (n == 0) return CD_OK;
    if ((s = clu_fits(c, cd_value_numel(ms), "input size", err)) ||
        (s = clu_fits(c, cd_value_numel(md), "output size", err)))
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
        if (perm[i] < 0 || perm[i] >= xs->rank)
            return clu_fail(c, err, CD_E_MODEL, "axis[%d] = %lld is out of range", i, (long long)perm[i]);
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
    if (a < -rank || a >= rank)
        return clu_fail(c, err, CD_E_MODEL, "axis %lld is out of range for rank %d", (long long)a, rank);
    *axis = a < 0 ? a + rank : a;
    return CD_OK;
}

/* The tensors of `parts` are consecutive slabs along `axis` of `whole`, from offset 0: copies
 * each one into its slab (concat) or out of it (split); *end = where the last slab ends.
 * `slot` names the parts in messages ("input X", "output Out"); a part whose rank differs
 * from the whole is an error with code rank_code. */
static cd_status slab_copies(cd_cl_ctx *c, int whole, const cd_slot *parts, const char *slot, int64_t axis,
                             bool into_whole, cd_status rank_code, int64_t *end, cd_error *err) {
    const cd_shape *ws = &clu_meta(c, whole)->shape;
    int64_t wst[CD_MAX_RANK], off = 0;
    contiguous_strides(ws, wst);
    for (int i = 0; i < parts->n; i++) {
        int p = parts->ids[i];
        if (p < 0) return clu_fail(c, err, CD_E_MODEL, "%s[%d] is not connected", slot, i);
        const cd_shape *ps = &clu_meta(c, p)->shape;
        if (ps->rank != ws->rank) return clu_fail(c, err, rank_code, "%s[%d] rank differs from the whole", slot, i);
        int64_t pst[CD_MAX_RANK];
        contiguous_strides(ps, pst);
        cd_status s = into_whole ? strided_copy(c, p, whole, ps->rank, ps->d, pst, wst, 0, off * wst[axis], err)
                                 : strided_copy(c, whole, p, ps->rank, ps->d, wst, pst, off * wst[axis], 0, err);
        if (s) return s;
        off += ps->d[axis];
    }
    *end = off;
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
    int64_t axis, off;
    if ((s = get_axis(c, os->rank, &axis, err))) return s;
    if ((s = slab_copies(c, y, xs, "input X", axis, true, CD_E_MODEL, &off, err))) return s;
    if (off != os->d[axis])
        return clu_fail(c, err, CD_E_INTERNAL, "inputs fill %lld of %lld along the axis", (long long)off,
                        (long long)os->d[axis]);
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
    if (axis < 0 || axis >= os->rank || os->d[axis] != xs->n)
        return clu_fail(c, err, CD_E_MODEL, "axis does not match the output");
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
    int64_t axis, off;
    if ((s = get_axis(c, is->rank, &axis, err))) return s;
    if ((s = slab_copies(c, x, os, "output Out", axis, false, CD_E_INTERNAL, &off, err))) return s;
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
        return clu_fail(c, err, CD_E_UNSUPPORTED,
                        "tensor-valued starts/ends are read on the host; this op runs on the CPU");
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
        for (int k = 0; k < nde; k++)
            if (dea[k] == a || dea[k] + r == a) dec = true;
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
    if (n != cd_value_numel(clu_meta(c, y)))
        return clu_fail(c, err, CD_E_INTERNAL, "planned Out size differs from the slice");
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
    if (us)
        to_int8 = !strcmp(us + 4, "int8");
    else
        to_int8 = c->plan->g->tensors[y].dtype == CD_I8;
    if (!to_int8) return clu_copy(c, x, y, err);
    double sc = cd_attr_float(c->op, "scale", 1.0);
    /* any scale (0, negative, NaN, Inf): the kernel's x / s, round, clamp, * s gives the same
     * special values as the CPU's x * (1/s) rule (ops_basic_misc.c; docs/int8.md §1) */
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

/* pad2d / pad3d (docs/nb-format.md §7.25): paddings from the Paddings input (a plan-time value) or
 * the attribute, mapped to per-dim (before, after) exactly like the CPU kernel; the output
 * shape comes from the plan and is checked against them. The pad value is converted to the
 * tensor's dtype here (cd_value_set, as on the CPU) and passed as raw bits. */
static cd_status op_pad(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    bool is3 = !strcmp(c->op->type, "pad3d");
    int rank = is3 ? 5 : 4, npad = is3 ? 6 : 4;
    const cd_value *mx = clu_meta(c, x), *my = clu_meta(c, y);
    if (mx->shape.rank != rank || my->shape.rank != rank)
        return clu_fail(c, err, CD_E_MODEL, "X and Out must be %d-D (ranks %d, %d)", rank, mx->shape.rank,
                        my->shape.rank);
    int64_t pads[6];
    int pt = clu_in(c, "Paddings", 0);
    if (pt >= 0) {
        const cd_value *mp = clu_meta(c, pt);
        if (!mp || cd_value_numel(mp) != npad || (mp->dtype != CD_I32 && mp->dtype != CD_I64))
            return clu_fail(c, err, CD_E_MODEL, "Paddings input must be an int32/int64 tensor of %d values", npad);
        if (!mp->data)
            return clu_fail(c, err, CD_E_UNSUPPORTED, "Paddings is computed at run time; this op runs on the CPU");
        for (int i = 0; i < npad; i++) pads[i] = (int64_t)cd_value_get(mp, i);
    } else {
        const int64_t *pv;
        int n = cd_attr_ints(c->op, "paddings", &pv);
        if (n != npad)
            return clu_fail(c, err, CD_E_MODEL, "attribute paddings holds %d values; %s takes %d", n, c->op->type,
                            npad);
        for (int i = 0; i < npad; i++) pads[i] = pv[i];
    }
    for (int i = 0; i < npad; i++)
        if (pads[i] < 0 || pads[i] > (1 << 24))
            return clu_fail(c, err, CD_E_MODEL, "padding %d = %lld must be in [0, 2^24]", i, (long long)pads[i]);
    const char *m = cd_attr_str(c->op, "mode", "constant");
    int mode;
    if (!strcmp(m, "constant"))
        mode = 0;
    else if (!strcmp(m, "reflect"))
        mode = 1;
    else if (!strcmp(m, "edge") || !strcmp(m, "replicate"))
        mode = 2;
    else if (is3 && !strcmp(m, "circular"))
        mode = 3;
    else
        return clu_fail(c, err, CD_E_MODEL, "mode '%s' is not constant, reflect, %s", m,
                        is3 ? "replicate or circular" : "or edge");
    const char *df = cd_attr_str(c->op, "data_format", is3 ? "NCDHW" : "NCHW");
    bool last = !strcmp(df, is3 ? "NDHWC" : "NHWC");
    if (!last && strcmp(df, is3 ? "NCDHW" : "NCHW"))
        return clu_fail(c, err, CD_E_MODEL, "data_format '%s' is not supported", df);
    int sp0 = last ? 1 : 2;
    int64_t before[8] = {0}, after[8] = {0}, od[8], id[8];
    if (is3) {
        before[sp0] = pads[4], after[sp0] = pads[5];
        before[sp0 + 1] = pads[2], after[sp0 + 1] = pads[3];
        before[sp0 + 2] = pads[0], after[sp0 + 2] = pads[1];
    } else {
        before[sp0] = pads[0], after[sp0] = pads[1];
        before[sp0 + 1] = pads[2], after[sp0 + 1] = pads[3];
    }
    for (int i = 0; i < 8; i++) od[i] = id[i] = 1;
    for (int i = 0; i < rank; i++) {
        int64_t n = mx->shape.d[i];
        if ((before[i] || after[i]) && mode != 0) {
            if (n <= 0) return clu_fail(c, err, CD_E_MODEL, "cannot pad an empty dim %d in mode %s", i, m);
            if (mode == 1 && (before[i] >= n || after[i] >= n))
                return clu_fail(c, err, CD_E_MODEL, "reflect padding (%lld, %lld) must be smaller than dim %d = %lld",
                                (long long)before[i], (long long)after[i], i, (long long)n);
        }
        if (my->shape.d[i] != n + before[i] + after[i])
            return clu_fail(c, err, CD_E_INTERNAL, "planned Out dim %d = %lld differs from the padding rule", i,
                            (long long)my->shape.d[i]);
        od[i] = my->shape.d[i];
        id[i] = n;
    }
    if (mx->dtype != my->dtype) return clu_fail(c, err, CD_E_INTERNAL, "X and Out dtypes differ");
    size_t es = cd_dtype_size(mx->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return clu_fail(c, err, CD_E_UNSUPPORTED, "element size %zu has no pad kernel", es);
    int64_t n = cd_value_numel(my);
    if (n == 0) return CD_OK;
    if ((s = clu_fits(c, n, "output size", err)) || (s = clu_fits(c, cd_value_numel(mx), "input size", err))) return s;
    unsigned char fillb[8] = {0};
    cd_value tmp = {.dtype = mx->dtype, .data = fillb};
    tmp.shape.rank = 1;
    tmp.shape.d[0] = 1;
    cd_value_set(&tmp, 0, cd_attr_float(c->op, is3 ? "value" : "pad_value", 0.0));
    cl_ulong fill = 0;
    memcpy(&fill, fillb, es); /* little-endian host and device: the low bytes carry the value */
    cl_mem bx, by;
    cl_kernel k;
    char name[16];
    snprintf(name, sizeof name, "pad_%zu", es);
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "shape", name, &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_int(&g, n);
    clu_int(&g, rank);
    clu_int8(&g, od);
    clu_int8(&g, id);
    clu_int8(&g, before);
    clu_int(&g, mode);
    if (!g.st) g.st = cd_cl_arg(c, k, g.i++, sizeof fill, &fill, err);
    if (g.st) return g.st;
    return clu_launch1(c, k, n, err);
}

/* shuffle_channel: out channel j*group + i = in channel i*(C/group) + j, i.e. a strided
 * copy over (n, j, i, plane) reading (n, i, j, plane). */
static cd_status op_shuffle(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    const cd_shape *xs = &clu_meta(c, x)->shape;
    if (xs->rank != 4) return clu_fail(c, err, CD_E_MODEL, "X must be 4-D NCHW, got rank %d", xs->rank);
    if (!cd_shape_eq(xs, &clu_meta(c, y)->shape)) return clu_fail(c, err, CD_E_INTERNAL, "Out shape differs from X");
    int64_t g = cd_attr_int(c->op, "group", 1), N = xs->d[0], C = xs->d[1], P = xs->d[2] * xs->d[3];
    if (g <= 0 || C % g)
        return clu_fail(c, err, CD_E_MODEL, "group %lld does not divide %lld channels", (long long)g, (long long)C);
    int64_t cpg = C / g;
    int64_t dims[4] = {N, cpg, g, P};
    int64_t sst[4] = {C * P, P, cpg * P, 1};
    int64_t dst[4] = {C * P, g * P, P, 1};
    return strided_copy(c, x, y, 4, dims, sst, dst, 0, 0, err);
}

/* arg_max over one axis of a float tensor (docs/nb-format.md §7.25), int32 or int64 indices. */
static cd_status op_argmax(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    if ((s = clu_need_float(c, x, "input X", err))) return s;
    const cd_value *mx = clu_meta(c, x), *my = clu_meta(c, y);
    if (my->dtype != CD_I32 && my->dtype != CD_I64)
        return clu_fail(c, err, CD_E_INTERNAL, "Out has dtype %s, expected int32 or int64", cd_dtype_name(my->dtype));
    int r = mx->shape.rank;
    int64_t outer = 1, len = 1, inner = 1;
    if (cd_attr_bool(c->op, "flatten", false)) {
        len = cd_value_numel(mx); /* one axis over all elements */
    } else {
        if (!cd_op_attr(c->op, "axis")) return clu_fail(c, err, CD_E_MODEL, "required INT attribute 'axis' is missing");
        int64_t axis = cd_attr_int(c->op, "axis", 0);
        if (axis < -r || axis >= r || r == 0)
            return clu_fail(c, err, CD_E_MODEL, "axis %lld is out of range for rank %d", (long long)axis, r);
        if (axis < 0) axis += r;
        for (int i = 0; i < r; i++) {
            if (i < axis)
                outer *= mx->shape.d[i];
            else if (i == axis)
                len = mx->shape.d[i];
            else
                inner *= mx->shape.d[i];
        }
    }
    if (outer * inner != cd_value_numel(my))
        return clu_fail(c, err, CD_E_INTERNAL, "Out has %lld elements, the reduction gives %lld",
                        (long long)cd_value_numel(my), (long long)(outer * inner));
    if (len <= 0) return clu_fail(c, err, CD_E_MODEL, "arg_max over an empty axis");
    if ((s = clu_fits(c, cd_value_numel(mx), "input size", err))) return s;
    cl_mem bx, by;
    cl_kernel k;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "shape", "arg_max", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, my->dtype == CD_I32 ? by : NULL);
    clu_mem(&g, my->dtype == CD_I64 ? by : NULL);
    clu_int(&g, outer);
    clu_int(&g, len);
    clu_int(&g, inner);
    if (g.st) return g.st;
    return clu_launch1(c, k, outer * inner, err);
}

/* cast: same dtype is a copy (every float target is the run's float dtype, so float ->
 * float is one); the run's float type <-> int32/int64 and int32 <-> int64 convert. */
static cd_status op_cast(cd_cl_ctx *c, cd_error *err) {
    int x, y;
    cd_status s;
    if ((s = clu_need_in(c, "X", 0, &x, err)) || (s = clu_need_out(c, "Out", 0, &y, err))) return s;
    const cd_value *mx = clu_meta(c, x), *my = clu_meta(c, y);
    int64_t n = cd_value_numel(mx);
    if (n != cd_value_numel(my)) return clu_fail(c, err, CD_E_INTERNAL, "X and Out element counts differ");
    if (mx->dtype == my->dtype) return clu_copy(c, x, y, err);
    cd_dtype fl = c->plan->prec == CD_PREC_FP16 ? CD_F16 : CD_F32;
    const char *name = NULL;
    if (mx->dtype == CD_I32 && my->dtype == fl)
        name = "cast_i32_f";
    else if (mx->dtype == CD_I64 && my->dtype == fl)
        name = "cast_i64_f";
    else if (mx->dtype == fl && my->dtype == CD_I32)
        name = "cast_f_i32";
    else if (mx->dtype == fl && my->dtype == CD_I64)
        name = "cast_f_i64";
    else if (mx->dtype == CD_I64 && my->dtype == CD_I32)
        name = "cast_i64_i32";
    else if (mx->dtype == CD_I32 && my->dtype == CD_I64)
        name = "cast_i32_i64";
    else
        return clu_fail(c, err, CD_E_UNSUPPORTED, "cast %s -> %s has no OpenCL kernel; this op runs on the CPU",
                        cd_dtype_name(mx->dtype), cd_dtype_name(my->dtype));
    if ((s = clu_fits(c, n, "element count", err))) return s;
    cl_mem bx, by;
    cl_kernel k;
    if ((s = clu_buf(c, x, &bx, err)) || (s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "shape", name, &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, bx);
    clu_mem(&g, by);
    clu_int(&g, n);
    if (g.st) return g.st;
    return clu_launch1(c, k, n, err);
}

/* fill_constant(_batch_size_like): the value as the CPU derives it (ValueTensor known at
 * plan time > str_value, exact for int64 > value), converted to the output dtype on the host
 * (cd_value_set, as on the CPU) and written as raw bits by fill_<size>. The shape is the
 * plan's. */
static cd_status op_fill(cd_cl_ctx *c, cd_error *err) {
    int y;
    cd_status s;
    if ((s = clu_need_out(c, "Out", 0, &y, err))) return s;
    const cd_value *my = clu_meta(c, y);
    double v = 0.0;
    int64_t iv = 0;
    bool use_int = false;
    int vt = clu_in(c, "ValueTensor", 0);
    const char *sv = cd_attr_str(c->op, "str_value", "");
    if (vt >= 0) {
        const cd_value *mv = clu_meta(c, vt);
        if (!mv || cd_value_numel(mv) != 1) return clu_fail(c, err, CD_E_MODEL, "ValueTensor must hold 1 value");
        if (!mv->data)
            return clu_fail(c, err, CD_E_UNSUPPORTED, "ValueTensor is computed at run time; this op runs on the CPU");
        v = cd_value_get(mv, 0);
        if (mv->dtype == CD_I64) iv = ((const int64_t *)mv->data)[0], use_int = true;
    } else if (sv[0]) {
        char *end;
        errno = 0;
        long long ll = strtoll(sv, &end, 10);
        if (!*end && !errno) {
            iv = ll, use_int = true, v = (double)ll;
        } else {
            double d = strtod(sv, &end);
            if (*end || end == sv) return clu_fail(c, err, CD_E_MODEL, "str_value '%s' is not a number", sv);
            v = d;
        }
    } else {
        v = cd_attr_float(c->op, "value", 0.0);
    }
    size_t es = cd_dtype_size(my->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return clu_fail(c, err, CD_E_UNSUPPORTED, "element size %zu has no fill kernel", es);
    unsigned char b[8] = {0};
    if (my->dtype == CD_I64 && use_int) {
        memcpy(b, &iv, 8);
    } else {
        cd_value tmp = {.dtype = my->dtype, .data = b};
        tmp.shape.rank = 1;
        tmp.shape.d[0] = 1;
        cd_value_set(&tmp, 0, v);
    }
    cl_ulong bits = 0;
    memcpy(&bits, b, es); /* little-endian host and device: the low bytes carry the value */
    int64_t n = cd_value_numel(my);
    if (n == 0) return CD_OK;
    if ((s = clu_fits(c, n, "output size", err))) return s;
    cl_mem by;
    cl_kernel k;
    char name[16];
    snprintf(name, sizeof name, "fill_%zu", es);
    if ((s = clu_buf(c, y, &by, err))) return s;
    if ((s = c->kernel(c, "shape", name, &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, by);
    clu_int(&g, n);
    if (!g.st) g.st = cd_cl_arg(c, k, g.i++, sizeof bits, &bits, err);
    if (g.st) return g.st;
    return clu_launch1(c, k, n, err);
}

static const cd_cl_op_def defs[] = {
    {"reshape", "shape", op_reshape},
    {"reshape2", "shape", op_reshape},
    {"flatten", "shape", op_reshape},
    {"flatten2", "shape", op_reshape},
    {"flatten_contiguous_range", "shape", op_reshape},
    {"squeeze", "shape", op_reshape},
    {"squeeze2", "shape", op_reshape},
    {"unsqueeze", "shape", op_reshape},
    {"unsqueeze2", "shape", op_reshape},
    {"assign", "shape", op_reshape},
    {"transpose", "shape", op_transpose},
    {"transpose2", "shape", op_transpose},
    {"concat", "shape", op_concat},
    {"stack", "shape", op_stack},
    {"split", "shape", op_split},
    {"slice", "shape", op_slice},
    {"calib", "eltwise", op_calib},
    {"calib_once", "eltwise", op_calib},
    {"pad2d", "shape", op_pad},
    {"pad3d", "shape", op_pad},
    {"shuffle_channel", "shape", op_shuffle},
    {"arg_max", "shape", op_argmax},
    {"cast", "shape", op_cast},
    {"fill_constant", "shape", op_fill},
    {"fill_constant_batch_size_like", "shape", op_fill},
};
const cd_cl_op_table cd_cl_ops_shape = {defs, (int)(sizeof defs / sizeof defs[0])};
