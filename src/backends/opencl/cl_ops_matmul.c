/* Dispatchers of kernels/matmul.cl: fc, mul, matmul, matmul_v2 (docs/nb-format.md §7.6-7.9). Every
 * form becomes one batched GEMM with element strides: transposes swap strides, broadcast
 * batches get stride 0, rank-1 operands become a row or a column. */
#include "backends/opencl/cl_ops_util.h"
#include <string.h>

typedef struct {
    int64_t M, N, K, batch, nb1; /* batch = nb0 * nb1 */
    int64_t ab0, ab1, am, ak, bb0, bb1, bk, bn;
    double alpha;
    int kind, amode;
    float act_a;
    int A, B, bias, C, alpha_t;
} gemm_job;

static cd_status run_gemm(cd_cl_ctx *c, const gemm_job *j, cd_error *err) {
    cd_status s;
    if (j->M * j->N * j->batch == 0) return CD_OK;
    if ((s = clu_fits(c, j->batch * j->M * j->N, "output size", err))) return s;
    cl_mem ba, bb, bc, bbias = NULL, bal = NULL;
    if ((s = clu_buf(c, j->A, &ba, err)) || (s = clu_buf(c, j->B, &bb, err)) || (s = clu_buf(c, j->C, &bc, err)) ||
        (j->bias >= 0 && (s = clu_buf(c, j->bias, &bbias, err))) ||
        (j->alpha_t >= 0 && (s = clu_buf(c, j->alpha_t, &bal, err))))
        return s;
    cl_kernel k;
    if ((s = c->kernel(c, "matmul", "gemm", &k, err))) return s;
    clu_args g;
    clu_args_init(&g, c, k, err);
    clu_mem(&g, ba);
    clu_mem(&g, bb);
    clu_mem(&g, bbias);
    clu_mem(&g, bc);
    clu_mem(&g, bal);
    clu_int(&g, j->M);
    clu_int(&g, j->N);
    clu_int(&g, j->K);
    clu_int(&g, j->nb1);
    clu_int(&g, j->ab0);
    clu_int(&g, j->ab1);
    clu_int(&g, j->am);
    clu_int(&g, j->ak);
    clu_int(&g, j->bb0);
    clu_int(&g, j->bb1);
    clu_int(&g, j->bk);
    clu_int(&g, j->bn);
    clu_flt(&g, j->alpha);
    clu_int(&g, j->kind);
    clu_flt(&g, j->act_a);
    clu_int(&g, j->amode);
    if (g.st) return g.st;
    size_t gl[3] = {clu_round((size_t)j->N, 16), clu_round((size_t)j->M, 16), (size_t)j->batch};
    size_t lo[3] = {16, 16, 1};
    return c->launch(c, k, 3, gl, lo, err);
}

static int64_t prod(const cd_shape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= s->d[i];
    return p;
}

/* fc: Out = act(Input2D x W + Bias); mul: Out = X2D x Y2D. */
static cd_status op_fc_mul(cd_cl_ctx *c, cd_error *err) {
    bool fc = !strcmp(c->op->type, "fc");
    gemm_job j;
    cd_status s;
    memset(&j, 0, sizeof j);
    j.bias = j.alpha_t = -1;
    if ((s = clu_need_in(c, fc ? "Input" : "X", 0, &j.A, err)) || (s = clu_need_in(c, fc ? "W" : "Y", 0, &j.B, err)) ||
        (s = clu_need_out(c, "Out", 0, &j.C, err)))
        return s;
    if ((s = clu_need_float(c, j.A, "input", err)) || (s = clu_need_float(c, j.B, "weight", err))) return s;
    const cd_shape *xs = &clu_meta(c, j.A)->shape, *ws = &clu_meta(c, j.B)->shape;
    int64_t xn, yn = 1;
    if (fc) {
        xn = cd_attr_int(c->op, "in_num_col_dims", 1);
        const char *ot = cd_attr_str(c->op, "op_type", "");
        if (!strcmp(ot, "matmul") || !strcmp(ot, "matmul_v2")) xn = xs->rank - 1;
        if (cd_attr_bool(c->op, "padding_weights", false))
            return clu_fail(c, err, CD_E_UNSUPPORTED, "padding_weights (x86 padded fc weights) is not supported");
    } else {
        xn = cd_attr_int(c->op, "x_num_col_dims", 1);
        yn = cd_attr_int(c->op, "y_num_col_dims", 1);
    }
    if (xn < 1 || xn > xs->rank || yn < 1 || yn > ws->rank)
        return clu_fail(c, err, CD_E_MODEL, "num_col_dims out of range for the operand ranks");
    j.M = prod(xs, 0, (int)xn);
    j.K = prod(xs, (int)xn, xs->rank);
    int64_t wk = fc ? ws->d[0] : prod(ws, 0, (int)yn);
    j.N = fc ? prod(ws, 1, ws->rank) : prod(ws, (int)yn, ws->rank);
    if (wk != j.K)
        return clu_fail(c, err, CD_E_MODEL, "inner dims differ: %lld vs %lld", (long long)j.K, (long long)wk);
    j.batch = j.nb1 = 1;
    j.am = j.K, j.ak = 1, j.bk = j.N, j.bn = 1;
    j.alpha = 1.0;
    if (fc) {
        j.bias = clu_in(c, "Bias", 0);
        if (j.bias >= 0) {
            if ((s = clu_need_float(c, j.bias, "Bias", err))) return s;
            if (cd_value_numel(clu_meta(c, j.bias)) != j.N)
                return clu_fail(c, err, CD_E_MODEL, "Bias has %lld values, expected N = %lld",
                                (long long)cd_value_numel(clu_meta(c, j.bias)), (long long)j.N);
        }
        cd_op_ctx oc;
        cd_act act;
        clu_op_ctx(c, &oc, err);
        if ((s = cd_act_from_op(&oc, "activation_type", &act))) return s;
        if (act.kind != CD_ACT_NONE && act.kind != CD_ACT_RELU && act.kind != CD_ACT_RELU6 &&
            act.kind != CD_ACT_LEAKY_RELU && act.kind != CD_ACT_PRELU)
            return clu_fail(c, err, CD_E_MODEL, "activation_type '%s' is not an fc fusion (relu, relu6, prelu)",
                            cd_attr_str(c->op, "activation_type", ""));
        j.kind = (int)act.kind;
        j.act_a = act.a;
        if (act.kind == CD_ACT_PRELU) {
            if ((s = clu_need_in(c, "Alpha", 0, &j.alpha_t, err)) || (s = clu_need_float(c, j.alpha_t, "Alpha", err)))
                return s;
            j.amode = clu_prelu_mode(cd_attr_str(c->op, "prelu_mode", "channel"));
            if (j.amode < 0) return clu_fail(c, err, CD_E_MODEL, "prelu_mode is not all, channel or element");
            if (cd_value_numel(clu_meta(c, j.alpha_t)) < (j.amode == 0 ? 1 : j.N))
                return clu_fail(c, err, CD_E_MODEL, "Alpha has too few values for prelu_mode");
        }
    }
    if (cd_value_numel(clu_meta(c, j.C)) != j.M * j.N)
        return clu_fail(c, err, CD_E_INTERNAL, "planned Out size differs from M x N");
    return run_gemm(c, &j, err);
}

/* matmul (v1) and matmul_v2. */
static cd_status op_matmul(cd_cl_ctx *c, cd_error *err) {
    bool v2 = !strcmp(c->op->type, "matmul_v2");
    gemm_job j;
    cd_status s;
    memset(&j, 0, sizeof j);
    j.bias = j.alpha_t = -1;
    if ((s = clu_need_in(c, "X", 0, &j.A, err)) || (s = clu_need_in(c, "Y", 0, &j.B, err)) ||
        (s = clu_need_out(c, "Out", 0, &j.C, err)))
        return s;
    if ((s = clu_need_float(c, j.A, "X", err)) || (s = clu_need_float(c, j.B, "Y", err))) return s;
    cd_shape xs = clu_meta(c, j.A)->shape, ys = clu_meta(c, j.B)->shape;
    bool tx = cd_attr_bool(c->op, v2 ? "trans_x" : "transpose_X", false);
    bool ty = cd_attr_bool(c->op, v2 ? "trans_y" : "transpose_Y", false);
    j.alpha = cd_attr_float(c->op, "alpha", 1.0);
    if (xs.rank < 1 || ys.rank < 1) return clu_fail(c, err, CD_E_MODEL, "X and Y need rank >= 1");
    if (!v2 && xs.rank == 1 && ys.rank == 1 && tx && ty) {
        /* v1 outer product [Kx, Ky]: X as a column, Y as a row, K = 1 */
        j.M = xs.d[0], j.N = ys.d[0], j.K = 1;
        j.am = 1, j.ak = 1, j.bk = j.N, j.bn = 1;
        j.batch = j.nb1 = 1;
        return run_gemm(c, &j, err);
    }
    /* rank-1 X is a row [1, K]; rank-1 Y a column [K, 1] (transposes ignored on rank 1) */
    if (xs.rank == 1) {
        xs.rank = 2;
        xs.d[1] = xs.d[0];
        xs.d[0] = 1;
        tx = false;
    }
    if (ys.rank == 1) {
        ys.rank = 2;
        ys.d[1] = 1;
        ty = false;
    }
    int64_t xr = xs.d[xs.rank - 2], xc = xs.d[xs.rank - 1], yr = ys.d[ys.rank - 2], yc = ys.d[ys.rank - 1];
    j.M = tx ? xc : xr;
    j.K = tx ? xr : xc;
    j.N = ty ? yr : yc;
    if ((ty ? yc : yr) != j.K)
        return clu_fail(c, err, CD_E_MODEL, "inner dims differ: %lld vs %lld", (long long)j.K,
                        (long long)(ty ? yc : yr));
    j.am = tx ? 1 : xc, j.ak = tx ? xc : 1;
    j.bk = ty ? 1 : yc, j.bn = ty ? yc : 1;
    /* batch dims, right-aligned NumPy broadcasting, merged into at most two levels */
    int bx = xs.rank - 2, by = ys.rank - 2, nb = bx > by ? bx : by;
    int64_t dims[CD_MAX_RANK], sx[CD_MAX_RANK], sy[CD_MAX_RANK];
    int64_t px = xr * xc, py = yr * yc;
    for (int i = nb - 1, ix = bx - 1, iy = by - 1; i >= 0; i--, ix--, iy--) {
        int64_t dx = ix >= 0 ? xs.d[ix] : 1, dy = iy >= 0 ? ys.d[iy] : 1;
        if (dx != dy && dx != 1 && dy != 1)
            return clu_fail(c, err, CD_E_MODEL, "batch dims of X and Y do not broadcast");
        dims[i] = dx > dy ? dx : dy;
        sx[i] = dx == 1 ? 0 : px;
        sy[i] = dy == 1 ? 0 : py;
        px *= dx;
        py *= dy;
    }
    int64_t md[2] = {1, 1}, mx[2] = {0, 0}, my[2] = {0, 0};
    int k = 0;
    for (int i = 0; i < nb; i++) {
        if (dims[i] == 1) continue;
        if (k > 0 && mx[k - 1] == sx[i] * dims[i] && my[k - 1] == sy[i] * dims[i]) {
            md[k - 1] *= dims[i], mx[k - 1] = sx[i], my[k - 1] = sy[i];
            continue;
        }
        if (k == 2)
            return clu_fail(c, err, CD_E_UNSUPPORTED,
                            "more than two independent broadcast batch dims; this op runs on the CPU");
        md[k] = dims[i], mx[k] = sx[i], my[k] = sy[i];
        k++;
    }
    if (k == 1) { /* one level: put it in the inner slot */
        md[1] = md[0], mx[1] = mx[0], my[1] = my[0];
        md[0] = 1, mx[0] = my[0] = 0;
    }
    j.batch = md[0] * md[1];
    j.nb1 = md[1];
    j.ab0 = mx[0], j.ab1 = mx[1], j.bb0 = my[0], j.bb1 = my[1];
    if (cd_value_numel(clu_meta(c, j.C)) != j.batch * j.M * j.N)
        return clu_fail(c, err, CD_E_INTERNAL, "planned Out size differs from batch x M x N");
    return run_gemm(c, &j, err);
}

static const cd_cl_op_def defs[] = {
    {"fc", "matmul", op_fc_mul},
    {"mul", "matmul", op_fc_mul},
    {"matmul", "matmul", op_matmul},
    {"matmul_v2", "matmul", op_matmul},
};
const cd_cl_op_table cd_cl_ops_matmul = {defs, (int)(sizeof defs / sizeof defs[0])};
