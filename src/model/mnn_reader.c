/* MNN model reader: the Net table, its tensor names, Input and Const ops, outputs (docs/mnn.md).
 * The other ops' parameters are mnn_map.c's. Field numbers follow the order of MNN's public
 * schema (schema/default/MNN.fbs, Tensor.fbs, CaffeOp.fbs); a union field takes two slots
 * (its type byte, then the table). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "model/mnn_priv.h"
#include "model/nb_reader.h"

/* Net */
enum {
    NET_EXTRA_DESCRIBE = 1,
    NET_OPLISTS = 3,
    NET_OUTPUT_NAME = 4,
    NET_TENSOR_NAME = 7,
    NET_TENSOR_NUMBER = 8,
    NET_SUBGRAPHS = 10
};
/* Op */
enum { OP_INPUTS = 0, OP_MAIN_TYPE = 1, OP_MAIN = 2, OP_NAME = 3, OP_OUTPUTS = 4, OP_TYPE = 5, OP_EXTERNAL = 7 };
/* Blob */
enum { BLOB_DIMS = 0, BLOB_TYPE = 2, BLOB_U8 = 3, BLOB_I8 = 4, BLOB_I32 = 5, BLOB_I64 = 6, BLOB_F32 = 7 };
/* Input */
enum { INPUT_DIMS = 0, INPUT_DTYPE = 1 };
/* TensorDescribe, TensorQuantInfo */
enum { TD_INDEX = 1, TD_QUANT = 4 };
enum { TQ_SCALE = 0, TQ_TYPE = 4 };

#define MNN_OP_INPUT 34
#define MNN_OP_CONST 11
#define MNN_MAX_TENSORS 10000000u

bool cd_mnn_graph(const cd_graph *g) { return g && !strcmp(g->opt_version, "mnn"); }

bool cd_mnn_op_mapped(const cd_op *op) { return op && strncmp(op->type, "mnn_", 4) != 0; }

cd_status cd_mnn_check_runnable(const cd_graph *g, cd_error *err) {
    if (!cd_mnn_graph(g)) return CD_OK;
    char list[1200] = "";
    size_t o = 0;
    int n = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (cd_mnn_op_mapped(op)) continue;
        if (n++ < 8 && o < sizeof list)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s'%s' (%s: %s)", o ? ", " : "",
                                  cd_attr_str(op, "mnn_name", "?"), cd_attr_str(op, "mnn_type", "?"),
                                  cd_attr_str(op, "mnn_unmapped", "no counterpart in cldiff's op table"));
    }
    if (!n) return CD_OK;
    return cd_err(err, CD_E_UNSUPPORTED,
                  "%d MNN op%s of this model %s no counterpart in cldiff's op table: %s%s. cldiff's own backends "
                  "cannot run them; MNN's engines can (--backends mnn-cpu,mnn-opencl: such ops are compared and "
                  "named unchecked); `cldiff inspect` lists what maps (docs/mnn.md)",
                  n, n == 1 ? "" : "s", n == 1 ? "has" : "have", list, n > 8 ? ", ..." : "");
}

/* MNN DataType -> cd_dtype; -1 when cldiff has no such element type. */
static int dtype_of(int32_t t) {
    switch (t) {
    case 1: return CD_F32;
    case 2: return CD_F64;
    case 3: return CD_I32;
    case 4: return CD_U8;
    case 5: return CD_I16;
    case 6: return CD_I8;
    case 9: return CD_I64;
    case 10: return CD_BOOL;
    case 19: return CD_F16;
    default: return -1;
    }
}

static size_t file_off(const mnn_ctx *c, size_t pos) { return c->fb.base + pos; }

/* A shape from an int vector: dims >= -1 (inputs) or >= 0 (constants). */
static cd_status read_dims(mnn_ctx *c, const cd_fb_table *t, int slot, bool allow_unknown, int64_t *dims, int *rank,
                           const char *what, cd_error *err) {
    int32_t *v;
    uint32_t n;
    if (cd_mnn_ints(c, t, slot, "dims", &v, &n, err)) return err->code;
    cd_status st = CD_OK;
    if (n > CD_MAX_RANK)
        st = cd_err(err, CD_E_MODEL, "%s has %u dimensions, over the limit %d (file offset %zu)", what, n, CD_MAX_RANK,
                    file_off(c, t->pos));
    for (uint32_t i = 0; !st && i < n; i++) {
        if (v[i] < (allow_unknown ? -1 : 0))
            st = cd_err(err, CD_E_MODEL, "%s has invalid dimension %d at axis %u (file offset %zu)", what, v[i], i,
                        file_off(c, t->pos));
        dims[i] = v[i];
    }
    *rank = (int)n;
    free(v);
    return st;
}

/* A Const op: its Blob becomes the parameter named like its output tensor. */
static cd_status read_const(mnn_ctx *c, const mnn_op *o, cd_error *err) {
    const char *tn = c->tname[o->out[0]];
    size_t at = file_off(c, o->pos);
    if (!o->has_main || o->main_type != MNN_P_BLOB)
        return cd_err(err, CD_E_MODEL, "op #%d '%s' (Const) has no Blob parameter (union type %u) (file offset %zu)",
                      o->index, o->name, o->main_type, at);
    int64_t dims[CD_MAX_RANK];
    int rank = 0;
    if (read_dims(c, &o->main, BLOB_DIMS, false, dims, &rank, "constant", err))
        return cd_err_prefix(err, "op #%d '%s': ", o->index, o->name);
    int32_t mt;
    if (cd_fb_i32(&c->fb, &o->main, BLOB_TYPE, 1, &mt, err)) return err->code;
    int dt = dtype_of(mt);
    int slot = -1;
    size_t es = 0;
    switch (mt) {
    case 1: slot = BLOB_F32, es = 4; break;
    case 3: slot = BLOB_I32, es = 4; break;
    case 4: slot = BLOB_U8, es = 1; break;
    case 6: slot = BLOB_I8, es = 1; break;
    case 9: slot = BLOB_I64, es = 8; break;
    default: break;
    }
    if (dt < 0 || slot < 0)
        return cd_err(err, CD_E_MODEL,
                      "op #%d '%s' (Const): data type %d is not one cldiff reads (float32, int32, int64, int8, "
                      "uint8) (file offset %zu)",
                      o->index, o->name, mt, at);
    size_t d;
    uint32_t n;
    if (cd_fb_vec(&c->fb, &o->main, slot, "blob data", es, &d, &n, err))
        return cd_err_prefix(err, "op #%d '%s' (Const): ", o->index, o->name);
    cd_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.d[i] = dims[i];
    int64_t ne = cd_shape_numel(&s);
    if (ne < 0 || (uint64_t)ne != n) {
        char sb[160];
        return cd_err(err, CD_E_MODEL,
                      "op #%d '%s' (Const): shape %s needs %lld values, its data holds %u (file offset %zu)", o->index,
                      o->name, cd_shape_str(&s, sb, sizeof sb), (long long)ne, n, at);
    }
    if (cd_graph_has_var(c->g, tn))
        return cd_err(err, CD_E_MODEL,
                      "op #%d '%s' (Const) writes tensor '%s', which is already defined (file offset %zu)", o->index,
                      o->name, tn, at);
    if (cd_nb_declare(c->g, tn, true, dt, dims, rank, true, at, err) ||
        cd_nb_param(c->g, tn, dt, dims, rank, c->fb.buf + d, (uint64_t)n * es, at, err))
        return err->code;
    if (mt == 3) c->iconst[o->out[0]] = (mnn_const){.pos = d, .n = (int)n};
    if (mt == 1) c->fconst[o->out[0]] = (mnn_const){.pos = d, .n = (int)n};
    return CD_OK;
}

/* An Input op: a feed op, col k, with the declared shape and type. */
static cd_status read_input(mnn_ctx *c, const mnn_op *o, int col, cd_error *err) {
    const char *tn = c->tname[o->out[0]];
    size_t at = file_off(c, o->pos);
    int64_t dims[CD_MAX_RANK];
    int rank = 0;
    int32_t mt = 1;
    if (o->has_main && o->main_type == MNN_P_INPUT) {
        if (read_dims(c, &o->main, INPUT_DIMS, true, dims, &rank, "input", err))
            return cd_err_prefix(err, "op #%d '%s' (Input): ", o->index, o->name);
        if (cd_fb_i32(&c->fb, &o->main, INPUT_DTYPE, 1, &mt, err)) return err->code;
    }
    int dt = dtype_of(mt);
    if (dt < 0)
        return cd_err(err, CD_E_MODEL, "op #%d '%s' (Input): data type %d is not one cldiff can feed (file offset %zu)",
                      o->index, o->name, mt, at);
    for (int i = 0; i < rank; i++)
        if (dims[i] == 0) dims[i] = -1; /* MNN writes 0 for a free dimension */
    if (cd_graph_has_var(c->g, tn))
        return cd_err(err, CD_E_MODEL,
                      "op #%d '%s' (Input) writes tensor '%s', which is already defined (file offset %zu)", o->index,
                      o->name, tn, at);
    if (cd_nb_declare(c->g, tn, true, dt, dims, rank, false, at, err)) return err->code;
    if (!cd_graph_has_var(c->g, "feed") && cd_graph_declare_var(c->g, "feed", CD_F32, NULL, 0, false, err))
        return err->code;
    const char *x = "feed";
    cd_attr a = {.type = CD_ATTR_INT, .i = col};
    if (!cd_graph_add_op(c->g, "feed", err) || cd_op_add_input(c->g, "X", &x, 1, err) ||
        cd_op_add_output(c->g, "Out", &tn, 1, err))
        return err->code;
    a.name = cd_strdup("col");
    if (cd_op_add_attr(c->g, &a, err)) return err->code;
    cd_attr t = {.type = CD_ATTR_STRING, .name = cd_strdup("mnn_type"), .s = cd_strdup("Input")};
    if (cd_op_add_attr(c->g, &t, err)) return err->code;
    cd_attr nm = {.type = CD_ATTR_STRING, .name = cd_strdup("mnn_name"), .s = cd_strdup(o->name)};
    return cd_op_add_attr(c->g, &nm, err);
}

static cd_status read_index_vec(mnn_ctx *c, const cd_fb_table *t, int slot, const char *field, int32_t **v, int *n,
                                const mnn_op *o, cd_error *err) {
    uint32_t un;
    if (cd_mnn_ints(c, t, slot, field, v, &un, err)) return err->code;
    *n = (int)un;
    for (uint32_t i = 0; i < un; i++)
        if ((*v)[i] < 0 || (uint32_t)(*v)[i] >= c->n_tensors)
            return cd_err(err, CD_E_MODEL,
                          "op #%d '%s': %s[%u] = %d is not a tensor index (the model has %u tensors) (file offset %zu)",
                          o->index, o->name ? o->name : "", field, i, (*v)[i], c->n_tensors, file_off(c, t->pos));
    return CD_OK;
}

static cd_status fetch_op(mnn_ctx *c, const char *tn, int col, cd_error *err) {
    if (!cd_graph_has_var(c->g, "fetch") && cd_graph_declare_var(c->g, "fetch", CD_F32, NULL, 0, false, err))
        return err->code;
    const char *out = "fetch";
    if (!cd_graph_add_op(c->g, "fetch", err) || cd_op_add_input(c->g, "X", &tn, 1, err) ||
        cd_op_add_output(c->g, "Out", &out, 1, err))
        return err->code;
    cd_attr a = {.type = CD_ATTR_INT, .i = col, .name = cd_strdup("col")};
    return cd_op_add_attr(c->g, &a, err);
}

static void ctx_free(mnn_ctx *c) {
    for (uint32_t i = 0; c->tname && i < c->n_tensors; i++) free(c->tname[i]);
    free(c->tname);
    free(c->iconst);
    free(c->fconst);
    free(c->qscale);
}

/* Net.extraTensorDescribe: the tensors a quantization tool made int8 (quantInfo of type DT_INT8). */
static cd_status read_quant_info(mnn_ctx *c, const cd_fb_table *net, cd_error *err) {
    size_t d;
    uint32_t n;
    if (cd_fb_vec(&c->fb, net, NET_EXTRA_DESCRIBE, "extraTensorDescribe", 4, &d, &n, err)) return err->code;
    for (uint32_t i = 0; i < n; i++) {
        cd_fb_table td, qi;
        bool has_q = false;
        int32_t idx, type;
        float scale = 0;
        if (cd_fb_vec_table(&c->fb, d, i, 2, &td, err) || cd_fb_i32(&c->fb, &td, TD_INDEX, 0, &idx, err) ||
            cd_fb_sub(&c->fb, &td, TD_QUANT, "quantInfo", false, &has_q, &qi, err))
            return cd_err_prefix(err, "extraTensorDescribe[%u]: ", i);
        if (!has_q) continue;
        if (cd_fb_i32(&c->fb, &qi, TQ_TYPE, 0, &type, err) || cd_mnn_f32(c, &qi, TQ_SCALE, 0.0f, &scale, err))
            return cd_err_prefix(err, "extraTensorDescribe[%u].quantInfo: ", i);
        if (idx < 0 || (uint32_t)idx >= c->n_tensors)
            return cd_err(err, CD_E_MODEL,
                          "extraTensorDescribe[%u]: tensor index %d outside the %u tensors (file offset %zu)", i, idx,
                          c->n_tensors, c->fb.base + td.pos);
        if (type == 6) c->qscale[idx] = scale > 0 && scale < 1e30f ? scale : 1e-30f;
    }
    return CD_OK;
}

/* Pass 1: the op tables, their types, names and tensor indexes. */
typedef struct op_rec {
    mnn_op o;
    int32_t *in, *out;
} op_rec;

static cd_status read_ops(mnn_ctx *c, size_t data, uint32_t n_ops, op_rec *ops, cd_error *err) {
    for (uint32_t i = 0; i < n_ops; i++) {
        cd_fb_table t;
        mnn_op *o = &ops[i].o;
        o->index = (int)i;
        if (cd_fb_vec_table(&c->fb, data, i, 2, &t, err)) return cd_err_prefix(err, "op #%u: ", i);
        o->pos = t.pos;
        int32_t ty;
        if (cd_fb_i32(&c->fb, &t, OP_TYPE, 0, &ty, err) ||
            cd_fb_str(&c->fb, &t, OP_NAME, "name", false, &o->name, NULL, err) ||
            cd_fb_u8(&c->fb, &t, OP_MAIN_TYPE, 0, &o->main_type, err))
            return cd_err_prefix(err, "op #%u: ", i);
        o->type = ty;
        if (!o->name) o->name = "";
        bool pr = false;
        if (o->main_type && cd_fb_sub(&c->fb, &t, OP_MAIN, "main", false, &pr, &o->main, err))
            return cd_err_prefix(err, "op #%u '%s': ", i, o->name);
        o->has_main = pr;
        const char *ext = NULL;
        if (cd_fb_str(&c->fb, &t, OP_EXTERNAL, "externalPath", false, &ext, NULL, err))
            return cd_err_prefix(err, "op #%u '%s': ", i, o->name);
        if (ext && *ext)
            return cd_err(err, CD_E_UNSUPPORTED,
                          "op #%u '%s' keeps its weights in an external file ('%s'); cldiff reads only "
                          "self-contained .mnn files: convert without --saveExternalData",
                          i, o->name, ext);
        if (read_index_vec(c, &t, OP_INPUTS, "inputIndexes", &ops[i].in, &o->n_in, o, err) ||
            read_index_vec(c, &t, OP_OUTPUTS, "outputIndexes", &ops[i].out, &o->n_out, o, err))
            return err->code;
        o->in = ops[i].in;
        o->out = ops[i].out;
        if ((ty == MNN_OP_INPUT || ty == MNN_OP_CONST) && (o->n_out != 1 || o->n_in != 0))
            return cd_err(err, CD_E_MODEL,
                          "op #%u '%s' (%s) has %d inputs and %d outputs; expected none and one (file offset %zu)", i,
                          o->name, ty == MNN_OP_INPUT ? "Input" : "Const", o->n_in, o->n_out, file_off(c, t.pos));
    }
    return CD_OK;
}

cd_status cd_mnn_load_mem(const uint8_t *buf, size_t len, cd_graph **out, cd_error *err) {
    *out = NULL;
    mnn_ctx c;
    memset(&c, 0, sizeof c);
    if (!buf) return cd_err(err, CD_E_MODEL, "empty MNN model");
    if (cd_fb_init(&c.fb, buf, len, 0, "MNN Net", err)) return err->code;
    cd_fb_table net;
    if (cd_fb_root(&c.fb, &net, err)) return err->code;
    size_t names_d, ops_d, outn_d;
    uint32_t n_names, n_ops, n_outn;
    int32_t tnum;
    if (cd_fb_vec(&c.fb, &net, NET_TENSOR_NAME, "tensorName", 4, &names_d, &n_names, err) ||
        cd_fb_vec(&c.fb, &net, NET_OPLISTS, "oplists", 4, &ops_d, &n_ops, err) ||
        cd_fb_vec(&c.fb, &net, NET_OUTPUT_NAME, "outputName", 4, &outn_d, &n_outn, err) ||
        cd_fb_i32(&c.fb, &net, NET_TENSOR_NUMBER, 0, &tnum, err))
        return err->code;
    if (!n_ops)
        return cd_err(err, CD_E_MODEL, "MNN Net has no ops (oplists is empty or missing; file offset %zu)", net.pos);
    size_t sub_d;
    uint32_t n_sub;
    if (cd_fb_vec(&c.fb, &net, NET_SUBGRAPHS, "subgraphs", 4, &sub_d, &n_sub, err)) return err->code;
    if (tnum < 0 || (uint32_t)tnum > MNN_MAX_TENSORS)
        return cd_err(err, CD_E_MODEL, "MNN Net: tensorNumber %d is out of range (file offset %zu)", tnum, net.pos);
    /* A tensor without a name is only there to be an op's input or output, which takes a 4-byte
     * index in the file: a tensorNumber beyond the names by more than the file has words for
     * describes tensors nothing can reach (a 3 KB file claiming millions of tensors, found by
     * fuzz_mnn, made the loader declare them all: seconds of work for nothing). */
    if ((uint32_t)tnum > n_names && (uint64_t)((uint32_t)tnum - n_names) > len / 4)
        return cd_err(err, CD_E_MODEL,
                      "MNN Net: tensorNumber %d is more than this %zu-byte file can describe (%u tensor names; file "
                      "offset %zu): the file is damaged or not an MNN model",
                      tnum, len, n_names, net.pos);
    c.n_tensors = n_names > (uint32_t)tnum ? n_names : (uint32_t)tnum;
    if (c.n_tensors > MNN_MAX_TENSORS)
        return cd_err(err, CD_E_MODEL, "MNN Net: %u tensors, over the limit %u", c.n_tensors, MNN_MAX_TENSORS);
    c.g = cd_graph_new();
    c.tname = calloc((size_t)c.n_tensors + 1, sizeof *c.tname);
    c.iconst = calloc((size_t)c.n_tensors + 1, sizeof *c.iconst);
    c.fconst = calloc((size_t)c.n_tensors + 1, sizeof *c.fconst);
    c.qscale = calloc((size_t)c.n_tensors + 1, sizeof *c.qscale);
    op_rec *ops = calloc((size_t)n_ops, sizeof *ops);
    cd_status st = CD_OK;
    if (!c.g || !c.tname || !c.iconst || !c.fconst || !c.qscale || !ops)
        st = cd_err(err, CD_E_NOMEM, "out of memory reading an MNN model of %u tensors and %u ops", c.n_tensors, n_ops);
    if (!st) snprintf(c.g->opt_version, sizeof c.g->opt_version, "mnn");
    for (uint32_t i = 0; !st && i < c.n_tensors; i++) {
        const char *s = NULL;
        if (i < n_names && cd_fb_vec_str(&c.fb, names_d, i, &s, NULL, err)) {
            st = cd_err_prefix(err, "tensorName[%u]: ", i);
            break;
        }
        char tmp[32];
        if (!s || !*s || !strcmp(s, "feed") || !strcmp(s, "fetch")) {
            snprintf(tmp, sizeof tmp, "%s%u", s && *s ? s : "t", i);
            s = tmp;
        }
        c.tname[i] = cd_strdup(s);
        if (!c.tname[i]) st = cd_err(err, CD_E_NOMEM, "out of memory");
    }
    if (!st) st = read_quant_info(&c, &net, err);
    if (!st) st = read_ops(&c, ops_d, n_ops, ops, err);
    /* a model input holds float data whatever scale the quantization tool noted for it: MNN
     * quantizes it in the op after (FloatToInt8) */
    for (uint32_t i = 0; !st && i < n_ops; i++)
        for (int k = 0; ops[i].o.type == MNN_OP_INPUT && k < ops[i].o.n_out; k++) c.qscale[ops[i].o.out[k]] = 0;
    /* Pass 2: Input and Const first declare their tensors; the rest are activations. */
    int col = 0;
    for (uint32_t i = 0; !st && i < n_ops; i++) {
        if (ops[i].o.type == MNN_OP_CONST) st = read_const(&c, &ops[i].o, err);
        if (!st && ops[i].o.type == MNN_OP_INPUT) st = read_input(&c, &ops[i].o, col++, err);
    }
    for (uint32_t i = 0; !st && i < c.n_tensors; i++)
        if (!cd_graph_has_var(c.g, c.tname[i])) st = cd_graph_declare_var(c.g, c.tname[i], CD_F32, NULL, 0, false, err);
    for (uint32_t i = 0; !st && i < n_ops; i++) {
        if (ops[i].o.type == MNN_OP_CONST || ops[i].o.type == MNN_OP_INPUT) continue;
        st = cd_mnn_map_op(&c, &ops[i].o, err);
    }
    /* Outputs: Net.outputName in order; without it, tensors written and never read. */
    for (uint32_t i = 0; !st && i < n_outn; i++) {
        const char *s;
        if (cd_fb_vec_str(&c.fb, outn_d, i, &s, NULL, err)) {
            st = cd_err_prefix(err, "outputName[%u]: ", i);
            break;
        }
        if (!cd_graph_has_var(c.g, s)) {
            st = cd_err(err, CD_E_MODEL, "outputName[%u] '%s' names no tensor of the model", i, s);
            break;
        }
        st = fetch_op(&c, s, (int)i, err);
    }
    if (!st && !n_outn) {
        char *read = calloc((size_t)c.n_tensors + 1, 1), *written = calloc((size_t)c.n_tensors + 1, 1);
        if (!read || !written) st = cd_err(err, CD_E_NOMEM, "out of memory");
        for (uint32_t i = 0; !st && i < n_ops; i++) {
            for (int k = 0; k < ops[i].o.n_in; k++) read[ops[i].o.in[k]] = 1;
            for (int k = 0; k < ops[i].o.n_out; k++) written[ops[i].o.out[k]] = 1;
        }
        int oc = 0;
        for (uint32_t t = 0; !st && t < c.n_tensors; t++)
            if (written[t] && !read[t]) st = fetch_op(&c, c.tname[t], oc++, err);
        free(read);
        free(written);
    }
    if (!st) st = cd_graph_finalize(c.g, err);
    if (!st && n_sub)
        cd_graph_warn(c.g, "the model has %u subgraphs (control flow); cldiff lists their ops' callers only", n_sub);
    for (uint32_t i = 0; ops && i < n_ops; i++) {
        free(ops[i].in);
        free(ops[i].out);
    }
    free(ops);
    if (st) {
        cd_graph_free(c.g);
        c.g = NULL;
    }
    ctx_free(&c);
    *out = c.g;
    return st;
}

bool cd_mnn_sniff_mem(const uint8_t *b, size_t len) {
    if (!b || len < 16) return false;
    uint32_t root = cd_ld_u32(b);
    if (root < 4 || (root & 3) || root > len - 4) return false;
    int32_t so = (int32_t)cd_ld_u32(b + root);
    int64_t vt = (int64_t)root - so;
    if (vt < 4 || vt > (int64_t)len - 4 || (vt & 1)) return false;
    uint16_t vs = cd_ld_u16(b + vt);
    if (vs < 4 + 2 * (NET_OPLISTS + 1) || (vs & 1) || (uint64_t)vt + vs > len) return false;
    return cd_ld_u16(b + vt + 4 + 2 * NET_OPLISTS) != 0; /* oplists present */
}

bool cd_mnn_sniff(const char *path) {
    size_t l = path ? strlen(path) : 0;
    if (l >= 4 && !strcmp(path + l - 4, ".mnn")) return true;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return false;
    uint8_t h[4096];
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    /* a .nb starts with its meta version (0..2) as a 16-bit number */
    if (n >= 2 && cd_ld_u16(h) <= 2) return false;
    return cd_mnn_sniff_mem(h, n);
}

cd_status cd_mnn_load(const char *path, cd_graph **out, cd_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open model '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return cd_err(err, CD_E_USAGE, "model '%s' is not a regular file", path);
    }
    size_t len = (size_t)st.st_size;
    uint8_t *b = malloc(len ? len : 1);
    if (!b) {
        fclose(f);
        return cd_err(err, CD_E_NOMEM, "out of memory reading '%s' (%zu bytes)", path, len);
    }
    size_t got = fread(b, 1, len, f);
    fclose(f);
    if (got != len) {
        free(b);
        return cd_err(err, CD_E_USAGE, "cannot read model '%s'", path);
    }
    cd_status s = cd_mnn_load_mem(b, len, out, err);
    free(b);
    if (s) cd_err_prefix(err, "%s: ", path);
    return s;
}

cd_status cd_model_load(const char *path, cd_graph **out, cd_error *err) {
    return cd_mnn_sniff(path) ? cd_mnn_load(path, out, err) : cd_nb_load(path, out, err);
}
