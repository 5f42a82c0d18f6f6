#include "compare/outputs.h"
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CD_CLASSES_MAX 100000

/* Shape of a detection output: rows and width, or -1 (the [1, 1] sentinel is handled by
 * the callers, which need its value). */
static int64_t det_shape(const cd_shape *s, int *width) {
    *width = 0;
    if (s->rank == 2 && s->d[0] >= 0 && (s->d[1] == 6 || s->d[1] == 7)) {
        *width = (int)s->d[1];
        return s->d[0];
    }
    if (s->rank == 3 && s->d[0] == 1 && s->d[1] >= 0 && s->d[2] == 6) {
        *width = 6;
        return s->d[1];
    }
    return -1;
}

static bool whole_ge_minus1(float x) { return isfinite(x) && x >= -1.0f && floorf(x) == x; }

static bool known_dims(const cd_shape *s) {
    if (!s || s->rank < 1 || s->rank > CD_MAX_RANK) return false;
    for (int i = 0; i < s->rank; i++)
        if (s->d[i] < 0) return false;
    return true;
}

static bool is_empty_sentinel(const cd_shape *s, const float *v) {
    return v && s->rank == 2 && s->d[0] == 1 && s->d[1] == 1 && v[0] == -1.0f;
}

cd_task cd_output_task(const cd_shape *shape, const float *ref, int64_t n) {
    if (!known_dims(shape)) return CD_TASK_NONE;
    int64_t numel = cd_shape_numel(shape);
    const float *v = (ref && numel >= 0 && n == numel) ? ref : NULL;

    int w;
    int64_t rows = det_shape(shape, &w);
    if (rows >= 0) {
        bool ok = true;
        for (int64_t r = 0; v && ok && r < rows; r++) {
            const float *row = v + r * w;
            ok = whole_ge_minus1(row[w - 6]) && (w == 6 || whole_ge_minus1(row[0]));
        }
        if (ok) return CD_TASK_DETECTION;
    }
    if (is_empty_sentinel(shape, v)) return CD_TASK_DETECTION;

    int64_t c = shape->d[shape->rank - 1];
    if (shape->rank < 2 || c < 2 || c > CD_CLASSES_MAX) return CD_TASK_NONE;
    if (shape->rank == 2) return CD_TASK_CLASSIFIER;
    if (!v || numel == 0) return CD_TASK_NONE;
    for (int64_t r = 0; r < numel / c; r++) {
        const float *row = v + r * c;
        double sum = 0;
        for (int64_t j = 0; j < c; j++) {
            float x = row[j];
            if (!(x >= 0.0f && x <= 1.0f)) return CD_TASK_NONE; /* also NaN */
            sum += x;
        }
        if (fabs(sum - 1.0) > 1e-3) return CD_TASK_NONE;
    }
    return CD_TASK_CLASSIFIER;
}

int64_t cd_detection_rows(const cd_shape *shape, const float *data, int64_t n, int *width) {
    int w = 0;
    int64_t rows = -1;
    if (known_dims(shape)) {
        rows = det_shape(shape, &w);
        if (rows < 0 && n == 1 && is_empty_sentinel(shape, data)) {
            rows = 0;
            w = 6;
        }
    }
    if (width) *width = rows >= 0 ? w : 0;
    return rows;
}

double cd_box_iou(const float *a, const float *b) {
    for (int i = 0; i < 4; i++)
        if (!isfinite(a[i]) || !isfinite(b[i])) return 0;
    /* float -> double differences are exact for floats within 2^24 ulps of each other and
     * correctly rounded otherwise; everything after is in double. */
    double aw = (double)a[2] - a[0], ah = (double)a[3] - a[1];
    double bw = (double)b[2] - b[0], bh = (double)b[3] - b[1];
    if (!(aw > 0 && ah > 0 && bw > 0 && bh > 0)) return 0;
    double iw = fmin(a[2], b[2]) - fmax(a[0], b[0]);
    double ih = fmin(a[3], b[3]) - fmax(a[1], b[1]);
    if (!(iw > 0 && ih > 0)) return 0;
    double inter = iw * ih;
    double uni = aw * ah + bw * bh - inter;
    double iou = inter / uni;
    return iou > 1 ? 1 : iou;
}

typedef struct det_item {
    float score;
    int64_t row;
} det_item;

static int by_score_desc(const void *pa, const void *pb) {
    const det_item *x = pa, *y = pb;
    if (x->score > y->score) return -1;
    if (x->score < y->score) return 1;
    return (x->row > y->row) - (x->row < y->row);
}

static bool det_valid(const float *row, int w, double score_min) {
    float label = row[w - 6], score = row[w - 5];
    return isfinite(label) && label >= 0.0f && !isnan(score) && (double)score >= score_min;
}

/* Valid rows of one side, in matching order; returns their count. */
static int64_t collect(const float *d, int64_t rows, int w, double score_min, det_item *items) {
    int64_t k = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *row = d + r * w;
        if (!det_valid(row, w, score_min)) continue;
        if (items) items[k] = (det_item){row[w - 5], r};
        k++;
    }
    if (items && k > 1) qsort(items, (size_t)k, sizeof *items, by_score_desc);
    return k;
}

cd_status cd_detection_match(const float *ref, int64_t rows_ref, const float *val, int64_t rows_val, int w,
                             double iou_min, double score_min, cd_det_summary *out) {
    memset(out, 0, sizeof *out);
    out->mean_iou = 1;
    if ((w != 6 && w != 7) || rows_ref < 0 || rows_val < 0 || (rows_ref > 0 && !ref) || (rows_val > 0 && !val))
        return CD_E_INTERNAL;
    out->n_ref = collect(ref, rows_ref, w, score_min, NULL);
    out->n_val = collect(val, rows_val, w, score_min, NULL);
    if (out->n_ref == 0 || out->n_val == 0) return CD_OK;

    det_item *ir = malloc((size_t)out->n_ref * sizeof *ir);
    det_item *iv = malloc((size_t)out->n_val * sizeof *iv);
    bool *used = calloc((size_t)out->n_val, sizeof *used);
    if (!ir || !iv || !used) {
        free(ir);
        free(iv);
        free(used);
        return CD_E_NOMEM;
    }
    collect(ref, rows_ref, w, score_min, ir);
    collect(val, rows_val, w, score_min, iv);

    double iou_sum = 0, max_diff = 0;
    int64_t matched = 0;
    for (int64_t i = 0; i < out->n_ref; i++) {
        const float *a = ref + ir[i].row * w;
        int64_t best = -1;
        double best_iou = 0;
        for (int64_t j = 0; j < out->n_val; j++) {
            if (used[j]) continue;
            const float *b = val + iv[j].row * w;
            if (b[w - 6] != a[w - 6] || (w == 7 && b[0] != a[0])) continue;
            double iou = cd_box_iou(a + w - 4, b + w - 4);
            if (!(iou >= iou_min)) continue;
            if (best < 0 || iou > best_iou) {
                best = j;
                best_iou = iou;
            }
        }
        if (best < 0) continue;
        used[best] = true;
        matched++;
        iou_sum += best_iou;
        float sa = ir[i].score, sb = iv[best].score;
        double diff = sa == sb ? 0 : fabs((double)sa - (double)sb); /* equal infinities: 0 */
        if (diff > max_diff) max_diff = diff;
    }
    out->matched = matched;
    out->mean_iou = matched ? iou_sum / (double)matched : 1;
    out->max_score_diff = max_diff;
    free(ir);
    free(iv);
    free(used);
    return CD_OK;
}
