/* The OpenCL backend as the registry sees it (engine/backend_def.h): its --backend-opt keys,
 * its runner (an isolated child by default, else in this process) and where each op of a plan
 * will run. Apart from backend_cl.c so that the backend's core does not depend on the child
 * that opens it (isolate.c). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "backends/opencl/backend_cl_priv.h"
#include "backends/opencl/isolate.h"
#include "engine/backend_def.h"
#include "backends/opencl/device.h"
#include "backends/opencl/loader.h"
#include "util/subproc.h"

extern const cd_backend_def cd_backend_def_opencl;

static const cd_backend_optdef CL_OPTS[] = {
    {"lib", "PATH", "the OpenCL library to load (default: the ICD loader libOpenCL.so.1); --cl-lib"},
    {"platform", "NAME|INDEX", "platform by name substring or index; --cl-platform"},
    {"device", "NAME|INDEX", "device of that platform; --cl-device"},
    {"kernel-dir", "DIR", "kernels/*.cl from DIR instead of the embedded copies; --kernel-dir"},
    {"cache-dir", "DIR", "program binary cache; --cache-dir"},
    {"no-cache", "0|1", "build every program afresh; --no-cache"},
    {"fp16-compute", "0|1", "half arithmetic where the device has cl_khr_fp16; --fp16-compute"},
    {"isolate", "0|1", "run in a child process, so a driver crash becomes a finding (default 1); --no-isolate"},
    {NULL, NULL, NULL},
};

static cd_status cl_bool_opt(const cd_backend_opts *bo, const char *key, bool *v, cd_error *err) {
    const char *s = cd_backend_opt(bo, "opencl", key);
    if (!s) return CD_OK;
    if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "yes"))
        *v = true;
    else if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "no"))
        *v = false;
    else
        return cd_err(err, CD_E_USAGE, "--backend-opt opencl:%s=%s: expected 0 or 1", key, s);
    return CD_OK;
}

static cd_status cl_apply_opts(cd_backend_opts *bo, cd_error *err) {
    const char *v;
    if ((v = cd_backend_opt(bo, "opencl", "lib"))) bo->cl_lib = v;
    if ((v = cd_backend_opt(bo, "opencl", "platform"))) bo->cl_platform = v;
    if ((v = cd_backend_opt(bo, "opencl", "device"))) bo->cl_device = v;
    if ((v = cd_backend_opt(bo, "opencl", "kernel-dir"))) bo->kernel_dir = v;
    if ((v = cd_backend_opt(bo, "opencl", "cache-dir"))) bo->cache_dir = v;
    cd_status st = cl_bool_opt(bo, "no-cache", &bo->no_cache, err);
    if (!st) st = cl_bool_opt(bo, "fp16-compute", &bo->fp16_compute, err);
    if (!st) st = cl_bool_opt(bo, "isolate", &bo->isolate, err);
    return st;
}

static cd_status cl_run(const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    if (q->bo->isolate) return cd_runner_isolated(q, res, err);
    cd_runner_isolated_drop(q->prestart);
    return cd_runner_inproc(&cd_backend_def_opencl, q, res, err);
}

/* The availability probe's child: the library loaded and the device chosen as a run would;
 * answers "<status byte><message>". The driver's code runs only here, never in the parent
 * (the isolated run forks from it later). */
static void cl_probe_child(int fd, void *arg) {
    const cd_backend_opts *bo = arg;
    cd_clfn cl;
    cd_error e;
    cd_err_clear(&e);
    cl_platform_id pid;
    cl_device_id did;
    cd_cl_devinfo info;
    char out[CD_ERR_MSG + 1];
    cd_status st = cd_cl_load(bo->cl_lib, &cl, NULL, &e);
    if (!st) st = cd_cl_pick(&cl, bo->cl_platform, bo->cl_device, &pid, &did, &info, &e);
    out[0] = (char)st;
    size_t n = 1 + (size_t)snprintf(out + 1, sizeof out - 1, "%s", st ? e.msg : "");
    if (write(fd, out, n > sizeof out - 1 ? sizeof out - 1 : n) < 0) _exit(1);
}

/* The OpenCL library loads and the platform/device choice finds a device. A probe that crashes
 * or hangs is not decided here: the run itself then records the crash as a finding. */
static cd_status cl_available(const cd_runner_req *q, cd_error *err) {
    cd_subproc_opts so = {.timeout_s = q->timeout_s > 0 && q->timeout_s < 60 ? q->timeout_s : 60, .capture_err = true};
    cd_subproc sp;
    if (cd_subproc_fork(&sp, &so, cl_probe_child, (void *)q->bo) != 0) return CD_OK;
    cd_subproc_text t = {0};
    cd_subproc_result r;
    cd_subproc_wait(&sp, cd_subproc_collect, &t, &r);
    cd_status st = CD_OK;
    if (!r.sig && !r.timed_out && t.out_len > 1 && t.out[0])
        st = cd_err(err, (cd_status)(unsigned char)t.out[0], "%s", t.out + 1);
    free(t.out);
    return st;
}

static cd_status cl_prestart(const cd_runner_req *q, void **handle, cd_error *err) {
    *handle = NULL;
    if (!q->bo->isolate) return cl_available(q, err);
    bool answered = false;
    cd_status st = cd_runner_isolated_prestart(q, handle, &answered, err);
    /* answered: the device is there, or missing (st), or the child crashed or hung before it
     * said, which decides nothing (the run records it as a finding); else the probe */
    return st || answered ? st : cl_available(q, err);
}

static cd_status cl_placement(const cd_runner_req *q, cd_op_place *out, char *note, size_t nn, cd_error *err) {
    (void)err;
    const cd_plan *p = q->plan;
    for (int i = 0; i < p->g->n_ops; i++) {
        const cd_cl_op_def *d = NULL;
        int m = cd_cl_op_mode(p, q->bo, i, &d);
        cd_op_place *o = &out[i];
        memset(o, 0, sizeof *o);
        o->supported = p->defs[i] != NULL;
        const char *type = p->g->ops[i].type;
        switch (m) {
        case MODE_FEED:
            snprintf(o->where, sizeof o->where, "host");
            snprintf(o->kernel, sizeof o->kernel, "feed");
            break;
        case MODE_IDENTITY:
            snprintf(o->where, sizeof o->where, "none");
            snprintf(o->why, sizeof o->why, "%s passes its input through (no kernel)", type);
            break;
        case MODE_HOST:
            snprintf(o->where, sizeof o->where, "host");
            snprintf(o->why, sizeof o->why, "shape or index arithmetic on small integer tensors");
            break;
        case MODE_ARM_INT8:
            snprintf(o->where, sizeof o->where, "cpu-int8");
            snprintf(o->kernel, sizeof o->kernel, "%s (int8, as Paddle-Lite ARM)", type);
            snprintf(o->why, sizeof o->why, "Paddle-Lite keeps int8 layers on its ARM kernels (--int8-placement arm)");
            break;
        case MODE_KERNEL:
            snprintf(o->where, sizeof o->where, "opencl");
            snprintf(o->kernel, sizeof o->kernel, "kernels/%s.cl", d->family);
            snprintf(o->why, sizeof o->why, "(a failed build falls back to the CPU, reported per layer)");
            break;
        default:
            snprintf(o->where, sizeof o->where, "cpu-fallback");
            snprintf(o->kernel, sizeof o->kernel, "%s (CPU kernel)", type);
            snprintf(o->why, sizeof o->why, "no OpenCL kernel for %s", type);
        }
    }
    snprintf(note, nn, "cldiff's OpenCL kernels (kernels/*.cl), %s%s", p->prec == CD_PREC_FP16 ? "fp16" : "fp32",
             q->bo->kernel_dir ? "; kernels from --kernel-dir" : "");
    return CD_OK;
}

const cd_backend_def cd_backend_def_opencl = {
    .name = "opencl",
    .summary = "cldiff's OpenCL kernels on any OpenCL 1.2+ device, in an isolated child process",
    .op_by_op = true,
    .opencl = true,
    .opts = CL_OPTS,
    .apply_opts = cl_apply_opts,
    .run = cl_run,
    .open = cd_opencl_backend_open,
    .placement = cl_placement,
    .available = cl_available,
    .prestart = cl_prestart,
    .drop = cd_runner_isolated_drop,
    .check = cd_runner_isolated_check,
};
