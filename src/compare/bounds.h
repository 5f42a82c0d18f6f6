/* Error bounds derived from each op's arithmetic (docs/verdicts.md): how far a correct kernel
 * of backend B may be from the local reference when both compute one layer on the same
 * inputs. Pure functions over arrays; which op gets which family is decided by the caller
 * (src/verdict/local.c) from the op type, its fused activation and its accumulation length. */
#ifndef CD_BOUNDS_H
#define CD_BOUNDS_H
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    CD_FAM_EXACT = 0,      /* data movement, selection (max pool, relu, nearest): bit-exact */
    CD_FAM_ELEMENTWISE,    /* a few correctly rounded operations per element */
    CD_FAM_TRANSCENDENTAL, /* built-ins with an ulp budget (OpenCL accuracy tables) */
    CD_FAM_ACCUMULATE,     /* sums of K products: conv, fc, matmul, avg pool, reductions */
    CD_FAM_NORMALIZE,      /* softmax: exp, a K-term sum of positive terms, a division */
    CD_FAM_ROUNDING,       /* fake quantisation (calib): exact except at ties */
    CD_FAM_GENERIC,        /* an op type without a family, or a fused activation without a bounded
                                slope: conservative, scaled by K and the tensor's range. No registered
                                op type may land here (tests/unit/test_bounds.c walks the registry) */
    CD_FAM_INT8,           /* an int8 layer whose reference side ran integer arithmetic
                                (--int8 arm): quantum = output scale (0: float output),
                                abs_terms = absolute allowance for an input off the int8 grid */
    CD_FAM_RECURRENT,      /* rnn (LSTM, GRU, simple RNN): each step recomputed exactly on B's own
                                previous outputs, its rounding bound carried through the cell state
                                (src/verdict/local_allow.c); mag holds the element's allowance */
    CD_FAM_NORM,           /* layer/instance/batch norm: mean, variance and 1/sqrt of the group as
                                each side computes them (local_allow.c); mag holds the allowance */
    CD_FAM_DETECTION,      /* box arithmetic of detection ops (prior boxes, box_coder, yolo_box): a few
                                roundings of coordinates, relative to the tensor's range */
    CD_FAM_INTERP,         /* grid_sampler: bilinear weights from sampled coordinates */
    CD_FAM_COUNT
} cd_bound_family;

const char *cd_bound_family_name(cd_bound_family f);
/* Whether the family's arithmetic part is a per-element allowance computed from the layer's
 * inputs (passed as mag; NaN: not had, the arithmetic part is then 0, a lower bound). */
bool cd_bound_family_allowance(cd_bound_family f);

typedef struct cd_arith {
    double u;        /* unit roundoff of the arithmetic: 2^-24 float, 2^-11 half */
    bool half_store; /* outputs stored in IEEE half */
    /* transcendental functions (exp, sigmoid, tanh, ...) accurate only to this many u (0: the
     * OpenCL built-in accuracy of the family table): an engine with its own approximations,
     * e.g. Paddle-Lite ARM's NEON sigmoid, a reciprocal estimate refined by one Newton step
     * (relative error about 2^-16 = 256 u; docs/verdicts.md "Engines") */
    double trans_ulps;
    /* an engine's own exp inside a normalization (softmax): its relative error, added to the
     * family's few ulps (0: none); MNN's ARM softmax, a degree-4 polynomial: 5.6e-5 (docs/mnn.md
     * "mnn-arm") */
    double exp_rel;
    /* an engine that may run a k x k convolution as a Winograd F(m, k) (docs/verdicts.md
     * "Winograd convolutions"): whose algorithm (engine/backend_def.h cd_wino_kind; 0: never), the
     * largest tile m + k - 1 it may take (0: its algorithm's), the largest m (0: no other limit
     * than the tile) and its thread count (the tile it picks shrinks with the threads; 0: one) */
    int wino, wino_alpha, wino_max_m, wino_threads;
} cd_arith;

#define CD_U32 5.9604644775390625e-08   /* 2^-24 */
#define CD_U16 4.8828125e-04            /* 2^-11 */
#define CD_ETA32 1.1754943508222875e-38 /* 2^-126: a flushed float denormal */
#define CD_ETA16 6.103515625e-05        /* 2^-14: a flushed half denormal */
#define CD_HALF_MAX 65504.0

typedef struct cd_bound_spec {
    cd_bound_family fam;
    int64_t K;        /* terms per output (accumulate, normalize, generic); >= 1 */
    double ulps;      /* elementwise/transcendental: rounding budget per side, in u, relative */
    double abs_terms; /* elementwise: absolute magnitude of intermediate terms (e.g. an offset) */
    double lipschitz; /* fused activation after an accumulation (1 without) */
    double act_ulps;  /* the fused activation's own rounding, in u relative to |y| */
    double quantum;   /* rounding: the quantisation step */
    cd_arith ref, b;  /* the reference side and the checked side */
    double safety;    /* factor on the arithmetic terms (CD_BOUND_SAFETY) */
    bool mag_run;     /* a magnitude run (|inputs|, |weights|, no activation) gives the
                                true magnitude; without it |ref| stands in (a lower bound) */
    /* accumulate: B may have run the conv as a Winograd one (docs/verdicts.md "Winograd
     * convolutions"): its rounding count (cd_wino_roundings), which then holds both sides' terms,
     * the magnitude being the Winograd magnitude plus gamma_{K+2}(ref.u) / gamma_{wino_k}(b.u)
     * times sum |w x| + |b| (local_mag.c); 0: a direct dot product on both sides */
    int64_t wino_k;
} cd_bound_spec;

#define CD_BOUND_SAFETY 2.0

/* gamma_k = k u / (1 - k u): the classical bound on the relative error of a k-term sum or dot
 * product in any order (Higham, Accuracy and Stability, 2nd ed., §3.1); +inf when k u >= 1. */
double cd_gamma(int64_t k, double u);

/* The bound of one element. ref: the reference value; mag: the magnitude the rounding errors
 * scale with (accumulate: sum |w x| + |b| of that output; elementwise sums: sum of |operands|);
 * a NaN mag means "use |ref|" (a lower bound of the true magnitude: the cheap check); x: the
 * op's input at that element (rounding ops; NaN when unknown); absmax: max |ref| of the tensor. */
double cd_bound_elem(const cd_bound_spec *s, double ref, double mag, double x, double absmax);

typedef struct cd_local_result {
    double err, bound; /* at the element with the largest ratio */
    double ratio;      /* max error / bound; 0 when every error is 0; inf when a bound is 0 */
    int64_t exceed;    /* elements over their bound (and not allowed by the user tolerance) */
    int64_t worst;     /* index of the largest ratio, -1 none */
    int64_t nonfinite; /* NaN/Inf in val where ref is finite (and not a half overflow) */
    bool pass;
    bool needs_mag;    /* an element failed the cheap check and no magnitude was had for it */
    int64_t mag_elems; /* elements whose magnitude came from mag_at (the lazy per-element path) */
    bool ratio_upper;  /* the worst ratio is on a cheap bound: an upper bound of the exact one */
} cd_local_result;

/* The magnitude of element i (sum |w x| + |b| for an accumulation), computed on demand; NaN
 * when it cannot be had (unsupported op, or over the caller's budget). */
typedef double (*cd_mag_at_fn)(void *user, int64_t i);

/* Checks n elements. mag and x may be NULL. user_atol >= 0 (with user_rtol >= 0) adds the
 * user's element tolerance as an extra allowance: an element passes within either. The
 * elements far inside their bound are settled by a per-call affine lower bound of it (a
 * certified filter, bounds.c); the result is the per-element bound's, bit for bit. */
void cd_local_check(const cd_bound_spec *s, const float *ref, const float *val, const float *mag, const float *x,
                    int64_t n, double user_atol, double user_rtol, cd_local_result *r);
/* Whether every element is certainly inside its cheap bound (cd_local_check with mag NULL and
 * no user tolerance would pass): one branch-free pass with the check's certified filter at its
 * loosest scale; false where it cannot tell (a NaN/Inf, an element near its bound). */
bool cd_local_certainly_within(const cd_bound_spec *s, const float *ref, const float *val, const float *x, int64_t n);
/* The certified filter of the cheap bound (mag NaN, no x) at its loosest scale: an element with
 * |ref - val| <= c0 + cnan |ref| is within cd_bound_elem(s, ref, NAN, NAN, absmax) (ratio <= 1).
 * Returns false where the filter does not apply (then decide every element exactly). */
bool cd_bound_cheap_lin(const cd_bound_spec *s, double absmax, double *c0, double *cnan);
/* Whether cd_local_check with mag and x NULL and no user tolerance passes (then needs_mag is
 * false too): the same check, stopping at the first element over its bound. */
bool cd_local_check_passes(const cd_bound_spec *s, const float *ref, const float *val, int64_t n);
/* The same check, asking mag_at (when not NULL, and mag is NULL) for the magnitude of the
 * elements with the largest ratios to their cheap bound, at most max_calls of them (all those
 * over the cheap bound in any case): usually a few per mille of a conv's outputs fail the
 * cheap bound, so the exact bound costs K products per such element instead of a whole
 * magnitude run. An element over its bound whose magnitude could not be had (NaN) sets
 * needs_mag. */
void cd_local_check_lazy(const cd_bound_spec *s, const float *ref, const float *val, const float *mag,
                         cd_mag_at_fn mag_at, void *mag_user, const float *x, int64_t n, double user_atol,
                         double user_rtol, int64_t max_calls, cd_local_result *r);
/* Winograd convolutions (docs/verdicts.md "Winograd convolutions"). F(m, k) computes an m x m
 * output tile of a k x k correlation from an alpha x alpha input tile, alpha = m + k - 1, as
 * A^T [sum_c (G g_c G^T) . (B^T d_c B)] A. The transforms come from alpha - 1 distinct
 * interpolation points and the point at infinity (Toom-Cook): A (alpha x m) and G (alpha x k)
 * evaluate at the points (rows p^0, p^1, ...; infinity's row picks the leading coefficient), B^T
 * is the transposed inverse of the alpha x alpha evaluation matrix. An engine's diagonal scaling
 * between G and B cancels in the product: only the points matter for the bound. */
typedef struct cd_wino_mats {
    int alpha, m, k;
    double A[8][8];  /* alpha x m */
    double G[8][8];  /* alpha x k */
    double BT[8][8]; /* alpha x alpha */
} cd_wino_mats;
/* MNN's CPU: 0, 1, -1, 2, -2, 3, -3 (the first alpha - 1); Paddle-Lite ARM: the same up to the
 * 6-tile, 0, 1, -1, 2, -2, 1/2, -1/2 for the 8-tile */
extern const double cd_wino_points_mnn[7], cd_wino_points_pl8[7];
/* The transforms of F(alpha - k + 1, k) from pts (alpha - 1 of them); false when alpha > 8, m < 2
 * or the points are not distinct. */
bool cd_wino_mats_make(cd_wino_mats *t, int alpha, int k, const double *pts);
/* The magnitudes through the absolute transforms: of a weight (k x k, row-major) |G| |w| |G|^T,
 * of an input tile (alpha x alpha) |B^T| |d| |B|, of one output tile (m x m) |A|^T M |A| from
 * M = sum_c U_c . V_c; all alpha x alpha row-major. |w| and |d| are taken here. The computed
 * output differs from the exact one by at most gamma_n times that output magnitude, n the
 * roundings along the way (docs/verdicts.md). */
void cd_wino_weight_mag(const cd_wino_mats *t, const float *w, double *u);
void cd_wino_input_mag(const cd_wino_mats *t, const double *d, double *v);
void cd_wino_output_mag(const cd_wino_mats *t, const double *M, double *out);
/* The signed transforms: U = G w G^T of a k x k weight, V = B^T d B of an alpha x alpha tile. */
void cd_wino_weight_tf(const cd_wino_mats *t, const float *w, double *u);
void cd_wino_input_tf(const cd_wino_mats *t, const double *d, double *v);
/* The stagewise (first-order) allowance of a Winograd conv, tighter than gamma_n times the
 * magnitude through the absolute transforms where the transforms cancel: per channel,
 * cd_wino_acc adds into acc (4 alpha x alpha blocks) |U . V|, U . V, |U| . |B^T||d||B| and
 * |G||w||G^T| . |V|; cd_wino_tile_allow makes of them the m x m output magnitudes
 *     |A|^T [ w0 S|U.V| + w1 |S U.V| + w2 S|U|.Vabs + w3 S Uabs.|V| ] |A| + w1 |b|
 * with w = (gamma_{c+1}, gamma_{2 alpha + 5}, gamma_{2 alpha + 4}, gamma_2) / gamma_n (u): the
 * channel sum and products, the output transform and the bias, the input transform, the
 * weight transform's store, each propagated through the later stages; the bound is gamma_n(u)
 * times it (docs/verdicts.md "Winograd convolutions"). */
void cd_wino_acc(const cd_wino_mats *t, const double *U, const double *Uabs, const double *V, const double *Vabs,
                 double *acc);
void cd_wino_tile_allow(const cd_wino_mats *t, const double *acc, int64_t c, double u, double bias_abs, double *out);

/* The rounding count n of a Winograd conv with c input channels per group and tile alpha: the
 * weight transform stored at B's precision (2), the input and output transforms (2 alpha + 4
 * each: two passes of alpha terms, an engine's factored form), the product and the c-term
 * channel sum (c + 1), the bias (1): c + 4 alpha + 12, to stand for K + 2. */
int64_t cd_wino_roundings(int64_t c, int alpha);

/* Whether a family's bound reads the tensor's range (max |ref|): a check of part of a tensor
 * then differs from the whole tensor's for such a family, and for no other. */
bool cd_bound_uses_absmax(cd_bound_family f);
#endif
