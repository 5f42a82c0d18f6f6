/* cd_tensor_stats_compute in every dtype against the definition the dump's statistics had
 * when every element was read through cd_value_get: widened to double, min/max replaced
 * only when strictly passed, the sum in double in index order. The typed and vectorised
 * paths must give the same bits (the stored statistics of a dump do not change). float32
 * keeps its own lane order (test_store.c checks it). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/dump.h"
#include "util/fp16.h"

static cd_value mk(cd_dtype dt, int64_t n, void *data) {
    cd_value v = {.dtype = dt};
    v.shape.rank = 1;
    v.shape.d[0] = n;
    v.data = data;
    v.nbytes = (size_t)n * cd_dtype_size(dt);
    return v;
}

static void reference(const cd_value *v, cd_tensor_stats *s) {
    int64_t n = cd_value_numel(v);
    memset(s, 0, sizeof *s);
    s->count = n;
    s->min = s->max = s->mean = NAN;
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    int64_t fin = 0;
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
    if (fin) {
        s->min = mn;
        s->max = mx;
        s->mean = sum / (double)fin;
    }
}

static bool same_bits(double a, double b) { return !memcmp(&a, &b, sizeof a); }

static void check(const cd_value *v, const char *what) {
    cd_tensor_stats a, b;
    cd_tensor_stats_compute(v, &a);
    reference(v, &b);
    cr_assert_eq(a.count, b.count, "%s: count", what);
    cr_assert_eq(a.nan_count, b.nan_count, "%s: nan %lld vs %lld", what, (long long)a.nan_count,
                 (long long)b.nan_count);
    cr_assert_eq(a.inf_count, b.inf_count, "%s: inf", what);
    cr_assert(same_bits(a.min, b.min), "%s: min %a vs %a", what, a.min, b.min);
    cr_assert(same_bits(a.max, b.max), "%s: max %a vs %a", what, a.max, b.max);
    cr_assert(same_bits(a.mean, b.mean), "%s: mean %a vs %a", what, a.mean, b.mean);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* A half of the given kind: 0 normal values of magnitude up to 2^mag, 1 with zeros of both
 * signs and subnormals mixed in, 2 with NaN/Inf as well, 3 only zeros and subnormals. */
static uint16_t rand_half(int kind, int mag) {
    uint64_t r = next();
    uint16_t sign = (r & 1) ? 0x8000u : 0;
    uint16_t man = (uint16_t)((r >> 1) & 0x3ffu);
    int e = 15 + (int)((r >> 11) % (unsigned)(mag + 8)) - 8; /* 2^-8 .. 2^mag */
    uint16_t h = (uint16_t)(sign | (unsigned)e << 10 | man);
    unsigned pick = (unsigned)((r >> 20) % 64);
    if (kind >= 1 && pick < 6) h = sign;                                         /* +-0 */
    if (kind >= 1 && pick >= 6 && pick < 9) h = (uint16_t)(sign | man);          /* subnormal */
    if (kind >= 2 && pick == 9) h = (uint16_t)(sign | 0x7c00u);                  /* +-Inf */
    if (kind >= 2 && pick == 10) h = (uint16_t)(sign | 0x7e00u | (man & 0xffu)); /* NaN */
    if (kind == 3) h = pick < 40 ? sign : (uint16_t)(sign | man);
    return h;
}

Test(dump_stats, half_matches_index_order) {
    const int64_t sizes[] = {1, 2, 7, 15, 16, 17, 31, 33, 64, 100, 255, 1000, 4099, 65536 + 5};
    uint16_t *h = malloc(sizeof(uint16_t) * (65536 + 5));
    cr_assert_not_null(h);
    char what[96];
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int kind = 0; kind < 4; kind++)
            for (int mag = 0; mag <= 15; mag += 5) {
                int64_t n = sizes[k];
                for (int64_t i = 0; i < n; i++) h[i] = rand_half(kind, mag);
                cd_value v = mk(CD_F16, n, h);
                snprintf(what, sizeof what, "n %lld kind %d mag %d", (long long)n, kind, mag);
                check(&v, what);
                /* non-negative (a ReLU's output): a zero min takes the first zero's sign */
                for (int64_t i = 0; i < n; i++) h[i] &= 0x7fffu;
                if (n > 3) h[n - 2] = 0x8000u;
                check(&v, what);
                /* non-positive: a zero max likewise */
                for (int64_t i = 0; i < n; i++) h[i] |= 0x8000u;
                if (n > 3) h[n / 2] = 0;
                check(&v, what);
            }
    free(h);
}

/* Sums whose magnitudes pass 2^29 (where a double sum of halves starts to round and the
 * order decides its bits) and a tensor whose first zero comes after 16-element blocks. */
Test(dump_stats, half_large_sums_and_late_zero) {
    int64_t n = 40000;
    uint16_t *h = malloc(sizeof(uint16_t) * (size_t)n);
    cr_assert_not_null(h);
    /* values near 2^15 and subnormals (multiples of 2^-24) in turn: once the sum passes 2^29
     * a subnormal loses bits in index order and not in lanes */
    for (int64_t i = 0; i < n; i++) h[i] = (uint16_t)(i % 2 ? 0x7800u | (next() & 0x3ffu) : next() & 0x3ffu);
    cd_value v = mk(CD_F16, n, h);
    check(&v, "near 2^15 and subnormals, the sum past 2^29");
    for (int64_t i = 0; i < n; i += 6) h[i] |= 0x8000u;
    check(&v, "the same with some negative");
    for (int64_t i = 0; i < 100; i++) h[i] = (uint16_t)(0x3c00u | (next() & 0x3ffu));
    h[77] = 0x8000u;
    h[90] = 0;
    v.shape.d[0] = 100;
    check(&v, "first zero at 77 (-0)");
    free(h);
}

Test(dump_stats, integers_bool_double) {
    enum { N = 1037 };
    int8_t i8[N];
    uint8_t u8[N], b[N];
    int16_t i16[N];
    int32_t i32[N];
    int64_t i64[N];
    double f64[N];
    for (int i = 0; i < N; i++) {
        uint64_t r = next();
        i8[i] = (int8_t)r;
        u8[i] = (uint8_t)(r >> 8);
        b[i] = (uint8_t)((r >> 16) % 3);
        i16[i] = (int16_t)(r >> 24);
        i32[i] = (int32_t)(r >> 32);
        i64[i] = (int64_t)r;
        f64[i] = ldexp((double)(int32_t)(r >> 16), (int)(r % 80) - 40);
    }
    i8[3] = -128;
    i16[4] = -32768;
    i32[5] = INT32_MIN;
    f64[6] = -0.0;
    f64[7] = NAN;
    f64[8] = -INFINITY;
    struct {
        cd_dtype dt;
        void *p;
    } c[] = {{CD_I8, i8}, {CD_U8, u8}, {CD_BOOL, b}, {CD_I16, i16}, {CD_I32, i32}, {CD_I64, i64}, {CD_F64, f64}};
    for (size_t k = 0; k < sizeof c / sizeof *c; k++)
        for (int64_t n = 1; n <= N; n += 97) {
            cd_value v = mk(c[k].dt, n, c[k].p);
            check(&v, cd_dtype_name(c[k].dt));
        }
    memset(b, 0, sizeof b);
    cd_value vb = mk(CD_BOOL, N, b);
    check(&vb, "all false");
    memset(b, 7, sizeof b);
    check(&vb, "all true");
}
