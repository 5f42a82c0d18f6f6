/* GEMM and conv-layer throughput.
 *   gemm_bench [threads] [M N K]...        GFLOP/s (2*M*N*K / time), float32 and _Float16;
 *                                          defaults are conv-shaped problems
 *   gemm_bench --model F.nb [--shape 1,3,320,320] [--threads 2] [--fp16] [--reps 5]
 *                                          runs every conv op of the model `reps` times on
 *                                          synthetic inputs through the op registry and
 *                                          reports conv GFLOP/s (2 * macs / median time),
 *                                          per op and total (sum of the medians) */
#include "engine/plan.h"
#include "model/nb_reader.h"
#include <string.h>
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
    if (!A || !B || !C || !Ah || !Bh || !Ch) {
        fprintf(stderr, "out of memory\n");
        exit(7);
    }
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
    free(A);
    free(B);
    free(C);
    free(Ah);
    free(Bh);
    free(Ch);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_model(const char *path, const char *shape, int threads, bool fp16, int reps) {
    cd_error err = {0};
    cd_graph *g = NULL;
    if (cd_nb_load(path, &g, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return err.code;
    }
    cd_shape in[8];
    if (g->n_inputs > 8) {
        fprintf(stderr, "too many inputs\n");
        return 2;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        in[i] = g->tensors[g->inputs[i]].shape;
        if (in[i].rank > 0 && in[i].d[0] < 0) in[i].d[0] = 1;
    }
    if (shape && g->n_inputs > 0) {
        cd_shape s = {0, {0}};
        for (const char *p = shape; *p && s.rank < CD_MAX_RANK; s.rank++) {
            s.d[s.rank] = strtoll(p, (char **)&p, 10);
            if (*p == ',') p++;
        }
        in[0] = s;
    }
    cd_plan plan;
    memset(&plan, 0, sizeof plan);
    if (cd_plan_build(g, in, fp16 ? CD_PREC_FP16 : CD_PREC_FP32, &plan, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return err.code;
    }
    cd_value *vals = calloc((size_t)g->n_tensors, sizeof *vals);
    double total_macs = 0, total_t = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (!strstr(op->type, "conv") || !plan.defs[i] || !plan.defs[i]->run) continue;
        memcpy(vals, plan.meta, (size_t)g->n_tensors * sizeof *vals);
        for (int t = 0; t < g->n_tensors; t++) vals[t].owned = false;
        /* activations get fresh buffers with small values; params keep their data */
        int ids[64], n = 0;
        for (int s = 0; s < op->n_in; s++)
            for (int k = 0; k < op->in[s].n; k++) {
                int id = op->in[s].ids[k];
                if (id >= 0 && !vals[id].data && n < 64) ids[n++] = id;
            }
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++)
                if (op->out[s].ids[k] >= 0 && n < 64) ids[n++] = op->out[s].ids[k];
        bool ok = true;
        for (int k = 0; k < n; k++) {
            vals[ids[k]].data = NULL;
            if (cd_value_alloc(&vals[ids[k]], &err)) {
                ok = false;
                break;
            }
            for (int64_t e = 0; e < cd_value_numel(&vals[ids[k]]); e++)
                cd_value_set(&vals[ids[k]], e, (double)(e % 13) * 0.05 - 0.3);
        }
        if (!ok) {
            fprintf(stderr, "%s\n", err.msg);
            return err.code;
        }
        cd_op_ctx c = {.g = g,
                       .op = op,
                       .op_index = i,
                       .vals = vals,
                       .prec = fp16 ? CD_PREC_FP16 : CD_PREC_FP32,
                       .threads = threads,
                       .err = &err};
        double macs = plan.defs[i]->macs ? plan.defs[i]->macs(&c) : 0;
        /* median of `reps` runs: the machine is shared, single runs are noisy */
        double ts[64];
        cd_status st = CD_OK;
        for (int r = 0; r < reps && !st; r++) {
            double t0 = now();
            st = plan.defs[i]->run(&c);
            ts[r] = now() - t0;
        }
        if (st) {
            fprintf(stderr, "%s\n", err.msg);
            return st;
        }
        qsort(ts, (size_t)reps, sizeof ts[0], cmp_double);
        double t = ts[reps / 2];
        total_macs += macs;
        total_t += t;
        char b1[64], b2[64];
        int xin = cd_op_in(op, "Input", 0), yo = cd_op_out(op, "Output", 0);
        printf("%-28s %-18s -> %-18s %8.2f MMAC %8.3f ms %7.2f GFLOP/s\n", op->name,
               xin >= 0 ? cd_shape_str(&vals[xin].shape, b1, sizeof b1) : "?",
               yo >= 0 ? cd_shape_str(&vals[yo].shape, b2, sizeof b2) : "?", macs * 1e-6, t * 1e3, 2 * macs / t * 1e-9);
        for (int k = 0; k < n; k++) {
            vals[ids[k]].owned = true;
            cd_value_release(&vals[ids[k]]);
        }
    }
    printf("conv total: %.1f MMAC in %.1f ms = %.2f GFLOP/s (%d threads, %s, median of %d)\n", total_macs * 1e-6,
           total_t * 1e3, 2 * total_macs / total_t * 1e-9, threads, fp16 ? "fp16" : "fp32", reps);
    free(vals);
    cd_plan_free(&plan);
    cd_graph_free(g);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "--model")) {
        const char *shape = NULL;
        int threads = 2, reps = 5;
        bool fp16 = false;
        for (int i = 3; i < argc; i++) {
            if (!strcmp(argv[i], "--shape") && i + 1 < argc)
                shape = argv[++i];
            else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
                threads = atoi(argv[++i]);
            else if (!strcmp(argv[i], "--fp16"))
                fp16 = true;
            else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
                reps = atoi(argv[++i]);
        }
        if (reps < 1) reps = 1;
        if (reps > 64) reps = 64;
        return bench_model(argv[2], shape, threads, fp16, reps);
    }
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 4) {
        for (int i = 2; i + 2 < argc; i += 3) bench(atoi(argv[i]), atoi(argv[i + 1]), atoi(argv[i + 2]), threads);
        return 0;
    }
    int d[][3] = {{16, 25600, 27}, {64, 6400, 576},  {128, 1600, 1152},
                  {256, 400, 256}, {512, 100, 4608}, {1, 1000, 1280}};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) bench(d[i][0], d[i][1], d[i][2], threads);
    return 0;
}
