/* softmax (docs/nb-format.md §7.11, axis default -1, eleminate_success) and log_softmax (Paddle: axis
 * default -1). One template body for float and _Float16 (ops_nn_softmax_tmpl.h): max and x - max run in the
 * storage type; exp and log are evaluated in float on the half value and rounded once, as
 * a half math library does. The sum of exponentials is accumulated in float in both
 * precisions and used unrounded by the final division (rounded once to the storage type):
 * a half running sum stalls (at 2048 every term below 1 rounds away) and overflows past
 * 65504 terms, though the mathematical denominator is always representable, so those
 * would be errors of the accumulator, not of the model.
 *
 * The axis is processed as rows of `inner` contiguous values, so softmax over channels of
 * an NCHW tensor walks memory sequentially instead of striding by H*W. */
#include "engine/ops.h"
#include "backends/cpu/par.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t outer, n, inner;
    bool log;
} sm_geo;

static cd_status sm_parse(cd_op_ctx *c, sm_geo *g) {
    cd_value *x = cd_in_req(c, "X", 0);
    if (!x) return c->err->code;
    if (!cd_out(c, "Out", 0)) return cd_op_fail(c, CD_E_MODEL, "output slot Out is not connected");
    char b[96];
    cd_shape s = x->shape;
    if (s.rank < 1) return cd_op_fail(c, CD_E_MODEL, "X is a scalar; softmax needs rank >= 1");
    for (int i = 0; i < s.rank; i++)
        if (s.d[i] <= 0) return cd_op_fail(c, CD_E_MODEL, "X %s has a non-positive dim", cd_shape_str(&s, b, sizeof b));
    int64_t axis = cd_attr_int(c->op, "axis", -1), a = axis < 0 ? axis + s.rank : axis;
    if (a < 0 || a >= s.rank)
        return cd_op_fail(c, CD_E_MODEL, "axis = %lld is out of range for X %s", (long long)axis,
                          cd_shape_str(&s, b, sizeof b));
    g->log = !strcmp(c->op->type, "log_softmax");
    if (!g->log && cd_attr_bool(c->op, "eleminate_success", false) && s.rank >= 2) {
        /* reinterpret as [d0, rest] (§7.11); the axis keeps its side of that split */
        int64_t d0 = s.d[0], rest = cd_shape_numel(&s) / d0;
        s.rank = 2;
        s.d[0] = d0;
        s.d[1] = rest;
        a = a == 0 ? 0 : 1;
    }
    g->outer = 1;
    g->inner = 1;
    for (int i = 0; i < a; i++) g->outer *= s.d[i];
    for (int i = (int)a + 1; i < s.rank; i++) g->inner *= s.d[i];
    g->n = s.d[a];
    return CD_OK;
}

cd_status cd_nn_softmax_infer(cd_op_ctx *c) {
    sm_geo g;
    cd_status s = sm_parse(c, &g);
    if (s) return s;
    cd_value *o = cd_out(c, "Out", 0);
    o->dtype = cd_act_dtype(c);
    o->shape = cd_in(c, "X", 0)->shape;
    return CD_OK;
}

#if defined(__AVX__)
#include <immintrin.h>
/* Eight softmax rows of eight values (x and y 64 floats each; picodet's distribution heads: rows
 * of 8 over the last axis, 6400 of them at 1x3x320x320), sm_rows' arithmetic with the row
 * scans in vectors: the maximum (a max reduction; no NaN in the block, so it is the value of
 * the scan's result, and a zero maximum is taken from the row's first zero as row_max does),
 * x - max, each exponential the same expf call, the eight sums in axis order (scalar chains,
 * interleaved as sm_rows runs them) and the divisions. false, nothing written, when a value is
 * NaN: sm_rows' scan then takes the block. */
static bool sm_rows8_f32(const float *x, float *y) {
    __m256 r[8], nan = _mm256_setzero_ps();
    for (int j = 0; j < 8; j++) {
        r[j] = _mm256_loadu_ps(x + 8 * j);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(r[j], r[j], _CMP_UNORD_Q));
    }
    if (_mm256_movemask_ps(nan)) return false;
    for (int j = 0; j < 8; j++) {
        __m256 m = _mm256_max_ps(r[j], _mm256_permute2f128_ps(r[j], r[j], 1));
        m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
        m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
        float mx = _mm256_cvtss_f32(m);
        if (mx == 0.0f) {
            float v[8];
            _mm256_storeu_ps(v, r[j]);
            for (int a = 0; a < 8; a++)
                if (v[a] == 0.0f) {
                    mx = v[a];
                    break;
                }
        }
        _mm256_storeu_ps(y + 8 * j, _mm256_sub_ps(r[j], _mm256_set1_ps(mx)));
    }
    for (int i = 0; i < 64; i++) y[i] = expf(y[i]);
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;
    for (int a = 0; a < 8; a++) {
        s0 += y[a];
        s1 += y[8 + a];
        s2 += y[16 + a];
        s3 += y[24 + a];
        s4 += y[32 + a];
        s5 += y[40 + a];
        s6 += y[48 + a];
        s7 += y[56 + a];
    }
    const float s[8] = {s0, s1, s2, s3, s4, s5, s6, s7};
    for (int j = 0; j < 8; j++)
        _mm256_storeu_ps(y + 8 * j, _mm256_div_ps(_mm256_loadu_ps(y + 8 * j), _mm256_set1_ps(s[j])));
    return true;
}
#define NN_ROWS8 sm_rows8_f32
#endif
#define NN_T float
#define NN_S f32
#include "ops_nn_softmax_tmpl.h"
#undef NN_ROWS8
#define NN_T _Float16
#define NN_S f16
#include "ops_nn_softmax_tmpl.h"

cd_status cd_nn_softmax_run(cd_op_ctx *c) {
    sm_geo g;
    cd_status s = sm_parse(c, &g);
    if (s) return s;
    cd_value *x = cd_in(c, "X", 0), *o = cd_out(c, "Out", 0);
    if (x->dtype != cd_act_dtype(c) || !x->data)
        return cd_op_fail(c, CD_E_INTERNAL, "X has dtype %s (or no data) but the run expects %s",
                          cd_dtype_name(x->dtype), cd_dtype_name(cd_act_dtype(c)));
    bool ok = c->prec == CD_PREC_FP16 ? sm_run_f16(&g, x->data, o->data, c->threads)
                                      : sm_run_f32(&g, x->data, o->data, c->threads);
    if (!ok) return cd_op_fail(c, CD_E_NOMEM, "out of memory for softmax scratch rows");
    return CD_OK;
}
