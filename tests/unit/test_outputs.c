#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include "compare/outputs.h"

/* ---- cd_box_iou ---- */

Test(box_iou, hand_computed) {
    float a[4] = {0, 0, 2, 2}, b[4] = {1, 1, 3, 3};
    cr_assert_eq(cd_box_iou(a, b), 1.0 / 7.0);
    cr_assert_eq(cd_box_iou(b, a), 1.0 / 7.0);
    cr_assert_eq(cd_box_iou(a, a), 1.0);
    float c[4] = {0, 0, 1, 2}; /* half of a: inter 2, union 4 */
    cr_assert_eq(cd_box_iou(a, c), 0.5);
    float d[4] = {0.25f, 0.25f, 0.75f, 0.75f}; /* normalized, no +1: 0.25 / 1 */
    float e[4] = {0, 0, 1, 1};
    cr_assert_eq(cd_box_iou(d, e), 0.25);
}

Test(box_iou, disjoint_touching_degenerate_nonfinite) {
    float a[4] = {0, 0, 2, 2};
    float far[4] = {5, 5, 6, 6}, touch[4] = {2, 0, 4, 2};
    cr_assert_eq(cd_box_iou(a, far), 0.0);
    cr_assert_eq(cd_box_iou(a, touch), 0.0);
    float line[4] = {0, 1, 2, 1}, flipped[4] = {2, 2, 0, 0}, point[4] = {1, 1, 1, 1};
    cr_assert_eq(cd_box_iou(a, line), 0.0);
    cr_assert_eq(cd_box_iou(a, flipped), 0.0);
    cr_assert_eq(cd_box_iou(point, point), 0.0);
    float nanbox[4] = {0, 0, NAN, 2}, infbox[4] = {-INFINITY, 0, INFINITY, 2};
    cr_assert_eq(cd_box_iou(a, nanbox), 0.0);
    cr_assert_eq(cd_box_iou(infbox, a), 0.0);
}

/* ---- cd_detection_match ---- */

Test(detection_match, identical_sets_all_matched) {
    float d[3 * 6] = {
        0, 0.9f, 0.1f, 0.1f, 0.4f, 0.5f, 1, 0.8f, 0.5f, 0.5f, 0.9f, 0.7f, 0, 0.3f, 0.2f, 0.6f, 0.3f, 0.9f,
    };
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(d, 3, d, 3, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 3);
    cr_assert_eq(s.n_val, 3);
    cr_assert_eq(s.matched, 3);
    cr_assert_eq(s.mean_iou, 1.0);
    cr_assert_eq(s.max_score_diff, 0.0);
}

Test(detection_match, shifted_box_below_threshold_unmatched) {
    float r[6] = {2, 0.9f, 0, 0, 2, 2}, v[6] = {2, 0.9f, 1, 1, 3, 3}; /* IoU 1/7 */
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 1, v, 1, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 1);
    cr_assert_eq(s.n_val, 1);
    cr_assert_eq(s.matched, 0);
    cr_assert_eq(s.mean_iou, 1.0);
    cr_assert_eq(s.max_score_diff, 0.0);
    /* the same pair with a threshold under 1/7 matches */
    cr_assert_eq(cd_detection_match(r, 1, v, 1, 6, 0.1, 0.0, &s), CD_OK);
    cr_assert_eq(s.matched, 1);
    cr_assert_eq(s.mean_iou, 1.0 / 7.0);
}

Test(detection_match, same_box_different_label_unmatched) {
    float r[6] = {1, 0.9f, 0, 0, 2, 2}, v[6] = {3, 0.9f, 0, 0, 2, 2};
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 1, v, 1, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 1);
    cr_assert_eq(s.n_val, 1);
    cr_assert_eq(s.matched, 0);
}

Test(detection_match, different_counts_and_score_diff) {
    float r[3 * 6] = {
        0, 0.75f, 0, 0, 2, 2, 0, 0.5f, 10, 10, 12, 12, 1, 0.25f, 4, 4, 6, 6,
    };
    float v[2 * 6] = {
        0, 0.5f, 10, 10, 12, 12, 0, 0.625f, 0, 0, 1, 2, /* IoU 0.5 with ref row 0 */
    };
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 3, v, 2, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 3);
    cr_assert_eq(s.n_val, 2);
    cr_assert_eq(s.matched, 2);
    cr_assert_eq(s.mean_iou, 0.75);        /* (0.5 + 1) / 2 */
    cr_assert_eq(s.max_score_diff, 0.125); /* 0.75 vs 0.625 */
}

Test(detection_match, greedy_highest_score_first_takes_best_iou) {
    /* Two ref boxes of one class compete for one val box; the higher-scored ref (listed
     * second) takes it, even though the other has the better IoU. */
    float r[2 * 6] = {
        5, 0.5f, 0, 0, 2, 2, /* IoU 1 with v */
        5, 0.9f, 0, 0, 1, 2, /* IoU 0.5 with v */
    };
    float v[6] = {5, 0.9f, 0, 0, 2, 2};
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 2, v, 1, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.matched, 1);
    cr_assert_eq(s.mean_iou, 0.5);
    cr_assert_eq(s.max_score_diff, 0.0);
    /* one ref box, two val candidates: the highest IoU wins, not the highest score */
    float r1[6] = {5, 0.9f, 0, 0, 2, 2};
    float v2[2 * 6] = {5, 0.9f, 0, 0, 1, 2, 5, 0.5f, 0, 0, 2, 2};
    cr_assert_eq(cd_detection_match(r1, 1, v2, 2, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.matched, 1);
    cr_assert_eq(s.mean_iou, 1.0);
    cr_assert_eq(s.max_score_diff, (double)0.9f - (double)0.5f);
}

Test(detection_match, padding_rows_ignored) {
    float r[3 * 6] = {
        0, 0.9f, 0, 0, 2, 2, -1, 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1,
    };
    float v[6] = {0, 0.9f, 0, 0, 2, 2};
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 3, v, 1, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 1);
    cr_assert_eq(s.n_val, 1);
    cr_assert_eq(s.matched, 1);
    cr_assert_eq(s.mean_iou, 1.0);
}

Test(detection_match, nan_score_ignored) {
    float r[2 * 6] = {
        0, NAN, 0, 0, 2, 2, 0, 0.9f, 4, 4, 6, 6,
    };
    float v[2 * 6] = {
        0, 0.9f, 0, 0, 2, 2, 0, 0.9f, 4, 4, 6, 6,
    };
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 2, v, 2, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 1);
    cr_assert_eq(s.n_val, 2);
    cr_assert_eq(s.matched, 1);
    cr_assert_eq(s.mean_iou, 1.0);
    cr_assert_eq(s.max_score_diff, 0.0);
}

Test(detection_match, score_min_filters) {
    float r[2 * 6] = {0, 0.9f, 0, 0, 2, 2, 0, 0.25f, 4, 4, 6, 6};
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 2, r, 2, 6, 0.5, 0.5, &s), CD_OK);
    cr_assert_eq(s.n_ref, 1);
    cr_assert_eq(s.n_val, 1);
    cr_assert_eq(s.matched, 1);
}

Test(detection_match, empty_sets) {
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(NULL, 0, NULL, 0, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 0);
    cr_assert_eq(s.n_val, 0);
    cr_assert_eq(s.matched, 0);
    cr_assert_eq(s.mean_iou, 1.0);
    cr_assert_eq(s.max_score_diff, 0.0);
    float r[6] = {0, 0.9f, 0, 0, 2, 2};
    cr_assert_eq(cd_detection_match(r, 1, NULL, 0, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 1);
    cr_assert_eq(s.n_val, 0);
    cr_assert_eq(s.matched, 0);
    cr_assert_eq(s.mean_iou, 1.0);
}

Test(detection_match, degenerate_box_never_matches) {
    float r[6] = {0, 0.9f, 1, 1, 1, 3};
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 1, r, 1, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 1);
    cr_assert_eq(s.matched, 0);
}

Test(detection_match, width7_matches_within_batch) {
    float r[2 * 7] = {
        0, 0, 0.9f, 0, 0, 2, 2, 1, 0, 0.8f, 0, 0, 2, 2,
    };
    float v[2 * 7] = {
        1, 0,  0.9f, 0, 0, 2, 2, /* same box and label, other image than ref row 0 */
        1, -1, 0,    0, 0, 0, 0, /* padding */
    };
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 2, v, 2, 7, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, 2);
    cr_assert_eq(s.n_val, 1);
    cr_assert_eq(s.matched, 1); /* only ref row 1 (batch 1) */
    cr_assert_eq(s.max_score_diff, (double)0.9f - (double)0.8f);
}

Test(detection_match, bad_arguments) {
    float r[6] = {0, 0.9f, 0, 0, 2, 2};
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, 1, r, 1, 5, 0.5, 0.0, &s), CD_E_INTERNAL);
    cr_assert_eq(s.matched, 0);
    cr_assert_eq(s.mean_iou, 1.0);
    cr_assert_eq(cd_detection_match(r, -1, r, 1, 6, 0.5, 0.0, &s), CD_E_INTERNAL);
    cr_assert_eq(cd_detection_match(NULL, 1, r, 1, 6, 0.5, 0.0, &s), CD_E_INTERNAL);
}

Test(detection_match, large_sets) {
    /* 3000 disjoint boxes on a grid with many tied scores, val in reverse row order:
     * every box matches its twin and nothing else. */
    enum { N = 3000 };
    float *r = malloc(N * 6 * sizeof *r), *v = malloc(N * 6 * sizeof *v);
    cr_assert(r && v);
    for (int i = 0; i < N; i++) {
        float x = (float)(i % 100) * 4, y = (float)(i / 100) * 4;
        float row[6] = {(float)(i % 7), (float)(i % 1000) / 1000.0f, x, y, x + 2, y + 2};
        for (int k = 0; k < 6; k++) r[i * 6 + k] = row[k];
        int j = N - 1 - i;
        for (int k = 0; k < 6; k++) v[j * 6 + k] = row[k];
    }
    cd_det_summary s;
    cr_assert_eq(cd_detection_match(r, N, v, N, 6, 0.5, 0.0, &s), CD_OK);
    cr_assert_eq(s.n_ref, N);
    cr_assert_eq(s.n_val, N);
    cr_assert_eq(s.matched, N);
    cr_assert_eq(s.mean_iou, 1.0);
    cr_assert_eq(s.max_score_diff, 0.0);
    free(r);
    free(v);
}

/* ---- cd_output_task / cd_detection_rows ---- */

Test(output_task, detection_shapes) {
    cd_shape s2 = {.rank = 2, .d = {10, 6}};
    cd_shape s3 = {.rank = 3, .d = {1, 10, 6}};
    cd_shape s7 = {.rank = 2, .d = {10, 7}};
    cd_shape s0 = {.rank = 2, .d = {0, 6}};
    cr_assert_eq(cd_output_task(&s2, NULL, 0), CD_TASK_DETECTION);
    cr_assert_eq(cd_output_task(&s3, NULL, 0), CD_TASK_DETECTION);
    cr_assert_eq(cd_output_task(&s7, NULL, 0), CD_TASK_DETECTION);
    cr_assert_eq(cd_output_task(&s0, NULL, 0), CD_TASK_DETECTION);
    /* with values: integral labels (and -1 padding) keep it detection */
    float d[10 * 6];
    for (int i = 0; i < 10; i++) {
        float row[6] = {(float)(i < 8 ? i % 3 : -1), 0.5f, 0.1f, 0.1f, 0.4f, 0.4f};
        for (int k = 0; k < 6; k++) d[i * 6 + k] = row[k];
    }
    cr_assert_eq(cd_output_task(&s2, d, 60), CD_TASK_DETECTION);
    cr_assert_eq(cd_output_task(&s3, d, 60), CD_TASK_DETECTION);
    /* a [10, 6] tensor of logits is a classifier */
    d[0] = 0.37f;
    cr_assert_eq(cd_output_task(&s2, d, 60), CD_TASK_CLASSIFIER);
    cr_assert_eq(cd_output_task(&s3, d, 60), CD_TASK_NONE);
    /* multiclass_nms's empty output [1, 1] = {-1} */
    cd_shape s11 = {.rank = 2, .d = {1, 1}};
    float neg = -1, zero = 0;
    cr_assert_eq(cd_output_task(&s11, &neg, 1), CD_TASK_DETECTION);
    cr_assert_eq(cd_output_task(&s11, &zero, 1), CD_TASK_NONE);
    cr_assert_eq(cd_output_task(&s11, NULL, 0), CD_TASK_NONE);
}

Test(output_task, classifier_shapes) {
    cd_shape s12 = {.rank = 2, .d = {1, 2}};
    float p[2] = {0.25f, 0.75f};
    cr_assert_eq(cd_output_task(&s12, p, 2), CD_TASK_CLASSIFIER);
    cd_shape s4k = {.rank = 2, .d = {4, 1000}};
    float *q = malloc(4000 * sizeof *q);
    cr_assert(q);
    for (int i = 0; i < 4000; i++) q[i] = 0.001f;
    cr_assert_eq(cd_output_task(&s4k, q, 4000), CD_TASK_CLASSIFIER);
    cr_assert_eq(cd_output_task(&s4k, NULL, 0), CD_TASK_CLASSIFIER);
    /* rank 3 needs softmax rows */
    cd_shape s3 = {.rank = 3, .d = {1, 4, 1000}};
    cr_assert_eq(cd_output_task(&s3, q, 4000), CD_TASK_CLASSIFIER);
    cr_assert_eq(cd_output_task(&s3, NULL, 0), CD_TASK_NONE);
    q[1500] = 0.5f; /* row 1 sums to 1.499 */
    cr_assert_eq(cd_output_task(&s3, q, 4000), CD_TASK_NONE);
    q[1500] = NAN;
    cr_assert_eq(cd_output_task(&s3, q, 4000), CD_TASK_NONE);
    free(q);
    /* width 1 or over 100000 classes: none */
    cd_shape s41 = {.rank = 2, .d = {4, 1}}, big = {.rank = 2, .d = {1, 100001}};
    cr_assert_eq(cd_output_task(&s41, NULL, 0), CD_TASK_NONE);
    cr_assert_eq(cd_output_task(&big, NULL, 0), CD_TASK_NONE);
}

Test(output_task, none_shapes) {
    cd_shape fm = {.rank = 4, .d = {1, 1, 640, 640}};
    cr_assert_eq(cd_output_task(&fm, NULL, 0), CD_TASK_NONE);
    float *m = calloc(640 * 640, sizeof *m);
    cr_assert(m);
    for (int i = 0; i < 640 * 640; i++) m[i] = 0.5f; /* sigmoid map: rows sum to 320 */
    cr_assert_eq(cd_output_task(&fm, m, 640 * 640), CD_TASK_NONE);
    free(m);
    cd_shape v = {.rank = 1, .d = {1000}}, dyn = {.rank = 2, .d = {-1, 6}};
    cr_assert_eq(cd_output_task(&v, NULL, 0), CD_TASK_NONE);
    cr_assert_eq(cd_output_task(&dyn, NULL, 0), CD_TASK_NONE);
    cr_assert_eq(cd_output_task(NULL, NULL, 0), CD_TASK_NONE);
}

Test(output_task, detection_rows) {
    int w = -5;
    cd_shape s2 = {.rank = 2, .d = {10, 6}}, s3 = {.rank = 3, .d = {1, 4, 6}};
    cd_shape s7 = {.rank = 2, .d = {3, 7}}, s11 = {.rank = 2, .d = {1, 1}};
    cr_assert_eq(cd_detection_rows(&s2, NULL, 0, &w), 10);
    cr_assert_eq(w, 6);
    cr_assert_eq(cd_detection_rows(&s3, NULL, 0, &w), 4);
    cr_assert_eq(w, 6);
    cr_assert_eq(cd_detection_rows(&s7, NULL, 0, &w), 3);
    cr_assert_eq(w, 7);
    float neg = -1;
    cr_assert_eq(cd_detection_rows(&s11, &neg, 1, &w), 0);
    cr_assert_eq(w, 6);
    cd_shape fm = {.rank = 4, .d = {1, 1, 640, 640}};
    cr_assert_eq(cd_detection_rows(&fm, NULL, 0, &w), -1);
    cr_assert_eq(w, 0);
}
