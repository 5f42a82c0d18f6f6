/* Task-aware summaries of model outputs: what an output tensor is (classifier head,
 * detection boxes) and, for detection, how the boxes of two backends pair up.
 * Pure functions: no global state; the only allocation (cd_detection_match) is reported. */
#ifndef CD_OUTPUTS_H
#define CD_OUTPUTS_H
#include <stdint.h>
#include "model/graph.h"
#include "util/error.h"

/* What an output tensor is, from its shape (and values where needed). */
typedef enum { CD_TASK_NONE = 0, CD_TASK_CLASSIFIER = 1, CD_TASK_DETECTION = 2 } cd_task;

/* The rule. ref holds the reference values (n elements); values are only looked at when
 * ref != NULL and n == cd_shape_numel(shape), otherwise the decision is by shape alone.
 * Dims must be known (>= 0); a NULL shape, rank 0 or a -1 dim gives CD_TASK_NONE.
 *
 * Detection (checked first): Paddle multiclass_nms output
 *   - [N, 6]     rows [label, score, x1, y1, x2, y2],
 *   - [N, 7]     rows [batch, label, score, x1, y1, x2, y2],
 *   - [1, N, 6]  one image of [N, 6],
 *   N >= 0 (multiclass_nms2/3 emit [0, 6] when nothing is kept); with values, every row's
 *   label (and for width 7 the batch index) must be a whole number >= -1 — class ids are
 *   stored as integral floats, -1 pads — so that a [N, 6] tensor of logits is not taken for
 *   boxes. Also [1, 1] holding exactly -1: multiclass_nms's "no box in any image" output
 *   (needs values; cd_detection_rows gives it 0 rows).
 * Classifier: last dim C with 2 <= C <= 100000, and either
 *   - rank 2 [N, C] (logits or probabilities; by shape alone), or
 *   - rank >= 2 and, with values, every row along the last axis is a probability
 *     distribution: each value finite and in [0, 1], and the row sums to 1 within 1e-3
 *     (a softmax over the last axis, e.g. [1, T, C] per-step OCR heads).
 * Everything else is CD_TASK_NONE (feature maps such as [1, 1, 640, 640]). */
cd_task cd_output_task(const cd_shape *shape, const float *ref, int64_t n);

/* Rows and row width of a tensor that cd_output_task calls detection: [N, 6|7] and
 * [1, N, 6] give N (width 6 or 7 in *width); the empty output [1, 1] = {-1} gives 0 rows of
 * width 6. -1 (and *width 0) for any other shape. data/n as for cd_output_task (only the
 * [1, 1] case reads them). */
int64_t cd_detection_rows(const cd_shape *shape, const float *data, int64_t n, int *width);

typedef struct cd_det_summary {
    int64_t n_ref, n_val;  /* boxes with score >= score_min (and label >= 0) */
    int64_t matched;       /* greedy one-to-one matches: same label, IoU >= iou_min; highest score first */
    double mean_iou;       /* over matched pairs, 1 when none */
    double max_score_diff; /* |score_ref - score_val| over matched pairs (0 when none) */
} cd_det_summary;

/* Rows of width w (6: [label, score, x1, y1, x2, y2]; 7: [batch, label, score, box]); ref
 * and val may have different row counts (0 allowed, the pointer may then be NULL).
 * A row takes part when its label is finite and >= 0 (Paddle pads with -1) and its score is
 * not NaN and >= score_min; NaN scores therefore are neither counted nor matched.
 * Matching: both sides sorted by score descending (ties: earlier row first); each ref box in
 * that order takes the unmatched val box with the same label (width 7: also the same batch
 * index) and the highest IoU >= iou_min (ties: the val box first in sorted order). O(n_ref *
 * n_val) time, O(n_ref + n_val) memory.
 * Returns CD_OK; CD_E_INTERNAL for w not 6/7, negative row counts or NULL data with rows > 0
 * (out zeroed, mean_iou 1); CD_E_NOMEM when the index arrays cannot be allocated (out then
 * holds only n_ref and n_val; matched 0, mean_iou 1, max_score_diff 0). */
cd_status cd_detection_match(const float *ref, int64_t rows_ref, const float *val, int64_t rows_val, int w,
                             double iou_min, double score_min, cd_det_summary *out);

/* IoU of two [x1, y1, x2, y2] boxes, in double: Paddle's normalized-coordinate convention
 * (multiclass_nms with normalized = true): width x2 - x1 and height y2 - y1, no +1 pixel.
 * 0 when either box is empty (x2 <= x1 or y2 <= y1), has a non-finite coordinate, or the
 * boxes do not overlap with positive area. Symmetric; 1 for two identical non-empty boxes. */
double cd_box_iou(const float *a, const float *b);
#endif
