/* Paddle's `rnn` op (LSTM, GRU, RNN_TANH, RNN_RELU), multi-layer, optionally
 * bidirectional, time-major, with optional per-sequence lengths.
 *
 * Inputs: Input [T, N, I]; PreState: h0 (and c0 for LSTM), each [L*D, N, H];
 * WeightList, 4*L*D tensors: first every weight, then every bias, each group ordered by
 * layer, then direction, then (input-hidden, hidden-hidden):
 *   [W_ih(0,fw), W_hh(0,fw), W_ih(0,bw), W_hh(0,bw), W_ih(1,fw), ..., b_ih(0,fw), b_hh(0,fw), ...]
 * W_ih [G*H, I_l] (I_0 = I, later layers D*H), W_hh [G*H, H], biases [G*H]; gates stacked
 * in Paddle's order: LSTM i, f, c~, o (G = 4); GRU r, z, c~ (G = 3); simple RNN G = 1.
 *   LSTM: c = f*c' + i*tanh(c~), h = o*tanh(c)
 *   GRU:  r, z = sigmoid(Wx + b + Uh' + b'), c~ = tanh(W_c x + b_c + r*(U_c h' + b'_c)),
 *         h = z*h' + (1-z)*c~        (Paddle's GRUCell: reset applied after the matmul)
 * Outputs: Out [T, N, D*H] (forward in the first H, backward in the second), State: last
 * h (and c), each [L*D, N, H], index layer*D + direction.
 * SequenceLength [N]: steps t >= len[n] leave the state unchanged and output zeros, so the
 * backward direction starts at len[n]-1. Inference only: dropout_prob is not applied
 * (Paddle applies it in training only). DropoutState/Reserve, when connected, are
 * training scratch: they are given one zero element.
 *
 * Precision: one kernel body instantiated for float and for _Float16 (half storage and
 * half arithmetic, matmuls through cd_gemm_f16 like every other fp16 CPU kernel);
 * sigmoid/tanh are evaluated in float and rounded to the run's type. */
#include "engine/ops.h"
#include "backends/cpu/gemm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 64

typedef enum { RNN_LSTM, RNN_GRU, RNN_TANH, RNN_RELU } rnn_mode;

typedef struct {
    rnn_mode mode;
    int gates, layers, dirs, hidden;
    int64_t t, n, in;
    cd_value *x, *h0, *c0, *seq, *out, *h_out, *c_out;
    cd_value *w[4 * 2 * MAX_LAYERS]; /* WeightList in op order */
} rnn_cfg;

static cd_status check_shape(cd_op_ctx *c, const cd_value *v, const char *what, int rank, const int64_t *d) {
    bool ok = v->shape.rank == rank;
    for (int i = 0; ok && i < rank; i++) ok = v->shape.d[i] == d[i];
    if (ok) return CD_OK;
    cd_shape want = {.rank = rank};
    for (int i = 0; i < rank; i++) want.d[i] = d[i];
    char a[96], b[96];
    return cd_op_fail(c, CD_E_MODEL, "%s has shape %s, expected %s", what, cd_shape_str(&v->shape, a, sizeof a),
                      cd_shape_str(&want, b, sizeof b));
}

static cd_status rnn_read(cd_op_ctx *c, rnn_cfg *r) {
    char b[96];
    memset(r, 0, sizeof *r);
    const char *mode = cd_attr_str(c->op, "mode", "");
    if (!strcmp(mode, "LSTM")) {
        r->mode = RNN_LSTM;
        r->gates = 4;
    } else if (!strcmp(mode, "GRU")) {
        r->mode = RNN_GRU;
        r->gates = 3;
    } else if (!strcmp(mode, "RNN_TANH")) {
        r->mode = RNN_TANH;
        r->gates = 1;
    } else if (!strcmp(mode, "RNN_RELU")) {
        r->mode = RNN_RELU;
        r->gates = 1;
    } else
        return cd_op_fail(c, CD_E_MODEL, "mode '%s' is not one of LSTM, GRU, RNN_TANH, RNN_RELU", mode);
    int64_t layers = cd_attr_int(c->op, "num_layers", 1), hidden = cd_attr_int(c->op, "hidden_size", 0);
    if (layers < 1 || layers > MAX_LAYERS)
        return cd_op_fail(c, CD_E_MODEL, "num_layers = %lld must be in 1..%d", (long long)layers, MAX_LAYERS);
    if (hidden < 1 || hidden > 1 << 20)
        return cd_op_fail(c, CD_E_MODEL, "hidden_size = %lld must be in 1..%d", (long long)hidden, 1 << 20);
    r->layers = (int)layers;
    r->hidden = (int)hidden;
    r->dirs = cd_attr_bool(c->op, "is_bidirec", false) ? 2 : 1;
    if (!(r->x = cd_in_req(c, "Input", 0))) return CD_E_MODEL;
    if (r->x->shape.rank != 3)
        return cd_op_fail(c, CD_E_MODEL, "Input must be 3-D [T, N, I] (time-major), got %s",
                          cd_shape_str(&r->x->shape, b, sizeof b));
    r->t = r->x->shape.d[0];
    r->n = r->x->shape.d[1];
    r->in = r->x->shape.d[2];
    if (r->t < 0 || r->n < 0 || r->in < 1)
        return cd_op_fail(c, CD_E_MODEL, "Input shape %s is invalid", cd_shape_str(&r->x->shape, b, sizeof b));
    /* WeightList */
    const cd_slot *ws = cd_op_in_slot(c->op, "WeightList");
    int nw = 4 * r->layers * r->dirs;
    if (!ws || ws->n != nw)
        return cd_op_fail(c, CD_E_MODEL,
                          "WeightList has %d tensors; %d layer(s) x %d direction(s) need %d "
                          "(W_ih, W_hh per layer and direction, then the biases)",
                          ws ? ws->n : 0, r->layers, r->dirs, nw);
    int64_t gh = (int64_t)r->gates * r->hidden;
    for (int l = 0; l < r->layers; l++)
        for (int d = 0; d < r->dirs; d++) {
            int k = (l * r->dirs + d) * 2;
            int64_t in_l = l == 0 ? r->in : (int64_t)r->dirs * r->hidden;
            const int idx[4] = {k, k + 1, 2 * r->layers * r->dirs + k, 2 * r->layers * r->dirs + k + 1};
            static const char *const names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
            const int64_t dims[4][2] = {{gh, in_l}, {gh, r->hidden}, {gh, 0}, {gh, 0}};
            for (int j = 0; j < 4; j++) {
                cd_value *v = cd_in(c, "WeightList", idx[j]);
                char what[96];
                snprintf(what, sizeof what, "WeightList[%d] (%s of layer %d, %s)", idx[j], names[j], l,
                         d ? "backward" : "forward");
                if (!v) return cd_op_fail(c, CD_E_MODEL, "%s is not connected", what);
                cd_status s = check_shape(c, v, what, j < 2 ? 2 : 1, dims[j]);
                if (s) return s;
                r->w[idx[j]] = v;
            }
        }
    /* PreState */
    const cd_slot *ps = cd_op_in_slot(c->op, "PreState");
    int nstate = r->mode == RNN_LSTM ? 2 : 1;
    if (!ps || ps->n != nstate)
        return cd_op_fail(c, CD_E_MODEL, "PreState has %d tensors; mode %s needs %d (%s)", ps ? ps->n : 0, mode, nstate,
                          nstate == 2 ? "h0, c0" : "h0");
    const int64_t sd[3] = {(int64_t)r->layers * r->dirs, r->n, r->hidden};
    if (!(r->h0 = cd_in_req(c, "PreState", 0))) return CD_E_MODEL;
    cd_status s = check_shape(c, r->h0, "PreState[0] (h0)", 3, sd);
    if (s) return s;
    if (nstate == 2) {
        if (!(r->c0 = cd_in_req(c, "PreState", 1))) return CD_E_MODEL;
        if ((s = check_shape(c, r->c0, "PreState[1] (c0)", 3, sd))) return s;
    }
    r->seq = cd_in(c, "SequenceLength", 0);
    if (r->seq && (s = check_shape(c, r->seq, "SequenceLength", 1, &r->n))) return s;
    if (!(r->out = cd_out(c, "Out", 0))) return cd_op_fail(c, CD_E_MODEL, "output Out is not connected");
    const cd_slot *st = cd_op_out_slot(c->op, "State");
    if (st && st->n != 0 && st->n != nstate)
        return cd_op_fail(c, CD_E_MODEL, "State has %d outputs; mode %s produces %d", st->n, mode, nstate);
    r->h_out = cd_out(c, "State", 0);
    r->c_out = nstate == 2 ? cd_out(c, "State", 1) : NULL;
    return CD_OK;
}

cd_status cd_rnn_infer(cd_op_ctx *c) {
    rnn_cfg r;
    cd_status s = rnn_read(c, &r);
    if (s) return s;
    cd_dtype dt = cd_act_dtype(c);
    r.out->dtype = dt;
    r.out->shape = (cd_shape){.rank = 3, .d = {r.t, r.n, (int64_t)r.dirs * r.hidden}};
    cd_value *st[2] = {r.h_out, r.c_out};
    for (int k = 0; k < 2; k++)
        if (st[k]) {
            st[k]->dtype = dt;
            st[k]->shape = (cd_shape){.rank = 3, .d = {(int64_t)r.layers * r.dirs, r.n, r.hidden}};
        }
    static const char *const scratch[2] = {"DropoutState", "Reserve"};
    for (int k = 0; k < 2; k++) {
        const cd_slot *sl = cd_op_out_slot(c->op, scratch[k]);
        for (int j = 0; sl && j < sl->n; j++) {
            cd_value *v = cd_out(c, scratch[k], j);
            if (!v) continue;
            v->dtype = dt;
            v->shape = (cd_shape){.rank = 1, .d = {1}};
        }
    }
    return CD_OK;
}

double cd_rnn_macs(const cd_op_ctx *c) {
    rnn_cfg r;
    cd_error e;
    cd_op_ctx cc = *c;
    cc.err = &e;
    if (rnn_read(&cc, &r)) return 0;
    double macs = 0, gh = (double)r.gates * r.hidden;
    for (int l = 0; l < r.layers; l++) {
        double in_l = l == 0 ? (double)r.in : (double)r.dirs * r.hidden;
        macs += r.dirs * (double)r.t * (double)r.n * gh * (in_l + r.hidden);
    }
    return macs;
}

static inline float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The prepared state (cd_op_def.prepare): the weights each step's GEMMs read, laid out once per
 * process in the row-major form the GEMM reads without packing: W_hh^T [H, G*H] for every layer
 * and direction (fp32 and fp16 runs), W_ih^T [in_l, G*H] (fp32 runs). One malloc block, the
 * matrices after the struct at the given byte offsets plus one (0: not prepared; the run then
 * lays out or reads transposed as before). The products and their order do not change. */
typedef struct {
    int layers, dirs, hidden, gates;
    cd_dtype dt;
    size_t off_ih[2 * MAX_LAYERS], off_hh[2 * MAX_LAYERS];
} rnn_state;
#define RNN_STATE_HEAD ((sizeof(rnn_state) + 63) & ~(size_t)63)
#define RNN_STATE_DATA(st) ((const char *)(st) + RNN_STATE_HEAD)

/* rnn_dir_f32 / rnn_run_f32 and their _f16 twins (the op body, one template). */
#define RNN_T float
#define RNN_S f32
#define RNN_GEMM cd_gemm_f32
#include "ops_rnn_tmpl.h"
#define RNN_T _Float16
#define RNN_S f16
#define RNN_GEMM cd_gemm_f16
#include "ops_rnn_tmpl.h"

/* dst[k][j] = src[j][k], src [rows][cols]: in blocks of 16 x 16 so both sides stay in cache. */
#define RNN_TRANSPOSE(T, dst, src, rows, cols)                                                                         \
    do {                                                                                                               \
        T *d_ = (T *)(dst);                                                                                            \
        const T *p_ = (const T *)(src);                                                                                \
        for (int64_t j0 = 0; j0 < (rows); j0 += 16)                                                                    \
            for (int64_t k0 = 0; k0 < (cols); k0 += 16)                                                                \
                for (int64_t j = j0; j < j0 + 16 && j < (rows); j++)                                                   \
                    for (int64_t k = k0; k < k0 + 16 && k < (cols); k++) d_[k * (rows) + j] = p_[j * (cols) + k];      \
    } while (0)

static void transpose_into(void *dst, const void *src, int64_t rows, int64_t cols, size_t es) {
    if (es == sizeof(float))
        RNN_TRANSPOSE(float, dst, src, rows, cols);
    else
        RNN_TRANSPOSE(_Float16, dst, src, rows, cols);
}

cd_status cd_rnn_prepare(cd_op_ctx *c, void **state) {
    rnn_cfg r;
    cd_status s = rnn_read(c, &r);
    if (s) return s;
    cd_dtype dt = c->prec == CD_PREC_FP16 ? CD_F16 : CD_F32;
    size_t es = dt == CD_F16 ? sizeof(_Float16) : sizeof(float);
    int64_t H = r.hidden, GH = (int64_t)r.gates * H;
    size_t bytes = 0, off_ih[2 * MAX_LAYERS] = {0}, off_hh[2 * MAX_LAYERS] = {0};
    for (int l = 0; l < r.layers; l++)
        for (int d = 0; d < r.dirs; d++) {
            int k = (l * r.dirs + d) * 2, li = l * r.dirs + d;
            const cd_value *wi = r.w[k], *wh = r.w[k + 1];
            if (!wh->data || wh->dtype != dt) return CD_E_MODEL; /* the run reports it */
            off_hh[li] = bytes + 1;
            bytes += ((size_t)(H * GH) * es + 63) & ~(size_t)63;
            if (dt == CD_F32 && wi->data && wi->dtype == dt) {
                off_ih[li] = bytes + 1;
                bytes += ((size_t)(wi->shape.d[1] * GH) * es + 63) & ~(size_t)63;
            }
        }
    rnn_state *st = aligned_alloc(64, RNN_STATE_HEAD + bytes);
    if (!st) return CD_E_NOMEM;
    st->layers = r.layers;
    st->dirs = r.dirs;
    st->hidden = r.hidden;
    st->gates = r.gates;
    st->dt = dt;
    memcpy(st->off_ih, off_ih, sizeof off_ih);
    memcpy(st->off_hh, off_hh, sizeof off_hh);
    char *base = (char *)st + RNN_STATE_HEAD;
    for (int l = 0; l < r.layers; l++)
        for (int d = 0; d < r.dirs; d++) {
            int k = (l * r.dirs + d) * 2, li = l * r.dirs + d;
            transpose_into(base + off_hh[li] - 1, r.w[k + 1]->data, GH, H, es);
            if (off_ih[li]) transpose_into(base + off_ih[li] - 1, r.w[k]->data, GH, r.w[k]->shape.d[1], es);
        }
    *state = st;
    return CD_OK;
}

cd_status cd_rnn_run(cd_op_ctx *c) {
    rnn_cfg r;
    cd_status s = rnn_read(c, &r);
    if (s) return s;
    cd_dtype dt = cd_act_dtype(c);
    /* Every float tensor must already be in the run's dtype (the planner converts params). */
    const cd_value *chk[4] = {r.x, r.h0, r.c0, NULL};
    for (int i = 0; i < 3; i++)
        if (chk[i] && chk[i]->dtype != dt)
            return cd_op_fail(c, CD_E_INTERNAL, "input %d is %s in a %s run", i, cd_dtype_name(chk[i]->dtype),
                              cd_dtype_name(dt));
    for (int i = 0; i < 4 * r.layers * r.dirs; i++)
        if (r.w[i]->dtype != dt)
            return cd_op_fail(c, CD_E_INTERNAL, "WeightList[%d] is %s in a %s run", i, cd_dtype_name(r.w[i]->dtype),
                              cd_dtype_name(dt));
    int64_t *len = NULL;
    if (r.seq) {
        len = cd_malloc((size_t)(r.n ? r.n : 1) * sizeof *len, c->err);
        if (!len) return CD_E_NOMEM;
        for (int64_t n = 0; n < r.n; n++) {
            double v = cd_value_get(r.seq, n);
            if (!(v >= 0 && v <= (double)r.t) || v != floor(v)) {
                free(len);
                return cd_op_fail(c, CD_E_MODEL, "SequenceLength[%lld] = %g must be an integer in 0..%lld (T)",
                                  (long long)n, v, (long long)r.t);
            }
            len[n] = (int64_t)v;
        }
    }
    const rnn_state *st = c->state;
    if (st &&
        (st->layers != r.layers || st->dirs != r.dirs || st->hidden != r.hidden || st->gates != r.gates ||
         st->dt != dt))
        st = NULL;
    s = dt == CD_F16 ? rnn_run_f16(c, &r, len, st) : rnn_run_f32(c, &r, len, st);
    free(len);
    if (s) return s;
    /* Training scratch outputs: one defined zero each. */
    static const char *const scratch[2] = {"DropoutState", "Reserve"};
    for (int k = 0; k < 2; k++) {
        const cd_slot *sl = cd_op_out_slot(c->op, scratch[k]);
        for (int j = 0; sl && j < sl->n; j++) {
            cd_value *v = cd_out(c, scratch[k], j);
            if (v && v->data) memset(v->data, 0, v->nbytes);
        }
    }
    return CD_OK;
}
