/* Running the OpenCL backend in a child process, so that a driver which crashes (SIGSEGV,
 * SIGABRT inside clBuildProgram, "LLVM ERROR: Cannot select" on Mali) or hangs becomes a
 * finding: which op, layer, kernel, variant, phase and signal. The child runs cd_execute
 * and streams to the parent, through a pipe, a phase record before every risky step and
 * every probe hit and op report right after its op; the parent hands them to its own probe
 * sink, so everything captured before a crash is kept.
 *
 * Rules for callers: the parent must not have initialised the OpenCL driver before (a
 * forked child inherits no driver threads), and the probe sink runs in the parent only. */
#ifndef CD_CL_ISOLATE_H
#define CD_CL_ISOLATE_H
#include <stdbool.h>
#include "engine/crash.h"
#include "engine/backend_def.h"
#include "engine/executor.h"

/* What the child found out about its device, for the dump's run attributes. */
typedef struct cd_isolated_run {
    char device[256];
    char driver[512];
    cd_crash_info crash;
} cd_isolated_run;

/* Runs the plan on the OpenCL backend (opts) in a child process. timeout_s <= 0: no limit;
 * else the child is killed (SIGKILL) when the whole run takes longer. Returns CD_OK, the
 * child's own error (status and message as the child saw them, e.g. CD_E_BACKEND when no
 * OpenCL library was found), an error of the sink, or CD_E_CRASH with run->crash filled and
 * a message such as "SIGABRT in clBuildProgram of kernel conv (fp16) for op #12 conv2d_3
 * (conv2d)". The child's stderr is passed through to the parent's stderr. */
cd_status cd_run_isolated(const cd_plan *plan, const cd_backend_opts *opts, const cd_value *inputs,
                          const cd_exec_opts *xopts, cd_probe_sink *sink, double timeout_s, cd_isolated_run *run,
                          cd_error *err);

/* The OpenCL backend's runner in an isolated child (cd_run_isolated), as engine/backend_def.h's
 * runner interface. */
cd_status cd_runner_isolated(const cd_runner_req *q, cd_runner_result *res, cd_error *err);

/* The run's child started before the run (cd_backend_def.prestart): q as the run will have it,
 * its record (xo->force) shared (cd_forcing_new_shared) or absent. The child answers what the
 * availability probe answers (returned as it: a missing device is its error) and then prepares;
 * *handle stays NULL where no child was started (the run then forks its own); *answered: the
 * child answered, or crashed or hung before it could (as a probe's, that decides nothing). The handle goes
 * to the run (cd_runner_req.prestart), which uses it when the run is the same, or to
 * cd_runner_isolated_drop. */
cd_status cd_runner_isolated_prestart(const cd_runner_req *q, void **handle, bool *answered, cd_error *err);
void cd_runner_isolated_drop(void *handle);
/* A handle given before its child answered (the device choice found on an earlier run: the
 * answer memo in the program cache folder): waits for the answer. CD_OK, or the error the
 * availability probe gives; *dropped when the handle is gone (that error, or a child that
 * crashed or hung before it answered, which decides nothing). */
cd_status cd_runner_isolated_check(void *handle, bool *dropped, cd_error *err);
#endif
