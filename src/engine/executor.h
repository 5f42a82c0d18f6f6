/* The executor walks the plan's ops in order, runs each on a backend and hands the
 * selected outputs to a probe sink right after the op ran (never looked up by name later,
 * because names are reused). */
#ifndef CD_EXECUTOR_H
#define CD_EXECUTOR_H
#include "engine/backend.h"
#include "engine/forcing.h"

typedef struct cd_probe_sink {
    void *user;
    /* Called for each output tensor of a probed op, right after the op ran.
     * host holds the tensor in its plan dtype. */
    cd_status (*hit)(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                     cd_error *err);
    /* Called after every op (probed or not), e.g. for progress; may be NULL. */
    void (*op_done)(void *user, int op_index, const cd_op_report *rep);
} cd_probe_sink;

/* What a settle callback found (its own summary, carried to on_settled unread). */
typedef struct cd_settle_info {
    double err, bound, ratio;
    int64_t worst;
    int32_t ratio_upper;
    int32_t local; /* 1: the local re-run's output, checked where it ran (not stored) */
    int64_t n;     /* elements; and the comparison's summary */
    double max_abs, cosine, rmse, ref_rms, ref_absmax;
} cd_settle_info;

typedef struct cd_exec_opts {
    const bool *probe_mask;  /* per op: capture its outputs; NULL = none */
    volatile int *stop_flag; /* set by a signal handler to stop between ops; may be NULL */
    /* Local check (docs/verdicts.md). record: the free run keeps, in this record, every
     * activation that a probed op reads. force: after the free run (or instead of it, with
     * local_only) a local pass runs every probed op once more on the recorded values of its
     * inputs and hands its outputs to local_sink. Ops whose inputs were not all recorded, or
     * were recorded with another shape (dynamic shapes after nms), are skipped. */
    cd_forcing *record;
    /* record_sink (instead of record, e.g. in an isolated run's child): the same activations
     * handed to this sink, except the outputs of probed ops, which the probe sink already
     * hears (its receiver records those itself) */
    cd_probe_sink *record_sink;
    const cd_forcing *force;
    bool local_only;
    cd_probe_sink *local_sink;
    /* settle (with force, not local_only): asked with each probed output of the free run;
     * true when that output already lies within its op's local bound of the recorded value,
     * so the local pass need not run the op again ("settled by the free run",
     * docs/verdicts.md). on_settled hears of each op the local pass so skips, and of each op
     * the local pass re-ran whose outputs settle the same way (info.local = 1): those are not
     * handed to local_sink. */
    bool (*settle)(void *user, const cd_forcing *force, int op, int tensor, const cd_value *out, cd_settle_info *info);
    void *settle_user;
    void (*on_settled)(void *user, int op, const cd_settle_info *info);
    void *on_settled_user;
} cd_exec_opts;

/* Whether op i of the plan reads activation tensor id (not a parameter): what the record
 * keeps and the local pass replaces. */
bool cd_exec_is_activation(const cd_plan *plan, int id);

/* Whether output slot `slot` of an op of type op_type carries nothing for inference (XShape,
 * rnn's DropoutState/Reserve, batch_norm's running statistics and saved moments): never probed,
 * by the executor nor by the engines' instrumentation. */
bool cd_exec_training_only(const char *op_type, const char *slot);

/* inputs[k] is the host value of model input k. */
cd_status cd_execute(const cd_plan *plan, cd_backend *b, const cd_value *inputs, const cd_exec_opts *opts,
                     cd_probe_sink *sink, cd_error *err);
#endif
