/* Backend interface: one vtable per op-by-op backend (cpu, opencl); the executor drives it op
 * by op. Backends are registered by name in src/backends/registry.h, which also holds the
 * whole-model engines. */
#ifndef CD_BACKEND_H
#define CD_BACKEND_H
#include "engine/plan.h"

/* Where and how an op ran; stored as dataset attributes in the dump. */
typedef struct cd_op_report {
    double elapsed_us; /* host wall time of run_op (includes queue/finish) */
    double kernel_us;  /* device time from profiling events, -1 when not measured */
    char where[16];    /* "cpu", "opencl", "cpu-fallback", "host" */
    char kernel[64];   /* kernel name / variant that ran, e.g. "conv2d_3x3:fp16" */
    char note[256];    /* why a fallback happened, etc. */
} cd_op_report;

typedef struct cd_backend_opts {
    cd_precision prec;
    int threads;
    /* OpenCL choices (ignored by cpu) */
    const char *cl_lib;
    const char *cl_platform;
    const char *cl_device;
    const char *kernel_dir;
    const char *cache_dir;
    bool no_cache;
    bool fp16_compute; /* allow half arithmetic where cl_khr_fp16 exists */
    /* CPU: int8 layers (ARM int8 kernel records) in integer arithmetic as Paddle-Lite's ARM
     * kernels do (backends/cpu/ops_int8.h); false: dequantized weights in float */
    bool int8_arm;
    bool no_quant;    /* cpu: calib fake quantization as identity (cd_op_ctx.no_quant) */
    bool int8_on_arm; /* opencl: ops with int8 kernels run on the CPU int8 kernels, as
                                Paddle-Lite places them (no OpenCL int8 kernels; docs/int8.md) */
    bool isolate;     /* opencl: run in a child process (default; --no-isolate) */
    /* --backend-opt NAME:key=value entries of every backend, as given; each backend reads its
     * own (cd_backend_opt) */
    const char *const *kv;
    int n_kv;
} cd_backend_opts;

/* The last value of --backend-opt backend:key=value, or NULL. */
const char *cd_backend_opt(const cd_backend_opts *bo, const char *backend, const char *key);

typedef struct cd_backend cd_backend;
typedef struct cd_backend_vt {
    const char *name;
    /* Compile kernels, upload params. plan outlives the backend. */
    cd_status (*prepare)(cd_backend *b, const cd_plan *plan, cd_error *err);
    /* Host input value for model input tensor id (dtype as in plan). */
    cd_status (*set_input)(cd_backend *b, int tensor_id, const cd_value *host, cd_error *err);
    /* Runs op i. Inputs are live; the backend allocates outputs. */
    cd_status (*run_op)(cd_backend *b, int op_index, cd_op_report *rep, cd_error *err);
    /* A tensor on the host in its plan dtype (f16 stays half bits). The callee either
     * allocates host->data (owned) or lends its own memory (owned=false, the CPU backend);
     * the caller uses it before the next run_op/release and calls cd_value_release. */
    cd_status (*read)(cd_backend *b, int tensor_id, cd_value *host, cd_error *err);
    /* The tensor is no longer needed by later ops. */
    void (*release)(cd_backend *b, int tensor_id);
    void (*close)(cd_backend *b);
    /* Describes device/driver for the dump (may be NULL). */
    void (*describe)(cd_backend *b, char *device, size_t dn, char *driver, size_t drn);
} cd_backend_vt;

struct cd_backend {
    const cd_backend_vt *vt;
    cd_backend_opts opts;
    void *impl;
};

cd_status cd_cpu_backend_open(const cd_backend_opts *opts, cd_backend **out, cd_error *err);
/* OpenCL backend in this process (the isolating child is engine/isolate.h). */
cd_status cd_opencl_backend_open(const cd_backend_opts *opts, cd_backend **out, cd_error *err);
void cd_backend_close(cd_backend *b);
#endif
