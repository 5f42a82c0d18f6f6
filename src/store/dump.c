/* HDF5 dump writer (format version 2): the file (create, append, close, discard), HDF5 error
 * capture, name escaping, datasets and inputs. Attributes and groups: dump_attr.c; tables:
 * dump_table.c; runs and their tensors: dump_run.c; statistics: dump_stats.c. See dump.h for
 * the temp-file/rename contract and docs/dump-format.md for the layout. */
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
#include "store/dump_writer.h"
#include "util/fp16.h"

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

static void dump_free(cd_dump *d) {
    if (!d) return;
    for (int i = 0; i < d->n_pend; i++) cd_dumpw_rows_free(&d->pend[i]);
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
    r |= cd_dumpw_attr_str(root, "cldiff_version", CLDIFF_VERSION);
    r |= cd_dumpw_attr_i64(root, "format_version", CD_DUMP_FORMAT_VERSION);
    r |= cd_dumpw_attr_str(root, "created", created);
    r |= cd_dumpw_attr_str(root, "command_line", m.command_line);
    r |= cd_dumpw_attr_str(root, "model_path", m.model_path);
    r |= cd_dumpw_attr_str(root, "model_sha256", m.model_sha256);
    r |= cd_dumpw_attr_str(root, "model_format", m.model_format);
    r |= cd_dumpw_attr_str(root, "precision", m.precision);
    r |= cd_dumpw_attr_u64(root, "seed", m.seed);
    r |= cd_dumpw_attr_i64(root, "complete", 0);
    cd_status st = r < 0 ? cd_dump_h5_error(err, CD_E_IO, "cannot write root attributes of dump '%s'", d->tmp) : CD_OK;
    if (!st) st = cd_dumpw_make_groups(d, "/runs", err);
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

void cd_dump_discard(cd_dump *d) {
    if (!d) return;
    cd_dumpw_close_run(d);
    if (d->file >= 0) H5Fclose(d->file);
    H5Eclear2(H5E_DEFAULT);
    if (!d->append) unlink(d->tmp);
    dump_free(d);
}

cd_status cd_dump_close(cd_dump *d, bool complete, cd_error *err) {
    if (!d) return CD_OK;
    cd_status st = CD_OK;
    while (d->n_pend > 0 && !st) st = cd_dumpw_flush_run(d, &d->pend[0], err);
    cd_dumpw_close_run(d);
    if (!d->append && cd_dumpw_attr_i64(d->file, "complete", complete ? 1 : 0) < 0)
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
hid_t cd_dumpw_write_values(cd_dump *d, hid_t loc, const char *name, const cd_value *v, bool stats_only,
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
    herr_t r = cd_dumpw_attr_i64s(o, "shape", v->shape.d, v->shape.rank);
    r |= cd_dumpw_attr_str(o, "dtype", cd_dtype_name(v->dtype));
    return r;
}

cd_status cd_dump_write_input(cd_dump *d, const char *name, const cd_value *v, const char *source,
                              cd_error *err) {
    cd_status st = cd_dumpw_make_groups(d, "/inputs", err);
    if (st) return st;
    char esc[512];
    if (!cd_dump_escape(name, esc, sizeof esc))
        return cd_err(err, CD_E_MODEL, "input name too long to store: '%.80s...'", name);
    hid_t g = H5Gopen2(d->file, "/inputs", H5P_DEFAULT);
    if (g < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot open /inputs in dump '%s'", d->tmp);
    if (H5Lexists(g, esc, H5P_DEFAULT) > 0) H5Ldelete(g, esc, H5P_DEFAULT);
    hid_t ds = cd_dumpw_write_values(d, g, esc, v, false, err);
    if (ds < 0) { H5Gclose(g); return err ? err->code : CD_E_IO; }
    cd_dumpw_attr_fresh = true;
    herr_t r = cd_dumpw_attr_str(ds, "tensor", name);
    r |= shape_attrs(ds, v);
    r |= cd_dumpw_attr_str(ds, "source", source);
    cd_dumpw_attr_fresh = false;
    H5Dclose(ds);
    H5Gclose(g);
    if (r < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot write attributes of input '%s'", name);
    return CD_OK;
}
