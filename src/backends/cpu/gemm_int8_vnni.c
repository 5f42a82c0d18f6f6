/* Pointwise int8 conv sums in integer SIMD (AVX512-VNNI), see gemm_int8.h. */
#include "backends/cpu/gemm_int8.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/par.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(CD_NO_TARGET_CLONES)
#include <immintrin.h>
#define VNNI 1
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))
#endif

#define PB 16 /* pixels per vector */

size_t cd_pw8_pack_bytes(int K, int P) {
    size_t pp = (size_t)((P + PB - 1) / PB * PB);
    return (size_t)((K + 3) / 4) * pp * 4;
}

void cd_pw8_weights(const int8_t *W, int Cout, int K, int32_t *wp, int32_t *corr) {
    int kg = (K + 3) / 4;
    for (int o = 0; o < Cout; o++) {
        int32_t s = 0;
        for (int g = 0; g < kg; g++) {
            uint32_t v = 0;
            for (int j = 0; j < 4; j++) {
                int k = 4 * g + j;
                int8_t w = k < K ? W[(size_t)o * (size_t)K + (size_t)k] : 0;
                s += w;
                v |= (uint32_t)(uint8_t)w << (8 * j);
            }
            wp[(size_t)o * (size_t)kg + (size_t)g] = (int32_t)v;
        }
        corr[o] = 128 * s; /* the inputs go in as q + 128 (unsigned bytes) */
    }
}

#ifdef VNNI
bool cd_pw8_available(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vnni");
}

/* Quantizes rows [4g, 4g + 4) of x [K][P] into packed group g: per pixel p one int32 holding the
 * bytes q_k + 128, k = 4g .. 4g + 3 (128, i.e. q = 0, past K and past P). q is cd_q8_vec's rule
 * on x * inv, in AVX-512 instructions with the same results lane by lane: max(v, -127) returns
 * -127 for a NaN v (the second operand, as v >= -127 ? v : -127 does), min(v, 127), then v plus
 * 0.49999997 with v's sign, truncated. */
VNNI_TARGET static void pack_group(const float *x, int K, int P, int g, float inv, int32_t *dst) {
    const __m512 vinv = _mm512_set1_ps(inv), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    const __m512i sign = _mm512_set1_epi32(INT32_MIN), half = _mm512_castps_si512(_mm512_set1_ps(0.49999997f));
    const __m512i off = _mm512_set1_epi32(128), pad = _mm512_set1_epi32(128);
    int pp = (P + PB - 1) / PB * PB, kn = K - 4 * g < 4 ? K - 4 * g : 4;
    for (int p0 = 0; p0 < pp; p0 += PB) {
        int n = P - p0 < PB ? P - p0 : PB;
        __mmask16 m = (__mmask16)(n == PB ? 0xffffu : (1u << n) - 1);
        __m512i acc = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            __m512i b = pad;
            if (j < kn) {
                __m512 v = _mm512_maskz_loadu_ps(m, x + (size_t)(4 * g + j) * (size_t)P + p0);
                v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, vinv), lo), hi);
                __m512i hs = _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v), sign), half);
                __m512i q = _mm512_cvttps_epi32(_mm512_add_ps(v, _mm512_castsi512_ps(hs)));
                b = _mm512_add_epi32(q, off);
            }
            acc = _mm512_or_si512(acc, _mm512_slli_epi32(b, 8 * j));
        }
        _mm512_storeu_si512((void *)(dst + p0), acc);
    }
}

/* NV vectors of 16 pixels from p0 for output channels [o0, o0 + NO): S = sum over groups of
 * dpbusd(packed input, broadcast weights) - corr, written as floats (float(S), as scvtf). */
#define NO 4
VNNI_TARGET static inline __attribute__((always_inline)) void tile(const int32_t *xp, int kg, int pp, const int32_t *wp,
                                                                   const int32_t *corr, int o0, int no, int p0, int nv,
                                                                   int P, float *Y, const int NV) {
    __m512i acc[NO][4];
#pragma GCC unroll 4
    for (int o = 0; o < NO; o++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) acc[o][v] = _mm512_setzero_si512();
    for (int g = 0; g < kg; g++) {
        __m512i a[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            a[v] = _mm512_loadu_si512((const void *)(xp + (size_t)g * (size_t)pp + p0 + v * PB));
        const int32_t *wg = wp + (size_t)g;
#pragma GCC unroll 4
        for (int o = 0; o < NO; o++) {
            __m512i w = _mm512_set1_epi32(wg[(size_t)(o0 + (o < no ? o : 0)) * (size_t)kg]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[o][v] = _mm512_dpbusd_epi32(acc[o][v], a[v], w);
        }
    }
#pragma GCC unroll 4
    for (int o = 0; o < NO; o++) {
        if (o >= no) break;
        __m512i c = _mm512_set1_epi32(corr[o0 + o]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            if (v >= nv) break;
            int n = P - (p0 + v * PB);
            __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[o][v], c));
            float *dst = Y + (size_t)(o0 + o) * (size_t)P + p0 + v * PB;
            if (n >= PB)
                _mm512_storeu_ps(dst, f);
            else
                _mm512_mask_storeu_ps(dst, (__mmask16)((1u << n) - 1), f);
        }
    }
}

VNNI_TARGET static void tiles(const int32_t *xp, int kg, int pp, const int32_t *wp, const int32_t *corr, int Cout,
                              int P, int b0, int b1, float *Y) {
    for (int b = b0; b < b1; b++) {
        int p0 = b * 4 * PB, nv = (P - p0 + PB - 1) / PB;
        if (nv > 4) nv = 4;
        for (int o0 = 0; o0 < Cout; o0 += NO) {
            int no = Cout - o0 < NO ? Cout - o0 : NO;
            switch (nv) {
            case 1: tile(xp, kg, pp, wp, corr, o0, no, p0, 1, P, Y, 1); break;
            case 2: tile(xp, kg, pp, wp, corr, o0, no, p0, 2, P, Y, 2); break;
            case 3: tile(xp, kg, pp, wp, corr, o0, no, p0, 3, P, Y, 3); break;
            default: tile(xp, kg, pp, wp, corr, o0, no, p0, 4, P, Y, 4); break;
            }
        }
    }
}

void cd_pw8_sums(const float *x, float inv, int K, int P, const int32_t *wp, const int32_t *corr, int Cout, float *Y,
                 void *scratch, int threads) {
    int kg = (K + 3) / 4, pp = (P + PB - 1) / PB * PB;
    int32_t *xp = scratch;
    int64_t work = (int64_t)Cout * K * P;
    CD_PAR_FOR((int64_t)K * P >= CD_GEMM_ONE_THREAD_MACS / 8, threads, int, g, kg,
               { pack_group(x, K, P, g, inv, xp + (size_t)g * (size_t)pp); });
    int nb = (P + 4 * PB - 1) / (4 * PB);
    int nt = work >= CD_GEMM_ONE_THREAD_MACS && threads > 1 ? (threads < nb ? threads : nb) : 1;
    CD_PAR_FOR(nt > 1, nt, int, t, nt, {
        int b0 = (int)((int64_t)nb * t / nt), b1 = (int)((int64_t)nb * (t + 1) / nt);
        tiles(xp, kg, pp, wp, corr, Cout, P, b0, b1, Y);
    });
}
#else
bool cd_pw8_available(void) { return false; }
void cd_pw8_sums(const float *x, float inv, int K, int P, const int32_t *wp, const int32_t *corr, int Cout, float *Y,
                 void *scratch, int threads) {
    (void)x;
    (void)inv;
    (void)K;
    (void)P;
    (void)wp;
    (void)corr;
    (void)Cout;
    (void)Y;
    (void)scratch;
    (void)threads;
}
#endif
