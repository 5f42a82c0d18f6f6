/* Identity/placement ops (feed, fetch, io_copy, layout: docs/nb-format.md §4.5, §7.24), calib
 * (§7.22), shuffle_channel, arg_max, pad2d and pad3d.
 *
 * calib in a float reference engine (decision, §7.22): the run keeps every activation in
 * its run dtype (float32 or float16), so
 *   fp32_to_int8  = fake quantisation in float: clamp(round_half_away(x/scale), -127, 127) * scale,
 *                   output keeps the activation dtype (what the int8 kernel downstream sees);
 *   int8_to_fp32  = identity on an activation input (already dequantised values); a real
 *                   int8 tensor input (a parameter) is dequantised q * scale;
 *   fp32<->fp16   = identity (the run has one float dtype);
 *   int<->int, int<->float, bool->float = plain numeric conversion (float -> int truncates
 *                   toward zero and saturates; float targets become the run's float dtype).
 * The direction comes from the saved kernel alias "<from>_to_<to>"; without one, from the
 * input dtype and the declared dtype of the output variable. */
#include "backends/cpu/par.h"
#include "backends/cpu/int8_quant.h"
#include "engine/ops.h"
#include "util/fp16.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef _Float16 f16;
#define PAR_MIN 32768

static int nthreads(const cd_op_ctx *c) { return c->threads > 0 ? c->threads : 1; }

/* ------------------------------------------------------------------ identity ops */

/* Input slot of an identity op: feed/fetch/dropout use X, the placement ops use Input. */
static cd_value *ident_in(cd_op_ctx *c) {
    cd_value *v = cd_in(c, "Input", 0);
    return v ? v : cd_in(c, "X", 0);
}

cd_status cd_basic_identity_infer(cd_op_ctx *c) {
    if (cd_op_in_slot(c->op, "InputArray"))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "the tensor-array variant (InputArray/OutArray) is not supported");
    cd_value *o = cd_out(c, "Out", 0);
    if (!o) return cd_op_fail(c, CD_E_MODEL, "output Out is not connected");
    if (!strcmp(c->op->type, "feed")) {
        /* The engine writes model inputs into feed's Out directly (§4.4): keep its shape. */
        cd_value *x = cd_in(c, "X", 0);
        if (x && x != o && x->shape.rank > 0 && o->shape.rank == 0) {
            o->shape = x->shape;
            o->dtype = x->dtype;
        }
        return CD_OK;
    }
    cd_value *x = ident_in(c);
    if (!x)
        return cd_op_fail(c, CD_E_MODEL, "required input %s is not connected",
                          cd_op_in_slot(c->op, "X") ? "X" : "Input");
    o->shape = x->shape;
    o->dtype = x->dtype;
    return CD_OK;
}

cd_status cd_basic_identity_run(cd_op_ctx *c) {
    cd_value *o = cd_out(c, "Out", 0);
    cd_value *x = strcmp(c->op->type, "feed") ? ident_in(c) : cd_in(c, "X", 0);
    if (!o) return cd_op_fail(c, CD_E_MODEL, "output Out is not connected");
    if (!x || x == o || x->data == o->data || !x->data) return CD_OK; /* feed: engine filled Out */
    if (x->dtype != o->dtype || cd_value_numel(x) != cd_value_numel(o))
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    memcpy(o->data, x->data, (size_t)cd_value_numel(x) * cd_dtype_size(x->dtype));
    return CD_OK;
}

/* ------------------------------------------------------------------ calib */

typedef enum { CAL_FAKEQ, CAL_DEQ, CAL_CONVERT } cal_kind;

static int dtype_from_alias_word(const char *w, size_t n) {
    static const struct {
        const char *s;
        cd_dtype t;
    } m[] = {
        {"fp32", CD_F32},  {"fp16", CD_F16},  {"int8", CD_I8},   {"int32", CD_I32}, {"int64", CD_I64},
        {"bool", CD_BOOL}, {"float", CD_F32}, {"int16", CD_I16}, {"uint8", CD_U8},  {"fp64", CD_F64},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (strlen(m[i].s) == n && !strncmp(w, m[i].s, n)) return (int)m[i].t;
    return -1;
}

static bool is_float(cd_dtype t) { return t == CD_F32 || t == CD_F16 || t == CD_F64; }

/* Decides kind, output dtype and scale. */
static cd_status calib_config(cd_op_ctx *c, const cd_value *x, cal_kind *kind, cd_dtype *odt, float *scale) {
    int from = -1, to = -1;
    const char *al = c->op->kernel.present ? c->op->kernel.alias : "";
    const char *us = strstr(al, "_to_");
    if (us) {
        from = dtype_from_alias_word(al, (size_t)(us - al));
        to = dtype_from_alias_word(us + 4, strlen(us + 4));
    }
    if (from < 0 || to < 0) { /* no usable alias: input dtype -> declared output dtype */
        int oid = cd_op_out(c->op, "Out", 0);
        from = (int)x->dtype;
        to = oid >= 0 ? (int)c->g->tensors[oid].dtype : (int)x->dtype;
    }
    double s = cd_attr_float(c->op, "scale", 1.0);
    *scale = (float)s;
    /* Any scale value is accepted: Paddle-Lite's calib reads it without a check (calib_op.cc)
     * and its kernels only multiply by it or by 1/scale (see cd_basic_calib_run). */
    if (to == CD_I8 && is_float((cd_dtype)from)) {
        if (!is_float(x->dtype))
            return cd_op_fail(c, CD_E_MODEL, "calib %s expects a float input, got %s", al, cd_dtype_name(x->dtype));
        *kind = CAL_FAKEQ;
        *odt = x->dtype;
        return CD_OK;
    }
    if (from == CD_I8 && is_float((cd_dtype)to)) {
        *kind = x->dtype == CD_I8 ? CAL_DEQ : CAL_CONVERT;
        *odt = cd_act_dtype(c);
        return CD_OK;
    }
    *kind = CAL_CONVERT;
    *odt = is_float((cd_dtype)to) ? cd_act_dtype(c) : (cd_dtype)to;
    if (!cd_dtype_size(*odt) || *odt == CD_I8)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "calib conversion '%s' to %s is not supported", al, cd_dtype_name(*odt));
    return CD_OK;
}

cd_status cd_basic_calib_infer(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "Input", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input Input or output Out is not connected");
    cal_kind k;
    cd_dtype odt;
    float s;
    cd_status st = calib_config(c, x, &k, &odt, &s);
    if (st) return st;
    o->shape = x->shape;
    o->dtype = odt;
    return CD_OK;
}

/* round half away from zero, as the int8 kernels quantise (ops_basic_misc_fakeq_tmpl.h) */
#define FQ_T float
#define FQ_NAME fakeq_f32
#include "ops_basic_misc_fakeq_tmpl.h"
#define FQ_T f16
#define FQ_NAME fakeq_f16
#include "ops_basic_misc_fakeq_tmpl.h"

cd_status cd_basic_calib_run(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "Input", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input Input or output Out is not connected");
    cal_kind k;
    cd_dtype odt;
    float s;
    cd_status st = calib_config(c, x, &k, &odt, &s);
    if (st) return st;
    int64_t n = cd_value_numel(x);
    if (odt != o->dtype || n != cd_value_numel(o))
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    if (n == 0) return CD_OK;
    if (!x->data || !o->data) return cd_op_fail(c, CD_E_INTERNAL, "input or output data is missing");
    if (k == CAL_FAKEQ && c->no_quant) { /* the unquantized model: values pass unchanged */
        memcpy(o->data, x->data, o->nbytes < x->nbytes ? o->nbytes : x->nbytes);
        return CD_OK;
    }
    if (k == CAL_FAKEQ && !(s > 0.0f && isfinite(s))) {
        /* A scale of 0, a negative or a non-finite one: Paddle-Lite's fp32_to_int8 multiplies by
         * 1/scale and converts (int8_quant.h); the int8 value then reads back as q * scale. */
        float inv = 1.0f / s;
        for (int64_t i = 0; i < n; i++)
            cd_value_set(o, i, (double)((float)cd_q8_round((float)cd_value_get(x, i) * inv) * s));
        return CD_OK;
    }
    if (k == CAL_FAKEQ) {
        if (x->dtype == CD_F32)
            fakeq_f32(x->data, o->data, n, s, nthreads(c));
        else if (x->dtype == CD_F16)
            fakeq_f16(x->data, o->data, n, s, nthreads(c));
        else
            for (int64_t i = 0; i < n; i++) {
                double q = round(cd_value_get(x, i) / s);
                cd_value_set(o, i, (q < -127 ? -127 : q > 127 ? 127 : q) * s);
            }
        return CD_OK;
    }
    if (k == CAL_DEQ) {
        const int8_t *q = x->data;
        for (int64_t i = 0; i < n; i++) cd_value_set(o, i, (double)q[i] * s);
        return CD_OK;
    }
    if (x->dtype == o->dtype) {
        if (x->data != o->data) memcpy(o->data, x->data, (size_t)n * cd_dtype_size(x->dtype));
        return CD_OK;
    }
    /* cd_value_set truncates toward zero and saturates for integer targets */
    for (int64_t i = 0; i < n; i++) cd_value_set(o, i, cd_value_get(x, i));
    return CD_OK;
}

/* ------------------------------------------------------------------ shuffle_channel */

static cd_status nchw_input(cd_op_ctx *c, cd_value **x, cd_value **o) {
    *x = cd_in(c, "X", 0);
    *o = cd_out(c, "Out", 0);
    if (!*x || !*o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    if ((*x)->shape.rank != 4) {
        char b[160];
        return cd_op_fail(c, CD_E_MODEL, "X must be 4-D NCHW, got %s", cd_shape_str(&(*x)->shape, b, sizeof b));
    }
    return CD_OK;
}

cd_status cd_basic_shuffle_infer(cd_op_ctx *c) {
    cd_value *x, *o;
    cd_status s = nchw_input(c, &x, &o);
    if (s) return s;
    int64_t g = cd_attr_int(c->op, "group", 1);
    if (g <= 0 || x->shape.d[1] % g)
        return cd_op_fail(c, CD_E_MODEL, "group %lld must be > 0 and divide the %lld channels", (long long)g,
                          (long long)x->shape.d[1]);
    o->shape = x->shape;
    o->dtype = x->dtype;
    return CD_OK;
}

/* Paddle: view channels as [group, C/group], transpose to [C/group, group]:
 * out channel j*group + i = in channel i*(C/group) + j. Copies whole planes, any dtype. */
cd_status cd_basic_shuffle_run(cd_op_ctx *c) {
    cd_value *x, *o;
    cd_status s = nchw_input(c, &x, &o);
    if (s) return s;
    int64_t g = cd_attr_int(c->op, "group", 1), N = x->shape.d[0], C = x->shape.d[1];
    if (g <= 0 || C % g)
        return cd_op_fail(c, CD_E_MODEL, "group %lld does not divide %lld channels", (long long)g, (long long)C);
    size_t plane = (size_t)(x->shape.d[2] * x->shape.d[3]) * cd_dtype_size(x->dtype);
    int64_t cpg = C / g;
    const char *in = x->data;
    char *out = o->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < g; i++)
            for (int64_t j = 0; j < cpg; j++)
                memcpy(out + (size_t)(n * C + j * g + i) * plane, in + (size_t)(n * C + i * cpg + j) * plane, plane);
    return CD_OK;
}

/* ------------------------------------------------------------------ arg_max */

typedef struct {
    int64_t axis, outer, len, inner;
    bool flatten, keepdims;
    cd_dtype odt;
} argmax_cfg;

static cd_status argmax_config(cd_op_ctx *c, const cd_value *x, argmax_cfg *a, cd_shape *os) {
    int r = x->shape.rank;
    a->flatten = cd_attr_bool(c->op, "flatten", false);
    a->keepdims = cd_attr_bool(c->op, "keepdims", false);
    int64_t dt = cd_attr_int(c->op, "dtype", 3);
    if (dt == -1 || dt == 3)
        a->odt = CD_I64;
    else if (dt == 2)
        a->odt = CD_I32;
    else
        return cd_op_fail(c, CD_E_MODEL, "dtype %lld is not 2 (int32), 3 (int64) or -1", (long long)dt);
    if (x->dtype != CD_F32 && x->dtype != CD_F16 && x->dtype != CD_I32 && x->dtype != CD_I64)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "element type %s is not supported", cd_dtype_name(x->dtype));
    int64_t numel = cd_value_numel(x);
    if (a->flatten) {
        a->outer = 1;
        a->len = numel;
        a->inner = 1;
        a->axis = 0;
        os->rank = 1;
        os->d[0] = 1;
        if (a->keepdims) {
            os->rank = r > 0 ? r : 1;
            for (int i = 0; i < os->rank; i++) os->d[i] = 1;
        }
    } else {
        if (!cd_op_attr(c->op, "axis")) return cd_op_fail(c, CD_E_MODEL, "required INT attribute 'axis' is missing");
        int64_t ax = cd_attr_int(c->op, "axis", 0);
        if (ax < -r || ax >= r || r == 0)
            return cd_op_fail(c, CD_E_MODEL, "axis %lld is out of range for rank %d", (long long)ax, r);
        if (ax < 0) ax += r;
        a->axis = ax;
        a->outer = 1;
        a->inner = 1;
        a->len = x->shape.d[ax];
        for (int i = 0; i < ax; i++) a->outer *= x->shape.d[i];
        for (int i = (int)ax + 1; i < r; i++) a->inner *= x->shape.d[i];
        os->rank = 0;
        for (int i = 0; i < r; i++) {
            if (i == ax && !a->keepdims) continue;
            os->d[os->rank++] = i == ax ? 1 : x->shape.d[i];
        }
        if (os->rank == 0) {
            os->rank = 1;
            os->d[0] = 1;
        }
    }
    if (a->len <= 0) return cd_op_fail(c, CD_E_MODEL, "arg_max over an empty axis");
    return CD_OK;
}

cd_status cd_basic_argmax_infer(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    argmax_cfg a;
    cd_shape os;
    cd_status s = argmax_config(c, x, &a, &os);
    if (s) return s;
    o->shape = os;
    o->dtype = a.odt;
    return CD_OK;
}

/* First index of the maximum (ties -> lowest index); NaN never wins (ops_basic_misc_argmax_tmpl.h). */
#define AM_T float
#define AM_NAME argmax_f32
#define AM_ISNAN(v) ((v) != (v))
#include "ops_basic_misc_argmax_tmpl.h"
#define AM_T f16
#define AM_NAME argmax_f16
#define AM_ISNAN(v) ((v) != (v))
#include "ops_basic_misc_argmax_tmpl.h"
#define AM_T int32_t
#define AM_NAME argmax_i32
#define AM_ISNAN(v) 0
#include "ops_basic_misc_argmax_tmpl.h"
#define AM_T int64_t
#define AM_NAME argmax_i64
#define AM_ISNAN(v) 0
#include "ops_basic_misc_argmax_tmpl.h"

cd_status cd_basic_argmax_run(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    argmax_cfg a;
    cd_shape os;
    cd_status s = argmax_config(c, x, &a, &os);
    if (s) return s;
    if (o->dtype != a.odt || cd_value_numel(o) != a.outer * a.inner)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    switch (x->dtype) {
    case CD_F32: argmax_f32(x->data, &a, o); break;
    case CD_F16: argmax_f16(x->data, &a, o); break;
    case CD_I32: argmax_i32(x->data, &a, o); break;
    default: argmax_i64(x->data, &a, o); break;
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ pad2d / pad3d */

enum { PAD_CONST, PAD_REFLECT, PAD_EDGE, PAD_CIRC };

typedef struct {
    int rank, mode;
    int64_t before[CD_MAX_RANK], after[CD_MAX_RANK];
    double value;
} pad_cfg;

/* Reads paddings from the Paddings input (when connected and known) or the attribute, and
 * maps them to per-dim (before, after) of the input. */
static cd_status pad_config(cd_op_ctx *c, const cd_value *x, pad_cfg *p, cd_shape *os) {
    bool is3 = !strcmp(c->op->type, "pad3d");
    int want_rank = is3 ? 5 : 4, npad = is3 ? 6 : 4;
    char b[160];
    memset(p, 0, sizeof *p);
    if (x->shape.rank != want_rank)
        return cd_op_fail(c, CD_E_MODEL, "X must be %d-D, got %s", want_rank, cd_shape_str(&x->shape, b, sizeof b));
    p->rank = want_rank;
    int64_t pads[6];
    cd_value *pt = cd_in(c, "Paddings", 0);
    if (pt) {
        if (cd_value_numel(pt) != npad || (pt->dtype != CD_I32 && pt->dtype != CD_I64))
            return cd_op_fail(c, CD_E_MODEL, "Paddings input must be an int32/int64 tensor of %d values", npad);
        if (!pt->data)
            return cd_op_fail(c, CD_E_UNSUPPORTED,
                              "Paddings input is computed at run time; its value must be known "
                              "when shapes are planned");
        for (int i = 0; i < npad; i++) pads[i] = (int64_t)cd_value_get(pt, i);
    } else {
        const int64_t *pv;
        int n = cd_attr_ints(c->op, "paddings", &pv);
        if (n != npad)
            return cd_op_fail(c, CD_E_MODEL, "INTS attribute 'paddings' must hold %d values, it holds %d", npad, n);
        for (int i = 0; i < npad; i++) pads[i] = pv[i];
    }
    for (int i = 0; i < npad; i++)
        if (pads[i] < 0 || pads[i] > (1 << 24))
            return cd_op_fail(c, CD_E_MODEL, "padding %d = %lld must be in [0, 2^24]", i, (long long)pads[i]);
    const char *m = cd_attr_str(c->op, "mode", "constant");
    if (!strcmp(m, "constant"))
        p->mode = PAD_CONST;
    else if (!strcmp(m, "reflect"))
        p->mode = PAD_REFLECT;
    else if (!strcmp(m, "edge") || !strcmp(m, "replicate"))
        p->mode = PAD_EDGE;
    else if (is3 && !strcmp(m, "circular"))
        p->mode = PAD_CIRC;
    else
        return cd_op_fail(c, CD_E_MODEL, "mode '%s' is not constant, reflect, %s", m,
                          is3 ? "replicate or circular" : "or edge");
    p->value = cd_attr_float(c->op, is3 ? "value" : "pad_value", 0.0);
    const char *df = cd_attr_str(c->op, "data_format", is3 ? "NCDHW" : "NCHW");
    bool last = !strcmp(df, is3 ? "NDHWC" : "NHWC");
    if (!last && strcmp(df, is3 ? "NCDHW" : "NCHW"))
        return cd_op_fail(c, CD_E_MODEL, "data_format '%s' is not supported", df);
    int sp0 = last ? 1 : 2; /* first spatial dim */
    if (is3) {              /* [left, right, top, bottom, front, back] over (D, H, W) */
        p->before[sp0] = pads[4];
        p->after[sp0] = pads[5];
        p->before[sp0 + 1] = pads[2];
        p->after[sp0 + 1] = pads[3];
        p->before[sp0 + 2] = pads[0];
        p->after[sp0 + 2] = pads[1];
    } else { /* [top, bottom, left, right] over (H, W) */
        p->before[sp0] = pads[0];
        p->after[sp0] = pads[1];
        p->before[sp0 + 1] = pads[2];
        p->after[sp0 + 1] = pads[3];
    }
    *os = x->shape;
    for (int i = 0; i < p->rank; i++) {
        int64_t n = x->shape.d[i];
        if ((p->before[i] || p->after[i]) && p->mode != PAD_CONST) {
            if (n <= 0) return cd_op_fail(c, CD_E_MODEL, "cannot pad an empty dim %d in mode %s", i, m);
            if (p->mode == PAD_REFLECT && (p->before[i] >= n || p->after[i] >= n))
                return cd_op_fail(c, CD_E_MODEL, "reflect padding (%lld, %lld) must be smaller than dim %d = %lld",
                                  (long long)p->before[i], (long long)p->after[i], i, (long long)n);
        }
        os->d[i] = n + p->before[i] + p->after[i];
    }
    if (x->dtype != CD_F32 && x->dtype != CD_F16 && x->dtype != CD_I32 && x->dtype != CD_I64)
        return cd_op_fail(c, CD_E_UNSUPPORTED, "element type %s is not supported", cd_dtype_name(x->dtype));
    return CD_OK;
}

cd_status cd_basic_pad_infer(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    pad_cfg p;
    cd_shape os;
    cd_status s = pad_config(c, x, &p, &os);
    if (s) return s;
    o->shape = os;
    o->dtype = x->dtype;
    return CD_OK;
}

/* Source index for output coordinate `o` of a dim of size n; -1 = padding value. */
static inline int64_t pad_src(int64_t o, int64_t before, int64_t n, int mode) {
    int64_t i = o - before;
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case PAD_REFLECT: return i < 0 ? -i : 2 * (n - 1) - i;
    case PAD_EDGE: return i < 0 ? 0 : n - 1;
    case PAD_CIRC: return ((i % n) + n) % n;
    default: return -1;
    }
}

cd_status cd_basic_pad_run(cd_op_ctx *c) {
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (!x || !o) return cd_op_fail(c, CD_E_MODEL, "input X or output Out is not connected");
    pad_cfg p;
    cd_shape os;
    cd_status s = pad_config(c, x, &p, &os);
    if (s) return s;
    if (!cd_shape_eq(&os, &o->shape) || o->dtype != x->dtype)
        return cd_op_fail(c, CD_E_INTERNAL, "output changed after shape inference");
    int64_t total = cd_value_numel(o);
    if (total == 0) return CD_OK;
    const size_t es = cd_dtype_size(x->dtype);
    unsigned char fill[8] = {0};
    { /* the pad value in the tensor's dtype */
        cd_value tmp = {.dtype = x->dtype, .data = fill};
        tmp.shape.rank = 1;
        tmp.shape.d[0] = 1;
        cd_value_set(&tmp, 0, p.value);
    }
    const int r = p.rank;
    const int64_t W = os.d[r - 1], rows = total / W, inW = x->shape.d[r - 1];
    int64_t istride[CD_MAX_RANK];
    istride[r - 1] = 1;
    for (int i = r - 2; i >= 0; i--) istride[i] = istride[i + 1] * x->shape.d[i + 1];
    const unsigned char *in = x->data;
    unsigned char *out = o->data;
    const int th = nthreads(c);
    CD_PAR_FOR(total >= PAR_MIN, th, int64_t, row, rows, {
        int64_t rem = row, off = 0;
        bool padrow = false;
        for (int d = r - 2; d >= 0; d--) {
            int64_t oc = rem % os.d[d];
            rem /= os.d[d];
            int64_t ic = pad_src(oc, p.before[d], x->shape.d[d], p.mode);
            if (ic < 0)
                padrow = true;
            else
                off += ic * istride[d];
        }
        unsigned char *dst = out + (size_t)(row * W) * es;
        if (padrow) {
            for (int64_t j = 0; j < W; j++) memcpy(dst + (size_t)j * es, fill, es);
            continue;
        }
        const unsigned char *src = in + (size_t)off * es;
        const int64_t bw = p.before[r - 1];
        for (int64_t j = 0; j < W; j++) {
            int64_t ic = (j >= bw && j < bw + inW) ? j - bw : pad_src(j, bw, inW, p.mode);
            memcpy(dst + (size_t)j * es, ic < 0 ? fill : src + (size_t)ic * es, es);
        }
    });
    return CD_OK;
}
