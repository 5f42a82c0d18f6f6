/* HDF5 dump writer (format version 2). See dump.h for the temp-file/rename contract and
 * docs/dump-format.md for the layout. */
#include <omp.h>
#include "store/dump.h"
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "util/fp16.h"

/* One row of /tensors/<run> (format 2): everything stored about a probed tensor
 * besides its values. Rows are kept in memory while the run is written and stored as one
 * table when the run ends or the dump is closed: per-dataset attributes cost HDF5 ~7 µs
 * each (20 of them were ~60% of the dump's time on small models). */
typedef struct {
    char *dataset, *op_type, *layer, *tensor, *dtype, *shape, *where, *kernel, *note;
    int64_t op_index, stats_only, count, nan_count, inf_count;
    double elapsed_us, kernel_us, min, max, mean;
} tensor_row;

typedef struct {
    char name[128];
    tensor_row *rows;
    int n, cap;
} run_rows;

struct cd_dump {
    hid_t file;
    run_rows *pend;           /* runs whose tensors table is not written yet */
    int n_pend;
    hid_t gcpl, dcpl_plain;   /* creation properties without modification times */
    char *path, *tmp;
    bool append;
    char run_name[128];       /* cached open run group */
    hid_t run;
    int deflate;              /* 0 = uncompressed (contiguous), else deflate level of chunks */
    hid_t ftype[CD_DTYPE_COUNT], mtype[CD_DTYPE_COUNT]; /* file/memory types per dtype, made once */
};

static run_rows *find_rows(cd_dump *d, const char *run, bool create);
static cd_status flush_run(cd_dump *d, run_rows *rr, cd_error *err);

/* ---------------- HDF5 error capture ---------------- */

/* Silences HDF5's error printing (errors become cd_error messages) and stops its atexit
 * shutdown: after a failed flush (disk full) H5Fclose fails and leaves the file open inside
 * HDF5, whose exit-time close then crashes in H5F__close_cb. Our files are closed (or
 * discarded) explicitly; nothing needs HDF5's exit handler. */
void cd_dump_h5_quiet(void) {
    static int once;
    if (!once) { once = 1; H5dont_atexit(); }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

typedef struct { char desc[600]; int n; } h5_walk;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *ud) {
    h5_walk *w = ud;
    char minor[160] = "";
    if (H5Eget_msg(e->min_num, NULL, minor, sizeof minor) < 0) minor[0] = 0;
    /* walking downward, the last entry is the innermost and most specific one */
    snprintf(w->desc, sizeof w->desc, "%s%s%s", e->desc ? e->desc : "", minor[0] ? " / " : "", minor);
    w->n = (int)n + 1;
    return 0;
}

cd_status cd_dump_h5_error(cd_error *err, cd_status code, const char *fmt, ...) {
    char head[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    h5_walk w = {"", 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, &w);
    H5Eclear2(H5E_DEFAULT);
    if (w.n) return cd_err(err, code, "%s (HDF5: %s)", head, w.desc);
    return cd_err(err, code, "%s", head);
}

/* ---------------- escaping ---------------- */

bool cd_dump_escape(const char *name, char *out, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        bool keep = *p >= 0x21 && *p <= 0x7e && *p != '/' && *p != '%';
        size_t need = keep ? 1 : 3;
        if (o + need >= n) { if (n) out[n - 1 > o ? o : n - 1] = 0; return false; }
        if (keep) out[o++] = (char)*p;
        else { out[o++] = '%'; out[o++] = hex[*p >> 4]; out[o++] = hex[*p & 15]; }
    }
    if (o >= n) return false;
    out[o] = 0;
    return true;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

void cd_dump_unescape(const char *name, char *out, size_t n) {
    size_t o = 0;
    if (!n) return;
    for (const char *p = name; *p && o + 1 < n; p++) {
        int h, l;
        if (*p == '%' && (h = hexval(p[1])) >= 0 && (l = hexval(p[2])) >= 0) {
            out[o++] = (char)(h * 16 + l);
            p += 2;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

/* ---------------- attributes ---------------- */

/* String attributes are fixed-length (exactly the value plus its NUL): reading a
 * variable-length string goes through HDF5's global heap, where a crafted file makes
 * HDF5 1.10 copy out of bounds (tests/fuzz/regressions/dump/hdf5-vlen-attr-huge-copy), so
 * the reader refuses variable-length strings and the writer never makes them. */
static hid_t str_type(size_t len) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, len + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

/* Deletes an attribute of that name if present so the write replaces it. */
static herr_t drop_attr(hid_t obj, const char *name) {
    htri_t ex = H5Aexists(obj, name);
    if (ex < 0) return -1;
    return ex > 0 ? H5Adelete(obj, name) : 0;
}

/* True while attributes go to an object this thread has just created (a tensor or input
 * dataset): nothing to replace, so the existence check (a walk over the object's
 * attributes, the largest per-attribute cost) is skipped. */
static _Thread_local bool attr_fresh;

static herr_t attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, hid_t space, const void *buf) {
    if (!attr_fresh && drop_attr(obj, name) < 0) return -1;
    hid_t a = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) return -1;
    herr_t r = buf ? H5Awrite(a, mtype, buf) : 0;
    if (H5Aclose(a) < 0) r = -1;
    return r;
}

static herr_t a_str(hid_t obj, const char *name, const char *v) {
    const char *p = v ? v : "";
    hid_t t = str_type(strlen(p)), s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, t, t, s, p);
    H5Sclose(s);
    H5Tclose(t);
    return r;
}

static herr_t a_i64(hid_t obj, const char *name, int64_t v) {
    hid_t s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, s, &v);
    H5Sclose(s);
    return r;
}

static herr_t a_u64(hid_t obj, const char *name, uint64_t v) {
    hid_t s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, s, &v);
    H5Sclose(s);
    return r;
}

static herr_t a_f64(hid_t obj, const char *name, double v) {
    hid_t s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, s, &v);
    H5Sclose(s);
    return r;
}

/* 1-D int64 array; an empty array (rank-0 shape) uses a null dataspace. */
static herr_t a_i64s(hid_t obj, const char *name, const int64_t *v, int n) {
    hsize_t dim = (hsize_t)n;
    hid_t s = n > 0 ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_NULL);
    herr_t r = attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, s, n > 0 ? v : NULL);
    H5Sclose(s);
    return r;
}

/* ---------------- groups ---------------- */

static bool valid_path(const char *path) { return path && path[0] == '/'; }

static cd_status make_groups(cd_dump *d, const char *path, cd_error *err) {
    if (!valid_path(path)) return cd_err(err, CD_E_INTERNAL, "dump path '%s' must be absolute", path ? path : "");
    char buf[1024];
    size_t len = strlen(path);
    if (len >= sizeof buf) return cd_err(err, CD_E_INTERNAL, "dump path too long: %.100s...", path);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char save = buf[i];
        buf[i] = 0;
        if (i > 1 && buf[i - 1] != '/') {
            htri_t ex = H5Lexists(d->file, buf, H5P_DEFAULT);
            if (ex < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot look up '%s' in dump '%s'", buf, d->path);
            if (!ex) {
                hid_t g = H5Gcreate2(d->file, buf, H5P_DEFAULT, d->gcpl, H5P_DEFAULT);
                if (g < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot create group '%s' in dump '%s'", buf, d->path);
                H5Gclose(g);
            }
        }
        buf[i] = save;
    }
    return CD_OK;
}

cd_status cd_dump_make_group(cd_dump *d, const char *path, cd_error *err) { return make_groups(d, path, err); }

static cd_status attr_status(cd_dump *d, herr_t r, const char *path, const char *name, cd_error *err) {
    if (r < 0)
        return cd_dump_h5_error(err, CD_E_IO, "cannot write attribute '%s' on '%s' in dump '%s'", name, path, d->tmp);
    return CD_OK;
}

static hid_t open_obj(cd_dump *d, const char *path, cd_error *err) {
    hid_t o = H5Oopen(d->file, path, H5P_DEFAULT);
    if (o < 0) cd_dump_h5_error(err, CD_E_INTERNAL, "no object '%s' in dump '%s'", path, d->path);
    return o;
}

cd_status cd_dump_set_attr_str(cd_dump *d, const char *path, const char *name, const char *value, cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = a_str(o, name, value);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}

cd_status cd_dump_set_attr_i64(cd_dump *d, const char *path, const char *name, int64_t value, cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = a_i64(o, name, value);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}

cd_status cd_dump_set_attr_f64(cd_dump *d, const char *path, const char *name, double value, cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = a_f64(o, name, value);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}

cd_status cd_dump_set_attr_i64s(cd_dump *d, const char *path, const char *name, const int64_t *v, int n,
                                cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = a_i64s(o, name, v, n);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}

/* ---------------- open / close ---------------- */

static void utc_now(char *buf, size_t n) {
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cd_dump *dump_alloc(const char *path, cd_error *err) {
    cd_dump *d = cd_calloc(1, sizeof *d, err);
    if (!d) return NULL;
    d->file = d->gcpl = d->dcpl_plain = d->run = -1;
    d->deflate = 0;
    for (int i = 0; i < CD_DTYPE_COUNT; i++) d->ftype[i] = d->mtype[i] = -1;
    d->path = cd_strdup(path);
    size_t n = strlen(path) + 32;
    d->tmp = malloc(n);
    if (!d->path || !d->tmp) {
        free(d->path); free(d->tmp); free(d);
        cd_err(err, CD_E_NOMEM, "out of memory opening dump '%s'", path);
        return NULL;
    }
    snprintf(d->tmp, n, "%s.tmp-%ld", path, (long)getpid());
    /* no modification times in object headers: identical runs give identical objects */
    d->gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_obj_track_times(d->gcpl, 0);
    d->dcpl_plain = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(d->dcpl_plain, 0);
    H5Pset_fill_time(d->dcpl_plain, H5D_FILL_TIME_NEVER); /* every dataset is written whole */
    return d;
}

static void rows_free(run_rows *rr) {
    for (int i = 0; i < rr->n; i++) {
        tensor_row *t = &rr->rows[i];
        free(t->dataset); free(t->op_type); free(t->layer); free(t->tensor); free(t->dtype);
        free(t->shape); free(t->where); free(t->kernel); free(t->note);
    }
    free(rr->rows);
    rr->rows = NULL;
    rr->n = rr->cap = 0;
}

static void dump_free(cd_dump *d) {
    if (!d) return;
    for (int i = 0; i < d->n_pend; i++) rows_free(&d->pend[i]);
    free(d->pend);
    if (d->run >= 0) H5Gclose(d->run);
    if (d->gcpl >= 0) H5Pclose(d->gcpl);
    if (d->dcpl_plain >= 0) H5Pclose(d->dcpl_plain);
    for (int i = 0; i < CD_DTYPE_COUNT; i++) {
        if (d->ftype[i] >= 0) H5Tclose(d->ftype[i]);
        if (d->mtype[i] >= 0) H5Tclose(d->mtype[i]);
    }
    free(d->path);
    free(d->tmp);
    free(d);
}

const char *cd_dump_path(const cd_dump *d) { return d->path; }
const char *cd_dump_tmp_path(const cd_dump *d) { return d->tmp; }

cd_status cd_dump_create(const char *path, const cd_dump_meta *meta, cd_dump **out, cd_error *err) {
    *out = NULL;
    cd_dump_h5_quiet();
    if (!path || !*path) return cd_err(err, CD_E_USAGE, "empty dump path; give --out FILE.h5");
    cd_dump *d = dump_alloc(path, err);
    if (!d) return CD_E_NOMEM;
    if (meta && meta->deflate) d->deflate = meta->deflate < 0 ? 0 : (meta->deflate > 9 ? 9 : meta->deflate);
    /* Create the file ourselves first: errno gives a clearer message than HDF5's stack.
     * Then HDF5 creates it anew with O_EXCL, never with O_TRUNC: on ext4 a file truncated
     * to 0 and rewritten is flushed to disk when closed ("auto_da_alloc"), which made
     * closing a 160 MB dump take 0.17 s of the run (measured with strace). */
    unlink(d->tmp); /* a stale temp file of an earlier process with this pid */
    int fd = open(d->tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        int e = errno;
        cd_err(err, CD_E_IO, "cannot create dump '%s' (temporary file '%s'): %s; choose a writable --out location",
               path, d->tmp, strerror(e));
        dump_free(d);
        return CD_E_IO;
    }
    close(fd);
    unlink(d->tmp);
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_obj_track_times(fcpl, 0);
    d->file = H5Fcreate(d->tmp, H5F_ACC_EXCL, fcpl, H5P_DEFAULT);
    H5Pclose(fcpl);
    if (d->file < 0) {
        cd_dump_h5_error(err, CD_E_IO, "cannot create HDF5 dump '%s'", d->tmp);
        unlink(d->tmp);
        dump_free(d);
        return CD_E_IO;
    }
    char created[32];
    utc_now(created, sizeof created);
    cd_dump_meta m = meta ? *meta : (cd_dump_meta){0};
    hid_t root = d->file;
    herr_t r = 0;
    r |= a_str(root, "cldiff_version", CLDIFF_VERSION);
    r |= a_i64(root, "format_version", CD_DUMP_FORMAT_VERSION);
    r |= a_str(root, "created", created);
    r |= a_str(root, "command_line", m.command_line);
    r |= a_str(root, "model_path", m.model_path);
    r |= a_str(root, "model_sha256", m.model_sha256);
    r |= a_str(root, "model_format", m.model_format);
    r |= a_str(root, "precision", m.precision);
    r |= a_u64(root, "seed", m.seed);
    r |= a_i64(root, "complete", 0);
    cd_status st = r < 0 ? cd_dump_h5_error(err, CD_E_IO, "cannot write root attributes of dump '%s'", d->tmp) : CD_OK;
    if (!st) st = make_groups(d, "/runs", err);
    if (st) { cd_dump_discard(d); return st; }
    *out = d;
    return CD_OK;
}

cd_status cd_dump_open_append(const char *path, cd_dump **out, cd_error *err) {
    *out = NULL;
    cd_dump_h5_quiet();
    if (access(path, F_OK) != 0) return cd_err(err, CD_E_USAGE, "dump '%s' does not exist", path);
    if (access(path, W_OK) != 0)
        return cd_err(err, CD_E_IO, "cannot write to dump '%s': %s", path, strerror(errno));
    cd_dump *d = dump_alloc(path, err);
    if (!d) return CD_E_NOMEM;
    d->append = true;
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        dump_free(d);
        return cd_err(err, CD_E_MODEL, "'%s' is not an HDF5 file (expected a cldiff dump)", path);
    }
    d->file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (d->file < 0) {
        cd_dump_h5_error(err, CD_E_IO, "cannot open dump '%s' for writing", path);
        dump_free(d);
        return CD_E_IO;
    }
    *out = d;
    return CD_OK;
}

static void close_run(cd_dump *d) {
    if (d->run >= 0) H5Gclose(d->run);
    d->run = -1;
    d->run_name[0] = 0;
}

void cd_dump_discard(cd_dump *d) {
    if (!d) return;
    close_run(d);
    if (d->file >= 0) H5Fclose(d->file);
    H5Eclear2(H5E_DEFAULT);
    if (!d->append) unlink(d->tmp);
    dump_free(d);
}

cd_status cd_dump_close(cd_dump *d, bool complete, cd_error *err) {
    if (!d) return CD_OK;
    cd_status st = CD_OK;
    while (d->n_pend > 0 && !st) st = flush_run(d, &d->pend[0], err);
    close_run(d);
    if (!d->append && a_i64(d->file, "complete", complete ? 1 : 0) < 0)
        st = cd_dump_h5_error(err, CD_E_IO, "cannot mark dump '%s' complete", d->tmp);
    if (!st && H5Fflush(d->file, H5F_SCOPE_GLOBAL) < 0)
        st = cd_dump_h5_error(err, CD_E_IO, "cannot write dump '%s' (disk full?)", d->append ? d->path : d->tmp);
    if (H5Fclose(d->file) < 0 && !st)
        st = cd_dump_h5_error(err, CD_E_IO, "cannot close dump '%s' (disk full?)", d->append ? d->path : d->tmp);
    d->file = -1;
    if (!d->append) {
        if (st) {
            /* a file that failed to flush is not trustworthy: never leave it under any name */
            unlink(d->tmp);
        } else if (rename(d->tmp, d->path) != 0) {
            int e = errno;
            st = cd_err(err, CD_E_IO, "cannot rename dump '%s' to '%s': %s", d->tmp, d->path, strerror(e));
            unlink(d->tmp);
        }
    }
    dump_free(d);
    return st;
}

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
    if (!valid_path(path) || !slash[1]) return cd_err(err, CD_E_INTERNAL, "bad table path '%s'", path);
    if (slash != path) {
        char parent[1024];
        size_t pl = (size_t)(slash - path);
        if (pl >= sizeof parent) return cd_err(err, CD_E_INTERNAL, "table path too long");
        memcpy(parent, path, pl);
        parent[pl] = 0;
        cd_status st = make_groups(d, parent, err);
        if (st) return st;
    }
    size_t *off = cd_calloc((size_t)ncols, sizeof *off, err);
    size_t *len = cd_calloc((size_t)ncols, sizeof *len, err);
    if (!off || !len) { free(off); free(len); return CD_E_NOMEM; }
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
                   : cols[c].type == CD_COL_F64 ? H5Tcopy(H5T_NATIVE_DOUBLE) : fixed_str_type(len[c]);
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
            if (cols[c].type == CD_COL_I64) memcpy(r + off[c], (const int64_t *)cols[c].data + i, 8);
            else if (cols[c].type == CD_COL_F64) memcpy(r + off[c], (const double *)cols[c].data + i, 8);
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
            if (k < 0) txt = slots[i].name ? slots[i].name : "";
            else if (slots[i].ids[k] >= 0 && slots[i].ids[k] < g->n_tensors) txt = g->tensors[slots[i].ids[k]].name;
            const char *sep = k < 0 ? (i ? ";" : "") : (k == 0 ? "=" : ",");
            size_t need = len + strlen(sep) + strlen(txt) + 1;
            if (need > cap) {
                while (cap < need) cap *= 2;
                char *ns = realloc(s, cap);
                if (!ns) { free(s); return NULL; }
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
    for (int c = 0; c < 8; c++) if (!cols_s[c]) st = CD_E_NOMEM;
    if (!idx || !owned) st = CD_E_NOMEM;
    for (int i = 0; !st && i < n; i++) {
        const cd_op *op = &g->ops[i];
        idx[i] = i;
        cols_s[0][i] = op->name;
        cols_s[1][i] = op->type;
        owned[2 * i] = slots_str(g, op->in, op->n_in);
        owned[2 * i + 1] = slots_str(g, op->out, op->n_out);
        if (!owned[2 * i] || !owned[2 * i + 1]) { st = cd_err(err, CD_E_NOMEM, "out of memory"); break; }
        cols_s[2][i] = owned[2 * i];
        cols_s[3][i] = owned[2 * i + 1];
        cols_s[4][i] = op->kernel.present ? op->kernel.alias : "";
        cols_s[5][i] = op->kernel.present ? cd_target_name(op->kernel.target) : "";
        cols_s[6][i] = op->kernel.present ? cd_precision_name(op->kernel.precision) : "";
        cols_s[7][i] = op->kernel.present ? cd_layout_name(op->kernel.layout) : "";
    }
    if (!st) {
        cd_column cols[9] = {
            {"index", CD_COL_I64, idx},           {"name", CD_COL_STR, cols_s[0]},
            {"type", CD_COL_STR, cols_s[1]},      {"inputs", CD_COL_STR, cols_s[2]},
            {"outputs", CD_COL_STR, cols_s[3]},   {"kernel_alias", CD_COL_STR, cols_s[4]},
            {"kernel_target", CD_COL_STR, cols_s[5]}, {"kernel_precision", CD_COL_STR, cols_s[6]},
            {"kernel_layout", CD_COL_STR, cols_s[7]}};
        st = cd_dump_write_table(d, "/model/ops", cols, 9, n, err);
    }
    if (!st) {
        hid_t m = H5Gopen2(d->file, "/model", H5P_DEFAULT);
        herr_t r = m < 0 ? -1 : 0;
        if (m >= 0) {
            r |= a_i64(m, "meta_version", g->meta_version);
            r |= a_str(m, "opt_version", g->opt_version);
            r |= a_i64(m, "n_ops", g->n_ops);
            H5Gclose(m);
        }
        if (r < 0) st = cd_dump_h5_error(err, CD_E_IO, "cannot write /model attributes to dump '%s'", d->tmp);
    }
    if (owned) for (int i = 0; i < 2 * n; i++) free(owned[i]);
    free(owned);
    for (int c = 0; c < 8; c++) free(cols_s[c]);
    free(idx);
    return st;
}

/* ---------------- datasets ---------------- */

/* IEEE binary16 in the given byte order (platform-notes.md recipe). */
static hid_t half_type(hid_t base) {
    hid_t t = H5Tcopy(base);
    H5Tset_fields(t, 15, 10, 5, 0, 10);
    H5Tset_precision(t, 16);
    H5Tset_ebias(t, 15);
    H5Tset_size(t, 2);
    return t;
}

/* File and memory types for a dtype; both must be closed by the caller. */
static bool dtype_types(cd_dtype dt, hid_t *ftype, hid_t *mtype) {
    switch (dt) {
    case CD_F32: *ftype = H5Tcopy(H5T_IEEE_F32LE); *mtype = H5Tcopy(H5T_NATIVE_FLOAT); return true;
    case CD_F16: *ftype = half_type(H5T_IEEE_F32LE); *mtype = half_type(H5T_NATIVE_FLOAT); return true;
    case CD_F64: *ftype = H5Tcopy(H5T_IEEE_F64LE); *mtype = H5Tcopy(H5T_NATIVE_DOUBLE); return true;
    case CD_I8: *ftype = H5Tcopy(H5T_STD_I8LE); *mtype = H5Tcopy(H5T_NATIVE_INT8); return true;
    case CD_I16: *ftype = H5Tcopy(H5T_STD_I16LE); *mtype = H5Tcopy(H5T_NATIVE_INT16); return true;
    case CD_I32: *ftype = H5Tcopy(H5T_STD_I32LE); *mtype = H5Tcopy(H5T_NATIVE_INT32); return true;
    case CD_I64: *ftype = H5Tcopy(H5T_STD_I64LE); *mtype = H5Tcopy(H5T_NATIVE_INT64); return true;
    case CD_U8: case CD_BOOL: *ftype = H5Tcopy(H5T_STD_U8LE); *mtype = H5Tcopy(H5T_NATIVE_UINT8); return true;
    default: return false;
    }
}

/* Chunks of about 256 K elements split along the outer dimensions: large enough for fast
 * deflate, small enough for HDF5's 1 MiB default chunk cache when reading back. */
static void chunk_dims(const cd_shape *s, hsize_t *c) {
    const int64_t target = 256 * 1024;
    int64_t rest = 1;
    for (int i = 0; i < s->rank; i++) rest *= s->d[i] > 0 ? s->d[i] : 1;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->d[i] > 0 ? s->d[i] : 1;
        rest /= d;
        if (rest >= target) c[i] = 1;
        else {
            int64_t k = target / rest;
            c[i] = (hsize_t)(k < d ? k : d);
            for (int j = i + 1; j < s->rank; j++) c[j] = (hsize_t)(s->d[j] > 0 ? s->d[j] : 1);
            return;
        }
    }
}

/* Creates and writes a dataset holding v under loc/name (stats_only: null dataspace). */
static hid_t write_values(cd_dump *d, hid_t loc, const char *name, const cd_value *v, bool stats_only,
                          cd_error *err) {
    /* the dtype's types are made on first use and kept (copying them per tensor was a
     * measurable part of storing a small one) */
    if ((unsigned)v->dtype >= CD_DTYPE_COUNT ||
        (d->ftype[v->dtype] < 0 && !dtype_types(v->dtype, &d->ftype[v->dtype], &d->mtype[v->dtype]))) {
        cd_err(err, CD_E_INTERNAL, "cannot store dtype %d", (int)v->dtype);
        return -1;
    }
    const hid_t ft = d->ftype[v->dtype], mt = d->mtype[v->dtype];
    if (ft < 0 || mt < 0) {
        cd_err(err, CD_E_INTERNAL, "cannot make the HDF5 types of dtype %s", cd_dtype_name(v->dtype));
        return -1;
    }
    int64_t numel = cd_shape_numel(&v->shape);
    size_t nb = numel >= 0 ? (size_t)numel * cd_dtype_size(v->dtype) : 0;
    if (numel < 0 || (!stats_only && (nb > v->nbytes || (nb && !v->data)))) {
        char sb[160];
        cd_err(err, CD_E_INTERNAL, "value for '%s' (shape %s) holds %zu bytes, needs %zu", name,
               cd_shape_str(&v->shape, sb, sizeof sb), v->nbytes, nb);
        return -1;
    }
    hid_t sp;
    hsize_t dims[CD_MAX_RANK];
    for (int i = 0; i < v->shape.rank; i++) dims[i] = (hsize_t)v->shape.d[i];
    if (stats_only) sp = H5Screate(H5S_NULL);
    else if (v->shape.rank == 0) sp = H5Screate(H5S_SCALAR);
    else sp = H5Screate_simple(v->shape.rank, dims, NULL);
    hid_t dcpl = d->dcpl_plain;
    bool own_dcpl = false;
    /* Uncompressed (the default): contiguous, written straight from the caller's buffer with
     * no fill pass. Compressed (--compress N): chunked, shuffle + deflate; tiny tensors stay
     * contiguous, where compression costs more than it saves. */
    if (!stats_only && d->deflate > 0 && v->shape.rank > 0 && nb >= 4096 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
        hsize_t ch[CD_MAX_RANK];
        chunk_dims(&v->shape, ch);
        dcpl = H5Pcopy(d->dcpl_plain);
        own_dcpl = true;
        H5Pset_chunk(dcpl, v->shape.rank, ch);
        H5Pset_shuffle(dcpl);                       /* byte planes of floats compress much better */
        H5Pset_deflate(dcpl, (unsigned)d->deflate); /* level 1 gives most of the gain */
    }
    hid_t ds = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds >= 0 && !stats_only && nb > 0 && H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, v->data) < 0) {
        H5Dclose(ds);
        ds = -1;
    }
    if (ds < 0) cd_dump_h5_error(err, CD_E_IO, "cannot write dataset '%s' to dump '%s' (disk full?)", name, d->tmp);
    if (own_dcpl) H5Pclose(dcpl);
    H5Sclose(sp);
    return ds;
}

static herr_t shape_attrs(hid_t o, const cd_value *v) {
    herr_t r = a_i64s(o, "shape", v->shape.d, v->shape.rank);
    r |= a_str(o, "dtype", cd_dtype_name(v->dtype));
    return r;
}

cd_status cd_dump_write_input(cd_dump *d, const char *name, const cd_value *v, const char *source,
                              cd_error *err) {
    cd_status st = make_groups(d, "/inputs", err);
    if (st) return st;
    char esc[512];
    if (!cd_dump_escape(name, esc, sizeof esc))
        return cd_err(err, CD_E_MODEL, "input name too long to store: '%.80s...'", name);
    hid_t g = H5Gopen2(d->file, "/inputs", H5P_DEFAULT);
    if (g < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot open /inputs in dump '%s'", d->tmp);
    if (H5Lexists(g, esc, H5P_DEFAULT) > 0) H5Ldelete(g, esc, H5P_DEFAULT);
    hid_t ds = write_values(d, g, esc, v, false, err);
    if (ds < 0) { H5Gclose(g); return err ? err->code : CD_E_IO; }
    attr_fresh = true;
    herr_t r = a_str(ds, "tensor", name);
    r |= shape_attrs(ds, v);
    r |= a_str(ds, "source", source);
    attr_fresh = false;
    H5Dclose(ds);
    H5Gclose(g);
    if (r < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot write attributes of input '%s'", name);
    return CD_OK;
}

static bool valid_run_name(const char *run) {
    if (!run || !*run || strlen(run) >= 100) return false;
    for (const char *p = run; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '-' || *p == '.'))
            return false;
    return strcmp(run, ".") && strcmp(run, "..");
}

static cd_status open_run(cd_dump *d, const char *run, cd_error *err) {
    if (d->run >= 0 && !strcmp(d->run_name, run)) return CD_OK;
    close_run(d);
    if (!valid_run_name(run))
        return cd_err(err, CD_E_INTERNAL, "bad run name '%s' (letters, digits, '_', '-', '.')", run ? run : "");
    char path[160];
    snprintf(path, sizeof path, "/runs/%s", run);
    d->run = H5Gopen2(d->file, path, H5P_DEFAULT);
    if (d->run < 0) return cd_dump_h5_error(err, CD_E_INTERNAL, "run '%s' was not begun in dump '%s'", run, d->path);
    snprintf(d->run_name, sizeof d->run_name, "%s", run);
    return CD_OK;
}

/* ---------------- the per-run tensors table ---------------- */

static run_rows *find_rows(cd_dump *d, const char *run, bool create) {
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
static cd_status flush_run(cd_dump *d, run_rows *rr, cd_error *err) {
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
            sv[0][i] = t->dataset; sv[1][i] = t->op_type; sv[2][i] = t->layer; sv[3][i] = t->tensor;
            sv[4][i] = t->dtype; sv[5][i] = t->shape; sv[6][i] = t->where; sv[7][i] = t->kernel; sv[8][i] = t->note;
            iv[0][i] = t->op_index; iv[1][i] = t->stats_only; iv[2][i] = t->count;
            iv[3][i] = t->nan_count; iv[4][i] = t->inf_count;
            fv[0][i] = t->elapsed_us; fv[1][i] = t->kernel_us; fv[2][i] = t->min; fv[3][i] = t->max; fv[4][i] = t->mean;
        }
        const cd_column cols[] = {
            {"dataset", CD_COL_STR, sv[0]},    {"op_index", CD_COL_I64, iv[0]},  {"op_type", CD_COL_STR, sv[1]},
            {"layer", CD_COL_STR, sv[2]},      {"tensor", CD_COL_STR, sv[3]},    {"dtype", CD_COL_STR, sv[4]},
            {"shape", CD_COL_STR, sv[5]},      {"elapsed_us", CD_COL_F64, fv[0]}, {"kernel_us", CD_COL_F64, fv[1]},
            {"where", CD_COL_STR, sv[6]},      {"kernel", CD_COL_STR, sv[7]},    {"note", CD_COL_STR, sv[8]},
            {"stats_only", CD_COL_I64, iv[1]}, {"count", CD_COL_I64, iv[2]},     {"min", CD_COL_F64, fv[2]},
            {"max", CD_COL_F64, fv[3]},        {"mean", CD_COL_F64, fv[4]},      {"nan_count", CD_COL_I64, iv[3]},
            {"inf_count", CD_COL_I64, iv[4]},
        };
        char path[160];
        snprintf(path, sizeof path, "/tensors/%s", rr->name);
        st = cd_dump_write_table(d, path, cols, (int)(sizeof cols / sizeof cols[0]), n, err);
    }
    for (int k = 0; k < 9; k++) free(sv[k]);
    for (int k = 0; k < 5; k++) { free(iv[k]); free(fv[k]); }
    /* forget the rows either way: a failed write is reported, not retried */
    rows_free(rr);
    int at = (int)(rr - d->pend);
    memmove(&d->pend[at], &d->pend[at + 1], sizeof *d->pend * (size_t)(d->n_pend - at - 1));
    d->n_pend--;
    return st;
}

/* True if the run already holds a dataset of that name (its op_index is in the name). */
static bool row_name_taken(const run_rows *rr, int op_index, const char *name) {
    for (int i = rr->n - 1; i >= 0; i--)
        if (rr->rows[i].op_index == op_index && !strcmp(rr->rows[i].dataset, name)) return true;
    return false;
}

static char *dup_or_empty(const char *s, bool *oom) {
    char *r = cd_strdup(s ? s : "");
    if (!r) *oom = true;
    return r;
}

static cd_status add_row(run_rows *rr, const char *dataset, const cd_tensor_rec *rec, const cd_value *v,
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
        .dataset = dup_or_empty(dataset, &oom), .op_type = dup_or_empty(rec->op_type, &oom),
        .layer = dup_or_empty(rec->layer, &oom), .tensor = dup_or_empty(rec->tensor, &oom),
        .dtype = dup_or_empty(cd_dtype_name(v->dtype), &oom), .shape = dup_or_empty(shp, &oom),
        .where = dup_or_empty(rec->where, &oom), .kernel = dup_or_empty(rec->kernel, &oom),
        .note = dup_or_empty(rec->note, &oom),
        .op_index = rec->op_index, .stats_only = stats_only ? 1 : 0,
        .count = stats ? stats->count : -1, .nan_count = stats ? stats->nan_count : 0,
        .inf_count = stats ? stats->inf_count : 0,
        .elapsed_us = rec->elapsed_us, .kernel_us = rec->kernel_us,
        .min = stats ? stats->min : NAN, .max = stats ? stats->max : NAN, .mean = stats ? stats->mean : NAN,
    };
    rr->rows[rr->n++] = t;
    if (oom) return cd_err(err, CD_E_NOMEM, "out of memory recording tensor '%s'", dataset);
    return CD_OK;
}

cd_status cd_dump_begin_run(cd_dump *d, const char *run, const cd_run_info *info, cd_error *err) {
    if (!valid_run_name(run))
        return cd_err(err, CD_E_USAGE, "bad run name '%s': use letters, digits, '_', '-', '.'", run ? run : "");
    char path[160];
    snprintf(path, sizeof path, "/runs/%s", run);
    if (H5Lexists(d->file, path, H5P_DEFAULT) > 0)
        return cd_err(err, CD_E_USAGE, "run '%s' already exists in dump '%s'", run, d->path);
    cd_status st = make_groups(d, path, err);
    if (st) return st;
    st = open_run(d, run, err);
    if (st) return st;
    cd_run_info in = info ? *info : (cd_run_info){0};
    herr_t r = a_str(d->run, "backend", in.backend);
    r |= a_str(d->run, "precision", in.precision);
    r |= a_str(d->run, "device", in.device);
    r |= a_str(d->run, "platform", in.platform);
    r |= a_str(d->run, "driver", in.driver);
    r |= a_str(d->run, "library_path", in.library_path);
    r |= a_i64(d->run, "threads", in.threads);
    r |= a_f64(d->run, "wall_ms", 0.0);
    r |= a_i64(d->run, "complete", 0);
    if (r < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot write attributes of run '%s' in '%s'", run, d->tmp);
    return CD_OK;
}

cd_status cd_dump_end_run(cd_dump *d, const char *run, double wall_ms, bool complete, cd_error *err) {
    run_rows *rr = find_rows(d, run, false);
    cd_status st = rr ? flush_run(d, rr, err) : CD_OK;
    if (!st) st = open_run(d, run, err);
    if (st) return st;
    herr_t r = a_f64(d->run, "wall_ms", wall_ms);
    r |= a_i64(d->run, "complete", complete ? 1 : 0);
    if (r < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot finish run '%s' in '%s'", run, d->tmp);
    if (H5Fflush(d->file, H5F_SCOPE_GLOBAL) < 0)
        return cd_dump_h5_error(err, CD_E_IO, "cannot write dump '%s' (disk full?)", d->tmp);
    return CD_OK;
}

/* Statistics of whole 64-float blocks, 8 lanes (lane j takes the elements with index j mod 8,
 * in index order, exactly as the scalar loop below does, so the sum and hence the mean are
 * bit-identical whichever path ran). A block holding NaN/Inf is redone one element at a time.
 * Compiled twice on x86-64 (AVX2 and baseline), picked at run time. */
typedef float stats_v8f __attribute__((vector_size(32)));
typedef int32_t stats_v8i __attribute__((vector_size(32)));
typedef double stats_v8d __attribute__((vector_size(64)));
#define STATS_SEL(m, a, b) ((stats_v8f)(((stats_v8i)(a) & (m)) | ((stats_v8i)(b) & ~(m))))
#define STATS_BLOCKS_BODY                                                                              \
    {                                                                                                  \
        stats_v8f vmn, vmx;                                                                            \
        stats_v8d acc;                                                                                 \
        memcpy(&vmn, mn, sizeof vmn);                                                                  \
        memcpy(&vmx, mx, sizeof vmx);                                                                  \
        for (int j = 0; j < 8; j++) acc[j] = lane[j];                                                  \
        const stats_v8i em = {0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000,                         \
                              0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000};                         \
        for (int64_t b = 0; b < nblk; b++) {                                                           \
            const float *q = p + b * 64;                                                               \
            stats_v8f bmn = vmn, bmx = vmx;                                                            \
            stats_v8d bacc = acc;                                                                      \
            stats_v8i bad = {0};                                                                       \
            for (int k = 0; k < 8; k++) {                                                              \
                stats_v8f x;                                                                           \
                memcpy(&x, q + 8 * k, sizeof x);                                                       \
                bad |= ((stats_v8i)x & em) == em;                                                      \
                stats_v8i m1 = x < bmn, m2 = x > bmx;                                                  \
                bmn = STATS_SEL(m1, x, bmn);                                                           \
                bmx = STATS_SEL(m2, x, bmx);                                                           \
                bacc += __builtin_convertvector(x, stats_v8d);                                         \
            }                                                                                          \
            int any = 0;                                                                               \
            for (int j = 0; j < 8; j++) any |= bad[j];                                                 \
            if (!any) {                                                                                \
                vmn = bmn;                                                                             \
                vmx = bmx;                                                                             \
                acc = bacc;                                                                            \
                *fin += 64;                                                                            \
                continue;                                                                              \
            }                                                                                          \
            for (int j = 0; j < 64; j++) {                                                             \
                float y = q[j];                                                                        \
                if (isnan(y)) { (*nanc)++; continue; }                                                 \
                if (isinf(y)) { (*infc)++; continue; }                                                 \
                int l = j & 7;                                                                         \
                vmn[l] = y < vmn[l] ? y : vmn[l];                                                      \
                vmx[l] = y > vmx[l] ? y : vmx[l];                                                      \
                acc[l] += y;                                                                           \
                (*fin)++;                                                                              \
            }                                                                                          \
        }                                                                                              \
        memcpy(mn, &vmn, sizeof vmn);                                                                  \
        memcpy(mx, &vmx, sizeof vmx);                                                                  \
        for (int j = 0; j < 8; j++) lane[j] = acc[j];                                                  \
    }
#define STATS_BLOCKS_ARGS                                                                              \
    (const float *p, int64_t nblk, float *mn, float *mx, double *lane, int64_t *fin, int64_t *nanc,    \
     int64_t *infc)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx2"))) static void stats_blocks_avx2 STATS_BLOCKS_ARGS STATS_BLOCKS_BODY
#else
static void stats_blocks_generic STATS_BLOCKS_ARGS STATS_BLOCKS_BODY
#endif

/* false: not run (x86-64 without AVX2, where 8-wide double vectors are emulated slowly and
 * the scalar loop is faster) */
static bool stats_blocks STATS_BLOCKS_ARGS {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    static int avx2 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    if (avx2) stats_blocks_avx2(p, nblk, mn, mx, lane, fin, nanc, infc);
    return avx2 == 1;
#else
    stats_blocks_generic(p, nblk, mn, mx, lane, fin, nanc, infc);
    return true;
#endif
}

void cd_tensor_stats_compute(const cd_value *v, cd_tensor_stats *s) {
    int64_t n = cd_shape_numel(&v->shape);
    memset(s, 0, sizeof *s);
    s->min = s->max = s->mean = NAN;
    if (n <= 0 || !v->data) { s->count = n > 0 ? n : 0; return; }
    s->count = n;
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    int64_t fin = 0;
    /* Fast paths for the activation types; others go through cd_value_get. */
    if (v->dtype == CD_F32) {
        /* Blocks of 8 without NaN/Inf (the common case) take a branch-free path the compiler
         * vectorises: float min/max are exact, the sum uses 8 double lanes (a fixed order,
         * so the result is deterministic); blocks holding a non-finite value go one by one. */
        const float *p = v->data;
        float fmn = INFINITY, fmx = -INFINITY;
        double lane[8] = {0};
        float lmn[8], lmx[8];
        for (int j = 0; j < 8; j++) { lmn[j] = INFINITY; lmx[j] = -INFINITY; }
        int64_t i = 0, nanc = 0, infc = 0;
        if (stats_blocks(p, n / 64, lmn, lmx, lane, &fin, &nanc, &infc)) i = (n / 64) * 64;
        s->nan_count = nanc;
        s->inf_count = infc;
        for (int j = 0; j < 8; j++) {
            fmn = lmn[j] < fmn ? lmn[j] : fmn;
            fmx = lmx[j] > fmx ? lmx[j] : fmx;
        }
        for (; i + 8 <= n; i += 8) {
            uint32_t bad = 0;
            for (int j = 0; j < 8; j++) {
                uint32_t u;
                memcpy(&u, &p[i + j], 4);
                bad |= (u & 0x7f800000u) == 0x7f800000u;
            }
            if (!bad) {
                for (int j = 0; j < 8; j++) {
                    float x = p[i + j];
                    fmn = x < fmn ? x : fmn;
                    fmx = x > fmx ? x : fmx;
                    lane[j] += x;
                }
                fin += 8;
                continue;
            }
            for (int j = 0; j < 8; j++) {
                float x = p[i + j];
                if (isnan(x)) { s->nan_count++; continue; }
                if (isinf(x)) { s->inf_count++; continue; }
                fmn = x < fmn ? x : fmn;
                fmx = x > fmx ? x : fmx;
                lane[j] += x;
                fin++;
            }
        }
        for (; i < n; i++) {
            float x = p[i];
            if (isnan(x)) { s->nan_count++; continue; }
            if (isinf(x)) { s->inf_count++; continue; }
            fmn = x < fmn ? x : fmn;
            fmx = x > fmx ? x : fmx;
            lane[0] += x;
            fin++;
        }
        mn = fmn;
        mx = fmx;
        sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    } else {
        for (int64_t i = 0; i < n; i++) {
            double x = cd_value_get(v, i);
            if (isnan(x)) { s->nan_count++; continue; }
            if (isinf(x)) { s->inf_count++; continue; }
            if (x < mn) mn = x;
            if (x > mx) mx = x;
            sum += x;
            fin++;
        }
    }
    if (fin) { s->min = mn; s->max = mx; s->mean = sum / (double)fin; }
}

cd_status cd_dump_write_tensor(cd_dump *d, const char *run, const cd_tensor_rec *rec, const cd_value *v,
                               bool stats_only, cd_error *err) {
    if (!v) return cd_err(err, CD_E_INTERNAL, "cd_dump_write_tensor needs a value");
    cd_status st = open_run(d, run, err);
    if (st) return st;
    char esc[300], name[340];
    if (!cd_dump_escape(rec->tensor ? rec->tensor : "", esc, sizeof esc)) {
        /* very long names are cut; the raw name stays in the `tensor` attribute */
        esc[sizeof esc - 1] = 0;
        size_t l = strlen(esc);
        while (l > 0 && l + 3 >= sizeof esc) l--;
        esc[l] = 0;
    }
    run_rows *rr = find_rows(d, run, true);
    if (!rr) return cd_err(err, CD_E_NOMEM, "out of memory recording run '%s'", run);
    snprintf(name, sizeof name, "%04d_%s", rec->op_index, esc);
    for (int k = 2; row_name_taken(rr, rec->op_index, name); k++)
        snprintf(name, sizeof name, "%04d_%s~%d", rec->op_index, esc, k);
    hid_t ds;
    const cd_tensor_stats *stats = rec->stats;
    if (rec->stats) {
        /* The statistics read the tensor, the write copies it to the file: independent, so
         * with a second OpenMP thread (idle between layers) they run side by side. Only
         * this thread calls HDF5. */
        bool par = !stats_only && v->nbytes >= ((size_t)256 << 10) && omp_get_max_threads() > 1 && !omp_in_parallel();
        ds = -1;
        if (!par) { /* no OpenMP region for small tensors: entering one costs ~0.5 us */
            ds = write_values(d, d->run, name, v, stats_only, err);
            cd_tensor_stats_compute(v, rec->stats);
        } else {
#pragma omp parallel num_threads(2)
            {
                if (omp_get_thread_num() == 0) ds = write_values(d, d->run, name, v, stats_only, err);
                else cd_tensor_stats_compute(v, rec->stats);
            }
        }
    } else {
        ds = write_values(d, d->run, name, v, stats_only, err);
    }
    if (ds < 0) return err ? err->code : CD_E_IO;
    if (H5Dclose(ds) < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot write '%s' in run '%s' (disk full?)", name, run);
    return add_row(rr, name, rec, v, stats_only, stats, err);
}
