/* The local check's op families (docs/verdicts.md): which bound each op type is held to, its
 * accumulation length and fused activation. */
#include "verdict/local_priv.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "diag/diag.h"

/* ---------------------------------------------------------------- op families */

static bool in_list(const char *t, const char *const *list) {
    for (; *list; list++)
        if (!strcmp(t, *list)) return true;
    return false;
}

static const char *const k_exact[] = {
    "feed", "fetch", "io_copy", "io_copy_once", "layout", "layout_once", "concat", "split", "transpose",
    "transpose2", "reshape", "reshape2", "flatten", "flatten2", "flatten_contiguous_range", "squeeze", "squeeze2",
    "unsqueeze", "unsqueeze2", "slice", "strided_slice", "shuffle_channel", "pad2d", "pad3d", "pad", "expand",
    "expand_v2", "expand_as", "expand_as_v2", "tile", "gather", "gather_nd", "stack", "unstack", "shape",
    "fill_constant", "fill_constant_batch_size_like", "fill_any_like", "fill_zeros_like", "assign", "relu",
    "relu6", "clip", "abs", "arg_max", "arg_min", "reduce_max", "reduce_min", "nearest_interp",
    "nearest_interp_v2", "elementwise_max", "elementwise_min", "floor", "ceil", "round", "sign", "top_k",
    "top_k_v2", "range", "lookup_table", "lookup_table_v2", "box_clip", "pixel_shuffle", "space_to_depth",
    "depth_to_space", "roll", "flip", "where", "equal", "not_equal", "less_than", "less_equal", "greater_than",
    "greater_equal", "logical_and", "logical_or", "logical_not", "cast", "one_hot", "one_hot_v2",
    "increment", "thresholded_relu", "hard_shrink", "assign_value", "unbind", "relu_clipped",
    /* detection post-processing: the selected rows are copies of the inputs' boxes and scores,
     * chosen by comparisons the same host code makes on the same inputs */
    "multiclass_nms", "multiclass_nms2", "multiclass_nms3", NULL};
/* few correctly rounded operations per element: budget in units of u (relative to |y|) */
static const struct { const char *type; double ulps; double abs_terms; bool linear; } k_elem[] = {
    {"elementwise_add", 1, 0, true}, {"elementwise_sub", 1, 0, true},
    {"fusion_elementwise_add_activation", 1, 0, true}, {"fusion_elementwise_sub_activation", 1, 0, true},
    {"scale", 2, 0, true}, {"sum", 1, 0, true},
    {"elementwise_mul", 1, 0, false}, {"fusion_elementwise_mul_activation", 1, 0, false},
    {"elementwise_div", 3, 0, false}, {"fusion_elementwise_div_activation", 3, 0, false},
    {"elementwise_mod", 2, 0, false}, {"elementwise_floordiv", 2, 0, false},
    {"leaky_relu", 1, 0, false}, {"prelu", 1, 0, false}, {"square", 1, 0, false}, {"dropout", 1, 0, false},
    {"rsqrt", 4, 0, false}, {"sqrt", 4, 0, false}, {"reciprocal", 3, 0, false},
    {"affine_channel", 2, 0, true},
    /* a selection (exact) followed by the fused activation's own rounding */
    {"fusion_elementwise_max_activation", 0, 0, false}, {"fusion_elementwise_min_activation", 0, 0, false},
    {NULL, 0, 0, false}};
/* OpenCL built-in accuracy (OpenCL 1.2 §7.4: exp/log 3 ulp, tanh 5, pow 16, erf 16, sin/cos 4,
 * divide 2.5) plus the few roundings of the formula around them */
static const struct { const char *type; double ulps; } k_trans[] = {
    {"sigmoid", 8}, {"tanh", 8}, {"exp", 4}, {"log", 4}, {"swish", 10}, {"silu", 10}, {"gelu", 20},
    {"softplus", 8}, {"mish", 20}, {"erf", 20}, {"sin", 8}, {"cos", 8}, {"tan", 12}, {"asin", 8},
    {"acos", 8}, {"atan", 8}, {"pow", 20}, {"elementwise_pow", 20}, {"logsigmoid", 10}, {"log_softmax", 12},
    {"hard_sigmoid", 2}, {"hard_swish", 6}, {"elu", 6}, {NULL, 0}};
/* detection box arithmetic (CD_FAM_DETECTION): roundings per coordinate */
static const struct { const char *type; double ulps; } k_detect[] = {
    {"prior_box", 6}, {"density_prior_box", 8}, {"box_coder", 16}, {"yolo_box", 24}, {NULL, 0}};
/* families whose bound is computed per element from the layer's inputs (local_allow.c) */
static const struct { const char *type; cd_bound_family fam; } k_allow[] = {
    {"rnn", CD_FAM_RECURRENT}, {"layer_norm", CD_FAM_NORM}, {"instance_norm", CD_FAM_NORM},
    {"batch_norm", CD_FAM_NORM}, {"sync_batch_norm", CD_FAM_NORM}, {NULL, CD_FAM_GENERIC}};
static const char *const k_accum[] = {
    "conv2d", "depthwise_conv2d", "conv2d_transpose", "depthwise_conv2d_transpose", "fc", "mul", "matmul",
    "matmul_v2", "bmm", "reduce_sum", "reduce_mean", "mean", "bilinear_interp", "bilinear_interp_v2", NULL};

typedef struct act_info { double L, ulps, abs_terms; bool shrinks; } act_info;

/* The fused activation's Lipschitz constant, own rounding, and whether |act(y)| <= |y| (then
 * |ref| is a lower bound of the pre-activation magnitude: the cheap check is valid). */
static act_info act_of(const cd_op *op, const char *name) {
    if (!name || !name[0] || !strcmp(name, "relu") || !strcmp(name, "relu6") || !strcmp(name, "abs"))
        return (act_info){1, 0, 0, true};
    if (!strcmp(name, "leaky_relu")) return (act_info){1, 1, 0, true};
    if (!strcmp(name, "prelu")) return (act_info){1, 1, 0, false};
    if (!strcmp(name, "hard_swish")) {
        double th = cd_attr_float(op, "hard_swish_threshold", 6), sc = cd_attr_float(op, "hard_swish_scale", 6),
               off = cd_attr_float(op, "hard_swish_offset", 3);
        double L = sc != 0 ? fabs((2 * th - off) / sc) : 1;
        if (!(L >= 1)) L = 1;
        return (act_info){L, 6, fabs(off), th <= sc};
    }
    if (!strcmp(name, "hard_sigmoid")) {
        double sl = cd_attr_float(op, "slope", 0.2), off = cd_attr_float(op, "offset", 0.5);
        return (act_info){fabs(sl), 2, 1 + 2 * fabs(off), false};
    }
    if (!strcmp(name, "sigmoid")) return (act_info){0.25, 8, 0, false};
    if (!strcmp(name, "tanh")) return (act_info){1, 8, 0, true};
    if (!strcmp(name, "swish")) return (act_info){1.1, 10, 0, true};
    if (!strcmp(name, "gelu")) return (act_info){1.13, 20, 0, true};
    /* exp, sqrt and unknown fused activations: no bounded slope */
    return (act_info){-1, 0, 0, false};
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
    return strstr(al, "_to_int8") || strstr(al, "_to_int16") || (!strstr(al, "_to_") && cd_attr_float(op, "scale", 0) > 0);
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

/* Families past the elementwise tables: lrn, elu, detection, grid_sampler, rnn, norms. */
static bool other_family(const cd_op *op, const cd_plan *plan, cd_bound_spec *spec) {
    const char *t = op->type;
    for (int i = 0; k_allow[i].type; i++)
        if (!strcmp(t, k_allow[i].type)) {
            spec->fam = k_allow[i].fam;
            spec->mag_run = true;   /* the allowance stands where the magnitude would */
            if (spec->fam == CD_FAM_RECURRENT) {
                int xid = cd_op_in(op, "Input", 0);
                int64_t in = xid >= 0 && plan && plan->meta[xid].shape.rank == 3 ? plan->meta[xid].shape.d[2] : 1;
                spec->K = in + cd_attr_int(op, "hidden_size", 1);
            }
            return true;
        }
    for (int i = 0; k_detect[i].type; i++)
        if (!strcmp(t, k_detect[i].type)) {
            spec->fam = CD_FAM_DETECTION;
            spec->ulps = k_detect[i].ulps;
            /* detection runs on the host in every backend: in fp16, the CPU's half path */
            if (spec->b.half_store && spec->b.u < CD_U16) spec->b.u = CD_U16;
            spec->K = 2;
            return true;
        }
    if (!strcmp(t, "lrn")) {
        /* x / (k + alpha/n sum x^2)^beta: n positive squares (gamma_{n+2}), pow scales the
         * base's relative error by beta and adds its own 16 ulp, the division 3 */
        spec->fam = CD_FAM_TRANSCENDENTAL;
        spec->ulps = 20 + fabs(cd_attr_float(op, "beta", 0.75)) * (double)(cd_attr_int(op, "n", 5) + 2);
        spec->K = 2;
        return true;
    }
    if (!strcmp(t, "grid_sampler")) {
        spec->fam = CD_FAM_INTERP;
        spec->K = 8 + 4 * spatial_extent(op, plan);
        return true;
    }
    return false;
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
    if (!strcmp(t, "pool2d")) {
        const char *pt = cd_attr_str(op, "pooling_type", "max");
        if (!strcmp(pt, "max")) spec->fam = CD_FAM_EXACT;
        else { spec->fam = CD_FAM_ACCUMULATE; spec->mag_run = true; spec->act_ulps = 1; }
    } else if (!strcmp(t, "calib") || !strcmp(t, "calib_once")) {
        spec->fam = calib_fakequant(op) ? CD_FAM_ROUNDING : CD_FAM_EXACT;
        spec->quantum = cd_attr_float(op, "scale", 0);
    } else if (in_list(t, k_exact)) {
        spec->fam = CD_FAM_EXACT;
    } else if (in_list(t, k_accum)) {
        spec->fam = CD_FAM_ACCUMULATE;
        spec->mag_run = true;
        if (!strncmp(t, "bilinear", 8)) {
            /* the source coordinate is computed in float on each side: its rounding moves the
             * interpolation weights by about u * (input extent) */
            int64_t ext = 1;
            for (int s = 0; s < op->n_in; s++)
                for (int k = 0; k < op->in[s].n; k++) {
                    int id = op->in[s].ids[k];
                    if (id < 0 || !plan || plan->meta[id].shape.rank < 2) continue;
                    const cd_shape *sh = &plan->meta[id].shape;
                    for (int d = sh->rank - 2; d < sh->rank; d++)
                        if (sh->d[d] > ext) ext = sh->d[d];
                }
            spec->K = 4 + 4 * ext;
        }
    } else {
        bool found = false;
        for (int i = 0; k_elem[i].type && !found; i++)
            if (!strcmp(t, k_elem[i].type)) {
                spec->fam = CD_FAM_ELEMENTWISE;
                spec->ulps = k_elem[i].ulps;
                spec->abs_terms = k_elem[i].abs_terms;
                spec->mag_run = k_elem[i].linear;
                spec->K = 2;
                found = true;
            }
        for (int i = 0; k_trans[i].type && !found; i++)
            if (!strcmp(t, k_trans[i].type)) {
                spec->fam = CD_FAM_TRANSCENDENTAL;
                spec->ulps = k_trans[i].ulps;
                if (ref.trans_ulps > spec->ulps) spec->ulps = ref.trans_ulps;
                if (b.trans_ulps > spec->ulps) spec->ulps = b.trans_ulps;
                spec->K = 2;
                if (!strcmp(t, "hard_sigmoid")) {
                    spec->fam = CD_FAM_ELEMENTWISE;
                    spec->abs_terms = 1 + 2 * fabs(cd_attr_float(op, "offset", 0.5));
                }
                if (!strcmp(t, "hard_swish")) {
                    spec->fam = CD_FAM_ELEMENTWISE;
                    spec->abs_terms = fabs(cd_attr_float(op, "offset", 3));
                }
                /* alpha (exp(x) - 1) for x < 0: exp's error is absolute near 0 (the subtraction
                 * cancels), alpha times exp's 4 ulp and the subtraction's */
                if (!strcmp(t, "elu")) spec->abs_terms = 6 * fabs(cd_attr_float(op, "alpha", 1));
                found = true;
            }
        if (!found && !strcmp(t, "softmax")) { spec->fam = CD_FAM_NORMALIZE; spec->ulps = 8; found = true; }
        if (!found) found = other_family(op, plan, spec);
        if (!found) spec->fam = CD_FAM_GENERIC;   /* unreachable for a registered op type (test_bounds) */
    }
    /* a fused activation after an accumulation or an elementwise op */
    if (an[0] && spec->fam != CD_FAM_EXACT && spec->fam != CD_FAM_GENERIC) {
        if (ai.L < 0) spec->fam = CD_FAM_GENERIC;
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
    if (desc && n) {
        int w = snprintf(desc, n, "%s", cd_bound_family_name(spec->fam));
        if (spec->fam == CD_FAM_ACCUMULATE || spec->fam == CD_FAM_NORMALIZE || spec->fam == CD_FAM_GENERIC ||
            spec->fam == CD_FAM_RECURRENT || spec->fam == CD_FAM_NORM || spec->fam == CD_FAM_INTERP)
            w += snprintf(desc + w, n > (size_t)w ? n - (size_t)w : 0, " K=%lld", (long long)spec->K);
        if (an[0] && (size_t)w < n) w += snprintf(desc + w, n - (size_t)w, " act=%s L=%g", an, spec->lipschitz);
        if (spec->fam == CD_FAM_ROUNDING && (size_t)w < n) snprintf(desc + w, n - (size_t)w, " quantum=%g", spec->quantum);
    }
    (void)ai.shrinks;
}

/* Whether |ref| is a lower bound of the magnitude (the cheap check may pass a layer). */
bool cd_local_cheap_valid(const cd_op *op) {
    if (cd_local_allow_op(op)) return false;   /* every element needs its allowance */
    const char *an = fused_act_name(op);
    return act_of(op, an).shrinks && strcmp(op->type, "scale");
}
