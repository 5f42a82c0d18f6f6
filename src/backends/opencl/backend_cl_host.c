/* Ops the host computes inside the OpenCL run: shape arithmetic, detection post-processing,
 * converting identities and the CPU fallback; and identity ops as buffer aliases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/opencl/backend_cl_priv.h"

static void host_reset(clrt *r, const cd_op *op) {
    for (int pass = 0; pass < 2; pass++) {
        const cd_slot *slots = pass ? op->out : op->in;
        int ns = pass ? op->n_out : op->n_in;
        for (int s = 0; s < ns; s++)
            for (int k = 0; k < slots[s].n; k++) {
                int id = slots[s].ids[k];
                if (id < 0) continue;
                cd_value_release(&r->host[id]);
                memset(&r->host[id], 0, sizeof r->host[id]);
            }
    }
}

/* Runs op i with its CPU kernel: inputs come down from the device, outputs go back up. */
cd_status clrt_run_on_host(clrt *r, int i, cd_error *err) {
    const cd_plan *plan = r->plan;
    const cd_graph *g = plan->g;
    const cd_op *op = &g->ops[i];
    const cd_op_def *def = plan->defs[i];
    cd_op_ctx c = {.g = g,
                   .op = op,
                   .op_index = i,
                   .vals = r->host,
                   .prec = plan->prec,
                   .threads = r->b->opts.threads > 0 ? r->b->opts.threads : 1,
                   .err = err};
    if (!def || !def->run) return cd_op_fail(&c, CD_E_UNSUPPORTED, "no CPU kernel for op type '%s'", op->type);
    cd_status st = CD_OK;
    bool reinfer = false; /* an input's run-time shape differs from the plan (after nms) */
    for (int s = 0; s < op->n_in && !st; s++)
        for (int k = 0; k < op->in[s].n && !st; k++) {
            int id = op->in[s].ids[k];
            if (id >= 0 && !g->tensors[id].persistable && !cd_shape_eq(&r->shape[id], &plan->meta[id].shape))
                reinfer = true;
            if (id < 0 || r->host[id].data) continue;
            cd_value *v = &r->host[id];
            const cd_value *m = &plan->meta[id];
            if (g->tensors[id].persistable && m->data) {
                *v = *m;
                v->owned = false;
                continue;
            }
            v->dtype = m->dtype;
            v->shape = r->shape[id];
            if ((st = cd_value_alloc(v, err))) break;
            clrt_phase(r, i, op->type, "read-back");
            st = clrt_read_dev(r, id, v->data, v->nbytes, err);
        }
    for (int s = 0; s < op->n_out && !st; s++)
        for (int k = 0; k < op->out[s].n && !st; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value *v = &r->host[id];
            cd_value_release(v);
            v->dtype = plan->meta[id].dtype;
            v->shape = plan->meta[id].shape;
            if (reinfer) v->shape.rank = -1;
        }
    if (!st && reinfer) st = def->infer(&c);
    for (int s = 0; s < op->n_out && !st; s++)
        for (int k = 0; k < op->out[s].n && !st; k++) {
            int id = op->out[s].ids[k];
            if (id >= 0) st = cd_value_alloc(&r->host[id], err);
        }
    if (!st && r->mode[i] == MODE_ARM_INT8) {
        char note[64];
        r->host_kernel[0] = 0;
        st = cd_cpu_int8_run(&c, NULL, r->host_kernel, sizeof r->host_kernel, note, sizeof note);
    } else if (!st) {
        st = def->run(&c);
    }
    if (st && err && !strstr(err->msg, "op #")) cd_err_prefix(err, "op #%d %s (%s): ", i, op->name, op->type);
    for (int s = 0; s < op->n_out && !st; s++)
        for (int k = 0; k < op->out[s].n && !st; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value *v = &r->host[id];
            int64_t n = cd_value_numel(v);
            size_t bytes = n > 0 ? (size_t)n * cd_dtype_size(v->dtype) : 0;
            if (v->dtype != plan->meta[id].dtype || bytes > v->nbytes) {
                st = cd_op_fail(&c, CD_E_INTERNAL, "CPU kernel left output '%s' inconsistent with the plan",
                                g->tensors[id].name);
                break;
            }
            r->shape[id] = v->shape;
            st = clrt_buf_new(r, id, bytes, bytes ? v->data : NULL, err);
        }
    host_reset(r, op);
    return st;
}

static int first_id(const cd_slot *slots, int ns) {
    for (int s = 0; s < ns; s++)
        for (int k = 0; k < slots[s].n; k++)
            if (slots[s].ids[k] >= 0) return slots[s].ids[k];
    return -1;
}

/* Output = input: the output shares the input's device buffer (no copy). */
cd_status clrt_run_identity(clrt *r, int i, bool *need_host, cd_error *err) {
    const cd_op *op = &r->plan->g->ops[i];
    int src = first_id(op->in, op->n_in);
    *need_host = false;
    if (src < 0) return CD_OK;
    cl_mem m;
    if (!r->bufs[src] && !(r->plan->g->tensors[src].persistable && r->plan->meta[src].data)) {
        *need_host = true;
        return CD_OK;
    }
    cd_status st = clrt_buf_get(r, src, &m, err);
    if (st) return st;
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            if (r->plan->meta[id].dtype != r->plan->meta[src].dtype ||
                cd_shape_numel(&r->plan->meta[id].shape) != cd_shape_numel(&r->shape[src])) {
                *need_host = true; /* a converting identity (dtype or size change): CPU kernel */
                return CD_OK;
            }
        }
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0 || id == src) continue;
            clrt_buf_unref(r, id);
            r->bufs[id] = r->bufs[src];
            r->bufs[id]->refs++;
            r->shape[id] = r->plan->meta[id].shape;
        }
    return CD_OK;
}
