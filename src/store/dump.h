/* The HDF5 dump (format version 2; layout in docs/dump-format.md and docs/design.md).
 *
 * Writing: cd_dump_create() opens "<path>.tmp-<pid>" next to the final path; nothing ever
 * appears under the final name until cd_dump_close(). cd_dump_close(complete=true) sets the
 * root attribute complete=1 and renames the file to its final path; complete=false (an
 * interrupted or failed run) sets complete=0 and renames it too, so the user can still look
 * at what was captured, while every reader (cldiff and the documented layout) sees
 * complete=0 and treats the file as partial. A process killed hard leaves only the .tmp file.
 * An existing file at the final path is replaced (the CLI decides whether to allow that).
 *
 * Determinism: timestamps and timings live only in attributes; object modification times
 * are not recorded and compression is deterministic, so two identical runs give
 * bit-identical dataset bytes (compare with h5diff or by reading datasets; the file as a
 * whole differs by its `created`/timing attributes).
 *
 * Errors: HDF5's automatic error printing is switched off; HDF5 error stacks become the
 * cd_error message. Write failures (read-only directory, disk full) are CD_E_IO; reading a
 * missing file is CD_E_USAGE; a corrupt or foreign file is CD_E_MODEL.
 *
 * Not thread-safe (serial HDF5): one thread writes a dump. */
#ifndef CD_DUMP_H
#define CD_DUMP_H
#include <stdbool.h>
#include <stdint.h>
#include "model/graph.h"
#include "util/value.h"

/* 2: tensor metadata in one table per run (/tensors/<run>), no per-dataset attributes;
 * 1: the same fields as attributes of each tensor dataset (still read). */
#define CD_DUMP_FORMAT_VERSION 2

typedef struct cd_dump cd_dump;

/* Root attributes. NULL strings are stored as "". */
typedef struct cd_dump_meta {
    const char *command_line;
    const char *model_path;
    const char *model_sha256; /* hex, see util/sha256.h */
    const char *model_format; /* e.g. "paddle-lite nb meta 2, opt v2.10" */
    const char *precision;    /* "fp32", "fp16" */
    uint64_t seed;            /* input seed */
    int deflate;              /* tensor compression: 0 or -1 = none (contiguous, the default),
                                   1..9 = chunked, shuffle + deflate at that level
                                   (the fastest dump: zlib writes ~30 MB/s on a small core) */
} cd_dump_meta;

/* Every tensor and input dataset carries the attribute `digest`: "d64:" and 16 hex digits of
 * cd_dump_digest64 over the bytes stored (the dtype as stored, little-endian). The reader checks
 * it on every read and refuses a damaged dataset with CD_E_MODEL naming it
 * (docs/dump-format.md "Checksums"); datasets without it (older dumps) are read unchecked. */
#define CD_DUMP_DIGEST_ATTR "digest"
uint64_t cd_dump_digest64(const void *data, size_t n);

/* Opens a new dump (written at a temporary path, see above). */
cd_status cd_dump_create(const char *path, const cd_dump_meta *meta, cd_dump **out, cd_error *err);
/* Final path given to cd_dump_create and the temporary path being written. */
const char *cd_dump_path(const cd_dump *d);
const char *cd_dump_tmp_path(const cd_dump *d);
/* Sets root attr complete, closes, renames to the final path, frees d (also on error).
 * d == NULL is a no-op. */
cd_status cd_dump_close(cd_dump *d, bool complete, cd_error *err);
/* Closes and deletes the temporary file without producing the final file (e.g. an error
 * before anything useful was written). */
void cd_dump_discard(cd_dump *d);

/* /model/ops table from the graph (one row per op, feed/fetch included). */
cd_status cd_dump_write_model(cd_dump *d, const cd_graph *g, cd_error *err);

/* /inputs/<escaped name>: the exact input fed to every run; attrs tensor (raw name), shape,
 * dtype, source (free text, e.g. "random uniform[-1,1) seed=1"). */
cd_status cd_dump_write_input(cd_dump *d, const char *name, const cd_value *v, const char *source, cd_error *err);

/* Run group attributes (NULL strings stored as ""). */
typedef struct cd_run_info {
    const char *backend;   /* "cpu", "opencl" */
    const char *precision; /* "fp32", "fp16", "fp16-compute" */
    const char *device;
    const char *platform;
    const char *driver;
    const char *library_path;
    int threads;
} cd_run_info;

/* Creates /runs/<run> with complete=0. run must be a plain name ([A-Za-z0-9_.-]+). */
cd_status cd_dump_begin_run(cd_dump *d, const char *run, const cd_run_info *info, cd_error *err);
/* Writes the run's tensors table, sets wall_ms and complete on /runs/<run>. */
cd_status cd_dump_end_run(cd_dump *d, const char *run, double wall_ms, bool complete, cd_error *err);

/* Running statistics of a probed tensor over its values (half widened exactly). min/max/mean
 * are over the finite values (NaN when there are none). */
typedef struct cd_tensor_stats {
    int64_t count; /* elements */
    int64_t nan_count, inf_count;
    double min, max, mean;
} cd_tensor_stats;
void cd_tensor_stats_compute(const cd_value *v, cd_tensor_stats *s);

/* Everything stored about one probed tensor besides its values. */
typedef struct cd_tensor_rec {
    int op_index;
    const char *op_type;
    const char *layer;  /* op name, e.g. conv2d_3 */
    const char *tensor; /* raw tensor name */
    double elapsed_us, kernel_us;
    const char *where, *kernel, *note;
    /* Optional: when set, the statistics of v are computed here into *stats and stored in
     * the columns count/min/max/mean/nan_count/inf_count of the run's tensors table; for
     * large tensors on a second OpenMP thread while the data is written (the result does
     * not depend on it). Without it, count is -1 and min/max/mean NaN. */
    cd_tensor_stats *stats;
} cd_tensor_rec;

/* Writes /runs/<run>/<NNNN>_<escaped tensor> from v (dtype as computed: F16 is stored as
 * IEEE half, bit-exact) and records its row of /tensors/<run> (written by
 * cd_dump_end_run, or by cd_dump_close for a run that was not ended). stats_only=true writes
 * a dataset with an empty (H5S_NULL) dataspace (--dump stats); its row's dtype/shape still
 * describe v. A name already present in the run gets a suffix "~2", "~3"... */
cd_status cd_dump_write_tensor(cd_dump *d, const char *run, const cd_tensor_rec *rec, const cd_value *v,
                               bool stats_only, cd_error *err);

/* Link-name escaping used for tensor and input names: bytes outside 0x21..0x7E and the
 * characters '/' and '%' become "%XX" (upper-case hex); everything else is kept. The result
 * is NUL-terminated; returns false if it does not fit in n bytes. */
bool cd_dump_escape(const char *name, char *out, size_t n);
/* Inverse of cd_dump_escape (malformed escapes are copied verbatim). */
void cd_dump_unescape(const char *name, char *out, size_t n);

/* ---- generic helpers (used by compare/ to write /compare/<a>__<b>/...) ----
 * Paths are absolute HDF5 paths; missing intermediate groups are created. */
typedef enum { CD_COL_I64, CD_COL_F64, CD_COL_STR } cd_col_type;
typedef struct cd_column {
    const char *name;
    cd_col_type type;
    /* nrows values: int64_t[], double[] or const char *[] (NULL = "") by type */
    const void *data;
} cd_column;
/* Writes a one-dimensional compound dataset at path (replacing one that exists); strings
 * become fixed-length NUL-terminated fields sized to the longest value of the column. */
cd_status cd_dump_write_table(cd_dump *d, const char *path, const cd_column *cols, int ncols, int64_t nrows,
                              cd_error *err);
/* Creates the group at path (and parents) if missing. */
cd_status cd_dump_make_group(cd_dump *d, const char *path, cd_error *err);
/* Sets (or replaces) an attribute on the object at path ("/" = root). */
cd_status cd_dump_set_attr_str(cd_dump *d, const char *path, const char *name, const char *value, cd_error *err);
cd_status cd_dump_set_attr_i64(cd_dump *d, const char *path, const char *name, int64_t value, cd_error *err);
cd_status cd_dump_set_attr_f64(cd_dump *d, const char *path, const char *name, double value, cd_error *err);
cd_status cd_dump_set_attr_i64s(cd_dump *d, const char *path, const char *name, const int64_t *v, int n, cd_error *err);

/* ======================= reading (dump_read.c) ======================= */
typedef struct cd_dump_reader cd_dump_reader;

/* Opens a dump read-only and checks format_version. Missing file -> CD_E_USAGE; not HDF5,
 * not a cldiff dump, newer format -> CD_E_MODEL. Incomplete dumps open fine: check
 * cd_dump_reader_complete(). */
cd_status cd_dump_open(const char *path, cd_dump_reader **out, cd_error *err);
/* Opens an existing dump for appending (e.g. `cldiff compare` adding /compare/...). The file
 * is modified in place: no temporary copy; cd_dump_close() on it leaves the root attr
 * `complete` as it was and does not rename. */
cd_status cd_dump_open_append(const char *path, cd_dump **out, cd_error *err);
void cd_dump_reader_close(cd_dump_reader *r);
bool cd_dump_reader_complete(const cd_dump_reader *r);
int cd_dump_reader_format_version(const cd_dump_reader *r);

/* Runs in name order. */
int cd_dump_n_runs(const cd_dump_reader *r);
const char *cd_dump_run_name(const cd_dump_reader *r, int i);
/* The path the reader was opened with. */
const char *cd_dump_reader_path(const cd_dump_reader *r);
/* Index of a run by name, -1 if absent. */
int cd_dump_find_run(const cd_dump_reader *r, const char *run);

/* Attribute readers on any object path ("/", "/runs/cpu", "/runs/cpu/0003_x"); string
 * attrs into buf (truncated to n-1 bytes); numeric attrs of any integer or float type.
 * Missing attribute -> CD_E_MODEL naming the path. */
cd_status cd_dump_attr_str(const cd_dump_reader *r, const char *path, const char *name, char *buf, size_t n,
                           cd_error *err);
cd_status cd_dump_attr_f64(const cd_dump_reader *r, const char *path, const char *name, double *out, cd_error *err);
cd_status cd_dump_attr_i64(const cd_dump_reader *r, const char *path, const char *name, int64_t *out, cd_error *err);
bool cd_dump_has(const cd_dump_reader *r, const char *path);

/* One stored tensor of a run. */
typedef struct cd_dump_tensor_info {
    char dataset[320]; /* link name within the run group */
    char tensor[256];  /* raw tensor name */
    int op_index;
    char op_type[64];
    char layer[128];
    cd_dtype dtype; /* dtype as stored */
    cd_shape shape;
    int64_t numel;
    bool stats_only; /* no values stored (--dump stats) */
    bool has_stats;
    cd_tensor_stats stats;
    double elapsed_us, kernel_us;
    char where[16];
    char kernel[64];
    char note[256];
} cd_dump_tensor_info;

/* Lists the tensors of a run in op order (ties: dataset name). *out is malloc'ed. */
cd_status cd_dump_list_tensors(const cd_dump_reader *r, const char *run, cd_dump_tensor_info **out, int *n,
                               cd_error *err);
/* Reads a tensor of a run as float32 (half widened exactly, integers converted).
 * *data is malloc'ed with *numel values. A stats-only entry -> CD_E_USAGE. */
cd_status cd_dump_read_f32(const cd_dump_reader *r, const char *run, const char *dataset, float **data, int64_t *numel,
                           cd_error *err);
/* Hands back data (malloc'ed, n values, unchanged since) just read with cd_dump_read_f32(r, run,
 * dataset): the reader keeps it (within a memory budget; else it is freed) and gives it, without
 * reading the file again, to the next read of that dataset. Takes ownership of data. */
void cd_dump_keep_f32(const cd_dump_reader *r, const char *run, const char *dataset, float *data, int64_t n);
/* Reads any dataset by absolute path as float32, with its shape. */
cd_status cd_dump_read_path_f32(const cd_dump_reader *r, const char *path, float **data, cd_shape *shape,
                                cd_error *err);
/* Reads /inputs/<escaped name> as float32 into out (owned); CD_E_MODEL if absent. */
cd_status cd_dump_read_input(const cd_dump_reader *r, const char *name, cd_value *out, cd_error *err);

/* Reads a compound table written by cd_dump_write_table: cols[] names the wanted columns
 * and their types (data is filled with a malloc'ed array per column; strings are
 * malloc'ed too; free with cd_dump_table_free). */
cd_status cd_dump_read_table(const cd_dump_reader *r, const char *path, cd_column *cols, int ncols, int64_t *nrows,
                             cd_error *err);
void cd_dump_table_free(cd_column *cols, int ncols, int64_t nrows);

/* Names of the links in the group at path, in name order (*names malloc'ed; free with
 * cd_dump_names_free). */
cd_status cd_dump_list_group(const cd_dump_reader *r, const char *path, char ***names, int *n, cd_error *err);
void cd_dump_names_free(char **names, int n);
/* Reads every string and scalar numeric attribute of the object at path. */
cd_status cd_dump_read_all_attrs(const cd_dump_reader *r, const char *path, cd_error *err);

/* ---- untrusted dumps (dump_check.c) ----
 * HDF5 1.10 itself crashes on some crafted files (e.g. a SEGV inside H5Aexists_by_name while
 * it walks a damaged attribute message: tests/fuzz/regressions/dump/hdf5-attr-exists-segv),
 * which no check of ours can prevent. A dump given by the user (compare, report,
 * --baseline) is therefore first read completely by cd_dump_walk in a forked child; only if
 * that child finishes cleanly is the file opened in this process. A child killed by a
 * signal, or stopped by its time limit, becomes a CD_E_MODEL message naming the file. */

/* Opens the dump and reads everything a cldiff command may read from it: root, run, input
 * and comparison attributes, the tensor lists, every stored tensor and input, the
 * /model/ops table. */
cd_status cd_dump_walk(const char *path, cd_error *err);
/* cd_dump_walk in a child process (see above). */
cd_status cd_dump_check_isolated(const char *path, cd_error *err);
/* fn(arg) in a forked child that reads the dump at path (its size sets the time limit):
 * CD_OK if the child finished, else the CD_E_MODEL message above. Nothing comes back from
 * the child: a caller that then repeats exactly fn's reads in-process, from the state the
 * child started in, gets the same (non-crashing) behaviour from HDF5. */
cd_status cd_dump_run_isolated(const char *path, void (*fn)(void *), void *arg, cd_error *err);
/* cd_dump_check_isolated, then cd_dump_open. */
cd_status cd_dump_open_untrusted(const char *path, cd_dump_reader **out, cd_error *err);
/* Every dataset that carries a checksum (CD_DUMP_DIGEST_ATTR) against it: CD_E_MODEL naming the
 * first damaged one. cd_dump_open_untrusted runs it (in its checking child). */
cd_status cd_dump_verify(const cd_dump_reader *r, cd_error *err);

/* Internal, shared by dump.c and dump_read.c: turns HDF5 automatic error printing off. */
void cd_dump_h5_quiet(void);
/* Internal: fills err with code and the message, followed by the innermost HDF5 error of
 * the current stack (then cleared). Returns code. */
cd_status cd_dump_h5_error(cd_error *err, cd_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif
