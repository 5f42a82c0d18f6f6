/* Tensor statistics (count, NaN/Inf counts, min, max, mean) kept with each probed tensor. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "store/dump.h"

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
    static int avx2 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
    if (avx2) stats_blocks_avx2(p, nblk, mn, mx, lane, fin, nanc, infc);
    return avx2 == 1;
#else
    stats_blocks_generic(p, nblk, mn, mx, lane, fin, nanc, infc);
    return true;
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
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    int64_t fin = 0;
    /* Fast paths for the activation types; others go through cd_value_get. */
    if (v->dtype == CD_F32) {
        /* Blocks of 8 without NaN/Inf (the common case) take a branch-free path the compiler
         * vectorises: float min/max are exact, the sum uses 8 double lanes (a fixed order,
         * so the result is deterministic); blocks holding a non-finite value go one by one. */
        const float *p = v->data;
        float fmn = INFINITY, fmx = -INFINITY;
        double lane[8] = {0};
        float lmn[8], lmx[8];
        for (int j = 0; j < 8; j++) {
            lmn[j] = INFINITY;
            lmx[j] = -INFINITY;
        }
        int64_t i = 0, nanc = 0, infc = 0;
        if (stats_blocks(p, n / 64, lmn, lmx, lane, &fin, &nanc, &infc)) i = (n / 64) * 64;
        s->nan_count = nanc;
        s->inf_count = infc;
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
            for (int j = 0; j < 8; j++) {
                float x = p[i + j];
                if (isnan(x)) {
                    s->nan_count++;
                    continue;
                }
                if (isinf(x)) {
                    s->inf_count++;
                    continue;
                }
                fmn = x < fmn ? x : fmn;
                fmx = x > fmx ? x : fmx;
                lane[j] += x;
                fin++;
            }
        }
        for (; i < n; i++) {
            float x = p[i];
            if (isnan(x)) {
                s->nan_count++;
                continue;
            }
            if (isinf(x)) {
                s->inf_count++;
                continue;
            }
            fmn = x < fmn ? x : fmn;
            fmx = x > fmx ? x : fmx;
            lane[0] += x;
            fin++;
        }
        mn = fmn;
        mx = fmx;
        sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    } else {
        for (int64_t i = 0; i < n; i++) {
            double x = cd_value_get(v, i);
            if (isnan(x)) {
                s->nan_count++;
                continue;
            }
            if (isinf(x)) {
                s->inf_count++;
                continue;
            }
            if (x < mn) mn = x;
            if (x > mx) mx = x;
            sum += x;
            fin++;
        }
    }
    if (fin) {
        s->min = mn;
        s->max = mx;
        s->mean = sum / (double)fin;
    }
}
