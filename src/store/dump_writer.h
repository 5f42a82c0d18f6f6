/* Private to the dump writer (dump.c: the file, inputs; dump_h5.c: HDF5 errors, escaping,
 * datasets; dump_attr.c: attributes and groups; dump_table.c: compound tables, /model/ops and
 * the per-run tensors tables; dump_run.c: runs and their tensors; dump_stats.c: tensor
 * statistics). Calls run one way: dump.c -> dump_run.c -> dump_table.c -> dump_attr.c ->
 * dump_h5.c. Other modules use store/dump.h. */
#ifndef CD_DUMP_WRITER_H
#define CD_DUMP_WRITER_H
#include <hdf5.h>
#include "store/dump.h"

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
    run_rows *pend; /* runs whose tensors table is not written yet */
    int n_pend;
    hid_t gcpl, dcpl_plain; /* creation properties without modification times */
    char *path, *tmp;
    bool append;
    char run_name[128]; /* cached open run group */
    hid_t run;
    int deflate; /* 0 = uncompressed (contiguous), else deflate level of chunks */
    hid_t ftype[CD_DTYPE_COUNT], mtype[CD_DTYPE_COUNT]; /* file/memory types per dtype, made once */
};

/* ---- attributes and groups (dump_attr.c) ---- */
herr_t cd_dumpw_attr_str(hid_t obj, const char *name, const char *v);
/* The checksum attribute (CD_DUMP_DIGEST_ATTR) of nb bytes as stored, on a new dataset
 * (docs/dump-format.md "Checksums"). */
herr_t cd_dumpw_digest_attr(hid_t obj, const void *data, size_t nb);
herr_t cd_dumpw_attr_i64(hid_t obj, const char *name, int64_t v);
herr_t cd_dumpw_attr_u64(hid_t obj, const char *name, uint64_t v);
herr_t cd_dumpw_attr_f64(hid_t obj, const char *name, double v);
/* 1-D int64 array; an empty array (rank-0 shape) uses a null dataspace. */
herr_t cd_dumpw_attr_i64s(hid_t obj, const char *name, const int64_t *v, int n);
/* True while attributes go to an object this thread has just created (a tensor or input
 * dataset): nothing to replace, so the existence check (a walk over the object's
 * attributes, the largest per-attribute cost) is skipped. */
extern _Thread_local bool cd_dumpw_attr_fresh;
static inline bool cd_dumpw_valid_path(const char *path) { return path && path[0] == '/'; }
/* Creates the groups along an absolute path that do not exist yet. */
cd_status cd_dumpw_make_groups(cd_dump *d, const char *path, cd_error *err);

/* ---- HDF5 errors, escaping, datasets (dump_h5.c) ---- */
/* Creates and writes a dataset holding v under loc/name (stats_only: null dataspace). */
hid_t cd_dumpw_write_values(cd_dump *d, hid_t loc, const char *name, const cd_value *v, bool stats_only, cd_error *err);

/* ---- the per-run tensors tables (dump_table.c) ---- */
run_rows *cd_dumpw_find_rows(cd_dump *d, const char *run, bool create);
/* Writes /tensors/<run> from the rows kept for the run and forgets them. */
cd_status cd_dumpw_flush_run(cd_dump *d, run_rows *rr, cd_error *err);
void cd_dumpw_rows_free(run_rows *rr);
/* True if the run already holds a dataset of that name (its op_index is in the name). */
bool cd_dumpw_row_name_taken(const run_rows *rr, int op_index, const char *name);
cd_status cd_dumpw_add_row(run_rows *rr, const char *dataset, const cd_tensor_rec *rec, const cd_value *v,
                           bool stats_only, const cd_tensor_stats *stats, cd_error *err);

/* ---- runs (dump_run.c) ---- */
/* Closes the cached run group (d->run). */
void cd_dumpw_close_run(cd_dump *d);
#endif
