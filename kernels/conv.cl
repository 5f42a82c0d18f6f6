/* Convolution family (docs/nb-format.md §7.1, §7.2): conv2d / depthwise_conv2d with groups,
 * dilation, 4-value padding (SAME/VALID already turned into pads by the host), bias, fused
 * activation (incl. prelu), SecondInput residual; conv2d_transpose.
 *
 * conv2d_gemm_<rm><rn> is an implicit GEMM per (batch, group): out[m, p] = sum_k W[m, k] *
 * col[k, p] with m = output channel, p = output pixel, k = (ic, ky, kx). A 16x16 work-group
 * computes a (16 rm) x (16 rn) tile of out, each work-item an rm x rn register block (see
 * cv_gemm). Tiles of W and of the im2col matrix go through double-buffered local memory,
 * TK = 16 deep. For the 1x1 stride-1 unpadded case (direct = 1) col is the input itself
 * viewed as [Cin, H*W], so the index decode is skipped. Every output is summed in k order,
 * one mad per term, whatever the block size. */

#define TK 16

/* Fused activation kinds: the op table's K_<TYPE> (the cd_act_kind numbers of engine/ops.h, from
 * the header generated from src/engine/op_list.def), under this file's short names. */
#define A_NONE K_NONE
#define A_RELU K_RELU
#define A_RELU6 K_RELU6
#define A_LEAKY K_LEAKY_RELU
#define A_SIGMOID K_SIGMOID
#define A_TANH K_TANH
#define A_SWISH K_SWISH
#define A_HSWISH K_HARD_SWISH
#define A_HSIGMOID K_HARD_SIGMOID
#define A_PRELU K_PRELU
#define A_ABS K_ABS

ACC cv_act(int kind, ACC x, float a, float b, float c, ACC al) {
    float f = (float)x;
    switch (kind) {
    case A_RELU: return x < ACC_ZERO ? ACC_ZERO : x;
    case A_RELU6: return f < 0.0f ? ACC_ZERO : (f > a ? (ACC)a : x);
    case A_LEAKY: return x < ACC_ZERO ? (ACC)(a * f) : x;
    case A_PRELU: return x < ACC_ZERO ? al * x : x;
    case A_SIGMOID: return (ACC)(1.0f / (1.0f + exp(-f)));
    case A_TANH: return (ACC)tanh(f);
    case A_SWISH: return (ACC)(f / (1.0f + exp(-a * f)));
    case A_HSWISH: {
        float t = f + c;
        return (ACC)(f * (t < 0.0f ? 0.0f : (t > a ? a : t)) / b);
    }
    case A_HSIGMOID: {
        float t = a * f + b;
        return (ACC)(t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t));
    }
    case A_ABS: return (ACC)fabs(f);
    }
    return x;
}

/* Bias, activation, residual add (+relu) for output element (n, oc, pixel p); `o` is the
 * flat output index. amode: prelu alpha 0 = one value, 1 = per channel, 2 = per element. */
void cv_store(__global REAL *out, int o, ACC v, int oc, int p, int npix, __global const REAL *bias,
              __global const REAL *res, __global const REAL *alpha, int kind, float a, float b, float c,
              int amode, int res_relu) {
    if (bias) v += LOAD(bias, oc);
    ACC al = ACC_ZERO;
    if (kind == A_PRELU) al = LOAD(alpha, amode == 0 ? 0 : (amode == 1 ? oc : oc * npix + p));
    v = cv_act(kind, v, a, b, c, al);
    if (res) {
        v += LOAD(res, o);
        if (res_relu) v = v < ACC_ZERO ? ACC_ZERO : v;
    }
    STORE(out, o, v);
}

/* Shared body of the GEMM kernels; rm, rn (register block: rows x pixels per work-item,
 * 1, 2, 4 or 8) are constants after inlining; `direct` is uniform. The work-group (16x16)
 * computes a (16 rm) x (16 rn) tile of out. The K loop is double-buffered: the next TK-deep
 * slice of W and of the im2col matrix is fetched from global memory into registers while the
 * current slice is multiplied out of local memory, then stored into the other local buffer,
 * so each step needs one barrier and global latency overlaps the arithmetic. Work-item
 * (lx, ly) owns rows ly + 16 i and pixels lx + 16 j: local reads are broadcasts (A) or
 * consecutive (B), global stores coalesce along pixels. */
inline void cv_gemm(__global const REAL *in, __global const REAL *w, __global const REAL *bias,
                    __global const REAL *res, __global REAL *out, __global const REAL *alpha, int Cin, int H,
                    int W, int Cout, int Ho, int Wo, int KH, int KW, int sh, int sw, int pt, int pl, int dh,
                    int dw, int groups, int kind, float a, float b, float c, int amode, int res_relu,
                    __local ACC *As, __local ACC *Bs, const int direct, const int rm, const int rn) {
    const int tm = 16 * rm, tn = 16 * rn;
    const int cin_g = Cin / groups, cout_g = Cout / groups, khw = KH * KW;
    const int K = cin_g * khw, npix = Ho * Wo;
    const int ng = get_global_id(2), n = ng / groups, g = ng - n * groups;
    const int m0 = get_group_id(1) * tm, p0 = get_group_id(0) * tn;
    const int lx = get_local_id(0), ly = get_local_id(1), tid = ly * 16 + lx;
    __global const REAL *inb = in + (size_t)(n * Cin + g * cin_g) * H * W;
    __global const REAL *wb = w + (size_t)g * cout_g * K;

    /* A loads: element tid + 256 r of the tm x TK slice -> row tid/16 + 16 r, column tid%16 */
    const int a_k = tid & 15, a_m = tid >> 4;
    /* B loads: element tid + 256 r of the TK x tn slice -> pixel column tid % tn (fixed per
     * work-item), k row tid / tn + (256 / tn) r */
    const int b_p = tid % tn, b_k = tid / tn, b_step = 256 / tn;
    const int p = p0 + b_p;
    const int oy = p / Wo, ox = p - (p / Wo) * Wo;
    const int iy0 = oy * sh - pt, ix0 = ox * sw - pl;

    ACC acc[8][8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) acc[i][j] = ACC_ZERO;
    ACC ra[8], rb[8];

    /* fetch of slice k0 into registers */
#define CV_FETCH(k0)                                                                                       \
    for (int r = 0; r < rm; r++) {                                                                         \
        int m = m0 + a_m + 16 * r, k = (k0) + a_k;                                                         \
        ra[r] = (m < cout_g && k < K) ? LOAD(wb, (size_t)m * K + k) : ACC_ZERO;                            \
    }                                                                                                      \
    for (int r = 0; r < rn; r++) {                                                                         \
        int k = (k0) + b_k + b_step * r;                                                                   \
        ACC v = ACC_ZERO;                                                                                  \
        if (k < K && p < npix) {                                                                           \
            if (direct) {                                                                                  \
                v = LOAD(inb, (size_t)k * npix + p);                                                       \
            } else {                                                                                       \
                int ic = k / khw, rr = k - ic * khw, ky = rr / KW, kx = rr - ky * KW;                      \
                int iy = iy0 + ky * dh, ix = ix0 + kx * dw;                                                \
                if (iy >= 0 && iy < H && ix >= 0 && ix < W) v = LOAD(inb, ((size_t)ic * H + iy) * W + ix); \
            }                                                                                              \
        }                                                                                                  \
        rb[r] = v;                                                                                         \
    }
#define CV_STASH(buf)                                                                                      \
    for (int r = 0; r < rm; r++) As[(buf) * TK * tm + a_k * tm + a_m + 16 * r] = ra[r];                   \
    for (int r = 0; r < rn; r++) Bs[(buf) * TK * tn + (b_k + b_step * r) * tn + b_p] = rb[r];

    CV_FETCH(0)
    CV_STASH(0)
    barrier(CLK_LOCAL_MEM_FENCE);
    int cur = 0;
    for (int k0 = 0; k0 < K; k0 += TK) {
        const bool more = k0 + TK < K;
        if (more) { CV_FETCH(k0 + TK) }
        __local const ACC *Ac = As + cur * TK * tm, *Bc = Bs + cur * TK * tn;
        for (int kk = 0; kk < TK; kk++) {
            ACC av[8], bv[8];
            for (int i = 0; i < rm; i++) av[i] = Ac[kk * tm + ly + 16 * i];
            for (int j = 0; j < rn; j++) bv[j] = Bc[kk * tn + lx + 16 * j];
            for (int i = 0; i < rm; i++)
                for (int j = 0; j < rn; j++) acc[i][j] = mad(av[i], bv[j], acc[i][j]);
        }
        if (more) { CV_STASH(1 - cur) }
        /* the other buffer is complete and nobody reads this one any more */
        barrier(CLK_LOCAL_MEM_FENCE);
        cur = 1 - cur;
    }
#undef CV_FETCH
#undef CV_STASH

    for (int i = 0; i < rm; i++) {
        int m = m0 + ly + 16 * i;
        if (m >= cout_g) continue;
        int oc = g * cout_g + m;
        for (int j = 0; j < rn; j++) {
            int q = p0 + lx + 16 * j;
            if (q >= npix) continue;
            cv_store(out, (n * Cout + oc) * npix + q, acc[i][j], oc, q, npix, bias, res, alpha, kind, a, b, c,
                     amode, res_relu);
        }
    }
}

/* conv2d_gemm_<rm><rn>: the GEMM with a rm x rn register block (tile 16 rm x 16 rn); the
 * dispatcher picks the block from Cout per group and the pixel count. direct = 1 for the 1x1
 * stride-1 unpadded case, where the im2col matrix is the input itself (no index decode); it is
 * a uniform run-time branch outside the inner loop, which halves the kernels PoCL compiles. */
#define DEF_CONV(NAME, RM, RN)                                                                     \
    __kernel __attribute__((reqd_work_group_size(16, 16, 1))) void NAME(                                  \
        __global const REAL *in, __global const REAL *w, __global const REAL *bias,                       \
        __global const REAL *res, __global REAL *out, __global const REAL *alpha, int Cin, int H, int W,  \
        int Cout, int Ho, int Wo, int KH, int KW, int sh, int sw, int pt, int pl, int dh, int dw,          \
        int groups, int kind, float a, float b, float c, int amode, int res_relu, int direct) {           \
        __local ACC As[2 * TK * 16 * RM], Bs[2 * TK * 16 * RN];                                            \
        cv_gemm(in, w, bias, res, out, alpha, Cin, H, W, Cout, Ho, Wo, KH, KW, sh, sw, pt, pl, dh, dw,     \
                groups, kind, a, b, c, amode, res_relu, As, Bs, direct, RM, RN);                           \
    }
DEF_CONV(conv2d_gemm_14, 1, 4)
DEF_CONV(conv2d_gemm_18, 1, 8)
DEF_CONV(conv2d_gemm_24, 2, 4)
DEF_CONV(conv2d_gemm_28, 2, 8)
DEF_CONV(conv2d_gemm_44, 4, 4)
DEF_CONV(conv2d_gemm_48, 4, 8)
DEF_CONV(conv2d_gemm_84, 8, 4)
DEF_CONV(conv2d_gemm_88, 8, 8)

/* conv2d_cpu_<rm>: the same sums for CPU OpenCL devices (PoCL): no local memory and no
 * barriers (a CPU runtime turns each barrier into a split of the work-group loop), each
 * work-item computes rm output channels x CV_CPU_RN consecutive pixels straight from global
 * memory (the caches do the tiling; the rm x 8 block is the register reuse). Global
 * (ceil(npix / CV_CPU_RN), ceil(cout_g / rm), N * groups). Every output is summed in the same
 * k = (ic, ky, kx) order with one mad per term as in cv_gemm, so both give the same bits.
 * (One pixel x 4..16 channels per work-item, leaving the vectorisation across work-items to
 * PoCL, measured 3-14x slower than this on PoCL 3.1.) */
#define CV_CPU_RN 8
inline void cv_cpu(__global const REAL *in, __global const REAL *w, __global const REAL *bias,
                   __global const REAL *res, __global REAL *out, __global const REAL *alpha, int Cin, int H,
                   int W, int Cout, int Ho, int Wo, int KH, int KW, int sh, int sw, int pt, int pl, int dh, int dw,
                   int groups, int kind, float a, float b, float c, int amode, int res_relu, const int direct,
                   const int rm) {
    const int cin_g = Cin / groups, cout_g = Cout / groups, khw = KH * KW;
    const int K = cin_g * khw, npix = Ho * Wo;
    const int ng = get_global_id(2), n = ng / groups, g = ng - n * groups;
    const int m0 = get_global_id(1) * rm, p0 = get_global_id(0) * CV_CPU_RN;
    if (m0 >= cout_g || p0 >= npix) return;
    __global const REAL *inb = in + (size_t)(n * Cin + g * cin_g) * H * W;
    __global const REAL *wb = w + (size_t)(g * cout_g + m0) * K;
    const int nm = cout_g - m0 < rm ? cout_g - m0 : rm;
    const int np = npix - p0 < CV_CPU_RN ? npix - p0 : CV_CPU_RN;
    ACC acc[8][CV_CPU_RN];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < CV_CPU_RN; j++) acc[i][j] = ACC_ZERO;
    int iy0[CV_CPU_RN], ix0[CV_CPU_RN];
    for (int j = 0; j < CV_CPU_RN; j++) {
        int p = p0 + (j < np ? j : 0), oy = p / Wo, ox = p - oy * Wo;
        iy0[j] = oy * sh - pt;
        ix0[j] = ox * sw - pl;
    }
    for (int k = 0; k < K; k++) {
        ACC xv[CV_CPU_RN];
        if (direct) {
            for (int j = 0; j < CV_CPU_RN; j++) xv[j] = j < np ? LOAD(inb, (size_t)k * npix + p0 + j) : ACC_ZERO;
        } else {
            int ic = k / khw, rr = k - ic * khw, ky = rr / KW, kx = rr - ky * KW;
            for (int j = 0; j < CV_CPU_RN; j++) {
                int iy = iy0[j] + ky * dh, ix = ix0[j] + kx * dw;
                xv[j] = (j < np && iy >= 0 && iy < H && ix >= 0 && ix < W) ? LOAD(inb, ((size_t)ic * H + iy) * W + ix)
                                                                           : ACC_ZERO;
            }
        }
        for (int i = 0; i < rm; i++) {
            ACC wv = i < nm ? LOAD(wb, (size_t)i * K + k) : ACC_ZERO;
            for (int j = 0; j < CV_CPU_RN; j++) acc[i][j] = mad(wv, xv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < nm; i++) {
        int oc = g * cout_g + m0 + i;
        for (int j = 0; j < np; j++)
            cv_store(out, (n * Cout + oc) * npix + p0 + j, acc[i][j], oc, p0 + j, npix, bias, res, alpha, kind, a, b,
                     c, amode, res_relu);
    }
}

#define DEF_CONV_CPU(NAME, RM)                                                                             \
    __kernel void NAME(__global const REAL *in, __global const REAL *w, __global const REAL *bias,         \
                       __global const REAL *res, __global REAL *out, __global const REAL *alpha, int Cin,  \
                       int H, int W, int Cout, int Ho, int Wo, int KH, int KW, int sh, int sw, int pt,     \
                       int pl, int dh, int dw, int groups, int kind, float a, float b, float c, int amode, \
                       int res_relu, int direct) {                                                         \
        cv_cpu(in, w, bias, res, out, alpha, Cin, H, W, Cout, Ho, Wo, KH, KW, sh, sw, pt, pl, dh, dw,      \
               groups, kind, a, b, c, amode, res_relu, direct, RM);                                        \
    }
DEF_CONV_CPU(conv2d_cpu_4, 4)
DEF_CONV_CPU(conv2d_cpu_8, 8)

/* Depthwise (one input channel per group, one output channel per group): one work-item
 * per output element, global (Wo, Ho, N*C). */
__kernel void conv2d_dw(__global const REAL *in, __global const REAL *w, __global const REAL *bias,
                        __global const REAL *res, __global REAL *out, __global const REAL *alpha, int C, int H,
                        int W, int Ho, int Wo, int KH, int KW, int sh, int sw, int pt, int pl, int dh, int dw,
                        int kind, float a, float b, float c, int amode, int res_relu) {
    const int ox = get_global_id(0), oy = get_global_id(1), nc = get_global_id(2);
    if (ox >= Wo || oy >= Ho) return;
    const int ch = nc % C;
    __global const REAL *ib = in + (size_t)nc * H * W;
    __global const REAL *wb = w + (size_t)ch * KH * KW;
    ACC acc = ACC_ZERO;
    for (int ky = 0; ky < KH; ky++) {
        int iy = oy * sh - pt + ky * dh;
        if (iy < 0 || iy >= H) continue;
        for (int kx = 0; kx < KW; kx++) {
            int ix = ox * sw - pl + kx * dw;
            if (ix < 0 || ix >= W) continue;
            acc = mad(LOAD(ib, iy * W + ix), LOAD(wb, ky * KW + kx), acc);
        }
    }
    int p = oy * Wo + ox;
    cv_store(out, nc * Ho * Wo + p, acc, ch, p, Ho * Wo, bias, res, alpha, kind, a, b, c, amode, res_relu);
}

/* conv2d_transpose in gather form: output (n, oc, oy, ox) sums over the input pixels and
 * taps that scatter to it: oy = iy*sh - pt + ky*dh. Filter [Cin, Cout/groups, KH, KW].
 * Global (Wo, Ho, N*Cout). */
__kernel void conv2d_transpose(__global const REAL *in, __global const REAL *w, __global const REAL *bias,
                               __global REAL *out, int Cin, int H, int W, int Cout, int Ho, int Wo, int KH, int KW,
                               int sh, int sw, int pt, int pl, int dh, int dw, int groups, int kind, float a, float b,
                               float c) {
    const int ox = get_global_id(0), oy = get_global_id(1), noc = get_global_id(2);
    if (ox >= Wo || oy >= Ho) return;
    const int n = noc / Cout, oc = noc - n * Cout;
    const int cin_g = Cin / groups, cout_g = Cout / groups, g = oc / cout_g, ocg = oc - g * cout_g;
    ACC acc = ACC_ZERO;
    for (int ky = 0; ky < KH; ky++) {
        int ty = oy + pt - ky * dh;
        if (ty < 0 || ty % sh) continue;
        int iy = ty / sh;
        if (iy >= H) continue;
        for (int kx = 0; kx < KW; kx++) {
            int tx = ox + pl - kx * dw;
            if (tx < 0 || tx % sw) continue;
            int ix = tx / sw;
            if (ix >= W) continue;
            for (int icg = 0; icg < cin_g; icg++) {
                int ic = g * cin_g + icg;
                acc = mad(LOAD(in, (((size_t)n * Cin + ic) * H + iy) * W + ix),
                          LOAD(w, (((size_t)ic * cout_g + ocg) * KH + ky) * KW + kx), acc);
            }
        }
    }
    int p = oy * Wo + ox;
    cv_store(out, noc * Ho * Wo + p, acc, oc, p, Ho * Wo, bias, 0, 0, kind, a, b, c, 0, 0);
}
