/* The executor walks the plan's ops in order, runs each on a backend and hands the
 * selected outputs to a probe sink right after the op ran (never looked up by name later,
 * because names are reused). */
#ifndef CD_EXECUTOR_H
#define CD_EXECUTOR_H
#include "engine/backend.h"

typedef struct cd_probe_sink {
    void *user;
    /* Called for each output tensor of a probed op, right after the op ran.
     * host holds the tensor in its plan dtype. */
    cd_status (*hit)(void *user, int op_index, int tensor_id, const cd_value *host,
                     const cd_op_report *rep, cd_error *err);
    /* Called after every op (probed or not), e.g. for progress; may be NULL. */
    void (*op_done)(void *user, int op_index, const cd_op_report *rep);
} cd_probe_sink;

typedef struct cd_exec_opts {
    const bool *probe_mask;   /* per op: capture its outputs; NULL = none */
    volatile int *stop_flag;  /* set by a signal handler to stop between ops; may be NULL */
} cd_exec_opts;

/* inputs[k] is the host value of model input k. */
cd_status cd_execute(const cd_plan *plan, cd_backend *b, const cd_value *inputs,
                     const cd_exec_opts *opts, cd_probe_sink *sink, cd_error *err);
#endif
