/* The OpenCL backend's device buffers: one per tensor (shared by identity aliases),
 * parameters uploaded on first use, read-back, and completion of an op's work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/opencl/backend_cl_priv.h"

size_t clrt_tensor_bytes(const clrt *r, int id) {
    int64_t n = cd_shape_numel(&r->shape[id]);
    return n > 0 ? (size_t)n * cd_dtype_size(r->plan->meta[id].dtype) : 0;
}

void clrt_buf_unref(clrt *r, int id) {
    clbuf *b = r->bufs[id];
    if (!b) return;
    r->bufs[id] = NULL;
    if (--b->refs == 0) {
        if (b->mem) r->cl.clReleaseMemObject(b->mem);
        free(b);
    }
}

cd_status clrt_buf_new(clrt *r, int id, size_t bytes, const void *init, cd_error *err) {
    clrt_buf_unref(r, id);
    clbuf *b = cd_calloc(1, sizeof *b, err);
    if (!b) return CD_E_NOMEM;
    cl_int rc;
    /* zero-element tensors (empty detections) still get a buffer: kernels may bind it */
    size_t alloc = bytes ? bytes : 16;
    cl_mem_flags fl = CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0);
    b->mem = r->cl.clCreateBuffer(r->ctx, fl, alloc, init && bytes ? (void *)init : NULL, &rc);
    if (init && !bytes) { /* COPY_HOST_PTR needs a pointer; nothing to copy anyway */
        if (b->mem) r->cl.clReleaseMemObject(b->mem);
        b->mem = r->cl.clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, alloc, NULL, &rc);
    }
    if (!b->mem || rc != CL_SUCCESS) {
        free(b);
        return cd_err(err, rc == CL_OUT_OF_HOST_MEMORY ? CD_E_NOMEM : CD_E_BACKEND,
                      "clCreateBuffer(%zu bytes) for tensor '%s' failed: %s (device global memory %.1f MiB, "
                      "max buffer %.1f MiB)",
                      alloc, clrt_tname(r, id), cd_cl_err_name(rc), (double)r->info.global_mem / 1048576.0,
                      (double)r->info.max_alloc / 1048576.0);
    }
    b->bytes = bytes;
    b->refs = 1;
    r->bufs[id] = b;
    return CD_OK;
}

/* Device buffer of a tensor; parameters are uploaded on first use. */
cd_status clrt_buf_get(clrt *r, int id, cl_mem *out, cd_error *err) {
    *out = NULL;
    if (id < 0 || id >= r->nt) return cd_err(err, CD_E_INTERNAL, "tensor id %d out of range", id);
    if (!r->bufs[id]) {
        const cd_value *m = &r->plan->meta[id];
        if (r->plan->g->tensors[id].persistable && m->data) {
            cd_status st = clrt_buf_new(r, id, m->nbytes, m->data, err);
            if (st) return st;
        } else {
            cd_status st = clrt_buf_new(r, id, clrt_tensor_bytes(r, id), NULL, err);
            if (st) return st;
        }
    }
    *out = r->bufs[id]->mem;
    return CD_OK;
}

cd_status clrt_read_dev(clrt *r, int id, void *dst, size_t bytes, cd_error *err) {
    if (!bytes) return CD_OK;
    clbuf *bf = r->bufs[id];
    if (!bf)
        return cd_err(err, CD_E_INTERNAL, "tensor '%s' (id %d) has no device buffer (never produced or released)",
                      clrt_tname(r, id), id);
    if (bf->bytes < bytes)
        return cd_err(err, CD_E_INTERNAL, "tensor '%s' device buffer holds %zu bytes, %zu wanted", clrt_tname(r, id),
                      bf->bytes, bytes);
    cl_int rc = r->cl.clEnqueueReadBuffer(r->q, bf->mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return cd_err(err, CD_E_BACKEND, "clEnqueueReadBuffer of tensor '%s' (%zu bytes) failed: %s", clrt_tname(r, id),
                      bytes, cd_cl_err_name(rc));
    return CD_OK;
}

/* Waits for the op's work and releases its events and scratch; returns device time. */
cd_status clrt_finish_op(clrt *r, double *kernel_us, cd_error *err) {
    cl_int rc = r->cl.clFinish(r->q);
    double us = 0;
    bool have = r->n_ev > 0;
    for (int i = 0; i < r->n_ev; i++) {
        cl_ulong t0 = 0, t1 = 0;
        if (rc == CL_SUCCESS &&
            r->cl.clGetEventProfilingInfo(r->ev[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) == CL_SUCCESS &&
            r->cl.clGetEventProfilingInfo(r->ev[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) == CL_SUCCESS &&
            t1 >= t0)
            us += (double)(t1 - t0) / 1e3;
        else
            have = false;
        r->cl.clReleaseEvent(r->ev[i]);
    }
    r->n_ev = 0;
    for (int i = 0; i < r->n_scr; i++) r->cl.clReleaseMemObject(r->scratch[i]);
    r->n_scr = 0;
    if (kernel_us) *kernel_us = have ? us : -1;
    if (rc != CL_SUCCESS) return cd_err(err, CD_E_BACKEND, "clFinish failed: %s", cd_cl_err_name(rc));
    return CD_OK;
}

void clrt_release_op_state(clrt *r) {
    cd_error e;
    clrt_finish_op(r, NULL, &e);
}
