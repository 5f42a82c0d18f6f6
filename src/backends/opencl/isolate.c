/* The isolating parent/child pair for OpenCL runs (see isolate.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <omp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/error.h"
#include "backends/opencl/backend_cl.h"
#include "backends/opencl/isolate.h"
#include "backends/opencl/device.h"
#include "backends/opencl/loader.h"
#include "util/sha256.h"
#include "util/subproc.h"

#define MAX_FAMILIES 64

enum { REC_PHASE = 1, REC_HIT = 2, REC_DONE = 3, REC_DESC = 4, REC_RESULT = 5, REC_SETTLED = 6, REC_PROBE = 7 };

typedef struct {
    uint32_t type, len;
} rec_hdr;

typedef struct {
    int32_t op;
    char kernel[64], variant[16], phase[16];
} rec_phase;

typedef struct {
    int32_t op, tensor, dtype, rank;
    /* 1: a hit of the local pass (the parent's xopts->local_sink); 2: an activation for the
     * parent's record only (xopts->record), not probed */
    int32_t local, pad_;
    int64_t dims[CD_MAX_RANK];
    uint64_t nbytes;
    cd_op_report rep;
} rec_hit; /* followed by nbytes of data */

typedef struct {
    int32_t op;
    cd_op_report rep;
} rec_done;

typedef struct {
    char device[256], driver[512];
} rec_desc;

typedef struct {
    int32_t status;
    char msg[CD_ERR_MSG];
} rec_result;

/* ------------------------------------------------------------------ child */

typedef struct {
    int fd;
    bool broken; /* the parent went away: stop writing, finish quietly */
    int local;   /* tag of the hits sent through this context */
} child_ctx;

static void write_all(child_ctx *c, const void *p, size_t n) {
    const char *s = p;
    while (n && !c->broken) {
        ssize_t w = write(c->fd, s, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            c->broken = true;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

static void send_rec(child_ctx *c, uint32_t type, const void *p, size_t n, const void *extra, size_t en) {
    rec_hdr h = {type, (uint32_t)(n + en)};
    write_all(c, &h, sizeof h);
    write_all(c, p, n);
    if (en) write_all(c, extra, en);
}

static void child_phase(void *user, int op, const char *kernel, const char *variant, const char *phase) {
    rec_phase r;
    memset(&r, 0, sizeof r);
    r.op = op;
    snprintf(r.kernel, sizeof r.kernel, "%s", kernel ? kernel : "");
    snprintf(r.variant, sizeof r.variant, "%s", variant ? variant : "");
    snprintf(r.phase, sizeof r.phase, "%s", phase ? phase : "");
    send_rec(user, REC_PHASE, &r, sizeof r, NULL, 0);
}

static cd_status child_hit(void *user, int op, int tensor, const cd_value *host, const cd_op_report *rep,
                           cd_error *err) {
    child_ctx *c = user;
    rec_hit h;
    memset(&h, 0, sizeof h);
    h.op = op;
    h.tensor = tensor;
    h.local = c->local;
    h.dtype = (int32_t)host->dtype;
    h.rank = host->shape.rank;
    /* only the dims below the rank are defined (shape inference leaves the rest as it
     * found them); the others stay 0 rather than carrying stack bytes to the parent */
    for (int i = 0; i < host->shape.rank && i < CD_MAX_RANK; i++) h.dims[i] = host->shape.d[i];
    h.nbytes = host->nbytes;
    if (rep) h.rep = *rep;
    if (host->nbytes > UINT32_MAX - sizeof h)
        return cd_err(err, CD_E_NOMEM, "tensor of op #%d is %zu bytes, too large to stream to the parent", op,
                      host->nbytes);
    send_rec(c, REC_HIT, &h, sizeof h, host->data, host->nbytes);
    return c->broken ? cd_err(err, CD_E_IO, "the parent process stopped reading") : CD_OK;
}

static void child_done(void *user, int op, const cd_op_report *rep) {
    rec_done d;
    memset(&d, 0, sizeof d);
    d.op = op;
    if (rep) d.rep = *rep;
    send_rec(user, REC_DONE, &d, sizeof d, NULL, 0);
}

typedef struct {
    int32_t op, pad_;
    cd_settle_info info;
} rec_settled;

static void child_settled(void *user, int op, const cd_settle_info *info) {
    rec_settled r;
    memset(&r, 0, sizeof r);
    r.op = op;
    if (info) r.info = *info;
    send_rec(user, REC_SETTLED, &r, sizeof r, NULL, 0);
}

static void child_result(child_ctx *c, cd_status st, const cd_error *err) {
    rec_result r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)st;
    if (st) snprintf(r.msg, sizeof r.msg, "%s", err->msg);
    send_rec(c, REC_RESULT, &r, sizeof r, NULL, 0);
}

/* A prestarted child (cmd_fd >= 0) prepares its backend before the run's inputs for the local
 * pass exist, then waits for the parent's go; cd_execute's prepare then only returns what the
 * early one did. */
static cd_status pre_status;
static cd_error pre_err;
static cd_status prepared_already(cd_backend *b, const cd_plan *plan, cd_error *err) {
    (void)b;
    (void)plan;
    if (pre_status && err) *err = pre_err;
    return pre_status;
}

/* The availability answer of a prestarted child, as the probe (backend_cl_def.c) gives it:
 * the library loaded and the device chosen as the run will. */
static void child_probe(child_ctx *c, const cd_backend_opts *o) {
    cd_clfn cl;
    cd_error e;
    cd_err_clear(&e);
    cl_platform_id pid;
    cl_device_id did;
    cd_cl_devinfo info;
    cd_status st = cd_cl_load(o->cl_lib, &cl, NULL, &e);
    if (!st) st = cd_cl_pick(&cl, o->cl_platform, o->cl_device, &pid, &did, &info, &e);
    rec_result r;
    memset(&r, 0, sizeof r);
    r.status = (int32_t)st;
    if (st) snprintf(r.msg, sizeof r.msg, "%s", e.msg);
    send_rec(c, REC_PROBE, &r, sizeof r, NULL, 0);
    if (st) _exit(0);
}

static void child_main(int fd, const cd_plan *plan, const cd_backend_opts *opts, const cd_value *inputs,
                       const cd_exec_opts *xopts, bool want_hits, int cmd_fd) {
    child_ctx c = {.fd = fd};
    /* libgomp's thread pool does not survive fork(): parallel regions in the child would
     * wait for threads that do not exist. CPU fallback ops run single-threaded here. */
    omp_set_num_threads(1);
    cd_backend_opts o = *opts;
    o.threads = 1;
    cd_error err;
    cd_err_clear(&err);
    if (cmd_fd >= 0) {
        /* the driver as the run would set it up (backend_cl.c sets this before it starts) */
        setenv("POCL_WORK_GROUP_SPECIALIZATION", "0", 0);
        child_probe(&c, &o);
    }
    child_phase(&c, -1, "", "", "setup");
    cd_backend *b = NULL;
    cd_status st = cd_opencl_backend_open(&o, &b, &err);
    if (st) {
        child_result(&c, st, &err);
        _exit(0);
    }
    rec_desc d;
    memset(&d, 0, sizeof d);
    if (b->vt->describe) b->vt->describe(b, d.device, sizeof d.device, d.driver, sizeof d.driver);
    send_rec(&c, REC_DESC, &d, sizeof d, NULL, 0);
    cd_opencl_set_phase_hook(b, child_phase, &c);
    child_phase(&c, -1, "", cd_cl_variant_name(cd_opencl_variant(b)), "prepare");
    static cd_backend_vt pre_vt;
    if (cmd_fd >= 0) {
        /* parameters uploaded while the parent runs A; then the go (or the end: not needed) */
        cd_err_clear(&pre_err);
        pre_status = b->vt->prepare(b, plan, &pre_err);
        pre_vt = *b->vt;
        pre_vt.prepare = prepared_already;
        b->vt = &pre_vt;
        /* and the programs of the plan's kernel families that the program cache holds (built
         * from it here as the first op of each would; one that is not cached is built by the
         * builders ahead or by its first op, as before) */
        const char *fam[MAX_FAMILIES];
        int nf = pre_status ? 0 : cd_cl_plan_families(plan, &o, fam, MAX_FAMILIES);
        for (int i = 0; i < nf; i++) {
            cd_error fe;
            cd_err_clear(&fe);
            if (cd_opencl_family_cached(b, fam[i], NULL, 0) > 0) (void)cd_opencl_build_family(b, fam[i], &fe);
        }
        char go = 0;
        ssize_t n;
        while ((n = read(cmd_fd, &go, 1)) < 0 && errno == EINTR) {}
        if (n != 1 || (go != 'g' && go != 's')) _exit(0);
        close(cmd_fd);
        /* 's': the parent was stopped before the go, as a child forked then would have seen */
        if (go == 's' && xopts && xopts->stop_flag) *xopts->stop_flag = 1;
    }
    cd_probe_sink sink = {.user = &c, .hit = want_hits ? child_hit : NULL, .op_done = child_done};
    /* the parent's local sink pointer means nothing here: local hits go through the pipe too,
     * tagged (one writer, so the records never interleave) */
    child_ctx lc = c;
    lc.local = 1;
    cd_probe_sink lsink = {.user = &lc, .hit = child_hit};
    cd_exec_opts xo = xopts ? *xopts : (cd_exec_opts){0};
    xo.local_sink = xo.force ? &lsink : NULL;
    /* the record lives in the parent: it keeps the probed outputs it receives, the child sends
     * the other activations that probed ops read, tagged for the record only */
    child_ctx rc = c;
    rc.local = 2;
    cd_probe_sink rsink = {.user = &rc, .hit = child_hit};
    xo.record_sink = xo.record ? &rsink : NULL;
    xo.record = NULL;
    /* settle itself runs here (fork kept its data); the parent hears of settled ops */
    xo.on_settled = xo.on_settled ? child_settled : NULL;
    xo.on_settled_user = &c;
    st = cd_execute(plan, b, inputs, &xo, &sink, &err);
    c.broken |= lc.broken | rc.broken;
    child_phase(&c, -1, "", "", "close");
    cd_backend_close(b);
    child_result(&c, st, &err);
    /* _exit: no atexit handlers (the parent's HDF5 library state, stdio buffers) may run
     * in the child */
    _exit(0);
}

/* ------------------------------------------------------------------ parent */

typedef struct {
    char *buf;
    size_t len, cap;
} rbuf;

typedef struct {
    const cd_plan *plan;
    cd_probe_sink *sink;
    cd_probe_sink *local_sink;
    const cd_exec_opts *xopts;
    cd_isolated_run *run;
    bool have_result, have_probe;
    rec_result result, probe;
    cd_status sink_status;
    cd_error sink_err;
} parent_ctx;

static void set_phase(parent_ctx *p, const rec_phase *ph) {
    cd_crash_info *c = &p->run->crash;
    const cd_graph *g = p->plan->g;
    c->op_index = ph->op >= 0 && ph->op < g->n_ops ? ph->op : -1;
    snprintf(c->layer, sizeof c->layer, "%s", c->op_index >= 0 ? g->ops[c->op_index].name : "");
    snprintf(c->op_type, sizeof c->op_type, "%s", c->op_index >= 0 ? g->ops[c->op_index].type : "");
    snprintf(c->kernel, sizeof c->kernel, "%.63s", ph->kernel);
    if (ph->variant[0]) snprintf(c->variant, sizeof c->variant, "%.15s", ph->variant);
    snprintf(c->phase, sizeof c->phase, "%.15s", ph->phase);
}

/* Handles every complete record in b; returns false on a malformed stream. */
static bool parse_records(parent_ctx *p, rbuf *b) {
    size_t off = 0;
    while (b->len - off >= sizeof(rec_hdr)) {
        rec_hdr h;
        memcpy(&h, b->buf + off, sizeof h);
        if (b->len - off - sizeof h < h.len) break;
        const char *pl = b->buf + off + sizeof h;
        switch (h.type) {
        case REC_PHASE: {
            if (h.len != sizeof(rec_phase)) return false;
            rec_phase ph;
            memcpy(&ph, pl, sizeof ph);
            ph.kernel[sizeof ph.kernel - 1] = ph.variant[sizeof ph.variant - 1] = ph.phase[sizeof ph.phase - 1] = 0;
            set_phase(p, &ph);
            break;
        }
        case REC_SETTLED: {
            rec_settled r;
            if (h.len != sizeof r) return false;
            memcpy(&r, pl, sizeof r);
            if (r.op < 0 || r.op >= p->plan->g->n_ops) return false;
            if (p->xopts && p->xopts->on_settled) p->xopts->on_settled(p->xopts->on_settled_user, r.op, &r.info);
            break;
        }
        case REC_HIT: {
            rec_hit hh;
            if (h.len < sizeof hh) return false;
            memcpy(&hh, pl, sizeof hh);
            if (h.len != sizeof hh + hh.nbytes || hh.rank < 0 || hh.rank > CD_MAX_RANK || hh.dtype < 0 ||
                hh.dtype >= CD_DTYPE_COUNT)
                return false;
            if (hh.local < 0 || hh.local > 2) return false;
            cd_probe_sink *to = hh.local == 1 ? p->local_sink : hh.local == 2 ? NULL : p->sink;
            if (!hh.local) p->run->crash.hits++;
            /* the free run's activations into the parent's record (probed outputs as they
             * reach the sink, the rest sent for the record alone) */
            cd_forcing *rec = p->xopts && hh.local != 1 ? p->xopts->record : NULL;
            if (rec && !cd_exec_is_activation(p->plan, hh.tensor)) rec = NULL;
            if (p->sink_status || ((!to || !to->hit) && !rec)) break;
            cd_value v;
            memset(&v, 0, sizeof v);
            v.dtype = (cd_dtype)hh.dtype;
            v.shape.rank = hh.rank;
            for (int i = 0; i < CD_MAX_RANK; i++) v.shape.d[i] = hh.dims[i];
            v.nbytes = hh.nbytes;
            v.data = (void *)(pl + sizeof hh); /* borrowed: the sink copies what it keeps */
            /* the payload sits at an arbitrary offset; kernels of the sink read it as
             * typed arrays, so give them an aligned copy */
            void *al = NULL;
            if (((uintptr_t)v.data & 15u) && hh.nbytes) {
                al = malloc(hh.nbytes);
                if (!al) {
                    p->sink_status = cd_err(&p->sink_err, CD_E_NOMEM, "out of memory receiving a tensor");
                    break;
                }
                memcpy(al, v.data, hh.nbytes);
                v.data = al;
            }
            hh.rep.where[sizeof hh.rep.where - 1] = hh.rep.kernel[sizeof hh.rep.kernel - 1] = 0;
            hh.rep.note[sizeof hh.rep.note - 1] = 0;
            if (to && to->hit) p->sink_status = to->hit(to->user, hh.op, hh.tensor, &v, &hh.rep, &p->sink_err);
            if (!p->sink_status && rec) p->sink_status = cd_forcing_put(rec, hh.tensor, &v, &p->sink_err);
            free(al);
            break;
        }
        case REC_DONE: {
            if (h.len != sizeof(rec_done)) return false;
            rec_done d;
            memcpy(&d, pl, sizeof d);
            p->run->crash.ops_done = d.op + 1;
            d.rep.where[sizeof d.rep.where - 1] = d.rep.kernel[sizeof d.rep.kernel - 1] = 0;
            d.rep.note[sizeof d.rep.note - 1] = 0;
            if (!p->sink_status && p->sink && p->sink->op_done) p->sink->op_done(p->sink->user, d.op, &d.rep);
            break;
        }
        case REC_DESC: {
            if (h.len != sizeof(rec_desc)) return false;
            rec_desc d;
            memcpy(&d, pl, sizeof d);
            d.device[sizeof d.device - 1] = d.driver[sizeof d.driver - 1] = 0;
            snprintf(p->run->device, sizeof p->run->device, "%s", d.device);
            snprintf(p->run->driver, sizeof p->run->driver, "%s", d.driver);
            break;
        }
        case REC_PROBE:
            if (h.len != sizeof(rec_result)) return false;
            memcpy(&p->probe, pl, sizeof p->probe);
            p->probe.msg[sizeof p->probe.msg - 1] = 0;
            p->have_probe = true;
            break;
        case REC_RESULT:
            if (h.len != sizeof(rec_result)) return false;
            memcpy(&p->result, pl, sizeof p->result);
            p->result.msg[sizeof p->result.msg - 1] = 0;
            p->have_result = true;
            break;
        default: return false;
        }
        off += sizeof h + h.len;
    }
    if (off) {
        memmove(b->buf, b->buf + off, b->len - off);
        b->len -= off;
    }
    return true;
}

typedef struct {
    const cd_plan *plan;
    const cd_backend_opts *opts;
    const cd_value *inputs;
    const cd_exec_opts *xopts;
    bool want_hits;
    int cmd_fd[2]; /* prestarted: the parent's go arrives on [0]; -1 otherwise */
} child_args;

static void child_entry(int fd, void *arg) {
    const child_args *a = arg;
    signal(SIGPIPE, SIG_DFL);
    if (a->cmd_fd[1] >= 0) close(a->cmd_fd[1]);
    child_main(fd, a->plan, a->opts, a->inputs, a->xopts, a->want_hits, a->cmd_fd[0]);
}

typedef struct {
    parent_ctx *p;
    rbuf data;
    bool bad_stream;
    /* prestarted, before the availability answer: the child's stderr is held back (the probe's
     * was never shown; a device that is missing shows only the message) */
    bool hold_err;
    char *held;
    size_t held_len;
} pump_ctx;

/* The child's streams as they come: records into the sinks, stderr echoed and its tail kept.
 * false kills the child: out of memory, a malformed record, or a sink that failed (e.g. disk
 * full while writing the dump). */
static bool on_child_data(void *user, int which, const char *buf, size_t n) {
    pump_ctx *c = user;
    parent_ctx *p = c->p;
    if (which == 1 && c->hold_err) {
        char *nb = realloc(c->held, c->held_len + n);
        if (nb) {
            memcpy(nb + c->held_len, buf, n);
            c->held = nb;
            c->held_len += n;
        }
        cd_tail_append(p->run->crash.stderr_tail, sizeof p->run->crash.stderr_tail, buf, n);
        return true;
    }
    if (which == 1) {
        fwrite(buf, 1, n, stderr);
        cd_tail_append(p->run->crash.stderr_tail, sizeof p->run->crash.stderr_tail, buf, n);
        return true;
    }
    rbuf *b = &c->data;
    if (b->cap - b->len < n) {
        size_t nc = b->cap ? b->cap * 2 : 262144;
        while (nc - b->len < n) nc *= 2;
        char *nb = realloc(b->buf, nc);
        if (!nb) {
            p->sink_status = cd_err(&p->sink_err, CD_E_NOMEM, "out of memory receiving the OpenCL child's data");
            return false;
        }
        b->buf = nb;
        b->cap = nc;
    }
    memcpy(b->buf + b->len, buf, n);
    b->len += n;
    if (!parse_records(p, b)) {
        c->bad_stream = true;
        return false;
    }
    return !p->sink_status;
}

static cd_status finish_run(cd_subproc *sp, pump_ctx *pc, const cd_plan *plan, cd_isolated_run *run, cd_error *err);

cd_status cd_run_isolated(const cd_plan *plan, const cd_backend_opts *opts, const cd_value *inputs,
                          const cd_exec_opts *xopts, cd_probe_sink *sink, double timeout_s, cd_isolated_run *run,
                          cd_error *err) {
    memset(run, 0, sizeof *run);
    run->crash.op_index = -1;
    run->crash.exit_status = -1;
    child_args ca = {plan, opts, inputs, xopts, sink && sink->hit, {-1, -1}};
    /* the child stops between ops on its own copy of the stop flag; a terminal SIGINT reaches
     * it directly, a signal sent to the parent alone is passed on (SIGINT) */
    cd_subproc_opts so = {
        .timeout_s = timeout_s, .stop = xopts ? xopts->stop_flag : NULL, .stop_signal = SIGINT, .capture_err = true};
    cd_subproc sp;
    if (cd_subproc_fork(&sp, &so, child_entry, &ca) != 0)
        return cd_err(err, CD_E_NOMEM,
                      "cannot start the OpenCL child process: fork failed: %s (run with "
                      "--no-isolate to run OpenCL in this process)",
                      strerror(errno));
    parent_ctx p = {
        .plan = plan, .sink = sink, .local_sink = xopts ? xopts->local_sink : NULL, .xopts = xopts, .run = run};
    pump_ctx pc = {.p = &p};
    return finish_run(&sp, &pc, plan, run, err);
}

/* Pumps the child's streams to their end, then its result, error or crash. */
static cd_status finish_run(cd_subproc *sp, pump_ctx *pc, const cd_plan *plan, cd_isolated_run *run, cd_error *err) {
    parent_ctx *pp = pc->p;
    cd_subproc_result sr;
    /* this process only stores what the child sends meanwhile: no parallel regions (the dump's
     * statistics of a large tensor take a second thread, docs/opencl.md), whose idle thread
     * would spin in libgomp (its default spin count) on a core the driver wants */
    int nt = omp_get_max_threads();
    omp_set_num_threads(1);
    cd_subproc_wait(sp, on_child_data, pc, &sr);
    omp_set_num_threads(nt);
    free(pc->data.buf);
    parent_ctx p = *pp;
    bool bad_stream = pc->bad_stream;
    run->crash.timed_out = sr.timed_out;
    int wst = sr.wstatus;
    run->crash.elapsed_s = sr.elapsed_s;
    if (p.sink_status) {
        if (err) *err = p.sink_err;
        return p.sink_status;
    }
    if (bad_stream)
        return cd_err(err, CD_E_INTERNAL, "the OpenCL child sent a malformed record (a cldiff bug; report it)");
    if (p.have_result) {
        if (p.result.status == CD_OK) return CD_OK;
        return cd_err(err, (cd_status)p.result.status, "%s", p.result.msg);
    }
    cd_crash_info *c = &run->crash;
    c->crashed = true;
    if (WIFSIGNALED(wst)) {
        c->signal = WTERMSIG(wst);
        const char *sn = cd_signal_name(c->signal);
        if (sn)
            snprintf(c->signal_name, sizeof c->signal_name, "%s", sn);
        else
            snprintf(c->signal_name, sizeof c->signal_name, "signal %d", c->signal);
    } else if (WIFEXITED(wst)) {
        c->exit_status = WEXITSTATUS(wst);
    }
    char msg[1200];
    cd_crash_describe(c, plan, msg, sizeof msg);
    return cd_err(err, CD_E_CRASH, "OpenCL run crashed: %s", msg);
}

/* ------------------------------------------------------- programs ahead of the run */

/* A first run on a driver that compiles slowly (PoCL: 10-30 s per model) used to build each
 * family's program when its first op ran, one after the other. Before the run child starts,
 * the programs the plan needs and the cache lacks are built here, several at a time, each in
 * a child process of its own that stores the binary in the program cache; the run child then
 * loads them from the cache as on any later run (the same binaries, so the same results).
 * Own processes, not threads: a driver may serialise builds within one process (PoCL holds
 * a lock per context), and a build that crashes or fails here costs nothing but time: the
 * run child builds that family again when its op comes, and reports the crash or the failure
 * at that op as before. Nothing is built ahead with --no-cache (nowhere to keep it). */

typedef struct {
    const cd_backend_opts *opts;
    const char **fam;
    int n;
    const char *memo; /* planner: where to note the families' cache entries */
} prebuild_args;

/* The memo file DIR/KIND-<digest of the key text>.txt; frees key. */
static void memo_file(const char *dir, const char *kind, char *key, size_t len, char *out, size_t on) {
    uint8_t d[32];
    char hex[65];
    cd_sha256(key, len, d);
    cd_sha256_hex(d, hex);
    free(key);
    snprintf(out, on, "%.900s/%s-%.16s.txt", dir, kind, hex);
}

/* The planner needs the driver (the cache keys name the device and driver versions), which
 * costs a process and the driver's start (~0.1 s) on every run. It notes the entries of the
 * plan's families in a memo named by what chose them (families, precision, device choice,
 * kernel folder); while every entry the memo lists exists, the parent skips the planner. A
 * stale memo (a new driver, edited kernels) only costs the builds ahead: the run child builds
 * what it lacks, as it always did. */
static void memo_path(const cd_backend_opts *o, const char **fam, int n, char *out, size_t on) {
    out[0] = 0;
    cd_cl_cache c;
    cd_cl_cache_open(&c, o->cache_dir, o->no_cache);
    if (!c.enabled) return;
    size_t cap = 8192, len = 0;
    char *t = malloc(cap);
    if (!t) return;
    const char *ev = getenv("OCL_ICD_VENDORS"), *pk = getenv("POCL_KERNEL_CACHE");
    int w = snprintf(t, cap, "prec %d fp16c %d lib %s plat %s dev %s kdir %s icd %s pocl_cache %s\n", (int)o->prec,
                     o->fp16_compute, o->cl_lib ? o->cl_lib : "", o->cl_platform ? o->cl_platform : "",
                     o->cl_device ? o->cl_device : "", o->kernel_dir ? o->kernel_dir : "", ev ? ev : "", pk ? pk : "");
    len = w > 0 && (size_t)w < cap ? (size_t)w : 0;
    for (int i = 0; i < n; i++) {
        w = snprintf(t + len, cap - len, "%s\n", fam[i]);
        if (w < 0 || (size_t)w >= cap - len) break;
        len += (size_t)w;
    }
    memo_file(c.dir, "plan", t, len, out, on);
}

/* true when the memo lists at least one entry and every one exists */
static bool memo_all_cached(const char *memo) {
    if (!memo[0]) return false;
    FILE *f = fopen(memo, "r");
    if (!f) return false;
    char line[1300];
    int k = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        ok = line[0] && access(line, R_OK) == 0;
        k++;
    }
    fclose(f);
    return ok && k > 0;
}

static cd_status child_backend(const cd_backend_opts *opts, cd_backend **b) {
    omp_set_num_threads(1);
    cd_backend_opts o = *opts;
    o.threads = 1;
    cd_error e;
    cd_err_clear(&e);
    return cd_opencl_backend_open(&o, b, &e);
}

/* Writes one character per family: '1' cached, '0' to build, 'x' no source. */
static void planner_entry(int fd, void *arg) {
    const prebuild_args *a = arg;
    signal(SIGPIPE, SIG_DFL);
    cd_backend *b = NULL;
    if (child_backend(a->opts, &b)) _exit(0); /* the run child says why */
    char out[MAX_FAMILIES];
    char(*paths)[1200] = calloc((size_t)a->n, sizeof *paths);
    for (int i = 0; i < a->n; i++) {
        int st = cd_opencl_family_cached(b, a->fam[i], paths ? paths[i] : NULL, paths ? sizeof paths[i] : 0);
        out[i] = st > 0 ? '1' : st == 0 ? '0' : 'x';
    }
    child_ctx c = {.fd = fd};
    write_all(&c, out, (size_t)a->n);
    /* the memo: the entries of every family with a source (the builders make the missing
     * ones); written to a temporary name and renamed */
    if (a->memo && a->memo[0] && paths) {
        char tmp[1100];
        snprintf(tmp, sizeof tmp, "%.1000s.tmp.%ld", a->memo, (long)getpid());
        FILE *f = fopen(tmp, "w");
        bool ok = f != NULL;
        for (int i = 0; ok && i < a->n; i++)
            if (paths[i][0]) ok = fprintf(f, "%s\n", paths[i]) > 0;
        if (f) ok = (fclose(f) == 0) && ok;
        if (!ok || rename(tmp, a->memo) != 0) unlink(tmp);
    }
    _exit(0); /* no driver teardown: nothing of it is needed */
}

/* Writes 'k' when the family's program was built (and stored), 'f' when not. */
static void builder_entry(int fd, void *arg) {
    const prebuild_args *a = arg;
    signal(SIGPIPE, SIG_DFL);
    cd_backend *b = NULL;
    if (child_backend(a->opts, &b)) _exit(0);
    cd_error e;
    cd_err_clear(&e);
    child_ctx c = {.fd = fd};
    write_all(&c, cd_opencl_build_family(b, a->fam[0], &e) ? "f" : "k", 1);
    _exit(0);
}

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How many builds run at once: CLDIFF_CL_BUILD_JOBS (0: no builds ahead), else the online
 * cores. */
static int build_jobs(void) {
    const char *e = getenv("CLDIFF_CL_BUILD_JOBS");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == 0 && v >= 0) return v > 16 ? 16 : (int)v;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}

/* The line on a terminal: rewritten in place, blanks over a longer earlier text (the
 * session's "preparing" line is shorter than these). */
static void prebuild_line(bool tty, int *shown, const char *run, int done, int todo, int cached, bool last, double secs,
                          int jobs) {
    if (!tty) return;
    char line[200];
    if (last)
        snprintf(line, sizeof line, "  %-7s OpenCL programs: %d built in %.1f s (%d at a time), %d cached", run, done,
                 secs, jobs, cached);
    else
        snprintf(line, sizeof line, "  %-7s OpenCL programs: building, %d/%d done (%d at a time), %d cached ...", run,
                 done, todo, jobs, cached);
    int len = (int)strlen(line);
    fprintf(stderr, "\r%s%*s%s", line, *shown > len ? *shown - len : 0, "", last ? "\n" : "");
    *shown = len;
    fflush(stderr);
}

static void prebuild(const cd_plan *plan, const cd_backend_opts *opts, const char *run, bool tty, double timeout_s,
                     volatile int *stop) {
    int jobs = build_jobs();
    if (opts->no_cache || jobs == 0) return;
    const char *fam[MAX_FAMILIES];
    int n = cd_cl_plan_families(plan, opts, fam, MAX_FAMILIES);
    if (n == 0) return;
    char memo[1000];
    memo_path(opts, fam, n, memo, sizeof memo);
    if (memo_all_cached(memo)) return;
    double t0 = mono_now();
    prebuild_args pa = {opts, fam, n, memo};
    cd_subproc_opts so = {.timeout_s = timeout_s, .stop = stop, .quiet_child = true};
    cd_subproc sp;
    if (cd_subproc_fork(&sp, &so, planner_entry, &pa) != 0) return;
    cd_subproc_text txt = {0};
    cd_subproc_result sr;
    cd_subproc_wait(&sp, cd_subproc_collect, &txt, &sr);
    const char *todo[MAX_FAMILIES];
    int m = 0, cached = 0;
    if (txt.out && txt.out_len == (size_t)n)
        for (int i = 0; i < n; i++) {
            if (txt.out[i] == '0') todo[m++] = fam[i];
            cached += txt.out[i] == '1';
        }
    free(txt.out);
    if (m == 0) return; /* all cached (or no device: the run child says so) */
    if (jobs > m) jobs = m;
    cd_subproc kids[16];
    prebuild_args ka[16];
    bool busy[16] = {false};
    int next = 0, done = 0, running = 0;
    double deadline = timeout_s > 0 ? t0 + timeout_s : 0;
    int shown = 50; /* over the session's "preparing" text */
    prebuild_line(tty, &shown, run, 0, m, cached, false, 0, jobs);
    so.timeout_s = 0; /* the deadline below covers them all */
    for (;;) {
        for (int j = 0; j < jobs && next < m && !(stop && *stop); j++) {
            if (busy[j]) continue;
            ka[j] = (prebuild_args){opts, &todo[next], 1, NULL};
            if (cd_subproc_fork(&kids[j], &so, builder_entry, &ka[j]) != 0) {
                next = m; /* cannot start more: the run builds the rest */
                break;
            }
            next++;
            busy[j] = true;
            running++;
        }
        if (!running) break;
        struct pollfd pf[16];
        int who[16], np = 0;
        for (int j = 0; j < jobs; j++)
            if (busy[j]) {
                pf[np] = (struct pollfd){.fd = kids[j].fd[0], .events = POLLIN};
                who[np++] = j;
            }
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - mono_now();
            wait_ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
        }
        int pr = poll(pf, (nfds_t)np, wait_ms);
        bool give_up = (stop && *stop) || (pr == 0 && deadline > 0);
        if (pr < 0 && errno != EINTR) give_up = true;
        for (int k = 0; k < np && pr > 0; k++) {
            if (!pf[k].revents) continue;
            char buf[16];
            ssize_t got = read(pf[k].fd, buf, sizeof buf);
            if (got < 0 && errno == EINTR) continue;
            if (got > 0) continue; /* its answer; the end of the stream follows */
            int j = who[k];
            cd_subproc_wait(&kids[j], NULL, NULL, &sr);
            busy[j] = false;
            running--;
            done++;
            prebuild_line(tty, &shown, run, done, m, cached, false, 0, jobs);
        }
        if (give_up) {
            for (int j = 0; j < jobs; j++)
                if (busy[j]) {
                    cd_subproc_kill(&kids[j], SIGKILL);
                    cd_subproc_wait(&kids[j], NULL, NULL, &sr);
                    busy[j] = false;
                }
            if (tty) fprintf(stderr, "\n");
            return;
        }
    }
    prebuild_line(tty, &shown, run, done, m, cached, true, mono_now() - t0, jobs);
}

/* ------------------------------------------------------- the child started early */

/* A differential run used to ask a probe child whether the device exists (the driver's load:
 * 60-85 ms of PoCL and LLVM) and later fork the run child, which loaded it all again. The
 * prestarted child is both: forked before run A, it answers what the probe answered (REC_PROBE),
 * opens its backend and uploads the parameters while the parent runs A, and waits for the go.
 * Everything it runs on is the parent's at the fork (plan, inputs, options, probe mask, the
 * settle context), except A's record, which lives in a shared mapping
 * (cd_forcing_new_shared): the go comes once A has filled it. */
struct cd_cl_prestart {
    cd_subproc sp;
    int cmd;         /* write end of the go pipe */
    bool pending;    /* the answer not read yet (the memo said the device was there) */
    double lim;      /* how long the answer may take */
    char memo[1100]; /* the answer memo ("" none) */
    child_args ca;
    cd_backend_opts opts;
    cd_exec_opts xo;
    cd_isolated_run run; /* phases and stderr seen so far */
    parent_ctx p;
    pump_ctx pc;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void prestart_free(struct cd_cl_prestart *h) {
    if (h->cmd >= 0) close(h->cmd);
    if (h->sp.pid > 0) {
        cd_subproc_result sr;
        cd_subproc_kill(&h->sp, SIGKILL);
        cd_subproc_wait(&h->sp, NULL, NULL, &sr);
    }
    free(h->pc.data.buf);
    free(h->pc.held);
    free(h);
}

void cd_runner_isolated_drop(void *handle) {
    if (handle) prestart_free(handle);
}

/* The availability answer memo: a device choice found before need not be waited for; the
 * parent runs A while the child loads the driver, and reads the answer before B. Named by what
 * chooses the device: the options, the environment of OpenCL loaders and drivers, the ICD
 * files (names, sizes, times, contents). A stale memo (a device gone since) costs run A's time
 * only: the answer, read before B, then fails the run as the check would have, nothing kept. */
static void avail_memo_path(const cd_backend_opts *o, char *out, size_t on) {
    out[0] = 0;
    cd_cl_cache c;
    cd_cl_cache_open(&c, o->cache_dir, o->no_cache);
    if (!c.enabled) return;
    size_t cap = 65536, len = 0;
    char *t = malloc(cap);
    if (!t) return;
#define ADD(...)                                                                                                       \
    do {                                                                                                               \
        int w_ = snprintf(t + len, cap - len, __VA_ARGS__);                                                            \
        if (w_ > 0) len = (size_t)w_ < cap - len ? len + (size_t)w_ : cap - 1;                                         \
    } while (0)
    ADD("avail 1 lib %s plat %s dev %s\n", o->cl_lib ? o->cl_lib : "", o->cl_platform ? o->cl_platform : "",
        o->cl_device ? o->cl_device : "");
    static const char *const keys[] = {
        "OCL", "OPENCL", "POCL", "CUDA",    "NVIDIA",          "ROCR",       "HIP", "HSA",
        "GPU", "ZE_",    "MALI", "RUSTICL", "LD_LIBRARY_PATH", "LD_PRELOAD", NULL};
    extern char **environ;
    for (char **e = environ; e && *e; e++)
        for (int k = 0; keys[k]; k++)
            if (strstr(*e, keys[k]) && strchr(*e, '=') > strstr(*e, keys[k])) {
                ADD("env %s\n", *e);
                break;
            }
    const char *vd = getenv("OCL_ICD_VENDORS");
    const char *dir = vd && *vd ? vd : "/etc/OpenCL/vendors";
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char p[1400];
        snprintf(p, sizeof p, "%.1000s/%.300s", dir, de->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        ADD("icd %s %lld %lld\n", de->d_name, (long long)st.st_size, (long long)st.st_mtime);
        FILE *f = fopen(p, "r");
        if (f) {
            len += fread(t + len, 1, cap - 1 - len > 4096 ? 4096 : cap - 1 - len, f);
            fclose(f);
        }
    }
    if (d) closedir(d);
#undef ADD
    memo_file(c.dir, "avail", t, len, out, on);
}

/* Reads the child's streams until its availability answer (true), its end or the limit. */
static bool await_answer(struct cd_cl_prestart *h) {
    bool open[2] = {h->sp.fd[0] >= 0, h->sp.fd[1] >= 0};
    double t0 = now_s();
    char buf[4096];
    while (!h->p.have_probe && open[0] && !h->pc.bad_stream) {
        double left = h->lim - (now_s() - t0);
        if (left <= 0) break;
        struct pollfd f[2];
        int nf = 0, idx[2];
        for (int k = 0; k < 2; k++)
            if (open[k]) {
                f[nf] = (struct pollfd){.fd = h->sp.fd[k], .events = POLLIN};
                idx[nf++] = k;
            }
        int pr = poll(f, (nfds_t)nf, (int)(left * 1000) + 1);
        if (pr < 0 && errno != EINTR) break;
        for (int i = 0; i < nf && pr > 0; i++) {
            if (!(f[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(h->sp.fd[idx[i]], buf, sizeof buf);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0 || !on_child_data(&h->pc, idx[i], buf, (size_t)n)) open[idx[i]] = false;
        }
    }
    return h->p.have_probe && !h->pc.bad_stream;
}

/* The answer is in: the device there (CD_OK: the driver's held stderr shown, the memo kept) or
 * not (its error; the memo goes). */
static cd_status take_answer(struct cd_cl_prestart *h, cd_error *err) {
    h->pending = false;
    if (h->p.probe.status) {
        if (h->memo[0]) unlink(h->memo);
        return cd_err(err, (cd_status)h->p.probe.status, "%s", h->p.probe.msg);
    }
    if (h->memo[0] && access(h->memo, F_OK) != 0) {
        char tmp[1200];
        snprintf(tmp, sizeof tmp, "%.1100s.tmp.%ld", h->memo, (long)getpid());
        FILE *f = fopen(tmp, "w");
        bool ok = f && fprintf(f, "the OpenCL device of this choice was found\n") > 0;
        if (f) ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, h->memo) != 0) unlink(tmp);
    }
    if (h->pc.held_len) fwrite(h->pc.held, 1, h->pc.held_len, stderr);
    free(h->pc.held);
    h->pc.held = NULL;
    h->pc.held_len = 0;
    h->pc.hold_err = false;
    return CD_OK;
}

cd_status cd_runner_isolated_check(void *handle, bool *dropped, cd_error *err) {
    struct cd_cl_prestart *h = handle;
    *dropped = false;
    if (!h || !h->pending) return CD_OK;
    if (!await_answer(h)) { /* decides nothing: the run starts its own child */
        prestart_free(h);
        *dropped = true;
        return CD_OK;
    }
    cd_status st = take_answer(h, err);
    if (st) {
        prestart_free(h);
        *dropped = true;
    }
    return st;
}

cd_status cd_runner_isolated_prestart(const cd_runner_req *q, void **handle, bool *answered, cd_error *err) {
    *handle = NULL;
    *answered = false;
    /* what settles B's layers (the caller's, given at the fork) must be in the record the
     * child reads: a shared one, or none */
    if (!q->xo || (q->xo->force && !cd_forcing_is_shared(q->xo->force)) || q->xo->local_only || q->xo->record_sink)
        return CD_OK;
    struct cd_cl_prestart *h = calloc(1, sizeof *h);
    if (!h) return CD_OK;
    h->cmd = -1;
    h->opts = *q->bo;
    h->xo = *q->xo;
    h->ca = (child_args){q->plan, &h->opts, q->inputs, &h->xo, true, {-1, -1}};
    if (pipe(h->ca.cmd_fd) != 0) {
        free(h);
        return CD_OK;
    }
    *answered = true;
    /* the probe's limit (backend_cl_def.c); the run's --timeout starts at the go */
    h->lim = q->timeout_s > 0 && q->timeout_s < 60 ? q->timeout_s : 60;
    avail_memo_path(&h->opts, h->memo, sizeof h->memo);
    cd_subproc_opts so = {.timeout_s = 0, .stop_signal = SIGINT, .capture_err = true};
    if (cd_subproc_fork(&h->sp, &so, child_entry, &h->ca) != 0) {
        close(h->ca.cmd_fd[0]);
        close(h->ca.cmd_fd[1]);
        free(h);
        *answered = false;
        return CD_OK;
    }
    close(h->ca.cmd_fd[0]);
    h->cmd = h->ca.cmd_fd[1];
    fcntl(h->cmd, F_SETFD, FD_CLOEXEC);
    h->run.crash.op_index = -1;
    h->run.crash.exit_status = -1;
    h->p = (parent_ctx){.plan = q->plan, .run = &h->run};
    h->pc = (pump_ctx){.p = &h->p, .hold_err = true};
    /* a device found before: its answer is read before run B (cd_runner_isolated_check) */
    if (h->memo[0] && access(h->memo, F_OK) == 0) {
        h->pending = true;
        *handle = h;
        return CD_OK;
    }
    /* until the availability answer, as the probe: a crash or a hang decides nothing here (the
     * run, started afresh, then records it as a finding) */
    if (!await_answer(h)) {
        prestart_free(h);
        return CD_OK;
    }
    cd_status st = take_answer(h, err);
    if (st) {
        prestart_free(h);
        return st;
    }
    *handle = h;
    return CD_OK;
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }

/* The run is the one the child was started for (it runs what it got at the fork). */
static bool prestart_fits(const struct cd_cl_prestart *h, const cd_runner_req *q) {
    const cd_backend_opts *a = &h->opts, *b = q->bo;
    const cd_exec_opts *x = &h->xo, *y = q->xo;
    return q->plan == h->ca.plan && q->inputs == h->ca.inputs && q->sink && q->sink->hit && y && a->prec == b->prec &&
        a->threads == b->threads && same_str(a->cl_lib, b->cl_lib) && same_str(a->cl_platform, b->cl_platform) &&
        same_str(a->cl_device, b->cl_device) && same_str(a->kernel_dir, b->kernel_dir) &&
        same_str(a->cache_dir, b->cache_dir) && a->no_cache == b->no_cache && a->fp16_compute == b->fp16_compute &&
        a->int8_arm == b->int8_arm && a->no_quant == b->no_quant && a->int8_on_arm == b->int8_on_arm &&
        a->kv == b->kv && a->n_kv == b->n_kv && x->probe_mask == y->probe_mask && x->stop_flag == y->stop_flag &&
        x->force == y->force && x->local_only == y->local_only && x->record == y->record && !y->record_sink &&
        x->settle == y->settle && x->settle_user == y->settle_user && !x->on_settled == !y->on_settled;
}

/* The go: the run's sinks and time limit, then the child's stream to its end. */
static cd_status prestart_run(struct cd_cl_prestart *h, const cd_runner_req *q, cd_isolated_run *ir, cd_error *err) {
    if (h->pending) {
        bool dropped;
        cd_status st = cd_runner_isolated_check(h, &dropped, err);
        if (dropped) return st ? st : cd_run_isolated(q->plan, q->bo, q->inputs, q->xo, q->sink, q->timeout_s, ir, err);
    }
    *ir = h->run;
    h->p.run = ir;
    h->p.sink = q->sink;
    h->p.local_sink = q->xo->local_sink;
    h->p.xopts = q->xo;
    h->sp.o.timeout_s = q->timeout_s;
    h->sp.o.stop = q->xo->stop_flag;
    h->sp.t0 = now_s();
    ssize_t w;
    const char *go = q->xo->stop_flag && *q->xo->stop_flag ? "s" : "g";
    while ((w = write(h->cmd, go, 1)) < 0 && errno == EINTR) {}
    close(h->cmd);
    h->cmd = -1;
    /* a child gone already: its stream says how (a crash while preparing) */
    cd_status st = finish_run(&h->sp, &h->pc, q->plan, ir, err);
    h->pc.data.buf = NULL;
    h->sp.pid = 0;
    prestart_free(h);
    return st;
}

cd_status cd_runner_isolated(const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    cd_isolated_run ir;
    memset(&ir, 0, sizeof ir);
    prebuild(q->plan, q->bo, q->run_name ? q->run_name : q->backend, q->progress && !q->quiet, q->timeout_s,
             q->xo ? q->xo->stop_flag : NULL);
    struct cd_cl_prestart *h = q->prestart;
    if (h && !prestart_fits(h, q)) {
        prestart_free(h);
        h = NULL;
    }
    cd_status st = h ? prestart_run(h, q, &ir, err)
                     : cd_run_isolated(q->plan, q->bo, q->inputs, q->xo, q->sink, q->timeout_s, &ir, err);
    snprintf(res->device, sizeof res->device, "%s", ir.device);
    snprintf(res->driver, sizeof res->driver, "%s", ir.driver);
    res->crash = ir.crash;
    /* the variant the child's backend chose: half arithmetic only with cl_khr_fp16 */
    if (ir.crash.variant[0])
        cd_run_attr_str(res, CD_RUN_ATTR_COMPUTE, "%s", !strcmp(ir.crash.variant, "fp16-compute") ? "fp16" : "fp32");
    return st;
}
