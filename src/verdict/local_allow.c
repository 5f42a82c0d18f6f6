/* Per-element allowances computed from a layer's own inputs (docs/verdicts.md, families
 * "recurrent" and "norm"): where the rounding a correct kernel may commit depends on values
 * the output alone does not show (the gates and cell state of an LSTM step, the mean and
 * deviation of a normalized group), the bound of each element is computed here from A's
 * inputs, the parameters as the checked side has them, and (rnn) B's own outputs. The result
 * stands where a magnitude would (cd_local_magnitude's array); bounds.c adds it as the
 * arithmetic part of those families. */
#include "verdict/local_priv.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- tensors of the op */

/* The values of tensor id as A had them (double): a parameter or plan-time constant from the
 * plan, a model input from /inputs, an activation from run `run` of the dump (producer op,
 * tensor name). NULL with note set when it was not captured. */
static double *tensor_vals(const cd_local_req *q, const char *run, int id, int64_t *n, char *note, size_t nlen,
                           cd_error *err, cd_status *st) {
    const cd_graph *g = q->g;
    const cd_value *m = &q->plan->meta[id];
    *n = 0;
    if (m->data) {
        int64_t k = cd_value_numel(m);
        double *v = malloc((size_t)(k ? k : 1) * sizeof *v);
        if (!v) {
            *st = cd_err(err, CD_E_NOMEM, "out of memory");
            return NULL;
        }
        for (int64_t i = 0; i < k; i++) v[i] = cd_value_get(m, i);
        *n = k;
        return v;
    }
    const cd_tensor *t = &g->tensors[id];
    int prod = t->producer;
    float *f = NULL;
    int64_t k = 0;
    if (prod < 0 || !strcmp(g->ops[prod].type, "feed")) {
        cd_value in = {0};
        if ((*st = cd_dump_read_input(q->r, t->name, &in, err))) return NULL;
        k = cd_value_numel(&in);
        double *v = malloc((size_t)(k ? k : 1) * sizeof *v);
        if (!v) {
            cd_value_release(&in);
            *st = cd_err(err, CD_E_NOMEM, "out of memory");
            return NULL;
        }
        for (int64_t i = 0; i < k; i++) v[i] = cd_value_get(&in, i);
        cd_value_release(&in);
        *n = k;
        return v;
    }
    cd_dump_tensor_info *tl = NULL;
    int nt = 0;
    if ((*st = cd_dump_list_tensors(q->r, run, &tl, &nt, err))) return NULL;
    const cd_dump_tensor_info *ti = NULL;
    for (int i = 0; i < nt && !ti; i++)
        if (tl[i].op_index == prod && !strcmp(tl[i].tensor, t->name) && !tl[i].stats_only) ti = &tl[i];
    if (!ti) {
        snprintf(note, nlen, "input '%s' (from op #%d) was not captured in full; probe it (--layers all)", t->name,
                 prod);
        free(tl);
        return NULL;
    }
    *st = cd_dump_read_f32(q->r, run, ti->dataset, &f, &k, err);
    free(tl);
    if (*st) return NULL;
    double *v = malloc((size_t)(k ? k : 1) * sizeof *v);
    if (!v) {
        free(f);
        *st = cd_err(err, CD_E_NOMEM, "out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < k; i++) v[i] = f[i];
    free(f);
    *n = k;
    return v;
}

/* Output `name` of op op_index as run `run` stored it (float); NULL when absent. */
static float *op_output(const cd_local_req *q, const char *run, int op_index, const char *name, int64_t *n,
                        cd_error *err, cd_status *st) {
    cd_dump_tensor_info *tl = NULL;
    int nt = 0;
    float *f = NULL;
    *n = 0;
    if ((*st = cd_dump_list_tensors(q->r, run, &tl, &nt, err))) return NULL;
    for (int i = 0; i < nt; i++)
        if (tl[i].op_index == op_index && !strcmp(tl[i].tensor, name) && !tl[i].stats_only) {
            *st = cd_dump_read_f32(q->r, run, tl[i].dataset, &f, n, err);
            break;
        }
    free(tl);
    return f;
}

/* ---------------------------------------------------------------- error of one nonlinearity */

/* |f(z + e) - f(z)| for |e| <= dz: the derivative at z plus the largest second derivative
 * times dz (mean value theorem), never above the global Lipschitz constant. */
static double d_sig(double z, double dz) {
    double s = 1 / (1 + exp(-z)), d = s * (1 - s) + 0.1 * dz; /* |sigma''| <= 0.0962 */
    return (d < 0.25 ? d : 0.25) * dz;
}
static double d_tanh(double z, double dz) {
    double t = tanh(z), d = 1 - t * t + 0.77 * dz; /* |tanh''| <= 0.7698 */
    return (d < 1 ? d : 1) * dz;
}

/* ---------------------------------------------------------------- rnn */

/* What a side's arithmetic may do (docs/verdicts.md "recurrent"): ua the unit of its
 * arithmetic, us the rounding of what it stores between steps (gate projections, cell state,
 * hidden state: u16 where it stores half, else 0), ulf the float built-ins' unit, tr the ulps
 * of an engine's approximated sigmoid/tanh (0: OpenCL built-ins, 8 u for sigmoid's formula, 6 u
 * for tanh; an engine's tanh, from exp, also a few u absolute near 0). */
typedef struct rnn_arith {
    double ua, us, ulf, tr;
} rnn_arith;

typedef struct rnn_dims {
    int mode, G, L, D;
    int64_t H, T, N, I;
} rnn_dims;

/* The state of one step: h (and c for LSTM), S = 2H for LSTM, H otherwise. */
static int64_t rnn_state(const rnn_dims *r) { return r->mode == 0 ? 2 * r->H : r->H; }

/* One step of one sample: from the previous h' (hp) and c' (cp) and their error bounds (ehp,
 * ecp: 0 for a step judged on its own), the input x with its error bound ex (NULL: exact), the
 * exact h and c and the bounds of a side's deviation from them (hn, cn, ehn, ecn, [H]). J, when
 * not NULL, gets the step's Jacobian d(h, c)/d(h', c') [S x S] at the exact values. scr: 3 G H. */
static void rnn_step(const rnn_dims *r, const rnn_arith *ar, const double *x, const double *ex, int64_t il,
                     const double *wih, const double *whh, const double *bih, const double *bhh, const double *hp,
                     const double *ehp, const double *cp, const double *ecp, double *hn, double *ehn, double *cn,
                     double *ecn, double *J, double *scr) {
    const int64_t H = r->H, G = r->G, S = rnn_state(r);
    const double ua = ar->ua, us = ar->us, ulf = ar->ulf;
    const double sgu = (ar->tr > 8 ? ar->tr : 8) * ulf, thu = (ar->tr > 6 ? ar->tr : 6) * ulf,
                 tha = ar->tr > 0 ? 4 * ulf : 0;
    double *z = scr, *dz = z + G * H, *aux = dz + G * H;
    for (int64_t j = 0; j < G * H; j++) {
        const double *wi = wih + j * il, *wh = whh + j * H;
        double zx = bih[j], mx = fabs(bih[j]), exi = 0, zu = 0, mu = 0, ehu = 0;
        for (int64_t i = 0; i < il; i++) {
            zx += x[i] * wi[i];
            mx += fabs(x[i] * wi[i]);
            if (ex) exi += fabs(wi[i]) * ex[i];
        }
        for (int64_t m = 0; m < H; m++) {
            zu += hp[m] * wh[m];
            mu += fabs(hp[m] * wh[m]);
            ehu += fabs(wh[m]) * ehp[m];
        }
        /* gx: an (il+1)-term dot product in the side's arithmetic, stored (us); u: H terms;
         * then x + (u + b_hh), two roundings */
        double gxe = cd_gamma(il + 1, ua) * mx, gxs = us * (fabs(zx) + gxe);
        double ue = cd_gamma(H, ua) * mu;
        z[j] = zx + zu + bhh[j];
        aux[j] = zu + bhh[j];
        dz[j] = gxe + gxs + ue + ua * (fabs(zu) + fabs(bhh[j])) + ua * (fabs(z[j]) + gxe + ue) + exi + ehu;
    }
    if (J) memset(J, 0, (size_t)(S * S) * sizeof *J);
    for (int64_t k = 0; k < H; k++) {
        double hv, e;
        if (r->mode == 0) { /* LSTM i, f, c~, o */
            double zi = z[k], zf = z[H + k], zc = z[2 * H + k], zo = z[3 * H + k];
            double gi = 1 / (1 + exp(-zi)), gf = 1 / (1 + exp(-zf)), gc = tanh(zc), go = 1 / (1 + exp(-zo));
            /* built-ins in float (exp 3-4 ulp, divide 2.5, tanh 5) then cast to the side's type */
            double ei = d_sig(zi, dz[k]) + (sgu + ua) * gi, ef = d_sig(zf, dz[H + k]) + (sgu + ua) * gf;
            double eg = d_tanh(zc, dz[2 * H + k]) + (thu + ua) * fabs(gc) + tha;
            double eo_ = d_sig(zo, dz[3 * H + k]) + (sgu + ua) * go;
            double cpk = cp[k], cv = gf * cpk + gi * gc;
            double ecv = (gf + ef) * ecp[k] + fabs(cpk) * ef + fabs(gc) * ei + (gi + ei) * eg +
                2 * ua * (fabs(gf * cpk) + fabs(gi * gc)) + us * fabs(cv);
            cn[k] = cv;
            ecn[k] = ecv;
            double tc = tanh(cv);
            hv = go * tc;
            e = fabs(tc) * eo_ + (go + eo_) * (d_tanh(cv, ecv) + (thu + ua) * fabs(tc) + tha) + ua * fabs(hv);
            if (J) {
                const double *wI = whh + k * H, *wF = whh + (H + k) * H, *wC = whh + (2 * H + k) * H,
                             *wO = whh + (3 * H + k) * H;
                double si = gi * (1 - gi), sf = gf * (1 - gf), sc = 1 - gc * gc, so = go * (1 - go),
                       dt = go * (1 - tc * tc);
                double *jh = J + k * S, *jc = J + (H + k) * S;
                for (int64_t m = 0; m < H; m++) {
                    double dc = cpk * sf * wF[m] + gc * si * wI[m] + gi * sc * wC[m];
                    jc[m] = dc;
                    jh[m] = tc * so * wO[m] + dt * dc;
                }
                jc[H + k] = gf;
                jh[H + k] = dt * gf;
            }
        } else if (r->mode == 1) { /* GRU r, z, c~; reset after the matmul */
            double zr = z[k], zz = z[H + k];
            double gr = 1 / (1 + exp(-zr)), gz = 1 / (1 + exp(-zz));
            double er = d_sig(zr, dz[k]) + (sgu + ua) * gr, ez = d_sig(zz, dz[H + k]) + (sgu + ua) * gz;
            /* pre = x_c + r (u_c + b_c): dz of row 2H+k holds both parts' errors */
            double uc = aux[2 * H + k], xc = z[2 * H + k] - uc;
            double pre = xc + gr * uc;
            double epre = dz[2 * H + k] + fabs(uc) * er + ua * (fabs(gr * uc) + fabs(pre));
            double gc = tanh(pre), eg = d_tanh(pre, epre) + (thu + ua) * fabs(gc) + tha;
            double hp_k = hp[k];
            hv = gz * hp_k + (1 - gz) * gc;
            e = ez * fabs(hp_k - gc) + (1 - gz + ez) * eg + (gz + ez) * ehp[k] +
                2 * ua * (fabs(gz * hp_k) + fabs((1 - gz) * gc)) + ua * (1 - gz);
            if (J) {
                const double *wR = whh + k * H, *wZ = whh + (H + k) * H, *wC = whh + (2 * H + k) * H;
                double sr = gr * (1 - gr), sz = gz * (1 - gz), sc = 1 - gc * gc;
                double *jh = J + k * S;
                for (int64_t m = 0; m < H; m++)
                    jh[m] = sz * wZ[m] * (hp_k - gc) + (1 - gz) * sc * (sr * wR[m] * uc + gr * wC[m]);
                jh[k] += gz;
            }
        } else if (r->mode == 2) {
            double tz = tanh(z[k]);
            hv = tz;
            e = d_tanh(z[k], dz[k]) + (thu + ua) * fabs(tz) + tha;
            if (J)
                for (int64_t m = 0; m < H; m++) J[k * S + m] = (1 - tz * tz) * whh[k * H + m];
        } else {
            hv = z[k] > 0 ? z[k] : 0;
            e = dz[k];
            if (J && z[k] > 0)
                for (int64_t m = 0; m < H; m++) J[k * S + m] = whh[k * H + m];
        }
        hn[k] = hv;
        ehn[k] = e;
    }
}

/* Forced: one direction d of one layer, T steps, each step recomputed exactly on the side's
 * own previous outputs (drive [T, N, D*H]: its observed Out), so that only the step's own
 * rounding is bounded (and the cell state's, carried through the forget gate, which
 * contracts). in/ein [T, N, il]: the layer input and a bound of its deviation (NULL: exact);
 * out/eout [T, N, D*H]: the exact step results and their bounds; hT, cT, ehT, ecT [N, H]: the
 * last step's own result (the State output), not the observed h that drove it. */
static void rnn_dir_forced(const rnn_dims *r, int d, const rnn_arith *ar, const double *in, const double *ein,
                           int64_t il, const double *wih, const double *whh, const double *bih, const double *bhh,
                           const double *h0, const double *c0, const double *len, const float *drive, double *out,
                           double *eout, double *hT, double *cT, double *ehT, double *ecT, double *scratch) {
    const int64_t H = r->H, G = r->G, N = r->N, DH = (int64_t)r->D * H;
    double *hp = scratch, *ehp = hp + H, *c = ehp + H, *ec = c + H, *hn = ec + H, *ehn = hn + H, *cn = ehn + H,
           *ecn = cn + H, *scr = ecn + H;
    (void)G;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t k = 0; k < H; k++) {
            hT[n * H + k] = hp[k] = h0[n * H + k];
            cT[n * H + k] = c[k] = c0 ? c0[n * H + k] : 0;
            ehT[n * H + k] = ecT[n * H + k] = ehp[k] = ec[k] = 0;
        }
        for (int64_t s = 0; s < r->T; s++) {
            int64_t t = d == 0 ? s : r->T - 1 - s;
            double *o = out + (t * N + n) * DH + d * H, *eo = eout + (t * N + n) * DH + d * H;
            if (len && (double)t >= len[n]) { /* padding step: output zero, state held */
                for (int64_t k = 0; k < H; k++) o[k] = eo[k] = 0;
                continue;
            }
            rnn_step(r, ar, in + (t * N + n) * il, ein ? ein + (t * N + n) * il : NULL, il, wih, whh, bih, bhh, hp, ehp,
                     c, ec, hn, ehn, cn, ecn, NULL, scr);
            for (int64_t k = 0; k < H; k++) {
                o[k] = hT[n * H + k] = hn[k];
                eo[k] = ehT[n * H + k] = ehn[k];
                cT[n * H + k] = c[k] = cn[k];
                ecT[n * H + k] = ec[k] = ecn[k];
                /* the next step reads the side's stored h: observed */
                hp[k] = drive[(t * N + n) * DH + d * H + k];
                ehp[k] = 0;
            }
        }
    }
}

/* Unforced: one direction d of one layer on the exact trajectory from the layer's inputs (a
 * lower layer of a multi-layer rnn, whose outputs are not observable, or any layer when the
 * side's Out is not in the dump). The error of step t to first order is
 *     E_t = sum_{s <= t} |J_t J_{t-1} ... J_{s+1}| r_s
 * with r_s the step's own error bound (its roundings and its input's error, on the exact
 * previous state) and J the step Jacobians: the product of the signed Jacobians, not of their
 * absolute values (that grows by the row sums of |W_hh| per step and overflowed on real
 * recognizers: 25 steps of a 2-layer LSTM, hidden 48, reached 3e32 at step 11, then Inf and a
 * NaN allowance). Every bound is capped by the range a correct side's value can take (|h| <= 1
 * for LSTM, GRU and tanh RNN, |c_t| <= |c_0| + t), so it stays finite. Returns false out of memory. */
static bool rnn_dir_fo(const rnn_dims *r, int d, const rnn_arith *ar, const double *in, const double *ein, int64_t il,
                       const double *wih, const double *whh, const double *bih, const double *bhh, const double *h0,
                       const double *c0, const double *len, double *out, double *eout, double *hT, double *cT,
                       double *ehT, double *ecT, double *scratch) {
    const int64_t H = r->H, N = r->N, DH = (int64_t)r->D * H, S = rnn_state(r), T = r->T;
    double *hp = scratch, *zero = hp + H, *c = zero + H, *hn = c + H, *ehn = hn + H, *cn = ehn + H, *ecn = cn + H,
           *E = ecn + H, *scr = E + S;
    /* T^2/2 products of S x S matrices: beyond ~4e9 multiply-adds (hidden 256 bidirectional
     * over 80 steps would take minutes) every bound is the range cap alone, sound and loose */
    bool products = 0.5 * (double)T * (double)T * (double)S * (double)S * (double)S * (double)N <= 4e9;
    double *M = malloc((size_t)((products ? T * S * S : 0) + S * S + T * S + 1) * sizeof *M); /* P_{t<-s} */
    if (!M) return false;
    double *J = M + (products ? T * S * S : 0), *R = J + S * S, *tmp = scratch + 8 * H + S + 3 * r->G * H; /* tmp: S */
    bool bounded = r->mode <= 2; /* LSTM, GRU and tanh RNN: |h| <= 1 */
    for (int64_t k = 0; k < H; k++) zero[k] = 0;
    for (int64_t n = 0; n < N; n++) {
        double c0max = 0;
        for (int64_t k = 0; k < H; k++) {
            hT[n * H + k] = hp[k] = h0[n * H + k];
            cT[n * H + k] = c[k] = c0 ? c0[n * H + k] : 0;
            ehT[n * H + k] = ecT[n * H + k] = 0;
            if (fabs(c[k]) > c0max) c0max = fabs(c[k]);
        }
        int64_t q = 0; /* steps taken */
        for (int64_t s = 0; s < T; s++) {
            int64_t t = d == 0 ? s : T - 1 - s;
            double *o = out + (t * N + n) * DH + d * H, *eo = eout + (t * N + n) * DH + d * H;
            if (len && (double)t >= len[n]) {
                for (int64_t k = 0; k < H; k++) o[k] = eo[k] = 0;
                continue;
            }
            rnn_step(r, ar, in + (t * N + n) * il, ein ? ein + (t * N + n) * il : NULL, il, wih, whh, bih, bhh, hp,
                     zero, c, zero, hn, ehn, cn, ecn, J, scr);
            if (!products) { /* too costly: the range caps below stand alone */
                for (int64_t i = 0; i < S; i++) E[i] = INFINITY;
                q++;
                goto capped;
            }
            /* P_{t<-s} = J_t P_{t-1<-s} for every earlier step s */
            for (int64_t p = 0; p < q; p++) {
                double *P = M + p * S * S;
                for (int64_t j = 0; j < S; j++) {
                    for (int64_t i = 0; i < S; i++) tmp[i] = 0;
                    for (int64_t m = 0; m < S; m++) {
                        double pm = P[m * S + j];
                        if (pm == 0) continue;
                        for (int64_t i = 0; i < S; i++) tmp[i] += J[i * S + m] * pm;
                    }
                    for (int64_t i = 0; i < S; i++) P[i * S + j] = tmp[i];
                }
            }
            double *rq = R + q * S, *Pq = M + q * S * S;
            for (int64_t k = 0; k < H; k++) {
                rq[k] = ehn[k];
                if (r->mode == 0) rq[H + k] = ecn[k];
            }
            memset(Pq, 0, (size_t)(S * S) * sizeof *Pq);
            for (int64_t i = 0; i < S; i++) Pq[i * S + i] = 1;
            q++;
            for (int64_t i = 0; i < S; i++) {
                double acc = 0;
                for (int64_t p = 0; p < q; p++) {
                    const double *P = M + p * S * S + i * S, *rp = R + p * S;
                    for (int64_t j = 0; j < S; j++) acc += fabs(P[j]) * rp[j];
                }
                E[i] = acc;
            }
        capped:
            /* the range caps: a correct side's h lies in [-1, 1] (LSTM, GRU), its c within
             * |c0| + steps */
            for (int64_t k = 0; k < H; k++) {
                if (bounded && !(E[k] <= 1 + fabs(hn[k]))) E[k] = 1 + fabs(hn[k]);
                if (r->mode == 0 && !(E[H + k] <= c0max + (double)q + fabs(cn[k])))
                    E[H + k] = c0max + (double)q + fabs(cn[k]);
                if (!isfinite(E[k])) E[k] = INFINITY;
            }
            for (int64_t k = 0; k < H; k++) {
                o[k] = hT[n * H + k] = hp[k] = hn[k];
                eo[k] = ehT[n * H + k] = E[k];
                cT[n * H + k] = c[k] = cn[k];
                ecT[n * H + k] = r->mode == 0 ? E[H + k] : 0;
            }
        }
    }
    free(M);
    return true;
}

/* The allowances of the rnn op checked last (Out, State h, State c), kept for the next output
 * of the same op in the same check; cd_local_allow_drop forgets them (local.c, at the end of
 * every check). */
static struct {
    const cd_dump_reader *r;
    int op_index;
    char runs[256];
    double ua, ur;
    double *a[3];
    int64_t n[3];
} rnn_cache;

void cd_local_allow_drop(void) {
    for (int k = 0; k < 3; k++) free(rnn_cache.a[k]);
    memset(&rnn_cache, 0, sizeof rnn_cache);
}

static bool rnn_cache_hit(const cd_local_req *q, int op_index) {
    char runs[256];
    snprintf(runs, sizeof runs, "%s|%s|%s", q->run_a, q->run_ref, q->run_local);
    return rnn_cache.r == q->r && rnn_cache.op_index == op_index && !strcmp(rnn_cache.runs, runs) &&
        rnn_cache.ua == q->b.u && rnn_cache.ur == q->ref.u;
}

static int rnn_mode(const cd_op *op, int *G) {
    const char *m = cd_attr_str(op, "mode", "");
    if (!strcmp(m, "LSTM")) {
        *G = 4;
        return 0;
    }
    if (!strcmp(m, "GRU")) {
        *G = 3;
        return 1;
    }
    *G = 1;
    return !strcmp(m, "RNN_TANH") ? 2 : 3;
}

/* The exact per-step results and their bounds for every output of the rnn op; the element
 * allowance of output `tensor` is safety * bound + |exact - ref|. */
static cd_status rnn_allowance(const cd_local_req *q, const cd_layer_cmp *l, const float *ref, int64_t nref,
                               double **allow, char *note, size_t nlen, cd_error *err) {
    const cd_graph *g = q->g;
    const cd_op *op = &g->ops[l->op_index];
    cd_status st = CD_OK;
    rnn_dims r = {0};
    r.mode = rnn_mode(op, &r.G);
    r.L = (int)cd_attr_int(op, "num_layers", 1);
    r.D = cd_attr_bool(op, "is_bidirec", false) ? 2 : 1;
    r.H = cd_attr_int(op, "hidden_size", 0);
    int xid = cd_op_in(op, "Input", 0), h0id = cd_op_in(op, "PreState", 0),
        c0id = r.mode == 0 ? cd_op_in(op, "PreState", 1) : -1, sqid = cd_op_in(op, "SequenceLength", 0);
    const cd_slot *ws = cd_op_in_slot(op, "WeightList");
    if (xid < 0 || h0id < 0 || (r.mode == 0 && c0id < 0) || !ws || ws->n != 4 * r.L * r.D || r.H < 1) {
        snprintf(note, nlen, "rnn inputs not as expected");
        return CD_OK;
    }
    const cd_shape *xs = &q->plan->meta[xid].shape;
    if (xs->rank != 3) {
        snprintf(note, nlen, "rnn input is not [T, N, I]");
        return CD_OK;
    }
    r.T = xs->d[0];
    r.N = xs->d[1];
    r.I = xs->d[2];
    const int64_t H = r.H, N = r.N, T = r.T, DH = r.D * H, GH = r.G * H;
    int64_t nx = 0, nh = 0, nc = 0, nsq = 0, nw = 0, nout = 0;
    double *x = NULL, *h0 = NULL, *c0 = NULL, *sq = NULL, *w[4 * 2 * 64] = {0}, *y = NULL, *ey = NULL, *yin = NULL,
           *eyin = NULL, *hT = NULL, *cT = NULL, *ehT = NULL, *ecT = NULL, *scr = NULL, *ya = NULL, *eya = NULL,
           *hTa = NULL, *cTa = NULL, *ehTa = NULL, *ecTa = NULL;
    float *bout = NULL, *aout = NULL;
    double *a = NULL;
    if (r.L > 64) {
        snprintf(note, nlen, "rnn with more than 64 layers");
        return CD_OK;
    }
    x = tensor_vals(q, q->run_a, xid, &nx, note, nlen, err, &st);
    if (!st && x) h0 = tensor_vals(q, q->run_a, h0id, &nh, note, nlen, err, &st);
    if (!st && h0 && c0id >= 0) c0 = tensor_vals(q, q->run_a, c0id, &nc, note, nlen, err, &st);
    if (!st && h0 && sqid >= 0) sq = tensor_vals(q, q->run_a, sqid, &nsq, note, nlen, err, &st);
    for (int k = 0; !st && !note[0] && k < ws->n; k++) {
        w[k] = tensor_vals(q, q->run_a, ws->ids[k], &nw, note, nlen, err, &st);
        int lay = (k % (2 * r.L * r.D)) / (2 * r.D);
        int64_t il = lay == 0 ? r.I : DH, want = k < 2 * r.L * r.D ? (k % 2 == 0 ? GH * il : GH * H) : GH;
        if (w[k] && nw != want)
            snprintf(note, nlen, "rnn WeightList[%d] has %lld values, expected %lld", k, (long long)nw,
                     (long long)want);
    }
    if (st || note[0] || !x || !h0 || (c0id >= 0 && !c0) || (sqid >= 0 && !sq)) goto done;
    if (nx != T * N * r.I || nh != (int64_t)r.L * r.D * N * H || (c0 && nc != nh) || (sq && nsq != N)) {
        snprintf(note, nlen, "rnn inputs have unexpected sizes");
        goto done;
    }
    /* B's Out drives the last layer's steps (forced), and the reference's Out its own: each
     * side is held to its own steps; the State outputs come from them too */
    int outid = cd_op_out(op, "Out", 0);
    if (outid < 0) {
        snprintf(note, nlen, "rnn without Out");
        goto done;
    }
    bout = op_output(q, q->run_local, l->op_index, g->tensors[outid].name, &nout, err, &st);
    if (st) goto done;
    if (bout && nout != T * N * DH) {
        free(bout);
        bout = NULL;
    }
    int64_t naout = 0;
    aout = op_output(q, q->run_ref, l->op_index, g->tensors[outid].name, &naout, err, &st);
    if (st) goto done;
    if (aout && naout != T * N * DH) {
        free(aout);
        aout = NULL;
    }
    size_t big = (size_t)(T * N * (DH > r.I ? DH : r.I) + 1);
    y = calloc(big, sizeof *y);
    ey = calloc(big, sizeof *ey);
    yin = calloc(big, sizeof *yin);
    eyin = calloc(big, sizeof *eyin);
    ya = calloc(big, sizeof *ya);
    eya = calloc(big, sizeof *eya);
    size_t st_n = (size_t)(r.L * r.D * N * H + 1);
    hT = calloc(st_n, sizeof *hT);
    cT = calloc(st_n, sizeof *cT);
    ehT = calloc(st_n, sizeof *ehT);
    ecT = calloc(st_n, sizeof *ecT);
    hTa = calloc(st_n, sizeof *hTa);
    cTa = calloc(st_n, sizeof *cTa);
    ehTa = calloc(st_n, sizeof *ehTa);
    ecTa = calloc(st_n, sizeof *ecTa);
    scr = calloc((size_t)(10 * H + 2 * rnn_state(&r) + 3 * GH + 1), sizeof *scr);
    if (!y || !ey || !yin || !eyin || !ya || !eya || !hT || !cT || !ehT || !ecT || !hTa || !cTa || !ehTa || !ecTa ||
        !scr) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    rnn_arith arb = {.ua = q->b.u, .us = q->b.half_store ? CD_U16 : 0, .ulf = CD_U32, .tr = q->b.trans_ulps};
    rnn_arith ara = {.ua = q->ref.u, .us = q->ref.half_store ? CD_U16 : 0, .ulf = CD_U32, .tr = q->ref.trans_ulps};
    /* both sides from the same inputs: to first order the bound is linear in the units, and
     * that of the two sides together is the bound with their units added */
    rnn_arith ar2 = {
        .ua = arb.ua + ara.ua, .us = arb.us + ara.us, .ulf = 2 * CD_U32, .tr = arb.tr > ara.tr ? arb.tr : ara.tr};
    int oid = -1; /* which output l is: 0 Out, 1 State h, 2 State c */
    if (!strcmp(l->tensor, g->tensors[outid].name))
        oid = 0;
    else if (cd_op_out(op, "State", 0) >= 0 && !strcmp(l->tensor, g->tensors[cd_op_out(op, "State", 0)].name))
        oid = 1;
    else if (r.mode == 0 && cd_op_out(op, "State", 1) >= 0 &&
             !strcmp(l->tensor, g->tensors[cd_op_out(op, "State", 1)].name))
        oid = 2;
    if (oid < 0) {
        snprintf(note, nlen, "output '%s' of the rnn has no step bound (training scratch)", l->tensor);
        goto done;
    }
    int64_t nv = oid == 0 ? T * N * DH : (int64_t)r.L * r.D * N * H;
    if (nv != nref) {
        snprintf(note, nlen, "rnn output '%s' has %lld values, expected %lld", l->tensor, (long long)nref,
                 (long long)nv);
        goto done;
    }
    if (rnn_cache.a[oid] && rnn_cache.n[oid] == nv && rnn_cache_hit(q, l->op_index)) {
        a = malloc((size_t)(nv ? nv : 1) * sizeof *a);
        if (!a) {
            st = cd_err(err, CD_E_NOMEM, "out of memory");
            goto done;
        }
        memcpy(a, rnn_cache.a[oid], (size_t)nv * sizeof *a);
        *allow = a;
        a = NULL;
        goto done;
    }
    /* every output's allowance at once where they do not depend on this output's reference
     * (the reference's Out is in the dump): the check asks for each in turn */
    int64_t nvk[3] = {T * N * DH, (int64_t)r.L * r.D * N * H, r.mode == 0 ? (int64_t)r.L * r.D * N * H : 0};
    double *ak[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) {
        if (!(k == oid || (aout && bout && nvk[k] > 0))) continue;
        if (!(ak[k] = malloc((size_t)(nvk[k] ? nvk[k] : 1) * sizeof *ak[k]))) {
            for (int j = 0; j < k; j++) free(ak[j]);
            st = cd_err(err, CD_E_NOMEM, "out of memory");
            goto done;
        }
    }
    /* Two bounds, each valid for a correct pair of kernels; the element gets the smaller:
     *   pass 0, forced: the last layer's steps recomputed on each side's own previous outputs
     *     (B's Out for B, the reference's Out for the reference), so that only each step's own
     *     rounding is bounded: s (beta_B + beta_A) + |h_B - h_A|, the two exact steps'
     *     difference observed. A side whose output is not its own step (a wrong gate, a final
     *     state that is not its last step) is outside it, whichever side it is;
     *   pass 1, first order: both sides against the exact recurrence from the layer's inputs,
     *     the rounding of every step carried through the product of the step Jacobians:
     *     s E (E with both sides' units). It holds B to the reference over the whole sequence.
     * Lower layers (their outputs are not observable) take the first-order bound in both. */
    for (int pass = bout ? 0 : 1; pass < 2; pass++) {
        memcpy(yin, x, (size_t)nx * sizeof *x);
        memset(eyin, 0, (size_t)nx * sizeof *eyin);
        int64_t il = r.I;
        for (int lay = 0; lay < r.L; lay++) {
            bool top = lay == r.L - 1, forced = top && pass == 0;
            for (int d = 0; d < r.D; d++) {
                int k = (lay * r.D + d) * 2, kb = 2 * r.L * r.D + k;
                size_t so = (size_t)((int64_t)(lay * r.D + d) * N * H);
                const double *h0d = h0 + so, *c0d = c0 ? c0 + so : NULL;
                if (forced) {
                    rnn_dir_forced(&r, d, &arb, yin, lay ? eyin : NULL, il, w[k], w[k + 1], w[kb], w[kb + 1], h0d, c0d,
                                   sq, bout, y, ey, hT + so, cT + so, ehT + so, ecT + so, scr);
                    if (aout)
                        rnn_dir_forced(&r, d, &ara, yin, lay ? eyin : NULL, il, w[k], w[k + 1], w[kb], w[kb + 1], h0d,
                                       c0d, sq, aout, ya, eya, hTa + so, cTa + so, ehTa + so, ecTa + so, scr);
                } else {
                    if (!rnn_dir_fo(&r, d, &ar2, yin, lay ? eyin : NULL, il, w[k], w[k + 1], w[kb], w[kb + 1], h0d, c0d,
                                    sq, y, ey, hT + so, cT + so, ehT + so, ecT + so, scr)) {
                        st = cd_err(err, CD_E_NOMEM, "out of memory");
                        goto done;
                    }
                    /* one exact trajectory for both sides; its bound (both units) is in ehT, ecT */
                    memcpy(hTa + so, hT + so, (size_t)(N * H) * sizeof *hT);
                    memcpy(cTa + so, cT + so, (size_t)(N * H) * sizeof *cT);
                    memset(ehTa + so, 0, (size_t)(N * H) * sizeof *ehT);
                    memset(ecTa + so, 0, (size_t)(N * H) * sizeof *ecT);
                }
            }
            /* this layer's output (and what a side may be off from it) is the next layer's
             * input: its store rounds it once more */
            memcpy(yin, y, (size_t)(T * N * DH) * sizeof *y);
            for (int64_t i = 0; i < T * N * DH; i++) eyin[i] = ey[i] + ar2.us * fabs(y[i]);
            il = DH;
        }
        for (int k = 0; k < 3; k++) {
            if (!ak[k]) continue;
            const double *val = k == 0 ? y : k == 1 ? hT : cT, *bnd = k == 0 ? ey : k == 1 ? ehT : ecT;
            const double *vala = k == 0 ? ya : k == 1 ? hTa : cTa, *bnda = k == 0 ? eya : k == 1 ? ehTa : ecTa;
            double *ao = ak[k];
            for (int64_t i = 0; i < nvk[k]; i++) {
                double v;
                if (pass == 1)
                    v = CD_BOUND_SAFETY * bnd[i];
                else if (aout)
                    v = CD_BOUND_SAFETY * (bnd[i] + bnda[i]) + fabs(val[i] - vala[i]);
                else /* the reference's Out not in the dump: its own steps unknown */
                    v = CD_BOUND_SAFETY * bnd[i] + fabs(val[i] - (double)ref[i]);
                if (!(v >= 0)) v = INFINITY; /* never NaN: an unknown bound bounds nothing */
                ao[i] = pass == (bout ? 0 : 1) || v < ao[i] ? v : ao[i];
            }
        }
    }
    if (!bout) snprintf(note, nlen, "B's Out not in the dump: steps not forced (first-order bound over all steps)");
    a = ak[oid];
    ak[oid] = NULL;
    if (aout && bout) { /* the other outputs', for their turn */
        cd_local_allow_drop();
        rnn_cache.r = q->r;
        rnn_cache.op_index = l->op_index;
        snprintf(rnn_cache.runs, sizeof rnn_cache.runs, "%s|%s|%s", q->run_a, q->run_ref, q->run_local);
        rnn_cache.ua = q->b.u;
        rnn_cache.ur = q->ref.u;
        for (int k = 0; k < 3; k++) {
            rnn_cache.a[k] = ak[k];
            rnn_cache.n[k] = nvk[k];
        }
    } else
        for (int k = 0; k < 3; k++) free(ak[k]);
    *allow = a;
    a = NULL;
done:
    free(a);
    free(x);
    free(h0);
    free(c0);
    free(sq);
    for (int k = 0; k < 4 * 2 * 64; k++) free(w[k]);
    free(y);
    free(ey);
    free(yin);
    free(eyin);
    free(ya);
    free(eya);
    free(hT);
    free(cT);
    free(ehT);
    free(ecT);
    free(hTa);
    free(cTa);
    free(ehTa);
    free(ecTa);
    free(scr);
    free(bout);
    free(aout);
    return st;
}

/* ---------------------------------------------------------------- norms */

/* layer_norm, instance_norm, batch_norm, sync_batch_norm: per element, for each side (unit u),
 * y = (x - mu) inv g + b with the group's mean, variance and inv = 1/sqrt(var + eps) computed
 * by that side (docs/verdicts.md "norm"). */
static cd_status norm_allowance(const cd_local_req *q, const cd_layer_cmp *l, const float *ref, int64_t nref,
                                double **allow, char *note, size_t nlen, cd_error *err) {
    const cd_graph *g = q->g;
    const cd_op *op = &g->ops[l->op_index];
    const char *t = op->type;
    cd_status st = CD_OK;
    bool bn = !strcmp(t, "batch_norm") || !strcmp(t, "sync_batch_norm");
    int xid = cd_op_in(op, "X", 0), yid = cd_op_out(op, "Y", 0);
    int sid = cd_op_in(op, "Scale", 0), bid = cd_op_in(op, "Bias", 0);
    int mid = bn ? cd_op_in(op, "Mean", 0) : -1, vid = bn ? cd_op_in(op, "Variance", 0) : -1;
    if (xid < 0 || yid < 0) {
        snprintf(note, nlen, "%s output '%s': no X or Y, no element bound", t, l->tensor);
        return CD_OK;
    }
    /* which output: Y (0), or a statistics output, one value per group: the mean (1), the
     * variance (2) or the inverse standard deviation (3, instance_norm's SavedVariance as Paddle
     * defines it); batch_norm's are copies of its running statistics (4: exact) */
    int which = 0;
    if (strcmp(l->tensor, g->tensors[yid].name)) {
        static const char *const stat[][2] = {{"Mean", "layer_norm"},
                                              {"Variance", "layer_norm"},
                                              {"SavedMean", "instance_norm"},
                                              {"SavedVariance", "instance_norm"},
                                              {"MeanOut", ""},
                                              {"VarianceOut", ""},
                                              {"SavedMean", ""},
                                              {"SavedVariance", ""}};
        static const int kind[] = {1, 2, 1, 3, 4, 4, 4, 4};
        for (int k = 0; k < 8 && !which; k++) {
            if (bn != !stat[k][1][0] || (!bn && strcmp(t, stat[k][1]))) continue;
            int o = cd_op_out(op, stat[k][0], 0);
            if (o >= 0 && !strcmp(l->tensor, g->tensors[o].name)) which = kind[k];
        }
        if (!which) {
            snprintf(note, nlen, "%s output '%s': not Y nor a statistics output, no element bound", t, l->tensor);
            return CD_OK;
        }
    }
    if (which == 4) { /* a copy of the running statistics (ops_nn_norm_tmpl.h): exact */
        double *z = calloc((size_t)(nref ? nref : 1), sizeof *z);
        if (!z) return cd_err(err, CD_E_NOMEM, "out of memory");
        *allow = z;
        return CD_OK;
    }
    const cd_shape *xs = &q->plan->meta[xid].shape;
    int64_t nx = 0, ns = 0, nb = 0, nm = 0, nvv = 0;
    double *x = NULL, *sc = NULL, *bi = NULL, *mu = NULL, *va = NULL;
    x = tensor_vals(q, q->run_a, xid, &nx, note, nlen, err, &st);
    if (!st && x && sid >= 0) sc = tensor_vals(q, q->run_a, sid, &ns, note, nlen, err, &st);
    if (!st && x && bid >= 0) bi = tensor_vals(q, q->run_a, bid, &nb, note, nlen, err, &st);
    if (!st && x && mid >= 0) mu = tensor_vals(q, q->run_a, mid, &nm, note, nlen, err, &st);
    if (!st && x && vid >= 0) va = tensor_vals(q, q->run_a, vid, &nvv, note, nlen, err, &st);
    double *a = NULL;
    if (st || note[0] || !x) goto done;
    if (!which && nx != nref) {
        snprintf(note, nlen, "%s: %lld input values for %lld outputs", t, (long long)nx, (long long)nref);
        goto done;
    }
    /* group = `len` consecutive values; param index of element i: (i / inner) % C */
    int64_t len = 1, inner = 1, C = 1;
    if (bn) {
        int64_t axis = xs->rank >= 2 ? 1 : 0;
        if (!strcmp(cd_attr_str(op, "data_layout", "NCHW"), "NHWC") && xs->rank >= 2) axis = xs->rank - 1;
        C = xs->rank ? xs->d[axis] : 1;
        for (int k = (int)axis + 1; k < xs->rank; k++) inner *= xs->d[k];
        if (!mu || !va || !sc || !bi || nm != C || nvv != C || ns != C || nb != C) {
            snprintf(note, nlen, "batch_norm parameters not as expected");
            goto done;
        }
    } else if (!strcmp(t, "layer_norm")) {
        int64_t b = cd_attr_int(op, "begin_norm_axis", 1);
        if (b < 0) b += xs->rank; /* counted from the end, as the kernel reads it (MNN's LayerNorm) */
        for (int k = b < 0 ? 0 : (int)b; k < xs->rank; k++) len *= xs->d[k];
        inner = 1;
        C = len; /* scale/bias over the normalized span */
    } else {     /* instance_norm: per (n, c) over the spatial extent */
        for (int k = 2; k < xs->rank; k++) len *= xs->d[k];
        C = xs->rank >= 2 ? xs->d[1] : 1;
        inner = len;
    }
    if (len < 1) len = 1;
    if (which && nref * len != nx) {
        snprintf(note, nlen, "%s: %lld statistics for %lld input values in groups of %lld", t, (long long)nref,
                 (long long)nx, (long long)len);
        goto done;
    }
    double eps = cd_attr_float(op, bn ? "epsilon" : "epsilon", 1e-5);
    a = malloc((size_t)(nx ? nx : 1) * sizeof *a);
    if (!a) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    const double u2 = q->ref.u + q->b.u;
    for (int64_t g0 = 0; g0 < nx; g0 += bn ? nx : len) {
        int64_t gl = bn ? nx : (g0 + len <= nx ? len : nx - g0);
        double m = 0, sabs = 0, var = 0, sdev = 0;
        if (!bn) {
            for (int64_t i = 0; i < gl; i++) {
                m += x[g0 + i];
                sabs += fabs(x[g0 + i]);
            }
            m /= (double)gl;
            for (int64_t i = 0; i < gl; i++) {
                double dv = x[g0 + i] - m;
                var += dv * dv;
                sdev += fabs(dv);
            }
            var /= (double)gl;
            sdev /= (double)gl;
        }
        /* each side: the mean off by gamma_{K+1} sum|x|/K; the variance (a K-term sum of
         * squares of deviations that carry that error) by gamma_{K+2} var + 2 dmu mean|d|;
         * inv by half the variance's relative error plus sqrt and divide (6 u) */
        double gk = cd_gamma(gl + 2, q->ref.u) + cd_gamma(gl + 2, q->b.u);
        double dmu = bn ? 0 : gk * sabs / (double)gl;
        double dvar = bn ? 0 : gk * var + 2 * dmu * sdev + dmu * dmu;
        if (which) {
            /* the group's statistic as each side stores it (rounded once to its type): the
             * variance either as the mean of squared deviations or as E[x^2] - mean^2 (each
             * within gamma_{K+2} of the mean of squares, var + mean^2) */
            double dvar2 = gk * (var + m * m) + 2 * dmu * (sdev + fabs(m)) + dmu * dmu;
            double inv = 1 / sqrt(var + eps), v;
            if (which == 1)
                v = dmu + u2 * fabs(m);
            else if (which == 2)
                v = dvar2 + u2 * var;
            else
                v = inv * (0.5 * dvar2 / (var + eps) + 6 * u2) + u2 * inv;
            a[g0 / len] = CD_BOUND_SAFETY * v;
            continue;
        }
        for (int64_t i = 0; i < gl; i++) {
            int64_t e = g0 + i, c = bn ? (e / inner) % C : (!strcmp(t, "layer_norm") ? i % C : (e / inner) % C);
            double gm = sc && (bn || ns == C) ? sc[c] : 1, bb = bi && (bn || nb == C) ? bi[c] : 0;
            double mean = bn ? mu[c] : m, vv = bn ? va[c] : var;
            double inv = 1 / sqrt(vv + eps), dv = fabs(x[e] - mean);
            double rel_inv = 0.5 * dvar / (vv + eps) + 6 * u2;
            double err_y = fabs(gm) * ((dmu + u2 * (fabs(x[e]) + fabs(mean))) * inv + dv * inv * rel_inv) +
                3 * u2 * (fabs(gm) * dv * inv + fabs(bb));
            a[e] = CD_BOUND_SAFETY * err_y;
        }
    }
    *allow = a;
    a = NULL;
done:
    free(a);
    free(x);
    free(sc);
    free(bi);
    free(mu);
    free(va);
    return st;
}

/* ---------------------------------------------------------------- entry */

bool cd_local_allow_op(const cd_op *op) {
    static const char *const types[] = {"rnn", "layer_norm", "instance_norm", "batch_norm", "sync_batch_norm", NULL};
    for (int i = 0; types[i]; i++)
        if (!strcmp(op->type, types[i])) return true;
    return false;
}

cd_status cd_local_allowance(const cd_local_req *q, const cd_layer_cmp *l, float **mag, int64_t *nmag, char *note,
                             size_t note_len, cd_error *err) {
    const cd_graph *g = q->g;
    const cd_op *op = &g->ops[l->op_index];
    *mag = NULL;
    *nmag = 0;
    /* the reference of this output: the local reference run (fp16) or A's run */
    bool sep = strcmp(q->run_ref, q->run_a) != 0;
    int64_t nref = 0;
    cd_status st = CD_OK;
    float *ref = NULL;
    if (sep)
        ref = op_output(q, q->run_ref, l->op_index, l->tensor, &nref, err, &st);
    else
        st = cd_dump_read_f32(q->r, q->run_a, l->dataset_a, &ref, &nref, err);
    if (st) return st;
    if (!ref) {
        snprintf(note, note_len, "the reference of '%s' is not in the dump", l->tensor);
        return CD_OK;
    }
    double *a = NULL;
    st = !strcmp(op->type, "rnn") ? rnn_allowance(q, l, ref, nref, &a, note, note_len, err)
                                  : norm_allowance(q, l, ref, nref, &a, note, note_len, err);
    free(ref);
    if (st || !a) {
        free(a);
        return st;
    }
    float *m = malloc((size_t)(nref ? nref : 1) * sizeof *m);
    if (!m) {
        free(a);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < nref; i++) m[i] = (float)(a[i] * (1 + 1e-6)); /* rounding up to float */
    free(a);
    *mag = m;
    *nmag = nref;
    return CD_OK;
}
