/* The "shape" op family (backends/cpu/ops_shape.c). Every op is CD_OPF_SHAPE: the planner
 * evaluates it during planning whenever all its inputs are known, so integer shape chains
 * (shape -> slice -> fill_constant -> reshape2) resolve before the run. */
#include "engine/ops.h"

cd_status cd_shape_copy_run(cd_op_ctx *c);
cd_status cd_shape_reshape_infer(cd_op_ctx *c);
cd_status cd_shape_flatten_infer(cd_op_ctx *c);
cd_status cd_shape_squeeze_infer(cd_op_ctx *c);
cd_status cd_shape_unsqueeze_infer(cd_op_ctx *c);
cd_status cd_shape_assign_infer(cd_op_ctx *c);
cd_status cd_shape_transpose_infer(cd_op_ctx *c);
cd_status cd_shape_transpose_run(cd_op_ctx *c);
cd_status cd_shape_concat_infer(cd_op_ctx *c);
cd_status cd_shape_concat_run(cd_op_ctx *c);
cd_status cd_shape_stack_infer(cd_op_ctx *c);
cd_status cd_shape_stack_run(cd_op_ctx *c);
cd_status cd_shape_split_infer(cd_op_ctx *c);
cd_status cd_shape_split_run(cd_op_ctx *c);
cd_status cd_shape_slice_infer(cd_op_ctx *c);
cd_status cd_shape_slice_run(cd_op_ctx *c);
cd_status cd_shape_shape_infer(cd_op_ctx *c);
cd_status cd_shape_shape_run(cd_op_ctx *c);
cd_status cd_shape_fill_infer(cd_op_ctx *c);
cd_status cd_shape_fill_run(cd_op_ctx *c);
cd_status cd_shape_cast_infer(cd_op_ctx *c);
cd_status cd_shape_cast_run(cd_op_ctx *c);

#define S(name, infer, run)                                                                                            \
    { name, infer, run, CD_OPF_SHAPE, NULL, NULL }

static const cd_op_def k_defs[] = {
    S("reshape", cd_shape_reshape_infer, cd_shape_copy_run),
    S("reshape2", cd_shape_reshape_infer, cd_shape_copy_run),
    S("flatten", cd_shape_flatten_infer, cd_shape_copy_run),
    S("flatten2", cd_shape_flatten_infer, cd_shape_copy_run),
    S("flatten_contiguous_range", cd_shape_flatten_infer, cd_shape_copy_run),
    S("squeeze", cd_shape_squeeze_infer, cd_shape_copy_run),
    S("squeeze2", cd_shape_squeeze_infer, cd_shape_copy_run),
    S("unsqueeze", cd_shape_unsqueeze_infer, cd_shape_copy_run),
    S("unsqueeze2", cd_shape_unsqueeze_infer, cd_shape_copy_run),
    S("assign", cd_shape_assign_infer, cd_shape_copy_run),
    S("transpose", cd_shape_transpose_infer, cd_shape_transpose_run),
    S("transpose2", cd_shape_transpose_infer, cd_shape_transpose_run),
    S("concat", cd_shape_concat_infer, cd_shape_concat_run),
    S("stack", cd_shape_stack_infer, cd_shape_stack_run),
    S("split", cd_shape_split_infer, cd_shape_split_run),
    S("slice", cd_shape_slice_infer, cd_shape_slice_run),
    S("shape", cd_shape_shape_infer, cd_shape_shape_run),
    S("fill_constant", cd_shape_fill_infer, cd_shape_fill_run),
    S("fill_constant_batch_size_like", cd_shape_fill_infer, cd_shape_fill_run),
    S("fill_any_like", cd_shape_fill_infer, cd_shape_fill_run),
    S("fill_zeros_like", cd_shape_fill_infer, cd_shape_fill_run),
    S("cast", cd_shape_cast_infer, cd_shape_cast_run),
};

const cd_op_table cd_ops_shape = {k_defs, (int)(sizeof k_defs / sizeof k_defs[0])};
