/* The rnn family table: Paddle's fused multi-layer `rnn` op (see ops_rnn.c). */
#include "engine/ops.h"

cd_status cd_rnn_infer(cd_op_ctx *c);
cd_status cd_rnn_run(cd_op_ctx *c);
double cd_rnn_macs(const cd_op_ctx *c);
cd_status cd_rnn_prepare(cd_op_ctx *c, void **state);

static const cd_op_def k_rnn_defs[] = {
    {"rnn", cd_rnn_infer, cd_rnn_run, 0, cd_rnn_macs, cd_rnn_prepare},
};

const cd_op_table cd_ops_rnn = {k_rnn_defs, (int)(sizeof k_rnn_defs / sizeof k_rnn_defs[0])};
