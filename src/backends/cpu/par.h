/* Loops that run on OpenMP threads only when they are worth it.
 *
 * `#pragma omp parallel for if (cond)` still enters the OpenMP runtime when cond is false:
 * GOMP builds a one-thread team, ~0.5 us per region on this 2-core VM (measured: 511 ns vs
 * 41 ns for the same 64-element loop called plainly). A mobile network's small layers enter
 * hundreds of such regions per run, so the CPU kernels write their parallel loops as
 *
 *     CD_PAR_FOR(par, threads, int64_t, t, total, { body using t; });
 *
 * which runs the body in a plain loop unless `par` holds and threads > 1. The body is the
 * same code either way (so the results do not depend on the thread count), static schedule.
 * The body may not contain #pragma lines (it is a macro argument). */
#ifndef CD_CPU_PAR_H
#define CD_CPU_PAR_H

/* Element counts below which a loop of cheap per-element arithmetic (an add, a blend: ~1 ns or
 * less an element) runs on one thread. Waking a team whose workers have gone to sleep after a
 * run of one-thread layers costs 50-200 us (backends/cpu/gemm.h CD_GEMM_ONE_THREAD_MACS), the
 * work of 10^5 such elements: on the quiet 16-core host seg_bilinear_ac ran 0.33 ms warm on one
 * thread and 0.49 ms on two, its only parallel region a 5x64x64 bilinear resize (20480 outputs).
 * Loops with a libm call per element keep lower thresholds of their own. */
#define CD_PAR_MIN_CHEAP (1 << 16)

#define CD_PAR_FOR(PAR, THREADS, T, VAR, N, ...)                                                                       \
    do {                                                                                                               \
        const int cd_pf_nt_ = (THREADS);                                                                               \
        const T cd_pf_n_ = (N);                                                                                        \
        if ((PAR) && cd_pf_nt_ > 1) {                                                                                  \
            _Pragma("omp parallel for num_threads(cd_pf_nt_) schedule(static)") for (T VAR = 0; VAR < cd_pf_n_; VAR++) \
                __VA_ARGS__                                                                                            \
        } else {                                                                                                       \
            for (T VAR = 0; VAR < cd_pf_n_; VAR++) __VA_ARGS__                                                         \
        }                                                                                                              \
    } while (0)

#endif
