#include "model/extract.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cd_status copy_attr(cd_graph *ng, const cd_attr *a, cd_error *err) {
    cd_attr c = *a;
    c.name = cd_strdup(a->name);
    c.s = a->s ? cd_strdup(a->s) : NULL;
    c.ints = NULL;
    c.floats = NULL;
    c.strings = NULL;
    if (a->ints && a->n) {
        c.ints = malloc((size_t)a->n * sizeof *c.ints);
        if (c.ints) memcpy(c.ints, a->ints, (size_t)a->n * sizeof *c.ints);
    }
    if (a->floats && a->n) {
        c.floats = malloc((size_t)a->n * sizeof *c.floats);
        if (c.floats) memcpy(c.floats, a->floats, (size_t)a->n * sizeof *c.floats);
    }
    if (a->strings && a->n) {
        c.strings = calloc((size_t)a->n, sizeof *c.strings);
        if (c.strings)
            for (int i = 0; i < a->n; i++) c.strings[i] = cd_strdup(a->strings[i] ? a->strings[i] : "");
    }
    return cd_op_add_attr(ng, &c, err);
}

static bool is_param(const cd_graph *g, int id) { return id >= 0 && g->tensors[id].persistable; }

static cd_dtype run_dtype(const cd_graph *g, const cd_value *meta, int id) {
    if (!meta) return g->tensors[id].dtype;
    cd_dtype t = meta[id].dtype;
    return t == CD_F16 || t == CD_F64 ? CD_F32 : t;
}

cd_status cd_graph_extract_op(const cd_graph *g, int op_index, const cd_value *meta, cd_extracted *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    if (op_index < 0 || op_index >= g->n_ops)
        return cd_err(err, CD_E_USAGE, "no op #%d in this model (it has %d ops)", op_index, g->n_ops);
    const cd_op *op = &g->ops[op_index];
    cd_graph *ng = cd_graph_new();
    if (!ng) return cd_err(err, CD_E_NOMEM, "out of memory");
    cd_status st = cd_graph_declare_var(ng, "feed", CD_BOOL, NULL, 0, false, err);
    if (!st) st = cd_graph_declare_var(ng, "fetch", CD_BOOL, NULL, 0, false, err);
    char fname[32];
    /* Declare every tensor the op touches; inputs that are not params become feeds. */
    for (int s = 0; s < op->n_in && !st; s++) {
        for (int k = 0; k < op->in[s].n && !st; k++) {
            int id = op->in[s].ids[k];
            if (id < 0) continue;
            const cd_tensor *t = &g->tensors[id];
            if (is_param(g, id)) {
                st = cd_graph_declare_var(ng, t->name, t->dtype, t->shape.d, t->shape.rank, true, err);
                if (!st)
                    st = cd_graph_set_param(ng, t->name, t->dtype, t->shape.d, t->shape.rank, t->data, t->nbytes, err);
                continue;
            }
            bool seen = false;
            for (int j = 0; j < out->n_inputs; j++) seen |= !strcmp(g->tensors[out->src_inputs[j]].name, t->name);
            if (seen) continue;
            if (out->n_inputs == 64) {
                st = cd_err(err, CD_E_UNSUPPORTED, "op #%d has more than 64 inputs", op_index);
                break;
            }
            const cd_shape *sh = meta ? &meta[id].shape : &t->shape;
            st = cd_graph_declare_var(ng, t->name, run_dtype(g, meta, id), sh->d, sh->rank, false, err);
            if (st) break;
            if (!cd_graph_add_op(ng, "feed", err)) {
                st = err->code;
                break;
            }
            const char *feedv = "feed", *nm = t->name;
            st = cd_op_add_input(ng, "X", &feedv, 1, err);
            if (!st) st = cd_op_add_output(ng, "Out", &nm, 1, err);
            cd_attr col = {.name = cd_strdup("col"), .type = CD_ATTR_INT, .i = out->n_inputs};
            if (!st) st = copy_attr(ng, &col, err);
            free(col.name);
            out->src_inputs[out->n_inputs++] = id;
        }
    }
    for (int s = 0; s < op->n_out && !st; s++) {
        for (int k = 0; k < op->out[s].n && !st; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            const cd_tensor *t = &g->tensors[id];
            const cd_shape *sh = meta ? &meta[id].shape : &t->shape;
            st = cd_graph_declare_var(ng, t->name, run_dtype(g, meta, id), sh->d, sh->rank, false, err);
        }
    }
    if (!st && !cd_graph_add_op(ng, op->type, err)) st = err->code;
    for (int s = 0; s < op->n_in && !st; s++) {
        const char *names[64];
        int n = op->in[s].n < 64 ? op->in[s].n : 64;
        for (int k = 0; k < n; k++) names[k] = op->in[s].ids[k] >= 0 ? g->tensors[op->in[s].ids[k]].name : "";
        st = cd_op_add_input(ng, op->in[s].name, names, n, err);
    }
    for (int s = 0; s < op->n_out && !st; s++) {
        const char *names[64];
        int n = op->out[s].n < 64 ? op->out[s].n : 64;
        for (int k = 0; k < n; k++) names[k] = op->out[s].ids[k] >= 0 ? g->tensors[op->out[s].ids[k]].name : "";
        st = cd_op_add_output(ng, op->out[s].name, names, n, err);
    }
    for (int a = 0; a < op->n_attr && !st; a++) st = copy_attr(ng, &op->attrs[a], err);
    for (int s = 0; s < op->n_out && !st; s++) {
        for (int k = 0; k < op->out[s].n && !st; k++) {
            int id = op->out[s].ids[k];
            if (id < 0 || out->n_outputs == 64) continue;
            if (!cd_graph_add_op(ng, "fetch", err)) {
                st = err->code;
                break;
            }
            const char *nm = g->tensors[id].name, *fetchv = "fetch";
            st = cd_op_add_input(ng, "X", &nm, 1, err);
            if (!st) st = cd_op_add_output(ng, "Out", &fetchv, 1, err);
            snprintf(fname, sizeof fname, "col");
            cd_attr col = {.name = fname, .type = CD_ATTR_INT, .i = out->n_outputs};
            if (!st) st = copy_attr(ng, &col, err);
            out->src_outputs[out->n_outputs++] = id;
        }
    }
    if (!st) st = cd_graph_finalize(ng, err);
    if (st) {
        cd_graph_free(ng);
        return cd_err_prefix(err, "extracting op #%d %s: ", op_index, op->name);
    }
    ng->meta_version = g->meta_version;
    memcpy(ng->opt_version, g->opt_version, sizeof ng->opt_version);
    out->g = ng;
    return CD_OK;
}
