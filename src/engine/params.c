/* Parameter conversion and int8/int16 weight dequantization (see params.h). */
#include "engine/params.h"
#include "engine/op_list.h"
#include "util/fp16.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_identity_copy(const char *type) { return cd_op_is_placement(type); } /* io_copy, layout */

/* Follows a tensor back through placement-only copies to the parameter it carries;
 * -1 when it is not (a copy of) a parameter. Bounded: SSA producers precede consumers. */
static int param_source(const cd_graph *g, int id) {
    for (int hops = 0; id >= 0 && hops < g->n_ops + 1; hops++) {
        const cd_tensor *t = &g->tensors[id];
        if (t->persistable) return id;
        if (t->producer < 0) return -1;
        const cd_op *p = &g->ops[t->producer];
        if (!is_identity_copy(p->type) || p->n_in < 1) return -1;
        int src = -1;
        for (int s = 0; s < p->n_in && src < 0; s++)
            for (int k = 0; k < p->in[s].n && src < 0; k++) src = p->in[s].ids[k];
        id = src;
    }
    return -1;
}

typedef enum { AX_DIM0, AX_CONVT, AX_LAST, AX_ROW } scale_axis;

static scale_axis axis_for(const cd_op *op) {
    switch (cd_op_id_of(op->type)) {
    case CD_OPID_conv2d_transpose:
    case CD_OPID_depthwise_conv2d_transpose: return AX_CONVT;
    case CD_OPID_fc:
    case CD_OPID_mul:
    case CD_OPID_lookup_table:
    case CD_OPID_lookup_table_v2: return AX_LAST;
    case CD_OPID_matmul: return cd_attr_bool(op, "transpose_Y", false) ? AX_ROW : AX_LAST;
    case CD_OPID_matmul_v2: return cd_attr_bool(op, "trans_y", false) ? AX_ROW : AX_LAST;
    default: return AX_DIM0;
    }
}

/* Dequantizes q (int8/int16 record of tensor t) into out[] floats. */
static cd_status dequant(const cd_graph *g, int op_index, const cd_tensor *t, const char *attr_name, const double *sc,
                         int ns, float *out, cd_error *err) {
    const cd_op *op = &g->ops[op_index];
    int64_t n = cd_shape_numel(&t->shape);
    const cd_shape *s = &t->shape;
    /* Scale values are not checked: Paddle-Lite uses them as they are (light_api.cc weight-only
     * dequant; the ARM int8 kernels fold them into per-channel multipliers, conv_gemmlike.cc)
     * and refuses neither 0 (a channel whose weights are all zero: it dequantizes to 0), nor
     * a negative value (folded batch norm), nor NaN/Inf (the channel becomes NaN/Inf, as there).
     * What it refuses, a scale count that fits no channel axis, is still refused below. */
    scale_axis ax = axis_for(op);
    int64_t ch = 1; /* channel count the scale list must match */
    int64_t d0 = s->rank > 0 ? s->d[0] : 1, d1 = s->rank > 1 ? s->d[1] : 1;
    int64_t groups = cd_attr_int(op, "groups", 1);
    if (ax == AX_CONVT && (groups < 1 || s->rank < 2 || d0 % groups))
        return cd_err(err, CD_E_MODEL,
                      "op #%d %s (%s): cannot dequantize filter '%s': groups %lld invalid for filter dims", op_index,
                      op->name, op->type, t->name, (long long)groups);
    int64_t last = s->rank > 0 ? s->d[s->rank - 1] : 1, row = s->rank > 1 ? s->d[s->rank - 2] : 1;
    switch (ax) {
    case AX_DIM0: ch = d0; break;
    case AX_CONVT: ch = d1 * groups; break;
    case AX_LAST: ch = last; break;
    case AX_ROW: ch = s->rank > 1 ? row : last; break; /* a transposed 1-D Y: v1 outer product, columns = its axis */
    }
    if (ns != 1 && ns != ch) {
        char b[128];
        return cd_err(err, CD_E_MODEL,
                      "op #%d %s (%s): weight '%s' %s has %d scales in %s but %lld channels (or 1 scale) are "
                      "required; the quantized model is inconsistent",
                      op_index, op->name, op->type, t->name, cd_shape_str(s, b, sizeof b), ns, attr_name,
                      (long long)ch);
    }
    int64_t inner0 = d0 > 0 ? n / d0 : 1, inner1 = (d0 > 0 && d1 > 0) ? n / d0 / d1 : 1;
    int64_t cin_g = ax == AX_CONVT ? d0 / groups : 1;
    for (int64_t i = 0; i < n; i++) {
        double q = t->dtype == CD_I8 ? ((const int8_t *)t->data)[i] : ((const int16_t *)t->data)[i];
        int64_t c = 0;
        if (ns > 1) switch (ax) {
            case AX_DIM0: c = i / inner0; break;
            case AX_CONVT: {
                int64_t ic = i / inner0, j = (i / inner1) % d1;
                c = (ic / cin_g) * d1 + j;
                break;
            }
            case AX_LAST: c = i % last; break;
            case AX_ROW: c = (i / last) % row; break;
            }
        out[i] = (float)q * (float)sc[c];
    }
    return CD_OK;
}

/* Looks for the scale attribute of param input (slot, k) on op: docs/nb-format.md §6.3 then §6.4 names. */
static int find_scales(const cd_graph *g, const cd_op *op, const char *slot, int k, int arg_id, int pid,
                       const double **sc, char *name, size_t nn) {
    snprintf(name, nn, "%s%d_scale", slot, k);
    int ns = cd_attr_floats(op, name, sc);
    if (ns > 0) return ns;
    /* weight-only: <weight var>_quant_scale; the argument may be "<w>/target_trans". */
    const char *cands[2] = {g->tensors[pid].name, g->tensors[arg_id].name};
    for (int c = 0; c < 2; c++) {
        char base[512];
        snprintf(base, sizeof base, "%s", cands[c]);
        char *tt = strstr(base, "/target_trans");
        if (tt) *tt = 0;
        snprintf(name, nn, "%s_quant_scale", base);
        ns = cd_attr_floats(op, name, sc);
        if (ns > 0) return ns;
    }
    return 0;
}

/* Only quantize_weight_bits is checked: Paddle-Lite's weight-only dequantization CHECKs it is 8
 * or 16 and reads the record as int8 or int16 by it (a mismatch reads past the data). The full
 * int8 kernels never read bit_length (conv_op.h, fc_op.cc), so cldiff does not either. */
static cd_status check_bits(const cd_graph *g, int oi, const cd_tensor *t, cd_error *err) {
    const cd_op *op = &g->ops[oi];
    int want = t->dtype == CD_I8 ? 8 : 16;
    const char *names[1] = {"quantize_weight_bits"};
    for (int i = 0; i < 1; i++) {
        if (!cd_op_attr(op, names[i])) continue;
        int64_t b = cd_attr_int(op, names[i], want);
        if (b != 8 && b != 16)
            return cd_err(err, CD_E_MODEL, "op #%d %s (%s): %s = %lld; only 8 and 16 are valid", oi, op->name, op->type,
                          names[i], (long long)b);
        if (b != want)
            return cd_err(err, CD_E_MODEL, "op #%d %s (%s): %s = %lld but weight '%s' is stored as %s", oi, op->name,
                          op->type, names[i], (long long)b, t->name, cd_dtype_name(t->dtype));
    }
    return CD_OK;
}

static cd_status store_floats(cd_value *v, const float *f, int64_t n, cd_precision prec, cd_error *err) {
    if (prec == CD_PREC_FP32) {
        v->dtype = CD_F32;
        v->data = (void *)f;
        v->nbytes = (size_t)n * 4;
        v->owned = true;
        return CD_OK;
    }
    uint16_t *h = cd_malloc((size_t)(n ? n : 1) * 2, err);
    if (!h) return CD_E_NOMEM;
    for (int64_t i = 0; i < n; i++) h[i] = cd_float_to_half(f[i]);
    free((void *)f);
    v->dtype = CD_F16;
    v->data = h;
    v->nbytes = (size_t)n * 2;
    v->owned = true;
    return CD_OK;
}

cd_status cd_params_prepare(const cd_graph *g, cd_precision prec, cd_value *meta, int64_t *param_bytes,
                            bool *dequantized, cd_error *err) {
    *param_bytes = 0;
    *dequantized = false;
    /* Pass 1: int8/int16 weights consumed by ops that carry their scales. */
    for (int oi = 0; oi < g->n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        for (int s = 0; s < op->n_in; s++)
            for (int k = 0; k < op->in[s].n; k++) {
                int arg = op->in[s].ids[k];
                if (arg < 0) continue;
                int pid = param_source(g, arg);
                if (pid < 0 || meta[pid].data) continue;
                const cd_tensor *t = &g->tensors[pid];
                if (t->dtype != CD_I8 && t->dtype != CD_I16) continue;
                const double *sc;
                char an[600];
                int ns = find_scales(g, op, op->in[s].name, k, arg, pid, &sc, an, sizeof an);
                if (ns == 0) continue; /* maybe another consumer carries the scales */
                cd_status st = check_bits(g, oi, t, err);
                if (st) return st;
                int64_t n = cd_shape_numel(&t->shape);
                if (n < 0 || (size_t)n * cd_dtype_size(t->dtype) != t->nbytes)
                    return cd_err(err, CD_E_MODEL, "parameter '%s': %zu data bytes do not match its shape", t->name,
                                  t->nbytes);
                float *f = cd_malloc((size_t)(n ? n : 1) * sizeof(float), err);
                if (!f) return CD_E_NOMEM;
                if ((st = dequant(g, oi, t, an, sc, ns, f, err))) {
                    free(f);
                    return st;
                }
                meta[pid].shape = t->shape;
                if ((st = store_floats(&meta[pid], f, n, prec, err))) return st;
                *dequantized = true;
            }
    }
    /* Pass 2: every other parameter. */
    for (int id = 0; id < g->n_tensors; id++) {
        const cd_tensor *t = &g->tensors[id];
        if (!t->persistable) continue;
        cd_value *v = &meta[id];
        if (!v->data) {
            v->shape = t->shape;
            int64_t n = cd_shape_numel(&t->shape);
            if (n < 0 || (size_t)n * cd_dtype_size(t->dtype) != t->nbytes || (n > 0 && !t->data))
                return cd_err(err, CD_E_MODEL, "parameter '%s': %zu data bytes do not match its shape", t->name,
                              t->nbytes);
            switch (t->dtype) {
            case CD_I8:
            case CD_I16:
                return cd_err(err, CD_E_MODEL,
                              "parameter '%s' is stored as %s but no op that reads it carries a dequantization "
                              "scale (<Slot><k>_scale or %s_quant_scale); cannot interpret quantized weights",
                              t->name, cd_dtype_name(t->dtype), t->name);
            case CD_F32:
                if (prec == CD_PREC_FP32) { /* borrow: the graph outlives the plan */
                    v->dtype = CD_F32;
                    v->data = t->data;
                    v->nbytes = t->nbytes;
                    v->owned = false;
                    break;
                }
                /* fall through */
            case CD_F16:
            case CD_F64: {
                float *f = cd_malloc((size_t)(n ? n : 1) * sizeof(float), err);
                if (!f) return CD_E_NOMEM;
                for (int64_t i = 0; i < n; i++)
                    f[i] = t->dtype == CD_F32 ? ((const float *)t->data)[i]
                        : t->dtype == CD_F16  ? cd_half_to_float(((const uint16_t *)t->data)[i])
                                              : (float)((const double *)t->data)[i];
                cd_status st = store_floats(v, f, n, prec, err);
                if (st) return st;
                break;
            }
            default: /* integer tables stay as stored */
                v->dtype = t->dtype;
                v->data = t->data;
                v->nbytes = t->nbytes;
                v->owned = false;
                break;
            }
        }
        *param_bytes += (int64_t)v->nbytes;
    }
    return CD_OK;
}
