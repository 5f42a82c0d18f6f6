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

static void F(pool_run)(const pool_geo *g, const NN_T *in, NN_T *out, int threads) {
    const int64_t total = g->N * g->C, HW = g->H * g->W;
    const bool par = threads > 1 && total > 1 && total * HW >= ((int64_t)1 << 18);
    if (g->global && !g->is_max) {
        CD_PAR_FOR(par, threads, int64_t, t, total, { out[t] = (NN_T)(F(plane_sum)(in + t * HW, HW) / (float)HW); });
        return;
    }
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
