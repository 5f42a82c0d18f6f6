/* Normalisations (docs/nb-format.md §7.3, §7.23, §7.25): batch_norm (inference), layer_norm,
 * instance_norm. Statistics are computed in float in every variant (two passes: mean,
 * then mean of squared deviations), by a 256-wide work-group per row with a tree
 * reduction in local memory. */
#define WG 256

/* y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c]; channel c = (i / inner) % C */
__kernel void batch_norm(__global const REAL *x, __global REAL *y, __global const REAL *scale,
                         __global const REAL *bias, __global const REAL *mean, __global const REAL *var, int n, int C,
                         int inner, float eps) {
    int i = get_global_id(0);
    if (i >= n) return;
    int c = (i / inner) % C;
    float inv = 1.0f / sqrt(LOADF(var, c) + eps);
    STOREF(y, i, (LOADF(x, i) - LOADF(mean, c)) * inv * LOADF(scale, c) + LOADF(bias, c));
}

/* Sum of v over the work-group (all items get the result). */
float wg_sum(__local float *red, float v) {
    const int l = get_local_id(0);
    red[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {
        if (l < s) red[l] += red[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Row statistics of x[base .. base+len) */
void row_stats(__global const REAL *x, size_t base, int len, __local float *red, float *mu, float *var) {
    const int l = get_local_id(0);
    float s = 0.0f;
    for (int j = l; j < len; j += WG) s += LOADF(x, base + j);
    *mu = wg_sum(red, s) / (float)len;
    float q = 0.0f;
    for (int j = l; j < len; j += WG) {
        float d = LOADF(x, base + j) - *mu;
        q += d * d;
    }
    *var = wg_sum(red, q) / (float)len;
}

/* One work-group per row of the [rows, len] view; scale/bias (length len) optional;
 * mean_out/var_out (length rows) optional. */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
layer_norm(__global const REAL *x, __global REAL *y, __global const REAL *scale, __global const REAL *bias,
           __global REAL *mean_out, __global REAL *var_out, int len, float eps) {
    __local float red[WG];
    const int row = get_group_id(0), l = get_local_id(0);
    const size_t base = (size_t)row * len;
    float mu, var;
    row_stats(x, base, len, red, &mu, &var);
    float inv = 1.0f / sqrt(var + eps);
    for (int j = l; j < len; j += WG) {
        float v = (LOADF(x, base + j) - mu) * inv;
        if (scale) v *= LOADF(scale, j);
        if (bias) v += LOADF(bias, j);
        STOREF(y, base + j, v);
    }
    if (l == 0) {
        if (mean_out) STOREF(mean_out, row, mu);
        if (var_out) STOREF(var_out, row, var);
    }
}

/* One work-group per (n, c) plane of HW elements; scale/bias per channel (optional);
 * act: 0 none, 1 relu, 3 leaky_relu(a) (the OpenCL fusion's activation_type). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
instance_norm(__global const REAL *x, __global REAL *y, __global const REAL *scale, __global const REAL *bias,
              __global REAL *mean_out, __global REAL *var_out, int C, int hw, float eps, int act, float a) {
    __local float red[WG];
    const int nc = get_group_id(0), l = get_local_id(0), c = nc % C;
    const size_t base = (size_t)nc * hw;
    float mu, var;
    row_stats(x, base, hw, red, &mu, &var);
    float inv = 1.0f / sqrt(var + eps);
    float sc = scale ? LOADF(scale, c) : 1.0f, bi = bias ? LOADF(bias, c) : 0.0f;
    for (int j = l; j < hw; j += WG) {
        float v = (LOADF(x, base + j) - mu) * inv * sc + bi;
        if (act == 1) v = v < 0.0f ? 0.0f : v;
        else if (act == 3) v = v < 0.0f ? a * v : v;
        STOREF(y, base + j, v);
    }
    if (l == 0) {
        if (mean_out) STOREF(mean_out, nc, mu);
        if (var_out) STOREF(var_out, nc, inv); /* Paddle's SavedVariance: 1/sqrt(var + eps), as the CPU */
    }
}
