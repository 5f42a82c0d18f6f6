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
