/* multiclass_nms, multiclass_nms2 (+ Index), multiclass_nms3 (+ Index, RoisNum in,
 * NmsRoisNum out): per-class greedy non-maximum suppression (Paddle semantics).
 *
 * Inputs: BBoxes [N, M, 4] with Scores [N, C, M] (one batch of M boxes shared by all
 * classes), or BBoxes [M, C, 4] with Scores [M, C] (per-class boxes; images delimited by
 * RoisNum [N], or one image when RoisNum is absent since cldiff carries no LoD).
 * Per image and class c != background_label:
 *   1. candidates: boxes with score > score_threshold (strictly), sorted by score
 *      descending, ties by box index ascending (deterministic; Paddle's stable sort of
 *      index-ordered candidates gives the same order); the first nms_top_k when >= 0;
 *   2. greedy: a candidate is kept when its IoU with every kept box of the class is
 *      <= the adaptive threshold (starts at nms_threshold; after each keep, when
 *      nms_eta < 1 and it is > 0.5, it is multiplied by nms_eta). IoU is Paddle's
 *      Jaccard overlap: disjoint boxes give 0; with normalized false, widths and heights
 *      get +1 (pixel-inclusive);
 *   3. keep_top_k >= 0: of the image's kept boxes only the keep_top_k highest scores stay
 *      (ties: earlier class, then earlier selection).
 * Output rows, image by image, class ascending, score descending within a class:
 * [label, score, x1, y1, x2, y2]; Index (int32, int64 if so declared) = box index + image offset (n*M, or the
 * image's first row in the 2-D form); NmsRoisNum (int32) = rows per image.
 * No box kept in any image: multiclass_nms emits one row [-1] of shape [1, 1], the
 * multiclass_nms2/3 forms (those with an Index output) emit Out [0, 6] and Index [0, 1] —
 * the behaviour Paddle documents ("if there is no detected box for all images, ...
 * Out only contains one value which is -1") and implements for the return-index forms.
 * Infer sets the largest possible row count; run shrinks the shapes (CD_OPF_DYNAMIC).
 * Arithmetic is float32 in both precisions (see ops_detect_table.c). */
#include "engine/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cd_detect_load_f32(const cd_value *v, float *dst, int64_t n);
void cd_detect_store_f32(cd_value *v, int64_t off, const float *src, int64_t n);

typedef struct {
    cd_value *boxes, *scores, *rois, *out, *index, *nms_num;
    bool per_class;  /* 2-D scores form */
    int64_t n, c, m; /* images, classes, boxes (3-D: per image; 2-D: total rows) */
    float score_thr, nms_thr, eta;
    int64_t nms_top_k, keep_top_k, background;
    bool normalized;
} nms;

static cd_status nms_read(cd_op_ctx *c, nms *q) {
    char b1[96], b2[96];
    memset(q, 0, sizeof *q);
    if (!(q->boxes = cd_in_req(c, "BBoxes", 0))) return CD_E_MODEL;
    if (!(q->scores = cd_in_req(c, "Scores", 0))) return CD_E_MODEL;
    q->rois = cd_in(c, "RoisNum", 0);
    q->out = cd_out(c, "Out", 0);
    q->index = cd_out(c, "Index", 0);
    q->nms_num = cd_out(c, "NmsRoisNum", 0);
    if (!q->out) return cd_op_fail(c, CD_E_MODEL, "output Out is not connected");
    const cd_shape *bs = &q->boxes->shape, *ss = &q->scores->shape;
    if (ss->rank == 3) {
        q->n = ss->d[0];
        q->c = ss->d[1];
        q->m = ss->d[2];
        if (bs->rank != 3 || bs->d[0] != q->n || bs->d[1] != q->m || bs->d[2] != 4)
            return cd_op_fail(
                c, CD_E_MODEL, "Scores %s is [N, C, M], so BBoxes must be [N, M, 4] = [%lld, %lld, 4], got %s",
                cd_shape_str(ss, b1, sizeof b1), (long long)q->n, (long long)q->m, cd_shape_str(bs, b2, sizeof b2));
    } else if (ss->rank == 2) {
        q->per_class = true;
        q->m = ss->d[0];
        q->c = ss->d[1];
        if (bs->rank != 3 || bs->d[0] != q->m || bs->d[1] != q->c || bs->d[2] != 4)
            return cd_op_fail(
                c, CD_E_MODEL, "Scores %s is [M, C], so BBoxes must be [M, C, 4] = [%lld, %lld, 4], got %s",
                cd_shape_str(ss, b1, sizeof b1), (long long)q->m, (long long)q->c, cd_shape_str(bs, b2, sizeof b2));
        q->n = 1;
        if (q->rois) {
            if (q->rois->shape.rank != 1)
                return cd_op_fail(c, CD_E_MODEL, "RoisNum must be 1-D [N], got %s",
                                  cd_shape_str(&q->rois->shape, b1, sizeof b1));
            q->n = q->rois->shape.d[0];
        }
    } else {
        return cd_op_fail(c, CD_E_MODEL,
                          "Scores must be [N, C, M] or [M, C], got %s (boxes with 8/16/24/32 "
                          "coordinates are not supported)",
                          cd_shape_str(ss, b1, sizeof b1));
    }
    if (q->n < 0 || q->c < 0 || q->m < 0 || q->m > INT32_MAX / 2 || q->c > INT32_MAX / 2)
        return cd_op_fail(c, CD_E_MODEL, "box count %lld or class count %lld out of range", (long long)q->m,
                          (long long)q->c);
    const cd_attr *a_st = cd_op_attr(c->op, "score_threshold");
    if (!a_st) return cd_op_fail(c, CD_E_MODEL, "required attribute score_threshold is missing");
    double st = cd_attr_float(c->op, "score_threshold", 0.0), nt = cd_attr_float(c->op, "nms_threshold", 0.3);
    double eta = cd_attr_float(c->op, "nms_eta", 1.0);
    /* thresholds and eta as stored: only compared with and multiplied (Paddle-Lite's
     * multiclass_nms does the same with NaN, Inf or eta <= 0) */
    q->score_thr = (float)st;
    q->nms_thr = (float)nt;
    q->eta = (float)eta;
    q->nms_top_k = cd_attr_int(c->op, "nms_top_k", -1);
    q->keep_top_k = cd_attr_int(c->op, "keep_top_k", -1);
    q->background = cd_attr_int(c->op, "background_label", 0);
    q->normalized = cd_attr_bool(c->op, "normalized", true);
    return CD_OK;
}

/* Upper bound of output rows over all images. */
static int64_t nms_max_rows(const nms *q) {
    int64_t classes = q->c - (q->background >= 0 && q->background < q->c ? 1 : 0);
    int64_t total;
    if (q->per_class) {
        total = q->m * classes; /* every (row, class) pair at most once */
        if (q->nms_top_k >= 0 && q->n * q->nms_top_k * classes < total) total = q->n * q->nms_top_k * classes;
    } else {
        int64_t per = q->nms_top_k >= 0 && q->nms_top_k < q->m ? q->nms_top_k : q->m;
        total = q->n * classes * per;
    }
    if (q->keep_top_k >= 0 && q->n * q->keep_top_k < total) total = q->n * q->keep_top_k;
    return total > 0 ? total : 1;
}

/* Integer outputs keep the declared type when it is int64 (pyramidbox declares Index as
 * INT64); anything else (int32, or a float left by the optimizer's variable reuse) gives
 * Paddle's int32. */
static cd_dtype index_dtype(cd_op_ctx *c, const char *slot) {
    int id = cd_op_out(c->op, slot, 0);
    return id >= 0 && c->g->tensors[id].dtype == CD_I64 ? CD_I64 : CD_I32;
}

cd_status cd_multiclass_nms_infer(cd_op_ctx *c) {
    nms q;
    cd_status s = nms_read(c, &q);
    if (s) return s;
    int64_t rows = nms_max_rows(&q);
    q.out->dtype = cd_act_dtype(c);
    q.out->shape.rank = 2;
    q.out->shape.d[0] = rows;
    q.out->shape.d[1] = 6;
    if (q.index) {
        q.index->dtype = index_dtype(c, "Index");
        q.index->shape.rank = 2;
        q.index->shape.d[0] = rows;
        q.index->shape.d[1] = 1;
    }
    if (q.nms_num) {
        q.nms_num->dtype = index_dtype(c, "NmsRoisNum");
        q.nms_num->shape.rank = 1;
        q.nms_num->shape.d[0] = q.n;
    }
    return CD_OK;
}

typedef struct {
    float score;
    int32_t idx;
    int32_t label;
    int32_t seq;
} cand;

/* Score descending, then seq ascending: a total order, so qsort is deterministic. */
static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->score > y->score) return -1;
    if (x->score < y->score) return 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_seq(const void *a, const void *b) {
    const cand *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static float box_area(const float *b, bool normalized) {
    if (b[2] < b[0] || b[3] < b[1]) return 0.0f;
    float w = b[2] - b[0], h = b[3] - b[1];
    return normalized ? w * h : (w + 1.0f) * (h + 1.0f);
}

/* Paddle's Jaccard overlap (see the header comment). */
static float iou(const float *a, const float *b, bool normalized) {
    if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0.0f;
    float norm = normalized ? 0.0f : 1.0f;
    float iw = fminf(a[2], b[2]) - fmaxf(a[0], b[0]) + norm;
    float ih = fminf(a[3], b[3]) - fmaxf(a[1], b[1]) + norm;
    float inter = iw * ih;
    return inter / (box_area(a, normalized) + box_area(b, normalized) - inter);
}

cd_status cd_multiclass_nms_run(cd_op_ctx *c) {
    nms q;
    cd_status s = nms_read(c, &q);
    if (s) return s;
    int64_t cap = nms_max_rows(&q);
    if (cd_value_numel(q.out) < cap * 6 || (q.index && cd_value_numel(q.index) < cap) ||
        (q.nms_num && cd_value_numel(q.nms_num) < q.n))
        return cd_op_fail(c, CD_E_INTERNAL, "outputs were allocated smaller than the planned maximum (%lld rows)",
                          (long long)cap);
    int64_t nb = cd_value_numel(q.boxes), ns = cd_value_numel(q.scores);
    /* Per image: all kept (label, idx) pairs; per class: candidate list. */
    int64_t per_img_max = q.per_class ? q.m * q.c : q.m * q.c;
    float *boxes = cd_malloc((size_t)(nb + ns) * sizeof(float), c->err);
    cand *cands = boxes ? cd_malloc((size_t)(q.m + 1) * sizeof(cand), c->err) : NULL;
    cand *kept = cands ? cd_malloc((size_t)(per_img_max + 1) * sizeof(cand), c->err) : NULL;
    float *rows = kept ? cd_malloc((size_t)cap * 6 * sizeof(float), c->err) : NULL;
    int32_t *index = rows ? cd_malloc((size_t)cap * sizeof(int32_t), c->err) : NULL;
    if (!index) {
        free(boxes);
        free(cands);
        free(kept);
        free(rows);
        return CD_E_NOMEM;
    }
    float *scores = boxes + nb;
    cd_detect_load_f32(q.boxes, boxes, nb);
    cd_detect_load_f32(q.scores, scores, ns);
    int64_t total = 0, start = 0;
    for (int64_t n = 0; n < q.n; n++) {
        int64_t cnt = q.m; /* boxes of this image */
        if (q.per_class && q.rois) {
            cnt = (int64_t)cd_value_get(q.rois, n);
            if (cnt < 0 || start + cnt > q.m) {
                free(boxes);
                free(cands);
                free(kept);
                free(rows);
                free(index);
                return cd_op_fail(c, CD_E_MODEL, "RoisNum[%lld] = %lld overruns the %lld boxes of BBoxes", (long long)n,
                                  (long long)cnt, (long long)q.m);
            }
        }
        int64_t n_kept = 0;
        for (int64_t cl = 0; cl < q.c; cl++) {
            if (cl == q.background) continue;
            int64_t nc = 0;
            for (int64_t i = 0; i < cnt; i++) {
                float sc = q.per_class ? scores[(start + i) * q.c + cl] : scores[(n * q.c + cl) * q.m + i];
                if (sc > q.score_thr) cands[nc++] = (cand){sc, (int32_t)i, (int32_t)cl, (int32_t)i};
            }
            qsort(cands, (size_t)nc, sizeof *cands, cmp_cand);
            if (q.nms_top_k >= 0 && nc > q.nms_top_k) nc = q.nms_top_k;
            float thr = q.nms_thr;
            int64_t first = n_kept;
            for (int64_t k = 0; k < nc; k++) {
                const float *bk = q.per_class ? boxes + ((start + cands[k].idx) * q.c + cl) * 4
                                              : boxes + (n * q.m + cands[k].idx) * 4;
                bool keep = true;
                for (int64_t j = first; j < n_kept && keep; j++) {
                    const float *bj = q.per_class ? boxes + ((start + kept[j].idx) * q.c + cl) * 4
                                                  : boxes + (n * q.m + kept[j].idx) * 4;
                    keep = iou(bk, bj, q.normalized) <= thr;
                }
                if (!keep) continue;
                kept[n_kept] = cands[k];
                kept[n_kept].seq = (int32_t)n_kept;
                n_kept++;
                if (q.eta < 1.0f && thr > 0.5f) thr *= q.eta;
            }
        }
        if (q.keep_top_k >= 0 && n_kept > q.keep_top_k) {
            qsort(kept, (size_t)n_kept, sizeof *kept, cmp_cand);
            n_kept = q.keep_top_k;
            qsort(kept, (size_t)n_kept, sizeof *kept, cmp_seq); /* back to class, then score order */
        }
        if (total + n_kept > cap) { /* cannot happen: cap bounds every image */
            free(boxes);
            free(cands);
            free(kept);
            free(rows);
            free(index);
            return cd_op_fail(c, CD_E_INTERNAL, "NMS kept more rows than the planned maximum %lld", (long long)cap);
        }
        for (int64_t k = 0; k < n_kept; k++) {
            int64_t i = kept[k].idx, cl = kept[k].label;
            const float *bk = q.per_class ? boxes + ((start + i) * q.c + cl) * 4 : boxes + (n * q.m + i) * 4;
            float *r = rows + (total + k) * 6;
            r[0] = (float)cl;
            r[1] = kept[k].score;
            memcpy(r + 2, bk, 4 * sizeof(float));
            index[total + k] = (int32_t)((q.per_class ? start : n * q.m) + i);
        }
        if (q.nms_num) cd_value_set(q.nms_num, n, (double)n_kept);
        total += n_kept;
        if (q.per_class) start += cnt;
    }
    if (total == 0 && !q.index) {
        float neg = -1.0f;
        q.out->shape.d[0] = 1;
        q.out->shape.d[1] = 1;
        cd_detect_store_f32(q.out, 0, &neg, 1);
    } else {
        q.out->shape.d[0] = total;
        cd_detect_store_f32(q.out, 0, rows, total * 6);
    }
    q.out->nbytes = (size_t)cd_value_numel(q.out) * cd_dtype_size(q.out->dtype);
    if (q.index) {
        q.index->shape.d[0] = total;
        for (int64_t k = 0; k < total; k++) cd_value_set(q.index, k, (double)index[k]);
        q.index->nbytes = (size_t)total * cd_dtype_size(q.index->dtype);
    }
    free(boxes);
    free(cands);
    free(kept);
    free(rows);
    free(index);
    return CD_OK;
}
