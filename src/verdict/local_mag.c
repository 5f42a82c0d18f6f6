/* Magnitudes sum |w x| + |b| for the local check's bounds: the whole CPU magnitude run of a
 * layer, the same one element at a time from A's input (dump or forcing record), and the
 * free-run evidence built on them (docs/verdicts.md). */
#include "verdict/local_priv.h"
#include "verdict/local_int8.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/backend_def.h"
#include "engine/executor.h"
#include "model/extract.h"

/* An op extracted alone, with its inputs as a dump run had them (float32). */
typedef struct op_inputs {
    cd_extracted ex;
    bool have_ex;
    cd_value *ins;
    cd_shape *shp;
} op_inputs;

/* run NULL: A's run. note is set (CD_OK returned) when an input was not captured in full. */
static cd_status op_inputs_load(const cd_local_req *q, int op_index, const char *run, op_inputs *o, char *note,
                                size_t note_len, cd_error *err) {
    memset(o, 0, sizeof *o);
    cd_status st = cd_graph_extract_op(q->g, op_index, q->plan->meta, &o->ex, err);
    if (st) return st;
    o->have_ex = true;
    o->ins = calloc((size_t)o->ex.n_inputs + 1, sizeof *o->ins);
    o->shp = calloc((size_t)o->ex.n_inputs + 1, sizeof *o->shp);
    if (!o->ins || !o->shp) return cd_err(err, CD_E_NOMEM, "out of memory");
    return cd_local_load_inputs(q->g, q->plan, q->r, run ? run : q->run_a, run ? NULL : q->force, &o->ex, o->ins,
                                o->shp, note, note_len, err);
}

static void op_inputs_free(op_inputs *o) {
    for (int i = 0; o->ins && i < o->ex.n_inputs; i++) cd_value_release(&o->ins[i]);
    free(o->ins);
    free(o->shp);
    if (o->have_ex) cd_graph_free(o->ex.g);
    memset(o, 0, sizeof *o);
}

/* Hands input k's data over to the caller (who frees it). */
static float *op_inputs_take(op_inputs *o, int k) {
    o->ins[k].owned = false;
    return o->ins[k].data;
}

/* ---------------------------------------------------------------- the Winograd magnitude */

/* An engine that ran a conv as a Winograd F(m, k) computes each output tile as
 * A^T [sum_c (G g_c G^T) . (B^T d_c B)] A; its rounding errors, stage by stage and carried
 * through the later stages, are bounded by gamma_n times the magnitude computed here
 * (compare/bounds.h cd_wino_tile_allow, docs/verdicts.md "Winograd convolutions"): from the signed
 * transforms of the weights and of B's input and from their absolute versions. */
typedef struct cd_wino_tile {
    cd_wino_mats t;
    int alpha, m;
    double *V;              /* B^T d_c B, then |B^T| |d_c| |B|, of every input channel of one input tile */
    int64_t vn, vy, vx;     /* ... the tile it holds (vn -1: none) */
    double out[64];         /* the magnitudes of one output tile */
    int64_t on, oo, oy, ox; /* ... which (on -1: none) */
} cd_wino_tile;

static cd_wino_tile *wino_tile_new(int alpha, int k, int kind, int64_t C) {
    const double *pts = kind == CD_WINO_PADDLE_ARM && alpha == 8 ? cd_wino_points_pl8 : cd_wino_points_mnn;
    cd_wino_tile *t = calloc(1, sizeof *t);
    if (!t || !cd_wino_mats_make(&t->t, alpha, k, pts) ||
        !(t->V = malloc((size_t)(C > 0 ? C : 1) * (size_t)(2 * alpha * alpha) * sizeof *t->V))) {
        free(t);
        return NULL;
    }
    t->alpha = alpha;
    t->m = t->t.m;
    t->vn = t->on = -1;
    return t;
}

static void wino_tile_free(cd_wino_tile *t) {
    if (!t) return;
    free(t->V);
    free(t);
}

/* the input transforms of every input channel c of batch n's input tile (ty, tx) */
static void wino_input(const mag_elem *me, cd_wino_tile *t, int64_t n, int64_t ty, int64_t tx) {
    if (t->vn == n && t->vy == ty && t->vx == tx) return;
    int al = t->alpha;
    int64_t y0 = ty * t->m - me->pt, x0 = tx * t->m - me->pl;
    for (int64_t c = 0; c < me->C; c++) {
        const float *xc = me->xs + (n * me->C + c) * me->H * me->W;
        double d[64];
        for (int s = 0; s < al; s++)
            for (int u = 0; u < al; u++) {
                int64_t iy = y0 + s, ix = x0 + u;
                d[s * al + u] = iy >= 0 && iy < me->H && ix >= 0 && ix < me->W ? xc[iy * me->W + ix] : 0;
            }
        double *v = t->V + 2 * c * al * al;
        cd_wino_input_tf(&t->t, d, v);
        cd_wino_input_mag(&t->t, d, v + al * al);
    }
    t->vn = n;
    t->vy = ty;
    t->vx = tx;
}

/* the magnitudes of batch n's output tile (ty, tx) of channel o, into t->out (m x m) */
static void wino_output(const mag_elem *me, cd_wino_tile *t, int64_t n, int64_t o, int64_t ty, int64_t tx) {
    if (t->on == n && t->oo == o && t->oy == ty && t->ox == tx) return;
    wino_input(me, t, n, ty, tx);
    int al = t->alpha, k = t->t.k;
    double acc[4 * 64] = {0}, U[64], Ua[64];
    int64_t cpg = me->C / me->G, g = o / (me->O / me->G);
    for (int64_t c = 0; c < cpg; c++) {
        const float *w = me->ws + (o * cpg + c) * k * k;
        cd_wino_weight_tf(&t->t, w, U);
        cd_wino_weight_mag(&t->t, w, Ua);
        const double *v = t->V + 2 * (g * cpg + c) * al * al;
        cd_wino_acc(&t->t, U, Ua, v, v + al * al, acc);
    }
    cd_wino_tile_allow(&t->t, acc, cpg, me->q->b.u, me->b ? me->b[o] : 0, t->out);
    t->on = n;
    t->oo = o;
    t->oy = ty;
    t->ox = tx;
}

/* the largest Winograd magnitude of output element (n, o, oh, ow) over the tiles B may have run */
static double wino_mag(mag_elem *me, int64_t n, int64_t o, int64_t oh, int64_t ow) {
    double best = 0;
    for (int k = 0; k < me->n_wino; k++) {
        cd_wino_tile *t = me->wino[k];
        wino_output(me, t, n, o, oh / t->m, ow / t->m);
        double v = t->out[(oh % t->m) * t->m + ow % t->m];
        if (v > best) best = v;
    }
    return best;
}

static bool me_load_x(mag_elem *m, int xid, cd_value *out);

static void wino_setup(mag_elem *m) {
    const cd_op *op = &m->g->ops[m->op_index];
    int alpha[3];
    int n = m->q && !m->keep_sign ? cd_local_wino_tiles(op, m->plan, &m->q->b, alpha) : 0;
    if (!n) return;
    /* the tiles need a plain stride-1 read, and the signed input and weights: no magnitude
     * rather than a direct one where they are not had */
    m->state = -1;
    if (m->KH != m->KW || m->sh != 1 || m->sw != 1 || m->dh != 1 || m->dw != 1) return;
    mag_elem sg = *m;
    sg.keep_sign = true;
    cd_value xs;
    int xid = cd_op_in(op, "Input", 0), fid = cd_op_in(op, "Filter", 0);
    if (xid < 0 || fid < 0 || !me_load_x(&sg, xid, &xs)) return;
    bool ok = cd_value_numel(&xs) == m->N * m->C * m->H * m->W;
    m->xs = xs.data;
    xs.owned = false;
    cd_value_release(&xs);
    int64_t nw = m->O * (m->C / m->G) * m->KH * m->KW;
    if (!ok || !m->xs || cd_value_numel(&m->plan->meta[fid]) != nw ||
        !(m->ws = malloc((size_t)(nw > 0 ? nw : 1) * sizeof *m->ws)))
        return;
    for (int64_t i = 0; i < nw; i++) m->ws[i] = (float)cd_value_get(&m->plan->meta[fid], i);
    for (int k = 0; k < n; k++)
        if (!(m->wino[m->n_wino++] = wino_tile_new(alpha[k], (int)m->KH, m->q->b.wino, m->C))) return;
    cd_bound_spec sp;
    cd_local_spec(m->g, m->plan, m->op_index, m->q->ref, m->q->b, &sp, NULL, 0);
    double gb = sp.wino_k > 0 ? cd_gamma(sp.wino_k, sp.b.u) : 0;
    m->wino_rho = gb > 0 ? cd_gamma(sp.K + 2, sp.ref.u) / gb : 1;
    m->wino_dir = gb > 0 ? cd_gamma(sp.K + 2, sp.b.u) / gb : 1;
    if (!(m->wino_dir >= 1)) m->wino_dir = 1;
    m->state = 1;
}

/* ---------------------------------------------------------------- the magnitude run */

typedef struct keep1 {
    const cd_graph *g;
    const char *tensor;
    int want_op;
    float *data;
    int64_t n;
    bool keep_sign; /* the values as they are (a CPU run), not |values| (a magnitude run) */
} keep1;

static cd_status keep1_hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                           cd_error *err) {
    (void)rep;
    keep1 *k = user;
    if (op_index != k->want_op || k->data || strcmp(k->g->tensors[tensor_id].name, k->tensor)) return CD_OK;
    int64_t n = cd_value_numel(host);
    k->data = malloc((size_t)(n ? n : 1) * sizeof *k->data);
    if (!k->data) return cd_err(err, CD_E_NOMEM, "out of memory");
    if (host->dtype == CD_F32) {
        const float *x = host->data;
        for (int64_t i = 0; i < n; i++) k->data[i] = k->keep_sign ? x[i] : fabsf(x[i]);
    } else {
        for (int64_t i = 0; i < n; i++)
            k->data[i] = (float)(k->keep_sign ? cd_value_get(host, i) : fabs(cd_value_get(host, i)));
    }
    k->n = n;
    return CD_OK;
}

static void set_attr_bool(cd_op *op, const char *name, bool v) {
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, name)) op->attrs[i].i = v;
}

static void clear_attr_str(cd_op *op, const char *name) {
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, name) && op->attrs[i].s) op->attrs[i].s[0] = 0;
}

static void abs_attr_float(cd_op *op, const char *name) {
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, name)) op->attrs[i].f = fabs(op->attrs[i].f);
}

/* The extracted op made to compute sum |w x| + |b|: no activation, subtraction made addition,
 * every float parameter and scale attribute made non-negative. */
static cd_status make_magnitude_op(cd_graph *xg, cd_error *err) {
    int oi = -1;
    for (int i = 0; i < xg->n_ops; i++)
        if (strcmp(xg->ops[i].type, "feed") && strcmp(xg->ops[i].type, "fetch")) oi = i;
    if (oi < 0) return cd_err(err, CD_E_INTERNAL, "magnitude run: the extracted graph has no op");
    cd_op *op = &xg->ops[oi];
    set_attr_bool(op, "with_act", false);
    clear_attr_str(op, "activation_type");
    /* A fused elementwise op without its activation is the plain elementwise op (the fused
     * type itself requires act_type, so clearing it would make the op unrunnable). */
    static const char *const plain[][2] = {{"elementwise_sub", "elementwise_add"},
                                           {"fusion_elementwise_sub_activation", "elementwise_add"},
                                           {"fusion_elementwise_add_activation", "elementwise_add"},
                                           {"fusion_elementwise_mul_activation", "elementwise_mul"},
                                           {"fusion_elementwise_div_activation", "elementwise_div"},
                                           {"fusion_elementwise_max_activation", "elementwise_max"},
                                           {"fusion_elementwise_min_activation", "elementwise_min"}};
    for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++)
        if (!strcmp(op->type, plain[k][0])) {
            char *nt = cd_strdup(plain[k][1]);
            if (!nt) return cd_err(err, CD_E_NOMEM, "out of memory");
            free(op->type);
            op->type = nt;
            break;
        }
    clear_attr_str(op, "act_type");
    abs_attr_float(op, "scale");
    abs_attr_float(op, "bias");
    for (int t = 0; t < xg->n_tensors; t++) {
        cd_tensor *tt = &xg->tensors[t];
        if (!tt->persistable || !tt->data) continue;
        size_t n = tt->nbytes / (cd_dtype_size(tt->dtype) ? cd_dtype_size(tt->dtype) : 1);
        switch (tt->dtype) {
        case CD_F32: {
            float *x = tt->data;
            for (size_t i = 0; i < n; i++) x[i] = fabsf(x[i]);
            break;
        }
        case CD_F16: {
            uint16_t *x = tt->data;
            for (size_t i = 0; i < n; i++) x[i] &= 0x7fff;
            break;
        }
        case CD_I8: {
            int8_t *x = tt->data;
            for (size_t i = 0; i < n; i++) x[i] = x[i] == -128 ? 127 : (int8_t)(x[i] < 0 ? -x[i] : x[i]);
            break;
        }
        case CD_I16: {
            int16_t *x = tt->data;
            for (size_t i = 0; i < n; i++) x[i] = x[i] == INT16_MIN ? INT16_MAX : (int16_t)(x[i] < 0 ? -x[i] : x[i]);
            break;
        }
        default: break;
        }
    }
    return CD_OK;
}

/* Layer l alone on the CPU in float32, on the inputs of dump run `run` (NULL: A's): its output,
 * or with magnitude its sum |w x| + |b| per output element (|inputs|, |parameters|, no
 * activation). x, when not NULL, gets a copy of the first float input holding as many values
 * as the output (rounding ops: where the ties are). */
static cd_status run_op_cpu(const cd_local_req *q, const cd_layer_cmp *l, const char *run, bool magnitude, float **out,
                            int64_t *nout, float **x, char *note, size_t note_len, cd_error *err) {
    *out = NULL;
    op_inputs oi;
    cd_plan xp;
    bool have_plan = false;
    bool *mask = NULL;
    keep1 k = {.tensor = l->tensor, .want_op = -1, .keep_sign = !magnitude};
    cd_status st = op_inputs_load(q, l->op_index, run, &oi, note, note_len, err);
    if (st || note[0]) goto done;
    cd_extracted ex = oi.ex;
    cd_value *ins = oi.ins;
    cd_shape *shp = oi.shp;
    for (int i = 0; x && !*x && i < ex.n_inputs; i++)
        if (ins[i].dtype == CD_F32 && cd_value_numel(&ins[i]) == cd_shape_numel(&l->shape)) {
            int64_t ne = cd_value_numel(&ins[i]);
            if ((*x = malloc((size_t)(ne ? ne : 1) * sizeof **x))) memcpy(*x, ins[i].data, (size_t)ne * sizeof **x);
        }
    for (int i = 0; magnitude && i < ex.n_inputs; i++) {
        if (ins[i].dtype != CD_F32) continue;
        float *xi = ins[i].data;
        int64_t ne = cd_value_numel(&ins[i]);
        for (int64_t e = 0; e < ne; e++) xi[e] = fabsf(xi[e]);
    }
    if (magnitude && (st = make_magnitude_op(ex.g, err))) goto done;
    if ((st = cd_plan_build(ex.g, shp, CD_PREC_FP32, &xp, err))) goto done;
    have_plan = true;
    int target = -1;
    for (int i = 0; i < ex.g->n_ops; i++)
        if (strcmp(ex.g->ops[i].type, "feed") && strcmp(ex.g->ops[i].type, "fetch")) target = i;
    mask = calloc((size_t)ex.g->n_ops + 1, 1);
    if (!mask) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    mask[target] = true;
    k.g = ex.g;
    k.want_op = target;
    cd_probe_sink sink = {.user = &k, .hit = keep1_hit};
    cd_exec_opts xo = {.probe_mask = mask, .stop_flag = q->stop_flag};
    cd_backend_opts bo = q->cpu_opts;   /* the caller's, at fp32 */
    if (magnitude) bo.int8_arm = false; /* magnitudes come from the float path: |w| |x| of dequantized weights */
    cd_backend *b = NULL;
    st = cd_cpu_backend_open(&bo, &b, err);
    if (!st) st = cd_execute(&xp, b, ins, &xo, &sink, err);
    if (b) cd_backend_close(b);
    if (!st && !k.data)
        snprintf(note, note_len, "the %s run produced no '%s'", magnitude ? "magnitude" : "CPU", l->tensor);
    *out = k.data;
    *nout = k.n;
    k.data = NULL;
done:
    free(k.data);
    free(mask);
    if (have_plan) cd_plan_free(&xp);
    op_inputs_free(&oi);
    return st;
}

/* sum |w x| + |b| per output element of layer l, on the CPU in float32 from A's inputs. */
cd_status cd_local_magnitude(const cd_local_req *q, const cd_layer_cmp *l, float **mag, int64_t *nmag, char *note,
                             size_t note_len, cd_error *err) {
    *mag = NULL;
    /* rnn and the norms: the element's allowance from the layer's inputs (local_allow.c) */
    if (cd_local_allow_op(&q->g->ops[l->op_index])) return cd_local_allowance(q, l, mag, nmag, note, note_len, err);
    cd_status st = run_op_cpu(q, l, NULL, true, mag, nmag, NULL, note, note_len, err);
    int alpha[3];
    if (st || !*mag || !cd_local_wino_tiles(&q->g->ops[l->op_index], q->plan, &q->b, alpha)) return st;
    /* a conv B may have run as a Winograd one: the Winograd magnitude where it is larger */
    mag_elem me = {.q = q,
                   .g = q->g,
                   .plan = q->plan,
                   .op_index = l->op_index,
                   .out_shape = l->shape,
                   .n_out = *nmag,
                   .budget = INT64_MAX};
    cd_local_me_setup(&me);
    float *wmax = me.state > 0 && me.n_wino && me.N * me.O * me.Ho * me.Wo == *nmag
        ? calloc((size_t)(*nmag > 0 ? *nmag : 1), sizeof *wmax)
        : NULL;
    if (wmax) {
        for (int64_t n = 0; n < me.N; n++)
            for (int k = 0; k < me.n_wino; k++) {
                cd_wino_tile *t = me.wino[k];
                for (int64_t ty = 0; ty * t->m < me.Ho; ty++)
                    for (int64_t tx = 0; tx * t->m < me.Wo; tx++)
                        for (int64_t o = 0; o < me.O; o++) {
                            wino_output(&me, t, n, o, ty, tx);
                            for (int64_t i = 0; i < t->m && ty * t->m + i < me.Ho; i++)
                                for (int64_t j = 0; j < t->m && tx * t->m + j < me.Wo; j++) {
                                    float *v = wmax + ((n * me.O + o) * me.Ho + ty * t->m + i) * me.Wo + tx * t->m + j;
                                    double wm = t->out[i * t->m + j];
                                    if (wm > *v) *v = (float)wm;
                                }
                        }
            }
        for (int64_t i = 0; i < *nmag; i++) {
            double d = (*mag)[i];
            (*mag)[i] = (float)(fmax(wmax[i], me.wino_dir * d) + me.wino_rho * d);
        }
        free(wmax);
    } else {
        snprintf(note, note_len, "the Winograd magnitude of '%s' could not be computed", l->tensor);
        free(*mag);
        *mag = NULL;
    }
    cd_local_me_free(&me);
    return st;
}

/* ---------------------------------------------------------------- magnitude per element */

/* sum |w x| + |b| of single output elements of a conv, fc/mul or scale, from A's input and the
 * plan's parameters: what the lazy check asks for the few elements over the cheap bound. Set up
 * on the first request; any shape or dtype it does not recognise makes it answer NaN, and the
 * caller falls back to the whole magnitude run. */

static float *param_f32(const cd_plan *p, int id, int64_t want) {
    if (id < 0 || !p->meta[id].data || cd_value_numel(&p->meta[id]) != want) return NULL;
    float *f = malloc((size_t)(want ? want : 1) * sizeof *f);
    for (int64_t i = 0; f && i < want; i++) f[i] = (float)fabs(cd_value_get(&p->meta[id], i));
    return f;
}

static int64_t ints_at(const cd_op *op, const char *name, int k, int64_t dflt) {
    const int64_t *v;
    int n = cd_attr_ints(op, name, &v);
    return n > k ? v[k] : n > 0 ? v[0] : dflt;
}

static void same_pad1(int64_t in, int64_t stride, int64_t k, int64_t *b) {
    int64_t out = (in + stride - 1) / stride, tot = (out - 1) * stride + k - in;
    *b = tot > 0 ? tot / 2 : 0;
}

static bool me_conv(mag_elem *m, const cd_op *op, const cd_plan *p, const cd_value *x) {
    int fid = cd_op_in(op, "Filter", 0), bid = cd_op_in(op, "Bias", 0);
    if (x->shape.rank != 4 || fid < 0 || p->meta[fid].shape.rank != 4 || cd_op_in(op, "ResidualData", 0) >= 0)
        return false;
    const cd_shape *fs = &p->meta[fid].shape;
    m->N = x->shape.d[0];
    m->C = x->shape.d[1];
    m->H = x->shape.d[2];
    m->W = x->shape.d[3];
    m->O = fs->d[0];
    m->KH = fs->d[2];
    m->KW = fs->d[3];
    m->G = cd_attr_int(op, "groups", 1);
    m->sh = ints_at(op, "strides", 0, 1);
    m->sw = ints_at(op, "strides", 1, 1);
    m->dh = ints_at(op, "dilations", 0, 1);
    m->dw = ints_at(op, "dilations", 1, 1);
    const int64_t *pv;
    int np = cd_attr_ints(op, "paddings", &pv);
    m->pt = np > 0 ? pv[0] : 0;
    m->pl = np == 4 ? pv[2] : np >= 2 ? pv[1] : m->pt;
    const char *alg = cd_attr_str(op, "padding_algorithm", "EXPLICIT");
    if (!strcmp(alg, "VALID"))
        m->pt = m->pl = 0;
    else if (!strcmp(alg, "SAME")) {
        m->dh = m->dw = 1;
        same_pad1(m->H, m->sh, m->KH, &m->pt);
        same_pad1(m->W, m->sw, m->KW, &m->pl);
    }
    if (m->G <= 0 || m->C % m->G || m->O % m->G || fs->d[1] * m->G != m->C || m->sh <= 0 || m->sw <= 0 || m->dh <= 0 ||
        m->dw <= 0)
        return false;
    /* the output extent from the layer's own shape: [N, O, Ho, Wo] */
    const cd_shape *os = &m->out_shape;
    if (os->rank != 4 || os->d[0] != m->N || os->d[1] != m->O) return false;
    m->Ho = os->d[2];
    m->Wo = os->d[3];
    if (!(m->w = param_f32(p, fid, cd_shape_numel(fs)))) return false;
    if (bid >= 0 && !(m->b = param_f32(p, bid, m->O))) return false;
    return true;
}

static bool me_fc(mag_elem *m, const cd_op *op, const cd_plan *p, const cd_value *x) {
    bool fc = !strcmp(op->type, "fc");
    int wid = cd_op_in(op, fc ? "W" : "Y", 0), bid = fc ? cd_op_in(op, "Bias", 0) : -1;
    if (wid < 0 || p->meta[wid].shape.rank != 2) return false;
    int64_t cols = fc ? cd_attr_int(op, "in_num_col_dims", 1) : cd_attr_int(op, "x_num_col_dims", 1);
    if (!fc && cd_attr_int(op, "y_num_col_dims", 1) != 1) return false;
    if (cols < 1 || cols >= x->shape.rank + (x->shape.rank == 1)) return false;
    m->M = 1;
    for (int i = 0; i < cols && i < x->shape.rank; i++) m->M *= x->shape.d[i];
    int64_t nx = cd_value_numel(x);
    m->K = m->M ? nx / m->M : 0;
    m->O = p->meta[wid].shape.d[1];
    if (m->K != p->meta[wid].shape.d[0] || m->M * m->O != m->n_out) return false;
    if (!(m->w = param_f32(p, wid, m->K * m->O))) return false;
    if (bid >= 0 && !(m->b = param_f32(p, bid, m->O))) return false;
    return true;
}

/* A's value of activation xid as float32 (owned), from the record or the dump. */
static bool me_load_x(mag_elem *m, int xid, cd_value *out) {
    cd_error e2 = {0};
    memset(out, 0, sizeof *out);
    if (m->force) return cd_forcing_has(m->force, xid) && !cd_forcing_get(m->force, xid, CD_F32, true, out, &e2);
    op_inputs oi;
    char note[256] = "";
    bool ok = false;
    if (!op_inputs_load(m->q, m->op_index, m->run, &oi, note, sizeof note, &e2) && !note[0])
        for (int k = 0; k < oi.ex.n_inputs && !ok; k++)
            if (oi.ex.src_inputs[k] == xid && oi.ins[k].dtype == CD_F32) {
                *out = oi.ins[k];
                op_inputs_take(&oi, k);
                out->owned = true;
                ok = true;
            }
    op_inputs_free(&oi);
    if (ok && !m->keep_sign) {
        float *x = out->data;
        for (int64_t i = 0, n = cd_value_numel(out); i < n; i++) x[i] = fabsf(x[i]);
    }
    return ok;
}

void cd_local_me_setup(mag_elem *m) {
    m->state = -1;
    const cd_op *op = &m->g->ops[m->op_index];
    const char *t = op->type;
    me_kind kind = !strcmp(t, "conv2d") || !strcmp(t, "depthwise_conv2d") ? ME_CONV
        : !strcmp(t, "fc") || !strcmp(t, "mul")                           ? ME_FC
        : !strcmp(t, "scale")                                             ? ME_SCALE
                                                                          : 0;
    if (!kind) return;
    if (kind == ME_SCALE && cd_op_in(op, "ScaleTensor", 0) >= 0) return;
    int xid = cd_op_in(op, kind == ME_CONV ? "Input" : kind == ME_FC ? (strcmp(t, "fc") ? "X" : "Input") : "X", 0);
    cd_value x;
    if (xid < 0 || !me_load_x(m, xid, &x)) return;
    bool ok;
    m->kind = kind;
    if (kind == ME_CONV)
        ok = me_conv(m, op, m->plan, &x);
    else if (kind == ME_FC)
        ok = me_fc(m, op, m->plan, &x);
    else {
        m->sc = fabs(cd_attr_float(op, "scale", 1));
        m->bi = fabs(cd_attr_float(op, "bias", 0));
        m->bias_after = cd_attr_bool(op, "bias_after_scale", true);
        ok = cd_value_numel(&x) == m->n_out;
    }
    if (ok) {
        m->x = x.data; /* |x| already (x itself with keep_sign) */
        x.owned = false;
        m->state = 1;
        if (kind == ME_CONV) wino_setup(m);
    }
    cd_value_release(&x);
}

double cd_local_mag_at(void *user, int64_t i) {
    mag_elem *m = user;
    if (m->state == 0) cd_local_me_setup(m);
    if (m->state < 0 || i < 0 || i >= m->n_out || ++m->calls > m->budget) return NAN;
    double acc = 0;
    if (m->kind == ME_SCALE) {
        double xv = m->x[i];
        return m->bias_after ? m->sc * xv + m->bi : m->sc * (xv + m->bi);
    }
    if (m->kind == ME_FC) {
        int64_t r = i / m->O, c = i % m->O;
        const float *xr = m->x + r * m->K;
        for (int64_t k = 0; k < m->K; k++) acc += (double)xr[k] * m->w[k * m->O + c];
        return acc + (m->b ? m->b[c] : 0);
    }
    int64_t ow = i % m->Wo, oh = (i / m->Wo) % m->Ho, o = (i / (m->Wo * m->Ho)) % m->O, n = i / (m->Wo * m->Ho * m->O);
    int64_t cpg = m->C / m->G, g = o / (m->O / m->G);
    for (int64_t c = 0; c < cpg; c++) {
        const float *xc = m->x + ((n * m->C + g * cpg + c) * m->H) * m->W;
        const float *wc = m->w + ((o * cpg + c) * m->KH) * m->KW;
        for (int64_t kh = 0; kh < m->KH; kh++) {
            int64_t ih = oh * m->sh - m->pt + kh * m->dh;
            if (ih < 0 || ih >= m->H) continue;
            for (int64_t kw = 0; kw < m->KW; kw++) {
                int64_t iw = ow * m->sw - m->pl + kw * m->dw;
                if (iw >= 0 && iw < m->W) acc += (double)wc[kh * m->KW + kw] * xc[ih * m->W + iw];
            }
        }
    }
    acc += m->b ? m->b[o] : 0;
    /* a Winograd conv: its magnitude, with the reference's direct term in B's units (bounds.h wino_k) */
    if (m->n_wino) acc = fmax(wino_mag(m, n, o, oh, ow), m->wino_dir * acc) + m->wino_rho * acc;
    return acc;
}

void cd_local_me_free(mag_elem *m) {
    free(m->x);
    free(m->w);
    free(m->b);
    for (int k = 0; k < m->n_wino; k++) wino_tile_free(m->wino[k]);
    m->n_wino = 0;
    free(m->xs);
    free(m->ws);
    m->xs = NULL;
    m->ws = NULL;
}

/* ---------------------------------------------------------------- free-run evidence */

typedef struct {
    float r;
    int64_t i;
} ranked;
/* ratio descending, equal ratios in index order (what a stable sort of the list gives) */
static int by_ratio_desc(const void *a, const void *b) {
    const ranked *p = a, *q = b;
    int c = (p->r < q->r) - (p->r > q->r);
    return c ? c : (p->i > q->i) - (p->i < q->i);
}

/* The k-th largest (0-based) of v[0..n) (no NaN; v is reordered): Hoare partitions around a
 * median of three. */
static float kth_largest(float *v, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        float x = v[lo], y = v[lo + (hi - lo) / 2], z = v[hi];
        float p = x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] > p) i++;
            while (v[j] < p) j--;
            if (i <= j) {
                float t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* The first k of the nc candidates (index order) in by_ratio_desc order, into c[0..k): the
 * k-th largest ratio found by selection, then only those at or above it sorted (the whole list
 * sorted was a tenth of a large differential run). Returns k. */
static int64_t top_ranked(ranked *c, int64_t nc, int64_t k) {
    float *v = malloc((size_t)nc * sizeof *v);
    if (!v) {
        qsort(c, (size_t)nc, sizeof *c, by_ratio_desc);
        return k;
    }
    for (int64_t i = 0; i < nc; i++) v[i] = c[i].r;
    float t = kth_largest(v, nc, k - 1);
    free(v);
    int64_t above = 0, m = 0;
    for (int64_t i = 0; i < nc; i++) above += c[i].r > t;
    /* every candidate above t, and those equal to t in index order up to k (c is in index order) */
    for (int64_t i = 0, eq = 0; i < nc; i++)
        if (c[i].r > t || (c[i].r == t && eq++ < k - above)) c[m++] = c[i];
    qsort(c, (size_t)m, sizeof *c, by_ratio_desc);
    return m;
}

/* A conv/fc layer run again (not settled) whose local check passed may still show, in the free
 * run, an output wrong beyond everything its inputs explain: a racy or state-dependent kernel
 * that happened to be right on the re-run. For the elements furthest over their cheap bound
 * (at most 4096), |B_free - A| is held to the local bound on A's inputs plus the bound of what
 * the input difference can do through the op: L * sum |w| |x_B - x_A| (the bias cancels), with
 * the arithmetic on the larger magnitude. Returns whether some element exceeds it; fills r. */
/* Every other op type: B's free-run output against the CPU's output of the op on B's own
 * free-run inputs (read back from the dump), under the layer's local bound (the magnitude, where
 * the family needs one, from the same inputs). Both sides then compute on the same inputs, as
 * in the local check, so a correct kernel is within the bound; asked only where B's free-run
 * output is not already within the bound of A's. Not for the allowance families (rnn, norms:
 * their allowance reads A's inputs) nor for int8 kernels (their grid, below). */
static bool free_evidence_on_b_inputs(const cd_local_req *q, const cd_layer_cmp *l, const cd_bound_spec *spec,
                                      const float *ref, int64_t n, cd_local_result *r) {
    if (cd_bound_family_allowance(spec->fam) || spec->fam == CD_FAM_INT8) return false;
    float *vb = NULL, *yb = NULL, *x = NULL, *mag = NULL;
    int64_t nb = 0, ny = 0, nm = 0;
    cd_error e2 = {0};
    bool found = false;
    char note[256] = "";
    cd_local_result res;
    if (cd_dump_read_f32(q->r, q->run_free, l->dataset_b, &vb, &nb, &e2) || nb != n) goto done;
    /* within the bound of A's output already (NaN/Inf rules included): nothing to find (only
     * pass or fail is asked: the check stops at the first element over its bound) */
    if (cd_local_check_passes(spec, ref, vb, n)) goto done;
    float **xp = spec->fam == CD_FAM_ROUNDING ? &x : NULL;
    if (run_op_cpu(q, l, q->run_free, false, &yb, &ny, xp, note, sizeof note, &e2) || note[0] || ny != n || (xp && !x))
        goto done;
    /* B's output within the bound of the CPU's on the same inputs: nothing found (usually;
     * one vectorised pass decides it, the check runs where it cannot) */
    if (cd_local_certainly_within(spec, yb, vb, x, n)) goto done;
    cd_local_check(spec, yb, vb, NULL, x, n, -1, -1, &res);
    if (!res.pass && res.needs_mag) {
        note[0] = 0;
        if (run_op_cpu(q, l, q->run_free, true, &mag, &nm, NULL, note, sizeof note, &e2) || note[0] || nm != n)
            goto done;
        cd_local_check(spec, yb, vb, mag, x, n, -1, -1, &res);
    }
    if (!res.pass && !res.needs_mag) {
        *r = res;
        found = true;
    }
done:
    free(vb);
    free(yb);
    free(x);
    free(mag);
    return found;
}

bool cd_local_free_evidence(const cd_local_req *q, const cd_layer_cmp *l, const cd_bound_spec *spec, const float *ref,
                            int64_t n, cd_local_result *r) {
    const cd_op *op = &q->g->ops[l->op_index];
    if (op->kernel.present && op->kernel.precision == 2 && cd_local_run_int8_arm(q->r, q->run_a)) return false;
    if (spec->fam != CD_FAM_ACCUMULATE ||
        (strcmp(op->type, "conv2d") && strcmp(op->type, "depthwise_conv2d") && strcmp(op->type, "fc") &&
         strcmp(op->type, "mul")))
        return free_evidence_on_b_inputs(q, l, spec, ref, n, r);
    /* A layer run with Paddle-Lite ARM's int8 kernels rounds onto a grid: an input off by a
     * little flips an output by a whole quantum, which the float bound + L sum|w||dx| cannot
     * hold (a false "racy kernel" on picodet conv2d_52 on the H100, 5 elements one quantum off);
     * its re-run on A's inputs, held to the int8 bound, is the evidence there. */
    if (op->kernel.present && op->kernel.precision == 2 && cd_local_run_int8_arm(q->r, q->run_a)) return false;
    float *vb = NULL;
    int64_t nb = 0;
    cd_error e2 = {0};
    if (cd_dump_read_f32(q->r, q->run_free, l->dataset_b, &vb, &nb, &e2) || nb != n) {
        free(vb);
        return false;
    }
    double absmax = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabs(ref[i]) > absmax) absmax = fabs(ref[i]);
    ranked *cand = malloc((size_t)(n ? n : 1) * sizeof *cand);
    int64_t nc = 0;
    /* the elements certainly within their cheap bound are no candidates (the certified filter) */
    double lc0 = 0, lcn = 0;
    bool lin = cd_bound_cheap_lin(spec, absmax, &lc0, &lcn);
    for (int64_t i = 0; cand && i < n; i++) {
        double a = ref[i], e = fabs(a - (double)vb[i]);
        if (!isfinite(a) || !isfinite(vb[i]) || e == 0) continue; /* NaN/Inf: the free compare's business */
        if (lin && e <= lc0 + lcn * fabs(a)) continue;
        double b = cd_bound_elem(spec, a, NAN, NAN, absmax);
        if (!(b > 0) || e > b) cand[nc++] = (ranked){(float)(b > 0 ? e / b : INFINITY), i};
    }
    bool found = false;
    mag_elem ma = {.q = q,
                   .g = q->g,
                   .plan = q->plan,
                   .op_index = l->op_index,
                   .out_shape = l->shape,
                   .n_out = n,
                   .budget = INT64_MAX};
    mag_elem md = ma, xa = ma;
    md.run = q->run_free;
    md.keep_sign = xa.keep_sign = true;
    if (nc) {
        if (nc > 4096) nc = top_ranked(cand, nc, 4096);
        cd_local_me_setup(&ma);
        cd_local_me_setup(&md);
        cd_local_me_setup(&xa);
        int64_t nx = ma.kind == ME_CONV ? ma.N * ma.C * ma.H * ma.W : ma.M * ma.K;
        bool ok = ma.state > 0 && md.state > 0 && xa.state > 0 && md.kind == ma.kind &&
            (md.kind == ME_CONV ? md.N * md.C * md.H * md.W : md.M * md.K) == nx;
        if (ok) {
            for (int64_t k = 0; k < nx; k++) md.x[k] = fabsf(md.x[k] - xa.x[k]); /* |x_B - x_A| */
            free(md.b);
            md.b = NULL;
        }
        double L = spec->lipschitz > 0 ? spec->lipschitz : 1;
        for (int64_t c = 0; ok && c < nc; c++) {
            int64_t i = cand[c].i;
            double mA = cd_local_mag_at(&ma, i), mD = cd_local_mag_at(&md, i);
            if (isnan(mA) || isnan(mD)) break;
            double allowed = cd_bound_elem(spec, ref[i], mA + mD, NAN, absmax) + L * mD;
            double e = fabs((double)ref[i] - vb[i]), ratio = allowed > 0 ? e / allowed : INFINITY;
            if (ratio > 1) {
                r->exceed++;
                if (!found || ratio > r->ratio) {
                    r->ratio = ratio;
                    r->err = e;
                    r->bound = allowed;
                    r->worst = i;
                }
                found = true;
            }
        }
    }
    cd_local_me_free(&ma);
    cd_local_me_free(&md);
    cd_local_me_free(&xa);
    free(cand);
    free(vb);
    return found;
}

/* The first float input of op l (rounding ops: where the ties are), from A's run. */
cd_status cd_local_op_input(const cd_local_req *q, const cd_layer_cmp *l, int64_t want_n, float **x, cd_error *err) {
    *x = NULL;
    op_inputs oi;
    char note[256] = "";
    cd_status st = op_inputs_load(q, l->op_index, NULL, &oi, note, sizeof note, err);
    for (int i = 0; !st && !note[0] && i < oi.ex.n_inputs && !*x; i++)
        if (oi.ins[i].dtype == CD_F32 && cd_value_numel(&oi.ins[i]) == want_n) *x = op_inputs_take(&oi, i);
    op_inputs_free(&oi);
    return st;
}
