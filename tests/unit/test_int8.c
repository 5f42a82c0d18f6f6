/* int8: the relaxed quantization checks (docs/int8.md "Validation") and the CPU int8 mode
 * (backends/cpu/ops_int8.c), on models made by cldiff's writer and read back by its reader:
 * graph -> cd_nb_write_mem -> cd_nb_load_mem -> plan -> CPU backend, with --int8 dequant
 * (float, dequantized weights) and --int8 arm (integer arithmetic). Expected numbers are
 * worked out by hand in each test. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/executor.h"
#include "model/nb_reader.h"
#include "model/nb_writer.h"

static cd_error err;

static void add_attr(cd_graph *g, cd_attr *a) { cr_assert_eq(cd_op_add_attr(g, a, &err), CD_OK, "%s", err.msg); }
static void attr_i(cd_graph *g, const char *name, cd_attr_type t, int64_t v) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = t;
    a.i = v;
    add_attr(g, &a);
}
static void attr_f(cd_graph *g, const char *name, double v) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = CD_ATTR_FLOAT;
    a.f = v;
    add_attr(g, &a);
}
static void attr_s(cd_graph *g, const char *name, const char *v) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = CD_ATTR_STRING;
    a.s = cd_strdup(v);
    add_attr(g, &a);
}
static void attr_fs(cd_graph *g, const char *name, const double *v, int n) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = CD_ATTR_FLOATS;
    a.n = n;
    a.floats = malloc(sizeof(double) * (size_t)n);
    memcpy(a.floats, v, sizeof(double) * (size_t)n);
    add_attr(g, &a);
}
static void op1(cd_graph *g, const char *type, const char *islot, const char *in, const char *oslot, const char *out) {
    cr_assert_not_null(cd_graph_add_op(g, type, &err), "%s", err.msg);
    cr_assert_eq(cd_op_add_input(g, islot, &in, 1, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_op_add_output(g, oslot, &out, 1, &err), CD_OK, "%s", err.msg);
}

/* x [1,2,1,2] -> conv2d 1x1 (Filter int8 [3,2,1,1], Bias [3]) -> y [1,3,1,2].
 * Filter rows: oc0 (1, 2), oc1 (0, 0) (a channel of zeros: scale 0), oc2 (-3, 4).
 * alias "fp32_out" or "int8_out" (Output0_scale out_s). */
static cd_graph *conv_model(const double *wscale, const char *alias, double in_s, double out_s) {
    cd_graph *g = cd_graph_new();
    int64_t none[1] = {0}, xd[4] = {1, 2, 1, 2}, wd[4] = {3, 2, 1, 1}, bd[1] = {3};
    cd_graph_declare_var(g, "feed", CD_F32, none, 0, false, &err);
    cd_graph_declare_var(g, "fetch", CD_F32, none, 0, false, &err);
    cd_graph_declare_var(g, "x", CD_F32, xd, 4, false, &err);
    cd_graph_declare_var(g, "w", CD_I8, wd, 4, true, &err);
    cd_graph_declare_var(g, "b", CD_F32, bd, 1, true, &err);
    cd_graph_declare_var(g, "y", CD_F32, none, 0, false, &err);
    int8_t q[6] = {1, 2, 0, 0, -3, 4};
    float bias[3] = {0.5f, 0.25f, -1.0f};
    cr_assert_eq(cd_graph_set_param(g, "w", CD_I8, wd, 4, q, 6, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_graph_set_param(g, "b", CD_F32, bd, 1, bias, 12, &err), CD_OK, "%s", err.msg);
    op1(g, "feed", "X", "feed", "Out", "x");
    attr_i(g, "col", CD_ATTR_INT, 0);
    cr_assert_not_null(cd_graph_add_op(g, "conv2d", &err));
    const char *in = "x", *w = "w", *b = "b", *y = "y";
    cd_op_add_input(g, "Input", &in, 1, &err);
    cd_op_add_input(g, "Filter", &w, 1, &err);
    cd_op_add_input(g, "Bias", &b, 1, &err);
    cd_op_add_output(g, "Output", &y, 1, &err);
    attr_fs(g, "Filter0_scale", wscale, 3);
    attr_fs(g, "Input0_scale", &in_s, 1);
    if (!strcmp(alias, "int8_out")) attr_fs(g, "Output0_scale", &out_s, 1);
    attr_i(g, "enable_int8", CD_ATTR_BOOL, 1);
    attr_i(g, "bit_length", CD_ATTR_INT, 8);
    char rec[64];
    snprintf(rec, sizeof rec, "conv2d/%s/4/2/1", alias);
    attr_s(g, "__@kernel_type_attr@__", rec);
    op1(g, "fetch", "X", "y", "Out", "fetch");
    attr_i(g, "col", CD_ATTR_INT, 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    return g;
}

/* x [1,4] -> calib fp32_to_int8 (scale) -> y */
static cd_graph *calib_model(double scale) {
    cd_graph *g = cd_graph_new();
    int64_t none[1] = {0}, xd[2] = {1, 4};
    cd_graph_declare_var(g, "feed", CD_F32, none, 0, false, &err);
    cd_graph_declare_var(g, "fetch", CD_F32, none, 0, false, &err);
    cd_graph_declare_var(g, "x", CD_F32, xd, 2, false, &err);
    cd_graph_declare_var(g, "y", CD_I8, none, 0, false, &err);
    op1(g, "feed", "X", "feed", "Out", "x");
    attr_i(g, "col", CD_ATTR_INT, 0);
    op1(g, "calib", "Input", "x", "Out", "y");
    attr_f(g, "scale", scale);
    attr_s(g, "__@kernel_type_attr@__", "calib/fp32_to_int8/4/2/1");
    op1(g, "fetch", "X", "y", "Out", "fetch");
    attr_i(g, "col", CD_ATTR_INT, 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    return g;
}

typedef struct {
    float v[16];
    int n;
    char kernel[64];
} capture;

static cd_status hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                     cd_error *e) {
    (void)op_index;
    (void)tensor_id;
    (void)e;
    capture *c = user;
    c->n = (int)cd_value_numel(host);
    for (int i = 0; i < c->n && i < 16; i++) c->v[i] = (float)cd_value_get(host, i);
    snprintf(c->kernel, sizeof c->kernel, "%s", rep->kernel);
    return CD_OK;
}

/* Writes g with the writer, reads it back, runs op `op` on the CPU backend; returns status. */
static cd_status run_written(cd_graph *g0, const float *x, int nx, bool arm, int op, capture *cap) {
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(cd_nb_write_mem(g0, &buf, &len, &err), CD_OK, "%s", err.msg);
    cd_graph_free(g0);
    cd_graph *g = NULL;
    cr_assert_eq(cd_nb_load_mem(buf, len, &g, &err), CD_OK, "%s", err.msg);
    free(buf);
    cd_shape s = g->tensors[g->inputs[0]].shape;
    cd_plan plan;
    cd_status st = cd_plan_build(g, &s, CD_PREC_FP32, &plan, &err);
    if (st) {
        cd_graph_free(g);
        return st;
    }
    cd_backend_opts bo = {.prec = CD_PREC_FP32, .threads = 1, .int8_arm = arm};
    cd_backend *b = NULL;
    cr_assert_eq(cd_cpu_backend_open(&bo, &b, &err), CD_OK, "%s", err.msg);
    cd_value in = {.dtype = CD_F32, .shape = s, .data = (void *)x, .nbytes = (size_t)nx * 4};
    bool mask[8] = {0};
    mask[op] = true;
    cd_exec_opts eo = {.probe_mask = mask};
    cd_probe_sink sink = {.user = cap, .hit = hit};
    memset(cap, 0, sizeof *cap);
    st = cd_execute(&plan, b, &in, &eo, &sink, &err);
    cd_backend_close(b);
    cd_plan_free(&plan);
    cd_graph_free(g);
    return st;
}

static const float X[4] = {1.0f, -2.0f, 3.0f, 0.5f}; /* [c0: 1, -2 | c1: 3, 0.5] */

/* The PaddleOCR rec slim case: Filter0_scale[k] = 0 for an all-zero channel. */
Test(int8_validation, zero_weight_scale_runs_and_gives_bias) {
    double ws[3] = {0.5, 0.0, 0.25};
    capture c;
    /* dequant: w = (0.5, 1 | 0, 0 | -0.75, 1); y[oc][p] = sum_ci w[oc][ci] x[ci][p] + b[oc] */
    cr_assert_eq(run_written(conv_model(ws, "fp32_out", 0.5, 1), X, 4, false, 1, &c), CD_OK, "%s", err.msg);
    float want[6] = {0.5f * 1 + 1 * 3 + 0.5f, 0.5f * -2 + 1 * 0.5f + 0.5f, 0.25f, 0.25f,
                     -0.75f * 1 + 3 - 1,      -0.75f * -2 + 0.5f - 1};
    cr_assert_eq(c.n, 6);
    for (int i = 0; i < 6; i++) cr_assert_float_eq(c.v[i], want[i], 1e-6, "dequant %d: %g want %g", i, c.v[i], want[i]);
    /* arm: x quantized with 1/0.5 -> (2, -4 | 6, 1); acc oc0 = (2+12, -4+2) = (14, -2),
     * oc2 = (-6+24, 12+4) = (18, 16); y = acc * (ws * 0.5) + b */
    cr_assert_eq(run_written(conv_model(ws, "fp32_out", 0.5, 1), X, 4, true, 1, &c), CD_OK, "%s", err.msg);
    float want8[6] = {14 * 0.25f + 0.5f, -2 * 0.25f + 0.5f, 0.25f, 0.25f, 18 * 0.125f - 1, 16 * 0.125f - 1};
    cr_assert_str_eq(c.kernel, "conv2d:int8:fp32_out");
    for (int i = 0; i < 6; i++) cr_assert_eq(c.v[i], want8[i], "arm %d: %g want %g", i, c.v[i], want8[i]);
}

Test(int8_validation, negative_weight_scale_negates_the_channel) {
    double ws[3] = {-0.5, 1.0, 0.25};
    capture c;
    cr_assert_eq(run_written(conv_model(ws, "fp32_out", 0.5, 1), X, 4, false, 1, &c), CD_OK, "%s", err.msg);
    cr_assert_float_eq(c.v[0], -0.5f * 1 - 1 * 3 + 0.5f, 1e-6, "%g", c.v[0]);
    cr_assert_eq(run_written(conv_model(ws, "fp32_out", 0.5, 1), X, 4, true, 1, &c), CD_OK, "%s", err.msg);
    cr_assert_eq(c.v[0], 14 * -0.25f + 0.5f, "%g", c.v[0]);
    cr_assert_eq(c.v[1], -2 * -0.25f + 0.5f, "%g", c.v[1]);
}

Test(int8_validation, nan_weight_scale_gives_a_nan_channel) {
    double ws[3] = {0.5, NAN, 0.25};
    capture c;
    cr_assert_eq(run_written(conv_model(ws, "fp32_out", 0.5, 1), X, 4, false, 1, &c), CD_OK, "%s", err.msg);
    cr_assert(isnan(c.v[2]) && isnan(c.v[3]) && !isnan(c.v[0]) && !isnan(c.v[4]));
    /* int8 out: NaN converts to -127 (fcmge/bif before fcvtas), carried as -127 * out_s */
    cr_assert_eq(run_written(conv_model(ws, "int8_out", 0.5, 0.5), X, 4, true, 1, &c), CD_OK, "%s", err.msg);
    cr_assert_str_eq(c.kernel, "conv2d:int8:int8_out");
    cr_assert_eq(c.v[2], -127 * 0.5f, "%g", c.v[2]);
    /* oc0: acc 14 -> 14 * (0.5*0.5/0.5) + 0.5/0.5 = 8 -> q 8 -> 4.0 */
    cr_assert_eq(c.v[0], 4.0f, "%g", c.v[0]);
}

Test(int8_validation, calib_scale_zero_and_negative) {
    capture c;
    float x[4] = {1.0f, -2.0f, 0.0f, 300.0f};
    for (int arm = 0; arm < 2; arm++) {
        /* scale 0: x * (1/0) = +-inf or NaN -> +-127 or -127, read back as q * 0 = 0 */
        cr_assert_eq(run_written(calib_model(0.0), x, 4, arm, 1, &c), CD_OK, "%s", err.msg);
        for (int i = 0; i < 4; i++) cr_assert_eq(c.v[i], 0.0f, "scale 0 arm=%d %d: %g", arm, i, c.v[i]);
        /* scale -0.5: q = round(x * -2) clamped = (-2, 4, 0, -127), read back q * -0.5 */
        cr_assert_eq(run_written(calib_model(-0.5), x, 4, arm, 1, &c), CD_OK, "%s", err.msg);
        float want[4] = {1.0f, -2.0f, 0.0f, 63.5f};
        for (int i = 0; i < 4; i++) cr_assert_eq(c.v[i], want[i], "scale -0.5 arm=%d %d: %g", arm, i, c.v[i]);
    }
}

/* Still refused, as Paddle-Lite refuses it (conv_gemmlike.cc: LOG(FATAL) "weights scale size
 * must equal to filter size"): a scale list that fits neither 1 nor Cout. */
Test(int8_validation, scale_count_mismatch_still_refused) {
    double ws[3] = {0.5, 0.5, 0.5};
    cd_graph *g = conv_model(ws, "fp32_out", 0.5, 1);
    /* replace the 3 scales by 2 */
    cd_op *op = &g->ops[1];
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, "Filter0_scale")) op->attrs[i].n = 2;
    capture c;
    cr_assert_eq(run_written(g, X, 4, true, 1, &c), CD_E_MODEL);
    cr_assert(strstr(err.msg, "has 2 scales in Filter0_scale but 3 channels"), "%s", err.msg);
}

/* Ties round away from zero and the range is [-127, 127] (type_trans.cc fp32_to_int8). */
Test(int8_arm, calib_rounding_and_clamp) {
    capture c;
    float x[4] = {0.25f, -0.25f, 1000.0f, -1000.0f}; /* x / 0.5 = 0.5, -0.5, 2000, -2000 */
    cr_assert_eq(run_written(calib_model(0.5), x, 4, true, 1, &c), CD_OK, "%s", err.msg);
    cr_assert_str_eq(c.kernel, "calib:int8:fp32_to_int8");
    float want[4] = {0.5f, -0.5f, 63.5f, -63.5f};
    for (int i = 0; i < 4; i++) cr_assert_eq(c.v[i], want[i], "%d: %g", i, c.v[i]);
}

/* bit_length is not read by Paddle-Lite's int8 conv/fc (conv_op.h, fc_op.cc): a value that does
 * not match the INT8 record (here 16) no longer stops the model; the numbers are those of 8. */
Test(int8_validation, bit_length_is_not_checked) {
    double ws[3] = {0.5, 1.0, 0.25};
    for (int arm = 0; arm < 2; arm++) {
        cd_graph *g = conv_model(ws, "fp32_out", 0.5, 1);
        cd_op *op = &g->ops[1];
        for (int i = 0; i < op->n_attr; i++)
            if (!strcmp(op->attrs[i].name, "bit_length")) op->attrs[i].i = 16;
        capture c;
        cr_assert_eq(run_written(g, X, 4, arm, 1, &c), CD_OK, "%s", err.msg);
        cr_assert_float_eq(c.v[0], arm ? 14 * 0.25f + 0.5f : 0.5f * 1 + 1 * 3 + 0.5f, 1e-6, "%g", c.v[0]);
    }
}

/* The int8 bound family (compare/bounds.c CD_FAM_INT8, docs/int8.md §4). */
#include "compare/bounds.h"
Test(int8_bounds, family) {
    cd_bound_spec s = {.fam = CD_FAM_INT8,
                       .K = 9,
                       .lipschitz = 1,
                       .safety = CD_BOUND_SAFETY,
                       .ref = {.u = CD_U32},
                       .b = {.u = CD_U32}};
    cr_assert_str_eq(cd_bound_family_name(CD_FAM_INT8), "int8");
    /* float output: only rounding, a few u of the magnitude */
    double b = cd_bound_elem(&s, 10.0, 20.0, NAN, 10.0);
    cr_assert(b > 0 && b < 1e-4, "%g", b);
    /* int8 output: half a quantum more; on the +-127 rail the check is one-sided (beyond the
     * rail bounds nothing, inside the same bound: tests/unit/test_bounds_nonfinite.c) */
    s.quantum = 0.5;
    b = cd_bound_elem(&s, 10.0, 20.0, NAN, 10.0);
    cr_assert(b >= 0.25 && b < 0.2501, "%g", b);
    b = cd_bound_elem(&s, 127 * 0.5, 70.0, NAN, 63.5);
    cr_assert(b >= 0.25 && b < 0.2502, "%g", b);
    /* an input off the int8 grid: abs_terms is added (times the activation's Lipschitz constant) */
    s.quantum = 0;
    s.abs_terms = 0.125;
    s.lipschitz = 2;
    b = cd_bound_elem(&s, 10.0, 20.0, NAN, 10.0);
    cr_assert(b >= 0.25 && b < 0.2501, "%g", b);
    /* an error of one quantum at an interior element is a fault */
    s.abs_terms = 0;
    s.lipschitz = 1;
    s.quantum = 0.5;
    float ref[2] = {1.0f, 2.0f}, val[2] = {1.2f, 2.6f};
    cd_local_result r;
    cd_local_check(&s, ref, val, NULL, NULL, 2, -1, -1, &r);
    cr_assert(!r.pass && r.exceed == 1 && r.worst == 1, "pass %d exceed %lld worst %lld", r.pass, (long long)r.exceed,
              (long long)r.worst);
}

/* The vector conversion (cd_q8_vec: clamp, move 0.49999997 away from zero, truncate) against the
 * scalar rule (cd_q8_int: truncate, compare the fraction with one half) on every float within
 * 2^14 ulps of each integer and each half-integer of [-128, 128] (where the two could differ),
 * the specials, and 4 million random bit patterns. (All 2^32 inputs agree; that took 5 s once.) */
#include "backends/cpu/int8_quant.h"
static int q8_vec1(float v) {
    cd_fq x = (cd_fq){0} + v;
    cd_iq q;
    cd_q8_vec(&x, &q);
    for (int i = 1; i < CD_QL; i++)
        if (q[i] != q[0]) return 999; /* every lane must do the same */
    return q[0];
}
Test(int8_arm, vector_rounding_equals_scalar_rule) {
    long bad = 0, n = 0;
    for (int k = -256; k <= 256; k++) {
        float c = (float)k * 0.5f;
        uint32_t b;
        memcpy(&b, &c, 4);
        for (int32_t d = -(1 << 14); d <= (1 << 14); d++) {
            uint32_t u = b + (uint32_t)d;
            float v;
            memcpy(&v, &u, 4);
            n++;
            if (q8_vec1(v) != cd_q8_int(v) && bad++ < 5)
                cr_log_error("%a: vector %d scalar %d", (double)v, q8_vec1(v), cd_q8_int(v));
        }
    }
    const float sp[] = {NAN,     -NAN,   INFINITY, -INFINITY,   0.0f,         -0.0f, 1e-45f, -1e-45f, 127.5f,
                        -127.5f, 126.5f, -126.5f,  0.49999997f, -0.49999997f, 0.5f,  -0.5f,  1e30f,   -1e30f};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++, n++)
        if (q8_vec1(sp[i]) != cd_q8_int(sp[i]) && bad++ < 5) cr_log_error("special %a", (double)sp[i]);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 4000000; i++, n++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint32_t u = (uint32_t)(s >> 16);
        float v;
        memcpy(&v, &u, 4);
        if (q8_vec1(v) != cd_q8_int(v) && bad++ < 5) cr_log_error("random %a", (double)v);
    }
    cr_expect_eq(bad, 0, "%ld of %ld inputs differ", bad, n);
    cr_expect_eq(cd_q8_int(NAN), -127);
    cr_expect_eq(cd_q8_int(2.5f), 3);
    cr_expect_eq(cd_q8_int(-2.5f), -3);
}
