/* Detection post-processing ops (prior_box, density_prior_box, box_coder, yolo_box,
 * multiclass_nms*) and the helpers they share.
 *
 * Precision: these ops read f16 inputs and write f16 outputs in fp16 runs, but compute in
 * float in both precisions. Paddle-Lite registers them as host kernels with float
 * precision in every configuration (an fp16 GPU model converts back to float before
 * them), so float arithmetic here matches what a device actually executes; and NMS in
 * half arithmetic would turn near-equal IoUs/scores into ties that flip box selection,
 * which is noise, not a finding about the model. */
#include "engine/ops.h"
#include "util/fp16.h"
#include <string.h>

/* ---- kernels defined in the ops_detect_*.c files ---- */
cd_status cd_prior_box_infer(cd_op_ctx *c);
cd_status cd_prior_box_run(cd_op_ctx *c);
cd_status cd_density_prior_box_infer(cd_op_ctx *c);
cd_status cd_density_prior_box_run(cd_op_ctx *c);
cd_status cd_box_coder_infer(cd_op_ctx *c);
cd_status cd_box_coder_run(cd_op_ctx *c);
cd_status cd_yolo_box_infer(cd_op_ctx *c);
cd_status cd_yolo_box_run(cd_op_ctx *c);
cd_status cd_multiclass_nms_infer(cd_op_ctx *c);
cd_status cd_multiclass_nms_run(cd_op_ctx *c);

static const cd_op_def k_detect_defs[] = {
    {"prior_box", cd_prior_box_infer, cd_prior_box_run, CD_OPF_HOST, NULL, NULL},
    {"density_prior_box", cd_density_prior_box_infer, cd_density_prior_box_run, CD_OPF_HOST, NULL, NULL},
    {"box_coder", cd_box_coder_infer, cd_box_coder_run, CD_OPF_HOST, NULL, NULL},
    {"yolo_box", cd_yolo_box_infer, cd_yolo_box_run, CD_OPF_HOST, NULL, NULL},
    {"multiclass_nms", cd_multiclass_nms_infer, cd_multiclass_nms_run, CD_OPF_HOST | CD_OPF_DYNAMIC, NULL, NULL},
    {"multiclass_nms2", cd_multiclass_nms_infer, cd_multiclass_nms_run, CD_OPF_HOST | CD_OPF_DYNAMIC, NULL, NULL},
    {"multiclass_nms3", cd_multiclass_nms_infer, cd_multiclass_nms_run, CD_OPF_HOST | CD_OPF_DYNAMIC, NULL, NULL},
};

const cd_op_table cd_ops_detect = {k_detect_defs, (int)(sizeof k_detect_defs / sizeof k_detect_defs[0])};
