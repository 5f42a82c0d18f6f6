/* What is known of a run that died: a crashed or hung OpenCL child (src/backends/opencl/isolate.h)
 * or a whole-model engine that aborted (src/backends/paddlelite/): which op, layer, kernel,
 * phase and signal. Shared by every runner (engine/backend_def.h) and the reports. */
#ifndef CD_CRASH_H
#define CD_CRASH_H
#include <stdbool.h>
#include <stddef.h>
#include "engine/plan.h"

typedef struct cd_crash_info {
    bool crashed;         /* the child died by a signal, exited without a result, or timed out */
    bool timed_out;       /* killed by the parent after timeout_s */
    int signal;           /* signal that ended the child (SIGKILL after a timeout), 0 if none */
    char signal_name[16]; /* "SIGABRT" */
    int exit_status;      /* exit status when it exited without a result, else -1 */
    int op_index;         /* op in flight, -1 when the crash came before the first op */
    char layer[128];      /* op name, e.g. "conv2d_3" */
    char op_type[64];
    char kernel[64];        /* kernel family (build) or kernel name (run), or tensor (read-back) */
    char variant[16];       /* "fp32", "fp16", "fp16-compute" */
    char phase[16];         /* "setup", "prepare", "build", "run", "read-back" */
    int ops_done;           /* ops that completed before the crash */
    int hits;               /* probe hits received (layers kept in the dump) */
    double elapsed_s;       /* wall time of the child until it ended */
    char stderr_tail[1024]; /* last lines the driver printed (e.g. "LLVM ERROR: Cannot select") */
} cd_crash_info;

/* Formats the crash as the one-line message a runner puts in err. */
void cd_crash_describe(const cd_crash_info *c, const cd_plan *plan, char *buf, size_t n);
#endif
