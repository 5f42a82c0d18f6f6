/* Private to the OpenCL backend (backend_cl.c and its backend_cl_*.c parts): the runtime
 * state and the steps the parts share. Not a module interface. */
#ifndef CD_BACKEND_CL_PRIV_H
#define CD_BACKEND_CL_PRIV_H
#include "backends/opencl/backend_cl.h"
#include "backends/opencl/loader.h"
#include "backends/cpu/ops_int8.h"

typedef struct clbuf { /* a device buffer shared by identity-aliased tensors */
    cl_mem mem;
    size_t bytes;
    int refs;
} clbuf;

typedef struct clprog {
    char family[64];
    cl_program prog; /* NULL when the build failed */
    char *why;       /* first log line of a failed build */
    char *log;
    int n_k, cap_k;
    struct {
        char name[64];
        cl_kernel k;
    } * kernels;
} clprog;

enum { MODE_FEED, MODE_IDENTITY, MODE_KERNEL, MODE_HOST, MODE_FALLBACK, MODE_ARM_INT8 };
/* How op i of plan runs on this backend (MODE_*), and its kernel family when MODE_KERNEL. */
int cd_cl_op_mode(const cd_plan *plan, const cd_backend_opts *o, int i, const cd_cl_op_def **cldef);

typedef struct clrt {
    cd_backend *b;
    cd_clfn cl;
    cd_cl_search search;
    cl_platform_id pid;
    cl_device_id dev;
    cd_cl_devinfo info;
    cl_context ctx;
    cl_command_queue q;
    cd_cl_cache cache;
    cd_cl_variant variant;
    char variant_note[256];
    const cd_plan *plan;
    int nt;
    clbuf **bufs;         /* per tensor id */
    cd_shape *shape;      /* current shape per tensor (dynamic ops shrink it) */
    cd_value *host;       /* scratch host values for fallback ops */
    int *mode;            /* per op */
    char host_kernel[64]; /* the CPU int8 kernel that ran the last MODE_ARM_INT8 op */
    const cd_cl_op_def **cldef;
    int n_prog, cap_prog;
    clprog *progs;
    /* per op in flight */
    cl_event *ev;
    int n_ev, cap_ev;
    cl_mem *scratch;
    int n_scr, cap_scr;
    cd_cl_phase_fn phase;
    void *phase_user;
    int cur_op; /* last op run_op was called for (read-back phase records) */
} clrt;

static inline void clrt_phase(clrt *r, int op, const char *kernel, const char *ph) {
    if (r->phase) r->phase(r->phase_user, op, kernel, cd_cl_variant_name(r->variant), ph);
}

static inline const char *clrt_tname(const clrt *r, int id) { return r->plan->g->tensors[id].name; }

/* backend_cl_buffers.c: device buffers per tensor, read-back, completion of an op's work. */
size_t clrt_tensor_bytes(const clrt *r, int id);
void clrt_buf_unref(clrt *r, int id);
cd_status clrt_buf_new(clrt *r, int id, size_t bytes, const void *init, cd_error *err);
/* Device buffer of a tensor; parameters are uploaded on first use. */
cd_status clrt_buf_get(clrt *r, int id, cl_mem *out, cd_error *err);
cd_status clrt_read_dev(clrt *r, int id, void *dst, size_t bytes, cd_error *err);
/* Waits for the op's work and releases its events and scratch; returns device time. */
cd_status clrt_finish_op(clrt *r, double *kernel_us, cd_error *err);
void clrt_release_op_state(clrt *r);

/* backend_cl_host.c: ops the host computes inside the OpenCL run. */
/* Runs op i with its CPU kernel: inputs come down from the device, outputs go back up. */
cd_status clrt_run_on_host(clrt *r, int i, cd_error *err);
/* Output = input: the output shares the input's device buffer (no copy). */
cd_status clrt_run_identity(clrt *r, int i, bool *need_host, cd_error *err);

/* backend_cl_dispatch.c: programs per family, the cl_ops callbacks, the vtable's run_op. */
cd_status clrt_run_op(cd_backend *b, int i, cd_op_report *rep, cd_error *err);
#endif
