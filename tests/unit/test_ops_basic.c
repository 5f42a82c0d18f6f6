/* Unit tests of the "basic" and "shape" CPU op families: shape rules and their error
 * messages, and kernel values against independent scalar references, through cd_op_find
 * with a hand-built op and cd_op_ctx (no model file needed). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine/ops.h"
#include "util/fp16.h"

/* ---- a tiny hand-made op + value table: tests/unit/op_fixture.h ---- */
#include "op_fixture.h"

static T *t_new(const char *type) { return t_new_op(type, "test_0", 7, false, 2); }

/* value id with shape + data (float data given as doubles, converted to dtype) */
static void t_val(T *t, int id, cd_dtype dt, int rank, const int64_t *dims, const double *data) {
    cd_value *v = &t->vals[id];
    v->dtype = dt;
    v->shape.rank = rank;
    for (int i = 0; i < rank; i++) v->shape.d[i] = dims[i];
    if (data) {
        cr_assert_eq(cd_value_alloc(v, NULL), CD_OK);
        for (int64_t i = 0; i < cd_value_numel(v); i++) cd_value_set(v, i, data[i]);
    }
}

static double rnd(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 65536.0 * 8.0 - 4.0;
}

/* ---- elementwise ---- */

static void check_bcast(const int64_t *xd, int xr, const int64_t *yd, int yr, int axis, const int64_t *od, int orank) {
    T *t = t_new("elementwise_sub");
    unsigned seed = 7;
    double xs[512], ys[512];
    int64_t xn = 1, yn = 1;
    for (int i = 0; i < xr; i++) xn *= xd[i];
    for (int i = 0; i < yr; i++) yn *= yd[i];
    for (int i = 0; i < xn; i++) xs[i] = rnd(&seed);
    for (int i = 0; i < yn; i++) ys[i] = rnd(&seed);
    t_val(t, 0, CD_F32, xr, xd, xs);
    t_val(t, 1, CD_F32, yr, yd, ys);
    t_in(t, "X", 0);
    t_in(t, "Y", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", axis);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cd_value *o = &t->vals[2];
    cr_assert_eq(o->shape.rank, orank);
    for (int i = 0; i < orank; i++) cr_assert_eq(o->shape.d[i], od[i]);
    /* reference: aligned multi-index walk */
    int r = orank, lo = xr < yr ? xr : yr;
    int a = axis == -1 ? r - lo : axis;
    int64_t n = cd_value_numel(o);
    for (int64_t i = 0; i < n; i++) {
        int64_t idx[8], rem = i;
        for (int d = r - 1; d >= 0; d--) {
            idx[d] = rem % od[d];
            rem /= od[d];
        }
        int64_t xi = 0, yi = 0;
        for (int d = 0; d < r; d++) {
            int64_t dx = xr == r ? xd[d] : (d >= a && d < a + xr ? xd[d - a] : 1);
            int64_t dy = yr == r ? yd[d] : (d >= a && d < a + yr ? yd[d - a] : 1);
            xi = xi * dx + (dx == 1 ? 0 : idx[d]);
            yi = yi * dy + (dy == 1 ? 0 : idx[d]);
        }
        cr_assert_eq(((float *)o->data)[i], (float)xs[xi] - (float)ys[yi], "element %lld", (long long)i);
    }
    t_free(t);
}

Test(eltwise, broadcast_rules) {
    check_bcast((int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){3}, 1, 1, (int64_t[]){2, 3, 4, 5}, 4);
    check_bcast((int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){5}, 1, -1, (int64_t[]){2, 3, 4, 5}, 4);
    check_bcast((int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){3, 4}, 2, 1, (int64_t[]){2, 3, 4, 5}, 4);
    check_bcast((int64_t[]){2, 1, 4}, 3, (int64_t[]){1, 3, 1}, 3, -1, (int64_t[]){2, 3, 4}, 3);
    check_bcast((int64_t[]){3}, 1, (int64_t[]){2, 3, 4}, 3, 1, (int64_t[]){2, 3, 4}, 3);
    check_bcast((int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){2, 3, 4, 5}, 4, -1, (int64_t[]){2, 3, 4, 5}, 4);
    check_bcast((int64_t[]){2, 3, 4, 5}, 4, (int64_t[]){1}, 1, -1, (int64_t[]){2, 3, 4, 5}, 4);
    check_bcast((int64_t[]){6, 1, 5}, 3, (int64_t[]){6, 4, 1}, 3, 0, (int64_t[]){6, 4, 5}, 3);
}

Test(eltwise, incompatible_broadcast_message) {
    T *t = t_new("elementwise_add");
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, 3, 4, 5}, NULL);
    t_val(t, 1, CD_F32, 1, (int64_t[]){4}, NULL);
    t_in(t, "X", 0);
    t_in(t, "Y", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", 1);
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "op #7 test_0 (elementwise_add)"), "%s", t->err.msg);
    cr_assert(strstr(t->err.msg, "do not broadcast with axis 1"), "%s", t->err.msg);
    t_free(t);
}

Test(eltwise, bad_axis_message) {
    T *t = t_new("elementwise_mul");
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, 3, 4, 5}, NULL);
    t_val(t, 1, CD_F32, 2, (int64_t[]){4, 5}, NULL);
    t_in(t, "X", 0);
    t_in(t, "Y", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", 3);
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "axis 3 cannot place the rank-2 operand"), "%s", t->err.msg);
    t_free(t);
}

Test(eltwise, missing_axis_and_dtype_mismatch) {
    T *t = t_new("elementwise_add");
    t_val(t, 0, CD_F32, 1, (int64_t[]){4}, NULL);
    t_val(t, 1, CD_F16, 1, (int64_t[]){4}, NULL);
    t_in(t, "X", 0);
    t_in(t, "Y", 1);
    t_out(t, "Out", 2);
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "'axis' is missing"), "%s", t->err.msg);
    a_int(t, "axis", -1);
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "X is float32 but Y is float16"), "%s", t->err.msg);
    t_free(t);
}

Test(eltwise, integer_floordiv_mod_and_zero) {
    const double xs[] = {7, -7, 7, -7, 9, -9}, ys[] = {2, 2, -2, -2, 3, 4};
    const int32_t fd[] = {3, -4, -4, 3, 3, -3}, md[] = {1, 1, -1, -1, 0, 3};
    const char *types[] = {"elementwise_floordiv", "elementwise_mod"};
    for (int k = 0; k < 2; k++) {
        T *t = t_new(types[k]);
        t_val(t, 0, CD_I32, 1, (int64_t[]){6}, xs);
        t_val(t, 1, CD_I32, 1, (int64_t[]){6}, ys);
        t_in(t, "X", 0);
        t_in(t, "Y", 1);
        t_out(t, "Out", 2);
        a_int(t, "axis", -1);
        cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(((int32_t *)t->vals[2].data)[i], k ? md[i] : fd[i], "%s %d", types[k], i);
        ((int32_t *)t->vals[1].data)[3] = 0;
        cr_assert_eq(cd_op_find(types[k])->run(&t->c), CD_E_MODEL);
        cr_assert(strstr(t->err.msg, "division by zero"), "%s", t->err.msg);
        t_free(t);
    }
}

Test(eltwise, float_mod_floordiv_pow) {
    const double xs[] = {7.5, -7.5, 2, 3}, ys[] = {2, 2, -3, 2};
    T *t = t_new("elementwise_mod");
    t_val(t, 0, CD_F32, 1, (int64_t[]){4}, xs);
    t_val(t, 1, CD_F32, 1, (int64_t[]){4}, ys);
    t_in(t, "X", 0);
    t_in(t, "Y", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", -1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float want[] = {1.5f, 0.5f, -1.0f, 1.0f};
    for (int i = 0; i < 4; i++) cr_assert_eq(((float *)t->vals[2].data)[i], want[i], "mod %d", i);
    t->op.type = (char *)"elementwise_pow";
    cr_assert_eq(t_run(t), CD_OK);
    for (int i = 0; i < 4; i++) cr_assert_eq(((float *)t->vals[2].data)[i], powf((float)xs[i], (float)ys[i]));
    t_free(t);
}

Test(eltwise, fp16_add_is_rounded_half_sum_and_fused_relu) {
    unsigned seed = 3;
    double xs[300], ys[300];
    for (int i = 0; i < 300; i++) {
        xs[i] = rnd(&seed);
        ys[i] = rnd(&seed);
    }
    T *t = t_new("fusion_elementwise_add_activation");
    t->c.prec = CD_PREC_FP16;
    t_val(t, 0, CD_F16, 2, (int64_t[]){3, 100}, xs);
    t_val(t, 1, CD_F16, 2, (int64_t[]){3, 100}, ys);
    t_in(t, "X", 0);
    t_in(t, "Y", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", -1);
    a_str(t, "act_type", "relu");
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    for (int i = 0; i < 300; i++) {
        float a = cd_round_half((float)xs[i]), b = cd_round_half((float)ys[i]);
        float want = cd_round_half(a + b);
        if (want < 0) want = 0;
        cr_assert_eq(cd_half_to_float(((uint16_t *)t->vals[2].data)[i]), want, "element %d", i);
    }
    t_free(t);
}

/* The fused add + activation's post-stage inlines relu, relu6, leaky_relu and hard_swish
 * (ops_basic_eltwise_post_tmpl.h): bit for bit cd_act_apply of the float sum, NaN and -0
 * included; sigmoid still goes through cd_act_apply. */
Test(eltwise, fused_activation_matches_cd_act_apply) {
    const char *acts[] = {"relu", "relu6", "leaky_relu", "hard_swish", "sigmoid", "swish", "tanh"};
    const int n = 2001;
    double *xs = malloc(sizeof(double) * n), *ys = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) {
        xs[i] = (i - 1000) * 0.0123;
        ys[i] = (i % 7) * 0.5 - 1.5;
    }
    xs[0] = NAN;
    xs[1] = -0.0; /* -0 + -0: the sign must survive relu */
    ys[1] = -0.0;
    for (size_t k = 0; k < sizeof acts / sizeof acts[0]; k++) {
        T *t = t_new("fusion_elementwise_add_activation");
        t_val(t, 0, CD_F32, 1, (int64_t[]){n}, xs);
        t_val(t, 1, CD_F32, 1, (int64_t[]){n}, ys);
        t_in(t, "X", 0);
        t_in(t, "Y", 1);
        t_out(t, "Out", 2);
        a_int(t, "axis", -1);
        a_str(t, "act_type", acts[k]);
        cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
        cd_act a;
        cr_assert_eq(cd_act_from_op(&t->c, "act_type", &a), CD_OK);
        for (int i = 0; i < n; i++) {
            float want = cd_act_apply(&a, (float)xs[i] + (float)ys[i]), got = ((float *)t->vals[2].data)[i];
            cr_assert(memcmp(&want, &got, 4) == 0 || (isnan(want) && isnan(got)), "%s x+y=%g: %g vs %g", acts[k],
                      xs[i] + ys[i], got, want);
        }
        t_free(t);
    }
    free(xs);
    free(ys);
}

Test(eltwise, fuse_scale_mul) {
    T *t = t_new("elementwise_mul");
    t_val(t, 0, CD_F32, 1, (int64_t[]){3}, (double[]){1, 2, -3});
    t_val(t, 1, CD_F32, 1, (int64_t[]){3}, (double[]){4, 5, 6});
    t_in(t, "X", 0);
    t_in(t, "Y", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", -1);
    a_bool(t, "fuse_scale", true);
    a_float(t, "scale", 0.5);
    a_float(t, "bias", 1.0);
    a_str(t, "activation_type", "relu6");
    a_float(t, "alpha", 5.0);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float want[] = {3.0f, 5.0f, 0.0f}; /* 0.5*4+1, min(0.5*10+1,5), relu(0.5*-18+1) */
    for (int i = 0; i < 3; i++) cr_assert_eq(((float *)t->vals[2].data)[i], want[i]);
    t_free(t);
}

/* ---- max pooling: the AVX-512 plane kernel (ops_nn_pool_tmpl.h F(max_plane512), -inf
 * padded rows) must give the scalar scan's bits: m from the window's first input value, then
 * m = v where v > m or v is NaN, so the last NaN's payload wins; -inf, -0 and +0 inputs,
 * 2x2 and 3x3 windows, strides 1 and 2, paddings 0-2, widths 1-40 (partial last vectors), two
 * channels. ---- */
static void max_pool_case(int64_t H, int64_t W, int64_t k, int64_t st, int64_t pad) {
    const int64_t C = 2, n = C * H * W, Ho = (H + 2 * pad - k) / st + 1, Wo = (W + 2 * pad - k) / st + 1;
    float *x = malloc((size_t)n * sizeof(float));
    unsigned seed = (unsigned)(H * 131 + W * 7 + k + st * 3 + pad);
    for (int64_t i = 0; i < n; i++) {
        const double r = rnd(&seed);
        uint32_t bits;
        float f = (float)r;
        if (r > 0.9) { /* quiet NaNs with distinct payloads */
            bits = 0x7fc00000u | (uint32_t)(i & 0xffff);
            memcpy(&f, &bits, 4);
        } else if (r < -0.9)
            f = -INFINITY;
        else if (fabs(r) < 0.05)
            f = r < 0 ? -0.0f : 0.0f;
        x[i] = f;
    }
    T *t = t_new("pool2d");
    cd_value *v = &t->vals[0];
    v->dtype = CD_F32;
    v->shape.rank = 4;
    const int64_t dims[4] = {1, C, H, W};
    for (int i = 0; i < 4; i++) v->shape.d[i] = dims[i];
    cr_assert_eq(cd_value_alloc(v, NULL), CD_OK);
    memcpy(v->data, x, (size_t)n * sizeof(float));
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_str(t, "pooling_type", "max");
    a_ints(t, "ksize", 2, (int64_t[]){k, k});
    a_ints(t, "strides", 2, (int64_t[]){st, st});
    a_ints(t, "paddings", 2, (int64_t[]){pad, pad});
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float *y = t->vals[1].data;
    for (int64_t c = 0; c < C; c++)
        for (int64_t oy = 0; oy < Ho; oy++)
            for (int64_t ox = 0; ox < Wo; ox++) {
                const int64_t hs = oy * st - pad < 0 ? 0 : oy * st - pad, ws = ox * st - pad < 0 ? 0 : ox * st - pad;
                const int64_t he = oy * st - pad + k > H ? H : oy * st - pad + k;
                const int64_t we = ox * st - pad + k > W ? W : ox * st - pad + k;
                float want = 0.0f;
                if (he > hs && we > ws) {
                    want = x[(c * H + hs) * W + ws];
                    for (int64_t iy = hs; iy < he; iy++)
                        for (int64_t ix = ws; ix < we; ix++) {
                            const float e = x[(c * H + iy) * W + ix];
                            if (e > want || e != e) want = e;
                        }
                }
                const float got = y[(c * Ho + oy) * Wo + ox];
                cr_assert(memcmp(&want, &got, 4) == 0,
                          "max pool %lldx%lld k%lld s%lld p%lld: c%lld (%lld,%lld) %g vs %g", (long long)H,
                          (long long)W, (long long)k, (long long)st, (long long)pad, (long long)c, (long long)oy,
                          (long long)ox, (double)got, (double)want);
            }
    t_free(t);
    free(x);
}

Test(pool, max_matches_scalar_scan_bits) {
    static const int64_t cfg[][3] = {{3, 2, 1}, {3, 1, 1}, {2, 2, 0}, {3, 2, 0}, {3, 1, 2}, {2, 1, 1}, {3, 2, 2}};
    static const int64_t sizes[][2] = {{32, 32}, {16, 17}, {5, 40}, {7, 33}, {3, 1}, {1, 5}, {9, 16}};
    for (size_t a = 0; a < sizeof cfg / sizeof cfg[0]; a++)
        for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++) {
            const int64_t k = cfg[a][0], st = cfg[a][1], pad = cfg[a][2], H = sizes[b][0], W = sizes[b][1];
            if (H + 2 * pad < k || W + 2 * pad < k || pad >= k) continue;
            max_pool_case(H, W, k, st, pad);
        }
}

/* ---- average pooling over the whole plane (adaptive to 1x1, or one window of the plane's
 * size): the eight-planes-at-a-time sums (ops_nn_pool_tmpl.h F(avg_whole)) must give the
 * sequential loop's bits: a float sum from +0 in row-major order, divided by the count. Plane
 * counts around the block of 8 (1, 7, 8, 9, 19), plane sizes 1x1 to 16x16, -0 planes (0 + -0
 * is +0), NaN and Inf, one and two threads (the 2-thread split needs C*H*W >= 2^18). ---- */
static void avg_whole_case(int64_t C, int64_t H, int64_t W, int threads, bool adaptive) {
    const int64_t n = C * H * W;
    float *x = malloc((size_t)n * sizeof(float));
    unsigned seed = (unsigned)(C * 977 + H * 31 + W + threads);
    for (int64_t i = 0; i < n; i++) {
        const double r = rnd(&seed);
        x[i] = (float)(r * r * r * 100.0); /* wide range: the sums round at every step */
    }
    if (n > 5 && C > 3) x[3 * H * W + 5 % (H * W)] = NAN;                  /* plane 3: NaN */
    if (C > 1) x[H * W] = INFINITY;                                        /* plane 1: Inf first */
    for (int64_t i = 0; i < H * W && C > 2; i++) x[2 * H * W + i] = -0.0f; /* plane 2: all -0 */
    T *t = t_new("pool2d");
    t->c.threads = threads;
    cd_value *v = &t->vals[0];
    v->dtype = CD_F32;
    v->shape.rank = 4;
    const int64_t dims[4] = {1, C, H, W};
    for (int i = 0; i < 4; i++) v->shape.d[i] = dims[i];
    cr_assert_eq(cd_value_alloc(v, NULL), CD_OK);
    memcpy(v->data, x, (size_t)n * sizeof(float));
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_str(t, "pooling_type", "avg");
    if (adaptive) {
        a_bool(t, "adaptive", true);
        a_ints(t, "ksize", 2, (int64_t[]){1, 1});
    } else {
        a_ints(t, "ksize", 2, (int64_t[]){H, W});
        a_bool(t, "exclusive", false);
    }
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float *y = t->vals[1].data;
    for (int64_t c = 0; c < C; c++) {
        float sum = 0.0f;
        for (int64_t i = 0; i < H * W; i++) sum += x[c * H * W + i];
        const float want = sum / (float)(H * W), got = y[c];
        cr_assert(memcmp(&want, &got, 4) == 0 || (want != want && got != got),
                  "avg pool %lldx%lldx%lld threads %d adaptive %d: plane %lld %a vs %a", (long long)C, (long long)H,
                  (long long)W, threads, (int)adaptive, (long long)c, (double)got, (double)want);
    }
    t_free(t);
    free(x);
}

Test(pool, avg_whole_plane_matches_sequential_sum_bits) {
    static const int64_t cs[] = {1, 7, 8, 9, 19};
    static const int64_t sizes[][2] = {{1, 1}, {3, 5}, {4, 4}, {16, 16}};
    for (size_t a = 0; a < sizeof cs / sizeof cs[0]; a++)
        for (size_t b = 0; b < sizeof sizes / sizeof sizes[0]; b++)
            for (int ad = 0; ad < 2; ad++) avg_whole_case(cs[a], sizes[b][0], sizes[b][1], 1, ad);
    avg_whole_case(1027, 16, 16, 2, true); /* 2^18 values and more: two threads, uneven halves */
}

/* ---- softmax over the last axis: the rows of 8 that go eight at a time through vectors
 * (ops_nn_softmax.c sm_rows8_f32: picodet's distribution heads) and the other row lengths must
 * give the scalar definition's bits: m = the scan `x[a] > m or x[a] is NaN`, e = expf(x - m),
 * the float sum from +0 in axis order, e / sum. Rows with a zero maximum of either sign, ties,
 * -inf, +inf (inf - inf: NaN), a NaN (its block of eight takes the scan), row counts around the
 * block of 8, one and two threads (the 2-thread split needs more than 16384 values). ---- */
static void softmax_case(int64_t rows, int64_t n, int threads, unsigned seed) {
    const int64_t total = rows * n;
    float *x = malloc((size_t)total * sizeof(float));
    for (int64_t i = 0; i < total; i++) {
        const double r = rnd(&seed);
        x[i] = (float)(r * r * r * 3.0);
    }
    for (int64_t a = 0; a < n && rows > 1; a++) x[n + a] = a % 2 ? 0.0f : -0.0f;          /* row 1: zeros */
    for (int64_t a = 0; a < n && rows > 2; a++) x[2 * n + a] = a < 2 ? -1.0f : -0.0f - a; /* row 2: max -0 */
    if (rows > 3) x[3 * n] = x[3 * n + n - 1] = 9.5f;                                     /* row 3: a tie */
    if (rows > 4) x[4 * n + 1] = -INFINITY;
    if (rows > 5) x[5 * n + n / 2] = INFINITY;
    if (rows > 13) x[13 * n + 2] = NAN; /* block 1 (rows 8..15) has a NaN */
    T *t = t_new("softmax");
    t->c.threads = threads;
    cd_value *v = &t->vals[0];
    v->dtype = CD_F32;
    v->shape.rank = 3;
    const int64_t dims[3] = {rows % 2 ? 1 : 2, rows % 2 ? rows : rows / 2, n};
    cr_assert_eq(dims[0] * dims[1], rows);
    for (int i = 0; i < 3; i++) v->shape.d[i] = dims[i];
    cr_assert_eq(cd_value_alloc(v, NULL), CD_OK);
    memcpy(v->data, x, (size_t)total * sizeof(float));
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_int(t, "axis", -1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float *y = t->vals[1].data;
    float *e = malloc((size_t)n * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float m = xr[0], sum = 0.0f;
        for (int64_t a = 1; a < n; a++)
            if (xr[a] > m || xr[a] != xr[a]) m = xr[a];
        for (int64_t a = 0; a < n; a++) sum += (e[a] = expf(xr[a] - m));
        for (int64_t a = 0; a < n; a++) {
            const float want = e[a] / sum, got = y[r * n + a];
            cr_assert(memcmp(&want, &got, 4) == 0 || (want != want && got != got),
                      "softmax %lld rows of %lld, threads %d: row %lld value %lld %a vs %a", (long long)rows,
                      (long long)n, threads, (long long)r, (long long)a, (double)got, (double)want);
        }
    }
    free(e);
    t_free(t);
    free(x);
}

Test(softmax, rows_match_scalar_definition_bits) {
    static const int64_t rows[] = {2, 7, 8, 9, 16, 24, 25, 64};
    static const int64_t ns[] = {8, 7, 9, 3};
    for (size_t a = 0; a < sizeof rows / sizeof rows[0]; a++)
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) softmax_case(rows[a], ns[b], 1, (unsigned)(a * 31 + b));
    softmax_case(4096, 8, 2, 5); /* 32768 values: two threads */
    softmax_case(2050, 8, 2, 6); /* halves that are not whole blocks of 8 */
}

/* ---- activations: the inlined fast paths must equal cd_act_apply bit for bit ---- */

Test(act, fast_paths_match_cd_act_apply) {
    const char *types[] = {"relu", "relu6",   "leaky_relu", "hard_swish", "hard_sigmoid",
                           "abs",  "sigmoid", "swish",      "tanh",       "exp"};
    const int n = 2001;
    double *xs = malloc(sizeof(double) * n);
    for (int i = 0; i < n; i++) xs[i] = (i - 1000) * 0.0123;
    xs[0] = NAN;
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        T *t = t_new(types[k]);
        t_val(t, 0, CD_F32, 1, (int64_t[]){n}, xs);
        t_in(t, "X", 0);
        t_out(t, "Out", 1);
        if (!strcmp(types[k], "leaky_relu")) a_float(t, "alpha", 0.1);
        if (!strcmp(types[k], "hard_sigmoid")) a_float(t, "slope", 1.0 / 6);
        cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
        cd_act a;
        cr_assert_eq(cd_act_from_standalone(&t->c, &a), CD_OK);
        for (int i = 0; i < n; i++) {
            float want = cd_act_apply(&a, (float)xs[i]), got = ((float *)t->vals[1].data)[i];
            cr_assert(memcmp(&want, &got, 4) == 0 || (isnan(want) && isnan(got)), "%s x=%g: %g vs %g", types[k], xs[i],
                      got, want);
        }
        t_free(t);
    }
    free(xs);
}

Test(act, prelu_channel_and_bad_alpha) {
    T *t = t_new("prelu");
    double xs[12];
    for (int i = 0; i < 12; i++) xs[i] = i % 2 ? -(double)i : i;
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, 3, 2, 2}, xs);
    t_val(t, 1, CD_F32, 1, (int64_t[]){3}, (double[]){0.5, 0.25, 2});
    t_in(t, "X", 0);
    t_in(t, "Alpha", 1);
    t_out(t, "Out", 2);
    a_str(t, "mode", "channel");
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const double al[] = {0.5, 0.25, 2};
    for (int i = 0; i < 12; i++)
        cr_assert_eq(((float *)t->vals[2].data)[i], (float)(xs[i] < 0 ? al[i / 4] * xs[i] : xs[i]));
    t->vals[1].shape.d[0] = 2;
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "Alpha has 2 values but X has 3 channels"), "%s", t->err.msg);
    t_free(t);
}

Test(act, scale_bias_before_and_dropout) {
    T *t = t_new("scale");
    t_val(t, 0, CD_F32, 1, (int64_t[]){3}, (double[]){1, -2, 3});
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_float(t, "scale", 2.0);
    a_float(t, "bias", 1.0);
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "bias_after_scale"), "%s", t->err.msg);
    a_bool(t, "bias_after_scale", false);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float want[] = {4, -2, 8};
    for (int i = 0; i < 3; i++) cr_assert_eq(((float *)t->vals[1].data)[i], want[i]);
    t_free(t);
    t = t_new("dropout");
    t_val(t, 0, CD_F32, 1, (int64_t[]){2}, (double[]){1, -2});
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_float(t, "dropout_prob", 0.25);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(((float *)t->vals[1].data)[1], -1.5f);
    t_free(t);
}

Test(misc, calib_fake_quant) {
    T *t = t_new("calib");
    t->op.kernel.present = true;
    strcpy(t->op.kernel.alias, "fp32_to_int8");
    t_val(t, 0, CD_F32, 1, (int64_t[]){5}, (double[]){0.26, -0.25, 100, -100, 0.05});
    t_in(t, "Input", 0);
    t_out(t, "Out", 1);
    a_float(t, "scale", 0.1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].dtype, CD_F32);
    const float s = 0.1f, want[] = {3 * s, -3 * s /* -2.5 rounds away */, 127 * s, -127 * s, 1 * s};
    for (int i = 0; i < 5; i++) cr_assert_eq(((float *)t->vals[1].data)[i], want[i], "element %d", i);
    t_free(t);
}

Test(misc, arg_max_axis_and_pad_reflect) {
    T *t = t_new("arg_max");
    t_val(t, 0, CD_F32, 2, (int64_t[]){2, 3}, (double[]){1, 5, 5, 9, 2, 3});
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_int(t, "axis", -1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].dtype, CD_I64);
    cr_assert_eq(t->vals[1].shape.rank, 1);
    cr_assert_eq(((int64_t *)t->vals[1].data)[0], 1);
    cr_assert_eq(((int64_t *)t->vals[1].data)[1], 0);
    t_free(t);
    t = t_new("pad2d");
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, 1, 2, 3}, (double[]){1, 2, 3, 4, 5, 6});
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_ints(t, "paddings", 4, (int64_t[]){1, 0, 2, 1});
    a_str(t, "mode", "reflect");
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float want[] = {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5};
    cr_assert_eq(cd_value_numel(&t->vals[1]), 18);
    for (int i = 0; i < 18; i++) cr_assert_eq(((float *)t->vals[1].data)[i], want[i], "element %d", i);
    t_free(t);
}

/* arg_max over the channels of a map (inner >= 16: ops_basic_misc_argmax_tmpl.h's column
 * blocks) gives the scan's index per position: the first maximum (ties, -0 vs +0 -> the lower
 * index), NaN never wins over a number, an all-NaN column -> 0; int64 and int32 outputs; 300
 * columns (a block of 256 and a tail). */
Test(misc, arg_max_columns_match_scan) {
    const int64_t P = 2, L = 5, Q = 300, n = P * L * Q;
    double *xs = malloc((size_t)n * sizeof(double));
    unsigned seed = 77;
    for (int64_t i = 0; i < n; i++) xs[i] = floor(rnd(&seed)); /* few distinct values: many ties */
    for (int64_t k = 0; k < L; k++) xs[k * Q + 3] = NAN;       /* column 3: all NaN */
    xs[5] = NAN;                                               /* column 5: NaN first */
    for (int64_t k = 0; k < L; k++) xs[k * Q + 7] = k % 2 ? 0.0 : -0.0;
    for (int dt = 2; dt <= 3; dt++) {
        T *t = t_new("arg_max");
        t_val(t, 0, CD_F32, 3, (int64_t[]){P, L, Q}, xs);
        t_in(t, "X", 0);
        t_out(t, "Out", 1);
        a_int(t, "axis", 1);
        a_int(t, "dtype", dt);
        cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
        const float *x = t->vals[0].data;
        for (int64_t p = 0; p < P; p++)
            for (int64_t q = 0; q < Q; q++) {
                const float *b = x + p * L * Q + q;
                int64_t best = 0;
                float bv = b[0];
                for (int64_t k = 1; k < L; k++)
                    if (b[k * Q] > bv || (bv != bv && b[k * Q] == b[k * Q])) bv = b[k * Q], best = k;
                const int64_t got =
                    dt == 3 ? ((int64_t *)t->vals[1].data)[p * Q + q] : ((int32_t *)t->vals[1].data)[p * Q + q];
                cr_assert_eq(got, best, "dtype %d p %lld q %lld: %lld vs %lld", dt, (long long)p, (long long)q,
                             (long long)got, (long long)best);
            }
        cr_assert_eq(dt == 3 ? ((int64_t *)t->vals[1].data)[3] : ((int32_t *)t->vals[1].data)[3], 0);
        t_free(t);
    }
    free(xs);
}

Test(interp, bilinear_align_corners_and_half_pixel) {
    T *t = t_new("bilinear_interp_v2");
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, 1, 2, 2}, (double[]){0, 1, 2, 3});
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_bool(t, "align_corners", true);
    a_int(t, "out_h", 3);
    a_int(t, "out_w", 3);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const float ac[] = {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3};
    for (int i = 0; i < 9; i++) cr_assert_eq(((float *)t->vals[1].data)[i], ac[i], "ac %d", i);
    t->attrs[0].i = 0; /* align_corners false */
    a_int(t, "align_mode", 0);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    /* half pixel, ratio 2/3: src = (d+0.5)*2/3-0.5 = 0, 0.5, 1.1667 -> clamped taps */
    float sx[3] = {0.0f, 0.5f, 1.0f};
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++) {
            float want = 2 * sx[y] + sx[x];
            cr_assert_float_eq(((float *)t->vals[1].data)[y * 3 + x], want, 1e-6, "hp %d %d", y, x);
        }
    t_free(t);
}

/* Bilinear upscaling (ops_basic_interp_tmpl.h: horizontal blends made once per source row
 * and reused by the output rows that share it) gives, bit for bit, the four-tap formula
 * vy * (vx * a + wx * b) + wy * (vx * c + wx * d) on the taps the op defines (align_corners,
 * or half-pixel align_mode 0 with the clamp at 0, or align_mode 1); 6 planes of 5x7 -> 37x29
 * (tasks of 16 rows, a partial last one), one and two threads. */
static void bilinear_taps(int64_t in, int64_t out, int ac, int mode, int32_t *i0, int32_t *i1, float *lam) {
    const float ratio = ac ? (out > 1 && in > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f) : (float)in / (float)out;
    for (int64_t d = 0; d < out; d++) {
        float src = (!ac && mode == 0) ? ((float)d + 0.5f) * ratio - 0.5f : (float)d * ratio;
        if (src < 0.0f) src = 0.0f;
        int64_t i = (int64_t)src;
        if (i > in - 1) i = in - 1;
        i0[d] = (int32_t)i;
        i1[d] = (int32_t)(i + 1 < in ? i + 1 : in - 1);
        lam[d] = src - (float)i;
        if (lam[d] < 0.0f) lam[d] = 0.0f;
    }
}

Test(interp, bilinear_upscale_matches_formula_bits) {
    const int64_t C = 6, IH = 5, IW = 7, OH = 37, OW = 29, n = C * IH * IW;
    double *xs = malloc((size_t)n * sizeof(double));
    unsigned seed = 4242;
    for (int64_t i = 0; i < n; i++) xs[i] = rnd(&seed) * rnd(&seed) * 1000.0;
    static const int cfg[][3] = {{1, 1, 1}, {0, 0, 1}, {0, 1, 2}, {0, 0, 2}};
    for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
        const int ac = cfg[c][0], mode = cfg[c][1];
        T *t = t_new("bilinear_interp_v2");
        t->c.threads = cfg[c][2];
        t_val(t, 0, CD_F32, 4, (int64_t[]){1, C, IH, IW}, xs);
        t_in(t, "X", 0);
        t_out(t, "Out", 1);
        a_bool(t, "align_corners", ac);
        a_int(t, "align_mode", mode);
        a_int(t, "out_h", OH);
        a_int(t, "out_w", OW);
        cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
        int32_t y0[37], y1[37], x0[29], x1[29];
        float ly[37], lx[29];
        bilinear_taps(IH, OH, ac, mode, y0, y1, ly);
        bilinear_taps(IW, OW, ac, mode, x0, x1, lx);
        const float *x = t->vals[0].data, *y = t->vals[1].data;
        for (int64_t p = 0; p < C; p++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    const float *r0 = x + (p * IH + y0[oy]) * IW, *r1 = x + (p * IH + y1[oy]) * IW;
                    const float wy = ly[oy], vy = 1.0f - wy, wx = lx[ox], vx = 1.0f - wx;
                    const float want =
                        vy * (vx * r0[x0[ox]] + wx * r0[x1[ox]]) + wy * (vx * r1[x0[ox]] + wx * r1[x1[ox]]);
                    const float got = y[(p * OH + oy) * OW + ox];
                    cr_assert(memcmp(&want, &got, 4) == 0, "ac %d mode %d: plane %lld (%lld,%lld) %a vs %a", ac, mode,
                              (long long)p, (long long)oy, (long long)ox, (double)got, (double)want);
                }
        t_free(t);
    }
    free(xs);
}

Test(interp, nonpositive_size_message) {
    T *t = t_new("nearest_interp");
    t_val(t, 0, CD_F32, 4, (int64_t[]){1, 1, 2, 2}, NULL);
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_bool(t, "align_corners", false);
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "output size -1 x -1 is not positive"), "%s", t->err.msg);
    t_free(t);
}

/* ---- shape family ---- */

Test(shape, reshape_zero_minus_one_and_errors) {
    T *t = t_new("reshape2");
    t_val(t, 0, CD_F32, 4, (int64_t[]){2, 3, 4, 5}, NULL);
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    t_out(t, "XShape", 2);
    a_ints(t, "shape", 3, (int64_t[]){0, -1, 5});
    cr_assert_eq(t_infer(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].shape.rank, 3);
    cr_assert_eq(t->vals[1].shape.d[1], 12);
    cr_assert_eq(cd_value_numel(&t->vals[2]), 0);
    t->ints[0][2] = -1;
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "more than one -1"), "%s", t->err.msg);
    t->ints[0][2] = 7;
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "not a multiple of 14"), "%s", t->err.msg);
    t_free(t);
}

/* fill_any_like (paddle.ones_like / full_like in Paddle 2.6.2 programs: the zoo's YOLO im_shape)
 * and fill_zeros_like: X's shape; dtype -1 keeps X's type, else the VarType given. */
Test(shape, fill_any_like) {
    T *t = t_new("fill_any_like");
    t_val(t, 0, CD_F32, 2, (int64_t[]){1, 2}, NULL); /* only the shape is read */
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_int(t, "dtype", -1);
    a_float(t, "value", 64);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].dtype, CD_F32);
    cr_assert_eq(t->vals[1].shape.rank, 2);
    cr_assert_eq(t->vals[1].shape.d[1], 2);
    cr_assert_eq(((float *)t->vals[1].data)[1], 64.0f);
    t_free(t);
    t = t_new("fill_any_like");
    t_val(t, 0, CD_F32, 1, (int64_t[]){3}, NULL);
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_int(t, "dtype", 2); /* INT32 */
    a_float(t, "value", 7);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].dtype, CD_I32);
    cr_assert_eq(((int32_t *)t->vals[1].data)[2], 7);
    t_free(t);
    t = t_new("fill_zeros_like");
    t_val(t, 0, CD_I64, 1, (int64_t[]){4}, NULL);
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].dtype, CD_I64);
    cr_assert_eq(t->vals[1].shape.d[0], 4);
    cr_assert_eq(((int64_t *)t->vals[1].data)[3], 0);
    t_free(t);
}

/* The PP-OCR cls chain: shape -> slice -> fill_constant -> reshape2 via ShapeTensor. */
Test(shape, plan_time_chain) {
    T *t = t_new("shape");
    t_val(t, 0, CD_F32, 4, (int64_t[]){3, 200, 1, 1}, NULL); /* no data: only the shape is read */
    t_in(t, "Input", 0);
    t_out(t, "Out", 1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].dtype, CD_I32);
    cr_assert_eq(((int32_t *)t->vals[1].data)[0], 3);
    /* slice [0:1] of the shape with decrease_axis? no: keeps [1] */
    t->op = (cd_op){0};
    t->op.type = (char *)"slice";
    t->op.name = (char *)"slice_0";
    t->op.in = t->in;
    t->op.out = t->out;
    t->op.attrs = t->attrs;
    t_in(t, "Input", 1);
    t_out(t, "Out", 2);
    a_ints(t, "axes", 1, (int64_t[]){0});
    a_ints(t, "starts", 1, (int64_t[]){0});
    a_ints(t, "ends", 1, (int64_t[]){1});
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[2].shape.rank, 1);
    cr_assert_eq(((int32_t *)t->vals[2].data)[0], 3);
    t->op = (cd_op){0};
    t->op.type = (char *)"fill_constant";
    t->op.name = (char *)"fc_0";
    t->op.in = t->in;
    t->op.out = t->out;
    t->op.attrs = t->attrs;
    t_out(t, "Out", 3);
    a_int(t, "dtype", 2);
    a_ints(t, "shape", 1, (int64_t[]){1});
    a_float(t, "value", -1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[3].dtype, CD_I32);
    cr_assert_eq(((int32_t *)t->vals[3].data)[0], -1);
    t->op = (cd_op){0};
    t->op.type = (char *)"reshape2";
    t->op.name = (char *)"r_0";
    t->op.in = t->in;
    t->op.out = t->out;
    t->op.attrs = t->attrs;
    double xs[600];
    for (int i = 0; i < 600; i++) xs[i] = i;
    t_val(t, 4, CD_F32, 4, (int64_t[]){3, 200, 1, 1}, xs);
    t_in(t, "X", 4);
    t_in(t, "ShapeTensor", 2);
    t_in(t, "ShapeTensor", 3);
    t_out(t, "Out", 5);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[5].shape.rank, 2);
    cr_assert_eq(t->vals[5].shape.d[0], 3);
    cr_assert_eq(t->vals[5].shape.d[1], 200);
    cr_assert_eq(((float *)t->vals[5].data)[599], 599.0f);
    t_free(t);
}

Test(shape, transpose_concat_split_slice) {
    double xs[24];
    for (int i = 0; i < 24; i++) xs[i] = i;
    T *t = t_new("transpose2");
    t_val(t, 0, CD_F16, 3, (int64_t[]){2, 3, 4}, xs);
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    a_ints(t, "axis", 3, (int64_t[]){2, 0, 1});
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 3; c++)
                cr_assert_eq(cd_value_get(&t->vals[1], (a * 2 + b) * 3 + c), xs[(b * 3 + c) * 4 + a]);
    t->ints[0][1] = 2;
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "not a permutation"), "%s", t->err.msg);
    t_free(t);
    /* axes that stay adjacent and in order are merged (ops_shape.c): the identity is one copy,
     * {1, 2, 0} rows of 12 with stride 1, {0, 2, 1} rows of 3 with stride 4 */
    static const int64_t perms[3][3] = {{0, 1, 2}, {1, 2, 0}, {0, 2, 1}};
    for (int q = 0; q < 3; q++) {
        t = t_new("transpose2");
        t_val(t, 0, CD_F32, 3, (int64_t[]){2, 3, 4}, xs);
        t_in(t, "X", 0);
        t_out(t, "Out", 1);
        a_ints(t, "axis", 3, perms[q]);
        cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
        const int64_t d[3] = {2, 3, 4}, st[3] = {12, 4, 1};
        const int64_t o0 = d[perms[q][0]], o1 = d[perms[q][1]], o2 = d[perms[q][2]];
        for (int64_t a = 0; a < o0; a++)
            for (int64_t b = 0; b < o1; b++)
                for (int64_t e = 0; e < o2; e++)
                    cr_assert_eq(((float *)t->vals[1].data)[(a * o1 + b) * o2 + e],
                                 xs[a * st[perms[q][0]] + b * st[perms[q][1]] + e * st[perms[q][2]]], "perm %d", q);
        t_free(t);
    }

    t = t_new("concat");
    t_val(t, 0, CD_I64, 2, (int64_t[]){2, 3}, xs);
    t_val(t, 1, CD_I64, 2, (int64_t[]){2, 1}, xs + 10);
    t_in(t, "X", 0);
    t_in(t, "X", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", -1);
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    const int64_t cw[] = {0, 1, 2, 10, 3, 4, 5, 11};
    for (int i = 0; i < 8; i++) cr_assert_eq(((int64_t *)t->vals[2].data)[i], cw[i]);
    t->vals[1].shape.d[0] = 3;
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "does not match X[0]"), "%s", t->err.msg);
    t_free(t);

    t = t_new("split");
    t_val(t, 0, CD_F32, 2, (int64_t[]){2, 6}, xs);
    t_in(t, "X", 0);
    t_out(t, "Out", 1);
    t_out(t, "Out", 2);
    a_int(t, "axis", 1);
    a_ints(t, "sections", 2, (int64_t[]){-1, 2});
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].shape.d[1], 4);
    cr_assert_eq(((float *)t->vals[1].data)[4], 6.0f);
    cr_assert_eq(((float *)t->vals[2].data)[3], 11.0f);
    t_free(t);

    t = t_new("slice");
    t_val(t, 0, CD_F32, 3, (int64_t[]){2, 3, 4}, xs);
    t_in(t, "Input", 0);
    t_out(t, "Out", 1);
    a_ints(t, "axes", 2, (int64_t[]){0, 2});
    a_ints(t, "starts", 2, (int64_t[]){-1, 1});
    a_ints(t, "ends", 2, (int64_t[]){100, -1});
    a_ints(t, "decrease_axis", 1, (int64_t[]){0});
    cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
    cr_assert_eq(t->vals[1].shape.rank, 2);
    cr_assert_eq(t->vals[1].shape.d[0], 3);
    cr_assert_eq(t->vals[1].shape.d[1], 2);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) cr_assert_eq(((float *)t->vals[1].data)[i * 2 + j], (float)(12 + i * 4 + 1 + j));
    t->ints[0][1] = 5;
    cr_assert_eq(t_infer(t), CD_E_MODEL);
    cr_assert(strstr(t->err.msg, "axes[1] = 5 is out of range"), "%s", t->err.msg);
    t_free(t);
}

/* The conv epilogue (bias, then the fused activation) has a vectorised fp32 path for the
 * common activations and 1x1 maps, planes shorter than a vector and planes ending in a
 * partial vector. Per element it must be cd_act_apply(y + bias) bit for bit, NaN, Inf and
 * -0 included: the raw product is taken from the same conv without bias and activation. */
static void conv_epi_case(const char *act, int64_t W, int64_t C) {
    const int64_t HW = W, n = C * HW;
    unsigned seed = 11;
    double *x = malloc(sizeof(double) * n), *w = malloc(sizeof(double) * C * C), bias[64];
    for (int64_t i = 0; i < n; i++) x[i] = rnd(&seed) * (i % 7 == 3 ? 1e-38 : 1.0);
    x[0] = NAN;
    if (n > 2) x[2] = -0.0;
    if (n > 5) x[5] = INFINITY;
    for (int64_t i = 0; i < C * C; i++) w[i] = rnd(&seed) * 0.25;
    for (int64_t i = 0; i < C; i++) bias[i] = rnd(&seed);
    float *raw = malloc(sizeof(float) * n);
    for (int pass = 0; pass < 2; pass++) {
        T *t = t_new("conv2d");
        t_val(t, 0, CD_F32, 4, (int64_t[]){1, C, 1, W}, x);
        t_val(t, 1, CD_F32, 4, (int64_t[]){C, C, 1, 1}, w);
        t_in(t, "Input", 0);
        t_in(t, "Filter", 1);
        if (pass) {
            t_val(t, 2, CD_F32, 1, (int64_t[]){C}, bias);
            t_in(t, "Bias", 2);
            if (act[0]) {
                a_bool(t, "with_act", true);
                a_str(t, "act_type", act);
            }
            if (!strcmp(act, "leaky_relu")) a_float(t, "leaky_relu_alpha", 0.1);
            if (!strcmp(act, "relu6")) a_float(t, "fuse_brelu_threshold", 2.5);
            if (!strcmp(act, "hard_sigmoid")) {
                a_float(t, "slope", 1.0 / 6);
                a_float(t, "offset", 0.5);
            }
        }
        t_out(t, "Output", 3);
        a_ints(t, "strides", 2, (int64_t[]){1, 1});
        a_ints(t, "paddings", 2, (int64_t[]){0, 0});
        cr_assert_eq(t_run(t), CD_OK, "%s", t->err.msg);
        const float *y = t->vals[3].data;
        if (!pass) {
            memcpy(raw, y, sizeof(float) * n);
        } else {
            cd_act a;
            cr_assert_eq(cd_act_from_conv(&t->c, &a), CD_OK);
            for (int64_t i = 0; i < n; i++) {
                float want = cd_act_apply(&a, raw[i] + (float)bias[i / HW]), got = y[i];
                cr_assert(memcmp(&want, &got, 4) == 0 || (isnan(want) && isnan(got)),
                          "act '%s' W=%lld C=%lld at %lld: %.9g, cd_act_apply gives %.9g", act, (long long)W,
                          (long long)C, (long long)i, got, want);
            }
        }
        t_free(t);
    }
    free(x);
    free(w);
    free(raw);
}

Test(conv, epilogue_matches_cd_act_apply_bits) {
    const char *acts[] = {"", "relu", "relu6", "leaky_relu", "hard_swish", "hard_sigmoid"};
    const int64_t ws[] = {1, 5, 16, 17, 50};
    for (int a = 0; a < 6; a++)
        for (int k = 0; k < 5; k++) conv_epi_case(acts[a], ws[k], ws[k] == 1 ? 37 : 20);
}
