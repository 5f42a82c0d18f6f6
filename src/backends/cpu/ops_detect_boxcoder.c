/* box_coder: encode target boxes against priors, or decode offsets into boxes
 * (Paddle's encode_center_size / decode_center_size).
 *
 * Priors are [M, 4] corners (x1, y1, x2, y2); with box_normalized false, widths and
 * heights get +1 (pixel-inclusive boxes) and decoded x2/y2 get -1. Variances come from
 * the PriorBoxVar input ([M, 4], one row per prior), else from the 4-value `variance`
 * attribute, else are 1.
 *   decode, TargetBox [N, K, 4]: prior index = column k when axis = 0 (K == M), row n
 *     when axis = 1 (N == M); output [N, K, 4]:
 *       cx = v0*t0*pw + pcx, cy = v1*t1*ph + pcy, w = exp(v2*t2)*pw, h = exp(v3*t3)*ph,
 *       box = (cx - w/2, cy - h/2, cx + w/2 - (!norm), cy + h/2 - (!norm))
 *   encode, TargetBox [N, 4]: output [N, M, 4]:
 *       ((tcx - pcx)/pw, (tcy - pcy)/ph, log|tw/pw|, log|th/ph|) / variance
 * Arithmetic is float32 in both precisions (see ops_detect_table.c). */
#include "engine/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cd_detect_load_f32(const cd_value *v, float *dst, int64_t n);
void cd_detect_store_f32(cd_value *v, int64_t off, const float *src, int64_t n);

typedef struct {
    bool decode, norm;
    int axis;
    cd_value *prior, *pvar, *target, *out;
    float var_attr[4];
    bool has_var_attr;
    int64_t m;    /* priors */
    int64_t n, k; /* target rows, columns (decode) */
} coder;

static cd_status coder_read(cd_op_ctx *c, coder *b) {
    char s1[96], s2[96];
    memset(b, 0, sizeof *b);
    if (!(b->prior = cd_in_req(c, "PriorBox", 0))) return CD_E_MODEL;
    if (!(b->target = cd_in_req(c, "TargetBox", 0))) return CD_E_MODEL;
    b->pvar = cd_in(c, "PriorBoxVar", 0);
    b->out = cd_out(c, "OutputBox", 0);
    if (!b->out) return cd_op_fail(c, CD_E_MODEL, "output OutputBox is not connected");
    const char *ct = cd_attr_str(c->op, "code_type", "encode_center_size");
    if (!strcmp(ct, "decode_center_size"))
        b->decode = true;
    else if (strcmp(ct, "encode_center_size"))
        return cd_op_fail(c, CD_E_MODEL, "code_type '%s' is not encode_center_size or decode_center_size", ct);
    b->norm = cd_attr_bool(c->op, "box_normalized", true);
    int64_t axis = cd_attr_int(c->op, "axis", 0);
    if (axis != 0 && axis != 1) return cd_op_fail(c, CD_E_MODEL, "axis = %lld must be 0 or 1", (long long)axis);
    b->axis = (int)axis;
    const cd_shape *ps = &b->prior->shape, *ts = &b->target->shape;
    if (ps->rank != 2 || ps->d[1] != 4)
        return cd_op_fail(c, CD_E_MODEL, "PriorBox must be [M, 4], got %s", cd_shape_str(ps, s1, sizeof s1));
    b->m = ps->d[0];
    if (b->pvar && !cd_shape_eq(&b->pvar->shape, ps))
        return cd_op_fail(c, CD_E_MODEL, "PriorBoxVar %s must have the shape of PriorBox %s",
                          cd_shape_str(&b->pvar->shape, s1, sizeof s1), cd_shape_str(ps, s2, sizeof s2));
    const double *va = NULL;
    int nv = cd_attr_floats(c->op, "variance", &va);
    if (nv != 0 && nv != 4)
        return cd_op_fail(c, CD_E_MODEL, "attribute variance has %d values; it needs 4 (or none)", nv);
    for (int i = 0; i < nv; i++) b->var_attr[i] = (float)va[i]; /* as stored, NaN/Inf included */
    b->has_var_attr = nv == 4;
    if (b->decode) {
        if (ts->rank != 3 || ts->d[2] != 4)
            return cd_op_fail(c, CD_E_MODEL, "decode_center_size needs TargetBox [N, M, 4], got %s",
                              cd_shape_str(ts, s1, sizeof s1));
        b->n = ts->d[0];
        b->k = ts->d[1];
        int64_t along = b->axis == 0 ? b->k : b->n;
        if (along != b->m)
            return cd_op_fail(c, CD_E_MODEL,
                              "TargetBox %s dim %d must equal the %lld priors of PriorBox %s (axis = %d)",
                              cd_shape_str(ts, s1, sizeof s1), b->axis == 0 ? 1 : 0, (long long)b->m,
                              cd_shape_str(ps, s2, sizeof s2), b->axis);
    } else {
        if (ts->rank != 2 || ts->d[1] != 4)
            return cd_op_fail(c, CD_E_MODEL, "encode_center_size needs TargetBox [N, 4], got %s",
                              cd_shape_str(ts, s1, sizeof s1));
        b->n = ts->d[0];
        b->k = b->m;
    }
    return CD_OK;
}

cd_status cd_box_coder_infer(cd_op_ctx *c) {
    coder b;
    cd_status s = coder_read(c, &b);
    if (s) return s;
    b.out->dtype = cd_act_dtype(c);
    b.out->shape.rank = 3;
    b.out->shape.d[0] = b.n;
    b.out->shape.d[1] = b.k;
    b.out->shape.d[2] = 4;
    return CD_OK;
}

cd_status cd_box_coder_run(cd_op_ctx *c) {
    coder b;
    cd_status s = coder_read(c, &b);
    if (s) return s;
    int64_t tn = b.decode ? b.n * b.k : b.n;
    size_t bytes = ((size_t)b.m * 4 * (b.pvar ? 2 : 1) + (size_t)tn * 4 + (size_t)b.n * b.k * 4) * sizeof(float);
    float *prior = cd_malloc(bytes, c->err);
    if (!prior) return CD_E_NOMEM;
    float *pvar = prior + b.m * 4;
    float *tgt = pvar + (b.pvar ? b.m * 4 : 0);
    float *out = tgt + tn * 4;
    cd_detect_load_f32(b.prior, prior, b.m * 4);
    if (b.pvar) cd_detect_load_f32(b.pvar, pvar, b.m * 4);
    cd_detect_load_f32(b.target, tgt, tn * 4);
    const float one = b.norm ? 0.0f : 1.0f;
    static const float unit[4] = {1, 1, 1, 1};
    for (int64_t i = 0; i < b.n; i++)
        for (int64_t j = 0; j < b.k; j++) {
            int64_t pj = b.decode && b.axis == 1 ? i : j;
            const float *p = prior + pj * 4;
            const float *v = b.pvar ? pvar + pj * 4 : b.has_var_attr ? b.var_attr : unit;
            float pw = p[2] - p[0] + one, ph = p[3] - p[1] + one;
            float pcx = p[0] + pw * 0.5f, pcy = p[1] + ph * 0.5f;
            float *o = out + (i * b.k + j) * 4;
            if (b.decode) {
                const float *t = tgt + (i * b.k + j) * 4;
                float cx = v[0] * t[0] * pw + pcx, cy = v[1] * t[1] * ph + pcy;
                float w = expf(v[2] * t[2]) * pw, h = expf(v[3] * t[3]) * ph;
                o[0] = cx - w * 0.5f;
                o[1] = cy - h * 0.5f;
                o[2] = cx + w * 0.5f - one;
                o[3] = cy + h * 0.5f - one;
            } else {
                const float *t = tgt + i * 4;
                float tcx = (t[0] + t[2]) * 0.5f, tcy = (t[1] + t[3]) * 0.5f;
                float tw = t[2] - t[0] + one, th = t[3] - t[1] + one;
                o[0] = (tcx - pcx) / pw / v[0];
                o[1] = (tcy - pcy) / ph / v[1];
                o[2] = logf(fabsf(tw / pw)) / v[2];
                o[3] = logf(fabsf(th / ph)) / v[3];
            }
        }
    cd_detect_store_f32(b.out, 0, out, b.n * b.k * 4);
    free(prior);
    return CD_OK;
}
