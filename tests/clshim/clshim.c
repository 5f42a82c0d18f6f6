/* Fault-injection OpenCL library for the tests. Loaded by cldiff with --cl-lib, it forwards
 * every call to the real ICD loader (CLSHIM_REAL_LIB, default libOpenCL.so.1, opened with
 * RTLD_LOCAL) and misbehaves as the environment says:
 *   CLSHIM_NO_PLATFORMS=1         clGetPlatformIDs reports no platform (CL_PLATFORM_NOT_FOUND_KHR)
 *   CLSHIM_FAIL_BUILD=<substring>  clBuildProgram of a program whose source contains the
 *                                  substring fails with CL_BUILD_PROGRAM_FAILURE and a fake log
 *   CLSHIM_ABORT_BUILD=<substring> clBuildProgram of such a program prints an LLVM-style error
 *                                  and calls abort() (what Mali's compiler does)
 *   CLSHIM_ENQUEUE_OOR=<n>         the n-th clEnqueueNDRangeKernel (1-based) returns
 *                                  CL_OUT_OF_RESOURCES
 *   CLSHIM_HANG_FINISH=1           clFinish never returns
 *   CLSHIM_HANG_MARKER=<path>      with CLSHIM_HANG_FINISH: created when clFinish starts to
 *                                  hang (the test's evidence that the run reached the hang)
 *   CLSHIM_LOAD_LOG=<path>         each clGetPlatformIDs appends "<pid>\n" (which processes
 *                                  started the driver)
 * The family name matches through the `#line 1 "<family>.cl"` the runtime puts in every
 * program, so CLSHIM_FAIL_BUILD=conv.cl fails exactly the conv family. */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *g_real;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void *sym(const char *name) {
    pthread_mutex_lock(&g_lock);
    if (!g_real) {
        const char *lib = getenv("CLSHIM_REAL_LIB");
        g_real = dlopen(lib && *lib ? lib : "libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!g_real) {
            fprintf(stderr, "clshim: cannot load the real OpenCL library: %s\n", dlerror());
            abort();
        }
    }
    pthread_mutex_unlock(&g_lock);
    void *f = dlsym(g_real, name);
    if (!f) {
        fprintf(stderr, "clshim: the real OpenCL library lacks %s\n", name);
        abort();
    }
    return f;
}

#define REAL(name) ((__typeof__(&name))sym(#name))
#define FWD(ret, name, params, args)                                                                                   \
    CL_API_ENTRY ret CL_API_CALL name params { return REAL(name) args; }

/* Programs created from source, with the substring test already answered. */
#define MAX_PROGS 1024
static struct {
    cl_program p;
    int fail, abort_;
} g_progs[MAX_PROGS];
static int g_nprogs;
static const char k_fake_log[] = "<clshim>:1:1: error: injected build failure (CLSHIM_FAIL_BUILD)\n"
                                 "note: this log comes from the fault-injection shim, not from a compiler\n";

static int env_match(const char *var, const char *src) {
    const char *s = getenv(var);
    return s && *s && src && strstr(src, s);
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformIDs(cl_uint n, cl_platform_id *p, cl_uint *np) {
    const char *lg = getenv("CLSHIM_LOAD_LOG");
    if (lg && *lg) {
        FILE *f = fopen(lg, "a");
        if (f) {
            fprintf(f, "%ld\n", (long)getpid());
            fclose(f);
        }
    }
    const char *e = getenv("CLSHIM_NO_PLATFORMS");
    if (e && !strcmp(e, "1")) {
        if (np) *np = 0;
        return -1001; /* CL_PLATFORM_NOT_FOUND_KHR, what the ICD loader says without drivers */
    }
    return REAL(clGetPlatformIDs)(n, p, np);
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context c, cl_uint n, const char **s, const size_t *l,
                                                              cl_int *rc) {
    cl_program p = REAL(clCreateProgramWithSource)(c, n, s, l, rc);
    if (!p) return p;
    int fail = 0, ab = 0;
    for (cl_uint i = 0; i < n; i++) {
        /* sources may be counted (l[i]) rather than terminated */
        size_t len = l && l[i] ? l[i] : strlen(s[i]);
        char *copy = malloc(len + 1);
        if (!copy) continue;
        memcpy(copy, s[i], len);
        copy[len] = 0;
        fail |= env_match("CLSHIM_FAIL_BUILD", copy);
        ab |= env_match("CLSHIM_ABORT_BUILD", copy);
        free(copy);
    }
    pthread_mutex_lock(&g_lock);
    if (g_nprogs < MAX_PROGS) {
        g_progs[g_nprogs].p = p;
        g_progs[g_nprogs].fail = fail;
        g_progs[g_nprogs].abort_ = ab;
        g_nprogs++;
    }
    pthread_mutex_unlock(&g_lock);
    return p;
}

static int prog_flags(cl_program p, int *ab) {
    int fail = 0;
    *ab = 0;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nprogs; i++)
        if (g_progs[i].p == p) {
            fail = g_progs[i].fail;
            *ab = g_progs[i].abort_;
        }
    pthread_mutex_unlock(&g_lock);
    return fail;
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program p, cl_uint nd, const cl_device_id *d, const char *opt,
                                               void(CL_CALLBACK *cb)(cl_program, void *), void *ud) {
    int ab, fail = prog_flags(p, &ab);
    if (ab) {
        fprintf(stderr, "LLVM ERROR: Cannot select: injected by clshim (CLSHIM_ABORT_BUILD)\n");
        fflush(stderr);
        abort();
    }
    if (fail) return CL_BUILD_PROGRAM_FAILURE;
    return REAL(clBuildProgram)(p, nd, d, opt, cb, ud);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program p, cl_device_id d, cl_program_build_info what,
                                                      size_t n, void *v, size_t *nr) {
    int ab;
    if (prog_flags(p, &ab) && what == CL_PROGRAM_BUILD_LOG) {
        if (nr) *nr = sizeof k_fake_log;
        if (v) {
            if (n < sizeof k_fake_log) return CL_INVALID_VALUE;
            memcpy(v, k_fake_log, sizeof k_fake_log);
        }
        return CL_SUCCESS;
    }
    return REAL(clGetProgramBuildInfo)(p, d, what, n, v, nr);
}

static int g_enqueues;
CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t *off,
                                                       const size_t *g, const size_t *l, cl_uint nw, const cl_event *w,
                                                       cl_event *ev) {
    const char *e = getenv("CLSHIM_ENQUEUE_OOR");
    int n = __atomic_add_fetch(&g_enqueues, 1, __ATOMIC_SEQ_CST);
    if (e && *e && atoi(e) == n) return CL_OUT_OF_RESOURCES;
    return REAL(clEnqueueNDRangeKernel)(q, k, dims, off, g, l, nw, w, ev);
}

CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue q) {
    const char *e = getenv("CLSHIM_HANG_FINISH");
    if (e && !strcmp(e, "1")) {
        const char *m = getenv("CLSHIM_HANG_MARKER");
        if (m && *m) {
            FILE *f = fopen(m, "w");
            if (f) fclose(f);
        }
        for (;;) pause(); /* a GPU that never signals completion */
    }
    return REAL(clFinish)(q);
}

FWD(cl_int, clGetPlatformInfo, (cl_platform_id p, cl_platform_info w, size_t n, void *v, size_t *r), (p, w, n, v, r))
FWD(cl_int, clGetDeviceIDs, (cl_platform_id p, cl_device_type t, cl_uint n, cl_device_id *d, cl_uint *r),
    (p, t, n, d, r))
FWD(cl_int, clGetDeviceInfo, (cl_device_id d, cl_device_info w, size_t n, void *v, size_t *r), (d, w, n, v, r))
FWD(cl_context, clCreateContext,
    (const cl_context_properties *p, cl_uint n, const cl_device_id *d,
     void(CL_CALLBACK *cb)(const char *, const void *, size_t, void *), void *u, cl_int *e),
    (p, n, d, cb, u, e))
FWD(cl_int, clReleaseContext, (cl_context c), (c))
FWD(cl_command_queue, clCreateCommandQueue, (cl_context c, cl_device_id d, cl_command_queue_properties p, cl_int *e),
    (c, d, p, e))
FWD(cl_int, clReleaseCommandQueue, (cl_command_queue q), (q))
FWD(cl_mem, clCreateBuffer, (cl_context c, cl_mem_flags f, size_t n, void *h, cl_int *e), (c, f, n, h, e))
FWD(cl_int, clReleaseMemObject, (cl_mem m), (m))
FWD(cl_program, clCreateProgramWithBinary,
    (cl_context c, cl_uint n, const cl_device_id *d, const size_t *l, const unsigned char **b, cl_int *s, cl_int *e),
    (c, n, d, l, b, s, e))
FWD(cl_int, clGetProgramInfo, (cl_program p, cl_program_info w, size_t n, void *v, size_t *r), (p, w, n, v, r))
FWD(cl_int, clReleaseProgram, (cl_program p), (p))
FWD(cl_kernel, clCreateKernel, (cl_program p, const char *n, cl_int *e), (p, n, e))
FWD(cl_int, clReleaseKernel, (cl_kernel k), (k))
FWD(cl_int, clSetKernelArg, (cl_kernel k, cl_uint i, size_t n, const void *v), (k, i, n, v))
FWD(cl_int, clGetKernelWorkGroupInfo,
    (cl_kernel k, cl_device_id d, cl_kernel_work_group_info w, size_t n, void *v, size_t *r), (k, d, w, n, v, r))
FWD(cl_int, clEnqueueReadBuffer,
    (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, void *p, cl_uint nw, const cl_event *w, cl_event *e),
    (q, m, b, o, n, p, nw, w, e))
FWD(cl_int, clEnqueueWriteBuffer,
    (cl_command_queue q, cl_mem m, cl_bool b, size_t o, size_t n, const void *p, cl_uint nw, const cl_event *w,
     cl_event *e),
    (q, m, b, o, n, p, nw, w, e))
FWD(cl_int, clEnqueueFillBuffer,
    (cl_command_queue q, cl_mem m, const void *pat, size_t ps, size_t o, size_t n, cl_uint nw, const cl_event *w,
     cl_event *e),
    (q, m, pat, ps, o, n, nw, w, e))
FWD(cl_int, clEnqueueCopyBuffer,
    (cl_command_queue q, cl_mem s, cl_mem d, size_t so, size_t dof, size_t n, cl_uint nw, const cl_event *w,
     cl_event *e),
    (q, s, d, so, dof, n, nw, w, e))
FWD(cl_int, clFlush, (cl_command_queue q), (q))
FWD(cl_int, clWaitForEvents, (cl_uint n, const cl_event *e), (n, e))
FWD(cl_int, clGetEventProfilingInfo, (cl_event ev, cl_profiling_info w, size_t n, void *v, size_t *r), (ev, w, n, v, r))
FWD(cl_int, clReleaseEvent, (cl_event e), (e))
