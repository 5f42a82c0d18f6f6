/* The "nn" op family: convolutions, pooling, fc/mul/matmul, normalisations, softmax.
 * Kernels live in ops_nn_*.c; this file only lists them for the registry. */
#include "engine/ops.h"

cd_status cd_nn_conv_infer(cd_op_ctx *c);
cd_status cd_nn_conv_run(cd_op_ctx *c);
double cd_nn_conv_macs(const cd_op_ctx *c);
cd_status cd_nn_conv_prepare(cd_op_ctx *c, void **state);
cd_status cd_nn_pool_infer(cd_op_ctx *c);
cd_status cd_nn_pool_run(cd_op_ctx *c);
cd_status cd_nn_fc_infer(cd_op_ctx *c);
cd_status cd_nn_fc_run(cd_op_ctx *c);
double cd_nn_fc_macs(const cd_op_ctx *c);
cd_status cd_nn_fc_prepare(cd_op_ctx *c, void **state);
cd_status cd_nn_mul_infer(cd_op_ctx *c);
cd_status cd_nn_mul_run(cd_op_ctx *c);
double cd_nn_mul_macs(const cd_op_ctx *c);
cd_status cd_nn_matmul_infer(cd_op_ctx *c);
cd_status cd_nn_matmul_run(cd_op_ctx *c);
double cd_nn_matmul_macs(const cd_op_ctx *c);
cd_status cd_nn_batch_norm_infer(cd_op_ctx *c);
cd_status cd_nn_batch_norm_run(cd_op_ctx *c);
cd_status cd_nn_layer_norm_infer(cd_op_ctx *c);
cd_status cd_nn_layer_norm_run(cd_op_ctx *c);
cd_status cd_nn_instance_norm_infer(cd_op_ctx *c);
cd_status cd_nn_instance_norm_run(cd_op_ctx *c);
cd_status cd_nn_softmax_infer(cd_op_ctx *c);
cd_status cd_nn_softmax_run(cd_op_ctx *c);

static const cd_op_def k_nn_defs[] = {
    {"conv2d", cd_nn_conv_infer, cd_nn_conv_run, CD_OPF_WRITES_ALL, cd_nn_conv_macs, cd_nn_conv_prepare},
    {"depthwise_conv2d", cd_nn_conv_infer, cd_nn_conv_run, CD_OPF_WRITES_ALL, cd_nn_conv_macs, cd_nn_conv_prepare},
    {"conv2d_transpose", cd_nn_conv_infer, cd_nn_conv_run, CD_OPF_WRITES_ALL, cd_nn_conv_macs, cd_nn_conv_prepare},
    {"depthwise_conv2d_transpose", cd_nn_conv_infer, cd_nn_conv_run, CD_OPF_WRITES_ALL, cd_nn_conv_macs,
     cd_nn_conv_prepare},
    {"pool2d", cd_nn_pool_infer, cd_nn_pool_run, CD_OPF_WRITES_ALL, NULL, NULL},
    {"fc", cd_nn_fc_infer, cd_nn_fc_run, CD_OPF_WRITES_ALL, cd_nn_fc_macs, cd_nn_fc_prepare},
    {"mul", cd_nn_mul_infer, cd_nn_mul_run, 0, cd_nn_mul_macs, NULL},
    {"matmul", cd_nn_matmul_infer, cd_nn_matmul_run, 0, cd_nn_matmul_macs, NULL},
    {"matmul_v2", cd_nn_matmul_infer, cd_nn_matmul_run, 0, cd_nn_matmul_macs, NULL},
    {"batch_norm", cd_nn_batch_norm_infer, cd_nn_batch_norm_run, 0, NULL, NULL},
    {"layer_norm", cd_nn_layer_norm_infer, cd_nn_layer_norm_run, 0, NULL, NULL},
    {"instance_norm", cd_nn_instance_norm_infer, cd_nn_instance_norm_run, 0, NULL, NULL},
    {"softmax", cd_nn_softmax_infer, cd_nn_softmax_run, CD_OPF_WRITES_ALL, NULL, NULL},
    {"log_softmax", cd_nn_softmax_infer, cd_nn_softmax_run, 0, NULL, NULL},
};

const cd_op_table cd_ops_nn = {k_nn_defs, (int)(sizeof k_nn_defs / sizeof k_nn_defs[0])};
