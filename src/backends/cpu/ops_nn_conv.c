/* conv2d, depthwise_conv2d, conv2d_transpose, depthwise_conv2d_transpose (docs/nb-format.md §7.1,
 * §7.2) with groups, dilations, 2/4-value paddings, SAME/VALID/EXPLICIT, Bias, fused
 * activation (with_act/act_type, Prelu_alpha) and the SecondInput residual fusion.
 *
 * Kernels: convs whose groups have one input channel each (depthwise, channel multiplier
 * m = Cout/groups) use a direct row kernel, since they are memory bound; 1x1 stride-1
 * unpadded convs multiply the filter with the input directly; every other conv runs the
 * blocked GEMM with an im2col packer that writes straight into the GEMM's B panels.
 * conv2d_transpose is a GEMM (Filter^T x Input, in column chunks) followed by col2im.
 *
 * Each kernel is written once (template body in ops_nn_conv_tmpl.h) and instantiated for float and for
 * _Float16, where storage and arithmetic are half (one rounding per operation). */
#include "backends/cpu/conv_ocv.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/int8_quant.h"
#include "backends/cpu/par.h"
#include "engine/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Conv geometry shared by infer, run and macs. */
typedef struct {
    bool transpose;
    int64_t N, Cin, H, W, Cout, KH, KW, Ho, Wo;
    int64_t groups, sh, sw, dh, dw, pt, pb, pl, pr;
    cd_act act;
    int prelu_mode;     /* 0 all, 1 channel, 2 element (act.kind == CD_ACT_PRELU) */
    bool residual;      /* add SecondInput after the activation */
    bool residual_relu; /* fusion_elementwise_add_activation: relu after the add */
} conv_geo;

/* The prepared state (cd_op_def.prepare): the parsed geometry and, for an fp32 1x1 conv on
 * a 1x1 map (squeeze-and-excitation), the filter transposed to K x Cout, which turns the
 * product into cd_gemm's one-column path. One malloc block: conv_geo first (CD_PARSED copies
 * it), the transposed filter after the struct. */
typedef struct {
    conv_geo g;
    const float *wt; /* [Cin][Cout], or NULL */
    /* fp32 convs that would run im2col + GEMM, where cd_conv_ocv_level() > 0: the filter of
     * every group packed for cd_conv_ocv_f32 (conv_ocv.h), group gr at gr * wp_group floats;
     * NULL otherwise. Packed once per process: warm runs reuse it. */
    const float *wp;
    size_t wp_group;
    /* fp32: cd_gemm_epi_blocks_f32() at prepare: the epilogue per block where the kernel allows */
    bool blk_epi;
} conv_state;

static bool conv_pointwise(const conv_geo *g) {
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pb == 0 && g->pl == 0 && g->pr == 0;
}

static cd_status ints_attr(cd_op_ctx *c, const char *name, int need_min, int need_max, bool required,
                           const int64_t *dflt, int dflt_n, int64_t *out, int *n_out) {
    const int64_t *v;
    int n = cd_attr_ints(c->op, name, &v);
    if (n == 0) {
        if (required && !cd_op_attr(c->op, name))
            return cd_op_fail(c, CD_E_MODEL, "required attribute %s is missing", name);
        v = dflt;
        n = dflt_n;
    }
    if (n < need_min || n > need_max || (n != need_min && n != need_max))
        return cd_op_fail(c, CD_E_MODEL, "attribute %s has %d values; expected %d%s%.0d", name, n, need_min,
                          need_max != need_min ? " or " : "", need_max != need_min ? need_max : 0);
    for (int i = 0; i < n; i++) out[i] = v[i];
    *n_out = n;
    return CD_OK;
}

/* SAME padding of §7.0 for one spatial dim. */
static void same_pad(int64_t in, int64_t stride, int64_t k, int64_t *b, int64_t *e) {
    int64_t out = (in + stride - 1) / stride;
    int64_t tot = (out - 1) * stride + k - in;
    if (tot < 0) tot = 0;
    *b = tot / 2;
    *e = tot - *b;
}

/* Reads and validates everything; fills g. Shapes come from c->vals. */
static cd_status conv_parse(cd_op_ctx *c, conv_geo *g) {
    memset(g, 0, sizeof *g);
    const char *type = c->op->type;
    g->transpose = strstr(type, "transpose") != NULL;
    cd_value *x = cd_in_req(c, "Input", 0);
    if (!x) return c->err->code;
    cd_value *f = cd_in_req(c, "Filter", 0);
    if (!f) return c->err->code;
    if (!cd_out(c, "Output", 0)) return cd_op_fail(c, CD_E_MODEL, "output slot Output is not connected");
    char b1[96], b2[96];
    if (x->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "Input must be 4-D NCHW but has shape %s",
                          cd_shape_str(&x->shape, b1, sizeof b1));
    if (f->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "Filter must be 4-D but has shape %s", cd_shape_str(&f->shape, b1, sizeof b1));
    g->N = x->shape.d[0];
    g->Cin = x->shape.d[1];
    g->H = x->shape.d[2];
    g->W = x->shape.d[3];
    g->KH = f->shape.d[2];
    g->KW = f->shape.d[3];
    for (int i = 0; i < 4; i++)
        if (x->shape.d[i] <= 0 || f->shape.d[i] <= 0)
            return cd_op_fail(c, CD_E_MODEL, "Input %s and Filter %s must have positive dims",
                              cd_shape_str(&x->shape, b1, sizeof b1), cd_shape_str(&f->shape, b2, sizeof b2));

    int64_t st[2], pd[4], dl[2];
    int n;
    static const int64_t one2[2] = {1, 1}, zero2[2] = {0, 0};
    cd_status s;
    if ((s = ints_attr(c, "strides", 2, 2, false, one2, 2, st, &n))) return s;
    if ((s = ints_attr(c, "paddings", 2, 4, false, zero2, 2, pd, &n))) return s;
    if (n == 2) {
        pd[3] = pd[2] = pd[1];
        pd[1] = pd[0];
    } /* [h, w] -> [t, b, l, r] */
    if ((s = ints_attr(c, "dilations", 2, 2, false, one2, 2, dl, &n))) return s;
    if (st[0] <= 0 || st[1] <= 0)
        return cd_op_fail(c, CD_E_MODEL, "strides [%lld, %lld] must be > 0", (long long)st[0], (long long)st[1]);
    if (dl[0] <= 0 || dl[1] <= 0)
        return cd_op_fail(c, CD_E_MODEL, "dilations [%lld, %lld] must be > 0", (long long)dl[0], (long long)dl[1]);
    for (int i = 0; i < 4; i++)
        if (pd[i] < 0)
            return cd_op_fail(c, CD_E_MODEL, "paddings must be >= 0 but paddings[%d] = %lld", i, (long long)pd[i]);
    g->groups = cd_attr_int(c->op, "groups", 1);
    if (g->groups <= 0) return cd_op_fail(c, CD_E_MODEL, "groups = %lld must be > 0", (long long)g->groups);
    const char *alg = cd_attr_str(c->op, "padding_algorithm", "EXPLICIT");
    if (!strcmp(alg, "VALID")) {
        memset(pd, 0, sizeof pd);
    } else if (!strcmp(alg, "SAME")) {
        dl[0] = dl[1] = 1; /* SAME forces dilation 1 (§7.0) */
        same_pad(g->H, st[0], g->KH, &pd[0], &pd[1]);
        same_pad(g->W, st[1], g->KW, &pd[2], &pd[3]);
    } else if (strcmp(alg, "EXPLICIT") && alg[0]) {
        return cd_op_fail(c, CD_E_MODEL, "padding_algorithm '%s' is not one of EXPLICIT, SAME, VALID", alg);
    }
    g->sh = st[0];
    g->sw = st[1];
    g->dh = dl[0];
    g->dw = dl[1];
    g->pt = pd[0];
    g->pb = pd[1];
    g->pl = pd[2];
    g->pr = pd[3];

    if (g->Cin % g->groups)
        return cd_op_fail(c, CD_E_MODEL, "Input has %lld channels, not divisible by groups=%lld", (long long)g->Cin,
                          (long long)g->groups);
    int64_t ekh = g->dh * (g->KH - 1) + 1, ekw = g->dw * (g->KW - 1) + 1;
    if (!g->transpose) {
        g->Cout = f->shape.d[0];
        if (f->shape.d[1] * g->groups != g->Cin)
            return cd_op_fail(c, CD_E_MODEL,
                              "Filter %s has %lld input channels per group but Input %s has %lld channels "
                              "with groups=%lld (need Filter dim 1 x groups == Input channels)",
                              cd_shape_str(&f->shape, b1, sizeof b1), (long long)f->shape.d[1],
                              cd_shape_str(&x->shape, b2, sizeof b2), (long long)g->Cin, (long long)g->groups);
        if (g->Cout % g->groups)
            return cd_op_fail(c, CD_E_MODEL, "Filter has %lld output channels, not divisible by groups=%lld",
                              (long long)g->Cout, (long long)g->groups);
        g->Ho = (g->H + g->pt + g->pb - ekh) / g->sh + 1;
        g->Wo = (g->W + g->pl + g->pr - ekw) / g->sw + 1;
        if (g->H + g->pt + g->pb < ekh || g->W + g->pl + g->pr < ekw)
            return cd_op_fail(c, CD_E_MODEL,
                              "the dilated %lldx%lld filter (extent %lldx%lld) is larger than the padded "
                              "input %lldx%lld: output would be empty",
                              (long long)g->KH, (long long)g->KW, (long long)ekh, (long long)ekw,
                              (long long)(g->H + g->pt + g->pb), (long long)(g->W + g->pl + g->pr));
    } else {
        if (f->shape.d[0] != g->Cin)
            return cd_op_fail(
                c, CD_E_MODEL,
                "Filter %s dim 0 must equal Input channels %lld (transpose filter is [Cin, Cout/groups, KH, KW])",
                cd_shape_str(&f->shape, b1, sizeof b1), (long long)g->Cin);
        g->Cout = f->shape.d[1] * g->groups;
        int64_t bh = (g->H - 1) * g->sh - g->pt - g->pb + ekh;
        int64_t bw = (g->W - 1) * g->sw - g->pl - g->pr + ekw;
        int64_t os[2] = {0, 0}, op[2] = {0, 0};
        int nos, nop;
        const int64_t *v;
        if ((nos = cd_attr_ints(c->op, "output_size", &v)) > 0) {
            if (nos != 2) return cd_op_fail(c, CD_E_MODEL, "output_size has %d values; expected 2", nos);
            os[0] = v[0];
            os[1] = v[1];
        }
        if ((nop = cd_attr_ints(c->op, "output_padding", &v)) > 0) {
            if (nop != 2) return cd_op_fail(c, CD_E_MODEL, "output_padding has %d values; expected 2", nop);
            op[0] = v[0];
            op[1] = v[1];
        }
        g->Ho = bh;
        g->Wo = bw;
        if (nos) {
            for (int i = 0; i < 2; i++) {
                int64_t base = i ? bw : bh, stv = i ? g->sw : g->sh;
                if (os[i] < base || os[i] >= base + stv)
                    return cd_op_fail(
                        c, CD_E_MODEL,
                        "output_size[%d] = %lld is outside [%lld, %lld) allowed by input, stride and padding", i,
                        (long long)os[i], (long long)base, (long long)(base + stv));
            }
            g->Ho = os[0];
            g->Wo = os[1];
        } else if (nop) {
            for (int i = 0; i < 2; i++) {
                int64_t stv = i ? g->sw : g->sh, dv = i ? g->dw : g->dh, lim = stv > dv ? stv : dv;
                if (op[i] < 0 || op[i] >= lim)
                    return cd_op_fail(c, CD_E_MODEL,
                                      "output_padding[%d] = %lld must be in [0, %lld) (max of stride and dilation)", i,
                                      (long long)op[i], (long long)lim);
            }
            g->Ho += op[0];
            g->Wo += op[1];
        }
    }
    if (g->Ho <= 0 || g->Wo <= 0)
        return cd_op_fail(
            c, CD_E_MODEL, "computed output size %lldx%lld is not positive (input %lldx%lld, kernel %lldx%lld)",
            (long long)g->Ho, (long long)g->Wo, (long long)g->H, (long long)g->W, (long long)g->KH, (long long)g->KW);
    if (g->Ho > INT32_MAX || g->Wo > INT32_MAX || g->Ho * g->Wo > INT32_MAX || g->Cin * g->KH * g->KW > INT32_MAX ||
        g->Cout * g->KH * g->KW > INT32_MAX)
        return cd_op_fail(c, CD_E_UNSUPPORTED,
                          "conv dimensions exceed the 2^31 elements per matrix the CPU kernel handles");

    cd_value *bias = cd_in(c, "Bias", 0);
    if (bias && cd_value_numel(bias) != g->Cout)
        return cd_op_fail(c, CD_E_MODEL, "Bias %s has %lld elements but the conv has %lld output channels",
                          cd_shape_str(&bias->shape, b1, sizeof b1), (long long)cd_value_numel(bias),
                          (long long)g->Cout);

    if ((s = cd_act_from_conv(c, &g->act))) return s;
    if (g->act.kind == CD_ACT_PRELU) {
        const char *m = cd_attr_str(c->op, "prelu_mode", "channel");
        g->prelu_mode = !strcmp(m, "all") ? 0 : !strcmp(m, "channel") ? 1 : 2;
        cd_value *al = cd_in(c, "Prelu_alpha", 0);
        if (!al) return cd_op_fail(c, CD_E_MODEL, "act_type prelu needs input Prelu_alpha, which is not connected");
        int64_t need = g->prelu_mode == 0 ? 1 : g->prelu_mode == 1 ? g->Cout : g->Cout * g->Ho * g->Wo;
        if (cd_value_numel(al) != need)
            return cd_op_fail(c, CD_E_MODEL, "Prelu_alpha has %lld elements; prelu_mode '%s' needs %lld",
                              (long long)cd_value_numel(al), m, (long long)need);
    }
    const char *fe = cd_attr_str(c->op, "fuse_elementwise_op_type", "");
    if (fe[0]) {
        if (strcmp(fe, "elementwise_add") && strcmp(fe, "fusion_elementwise_add_activation"))
            return cd_op_fail(
                c, CD_E_UNSUPPORTED,
                "fuse_elementwise_op_type '%s' is not elementwise_add or fusion_elementwise_add_activation", fe);
        cd_value *si = cd_in(c, "SecondInput", 0);
        if (!si)
            return cd_op_fail(c, CD_E_MODEL,
                              "fuse_elementwise_op_type '%s' needs input SecondInput, which is not connected", fe);
        cd_shape os = {4, {g->N, g->Cout, g->Ho, g->Wo}};
        if (!cd_shape_eq(&si->shape, &os))
            return cd_op_fail(c, CD_E_MODEL, "SecondInput %s must have the output shape %s",
                              cd_shape_str(&si->shape, b1, sizeof b1), cd_shape_str(&os, b2, sizeof b2));
        g->residual = true;
        g->residual_relu = fe[0] == 'f';
    }
    return CD_OK;
}

cd_status cd_nn_conv_infer(cd_op_ctx *c) {
    conv_geo g;
    cd_status s = conv_parse(c, &g);
    if (s) return s;
    cd_value *o = cd_out(c, "Output", 0);
    o->dtype = cd_act_dtype(c);
    o->shape.rank = 4;
    o->shape.d[0] = g.N;
    o->shape.d[1] = g.Cout;
    o->shape.d[2] = g.Ho;
    o->shape.d[3] = g.Wo;
    return CD_OK;
}

double cd_nn_conv_macs(const cd_op_ctx *c) {
    conv_geo g;
    cd_error e;
    cd_op_ctx cc = *c;
    cc.err = &e; /* macs is advisory: a shape problem was already reported by infer */
    if (conv_parse(&cc, &g)) return 0;
    if (g.transpose) return (double)g.N * g.Cin * g.H * g.W * (g.Cout / g.groups) * g.KH * g.KW;
    return (double)g.N * g.Cout * g.Ho * g.Wo * (g.Cin / g.groups) * g.KH * g.KW;
}

static inline int64_t imin64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t imax64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Per-plane kernels are compiled for several x86 ISA levels and picked at run time with
 * __builtin_cpu_supports (as in gemm.c), so a portable build still runs AVX-512 /
 * AVX512-FP16 code where the machine has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define NN_X86 1
#include <immintrin.h>
#endif
/* Below this many multiply-adds an op runs on one thread: a parallel region costs a
 * thread wake-up and a join, which on a loaded machine can exceed the whole op. */
#define NN_PAR_MIN_WORK ((int64_t)1 << 18)
/* Depthwise convs below this many multiply-adds run on one thread, like small GEMMs
 * (CD_GEMM_ONE_THREAD_MACS in gemm.h): with the register-tiled row kernel a 1M-MAC layer
 * takes ~50 us on one core, less than waking and joining a second thread often costs. */
#ifndef NN_DW_PAR_MIN_MACS
#define NN_DW_PAR_MIN_MACS ((int64_t)CD_GEMM_ONE_THREAD_MACS)
#endif

/* CLDIFF_GEMM_F32_KERNEL=avx2-fma or generic caps the float level here too (gemm.h): the
 * depthwise and epilogue kernels of each level give the same bits, and one machine tests them */
#define f32_level_cap cd_gemm_f32_level_cap
/* The conv epilogue as the direct GEMM / direct conv store applies it (gemm.h cd_gemm_epi):
 * false where it cannot (a residual input, an activation other than none, relu, relu6,
 * leaky_relu, hard_swish), and then the separate epilogue pass runs. */
__attribute__((unused)) static bool gemm_epi_of(const conv_geo *g, const cd_value *bias, int64_t oc0,
                                                cd_gemm_epi *out) {
    if (g->residual) return false;
    int k;
    switch (g->act.kind) {
    case CD_ACT_NONE: k = CD_GEMM_EPI_NONE; break;
    case CD_ACT_RELU: k = CD_GEMM_EPI_RELU; break;
    case CD_ACT_RELU6: k = CD_GEMM_EPI_RELU6; break;
    case CD_ACT_LEAKY_RELU: k = CD_GEMM_EPI_LEAKY_RELU; break;
    case CD_ACT_HARD_SWISH: k = CD_GEMM_EPI_HARD_SWISH; break;
    default: return false;
    }
    *out = (cd_gemm_epi){bias ? (const float *)bias->data + oc0 : NULL, k, g->act.a, g->act.b, g->act.c};
    return true;
}

#define NN_T float
#define NN_S f32
#define NN_IS_HALF 0
#define NN_ISA_FAST "avx512f"
#define NN_ISA_FAST_CHECK (f32_level_cap() >= 2 && __builtin_cpu_supports("avx512f"))
#define NN_ISA_MID "avx2,fma"
#define NN_ISA_MID_CHECK (f32_level_cap() >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#include "ops_nn_conv_tmpl.h"
/* Half: every multiply and every add is rounded to half on its own (no contraction into
 * FMA), so results are identical on every ISA level and match the unfused half kernels. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#define NN_T _Float16
#define NN_S f16
#define NN_IS_HALF 1
#define NN_ISA_FAST "avx512fp16,avx512vl,avx512bw,avx512f"
#define NN_ISA_FAST_CHECK __builtin_cpu_supports("avx512fp16")
#define NN_ISA_MID "avx2,f16c"
#define NN_ISA_MID_CHECK (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c"))
#include "ops_nn_conv_tmpl.h"
#pragma GCC pop_options

static cd_status check_dtypes(cd_op_ctx *c) {
    cd_dtype t = cd_act_dtype(c);
    const char *slots[] = {"Input", "Filter", "Bias", "Prelu_alpha", "SecondInput"};
    for (int i = 0; i < 5; i++) {
        cd_value *v = cd_in(c, slots[i], 0);
        if (v && v->dtype != t)
            return cd_op_fail(c, CD_E_INTERNAL, "%s has dtype %s but this %s run expects %s", slots[i],
                              cd_dtype_name(v->dtype), t == CD_F16 ? "fp16" : "fp32", cd_dtype_name(t));
        if (v && !v->data) return cd_op_fail(c, CD_E_INTERNAL, "%s has no data", slots[i]);
    }
    return CD_OK;
}

/* Whether conv2d runs g on cd_conv_ocv_f32 (fp32, not transposed, not depthwise, not the
 * short-reduction or wide-row direct conv, a 1x1 stride-1 product only on a small map) on this
 * machine. */
static bool conv_takes_ocv(const conv_geo *g) {
    const int64_t cig = g->Cin / g->groups;
    if (g->transpose || (cig == 1 && g->groups > 1) || !cd_conv_ocv_level()) return false;
    /* 1x1 stride-1 convs on maps of at most 16 pixels (4x4): the direct GEMM's vectors run over
     * pixels, mostly empty there; measured on the zoo's mobile networks, 64 pixels gained
     * nothing more (1x1 maps keep the one-column GEMM) */
    if (conv_pointwise(g)) return g->Ho * g->Wo <= 16;
    const cd_conv_direct_geo fg = {NULL,       (int)cig,   (int)g->H,  (int)g->W,  (int)g->KH, (int)g->KW, (int)g->sh,
                                   (int)g->sw, (int)g->dh, (int)g->dw, (int)g->pt, (int)g->pl, (int)g->Ho, (int)g->Wo};
    return !cd_conv_direct_fits_f32(&fg, (int)(g->Cout / g->groups));
}

cd_status cd_nn_conv_prepare(cd_op_ctx *c, void **state) {
    conv_geo g;
    cd_status s = conv_parse(c, &g);
    if (s) return s;
    const cd_value *f = cd_in(c, "Filter", 0);
    const bool f32 = c->prec == CD_PREC_FP32 && f && f->data && f->dtype == CD_F32;
    const bool gemv = f32 && !g.transpose && g.groups == 1 && g.Ho * g.Wo == 1 && conv_pointwise(&g);
    const bool ocv = f32 && !gemv && conv_takes_ocv(&g);
    const int cog = (int)(g.Cout / g.groups), K = (int)(g.Cin / g.groups * g.KH * g.KW);
    const size_t wpg = ocv ? cd_conv_ocv_packed_floats(cog, K) : 0;
    const size_t extra = (gemv ? (size_t)(g.Cin * g.Cout) : 0) + wpg * (size_t)g.groups;
    conv_state *st = malloc(sizeof *st + extra * sizeof(float));
    if (!st) return CD_E_NOMEM;
    st->g = g;
    st->wt = NULL;
    st->wp = NULL;
    st->wp_group = wpg;
    st->blk_epi = f32 && cd_gemm_epi_blocks_f32();
    if (gemv) {
        float *wt = (float *)(st + 1);
        const float *w = f->data;
        /* in 16 x 16 tiles: row by row the stores went Cout floats apart, one cache line (and
         * at first one fresh page) per weight (9% of pplcnet's cold run) */
        for (int64_t o0 = 0; o0 < g.Cout; o0 += 16)
            for (int64_t i0 = 0; i0 < g.Cin; i0 += 16) {
                const int64_t oe = o0 + 16 < g.Cout ? o0 + 16 : g.Cout, ie = i0 + 16 < g.Cin ? i0 + 16 : g.Cin;
                for (int64_t ic = i0; ic < ie; ic++)
                    for (int64_t oc = o0; oc < oe; oc++) wt[ic * g.Cout + oc] = w[oc * g.Cin + ic];
            }
        st->wt = wt;
    }
    if (ocv) {
        float *wp = (float *)(st + 1);
        for (int64_t gr = 0; gr < g.groups; gr++)
            cd_conv_ocv_pack((const float *)f->data + (size_t)gr * cog * K, cog, K, wp + (size_t)gr * wpg);
        st->wp = wp;
    }
    *state = st;
    return CD_OK;
}

cd_status cd_nn_conv_run(cd_op_ctx *c) {
    conv_geo g;
    cd_status s = CD_PARSED(c, conv_geo, conv_parse, g);
    if (s) return s;
    if ((s = check_dtypes(c))) return s;
    return c->prec == CD_PREC_FP16 ? conv_run_f16(c, &g) : conv_run_f32(c, &g);
}

cd_status cd_nn_depthwise_sums_f32(cd_op_ctx *c, const cd_conv_direct_geo *dg, int N, const float *in, const float *w,
                                   float *out, float qinv) {
    conv_geo g;
    memset(&g, 0, sizeof g);
    g.N = N;
    g.Cin = g.Cout = g.groups = dg->Cin;
    g.H = dg->H;
    g.W = dg->W;
    g.KH = dg->KH;
    g.KW = dg->KW;
    g.Ho = dg->Ho;
    g.Wo = dg->Wo;
    g.sh = dg->sh;
    g.sw = dg->sw;
    g.dh = dg->dh;
    g.dw = dg->dw;
    g.pt = dg->pt;
    g.pl = dg->pl;
    return conv_direct_f32(c, &g, in, w, out, qinv, NULL);
}
