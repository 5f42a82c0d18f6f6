#include "probes/instrument.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/executor.h"
#include "model/nb_writer.h"
#include "probes/select.h"
#include "util/json.h"

#define KERNEL_ATTR "__@kernel_type_attr@__"

static bool in_list(const char *list, const char *item) {
    size_t l = strlen(item);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == l && !strncmp(p, item, l)) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

static cd_status copy_attr(cd_graph *ng, const cd_attr *a, const cd_retarget *rt, cd_error *err) {
    cd_attr c = *a;
    c.name = cd_strdup(a->name);
    c.s = a->s ? cd_strdup(a->s) : NULL;
    c.ints = NULL;
    c.floats = NULL;
    c.strings = NULL;
    if (!c.name || (a->s && !c.s)) {
        free(c.name);
        free(c.s);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    if (a->ints && a->n && (c.ints = malloc((size_t)a->n * sizeof *c.ints)))
        memcpy(c.ints, a->ints, (size_t)a->n * sizeof *c.ints);
    if (a->floats && a->n && (c.floats = malloc((size_t)a->n * sizeof *c.floats)))
        memcpy(c.floats, a->floats, (size_t)a->n * sizeof *c.floats);
    if (a->strings && a->n && (c.strings = calloc((size_t)a->n, sizeof *c.strings)))
        for (int i = 0; i < a->n; i++) c.strings[i] = cd_strdup(a->strings[i] ? a->strings[i] : "");
    if (rt && rt->target >= 0 && c.type == CD_ATTR_STRING && c.s && !strcmp(c.name, KERNEL_ATTR)) {
        /* op/alias/TARGET/PRECISION/LAYOUT: only an ARM target (4) changes */
        char *f[5];
        int nf = 0;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", c.s);
        for (char *q = buf, *tok; nf < 5 && (tok = strsep(&q, "/"));) f[nf++] = tok;
        bool host_rec = nf == 5 && !strcmp(f[2], "1") && in_list(rt->target_ops, f[0]);
        if (nf == 5 && (!strcmp(f[2], "4") || host_rec)) {
            char nb[300];
            bool to_host = !host_rec && in_list(rt->host_ops, f[0]);
            /* the runtime looks up (precision, layout) then relaxes each to any; a record that
             * says any precision never finds a float-only kernel of the other target */
            const char *prec = !to_host && !strcmp(f[3], "4") ? "1" : f[3];
            /* ARM names some typed kernels "<type>_<op>" (slice: int32_slice) where x86 says "<type>" */
            size_t la = strlen(f[1]), lo = strlen(f[0]);
            if (!to_host && la > lo + 1 && f[1][la - lo - 1] == '_' && !strcmp(f[1] + la - lo, f[0]))
                f[1][la - lo - 1] = 0;
            snprintf(nb, sizeof nb, "%s/%s/%d/%s/%s", f[0], f[1], to_host ? 1 : rt->target, prec, f[4]);
            free(c.s);
            c.s = cd_strdup(nb);
        }
    }
    return cd_op_add_attr(ng, &c, err);
}

static bool is_io_name(const char *n) { return !strcmp(n, "feed") || !strcmp(n, "fetch"); }

void cd_instrumented_free(cd_instrumented *in) {
    if (!in) return;
    if (in->g) cd_graph_free(in->g);
    for (int i = 0; i < in->n_fetch; i++) free(in->fetch[i].fetch_name);
    free(in->fetch);
    memset(in, 0, sizeof *in);
}

static bool probe_slot(const char *op_type, const cd_slot *s) { return !cd_exec_training_only(op_type, s->name); }

cd_status cd_instrument(const cd_graph *g, const bool *mask, const cd_value *meta, const cd_retarget *retarget,
                        cd_instrumented *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < g->n_ops; i++)
        if (cd_op_attr(&g->ops[i], "sub_block"))
            return cd_err(err, CD_E_UNSUPPORTED,
                          "instrumenting the model: op #%d %s (%s) runs a sub-block; models with "
                          "control flow cannot be instrumented yet (the writer keeps block 0 only)",
                          i, g->ops[i].name, g->ops[i].type);
    int nt = g->n_tensors;
    char **names = cd_calloc((size_t)nt + 1, sizeof *names, err);
    bool *keep = cd_calloc((size_t)nt + 1, 1, err);
    if (!names || !keep) {
        free(names);
        free(keep);
        return CD_E_NOMEM;
    }
    cd_status st = CD_OK;
    /* Which activations keep their names: params, feed/fetch, model inputs and outputs, and
     * every name written once. */
    for (int t = 0; t < nt; t++) {
        const cd_tensor *x = &g->tensors[t];
        bool multi = false;
        for (int u = 0; u < nt && !multi; u++) multi = u != t && !strcmp(g->tensors[u].name, x->name);
        keep[t] = x->persistable || is_io_name(x->name) || !multi || (retarget && retarget->keep_names);
    }
    for (int k = 0; k < g->n_inputs; k++) keep[g->inputs[k]] = true;
    for (int k = 0; k < g->n_outputs; k++) keep[g->outputs[k]] = true;
    for (int t = 0; t < nt && !st; t++) {
        const cd_tensor *x = &g->tensors[t];
        if (keep[t]) {
            names[t] = cd_strdup(x->name);
        } else {
            size_t l = strlen(x->name) + 32;
            if ((names[t] = malloc(l))) snprintf(names[t], l, "%s.cldiff%d", x->name, x->version);
            out->n_renamed++;
        }
        if (!names[t]) st = cd_err(err, CD_E_NOMEM, "out of memory");
    }
    /* The fetch list: the model's outputs first (their cols unchanged), then every probed
     * output that is not already one of them. */
    int cap = g->n_outputs + 16;
    out->fetch = cd_calloc((size_t)cap, sizeof *out->fetch, err);
    if (!out->fetch) st = CD_E_NOMEM;
    out->n_model_outputs = g->n_outputs;
    for (int k = 0; k < g->n_outputs && !st; k++) {
        int id = g->outputs[k];
        cd_probe_fetch *f = &out->fetch[out->n_fetch++];
        f->col = k;
        f->tensor_id = id;
        f->op_index = g->tensors[id].producer;
        f->model_output = true;
        f->slot = "";
        if (f->op_index >= 0) {
            const cd_op *op = &g->ops[f->op_index];
            for (int s = 0; s < op->n_out; s++)
                for (int j = 0; j < op->out[s].n; j++)
                    if (op->out[s].ids[j] == id) {
                        f->slot = op->out[s].name;
                        f->slot_index = j;
                    }
            f->probed = mask && mask[f->op_index] && !cd_select_never_probed(op);
        }
    }
    for (int i = 0; i < g->n_ops && !st; i++) {
        const cd_op *op = &g->ops[i];
        if (!mask || !mask[i] || cd_select_never_probed(op)) continue;
        for (int s = 0; s < op->n_out && !st; s++) {
            if (!probe_slot(op->type, &op->out[s])) continue;
            for (int j = 0; j < op->out[s].n && !st; j++) {
                int id = op->out[s].ids[j];
                if (id < 0 || g->tensors[id].persistable) continue;
                bool dup = false;
                for (int k = 0; k < out->n_fetch; k++) dup |= out->fetch[k].tensor_id == id;
                if (dup) continue;
                if (out->n_fetch == cap) {
                    cap *= 2;
                    cd_probe_fetch *nf = realloc(out->fetch, sizeof *nf * (size_t)cap);
                    if (!nf) {
                        st = cd_err(err, CD_E_NOMEM, "out of memory");
                        break;
                    }
                    out->fetch = nf;
                }
                cd_probe_fetch *f = &out->fetch[out->n_fetch];
                memset(f, 0, sizeof *f);
                f->col = out->n_fetch++;
                f->op_index = i;
                f->tensor_id = id;
                f->slot = op->out[s].name;
                f->slot_index = j;
                f->probed = true;
            }
        }
    }
    for (int k = 0; k < out->n_fetch && !st; k++) {
        cd_probe_fetch *f = &out->fetch[k];
        const cd_tensor *x = &g->tensors[f->tensor_id];
        f->dtype = meta ? meta[f->tensor_id].dtype : x->dtype;
        f->shape = meta ? meta[f->tensor_id].shape : x->shape;
        if (f->dtype == CD_F16) f->dtype = CD_F32; /* a float fetch reads as float32 */
        if (!(f->fetch_name = cd_strdup(names[f->tensor_id]))) st = cd_err(err, CD_E_NOMEM, "out of memory");
    }
    /* The new graph: same vars (renamed), same params, same ops, then the extra fetches. */
    cd_graph *ng = st ? NULL : cd_graph_new();
    if (!st && !ng) st = cd_err(err, CD_E_NOMEM, "out of memory");
    for (int t = 0; t < nt && !st; t++) {
        const cd_tensor *x = &g->tensors[t];
        if (cd_graph_has_var(ng, names[t])) continue;
        st = cd_graph_declare_var(ng, names[t], x->dtype, x->shape.d, x->shape.rank, x->persistable, err);
        if (!st && x->persistable && x->data)
            st = cd_graph_set_param(ng, names[t], x->dtype, x->shape.d, x->shape.rank, x->data, x->nbytes, err);
    }
    const cd_attr *fetch_kernel = NULL;
    for (int i = 0; i < g->n_ops && !st; i++) {
        const cd_op *op = &g->ops[i];
        if (!strcmp(op->type, "fetch") && !fetch_kernel) fetch_kernel = cd_op_attr(op, KERNEL_ATTR);
        if (!cd_graph_add_op(ng, op->type, err)) {
            st = err->code;
            break;
        }
        for (int pass = 0; pass < 2 && !st; pass++) {
            const cd_slot *sl = pass ? op->out : op->in;
            int ns = pass ? op->n_out : op->n_in;
            for (int s = 0; s < ns && !st; s++) {
                const char **v = cd_calloc((size_t)sl[s].n + 1, sizeof *v, err);
                if (!v) {
                    st = CD_E_NOMEM;
                    break;
                }
                for (int j = 0; j < sl[s].n; j++) v[j] = sl[s].ids[j] >= 0 ? names[sl[s].ids[j]] : "";
                st = pass ? cd_op_add_output(ng, sl[s].name, v, sl[s].n, err)
                          : cd_op_add_input(ng, sl[s].name, v, sl[s].n, err);
                free(v);
            }
        }
        for (int a = 0; a < op->n_attr && !st; a++) st = copy_attr(ng, &op->attrs[a], retarget, err);
    }
    /* OpenCL outputs live on the device (image2d or buffer): the runtime's own boundary ops bring
     * them to the host, as opt inserts them before a model's own fetch (docs/nb-format.md §4.5): a
     * layout op to NCHW for image layouts, then io_copy device_to_host. Appended after the
     * model's ops, so no original op moves and no layer name changes. */
    for (int k = g->n_outputs; k < out->n_fetch && !st; k++) {
        cd_probe_fetch *f = &out->fetch[k];
        const cd_op *op = &g->ops[f->op_index];
        if (!op->kernel.present || op->kernel.target != 5) continue;
        if (!strncmp(op->type, "io_copy", 7) && !strcmp(op->kernel.alias, "device_to_host")) continue; /* on the host */
        const cd_tensor *x = &g->tensors[f->tensor_id];
        bool image = op->kernel.layout == 4 || op->kernel.layout == 5;
        for (int step = image ? 0 : 1; step < 2 && !st; step++) {
            size_t l = strlen(f->fetch_name) + 16;
            char *nn = malloc(l);
            if (!nn) {
                st = cd_err(err, CD_E_NOMEM, "out of memory");
                break;
            }
            snprintf(nn, l, "%s/%s", f->fetch_name, step ? "cldiff_host" : "cldiff_nchw");
            st = cd_graph_declare_var(ng, nn, f->dtype, f->shape.d, f->shape.rank, false, err);
            if (!st && !cd_graph_add_op(ng, step ? "io_copy" : "layout", err)) st = err->code;
            const char *in_name = f->fetch_name, *out_name = nn;
            if (!st) st = cd_op_add_input(ng, "Input", &in_name, 1, err);
            if (!st) st = cd_op_add_output(ng, "Out", &out_name, 1, err);
            char rec[96];
            snprintf(rec, sizeof rec, "%s",
                     step                         ? "io_copy/device_to_host/5/4/2"
                         : op->kernel.layout == 5 ? "layout/ImageFolder_to_NCHW/5/4/1"
                                                  : "layout/ImageDefault_to_NCHW/5/4/1");
            cd_attr kr = {.name = KERNEL_ATTR, .type = CD_ATTR_STRING, .s = rec};
            if (!st) st = copy_attr(ng, &kr, NULL, err);
            free(f->fetch_name);
            f->fetch_name = nn;
            (void)x;
        }
    }
    for (int k = g->n_outputs; k < out->n_fetch && !st; k++) {
        const cd_probe_fetch *f = &out->fetch[k];
        if (!cd_graph_add_op(ng, "fetch", err)) {
            st = err->code;
            break;
        }
        const char *x = f->fetch_name, *fv = "fetch";
        st = cd_op_add_input(ng, "X", &x, 1, err);
        if (!st) st = cd_op_add_output(ng, "Out", &fv, 1, err);
        cd_attr col = {.name = "col", .type = CD_ATTR_INT, .i = f->col};
        if (!st) st = copy_attr(ng, &col, NULL, err);
        cd_attr kr = {.name = KERNEL_ATTR, .type = CD_ATTR_STRING, .s = "fetch/def/1/4/2"};
        if (!st) st = copy_attr(ng, fetch_kernel ? fetch_kernel : &kr, NULL, err);
    }
    if (!st) st = cd_graph_finalize(ng, err);
    if (!st) {
        ng->meta_version = g->meta_version;
        memcpy(ng->opt_version, g->opt_version, sizeof ng->opt_version);
        ng->program_version = g->program_version;
        out->g = ng;
    } else if (ng) {
        cd_graph_free(ng);
    }
    for (int t = 0; t < nt; t++) free(names[t]);
    free(names);
    free(keep);
    if (st) {
        cd_instrumented_free(out);
        return cd_err_prefix(err, "instrumenting the model: ");
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ manifest */

static const char *const DT_NAMES[CD_DTYPE_COUNT] = {"float32", "float16", "int8", "int16",  "int32",
                                                     "int64",   "uint8",   "bool", "float64"};

const char *cd_manifest_dtype_name(cd_dtype t) { return (int)t >= 0 && t < CD_DTYPE_COUNT ? DT_NAMES[t] : "unknown"; }

int cd_manifest_dtype_parse(const char *s) {
    for (int i = 0; i < CD_DTYPE_COUNT; i++)
        if (!strcmp(s, DT_NAMES[i])) return i;
    return -1;
}

static void put_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_shape(FILE *f, const cd_shape *s) {
    fputc('[', f);
    for (int i = 0; i < s->rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)s->d[i]);
    fputc(']', f);
}

cd_status cd_manifest_write(const char *path, const cd_graph *orig, const cd_instrumented *in,
                            const cd_manifest_info *mi, cd_error *err) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return cd_err(err, CD_E_IO, "cannot write the manifest '%s': %s", tmp, strerror(errno));
    fputs("{\n  \"format\": \"cldiff-probe-manifest\",\n  \"version\": 1,\n  \"model\": ", f);
    put_str(f, mi->model_path);
    fputs(",\n  \"model_sha256\": ", f);
    put_str(f, mi->model_sha256);
    fputs(",\n  \"instrumented\": ", f);
    put_str(f, mi->instrumented_path);
    fprintf(f, ",\n  \"n_model_outputs\": %d,\n  \"n_fetch\": %d,\n  \"renamed_activations\": %d,\n  \"inputs\": [",
            in->n_model_outputs, in->n_fetch, in->n_renamed);
    for (int k = 0; k < mi->n_inputs; k++) {
        fputs(k ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        put_str(f, mi->input_names[k]);
        fputs(", \"shape\": ", f);
        put_shape(f, &mi->input_shapes[k]);
        fputs("}", f);
    }
    fputs("\n  ],\n  \"fetch\": [", f);
    for (int k = 0; k < in->n_fetch; k++) {
        const cd_probe_fetch *e = &in->fetch[k];
        const cd_op *op = e->op_index >= 0 ? &orig->ops[e->op_index] : NULL;
        fprintf(f, "%s\n    {\"col\": %d, \"op_index\": %d, \"layer\": ", k ? "," : "", e->col, e->op_index);
        put_str(f, op ? op->name : "");
        fputs(", \"op_type\": ", f);
        put_str(f, op ? op->type : "");
        fputs(", \"tensor\": ", f);
        put_str(f, orig->tensors[e->tensor_id].name);
        fputs(", \"fetch_name\": ", f);
        put_str(f, e->fetch_name);
        fputs(", \"slot\": ", f);
        put_str(f, e->slot);
        fprintf(f, ", \"dtype\": \"%s\", \"shape\": ", cd_manifest_dtype_name(e->dtype));
        put_shape(f, &e->shape);
        fprintf(f, ", \"model_output\": %s, \"probed\": %s}", e->model_output ? "true" : "false",
                e->probed ? "true" : "false");
    }
    fputs("\n  ]\n}\n", f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0) bad = true;
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return cd_err(err, CD_E_IO, "cannot write the manifest '%s': %s", path, strerror(e));
    }
    return CD_OK;
}

void cd_manifest_free(cd_manifest *m) {
    if (!m) return;
    free(m->e);
    memset(m, 0, sizeof *m);
}

static bool get_int(const cd_json *o, const char *k, int *v) {
    const cd_json *j = cd_json_get(o, k);
    if (!j || j->kind != CD_JSON_NUM || j->num != (double)(int)j->num) return false;
    *v = (int)j->num;
    return true;
}

static bool get_str(const cd_json *o, const char *k, char *buf, size_t n) {
    const cd_json *j = cd_json_get(o, k);
    if (!j || j->kind != CD_JSON_STR || strlen(j->str) >= n) return false;
    memcpy(buf, j->str, strlen(j->str) + 1);
    return true;
}

static bool get_shape(const cd_json *o, const char *k, cd_shape *s) {
    const cd_json *j = cd_json_get(o, k);
    if (!j || j->kind != CD_JSON_ARR || j->n > CD_MAX_RANK) return false;
    s->rank = j->n;
    for (int i = 0; i < j->n; i++) {
        if (j->items[i].kind != CD_JSON_NUM || j->items[i].num < -1 || j->items[i].num > 9e15) return false;
        s->d[i] = (int64_t)j->items[i].num;
    }
    return true;
}

cd_status cd_manifest_read(const char *path, cd_manifest *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open the manifest '%s': %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = cap ? cap * 2 : 65536;
            if (cap > ((size_t)256 << 20)) {
                free(buf);
                fclose(f);
                return cd_err(err, CD_E_MODEL, "manifest '%s' is larger than 256 MiB", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return cd_err(err, CD_E_NOMEM, "out of memory");
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0) break;
    }
    bool rerr = ferror(f) != 0;
    fclose(f);
    if (rerr) {
        free(buf);
        return cd_err(err, CD_E_MODEL, "cannot read the manifest '%s'", path);
    }
    cd_json j;
    cd_status st = cd_json_parse(buf, len, path, &j, err);
    free(buf);
    if (st) return st;
    const cd_json *fmt = cd_json_get(&j, "format"), *fe = cd_json_get(&j, "fetch");
    if (!fmt || fmt->kind != CD_JSON_STR || strcmp(fmt->str, "cldiff-probe-manifest") || !fe ||
        fe->kind != CD_JSON_ARR) {
        cd_json_free(&j);
        return cd_err(err, CD_E_MODEL,
                      "%s is not a cldiff probe manifest (no \"format\": \"cldiff-probe-manifest\" "
                      "and \"fetch\" list; `cldiff instrument` writes one beside probed.nb)",
                      path);
    }
    get_str(&j, "model", out->model_path, sizeof out->model_path);
    get_str(&j, "model_sha256", out->model_sha256, sizeof out->model_sha256);
    get_str(&j, "instrumented", out->instrumented, sizeof out->instrumented);
    if (!get_int(&j, "n_model_outputs", &out->n_model_outputs)) out->n_model_outputs = 0;
    out->e = cd_calloc((size_t)fe->n + 1, sizeof *out->e, err);
    if (!out->e) {
        cd_json_free(&j);
        return CD_E_NOMEM;
    }
    for (int k = 0; k < fe->n && !st; k++) {
        const cd_json *o = &fe->items[k];
        cd_manifest_entry *e = &out->e[k];
        char dt[32] = "";
        const cd_json *mo = cd_json_get(o, "model_output"), *pr = cd_json_get(o, "probed");
        if (o->kind != CD_JSON_OBJ || !get_int(o, "col", &e->col) || !get_int(o, "op_index", &e->op_index) ||
            !get_str(o, "tensor", e->tensor, sizeof e->tensor) || !get_str(o, "dtype", dt, sizeof dt) ||
            !get_shape(o, "shape", &e->shape) || e->col < 0 || e->op_index < -1) {
            st = cd_err(err, CD_E_MODEL, "%s: fetch entry %d lacks a valid col, op_index, tensor, dtype or shape", path,
                        k);
            break;
        }
        int d = cd_manifest_dtype_parse(dt);
        if (d < 0) {
            st = cd_err(err, CD_E_MODEL, "%s: fetch entry %d (tensor '%s') has unknown dtype '%s'", path, k, e->tensor,
                        dt);
            break;
        }
        e->dtype = (cd_dtype)d;
        get_str(o, "layer", e->layer, sizeof e->layer);
        get_str(o, "op_type", e->op_type, sizeof e->op_type);
        get_str(o, "fetch_name", e->fetch_name, sizeof e->fetch_name);
        e->model_output = mo && mo->kind == CD_JSON_BOOL && mo->num != 0;
        e->probed = !pr || (pr->kind == CD_JSON_BOOL && pr->num != 0);
        for (int q = 0; q < k && !st; q++)
            if (out->e[q].col == e->col)
                st = cd_err(err, CD_E_MODEL, "%s: fetch col %d appears twice (entries %d and %d)", path, e->col, q, k);
        out->n = k + 1;
    }
    cd_json_free(&j);
    if (st) cd_manifest_free(out);
    return st;
}

/* ------------------------------------------------------------------ files */

void cd_manifest_path_for(const char *nb_path, char *out, size_t n) {
    size_t l = strlen(nb_path);
    if (l > 3 && !strcmp(nb_path + l - 3, ".nb"))
        snprintf(out, n, "%.*s.manifest.json", (int)(l - 3), nb_path);
    else
        snprintf(out, n, "%s.manifest.json", nb_path);
}

int cd_target_from_name(const char *s) {
    if (!strcmp(s, "host")) return 1;
    if (!strcmp(s, "x86")) return 2;
    if (!strcmp(s, "arm")) return 4;
    if (!strcmp(s, "opencl")) return 5;
    return -1;
}

cd_status cd_write_instrumented(const cd_graph *g, const bool *mask, const cd_value *meta, const cd_retarget *retarget,
                                const char *model_path, const char *sha256, const cd_shape *in_shapes,
                                const char *out_nb, char *manifest_out, size_t mn, cd_instrumented *keep,
                                cd_error *err) {
    cd_instrumented in;
    cd_status st = cd_instrument(g, mask, meta, retarget, &in, err);
    if (st) return st;
    st = cd_nb_write(in.g, out_nb, err);
    if (st) {
        cd_instrumented_free(&in);
        return st;
    }
    char mpath[1100];
    cd_manifest_path_for(out_nb, mpath, sizeof mpath);
    const char **names = calloc((size_t)g->n_inputs + 1, sizeof *names);
    if (!names) {
        cd_instrumented_free(&in);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    for (int k = 0; k < g->n_inputs; k++) names[k] = g->tensors[g->inputs[k]].name;
    cd_manifest_info mi = {.model_path = model_path,
                           .model_sha256 = sha256,
                           .instrumented_path = out_nb,
                           .n_inputs = g->n_inputs,
                           .input_names = names,
                           .input_shapes = in_shapes};
    st = cd_manifest_write(mpath, g, &in, &mi, err);
    free(names);
    if (manifest_out) snprintf(manifest_out, mn, "%s", mpath);
    if (!st && keep)
        *keep = in;
    else
        cd_instrumented_free(&in);
    return st;
}
