/* The local check's op families (docs/verdicts.md): which bound each op type is held to, its
 * accumulation length and fused activation. */
#include "verdict/local_priv.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "diag/diag.h"
#include "engine/backend_def.h"
#include "engine/op_list.h"

/* ---------------------------------------------------------------- op families */

/* Which family each op type is held to, and its rounding budget, is the op table's `bound` and
 * `ulps` columns (engine/op_list.def); the SPECIAL ones are derived below from attributes and
 * shapes. */

typedef struct act_info {
    double L, ulps, abs_terms;
    bool shrinks;
} act_info;

/* The fused activation's Lipschitz constant, own rounding, and whether |act(y)| <= |y| (then
 * |ref| is a lower bound of the pre-activation magnitude: the cheap check is valid). */
static act_info act_of(const cd_op *op, const char *name) {
    if (!name || !name[0]) return (act_info){1, 0, 0, true};
    switch (cd_op_id_of(name)) {
    case CD_OPID_relu:
    case CD_OPID_relu6:
    case CD_OPID_abs: return (act_info){1, 0, 0, true};
    case CD_OPID_leaky_relu: return (act_info){1, 1, 0, true};
    case CD_OPID_prelu: return (act_info){1, 1, 0, false};
    case CD_OPID_hard_swish: {
        double th = cd_attr_float(op, "hard_swish_threshold", 6), sc = cd_attr_float(op, "hard_swish_scale", 6),
               off = cd_attr_float(op, "hard_swish_offset", 3);
        double L = sc != 0 ? fabs((2 * th - off) / sc) : 1;
        if (!(L >= 1)) L = 1;
        return (act_info){L, 6, fabs(off), th <= sc};
    }
    case CD_OPID_hard_sigmoid: {
        double sl = cd_attr_float(op, "slope", 0.2), off = cd_attr_float(op, "offset", 0.5);
        return (act_info){fabs(sl), 2, 1 + 2 * fabs(off), false};
    }
    case CD_OPID_sigmoid: return (act_info){0.25, 8, 0, false};
    case CD_OPID_tanh: return (act_info){1, 8, 0, true};
    case CD_OPID_swish: return (act_info){1.1, 10, 0, true};
    case CD_OPID_gelu: return (act_info){1.13, 20, 0, true};
    default: return (act_info){-1, 0, 0, false}; /* exp, sqrt and unknown fused activations: no bounded slope */
    }
}

static const char *fused_act_name(const cd_op *op) {
    if (cd_op_attr(op, "with_act")) return cd_attr_bool(op, "with_act", false) ? cd_attr_str(op, "act_type", "") : "";
    const char *a = cd_attr_str(op, "activation_type", "");
    if (a[0]) return a;
    if (!strncmp(op->type, "fusion_elementwise_", 19)) return cd_attr_str(op, "act_type", "");
    return "";
}

static bool calib_fakequant(const cd_op *op) {
    if (strcmp(op->type, "calib") && strcmp(op->type, "calib_once")) return false;
    const char *al = op->kernel.present ? op->kernel.alias : "";
    return strstr(al, "_to_int8") || strstr(al, "_to_int16") ||
        (!strstr(al, "_to_") && cd_attr_float(op, "scale", 0) > 0);
}

/* The largest of the last two dimensions of op's inputs (an interpolation's source extent). */
static int64_t spatial_extent(const cd_op *op, const cd_plan *plan) {
    int64_t ext = 1;
    for (int s = 0; s < op->n_in; s++)
        for (int k = 0; k < op->in[s].n; k++) {
            int id = op->in[s].ids[k];
            if (id < 0 || !plan || plan->meta[id].shape.rank < 2) continue;
            const cd_shape *sh = &plan->meta[id].shape;
            for (int d = sh->rank - 2; d < sh->rank; d++)
                if (sh->d[d] > ext) ext = sh->d[d];
        }
    return ext;
}

/* The op table's SPECIAL entries: pool2d (max: exact, avg: an accumulation), calib (fake
 * quantization or a plain cast), lrn, grid_sampler. */
static void special_family(const cd_op *op, cd_op_id id, const cd_plan *plan, cd_bound_spec *spec) {
    switch (id) {
    case CD_OPID_pool2d:
        if (!strcmp(cd_attr_str(op, "pooling_type", "max"), "max"))
            spec->fam = CD_FAM_EXACT;
        else {
            spec->fam = CD_FAM_ACCUMULATE;
            spec->mag_run = true;
            spec->act_ulps = 1;
        }
        return;
    case CD_OPID_calib:
    case CD_OPID_calib_once:
        spec->fam = calib_fakequant(op) ? CD_FAM_ROUNDING : CD_FAM_EXACT;
        spec->quantum = cd_attr_float(op, "scale", 0);
        return;
    case CD_OPID_lrn:
        /* x / (k + alpha/n sum x^2)^beta: n positive squares (gamma_{n+2}), pow scales the
         * base's relative error by beta and adds its own 16 ulp, the division 3 */
        spec->fam = CD_FAM_TRANSCENDENTAL;
        spec->ulps = 20 + fabs(cd_attr_float(op, "beta", 0.75)) * (double)(cd_attr_int(op, "n", 5) + 2);
        spec->K = 2;
        return;
    case CD_OPID_grid_sampler:
        spec->fam = CD_FAM_INTERP;
        spec->K = 8 + 4 * spatial_extent(op, plan);
        return;
    default: spec->fam = CD_FAM_GENERIC; return;
    }
}

/* ---------------------------------------------------------------- Winograd convolutions */

static bool all_ones(const cd_op *op, const char *name) {
    const int64_t *v;
    int n = cd_attr_ints(op, name, &v);
    for (int i = 0; i < n; i++)
        if (v[i] != 1) return false;
    return true;
}

/* The engines' conditions (docs/verdicts.md "Winograd convolutions"). MNN's CPU
 * (ConvolutionFloatFactory.cpp, ConvolutionWinogradImpl::canUseWinograd,
 * ConvolutionPackWinograd::bestWinogradUnit): a square k x k, k > 1, stride 1, dilation 1 conv
 * of each group, not a depthwise one; tiles 4, 6, 8 (4, 6 in fp16) with m = tile - k + 1 from 2 up
 * to sqrt(outputs per thread) (clamped to 2..8), m = 2 only below WINOGRAD_MEMORY_LEVEL 3; which of
 * them its cost model takes is not followed: every one allowed counts. Paddle-Lite ARM (fp32
 * conv_compute.cc, conv_winograd.cc): a 3x3 stride 1, dilation 1 conv of one group; tile 4 under
 * 16 * 8 outputs per thread, 6 under 36 * 8, else 8 (fewer threads: a larger tile). Paddle-Lite
 * OpenCL (conv_image_compute.cc): F(2,3) for a 3x3 stride 1 conv of one group, 32+ channels in and out. */
int cd_local_wino_tiles(const cd_op *op, const cd_plan *plan, const cd_arith *b, int alpha[3]) {
    if (!b->wino || !plan || strcmp(op->type, "conv2d")) return 0;
    /* an int8 kernel (Paddle-Lite's int8 Winograd transforms in integers: exact) keeps its bound */
    if (op->kernel.present && op->kernel.precision == 2) return 0;
    int fid = cd_op_in(op, "Filter", 0), yid = cd_op_out(op, "Output", 0);
    if (fid < 0 || yid < 0 || plan->meta[fid].shape.rank != 4 || plan->meta[yid].shape.rank != 4) return 0;
    const cd_shape *fs = &plan->meta[fid].shape, *ys = &plan->meta[yid].shape;
    int64_t k = fs->d[2], G = cd_attr_int(op, "groups", 1);
    if (k != fs->d[3] || k < 2 || !all_ones(op, "strides") || !all_ones(op, "dilations") || G < 1) return 0;
    int64_t outs = ys->d[2] * ys->d[3];
    int n = 0;
    if (b->wino == CD_WINO_PADDLE_OPENCL) {
        if (k != 3 || G != 1 || fs->d[0] < 32 || fs->d[1] < 32) return 0;
        alpha[n++] = 4;
        return n;
    }
    if (b->wino == CD_WINO_PADDLE_ARM) {
        if (k != 3 || G != 1) return 0;
        int64_t wu = outs / 8;
        int top = wu < 16 ? 4 : wu < 36 ? 6 : 8;
        if (b->wino_alpha > 0 && top > b->wino_alpha) top = b->wino_alpha;
        for (int a = 4; a <= top; a += 2) alpha[n++] = a;
        return n;
    }
    if (b->wino != CD_WINO_MNN || (fs->d[1] == 1 && G > 1)) return 0; /* depthwise: MNN's own kernels */
    int64_t th = b->wino_threads > 0 ? b->wino_threads : 1;
    int64_t max_m = (int64_t)sqrtf((float)((outs + th - 1) / th));
    if (max_m > 8) max_m = 8;
    if (max_m < 2) max_m = 2;
    if (b->wino_max_m > 0 && max_m > b->wino_max_m) max_m = b->wino_max_m;
    int top = b->wino_alpha > 0 ? b->wino_alpha : 8;
    for (int a = 4; a <= top && a <= 8; a += 2) {
        int64_t m = a - k + 1;
        if (m >= 2 && m <= max_m) alpha[n++] = a;
    }
    return n;
}

void cd_local_spec(const cd_graph *g, const cd_plan *plan, int op_index, cd_arith ref, cd_arith b, cd_bound_spec *spec,
                   char *desc, size_t n) {
    const cd_op *op = &g->ops[op_index];
    const char *t = op->type;
    memset(spec, 0, sizeof *spec);
    spec->ref = ref;
    spec->b = b;
    spec->safety = CD_BOUND_SAFETY;
    spec->lipschitz = 1;
    int64_t K = plan ? cd_diag_acc_len(plan, op_index) : 1;
    spec->K = K > 0 ? K : 1;
    const char *an = fused_act_name(op);
    act_info ai = act_of(op, an);
    const cd_op_info *oi = cd_op_info_find(t);
    const cd_op_id id = oi ? oi->id : CD_OPID_COUNT;
    switch (oi ? oi->bound : CD_OPB_GENERIC) {
    case CD_OPB_SPECIAL: special_family(op, id, plan, spec); break;
    case CD_OPB_EXACT: spec->fam = CD_FAM_EXACT; break;
    case CD_OPB_ACCUMULATE:
        spec->fam = CD_FAM_ACCUMULATE;
        spec->mag_run = true;
        /* the source coordinate is computed in float on each side: its rounding moves the
         * interpolation weights by about u * (input extent) */
        if (id == CD_OPID_bilinear_interp || id == CD_OPID_bilinear_interp_v2)
            spec->K = 4 + 4 * spatial_extent(op, plan);
        break;
    case CD_OPB_ELEMENTWISE: /* few correctly rounded operations per element: ulps relative to |y| */
        spec->fam = CD_FAM_ELEMENTWISE;
        spec->ulps = oi->ulps;
        spec->mag_run = (oi->flags & CD_OPL_LINEAR) != 0;
        spec->K = 2;
        break;
    case CD_OPB_TRANSCENDENTAL:
        /* OpenCL built-in accuracy (OpenCL 1.2 §7.4: exp/log 3 ulp, tanh 5, pow 16, erf 16, sin/cos 4,
         * divide 2.5) plus the few roundings of the formula around them */
        spec->fam = CD_FAM_TRANSCENDENTAL;
        spec->ulps = oi->ulps;
        if (ref.trans_ulps > spec->ulps) spec->ulps = ref.trans_ulps;
        if (b.trans_ulps > spec->ulps) spec->ulps = b.trans_ulps;
        spec->K = 2;
        if (id == CD_OPID_hard_sigmoid) {
            spec->fam = CD_FAM_ELEMENTWISE;
            spec->abs_terms = 1 + 2 * fabs(cd_attr_float(op, "offset", 0.5));
        }
        if (id == CD_OPID_hard_swish) {
            spec->fam = CD_FAM_ELEMENTWISE;
            spec->abs_terms = fabs(cd_attr_float(op, "offset", 3));
        }
        /* alpha (exp(x) - 1) for x < 0: exp's error is absolute near 0 (the subtraction
         * cancels), alpha times exp's 4 ulp and the subtraction's */
        if (id == CD_OPID_elu) spec->abs_terms = 6 * fabs(cd_attr_float(op, "alpha", 1));
        /* 0.5 x (1 + erf(x / sqrt 2)) (or tanh): for x < 0 the sum cancels, so erf's error is
         * absolute, up to 0.5 |x| ulps u where 1 + erf is not yet 0 in float (|x| < 5.5): a
         * zoo SVTR block (x = -2.93, y = -0.0049) differed by 4.3e-8 with a bound of 2.4e-8 */
        if (id == CD_OPID_gelu) spec->abs_terms = 2.75 * spec->ulps;
        /* an engine's tanh (Paddle-Lite ARM: from exp, (e^2x - 1)/(e^2x + 1)) cancels near 0:
         * its error there is a few u absolute, not relative to tanh (gru_l1_bi_init's initial
         * state on paddle-lite-arm: 1.8e-8 on a value of 1.4e-4, issue 26) */
        if (id == CD_OPID_tanh && (ref.trans_ulps >= 256 || b.trans_ulps >= 256)) spec->abs_terms = 4;
        /* an engine's approximate exp (cd_arith.exp_rel: MNN ARM's) reaches only what is made from exp */
        if (id != CD_OPID_exp && id != CD_OPID_sigmoid && id != CD_OPID_tanh && id != CD_OPID_swish &&
            id != CD_OPID_silu && id != CD_OPID_elu && id != CD_OPID_gelu && id != CD_OPID_softplus &&
            id != CD_OPID_mish && id != CD_OPID_log_softmax && id != CD_OPID_logsigmoid)
            spec->ref.exp_rel = spec->b.exp_rel = 0;
        break;
    case CD_OPB_NORMALIZE:
        spec->fam = CD_FAM_NORMALIZE;
        spec->ulps = oi->ulps;
        break;
    case CD_OPB_RECURRENT:
    case CD_OPB_NORM: /* the bound is computed per element from the layer's inputs (local_allow.c) */
        spec->fam = oi->bound == CD_OPB_RECURRENT ? CD_FAM_RECURRENT : CD_FAM_NORM;
        spec->mag_run = true; /* the allowance stands where the magnitude would */
        if (spec->fam == CD_FAM_RECURRENT) {
            int xid = cd_op_in(op, "Input", 0);
            int64_t in = xid >= 0 && plan && plan->meta[xid].shape.rank == 3 ? plan->meta[xid].shape.d[2] : 1;
            spec->K = in + cd_attr_int(op, "hidden_size", 1);
        }
        break;
    case CD_OPB_DETECTION: /* detection box arithmetic: roundings per coordinate */
        spec->fam = CD_FAM_DETECTION;
        spec->ulps = oi->ulps;
        /* detection runs on the host in every backend: in fp16, the CPU's half path */
        if (spec->b.half_store && spec->b.u < CD_U16) spec->b.u = CD_U16;
        spec->K = 2;
        break;
    case CD_OPB_GENERIC: /* unreachable for a registered op type (test_families) */ spec->fam = CD_FAM_GENERIC; break;
    }
    /* a fused activation after an accumulation or an elementwise op */
    if (an[0] && spec->fam != CD_FAM_EXACT && spec->fam != CD_FAM_GENERIC) {
        if (ai.L < 0)
            spec->fam = CD_FAM_GENERIC;
        else {
            /* a transcendental activation (8 u or more in the table) as an engine computes it */
            double tu = ref.trans_ulps > b.trans_ulps ? ref.trans_ulps : b.trans_ulps;
            if (ai.ulps >= 8 && tu > ai.ulps) ai.ulps = tu;
            spec->lipschitz = ai.L;
            spec->act_ulps += ai.ulps;
            spec->abs_terms += ai.abs_terms;
            if (spec->fam == CD_FAM_ELEMENTWISE) spec->ulps = spec->ulps * ai.L + ai.ulps;
        }
    }
    /* a Winograd convolution: its roundings (weight, input and output transforms of the largest
     * tile, the product and the channel sum, the bias) in place of the direct dot product's,
     * on the Winograd magnitude (local_mag.c) */
    int wa[3], nw = spec->fam == CD_FAM_ACCUMULATE ? cd_local_wino_tiles(op, plan, &b, wa) : 0;
    if (nw) {
        int fid = cd_op_in(op, "Filter", 0);
        spec->wino_k = cd_wino_roundings(plan->meta[fid].shape.d[1], wa[nw - 1]);
    }
    if (desc && n) {
        int w = snprintf(desc, n, "%s", cd_bound_family_name(spec->fam));
        if (nw && (size_t)w < n)
            w += snprintf(desc + w, n - (size_t)w, " winograd tile %d n=%lld", wa[nw - 1], (long long)spec->wino_k);
        if (spec->fam == CD_FAM_ACCUMULATE || spec->fam == CD_FAM_NORMALIZE || spec->fam == CD_FAM_GENERIC ||
            spec->fam == CD_FAM_RECURRENT || spec->fam == CD_FAM_NORM || spec->fam == CD_FAM_INTERP)
            w += snprintf(desc + w, n > (size_t)w ? n - (size_t)w : 0, " K=%lld", (long long)spec->K);
        if (an[0] && (size_t)w < n) w += snprintf(desc + w, n - (size_t)w, " act=%s L=%g", an, spec->lipschitz);
        if (spec->fam == CD_FAM_ROUNDING && (size_t)w < n)
            snprintf(desc + w, n - (size_t)w, " quantum=%g", spec->quantum);
    }
    (void)ai.shrinks;
}

/* Whether |ref| is a lower bound of the magnitude (the cheap check may pass a layer). */
bool cd_local_cheap_valid(const cd_op *op) {
    if (cd_local_allow_op(op)) return false; /* every element needs its allowance */
    const char *an = fused_act_name(op);
    return act_of(op, an).shrinks && strcmp(op->type, "scale");
}
