/* Pinned execution and the pin search. */
#include "diag/pins.h"
#include "backends/registry.h"
#include "compare/policy.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diag/diag.h"
#include "store/dump.h"

typedef struct pin_impl {
    cd_backend *inner, *cpu;
    const cd_plan *plan, *plan32;
    const bool *pinned;
} pin_impl;

/* Converts a host value to dtype `to` (half <-> float through double: exact widening,
 * round-to-nearest narrowing as cd_value_set does). */
static cd_status convert(const cd_value *in, cd_dtype to, cd_value *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    out->dtype = to;
    out->shape = in->shape;
    cd_status st = cd_value_alloc(out, err);
    if (st) return st;
    int64_t n = cd_value_numel(in);
    if (in->dtype == to) {
        if (out->nbytes) memcpy(out->data, in->data, out->nbytes);
    } else
        for (int64_t i = 0; i < n; i++) cd_value_set(out, i, cd_value_get(in, i));
    return CD_OK;
}

static cd_status pin_prepare(cd_backend *b, const cd_plan *plan, cd_error *err) {
    pin_impl *im = b->impl;
    im->plan = plan;
    cd_status st = im->inner->vt->prepare(im->inner, plan, err);
    if (!st) st = im->cpu->vt->prepare(im->cpu, im->plan32, err);
    return st;
}

static cd_status pin_set_input(cd_backend *b, int id, const cd_value *host, cd_error *err) {
    pin_impl *im = b->impl;
    return im->inner->vt->set_input(im->inner, id, host, err);
}

/* Moves tensor id from `from` (plan pf) to `to` (plan pt) through the host. */
static cd_status move(cd_backend *from, cd_backend *to, const cd_plan *pt, int id, cd_error *err) {
    cd_value h = {0}, c;
    cd_status st = from->vt->read(from, id, &h, err);
    if (st) return st;
    st = convert(&h, pt->meta[id].dtype, &c, err);
    cd_value_release(&h);
    if (st) return st;
    c.shape = pt->meta[id].shape;
    st = to->vt->set_input(to, id, &c, err);
    cd_value_release(&c);
    return st;
}

static cd_status pin_run_op(cd_backend *b, int i, cd_op_report *rep, cd_error *err) {
    pin_impl *im = b->impl;
    if (!im->pinned[i]) return im->inner->vt->run_op(im->inner, i, rep, err);
    const cd_graph *g = im->plan->g;
    const cd_op *op = &g->ops[i];
    cd_status st = CD_OK;
    for (int s = 0; s < op->n_in && !st; s++)
        for (int k = 0; k < op->in[s].n && !st; k++) {
            int id = op->in[s].ids[k];
            if (id < 0 || g->tensors[id].persistable) continue;
            st = move(im->inner, im->cpu, im->plan32, id, err);
        }
    if (!st) st = im->cpu->vt->run_op(im->cpu, i, rep, err);
    for (int s = 0; s < op->n_out && !st; s++)
        for (int k = 0; k < op->out[s].n && !st; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            st = move(im->cpu, im->inner, im->plan, id, err);
            im->cpu->vt->release(im->cpu, id);
        }
    for (int s = 0; s < op->n_in; s++)
        for (int k = 0; k < op->in[s].n; k++) {
            int id = op->in[s].ids[k];
            if (id >= 0 && !g->tensors[id].persistable) im->cpu->vt->release(im->cpu, id);
        }
    if (st) return cd_err_prefix(err, "pinned op #%d %s (%s) on the CPU in float32: ", i, op->name, op->type);
    snprintf(rep->where, sizeof rep->where, "cpu-pinned");
    return CD_OK;
}

static cd_status pin_read(cd_backend *b, int id, cd_value *host, cd_error *err) {
    pin_impl *im = b->impl;
    return im->inner->vt->read(im->inner, id, host, err);
}

static void pin_release(cd_backend *b, int id) {
    pin_impl *im = b->impl;
    im->inner->vt->release(im->inner, id);
}

static void pin_close(cd_backend *b) {
    pin_impl *im = b->impl;
    cd_backend_close(im->cpu);
    free(im);
    free(b);
}

static void pin_describe(cd_backend *b, char *dev, size_t dn, char *drv, size_t drn) {
    pin_impl *im = b->impl;
    if (im->inner->vt->describe) im->inner->vt->describe(im->inner, dev, dn, drv, drn);
}

static const cd_backend_vt k_pin_vt = {
    .name = "pinned",
    .prepare = pin_prepare,
    .set_input = pin_set_input,
    .run_op = pin_run_op,
    .read = pin_read,
    .release = pin_release,
    .close = pin_close,
    .describe = pin_describe,
};

cd_status cd_pinned_backend_open(cd_backend *inner, const cd_plan *plan32, const bool *pinned,
                                 const cd_backend_opts *cpu_opts, cd_backend **out, cd_error *err) {
    *out = NULL;
    cd_backend *b = calloc(1, sizeof *b);
    pin_impl *im = calloc(1, sizeof *im);
    if (!b || !im) {
        free(b);
        free(im);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    cd_backend_opts co = *cpu_opts;
    co.prec = CD_PREC_FP32;
    cd_status st = cd_cpu_backend_open(&co, &im->cpu, err);
    if (st) {
        free(b);
        free(im);
        return st;
    }
    im->inner = inner;
    im->plan32 = plan32;
    im->pinned = pinned;
    b->vt = &k_pin_vt;
    b->opts = inner->opts;
    b->impl = im;
    *out = b;
    return CD_OK;
}

/* ---------------------------------------------------------------- the search */

typedef struct out_sink {
    const cd_graph *g;
    int n;
    int ids[16];
    float *data[16];
    int64_t numel[16];
} out_sink;

static cd_status out_hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                         cd_error *err) {
    (void)op_index;
    (void)rep;
    out_sink *k = user;
    bool is_out = false;
    for (int j = 0; j < k->g->n_outputs; j++) is_out |= k->g->outputs[j] == tensor_id;
    if (!is_out || k->n == 16) return CD_OK;
    int64_t n = cd_value_numel(host);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return cd_err(err, CD_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) f[i] = (float)cd_value_get(host, i);
    k->ids[k->n] = tensor_id;
    k->data[k->n] = f;
    k->numel[k->n++] = n;
    return CD_OK;
}

/* Runs one pin set and compares the model outputs with the reference run. */
static cd_status trial(const cd_pins_run *s, const cd_analysis *an, const cd_policy *pol, const char *backend_b,
                       const bool *pinned, const cd_dump_reader *r, const char *ref_run, cd_pin_result *res,
                       cd_error *err) {
    const cd_graph *g = s->g;
    cd_backend_opts bo = s->opts;
    bo.threads = 1; /* runs in a forked child: OpenMP teams of the parent do not survive fork */
    cd_backend *inner = NULL, *pb = NULL;
    const cd_backend_def *def = cd_backend_lookup(backend_b);
    if (!def || !def->open)
        return cd_err(err, CD_E_USAGE, "--suggest-pins needs a backend that runs op by op as B, not '%s'", backend_b);
    cd_status st = def->open(&bo, &inner, err);
    if (st) return st;
    const cd_plan *p32 = s->plan32 ? s->plan32 : s->plan;
    if ((st = cd_pinned_backend_open(inner, p32, pinned, &bo, &pb, err))) {
        cd_backend_close(inner);
        return st;
    }
    bool *mask = calloc((size_t)g->n_ops + 1, 1);
    out_sink os = {.g = g};
    if (!mask) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    for (int j = 0; j < g->n_outputs; j++) {
        int p = g->tensors[g->outputs[j]].producer;
        if (p >= 0) mask[p] = true;
    }
    cd_probe_sink sink = {.user = &os, .hit = out_hit};
    cd_exec_opts xo = {.probe_mask = mask, .stop_flag = s->stop_flag};
    if ((st = cd_execute(s->plan, pb, s->inputs, &xo, &sink, err))) goto done;
    cd_dump_tensor_info *tr = NULL;
    int nr = 0;
    if ((st = cd_dump_list_tensors(r, ref_run, &tr, &nr, err))) goto done;
    res->pass = os.n > 0;
    res->out_cosine = 1;
    res->out_max_abs = 0;
    for (int k = 0; k < os.n && !st; k++) {
        const cd_tensor *t = &g->tensors[os.ids[k]];
        const cd_dump_tensor_info *ti = NULL;
        for (int j = 0; j < nr && !ti; j++)
            if (tr[j].op_index == t->producer && !strcmp(tr[j].tensor, t->name)) ti = &tr[j];
        const cd_layer_cmp *lc = NULL;
        for (int j = 0; j < an->n_layers && !lc; j++)
            if (an->layers[j].op_index == t->producer && !strcmp(an->layers[j].tensor, t->name)) lc = &an->layers[j];
        if (!ti || ti->stats_only || !lc) {
            res->pass = false;
            snprintf(res->error, sizeof res->error, "output '%s' not captured in full by the reference run", t->name);
            continue;
        }
        float *ref = NULL;
        int64_t n = 0;
        if ((st = cd_dump_read_f32(r, ref_run, ti->dataset, &ref, &n, err))) break;
        if (n != os.numel[k]) {
            free(ref);
            res->pass = false;
            continue;
        }
        cd_metrics m;
        cd_metrics_compute(ref, os.data[k], n, &lc->shape, s->prec == CD_PREC_FP16, &lc->tol, &m);
        free(ref);
        /* the verdict's output rule, yardsticks included (quantized models, fp16 vs golden) */
        double re = m.nonfinite_mismatch ? INFINITY
            : m.ref_absmax > 0           ? m.max_abs / m.ref_absmax
                                         : (m.max_abs > 0 ? INFINITY : 0);
        if (!cd_policy_output_pass(pol, &m) &&
            (pol->user || m.nonfinite_mismatch ||
             !cd_output_yardstick(lc, pol, re, m.cosine, !strcmp(ref_run, "golden"))))
            res->pass = false;
        if (m.max_abs > res->out_max_abs || isnan(m.max_abs)) res->out_max_abs = m.max_abs;
        if (m.cosine < res->out_cosine) res->out_cosine = m.cosine;
    }
    free(tr);
done:
    for (int k = 0; k < os.n; k++) free(os.data[k]);
    free(mask);
    if (pb) cd_backend_close(pb);
    cd_backend_close(inner);
    return st;
}

/* Runs a trial in a forked child, like every OpenCL run of cldiff: a driver that crashes
 * or leaks stays in the child, and the parent never initialises the OpenCL driver (a
 * later isolated run must fork from a process without driver threads). */
typedef struct trial_msg {
    cd_status st;
    cd_pin_result res;
    cd_error err;
} trial_msg;

static cd_status trial_forked(const cd_pins_run *s, const cd_analysis *an, const cd_policy *pol, const char *backend_b,
                              const bool *pinned, const cd_dump_reader *r, const char *ref_run, cd_pin_result *res,
                              cd_error *err) {
    int fd[2];
    if (pipe(fd) != 0) return cd_err(err, CD_E_INTERNAL, "pipe() failed: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return cd_err(err, CD_E_INTERNAL, "fork() failed: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fd[0]);
        static trial_msg m;
        m.res = *res;
        m.st = trial(s, an, pol, backend_b, pinned, r, ref_run, &m.res, &m.err);
        const char *p = (const char *)&m;
        size_t left = sizeof m;
        while (left) {
            ssize_t w = write(fd[1], p, left);
            if (w <= 0) {
                if (w < 0 && errno == EINTR) continue;
                _exit(3);
            }
            p += w;
            left -= (size_t)w;
        }
        _exit(0);
    }
    close(fd[1]);
    static trial_msg m;
    size_t got = 0;
    while (got < sizeof m) {
        ssize_t n = read(fd[0], (char *)&m + got, sizeof m - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd[0]);
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    if (got != sizeof m) {
        if (WIFSIGNALED(ws))
            return cd_err(err, CD_E_CRASH, "pin trial crashed with signal %d (%s)", WTERMSIG(ws),
                          strsignal(WTERMSIG(ws)));
        return cd_err(err, CD_E_CRASH, "pin trial ended without a result (exit status %d)",
                      WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    }
    *res = m.res;
    if (m.st) *err = m.err;
    return m.st;
}

static int pin_order(const void *a, const void *b) {
    const cd_pin_result *x = a, *y = b;
    if (x->pass != y->pass) return x->pass ? -1 : 1;
    if (x->n_pinned != y->n_pinned) return x->n_pinned - y->n_pinned;
    return (x->out_max_abs > y->out_max_abs) - (x->out_max_abs < y->out_max_abs);
}

cd_status cd_diag_suggest_pins(const cd_pins_run *s, cd_analysis *an, const cd_policy *pol, const char *backend_b,
                               cd_error *err) {
    const cd_graph *g = s->g;
    int cand[CD_PIN_MAX_CANDIDATES], nc = 0;
    for (int i = 0; i < an->n_layers && nc < CD_PIN_MAX_CANDIDATES; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        if (l->m.pass) continue;
        bool dup = false;
        for (int j = 0; j < nc; j++) dup |= an->layers[cand[j]].op_index == l->op_index;
        if (!dup) cand[nc++] = i;
    }
    if (!nc) {
        snprintf(an->pins_note, sizeof an->pins_note, "no failing layer: nothing to pin");
        return CD_OK;
    }
    cd_dump_reader *r = NULL;
    cd_status st = cd_dump_open(s->dump_path, &r, err);
    if (st) return st;
    const char *ref_run = cd_dump_find_run(r, "golden") >= 0 ? "golden" : s->ref_run;
    int nt = nc + (nc > 1);
    an->pins = calloc((size_t)nt, sizeof *an->pins);
    bool *pinned = calloc((size_t)g->n_ops + 1, 1);
    if (!an->pins || !pinned) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    for (int t = 0; t < nt && !st; t++) {
        memset(pinned, 0, (size_t)g->n_ops);
        cd_pin_result *res = &an->pins[an->n_pins];
        memset(res, 0, sizeof *res);
        size_t off = 0;
        for (int j = 0; j < nc; j++) {
            if (t < nc && j != t) continue;
            const cd_layer_cmp *l = &an->layers[cand[j]];
            pinned[l->op_index] = true;
            res->n_pinned++;
            if (off < sizeof res->layers)
                off += (size_t)snprintf(res->layers + off, sizeof res->layers - off, "%s%s", off ? "," : "", l->layer);
        }
        cd_error te = {0};
        cd_status ts = trial_forked(s, an, pol, backend_b, pinned, r, ref_run, res, &te);
        if (ts == CD_E_INTERRUPTED) {
            st = ts;
            *err = te;
            break;
        }
        if (ts) {
            res->pass = false;
            snprintf(res->error, sizeof res->error, "%s", te.msg);
        }
        an->n_pins++;
    }
    if (!st) {
        qsort(an->pins, (size_t)an->n_pins, sizeof *an->pins, pin_order);
        snprintf(an->pins_note, sizeof an->pins_note, "%s",
                 an->n_pins && an->pins[0].pass ? "pinning the listed layers to float32 on the CPU brings every output "
                                                  "within tolerance of the float32 golden run"
                                                : "no tried pin set brings the outputs within tolerance");
        if (strcmp(ref_run, "golden"))
            snprintf(an->pins_note + strlen(an->pins_note), sizeof an->pins_note - strlen(an->pins_note),
                     " (reference: run %s)", ref_run);
    }
done:
    free(pinned);
    cd_dump_reader_close(r);
    return st;
}
