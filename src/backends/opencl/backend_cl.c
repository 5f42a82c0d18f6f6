/* The OpenCL backend: library, device, context and queue, the plan's op modes, and the
 * vtable. Its parts: backend_cl_program.c (kernel sources, program builds),
 * backend_cl_buffers.c (device buffers), backend_cl_dispatch.c (programs per family, run_op),
 * backend_cl_host.c (ops the host computes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/opencl/backend_cl_priv.h"

void cd_opencl_set_phase_hook(cd_backend *b, cd_cl_phase_fn fn, void *user) {
    clrt *r = b->impl;
    r->phase = fn;
    r->phase_user = user;
}

cd_cl_variant cd_opencl_variant(const cd_backend *b) { return ((const clrt *)b->impl)->variant; }

static cd_cl_variant choose_variant(const cd_backend_opts *o, const cd_cl_devinfo *info, char *note, size_t n) {
    note[0] = 0;
    if (o->prec != CD_PREC_FP16) return CD_CLV_FP32;
    if (o->fp16_compute && info->fp16) return CD_CLV_FP16_COMPUTE;
    if (o->fp16_compute)
        snprintf(note, n, "--fp16-compute asked, but %s lacks cl_khr_fp16: half storage with float arithmetic",
                 info->name);
    return CD_CLV_FP16;
}

/* Shape-arithmetic ops (shape, slice of a shape, arithmetic on index tensors) stay on the
 * host: their outputs are integer tensors, not activations. */
static bool int_outputs(const cd_plan *plan, const cd_op *op) {
    bool any = false;
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_dtype t = plan->meta[id].dtype;
            if (t == CD_F32 || t == CD_F16 || t == CD_F64) return false;
            any = true;
        }
    return any;
}

/* A non-parameter float input: the op reads activations (arg_max, cast float->int), so a
 * device kernel is worth it even though its outputs are integers. */
static bool float_activation_input(const cd_plan *plan, const cd_op *op) {
    for (int s = 0; s < op->n_in; s++)
        for (int k = 0; k < op->in[s].n; k++) {
            int id = op->in[s].ids[k];
            if (id < 0 || plan->g->tensors[id].persistable) continue;
            cd_dtype t = plan->meta[id].dtype;
            if (t == CD_F32 || t == CD_F16 || t == CD_F64) return true;
        }
    return false;
}

/* Where op i runs: a kernel (*def set), the host, the CPU's int8 kernels, or the CPU fallback. */
int cd_cl_op_mode(const cd_plan *plan, const cd_backend_opts *o, int i, const cd_cl_op_def **cldef) {
    const cd_graph *g = plan->g;
    const cd_op *op = &g->ops[i];
    const cd_op_def *def = plan->defs[i];
    *cldef = NULL;
    if (!strcmp(op->type, "feed")) return MODE_FEED;
    if (def && (def->flags & CD_OPF_IDENTITY)) return MODE_IDENTITY;
    if (def && (def->flags & CD_OPF_HOST)) return MODE_HOST;
    if (def && (def->flags & CD_OPF_SHAPE) && int_outputs(plan, op) &&
        !(float_activation_input(plan, op) && cd_cl_op_find(op->type)))
        return MODE_HOST; /* shape arithmetic on small integer tensors */
    if (o->int8_on_arm &&
        cd_cpu_int8_claims(&(cd_op_ctx){.g = g, .op = op, .op_index = i, .vals = plan->meta, .prec = plan->prec}))
        return MODE_ARM_INT8; /* Paddle-Lite keeps int8 layers on its ARM kernels */
    if ((*cldef = cd_cl_op_find(op->type))) return MODE_KERNEL;
    return MODE_FALLBACK;
}

int cd_cl_plan_families(const cd_plan *plan, const cd_backend_opts *o, const char **fam, int max) {
    int n = 0;
    for (int i = 0; i < plan->g->n_ops; i++) {
        const cd_cl_op_def *d = NULL;
        if (cd_cl_op_mode(plan, o, i, &d) != MODE_KERNEL || !d || !d->family) continue;
        bool seen = false;
        for (int k = 0; k < n && !seen; k++) seen = !strcmp(fam[k], d->family);
        if (!seen && n < max) fam[n++] = d->family;
    }
    return n;
}

static cd_status cl_prepare(cd_backend *b, const cd_plan *plan, cd_error *err) {
    clrt *r = b->impl;
    if (r->plan) return cd_err(err, CD_E_INTERNAL, "opencl backend: prepare called twice");
    r->plan = plan;
    r->nt = plan->g->n_tensors;
    const cd_graph *g = plan->g;
    r->bufs = cd_calloc((size_t)(r->nt ? r->nt : 1), sizeof *r->bufs, err);
    r->shape = cd_calloc((size_t)(r->nt ? r->nt : 1), sizeof *r->shape, err);
    r->host = cd_calloc((size_t)(r->nt ? r->nt : 1), sizeof *r->host, err);
    r->mode = cd_calloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *r->mode, err);
    r->cldef = cd_calloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *r->cldef, err);
    if (!r->bufs || !r->shape || !r->host || !r->mode || !r->cldef) return CD_E_NOMEM;
    for (int t = 0; t < r->nt; t++) r->shape[t] = plan->meta[t].shape;
    for (int i = 0; i < g->n_ops; i++) r->mode[i] = cd_cl_op_mode(plan, &r->b->opts, i, &r->cldef[i]);
    /* Parameters go up front so an out-of-memory device fails before the run, naming the
     * tensor, rather than in the middle of it. */
    for (int t = 0; t < r->nt; t++) {
        if (!g->tensors[t].persistable || !plan->meta[t].data || plan->last_use[t] < 0) continue;
        cl_mem m;
        cd_status st = clrt_buf_get(r, t, &m, err);
        if (st) return cd_err_prefix(err, "uploading parameter '%s': ", clrt_tname(r, t));
    }
    return CD_OK;
}

static cd_status cl_set_input(cd_backend *b, int id, const cd_value *host, cd_error *err) {
    clrt *r = b->impl;
    if (!r->plan) return cd_err(err, CD_E_INTERNAL, "opencl backend: set_input before prepare");
    const cd_value *m = &r->plan->meta[id];
    char a[160], c[160];
    if (host->dtype != m->dtype || !cd_shape_eq(&host->shape, &m->shape))
        return cd_err(err, CD_E_INTERNAL, "opencl backend: input '%s' given as %s %s but the plan expects %s %s",
                      clrt_tname(r, id), cd_dtype_name(host->dtype), cd_shape_str(&host->shape, a, sizeof a),
                      cd_dtype_name(m->dtype), cd_shape_str(&m->shape, c, sizeof c));
    r->shape[id] = m->shape;
    /* the local check sets activations too: no host copy of an older value may survive */
    cd_value_release(&r->host[id]);
    memset(&r->host[id], 0, sizeof r->host[id]);
    return clrt_buf_new(r, id, host->nbytes, host->nbytes ? host->data : NULL, err);
}

static cd_status cl_read(cd_backend *b, int id, cd_value *host, cd_error *err) {
    clrt *r = b->impl;
    memset(host, 0, sizeof *host);
    const cd_value *m = &r->plan->meta[id];
    host->dtype = m->dtype;
    host->shape = r->shape[id];
    cd_status st = cd_value_alloc(host, err);
    if (st) return st;
    if (!r->bufs[id] && r->plan->g->tensors[id].persistable && m->data) {
        if (host->nbytes) memcpy(host->data, m->data, host->nbytes);
        return CD_OK;
    }
    clrt_phase(r, r->cur_op, clrt_tname(r, id), "read-back");
    st = clrt_read_dev(r, id, host->data, host->nbytes, err);
    if (st) cd_value_release(host);
    return st;
}

static void cl_release(cd_backend *b, int id) {
    clrt *r = b->impl;
    if (r->plan && id >= 0 && id < r->nt) clrt_buf_unref(r, id);
}

static void cl_close(cd_backend *b) {
    if (!b) return;
    clrt *r = b->impl;
    if (r) {
        if (r->q) {
            r->cl.clFinish(r->q);
            clrt_release_op_state(r);
        }
        for (int t = 0; t < r->nt && r->bufs; t++) clrt_buf_unref(r, t);
        for (int t = 0; t < r->nt && r->host; t++) cd_value_release(&r->host[t]);
        for (int i = 0; i < r->n_prog; i++) {
            clprog *p = &r->progs[i];
            for (int k = 0; k < p->n_k; k++) r->cl.clReleaseKernel(p->kernels[k].k);
            if (p->prog) r->cl.clReleaseProgram(p->prog);
            free(p->kernels);
            free(p->why);
            free(p->log);
        }
        free(r->progs);
        free(r->ev);
        free(r->scratch);
        free(r->bufs);
        free(r->shape);
        free(r->host);
        free(r->mode);
        free(r->cldef);
        if (r->q) r->cl.clReleaseCommandQueue(r->q);
        if (r->ctx) r->cl.clReleaseContext(r->ctx);
        cd_cl_unload(&r->cl);
        free(r);
    }
    free(b);
}

static void cl_describe(cd_backend *b, char *device, size_t dn, char *driver, size_t drn) {
    clrt *r = b->impl;
    if (device) snprintf(device, dn, "%s (%s, %s)", r->info.name, r->info.type, r->info.vendor);
    if (driver)
        snprintf(driver, drn, "%s; %s; platform %s; %s; variant %s%s%s", r->info.driver, r->info.c_version,
                 r->info.platform, r->cl.path, cd_cl_variant_name(r->variant), r->variant_note[0] ? "; " : "",
                 r->variant_note);
}

static const cd_backend_vt k_cl_vt = {
    .name = "opencl",
    .prepare = cl_prepare,
    .set_input = cl_set_input,
    .run_op = clrt_run_op,
    .read = cl_read,
    .release = cl_release,
    .close = cl_close,
    .describe = cl_describe,
};

cd_status cd_opencl_backend_open(const cd_backend_opts *opts, cd_backend **out, cd_error *err) {
    *out = NULL;
    cd_backend *b = cd_calloc(1, sizeof *b, err);
    if (!b) return CD_E_NOMEM;
    clrt *r = cd_calloc(1, sizeof *r, err);
    if (!r) {
        free(b);
        return CD_E_NOMEM;
    }
    b->vt = &k_cl_vt;
    b->opts = *opts;
    b->impl = r;
    r->b = b;
    r->cur_op = -1;
    /* PoCL compiles a kernel again for every work-group size it is launched with (46
     * compiles for ppocr_v3_det's 8 kernels, two thirds of a first run); without that
     * specialisation it compiles each kernel once. Same tensors, bit for bit, on every shared
     * model; warm runs as fast within the noise (docs/benchmarks.md "First runs"). A value the
     * user set is kept; other drivers ignore the variable. Set before the driver starts. */
    setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);
    cd_status st = cd_cl_load(opts->cl_lib, &r->cl, &r->search, err);
    if (!st) st = cd_cl_pick(&r->cl, opts->cl_platform, opts->cl_device, &r->pid, &r->dev, &r->info, err);
    if (st) {
        cl_close(b);
        return st;
    }
    cl_int rc;
    cl_context_properties props[3] = {CL_CONTEXT_PLATFORM, (cl_context_properties)r->pid, 0};
    r->ctx = r->cl.clCreateContext(props, 1, &r->dev, NULL, NULL, &rc);
    if (!r->ctx || rc != CL_SUCCESS) {
        st = cd_err(err, CD_E_BACKEND, "clCreateContext for %s (%s) failed: %s", r->info.name, r->info.platform,
                    cd_cl_err_name(rc));
        r->ctx = NULL;
        cl_close(b);
        return st;
    }
    r->q = r->cl.clCreateCommandQueue(r->ctx, r->dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (!r->q || rc != CL_SUCCESS) {
        st = cd_err(err, CD_E_BACKEND, "clCreateCommandQueue (profiling) on %s failed: %s", r->info.name,
                    cd_cl_err_name(rc));
        r->q = NULL;
        cl_close(b);
        return st;
    }
    r->variant = choose_variant(opts, &r->info, r->variant_note, sizeof r->variant_note);
    cd_cl_cache_open(&r->cache, opts->cache_dir, opts->no_cache);
    *out = b;
    return CD_OK;
}
