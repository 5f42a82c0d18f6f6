/* Shape-family ops (docs/nb-format.md §7.12–§7.19 and §7.25): reshape, transpose, flatten,
 * squeeze, unsqueeze, concat, split, slice, stack, shape, fill_constant(_batch_size_like),
 * assign, cast. All move bytes by element size, so every dtype works.
 *
 * They are registered CD_OPF_SHAPE: the planner runs them while planning whenever all
 * their inputs are known, which makes shape -> slice -> fill_constant -> reshape2 chains
 * (PP-OCR cls) resolve before the run. Tensor-valued attributes (Shape, ShapeTensor,
 * StartsTensor, AxisTensor, ...) must therefore be known at plan time; when one is computed
 * from activation data the shape rule says so instead of guessing. */
#include "backends/cpu/par.h"
#include "backends/cpu/ops_util.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXV CD_OPS_MAXV

static cd_value *need_in(cd_op_ctx *c, const char *slot) {
    cd_value *v = cd_in(c, slot, 0);
    if (!v) cd_op_fail(c, CD_E_MODEL, "required input %s is not connected", slot);
    return v;
}

static cd_value *need_out(cd_op_ctx *c, const char *slot) {
    cd_value *v = cd_out(c, slot, 0);
    if (!v) cd_op_fail(c, CD_E_MODEL, "required output %s is not connected", slot);
    return v;
}

static const char *sstr(const cd_shape *s, char *b, size_t n) { return cd_shape_str(s, b, n); }

/* XShape (reshape2, transpose2, ...): shape-only by-product [0] + dims(X), holds no data. */
static void set_xshape(cd_op_ctx *c, const cd_value *x) {
    cd_value *xs = cd_out(c, "XShape", 0);
    if (!xs) return;
    xs->dtype = x->dtype;
    if (x->shape.rank + 1 <= CD_MAX_RANK) {
        xs->shape.rank = x->shape.rank + 1;
        xs->shape.d[0] = 0;
        for (int i = 0; i < x->shape.rank; i++) xs->shape.d[i + 1] = x->shape.d[i];
    } else {
        xs->shape.rank = 1;
        xs->shape.d[0] = 0;
    }
}

static cd_status copy_data(cd_op_ctx *c, const cd_value *x, cd_value *o) {
    int64_t n = cd_value_numel(x);
    if (n != cd_value_numel(o) || x->dtype != o->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (n > 0 && x->data != o->data) {
        if (!x->data || !o->data) return cd_op_fail(c, CD_E_INTERNAL, "input or output data is missing");
        memcpy(o->data, x->data, (size_t)n * cd_dtype_size(x->dtype));
    }
    return CD_OK;
}

/* Ops whose output holds the input bytes unchanged (reshape, flatten, squeeze, unsqueeze,
 * assign): the shape rule already set the output shape. */
cd_status cd_shape_copy_run(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    return copy_data(c, x, o);
}

/* ------------------------------------------------------------------ reshape */

cd_status cd_shape_reshape_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    int64_t sv[MAXV];
    int n = 0;
    const char *src = "ShapeTensor";
    cd_status st = cd_ops_list_ints(c, "ShapeTensor", sv, &n);
    if (st) return st;
    if (n == 0) {
        cd_value *sh = cd_in(c, "Shape", 0);
        if (sh) {
            src = "Shape";
            if ((st = cd_ops_tensor_ints(c, sh, "Shape", sv, &n))) return st;
        } else {
            src = "shape attribute";
            const int64_t *a;
            n = cd_attr_ints(c->op, "shape", &a);
            if (!cd_op_attr(c->op, "shape"))
                return cd_op_fail(c, CD_E_MODEL,
                                  "no target shape: neither ShapeTensor, Shape nor the INTS attribute "
                                  "'shape' is given");
            if (n > MAXV) n = MAXV + 1;
            for (int i = 0; i < n && i < MAXV; i++) sv[i] = a[i];
        }
    }
    char b[160];
    if (n < 1 || n > CD_MAX_RANK)
        return cd_op_fail(c, CD_E_MODEL, "target shape from %s has %d entries (1..%d allowed)", src, n, CD_MAX_RANK);
    cd_shape out = {.rank = n};
    int infer_at = -1;
    int64_t prod = 1, numel = cd_value_numel(x);
    for (int i = 0; i < n; i++) {
        int64_t v = sv[i];
        if (v == 0) {
            if (i >= x->shape.rank)
                return cd_op_fail(c, CD_E_MODEL, "target shape entry %d is 0 (copy input dim) but X %s has rank %d", i,
                                  sstr(&x->shape, b, sizeof b), x->shape.rank);
            v = x->shape.d[i];
        } else if (v == -1) {
            if (infer_at >= 0) return cd_op_fail(c, CD_E_MODEL, "target shape from %s has more than one -1", src);
            infer_at = i;
            v = 1;
        } else if (v < 0) {
            return cd_op_fail(c, CD_E_MODEL, "target shape entry %d is %lld; entries must be > 0, 0 or -1", i,
                              (long long)v);
        }
        out.d[i] = v;
        if (v > 0 && prod > (INT64_C(1) << 62) / v) return cd_op_fail(c, CD_E_MODEL, "target shape overflows");
        prod *= v;
    }
    if (infer_at >= 0) {
        if (prod == 0 || numel % prod)
            return cd_op_fail(c, CD_E_MODEL,
                              "cannot infer the -1 entry: X %s has %lld elements, not a multiple of %lld",
                              sstr(&x->shape, b, sizeof b), (long long)numel, (long long)prod);
        out.d[infer_at] = numel / prod;
        prod = numel;
    }
    if (prod != numel) {
        char b2[160];
        return cd_op_fail(c, CD_E_MODEL, "cannot reshape X %s (%lld elements) to %s (%lld elements) from %s",
                          sstr(&x->shape, b, sizeof b), (long long)numel, sstr(&out, b2, sizeof b2), (long long)prod,
                          src);
    }
    o->shape = out;
    o->dtype = x->dtype;
    set_xshape(c, x);
    return CD_OK;
}

/* ------------------------------------------------------------------ flatten */

cd_status cd_shape_flatten_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    int r = x->shape.rank;
    cd_shape out = {0};
    if (!strcmp(c->op->type, "flatten_contiguous_range")) {
        int64_t s = cd_attr_int(c->op, "start_axis", 1), e = cd_attr_int(c->op, "stop_axis", -1);
        int rr = r > 0 ? r : 1;
        if (s < -rr || s >= rr || e < -rr || e >= rr)
            return cd_op_fail(c, CD_E_MODEL, "start_axis %lld / stop_axis %lld out of range for rank %d", (long long)s,
                              (long long)e, r);
        if (s < 0) s += rr;
        if (e < 0) e += rr;
        if (s > e)
            return cd_op_fail(c, CD_E_MODEL, "start_axis %lld is after stop_axis %lld", (long long)s, (long long)e);
        if (r == 0) {
            out.rank = 1;
            out.d[0] = 1;
        } else {
            int64_t p = 1;
            for (int i = 0; i < r; i++) {
                if (i < s || i > e)
                    out.d[out.rank++] = x->shape.d[i];
                else {
                    p *= x->shape.d[i];
                    if (i == e) out.d[out.rank++] = p;
                }
            }
        }
    } else {
        int64_t a = cd_attr_int(c->op, "axis", 1);
        if (a < 0 || a > r) return cd_op_fail(c, CD_E_MODEL, "axis %lld must lie in [0, %d]", (long long)a, r);
        int64_t p0 = 1, p1 = 1;
        for (int i = 0; i < r; i++) *(i < a ? &p0 : &p1) *= x->shape.d[i];
        out.rank = 2;
        out.d[0] = p0;
        out.d[1] = p1;
    }
    o->shape = out;
    o->dtype = x->dtype;
    set_xshape(c, x);
    return CD_OK;
}

/* ------------------------------------------------------------------ squeeze / unsqueeze */

cd_status cd_shape_squeeze_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    const int64_t *ax;
    int n = cd_attr_ints(c->op, "axes", &ax), r = x->shape.rank;
    bool drop[CD_MAX_RANK] = {false};
    if (n == 0) {
        for (int i = 0; i < r; i++) drop[i] = x->shape.d[i] == 1;
    } else {
        for (int k = 0; k < n; k++) {
            int64_t a = ax[k];
            if (a < -r || a >= r)
                return cd_op_fail(c, CD_E_MODEL, "axes[%d] = %lld is out of range for rank %d", k, (long long)a, r);
            if (a < 0) a += r;
            if (x->shape.d[a] == 1) drop[a] = true; /* a non-1 dim is kept silently (§7.15) */
        }
    }
    cd_shape out = {0};
    for (int i = 0; i < r; i++)
        if (!drop[i]) out.d[out.rank++] = x->shape.d[i];
    o->shape = out;
    o->dtype = x->dtype;
    set_xshape(c, x);
    return CD_OK;
}

cd_status cd_shape_unsqueeze_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    int64_t av[MAXV];
    int n;
    const int64_t *ax;
    cd_status st;
    n = cd_attr_ints(c->op, "axes", &ax);
    if (n > MAXV) return cd_op_fail(c, CD_E_MODEL, "too many axes (%d)", n);
    if (n > 0)
        memcpy(av, ax, (size_t)n * sizeof *av);
    else if (cd_in(c, "AxesTensor", 0)) {
        if ((st = cd_ops_tensor_ints(c, cd_in(c, "AxesTensor", 0), "AxesTensor", av, &n))) return st;
    } else if ((st = cd_ops_list_ints(c, "AxesTensorList", av, &n)))
        return st;
    if (n == 0) return cd_op_fail(c, CD_E_MODEL, "no axes given (attribute axes, AxesTensor or AxesTensorList)");
    cd_shape cur = x->shape;
    for (int k = 0; k < n; k++) {
        int64_t a = av[k];
        if (a < -(cur.rank + 1) || a > cur.rank)
            return cd_op_fail(c, CD_E_MODEL, "axes[%d] = %lld is out of range for current rank %d", k, (long long)a,
                              cur.rank);
        if (cur.rank + 1 > 6) return cd_op_fail(c, CD_E_MODEL, "unsqueeze result would exceed rank 6");
        if (a < 0) a += cur.rank + 1;
        for (int i = cur.rank; i > a; i--) cur.d[i] = cur.d[i - 1];
        cur.d[a] = 1;
        cur.rank++;
    }
    o->shape = cur;
    o->dtype = x->dtype;
    set_xshape(c, x);
    return CD_OK;
}

cd_status cd_shape_assign_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    o->shape = x->shape;
    o->dtype = x->dtype;
    return CD_OK;
}

/* ------------------------------------------------------------------ transpose */

static cd_status transpose_perm(cd_op_ctx *c, const cd_value *x, int *perm) {
    const int64_t *ax;
    int n = cd_attr_ints(c->op, "axis", &ax), r = x->shape.rank;
    if (n != r) return cd_op_fail(c, CD_E_MODEL, "axis has %d entries but X has rank %d", n, r);
    bool seen[CD_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) {
        int64_t a = ax[i];
        if (a < 0) a += r; /* Paddle tolerates negative entries */
        if (a < 0 || a >= r || seen[a])
            return cd_op_fail(c, CD_E_MODEL, "axis is not a permutation of 0..%d (entry %d = %lld)", r - 1, i,
                              (long long)ax[i]);
        seen[a] = true;
        perm[i] = (int)a;
    }
    return CD_OK;
}

cd_status cd_shape_transpose_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    int perm[CD_MAX_RANK];
    cd_status st = transpose_perm(c, x, perm);
    if (st) return st;
    o->shape.rank = x->shape.rank;
    for (int i = 0; i < x->shape.rank; i++) o->shape.d[i] = x->shape.d[perm[i]];
    o->dtype = x->dtype;
    set_xshape(c, x);
    return CD_OK;
}

/* Walks the output in order; the input offset advances by the permuted strides. The
 * innermost loop is specialised on element size so it compiles to plain moves. */
#define TR_T uint8_t
#define TR_NAME transpose_1
#include "ops_shape_transpose_tmpl.h"
#define TR_T uint16_t
#define TR_NAME transpose_2
#include "ops_shape_transpose_tmpl.h"
#define TR_T uint32_t
#define TR_NAME transpose_4
#include "ops_shape_transpose_tmpl.h"
#define TR_T uint64_t
#define TR_NAME transpose_8
#include "ops_shape_transpose_tmpl.h"

cd_status cd_shape_transpose_run(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    int perm[CD_MAX_RANK];
    cd_status st = transpose_perm(c, x, perm);
    if (st) return st;
    int r = x->shape.rank;
    int64_t n = cd_value_numel(x);
    if (n != cd_value_numel(o) || o->dtype != x->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (n == 0) return CD_OK;
    if (r <= 1) return copy_data(c, x, o);
    int64_t xs[CD_MAX_RANK], is[CD_MAX_RANK], od[CD_MAX_RANK];
    xs[r - 1] = 1;
    for (int i = r - 2; i >= 0; i--) xs[i] = xs[i + 1] * x->shape.d[i + 1];
    /* output axes i-1, i that stay adjacent and in order in the input (perm[i] == perm[i-1] + 1)
     * are one axis (size the product, stride of the inner one): a channel shuffle's 5-D
     * transpose becomes rows of whole H x W planes, copied with memcpy (the per-row index
     * arithmetic was most of shufflenet_v2's transposes on 4x4 maps) */
    int nr = 0;
    for (int i = 0; i < r; i++) {
        if (nr > 0 && perm[i] == perm[i - 1] + 1) {
            od[nr - 1] *= x->shape.d[perm[i]];
            is[nr - 1] = xs[perm[i]];
            continue;
        }
        is[nr] = xs[perm[i]];
        od[nr] = x->shape.d[perm[i]];
        nr++;
    }
    r = nr;
    int64_t rows = n / od[r - 1];
    int th = c->threads > 0 ? c->threads : 1;
    switch (cd_dtype_size(x->dtype)) {
    case 1: transpose_1(x->data, o->data, od, is, r, rows, th); break;
    case 2: transpose_2(x->data, o->data, od, is, r, rows, th); break;
    case 4: transpose_4(x->data, o->data, od, is, r, rows, th); break;
    case 8: transpose_8(x->data, o->data, od, is, r, rows, th); break;
    default: return cd_op_fail(c, CD_E_INTERNAL, "unexpected element size");
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ concat / stack / split */

/* Copies `parts` blocks: for each outer index, each part contributes a contiguous run. */
static void gather_runs(char *out, const char *const *ins, const int64_t *run_bytes, int parts, int64_t outer) {
    int64_t row = 0;
    for (int p = 0; p < parts; p++) row += run_bytes[p];
    for (int64_t o = 0; o < outer; o++) {
        char *dst = out + o * row;
        for (int p = 0; p < parts; p++) {
            if (run_bytes[p]) memcpy(dst, ins[p] + o * run_bytes[p], (size_t)run_bytes[p]);
            dst += run_bytes[p];
        }
    }
}

cd_status cd_shape_concat_infer(cd_op_ctx *c) {
    const cd_slot *xs = cd_op_in_slot(c->op, "X");
    cd_value *o = need_out(c, "Out");
    if (!o) return CD_E_MODEL;
    if (!xs || xs->n < 1) return cd_op_fail(c, CD_E_MODEL, "input list X is empty");
    for (int i = 0; i < xs->n; i++)
        if (xs->ids[i] < 0) return cd_op_fail(c, CD_E_MODEL, "input X[%d] is not connected", i);
    const cd_value *x0 = &c->vals[xs->ids[0]];
    int64_t axis;
    cd_status st = cd_ops_axis(c, "AxisTensor", "axis", x0->shape.rank, &axis);
    if (st) return st;
    cd_shape out = x0->shape;
    out.d[axis] = 0;
    char b0[160], b1[160];
    for (int i = 0; i < xs->n; i++) {
        const cd_value *x = &c->vals[xs->ids[i]];
        if (x->dtype != x0->dtype)
            return cd_op_fail(c, CD_E_MODEL, "X[%d] is %s but X[0] is %s", i, cd_dtype_name(x->dtype),
                              cd_dtype_name(x0->dtype));
        bool ok = x->shape.rank == x0->shape.rank;
        for (int d = 0; ok && d < x0->shape.rank; d++)
            if (d != axis && x->shape.d[d] != x0->shape.d[d]) ok = false;
        if (!ok)
            return cd_op_fail(c, CD_E_MODEL, "X[%d] %s does not match X[0] %s outside axis %lld", i,
                              sstr(&x->shape, b1, sizeof b1), sstr(&x0->shape, b0, sizeof b0), (long long)axis);
        out.d[axis] += x->shape.d[axis];
    }
    o->shape = out;
    o->dtype = x0->dtype;
    return CD_OK;
}

cd_status cd_shape_concat_run(cd_op_ctx *c) {
    const cd_slot *xs = cd_op_in_slot(c->op, "X");
    cd_value *o = need_out(c, "Out");
    if (!o || !xs || xs->n < 1 || xs->n > 4096) return cd_op_fail(c, CD_E_MODEL, "bad concat inputs");
    const cd_value *x0 = &c->vals[xs->ids[0]];
    int64_t axis;
    cd_status st = cd_ops_axis(c, "AxisTensor", "axis", x0->shape.rank, &axis);
    if (st) return st;
    int64_t outer = 1, inner = 1, es = (int64_t)cd_dtype_size(x0->dtype);
    for (int d = 0; d < axis; d++) outer *= x0->shape.d[d];
    for (int d = (int)axis + 1; d < x0->shape.rank; d++) inner *= x0->shape.d[d];
    const char *ins[4096];
    int64_t runs[4096], total = 0;
    for (int i = 0; i < xs->n; i++) {
        const cd_value *x = &c->vals[xs->ids[i]];
        ins[i] = x->data;
        runs[i] = x->shape.d[axis] * inner * es;
        total += cd_value_numel(x);
        if (!x->data && cd_value_numel(x) > 0) return cd_op_fail(c, CD_E_INTERNAL, "input X[%d] has no data", i);
    }
    if (total != cd_value_numel(o) || o->dtype != x0->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (total) gather_runs(o->data, ins, runs, xs->n, outer);
    return CD_OK;
}

cd_status cd_shape_stack_infer(cd_op_ctx *c) {
    const cd_slot *xs = cd_op_in_slot(c->op, "X");
    cd_value *o = need_out(c, "Y");
    if (!o) return CD_E_MODEL;
    if (!xs || xs->n < 1) return cd_op_fail(c, CD_E_MODEL, "input list X is empty");
    for (int i = 0; i < xs->n; i++)
        if (xs->ids[i] < 0) return cd_op_fail(c, CD_E_MODEL, "input X[%d] is not connected", i);
    const cd_value *x0 = &c->vals[xs->ids[0]];
    int r = x0->shape.rank;
    if (r + 1 > CD_MAX_RANK)
        return cd_op_fail(c, CD_E_MODEL, "stacking rank-%d tensors exceeds rank %d", r, CD_MAX_RANK);
    int64_t a = cd_attr_int(c->op, "axis", 0);
    if (a < -(r + 1) || a > r)
        return cd_op_fail(c, CD_E_MODEL, "axis %lld is out of range [-%d, %d]", (long long)a, r + 1, r);
    if (a < 0) a += r + 1;
    char b0[160], b1[160];
    for (int i = 1; i < xs->n; i++) {
        const cd_value *x = &c->vals[xs->ids[i]];
        if (!cd_shape_eq(&x->shape, &x0->shape) || x->dtype != x0->dtype)
            return cd_op_fail(c, CD_E_MODEL, "X[%d] %s %s differs from X[0] %s %s; stacked tensors must match", i,
                              cd_dtype_name(x->dtype), sstr(&x->shape, b1, sizeof b1), cd_dtype_name(x0->dtype),
                              sstr(&x0->shape, b0, sizeof b0));
    }
    cd_shape out = {.rank = r + 1};
    for (int d = 0, k = 0; d <= r; d++) out.d[d] = d == a ? xs->n : x0->shape.d[k++];
    o->shape = out;
    o->dtype = x0->dtype;
    return CD_OK;
}

cd_status cd_shape_stack_run(cd_op_ctx *c) {
    const cd_slot *xs = cd_op_in_slot(c->op, "X");
    cd_value *o = need_out(c, "Y");
    if (!o || !xs || xs->n < 1 || xs->n > 4096) return cd_op_fail(c, CD_E_MODEL, "bad stack inputs");
    const cd_value *x0 = &c->vals[xs->ids[0]];
    int r = x0->shape.rank;
    int64_t a = cd_attr_int(c->op, "axis", 0);
    if (a < 0) a += r + 1;
    int64_t outer = 1, inner = (int64_t)cd_dtype_size(x0->dtype);
    for (int d = 0; d < r; d++) *(d < a ? &outer : &inner) *= x0->shape.d[d];
    const char *ins[4096];
    int64_t runs[4096];
    for (int i = 0; i < xs->n; i++) {
        ins[i] = c->vals[xs->ids[i]].data;
        runs[i] = inner;
        if (!ins[i] && inner && outer) return cd_op_fail(c, CD_E_INTERNAL, "input X[%d] has no data", i);
    }
    if (cd_value_numel(o) != cd_value_numel(x0) * xs->n)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (cd_value_numel(o)) gather_runs(o->data, ins, runs, xs->n, outer);
    return CD_OK;
}

/* Split sizes along the axis for every output. */
static cd_status split_sizes(cd_op_ctx *c, const cd_value *x, int64_t *axis, int64_t *sz, int nout) {
    cd_status st = cd_ops_axis(c, "AxisTensor", "axis", x->shape.rank, axis);
    if (st) return st;
    int64_t dim = x->shape.d[*axis], v[MAXV];
    int n;
    if ((st = cd_ops_list_ints(c, "SectionsTensorList", v, &n))) return st;
    int64_t num = cd_attr_int(c->op, "num", 0);
    if (n == 0 && num > 0) {
        if (dim % num)
            return cd_op_fail(c, CD_E_MODEL, "num %lld does not divide dim %lld of axis %lld", (long long)num,
                              (long long)dim, (long long)*axis);
        if (num != nout) return cd_op_fail(c, CD_E_MODEL, "num is %lld but %d outputs are bound", (long long)num, nout);
        for (int i = 0; i < nout; i++) sz[i] = dim / num;
        return CD_OK;
    }
    if (n == 0) {
        const int64_t *sec;
        n = cd_attr_ints(c->op, "sections", &sec);
        if (n > MAXV) return cd_op_fail(c, CD_E_MODEL, "too many sections (%d)", n);
        for (int i = 0; i < n; i++) v[i] = sec[i];
    }
    if (n != nout)
        return cd_op_fail(c, CD_E_MODEL, "%d sections given but %d outputs are bound (set num or sections)", n, nout);
    int neg = -1;
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (v[i] == -1) {
            if (neg >= 0) return cd_op_fail(c, CD_E_MODEL, "sections has more than one -1");
            neg = i;
        } else if (v[i] < 0) {
            return cd_op_fail(c, CD_E_MODEL, "sections[%d] = %lld is negative", i, (long long)v[i]);
        } else
            sum += v[i];
        sz[i] = v[i];
    }
    if (neg >= 0) {
        if (sum > dim)
            return cd_op_fail(c, CD_E_MODEL, "sections sum %lld exceeds dim %lld", (long long)sum, (long long)dim);
        sz[neg] = dim - sum;
    } else if (sum != dim) {
        return cd_op_fail(c, CD_E_MODEL, "sections sum %lld differs from dim %lld of axis %lld", (long long)sum,
                          (long long)dim, (long long)*axis);
    }
    return CD_OK;
}

cd_status cd_shape_split_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X");
    const cd_slot *os = cd_op_out_slot(c->op, "Out");
    if (!x) return CD_E_MODEL;
    if (!os || os->n < 1 || os->n > MAXV)
        return cd_op_fail(c, CD_E_MODEL, "output list Out must hold 1..%d tensors", MAXV);
    int64_t axis, sz[MAXV];
    cd_status st = split_sizes(c, x, &axis, sz, os->n);
    if (st) return st;
    for (int i = 0; i < os->n; i++) {
        if (os->ids[i] < 0) continue;
        cd_value *o = &c->vals[os->ids[i]];
        o->shape = x->shape;
        o->shape.d[axis] = sz[i];
        o->dtype = x->dtype;
    }
    return CD_OK;
}

cd_status cd_shape_split_run(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X");
    const cd_slot *os = cd_op_out_slot(c->op, "Out");
    if (!x || !os || os->n < 1 || os->n > MAXV) return cd_op_fail(c, CD_E_MODEL, "bad split arguments");
    int64_t axis, sz[MAXV];
    cd_status st = split_sizes(c, x, &axis, sz, os->n);
    if (st) return st;
    int64_t outer = 1, inner = (int64_t)cd_dtype_size(x->dtype);
    for (int d = 0; d < x->shape.rank; d++)
        if (d < axis)
            outer *= x->shape.d[d];
        else if (d > axis)
            inner *= x->shape.d[d];
    int64_t row = x->shape.d[axis] * inner, off = 0;
    for (int i = 0; i < os->n; i++) {
        int64_t run = sz[i] * inner;
        if (os->ids[i] >= 0 && run > 0) {
            cd_value *o = &c->vals[os->ids[i]];
            if (cd_value_numel(o) * (int64_t)cd_dtype_size(o->dtype) != run * outer || !o->data)
                return cd_op_fail(c, CD_E_INTERNAL, "output Out[%d] changed after shape inference", i);
            for (int64_t r = 0; r < outer; r++)
                memcpy((char *)o->data + r * run, (const char *)x->data + r * row + off, (size_t)run);
        }
        off += run;
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ slice */

typedef struct {
    cd_shape full; /* sliced shape before decrease_axis */
    int64_t start[CD_MAX_RANK];
} slice_cfg;

static cd_status slice_config(cd_op_ctx *c, const cd_value *x, slice_cfg *s, cd_shape *out) {
    const int64_t *axa, *sta, *ena, *ifa, *dea;
    int na = cd_attr_ints(c->op, "axes", &axa), r = x->shape.rank;
    int nif = cd_attr_ints(c->op, "infer_flags", &ifa), nde = cd_attr_ints(c->op, "decrease_axis", &dea);
    int64_t st[MAXV], en[MAXV];
    int ns, ne;
    cd_status e;
    if (na > CD_MAX_RANK) return cd_op_fail(c, CD_E_MODEL, "axes has %d entries (rank is %d)", na, r);
    /* starts: StartsTensor > StartsTensorList > attribute (same for ends) */
    if (cd_in(c, "StartsTensor", 0)) {
        if ((e = cd_ops_tensor_ints(c, cd_in(c, "StartsTensor", 0), "StartsTensor", st, &ns))) return e;
    } else {
        if ((e = cd_ops_list_ints(c, "StartsTensorList", st, &ns))) return e;
        if (ns == 0) {
            ns = cd_attr_ints(c->op, "starts", &sta);
            if (ns > MAXV) ns = MAXV;
            for (int i = 0; i < ns; i++) st[i] = sta[i];
        }
    }
    if (cd_in(c, "EndsTensor", 0)) {
        if ((e = cd_ops_tensor_ints(c, cd_in(c, "EndsTensor", 0), "EndsTensor", en, &ne))) return e;
    } else {
        if ((e = cd_ops_list_ints(c, "EndsTensorList", en, &ne))) return e;
        if (ne == 0) {
            ne = cd_attr_ints(c->op, "ends", &ena);
            if (ne > MAXV) ne = MAXV;
            for (int i = 0; i < ne; i++) en[i] = ena[i];
        }
    }
    if (ns != na || ne != na)
        return cd_op_fail(c, CD_E_MODEL, "axes has %d entries but starts has %d and ends %d", na, ns, ne);
    s->full = x->shape;
    memset(s->start, 0, sizeof s->start);
    bool used[CD_MAX_RANK] = {false};
    for (int i = 0; i < na; i++) {
        int64_t a = axa[i];
        if (a < -r || a >= r)
            return cd_op_fail(c, CD_E_MODEL, "axes[%d] = %lld is out of range for rank %d", i, (long long)a, r);
        if (a < 0) a += r;
        if (used[a]) return cd_op_fail(c, CD_E_MODEL, "axis %lld is listed twice in axes", (long long)a);
        used[a] = true;
        int64_t d = x->shape.d[a], b = st[i], f = en[i];
        bool decreased = false;
        for (int k = 0; k < nde; k++)
            if (dea[k] == a) decreased = true;
        if (b == -1 && f == 0 && i < nif && ifa[i] == -1 && decreased) f = d; /* "last element" form */
        if (b < 0) b += d;
        if (f < 0) f += d;
        if (b < 0) b = 0;
        if (b > d) b = d;
        if (f < 0) f = 0;
        if (f > d) f = d;
        if (f <= b)
            return cd_op_fail(c, CD_E_MODEL, "slice of axis %lld (size %lld) with start %lld, end %lld is empty",
                              (long long)a, (long long)d, (long long)st[i], (long long)en[i]);
        s->start[a] = b;
        s->full.d[a] = f - b;
    }
    cd_shape o = {0};
    bool drop[CD_MAX_RANK] = {false};
    for (int k = 0; k < nde; k++) {
        int64_t a = dea[k];
        if (a < 0) a += r;
        if (a < 0 || a >= r)
            return cd_op_fail(c, CD_E_MODEL, "decrease_axis entry %lld is out of range", (long long)dea[k]);
        if (s->full.d[a] != 1)
            return cd_op_fail(c, CD_E_MODEL, "decrease_axis %lld has size %lld after slicing; it must be 1",
                              (long long)a, (long long)s->full.d[a]);
        drop[a] = true;
    }
    for (int i = 0; i < r; i++)
        if (!drop[i]) o.d[o.rank++] = s->full.d[i];
    if (o.rank == 0) {
        o.rank = 1;
        o.d[0] = 1;
    }
    *out = o;
    return CD_OK;
}

cd_status cd_shape_slice_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "Input"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    slice_cfg s;
    cd_shape os;
    cd_status st = slice_config(c, x, &s, &os);
    if (st) return st;
    o->shape = os;
    o->dtype = x->dtype;
    return CD_OK;
}

cd_status cd_shape_slice_run(cd_op_ctx *c) {
    cd_value *x = need_in(c, "Input"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    slice_cfg s;
    cd_shape os;
    cd_status st = slice_config(c, x, &s, &os);
    if (st) return st;
    int64_t total = cd_shape_numel(&s.full);
    if (total != cd_value_numel(o) || o->dtype != x->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (total == 0) return CD_OK;
    int r = x->shape.rank;
    if (r == 0) return copy_data(c, x, o);
    const size_t es = cd_dtype_size(x->dtype);
    int64_t xs[CD_MAX_RANK];
    xs[r - 1] = 1;
    for (int i = r - 2; i >= 0; i--) xs[i] = xs[i + 1] * x->shape.d[i + 1];
    const int64_t W = s.full.d[r - 1], rows = total / W;
    const char *in = x->data;
    char *out = o->data;
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, off = s.start[r - 1];
        for (int d = r - 2; d >= 0; d--) {
            off += (rem % s.full.d[d] + s.start[d]) * xs[d];
            rem /= s.full.d[d];
        }
        memcpy(out + (size_t)(row * W) * es, in + (size_t)off * es, (size_t)W * es);
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ shape */

cd_status cd_shape_shape_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "Input"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    o->shape.rank = 1;
    o->shape.d[0] = x->shape.rank;
    o->dtype = CD_I32;
    return CD_OK;
}

cd_status cd_shape_shape_run(cd_op_ctx *c) {
    cd_value *x = need_in(c, "Input"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    if (o->dtype != CD_I32 || cd_value_numel(o) != x->shape.rank)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    for (int i = 0; i < x->shape.rank; i++) {
        if (x->shape.d[i] > INT32_MAX)
            return cd_op_fail(c, CD_E_MODEL, "dim %d = %lld does not fit int32", i, (long long)x->shape.d[i]);
        ((int32_t *)o->data)[i] = (int32_t)x->shape.d[i];
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ fill_constant, cast */

/* VarType number -> run dtype: float types become the run's activation dtype. */
static cd_status vartype_dtype(cd_op_ctx *c, const char *attr, int64_t dflt, cd_dtype *out) {
    int64_t v = cd_attr_int(c->op, attr, dflt);
    int t = (v >= 0 && v <= 64) ? cd_dtype_from_fb((int)v) : -1;
    if (t < 0) return cd_op_fail(c, CD_E_MODEL, "%s = %lld is not an element type", attr, (long long)v);
    *out = (t == CD_F32 || t == CD_F16 || t == CD_F64) ? cd_act_dtype(c) : (cd_dtype)t;
    return CD_OK;
}

/* The fill value: ValueTensor > str_value (exact for int64) > value. */
static cd_status fill_value(cd_op_ctx *c, double *v, int64_t *iv, bool *use_int) {
    *use_int = false;
    cd_value *vt = cd_in(c, "ValueTensor", 0);
    if (vt) {
        if (cd_value_numel(vt) != 1) return cd_op_fail(c, CD_E_MODEL, "ValueTensor must hold 1 value");
        if (!vt->data)
            return cd_op_fail(c, CD_E_UNSUPPORTED,
                              "ValueTensor is computed from run-time data; its value must be "
                              "known when shapes are planned");
        *v = cd_value_get(vt, 0);
        if (vt->dtype == CD_I64) {
            *iv = ((const int64_t *)vt->data)[0];
            *use_int = true;
        }
        return CD_OK;
    }
    const char *s = cd_attr_str(c->op, "str_value", "");
    if (s[0]) {
        char *end;
        errno = 0;
        long long ll = strtoll(s, &end, 10);
        if (!*end && !errno) {
            *iv = ll;
            *use_int = true;
            *v = (double)ll;
            return CD_OK;
        }
        errno = 0;
        double d = strtod(s, &end);
        if (*end || end == s) return cd_op_fail(c, CD_E_MODEL, "str_value '%s' is not a number", s);
        *v = d;
        return CD_OK;
    }
    *v = cd_attr_float(c->op, "value", 0.0);
    return CD_OK;
}

static cd_status fill_shape(cd_op_ctx *c, cd_shape *out) {
    int64_t v[MAXV];
    int n;
    cd_status st;
    const char *src = "ShapeTensor";
    cd_value *stn = cd_in(c, "ShapeTensor", 0);
    if (stn) {
        if ((st = cd_ops_tensor_ints(c, stn, "ShapeTensor", v, &n))) return st;
    } else {
        src = "ShapeTensorList";
        if ((st = cd_ops_list_ints(c, "ShapeTensorList", v, &n))) return st;
        if (n == 0) {
            src = "shape attribute";
            const int64_t *a;
            n = cd_attr_ints(c->op, "shape", &a);
            if (n > MAXV) n = MAXV + 1;
            for (int i = 0; i < n && i < MAXV; i++) v[i] = a[i];
        }
    }
    if (n > CD_MAX_RANK)
        return cd_op_fail(c, CD_E_MODEL, "shape from %s has %d entries (at most %d)", src, n, CD_MAX_RANK);
    out->rank = n;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            return cd_op_fail(c, CD_E_MODEL, "shape from %s has negative entry %d = %lld", src, i, (long long)v[i]);
        out->d[i] = v[i];
    }
    if (n == 0) {
        out->rank = 1;
        out->d[0] = 1;
    } /* a scalar constant */
    if (cd_shape_numel(out) < 0) return cd_op_fail(c, CD_E_MODEL, "shape from %s overflows", src);
    return CD_OK;
}

cd_status cd_shape_fill_infer(cd_op_ctx *c) {
    cd_value *o = need_out(c, "Out");
    if (!o) return CD_E_MODEL;
    cd_dtype dt;
    cd_status st;
    cd_shape s;
    /* fill_any_like / fill_zeros_like (paddle.ones_like, full_like, zeros_like in Paddle 2.x
     * programs): X's shape, dtype -1 (or absent) = X's element type */
    bool like = !strcmp(c->op->type, "fill_any_like") || !strcmp(c->op->type, "fill_zeros_like");
    if (like) {
        cd_value *x = need_in(c, "X");
        if (!x) return CD_E_MODEL;
        if (cd_attr_int(c->op, "dtype", -1) < 0)
            dt = (x->dtype == CD_F32 || x->dtype == CD_F16) ? cd_act_dtype(c) : x->dtype;
        else if ((st = vartype_dtype(c, "dtype", 5, &dt)))
            return st;
    } else if ((st = vartype_dtype(c, "dtype", 5, &dt)))
        return st;
    if (like) {
        s = need_in(c, "X")->shape;
    } else if (!strcmp(c->op->type, "fill_constant_batch_size_like")) {
        cd_value *x = need_in(c, "Input");
        if (!x) return CD_E_MODEL;
        const int64_t *a;
        int n = cd_attr_ints(c->op, "shape", &a);
        if (n < 1 || n > CD_MAX_RANK)
            return cd_op_fail(c, CD_E_MODEL, "shape attribute must have 1..%d entries", CD_MAX_RANK);
        int64_t ii = cd_attr_int(c->op, "input_dim_idx", 0), oi = cd_attr_int(c->op, "output_dim_idx", 0);
        if (ii < 0 || ii >= x->shape.rank || oi < 0 || oi >= n)
            return cd_op_fail(c, CD_E_MODEL, "input_dim_idx %lld / output_dim_idx %lld out of range", (long long)ii,
                              (long long)oi);
        s.rank = n;
        for (int i = 0; i < n; i++) s.d[i] = a[i];
        s.d[oi] = x->shape.d[ii];
        for (int i = 0; i < n; i++)
            if (s.d[i] < 0) return cd_op_fail(c, CD_E_MODEL, "shape entry %d is negative", i);
    } else if ((st = fill_shape(c, &s)))
        return st;
    double v;
    int64_t iv;
    bool ui;
    if ((st = fill_value(c, &v, &iv, &ui))) return st;
    o->shape = s;
    o->dtype = dt;
    return CD_OK;
}

cd_status cd_shape_fill_run(cd_op_ctx *c) {
    cd_value *o = need_out(c, "Out");
    if (!o) return CD_E_MODEL;
    double v;
    int64_t iv;
    bool ui;
    cd_status st = fill_value(c, &v, &iv, &ui);
    if (st) return st;
    int64_t n = cd_value_numel(o);
    if (n > 0 && !o->data) return cd_op_fail(c, CD_E_INTERNAL, "output is not allocated");
    if (o->dtype == CD_I64 && ui) {
        for (int64_t i = 0; i < n; i++) ((int64_t *)o->data)[i] = iv;
        return CD_OK;
    }
    if (n > 0) {
        cd_value_set(o, 0, v);
        size_t es = cd_dtype_size(o->dtype);
        for (int64_t i = 1; i < n; i++) memcpy((char *)o->data + (size_t)i * es, o->data, es);
    }
    return CD_OK;
}

cd_status cd_shape_cast_infer(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    cd_dtype dt;
    cd_status st = vartype_dtype(c, "out_dtype", 5, &dt);
    if (st) return st;
    o->shape = x->shape;
    o->dtype = dt;
    return CD_OK;
}

/* Numeric conversion; float -> integer truncates toward zero and saturates, NaN -> 0. */
cd_status cd_shape_cast_run(cd_op_ctx *c) {
    cd_value *x = need_in(c, "X"), *o = need_out(c, "Out");
    if (!x || !o) return CD_E_MODEL;
    int64_t n = cd_value_numel(x);
    if (n != cd_value_numel(o)) return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (x->dtype == o->dtype) return copy_data(c, x, o);
    if (x->dtype == CD_I64 && o->dtype == CD_I32) {
        for (int64_t i = 0; i < n; i++) {
            int64_t v = ((const int64_t *)x->data)[i];
            ((int32_t *)o->data)[i] = v > INT32_MAX ? INT32_MAX : (v < INT32_MIN ? INT32_MIN : (int32_t)v);
        }
        return CD_OK;
    }
    if (x->dtype == CD_I32 && o->dtype == CD_I64) {
        for (int64_t i = 0; i < n; i++) ((int64_t *)o->data)[i] = ((const int32_t *)x->data)[i];
        return CD_OK;
    }
    for (int64_t i = 0; i < n; i++) cd_value_set(o, i, cd_value_get(x, i));
    return CD_OK;
}
