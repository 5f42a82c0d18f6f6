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
