/* One op of a .mnn model cut out as a model of its own, written by MNN itself (the runner's
 * --extract mode, probes/mnn/mnn_probe_runner.cc): the repro pack of a .mnn run (docs/mnn.md
 * "Repro packs"). */
#ifndef CD_MNN_EXTRACT_H
#define CD_MNN_EXTRACT_H
#include "util/error.h"

/* Writes out_path: the op of `model` that produces tensor `tensor`, its constant inputs kept,
 * every other input a model input named like the tensor it replaces. shapes: "NAME=d0,d1,..."
 * for the model's inputs (the run's shapes). sdk_given: the user's SDK path or NULL (the lookup
 * of cd_mnn_sdk_find). log_path receives the runner's output. */
cd_status cd_mnn_extract_op(const char *sdk_given, const char *model, const char *tensor, const char *const *shapes,
                            int n_shapes, const char *out_path, const char *log_path, cd_error *err);
#endif
