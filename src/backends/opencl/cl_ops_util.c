/* Helpers shared by the OpenCL op dispatchers (see cl_ops_util.h). */
#include "backends/opencl/cl_ops_util.h"
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

cd_status clu_fail(cd_cl_ctx *c, cd_error *err, cd_status code, const char *fmt, ...) {
    char body[CD_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    return cd_err(err, code, "op #%d %s (%s): %s", c->op_index, c->op->name ? c->op->name : "?",
                  c->op->type ? c->op->type : "?", body);
}

const cd_value *clu_meta(cd_cl_ctx *c, int tid) {
    if (tid < 0 || tid >= c->plan->g->n_tensors) return NULL;
    return &c->plan->meta[tid];
}

int clu_in(cd_cl_ctx *c, const char *slot, int idx) { return cd_op_in(c->op, slot, idx); }
int clu_out(cd_cl_ctx *c, const char *slot, int idx) { return cd_op_out(c->op, slot, idx); }

cd_status clu_need_in(cd_cl_ctx *c, const char *slot, int idx, int *tid, cd_error *err) {
    *tid = cd_op_in(c->op, slot, idx);
    if (*tid < 0 || !clu_meta(c, *tid))
        return clu_fail(c, err, CD_E_MODEL, "required input %s[%d] is not connected; the model is malformed", slot,
                        idx);
    return CD_OK;
}

cd_status clu_need_out(cd_cl_ctx *c, const char *slot, int idx, int *tid, cd_error *err) {
    *tid = cd_op_out(c->op, slot, idx);
    if (*tid < 0 || !clu_meta(c, *tid))
        return clu_fail(c, err, CD_E_MODEL, "required output %s[%d] is not connected; the model is malformed", slot,
                        idx);
    return CD_OK;
}

cd_status clu_buf(cd_cl_ctx *c, int tid, cl_mem *out, cd_error *err) {
    *out = c->buf(c, tid);
    if (!*out)
        return clu_fail(c, err, CD_E_INTERNAL,
                        "no device buffer for tensor #%d '%s' (the OpenCL runtime did not allocate it: a "
                        "cldiff bug, report it)",
                        tid, c->plan->g->tensors[tid].name ? c->plan->g->tensors[tid].name : "?");
    return CD_OK;
}

void clu_op_ctx(cd_cl_ctx *c, cd_op_ctx *oc, cd_error *err) {
    memset(oc, 0, sizeof *oc);
    oc->g = c->plan->g;
    oc->op = c->op;
    oc->op_index = c->op_index;
    oc->vals = c->plan->meta;
    oc->prec = c->plan->prec;
    oc->threads = 1;
    oc->err = err;
}

cd_status clu_need_float(cd_cl_ctx *c, int tid, const char *what, cd_error *err) {
    const cd_value *m = clu_meta(c, tid);
    cd_dtype want = c->plan->prec == CD_PREC_FP16 ? CD_F16 : CD_F32;
    if (m->dtype != want)
        return clu_fail(c, err, CD_E_UNSUPPORTED,
                        "%s has dtype %s; the OpenCL kernels take %s tensors only, so this op runs on the CPU", what,
                        cd_dtype_name(m->dtype), cd_dtype_name(want));
    return CD_OK;
}

void clu_args_init(clu_args *a, cd_cl_ctx *c, cl_kernel k, cd_error *err) {
    a->c = c;
    a->k = k;
    a->i = 0;
    a->st = CD_OK;
    a->err = err;
}

void clu_mem(clu_args *a, cl_mem m) {
    if (a->st) return;
    /* OpenCL: a NULL value for a buffer argument makes the kernel's pointer NULL. */
    a->st = m ? cd_cl_arg(a->c, a->k, a->i, sizeof m, &m, a->err) : cd_cl_arg(a->c, a->k, a->i, sizeof m, NULL, a->err);
    a->i++;
}

void clu_int(clu_args *a, int64_t v) {
    if (a->st) return;
    if (v < INT_MIN || v > INT_MAX) {
        a->st = clu_fail(a->c, a->err, CD_E_UNSUPPORTED,
                         "kernel argument %u = %lld does not fit the kernels' 32-bit indexing; this op runs on "
                         "the CPU",
                         (unsigned)a->i, (long long)v);
        return;
    }
    cl_int x = (cl_int)v;
    a->st = cd_cl_arg(a->c, a->k, a->i++, sizeof x, &x, a->err);
}

void clu_flt(clu_args *a, double v) {
    if (a->st) return;
    cl_float x = (cl_float)v;
    a->st = cd_cl_arg(a->c, a->k, a->i++, sizeof x, &x, a->err);
}

void clu_int8(clu_args *a, const int64_t v[8]) {
    if (a->st) return;
    cl_int8 x;
    for (int i = 0; i < 8; i++) {
        if (v[i] < INT_MIN || v[i] > INT_MAX) {
            a->st = clu_fail(a->c, a->err, CD_E_UNSUPPORTED,
                             "kernel argument %u[%d] = %lld does not fit 32-bit indexing; this op runs on the CPU",
                             (unsigned)a->i, i, (long long)v[i]);
            return;
        }
        x.s[i] = (cl_int)v[i];
    }
    a->st = cd_cl_arg(a->c, a->k, a->i++, sizeof x, &x, a->err);
}

cd_status clu_begin(clu_args *a, cd_cl_ctx *c, const char *family, const char *name, const int *tids, int n,
                    cd_error *err) {
    cl_mem m[8];
    cl_kernel k;
    cd_status s;
    if (n > 8) return clu_fail(c, err, CD_E_INTERNAL, "clu_begin takes at most 8 buffers");
    for (int i = 0; i < n; i++) {
        m[i] = NULL;
        if (tids[i] >= 0 && (s = clu_buf(c, tids[i], &m[i], err))) return s;
    }
    if ((s = c->kernel(c, family, name, &k, err))) return s;
    clu_args_init(a, c, k, err);
    for (int i = 0; i < n; i++) clu_mem(a, m[i]);
    return a->st;
}

cd_status clu_end(clu_args *a, int64_t n) {
    if (a->st) return a->st;
    return clu_launch1(a->c, a->k, n, a->err);
}

cd_status clu_fits(cd_cl_ctx *c, int64_t n, const char *what, cd_error *err) {
    if (n < 0 || n > INT_MAX)
        return clu_fail(c, err, CD_E_UNSUPPORTED,
                        "%s = %lld exceeds the kernels' 32-bit indexing (max %d); this op runs on the CPU", what,
                        (long long)n, INT_MAX);
    return CD_OK;
}

cd_status clu_launch1(cd_cl_ctx *c, cl_kernel k, int64_t n, cd_error *err) {
    if (n <= 0) return CD_OK; /* empty tensor: nothing to compute */
    size_t g = (size_t)n;
    return c->launch(c, k, 1, &g, NULL, err);
}

cd_status clu_pads(cd_cl_ctx *c, const int64_t in_hw[2], const int64_t k[2], const int64_t stride[2], int64_t dil[2],
                   int64_t pads[4], cd_error *err) {
    const int64_t *p;
    int np = cd_attr_ints(c->op, "paddings", &p);
    if (np == 2) {
        pads[0] = pads[1] = p[0];
        pads[2] = pads[3] = p[1];
    } else if (np == 4) {
        for (int i = 0; i < 4; i++) pads[i] = p[i];
    } else if (np == 0) {
        pads[0] = pads[1] = pads[2] = pads[3] = 0;
    } else {
        return clu_fail(c, err, CD_E_MODEL, "paddings has %d values; a 2-D op takes 2 or 4", np);
    }
    const char *alg = cd_attr_str(c->op, "padding_algorithm", "EXPLICIT");
    if (!strcmp(alg, "VALID")) {
        pads[0] = pads[1] = pads[2] = pads[3] = 0;
    } else if (!strcmp(alg, "SAME")) {
        for (int i = 0; i < 2; i++) {
            if (stride[i] <= 0)
                return clu_fail(c, err, CD_E_MODEL, "stride %lld must be positive", (long long)stride[i]);
            int64_t out = (in_hw[i] + stride[i] - 1) / stride[i];
            int64_t tot = (out - 1) * stride[i] + k[i] - in_hw[i];
            if (tot < 0) tot = 0;
            pads[2 * i] = tot / 2;
            pads[2 * i + 1] = tot - tot / 2;
            if (dil) dil[i] = 1;
        }
    }
    for (int i = 0; i < 4; i++)
        if (pads[i] < 0) return clu_fail(c, err, CD_E_MODEL, "padding %d is negative (%lld)", i, (long long)pads[i]);
    return CD_OK;
}

int clu_prelu_mode(const char *s) {
    if (!strcmp(s, "all")) return 0;
    if (!strcmp(s, "channel")) return 1;
    if (!strcmp(s, "element")) return 2;
    return -1;
}

cd_status clu_copy(cd_cl_ctx *c, int src, int dst, cd_error *err) {
    cl_mem a, b;
    cd_status s;
    if ((s = clu_buf(c, src, &a, err)) || (s = clu_buf(c, dst, &b, err))) return s;
    const cd_value *ms = clu_meta(c, src), *md = clu_meta(c, dst);
    size_t ns = (size_t)cd_value_numel(ms) * cd_dtype_size(ms->dtype);
    size_t nd = (size_t)cd_value_numel(md) * cd_dtype_size(md->dtype);
    if (ns != nd)
        return clu_fail(c, err, CD_E_INTERNAL,
                        "input holds %zu bytes but the output %zu; a data-preserving reshape "
                        "must keep the byte count (planner bug)",
                        ns, nd);
    if (ns == 0 || a == b) return CD_OK;
    cl_int rc = c->cl->clEnqueueCopyBuffer(c->queue, a, b, 0, 0, ns, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return clu_fail(c, err, CD_E_BACKEND, "clEnqueueCopyBuffer of %zu bytes failed (OpenCL error %d)", ns, (int)rc);
    return CD_OK;
}
