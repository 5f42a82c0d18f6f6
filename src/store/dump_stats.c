/* Tensor statistics (count, NaN/Inf counts, min, max, mean) kept with each probed tensor. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "store/dump.h"
#include "util/fp16.h"

/* Statistics of whole 64-float blocks, 8 lanes (lane j takes the elements with index j mod 8,
 * in index order, exactly as the scalar loop below does, so the sum and hence the mean are
 * bit-identical whichever path ran). A block holding NaN/Inf is redone one element at a time.
 * Compiled twice on x86-64 (AVX2 and baseline), picked at run time. */
typedef float stats_v8f __attribute__((vector_size(32)));
typedef int32_t stats_v8i __attribute__((vector_size(32)));
typedef double stats_v8d __attribute__((vector_size(64)));
#define STATS_SEL(m, a, b) ((stats_v8f)(((stats_v8i)(a) & (m)) | ((stats_v8i)(b) & ~(m))))
#define STATS_BLOCKS_BODY                                                                                              \
    {                                                                                                                  \
        stats_v8f vmn, vmx;                                                                                            \
        stats_v8d acc;                                                                                                 \
        memcpy(&vmn, mn, sizeof vmn);                                                                                  \
        memcpy(&vmx, mx, sizeof vmx);                                                                                  \
        for (int j = 0; j < 8; j++) acc[j] = lane[j];                                                                  \
        const stats_v8i em = {0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000,                                          \
                              0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000};                                         \
        for (int64_t b = 0; b < nblk; b++) {                                                                           \
            const float *q = p + b * 64;                                                                               \
            stats_v8f bmn = vmn, bmx = vmx;                                                                            \
            stats_v8d bacc = acc;                                                                                      \
            stats_v8i bad = {0};                                                                                       \
            for (int k = 0; k < 8; k++) {                                                                              \
                stats_v8f x;                                                                                           \
                memcpy(&x, q + 8 * k, sizeof x);                                                                       \
                bad |= ((stats_v8i)x & em) == em;                                                                      \
                stats_v8i m1 = x<bmn, m2 = x> bmx;                                                                     \
                bmn = STATS_SEL(m1, x, bmn);                                                                           \
                bmx = STATS_SEL(m2, x, bmx);                                                                           \
                bacc += __builtin_convertvector(x, stats_v8d);                                                         \
            }                                                                                                          \
            int any = 0;                                                                                               \
            for (int j = 0; j < 8; j++) any |= bad[j];                                                                 \
            if (!any) {                                                                                                \
                vmn = bmn;                                                                                             \
                vmx = bmx;                                                                                             \
                acc = bacc;                                                                                            \
                *fin += 64;                                                                                            \
                continue;                                                                                              \
            }                                                                                                          \
            for (int j = 0; j < 64; j++) {                                                                             \
                float y = q[j];                                                                                        \
                if (isnan(y)) {                                                                                        \
                    (*nanc)++;                                                                                         \
                    continue;                                                                                          \
                }                                                                                                      \
                if (isinf(y)) {                                                                                        \
                    (*infc)++;                                                                                         \
                    continue;                                                                                          \
                }                                                                                                      \
                int l = j & 7;                                                                                         \
                vmn[l] = y < vmn[l] ? y : vmn[l];                                                                      \
                vmx[l] = y > vmx[l] ? y : vmx[l];                                                                      \
                acc[l] += y;                                                                                           \
                (*fin)++;                                                                                              \
            }                                                                                                          \
        }                                                                                                              \
        memcpy(mn, &vmn, sizeof vmn);                                                                                  \
        memcpy(mx, &vmx, sizeof vmx);                                                                                  \
        for (int j = 0; j < 8; j++) lane[j] = acc[j];                                                                  \
    }
#define STATS_BLOCKS_ARGS                                                                                              \
    (const float *p, int64_t nblk, float *mn, float *mx, double *lane, int64_t *fin, int64_t *nanc, int64_t *infc)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx2"))) static void stats_blocks_avx2 STATS_BLOCKS_ARGS STATS_BLOCKS_BODY
#else
static void stats_blocks_generic STATS_BLOCKS_ARGS STATS_BLOCKS_BODY
#endif

    /* false: not run (x86-64 without AVX2, where 8-wide double vectors are emulated slowly and
 * the scalar loop is faster) */
    static bool stats_blocks STATS_BLOCKS_ARGS {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    bool avx2 = __builtin_cpu_supports("avx2"); /* no cached flag: see stats_f16 */
    if (avx2) stats_blocks_avx2(p, nblk, mn, mx, lane, fin, nanc, infc);
    return avx2;
#else
    stats_blocks_generic(p, nblk, mn, mx, lane, fin, nanc, infc);
    return true;
#endif
}

/* What one pass over a tensor found: min/max/sum over its fin finite values, the counts of
 * the others. */
typedef struct {
    double mn, mx, sum;
    int64_t fin, nan, inf;
} stats_acc;

/* One float32 element of a block holding NaN/Inf (or of the tail): counted, or into the
 * extremes and its lane's sum. */
static inline void f32_one(float x, float *fmn, float *fmx, double *lane, int64_t *fin, stats_acc *r) {
    if (isnan(x)) {
        r->nan++;
        return;
    }
    if (isinf(x)) {
        r->inf++;
        return;
    }
    *fmn = x < *fmn ? x : *fmn;
    *fmx = x > *fmx ? x : *fmx;
    *lane += x;
    (*fin)++;
}

/* float32: blocks of 8 without NaN/Inf (the common case) take a branch-free path the compiler
 * vectorises: float min/max are exact, the sum uses 8 double lanes (a fixed order, so the
 * result is deterministic); blocks holding a non-finite value go one by one. */
static void stats_f32(const float *p, int64_t n, stats_acc *r) {
    int64_t fin = 0;
    float fmn = INFINITY, fmx = -INFINITY;
    double lane[8] = {0};
    float lmn[8], lmx[8];
    for (int j = 0; j < 8; j++) {
        lmn[j] = INFINITY;
        lmx[j] = -INFINITY;
    }
    int64_t i = 0, nanc = 0, infc = 0;
    if (stats_blocks(p, n / 64, lmn, lmx, lane, &fin, &nanc, &infc)) i = (n / 64) * 64;
    r->nan = nanc;
    r->inf = infc;
    for (int j = 0; j < 8; j++) {
        fmn = lmn[j] < fmn ? lmn[j] : fmn;
        fmx = lmx[j] > fmx ? lmx[j] : fmx;
    }
    for (; i + 8 <= n; i += 8) {
        uint32_t bad = 0;
        for (int j = 0; j < 8; j++) {
            uint32_t u;
            memcpy(&u, &p[i + j], 4);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        if (!bad) {
            for (int j = 0; j < 8; j++) {
                float x = p[i + j];
                fmn = x < fmn ? x : fmn;
                fmx = x > fmx ? x : fmx;
                lane[j] += x;
            }
            fin += 8;
            continue;
        }
        for (int j = 0; j < 8; j++) f32_one(p[i + j], &fmn, &fmx, &lane[j], &fin, r);
    }
    for (; i < n; i++) f32_one(p[i], &fmn, &fmx, &lane[0], &fin, r);
    r->mn = fmn;
    r->mx = fmx;
    r->sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    r->fin = fin;
}

/* Every other dtype keeps the definition the statistics had when they read each element
 * through cd_value_get: the element widened to double, min/max kept when strictly passed
 * (so a zero min or max has the sign of the first zero in index order), the sum in double
 * in index order. Here the element is read by a loop typed once per tensor. */
#define STATS_SEQ(T, WIDEN)                                                                                            \
    static void stats_seq_##T(const T *p, int64_t n, stats_acc *r) {                                                   \
        double mn = INFINITY, mx = -INFINITY, sum = 0;                                                                 \
        int64_t fin = 0, nanc = 0, infc = 0;                                                                           \
        for (int64_t i = 0; i < n; i++) {                                                                              \
            double x = WIDEN(p[i]);                                                                                    \
            if (isnan(x)) {                                                                                            \
                nanc++;                                                                                                \
                continue;                                                                                              \
            }                                                                                                          \
            if (isinf(x)) {                                                                                            \
                infc++;                                                                                                \
                continue;                                                                                              \
            }                                                                                                          \
            if (x < mn) mn = x;                                                                                        \
            if (x > mx) mx = x;                                                                                        \
            sum += x;                                                                                                  \
            fin++;                                                                                                     \
        }                                                                                                              \
        *r = (stats_acc){.mn = mn, .mx = mx, .sum = sum, .fin = fin, .nan = nanc, .inf = infc};                        \
    }
#define STATS_HALF(h) ((double)cd_half_to_float(h))
#define STATS_PLAIN(x) ((double)(x))
STATS_SEQ(uint16_t, STATS_HALF)
STATS_SEQ(double, STATS_PLAIN)
STATS_SEQ(int64_t, STATS_PLAIN)

/* Integers up to 32 bits: min, max and sum in int64. Each element and every partial sum
 * of the double loop above is an integer below 2^53 in magnitude while n * maxabs <= 2^53,
 * so that loop added exactly and its sum is the exact one computed here; beyond that bound
 * the double loop runs as it was. */
#define STATS_INT(T, MAXABS)                                                                                           \
    static void stats_int_##T(const T *p, int64_t n, stats_acc *r) {                                                   \
        if ((uint64_t)n > (UINT64_C(1) << 53) / (MAXABS)) {                                                            \
            double mn = INFINITY, mx = -INFINITY, sum = 0;                                                             \
            for (int64_t i = 0; i < n; i++) {                                                                          \
                double x = p[i];                                                                                       \
                if (x < mn) mn = x;                                                                                    \
                if (x > mx) mx = x;                                                                                    \
                sum += x;                                                                                              \
            }                                                                                                          \
            *r = (stats_acc){.mn = mn, .mx = mx, .sum = sum, .fin = n};                                                \
            return;                                                                                                    \
        }                                                                                                              \
        int64_t mn = INT64_MAX, mx = INT64_MIN, sum = 0;                                                               \
        for (int64_t i = 0; i < n; i++) {                                                                              \
            int64_t x = p[i];                                                                                          \
            mn = x < mn ? x : mn;                                                                                      \
            mx = x > mx ? x : mx;                                                                                      \
            sum += x;                                                                                                  \
        }                                                                                                              \
        *r = (stats_acc){.mn = (double)mn, .mx = (double)mx, .sum = (double)sum, .fin = n};                            \
    }
STATS_INT(int8_t, 128)
STATS_INT(uint8_t, 255)
STATS_INT(int16_t, 32768)
STATS_INT(int32_t, UINT64_C(2147483648))

static void stats_bool(const uint8_t *p, int64_t n, stats_acc *r) {
    int64_t ones = 0;
    for (int64_t i = 0; i < n; i++) ones += p[i] != 0;
    *r = (stats_acc){.mn = ones == n ? 1.0 : 0.0, .mx = ones ? 1.0 : 0.0, .sum = (double)ones, .fin = n};
}

/* float16, the activations of every fp16 run. Every half is an integer multiple of 2^-24,
 * and so is every sum of halves: while the magnitudes of the finite values add up to less
 * than 2^29, each such sum has at most 53 significant bits and every double addition of
 * them is exact, in any order. The fast path below sums in lanes, checks that bound on the
 * sum of magnitudes it keeps beside (computed that way it stays below 2^29 exactly when the
 * true one does: the additions are exact up to there and round monotonically above) and
 * then has the sum of index order to the bit; above the bound the index-order loop runs.
 * min/max are exact in float whatever the order, except for the sign of a zero: the index-
 * order loop keeps the first zero, so a zero min or max takes the sign of the first zero.
 * The fast path is built by GCC on x86-64 only (clang 15 has no __builtin_cpu_supports
 * ("f16c")); elsewhere, and on a CPU without AVX2 + F16C, the index-order loop runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define STATS_F16_X86 1
/* Over p[0..n) (n a multiple of 16): min/max of the finite values, their sum and sum of
 * magnitudes (in 8 double lanes each, added up at the end); returns whether a NaN or an
 * Inf was seen. */
__attribute__((target("avx2,f16c"))) static bool f16_lanes(const uint16_t *p, int64_t n, float *mn, float *mx,
                                                           double *sum, double *asum) {
    const __m128i em = _mm_set1_epi16(0x7c00);
    const __m256 pinf = _mm256_set1_ps(INFINITY), ninf = _mm256_set1_ps(-INFINITY);
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(INT64_MAX));
    __m256 vmn0 = pinf, vmn1 = pinf, vmx0 = ninf, vmx1 = ninf;
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0, a0 = s0, a1 = s0, a2 = s0, a3 = s0;
    __m128i bad = _mm_setzero_si128();
    for (int64_t i = 0; i < n; i += 16) {
        __m128i h0 = _mm_loadu_si128((const __m128i *)(p + i)), h1 = _mm_loadu_si128((const __m128i *)(p + i + 8));
        __m128i b0 = _mm_cmpeq_epi16(_mm_and_si128(h0, em), em), b1 = _mm_cmpeq_epi16(_mm_and_si128(h1, em), em);
        bad = _mm_or_si128(bad, _mm_or_si128(b0, b1));
        __m256 m0 = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(b0)), m1 = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(b1));
        __m256 x0 = _mm256_cvtph_ps(h0), x1 = _mm256_cvtph_ps(h1);
        vmn0 = _mm256_min_ps(vmn0, _mm256_blendv_ps(x0, pinf, m0));
        vmn1 = _mm256_min_ps(vmn1, _mm256_blendv_ps(x1, pinf, m1));
        vmx0 = _mm256_max_ps(vmx0, _mm256_blendv_ps(x0, ninf, m0));
        vmx1 = _mm256_max_ps(vmx1, _mm256_blendv_ps(x1, ninf, m1));
        x0 = _mm256_andnot_ps(m0, x0);
        x1 = _mm256_andnot_ps(m1, x1);
        __m256d d0 = _mm256_cvtps_pd(_mm256_castps256_ps128(x0)), d1 = _mm256_cvtps_pd(_mm256_extractf128_ps(x0, 1));
        __m256d d2 = _mm256_cvtps_pd(_mm256_castps256_ps128(x1)), d3 = _mm256_cvtps_pd(_mm256_extractf128_ps(x1, 1));
        s0 = _mm256_add_pd(s0, d0);
        s1 = _mm256_add_pd(s1, d1);
        s2 = _mm256_add_pd(s2, d2);
        s3 = _mm256_add_pd(s3, d3);
        a0 = _mm256_add_pd(a0, _mm256_and_pd(d0, absm));
        a1 = _mm256_add_pd(a1, _mm256_and_pd(d1, absm));
        a2 = _mm256_add_pd(a2, _mm256_and_pd(d2, absm));
        a3 = _mm256_add_pd(a3, _mm256_and_pd(d3, absm));
    }
    float l[8];
    _mm256_storeu_ps(l, _mm256_min_ps(vmn0, vmn1));
    for (int j = 0; j < 8; j++) *mn = l[j] < *mn ? l[j] : *mn;
    _mm256_storeu_ps(l, _mm256_max_ps(vmx0, vmx1));
    for (int j = 0; j < 8; j++) *mx = l[j] > *mx ? l[j] : *mx;
    double d[4];
    _mm256_storeu_pd(d, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
    *sum += (d[0] + d[1]) + (d[2] + d[3]);
    _mm256_storeu_pd(d, _mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    *asum += (d[0] + d[1]) + (d[2] + d[3]);
    return !_mm_testz_si128(bad, bad);
}

/* Index of the first (finite) zero of the halves, -1 if none. */
static int64_t f16_first_zero(const uint16_t *p, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        int any = 0;
        for (int j = 0; j < 16; j++) any |= (p[i + j] & 0x7fffu) == 0;
        if (any) break;
    }
    for (; i < n; i++)
        if ((p[i] & 0x7fffu) == 0) return i;
    return -1;
}
#endif

static void stats_f16(const uint16_t *p, int64_t n, stats_acc *r) {
#ifdef STATS_F16_X86
    /* asked each time (a load of libgcc's CPU model): no cached flag that the statistics
     * thread and the main thread would both write */
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("f16c")) {
        stats_seq_uint16_t(p, n, r);
        return;
    }
    float mn = INFINITY, mx = -INFINITY;
    double sum = 0, asum = 0;
    int64_t nv = n / 16 * 16;
    bool bad = nv && f16_lanes(p, nv, &mn, &mx, &sum, &asum);
    for (int64_t i = nv; i < n; i++) {
        if ((p[i] & 0x7c00u) == 0x7c00u) {
            bad = true;
            continue;
        }
        float x = cd_half_to_float(p[i]);
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        sum += x;
        asum += fabsf(x);
    }
    if (!(asum < 0x1p29)) {
        stats_seq_uint16_t(p, n, r);
        return;
    }
    int64_t nanc = 0, infc = 0;
    if (bad)
        for (int64_t i = 0; i < n; i++) {
            unsigned a = p[i] & 0x7fffu;
            nanc += a > 0x7c00u;
            infc += a == 0x7c00u;
        }
    *r = (stats_acc){.mn = mn, .mx = mx, .sum = sum, .fin = n - nanc - infc, .nan = nanc, .inf = infc};
    if (r->mn == 0 || r->mx == 0) {
        int64_t z = f16_first_zero(p, n);
        double zero = z >= 0 && (p[z] & 0x8000u) ? -0.0 : 0.0;
        if (r->mn == 0) r->mn = zero;
        if (r->mx == 0) r->mx = zero;
    }
#else
    stats_seq_uint16_t(p, n, r);
#endif
}

void cd_tensor_stats_compute(const cd_value *v, cd_tensor_stats *s) {
    int64_t n = cd_shape_numel(&v->shape);
    memset(s, 0, sizeof *s);
    s->min = s->max = s->mean = NAN;
    if (n <= 0 || !v->data) {
        s->count = n > 0 ? n : 0;
        return;
    }
    s->count = n;
    stats_acc r = {.mn = INFINITY, .mx = -INFINITY};
    const void *p = v->data;
    switch (v->dtype) {
    case CD_F32: stats_f32(p, n, &r); break;
    case CD_F16: stats_f16(p, n, &r); break;
    case CD_I8: stats_int_int8_t(p, n, &r); break;
    case CD_I16: stats_int_int16_t(p, n, &r); break;
    case CD_I32: stats_int_int32_t(p, n, &r); break;
    case CD_I64: stats_seq_int64_t(p, n, &r); break;
    case CD_U8: stats_int_uint8_t(p, n, &r); break;
    case CD_BOOL: stats_bool(p, n, &r); break;
    case CD_F64: stats_seq_double(p, n, &r); break;
    default: r.nan = n; break; /* an unknown dtype read as NaN everywhere */
    }
    s->nan_count = r.nan;
    s->inf_count = r.inf;
    if (r.fin) {
        s->min = r.mn;
        s->max = r.mx;
        s->mean = r.sum / (double)r.fin;
    }
}
