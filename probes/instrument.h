/* The instrumentation pass for engines that cldiff does not drive op by op (the real
 * Paddle-Lite runtime on x86, on a phone, through OpenCL): a copy of the model in which
 * every probed tensor is also a model output (an extra fetch op), so that the runtime's
 * public API (GetOutput(i)) returns it after one Run().
 *
 * Why the renaming: Paddle-Lite's optimizer (memory_optimize_pass, at opt time) already
 * gave many tensors the same variable name, and the light runtime keeps one tensor per
 * name in its scope, so an output read after Run() holds the LAST value written under its
 * name, not the probed one. Inplace kernels (reshape2/flatten2/squeeze2/unsqueeze2 with
 * inplace=true) also share one buffer between input and output. The pass therefore gives
 * every activation whose name is written more than once a name of its own
 * ("<name>.cldiff<version>"), except the versions that are model inputs or outputs (the
 * API keeps finding them by their names); after it every activation of the block has a
 * single writer, so nothing written after a probed op can land in the probed tensor's
 * buffer. Ops, their order, attributes, kernel records and parameters are unchanged; the
 * fetch ops are appended after the model's own, with col = n_outputs + k. */
#ifndef CD_INSTRUMENT_H
#define CD_INSTRUMENT_H
#include "util/value.h"
#include "model/graph.h"

typedef struct cd_probe_fetch {
    int col;          /* output index in the instrumented model */
    int op_index;     /* producing op in the original (and instrumented) model */
    int tensor_id;    /* tensor id in the original graph */
    const char *slot; /* output slot of the op ("Out", "Output", ...) */
    int slot_index;
    char *fetch_name;  /* variable name in the instrumented model (owned) */
    bool model_output; /* one of the model's own outputs (col < n_model_outputs) */
    bool probed;       /* selected by --layers (model outputs that are not are listed too) */
    cd_dtype dtype;    /* planned dtype and shape (meta), else the declared ones */
    cd_shape shape;
} cd_probe_fetch;

typedef struct cd_instrumented {
    cd_graph *g;           /* the instrumented model (owned) */
    int n_model_outputs;   /* the original model's outputs keep cols 0..n-1 */
    int n_fetch;           /* all fetches: model outputs then probes */
    cd_probe_fetch *fetch; /* [n_fetch] */
    int n_renamed;         /* activations that got a name of their own */
} cd_instrumented;

/* Kernel-record rewriting (an experiment): every ARM (4) record gets target `target`, or Host
 * (1) when its op type is in the comma list host_ops (ops this build has only on Host); Host
 * records of ops in target_ops (ops this build lacks on Host) get `target`. */
typedef struct cd_retarget {
    int target; /* -1: no rewriting */
    const char *host_ops;
    const char *target_ops;
    bool keep_names; /* skip the renaming (to show what reused names do to probes) */
} cd_retarget;

/* mask[i]: probe op i's outputs (training-only outputs, cd_exec_training_only, are skipped as the executor skips them;
 * feed/fetch never probed). meta (a plan's per-tensor dtype/shape, may be NULL) fills the
 * manifest's shapes. retarget (may be NULL) rewrites ARM kernel records (x86 builds of the
 * runtime cannot load ARM kernels) and can turn the renaming off. */
cd_status cd_instrument(const cd_graph *g, const bool *mask, const cd_value *meta, const cd_retarget *retarget,
                        cd_instrumented *out, cd_error *err);
void cd_instrumented_free(cd_instrumented *in);

/* The manifest (JSON) beside probed.nb: fetch column -> op index, layer, tensor, shape, dtype. */
typedef struct cd_manifest_info {
    const char *model_path, *model_sha256, *instrumented_path;
    int n_inputs;
    const char *const *input_names;
    const cd_shape *input_shapes;
} cd_manifest_info;
cd_status cd_manifest_write(const char *path, const cd_graph *orig, const cd_instrumented *in,
                            const cd_manifest_info *mi, cd_error *err);

/* A manifest read back (cldiff import, the paddle-lite backend). */
typedef struct cd_manifest_entry {
    int col, op_index;
    char layer[128], op_type[64], tensor[256], fetch_name[300];
    cd_dtype dtype;
    cd_shape shape;
    bool model_output, probed;
} cd_manifest_entry;
typedef struct cd_manifest {
    char model_path[1024], model_sha256[80], instrumented[1024];
    int n_model_outputs;
    int n;
    cd_manifest_entry *e;
} cd_manifest;
/* Missing file -> CD_E_USAGE; malformed JSON or fields -> CD_E_MODEL naming the path and
 * the byte offset / entry. */
cd_status cd_manifest_read(const char *path, cd_manifest *out, cd_error *err);
void cd_manifest_free(cd_manifest *m);
/* dtype names as numpy spells them ("float32", "int64"); -1 when unknown. */
const char *cd_manifest_dtype_name(cd_dtype t);
int cd_manifest_dtype_parse(const char *s);
/* "probed.nb" -> "probed.manifest.json" (any other name: NAME.manifest.json). */
void cd_manifest_path_for(const char *nb_path, char *out, size_t n);
/* host, x86, arm, opencl -> Paddle-Lite TargetType number; -1 otherwise. */
int cd_target_from_name(const char *s);
/* Instruments g, writes out_nb and its manifest (path into manifest_out). keep (may be NULL)
 * receives the instrumented model's description (free with cd_instrumented_free). */
cd_status cd_write_instrumented(const cd_graph *g, const bool *mask, const cd_value *meta, const cd_retarget *retarget,
                                const char *model_path, const char *sha256, const cd_shape *in_shapes,
                                const char *out_nb, char *manifest_out, size_t mn, cd_instrumented *keep,
                                cd_error *err);
#endif
