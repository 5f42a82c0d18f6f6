/* Error metrics between a reference tensor (backend A or the golden run) and a candidate
 * (backend B), computed in one streaming pass with double accumulation. */
#ifndef CD_METRICS_H
#define CD_METRICS_H
#include <stdbool.h>
#include <stdint.h>
#include "model/graph.h"

typedef struct cd_tol {
    double atol, rtol;        /* element passes when |a-b| <= atol + rtol*|ref| */
    double max_fail_fraction; /* layer passes when fail fraction <= this ... */
    double min_cos;           /* ... and cosine >= this */
    double range_atol;        /* adds range_atol * max|ref| of the tensor to atol: half
                                   rounding error scales with the tensor's range, not with
                                   each element (zero-initialised: off) */
} cd_tol;

typedef struct cd_metrics {
    int64_t n; /* elements compared */
    double max_abs, mean_abs, rmse;
    double max_rel;   /* max |a-b| / max(|ref|, rel_floor) */
    double rel_floor; /* guard near zero: 1e-3 * rms(ref) (documented) */
    double cosine;    /* 1 when both all-zero */
    double snr_db;    /* 10 log10(sum ref^2 / sum (a-b)^2), +inf when equal */
    double max_ulp;   /* in the storage format (float32 or half) */
    int64_t fail_count;
    double fail_fraction;
    int64_t worst_index; /* flat index of max |a-b| (first when tied), -1 if none */
    int64_t worst_coord[CD_MAX_RANK];
    double worst_ref, worst_val;
    int64_t nan_ref, nan_val, inf_ref, inf_val;
    int64_t nonfinite_mismatch; /* positions where exactly one side is NaN/Inf, or Inf signs differ */
    double ref_absmax, ref_rms;
    bool pass;
} cd_metrics;

/* ref and val hold n float32 values (half data already widened exactly); shape gives
 * coordinates of the worst element; half_ulps measures ULPs in binary16. */
void cd_metrics_compute(const float *ref, const float *val, int64_t n, const cd_shape *shape, bool half_ulps,
                        const cd_tol *tol, cd_metrics *m);
/* The same on up to `threads` OpenMP threads: the metrics are defined blockwise (fixed blocks
 * combined in order), so the result is the same for every thread count. */
void cd_metrics_compute_mt(const float *ref, const float *val, int64_t n, const cd_shape *shape, bool half_ulps,
                           const cd_tol *tol, cd_metrics *m, int threads);
/* A layer's pairs in one sweep: A against B into mab and, when g is not NULL, golden against A
 * into mga and golden against B into mgb (all with tol); each is bit for bit what
 * cd_metrics_compute_mt gives for that pair, for every thread count. */
void cd_metrics_compute_layer(const float *a, const float *b, const float *g, int64_t n, const cd_shape *shape,
                              bool half_ulps, const cd_tol *tol, cd_metrics *mab, cd_metrics *mga, cd_metrics *mgb,
                              int threads);
/* For the tests: the same with the fused all-finite loop off (every block by the general loop,
 * the definition the fused loop must reproduce). */
void cd_metrics_compute_general(const float *a, const float *b, const float *g, int64_t n, const cd_shape *shape,
                                bool half_ulps, const cd_tol *tol, cd_metrics *mab, cd_metrics *mga, cd_metrics *mgb,
                                int threads);
/* For the tests: the binary16 ULP index of a finite float as the fused loop computes it (must
 * equal the signed magnitude of cd_float_to_half(f), with -0 as 0). */
int32_t cd_metrics_half_order(float f);
/* The same on f[0..3] at once, as the fused loop's vector step does. */
void cd_metrics_half_order4(const float *f, int32_t *out);
/* ULP distance between two floats in float32 or binary16 (after rounding to half). */
double cd_ulp_distance(float a, float b, bool half);
/* Top-k agreement of the last axis (classifier heads): fraction of rows whose top-1 index
 * agrees, and whose top-5 sets are equal (as sets). k5 is min(5, width). */
void cd_topk_agreement(const float *ref, const float *val, int64_t rows, int64_t width, double *top1, double *top5);
#endif
