/* bilinear_interp / nearest_interp and their _v2 forms (docs/nb-format.md §7.20), NCHW. The host
 * computes the per-axis ratios exactly as the CPU kernel does; the taps are recomputed here
 * with the same float operations, and contraction into fma is off so that the source
 * coordinates (and so the chosen pixels) are bit-identical to the CPU's.
 * Global (Wo, Ho, N*C). */
#pragma OPENCL FP_CONTRACT OFF

void ip_tap(int d, int in, float ratio, int bilinear, int align_corners, int align_mode, int *i0, int *i1,
            float *lam) {
    if (!bilinear) {
        float src = align_corners ? (float)d * ratio + 0.5f : (float)d * ratio;
        int i = (int)src;
        i = clamp(i, 0, in - 1);
        *i0 = *i1 = i;
        *lam = 0.0f;
        return;
    }
    float src;
    if (!align_corners && align_mode == 0) {
        src = ((float)d + 0.5f) * ratio - 0.5f;
        if (src < 0.0f) src = 0.0f;
    } else {
        src = (float)d * ratio;
    }
    int i = (int)src;
    if (i > in - 1) i = in - 1;
    *i0 = i;
    *i1 = i + 1 < in ? i + 1 : in - 1;
    float l = src - (float)i;
    *lam = l < 0.0f ? 0.0f : l;
}

__kernel void interp(__global const REAL *in, __global REAL *out, int H, int W, int Ho, int Wo, float rh, float rw,
                     int bilinear, int align_corners, int align_mode) {
    const int ox = get_global_id(0), oy = get_global_id(1), p = get_global_id(2);
    if (ox >= Wo || oy >= Ho) return;
    int y0, y1, x0, x1;
    float ly, lx;
    ip_tap(oy, H, rh, bilinear, align_corners, align_mode, &y0, &y1, &ly);
    ip_tap(ox, W, rw, bilinear, align_corners, align_mode, &x0, &x1, &lx);
    __global const REAL *ib = in + (size_t)p * H * W;
    const size_t o = ((size_t)p * Ho + oy) * Wo + ox;
    if (!bilinear) {
        STOREF(out, o, LOADF(ib, y0 * W + x0));
        return;
    }
    const float vy = 1.0f - ly, vx = 1.0f - lx;
    float v = vy * (vx * LOADF(ib, y0 * W + x0) + lx * LOADF(ib, y0 * W + x1)) +
              ly * (vx * LOADF(ib, y1 * W + x0) + lx * LOADF(ib, y1 * W + x1));
    STOREF(out, o, v);
}
