/* Parameter preparation for a plan: every persistable tensor becomes a cd_value in the
 * run's dtype. Float records (F32, F16, F64) -> CD_F32 or CD_F16 (half bits, round to
 * nearest even). Integer records stay integer (INT32/INT64 index tables, BOOL, UINT8),
 * except INT8/INT16 weights, which are dequantized by the scales stored on the consuming
 * op (docs/nb-format.md §6.3 `<Slot><k>_scale`, §6.4 `<weight>_quant_scale`):
 *   conv2d/depthwise_conv2d Filter     scale per dim 0 (Cout)
 *   conv2d_transpose Filter            scale per output channel = dim 1 * groups
 *   fc W / mul Y / matmul(_v2) Y / lookup_table W   scale per N (last dim; the row dim of
 *                                      a transposed matmul Y; a 1-D weight is [1, N])
 *   any other op                       one scale, or one per dim 0
 * A scale list of length 1 applies to every element. w_f = (float)q * scale, computed in
 * float32 and then rounded to half for fp16 runs. The weight may reach its op through
 * io_copy_once/layout_once (OpenCL models: `<w>/target_trans`); the chain is followed. */
#ifndef CD_PARAMS_H
#define CD_PARAMS_H
#include "engine/ops.h"

/* meta has g->n_tensors entries; fills meta[id] for every persistable tensor (data owned
 * by meta, or borrowed from the graph when no conversion is needed). */
cd_status cd_params_prepare(const cd_graph *g, cd_precision prec, cd_value *meta, int64_t *param_bytes,
                            bool *dequantized, cd_error *err);
#endif
