/* Exact int8 convolution sums through the float GEMM (see gemm_int8.h). */
#include "backends/cpu/gemm_int8.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/par.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    const float *x; /* the input channels of this piece, as floats */
    int H, W, KH, KW, sh, sw, dh, dw, pt, pl, Wo;
} im2col_ctx;

/* One run of n panel columns on output row oy from column ox, for tap (ky, kx): the input row
 * iy read at ix = ox*sw - pl + kx*dw onwards, zeros outside the input. */
static void run_copy(const im2col_ctx *c, const float *plane, int oy, int ox, int n, int ky, int kx, float *d) {
    int iy = oy * c->sh - c->pt + ky * c->dh;
    if (iy < 0 || iy >= c->H) {
        memset(d, 0, sizeof(float) * (size_t)n);
        return;
    }
    const float *row = plane + (size_t)iy * (size_t)c->W;
    int ix = ox * c->sw - c->pl + kx * c->dw;
    if (c->sw == 1) {
        int j = 0;
        for (; j < n && ix + j < 0; j++) d[j] = 0.0f;
        int e = c->W - ix < n ? c->W - ix : n; /* columns with ix + j < W */
        if (e > j) {
            memcpy(d + j, row + ix + j, sizeof(float) * (size_t)(e - j));
            j = e;
        }
        for (; j < n; j++) d[j] = 0.0f;
        return;
    }
    for (int j = 0; j < n; j++, ix += c->sw) d[j] = (ix >= 0 && ix < c->W) ? row[ix] : 0.0f;
}

/* cd_gemm_pack_fn: rows k = (ic, ky, kx) of the im2col matrix, columns p = oy*Wo + ox. A panel's
 * columns are cut into runs on one output row, each copied with run_copy. */
static void pack_im2col(const void *vctx, int k0, int kc, int n0, int nc, void *vdst) {
    const im2col_ctx *c = vctx;
    float *dst = vdst;
    int taps = c->KH * c->KW;
    for (int pn = 0; pn * CD_GEMM_NR < nc; pn++) {
        int pb = n0 + pn * CD_GEMM_NR, cnt = nc - pn * CD_GEMM_NR < CD_GEMM_NR ? nc - pn * CD_GEMM_NR : CD_GEMM_NR;
        int r_oy[CD_GEMM_NR], r_ox[CD_GEMM_NR], r_j[CD_GEMM_NR + 1], nr = 0;
        for (int j = 0; j < cnt;) {
            int oy = (pb + j) / c->Wo, ox = (pb + j) % c->Wo;
            r_oy[nr] = oy;
            r_ox[nr] = ox;
            r_j[nr] = j;
            nr++;
            j += c->Wo - ox;
        }
        r_j[nr] = cnt;
        float *d = dst + (size_t)pn * (size_t)kc * CD_GEMM_NR;
        int ic = k0 / taps, ky = (k0 % taps) / c->KW, kx = k0 % c->KW;
        for (int kk = 0; kk < kc; kk++, d += CD_GEMM_NR) {
            const float *plane = c->x + (size_t)ic * (size_t)c->H * (size_t)c->W;
            for (int r = 0; r < nr; r++) {
                int je = r_j[r + 1] < cnt ? r_j[r + 1] : cnt;
                run_copy(c, plane, r_oy[r], r_ox[r], je - r_j[r], ky, kx, d + r_j[r]);
            }
            for (int j = cnt; j < CD_GEMM_NR; j++) d[j] = 0.0f;
            if (++kx == c->KW) {
                kx = 0;
                if (++ky == c->KH) {
                    ky = 0;
                    ic++;
                }
            }
        }
    }
}

/* input channels per exact piece */
static int piece_channels(const cd_conv8_geo *g) {
    int cc = CD_INT8_FLOAT_EXACT_K / (g->KH * g->KW);
    return cc < g->Cin ? cc : g->Cin;
}

bool cd_conv8_exact(const cd_conv8_geo *g) { return g->KH * g->KW <= CD_INT8_FLOAT_EXACT_K; }

static bool pointwise(const cd_conv8_geo *g) {
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 && g->Ho == g->H &&
        g->Wo == g->W;
}
/* A pointwise conv on a 1x1 map is a matrix-vector product: its weights are kept k-major,
 * for the GEMM's one-column path (as the float conv's prepared state does). */
static bool kmajor(const cd_conv8_geo *g) { return pointwise(g) && g->Ho * g->Wo == 1; }

void cd_conv8_weights(const cd_conv8_geo *g, int Cout, const int8_t *W, float *wf) {
    int taps = g->KH * g->KW, K = g->Cin * taps, cc = piece_channels(g);
    for (int c0 = 0; c0 < g->Cin; c0 += cc) {
        int cn = g->Cin - c0 < cc ? g->Cin - c0 : cc, kp = cn * taps;
        float *d = wf + (size_t)Cout * (size_t)(c0 * taps);
        bool km = kmajor(g);
        for (int o = 0; o < Cout; o++)
            for (int k = 0; k < kp; k++)
                d[km ? (size_t)k * (size_t)Cout + (size_t)o : (size_t)o * (size_t)kp + (size_t)k] =
                    (float)W[(size_t)o * (size_t)K + (size_t)(c0 * taps + k)];
    }
}

size_t cd_conv8_scratch(const cd_conv8_geo *g, int Cout) {
    if (!cd_conv8_exact(g) || piece_channels(g) >= g->Cin || Cout <= 0) return 0;
    return (sizeof(float) + sizeof(int32_t)) * (size_t)Cout * (size_t)(g->Ho * g->Wo);
}

bool cd_conv8_sums(const cd_conv8_geo *g, int Cout, const float *wall, float *Y, void *scratch, int threads) {
    int taps = g->KH * g->KW, P = g->Ho * g->Wo;
    if (!cd_conv8_exact(g)) return false;
    if (Cout <= 0 || P <= 0) return true;
    int cc = piece_channels(g);
    bool pieces = cc < g->Cin, own = pieces && !scratch;
    size_t n = (size_t)Cout * (size_t)P;
    void *sb = own ? malloc((sizeof(float) + sizeof(int32_t)) * n) : scratch;
    if (pieces && !sb) return false;
    float *yf = pieces ? sb : Y;
    int32_t *S = pieces ? (int32_t *)((float *)sb + n) : NULL;
    for (int c0 = 0; c0 < g->Cin; c0 += cc) {
        int cn = g->Cin - c0 < cc ? g->Cin - c0 : cc, kp = cn * taps;
        const float *wf = wall + (size_t)Cout * (size_t)(c0 * taps);
        const float *xp = g->x + (size_t)c0 * (size_t)g->H * (size_t)g->W;
        bool done = false;
        if (kmajor(g)) {
            cd_gemm_f32(Cout, 1, kp, 1.0f, wf, Cout, true, xp, 1, false, 0.0f, yf, 1, threads);
            done = true;
        } else if (pointwise(g)) { /* the input channels are the GEMM's B as they are */
            cd_gemm_f32(Cout, P, kp, 1.0f, wf, kp, false, xp, P, false, 0.0f, yf, P, threads);
            done = true;
        } else if (kp <= 64) { /* short reductions: the direct kernel, as the float conv does */
            cd_conv_direct_geo dg = {xp,    cn,    g->H,  g->W,  g->KH, g->KW, g->sh,
                                     g->sw, g->dh, g->dw, g->pt, g->pl, g->Ho, g->Wo};
            done = cd_conv_direct_f32(&dg, Cout, wf, yf, threads);
        }
        if (!done) {
            im2col_ctx ic = {xp, g->H, g->W, g->KH, g->KW, g->sh, g->sw, g->dh, g->dw, g->pt, g->pl, g->Wo};
            cd_gemm_f32_packed_b(Cout, P, kp, 1.0f, wf, kp, false, pack_im2col, &ic, 0.0f, yf, P, threads);
        }
        if (pieces) {
            if (c0 == 0)
                for (size_t i = 0; i < n; i++) S[i] = (int32_t)yf[i];
            else
                for (size_t i = 0; i < n; i++) S[i] += (int32_t)yf[i];
        }
    }
    if (pieces)
        for (size_t i = 0; i < n; i++) Y[i] = (float)S[i];
    if (own) free(sb);
    return true;
}
