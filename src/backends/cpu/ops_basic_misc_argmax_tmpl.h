/* arg_max of ops_basic_misc.c, one body per element type: the first index of the maximum
 * (ties -> the lowest index); NaN never wins over a number.
 *
 * A part of ops_basic_misc.c's template body: included with AM_T (the element type), AM_NAME
 * (the function's name) and AM_ISNAN(v) (a NaN test: `(v) != (v)` for floating types, 0 for
 * integers) defined, argmax_cfg in scope; #undefs all three at its end (docs/design.md §7). */
#ifndef AM_T
#error "a part of ops_basic_misc.c's template body: included by ops_basic_misc.c only"
#endif

static void AM_NAME(const AM_T *x, const argmax_cfg *a, cd_value *o) {
    if (a->inner >= 16 && a->len <= INT32_MAX) {
        /* Many columns (arg_max over the channels of a map): the same comparisons, k outer and
         * a block of columns inner (contiguous loads, a select per column instead of a
         * strided scan with a branch per value; seg_bilinear's 5x64x64 took 15 us). */
        enum { B = 256 };
        AM_T bv[B];
        int32_t bi[B];
        for (int64_t p = 0; p < a->outer; p++)
            for (int64_t q0 = 0; q0 < a->inner; q0 += B) {
                const int64_t nq = a->inner - q0 < B ? a->inner - q0 : B;
                const AM_T *b = x + p * a->len * a->inner + q0;
                for (int64_t j = 0; j < nq; j++) {
                    bv[j] = b[j];
                    bi[j] = 0;
                }
                for (int64_t k = 1; k < a->len; k++) {
                    const AM_T *r = b + k * a->inner;
                    for (int64_t j = 0; j < nq; j++) {
                        const AM_T v = r[j], c = bv[j];
                        const bool take = v > c || (AM_ISNAN(c) && !AM_ISNAN(v));
                        bv[j] = take ? v : c;
                        bi[j] = take ? (int32_t)k : bi[j];
                    }
                }
                const int64_t oi = p * a->inner + q0;
                if (o->dtype == CD_I64)
                    for (int64_t j = 0; j < nq; j++) ((int64_t *)o->data)[oi + j] = bi[j];
                else
                    for (int64_t j = 0; j < nq; j++) ((int32_t *)o->data)[oi + j] = bi[j];
            }
        return;
    }
    for (int64_t p = 0; p < a->outer; p++)
        for (int64_t q = 0; q < a->inner; q++) {
            const AM_T *b = x + p * a->len * a->inner + q;
            int64_t best = 0;
            AM_T bv = b[0];
            for (int64_t k = 1; k < a->len; k++) {
                AM_T v = b[k * a->inner];
                if (v > bv || (AM_ISNAN(bv) && !AM_ISNAN(v))) {
                    bv = v;
                    best = k;
                }
            }
            int64_t oi = p * a->inner + q;
            if (o->dtype == CD_I64)
                ((int64_t *)o->data)[oi] = best;
            else
                ((int32_t *)o->data)[oi] = (int32_t)best;
        }
}

#undef AM_T
#undef AM_NAME
#undef AM_ISNAN
