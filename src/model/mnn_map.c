/* MNN ops onto cldiff's op table (docs/mnn.md, "What cldiff checks"): the parameters of
 * Convolution, ConvolutionDepthwise, Pooling, ReLU, ReLU6, Sigmoid, TanH, UnaryOp, BinaryOp,
 * Eltwise, Concat, Softmax, Permute, Transpose, Reshape, Interp, MatMul, BatchMatMul and
 * ConvertTensor are decoded and, where their semantics are the Paddle op's, the op becomes that
 * op (cldiff's CPU checks it). Everything else, and a mapped type whose parameters fall outside
 * what the Paddle op does (quantized weights, fused activations of binary ops, coefficients),
 * stays a named op "mnn_<Type>" with its decoded parameters as the attribute mnn_params: compared
 * between engines, never checked. Field numbers: MNN's schema (CaffeOp.fbs, TensorflowOp.fbs). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/mnn_priv.h"

/* Convolution2DCommon */
enum {
    CC_PADX,
    CC_PADY,
    CC_KX,
    CC_KY,
    CC_SX,
    CC_SY,
    CC_DX,
    CC_DY,
    CC_PADMODE,
    CC_GROUP,
    CC_OUTC,
    CC_INC,
    CC_RELU,
    CC_RELU6,
    CC_PADS,
    CC_OUTPADS,
    CC_HAS_OUTSHAPE,
};
/* Convolution2D */
enum { CV_COMMON, CV_WEIGHT, CV_BIAS, CV_IDST, CV_SYMQ, CV_SPARSE, CV_EXTERNAL };
/* Pool */
enum {
    PL_PADX,
    PL_PADY,
    PL_GLOBAL,
    PL_KX,
    PL_KY,
    PL_SX,
    PL_SY,
    PL_TYPE,
    PL_PADTYPE,
    PL_DTYPE,
    PL_CEIL,
    PL_PADS,
    PL_COUNT
};
/* Interp */
enum { IP_WSCALE, IP_HSCALE, IP_OUTW, IP_OUTH, IP_RESIZE, IP_ALIGN, IP_HALFPIX, IP_CTM = 10 };

typedef struct mop {
    mnn_ctx *c;
    const mnn_op *o;
    const char *type; /* cldiff op type, or NULL: keep it named */
    char why[160];    /* why it stays named */
    char params[400]; /* decoded parameters, for inspect */
    cd_attr attrs[16];
    int n_attrs;
    /* parameters made from the op's own data: slot name, values, shape */
    struct {
        const char *slot;
        float *v;
        int64_t dims[4];
        int rank;
    } pw[2];
    int n_pw;
    const char *in_slots[3]; /* slot names of the op's inputs (NULL: the rest in "X") */
    const char *out_slot;
    int n_in_used; /* inputs bound to slots (the rest must be none) */
} mop;

static void add_int(mop *m, const char *k, int64_t v) {
    if (m->n_attrs < 16) m->attrs[m->n_attrs++] = (cd_attr){.name = cd_strdup(k), .type = CD_ATTR_INT, .i = v};
}
static void add_bool(mop *m, const char *k, bool v) {
    if (m->n_attrs < 16) m->attrs[m->n_attrs++] = (cd_attr){.name = cd_strdup(k), .type = CD_ATTR_BOOL, .i = v};
}
static void add_float(mop *m, const char *k, double v) {
    if (m->n_attrs < 16) m->attrs[m->n_attrs++] = (cd_attr){.name = cd_strdup(k), .type = CD_ATTR_FLOAT, .f = (float)v};
}
static void add_str(mop *m, const char *k, const char *v) {
    if (m->n_attrs < 16)
        m->attrs[m->n_attrs++] = (cd_attr){.name = cd_strdup(k), .type = CD_ATTR_STRING, .s = cd_strdup(v)};
}
static void add_ints(mop *m, const char *k, const int64_t *v, int n) {
    if (m->n_attrs >= 16) return;
    int64_t *c = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (c) memcpy(c, v, sizeof(int64_t) * (size_t)n);
    m->attrs[m->n_attrs++] = (cd_attr){.name = cd_strdup(k), .type = CD_ATTR_INTS, .n = c ? n : 0, .ints = c};
}
static void add_floats(mop *m, const char *k, const double *v, int n) {
    if (m->n_attrs >= 16) return;
    double *c = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (c) memcpy(c, v, sizeof(double) * (size_t)n);
    m->attrs[m->n_attrs++] = (cd_attr){.name = cd_strdup(k), .type = CD_ATTR_FLOATS, .n = c ? n : 0, .floats = c};
}

static void keep_named(mop *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void keep_named(mop *m, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
    m->type = NULL;
}

static void param_str(mop *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void param_str(mop *m, const char *fmt, ...) {
    size_t l = strlen(m->params);
    if (l + 1 >= sizeof m->params) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->params + l, sizeof m->params - l, fmt, ap);
    va_end(ap);
}

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if (x) return err->code;                                                                                       \
    } while (0)

/* An op whose output a quantization tool made int8 (mnn_ctx.qscale): MNN runs it in integers, so
 * its output carries the rounding to its scale that cldiff's float kernels do not: it stays named,
 * unless it only moves values (a layout change, reshape, transpose, concat, split, max pooling)
 * between tensors of one scale, where the int8 result is exactly the float one on the same
 * dequantized inputs. */
static void int8_stays_named(mop *m) {
    const mnn_op *o = m->o;
    float s = 0;
    for (int k = 0; k < o->n_out; k++)
        if (m->c->qscale[o->out[k]] > 0) s = m->c->qscale[o->out[k]];
    if (s <= 0) return;
    bool moves = !strcmp(m->type, "assign") || !strcmp(m->type, "transpose2") || !strcmp(m->type, "reshape2") ||
        !strcmp(m->type, "concat") || !strcmp(m->type, "split");
    for (int i = 0; i < m->n_attrs && !strcmp(m->type, "pool2d"); i++)
        if (!strcmp(m->attrs[i].name, "pooling_type") && m->attrs[i].s && !strcmp(m->attrs[i].s, "max")) moves = true;
    bool same = true;
    for (int k = 0; k < o->n_in; k++) same = same && m->c->qscale[o->in[k]] == s;
    for (int k = 0; k < o->n_out; k++) same = same && m->c->qscale[o->out[k]] == s;
    if (moves && same) {
        param_str(m, ", int8 (scale %g) values moved unchanged", s);
        return;
    }
    keep_named(m, "runs in int8 (quantized activations, output scale %g): MNN's integer arithmetic", s);
}

/* A two-input elementwise op (BinaryOp, Eltwise) as Paddle's elementwise_*: X, Y, axis -1. */
static void binary_slots(mop *m) {
    if (m->o->n_in != 2) keep_named(m, "%d inputs", m->o->n_in);
    if (!m->type) return;
    add_int(m, "axis", -1);
    m->in_slots[0] = "X";
    m->in_slots[1] = "Y";
    m->n_in_used = 2;
}

static bool main_is(const mnn_op *o, int t) { return o->has_main && o->main_type == t; }

/* Float vector field -> malloc'd copy. */
static cd_status floats(mnn_ctx *c, const cd_fb_table *t, int slot, const char *field, float **out, uint32_t *n,
                        cd_error *err) {
    size_t d;
    *out = NULL;
    TRY(cd_fb_vec(&c->fb, t, slot, field, 4, &d, n, err));
    if (!*n) return CD_OK;
    *out = malloc(4 * (size_t)*n);
    if (!*out) return cd_err(err, CD_E_NOMEM, "out of memory");
    memcpy(*out, c->fb.buf + d, 4 * (size_t)*n);
    return CD_OK;
}

/* Paddle's 4-value paddings [top, bottom, left, right] from MNN's pads (begin h, begin w, end h,
 * end w) or padY/padX. */
static cd_status paddings(mnn_ctx *c, const cd_fb_table *t, int s_pads, int s_padx, int s_pady, int64_t p[4],
                          cd_error *err) {
    int32_t *v, px, py;
    uint32_t n;
    TRY(cd_fb_i32(&c->fb, t, s_padx, 0, &px, err));
    TRY(cd_fb_i32(&c->fb, t, s_pady, 0, &py, err));
    TRY(cd_mnn_ints(c, t, s_pads, "pads", &v, &n, err));
    if (n == 4) {
        p[0] = v[0], p[1] = v[2], p[2] = v[1], p[3] = v[3];
    } else {
        p[0] = p[1] = py;
        p[2] = p[3] = px;
    }
    free(v);
    for (int i = 0; i < 4; i++)
        if (p[i] < 0 || p[i] > 65536)
            return cd_err(err, CD_E_MODEL, "padding %lld out of range (file offset %zu)", (long long)p[i],
                          c->fb.base + t->pos);
    return CD_OK;
}

static bool deconv_type(const mnn_op *o) { return o->type == 17 || o->type == 18; }

static cd_status map_conv(mop *m, cd_error *err) {
    mnn_ctx *c = m->c;
    const mnn_op *o = m->o;
    if (!main_is(o, MNN_P_CONV2D)) return CD_OK;
    cd_fb_table cm;
    bool pr;
    TRY(cd_fb_sub(&c->fb, &o->main, CV_COMMON, "common", false, &pr, &cm, err));
    if (!pr) {
        keep_named(m, "no Convolution2DCommon");
        return CD_OK;
    }
    int32_t kx, ky, sx, sy, dx, dy, grp, outc, inc;
    uint8_t pm, relu, relu6;
    TRY(cd_fb_i32(&c->fb, &cm, CC_KX, 1, &kx, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_KY, 1, &ky, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_SX, 1, &sx, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_SY, 1, &sy, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_DX, 1, &dx, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_DY, 1, &dy, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_GROUP, 1, &grp, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_OUTC, 0, &outc, err));
    TRY(cd_fb_i32(&c->fb, &cm, CC_INC, 0, &inc, err));
    TRY(cd_fb_u8(&c->fb, &cm, CC_PADMODE, 0, &pm, err));
    TRY(cd_fb_u8(&c->fb, &cm, CC_RELU, 0, &relu, err));
    TRY(cd_fb_u8(&c->fb, &cm, CC_RELU6, 0, &relu6, err));
    int64_t p[4];
    TRY(paddings(c, &cm, CC_PADS, CC_PADX, CC_PADY, p, err));
    size_t at = c->fb.base + cm.pos;
    if (kx < 1 || ky < 1 || sx < 1 || sy < 1 || dx < 1 || dy < 1 || grp < 1 || outc < 0 || inc < 0 || kx > 65536 ||
        ky > 65536 || pm > 2)
        return cd_err(err, CD_E_MODEL,
                      "op #%d '%s': convolution parameters out of range (kernel %dx%d, stride %dx%d, dilation %dx%d, "
                      "group %d, outputCount %d, padMode %u) (file offset %zu)",
                      o->index, o->name, ky, kx, sy, sx, dy, dx, grp, outc, pm, at);
    param_str(m, "kernel %dx%d stride %dx%d dilation %dx%d pads [%lld,%lld,%lld,%lld] group %d out %d in %d%s%s%s", ky,
              kx, sy, sx, dy, dx, (long long)p[0], (long long)p[2], (long long)p[1], (long long)p[3], grp, outc, inc,
              pm == 1       ? " VALID"
                  : pm == 2 ? " SAME"
                            : "",
              relu ? " +relu" : "", relu6 ? " +relu6" : "");
    float *w = NULL, *b = NULL;
    uint32_t nw, nb;
    TRY(floats(c, &o->main, CV_WEIGHT, "weight", &w, &nw, err));
    if (floats(c, &o->main, CV_BIAS, "bias", &b, &nb, err)) {
        free(w);
        return err->code;
    }
    bool idst = false, symq = false;
    cd_fb_table q, qs;
    if (cd_fb_sub(&c->fb, &o->main, CV_IDST, "quanParameter", false, &idst, &q, err) ||
        cd_fb_sub(&c->fb, &o->main, CV_SYMQ, "symmetricQuan", false, &symq, &qs, err)) {
        free(w);
        free(b);
        return err->code;
    }
    char qdesc[120] = "", qwhy[120] = "";
    if (idst && !nw && !symq) { /* weight-quantized: decoded to the float weights MNN computes with */
        if (cd_mnn_idst_weights(c, &q, deconv_type(o) ? 0 : outc, &w, &nw, qdesc, sizeof qdesc, qwhy, sizeof qwhy,
                                err)) {
            free(b);
            return cd_err_prefix(err, "op #%d '%s': ", o->index, o->name);
        }
        if (nw) idst = false;
    }
    if (idst) param_str(m, ", weights quantized (IDSTQuan%s%s)", qwhy[0] ? ": " : "", qwhy);
    if (qdesc[0]) param_str(m, ", %s", qdesc);
    if (symq) param_str(m, ", int8 (QuantizedFloatParam)");
    int32_t *opad = NULL;
    uint32_t n_opad = 0;
    uint8_t has_os = 0;
    if (cd_mnn_ints(c, &cm, CC_OUTPADS, "outPads", &opad, &n_opad, err) ||
        cd_fb_u8(&c->fb, &cm, CC_HAS_OUTSHAPE, 0, &has_os, err)) {
        free(w);
        free(b);
        free(opad);
        return err->code;
    }
    bool deconv = o->type == 17 || o->type == 18;
    if (deconv && (has_os || o->n_in != 1)) {
        keep_named(m, "deconvolution with its output shape as an input");
    } else if (deconv && n_opad && n_opad != 2) {
        keep_named(m, "deconvolution with %u output paddings", n_opad);
    } else if (!nw || idst || symq) {
        keep_named(m, "%s", idst || symq ? "quantized weights" : "weights come in as an input");
    } else if (o->n_in != 1) {
        keep_named(m, "%d inputs", o->n_in);
    } else if (!outc || (deconv && outc % grp) ||
               nw % ((uint32_t)(deconv ? outc / grp : outc) * (uint32_t)kx * (uint32_t)ky)) {
        free(w);
        free(b);
        free(opad);
        return cd_err(err, CD_E_MODEL,
                      "op #%d '%s': %u weights do not divide into %d output channels of %dx%d (file offset %zu)",
                      o->index, o->name, nw, outc, ky, kx, at);
    } else if (nb && nb != (uint32_t)outc) {
        free(w);
        free(b);
        free(opad);
        return cd_err(err, CD_E_MODEL, "op #%d '%s': %u bias values for %d output channels (file offset %zu)", o->index,
                      o->name, nb, outc, at);
    } else {
        m->type = o->type == 13 ? "depthwise_conv2d"
            : o->type == 17     ? "conv2d_transpose"
            : o->type == 18     ? "depthwise_conv2d_transpose"
                                : "conv2d";
        if (deconv && n_opad == 2) {
            int64_t op2[2] = {opad[0], opad[1]};
            add_ints(m, "output_padding", op2, 2);
        }
        int64_t st[2] = {sy, sx}, dl[2] = {dy, dx};
        add_ints(m, "strides", st, 2);
        add_ints(m, "dilations", dl, 2);
        add_ints(m, "paddings", p, 4);
        add_int(m, "groups", grp);
        add_str(m, "padding_algorithm", pm == 1 ? "VALID" : pm == 2 ? "SAME" : "EXPLICIT");
        if (relu || relu6) {
            add_bool(m, "with_act", true);
            add_str(m, "act_type", relu6 ? "relu6" : "relu");
            if (relu6) add_float(m, "fuse_brelu_threshold", 6.0);
        }
        m->pw[0].slot = "Filter";
        m->pw[0].v = w;
        m->pw[0].rank = 4;
        m->pw[0].dims[0] = outc;
        m->pw[0].dims[1] = nw / ((uint32_t)outc * (uint32_t)kx * (uint32_t)ky);
        if (deconv) { /* a transposed convolution's filter is [Cin, Cout/groups, kh, kw] */
            m->pw[0].dims[0] = nw / ((uint32_t)(outc / grp) * (uint32_t)kx * (uint32_t)ky);
            m->pw[0].dims[1] = outc / grp;
        }
        m->pw[0].dims[2] = ky;
        m->pw[0].dims[3] = kx;
        m->n_pw = 1;
        w = NULL;
        if (nb) {
            m->pw[1].slot = "Bias";
            m->pw[1].v = b;
            m->pw[1].rank = 1;
            m->pw[1].dims[0] = nb;
            m->n_pw = 2;
            b = NULL;
        }
        m->in_slots[0] = "Input";
        m->n_in_used = 1;
        m->out_slot = "Output";
    }
    free(w);
    free(b);
    free(opad);
    return CD_OK;
}

static cd_status map_pool(mop *m, cd_error *err) {
    mnn_ctx *c = m->c;
    const mnn_op *o = m->o;
    if (!main_is(o, MNN_P_POOL)) return CD_OK;
    const cd_fb_table *t = &o->main;
    int32_t kx, ky, sx, sy, dt;
    uint8_t glob, ty, pt, ceil, cnt;
    TRY(cd_fb_i32(&c->fb, t, PL_KX, 0, &kx, err));
    TRY(cd_fb_i32(&c->fb, t, PL_KY, 0, &ky, err));
    TRY(cd_fb_i32(&c->fb, t, PL_SX, 0, &sx, err));
    TRY(cd_fb_i32(&c->fb, t, PL_SY, 0, &sy, err));
    TRY(cd_fb_i32(&c->fb, t, PL_DTYPE, 1, &dt, err));
    TRY(cd_fb_u8(&c->fb, t, PL_GLOBAL, 0, &glob, err));
    TRY(cd_fb_u8(&c->fb, t, PL_TYPE, 0, &ty, err));
    TRY(cd_fb_u8(&c->fb, t, PL_PADTYPE, 0, &pt, err));
    TRY(cd_fb_u8(&c->fb, t, PL_CEIL, 1, &ceil, err));
    TRY(cd_fb_u8(&c->fb, t, PL_COUNT, 0, &cnt, err));
    int64_t p[4];
    TRY(paddings(c, t, PL_PADS, PL_PADX, PL_PADY, p, err));
    if (ty > 1 || pt > 2 || cnt > 2 || kx < 0 || ky < 0 || sx < 0 || sy < 0 || kx > 65536 || ky > 65536)
        return cd_err(err, CD_E_MODEL,
                      "op #%d '%s': pooling parameters out of range (type %u, padType %u, countType %u, kernel %dx%d, "
                      "stride %dx%d) (file offset %zu)",
                      o->index, o->name, ty, pt, cnt, ky, kx, sy, sx, c->fb.base + t->pos);
    param_str(m, "%s %s kernel %dx%d stride %dx%d pads [%lld,%lld,%lld,%lld]%s%s%s", ty ? "avg" : "max",
              glob ? "global" : "window", ky, kx, sy, sx, (long long)p[0], (long long)p[2], (long long)p[1],
              (long long)p[3], ceil ? " ceil" : "", cnt == 1 ? " include-padding" : "",
              pt == 1       ? " VALID"
                  : pt == 2 ? " SAME"
                            : "");
    if (dt != 1) {
        keep_named(m, "pooling of data type %d", dt);
        return CD_OK;
    }
    /* mnnconvert leaves the strides out of an ONNX pool that has none: MNN reads 0 as 1 */
    if (sx == 0) sx = 1;
    if (sy == 0) sy = 1;
    if (!glob && (kx < 1 || ky < 1))
        return cd_err(err, CD_E_MODEL, "op #%d '%s': pooling window %dx%d stride %dx%d (file offset %zu)", o->index,
                      o->name, ky, kx, sy, sx, c->fb.base + t->pos);
    m->type = "pool2d";
    add_str(m, "pooling_type", ty ? "avg" : "max");
    int64_t k[2] = {glob ? 1 : ky, glob ? 1 : kx}, s[2] = {glob ? 1 : sy, glob ? 1 : sx};
    add_ints(m, "ksize", k, 2);
    add_ints(m, "strides", s, 2);
    add_ints(m, "paddings", p, 4);
    add_bool(m, "global_pooling", glob);
    add_bool(m, "ceil_mode", ceil);
    add_bool(m, "exclusive", cnt != 1);
    add_str(m, "padding_algorithm", pt == 1 ? "VALID" : pt == 2 ? "SAME" : "EXPLICIT");
    return CD_OK;
}

static const char *unary_type(int32_t t) {
    switch (t) {
    case 0: return "abs";
    case 2: return "floor";
    case 3: return "ceil";
    case 4: return "square";
    case 5: return "sqrt";
    case 6: return "rsqrt";
    case 7: return "exp";
    case 8: return "log";
    case 9: return "sin";
    case 10: return "cos";
    case 11: return "tan";
    case 12: return "asin";
    case 13: return "acos";
    case 14: return "atan";
    case 15: return "reciprocal";
    case 22: return "sign";
    case 25: return "erf";
    case 29: return "sigmoid";
    case 30: return "tanh";
    case 31: return "hard_swish";
    case 34: return "silu";
    default: return NULL;
    }
}

static const char *binary_type(int32_t t) {
    switch (t) {
    case 0: return "elementwise_add";
    case 1: return "elementwise_sub";
    case 2: return "elementwise_mul";
    case 3:
    case 7: return "elementwise_div";
    case 6: return "elementwise_pow";
    case 8: return "elementwise_min";
    case 9: return "elementwise_max";
    default: return NULL;
    }
}

/* The values of a constant int32 input, or -1. */
static int const_ints(const mop *m, int input, int64_t *v, int cap) {
    if (input >= m->o->n_in) return -1;
    int t = m->o->in[input];
    const mnn_const *k = &m->c->iconst[t];
    if (!k->pos || k->n > cap) return -1;
    for (int i = 0; i < k->n; i++) v[i] = cd_mnn_iconst_at(m->c, t, i);
    return k->n;
}

static cd_status map_simple(mop *m, cd_error *err) {
    mnn_ctx *c = m->c;
    const mnn_op *o = m->o;
    const cd_fb_table *t = &o->main;
    switch (o->type) {
    case 2: { /* ArgMax: of a non-NC4HW4 input MNN drops the axis and writes int32 indices */
        int32_t omv = 0, topk = 0, ax = 0;
        if (main_is(o, MNN_P_ARGMAX)) {
            TRY(cd_fb_i32(&c->fb, t, 0, 0, &omv, err));
            TRY(cd_fb_i32(&c->fb, t, 1, 0, &topk, err));
            TRY(cd_fb_i32(&c->fb, t, 2, 0, &ax, err));
        }
        param_str(m, "axis %d topK %d outMaxVal %d", ax, topk, omv);
        if (omv || topk > 1) {
            keep_named(m, "%s", omv ? "outputs the maximum values too" : "top-k indices");
            break;
        }
        m->type = "arg_max";
        add_int(m, "axis", ax);
        add_bool(m, "keepdims", false);
        add_bool(m, "flatten", false);
        add_int(m, "dtype", 2);
        break;
    }
    case 603: { /* LayerNorm over trailing axes (negative, contiguous up to -1): Paddle's layer_norm */
        if (!main_is(o, MNN_P_LAYERNORM)) {
            keep_named(m, "no LayerNorm parameter");
            break;
        }
        int32_t *ax = NULL, grp;
        uint32_t nax = 0, ng = 0, nb = 0;
        float eps, *gm = NULL, *bt = NULL;
        uint8_t rms;
        size_t xd;
        uint32_t nx;
        TRY(cd_mnn_ints(c, t, 0, "axis", &ax, &nax, err));
        cd_status st = cd_mnn_f32(c, t, 1, 0.0f, &eps, err);
        if (!st) st = cd_fb_i32(&c->fb, t, 4, 1, &grp, err);
        if (!st) st = cd_fb_vec(&c->fb, t, 5, "external", 8, &xd, &nx, err);
        if (!st) st = cd_fb_u8(&c->fb, t, 6, 0, &rms, err);
        if (!st) st = floats(c, t, 2, "gamma", &gm, &ng, err);
        if (!st) st = floats(c, t, 3, "beta", &bt, &nb, err);
        bool trailing = nax > 0 && nax <= CD_MAX_RANK;
        for (uint32_t k = 0; trailing && k < nax; k++) trailing = ax[k] == (int32_t)k - (int32_t)nax;
        if (!st) {
            param_str(m, "%u axes from %d, epsilon %g, group %d%s%s", nax, nax ? ax[0] : 0, eps, grp,
                      rms ? ", RMS" : "", nx ? ", external weights" : "");
            if (!trailing || grp != 1 || rms || nx || (ng && nb && ng != nb))
                keep_named(m, "%s",
                           rms            ? "RMS norm"
                               : grp != 1 ? "grouped"
                               : nx       ? "external weights"
                               : trailing ? "gamma and beta differ in length"
                                          : "axes not the trailing ones");
            else {
                m->type = "layer_norm";
                add_int(m, "begin_norm_axis", ax[0]);
                add_float(m, "epsilon", eps);
                for (int k = 0; k < 2; k++) {
                    float **pv = k ? &bt : &gm;
                    if (!(k ? nb : ng)) continue;
                    m->pw[m->n_pw].slot = k ? "Bias" : "Scale";
                    m->pw[m->n_pw].v = *pv;
                    m->pw[m->n_pw].rank = 1;
                    m->pw[m->n_pw].dims[0] = k ? nb : ng;
                    m->n_pw++;
                    *pv = NULL;
                }
                m->in_slots[0] = "X";
                m->n_in_used = 1;
                m->out_slot = "Y";
            }
        }
        free(ax);
        free(gm);
        free(bt);
        if (st) return st;
        break;
    }
    case 69: { /* ReLU */
        float slope = 0;
        if (main_is(o, MNN_P_RELU)) TRY(cd_mnn_f32(c, t, 0, 0.0f, &slope, err));
        param_str(m, "slope %g", slope);
        if (slope != 0) {
            m->type = "leaky_relu";
            add_float(m, "alpha", slope);
        } else
            m->type = "relu";
        break;
    }
    case 70: { /* ReLU6: a clip */
        float lo = 0, hi = 6;
        if (main_is(o, MNN_P_RELU6)) {
            TRY(cd_mnn_f32(c, t, 0, 0.0f, &lo, err));
            TRY(cd_mnn_f32(c, t, 1, 6.0f, &hi, err));
        }
        param_str(m, "min %g max %g", lo, hi);
        m->type = "clip";
        add_float(m, "min", lo);
        add_float(m, "max", hi);
        break;
    }
    case 81: m->type = "sigmoid"; break;
    case 95: m->type = "tanh"; break;
    case 129: m->type = "assign"; break; /* ConvertTensor: a layout change, the same logical values */
    case 101: {                          /* UnaryOp */
        if (!main_is(o, MNN_P_UNARY)) break;
        int32_t ut;
        TRY(cd_fb_i32(&c->fb, t, 0, 0, &ut, err));
        size_t d;
        uint32_t ntab;
        TRY(cd_fb_vec(&c->fb, t, 2, "tableInt8", 1, &d, &ntab, err));
        param_str(m, "opType %d%s", ut, ntab ? " int8 table" : "");
        if (ut == 32 || ut == 33) {
            m->type = "gelu";
            add_bool(m, "approximate", ut == 32);
        } else
            m->type = unary_type(ut);
        if (!m->type) keep_named(m, "unary opType %d has no cldiff op", ut);
        if (ntab) keep_named(m, "int8 lookup table");
        break;
    }
    case 7: { /* BinaryOp */
        if (!main_is(o, MNN_P_BINARY)) break;
        int32_t bt, act;
        TRY(cd_fb_i32(&c->fb, t, 0, 0, &bt, err));
        TRY(cd_fb_i32(&c->fb, t, 2, 0, &act, err));
        param_str(m, "opType %d%s", bt, act ? " +relu" : "");
        m->type = binary_type(bt);
        if (!m->type) keep_named(m, "binary opType %d has no cldiff op", bt);
        if (act == 1 && m->type &&
            (!strcmp(m->type, "elementwise_add") || !strcmp(m->type, "elementwise_sub") ||
             !strcmp(m->type, "elementwise_mul"))) {
            /* a fused relu (MNN's activationType 1): Paddle's fusion_elementwise_*_activation */
            m->type = !strcmp(m->type, "elementwise_add") ? "fusion_elementwise_add_activation"
                : !strcmp(m->type, "elementwise_sub")     ? "fusion_elementwise_sub_activation"
                                                          : "fusion_elementwise_mul_activation";
            add_str(m, "act_type", "relu");
        } else if (act)
            keep_named(m, "fused activation %d", act);
        binary_slots(m);
        break;
    }
    case 22: { /* Eltwise */
        if (!main_is(o, MNN_P_ELTWISE)) break;
        uint8_t et;
        TRY(cd_fb_u8(&c->fb, t, 0, 0, &et, err));
        float *co;
        uint32_t nc;
        TRY(floats(c, t, 1, "coeff", &co, &nc, err));
        bool ones = true;
        for (uint32_t i = 0; i < nc; i++) ones = ones && co[i] == 1.0f;
        free(co);
        static const char *const et_op[] = {"elementwise_mul", "elementwise_add", "elementwise_max", "elementwise_sub"};
        param_str(m, "type %u, %u coefficients", et, nc);
        if (et > 3)
            return cd_err(err, CD_E_MODEL, "op #%d '%s': Eltwise type %u is not one of MNN's", o->index, o->name, et);
        m->type = et_op[et];
        if (!ones) keep_named(m, "coefficients");
        binary_slots(m);
        break;
    }
    case 10:   /* Concat */
    case 85: { /* Softmax */
        int32_t ax = 0;
        if (main_is(o, MNN_P_AXIS)) TRY(cd_fb_i32(&c->fb, t, 0, 0, &ax, err));
        param_str(m, "axis %d", ax);
        m->type = o->type == 10 ? "concat" : "softmax";
        add_int(m, "axis", ax);
        if (o->type == 10) m->n_in_used = o->n_in; /* all in X */
        break;
    }
    case 46:    /* Permute */
    case 100: { /* Transpose: the permutation as a constant second input */
        int64_t perm[CD_MAX_RANK];
        int n = -1;
        if (o->type == 46 && main_is(o, MNN_P_PERMUTE)) {
            int32_t *v;
            uint32_t nn;
            TRY(cd_mnn_ints(c, t, 0, "dims", &v, &nn, err));
            if (nn <= CD_MAX_RANK) {
                n = (int)nn;
                for (int i = 0; i < n; i++) perm[i] = v[i];
            }
            free(v);
        } else if (o->type == 100)
            n = const_ints(m, 1, perm, CD_MAX_RANK);
        param_str(m, "perm of %d axes", n);
        if (n <= 0) {
            keep_named(m, "permutation not constant");
            break;
        }
        m->type = "transpose2";
        add_ints(m, "axis", perm, n);
        m->n_in_used = 1;
        break;
    }
    case 73: { /* Reshape: dims in the parameter or a constant second input */
        int64_t sh[CD_MAX_RANK];
        int n = -1;
        uint8_t fmt = 0;
        if (main_is(o, MNN_P_RESHAPE)) {
            int32_t *v;
            uint32_t nn;
            TRY(cd_fb_u8(&c->fb, t, 1, 0, &fmt, err));
            TRY(cd_mnn_ints(c, t, 0, "dims", &v, &nn, err));
            if (nn && nn <= CD_MAX_RANK) {
                n = (int)nn;
                for (int i = 0; i < n; i++) sh[i] = v[i];
            }
            free(v);
        }
        if (n < 0 && o->n_in == 2) n = const_ints(m, 1, sh, CD_MAX_RANK);
        param_str(m, "dims of rank %d, format %u", n, fmt);
        if (n <= 0 || fmt != 0) {
            keep_named(m, "%s", fmt ? "NHWC reshape" : "shape computed at run time");
            /* its shape from MNN's shape pass makes it a reshape2 again (cd_mnn_bind_reshapes) */
            if (!fmt && o->n_in == 2) add_int(m, "mnn_reshape_runtime", 1);
            break;
        }
        m->type = "reshape2";
        add_ints(m, "shape", sh, n);
        m->n_in_used = 1;
        break;
    }
    case 35: { /* Interp */
        if (!main_is(o, MNN_P_INTERP)) break;
        int32_t ow, oh, rt;
        uint8_t al, hp, ctm;
        float ws, hs;
        TRY(cd_fb_i32(&c->fb, t, IP_OUTW, 0, &ow, err));
        TRY(cd_fb_i32(&c->fb, t, IP_OUTH, 0, &oh, err));
        TRY(cd_fb_i32(&c->fb, t, IP_RESIZE, 0, &rt, err));
        TRY(cd_fb_u8(&c->fb, t, IP_ALIGN, 0, &al, err));
        TRY(cd_fb_u8(&c->fb, t, IP_HALFPIX, 0, &hp, err));
        TRY(cd_fb_u8(&c->fb, t, IP_CTM, 0, &ctm, err));
        TRY(cd_mnn_f32(c, t, IP_WSCALE, 0.0f, &ws, err));
        TRY(cd_mnn_f32(c, t, IP_HSCALE, 0.0f, &hs, err));
        param_str(m, "resizeType %d out %dx%d scale %gx%g align %u halfpixel %u ctm %u", rt, oh, ow, hs, ws, al, hp,
                  ctm);
        double sc[2] = {0, 0};
        if (o->n_in == 2 && m->c->fconst[o->in[1]].pos && m->c->fconst[o->in[1]].n == 4) {
            sc[0] = cd_mnn_fconst_at(m->c, o->in[1], 2);
            sc[1] = cd_mnn_fconst_at(m->c, o->in[1], 3);
        } else if (hs > 0 && ws > 0) {
            sc[0] = hs;
            sc[1] = ws;
        }
        bool half = hp || ctm == 2 || ctm == 3, asym = ctm == 4 || (ctm == 0 && !hp && !al);
        if (rt != 1 && rt != 2) {
            keep_named(m, "resizeType %d (cubic or other)", rt);
        } else if (!(oh > 0 && ow > 0) && !(sc[0] > 0 && sc[1] > 0)) {
            keep_named(m, "output size computed at run time");
        } else if (rt == 1 && !asym) {
            keep_named(m, "nearest with coordinate mode %u", ctm);
        } else if (rt == 2 && !(al || half || asym)) {
            keep_named(m, "bilinear with coordinate mode %u", ctm);
        } else {
            m->type = rt == 1 ? "nearest_interp_v2" : "bilinear_interp_v2";
            add_str(m, "interp_method", rt == 1 ? "nearest" : "bilinear");
            add_str(m, "data_layout", "NCHW");
            add_bool(m, "align_corners", al || ctm == 1);
            add_int(m, "align_mode", half ? 0 : 1);
            if (oh > 0 && ow > 0) {
                add_int(m, "out_h", oh);
                add_int(m, "out_w", ow);
            } else
                add_floats(m, "scale", sc, 2);
            m->n_in_used = 1;
        }
        break;
    }
    case 39:    /* MatMul */
    case 106: { /* BatchMatMul */
        uint8_t ta = 0, tb = 0;
        uint32_t nw = 0;
        if (o->type == 39 && main_is(o, MNN_P_MATMUL)) {
            size_t d;
            TRY(cd_fb_u8(&c->fb, t, 1, 0, &ta, err));
            TRY(cd_fb_u8(&c->fb, t, 2, 0, &tb, err));
            TRY(cd_fb_vec(&c->fb, t, 3, "weight", 4, &d, &nw, err));
        } else if (o->type == 106 && main_is(o, MNN_P_BATCHMATMUL)) {
            TRY(cd_fb_u8(&c->fb, t, 0, 0, &ta, err));
            TRY(cd_fb_u8(&c->fb, t, 1, 0, &tb, err));
        }
        param_str(m, "transpose A %u B %u%s", ta, tb, nw ? ", weights inside" : "");
        if (nw || o->n_in != 2) {
            keep_named(m, "%s", nw ? "weights inside the op" : "bias input");
            break;
        }
        m->type = "matmul_v2";
        add_bool(m, "trans_x", ta);
        add_bool(m, "trans_y", tb);
        m->in_slots[0] = "X";
        m->in_slots[1] = "Y";
        m->n_in_used = 2;
        break;
    }
    case 77: { /* Scale: decoded for inspect; cldiff's CPU has no per-channel affine op */
        if (!main_is(o, MNN_P_SCALE)) break;
        int32_t ch;
        uint32_t ns, nb;
        size_t d;
        TRY(cd_fb_i32(&c->fb, t, 0, 0, &ch, err));
        TRY(cd_fb_vec(&c->fb, t, 1, "scaleData", 4, &d, &ns, err));
        TRY(cd_fb_vec(&c->fb, t, 2, "biasData", 4, &d, &nb, err));
        param_str(m, "channels %d, %u scales, %u biases", ch, ns, nb);
        keep_named(m, "per-channel scale (no CPU op in cldiff)");
        break;
    }
    case 49: { /* PReLU */
        if (!main_is(o, MNN_P_PRELU)) break;
        uint32_t ns;
        size_t d;
        TRY(cd_fb_vec(&c->fb, t, 1, "slope", 4, &d, &ns, err));
        param_str(m, "%u slopes", ns);
        keep_named(m, "prelu slope layout not mapped yet");
        break;
    }
    case 83: { /* Slice (Caffe's: split points along an axis), e.g. mnnconvert's grouped convolution */
        if (!main_is(o, MNN_P_SLICE)) break;
        int32_t ax, *pts;
        uint32_t np;
        uint8_t src;
        TRY(cd_fb_i32(&c->fb, t, 0, 0, &ax, err));
        TRY(cd_mnn_ints(c, t, 1, "slicePoints", &pts, &np, err));
        if (cd_fb_u8(&c->fb, t, 2, 0, &src, err)) {
            free(pts);
            return err->code;
        }
        param_str(m, "axis %d, %u points, source %u", ax, np, src);
        if (src != 0 || np + 1 != (uint32_t)o->n_out || np > CD_MAX_RANK * 8) {
            keep_named(m, "%s", src ? "sizes of a TensorFlow/ONNX split" : "points and outputs differ");
            free(pts);
            break;
        }
        int64_t sec[CD_MAX_RANK * 8 + 1];
        bool ok = true;
        for (uint32_t i = 0; i < np; i++) {
            sec[i] = pts[i] - (i ? pts[i - 1] : 0);
            ok = ok && sec[i] > 0;
        }
        sec[np] = -1;
        free(pts);
        if (!ok) return cd_err(err, CD_E_MODEL, "op #%d '%s': Slice points are not increasing", o->index, o->name);
        m->type = "split";
        add_int(m, "axis", ax);
        add_ints(m, "sections", sec, (int)np + 1);
        add_int(m, "num", 0);
        m->n_in_used = 1;
        break;
    }
    case 112: { /* Pooling3D: mnnconvert writes ONNX's GlobalAveragePool / GlobalMaxPool as a global one */
        if (!main_is(o, MNN_P_POOL3D)) break;
        uint8_t ty, glob;
        TRY(cd_fb_u8(&c->fb, t, 3, 0, &ty, err));
        TRY(cd_fb_u8(&c->fb, t, 5, 0, &glob, err));
        param_str(m, "%s%s", ty ? "avg" : "max", glob ? " global" : "");
        if (ty > 1)
            return cd_err(err, CD_E_MODEL, "op #%d '%s': Pooling3D type %u is not one of MNN's", o->index, o->name, ty);
        if (!glob) {
            keep_named(m, "a 3-D pooling window");
            break;
        }
        m->type = "pool2d";
        add_str(m, "pooling_type", ty ? "avg" : "max");
        int64_t one[2] = {1, 1}, zero[4] = {0, 0, 0, 0};
        add_ints(m, "ksize", one, 2);
        add_ints(m, "strides", one, 2);
        add_ints(m, "paddings", zero, 4);
        add_bool(m, "global_pooling", true);
        m->n_in_used = 1;
        break;
    }
    case 513:
    case 515:
    case 518: param_str(m, "int8"); break;
    default: break;
    }
    return CD_OK;
}

cd_status cd_mnn_map_op(mnn_ctx *c, const mnn_op *o, cd_error *err) {
    mop m;
    memset(&m, 0, sizeof m);
    m.c = c;
    m.o = o;
    cd_status st = CD_OK;
    if (o->type == 12 || o->type == 13 || o->type == 17 || o->type == 18 || o->type == 513 || o->type == 515)
        st = map_conv(&m, err);
    else if (o->type == 47)
        st = map_pool(&m, err);
    else
        st = map_simple(&m, err);
    bool multi = m.type && !strcmp(m.type, "split");
    if (!st && m.type && o->n_out != 1 && !multi) keep_named(&m, "%d outputs", o->n_out);
    if (!st && m.type && !m.n_in_used) m.n_in_used = 1;
    if (!st && m.type && m.n_in_used < o->n_in && strcmp(m.type, "reshape2") && strcmp(m.type, "transpose2") &&
        strcmp(m.type, "nearest_interp_v2") && strcmp(m.type, "bilinear_interp_v2"))
        keep_named(&m, "%d inputs", o->n_in);
    if (!st && m.type && o->n_in < m.n_in_used) keep_named(&m, "%d inputs", o->n_in);
    if (!st && m.type) int8_stays_named(&m);
    const char *tn = cd_mnn_op_type_name(o->type);
    char named[64], pname[2][300];
    if (!m.type) {
        if (tn)
            snprintf(named, sizeof named, "mnn_%s", tn);
        else
            snprintf(named, sizeof named, "mnn_type%d", o->type);
    }
    /* parameters made from the op's data */
    for (int i = 0; !st && m.type && i < m.n_pw; i++) {
        int k = 0;
        do
            snprintf(pname[i], sizeof pname[i], "%s/%s%s%.0d", o->name[0] ? o->name : "op", m.pw[i].slot, k ? "#" : "",
                     k);
        while (cd_graph_has_var(c->g, pname[i]) && ++k < 1000);
        size_t n = 1;
        for (int d = 0; d < m.pw[i].rank; d++) n *= (size_t)m.pw[i].dims[d];
        st = cd_graph_declare_var(c->g, pname[i], CD_F32, m.pw[i].dims, m.pw[i].rank, true, err);
        if (!st) st = cd_graph_set_param(c->g, pname[i], CD_F32, m.pw[i].dims, m.pw[i].rank, m.pw[i].v, n * 4, err);
    }
    if (!st && !cd_graph_add_op(c->g, m.type ? m.type : named, err)) st = err->code;
    const char *names[64];
    if (!st && m.type) {
        for (int i = 0; !st && i < m.n_in_used && i < 64; i++) {
            names[i] = c->tname[o->in[i]];
            if (m.in_slots[0] && i < 3 && m.in_slots[i]) st = cd_op_add_input(c->g, m.in_slots[i], &names[i], 1, err);
        }
        if (!st && !m.in_slots[0]) st = cd_op_add_input(c->g, "X", names, m.n_in_used < 64 ? m.n_in_used : 64, err);
        for (int i = 0; !st && i < m.n_pw; i++) {
            const char *pn = pname[i];
            st = cd_op_add_input(c->g, m.pw[i].slot, &pn, 1, err);
        }
        int n = multi && o->n_out < 64 ? o->n_out : 1;
        for (int i = 0; i < n; i++) names[i] = c->tname[o->out[i]];
        if (!st) st = cd_op_add_output(c->g, m.out_slot ? m.out_slot : "Out", names, n, err);
    } else if (!st) {
        int n = o->n_in < 64 ? o->n_in : 64;
        for (int i = 0; i < n; i++) names[i] = c->tname[o->in[i]];
        if (o->n_in > 64) cd_graph_warn(c->g, "op #%d '%s': only its first 64 inputs are listed", o->index, o->name);
        st = cd_op_add_input(c->g, "X", names, n, err);
        n = o->n_out < 64 ? o->n_out : 64;
        for (int i = 0; !st && i < n; i++) names[i] = c->tname[o->out[i]];
        if (!st) st = cd_op_add_output(c->g, "Out", names, n, err);
    }
    for (int i = 0; i < m.n_pw; i++) free(m.pw[i].v);
    if (!st) {
        add_str(&m, "mnn_type", tn ? tn : "?");
        add_str(&m, "mnn_name", o->name);
        if (m.params[0]) add_str(&m, "mnn_params", m.params);
        if (!m.type && m.why[0]) add_str(&m, "mnn_unmapped", m.why);
    }
    for (int i = 0; i < m.n_attrs; i++) {
        if (st) {
            cd_attr *a = &m.attrs[i];
            free(a->name);
            free(a->s);
            free(a->ints);
            free(a->floats);
            continue;
        }
        if (!m.type && strncmp(m.attrs[i].name, "mnn_", 4)) {
            /* a named op keeps only the mnn_* attributes */
            free(m.attrs[i].name);
            free(m.attrs[i].s);
            free(m.attrs[i].ints);
            free(m.attrs[i].floats);
            continue;
        }
        st = cd_op_add_attr(c->g, &m.attrs[i], err);
    }
    if (st) return cd_err_prefix(err, "op #%d '%s' (%s): ", o->index, o->name, tn ? tn : "?");
    return CD_OK;
}
