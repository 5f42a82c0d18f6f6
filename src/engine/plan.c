/* The planner: support check, parameter conversion, shape inference in op order (with
 * plan-time evaluation of cheap integer ops), buffer lifetimes and peak memory. */
#define _GNU_SOURCE /* qsort_r */
#include "engine/plan.h"
#include "engine/params.h"
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Plan-time evaluation is for small host tensors (shape vectors, constants); anything
 * larger waits for the run so planning stays cheap. */
#define PLAN_EVAL_MAX_ELEMS (1 << 16)

static bool is_float(cd_dtype t) { return t == CD_F32 || t == CD_F16 || t == CD_F64; }

/* Growing text buffer for messages that list many items. */
typedef struct {
    char *p;
    size_t len, cap;
} sbuf;
static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    for (;;) {
        size_t room = b->cap - b->len;
        va_start(ap, fmt);
        int n = b->p ? vsnprintf(b->p + b->len, room, fmt, ap) : -2;
        va_end(ap);
        if (n >= 0 && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 512;
        if (n >= 0 && nc < b->len + (size_t)n + 1) nc = b->len + (size_t)n + 1;
        char *q = realloc(b->p, nc);
        if (!q) return; /* message gets truncated, the error code still stands */
        b->p = q;
        b->cap = nc;
    }
}

void cd_plan_free(cd_plan *plan) {
    if (!plan) return;
    if (plan->meta && plan->g)
        for (int i = 0; i < plan->g->n_tensors; i++) cd_value_release(&plan->meta[i]);
    free(plan->meta);
    free(plan->defs);
    free(plan->last_use);
    memset(plan, 0, sizeof *plan);
}

static cd_status check_support(const cd_graph *g, cd_plan *plan, cd_error *err) {
    const char *reg = cd_op_registry_error();
    if (reg) return cd_err(err, CD_E_INTERNAL, "%s", reg);
    sbuf b = {0};
    int bad = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        plan->defs[i] = cd_op_find(op->type);
        /* feed is executed by the engine itself (the input value is set directly); an op an
         * engine gave shapes to (CD_ENGINE_SHAPES_ATTR) is planned from them, with no definition */
        if (!plan->defs[i] && strcmp(op->type, "feed") && !cd_op_attr(op, CD_ENGINE_SHAPES_ATTR)) {
            if (bad < 50) sb_printf(&b, "%s  #%d %s (%s)", bad ? "\n" : "", i, op->name, op->type);
            bad++;
        }
    }
    if (!bad) return CD_OK;
    cd_err(err, CD_E_UNSUPPORTED,
           "%d op%s in this model %s not supported by cldiff (nothing was run):\n%s%s\n"
           "Run `cldiff ops` to list supported op types; a model converted with a different "
           "Paddle-Lite opt configuration may avoid them.",
           bad, bad == 1 ? "" : "s", bad == 1 ? "is" : "are", b.p ? b.p : "", bad > 50 ? "\n  ..." : "");
    free(b.p);
    return CD_E_UNSUPPORTED;
}

static bool shape_valid(const cd_shape *s) {
    if (s->rank < 0 || s->rank > CD_MAX_RANK) return false;
    for (int i = 0; i < s->rank; i++)
        if (s->d[i] < 0) return false;
    return cd_shape_numel(s) >= 0;
}

/* Ops that read only the shape/dtype of their inputs, never the data: they can be
 * evaluated at plan time even though their (activation) inputs hold no data yet. */
static bool reads_shape_only(const char *type) {
    static const char *const k[] = {"shape", "size", "fill_constant_batch_size_like", "fill_any_like",
                                    "fill_zeros_like"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcmp(type, k[i])) return true;
    return false;
}

/* A CD_OPF_SHAPE op runs at plan time when everything it reads is known: every connected
 * input holds data (params, model constants, earlier plan-time results), or the op reads
 * only shapes; and its outputs are small. Otherwise it just runs with the others. */
static bool can_eval_now(const cd_plan *plan, const cd_op *op) {
    bool missing = false;
    for (int s = 0; s < op->n_in; s++)
        for (int k = 0; k < op->in[s].n; k++) {
            int id = op->in[s].ids[k];
            if (id >= 0 && !plan->meta[id].data && cd_shape_numel(&plan->meta[id].shape) != 0) missing = true;
        }
    if (missing && !reads_shape_only(op->type)) return false;
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id >= 0 && cd_shape_numel(&plan->meta[id].shape) > PLAN_EVAL_MAX_ELEMS) return false;
        }
    return true;
}

/* Marks tensors whose variable name is written more than once (the optimizer's memory
 * reuse): their declared shape belongs to whichever use the optimizer saw last, so it
 * says nothing about this tensor. Sorting by name keeps this O(n log n). */
static int cmp_tensor_name(const void *a, const void *b, void *ctx) {
    const cd_graph *g = ctx;
    return strcmp(g->tensors[*(const int *)a].name, g->tensors[*(const int *)b].name);
}
static bool *reused_names(const cd_graph *g) {
    int n = g->n_tensors;
    bool *reused = calloc((size_t)(n ? n : 1), sizeof *reused);
    int *idx = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!reused || !idx) {
        free(idx);
        return reused;
    }
    for (int i = 0; i < n; i++) idx[i] = i;
    qsort_r(idx, (size_t)n, sizeof *idx, cmp_tensor_name, (void *)g);
    for (int a = 0; a < n;) {
        int b = a + 1;
        while (b < n && !strcmp(g->tensors[idx[a]].name, g->tensors[idx[b]].name)) b++;
        int writes = 0;
        for (int k = a; k < b; k++) writes += g->tensors[idx[k]].producer >= 0;
        if (writes > 1)
            for (int k = a; k < b; k++) reused[idx[k]] = true;
        a = b;
    }
    free(idx);
    return reused;
}

/* An op with no definition whose outputs' types and shapes an engine reported (model/graph.h
 * CD_ENGINE_SHAPES_ATTR: per output dtype, rank, dims): taken as they are; float outputs in the
 * run's activation type. */
static cd_status infer_engine_shapes(cd_op_ctx *c) {
    const int64_t *v = NULL;
    int n = cd_attr_ints(c->op, CD_ENGINE_SHAPES_ATTR, &v), p = 0;
    for (int s = 0; s < c->op->n_out; s++)
        for (int k = 0; k < c->op->out[s].n; k++) {
            int id = c->op->out[s].ids[k];
            if (p + 2 > n || v[p] < 0 || v[p] >= CD_DTYPE_COUNT || v[p + 1] < 0 || v[p + 1] > CD_MAX_RANK ||
                p + 2 + v[p + 1] > n)
                return cd_op_fail(c, CD_E_MODEL, "the engine's shapes do not cover output %s[%d]", c->op->out[s].name,
                                  k);
            cd_value *o = id >= 0 ? &c->vals[id] : NULL;
            if (o) {
                o->dtype = is_float((cd_dtype)v[p]) ? cd_act_dtype(c) : (cd_dtype)v[p];
                o->shape.rank = (int)v[p + 1];
                for (int d = 0; d < o->shape.rank; d++) o->shape.d[d] = v[p + 2 + d];
            }
            p += 2 + (int)v[p + 1];
        }
    return CD_OK;
}

static cd_status infer_op(const cd_graph *g, cd_plan *plan, int i, sbuf *warn, const bool *reused, cd_error *err) {
    const cd_op *op = &g->ops[i];
    const cd_op_def *def = plan->defs[i];
    cd_op_ctx c = {.g = g, .op = op, .op_index = i, .vals = plan->meta, .prec = plan->prec, .threads = 1, .err = err};
    if (!strcmp(op->type, "feed")) {
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id >= 0 && plan->meta[id].shape.rank < 0)
                    return cd_op_fail(&c, CD_E_MODEL,
                                      "feeds '%s', which is not a model input (col attribute "
                                      "inconsistent)",
                                      g->tensors[id].name);
            }
        return CD_OK;
    }
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            if (g->tensors[id].persistable)
                return cd_op_fail(&c, CD_E_MODEL, "writes parameter '%s'; parameters are read-only",
                                  g->tensors[id].name);
            cd_value_release(&plan->meta[id]);
            plan->meta[id].shape.rank = -1; /* so a shape rule that forgets an output is caught */
            plan->meta[id].dtype = cd_act_dtype(&c);
        }
    cd_status st = def ? def->infer(&c) : infer_engine_shapes(&c);
    if (st) {
        if (err && !strstr(err->msg, "op #")) cd_err_prefix(err, "op #%d %s (%s): ", i, op->name, op->type);
        return st;
    }
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value *v = &plan->meta[id];
            if (!shape_valid(v->shape.rank < 0 ? &(cd_shape){.rank = -1} : &v->shape) ||
                (unsigned)v->dtype >= CD_DTYPE_COUNT)
                return cd_op_fail(&c, v->shape.rank < 0 ? CD_E_INTERNAL : CD_E_MODEL,
                                  "output %s[%d] '%s' got %s from the shape rule", op->out[s].name, k,
                                  g->tensors[id].name, v->shape.rank < 0 ? "no shape" : "an invalid shape");
            const cd_shape *decl = &g->tensors[id].shape;
            bool declared = decl->rank > 0 && !(reused && reused[id]);
            for (int d = 0; d < decl->rank; d++)
                if (decl->d[d] < 0) declared = false;
            if (declared && !cd_shape_eq(decl, &v->shape)) {
                char a[160], b[160];
                sb_printf(warn, "op #%d %s (%s): output '%s' has inferred shape %s but the model declares %s\n", i,
                          op->name, op->type, g->tensors[id].name, cd_shape_str(&v->shape, a, sizeof a),
                          cd_shape_str(decl, b, sizeof b));
            }
        }
    /* Identity copies (io_copy, layout) carry shape vectors between targets in OpenCL
     * models, so they are evaluated too when their input is already known. */
    if (def && (def->flags & (CD_OPF_SHAPE | CD_OPF_IDENTITY)) && can_eval_now(plan, op)) {
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id >= 0 && (st = cd_value_alloc(&plan->meta[id], err))) return st;
            }
        st = def->run(&c);
        if (st) {
            if (err && !strstr(err->msg, "op #")) cd_err_prefix(err, "op #%d %s (%s): ", i, op->name, op->type);
            return st;
        }
    }
    return CD_OK;
}

static void compute_lifetimes(const cd_graph *g, cd_plan *plan) {
    for (int t = 0; t < g->n_tensors; t++) plan->last_use[t] = -1;
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        for (int s = 0; s < op->n_in; s++)
            for (int k = 0; k < op->in[s].n; k++)
                if (op->in[s].ids[k] >= 0) plan->last_use[op->in[s].ids[k]] = i;
    }
    for (int k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0) plan->last_use[g->outputs[k]] = g->n_ops;
    /* Peak: inputs live from the start; an op's outputs are allocated while its inputs
     * are still live; a tensor dies after its last reader (or at once if never read). */
    int64_t live = 0, peak = 0;
    for (int k = 0; k < g->n_inputs; k++) {
        const cd_value *v = &plan->meta[g->inputs[k]];
        live += cd_shape_numel(&v->shape) * (int64_t)cd_dtype_size(v->dtype);
    }
    peak = live;
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (!strcmp(op->type, "feed")) continue;
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id < 0) continue;
                live += cd_shape_numel(&plan->meta[id].shape) * (int64_t)cd_dtype_size(plan->meta[id].dtype);
            }
        if (live > peak) peak = live;
        for (int t = 0; t < g->n_tensors; t++) {
            if (g->tensors[t].persistable) continue;
            if (plan->last_use[t] == i || (plan->last_use[t] == -1 && g->tensors[t].producer == i))
                live -= cd_shape_numel(&plan->meta[t].shape) * (int64_t)cd_dtype_size(plan->meta[t].dtype);
        }
    }
    plan->act_bytes_peak = peak;
}

cd_status cd_plan_build(const cd_graph *g, const cd_shape *input_shapes, cd_precision prec, cd_plan *plan,
                        cd_error *err) {
    memset(plan, 0, sizeof *plan);
    plan->g = g;
    plan->prec = prec;
    int nt = g->n_tensors;
    plan->meta = cd_calloc((size_t)nt, sizeof *plan->meta, err);
    plan->defs = cd_calloc((size_t)g->n_ops, sizeof *plan->defs, err);
    plan->last_use = cd_calloc((size_t)nt, sizeof *plan->last_use, err);
    if (!plan->meta || !plan->defs || !plan->last_use) {
        cd_plan_free(plan);
        return CD_E_NOMEM;
    }
    cd_status st = check_support(g, plan, err);
    if (st) {
        cd_plan_free(plan);
        return st;
    }
    for (int t = 0; t < nt; t++) {
        plan->meta[t].shape.rank = -1; /* unknown until an input, param or producer sets it */
        plan->meta[t].dtype =
            is_float(g->tensors[t].dtype) ? (prec == CD_PREC_FP16 ? CD_F16 : CD_F32) : g->tensors[t].dtype;
    }
    for (int k = 0; k < g->n_inputs; k++) {
        int id = g->inputs[k];
        char b[160];
        if (!shape_valid(&input_shapes[k]) || input_shapes[k].rank == 0) {
            cd_plan_free(plan);
            return cd_err(err, CD_E_USAGE,
                          "input %d '%s': shape %s is not a valid concrete shape "
                          "(give positive dims, e.g. --shape %s=1,3,224,224)",
                          k, g->tensors[id].name, cd_shape_str(&input_shapes[k], b, sizeof b), g->tensors[id].name);
        }
        plan->meta[id].shape = input_shapes[k];
    }
    if ((st = cd_params_prepare(g, prec, plan->meta, &plan->param_bytes, &plan->int8_dequantized, err))) {
        cd_plan_free(plan);
        return st;
    }
    sbuf warn = {0};
    bool *reused = reused_names(g); /* NULL on OOM: then every declared shape is checked */
    for (int i = 0; i < g->n_ops && !st; i++) {
        /* Inputs must have been produced: a dangling read means the graph is malformed. */
        const cd_op *op = &g->ops[i];
        for (int s = 0; s < op->n_in && !st && strcmp(op->type, "feed"); s++)
            for (int k = 0; k < op->in[s].n; k++) {
                int id = op->in[s].ids[k];
                if (id >= 0 && plan->meta[id].shape.rank < 0) {
                    st = cd_err(err, CD_E_MODEL,
                                "op #%d %s (%s): input %s[%d] '%s' is read before any op "
                                "writes it and it is neither a parameter nor a model input",
                                i, op->name, op->type, op->in[s].name, k, g->tensors[id].name);
                    break;
                }
            }
        if (!st) st = infer_op(g, plan, i, &warn, reused, err);
    }
    free(reused);
    if (warn.p && !st) cd_graph_warn((cd_graph *)g, "%s", warn.p); /* warnings live in the graph by design */
    free(warn.p);
    if (st) {
        cd_plan_free(plan);
        return st;
    }
    compute_lifetimes(g, plan);
    return CD_OK;
}

/* ---- input shapes ---- */

static cd_status parse_override(const cd_graph *g, const char *ov, int *which, cd_shape *out, cd_error *err) {
    const char *eq = strchr(ov, '=');
    if (!eq || eq == ov) return cd_err(err, CD_E_USAGE, "shape override '%s' must look like NAME=1,3,224,224", ov);
    size_t nl = (size_t)(eq - ov);
    *which = -1;
    for (int k = 0; k < g->n_inputs; k++) {
        const char *nm = g->tensors[g->inputs[k]].name;
        if (strlen(nm) == nl && !strncmp(nm, ov, nl)) *which = k;
    }
    if (*which < 0) {
        sbuf b = {0};
        for (int k = 0; k < g->n_inputs; k++) sb_printf(&b, "%s'%s'", k ? ", " : "", g->tensors[g->inputs[k]].name);
        cd_err(err, CD_E_USAGE, "shape override '%s' names '%.*s', which is not a model input; inputs are: %s", ov,
               (int)nl, ov, b.p ? b.p : "(none)");
        free(b.p);
        return CD_E_USAGE;
    }
    const char *p = eq + 1;
    out->rank = 0;
    for (;;) {
        while (*p == ' ') p++;
        if (!isdigit((unsigned char)*p))
            return cd_err(err, CD_E_USAGE, "shape override '%s': expected a positive integer at '%s'", ov, p);
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno || v <= 0 || v > (1LL << 31))
            return cd_err(err, CD_E_USAGE, "shape override '%s': dimension '%.*s' must be in 1..2^31", ov,
                          (int)(end - p), p);
        if (out->rank == CD_MAX_RANK)
            return cd_err(err, CD_E_USAGE, "shape override '%s': more than %d dimensions", ov, CD_MAX_RANK);
        out->d[out->rank++] = v;
        p = end;
        while (*p == ' ') p++;
        if (!*p) break;
        if (*p != ',' && *p != 'x')
            return cd_err(err, CD_E_USAGE, "shape override '%s': unexpected '%c' (separate dims with commas)", ov, *p);
        p++;
    }
    if (cd_shape_numel(out) < 0 || cd_shape_numel(out) > (1LL << 40))
        return cd_err(err, CD_E_USAGE, "shape override '%s': too many elements", ov);
    return CD_OK;
}

cd_status cd_resolve_input_shapes(const cd_graph *g, const char *const *overrides, int n_overrides,
                                  cd_shape *shapes_out, char *notice, size_t notice_len, cd_error *err) {
    if (notice && notice_len) notice[0] = 0;
    bool *given = cd_calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *given, err);
    if (!given) return CD_E_NOMEM;
    cd_status st = CD_OK;
    for (int o = 0; o < n_overrides && !st; o++) {
        int k = -1;
        cd_shape s;
        st = parse_override(g, overrides[o], &k, &s, err);
        if (!st) {
            shapes_out[k] = s;
            given[k] = true;
        }
    }
    sbuf dyn = {0}, note = {0};
    int ndyn = 0;
    for (int k = 0; k < g->n_inputs && !st; k++) {
        if (given[k]) continue;
        const cd_tensor *t = &g->tensors[g->inputs[k]];
        cd_shape s = t->shape;
        char b[160];
        if (s.rank == 0) {
            sb_printf(&dyn, "\n  input '%s' has no declared shape; give --shape %s=<dims>", t->name, t->name);
            ndyn++;
            continue;
        }
        if (s.d[0] == -1) {
            s.d[0] = 1;
            sb_printf(&note, "%sinput '%s': declared %s, using batch 1 (override with --shape %s=...)",
                      note.len ? "\n" : "", t->name, cd_shape_str(&t->shape, b, sizeof b), t->name);
        }
        sbuf which = {0};
        int nw = 0;
        for (int d = 0; d < s.rank; d++)
            if (s.d[d] < 0) sb_printf(&which, "%s%d", nw++ ? "," : "", d);
        if (nw) {
            sb_printf(&dyn, "\n  input '%s' declared %s: dim%s %s %s dynamic; give --shape %s=", t->name,
                      cd_shape_str(&t->shape, b, sizeof b), nw > 1 ? "s" : "", which.p, nw > 1 ? "are" : "is", t->name);
            /* the known dims in place, so the user only fills in the blanks */
            for (int d = 0; d < s.rank; d++) {
                if (s.d[d] < 0)
                    sb_printf(&dyn, "%s<d%d>", d ? "," : "", d);
                else
                    sb_printf(&dyn, "%s%lld", d ? "," : "", (long long)s.d[d]);
            }
            ndyn++;
        }
        free(which.p);
        shapes_out[k] = s;
    }
    if (!st && ndyn) {
        st = cd_err(err, CD_E_USAGE, "%d model input%s %s dynamic dimensions that need a concrete size:%s", ndyn,
                    ndyn > 1 ? "s" : "", ndyn > 1 ? "have" : "has", dyn.p ? dyn.p : "");
    }
    if (!st && notice && notice_len && note.p) snprintf(notice, notice_len, "%s", note.p);
    free(dyn.p);
    free(note.p);
    free(given);
    return st;
}
