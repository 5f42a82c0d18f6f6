/* The body of ops_nn_pool.c's float and _Float16 variants (the *_tmpl.h idiom, docs/design.md
 * §7): ops_nn_pool.c includes it once per element type after defining NN_T, NN_S;
 * it #undefs them at its end. Include it nowhere else. */
#ifndef NN_T
#error "ops_nn_pool_tmpl.h: define NN_T and NN_S, then include (ops_nn_pool.c does)"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, NN_S)

/* Global average of one plane: float sum with 16 partial sums (vectorisable; the
 * order differs from a sequential sum only within float rounding). */
static inline float F(plane_sum)(const NN_T *x, int64_t n) {
    float part[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) part[j] += (float)x[i + j];
    float s = 0;
    for (; i < n; i++) s += (float)x[i];
    for (int j = 0; j < 16; j++) s += part[j];
    return s;
}

/* Average pooling whose one window is the whole plane (adaptive pooling to 1x1, the SE blocks of
 * mobilenet_v3 / pplcnet), planes t0..t1-1: the generic loop's arithmetic (a float sum from 0 in
 * row-major order, then sum / cnt rounded to NN_T), eight planes at a time so that eight
 * independent addition chains are in flight instead of one latency-bound chain (16x16 planes:
 * 11 us for 48 planes). Each plane's sum is the same sequence of additions: the same bits. */
static void F(avg_whole)(const NN_T *in, NN_T *out, int64_t t0, int64_t t1, int64_t HW, float cnt) {
    int64_t t = t0;
    for (; t + 8 <= t1; t += 8) {
        const NN_T *x = in + t * HW;
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
        for (int64_t i = 0; i < HW; i++) {
            s0 += (float)x[i];
            s1 += (float)x[HW + i];
            s2 += (float)x[2 * HW + i];
            s3 += (float)x[3 * HW + i];
            s4 += (float)x[4 * HW + i];
            s5 += (float)x[5 * HW + i];
            s6 += (float)x[6 * HW + i];
            s7 += (float)x[7 * HW + i];
        }
        out[t] = (NN_T)(s0 / cnt);
        out[t + 1] = (NN_T)(s1 / cnt);
        out[t + 2] = (NN_T)(s2 / cnt);
        out[t + 3] = (NN_T)(s3 / cnt);
        out[t + 4] = (NN_T)(s4 / cnt);
        out[t + 5] = (NN_T)(s5 / cnt);
        out[t + 6] = (NN_T)(s6 / cnt);
        out[t + 7] = (NN_T)(s7 / cnt);
    }
    for (; t < t1; t++) {
        const NN_T *x = in + t * HW;
        float s = 0;
        for (int64_t i = 0; i < HW; i++) s += (float)x[i];
        out[t] = (NN_T)(s / cnt);
    }
}

#if POOL_VEC
/* Max pooling, float, one plane through a row-padded copy (AVX-512, strides 1 and 2): the
 * plane's rows at columns [pl, pl + W) of a scratch whose other columns hold -inf, so every
 * output column's window is read by the same 16-lane code: m from -inf, then every tap, iy
 * outer over the window's input rows, ix inner over all kw columns: m = v where v > m or v is
 * NaN (masked moves). The same bits as the scalar loop (m from the first input value of the
 * window): a -inf pad never replaces m, and the first input value always does unless it is
 * -inf itself (m the same). Used only where every window has an input column (F(pool_run)). */
__attribute__((target("avx512f"))) static void F(max_plane512)(const pool_geo *g, const NN_T *x, NN_T *y, NN_T *xp,
                                                               int64_t Wp) {
    const int64_t W = g->W, sw = g->sw, kw = g->kw;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t iy = 0; iy < g->H; iy++) memcpy(xp + iy * Wp + g->pl, x + iy * W, (size_t)W * sizeof(NN_T));
    for (int64_t oy = 0; oy < g->Ho; oy++) {
        int64_t hs, he, hcnt;
        pool_window(g, true, oy, &hs, &he, &hcnt);
        NN_T *yr = y + oy * g->Wo;
        if (he <= hs) { /* the window rows lie wholly in the padding: 0, as the scalar loop */
            memset(yr, 0, (size_t)g->Wo * sizeof(NN_T));
            continue;
        }
        for (int64_t ox = 0; ox < g->Wo; ox += 16) {
            __m512 m = _mm512_set1_ps(-__builtin_inff());
            const NN_T *xo = xp + ox * sw;
            for (int64_t iy = hs; iy < he; iy++)
                for (int64_t ix = 0; ix < kw; ix++) {
                    const NN_T *p = xo + iy * Wp + ix;
                    /* stride 2: p[0..15] and p[15..30], nothing past the last lane's value */
                    const __m512 v = sw == 1
                        ? _mm512_loadu_ps(p)
                        : _mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 15));
                    const __mmask16 k = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                    m = _mm512_mask_mov_ps(m, k, v);
                }
            const int64_t n = g->Wo - ox < 16 ? g->Wo - ox : 16;
            _mm512_mask_storeu_ps(yr + ox, (__mmask16)((1u << n) - 1u), m);
        }
    }
}

/* The same scan read in place, where every window lies wholly inside the plane (no leading
 * padding, the last window ending inside the input: rec models' 2x2 / 2x1 stride-2 pools):
 * no copy of the plane. A row's last vector loads only the lanes its output columns read
 * (masked loads, the other lanes zero and never stored), so nothing past the plane is read;
 * the other vectors' loads stay inside their input row. Lanes hold the same values the padded
 * copy would: the same bits. */
__attribute__((target("avx512f"))) static void F(max_plane512_inplace)(const pool_geo *g, const NN_T *x, NN_T *y) {
    const int64_t W = g->W, sw = g->sw, kw = g->kw, kh = g->kh;
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t oy = 0; oy < g->Ho; oy++) {
        NN_T *yr = y + oy * g->Wo;
        const NN_T *xr = x + oy * g->sh * W;
        for (int64_t ox = 0; ox < g->Wo; ox += 16) {
            const int64_t n = g->Wo - ox < 16 ? g->Wo - ox : 16;
            /* lanes of the first and the second load that output lanes 0..n-1 read */
            const int64_t l0 = sw == 1 ? n : (2 * n - 1 < 16 ? 2 * n - 1 : 16), l1 = sw == 1 ? 0 : 2 * n - 16;
            const __mmask16 k0 = (__mmask16)(l0 >= 16 ? 0xffffu : (1u << l0) - 1u);
            const __mmask16 k1 = (__mmask16)(l1 <= 0 ? 0u : (l1 >= 16 ? 0xffffu : (1u << l1) - 1u));
            __m512 m = _mm512_set1_ps(-__builtin_inff());
            const NN_T *xo = xr + ox * sw;
            for (int64_t iy = 0; iy < kh; iy++)
                for (int64_t ix = 0; ix < kw; ix++) {
                    const NN_T *p = xo + iy * W + ix;
                    const __m512 v = sw == 1
                        ? _mm512_maskz_loadu_ps(k0, p)
                        : _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(k0, p), even, _mm512_maskz_loadu_ps(k1, p + 15));
                    const __mmask16 k = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
                    m = _mm512_mask_mov_ps(m, k, v);
                }
            _mm512_mask_storeu_ps(yr + ox, (__mmask16)((1u << n) - 1u), m);
        }
    }
}
#endif

static void F(pool_run)(const pool_geo *g, const NN_T *in, NN_T *out, int threads) {
    const int64_t total = g->N * g->C, HW = g->H * g->W;
    const bool par = threads > 1 && total > 1 && total * HW >= ((int64_t)1 << 18);
    if (g->global && !g->is_max) {
        CD_PAR_FOR(par, threads, int64_t, t, total, { out[t] = (NN_T)(F(plane_sum)(in + t * HW, HW) / (float)HW); });
        return;
    }
    if (!g->is_max && g->Ho == 1 && g->Wo == 1) {
        int64_t hs, he, hcnt, ws, we, wcnt;
        pool_window(g, true, 0, &hs, &he, &hcnt);
        pool_window(g, false, 0, &ws, &we, &wcnt);
        if (hs == 0 && he == g->H && ws == 0 && we == g->W) { /* one window, the whole plane */
            const float cnt = (float)((g->exclusive || g->adaptive) ? HW : hcnt * wcnt);
            const int nt = par ? threads : 1;
            const int64_t per = (total + nt - 1) / nt;
            CD_PAR_FOR(par, threads, int64_t, k, (int64_t)nt, {
                const int64_t t0 = k * per, t1 = t0 + per < total ? t0 + per : total;
                if (t0 < t1) F(avg_whole)(in, out, t0, t1, HW, cnt);
            });
            return;
        }
    }
#if POOL_VEC
    /* max pooling where every window has an input column: F(max_plane512), a scratch per thread
     * of H rows x Wp (the last vector's columns included), -inf outside the copied columns */
    if (g->is_max && !g->adaptive && (g->sw == 1 || g->sw == 2) && g->kw > g->pl &&
        (g->Wo - 1) * g->sw - g->pl < g->W && __builtin_cpu_supports("avx512f")) {
        if (g->pt == 0 && g->pl == 0 && (g->Ho - 1) * g->sh + g->kh <= g->H && (g->Wo - 1) * g->sw + g->kw <= g->W) {
            CD_PAR_FOR(par, threads, int64_t, t, total, {
                F(max_plane512_inplace)(g, in + t * HW, out + t * g->Ho * g->Wo);
            });
            return;
        }
        const int64_t Wo16 = (g->Wo + 15) / 16 * 16;
        int64_t Wp = (Wo16 - 1) * g->sw + g->kw;
        if (Wp < g->pl + g->W) Wp = g->pl + g->W;
        const int nt = par ? threads : 1;
        const size_t per = (size_t)(g->H * Wp);
        NN_T *scr = malloc((size_t)nt * per * sizeof(NN_T));
        if (scr) {
            for (size_t i = 0; i < (size_t)nt * per; i++) scr[i] = -__builtin_inff();
            CD_PAR_FOR(par, threads, int64_t, t, total, {
                NN_T *xp = scr + (size_t)(par ? omp_get_thread_num() : 0) * per;
                F(max_plane512)(g, in + t * HW, out + t * g->Ho * g->Wo, xp, Wp);
            });
            free(scr);
            return;
        }
    }
#endif
    /* column windows are the same for every row and plane */
    int64_t *wwin = malloc((size_t)g->Wo * 3 * sizeof(int64_t));
    if (wwin)
        for (int64_t ox = 0; ox < g->Wo; ox++)
            pool_window(g, false, ox, &wwin[3 * ox], &wwin[3 * ox + 1], &wwin[3 * ox + 2]);
    CD_PAR_FOR(par, threads, int64_t, t, total, {
        const NN_T *x = in + t * HW;
        NN_T *y = out + t * g->Ho * g->Wo;
        for (int64_t oy = 0; oy < g->Ho; oy++) {
            int64_t hs, he, hcnt;
            pool_window(g, true, oy, &hs, &he, &hcnt);
            for (int64_t ox = 0; ox < g->Wo; ox++) {
                int64_t ws, we, wcnt;
                if (wwin) {
                    ws = wwin[3 * ox];
                    we = wwin[3 * ox + 1];
                    wcnt = wwin[3 * ox + 2];
                } else
                    pool_window(g, false, ox, &ws, &we, &wcnt);
                NN_T r = (NN_T)0;
                if (he > hs && we > ws) {
                    if (g->is_max) {
                        NN_T m = x[hs * g->W + ws];
                        for (int64_t iy = hs; iy < he; iy++)
                            for (int64_t ix = ws; ix < we; ix++) {
                                NN_T v = x[iy * g->W + ix];
                                if (v > m || v != v) m = v;
                            }
                        r = m;
                    } else {
                        float sum = 0; /* float even for half storage: see the file header */
                        for (int64_t iy = hs; iy < he; iy++)
                            for (int64_t ix = ws; ix < we; ix++) sum += (float)x[iy * g->W + ix];
                        int64_t cnt = (g->exclusive || g->adaptive) ? (he - hs) * (we - ws) : hcnt * wcnt;
                        r = (NN_T)(sum / (float)cnt);
                    }
                }
                y[oy * g->Wo + ox] = r;
            }
        }
    });
    free(wwin);
}

#undef CAT_
#undef CAT
#undef F

#undef NN_T
#undef NN_S
