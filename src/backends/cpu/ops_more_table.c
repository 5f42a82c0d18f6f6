/* The "more" op family: ops added for op coverage (docs/op-coverage.md). Kernels live in
 * ops_more_math.c and ops_more_data.c; sync_batch_norm is batch_norm at inference (its
 * running statistics are the Mean/Variance inputs), so it reuses the nn family's kernel. */
#include "engine/ops.h"

cd_status cd_more_unary_infer(cd_op_ctx *c);
cd_status cd_more_unary_run(cd_op_ctx *c);
cd_status cd_more_compare_infer(cd_op_ctx *c);
cd_status cd_more_compare_run(cd_op_ctx *c);
cd_status cd_more_lrn_infer(cd_op_ctx *c);
cd_status cd_more_lrn_run(cd_op_ctx *c);
cd_status cd_more_reduce_infer(cd_op_ctx *c);
cd_status cd_more_reduce_run(cd_op_ctx *c);
cd_status cd_more_expand_infer(cd_op_ctx *c);
cd_status cd_more_expand_run(cd_op_ctx *c);
cd_status cd_more_gather_infer(cd_op_ctx *c);
cd_status cd_more_gather_run(cd_op_ctx *c);
cd_status cd_more_pixel_shuffle_infer(cd_op_ctx *c);
cd_status cd_more_pixel_shuffle_run(cd_op_ctx *c);
cd_status cd_more_grid_sampler_infer(cd_op_ctx *c);
cd_status cd_more_grid_sampler_run(cd_op_ctx *c);
cd_status cd_more_assign_value_infer(cd_op_ctx *c);
cd_status cd_more_assign_value_run(cd_op_ctx *c);
cd_status cd_more_topk_infer(cd_op_ctx *c);
cd_status cd_more_topk_run(cd_op_ctx *c);
cd_status cd_more_unbind_infer(cd_op_ctx *c);
cd_status cd_more_unbind_run(cd_op_ctx *c);
cd_status cd_more_gather_nd_infer(cd_op_ctx *c);
cd_status cd_more_gather_nd_run(cd_op_ctx *c);
cd_status cd_nn_batch_norm_infer(cd_op_ctx *c);
cd_status cd_nn_batch_norm_run(cd_op_ctx *c);

#define W CD_OPF_WRITES_ALL
#define CMP(name)                                                                                                      \
    { name, cd_more_compare_infer, cd_more_compare_run, CD_OPF_SHAPE | W, NULL, NULL }
#define RED(name)                                                                                                      \
    { name, cd_more_reduce_infer, cd_more_reduce_run, W, NULL, NULL }
#define UN(name)                                                                                                       \
    { name, cd_more_unary_infer, cd_more_unary_run, W, NULL, NULL }

static const cd_op_def k_more_defs[] = {
    UN("sin"),
    UN("cos"),
    UN("tan"),
    UN("asin"),
    UN("acos"),
    UN("atan"),
    UN("pow"),
    /* integer shape chains compare, gather and expand: CD_OPF_SHAPE runs them at plan time */
    CMP("greater_than"),
    CMP("greater_equal"),
    CMP("less_than"),
    CMP("less_equal"),
    CMP("equal"),
    CMP("not_equal"),
    {"lrn", cd_more_lrn_infer, cd_more_lrn_run, W, NULL, NULL},
    RED("reduce_max"),
    RED("reduce_mean"),
    RED("reduce_sum"),
    RED("reduce_min"),
    {"expand", cd_more_expand_infer, cd_more_expand_run, CD_OPF_SHAPE | W, NULL, NULL},
    {"expand_v2", cd_more_expand_infer, cd_more_expand_run, CD_OPF_SHAPE | W, NULL, NULL},
    {"tile", cd_more_expand_infer, cd_more_expand_run, CD_OPF_SHAPE | W, NULL, NULL},
    {"assign_value", cd_more_assign_value_infer, cd_more_assign_value_run, CD_OPF_SHAPE | W, NULL, NULL},
    {"gather", cd_more_gather_infer, cd_more_gather_run, CD_OPF_SHAPE | W, NULL, NULL},
    {"gather_nd", cd_more_gather_nd_infer, cd_more_gather_nd_run, CD_OPF_SHAPE | W, NULL, NULL},
    {"pixel_shuffle", cd_more_pixel_shuffle_infer, cd_more_pixel_shuffle_run, W, NULL, NULL},
    {"grid_sampler", cd_more_grid_sampler_infer, cd_more_grid_sampler_run, W, NULL, NULL},
    {"top_k", cd_more_topk_infer, cd_more_topk_run, W, NULL, NULL},
    {"top_k_v2", cd_more_topk_infer, cd_more_topk_run, W, NULL, NULL},
    {"unbind", cd_more_unbind_infer, cd_more_unbind_run, CD_OPF_SHAPE | W, NULL, NULL},
    {"sync_batch_norm", cd_nn_batch_norm_infer, cd_nn_batch_norm_run, 0, NULL, NULL},
};

const cd_op_table cd_ops_more = {k_more_defs, (int)(sizeof k_more_defs / sizeof k_more_defs[0])};
