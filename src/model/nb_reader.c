/* .nb reader (docs/nb-format.md): container (§1), FlatBuffers topology (§3, §4) and parameters (§1.3, §1.4).
 * Meta 0 lives in nb_meta0.c; the checks of what both decode (declarations, parameters,
 * attributes) in nb_build.c. */
#include "model/nb_reader.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "model/fb.h"

#define FB_LOD_TENSOR 7
#define MAX_FILE_BYTES ((uint64_t)16 << 30) /* refuse absurd files before reading them */

static bool fb_type_defined(int32_t v) { return v >= 0 && v <= 21 && v != 16; }

/* ------------------------------------------------------------------ FlatBuffers topology */
static cd_status read_i64_vec(cd_fb *fb, const cd_fb_table *t, int slot, const char *field, int64_t *out, int max,
                              int *n, cd_error *err) {
    size_t d;
    uint32_t c;
    if (cd_fb_vec(fb, t, slot, field, 8, &d, &c, err)) return err->code;
    if (c > (uint32_t)max)
        return cd_fb_fail(fb, d - 4, err, "'%s' has %u entries, over the rank limit %d", field, c, max);
    for (uint32_t i = 0; i < c; i++) out[i] = (int64_t)cd_ld_u64(fb->buf + d + 8 * i);
    *n = (int)c;
    return CD_OK;
}

static cd_status read_var(cd_graph *g, cd_fb *fb, const cd_fb_table *vt, cd_error *err) {
    const char *name;
    if (cd_fb_str(fb, vt, 0, "VarDesc.name", true, &name, NULL, err)) return err->code;
    cd_fb_table ty, lt, td;
    if (cd_fb_sub(fb, vt, 1, "VarDesc.type", true, NULL, &ty, err)) return err->code;
    uint8_t pers;
    if (cd_fb_u8(fb, vt, 2, 0, &pers, err)) return err->code;
    int32_t kind;
    if (cd_fb_i32(fb, &ty, 0, 0, &kind, err)) return err->code;
    if (!fb_type_defined(kind))
        return cd_fb_fail(fb, ty.pos, err, "variable '%s' has undefined VarType %d", name, kind);
    bool has_lt;
    int32_t dt = 0;
    int64_t dims[CD_MAX_RANK];
    int rank = 0;
    if (cd_fb_sub(fb, &ty, 2, "VarType.lod_tensor", false, &has_lt, &lt, err)) return err->code;
    if (has_lt) {
        if (cd_fb_sub(fb, &lt, 0, "LoDTensorDesc.tensor", true, NULL, &td, err)) return err->code;
        if (cd_fb_i32(fb, &td, 0, 0, &dt, err)) return err->code;
        if (!fb_type_defined(dt))
            return cd_fb_fail(fb, td.pos, err, "variable '%s' has undefined data_type %d", name, dt);
        if (read_i64_vec(fb, &td, 1, "TensorDesc.dims", dims, CD_MAX_RANK, &rank, err))
            return cd_err_prefix(err, "variable '%s': ", name);
    }
    return cd_nb_declare(g, name, kind == FB_LOD_TENSOR, cd_dtype_from_fb(dt), dims, rank, pers != 0,
                         fb->base + vt->pos, err);
}

static cd_status read_slots(cd_graph *g, cd_fb *fb, const cd_fb_table *ot, int slot, bool out, int oi, cd_error *err) {
    size_t d;
    uint32_t c;
    const char *kind = out ? "outputs" : "inputs";
    if (cd_fb_vec(fb, ot, slot, kind, 4, &d, &c, err)) return err->code;
    const char *prev = NULL;
    for (uint32_t i = 0; i < c; i++) {
        cd_fb_table vt;
        if (cd_fb_vec_table(fb, d, i, ot->depth + 1, &vt, err)) return err->code;
        const char *param;
        if (cd_fb_str(fb, &vt, 0, "Var.parameter", true, &param, NULL, err)) return err->code;
        if (prev && strcmp(prev, param) > 0)
            cd_graph_warn(g, "op #%d (%s): %s are not sorted by slot name", oi, g->ops[oi].type, kind);
        prev = param;
        size_t ad;
        uint32_t ac;
        if (cd_fb_vec(fb, &vt, 1, "Var.arguments", 4, &ad, &ac, err)) return err->code;
        const char **names = cd_calloc(ac ? ac : 1, sizeof *names, err);
        if (!names) return err->code;
        for (uint32_t k = 0; k < ac; k++)
            if (cd_fb_vec_str(fb, ad, k, &names[k], NULL, err)) {
                free(names);
                return err->code;
            }
        cd_status st =
            out ? cd_op_add_output(g, param, names, (int)ac, err) : cd_op_add_input(g, param, names, (int)ac, err);
        free(names);
        if (st) return cd_err_prefix(err, "file offset %zu: ", fb->base + vt.pos);
    }
    return CD_OK;
}

/* Scalar vector -> int64 / double arrays of the attribute. */
static cd_status attr_vec(cd_fb *fb, const cd_fb_table *at, int slot, const char *field, size_t es, bool is_float,
                          cd_attr *a, cd_error *err) {
    size_t d;
    uint32_t c;
    if (cd_fb_vec(fb, at, slot, field, es, &d, &c, err)) return err->code;
    a->n = (int)c;
    if (is_float) {
        a->floats = cd_malloc(sizeof(double) * (c ? c : 1), err);
        if (!a->floats) return err->code;
    } else {
        a->ints = cd_malloc(sizeof(int64_t) * (c ? c : 1), err);
        if (!a->ints) return err->code;
    }
    const uint8_t *p = fb->buf + d;
    for (uint32_t i = 0; i < c; i++) {
        if (is_float && es == 4) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            a->floats[i] = f;
        } else if (is_float) {
            double f;
            memcpy(&f, p + 8 * i, 8);
            a->floats[i] = f;
        } else if (es == 1)
            a->ints[i] = p[i] != 0;
        else if (es == 4)
            a->ints[i] = (int32_t)cd_ld_u32(p + 4 * i);
        else
            a->ints[i] = (int64_t)cd_ld_u64(p + 8 * i);
    }
    return CD_OK;
}

static void attr_clear(cd_attr *a) {
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    if (a->strings)
        for (int i = 0; i < a->n; i++) free(a->strings[i]);
    free(a->strings);
    memset(a, 0, sizeof *a);
}

static cd_status decode_attr(cd_fb *fb, const cd_fb_table *at, cd_attr *a, cd_error *err) {
    const char *name;
    if (cd_fb_str(fb, at, 0, "Attr.name", true, &name, NULL, err)) return err->code;
    a->name = cd_strdup(name);
    if (!a->name) return cd_err(err, CD_E_NOMEM, "out of memory");
    int32_t ty;
    if (cd_fb_i32(fb, at, 1, 0, &ty, err)) return err->code;
    if (ty < 0 || ty > 15 || ty == CD_ATTR_VAR || ty == CD_ATTR_VARS)
        return cd_fb_fail(fb, at->pos, err, "attribute '%s' has unsupported AttrType %d", name, ty);
    a->type = (cd_attr_type)ty;
    int32_t i32;
    uint8_t u8;
    float f32;
    switch (a->type) {
    case CD_ATTR_INT:
        if (cd_fb_i32(fb, at, 2, 0, &i32, err)) return err->code;
        a->i = i32;
        break;
    case CD_ATTR_FLOAT:
        if (cd_fb_f32(fb, at, 3, &f32, err)) return err->code;
        a->f = f32;
        break;
    case CD_ATTR_STRING: {
        const char *s;
        if (cd_fb_str(fb, at, 4, "Attr.s", false, &s, NULL, err)) return err->code;
        a->s = cd_strdup(s ? s : "");
        if (!a->s) return cd_err(err, CD_E_NOMEM, "out of memory");
        break;
    }
    case CD_ATTR_INTS: return attr_vec(fb, at, 5, "Attr.ints", 4, false, a, err);
    case CD_ATTR_FLOATS: return attr_vec(fb, at, 6, "Attr.floats", 4, true, a, err);
    case CD_ATTR_STRINGS: {
        size_t d;
        uint32_t c;
        if (cd_fb_vec(fb, at, 7, "Attr.strings", 4, &d, &c, err)) return err->code;
        a->strings = cd_calloc(c ? c : 1, sizeof(char *), err);
        if (!a->strings) return err->code;
        a->n = (int)c;
        for (uint32_t k = 0; k < c; k++) {
            const char *s;
            if (cd_fb_vec_str(fb, d, k, &s, NULL, err)) return err->code;
            if (!(a->strings[k] = cd_strdup(s))) return cd_err(err, CD_E_NOMEM, "out of memory");
        }
        break;
    }
    case CD_ATTR_BOOL:
        if (cd_fb_u8(fb, at, 8, 0, &u8, err)) return err->code;
        a->i = u8 != 0;
        break;
    case CD_ATTR_BOOLS: return attr_vec(fb, at, 9, "Attr.bools", 1, false, a, err);
    case CD_ATTR_BLOCK:
        if (cd_fb_i32(fb, at, 10, 0, &i32, err)) return err->code;
        a->i = i32;
        break;
    case CD_ATTR_LONG:
        if (cd_fb_i64(fb, at, 11, 0, &a->i, err)) return err->code;
        break;
    case CD_ATTR_BLOCKS: return attr_vec(fb, at, 12, "Attr.blocks_idx", 4, false, a, err);
    case CD_ATTR_LONGS: return attr_vec(fb, at, 13, "Attr.longs", 8, false, a, err);
    case CD_ATTR_FLOAT64:
        if (cd_fb_f64(fb, at, 14, &a->f, err)) return err->code;
        break;
    case CD_ATTR_FLOAT64S: return attr_vec(fb, at, 15, "Attr.float64s", 8, true, a, err);
    default: break;
    }
    return CD_OK;
}

static cd_status read_op(cd_graph *g, cd_fb *fb, const cd_fb_table *ot, int oi, int n_blocks, cd_error *err) {
    const char *type;
    if (cd_fb_str(fb, ot, 0, "OpDesc.type", true, &type, NULL, err)) return err->code;
    if (!cd_graph_add_op(g, type, err)) return cd_err_prefix(err, "file offset %zu: ", fb->base + ot->pos);
    if (read_slots(g, fb, ot, 1, false, oi, err) || read_slots(g, fb, ot, 2, true, oi, err)) return err->code;
    size_t d;
    uint32_t c;
    if (cd_fb_vec(fb, ot, 3, "attrs", 4, &d, &c, err)) return err->code;
    for (uint32_t i = 0; i < c; i++) {
        cd_fb_table at;
        cd_attr a = {0};
        if (cd_fb_vec_table(fb, d, i, ot->depth + 1, &at, err) || decode_attr(fb, &at, &a, err)) {
            attr_clear(&a);
            return err->code;
        }
        size_t off = fb->base + at.pos;
        if (cd_nb_add_attr(g, oi, &a, n_blocks, err)) return cd_err_prefix(err, "file offset %zu: ", off);
    }
    return CD_OK;
}

static cd_status read_topology(cd_graph *g, const uint8_t *buf, size_t len, size_t base, cd_error *err) {
    cd_fb fb;
    cd_fb_table root, blk;
    if (cd_fb_init(&fb, buf, len, base, "topology", err) || cd_fb_root(&fb, &root, err)) return err->code;
    size_t bd;
    uint32_t nb;
    if (cd_fb_vec(&fb, &root, 0, "ProgramDesc.blocks", 4, &bd, &nb, err)) return err->code;
    if (nb == 0) return cd_fb_fail(&fb, root.pos, err, "the program has no blocks");
    bool has_ver;
    cd_fb_table vt;
    if (cd_fb_sub(&fb, &root, 1, "ProgramDesc.version", false, &has_ver, &vt, err)) return err->code;
    if (has_ver && cd_fb_i64(&fb, &vt, 0, 0, &g->program_version, err)) return err->code;
    if (cd_fb_vec_table(&fb, bd, 0, 2, &blk, err)) return err->code;
    int32_t idx, parent, fwd;
    if (cd_fb_i32(&fb, &blk, 0, 0, &idx, err) || cd_fb_i32(&fb, &blk, 1, 0, &parent, err) ||
        cd_fb_i32(&fb, &blk, 4, -1, &fwd, err))
        return err->code;
    if (idx != 0) cd_graph_warn(g, "block 0 says idx %d", idx);
    if (parent != -1 && parent != 0) cd_graph_warn(g, "block 0 has parent_idx %d (expected -1)", parent);
    if (fwd < -1 || fwd >= (int64_t)nb)
        return cd_fb_fail(&fb, blk.pos, err, "block 0 forward_block_idx %d is not a valid block", fwd);
    size_t vd, od;
    uint32_t nv, no;
    if (cd_fb_vec(&fb, &blk, 2, "BlockDesc.vars", 4, &vd, &nv, err)) return err->code;
    for (uint32_t i = 0; i < nv; i++) {
        cd_fb_table v;
        if (cd_fb_vec_table(&fb, vd, i, 3, &v, err) || read_var(g, &fb, &v, err))
            return cd_err_prefix(err, "variable %u: ", i);
    }
    if (cd_fb_vec(&fb, &blk, 3, "BlockDesc.ops", 4, &od, &no, err)) return err->code;
    if (no > 1000000u) return cd_fb_fail(&fb, od - 4, err, "%u ops is over the limit of 1000000", no);
    for (uint32_t i = 0; i < no; i++) {
        cd_fb_table o;
        if (cd_fb_vec_table(&fb, od, i, 3, &o, err) || read_op(g, &fb, &o, (int)i, (int)nb, err))
            return cd_err_prefix(err, "op #%u: ", i);
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ parameters */
static cd_status read_param_desc(cd_graph *g, cd_fb *fb, const cd_fb_table *pt, uint32_t max_data, cd_error *err) {
    const char *name;
    if (cd_fb_str(fb, pt, 1, "ParamDesc.name", true, &name, NULL, err)) return err->code;
    uint8_t vtype;
    if (cd_fb_u8(fb, pt, 2, 0, &vtype, err)) return err->code;
    if (vtype != 1)
        return cd_fb_fail(fb, pt->pos, err, "parameter '%s' has variable_type %u, expected 1 (LoDTensorDesc)", name,
                          vtype);
    cd_fb_table lt;
    if (cd_fb_sub(fb, pt, 3, "ParamDesc.variable", true, NULL, &lt, err))
        return cd_err_prefix(err, "parameter '%s': ", name);
    int32_t lod_level, dt;
    if (cd_fb_i32(fb, &lt, 0, 0, &lod_level, err) || cd_fb_i32(fb, &lt, 3, 0, &dt, err)) return err->code;
    size_t ld, dd;
    uint32_t lc, dc;
    if (cd_fb_vec(fb, &lt, 1, "lod", 8, &ld, &lc, err)) return err->code;
    if (lod_level != 0 || lc != 0) cd_graph_warn(g, "parameter '%s' carries LoD information; ignored", name);
    int64_t dims[CD_MAX_RANK];
    int rank;
    if (read_i64_vec(fb, &lt, 2, "dim", dims, CD_MAX_RANK, &rank, err))
        return cd_err_prefix(err, "parameter '%s': ", name);
    static const int ok_types[] = {0, 1, 2, 3, 4, 5, 20, 21};
    bool ok = false;
    for (size_t i = 0; i < sizeof ok_types / sizeof *ok_types; i++) ok |= dt == ok_types[i];
    if (!ok)
        return cd_fb_fail(fb, lt.pos, err, "parameter '%s' has data_type %d, not a parameter element type", name, dt);
    if (cd_fb_vec(fb, &lt, 4, "data", 1, &dd, &dc, err)) return err->code;
    if (max_data != UINT32_MAX && dc > max_data)
        cd_graph_warn(g, "parameter '%s' holds %u bytes, more than the header's max_data_bytes %u", name, dc, max_data);
    return cd_nb_param(g, name, cd_dtype_from_fb(dt), dims, rank, fb->buf + dd, dc, fb->base + (dd ? dd - 4 : lt.pos),
                       err);
}

static cd_status read_params_meta2(cd_graph *g, const uint8_t *b, size_t len, size_t ps, cd_error *err) {
    size_t p = ps;
#define NEED(n, what)                                                                                                  \
    if (len - p < (size_t)(n))                                                                                         \
    return cd_err(err, CD_E_MODEL, "parameter section truncated: %s needs %zu bytes at file offset %zu, %zu left",     \
                  what, (size_t)(n), p, len - p)
    NEED(4, "format version and reserved length");
    uint16_t pfv = cd_ld_u16(b + p), rl = cd_ld_u16(b + p + 2);
    if (pfv != 0)
        return cd_err(err, CD_E_MODEL, "parameter section format version %u at file offset %zu; only 0 exists", pfv, p);
    p += 4;
    NEED(rl, "reserved block");
    p += rl;
    NEED(2, "header length");
    uint16_t hl = cd_ld_u16(b + p);
    p += 2;
    if (hl < 6) return cd_err(err, CD_E_MODEL, "parameter header length %u at file offset %zu is below 6", hl, p - 2);
    NEED(hl, "parameter header");
    uint16_t count = cd_ld_u16(b + p);
    uint32_t max_data = cd_ld_u32(b + p + 2);
    p += hl;
    for (uint32_t i = 0; i < count; i++) {
        size_t rp = p;
        if (len - p < 8)
            return cd_err(err, CD_E_MODEL, "parameter record %u of %u: header truncated at file offset %zu", i, count,
                          p);
        uint32_t rec_len = cd_ld_u32(b + p), fb_start = cd_ld_u32(b + p + 4);
        p += 4; /* offsets count from the fb_start field */
        if (fb_start < 4 || fb_start > rec_len || rec_len - fb_start < 12 || rec_len > len - p)
            return cd_err(err, CD_E_MODEL,
                          "parameter record %u of %u at file offset %zu: record_len %u / fb_start %u are inconsistent "
                          "(%zu bytes left in the file)",
                          i, count, rp, rec_len, fb_start, len - p);
        char what[64];
        snprintf(what, sizeof what, "parameter record %u", i);
        cd_fb fb;
        cd_fb_table root;
        if (cd_fb_init(&fb, b + p + fb_start, rec_len - fb_start, p + fb_start, what, err) ||
            cd_fb_root(&fb, &root, err) || read_param_desc(g, &fb, &root, max_data, err))
            return err->code;
        p += rec_len;
    }
    if (p != len)
        cd_graph_warn(g,
                      "%zu trailing bytes after the last parameter record (file offset %zu); the parameter count "
                      "may have wrapped past 65535",
                      len - p, p);
    return CD_OK;
#undef NEED
}

static cd_status read_params_meta1(cd_graph *g, const uint8_t *b, size_t len, size_t ps, cd_error *err) {
    cd_fb fb;
    cd_fb_table root;
    if (cd_fb_init(&fb, b + ps, len - ps, ps, "combined parameters", err) || cd_fb_root(&fb, &root, err))
        return err->code;
    size_t d;
    uint32_t c;
    if (cd_fb_vec(&fb, &root, 0, "CombinedParamsDesc.params", 4, &d, &c, err)) return err->code;
    for (uint32_t i = 0; i < c; i++) {
        cd_fb_table pt;
        if (cd_fb_vec_table(&fb, d, i, 2, &pt, err) || read_param_desc(g, &fb, &pt, UINT32_MAX, err))
            return cd_err_prefix(err, "parameter %u: ", i);
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ container */
cd_status cd_nb_load_mem(const uint8_t *b, size_t len, cd_graph **out, cd_error *err) {
    *out = NULL;
    if (!b || len < CD_NB_HEADER)
        return cd_err(err, CD_E_MODEL, "model is %zu bytes, shorter than the 26-byte .nb header", b ? len : 0);
    uint16_t meta = cd_ld_u16(b);
    if (meta > 2)
        return cd_err(err, CD_E_MODEL,
                      "unknown meta_version %u at file offset 0 (expected 0, 1 or 2): not a Paddle-Lite .nb model or "
                      "written by a newer opt",
                      meta);
    uint64_t topo = cd_ld_u64(b + 18);
    if (topo > len - CD_NB_HEADER)
        return cd_err(err, CD_E_MODEL,
                      "topology size %llu at file offset 18 exceeds the %zu bytes after the header "
                      "(file truncated?)",
                      (unsigned long long)topo, len - CD_NB_HEADER);
    if (topo < 12)
        return cd_err(err, CD_E_MODEL, "topology size %llu at file offset 18 is too small", (unsigned long long)topo);
    if (meta != 0 && topo >= 0x7fffffffu)
        return cd_err(err, CD_E_MODEL, "topology size %llu at file offset 18 exceeds the FlatBuffers limit",
                      (unsigned long long)topo);
    cd_graph *g = cd_graph_new();
    if (!g) return cd_err(err, CD_E_NOMEM, "out of memory");
    g->meta_version = meta;
    /* Up to the first NUL; the tail after it is leftover junk from the writer's stack. */
    for (int i = 0; i < 16; i++) {
        unsigned char c = b[2 + i];
        if (!c) break;
        g->opt_version[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    size_t ps = CD_NB_HEADER + (size_t)topo;
    cd_status st;
    if (meta == 0) {
        st = cd_nb_meta0_topology(g, b + CD_NB_HEADER, (size_t)topo, CD_NB_HEADER, err);
        if (!st) st = cd_nb_meta0_params(g, b + ps, len - ps, ps, err);
    } else {
        st = read_topology(g, b + CD_NB_HEADER, (size_t)topo, CD_NB_HEADER, err);
        if (!st) {
            if (meta == 2)
                st = read_params_meta2(g, b, len, ps, err);
            else if (len - ps < 12 || len - ps >= 0x7fffffffu)
                st = cd_err(err, CD_E_MODEL,
                            "meta 1 parameter FlatBuffer at file offset %zu is %zu bytes (need 12 .. 2^31-2)", ps,
                            len - ps);
            else
                st = read_params_meta1(g, b, len, ps, err);
        }
    }
    if (!st) st = cd_graph_finalize(g, err);
    if (st) {
        cd_graph_free(g);
        return st;
    }
    *out = g;
    return CD_OK;
}

cd_status cd_nb_load(const char *path, cd_graph **out, cd_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open model '%s': %s", path, strerror(errno));
    struct stat stbuf;
    if (fstat(fileno(f), &stbuf) != 0 || !S_ISREG(stbuf.st_mode)) {
        fclose(f);
        return cd_err(err, CD_E_USAGE, "cannot read model '%s': not a regular file", path);
    }
    if ((uint64_t)stbuf.st_size > MAX_FILE_BYTES) {
        fclose(f);
        return cd_err(err, CD_E_MODEL, "model '%s' is %lld bytes, over cldiff's 16 GiB limit", path,
                      (long long)stbuf.st_size);
    }
    size_t len = (size_t)stbuf.st_size;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf) {
        fclose(f);
        return cd_err(err, CD_E_NOMEM, "out of memory reading model '%s' (%zu bytes)", path, len);
    }
    size_t got = fread(buf, 1, len, f);
    int rerr = ferror(f);
    fclose(f);
    if (got != len || rerr) {
        free(buf);
        return cd_err(err, CD_E_USAGE, "cannot read model '%s': short read (%zu of %zu bytes)", path, got, len);
    }
    cd_status st = cd_nb_load_mem(buf, len, out, err);
    free(buf);
    if (st) cd_err_prefix(err, "model '%s': ", path);
    return st;
}
