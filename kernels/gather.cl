/* Gather family (op coverage additions, CPU twin: backends/cpu/ops_more_data.c): expand /
 * expand_v2 (tiling and broadcasting by index arithmetic), gather along an axis (int32 or
 * int64 indices), pixel_shuffle (NCHW) and grid_sampler (bilinear / nearest; zeros, border,
 * reflection padding; align_corners). Data movement copies through LOAD/STORE, exact in every
 * variant; grid_sampler computes coordinates, weights and the blend in float. */
#pragma OPENCL FP_CONTRACT OFF

int gx_get(int8 v, int d) {
    switch (d) {
    case 0: return v.s0; case 1: return v.s1; case 2: return v.s2; case 3: return v.s3;
    case 4: return v.s4; case 5: return v.s5; case 6: return v.s6;
    }
    return v.s7;
}

/* out[i] = x[sum_d ((o_d mod xdims_d) * xstr_d)] over the `nd` output dims. */
__kernel void expand(__global const REAL *x, __global REAL *y, int n, int nd, int8 odims, int8 xdims, int8 xstr) {
    int i = get_global_id(0);
    if (i >= n) return;
    int q = i, off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        int od = gx_get(odims, d);
        off += ((q % od) % gx_get(xdims, d)) * gx_get(xstr, d);
        q /= od;
    }
    STORE(y, i, LOAD(x, off));
}

/* Out viewed as [outer, N, inner] takes X [outer, A, inner] at the indexed slice. An index
 * outside [0, A) (the CPU kernel refuses it) gives 0 instead of reading out of bounds. */
__kernel void gather(__global const REAL *x, __global REAL *y, __global const int *i32, __global const long *i64,
                     int n, int N, int A, int inner) {
    int i = get_global_id(0);
    if (i >= n) return;
    int in_ = i % inner, j = (i / inner) % N, o = i / (inner * N);
    long k = i64 ? i64[j] : (long)i32[j];
    if (k < 0 || k >= A) {
        STORE(y, i, ACC_ZERO);
        return;
    }
    STORE(y, i, LOAD(x, (o * A + (int)k) * inner + in_));
}

/* Out[n, c, oy, ox] = X[n, c*r*r + (oy % r)*r + ox % r, oy / r, ox / r]. */
__kernel void pixel_shuffle(__global const REAL *x, __global REAL *y, int total, int C, int Ho, int Wo, int H, int W,
                            int r) {
    int i = get_global_id(0);
    if (i >= total) return;
    int ox = i % Wo, oy = (i / Wo) % Ho, c = (i / (Wo * Ho)) % C, nb = i / (Wo * Ho * C);
    int ic = c * r * r + (oy % r) * r + ox % r;
    STORE(y, i, LOAD(x, ((nb * C * r * r + ic) * H + oy / r) * W + ox / r));
}

/* Reflects v into [lo2/2, hi2/2] (bounds given doubled). */
float gs_reflect(float v, int lo2, int hi2) {
    if (lo2 == hi2) return 0.0f;
    float mn = (float)lo2 / 2.0f, span = (float)(hi2 - lo2) / 2.0f;
    v = fabs(v - mn);
    float extra = fmod(v, span);
    int flips = (int)floor(v / span);
    return (flips % 2 == 0) ? extra + mn : span - extra + mn;
}

/* pad: 0 zeros, 1 border, 2 reflection. */
float gs_coord(float g, int size, int pad, int align) {
    float sz = (float)size;
    float v = align ? (g + 1.0f) / 2.0f * (sz - 1.0f) : ((g + 1.0f) * sz - 1.0f) / 2.0f;
    if (pad == 2) v = align ? gs_reflect(v, 0, 2 * (size - 1)) : gs_reflect(v, -1, 2 * size - 1);
    if (pad >= 1) v = fmin(fmax(v, 0.0f), sz - 1.0f);
    return v;
}

__kernel void grid_sampler(__global const REAL *x, __global const REAL *grid, __global REAL *y, int total, int C,
                           int H, int W, int Ho, int Wo, int nearest, int pad, int align) {
    int i = get_global_id(0);
    if (i >= total) return;
    int ox = i % Wo, oy = (i / Wo) % Ho, c = (i / (Wo * Ho)) % C, nb = i / (Wo * Ho * C);
    int gi = ((nb * Ho + oy) * Wo + ox) * 2;
    float fx = gs_coord(LOADF(grid, gi), W, pad, align), fy = gs_coord(LOADF(grid, gi + 1), H, pad, align);
    int base = (nb * C + c) * H * W;
    float v = 0.0f;
    if (nearest) {
        float rx = round(fx), ry = round(fy);
        if (rx >= 0.0f && rx <= (float)(W - 1) && ry >= 0.0f && ry <= (float)(H - 1))
            v = LOADF(x, base + (int)ry * W + (int)rx);
    } else if (isfinite(fx) && isfinite(fy) && fx > -2.0f && fy > -2.0f && fx < (float)W + 1.0f &&
               fy < (float)H + 1.0f) {
        float x0f = floor(fx), y0f = floor(fy);
        int x0 = (int)x0f, y0 = (int)y0f;
        float wx1 = fx - x0f, wy1 = fy - y0f, wx0 = 1.0f - wx1, wy0 = 1.0f - wy1;
        for (int dy = 0; dy < 2; dy++)
            for (int dx = 0; dx < 2; dx++) {
                int yy = y0 + dy, xx = x0 + dx;
                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                v += LOADF(x, base + yy * W + xx) * (dy ? wy1 : wy0) * (dx ? wx1 : wx0);
            }
    }
    STOREF(y, i, v);
}

/* top_k / top_k_v2: one work-item per row (outer x inner); the k best values are kept sorted in
 * the output itself by insertion (values and indices), in the CPU kernel's order: larger first
 * (smaller with !largest), NaN largest, then the lower index. */
bool tk_before(float a, long ia, float b, long ib, int largest) {
    bool na = isnan(a), nb = isnan(b);
    bool gt = (na && !nb) || (!na && !nb && a > b), lt = (nb && !na) || (!na && !nb && a < b);
    if (largest ? gt : lt) return true;
    if (largest ? lt : gt) return false;
    return ia < ib;
}

__kernel void topk(__global const REAL *x, __global REAL *y, __global long *ind, int rows, int len, int inner, int k,
                   int largest) {
    int row = get_global_id(0);
    if (row >= rows) return;
    int ob = row / inner, in_ = row % inner, cnt = 0;
    for (int j = 0; j < len; j++) {
        float v = LOADF(x, (ob * len + j) * inner + in_);
        if (cnt == k && !tk_before(v, j, LOADF(y, (ob * k + k - 1) * inner + in_), ind[(ob * k + k - 1) * inner + in_],
                                   largest))
            continue;
        int pos = cnt < k ? cnt++ : k - 1;
        while (pos > 0) {
            int prev = (ob * k + pos - 1) * inner + in_;
            float pv = LOADF(y, prev);
            long pi = ind[prev];
            if (!tk_before(v, j, pv, pi, largest)) break;
            STOREF(y, prev + inner, pv);
            ind[prev + inner] = pi;
            pos--;
        }
        STOREF(y, (ob * k + pos) * inner + in_, v);
        ind[(ob * k + pos) * inner + in_] = j;
    }
}

/* unbind: out = slice `sel` of X viewed as [outer, A, inner]. */
__kernel void take(__global const REAL *x, __global REAL *y, int n, int A, int inner, int sel) {
    int i = get_global_id(0);
    if (i >= n) return;
    STORE(y, i, LOAD(x, ((i / inner) * A + sel) * inner + i % inner));
}

/* gather_nd: out[m, r] = X[idx[m, 0..K-1], r] with r < inner; xd/xs: the first K dims of X
 * and their element strides. An index outside [0, dim) gives 0 (the CPU kernel refuses it). */
__kernel void gather_nd(__global const REAL *x, __global REAL *y, __global const int *i32, __global const long *i64,
                        int n, int K, int inner, int8 xd, int8 xs) {
    int i = get_global_id(0);
    if (i >= n) return;
    int m = i / inner, r = i % inner, off = 0;
    for (int j = 0; j < K; j++) {
        long k = i64 ? i64[m * K + j] : (long)i32[m * K + j];
        if (k < 0 || k >= gx_get(xd, j)) {
            STORE(y, i, ACC_ZERO);
            return;
        }
        off += (int)k * gx_get(xs, j);
    }
    STORE(y, i, LOAD(x, off + r));
}
