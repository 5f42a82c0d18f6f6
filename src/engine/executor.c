/* The executor: prepares the backend, feeds inputs in the run dtype, runs ops in order,
 * hands probed outputs to the sink right after their op, and frees tensors after their
 * last reader. */
#include "engine/executor.h"
#include "util/fp16.h"
#include <stdlib.h>
#include <string.h>

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

static cd_status probe_outputs(const cd_plan *plan, cd_backend *b, int i, const cd_op_report *rep,
                               cd_probe_sink *sink, cd_error *err) {
    const cd_op *op = &plan->g->ops[i];
    for (int s = 0; s < op->n_out; s++) {
        /* XShape (reshape2, transpose2, flatten2, squeeze2...) only carries the input's shape
         * for training: no data worth a dataset or a comparison row. */
        if (!strcmp(op->out[s].name, "XShape")) continue;
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value host = {0};
            cd_status st = b->vt->read(b, id, &host, err);
            if (st) return cd_err_prefix(err, "reading output '%s' of op #%d %s (%s): ",
                                         plan->g->tensors[id].name, i, op->name, op->type);
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

cd_status cd_execute(const cd_plan *plan, cd_backend *b, const cd_value *inputs, const cd_exec_opts *opts,
                     cd_probe_sink *sink, cd_error *err) {
    const cd_graph *g = plan->g;
    cd_status st = b->vt->prepare(b, plan, err);
    if (st) return st;
    for (int k = 0; k < g->n_inputs; k++) {
        cd_value v;
        if ((st = convert_input(plan, k, &inputs[k], &v, err))) return st;
        st = b->vt->set_input(b, g->inputs[k], &v, err);
        cd_value_release(&v);
        if (st) return st;
    }
    for (int i = 0; i < g->n_ops; i++) {
        if (opts && opts->stop_flag && *opts->stop_flag)
            return cd_err(err, CD_E_INTERRUPTED, "interrupted before op #%d %s (%s); %d of %d ops ran", i,
                          g->ops[i].name, g->ops[i].type, i, g->n_ops);
        cd_op_report rep;
        memset(&rep, 0, sizeof rep);
        if ((st = b->vt->run_op(b, i, &rep, err))) return st;
        if (sink && sink->hit && opts && opts->probe_mask && opts->probe_mask[i])
            if ((st = probe_outputs(plan, b, i, &rep, sink, err))) return st;
        if (sink && sink->op_done) sink->op_done(sink->user, i, &rep);
        release_dead(plan, b, i);
    }
    return CD_OK;
}
