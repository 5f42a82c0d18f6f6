/* The interpolation kernel of ops_basic_interp.c (nearest: a copy of the source element;
 * bilinear: the four-tap weighted sum in float, rounded once to the storage type).
 *
 * A part of ops_basic_interp.c's template body, not a header: ops_basic_interp.c includes it
 * once per storage type with IP_T (float, _Float16) and IP_NAME (the function's name) defined
 * and interp_cfg in scope; it #undefs IP_T and IP_NAME at its end. Include it nowhere else. */
#ifndef IP_T
#error "a part of ops_basic_interp.c's template body: included by ops_basic_interp.c only"
#endif

static void IP_NAME(const interp_cfg *k, int64_t planes, const IP_T *in, IP_T *out, const int32_t *y0,
                    const int32_t *y1, const float *ly, const int32_t *x0, const int32_t *x1, const float *lx,
                    int threads) {
    const int64_t IH = k->in_h, IW = k->in_w, OH = k->out_h, OW = k->out_w;
    const bool bil = k->bilinear;
    if (bil && OH > IH) {
        /* Upscaling: output rows share source rows, so each source row's horizontal blend
         * h[x] = vx * r[x0] + wx * r[x1] is made once per run of rows (tasks of 16 output rows of
         * one plane) and each output is vy * h0[x] + wy * h1[x]: the two products and the sum
         * of the formula below, the same operations on the same values (nothing here contracts
         * them into FMA: this file has no FMA target), so the same bits; the gathers and the
         * horizontal products are done once per source row, not once per output row. */
        enum { RB = 16 };
        const int64_t nrb = (OH + RB - 1) / RB;
        CD_PAR_FOR(planes * OH * OW >= CD_PAR_MIN_CHEAP, threads, int64_t, task, planes * nrb, {
            const int64_t p = task / nrb, ya = (task % nrb) * RB, yb = ya + RB < OH ? ya + RB : OH;
            float *hb = malloc((size_t)(2 * OW) * sizeof(float));
            float *h0 = hb, *h1 = hb ? hb + OW : NULL;
            int64_t c0 = -1, c1 = -1;
            for (int64_t y = ya; y < yb; y++) {
                const IP_T *r0 = in + (p * IH + y0[y]) * IW, *r1 = in + (p * IH + y1[y]) * IW;
                IP_T *o = out + (p * OH + y) * OW;
                const float wy = ly[y], vy = 1.0f - wy;
                if (!hb) {
                    for (int64_t x = 0; x < OW; x++) {
                        const float wx = lx[x], vx = 1.0f - wx;
                        float v = vy * (vx * (float)r0[x0[x]] + wx * (float)r0[x1[x]]) +
                            wy * (vx * (float)r1[x0[x]] + wx * (float)r1[x1[x]]);
                        o[x] = (IP_T)v;
                    }
                    continue;
                }
                if (c0 != y0[y] && c1 == y0[y]) {
                    float *tp = h0;
                    h0 = h1;
                    h1 = tp;
                    c1 = c0;
                    c0 = y0[y];
                }
                if (c0 != y0[y]) {
                    for (int64_t x = 0; x < OW; x++) {
                        const float wx = lx[x], vx = 1.0f - wx;
                        h0[x] = vx * (float)r0[x0[x]] + wx * (float)r0[x1[x]];
                    }
                    c0 = y0[y];
                }
                if (c1 != y1[y]) {
                    for (int64_t x = 0; x < OW; x++) {
                        const float wx = lx[x], vx = 1.0f - wx;
                        h1[x] = vx * (float)r1[x0[x]] + wx * (float)r1[x1[x]];
                    }
                    c1 = y1[y];
                }
                for (int64_t x = 0; x < OW; x++) o[x] = (IP_T)(vy * h0[x] + wy * h1[x]);
            }
            free(hb);
        });
        return;
    }
    CD_PAR_FOR(planes * OH * OW >= CD_PAR_MIN_CHEAP, threads, int64_t, r, planes * OH, {
        const int64_t p = r / OH, y = r % OH;
        const IP_T *r0 = in + (p * IH + y0[y]) * IW, *r1 = in + (p * IH + y1[y]) * IW;
        IP_T *o = out + r * OW;
        if (!bil) {
            for (int64_t x = 0; x < OW; x++) o[x] = r0[x0[x]];
            continue;
        }
        const float wy = ly[y], vy = 1.0f - wy;
        for (int64_t x = 0; x < OW; x++) {
            const float wx = lx[x], vx = 1.0f - wx;
            float v = vy * (vx * (float)r0[x0[x]] + wx * (float)r0[x1[x]]) +
                wy * (vx * (float)r1[x0[x]] + wx * (float)r1[x1[x]]);
            o[x] = (IP_T)v;
        }
    });
}

#undef IP_T
#undef IP_NAME
