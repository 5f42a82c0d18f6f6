#include "compare/dumpcmp.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compare/outputs.h"
#include "engine/backend_def.h"

static bool same_shape(const cd_shape *a, const cd_shape *b) { return cd_shape_eq(a, b); }

/* Index of the tensor in list b matching a: same op index and tensor name (same model),
 * or the next unused one with the same tensor name and shape (different models). */
static bool rows_differ(const cd_dump_tensor_info *a, const cd_dump_tensor_info *b) {
    if (a->shape.rank != b->shape.rank || a->shape.rank < 1 || a->shape.d[0] == b->shape.d[0]) return false;
    for (int d = 1; d < a->shape.rank; d++)
        if (a->shape.d[d] != b->shape.d[d]) return false;
    return true;
}

static int find_match(const cd_dump_tensor_info *a, const cd_dump_tensor_info *b, int nb, bool *used, bool by_op) {
    for (int j = 0; j < nb; j++) {
        if (used[j]) continue;
        if (by_op && b[j].op_index != a->op_index) continue;
        if (strcmp(a->tensor, b[j].tensor) || !same_shape(&a->shape, &b[j].shape)) continue;
        return j;
    }
    /* one model: the same op's tensor with another count of rows (a detection op's box count
     * depends on the values: fp16 keeps a few boxes more or less; every other dim equal);
     * compare_layer says what differs */
    for (int j = 0; by_op && j < nb; j++)
        if (!used[j] && b[j].op_index == a->op_index && !strcmp(a->tensor, b[j].tensor) && rows_differ(a, &b[j]))
            return j;
    return -1;
}

static void add_unmatched(cd_cmp_unmatched **u, int *n, char side, const cd_dump_tensor_info *t) {
    cd_cmp_unmatched *nu = realloc(*u, (size_t)(*n + 1) * sizeof *nu);
    if (!nu) return;
    *u = nu;
    cd_cmp_unmatched *e = &nu[(*n)++];
    e->side = side;
    snprintf(e->tensor, sizeof e->tensor, "%s", t->tensor);
    snprintf(e->layer, sizeof e->layer, "%s", t->layer);
    e->op_index = t->op_index;
}

/* Whether run `run`'s attribute CD_RUN_ATTR_NOT_FETCHED lists op index op. */
static bool not_fetched(const cd_dump_reader *r, const char *run, int op) {
    char path[300], list[512];
    cd_error e = {0};
    snprintf(path, sizeof path, "/runs/%s", run);
    if (op < 0 || cd_dump_attr_str(r, path, CD_RUN_ATTR_NOT_FETCHED, list, sizeof list, &e) != CD_OK) return false;
    for (const char *p = list; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) return false;
        if (v == op) return true;
        p = *end == ',' ? end + 1 : end;
    }
    return false;
}

cd_status cd_compare_read_pair(const cd_cmp_request *q, const cd_layer_cmp *l, float **ref, float **val,
                               cd_error *err) {
    int64_t n1 = 0, n2 = 0;
    *ref = *val = NULL;
    cd_status st = cd_dump_read_f32(q->ra, q->run_a, l->dataset_a, ref, &n1, err);
    if (!st) st = cd_dump_read_f32(q->rb, q->run_b, l->dataset_b, val, &n2, err);
    if (!st && n1 != n2) st = cd_err(err, CD_E_MODEL, "tensor %s: sizes differ between runs", l->tensor);
    if (st) {
        free(*ref);
        free(*val);
        *ref = *val = NULL;
    }
    return st;
}

/* Range error and cosine of every output layer's tensor in run_x (B's dataset with use_b, else
 * A's) against the same tensor in run_ref; set[i] tells which layers got values. */
static cd_status outputs_against(const cd_dump_reader *r, const char *run_x, bool use_b, const char *run_ref,
                                 cd_analysis *an, bool *set, double *range_err, double *cosv, double *absref,
                                 cd_error *err) {
    cd_dump_tensor_info *tq = NULL;
    int nq = 0;
    cd_status st = cd_dump_list_tensors(r, run_ref, &tq, &nq, err);
    for (int i = 0; !st && i < an->n_layers; i++) {
        cd_layer_cmp *l = &an->layers[i];
        set[i] = false;
        if (!l->is_output) continue;
        const cd_dump_tensor_info *t = NULL;
        for (int k = 0; k < nq && !t; k++)
            if (tq[k].op_index == l->op_index && !strcmp(tq[k].tensor, l->tensor) && !tq[k].stats_only) t = &tq[k];
        if (!t) continue;
        float *x = NULL, *f = NULL;
        int64_t nx = 0, nf = 0;
        st = cd_dump_read_f32(r, run_x, use_b ? l->dataset_b : l->dataset_a, &x, &nx, err);
        if (!st) st = cd_dump_read_f32(r, run_ref, t->dataset, &f, &nf, err);
        if (!st && nx == nf) {
            cd_metrics m;
            cd_tol none = {.atol = 0, .rtol = 0, .max_fail_fraction = 1, .min_cos = 0};
            cd_metrics_compute(f, x, nx, &l->shape, false, &none, &m);
            set[i] = true;
            range_err[i] = m.nonfinite_mismatch ? INFINITY
                : m.ref_absmax > 0              ? m.max_abs / m.ref_absmax
                                                : (m.max_abs > 0 ? INFINITY : 0);
            cosv[i] = m.cosine;
            absref[i] = m.ref_absmax;
        }
        free(x);
        free(f);
    }
    free(tq);
    return st;
}

/* Fills, per output layer, the distance picked by which (0: qref, 1: gref_b, 2: gref_a). */
static cd_status outputs_into(const cd_dump_reader *r, const char *run_x, bool use_b, const char *run_ref,
                              cd_analysis *an, int which, cd_error *err) {
    int n = an->n_layers;
    bool *set = calloc((size_t)n + 1, 1);
    double *re = calloc((size_t)n + 1, sizeof *re), *co = calloc((size_t)n + 1, sizeof *co),
           *ab = calloc((size_t)n + 1, sizeof *ab);
    cd_status st = set && re && co && ab ? outputs_against(r, run_x, use_b, run_ref, an, set, re, co, ab, err)
                                         : cd_err(err, CD_E_NOMEM, "out of memory");
    for (int i = 0; !st && i < n; i++) {
        cd_layer_cmp *l = &an->layers[i];
        cd_out_dist *d = which == 0 ? &l->qref : which == 1 ? &l->gref_b : &l->gref_a;
        *d = (cd_out_dist){.has = set[i], .range_err = re[i], .cos = co[i], .ref_absmax = ab[i]};
    }
    free(set);
    free(re);
    free(co);
    free(ab);
    return st;
}

cd_status cd_compare_quant_ref(const cd_dump_reader *r, const char *run_a, const char *run_q, cd_analysis *an,
                               cd_error *err) {
    return outputs_into(r, run_a, false, run_q, an, 0, err);
}

cd_status cd_compare_golden_outputs(const cd_dump_reader *r, const char *run_a, const char *run_b, const char *run_g,
                                    cd_analysis *an, cd_error *err) {
    cd_status st = outputs_into(r, run_b, true, run_g, an, 1, err);
    return st ? st : outputs_into(r, run_a, false, run_g, an, 2, err);
}

/* A layer's identity and timings from its two matched tensors. */
static void layer_init(cd_layer_cmp *l, const cd_dump_tensor_info *a, const cd_dump_tensor_info *b) {
    memset(l, 0, sizeof *l);
    l->op_index = a->op_index;
    l->tensor_id = -1;
    snprintf(l->layer, sizeof l->layer, "%s", a->layer);
    snprintf(l->op_type, sizeof l->op_type, "%s", a->op_type);
    snprintf(l->tensor, sizeof l->tensor, "%s", a->tensor);
    l->shape = a->shape;
    snprintf(l->where_a, sizeof l->where_a, "%s", a->where);
    snprintf(l->where_b, sizeof l->where_b, "%s", b->where);
    /* a model defect is the model's, whichever side's engine named it (docs/paddle-lite-phone.md) */
    bool defect_a = !strncmp(a->note, CD_MODEL_DEFECT_NOTE, strlen(CD_MODEL_DEFECT_NOTE));
    snprintf(l->note_b, sizeof l->note_b, "%s", !b->note[0] && defect_a ? a->note : b->note);
    l->us_a = a->elapsed_us;
    l->us_b = b->elapsed_us;
    l->kernel_us_b = b->kernel_us;
    snprintf(l->dataset_a, sizeof l->dataset_a, "%s", a->dataset);
    snprintf(l->dataset_b, sizeof l->dataset_b, "%s", b->dataset);
}

/* --tolerance auto: the caller's rule from K and rms(ref) over the finite reference values. */
static void apply_auto_tol(const cd_cmp_request *q, const float *fa, int64_t n1, cd_layer_cmp *l) {
    double s2 = 0;
    int64_t nfin = 0;
    for (int64_t e = 0; e < n1; e++)
        if (isfinite(fa[e])) {
            s2 += (double)fa[e] * fa[e];
            nfin++;
        }
    l->tol = q->auto_tol(&l->tol, q->fp16, l->acc_k, nfin ? sqrt(s2 / (double)nfin) : 0, l->rule, sizeof l->rule);
}

/* A model output: detection matching or top-k agreement, by what the output looks like. */
static void output_task(const cd_dump_tensor_info *a, float *fa, float *fb, int64_t n1, int64_t n2, cd_layer_cmp *l) {
    int64_t w = a->shape.d[a->shape.rank - 1];
    cd_task task = cd_output_task(&a->shape, fa, n1);
    if (task == CD_TASK_DETECTION) {
        int wd = 0;
        int64_t rows = cd_detection_rows(&a->shape, fa, n1, &wd);
        int64_t rows_b = cd_detection_rows(&a->shape, fb, n2, &wd);
        cd_det_summary ds;
        /* boxes decoded from random inputs can come out with x2 < x1: order each
         * box's corners so that IoU measures the same area on both sides */
        for (int side = 0; side < 2 && rows >= 0 && rows_b >= 0; side++) {
            float *d = side ? fb : fa;
            int64_t nr = side ? rows_b : rows;
            for (int64_t rr = 0; rr < nr; rr++) {
                float *bx = d + rr * wd + (wd - 4);
                for (int c = 0; c < 2; c++)
                    if (bx[c + 2] < bx[c]) {
                        float t = bx[c];
                        bx[c] = bx[c + 2];
                        bx[c + 2] = t;
                    }
            }
        }
        if (rows >= 0 && rows_b >= 0 && cd_detection_match(fa, rows, fb, rows_b, wd, 0.5, 0.0, &ds) == CD_OK) {
            snprintf(l->task, sizeof l->task, "detection");
            l->det_ref = ds.n_ref;
            l->det_val = ds.n_val;
            l->det_matched = ds.matched;
        }
    } else if (w >= 2 && n1 % w == 0) {
        cd_topk_agreement(fa, fb, n1 / w, w, &l->top1, &l->top5);
        l->has_topk = true;
        if (task == CD_TASK_CLASSIFIER) snprintf(l->task, sizeof l->task, "classifier");
    }
    l->is_output = true;
}

/* The golden run's tensor matched to a (read into *fg: the reference of each side's distance
 * from float32 and of NaN/Inf origins) and its half-range hazards. */
static cd_status golden_read(const cd_cmp_request *q, const cd_dump_tensor_info *a, const cd_dump_tensor_info *tg,
                             int ng, bool *usedg, int64_t n1, float **fg, cd_layer_cmp *l, cd_error *err) {
    int gj = find_match(a, tg, ng, usedg, q->by_op_index);
    if (gj < 0 || tg[gj].stats_only) return CD_OK;
    usedg[gj] = true;
    int64_t n3 = 0;
    cd_status st = cd_dump_read_f32(q->rg, q->run_g, tg[gj].dataset, fg, &n3, err);
    if (!st && n3 == n1) {
        l->has_golden = true;
        if (q->hazard_counts) {
            q->hazard_counts(*fg, n1, &l->g_over, &l->g_under, &l->g_absmax);
            l->has_hazard = true;
        }
    }
    return st;
}

/* A against B, and with a golden tensor each side against it, each pass on up to q->threads
 * threads (the metrics do not depend on the count: cd_metrics_compute_mt). */
static void layer_metrics(const cd_cmp_request *q, const float *fa, const float *fb, const float *fg, int64_t n1,
                          const cd_shape *shape, cd_layer_cmp *l) {
    int nt = q->threads < 1 ? 1 : q->threads;
    /* the three pairs in one sweep (cd_metrics_compute_layer: the same as one pair at a time) */
    cd_metrics_compute_layer(fa, fb, fg && l->has_golden ? fg : NULL, n1, shape, q->half_ulps, &l->tol, &l->m, &l->ga,
                             &l->gb, nt);
}

/* NaN/Inf where the reference is finite: the golden run when there is one (both fp16 sides
 * may overflow alike and agree with each other), else the other side. */
static void count_new_nonfinite(const float *fa, const float *fb, const float *fg, int64_t n1, cd_layer_cmp *l) {
    const float *ref = l->has_golden ? fg : NULL;
    /* A against B counted every NaN/Inf of both: none, nothing new */
    if (l->m.n == n1 && l->m.nan_ref + l->m.inf_ref + l->m.nan_val + l->m.inf_val == 0) return;
    for (int64_t e = 0; e < n1; e++) {
        bool ra_ = isfinite(fa[e]), rb_ = isfinite(fb[e]);
        if (ra_ && rb_) continue;
        if (ref) {
            if (!isfinite(ref[e])) continue;
            l->nf_new_a += !ra_;
            l->nf_new_b += !rb_;
        } else {
            l->nf_new_a += !ra_ && rb_;
            l->nf_new_b += !rb_ && ra_;
        }
    }
    if (l->nf_new_a || l->nf_new_b) {
        l->nf_hard = true;
        l->m.pass = false; /* a hard failure whatever the tolerance says */
    }
}

/* Reads the matched pair a, b (and the golden tensor) and fills layer l's metrics. */
static bool is_model_output(const cd_cmp_request *q, const char *tensor) {
    for (int k = 0; k < q->n_outputs; k++)
        if (!strcmp(q->output_tensors[k], tensor)) return true;
    return false;
}

/* Boxes of two detection lists matched (IoU >= 0.5, same class): how many of ref's. */
static int64_t det_matched(const cd_shape *shape, float *ref, int64_t nr, float *val, int64_t nv) {
    int wd = 0;
    int64_t rr = cd_detection_rows(shape, ref, nr, &wd), rv = cd_detection_rows(shape, val, nv, &wd);
    cd_det_summary ds;
    if (rr < 0 || rv < 0 || cd_detection_match(ref, rr, val, rv, wd, 0.5, 0.0, &ds) != CD_OK) return -1;
    return ds.matched;
}

/* The same tensor with another element count in each run. A detection output (its box count
 * depends on the values) is compared box by box, and in fp16 each side against the float32
 * golden run's boxes; anything else cannot be compared element-wise: a failing layer that says
 * so (never a silent skip, never a run-ending error). */
static cd_status counts_differ(const cd_cmp_request *q, const cd_dump_tensor_info *a, const cd_dump_tensor_info *tg,
                               int ng, bool *usedg, float *fa, int64_t n1, float *fb, int64_t n2, cd_layer_cmp *l,
                               cd_error *err) {
    l->counts_differ = true;
    l->m.n = n1;
    l->m.cosine = 1;
    l->m.pass = false;
    if (is_model_output(q, a->tensor) && a->shape.rank >= 1 && cd_output_task(&a->shape, fa, n1) == CD_TASK_DETECTION) {
        output_task(a, fa, fb, n1, n2, l);
        l->m.pass = l->det_ref == l->det_val && l->det_matched == l->det_ref;
        if (q->rg) {
            int gj = find_match(a, tg, ng, usedg, q->by_op_index);
            float *fg = NULL;
            int64_t n3 = 0;
            if (gj >= 0 && !tg[gj].stats_only) {
                usedg[gj] = true;
                cd_status st = cd_dump_read_f32(q->rg, q->run_g, tg[gj].dataset, &fg, &n3, err);
                if (st) return st;
                int wd = 0;
                l->det_gold = cd_detection_rows(&a->shape, fg, n3, &wd);
                l->det_gold_a = det_matched(&a->shape, fg, n3, fa, n1);
                l->det_gold_b = det_matched(&a->shape, fg, n3, fb, n2);
                l->det_golden_ok = l->det_gold >= 0 && l->det_gold_a >= 0 && l->det_gold_b >= l->det_gold_a;
                free(fg);
            }
        }
        return CD_OK;
    }
    l->is_output = is_model_output(q, a->tensor);
    (void)err;
    return CD_OK;
}

static cd_status compare_layer(const cd_cmp_request *q, const cd_dump_tensor_info *a, const cd_dump_tensor_info *b,
                               const cd_dump_tensor_info *tg, int ng, bool *usedg, cd_layer_cmp *l, cd_error *err) {
    layer_init(l, a, b);
    l->tol = cd_policy_for(q->policy, a->op_type, a->layer, l->rule, sizeof l->rule);
    if (q->acc_k && a->op_index >= 0 && a->op_index < q->n_acc_k) l->acc_k = q->acc_k[a->op_index];
    float *fa = NULL, *fb = NULL, *fg = NULL;
    int64_t n1 = 0, n2 = 0;
    cd_status st = cd_dump_read_f32(q->ra, q->run_a, a->dataset, &fa, &n1, err);
    if (!st) st = cd_dump_read_f32(q->rb, q->run_b, b->dataset, &fb, &n2, err);
    if (!st && n1 != n2) {
        st = counts_differ(q, a, tg, ng, usedg, fa, n1, fb, n2, l, err);
        free(fa);
        free(fb);
        return st;
    }
    if (!st) {
        if (q->auto_tol) apply_auto_tol(q, fa, n1, l);
        if (q->rg) st = golden_read(q, a, tg, ng, usedg, n1, &fg, l, err);
    }
    bool changed = false; /* output_task may order a detection's box corners in place */
    if (!st) {
        layer_metrics(q, fa, fb, fg, n1, &a->shape, l);
        for (int k = 0; k < q->n_outputs; k++) {
            if (strcmp(q->output_tensors[k], a->tensor) || a->shape.rank < 1) continue;
            output_task(a, fa, fb, n1, n2, l);
            changed = true;
        }
        count_new_nonfinite(fa, fb, fg, n1, l);
    }
    if (!st && !changed) { /* unchanged: the local check reads them again (dump.h) */
        cd_dump_keep_f32(q->ra, q->run_a, a->dataset, fa, n1);
        cd_dump_keep_f32(q->rb, q->run_b, b->dataset, fb, n2);
    } else {
        free(fa);
        free(fb);
    }
    free(fg);
    return st;
}

cd_status cd_compare_runs(const cd_cmp_request *q, cd_analysis *an, cd_cmp_unmatched **unmatched, int *n_unmatched,
                          cd_error *err) {
    memset(an, 0, sizeof *an);
    *unmatched = NULL;
    *n_unmatched = 0;
    cd_dump_tensor_info *ta = NULL, *tb = NULL, *tg = NULL;
    int na = 0, nb = 0, ng = 0;
    bool *used = NULL, *usedg = NULL;
    cd_status st = cd_dump_list_tensors(q->ra, q->run_a, &ta, &na, err);
    if (!st) st = cd_dump_list_tensors(q->rb, q->run_b, &tb, &nb, err);
    if (!st && q->rg) st = cd_dump_list_tensors(q->rg, q->run_g, &tg, &ng, err);
    if (st) goto done;
    used = calloc((size_t)nb + 1, 1);
    usedg = calloc((size_t)ng + 1, 1);
    an->layers = calloc((size_t)na + 1, sizeof *an->layers);
    if (!used || !usedg || !an->layers) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < na && !st; i++) {
        const cd_dump_tensor_info *a = &ta[i];
        int j = find_match(a, tb, nb, used, q->by_op_index);
        if (j < 0) {
            if (!not_fetched(q->rb, q->run_b, a->op_index)) add_unmatched(unmatched, n_unmatched, 'a', a);
            continue;
        }
        used[j] = true;
        const cd_dump_tensor_info *b = &tb[j];
        if (a->stats_only || b->stats_only) continue;
        st = compare_layer(q, a, b, tg, ng, usedg, &an->layers[an->n_layers], err);
        an->n_layers++;
    }
    for (int j = 0; j < nb && !st; j++)
        if (!used[j] && !not_fetched(q->ra, q->run_a, tb[j].op_index))
            add_unmatched(unmatched, n_unmatched, 'b', &tb[j]);
    if (!st) cd_analyze(an);
done:
    free(ta);
    free(tb);
    free(tg);
    free(used);
    free(usedg);
    if (st) cd_analysis_free(an);
    return st;
}

cd_status cd_compare_store(cd_dump *d, const char *run_a, const char *run_b, const cd_analysis *an,
                           const char *policy_desc, cd_error *err) {
    int64_t n = an->n_layers;
    size_t rows = (size_t)(n ? n : 1);
    int64_t *opi = calloc(rows, sizeof *opi), *pass = calloc(rows, sizeof *pass), *fails = calloc(rows, sizeof *fails),
            *worst = calloc(rows, sizeof *worst), *nf = calloc(rows, sizeof *nf);
    int64_t *ext[7];
    for (int k = 0; k < 7; k++) ext[k] = calloc(rows, sizeof(int64_t));
    double *spread = calloc(rows, sizeof *spread), *risk = calloc(rows, sizeof *risk);
    double *cols[12];
    for (int k = 0; k < 12; k++) cols[k] = calloc(rows, sizeof(double));
    const char **layer = calloc(rows, sizeof *layer), **type = calloc(rows, sizeof *type),
               **tensor = calloc(rows, sizeof *tensor), **rule = calloc(rows, sizeof *rule),
               **wb = calloc(rows, sizeof *wb);
    cd_status st = CD_OK;
    for (int k = 0; k < 12; k++)
        if (!cols[k]) st = CD_E_NOMEM;
    for (int k = 0; k < 7; k++)
        if (!ext[k]) st = CD_E_NOMEM;
    if (!spread || !risk) st = CD_E_NOMEM;
    if (st || !opi || !pass || !fails || !worst || !nf || !layer || !type || !tensor || !rule || !wb) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        opi[i] = l->op_index;
        pass[i] = l->m.pass;
        fails[i] = l->m.fail_count;
        worst[i] = l->m.worst_index;
        nf[i] = l->m.nonfinite_mismatch;
        layer[i] = l->layer;
        type[i] = l->op_type;
        tensor[i] = l->tensor;
        rule[i] = l->rule;
        wb[i] = l->where_b;
        double v[12] = {l->m.max_abs, l->m.mean_abs,      l->m.rmse,  l->m.max_rel, l->m.cosine, l->m.snr_db,
                        l->m.max_ulp, l->m.fail_fraction, l->rel_err, l->growth,    l->tol.atol, l->tol.rtol};
        for (int k = 0; k < 12; k++) cols[k][i] = v[k];
        int64_t e[7] = {l->acc_k, l->g_over, l->g_under, l->nf_new_a, l->nf_new_b, l->nondet, l->risk_rank};
        for (int k = 0; k < 7; k++) ext[k][i] = e[k];
        spread[i] = l->has_repeat ? l->spread : 0;
        risk[i] = l->risk;
    }
    cd_column c[] = {
        {"op_index", CD_COL_I64, opi},
        {"layer", CD_COL_STR, layer},
        {"op_type", CD_COL_STR, type},
        {"tensor", CD_COL_STR, tensor},
        {"pass", CD_COL_I64, pass},
        {"max_abs", CD_COL_F64, cols[0]},
        {"mean_abs", CD_COL_F64, cols[1]},
        {"rmse", CD_COL_F64, cols[2]},
        {"max_rel", CD_COL_F64, cols[3]},
        {"cosine", CD_COL_F64, cols[4]},
        {"snr_db", CD_COL_F64, cols[5]},
        {"max_ulp", CD_COL_F64, cols[6]},
        {"fail_count", CD_COL_I64, fails},
        {"fail_fraction", CD_COL_F64, cols[7]},
        {"worst_index", CD_COL_I64, worst},
        {"nonfinite_mismatch", CD_COL_I64, nf},
        {"rel_err", CD_COL_F64, cols[8]},
        {"growth", CD_COL_F64, cols[9]},
        {"atol", CD_COL_F64, cols[10]},
        {"rtol", CD_COL_F64, cols[11]},
        {"rule", CD_COL_STR, rule},
        {"where_b", CD_COL_STR, wb},
        /* diagnosis columns (appended; docs/diagnosis.md) */
        {"acc_k", CD_COL_I64, ext[0]},
        {"golden_over", CD_COL_I64, ext[1]},
        {"golden_under", CD_COL_I64, ext[2]},
        {"nonfinite_new_a", CD_COL_I64, ext[3]},
        {"nonfinite_new_b", CD_COL_I64, ext[4]},
        {"nondeterministic", CD_COL_I64, ext[5]},
        {"risk_rank", CD_COL_I64, ext[6]},
        {"repeat_spread", CD_COL_F64, spread},
        {"fp16_risk", CD_COL_F64, risk},
    };
    char path[256];
    snprintf(path, sizeof path, "/compare/%s__%s", run_a, run_b);
    st = cd_dump_make_group(d, path, err);
    char tpath[300];
    snprintf(tpath, sizeof tpath, "%s/table", path);
    if (!st) st = cd_dump_write_table(d, tpath, c, (int)(sizeof c / sizeof c[0]), n, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "policy", policy_desc ? policy_desc : "", err);
    if (!st)
        st = cd_dump_set_attr_str(d, path, "verdict",
                                  an->verdict == CD_VERDICT_PASS        ? "pass"
                                      : an->verdict == CD_VERDICT_FAIL  ? "fail"
                                      : an->verdict == CD_VERDICT_CRASH ? "crash"
                                      : an->verdict == CD_VERDICT_ERROR ? "error"
                                                                        : "incomplete",
                                  err);
    if (!st)
        st = cd_dump_set_attr_str(d, path, "first_divergence",
                                  an->first_fail >= 0 ? an->layers[an->first_fail].layer : "", err);
    if (!st)
        st = cd_dump_set_attr_i64(d, path, "first_divergence_op",
                                  an->first_fail >= 0 ? an->layers[an->first_fail].op_index : -1, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "first_divergence_kind", an->first_kind, err);
    if (!st)
        st = cd_dump_set_attr_str(d, path, "nonfinite_origin",
                                  an->nonfinite_origin >= 0 ? an->layers[an->nonfinite_origin].layer : "", err);
    if (!st) st = cd_dump_set_attr_i64(d, path, "repeat", an->repeat_n, err);
    /* every cd_verdict_kind (analysis.h), in its order */
    static const char *kinds[] = {"pass",       "kernel_fault", "output_drift", "crash", "nondeterministic",
                                  "incomplete", "error",        "model_defect"};
    _Static_assert(sizeof kinds / sizeof *kinds == CD_KIND_DEFECT + 1, "a verdict kind without a name");
    unsigned kk = (unsigned)an->kind;
    if (!st)
        st = cd_dump_set_attr_str(d, path, "verdict_kind", kk < sizeof kinds / sizeof *kinds ? kinds[kk] : "unknown",
                                  err);
    if (!st)
        st = cd_dump_set_attr_str(d, path, "first_fault", an->first_fault >= 0 ? an->layers[an->first_fault].layer : "",
                                  err);
    if (!st) st = cd_dump_set_attr_i64(d, path, "nondeterministic_layers", an->n_nondet, err);
done:
    free(opi);
    free(pass);
    free(fails);
    free(worst);
    free(nf);
    free(spread);
    free(risk);
    for (int k = 0; k < 7; k++) free(ext[k]);
    for (int k = 0; k < 12; k++) free(cols[k]);
    free(layer);
    free(type);
    free(tensor);
    free(rule);
    free(wb);
    return st;
}

cd_status cd_local_store(cd_dump *d, const char *run_local, const cd_analysis *an, cd_error *err) {
    int64_t n = an->n_layers;
    size_t rows = (size_t)(n ? n : 1);
    int64_t *opi = calloc(rows, sizeof *opi), *chk = calloc(rows, sizeof *chk), *pass = calloc(rows, sizeof *pass),
            *exc = calloc(rows, sizeof *exc), *worst = calloc(rows, sizeof *worst), *nfm = calloc(rows, sizeof *nfm),
            *nel = calloc(rows, sizeof *nel), *mfc = calloc(rows, sizeof *mfc), *mwi = calloc(rows, sizeof *mwi);
    double *mf[5];
    for (int k = 0; k < 5; k++) mf[k] = calloc(rows, sizeof(double));
    double *f[8];
    for (int k = 0; k < 8; k++) f[k] = calloc(rows, sizeof(double));
    const char **tensor = calloc(rows, sizeof *tensor), **layer = calloc(rows, sizeof *layer),
               **fam = calloc(rows, sizeof *fam), **note = calloc(rows, sizeof *note);
    cd_status st = CD_OK;
    bool oom =
        !opi || !chk || !pass || !exc || !worst || !nfm || !nel || !mfc || !mwi || !tensor || !layer || !fam || !note;
    for (int k = 0; k < 5; k++) oom |= !mf[k];
    for (int k = 0; k < 8; k++) oom |= !f[k];
    if (oom) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        opi[i] = l->op_index;
        chk[i] = l->has_local ? 1 : l->loc_compared_only ? 2 : 0; /* 2: compared only, by design */
        pass[i] = l->loc_pass;
        exc[i] = l->loc_exceed;
        worst[i] = l->loc_worst;
        nfm[i] = l->loc.nonfinite_mismatch;
        nel[i] = l->loc.n;
        mfc[i] = l->loc.fail_count;
        mwi[i] = l->loc.worst_index;
        double mv[5] = {l->loc.mean_abs, l->loc.max_rel, l->loc.snr_db, l->loc.max_ulp, l->loc.fail_fraction};
        for (int k = 0; k < 5; k++) mf[k][i] = mv[k];
        tensor[i] = l->tensor;
        layer[i] = l->layer;
        fam[i] = l->family;
        note[i] = l->loc_note;
        double v[8] = {l->loc_err,    l->loc_bound, l->loc_ratio,   l->loc.max_abs,
                       l->loc.cosine, l->loc.rmse,  l->loc.ref_rms, l->loc.ref_absmax};
        for (int k = 0; k < 8; k++) f[k][i] = v[k];
    }
    cd_column c[] = {
        {"op_index", CD_COL_I64, opi},
        {"tensor", CD_COL_STR, tensor},
        {"layer", CD_COL_STR, layer},
        {"checked", CD_COL_I64, chk},
        {"family", CD_COL_STR, fam},
        {"pass", CD_COL_I64, pass},
        {"error", CD_COL_F64, f[0]},
        {"bound", CD_COL_F64, f[1]},
        {"ratio", CD_COL_F64, f[2]},
        {"exceed", CD_COL_I64, exc},
        {"worst_index", CD_COL_I64, worst},
        {"max_abs", CD_COL_F64, f[3]},
        {"cosine", CD_COL_F64, f[4]},
        {"rmse", CD_COL_F64, f[5]},
        {"ref_rms", CD_COL_F64, f[6]},
        {"ref_absmax", CD_COL_F64, f[7]},
        {"nonfinite_mismatch", CD_COL_I64, nfm},
        {"note", CD_COL_STR, note},
        /* appended: the compared element count ("N of M elements"; older dumps lack it) */
        {"elements", CD_COL_I64, nel},
        {"mean_abs", CD_COL_F64, mf[0]},
        {"max_rel", CD_COL_F64, mf[1]},
        {"snr_db", CD_COL_F64, mf[2]},
        {"max_ulp", CD_COL_F64, mf[3]},
        {"fail_fraction", CD_COL_F64, mf[4]},
        {"fail_count", CD_COL_I64, mfc},
        {"metric_worst", CD_COL_I64, mwi},
    };
    char path[256];
    snprintf(path, sizeof path, "/local/%s", run_local);
    st = cd_dump_make_group(d, "/local", err);
    if (!st) st = cd_dump_write_table(d, path, c, (int)(sizeof c / sizeof c[0]), n, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "reference", an->local_ref, err);
    if (!st && an->local_inputs[0]) st = cd_dump_set_attr_str(d, path, "inputs", an->local_inputs, err);
done:
    free(opi);
    free(chk);
    free(pass);
    free(exc);
    free(worst);
    free(nfm);
    free(nel);
    free(mfc);
    free(mwi);
    for (int k = 0; k < 5; k++) free(mf[k]);
    for (int k = 0; k < 8; k++) free(f[k]);
    free(tensor);
    free(layer);
    free(fam);
    free(note);
    return st;
}

cd_status cd_local_load(const cd_dump_reader *r, const char *run_local, cd_analysis *an, bool *found, cd_error *err) {
    char path[256];
    snprintf(path, sizeof path, "/local/%s", run_local);
    *found = false;
    if (!cd_dump_has(r, path)) return CD_OK;
    cd_column c[] = {
        {"op_index", CD_COL_I64, NULL},   {"tensor", CD_COL_STR, NULL},
        {"checked", CD_COL_I64, NULL},    {"family", CD_COL_STR, NULL},
        {"pass", CD_COL_I64, NULL},       {"error", CD_COL_F64, NULL},
        {"bound", CD_COL_F64, NULL},      {"ratio", CD_COL_F64, NULL},
        {"exceed", CD_COL_I64, NULL},     {"worst_index", CD_COL_I64, NULL},
        {"max_abs", CD_COL_F64, NULL},    {"cosine", CD_COL_F64, NULL},
        {"rmse", CD_COL_F64, NULL},       {"ref_rms", CD_COL_F64, NULL},
        {"ref_absmax", CD_COL_F64, NULL}, {"nonfinite_mismatch", CD_COL_I64, NULL},
        {"note", CD_COL_STR, NULL},
    };
    int nc = (int)(sizeof c / sizeof c[0]);
    int64_t nr = 0;
    cd_status st = cd_dump_read_table(r, path, c, nc, &nr, err);
    if (st) return st;
    *found = true;
    an->local_ran = true;
    cd_dump_attr_str(r, path, "reference", an->local_ref, sizeof an->local_ref, err);
    if (cd_dump_attr_str(r, path, "inputs", an->local_inputs, sizeof an->local_inputs, err) != CD_OK) {
        an->local_inputs[0] = 0; /* dumps before the attribute: run A's inputs */
        memset(err, 0, sizeof *err);
    }
    an->n_local = 0;
    an->n_compared_only = 0;
    const int64_t *opi = c[0].data, *chk = c[2].data, *pass = c[4].data, *exc = c[8].data, *worst = c[9].data,
                  *nfm = c[15].data;
    const char *const *tensor = c[1].data, *const *fam = c[3].data, *const *note = c[16].data;
    const double *e = c[5].data, *b = c[6].data, *ra = c[7].data, *ma = c[10].data, *co = c[11].data, *rm = c[12].data,
                 *rr = c[13].data, *rx = c[14].data;
    for (int64_t k = 0; k < nr; k++) {
        for (int i = 0; i < an->n_layers; i++) {
            cd_layer_cmp *l = &an->layers[i];
            if (l->op_index != opi[k] || strcmp(l->tensor, tensor[k] ? tensor[k] : "")) continue;
            l->has_local = chk[k] == 1;
            l->loc_compared_only = chk[k] == 2;
            an->n_compared_only += l->loc_compared_only;
            l->loc_pass = pass[k] != 0;
            snprintf(l->family, sizeof l->family, "%s", fam[k] ? fam[k] : "");
            snprintf(l->loc_note, sizeof l->loc_note, "%s", note[k] ? note[k] : "");
            l->loc_err = e[k];
            l->loc_bound = b[k];
            l->loc_ratio = ra[k];
            l->loc_exceed = exc[k];
            l->loc_worst = worst[k];
            l->loc.max_abs = ma[k];
            l->loc.cosine = co[k];
            l->loc.rmse = rm[k];
            l->loc.ref_rms = rr[k];
            l->loc.ref_absmax = rx[k];
            l->loc.nonfinite_mismatch = nfm[k];
            l->loc.pass = l->loc_pass;
            an->n_local += l->has_local;
            break;
        }
    }
    cd_dump_table_free(c, nc, nr);
    /* the element counts, where the dump has them (appended column) */
    cd_column ce[] = {{"elements", CD_COL_I64, NULL},   {"mean_abs", CD_COL_F64, NULL},
                      {"max_rel", CD_COL_F64, NULL},    {"snr_db", CD_COL_F64, NULL},
                      {"max_ulp", CD_COL_F64, NULL},    {"fail_fraction", CD_COL_F64, NULL},
                      {"fail_count", CD_COL_I64, NULL}, {"metric_worst", CD_COL_I64, NULL},
                      {"op_index", CD_COL_I64, NULL},   {"tensor", CD_COL_STR, NULL}};
    const int nce = (int)(sizeof ce / sizeof ce[0]);
    cd_error e2 = {0};
    if (cd_dump_read_table(r, path, ce, nce, &nr, &e2) == CD_OK) {
        const int64_t *ne = ce[0].data, *fc = ce[6].data, *mw = ce[7].data, *o2 = ce[8].data;
        const double *d1 = ce[1].data, *d2 = ce[2].data, *d3 = ce[3].data, *d4 = ce[4].data, *d5 = ce[5].data;
        const char *const *t2 = ce[9].data;
        for (int64_t k = 0; k < nr; k++)
            for (int i = 0; i < an->n_layers; i++) {
                cd_layer_cmp *l = &an->layers[i];
                if (l->op_index != o2[k] || strcmp(l->tensor, t2[k] ? t2[k] : "")) continue;
                l->loc.n = ne[k];
                l->loc.mean_abs = d1[k];
                l->loc.max_rel = d2[k];
                l->loc.snr_db = d3[k];
                l->loc.max_ulp = d4[k];
                l->loc.fail_fraction = d5[k];
                l->loc.fail_count = fc[k];
                l->loc.worst_index = mw[k];
                break;
            }
        cd_dump_table_free(ce, nce, nr);
    }
    return CD_OK;
}
