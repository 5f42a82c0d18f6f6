/* transpose_N of ops_shape.c for one element size (the *_tmpl.h idiom, docs/design.md §7):
 * ops_shape.c includes it once per size after defining TR_T (an unsigned integer of that size)
 * and TR_NAME (the function's name); it #undefs them at its end. Include it nowhere else. */
#ifndef TR_T
#error "ops_shape_transpose_tmpl.h: define TR_T and TR_NAME, then include (ops_shape.c does)"
#endif
static void TR_NAME(const TR_T *in, TR_T *out, const int64_t *od, const int64_t *is, int r, int64_t rows, int threads) {
    const int64_t W = od[r - 1], sW = is[r - 1];
    CD_PAR_FOR(rows * W >= 65536, threads, int64_t, row, rows, {
        int64_t rem = row, off = 0;
        for (int d = r - 2; d >= 0; d--) {
            off += (rem % od[d]) * is[d];
            rem /= od[d];
        }
        const TR_T *src = in + off;
        TR_T *dst = out + row * W;
        if (sW == 1)
            memcpy(dst, src, (size_t)W * sizeof(TR_T));
        else
            for (int64_t j = 0; j < W; j++) dst[j] = src[j * sW];
    });
}

#undef TR_T
#undef TR_NAME
