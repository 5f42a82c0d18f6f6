/* Helpers shared by the CPU op kernels (ops_shape.c, ops_basic_eltwise.c, ops_more_*.c) and,
 * for what must agree with them (Paddle's axis broadcasting, the op codes the kernels of
 * kernels/math.cl take), by the OpenCL dispatchers. */
#ifndef CD_CPU_OPS_UTIL_H
#define CD_CPU_OPS_UTIL_H
#include "engine/ops.h"

#define CD_OPS_MAXV 64 /* longest attribute/tensor list accepted (rank is at most CD_MAX_RANK) */

/* Element i of a float32 or float16 buffer, as float. */
static inline float cd_ops_ldf(const void *p, cd_dtype t, int64_t i) {
    return t == CD_F16 ? (float)((const _Float16 *)p)[i] : ((const float *)p)[i];
}
static inline bool cd_ops_is_float(cd_dtype t) { return t == CD_F32 || t == CD_F16; }

/* Input slot `in` and output slot `out` (index 0), failing when either is not connected. */
cd_status cd_ops_need_io(cd_op_ctx *c, const char *in, const char *out, cd_value **x, cd_value **o);
/* Fails (unsupported) unless x holds float32 or float16. */
cd_status cd_ops_need_float(cd_op_ctx *c, const cd_value *x);

/* Integer values (at most CD_OPS_MAXV) of a plan-time int32/int64 tensor. */
cd_status cd_ops_tensor_ints(cd_op_ctx *c, const cd_value *v, const char *slot, int64_t *out, int *n);
/* Values of a list slot of 1-element tensors (ShapeTensor, StartsTensorList, ...); CD_OK with
 * *n = 0 when the slot is absent or empty. */
cd_status cd_ops_list_ints(cd_op_ctx *c, const char *slot, int64_t *out, int *n);
/* INT `axis` (0), overridden by a 1-value tensor in `slot`, normalised for `rank`; `what`
 * names it in the message ("axis", "gather axis"). */
cd_status cd_ops_axis(cd_op_ctx *c, const char *slot, const char *what, int rank, int64_t *axis);

/* Paddle's legacy axis broadcasting (docs/nb-format.md §7.0): aligns X's and Y's dims to the larger
 * rank r into ax[0..r) and ay[0..r), the smaller operand placed at `axis` (-1: trailing; below
 * -1: counted from the end) and padded with 1s. Returns 0, or -1 when `axis` cannot place the
 * smaller operand inside the larger one. */
int cd_bcast_align(const cd_shape *x, const cd_shape *y, int64_t axis, int64_t ax[CD_MAX_RANK],
                   int64_t ay[CD_MAX_RANK]);

/* Op codes of ops_more_math.c, the numbering kernels/math.cl uses too (-1: not such an op):
 * unary 0 sin .. 5 atan, 6 pow; compare 0 greater_than .. 5 not_equal; reduce 0 sum, 1 mean,
 * 2 max, 3 min. */
int cd_more_unary_code(const char *t);
int cd_more_compare_code(const char *t);
int cd_more_reduce_code(const char *t);
#endif
