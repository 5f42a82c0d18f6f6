/* Diagnosis beyond the first divergence (docs/diagnosis.md): accumulation lengths and FP16
 * hazards, the arithmetic-aware tolerance, per-op pins (run chosen ops on the CPU in float32
 * inside an OpenCL run) and repro packs. */
#ifndef CD_DIAG_H
#define CD_DIAG_H
#include "compare/analysis.h"
#include "engine/executor.h"

/* Largest accumulation length K of op i: conv Cin/groups*KH*KW, fc/mul/matmul the inner
 * dimension, softmax/norms the reduced axis length, pooling the window size, reductions the
 * reduced element count; 1 for element-wise and data-movement ops. Shapes come from the plan
 * (run-time shapes). */
int64_t cd_diag_acc_len(const cd_plan *plan, int op_index);

/* Half-precision limits used by the hazard counts. */
#define CD_HALF_MAX 65504.0
#define CD_HALF_MIN_NORMAL 6.103515625e-05 /* 2^-14 */
#define CD_U_FP32 5.9604644775390625e-08   /* 2^-24 */
#define CD_U_FP16 4.8828125e-04            /* 2^-11 */

/* Counts golden values that overflow half (|x| > 65504) and that fall below the smallest
 * normal half (0 < |x| < 2^-14), and the largest finite |x|. */
void cd_diag_hazard_counts(const float *golden, int64_t n, int64_t *over, int64_t *under, double *absmax);
/* Fills risk, risk_reason and risk_rank of every layer with hazard data and a->n_at_risk. */
void cd_diag_rank_hazards(cd_analysis *a);

/* Auto tolerance (documented in docs/diagnosis.md):
 *   atol = C * u * sqrt(K) * rms(ref),  rtol = C * u
 * with u the unit roundoff of the run's precision and C = CD_AUTO_C. */
#define CD_AUTO_C 16.0
cd_tol cd_diag_auto_tol(const cd_tol *base, bool fp16, int64_t k, double ref_rms, char *rule, size_t n);

/* Pins: ops of a plan (at fp16 for OpenCL) that run on the CPU in float32 instead; their
 * inputs are read back from the OpenCL device and widened, their outputs rounded to the run
 * dtype and uploaded back. plan32 is the float32 plan of the same graph. inner is an open
 * OpenCL (or any) backend; the CPU backend is opened inside. */
cd_status cd_pinned_backend_open(cd_backend *inner, const cd_plan *plan32, const bool *pinned,
                                 const cd_backend_opts *cpu_opts, cd_backend **out, cd_error *err);
#endif
