/* Dump writer: runs (/runs/<run> and its attributes) and their tensors. */
#include <omp.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include "store/dump.h"
#include "store/dump_writer.h"

void cd_dumpw_close_run(cd_dump *d) {
    if (d->run >= 0) H5Gclose(d->run);
    d->run = -1;
    d->run_name[0] = 0;
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
    cd_dumpw_close_run(d);
    if (!valid_run_name(run))
        return cd_err(err, CD_E_INTERNAL, "bad run name '%s' (letters, digits, '_', '-', '.')", run ? run : "");
    char path[160];
    snprintf(path, sizeof path, "/runs/%s", run);
    d->run = H5Gopen2(d->file, path, H5P_DEFAULT);
    if (d->run < 0) return cd_dump_h5_error(err, CD_E_INTERNAL, "run '%s' was not begun in dump '%s'", run, d->path);
    snprintf(d->run_name, sizeof d->run_name, "%s", run);
    return CD_OK;
}

cd_status cd_dump_begin_run(cd_dump *d, const char *run, const cd_run_info *info, cd_error *err) {
    if (!valid_run_name(run))
        return cd_err(err, CD_E_USAGE, "bad run name '%s': use letters, digits, '_', '-', '.'", run ? run : "");
    char path[160];
    snprintf(path, sizeof path, "/runs/%s", run);
    if (H5Lexists(d->file, path, H5P_DEFAULT) > 0)
        return cd_err(err, CD_E_USAGE, "run '%s' already exists in dump '%s'", run, d->path);
    cd_status st = cd_dumpw_make_groups(d, path, err);
    if (st) return st;
    st = open_run(d, run, err);
    if (st) return st;
    cd_run_info in = info ? *info : (cd_run_info){0};
    herr_t r = cd_dumpw_attr_str(d->run, "backend", in.backend);
    r |= cd_dumpw_attr_str(d->run, "precision", in.precision);
    r |= cd_dumpw_attr_str(d->run, "device", in.device);
    r |= cd_dumpw_attr_str(d->run, "platform", in.platform);
    r |= cd_dumpw_attr_str(d->run, "driver", in.driver);
    r |= cd_dumpw_attr_str(d->run, "library_path", in.library_path);
    r |= cd_dumpw_attr_i64(d->run, "threads", in.threads);
    r |= cd_dumpw_attr_f64(d->run, "wall_ms", 0.0);
    r |= cd_dumpw_attr_i64(d->run, "complete", 0);
    if (r < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot write attributes of run '%s' in '%s'", run, d->tmp);
    return CD_OK;
}

cd_status cd_dump_end_run(cd_dump *d, const char *run, double wall_ms, bool complete, cd_error *err) {
    /* a run that captured nothing (an engine that died before its first layer) still gets its
     * (empty) tensors table: readers tell "nothing captured" from "not written by cldiff" */
    run_rows *rr = cd_dumpw_find_rows(d, run, true);
    cd_status st = rr ? cd_dumpw_flush_run(d, rr, err) : cd_err(err, CD_E_NOMEM, "out of memory");
    if (!st) st = open_run(d, run, err);
    if (st) return st;
    herr_t r = cd_dumpw_attr_f64(d->run, "wall_ms", wall_ms);
    r |= cd_dumpw_attr_i64(d->run, "complete", complete ? 1 : 0);
    if (r < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot finish run '%s' in '%s'", run, d->tmp);
    if (H5Fflush(d->file, H5F_SCOPE_GLOBAL) < 0)
        return cd_dump_h5_error(err, CD_E_IO, "cannot write dump '%s' (disk full?)", d->tmp);
    return CD_OK;
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
    run_rows *rr = cd_dumpw_find_rows(d, run, true);
    if (!rr) return cd_err(err, CD_E_NOMEM, "out of memory recording run '%s'", run);
    snprintf(name, sizeof name, "%04d_%s", rec->op_index, esc);
    for (int k = 2; cd_dumpw_row_name_taken(rr, rec->op_index, name); k++)
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
            ds = cd_dumpw_write_values(d, d->run, name, v, stats_only, err);
            cd_tensor_stats_compute(v, rec->stats);
        } else {
#pragma omp parallel num_threads(2)
            {
                if (omp_get_thread_num() == 0)
                    ds = cd_dumpw_write_values(d, d->run, name, v, stats_only, err);
                else
                    cd_tensor_stats_compute(v, rec->stats);
            }
        }
    } else {
        ds = cd_dumpw_write_values(d, d->run, name, v, stats_only, err);
    }
    if (ds < 0) return err ? err->code : CD_E_IO;
    if (H5Dclose(ds) < 0)
        return cd_dump_h5_error(err, CD_E_IO, "cannot write '%s' in run '%s' (disk full?)", name, run);
    return cd_dumpw_add_row(rr, name, rec, v, stats_only, stats, err);
}
