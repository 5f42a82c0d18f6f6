/* The executor: prepares the backend, feeds inputs in the run dtype, runs ops in order,
 * hands probed outputs to the sink right after their op, and frees tensors after their
 * last reader. */
#include "engine/executor.h"
#include "util/fp16.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

void cd_backend_close(cd_backend *b) {
    if (b && b->vt && b->vt->close) b->vt->close(b);
}

/* Converts a host input (float32 for float tensors, as stored for integer ones) to the
 * plan's dtype for that tensor. */
static cd_status convert_input(const cd_plan *plan, int k, const cd_value *in, cd_value *out, cd_error *err) {
    const cd_graph *g = plan->g;
    int id = g->inputs[k];
    const cd_value *m = &plan->meta[id];
    char a[160], b[160];
    if (!in || (!in->data && cd_value_numel(in) != 0))
        return cd_err(err, CD_E_USAGE, "model input %d '%s' has no data", k, g->tensors[id].name);
    if (!cd_shape_eq(&in->shape, &m->shape))
        return cd_err(err, CD_E_MODEL, "model input %d '%s' has shape %s but the plan was built for %s", k,
                      g->tensors[id].name, cd_shape_str(&in->shape, a, sizeof a), cd_shape_str(&m->shape, b, sizeof b));
    memset(out, 0, sizeof *out);
    out->dtype = m->dtype;
    out->shape = m->shape;
    cd_status st = cd_value_alloc(out, err);
    if (st) return st;
    int64_t n = cd_value_numel(out);
    if (in->dtype == out->dtype) {
        if (out->nbytes) memcpy(out->data, in->data, out->nbytes);
    } else if (in->dtype == CD_F32 && out->dtype == CD_F16) {
        const float *f = in->data;
        uint16_t *h = out->data;
        for (int64_t i = 0; i < n; i++) h[i] = cd_float_to_half(f[i]);
    } else {
        /* integer <-> float conversions are exact for the index-sized values inputs carry */
        for (int64_t i = 0; i < n; i++) cd_value_set(out, i, cd_value_get(in, i));
    }
    return CD_OK;
}

/* Outputs that carry nothing for inference: XShape (reshape2, transpose2, flatten2, squeeze2...)
 * only carries the input's shape for training; rnn's DropoutState and Reserve are training
 * scratch (one zero element here, no host data in Paddle-Lite's ARM kernel); batch_norm's
 * running statistics. No dataset, no comparison row. */
bool cd_exec_training_only(const char *op_type, const char *slot) {
    if (!strcmp(slot, "XShape")) return true;
    if (!strcmp(op_type, "rnn")) return !strcmp(slot, "DropoutState") || !strcmp(slot, "Reserve");
    /* batch_norm in inference: MeanOut/VarianceOut are the running statistics unchanged,
     * SavedMean/SavedVariance/ReserveSpace training scratch (Paddle-Lite ARM leaves them unset) */
    if (!strcmp(op_type, "batch_norm") || !strcmp(op_type, "sync_batch_norm"))
        return !strcmp(slot, "MeanOut") || !strcmp(slot, "VarianceOut") || !strcmp(slot, "SavedMean") ||
            !strcmp(slot, "SavedVariance") || !strcmp(slot, "ReserveSpace");
    return false;
}

/* settled (may be NULL): set to whether every probed output of op i passed opts->settle;
 * info keeps the summary of its worst output. */
static cd_status probe_outputs(const cd_plan *plan, cd_backend *b, int i, const cd_op_report *rep, cd_probe_sink *sink,
                               const cd_exec_opts *opts, bool *settled, cd_settle_info *info, cd_error *err) {
    const cd_op *op = &plan->g->ops[i];
    if (settled) {
        *settled = true;
        memset(info, 0, sizeof *info);
    }
    for (int s = 0; s < op->n_out; s++) {
        if (cd_exec_training_only(op->type, op->out[s].name)) continue;
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value host = {0};
            cd_status st = b->vt->read(b, id, &host, err);
            if (st)
                return cd_err_prefix(err, "reading output '%s' of op #%d %s (%s): ", plan->g->tensors[id].name, i,
                                     op->name, op->type);
            if (settled && *settled) {
                cd_settle_info one = {0};
                *settled = opts->settle(opts->settle_user, opts->force, i, id, &host, &one);
                if (*settled && one.ratio >= info->ratio) *info = one;
            }
            st = sink->hit(sink->user, i, id, &host, rep, err);
            cd_value_release(&host);
            if (st) return st;
        }
    }
    return CD_OK;
}

static void release_dead(const cd_plan *plan, cd_backend *b, int i) {
    const cd_op *op = &plan->g->ops[i];
    for (int s = 0; s < op->n_in; s++)
        for (int k = 0; k < op->in[s].n; k++) {
            int id = op->in[s].ids[k];
            if (id >= 0 && plan->last_use[id] == i) b->vt->release(b, id);
        }
    /* outputs nobody reads (and that are not model outputs) die right after the probe */
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id >= 0 && plan->last_use[id] == -1) b->vt->release(b, id);
        }
}

bool cd_exec_is_activation(const cd_plan *plan, int id) {
    return id >= 0 && id < plan->g->n_tensors && !plan->g->tensors[id].persistable;
}

static bool skip_local(const cd_op *op) { return !strcmp(op->type, "feed") || !strcmp(op->type, "fetch"); }

/* Marks every activation that a probed op reads: what the free run records. */
static bool *needed_tensors(const cd_plan *plan, const bool *mask) {
    const cd_graph *g = plan->g;
    bool *need = calloc((size_t)(g->n_tensors ? g->n_tensors : 1), 1);
    if (!need) return NULL;
    for (int i = 0; i < g->n_ops; i++) {
        if (!mask || !mask[i] || skip_local(&g->ops[i])) continue;
        const cd_op *op = &g->ops[i];
        for (int s = 0; s < op->n_in; s++)
            for (int k = 0; k < op->in[s].n; k++)
                if (cd_exec_is_activation(plan, op->in[s].ids[k])) need[op->in[s].ids[k]] = true;
    }
    return need;
}

/* The outputs of op i that a probed op reads, into the record (or to the record sink: then
 * not those the probe sink heard, probed says whether it did). */
static cd_status record_outputs(const cd_plan *plan, cd_backend *b, int i, const bool *need, const cd_exec_opts *o,
                                bool probed, cd_error *err) {
    const cd_op *op = &plan->g->ops[i];
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0 || !need[id]) continue;
            if (!o->record && probed && !cd_exec_training_only(op->type, op->out[s].name)) continue;
            cd_value host = {0};
            cd_status st = b->vt->read(b, id, &host, err);
            if (!st)
                st = o->record ? cd_forcing_put(o->record, id, &host, err)
                               : o->record_sink->hit(o->record_sink->user, i, id, &host, NULL, err);
            cd_value_release(&host);
            if (st)
                return cd_err_prefix(err, "recording output '%s' of op #%d %s: ", plan->g->tensors[id].name, i,
                                     op->name);
        }
    return CD_OK;
}

/* Can op i run locally: every activation input recorded, with the planned shape. */
static bool local_ready(const cd_plan *plan, const cd_forcing *f, int i) {
    const cd_op *op = &plan->g->ops[i];
    for (int s = 0; s < op->n_in; s++)
        for (int k = 0; k < op->in[s].n; k++) {
            int id = op->in[s].ids[k];
            if (!cd_exec_is_activation(plan, id)) continue;
            const cd_shape *sh = cd_forcing_shape(f, id);
            if (!sh || !cd_shape_eq(sh, &plan->meta[id].shape)) return false;
        }
    return true;
}

static void release_op_tensors(const cd_plan *plan, cd_backend *b, int i) {
    const cd_op *op = &plan->g->ops[i];
    for (int pass = 0; pass < 2; pass++) {
        const cd_slot *sl = pass ? op->out : op->in;
        int ns = pass ? op->n_out : op->n_in;
        for (int s = 0; s < ns; s++)
            for (int k = 0; k < sl[s].n; k++)
                if (cd_exec_is_activation(plan, sl[s].ids[k])) b->vt->release(b, sl[s].ids[k]);
    }
}

/* Whether every probed output of op i (just re-run locally) passes opts->settle; info keeps
 * the worst. */
static bool settle_local_outputs(const cd_plan *plan, cd_backend *b, int i, const cd_exec_opts *o,
                                 cd_settle_info *info) {
    const cd_op *op = &plan->g->ops[i];
    bool all = true, any = false;
    memset(info, 0, sizeof *info);
    for (int s = 0; s < op->n_out && all; s++) {
        if (cd_exec_training_only(op->type, op->out[s].name)) continue;
        for (int k = 0; k < op->out[s].n && all; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value host = {0};
            cd_error e2 = {0};
            if (b->vt->read(b, id, &host, &e2)) return false;
            cd_settle_info one = {.local = 1}; /* tells settle that this is a re-run's output */
            all = o->settle(o->settle_user, o->force, i, id, &host, &one);
            cd_value_release(&host);
            if (all && (!any || one.ratio >= info->ratio)) *info = one;
            any = true;
        }
    }
    info->local = 1;
    return all && any;
}

/* The local pass: every probed op on the recorded values of its inputs, one op at a time
 * (inputs set, op run, outputs handed over, everything released). */
static cd_status local_pass(const cd_plan *plan, cd_backend *b, const cd_exec_opts *o, const bool *settled,
                            const cd_settle_info *info, cd_error *err) {
    const cd_graph *g = plan->g;
    for (int i = 0; i < g->n_ops; i++) {
        /* an op with no definition (an engine's op planned from its shapes) has no kernel here:
         * compared only (verdict/local.c) */
        if (!o->probe_mask || !o->probe_mask[i] || skip_local(&g->ops[i]) || !plan->defs[i]) continue;
        if (settled && settled[i]) {
            if (o->on_settled) o->on_settled(o->on_settled_user, i, &info[i]);
            continue;
        }
        if (o->stop_flag && *o->stop_flag)
            return cd_err(err, CD_E_INTERRUPTED, "interrupted in the local check before op #%d %s (%s)", i,
                          g->ops[i].name, g->ops[i].type);
        if (!local_ready(plan, o->force, i)) continue;
        const cd_op *op = &g->ops[i];
        cd_status st = CD_OK;
        for (int s = 0; s < op->n_in && !st; s++)
            for (int k = 0; k < op->in[s].n && !st; k++) {
                int id = op->in[s].ids[k];
                if (!cd_exec_is_activation(plan, id)) continue;
                cd_value v;
                st = cd_forcing_get(o->force, id, plan->meta[id].dtype, false, &v, err);
                if (!st) st = b->vt->set_input(b, id, &v, err);
                cd_value_release(&v);
            }
        cd_op_report rep;
        memset(&rep, 0, sizeof rep);
        if (!st) st = b->vt->run_op(b, i, &rep, err);
        cd_settle_info li;
        if (!st && o->settle && o->on_settled && settle_local_outputs(plan, b, i, o, &li))
            o->on_settled(o->on_settled_user, i, &li); /* within its bound: no tensor to store */
        else if (!st && o->local_sink && o->local_sink->hit)
            st = probe_outputs(plan, b, i, &rep, o->local_sink, o, NULL, NULL, err);
        release_op_tensors(plan, b, i);
        if (st) return cd_err_prefix(err, "local check of op #%d %s (%s): ", i, op->name, op->type);
    }
    return CD_OK;
}

/* CLDIFF_PHASE_TIMES=1 (as src/cli/cmd_diff.c): a run with a local pass (B, in its own process
 * when isolated) reports its free run and its local pass apart: wall and CPU ms of this process
 * since *wall / *cpu, which are then reset. */
static void exec_phase(const char *name, double *wall, double *cpu) {
    const char *e = getenv("CLDIFF_PHASE_TIMES");
    if (!e || !*e || !strcmp(e, "0")) return;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    double w = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
    double c =
        (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
    if (name) fprintf(stderr, "cldiff: phase   %-10s wall %8.0f ms  cpu %8.0f ms\n", name, w - *wall, c - *cpu);
    *wall = w;
    *cpu = c;
}

cd_status cd_execute(const cd_plan *plan, cd_backend *b, const cd_value *inputs, const cd_exec_opts *opts,
                     cd_probe_sink *sink, cd_error *err) {
    const cd_graph *g = plan->g;
    double pw = 0, pc = 0;
    if (opts && opts->force && !opts->local_only) exec_phase(NULL, &pw, &pc);
    cd_status st = b->vt->prepare(b, plan, err);
    if (st) return st;
    if (opts && opts->force && opts->local_only) return local_pass(plan, b, opts, NULL, NULL, err);
    bool *need = NULL, *settled = NULL;
    cd_settle_info *sinfo = NULL;
    bool recording = opts && (opts->record || (opts->record_sink && opts->record_sink->hit));
    if (recording && !(need = needed_tensors(plan, opts->probe_mask))) return cd_err(err, CD_E_NOMEM, "out of memory");
    if (opts && opts->force && opts->settle &&
        (!(settled = calloc((size_t)g->n_ops + 1, 1)) || !(sinfo = calloc((size_t)g->n_ops + 1, sizeof *sinfo)))) {
        free(need);
        free(settled);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    for (int k = 0; k < g->n_inputs; k++) {
        cd_value v;
        /* an input already in the plan's dtype goes to the backend as it is (set_input copies
         * it), not through a converted copy */
        const cd_value *m = &plan->meta[g->inputs[k]];
        const int64_t n = cd_value_numel(m);
        const bool as_is = inputs[k].data && inputs[k].dtype == m->dtype && cd_shape_eq(&inputs[k].shape, &m->shape) &&
            n >= 0 && inputs[k].nbytes == (size_t)n * cd_dtype_size(m->dtype);
        if (as_is) {
            v = inputs[k];
            v.owned = false;
        } else if ((st = convert_input(plan, k, &inputs[k], &v, err)))
            return st;
        st = b->vt->set_input(b, g->inputs[k], &v, err);
        if (!as_is) cd_value_release(&v);
        if (st) return st;
    }
    for (int i = 0; i < g->n_ops && !st; i++) {
        if (opts && opts->stop_flag && *opts->stop_flag) {
            st = cd_err(err, CD_E_INTERRUPTED, "interrupted before op #%d %s (%s); %d of %d ops ran", i, g->ops[i].name,
                        g->ops[i].type, i, g->n_ops);
            break;
        }
        cd_op_report rep;
        memset(&rep, 0, sizeof rep);
        if ((st = b->vt->run_op(b, i, &rep, err))) break;
        bool probed = sink && sink->hit && opts && opts->probe_mask && opts->probe_mask[i];
        if (probed &&
            (st = probe_outputs(plan, b, i, &rep, sink, opts, settled ? &settled[i] : NULL, sinfo ? &sinfo[i] : NULL,
                                err)))
            break;
        if (need && (st = record_outputs(plan, b, i, need, opts, probed, err))) break;
        if (sink && sink->op_done) sink->op_done(sink->user, i, &rep);
        release_dead(plan, b, i);
    }
    free(need);
    if (!st && opts && opts->force) {
        /* the free run's tensors are gone (released after their last reader); the local pass
         * allocates one op's tensors at a time */
        exec_phase("free run", &pw, &pc);
        st = local_pass(plan, b, opts, settled, sinfo, err);
        exec_phase("local pass", &pw, &pc);
    }
    free(settled);
    free(sinfo);
    return st;
}
