/* Shared by the Paddle-Lite engines (pl_engine.c: the x86 wheel through Python; pl_sdk_engines.c:
 * the SDK engines paddle-lite-arm and paddle-lite-opencl through the native runner). Not a
 * module interface. */
#ifndef CD_PL_PRIV_H
#define CD_PL_PRIV_H
#include <limits.h>
#include "backends/paddlelite/pl_engine.h"
#include "engine/backend_def.h"
#include "probes/instrument.h"

/* Starts argv (envp NULL: this process's environment) with stdout+stderr into log_path, waits
 * up to timeout_s (<= 0: no limit; then SIGKILL, *timed_out) or until *stop (SIGKILL,
 * CD_E_INTERRUPTED). */
cd_status cd_pl_spawn_wait(char *const argv[], char *const envp[], const char *log_path, double timeout_s, int *wstatus,
                           bool *timed_out, volatile int *stop, cd_error *err);
/* The last few meaningful lines of a log, joined by " | ". */
void cd_pl_log_tail(const char *path, char *buf, size_t n);
/* Removes a flat folder and its files. */
void cd_pl_rm_tree(const char *dir);
/* Candidate roots for helper files: the executable's folder, its parent, the source tree. */
int cd_pl_roots(char out[3][PATH_MAX]);
/* The model's compute target: the most common non-host kernel target ("arm", "opencl", ...). */
const char *cd_pl_model_target(const cd_graph *g);

/* "alias/target/precision/layout" of a kernel record, e.g. "image2d/opencl/float16/ImageDefault". */
void cd_pl_kernel_str(const cd_kernel_rec *k, char *buf, size_t n);
/* Where an op runs by its own kernel record (placement of the engines that run the .nb as given). */
void cd_pl_place_by_record(const cd_op *op, cd_op_place *o);

/* Reads DIR/out_<col>.npy of every fetch and hands it on: into the record (every activation,
 * and the model inputs first) and, for probed ones, to the sink. partial: files that are not
 * there are skipped (a run that ended early). */
typedef struct cd_pl_collect_req {
    const cd_plan *plan;
    const cd_probe_fetch *fetch;
    int n_fetch;
    const char *dir;
    const cd_value *inputs;
    cd_forcing *record;
    cd_probe_sink *sink;
    const char *const *kernel_of; /* per op of the original graph: the kernel the engine chose (may be NULL) */
    bool partial;
    bool model_kernels; /* the engine ran the model's own kernel records: model defects are named */
    int n_missing;      /* out: fetches without a file (partial) */
} cd_pl_collect_req;
/* A model defect at op op_index that Paddle-Lite's kernels run without a word (pl_defects.c): an
 * int8 kernel record whose activation input is a float tensor with no calib before it, which
 * Paddle-Lite reads as int8 bytes. buf gets the note (CD_MODEL_DEFECT_NOTE first, what
 * Paddle-Lite does, how to fix the model); false when none. */
bool cd_pl_model_defect(const cd_graph *g, int op_index, char *buf, size_t n);
cd_status cd_pl_collect(cd_pl_collect_req *cq, int *n_hits, int *n_shape_mismatch, int *n_dequantized, cd_error *err);
#endif
