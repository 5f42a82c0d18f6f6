/* Fake quantization of ops_basic_misc.c (calib), one body per storage type: round half away from
 * zero, as the int8 kernels quantise, clamp to [-127, 127], scale back.
 *
 * A part of ops_basic_misc.c's template body: included with FQ_T (the element type) and
 * FQ_NAME (the function's name) defined, CD_PAR_FOR and PAR_MIN in scope; #undefs both at its
 * end (docs/design.md §7). */
#ifndef FQ_T
#error "a part of ops_basic_misc.c's template body: included by ops_basic_misc.c only"
#endif

static void FQ_NAME(const FQ_T *in, FQ_T *out, int64_t n, float scale, int threads) {
    CD_PAR_FOR(n >= PAR_MIN, threads, int64_t, i, n, {
        float q = roundf((float)in[i] / scale);
        q = q < -127.0f ? -127.0f : (q > 127.0f ? 127.0f : q);
        out[i] = (FQ_T)(q * scale);
    });
}

#undef FQ_T
#undef FQ_NAME
