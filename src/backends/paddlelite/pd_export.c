/* Paddle inference model writer (combined format), see pd_export.h.
 *
 * Field numbers are those of Paddle's framework.proto (proto2), as Paddle-Lite reads it
 * (lite/core/framework.proto at 3d329c95):
 *   ProgramDesc    blocks 1 (BlockDesc), version 4 (Version)
 *   Version        version 1 (int64)
 *   BlockDesc      idx 1, parent_idx 2 (int32), vars 3 (VarDesc), ops 4 (OpDesc)
 *   VarDesc        name 1, type 2 (VarType), persistable 3 (bool)
 *   VarType        type 1 (enum), lod_tensor 3 (LoDTensorDesc)
 *   LoDTensorDesc  tensor 1 (TensorDesc), lod_level 2
 *   TensorDesc     data_type 1 (enum), dims 2 (repeated int64)
 *   OpDesc         inputs 1, outputs 2 (Var), type 3, attrs 4 (Attr)
 *   OpDesc.Var     parameter 1, arguments 2 (repeated string)
 *   OpDesc.Attr    name 1, type 2, i 3, f 4, s 5, ints 6, floats 7, strings 8, b 10,
 *                  bools 11, block_idx 12, l 13, blocks_idx 14, longs 15, float64s 16,
 *                  float64 19
 * Enum values: VarType.Type FP32 5, ..., LOD_TENSOR 7, FEED_MINIBATCH 9, FETCH_LIST 10
 * (the FlatBuffers schema of .nb files uses the same numbers, graph.h cd_dtype_to_fb);
 * AttrType is the numbering of cd_attr_type.
 * Repeated scalars are written unpacked (the proto2 default); required fields always.
 *
 * Parameter record (lite/model_parser/pb/tensor_io.cc, LoDTensorDeserializer):
 *   u32 version 0 | u64 lod_level 0 | u32 tensor version 0 | i32 desc size |
 *   TensorDesc bytes | raw data (numel * element size, little-endian) */
#include "backends/paddlelite/pd_export.h"
#include "engine/plan.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PB_VARINT 0
#define PB_I64 1
#define PB_LEN 2
#define PB_I32 5

#define VT_LOD_TENSOR 7
#define VT_FEED 9
#define VT_FETCH 10
#define VT_FP32 5

typedef struct {
    uint8_t *b;
    size_t len, cap;
    bool oom;
} pbuf;

static void pb_raw(pbuf *p, const void *d, size_t n) {
    if (p->oom) return;
    if (p->len + n > p->cap) {
        size_t nc = p->cap ? p->cap : 256;
        while (nc < p->len + n) nc *= 2;
        uint8_t *q = realloc(p->b, nc);
        if (!q) {
            p->oom = true;
            return;
        }
        p->b = q;
        p->cap = nc;
    }
    if (n) memcpy(p->b + p->len, d, n);
    p->len += n;
}

static void pb_varint(pbuf *p, uint64_t v) {
    uint8_t t[10];
    int n = 0;
    do {
        t[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[n] |= 0x80;
        n++;
    } while (v);
    pb_raw(p, t, (size_t)n);
}

static void pb_key(pbuf *p, int field, int wt) { pb_varint(p, ((uint64_t)field << 3) | (uint64_t)wt); }
/* int32/int64/enum/bool: negative values are sign-extended to 64 bits (10 bytes), as
 * protobuf encodes int32. */
static void pb_int(pbuf *p, int field, int64_t v) {
    pb_key(p, field, PB_VARINT);
    pb_varint(p, (uint64_t)v);
}
static void pb_f32(pbuf *p, int field, float v) {
    uint8_t t[4];
    memcpy(t, &v, 4);
    pb_key(p, field, PB_I32);
    pb_raw(p, t, 4);
}
static void pb_f64(pbuf *p, int field, double v) {
    uint8_t t[8];
    memcpy(t, &v, 8);
    pb_key(p, field, PB_I64);
    pb_raw(p, t, 8);
}
static void pb_bytes(pbuf *p, int field, const void *d, size_t n) {
    pb_key(p, field, PB_LEN);
    pb_varint(p, n);
    pb_raw(p, d, n);
}
static void pb_str(pbuf *p, int field, const char *s) { pb_bytes(p, field, s ? s : "", s ? strlen(s) : 0); }
/* Appends child as a length-delimited field and frees it. */
static void pb_msg(pbuf *p, int field, pbuf *child) {
    if (child->oom) p->oom = true;
    pb_bytes(p, field, child->b, child->len);
    free(child->b);
    memset(child, 0, sizeof *child);
}

/* ---- what the exported program looks like ---- */

typedef struct {
    cd_dtype *dtype;           /* per tensor id: element type of the exported VarDesc (see act_dtypes) */
    char **ename;              /* per tensor id: exported variable name (owned; aliases point to their source's) */
    int *alias;                /* per tensor id: the tensor whose name it takes (itself when not a pass-through) */
    bool *skip_op;             /* per op: left out (pass-through) */
    int *kind;                 /* per tensor id: VT_LOD_TENSOR, VT_FEED or VT_FETCH */
    const cd_shape *act_shape; /* opts->act_shape (may be NULL) */
} plan;

static bool is_passthrough(const cd_op *op, bool strip_quant) {
    static const char *const types[] = {"io_copy", "io_copy_once", "layout", "layout_once", NULL};
    for (int i = 0; types[i]; i++)
        if (!strcmp(op->type, types[i])) return true;
    return strip_quant && (!strcmp(op->type, "calib") || !strcmp(op->type, "calib_once"));
}

/* The only connected input and output tensor of op, or -1. */
static int single_id(const cd_slot *s, int n) {
    int id = -1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s[i].n; k++) {
            if (s[i].ids[k] < 0) continue;
            if (id >= 0) return -2;
            id = s[i].ids[k];
        }
    return id;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* <Slot><k>_scale (Input0_scale, Filter0_scale, Output0_scale, ...), docs/nb-format.md §6.3. */
static bool slot_scale_attr(const char *n) {
    if (!ends_with(n, "_scale")) return false;
    size_t len = strlen(n) - 6;
    if (len < 2) return false;
    size_t i = len;
    while (i > 0 && n[i - 1] >= '0' && n[i - 1] <= '9') i--;
    return i < len && i > 0;
}

static bool drop_attr(const cd_attr *a, const cd_pd_export_opts *o) {
    if (!o->keep_kernel_attr && !strcmp(a->name, "__@kernel_type_attr@__")) return true;
    if (!o->strip_quant) return false;
    return !strcmp(a->name, "enable_int8") || !strcmp(a->name, "bit_length") || !strcmp(a->name, "quantization_type") ||
        ends_with(a->name, "_quant_scale") || slot_scale_attr(a->name);
}

static void plan_free(plan *p, int nt) {
    if (p->ename)
        for (int t = 0; t < nt; t++)
            if (p->alias[t] == t) free(p->ename[t]);
    free(p->ename);
    free(p->dtype);
    free(p->alias);
    free(p->skip_op);
    free(p->kind);
}

static void act_dtypes(const cd_graph *g, const cd_pd_export_opts *o, plan *p);

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(**(const char *const *const *)a, **(const char *const *const *)b);
}

static cd_status make_plan(const cd_graph *g, const cd_pd_export_opts *o, plan *p, cd_pd_export_info *info,
                           cd_error *err) {
    int nt = g->n_tensors;
    p->ename = cd_calloc((size_t)nt + 1, sizeof *p->ename, err);
    p->alias = cd_calloc((size_t)nt + 1, sizeof *p->alias, err);
    p->kind = cd_calloc((size_t)nt + 1, sizeof *p->kind, err);
    p->skip_op = cd_calloc((size_t)g->n_ops + 1, sizeof *p->skip_op, err);
    p->dtype = cd_calloc((size_t)nt + 1, sizeof *p->dtype, err);
    if (!p->ename || !p->alias || !p->kind || !p->skip_op || !p->dtype) return err->code;
    p->act_shape = o->act_shape;
    for (int t = 0; t < nt; t++) {
        p->alias[t] = t;
        p->kind[t] = VT_LOD_TENSOR;
    }
    /* Pass-throughs, in execution order so that chains (io_copy -> layout) collapse. */
    for (int oi = 0; oi < g->n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        if (!strcmp(op->type, "feed")) {
            int x = cd_op_in(op, "X", 0);
            if (x >= 0) p->kind[x] = VT_FEED;
        } else if (!strcmp(op->type, "fetch")) {
            int y = cd_op_out(op, "Out", 0);
            if (y >= 0) p->kind[y] = VT_FETCH;
        }
        if (!is_passthrough(op, o->strip_quant)) continue;
        int in = single_id(op->in, op->n_in), out = single_id(op->out, op->n_out);
        if (in < 0 || out < 0)
            return cd_err(err, CD_E_UNSUPPORTED,
                          "op #%d %s: a %s op with more than one input or output cannot be exported", oi, op->name,
                          op->type);
        p->alias[out] = p->alias[in];
        p->skip_op[oi] = true;
        info->n_dropped_ops++;
    }
    /* Extra fetch ops write the "fetch" list too: it keeps its FETCH_LIST type when the graph
     * handed over holds none of its own fetch ops (a prefix of a model, cut for bisection). */
    for (int t = 0; t < nt && o->n_extra_fetch; t++)
        if (p->kind[t] == VT_LOD_TENSOR && !strcmp(g->tensors[t].name, "fetch") && !g->tensors[t].persistable)
            p->kind[t] = VT_FETCH;
    for (int t = 0; t < nt; t++) {
        if (p->alias[t] != t) continue;
        const cd_tensor *x = &g->tensors[t];
        char buf[64];
        size_t n = strlen(x->name);
        if (x->version == 0 || p->kind[t] != VT_LOD_TENSOR) {
            buf[0] = 0;
        } else {
            snprintf(buf, sizeof buf, ".cdv%d", x->version);
            info->n_renamed++;
        }
        p->ename[t] = malloc(n + strlen(buf) + 1);
        if (!p->ename[t]) return cd_err(err, CD_E_NOMEM, "out of memory");
        memcpy(p->ename[t], x->name, n);
        strcpy(p->ename[t] + n, buf);
    }
    for (int t = 0; t < nt; t++)
        if (p->alias[t] != t) p->ename[t] = p->ename[p->alias[t]];
    act_dtypes(g, o, p);
    return CD_OK;
}

/* Ops whose outputs are integer or bool whatever their inputs are (or say their own type). */
static bool int_output_op(const cd_op *op, const char *slot) {
    static const char *const types[] = {
        "shape",         "arg_max",     "arg_min",      "cast",        "fill_constant", "range",
        "size",          "equal",       "not_equal",    "less_than",   "less_equal",    "greater_than",
        "greater_equal", "logical_and", "logical_or",   "logical_not", "logical_xor",   "where_index",
        "one_hot",       "one_hot_v2",  "assign_value", NULL};
    for (int i = 0; types[i]; i++)
        if (!strcmp(op->type, types[i])) return true;
    static const char *const slots[] = {"Indices", "Index", "NmsRoisNum", "RoisNum", "XShape", "Mask", NULL};
    for (int i = 0; slots[i]; i++)
        if (!strcmp(slot, slots[i])) return true;
    return false;
}

static bool is_float(cd_dtype t) { return t == CD_F32 || t == CD_F16 || t == CD_F64; }

/* The .nb program declares a variable's type once per name, but Paddle-Lite's memory
 * optimizer reuses names across types: a float activation may carry the name (and the
 * declared INT64 type) of an earlier shape tensor. Opt would then pick kernels for the wrong
 * type. Activations written by an op that reads a float tensor are therefore declared
 * FP32, except for the outputs of ops that make integers (int_output_op); outputs of ops
 * that read only integer tensors take their first input's type; fill_constant's is its dtype
 * attribute (an LSTM's initial c, sized by shape tensors, under the name of an INT shape
 * tensor was declared INT and never fetched: its rnn could not be checked locally); the rest
 * keep the declared type. Propagated in execution order. */
static void act_dtypes(const cd_graph *g, const cd_pd_export_opts *o, plan *p) {
    for (int t = 0; t < g->n_tensors; t++) p->dtype[t] = g->tensors[t].dtype;
    for (int t = 0; t < g->n_tensors; t++)
        if (o->param_f32 && o->param_f32[t]) p->dtype[t] = CD_F32;
    for (int oi = 0; oi < g->n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        bool float_in = false;
        int first_in = -1;
        for (int s = 0; s < op->n_in; s++)
            for (int k = 0; k < op->in[s].n; k++) {
                int id = op->in[s].ids[k];
                if (id >= 0 && is_float(p->dtype[id])) float_in = true;
                if (id >= 0 && first_in < 0 && p->kind[id] == VT_LOD_TENSOR) first_in = id;
            }
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id < 0 || g->tensors[id].persistable) continue;
                if (p->skip_op[oi]) {
                    int in = single_id(op->in, op->n_in);
                    if (in >= 0) p->dtype[id] = p->dtype[in];
                    continue;
                }
                int fill_t = -1; /* fill_constant*: the dtype attribute says, not the (reused) name */
                if (!strncmp(op->type, "fill_constant", 13) && cd_op_attr(op, "dtype"))
                    fill_t = cd_dtype_from_fb((int)cd_attr_int(op, "dtype", 5));
                if (fill_t >= 0)
                    p->dtype[id] = (cd_dtype)fill_t;
                else if (!strcmp(op->type, "shape") && is_float(p->dtype[id]))
                    p->dtype[id] = CD_I32; /* shape: INT32 */
                else if (float_in && !is_float(p->dtype[id]) && !int_output_op(op, op->out[s].name))
                    p->dtype[id] = CD_F32;
                /* and the other way: slice/concat/... of integer tensors (shape arithmetic)
                 * under a name that a float tensor had first */
                else if (!float_in && first_in >= 0 && is_float(p->dtype[id]) && !int_output_op(op, op->out[s].name))
                    p->dtype[id] = p->dtype[first_in];
                if (o->strip_quant && (p->dtype[id] == CD_I8 || p->dtype[id] == CD_I16)) p->dtype[id] = CD_F32;
            }
    }
}

/* ---- messages ---- */

static void tensor_desc(pbuf *p, int dtype_enum, const int64_t *dims, int rank) {
    pb_int(p, 1, dtype_enum);
    for (int i = 0; i < rank; i++) pb_int(p, 2, dims[i]);
}

/* The shape a variable is declared with: the given activation shape, else the .nb's. */
static const cd_shape *decl_shape(const cd_graph *g, const plan *pl, int t) {
    const cd_tensor *x = &g->tensors[t];
    if (pl->act_shape && !x->persistable && pl->act_shape[t].rank >= 0) return &pl->act_shape[t];
    return &x->shape;
}

static void var_desc(pbuf *p, const cd_graph *g, const plan *pl, int t) {
    const cd_tensor *x = &g->tensors[t];
    const cd_shape *shape = decl_shape(g, pl, t);
    pb_str(p, 1, pl->ename[t]);
    pbuf vt = {0};
    pb_int(&vt, 1, pl->kind[t]);
    if (pl->kind[t] == VT_LOD_TENSOR) {
        pbuf lt = {0}, td = {0};
        int dt = cd_dtype_to_fb(pl->dtype[t]);
        if (dt < 0) dt = VT_FP32;
        tensor_desc(&td, dt, shape->d, shape->rank);
        pb_msg(&lt, 1, &td);
        pb_int(&lt, 2, 0);
        pb_msg(&vt, 3, &lt);
    }
    pb_msg(p, 2, &vt);
    if (x->persistable || pl->kind[t] != VT_LOD_TENSOR) pb_int(p, 3, 1);
}

static cd_status attr_msg(pbuf *p, const cd_op *op, int oi, const cd_attr *a, cd_error *err) {
    pb_str(p, 1, a->name);
    pb_int(p, 2, a->type);
    switch (a->type) {
    case CD_ATTR_INT:
        if (a->i < INT32_MIN || a->i > INT32_MAX)
            return cd_err(err, CD_E_MODEL, "op #%d %s: INT attribute '%s' = %lld does not fit int32", oi, op->name,
                          a->name, (long long)a->i);
        pb_int(p, 3, a->i);
        break;
    case CD_ATTR_FLOAT: pb_f32(p, 4, (float)a->f); break;
    case CD_ATTR_STRING: pb_str(p, 5, a->s); break;
    case CD_ATTR_INTS:
        for (int k = 0; k < a->n; k++) {
            if (a->ints[k] < INT32_MIN || a->ints[k] > INT32_MAX)
                return cd_err(err, CD_E_MODEL, "op #%d %s: INTS attribute '%s' element %d does not fit int32", oi,
                              op->name, a->name, k);
            pb_int(p, 6, a->ints[k]);
        }
        break;
    case CD_ATTR_FLOATS:
        for (int k = 0; k < a->n; k++) pb_f32(p, 7, (float)a->floats[k]);
        break;
    case CD_ATTR_STRINGS:
        for (int k = 0; k < a->n; k++) pb_str(p, 8, a->strings[k]);
        break;
    case CD_ATTR_BOOL: pb_int(p, 10, a->i != 0); break;
    case CD_ATTR_BOOLS:
        for (int k = 0; k < a->n; k++) pb_int(p, 11, a->ints[k] != 0);
        break;
    case CD_ATTR_BLOCK: pb_int(p, 12, a->i); break;
    case CD_ATTR_LONG: pb_int(p, 13, a->i); break;
    case CD_ATTR_BLOCKS:
        for (int k = 0; k < a->n; k++) pb_int(p, 14, a->ints[k]);
        break;
    case CD_ATTR_LONGS:
        for (int k = 0; k < a->n; k++) pb_int(p, 15, a->ints[k]);
        break;
    case CD_ATTR_FLOAT64S:
        for (int k = 0; k < a->n; k++) pb_f64(p, 16, a->floats[k]);
        break;
    case CD_ATTR_FLOAT64: pb_f64(p, 19, a->f); break;
    default:
        return cd_err(err, CD_E_UNSUPPORTED, "op #%d %s: attribute '%s' of type %d cannot be exported", oi, op->name,
                      a->name, (int)a->type);
    }
    return CD_OK;
}

/* Fused activations that Paddle-Lite's x86 float conv does not implement (its conv_utils
 * knows relu, relu6, leaky_relu, hard_swish; others abort or, on some paths, are not
 * applied): such convs are exported as conv + a separate activation op, which every target
 * has. Returns the activation op type, or NULL to keep the op as it is. */
static const char *unfused_act(const cd_op *op, const cd_pd_export_opts *o) {
    if (o->keep_fused_act) return NULL;
    if (strcmp(op->type, "conv2d") && strcmp(op->type, "depthwise_conv2d")) return NULL;
    if (!cd_attr_bool(op, "with_act", false)) return NULL;
    const char *act = cd_attr_str(op, "act_type", "");
    static const char *const acts[] = {"hard_sigmoid", "sigmoid", "tanh", "abs", NULL};
    for (int i = 0; acts[i]; i++)
        if (!strcmp(act, acts[i])) return acts[i];
    return NULL;
}

static bool act_attr(const char *n) {
    return !strcmp(n, "with_act") || !strcmp(n, "act_type") || !strcmp(n, "fuse_relu") || !strcmp(n, "slope") ||
        !strcmp(n, "offset");
}

/* OpenCL-only fusion (docs/nb-format.md §9): conv2d with SecondInput and fuse_elementwise_op_type
 * adds (or multiplies...) SecondInput after the activation. Paddle-Lite's x86 and ARM convs
 * ignore it, so it is exported as a separate elementwise op. Returns its type or NULL. */
static const char *unfused_eltwise(const cd_op *op, const cd_pd_export_opts *o) {
    if (o->keep_fused_act) return NULL;
    if (strcmp(op->type, "conv2d") && strcmp(op->type, "depthwise_conv2d")) return NULL;
    if (cd_op_in(op, "SecondInput", 0) < 0) return NULL;
    const char *t = cd_attr_str(op, "fuse_elementwise_op_type", "");
    return *t ? t : "elementwise_add";
}

/* Name "<exported output name><suffix>" (caller frees). */
static char *suffixed(const plan *pl, int out, const char *suffix) {
    const char *n = pl->ename[out];
    char *r = malloc(strlen(n) + strlen(suffix) + 1);
    if (r) {
        strcpy(r, n);
        strcat(r, suffix);
    }
    return r;
}

static void slots_msg(pbuf *p, int field, const cd_slot *s, int n, const plan *pl, const char *out_rename,
                      const char *skip_slot) {
    for (int i = 0; i < n; i++) {
        if (skip_slot && !strcmp(s[i].name, skip_slot)) continue;
        pbuf v = {0};
        pb_str(&v, 1, s[i].name);
        for (int k = 0; k < s[i].n; k++)
            pb_str(&v, 2,
                   out_rename && !strcmp(s[i].name, "Output") ? out_rename
                       : s[i].ids[k] >= 0                     ? pl->ename[s[i].ids[k]]
                                                              : "");
        pb_msg(p, field, &v);
    }
}

/* One OpDesc{type, X=[x], (Y=[y]), Out=[out]} with optional float attributes. */
static void simple_op(pbuf *blk, const char *type, const char *x, const char *y, const char *out,
                      const char *const *fnames, const double *fvals, int nf, bool axis) {
    pbuf a = {0}, v = {0};
    pb_str(&v, 1, "X");
    pb_str(&v, 2, x);
    pb_msg(&a, 1, &v);
    if (y) {
        pb_str(&v, 1, "Y");
        pb_str(&v, 2, y);
        pb_msg(&a, 1, &v);
    }
    pb_str(&v, 1, "Out");
    pb_str(&v, 2, out);
    pb_msg(&a, 2, &v);
    pb_str(&a, 3, type);
    for (int i = 0; i < nf; i++) {
        pbuf at = {0};
        pb_str(&at, 1, fnames[i]);
        pb_int(&at, 2, CD_ATTR_FLOAT);
        pb_f32(&at, 4, (float)fvals[i]);
        pb_msg(&a, 4, &at);
    }
    if (axis) {
        pbuf at = {0};
        pb_str(&at, 1, "axis");
        pb_int(&at, 2, CD_ATTR_INT);
        pb_int(&at, 3, -1);
        pb_msg(&a, 4, &at);
    }
    pb_msg(blk, 4, &a);
}

/* Appends the op's OpDesc (BlockDesc field 4) to blk: one, or up to three for a conv whose
 * fusions are undone (conv -> "<out>.cdpre" -> activation -> "<out>.cdact" -> elementwise with
 * SecondInput -> out). */
static cd_status op_msgs(pbuf *blk, const cd_graph *g, int oi, const cd_pd_export_opts *o, const plan *pl, int *n_ops,
                         cd_error *err) {
    const cd_op *op = &g->ops[oi];
    const char *act = unfused_act(op, o), *elt = unfused_eltwise(op, o);
    int out = act || elt ? cd_op_out(op, "Output", 0) : -1;
    char *pre = NULL, *mid = NULL;
    if (out >= 0) {
        pre = suffixed(pl, out, ".cdpre");
        mid = act && elt ? suffixed(pl, out, ".cdact") : NULL;
        if (!pre || (act && elt && !mid)) {
            free(pre);
            free(mid);
            return cd_err(err, CD_E_NOMEM, "out of memory");
        }
    } else {
        act = elt = NULL;
    }
    pbuf q = {0};
    slots_msg(&q, 1, op->in, op->n_in, pl, NULL, elt ? "SecondInput" : NULL);
    slots_msg(&q, 2, op->out, op->n_out, pl, pre, NULL);
    pb_str(&q, 3, op->type);
    for (int i = 0; i < op->n_attr; i++) {
        const char *an = op->attrs[i].name;
        if (drop_attr(&op->attrs[i], o) || (act && act_attr(an)) || (elt && !strcmp(an, "fuse_elementwise_op_type")))
            continue;
        pbuf a = {0};
        if (attr_msg(&a, op, oi, &op->attrs[i], err)) {
            free(a.b);
            free(q.b);
            free(pre);
            free(mid);
            return err->code;
        }
        pb_msg(&q, 4, &a);
    }
    /* Attributes Opt's op descriptors require that a .nb may lack (Paddle-Lite's own runtime
     * reads them with defaults): fill_constant's force_cpu (op_desc.h GetAttr aborts without) */
    if (!strcmp(op->type, "fill_constant") && !cd_op_attr(op, "force_cpu")) {
        pbuf a = {0};
        pb_str(&a, 1, "force_cpu");
        pb_int(&a, 2, CD_ATTR_BOOL);
        pb_int(&a, 10, 0);
        pb_msg(&q, 4, &a);
    }
    pb_msg(blk, 4, &q);
    (*n_ops)++;
    if (act) {
        static const char *const names[] = {"slope", "offset"};
        double vals[2] = {cd_attr_float(op, "slope", 0.2), cd_attr_float(op, "offset", 0.5)};
        simple_op(blk, act, pre, NULL, elt ? mid : pl->ename[out], names, vals, !strcmp(act, "hard_sigmoid") ? 2 : 0,
                  false);
        (*n_ops)++;
    }
    if (elt) {
        simple_op(blk, elt, act ? mid : pre, pl->ename[cd_op_in(op, "SecondInput", 0)], pl->ename[out], NULL, NULL, 0,
                  true);
        (*n_ops)++;
    }
    free(pre);
    free(mid);
    return CD_OK;
}

/* Tensor ids of the exported variables (one per exported name), sorted by name. */
static cd_status var_list(const cd_graph *g, const plan *pl, int **out, int *n_out, cd_error *err) {
    int nt = g->n_tensors;
    const char ***keys = cd_calloc((size_t)nt + 1, sizeof *keys, err);
    int *ids = cd_calloc((size_t)nt + 1, sizeof *ids, err);
    if (!keys || !ids) {
        free(keys);
        free(ids);
        return err->code;
    }
    int n = 0;
    for (int t = 0; t < nt; t++)
        if (pl->alias[t] == t) keys[n++] = (const char **)&pl->ename[t];
    qsort(keys, (size_t)n, sizeof *keys, cmp_str_ptr);
    int m = 0;
    for (int i = 0; i < n; i++) {
        int t = (int)((char **)keys[i] - pl->ename);
        if (m > 0 && !strcmp(pl->ename[ids[m - 1]], pl->ename[t])) {
            /* Same exported name: only feed/fetch (every fetch writes "fetch") may repeat. */
            if (pl->kind[t] == VT_LOD_TENSOR || pl->kind[ids[m - 1]] == VT_LOD_TENSOR) {
                free(keys);
                free(ids);
                return cd_err(err, CD_E_MODEL, "two variables would both be exported as '%s' (rename clash)",
                              pl->ename[t]);
            }
            continue;
        }
        ids[m++] = t;
    }
    free(keys);
    *out = ids;
    *n_out = m;
    return CD_OK;
}

#define MARK_SCALE "cldiff_int8_marker.scale"
#define MARK_ZP "cldiff_int8_marker.zero_point"
#define MARK_Q "cldiff_int8_marker.q"
#define MARK_DQ "cldiff_int8_marker.dq"

/* Record of the marker's Scale (FP32 [1] = 1) or ZeroPoint (INT32 [1] = 0). */
static void marker_param(pbuf *p, int which) {
    uint32_t v0 = 0;
    uint64_t lod = 0;
    const int64_t one = 1;
    pb_raw(p, &v0, 4);
    pb_raw(p, &lod, 8);
    pb_raw(p, &v0, 4);
    pbuf td = {0};
    tensor_desc(&td, which ? 2 : VT_FP32, &one, 1);
    int32_t dlen = (int32_t)td.len;
    pb_raw(p, &dlen, 4);
    pb_raw(p, td.b, td.len);
    free(td.b);
    float f = 1.0f;
    int32_t z = 0;
    if (which)
        pb_raw(p, &z, 4);
    else
        pb_raw(p, &f, 4);
}

static cd_status write_param(pbuf *p, const cd_graph *g, const cd_pd_export_opts *o, int t, cd_error *err) {
    const cd_tensor *x = &g->tensors[t];
    int64_t numel = cd_shape_numel(&x->shape);
    if (numel < 0) return cd_err(err, CD_E_MODEL, "parameter '%s': bad shape", x->name);
    const void *data = x->data;
    size_t nbytes = x->nbytes;
    int dt = cd_dtype_to_fb(x->dtype);
    if (o->param_f32 && o->param_f32[t]) {
        data = o->param_f32[t];
        nbytes = (size_t)numel * 4;
        dt = VT_FP32;
    } else if (dt < 0) {
        return cd_err(err, CD_E_UNSUPPORTED, "parameter '%s': element type %s cannot be exported", x->name,
                      cd_dtype_name(x->dtype));
    } else if (nbytes < (size_t)numel * cd_dtype_size(x->dtype)) {
        return cd_err(err, CD_E_MODEL, "parameter '%s': %zu data bytes for %lld elements", x->name, nbytes,
                      (long long)numel);
    } else {
        nbytes = (size_t)numel * cd_dtype_size(x->dtype);
    }
    uint32_t v0 = 0;
    uint64_t lod = 0;
    pb_raw(p, &v0, 4);
    pb_raw(p, &lod, 8);
    pb_raw(p, &v0, 4);
    pbuf td = {0};
    tensor_desc(&td, dt, x->shape.d, x->shape.rank);
    if (td.oom) {
        p->oom = true;
        return CD_OK;
    }
    int32_t dlen = (int32_t)td.len;
    pb_raw(p, &dlen, 4);
    pb_raw(p, td.b, td.len);
    free(td.b);
    pb_raw(p, data, nbytes);
    return CD_OK;
}

cd_status cd_pd_export_mem(const cd_graph *g, const cd_pd_export_opts *opts, uint8_t **program, size_t *program_len,
                           uint8_t **params, size_t *params_len, cd_pd_export_info *info, cd_error *err) {
    cd_pd_export_opts dflt = {0};
    const cd_pd_export_opts *o = opts ? opts : &dflt;
    cd_pd_export_info local = {0};
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    *program = *params = NULL;
    *program_len = *params_len = 0;
    plan pl = {0};
    int *vars = NULL, nv = 0, n_extra_vars = 0;
    pbuf prog = {0}, blk = {0}, par = {0};
    cd_status st = make_plan(g, o, &pl, info, err);
    if (!st) st = var_list(g, &pl, &vars, &nv, err);
    if (st) goto done;
    pb_int(&blk, 1, 0);
    pb_int(&blk, 2, -1);
    for (int i = 0; i < nv; i++) {
        pbuf v = {0};
        var_desc(&v, g, &pl, vars[i]);
        pb_msg(&blk, 3, &v);
    }
    for (int oi = 0; oi < g->n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        const char *act = pl.skip_op[oi] ? NULL : unfused_act(op, o),
                   *elt = pl.skip_op[oi] ? NULL : unfused_eltwise(op, o);
        int out = act || elt ? cd_op_out(op, "Output", 0) : -1;
        if (out < 0) continue;
        for (int k = 0; k < 1 + (act && elt); k++) {
            char *name = suffixed(&pl, out, k ? ".cdact" : ".cdpre");
            if (!name) {
                st = cd_err(err, CD_E_NOMEM, "out of memory");
                goto done;
            }
            pbuf v = {0}, vt = {0}, lt = {0}, td = {0};
            pb_str(&v, 1, name);
            pb_int(&vt, 1, VT_LOD_TENSOR);
            const cd_shape *os = decl_shape(g, &pl, out);
            tensor_desc(&td, VT_FP32, os->d, os->rank);
            pb_msg(&lt, 1, &td);
            pb_msg(&vt, 3, &lt);
            pb_msg(&v, 2, &vt);
            pb_msg(&blk, 3, &v);
            free(name);
            n_extra_vars++;
        }
        info->n_unfused++;
    }
    if (o->int8_marker) {
        if (g->n_inputs < 1) {
            st = cd_err(err, CD_E_USAGE, "--int8-marker: the model has no input");
            goto done;
        }
        static const char *const names[] = {MARK_SCALE, MARK_ZP, MARK_Q, MARK_DQ};
        for (int k = 0; k < 4; k++) {
            pbuf v = {0}, vt = {0}, lt = {0}, td = {0};
            const int64_t one = 1;
            pb_str(&v, 1, names[k]);
            pb_int(&vt, 1, VT_LOD_TENSOR);
            const cd_tensor *in = &g->tensors[g->inputs[0]];
            if (k < 2)
                tensor_desc(&td, k == 0 ? VT_FP32 : 2 /* INT32 */, &one, 1);
            else
                tensor_desc(&td, VT_FP32, in->shape.d, in->shape.rank);
            pb_msg(&lt, 1, &td);
            pb_msg(&vt, 3, &lt);
            pb_msg(&v, 2, &vt);
            if (k < 2) pb_int(&v, 3, 1);
            pb_msg(&blk, 3, &v);
            n_extra_vars++;
        }
    }
    info->n_vars = nv + n_extra_vars;
    for (int oi = 0; oi < g->n_ops; oi++) {
        if (pl.skip_op[oi]) continue;
        if ((st = op_msgs(&blk, g, oi, o, &pl, &info->n_ops, err))) goto done;
    }
    if (o->int8_marker) {
        /* quantize_linear + dequantize_linear on the first input, consumed by nothing:
         * Opt sees a quantized program (IsQuantizedMode) and adds its int8 places; its
         * lite_quant_dequant_fuse_pass then removes the pair. */
        for (int k = 0; k < 2; k++) {
            pbuf a = {0}, v = {0}, at = {0};
            static const char *const slot_in[] = {"X", "Scale", "ZeroPoint"};
            const char *args[] = {k ? MARK_Q : pl.ename[g->inputs[0]], MARK_SCALE, MARK_ZP};
            for (int j = 0; j < 3; j++) {
                pb_str(&v, 1, slot_in[j]);
                pb_str(&v, 2, args[j]);
                pb_msg(&a, 1, &v);
            }
            pb_str(&v, 1, "Y");
            pb_str(&v, 2, k ? MARK_DQ : MARK_Q);
            pb_msg(&a, 2, &v);
            pb_str(&a, 3, k ? "dequantize_linear" : "quantize_linear");
            pb_str(&at, 1, "bit_length");
            pb_int(&at, 2, CD_ATTR_INT);
            pb_int(&at, 3, 8);
            pb_msg(&a, 4, &at);
            pb_str(&at, 1, "quant_axis");
            pb_int(&at, 2, CD_ATTR_INT);
            pb_int(&at, 3, -1);
            pb_msg(&a, 4, &at);
            pb_msg(&blk, 4, &a);
            info->n_ops++;
        }
    }
    for (int k = 0; k < o->n_extra_fetch; k++) {
        int t = o->extra_fetch[k];
        if (t < 0 || t >= g->n_tensors) {
            st = cd_err(err, CD_E_USAGE, "extra fetch: no tensor #%d", t);
            goto done;
        }
        pbuf op = {0}, v = {0}, a = {0};
        pb_str(&v, 1, "X");
        pb_str(&v, 2, pl.ename[t]);
        pb_msg(&op, 1, &v);
        pb_str(&v, 1, "Out");
        pb_str(&v, 2, "fetch");
        pb_msg(&op, 2, &v);
        pb_str(&op, 3, "fetch");
        pb_str(&a, 1, "col");
        pb_int(&a, 2, CD_ATTR_INT);
        pb_int(&a, 3, g->n_outputs + k);
        pb_msg(&op, 4, &a);
        pb_msg(&blk, 4, &op);
        info->n_ops++;
    }
    pb_msg(&prog, 1, &blk);
    pbuf ver = {0};
    pb_int(&ver, 1, g->program_version);
    pb_msg(&prog, 4, &ver);
    /* vars is sorted by exported name: the parameter records go in that order, the
     * marker's two records merged in by name. */
    int mk = o->int8_marker ? 0 : 2;
    for (int i = 0; i <= nv; i++) {
        while (mk < 2 && (i == nv || strcmp(mk ? MARK_ZP : MARK_SCALE, pl.ename[vars[i]]) < 0)) {
            marker_param(&par, mk);
            info->n_params++;
            mk++;
        }
        if (i == nv) break;
        int t = vars[i];
        if (!g->tensors[t].persistable || pl.kind[t] != VT_LOD_TENSOR) continue;
        if (!g->tensors[t].data) {
            st = cd_err(err, CD_E_MODEL, "parameter '%s' has no data", g->tensors[t].name);
            goto done;
        }
        if ((st = write_param(&par, g, o, t, err))) goto done;
        info->n_params++;
    }
    if (prog.oom || par.oom) {
        st = cd_err(err, CD_E_NOMEM, "out of memory exporting the model");
        goto done;
    }
    *program = prog.b;
    *program_len = prog.len;
    *params = par.b;
    *params_len = par.len;
    info->program_bytes = prog.len;
    info->params_bytes = par.len;
    prog.b = par.b = NULL;
done:
    free(prog.b);
    free(blk.b);
    free(par.b);
    free(vars);
    plan_free(&pl, g->n_tensors);
    return st;
}

cd_status cd_pd_export_dtypes(const cd_graph *g, const cd_pd_export_opts *opts, cd_dtype *out, cd_error *err) {
    cd_pd_export_opts dflt = {0};
    cd_pd_export_info info = {0};
    plan pl = {0};
    cd_status st = make_plan(g, opts ? opts : &dflt, &pl, &info, err);
    if (!st) memcpy(out, pl.dtype, sizeof *out * (size_t)g->n_tensors);
    plan_free(&pl, g->n_tensors);
    return st;
}

cd_status cd_pd_export_infer_shapes(const cd_graph *g, const cd_shape *in_shapes, cd_shape **out, char *note,
                                    size_t note_len, cd_error *err) {
    *out = NULL;
    if (note && note_len) note[0] = 0;
    int ni = g->n_inputs;
    cd_shape *a = cd_calloc((size_t)ni + 1, sizeof *a, err), *b = cd_calloc((size_t)ni + 1, sizeof *b, err);
    cd_shape *res = cd_calloc((size_t)g->n_tensors + 1, sizeof *res, err);
    if (!a || !b || !res) {
        free(a);
        free(b);
        free(res);
        return err->code;
    }
    for (int k = 0; k < ni; k++) {
        const cd_shape *decl = &g->tensors[g->inputs[k]].shape;
        if (in_shapes)
            a[k] = in_shapes[k];
        else {
            a[k] = *decl;
            for (int d = 0; d < a[k].rank; d++)
                if (a[k].d[d] < 0) a[k].d[d] = d == 0 ? 1 : 64;
        }
        b[k] = a[k];
        for (int d = 0; d < b[k].rank && d < decl->rank; d++)
            if (decl->d[d] < 0) b[k].d[d] += d == 0 ? 1 : 32;
    }
    cd_plan pa, pb;
    cd_error ea = {0}, eb = {0};
    if (cd_plan_build(g, a, CD_PREC_FP32, &pa, &ea)) {
        if (note && note_len)
            snprintf(note, note_len,
                     "no shape inference (%s); variables keep the .nb's declared shapes, which can "
                     "be another variable's (give --shape)",
                     ea.msg);
        free(a);
        free(b);
        free(res);
        return CD_OK;
    }
    bool have_b = cd_plan_build(g, b, CD_PREC_FP32, &pb, &eb) == CD_OK;
    if (!have_b && note && note_len)
        snprintf(note, note_len,
                 "second shape inference failed (%s): activations are declared with the shapes at "
                 "the first input shape, no dim -1",
                 eb.msg);
    for (int t = 0; t < g->n_tensors; t++) {
        res[t].rank = -1;
        const cd_shape *sa = &pa.meta[t].shape;
        if (g->tensors[t].persistable || sa->rank < 0) continue;
        res[t] = *sa;
        if (!have_b) continue;
        const cd_shape *sb = &pb.meta[t].shape;
        for (int d = 0; d < sa->rank; d++)
            if (sb->rank != sa->rank || sb->d[d] != sa->d[d]) res[t].d[d] = -1;
    }
    if (have_b) cd_plan_free(&pb);
    cd_plan_free(&pa);
    free(a);
    free(b);
    *out = res;
    return CD_OK;
}

static cd_status write_file(const char *dir, const char *name, const uint8_t *b, size_t n, cd_error *err) {
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = malloc(len);
    if (!path) return cd_err(err, CD_E_NOMEM, "out of memory");
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        cd_status st = cd_err(err, CD_E_IO, "cannot create '%s': %s", path, strerror(errno));
        free(path);
        return st;
    }
    size_t w = n ? fwrite(b, 1, n, f) : 0;
    int e = errno;
    if (fclose(f) != 0 || w != n) {
        cd_status st = cd_err(err, CD_E_IO, "cannot write '%s': %s", path, strerror(e ? e : EIO));
        free(path);
        return st;
    }
    free(path);
    return CD_OK;
}

cd_status cd_pd_export(const cd_graph *g, const cd_pd_export_opts *opts, const char *dir, cd_pd_export_info *info,
                       cd_error *err) {
    uint8_t *prog, *par;
    size_t plen, parlen;
    if (cd_pd_export_mem(g, opts, &prog, &plen, &par, &parlen, info, err)) return err->code;
    cd_status st = write_file(dir, "model.pdmodel", prog, plen, err);
    if (!st) st = write_file(dir, "model.pdiparams", par, parlen, err);
    free(prog);
    free(par);
    return st;
}

bool cd_pd_export_skips_fetch(const char *type) {
    static const char *const t[] = {"feed",  "fetch",      "io_copy", "io_copy_once", "layout", "layout_once",
                                    "calib", "calib_once", NULL};
    for (int i = 0; t[i]; i++)
        if (!strcmp(type, t[i])) return true;
    return false;
}

void cd_pd_export_constants(const cd_graph *g, int n_ops, bool *cst) {
    for (int t = 0; t < g->n_tensors; t++) cst[t] = g->tensors[t].persistable;
    for (int oi = 0; oi < n_ops && oi < g->n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        if (!strcmp(op->type, "feed")) continue;
        bool all = true, any = false;
        for (int s = 0; s < op->n_in; s++)
            for (int k = 0; k < op->in[s].n; k++) {
                int t = op->in[s].ids[k];
                if (t < 0) continue;
                any = true;
                all &= cst[t];
            }
        if (!any || !all) continue;
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++)
                if (op->out[s].ids[k] >= 0) cst[op->out[s].ids[k]] = true;
    }
}
