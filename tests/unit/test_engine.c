/* Engine tests: planner errors (unsupported ops listed before anything runs, dynamic input
 * dims, overrides), parameter conversion and dequantization, fp16 runs, executor probe
 * order with reused variable names, interruption, activation helpers. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/executor.h"
#include "engine/forcing.h"
#include "engine/params.h"
#include "util/fp16.h"

static cd_error err;

static void attr_f(cd_graph *g, const char *name, double v) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = CD_ATTR_FLOAT;
    a.f = v;
    cr_assert_eq(cd_op_add_attr(g, &a, &err), CD_OK, "%s", err.msg);
}
static void attr_i(cd_graph *g, const char *name, cd_attr_type t, int64_t v) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = t;
    a.i = v;
    cr_assert_eq(cd_op_add_attr(g, &a, &err), CD_OK, "%s", err.msg);
}
static void attr_fs(cd_graph *g, const char *name, const double *v, int n) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = CD_ATTR_FLOATS;
    a.n = n;
    a.floats = malloc(sizeof(double) * (size_t)n);
    memcpy(a.floats, v, sizeof(double) * (size_t)n);
    cr_assert_eq(cd_op_add_attr(g, &a, &err), CD_OK, "%s", err.msg);
}
/* op with one input slot and one output slot */
static void op1(cd_graph *g, const char *type, const char *islot, const char *in, const char *oslot, const char *out) {
    cr_assert_not_null(cd_graph_add_op(g, type, &err), "%s", err.msg);
    cr_assert_eq(cd_op_add_input(g, islot, &in, 1, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_op_add_output(g, oslot, &out, 1, &err), CD_OK, "%s", err.msg);
}
static void feed(cd_graph *g, const char *name, int col) {
    op1(g, "feed", "X", "feed", "Out", name);
    attr_i(g, "col", CD_ATTR_INT, col);
}
static void fetch(cd_graph *g, const char *name, int col) {
    op1(g, "fetch", "X", name, "Out", "fetch");
    attr_i(g, "col", CD_ATTR_INT, col);
}
static cd_graph *new_graph(const char *in_name, const int64_t *dims, int rank) {
    cd_graph *g = cd_graph_new();
    int64_t none[1] = {0};
    cr_assert_eq(cd_graph_declare_var(g, "feed", CD_F32, none, 0, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "fetch", CD_F32, none, 0, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, in_name, CD_F32, dims, rank, false, &err), CD_OK);
    return g;
}

Test(plan, unknown_ops_listed_before_anything_runs) {
    int64_t d[2] = {1, 4};
    cd_graph *g = new_graph("x", d, 2);
    int64_t none[1] = {0};
    cd_graph_declare_var(g, "a", CD_F32, none, 0, false, &err);
    cd_graph_declare_var(g, "b", CD_F32, none, 0, false, &err);
    cd_graph_declare_var(g, "c", CD_F32, none, 0, false, &err);
    feed(g, "x", 0);
    op1(g, "frobnicate", "X", "x", "Out", "a");
    op1(g, "relu", "X", "a", "Out", "b");
    op1(g, "warp_drive", "X", "b", "Out", "c");
    fetch(g, "c", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    cd_plan plan;
    cd_shape s = {2, {1, 4}};
    cr_assert_eq(cd_plan_build(g, &s, CD_PREC_FP32, &plan, &err), CD_E_UNSUPPORTED);
    cr_assert(strstr(err.msg, "2 ops"), "%s", err.msg);
    cr_assert(strstr(err.msg, "#1 frobnicate_0 (frobnicate)"), "%s", err.msg);
    cr_assert(strstr(err.msg, "#3 warp_drive_0 (warp_drive)"), "%s", err.msg);
    cr_assert(strstr(err.msg, "nothing was run"), "%s", err.msg);
    cr_assert_null(strstr(err.msg, "relu"), "%s", err.msg);
    cd_graph_free(g);
}

Test(plan, dynamic_dims_need_overrides) {
    int64_t d[4] = {-1, 3, -1, -1};
    cd_graph *g = new_graph("image", d, 4);
    feed(g, "image", 0);
    fetch(g, "image", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    cd_shape s[1];
    char notice[256];
    cr_assert_eq(cd_resolve_input_shapes(g, NULL, 0, s, notice, sizeof notice, &err), CD_E_USAGE);
    cr_assert(strstr(err.msg, "input 'image' declared [-1,3,-1,-1]: dims 2,3 are dynamic"), "%s", err.msg);
    cr_assert(strstr(err.msg, "--shape image=1,3,<d2>,<d3>"), "%s", err.msg);
    const char *ov[] = {"image=2,3,48,192"};
    cr_assert_eq(cd_resolve_input_shapes(g, ov, 1, s, notice, sizeof notice, &err), CD_OK, "%s", err.msg);
    cd_shape want = {4, {2, 3, 48, 192}};
    cr_assert(cd_shape_eq(&s[0], &want));
    const char *bad[] = {"imgae=1,3,8,8"};
    cr_assert_eq(cd_resolve_input_shapes(g, bad, 1, s, notice, sizeof notice, &err), CD_E_USAGE);
    cr_assert(strstr(err.msg, "'imgae', which is not a model input; inputs are: 'image'"), "%s", err.msg);
    const char *zero[] = {"image=1,3,0,8"};
    cr_assert_eq(cd_resolve_input_shapes(g, zero, 1, s, notice, sizeof notice, &err), CD_E_USAGE);
    cr_assert(strstr(err.msg, "must be in 1..2^31"), "%s", err.msg);
    const char *junk[] = {"image=1;3"};
    cr_assert_eq(cd_resolve_input_shapes(g, junk, 1, s, notice, sizeof notice, &err), CD_E_USAGE);
    cd_graph_free(g);
}

Test(plan, leading_batch_becomes_one_with_notice) {
    int64_t d[4] = {-1, 3, 8, 8};
    cd_graph *g = new_graph("x", d, 4);
    feed(g, "x", 0);
    fetch(g, "x", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    cd_shape s[1];
    char notice[256];
    cr_assert_eq(cd_resolve_input_shapes(g, NULL, 0, s, notice, sizeof notice, &err), CD_OK, "%s", err.msg);
    cd_shape want = {4, {1, 3, 8, 8}};
    cr_assert(cd_shape_eq(&s[0], &want));
    cr_assert(strstr(notice, "input 'x': declared [-1,3,8,8], using batch 1"), "%s", notice);
    cd_graph_free(g);
}

Test(plan, shape_mismatch_is_a_warning_and_lifetimes) {
    int64_t d[2] = {1, 4}, wrong[2] = {1, 5};
    cd_graph *g = new_graph("x", d, 2);
    cd_graph_declare_var(g, "y", CD_F32, wrong, 2, false, &err);
    feed(g, "x", 0);
    op1(g, "relu", "X", "x", "Out", "y");
    fetch(g, "y", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    cd_plan plan;
    cd_shape s = {2, {1, 4}};
    cr_assert_eq(cd_plan_build(g, &s, CD_PREC_FP32, &plan, &err), CD_OK, "%s", err.msg);
    cr_assert(g->warnings &&
                  strstr(g->warnings,
                         "op #1 relu_0 (relu): output 'y' has inferred shape [1,4] but the "
                         "model declares [1,5]"),
              "%s", g->warnings ? g->warnings : "");
    int x = g->inputs[0], y = g->outputs[0];
    cr_assert_eq(plan.last_use[x], 1);
    cr_assert_eq(plan.last_use[y], g->n_ops);
    cr_assert_eq(plan.act_bytes_peak, 32, "peak %lld", (long long)plan.act_bytes_peak); /* x and y live together */
    cd_plan_free(&plan);
    cd_graph_free(g);
}

Test(plan, bad_input_shape_is_usage_error) {
    int64_t d[2] = {1, 4};
    cd_graph *g = new_graph("x", d, 2);
    feed(g, "x", 0);
    fetch(g, "x", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    cd_plan plan;
    cd_shape s = {2, {1, -4}};
    cr_assert_eq(cd_plan_build(g, &s, CD_PREC_FP32, &plan, &err), CD_E_USAGE);
    cr_assert(strstr(err.msg, "input 0 'x'"), "%s", err.msg);
    cd_graph_free(g);
}

/* ---- params ---- */

Test(params, int8_conv_filter_per_channel_and_fp16_conversion) {
    int64_t d[4] = {1, 2, 1, 1}, fd[4] = {2, 2, 1, 1}, bd[1] = {2};
    cd_graph *g = new_graph("x", d, 4);
    int64_t none[1] = {0};
    cd_graph_declare_var(g, "w", CD_F32, fd, 4, true, &err); /* VarDesc says FP32: trust the record */
    cd_graph_declare_var(g, "b", CD_F32, bd, 1, true, &err);
    cd_graph_declare_var(g, "y", CD_F32, none, 0, false, &err);
    int8_t q[4] = {1, -2, 127, -127};
    float bias[2] = {0.1f, 65504.0f * 2};
    cr_assert_eq(cd_graph_set_param(g, "w", CD_I8, fd, 4, q, 4, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_graph_set_param(g, "b", CD_F32, bd, 1, bias, 8, &err), CD_OK, "%s", err.msg);
    feed(g, "x", 0);
    cr_assert_not_null(cd_graph_add_op(g, "conv2d", &err));
    const char *in = "x", *w = "w", *b = "b", *y = "y";
    cd_op_add_input(g, "Input", &in, 1, &err);
    cd_op_add_input(g, "Filter", &w, 1, &err);
    cd_op_add_input(g, "Bias", &b, 1, &err);
    cd_op_add_output(g, "Output", &y, 1, &err);
    double sc[2] = {0.5, 0.25};
    attr_fs(g, "Filter0_scale", sc, 2);
    attr_i(g, "enable_int8", CD_ATTR_BOOL, 1);
    fetch(g, "y", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    cd_value *meta = calloc((size_t)g->n_tensors, sizeof *meta);
    int64_t pb;
    bool dq;
    cr_assert_eq(cd_params_prepare(g, CD_PREC_FP32, meta, &pb, &dq, &err), CD_OK, "%s", err.msg);
    cr_assert(dq);
    int wid = cd_op_in(&g->ops[1], "Filter", 0), bid = cd_op_in(&g->ops[1], "Bias", 0);
    cr_assert_eq(meta[wid].dtype, CD_F32);
    const float *wf = meta[wid].data;
    cr_assert(wf[0] == 0.5f && wf[1] == -1.0f && wf[2] == 127 * 0.25f && wf[3] == -127 * 0.25f);
    cr_assert_eq(pb, 16 + 8);
    for (int i = 0; i < g->n_tensors; i++) cd_value_release(&meta[i]);
    memset(meta, 0, sizeof *meta * (size_t)g->n_tensors);
    cr_assert_eq(cd_params_prepare(g, CD_PREC_FP16, meta, &pb, &dq, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(meta[bid].dtype, CD_F16);
    const uint16_t *bh = meta[bid].data;
    cr_assert_eq(bh[0], cd_float_to_half(0.1f));
    cr_assert_eq(bh[0], 0x2e66); /* 0.1 rounds to 0x2e66 in binary16 */
    cr_assert_eq(bh[1], 0x7c00); /* beyond 65504 overflows to +inf */
    const uint16_t *wh = meta[wid].data;
    cr_assert_eq(wh[2], cd_float_to_half(31.75f));
    for (int i = 0; i < g->n_tensors; i++) cd_value_release(&meta[i]);
    free(meta);
    cd_graph_free(g);
}

/* Builds x -> <op with int8 weight param> and returns the prepare status. */
static cd_status quant_case(const char *type, const char *wslot, const int64_t *wd, int wr, const char *attr,
                            const double *sc, int ns, float *out, int nout) {
    int64_t d[2] = {1, 4};
    cd_graph *g = new_graph("x", d, 2);
    int64_t none[1] = {0};
    cd_graph_declare_var(g, "w", CD_F32, wd, wr, true, &err);
    cd_graph_declare_var(g, "y", CD_F32, none, 0, false, &err);
    int8_t q[64];
    for (int i = 0; i < 64; i++) q[i] = (int8_t)(i + 1);
    int64_t n = 1;
    for (int i = 0; i < wr; i++) n *= wd[i];
    cd_graph_set_param(g, "w", CD_I8, wd, wr, q, (size_t)n, &err);
    feed(g, "x", 0);
    cd_graph_add_op(g, type, &err);
    const char *in = "x", *w = "w", *y = "y";
    cd_op_add_input(g, !strcmp(wslot, "Filter") ? "Input" : "X", &in, 1, &err);
    cd_op_add_input(g, wslot, &w, 1, &err);
    cd_op_add_output(g, "Out", &y, 1, &err);
    if (attr) attr_fs(g, attr, sc, ns);
    if (!strcmp(type, "conv2d_transpose")) attr_i(g, "groups", CD_ATTR_INT, 2);
    fetch(g, "y", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    cd_value *meta = calloc((size_t)g->n_tensors, sizeof *meta);
    int64_t pb;
    bool dq;
    cd_status st = cd_params_prepare(g, CD_PREC_FP32, meta, &pb, &dq, &err);
    if (!st) {
        int wid = cd_op_in(&g->ops[1], wslot, 0);
        memcpy(out, meta[wid].data, sizeof(float) * (size_t)nout);
    }
    for (int i = 0; i < g->n_tensors; i++) cd_value_release(&meta[i]);
    free(meta);
    cd_graph_free(g);
    return st;
}

Test(params, dequant_axes) {
    float f[16];
    /* fc W [K=2, N=3]: scale per column */
    int64_t w23[2] = {2, 3};
    double s3[3] = {1, 10, 100};
    cr_assert_eq(quant_case("fc", "W", w23, 2, "W0_scale", s3, 3, f, 6), CD_OK, "%s", err.msg);
    float want_fc[6] = {1, 20, 300, 4, 50, 600};
    for (int i = 0; i < 6; i++) cr_assert_eq(f[i], want_fc[i], "fc %d: %g", i, f[i]);
    /* weight-only mul: <name>_quant_scale */
    cr_assert_eq(quant_case("mul", "Y", w23, 2, "w_quant_scale", s3, 3, f, 6), CD_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++) cr_assert_eq(f[i], want_fc[i]);
    /* conv2d_transpose Filter [Cin=2, Cout/g=2, 1, 1], groups 2 -> 4 output channels */
    int64_t wt[4] = {2, 2, 1, 1};
    double s4[4] = {1, 2, 3, 4};
    cr_assert_eq(quant_case("conv2d_transpose", "Filter", wt, 4, "Filter0_scale", s4, 4, f, 4), CD_OK, "%s", err.msg);
    float want_t[4] = {1 * 1, 2 * 2, 3 * 3, 4 * 4}; /* ic0 -> group 0 (oc 0,1); ic1 -> group 1 (oc 2,3) */
    for (int i = 0; i < 4; i++) cr_assert_eq(f[i], want_t[i], "convT %d: %g", i, f[i]);
    /* wrong scale count */
    double s2[2] = {1, 2};
    cr_assert_eq(quant_case("fc", "W", w23, 2, "W0_scale", s2, 2, f, 6), CD_E_MODEL);
    cr_assert(strstr(err.msg, "has 2 scales in W0_scale but 3 channels"), "%s", err.msg);
    /* Scale values are not checked (Paddle-Lite uses them as they are, docs/int8.md): a zero
     * scale dequantizes its channel to 0, a negative one negates it, NaN gives NaN weights. */
    double sneg[1] = {-1};
    cr_assert_eq(quant_case("fc", "W", w23, 2, "W0_scale", sneg, 1, f, 6), CD_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++) cr_assert_eq(f[i], -(float)(i + 1), "negative scale %d: %g", i, f[i]);
    double szero[3] = {1, 0, 100};
    cr_assert_eq(quant_case("fc", "W", w23, 2, "W0_scale", szero, 3, f, 6), CD_OK, "%s", err.msg);
    float want_z[6] = {1, 0, 300, 4, 0, 600};
    for (int i = 0; i < 6; i++) cr_assert_eq(f[i], want_z[i], "zero scale %d: %g", i, f[i]);
    double snan[1] = {NAN};
    cr_assert_eq(quant_case("fc", "W", w23, 2, "W0_scale", snan, 1, f, 6), CD_OK, "%s", err.msg);
    for (int i = 0; i < 6; i++) cr_assert(isnan(f[i]), "nan scale %d: %g", i, f[i]);
    /* no scale at all */
    cr_assert_eq(quant_case("fc", "W", w23, 2, NULL, NULL, 0, f, 6), CD_E_MODEL);
    cr_assert(strstr(err.msg, "no op that reads it carries a dequantization scale"), "%s", err.msg);
}

/* ---- executor ---- */

typedef struct {
    int n;
    int op[8], tid[8];
    float v[8][4];
    cd_dtype dt[8];
} capture;

static cd_status hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                     cd_error *e) {
    capture *c = user;
    cr_assert_lt(c->n, 8);
    c->op[c->n] = op_index;
    c->tid[c->n] = tensor_id;
    c->dt[c->n] = host->dtype;
    for (int i = 0; i < 4 && i < cd_value_numel(host); i++) c->v[c->n][i] = (float)cd_value_get(host, i);
    cr_assert_str_eq(rep->where, "cpu");
    cr_assert_geq(rep->elapsed_us, 0);
    c->n++;
    return CD_OK;
}

/* x -> scale*2 -> t -> scale*2 -> t -> scale*2 -> t: one name written three times. */
static cd_graph *reuse_graph(void) {
    int64_t d[2] = {1, 4}, none[1] = {0};
    cd_graph *g = new_graph("x", d, 2);
    cd_graph_declare_var(g, "t", CD_F32, none, 0, false, &err);
    feed(g, "x", 0);
    const char *src = "x";
    for (int i = 0; i < 3; i++) {
        op1(g, "scale", "X", src, "Out", "t");
        attr_f(g, "scale", 2.0);
        attr_f(g, "bias", 0.0);
        attr_i(g, "bias_after_scale", CD_ATTR_BOOL, 1);
        src = "t";
    }
    fetch(g, "t", 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    return g;
}

static void run_reuse(cd_precision prec, capture *cap, volatile int *stop, cd_status want) {
    cd_graph *g = reuse_graph();
    cd_plan plan;
    cd_shape s = {2, {1, 4}};
    cr_assert_eq(cd_plan_build(g, &s, prec, &plan, &err), CD_OK, "%s", err.msg);
    cd_backend *b;
    cd_backend_opts bo = {.prec = prec, .threads = 2};
    cr_assert_eq(cd_cpu_backend_open(&bo, &b, &err), CD_OK, "%s", err.msg);
    bool mask[5] = {false, true, true, true, false};
    cd_exec_opts eo = {.probe_mask = mask, .stop_flag = stop};
    cd_probe_sink sink = {.user = cap, .hit = hit};
    float xin[4] = {0.1f, -1.5f, 3.0f, 1e-3f};
    cd_value in = {.dtype = CD_F32, .shape = s, .data = xin, .nbytes = 16};
    cr_assert_eq(cd_execute(&plan, b, &in, &eo, &sink, &err), want, "%s", err.msg);
    if (!want) {
        cd_value out;
        cr_assert_eq(b->vt->read(b, g->outputs[0], &out, &err), CD_OK, "%s", err.msg);
        cr_assert_eq(cd_value_get(&out, 2), 24.0);
        cd_value_release(&out);
        char dev[128], drv[128];
        b->vt->describe(b, dev, sizeof dev, drv, sizeof drv);
        cr_assert(strstr(dev, "(2 threads)"), "%s", dev);
    }
    cd_backend_close(b);
    cd_plan_free(&plan);
    cd_graph_free(g);
}

Test(executor, probes_each_write_of_a_reused_name) {
    capture cap = {0};
    run_reuse(CD_PREC_FP32, &cap, NULL, CD_OK);
    cr_assert_eq(cap.n, 3);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(cap.op[k], k + 1);
        cr_assert_eq(cap.dt[k], CD_F32);
        float m = (float)(2 << k);
        cr_assert_eq(cap.v[k][0], 0.1f * m, "capture %d: %g", k, cap.v[k][0]);
        cr_assert_eq(cap.v[k][1], -1.5f * m);
    }
    cr_assert_neq(cap.tid[0], cap.tid[1]);
    cr_assert_neq(cap.tid[1], cap.tid[2]);
}

Test(executor, fp16_run_keeps_half_bits) {
    capture cap = {0};
    run_reuse(CD_PREC_FP16, &cap, NULL, CD_OK);
    cr_assert_eq(cap.n, 3);
    cr_assert_eq(cap.dt[0], CD_F16);
    /* 0.1 -> half 0x2e66 = 0.0999755859375; doubling is exact in half */
    cr_assert_eq(cap.v[0][0], cd_half_to_float(0x2e66) * 2);
    cr_assert_eq(cap.v[2][0], cd_half_to_float(0x2e66) * 8);
    cr_assert_eq(cap.v[2][3], cd_round_half(1e-3f) * 8);
}

Test(executor, stop_flag_interrupts_between_ops) {
    capture cap = {0};
    volatile int stop = 1;
    run_reuse(CD_PREC_FP32, &cap, &stop, CD_E_INTERRUPTED);
    cr_assert(strstr(err.msg, "interrupted before op #0"), "%s", err.msg);
    cr_assert_eq(cap.n, 0);
}

/* The planned activation pool (backends/cpu/backend_cpu.c pool_plan) gives tensors whose
 * lifetimes do not meet the same range: in reuse_graph x (read by op 1 only) and the second t
 * (written by op 2) share one. A run in another order must not let them collide: here every op
 * runs and nothing is released, so x is still held when op 2 writes; its planned range is busy
 * and it takes a block of its own. x keeps its values and every output is right. */
Test(executor, planned_pool_keeps_live_tensors_apart) {
    cd_graph *g = reuse_graph();
    cd_plan plan;
    cd_shape s = {2, {1, 4}};
    cr_assert_eq(cd_plan_build(g, &s, CD_PREC_FP32, &plan, &err), CD_OK, "%s", err.msg);
    cd_backend *b;
    cd_backend_opts bo = {.prec = CD_PREC_FP32, .threads = 1};
    cr_assert_eq(cd_cpu_backend_open(&bo, &b, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(b->vt->prepare(b, &plan, &err), CD_OK, "%s", err.msg);
    float xin[4] = {0.1f, -1.5f, 3.0f, 1e-3f};
    cd_value in = {.dtype = CD_F32, .shape = s, .data = xin, .nbytes = 16};
    cr_assert_eq(b->vt->set_input(b, g->inputs[0], &in, &err), CD_OK, "%s", err.msg);
    float m = 1.0f;
    for (int i = 0; i < g->n_ops; i++) {
        cd_op_report rep;
        memset(&rep, 0, sizeof rep);
        cr_assert_eq(b->vt->run_op(b, i, &rep, &err), CD_OK, "op %d: %s", i, err.msg);
        if (strcmp(g->ops[i].type, "scale")) continue;
        m *= 2.0f;
        const cd_op *op = &g->ops[i];
        cd_value out, x;
        cr_assert_eq(b->vt->read(b, op->out[0].ids[0], &out, &err), CD_OK, "%s", err.msg);
        cr_assert_eq(b->vt->read(b, g->inputs[0], &x, &err), CD_OK, "%s", err.msg);
        for (int k = 0; k < 4; k++) {
            cr_assert_eq(cd_value_get(&out, k), xin[k] * m, "op %d value %d: %g", i, k, cd_value_get(&out, k));
            cr_assert_eq(cd_value_get(&x, k), xin[k], "op %d: x[%d] overwritten: %g", i, k, cd_value_get(&x, k));
        }
        cd_value_release(&out);
        cd_value_release(&x);
    }
    cr_assert_eq(m, 8.0f);
    cd_backend_close(b);
    cd_plan_free(&plan);
    cd_graph_free(g);
}

Test(executor, wrong_input_shape) {
    cd_graph *g = reuse_graph();
    cd_plan plan;
    cd_shape s = {2, {1, 4}}, other = {2, {2, 2}};
    cr_assert_eq(cd_plan_build(g, &s, CD_PREC_FP32, &plan, &err), CD_OK, "%s", err.msg);
    cd_backend *b;
    cd_backend_opts bo = {.prec = CD_PREC_FP32, .threads = 1};
    cd_cpu_backend_open(&bo, &b, &err);
    float xin[4] = {0};
    cd_value in = {.dtype = CD_F32, .shape = other, .data = xin, .nbytes = 16};
    cr_assert_eq(cd_execute(&plan, b, &in, NULL, NULL, &err), CD_E_MODEL);
    cr_assert(strstr(err.msg, "has shape [2,2] but the plan was built for [1,4]"), "%s", err.msg);
    cd_backend_close(b);
    cd_plan_free(&plan);
    cd_graph_free(g);
}

/* ---- activations ---- */

Test(act, apply_and_parse) {
    cd_op op = {.type = "conv2d", .name = "conv2d_0"};
    cd_attr attrs[3] = {{.name = "with_act", .type = CD_ATTR_BOOL, .i = 1},
                        {.name = "act_type", .type = CD_ATTR_STRING, .s = "relu6"},
                        {.name = "fuse_brelu_threshold", .type = CD_ATTR_FLOAT, .f = 4.0}};
    op.attrs = attrs;
    op.n_attr = 3;
    cd_op_ctx c = {.op = &op, .op_index = 7, .err = &err};
    cd_act a;
    cr_assert_eq(cd_act_from_conv(&c, &a), CD_OK, "%s", err.msg);
    cr_assert_eq(a.kind, CD_ACT_RELU6);
    cr_assert_eq(cd_act_apply(&a, 5.0f), 4.0f);
    cr_assert_eq(cd_act_apply(&a, -5.0f), 0.0f);
    cr_assert(isnan(cd_act_apply(&a, NAN)));
    attrs[0].i = 0; /* with_act false: nothing, even with act_type set */
    cr_assert_eq(cd_act_from_conv(&c, &a), CD_OK);
    cr_assert_eq(a.kind, CD_ACT_NONE);
    attrs[0].i = 1;
    attrs[1].s = "mystery";
    cr_assert_eq(cd_act_from_conv(&c, &a), CD_E_UNSUPPORTED);
    cr_assert(strstr(err.msg, "op #7 conv2d_0 (conv2d): unknown fused activation 'mystery'"), "%s", err.msg);
    cr_assert_eq(cd_act_from_name(&c, "hard_swish", &a), CD_OK);
    cr_assert_eq(cd_act_apply(&a, 1.0f), 1.0f * 4.0f / 6.0f);
    cr_assert_eq(cd_act_apply(&a, -4.0f), -0.0f);
    cr_assert_eq(cd_act_from_name(&c, "hard_sigmoid", &a), CD_OK);
    cr_assert_eq(cd_act_apply(&a, 10.0f), 1.0f);
    cr_assert_eq(cd_act_apply(&a, 0.0f), 0.5f);
    cr_assert_eq(cd_act_from_name(&c, "leaky_relu", &a), CD_OK);
    cr_assert_eq(cd_act_apply(&a, -1.0f), -0.02f);
    cr_assert_eq(cd_act_from_name(&c, "gelu", &a), CD_OK);
    cr_assert_float_eq(cd_act_apply(&a, 1.0f), 0.8413447460685429f, 1e-6);
    a.a = 1; /* tanh approximation */
    cr_assert_float_eq(cd_act_apply(&a, 1.0f), 0.8411919906082768f, 1e-6);
    cr_assert_eq(cd_act_from_name(&c, "swish", &a), CD_OK);
    cr_assert_float_eq(cd_act_apply(&a, 2.0f), 2.0f / (1.0f + expf(-2.0f)), 1e-7);
    cd_attr fa[2] = {{.name = "activation_type", .type = CD_ATTR_STRING, .s = "relu6"},
                     {.name = "alpha", .type = CD_ATTR_FLOAT, .f = 3.0}};
    cd_op fc = {.type = "fc", .name = "fc_0", .attrs = fa, .n_attr = 2};
    c.op = &fc;
    cr_assert_eq(cd_act_from_op(&c, "activation_type", &a), CD_OK);
    cr_assert_eq(a.kind, CD_ACT_RELU6);
    cr_assert_eq(a.a, 3.0f);
    cr_assert_str_eq(cd_act_name(CD_ACT_HARD_SWISH), "hard_swish");
}

Test(registry, lookup_and_no_duplicates) {
    cr_assert_null(cd_op_registry_error(), "%s", cd_op_registry_error());
    cr_assert_not_null(cd_op_find("relu"));
    cr_assert_null(cd_op_find("no_such_op"));
    const cd_op_def *const *all;
    int n = cd_op_all(&all);
    cr_assert_gt(n, 10);
    for (int i = 1; i < n; i++) cr_assert_lt(strcmp(all[i - 1]->type, all[i]->type), 0);
}

Test(value, get_set_roundtrip) {
    cd_value v = {.dtype = CD_I8, .shape = {1, {3}}};
    cr_assert_eq(cd_value_alloc(&v, &err), CD_OK);
    cd_value_set(&v, 0, 300.0);
    cd_value_set(&v, 1, -300.0);
    cd_value_set(&v, 2, NAN);
    cr_assert_eq(cd_value_get(&v, 0), 127);
    cr_assert_eq(cd_value_get(&v, 1), -128);
    cr_assert_eq(cd_value_get(&v, 2), 0);
    cd_value_release(&v);
    cd_value h = {.dtype = CD_F16, .shape = {2, {1, 2}}};
    cr_assert_eq(cd_value_alloc(&h, &err), CD_OK);
    cd_value_set(&h, 1, 65520.0);
    cr_assert(isinf(cd_value_get(&h, 1)));
    cr_assert_eq(cd_value_get(&h, 0), 0.0);
    cd_value_release(&h);
    cd_value bad = {.dtype = CD_F32, .shape = {2, {-1, 2}}};
    cr_assert_eq(cd_value_alloc(&bad, &err), CD_E_MODEL);
}

/* The shared forcing record (cd_forcing_new_shared): a child forked before the values were put
 * reads them once told (a pipe), from memory and from the scratch file alike; a record made
 * with cd_forcing_new is not shared (the child would see nothing). */
static int shared_child_check(cd_forcing *f, int rd, const float *want, int n) {
    char go;
    if (read(rd, &go, 1) != 1) return 10;
    int bad = 0;
    for (int id = 0; id < 2; id++) {
        cd_value v;
        cd_error e;
        cd_err_clear(&e);
        if (!cd_forcing_has(f, id) || cd_forcing_get(f, id, CD_F32, false, &v, &e)) return 20 + id;
        if (cd_value_numel(&v) != n || memcmp(v.data, want + id * n, (size_t)n * sizeof(float))) bad = 30 + id;
        cd_value_release(&v);
    }
    return bad;
}

static void shared_case(const char *budget) {
    setenv("CLDIFF_SCRATCH_MEM", budget, 1);
    cd_forcing *f = NULL;
    cd_error e;
    cd_err_clear(&e);
    cr_assert_eq(cd_forcing_new_shared("/tmp", 4, &f, &e), CD_OK, "%s", e.msg);
    cr_assert(cd_forcing_is_shared(f));
    enum { N = 1000 };
    static float vals[2 * N];
    for (int i = 0; i < 2 * N; i++) vals[i] = (float)i * 0.25f - 7.0f;
    int p[2];
    cr_assert_eq(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(p[1]);
        _exit(shared_child_check(f, p[0], vals, N));
    }
    close(p[0]);
    for (int id = 0; id < 2; id++) {
        cd_value v = {
            .dtype = CD_F32, .shape = {.rank = 1, .d = {N}}, .nbytes = N * sizeof(float), .data = vals + id * N};
        cr_assert_eq(cd_forcing_put(f, id, &v, &e), CD_OK, "%s", e.msg);
    }
    cr_assert_eq(write(p[1], "g", 1), 1);
    close(p[1]);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child saw status %d (budget %s)", WEXITSTATUS(st), budget);
    cd_forcing_free(f);
    unsetenv("CLDIFF_SCRATCH_MEM");
}

Test(forcing, shared_record_seen_by_a_child_forked_before) {
    shared_case("1000000"); /* both values in the shared memory */
    shared_case("5000");    /* the first in memory, the second in the scratch file */
    shared_case("0");       /* both in the scratch file */
}

Test(forcing, plain_record_not_shared) {
    cd_forcing *f = NULL;
    cd_error e;
    cd_err_clear(&e);
    cr_assert_eq(cd_forcing_new("/tmp", 2, &f, &e), CD_OK, "%s", e.msg);
    cr_expect(!cd_forcing_is_shared(f));
    cd_forcing_free(f);
}
