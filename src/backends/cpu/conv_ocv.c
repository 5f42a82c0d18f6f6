/* fp32 convolution with the vector over output channels (conv_ocv.h).
 *
 * A tile is OCV filter blocks (16 output channels each) x P output pixels of the flattened
 * Ho x Wo map (they may span rows: pix[] holds each pixel's offset in the padded input). Per
 * tap k the OCV weight vectors are loaded once and each pixel's input value is broadcast from
 * the padded copy (xp + tap[k] + pix[p]): OCV x P fused multiply-adds per OCV + P loads, no
 * gathers or shuffles, the same code for every stride and dilation. The sums leave the
 * registers through a small buffer, one output channel row of P values at a time (NCHW).
 *
 * AVX-512: OCV 1..4 with P = 16, 12, 8, 6 (at most 24 accumulators of the 32 registers);
 * AVX2 + FMA: one block (two 8-lane registers) x 6 pixels (12 accumulators of 16). */
#include "backends/cpu/conv_ocv.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/par.h"
#include <limits.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OCV_KC 256 /* the GEMM's K slice (gemm_inst.h KC): the sums are sliced the same way */
#define OCV_PMAX 16
#define DW_PMAX 8 /* pixels of a depthwise row tile */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define OCV_X86 1
#include <immintrin.h>
#endif

int cd_conv_ocv_level(void) {
#ifdef OCV_X86
    const int cap = cd_gemm_f32_level_cap();
    __builtin_cpu_init();
    if (cap >= 2 && __builtin_cpu_supports("avx512f")) return 2;
    if (cap >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
    return 0;
}

size_t cd_conv_ocv_packed_floats(int Cout, int K) {
    return (size_t)((Cout + CD_OCV_BLOCK - 1) / CD_OCV_BLOCK) * CD_OCV_BLOCK * (size_t)K;
}

#ifdef OCV_X86
static void pack512(const float *W, int Cout, int K, float *dst);
#endif

void cd_conv_ocv_pack(const float *W, int Cout, int K, float *dst) {
#ifdef OCV_X86
    if (__builtin_cpu_supports("avx512f")) {
        pack512(W, Cout, K, dst);
        return;
    }
#endif
    const int nb = (Cout + CD_OCV_BLOCK - 1) / CD_OCV_BLOCK;
    for (int b = 0; b < nb; b++)
        for (int k = 0; k < K; k++) {
            float *d = dst + ((size_t)b * K + k) * CD_OCV_BLOCK;
            for (int l = 0; l < CD_OCV_BLOCK; l++) {
                const int oc = b * CD_OCV_BLOCK + l;
                d[l] = oc < Cout ? W[(size_t)oc * K + k] : 0.0f;
            }
        }
}

bool cd_conv_ocv_epi_ok(const cd_act *act) {
    return act->kind == CD_ACT_NONE || act->kind == CD_ACT_RELU || act->kind == CD_ACT_RELU6 ||
        act->kind == CD_ACT_LEAKY_RELU || act->kind == CD_ACT_HARD_SWISH;
}

typedef struct {
    const float *xp; /* padded input [Cin][Hp][Wp] */
    const int *tap;  /* per k = (ic, ky, kx): ic * Hp * Wp + ky * dh * Wp + kx * dw */
    const int *pix;  /* per output pixel (padded to whole tiles with 0): oy * sh * Wp + ox * sw */
    const float *wp; /* packed filter [block][K][16] */
    float *y;        /* [Cout][HWo] */
    int K, Cout, HWo;
    const cd_conv_ocv_epi *epi;
} ocv_job;

#ifdef OCV_X86
/* The store of one tile's slice: buf[v][p][16] (OCV blocks x P pixels), channels of block
 * b0 + v, pixels [p0, p0 + np). first: the first K slice (y = sum), else y = y + sum; last:
 * then bias and activation, in the conv epilogue's order and operations. No multiply-add pair
 * to contract here (fp-contract off all the same, as the epilogue). */
__attribute__((optimize("fp-contract=off"))) static void ocv_store(const ocv_job *j, const float *buf, int ocv, int P,
                                                                   int b0, int p0, int np, int first, int last) {
    const cd_conv_ocv_epi *e = last ? j->epi : NULL;
    for (int v = 0; v < ocv; v++)
        for (int l = 0; l < CD_OCV_BLOCK; l++) {
            const int oc = (b0 + v) * CD_OCV_BLOCK + l;
            if (oc >= j->Cout) break;
            float *yr = j->y + (size_t)oc * j->HWo + p0;
            const float *s = buf + (size_t)v * P * CD_OCV_BLOCK + l;
            const float b = e && e->bias ? e->bias[oc] : 0.0f;
            const int kind = e ? (int)e->act.kind : CD_ACT_NONE;
            const float a = e ? e->act.a : 0.0f, hb = e ? e->act.b : 0.0f, hc = e ? e->act.c : 0.0f;
            for (int p = 0; p < np; p++) {
                float r = s[(size_t)p * CD_OCV_BLOCK];
                if (!first) r = yr[p] + r;
                if (e) {
                    if (e->bias) r = r + b;
                    switch (kind) {
                    case CD_ACT_RELU: r = r < 0.0f ? 0.0f : r; break;
                    case CD_ACT_RELU6: r = r < 0.0f ? 0.0f : (r > a ? a : r); break;
                    case CD_ACT_LEAKY_RELU: r = r < 0.0f ? a * r : r; break;
                    case CD_ACT_HARD_SWISH: { /* threshold a, scale b, offset c (ops.h) */
                        float t = r + hc;
                        t = t < 0.0f ? 0.0f : (t > a ? a : t);
                        r = r * t / hb;
                        break;
                    }
                    default: break;
                    }
                }
                yr[p] = r;
            }
        }
}

#endif

#ifdef OCV_X86
/* c[j] lane i = r[i] lane j (16 x 16 floats): unpacks and in-lane shuffles, then a 4 x 4
 * transpose of 128-bit lanes. */
static inline __attribute__((always_inline, target("avx512f"))) void ocv_tr16(const __m512 r[16], __m512 c[16]) {
    __m512 a[16], b[16];
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        b[4 * i] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
        b[4 * i + 1] = _mm512_shuffle_ps(a[4 * i], a[4 * i + 2], 0xee);
        b[4 * i + 2] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
        b[4 * i + 3] = _mm512_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xee);
    }
    for (int q = 0; q < 4; q++) { /* b[4 i + q] lane k: pixels 4i..4i+3 of channel 4k + q */
        const __m512 e0 = _mm512_shuffle_f32x4(b[q], b[4 + q], 0x44), e1 = _mm512_shuffle_f32x4(b[q], b[4 + q], 0xee),
                     e2 = _mm512_shuffle_f32x4(b[8 + q], b[12 + q], 0x44),
                     e3 = _mm512_shuffle_f32x4(b[8 + q], b[12 + q], 0xee);
        c[q] = _mm512_shuffle_f32x4(e0, e2, 0x88);
        c[4 + q] = _mm512_shuffle_f32x4(e0, e2, 0xdd);
        c[8 + q] = _mm512_shuffle_f32x4(e1, e3, 0x88);
        c[12 + q] = _mm512_shuffle_f32x4(e1, e3, 0xdd);
    }
}

/* 8 x 8 floats: c[j] lane i = r[i] lane j */
static inline __attribute__((always_inline, target("avx2"))) void ocv_tr8(const __m256 r[8], __m256 c[8]) {
    __m256 a[8], b[8];
    for (int i = 0; i < 4; i++) {
        a[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        b[4 * i] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0x44);
        b[4 * i + 1] = _mm256_shuffle_ps(a[4 * i], a[4 * i + 2], 0xee);
        b[4 * i + 2] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0x44);
        b[4 * i + 3] = _mm256_shuffle_ps(a[4 * i + 1], a[4 * i + 3], 0xee);
    }
    for (int q = 0; q < 4; q++) {
        c[q] = _mm256_permute2f128_ps(b[q], b[4 + q], 0x20);
        c[4 + q] = _mm256_permute2f128_ps(b[q], b[4 + q], 0x31);
    }
}

/* cd_conv_ocv_pack on AVX-512: 16 x 16 blocks (16 channels x 16 taps) loaded as rows and
 * transposed in registers; the strided scalar copy took 2-5 ns per weight at prepare. */
__attribute__((target("avx512f"))) static void pack512(const float *W, int Cout, int K, float *dst) {
    const int nb = (Cout + CD_OCV_BLOCK - 1) / CD_OCV_BLOCK;
    for (int b = 0; b < nb; b++)
        for (int k0 = 0; k0 < K; k0 += 16) {
            const int nk = K - k0 < 16 ? K - k0 : 16;
            const __mmask16 m = (__mmask16)((1u << nk) - 1u);
            __m512 r[16], c[16];
            for (int l = 0; l < 16; l++) {
                const int oc = b * CD_OCV_BLOCK + l;
                r[l] = oc < Cout ? _mm512_maskz_loadu_ps(m, W + (size_t)oc * K + k0) : _mm512_setzero_ps();
            }
            ocv_tr16(r, c);
            for (int j = 0; j < nk; j++) _mm512_storeu_ps(dst + ((size_t)b * K + k0 + j) * CD_OCV_BLOCK, c[j]);
        }
}

/* ocv_store on AVX-512: the P pixel vectors of a block (buf[v][p][16]) transposed in registers
 * (16 x 16: unpacks, in-lane shuffles, then a 4 x 4 transpose of 128-bit lanes) into one vector
 * of pixels per channel, then the same operations per lane as ocv_store (y + sum, + bias, the
 * activation with ordered compares: false for NaN), one masked store per channel row. */
__attribute__((target("avx512f"), optimize("fp-contract=off"))) static void
ocv_store512(const ocv_job *j, const float *buf, int ocv, int P, int b0, int p0, int np, int first, int last) {
    const cd_conv_ocv_epi *e = last ? j->epi : NULL;
    const int kind = e ? (int)e->act.kind : CD_ACT_NONE;
    const __m512 z = _mm512_setzero_ps(), va = _mm512_set1_ps(e ? e->act.a : 0.0f),
                 vb = _mm512_set1_ps(e ? e->act.b : 0.0f), vc = _mm512_set1_ps(e ? e->act.c : 0.0f);
    const __mmask16 m = (__mmask16)((1u << np) - 1u);
    for (int v = 0; v < ocv; v++) {
        __m512 r[16], c[16];
        for (int p = 0; p < 16; p++) r[p] = p < P ? _mm512_load_ps(buf + ((size_t)v * P + p) * CD_OCV_BLOCK) : z;
        ocv_tr16(r, c);
        for (int l = 0; l < CD_OCV_BLOCK; l++) {
            const int oc = (b0 + v) * CD_OCV_BLOCK + l;
            if (oc >= j->Cout) break;
            float *yr = j->y + (size_t)oc * j->HWo + p0;
            __m512 x = c[l];
            if (!first) x = _mm512_add_ps(_mm512_maskz_loadu_ps(m, yr), x);
            if (e) {
                if (e->bias) x = _mm512_add_ps(x, _mm512_set1_ps(e->bias[oc]));
                switch (kind) {
                case CD_ACT_RELU: x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, z, _CMP_LT_OQ), x, z); break;
                case CD_ACT_RELU6: {
                    const __m512 t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, va, _CMP_GT_OQ), x, va);
                    x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, z, _CMP_LT_OQ), t, z);
                    break;
                }
                case CD_ACT_LEAKY_RELU:
                    x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, z, _CMP_LT_OQ), x, _mm512_mul_ps(va, x));
                    break;
                case CD_ACT_HARD_SWISH: {
                    __m512 t = _mm512_add_ps(x, vc);
                    t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, va, _CMP_GT_OQ), t, va);
                    t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, z, _CMP_LT_OQ), t, z);
                    x = _mm512_div_ps(_mm512_mul_ps(x, t), vb);
                    break;
                }
                default: break;
                }
            }
            _mm512_mask_storeu_ps(yr, m, x);
        }
    }
}

/* AVX-512 tile: OCV blocks x P pixels, K slice [k0, k1). */
static inline __attribute__((always_inline, target("avx512f"))) void
ocv_tile512(const ocv_job *j, int b0, const int OCV, const int P, int p0, int np) {
    const int K = j->K;
    const float *w[4];
    for (int v = 0; v < OCV; v++) w[v] = j->wp + (size_t)(b0 + v) * K * CD_OCV_BLOCK;
    int off[OCV_PMAX];
#pragma GCC unroll 16
    for (int p = 0; p < P; p++) off[p] = j->pix[p0 + p];
    float buf[4 * OCV_PMAX * CD_OCV_BLOCK] __attribute__((aligned(64)));
    for (int k0 = 0; k0 < K; k0 += OCV_KC) {
        const int k1 = K < k0 + OCV_KC ? K : k0 + OCV_KC;
        __m512 acc[4][OCV_PMAX];
#pragma GCC unroll 4
        for (int v = 0; v < OCV; v++)
#pragma GCC unroll 16
            for (int p = 0; p < P; p++) acc[v][p] = _mm512_setzero_ps();
        for (int k = k0; k < k1; k++) {
            const float *xk = j->xp + j->tap[k];
            __m512 wv[4];
#pragma GCC unroll 4
            for (int v = 0; v < OCV; v++) wv[v] = _mm512_loadu_ps(w[v] + (size_t)k * CD_OCV_BLOCK);
#pragma GCC unroll 16
            for (int p = 0; p < P; p++) {
                const __m512 xb = _mm512_set1_ps(xk[off[p]]);
#pragma GCC unroll 4
                for (int v = 0; v < OCV; v++) acc[v][p] = _mm512_fmadd_ps(wv[v], xb, acc[v][p]);
            }
        }
#pragma GCC unroll 4
        for (int v = 0; v < OCV; v++)
#pragma GCC unroll 16
            for (int p = 0; p < P; p++) _mm512_store_ps(buf + ((size_t)v * P + p) * CD_OCV_BLOCK, acc[v][p]);
        ocv_store512(j, buf, OCV, P, b0, p0, np, k0 == 0, k1 == K);
    }
}

/* Pixel tile size per OCV at AVX-512 (OCV x P <= 24 accumulators). */
static int ocv_p512(int ocv) { return ocv == 1 ? 16 : ocv == 2 ? 12 : ocv == 3 ? 8 : 6; }

__attribute__((target("avx512f"))) static void ocv_item512(const ocv_job *j, int b0, int ocv, int p0, int np) {
    switch (ocv) {
    case 1: ocv_tile512(j, b0, 1, 16, p0, np); break;
    case 2: ocv_tile512(j, b0, 2, 12, p0, np); break;
    case 3: ocv_tile512(j, b0, 3, 8, p0, np); break;
    default: ocv_tile512(j, b0, 4, 6, p0, np); break;
    }
}

/* AVX2 + FMA tile: one block (two 8-lane halves) x 6 pixels. */
#define OCV_P256 6
__attribute__((target("avx2,fma"))) static void ocv_item256(const ocv_job *j, int b0, int p0, int np) {
    const int K = j->K, P = OCV_P256;
    const float *w = j->wp + (size_t)b0 * K * CD_OCV_BLOCK;
    int off[OCV_P256];
    for (int p = 0; p < P; p++) off[p] = j->pix[p0 + p];
    float buf[OCV_P256 * CD_OCV_BLOCK] __attribute__((aligned(32)));
    for (int k0 = 0; k0 < K; k0 += OCV_KC) {
        const int k1 = K < k0 + OCV_KC ? K : k0 + OCV_KC;
        __m256 lo[OCV_P256], hi[OCV_P256];
#pragma GCC unroll 6
        for (int p = 0; p < P; p++) lo[p] = hi[p] = _mm256_setzero_ps();
        for (int k = k0; k < k1; k++) {
            const float *xk = j->xp + j->tap[k];
            const __m256 w0 = _mm256_loadu_ps(w + (size_t)k * CD_OCV_BLOCK),
                         w1 = _mm256_loadu_ps(w + (size_t)k * CD_OCV_BLOCK + 8);
#pragma GCC unroll 6
            for (int p = 0; p < P; p++) {
                const __m256 xb = _mm256_broadcast_ss(xk + off[p]);
                lo[p] = _mm256_fmadd_ps(w0, xb, lo[p]);
                hi[p] = _mm256_fmadd_ps(w1, xb, hi[p]);
            }
        }
#pragma GCC unroll 6
        for (int p = 0; p < P; p++) {
            _mm256_store_ps(buf + (size_t)p * CD_OCV_BLOCK, lo[p]);
            _mm256_store_ps(buf + (size_t)p * CD_OCV_BLOCK + 8, hi[p]);
        }
        ocv_store(j, buf, 1, P, b0, p0, np, k0 == 0, k1 == K);
    }
}
#endif

bool cd_conv_ocv_f32(const cd_conv_direct_geo *g, int Cout, const float *wpack, float *Y, const cd_conv_ocv_epi *epi,
                     int threads) {
    const int level = cd_conv_ocv_level();
    if (!level) return false;
#ifdef OCV_X86
    const int K = g->Cin * g->KH * g->KW, HWo = g->Ho * g->Wo;
    const int Hn = (g->Ho - 1) * g->sh + (g->KH - 1) * g->dh + 1, Wn = (g->Wo - 1) * g->sw + (g->KW - 1) * g->dw + 1;
    /* no padding to add (every tap inside the input): the input itself, no copy */
    const bool inside = g->pt == 0 && g->pl == 0 && Hn <= g->H && Wn <= g->W;
    const int Hp = inside ? g->H : Hn, Wp = inside ? g->W : Wn;
    const size_t plane = (size_t)Hp * Wp;
    const size_t npix = (size_t)HWo + OCV_PMAX; /* the last tile reads up to P - 1 past HWo */
    if ((size_t)g->Cin * plane > (size_t)INT_MAX / 2) return false;
    float *xp = inside ? NULL : malloc((size_t)g->Cin * plane * sizeof(float));
    int *tap = malloc((size_t)K * sizeof(int)), *pix = calloc(npix, sizeof(int));
    if ((!inside && !xp) || !tap || !pix) {
        free(xp);
        free(tap);
        free(pix);
        return false;
    }
    /* the zero-padded input: rows r = iy + pt, columns c = ix + pl (only what taps reach) */
    for (int ic = 0; !inside && ic < g->Cin; ic++)
        for (int r = 0; r < Hp; r++) {
            float *d = xp + (size_t)ic * plane + (size_t)r * Wp;
            const int iy = r - g->pt;
            if (iy < 0 || iy >= g->H) {
                memset(d, 0, (size_t)Wp * sizeof(float));
                continue;
            }
            const float *s = g->x + ((size_t)ic * g->H + iy) * g->W;
            memset(d, 0, (size_t)Wp * sizeof(float));
            const int c1 = g->pl + g->W < Wp ? g->pl + g->W : Wp; /* columns [pl, c1) hold input */
            if (c1 > g->pl) memcpy(d + g->pl, s, (size_t)(c1 - g->pl) * sizeof(float));
        }
    for (int ic = 0, k = 0; ic < g->Cin; ic++)
        for (int ky = 0; ky < g->KH; ky++)
            for (int kx = 0; kx < g->KW; kx++, k++) tap[k] = (int)((size_t)ic * plane) + ky * g->dh * Wp + kx * g->dw;
    for (int oy = 0, p = 0; oy < g->Ho; oy++)
        for (int ox = 0; ox < g->Wo; ox++, p++) pix[p] = oy * g->sh * Wp + ox * g->sw;
    const ocv_job j = {inside ? g->x : xp, tap, pix, wpack, Y, K, Cout, HWo, epi};
    const int nb = (Cout + CD_OCV_BLOCK - 1) / CD_OCV_BLOCK;
    /* groups of blocks: AVX-512 up to 4 blocks, as even as they go; AVX2 one */
    const int ng = level == 2 ? (nb + 3) / 4 : nb;
    int gb[64 + 1], gn = 0; /* group starts (ng <= 64 here, else one block per group) */
    const bool grouped = level == 2 && ng <= 64;
    if (grouped) {
        for (int q = 0; q <= ng; q++) gb[q] = (int)((long)nb * q / ng);
        gn = ng;
    } else {
        gn = nb;
    }
    /* items: group x pixel tile; the tile size is the group's P */
    int maxt = 0;
    for (int q = 0; q < gn; q++) {
        const int ocv = grouped ? gb[q + 1] - gb[q] : 1, P = level == 2 ? ocv_p512(ocv) : OCV_P256;
        const int t = (HWo + P - 1) / P;
        if (t > maxt) maxt = t;
    }
    const long items = (long)gn * maxt;
    const double macs = (double)Cout * K * HWo;
    const int nt = threads > 1 && macs >= (double)cd_gemm_one_thread_macs() ? threads : 1;
    CD_PAR_FOR(nt > 1, nt, long, it, items, {
        const int q = (int)(it / maxt), t = (int)(it % maxt);
        const int b0 = grouped ? gb[q] : q, ocv = grouped ? gb[q + 1] - gb[q] : 1;
        const int P = level == 2 ? ocv_p512(ocv) : OCV_P256, p0 = t * P;
        if (p0 < HWo) {
            const int np = HWo - p0 < P ? HWo - p0 : P;
            if (level == 2)
                ocv_item512(&j, b0, ocv, p0, np);
            else
                ocv_item256(&j, b0, p0, np);
        }
    });
    free(xp);
    free(tap);
    free(pix);
    return true;
#else
    (void)g;
    (void)Cout;
    (void)wpack;
    (void)Y;
    (void)epi;
    (void)threads;
    return false;
#endif
}

/* ---- depthwise (one input channel per group, channel multiplier 1) on small maps ----
 * Vector over 16 channels: the block's input planes transposed into a zero-padded
 * [Hp][Wp][16] scratch, the filter into [KH*KW][16]; per output pixel acc = fma(w, x, acc) from
 * +0 over the taps, ky outer, kx inner, tap rows wholly in the top or bottom padding skipped
 * and left/right padding taps included as w * 0: the per-column arithmetic of the plane
 * kernel (ops_nn_conv_tmpl.h F(dw_run)). Up to 8 pixels of a row at once (independent
 * accumulators: the plane kernel's one vector per 4-wide row waited on its FMA chain). */
typedef struct {
    const cd_conv_direct_geo *g;
    const int *kyr; /* per output row: tap rows [kyr[2 oy], kyr[2 oy + 1]) */
    const float *w; /* [C][KH*KW] */
    int Hp, Wp;
} dw_geo;

#ifdef OCV_X86
static inline __attribute__((always_inline, target("avx512f"))) void
dw_row512(const dw_geo *d, const float *xt, const float *wt, float *buf, int oy, int ox0, const int P) {
    const cd_conv_direct_geo *g = d->g;
    const int ky0 = d->kyr[2 * oy], ky1 = d->kyr[2 * oy + 1], KW = g->KW;
    __m512 acc[DW_PMAX];
#pragma GCC unroll 8
    for (int p = 0; p < P; p++) acc[p] = _mm512_setzero_ps();
    for (int ky = ky0; ky < ky1; ky++) {
        const float *xr = xt + ((size_t)(oy * g->sh + ky * g->dh) * d->Wp + (size_t)ox0 * g->sw) * CD_OCV_BLOCK;
        for (int kx = 0; kx < KW; kx++) {
            const __m512 wv = _mm512_loadu_ps(wt + (size_t)(ky * KW + kx) * CD_OCV_BLOCK);
            const float *xk = xr + (size_t)kx * g->dw * CD_OCV_BLOCK;
#pragma GCC unroll 8
            for (int p = 0; p < P; p++)
                acc[p] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(xk + (size_t)p * g->sw * CD_OCV_BLOCK), acc[p]);
        }
    }
#pragma GCC unroll 8
    for (int p = 0; p < P; p++) _mm512_store_ps(buf + (size_t)p * CD_OCV_BLOCK, acc[p]);
}

static inline __attribute__((always_inline, target("avx2,fma"))) void
dw_row256(const dw_geo *d, const float *xt, const float *wt, float *buf, int oy, int ox0, const int P) {
    const cd_conv_direct_geo *g = d->g;
    const int ky0 = d->kyr[2 * oy], ky1 = d->kyr[2 * oy + 1], KW = g->KW;
    __m256 lo[DW_PMAX / 2 + 1], hi[DW_PMAX / 2 + 1];
#pragma GCC unroll 8
    for (int p = 0; p < P; p++) lo[p] = hi[p] = _mm256_setzero_ps();
    for (int ky = ky0; ky < ky1; ky++) {
        const float *xr = xt + ((size_t)(oy * g->sh + ky * g->dh) * d->Wp + (size_t)ox0 * g->sw) * CD_OCV_BLOCK;
        for (int kx = 0; kx < KW; kx++) {
            const float *wk = wt + (size_t)(ky * KW + kx) * CD_OCV_BLOCK;
            const __m256 w0 = _mm256_loadu_ps(wk), w1 = _mm256_loadu_ps(wk + 8);
            const float *xk = xr + (size_t)kx * g->dw * CD_OCV_BLOCK;
#pragma GCC unroll 8
            for (int p = 0; p < P; p++) {
                const float *xp = xk + (size_t)p * g->sw * CD_OCV_BLOCK;
                lo[p] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xp), lo[p]);
                hi[p] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xp + 8), hi[p]);
            }
        }
    }
#pragma GCC unroll 8
    for (int p = 0; p < P; p++) {
        _mm256_store_ps(buf + (size_t)p * CD_OCV_BLOCK, lo[p]);
        _mm256_store_ps(buf + (size_t)p * CD_OCV_BLOCK + 8, hi[p]);
    }
}

__attribute__((target("avx512f"))) static void dw_rows512(const dw_geo *d, const float *xt, const float *wt, float *buf,
                                                          int oy, int ox0, int np) {
    switch (np) {
    case 1: dw_row512(d, xt, wt, buf, oy, ox0, 1); break;
    case 2: dw_row512(d, xt, wt, buf, oy, ox0, 2); break;
    case 3: dw_row512(d, xt, wt, buf, oy, ox0, 3); break;
    case 4: dw_row512(d, xt, wt, buf, oy, ox0, 4); break;
    case 5: dw_row512(d, xt, wt, buf, oy, ox0, 5); break;
    case 6: dw_row512(d, xt, wt, buf, oy, ox0, 6); break;
    case 7: dw_row512(d, xt, wt, buf, oy, ox0, 7); break;
    default: dw_row512(d, xt, wt, buf, oy, ox0, 8); break;
    }
}

/* AVX2: at most 4 pixels (8 accumulators of the 16 registers) */
__attribute__((target("avx2,fma"))) static void dw_rows256(const dw_geo *d, const float *xt, const float *wt,
                                                           float *buf, int oy, int ox0, int np) {
    switch (np) {
    case 1: dw_row256(d, xt, wt, buf, oy, ox0, 1); break;
    case 2: dw_row256(d, xt, wt, buf, oy, ox0, 2); break;
    case 3: dw_row256(d, xt, wt, buf, oy, ox0, 3); break;
    default: dw_row256(d, xt, wt, buf, oy, ox0, 4); break;
    }
}

/* The block's nc input planes (x: the first) into the padded scratch through ocv_tr16: 16
 * values of the flattened plane at a time where whole rows go in (cols == W: a 4-wide map
 * takes four rows per transpose, where one per row left 12 of its 16 columns empty), else 16
 * columns of a row at a time. Only the window [pt, pt + rows) x [pl, pl + cols) is written. */
__attribute__((target("avx512f"))) static void dw_in512(const dw_geo *d, const float *x, int nc, int rows, int cols,
                                                        float *xt) {
    const cd_conv_direct_geo *g = d->g;
    const size_t HW = (size_t)g->H * g->W;
    if (cols == g->W) {
        const int nall = rows * g->W;
        int iy = 0, ix = 0; /* the pixel of f0 */
        for (int f0 = 0; f0 < nall; f0 += 16) {
            const int n = nall - f0 < 16 ? nall - f0 : 16;
            const __mmask16 m = (__mmask16)((1u << n) - 1u);
            __m512 r[16], c[16];
            for (int l = 0; l < 16; l++)
                r[l] = l < nc ? _mm512_maskz_loadu_ps(m, x + l * HW + f0) : _mm512_setzero_ps();
            ocv_tr16(r, c);
            for (int p = 0; p < n; p++) {
                _mm512_storeu_ps(xt + ((size_t)(iy + g->pt) * d->Wp + g->pl + ix) * CD_OCV_BLOCK, c[p]);
                if (++ix == g->W) {
                    ix = 0;
                    iy++;
                }
            }
        }
        return;
    }
    for (int iy = 0; iy < rows; iy++)
        for (int ix0 = 0; ix0 < cols; ix0 += 16) {
            const int n = cols - ix0 < 16 ? cols - ix0 : 16;
            const __mmask16 m = (__mmask16)((1u << n) - 1u);
            __m512 r[16], c[16];
            for (int l = 0; l < 16; l++)
                r[l] = l < nc ? _mm512_maskz_loadu_ps(m, x + l * HW + (size_t)iy * g->W + ix0) : _mm512_setzero_ps();
            ocv_tr16(r, c);
            float *dr = xt + ((size_t)(iy + g->pt) * d->Wp + g->pl + ix0) * CD_OCV_BLOCK;
            for (int p = 0; p < n; p++) _mm512_storeu_ps(dr + (size_t)p * CD_OCV_BLOCK, c[p]);
        }
}

/* dw_in512 on AVX2: 8 values of the flattened plane (whole rows going in, else 8 columns of a
 * row) of 8 channels per transpose, twice per block; lanes past the block's channels get 0 */
__attribute__((target("avx2"))) static void dw_in256(const dw_geo *d, const float *x, int nc, int rows, int cols,
                                                     float *xt) {
    const cd_conv_direct_geo *g = d->g;
    const size_t HW = (size_t)g->H * g->W;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const bool flat = cols == g->W;
    const int nall = flat ? rows * g->W : cols;
    for (int iy0 = 0; iy0 < (flat ? 1 : rows); iy0++) {
        int iy = iy0, ix = 0; /* the pixel of f0 */
        for (int f0 = 0; f0 < nall; f0 += 8) {
            const int n = nall - f0 < 8 ? nall - f0 : 8;
            const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
            __m256 c[2][8];
            for (int h = 0; h < 2; h++) {
                __m256 r[8];
                for (int l = 0; l < 8; l++)
                    r[l] = h * 8 + l < nc ? _mm256_maskload_ps(x + (h * 8 + l) * HW + (size_t)iy0 * g->W + f0, m)
                                          : _mm256_setzero_ps();
                ocv_tr8(r, c[h]);
            }
            for (int p = 0; p < n; p++) {
                float *dst = xt + ((size_t)(iy + g->pt) * d->Wp + g->pl + ix) * CD_OCV_BLOCK;
                _mm256_storeu_ps(dst, c[0][p]);
                _mm256_storeu_ps(dst + 8, c[1][p]);
                if (++ix == g->W) {
                    ix = 0;
                    iy++;
                }
            }
        }
    }
}

/* ocv_store on AVX2 for the depthwise (one block, first and last slice: y = the sums): 8 x 8
 * transposes of buf[p][16] into channel rows of 8 pixels, then per lane ocv_store's operations
 * (+ bias, the activation with ordered compares: false for NaN, as ocv_store512), one masked
 * store per channel and 8 pixels */
__attribute__((target("avx2"))) static void dw_store256(const ocv_job *j, const float *buf, int P, int b0, int p0) {
    const cd_conv_ocv_epi *e = j->epi;
    const int kind = e ? (int)e->act.kind : CD_ACT_NONE;
    const __m256 z = _mm256_setzero_ps(), va = _mm256_set1_ps(e ? e->act.a : 0.0f),
                 vb = _mm256_set1_ps(e ? e->act.b : 0.0f), vc = _mm256_set1_ps(e ? e->act.c : 0.0f);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int q0 = 0; q0 < P; q0 += 8) {
        const int nq = P - q0 < 8 ? P - q0 : 8;
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(nq), lane);
        for (int h = 0; h < 2; h++) {
            __m256 r[8], c[8];
            for (int q = 0; q < 8; q++)
                r[q] = q < nq ? _mm256_load_ps(buf + (size_t)(q0 + q) * CD_OCV_BLOCK + h * 8) : z;
            ocv_tr8(r, c);
            for (int l = 0; l < 8; l++) {
                const int oc = b0 * CD_OCV_BLOCK + h * 8 + l;
                if (oc >= j->Cout) break;
                __m256 x = c[l];
                if (e) {
                    if (e->bias) x = _mm256_add_ps(x, _mm256_set1_ps(e->bias[oc]));
                    switch (kind) {
                    case CD_ACT_RELU: x = _mm256_blendv_ps(x, z, _mm256_cmp_ps(x, z, _CMP_LT_OQ)); break;
                    case CD_ACT_RELU6: {
                        const __m256 t = _mm256_blendv_ps(x, va, _mm256_cmp_ps(x, va, _CMP_GT_OQ));
                        x = _mm256_blendv_ps(t, z, _mm256_cmp_ps(x, z, _CMP_LT_OQ));
                        break;
                    }
                    case CD_ACT_LEAKY_RELU:
                        x = _mm256_blendv_ps(x, _mm256_mul_ps(va, x), _mm256_cmp_ps(x, z, _CMP_LT_OQ));
                        break;
                    case CD_ACT_HARD_SWISH: {
                        __m256 t = _mm256_add_ps(x, vc);
                        t = _mm256_blendv_ps(t, va, _mm256_cmp_ps(t, va, _CMP_GT_OQ));
                        t = _mm256_blendv_ps(t, z, _mm256_cmp_ps(t, z, _CMP_LT_OQ));
                        x = _mm256_div_ps(_mm256_mul_ps(x, t), vb);
                        break;
                    }
                    default: break;
                    }
                }
                _mm256_maskstore_ps(j->y + (size_t)oc * j->HWo + p0 + q0, m, x);
            }
        }
    }
}

/* Channel block cb of image x (C planes of H x W) into y (C planes of Ho x Wo); xt, wt, buf:
 * this thread's scratch. */
static void dw_block(const dw_geo *d, int level, const float *x, float *y, int C, int cb, float *xt, float *wt,
                     float *buf, const cd_conv_ocv_epi *epi) {
    const cd_conv_direct_geo *g = d->g;
    const int c0 = cb * CD_OCV_BLOCK, nc = C - c0 < CD_OCV_BLOCK ? C - c0 : CD_OCV_BLOCK, KHW = g->KH * g->KW;
    /* the padding frame of xt is zeroed once per call (cd_conv_ocv_dw_f32) and never written:
     * only the window [pt, pt + rows) x [pl, pl + cols) is, the same one for every block */
    const int rows = g->H < d->Hp - g->pt ? g->H : d->Hp - g->pt, cols = g->W < d->Wp - g->pl ? g->W : d->Wp - g->pl;
    if (level == 2) {
        dw_in512(d, x + (size_t)c0 * g->H * g->W, nc, rows, cols, xt);
        pack512(d->w + (size_t)c0 * KHW, nc, KHW, wt);
    } else {
        dw_in256(d, x + (size_t)c0 * g->H * g->W, nc, rows, cols, xt);
        for (int k = 0; k < KHW; k++)
            for (int l = 0; l < CD_OCV_BLOCK; l++)
                wt[k * CD_OCV_BLOCK + l] = l < nc ? d->w[(size_t)(c0 + l) * KHW + k] : 0.0f;
    }
    const ocv_job j = {NULL, NULL, NULL, NULL, y, KHW, C, g->Ho * g->Wo, epi};
    /* up to 16 pixels (contiguous in the output plane) per store (AVX-512: one transpose and
     * one masked store per channel): whole rows of a map up to 16 wide (four rows of a 4-wide
     * map), else 16-pixel pieces of a row; computed in runs of up to 8 (AVX2: 4) pixels of a row */
    const int pmax = level == 2 ? DW_PMAX : DW_PMAX / 2;
    const int rpt = g->Wo <= OCV_PMAX ? OCV_PMAX / g->Wo : 1, pw = g->Wo <= OCV_PMAX ? g->Wo : OCV_PMAX;
    for (int oy = 0; oy < g->Ho; oy += rpt) {
        const int nr = g->Ho - oy < rpt ? g->Ho - oy : rpt;
        for (int ox0 = 0; ox0 < g->Wo; ox0 += pw) {
            const int nw = g->Wo - ox0 < pw ? g->Wo - ox0 : pw;
            for (int r = 0; r < nr; r++)
                for (int ox = 0; ox < nw; ox += pmax) {
                    const int np = nw - ox < pmax ? nw - ox : pmax;
                    float *bp = buf + ((size_t)r * nw + ox) * CD_OCV_BLOCK;
                    if (level == 2)
                        dw_rows512(d, xt, wt, bp, oy + r, ox0 + ox, np);
                    else
                        dw_rows256(d, xt, wt, bp, oy + r, ox0 + ox, np);
                }
            if (level == 2)
                ocv_store512(&j, buf, 1, nr * nw, cb, oy * g->Wo + ox0, nr * nw, 1, 1);
            else
                dw_store256(&j, buf, nr * nw, cb, oy * g->Wo + ox0);
        }
    }
}
#endif

/* ---- the transposed conv's gather pass (conv_ocv.h cd_convt_gather_f32) ----
 * The block's 16 (AVX2: 8) channels' tap rows of each input pixel (tap values each) are
 * transposed once into [pixel][tap][16 or 8], so every output's taps are whole-vector loads;
 * each output row's sums (16 or 8 pixels at a time) are transposed back and stored one channel
 * row at a time. The scalar pass read every tap of every channel at its own index. */
#ifdef OCV_X86
/* per output row its taps' (ky, iy) as offsets ky * KW + iy * W * tap, per output column its
 * (kx, ix) as kx + ix * tap, ascending ky and kx (the scalar pass's tables); tab: Ho * (KH + 1)
 * + Wo * (KW + 1) ints */
static void convt_tabs(int H, int W, int Ho, int Wo, int KH, int KW, int sh, int sw, int dh, int dw, int pt, int pl,
                       int *tab) {
    const int tap = KH * KW;
    int *ytab = tab, *yn = ytab + Ho * KH, *xtab = yn + Ho, *xn = xtab + Wo * KW;
    for (int oy = 0; oy < Ho; oy++) {
        int k = 0;
        for (int ky = 0; ky < KH; ky++) {
            const int t = oy + pt - ky * dh;
            if (t < 0 || t % sh || t / sh >= H) continue;
            ytab[oy * KH + k++] = ky * KW + t / sh * W * tap;
        }
        yn[oy] = k;
    }
    for (int ox = 0; ox < Wo; ox++) {
        int k = 0;
        for (int kx = 0; kx < KW; kx++) {
            const int t = ox + pl - kx * dw;
            if (t < 0 || t % sw || t / sw >= W) continue;
            xtab[ox * KW + k++] = kx + t / sw * tap;
        }
        xn[ox] = k;
    }
}

__attribute__((target("avx512f"))) static void convt512(const float *col, float *y, int oc0, int cog, int HW, int Ho,
                                                        int Wo, int KH, int KW, float *ct, const int *tab) {
    const int tap = KH * KW, nc = cog - oc0 < CD_OCV_BLOCK ? cog - oc0 : CD_OCV_BLOCK;
    const size_t Mrows = (size_t)cog * tap;
    const __mmask16 mt = (__mmask16)((1u << tap) - 1u);
    for (int p = 0; p < HW; p++) {
        __m512 r[16], c[16];
        for (int l = 0; l < 16; l++)
            r[l] = l < nc ? _mm512_maskz_loadu_ps(mt, col + (size_t)p * Mrows + (size_t)(oc0 + l) * tap)
                          : _mm512_setzero_ps();
        ocv_tr16(r, c);
        for (int t = 0; t < tap; t++) _mm512_storeu_ps(ct + ((size_t)p * tap + t) * CD_OCV_BLOCK, c[t]);
    }
    const int *ytab = tab, *yn = ytab + Ho * KH, *xtab = yn + Ho, *xn = xtab + Wo * KW;
    const size_t HWo = (size_t)Ho * Wo;
    for (int oy = 0; oy < Ho; oy++) {
        const int *yl = ytab + oy * KH, ny = yn[oy];
        for (int ox0 = 0; ox0 < Wo; ox0 += 16) {
            const int nq = Wo - ox0 < 16 ? Wo - ox0 : 16;
            const __mmask16 mq = (__mmask16)((1u << nq) - 1u);
            __m512 r[16], c[16];
            for (int q = 0; q < 16; q++) {
                __m512 acc = _mm512_setzero_ps();
                if (q < nq) {
                    const int *xl = xtab + (ox0 + q) * KW, nx = xn[ox0 + q];
                    for (int i = 0; i < ny; i++)
                        for (int jx = 0; jx < nx; jx++)
                            acc = _mm512_add_ps(acc, _mm512_loadu_ps(ct + (size_t)(yl[i] + xl[jx]) * CD_OCV_BLOCK));
                }
                r[q] = acc;
            }
            ocv_tr16(r, c);
            for (int l = 0; l < nc; l++)
                _mm512_mask_storeu_ps(y + (size_t)(oc0 + l) * HWo + (size_t)oy * Wo + ox0, mq, c[l]);
        }
    }
}

/* AVX2: the same with 8 channels per vector, [pixel][tap][8] */
__attribute__((target("avx2"))) static void convt256(const float *col, float *y, int oc0, int cog, int HW, int Ho,
                                                     int Wo, int KH, int KW, float *ct, const int *tab) {
    const int tap = KH * KW, nc = cog - oc0 < 8 ? cog - oc0 : 8;
    const size_t Mrows = (size_t)cog * tap;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int p = 0; p < HW; p++)
        for (int t0 = 0; t0 < tap; t0 += 8) {
            const int nt = tap - t0 < 8 ? tap - t0 : 8;
            const __m256i mt = _mm256_cmpgt_epi32(_mm256_set1_epi32(nt), lane);
            __m256 r[8], c[8];
            for (int l = 0; l < 8; l++)
                r[l] = l < nc ? _mm256_maskload_ps(col + (size_t)p * Mrows + (size_t)(oc0 + l) * tap + t0, mt)
                              : _mm256_setzero_ps();
            ocv_tr8(r, c);
            for (int t = 0; t < nt; t++) _mm256_storeu_ps(ct + ((size_t)p * tap + t0 + t) * 8, c[t]);
        }
    const int *ytab = tab, *yn = ytab + Ho * KH, *xtab = yn + Ho, *xn = xtab + Wo * KW;
    const size_t HWo = (size_t)Ho * Wo;
    for (int oy = 0; oy < Ho; oy++) {
        const int *yl = ytab + oy * KH, ny = yn[oy];
        for (int ox0 = 0; ox0 < Wo; ox0 += 8) {
            const int nq = Wo - ox0 < 8 ? Wo - ox0 : 8;
            const __m256i mq = _mm256_cmpgt_epi32(_mm256_set1_epi32(nq), lane);
            __m256 r[8], c[8];
            for (int q = 0; q < 8; q++) {
                __m256 acc = _mm256_setzero_ps();
                if (q < nq) {
                    const int *xl = xtab + (ox0 + q) * KW, nx = xn[ox0 + q];
                    for (int i = 0; i < ny; i++)
                        for (int jx = 0; jx < nx; jx++)
                            acc = _mm256_add_ps(acc, _mm256_loadu_ps(ct + (size_t)(yl[i] + xl[jx]) * 8));
                }
                r[q] = acc;
            }
            ocv_tr8(r, c);
            for (int l = 0; l < nc; l++)
                _mm256_maskstore_ps(y + (size_t)(oc0 + l) * HWo + (size_t)oy * Wo + ox0, mq, c[l]);
        }
    }
}
#endif

bool cd_convt_gather_f32(const float *col, float *y, int oc0, int cog, int H, int W, int Ho, int Wo, int KH, int KW,
                         int sh, int sw, int dh, int dw, int pt, int pl) {
#ifdef OCV_X86
    const int tap = KH * KW, level = cd_conv_ocv_level();
    if (!level || tap > 16 || (size_t)H * W * tap > (size_t)INT_MAX / CD_OCV_BLOCK) return false;
    float *ct = malloc((size_t)H * W * tap * CD_OCV_BLOCK * sizeof(float));
    int *tab = malloc((size_t)(Ho * (KH + 1) + Wo * (KW + 1)) * sizeof(int));
    const bool ok = ct && tab;
    if (ok) {
        convt_tabs(H, W, Ho, Wo, KH, KW, sh, sw, dh, dw, pt, pl, tab);
        if (level == 2)
            convt512(col, y, oc0, cog, H * W, Ho, Wo, KH, KW, ct, tab);
        else
            for (int o = oc0; o < cog && o < oc0 + CD_OCV_BLOCK; o += 8)
                convt256(col, y, o, cog, H * W, Ho, Wo, KH, KW, ct, tab);
    }
    free(ct);
    free(tab);
    return ok;
#else
    (void)col;
    (void)y;
    (void)oc0;
    (void)cog;
    (void)H;
    (void)W;
    (void)Ho;
    (void)Wo;
    (void)KH;
    (void)KW;
    (void)sh;
    (void)sw;
    (void)dh;
    (void)dw;
    (void)pt;
    (void)pl;
    return false;
#endif
}

bool cd_conv_ocv_dw_f32(const cd_conv_direct_geo *g, int N, const float *W, float *Y, const cd_conv_ocv_epi *epi,
                        int threads) {
    const int level = cd_conv_ocv_level();
    if (!level) return false;
#ifdef OCV_X86
    const int C = g->Cin, Hp = (g->Ho - 1) * g->sh + (g->KH - 1) * g->dh + 1,
              Wp = (g->Wo - 1) * g->sw + (g->KW - 1) * g->dw + 1;
    int *kyr = malloc((size_t)g->Ho * 2 * sizeof(int));
    if (!kyr) return false;
    for (int oy = 0; oy < g->Ho; oy++) { /* as the plane kernel's row table (ops_nn_conv_tmpl.h) */
        const long r0 = (long)oy * g->sh, lo = g->pt - r0, hi = g->pt + g->H - r0;
        const long ky0 = lo <= 0 ? 0 : (lo + g->dh - 1) / g->dh, ky1 = hi <= 0 ? 0 : (hi + g->dh - 1) / g->dh;
        kyr[2 * oy] = (int)(ky0 < g->KH ? ky0 : g->KH);
        kyr[2 * oy + 1] = (int)(ky1 < g->KH ? ky1 : g->KH);
    }
    const dw_geo d = {g, kyr, W, Hp, Wp};
    const int nb = (C + CD_OCV_BLOCK - 1) / CD_OCV_BLOCK;
    const size_t xts = (size_t)Hp * Wp * CD_OCV_BLOCK, wts = (size_t)g->KH * g->KW * CD_OCV_BLOCK;
    const size_t per = xts + wts + OCV_PMAX * CD_OCV_BLOCK + 16; /* floats per thread, +16: alignment */
    const int nt = threads > 1 && (long)N * nb > 1 ? threads : 1;
    float *scr = malloc((size_t)nt * per * sizeof(float));
    if (!scr) {
        free(kyr);
        return false;
    }
    /* each thread's padding frame zeroed once: dw_block writes only the window inside it (all
     * 16 lanes, 0 past a partial block's channels) */
    const int top = g->pt < Hp ? g->pt : Hp, left = g->pl < Wp ? g->pl : Wp;
    int rows = g->H < Hp - top ? g->H : Hp - top, cols = g->W < Wp - left ? g->W : Wp - left;
    rows = rows > 0 ? rows : 0;
    cols = cols > 0 ? cols : 0;
    for (int t = 0; t < nt; t++) {
        float *xt = scr + (size_t)t * per;
        const size_t rowf = (size_t)Wp * CD_OCV_BLOCK;
        memset(xt, 0, (size_t)top * rowf * sizeof(float));
        memset(xt + (size_t)(top + rows) * rowf, 0, (size_t)(Hp - top - rows) * rowf * sizeof(float));
        for (int r = top; r < top + rows; r++) {
            memset(xt + (size_t)r * rowf, 0, (size_t)left * CD_OCV_BLOCK * sizeof(float));
            memset(xt + (size_t)r * rowf + (size_t)(left + cols) * CD_OCV_BLOCK, 0,
                   (size_t)(Wp - left - cols) * CD_OCV_BLOCK * sizeof(float));
        }
    }
    const long items = (long)N * nb;
    const size_t in_img = (size_t)C * g->H * g->W, out_img = (size_t)C * g->Ho * g->Wo;
    CD_PAR_FOR(nt > 1, nt, long, it, items, {
        const int tn = nt > 1 ? omp_get_thread_num() : 0;
        float *xt = scr + (size_t)tn * per, *wt = xt + xts;
        float *buf = (float *)(((uintptr_t)(wt + wts) + 63) & ~(uintptr_t)63);
        const long n = it / nb;
        dw_block(&d, level, g->x + n * in_img, Y + n * out_img, C, (int)(it % nb), xt, wt, buf, epi);
    });
    free(scr);
    free(kyr);
    return true;
#else
    (void)g;
    (void)N;
    (void)W;
    (void)Y;
    (void)epi;
    (void)threads;
    return false;
#endif
}
