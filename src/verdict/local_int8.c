/* int8 layers in the local check (see local_int8.h). */
#include "verdict/local_int8.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cd_local_run_int8_arm(const cd_dump_reader *r, const char *run) {
    char path[256], buf[32] = "";
    cd_error e = {0};
    snprintf(path, sizeof path, "/runs/%s", run);
    return cd_dump_attr_str(r, path, "int8_mode", buf, sizeof buf, &e) == CD_OK && !strcmp(buf, "arm");
}

static bool is_copy(const char *t) {
    return !strcmp(t, "io_copy") || !strcmp(t, "io_copy_once") || !strcmp(t, "layout") || !strcmp(t, "layout_once");
}

static float first_scale(const cd_op *op, const char *name) {
    const double *s;
    return cd_attr_floats(op, name, &s) > 0 ? (float)s[0] : NAN;
}

/* Whether tensor id holds values on the int8 grid of scale s: written (through placement copies)
 * by a calib to int8 or an int8-output layer with that scale. */
static bool on_grid(const cd_graph *g, int id, float s) {
    for (int hops = 0; id >= 0 && hops <= g->n_ops; hops++) {
        int p = g->tensors[id].producer;
        if (p < 0) return false;
        const cd_op *op = &g->ops[p];
        if (is_copy(op->type)) {
            id = op->n_in > 0 && op->in[0].n > 0 ? op->in[0].ids[0] : -1;
            continue;
        }
        const char *al = op->kernel.present ? op->kernel.alias : "";
        if (!strcmp(op->type, "calib")) return strstr(al, "_to_int8") && (float)cd_attr_float(op, "scale", 0) == s;
        if (strstr(al, "int8")) {
            float o = first_scale(op, "Output0_scale");
            if (isnan(o)) o = first_scale(op, "Out0_scale");
            return o == s;
        }
        return false;
    }
    return false;
}

/* max |x| of tensor id as A's run stored it (its statistics; a model input from /inputs), or
 * NAN when unknown. */
static double stored_absmax(const cd_graph *g, int id, const cd_dump_reader *r, const char *run) {
    if (!r || !run) return NAN;
    int prod = g->tensors[id].producer;
    if (prod < 0 || !strcmp(g->ops[prod].type, "feed")) {
        /* a model input is not a probed tensor: its values are in /inputs (was: unknown, so
         * the first int8 layer of a model fed floats got an infinite bound) */
        cd_value v = {0};
        cd_error e = {0};
        if (cd_dump_read_input(r, g->tensors[id].name, &v, &e) != CD_OK) return NAN;
        double m = 0;
        for (int64_t i = 0, n = cd_value_numel(&v); i < n; i++) m = fmax(m, fabs(cd_value_get(&v, i)));
        cd_value_release(&v);
        return m;
    }
    cd_dump_tensor_info *t = NULL;
    int nt = 0;
    cd_error e = {0};
    double m = NAN;
    if (cd_dump_list_tensors(r, run, &t, &nt, &e) != CD_OK) return NAN;
    for (int i = 0; i < nt; i++)
        if (t[i].op_index == g->tensors[id].producer && !strcmp(t[i].tensor, g->tensors[id].name) && t[i].has_stats)
            m = fmax(fabs(t[i].stats.min), fabs(t[i].stats.max));
    free(t);
    return m;
}

/* matmul / matmul_v2 with an INT8 Y: the largest sum over k of |Y| * scale of one output column
 * (Y [.., K, N], or [.., N, K] transposed; a 1-D Y is one column, or v1's outer product's N
 * columns of one value each), over every batch of Y. */
static double mm_column_sums(const cd_op *op, const cd_tensor *w, const double *ws, int nws) {
    bool v2 = !strcmp(op->type, "matmul_v2");
    bool ty = cd_attr_bool(op, v2 ? "trans_y" : "transpose_Y", false);
    int r = w->shape.rank;
    int64_t numel = cd_shape_numel(&w->shape), N = 1, K = w->shape.d[r - 1];
    bool outer = r == 1 && !v2 && ty && cd_attr_bool(op, "transpose_X", false);
    if (r >= 2)
        N = ty ? w->shape.d[r - 2] : w->shape.d[r - 1];
    else if (outer)
        N = w->shape.d[0];
    double *sum = calloc((size_t)(N > 0 ? N : 1), sizeof(double)), best = 0;
    if (!sum) return INFINITY;
    const int8_t *q = w->data;
    for (int64_t e = 0; e < numel; e++) {
        int64_t c = r < 2 ? (outer ? e : 0) : ty ? (e / K) % N : e % N;
        sum[c] += abs(q[e]);
        if (r >= 3 && (e + 1) % (w->shape.d[r - 2] * w->shape.d[r - 1]) == 0) { /* end of one batch matrix */
            for (int64_t j = 0; j < N; j++) best = fmax(best, sum[j] * fabs(ws[j < nws ? j : 0])), sum[j] = 0;
        }
    }
    for (int64_t j = 0; j < N; j++) best = fmax(best, sum[j] * fabs(ws[j < nws ? j : 0]));
    free(sum);
    return best;
}

bool cd_local_spec_int8(const cd_graph *g, int op_index, const cd_dump_reader *r, const char *run_a,
                        cd_bound_spec *spec, char *desc, size_t n) {
    const cd_op *op = &g->ops[op_index];
    bool conv = !strcmp(op->type, "conv2d") || !strcmp(op->type, "depthwise_conv2d"), fc = !strcmp(op->type, "fc");
    bool mm = !strcmp(op->type, "matmul") || !strcmp(op->type, "matmul_v2");
    bool mul = mm || !strcmp(op->type, "mul"); /* X [M, K] times Y [K, N]: like fc, float output only */
    if ((!conv && !fc && !mul) || !op->kernel.present || op->kernel.precision != 2) return false;
    int wid = cd_op_in(op, conv ? "Filter" : mul ? "Y" : "W", 0), xid = cd_op_in(op, mul ? "X" : "Input", 0);
    if (wid < 0 || xid < 0) return false;
    const cd_tensor *w = &g->tensors[wid];
    if (!w->persistable || w->dtype != CD_I8 || !w->data || w->shape.rank < 1) return false;
    const double *ws;
    int nws = cd_attr_floats(op, conv ? "Filter0_scale" : mul ? "Y0_scale" : "W0_scale", &ws);
    float in_s = first_scale(op, mul ? "X0_scale" : "Input0_scale");
    if (nws < 1 || isnan(in_s)) return false;
    bool out8 = !mul && strstr(op->kernel.alias, "int8") != NULL;
    float out_s = first_scale(op, conv ? "Output0_scale" : "Out0_scale");
    /* an input off the int8 grid (a float tensor the kernel quantizes itself): on each input half
     * a step of in_s, or what the [-127, 127] clamp cuts off beyond 127 in_s (from the stored
     * range; unknown range: no bound), times the largest sum |w| of an output channel */
    double grid = 0;
    if (!on_grid(g, xid, in_s)) {
        double xm = stored_absmax(g, xid, r, run_a), step = 0.5 * fabs(in_s);
        double ein = isnan(xm) ? INFINITY : fmax(step, xm - 127 * fabs(in_s));
        int64_t numel = cd_shape_numel(&w->shape), nch = conv ? w->shape.d[0] : w->shape.d[w->shape.rank - 1];
        const int8_t *q = w->data;
        if (mm) grid = mm_column_sums(op, w, ws, nws);
        for (int64_t c = 0; c < nch && numel > 0 && !mm; c++) {
            double sum = 0, sc = fabs(ws[nws == 1 ? 0 : c]);
            if (conv)
                for (int64_t k = c * (numel / nch); k < (c + 1) * (numel / nch); k++) sum += abs(q[k]);
            else
                for (int64_t k = c; k < numel; k += nch) sum += abs(q[k]);
            if (sum * sc > grid) grid = sum * sc;
        }
        grid *= ein;
    }
    double act_abs = spec->abs_terms;
    spec->fam = CD_FAM_INT8;
    spec->quantum = out8 && !isnan(out_s) ? fabs(out_s) : 0;
    spec->abs_terms = grid + act_abs * (spec->ref.u + spec->b.u) * (spec->safety > 0 ? spec->safety : 1);
    spec->mag_run = true;
    if (desc && n) {
        char act[64] = "";
        const char *a = strstr(desc, " act=");
        if (a) snprintf(act, sizeof act, "%s", a);
        int k = snprintf(desc, n, "int8 K=%lld %s", (long long)spec->K, out8 ? "int8_out" : "fp32_out");
        if (out8 && k > 0 && (size_t)k < n) k += snprintf(desc + k, n - (size_t)k, " quantum=%g", spec->quantum);
        if (grid > 0 && k > 0 && (size_t)k < n) k += snprintf(desc + k, n - (size_t)k, " input off the int8 grid");
        if (k > 0 && (size_t)k < n) snprintf(desc + k, n - (size_t)k, "%s", act);
    }
    return true;
}
