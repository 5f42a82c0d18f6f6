/* HDF5 dump writer (format version 2): the file (create, append, close, discard) and inputs.
 * HDF5 errors, escaping and datasets: dump_h5.c; attributes and groups: dump_attr.c; tables:
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
        free(d->path);
        free(d->tmp);
        free(d);
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
    if (st) {
        cd_dump_discard(d);
        return st;
    }
    *out = d;
    return CD_OK;
}

cd_status cd_dump_open_append(const char *path, cd_dump **out, cd_error *err) {
    *out = NULL;
    cd_dump_h5_quiet();
    if (access(path, F_OK) != 0) return cd_err(err, CD_E_USAGE, "dump '%s' does not exist", path);
    if (access(path, W_OK) != 0) return cd_err(err, CD_E_IO, "cannot write to dump '%s': %s", path, strerror(errno));
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

/* ---------------- inputs ---------------- */

static herr_t shape_attrs(hid_t o, const cd_value *v) {
    herr_t r = cd_dumpw_attr_i64s(o, "shape", v->shape.d, v->shape.rank);
    r |= cd_dumpw_attr_str(o, "dtype", cd_dtype_name(v->dtype));
    return r;
}

cd_status cd_dump_write_input(cd_dump *d, const char *name, const cd_value *v, const char *source, cd_error *err) {
    cd_status st = cd_dumpw_make_groups(d, "/inputs", err);
    if (st) return st;
    char esc[512];
    if (!cd_dump_escape(name, esc, sizeof esc))
        return cd_err(err, CD_E_MODEL, "input name too long to store: '%.80s...'", name);
    hid_t g = H5Gopen2(d->file, "/inputs", H5P_DEFAULT);
    if (g < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot open /inputs in dump '%s'", d->tmp);
    if (H5Lexists(g, esc, H5P_DEFAULT) > 0) H5Ldelete(g, esc, H5P_DEFAULT);
    hid_t ds = cd_dumpw_write_values(d, g, esc, v, false, err);
    if (ds < 0) {
        H5Gclose(g);
        return err ? err->code : CD_E_IO;
    }
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
