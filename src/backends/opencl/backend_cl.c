/* The OpenCL backend: library, device, buffers per tensor, programs per op family and
 * variant (through the binary cache), dispatch through the cl_ops registry, and the CPU
 * fallback for ops without a usable kernel. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backends/opencl/backend_cl.h"
#include "backends/opencl/loader.h"

/* ------------------------------------------------------------------ kernel sources */

static const cd_embedded_kernel *embedded(const char *file) {
    for (int i = 0; cd_embedded_kernels[i].name; i++)
        if (!strcmp(cd_embedded_kernels[i].name, file)) return &cd_embedded_kernels[i];
    return NULL;
}

static char *read_text(const char *path, cd_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            size_t nc = cap ? cap * 2 : 16384;
            if (nc > (64u << 20)) {
                cd_err(err, CD_E_USAGE, "kernel file %s is larger than 64 MiB; not an OpenCL source", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            char *nb = realloc(buf, nc);
            if (!nb) { free(buf); fclose(f); cd_err(err, CD_E_NOMEM, "out of memory reading %s", path); return NULL; }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        cd_err(err, CD_E_USAGE, "cannot read kernel file %s: %s", path, strerror(errno));
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

char *cd_cl_kernel_source(const char *kernel_dir, const char *file, char *origin, size_t on, cd_error *err) {
    if (kernel_dir && *kernel_dir) {
        char path[1024];
        snprintf(path, sizeof path, "%.900s/%.100s", kernel_dir, file);
        cd_error e2;
        cd_err_clear(&e2);
        char *s = read_text(path, &e2);
        if (s) {
            if (origin) snprintf(origin, on, "%s", path);
            return s;
        }
        if (e2.code) { if (err) *err = e2; return NULL; }
    }
    const cd_embedded_kernel *k = embedded(file);
    if (!k) {
        cd_err(err, CD_E_USAGE, "no OpenCL kernel source %s (not embedded in this build%s%s)", file,
               kernel_dir && *kernel_dir ? " and not in --kernel-dir " : "", kernel_dir && *kernel_dir ? kernel_dir : "");
        return NULL;
    }
    if (origin) snprintf(origin, on, "embedded");
    char *s = cd_strdup(k->source);
    if (!s) cd_err(err, CD_E_NOMEM, "out of memory copying kernel %s", file);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void cd_cl_kernel_files_free(char **names, int n) {
    if (!names) return;
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

static bool push_name(char ***names, int *n, int *cap, const char *s) {
    for (int i = 0; i < *n; i++)
        if (!strcmp((*names)[i], s)) return true;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        char **nn = realloc(*names, (size_t)nc * sizeof *nn);
        if (!nn) return false;
        *names = nn;
        *cap = nc;
    }
    if (!((*names)[*n] = cd_strdup(s))) return false;
    (*n)++;
    return true;
}

int cd_cl_kernel_files(const char *kernel_dir, char ***names, cd_error *err) {
    *names = NULL;
    int n = 0, cap = 0;
    for (int i = 0; cd_embedded_kernels[i].name; i++)
        if (strcmp(cd_embedded_kernels[i].name, CD_CL_PRELUDE) && !push_name(names, &n, &cap, cd_embedded_kernels[i].name))
            goto oom;
    if (kernel_dir && *kernel_dir) {
        DIR *d = opendir(kernel_dir);
        if (!d) {
            cd_cl_kernel_files_free(*names, n);
            *names = NULL;
            cd_err(err, CD_E_USAGE, "--kernel-dir %s: %s", kernel_dir, strerror(errno));
            return -1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t l = strlen(e->d_name);
            if (l > 3 && !strcmp(e->d_name + l - 3, ".cl") && strcmp(e->d_name, CD_CL_PRELUDE) &&
                !push_name(names, &n, &cap, e->d_name)) {
                closedir(d);
                goto oom;
            }
        }
        closedir(d);
    }
    if (n) qsort(*names, (size_t)n, sizeof **names, cmp_str);
    return n;
oom:
    cd_cl_kernel_files_free(*names, n);
    *names = NULL;
    cd_err(err, CD_E_NOMEM, "out of memory listing kernel files");
    return -1;
}

const char *cd_cl_build_options(cd_cl_variant v, const cd_cl_devinfo *info) {
    bool cr = info && info->correct_div;
    switch (v) {
    case CD_CLV_FP16: return cr ? "-cl-std=CL1.2 -DCD_FP16=1 -cl-fp32-correctly-rounded-divide-sqrt" : "-cl-std=CL1.2 -DCD_FP16=1";
    case CD_CLV_FP16_COMPUTE:
        return cr ? "-cl-std=CL1.2 -DCD_FP16_COMPUTE=1 -cl-fp32-correctly-rounded-divide-sqrt" : "-cl-std=CL1.2 -DCD_FP16_COMPUTE=1";
    default: return cr ? "-cl-std=CL1.2 -DCD_FP32=1 -cl-fp32-correctly-rounded-divide-sqrt" : "-cl-std=CL1.2 -DCD_FP32=1";
    }
}

char *cd_cl_program_source(const char *kernel_dir, const char *family, cd_cl_variant v, cd_error *err) {
    char file[160];
    size_t fl = strlen(family);
    snprintf(file, sizeof file, "%.150s%s", family, fl > 3 && !strcmp(family + fl - 3, ".cl") ? "" : ".cl");
    char *pre = cd_cl_kernel_source(kernel_dir, CD_CL_PRELUDE, NULL, 0, err);
    if (!pre) return NULL;
    char *src = cd_cl_kernel_source(kernel_dir, file, NULL, 0, err);
    if (!src) { free(pre); return NULL; }
    const char *pragma = v == CD_CLV_FP16_COMPUTE ? "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" : "";
    size_t n = strlen(pragma) + strlen(pre) + strlen(src) + strlen(file) + 64;
    char *out = malloc(n);
    if (out) snprintf(out, n, "%s%s\n#line 1 \"%s\"\n%s", pragma, pre, file, src);
    else cd_err(err, CD_E_NOMEM, "out of memory assembling kernel %s", file);
    free(pre);
    free(src);
    return out;
}

static char *build_log(const cd_clfn *cl, cl_program p, cl_device_id dev) {
    size_t n = 0;
    if (cl->clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n == 0) return NULL;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    if (cl->clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, s, NULL) != CL_SUCCESS) { free(s); return NULL; }
    s[n] = 0;
    return s;
}

/* First line of the log that says something (drivers often start with blank lines). */
static void first_line(const char *log, char *out, size_t n) {
    out[0] = 0;
    if (!log) return;
    const char *p = log;
    while (*p) {
        while (*p == '\n' || *p == '\r' || *p == ' ' || *p == '\t') p++;
        size_t l = strcspn(p, "\r\n");
        if (l) {
            snprintf(out, n, "%.*s", (int)(l < n - 1 ? l : n - 1), p);
            return;
        }
        if (!*p) break;
    }
}

static cd_status build_from_source(const cd_clfn *cl, cl_context ctx, cl_device_id dev, const char *source,
                                   const char *options, cl_program *out, char **log, cd_error *err) {
    cl_int rc;
    const char *srcs[1] = {source};
    cl_program p = cl->clCreateProgramWithSource(ctx, 1, srcs, NULL, &rc);
    if (!p || rc != CL_SUCCESS)
        return cd_err(err, CD_E_BACKEND, "clCreateProgramWithSource failed: %s", cd_cl_err_name(rc));
    rc = cl->clBuildProgram(p, 1, &dev, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        char *l = build_log(cl, p, dev);
        char fl[300];
        first_line(l, fl, sizeof fl);
        cl->clReleaseProgram(p);
        cd_err(err, CD_E_UNSUPPORTED, "%s (clBuildProgram: %s, options \"%s\")", fl[0] ? fl : "build failed without a log",
               cd_cl_err_name(rc), options);
        if (log) *log = l; else free(l);
        return CD_E_UNSUPPORTED;
    }
    *out = p;
    return CD_OK;
}

cd_status cd_cl_build_program(const cd_clfn *cl, cl_context ctx, cl_device_id dev, const cd_cl_devinfo *info,
                              const char *source, const char *options, cd_cl_cache *cache, cl_program *out,
                              char **log, cd_error *err) {
    *out = NULL;
    if (log) *log = NULL;
    cd_cl_cache_key key;
    char driver[300];
    snprintf(driver, sizeof driver, "%s | %s", info ? info->driver : "", info ? info->platform_version : "");
    key.device = info ? info->name : "";
    key.driver = driver;
    key.options = options;
    cd_cl_cache_hash_source(&key, source, strlen(source));
    uint8_t *bin = NULL;
    size_t n = 0;
    if (cache && cd_cl_cache_get(cache, &key, &bin, &n)) {
        /* A binary that passed the checksum can still be refused (driver changed without a
         * version bump): it is then dropped and the source is built. */
        cl_int rc, bst = CL_SUCCESS;
        const unsigned char *bins[1] = {bin};
        cl_program p = cl->clCreateProgramWithBinary(ctx, 1, &dev, &n, bins, &bst, &rc);
        if (p && rc == CL_SUCCESS && bst == CL_SUCCESS) rc = cl->clBuildProgram(p, 1, &dev, options, NULL, NULL);
        free(bin);
        if (p && rc == CL_SUCCESS && bst == CL_SUCCESS) {
            *out = p;
            return CD_OK;
        }
        if (p) cl->clReleaseProgram(p);
        char why[128];
        snprintf(why, sizeof why, "driver refused the cached binary: %s", cd_cl_err_name(rc != CL_SUCCESS ? rc : bst));
        cd_cl_cache_drop(cache, &key, why);
    }
    cd_status st = build_from_source(cl, ctx, dev, source, options, out, log, err);
    if (st || !cache || !cache->enabled) return st;
    size_t bsz = 0;
    if (cl->clGetProgramInfo(*out, CL_PROGRAM_BINARY_SIZES, sizeof bsz, &bsz, NULL) == CL_SUCCESS && bsz > 0) {
        unsigned char *b = malloc(bsz);
        unsigned char *bp[1] = {b};
        if (b && cl->clGetProgramInfo(*out, CL_PROGRAM_BINARIES, sizeof bp, bp, NULL) == CL_SUCCESS)
            cd_cl_cache_put(cache, &key, b, bsz);
        free(b);
    }
    return CD_OK;
}

/* ------------------------------------------------------------------ runtime state */

typedef struct clbuf {   /* a device buffer shared by identity-aliased tensors */
    cl_mem mem;
    size_t bytes;
    int refs;
} clbuf;

typedef struct clprog {
    char family[64];
    cl_program prog;     /* NULL when the build failed */
    char *why;           /* first log line of a failed build */
    char *log;
    int n_k, cap_k;
    struct { char name[64]; cl_kernel k; } *kernels;
} clprog;

enum { MODE_FEED, MODE_IDENTITY, MODE_KERNEL, MODE_HOST, MODE_FALLBACK };

typedef struct clrt {
    cd_backend *b;
    cd_clfn cl;
    cd_cl_search search;
    cl_platform_id pid;
    cl_device_id dev;
    cd_cl_devinfo info;
    cl_context ctx;
    cl_command_queue q;
    cd_cl_cache cache;
    cd_cl_variant variant;
    char variant_note[256];
    const cd_plan *plan;
    int nt;
    clbuf **bufs;        /* per tensor id */
    cd_shape *shape;     /* current shape per tensor (dynamic ops shrink it) */
    cd_value *host;      /* scratch host values for fallback ops */
    int *mode;           /* per op */
    const cd_cl_op_def **cldef;
    int n_prog, cap_prog;
    clprog *progs;
    /* per op in flight */
    cl_event *ev;
    int n_ev, cap_ev;
    cl_mem *scratch;
    int n_scr, cap_scr;
    cd_cl_phase_fn phase;
    void *phase_user;
    int cur_op;          /* last op run_op was called for (read-back phase records) */
} clrt;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void phase(clrt *r, int op, const char *kernel, const char *ph) {
    if (r->phase) r->phase(r->phase_user, op, kernel, cd_cl_variant_name(r->variant), ph);
}

void cd_opencl_set_phase_hook(cd_backend *b, cd_cl_phase_fn fn, void *user) {
    clrt *r = b->impl;
    r->phase = fn;
    r->phase_user = user;
}

cd_cl_variant cd_opencl_variant(const cd_backend *b) { return ((const clrt *)b->impl)->variant; }

static const char *tname(const clrt *r, int id) { return r->plan->g->tensors[id].name; }

static size_t tensor_bytes(const clrt *r, int id) {
    int64_t n = cd_shape_numel(&r->shape[id]);
    return n > 0 ? (size_t)n * cd_dtype_size(r->plan->meta[id].dtype) : 0;
}

static void buf_unref(clrt *r, int id) {
    clbuf *b = r->bufs[id];
    if (!b) return;
    r->bufs[id] = NULL;
    if (--b->refs == 0) {
        if (b->mem) r->cl.clReleaseMemObject(b->mem);
        free(b);
    }
}

static cd_status buf_new(clrt *r, int id, size_t bytes, const void *init, cd_error *err) {
    buf_unref(r, id);
    clbuf *b = cd_calloc(1, sizeof *b, err);
    if (!b) return CD_E_NOMEM;
    cl_int rc;
    /* zero-element tensors (empty detections) still get a buffer: kernels may bind it */
    size_t alloc = bytes ? bytes : 16;
    cl_mem_flags fl = CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0);
    b->mem = r->cl.clCreateBuffer(r->ctx, fl, alloc, init && bytes ? (void *)init : NULL, &rc);
    if (init && !bytes) {   /* COPY_HOST_PTR needs a pointer; nothing to copy anyway */
        if (b->mem) r->cl.clReleaseMemObject(b->mem);
        b->mem = r->cl.clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, alloc, NULL, &rc);
    }
    if (!b->mem || rc != CL_SUCCESS) {
        free(b);
        return cd_err(err, rc == CL_OUT_OF_HOST_MEMORY ? CD_E_NOMEM : CD_E_BACKEND,
                      "clCreateBuffer(%zu bytes) for tensor '%s' failed: %s (device global memory %.1f MiB, "
                      "max buffer %.1f MiB)", alloc, tname(r, id), cd_cl_err_name(rc),
                      (double)r->info.global_mem / 1048576.0, (double)r->info.max_alloc / 1048576.0);
    }
    b->bytes = bytes;
    b->refs = 1;
    r->bufs[id] = b;
    return CD_OK;
}

/* Device buffer of a tensor; parameters are uploaded on first use. */
static cd_status buf_get(clrt *r, int id, cl_mem *out, cd_error *err) {
    *out = NULL;
    if (id < 0 || id >= r->nt) return cd_err(err, CD_E_INTERNAL, "tensor id %d out of range", id);
    if (!r->bufs[id]) {
        const cd_value *m = &r->plan->meta[id];
        if (r->plan->g->tensors[id].persistable && m->data) {
            cd_status st = buf_new(r, id, m->nbytes, m->data, err);
            if (st) return st;
        } else {
            cd_status st = buf_new(r, id, tensor_bytes(r, id), NULL, err);
            if (st) return st;
        }
    }
    *out = r->bufs[id]->mem;
    return CD_OK;
}

static cl_mem cb_buf(cd_cl_ctx *c, int id) {
    clrt *r = c->rt;
    cl_mem m;
    cd_error e;
    return buf_get(r, id, &m, &e) ? NULL : m;
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
        if (!np) { cd_err(err, CD_E_NOMEM, "out of memory"); return NULL; }
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
    phase(r, op_index, family, "build");
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
        if (!strcmp(p->kernels[i].name, name)) { *out = p->kernels[i].k; return CD_OK; }
    cl_int rc;
    cl_kernel k = r->cl.clCreateKernel(p->prog, name, &rc);
    if (!k || rc != CL_SUCCESS)
        return cd_err(err, CD_E_UNSUPPORTED, "clCreateKernel(%s) in %s.cl (%s) failed: %s", name, family,
                      cd_cl_variant_name(r->variant), cd_cl_err_name(rc));
    if (p->n_k == p->cap_k) {
        int nc = p->cap_k ? p->cap_k * 2 : 8;
        void *nk = realloc(p->kernels, (size_t)nc * sizeof *p->kernels);
        if (!nk) { r->cl.clReleaseKernel(k); return cd_err(err, CD_E_NOMEM, "out of memory"); }
        p->kernels = nk;
        p->cap_k = nc;
    }
    snprintf(p->kernels[p->n_k].name, sizeof p->kernels[p->n_k].name, "%s", name);
    p->kernels[p->n_k++].k = k;
    *out = k;
    return CD_OK;
}

static void fmt_dims(char *buf, size_t n, cl_uint dims, const size_t *v) {
    if (!v) { snprintf(buf, n, "auto"); return; }
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
            if (r->progs[i].kernels[j].k == k) { snprintf(kname, sizeof kname, "%s", r->progs[i].kernels[j].name); break; }
    if (dims < 1 || dims > 3)
        return cd_err(err, CD_E_INTERNAL, "op #%d %s: kernel %s launched with %u dimensions", c->op_index,
                      c->op->name, kname, (unsigned)dims);
    for (cl_uint i = 0; i < dims; i++)
        if (global[i] == 0) return CD_OK;   /* empty tensor: nothing to do */
    if (r->n_ev == r->cap_ev) {
        int nc = r->cap_ev ? r->cap_ev * 2 : 8;
        cl_event *ne = realloc(r->ev, (size_t)nc * sizeof *ne);
        if (!ne) return cd_err(err, CD_E_NOMEM, "out of memory");
        r->ev = ne;
        r->cap_ev = nc;
    }
    phase(r, c->op_index, kname, "run");
    cl_event ev = NULL;
    cl_int rc = r->cl.clEnqueueNDRangeKernel(r->q, k, dims, NULL, global, local, 0, NULL, &ev);
    if (rc != CL_SUCCESS) {
        char g[64], l[64];
        fmt_dims(g, sizeof g, dims, global);
        fmt_dims(l, sizeof l, dims, local);
        return cd_err(err, CD_E_BACKEND, "clEnqueueNDRangeKernel(kernel %s, global %s, local %s) failed: %s",
                      kname, g, l, cd_cl_err_name(rc));
    }
    r->ev[r->n_ev++] = ev;
    return CD_OK;
}

static cl_mem cb_scratch(cd_cl_ctx *c, size_t bytes, cd_error *err) {
    clrt *r = c->rt;
    if (r->n_scr == r->cap_scr) {
        int nc = r->cap_scr ? r->cap_scr * 2 : 4;
        cl_mem *ns = realloc(r->scratch, (size_t)nc * sizeof *ns);
        if (!ns) { cd_err(err, CD_E_NOMEM, "out of memory"); return NULL; }
        r->scratch = ns;
        r->cap_scr = nc;
    }
    cl_int rc;
    cl_mem m = r->cl.clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 16, NULL, &rc);
    if (!m || rc != CL_SUCCESS) {
        cd_err(err, CD_E_BACKEND, "op #%d %s: scratch clCreateBuffer(%zu bytes) failed: %s", c->op_index,
               c->op->name, bytes, cd_cl_err_name(rc));
        return NULL;
    }
    r->scratch[r->n_scr++] = m;
    return m;
}

/* Waits for the op's work and releases its events and scratch; returns device time. */
static cd_status finish_op(clrt *r, double *kernel_us, cd_error *err) {
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

/* ------------------------------------------------------------------ vtable */

static cd_cl_variant choose_variant(const cd_backend_opts *o, const cd_cl_devinfo *info, char *note, size_t n) {
    note[0] = 0;
    if (o->prec != CD_PREC_FP16) return CD_CLV_FP32;
    if (o->fp16_compute && info->fp16) return CD_CLV_FP16_COMPUTE;
    if (o->fp16_compute)
        snprintf(note, n, "--fp16-compute asked, but %s lacks cl_khr_fp16: half storage with float arithmetic",
                 info->name);
    return CD_CLV_FP16;
}

static void release_op_state(clrt *r) {
    cd_error e;
    finish_op(r, NULL, &e);
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
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        const cd_op_def *def = plan->defs[i];
        if (!strcmp(op->type, "feed")) r->mode[i] = MODE_FEED;
        else if (def && (def->flags & CD_OPF_IDENTITY)) r->mode[i] = MODE_IDENTITY;
        else if (def && (def->flags & CD_OPF_HOST)) r->mode[i] = MODE_HOST;
        else if (def && (def->flags & CD_OPF_SHAPE) && int_outputs(plan, op) &&
                 !(float_activation_input(plan, op) && cd_cl_op_find(op->type)))
            r->mode[i] = MODE_HOST;   /* shape arithmetic on small integer tensors */
        else if ((r->cldef[i] = cd_cl_op_find(op->type))) r->mode[i] = MODE_KERNEL;
        else r->mode[i] = MODE_FALLBACK;
    }
    /* Parameters go up front so an out-of-memory device fails before the run, naming the
     * tensor, rather than in the middle of it. */
    for (int t = 0; t < r->nt; t++) {
        if (!g->tensors[t].persistable || !plan->meta[t].data || plan->last_use[t] < 0) continue;
        cl_mem m;
        cd_status st = buf_get(r, t, &m, err);
        if (st) return cd_err_prefix(err, "uploading parameter '%s': ", tname(r, t));
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
                      tname(r, id), cd_dtype_name(host->dtype), cd_shape_str(&host->shape, a, sizeof a),
                      cd_dtype_name(m->dtype), cd_shape_str(&m->shape, c, sizeof c));
    r->shape[id] = m->shape;
    /* the local check sets activations too: no host copy of an older value may survive */
    cd_value_release(&r->host[id]);
    memset(&r->host[id], 0, sizeof r->host[id]);
    return buf_new(r, id, host->nbytes, host->nbytes ? host->data : NULL, err);
}

static cd_status read_dev(clrt *r, int id, void *dst, size_t bytes, cd_error *err) {
    if (!bytes) return CD_OK;
    clbuf *bf = r->bufs[id];
    if (!bf) return cd_err(err, CD_E_INTERNAL, "tensor '%s' (id %d) has no device buffer (never produced or released)",
                           tname(r, id), id);
    if (bf->bytes < bytes)
        return cd_err(err, CD_E_INTERNAL, "tensor '%s' device buffer holds %zu bytes, %zu wanted", tname(r, id),
                      bf->bytes, bytes);
    cl_int rc = r->cl.clEnqueueReadBuffer(r->q, bf->mem, CL_TRUE, 0, bytes, dst, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return cd_err(err, CD_E_BACKEND, "clEnqueueReadBuffer of tensor '%s' (%zu bytes) failed: %s", tname(r, id),
                      bytes, cd_cl_err_name(rc));
    return CD_OK;
}

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
static cd_status run_on_host(clrt *r, int i, cd_error *err) {
    const cd_plan *plan = r->plan;
    const cd_graph *g = plan->g;
    const cd_op *op = &g->ops[i];
    const cd_op_def *def = plan->defs[i];
    cd_op_ctx c = {.g = g, .op = op, .op_index = i, .vals = r->host, .prec = plan->prec,
                   .threads = r->b->opts.threads > 0 ? r->b->opts.threads : 1, .err = err};
    if (!def || !def->run) return cd_op_fail(&c, CD_E_UNSUPPORTED, "no CPU kernel for op type '%s'", op->type);
    cd_status st = CD_OK;
    bool reinfer = false;  /* an input's run-time shape differs from the plan (after nms) */
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
            phase(r, i, op->type, "read-back");
            st = read_dev(r, id, v->data, v->nbytes, err);
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
    if (!st) st = def->run(&c);
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
            st = buf_new(r, id, bytes, bytes ? v->data : NULL, err);
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
static cd_status run_identity(clrt *r, int i, bool *need_host, cd_error *err) {
    const cd_op *op = &r->plan->g->ops[i];
    int src = first_id(op->in, op->n_in);
    *need_host = false;
    if (src < 0) return CD_OK;
    cl_mem m;
    if (!r->bufs[src] && !(r->plan->g->tensors[src].persistable && r->plan->meta[src].data)) {
        *need_host = true;
        return CD_OK;
    }
    cd_status st = buf_get(r, src, &m, err);
    if (st) return st;
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            if (r->plan->meta[id].dtype != r->plan->meta[src].dtype ||
                cd_shape_numel(&r->plan->meta[id].shape) != cd_shape_numel(&r->shape[src])) {
                *need_host = true;   /* a converting identity (dtype or size change): CPU kernel */
                return CD_OK;
            }
        }
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0 || id == src) continue;
            buf_unref(r, id);
            r->bufs[id] = r->bufs[src];
            r->bufs[id]->refs++;
            r->shape[id] = r->plan->meta[id].shape;
        }
    return CD_OK;
}

static cd_status cl_run_op(cd_backend *b, int i, cd_op_report *rep, cd_error *err) {
    clrt *r = b->impl;
    const cd_plan *plan = r->plan;
    const cd_graph *g = plan->g;
    const cd_op *op = &g->ops[i];
    const char *vn = cd_cl_variant_name(r->variant);
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
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id >= 0 && !r->bufs[id])
                    return cd_err(err, CD_E_INTERNAL, "op #%d %s (feed): model input '%s' was not set before the run",
                                  i, op->name, tname(r, id));
            }
        break;
    case MODE_IDENTITY: {
        bool need_host;
        snprintf(rep->kernel, sizeof rep->kernel, "(alias)");
        if ((st = run_identity(r, i, &need_host, err))) break;
        if (need_host) {
            snprintf(rep->where, sizeof rep->where, "host");
            snprintf(rep->kernel, sizeof rep->kernel, "%s:cpu", op->type);
            snprintf(rep->note, sizeof rep->note, "converting identity op copied on the host");
            st = run_on_host(r, i, err);
        }
        break;
    }
    case MODE_HOST:
        snprintf(rep->where, sizeof rep->where, "host");
        snprintf(rep->kernel, sizeof rep->kernel, "%s:cpu", op->type);
        snprintf(rep->note, sizeof rep->note, "%s runs on the host in every backend",
                 plan->defs[i]->flags & CD_OPF_HOST ? "detection post-processing" : "shape arithmetic");
        st = run_on_host(r, i, err);
        break;
    case MODE_KERNEL: {
        const cd_cl_op_def *d = r->cldef[i];
        /* build before the clock starts: elapsed_us is the op's run, not the compiler */
        cd_error e;
        cd_err_clear(&e);
        clprog *p = ensure_prog(r, i, d->family, &e);
        if (!p) { st = cd_err(err, e.code, "%s", e.msg); break; }
        if (!p->prog) {
            snprintf(why, sizeof why, "kernel %s (%s) failed to build: %s", d->family, vn, p->why ? p->why : "?");
            break;
        }
        t0 = now_us();
        /* outputs sized from the plan before enqueue */
        for (int s = 0; s < op->n_out && !st; s++)
            for (int k = 0; k < op->out[s].n && !st; k++) {
                int id = op->out[s].ids[k];
                if (id < 0) continue;
                r->shape[id] = plan->meta[id].shape;
                st = buf_new(r, id, tensor_bytes(r, id), NULL, err);
            }
        if (st) break;
        cd_cl_ctx c = {.cl = &r->cl, .context = r->ctx, .queue = r->q, .device = r->dev,
                       .cpu_device = !strcmp(r->info.type, "CPU") && !getenv("CLDIFF_CL_GPU_KERNELS"), .plan = plan, .op = op,
                       .op_index = i, .variant = r->variant, .buf = cb_buf, .kernel = cb_kernel,
                       .launch = cb_launch, .scratch = cb_scratch, .rt = r};
        st = d->enqueue(&c, &e);
        if (!st) st = finish_op(r, &rep->kernel_us, &e);
        else release_op_state(r);
        snprintf(rep->kernel, sizeof rep->kernel, "%s:%s", d->family, vn);
        if (st == CD_E_UNSUPPORTED || st == CD_E_BACKEND) {
            /* the kernel cannot run this op (attribute it lacks, build or enqueue failure):
             * the CPU computes it and the report says why */
            snprintf(why, sizeof why, "%.255s", e.msg);
            st = CD_OK;
            rep->kernel_us = -1;
        } else if (st) {
            cd_err(err, st, "op #%d %s (%s): %s", i, op->name, op->type, e.msg);
        }
        break;
    }
    default:
        snprintf(why, sizeof why, "no OpenCL kernel for op type %s", op->type);
        break;
    }
    if (!st && why[0]) {
        snprintf(rep->where, sizeof rep->where, "cpu-fallback");
        snprintf(rep->kernel, sizeof rep->kernel, "%s:cpu", op->type);
        snprintf(rep->note, sizeof rep->note, "%s", why);
        st = run_on_host(r, i, err);
    }
    rep->elapsed_us = now_us() - t0;
    return st;
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
    phase(r, r->cur_op, tname(r, id), "read-back");
    st = read_dev(r, id, host->data, host->nbytes, err);
    if (st) cd_value_release(host);
    return st;
}

static void cl_release(cd_backend *b, int id) {
    clrt *r = b->impl;
    if (r->plan && id >= 0 && id < r->nt) buf_unref(r, id);
}

static void cl_close(cd_backend *b) {
    if (!b) return;
    clrt *r = b->impl;
    if (r) {
        if (r->q) { r->cl.clFinish(r->q); release_op_state(r); }
        for (int t = 0; t < r->nt && r->bufs; t++) buf_unref(r, t);
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
    .name = "opencl", .prepare = cl_prepare, .set_input = cl_set_input, .run_op = cl_run_op,
    .read = cl_read, .release = cl_release, .close = cl_close, .describe = cl_describe,
};

cd_status cd_opencl_backend_open(const cd_backend_opts *opts, cd_backend **out, cd_error *err) {
    *out = NULL;
    cd_backend *b = cd_calloc(1, sizeof *b, err);
    if (!b) return CD_E_NOMEM;
    clrt *r = cd_calloc(1, sizeof *r, err);
    if (!r) { free(b); return CD_E_NOMEM; }
    b->vt = &k_cl_vt;
    b->opts = *opts;
    b->impl = r;
    r->b = b;
    r->cur_op = -1;
    cd_status st = cd_cl_load(opts->cl_lib, &r->cl, &r->search, err);
    if (!st) st = cd_cl_pick(&r->cl, opts->cl_platform, opts->cl_device, &r->pid, &r->dev, &r->info, err);
    if (st) { cl_close(b); return st; }
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
