/* fc, mul, matmul (v1), matmul_v2 (docs/nb-format.md §7.6-§7.9) on the blocked GEMM, in float and
 * _Float16 (one template body, ops_nn_matmul_tmpl.h, instantiated twice).
 *
 * Batched matmul broadcasts batch dims NumPy-style for both versions; that is a superset of
 * the v1 rule (other operand rank 2 or identical batch dims). A 1-D operand is a row (X) or
 * column (Y) vector and its added dim is dropped from the result; transposing a 1-D
 * operand is a no-op, except for v1 with both operands 1-D and both flags set, which is
 * the outer product [Kx, Ky] of §7.8. */
#include "backends/cpu/gemm.h"
#include "backends/cpu/matmul_geo.h"
#include "backends/cpu/par.h"
#include "engine/ops.h"
#include <limits.h>
#include <math.h>
#include <string.h>

static int64_t prod(const cd_shape *s, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= s->d[i];
    return p;
}

static cd_status check_pos(cd_op_ctx *c, const char *slot, const cd_value *v) {
    char b[96];
    for (int i = 0; i < v->shape.rank; i++)
        if (v->shape.d[i] <= 0)
            return cd_op_fail(c, CD_E_MODEL, "%s shape %s has a non-positive dim", slot,
                              cd_shape_str(&v->shape, b, sizeof b));
    if (v->shape.rank == 0) return cd_op_fail(c, CD_E_MODEL, "%s is a scalar; a matrix operand is needed", slot);
    return CD_OK;
}

/* ---------------- fc ---------------- */
typedef struct {
    int64_t M, K, N;
    int ncd;
    cd_act act;
    int prelu_mode;
    cd_shape out;
} fc_geo;

static cd_status fc_parse(cd_op_ctx *c, fc_geo *g) {
    memset(g, 0, sizeof *g);
    cd_value *x = cd_in_req(c, "Input", 0);
    if (!x) return c->err->code;
    cd_value *w = cd_in_req(c, "W", 0);
    if (!w) return c->err->code;
    if (!cd_out(c, "Out", 0)) return cd_op_fail(c, CD_E_MODEL, "output slot Out is not connected");
    cd_status s;
    if ((s = check_pos(c, "Input", x)) || (s = check_pos(c, "W", w))) return s;
    char b1[96], b2[96];
    if (w->shape.rank != 2)
        return cd_op_fail(c, CD_E_MODEL, "W must be 2-D [K, N] but has shape %s",
                          cd_shape_str(&w->shape, b1, sizeof b1));
    if (cd_attr_bool(c->op, "padding_weights", false))
        return cd_op_fail(c, CD_E_UNSUPPORTED,
                          "padding_weights = true (x86-only padded fc weights) is not supported; "
                          "convert the model for ARM or OpenCL");
    const char *ot = cd_attr_str(c->op, "op_type", "mul");
    int64_t ncd = cd_attr_int(c->op, "in_num_col_dims", 1);
    if (!strcmp(ot, "matmul") || !strcmp(ot, "matmul_v2"))
        ncd = x->shape.rank - 1;
    else if (ot[0] && strcmp(ot, "mul"))
        return cd_op_fail(c, CD_E_MODEL, "op_type '%s' is not mul, matmul or matmul_v2", ot);
    if (ncd < 1 || ncd > x->shape.rank || ncd >= CD_MAX_RANK)
        return cd_op_fail(c, CD_E_MODEL, "in_num_col_dims = %lld is out of range for Input %s (need 1 <= it <= rank)",
                          (long long)ncd, cd_shape_str(&x->shape, b1, sizeof b1));
    g->ncd = (int)ncd;
    g->M = prod(&x->shape, 0, g->ncd);
    g->K = prod(&x->shape, g->ncd, x->shape.rank);
    g->N = w->shape.d[1];
    if (g->K != w->shape.d[0])
        return cd_op_fail(c, CD_E_MODEL,
                          "Input %s flattened at in_num_col_dims=%d has K=%lld columns but W %s has %lld rows",
                          cd_shape_str(&x->shape, b1, sizeof b1), g->ncd, (long long)g->K,
                          cd_shape_str(&w->shape, b2, sizeof b2), (long long)w->shape.d[0]);
    if (g->M > INT32_MAX || g->K > INT32_MAX || g->N > INT32_MAX)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "fc matrix dims exceed 2^31");
    cd_value *bias = cd_in(c, "Bias", 0);
    if (bias && cd_value_numel(bias) != g->N)
        return cd_op_fail(c, CD_E_MODEL, "Bias %s has %lld elements but W has N=%lld columns",
                          cd_shape_str(&bias->shape, b1, sizeof b1), (long long)cd_value_numel(bias), (long long)g->N);
    g->out.rank = g->ncd + 1;
    for (int i = 0; i < g->ncd; i++) g->out.d[i] = x->shape.d[i];
    g->out.d[g->ncd] = g->N;
    if ((s = cd_act_from_op(c, "activation_type", &g->act))) return s;
    if (g->act.kind == CD_ACT_PRELU) {
        const char *m = cd_attr_str(c->op, "prelu_mode", "channel");
        if (strcmp(m, "all") && strcmp(m, "channel") && strcmp(m, "element"))
            return cd_op_fail(c, CD_E_MODEL, "prelu_mode '%s' is not one of all, channel, element", m);
        g->prelu_mode = m[0] == 'a' ? 0 : m[0] == 'c' ? 1 : 2;
        cd_value *al = cd_in(c, "Alpha", 0);
        if (!al) return cd_op_fail(c, CD_E_MODEL, "activation_type prelu needs input Alpha, which is not connected");
        int64_t need = g->prelu_mode == 0 ? 1 : g->prelu_mode == 1 ? g->out.d[1] : prod(&g->out, 1, g->out.rank);
        if (cd_value_numel(al) != need)
            return cd_op_fail(c, CD_E_MODEL, "Alpha has %lld elements; prelu_mode '%s' needs %lld",
                              (long long)cd_value_numel(al), m, (long long)need);
    }
    return CD_OK;
}

cd_status cd_nn_fc_infer(cd_op_ctx *c) {
    fc_geo g;
    cd_status s = fc_parse(c, &g);
    if (s) return s;
    cd_value *o = cd_out(c, "Out", 0);
    o->dtype = cd_act_dtype(c);
    o->shape = g.out;
    return CD_OK;
}

double cd_nn_fc_macs(const cd_op_ctx *c) {
    cd_value *x = &c->vals[cd_op_in(c->op, "Input", 0)];
    int wid = cd_op_in(c->op, "W", 0);
    if (wid < 0 || c->vals[wid].shape.rank != 2) return 0;
    return (double)cd_value_numel(x) * (double)c->vals[wid].shape.d[1];
}

/* ---------------- mul ---------------- */
typedef struct {
    int64_t M, K, N;
    cd_shape out;
} mul_geo;

static cd_status mul_parse(cd_op_ctx *c, mul_geo *g) {
    cd_value *x = cd_in_req(c, "X", 0);
    if (!x) return c->err->code;
    cd_value *y = cd_in_req(c, "Y", 0);
    if (!y) return c->err->code;
    if (!cd_out(c, "Out", 0)) return cd_op_fail(c, CD_E_MODEL, "output slot Out is not connected");
    cd_status s;
    if ((s = check_pos(c, "X", x)) || (s = check_pos(c, "Y", y))) return s;
    int64_t xn = cd_attr_int(c->op, "x_num_col_dims", 1), yn = cd_attr_int(c->op, "y_num_col_dims", 1);
    char b1[96], b2[96];
    if (xn < 1 || xn >= x->shape.rank || yn < 1 || yn >= y->shape.rank)
        return cd_op_fail(c, CD_E_MODEL,
                          "x_num_col_dims=%lld / y_num_col_dims=%lld out of range for X %s, Y %s (need 1 <= n < rank)",
                          (long long)xn, (long long)yn, cd_shape_str(&x->shape, b1, sizeof b1),
                          cd_shape_str(&y->shape, b2, sizeof b2));
    g->M = prod(&x->shape, 0, (int)xn);
    g->K = prod(&x->shape, (int)xn, x->shape.rank);
    int64_t ky = prod(&y->shape, 0, (int)yn);
    g->N = prod(&y->shape, (int)yn, y->shape.rank);
    if (g->K != ky)
        return cd_op_fail(c, CD_E_MODEL,
                          "X %s flattens to [%lld, %lld] but Y %s flattens to [%lld, %lld]: inner dims differ",
                          cd_shape_str(&x->shape, b1, sizeof b1), (long long)g->M, (long long)g->K,
                          cd_shape_str(&y->shape, b2, sizeof b2), (long long)ky, (long long)g->N);
    int r = (int)xn + y->shape.rank - (int)yn;
    if (r > CD_MAX_RANK) return cd_op_fail(c, CD_E_UNSUPPORTED, "output rank %d exceeds %d", r, CD_MAX_RANK);
    if (g->M > INT32_MAX || g->K > INT32_MAX || g->N > INT32_MAX)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "mul matrix dims exceed 2^31");
    g->out.rank = r;
    for (int i = 0; i < xn; i++) g->out.d[i] = x->shape.d[i];
    for (int i = (int)yn; i < y->shape.rank; i++) g->out.d[xn + i - yn] = y->shape.d[i];
    return CD_OK;
}

cd_status cd_nn_mul_infer(cd_op_ctx *c) {
    mul_geo g;
    cd_status s = mul_parse(c, &g);
    if (s) return s;
    cd_value *o = cd_out(c, "Out", 0);
    o->dtype = cd_act_dtype(c);
    o->shape = g.out;
    return CD_OK;
}

double cd_nn_mul_macs(const cd_op_ctx *c) {
    cd_error e;
    cd_op_ctx cc = *c;
    cc.err = &e;
    mul_geo g;
    return mul_parse(&cc, &g) ? 0 : (double)g.M * g.N * g.K;
}

/* ---------------- matmul / matmul_v2 ---------------- */
typedef cd_mm_geo mm_geo; /* matmul_geo.h */

static cd_status mm_parse(cd_op_ctx *c, mm_geo *g) {
    memset(g, 0, sizeof *g);
    bool v2 = !strcmp(c->op->type, "matmul_v2");
    cd_value *x = cd_in_req(c, "X", 0);
    if (!x) return c->err->code;
    cd_value *y = cd_in_req(c, "Y", 0);
    if (!y) return c->err->code;
    if (!cd_out(c, "Out", 0)) return cd_op_fail(c, CD_E_MODEL, "output slot Out is not connected");
    cd_status s;
    if ((s = check_pos(c, "X", x)) || (s = check_pos(c, "Y", y))) return s;
    bool tx = cd_attr_bool(c->op, v2 ? "trans_x" : "transpose_X", false);
    bool ty = cd_attr_bool(c->op, v2 ? "trans_y" : "transpose_Y", false);
    g->alpha = (float)cd_attr_float(c->op, "alpha", 1.0); /* NaN/Inf as stored */
    const cd_shape *xs = &x->shape, *ys = &y->shape;
    int rx = xs->rank, ry = ys->rank;
    char b1[96], b2[96];
    if (!v2 && rx == 1 && ry == 1 && tx && ty) { /* outer product (§7.8) */
        g->outer = true;
        g->M = xs->d[0];
        g->K = 1;
        g->N = ys->d[0];
        g->batches = 1;
        g->out.rank = 2;
        g->out.d[0] = g->M;
        g->out.d[1] = g->N;
        return CD_OK;
    }
    /* matrix views */
    int64_t xm, xk, yk, yn;
    if (rx == 1) {
        xm = 1;
        xk = xs->d[0];
        tx = false;
    } else if (!tx) {
        xm = xs->d[rx - 2];
        xk = xs->d[rx - 1];
    } else {
        xm = xs->d[rx - 1];
        xk = xs->d[rx - 2];
    }
    if (ry == 1) {
        yk = ys->d[0];
        yn = 1;
        ty = false;
    } else if (!ty) {
        yk = ys->d[ry - 2];
        yn = ys->d[ry - 1];
    } else {
        yk = ys->d[ry - 1];
        yn = ys->d[ry - 2];
    }
    if (xk != yk)
        return cd_op_fail(c, CD_E_MODEL, "X %s%s and Y %s%s: contraction dims differ (%lld vs %lld)",
                          cd_shape_str(xs, b1, sizeof b1), tx ? " (transposed)" : "", cd_shape_str(ys, b2, sizeof b2),
                          ty ? " (transposed)" : "", (long long)xk, (long long)yk);
    g->M = xm;
    g->K = xk;
    g->N = yn;
    g->tx = tx;
    g->ty = ty;
    int bx = rx > 2 ? rx - 2 : 0, by = ry > 2 ? ry - 2 : 0;
    g->brank = bx > by ? bx : by;
    g->batches = 1;
    for (int i = 0; i < g->brank; i++) {
        int ix = i - (g->brank - bx), iy = i - (g->brank - by);
        int64_t dx = ix >= 0 ? xs->d[ix] : 1, dy = iy >= 0 ? ys->d[iy] : 1;
        if (dx != dy && dx != 1 && dy != 1)
            return cd_op_fail(c, CD_E_MODEL, "batch dims of X %s and Y %s do not broadcast (dim %d: %lld vs %lld)",
                              cd_shape_str(xs, b1, sizeof b1), cd_shape_str(ys, b2, sizeof b2), i, (long long)dx,
                              (long long)dy);
        g->xb[i] = dx;
        g->yb[i] = dy;
        g->bdims[i] = dx > dy ? dx : dy;
        g->batches *= g->bdims[i];
    }
    if (g->M > INT32_MAX || g->K > INT32_MAX || g->N > INT32_MAX)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "matmul matrix dims exceed 2^31");
    int r = 0;
    for (int i = 0; i < g->brank; i++) g->out.d[r++] = g->bdims[i];
    if (rx > 1) g->out.d[r++] = g->M;
    if (ry > 1) g->out.d[r++] = g->N;
    if (r == 0) g->out.d[r++] = 1; /* 1-D x 1-D: dot product, shape [1] */
    g->out.rank = r;
    return CD_OK;
}

cd_status cd_nn_matmul_parse(cd_op_ctx *c, cd_mm_geo *g) { return mm_parse(c, g); }

void cd_mm_batch(const cd_mm_geo *g, int64_t b, int64_t *xo, int64_t *yo) {
    int64_t rem = b, xstride = 1, ystride = 1;
    *xo = *yo = 0;
    for (int i = g->brank - 1; i >= 0; i--) {
        int64_t idx = rem % g->bdims[i];
        rem /= g->bdims[i];
        if (g->xb[i] != 1) *xo += idx * xstride;
        if (g->yb[i] != 1) *yo += idx * ystride;
        xstride *= g->xb[i];
        ystride *= g->yb[i];
    }
}

cd_status cd_nn_matmul_infer(cd_op_ctx *c) {
    mm_geo g;
    cd_status s = mm_parse(c, &g);
    if (s) return s;
    cd_value *o = cd_out(c, "Out", 0);
    o->dtype = cd_act_dtype(c);
    o->shape = g.out;
    return CD_OK;
}

double cd_nn_matmul_macs(const cd_op_ctx *c) {
    cd_error e;
    cd_op_ctx cc = *c;
    cc.err = &e;
    mm_geo g;
    return mm_parse(&cc, &g) ? 0 : (double)g.batches * g.M * g.N * g.K;
}

static cd_status check_in_dtype(cd_op_ctx *c, const char *const *slots, int n) {
    for (int i = 0; i < n; i++) {
        cd_value *v = cd_in(c, slots[i], 0);
        if (v && (v->dtype != cd_act_dtype(c) || !v->data))
            return cd_op_fail(c, CD_E_INTERNAL, "%s has dtype %s (or no data) but the run expects %s", slots[i],
                              cd_dtype_name(v->dtype), cd_dtype_name(cd_act_dtype(c)));
    }
    return CD_OK;
}

#define NN_T float
#define NN_S f32
#include "ops_nn_matmul_tmpl.h"
#define NN_T _Float16
#define NN_S f16
#include "ops_nn_matmul_tmpl.h"

cd_status cd_nn_fc_prepare(cd_op_ctx *c, void **state) {
    fc_geo g;
    cd_status s = fc_parse(c, &g);
    if (s) return s;
    fc_geo *p = malloc(sizeof g);
    if (!p) return CD_E_NOMEM;
    *p = g;
    *state = p;
    return CD_OK;
}

cd_status cd_nn_fc_run(cd_op_ctx *c) {
    fc_geo g;
    cd_status s = CD_PARSED(c, fc_geo, fc_parse, g);
    static const char *const slots[] = {"Input", "W", "Bias", "Alpha"};
    if (s || (s = check_in_dtype(c, slots, 4))) return s;
    if (c->prec == CD_PREC_FP16)
        fc_run_f16(c, &g);
    else
        fc_run_f32(c, &g);
    return CD_OK;
}

cd_status cd_nn_mul_run(cd_op_ctx *c) {
    mul_geo g;
    cd_status s = mul_parse(c, &g);
    static const char *const slots[] = {"X", "Y"};
    if (s || (s = check_in_dtype(c, slots, 2))) return s;
    if (c->prec == CD_PREC_FP16)
        mul_run_f16(c, &g);
    else
        mul_run_f32(c, &g);
    return CD_OK;
}

void cd_nn_matmul_sums_f32(const cd_mm_geo *g, const float *x, const float *y, float *out, int threads) {
    mm_core_f32(g, x, y, out, 1.0f, threads);
}

cd_status cd_nn_matmul_run(cd_op_ctx *c) {
    mm_geo g;
    cd_status s = mm_parse(c, &g);
    static const char *const slots[] = {"X", "Y"};
    if (s || (s = check_in_dtype(c, slots, 2))) return s;
    if (c->prec == CD_PREC_FP16)
        mm_run_f16(c, &g);
    else
        mm_run_f32(c, &g);
    return CD_OK;
}
