/* Writes ops_more.nb (graph builder + .nb writer, meta_version 2): one model with every op
 * type of the op-coverage additions, for tests/more/test_more_e2e.py.
 *
 *   x [1,8,6,6] -> sin -> scale 0.8 -> asin -> atan -> cos -> tan -> pow 2 ----+
 *                                  \-> acos -> pow (FactorTensor 1.5) ---------+-> elementwise_mul
 *   -> lrn (n 5) -> pixel_shuffle 2 [1,2,12,12] -> grid_sampler (Grid param [1,6,6,2])
 *   -> expand_v2 [2,2,6,6] -> expand [1,1,1,2] -> gather (axis 1, Index [1,0])
 *   -> sync_batch_norm -> reduce_mean (dim 3, keep) = out0, reduce_max (dim 2) = out1,
 *      greater_than (Y [12] param, axis -1) = out2 (bool),
 *      less_equal (Y = assign_value [12]) = out3 (bool), reduce_sum (dim 1) = out4,
 *      tile out1 [1,1,2] -> reduce_min (dim 2) = out5, top_k_v2 (k 3) of out1 = out6 + out7
 *      (int64 indices), unbind (axis 1) of out0 = out8, out9, gather_nd (Index [[1,5],[0,2]]) of
 *      out4 = out10
 * Usage: more_gen OUT.nb */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/nb_writer.h"

static cd_error e;
static cd_graph *g;

static void check(cd_status s, const char *what) {
    if (s) {
        fprintf(stderr, "more_gen: %s: %s\n", what, e.msg);
        exit(1);
    }
}

static void var(const char *name, cd_dtype t, int rank, const int64_t *d) {
    check(cd_graph_declare_var(g, name, t, d, rank, false, &e), name);
}

static void param(const char *name, cd_dtype t, int rank, const int64_t *d, const void *data, size_t nbytes) {
    check(cd_graph_declare_var(g, name, t, d, rank, true, &e), name);
    check(cd_graph_set_param(g, name, t, d, rank, data, nbytes, &e), name);
}

static void op(const char *type) {
    if (!cd_graph_add_op(g, type, &e)) check(e.code ? e.code : CD_E_INTERNAL, type);
}
static void in(const char *slot, const char *n) { check(cd_op_add_input(g, slot, &n, 1, &e), slot); }
static void out(const char *slot, const char *n) { check(cd_op_add_output(g, slot, &n, 1, &e), slot); }
static void a_int(const char *n, int64_t v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_INT, .i = v};
    check(cd_op_add_attr(g, &a, &e), n);
}
static void a_bool(const char *n, bool v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_BOOL, .i = v};
    check(cd_op_add_attr(g, &a, &e), n);
}
static void a_float(const char *n, double v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_FLOAT, .f = v};
    check(cd_op_add_attr(g, &a, &e), n);
}
static void a_str(const char *n, const char *v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_STRING, .s = strdup(v)};
    check(cd_op_add_attr(g, &a, &e), n);
}
static void a_ints(const char *n, int cnt, const int64_t *v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_INTS, .n = cnt, .ints = malloc(sizeof(int64_t) * (size_t)cnt)};
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)cnt);
    check(cd_op_add_attr(g, &a, &e), n);
}

/* unary op X -> Out */
static void un(const char *type, const char *x, const char *y) {
    op(type);
    in("X", x);
    out("Out", y);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: more_gen OUT.nb\n");
        return 2;
    }
    g = cd_graph_new();
    strcpy(g->opt_version, "v2.13-rc");
    g->program_version = 2003002;
    int64_t x4[4] = {1, 8, 6, 6}, ps[4] = {1, 2, 12, 12}, gs[4] = {1, 2, 6, 6}, ev[4] = {2, 2, 6, 6},
            ex[4] = {2, 2, 6, 12}, rm[4] = {2, 2, 6, 1}, rx[3] = {2, 2, 12}, gd[4] = {1, 6, 6, 2}, one[1] = {1},
            two[1] = {2}, twelve[1] = {12}, two2[2] = {2, 2};
    check(cd_graph_declare_var(g, "feed", CD_BOOL, NULL, 0, false, &e), "feed");
    check(cd_graph_declare_var(g, "fetch", CD_BOOL, NULL, 0, false, &e), "fetch");
    const char *act[] = {"x", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10", "t11"};
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++) var(act[i], CD_F32, 4, x4);
    var("lrn_out", CD_F32, 4, x4);
    var("ps_out", CD_F32, 4, ps);
    var("gs_out", CD_F32, 4, gs);
    var("ev_out", CD_F32, 4, ev);
    var("ex_out", CD_F32, 4, ex);
    var("ga_out", CD_F32, 4, ex);
    var("bn_out", CD_F32, 4, ex);
    var("out0", CD_F32, 4, rm);
    var("out1", CD_F32, 3, rx);
    var("out2", CD_BOOL, 4, ex);
    var("out3", CD_BOOL, 4, ex);
    var("av", CD_F32, 1, twelve);
    var("out4", CD_F32, 3, (const int64_t[]){2, 6, 12});
    var("tl", CD_F32, 3, (const int64_t[]){2, 2, 24});
    var("out5", CD_F32, 2, two2);
    var("out6", CD_F32, 3, (const int64_t[]){2, 2, 3});
    var("out7", CD_I64, 3, (const int64_t[]){2, 2, 3});
    var("out8", CD_F32, 3, (const int64_t[]){2, 6, 1});
    var("out9", CD_F32, 3, (const int64_t[]){2, 6, 1});
    var("out10", CD_F32, 2, (const int64_t[]){2, 12});
    /* parameters */
    float grid[72], fac[1] = {1.5f}, y12[12], sc[2] = {1.5f, 0.75f}, bi[2] = {0.1f, -0.2f}, mu[2] = {0.3f, -0.1f},
                    va[2] = {0.5f, 2.0f};
    for (int i = 0; i < 72; i++) grid[i] = (float)(1.2 * sin(0.7 * i + 0.3));
    for (int i = 0; i < 12; i++) y12[i] = (float)(0.2 * cos(1.3 * i));
    int64_t idx[2] = {1, 0};
    param("grid", CD_F32, 4, gd, grid, sizeof grid);
    param("pow_factor", CD_F32, 1, one, fac, sizeof fac);
    param("cmp_y", CD_F32, 1, twelve, y12, sizeof y12);
    param("gather_idx", CD_I64, 1, two, idx, sizeof idx);
    int64_t gnd[4] = {1, 5, 0, 2};
    param("gnd_idx", CD_I64, 2, two2, gnd, sizeof gnd);
    param("bn_scale", CD_F32, 1, two, sc, sizeof sc);
    param("bn_bias", CD_F32, 1, two, bi, sizeof bi);
    param("bn_mean", CD_F32, 1, two, mu, sizeof mu);
    param("bn_var", CD_F32, 1, two, va, sizeof va);

    op("feed");
    in("X", "feed");
    out("Out", "x");
    a_int("col", 0);
    un("sin", "x", "t1");
    un("scale", "t1", "t2");
    a_float("scale", 0.8);
    a_float("bias", 0.0);
    a_bool("bias_after_scale", true);
    un("asin", "t2", "t3");
    un("atan", "t3", "t4");
    un("cos", "t4", "t5");
    un("tan", "t5", "t6");
    un("pow", "t6", "t7");
    a_float("factor", 2.0);
    un("acos", "t2", "t8");
    op("pow");
    in("X", "t8");
    in("FactorTensor", "pow_factor");
    out("Out", "t9");
    a_float("factor", 1.0);
    op("elementwise_mul");
    in("X", "t7");
    in("Y", "t9");
    out("Out", "t10");
    a_int("axis", -1);
    un("lrn", "t10", "lrn_out");
    a_int("n", 5);
    a_float("k", 1.0);
    a_float("alpha", 0.1);
    a_float("beta", 0.75);
    un("pixel_shuffle", "lrn_out", "ps_out");
    a_int("upscale_factor", 2);
    op("grid_sampler");
    in("X", "ps_out");
    in("Grid", "grid");
    out("Output", "gs_out");
    a_bool("align_corners", false);
    a_str("mode", "bilinear");
    a_str("padding_mode", "reflection");
    un("expand_v2", "gs_out", "ev_out");
    a_ints("shape", 4, ev);
    un("expand", "ev_out", "ex_out");
    a_ints("expand_times", 4, (const int64_t[]){1, 1, 1, 2});
    op("gather");
    in("X", "ex_out");
    in("Index", "gather_idx");
    out("Out", "ga_out");
    a_int("axis", 1);
    op("sync_batch_norm");
    in("X", "ga_out");
    in("Scale", "bn_scale");
    in("Bias", "bn_bias");
    in("Mean", "bn_mean");
    in("Variance", "bn_var");
    out("Y", "bn_out");
    a_float("epsilon", 1e-5);
    a_bool("is_test", true);
    a_str("data_layout", "NCHW");
    un("reduce_mean", "bn_out", "out0");
    a_ints("dim", 1, (const int64_t[]){3});
    a_bool("keep_dim", true);
    un("reduce_max", "bn_out", "out1");
    a_ints("dim", 1, (const int64_t[]){2});
    op("greater_than");
    in("X", "bn_out");
    in("Y", "cmp_y");
    out("Out", "out2");
    a_int("axis", -1);
    op("assign_value");
    out("Out", "av");
    a_ints("shape", 1, twelve);
    a_int("dtype", 5);
    {
        cd_attr a = {
            .name = strdup("fp32_values"), .type = CD_ATTR_FLOATS, .n = 12, .floats = malloc(12 * sizeof(double))};
        for (int i = 0; i < 12; i++) a.floats[i] = (float)(0.3 * sin(0.9 * i));
        check(cd_op_add_attr(g, &a, &e), "fp32_values");
    }
    op("less_equal");
    in("X", "bn_out");
    in("Y", "av");
    out("Out", "out3");
    a_int("axis", -1);
    un("reduce_sum", "bn_out", "out4");
    a_ints("dim", 1, (const int64_t[]){1});
    un("tile", "out1", "tl");
    a_ints("repeat_times", 3, (const int64_t[]){1, 1, 2});
    un("reduce_min", "tl", "out5");
    a_ints("dim", 1, (const int64_t[]){2});
    op("top_k_v2");
    in("X", "out1");
    out("Out", "out6");
    out("Indices", "out7");
    a_int("k", 3);
    a_int("axis", -1);
    a_bool("largest", true);
    a_bool("sorted", true);
    op("unbind");
    in("X", "out0");
    {
        const char *u2[] = {"out8", "out9"};
        check(cd_op_add_output(g, "Out", u2, 2, &e), "Out");
    }
    a_int("axis", 1);
    op("gather_nd");
    in("X", "out4");
    in("Index", "gnd_idx");
    out("Out", "out10");
    const char *outs[] = {"out0", "out1", "out2", "out3", "out4", "out5", "out6", "out7", "out8", "out9", "out10"};
    for (int k = 0; k < 11; k++) {
        op("fetch");
        in("X", outs[k]);
        out("Out", "fetch");
        a_int("col", k);
    }
    check(cd_graph_finalize(g, &e), "finalize");
    check(cd_nb_write(g, argv[1], &e), argv[1]);
    cd_graph_free(g);
    (void)x4;
    return 0;
}
