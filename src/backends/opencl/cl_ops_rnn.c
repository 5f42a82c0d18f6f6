/* Dispatcher of kernels/rnn.cl: Paddle's rnn op (LSTM, GRU, RNN_TANH, RNN_RELU; layers,
 * directions, SequenceLength), checked like the CPU kernel (src/backends/cpu/ops_rnn.c,
 * whose header documents the WeightList layout). The host walks layers, directions and
 * time steps; each step is one launch of rnn_step (the recurrence is sequential), the
 * input projections of a whole sequence are one rnn_proj launch. Layer outputs alternate
 * between a scratch buffer and Out so the last layer lands in Out, as on the CPU. */
#include "backends/opencl/cl_ops_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 64

typedef struct {
    int mode, gates, layers, dirs;
    int64_t hidden, t, n, in;
    int x, h0, c0, seq, out, h_out, c_out;
    int w[4 * 2 * MAX_LAYERS];
} rnn_args;

static cd_status want_shape(cd_cl_ctx *c, int tid, const char *what, int rank, const int64_t *d, cd_error *err) {
    const cd_shape *s = &clu_meta(c, tid)->shape;
    bool ok = s->rank == rank;
    for (int i = 0; ok && i < rank; i++) ok = s->d[i] == d[i];
    if (ok) return CD_OK;
    cd_shape want = {.rank = rank};
    for (int i = 0; i < rank; i++) want.d[i] = d[i];
    char a[96], b[96];
    return clu_fail(c, err, CD_E_MODEL, "%s has shape %s, expected %s", what, cd_shape_str(s, a, sizeof a),
                    cd_shape_str(&want, b, sizeof b));
}

static cd_status check_lengths(cd_cl_ctx *c, const rnn_args *r, const cd_value *m, cd_error *err) {
    if (r->n == 0) return CD_OK;
    size_t bytes = (size_t)r->n * cd_dtype_size(m->dtype);
    cd_value v = *m;
    void *tmp = NULL;
    if (!v.data) {
        cl_mem b;
        cd_status s = clu_buf(c, r->seq, &b, err);
        if (s) return s;
        if (!(tmp = malloc(bytes))) return clu_fail(c, err, CD_E_NOMEM, "out of memory reading SequenceLength");
        cl_int rc = c->cl->clEnqueueReadBuffer(c->queue, b, CL_TRUE, 0, bytes, tmp, 0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            free(tmp);
            return clu_fail(c, err, CD_E_BACKEND, "clEnqueueReadBuffer of SequenceLength failed (OpenCL error %d)",
                            (int)rc);
        }
        v.data = tmp;
    }
    cd_status s = CD_OK;
    for (int64_t i = 0; i < r->n && !s; i++) {
        double x = cd_value_get(&v, i);
        if (!(x >= 0 && x <= (double)r->t) || x != floor(x))
            s = clu_fail(c, err, CD_E_MODEL, "SequenceLength[%lld] = %g must be an integer in 0..%lld (T)",
                         (long long)i, x, (long long)r->t);
    }
    free(tmp);
    return s;
}

static cd_status rnn_read(cd_cl_ctx *c, rnn_args *r, cd_error *err) {
    cd_status s;
    memset(r, 0, sizeof *r);
    const char *mode = cd_attr_str(c->op, "mode", "");
    if (!strcmp(mode, "LSTM"))
        r->mode = 0, r->gates = 4;
    else if (!strcmp(mode, "GRU"))
        r->mode = 1, r->gates = 3;
    else if (!strcmp(mode, "RNN_TANH"))
        r->mode = 2, r->gates = 1;
    else if (!strcmp(mode, "RNN_RELU"))
        r->mode = 3, r->gates = 1;
    else
        return clu_fail(c, err, CD_E_MODEL, "mode '%s' is not one of LSTM, GRU, RNN_TANH, RNN_RELU", mode);
    int64_t layers = cd_attr_int(c->op, "num_layers", 1);
    r->hidden = cd_attr_int(c->op, "hidden_size", 0);
    if (layers < 1 || layers > MAX_LAYERS)
        return clu_fail(c, err, CD_E_MODEL, "num_layers = %lld must be in 1..%d", (long long)layers, MAX_LAYERS);
    if (r->hidden < 1 || r->hidden > 1 << 20)
        return clu_fail(c, err, CD_E_MODEL, "hidden_size = %lld must be in 1..%d", (long long)r->hidden, 1 << 20);
    r->layers = (int)layers;
    r->dirs = cd_attr_bool(c->op, "is_bidirec", false) ? 2 : 1;
    if ((s = clu_need_in(c, "Input", 0, &r->x, err)) || (s = clu_need_float(c, r->x, "Input", err))) return s;
    const cd_shape *xs = &clu_meta(c, r->x)->shape;
    if (xs->rank != 3)
        return clu_fail(c, err, CD_E_MODEL, "Input must be 3-D [T, N, I] (time-major), rank %d", xs->rank);
    r->t = xs->d[0], r->n = xs->d[1], r->in = xs->d[2];
    if (r->t < 0 || r->n < 0 || r->in < 1) return clu_fail(c, err, CD_E_MODEL, "Input shape is invalid");
    const cd_slot *ws = cd_op_in_slot(c->op, "WeightList");
    int nw = 4 * r->layers * r->dirs;
    if (!ws || ws->n != nw)
        return clu_fail(c, err, CD_E_MODEL, "WeightList has %d tensors; %d layer(s) x %d direction(s) need %d",
                        ws ? ws->n : 0, r->layers, r->dirs, nw);
    int64_t gh = r->gates * r->hidden;
    for (int l = 0; l < r->layers; l++)
        for (int d = 0; d < r->dirs; d++) {
            int k = (l * r->dirs + d) * 2;
            int64_t in_l = l == 0 ? r->in : r->dirs * r->hidden;
            const int idx[4] = {k, k + 1, 2 * r->layers * r->dirs + k, 2 * r->layers * r->dirs + k + 1};
            static const char *const names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
            const int64_t dims[4][2] = {{gh, in_l}, {gh, r->hidden}, {gh, 0}, {gh, 0}};
            for (int j = 0; j < 4; j++) {
                char what[96];
                snprintf(what, sizeof what, "WeightList[%d] (%s of layer %d, %s)", idx[j], names[j], l,
                         d ? "backward" : "forward");
                int t = ws->ids[idx[j]];
                if (t < 0 || !clu_meta(c, t)) return clu_fail(c, err, CD_E_MODEL, "%s is not connected", what);
                if ((s = want_shape(c, t, what, j < 2 ? 2 : 1, dims[j], err)) || (s = clu_need_float(c, t, what, err)))
                    return s;
                r->w[idx[j]] = t;
            }
        }
    const cd_slot *ps = cd_op_in_slot(c->op, "PreState");
    int nstate = r->mode == 0 ? 2 : 1;
    if (!ps || ps->n != nstate)
        return clu_fail(c, err, CD_E_MODEL, "PreState has %d tensors; mode %s needs %d", ps ? ps->n : 0, mode, nstate);
    const int64_t sd[3] = {(int64_t)r->layers * r->dirs, r->n, r->hidden};
    if ((s = clu_need_in(c, "PreState", 0, &r->h0, err)) ||
        (s = want_shape(c, r->h0, "PreState[0] (h0)", 3, sd, err)) ||
        (s = clu_need_float(c, r->h0, "PreState[0]", err)))
        return s;
    r->c0 = -1;
    if (nstate == 2 &&
        ((s = clu_need_in(c, "PreState", 1, &r->c0, err)) ||
         (s = want_shape(c, r->c0, "PreState[1] (c0)", 3, sd, err)) ||
         (s = clu_need_float(c, r->c0, "PreState[1]", err))))
        return s;
    r->seq = clu_in(c, "SequenceLength", 0);
    if (r->seq >= 0) {
        const cd_value *m = clu_meta(c, r->seq);
        if ((s = want_shape(c, r->seq, "SequenceLength", 1, &r->n, err))) return s;
        if (m->dtype != CD_I32 && m->dtype != CD_I64)
            return clu_fail(c, err, CD_E_UNSUPPORTED,
                            "SequenceLength of dtype %s is read on the host; this op runs on "
                            "the CPU",
                            cd_dtype_name(m->dtype));
        /* The CPU rejects lengths outside 0..T. Lengths known at plan time are checked here; lengths
         * computed at run time (a feed) are read back, a blocking read of N integers: the one place
         * a dispatcher waits, so that a bad length fails exactly as on the CPU. */
        if ((s = check_lengths(c, r, m, err))) return s;
    }
    if ((s = clu_need_out(c, "Out", 0, &r->out, err))) return s;
    const int64_t od[3] = {r->t, r->n, r->dirs * r->hidden};
    if ((s = want_shape(c, r->out, "Out", 3, od, err))) return s;
    const cd_slot *st = cd_op_out_slot(c->op, "State");
    if (st && st->n != 0 && st->n != nstate)
        return clu_fail(c, err, CD_E_MODEL, "State has %d outputs; mode %s produces %d", st->n, mode, nstate);
    r->h_out = clu_out(c, "State", 0);
    r->c_out = nstate == 2 ? clu_out(c, "State", 1) : -1;
    if (r->h_out >= 0 && (s = want_shape(c, r->h_out, "State[0]", 3, sd, err))) return s;
    if (r->c_out >= 0 && (s = want_shape(c, r->c_out, "State[1]", 3, sd, err))) return s;
    int64_t big = r->t * r->n * (gh > r->dirs * r->hidden ? gh : r->dirs * r->hidden);
    if ((s = clu_fits(c, big, "sequence buffer size", err)) ||
        (s = clu_fits(c, gh * (r->in > r->dirs * r->hidden ? r->in : r->dirs * r->hidden), "weight size", err)))
        return s;
    return CD_OK;
}

static cd_status copy_bytes(cd_cl_ctx *c, cl_mem src, size_t soff, cl_mem dst, size_t doff, size_t n, cd_error *err) {
    if (n == 0) return CD_OK;
    cl_int rc = c->cl->clEnqueueCopyBuffer(c->queue, src, dst, soff, doff, n, 0, NULL, NULL);
    if (rc != CL_SUCCESS)
        return clu_fail(c, err, CD_E_BACKEND, "clEnqueueCopyBuffer of %zu bytes failed (OpenCL error %d)", n, (int)rc);
    return CD_OK;
}

/* DropoutState / Reserve are training scratch: one zero element each, as on the CPU. */
static cd_status zero_scratch_outputs(cd_cl_ctx *c, cd_error *err) {
    static const char *const names[2] = {"DropoutState", "Reserve"};
    for (int k = 0; k < 2; k++) {
        const cd_slot *sl = cd_op_out_slot(c->op, names[k]);
        for (int j = 0; sl && j < sl->n; j++) {
            int t = sl->ids[j];
            if (t < 0 || !clu_meta(c, t)) continue;
            const cd_value *m = clu_meta(c, t);
            size_t bytes = (size_t)cd_value_numel(m) * cd_dtype_size(m->dtype);
            if (!bytes) continue;
            cl_mem b;
            cd_status s = clu_buf(c, t, &b, err);
            if (s) return s;
            cl_uchar zero = 0;
            cl_int rc = c->cl->clEnqueueFillBuffer(c->queue, b, &zero, 1, 0, bytes, 0, NULL, NULL);
            if (rc != CL_SUCCESS)
                return clu_fail(c, err, CD_E_BACKEND, "clEnqueueFillBuffer of %s failed (OpenCL error %d)", names[k],
                                (int)rc);
        }
    }
    return CD_OK;
}

static cd_status op_rnn(cd_cl_ctx *c, cd_error *err) {
    rnn_args r;
    cd_status s;
    if ((s = rnn_read(c, &r, err))) return s;
    const size_t es = cd_dtype_size(clu_meta(c, r.x)->dtype);
    const int64_t H = r.hidden, N = r.n, T = r.t, GH = r.gates * H, DH = r.dirs * H, TN = T * N;
    cl_mem bx, bout, bh0, bc0 = NULL, bhs = NULL, bcs = NULL, bseq = NULL;
    if ((s = clu_buf(c, r.x, &bx, err)) || (s = clu_buf(c, r.out, &bout, err)) || (s = clu_buf(c, r.h0, &bh0, err)) ||
        (r.c0 >= 0 && (s = clu_buf(c, r.c0, &bc0, err))) || (r.h_out >= 0 && (s = clu_buf(c, r.h_out, &bhs, err))) ||
        (r.c_out >= 0 && (s = clu_buf(c, r.c_out, &bcs, err))) || (r.seq >= 0 && (s = clu_buf(c, r.seq, &bseq, err))))
        return s;
    bool seq64 = r.seq >= 0 && clu_meta(c, r.seq)->dtype == CD_I64;
    cl_mem gx = c->scratch(c, (size_t)(TN * GH) * es, err);
    cl_mem mid = r.layers > 1 ? c->scratch(c, (size_t)(TN * DH) * es, err) : NULL;
    cl_mem hb[2] = {c->scratch(c, (size_t)(N * H) * es, err), c->scratch(c, (size_t)(N * H) * es, err)};
    cl_mem cs = c->scratch(c, (size_t)(N * H) * es, err);
    if (!gx || (r.layers > 1 && !mid) || !hb[0] || !hb[1] || !cs) return err->code ? err->code : CD_E_BACKEND;
    cl_kernel kp, ks;
    if ((s = c->kernel(c, "rnn", "rnn_proj", &kp, err)) || (s = c->kernel(c, "rnn", "rnn_step", &ks, err))) return s;
    const size_t state_bytes = (size_t)(N * H) * es;
    cl_mem in = bx;
    for (int l = 0; l < r.layers; l++) {
        cl_mem dst = ((r.layers - 1 - l) % 2 == 0) ? bout : mid;
        int64_t in_l = l == 0 ? r.in : DH;
        for (int d = 0; d < r.dirs; d++) {
            int k = (l * r.dirs + d) * 2, kb = 2 * r.layers * r.dirs + k;
            cl_mem wih, whh, bih, bhh;
            if ((s = clu_buf(c, r.w[k], &wih, err)) || (s = clu_buf(c, r.w[k + 1], &whh, err)) ||
                (s = clu_buf(c, r.w[kb], &bih, err)) || (s = clu_buf(c, r.w[kb + 1], &bhh, err)))
                return s;
            size_t soff = (size_t)((int64_t)l * r.dirs + d) * state_bytes;
            int cur = 0;
            if ((s = copy_bytes(c, bh0, soff, hb[0], 0, state_bytes, err))) return s;
            if (bc0 && (s = copy_bytes(c, bc0, soff, cs, 0, state_bytes, err))) return s;
            if (TN > 0) {
                clu_args g;
                clu_args_init(&g, c, kp, err);
                clu_mem(&g, in);
                clu_mem(&g, wih);
                clu_mem(&g, bih);
                clu_mem(&g, gx);
                clu_int(&g, TN);
                clu_int(&g, GH);
                clu_int(&g, in_l);
                if (g.st) return g.st;
                size_t gl[2] = {clu_round((size_t)GH, 16), clu_round((size_t)TN, 16)}, lo[2] = {16, 16};
                if ((s = c->launch(c, kp, 2, gl, lo, err))) return s;
                for (int64_t st = 0; st < T; st++) {
                    int64_t t = d == 0 ? st : T - 1 - st;
                    clu_args a;
                    clu_args_init(&a, c, ks, err);
                    clu_mem(&a, gx);
                    clu_mem(&a, whh);
                    clu_mem(&a, bhh);
                    clu_mem(&a, hb[cur]);
                    clu_mem(&a, hb[1 - cur]);
                    clu_mem(&a, cs);
                    clu_mem(&a, dst);
                    clu_mem(&a, bseq && !seq64 ? bseq : NULL);
                    clu_mem(&a, bseq && seq64 ? bseq : NULL);
                    clu_int(&a, r.mode);
                    clu_int(&a, t);
                    clu_int(&a, T);
                    clu_int(&a, N);
                    clu_int(&a, H);
                    clu_int(&a, r.gates);
                    clu_int(&a, DH);
                    clu_int(&a, (int64_t)d * H);
                    if (a.st) return a.st;
                    size_t sg[2] = {(size_t)H, (size_t)N};
                    if ((s = c->launch(c, ks, 2, sg, NULL, err))) return s;
                    cur = 1 - cur;
                }
            }
            if (bhs && (s = copy_bytes(c, hb[cur], 0, bhs, soff, state_bytes, err))) return s;
            if (bcs && (s = copy_bytes(c, cs, 0, bcs, soff, state_bytes, err))) return s;
        }
        in = dst;
    }
    return zero_scratch_outputs(c, err);
}

static const cd_cl_op_def defs[] = {
    {"rnn", "rnn", op_rnn},
};
const cd_cl_op_table cd_cl_ops_rnn = {defs, (int)(sizeof defs / sizeof defs[0])};
