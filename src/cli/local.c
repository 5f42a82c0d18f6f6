#include "cli/local.h"
#include "cli/local_int8.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/paddlelite/pl_engine.h"
#include "diag/diag.h"
#include "engine/executor.h"
#include "model/extract.h"
#include "util/fp16.h"

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
    "increment", "thresholded_relu", "hard_shrink", "assign_value", "unbind", NULL};
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
    {NULL, 0, 0, false}};
/* OpenCL built-in accuracy (OpenCL 1.2 §7.4: exp/log 3 ulp, tanh 5, pow 16, erf 16, sin/cos 4,
 * divide 2.5) plus the few roundings of the formula around them */
static const struct { const char *type; double ulps; } k_trans[] = {
    {"sigmoid", 8}, {"tanh", 8}, {"exp", 4}, {"log", 4}, {"swish", 10}, {"silu", 10}, {"gelu", 20},
    {"softplus", 8}, {"mish", 20}, {"erf", 20}, {"sin", 8}, {"cos", 8}, {"tan", 12}, {"asin", 8},
    {"acos", 8}, {"atan", 8}, {"pow", 20}, {"elementwise_pow", 20}, {"logsigmoid", 10}, {"log_softmax", 12},
    {"hard_sigmoid", 2}, {"hard_swish", 6}, {NULL, 0}};
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
    if (strcmp(op->type, "calib")) return false;
    const char *al = op->kernel.present ? op->kernel.alias : "";
    return strstr(al, "_to_int8") || strstr(al, "_to_int16") || (!strstr(al, "_to_") && cd_attr_float(op, "scale", 0) > 0);
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
    } else if (!strcmp(t, "calib")) {
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
                spec->K = 2;
                if (!strcmp(t, "hard_sigmoid")) {
                    spec->fam = CD_FAM_ELEMENTWISE;
                    spec->abs_terms = 1 + 2 * fabs(cd_attr_float(op, "offset", 0.5));
                }
                if (!strcmp(t, "hard_swish")) {
                    spec->fam = CD_FAM_ELEMENTWISE;
                    spec->abs_terms = fabs(cd_attr_float(op, "offset", 3));
                }
                found = true;
            }
        if (!found && !strcmp(t, "softmax")) { spec->fam = CD_FAM_NORMALIZE; spec->ulps = 8; found = true; }
        if (!found) spec->fam = CD_FAM_GENERIC;
    }
    /* a fused activation after an accumulation or an elementwise op */
    if (an[0] && spec->fam != CD_FAM_EXACT && spec->fam != CD_FAM_GENERIC) {
        if (ai.L < 0) spec->fam = CD_FAM_GENERIC;
        else {
            spec->lipschitz = ai.L;
            spec->act_ulps += ai.ulps;
            spec->abs_terms += ai.abs_terms;
            if (spec->fam == CD_FAM_ELEMENTWISE) spec->ulps = spec->ulps * ai.L + ai.ulps;
        }
    }
    if (desc && n) {
        int w = snprintf(desc, n, "%s", cd_bound_family_name(spec->fam));
        if (spec->fam == CD_FAM_ACCUMULATE || spec->fam == CD_FAM_NORMALIZE || spec->fam == CD_FAM_GENERIC)
            w += snprintf(desc + w, n > (size_t)w ? n - (size_t)w : 0, " K=%lld", (long long)spec->K);
        if (an[0] && (size_t)w < n) w += snprintf(desc + w, n - (size_t)w, " act=%s L=%g", an, spec->lipschitz);
        if (spec->fam == CD_FAM_ROUNDING && (size_t)w < n) snprintf(desc + w, n - (size_t)w, " quantum=%g", spec->quantum);
    }
    (void)ai.shrinks;
}

/* Whether |ref| is a lower bound of the magnitude (the cheap check may pass a layer). */
static bool cheap_valid(const cd_op *op) {
    const char *an = fused_act_name(op);
    return act_of(op, an).shrinks && strcmp(op->type, "scale");
}

/* ---------------------------------------------------------------- inputs from the dump */

static const cd_dump_tensor_info *find_tensor(const cd_dump_tensor_info *t, int n, int op_index, const char *name) {
    for (int i = 0; i < n; i++)
        if (t[i].op_index == op_index && !strcmp(t[i].tensor, name)) return &t[i];
    return NULL;
}

cd_status cd_local_load_inputs(const cd_graph *g, const cd_plan *plan, const cd_dump_reader *r, const char *run_a,
                               const cd_extracted *ex, cd_value *ins, cd_shape *in_shapes, char *note,
                               size_t note_len, cd_error *err) {
    cd_dump_tensor_info *ta = NULL;
    int na = 0;
    cd_status st = cd_dump_list_tensors(r, run_a, &ta, &na, err);
    for (int k = 0; !st && k < ex->n_inputs; k++) {
        int src = ex->src_inputs[k];
        const cd_tensor *t = &g->tensors[src];
        in_shapes[k] = plan->meta[src].shape;
        int prod = t->producer;
        const cd_op *pop = prod >= 0 ? &g->ops[prod] : NULL;
        if (!pop || !strcmp(pop->type, "feed")) {
            st = cd_dump_read_input(r, t->name, &ins[k], err);
            continue;
        }
        const cd_dump_tensor_info *ti = find_tensor(ta, na, prod, t->name);
        if (!ti || ti->stats_only) {
            snprintf(note, note_len, "input '%s' (from op #%d) was not captured in full; probe it (--layers all)",
                     t->name, prod);
            break;
        }
        float *f = NULL;
        int64_t n = 0;
        if ((st = cd_dump_read_f32(r, run_a, ti->dataset, &f, &n, err))) break;
        ins[k].dtype = CD_F32;
        ins[k].shape = ti->shape;
        ins[k].data = f;
        ins[k].nbytes = (size_t)n * sizeof(float);
        ins[k].owned = true;
    }
    free(ta);
    return st;
}

/* ---------------------------------------------------------------- the magnitude run */

typedef struct keep1 {
    const cd_graph *g;
    const char *tensor;
    int want_op;
    float *data;
    int64_t n;
} keep1;

static cd_status keep1_hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                           cd_error *err) {
    (void)rep;
    keep1 *k = user;
    if (op_index != k->want_op || k->data || strcmp(k->g->tensors[tensor_id].name, k->tensor)) return CD_OK;
    int64_t n = cd_value_numel(host);
    k->data = malloc((size_t)(n ? n : 1) * sizeof *k->data);
    if (!k->data) return cd_err(err, CD_E_NOMEM, "out of memory");
    if (host->dtype == CD_F32) {
        const float *x = host->data;
        for (int64_t i = 0; i < n; i++) k->data[i] = fabsf(x[i]);
    } else {
        for (int64_t i = 0; i < n; i++) k->data[i] = (float)fabs(cd_value_get(host, i));
    }
    k->n = n;
    return CD_OK;
}

static void set_attr_bool(cd_op *op, const char *name, bool v) {
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, name)) op->attrs[i].i = v;
}

static void clear_attr_str(cd_op *op, const char *name) {
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, name) && op->attrs[i].s) op->attrs[i].s[0] = 0;
}

static void abs_attr_float(cd_op *op, const char *name) {
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, name)) op->attrs[i].f = fabs(op->attrs[i].f);
}

/* The extracted op made to compute sum |w x| + |b|: no activation, subtraction made addition,
 * every float parameter and scale attribute made non-negative. */
static cd_status make_magnitude_op(cd_graph *xg, cd_error *err) {
    int oi = -1;
    for (int i = 0; i < xg->n_ops; i++)
        if (strcmp(xg->ops[i].type, "feed") && strcmp(xg->ops[i].type, "fetch")) oi = i;
    if (oi < 0) return cd_err(err, CD_E_INTERNAL, "magnitude run: the extracted graph has no op");
    cd_op *op = &xg->ops[oi];
    set_attr_bool(op, "with_act", false);
    clear_attr_str(op, "activation_type");
    if (!strncmp(op->type, "fusion_elementwise_", 19)) clear_attr_str(op, "act_type");
    const char *sub[][2] = {{"elementwise_sub", "elementwise_add"},
                            {"fusion_elementwise_sub_activation", "fusion_elementwise_add_activation"}};
    for (int k = 0; k < 2; k++)
        if (!strcmp(op->type, sub[k][0])) {
            char *nt = cd_strdup(sub[k][1]);
            if (!nt) return cd_err(err, CD_E_NOMEM, "out of memory");
            free(op->type);
            op->type = nt;
        }
    abs_attr_float(op, "scale");
    abs_attr_float(op, "bias");
    for (int t = 0; t < xg->n_tensors; t++) {
        cd_tensor *tt = &xg->tensors[t];
        if (!tt->persistable || !tt->data) continue;
        size_t n = tt->nbytes / (cd_dtype_size(tt->dtype) ? cd_dtype_size(tt->dtype) : 1);
        switch (tt->dtype) {
        case CD_F32: { float *x = tt->data; for (size_t i = 0; i < n; i++) x[i] = fabsf(x[i]); break; }
        case CD_F16: { uint16_t *x = tt->data; for (size_t i = 0; i < n; i++) x[i] &= 0x7fff; break; }
        case CD_I8: { int8_t *x = tt->data; for (size_t i = 0; i < n; i++) x[i] = x[i] == -128 ? 127 : (int8_t)(x[i] < 0 ? -x[i] : x[i]); break; }
        case CD_I16: { int16_t *x = tt->data; for (size_t i = 0; i < n; i++) x[i] = x[i] == INT16_MIN ? INT16_MAX : (int16_t)(x[i] < 0 ? -x[i] : x[i]); break; }
        default: break;
        }
    }
    return CD_OK;
}

/* sum |w x| + |b| per output element of layer l, on the CPU in float32 from A's inputs. */
static cd_status magnitude(const cd_local_req *q, const cd_layer_cmp *l, float **mag, int64_t *nmag, char *note,
                           size_t note_len, cd_error *err) {
    cd_session *s = q->s;
    *mag = NULL;
    cd_extracted ex;
    cd_status st = cd_graph_extract_op(s->g, l->op_index, s->plan.meta, &ex, err);
    if (st) return st;
    cd_value *ins = calloc((size_t)ex.n_inputs + 1, sizeof *ins);
    cd_shape *shp = calloc((size_t)ex.n_inputs + 1, sizeof *shp);
    cd_plan xp;
    bool have_plan = false;
    bool *mask = NULL;
    keep1 k = {.tensor = l->tensor, .want_op = -1};
    if (!ins || !shp) { st = cd_err(err, CD_E_NOMEM, "out of memory"); goto done; }
    if ((st = cd_local_load_inputs(s->g, &s->plan, q->r, q->run_a, &ex, ins, shp, note, note_len, err)) || note[0]) goto done;
    for (int i = 0; i < ex.n_inputs; i++) {
        if (ins[i].dtype != CD_F32) continue;
        float *x = ins[i].data;
        int64_t ne = cd_value_numel(&ins[i]);
        for (int64_t e = 0; e < ne; e++) x[e] = fabsf(x[e]);
    }
    if ((st = make_magnitude_op(ex.g, err))) goto done;
    if ((st = cd_plan_build(ex.g, shp, CD_PREC_FP32, &xp, err))) goto done;
    have_plan = true;
    int target = -1;
    for (int i = 0; i < ex.g->n_ops; i++)
        if (strcmp(ex.g->ops[i].type, "feed") && strcmp(ex.g->ops[i].type, "fetch")) target = i;
    mask = calloc((size_t)ex.g->n_ops + 1, 1);
    if (!mask) { st = cd_err(err, CD_E_NOMEM, "out of memory"); goto done; }
    mask[target] = true;
    k.g = ex.g;
    k.want_op = target;
    cd_probe_sink sink = {.user = &k, .hit = keep1_hit};
    cd_exec_opts xo = {.probe_mask = mask, .stop_flag = &cd_stop_flag};
    cd_backend_opts bo = cd_session_backend_opts(s->o, CD_PREC_FP32);
    bo.int8_arm = false; /* magnitudes come from the float path: |w| |x| of dequantized weights */
    cd_backend *b = NULL;
    st = cd_cpu_backend_open(&bo, &b, err);
    if (!st) st = cd_execute(&xp, b, ins, &xo, &sink, err);
    if (b) cd_backend_close(b);
    if (!st && !k.data) snprintf(note, note_len, "the magnitude run produced no '%s'", l->tensor);
    *mag = k.data;
    *nmag = k.n;
    k.data = NULL;
done:
    free(k.data);
    free(mask);
    if (have_plan) cd_plan_free(&xp);
    for (int i = 0; ins && i < ex.n_inputs; i++) cd_value_release(&ins[i]);
    free(ins);
    free(shp);
    cd_graph_free(ex.g);
    return st;
}

/* ---------------------------------------------------------------- magnitude per element */

/* sum |w x| + |b| of single output elements of a conv, fc/mul or scale, from A's input and the
 * plan's parameters: what the lazy check asks for the few elements over the cheap bound. Set up
 * on the first request; any shape or dtype it does not recognise makes it answer NaN, and the
 * caller falls back to the whole magnitude run. */
typedef enum { ME_CONV = 1, ME_FC, ME_SCALE } me_kind;
typedef struct mag_elem {
    const cd_local_req *q;     /* A's input from the dump (the check after the runs), or ... */
    const cd_forcing *force;   /* ... from the forcing record (settling, in B's process) */
    const cd_graph *g;
    const cd_plan *plan;       /* parameters, as the checked side has them */
    int op_index;
    cd_shape out_shape;
    const char *run;           /* the dump run of the input (NULL: q->run_a) */
    bool keep_sign;            /* x as it is, not |x| */
    int state;                 /* 0 not set up, 1 ready, -1 unavailable */
    me_kind kind;
    float *x, *w, *b;          /* owned: A's input, weights, bias (float) */
    int64_t n_out;
    int64_t N, C, H, W, O, Ho, Wo, KH, KW, G, sh, sw, pt, pl, dh, dw;
    int64_t M, K;              /* fc/mul: rows and depth (O columns) */
    double sc, bi;
    bool bias_after;
    int64_t calls, budget;
} mag_elem;

static float *param_f32(const cd_plan *p, int id, int64_t want) {
    if (id < 0 || !p->meta[id].data || cd_value_numel(&p->meta[id]) != want) return NULL;
    float *f = malloc((size_t)(want ? want : 1) * sizeof *f);
    for (int64_t i = 0; f && i < want; i++) f[i] = (float)fabs(cd_value_get(&p->meta[id], i));
    return f;
}

static int64_t ints_at(const cd_op *op, const char *name, int k, int64_t dflt) {
    const int64_t *v;
    int n = cd_attr_ints(op, name, &v);
    return n > k ? v[k] : n > 0 ? v[0] : dflt;
}

static void same_pad1(int64_t in, int64_t stride, int64_t k, int64_t *b) {
    int64_t out = (in + stride - 1) / stride, tot = (out - 1) * stride + k - in;
    *b = tot > 0 ? tot / 2 : 0;
}

static bool me_conv(mag_elem *m, const cd_op *op, const cd_plan *p, const cd_value *x) {
    int fid = cd_op_in(op, "Filter", 0), bid = cd_op_in(op, "Bias", 0);
    if (x->shape.rank != 4 || fid < 0 || p->meta[fid].shape.rank != 4 || cd_op_in(op, "ResidualData", 0) >= 0)
        return false;
    const cd_shape *fs = &p->meta[fid].shape;
    m->N = x->shape.d[0]; m->C = x->shape.d[1]; m->H = x->shape.d[2]; m->W = x->shape.d[3];
    m->O = fs->d[0]; m->KH = fs->d[2]; m->KW = fs->d[3];
    m->G = cd_attr_int(op, "groups", 1);
    m->sh = ints_at(op, "strides", 0, 1); m->sw = ints_at(op, "strides", 1, 1);
    m->dh = ints_at(op, "dilations", 0, 1); m->dw = ints_at(op, "dilations", 1, 1);
    const int64_t *pv;
    int np = cd_attr_ints(op, "paddings", &pv);
    m->pt = np > 0 ? pv[0] : 0;
    m->pl = np == 4 ? pv[2] : np >= 2 ? pv[1] : m->pt;
    const char *alg = cd_attr_str(op, "padding_algorithm", "EXPLICIT");
    if (!strcmp(alg, "VALID")) m->pt = m->pl = 0;
    else if (!strcmp(alg, "SAME")) {
        m->dh = m->dw = 1;
        same_pad1(m->H, m->sh, m->KH, &m->pt);
        same_pad1(m->W, m->sw, m->KW, &m->pl);
    }
    if (m->G <= 0 || m->C % m->G || m->O % m->G || fs->d[1] * m->G != m->C || m->sh <= 0 || m->sw <= 0 ||
        m->dh <= 0 || m->dw <= 0)
        return false;
    /* the output extent from the layer's own shape: [N, O, Ho, Wo] */
    const cd_shape *os = &m->out_shape;
    if (os->rank != 4 || os->d[0] != m->N || os->d[1] != m->O) return false;
    m->Ho = os->d[2]; m->Wo = os->d[3];
    if (!(m->w = param_f32(p, fid, cd_shape_numel(fs)))) return false;
    if (bid >= 0 && !(m->b = param_f32(p, bid, m->O))) return false;
    return true;
}

static bool me_fc(mag_elem *m, const cd_op *op, const cd_plan *p, const cd_value *x) {
    bool fc = !strcmp(op->type, "fc");
    int wid = cd_op_in(op, fc ? "W" : "Y", 0), bid = fc ? cd_op_in(op, "Bias", 0) : -1;
    if (wid < 0 || p->meta[wid].shape.rank != 2) return false;
    int64_t cols = fc ? cd_attr_int(op, "in_num_col_dims", 1) : cd_attr_int(op, "x_num_col_dims", 1);
    if (!fc && cd_attr_int(op, "y_num_col_dims", 1) != 1) return false;
    if (cols < 1 || cols >= x->shape.rank + (x->shape.rank == 1)) return false;
    m->M = 1;
    for (int i = 0; i < cols && i < x->shape.rank; i++) m->M *= x->shape.d[i];
    int64_t nx = cd_value_numel(x);
    m->K = m->M ? nx / m->M : 0;
    m->O = p->meta[wid].shape.d[1];
    if (m->K != p->meta[wid].shape.d[0] || m->M * m->O != m->n_out) return false;
    if (!(m->w = param_f32(p, wid, m->K * m->O))) return false;
    if (bid >= 0 && !(m->b = param_f32(p, bid, m->O))) return false;
    return true;
}

/* A's value of activation xid as float32 (owned), from the record or the dump. */
static bool me_load_x(mag_elem *m, int xid, cd_value *out) {
    cd_error e2 = {0};
    memset(out, 0, sizeof *out);
    if (m->force) return cd_forcing_has(m->force, xid) && !cd_forcing_get(m->force, xid, CD_F32, true, out, &e2);
    cd_session *s = m->q->s;
    cd_extracted ex;
    if (cd_graph_extract_op(s->g, m->op_index, s->plan.meta, &ex, &e2)) return false;
    cd_value *ins = calloc((size_t)ex.n_inputs + 1, sizeof *ins);
    cd_shape *shp = calloc((size_t)ex.n_inputs + 1, sizeof *shp);
    char note[256] = "";
    bool ok = false;
    if (ins && shp &&
        !cd_local_load_inputs(s->g, &s->plan, m->q->r, m->run ? m->run : m->q->run_a, &ex, ins, shp, note, sizeof note, &e2) &&
        !note[0])
        for (int k = 0; k < ex.n_inputs && !ok; k++)
            if (ex.src_inputs[k] == xid && ins[k].dtype == CD_F32) {
                *out = ins[k];
                ins[k].owned = false;
                ok = true;
            }
    for (int i = 0; ins && i < ex.n_inputs; i++) cd_value_release(&ins[i]);
    free(ins);
    free(shp);
    cd_graph_free(ex.g);
    if (ok && !m->keep_sign) {
        float *x = out->data;
        for (int64_t i = 0, n = cd_value_numel(out); i < n; i++) x[i] = fabsf(x[i]);
    }
    return ok;
}

static void me_setup(mag_elem *m) {
    m->state = -1;
    const cd_op *op = &m->g->ops[m->op_index];
    const char *t = op->type;
    me_kind kind = !strcmp(t, "conv2d") || !strcmp(t, "depthwise_conv2d") ? ME_CONV
                 : !strcmp(t, "fc") || !strcmp(t, "mul") ? ME_FC : !strcmp(t, "scale") ? ME_SCALE : 0;
    if (!kind) return;
    if (kind == ME_SCALE && cd_op_in(op, "ScaleTensor", 0) >= 0) return;
    int xid = cd_op_in(op, kind == ME_CONV ? "Input" : kind == ME_FC ? (strcmp(t, "fc") ? "X" : "Input") : "X", 0);
    cd_value x;
    if (xid < 0 || !me_load_x(m, xid, &x)) return;
    bool ok;
    m->kind = kind;
    if (kind == ME_CONV) ok = me_conv(m, op, m->plan, &x);
    else if (kind == ME_FC) ok = me_fc(m, op, m->plan, &x);
    else {
        m->sc = fabs(cd_attr_float(op, "scale", 1));
        m->bi = fabs(cd_attr_float(op, "bias", 0));
        m->bias_after = cd_attr_bool(op, "bias_after_scale", true);
        ok = cd_value_numel(&x) == m->n_out;
    }
    if (ok) {
        m->x = x.data;   /* |x| already (x itself with keep_sign) */
        x.owned = false;
        m->state = 1;
    }
    cd_value_release(&x);
}

static double mag_at(void *user, int64_t i) {
    mag_elem *m = user;
    if (m->state == 0) me_setup(m);
    if (m->state < 0 || i < 0 || i >= m->n_out || ++m->calls > m->budget) return NAN;
    double acc = 0;
    if (m->kind == ME_SCALE) {
        double xv = m->x[i];
        return m->bias_after ? m->sc * xv + m->bi : m->sc * (xv + m->bi);
    }
    if (m->kind == ME_FC) {
        int64_t r = i / m->O, c = i % m->O;
        const float *xr = m->x + r * m->K;
        for (int64_t k = 0; k < m->K; k++) acc += (double)xr[k] * m->w[k * m->O + c];
        return acc + (m->b ? m->b[c] : 0);
    }
    int64_t ow = i % m->Wo, oh = (i / m->Wo) % m->Ho, o = (i / (m->Wo * m->Ho)) % m->O, n = i / (m->Wo * m->Ho * m->O);
    int64_t cpg = m->C / m->G, g = o / (m->O / m->G);
    for (int64_t c = 0; c < cpg; c++) {
        const float *xc = m->x + ((n * m->C + g * cpg + c) * m->H) * m->W;
        const float *wc = m->w + ((o * cpg + c) * m->KH) * m->KW;
        for (int64_t kh = 0; kh < m->KH; kh++) {
            int64_t ih = oh * m->sh - m->pt + kh * m->dh;
            if (ih < 0 || ih >= m->H) continue;
            for (int64_t kw = 0; kw < m->KW; kw++) {
                int64_t iw = ow * m->sw - m->pl + kw * m->dw;
                if (iw >= 0 && iw < m->W) acc += (double)wc[kh * m->KW + kw] * xc[ih * m->W + iw];
            }
        }
    }
    return acc + (m->b ? m->b[o] : 0);
}

static void me_free(mag_elem *m) {
    free(m->x);
    free(m->w);
    free(m->b);
}

/* ---------------------------------------------------------------- free-run evidence */

typedef struct { float r; int64_t i; } ranked;
static int by_ratio_desc(const void *a, const void *b) {
    float x = ((const ranked *)a)->r, y = ((const ranked *)b)->r;
    return (x < y) - (x > y);
}

/* A conv/fc layer run again (not settled) whose local check passed may still show, in the free
 * run, an output wrong beyond everything its inputs explain: a racy or state-dependent kernel
 * that happened to be right on the re-run. For the elements furthest over their cheap bound
 * (at most 4096), |B_free - A| is held to the local bound on A's inputs plus the bound of what
 * the input difference can do through the op: L * sum |w| |x_B - x_A| (the bias cancels), with
 * the arithmetic on the larger magnitude. Returns whether some element exceeds it; fills r. */
static bool free_evidence(const cd_local_req *q, const cd_layer_cmp *l, const cd_bound_spec *spec, const float *ref,
                          int64_t n, cd_local_result *r) {
    const cd_op *op = &q->s->g->ops[l->op_index];
    if (spec->fam != CD_FAM_ACCUMULATE || (strcmp(op->type, "conv2d") && strcmp(op->type, "depthwise_conv2d") &&
                                           strcmp(op->type, "fc") && strcmp(op->type, "mul")))
        return false;
    float *vb = NULL;
    int64_t nb = 0;
    cd_error e2 = {0};
    if (cd_dump_read_f32(q->r, q->run_free, l->dataset_b, &vb, &nb, &e2) || nb != n) { free(vb); return false; }
    double absmax = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabs(ref[i]) > absmax) absmax = fabs(ref[i]);
    ranked *cand = malloc((size_t)(n ? n : 1) * sizeof *cand);
    int64_t nc = 0;
    for (int64_t i = 0; cand && i < n; i++) {
        double a = ref[i], e = fabs(a - (double)vb[i]);
        if (!isfinite(a) || !isfinite(vb[i]) || e == 0) continue;   /* NaN/Inf: the free compare's business */
        double b = cd_bound_elem(spec, a, NAN, NAN, absmax);
        if (!(b > 0) || e > b) cand[nc++] = (ranked){(float)(b > 0 ? e / b : INFINITY), i};
    }
    bool found = false;
    mag_elem ma = {.q = q, .g = q->s->g, .plan = &q->s->plan, .op_index = l->op_index, .out_shape = l->shape, .n_out = n,
                   .budget = INT64_MAX};
    mag_elem md = ma, xa = ma;
    md.run = q->run_free;
    md.keep_sign = xa.keep_sign = true;
    if (nc) {
        if (nc > 4096) { qsort(cand, (size_t)nc, sizeof *cand, by_ratio_desc); nc = 4096; }
        me_setup(&ma);
        me_setup(&md);
        me_setup(&xa);
        int64_t nx = ma.kind == ME_CONV ? ma.N * ma.C * ma.H * ma.W : ma.M * ma.K;
        bool ok = ma.state > 0 && md.state > 0 && xa.state > 0 && md.kind == ma.kind &&
                  (md.kind == ME_CONV ? md.N * md.C * md.H * md.W : md.M * md.K) == nx;
        if (ok) {
            for (int64_t k = 0; k < nx; k++) md.x[k] = fabsf(md.x[k] - xa.x[k]);   /* |x_B - x_A| */
            free(md.b);
            md.b = NULL;
        }
        double L = spec->lipschitz > 0 ? spec->lipschitz : 1;
        for (int64_t c = 0; ok && c < nc; c++) {
            int64_t i = cand[c].i;
            double mA = mag_at(&ma, i), mD = mag_at(&md, i);
            if (isnan(mA) || isnan(mD)) break;
            double allowed = cd_bound_elem(spec, ref[i], mA + mD, NAN, absmax) + L * mD;
            double e = fabs((double)ref[i] - vb[i]), ratio = allowed > 0 ? e / allowed : INFINITY;
            if (ratio > 1) {
                r->exceed++;
                if (!found || ratio > r->ratio) { r->ratio = ratio; r->err = e; r->bound = allowed; r->worst = i; }
                found = true;
            }
        }
    }
    me_free(&ma);
    me_free(&md);
    me_free(&xa);
    free(cand);
    free(vb);
    return found;
}

/* The first float input of op l (rounding ops: where the ties are), from A's run. */
static cd_status op_input(const cd_local_req *q, const cd_layer_cmp *l, int64_t want_n, float **x, cd_error *err) {
    cd_session *s = q->s;
    *x = NULL;
    cd_extracted ex;
    cd_status st = cd_graph_extract_op(s->g, l->op_index, s->plan.meta, &ex, err);
    if (st) return st;
    cd_value *ins = calloc((size_t)ex.n_inputs + 1, sizeof *ins);
    cd_shape *shp = calloc((size_t)ex.n_inputs + 1, sizeof *shp);
    char note[256] = "";
    if (!ins || !shp) st = cd_err(err, CD_E_NOMEM, "out of memory");
    else st = cd_local_load_inputs(s->g, &s->plan, q->r, q->run_a, &ex, ins, shp, note, sizeof note, err);
    for (int i = 0; !st && !note[0] && i < ex.n_inputs && !*x; i++)
        if (ins[i].dtype == CD_F32 && cd_value_numel(&ins[i]) == want_n) {
            *x = ins[i].data;
            ins[i].owned = false;
        }
    for (int i = 0; ins && i < ex.n_inputs; i++) cd_value_release(&ins[i]);
    free(ins);
    free(shp);
    cd_graph_free(ex.g);
    return st;
}

/* ---------------------------------------------------------------- the check */

/* A layer settled by the free run: B's own output was within the bound (checked in B's process,
 * cd_local_settle), so the local comparison is the free-run one. */
static void settled_result(const cd_local_req *q, cd_layer_cmp *l, const cd_settle_info *si) {
    cd_bound_spec spec;
    char desc[120];
    cd_local_spec(q->s->g, &q->s->plan, l->op_index, q->ref, q->b, &spec, desc, sizeof desc);
    snprintf(l->family, sizeof l->family, "%s", cd_bound_family_name(spec.fam));
    l->has_local = true;
    l->loc = l->m;
    l->loc_err = si->err;
    l->loc_bound = si->bound;
    l->loc_ratio = si->ratio;
    l->loc_exceed = 0;
    l->loc_worst = si->worst;
    l->loc_pass = true;
    snprintf(l->loc_note, sizeof l->loc_note, "%s; settled by the free run (its own output is within this bound; "
             "not run again)%s", desc, si->ratio_upper ? "; ratio: an upper bound" : "");
}

cd_status cd_local_check_layers(const cd_local_req *q, cd_analysis *an, cd_error *err) {
    cd_dump_tensor_info *tl = NULL, *tr = NULL;
    int nl = 0, nr = 0;
    bool sep_ref = strcmp(q->run_ref, q->run_a) != 0;
    cd_status st = cd_dump_list_tensors(q->r, q->run_local, &tl, &nl, err);
    if (!st && sep_ref) st = cd_dump_list_tensors(q->r, q->run_ref, &tr, &nr, err);
    if (st) { free(tl); free(tr); return st; }
    an->local_ran = true;
    snprintf(an->local_ref, sizeof an->local_ref, "%s", q->run_ref);
    an->n_local = 0;
    const cd_graph *g = q->s->g;
    bool int8_ref = cd_local_run_int8_arm(q->r, sep_ref ? q->run_ref : q->run_a); /* docs/int8.md */
    for (int i = 0; i < an->n_layers && !st; i++) {
        cd_layer_cmp *l = &an->layers[i];
        l->has_local = false;
        l->loc_worst = -1;
        if (l->op_index < 0 || l->op_index >= g->n_ops) continue;
        const cd_dump_tensor_info *v = find_tensor(tl, nl, l->op_index, l->tensor);
        const cd_dump_tensor_info *rr = sep_ref ? find_tensor(tr, nr, l->op_index, l->tensor) : NULL;
        /* settled by the free run: B's own output stands for the local one (it lies within the
         * bound on inputs that already differ from A's, docs/verdicts.md) */
        bool settled = !v && !sep_ref && q->settled && q->settled[l->op_index] && q->run_free && l->dataset_b[0];
        if (!settled && (!v || v->stats_only || (sep_ref && (!rr || rr->stats_only)))) {
            snprintf(l->loc_note, sizeof l->loc_note, "%s", !v ? "not run locally: an input was not captured, or "
                     "its shape changed at run time (dynamic shapes)" : "not run locally: statistics-only dump");
            continue;
        }
        if (settled && q->settled_info) {
            settled_result(q, l, &q->settled_info[l->op_index]);
            an->n_local++;
            continue;
        }
        float *ref = NULL, *val = NULL, *mag = NULL, *x = NULL;
        int64_t n1 = 0, n2 = 0, nm = 0;
        st = cd_dump_read_f32(q->r, sep_ref ? q->run_ref : q->run_a, sep_ref ? rr->dataset : l->dataset_a, &ref, &n1, err);
        if (!st) st = cd_dump_read_f32(q->r, settled ? q->run_free : q->run_local, settled ? l->dataset_b : v->dataset, &val,
                                       &n2, err);
        if (!st && n1 != n2) {
            snprintf(l->loc_note, sizeof l->loc_note, "not comparable: %lld values locally, %lld in the reference",
                     (long long)n2, (long long)n1);
        } else if (!st) {
            cd_bound_spec spec;
            char desc[120];
            cd_local_spec(g, &q->s->plan, l->op_index, q->ref, q->b, &spec, desc, sizeof desc);
            if (int8_ref) cd_local_spec_int8(g, l->op_index, q->r, q->run_a, &spec, desc, sizeof desc);
            snprintf(l->family, sizeof l->family, "%s", cd_bound_family_name(spec.fam));
            double ua = -1, ur = -1;
            if (q->user_tol) {
                cd_tol t = cd_policy_for(q->policy, l->op_type, l->layer, NULL, 0);
                ua = t.atol + t.range_atol * 0;
                ur = t.rtol;
            }
            if (spec.fam == CD_FAM_ROUNDING) st = op_input(q, l, n1, &x, err);
            cd_local_result res;
            char mnote[256] = "";
            bool used_mag = false, mag_run = false;
            mag_elem me = {.q = q, .g = g, .plan = &q->s->plan, .op_index = l->op_index, .out_shape = l->shape,
                           .n_out = n1, .budget = n1 / 8 + 4096};
            const cd_op *op = &g->ops[l->op_index];
            if (!st && spec.mag_run && !cheap_valid(op)) {
                /* |ref| is no lower bound here: every element needs its magnitude */
                if (!strcmp(op->type, "scale") && (mag = malloc((size_t)(n1 ? n1 : 1) * sizeof *mag))) {
                    me.budget = n1;
                    for (int64_t e = 0; e < n1; e++) mag[e] = (float)mag_at(&me, e);
                    used_mag = me.state > 0;
                    if (!used_mag) { free(mag); mag = NULL; }
                }
                if (!used_mag) {
                    st = magnitude(q, l, &mag, &nm, mnote, sizeof mnote, err);
                    used_mag = mag_run = mag && nm == n1;
                }
            }
            if (!st)
                cd_local_check_lazy(&spec, ref, val, used_mag ? mag : NULL, used_mag ? NULL : mag_at, &me, x, n1, ua,
                                    ur, me.budget, &res);
            if (!st && res.needs_mag && !used_mag) {
                /* some element's magnitude could not be had one by one: the whole run */
                st = magnitude(q, l, &mag, &nm, mnote, sizeof mnote, err);
                if (!st && mag && nm == n1) {
                    used_mag = mag_run = true;
                    cd_local_check(&spec, ref, val, mag, x, n1, ua, ur, &res);
                }
            }
            me_free(&me);
            cd_local_result fe = {.worst = -1};
            bool evidence = !st && res.pass && q->settled && !settled && free_evidence(q, l, &spec, ref, n1, &fe);
            if (evidence) res = (cd_local_result){.err = fe.err, .bound = fe.bound, .ratio = fe.ratio,
                                                  .exceed = fe.exceed, .worst = fe.worst, .pass = false};
            if (!st) {
                l->has_local = true;
                an->n_local++;
                cd_metrics_compute(ref, val, n1, &l->shape, q->b.half_store, &l->tol, &l->loc);
                l->loc_err = res.err;
                l->loc_bound = res.bound;
                l->loc_ratio = res.ratio;
                l->loc_exceed = res.exceed;
                l->loc_worst = res.worst;
                l->loc_pass = res.pass;
                char mel[96] = "";
                if (!used_mag && res.mag_elems)
                    snprintf(mel, sizeof mel, "; magnitude sum|w x|+|b| of the %lld elements nearest the bound%s",
                             (long long)res.mag_elems, res.ratio_upper ? " (ratio: an upper bound)" : "");
                snprintf(l->loc_note, sizeof l->loc_note, "%s%s%s%s%s%s%s%s", desc,
                         evidence ? "; free run off beyond bound + L sum|w||xB-xA| though the re-run passed "
                                    "(racy or state-dependent kernel?)" : "",
                         settled ? "; settled by the free run (its own output is within this bound; not run again)" : "",
                         mag_run ? "; magnitude sum|w x|+|b| from a CPU run" : used_mag ? "; magnitude per element" : "", mel,
                         mnote[0] ? "; " : "", mnote, res.nonfinite ? "; NaN/Inf where the reference is finite" : "");
            }
        }
        free(ref); free(val); free(mag); free(x);
    }
    free(tl);
    free(tr);
    return st;
}

/* ---------------------------------------------------------------- settling (in B's process) */

/* The op's first activation input holding n values, from the record (rounding ops). */
static float *record_input(const cd_local_settle_ctx *c, const cd_forcing *force, const cd_op *op, int64_t n) {
    for (int si = 0; si < op->n_in; si++)
        for (int k = 0; k < op->in[si].n; k++) {
            int id = op->in[si].ids[k];
            const cd_shape *sh = id >= 0 ? cd_forcing_shape(force, id) : NULL;
            if (!sh || !cd_exec_is_activation(c->plan, id) || cd_shape_numel(sh) != n) continue;
            cd_value v;
            cd_error e2 = {0};
            if (cd_forcing_get(force, id, CD_F32, false, &v, &e2)) return NULL;
            v.owned = false;
            return v.data;
        }
    return NULL;
}

bool cd_local_settle(void *user, const cd_forcing *force, int op_index, int tensor, const cd_value *out,
                     cd_settle_info *info) {
    const cd_local_settle_ctx *c = user;
    if (!force || out->dtype != CD_F32 || !cd_forcing_has(force, tensor)) return false;
    const cd_shape *sh = cd_forcing_shape(force, tensor);
    if (!sh || !cd_shape_eq(sh, &out->shape)) return false;
    const cd_op *op = &c->g->ops[op_index];
    cd_bound_spec spec;
    cd_local_spec(c->g, c->plan, op_index, c->ref, c->b, &spec, NULL, 0);
    bool dense = spec.mag_run && !cheap_valid(op);
    if (dense && strcmp(op->type, "scale")) return false;   /* would need a whole magnitude run */
    int64_t n = cd_value_numel(out);
    cd_value a;
    cd_error e2 = {0};
    if (cd_forcing_get(force, tensor, CD_F32, false, &a, &e2)) return false;
    float *x = spec.fam == CD_FAM_ROUNDING ? record_input(c, force, op, n) : NULL;
    mag_elem me = {.force = force, .g = c->g, .plan = c->plan, .op_index = op_index, .out_shape = out->shape, .n_out = n,
                   .budget = n / 8 + 4096};
    float *mag = NULL;
    bool ok = !(spec.fam == CD_FAM_ROUNDING && !x);
    if (ok && dense) {
        me.budget = n;
        ok = (mag = malloc((size_t)(n ? n : 1) * sizeof *mag)) != NULL;
        for (int64_t e = 0; ok && e < n; e++) ok = !isnan(mag[e] = (float)mag_at(&me, e));
    }
    cd_local_result res;
    if (ok) {
        /* pass or fail is all that settling needs: magnitudes only for elements over the
         * cheap bound (max_calls 0) */
        cd_local_check_lazy(&spec, a.data, out->data, mag, mag ? NULL : mag_at, &me, x, n, -1, -1, 0, &res);
        ok = res.pass && !res.needs_mag && res.nonfinite == 0;
        if (ok && info)
            *info = (cd_settle_info){.err = res.err, .bound = res.bound, .ratio = res.ratio, .worst = res.worst,
                                     .ratio_upper = res.ratio_upper || (!mag && res.mag_elems == 0 && spec.mag_run)};
    }
    me_free(&me);
    free(mag);
    free(x);
    cd_value_release(&a);
    return ok;
}

bool cd_local_enabled(const cd_cli_opts *o) {
    /* a whole-model engine as run B cannot run one layer on A's inputs (docs/paddle-lite.md) */
    if (o->n_backends == 2 && cd_pl_is_backend(o->backends[1])) return false;
    return strcmp(o->isolate_mode, "none") && strcmp(o->dump_mode, "stats");
}
