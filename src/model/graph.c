/* Graph IR builder (types and names: graph_types.c; attribute and slot queries:
 * graph_query.c).
 *
 * Readers declare variables, then add ops slot by slot; every output creates a fresh SSA
 * tensor immediately, but the name -> current-tensor map is only updated when the next op
 * starts (or at finalize). That way an in-place op (Out named like X) still reads the
 * previous version of the variable regardless of the order in which a reader adds the
 * op's inputs and outputs. */
#include "model/graph.h"
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_ATTR "__@kernel_type_attr@__"
/* Warnings are for humans; a hostile file must not make us grow them without bound. */
#define WARN_CAP (256u * 1024u)

/* ---------------------------------------------------------------- string map */
typedef struct {
    char **keys; /* borrowed */
    int *vals;
    size_t cap, n;
} strmap;

static uint64_t str_hash(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int map_get(const strmap *m, const char *k) {
    if (!m->cap) return -1;
    size_t i = (size_t)str_hash(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (!strcmp(m->keys[i], k)) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static bool map_put(strmap *m, char *k, int v) {
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 64;
        char **nk = calloc(nc, sizeof *nk);
        int *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t j = (size_t)str_hash(m->keys[i]) & (nc - 1);
            while (nk[j]) j = (j + 1) & (nc - 1);
            nk[j] = m->keys[i];
            nv[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = nc;
    }
    size_t i = (size_t)str_hash(k) & (m->cap - 1);
    while (m->keys[i]) {
        if (!strcmp(m->keys[i], k)) {
            m->vals[i] = v;
            return true;
        }
        i = (i + 1) & (m->cap - 1);
    }
    m->keys[i] = k;
    m->vals[i] = v;
    m->n++;
    return true;
}

static void map_free(strmap *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---------------------------------------------------------------- private state */
typedef struct {
    char *name;
    cd_dtype dtype;
    cd_shape shape;
    bool persistable;
    int cur;      /* current SSA tensor id, -1 before the first read/write */
    int nver;     /* tensors created with this name so far */
    int param;    /* tensor holding the record's data, -1 if none yet */
    bool written; /* some op writes this name */
} var_t;

typedef struct {
    var_t *vars;
    int n_vars, cap_vars;
    strmap names;
    int *pend_var, *pend_tid; /* outputs of the last op, committed at the next op */
    int n_pend, cap_pend;
    bool finalized;
    bool warn_truncated;
} priv_t;

static priv_t *P(const cd_graph *g) { return (priv_t *)g->priv; }

static bool grow(void **p, int *cap, int need, size_t elem) {
    if (need <= *cap) return true;
    int nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > INT_MAX / 2) return false;
        nc *= 2;
    }
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *p = q;
    *cap = nc;
    return true;
}

/* ---------------------------------------------------------------- lifetime */
cd_graph *cd_graph_new(void) {
    cd_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->priv = calloc(1, sizeof(priv_t));
    if (!g->priv) {
        free(g);
        return NULL;
    }
    g->meta_version = 2;
    return g;
}

static void attr_free(cd_attr *a) {
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    if (a->strings)
        for (int i = 0; i < a->n; i++) free(a->strings[i]);
    free(a->strings);
}

void cd_graph_free(cd_graph *g) {
    if (!g) return;
    for (int i = 0; i < g->n_ops; i++) {
        cd_op *op = &g->ops[i];
        free(op->type);
        free(op->name);
        for (int k = 0; k < op->n_in; k++) {
            free(op->in[k].name);
            free(op->in[k].ids);
        }
        for (int k = 0; k < op->n_out; k++) {
            free(op->out[k].name);
            free(op->out[k].ids);
        }
        for (int k = 0; k < op->n_attr; k++) attr_free(&op->attrs[k]);
        free(op->in);
        free(op->out);
        free(op->attrs);
    }
    free(g->ops);
    for (int i = 0; i < g->n_tensors; i++) {
        free(g->tensors[i].name);
        free(g->tensors[i].data);
    }
    free(g->tensors);
    free(g->inputs);
    free(g->outputs);
    free(g->warnings);
    priv_t *p = P(g);
    if (p) {
        for (int i = 0; i < p->n_vars; i++) free(p->vars[i].name);
        free(p->vars);
        map_free(&p->names);
        free(p->pend_var);
        free(p->pend_tid);
        free(p);
    }
    free(g);
}

void cd_graph_warn(cd_graph *g, const char *fmt, ...) {
    if (!g) return;
    priv_t *p = P(g);
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = strlen(line);
    if (g->warnings_len + len + 2 > WARN_CAP) {
        if (p && !p->warn_truncated) {
            p->warn_truncated = true;
            const char *t = "(further warnings suppressed)\n";
            size_t tl = strlen(t);
            char *w = realloc(g->warnings, g->warnings_len + tl + 1);
            if (!w) return;
            memcpy(w + g->warnings_len, t, tl + 1);
            g->warnings = w;
            g->warnings_len += tl;
        }
        return;
    }
    char *w = realloc(g->warnings, g->warnings_len + len + 2);
    if (!w) return;
    memcpy(w + g->warnings_len, line, len);
    w[g->warnings_len + len] = '\n';
    w[g->warnings_len + len + 1] = 0;
    g->warnings = w;
    g->warnings_len += len + 1;
}

/* ---------------------------------------------------------------- builder */
static cd_status check_open(cd_graph *g, cd_error *err) {
    if (!g || !g->priv) return cd_err(err, CD_E_INTERNAL, "graph builder used on a NULL graph");
    if (P(g)->finalized) return cd_err(err, CD_E_INTERNAL, "graph builder used after cd_graph_finalize");
    return CD_OK;
}

static cd_status fill_shape(cd_shape *s, const int64_t *dims, int rank, bool allow_unknown, const char *what,
                            const char *name, cd_error *err) {
    if (rank < 0 || rank > CD_MAX_RANK)
        return cd_err(err, CD_E_MODEL, "%s '%s' has rank %d; cldiff supports ranks 0..%d", what, name, rank,
                      CD_MAX_RANK);
    s->rank = rank;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < (allow_unknown ? -1 : 0))
            return cd_err(err, CD_E_MODEL, "%s '%s' has invalid dimension %lld at axis %d", what, name,
                          (long long)dims[i], i);
        s->d[i] = dims[i];
    }
    for (int i = rank; i < CD_MAX_RANK; i++) s->d[i] = 0;
    return CD_OK;
}

cd_status cd_graph_declare_var(cd_graph *g, const char *name, cd_dtype dtype, const int64_t *dims, int rank,
                               bool persistable, cd_error *err) {
    if (check_open(g, err)) return err ? err->code : CD_E_INTERNAL;
    priv_t *p = P(g);
    if (!name || !*name) return cd_err(err, CD_E_MODEL, "variable with an empty name");
    if (map_get(&p->names, name) >= 0) return CD_OK; /* later declarations are ignored */
    if ((unsigned)dtype >= CD_DTYPE_COUNT)
        return cd_err(err, CD_E_MODEL, "variable '%s' has unknown element type %d", name, (int)dtype);
    var_t v = {0};
    if (fill_shape(&v.shape, dims, rank, true, "variable", name, err)) return err ? err->code : CD_E_MODEL;
    if (!grow((void **)&p->vars, &p->cap_vars, p->n_vars + 1, sizeof(var_t)))
        return cd_err(err, CD_E_NOMEM, "out of memory declaring variable '%s'", name);
    v.name = cd_strdup(name);
    if (!v.name) return cd_err(err, CD_E_NOMEM, "out of memory declaring variable '%s'", name);
    v.dtype = dtype;
    v.persistable = persistable;
    v.cur = -1;
    v.param = -1;
    if (!map_put(&p->names, v.name, p->n_vars)) {
        free(v.name);
        return cd_err(err, CD_E_NOMEM, "out of memory declaring variable '%s'", name);
    }
    p->vars[p->n_vars++] = v;
    return CD_OK;
}

static int new_tensor(cd_graph *g, var_t *v, int producer, cd_error *err) {
    if (!grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1, sizeof(cd_tensor))) {
        cd_err(err, CD_E_NOMEM, "out of memory creating tensor '%s'", v->name);
        return -1;
    }
    cd_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = cd_strdup(v->name);
    if (!t->name) {
        cd_err(err, CD_E_NOMEM, "out of memory creating tensor '%s'", v->name);
        return -1;
    }
    t->dtype = v->dtype;
    t->shape = v->shape;
    t->producer = producer;
    t->version = v->nver++;
    return g->n_tensors++;
}

cd_status cd_graph_set_param(cd_graph *g, const char *name, cd_dtype dtype, const int64_t *dims, int rank,
                             const void *data, size_t nbytes, cd_error *err) {
    if (check_open(g, err)) return err ? err->code : CD_E_INTERNAL;
    priv_t *p = P(g);
    if (!name || !*name) return cd_err(err, CD_E_MODEL, "parameter record with an empty name");
    int vi = map_get(&p->names, name);
    if (vi < 0) {
        cd_graph_warn(g, "parameter record '%s' names no declared variable; ignored", name);
        return CD_OK;
    }
    var_t *v = &p->vars[vi];
    if (!v->persistable)
        return cd_err(err, CD_E_MODEL,
                      "parameter record '%s' belongs to a variable that is not persistable; the model is "
                      "inconsistent",
                      name);
    if (v->param >= 0) return cd_err(err, CD_E_MODEL, "duplicate parameter record '%s'", name);
    if ((unsigned)dtype >= CD_DTYPE_COUNT || !cd_dtype_size(dtype))
        return cd_err(err, CD_E_MODEL, "parameter '%s' has unknown element type %d", name, (int)dtype);
    cd_shape s;
    if (fill_shape(&s, dims, rank, false, "parameter", name, err)) return err ? err->code : CD_E_MODEL;
    int64_t numel = cd_shape_numel(&s);
    char sb[160];
    if (numel < 0 || (uint64_t)numel > SIZE_MAX / cd_dtype_size(dtype))
        return cd_err(err, CD_E_MODEL, "parameter '%s' shape %s has an element count that overflows", name,
                      cd_shape_str(&s, sb, sizeof sb));
    size_t need = (size_t)numel * cd_dtype_size(dtype);
    if (nbytes < need)
        return cd_err(err, CD_E_MODEL, "parameter '%s' (%s %s) needs %zu bytes but its record holds %zu", name,
                      cd_dtype_name(dtype), cd_shape_str(&s, sb, sizeof sb), need, nbytes);
    if (nbytes > need)
        cd_graph_warn(g, "parameter '%s': record holds %zu bytes, shape needs %zu; excess ignored", name, nbytes, need);
    /* The declared shape is a hint; the record is authoritative (docs/nb-format.md §8.5 rule 39). */
    if (v->shape.rank > 0 && cd_shape_numel(&v->shape) >= 0 && !cd_shape_eq(&v->shape, &s)) {
        char vb[160];
        cd_graph_warn(g, "parameter '%s': declared shape %s differs from record shape %s; using the record", name,
                      cd_shape_str(&v->shape, vb, sizeof vb), cd_shape_str(&s, sb, sizeof sb));
    }
    void *copy = malloc(need ? need : 1);
    if (!copy) return cd_err(err, CD_E_NOMEM, "out of memory (%zu bytes) for parameter '%s'", need, name);
    if (need) memcpy(copy, data, need);
    int tid;
    int read0 = -1; /* the version an op read before any op wrote the name (batch_norm's Mean, then MeanOut) */
    if (v->cur >= 0 && g->tensors[v->cur].producer < 0 && g->tensors[v->cur].version == 0)
        read0 = v->cur;
    else if (v->cur >= 0)
        for (int t = 0; t < g->n_tensors && read0 < 0; t++)
            if (g->tensors[t].version == 0 && g->tensors[t].producer < 0 && !strcmp(g->tensors[t].name, v->name))
                read0 = t;
    if (read0 >= 0) {
        tid = read0; /* already read by an op before its record arrived */
    } else {
        int keep = v->cur;
        tid = new_tensor(g, v, -1, err);
        if (tid < 0) {
            free(copy);
            return err ? err->code : CD_E_NOMEM;
        }
        /* If an op wrote the name first the param is not the live version; keep the map. */
        v->cur = keep >= 0 ? keep : tid;
    }
    cd_tensor *t = &g->tensors[tid];
    t->persistable = true;
    t->dtype = dtype;
    t->shape = s;
    t->data = copy;
    t->nbytes = need;
    v->param = tid;
    return CD_OK;
}

static void commit_pending(priv_t *p) {
    for (int i = 0; i < p->n_pend; i++) p->vars[p->pend_var[i]].cur = p->pend_tid[i];
    p->n_pend = 0;
}

cd_op *cd_graph_add_op(cd_graph *g, const char *type, cd_error *err) {
    if (check_open(g, err)) return NULL;
    priv_t *p = P(g);
    if (!type || !*type) {
        cd_err(err, CD_E_MODEL, "op #%d has an empty type", g->n_ops);
        return NULL;
    }
    for (const char *c = type; *c; c++) {
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')) {
            cd_err(err, CD_E_MODEL, "op #%d has an invalid type name (character 0x%02x); expected [A-Za-z0-9_]",
                   g->n_ops, (unsigned char)*c);
            return NULL;
        }
    }
    commit_pending(p);
    if (!grow((void **)&g->ops, &g->cap_ops, g->n_ops + 1, sizeof(cd_op))) {
        cd_err(err, CD_E_NOMEM, "out of memory adding op #%d", g->n_ops);
        return NULL;
    }
    cd_op *op = &g->ops[g->n_ops];
    memset(op, 0, sizeof *op);
    op->type = cd_strdup(type);
    if (!op->type) {
        cd_err(err, CD_E_NOMEM, "out of memory adding op #%d", g->n_ops);
        return NULL;
    }
    op->kernel.target = op->kernel.precision = op->kernel.layout = -1;
    g->n_ops++;
    return op;
}

static cd_status add_slot(cd_graph *g, bool out, const char *slot, const char *const *names, int n, cd_error *err) {
    if (check_open(g, err)) return err ? err->code : CD_E_INTERNAL;
    priv_t *p = P(g);
    if (g->n_ops == 0) return cd_err(err, CD_E_INTERNAL, "slot added before any op");
    int oi = g->n_ops - 1;
    cd_op *op = &g->ops[oi];
    const char *kind = out ? "output" : "input";
    if (!slot || !*slot) return cd_err(err, CD_E_MODEL, "op #%d (%s): %s slot with an empty name", oi, op->type, kind);
    if (n < 0) return cd_err(err, CD_E_MODEL, "op #%d (%s): negative argument count", oi, op->type);
    int *cnt = out ? &op->n_out : &op->n_in;
    cd_slot **arr = out ? &op->out : &op->in;
    for (int i = 0; i < *cnt; i++)
        if (!strcmp((*arr)[i].name, slot))
            return cd_err(err, CD_E_MODEL, "op #%d (%s): duplicate %s slot '%s'", oi, op->type, kind, slot);
    int *ids = malloc(sizeof(int) * (size_t)(n ? n : 1));
    char *sname = cd_strdup(slot);
    cd_slot *na = realloc(*arr, sizeof(cd_slot) * (size_t)(*cnt + 1));
    if (na) *arr = na;
    if (!ids || !sname || !na) {
        free(ids);
        free(sname);
        return cd_err(err, CD_E_NOMEM, "out of memory adding slot '%s' to op #%d", slot, oi);
    }
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        if (!nm || !*nm) {
            ids[i] = -1;
            continue;
        }
        int vi = map_get(&p->names, nm);
        if (vi < 0) {
            free(ids);
            free(sname);
            return cd_err(err, CD_E_MODEL, "op #%d (%s): %s slot '%s' refers to undeclared variable '%s'", oi, op->type,
                          kind, slot, nm);
        }
        var_t *v = &p->vars[vi];
        int tid;
        if (out) {
            tid = new_tensor(g, v, oi, err);
            if (tid < 0) {
                free(ids);
                free(sname);
                return err ? err->code : CD_E_NOMEM;
            }
            v = &p->vars[vi];
            v->written = true;
            if (!grow((void **)&p->pend_var, &p->cap_pend, p->n_pend + 1, sizeof(int))) {
                free(ids);
                free(sname);
                return cd_err(err, CD_E_NOMEM, "out of memory");
            }
            /* pend_tid grows in lock step with pend_var, sized by cap_pend. */
            int *nt = realloc(p->pend_tid, sizeof(int) * (size_t)p->cap_pend);
            if (!nt) {
                free(ids);
                free(sname);
                return cd_err(err, CD_E_NOMEM, "out of memory");
            }
            p->pend_tid = nt;
            p->pend_var[p->n_pend] = vi;
            p->pend_tid[p->n_pend] = tid;
            p->n_pend++;
        } else {
            if (v->cur < 0) {
                tid = new_tensor(g, v, -1, err);
                if (tid < 0) {
                    free(ids);
                    free(sname);
                    return err ? err->code : CD_E_NOMEM;
                }
                v = &p->vars[vi];
                v->cur = tid;
            }
            tid = v->cur;
        }
        ids[i] = tid;
    }
    cd_slot *s = &(*arr)[(*cnt)++];
    s->name = sname;
    s->n = n;
    s->ids = ids;
    return CD_OK;
}

cd_status cd_op_add_input(cd_graph *g, const char *slot, const char *const *names, int n, cd_error *err) {
    return add_slot(g, false, slot, names, n, err);
}

cd_status cd_op_add_output(cd_graph *g, const char *slot, const char *const *names, int n, cd_error *err) {
    return add_slot(g, true, slot, names, n, err);
}

cd_status cd_op_add_attr(cd_graph *g, cd_attr *a, cd_error *err) {
    if (check_open(g, err)) {
        attr_free(a);
        memset(a, 0, sizeof *a);
        return err ? err->code : CD_E_INTERNAL;
    }
    cd_status st = CD_OK;
    int oi = g->n_ops - 1;
    if (oi < 0) {
        st = cd_err(err, CD_E_INTERNAL, "attribute added before any op");
        goto fail;
    }
    cd_op *op = &g->ops[oi];
    if (!a->name || !*a->name) {
        st = cd_err(err, CD_E_MODEL, "op #%d (%s): attribute with an empty name", oi, op->type);
        goto fail;
    }
    if ((unsigned)a->type > CD_ATTR_FLOAT64 || a->type == CD_ATTR_VAR || a->type == CD_ATTR_VARS) {
        st = cd_err(err, CD_E_MODEL, "op #%d (%s): attribute '%s' has unsupported type %d", oi, op->type, a->name,
                    (int)a->type);
        goto fail;
    }
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, a->name)) {
            st = cd_err(err, CD_E_MODEL, "op #%d (%s): duplicate attribute '%s'", oi, op->type, a->name);
            goto fail;
        }
    cd_attr *na = realloc(op->attrs, sizeof(cd_attr) * (size_t)(op->n_attr + 1));
    if (!na) {
        st = cd_err(err, CD_E_NOMEM, "out of memory adding attribute '%s'", a->name);
        goto fail;
    }
    op->attrs = na;
    op->attrs[op->n_attr++] = *a;
    memset(a, 0, sizeof *a);
    return CD_OK;
fail:
    attr_free(a);
    memset(a, 0, sizeof *a);
    return st;
}

/* ---------------------------------------------------------------- finalize */
static int parse_dec(const char *s, size_t n) {
    if (n == 0 || n > 6) return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static void parse_kernel(cd_graph *g, int oi) {
    cd_op *op = &g->ops[oi];
    const cd_attr *a = cd_op_attr(op, KERNEL_ATTR);
    op->kernel.present = false;
    op->kernel.alias[0] = 0;
    op->kernel.target = op->kernel.precision = op->kernel.layout = -1;
    if (!a) return;
    if (a->type != CD_ATTR_STRING || !a->s) {
        cd_graph_warn(g, "op #%d %s: kernel record %s is not a string; ignored", oi, op->name, KERNEL_ATTR);
        return;
    }
    const char *f[5];
    size_t len[5];
    int nf = 0;
    const char *s = a->s;
    for (;;) {
        const char *e = strchr(s, '/');
        if (nf < 5) {
            f[nf] = s;
            len[nf] = e ? (size_t)(e - s) : strlen(s);
        }
        nf++;
        if (!e) break;
        s = e + 1;
    }
    if (nf != 5) {
        cd_graph_warn(g, "op #%d %s: kernel record '%s' does not have 5 '/'-separated fields; ignored", oi, op->name,
                      a->s);
        return;
    }
    op->kernel.present = true;
    size_t al = len[1] < sizeof op->kernel.alias - 1 ? len[1] : sizeof op->kernel.alias - 1;
    memcpy(op->kernel.alias, f[1], al);
    op->kernel.alias[al] = 0;
    op->kernel.target = parse_dec(f[2], len[2]);
    op->kernel.precision = parse_dec(f[3], len[3]);
    op->kernel.layout = parse_dec(f[4], len[4]);
    if (len[0] != strlen(op->type) || strncmp(f[0], op->type, len[0]))
        cd_graph_warn(g, "op #%d %s: kernel record '%s' names a different op type", oi, op->name, a->s);
    if (!len[1]) cd_graph_warn(g, "op #%d %s: kernel record '%s' has an empty alias", oi, op->name, a->s);
    if (op->kernel.target < 0 || op->kernel.target > 18 || op->kernel.precision < 0 || op->kernel.precision > 10 ||
        op->kernel.layout < 0 || op->kernel.layout > 8)
        cd_graph_warn(g, "op #%d %s: kernel record '%s' has unknown target/precision/layout numbers", oi, op->name,
                      a->s);
}

static cd_status find_io(cd_graph *g, bool feed, cd_error *err) {
    const char *type = feed ? "feed" : "fetch";
    int n = 0;
    for (int i = 0; i < g->n_ops; i++)
        if (!strcmp(g->ops[i].type, type)) n++;
    int *ids = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!ids) return cd_err(err, CD_E_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) ids[i] = -1;
    for (int i = 0; i < g->n_ops; i++) {
        cd_op *op = &g->ops[i];
        if (strcmp(op->type, type)) continue;
        const cd_slot *x = cd_op_in_slot(op, "X"), *o = cd_op_out_slot(op, "Out");
        const cd_slot *data = feed ? o : x;
        if (!x || !o || x->n != 1 || o->n != 1 || data->ids[0] < 0) {
            free(ids);
            return cd_err(err, CD_E_MODEL,
                          "op #%d %s: a %s op needs exactly one X and one Out argument (found X:%d Out:%d)", i,
                          op->name, type, x ? x->n : 0, o ? o->n : 0);
        }
        const cd_attr *c = cd_op_attr(op, "col");
        if (!c || (c->type != CD_ATTR_INT && c->type != CD_ATTR_LONG)) {
            free(ids);
            return cd_err(err, CD_E_MODEL, "op #%d %s: %s op has no INT attribute 'col'", i, op->name, type);
        }
        if (c->i < 0 || c->i >= n || ids[c->i] >= 0) {
            free(ids);
            return cd_err(err, CD_E_MODEL,
                          "op #%d %s: %s col %lld is out of range or repeated; the %d %s ops' col values must "
                          "be a permutation of 0..%d",
                          i, op->name, type, (long long)c->i, n, type, n - 1);
        }
        ids[c->i] = data->ids[0];
    }
    if (feed) {
        g->inputs = ids;
        g->n_inputs = n;
    } else {
        g->outputs = ids;
        g->n_outputs = n;
    }
    return CD_OK;
}

cd_status cd_graph_finalize(cd_graph *g, cd_error *err) {
    if (check_open(g, err)) return err ? err->code : CD_E_INTERNAL;
    priv_t *p = P(g);
    commit_pending(p);
    /* Layer names "<type>_<k>". */
    strmap cnt = {0};
    for (int i = 0; i < g->n_ops; i++) {
        cd_op *op = &g->ops[i];
        int k = map_get(&cnt, op->type);
        if (k < 0) k = 0;
        if (!map_put(&cnt, op->type, k + 1)) {
            map_free(&cnt);
            return cd_err(err, CD_E_NOMEM, "out of memory");
        }
        char buf[64];
        snprintf(buf, sizeof buf, "_%d", k);
        size_t tl = strlen(op->type);
        op->name = malloc(tl + strlen(buf) + 1);
        if (!op->name) {
            map_free(&cnt);
            return cd_err(err, CD_E_NOMEM, "out of memory");
        }
        memcpy(op->name, op->type, tl);
        strcpy(op->name + tl, buf);
    }
    map_free(&cnt);
    for (int i = 0; i < g->n_ops; i++) parse_kernel(g, i);
    free(g->inputs);
    free(g->outputs);
    g->inputs = g->outputs = NULL;
    g->n_inputs = g->n_outputs = 0;
    if (find_io(g, true, err) || find_io(g, false, err)) return err ? err->code : CD_E_MODEL;
    if (g->n_inputs == 0) cd_graph_warn(g, "model has no feed op: it takes no inputs");
    if (g->n_outputs == 0) cd_graph_warn(g, "model has no fetch op: it produces no outputs");

    /* Every persistable variable must have its record unless only ops write it. */
    char *read_initial = calloc((size_t)p->n_vars + 1, 1);
    if (!read_initial) return cd_err(err, CD_E_NOMEM, "out of memory");
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer < 0) {
            int vi = map_get(&p->names, g->tensors[t].name);
            if (vi >= 0) read_initial[vi] = 1;
        }
    for (int i = 0; i < p->n_vars; i++) {
        var_t *v = &p->vars[i];
        if (!v->persistable || v->param >= 0) continue;
        if (read_initial[i] || !v->written) {
            free(read_initial);
            return cd_err(err, CD_E_MODEL,
                          "persistable variable '%s' has no parameter record (the file is truncated or was "
                          "written by a broken tool)",
                          v->name);
        }
    }
    free(read_initial);
    for (int t = 0; t < g->n_tensors; t++) {
        cd_tensor *ts = &g->tensors[t];
        if (!ts->persistable) continue;
        int64_t ne = cd_shape_numel(&ts->shape);
        if (ne < 0 || (size_t)ne * cd_dtype_size(ts->dtype) != ts->nbytes)
            return cd_err(err, CD_E_INTERNAL, "parameter '%s' holds %zu bytes, inconsistent with its shape", ts->name,
                          ts->nbytes);
    }
    /* Reads of activations nobody wrote (rule 30): warn, the engine will see no producer. */
    for (int i = 0; i < g->n_ops; i++) {
        cd_op *op = &g->ops[i];
        if (!strcmp(op->type, "feed")) continue;
        for (int s = 0; s < op->n_in; s++)
            for (int k = 0; k < op->in[s].n; k++) {
                int id = op->in[s].ids[k];
                if (id < 0) continue;
                cd_tensor *ts = &g->tensors[id];
                if (ts->producer < 0 && !ts->persistable)
                    cd_graph_warn(g, "op #%d %s reads '%s' (slot %s) which no earlier op writes", i, op->name, ts->name,
                                  op->in[s].name);
            }
    }
    p->finalized = true;
    return CD_OK;
}

bool cd_graph_has_var(const cd_graph *g, const char *name) {
    if (!g || !g->priv || !name) return false;
    return map_get(&P(g)->names, name) >= 0;
}
