/* HDF5 dump reader: runs, tensors in op order, values as float32, attributes, tables.
 * Dumps are untrusted input (they may come from another machine or be truncated): every
 * HDF5 failure becomes CD_E_MODEL with the path of the object that failed. */
#include <errno.h>
#include <hdf5.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include "store/dump.h"
#include "util/fp16.h"

/* Tensors handed back after a use (cd_dump_keep_f32), each taken whole by the next read of its
 * dataset: a judge reads a layer's tensors to compare them and again to check the layer
 * locally. Up to KEEP_BUDGET bytes; beyond it a tensor handed back is freed. */
#define KEEP_BUDGET ((size_t)256 << 20)
#define KEEP_RING 4
typedef struct kept_f32 {
    char *path;
    float *data;
    int64_t n;
    cd_shape shape;
} kept_f32;
typedef struct read_cache {
    kept_f32 *e;
    int n, cap;
    size_t bytes;
    /* the shapes of the last reads, for a tensor handed back without its shape */
    char last_path[KEEP_RING][512];
    cd_shape last_shape[KEEP_RING];
    int last_i;
} read_cache;

struct cd_dump_reader {
    hid_t file;
    char *path;
    int format_version;
    bool complete;
    int n_runs;
    char **runs;
    read_cache *cache; /* NULL: nothing kept */
};

static void cache_free(read_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        free(c->e[i].path);
        free(c->e[i].data);
    }
    free(c->e);
    free(c);
}

/* Takes the kept tensor of path, if any: true with *data owned by the caller. */
static bool cache_take(read_cache *c, const char *path, float **data, cd_shape *shape, int64_t *numel) {
    if (!c) return false;
    for (int i = 0; i < c->n; i++) {
        if (strcmp(c->e[i].path, path)) continue;
        kept_f32 k = c->e[i];
        c->e[i] = c->e[--c->n];
        c->bytes -= (size_t)k.n * sizeof(float);
        free(k.path);
        *data = k.data;
        if (shape) *shape = k.shape;
        if (numel) *numel = k.n;
        return true;
    }
    return false;
}

static void cache_note_shape(read_cache *c, const char *path, const cd_shape *s) {
    if (!c) return;
    snprintf(c->last_path[c->last_i], sizeof c->last_path[0], "%s", path);
    c->last_shape[c->last_i] = *s;
    c->last_i = (c->last_i + 1) % KEEP_RING;
}

void cd_dump_keep_f32(const cd_dump_reader *r, const char *run, const char *dataset, float *data, int64_t n) {
    read_cache *c = r ? r->cache : NULL;
    char path[512];
    snprintf(path, sizeof path, "/runs/%s/%s", run, dataset);
    int k = -1;
    for (int i = 0; c && i < KEEP_RING && k < 0; i++)
        if (!strcmp(c->last_path[i], path) && cd_shape_numel(&c->last_shape[i]) == n) k = i;
    size_t nb = n > 0 ? (size_t)n * sizeof(float) : 0;
    bool ok = c && data && k >= 0 && n > 0 && c->bytes + nb <= KEEP_BUDGET;
    for (int i = 0; ok && i < c->n; i++) ok = strcmp(c->e[i].path, path) != 0;
    if (ok && c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        kept_f32 *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (e) {
            c->e = e;
            c->cap = cap;
        } else {
            ok = false;
        }
    }
    char *p = ok ? strdup(path) : NULL;
    if (!p) {
        free(data);
        return;
    }
    c->e[c->n++] = (kept_f32){.path = p, .data = data, .n = n, .shape = c->last_shape[k]};
    c->bytes += nb;
}

bool cd_dump_reader_complete(const cd_dump_reader *r) { return r->complete; }
const char *cd_dump_reader_path(const cd_dump_reader *r) { return r->path; }
int cd_dump_reader_format_version(const cd_dump_reader *r) { return r->format_version; }
int cd_dump_n_runs(const cd_dump_reader *r) { return r->n_runs; }
const char *cd_dump_run_name(const cd_dump_reader *r, int i) { return i >= 0 && i < r->n_runs ? r->runs[i] : NULL; }
int cd_dump_find_run(const cd_dump_reader *r, const char *run) {
    for (int i = 0; i < r->n_runs; i++)
        if (!strcmp(r->runs[i], run)) return i;
    return -1;
}

bool cd_dump_has(const cd_dump_reader *r, const char *path) {
    if (!path || path[0] != '/') return false;
    if (!strcmp(path, "/")) return true;
    /* H5Lexists needs every parent to exist: check component by component */
    char buf[1024];
    size_t len = strlen(path);
    if (len >= sizeof buf) return false;
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char save = buf[i];
        buf[i] = 0;
        htri_t ex = H5Lexists(r->file, buf, H5P_DEFAULT);
        buf[i] = save;
        if (ex <= 0) {
            H5Eclear2(H5E_DEFAULT);
            return false;
        }
    }
    return true;
}

/* ---------------- attributes ---------------- */

static hid_t open_attr(const cd_dump_reader *r, const char *path, const char *name, cd_error *err) {
    if (!cd_dump_has(r, path)) {
        cd_err(err, CD_E_MODEL, "dump '%s' has no object '%s'", r->path, path);
        return -1;
    }
    htri_t ex = H5Aexists_by_name(r->file, path, name, H5P_DEFAULT);
    if (ex <= 0) {
        H5Eclear2(H5E_DEFAULT);
        cd_err(err, CD_E_MODEL, "dump '%s': '%s' lacks attribute '%s' (not a cldiff dump, or damaged)", r->path, path,
               name);
        return -1;
    }
    hid_t a = H5Aopen_by_name(r->file, path, name, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot open attribute '%s' of '%s'", r->path, name, path);
    return a;
}

cd_status cd_dump_attr_str(const cd_dump_reader *r, const char *path, const char *name, char *buf, size_t n,
                           cd_error *err) {
    if (n) buf[0] = 0;
    hid_t a = open_attr(r, path, name, err);
    if (a < 0) return err ? err->code : CD_E_MODEL;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    cd_status st = CD_OK;
    if (H5Tget_class(t) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) {
        st = cd_err(err, CD_E_MODEL, "dump '%s': attribute '%s' of '%s' is not a string", r->path, name, path);
    } else if (H5Tis_variable_str(t) != 0) {
        /* cldiff writes fixed-length strings; a variable-length one is read through HDF5's
         * global heap, which a crafted file turns into an out-of-bounds copy (HDF5 1.10). */
        st = cd_err(err, CD_E_MODEL,
                    "dump '%s': attribute '%s' of '%s' is a variable-length string; cldiff "
                    "dumps store fixed-length strings (not a cldiff dump, or written by another tool)",
                    r->path, name, path);
    } else {
        size_t sz = H5Tget_size(t);
        char *tmp = sz <= (1u << 20) ? malloc(sz + 1) : NULL;
        hid_t mt = H5Tcopy(t);
        if (!tmp)
            st = cd_err(err, CD_E_NOMEM, "out of memory");
        else if (H5Aread(a, mt, tmp) < 0)
            st =
                cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot read attribute '%s' of '%s'", r->path, name, path);
        else {
            tmp[sz] = 0;
            if (n) snprintf(buf, n, "%s", tmp);
        }
        H5Tclose(mt);
        free(tmp);
    }
    H5Sclose(sp);
    H5Tclose(t);
    H5Aclose(a);
    return st;
}

static cd_status attr_num(const cd_dump_reader *r, const char *path, const char *name, hid_t mtype, void *out,
                          cd_error *err) {
    hid_t a = open_attr(r, path, name, err);
    if (a < 0) return err ? err->code : CD_E_MODEL;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    H5T_class_t cls = H5Tget_class(t);
    cd_status st = CD_OK;
    if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Sget_simple_extent_npoints(sp) != 1)
        st = cd_err(err, CD_E_MODEL, "dump '%s': attribute '%s' of '%s' is not a number", r->path, name, path);
    else if (H5Aread(a, mtype, out) < 0)
        st = cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot read attribute '%s' of '%s'", r->path, name, path);
    H5Sclose(sp);
    H5Tclose(t);
    H5Aclose(a);
    return st;
}

cd_status cd_dump_attr_f64(const cd_dump_reader *r, const char *path, const char *name, double *out, cd_error *err) {
    return attr_num(r, path, name, H5T_NATIVE_DOUBLE, out, err);
}

cd_status cd_dump_attr_i64(const cd_dump_reader *r, const char *path, const char *name, int64_t *out, cd_error *err) {
    return attr_num(r, path, name, H5T_NATIVE_INT64, out, err);
}

/* ---------------- open / close ---------------- */

static herr_t collect_cb(hid_t g, const char *name, const H5L_info_t *info, void *ud) {
    (void)g;
    (void)info;
    cd_dump_reader *r = ud;
    char **nr = realloc(r->runs, sizeof(char *) * (size_t)(r->n_runs + 1));
    if (!nr) return -1;
    r->runs = nr;
    r->runs[r->n_runs] = cd_strdup(name);
    if (!r->runs[r->n_runs]) return -1;
    r->n_runs++;
    return 0;
}

void cd_dump_reader_close(cd_dump_reader *r) {
    if (!r) return;
    if (r->file >= 0) H5Fclose(r->file);
    cache_free(r->cache);
    for (int i = 0; i < r->n_runs; i++) free(r->runs[i]);
    free(r->runs);
    free(r->path);
    free(r);
}

cd_status cd_dump_open(const char *path, cd_dump_reader **out, cd_error *err) {
    *out = NULL;
    cd_dump_h5_quiet();
    if (access(path, R_OK) != 0)
        return cd_err(err, CD_E_USAGE, "cannot read dump '%s': no such file or no permission", path);
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return cd_err(err, CD_E_MODEL, "'%s' is not an HDF5 file (expected a cldiff dump)", path);
    }
    cd_dump_reader *r = cd_calloc(1, sizeof *r, err);
    if (!r) return CD_E_NOMEM;
    r->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    r->path = cd_strdup(path);
    r->cache = calloc(1, sizeof *r->cache); /* none: every read from the file */
    if (r->file < 0) {
        cd_status st = cd_dump_h5_error(err, CD_E_MODEL, "cannot open dump '%s' (damaged file?)", path);
        cd_dump_reader_close(r);
        return st;
    }
    int64_t fv = 0, complete = 0;
    cd_status st = cd_dump_attr_i64(r, "/", "format_version", &fv, err);
    if (st) {
        cd_err_prefix(err, "not a cldiff dump: ");
        cd_dump_reader_close(r);
        return CD_E_MODEL;
    }
    if (fv < 1 || fv > CD_DUMP_FORMAT_VERSION) {
        cd_dump_reader_close(r);
        return cd_err(err, CD_E_MODEL,
                      "dump '%s' has format_version %lld; this cldiff reads version %d (upgrade cldiff)", path,
                      (long long)fv, CD_DUMP_FORMAT_VERSION);
    }
    r->format_version = (int)fv;
    if (cd_dump_attr_i64(r, "/", "complete", &complete, err)) {
        cd_dump_reader_close(r);
        return CD_E_MODEL;
    }
    r->complete = complete != 0;
    if (cd_dump_has(r, "/runs")) {
        hsize_t idx = 0;
        if (H5Literate_by_name(r->file, "/runs", H5_INDEX_NAME, H5_ITER_INC, &idx, collect_cb, r, H5P_DEFAULT) < 0) {
            st = cd_dump_h5_error(err, CD_E_MODEL, "cannot list the runs of dump '%s'", path);
            cd_dump_reader_close(r);
            return st;
        }
    }
    *out = r;
    return CD_OK;
}

/* ---------------- tensors ---------------- */

typedef struct {
    const cd_dump_reader *r;
    const char *run;
    cd_dump_tensor_info *v;
    int n, cap;
    cd_error *err;
    cd_status st;
} list_ctx;

static cd_dtype dtype_from_name(const char *s) {
    for (int t = 0; t < CD_DTYPE_COUNT; t++)
        if (!strcmp(s, cd_dtype_name((cd_dtype)t))) return (cd_dtype)t;
    return CD_DTYPE_COUNT;
}

static cd_status read_shape_attr(const cd_dump_reader *r, const char *path, cd_shape *s, cd_error *err) {
    hid_t a = open_attr(r, path, "shape", err);
    if (a < 0) return err ? err->code : CD_E_MODEL;
    hid_t sp = H5Aget_space(a);
    cd_status st = CD_OK;
    s->rank = 0;
    if (H5Sget_simple_extent_type(sp) == H5S_SIMPLE) {
        hssize_t n = H5Sget_simple_extent_npoints(sp);
        if (n < 0 || n > CD_MAX_RANK)
            st = cd_err(err, CD_E_MODEL, "dump '%s': '%s' has a shape of %lld dims", r->path, path, (long long)n);
        else if (n > 0 && H5Aread(a, H5T_NATIVE_INT64, s->d) < 0)
            st = cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot read the shape of '%s'", r->path, path);
        else
            s->rank = (int)n;
    }
    H5Sclose(sp);
    H5Aclose(a);
    return st;
}

static cd_status tensor_info(const cd_dump_reader *r, const char *run, const char *name, cd_dump_tensor_info *ti,
                             cd_error *err) {
    char path[512], dt[32];
    memset(ti, 0, sizeof *ti);
    snprintf(ti->dataset, sizeof ti->dataset, "%s", name);
    snprintf(path, sizeof path, "/runs/%s/%s", run, name);
    int64_t v = 0;
    cd_status st;
    if ((st = cd_dump_attr_i64(r, path, "op_index", &v, err))) return st;
    ti->op_index = (int)v;
    if ((st = cd_dump_attr_str(r, path, "tensor", ti->tensor, sizeof ti->tensor, err))) return st;
    if ((st = cd_dump_attr_str(r, path, "op_type", ti->op_type, sizeof ti->op_type, err))) return st;
    if ((st = cd_dump_attr_str(r, path, "layer", ti->layer, sizeof ti->layer, err))) return st;
    if ((st = cd_dump_attr_str(r, path, "dtype", dt, sizeof dt, err))) return st;
    ti->dtype = dtype_from_name(dt);
    if (ti->dtype == CD_DTYPE_COUNT)
        return cd_err(err, CD_E_MODEL, "dump '%s': '%s' has unknown dtype '%s'", r->path, path, dt);
    if ((st = read_shape_attr(r, path, &ti->shape, err))) return st;
    ti->numel = cd_shape_numel(&ti->shape);
    if (ti->numel < 0) return cd_err(err, CD_E_MODEL, "dump '%s': '%s' has a bad shape", r->path, path);
    /* the remaining attributes are informative: absent ones keep their defaults */
    cd_error ignore;
    ti->kernel_us = -1;
    cd_dump_attr_f64(r, path, "elapsed_us", &ti->elapsed_us, &ignore);
    cd_dump_attr_f64(r, path, "kernel_us", &ti->kernel_us, &ignore);
    cd_dump_attr_str(r, path, "where", ti->where, sizeof ti->where, &ignore);
    cd_dump_attr_str(r, path, "kernel", ti->kernel, sizeof ti->kernel, &ignore);
    cd_dump_attr_str(r, path, "note", ti->note, sizeof ti->note, &ignore);
    if (cd_dump_attr_i64(r, path, "stats_only", &v, &ignore) == CD_OK) ti->stats_only = v != 0;
    if (cd_dump_attr_i64(r, path, "count", &ti->stats.count, &ignore) == CD_OK) {
        ti->has_stats = true;
        ti->stats.min = ti->stats.max = ti->stats.mean = NAN;
        cd_dump_attr_f64(r, path, "min", &ti->stats.min, &ignore);
        cd_dump_attr_f64(r, path, "max", &ti->stats.max, &ignore);
        cd_dump_attr_f64(r, path, "mean", &ti->stats.mean, &ignore);
        cd_dump_attr_i64(r, path, "nan_count", &ti->stats.nan_count, &ignore);
        cd_dump_attr_i64(r, path, "inf_count", &ti->stats.inf_count, &ignore);
    }
    return CD_OK;
}

static herr_t list_cb(hid_t g, const char *name, const H5L_info_t *info, void *ud) {
    (void)g;
    (void)info;
    list_ctx *c = ud;
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 64;
        cd_dump_tensor_info *nv = realloc(c->v, sizeof *nv * (size_t)nc);
        if (!nv) {
            c->st = cd_err(c->err, CD_E_NOMEM, "out of memory listing run '%s'", c->run);
            return -1;
        }
        c->v = nv;
        c->cap = nc;
    }
    c->st = tensor_info(c->r, c->run, name, &c->v[c->n], c->err);
    if (c->st) return -1;
    c->n++;
    return 0;
}

static int by_op(const void *a, const void *b) {
    const cd_dump_tensor_info *x = a, *y = b;
    if (x->op_index != y->op_index) return x->op_index < y->op_index ? -1 : 1;
    return strcmp(x->dataset, y->dataset);
}

/* Format 2: one row per dataset of /runs/<run> in the table /tensors/<run>. Every field is checked: the table
 * is as untrusted as the rest of the file. */
static cd_status parse_shape(const char *txt, cd_shape *s) {
    s->rank = 0;
    const char *p = txt;
    if (!*p) return CD_OK;
    for (;;) {
        if (s->rank == CD_MAX_RANK || *p < '0' || *p > '9') return CD_E_MODEL;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || v < 0) return CD_E_MODEL;
        s->d[s->rank++] = v;
        if (!*end) return CD_OK;
        if (*end != ',') return CD_E_MODEL;
        p = end + 1;
    }
}

enum {
    TC_DATASET,
    TC_OP_INDEX,
    TC_OP_TYPE,
    TC_LAYER,
    TC_TENSOR,
    TC_DTYPE,
    TC_SHAPE,
    TC_ELAPSED,
    TC_KERNEL_US,
    TC_WHERE,
    TC_KERNEL,
    TC_NOTE,
    TC_STATS_ONLY,
    TC_COUNT,
    TC_MIN,
    TC_MAX,
    TC_MEAN,
    TC_NAN,
    TC_INF,
    TC_N
};

static cd_status list_from_table(const cd_dump_reader *r, const char *run, cd_dump_tensor_info **out, int *n,
                                 cd_error *err) {
    char path[160];
    snprintf(path, sizeof path, "/tensors/%s", run);
    if (!cd_dump_has(r, path))
        return cd_err(err, CD_E_MODEL,
                      "dump '%s': run '%s' has no tensors table (%s): the run was cut short or the "
                      "file was not written by cldiff",
                      r->path, run, path);
    cd_column cols[TC_N] = {
        {"dataset", CD_COL_STR, NULL},    {"op_index", CD_COL_I64, NULL},   {"op_type", CD_COL_STR, NULL},
        {"layer", CD_COL_STR, NULL},      {"tensor", CD_COL_STR, NULL},     {"dtype", CD_COL_STR, NULL},
        {"shape", CD_COL_STR, NULL},      {"elapsed_us", CD_COL_F64, NULL}, {"kernel_us", CD_COL_F64, NULL},
        {"where", CD_COL_STR, NULL},      {"kernel", CD_COL_STR, NULL},     {"note", CD_COL_STR, NULL},
        {"stats_only", CD_COL_I64, NULL}, {"count", CD_COL_I64, NULL},      {"min", CD_COL_F64, NULL},
        {"max", CD_COL_F64, NULL},        {"mean", CD_COL_F64, NULL},       {"nan_count", CD_COL_I64, NULL},
        {"inf_count", CD_COL_I64, NULL},
    };
    int64_t rows = 0;
    cd_status st = cd_dump_read_table(r, path, cols, TC_N, &rows, err);
    if (st) return st;
    if (rows > INT32_MAX / 2) {
        cd_dump_table_free(cols, TC_N, rows);
        return cd_err(err, CD_E_MODEL, "dump '%s': %s has %lld rows", r->path, path, (long long)rows);
    }
    cd_dump_tensor_info *v = cd_calloc((size_t)(rows ? rows : 1), sizeof *v, err);
    if (!v) {
        cd_dump_table_free(cols, TC_N, rows);
        return CD_E_NOMEM;
    }
#define COL_S(c) (((char **)cols[c].data)[i])
#define COL_I(c) (((int64_t *)cols[c].data)[i])
#define COL_F(c) (((double *)cols[c].data)[i])
    for (int64_t i = 0; i < rows && !st; i++) {
        cd_dump_tensor_info *ti = &v[i];
        snprintf(ti->dataset, sizeof ti->dataset, "%s", COL_S(TC_DATASET));
        snprintf(ti->tensor, sizeof ti->tensor, "%s", COL_S(TC_TENSOR));
        snprintf(ti->op_type, sizeof ti->op_type, "%s", COL_S(TC_OP_TYPE));
        snprintf(ti->layer, sizeof ti->layer, "%s", COL_S(TC_LAYER));
        snprintf(ti->where, sizeof ti->where, "%s", COL_S(TC_WHERE));
        snprintf(ti->kernel, sizeof ti->kernel, "%s", COL_S(TC_KERNEL));
        snprintf(ti->note, sizeof ti->note, "%s", COL_S(TC_NOTE));
        int64_t oi = COL_I(TC_OP_INDEX);
        if (!ti->dataset[0] || strchr(ti->dataset, '/') || oi < 0 || oi > INT32_MAX) {
            st = cd_err(err, CD_E_MODEL, "dump '%s': row %lld of %s is damaged (dataset '%.80s', op_index %lld)",
                        r->path, (long long)i, path, ti->dataset, (long long)oi);
            break;
        }
        ti->op_index = (int)oi;
        ti->dtype = dtype_from_name(COL_S(TC_DTYPE));
        if (ti->dtype == CD_DTYPE_COUNT) {
            st = cd_err(err, CD_E_MODEL, "dump '%s': %s row %lld ('%s') has unknown dtype '%.40s'", r->path, path,
                        (long long)i, ti->dataset, COL_S(TC_DTYPE));
            break;
        }
        if (parse_shape(COL_S(TC_SHAPE), &ti->shape) || (ti->numel = cd_shape_numel(&ti->shape)) < 0) {
            st = cd_err(err, CD_E_MODEL, "dump '%s': %s row %lld ('%s') has a bad shape '%.80s'", r->path, path,
                        (long long)i, ti->dataset, COL_S(TC_SHAPE));
            break;
        }
        ti->elapsed_us = COL_F(TC_ELAPSED);
        ti->kernel_us = COL_F(TC_KERNEL_US);
        ti->stats_only = COL_I(TC_STATS_ONLY) != 0;
        ti->has_stats = COL_I(TC_COUNT) >= 0;
        if (ti->has_stats) {
            ti->stats.count = COL_I(TC_COUNT);
            ti->stats.min = COL_F(TC_MIN);
            ti->stats.max = COL_F(TC_MAX);
            ti->stats.mean = COL_F(TC_MEAN);
            ti->stats.nan_count = COL_I(TC_NAN);
            ti->stats.inf_count = COL_I(TC_INF);
        }
    }
#undef COL_S
#undef COL_I
#undef COL_F
    cd_dump_table_free(cols, TC_N, rows);
    if (st) {
        free(v);
        return st;
    }
    if (rows > 1) qsort(v, (size_t)rows, sizeof *v, by_op);
    *out = v;
    *n = (int)rows;
    return CD_OK;
}

cd_status cd_dump_list_tensors(const cd_dump_reader *r, const char *run, cd_dump_tensor_info **out, int *n,
                               cd_error *err) {
    *out = NULL;
    *n = 0;
    if (cd_dump_find_run(r, run) < 0) {
        char have[512] = "";
        size_t o = 0;
        for (int i = 0; i < r->n_runs && o < sizeof have - 64; i++)
            o += (size_t)snprintf(have + o, sizeof have - o, "%s%s", i ? ", " : "", r->runs[i]);
        return cd_err(err, CD_E_USAGE, "dump '%s' has no run '%s' (runs: %s)", r->path, run, r->n_runs ? have : "none");
    }
    if (r->format_version >= 2) return list_from_table(r, run, out, n, err);
    char path[160];
    snprintf(path, sizeof path, "/runs/%s", run);
    list_ctx c = {r, run, NULL, 0, 0, err, CD_OK};
    hsize_t idx = 0;
    herr_t h = H5Literate_by_name(r->file, path, H5_INDEX_NAME, H5_ITER_INC, &idx, list_cb, &c, H5P_DEFAULT);
    if (h < 0 || c.st) {
        cd_status st =
            c.st ? c.st : cd_dump_h5_error(err, CD_E_MODEL, "cannot list run '%s' of dump '%s'", run, r->path);
        H5Eclear2(H5E_DEFAULT);
        free(c.v);
        return st;
    }
    if (c.n > 1) qsort(c.v, (size_t)c.n, sizeof *c.v, by_op);
    *out = c.v;
    *n = c.n;
    return CD_OK;
}

/* Reads the dataset at path into float32 (half widened by cd_half_to_float, the project's
 * bit-exact conversion; other types converted by HDF5). */
/* Every half value as a float (256 KiB, built on first use): widening by lookup is several
 * times faster than the bit arithmetic of cd_half_to_float and gives the same floats. */
static float half_table[65536];
static pthread_once_t half_table_once = PTHREAD_ONCE_INIT;
static void half_table_init(void) {
    for (uint32_t i = 0; i < 65536; i++) half_table[i] = cd_half_to_float((uint16_t)i);
}

/* h may lie in the upper half of out's bytes (read in place): front to back, each half is read
 * before the float written at its index can reach it. */
static void widen_halves(const uint16_t *h, float *out, int64_t n) {
    pthread_once(&half_table_once, half_table_init);
    for (int64_t i = 0; i < n; i++) out[i] = half_table[h[i]];
}

/* The digest the writer stored on dataset ds ("" none: an older dump). */
static void stored_digest(hid_t ds, char *buf, size_t n) {
    buf[0] = 0;
    htri_t ex = H5Aexists(ds, CD_DUMP_DIGEST_ATTR);
    if (ex <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return;
    }
    hid_t a = H5Aopen(ds, CD_DUMP_DIGEST_ATTR, H5P_DEFAULT);
    if (a < 0) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(buf, n, "?");
        return;
    }
    hid_t t = H5Aget_type(a);
    size_t sz = H5Tget_size(t);
    char tmp[64] = "";
    if (H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 && sz < sizeof tmp && H5Aread(a, t, tmp) >= 0) {
        tmp[sz] = 0;
        snprintf(buf, n, "%s", tmp);
    } else {
        H5Eclear2(H5E_DEFAULT);
        snprintf(buf, n, "?");
    }
    H5Tclose(t);
    H5Aclose(a);
}

/* The stored bytes of ds against its digest: CD_E_MODEL naming the dataset when they differ. raw
 * (nb bytes) holds them already for float32 and half datasets; others are read raw here. */
static cd_status check_digest(const cd_dump_reader *r, const char *path, hid_t ds, hid_t t, const void *raw, size_t nb,
                              int64_t n, cd_error *err) {
    char want[64];
    stored_digest(ds, want, sizeof want);
    if (!want[0]) return CD_OK;
    void *own = NULL;
    if (!raw) {
        /* read in the type as stored (little-endian on every machine cldiff runs on): the bytes
         * written, for tensors of any dtype (half included) and tables alike */
        hid_t nt = H5Tcopy(t);
        nb = (size_t)n * H5Tget_size(nt);
        own = malloc(nb ? nb : 1);
        if (!own) {
            H5Tclose(nt);
            return cd_err(err, CD_E_NOMEM, "out of memory");
        }
        herr_t rr = H5Dread(ds, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, own);
        H5Tclose(nt);
        if (rr < 0) {
            free(own);
            return cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot read '%s' (damaged file?)", r->path, path);
        }
        raw = own;
    }
    char got[32];
    snprintf(got, sizeof got, "d64:%016llx", (unsigned long long)cd_dump_digest64(raw, nb));
    free(own);
    if (strcmp(got, want))
        return cd_err(err, CD_E_MODEL,
                      "dump '%s' is damaged: dataset '%s' does not match its checksum (stored %s, read %s); make "
                      "the dump again or restore it from a copy",
                      r->path, path, want, got);
    return CD_OK;
}

typedef struct verify_ctx {
    const cd_dump_reader *r;
    cd_error *err;
    cd_status st;
} verify_ctx;

static herr_t verify_cb(hid_t g, const char *name, const H5L_info_t *info, void *ud) {
    verify_ctx *v = ud;
    if (info->type != H5L_TYPE_HARD) return 0;
    H5O_info_t oi;
    if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t ds = H5Dopen2(g, name, H5P_DEFAULT);
    if (ds < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t t = H5Dget_type(ds), sp = H5Dget_space(ds);
    hssize_t n = H5Sget_simple_extent_type(sp) == H5S_NULL ? 0 : H5Sget_simple_extent_npoints(sp);
    double need = (double)n * (double)H5Tget_size(t), have = (double)H5Dget_storage_size(ds);
    char path[700];
    snprintf(path, sizeof path, "/%s", name);
    /* declared sizes beyond the file are the readers' message; only stored bytes are checked here */
    if (n > 0 && need <= have * 1100.0 && need < 16e9) v->st = check_digest(v->r, path, ds, t, NULL, 0, n, v->err);
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(ds);
    return v->st ? 1 : 0;
}

cd_status cd_dump_verify(const cd_dump_reader *r, cd_error *err) {
    verify_ctx v = {r, err, CD_OK};
    if (H5Lvisit(r->file, H5_INDEX_NAME, H5_ITER_INC, verify_cb, &v) < 0 && !v.st)
        return cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot walk its objects (damaged file?)", r->path);
    return v.st;
}

static cd_status read_f32(const cd_dump_reader *r, const char *path, float **data, cd_shape *shape, int64_t *numel,
                          cd_error *err) {
    *data = NULL;
    if (cache_take(r->cache, path, data, shape, numel)) return CD_OK; /* verified when first read */
    /* opened straight away (one walk of the path); only a failure asks, component by
     * component, whether the dataset is there at all */
    hid_t ds = H5Dopen2(r->file, path, H5P_DEFAULT);
    if (ds < 0) {
        H5Eclear2(H5E_DEFAULT);
        if (!cd_dump_has(r, path)) return cd_err(err, CD_E_MODEL, "dump '%s' has no dataset '%s'", r->path, path);
        ds = H5Dopen2(r->file, path, H5P_DEFAULT);
        if (ds < 0) return cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot open dataset '%s'", r->path, path);
    }
    hid_t sp = H5Dget_space(ds), t = H5Dget_type(ds);
    cd_status st = CD_OK;
    H5S_class_t cls = H5Sget_simple_extent_type(sp);
    cd_shape s = {0};
    if (cls == H5S_NULL) {
        st = cd_err(err, CD_E_USAGE, "dump '%s': '%s' holds statistics only (run was made with --dump stats)", r->path,
                    path);
    } else {
        int rank = H5Sget_simple_extent_ndims(sp);
        if (rank < 0 || rank > CD_MAX_RANK) {
            st = cd_err(err, CD_E_MODEL, "dump '%s': dataset '%s' has %d dimensions", r->path, path, rank);
        } else {
            hsize_t dims[CD_MAX_RANK];
            H5Sget_simple_extent_dims(sp, dims, NULL);
            s.rank = rank;
            for (int i = 0; i < rank; i++) s.d[i] = (int64_t)dims[i];
        }
    }
    H5T_class_t tc = H5Tget_class(t);
    if (!st && tc != H5T_FLOAT && tc != H5T_INTEGER)
        st = cd_err(err, CD_E_MODEL, "dump '%s': dataset '%s' is not numeric", r->path, path);
    int64_t n = st ? 0 : cd_shape_numel(&s);
    if (!st && n < 0) st = cd_err(err, CD_E_MODEL, "dump '%s': dataset '%s' is too large", r->path, path);
    if (!st && n > 0) {
        /* A damaged or hostile header can declare any extent: before allocating for it, check
         * that the file holds the bytes. Unfiltered data is stored whole (cldiff always writes
         * every dataset completely); deflate cannot expand more than ~1032:1. */
        size_t es = H5Tget_size(t);
        double need = (double)n * (double)(es ? es : 1), have = (double)H5Dget_storage_size(ds);
        int nf = 0;
        if (have < need) { /* the filters asked only where the stored bytes fall short */
            hid_t pl = H5Dget_create_plist(ds);
            nf = pl >= 0 ? H5Pget_nfilters(pl) : -1;
            if (pl >= 0) H5Pclose(pl);
        }
        if (nf < 0 || have * (nf > 0 ? 1100.0 : 1.0) < need)
            st = cd_err(err, CD_E_MODEL,
                        "dump '%s': dataset '%s' declares %lld elements but the file stores only %.0f "
                        "bytes of it (damaged or truncated dump)",
                        r->path, path, (long long)n, have);
    }
    float *buf = NULL;
    if (!st) {
        buf = cd_malloc((size_t)n * sizeof(float), err);
        if (!buf) st = CD_E_NOMEM;
    }
    if (!st && n > 0) {
        bool half = tc == H5T_FLOAT && H5Tget_size(t) == 2;
        if (half) {
            /* read half bits into the upper half of the buffer, widen in place front to back */
            hid_t mt = H5Tcopy(H5T_NATIVE_FLOAT);
            H5Tset_fields(mt, 15, 10, 5, 0, 10);
            H5Tset_precision(mt, 16);
            H5Tset_ebias(mt, 15);
            H5Tset_size(mt, 2);
            uint16_t *h = (uint16_t *)buf + n;
            if (H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, h) < 0)
                st = cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot read '%s' (damaged file?)", r->path, path);
            else if (!(st = check_digest(r, path, ds, t, h, (size_t)n * 2, n, err)))
                widen_halves(h, buf, n);
            H5Tclose(mt);
        } else if (H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
            st = cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot read '%s' (damaged file?)", r->path, path);
        } else {
            /* float32 as stored: the bytes read are the bytes written; other types read raw */
            bool f32 = tc == H5T_FLOAT && H5Tget_size(t) == 4 && H5Tget_order(t) == H5T_ORDER_LE;
            st = check_digest(r, path, ds, t, f32 ? buf : NULL, (size_t)n * 4, n, err);
        }
    }
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(ds);
    if (st) {
        free(buf);
        return st;
    }
    *data = buf;
    if (shape) *shape = s;
    if (numel) *numel = n;
    cache_note_shape(r->cache, path, &s);
    return CD_OK;
}

cd_status cd_dump_read_f32(const cd_dump_reader *r, const char *run, const char *dataset, float **data, int64_t *numel,
                           cd_error *err) {
    char path[512];
    snprintf(path, sizeof path, "/runs/%s/%s", run, dataset);
    return read_f32(r, path, data, NULL, numel, err);
}

cd_status cd_dump_read_path_f32(const cd_dump_reader *r, const char *path, float **data, cd_shape *shape,
                                cd_error *err) {
    return read_f32(r, path, data, shape, NULL, err);
}

cd_status cd_dump_read_input(const cd_dump_reader *r, const char *name, cd_value *out, cd_error *err) {
    char esc[512], path[540];
    memset(out, 0, sizeof *out);
    if (!cd_dump_escape(name, esc, sizeof esc)) return cd_err(err, CD_E_MODEL, "input name too long");
    snprintf(path, sizeof path, "/inputs/%s", esc);
    if (!cd_dump_has(r, path))
        return cd_err(err, CD_E_MODEL, "dump '%s' holds no input '%s' (%s)", r->path, name, path);
    float *d;
    cd_shape s;
    int64_t n;
    cd_status st = read_f32(r, path, &d, &s, &n, err);
    if (st) return st;
    out->dtype = CD_F32;
    out->shape = s;
    out->data = d;
    out->nbytes = (size_t)n * sizeof(float);
    out->owned = true;
    return CD_OK;
}

/* ---------------- tables ---------------- */

void cd_dump_table_free(cd_column *cols, int ncols, int64_t nrows) {
    for (int c = 0; c < ncols; c++) {
        if (cols[c].type == CD_COL_STR && cols[c].data) {
            char **s = (char **)cols[c].data;
            for (int64_t i = 0; i < nrows; i++) free(s[i]);
        }
        free((void *)cols[c].data);
        cols[c].data = NULL;
    }
}

cd_status cd_dump_read_table(const cd_dump_reader *r, const char *path, cd_column *cols, int ncols, int64_t *nrows,
                             cd_error *err) {
    *nrows = 0;
    for (int c = 0; c < ncols; c++) cols[c].data = NULL;
    if (!cd_dump_has(r, path)) return cd_err(err, CD_E_MODEL, "dump '%s' has no table '%s'", r->path, path);
    hid_t ds = H5Dopen2(r->file, path, H5P_DEFAULT);
    if (ds < 0) return cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot open table '%s'", r->path, path);
    hid_t ft = H5Dget_type(ds), sp = H5Dget_space(ds);
    cd_status st = CD_OK;
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    if (H5Tget_class(ft) != H5T_COMPOUND || H5Sget_simple_extent_ndims(sp) != 1 || n < 0)
        st = cd_err(err, CD_E_MODEL, "dump '%s': '%s' is not a table", r->path, path);
    if (!st && n > 0) {
        /* as for tensors: the declared rows must be in the file before we allocate for them */
        hid_t pl = H5Dget_create_plist(ds);
        int nf = pl >= 0 ? H5Pget_nfilters(pl) : -1;
        if (pl >= 0) H5Pclose(pl);
        double need = (double)n * (double)H5Tget_size(ft), have = (double)H5Dget_storage_size(ds);
        if (nf < 0 || have * (nf > 0 ? 1100.0 : 1.0) < need)
            st = cd_err(err, CD_E_MODEL,
                        "dump '%s': table '%s' declares %lld rows but the file stores only %.0f bytes "
                        "of it (damaged or truncated dump)",
                        r->path, path, (long long)n, have);
    }
    if (!st && n > 0) st = check_digest(r, path, ds, ft, NULL, 0, n, err);
    /* every asked column in one read through one memory compound: a read per column made
     * HDF5 convert the whole table each time, through a fresh 1 MiB conversion buffer (a
     * judge lists a run's tensors several times: 36 % of a small model's differential run,
     * docs/benchmarks.md "First runs") */
    size_t *off = cd_calloc((size_t)(ncols ? ncols : 1), sizeof *off, err);
    size_t *esz = cd_calloc((size_t)(ncols ? ncols : 1), sizeof *esz, err);
    hid_t mt = -1;
    size_t rec = 0;
    if (!off || !esz) st = CD_E_NOMEM;
    if (!st) {
        for (int c = 0; c < ncols; c++) {
            int idx = H5Tget_member_index(ft, cols[c].name);
            if (idx < 0) {
                H5Eclear2(H5E_DEFAULT);
                st = cd_err(err, CD_E_MODEL, "dump '%s': table '%s' has no column '%s'", r->path, path, cols[c].name);
                break;
            }
            esz[c] = 8;
            if (cols[c].type == CD_COL_STR) {
                hid_t mtype = H5Tget_member_type(ft, (unsigned)idx);
                if (H5Tget_class(mtype) != H5T_STRING || H5Tis_variable_str(mtype) > 0) {
                    H5Tclose(mtype);
                    st = cd_err(err, CD_E_MODEL, "dump '%s': column '%s' of '%s' is not a fixed string", r->path,
                                cols[c].name, path);
                    break;
                }
                esz[c] = H5Tget_size(mtype);
                H5Tclose(mtype);
            }
            off[c] = rec;
            rec += esz[c];
        }
    }
    if (!st) {
        mt = H5Tcreate(H5T_COMPOUND, rec ? rec : 1);
        for (int c = 0; c < ncols; c++) {
            hid_t m;
            if (cols[c].type == CD_COL_I64)
                m = H5Tcopy(H5T_NATIVE_INT64);
            else if (cols[c].type == CD_COL_F64)
                m = H5Tcopy(H5T_NATIVE_DOUBLE);
            else {
                hid_t mtype = H5Tget_member_type(ft, (unsigned)H5Tget_member_index(ft, cols[c].name));
                m = H5Tcopy(mtype);
                H5Tclose(mtype);
            }
            H5Tinsert(mt, cols[c].name, off[c], m);
            H5Tclose(m);
        }
    }
    unsigned char *raw = NULL;
    if (!st && !(raw = cd_calloc((size_t)(n ? n : 1), rec ? rec : 1, err))) st = CD_E_NOMEM;
    if (!st && n > 0) {
        /* a conversion buffer of the table's size (HDF5's default is 1 MiB, zeroed per read) */
        size_t fsz = H5Tget_size(ft), need = (size_t)n * (fsz > rec ? fsz : rec);
        hid_t dx = H5Pcreate(H5P_DATASET_XFER);
        if (dx >= 0) H5Pset_buffer(dx, need < (16u << 20) ? (need > 4096 ? need : 4096) : (16u << 20), NULL, NULL);
        if (H5Dread(ds, mt, H5S_ALL, H5S_ALL, dx >= 0 ? dx : H5P_DEFAULT, raw) < 0)
            st = cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot read table '%s'", r->path, path);
        if (dx >= 0) H5Pclose(dx);
    }
    for (int c = 0; !st && c < ncols; c++) {
        if (cols[c].type != CD_COL_STR) {
            unsigned char *v = cd_calloc((size_t)(n ? n : 1), 8, err);
            if (!v) {
                st = CD_E_NOMEM;
                break;
            }
            for (hssize_t i = 0; i < n; i++) memcpy(v + (size_t)i * 8, raw + (size_t)i * rec + off[c], 8);
            cols[c].data = v;
        } else {
            char **sv = cd_calloc((size_t)(n ? n : 1), sizeof(char *), err);
            if (!sv) {
                st = CD_E_NOMEM;
                break;
            }
            cols[c].data = sv;
            for (hssize_t i = 0; i < n; i++) {
                sv[i] = cd_malloc(esz[c] + 1, err);
                if (!sv[i]) {
                    st = CD_E_NOMEM;
                    break;
                }
                memcpy(sv[i], raw + (size_t)i * rec + off[c], esz[c]);
                sv[i][esz[c]] = 0;
            }
        }
    }
    free(raw);
    free(off);
    free(esz);
    if (mt >= 0) H5Tclose(mt);
    H5Sclose(sp);
    H5Tclose(ft);
    H5Dclose(ds);
    if (st) {
        cd_dump_table_free(cols, ncols, n > 0 ? n : 0);
        return st;
    }
    *nrows = n;
    return CD_OK;
}

/* ---------------- walking (for the isolated validation in dump_check.c) ---------------- */

typedef struct {
    char **v;
    int n;
    bool oom;
} name_list;

static herr_t name_cb(hid_t g, const char *name, const H5L_info_t *info, void *ud) {
    (void)g;
    (void)info;
    name_list *l = ud;
    char **nv = realloc(l->v, sizeof(char *) * (size_t)(l->n + 1));
    if (!nv || !(nv[l->n] = cd_strdup(name))) {
        if (nv) l->v = nv;
        l->oom = true;
        return -1;
    }
    l->v = nv;
    l->n++;
    return 0;
}

void cd_dump_names_free(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

cd_status cd_dump_list_group(const cd_dump_reader *r, const char *path, char ***names, int *n, cd_error *err) {
    *names = NULL;
    *n = 0;
    if (!cd_dump_has(r, path)) return cd_err(err, CD_E_MODEL, "dump '%s' has no group '%s'", r->path, path);
    name_list l = {NULL, 0, false};
    hsize_t idx = 0;
    if (H5Literate_by_name(r->file, path, H5_INDEX_NAME, H5_ITER_INC, &idx, name_cb, &l, H5P_DEFAULT) < 0) {
        cd_dump_names_free(l.v, l.n);
        if (l.oom) {
            H5Eclear2(H5E_DEFAULT);
            return cd_err(err, CD_E_NOMEM, "out of memory listing '%s'", path);
        }
        return cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot list group '%s'", r->path, path);
    }
    *names = l.v;
    *n = l.n;
    return CD_OK;
}

typedef struct {
    const cd_dump_reader *r;
    const char *path;
    cd_error *err;
    cd_status st;
} attr_walk;

static herr_t attr_walk_cb(hid_t loc, const char *name, const H5A_info_t *info, void *ud) {
    (void)info;
    attr_walk *w = ud;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t t = H5Aget_type(a), s = H5Aget_space(a);
    H5T_class_t cls = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    bool vlen = cls == H5T_STRING && H5Tis_variable_str(t) != 0;
    hssize_t np = s >= 0 ? H5Sget_simple_extent_npoints(s) : -1;
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Aclose(a);
    H5Eclear2(H5E_DEFAULT);
    char buf[256];
    double f;
    cd_error e;
    cd_status st = CD_OK;
    /* the readers cldiff uses: fixed strings and numbers (others it never reads) */
    if (cls == H5T_STRING && !vlen)
        st = cd_dump_attr_str(w->r, w->path, name, buf, sizeof buf, &e);
    else if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && np == 1)
        st = cd_dump_attr_f64(w->r, w->path, name, &f, &e);
    if (st && !w->st) {
        w->st = st;
        *w->err = e;
    }
    return 0;
}

/* Reads every fixed-string and scalar numeric attribute of the object at path; a failed
 * read is remembered (the first one is returned) and the walk goes on. */
cd_status cd_dump_read_all_attrs(const cd_dump_reader *r, const char *path, cd_error *err) {
    if (!cd_dump_has(r, path)) return cd_err(err, CD_E_MODEL, "dump '%s' has no object '%s'", r->path, path);
    cd_error local;
    attr_walk w = {r, path, err ? err : &local, CD_OK};
    hsize_t idx = 0;
    herr_t h = H5Aiterate_by_name(r->file, path, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_walk_cb, &w, H5P_DEFAULT);
    if (h < 0 && !w.st)
        return cd_dump_h5_error(err, CD_E_MODEL, "dump '%s': cannot list the attributes of '%s'", r->path, path);
    H5Eclear2(H5E_DEFAULT);
    return w.st;
}
