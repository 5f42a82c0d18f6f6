/* Detection and rnn ops on hand-computed cases: NMS selection on both sides of the IoU
 * threshold, Paddle's documented multiclass_nms example, empty results, keep_top_k,
 * prior/box_coder/yolo_box values worked out by hand, and the shape-rule error messages. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/ops.h"
#include "util/fp16.h"

extern const cd_op_table cd_ops_detect;
extern const cd_op_table cd_ops_rnn;

/* ---- a one-op graph with host values ---- */

typedef struct {
    cd_graph *g;
    cd_value *vals;
    cd_error err;
    cd_op_ctx ctx;
    const cd_op_def *def;
} one_op;

static const cd_op_def *find_def(const char *type) {
    const cd_op_table *tabs[2] = {&cd_ops_detect, &cd_ops_rnn};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < tabs[t]->n; i++)
            if (!strcmp(tabs[t]->defs[i].type, type)) return &tabs[t]->defs[i];
    return NULL;
}

static void op_begin(one_op *o, const char *type) {
    memset(o, 0, sizeof *o);
    o->g = cd_graph_new();
    cr_assert(o->g);
    o->def = find_def(type);
    cr_assert(o->def, "no definition for %s", type);
    cr_assert(cd_graph_add_op(o->g, type, &o->err));
}

/* Binds slot to n fresh variables named <slot><k>. */
static void op_slot(one_op *o, const char *slot, int n, bool out) {
    char names[8][32];
    const char *ptr[8];
    for (int k = 0; k < n; k++) {
        snprintf(names[k], sizeof names[k], "%s%d", slot, k);
        ptr[k] = names[k];
        int64_t d = 1;
        cr_assert_eq(cd_graph_declare_var(o->g, names[k], CD_F32, &d, 1, false, &o->err), CD_OK, "%s", o->err.msg);
    }
    cd_status s = out ? cd_op_add_output(o->g, slot, ptr, n, &o->err) : cd_op_add_input(o->g, slot, ptr, n, &o->err);
    cr_assert_eq(s, CD_OK, "%s", o->err.msg);
}

static void attr_add(one_op *o, cd_attr *a) { cr_assert_eq(cd_op_add_attr(o->g, a, &o->err), CD_OK, "%s", o->err.msg); }
static void attr_f(one_op *o, const char *n, double v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_FLOAT, .f = (float)v};
    attr_add(o, &a);
}
static void attr_i(one_op *o, const char *n, int64_t v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_INT, .i = v};
    attr_add(o, &a);
}
static void attr_b(one_op *o, const char *n, bool v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_BOOL, .i = v};
    attr_add(o, &a);
}
static void attr_s(one_op *o, const char *n, const char *v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_STRING, .s = strdup(v)};
    attr_add(o, &a);
}
static void attr_fs(one_op *o, const char *n, int k, const double *v) {
    cd_attr a = {
        .name = strdup(n), .type = CD_ATTR_FLOATS, .n = k, .floats = malloc(sizeof(double) * (size_t)(k ? k : 1))};
    for (int i = 0; i < k; i++) a.floats[i] = (float)v[i];
    attr_add(o, &a);
}
static void attr_is(one_op *o, const char *n, int k, const int64_t *v) {
    cd_attr a = {
        .name = strdup(n), .type = CD_ATTR_INTS, .n = k, .ints = malloc(sizeof(int64_t) * (size_t)(k ? k : 1))};
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)k);
    attr_add(o, &a);
}

static void op_finish(one_op *o, cd_precision prec) {
    cr_assert_eq(cd_graph_finalize(o->g, &o->err), CD_OK, "%s", o->err.msg);
    o->vals = calloc((size_t)o->g->n_tensors, sizeof *o->vals);
    o->ctx = (cd_op_ctx){
        .g = o->g, .op = &o->g->ops[0], .op_index = 0, .vals = o->vals, .prec = prec, .threads = 1, .err = &o->err};
}

/* Sets input slot[k] to a tensor of the given dtype/shape holding data (as floats). */
static void op_input(one_op *o, const char *slot, int k, cd_dtype dt, int rank, const int64_t *dims,
                     const double *data) {
    int id = cd_op_in(&o->g->ops[0], slot, k);
    cr_assert(id >= 0);
    cd_value *v = &o->vals[id];
    v->dtype = dt;
    v->shape.rank = rank;
    for (int i = 0; i < rank; i++) v->shape.d[i] = dims[i];
    cr_assert_eq(cd_value_alloc(v, &o->err), CD_OK);
    if (data)
        for (int64_t i = 0; i < cd_value_numel(v); i++) cd_value_set(v, i, data[i]);
}

static cd_status op_infer(one_op *o) { return o->def->infer(&o->ctx); }

/* Infer, allocate outputs, run. */
static void op_run(one_op *o) {
    cr_assert_eq(op_infer(o), CD_OK, "%s", o->err.msg);
    const cd_op *op = &o->g->ops[0];
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++)
            cr_assert_eq(cd_value_alloc(&o->vals[op->out[s].ids[k]], &o->err), CD_OK);
    cr_assert_eq(o->def->run(&o->ctx), CD_OK, "%s", o->err.msg);
}

static cd_value *out_val(one_op *o, const char *slot, int k) { return &o->vals[cd_op_out(&o->g->ops[0], slot, k)]; }

static void op_end(one_op *o) {
    if (o->vals)
        for (int i = 0; i < o->g->n_tensors; i++) cd_value_release(&o->vals[i]);
    free(o->vals);
    cd_graph_free(o->g);
}

static void expect_rows(cd_value *v, int rows, int cols, const double *want, double tol) {
    cr_assert_eq(v->shape.rank, 2);
    cr_assert_eq(v->shape.d[0], rows, "rows %lld, want %d", (long long)v->shape.d[0], rows);
    cr_assert_eq(v->shape.d[1], cols);
    for (int i = 0; i < rows * cols; i++)
        cr_assert(fabs(cd_value_get(v, i) - want[i]) <= tol, "element %d: %.9g, want %.9g", i, cd_value_get(v, i),
                  want[i]);
}

/* ---- NMS ---- */

/* Two boxes, one class; A = [0,0,10,10] score 0.9, B = [1,0,11,10] score 0.8.
 * normalized: inter 9*10 = 90, union 200-90 = 110, IoU = 0.81818.
 * not normalized: inter 10*11 = 110, areas 121, union 132, IoU = 0.83333. */
static void nms_two(one_op *o, const char *type, double thr, bool normalized, cd_precision prec) {
    op_begin(o, type);
    op_slot(o, "BBoxes", 1, false);
    op_slot(o, "Scores", 1, false);
    op_slot(o, "Out", 1, true);
    if (strcmp(type, "multiclass_nms")) op_slot(o, "Index", 1, true);
    attr_f(o, "score_threshold", 0.05);
    attr_i(o, "nms_top_k", -1);
    attr_i(o, "keep_top_k", -1);
    attr_f(o, "nms_threshold", thr);
    attr_i(o, "background_label", -1);
    attr_b(o, "normalized", normalized);
    op_finish(o, prec);
    cd_dtype dt = prec == CD_PREC_FP16 ? CD_F16 : CD_F32;
    const double boxes[8] = {0, 0, 10, 10, 1, 0, 11, 10}, scores[2] = {0.9, 0.8};
    op_input(o, "BBoxes", 0, dt, 3, (int64_t[]){1, 2, 4}, boxes);
    op_input(o, "Scores", 0, dt, 3, (int64_t[]){1, 1, 2}, scores);
    op_run(o);
}

Test(nms, iou_threshold_both_sides_normalized) {
    one_op o;
    nms_two(&o, "multiclass_nms", 0.81, true, CD_PREC_FP32); /* 0.818 > 0.81: B suppressed */
    expect_rows(out_val(&o, "Out", 0), 1, 6, (double[]){0, 0.9f, 0, 0, 10, 10}, 0);
    op_end(&o);
    nms_two(&o, "multiclass_nms", 0.82, true, CD_PREC_FP32); /* 0.818 <= 0.82: both stay */
    expect_rows(out_val(&o, "Out", 0), 2, 6, (double[]){0, 0.9f, 0, 0, 10, 10, 0, 0.8f, 1, 0, 11, 10}, 0);
    op_end(&o);
}

Test(nms, iou_threshold_both_sides_pixel_boxes) {
    one_op o;
    nms_two(&o, "multiclass_nms2", 0.83, false, CD_PREC_FP32); /* 0.8333 > 0.83 */
    expect_rows(out_val(&o, "Out", 0), 1, 6, (double[]){0, 0.9f, 0, 0, 10, 10}, 0);
    expect_rows(out_val(&o, "Index", 0), 1, 1, (double[]){0}, 0);
    op_end(&o);
    nms_two(&o, "multiclass_nms2", 0.84, false, CD_PREC_FP32);
    expect_rows(out_val(&o, "Index", 0), 2, 1, (double[]){0, 1}, 0);
    op_end(&o);
}

Test(nms, fp16_run_selects_the_same_boxes) {
    one_op o;
    nms_two(&o, "multiclass_nms", 0.81, true, CD_PREC_FP16);
    cd_value *v = out_val(&o, "Out", 0);
    cr_assert_eq(v->dtype, CD_F16);
    expect_rows(v, 1, 6, (double[]){0, cd_round_half(0.9f), 0, 0, 10, 10}, 0);
    op_end(&o);
}

/* The worked example of Paddle's multiclass_nms documentation. */
Test(nms, paddle_documented_example) {
    one_op o;
    op_begin(&o, "multiclass_nms");
    op_slot(&o, "BBoxes", 1, false);
    op_slot(&o, "Scores", 1, false);
    op_slot(&o, "Out", 1, true);
    attr_f(&o, "score_threshold", 0);
    attr_i(&o, "nms_top_k", -1);
    attr_i(&o, "keep_top_k", -1);
    attr_f(&o, "nms_threshold", 0.3);
    attr_i(&o, "background_label", 0);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "BBoxes", 0, CD_F32, 3, (int64_t[]){1, 2, 4}, (double[]){2, 3, 7, 5, 3, 4, 8, 5});
    op_input(&o, "Scores", 0, CD_F32, 3, (int64_t[]){1, 3, 2}, (double[]){0.7, 0.3, 0.2, 0.3, 0.4, 0.1});
    op_run(&o);
    expect_rows(out_val(&o, "Out", 0), 2, 6, (double[]){1, 0.3f, 3, 4, 8, 5, 2, 0.4f, 2, 3, 7, 5}, 0);
    op_end(&o);
}

Test(nms, nothing_kept) {
    one_op o;
    for (int v = 0; v < 2; v++) {
        op_begin(&o, v ? "multiclass_nms3" : "multiclass_nms");
        op_slot(&o, "BBoxes", 1, false);
        op_slot(&o, "Scores", 1, false);
        op_slot(&o, "Out", 1, true);
        if (v) {
            op_slot(&o, "Index", 1, true);
            op_slot(&o, "NmsRoisNum", 1, true);
        }
        attr_f(&o, "score_threshold", 0.95);
        attr_i(&o, "nms_top_k", 10);
        attr_i(&o, "keep_top_k", 5);
        op_finish(&o, CD_PREC_FP32);
        op_input(&o, "BBoxes", 0, CD_F32, 3, (int64_t[]){1, 2, 4}, (double[]){0, 0, 1, 1, 0, 0, 2, 2});
        op_input(&o, "Scores", 0, CD_F32, 3, (int64_t[]){1, 2, 2}, (double[]){0.99, 0.99, 0.5, 0.95});
        op_run(&o); /* class 0 is background; class 1 has nothing > 0.95 */
        if (!v) {
            expect_rows(out_val(&o, "Out", 0), 1, 1, (double[]){-1}, 0);
        } else {
            cr_assert_eq(out_val(&o, "Out", 0)->shape.d[0], 0);
            cr_assert_eq(out_val(&o, "Out", 0)->shape.d[1], 6);
            cr_assert_eq(out_val(&o, "Index", 0)->shape.d[0], 0);
            cr_assert_eq(cd_value_get(out_val(&o, "NmsRoisNum", 0), 0), 0);
        }
        op_end(&o);
    }
}

/* Two images, two classes, keep_top_k = 2, equal scores broken by box index. */
Test(nms, keep_top_k_order_and_index) {
    one_op o;
    op_begin(&o, "multiclass_nms3");
    op_slot(&o, "BBoxes", 1, false);
    op_slot(&o, "Scores", 1, false);
    op_slot(&o, "Out", 1, true);
    op_slot(&o, "Index", 1, true);
    op_slot(&o, "NmsRoisNum", 1, true);
    attr_f(&o, "score_threshold", 0.1);
    attr_i(&o, "nms_top_k", 2);
    attr_i(&o, "keep_top_k", 2);
    attr_f(&o, "nms_threshold", 0.5);
    attr_i(&o, "background_label", -1);
    op_finish(&o, CD_PREC_FP32);
    /* Three disjoint boxes per image. */
    const double bx[24] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
    /* image 0: class 0 (0.5, 0.6, 0.6), class 1 (0.55, 0.2, 0.9)
     * per class nms_top_k = 2: c0 -> idx1 0.6, idx2 0.6 (tie by index); c1 -> idx2 0.9, idx0 0.55
     * keep_top_k 2 of {c0:1(0.6),2(0.6), c1:2(0.9),0(0.55)} -> 0.9 (c1,2), 0.6 (c0,1)
     * image 1: class 0 (0.05, 0.05, 0.3), class 1 all 0 -> one row c0 idx2 */
    const double sc[12] = {0.5, 0.6, 0.6, 0.55, 0.2, 0.9, 0.05, 0.05, 0.3, 0, 0, 0};
    op_input(&o, "BBoxes", 0, CD_F32, 3, (int64_t[]){2, 3, 4}, bx);
    op_input(&o, "Scores", 0, CD_F32, 3, (int64_t[]){2, 2, 3}, sc);
    cr_assert_eq(op_infer(&o), CD_OK);
    cr_assert_eq(out_val(&o, "Out", 0)->shape.d[0], 4); /* 2 images x keep_top_k */
    op_run(&o);
    expect_rows(out_val(&o, "Out", 0), 3, 6, (double[]){0, 0.6f, 2, 2, 3, 3, 1, 0.9f, 4, 4, 5, 5, 0, 0.3f, 4, 4, 5, 5},
                0);
    expect_rows(out_val(&o, "Index", 0), 3, 1, (double[]){1, 2, 5}, 0);
    cd_value *rn = out_val(&o, "NmsRoisNum", 0);
    cr_assert_eq(cd_value_get(rn, 0), 2);
    cr_assert_eq(cd_value_get(rn, 1), 1);
    op_end(&o);
}

Test(nms, infer_rejects_mismatched_shapes) {
    one_op o;
    op_begin(&o, "multiclass_nms");
    op_slot(&o, "BBoxes", 1, false);
    op_slot(&o, "Scores", 1, false);
    op_slot(&o, "Out", 1, true);
    attr_f(&o, "score_threshold", 0.1);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "BBoxes", 0, CD_F32, 3, (int64_t[]){1, 5, 4}, NULL);
    op_input(&o, "Scores", 0, CD_F32, 3, (int64_t[]){1, 2, 6}, NULL);
    cr_assert_eq(op_infer(&o), CD_E_MODEL);
    cr_assert(strstr(o.err.msg,
                     "op #0 multiclass_nms_0 (multiclass_nms): Scores [1,2,6] is [N, C, M], so BBoxes "
                     "must be [N, M, 4] = [1, 6, 4], got [1,5,4]"),
              "%s", o.err.msg);
    op_end(&o);
}

Test(nms, infer_requires_score_threshold) {
    one_op o;
    op_begin(&o, "multiclass_nms2");
    op_slot(&o, "BBoxes", 1, false);
    op_slot(&o, "Scores", 1, false);
    op_slot(&o, "Out", 1, true);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "BBoxes", 0, CD_F32, 3, (int64_t[]){1, 5, 4}, NULL);
    op_input(&o, "Scores", 0, CD_F32, 3, (int64_t[]){1, 2, 5}, NULL);
    cr_assert_eq(op_infer(&o), CD_E_MODEL);
    cr_assert(strstr(o.err.msg, "required attribute score_threshold is missing"), "%s", o.err.msg);
    op_end(&o);
}

/* The slots and attributes the detection cases below share (op_finish left to the caller). */
static void prior_begin(one_op *o) {
    op_begin(o, "prior_box");
    op_slot(o, "Input", 1, false);
    op_slot(o, "Image", 1, false);
    op_slot(o, "Boxes", 1, true);
    op_slot(o, "Variances", 1, true);
}
static void box_coder_begin(one_op *o, const char *code_type) {
    op_begin(o, "box_coder");
    op_slot(o, "PriorBox", 1, false);
    op_slot(o, "TargetBox", 1, false);
    op_slot(o, "OutputBox", 1, true);
    attr_s(o, "code_type", code_type);
}
/* One anchor (10, 20), one class, conf_thresh 0.01, downsample 8. */
static void yolo_begin(one_op *o) {
    op_begin(o, "yolo_box");
    op_slot(o, "X", 1, false);
    op_slot(o, "ImgSize", 1, false);
    op_slot(o, "Boxes", 1, true);
    op_slot(o, "Scores", 1, true);
    attr_is(o, "anchors", 2, (int64_t[]){10, 20});
    attr_i(o, "class_num", 1);
    attr_f(o, "conf_thresh", 0.01);
    attr_i(o, "downsample_ratio", 8);
}

/* ---- prior_box ---- */

/* Feature 1x1, image 10x10 -> step 10, centre (5, 5). min 4, max 9, ratios [2] flipped
 * -> [1, 2, 0.5]; order (min, max, ratio...): half sizes 2x2, 3x3, (2*sqrt2, 2/sqrt2), (sqrt2, 2*sqrt2). */
Test(prior_box, hand_computed) {
    one_op o;
    prior_begin(&o);
    attr_fs(&o, "min_sizes", 1, (double[]){4});
    attr_fs(&o, "max_sizes", 1, (double[]){9});
    attr_fs(&o, "aspect_ratios", 1, (double[]){2});
    attr_fs(&o, "variances", 4, (double[]){0.1, 0.1, 0.2, 0.2});
    attr_b(&o, "flip", true);
    attr_b(&o, "min_max_aspect_ratios_order", true);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "Input", 0, CD_F32, 4, (int64_t[]){1, 8, 1, 1}, NULL);
    op_input(&o, "Image", 0, CD_F32, 4, (int64_t[]){1, 3, 10, 10}, NULL);
    op_run(&o);
    cd_value *b = out_val(&o, "Boxes", 0);
    cr_assert_eq(b->shape.rank, 4);
    cr_assert_eq(b->shape.d[2], 4);
    double s2 = sqrt(2.0);
    const double hw[4][2] = {{2, 2}, {3, 3}, {2 * s2, 2 / s2}, {2 / s2, 2 * s2}};
    for (int p = 0; p < 4; p++) {
        double want[4] = {(5 - hw[p][0]) / 10, (5 - hw[p][1]) / 10, (5 + hw[p][0]) / 10, (5 + hw[p][1]) / 10};
        for (int k = 0; k < 4; k++)
            cr_assert(fabs(cd_value_get(b, p * 4 + k) - want[k]) < 1e-6, "prior %d coord %d: %g want %g", p, k,
                      cd_value_get(b, p * 4 + k), want[k]);
    }
    cd_value *v = out_val(&o, "Variances", 0);
    cr_assert_eq(cd_value_get(v, 14), (double)0.2f);
    op_end(&o);
}

Test(prior_box, infer_needs_min_sizes) {
    one_op o;
    op_begin(&o, "prior_box");
    op_slot(&o, "Input", 1, false);
    op_slot(&o, "Image", 1, false);
    op_slot(&o, "Boxes", 1, true);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "Input", 0, CD_F32, 4, (int64_t[]){1, 8, 2, 2}, NULL);
    op_input(&o, "Image", 0, CD_F32, 4, (int64_t[]){1, 3, 10, 10}, NULL);
    cr_assert_eq(op_infer(&o), CD_E_MODEL);
    cr_assert(strstr(o.err.msg, "prior_box_0 (prior_box): attribute min_sizes is missing or empty"), "%s", o.err.msg);
    op_end(&o);
}

/* density 2, fixed size 4, ratio 1, feature 1x1, image 8x8: step 8, step_avg 8, shift 4;
 * sub-centres (2,2), (6,2), (2,6), (6,6); half size 2; clamped to [0,1]. */
Test(density_prior_box, hand_computed_flattened) {
    one_op o;
    op_begin(&o, "density_prior_box");
    op_slot(&o, "Input", 1, false);
    op_slot(&o, "Image", 1, false);
    op_slot(&o, "Boxes", 1, true);
    op_slot(&o, "Variances", 1, true);
    attr_fs(&o, "fixed_sizes", 1, (double[]){4});
    attr_fs(&o, "fixed_ratios", 1, (double[]){1});
    attr_is(&o, "densities", 1, (int64_t[]){2});
    attr_b(&o, "flatten_to_2d", true);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "Input", 0, CD_F32, 4, (int64_t[]){1, 8, 1, 1}, NULL);
    op_input(&o, "Image", 0, CD_F32, 4, (int64_t[]){1, 3, 8, 8}, NULL);
    op_run(&o);
    expect_rows(out_val(&o, "Boxes", 0), 4, 4,
                (double[]){0, 0, 0.5, 0.5, 0.5, 0, 1, 0.5, 0, 0.5, 0.5, 1, 0.5, 0.5, 1, 1}, 0);
    expect_rows(
        out_val(&o, "Variances", 0), 4, 4,
        (double[]){0.1f, 0.1f, 0.2f, 0.2f, 0.1f, 0.1f, 0.2f, 0.2f, 0.1f, 0.1f, 0.2f, 0.2f, 0.1f, 0.1f, 0.2f, 0.2f}, 0);
    op_end(&o);
}

/* ---- box_coder ---- */

/* Prior [0,0,4,2] (pixel boxes: w 5, h 3, centre (2.5, 1.5)), variance attr [0.1,0.1,0.2,0.2],
 * offsets (1, -1, 0, ln 2 / 0.2) -> centre (3, 1.2), w 5, h 6 -> [0.5, -1.8, 4.5, 3.2]. */
Test(box_coder, decode_hand_computed) {
    one_op o;
    box_coder_begin(&o, "decode_center_size");
    attr_b(&o, "box_normalized", false);
    attr_fs(&o, "variance", 4, (double[]){0.1, 0.1, 0.2, 0.2});
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "PriorBox", 0, CD_F32, 2, (int64_t[]){1, 4}, (double[]){0, 0, 4, 2});
    op_input(&o, "TargetBox", 0, CD_F32, 3, (int64_t[]){1, 1, 4}, (double[]){1, -1, 0, log(2.0) / 0.2});
    op_run(&o);
    cd_value *v = out_val(&o, "OutputBox", 0);
    const double want[4] = {0.5, -1.8, 4.5, 3.2};
    for (int k = 0; k < 4; k++)
        cr_assert(fabs(cd_value_get(v, k) - want[k]) < 2e-6, "coord %d: %.9g want %g", k, cd_value_get(v, k), want[k]);
    op_end(&o);
}

Test(box_coder, infer_rejects_unknown_code_type) {
    one_op o;
    box_coder_begin(&o, "decode_corner");
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "PriorBox", 0, CD_F32, 2, (int64_t[]){3, 4}, NULL);
    op_input(&o, "TargetBox", 0, CD_F32, 3, (int64_t[]){1, 3, 4}, NULL);
    cr_assert_eq(op_infer(&o), CD_E_MODEL);
    cr_assert(strstr(o.err.msg, "code_type 'decode_corner' is not encode_center_size or decode_center_size"), "%s",
              o.err.msg);
    op_end(&o);
}

/* ---- yolo_box ---- */

/* One anchor (10, 20), one class, grid 2x1, downsample 8 (input 16 x 8), image 32 x 64 (h x w).
 * All logits 0 except objectness of cell 1 = -10 (conf 4.5e-5 < 0.01: dropped).
 * Cell 0: conf 0.5, cx = (0 + 0.5) * 64 / 1 = 32, cy = (0 + 0.5) * 32 / 2 = 8,
 * w = 10 * 64 / 8 = 80, h = 20 * 32 / 16 = 40 -> [-8, -12, 72, 28] clipped to [0, 0, 63, 28]. */
Test(yolo_box, hand_computed) {
    one_op o;
    yolo_begin(&o);
    op_finish(&o, CD_PREC_FP32);
    double x[12] = {0};
    x[4 * 2 + 1] = -10; /* channel 4 (objectness), cell 1 */
    op_input(&o, "X", 0, CD_F32, 4, (int64_t[]){1, 6, 2, 1}, x);
    op_input(&o, "ImgSize", 0, CD_I32, 2, (int64_t[]){1, 2}, (double[]){32, 64});
    op_run(&o);
    cd_value *b = out_val(&o, "Boxes", 0), *s = out_val(&o, "Scores", 0);
    const double wb[8] = {0, 0, 63, 28, 0, 0, 0, 0};
    for (int k = 0; k < 8; k++) cr_assert(fabs(cd_value_get(b, k) - wb[k]) < 1e-5, "box %d: %g", k, cd_value_get(b, k));
    cr_assert(fabs(cd_value_get(s, 0) - 0.25) < 1e-7);
    cr_assert_eq(cd_value_get(s, 1), 0);
    op_end(&o);
}

Test(yolo_box, infer_checks_channels) {
    one_op o;
    op_begin(&o, "yolo_box");
    op_slot(&o, "X", 1, false);
    op_slot(&o, "ImgSize", 1, false);
    op_slot(&o, "Boxes", 1, true);
    op_slot(&o, "Scores", 1, true);
    attr_is(&o, "anchors", 4, (int64_t[]){10, 20, 30, 40});
    attr_i(&o, "class_num", 80);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "X", 0, CD_F32, 4, (int64_t[]){1, 255, 13, 13}, NULL);
    op_input(&o, "ImgSize", 0, CD_I32, 2, (int64_t[]){1, 2}, NULL);
    cr_assert_eq(op_infer(&o), CD_E_MODEL);
    cr_assert(strstr(o.err.msg, "X has 255 channels but 2 anchors x (5 + 80 classes) need 170"), "%s", o.err.msg);
    op_end(&o);
}

/* ---- rnn ---- */

Test(rnn, infer_checks_weight_count) {
    one_op o;
    op_begin(&o, "rnn");
    op_slot(&o, "Input", 1, false);
    op_slot(&o, "PreState", 2, false);
    op_slot(&o, "WeightList", 4, false);
    op_slot(&o, "Out", 1, true);
    op_slot(&o, "State", 2, true);
    attr_s(&o, "mode", "LSTM");
    attr_i(&o, "hidden_size", 3);
    attr_i(&o, "num_layers", 1);
    attr_b(&o, "is_bidirec", true);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "Input", 0, CD_F32, 3, (int64_t[]){5, 1, 2}, NULL);
    cr_assert_eq(op_infer(&o), CD_E_MODEL);
    cr_assert(strstr(o.err.msg, "WeightList has 4 tensors; 1 layer(s) x 2 direction(s) need 8"), "%s", o.err.msg);
    op_end(&o);
}

/* GRU, H = 1, I = 1, T = 2, all weights 0 except W_ih of the candidate (1) and W_hh of the
 * update gate (0): r = z = 0.5, c~ = tanh(x); h1 = 0.5*0 + 0.5*tanh(1); h2 = 0.5*h1 + 0.5*tanh(2).
 * Sequence length 1 for the second batch entry: its step 2 outputs 0 and its state stays h1. */
Test(rnn, gru_hand_computed_with_sequence_length) {
    one_op o;
    op_begin(&o, "rnn");
    op_slot(&o, "Input", 1, false);
    op_slot(&o, "PreState", 1, false);
    op_slot(&o, "WeightList", 4, false);
    op_slot(&o, "SequenceLength", 1, false);
    op_slot(&o, "Out", 1, true);
    op_slot(&o, "State", 1, true);
    attr_s(&o, "mode", "GRU");
    attr_i(&o, "hidden_size", 1);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "Input", 0, CD_F32, 3, (int64_t[]){2, 2, 1}, (double[]){1, 1, 2, 2});
    op_input(&o, "PreState", 0, CD_F32, 3, (int64_t[]){1, 2, 1}, (double[]){0, 0});
    op_input(&o, "WeightList", 0, CD_F32, 2, (int64_t[]){3, 1}, (double[]){0, 0, 1});
    op_input(&o, "WeightList", 1, CD_F32, 2, (int64_t[]){3, 1}, (double[]){0, 0, 0});
    op_input(&o, "WeightList", 2, CD_F32, 1, (int64_t[]){3}, (double[]){0, 0, 0});
    op_input(&o, "WeightList", 3, CD_F32, 1, (int64_t[]){3}, (double[]){0, 0, 0});
    op_input(&o, "SequenceLength", 0, CD_I32, 1, (int64_t[]){2}, (double[]){2, 1});
    op_run(&o);
    double h1 = 0.5 * tanh(1.0), h2 = 0.5 * h1 + 0.5 * tanh(2.0);
    cd_value *out = out_val(&o, "Out", 0), *st = out_val(&o, "State", 0);
    const double want[4] = {h1, h1, h2, 0};
    for (int k = 0; k < 4; k++)
        cr_assert(fabs(cd_value_get(out, k) - want[k]) < 1e-6, "out %d: %.9g want %.9g", k, cd_value_get(out, k),
                  want[k]);
    cr_assert(fabs(cd_value_get(st, 0) - h2) < 1e-6);
    cr_assert(fabs(cd_value_get(st, 1) - h1) < 1e-6);
    op_end(&o);
}

/* ---- values Paddle-Lite computes with, no longer refused (docs/int8.md §1) ---- */

/* A NaN IoU threshold and nms_eta 0 (lite/kernels/host/multiclass_nms_compute.h): a box is kept
 * when overlap <= threshold, false against NaN, so B goes; with threshold 0.9 and eta 0 the
 * threshold drops to 0.9 * 0 after A is kept (eta < 1, threshold > 0.5), so B goes too (with
 * eta 1 it stays: nms.iou_threshold_both_sides_normalized). */
static void nms_eta(one_op *o, double thr, double eta) {
    op_begin(o, "multiclass_nms");
    op_slot(o, "BBoxes", 1, false);
    op_slot(o, "Scores", 1, false);
    op_slot(o, "Out", 1, true);
    attr_f(o, "score_threshold", 0.05);
    attr_i(o, "nms_top_k", -1);
    attr_i(o, "keep_top_k", -1);
    attr_f(o, "nms_threshold", thr);
    attr_f(o, "nms_eta", eta);
    attr_i(o, "background_label", -1);
    attr_b(o, "normalized", true);
    op_finish(o, CD_PREC_FP32);
    op_input(o, "BBoxes", 0, CD_F32, 3, (int64_t[]){1, 2, 4}, (double[]){0, 0, 10, 10, 1, 0, 11, 10});
    op_input(o, "Scores", 0, CD_F32, 3, (int64_t[]){1, 1, 2}, (double[]){0.9, 0.8});
    op_run(o);
}
Test(nms, nan_threshold_and_zero_eta_run) {
    one_op o;
    nms_eta(&o, NAN, 1.0);
    expect_rows(out_val(&o, "Out", 0), 1, 6, (double[]){0, 0.9f, 0, 0, 10, 10}, 0);
    op_end(&o);
    nms_eta(&o, 0.9, 0.0);
    expect_rows(out_val(&o, "Out", 0), 1, 6, (double[]){0, 0.9f, 0, 0, 10, 10}, 0);
    op_end(&o);
    nms_eta(&o, 0.9, 1.0);
    expect_rows(out_val(&o, "Out", 0), 2, 6, (double[]){0, 0.9f, 0, 0, 10, 10, 0, 0.8f, 1, 0, 11, 10}, 0);
    op_end(&o);
}

/* A NaN variance in the attribute: the decoded boxes that use it are NaN, the others as usual. */
Test(box_coder, nan_variance_runs) {
    one_op o;
    box_coder_begin(&o, "decode_center_size");
    attr_b(&o, "box_normalized", false);
    attr_fs(&o, "variance", 4, (double[]){NAN, 0.1, 0.2, 0.2});
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "PriorBox", 0, CD_F32, 2, (int64_t[]){1, 4}, (double[]){0, 0, 4, 2});
    op_input(&o, "TargetBox", 0, CD_F32, 3, (int64_t[]){1, 1, 4}, (double[]){1, -1, 0, log(2.0) / 0.2});
    op_run(&o);
    cd_value *v = out_val(&o, "OutputBox", 0);
    cr_assert(isnan(cd_value_get(v, 0)) && isnan(cd_value_get(v, 2)), "x coordinates use variance[0]: NaN");
    cr_assert(fabs(cd_value_get(v, 1) - (-1.8)) < 2e-6 && fabs(cd_value_get(v, 3) - 3.2) < 2e-6,
              "y coordinates as usual");
    op_end(&o);
}

/* scale_x_y 0: Paddle's centre cx = (sigmoid(tx) * s - 0.5 * (s - 1) + gx) * W / grid becomes
 * (0.5 + gx) * W / grid whatever tx. */
Test(yolo_box, zero_scale_x_y_runs) {
    one_op o;
    yolo_begin(&o);
    attr_f(&o, "scale_x_y", 0.0);
    attr_b(&o, "clip_bbox", false);
    op_finish(&o, CD_PREC_FP32);
    double x[12] = {0};
    x[0] = 5; /* tx of cell 0: no effect with scale_x_y 0 */
    op_input(&o, "X", 0, CD_F32, 4, (int64_t[]){1, 6, 2, 1}, x);
    op_input(&o, "ImgSize", 0, CD_I32, 2, (int64_t[]){1, 2}, (double[]){32, 64});
    op_run(&o);
    cd_value *b = out_val(&o, "Boxes", 0);
    /* cell 0: cx = (0 * 0 + 0.5 + 0) * 64 / 1 = 32; w = 80 -> x0 = -8, x1 = 72 */
    cr_assert(fabs(cd_value_get(b, 0) - (-8)) < 1e-4 && fabs(cd_value_get(b, 2) - 72) < 1e-4, "x0 %g x1 %g",
              cd_value_get(b, 0), cd_value_get(b, 2));
    op_end(&o);
}

/* max_sizes below min_sizes and negative steps: Paddle-Lite computes sqrt(min * max) and centres
 * (cell + offset) * step as they come. */
Test(prior_box, max_below_min_and_negative_step_run) {
    one_op o;
    prior_begin(&o);
    attr_fs(&o, "min_sizes", 1, (double[]){4});
    attr_fs(&o, "max_sizes", 1, (double[]){1});
    attr_fs(&o, "variances", 4, (double[]){0.1, 0.1, 0.2, 0.2});
    attr_f(&o, "step_w", -10);
    attr_f(&o, "step_h", -10);
    op_finish(&o, CD_PREC_FP32);
    op_input(&o, "Input", 0, CD_F32, 4, (int64_t[]){1, 8, 1, 1}, NULL);
    op_input(&o, "Image", 0, CD_F32, 4, (int64_t[]){1, 3, 10, 10}, NULL);
    op_run(&o);
    cd_value *b = out_val(&o, "Boxes", 0);
    /* centre (0.5 * -10) = -5; min box half size 2 -> [-0.7, -0.7, -0.3, -0.3]; max box sqrt(4 * 1) / 2 = 1 */
    const double want[8] = {-0.7, -0.7, -0.3, -0.3, -0.6, -0.6, -0.4, -0.4};
    for (int k = 0; k < 8; k++)
        cr_assert(fabs(cd_value_get(b, k) - want[k]) < 1e-6, "coord %d: %g want %g", k, cd_value_get(b, k), want[k]);
    op_end(&o);
}
