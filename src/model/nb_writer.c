/* meta_version 2 writer.
 *
 * FlatBuffers references must point forward, so this builder lays a table out first and
 * its children after it (depth first), patching each uoffset once the child's position is
 * known. Vtables go right before the table that first needs them and are shared by later
 * identical tables (signed soffset). The shared empty string is written once at the very
 * end of each buffer, which keeps every reference to it forward, as in Paddle-Lite's
 * files (many Attr.s fields pointing at one ""). */
#include "model/nb_writer.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FB_BOOL 0
#define FB_LOD_TENSOR 7
#define FB_FEED 9
#define FB_FETCH 10

typedef struct {
    uint8_t *b;
    size_t len, cap;
    bool oom;
    size_t *vt; /* positions of written vtables */
    int n_vt, cap_vt;
    size_t *es; /* fields that must point at the shared empty string */
    int n_es, cap_es;
} bld;

static void reserve(bld *b, size_t n) {
    if (b->oom) return;
    if (b->len + n <= b->cap) return;
    size_t nc = b->cap ? b->cap : 4096;
    while (nc < b->len + n) nc *= 2;
    uint8_t *p = realloc(b->b, nc);
    if (!p) {
        b->oom = true;
        return;
    }
    b->b = p;
    b->cap = nc;
}

static size_t put(bld *b, const void *d, size_t n) {
    reserve(b, n);
    if (b->oom) return 0;
    size_t pos = b->len;
    if (d)
        memcpy(b->b + pos, d, n);
    else
        memset(b->b + pos, 0, n);
    b->len += n;
    return pos;
}

static void pad_to(bld *b, size_t align, size_t skew) {
    while (!b->oom && (b->len + skew) % align) put(b, NULL, 1);
}

static void patch_ref(bld *b, size_t field, size_t target) {
    if (b->oom) return;
    uint32_t v = (uint32_t)(target - field);
    memcpy(b->b + field, &v, 4);
}

static bool push_pos(size_t **arr, int *n, int *cap, size_t v) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 64;
        size_t *p = realloc(*arr, sizeof(size_t) * (size_t)nc);
        if (!p) return false;
        *arr = p;
        *cap = nc;
    }
    (*arr)[(*n)++] = v;
    return true;
}

typedef struct {
    int slot;
    uint8_t size;  /* 1, 4 or 8 */
    uint64_t bits; /* scalar value (little-endian low bytes) */
    size_t pos;    /* out: absolute position of the field */
} fld;

/* Writes a table with the given present fields (references as size-4 zero placeholders). */
static size_t table(bld *b, fld *f, int n) {
    int order[32], nslots = 0;
    bool has8 = false;
    for (int i = 0; i < n; i++) {
        order[i] = i;
        if (f[i].slot + 1 > nslots) nslots = f[i].slot + 1;
        if (f[i].size == 8) has8 = true;
    }
    /* Larger fields first keeps every scalar naturally aligned. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && f[order[j]].size > f[order[j - 1]].size; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    uint16_t off[32] = {0};
    size_t cur = 4;
    for (int k = 0; k < n; k++) {
        int i = order[k];
        while (cur % f[i].size) cur++;
        off[i] = (uint16_t)cur;
        cur += f[i].size;
    }
    uint16_t vtab[2 + 32] = {0};
    vtab[0] = (uint16_t)(4 + 2 * nslots);
    vtab[1] = (uint16_t)cur;
    for (int i = 0; i < n; i++) vtab[2 + f[i].slot] = off[i];
    size_t vpos = SIZE_MAX;
    for (int i = 0; i < b->n_vt && !b->oom; i++) {
        size_t p = b->vt[i];
        uint16_t sz;
        memcpy(&sz, b->b + p, 2);
        if (sz == vtab[0] && !memcmp(b->b + p, vtab, sz)) {
            vpos = p;
            break;
        }
    }
    if (vpos == SIZE_MAX) {
        pad_to(b, 2, 0);
        vpos = put(b, vtab, vtab[0]);
        if (!push_pos(&b->vt, &b->n_vt, &b->cap_vt, vpos)) b->oom = true;
    }
    pad_to(b, has8 ? 8 : 4, 0);
    size_t t = put(b, NULL, cur);
    if (b->oom) return 0;
    int32_t so = (int32_t)(t - vpos);
    memcpy(b->b + t, &so, 4);
    for (int i = 0; i < n; i++) {
        f[i].pos = t + off[i];
        memcpy(b->b + f[i].pos, &f[i].bits, f[i].size);
    }
    return t;
}

static size_t string(bld *b, const char *s) {
    size_t n = strlen(s);
    pad_to(b, 4, 0);
    uint32_t l = (uint32_t)n;
    size_t p = put(b, &l, 4);
    put(b, s, n);
    put(b, NULL, 1);
    return p;
}

/* String field: empty strings go to the shared one written at the end. */
static void str_field(bld *b, size_t field, const char *s) {
    if (!s || !*s) {
        if (!push_pos(&b->es, &b->n_es, &b->cap_es, field)) b->oom = true;
        return;
    }
    patch_ref(b, field, string(b, s));
}

static size_t scalar_vec(bld *b, const void *data, uint32_t n, size_t es) {
    pad_to(b, es > 4 ? es : 4, 4);
    size_t p = put(b, &n, 4);
    put(b, data, (size_t)n * es);
    return p;
}

/* Vector of uoffsets; element i lives at return + 4 + 4i. */
static size_t ref_vec(bld *b, uint32_t n) {
    pad_to(b, 4, 0);
    size_t p = put(b, &n, 4);
    put(b, NULL, (size_t)n * 4);
    return p;
}

static void finish(bld *b) {
    if (b->n_es) {
        size_t p = string(b, "");
        for (int i = 0; i < b->n_es; i++) patch_ref(b, b->es[i], p);
    }
    pad_to(b, 8, 0);
}

static void bld_free(bld *b) {
    free(b->b);
    free(b->vt);
    free(b->es);
    memset(b, 0, sizeof *b);
}

static fld F(int slot, uint8_t size, uint64_t bits) {
    fld f = {slot, size, bits, 0};
    return f;
}
static uint64_t f32bits(double d) {
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t f64bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* ------------------------------------------------------------------ topology */
typedef struct {
    const char *name;
    int tid;  /* first tensor of this name (carries declared dtype/shape) */
    int kind; /* FB var type */
    bool persistable;
} wvar;

static cd_status write_attr(bld *b, const cd_op *op, int oi, const cd_attr *a, size_t elem, cd_error *err) {
    fld f[16];
    int n = 0;
    int nm = n;
    f[n++] = F(0, 4, 0);
    if (a->type != CD_ATTR_INT) f[n++] = F(1, 4, (uint32_t)a->type);
    switch (a->type) {
    case CD_ATTR_INT:
    case CD_ATTR_BLOCK:
        if (a->i < INT32_MIN || a->i > INT32_MAX)
            return cd_err(err, CD_E_MODEL, "op #%d %s: attribute '%s' value %lld does not fit an INT", oi, op->name,
                          a->name, (long long)a->i);
        if (a->i) f[n++] = F(a->type == CD_ATTR_INT ? 2 : 10, 4, (uint32_t)(int32_t)a->i);
        break;
    case CD_ATTR_FLOAT:
        if ((float)a->f != 0.0f) f[n++] = F(3, 4, f32bits(a->f));
        break;
    case CD_ATTR_BOOL:
        if (a->i) f[n++] = F(8, 1, 1);
        break;
    case CD_ATTR_LONG:
        if (a->i) f[n++] = F(11, 8, (uint64_t)a->i);
        break;
    case CD_ATTR_FLOAT64:
        if (a->f != 0.0) f[n++] = F(14, 8, f64bits(a->f));
        break;
    default: break;
    }
    /* --force-empty: every string/vector field is present. */
    static const int vslots[] = {4, 5, 6, 7, 9, 12, 13, 15};
    int vfirst = n;
    for (int i = 0; i < 8; i++) f[n++] = F(vslots[i], 4, 0);
    size_t t = table(b, f, n);
    if (b->oom) return cd_err(err, CD_E_NOMEM, "out of memory writing the model");
    patch_ref(b, elem, t);
    str_field(b, f[nm].pos, a->name);
    for (int i = 0; i < 8; i++) {
        int slot = vslots[i];
        size_t fp = f[vfirst + i].pos;
        cd_attr_type want = slot == 5 ? CD_ATTR_INTS
            : slot == 6               ? CD_ATTR_FLOATS
            : slot == 7               ? CD_ATTR_STRINGS
            : slot == 9               ? CD_ATTR_BOOLS
            : slot == 12              ? CD_ATTR_BLOCKS
            : slot == 13              ? CD_ATTR_LONGS
                                      : CD_ATTR_FLOAT64S;
        if (slot == 4) {
            str_field(b, fp, a->type == CD_ATTR_STRING ? a->s : "");
            continue;
        }
        uint32_t cnt = a->type == want ? (uint32_t)a->n : 0;
        size_t vp;
        if (slot == 7) {
            vp = ref_vec(b, cnt);
            for (uint32_t k = 0; k < cnt; k++) str_field(b, vp + 4 + 4 * k, a->strings[k]);
        } else if (slot == 5 || slot == 12) {
            int32_t *tmp = malloc(4 * (cnt ? cnt : 1));
            if (!tmp) return cd_err(err, CD_E_NOMEM, "out of memory");
            for (uint32_t k = 0; k < cnt; k++) {
                if (a->ints[k] < INT32_MIN || a->ints[k] > INT32_MAX) {
                    free(tmp);
                    return cd_err(err, CD_E_MODEL, "op #%d %s: attribute '%s' element %u does not fit an INT", oi,
                                  op->name, a->name, k);
                }
                tmp[k] = (int32_t)a->ints[k];
            }
            vp = scalar_vec(b, tmp, cnt, 4);
            free(tmp);
        } else if (slot == 6) {
            float *tmp = malloc(4 * (cnt ? cnt : 1));
            if (!tmp) return cd_err(err, CD_E_NOMEM, "out of memory");
            for (uint32_t k = 0; k < cnt; k++) tmp[k] = (float)a->floats[k];
            vp = scalar_vec(b, tmp, cnt, 4);
            free(tmp);
        } else if (slot == 9) {
            uint8_t *tmp = malloc(cnt ? cnt : 1);
            if (!tmp) return cd_err(err, CD_E_NOMEM, "out of memory");
            for (uint32_t k = 0; k < cnt; k++) tmp[k] = a->ints[k] != 0;
            vp = scalar_vec(b, tmp, cnt, 1);
            free(tmp);
        } else if (slot == 13) {
            vp = scalar_vec(b, a->ints, cnt, 8);
        } else {
            vp = scalar_vec(b, a->floats, cnt, 8);
        }
        patch_ref(b, fp, vp);
    }
    return b->oom ? cd_err(err, CD_E_NOMEM, "out of memory writing the model") : CD_OK;
}

static void write_slots(bld *b, const cd_graph *g, const cd_slot *slots, int n, size_t field) {
    const cd_slot **s = malloc(sizeof *s * (size_t)(n ? n : 1));
    if (!s) {
        b->oom = true;
        return;
    }
    for (int i = 0; i < n; i++) s[i] = &slots[i];
    /* Sorted by slot name (byte-wise), like Paddle-Lite's keyed vectors. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(s[j]->name, s[j - 1]->name) < 0; j--) {
            const cd_slot *t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    size_t vp = ref_vec(b, (uint32_t)n);
    patch_ref(b, field, vp);
    for (int i = 0; i < n && !b->oom; i++) {
        fld f[2] = {F(0, 4, 0), F(1, 4, 0)};
        size_t t = table(b, f, 2);
        patch_ref(b, vp + 4 + 4 * (size_t)i, t);
        str_field(b, f[0].pos, s[i]->name);
        size_t av = ref_vec(b, (uint32_t)s[i]->n);
        patch_ref(b, f[1].pos, av);
        for (int k = 0; k < s[i]->n; k++) {
            int id = s[i]->ids[k];
            str_field(b, av + 4 + 4 * (size_t)k, id >= 0 ? g->tensors[id].name : "");
        }
    }
    free(s);
}

static cd_status write_op(bld *b, const cd_graph *g, int oi, size_t elem, cd_error *err) {
    const cd_op *op = &g->ops[oi];
    fld f[4] = {F(0, 4, 0), F(1, 4, 0), F(2, 4, 0), F(3, 4, 0)};
    size_t t = table(b, f, 4);
    patch_ref(b, elem, t);
    str_field(b, f[0].pos, op->type);
    write_slots(b, g, op->in, op->n_in, f[1].pos);
    write_slots(b, g, op->out, op->n_out, f[2].pos);
    const cd_attr **as = malloc(sizeof *as * (size_t)(op->n_attr ? op->n_attr : 1));
    if (!as) return cd_err(err, CD_E_NOMEM, "out of memory");
    for (int i = 0; i < op->n_attr; i++) as[i] = &op->attrs[i];
    for (int i = 1; i < op->n_attr; i++)
        for (int j = i; j > 0 && strcmp(as[j]->name, as[j - 1]->name) < 0; j--) {
            const cd_attr *x = as[j];
            as[j] = as[j - 1];
            as[j - 1] = x;
        }
    size_t vp = ref_vec(b, (uint32_t)op->n_attr);
    patch_ref(b, f[3].pos, vp);
    for (int i = 0; i < op->n_attr; i++)
        if (write_attr(b, op, oi, as[i], vp + 4 + 4 * (size_t)i, err)) {
            free(as);
            return err->code;
        }
    free(as);
    return b->oom ? cd_err(err, CD_E_NOMEM, "out of memory writing the model") : CD_OK;
}

static void write_var(bld *b, const cd_graph *g, const wvar *v, size_t elem) {
    const cd_tensor *t = &g->tensors[v->tid];
    fld f[3];
    int n = 0;
    f[n++] = F(0, 4, 0);
    f[n++] = F(1, 4, 0);
    if (v->persistable) f[n++] = F(2, 1, 1);
    size_t tp = table(b, f, n);
    patch_ref(b, elem, tp);
    str_field(b, f[0].pos, v->name);
    fld vt[2];
    int nv = 0;
    if (v->kind != FB_BOOL) vt[nv++] = F(0, 4, (uint32_t)v->kind);
    vt[nv++] = F(2, 4, 0);
    size_t vtp = table(b, vt, nv);
    patch_ref(b, f[1].pos, vtp);
    fld lt[1] = {F(0, 4, 0)};
    size_t ltp = table(b, lt, 1);
    patch_ref(b, vt[nv - 1].pos, ltp);
    int fbt = cd_dtype_to_fb(t->dtype);
    fld td[2];
    int nt = 0;
    if (fbt > 0) td[nt++] = F(0, 4, (uint32_t)fbt);
    td[nt++] = F(1, 4, 0);
    size_t tdp = table(b, td, nt);
    patch_ref(b, lt[0].pos, tdp);
    patch_ref(b, td[nt - 1].pos, scalar_vec(b, t->shape.d, (uint32_t)t->shape.rank, 8));
}

static cd_status collect_vars(const cd_graph *g, wvar **out, int *n_out, cd_error *err) {
    wvar *v = cd_calloc((size_t)g->n_tensors + 1, sizeof *v, err);
    char **seen = cd_calloc((size_t)g->n_tensors + 1, sizeof *seen, err);
    if (!v || !seen) {
        free(v);
        free(seen);
        return err->code;
    }
    int n = 0;
    /* First tensor of every name, in tensor-creation order (= order of first use). */
    for (int t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].version != 0) continue;
        v[n].name = g->tensors[t].name;
        v[n].tid = t;
        v[n].kind = FB_LOD_TENSOR;
        seen[n] = g->tensors[t].name;
        n++;
    }
    for (int t = 0; t < g->n_tensors; t++) {
        if (!g->tensors[t].persistable) continue;
        for (int i = 0; i < n; i++)
            if (!strcmp(v[i].name, g->tensors[t].name)) {
                v[i].persistable = true;
                v[i].tid = t;
            }
    }
    for (int oi = 0; oi < g->n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        int id = -1, kind = 0;
        if (!strcmp(op->type, "feed")) {
            id = cd_op_in(op, "X", 0);
            kind = FB_FEED;
        }
        if (!strcmp(op->type, "fetch")) {
            id = cd_op_out(op, "Out", 0);
            kind = FB_FETCH;
        }
        if (id < 0) continue;
        for (int i = 0; i < n; i++)
            if (!strcmp(v[i].name, g->tensors[id].name)) {
                v[i].kind = kind;
                v[i].persistable = true;
            }
    }
    free(seen);
    *out = v;
    *n_out = n;
    return CD_OK;
}

static cd_status write_topology(const cd_graph *g, bld *b, cd_error *err) {
    wvar *vars;
    int nv;
    if (collect_vars(g, &vars, &nv, err)) return err->code;
    put(b, NULL, 4); /* root offset */
    fld pf[2] = {F(0, 4, 0), F(1, 4, 0)};
    size_t prog = table(b, pf, 2);
    patch_ref(b, 0, prog);
    size_t bv = ref_vec(b, 1);
    patch_ref(b, pf[0].pos, bv);
    fld bf[3] = {F(1, 4, (uint32_t)-1), F(2, 4, 0), F(3, 4, 0)};
    size_t blk = table(b, bf, 3);
    patch_ref(b, bv + 4, blk);
    size_t vv = ref_vec(b, (uint32_t)nv);
    patch_ref(b, bf[1].pos, vv);
    for (int i = 0; i < nv; i++) write_var(b, g, &vars[i], vv + 4 + 4 * (size_t)i);
    free(vars);
    size_t ov = ref_vec(b, (uint32_t)g->n_ops);
    patch_ref(b, bf[2].pos, ov);
    for (int i = 0; i < g->n_ops; i++)
        if (write_op(b, g, i, ov + 4 + 4 * (size_t)i, err)) return err->code;
    fld vf[1];
    int n = 0;
    if (g->program_version) vf[n++] = F(0, 8, (uint64_t)g->program_version);
    size_t ver = table(b, vf, n);
    patch_ref(b, pf[1].pos, ver);
    finish(b);
    return b->oom ? cd_err(err, CD_E_NOMEM, "out of memory writing the model") : CD_OK;
}

/* A ParamDesc table (and what it references); returns its position. */
static size_t param_table(bld *b, const cd_tensor *t) {
    fld pf[3] = {F(1, 4, 0), F(2, 1, 1), F(3, 4, 0)};
    size_t pd = table(b, pf, 3);
    str_field(b, pf[0].pos, t->name);
    int fbt = cd_dtype_to_fb(t->dtype);
    fld lf[4];
    int n = 0;
    lf[n++] = F(1, 4, 0);
    lf[n++] = F(2, 4, 0);
    if (fbt > 0) lf[n++] = F(3, 4, (uint32_t)fbt);
    lf[n++] = F(4, 4, 0);
    size_t lt = table(b, lf, n);
    patch_ref(b, pf[2].pos, lt);
    patch_ref(b, lf[0].pos, scalar_vec(b, NULL, 0, 8));
    patch_ref(b, lf[1].pos, scalar_vec(b, t->shape.d, (uint32_t)t->shape.rank, 8));
    patch_ref(b, lf[n - 1].pos, scalar_vec(b, t->data, (uint32_t)t->nbytes, 1));
    return pd;
}

/* meta 2: one FlatBuffer per parameter, rooted at its ParamDesc. */
static cd_status write_param(bld *b, const cd_tensor *t, cd_error *err) {
    put(b, NULL, 4);
    patch_ref(b, 0, param_table(b, t));
    finish(b);
    return b->oom ? cd_err(err, CD_E_NOMEM, "out of memory writing parameter '%s'", t->name) : CD_OK;
}

/* meta 1: one FlatBuffer rooted at a CombinedParamsDesc holding every ParamDesc (docs/nb-format.md §1.4). */
static cd_status write_params_combined(bld *b, const cd_tensor **ps, int np, cd_error *err) {
    put(b, NULL, 4);
    fld cf[1] = {F(0, 4, 0)};
    size_t ct = table(b, cf, 1);
    patch_ref(b, 0, ct);
    size_t vec = ref_vec(b, (uint32_t)np);
    patch_ref(b, cf[0].pos, vec);
    for (int i = 0; i < np && !b->oom; i++) patch_ref(b, vec + 4 + 4 * (size_t)i, param_table(b, ps[i]));
    finish(b);
    return b->oom ? cd_err(err, CD_E_NOMEM, "out of memory writing the parameters") : CD_OK;
}

static int cmp_tensor_name(const void *a, const void *b) {
    const cd_tensor *x = *(const cd_tensor *const *)a, *y = *(const cd_tensor *const *)b;
    return strcmp(x->name, y->name);
}

cd_status cd_nb_write_mem(const cd_graph *g, uint8_t **out, size_t *len, cd_error *err) {
    return cd_nb_write_mem_meta(g, 2, out, len, err);
}

cd_status cd_nb_write_mem_meta(const cd_graph *g, int meta_version, uint8_t **out, size_t *len, cd_error *err) {
    if (meta_version != 1 && meta_version != 2)
        return cd_err(err, CD_E_USAGE, "the writer writes meta_version 1 or 2, not %d", meta_version);
    *out = NULL;
    *len = 0;
    bld topo = {0}, all = {0};
    if (write_topology(g, &topo, err)) {
        bld_free(&topo);
        return err->code;
    }
    if (topo.len >= 0x7fffffffu) {
        bld_free(&topo);
        return cd_err(err, CD_E_MODEL, "topology too large for FlatBuffers");
    }
    const cd_tensor **ps = cd_calloc((size_t)g->n_tensors + 1, sizeof *ps, err);
    if (!ps) {
        bld_free(&topo);
        return err->code;
    }
    int np = 0;
    uint32_t max_data = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].persistable && g->tensors[t].data) {
            ps[np++] = &g->tensors[t];
            if (g->tensors[t].nbytes > UINT32_MAX - 64) {
                free(ps);
                bld_free(&topo);
                return cd_err(err, CD_E_MODEL, "parameter '%s' is too large for the .nb format", g->tensors[t].name);
            }
            if (g->tensors[t].nbytes > max_data) max_data = (uint32_t)g->tensors[t].nbytes;
        }
    if (np > 65535) {
        free(ps);
        bld_free(&topo);
        return cd_err(err, CD_E_MODEL, "%d parameters: the .nb format holds at most 65535", np);
    }
    qsort(ps, (size_t)np, sizeof *ps, cmp_tensor_name);
    uint16_t meta = (uint16_t)meta_version;
    put(&all, &meta, 2);
    char ver[16] = {0};
    memcpy(ver, g->opt_version, strnlen(g->opt_version, 16));
    put(&all, ver, 16);
    uint64_t ts = topo.len;
    put(&all, &ts, 8);
    put(&all, topo.b, topo.len);
    bld_free(&topo);
    if (meta_version == 1) {
        bld pb = {0};
        cd_status st = write_params_combined(&pb, ps, np, err);
        put(&all, pb.b, pb.len);
        bld_free(&pb);
        free(ps);
        if (st) {
            bld_free(&all);
            return st;
        }
        if (all.oom) {
            bld_free(&all);
            return cd_err(err, CD_E_NOMEM, "out of memory writing the model");
        }
        *out = all.b;
        *len = all.len;
        free(all.vt);
        free(all.es);
        return CD_OK;
    }
    uint16_t hdr[4] = {0, 0, 6, (uint16_t)np};
    put(&all, hdr, 8);
    put(&all, &max_data, 4);
    for (int i = 0; i < np; i++) {
        bld pb = {0};
        if (write_param(&pb, ps[i], err)) {
            bld_free(&pb);
            bld_free(&all);
            free(ps);
            return err->code;
        }
        uint32_t rec[2] = {(uint32_t)pb.len + 4, 4};
        put(&all, rec, 8);
        put(&all, pb.b, pb.len);
        bld_free(&pb);
    }
    free(ps);
    if (all.oom) {
        bld_free(&all);
        return cd_err(err, CD_E_NOMEM, "out of memory writing the model");
    }
    *out = all.b;
    *len = all.len;
    free(all.vt);
    free(all.es);
    return CD_OK;
}

cd_status cd_nb_write(const cd_graph *g, const char *path, cd_error *err) {
    uint8_t *buf;
    size_t len;
    if (cd_nb_write_mem(g, &buf, &len, err)) return err->code;
    FILE *f = fopen(path, "wb");
    if (!f) {
        int e = errno;
        free(buf);
        return cd_err(err, CD_E_IO, "cannot create '%s': %s", path, strerror(e));
    }
    size_t w = fwrite(buf, 1, len, f);
    int e = errno;
    free(buf);
    if (fclose(f) != 0 || w != len) {
        return cd_err(err, CD_E_IO, "cannot write '%s': %s", path, strerror(e ? e : EIO));
    }
    return CD_OK;
}
