/* meta_version 0 ("naive buffer", docs/nb-format.md §1.6): fields follow each other with no tags,
 * so every count is checked against the bytes left times the smallest encoding of one
 * element before anything is allocated or looped over (§8.1 rule 7). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/fb.h"
#include "model/nb_reader.h"

/* Smallest encodings, for count sanity checks. */
#define MIN_BLOCK 28 /* i32 idx, i32 parent, u64 vars, u64 ops, i32 fwd */
#define MIN_VAR 73   /* string 8 + VarType 64 + bool 1 */
#define MIN_OP 33    /* string 8 + 3 lists + bool */
#define MIN_SLOT 16  /* string 8 + list 8 */
#define MIN_ATTR 95
#define MIN_PARAM 52

typedef struct {
    const uint8_t *b;
    size_t len, pos, base;
    cd_error *err;
    const char *what;
} cur_t;

static cd_status fail(cur_t *c, const char *fmt, const char *field) {
    return cd_err(c->err, CD_E_MODEL, "corrupt meta-0 %s: %s%s at file offset %zu", c->what, fmt, field ? field : "",
                  c->base + c->pos);
}

static cd_status need(cur_t *c, size_t n, const char *field) {
    if (c->len - c->pos < n) return fail(c, "data ends inside ", field);
    return CD_OK;
}

static cd_status rd(cur_t *c, void *out, size_t n, const char *field) {
    if (need(c, n, field)) return c->err->code;
    memcpy(out, c->b + c->pos, n);
    c->pos += n;
    return CD_OK;
}

static cd_status count(cur_t *c, size_t min_elem, uint64_t *n, const char *field) {
    if (rd(c, n, 8, field)) return c->err->code;
    if (*n > (c->len - c->pos) / min_elem) {
        c->pos -= 8;
        return cd_err(c->err, CD_E_MODEL,
                      "corrupt meta-0 %s: %s count %llu cannot fit in the %zu bytes left (file offset %zu)", c->what,
                      field, (unsigned long long)*n, c->len - c->pos - 8, c->base + c->pos);
    }
    return CD_OK;
}

/* String -> freshly allocated C string (NULL out allowed: skip). */
static cd_status str(cur_t *c, char **out, const char *field) {
    uint64_t n;
    if (count(c, 1, &n, field)) return c->err->code;
    const char *p = (const char *)c->b + c->pos;
    if (memchr(p, 0, n)) return fail(c, "embedded NUL byte in ", field);
    if (out) {
        *out = malloc(n + 1);
        if (!*out) return cd_err(c->err, CD_E_NOMEM, "out of memory");
        memcpy(*out, p, n);
        (*out)[n] = 0;
    }
    c->pos += n;
    return CD_OK;
}

static cd_status skip_list(cur_t *c, size_t es, const char *field) {
    uint64_t n;
    if (count(c, es, &n, field)) return c->err->code;
    c->pos += n * es;
    return CD_OK;
}

static bool v0_kind_ok(int32_t k) {
    return k == 10 || k == 16 || k == 15 || k == 11 || k == 12 || k == 13 || k == 14 || k == 17 || k == 18;
}

/* TensorDesc: enum data_type; list<i64> dims. */
static cd_status tensor_desc(cur_t *c, int32_t *dt, int64_t *dims, int *rank, bool strict, const char *field) {
    uint64_t n;
    if (rd(c, dt, 4, field) || count(c, 8, &n, field)) return c->err->code;
    if (n > CD_MAX_RANK) {
        if (strict) return fail(c, "rank over the limit in ", field);
        *rank = -1; /* unusable hint */
        c->pos += n * 8;
        return CD_OK;
    }
    for (uint64_t i = 0; i < n; i++) memcpy(&dims[i], c->b + c->pos + 8 * i, 8);
    c->pos += n * 8;
    *rank = (int)n;
    return CD_OK;
}

static cd_status lod_tensor_desc(cur_t *c, int32_t *dt, int64_t *dims, int *rank, const char *field) {
    int32_t lod;
    if (tensor_desc(c, dt, dims, rank, false, field) || rd(c, &lod, 4, field)) return c->err->code;
    return CD_OK;
}

static cd_status var_desc(cur_t *c, cd_graph *g, bool build) {
    size_t start = c->base + c->pos;
    char *name = NULL;
    int32_t kind, dt, dt2;
    int64_t dims[CD_MAX_RANK], dd[CD_MAX_RANK];
    int rank, r2;
    uint64_t n;
    uint8_t pers;
    cd_status st;
    if ((st = str(c, build ? &name : NULL, "VarDesc.name"))) return st;
    if ((st = rd(c, &kind, 4, "VarType.type"))) goto out;
    if (!v0_kind_ok(kind)) {
        st = fail(c, "unsupported variable kind in ", "VarType.type");
        goto out;
    }
    if ((st = tensor_desc(c, &dt2, dd, &r2, false, "VarType.selected_rows"))) goto out;
    if ((st = lod_tensor_desc(c, &dt, dims, &rank, "VarType.lod_tensor"))) goto out;
    if ((st = lod_tensor_desc(c, &dt2, dd, &r2, "VarType.tensor_array"))) goto out;
    if ((st = count(c, 16, &n, "VarType.reader"))) goto out;
    for (uint64_t i = 0; i < n; i++)
        if ((st = lod_tensor_desc(c, &dt2, dd, &r2, "VarType.reader"))) goto out;
    if ((st = skip_list(c, 4, "VarType.tuple"))) goto out;
    if ((st = rd(c, &pers, 1, "VarDesc.persistable"))) goto out;
    /* Old (v0) programs list a variable once per use; the first declaration wins. */
    if (build && cd_graph_has_var(g, name)) goto out;
    if (build) {
        /* The v0 writer leaves VarDesc dims/data_type uninitialised (observed: junk type
         * numbers, empty dims) and the v0 runtime ignores them, so declare every tensor as
         * float32 of unknown shape (rank 0); parameter records still carry real shapes. */
        (void)dt;
        rank = 0;
        st = cd_nb_declare(g, name, kind == 10, CD_F32, dims, rank, pers != 0, start, c->err);
    }
out:
    free(name);
    return st;
}

static cd_status slots(cur_t *c, cd_graph *g, bool build, bool out, int oi) {
    uint64_t n;
    const char *field = out ? "OpDesc.outputs" : "OpDesc.inputs";
    if (count(c, MIN_SLOT, &n, field)) return c->err->code;
    for (uint64_t i = 0; i < n; i++) {
        size_t start = c->base + c->pos;
        char *param = NULL;
        uint64_t na;
        cd_status st;
        if ((st = str(c, build ? &param : NULL, "Var.parameter"))) return st;
        if ((st = count(c, 8, &na, "Var.arguments"))) {
            free(param);
            return st;
        }
        char **names = build ? calloc(na ? na : 1, sizeof *names) : NULL;
        if (build && !names) {
            free(param);
            return cd_err(c->err, CD_E_NOMEM, "out of memory");
        }
        for (uint64_t k = 0; k < na && !st; k++) st = str(c, build ? &names[k] : NULL, "Var.arguments");
        if (!st && build) {
            st = out ? cd_op_add_output(g, param, (const char *const *)names, (int)na, c->err)
                     : cd_op_add_input(g, param, (const char *const *)names, (int)na, c->err);
            if (st) cd_err_prefix(c->err, "op #%d, file offset %zu: ", oi, start);
        }
        if (names)
            for (uint64_t k = 0; k < na; k++) free(names[k]);
        free(names);
        free(param);
        if (st) return st;
    }
    return CD_OK;
}

static void attr_release(cd_attr *a) {
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    if (a->strings)
        for (int k = 0; k < a->n; k++) free(a->strings[k]);
    free(a->strings);
    memset(a, 0, sizeof *a);
}

static cd_status attr(cur_t *c, cd_graph *g, bool build, int oi, int n_blocks) {
    size_t start = c->base + c->pos;
    cd_attr a = {0};
    int32_t ty, i32, bidx;
    float f;
    int64_t l;
    uint8_t b;
    uint64_t n;
    cd_status st;
    char *s = NULL;
    if ((st = str(c, build ? &a.name : NULL, "Attr.name"))) goto bad;
    if ((st = rd(c, &ty, 4, "Attr.type"))) goto bad;
    if (ty < 0 || ty > 14 || ty == CD_ATTR_FLOAT64S || ty == CD_ATTR_VAR || ty == CD_ATTR_VARS) {
        st = fail(c, "unsupported attribute type in ", "Attr.type");
        goto bad;
    }
    a.type = (cd_attr_type)ty;
    if ((st = rd(c, &i32, 4, "Attr.i")) || (st = rd(c, &f, 4, "Attr.f")) || (st = str(c, &s, "Attr.s"))) goto bad;
    if (a.type == CD_ATTR_INT) a.i = i32;
    if (a.type == CD_ATTR_FLOAT) a.f = f;
    if (a.type == CD_ATTR_STRING) {
        a.s = s;
        s = NULL;
    }
    /* Lists: ints, floats, strings, (b), bools, (block_idx), (l), blocks_idx, longs. */
    if ((st = count(c, 4, &n, "Attr.ints"))) goto bad;
    if (a.type == CD_ATTR_INTS) {
        if (!(a.ints = malloc(8 * (n ? n : 1)))) goto nomem;
        for (uint64_t k = 0; k < n; k++) {
            int32_t v;
            memcpy(&v, c->b + c->pos + 4 * k, 4);
            a.ints[k] = v;
        }
        a.n = (int)n;
    }
    c->pos += 4 * n;
    if ((st = count(c, 4, &n, "Attr.floats"))) goto bad;
    if (a.type == CD_ATTR_FLOATS) {
        if (!(a.floats = malloc(8 * (n ? n : 1)))) goto nomem;
        for (uint64_t k = 0; k < n; k++) {
            float v;
            memcpy(&v, c->b + c->pos + 4 * k, 4);
            a.floats[k] = v;
        }
        a.n = (int)n;
    }
    c->pos += 4 * n;
    if ((st = count(c, 8, &n, "Attr.strings"))) goto bad;
    if (a.type == CD_ATTR_STRINGS) {
        if (!(a.strings = calloc(n ? n : 1, sizeof(char *)))) goto nomem;
        a.n = (int)n;
    }
    for (uint64_t k = 0; k < n; k++)
        if ((st = str(c, a.type == CD_ATTR_STRINGS ? &a.strings[k] : NULL, "Attr.strings"))) goto bad;
    if ((st = rd(c, &b, 1, "Attr.b"))) goto bad;
    if (a.type == CD_ATTR_BOOL) a.i = b != 0;
    if ((st = count(c, 1, &n, "Attr.bools"))) goto bad;
    if (a.type == CD_ATTR_BOOLS) {
        if (!(a.ints = malloc(8 * (n ? n : 1)))) goto nomem;
        for (uint64_t k = 0; k < n; k++) a.ints[k] = c->b[c->pos + k] != 0;
        a.n = (int)n;
    }
    c->pos += n;
    if ((st = rd(c, &bidx, 4, "Attr.block_idx")) || (st = rd(c, &l, 8, "Attr.l"))) goto bad;
    if (a.type == CD_ATTR_BLOCK) a.i = bidx;
    if (a.type == CD_ATTR_LONG) a.i = l;
    if ((st = count(c, 4, &n, "Attr.blocks_idx"))) goto bad;
    if (a.type == CD_ATTR_BLOCKS) {
        if (!(a.ints = malloc(8 * (n ? n : 1)))) goto nomem;
        for (uint64_t k = 0; k < n; k++) {
            int32_t v;
            memcpy(&v, c->b + c->pos + 4 * k, 4);
            a.ints[k] = v;
        }
        a.n = (int)n;
    }
    c->pos += 4 * n;
    if ((st = count(c, 8, &n, "Attr.longs"))) goto bad;
    if (a.type == CD_ATTR_LONGS) {
        if (!(a.ints = malloc(8 * (n ? n : 1)))) goto nomem;
        for (uint64_t k = 0; k < n; k++) memcpy(&a.ints[k], c->b + c->pos + 8 * k, 8);
        a.n = (int)n;
    }
    c->pos += 8 * n;
    free(s);
    if (!build) {
        attr_release(&a);
        return CD_OK;
    }
    if ((st = cd_nb_add_attr(g, oi, &a, n_blocks, c->err)))
        return cd_err_prefix(c->err, "op #%d, file offset %zu: ", oi, start);
    return CD_OK;
nomem:
    st = cd_err(c->err, CD_E_NOMEM, "out of memory");
bad:
    free(s);
    attr_release(&a);
    return st;
}

static cd_status op_desc(cur_t *c, cd_graph *g, bool build, int oi, int n_blocks) {
    size_t start = c->base + c->pos;
    char *type = NULL;
    cd_status st;
    if ((st = str(c, build ? &type : NULL, "OpDesc.type"))) return st;
    if (build) {
        cd_op *op = cd_graph_add_op(g, type, c->err);
        free(type);
        if (!op) return cd_err_prefix(c->err, "op #%d, file offset %zu: ", oi, start);
    }
    if ((st = slots(c, g, build, false, oi)) || (st = slots(c, g, build, true, oi))) return st;
    uint64_t n;
    if ((st = count(c, MIN_ATTR, &n, "OpDesc.attrs"))) return st;
    for (uint64_t i = 0; i < n; i++)
        if ((st = attr(c, g, build, oi, n_blocks))) return st;
    uint8_t is_target;
    return rd(c, &is_target, 1, "OpDesc.is_target");
}

cd_status cd_nb_meta0_topology(cd_graph *g, const uint8_t *buf, size_t len, size_t base, cd_error *err) {
    cur_t c = {buf, len, 0, base, err, "topology"};
    uint64_t nb;
    cd_status st;
    if ((st = count(&c, MIN_BLOCK, &nb, "ProgramDesc.blocks"))) return st;
    if (nb == 0) return fail(&c, "the program has no blocks", NULL);
    for (uint64_t bi = 0; bi < nb; bi++) {
        bool build = bi == 0; /* later blocks are parsed only to find the end of the topology */
        int32_t idx, parent, fwd;
        uint64_t nv, no;
        if ((st = rd(&c, &idx, 4, "BlockDesc.idx")) || (st = rd(&c, &parent, 4, "BlockDesc.parent_idx"))) return st;
        if (build && parent != -1) cd_graph_warn(g, "block 0 has parent_idx %d (expected -1)", parent);
        if ((st = count(&c, MIN_VAR, &nv, "BlockDesc.vars"))) return st;
        for (uint64_t i = 0; i < nv; i++)
            if ((st = var_desc(&c, g, build))) return cd_err_prefix(err, "variable %llu: ", (unsigned long long)i);
        if ((st = count(&c, MIN_OP, &no, "BlockDesc.ops"))) return st;
        for (uint64_t i = 0; i < no; i++) {
            /* Ops of later blocks are parsed (to find the topology's end) but not built. */
            if ((st = op_desc(&c, build ? g : NULL, build, (int)i, (int)nb))) return st;
        }
        if ((st = rd(&c, &fwd, 4, "BlockDesc.forward_block_idx"))) return st;
    }
    int64_t ver;
    if ((st = rd(&c, &ver, 8, "ProgramDesc.version"))) return st;
    g->program_version = ver;
    if (c.pos != len)
        return cd_err(err, CD_E_MODEL, "meta-0 topology ends at file offset %zu but topo_size says %zu", base + c.pos,
                      base + len);
    return CD_OK;
}

cd_status cd_nb_meta0_params(cd_graph *g, const uint8_t *buf, size_t len, size_t base, cd_error *err) {
    cur_t c = {buf, len, 0, base, err, "parameter section"};
    uint64_t np;
    cd_status st;
    if ((st = count(&c, MIN_PARAM, &np, "parameter"))) return st;
    for (uint64_t i = 0; i < np; i++) {
        size_t start = base + c.pos;
        char *name = NULL;
        uint32_t mv, tv;
        uint64_t lod_level, nl, nd;
        int32_t dt;
        int64_t dims[CD_MAX_RANK];
        int rank;
        if ((st = str(&c, &name, "ParamDesc.name"))) return st;
        if ((st = rd(&c, &mv, 4, "model_version")) || (st = rd(&c, &lod_level, 8, "lod_level")) ||
            (st = count(&c, 8, &nl, "lod")))
            goto out;
        for (uint64_t k = 0; k < nl; k++)
            if ((st = skip_list(&c, 8, "lod level"))) goto out;
        if (lod_level || nl) cd_graph_warn(g, "parameter '%s' carries LoD information; ignored", name);
        if ((st = rd(&c, &tv, 4, "tensor_version"))) goto out;
        if (tv != 0) {
            c.pos -= 4;
            st = fail(&c, "tensor_version must be 0 in ", "the parameter record");
            goto out;
        }
        if ((st = tensor_desc(&c, &dt, dims, &rank, true, "ParamDesc.tensor_desc"))) goto out;
        if ((st = count(&c, 1, &nd, "parameter data"))) goto out;
        {
            int cdt = cd_dtype_from_meta0(dt);
            /* The v0 loader accepted UINT8, INT8, INT16, INT32, INT64, FP32 (and FP64, which
             * cldiff cannot use); FP16 and BOOL were not in its list. */
            if (cdt == CD_F16 || cdt == CD_BOOL) cdt = -1;
            st = cd_nb_param(g, name, cdt, dims, rank, c.b + c.pos, nd, start, err);
            if (st) cd_err_prefix(err, "meta-0 parameter %llu: ", (unsigned long long)i);
        }
        c.pos += nd;
    out:
        free(name);
        if (st) return st;
    }
    if (c.pos != len)
        return cd_err(err, CD_E_MODEL, "meta-0 parameter section has %zu trailing bytes at file offset %zu",
                      len - c.pos, base + c.pos);
    return CD_OK;
}
