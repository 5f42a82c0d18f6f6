/* softmax / log_softmax along one axis (docs/nb-format.md §7.11). The tensor is viewed as
 * [outer, len, inner]; one work-item per (outer, inner) row. Max, sum and the division run
 * in float whatever the variant: a half sum over a long axis would lose the small terms. */
__kernel void softmax(__global const REAL *x, __global REAL *y, int outer, int len, int inner, int is_log) {
    const int i = get_global_id(0);
    if (i >= outer * inner) return;
    const int o = i / inner, in = i - o * inner;
    const size_t base = (size_t)o * len * inner + in;
    float m = -INFINITY;
    for (int j = 0; j < len; j++) m = fmax(m, LOADF(x, base + (size_t)j * inner));
    float s = 0.0f;
    for (int j = 0; j < len; j++) s += exp(LOADF(x, base + (size_t)j * inner) - m);
    if (is_log) {
        float ls = log(s);
        for (int j = 0; j < len; j++) STOREF(y, base + (size_t)j * inner, LOADF(x, base + (size_t)j * inner) - m - ls);
    } else {
        float r = 1.0f / s;
        for (int j = 0; j < len; j++) STOREF(y, base + (size_t)j * inner, exp(LOADF(x, base + (size_t)j * inner) - m) * r);
    }
}
