/* Math family (op coverage additions, CPU twin: backends/cpu/ops_more_math.c): sin, cos, tan,
 * asin, acos, atan, pow (scalar factor), comparisons (greater_than, greater_equal, less_than,
 * less_equal, equal, not_equal) with Paddle axis broadcasting (strides
 * resolved on the host, 0 = broadcast), lrn across channels, reduce_sum / reduce_mean / reduce_max / reduce_min.
 * Transcendental results are evaluated in float and rounded once to the storage type; lrn and
 * reduce_mean sum in float in every variant (LOADF), as the CPU kernels do. */
#pragma OPENCL FP_CONTRACT OFF

/* kinds: K_SIN .. K_ATAN, K_POW (the header generated from src/engine/op_list.def) */

/* Component d of an int8 vector (OpenCL C cannot index vectors with a variable). */
int mx_get(int8 v, int d) {
    switch (d) {
    case 0: return v.s0; case 1: return v.s1; case 2: return v.s2; case 3: return v.s3;
    case 4: return v.s4; case 5: return v.s5; case 6: return v.s6;
    }
    return v.s7;
}

/* ft: pow's FactorTensor when it is produced at run time (NULL: use `factor`). */
__kernel void math_unary(__global const REAL *x, __global REAL *y, int n, int kind, float factor,
                         __global const REAL *ft) {
    int i = get_global_id(0);
    if (i >= n) return;
    float f = LOADF(x, i), r;
    switch (kind) {
    case K_SIN: r = sin(f); break;
    case K_COS: r = cos(f); break;
    case K_TAN: r = tan(f); break;
    case K_ASIN: r = asin(f); break;
    case K_ACOS: r = acos(f); break;
    case K_ATAN: r = atan(f); break;
    default: r = pow(f, ft ? LOADF(ft, 0) : factor); break;
    }
    STOREF(y, i, r);
}

/* out[i] = x[xo] CMP y[yo] as a bool byte, CMP by `op`: 0 >, 1 >=, 2 <, 3 <=, 4 ==, 5 != (NaN is
 * unordered: only != holds); (xo, yo) from i split over the `nd` output dims. */
__kernel void compare(__global const REAL *x, __global const REAL *y, __global uchar *out, int n, int op, int nd,
                      int8 dims, int8 sx, int8 sy) {
    int i = get_global_id(0);
    if (i >= n) return;
    int xo = 0, yo = 0, r = i;
    for (int d = nd - 1; d >= 0; d--) {
        int dim = mx_get(dims, d), q = r % dim;
        r /= dim;
        xo += q * mx_get(sx, d);
        yo += q * mx_get(sy, d);
    }
    float a = LOADF(x, xo), b = LOADF(y, yo);
    bool res;
    switch (op) {
    case 0: res = a > b; break;
    case 1: res = a >= b; break;
    case 2: res = a < b; break;
    case 3: res = a <= b; break;
    case 4: res = a == b; break;
    default: res = a != b; break;
    }
    out[i] = res ? (uchar)1 : (uchar)0;
}

/* lrn: Out = X * (k + alpha * sum of X^2 over channels [c - pre, c - pre + size))^(-beta). */
__kernel void lrn(__global const REAL *x, __global REAL *y, int total, int C, int HW, int size, float k, float alpha,
                  float beta) {
    int i = get_global_id(0);
    if (i >= total) return;
    int hw = i % HW, c = (i / HW) % C, nb = i / (HW * C);
    int lo = c - (size - 1) / 2, hi = lo + size;
    lo = max(lo, 0);
    hi = min(hi, C);
    float sum = 0.0f;
    for (int j = lo; j < hi; j++) {
        float v = LOADF(x, (nb * C + j) * HW + hw);
        sum += v * v;
    }
    STOREF(y, i, LOADF(x, i) * pow(k + alpha * sum, -beta));
}

/* reduce over the dims in (rd, rs) (innermost first) for each output element, whose offset in
 * X comes from the kept dims (kd, ks), innermost first. op: 0 sum, 1 mean, 2 max, 3 min. */
__kernel void reduce(__global const REAL *x, __global REAL *y, int M, int nk, int8 kd, int8 ks, int nr, int8 rd,
                     int8 rs, int R, int op) {
    int m = get_global_id(0);
    if (m >= M) return;
    int base = 0, q = m;
    for (int d = 0; d < nk; d++) {
        base += (q % mx_get(kd, d)) * mx_get(ks, d);
        q /= mx_get(kd, d);
    }
    float acc = 0.0f;
    for (int r = 0; r < R; r++) {
        int off = base, qq = r;
        for (int d = 0; d < nr; d++) {
            off += (qq % mx_get(rd, d)) * mx_get(rs, d);
            qq /= mx_get(rd, d);
        }
        float v = LOADF(x, off);
        if (op < 2) acc += v;
        else if (r == 0 || (op == 2 ? v > acc : v < acc) || isnan(v)) acc = v;
    }
    STOREF(y, m, op == 1 ? acc / (float)R : acc);
}
