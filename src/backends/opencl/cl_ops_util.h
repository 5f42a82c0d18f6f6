/* Private helpers of the OpenCL op dispatchers (cl_ops_*.c): tensor lookup, argument
 * building, error messages naming the op, fused-activation parsing shared with the CPU
 * kernels, launch geometry. */
#ifndef CD_CL_OPS_UTIL_H
#define CD_CL_OPS_UTIL_H
#include "backends/opencl/cl_ops.h"

/* Fails with "op #12 conv2d_3 (conv2d): <message>". */
cd_status clu_fail(cd_cl_ctx *c, cd_error *err, cd_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Tensor id of slot[idx] (-1 when absent) and its plan metadata (NULL when absent). */
const cd_value *clu_meta(cd_cl_ctx *c, int tid);
int clu_in(cd_cl_ctx *c, const char *slot, int idx);
int clu_out(cd_cl_ctx *c, const char *slot, int idx);
/* Required input/output: fails naming the slot when missing. */
cd_status clu_need_in(cd_cl_ctx *c, const char *slot, int idx, int *tid, cd_error *err);
cd_status clu_need_out(cd_cl_ctx *c, const char *slot, int idx, int *tid, cd_error *err);
/* Device buffer of a tensor; fails when the runtime has none. */
cd_status clu_buf(cd_cl_ctx *c, int tid, cl_mem *out, cd_error *err);

/* A cd_op_ctx over the plan metadata, for the engine's attribute helpers (no data). */
void clu_op_ctx(cd_cl_ctx *c, cd_op_ctx *oc, cd_error *err);

/* Whether a tensor holds floats of the run (F32 or F16 as planned). Integer tensors go to
 * the CPU (the dispatcher returns CD_E_UNSUPPORTED with the reason). */
cd_status clu_need_float(cd_cl_ctx *c, int tid, const char *what, cd_error *err);

/* Argument list builder: the first failure sticks, later calls do nothing. */
typedef struct {
    cd_cl_ctx *c;
    cl_kernel k;
    cl_uint i;
    cd_status st;
    cd_error *err;
} clu_args;
void clu_args_init(clu_args *a, cd_cl_ctx *c, cl_kernel k, cd_error *err);
void clu_mem(clu_args *a, cl_mem m);  /* NULL gives a NULL pointer in the kernel */
void clu_int(clu_args *a, int64_t v); /* range-checked to int */
void clu_flt(clu_args *a, double v);
void clu_int8(clu_args *a, const int64_t v[8]);

/* Looks up kernel `name` of kernels/<family>.cl (after the buffers) and starts its argument
 * list with the device buffers of tensors tids[0..n) in that order (-1: a NULL buffer), at most
 * 8. CLU_BEGIN takes the tensor ids as its last arguments. */
cd_status clu_begin(clu_args *a, cd_cl_ctx *c, const char *family, const char *name, const int *tids, int n,
                    cd_error *err);
#define CLU_BEGIN(a, c, family, name, err, ...)                                                                        \
    clu_begin(a, c, family, name, (const int[]){__VA_ARGS__}, (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)), \
              err)
/* Launches the kernel of a finished argument list over n work-items (clu_launch1), or returns
 * the list's first failure. */
cd_status clu_end(clu_args *a, int64_t n);

/* Checks that a count fits the kernels' int indexing. */
cd_status clu_fits(cd_cl_ctx *c, int64_t n, const char *what, cd_error *err);
/* Rounds x up to a multiple of m. */
static inline size_t clu_round(size_t x, size_t m) { return (x + m - 1) / m * m; }
/* Launches a 1-D kernel over n work-items (local size left to the driver). */
cd_status clu_launch1(cd_cl_ctx *c, cl_kernel k, int64_t n, cd_error *err);

/* Padding of conv/pool per docs/nb-format.md §7.0 into pads[4] = top, bottom, left, right.
 * ksize = filter (conv) or window (pool) sizes; dil may be NULL (pool); SAME sets dil to 1. */
cd_status clu_pads(cd_cl_ctx *c, const int64_t in_hw[2], const int64_t k[2], const int64_t stride[2], int64_t dil[2],
                   int64_t pads[4], cd_error *err);
/* Prelu alpha mode from its string: 0 all, 1 channel, 2 element; -1 unknown. */
int clu_prelu_mode(const char *s);
/* Copies a whole tensor buffer (reshape-like ops). */
cd_status clu_copy(cd_cl_ctx *c, int src, int dst, cd_error *err);
#endif
