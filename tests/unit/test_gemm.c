/* cd_gemm_f32 / cd_gemm_f16 against a naive double-accumulation reference: every size
 * from 1 to 129 on each axis class (below, at and above the MR/NR/KC tile edges), all
 * four transpose combinations, alpha/beta, leading dimensions larger than the matrix,
 * the packed-B callback, and 1 vs 2 threads giving identical bits. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/cpu/conv_ocv.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/matmul_geo.h"

static uint32_t g_rng = 12345u;
static float frand(void) { /* values in [-1, 1), exactly representable in half */
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)((int)(g_rng >> 22) - 512) / 512.0f;
}

/* Reference: C = alpha*op(A)*op(B) + beta*C in double. */
static void ref_gemm(int M, int N, int K, double alpha, const float *A, int lda, bool ta, const float *B, int ldb,
                     bool tb, double beta, const float *C0, double *C, int ldc) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                double a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                double b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += a * b;
            }
            C[(size_t)i * ldc + j] = alpha * s + (beta != 0 ? beta * C0[(size_t)i * ldc + j] : 0);
        }
}

typedef struct {
    int M, N, K;
    bool ta, tb;
    float alpha, beta;
    int pad;
    int threads;
} gcase;

static void run_f32(gcase g) {
    int lda = (g.ta ? g.M : g.K) + g.pad, ldb = (g.tb ? g.K : g.N) + g.pad, ldc = g.N + g.pad;
    size_t na = (size_t)(g.ta ? g.K : g.M) * lda, nb = (size_t)(g.tb ? g.N : g.K) * ldb, nc = (size_t)g.M * ldc;
    float *A = malloc(na * 4 + 4), *B = malloc(nb * 4 + 4), *C = malloc(nc * 4 + 4), *C0 = malloc(nc * 4 + 4);
    double *R = malloc(nc * 8 + 8);
    for (size_t i = 0; i < na; i++) A[i] = frand();
    for (size_t i = 0; i < nb; i++) B[i] = frand();
    for (size_t i = 0; i < nc; i++) C0[i] = g.beta != 0 ? frand() : NAN; /* beta 0 must not read C */
    memcpy(C, C0, nc * 4);
    cd_gemm_f32(g.M, g.N, g.K, g.alpha, A, lda, g.ta, B, ldb, g.tb, g.beta, C, ldc, g.threads);
    ref_gemm(g.M, g.N, g.K, g.alpha, A, lda, g.ta, B, ldb, g.tb, g.beta, C0, R, ldc);
    for (int i = 0; i < g.M; i++)
        for (int j = 0; j < g.N; j++) {
            double r = R[(size_t)i * ldc + j], c = C[(size_t)i * ldc + j];
            /* float accumulation of K products of magnitude <= 1: error <= K * 2^-24 * sum|ab| */
            double tol = 1e-6 * (g.K + 2) * (fabs(g.alpha) + 1) + 1e-6;
            cr_assert(fabs(r - c) <= tol, "f32 M=%d N=%d K=%d ta=%d tb=%d alpha=%g beta=%g: C[%d][%d]=%.9g ref %.9g",
                      g.M, g.N, g.K, g.ta, g.tb, g.alpha, g.beta, i, j, c, r);
        }
    /* padding columns of C are never written */
    for (int i = 0; i < g.M; i++)
        for (int j = g.N; j < ldc; j++)
            cr_assert(memcmp(&C[(size_t)i * ldc + j], &C0[(size_t)i * ldc + j], 4) == 0, "C padding written");
    free(A);
    free(B);
    free(C);
    free(C0);
    free(R);
}

static void run_f16(gcase g) {
    int lda = (g.ta ? g.M : g.K) + g.pad, ldb = (g.tb ? g.K : g.N) + g.pad, ldc = g.N + g.pad;
    size_t na = (size_t)(g.ta ? g.K : g.M) * lda, nb = (size_t)(g.tb ? g.N : g.K) * ldb, nc = (size_t)g.M * ldc;
    float *A = malloc(na * 4 + 4), *B = malloc(nb * 4 + 4), *C0 = malloc(nc * 4 + 4);
    _Float16 *Ah = malloc(na * 2 + 2), *Bh = malloc(nb * 2 + 2), *Ch = malloc(nc * 2 + 2);
    double *R = malloc(nc * 8 + 8);
    for (size_t i = 0; i < na; i++) {
        A[i] = frand();
        Ah[i] = (_Float16)A[i];
    }
    for (size_t i = 0; i < nb; i++) {
        B[i] = frand();
        Bh[i] = (_Float16)B[i];
    }
    for (size_t i = 0; i < nc; i++) {
        C0[i] = g.beta != 0 ? frand() : 0;
        Ch[i] = g.beta != 0 ? (_Float16)C0[i] : (_Float16)NAN;
    }
    cd_gemm_f16(g.M, g.N, g.K, (_Float16)g.alpha, Ah, lda, g.ta, Bh, ldb, g.tb, (_Float16)g.beta, Ch, ldc, g.threads);
    ref_gemm(g.M, g.N, g.K, g.alpha, A, lda, g.ta, B, ldb, g.tb, g.beta, C0, R, ldc);
    for (int i = 0; i < g.M; i++)
        for (int j = 0; j < g.N; j++) {
            double r = R[(size_t)i * ldc + j], c = (double)Ch[(size_t)i * ldc + j];
            /* half accumulation: each of the K additions rounds at 2^-11 relative to the
             * partial sum, bounded by K * 2^-11 * K (partial sums <= K). */
            double tol = (g.K + 2) * (g.K + 2) * 4.9e-4 * (fabs(g.alpha) + 1) / 8 + 2e-3;
            cr_assert(fabs(r - c) <= tol, "f16 M=%d N=%d K=%d ta=%d tb=%d: C[%d][%d]=%.6g ref %.6g", g.M, g.N, g.K,
                      g.ta, g.tb, i, j, c, r);
        }
    free(A);
    free(B);
    free(C0);
    free(Ah);
    free(Bh);
    free(Ch);
    free(R);
}

static const int k_sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 127, 128, 129};
#define NSZ (int)(sizeof k_sizes / sizeof k_sizes[0])

Test(gemm, f32_all_sizes_and_transposes) {
    for (int t = 0; t < 4; t++)
        for (int a = 0; a < NSZ; a++)
            for (int b = 0; b < NSZ; b += 3) {
                gcase g = {k_sizes[a], k_sizes[b], k_sizes[(a + b) % NSZ], t & 1, (t >> 1) & 1, 1.0f, 0.0f, 0, 2};
                run_f32(g);
                g.M = k_sizes[b];
                g.N = k_sizes[a];
                g.threads = 1;
                run_f32(g);
            }
}

Test(gemm, f32_every_size_1_to_129) {
    for (int n = 1; n <= 129; n++) {
        gcase g = {n, n, n, n & 1, (n >> 1) & 1, 1.0f, 0.0f, 0, 2};
        run_f32(g);
    }
}

Test(gemm, f32_deep_k_crosses_slices) {
    /* K > KC (256) exercises accumulation over several K slices with beta and alpha */
    gcase g1 = {13, 37, 600, false, false, 0.5f, 1.0f, 3, 2};
    run_f32(g1);
    gcase g2 = {70, 300, 513, true, true, -2.0f, 0.25f, 1, 2};
    run_f32(g2);
    gcase g3 = {1, 1000, 1100, false, false, 1.0f, 0.0f, 0, 2}; /* fc-like M=1 */
    run_f32(g3);
    gcase g4 = {1000, 3, 40, false, true, 1.0f, 0.0f, 0, 2}; /* tall and thin */
    run_f32(g4);
}

Test(gemm, f32_alpha_beta_and_ld) {
    float ab[][2] = {{1, 1}, {2, 0}, {-1, 0.5f}, {0.25f, -3}};
    for (int i = 0; i < 4; i++)
        for (int t = 0; t < 4; t++) {
            gcase g = {19, 45, 23, t & 1, t >> 1, ab[i][0], ab[i][1], 5, 2};
            run_f32(g);
        }
}

Test(gemm, f32_k_zero_scales_c) {
    float C[6] = {1, 2, 3, 4, 5, 6}, A[1] = {0}, B[1] = {0};
    cd_gemm_f32(2, 3, 0, 1.0f, A, 1, false, B, 3, false, 2.0f, C, 3, 1);
    for (int i = 0; i < 6; i++) cr_assert_eq(C[i], 2.0f * (i + 1));
    cd_gemm_f32(2, 3, 0, 1.0f, A, 1, false, B, 3, false, 0.0f, C, 3, 1);
    for (int i = 0; i < 6; i++) cr_assert_eq(C[i], 0.0f);
}

Test(gemm, f32_threads_bit_identical) {
    int M = 45, N = 777, K = 300;
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
    float *C1 = malloc((size_t)M * N * 4), *C2 = malloc((size_t)M * N * 4);
    for (int i = 0; i < M * K; i++) A[i] = frand();
    for (int i = 0; i < K * N; i++) B[i] = frand();
    cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C1, N, 1);
    cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C2, N, 2);
    cr_assert(memcmp(C1, C2, (size_t)M * N * 4) == 0, "1 and 2 threads differ");
    free(A);
    free(B);
    free(C1);
    free(C2);
}

Test(gemm, f16_sizes_and_transposes) {
    for (int t = 0; t < 4; t++)
        for (int a = 0; a < NSZ; a += 2)
            for (int b = 0; b < NSZ; b += 5) {
                gcase g = {k_sizes[a], k_sizes[b], k_sizes[(a * 3 + b) % 10], t & 1, t >> 1, 1.0f, 0.0f, 1, 2};
                run_f16(g);
            }
    gcase g = {20, 40, 300, false, false, 0.5f, 1.0f, 2, 2};
    run_f16(g);
}

Test(gemm, f16_accumulates_in_half) {
    /* 2048 + 1 + 1 + ... in half: the spacing of halfs at 2048 is 2, so every +1 is a tie
     * that rounds back to 2048 (to even). A float accumulator would reach 2048 + 255. K is
     * kept within one K slice of the blocked kernel, so the order is exactly sequential. */
    int K = 256;
    _Float16 *A = malloc((size_t)K * 2), *B = malloc((size_t)K * 2), C = 0;
    for (int k = 0; k < K; k++) {
        A[k] = (_Float16)1.0f;
        B[k] = k == 0 ? (_Float16)2048.0f : (_Float16)1.0f;
    }
    cd_gemm_f16(1, 1, K, (_Float16)1, A, K, false, B, 1, false, (_Float16)0, &C, 1, 1);
    cr_assert_eq((float)C, 2048.0f, "half accumulation expected 2048 (each +1 rounds away), got %g", (double)C);
    free(A);
    free(B);
}

/* A packer that builds B[k][j] = k - j on the fly, as conv's im2col packer does. */
static void pack_kmj(const void *ctx, int k0, int kc, int n0, int nc, void *dstv) {
    float *dst = dstv;
    (void)ctx;
    for (int p = 0; p * CD_GEMM_NR < nc; p++)
        for (int k = 0; k < kc; k++)
            for (int j = 0; j < CD_GEMM_NR; j++) {
                int col = p * CD_GEMM_NR + j;
                dst[((size_t)p * kc + k) * CD_GEMM_NR + j] = col < nc ? (float)(k0 + k - (n0 + col)) : 0.0f;
            }
}

Test(gemm, f32_packed_b_callback) {
    int M = 11, N = 70, K = 300;
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4), *C = malloc((size_t)M * N * 4);
    double *R = malloc((size_t)M * N * 8);
    for (int i = 0; i < M * K; i++) A[i] = frand();
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) B[k * N + j] = (float)(k - j);
    cd_gemm_f32_packed_b(M, N, K, 1.0f, A, K, false, pack_kmj, NULL, 0.0f, C, N, 2);
    ref_gemm(M, N, K, 1, A, K, false, B, N, false, 0, C, R, N);
    for (int i = 0; i < M * N; i++)
        cr_assert(fabs(R[i] - C[i]) <= 1e-5 * fabs(R[i]) + 1e-3, "at %d: %g vs %g", i, C[i], R[i]);
    free(A);
    free(B);
    free(C);
    free(R);
}

Test(gemm, f16_bits_match_sequential_half_arithmetic) {
    /* The fp16 GEMM claims half arithmetic: each product and each partial sum rounded to
     * half, k in order within a K slice (256), then C = C + slice sum. Whatever micro-kernel
     * the machine picks (AVX512-FP16, F16C, portable) must give exactly these bits. */
    int M = 13, N = 37, K = 600;
    _Float16 *A = malloc((size_t)M * K * 2), *B = malloc((size_t)K * N * 2), *C = malloc((size_t)M * N * 2);
    for (int i = 0; i < M * K; i++) A[i] = (_Float16)(frand() * 3.0f);
    for (int i = 0; i < K * N; i++) B[i] = (_Float16)(frand() * 5.0f);
    for (int threads = 1; threads <= 2; threads++) {
        cd_gemm_f16(M, N, K, (_Float16)1, A, K, false, B, N, false, (_Float16)0, C, N, threads);
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                volatile _Float16 c = 0;
                for (int k0 = 0; k0 < K; k0 += 256) {
                    volatile _Float16 s = 0;
                    for (int k = k0; k < K && k < k0 + 256; k++) {
                        volatile _Float16 p = A[(size_t)i * K + k] * B[(size_t)k * N + j];
                        s = s + p;
                    }
                    c = k0 == 0 ? s : (_Float16)(c + s);
                }
                _Float16 got = C[(size_t)i * N + j], want = c;
                cr_assert(memcmp(&got, &want, 2) == 0, "threads=%d C[%d][%d] = %.8g, sequential half gives %.8g",
                          threads, i, j, (double)got, (double)want);
            }
    }
    free(A);
    free(B);
    free(C);
}

/* Which micro-kernel runs. On aarch64 it must be the NEON one (the qemu-user run of
 * scripts/cross-aarch64.sh is what proves the NEON path is the one exercised there). */
Test(gemm, kernel_name_is_the_architecture_kernel) {
    const char *k32 = cd_gemm_kernel_name(), *k16 = cd_gemm_kernel_name_f16();
    fprintf(stderr, "[gemm] fp32 micro-kernel: %s, fp16 micro-kernel: %s\n", k32, k16);
    cr_assert_str_eq(k32, cd_gemm_kernel_name_f32());
#if defined(__aarch64__) && defined(__ARM_NEON)
    cr_assert_str_eq(k32, "neon-4x16", "aarch64 build with NEON must run the NEON fp32 kernel, runs %s", k32);
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    cr_assert(!strcmp(k32, "avx512") || !strcmp(k32, "avx2-fma") || !strcmp(k32, "generic"), "%s", k32);
#else
    cr_assert_str_eq(k32, "generic");
#endif
}

/* The FMA kernels (NEON, AVX2-FMA, AVX-512) compute every element the same way: a fused
 * multiply-add per k in order within a K slice (256), alpha * sum, then + C (later slices)
 * or fma(beta, C, sum) (first slice). So their bits are the same on aarch64 and x86-64,
 * equal to this scalar fmaf sequence. The portable kernel on a machine without FMA rounds
 * product and sum separately and is only checked against the tolerance tests above. */
Test(gemm, f32_fma_kernels_give_sequential_fma_bits) {
    const char *kn = cd_gemm_kernel_name();
    if (!strcmp(kn, "generic"))
        cr_skip_test("fp32 kernel is the portable one (%s): no fused multiply-add guarantee", kn);
    struct {
        int M, N, K;
        float alpha, beta;
    } cs[] = {{13, 37, 600, 1.0f, 0.0f},
              {9, 16, 256, 0.3f, 1.7f},
              {5, 50, 300, -2.0f, 0.25f},
              {11, 40, 700, 0.3f, 0.6f},
              {1, 3, 1, 1.0f, 1.0f}};
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        int M = cs[ci].M, N = cs[ci].N, K = cs[ci].K;
        float alpha = cs[ci].alpha, beta = cs[ci].beta;
        float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
        float *C = malloc((size_t)M * N * 4), *C0 = malloc((size_t)M * N * 4);
        for (int i = 0; i < M * K; i++) A[i] = frand() * 1.37f;
        for (int i = 0; i < K * N; i++) B[i] = frand() * 0.71f;
        for (int i = 0; i < M * N; i++) C0[i] = frand();
        for (int threads = 1; threads <= 2; threads++) {
            memcpy(C, C0, (size_t)M * N * 4);
            cd_gemm_f32(M, N, K, alpha, A, K, false, B, N, false, beta, C, N, threads);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    float c = C0[(size_t)i * N + j];
                    for (int k0 = 0; k0 < K; k0 += 256) {
                        float s = 0;
                        for (int k = k0; k < K && k < k0 + 256; k++)
                            s = fmaf(A[(size_t)i * K + k], B[(size_t)k * N + j], s);
                        if (alpha != 1.0f) {
                            volatile float sa = s * alpha;
                            s = sa;
                        } /* rounded, never fused */
                        if (k0 > 0)
                            c = c + s;
                        else
                            c = beta != 0.0f ? fmaf(beta, c, s) : s;
                    }
                    float got = C[(size_t)i * N + j];
                    cr_assert(memcmp(&got, &c, 4) == 0,
                              "%s threads=%d M=%d N=%d K=%d C[%d][%d] = %.9g, fmaf sequence gives %.9g", kn, threads, M,
                              N, K, i, j, (double)got, (double)c);
                }
        }
        free(A);
        free(B);
        free(C);
        free(C0);
    }
}

/* ---- the direct (unpacked) path and the direct short-K convolution ----
 * Small products with a plain B run the direct path; a transposed B always takes the packed
 * path. Both must give the same bits (same fused multiply-adds in the same order, same
 * epilogue), so C from (B, tb = false) must equal C from (B^T, tb = true) exactly, for odd
 * sizes, row/column tails, several K slices, alpha/beta and a transposed A. */
static void direct_vs_packed(int M, int N, int K, bool ta, float alpha, float beta, int threads) {
    int lda = ta ? M : K;
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4), *Bt = malloc((size_t)K * N * 4);
    float *C0 = malloc((size_t)M * N * 4), *C1 = malloc((size_t)M * N * 4), *C2 = malloc((size_t)M * N * 4);
    for (int i = 0; i < M * K; i++) A[i] = frand() * 1.37f;
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) Bt[(size_t)j * K + k] = B[(size_t)k * N + j] = frand() * 0.71f;
    for (int i = 0; i < M * N; i++) C0[i] = frand();
    memcpy(C1, C0, (size_t)M * N * 4);
    memcpy(C2, C0, (size_t)M * N * 4);
    cd_gemm_f32(M, N, K, alpha, A, lda, ta, B, N, false, beta, C1, N, threads); /* direct */
    cd_gemm_f32(M, N, K, alpha, A, lda, ta, Bt, K, true, beta, C2, N, threads); /* packed */
    for (int i = 0; i < M * N; i++)
        cr_assert(memcmp(&C1[i], &C2[i], 4) == 0,
                  "M=%d N=%d K=%d ta=%d alpha=%g beta=%g threads=%d: C[%d] direct %.9g, packed %.9g", M, N, K, ta,
                  alpha, beta, threads, i, (double)C1[i], (double)C2[i]);
    free(A);
    free(B);
    free(Bt);
    free(C0);
    free(C1);
    free(C2);
}

Test(gemm, f32_direct_path_matches_packed_bits) {
    const int ms[] = {1, 3, 4, 5, 8, 13, 50, 200}, ns[] = {1, 2, 15, 16, 17, 50, 64, 65, 100, 192, 288};
    const int ks[] = {1, 2, 8, 27, 200, 256, 257, 600};
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 11; b++) {
            int K = ks[(a + b) % 8];
            direct_vs_packed(ms[a], ns[b], K, (a + b) & 1, 1.0f, 0.0f, 1);
            direct_vs_packed(ms[a], ns[b], K, false, 0.3f, 1.7f, 2);
        }
}

Test(gemm, f32_direct_path_short_k_large_b_matches_packed_bits) {
    /* K <= 512 takes the direct path whatever the size of B (gemm_inst.h DIRECT_FITS): B of
     * 0.5-1 MiB (ppocr_v3_det's 1x1 convs over 160x160 and 80x80 maps, the K = 336 one on
     * 20x20), a partial last column vector, several K slices, 1 and 2 threads */
    const int cs[][3] = {{32, 25600, 8}, {16, 6400, 40}, {56, 400, 336}, {9, 1100, 300}, {5, 2049, 512}};
    for (int c = 0; c < 5; c++) {
        cr_assert((size_t)cs[c][1] * cs[c][2] * 4 > (size_t)512 << 10, "case %d: B fits the old limit", c);
        direct_vs_packed(cs[c][0], cs[c][1], cs[c][2], false, 1.0f, 0.0f, 1);
        direct_vs_packed(cs[c][0], cs[c][1], cs[c][2], false, 1.0f, 0.0f, 2);
    }
}

/* CLDIFF_GEMM_ONE_THREAD_MACS lowers the one-thread threshold of the GEMM and the direct convs
 * (gemm.h; an A/B knob for the 2-thread rows): read once per process (Criterion runs each test in
 * a process of its own), a bad value keeps the constant, and a product under the constant then
 * splits over 2 threads with the 1-thread bits. */
Test(gemm, one_thread_threshold_from_environment) {
    setenv("CLDIFF_GEMM_ONE_THREAD_MACS", "131072", 1);
    cr_assert_eq(cd_gemm_one_thread_macs(), 131072L);
    setenv("CLDIFF_GEMM_ONE_THREAD_MACS", "7", 1);
    cr_assert_eq(cd_gemm_one_thread_macs(), 131072L, "read again after the first call");
    const int M = 24, N = 2304, K = 8; /* ocr_cls's 1x1 conv over 24x96: 442 K MACs */
    cr_assert((double)M * N * K < CD_GEMM_ONE_THREAD_MACS && (double)M * N * K >= 131072.0);
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
    float *C1 = malloc((size_t)M * N * 4), *C2 = malloc((size_t)M * N * 4);
    for (int i = 0; i < M * K; i++) A[i] = frand();
    for (int i = 0; i < K * N; i++) B[i] = frand();
    cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C1, N, 1);
    cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C2, N, 2);
    cr_assert(memcmp(C1, C2, (size_t)M * N * 4) == 0, "1 and 2 threads differ under the lowered threshold");
    free(A);
    free(B);
    free(C1);
    free(C2);
    unsetenv("CLDIFF_GEMM_ONE_THREAD_MACS");
}

Test(gemm, one_thread_threshold_bad_value_keeps_the_constant) {
    setenv("CLDIFF_GEMM_ONE_THREAD_MACS", "12x", 1);
    cr_assert_eq(cd_gemm_one_thread_macs(), (long)CD_GEMM_ONE_THREAD_MACS);
    unsetenv("CLDIFF_GEMM_ONE_THREAD_MACS");
}

Test(gemm, f32_direct_path_threads_bit_identical) {
    /* above the one-thread threshold: the direct path splits columns and, with few column
     * runs, rows over the threads (B at most 512 KiB, so these stay on the direct path) */
    const int cs[][3] = {{200, 192, 64}, {64, 192, 200}, {100, 100, 300}, {2000, 20, 60}, {18, 1000, 120}};
    for (int c = 0; c < 5; c++) {
        int M = cs[c][0], N = cs[c][1], K = cs[c][2];
        cr_assert((double)M * N * K >= CD_GEMM_ONE_THREAD_MACS, "case %d would run on one thread", c);
        float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
        float *C1 = malloc((size_t)M * N * 4), *C2 = malloc((size_t)M * N * 4);
        for (int i = 0; i < M * K; i++) A[i] = frand();
        for (int i = 0; i < K * N; i++) B[i] = frand();
        cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C1, N, 1);
        cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C2, N, 2);
        cr_assert(memcmp(C1, C2, (size_t)M * N * 4) == 0, "M=%d N=%d K=%d: 1 and 2 threads differ", M, N, K);
        direct_vs_packed(M, N, K, false, 1.0f, 0.0f, 2);
        free(A);
        free(B);
        free(C1);
        free(C2);
    }
}

/* cd_conv_direct_f32 against im2col + cd_gemm_f32 (alpha 1, beta 0): identical bits,
 * padding taps included; strides 1, 2, 3, dilation, asymmetric padding, output widths
 * around the vector width, channel counts not a multiple of 4, 1 and 2 threads. */
static void conv_direct_case(int Cout, int Cin, int H, int W, int KH, int KW, int sh, int sw, int dh, int dw, int pt,
                             int pb, int pl, int pr, int threads) {
    int Ho = (H + pt + pb - (dh * (KH - 1) + 1)) / sh + 1, Wo = (W + pl + pr - (dw * (KW - 1) + 1)) / sw + 1;
    int K = Cin * KH * KW, N = Ho * Wo;
    float *x = malloc((size_t)Cin * H * W * 4), *w = malloc((size_t)Cout * K * 4);
    float *col = malloc((size_t)K * N * 4), *y1 = malloc((size_t)Cout * N * 4), *y2 = malloc((size_t)Cout * N * 4);
    for (int i = 0; i < Cin * H * W; i++) x[i] = frand();
    for (int i = 0; i < Cout * K; i++) w[i] = frand() * 0.9f;
    for (int ic = 0; ic < Cin; ic++)
        for (int ky = 0; ky < KH; ky++)
            for (int kx = 0; kx < KW; kx++)
                for (int oy = 0; oy < Ho; oy++)
                    for (int ox = 0; ox < Wo; ox++) {
                        int iy = oy * sh - pt + ky * dh, ix = ox * sw - pl + kx * dw;
                        col[(size_t)((ic * KH + ky) * KW + kx) * N + oy * Wo + ox] =
                            iy >= 0 && iy < H && ix >= 0 && ix < W ? x[((size_t)ic * H + iy) * W + ix] : 0.0f;
                    }
    cd_gemm_f32(Cout, N, K, 1.0f, w, K, false, col, N, false, 0.0f, y1, N, 1);
    cd_conv_direct_geo g = {x, Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pl, Ho, Wo};
    memset(y2, 0xff, (size_t)Cout * N * 4); /* NaN: every output must be written */
    cr_assert(cd_conv_direct_f32(&g, Cout, w, y2, threads));
    for (int i = 0; i < Cout * N; i++)
        cr_assert(memcmp(&y1[i], &y2[i], 4) == 0,
                  "conv %dx%dx%dx%d k%dx%d s%d,%d d%d,%d p%d,%d,%d,%d threads=%d: y[%d] direct %.9g, im2col+gemm %.9g",
                  Cout, Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pb, pl, pr, threads, i, (double)y2[i], (double)y1[i]);
    free(x);
    free(w);
    free(col);
    free(y1);
    free(y2);
}

Test(gemm, f32_conv_direct_matches_im2col_gemm_bits) {
    conv_direct_case(8, 3, 48, 192, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1); /* the classifiers' first conv */
    conv_direct_case(8, 3, 48, 192, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2);
    conv_direct_case(5, 3, 17, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
    conv_direct_case(6, 2, 20, 70, 5, 5, 2, 2, 1, 1, 2, 1, 0, 2, 1);
    conv_direct_case(3, 4, 15, 40, 3, 3, 3, 3, 1, 1, 0, 2, 1, 0, 1);
    conv_direct_case(7, 1, 30, 31, 3, 3, 1, 2, 2, 2, 2, 2, 2, 2, 1);
    conv_direct_case(4, 7, 9, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1); /* K = 63 */
    conv_direct_case(2, 3, 1, 5, 1, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1);  /* one row, Wo < vector */
    conv_direct_case(1, 3, 8, 64, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1);
    cr_assert(24.0 * 27 * 80 * 80 >= CD_GEMM_ONE_THREAD_MACS);
    conv_direct_case(24, 3, 160, 160, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2); /* above the one-thread threshold */
    conv_direct_case(24, 3, 160, 160, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);
    /* long reductions (the direct conv takes any K where cd_conv_direct_fits_f32 says so): the
     * sum in the GEMM's 256-deep K slices, tile edges of 1..4 channels, 1..5 vectors a row */
    conv_direct_case(24, 96, 20, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1); /* K = 864: 4 slices */
    conv_direct_case(7, 40, 11, 80, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2);  /* K = 360, 5 vectors, 2 threads */
    conv_direct_case(5, 30, 20, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);  /* stride 2, K = 270 */
    conv_direct_case(6, 33, 12, 50, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1);  /* dilation 2, K = 297 */
    conv_direct_case(5, 64, 6, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);   /* K = 576, Wo = 33 */
    conv_direct_case(3, 29, 7, 21, 5, 5, 1, 3, 1, 1, 2, 2, 2, 2, 1);   /* stride 3 columns, K = 725 */
    /* stride 2 reads rows split into even and odd padded columns: both parities of the left
     * padding, odd widths (the 32-column steps of the split and its tail), odd dilation (taps
     * in both halves), rows of 1..6 vectors, 1 and 2 threads */
    conv_direct_case(5, 3, 21, 75, 3, 3, 2, 2, 1, 1, 1, 1, 0, 2, 1);  /* pl 0, W odd */
    conv_direct_case(4, 2, 19, 101, 3, 3, 2, 2, 3, 3, 3, 3, 3, 3, 1); /* dilation 3, pl 3 */
    conv_direct_case(6, 3, 13, 63, 4, 4, 2, 2, 1, 1, 2, 1, 2, 1, 1);  /* KW 4, pl 2 */
    conv_direct_case(16, 3, 64, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1); /* keypoint's first conv */
    conv_direct_case(16, 3, 64, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1); /* picodet's */
    conv_direct_case(3, 5, 30, 385, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2); /* 193 columns: 13 vectors, 2 threads */
    conv_direct_case(5, 3, 9, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);    /* one input column */
}

/* ---- cd_conv_ocv_f32 (conv_ocv.h: the vector over output channels, filter packed once) ----
 * against im2col + cd_gemm_f32: identical bits for block counts 1..6 and channel tails (Cout not
 * a multiple of 16), pixel-tile tails, strides 1-3, dilation, asymmetric padding, reductions of
 * 1-4 K slices, 1 and 2 threads; with bias and relu / relu6 / leaky_relu applied in the store,
 * the bits of the conv epilogue's y + b then the activation. test_gemm_avx2 runs it on the
 * AVX2 + FMA tiles. */
static float ocv_act(int kind, float a, float v) {
    switch (kind) {
    case CD_ACT_RELU: return v < 0.0f ? 0.0f : v;
    case CD_ACT_RELU6: return v < 0.0f ? 0.0f : (v > a ? a : v);
    case CD_ACT_LEAKY_RELU: return v < 0.0f ? a * v : v;
    default: return v;
    }
}

static void conv_ocv_case(int Cout, int Cin, int H, int W, int KH, int KW, int sh, int sw, int dh, int dw, int pt,
                          int pb, int pl, int pr, int threads, int act) {
    int Ho = (H + pt + pb - (dh * (KH - 1) + 1)) / sh + 1, Wo = (W + pl + pr - (dw * (KW - 1) + 1)) / sw + 1;
    int K = Cin * KH * KW, N = Ho * Wo;
    float *x = malloc((size_t)Cin * H * W * 4), *w = malloc((size_t)Cout * K * 4), *b = malloc((size_t)Cout * 4);
    float *col = malloc((size_t)K * N * 4), *y1 = malloc((size_t)Cout * N * 4), *y2 = malloc((size_t)Cout * N * 4);
    float *wp = malloc(cd_conv_ocv_packed_floats(Cout, K) * 4);
    for (int i = 0; i < Cin * H * W; i++) x[i] = frand();
    for (int i = 0; i < Cout * K; i++) w[i] = frand() * 0.9f;
    for (int i = 0; i < Cout; i++) b[i] = frand();
    for (int ic = 0; ic < Cin; ic++)
        for (int ky = 0; ky < KH; ky++)
            for (int kx = 0; kx < KW; kx++)
                for (int oy = 0; oy < Ho; oy++)
                    for (int ox = 0; ox < Wo; ox++) {
                        int iy = oy * sh - pt + ky * dh, ix = ox * sw - pl + kx * dw;
                        col[(size_t)((ic * KH + ky) * KW + kx) * N + oy * Wo + ox] =
                            iy >= 0 && iy < H && ix >= 0 && ix < W ? x[((size_t)ic * H + iy) * W + ix] : 0.0f;
                    }
    cd_gemm_f32(Cout, N, K, 1.0f, w, K, false, col, N, false, 0.0f, y1, N, 1);
    const float a = act == CD_ACT_RELU6 ? 0.5f : 0.1f; /* relu6's threshold low enough to clip */
    if (act >= 0)
        for (int oc = 0; oc < Cout; oc++)
            for (int i = 0; i < N; i++) {
                volatile float v = y1[(size_t)oc * N + i] + b[oc]; /* rounded on its own, as the epilogue */
                y1[(size_t)oc * N + i] = ocv_act(act, a, v);
            }
    cd_conv_ocv_pack(w, Cout, K, wp);
    cd_conv_direct_geo g = {x, Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pl, Ho, Wo};
    cd_conv_ocv_epi epi = {b, {.kind = act >= 0 ? (cd_act_kind)act : CD_ACT_NONE, .a = a}};
    memset(y2, 0xff, (size_t)Cout * N * 4); /* NaN: every output must be written */
    cr_assert(cd_conv_ocv_f32(&g, Cout, wp, y2, act >= 0 ? &epi : NULL, threads));
    for (int i = 0; i < Cout * N; i++)
        cr_assert(memcmp(&y1[i], &y2[i], 4) == 0,
                  "ocv conv %dx%dx%dx%d k%dx%d s%d,%d d%d,%d p%d,%d,%d,%d threads=%d act=%d (%s): y[%d] ocv %.9g, "
                  "im2col+gemm %.9g",
                  Cout, Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pb, pl, pr, threads, act, cd_gemm_kernel_name_f32(), i,
                  (double)y2[i], (double)y1[i]);
    free(x);
    free(w);
    free(b);
    free(col);
    free(y1);
    free(y2);
    free(wp);
}

Test(gemm, f32_conv_ocv_matches_im2col_gemm_bits) {
    if (!cd_conv_ocv_level()) {
        cr_skip_test("no AVX2 + FMA or AVX-512 on this machine (or CLDIFF_GEMM_F32_KERNEL=generic): "
                     "conv2d keeps im2col + GEMM");
    }
    conv_ocv_case(32, 16, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, -1); /* yolo's second conv */
    conv_ocv_case(96, 64, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, -1);   /* 6 blocks: 3 + 3, K = 576 */
    conv_ocv_case(64, 64, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1);   /* 4 blocks, Wo = 9 */
    conv_ocv_case(5, 20, 7, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1);   /* one partial block */
    conv_ocv_case(17, 30, 10, 13, 3, 3, 2, 2, 1, 1, 1, 0, 1, 0, 1, -1); /* 16 + 1 channels */
    conv_ocv_case(33, 29, 7, 21, 5, 5, 1, 3, 1, 1, 2, 2, 2, 2, 1, -1);  /* stride 3 columns, K = 725 */
    conv_ocv_case(40, 33, 12, 20, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, -1); /* dilation 2, K = 297 */
    conv_ocv_case(70, 96, 6, 5, 3, 3, 1, 1, 1, 1, 0, 2, 1, 0, 1, -1);   /* 5 blocks, K = 864: 4 slices */
    conv_ocv_case(24, 8, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1);    /* a 1x1 map, all but one tap padding */
    conv_ocv_case(48, 24, 16, 16, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, -1); /* 1x1 stride 2 */
    /* no padding: the input read in place (no padded copy) */
    conv_ocv_case(96, 64, 4, 4, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, CD_ACT_RELU6); /* 1x1 on a 4x4 map */
    conv_ocv_case(20, 8, 6, 7, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, -1);            /* 3x3 valid */
    conv_ocv_case(24, 300, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, -1);          /* K = 300: 2 slices */
    cr_assert(64.0 * 288 * 16 * 16 >= CD_GEMM_ONE_THREAD_MACS);
    conv_ocv_case(64, 32, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2, -1); /* above the one-thread threshold */
    conv_ocv_case(50, 40, 20, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, CD_ACT_LEAKY_RELU);
    /* bias and activation in the store */
    conv_ocv_case(32, 16, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, CD_ACT_NONE);
    conv_ocv_case(33, 20, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, CD_ACT_RELU);
    conv_ocv_case(20, 40, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, CD_ACT_RELU6);      /* K = 360: 2 slices */
    conv_ocv_case(96, 64, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, CD_ACT_LEAKY_RELU); /* K = 576 */
}

/* ---- cd_conv_ocv_dw_f32: depthwise on small maps, vector over channels ----
 * against the plane kernel's arithmetic (the depthwise path of every other map, written here as
 * an fmaf chain; the whole-model dumps show the two kernels' bits equal in the release build):
 * identical bits for channel tails, strides 1-2, dilation 2, 3x3 and 5x5 filters whose tap rows
 * fall wholly in the padding (skipped by both), 1x1 to 8x8 outputs, two images, 1 and 2 threads,
 * and the bias + activation of the store (hard_swish included) against y + b then the
 * activation, computed here. */
static float dw_act(int kind, float v) {
    if (kind == CD_ACT_HARD_SWISH) { /* threshold 6, scale 6, offset 3 */
        float t = v + 3.0f;
        t = t < 0.0f ? 0.0f : (t > 6.0f ? 6.0f : t);
        return v * t / 6.0f;
    }
    return ocv_act(kind, kind == CD_ACT_RELU6 ? 0.5f : 0.1f, v);
}

static void dw_ocv_case(int C, int H, int W, int K, int s, int d, int pt, int pb, int pl, int pr, int N, int threads,
                        int act) {
    int Ho = (H + pt + pb - (d * (K - 1) + 1)) / s + 1, Wo = (W + pl + pr - (d * (K - 1) + 1)) / s + 1;
    size_t nin = (size_t)N * C * H * W, nout = (size_t)N * C * Ho * Wo;
    float *x = malloc(nin * 4), *w = malloc((size_t)C * K * K * 4), *b = malloc((size_t)C * 4);
    float *y1 = malloc(nout * 4), *y2 = malloc(nout * 4);
    for (size_t i = 0; i < nin; i++) x[i] = frand();
    for (int i = 0; i < C * K * K; i++) w[i] = frand() * 0.9f;
    for (int i = 0; i < C; i++) b[i] = frand();
    cd_conv_direct_geo g = {x, C, H, W, K, K, s, s, d, d, pt, pl, Ho, Wo};
    /* the plane kernel's arithmetic as a scalar fmaf chain: its own build contracts acc + w * x
     * into an FMA only when optimized (the sanitizer build is not), fmaf in every build */
    for (int n = 0; n < N; n++)
        for (int ch = 0; ch < C; ch++)
            for (int oy = 0; oy < Ho; oy++)
                for (int ox = 0; ox < Wo; ox++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < K; ky++) {
                        const int iy = oy * s - pt + ky * d;
                        if (iy < 0 || iy >= H) continue; /* a tap row wholly in the padding: skipped */
                        for (int kx = 0; kx < K; kx++) {
                            const int ix = ox * s - pl + kx * d;
                            const float xv = ix >= 0 && ix < W ? x[(((size_t)n * C + ch) * H + iy) * W + ix] : 0.0f;
                            acc = fmaf(w[(size_t)ch * K * K + ky * K + kx], xv, acc);
                        }
                    }
                    y1[(((size_t)n * C + ch) * Ho + oy) * Wo + ox] = acc;
                }
    if (act >= 0)
        for (size_t i = 0; i < nout; i++) {
            volatile float v = y1[i] + b[i / ((size_t)Ho * Wo) % C];
            y1[i] = dw_act(act, v);
        }
    cd_conv_ocv_epi epi = {b, {.kind = act >= 0 ? (cd_act_kind)act : CD_ACT_NONE}};
    epi.act.a = act == CD_ACT_HARD_SWISH ? 6.0f : act == CD_ACT_RELU6 ? 0.5f : 0.1f;
    epi.act.b = 6.0f;
    epi.act.c = 3.0f;
    memset(y2, 0xff, nout * 4); /* NaN: every output must be written */
    cr_assert(cd_conv_ocv_dw_f32(&g, N, w, y2, act >= 0 ? &epi : NULL, threads));
    for (size_t i = 0; i < nout; i++)
        cr_assert(memcmp(&y1[i], &y2[i], 4) == 0,
                  "dw C%d %dx%d k%d s%d d%d p%d,%d,%d,%d N%d threads=%d act=%d (%s): y[%zu] ocv %.9g, plane %.9g", C, H,
                  W, K, s, d, pt, pb, pl, pr, N, threads, act, cd_gemm_kernel_name_f32(), i, (double)y2[i],
                  (double)y1[i]);
    free(x);
    free(w);
    free(b);
    free(y1);
    free(y2);
}

Test(gemm, f32_depthwise_ocv_matches_fma_chain_bits) {
    if (!cd_conv_ocv_level()) {
        cr_skip_test("no AVX2 + FMA or AVX-512 on this machine (or CLDIFF_GEMM_F32_KERNEL=generic): "
                     "depthwise keeps the plane kernel");
    }
    dw_ocv_case(96, 8, 8, 3, 1, 1, 1, 1, 1, 1, 1, 1, -1);   /* mobilenet_v2's 8x8 layers */
    dw_ocv_case(72, 16, 16, 3, 2, 1, 1, 1, 1, 1, 1, 1, -1); /* stride 2 to 8x8 */
    dw_ocv_case(5, 4, 4, 3, 1, 1, 1, 1, 1, 1, 1, 1, -1);    /* one partial block */
    dw_ocv_case(33, 4, 4, 3, 2, 1, 1, 1, 1, 1, 2, 1, -1);   /* 2x2 out, two images, 16 + 16 + 1 */
    dw_ocv_case(20, 2, 3, 5, 1, 1, 2, 2, 2, 2, 1, 1, -1);   /* 5x5 on 2 rows: 3 of 5 tap rows padding */
    dw_ocv_case(24, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1, -1);   /* 1x1 map */
    dw_ocv_case(40, 9, 7, 3, 1, 2, 2, 2, 2, 2, 1, 1, -1);   /* dilation 2 */
    dw_ocv_case(48, 7, 7, 5, 2, 1, 2, 1, 2, 1, 1, 1, -1);   /* asymmetric padding, 5x5 stride 2 */
    dw_ocv_case(64, 8, 8, 3, 1, 1, 1, 1, 1, 1, 2, 2, -1);   /* 2 threads */
    dw_ocv_case(96, 8, 8, 3, 1, 1, 1, 1, 1, 1, 1, 1, CD_ACT_RELU6);
    dw_ocv_case(21, 6, 6, 3, 1, 1, 1, 1, 1, 1, 1, 2, CD_ACT_HARD_SWISH);
    dw_ocv_case(17, 5, 5, 3, 1, 1, 1, 1, 1, 1, 1, 1, CD_ACT_RELU);
    dw_ocv_case(16, 8, 8, 3, 1, 1, 1, 1, 1, 1, 1, 1, CD_ACT_LEAKY_RELU);
    dw_ocv_case(32, 8, 8, 3, 1, 1, 1, 1, 1, 1, 1, 1, CD_ACT_NONE);
}

/* ---- the one-column path (N = 1 with a k-major A: conv's transposed filter for 1x1 maps) ----
 * against the packed path, fed the same column through a packing callback: identical bits for
 * row tails (M not a multiple of 16, M < 16), several K slices, alpha/beta and 2 threads. */
static const float *g_col; /* the column the packer hands out */
static void pack_col(const void *ctx, int k0, int kc, int n0, int nc, void *dstv) {
    float *dst = dstv;
    (void)ctx;
    (void)n0;
    for (int k = 0; k < kc; k++)
        for (int j = 0; j < CD_GEMM_NR; j++) dst[(size_t)k * CD_GEMM_NR + j] = j < nc ? g_col[k0 + k] : 0.0f;
}

static void column_vs_packed(int M, int K, float alpha, float beta, int threads) {
    float *At = malloc((size_t)M * K * 4), *b = malloc((size_t)K * 4), *C0 = malloc((size_t)M * 4);
    float *C1 = malloc((size_t)M * 4), *C2 = malloc((size_t)M * 4);
    for (int i = 0; i < M * K; i++) At[i] = frand() * 1.37f;
    for (int k = 0; k < K; k++) b[k] = frand() * 0.71f;
    for (int i = 0; i < M; i++) C0[i] = frand();
    memcpy(C1, C0, (size_t)M * 4);
    memcpy(C2, C0, (size_t)M * 4);
    cd_gemm_f32(M, 1, K, alpha, At, M, true, b, 1, false, beta, C1, 1, threads); /* one-column path */
    g_col = b;
    cd_gemm_f32_packed_b(M, 1, K, alpha, At, M, true, pack_col, NULL, beta, C2, 1, threads);
    for (int i = 0; i < M; i++)
        cr_assert(memcmp(&C1[i], &C2[i], 4) == 0,
                  "M=%d K=%d alpha=%g beta=%g threads=%d: C[%d] column %.9g, packed %.9g", M, K, alpha, beta, threads,
                  i, (double)C1[i], (double)C2[i]);
    free(At);
    free(b);
    free(C0);
    free(C1);
    free(C2);
}

Test(gemm, f32_one_column_path_matches_packed_bits) {
    const int ms[] = {1, 2, 5, 15, 16, 17, 50, 63, 64, 65, 200, 1000}, ks[] = {1, 7, 50, 200, 256, 257, 600};
    for (int a = 0; a < 12; a++)
        for (int b = 0; b < 7; b++) {
            column_vs_packed(ms[a], ks[b], 1.0f, 0.0f, 1);
            column_vs_packed(ms[a], ks[b], 0.3f, 1.7f, 2);
        }
    column_vs_packed(2000, 1100, 1.0f, 0.0f, 2); /* above the one-thread threshold: row blocks split */
}

/* ---- fp16 micro-kernel levels: each one's bits against the portable kernel's ----
 * Every level this machine has (AVX512-FP16, AVX-512 + F16C, AVX2 + F16C) is forced in turn
 * (CLDIFF_GEMM_F16_KERNEL) and its C compared byte for byte with the "generic" level's on
 * the same inputs: odd and tile-edge M/N, K across the KC slices up to 4608, transposes,
 * alpha/beta, 1 and 2 threads, and values that round in every step, overflow to inf,
 * underflow into subnormals, and NaN / inf entries (random bit patterns, payloads included). */
static uint16_t hbits(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (uint16_t)(g_rng >> 16);
}

/* One matrix entry for value class `cls`: 0 ordinary (random 11-bit significands, so products
 * and sums round), 1 tiny (products and sums in the subnormal range), 2 large (sums overflow to
 * inf), 3 ordinary with 1 in 64 entries a random bit pattern (NaN, inf, subnormal...),
 * 4 random bit patterns only. */
static _Float16 hval(int cls) {
    uint16_t r = hbits();
    _Float16 v;
    switch (cls) {
    case 1: v = (_Float16)((float)(int16_t)r * 0x1p-22f); break; /* |v| < 2^-7: products ~2^-14..2^-24 */
    case 2: v = (_Float16)((float)(int16_t)r * 0x1p-7f); break;  /* |v| < 256 */
    case 3:
        if ((r & 63) == 0) {
            uint16_t b = hbits();
            memcpy(&v, &b, 2);
            break;
        }
        /* fall through */
    case 0: v = (_Float16)((float)(int16_t)r * 0x1p-13f); break; /* |v| < 4, full significands */
    default: memcpy(&v, &r, 2); break;
    }
    return v;
}

/* Forces the fp16 micro-kernel level (NULL: none); true when that level is the one now picked. */
static bool force_f16(const char *level) {
    if (!level) {
        unsetenv("CLDIFF_GEMM_F16_KERNEL");
        return true;
    }
    setenv("CLDIFF_GEMM_F16_KERNEL", level, 1);
    return !strcmp(cd_gemm_kernel_name_f16(), level);
}

static int f16_level_case(const char *level, int M, int N, int K, bool ta, bool tb, float alpha, float beta, int cls,
                          int threads) {
    int lda = ta ? M : K, ldb = tb ? K : N, ldc = N + 3;
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * ldc;
    _Float16 *A = malloc(na * 2), *B = malloc(nb * 2), *C0 = malloc(nc * 2), *C1 = malloc(nc * 2), *C2 = malloc(nc * 2);
    for (size_t i = 0; i < na; i++) A[i] = hval(cls);
    for (size_t i = 0; i < nb; i++) B[i] = hval(cls);
    for (size_t i = 0; i < nc; i++) C0[i] = hval(cls == 4 ? 3 : cls);
    memcpy(C1, C0, nc * 2);
    memcpy(C2, C0, nc * 2);
    cr_assert(force_f16("generic"));
    cd_gemm_f16(M, N, K, (_Float16)alpha, A, lda, ta, B, ldb, tb, (_Float16)beta, C1, ldc, threads);
    cr_assert(force_f16(level));
    cd_gemm_f16(M, N, K, (_Float16)alpha, A, lda, ta, B, ldb, tb, (_Float16)beta, C2, ldc, threads);
    force_f16(NULL);
    int special = 0;
    for (size_t i = 0; i < nc; i++) {
        uint16_t g, l;
        memcpy(&g, &C1[i], 2);
        memcpy(&l, &C2[i], 2);
        /* A NaN is a NaN: which operand's payload (and sign) an addition of two NaNs keeps is
         * the compiler's instruction order, not the arithmetic (the sanitizer build's generic
         * kernel kept the other one); every other value must match bit for bit. */
        bool g_nan = (g & 0x7c00) == 0x7c00 && (g & 0x3ff), l_nan = (l & 0x7c00) == 0x7c00 && (l & 0x3ff);
        if (g_nan && l_nan) l = g;
        cr_expect_eq(g, l,
                     "%s vs generic, M=%d N=%d K=%d ta=%d tb=%d alpha=%g beta=%g class %d threads %d: "
                     "C[%zu][%zu] = 0x%04x, generic 0x%04x",
                     level, M, N, K, ta, tb, alpha, beta, cls, threads, i / (size_t)ldc, i % (size_t)ldc, l, g);
        if ((g & 0x7c00) == 0x7c00 || ((g & 0x7c00) == 0 && (g & 0x3ff))) special++;
    }
    free(A);
    free(B);
    free(C0);
    free(C1);
    free(C2);
    return special;
}

Test(gemm, f16_levels_give_the_generic_bits) {
    static const char *levels[] = {"avx512fp16", "avx512f-f16c", "avx2-f16c"};
    const char *best = cd_gemm_kernel_name_f16();
    cr_assert(!force_f16("no-such-level"));
    cr_assert_str_eq(cd_gemm_kernel_name_f16(), best, "an unknown level falls back to the best one");
    cr_assert(force_f16("generic"));
    force_f16(NULL);
    static const int ms[] = {1, 3, 7, 8, 9, 17, 33}, ns[] = {1, 5, 15, 16, 17, 31, 33, 70};
    static const int ks[] = {1, 2, 7, 255, 256, 257, 600, 1000, 2304, 4608};
    int tested = 0;
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        bool have = force_f16(levels[l]);
        force_f16(NULL);
        if (!have) {
            fprintf(stderr, "[gemm] fp16 level %s: not on this machine\n", levels[l]);
            continue;
        }
        int cases = 0, special = 0;
        for (int a = 0; a < 7; a++)
            for (int b = 0; b < 8; b++)
                for (int c = 0; c < 10; c++) {
                    if ((a * 8 + b * 3 + c) % 4 != 0 && c < 8) continue; /* a quarter of the small-K cross */
                    int v = a + b + c, M = ms[a], N = ns[b], K = ks[c];
                    float alpha = v % 3 == 0 ? 1.0f : v % 3 == 1 ? 0.3f : -1.75f;
                    float beta = v % 4 == 0 ? 0.0f : v % 4 == 1 ? 1.0f : v % 4 == 2 ? 0.6f : -2.5f;
                    special += f16_level_case(levels[l], M, N, K, v & 1, (v >> 1) & 1, alpha, beta, v % 5, 1 + (v & 1));
                    cases++;
                }
        /* deep and wide: several column chunks and K slices on two threads */
        special += f16_level_case(levels[l], 67, 300, 4608, false, false, 1.0f, 0.0f, 0, 2);
        special += f16_level_case(levels[l], 40, 513, 2304, true, false, 0.3f, 1.0f, 3, 2);
        cases += 2;
        fprintf(stderr, "[gemm] fp16 level %s: %d cases bit-identical to generic (%d inf/nan/subnormal outputs)\n",
                levels[l], cases, special);
        cr_assert_gt(special, 0, "the cases never produced a special value");
        tested++;
    }
    if (!tested) fprintf(stderr, "[gemm] no fp16 level but generic on this machine\n");
}

/* ---- the conv epilogue in the store (gemm.h cd_gemm_epi) ----
 * cd_conv_direct_epi_f32 and cd_gemm_f32_epi against the plain sums followed by the conv
 * epilogue written out per element (y + b rounded on its own, then the activation as
 * ops_nn_conv_tmpl.h's epilogue computes it): identical bits for every kind, with and without
 * a bias, reductions of 1-4 K slices, row and column tails (blocks of 1-4 channels, partial
 * vectors of columns), NaN, Inf and -0 among the inputs, 1 and 2 threads, at every fp32 level
 * (AVX-512, AVX2 + FMA, portable); a product too large for the direct path is left plain. */
static float epi_ref(const cd_gemm_epi *e, float y, int row) {
    volatile float v = y;
    if (e->bias) v = v + e->bias[row];
    const float x = v;
    switch (e->act) {
    case CD_GEMM_EPI_RELU: return x < 0.0f ? 0.0f : x;
    case CD_GEMM_EPI_RELU6: return x < 0.0f ? 0.0f : (x > e->a ? e->a : x);
    case CD_GEMM_EPI_LEAKY_RELU: return x < 0.0f ? e->a * x : x;
    case CD_GEMM_EPI_HARD_SWISH: {
        volatile float t = x + e->c;
        const float tc = t < 0.0f ? 0.0f : (t > e->a ? e->a : t);
        volatile float p = x * tc;
        return p / e->b;
    }
    default: return x;
    }
}

static void epi_fill(float *v, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) v[i] = frand() * scale;
    if (n > 40) { /* special values: a NaN, infinities, a -0 */
        v[7] = NAN;
        v[19] = INFINITY;
        v[31] = -INFINITY;
        v[37] = -0.0f;
    }
}

static const cd_gemm_epi *epi_kind(int k, const float *bias, cd_gemm_epi *e) {
    static const float as[] = {0, 0, 0.5f, 0.1f, 6.0f}; /* relu6 low enough to clip; hard_swish 6, 6, 3 */
    *e = (cd_gemm_epi){bias, k, as[k], 6.0f, 3.0f};
    return e;
}

static void epi_direct_conv_case(int Cout, int Cin, int H, int W, int KH, int KW, int s, int p, int threads) {
    const int Ho = (H + 2 * p - KH) / s + 1, Wo = (W + 2 * p - KW) / s + 1, K = Cin * KH * KW, N = Ho * Wo;
    float *x = malloc((size_t)Cin * H * W * 4), *w = malloc((size_t)Cout * K * 4), *b = malloc((size_t)Cout * 4);
    float *y1 = malloc((size_t)Cout * N * 4), *y2 = malloc((size_t)Cout * N * 4);
    epi_fill(x, (size_t)Cin * H * W, 1.0f);
    epi_fill(w, (size_t)Cout * K, 0.3f);
    for (int i = 0; i < Cout; i++) b[i] = frand();
    b[0] = -0.0f;
    const cd_conv_direct_geo g = {x, Cin, H, W, KH, KW, s, s, 1, 1, p, p, Ho, Wo};
    cr_assert(cd_conv_direct_f32(&g, Cout, w, y1, threads));
    for (int k = CD_GEMM_EPI_NONE; k <= CD_GEMM_EPI_HARD_SWISH; k++)
        for (int hb = 0; hb < 2; hb++) {
            cd_gemm_epi e;
            epi_kind(k, hb ? b : NULL, &e);
            memset(y2, 0xff, (size_t)Cout * N * 4);
            cr_assert(cd_conv_direct_epi_f32(&g, Cout, w, y2, &e, threads));
            for (int oc = 0; oc < Cout; oc++)
                for (int i = 0; i < N; i++) {
                    const float r = epi_ref(&e, y1[(size_t)oc * N + i], oc), v = y2[(size_t)oc * N + i];
                    cr_assert(memcmp(&r, &v, 4) == 0,
                              "direct conv %dx%dx%dx%d k%d s%d K=%d threads=%d act=%d bias=%d (%s): y[%d][%d] fused "
                              "%.9g, sums + epilogue %.9g",
                              Cout, Cin, H, W, KH, s, K, threads, k, hb, cd_gemm_kernel_name_f32(), oc, i, (double)v,
                              (double)r);
                }
        }
    free(x);
    free(w);
    free(b);
    free(y1);
    free(y2);
}

static void epi_gemm_case(int M, int N, int K, int threads, bool direct) {
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4), *b = malloc((size_t)M * 4);
    float *C1 = malloc((size_t)M * N * 4), *C2 = malloc((size_t)M * N * 4);
    epi_fill(A, (size_t)M * K, 0.5f);
    epi_fill(B, (size_t)K * N, 1.0f);
    for (int i = 0; i < M; i++) b[i] = frand();
    cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C1, N, threads);
    for (int k = CD_GEMM_EPI_NONE; k <= CD_GEMM_EPI_HARD_SWISH; k++)
        for (int hb = 0; hb < 2; hb++) {
            cd_gemm_epi e;
            epi_kind(k, hb ? b : NULL, &e);
            memset(C2, 0xff, (size_t)M * N * 4);
            const bool fused = cd_gemm_f32_epi(M, N, K, A, K, B, N, C2, N, &e, threads);
            /* where the NEON micro-kernel replaces the generic one there is no direct path
             * (gemm_direct_tmpl.h G_PICK_VARIANT): the plain product is stored, never fused */
            const bool expect = direct && strncmp(cd_gemm_kernel_name_f32(), "neon", 4) != 0;
            cr_assert(fused == expect, "M=%d N=%d K=%d (%s): fused %d, expected %d", M, N, K, cd_gemm_kernel_name_f32(),
                      fused, expect);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    const float c = C1[(size_t)i * N + j], r = fused ? epi_ref(&e, c, i) : c, v = C2[(size_t)i * N + j];
                    cr_assert(memcmp(&r, &v, 4) == 0,
                              "gemm M=%d N=%d K=%d threads=%d act=%d bias=%d (%s): C[%d][%d] fused %.9g, expected "
                              "%.9g",
                              M, N, K, threads, k, hb, cd_gemm_kernel_name_f32(), i, j, (double)v, (double)r);
                }
        }
    free(A);
    free(B);
    free(b);
    free(C1);
    free(C2);
}

static void epi_all_cases(void) {
    epi_direct_conv_case(24, 3, 34, 70, 3, 3, 2, 1, 1); /* K = 27: the first layer */
    epi_direct_conv_case(7, 40, 9, 80, 3, 3, 1, 1, 1);  /* K = 360: 2 slices, 5 vectors a row */
    epi_direct_conv_case(6, 100, 6, 33, 3, 3, 1, 1, 2); /* K = 900: 4 slices, 2 threads */
    epi_direct_conv_case(5, 4, 10, 40, 3, 3, 1, 1, 2);  /* 2 threads, channel tail */
    epi_gemm_case(24, 1024, 16, 1, true);               /* picodet's 1x1 convs on 32x32 */
    epi_gemm_case(13, 70, 300, 1, true);                /* 2 slices, row and shifted column tails */
    epi_gemm_case(5, 9, 600, 1, true);                  /* a row shorter than a vector: zero-padded */
    epi_gemm_case(64, 1200, 96, 2, true);               /* 2 threads, above the one-thread threshold */
    epi_gemm_case(40, 6400, 72, 1, false);              /* above the direct path: the plain product */
}

/* CLDIFF_GEMM_F32_KERNEL is read once per process (not at every kernel call): a change of the
 * environment shows only after cd_gemm_f32_level_reload() */
Test(gemm, f32_level_read_once_per_process) {
#ifndef __x86_64__
    cr_skip_test("CLDIFF_GEMM_F32_KERNEL caps the x86-64 levels only (aarch64 has its one NEON level)");
#endif
    char first[32];
    snprintf(first, sizeof first, "%s", cd_gemm_kernel_name_f32());
    setenv("CLDIFF_GEMM_F32_KERNEL", "generic", 1);
    cr_assert_str_eq(cd_gemm_kernel_name_f32(), first, "the level changed without a reload");
    cd_gemm_f32_level_reload();
    cr_assert_str_eq(cd_gemm_kernel_name_f32(), "generic");
    unsetenv("CLDIFF_GEMM_F32_KERNEL");
    cd_gemm_f32_level_reload();
}

Test(gemm, f32_epilogue_in_store_matches_sums_then_epilogue_bits) {
    epi_all_cases(); /* the level of this machine (test_gemm_avx2: AVX2 + FMA) */
#ifndef __x86_64__
    return; /* the level cap below is x86-64's (aarch64: the NEON level alone) */
#endif
    setenv("CLDIFF_GEMM_F32_KERNEL", "generic", 1);
    cd_gemm_f32_level_reload(); /* the level is read once per process */
    cr_assert_str_eq(cd_gemm_kernel_name_f32(), "generic");
    epi_all_cases();
    unsetenv("CLDIFF_GEMM_F32_KERNEL");
    cd_gemm_f32_level_reload();
}

/* matmul_v2 with X [B, M, K] and one 2-D Y [K, N] (ops_nn_matmul_tmpl.h): the batches run as one
 * product of B x M rows. Each output must have the bits of its own batch's product (the
 * per-batch GEMM calls run before): per element the same dot product over K in the same
 * order, whichever GEMM path the stacked product's size picks (direct or packed, one or two
 * threads, K over one KC slice). Fails if the stacked call's sums ran in another order. */
static void mm_stack_case(int B, int M, int K, int N, int threads) {
    cd_mm_geo g;
    memset(&g, 0, sizeof g);
    g.M = M, g.K = K, g.N = N, g.alpha = 1.0f, g.brank = 1, g.bdims[0] = B, g.xb[0] = B, g.yb[0] = 1, g.batches = B;
    float *X = malloc((size_t)B * M * K * 4), *Y = malloc((size_t)K * N * 4);
    float *C0 = malloc((size_t)B * M * N * 4), *C1 = malloc((size_t)B * M * N * 4);
    for (size_t i = 0; i < (size_t)B * M * K; i++) X[i] = frand() * 1.37f;
    for (int i = 0; i < K * N; i++) Y[i] = frand() * 0.71f;
    for (int b = 0; b < B; b++)
        cd_gemm_f32(M, N, K, 1.0f, X + (size_t)b * M * K, K, false, Y, N, false, 0.0f, C0 + (size_t)b * M * N, N, 1);
    cd_nn_matmul_sums_f32(&g, X, Y, C1, threads);
    for (size_t i = 0; i < (size_t)B * M * N; i++)
        cr_assert(memcmp(&C0[i], &C1[i], 4) == 0,
                  "B=%d M=%d K=%d N=%d threads=%d: out[%zu] per batch %.9g, stacked %.9g", B, M, K, N, threads, i,
                  (double)C0[i], (double)C1[i]);
    free(X);
    free(Y);
    free(C0);
    free(C1);
}

Test(gemm, matmul_shared_y_batches_stacked_bits) {
    mm_stack_case(64, 4, 8, 1, 1); /* picodet's [1,64,4,8] x [8,1] */
    mm_stack_case(64, 4, 8, 1, 2);
    mm_stack_case(7, 3, 300, 17, 1);    /* K over one KC slice, partial row tiles */
    mm_stack_case(1024, 4, 300, 64, 2); /* 77k MACs a batch (direct), 79M stacked (packed) */
    mm_stack_case(3, 5, 600, 256, 2);   /* B over the direct path's 512 KiB: packed both ways */
}

/* conv2d_transpose (ops_nn_conv_tmpl.h) computes its columns as X^T x W ([pixel][(oc, ky, kx)])
 * instead of W^T x X ([(oc, ky, kx)][pixel]) and relies on each element having the same bits
 * both ways: the same products (a * b = b * a) summed over K in the same order and KC slices,
 * whichever path each shape picks. Shapes: keypoint's two deconvs (512 x 12 x 64, 512 x 48 x
 * 32), K over a KC slice, one-pixel and one-row cases (the one-column path), two threads. */
static void swap_case(int R, int P, int K, int threads) {
    float *W = malloc((size_t)K * R * 4), *X = malloc((size_t)K * P * 4);
    float *C0 = malloc((size_t)R * P * 4), *C1 = malloc((size_t)R * P * 4);
    for (int i = 0; i < K * R; i++) W[i] = frand() * 1.37f;
    for (int i = 0; i < K * P; i++) X[i] = frand() * 0.71f;
    cd_gemm_f32(R, P, K, 1.0f, W, R, true, X, P, false, 0.0f, C0, P, threads); /* [R x P] */
    cd_gemm_f32(P, R, K, 1.0f, X, P, true, W, R, false, 0.0f, C1, R, threads); /* [P x R] */
    for (int r = 0; r < R; r++)
        for (int p = 0; p < P; p++)
            cr_assert(memcmp(&C0[(size_t)r * P + p], &C1[(size_t)p * R + r], 4) == 0,
                      "R=%d P=%d K=%d threads=%d: [%d][%d] W^T X %.9g, (X^T W)^T %.9g", R, P, K, threads, r, p,
                      (double)C0[(size_t)r * P + p], (double)C1[(size_t)p * R + r]);
    free(W);
    free(X);
    free(C0);
    free(C1);
}

Test(gemm, f32_transposed_roles_same_bits) {
    swap_case(512, 12, 64, 1);
    swap_case(512, 48, 32, 1);
    swap_case(512, 48, 32, 2);
    swap_case(300, 37, 300, 1);
    swap_case(64, 1, 40, 1);
    swap_case(1, 64, 40, 1);
    swap_case(2048, 400, 96, 2);
}
