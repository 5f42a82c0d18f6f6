/* GEMM throughput: gemm_bench [threads] [M N K]...; prints GFLOP/s (2*M*N*K / time) for
 * float32 and _Float16. Defaults are conv-shaped problems (Cout x HW x Cin*k*k). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "backends/cpu/gemm.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void bench(int M, int N, int K, int threads) {
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4), *C = malloc((size_t)M * N * 4);
    _Float16 *Ah = malloc((size_t)M * K * 2), *Bh = malloc((size_t)K * N * 2), *Ch = malloc((size_t)M * N * 2);
    if (!A || !B || !C || !Ah || !Bh || !Ch) { fprintf(stderr, "out of memory\n"); exit(7); }
    for (size_t i = 0; i < (size_t)M * K; i++) Ah[i] = (_Float16)(A[i] = (float)(i % 7) * 0.1f);
    for (size_t i = 0; i < (size_t)K * N; i++) Bh[i] = (_Float16)(B[i] = (float)(i % 5) * 0.1f);
    double flop = 2.0 * M * N * K, t0, best32 = 1e9, best16 = 1e9;
    for (int r = 0; r < 5; r++) {
        t0 = now();
        cd_gemm_f32(M, N, K, 1.0f, A, K, false, B, N, false, 0.0f, C, N, threads);
        double t = now() - t0;
        if (t < best32) best32 = t;
    }
    for (int r = 0; r < 2; r++) {
        t0 = now();
        cd_gemm_f16(M, N, K, 1, Ah, K, false, Bh, N, false, 0, Ch, N, threads);
        double t = now() - t0;
        if (t < best16) best16 = t;
    }
    printf("M=%5d N=%6d K=%5d threads=%d  f32 %7.2f GFLOP/s  f16 %7.2f GFLOP/s\n", M, N, K, threads,
           flop / best32 * 1e-9, flop / best16 * 1e-9);
    free(A); free(B); free(C); free(Ah); free(Bh); free(Ch);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 4) {
        for (int i = 2; i + 2 < argc; i += 3) bench(atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2]), threads);
        return 0;
    }
    int d[][3] = {{16, 25600, 27}, {64, 6400, 576}, {128, 1600, 1152}, {256, 400, 256}, {512, 100, 4608}, {1, 1000, 1280}};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) bench(d[i][0], d[i][1], d[i][2], threads);
    return 0;
}
