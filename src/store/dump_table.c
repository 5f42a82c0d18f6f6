/* Dump writer: compound tables (cd_dump_write_table), the /model/ops table and the per-run
 * tensors tables (/tensors/<run>, format 2: rows kept in memory while a run is written). */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/dump.h"
#include "store/dump_writer.h"

/* ---------------- generic compound tables ---------------- */

static hid_t fixed_str_type(size_t len) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, len);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    return t;
}

cd_status cd_dump_write_table(cd_dump *d, const char *path, const cd_column *cols, int ncols, int64_t nrows,
                              cd_error *err) {
    if (ncols <= 0 || nrows < 0) return cd_err(err, CD_E_INTERNAL, "table '%s' needs columns", path);
    const char *slash = strrchr(path, '/');
    if (!cd_dumpw_valid_path(path) || !slash[1]) return cd_err(err, CD_E_INTERNAL, "bad table path '%s'", path);
    if (slash != path) {
        char parent[1024];
        size_t pl = (size_t)(slash - path);
        if (pl >= sizeof parent) return cd_err(err, CD_E_INTERNAL, "table path too long");
        memcpy(parent, path, pl);
        parent[pl] = 0;
        cd_status st = cd_dumpw_make_groups(d, parent, err);
        if (st) return st;
    }
    size_t *off = cd_calloc((size_t)ncols, sizeof *off, err);
    size_t *len = cd_calloc((size_t)ncols, sizeof *len, err);
    if (!off || !len) {
        free(off);
        free(len);
        return CD_E_NOMEM;
    }
    size_t row = 0;
    for (int c = 0; c < ncols; c++) {
        off[c] = row;
        if (cols[c].type == CD_COL_STR) {
            size_t mx = 1;
            const char *const *s = cols[c].data;
            for (int64_t i = 0; i < nrows; i++) {
                size_t l = s[i] ? strlen(s[i]) + 1 : 1;
                if (l > mx) mx = l;
            }
            len[c] = mx;
        } else {
            len[c] = 8;
        }
        row += len[c];
    }
    hid_t ct = H5Tcreate(H5T_COMPOUND, row);
    cd_status st = CD_OK;
    for (int c = 0; c < ncols && !st; c++) {
        hid_t ft = cols[c].type == CD_COL_I64 ? H5Tcopy(H5T_NATIVE_INT64)
            : cols[c].type == CD_COL_F64      ? H5Tcopy(H5T_NATIVE_DOUBLE)
                                              : fixed_str_type(len[c]);
        if (H5Tinsert(ct, cols[c].name, off[c], ft) < 0)
            st = cd_dump_h5_error(err, CD_E_INTERNAL, "bad column '%s' in table '%s'", cols[c].name, path);
        H5Tclose(ft);
    }
    unsigned char *buf = NULL;
    if (!st && nrows > 0) {
        buf = cd_calloc((size_t)nrows, row, err);
        if (!buf) st = CD_E_NOMEM;
    }
    for (int64_t i = 0; !st && i < nrows; i++) {
        unsigned char *r = buf + (size_t)i * row;
        for (int c = 0; c < ncols; c++) {
            if (cols[c].type == CD_COL_I64)
                memcpy(r + off[c], (const int64_t *)cols[c].data + i, 8);
            else if (cols[c].type == CD_COL_F64)
                memcpy(r + off[c], (const double *)cols[c].data + i, 8);
            else {
                const char *s = ((const char *const *)cols[c].data)[i];
                if (s) memcpy(r + off[c], s, strlen(s));
            }
        }
    }
    if (!st) {
        htri_t ex = H5Lexists(d->file, path, H5P_DEFAULT);
        if (ex > 0 && H5Ldelete(d->file, path, H5P_DEFAULT) < 0)
            st = cd_dump_h5_error(err, CD_E_IO, "cannot replace table '%s'", path);
    }
    if (!st) {
        hsize_t dim = (hsize_t)nrows;
        hid_t sp = H5Screate_simple(1, &dim, NULL);
        hid_t ds = H5Dcreate2(d->file, path, ct, sp, H5P_DEFAULT, d->dcpl_plain, H5P_DEFAULT);
        if (ds < 0 || (nrows > 0 && H5Dwrite(ds, ct, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0))
            st = cd_dump_h5_error(err, CD_E_IO, "cannot write table '%s' to dump '%s'", path, d->tmp);
        /* the checksum of the rows as stored (docs/dump-format.md "Checksums") */
        if (!st && cd_dumpw_digest_attr(ds, buf, (size_t)nrows * row) < 0)
            st = cd_dump_h5_error(err, CD_E_IO, "cannot write table '%s' to dump '%s'", path, d->tmp);
        if (ds >= 0) H5Dclose(ds);
        H5Sclose(sp);
    }
    H5Tclose(ct);
    free(buf);
    free(off);
    free(len);
    return st;
}

/* ---------------- model table ---------------- */

/* "Slot=a,b;Slot2=c" with "" for unconnected entries. */
static char *slots_str(const cd_graph *g, const cd_slot *slots, int n) {
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    for (int i = 0; i < n; i++) {
        for (int k = -1; k < slots[i].n; k++) {
            const char *txt = "";
            if (k < 0)
                txt = slots[i].name ? slots[i].name : "";
            else if (slots[i].ids[k] >= 0 && slots[i].ids[k] < g->n_tensors)
                txt = g->tensors[slots[i].ids[k]].name;
            const char *sep = k < 0 ? (i ? ";" : "") : (k == 0 ? "=" : ",");
            size_t need = len + strlen(sep) + strlen(txt) + 1;
            if (need > cap) {
                while (cap < need) cap *= 2;
                char *ns = realloc(s, cap);
                if (!ns) {
                    free(s);
                    return NULL;
                }
                s = ns;
            }
            len += (size_t)sprintf(s + len, "%s%s", sep, txt);
        }
    }
    return s;
}

cd_status cd_dump_write_model(cd_dump *d, const cd_graph *g, cd_error *err) {
    int n = g->n_ops;
    int64_t *idx = cd_calloc((size_t)n, sizeof *idx, err);
    const char **cols_s[8];
    for (int c = 0; c < 8; c++) cols_s[c] = cd_calloc((size_t)n, sizeof(char *), err);
    char **owned = cd_calloc((size_t)n * 2, sizeof(char *), err);
    cd_status st = CD_OK;
    for (int c = 0; c < 8; c++)
        if (!cols_s[c]) st = CD_E_NOMEM;
    if (!idx || !owned) st = CD_E_NOMEM;
    for (int i = 0; !st && i < n; i++) {
        const cd_op *op = &g->ops[i];
        idx[i] = i;
        cols_s[0][i] = op->name;
        cols_s[1][i] = op->type;
        owned[2 * i] = slots_str(g, op->in, op->n_in);
        owned[2 * i + 1] = slots_str(g, op->out, op->n_out);
        if (!owned[2 * i] || !owned[2 * i + 1]) {
            st = cd_err(err, CD_E_NOMEM, "out of memory");
            break;
        }
        cols_s[2][i] = owned[2 * i];
        cols_s[3][i] = owned[2 * i + 1];
        cols_s[4][i] = op->kernel.present ? op->kernel.alias : "";
        cols_s[5][i] = op->kernel.present ? cd_target_name(op->kernel.target) : "";
        cols_s[6][i] = op->kernel.present ? cd_precision_name(op->kernel.precision) : "";
        cols_s[7][i] = op->kernel.present ? cd_layout_name(op->kernel.layout) : "";
    }
    if (!st) {
        cd_column cols[9] = {{"index", CD_COL_I64, idx},
                             {"name", CD_COL_STR, cols_s[0]},
                             {"type", CD_COL_STR, cols_s[1]},
                             {"inputs", CD_COL_STR, cols_s[2]},
                             {"outputs", CD_COL_STR, cols_s[3]},
                             {"kernel_alias", CD_COL_STR, cols_s[4]},
                             {"kernel_target", CD_COL_STR, cols_s[5]},
                             {"kernel_precision", CD_COL_STR, cols_s[6]},
                             {"kernel_layout", CD_COL_STR, cols_s[7]}};
        st = cd_dump_write_table(d, "/model/ops", cols, 9, n, err);
    }
    if (!st) {
        hid_t m = H5Gopen2(d->file, "/model", H5P_DEFAULT);
        herr_t r = m < 0 ? -1 : 0;
        if (m >= 0) {
            r |= cd_dumpw_attr_i64(m, "meta_version", g->meta_version);
            r |= cd_dumpw_attr_str(m, "opt_version", g->opt_version);
            r |= cd_dumpw_attr_i64(m, "n_ops", g->n_ops);
            H5Gclose(m);
        }
        if (r < 0) st = cd_dump_h5_error(err, CD_E_IO, "cannot write /model attributes to dump '%s'", d->tmp);
    }
    if (owned)
        for (int i = 0; i < 2 * n; i++) free(owned[i]);
    free(owned);
    for (int c = 0; c < 8; c++) free(cols_s[c]);
    free(idx);
    return st;
}

/* ---------------- the per-run tensors table ---------------- */

void cd_dumpw_rows_free(run_rows *rr) {
    for (int i = 0; i < rr->n; i++) {
        tensor_row *t = &rr->rows[i];
        free(t->dataset);
        free(t->op_type);
        free(t->layer);
        free(t->tensor);
        free(t->dtype);
        free(t->shape);
        free(t->where);
        free(t->kernel);
        free(t->note);
    }
    free(rr->rows);
    rr->rows = NULL;
    rr->n = rr->cap = 0;
}

run_rows *cd_dumpw_find_rows(cd_dump *d, const char *run, bool create) {
    for (int i = 0; i < d->n_pend; i++)
        if (!strcmp(d->pend[i].name, run)) return &d->pend[i];
    if (!create) return NULL;
    run_rows *np = realloc(d->pend, sizeof *np * (size_t)(d->n_pend + 1));
    if (!np) return NULL;
    d->pend = np;
    run_rows *rr = &d->pend[d->n_pend++];
    memset(rr, 0, sizeof *rr);
    snprintf(rr->name, sizeof rr->name, "%s", run);
    return rr;
}

/* Writes /tensors/<run> from the rows kept for the run and forgets them. */
cd_status cd_dumpw_flush_run(cd_dump *d, run_rows *rr, cd_error *err) {
    int64_t n = rr->n;
    size_t cnt = (size_t)(n ? n : 1);
    const char **sv[9];
    int64_t *iv[5];
    double *fv[5];
    bool oom = false;
    for (int k = 0; k < 9; k++) oom |= !(sv[k] = calloc(cnt, sizeof(char *)));
    for (int k = 0; k < 5; k++) oom |= !(iv[k] = calloc(cnt, sizeof(int64_t)));
    for (int k = 0; k < 5; k++) oom |= !(fv[k] = calloc(cnt, sizeof(double)));
    cd_status st = CD_OK;
    if (oom) {
        st = cd_err(err, CD_E_NOMEM, "out of memory writing the tensors table of run '%s'", rr->name);
    } else {
        for (int64_t i = 0; i < n; i++) {
            const tensor_row *t = &rr->rows[i];
            sv[0][i] = t->dataset;
            sv[1][i] = t->op_type;
            sv[2][i] = t->layer;
            sv[3][i] = t->tensor;
            sv[4][i] = t->dtype;
            sv[5][i] = t->shape;
            sv[6][i] = t->where;
            sv[7][i] = t->kernel;
            sv[8][i] = t->note;
            iv[0][i] = t->op_index;
            iv[1][i] = t->stats_only;
            iv[2][i] = t->count;
            iv[3][i] = t->nan_count;
            iv[4][i] = t->inf_count;
            fv[0][i] = t->elapsed_us;
            fv[1][i] = t->kernel_us;
            fv[2][i] = t->min;
            fv[3][i] = t->max;
            fv[4][i] = t->mean;
        }
        const cd_column cols[] = {
            {"dataset", CD_COL_STR, sv[0]},    {"op_index", CD_COL_I64, iv[0]},   {"op_type", CD_COL_STR, sv[1]},
            {"layer", CD_COL_STR, sv[2]},      {"tensor", CD_COL_STR, sv[3]},     {"dtype", CD_COL_STR, sv[4]},
            {"shape", CD_COL_STR, sv[5]},      {"elapsed_us", CD_COL_F64, fv[0]}, {"kernel_us", CD_COL_F64, fv[1]},
            {"where", CD_COL_STR, sv[6]},      {"kernel", CD_COL_STR, sv[7]},     {"note", CD_COL_STR, sv[8]},
            {"stats_only", CD_COL_I64, iv[1]}, {"count", CD_COL_I64, iv[2]},      {"min", CD_COL_F64, fv[2]},
            {"max", CD_COL_F64, fv[3]},        {"mean", CD_COL_F64, fv[4]},       {"nan_count", CD_COL_I64, iv[3]},
            {"inf_count", CD_COL_I64, iv[4]},
        };
        char path[160];
        snprintf(path, sizeof path, "/tensors/%s", rr->name);
        st = cd_dump_write_table(d, path, cols, (int)(sizeof cols / sizeof cols[0]), n, err);
    }
    for (int k = 0; k < 9; k++) free(sv[k]);
    for (int k = 0; k < 5; k++) {
        free(iv[k]);
        free(fv[k]);
    }
    /* forget the rows either way: a failed write is reported, not retried */
    cd_dumpw_rows_free(rr);
    int at = (int)(rr - d->pend);
    memmove(&d->pend[at], &d->pend[at + 1], sizeof *d->pend * (size_t)(d->n_pend - at - 1));
    d->n_pend--;
    return st;
}

/* True if the run already holds a dataset of that name (its op_index is in the name). */
bool cd_dumpw_row_name_taken(const run_rows *rr, int op_index, const char *name) {
    for (int i = rr->n - 1; i >= 0; i--)
        if (rr->rows[i].op_index == op_index && !strcmp(rr->rows[i].dataset, name)) return true;
    return false;
}

static char *dup_or_empty(const char *s, bool *oom) {
    char *r = cd_strdup(s ? s : "");
    if (!r) *oom = true;
    return r;
}

cd_status cd_dumpw_add_row(run_rows *rr, const char *dataset, const cd_tensor_rec *rec, const cd_value *v,
                           bool stats_only, const cd_tensor_stats *stats, cd_error *err) {
    if (rr->n == rr->cap) {
        int nc = rr->cap ? rr->cap * 2 : 256;
        tensor_row *nr = realloc(rr->rows, sizeof *nr * (size_t)nc);
        if (!nr) return cd_err(err, CD_E_NOMEM, "out of memory recording tensor '%s'", dataset);
        rr->rows = nr;
        rr->cap = nc;
    }
    char shp[CD_MAX_RANK * 21 + 1];
    size_t o = 0;
    shp[0] = 0;
    for (int i = 0; i < v->shape.rank; i++)
        o += (size_t)snprintf(shp + o, sizeof shp - o, "%s%lld", i ? "," : "", (long long)v->shape.d[i]);
    bool oom = false;
    tensor_row t = {
        .dataset = dup_or_empty(dataset, &oom),
        .op_type = dup_or_empty(rec->op_type, &oom),
        .layer = dup_or_empty(rec->layer, &oom),
        .tensor = dup_or_empty(rec->tensor, &oom),
        .dtype = dup_or_empty(cd_dtype_name(v->dtype), &oom),
        .shape = dup_or_empty(shp, &oom),
        .where = dup_or_empty(rec->where, &oom),
        .kernel = dup_or_empty(rec->kernel, &oom),
        .note = dup_or_empty(rec->note, &oom),
        .op_index = rec->op_index,
        .stats_only = stats_only ? 1 : 0,
        .count = stats ? stats->count : -1,
        .nan_count = stats ? stats->nan_count : 0,
        .inf_count = stats ? stats->inf_count : 0,
        .elapsed_us = rec->elapsed_us,
        .kernel_us = rec->kernel_us,
        .min = stats ? stats->min : NAN,
        .max = stats ? stats->max : NAN,
        .mean = stats ? stats->mean : NAN,
    };
    rr->rows[rr->n++] = t;
    if (oom) return cd_err(err, CD_E_NOMEM, "out of memory recording tensor '%s'", dataset);
    return CD_OK;
}
