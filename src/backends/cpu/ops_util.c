/* Helpers shared by the CPU op kernels (see ops_util.h). */
#include "backends/cpu/ops_util.h"
#include <stdio.h>
#include <string.h>

cd_status cd_ops_need_io(cd_op_ctx *c, const char *in, const char *out, cd_value **x, cd_value **o) {
    *x = cd_in(c, in, 0);
    if (!*x) return cd_op_fail(c, CD_E_MODEL, "required input %s is not connected", in);
    *o = cd_out(c, out, 0);
    if (!*o) return cd_op_fail(c, CD_E_MODEL, "required output %s is not connected", out);
    return CD_OK;
}

cd_status cd_ops_need_float(cd_op_ctx *c, const cd_value *x) {
    if (!cd_ops_is_float(x->dtype))
        return cd_op_fail(c, CD_E_UNSUPPORTED, "element type %s is not supported (float32 or float16)",
                          cd_dtype_name(x->dtype));
    return CD_OK;
}

cd_status cd_ops_tensor_ints(cd_op_ctx *c, const cd_value *v, const char *slot, int64_t *out, int *n) {
    int64_t k = cd_value_numel(v);
    if (v->dtype != CD_I32 && v->dtype != CD_I64)
        return cd_op_fail(c, CD_E_MODEL, "input %s must be int32 or int64, it is %s", slot, cd_dtype_name(v->dtype));
    if (k < 0 || k > CD_OPS_MAXV)
        return cd_op_fail(c, CD_E_MODEL, "input %s holds %lld values (at most %d)", slot, (long long)k, CD_OPS_MAXV);
    if (!v->data)
        return cd_op_fail(c, CD_E_UNSUPPORTED,
                          "input %s is computed from run-time data; its value must be known "
                          "when shapes are planned (only integer shape chains are evaluated then)",
                          slot);
    for (int64_t i = 0; i < k; i++)
        out[i] = v->dtype == CD_I32 ? ((const int32_t *)v->data)[i] : ((const int64_t *)v->data)[i];
    *n = (int)k;
    return CD_OK;
}

cd_status cd_ops_list_ints(cd_op_ctx *c, const char *slot, int64_t *out, int *n) {
    const cd_slot *s = cd_op_in_slot(c->op, slot);
    *n = 0;
    if (!s || s->n == 0) return CD_OK;
    if (s->n > CD_OPS_MAXV)
        return cd_op_fail(c, CD_E_MODEL, "input list %s has %d tensors (at most %d)", slot, s->n, CD_OPS_MAXV);
    for (int i = 0; i < s->n; i++) {
        if (s->ids[i] < 0) return cd_op_fail(c, CD_E_MODEL, "input list %s entry %d is not connected", slot, i);
        const cd_value *v = &c->vals[s->ids[i]];
        int k;
        int64_t tmp[CD_OPS_MAXV];
        char name[64];
        snprintf(name, sizeof name, "%s[%d]", slot, i);
        cd_status st = cd_ops_tensor_ints(c, v, name, tmp, &k);
        if (st) return st;
        if (k != 1) return cd_op_fail(c, CD_E_MODEL, "input %s must hold 1 value, it holds %d", name, k);
        out[i] = tmp[0];
    }
    *n = s->n;
    return CD_OK;
}

cd_status cd_ops_axis(cd_op_ctx *c, const char *slot, const char *what, int rank, int64_t *axis) {
    int64_t a = cd_attr_int(c->op, "axis", 0), v[CD_OPS_MAXV];
    int n;
    cd_value *at = cd_in(c, slot, 0);
    if (at) {
        cd_status st = cd_ops_tensor_ints(c, at, slot, v, &n);
        if (st) return st;
        if (n != 1) return cd_op_fail(c, CD_E_MODEL, "%s must hold 1 value, it holds %d", slot, n);
        a = v[0];
    }
    if (a < -rank || a >= rank || rank == 0)
        return cd_op_fail(c, CD_E_MODEL, "%s %lld is out of range for rank %d", what, (long long)a, rank);
    *axis = a < 0 ? a + rank : a;
    return CD_OK;
}

int cd_bcast_align(const cd_shape *x, const cd_shape *y, int64_t axis, int64_t ax[CD_MAX_RANK],
                   int64_t ay[CD_MAX_RANK]) {
    int rx = x->rank, ry = y->rank, r = rx >= ry ? rx : ry;
    if (cd_shape_eq(x, y)) {
        for (int i = 0; i < r; i++) ax[i] = ay[i] = x->d[i];
        return 0;
    }
    int lo = rx >= ry ? ry : rx;
    int64_t a = axis == -1 ? (int64_t)(r - lo) : axis;
    /* Paddle also accepts a negative axis counted from the end of the larger rank. */
    if (axis < -1 && axis >= -(int64_t)r) a = axis + r - lo + 1;
    if (a < 0 || a + lo > r) return -1;
    const cd_shape *big = rx >= ry ? x : y, *small = rx >= ry ? y : x;
    int64_t *abig = rx >= ry ? ax : ay, *asmall = rx >= ry ? ay : ax;
    for (int i = 0; i < r; i++) {
        abig[i] = big->d[i];
        asmall[i] = (i >= a && i < a + lo) ? small->d[i - a] : 1;
    }
    return 0;
}
