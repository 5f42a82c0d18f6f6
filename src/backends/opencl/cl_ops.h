/* Contract between the OpenCL runtime (device, buffers, programs, fallback) and the op
 * dispatchers (one per op family, beside the kernels/<family>.cl they launch). */
#ifndef CD_CL_OPS_H
#define CD_CL_OPS_H
#include "backends/opencl/cl_api.h"
#include "engine/plan.h"

/* Precision variants of every kernel source (macros set by the runtime at build time):
 *   FP32         -DCD_FP32        REAL=float storage, float arithmetic
 *   FP16         -DCD_FP16        half storage via vload_half/vstore_half, float arithmetic
 *   FP16_COMPUTE -DCD_FP16_COMPUTE half storage and half arithmetic (needs cl_khr_fp16)
 * Kernel sources include no headers; each begins with the shared macro prelude the runtime
 * prepends (kernels/common.h.cl): LOAD(p,i) -> ACC value, STORE(p,i,v), types REAL/ACC. */
typedef enum { CD_CLV_FP32 = 0, CD_CLV_FP16 = 1, CD_CLV_FP16_COMPUTE = 2 } cd_cl_variant;
const char *cd_cl_variant_name(cd_cl_variant v);

typedef struct cd_cl_ctx cd_cl_ctx;
struct cd_cl_ctx {
    const cd_clfn *cl;
    cl_context context;
    cl_command_queue queue; /* created with CL_QUEUE_PROFILING_ENABLE */
    cl_device_id device;
    bool cpu_device; /* CL_DEVICE_TYPE_CPU (PoCL ...): CPU-shaped kernels where they exist */
    const cd_plan *plan;
    const cd_op *op;
    int op_index;
    cd_cl_variant variant;
    /* Device buffer of tensor id (activations and params, allocated by the runtime before
     * enqueue: outputs sized from the plan; dtype per plan: CD_F32 -> float, CD_F16 ->
     * half bits, integer dtypes as stored). */
    cl_mem (*buf)(cd_cl_ctx *c, int tensor_id);
    /* Builds (or fetches from cache) kernels/<family>.cl in c->variant and returns the named
     * kernel. Build failures return CD_E_UNSUPPORTED with the build log in err; the runtime
     * then runs the op on the CPU and records why. */
    cd_status (*kernel)(cd_cl_ctx *c, const char *family, const char *name, cl_kernel *out, cd_error *err);
    /* Enqueues a kernel (1-3 dims, local may be NULL) and records its event for profiling. */
    cd_status (*launch)(cd_cl_ctx *c, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local,
                        cd_error *err);
    /* Scratch device buffer valid until the op finishes. */
    cl_mem (*scratch)(cd_cl_ctx *c, size_t bytes, cd_error *err);
    void *rt; /* runtime private */
};

/* One dispatcher per op type. enqueue sets args and launches; it must not block. */
typedef struct cd_cl_op_def {
    const char *type;
    const char *family; /* kernels/<family>.cl */
    cd_status (*enqueue)(cd_cl_ctx *c, cd_error *err);
} cd_cl_op_def;

/* Registry over all families (cl_ops_registry.c); NULL when the op has no kernel. */
const cd_cl_op_def *cd_cl_op_find(const char *type);
typedef struct {
    const cd_cl_op_def *defs;
    int n;
} cd_cl_op_table;

/* Helper for dispatchers: sets kernel arg i from a value, failing with the op named. */
cd_status cd_cl_arg(cd_cl_ctx *c, cl_kernel k, cl_uint i, size_t size, const void *val, cd_error *err);
#endif
