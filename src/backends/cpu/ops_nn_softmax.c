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

#define NN_T float
#define NN_S f32
#include "ops_nn_softmax_tmpl.h"
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
