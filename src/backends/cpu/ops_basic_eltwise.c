/* Binary elementwise ops (docs/nb-format.md §7.4) with Paddle's legacy `axis` broadcasting (§7.0):
 * elementwise_add|sub|mul|div|max|min|pow|floordiv|mod and
 * fusion_elementwise_add|sub|mul|div|max|min_activation, plus elementwise_mul's OpenCL
 * `fuse_scale` affine + activation stage.
 *
 * Semantic choices (the spec leaves them open):
 *  - floordiv and mod follow the Paddle framework (floor division; the remainder takes the
 *    divisor's sign), not Lite ARM's truncation: that is what the trained model means, and
 *    both agree for non-negative operands.
 *  - integer division/floordiv/mod by zero fails with a message (C would trap); float
 *    division by zero gives the IEEE result.
 *  - integer pow is llrint(pow(double, double)), saturated, like Paddle's integer PowFunctor.
 *  - fp16: +,-,*,/,max,min are computed in _Float16 (each result correctly rounded to half);
 *    pow and the fused activation are computed in float on the half operands and rounded once.
 *
 * Speed: the broadcast is reduced to a few merged dims whose innermost dim has x/y strides
 * of 0 or 1, so same-shape, per-channel and trailing broadcasts run as flat inner loops. */
#include "backends/cpu/par.h"
#include "backends/cpu/ops_util.h"
#include "engine/op_list.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef _Float16 f16;

/* ------------------------------------------------------------------ broadcasting */

typedef struct {
    int nd; /* merged dims, nd >= 1 */
    int64_t dim[CD_MAX_RANK];
    int64_t sx[CD_MAX_RANK], sy[CD_MAX_RANK]; /* element strides, 0 = broadcast */
    int64_t numel;
} bcast;

/* Computes the output shape of X op Y per §7.0 and the merged iteration plan.
 * Returns 0, or -1 with msg filled. */
static int bcast_build(const cd_shape *x, const cd_shape *y, int64_t axis, cd_shape *out, bcast *b, char *msg,
                       size_t msz) {
    char bx[160], by[160];
    int r = x->rank >= y->rank ? x->rank : y->rank, lo = x->rank + y->rank - r;
    int64_t ax[CD_MAX_RANK], ay[CD_MAX_RANK]; /* aligned dims */
    memset(out, 0, sizeof *out);              /* dims past the rank defined too: shapes are copied whole */
    if (cd_bcast_align(x, y, axis, ax, ay)) {
        snprintf(msg, msz,
                 "axis %lld cannot place the rank-%d operand inside the rank-%d one (X %s, Y %s): "
                 "axis must lie in [0, %d] or be -1",
                 (long long)axis, lo, r, cd_shape_str(x, bx, sizeof bx), cd_shape_str(y, by, sizeof by), r - lo);
        return -1;
    }
    out->rank = r;
    for (int i = 0; i < r; i++) {
        if (ax[i] < 0 || ay[i] < 0) {
            snprintf(msg, msz, "negative dimension in X %s or Y %s", cd_shape_str(x, bx, sizeof bx),
                     cd_shape_str(y, by, sizeof by));
            return -1;
        }
        if (ax[i] != ay[i] && ax[i] != 1 && ay[i] != 1) {
            snprintf(msg, msz,
                     "shapes X %s and Y %s do not broadcast with axis %lld: aligned dim %d is %lld vs %lld "
                     "(each pair must be equal or one of them 1)",
                     cd_shape_str(x, bx, sizeof bx), cd_shape_str(y, by, sizeof by), (long long)axis, i,
                     (long long)ax[i], (long long)ay[i]);
            return -1;
        }
        out->d[i] = ax[i] == 1 ? ay[i] : ax[i];
    }
    if (!b) return 0;
    /* strides of the aligned operands, 0 where broadcast */
    int64_t sx[CD_MAX_RANK], sy[CD_MAX_RANK], px = 1, py = 1;
    for (int i = r - 1; i >= 0; i--) {
        sx[i] = (ax[i] == 1 && out->d[i] != 1) ? 0 : px;
        sy[i] = (ay[i] == 1 && out->d[i] != 1) ? 0 : py;
        px *= ax[i];
        py *= ay[i];
    }
    /* merge: drop size-1 dims, fuse neighbours that are jointly contiguous */
    b->nd = 0;
    b->numel = 1;
    for (int i = 0; i < r; i++) {
        b->numel *= out->d[i];
        if (out->d[i] == 1) continue;
        int k = b->nd;
        if (k > 0 && b->sx[k - 1] == sx[i] * out->d[i] && b->sy[k - 1] == sy[i] * out->d[i]) {
            b->dim[k - 1] *= out->d[i];
            b->sx[k - 1] = sx[i];
            b->sy[k - 1] = sy[i];
        } else {
            b->dim[k] = out->d[i];
            b->sx[k] = sx[i];
            b->sy[k] = sy[i];
            b->nd++;
        }
    }
    if (b->nd == 0) {
        b->nd = 1;
        b->dim[0] = 1;
        b->sx[0] = b->sy[0] = 1;
    }
    return 0;
}

/* Offsets of outer row `row` (all dims but the last). */
static inline void bcast_row(const bcast *b, int64_t row, int64_t *ox, int64_t *oy) {
    int64_t x = 0, y = 0;
    for (int d = b->nd - 2; d >= 0; d--) {
        int64_t i = row % b->dim[d];
        row /= b->dim[d];
        x += i * b->sx[d];
        y += i * b->sy[d];
    }
    *ox = x;
    *oy = y;
}

/* ------------------------------------------------------------------ kernels */

#define PAR_MIN CD_PAR_MIN_CHEAP /* below this many elements threads cost more than they save (par.h) */

/* float helpers: NaN-propagating max/min like the frameworks' a > b ? a : b */
#define FMAX(x, y) ((x) > (y) ? (x) : (y))
#define FMIN(x, y) ((x) < (y) ? (x) : (y))

static inline float fl_floordiv(float x, float y) { return floorf(x / y); }
static inline float fl_mod(float x, float y) {
    float r = fmodf(x, y);
    if (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) r += y;
    return r;
}
static inline f16 h_floordiv(f16 x, f16 y) {
    f16 q = x / y;
    return (f16)floorf((float)q);
}
static inline f16 h_mod(f16 x, f16 y) {
    /* fmod is exact, so computing it in float on half operands gives the exact half result */
    float r = fmodf((float)x, (float)y);
    if (r != 0.0f && ((r < 0.0f) != ((float)y < 0.0f))) r += (float)y;
    return (f16)r;
}
/* integer helpers (divisor checked non-zero beforehand) */
/* x / -1 is computed as a wrapping negation: MIN / -1 traps on x86. */
#define IDIV(T, x, y) ((y) == -1 ? (T)(0 - (uint64_t)(x)) : (T)((x) / (y)))
static inline int64_t i64_floordiv(int64_t x, int64_t y) {
    if (y == -1) return (int64_t)(0 - (uint64_t)x); /* INT64_MIN / -1 wraps instead of trapping */
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
    return q;
}
static inline int64_t i64_mod(int64_t x, int64_t y) {
    if (y == -1) return 0;
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}
static inline int64_t i64_pow(int64_t x, int64_t y, int64_t lo, int64_t hi) {
    double v = pow((double)x, (double)y);
    if (isnan(v)) return 0;
    if (v <= (double)lo) return lo;
    if (v >= (double)hi) return hi;
    return (int64_t)llrint(v);
}

/* One kernel per (type, op): ops_basic_eltwise_tmpl.h with BIN_T, BIN_NAME and BIN_EXPR defined. */
#define BIN_T float
#define BIN_NAME add_f32
#define BIN_EXPR x + y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME sub_f32
#define BIN_EXPR x - y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME mul_f32
#define BIN_EXPR x *y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME div_f32
#define BIN_EXPR x / y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME max_f32
#define BIN_EXPR FMAX(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME min_f32
#define BIN_EXPR FMIN(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME pow_f32
#define BIN_EXPR powf(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME floordiv_f32
#define BIN_EXPR fl_floordiv(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T float
#define BIN_NAME mod_f32
#define BIN_EXPR fl_mod(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME add_f16
#define BIN_EXPR x + y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME sub_f16
#define BIN_EXPR x - y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME mul_f16
#define BIN_EXPR x *y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME div_f16
#define BIN_EXPR x / y
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME max_f16
#define BIN_EXPR FMAX(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME min_f16
#define BIN_EXPR FMIN(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME pow_f16
#define BIN_EXPR (f16) powf((float)x, (float)y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME floordiv_f16
#define BIN_EXPR h_floordiv(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T f16
#define BIN_NAME mod_f16
#define BIN_EXPR h_mod(x, y)
#include "ops_basic_eltwise_tmpl.h"
/* Integer add/sub/mul wrap (computed unsigned: signed overflow is UB in C). */
#define BIN_T int32_t
#define BIN_NAME add_i32
#define BIN_EXPR (int32_t)((uint32_t)x + (uint32_t)y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME sub_i32
#define BIN_EXPR (int32_t)((uint32_t)x - (uint32_t)y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME mul_i32
#define BIN_EXPR (int32_t)((uint32_t)x * (uint32_t)y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME div_i32
#define BIN_EXPR IDIV(int32_t, x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME max_i32
#define BIN_EXPR FMAX(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME min_i32
#define BIN_EXPR FMIN(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME pow_i32
#define BIN_EXPR (int32_t) i64_pow(x, y, INT32_MIN, INT32_MAX)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME floordiv_i32
#define BIN_EXPR (int32_t) i64_floordiv(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int32_t
#define BIN_NAME mod_i32
#define BIN_EXPR (int32_t) i64_mod(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME add_i64
#define BIN_EXPR (int64_t)((uint64_t)x + (uint64_t)y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME sub_i64
#define BIN_EXPR (int64_t)((uint64_t)x - (uint64_t)y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME mul_i64
#define BIN_EXPR (int64_t)((uint64_t)x * (uint64_t)y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME div_i64
#define BIN_EXPR IDIV(int64_t, x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME max_i64
#define BIN_EXPR FMAX(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME min_i64
#define BIN_EXPR FMIN(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME pow_i64
#define BIN_EXPR i64_pow(x, y, INT64_MIN, INT64_MAX)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME floordiv_i64
#define BIN_EXPR i64_floordiv(x, y)
#include "ops_basic_eltwise_tmpl.h"
#define BIN_T int64_t
#define BIN_NAME mod_i64
#define BIN_EXPR i64_mod(x, y)
#include "ops_basic_eltwise_tmpl.h"

/* ------------------------------------------------------------------ op logic */

/* The op codes are the op table's kinds (engine/op_list.def: elementwise_<op> and
 * fusion_elementwise_<op>_activation share one), as eltwise.cl's binary kernel reads them. */
enum {
    OP_ADD = CD_K_elementwise_add,
    OP_SUB = CD_K_elementwise_sub,
    OP_MUL = CD_K_elementwise_mul,
    OP_DIV = CD_K_elementwise_div,
    OP_MAX = CD_K_elementwise_max,
    OP_MIN = CD_K_elementwise_min,
    OP_POW = CD_K_elementwise_pow,
    OP_FLOORDIV = CD_K_elementwise_floordiv,
    OP_MOD = CD_K_elementwise_mod,
    OP_COUNT = 9
};
_Static_assert(OP_ADD == 0 && OP_SUB == 1 && OP_MUL == 2 && OP_DIV == 3 && OP_MAX == 4 && OP_MIN == 5 && OP_POW == 6 &&
                   OP_FLOORDIV == 7 && OP_MOD == 8,
               "op_list.def: the elementwise kinds index the kernel tables below (0 .. OP_COUNT - 1)");

typedef void (*bin_fn)(const bcast *, const void *, const void *, void *, int);
#define K(f) ((bin_fn)(void (*)(void))(f))
/* [op][0 f32, 1 f16, 2 i32, 3 i64] */
static const bin_fn k_kern[OP_COUNT][4] = {
    {K(add_f32), K(add_f16), K(add_i32), K(add_i64)},
    {K(sub_f32), K(sub_f16), K(sub_i32), K(sub_i64)},
    {K(mul_f32), K(mul_f16), K(mul_i32), K(mul_i64)},
    {K(div_f32), K(div_f16), K(div_i32), K(div_i64)},
    {K(max_f32), K(max_f16), K(max_i32), K(max_i64)},
    {K(min_f32), K(min_f16), K(min_i32), K(min_i64)},
    {K(pow_f32), K(pow_f16), K(pow_i32), K(pow_i64)},
    {K(floordiv_f32), K(floordiv_f16), K(floordiv_i32), K(floordiv_i64)},
    {K(mod_f32), K(mod_f16), K(mod_i32), K(mod_i64)},
};

static int dtype_slot(cd_dtype t) {
    switch (t) {
    case CD_F32: return 0;
    case CD_F16: return 1;
    case CD_I32: return 2;
    case CD_I64: return 3;
    default: return -1;
    }
}

typedef struct {
    int op;
    bool fused;      /* fusion_elementwise_*_activation */
    bool fuse_scale; /* elementwise_mul OpenCL fusion: scale*(x*y)+bias then act */
    float scale, bias;
    cd_act act;
    int64_t axis;
} elt_cfg;

static cd_status elt_config(cd_op_ctx *c, elt_cfg *e) {
    memset(e, 0, sizeof *e);
    e->op = -1;
    const cd_op_info *oi = cd_op_info_find(c->op->type);
    e->fused = !strncmp(c->op->type, "fusion_elementwise_", 19);
    if (oi && oi->kind >= 0 && oi->kind < OP_COUNT && (e->fused || !strncmp(c->op->type, "elementwise_", 12)))
        e->op = oi->kind;
    if (e->op < 0) return cd_op_fail(c, CD_E_INTERNAL, "not an elementwise op type");
    const cd_attr *ax = cd_op_attr(c->op, "axis");
    if (!ax)
        return cd_op_fail(c, CD_E_MODEL, "required INT attribute 'axis' is missing (use -1 for trailing alignment)");
    e->axis = cd_attr_int(c->op, "axis", -1);
    cd_status s;
    e->scale = 1.0f;
    if (e->fused) {
        const char *t = cd_attr_str(c->op, "act_type", "");
        if (!t[0])
            return cd_op_fail(c, CD_E_MODEL,
                              "STRING attribute 'act_type' is missing or empty; "
                              "a fusion_elementwise_*_activation op needs its activation");
        if ((s = cd_act_from_op(c, "act_type", &e->act))) return s;
    } else if (e->op == OP_MUL && cd_attr_bool(c->op, "fuse_scale", false)) {
        e->fuse_scale = true;
        double sc = cd_attr_float(c->op, "scale", 1.0), bi = cd_attr_float(c->op, "bias", 0.0); /* as stored */
        e->scale = (float)sc;
        e->bias = (float)bi;
        if ((s = cd_act_from_op(c, "activation_type", &e->act))) return s;
    }
    if (e->act.kind == CD_ACT_PRELU)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "prelu cannot be fused into an elementwise op (no alpha tensor)");
    return CD_OK;
}

cd_status cd_basic_eltwise_infer(cd_op_ctx *c) {
    elt_cfg e;
    cd_status s = elt_config(c, &e);
    if (s) return s;
    cd_value *x = cd_in_req(c, "X", 0);
    if (!x) return CD_E_MODEL;
    cd_value *y = cd_in_req(c, "Y", 0);
    if (!y) return CD_E_MODEL;
    cd_value *o = cd_out(c, "Out", 0);
    if (!o) return cd_op_fail(c, CD_E_MODEL, "output Out is not connected");
    if (x->dtype != y->dtype)
        return cd_op_fail(c, CD_E_MODEL, "X is %s but Y is %s; both operands must have the same element type",
                          cd_dtype_name(x->dtype), cd_dtype_name(y->dtype));
    int slot = dtype_slot(x->dtype);
    if (slot < 0)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "element type %s is not supported (float32, float16, int32, int64)",
                          cd_dtype_name(x->dtype));
    if (slot >= 2 && (e.act.kind != CD_ACT_NONE || e.fuse_scale))
        return cd_op_fail(c, CD_E_MODEL, "a fused activation/scale on %s operands is not meaningful",
                          cd_dtype_name(x->dtype));
    char msg[768];
    cd_shape out;
    if (bcast_build(&x->shape, &y->shape, e.axis, &out, NULL, msg, sizeof msg))
        return cd_op_fail(c, CD_E_MODEL, "%s", msg);
    o->shape = out;
    o->dtype = x->dtype;
    return CD_OK;
}

/* gelu without cancellation (see ops_basic_act.c): erfc / sigmoid forms. */
static inline float gelu_f(float x, bool approx) {
    if (approx) {
        const float y = 0.7978845608028654f * (x + 0.044715f * x * x * x);
        return x / (1.0f + expf(-2.0f * y));
    }
    return 0.5f * x * erfcf(-x * 0.7071067811865476f);
}

/* Fused post-stage on a float/half output: optional affine then activation, in float
 * (ops_basic_eltwise_post_tmpl.h). */
#define PS_T float
#define PS_NAME post_f32
#include "ops_basic_eltwise_post_tmpl.h"
#define PS_T f16
#define PS_NAME post_f16
#include "ops_basic_eltwise_post_tmpl.h"

static bool has_zero(const cd_value *v) {
    int64_t n = cd_value_numel(v);
    if (v->dtype == CD_I32) {
        const int32_t *p = v->data;
        for (int64_t i = 0; i < n; i++)
            if (!p[i]) return true;
    } else if (v->dtype == CD_I64) {
        const int64_t *p = v->data;
        for (int64_t i = 0; i < n; i++)
            if (!p[i]) return true;
    }
    return false;
}

cd_status cd_basic_eltwise_run(cd_op_ctx *c) {
    elt_cfg e;
    cd_status s = elt_config(c, &e);
    if (s) return s;
    cd_value *x = cd_in_req(c, "X", 0), *y = cd_in_req(c, "Y", 0), *o = cd_out(c, "Out", 0);
    if (!x || !y) return CD_E_MODEL;
    if (!o || (!o->data && cd_value_numel(o) > 0)) return cd_op_fail(c, CD_E_INTERNAL, "output Out is not allocated");
    int slot = dtype_slot(x->dtype);
    if (slot < 0 || x->dtype != y->dtype || o->dtype != x->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "operand types changed after shape inference (%s, %s -> %s)",
                          cd_dtype_name(x->dtype), cd_dtype_name(y->dtype), cd_dtype_name(o->dtype));
    char msg[768];
    cd_shape out;
    bcast b;
    if (bcast_build(&x->shape, &y->shape, e.axis, &out, &b, msg, sizeof msg))
        return cd_op_fail(c, CD_E_MODEL, "%s", msg);
    if (!cd_shape_eq(&out, &o->shape))
        return cd_op_fail(c, CD_E_INTERNAL, "output shape changed after shape inference");
    if (slot >= 2 && (e.op == OP_DIV || e.op == OP_FLOORDIV || e.op == OP_MOD) && has_zero(y))
        return cd_op_fail(c, CD_E_MODEL, "integer division by zero: Y holds a 0 (the result is undefined)");
    int th = c->threads > 0 ? c->threads : 1;
    k_kern[e.op][slot](&b, x->data, y->data, o->data, th);
    if (e.act.kind != CD_ACT_NONE || e.fuse_scale) {
        if (slot == 0)
            post_f32(o->data, b.numel, &e, th);
        else
            post_f16(o->data, b.numel, &e, th);
    }
    return CD_OK;
}

/* Multiply-accumulates: one arithmetic op per output element. */
double cd_basic_eltwise_macs(const cd_op_ctx *c) {
    int id = cd_op_out(c->op, "Out", 0);
    return id < 0 ? 0.0 : (double)cd_value_numel(&c->vals[id]);
}
