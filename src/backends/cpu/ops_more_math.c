/* Math ops added for op coverage (docs/op-coverage.md): trigonometric activations (sin, cos,
 * tan, asin, acos, atan), pow with a scalar factor, the comparisons (greater_than,
 * greater_equal, less_than, less_equal, equal, not_equal) with Paddle's axis broadcasting, lrn
 * (across channels) and reduce_sum / reduce_mean / reduce_max / reduce_min.
 *
 * Precision: like the other transcendental kernels (ops_basic_act.c), each element is
 * evaluated in float on the (half or float) input and rounded once to the storage type.
 * lrn and reduce_mean sum in float whatever the storage type, as the OpenCL kernels do.
 *
 * Paddle semantics (facts from the Paddle op definitions, not code):
 *  - pow: Out = X ^ factor, FLOAT `factor` (default 1); a 1-element FactorTensor overrides it.
 *  - comparisons: Out (bool) = X op Y, INT `axis` (default -1) broadcasting as elementwise ops;
 *    NaN is unordered (only not_equal holds).
 *  - lrn: INT `n` (5), FLOATs `k` (2), `alpha` (1e-4), `beta` (0.75), NCHW:
 *    Out = X * (k + alpha * sum of X^2 over channels [c - (n-1)/2, c - (n-1)/2 + n))^(-beta);
 *    alpha is NOT divided by n (unlike Caffe/ONNX). Lite's ARM kernel uses the same window
 *    for odd n; for even n it stops one channel earlier (documented in docs/op-coverage.md).
 *  - reduce_*: INTS `dim`, BOOLEAN `keep_dim` (false), BOOLEAN `reduce_all` (false; an empty
 *    `dim` also reduces all); a full reduction without keep_dim gives shape [1]. */
/* Multiplies and adds stay separately rounded (no FMA contraction, which GCC does by default
 * for gnu11 on FMA ISAs such as aarch64): the results are the same bits on every CPU, and the
 * OpenCL kernels (FP_CONTRACT OFF) compute the same roundings. */
#pragma GCC optimize("fp-contract=off")
#include "backends/cpu/par.h"
#include "backends/cpu/ops_util.h"
#include "engine/op_list.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef _Float16 f16;

#define PAR_MIN 32768

static inline void stf(void *p, cd_dtype t, int64_t i, float v) {
    if (t == CD_F16)
        ((f16 *)p)[i] = (f16)v;
    else
        ((float *)p)[i] = v;
}

/* ------------------------------------------------------------------ trig and pow */

/* The functions' numbers are their kinds in the op table (engine/op_list.def), which math.cl's
 * math_unary switches on as K_SIN .. K_POW. */
enum {
    T_SIN = CD_K_sin,
    T_COS = CD_K_cos,
    T_TAN = CD_K_tan,
    T_ASIN = CD_K_asin,
    T_ACOS = CD_K_acos,
    T_ATAN = CD_K_atan,
    T_POW = CD_K_pow
};

int cd_more_unary_code(const char *t) {
    switch (cd_op_id_of(t)) {
    case CD_OPID_sin:
    case CD_OPID_cos:
    case CD_OPID_tan:
    case CD_OPID_asin:
    case CD_OPID_acos:
    case CD_OPID_atan:
    case CD_OPID_pow: return cd_op_info_find(t)->kind;
    default: return -1;
    }
}

/* pow's exponent: FactorTensor (1 element, read when it holds data) over FLOAT factor. */
static cd_status pow_factor(cd_op_ctx *c, float *f) {
    double v = cd_attr_float(c->op, "factor", 1.0);
    cd_value *ft = cd_in(c, "FactorTensor", 0);
    if (ft) {
        if (cd_value_numel(ft) != 1)
            return cd_op_fail(c, CD_E_MODEL, "FactorTensor must hold 1 element, it holds %lld",
                              (long long)cd_value_numel(ft));
        if (ft->data) v = cd_value_get(ft, 0);
    }
    if (isnan(v)) return cd_op_fail(c, CD_E_MODEL, "pow factor is NaN");
    *f = (float)v;
    return CD_OK;
}

cd_status cd_more_unary_infer(cd_op_ctx *c) {
    cd_value *x, *o;
    cd_status s = cd_ops_need_io(c, "X", "Out", &x, &o);
    if (s) return s;
    if (cd_more_unary_code(c->op->type) < 0) return cd_op_fail(c, CD_E_INTERNAL, "not a math op type");
    if ((s = cd_ops_need_float(c, x))) return s;
    float f;
    if (!strcmp(c->op->type, "pow") && (s = pow_factor(c, &f))) return s;
    o->shape = x->shape;
    o->dtype = x->dtype;
    return CD_OK;
}

static inline float trig_eval(int k, float x, float f) {
    switch (k) {
    case T_SIN: return sinf(x);
    case T_COS: return cosf(x);
    case T_TAN: return tanf(x);
    case T_ASIN: return asinf(x);
    case T_ACOS: return acosf(x);
    case T_ATAN: return atanf(x);
    default: return powf(x, f);
    }
}

cd_status cd_more_unary_run(cd_op_ctx *c) {
    cd_value *x, *o;
    cd_status s = cd_ops_need_io(c, "X", "Out", &x, &o);
    if (s) return s;
    int k = cd_more_unary_code(c->op->type);
    float f = 1.0f;
    if (k == T_POW && (s = pow_factor(c, &f))) return s;
    int64_t n = cd_value_numel(x);
    if (k < 0 || n != cd_value_numel(o) || x->dtype != o->dtype || !cd_ops_is_float(x->dtype))
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (n == 0) return CD_OK;
    const cd_dtype t = x->dtype;
    const void *in = x->data;
    void *out = o->data;
    int threads = c->threads > 0 ? c->threads : 1;
    CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, { stf(out, t, i, trig_eval(k, cd_ops_ldf(in, t, i), f)); });
    return CD_OK;
}

/* ------------------------------------------------------------------ greater_than */

/* Output shape of X op Y per docs/nb-format.md §7.0 and the element strides of X and Y over it
 * (0 where an operand is broadcast). Returns 0, or -1 with msg filled. */
int cd_more_bcast(const cd_shape *x, const cd_shape *y, int64_t axis, cd_shape *out, int64_t sx[CD_MAX_RANK],
                  int64_t sy[CD_MAX_RANK], char *msg, size_t msz) {
    int r = x->rank >= y->rank ? x->rank : y->rank, lo = x->rank + y->rank - r;
    int64_t ax[CD_MAX_RANK], ay[CD_MAX_RANK];
    memset(out, 0, sizeof *out);
    if (cd_bcast_align(x, y, axis, ax, ay)) {
        snprintf(msg, msz, "axis %lld cannot place the rank-%d operand inside the rank-%d one", (long long)axis, lo, r);
        return -1;
    }
    out->rank = r;
    int64_t px = 1, py = 1;
    for (int i = r - 1; i >= 0; i--) {
        if (ax[i] < 0 || ay[i] < 0 || (ax[i] != ay[i] && ax[i] != 1 && ay[i] != 1)) {
            snprintf(msg, msz, "X and Y do not broadcast with axis %lld: aligned dim %d is %lld vs %lld",
                     (long long)axis, i, (long long)ax[i], (long long)ay[i]);
            return -1;
        }
        out->d[i] = ax[i] == 1 ? ay[i] : ax[i];
        sx[i] = ax[i] == 1 ? 0 : px;
        sy[i] = ay[i] == 1 ? 0 : py;
        px *= ax[i];
        py *= ay[i];
    }
    return 0;
}

static bool cmp_dtype_ok(cd_dtype t) { return t == CD_F32 || t == CD_F16 || t == CD_I32 || t == CD_I64; }

/* Comparison code of an op type (the OpenCL kernel uses the same numbering), -1 if none. */
int cd_more_compare_code(const char *t) {
    static const char *names[] = {"greater_than", "greater_equal", "less_than", "less_equal", "equal", "not_equal"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(t, names[i])) return i;
    return -1;
}

static inline bool cmp_apply(int code, int s) { /* s = sign of x - y: -1, 0, 1 (2: unordered, NaN) */
    switch (code) {
    case 0: return s == 1;
    case 1: return s == 1 || s == 0;
    case 2: return s == -1;
    case 3: return s == -1 || s == 0;
    case 4: return s == 0;
    default: return s != 0;
    }
}

cd_status cd_more_compare_infer(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *y = cd_in(c, "Y", 0), *o = cd_out(c, "Out", 0);
    if (!x || !y || !o) return cd_op_fail(c, CD_E_MODEL, "inputs X, Y and output Out must be connected");
    if (cd_more_compare_code(c->op->type) < 0) return cd_op_fail(c, CD_E_INTERNAL, "not a comparison op type");
    if (!cmp_dtype_ok(x->dtype) || !cmp_dtype_ok(y->dtype))
        return cd_op_fail(c, CD_E_UNSUPPORTED,
                          "element types %s and %s are not supported (float32, float16, int32, "
                          "int64)",
                          cd_dtype_name(x->dtype), cd_dtype_name(y->dtype));
    int64_t sx[CD_MAX_RANK], sy[CD_MAX_RANK];
    char msg[256];
    if (cd_more_bcast(&x->shape, &y->shape, cd_attr_int(c->op, "axis", -1), &o->shape, sx, sy, msg, sizeof msg))
        return cd_op_fail(c, CD_E_MODEL, "%s", msg);
    o->dtype = CD_BOOL;
    return CD_OK;
}

static inline double ldd(const cd_value *v, int64_t i) {
    switch (v->dtype) {
    case CD_F32: return ((const float *)v->data)[i];
    case CD_F16: return (double)((const f16 *)v->data)[i];
    case CD_I32: return ((const int32_t *)v->data)[i];
    default: return (double)((const int64_t *)v->data)[i];
    }
}

cd_status cd_more_compare_run(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *y = cd_in(c, "Y", 0), *o = cd_out(c, "Out", 0);
    if (!x || !y || !o) return cd_op_fail(c, CD_E_MODEL, "inputs X, Y and output Out must be connected");
    int64_t sx[CD_MAX_RANK], sy[CD_MAX_RANK];
    cd_shape os;
    char msg[256];
    if (cd_more_bcast(&x->shape, &y->shape, cd_attr_int(c->op, "axis", -1), &os, sx, sy, msg, sizeof msg))
        return cd_op_fail(c, CD_E_MODEL, "%s", msg);
    const int code = cd_more_compare_code(c->op->type);
    if (code < 0 || !cd_shape_eq(&os, &o->shape) || o->dtype != CD_BOOL || !cmp_dtype_ok(x->dtype) ||
        !cmp_dtype_ok(y->dtype))
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    int64_t n = cd_value_numel(o);
    uint8_t *out = o->data;
    bool int64_both = x->dtype == CD_I64 && y->dtype == CD_I64; /* exact beyond 2^53 */
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, xo = 0, yo = 0;
        for (int d = os.rank - 1; d >= 0; d--) {
            int64_t q = r % os.d[d];
            r /= os.d[d];
            xo += q * sx[d];
            yo += q * sy[d];
        }
        int sg;
        if (int64_both) {
            int64_t a = ((const int64_t *)x->data)[xo], b = ((const int64_t *)y->data)[yo];
            sg = a > b ? 1 : (a < b ? -1 : 0);
        } else {
            double a = ldd(x, xo), b = ldd(y, yo);
            sg = a > b ? 1 : (a < b ? -1 : (a == b ? 0 : 2));
        }
        out[i] = cmp_apply(code, sg);
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ lrn */

typedef struct {
    int64_t n;
    float k, alpha, beta;
} lrn_cfg;

/* X, Out and the attributes */
static cd_status lrn_parse(cd_op_ctx *c, cd_value **xp, cd_value **o, lrn_cfg *p) {
    cd_status s = cd_ops_need_io(c, "X", "Out", xp, o);
    if (s) return s;
    const cd_value *x = *xp;
    p->n = cd_attr_int(c->op, "n", 5);
    double k = cd_attr_float(c->op, "k", 2.0), a = cd_attr_float(c->op, "alpha", 1e-4),
           b = cd_attr_float(c->op, "beta", 0.75);
    if (p->n < 1) return cd_op_fail(c, CD_E_MODEL, "lrn n = %lld must be >= 1", (long long)p->n);
    /* k, alpha, beta: NaN/Inf as stored (Paddle-Lite computes with them) */
    const char *df = cd_attr_str(c->op, "data_format", "AnyLayout");
    if (strcmp(df, "AnyLayout") && strcmp(df, "NCHW"))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "lrn data_format '%s' is not supported (NCHW only)", df);
    const char *nr = cd_attr_str(c->op, "norm_region", "AcrossChannels");
    if (strcmp(nr, "AcrossChannels"))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "lrn norm_region '%s' is not supported (AcrossChannels only)", nr);
    if (x->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "lrn needs a 4-D NCHW input, X has rank %d", x->shape.rank);
    p->k = (float)k;
    p->alpha = (float)a;
    p->beta = (float)b;
    return CD_OK;
}

cd_status cd_more_lrn_infer(cd_op_ctx *c) {
    cd_value *x, *o;
    lrn_cfg p;
    cd_status s = lrn_parse(c, &x, &o, &p);
    if (s) return s;
    if ((s = cd_ops_need_float(c, x))) return s;
    o->shape = x->shape;
    o->dtype = x->dtype;
    cd_value *mid = cd_out(c, "MidOut", 0);
    if (mid) { /* training-only buffer: nothing reads it at inference, allocate nothing */
        memset(&mid->shape, 0, sizeof mid->shape);
        mid->shape.rank = 1;
        mid->dtype = x->dtype;
    }
    return CD_OK;
}

cd_status cd_more_lrn_run(cd_op_ctx *c) {
    cd_value *x, *o;
    lrn_cfg p;
    cd_status s = lrn_parse(c, &x, &o, &p);
    if (s) return s;
    if (!cd_shape_eq(&x->shape, &o->shape) || x->dtype != o->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    const int64_t N = x->shape.d[0], C = x->shape.d[1], HW = x->shape.d[2] * x->shape.d[3];
    const int64_t pre = (p.n - 1) / 2, total = N * C * HW;
    const cd_dtype t = x->dtype;
    const void *in = x->data;
    void *out = o->data;
    int threads = c->threads > 0 ? c->threads : 1;
    CD_PAR_FOR(total >= PAR_MIN, threads, int64_t, i, total, {
        const int64_t hw = i % HW, ch = (i / HW) % C, nb = i / (HW * C);
        int64_t lo = ch - pre, hi = lo + p.n;
        if (lo < 0) lo = 0;
        if (hi > C) hi = C;
        float sum = 0.0f;
        for (int64_t j = lo; j < hi; j++) {
            const float v = cd_ops_ldf(in, t, (nb * C + j) * HW + hw);
            sum += v * v;
        }
        stf(out, t, i, cd_ops_ldf(in, t, i) * powf(p.k + p.alpha * sum, -p.beta));
    });
    return CD_OK;
}

/* ------------------------------------------------------------------ reduce_max / reduce_mean */

typedef struct {
    int rank;
    bool red[CD_MAX_RANK]; /* reduced dims of X */
    bool keep;
} red_cfg;

/* X, Out and the attributes */
static cd_status red_parse(cd_op_ctx *c, cd_value **xp, cd_value **o, red_cfg *p) {
    cd_status s = cd_ops_need_io(c, "X", "Out", xp, o);
    if (s) return s;
    const cd_value *x = *xp;
    const int64_t *dims = NULL;
    int nd = cd_attr_ints(c->op, "dim", &dims);
    bool all = cd_attr_bool(c->op, "reduce_all", false) || nd == 0;
    p->rank = x->shape.rank;
    p->keep = cd_attr_bool(c->op, "keep_dim", false);
    for (int i = 0; i < CD_MAX_RANK; i++) p->red[i] = all;
    if (all) return CD_OK;
    for (int i = 0; i < nd; i++) {
        int64_t a = dims[i];
        if (a < -p->rank || a >= p->rank || p->rank == 0)
            return cd_op_fail(c, CD_E_MODEL, "reduce dim %lld is out of range for rank %d", (long long)a, p->rank);
        p->red[a < 0 ? a + p->rank : a] = true;
    }
    return CD_OK;
}

static void red_out_shape(const cd_shape *xs, const red_cfg *p, cd_shape *os) {
    memset(os, 0, sizeof *os);
    for (int i = 0; i < xs->rank; i++) {
        if (!p->red[i])
            os->d[os->rank++] = xs->d[i];
        else if (p->keep)
            os->d[os->rank++] = 1;
    }
    if (os->rank == 0) os->d[os->rank++] = 1;
}

/* 0 sum, 1 mean, 2 max, 3 min (the OpenCL kernel uses the same numbering), -1 none. */
int cd_more_reduce_code(const char *t) {
    static const char *names[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(t, names[i])) return i;
    return -1;
}

/* base + the offset in X of element q over dims d[0..n) (innermost first) of strides st */
static inline int64_t red_off(int64_t base, int64_t q, int n, const int64_t *d, const int64_t *st) {
    for (int k = 0; k < n; k++) {
        base += (q % d[k]) * st[k];
        q /= d[k];
    }
    return base;
}

static bool is_max(const cd_op_ctx *c) { return cd_more_reduce_code(c->op->type) >= 2; } /* max or min */

cd_status cd_more_reduce_infer(cd_op_ctx *c) {
    cd_value *x, *o;
    red_cfg p;
    cd_status s = red_parse(c, &x, &o, &p);
    if (s) return s;
    if (cd_more_reduce_code(c->op->type) < 0) return cd_op_fail(c, CD_E_INTERNAL, "not a reduce op type");
    bool ok = cd_ops_is_float(x->dtype) || (is_max(c) && (x->dtype == CD_I32 || x->dtype == CD_I64));
    if (!ok)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "element type %s is not supported (float32 or float16%s)",
                          cd_dtype_name(x->dtype), is_max(c) ? ", int32, int64" : "");
    if (cd_value_numel(x) == 0) return cd_op_fail(c, CD_E_MODEL, "reducing an empty tensor");
    red_out_shape(&x->shape, &p, &o->shape);
    o->dtype = x->dtype;
    return CD_OK;
}

cd_status cd_more_reduce_run(cd_op_ctx *c) {
    cd_value *x, *o;
    red_cfg p;
    cd_status s = red_parse(c, &x, &o, &p);
    if (s) return s;
    cd_shape os;
    red_out_shape(&x->shape, &p, &os);
    if (!cd_shape_eq(&os, &o->shape) || o->dtype != x->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    /* kept dims (outer loop) and reduced dims (inner loop) with their strides in X */
    int64_t kd[CD_MAX_RANK], ks[CD_MAX_RANK], rd[CD_MAX_RANK], rs[CD_MAX_RANK], st = 1, R = 1, M = 1;
    int nk = 0, nr = 0;
    for (int i = x->shape.rank - 1; i >= 0; i--) {
        if (p.red[i])
            rd[nr] = x->shape.d[i], rs[nr++] = st, R *= x->shape.d[i];
        else
            kd[nk] = x->shape.d[i], ks[nk++] = st, M *= x->shape.d[i];
        st *= x->shape.d[i];
    }
    /* kd/rd run innermost first */
    const int code = cd_more_reduce_code(c->op->type);
    const cd_dtype t = x->dtype;
    const void *in = x->data;
    void *out = o->data;
    int threads = c->threads > 0 ? c->threads : 1;
    CD_PAR_FOR(M * R >= PAR_MIN, threads, int64_t, m, M, {
        const int64_t base = red_off(0, m, nk, kd, ks);
        if (t == CD_I32 || t == CD_I64) {
            int64_t best = 0;
            for (int64_t r = 0; r < R; r++) {
                const int64_t off = red_off(base, r, nr, rd, rs);
                int64_t v = t == CD_I32 ? ((const int32_t *)in)[off] : ((const int64_t *)in)[off];
                if (r == 0 || (code == 2 ? v > best : v < best)) best = v;
            }
            if (t == CD_I32)
                ((int32_t *)out)[m] = (int32_t)best;
            else
                ((int64_t *)out)[m] = best;
        } else {
            float acc = 0.0f;
            for (int64_t r = 0; r < R; r++) {
                const int64_t off = red_off(base, r, nr, rd, rs);
                const float v = cd_ops_ldf(in, t, off);
                if (code < 2) acc += v;
                /* max / min: NaN propagates, like max pool */
                else if (r == 0 || (code == 2 ? v > acc : v < acc) || isnan(v))
                    acc = v;
            }
            stf(out, t, m, code == 1 ? acc / (float)R : acc);
        }
    });
    return CD_OK;
}
