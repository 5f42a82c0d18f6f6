/* What a backend is, for the registry (src/backends/registry.h) and for the backends that
 * define one: the definition (name, options, runner, in-process instance, placement), the
 * runner's request and result, and the plain in-process runner the op-by-op backends share.
 * Lives in engine/ so that a backend can define itself without including the registry, which
 * lists every backend and so sits above them all (docs/design.md §2). */
#ifndef CD_ENGINE_BACKEND_DEF_H
#define CD_ENGINE_BACKEND_DEF_H
#include <stdbool.h>
#include "engine/crash.h"
#include "engine/executor.h"

/* One key of --backend-opt NAME:key=value. */
typedef struct cd_backend_optdef {
    const char *key;
    const char *value; /* the value's form, e.g. "DIR", "0|1" */
    const char *help;
} cd_backend_optdef;

/* A run attribute an engine reports for the dump (/runs/<run> attributes). */
typedef struct cd_run_attr {
    char key[40];
    bool is_num;
    double num;
    char str[512];
} cd_run_attr;
#define CD_RUN_MAX_ATTRS 32

/* What a runner needs: the plan and inputs, the executor's options (probe mask, record,
 * forcing, settling), the sinks, the backend's options; engines also the model file. */
typedef struct cd_runner_req {
    const char *backend; /* the registered name (as given: aliases resolved) */
    const cd_plan *plan;
    const cd_value *inputs; /* model inputs, feed col order */
    const cd_exec_opts *xo; /* probe_mask, stop_flag, record, force, local sink, settle */
    cd_probe_sink *sink;    /* the free run's probe hits; NULL with local_only */
    const cd_backend_opts *bo;
    const char *model_path, *model_sha256;
    const char *work_dir; /* temporary files of engines go below it (the --out folder) */
    double timeout_s;     /* <= 0: none */
    bool quiet;
    bool progress;        /* progress lines on stderr (a terminal, or --progress) */
    const char *run_name; /* the dump run's name, for those lines; may be NULL */
    /* what the backend's prestart gave for this run (NULL: none); run() consumes it, used when
     * the request is the one it was started for, else dropped */
    void *prestart;
} cd_runner_req;

typedef struct cd_runner_result {
    char device[256], driver[512];
    cd_crash_info crash; /* crashed child or engine: what is known of where */
    int n_hits;          /* engines: probe hits handed to the sink */
    bool has_hits;       /* n_hits is meaningful (else the session counts its sink) */
    cd_run_attr attrs[CD_RUN_MAX_ATTRS];
    int n_attrs;
} cd_runner_result;

/* The run attribute every runner records: the arithmetic the backend really computed in, "fp16"
 * (half arithmetic) or "fp32" (float arithmetic, whatever the storage), e.g. OpenCL asked for
 * --fp16-compute on a device without cl_khr_fp16 records "fp32". The verdict's bounds use it. */
#define CD_RUN_ATTR_COMPUTE "compute"
/* An engine's run: the probed ops (indices, comma-separated) whose outputs it does not fetch by
 * design (constants its converter folds into parameters, integer tensors); the comparison does
 * not count the other run's tensors of those ops as in one run only. */
#define CD_RUN_ATTR_NOT_FETCHED "not_fetched_ops"
void cd_run_attr_str(cd_runner_result *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cd_run_attr_num(cd_runner_result *r, const char *key, double v);

/* Where one op will run on a backend, without running it. */
typedef struct cd_op_place {
    char where[32];  /* "cpu", "opencl", "cpu-fallback", "arm", "x86", "host", "?" */
    char kernel[96]; /* kernel or family */
    char why[256];   /* fallback reason, or how it was decided */
    bool supported;  /* false: the backend cannot run it (the run would fail) */
} cd_op_place;

/* Which Winograd convolutions an engine's CPU may run (cd_backend_def.winograd; the local check
 * holds its convolutions to the Winograd bound, docs/verdicts.md "Winograd convolutions"). */
typedef enum cd_wino_kind {
    CD_WINO_NONE = 0,
    /* MNN's CPU (ConvolutionPackWinograd): any square k x k, k > 1, stride 1, dilation 1, not
     * depthwise; tiles 4, 6, 8 (6 at most in fp16), interpolation points 0, 1, -1, 2, -2, 3, -3 */
    CD_WINO_MNN,
    /* Paddle-Lite ARM (WinogradConv, fp32): 3x3 stride 1, dilation 1, one group; tiles 4, 6, 8
     * by the outputs per thread, points 0, +-1, +-2 and for the 8-tile +-1/2 */
    CD_WINO_PADDLE_ARM,
    /* Paddle-Lite's OpenCL image conv (conv_image_compute.cc): F(2,3) for a 3x3 stride 1,
     * dilation 1 conv of one group with at least 32 input and 32 output channels */
    CD_WINO_PADDLE_OPENCL,
} cd_wino_kind;

typedef struct cd_backend_def {
    const char *name;
    const char *aliases[3]; /* NULL-terminated */
    const char *summary;    /* one line for --help and doctor */
    /* can run one layer on given inputs (the local check, settling, pins); false for
     * whole-model engines */
    bool op_by_op;
    /* an OpenCL backend: its fp16 runs may use half arithmetic (variant fp16-compute) */
    bool opencl;
    /* runs int8 layers in float with dequantized weights: the CPU's local reference for it uses
     * the float path too */
    bool float_int8;
    /* the reference role (docs/design.md §5): the default run A, and the backend of the runs a
     * differential run makes for itself (the local reference, the float32 golden run, the
     * unquantized model); exactly one registered backend has it */
    bool reference;
    /* a whole-model engine whose softmax uses its own approximate exp: that exp's relative
     * error (cd_arith.exp_rel; 0: an accurate exp) */
    double exp_rel;
    /* a whole-model engine whose CPU may run convolutions as Winograd (cd_wino_kind) */
    int winograd;
    const cd_backend_optdef *opts; /* {NULL}-terminated */
    /* Fills the backend's fields of bo from its --backend-opt entries (bo->kv); may be NULL. */
    cd_status (*apply_opts)(cd_backend_opts *bo, cd_error *err);
    /* Runs the model once (free run, and/or the local pass of xo). */
    cd_status (*run)(const cd_runner_req *q, cd_runner_result *res, cd_error *err);
    /* op-by-op backends: an in-process instance (diag pins, trials); NULL for engines */
    cd_status (*open)(const cd_backend_opts *bo, cd_backend **out, cd_error *err);
    /* Where each op of the plan will run (out: plan->g->n_ops entries), without running the
     * model. Engines may do their preparation (conversion, placement) for this. */
    cd_status (*placement)(const cd_runner_req *q, cd_op_place *out, char *note, size_t note_len, cd_error *err);
    /* Whether the backend can start here, asked before any run starts and by `cldiff doctor`:
     * the OpenCL library and device, the Paddle-Lite SDK, its runner and qemu, the wheel and its
     * Opt where the model's route needs them. q->bo is set; q->plan may be NULL (doctor: no
     * model), then what every model needs is checked. CD_OK, or the error the run would end
     * with (CD_E_BACKEND saying what to install or pass). NULL: always available. */
    cd_status (*available)(const cd_runner_req *q, cd_error *err);
    /* Starts the run q ahead, in place of available(): the same answer, and *handle (NULL when
     * nothing was started) for q->prestart of that run, or for drop(). q is the run's request
     * as it will be made; its sink may be NULL. NULL: no such start. */
    cd_status (*prestart)(const cd_runner_req *q, void **handle, cd_error *err);
    void (*drop)(void *handle);
    /* The answer of a prestart that did not wait for it (a device found before): CD_OK, or the
     * error available() gives (then, and when the start decided nothing, *dropped: the handle
     * is gone). NULL: prestart always waits. */
    cd_status (*check)(void *handle, bool *dropped, cd_error *err);
} cd_backend_def;

/* The in-process runner of op-by-op backends: open def's backend in this process and run the
 * executor. */
cd_status cd_runner_inproc(const cd_backend_def *def, const cd_runner_req *q, cd_runner_result *res, cd_error *err);
#endif
