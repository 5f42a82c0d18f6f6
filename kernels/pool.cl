/* pool2d (docs/nb-format.md §7.5): max / avg, exclusive or not, adaptive, global, ceil_mode.
 * The host turns global pooling into a full-size window and SAME/VALID into pads. One
 * work-item per output element, global (Wo, Ho, N*C). */
__kernel void pool2d(__global const REAL *in, __global REAL *out, int H, int W, int Ho, int Wo, int kh, int kw,
                     int sh, int sw, int pt, int pb, int pl, int pr, int is_max, int exclusive, int adaptive) {
    const int ox = get_global_id(0), oy = get_global_id(1), nc = get_global_id(2);
    if (ox >= Wo || oy >= Ho) return;
    int y0, y1, x0, x1;
    if (adaptive) {
        y0 = (oy * H) / Ho;
        y1 = ((oy + 1) * H + Ho - 1) / Ho;
        x0 = (ox * W) / Wo;
        x1 = ((ox + 1) * W + Wo - 1) / Wo;
    } else {
        y0 = oy * sh - pt;
        x0 = ox * sw - pl;
        y1 = y0 + kh;
        x1 = x0 + kw;
    }
    /* the window clipped to the padded extent: the divisor of non-exclusive averages */
    int py0 = max(y0, -pt), py1 = min(y1, H + pb), px0 = max(x0, -pl), px1 = min(x1, W + pr);
    y0 = max(y0, 0);
    x0 = max(x0, 0);
    y1 = min(y1, H);
    x1 = min(x1, W);
    __global const REAL *ib = in + (size_t)nc * H * W;
    const int o = (nc * Ho + oy) * Wo + ox;
    if (is_max) {
        ACC m = ACC_LOWEST;
        bool any = false;
        for (int y = y0; y < y1; y++)
            for (int x = x0; x < x1; x++) {
                ACC v = LOAD(ib, y * W + x);
                /* NaN-propagating like the CPU's `v > m || isnan(v)` */
                if (!any || v > m || isnan((float)v)) m = v;
                any = true;
            }
        STORE(out, o, any ? m : ACC_ZERO);
        return;
    }
    float s = 0.0f;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) s += LOADF(ib, y * W + x);
    int cnt = (exclusive || adaptive) ? (y1 - y0) * (x1 - x0) : (py1 - py0) * (px1 - px0);
    STORE(out, o, cnt > 0 ? s / (float)cnt : 0.0f);
}
