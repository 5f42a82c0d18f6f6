/* Generates the synthetic test models in testdata/ with the graph builder and the .nb
 * writer (meta_version 2), from a fixed seed so the files are reproducible:
 *   mobilenet_tiny.nb  input x [1,3,64,64]: conv+relu6 (fused), depthwise conv, batch_norm,
 *                      1x1 conv, in-place hard_swish, elementwise_add (axis 1), max pool,
 *                      two-branch concat, global avg pool, reshape2, fc, softmax.
 *   multi_input.nb     inputs a [1,3,16,16] (col 0) and b [1,8] (col 1, fed first),
 *                      conv, elementwise_mul with axis 0, relu, pool; two outputs.
 *   lstm_rec.nb        a text recognizer's conv + bidirectional LSTM head (see lstm_rec).
 * Weights are He-scaled (uniform, variance 2/fan_in) so activations stay O(1).
 * Usage: cldiff_gen_testdata [OUTDIR]   (default: testdata) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/graph.h"
#include "model/nb_writer.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* xorshift64*, uniform in [0,1) */
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static cd_error err;
static cd_graph *g;

static void check(cd_status st) {
    if (st) { fprintf(stderr, "gen_testdata: %s\n", err.msg); exit(1); }
}

static void var(const char *name, int rank, const int64_t *dims) {
    check(cd_graph_declare_var(g, name, CD_F32, dims, rank, false, &err));
}

static void param(const char *name, int rank, const int64_t *dims, float *v) {
    check(cd_graph_declare_var(g, name, CD_F32, dims, rank, true, &err));
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    check(cd_graph_set_param(g, name, CD_F32, dims, rank, v, n * 4, &err));
}

/* He-uniform weights: U(-a, a), a = sqrt(6 / fan_in). */
static void he_param(const char *name, int rank, const int64_t *dims, int64_t fan_in) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    float *v = malloc(n * 4);
    double a = sqrt(6.0 / (double)fan_in);
    for (size_t i = 0; i < n; i++) v[i] = (float)((urand() * 2 - 1) * a);
    param(name, rank, dims, v);
    free(v);
}

static void range_param(const char *name, int64_t n, double lo, double hi) {
    float *v = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * urand());
    int64_t d[1] = {n};
    param(name, 1, d, v);
    free(v);
}

static void op(const char *type) {
    if (!cd_graph_add_op(g, type, &err)) check(err.code ? err.code : CD_E_INTERNAL);
}
static void in(const char *slot, const char *n) { check(cd_op_add_input(g, slot, &n, 1, &err)); }
static void out(const char *slot, const char *n) { check(cd_op_add_output(g, slot, &n, 1, &err)); }
static void a_int(const char *n, int64_t v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_INT, .i = v};
    check(cd_op_add_attr(g, &a, &err));
}
static void a_bool(const char *n, bool v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_BOOL, .i = v};
    check(cd_op_add_attr(g, &a, &err));
}
static void a_float(const char *n, float v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_FLOAT, .f = v};
    check(cd_op_add_attr(g, &a, &err));
}
static void a_str(const char *n, const char *v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_STRING, .s = strdup(v)};
    check(cd_op_add_attr(g, &a, &err));
}
static void a_ints(const char *n, int cnt, const int64_t *v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_INTS, .n = cnt};
    a.ints = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
    memcpy(a.ints, v, sizeof(int64_t) * (size_t)cnt);
    check(cd_op_add_attr(g, &a, &err));
}
/* Kernel record: ARM float NCHW for compute ops, Host/any/any for feed, fetch, reshape. */
static void kernel(const char *type, bool host) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s/def/%s", type, host ? "1/4/2" : "4/1/1");
    a_str("__@kernel_type_attr@__", buf);
}

static void feed(const char *name, int col) {
    op("feed");
    in("X", "feed");
    out("Out", name);
    kernel("feed", true);
    a_int("col", col);
}
static void fetch(const char *name, int col) {
    op("fetch");
    in("X", name);
    out("Out", "fetch");
    kernel("fetch", true);
    a_int("col", col);
}

static void conv(const char *type, const char *x, const char *w, const char *b, const char *y, int stride, int pad,
                 int groups, const char *act) {
    op(type);
    if (b) in("Bias", b);
    in("Filter", w);
    in("Input", x);
    out("Output", y);
    kernel(type, false);
    int64_t s[2] = {stride, stride}, p[2] = {pad, pad}, d[2] = {1, 1};
    a_ints("dilations", 2, d);
    a_int("groups", groups);
    a_ints("paddings", 2, p);
    a_str("padding_algorithm", "EXPLICIT");
    a_ints("strides", 2, s);
    if (act) {
        a_bool("with_act", true);
        a_str("act_type", act);
        if (!strcmp(act, "relu6")) a_float("fuse_brelu_threshold", 6.0f);
    }
}

static void start(void) {
    g = cd_graph_new();
    if (!g) { fprintf(stderr, "gen_testdata: out of memory\n"); exit(1); }
    strcpy(g->opt_version, "v2.13-rc");
    g->program_version = 2003002;
    check(cd_graph_declare_var(g, "feed", CD_BOOL, NULL, 0, false, &err));
    check(cd_graph_declare_var(g, "fetch", CD_BOOL, NULL, 0, false, &err));
}

static void finish(const char *dir, const char *file) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    check(cd_graph_finalize(g, &err));
    check(cd_nb_write(g, path, &err));
    printf("wrote %s (%d ops, %d tensors)\n", path, g->n_ops, g->n_tensors);
    cd_graph_free(g);
    g = NULL;
}

static void mobilenet_tiny(const char *dir) {
    start();
    int64_t xd[4] = {1, 3, 64, 64};
    var("x", 4, xd);
    int64_t c1d[4] = {1, 16, 32, 32}, pwd[4] = {1, 32, 32, 32}, p1d[4] = {1, 32, 16, 16};
    int64_t bd[4] = {1, 8, 16, 16}, catd[4] = {1, 16, 16, 16}, gpd[4] = {1, 16, 1, 1};
    int64_t rsd[2] = {1, 16}, xsd[5] = {0, 1, 16, 1, 1}, fcd[2] = {1, 10};
    var("conv1.tmp", 4, c1d);
    var("dw.tmp", 4, c1d);
    var("bn.tmp", 4, c1d);
    var("pw.tmp", 4, pwd); /* written by the 1x1 conv and again, in place, by hard_swish */
    var("add.tmp", 4, pwd);
    var("pool.tmp", 4, p1d);
    var("b1.tmp", 4, bd);
    var("b2.tmp", 4, bd);
    var("concat.tmp", 4, catd);
    var("gap.tmp", 4, gpd);
    var("reshape.tmp", 2, rsd);
    var("reshape.xshape", 5, xsd);
    var("fc.tmp", 2, fcd);
    var("softmax.tmp", 2, fcd);

    int64_t w1[4] = {16, 3, 3, 3}, wdw[4] = {16, 1, 3, 3}, wpw[4] = {32, 16, 1, 1};
    int64_t wb1[4] = {8, 32, 1, 1}, wb2[4] = {8, 32, 3, 3}, wfc[2] = {16, 10};
    he_param("conv1.w", 4, w1, 27);
    range_param("conv1.b", 16, -0.1, 0.1);
    he_param("dw.w", 4, wdw, 9);
    range_param("dw.b", 16, -0.1, 0.1);
    range_param("bn.scale", 16, 0.8, 1.2);
    range_param("bn.bias", 16, -0.2, 0.2);
    range_param("bn.mean", 16, -0.5, 0.5);
    range_param("bn.var", 16, 0.5, 2.0);
    he_param("pw.w", 4, wpw, 16);
    range_param("add.y", 32, -0.3, 0.3);
    he_param("b1.w", 4, wb1, 32);
    range_param("b1.b", 8, -0.1, 0.1);
    he_param("b2.w", 4, wb2, 32 * 9);
    range_param("b2.b", 8, -0.1, 0.1);
    he_param("fc.w", 2, wfc, 16);
    range_param("fc.b", 10, -0.1, 0.1);

    feed("x", 0);
    conv("conv2d", "x", "conv1.w", "conv1.b", "conv1.tmp", 2, 1, 1, "relu6");
    conv("depthwise_conv2d", "conv1.tmp", "dw.w", "dw.b", "dw.tmp", 1, 1, 16, NULL);

    op("batch_norm");
    in("Bias", "bn.bias");
    in("Mean", "bn.mean");
    in("Scale", "bn.scale");
    in("Variance", "bn.var");
    in("X", "dw.tmp");
    out("Y", "bn.tmp");
    kernel("batch_norm", false);
    a_str("data_layout", "NCHW");
    a_float("epsilon", 1e-5f);
    a_bool("is_test", true);
    a_float("momentum", 0.9f);

    conv("conv2d", "bn.tmp", "pw.w", NULL, "pw.tmp", 1, 0, 1, NULL);

    op("hard_swish");
    in("X", "pw.tmp");
    out("Out", "pw.tmp");
    kernel("hard_swish", false);
    a_float("offset", 3.0f);
    a_float("scale", 6.0f);
    a_float("threshold", 6.0f);

    op("elementwise_add");
    in("X", "pw.tmp");
    in("Y", "add.y");
    out("Out", "add.tmp");
    kernel("elementwise_add", false);
    a_int("axis", 1);

    int64_t k2[2] = {2, 2}, p0[2] = {0, 0};
    op("pool2d");
    in("X", "add.tmp");
    out("Out", "pool.tmp");
    kernel("pool2d", false);
    a_bool("adaptive", false);
    a_bool("ceil_mode", false);
    a_bool("exclusive", true);
    a_bool("global_pooling", false);
    a_ints("ksize", 2, k2);
    a_ints("paddings", 2, p0);
    a_str("pooling_type", "max");
    a_ints("strides", 2, k2);

    conv("conv2d", "pool.tmp", "b1.w", "b1.b", "b1.tmp", 1, 0, 1, "relu");
    conv("conv2d", "pool.tmp", "b2.w", "b2.b", "b2.tmp", 1, 1, 1, "relu6");

    op("concat");
    const char *cx[2] = {"b1.tmp", "b2.tmp"};
    check(cd_op_add_input(g, "X", cx, 2, &err));
    out("Out", "concat.tmp");
    kernel("concat", false);
    a_int("axis", 1);

    int64_t k1[2] = {1, 1};
    op("pool2d");
    in("X", "concat.tmp");
    out("Out", "gap.tmp");
    kernel("pool2d", false);
    a_bool("adaptive", false);
    a_bool("ceil_mode", false);
    a_bool("exclusive", true);
    a_bool("global_pooling", true);
    a_ints("ksize", 2, k1);
    a_ints("paddings", 2, p0);
    a_str("pooling_type", "avg");
    a_ints("strides", 2, k1);

    int64_t shp[2] = {1, 16};
    op("reshape2");
    in("X", "gap.tmp");
    out("Out", "reshape.tmp");
    out("XShape", "reshape.xshape");
    kernel("reshape2", true);
    a_ints("shape", 2, shp);

    op("fc");
    in("Bias", "fc.b");
    in("Input", "reshape.tmp");
    in("W", "fc.w");
    out("Out", "fc.tmp");
    kernel("fc", false);
    a_str("activation_type", "");
    a_int("in_num_col_dims", 1);
    a_str("op_type", "mul");

    op("softmax");
    in("X", "fc.tmp");
    out("Out", "softmax.tmp");
    kernel("softmax", false);
    a_int("axis", -1);

    fetch("softmax.tmp", 0);
    finish(dir, "mobilenet_tiny.nb");
}

static void multi_input(const char *dir) {
    start();
    int64_t ad[4] = {1, 3, 16, 16}, bd[2] = {1, 8}, cd4[4] = {1, 8, 16, 16}, pd[4] = {1, 8, 1, 1};
    var("a", 4, ad);
    var("b", 2, bd);
    var("conv.tmp", 4, cd4);
    var("mul.tmp", 4, cd4);
    var("relu.tmp", 4, cd4);
    var("pool.tmp", 4, pd);
    int64_t wd[4] = {8, 3, 3, 3};
    he_param("conv.w", 4, wd, 27);
    range_param("conv.b", 8, -0.1, 0.1);

    feed("b", 1); /* fed first, but it is input #1: col order, not op order, decides */
    feed("a", 0);
    conv("conv2d", "a", "conv.w", "conv.b", "conv.tmp", 1, 1, 1, NULL);

    op("elementwise_mul");
    in("X", "conv.tmp");
    in("Y", "b");
    out("Out", "mul.tmp");
    kernel("elementwise_mul", false);
    a_int("axis", 0);

    op("relu");
    in("X", "mul.tmp");
    out("Out", "relu.tmp");
    kernel("relu", false);

    int64_t k1[2] = {1, 1}, p0[2] = {0, 0};
    op("pool2d");
    in("X", "relu.tmp");
    out("Out", "pool.tmp");
    kernel("pool2d", false);
    a_bool("adaptive", false);
    a_bool("ceil_mode", false);
    a_bool("exclusive", true);
    a_bool("global_pooling", true);
    a_ints("ksize", 2, k1);
    a_ints("paddings", 2, p0);
    a_str("pooling_type", "avg");
    a_ints("strides", 2, k1);

    fetch("pool.tmp", 0);
    fetch("relu.tmp", 1);
    finish(dir, "multi_input.nb");
}

/* int8 matmuls as Paddle-Lite's ARM int8 kernels see them: x [1,8,32] -> calib fp32_to_int8
 * (scale 0.02) -> matmul_v2 int8 (Y an INT8 weight [32,16], per-column Y0_scale, alpha 0.5,
 * kernel Matmul_int8_f32: precision int8, float output) -> relu -> out (output 0) -> matmul (v1)
 * int8 straight on that float tensor (no calib: the kernel quantizes it with X0_scale, as the
 * cls slim file's convs do; Y [16,4], one Y0_scale) -> out2 (output 1). For the int8 placement,
 * oracle and local-bound checks (tests/e2e/test_int8_verdicts.py, int8_models, docs/int8.md). */
static void int8_scales(const char *name, int n, double lo, double hi) {
    cd_attr a = {.name = strdup(name), .type = CD_ATTR_FLOATS, .n = n};
    a.floats = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++) a.floats[i] = (float)(lo + (hi - lo) * urand());
    check(cd_op_add_attr(g, &a, &err));
}
static void int8_matmul(const char *dir) {
    start();
    int64_t xd[3] = {1, 8, 32}, wd[2] = {32, 16}, w2d[2] = {16, 4};
    var("x", 3, xd);
    var("xq", 3, xd);
    var("mm.tmp", 0, NULL);
    var("out", 0, NULL);
    var("out2", 0, NULL);
    check(cd_graph_declare_var(g, "mm2.w", CD_I8, w2d, 2, true, &err));
    check(cd_graph_declare_var(g, "mm.w", CD_I8, wd, 2, true, &err));
    int8_t q[32 * 16];
    for (int i = 0; i < 32 * 16; i++) q[i] = (int8_t)(urand() * 255.0 - 127.0);
    check(cd_graph_set_param(g, "mm.w", CD_I8, wd, 2, q, sizeof q, &err));
    for (int i = 0; i < 16 * 4; i++) q[i] = (int8_t)(urand() * 255.0 - 127.0);
    check(cd_graph_set_param(g, "mm2.w", CD_I8, w2d, 2, q, 16 * 4, &err));
    feed("x", 0);
    op("calib");
    in("Input", "x");
    out("Out", "xq");
    a_str("__@kernel_type_attr@__", "calib/fp32_to_int8/4/2/1");
    a_float("scale", 0.02f);
    op("matmul_v2");
    in("X", "xq");
    in("Y", "mm.w");
    out("Out", "mm.tmp");
    a_str("__@kernel_type_attr@__", "matmul_v2/def/4/2/1");
    a_bool("trans_x", false);
    a_bool("trans_y", false);
    a_float("alpha", 0.5f);
    a_bool("enable_int8", true);
    a_int("bit_length", 8);
    int8_scales("X0_scale", 1, 0.02, 0.02);
    int8_scales("Y0_scale", 16, 0.004, 0.008);
    op("relu");
    in("X", "mm.tmp");
    out("Out", "out");
    kernel("relu", false);
    op("matmul");
    in("X", "out");
    in("Y", "mm2.w");
    out("Out", "out2");
    a_str("__@kernel_type_attr@__", "matmul/def/4/2/1");
    a_bool("transpose_X", false);
    a_bool("transpose_Y", false);
    a_float("alpha", 1.0f);
    a_bool("enable_int8", true);
    int8_scales("X0_scale", 1, 0.03, 0.03);
    int8_scales("Y0_scale", 1, 0.01, 0.01);
    fetch("out", 0);
    fetch("out2", 1);
    finish(dir, "int8_matmul.nb");
}

static void a_floats(const char *n, int cnt, const double *v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_FLOATS, .n = cnt};
    a.floats = malloc(sizeof(double) * (size_t)(cnt ? cnt : 1));
    memcpy(a.floats, v, sizeof(double) * (size_t)cnt);
    check(cd_op_add_attr(g, &a, &err));
}
static void unary(const char *type, const char *x, const char *y) {
    op(type);
    in("X", x);
    out("Out", y);
    kernel(type, false);
}

/* Attribute values Paddle-Lite computes with and cldiff used to refuse (docs/int8.md §1): one
 * branch per relaxed rule from x [1,4,2,3], each its own output, so that a NaN in one does not
 * reach the others. Every branch computes the same bits on cldiff's CPU and OpenCL sides
 * (tests/e2e/test_lenient_attrs.py checks the values and a clean verdict). */
static void lenient_attrs(const char *dir) {
    start();
    int64_t xd[4] = {1, 4, 2, 3}, wd[2] = {3, 2}, cd1[1] = {4};
    var("x", 4, xd);
    const char *outs[] = {"softplus.out", "clip.out", "dropout.out", "dropout2.out", "hswish.out", "leaky.out",
                          "matmul.out", "emul.out", "bn.out", "lrn.out", "prior.boxes", "prior.var", "calib.out"};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) var(outs[i], 0, NULL);
    float w[6] = {1, -2, 0.5f, 0, -1, 3}, sc[4] = {1, 1, 1, 1}, bi[4] = {0, 0, 0, 0}, mu[4] = {0, 0, 0, 0},
          va[4] = {0.5f, 0.5f, 2.0f, 2.0f};
    param("mm.w", 2, wd, w);
    param("bn.scale", 1, cd1, sc);
    param("bn.bias", 1, cd1, bi);
    param("bn.mean", 1, cd1, mu);
    param("bn.var", 1, cd1, va);
    feed("x", 0);
    unary("softplus", "x", "softplus.out"); /* beta 0: log(2) / 0 = +Inf everywhere */
    a_float("beta", 0.0f);
    a_float("threshold", 20.0f);
    unary("clip", "x", "clip.out"); /* min > max: min(max(x, 1), -1) = -1 everywhere */
    a_float("min", 1.0f);
    a_float("max", -1.0f);
    unary("dropout", "x", "dropout.out"); /* prob 1.5: x * (1 - 1.5) */
    a_float("dropout_prob", 1.5f);
    a_str("dropout_implementation", "downgrade_in_infer");
    a_bool("is_test", true);
    unary("dropout", "x", "dropout2.out"); /* an unknown implementation scales, as Paddle-Lite's */
    a_float("dropout_prob", 0.25f);
    a_str("dropout_implementation", "bogus");
    a_bool("is_test", true);
    unary("hard_swish", "x", "hswish.out"); /* scale 0: x * min(max(x + 3, 0), 6) / 0 */
    a_float("threshold", 6.0f);
    a_float("scale", 0.0f);
    a_float("offset", 3.0f);
    unary("leaky_relu", "x", "leaky.out"); /* alpha NaN: NaN where x < 0 */
    a_float("alpha", NAN);
    op("matmul_v2"); /* alpha +Inf: +-Inf, NaN where a sum is 0 */
    in("X", "x");
    in("Y", "mm.w");
    out("Out", "matmul.out");
    kernel("matmul_v2", false);
    a_bool("trans_x", false);
    a_bool("trans_y", false);
    a_float("alpha", INFINITY);
    op("elementwise_mul"); /* fuse_scale with scale NaN */
    in("X", "x");
    in("Y", "x");
    out("Out", "emul.out");
    kernel("elementwise_mul", false);
    a_int("axis", -1);
    a_bool("fuse_scale", true);
    a_float("scale", NAN);
    a_float("bias", 0.0f);
    op("batch_norm"); /* epsilon -1: NaN on the channels whose variance is below 1 */
    in("X", "x");
    in("Scale", "bn.scale");
    in("Bias", "bn.bias");
    in("Mean", "bn.mean");
    in("Variance", "bn.var");
    out("Y", "bn.out");
    kernel("batch_norm", false);
    a_float("epsilon", -1.0f);
    a_bool("is_test", true);
    op("lrn"); /* alpha +Inf */
    in("X", "x");
    out("Out", "lrn.out");
    kernel("lrn", false);
    a_int("n", 3);
    a_float("k", 1.0f);
    a_float("alpha", INFINITY);
    a_float("beta", 0.75f);
    op("prior_box"); /* max_sizes below min_sizes, a zero aspect ratio, negative steps */
    in("Input", "x");
    in("Image", "x");
    out("Boxes", "prior.boxes");
    out("Variances", "prior.var");
    kernel("prior_box", true);
    a_floats("min_sizes", 1, (double[]){2.0});
    a_floats("max_sizes", 1, (double[]){1.0});
    a_floats("aspect_ratios", 1, (double[]){0.0});
    a_floats("variances", 4, (double[]){0.1, 0.1, 0.2, 0.2});
    a_bool("flip", true);
    a_bool("clip", false);
    a_float("step_w", -1.0f);
    a_float("step_h", -1.0f);
    a_float("offset", 0.5f);
    op("calib"); /* scale 0: q(x * (1/0)) * 0 = +-0 (on the OpenCL side with --int8-placement gpu) */
    in("Input", "x");
    out("Out", "calib.out");
    a_str("__@kernel_type_attr@__", "calib/fp32_to_int8/4/2/1");
    a_float("scale", 0.0f);
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) fetch(outs[i], (int)i);
    finish(dir, "lenient_attrs.nb");
}

/* lstm_rec.nb: a text recognizer's head, like PP-OCR's CRNN (issue 20): input x [1,3,32,100],
 * conv 3->16 (relu), 2x2 max pool, conv 16->32 (relu), 2x2 max pool -> [1,32,8,25], reshape2
 * to [1,256,25], transpose2 to time-major [25,1,256], a bidirectional one-layer LSTM (`rnn`,
 * hidden 48, h0 = c0 = 0 from fill_constant) -> [25,1,96], matmul_v2 with [96,37] and a
 * softmax over the 37 classes. Weights as Paddle initializes an LSTM: U(-1/sqrt(H), 1/sqrt(H)).
 * With correct kernels the fp16 run's only rnn error is half storage of the gate
 * projections, cell and hidden state between steps; before the "recurrent" family it was
 * judged a KERNEL FAULT at rnn_0 under "generic K=1" (tests/e2e/test_lstm_rec.py). */
static void lstm_rec(const char *dir) {
    rng = 0x2545f4914f6cdd1dull;   /* its own seed: the other models' bytes do not move */
    start();
    enum { T = 25, H = 48, I = 256, C = 37 };
    int64_t xd[4] = {1, 3, 32, 100}, c1[4] = {1, 16, 32, 100}, p1[4] = {1, 16, 16, 50}, c2[4] = {1, 32, 16, 50},
            p2[4] = {1, 32, 8, 25}, rs[3] = {1, I, T}, rsx[5] = {0, 1, 32, 8, 25}, tr[3] = {T, 1, I},
            trx[4] = {0, 1, I, T}, st[3] = {2, 1, H}, yo[3] = {T, 1, 2 * H}, lo[3] = {T, 1, C};
    var("x", 4, xd);
    var("conv1.tmp", 4, c1);
    var("pool1.tmp", 4, p1);
    var("conv2.tmp", 4, c2);
    var("pool2.tmp", 4, p2);
    var("seq.tmp", 3, rs);
    var("seq.xshape", 5, rsx);
    var("tm.tmp", 3, tr);
    var("tm.xshape", 4, trx);
    var("h0", 3, st);
    var("c0", 3, st);
    var("lstm.out", 3, yo);
    var("lstm.h", 3, st);
    var("lstm.c", 3, st);
    var("logits", 3, lo);
    var("probs", 3, lo);
    int64_t w1[4] = {16, 3, 3, 3}, w2[4] = {32, 16, 3, 3}, wih[2] = {4 * H, I}, whh[2] = {4 * H, H},
            wfc[2] = {2 * H, C};
    he_param("conv1.w", 4, w1, 27);
    range_param("conv1.b", 16, -0.1, 0.1);
    he_param("conv2.w", 4, w2, 16 * 9);
    range_param("conv2.b", 32, -0.1, 0.1);
    const double a = 1.0 / sqrt((double)H);
    static const char *const wn[8] = {"lstm.wih.fw", "lstm.whh.fw", "lstm.wih.bw", "lstm.whh.bw",
                                      "lstm.bih.fw", "lstm.bhh.fw", "lstm.bih.bw", "lstm.bhh.bw"};
    for (int k = 0; k < 8; k++) {
        int64_t n = k < 4 ? (k % 2 ? 4 * H * H : 4 * H * I) : 4 * H;
        float *v = malloc((size_t)n * 4);
        for (int64_t i = 0; i < n; i++) v[i] = (float)((urand() * 2 - 1) * a);
        if (k < 4) param(wn[k], 2, k % 2 ? whh : wih, v);
        else { int64_t d1[1] = {n}; param(wn[k], 1, d1, v); }
        free(v);
    }
    he_param("fc.w", 2, wfc, 2 * H);

    feed("x", 0);
    conv("conv2d", "x", "conv1.w", "conv1.b", "conv1.tmp", 1, 1, 1, "relu");
    int64_t k2[2] = {2, 2}, p0[2] = {0, 0};
    const char *pin[2] = {"conv1.tmp", "conv2.tmp"}, *pout[2] = {"pool1.tmp", "pool2.tmp"};
    for (int k = 0; k < 2; k++) {
        if (k) conv("conv2d", "pool1.tmp", "conv2.w", "conv2.b", "conv2.tmp", 1, 1, 1, "relu");
        op("pool2d");
        in("X", pin[k]);
        out("Out", pout[k]);
        kernel("pool2d", false);
        a_bool("adaptive", false);
        a_bool("ceil_mode", false);
        a_bool("exclusive", true);
        a_bool("global_pooling", false);
        a_ints("ksize", 2, k2);
        a_ints("paddings", 2, p0);
        a_str("pooling_type", "max");
        a_ints("strides", 2, k2);
    }
    op("reshape2");
    in("X", "pool2.tmp");
    out("Out", "seq.tmp");
    out("XShape", "seq.xshape");
    kernel("reshape2", true);
    a_ints("shape", 3, (int64_t[]){0, I, T});
    op("transpose2");
    in("X", "seq.tmp");
    out("Out", "tm.tmp");
    out("XShape", "tm.xshape");
    kernel("transpose2", false);
    a_ints("axis", 3, (int64_t[]){2, 0, 1});
    const char *sn[2] = {"h0", "c0"};
    for (int k = 0; k < 2; k++) {
        op("fill_constant");
        out("Out", sn[k]);
        kernel("fill_constant", true);
        a_int("dtype", 5);
        a_ints("shape", 3, st);
        a_float("value", 0.0f);
        a_str("str_value", "");
    }
    op("rnn");
    in("Input", "tm.tmp");
    const char *pre[2] = {"h0", "c0"};
    check(cd_op_add_input(g, "PreState", pre, 2, &err));
    check(cd_op_add_input(g, "WeightList", (const char **)wn, 8, &err));
    out("Out", "lstm.out");
    const char *so[2] = {"lstm.h", "lstm.c"};
    check(cd_op_add_output(g, "State", so, 2, &err));
    kernel("rnn", false);
    a_str("mode", "LSTM");
    a_int("num_layers", 1);
    a_int("hidden_size", H);
    a_int("input_size", I);
    a_bool("is_bidirec", true);
    a_float("dropout_prob", 0.0f);
    a_bool("is_test", true);
    op("matmul_v2");
    in("X", "lstm.out");
    in("Y", "fc.w");
    out("Out", "logits");
    kernel("matmul_v2", false);
    a_bool("trans_x", false);
    a_bool("trans_y", false);
    op("softmax");
    in("X", "logits");
    out("Out", "probs");
    kernel("softmax", false);
    a_int("axis", -1);
    fetch("probs", 0);
    finish(dir, "lstm_rec.nb");
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "testdata";
    if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(stderr, "usage: cldiff_gen_testdata [OUTDIR]\n");
        return 2;
    }
    mobilenet_tiny(dir);
    multi_input(dir);
    int8_matmul(dir);
    lenient_attrs(dir);
    lstm_rec(dir);
    return 0;
}
