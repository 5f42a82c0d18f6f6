/* The binary elementwise kernel of ops_basic_eltwise.c: out = BIN_EXPR on (x, y) with Paddle axis
 * broadcasting (bcast), the inner loop specialised for the stride pattern so the compiler
 * vectorises the common cases.
 *
 * A part of ops_basic_eltwise.c's template body, not a header: ops_basic_eltwise.c includes it
 * once per (storage type, op) with BIN_T (the type), BIN_NAME (the function's name) and
 * BIN_EXPR (the expression of x and y, in BIN_T) defined, and bcast, bcast_row and PAR_MIN in
 * scope; it #undefs BIN_T, BIN_NAME and BIN_EXPR at its end.
 * Include it nowhere else. */
#ifndef BIN_T
#error "a part of ops_basic_eltwise.c's template body: included by ops_basic_eltwise.c only"
#endif

static void BIN_NAME(const bcast *b, const BIN_T *X, const BIN_T *Y, BIN_T *O, int threads) {
    const int64_t inner = b->dim[b->nd - 1], rows = b->numel / (inner ? inner : 1);
    const int64_t ix = b->sx[b->nd - 1], iy = b->sy[b->nd - 1];
    if (b->numel == 0) return;
    if (rows == 1) {
        CD_PAR_FOR(inner >= PAR_MIN, threads, int64_t, i, inner, {
            BIN_T x = X[i * ix], y = Y[i * iy];
            O[i] = (BIN_EXPR);
        });
        return;
    }
    CD_PAR_FOR(b->numel >= PAR_MIN, threads, int64_t, r, rows, {
        int64_t ox, oy;
        bcast_row(b, r, &ox, &oy);
        const BIN_T *xp = X + ox, *yp = Y + oy;
        BIN_T *op = O + r * inner;
        if (ix && iy) {
            for (int64_t i = 0; i < inner; i++) {
                BIN_T x = xp[i], y = yp[i];
                op[i] = (BIN_EXPR);
            }
        } else if (ix) {
            const BIN_T y = yp[0];
            for (int64_t i = 0; i < inner; i++) {
                BIN_T x = xp[i];
                op[i] = (BIN_EXPR);
            }
        } else if (iy) {
            const BIN_T x = xp[0];
            for (int64_t i = 0; i < inner; i++) {
                BIN_T y = yp[i];
                op[i] = (BIN_EXPR);
            }
        } else {
            BIN_T x = xp[0], y = yp[0];
            BIN_T v = (BIN_EXPR);
            for (int64_t i = 0; i < inner; i++) op[i] = v;
        }
    });
}

#undef BIN_T
#undef BIN_NAME
#undef BIN_EXPR
