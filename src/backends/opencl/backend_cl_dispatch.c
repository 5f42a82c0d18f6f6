/* The OpenCL backend's dispatch: programs per op family and variant, the callbacks the
 * cl_ops enqueue functions use, and run_op (kernel, alias, host or CPU fallback). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backends/opencl/backend_cl_priv.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static cl_mem cb_buf(cd_cl_ctx *c, int id) {
    clrt *r = c->rt;
    cl_mem m;
    cd_error e;
    return clrt_buf_get(r, id, &m, &e) ? NULL : m;
}

static clprog *find_prog(clrt *r, const char *family) {
    for (int i = 0; i < r->n_prog; i++)
        if (!strcmp(r->progs[i].family, family)) return &r->progs[i];
    return NULL;
}

/* Builds the family program once (success or failure is remembered). */
static clprog *ensure_prog(clrt *r, int op_index, const char *family, cd_error *err) {
    clprog *p = find_prog(r, family);
    if (p) return p;
    if (r->n_prog == r->cap_prog) {
        int nc = r->cap_prog ? r->cap_prog * 2 : 16;
        clprog *np = realloc(r->progs, (size_t)nc * sizeof *np);
        if (!np) {
            cd_err(err, CD_E_NOMEM, "out of memory");
            return NULL;
        }
        r->progs = np;
        r->cap_prog = nc;
    }
    p = &r->progs[r->n_prog++];
    memset(p, 0, sizeof *p);
    snprintf(p->family, sizeof p->family, "%s", family);
    cd_error e;
    cd_err_clear(&e);
    char *src = cd_cl_program_source(r->b->opts.kernel_dir, family, r->variant, &e);
    if (!src) {
        p->why = cd_strdup(e.msg);
        return p;
    }
    clrt_phase(r, op_index, family, "build");
    cd_status st = cd_cl_build_program(&r->cl, r->ctx, r->dev, &r->info, src, cd_cl_build_options(r->variant, &r->info),
                                       r->b->opts.no_cache ? NULL : &r->cache, &p->prog, &p->log, &e);
    free(src);
    if (st) p->why = cd_strdup(e.msg);
    return p;
}

static cd_status cb_kernel(cd_cl_ctx *c, const char *family, const char *name, cl_kernel *out, cd_error *err) {
    clrt *r = c->rt;
    *out = NULL;
    clprog *p = ensure_prog(r, c->op_index, family, err);
    if (!p) return CD_E_NOMEM;
    if (!p->prog)
        return cd_err(err, CD_E_UNSUPPORTED, "kernel %s (%s) failed to build: %s", family,
                      cd_cl_variant_name(r->variant), p->why ? p->why : "unknown reason");
    for (int i = 0; i < p->n_k; i++)
        if (!strcmp(p->kernels[i].name, name)) {
            *out = p->kernels[i].k;
            return CD_OK;
        }
    cl_int rc;
    cl_kernel k = r->cl.clCreateKernel(p->prog, name, &rc);
    if (!k || rc != CL_SUCCESS)
        return cd_err(err, CD_E_UNSUPPORTED, "clCreateKernel(%s) in %s.cl (%s) failed: %s", name, family,
                      cd_cl_variant_name(r->variant), cd_cl_err_name(rc));
    if (p->n_k == p->cap_k) {
        int nc = p->cap_k ? p->cap_k * 2 : 8;
        void *nk = realloc(p->kernels, (size_t)nc * sizeof *p->kernels);
        if (!nk) {
            r->cl.clReleaseKernel(k);
            return cd_err(err, CD_E_NOMEM, "out of memory");
        }
        p->kernels = nk;
        p->cap_k = nc;
    }
    snprintf(p->kernels[p->n_k].name, sizeof p->kernels[p->n_k].name, "%s", name);
    p->kernels[p->n_k++].k = k;
    *out = k;
    return CD_OK;
}

static void fmt_dims(char *buf, size_t n, cl_uint dims, const size_t *v) {
    if (!v) {
        snprintf(buf, n, "auto");
        return;
    }
    size_t u = 0;
    buf[0] = 0;
    for (cl_uint i = 0; i < dims && u < n; i++) {
        int w = snprintf(buf + u, n - u, "%s%zu", i ? "x" : "", v[i]);
        if (w < 0) break;
        u += (size_t)w;
    }
}

static cd_status cb_launch(cd_cl_ctx *c, cl_kernel k, cl_uint dims, const size_t *global, const size_t *local,
                           cd_error *err) {
    clrt *r = c->rt;
    char kname[64] = "?";
    /* kernel name for the phase record and messages */
    for (int i = 0; i < r->n_prog && kname[0] == '?'; i++)
        for (int j = 0; j < r->progs[i].n_k; j++)
            if (r->progs[i].kernels[j].k == k) {
                snprintf(kname, sizeof kname, "%s", r->progs[i].kernels[j].name);
                break;
            }
    if (dims < 1 || dims > 3)
        return cd_err(err, CD_E_INTERNAL, "op #%d %s: kernel %s launched with %u dimensions", c->op_index, c->op->name,
                      kname, (unsigned)dims);
    for (cl_uint i = 0; i < dims; i++)
        if (global[i] == 0) return CD_OK; /* empty tensor: nothing to do */
    if (r->n_ev == r->cap_ev) {
        int nc = r->cap_ev ? r->cap_ev * 2 : 8;
        cl_event *ne = realloc(r->ev, (size_t)nc * sizeof *ne);
        if (!ne) return cd_err(err, CD_E_NOMEM, "out of memory");
        r->ev = ne;
        r->cap_ev = nc;
    }
    clrt_phase(r, c->op_index, kname, "run");
    cl_event ev = NULL;
    cl_int rc = r->cl.clEnqueueNDRangeKernel(r->q, k, dims, NULL, global, local, 0, NULL, &ev);
    if (rc != CL_SUCCESS) {
        char g[64], l[64];
        fmt_dims(g, sizeof g, dims, global);
        fmt_dims(l, sizeof l, dims, local);
        return cd_err(err, CD_E_BACKEND, "clEnqueueNDRangeKernel(kernel %s, global %s, local %s) failed: %s", kname, g,
                      l, cd_cl_err_name(rc));
    }
    r->ev[r->n_ev++] = ev;
    return CD_OK;
}

static cl_mem cb_scratch(cd_cl_ctx *c, size_t bytes, cd_error *err) {
    clrt *r = c->rt;
    if (r->n_scr == r->cap_scr) {
        int nc = r->cap_scr ? r->cap_scr * 2 : 4;
        cl_mem *ns = realloc(r->scratch, (size_t)nc * sizeof *ns);
        if (!ns) {
            cd_err(err, CD_E_NOMEM, "out of memory");
            return NULL;
        }
        r->scratch = ns;
        r->cap_scr = nc;
    }
    cl_int rc;
    cl_mem m = r->cl.clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 16, NULL, &rc);
    if (!m || rc != CL_SUCCESS) {
        cd_err(err, CD_E_BACKEND, "op #%d %s: scratch clCreateBuffer(%zu bytes) failed: %s", c->op_index, c->op->name,
               bytes, cd_cl_err_name(rc));
        return NULL;
    }
    r->scratch[r->n_scr++] = m;
    return m;
}

/* Every output of a feed op must have been set before the run. */
static cd_status check_feed(clrt *r, int i, cd_error *err) {
    const cd_op *op = &r->plan->g->ops[i];
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id >= 0 && !r->bufs[id])
                return cd_err(err, CD_E_INTERNAL, "op #%d %s (feed): model input '%s' was not set before the run", i,
                              op->name, clrt_tname(r, id));
        }
    return CD_OK;
}

/* Test hook of the fault injector (tests/faultinj, docs/planted-bugs.md "Fault injection"):
 * when a library in the process exports cldiff_faultinj_op (the injector's OpenCL layer does),
 * it is told, before an op's kernels are enqueued, the op and the device buffer of its first
 * output (dtype is cd_dtype: 0 f32, 1 f16). Looked up once; absent, nothing is called. */
typedef void (*cd_faultinj_fn)(int op, const char *type, const char *layer, void *mem, size_t bytes, int dtype,
                               int rank, const int64_t *dims);
static void faultinj_hook(clrt *r, int i, const cd_op *op) {
    static int looked;
    static cd_faultinj_fn fn;
    if (!looked) {
        looked = 1;
        *(void **)&fn = dlsym(RTLD_DEFAULT, "cldiff_faultinj_op");
    }
    int id = op->n_out > 0 && op->out[0].n > 0 ? op->out[0].ids[0] : -1;
    if (fn && id >= 0 && r->bufs[id])
        fn(i, op->type, op->name, r->bufs[id]->mem, r->bufs[id]->bytes, (int)r->plan->meta[id].dtype, r->shape[id].rank,
           r->shape[id].d);
}

/* Op i on its OpenCL kernel. A kernel that cannot run the op leaves the reason in why (the
 * caller then runs it on the CPU); *t0 restarts once the program is built. */
static cd_status run_kernel(clrt *r, int i, cd_op_report *rep, char *why, size_t why_n, double *t0, cd_error *err) {
    const cd_plan *plan = r->plan;
    const cd_op *op = &plan->g->ops[i];
    const char *vn = cd_cl_variant_name(r->variant);
    const cd_cl_op_def *d = r->cldef[i];
    cd_status st = CD_OK;
    /* build before the clock starts: elapsed_us is the op's run, not the compiler */
    cd_error e;
    cd_err_clear(&e);
    clprog *p = ensure_prog(r, i, d->family, &e);
    if (!p) return cd_err(err, e.code, "%s", e.msg);
    if (!p->prog) {
        snprintf(why, why_n, "kernel %s (%s) failed to build: %s", d->family, vn, p->why ? p->why : "?");
        return CD_OK;
    }
    *t0 = now_us();
    /* outputs sized from the plan before enqueue */
    for (int s = 0; s < op->n_out && !st; s++)
        for (int k = 0; k < op->out[s].n && !st; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            r->shape[id] = plan->meta[id].shape;
            st = clrt_buf_new(r, id, clrt_tensor_bytes(r, id), NULL, err);
        }
    if (st) return st;
    cd_cl_ctx c = {.cl = &r->cl,
                   .context = r->ctx,
                   .queue = r->q,
                   .device = r->dev,
                   .cpu_device = !strcmp(r->info.type, "CPU") && !getenv("CLDIFF_CL_GPU_KERNELS"),
                   .plan = plan,
                   .op = op,
                   .op_index = i,
                   .variant = r->variant,
                   .buf = cb_buf,
                   .kernel = cb_kernel,
                   .launch = cb_launch,
                   .scratch = cb_scratch,
                   .rt = r};
    faultinj_hook(r, i, op);
    st = d->enqueue(&c, &e);
    if (!st)
        st = clrt_finish_op(r, &rep->kernel_us, &e);
    else
        clrt_release_op_state(r);
    snprintf(rep->kernel, sizeof rep->kernel, "%s:%s", d->family, vn);
    if (st == CD_E_UNSUPPORTED || st == CD_E_BACKEND) {
        /* the kernel cannot run this op (attribute it lacks, build or enqueue failure):
         * the CPU computes it and the report says why */
        snprintf(why, why_n, "%.255s", e.msg);
        st = CD_OK;
        rep->kernel_us = -1;
    } else if (st) {
        cd_err(err, st, "op #%d %s (%s): %s", i, op->name, op->type, e.msg);
    }
    return st;
}

cd_status clrt_run_op(cd_backend *b, int i, cd_op_report *rep, cd_error *err) {
    clrt *r = b->impl;
    const cd_plan *plan = r->plan;
    const cd_graph *g = plan->g;
    const cd_op *op = &g->ops[i];
    memset(rep, 0, sizeof *rep);
    rep->kernel_us = -1;
    snprintf(rep->where, sizeof rep->where, "opencl");
    double t0 = now_us();
    cd_status st = CD_OK;
    char why[256] = "";
    r->cur_op = i;
    switch (r->mode[i]) {
    case MODE_FEED:
        snprintf(rep->where, sizeof rep->where, "host");
        if ((st = check_feed(r, i, err))) return st;
        break;
    case MODE_IDENTITY: {
        bool need_host;
        snprintf(rep->kernel, sizeof rep->kernel, "(alias)");
        if ((st = clrt_run_identity(r, i, &need_host, err))) break;
        if (need_host) {
            snprintf(rep->where, sizeof rep->where, "host");
            snprintf(rep->kernel, sizeof rep->kernel, "%s:cpu", op->type);
            snprintf(rep->note, sizeof rep->note, "converting identity op copied on the host");
            st = clrt_run_on_host(r, i, err);
        }
        break;
    }
    case MODE_HOST:
        snprintf(rep->where, sizeof rep->where, "host");
        snprintf(rep->kernel, sizeof rep->kernel, "%s:cpu", op->type);
        snprintf(rep->note, sizeof rep->note, "%s runs on the host in every backend",
                 plan->defs[i]->flags & CD_OPF_HOST ? "detection post-processing" : "shape arithmetic");
        st = clrt_run_on_host(r, i, err);
        break;
    case MODE_KERNEL: st = run_kernel(r, i, rep, why, sizeof why, &t0, err); break;
    case MODE_ARM_INT8:
        /* Paddle-Lite's OpenCL backend has no int8 kernels: its kernel pick keeps int8 layers
         * on the ARM int8 kernels (docs/int8.md §4); so does this run */
        snprintf(rep->where, sizeof rep->where, "arm-int8");
        snprintf(rep->note, sizeof rep->note,
                 "int8 layer on the ARM int8 kernel, as Paddle-Lite places it "
                 "(--int8-placement gpu: float OpenCL kernel)");
        st = clrt_run_on_host(r, i, err);
        if (!st) snprintf(rep->kernel, sizeof rep->kernel, "%s", r->host_kernel);
        break;
    default: snprintf(why, sizeof why, "no OpenCL kernel for op type %s", op->type); break;
    }
    if (!st && why[0]) {
        snprintf(rep->where, sizeof rep->where, "cpu-fallback");
        snprintf(rep->kernel, sizeof rep->kernel, "%s:cpu", op->type);
        snprintf(rep->note, sizeof rep->note, "%s", why);
        st = clrt_run_on_host(r, i, err);
    }
    rep->elapsed_us = now_us() - t0;
    return st;
}

int cd_opencl_family_cached(cd_backend *b, const char *family, char *path, size_t pn) {
    clrt *r = b->impl;
    cd_error e;
    cd_err_clear(&e);
    if (path && pn) path[0] = 0;
    char *src = cd_cl_program_source(b->opts.kernel_dir, family, r->variant, &e);
    if (!src) return -1;
    int hit =
        cd_cl_program_cached(&r->info, src, cd_cl_build_options(r->variant, &r->info), &r->cache, path, pn) ? 1 : 0;
    free(src);
    return hit;
}

cd_status cd_opencl_build_family(cd_backend *b, const char *family, cd_error *err) {
    clrt *r = b->impl;
    clprog *p = ensure_prog(r, -1, family, err);
    if (!p) return CD_E_NOMEM;
    if (!p->prog)
        return cd_err(err, CD_E_UNSUPPORTED, "kernel %s (%s) failed to build: %s", family,
                      cd_cl_variant_name(r->variant), p->why ? p->why : "unknown reason");
    return CD_OK;
}
