/* Exact int8 convolution sums through the float GEMM (see gemm_int8.h). */
#include "backends/cpu/gemm_int8.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/par.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    const float *x;   /* the input channels of this piece, as floats */
    int H, W, KH, KW, sh, sw, dh, dw, pt, pl, Wo;
} im2col_ctx;

/* cd_gemm_pack_fn: rows k = (ic, ky, kx) of the im2col matrix, columns p = oy*Wo + ox; the
 * (oy, ox) of each panel column is stepped, not divided out per element. */
static void pack_im2col(const void *vctx, int k0, int kc, int n0, int nc, void *vdst) {
    const im2col_ctx *c = vctx;
    float *dst = vdst;
    int np = (nc + CD_GEMM_NR - 1) / CD_GEMM_NR, taps = c->KH * c->KW;
    for (int pn = 0; pn < np; pn++) {
        float *panel = dst + (size_t)pn * (size_t)kc * CD_GEMM_NR;
        int pb = n0 + pn * CD_GEMM_NR, cnt = n0 + nc - pb < CD_GEMM_NR ? n0 + nc - pb : CD_GEMM_NR;
        int oy0[CD_GEMM_NR], ox0[CD_GEMM_NR];
        for (int j = 0, oy = pb / c->Wo, ox = pb % c->Wo; j < cnt; j++) {
            oy0[j] = oy * c->sh - c->pt;
            ox0[j] = ox * c->sw - c->pl;
            if (++ox == c->Wo) { ox = 0; oy++; }
        }
        for (int kk = 0; kk < kc; kk++) {
            int k = k0 + kk, ic = k / taps, ky = (k % taps) / c->KW, kx = k % c->KW;
            const float *xc = c->x + (size_t)ic * (size_t)c->H * (size_t)c->W;
            float *d = panel + (size_t)kk * CD_GEMM_NR;
            int dy = ky * c->dh, dx = kx * c->dw, j = 0;
            for (; j < cnt; j++) {
                int iy = oy0[j] + dy, ix = ox0[j] + dx;
                d[j] = (iy >= 0 && iy < c->H && ix >= 0 && ix < c->W) ? xc[(size_t)iy * (size_t)c->W + (size_t)ix] : 0.0f;
            }
            for (; j < CD_GEMM_NR; j++) d[j] = 0.0f;
        }
    }
}

bool cd_conv8_sums(const cd_conv8_geo *g, int Cout, const int8_t *W, float *Y, int threads) {
    int taps = g->KH * g->KW, K = g->Cin * taps, P = g->Ho * g->Wo;
    if (taps > CD_INT8_FLOAT_EXACT_K) return false;
    if (Cout <= 0 || P <= 0) return true;
    int cc = CD_INT8_FLOAT_EXACT_K / taps; /* input channels per exact piece */
    if (cc > g->Cin) cc = g->Cin;
    bool pieces = cc < g->Cin;
    size_t n = (size_t)Cout * (size_t)P;
    float *wf = malloc(sizeof(float) * (size_t)Cout * (size_t)(cc * taps));
    float *yf = pieces ? malloc(sizeof(float) * n) : Y;
    int32_t *S = pieces ? malloc(sizeof(int32_t) * n) : NULL;
    if (!wf || !yf || (pieces && !S)) {
        free(wf);
        if (pieces) { free(yf); free(S); }
        return false;
    }
    for (int c0 = 0; c0 < g->Cin; c0 += cc) {
        int cn = g->Cin - c0 < cc ? g->Cin - c0 : cc, kp = cn * taps;
        for (int o = 0; o < Cout; o++)
            for (int k = 0; k < kp; k++)
                wf[(size_t)o * (size_t)kp + (size_t)k] = (float)W[(size_t)o * (size_t)K + (size_t)(c0 * taps + k)];
        const float *xp = g->x + (size_t)c0 * (size_t)g->H * (size_t)g->W;
        bool done = false;
        bool pointwise = g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 &&
                         g->Ho == g->H && g->Wo == g->W;
        if (pointwise) { /* the input channels are the GEMM's B as they are */
            cd_gemm_f32(Cout, P, kp, 1.0f, wf, kp, false, xp, P, false, 0.0f, yf, P, threads);
            done = true;
        } else if (kp <= 64) { /* short reductions: the direct kernel, as the float conv does */
            cd_conv_direct_geo dg = {xp, cn, g->H, g->W, g->KH, g->KW, g->sh, g->sw, g->dh, g->dw, g->pt, g->pl,
                                     g->Ho, g->Wo};
            done = cd_conv_direct_f32(&dg, Cout, wf, yf, threads);
        }
        if (!done) {
            im2col_ctx ic = {xp, g->H, g->W, g->KH, g->KW, g->sh, g->sw, g->dh, g->dw, g->pt, g->pl, g->Wo};
            cd_gemm_f32_packed_b(Cout, P, kp, 1.0f, wf, kp, false, pack_im2col, &ic, 0.0f, yf, P, threads);
        }
        if (pieces) {
            if (c0 == 0) for (size_t i = 0; i < n; i++) S[i] = (int32_t)yf[i];
            else for (size_t i = 0; i < n; i++) S[i] += (int32_t)yf[i];
        }
    }
    if (pieces) {
        for (size_t i = 0; i < n; i++) Y[i] = (float)S[i];
        free(yf);
        free(S);
    }
    free(wf);
    return true;
}
